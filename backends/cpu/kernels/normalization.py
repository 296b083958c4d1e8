"""L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION on float32, along the last axis.

TFLite's reference kernels (``reference/l2normalization.h``, ``reference_ops.h``):

    l2:   y = x / max(sqrt(sum(x * x)), 1e-6)                       (per row of the last axis)
    lrn:  y[c] = x[c] * (bias + alpha * sum(x[k]^2 for c - radius <= k < c + radius)) ** -beta
                                                                     (4-D input, over channels)

Sums run in float32 in increasing index order. Note the LRN window: TFLite's reference
kernel stops at ``c + radius - 1`` (``end = min(depth, c + range)``), one channel short of
TensorFlow's symmetric window ``[c - radius, c + radius]``, which LiteRT's optimized kernel
(its default resolver) uses. This kernel follows the reference, the project's oracle. Versions: L2_NORMALIZATION v1 is float32
(and quantized uint8, not here), v2 int8 (``QuantizedL2Normalization``: TFLite's
``reference_integer_ops::L2Normalization``, below); LOCAL_RESPONSE_NORMALIZATION has only
v1 (float32).

int8 L2_NORMALIZATION, per row of the last axis, with ``d = q - z_in``::

    (m, e) = GetInvSqrtQuantizedMultiplierExp(sum(d * d), -1)        (int32 sum)
    out    = clamp(MultiplyByQuantizedMultiplier(d, m, e + 7), -128, 127)

the output's scale 1/128 and zero point 0 (TFLite's Prepare requires them).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels import _fixed_point as fp
from backends.cpu.quantization import is_quantized, multiply_by_quantized_multiplier
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType
from schema.params import LocalResponseNormalizationParams

L2_EPSILON = np.float32(1e-6)


def _require_float32(kernel: CpuKernel) -> None:
    x = kernel.inputs[0]
    if x is not None and x.type in (TensorType.UINT8, TensorType.INT8, TensorType.INT16):
        raise kernel.unsupported(
            f"input {x.name!r} has type {x.type_name}: quantized inputs are not implemented yet; "
            "this kernel supports FLOAT32"
        )
    kernel.require_types(x, TensorType.FLOAT32)
    kernel.require_types(kernel.outputs[0], TensorType.FLOAT32, role="output")


@register(BuiltinOperator.L2_NORMALIZATION, 1, 2)  # v1: float32 (and quantized uint8, not here); v2 int8: below
class L2Normalization(CpuKernel):
    """L2_NORMALIZATION v1-v2 on float32."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        _require_float32(self)
        x = self.inputs[0]
        if len(x.shape) < 1:
            raise self.unsupported("the input must have at least one dimension")
        activation = self.params.fused_activation_function if self.params is not None else ActivationFunctionType.NONE
        if activation != ActivationFunctionType.NONE:
            # TFLite's Prepare rejects it too (TF_LITE_ENSURE_EQ(activation, kTfLiteActNone)).
            raise self.unsupported(f"fused activation {ActivationFunctionType(activation).name}: only NONE is supported")
        self.outputs[0].resize(x.shape)
        self.norm = np.empty((*x.shape[:-1], 1), dtype=np.float32)

    def invoke(self) -> None:
        x, y = self.inputs[0].data, self.outputs[0].data
        if y.size == 0:
            return
        np.multiply(x, x, out=y)
        np.add.reduce(y, axis=-1, keepdims=True, out=self.norm)
        np.sqrt(self.norm, out=self.norm)
        np.maximum(self.norm, L2_EPSILON, out=self.norm)
        np.divide(x, self.norm, out=y)


@register(BuiltinOperator.L2_NORMALIZATION, 1, 2)  # v2: int8 (quantized)
class QuantizedL2Normalization(CpuKernel):
    """L2_NORMALIZATION v2: int8 in, int8 out at scale 1/128 (see the module's docstring)."""

    OUTPUT_SHIFT = 7  # TFLite's kOutputScale: the output is in 1/128 steps

    @classmethod
    def accepts(cls, context, node) -> bool:
        first = node.inputs[0] if len(node.inputs) else -1
        return first >= 0 and context.tensors[first].type == TensorType.INT8

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x, out = self.inputs[0], self.outputs[0]
        self.require_types(out, TensorType.INT8, role="output")
        for tensor, role in ((x, "input"), (out, "output")):
            if not is_quantized(tensor) or tensor.quantization.is_per_channel:
                raise self.unsupported(f"the {role} {tensor.name!r} needs one scale and zero point")
        scale, zero_point = float(out.quantization.scale[0]), int(out.quantization.zero_point[0])
        if np.float32(scale) != np.float32(1 / 128) or zero_point != 0:
            raise self.unsupported(f"the output needs scale 1/128 and zero point 0 (got {scale!r}, {zero_point})")
        if len(x.shape) < 1:
            raise self.unsupported("the input must have at least one dimension")
        activation = self.params.fused_activation_function if self.params is not None else ActivationFunctionType.NONE
        if activation != ActivationFunctionType.NONE:
            raise self.unsupported(f"fused activation {ActivationFunctionType(activation).name}: only NONE is supported")
        self.zero_point = int(x.quantization.zero_point[0])
        out.resize(x.shape)

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        if out.size == 0:
            return
        rows = x.reshape(-1, x.shape[-1]).astype(np.int64) - self.zero_point
        sums = fp.wrap32(np.einsum("ij,ij->i", rows, rows))
        pairs = [fp.inv_sqrt_quantized_multiplier(int(total), -1) for total in sums.tolist()]
        multipliers = np.array([m for m, _ in pairs], np.int64)
        shifts = np.array([e for _, e in pairs], np.int64) + self.OUTPUT_SHIFT
        # per row: the rows as the last axis of the transposed block
        scaled = multiply_by_quantized_multiplier(rows.T, multipliers, shifts).T
        out[...] = np.clip(scaled, -128, 127).reshape(out.shape)


@register(BuiltinOperator.LOCAL_RESPONSE_NORMALIZATION, 1, 1)  # v1: float32 (the only version)
class LocalResponseNormalization(CpuKernel):
    """LOCAL_RESPONSE_NORMALIZATION v1 (float32, 4-D)."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        _require_float32(self)
        x = self.inputs[0]
        if len(x.shape) != 4:
            raise self.unsupported(f"the input must be 4-D, it has shape {list(x.shape)}")
        params = self.params if self.params is not None else LocalResponseNormalizationParams()
        self.bias = np.float32(params.bias)
        self.alpha = np.float32(params.alpha)
        self.neg_beta = np.float32(-params.beta)
        depth = x.shape[-1]
        # The window of channel c is [c - r, c + r); offsets beyond the depth only ever
        # meet the zero padding, so r is capped at the depth.
        self.radius = max(0, min(int(params.radius), depth))
        self.outputs[0].resize(x.shape)
        r = self.radius
        self.squares = np.zeros((*x.shape[:-1], depth + 2 * r), dtype=np.float32)  # zero-padded channels
        self.accum = np.empty(x.shape, dtype=np.float32)

    def invoke(self) -> None:
        x, y = self.inputs[0].data, self.outputs[0].data
        if y.size == 0:
            return
        r, depth = self.radius, x.shape[-1]
        squares, accum = self.squares, self.accum
        np.multiply(x, x, out=squares[..., r : r + depth])
        # Add the window's taps (channels c - r .. c + r - 1) in increasing channel order,
        # TFLite's order: the padded zeros outside the tensor add nothing.
        accum[...] = squares[..., 0:depth] if r else 0
        for k in range(1, 2 * r):
            np.add(accum, squares[..., k : k + depth], out=accum)
        np.multiply(accum, self.alpha, out=accum)
        np.add(accum, self.bias, out=accum)
        np.power(accum, self.neg_beta, out=accum)
        np.multiply(x, accum, out=y)
