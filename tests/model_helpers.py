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
