"""Helpers shared by the quantized convolutions (CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV).

Nothing here registers a kernel. The pieces, each a fact of TFLite's kernels:

- ``ConvQuantization.of``: the Prepare-time parameters of a quantized convolution
  (``PopulateConvolutionQuantizationParams``): one fixed-point multiplier and shift
  per output channel, from ``double(s_in) * double(s_w[c]) / double(s_out)`` for
  int8/int16, or from ``double(float(s_in * s_w)) / double(s_out)`` (a float32
  product) for the legacy uint8 path; the zero points; the fused activation as a
  quantized clamp (``CalculateActivationRangeQuantized``);
- ``ConvQuantization.requantize``: the output stage, ``clamp(MultiplyByQuantized
  Multiplier(acc, m[c], s[c]) + z_out)``, with the int32 overload for int32
  accumulators and the int64 one (16-bit reduced multiplier) for the 16x8 kernels'
  int64 accumulators. The int32 overload with right shifts (every real model) runs
  in place in ~10 passes, the bias folded into the rounding constant and the last
  steps in int32 when a bound allows; it is the shared
  ``multiply_by_quantized_multiplier`` arithmetic (same rounding scheme, checked
  equal by the tests), about twice as fast;
- ``FloatOutputStage``: the same output stage (double rounding, right shifts) as
  exact float64 arithmetic on buffers fixed once the arena is allocated, in three to
  six passes after ``t = sums * scale + constant`` (which a kernel may fold into its
  matmul; on large outputs the clamp runs on ``t`` truncated to int16); what the
  kernels' ``bind`` runs;
- ``accumulator_dtype``: the float type in which a kernel's integer dot products
  are exact (BLAS then computes them), from a bound on ``sum |w| * max |x|``;
- ``FloatInput``: the (zero-point-)padded input as a float array, in one buffer
  allocated at prepare whose interior is refreshed per invoke;
- ``depthwise_taps``: the taps of a stride-1 depthwise window as a strided view
  whose runs cover whole output rows;
- ``symmetric_quantize`` / ``asymmetric_quantize``: the per-batch on-the-fly input
  quantization of the hybrid (float input, int8 filter) kernels
  (``tensor_utils::SymmetricQuantizeFloats`` / ``AsymmetricQuantizeFloats``, in
  float32 and double exactly as the C++ does).
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from backends.cpu import quantization
from backends.cpu.kernels._window import PaddedInput, WindowGeometry
from backends.cpu.quantization import (
    activation_range_quantized,
    exact_float_dtype,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_int64,
    requantization_multiplier,
    requantization_multipliers,
    round_half_away,
)
from schema.enums import TensorType
from schema.enums import TensorType as T

try:  # the clip ufunc itself: np.clip adds a few microseconds of Python per call
    from numpy._core.umath import clip as _clip
except ImportError:  # numpy < 2
    from numpy.core.umath import clip as _clip

#: Largest |q| of each input type (the zero point is folded into the bias).
RAW_ABS_MAX = {TensorType.INT8: 128, TensorType.UINT8: 255, TensorType.INT16: 32768}
#: |q| of the hybrid kernels' quantized inputs: symmetric (-127..127) and
#: asymmetric minus its offset (-128..127 minus -128..127).
SYMMETRIC_ABS_MAX = 127
ASYMMETRIC_ABS_MAX = 255


def zero_point_of(tensor) -> int:
    """``tensor->params.zero_point``: the first zero point."""
    return int(tensor.quantization.zero_point[0])


def has_scale(tensor) -> bool:
    return tensor is not None and tensor.quantization is not None and tensor.quantization.is_quantized


#: Up to this many elements the per-channel operands of the output stage are tiled to
#: the accumulators' full shape (a contiguous operand runs 10-40% faster than a
#: broadcast row); above, the row is broadcast (no large copies).
TILE_LIMIT = 1 << 17

#: From this many outputs ``FloatOutputStage`` clamps in integers (a float64 -> int16
#: store, then an int16 clip: together ~30% cheaper than the float64 clip on thousands
#: of values); below, the float64 clip (one call fewer).
INTEGER_CLAMP_MIN = 1024


#: The ratio of scales a quantized convolution requantizes its accumulators by (named
#: when the ratio is refused).
RESCALE = "input scale x filter scale / output scale"


class ConvQuantization:
    """What TFLite's Prepare computes for a quantized convolution's output stage, and
    that output stage."""

    def __init__(self, multipliers, shifts, input_zero_point, output_zero_point, low, high, wide) -> None:
        self.multipliers = np.asarray(multipliers, np.int64)  # [C]
        self.shifts = np.asarray(shifts, np.int64)  # [C], > 0 a left shift
        #: the same as Python ints (the per-channel checks of ``FloatOutputStage.make``)
        self.multiplier_list: list[int] = self.multipliers.tolist()
        self.right_list: list[int] = (-self.shifts).tolist()
        self.input_zero_point = int(input_zero_point)
        self.output_zero_point = int(output_zero_point)
        self.low, self.high = int(low), int(high)  # the fused activation's quantized clamp
        self.wide = bool(wide)  # int64 accumulators (16x8 kernels with an int64 bias)
        #: max |accumulator| when the kernel knows it (then the last steps run in int32)
        self.accumulator_bound: int | None = None
        self._plans: dict[tuple, _OutputPlan] = {}

    @classmethod
    def of(cls, x, filters, output, channels: int, activation: int, *, wide: bool = False) -> "ConvQuantization":
        """The per-channel multipliers and the clamp of a node (``x``, ``filters`` and
        ``output`` carry scales; ``channels`` output channels)."""
        input_scale = np.float32(x.quantization.scale[0])
        output_scale = np.float32(output.quantization.scale[0])
        filter_scales = np.asarray(filters.quantization.scale, np.float32)
        if x.type == TensorType.UINT8:
            # The legacy scalar multiplier (GetQuantizedConvolutionMultipler): the
            # product of the scales in float32, then a double division.
            real = float(np.float32(input_scale * filter_scales[0])) / float(output_scale)
            multiplier, shift = requantization_multiplier(real, RESCALE)
            multipliers = np.full(channels, multiplier, np.int64)
            shifts = np.full(channels, shift, np.int64)
        else:
            # double(s_in) * s_w[c] / s_out per channel, each in double as TFLite computes it
            reals = filter_scales.astype(np.float64)
            if reals.size != channels:
                reals = np.broadcast_to(reals, (channels,)).copy()
            reals *= float(input_scale)  # (the product first, then the division, as TFLite)
            reals /= float(output_scale)
            multipliers, shifts = requantization_multipliers(reals, RESCALE)
        low, high = activation_range_quantized(
            activation, float(output_scale), zero_point_of(output), output.dtype
        )
        return cls(multipliers, shifts, zero_point_of(x), zero_point_of(output), low, high, wide)

    def requantize(self, sums: np.ndarray, offset: np.ndarray, out: np.ndarray) -> None:
        """``out[..., c] = clamp(MultiplyByQuantizedMultiplier(sums[..., c] + offset[c],
        m[c], s[c]) + z_out)``: ``sums`` holds exact integers (any numeric type),
        channels last; ``offset`` int64 [C] (bias and zero-point terms).

        For right shifts (multipliers below 1, the usual case) this is the arithmetic
        of :func:`backends.cpu.quantization.multiply_by_quantized_multiplier` (and its
        rounding scheme, read from ``SINGLE_ROUNDING`` at each call) done in place,
        in a few passes (the tests check it equal to that function); left shifts and
        the int64 overload call the shared functions."""
        plan = self._plans.get(sums.shape)
        if plan is None:
            plan = self._plans[sums.shape] = _OutputPlan(self, sums.shape)
        single = quantization.SINGLE_ROUNDING
        if plan.exact_float and not single and plan.requantize_float(sums, offset, out):
            return
        acc = plan.acc
        np.copyto(acc, sums, casting="unsafe")
        if plan.shared:
            acc += offset
            if self.wide:
                scaled = multiply_by_quantized_multiplier_int64(acc, self.multipliers, self.shifts)
            else:
                scaled = multiply_by_quantized_multiplier(acc, self.multipliers, self.shifts)
            self._finish(scaled, out)
            return
        # (acc + offset) * m = acc * m + offset * m: the offset joins the rounding constant.
        np.multiply(acc, plan.multipliers, out=acc)
        np.add(acc, plan.rounding_constant(offset, single), out=acc)
        if single:
            # TFLITE_SINGLE_ROUNDING: (x * m + 2**(30 + r)) >> (31 + r), one rounding.
            np.right_shift(acc, plan.total_shift, out=acc)
            self._finish(acc, out)
            return
        # SaturatingRoundingDoublingHighMul: gemmlowp divides the nudged product
        # x * m + 2**30 by 2**31 truncating toward zero, which for both signs is this
        # floor (m >= 0: its one saturating case, INT32_MIN * INT32_MIN, cannot occur).
        np.right_shift(acc, 31, out=acc)
        # RoundingDivideByPOT (halves away from zero): (h + 2**(r-1) - [h < 0]) >> r,
        # nothing where r == 0. |h| <= |x|: with a known bound the rest runs in int32.
        h = plan.h
        if h is not acc:
            np.copyto(h, acc, casting="unsafe")
        sign = np.right_shift(h, h.dtype.itemsize * 8 - 1, out=plan.sign)  # -1 where h < 0
        if plan.round_mask is not None:
            np.bitwise_and(sign, plan.round_mask, out=sign)
        np.add(h, sign, out=h)
        np.add(h, plan.half, out=h)
        np.right_shift(h, plan.right, out=h)
        self._finish(h, out)

    def _finish(self, scaled: np.ndarray, out: np.ndarray) -> None:
        if self.output_zero_point:
            scaled += self.output_zero_point
        np.clip(scaled, self.low, self.high, out=scaled)
        np.copyto(out, scaled, casting="unsafe")


class _OutputPlan:
    """Buffers and per-channel operands of ``ConvQuantization.requantize`` for one
    shape of accumulators."""

    def __init__(self, stage: ConvQuantization, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.acc = np.empty(shape, np.int64)
        right = -stage.shifts  # RoundingDivideByPOT's exponent, where shifts <= 0
        self.shared = stage.wide or bool(np.any(right < 0))
        self.exact_float = False
        if self.shared:
            return
        self.tile = int(np.prod(shape, dtype=np.int64)) <= TILE_LIMIT
        self.stage = stage
        self._prepare_float(stage, right)
        bound = stage.accumulator_bound
        narrow = bound is not None and bound + (1 << 30) + 2 < (1 << 31)
        self.h = np.empty(shape, np.int32) if narrow else self.acc
        h_type = self.h.dtype
        self.sign = np.empty(shape, h_type)
        self.stage = stage
        self.multipliers = self.operand(stage.multipliers, np.int64)
        self.right = self.operand(right, h_type)
        self.half = self.operand(np.where(right > 0, np.left_shift(1, np.maximum(right, 1) - 1), 0), h_type)
        self.round_mask = self.operand(np.where(right > 0, -1, 0), h_type) if np.any(right == 0) else None
        self.total_shift = self.operand(right + 31, np.int64)
        self._constant = self._offset = self._single = None

    def _prepare_float(self, stage: ConvQuantization, right: np.ndarray) -> None:
        """The double-rounding output stage in float64, when every intermediate is an
        exactly representable multiple of ``2**-(31 + r)``.

        With ``x = (acc + offset) * m + 2**30`` (an integer), gemmlowp computes
        ``h = x >> 31`` then ``(h + 2**(r-1) - [h < 0]) >> r`` (just ``h`` for r = 0).
        Since ``floor((floor(x / 2**31) + c) / 2**r) = floor((x + c * 2**31) / 2**(31+r))``
        and ``h < 0`` exactly when ``x < 0``, that is one floor,
        ``floor(v - [x < 0] * 2**-r)`` with ``v = (x + 2**(30+r)) / 2**(31+r)``
        (for r = 0: ``floor(x / 2**31)``). In ``q = v - 1/2`` (``q < 0`` exactly when
        ``x < 0``; for r = 0, ``q = v``) the conditional step is ``copysign(2**-(r+1), q)
        - 2**-(r+1)``. Every term is an integer times ``2**-(31+r)`` below ``2**53`` in
        magnitude, so each float64 operation is exact. The zero point and ``-min`` of
        the output type are added before the clamp, so the clamped value is >= 0 and
        the truncating store into the unsigned view of the output is the floor; the
        sign bit flipped back gives the signed value.
        """
        bound = stage.accumulator_bound
        if bound is None:
            return
        multipliers = stage.multipliers
        if multipliers.size == 0 or np.any(multipliers < 0) or np.any(right > 31):
            return
        zero = abs(stage.output_zero_point)
        worst = 0
        for m, r in zip(multipliers.tolist(), right.tolist()):
            worst = max(worst, bound * m + (1 << 30) + (1 << (31 + r)) * (2 + zero))
        if worst >= (1 << 52):
            return
        self.exact_float = True
        self.float_right = right  # [C] int64
        scale = np.ldexp(1.0, -(31 + right))  # 2**-(31+r), exact
        positive = right > 0
        half_step = np.where(positive, np.ldexp(1.0, -right - 1), 0.0)  # 2**-(r+1)
        centre = np.where(positive, 0.5, 0.0)  # q = v - centre
        self.float_scale = scale
        self.float_centre = centre
        self.float_multipliers = self.operand(multipliers.astype(np.float64) * scale, np.float64)
        self.float_half_step = self.operand(half_step, np.float64)
        self.t = np.empty(self.shape, np.float64)
        self.step = np.empty(self.shape, np.float64)
        self._float_constant = self._float_offset = self._float_offset_source = None
        self._float_back = None

    def _float_constants(self, offset: np.ndarray, out_dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
        stage = self.stage
        offset = np.asarray(offset, np.int64)
        integer = offset * stage.multipliers + (1 << 30)
        integer = integer + np.where(self.float_right > 0, np.left_shift(1, 30 + self.float_right), 0)
        # q = x' * 2**-(31+r) - centre, with x' = x + 2**(30+r) (r > 0) or x (r = 0)
        constant = integer.astype(np.float64) * self.float_scale - self.float_centre
        return self.operand(constant, np.float64)

    def requantize_float(self, sums: np.ndarray, offset: np.ndarray, out: np.ndarray) -> bool:
        constant = self._float_constant
        if offset is not self._float_offset_source and (
            constant is None or not np.array_equal(offset, self._float_offset)
        ):
            constant = self._float_constant = self._float_constants(offset, out.dtype)
            self._float_offset = np.array(offset, copy=True)
        self._float_offset_source = offset  # the kernel's prepare-time array: unchanged
        back = self._float_back
        if back is None or back[0] != out.dtype:
            back = self._float_back = self._store_constants(out.dtype)
            if back[1] is None:
                self.exact_float = False
                return False
        _, lift, low, high, unsigned, sign_bit = back
        t = self.t
        np.multiply(sums, self.float_multipliers, out=t)
        np.add(t, constant, out=t)  # q
        step = np.copysign(self.float_half_step, t, out=self.step)
        np.add(t, step, out=t)
        np.add(t, lift, out=t)  # + centre - half_step + z_out - min(type)
        _clip(t, low, high, out=t)
        target = out.view(unsigned)
        np.copyto(target, t, casting="unsafe")  # t >= 0: truncation is the floor
        if sign_bit:
            np.bitwise_xor(target, sign_bit, out=target)
        return True

    def _store_constants(self, dtype: np.dtype) -> tuple:
        stage = self.stage
        dtype = np.dtype(dtype)
        info = np.iinfo(dtype)
        base = -int(info.min)  # 0 for unsigned types
        unsigned = np.dtype(f"u{dtype.itemsize}")
        lift = self.operand(self.float_centre - np.where(self.float_right > 0, np.ldexp(1.0, -self.float_right - 1), 0.0)
                            + stage.output_zero_point + base, np.float64)
        low, high = np.float64(stage.low + base), np.float64(stage.high + base)
        # The final sum (lift included) may round where it exceeds 2**53 units of
        # 2**-(31+r); rounding is monotone, so only values in [low, high + 1) must be
        # exact (the rest clamp the same either way).
        if any((int(high) + 2) << (31 + r) > (1 << 52) for r in self.float_right.tolist()) or low < 0:
            return dtype, None, None, None, None, None
        sign_bit = unsigned.type(base) if base else 0
        return dtype, lift, low, high, unsigned, sign_bit

    def operand(self, values: np.ndarray, dtype) -> np.ndarray:
        """A per-channel row as an operand of the accumulators' shape."""
        row = np.asarray(values, dtype)
        if self.tile:
            return np.ascontiguousarray(np.broadcast_to(row, self.shape))
        return row

    def rounding_constant(self, offset: np.ndarray, single: bool) -> np.ndarray:
        """``offset * m + 2**30`` (``+ 2**(30 + r)`` with single rounding), made again
        only when ``offset`` or the rounding scheme changes."""
        offset = np.asarray(offset, np.int64)
        if self._constant is None or self._single != single or not np.array_equal(offset, self._offset):
            stage = self.stage
            nudge = np.left_shift(1, -stage.shifts + 30) if single else (1 << 30)
            self._constant = self.operand(offset * stage.multipliers + nudge, np.int64)
            self._offset, self._single = offset.copy(), single
        return self._constant


class FloatOutputStage:
    """The int32 output stage of a node (double rounding, right shifts), in float64 on
    buffers fixed at bind time: ``t = sums * scale + constant`` per channel (done by the
    caller's matmul, or here in three passes), then three passes (clamp, store, sign
    flip), three more where the rounding step cannot be skipped; no Python besides
    the calls.

    With ``acc = sums + offset``, ``x = acc * m + 2**30`` and ``u = 2**-(31+r)`` (r in
    0..31 the right shift), gemmlowp's result before the zero point is ``floor(v -
    [x < 0] * 2**-r)`` with ``v = (x + E) * u``, ``E = 2**(30+r)`` (r = 0: ``E = 0``, no
    step; see ``_OutputPlan._prepare_float``). ``scale = m * u``; ``constant`` is
    ``(offset * m + 2**30) * u`` (then ``t = q = x * u``, negative exactly when x is)
    or, on the fast path, ``(offset * m + 2**30 + E) * u + z_out + base`` (``t = v +
    z_out + base`` at once). The general path adds ``copysign(h, q)`` (h = 2**-(r+1),
    0 for r = 0) and ``E*u - h + z_out + base``: ``v`` for x >= 0, ``v - 2**-r`` below.

    Fast path, ``low >= z_out`` (RELU, RELU6, and every output zero point at the type's
    minimum): the step matters only where x < 0 and r > 0; there ``v < E*u = 1/2``, so both
    ``floor(v)`` and ``floor(v - 2**-r)`` are <= 0, both results are <= z_out <= low
    and the clamp maps both to ``low``.

    Then the clamp to ``[low, high] + base`` (``base = -min`` of the output type, so
    the clamped t is >= 0 and the truncating store into the unsigned view is the floor)
    and the sign bit flipped back. Exactness: every term is an integer multiple of u
    (``sums`` holds integers; z_out and base are integers) and the sum of their
    magnitudes stays below 2**53 u (checked in ``make`` from the accumulator bound), so
    every float64 operation, in any order (BLAS included), is exact.

    Large right shifts (``floors``; alexa's 1x1 layers have r = 14..16): z_out + base
    are hundreds of output steps of 2**(31+r) u each, too many units for 2**53. Then t
    stays ``v`` (``q`` plus the step on the general path), whose magnitude in units of u
    is below ``2 * bound * m + 2**31 + 2**(32+r)`` (checked in ``make``), and the passes
    are ``floor(t)`` (exact), ``+ z_out`` and the clamp (integers), and the store of
    integers already in the type's range: one pass more than the usual path, several
    fewer than the int64 ``ConvQuantization.requantize``.
    """

    def __init__(self, stage: ConvQuantization, offset: np.ndarray, out: np.ndarray, floors: bool = False) -> None:
        offset = np.asarray(offset, np.int64)
        right = -stage.shifts
        dtype = out.dtype
        #: Large right shifts: ``z_out + base`` cannot join ``t`` exactly (see ``make``), so
        #: ``t`` stays ``v`` (or ``q`` plus the step) and is floored before ``z_out``.
        self.floors = floors
        base = 0 if floors else -_type_minimum(dtype)  # 0 for unsigned types
        zero = stage.output_zero_point
        self.fast = stage.low >= zero
        positive = right > 0
        unit = np.ldexp(1.0, -(31 + right))  # u, exact
        nudge = np.where(positive, np.left_shift(1, 30 + right), 0)  # E
        self.scale = stage.multipliers.astype(np.float64) * unit  # m * u, exact (m < 2**31)
        integer = offset * stage.multipliers + (1 << 30)  # |offset * m| < 2**53: checked in make
        half_step = np.where(positive, np.ldexp(1.0, -right - 1), 0.0)  # h
        lifted = 0 if floors else zero + base
        if self.fast:
            self.constant = (integer + nudge).astype(np.float64) * unit + lifted
        else:
            self.constant = integer.astype(np.float64) * unit
            self.half_step = half_step
            self.lift = nudge.astype(np.float64) * unit - half_step + lifted
        self.out = out
        self.target = out.view(f"u{dtype.itemsize}")
        # 0-d arrays: the cheapest operands for a ufunc (numpy scalars cost more)
        self.low, self.high = np.array(stage.low + base, np.float64), np.array(stage.high + base, np.float64)
        self.zero_point = np.array(zero, np.float64) if floors and zero else None
        self.sign_bit = np.array(base, self.target.dtype) if base else None
        self.t = np.empty(out.shape, np.float64)
        self.clamp_type = None if floors else self.integer_clamp_type(stage, base)

    def integer_clamp_type(self, stage: ConvQuantization, base: int):
        """int16 when every ``t`` (before the clamp) fits it, else None.

        |t| <= bound * m * u (the scaled accumulator: ``bound * scale``, the bound below
        2**53 and so exact in float64) + 1/2 (the nudge, E * u) + 1/2 (the step) + |z_out|
        + base; the clamp bounds (<= high + base) must fit too. (16-bit outputs never get
        here: ``make`` refuses their 2**15 base.)"""
        scaled = float(stage.accumulator_bound) * float(self.scale.max()) if self.scale.size else 0.0
        largest = max(scaled + 2 + abs(stage.output_zero_point) + base, stage.high + base) + 2
        return np.int16 if largest < 32767 else None

    @classmethod
    def make(cls, stage: ConvQuantization, offset: np.ndarray, out: np.ndarray) -> "FloatOutputStage | None":
        """The stage for accumulators ``sums + offset`` (``|acc| <= stage.accumulator_bound``,
        channels last) written to ``out`` (an integer array), or None when it does not
        apply: int64 accumulators, left shifts, single rounding (``SINGLE_ROUNDING`` is
        read here, once per allocation), no known bound, or a sum of magnitudes reaching
        2**53 units."""
        if stage.wide or quantization.SINGLE_ROUNDING or stage.accumulator_bound is None:
            return None
        multipliers, right = stage.multiplier_list, stage.right_list
        if out.dtype.kind not in "iu" or not multipliers or out.shape[-1] != len(multipliers):
            return None
        if min(multipliers) < 0 or max(multipliers) >= (1 << 31) or min(right) < 0 or max(right) > 31:
            return None
        base = -_type_minimum(out.dtype)
        # In units of u: |sums * m| + |offset * m| <= 2 * bound * m (the bound covers
        # |sums| + |offset|), the nudge 2**30 < 2**31, and in units of 2**(31+r) (one
        # output step) z_out, base, E * u = 1/2 and the step h <= 1/2.
        rest = abs(stage.output_zero_point) + base + 2
        bound = int(stage.accumulator_bound)
        if _units_below_2_53(stage, bound, rest):
            return cls(stage, offset, out)
        # Large right shifts: z_out + base (hundreds of output steps of 2**(31+r) u each)
        # would round t. Without them t (within 2 output steps of v) is still exact, and
        # it is floored first (``floors``): then z_out and the clamp are integer sums.
        if _units_below_2_53(stage, bound, 2):
            return cls(stage, offset, out, floors=True)
        return None

    def operand(self, values: np.ndarray) -> np.ndarray:
        """A per-channel row as an operand of ``t``: a 0-d array when every channel has
        the same value (the cheapest operand), else tiled to ``t``'s shape up to
        TILE_LIMIT elements (contiguous operands run faster than a broadcast row)."""
        values = np.asarray(values, np.float64)
        if values.min() == values.max():
            return np.array(values[0])
        if self.t.size <= TILE_LIMIT:
            tiled = np.empty(self.t.shape, np.float64)
            tiled[...] = values
            return tiled
        return np.ascontiguousarray(values)

    def finish(self) -> Callable[[], None]:
        """The passes after ``t`` holds ``q`` (general) or ``v + z_out + base`` (fast)."""
        t, target, low, high, sign_bit = self.t, self.target, self.low, self.high, self.sign_bit
        fast = self.fast
        if not fast:
            half_step, lift, step = self.operand(self.half_step), self.operand(self.lift), np.empty_like(t)
        if self.floors:
            # t = v (or v - 2**-r below 0 once stepped), exact: floor, then z_out and the
            # clamp on integers, then the store of integers in the type's range.
            out, zero_point, floor, add = self.out, self.zero_point, np.floor, np.add

            def finish_by_floor() -> None:
                if not fast:
                    np.copysign(half_step, t, out=step)
                    add(t, step, out=t)
                    add(t, lift, out=t)
                floor(t, out=t)
                if zero_point is not None:
                    add(t, zero_point, out=t)
                _clip(t, low, high, out=t)
                out[...] = t

            return finish_by_floor
        if self.clamp_type is not None and t.size >= INTEGER_CLAMP_MIN:
            # Clamp after a truncating store: for t >= 0 truncation is the floor; for t < 0
            # both are <= 0 <= low + base, so the clamp maps both to low + base. Clamping
            # to integer bounds commutes with the floor (both monotone), so this equals
            # the float clamp then the floor. (No overflow: ``integer_clamp_type``.)
            integers = np.empty(t.shape, self.clamp_type)
            low, high = low.astype(self.clamp_type), high.astype(self.clamp_type)

            def finish_in_integers() -> None:
                if not fast:
                    np.copysign(half_step, t, out=step)
                    np.add(t, step, out=t)
                    np.add(t, lift, out=t)
                integers[...] = t
                _clip(integers, low, high, out=integers)
                target[...] = integers
                if sign_bit is not None:
                    np.bitwise_xor(target, sign_bit, out=target)

            return finish_in_integers

        def finish() -> None:
            if not fast:
                np.copysign(half_step, t, out=step)
                np.add(t, step, out=t)
                np.add(t, lift, out=t)
            _clip(t, low, high, out=t)
            target[...] = t  # t >= 0: truncation is the floor
            if sign_bit is not None:
                np.bitwise_xor(target, sign_bit, out=target)

        return finish

    def from_sums(self, sums: np.ndarray) -> Callable[[], None]:
        """The whole stage from ``sums`` (a fixed array of exact integers, ``t``'s shape)."""
        t, scale, constant, finish = self.t, self.operand(self.scale), self.operand(self.constant), self.finish()
        if sums.dtype == np.float64:

            def requantize_float64() -> None:
                np.multiply(sums, scale, out=t)
                np.add(t, constant, out=t)
                finish()

            return requantize_float64

        def requantize() -> None:
            t[...] = sums  # exact; then a float64 multiply is cheaper than a mixed-type one
            np.multiply(t, scale, out=t)
            np.add(t, constant, out=t)
            finish()

        return requantize


def _units_below_2_53(stage: ConvQuantization, bound: int, steps: int) -> bool:
    """Whether ``2 * bound * m + 2**31 + (steps << (31 + r)) < 2**53`` for every channel's
    multiplier m and right shift r: in float64 on the whole row (its rounding, relative
    2**-52 at most, is covered by a margin of 2**-40), and exactly, channel by channel in
    Python ints, only where that estimate comes within the margin of the limit."""
    multipliers, right = stage.multipliers, -stage.shifts
    estimate = np.ldexp(float(steps), right + 31)
    estimate += multipliers * (2.0 * bound)
    largest = float(estimate.max()) + 2.0**31
    if largest < 2.0**53 * (1 - 2.0**-40):
        return True
    if largest > 2.0**53 * (1 + 2.0**-40):
        return False
    return all(
        2 * bound * m + (1 << 31) + (steps << (31 + r)) < (1 << 53)
        for m, r in zip(stage.multiplier_list, stage.right_list)
    )


@functools.lru_cache(maxsize=None)
def _type_minimum(dtype: np.dtype) -> int:
    """The least value of an integer type (``np.iinfo`` costs a microsecond a call)."""
    return int(np.iinfo(dtype).min)


def uint8_bias_scale_error(x, filters, bias, output) -> str | None:
    """TFLite's check on a uint8 convolution's bias scale (``GetQuantizedConvolution
    Multipler``): ``|s_in * s_w - s_bias| / s_out <= 0.02``; a message when it fails."""
    if bias is None:
        return None
    product = float(np.float32(x.quantization.scale[0])) * float(np.float32(filters.quantization.scale[0]))
    bias_scale = float(np.float32(bias.quantization.scale[0])) if has_scale(bias) else 0.0
    if abs(product - bias_scale) / float(np.float32(output.quantization.scale[0])) > 0.02:
        return (
            f"the bias scale {bias_scale} must equal input scale x filter scale ({product}) "
            f"within 2% of the output scale (TFLite checks this for uint8)"
        )
    return None


def accumulator_dtype(abs_weight_sums: np.ndarray, input_abs_max: int) -> np.dtype:
    """The float type in which every ``sum w * x`` with ``|x| <= input_abs_max`` is
    exact, given ``sum |w|`` per output channel."""
    bound = int(np.max(abs_weight_sums, initial=0)) * int(input_abs_max)
    dtype = exact_float_dtype(bound)
    if dtype is None:
        raise ValueError(f"the accumulators (up to {bound}) are not exact in float64")
    return dtype


class FloatInput:
    """The input as a float array, padded with ``fill`` (and with every channel
    repeated ``repeat`` times when asked), in one buffer allocated once: ``buffer``
    (``[N, H + pads, W + pads, C * repeat]``) keeps its identity, so views of it can be
    made at prepare."""

    def __init__(self, geometry: WindowGeometry, dtype, fill: float = 0.0, repeat: int = 1) -> None:
        self.pad = PaddedInput(geometry, dtype=dtype, fill=fill, repeat=repeat)
        if self.pad.buffer is not None:
            self.buffer = self.pad.buffer
        else:  # nothing to pad: still a float copy of ours
            self.buffer = np.empty((geometry.batch, geometry.in_h, geometry.in_w, geometry.channels), dtype)
        #: the views that ``target[...] = x`` refreshes (one per repetition of the channels)
        self.targets = self.pad.copies if self.pad.buffer is not None else [self.buffer]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Refresh the buffer from ``x`` (any numeric type, converted exactly) and return it."""
        if self.pad.buffer is not None:
            return self.pad(x)
        np.copyto(self.buffer, x, casting="unsafe")
        return self.buffer


def depthwise_taps(source: np.ndarray, geometry: WindowGeometry) -> np.ndarray:
    """For a stride of 1 across: every tap of a depthwise window over the padded input
    ``source`` ([N, Hp, Wp, C] contiguous) as a read-only view ``[KH, KW, N, OH, OW*C]``
    whose last axis is contiguous: tap (ky, kx) of output row y reads the run of
    ``OW * C`` values starting at ``source[n, y*sh + ky*dh, kx*dw, 0]``."""
    g = geometry
    if g.stride_w != 1 or not source.flags.c_contiguous:
        raise ValueError("depthwise_taps needs a stride of 1 across and a contiguous source")
    item = source.itemsize
    batch_stride, row_stride, column_stride = source.strides[:3]
    return as_strided(
        source,
        (g.filter_h, g.filter_w, g.batch, g.out_h, g.out_w * g.channels),
        (g.dilation_h * row_stride, g.dilation_w * column_stride, batch_stride, g.stride_h * row_stride, item),
        writeable=False,
    )


def symmetric_quantize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``SymmetricQuantizeFloats`` of each row of ``values`` ([B, n] float32): the
    int8 values (held in float32) and the scaling factor of each row (float32).

    ``range = max(|min|, |max|)``, ``scale = range / 127``, ``q = round(x * (127 /
    range))`` clamped to +-127, all in float32; a row of zeros gives q = 0, scale 1.
    """
    low = values.min(axis=1)
    high = values.max(axis=1)
    ranges = np.maximum(np.abs(low), np.abs(high))
    empty = ranges == 0
    ranges = np.where(empty, np.float32(1), ranges)
    scales = np.where(empty, np.float32(1), ranges / np.float32(127)).astype(np.float32)
    inverse = (np.float32(127) / ranges).astype(np.float32)
    quantized = round_half_away(values * inverse[:, None])
    np.clip(quantized, -127, 127, out=quantized)
    if empty.any():
        quantized[empty] = 0
    return quantized, scales


def asymmetric_quantize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``AsymmetricQuantizeFloats`` of each row of ``values`` ([B, n] float32): the
    int8 values (held in float32), the scaling factor (float32) and the offset
    (the zero point, int) of each row.

    The range always contains 0; ``scale = (rmax - rmin) / 255`` and the nudged zero
    point are computed in double, ``q = round(offset + x * (1 / scale))`` in float32,
    clamped to int8; a row of zeros gives q = 0, scale 1, offset 0.
    """
    rmin = np.minimum(values.min(axis=1), np.float32(0)).astype(np.float64)
    rmax = np.maximum(values.max(axis=1), np.float32(0)).astype(np.float64)
    empty = rmin == rmax
    scale = np.where(empty, 1.0, (rmax - rmin) / 255.0)
    from_min, from_max = -128.0 - rmin / scale, 127.0 - rmax / scale
    error_min = 128.0 + np.abs(rmin / scale)
    error_max = 127.0 + np.abs(rmax / scale)
    zero_point = np.where(error_min < error_max, from_min, from_max)
    offsets = np.clip(round_half_away(zero_point), -128, 127)
    offsets = np.where(empty, 0, offsets).astype(np.int64)
    scales = np.where(empty, np.float32(1), scale.astype(np.float32)).astype(np.float32)
    inverse = (np.float32(1) / scales).astype(np.float32)
    quantized = offsets.astype(np.float32)[:, None] + values * inverse[:, None]
    quantized = round_half_away(quantized)
    np.clip(quantized, -128, 127, out=quantized)
    if empty.any():
        quantized[empty] = 0
    return quantized, scales, offsets


def select_conv_arithmetic(
    kernel,
    x,
    filters,
    bias,
    output,
    *,
    filter_role: str = "filter",
    what: str = "convolution",
    filter_zero_points_must_be_zero: bool = True,
    int16_bias_from_params: bool = True,
) -> tuple[str, bool]:
    """Pick a convolution's arithmetic from its tensor types, as TFLite does, and check
    the types that go with it. Returns ``(mode, wide)``: mode is ``"hybrid"`` (float
    input, int8 filter), ``"uint8"``, ``"int8"`` or ``"int16"`` (16x8); ``wide`` says the
    int16 bias is int64.

    ``int16_bias_from_params``: CONV_2D and TRANSPOSE_CONV read the int16 bias type from
    ``quantized_bias_type`` (absent: int64); DEPTHWISE_CONV_2D's is always int64.
    """
    kernel.require_types(x, T.UINT8, T.INT8, T.INT16, T.FLOAT32, role="input")
    for tensor, role in ((filters, filter_role), (output, "output")):
        if tensor is None:  # (a delegate may prepare a node the interpreter did not check)
            raise kernel.unsupported(f"the {role} is missing")
    if x.type == T.FLOAT32:
        kernel.require_types(filters, T.INT8, role=filter_role)
        kernel.require_types(output, T.FLOAT32, role="output")
        if bias is not None:
            kernel.require_types(bias, T.FLOAT32, role="bias")
        if not has_scale(filters):
            verb = "have" if filter_role == "weights" else "has"
            raise kernel.unsupported(f"the int8 {filter_role} {filters.name!r} of a hybrid convolution {verb} no scale")
        return "hybrid", False
    for tensor, role in ((x, "input"), (filters, filter_role), (output, "output")):
        if not has_scale(tensor):
            raise kernel.unsupported(f"the {role} {tensor.name!r} ({tensor.type_name}) has no quantization scale")
    kernel.require_types(output, x.type, role="output")
    if x.type == T.UINT8:
        kernel.require_types(filters, T.UINT8, role=filter_role)
        if bias is not None:
            kernel.require_types(bias, T.INT32, role="bias")
        message = uint8_bias_scale_error(x, filters, bias, output)
        if message:
            raise kernel.unsupported(message)
        return "uint8", False
    # int8 activations also take int4 filters (CONV_2D v7, DEPTHWISE_CONV_2D v7, FULLY_CONNECTED
    # v10), held one value an element: TFLite unpacks them to int8 before the same arithmetic.
    kernel.require_types(filters, T.INT8, *((T.INT4,) if x.type == T.INT8 else ()), role=filter_role)
    if filter_zero_points_must_be_zero and np.asarray(filters.quantization.zero_point).any():
        raise kernel.unsupported(f"the filter of an {x.type_name} {what} must have zero points 0")
    if x.type == T.INT8:
        if bias is not None:
            kernel.require_types(bias, T.INT32, role="bias")
        return "int8", False
    if zero_point_of(x) != 0 or zero_point_of(output) != 0:
        raise kernel.unsupported("int16 input and output must have zero point 0")
    if not int16_bias_from_params:
        if bias is not None:
            kernel.require_types(bias, T.INT64, role="bias")
        return "int16", True
    bias_type = int(getattr(kernel.params, "quantized_bias_type", T.FLOAT32) or T.FLOAT32)
    if bias_type not in (T.FLOAT32, T.INT32, T.INT64):
        raise kernel.unsupported(f"quantized_bias_type must be INT32 or INT64, got {bias_type}")
    if bias is not None:
        if bias_type == T.INT32:
            kernel.require_types(bias, T.INT32, role="bias (quantized_bias_type INT32)")
        else:
            # Without quantized_bias_type TFLite reads the bias as int64.
            kernel.require_types(bias, T.INT64, role="bias")
    return "int16", bias_type != T.INT32
