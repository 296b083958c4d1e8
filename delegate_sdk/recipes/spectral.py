"""Recipes of the FFT and complex-number ops (RFFT2D, REAL, IMAG, COMPLEX_ABS): one version
each, complex64 (RFFT2D's output, the others' input)."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from delegate_sdk.recipes.base import C64, F32, B, Graph, Recipe, one_input

FAMILY = "spectral"


def rfft2d(shape=(2, 4, 8)) -> bytes:
    m = Graph()
    x = m.input("x", shape)
    fft_length = m.g.add_constant("fft_length", np.array(shape[-2:], np.int32))
    y = m.tensor("y", (*shape[:-1], shape[-1] // 2 + 1), C64)
    m.op(B.RFFT2D, [x, fft_length], [y])
    return m.build(y)


def recipes() -> Iterator[Recipe]:
    yield Recipe(B.RFFT2D, 1, rfft2d, "float32 [2, 4, 8], fft_length [4, 8]", FAMILY)
    for op in (B.REAL, B.IMAG, B.COMPLEX_ABS):
        yield Recipe(op, 1, lambda op=op: one_input(op, C64, (2, 3), (2, 3), out=F32), "complex64 -> float32", FAMILY)
