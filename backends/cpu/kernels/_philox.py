"""Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011) as
TensorFlow's ``PhiloxRandom`` runs it, and its conversions of random bits to floats, in numpy.

TFLite's RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL and MULTINOMIAL draw from it: a 64-bit key
``seed`` and a 128-bit counter whose high half is ``seed2``; each call encrypts the counter
(ten rounds, the key raised between rounds) into four uint32 and adds 1 to the counter.
Blocks are computed many at once: block ``k`` is the encryption of ``counter + k``.
"""

from __future__ import annotations

import numpy as np

U64 = np.uint64
MASK32 = U64(0xFFFFFFFF)
W32A, W32B = 0x9E3779B9, 0xBB67AE85  # the key's increments between rounds
M4x32A, M4x32B = U64(0xD2511F53), U64(0xCD9E8D57)  # the round multipliers


class Philox:
    """``PhiloxRandom(seed, seed2)``: :meth:`blocks` draws, :meth:`skip` jumps ahead."""

    def __init__(self, seed: int, seed2: int) -> None:
        seed, seed2 = int(seed) % 2**64, int(seed2) % 2**64  # int64 options, read as uint64
        self.key = (seed & 0xFFFFFFFF, seed >> 32)
        self.counter = seed2 << 64  # counter words 0, 1 are 0; 2, 3 hold seed2

    def copy(self) -> "Philox":
        twin = Philox.__new__(Philox)
        twin.key, twin.counter = self.key, self.counter
        return twin

    def skip(self, count: int) -> None:
        """Advance the counter by ``count`` blocks (``PhiloxRandom::Skip``)."""
        self.counter = (self.counter + int(count)) % 2**128

    def blocks(self, count: int) -> np.ndarray:
        """The next ``count`` results, uint32 ``[count, 4]``; the counter advances by ``count``."""
        low, high = self.counter % 2**64, self.counter >> 64
        lows = U64(low) + np.arange(count, dtype=U64)  # wraps, as the 128-bit counter's low half
        highs = U64(high) + (lows < U64(low)).astype(U64)
        self.counter = (self.counter + count) % 2**128
        c0, c1, c2, c3 = lows & MASK32, lows >> U64(32), highs & MASK32, highs >> U64(32)
        k0, k1 = self.key
        with np.errstate(over="ignore"):
            for round_ in range(10):
                if round_:
                    k0, k1 = (k0 + W32A) & 0xFFFFFFFF, (k1 + W32B) & 0xFFFFFFFF
                product0, product1 = M4x32A * c0, M4x32B * c2  # exact: 32 x 32 bits fit in 64
                c0, c1, c2, c3 = (
                    (product1 >> U64(32)) ^ c1 ^ U64(k0),
                    product1 & MASK32,
                    (product0 >> U64(32)) ^ c3 ^ U64(k1),
                    product0 & MASK32,
                )
        return np.stack([c0, c1, c2, c3], axis=1).astype(np.uint32)


def uint32_to_float(bits: np.ndarray) -> np.ndarray:
    """Floats in [0, 1): 23 random mantissa bits under exponent 0, minus 1 (``Uint32ToFloat``)."""
    return ((bits.astype(np.uint32) & np.uint32(0x7FFFFF)) | np.uint32(127 << 23)).view(np.float32) - np.float32(1)


def uint64_to_double(high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """Doubles in [0, 1) from 20 bits of ``high`` and 32 of ``low`` (``Uint64ToDouble``)."""
    mantissa = ((high.astype(U64) & U64(0xFFFFF)) << U64(32)) | low.astype(U64)
    return (mantissa | U64(1023 << 52)).view(np.float64) - 1.0
