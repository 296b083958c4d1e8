"""Counter-based random bit generators, vectorized over counters: Philox4x32-10 and
Threefry2x32-20 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3", SC 2011), as
TFLite computes them (``kernels/rng_util.cc``; TensorFlow's ``PhiloxRandom`` for the
RANDOM_* ops).

Each function takes the two 32-bit key words and uint32 counter arrays (one element per
block) and returns the generator's output words, uint32 arrays of the same length; every
addition and multiplication wraps modulo 2**32 as C++'s ``uint32_t`` does. ``Philox`` is
TensorFlow's ``PhiloxRandom`` stream (RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL, MULTINOMIAL):
a key from ``seed`` and a 128-bit counter that ``philox4x32`` encrypts block by block.
"""

from __future__ import annotations

import numpy as np

MASK32 = np.uint64(0xFFFFFFFF)
PHILOX_M4X32_A = np.uint64(0xD2511F53)
PHILOX_M4X32_B = np.uint64(0xCD9E8D57)
PHILOX_W32_A = 0x9E3779B9
PHILOX_W32_B = 0xBB67AE85
THREEFRY_PARITY = 0x1BD11BDA
THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def philox4x32(key_0: int, key_1: int, counters: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]):
    """Philox4x32 with 10 rounds: four uint32 counter arrays -> four uint32 output arrays."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint64) for c in counters)
    k0, k1 = key_0 & 0xFFFFFFFF, key_1 & 0xFFFFFFFF
    for _ in range(10):
        p0 = PHILOX_M4X32_A * c0  # (products of two 32-bit values fit in 64 bits)
        p1 = PHILOX_M4X32_B * c2
        c0, c1, c2, c3 = (
            (p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0),
            p1 & MASK32,
            (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1),
            p0 & MASK32,
        )
        k0 = (k0 + PHILOX_W32_A) & 0xFFFFFFFF
        k1 = (k1 + PHILOX_W32_B) & 0xFFFFFFFF
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


class Philox:
    """``PhiloxRandom(seed, seed2)``: the 64-bit key ``seed`` and a 128-bit counter whose high
    half is ``seed2``; :meth:`blocks` draws (block ``k`` encrypts ``counter + k``), :meth:`skip`
    jumps ahead."""

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
        lows = np.uint64(low) + np.arange(count, dtype=np.uint64)  # wraps, as the 128-bit counter's low half
        highs = np.uint64(high) + (lows < np.uint64(low)).astype(np.uint64)  # (the carry)
        self.counter = (self.counter + count) % 2**128
        words = (lows & MASK32, lows >> np.uint64(32), highs & MASK32, highs >> np.uint64(32))
        return np.stack(philox4x32(*self.key, words), axis=1)


def threefry2x32(key_0: int, key_1: int, counters: tuple[np.ndarray, np.ndarray]):
    """Threefry2x32 with 20 rounds: two uint32 counter arrays -> two uint32 output arrays."""
    k0, k1 = np.uint32(key_0), np.uint32(key_1)
    k2 = np.uint32(key_0 ^ key_1 ^ THREEFRY_PARITY)
    x0 = np.asarray(counters[0], np.uint32) + k0
    x1 = np.asarray(counters[1], np.uint32) + k1
    schedule = ((0, k1, k2, 1), (1, k2, k0, 2), (0, k0, k1, 3), (1, k1, k2, 4), (0, k2, k0, 5))
    for rotations, ks0, ks1, b in schedule:
        for rotation in THREEFRY_ROTATIONS[rotations]:
            x0 = x0 + x1
            x1 = (x1 << np.uint32(rotation)) | (x1 >> np.uint32(32 - rotation))
            x1 = x1 ^ x0
        x0 = x0 + ks0
        x1 = x1 + ks1 + np.uint32(b)
    return x0, x1
