"""Recipes of the convolutions and matrix products: CONV_2D, DEPTHWISE_CONV_2D,
FULLY_CONNECTED, TRANSPOSE_CONV, BATCH_MATMUL (filters OHWI, depthwise 1HWC). The kind of
weights (float, hybrid int8 per tensor or per channel, int8, int16 activations with int8
weights) and a param (dilation, groups, ``keep_num_dims``...) make the version; the
bit-exact int8 models of the main integer kernels are here too."""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from delegate_sdk.recipes.base import F32, I8Q, I16Q, U8Q, B, Graph, Recipe, hand_stamped, repack
from schema.builder import quantization
from schema.enums import ActivationFunctionType, Padding
from schema.enums import TensorType as T

UNBUILDABLE = {
    (B.TRANSPOSE_CONV, 5): "TFLite's rule tests input 0 for int16, and input 0 of TRANSPOSE_CONV is the int32 output "
                           "shape: the rules never give v5 (the recipe is an int16x8 node with quantized_bias_type, "
                           "stamped v5 by hand)",
    (B.CONV_2D, 4): "the rules give v4 to int16 activations with an int16 filter, which no kernel (TFLite's or ours) "
                    "runs; the CPU's v4 is int16 activations with an int8 filter (the recipe), stamped v4 by hand",
    (B.DEPTHWISE_CONV_2D, 5): "the rules give v5 to int16 activations with an int16 filter, which no kernel runs; the "
                              "CPU's v5 is int16 activations with an int8 filter (the recipe), stamped v5 by hand",
    (B.FULLY_CONNECTED, 7): "the rules give v7 to int16 activations with int16 weights, which no kernel runs; the CPU's "
                            "v7 is int16 activations with int8 weights (the recipe), stamped v7 by hand",
}

WEIGHT_SCALE = 0.02
FAMILY = "convolution"

# -- builders ----------------------------------------------------------------------------------------


#: the sub-byte weight kinds: (weights type, its values' range)
SUB_BYTE_KINDS = {"int4": (T.INT4, (-8, 7)), "int2": (T.INT2, (-2, 1)), "16x4": (T.INT4, (-8, 7))}


def weights(m: Graph, shape, kind: str, channels_axis: int, in_scale: float = 0.05):
    """Filter and bias constants. ``kind``: float, hybrid (int8 per tensor), hybrid-pc
    (int8 per channel), int8 (per channel, int32 bias), 16x8 (int8 filter, int64 bias),
    int4 / int2 (int4 / int2 filter per channel, int32 bias), 16x4 (int4 filter, int64 bias)."""
    channels = shape[channels_axis]
    if kind == "float":
        return m.const("w", shape, F32), m.const("b", [channels], F32)
    scales = [WEIGHT_SCALE] * channels if kind != "hybrid" else [WEIGHT_SCALE]
    wq = quantization(scales, 0, channels_axis if len(scales) > 1 else 0)
    if kind in SUB_BYTE_KINDS:
        weights_type, (low, high) = SUB_BYTE_KINDS[kind]
        w = m.g.add_constant("w", m.rng.integers(low, high, shape, endpoint=True).astype(np.int8), dtype=weights_type,
                             quantization=wq)
    else:
        w = m.g.add_constant("w", m.rng.integers(-100, 100, shape).astype(np.int8), quantization=wq)
    if kind in ("hybrid", "hybrid-pc"):
        return w, m.const("b", [channels], F32)
    bias_q = quantization([in_scale * WEIGHT_SCALE] * channels, 0)
    bias_dtype = np.int32 if kind in ("int8", "int4", "int2") else np.int64
    b = m.g.add_constant("b", m.rng.integers(-1000, 1000, channels).astype(bias_dtype), quantization=bias_q)
    return w, b


ACTIVATIONS = {"float": F32, "hybrid": F32, "hybrid-pc": F32, "int8": I8Q, "16x8": I16Q, "int4": I8Q, "int2": I8Q,
               "16x4": I16Q}


def conv(kind: str = "float", groups: int = 1, **fields) -> bytes:
    t = ACTIVATIONS[kind]
    m = Graph()
    x = m.input("x", (1, 5, 5, 2 * groups), t)
    w, b = weights(m, (2 * groups, 3, 3, 2), kind, 0, t.q.scale[0] if t.q is not None else 0.05)
    y = m.tensor("y", (1, 5, 5, 2 * groups), t)
    m.op(B.CONV_2D, [x, w, b], [y], padding=Padding.SAME, stride_w=1, stride_h=1, **fields)
    return m.build(y)


def depthwise(kind: str = "float", **fields) -> bytes:
    t = ACTIVATIONS[kind]
    m = Graph()
    x = m.input("x", (1, 5, 5, 2), t)
    w, b = weights(m, (1, 3, 3, 2), kind, 3, t.q.scale[0] if t.q is not None else 0.05)
    y = m.tensor("y", (1, 5, 5, 2), t)
    m.op(B.DEPTHWISE_CONV_2D, [x, w, b], [y], padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1, **fields)
    return m.build(y)


def fully_connected(kind: str = "float", bias: bool = True, rank: int = 2, **fields) -> bytes:
    t = ACTIVATIONS[kind]
    m = Graph()
    shape = (1, 2, 4) if rank == 3 else (2, 4)
    x = m.input("x", shape, t)
    w, b = weights(m, (3, 4), kind, 0, t.q.scale[0] if t.q is not None else 0.05)
    out_shape = (*shape[:-1], 3) if fields.get("keep_num_dims") else (int(np.prod(shape[:-1])), 3)
    y = m.tensor("y", out_shape, t)
    m.op(B.FULLY_CONNECTED, [x, w, b] if bias else [x, w], [y], **fields)
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


def shuffled_fully_connected() -> bytes:
    """FULLY_CONNECTED with shuffled 4x16 int8 weights: uint8 input (a batch of 1), int16
    output, and the shuffled-input workspace that TFLite requires as a second output."""
    m = Graph()
    x = m.input("x", (1, 32), U8Q)
    plain = m.rng.integers(0, 256, (4, 32)).astype(np.uint8)
    stored = plain.reshape(1, 4, 2, 16).transpose(0, 2, 1, 3).reshape(4, 32) ^ 0x80  # blocks of 4 x 16, sign flipped
    w = m.g.add_constant("w", stored, quantization=quantization(WEIGHT_SCALE, 128))
    b = m.g.add_constant("b", m.rng.integers(-1000, 1000, 4).astype(np.int32), quantization=quantization(0.001, 0))
    y = m.g.add_tensor("y", [1, 4], T.INT16, quantization=quantization(0.05, 0))
    workspace = m.g.add_tensor("workspace", [1, 32], T.UINT8)
    m.op(B.FULLY_CONNECTED, [x, w, b], [y, workspace], weights_format=1)
    return m.build(y, workspace)


def transpose_conv(kind: str = "float", bias: bool = False, **fields) -> bytes:
    t = ACTIVATIONS[kind]
    m = Graph()
    shape = m.i32("output_shape", [1, 4, 4, 2])
    w, b = weights(m, (2, 3, 3, 2), kind, 0, t.q.scale[0] if t.q is not None else 0.05)
    x = m.input("x", (1, 2, 2, 2), t)
    y = m.tensor("y", (1, 4, 4, 2), t)
    m.op(B.TRANSPOSE_CONV, [shape, w, x, b] if bias else [shape, w, x], [y], padding=Padding.SAME,
         stride_w=2, stride_h=2, **fields)
    return m.build(y)


def batch_matmul(t, hybrid: bool = False, **fields) -> bytes:
    m = Graph()
    x = m.input("x", (1, 2, 4), t)
    if hybrid:
        y = m.g.add_constant("y", m.rng.integers(-100, 100, (1, 4, 3)).astype(np.int8), quantization=quantization(WEIGHT_SCALE, 0))
    else:
        y = m.input("y", (1, 4, 3), t)
    z = m.tensor("z", (1, 2, 3), t)
    m.op(B.BATCH_MATMUL, [x, y], [z], **fields)
    return m.build(z)


def _realistic(rng: np.random.Generator, channels: int) -> list[float]:
    """Per-channel weight scales as a converter writes them: not round numbers."""
    return [float(np.float32(v)) for v in rng.uniform(0.0031, 0.0197, channels)]


def bitexact(op: int, **fields) -> bytes:
    """An int8 model of ``op`` big enough, with realistic scales, that a kernel off by one
    step anywhere in its rescaling differs from the reference on some outputs: hundreds of
    outputs, per-channel weight scales and zero points that are not round numbers, an
    output scale chosen from the float range so the outputs do not saturate."""
    m = Graph()
    rng = np.random.default_rng(27)
    in_q = quantization(0.0237, -7)
    if op == B.FULLY_CONNECTED:
        rows, depth, units = 8, 64, 32
        x_shape, w_shape, axis = [rows, depth], [units, depth], 0
        keep = fields.get("keep_num_dims", False)
        if keep:
            x_shape = [2, rows // 2, depth]
        y_shape = [*x_shape[:-1], units] if keep else [rows, units]
    elif op == B.CONV_2D:
        x_shape, w_shape, axis, y_shape = [1, 8, 8, 8], [8, 3, 3, 8], 0, [1, 8, 8, 8]
        depth = 9 * 8
    else:  # DEPTHWISE_CONV_2D
        x_shape, w_shape, axis, y_shape = [1, 8, 8, 8], [1, 3, 3, 8], 3, [1, 8, 8, 8]
        depth = 9
    channels = w_shape[axis]
    scales = _realistic(rng, channels) if op != B.FULLY_CONNECTED else [_realistic(rng, 1)[0]]
    x = m.g.add_input("x", x_shape, T.INT8, quantization=in_q)
    # FULLY_CONNECTED: small weights and an output scale about 24x the accumulator's, so the
    # rescale shifts right by 4 or 5 bits only: where the fixed-point multiply's two roundings
    # differ from one rounding in double on a few percent of the values, not ~0.1%
    w_limit = 6 if op == B.FULLY_CONNECTED else 128
    w = m.g.add_constant("w", rng.integers(-w_limit + 1, w_limit, w_shape).astype(np.int8),
                         quantization=quantization(scales, 0, axis if len(scales) > 1 else 0))
    bias_scales = [float(np.float32(0.0237) * np.float32(s)) for s in scales]
    b = m.g.add_constant("b", rng.integers(-3000, 3000, channels).astype(np.int32),
                         quantization=quantization(bias_scales if len(scales) > 1 else bias_scales[0], 0))
    # the accumulator's spread is about sqrt(depth) * 64 * 64 steps: map 3 of its sigmas on int8
    out_scale = float(np.float32(3 * np.sqrt(depth) * 64 * 64 * 0.0237 * max(scales) / 127))
    if op == B.FULLY_CONNECTED:
        out_scale = float(np.float32(23.7 * 0.0237 * scales[0]))
    y = m.g.add_tensor("y", y_shape, T.INT8, quantization=quantization(out_scale, 2))
    inputs = [x, w] if fields.pop("no_bias", False) else [x, w, b]
    if op == B.FULLY_CONNECTED:
        m.op(op, inputs, [y], **fields)
    elif op == B.CONV_2D:
        m.op(op, inputs, [y], padding=Padding.SAME, stride_w=1, stride_h=1, **fields)
    else:
        m.op(op, inputs, [y], padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1, **fields)
    return m.build(y)


def uint8_weights(op: int) -> bytes:
    """uint8 CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED v1 (TFLite's first quantized
    form: uint8 activations and filter, per-tensor scales, zero points 128)."""
    m = Graph()
    x_shape, w_shape, y_shape = {
        B.CONV_2D: ((1, 5, 5, 2), (2, 3, 3, 2), (1, 5, 5, 2)),
        B.DEPTHWISE_CONV_2D: ((1, 5, 5, 2), (1, 3, 3, 2), (1, 5, 5, 2)),
        B.FULLY_CONNECTED: ((2, 4), (3, 4), (2, 3)),
    }[op]
    channels = w_shape[3] if op == B.DEPTHWISE_CONV_2D else w_shape[0]
    x = m.input("x", x_shape, U8Q)
    w = m.g.add_constant("w", m.rng.integers(28, 228, w_shape).astype(np.uint8), quantization=quantization(0.02, 128))
    b = m.g.add_constant("b", m.rng.integers(-1000, 1000, channels).astype(np.int32),
                         quantization=quantization(0.05 * 0.02, 0))
    y = m.g.add_tensor("y", list(y_shape), T.UINT8, quantization=quantization(0.5, 120))
    if op == B.FULLY_CONNECTED:
        m.op(op, [x, w, b], [y])
    elif op == B.CONV_2D:
        m.op(op, [x, w, b], [y], padding=Padding.SAME, stride_w=1, stride_h=1)
    else:
        m.op(op, [x, w, b], [y], padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1)
    return m.build(y)


def conv_grouped_int8() -> bytes:
    t = I8Q
    m = Graph()
    x = m.input("x", (1, 5, 5, 4), t)
    w, b = weights(m, (4, 3, 3, 2), "int8", 0, t.q.scale[0])
    y = m.tensor("y", (1, 5, 5, 4), t)
    m.op(B.CONV_2D, [x, w, b], [y], padding=Padding.SAME, stride_w=1, stride_h=1)
    return m.build(y)


# -- the recipes -------------------------------------------------------------------------------------


def recipes() -> Iterator[Recipe]:
    relu = ActivationFunctionType.RELU
    versions: dict[int, dict[int, tuple[str, Callable[[], bytes]]]] = {
        B.CONV_2D: {
            1: ("float32", lambda: conv("float")),
            2: ("hybrid: float32 activations, int8 filter per tensor", lambda: conv("hybrid")),
            3: ("int8 quantized, per-channel filter", lambda: conv("int8")),
            5: ("hybrid, int8 filter per channel", lambda: conv("hybrid-pc")),
            6: ("float32, grouped (2 groups)", lambda: conv("float", groups=2)),
            7: ("int8 activations, int4 filter per channel", lambda: conv("int4")),
            8: ("int16 activations, int8 filter, quantized_bias_type=INT64", lambda: conv("16x8", quantized_bias_type=T.INT64)),
        },
        B.DEPTHWISE_CONV_2D: {
            1: ("float32", lambda: depthwise("float")),
            2: ("float32, dilation 2", lambda: depthwise("float", dilation_w_factor=2, dilation_h_factor=2)),
            3: ("int8 quantized, per-channel filter", lambda: depthwise("int8")),
            4: ("hybrid: float32 activations, int8 filter per tensor", lambda: depthwise("hybrid")),
            6: ("hybrid, int8 filter per channel", lambda: depthwise("hybrid-pc")),
            7: ("int8 activations, int4 filter per channel", lambda: depthwise("int4")),
        },
        B.FULLY_CONNECTED: {
            1: ("float32", lambda: fully_connected("float")),
            2: ("shuffled 4x16 int8 weights (uint8 input, int16 output, the workspace output)", shuffled_fully_connected),
            3: ("hybrid: float32 activations, int8 weights per tensor", lambda: fully_connected("hybrid")),
            4: ("int8 quantized", lambda: fully_connected("int8")),
            5: ("float32, keep_num_dims", lambda: fully_connected("float", rank=3, keep_num_dims=True)),
            6: ("float32, two inputs (no bias slot)", lambda: fully_connected("float", bias=False)),
            9: ("hybrid, asymmetric_quantize_inputs", lambda: fully_connected("hybrid", asymmetric_quantize_inputs=True)),
            8: ("float32, sparse weights (every dimension dense)", sparse_fully_connected),
            10: ("int8 activations, int4 weights per channel", lambda: fully_connected("int4")),
            11: ("int16 activations, int8 weights, quantized_bias_type=INT64",
                 lambda: fully_connected("16x8", quantized_bias_type=T.INT64)),
            12: ("hybrid, int8 weights per channel", lambda: fully_connected("hybrid-pc")),
            13: ("int16 activations, int4 weights per channel", lambda: fully_connected("16x4")),
            14: ("int8 activations, int2 weights per channel", lambda: fully_connected("int2")),
        },
        B.TRANSPOSE_CONV: {
            1: ("float32, no bias", lambda: transpose_conv("float")),
            2: ("int8 quantized, no bias", lambda: transpose_conv("int8")),
            3: ("float32 with bias", lambda: transpose_conv("float", bias=True)),
            4: ("float32 with bias and a fused RELU", lambda: transpose_conv("float", bias=True, fused_activation_function=relu)),
        },
        B.BATCH_MATMUL: {
            1: ("float32", lambda: batch_matmul(F32)),
            2: ("int8 quantized", lambda: batch_matmul(I8Q)),
            3: ("int16 quantized", lambda: batch_matmul(I16Q)),
            4: ("hybrid with asymmetric_quantize_inputs", lambda: batch_matmul(F32, hybrid=True, asymmetric_quantize_inputs=True)),
        },
    }
    for op, by_version in versions.items():
        for version, (description, build) in by_version.items():
            yield Recipe(op, version, build, description, FAMILY)

    # the registered versions the rules never give (UNBUILDABLE)
    by_hand = [
        (B.TRANSPOSE_CONV, 5, "int16 activations, int8 filter, bias, quantized_bias_type=INT64",
         lambda: transpose_conv("16x8", bias=True, quantized_bias_type=T.INT64)),
        (B.CONV_2D, 4, "int16 activations, int8 filter", lambda: conv("16x8")),
        (B.DEPTHWISE_CONV_2D, 5, "int16 activations, int8 filter", lambda: depthwise("16x8")),
        (B.FULLY_CONNECTED, 7, "int16 activations, int8 weights", lambda: fully_connected("16x8")),
    ]
    for op, version, description, build in by_hand:
        yield Recipe(op, version, hand_stamped(build, version), description, FAMILY, hand_stamped=UNBUILDABLE[(op, version)])


def typed() -> Iterator[Recipe]:
    exact = "bit-exact: realistic per-channel scales, "
    yield Recipe(B.CONV_2D, 3, lambda: bitexact(B.CONV_2D), exact + "8x8x8 -> 8 channels, 3x3", dtype="int8")
    yield Recipe(B.CONV_2D, 6, conv_grouped_int8, "int8 quantized, grouped (2 groups)", dtype="int8")
    yield Recipe(B.DEPTHWISE_CONV_2D, 3, lambda: bitexact(B.DEPTHWISE_CONV_2D), exact + "8x8x8, 3x3", dtype="int8")
    yield Recipe(B.FULLY_CONNECTED, 4, lambda: bitexact(B.FULLY_CONNECTED), exact + "8x64 by 32x64", dtype="int8")
    yield Recipe(B.FULLY_CONNECTED, 5, lambda: bitexact(B.FULLY_CONNECTED, keep_num_dims=True), "int8, keep_num_dims",
                 dtype="int8")
    yield Recipe(B.FULLY_CONNECTED, 6, lambda: bitexact(B.FULLY_CONNECTED, no_bias=True), "int8, two inputs (no bias slot)",
                 dtype="int8")
    for op in (B.CONV_2D, B.DEPTHWISE_CONV_2D, B.FULLY_CONNECTED):
        yield Recipe(op, 1, lambda op=op: uint8_weights(op), "uint8 quantized activations and weights", dtype="uint8")
