"""QUANTIZE: float32 to uint8/int8/int16 (per tensor or per channel) or int4/uint4 (per
tensor), and requantization between integer types with new scales.

Float input (TFLite's ``reference_ops::AffineQuantize`` / ``PerChannelQuantize``)::

    q = clamp(int32(roundf(x / scale)) + zero_point)     # x / scale in float32

``roundf`` rounds halves away from zero; a quotient outside int32 (or NaN) converts to
INT32_MIN as x86 does, and adding the zero point wraps in int32, as in the wheel.
Per tensor, invoke looks the results up in a table indexed by trunc(2 x / scale) (see
``_quantize_lookup``) after one check that every quotient is well inside int32.

Integer input (``reference_ops::Requantize``)::

    q = clamp(MultiplyByQuantizedMultiplier(x - in_zp, M, s) + out_zp)

with ``M, s = QuantizeMultiplier(double(in_scale) / double(out_scale))``. For 8- and
16-bit inputs the whole map is tabulated at prepare (256 or 65536 entries), so invoke is
one ``take``.

The GPU delegate's QUANTIZE (``backends/gpu/ops/quantize.py``) takes this kernel's
Prepare (``configure``: scales, zero points, bounds, the requantization table) and the
float path's arithmetic (:func:`quantize_quotient`, written against the array namespace).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.quantization import (
    INT32_MIN,
    legacy_params,
    multiply_by_quantized_multiplier,
    namespace_of,
    requantization_multiplier,
    round_half_away,
    wrap_int32,
)
from schema.enums import BuiltinOperator, TensorType
from schema.packed import VALUE_RANGE_OF_PACKED_TYPE

T = TensorType
FLOAT_OUTPUTS = (T.UINT8, T.INT8, T.INT16, T.INT4, T.UINT4)
#: Outputs TFLite quantizes float32 into per tensor only ("not currently supported" per channel).
PER_TENSOR_OUTPUTS = (T.INT4, T.UINT4)
#: Requantization pairs TFLite's Prepare/Eval accept (input type -> output types).
REQUANTIZE = {
    T.INT8: (T.INT8, T.UINT8),
    T.UINT8: (T.INT8, T.UINT8),
    T.INT16: (T.INT8, T.INT16, T.INT32),
    T.INT32: (T.INT8, T.INT16),
}
#: Below this magnitude a rounded quotient plus any zero point stays inside int32.
_SAFE = float(2**31 - 2**17)


def quantize_quotient(quotient, zero_point, low: int, high: int):
    """``clamp(int32(roundf(q)) + zero_point, low, high)`` of float32 quotients ``q = x /
    scale`` (any array namespace), as LiteRT's x86 build computes it: ``roundf`` rounds
    halves away from zero, a rounded quotient outside int32 (or NaN) converts to
    INT32_MIN, and adding the zero point wraps in int32. ``zero_point`` is an int or an
    int64 array broadcast against ``q`` (per channel). Returns int64 values."""
    xp = namespace_of(quotient, zero_point)
    rounded = round_half_away(quotient)
    inside = (rounded >= -(2.0**31)) & (rounded < 2.0**31)  # (False for NaN)
    whole = xp.where(inside, rounded, np.float32(INT32_MIN)).astype(np.int64)
    total = whole + zero_point
    wrapped = ((total + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
    return xp.clip(wrapped, low, high)


# v1: float32 -> uint8/int8, and requantization int8/uint8 -> int8/uint8, int16 -> int8,
#     int16 -> int32, int32 -> int8 (per tensor).
# v2: int16 output (float32 -> int16, int16 -> int16, int32 -> int16).
# v3: per-channel output (float32 -> per-channel uint8/int8/int16).
# v4: int4 output, v5: uint4 output (float32 -> int4 / uint4, per tensor: values held one an
#     element, ``schema.packed``).
# v6: LiteRT 2.3 registers it (TFLite's runtime table lists it, its rules never give it); its
#     kernel takes the types above and no other (tests/cpu/test_quantize.py), so v6 here too.
# The arithmetic follows the tensor types, as in TFLite: an under-stamped node runs as LiteRT
# runs it.
@register(BuiltinOperator.QUANTIZE, 1, 6)
class Quantize(CpuKernel):
    """QUANTIZE v1-v6: float32 to uint8/int8/int16 (per tensor or channel) or int4/uint4
    (per tensor); requantize."""

    def prepare(self) -> None:
        self.configure()
        self.outputs[0].resize(self.inputs[0].shape)
        x = self.inputs[0]
        # (a float input's bound step checks its range with one dot over the input)
        self.blas_work = x.num_elements if x.type == T.FLOAT32 else 0

    def configure(self) -> None:
        """The checks and the Prepare-time parameters (scales, zero points, bounds, the
        tables), with no effect on the tensors: also what another backend calls to reuse
        them (raises ``UnsupportedKernelError``)."""
        self.require_num_inputs(1)
        x, out = self.inputs[0], self.outputs[0]
        self.require_types(out, *FLOAT_OUTPUTS, T.INT32, role="output")
        q = out.quantization
        if q is None or not q.is_quantized:
            raise self.unsupported(f"output {out.name!r} has no quantization parameters")
        info = np.iinfo(out.dtype)
        self.low, self.high = VALUE_RANGE_OF_PACKED_TYPE.get(out.type, (int(info.min), int(info.max)))
        if x.type == T.FLOAT32:
            self.require_types(out, *FLOAT_OUTPUTS, role="output")
            if out.type in PER_TENSOR_OUTPUTS and q.is_per_channel:
                raise self.unsupported(
                    f"per-channel {out.type_name} output; TFLite quantizes to {out.type_name} per tensor only"
                )
            self._prepare_quantize(x, out)
        else:
            self.require_types(x, T.FLOAT32, *REQUANTIZE, role="input")
            self.require_types(out, *REQUANTIZE[x.type], role="output")
            self._prepare_requantize(x, out)

    # -- float32 -> integer ------------------------------------------------------------------
    def _prepare_quantize(self, x, out) -> None:
        self.mode = "quantize"
        q = out.quantization
        scale = np.asarray(q.scale, np.float32)
        zero_point = np.asarray(q.zero_point, np.int64).ravel()
        if q.is_per_channel:
            axis = int(q.quantized_dimension)
            if not 0 <= axis < len(x.shape) or x.shape[axis] != scale.size:
                raise self.unsupported(
                    f"output {out.name!r} has {scale.size} scales along quantized_dimension {axis} "
                    f"but shape {list(x.shape)}"
                )
            if zero_point.size != scale.size:  # TFLite repeats the first zero point
                zero_point = np.full(scale.size, zero_point[0] if zero_point.size else 0, np.int64)
            channel_shape = [1] * len(x.shape)
            channel_shape[axis] = scale.size
            self.scale = scale.reshape(channel_shape)
            self.zero_point = zero_point.reshape(channel_shape)
        else:
            self.scale = np.float32(scale[0])
            self.zero_point = np.int64(zero_point[0] if zero_point.size else 0)
        self.zero_point_f = np.asarray(self.zero_point, np.float32)
        # Quotients clamped to [low - zp, high - zp] before rounding round into it.
        self.quotient_low = (self.low - self.zero_point).astype(np.float32)
        self.quotient_high = (self.high - self.zero_point).astype(np.float32)
        self.buffer = np.empty(x.shape, np.float32)
        self.scratch = np.empty(x.shape, np.float32)
        self.lookup = None if q.is_per_channel else self._quantize_lookup()

    def _quantize_lookup(self) -> "tuple[np.float32, int, np.ndarray] | None":
        """(scale / 2, m_low, table) of the per-tensor fast path (see ``bind``).

        With m = trunc(2 q) (q = x / scale), C's roundf(q) is
        g(m) = sign(m) * ((|m| + 1) // 2): for q >= 0, 2q in [m, m + 1) puts q + 1/2
        in [(m + 1)/2, (m + 2)/2), whose floor is (m + 1) // 2; q < 0 is symmetric.
        The table holds clamp(g(m) + zp) for m in [m_low, m_high], two steps beyond
        where the clamp saturates, so a clamped index gives every m's result.
        """
        scale = np.float32(self.scale)
        half = np.float32(scale / np.float32(2))
        if not (half >= np.finfo(np.float32).tiny and half * np.float32(2) == scale):
            return None  # x / (scale / 2) must equal 2 (x / scale) bit for bit
        zero_point = int(self.zero_point)
        m_low, m_high = 2 * (self.low - zero_point) - 2, 2 * (self.high - zero_point) + 2
        m = np.arange(m_low, m_high + 1, dtype=np.int64)
        rounded = np.sign(m) * ((np.abs(m) + 1) // 2)
        table = np.clip(rounded + zero_point, self.low, self.high).astype(self.outputs[0].dtype)
        return half, m_low, table

    # -- integer -> integer --------------------------------------------------------------------
    def _prepare_requantize(self, x, out) -> None:
        self.mode = "requantize"
        for tensor, role in ((x, "input"), (out, "output")):
            q = tensor.quantization
            if q is None or not q.is_quantized:
                raise self.unsupported(f"{role} {tensor.name!r} of type {tensor.type_name} has no quantization")
            if q.is_per_channel:
                raise self.unsupported(f"requantizing a per-channel {role} ({tensor.name!r}) is not supported")
        in_scale, in_zp = legacy_params(x)
        out_scale, out_zp = legacy_params(out)
        if x.type == T.INT16 and out.type == T.INT16 and (in_zp != 0 or out_zp != 0):
            raise self.unsupported("int16 -> int16 requantization needs zero points 0")
        multiplier, shift = requantization_multiplier(float(in_scale) / float(out_scale), "input scale / output scale")
        self.in_zp, self.out_zp, self.multiplier, self.shift = in_zp, out_zp, multiplier, shift
        self.table = None
        if x.type != T.INT32:
            # Tabulate every possible input, indexed by its bit pattern (the unsigned view).
            info = np.iinfo(x.dtype)
            values = np.arange(int(info.min), int(info.max) + 1, dtype=np.int64)
            table = self._requantize(values)
            self.table = np.roll(table, int(info.min))
            self.unsigned = np.dtype(f"u{x.dtype.itemsize}")
            # Shortcuts for maps that are a bit flip (int8 <-> uint8 at the same scale,
            # zero points 128 apart) or the identity: no lookup needed.
            bits = np.arange(self.table.size, dtype=np.int64)
            table_bits = self.table.view(np.dtype(f"u{out.dtype.itemsize}")).astype(np.int64)
            self.xor = None
            if x.dtype.itemsize == out.dtype.itemsize:
                for flip in (0, 1 << (8 * x.dtype.itemsize - 1)):
                    if np.array_equal(table_bits, bits ^ flip):
                        self.xor = flip

    def bind(self) -> Callable[[], None]:
        if not self.buffers_are_fixed():
            return self.invoke
        x, out = self.inputs[0].data, self.outputs[0].data
        if self.mode == "quantize":
            return self.invoke if self.lookup is None else self._bind_quantize(x, out)
        if self.table is None:
            return self.invoke
        if self.xor is not None:
            source, target, flip = x.view(self.unsigned), out.view(self.unsigned), self.xor
            return lambda: np.bitwise_xor(source, flip, out=target)
        # The table is indexed by bit pattern, i.e. by the value modulo its size.
        index, take = np.empty(x.shape, np.intp), self.table.take

        def requantize() -> None:
            index[...] = x
            take(index, None, out, "wrap")

        return requantize

    def _bind_quantize(self, x: np.ndarray, out: np.ndarray) -> Callable[[], None]:
        """float32 -> integer per tensor in five calls: d = x / (scale / 2), which is
        2 (x / scale) exactly (halving a normal scale is exact, and a power-of-two factor
        commutes with rounding; a quotient so small it is subnormal rounds to 0 either
        way); a check that every |d| is small (one dot product: NaN, inf and anything
        at or beyond int32 fail it, and go to ``invoke``); trunc(d) by the store into an
        intp index, shifted by -m_low; the table lookup, whose clamped index saturates
        like the clamp (see ``_quantize_lookup``)."""
        half, m_low, table = self.lookup
        halves = np.full(x.shape, half, np.float32)
        doubled = np.empty(x.shape, np.float32)
        flat = doubled.reshape(-1)
        index = np.empty(x.shape, np.intp)
        offset = np.full(x.shape, -m_low, np.intp)
        divide, dot, add, take, slow = np.divide, np.dot, np.add, table.take, self.invoke
        limit = _SAFE * _SAFE  # |d| < _SAFE: |q| < _SAFE / 2

        def quantize() -> None:
            divide(x, halves, out=doubled)
            if not dot(flat, flat) < limit:  # (False for NaN)
                slow()
                return
            index[...] = doubled  # truncation toward zero
            add(index, offset, out=index)
            take(index, None, out, "clip")  # (clip: the clamp, see _quantize_lookup)

        return quantize

    def _requantize(self, values: np.ndarray) -> np.ndarray:
        shifted = wrap_int32(values - self.in_zp)
        scaled = multiply_by_quantized_multiplier(shifted, self.multiplier, self.shift) + self.out_zp
        return np.clip(wrap_int32(scaled), self.low, self.high).astype(self.outputs[0].dtype)

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        if self.mode == "requantize":
            if self.table is None:
                out[...] = self._requantize(x.astype(np.int64))
            elif self.xor is not None:
                np.bitwise_xor(x.view(self.unsigned), self.xor, out=out.view(self.unsigned))
            else:
                np.take(self.table, x.view(self.unsigned), out=out)
            return
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            quotient = np.divide(x, self.scale, out=self.buffer)  # float32 / float32
        if x.size and not (np.minimum.reduce(quotient, None) > -_SAFE and np.maximum.reduce(quotient, None) < _SAFE):
            with np.errstate(invalid="ignore", over="ignore"):
                self._quantize_out_of_range(quotient, out)
            return
        # clamp(round(q) + zp) == round(clamp(q, low - zp, high - zp)) + zp (integer bounds).
        np.maximum(quotient, self.quotient_low, out=quotient)
        np.minimum(quotient, self.quotient_high, out=quotient)
        round_half_away(quotient, out=quotient, scratch=self.scratch, finite=True)
        np.add(quotient, self.zero_point_f, out=out, casting="unsafe")

    def _quantize_out_of_range(self, quotient: np.ndarray, out: np.ndarray) -> None:
        """Quotients outside int32 (or NaN): x86 converts them to INT32_MIN, and adding the
        zero point wraps in int32."""
        out[...] = quantize_quotient(quotient, self.zero_point, self.low, self.high)

