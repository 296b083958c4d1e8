"""On-the-fly int8 quantization of float rows, as TFLite's hybrid kernels do it.

``BatchQuantizeFloats`` quantizes each row of the input separately. The ai-edge-litert
wheel we match (x86-64) builds TFLite's NEON tensor utils through NEON_2_SSE, so the
quantizers are ``NeonSymmetricQuantizeFloats`` and ``NeonAsymmetricQuantizeFloats``
(tflite/kernels/internal/optimized/neon_tensor_utils.cc), not the portable ones; the
tests established it (the portable formulas disagree with the wheel on a few values per
thousand rows). Their arithmetic, reproduced exactly:

- symmetric: ``range = max(|min|, |max|)``; factor ``range / 127`` and inverse
  ``127 / range`` in float32; ``p = x * inverse`` (float32); q = ``clamp(round(p),
  -127, 127)``; an all-zero row gives q = 0 and factor 1.
- asymmetric: ``rmin = min(0, min)``, ``rmax = max(0, max)`` in float32; ``scale =
  double(rmax - rmin) / 255`` (the difference in float32); the zero point from whichever
  end has the smaller error, in double, nudged into [-128, 127] and rounded; factor
  ``float(scale)``, inverse ``float(1.0 / factor)``; ``q = clamp(round(p) + zp, -128,
  127)`` with ``p = x * inverse`` in float32.
- ``round`` is NEON's ``RoundToNearest`` without ARMv8's ``vcvta``: ``trunc(p + 0.5)``
  (``p - 0.5`` below zero) with the sum rounded to float32, on the first ``n & ~7``
  values of a row; the remaining ``n % 8`` values use ``roundf`` (the scalar tail).

Both return (quantized values as float32 holding integers, float32 factors per row,
int64 zero points per row or None).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.quantization import exact_float_dtype, round_half_away, wrap_int32


def _neon_round(products: np.ndarray) -> np.ndarray:
    """Round float32 ``products`` [rows, n] as the NEON quantizers do (see above)."""
    vector_end = products.shape[1] & ~7
    rounded = np.empty_like(products)
    head = products[:, :vector_end]
    # RoundToNearest: p + (p < 0 ? -0.5 : 0.5) in float32, then truncation.
    np.add(head, np.where(head < 0, np.float32(-0.5), np.float32(0.5)), out=rounded[:, :vector_end])
    np.trunc(rounded[:, :vector_end], out=rounded[:, :vector_end])
    if vector_end < products.shape[1]:
        rounded[:, vector_end:] = round_half_away(products[:, vector_end:])
    return rounded


def symmetric_quantize_rows(x: np.ndarray):
    low, high = x.min(axis=1), x.max(axis=1)
    value_range = np.maximum(np.abs(low), np.abs(high))
    zero = value_range == 0
    safe_range = np.where(zero, np.float32(1), value_range).astype(np.float32)
    factors = np.where(zero, np.float32(1), safe_range / np.float32(127)).astype(np.float32)
    inverse = (np.float32(127) / safe_range).astype(np.float32)
    quantized = _neon_round(x * inverse[:, None])
    np.clip(quantized, -127, 127, out=quantized)
    if zero.any():
        quantized[zero] = 0
    return quantized, factors, None


def asymmetric_quantize_rows(x: np.ndarray):
    rmin32 = np.minimum(np.float32(0), x.min(axis=1))
    rmax32 = np.maximum(np.float32(0), x.max(axis=1))
    equal = rmin32 == rmax32
    rmin, rmax = rmin32.astype(np.float64), rmax32.astype(np.float64)
    qmin, qmax = -128.0, 127.0
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = (rmax32 - rmin32).astype(np.float64) / (qmax - qmin)  # float32 difference
        from_min = qmin - rmin / scale
        from_max = qmax - rmax / scale
        error_min = abs(qmin) + np.abs(rmin / scale)
        error_max = abs(qmax) + np.abs(rmax / scale)
    zero_point = np.where(error_min < error_max, from_min, from_max)
    zero_point = np.nan_to_num(zero_point)  # rows with rmin == rmax are set below
    nudged = np.where(zero_point <= qmin, qmin, np.where(zero_point >= qmax, qmax, round_half_away(zero_point)))
    nudged = np.where(equal, 0.0, nudged).astype(np.int64)
    factors = np.where(equal, 1.0, scale).astype(np.float32)
    with np.errstate(divide="ignore"):
        inverse = np.where(factors == 0, 0.0, 1.0 / factors.astype(np.float64)).astype(np.float32)
    quantized = _neon_round(x * inverse[:, None])
    quantized += nudged.astype(np.float32)[:, None]
    np.clip(quantized, -128, 127, out=quantized)
    if equal.any():
        quantized[equal] = 0
    return quantized, factors, nudged


def quantize_rows(x: np.ndarray, asymmetric: bool):
    """Quantize each row of the 2-D float32 array ``x`` (see the module docstring)."""
    return asymmetric_quantize_rows(x) if asymmetric else symmetric_quantize_rows(x)


class HybridMatrix:
    """int8 weights ``[rows, depth]`` with their float scale (one, or one per row), as
    TFLite's hybrid ``MatrixBatchVectorMultiplyAccumulate`` uses them: for rows quantized
    by :func:`quantize_rows` (values ``q``, factors ``f``, zero points ``z`` or None)::

        term[b, r] = float(int32(sum_d w[r, d] * q[b, d] - row_sum(w)[r] * z[b])) * (f[b] * s[r])

    in float32, the value the C adds to its accumulator (``result += dotprod * scale``).
    The integer sum is one BLAS matmul in a float type where it is exact."""

    def __init__(self, weights: np.ndarray, scale: float, per_channel_scale: np.ndarray | None = None) -> None:
        matrix = np.asarray(weights).reshape(weights.shape[0], -1).astype(np.int64)
        self.rows, self.depth = matrix.shape
        self.row_sums = matrix.sum(axis=1)
        self.float_type = exact_float_dtype(int(np.abs(matrix).sum(axis=1).max(initial=0)) * 128)
        self.matrix_t = np.ascontiguousarray(matrix.T.astype(self.float_type))
        self.scale = np.float32(scale)
        self.per_channel_scale = None if per_channel_scale is None else np.asarray(per_channel_scale, np.float32)

    def term(self, quantized: np.ndarray, factors: np.ndarray, offsets: np.ndarray | None) -> np.ndarray:
        """float32 ``[batch, rows]``: what the product adds to the accumulator."""
        dot = np.rint(np.matmul(quantized.astype(self.float_type), self.matrix_t)).astype(np.int64)
        if offsets is not None:
            dot -= self.row_sums[None, :] * offsets[:, None]
        if self.per_channel_scale is None:
            scale = (factors * self.scale)[:, None]  # float32
        else:
            scale = factors[:, None] * self.per_channel_scale[None, :]
        return wrap_int32(dot).astype(np.float32) * scale

    def accumulate(self, out: np.ndarray, rows: np.ndarray, asymmetric: bool) -> None:
        """``out += term`` for float32 ``rows`` quantized on the fly; nothing when the rows
        are all zero (TFLite skips the product then: ``IsZeroVector``)."""
        if rows.any():
            out += self.term(*quantize_rows(rows, asymmetric))


def apply_float_activation(out: np.ndarray, activation: int) -> None:
    """TFLite's ``ApplyActivationToVector`` in place (NONE, RELU, RELU_N1_TO_1, RELU6,
    TANH, SIGN_BIT)."""
    from schema.enums import ActivationFunctionType as Act

    if activation == Act.RELU:
        np.maximum(out, 0, out=out)
    elif activation == Act.RELU6:
        np.clip(out, 0, 6, out=out)
    elif activation == Act.RELU_N1_TO_1:
        np.clip(out, -1, 1, out=out)
    elif activation == Act.TANH:
        np.tanh(out, out=out)
    elif activation == Act.SIGN_BIT:
        out[...] = np.signbit(out)
