"""Recipes of versions the CPU does not register (int4, int2, uint4 and bfloat16 tensors,
sparse or shuffled weights): for dry runs of delegates whose cap is just below them
(``assert_takes_versions_up_to(..., max_version=N)`` needs a recipe for N + 1). Their
models hold graph inputs of types the runtime cannot hold, so they never run.

When a kernel comes to run one of these versions, its recipe moves to the op's family
module (as a model the kernel runs) and leaves this table."""

from __future__ import annotations

from typing import Iterator, Sequence

from delegate_sdk.recipes.base import BF16, F32, I2, I4, I8, I8Q, I16Q, I32, I64, S2, U4, U8Q, B, Graph, Kind, Recipe, repack
from delegate_sdk.recipes.convolution import fully_connected

FAMILY = "dry run only"


def typed_inputs(op: int, types: Sequence[Kind], shapes: Sequence[Sequence[int]], out: Kind, out_shape, **fields) -> bytes:
    """``op`` over graph inputs of the given types (no constants)."""
    m = Graph()
    inputs = [m.input(f"x{i}", shape, t) for i, (t, shape) in enumerate(zip(types, shapes))]
    y = m.tensor("y", out_shape, out)
    m.op(op, inputs, [y], **fields)
    return m.build(y)


def sparse_fully_connected() -> bytes:
    """FULLY_CONNECTED whose float32 weights are stored sparse (every dimension dense)."""
    from schema import schema_generated as fb

    model = fb.ModelT.InitFromPackedBuf(fully_connected("float"), 0)
    tensor = next(t for t in model.subgraphs[0].tensors if t.name.decode() == "w")
    sparsity = fb.SparsityParametersT()
    sparsity.traversalOrder, sparsity.blockMap, sparsity.dimMetadata = [0, 1], [], []
    for size in tensor.shape:
        dim = fb.DimensionMetadataT()
        dim.format, dim.denseSize = 0, int(size)
        sparsity.dimMetadata.append(dim)
    tensor.sparsity = sparsity
    operator = model.subgraphs[0].operators[0]
    model.operatorCodes[operator.opcodeIndex].version = 8  # what the rules give once the weights are sparse
    return repack(model)


def recipes() -> Iterator[Recipe]:
    def r(op, version, description, build):
        return Recipe(op, version, build, description, FAMILY)

    w2, x24, o23 = (3, 4), (2, 4), (2, 3)
    yield r(B.FULLY_CONNECTED, 2, "shuffled 4x16 int8 weights format (uint8 input, int16 output)",
            lambda: typed_inputs(B.FULLY_CONNECTED, [U8Q, I8Q, I32], [x24, w2, (3,)], I16Q, o23, weights_format=1))
    yield r(B.FULLY_CONNECTED, 8, "float32, sparse weights", sparse_fully_connected)
    yield r(B.FULLY_CONNECTED, 10, "int8 activations, int4 weights",
            lambda: typed_inputs(B.FULLY_CONNECTED, [I8Q, I4, I32], [x24, w2, (3,)], I8Q, o23))
    yield r(B.FULLY_CONNECTED, 13, "int16 activations, int4 weights",
            lambda: typed_inputs(B.FULLY_CONNECTED, [I16Q, I4, I64], [x24, w2, (3,)], I16Q, o23))
    yield r(B.FULLY_CONNECTED, 14, "int2 weights",
            lambda: typed_inputs(B.FULLY_CONNECTED, [I8Q, I2, I32], [x24, w2, (3,)], I8Q, o23))
    conv_shapes = [(1, 5, 5, 2), (2, 3, 3, 2), (2,)]
    yield r(B.CONV_2D, 7, "int8 activations, int4 filter",
            lambda: typed_inputs(B.CONV_2D, [I8Q, I4, I32], conv_shapes, I8Q, (1, 5, 5, 2), stride_w=1, stride_h=1))
    yield r(B.DEPTHWISE_CONV_2D, 7, "int8 activations, int4 filter",
            lambda: typed_inputs(B.DEPTHWISE_CONV_2D, [I8Q, I4, I32], [(1, 5, 5, 2), (1, 3, 3, 2), (2,)], I8Q,
                                 (1, 5, 5, 2), stride_w=1, stride_h=1, depth_multiplier=1))
    yield r(B.CONCATENATION, 5, "int4", lambda: typed_inputs(B.CONCATENATION, [I4, I4], [S2, S2], I4, (2, 6), axis=1))
    yield r(B.GATHER, 7, "int4 params", lambda: typed_inputs(B.GATHER, [I4, I32], [(3, 2), (2,)], I4, (2, 2)))
    yield r(B.TRANSPOSE, 7, "int4", lambda: typed_inputs(B.TRANSPOSE, [I4, I32], [S2, (2,)], I4, (3, 2)))
    yield r(B.SLICE, 7, "int4", lambda: typed_inputs(B.SLICE, [I4, I32, I32], [S2, (2,), (2,)], I4, (2, 2)))
    for version, t in {5: I4, 6: BF16}.items():
        yield r(B.DYNAMIC_UPDATE_SLICE, version, f"{t.name} operand",
                lambda t=t: typed_inputs(B.DYNAMIC_UPDATE_SLICE, [t, t, I32], [(3, 4), (2, 2), (2,)], t, (3, 4)))
    yield r(B.EMBEDDING_LOOKUP, 5, "int2 table -> float32",
            lambda: typed_inputs(B.EMBEDDING_LOOKUP, [I32, I2], [(3,), (4, 3)], F32, (3, 3)))
    yield r(B.SELECT, 2, "int8 condition (the rule tests input 0)",
            lambda: typed_inputs(B.SELECT, [I8, F32, F32], [S2, S2, S2], F32, S2))
    for version, source in {6: I4, 7: I2, 8: U4}.items():
        yield r(B.DEQUANTIZE, version, f"{source.name} -> float32",
                lambda source=source: typed_inputs(B.DEQUANTIZE, [source], [S2], F32, S2))
    for version, (source, target) in {6: (I4, F32), 7: (BF16, F32), 8: (I2, F32)}.items():
        yield r(B.CAST, version, f"{source.name} -> {target.name}",
                lambda s=source, t=target: typed_inputs(B.CAST, [s], [S2], t, S2))
    for version, target in {4: I4, 5: U4}.items():
        yield r(B.QUANTIZE, version, f"float32 -> {target.name}", lambda t=target: typed_inputs(B.QUANTIZE, [F32], [S2], t, S2))
