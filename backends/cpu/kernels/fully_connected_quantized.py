"""FULLY_CONNECTED on quantized tensors: integer (uint8, int8, int16) and hybrid.

Integer kernels (input, weights and output quantized; TFLite's reference kernels)::

    acc[b, u] = sum_d (w[u, d] - w_zp) * (x[b, d] - x_zp) + bias[u]        (exact)

then, for uint8/int8 outputs and int16 x int8, the reference kernels of the LiteRT we
match rescale in double (``reference_integer_ops::FullyConnected`` with scales; no
``MultiplyByQuantizedMultiplier``)::

    out = clamp(int32(round(double(acc) * (double(s_x) * s_w[u] / s_out))) + out_zp)

and int16 x int16 weights (version 7) use ``MultiplyByQuantizedMultiplier`` on an
int64 accumulator. Per-channel weights (one scale per unit, zero points ignored) are
taken with int8/int16 inputs. The accumulator is int32 where TFLite's is (int8, uint8,
int16 x int8 with an int32 bias): it wraps like the compiled C when the bound from the
shapes says it could overflow.

The sum is one BLAS matmul on floats, exact because every partial sum of integers stays
below 2**24 (float32) or 2**53 (float64), a bound computed at prepare from the
weights; the weights with their zero point removed are laid out once at prepare.

At invoke, the common integer case (constant weights and bias, the double rescale, no
int32 wrap-around possible) runs a plan bound once per allocation (``bind``): the input
zero point and the bias fold into one extra weight row that a constant column of ones
in the input picks up, so ``acc`` is a single ``np.dot`` in float64, then ::

    t = clamp(double(acc) * scale + (MAGIC + out_zp), MAGIC + low, MAGIC + high)
    out = the low bytes of t                                    (MAGIC = 1.5 * 2**52)

in six numpy calls on arrays prepared at bind (``_bind_fast_integer``): the add rounds
to an integer, held in two's complement in the low bits of the double, the same as
C's ``round`` except at exact halves (to even), which a check at prepare rules out
(``magic_rounding_matches``); else ::

    v = clamp(double(acc) * scale, low - out_zp, high - out_zp)
    out = trunc(v + copysign(0.5 - 2**-54, v)) + out_zp

in nine. The general invoke's output stage is ``rescale_double``, a plain function written
against the array namespace that the GPU delegate's quantized FULLY_CONNECTED calls on
device arrays too, with the Prepare-time pieces it shares (``double_rescale_scale``,
``bias_scale_error``, ``int32_hazards``): one copy of the rules for both backends.

Hybrid (float32 input, int8 weights, float32 output; ``EvalHybridDense``): each row of
the input is quantized to int8 on the fly, symmetrically (``x * 127 / max|x|``) or,
with ``asymmetric_quantize_inputs``, with a zero point, exactly as the wheel's tensor
utils do (``_hybrid.py``); the integer dot products are scaled back in float32 as
``MatrixBatchVectorMultiplyAccumulate`` does::

    out = bias + float(dot - row_sum(w) * x_zp) * (row_scale * s_w[u])

then the fused activation (any of them, including TANH and SIGN_BIT, on floats).
"""

from __future__ import annotations

import math
import sys
from typing import Callable

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._hybrid import HybridMatrix, apply_float_activation
from backends.cpu.kernels._window import check_shapes, remember_shapes, require_inputs
from backends.cpu.quantization import (
    _wrap_int32,
    activation_range_quantized,
    exact_float_dtype,
    legacy_params,
    multiply_by_quantized_multiplier_int64,
    namespace_of,
    requantization_multiplier,
    requantization_multipliers,
    round_half_away,
    wrap_int32,
)
from delegate_sdk.tensor import Allocation
from schema.enums import ActivationFunctionType, BuiltinOperator, FullyConnectedOptionsWeightsFormat, TensorType

try:  # the clip ufunc itself: np.clip's Python wrapper costs ~1.5 us more a call
    from numpy._core.umath import clip as _clip
except ImportError:  # numpy < 2
    from numpy.core.umath import clip as _clip

T = TensorType
Act = ActivationFunctionType

#: (input, weights, output) types of TFLite's integer FULLY_CONNECTED kernels.
INTEGER_SIGNATURES = {
    (T.UINT8, T.UINT8, T.UINT8),
    (T.INT8, T.INT8, T.INT8),
    (T.INT16, T.INT8, T.INT16),
    (T.INT16, T.INT16, T.INT16),
    (T.UINT8, T.UINT8, T.INT16),
}
#: Sub-byte weights (held one value an element): TFLite unpacks them to int8 and runs the
#: int8-weights kernels (int8 input: v10 int4, v14 int2; int16 input: v13 int4, v14 int2).
SUB_BYTE_WEIGHTS = (T.INT4, T.INT2)
CLAMPING_ACTIVATIONS = (Act.NONE, Act.RELU, Act.RELU_N1_TO_1, Act.RELU6)
INT32_LIMIT = 2**31
#: At most this many accumulator values are checked at prepare by ``magic_rounding_matches``.
RINT_PROOF_LIMIT = 1 << 20
#: 1.5 * 2**52: the doubles of [2**52, 2**53) are the integers, and ``MAGIC + v`` for an
#: integer |v| < 2**51 holds v in two's complement in the low bits of its mantissa.
MAGIC = 1.5 * 2.0**52


# -- the integer arithmetic, shared with the GPU delegate (backends/gpu/ops/fully_connected.py)


def double_rescale_scale(in_scale: float, channel_scales, out_scale: float):
    """The real multiplier of the reference kernels' double rescale, ``double(s_in) *
    s_w[u] / double(s_out)`` (``channel_scales``: the float32 weight scales as float64,
    one per unit or one for all)."""
    return float(np.float32(in_scale)) * channel_scales / float(np.float32(out_scale))


def bias_scale_error(in_scale: float, w_scale: float, bias, out_scale: float) -> str | None:
    """``GetQuantizedConvolutionMultipler``'s consistency check of a per-tensor node's bias
    scale (``|s_in * s_w - s_bias| / s_out <= 0.02``): a message when it fails."""
    bias_scale, _ = legacy_params(bias)
    product = float(np.float32(in_scale) * np.float32(w_scale))
    if out_scale and abs(product - bias_scale) / out_scale > 0.02:
        return (
            f"bias scale {bias_scale} differs from input scale x weights scale {product} "
            "by more than 2% of the output scale"
        )
    return None


def input_abs_max(dtype, zero_point: int) -> int:
    """The largest ``|x - zero_point|`` of the integer type ``dtype``."""
    info = np.iinfo(dtype)
    return max(abs(int(info.min) - zero_point), abs(int(info.max) - zero_point))


def int32_hazards(acc_bound: int, scale, acc_is_int32: bool) -> tuple[bool, bool]:
    """``(wrap_accumulator, check_int32_conversion)`` for accumulators up to ``acc_bound``
    in magnitude: whether TFLite's int32 accumulator may wrap, and whether
    ``round(double(acc) * scale)`` may leave int32 (x86 then converts it to INT32_MIN)."""
    wrap = acc_is_int32 and acc_bound >= INT32_LIMIT
    max_scale = float(np.max(scale)) if np.size(scale) else 0.0
    return wrap, acc_bound * max_scale >= INT32_LIMIT - 2**17


def rescale_double(acc, scale, out_zp: int, low: int, high: int, *, check_int32_conversion: bool, out=None, scratch=None):
    """The output stage of the reference integer kernels (uint8/int8, int16 x int8):
    ``clamp(int32(round(double(acc) * scale)) + out_zp, low, high)``, C's ``round``
    (halves away from zero); with ``check_int32_conversion`` a product outside int32
    converts to INT32_MIN, as on x86, and the add wraps in int32.

    ``acc``: exact integer accumulators, ``scale`` one per unit (last axis) or one for
    all, in the array namespace of ``acc`` (numpy, or device arrays). With numpy and
    ``out`` given, ``acc`` (float64) is overwritten and the result stored into ``out``
    (``scratch``: a float64 buffer of its shape); otherwise the clamped values are
    returned (float64 or int64; the caller casts them to the output type).
    """
    xp = namespace_of(acc)
    if xp is np and out is not None:
        np.multiply(acc, scale, out=acc)
        rounded = round_half_away(acc, out=acc, scratch=scratch, finite=True)
    else:
        rounded = round_half_away(acc.astype(np.float64) * scale, finite=True)
    if check_int32_conversion:
        outside = ~((rounded >= -INT32_LIMIT) & (rounded < INT32_LIMIT))
        whole = xp.where(outside, np.float64(-INT32_LIMIT), rounded).astype(np.int64)
        result = xp.clip(_wrap_int32(whole + out_zp), low, high)
        if out is None:
            return result
        np.copyto(out, result, casting="unsafe")
        return out
    if out is None:
        return xp.clip(rounded + out_zp, low, high)
    np.add(rounded, out_zp, out=rounded)
    np.maximum(rounded, low, out=rounded)
    np.minimum(rounded, high, out=out, casting="unsafe")
    return out


# v1: uint8 (uint8 -> uint8 or int16 output), and int16 activations x int8 weights
#     (int64 bias) which op_version stamps v1 too.
# v3: hybrid (float32 input, int8 weights, symmetric input quantization).
# v4: int8 (per tensor, or per-channel weights).
# v5: keep_num_dims, v6: no bias input, for any of the quantized kinds above.
# v7: int16 activations x int16 weights (MultiplyByQuantizedMultiplier, int64 accumulator).
# v9: hybrid with asymmetric_quantize_inputs.
# v11: int16 x int8 with an explicit quantized_bias_type (int32 or int64 bias).
# v10: int8 activations x int4 weights; v12: hybrid with per-channel weights; v13: int16
#      activations x int4 weights; v14: int2 weights (int8 or int16 activations). The
#      sub-byte weights are held one value an element and multiply as int8 weights do.
# Not here: v2 (shuffled 4x16 uint8 weights), v8 (sparse weights). Float32 nodes of
# v1/v5/v6 go to the float kernel. Like TFLite's kernel, this one chooses its arithmetic by
# the tensor types, so an under-stamped node (say int8 claiming v1) runs as LiteRT runs it.
@register(BuiltinOperator.FULLY_CONNECTED, 1, 1)
@register(BuiltinOperator.FULLY_CONNECTED, 3, 7)
@register(BuiltinOperator.FULLY_CONNECTED, 9, 14)
class FullyConnectedQuantized(CpuKernel):
    """FULLY_CONNECTED v1, v3-v7, v9-v14 on quantized weights (integer, sub-byte and hybrid)."""

    @classmethod
    def accepts(cls, context, node) -> bool:
        if len(node.inputs) < 2 or node.inputs[1] < 0:
            return False
        return context.tensors[node.inputs[1]].type in (T.UINT8, T.INT8, T.INT16, *SUB_BYTE_WEIGHTS)

    # -- prepare -----------------------------------------------------------------------------
    def prepare(self) -> None:
        self.require_num_inputs(2, 3)
        require_inputs(self, "input", "weights")
        x, weights, out = self.inputs[0], self.inputs[1], self.outputs[0]
        self.bias = self.inputs[2] if len(self.inputs) == 3 else None
        params = self.params
        if params.weights_format != FullyConnectedOptionsWeightsFormat.DEFAULT:
            raise self.unsupported(
                f"weights_format {FullyConnectedOptionsWeightsFormat(params.weights_format).name} "
                "(version 2's shuffled uint8 weights) is not supported; only DEFAULT"
            )
        self.require_types(weights, T.UINT8, T.INT8, T.INT16, *SUB_BYTE_WEIGHTS, role="weights")
        if weights.sparsity is not None:
            raise self.unsupported("sparse weights (version 8) are not supported; densify them first")
        if len(weights.shape) != 2:
            raise self.unsupported(f"weights must be 2-D [units, depth], got {list(weights.shape)}")
        if weights.quantization is None or not weights.quantization.is_quantized:
            raise self.unsupported(f"weights {weights.name!r} of type {weights.type_name} have no quantization")
        self.units, self.depth = (int(d) for d in weights.shape)
        if self.bias is not None and self.bias.num_elements != self.units:
            raise self.unsupported(f"bias has {self.bias.num_elements} elements, expected {self.units}")
        if self.depth == 0:
            batch = int(np.prod(x.shape[:-1], dtype=np.int64)) if len(x.shape) else 1
        else:
            if x.num_elements % self.depth:
                raise self.unsupported(
                    f"input of {x.num_elements} elements cannot be split into rows of depth {self.depth}"
                )
            batch = x.num_elements // self.depth
        self.batch = batch
        self.blas_work = batch * (self.depth + 1) * self.units  # (one matmul, or a dot per row)
        if params.keep_num_dims:
            if not x.shape or x.shape[-1] != self.depth:
                raise self.unsupported(
                    f"keep_num_dims: the last axis of the input {list(x.shape)} must be the depth {self.depth}"
                )
            out.resize((*x.shape[:-1], self.units))
        else:
            out.resize((batch, self.units))
        self.activation = ActivationFunctionType(params.fused_activation_function)
        if x.type == T.FLOAT32:
            self._prepare_hybrid(x, weights, out)
        else:
            self._prepare_integer(x, weights, out)
        remember_shapes(self)

    def _weights_per_channel(self, weights) -> np.ndarray | None:
        """The per-unit weight scales (float32[units]) of per-channel weights, else None."""
        q = weights.quantization
        if q.scale.size <= 1:
            return None
        axis = int(q.quantized_dimension)
        if not 0 <= axis < 2 or weights.shape[axis] != q.scale.size or q.scale.size != self.units:
            raise self.unsupported(
                f"weights {weights.name!r} have {q.scale.size} scales along quantized_dimension {axis}; "
                f"per-channel weights need one scale per unit ({self.units}) along axis 0"
            )
        return np.asarray(q.scale, np.float32)

    def _prepare_integer(self, x, weights, out) -> None:
        self.mode = "integer"
        weights_type = T.INT8 if weights.type in SUB_BYTE_WEIGHTS else weights.type  # (unpacked, as TFLite)
        signature = (x.type, weights_type, out.type)
        if signature not in INTEGER_SIGNATURES:
            names = ", ".join(f"{a.name} x {b.name} -> {c.name}" for a, b, c in sorted(INTEGER_SIGNATURES))
            raise self.unsupported(
                f"input {x.type_name}, weights {weights.type_name}, output {out.type_name}; "
                f"quantized FULLY_CONNECTED takes {names} (or float32 input for hybrid)"
            )
        if self.activation not in CLAMPING_ACTIVATIONS:
            raise self.unsupported(
                f"fused activation {self.activation.name}; supported: NONE, RELU, RELU_N1_TO_1, RELU6"
            )
        for tensor, role in ((x, "input"), (out, "output")):
            if tensor.quantization is None or not tensor.quantization.is_quantized:
                raise self.unsupported(f"{role} {tensor.name!r} of type {tensor.type_name} has no quantization")
        in_scale, in_zp = legacy_params(x)
        out_scale, out_zp = legacy_params(out)
        w_scales = self._weights_per_channel(weights)
        per_channel = w_scales is not None
        if per_channel and x.type not in (T.INT8, T.INT16):
            raise self.unsupported(f"per-channel weights need int8 or int16 input, got {x.type_name}")
        w_scale, w_zp = legacy_params(weights)
        if per_channel:
            w_zp = 0  # TFLite's per-channel kernels assume symmetric weights
        if x.type == T.INT16 and out.type == T.INT16 and (in_zp != 0 or out_zp != 0):
            raise self.unsupported("int16 input and output need zero points 0")

        # Bias and accumulator types, as TFLite's Eval picks its template arguments.
        bias_type = TensorType(int(self.params.quantized_bias_type or 0))
        if x.type == T.INT16 and weights_type == T.INT8:
            if bias_type not in (T.FLOAT32, T.INT32, T.INT64):
                raise self.unsupported(f"quantized_bias_type {bias_type.name}; expected INT32 or INT64")
            expected_bias = T.INT32 if bias_type == T.INT32 else T.INT64
            self.acc_is_int32 = expected_bias == T.INT32
        elif x.type == T.INT16:  # int16 weights: int64 accumulator, bias read per quantized_bias_type
            expected_bias = T.INT64 if bias_type == T.INT64 else T.INT32
            self.acc_is_int32 = False
        else:
            expected_bias = T.INT32
            self.acc_is_int32 = True
        if self.bias is not None:
            self.require_types(self.bias, expected_bias, role="bias")
        elif signature == (T.UINT8, T.UINT8, T.INT16):
            raise self.unsupported("uint8 input with int16 output needs a bias (TFLite reads it unconditionally)")
        if self.bias is not None and not per_channel:
            message = bias_scale_error(in_scale, w_scale, self.bias, out_scale)
            if message:
                raise self.unsupported(message)

        self.low, self.high = activation_range_quantized(self.activation, out_scale, out_zp, out.dtype)
        self.out_zp = out_zp
        self.in_zp = in_zp
        channel_scales = w_scales.astype(np.float64) if per_channel else np.float64(np.float32(w_scale))
        self.use_mbqm = weights_type == T.INT16
        if self.use_mbqm:
            if per_channel:
                reals = float(np.float32(in_scale)) * channel_scales / float(np.float32(out_scale))
                self.multiplier, self.shift = requantization_multipliers(reals, "input scale x weights scale / output scale")
            else:
                # GetQuantizedConvolutionMultipler: the product of the scales in float.
                product = float(np.float32(in_scale) * np.float32(w_scale))
                self.multiplier, self.shift = requantization_multiplier(product / float(np.float32(out_scale)), "input scale x weights scale / output scale")
        else:
            self.effective_scale = double_rescale_scale(in_scale, channel_scales, out_scale)

        # Exactness bound of the integer sums, and the weights as they enter the matmul.
        x_info = np.iinfo(x.dtype)
        max_x = input_abs_max(x.dtype, in_zp)
        self.w_zp = w_zp
        if weights.is_constant:
            centered = weights.data.astype(np.int64).reshape(self.units, self.depth) - w_zp
            row_bound = int(np.abs(centered).sum(axis=1).max(initial=0)) * max_x
        else:
            w_info = np.iinfo(weights.dtype)
            max_w = max(abs(int(w_info.min) - w_zp), abs(int(w_info.max) - w_zp))
            centered = None
            row_bound = self.depth * max_w * max_x
        self.float_type = exact_float_dtype(row_bound)
        if self.float_type is None:
            raise self.unsupported(f"the accumulators (up to {row_bound}) are too large to compute exactly")
        self.weights_t = None if centered is None else np.ascontiguousarray(centered.T.astype(self.float_type))
        bias_bound = 0
        if self.bias is not None:
            bias_bound = int(np.abs(self.bias.data.astype(np.int64)).max(initial=0)) if self.bias.is_constant else 2**63
        acc_bound = row_bound + bias_bound
        self.wrap_accumulator, self.check_int32_conversion = int32_hazards(
            acc_bound, 0.0 if self.use_mbqm else self.effective_scale, self.acc_is_int32
        )
        self.x_buffer = np.empty((self.batch, self.depth), self.float_type)
        self.acc_buffer = np.empty((self.batch, self.units), np.float64)
        self.round_scratch = np.empty((self.batch, self.units), np.float64)
        self.product_buffer = (
            self.acc_buffer if self.float_type == np.float64 else np.empty((self.batch, self.units), self.float_type)
        )
        self.fast_weights = self._fast_weights(centered, max_x_raw=max(abs(int(x_info.min)), abs(int(x_info.max))))

    def _fast_weights(self, centered: np.ndarray | None, max_x_raw: int) -> np.ndarray | None:
        """The float64 [depth + 1, units] matrix of the bound plan, or None when the plan
        does not apply (see ``_bind_fast_integer``): the centered weights over one row
        ``bias - x_zp * colsum(w - w_zp)``, so that ``[x, 1] @ it`` is the accumulator."""
        self.rounds_by_magic = False
        if self.use_mbqm or self.wrap_accumulator or self.check_int32_conversion or centered is None:
            return None
        if self.bias is not None and not self.bias.is_constant:
            return None
        if self.batch == 0 or self.units == 0 or self.depth == 0:
            return None
        offset = -self.in_zp * centered.sum(axis=1)  # int64, exact
        if self.bias is not None:
            offset += self.bias.data.astype(np.int64).reshape(-1)
        # The dot product is exact in float64 when the sum of the magnitudes of its
        # integer terms, raw inputs times weights plus the offset, stays below 2**53.
        bound = int((np.abs(centered).sum(axis=1) * max_x_raw + np.abs(offset)).max())
        if bound >= 2**53:
            return None
        self.rounds_by_magic = magic_rounding_matches(self.effective_scale, self.out_zp, self.low, self.high, bound)
        return np.ascontiguousarray(np.concatenate([centered.T, offset[None, :]]).astype(np.float64))

    def _prepare_hybrid(self, x, weights, out) -> None:
        self.mode = "hybrid"
        if weights.type != T.INT8:
            raise self.unsupported(f"hybrid (float32 input) needs int8 weights, got {weights.type_name}")
        self.require_types(out, T.FLOAT32, role="output")
        if self.bias is not None:
            self.require_types(self.bias, T.FLOAT32, role="bias")
        if self.activation not in (Act.NONE, Act.RELU, Act.RELU_N1_TO_1, Act.RELU6, Act.TANH, Act.SIGN_BIT):
            raise self.unsupported(f"fused activation {self.activation.name}")
        self.asymmetric = bool(self.params.asymmetric_quantize_inputs)
        w_scales = self._weights_per_channel(weights)
        self.per_channel_scale = w_scales  # float32[units] or None
        self.weights_scale = np.float32(legacy_params(weights)[0])
        if weights.is_constant:
            self._set_hybrid_weights(weights.data)

    def _set_hybrid_weights(self, data: np.ndarray) -> None:
        self.hybrid_matrix = HybridMatrix(data.reshape(self.units, self.depth), self.weights_scale, self.per_channel_scale)

    # -- invoke ------------------------------------------------------------------------------
    def bind(self) -> Callable[[], None]:
        check_shapes(self)
        x, out = self.inputs[0], self.outputs[0]
        if (
            self.mode == "integer"
            and self.fast_weights is not None
            and (x.allocation in (Allocation.ARENA, Allocation.CONSTANT, Allocation.PERSISTENT) or self.buffers_watched)
            and (out.allocation is Allocation.ARENA or self.buffers_watched)
            and x.data.flags.c_contiguous
            and out.data.flags.c_contiguous
        ):
            return _bind_fast_integer(self, x.data, out.data)
        return self.invoke

    def invoke(self) -> None:
        out = self.outputs[0].data
        if out.size == 0:
            return
        if self.depth == 0:
            out[...] = 0  # TFLite memsets the output
            return
        if self.mode == "hybrid":
            self._invoke_hybrid(out.reshape(self.batch, self.units))
        else:
            self._invoke_integer(out.reshape(self.batch, self.units))

    def _invoke_integer(self, out: np.ndarray) -> None:
        x = self.inputs[0].data.reshape(self.batch, self.depth)
        weights_t = self.weights_t
        if weights_t is None:
            matrix = self.inputs[1].data.reshape(self.units, self.depth).astype(self.float_type)
            weights_t = (matrix - self.w_zp).T
        np.subtract(x, self.in_zp, out=self.x_buffer, dtype=self.float_type)
        acc = np.matmul(self.x_buffer, weights_t, out=self.product_buffer)  # exact integers
        if acc is not self.acc_buffer:
            self.acc_buffer[...] = acc
        acc = self.acc_buffer
        if self.bias is not None:
            np.add(acc, self.bias.data.reshape(-1), out=acc)
        if self.wrap_accumulator:  # int32 accumulation wraps in TFLite's C
            acc[...] = wrap_int32(acc.astype(np.int64))
        if self.use_mbqm:
            scaled = multiply_by_quantized_multiplier_int64(acc.astype(np.int64), self.multiplier, self.shift)
            np.clip(scaled + self.out_zp, self.low, self.high, out=out, casting="unsafe")
            return
        rescale_double(
            acc, self.effective_scale, self.out_zp, self.low, self.high,
            check_int32_conversion=self.check_int32_conversion, out=out, scratch=self.round_scratch,
        )

    def _invoke_hybrid(self, out: np.ndarray) -> None:
        x = self.inputs[0].data.reshape(self.batch, self.depth)
        if not self.inputs[1].is_constant:
            self._set_hybrid_weights(self.inputs[1].data)
        if self.bias is not None:
            out[...] = self.bias.data.reshape(1, -1)
        else:
            out[...] = 0
        self.hybrid_matrix.accumulate(out, x, self.asymmetric)  # (TFLite skips an all-zero input)
        apply_float_activation(out, self.activation)


def magic_rounding_matches(scales, zero_point: int, low: int, high: int, bound: int) -> bool:
    """Whether ``clamp(double(acc) * s + (MAGIC + zero_point), MAGIC + low, MAGIC + high)
    - MAGIC`` equals TFLite's ``clamp(round(double(acc) * s) + zero_point, low, high)``
    for every integer ``|acc| <= bound`` and every ``s`` of ``scales``: proved at prepare.

    ``MAGIC = 1.5 * 2**52``: for ``|p| < 2**51`` the sum ``p + MAGIC + zero_point`` lies in
    [2**52, 2**53), where the doubles are the integers, so its one rounding is the
    nearest integer to the exact sum, ``MAGIC + zero_point + round(p)`` unless ``p`` is a
    half-integer (there ties go to even, not away from zero); clamping to integer bounds
    commutes with the rounding. So the two can differ only where ``p = double(acc) * s``
    is a half-integer ``H``, which puts ``acc`` within ``2**-53 * |H| / s`` of ``H / s``:
    for ``s >= 2**-30`` and ``|H| < 2**17``, within two of that quotient rounded. Both
    sides are computed on those few accumulators, for every half-integer ``H`` of the
    clamp range (less the zero point) widened by one and a half: beyond it both clamp."""
    scales = np.unique(np.asarray(scales, np.float64))
    if scales.size == 0 or not (scales[0] >= 2.0**-30 and scales[-1] < math.inf):
        return False
    if max(abs(low), abs(high), abs(zero_point)) >= 2**16:
        return False
    halves = np.arange(low - zero_point - 1.5, high - zero_point + 2.0)  # the half-integers H
    if scales.size * halves.size * 5 > RINT_PROOF_LIMIT:
        return False
    near = np.rint(halves[None, :] / scales[:, None])  # [scales, halves]
    candidates = np.clip(near[:, :, None] + np.arange(-2.0, 3.0), -bound, bound)  # reachable ones
    products = candidates * scales[:, None, None]
    fast = np.clip(products + (MAGIC + zero_point), MAGIC + low, MAGIC + high) - MAGIC
    reference = np.clip(round_half_away(products) + zero_point, low, high)
    return bool(np.array_equal(fast, reference))


def _bind_fast_integer(kernel: FullyConnectedQuantized, x: np.ndarray, out: np.ndarray) -> Callable[[], None]:
    """The integer FULLY_CONNECTED of one node on fixed input and output arrays, as a
    closure of six numpy calls (nine when ``magic_rounding_matches`` fails). Taken when
    the weights and bias are constant, the rescale is the double one, the int32
    accumulator cannot wrap and ``double(acc) * scale`` stays within int32
    (``kernel.fast_weights`` is set only then)."""
    shape = (kernel.batch, kernel.units)
    rows = x.reshape(kernel.batch, kernel.depth)
    result = out.reshape(shape)
    weights = kernel.fast_weights
    # The input as float64 with a last column of ones that picks up the offset row.
    with_ones = np.ones((kernel.batch, kernel.depth + 1), np.float64)
    columns = with_ones[:, : kernel.depth]
    acc = np.empty(shape, np.float64)
    # Full-shape operands: a ufunc on same-shape arrays is the cheapest call.
    scale = np.ascontiguousarray(np.broadcast_to(kernel.effective_scale, shape), np.float64)
    # (the array's own dot method: the same BLAS call as np.dot, without its dispatch)
    dot, multiply, add, clip = with_ones.dot, np.multiply, np.add, _clip

    little_endian = sys.byteorder == "little" and result.dtype.itemsize <= 4
    if kernel.rounds_by_magic and little_endian:
        offset = np.full(shape, MAGIC + kernel.out_zp, np.float64)
        low = np.full(shape, MAGIC + kernel.low, np.float64)
        high = np.full(shape, MAGIC + kernel.high, np.float64)
        # The low bytes of each double MAGIC + v: v in the output type (see MAGIC).
        low_bits = acc.view(result.dtype)[:, :: 8 // result.dtype.itemsize]

        def run_magic() -> None:
            columns[...] = rows
            dot(weights, acc)  # exact integers (bound checked at prepare)
            multiply(acc, scale, acc)
            add(acc, offset, acc)  # rounds to MAGIC + round(double(acc) * scale) + out_zp
            clip(acc, low, high, acc)
            result[...] = low_bits

        return run_magic

    scratch = np.empty(shape, np.float64)
    whole = np.empty(shape, np.int32)
    # Clamping before rounding to integers is the same as clamping after, the bounds
    # being integers (rounding is monotone); the zero point is added after rounding.
    low = np.full(shape, kernel.low - kernel.out_zp, np.float64)
    high = np.full(shape, kernel.high - kernel.out_zp, np.float64)
    half = np.full(shape, np.nextafter(0.5, 0.0))
    zero_point = np.full(shape, kernel.out_zp, np.int32)
    copysign = np.copysign

    def run() -> None:
        columns[...] = rows
        dot(weights, acc)  # exact integers (bound checked at prepare)
        multiply(acc, scale, acc)
        clip(acc, low, high, acc)
        # C's round (halves away from zero) of a double v is trunc(v + copysign(H, v))
        # with H = 0.5 - 2**-54, exactly, for every finite v; the int32 store truncates.
        copysign(half, acc, scratch)
        add(acc, scratch, scratch)
        whole[...] = scratch
        add(whole, zero_point, whole)
        result[...] = whole

    return run
