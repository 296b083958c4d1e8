"""FarmHash's ``Fingerprint64`` (``farmhashna::Hash64``, by Geoff Pike), vectorized over many
byte strings of one length, in numpy ``uint64`` arithmetic (which wraps, as C's does).

TFLite's LSH_PROJECTION hashes with it (``util::Fingerprint64`` from the farmhash library);
the values must be bit for bit FarmHash's, since their signs are the op's output. Written
from the algorithm's definition: ``HashLen0to16``, ``HashLen17to32``, ``HashLen33to64``
and the 64-byte loop, little-endian loads.
"""

from __future__ import annotations

import numpy as np

U64 = np.uint64
K0 = U64(0xC3A5C85C97CB3127)
K1 = U64(0xB492B66FBE98F273)
K2 = U64(0x9AE16A3B2F90404F)


def _fetch64(keys: np.ndarray, offset: int) -> np.ndarray:
    return np.ascontiguousarray(keys[:, offset : offset + 8]).view("<u8")[:, 0].astype(U64)


def _fetch32(keys: np.ndarray, offset: int) -> np.ndarray:
    return np.ascontiguousarray(keys[:, offset : offset + 4]).view("<u4")[:, 0].astype(U64)


def _rotate(value: np.ndarray, shift: int) -> np.ndarray:
    return (value >> U64(shift)) | (value << U64(64 - shift))


def _shift_mix(value: np.ndarray) -> np.ndarray:
    return value ^ (value >> U64(47))


def _hash_len16(u: np.ndarray, v: np.ndarray, mul) -> np.ndarray:
    a = (u ^ v) * mul
    a = a ^ (a >> U64(47))
    b = (v ^ a) * mul
    b = b ^ (b >> U64(47))
    return b * mul


def _len_0_to_16(keys: np.ndarray, length: int) -> np.ndarray:
    count = keys.shape[0]
    if length >= 8:
        mul = K2 + U64(length * 2)
        a = _fetch64(keys, 0) + K2
        b = _fetch64(keys, length - 8)
        c = _rotate(b, 37) * mul + a
        d = (_rotate(a, 25) + b) * mul
        return _hash_len16(c, d, mul)
    if length >= 4:
        mul = K2 + U64(length * 2)
        a = _fetch32(keys, 0)
        return _hash_len16(U64(length) + (a << U64(3)), _fetch32(keys, length - 4), mul)
    if length > 0:
        a = keys[:, 0].astype(U64)
        b = keys[:, length >> 1].astype(U64)
        c = keys[:, length - 1].astype(U64)
        y = (a + (b << U64(8))) & U64(0xFFFFFFFF)  # uint32 arithmetic
        z = (U64(length) + (c << U64(2))) & U64(0xFFFFFFFF)
        return _shift_mix(y * K2 ^ z * K0) * K2
    return np.full(count, K2, U64)


def _len_17_to_32(keys: np.ndarray, length: int) -> np.ndarray:
    mul = K2 + U64(length * 2)
    a = _fetch64(keys, 0) * K1
    b = _fetch64(keys, 8)
    c = _fetch64(keys, length - 8) * mul
    d = _fetch64(keys, length - 16) * K2
    return _hash_len16(_rotate(a + b, 43) + _rotate(c, 30) + d, a + _rotate(b + K2, 18) + c, mul)


def _len_33_to_64(keys: np.ndarray, length: int) -> np.ndarray:
    mul = K2 + U64(length * 2)
    a = _fetch64(keys, 0) * K2
    b = _fetch64(keys, 8)
    c = _fetch64(keys, length - 8) * mul
    d = _fetch64(keys, length - 16) * K2
    y = _rotate(a + b, 43) + _rotate(c, 30) + d
    z = _hash_len16(y, a + _rotate(b + K2, 18) + c, mul)
    e = _fetch64(keys, 16) * mul
    f = _fetch64(keys, 24)
    g = (y + _fetch64(keys, length - 32)) * mul
    h = (z + _fetch64(keys, length - 24)) * mul
    return _hash_len16(_rotate(e + f, 43) + _rotate(g, 30) + h, e + _rotate(f + a, 18) + g, mul)


def _weak_hash_len32_with_seeds(keys: np.ndarray, offset: int, a: np.ndarray, b: np.ndarray):
    w, x = _fetch64(keys, offset), _fetch64(keys, offset + 8)
    y, z = _fetch64(keys, offset + 16), _fetch64(keys, offset + 24)
    a = a + w
    b = _rotate(b + a + z, 21)
    c = a
    a = a + x + y
    b = b + _rotate(a, 44)
    return a + z, b + c


def _len_above_64(keys: np.ndarray, length: int) -> np.ndarray:
    count = keys.shape[0]
    seed = U64(81)
    x = np.full(count, seed, U64)
    y = np.full(count, seed * K1 + U64(113), U64)
    z = _shift_mix(y * K2 + U64(113)) * K2
    v0, v1 = np.zeros(count, U64), np.zeros(count, U64)
    w0, w1 = np.zeros(count, U64), np.zeros(count, U64)
    x = x * K2 + _fetch64(keys, 0)
    end = ((length - 1) // 64) * 64
    for s in range(0, end, 64):
        x = _rotate(x + y + v0 + _fetch64(keys, s + 8), 37) * K1
        y = _rotate(y + v1 + _fetch64(keys, s + 48), 42) * K1
        x = x ^ w1
        y = y + v0 + _fetch64(keys, s + 40)
        z = _rotate(z + w0, 33) * K1
        v0, v1 = _weak_hash_len32_with_seeds(keys, s, v1 * K1, x + w0)
        w0, w1 = _weak_hash_len32_with_seeds(keys, s + 32, z + w1, y + _fetch64(keys, s + 16))
        z, x = x, z
    mul = K1 + ((z & U64(0xFF)) << U64(1))
    s = length - 64  # the last 64 bytes
    w0 = w0 + U64((length - 1) & 63)
    v0 = v0 + w0
    w0 = w0 + v0
    x = _rotate(x + y + v0 + _fetch64(keys, s + 8), 37) * mul
    y = _rotate(y + v1 + _fetch64(keys, s + 48), 42) * mul
    x = x ^ (w1 * U64(9))
    y = y + v0 * U64(9) + _fetch64(keys, s + 40)
    z = _rotate(z + w0, 33) * mul
    v0, v1 = _weak_hash_len32_with_seeds(keys, s, v1 * mul, x + w0)
    w0, w1 = _weak_hash_len32_with_seeds(keys, s + 32, z + w1, y + _fetch64(keys, s + 16))
    z, x = x, z
    return _hash_len16(_hash_len16(v0, w0, mul) + _shift_mix(y) * K0 + z, _hash_len16(v1, w1, mul) + x, mul)


def fingerprint64(keys: np.ndarray) -> np.ndarray:
    """``Fingerprint64`` of each row of ``keys`` (a uint8 array ``[count, length]``) as uint64."""
    keys = np.ascontiguousarray(keys, dtype=np.uint8)
    length = keys.shape[1]
    with np.errstate(over="ignore"):
        if length <= 16:
            return _len_0_to_16(keys, length)
        if length <= 32:
            return _len_17_to_32(keys, length)
        if length <= 64:
            return _len_33_to_64(keys, length)
        return _len_above_64(keys, length)
