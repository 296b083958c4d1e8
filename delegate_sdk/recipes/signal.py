"""Recipes of the Fourier transform and the complex numbers: RFFT2D (float32 to complex64),
COMPLEX_ABS, REAL and IMAG (complex64 to float32). Each has one version, whatever the
types."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from delegate_sdk.recipes.base import C64, F32, S2, B, Graph, Recipe, one_input

FAMILY = "signal"


def rfft2d(shape=(2, 4, 8), fft_length=(4, 8)) -> bytes:
    """RFFT2D of ``x`` with a constant ``fft_length``: complex64 ``[..., h, w/2 + 1]``."""
    m = Graph()
    x = m.input("x", shape, F32)
    lengths = m.const("fft_length", np.asarray(fft_length, np.int32))
    y = m.tensor("y", (*shape[:-2], fft_length[0], fft_length[1] // 2 + 1), C64)
    m.op(B.RFFT2D, [x, lengths], [y])
    return m.build(y)


def recipes() -> Iterator[Recipe]:
    yield Recipe(B.RFFT2D, 1, rfft2d, "float32 [2, 4, 8], fft_length [4, 8] (a constant) -> complex64", FAMILY)
    for op in (B.COMPLEX_ABS, B.REAL, B.IMAG):
        yield Recipe(op, 1, lambda op=op: one_input(op, C64, S2, S2, out=F32), "complex64 -> float32", FAMILY)
