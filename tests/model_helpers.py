"""Small helpers the kernel tests share: the stamped version of a one-node model, and
random inputs over a quantized type's full range."""

from __future__ import annotations

import numpy as np

from schema.model import Model


def stamped_version(model: bytes) -> int:
    """The version the builder stamped on the first node of the main subgraph."""
    return Model.from_bytes(model).subgraphs[0].operators[0].version


def random_quantized_input(kind: str, shape, seed: int = 1) -> np.ndarray:
    """Values over the type's full range for ``kind`` uint8/int8/int16, or float32 in
    [-2, 2] for ``hybrid`` (float input, quantized weights)."""
    rng = np.random.default_rng(seed)
    if kind == "hybrid":
        return rng.uniform(-2, 2, shape).astype(np.float32)
    dtype = {"uint8": np.uint8, "int8": np.int8, "int16": np.int16}[kind]
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)


def concatenation_model(count: int, shape=(1, 3, 3, 2)) -> bytes:
    """CONCATENATION of ``count`` float32 model inputs of ``shape`` along the last axis.
    More than 8 is what makes CuPy's own concatenate upload a table of addresses from
    host memory, which a CUDA graph cannot hold (the GPU delegate must not use it)."""
    from schema.builder import ModelBuilder
    from schema.enums import BuiltinOperator
    from schema.params import ConcatenationParams

    builder = ModelBuilder()
    graph = builder.subgraph()
    inputs = [graph.add_input(f"x{i}", list(shape)) for i in range(count)]
    out = graph.add_tensor("out", [*shape[:-1], shape[-1] * count])
    graph.add_operator(BuiltinOperator.CONCATENATION, inputs, [out], ConcatenationParams(axis=len(shape) - 1))
    graph.add_output(out)
    return builder.build()


#: The value the CALL_ONCE initialisation of ``read_then_assign_model`` assigns.
INIT_VALUE = np.array([10.0, 20.0], np.float32)


def init_subgraph(builder, shared_name: str = "v", value=INIT_VALUE):
    """A subgraph with no inputs/outputs that assigns ``value`` to variable ``shared_name``."""
    from schema.enums import BuiltinOperator as Op
    from schema.enums import TensorType
    from schema.params import VarHandleParams

    graph = builder.subgraph("init")
    handle = graph.add_tensor("handle", [], TensorType.RESOURCE)
    constant = graph.add_constant("init_value", value)
    graph.add_operator(Op.VAR_HANDLE, [], [handle], VarHandleParams(shared_name=shared_name))
    graph.add_operator(Op.ASSIGN_VARIABLE, [handle, constant], [])
    return graph


def read_then_assign_model(shape=(2,), call_once: bool = True) -> bytes:
    """main(x): CALL_ONCE(init: v = [10, 20]); y = read(v); v = x; return y."""
    from schema.builder import ModelBuilder
    from schema.enums import BuiltinOperator as Op
    from schema.enums import TensorType
    from schema.params import CallOnceParams, VarHandleParams

    builder = ModelBuilder()
    main = builder.subgraph()
    x = main.add_input("x", list(shape))
    handle = main.add_tensor("handle", [], TensorType.RESOURCE)
    y = main.add_tensor("y", list(shape))
    if call_once:
        main.add_operator(Op.CALL_ONCE, [], [], CallOnceParams(init_subgraph_index=1))
    main.add_operator(Op.VAR_HANDLE, [], [handle], VarHandleParams(shared_name="v"))
    main.add_operator(Op.READ_VARIABLE, [handle], [y])
    main.add_operator(Op.ASSIGN_VARIABLE, [handle, x], [])
    main.add_output(y)
    if call_once:
        init_subgraph(builder)
    builder.add_signature("serving_default", main)
    return builder.build()
