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
