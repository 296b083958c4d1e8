"""TRANSPOSE_CONV on quantized tensors, bit-exact with TFLite's reference kernels.

Inputs: ``output_shape`` (int32 ``[4]``), weights ``[O, KH, KW, I]``, input
``[N, H, W, I]`` and, from version 3, an optional bias ``[O]``. Every input pixel
scatters its weighted filter into the output (see ``transpose_conv.py``):
``acc[n, y*sh + ky - pad_top, x*sw + kx - pad_left, o] += (in - z_in) * (w - z_w)``,
then ``acc += bias``. The arithmetic, chosen (as TFLite does) by the tensor types:

- uint8 (per tensor): int32 accumulators, ``out = clamp(MultiplyByQuantized
  Multiplier(acc, m, s) + z_out)``, one multiplier from ``float(s_in * s_w) / s_out``
  (``reference_ops::TransposeConv``);
- int8 (weights per channel along dimension 0, or per tensor; their zero points are
  ignored, as TFLite does): one multiplier per output channel from
  ``double(s_in) * s_w[o] / s_out`` (``reference_integer_ops::TransposeConv``);
- int16 activations x int8 weights (zero points 0): int64 accumulators and bias with
  the int64 ``MultiplyByQuantizedMultiplier``; with ``quantized_bias_type`` INT32,
  int32 ones with the int32 rescaling;
- hybrid (float32 input and output, int8 weights): each batch quantized
  asymmetrically on the fly (scale ``s_b``, offset ``o_b``), ``acc = sum w *
  (q - o_b)``, ``out = float(acc) * (s_b * s_w[o]) + bias``
  (``reference_ops::HybridTransposeConv``); this one agrees with LiteRT to within
  float rounding (about 1e-7 relative), not bit for bit: the order of its float
  operations is not reproduced.

The fused activation (version 4) clamps in the quantized domain (a float clamp for
the hybrid kernel).

How: as the float kernel: one BLAS matmul of the input (minus its zero point,
converted to float) by the weights re-laid out at prepare as ``[I, KH*KW*O]`` gives
every pixel's patch, a loop over the KH*KW taps adds them into a zeroed canvas, the
canvas is cropped. Every partial sum is an integer below ``sum |w| * max |x - z|``
of its output channel, so float32 is exact when that is below 2**24, else float64.
Then the requantization (once the arena is allocated, ``bind``: the float64
``FloatOutputStage``).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from backends.cpu.kernel import register
from backends.cpu.kernels._quantized_window import (
    ConvQuantization,
    FloatOutputStage,
    accumulator_dtype,
    asymmetric_quantize,
    select_conv_arithmetic,
    zero_point_of,
)
from backends.cpu.kernels._window import activation_bounds, check_shapes, clamp
from backends.cpu.kernels.transpose_conv import OutputShapeFromInput, TransposeConv
from backends.cpu.quantization import is_quantized
from schema.enums import BuiltinOperator, TensorType

T = TensorType


def required_version(x, weights) -> int | None:
    """The least TRANSPOSE_CONV version for a quantized or hybrid node's types (TFLite's
    ``GetBuiltinOperatorVersion``: int8 weights are version 2), or None for other nodes.
    (The bias, version 3, and the fused activation, version 4, are not checked, as in
    the float kernel.)"""
    if is_quantized(x) or (x.type == T.FLOAT32 and weights.type == T.INT8):
        return 2 if weights.type == T.INT8 else 1
    return None


# v1: uint8 (per tensor) here; float32 in transpose_conv.py.
# v2: int8 weights: int8 (per channel or per tensor), int16 x int8, and hybrid
#     (float32 input with int8 weights).
# v3: an optional bias as 4th input (any of the above types).
# v4: fused activation function.
# v5: int16 x int8 with an explicit quantized_bias_type (INT32 or INT64 bias);
#     TFLite's rule tests input 0 (the output shape) for int16, so files written by
#     its rules never carry v5; the kernel runs it all the same.
@register(BuiltinOperator.TRANSPOSE_CONV, 1, 5)
class QuantizedTransposeConv(OutputShapeFromInput):
    """TRANSPOSE_CONV v1-v5 on uint8, int8, int16x8 and hybrid (float x int8) tensors."""

    filter_out_channels = 0  # (weights [O, KH, KW, I])

    @classmethod
    def accepts(cls, context, node) -> bool:
        """Quantized and hybrid nodes (chosen by their types, as TFLite's kernel does)."""
        if len(node.inputs) < 3 or node.inputs[1] < 0 or node.inputs[2] < 0:
            return False
        weights, x = context.tensors[node.inputs[1]], context.tensors[node.inputs[2]]
        required = required_version(x, weights)
        return required is not None

    def prepare(self) -> None:
        self.require_num_inputs(3, 4)
        weights, x = self.inputs[1], self.inputs[2]
        bias = self.inputs[3] if len(self.inputs) == 4 else None
        output = self.outputs[0]
        self.require_output_shape_input(4)
        self.check_types(x, weights, bias, output)
        if len(x.shape) != 4 or len(weights.shape) != 4:
            raise self.unsupported(
                f"input and weights must be 4-D (NHWC, OHWI), got {list(x.shape)} and {list(weights.shape)}"
            )
        if x.shape[3] != weights.shape[3]:
            raise self.unsupported(
                f"input channels ({x.shape[3]}) differ from the weights' in-channels ({weights.shape[3]})"
            )
        out_channels = int(weights.shape[0])
        if bias is not None and bias.num_elements != out_channels:
            raise self.unsupported(f"bias has {bias.num_elements} elements, expected {out_channels}")
        q = weights.quantization
        if q.scale.size not in (1, out_channels):
            raise self.unsupported(f"the weights have {q.scale.size} scales; expected 1 or {out_channels}")
        if q.scale.size > 1:
            if self.mode == "uint8":
                raise self.unsupported("uint8 weights must be quantized per tensor (TFLite: per channel is int8/int16)")
            if int(q.quantized_dimension) != 0:
                raise self.unsupported(
                    f"per-channel weights must be quantized along dimension 0, not {q.quantized_dimension}"
                )
        params = self.params
        if params.stride_h <= 0 or params.stride_w <= 0:
            raise self.unsupported(f"strides must be positive, got {[params.stride_h, params.stride_w]}")
        self.out_channels = out_channels

        self.weight_zero_point = zero_point_of(weights) if self.mode == "uint8" else 0
        if self.mode == "hybrid":
            self.input_zero_point, input_abs_max = 0, 255  # q - offset
        else:
            self.input_zero_point = zero_point_of(x)
            info = np.iinfo(x.dtype)
            input_abs_max = max(abs(int(info.min) - self.input_zero_point), abs(int(info.max) - self.input_zero_point))
        if weights.is_constant:
            abs_sums = np.abs(self.centered_weights(weights.data)).reshape(out_channels, -1).sum(axis=1)
        else:
            abs_sums = np.full(out_channels, int(np.prod(weights.shape[1:])) * 255, np.int64)
        try:
            self.float_type = accumulator_dtype(abs_sums, input_abs_max)
        except ValueError as error:
            raise self.unsupported(str(error)) from None
        self.inputs_float = np.empty((int(np.prod(x.shape[:3])), int(x.shape[3])), self.float_type)

        self.weight_matrix = self.patches_matrix(weights.data) if weights.is_constant else None
        self.bias_values = self.read_bias() if bias is None or bias.is_constant else None
        if self.mode == "hybrid":
            self.bounds = activation_bounds(params.fused_activation_function)
            scales = np.asarray(q.scale, np.float32)
            self.weight_scales = np.broadcast_to(scales, (out_channels,)).astype(np.float32)
        else:
            self.quantization = ConvQuantization.of(
                x, weights, output, out_channels, params.fused_activation_function, wide=self.wide
            )
            if self.bias_values is not None:
                self.quantization.accumulator_bound = int(
                    np.max(abs_sums * input_abs_max + np.abs(self.bias_values))
                )

        self.plan_output()

    def check_types(self, x, weights, bias, output) -> None:
        """Pick the arithmetic from the types (as TFLite does) and check the rest."""
        self.mode, self.wide = select_conv_arithmetic(
            self, x, weights, bias, output, filter_role="weights", filter_zero_points_must_be_zero=False
        )

    def centered_weights(self, weights: np.ndarray) -> np.ndarray:
        return weights.astype(np.int64) - self.weight_zero_point

    def patches_matrix(self, weights: np.ndarray) -> np.ndarray:
        """``[O, KH, KW, I]`` -> ``[I, KH*KW*O]`` (float): an input pixel times it is its patch."""
        centered = self.centered_weights(weights)
        out_channels, kh, kw, in_channels = centered.shape
        matrix = centered.transpose(3, 1, 2, 0).reshape(in_channels, kh * kw * out_channels)
        return np.ascontiguousarray(matrix, dtype=self.float_type)

    def read_bias(self) -> np.ndarray:
        bias = self.inputs[3] if len(self.inputs) == 4 else None
        dtype = np.float32 if self.mode == "hybrid" else np.int64
        if bias is None:
            return np.zeros(self.out_channels, dtype)
        return bias.data.reshape(-1).astype(dtype)

    plan = TransposeConv.plan  # padding, canvas and patch buffers: the float kernel's, in float_type

    def scatter(self, values: np.ndarray) -> np.ndarray:
        """``sum w * v`` scattered to every output position: ``[N, OH, OW, O]`` view
        of the canvas (exact integers in a float type)."""
        weight_matrix = self.weight_matrix
        if weight_matrix is None:
            weight_matrix = self.patches_matrix(self.inputs[1].data)
        batch, in_h, in_w, kh, kw, out_channels = self.patches.shape
        np.matmul(values, weight_matrix, out=self.patches.reshape(batch * in_h * in_w, -1))
        canvas = self.canvas
        canvas.fill(0)
        sh, sw = self.params.stride_h, self.params.stride_w
        for ky in range(kh):
            for kx in range(kw):
                target = canvas[:, ky : ky + (in_h - 1) * sh + 1 : sh, kx : kx + (in_w - 1) * sw + 1 : sw, :]
                np.add(target, self.patches[:, :, :, ky, kx, :], out=target)
        _, out_h, out_w, _ = self.plan_shape
        return canvas[:, self.pad_top : self.pad_top + out_h, self.pad_left : self.pad_left + out_w, :]

    def bind(self) -> Callable[[], None]:
        """Once the arena is allocated: for a quantized node with a constant output
        shape, weights and bias, a closure over this allocation's input and output
        (the same scatter, then the float64 ``FloatOutputStage``); else ``invoke``."""
        check_shapes(self)
        x, output = self.inputs[2], self.outputs[0]
        if (
            self.mode == "hybrid" or self.plan_shape is None or output.is_dynamic or x.is_dynamic
            or self.weight_matrix is None or self.bias_values is None
        ):
            return self.invoke
        stage = FloatOutputStage.make(self.quantization, self.bias_values, output.data)
        if stage is None:
            return self.invoke
        self.output_stage = stage  # (which path: tests and profiling read it)
        values, weights, float_type = self.inputs_float, self.weight_matrix, self.float_type
        zero = np.array(self.input_zero_point, float_type)  # a 0-d operand: cheaper than a scalar
        source = x.data.reshape(values.shape)
        batch, in_h, in_w, kh, kw, _ = self.patches.shape
        patches, canvas = self.patches.reshape(batch * in_h * in_w, -1), self.canvas
        sh, sw = self.params.stride_h, self.params.stride_w
        taps = [  # (the canvas positions tap (ky, kx) of every pixel adds to, its patches)
            (
                canvas[:, ky : ky + (in_h - 1) * sh + 1 : sh, kx : kx + (in_w - 1) * sw + 1 : sw, :],
                self.patches[:, :, :, ky, kx, :],
            )
            for ky in range(kh)
            for kx in range(kw)
        ]
        _, out_h, out_w, _ = self.plan_shape
        top, left = self.pad_top, self.pad_left
        requantize = stage.from_sums(canvas[:, top : top + out_h, left : left + out_w, :])
        subtract, matmul, add = np.subtract, np.matmul, np.add

        def run() -> None:
            subtract(source, zero, out=values, dtype=float_type)
            matmul(values, weights, out=patches)
            canvas.fill(0)
            for target, patch in taps:
                add(target, patch, out=target)
            requantize()

        return run

    def invoke(self) -> None:
        self.output_at_invoke()
        x, out = self.inputs[2].data, self.outputs[0].data
        values = self.inputs_float
        bias = self.bias_values if self.bias_values is not None else self.read_bias()
        if self.mode == "hybrid":
            batch = x.shape[0]
            quantized, scaling, offsets = asymmetric_quantize(x.reshape(batch, -1))
            quantized -= offsets.astype(np.float32)[:, None]
            np.copyto(values, quantized.reshape(values.shape))
            result = self.scatter(values).astype(np.float32)  # float(acc)
            factors = (scaling[:, None] * self.weight_scales[None, :]).astype(np.float32)  # [N, O]
            result *= factors[:, None, None, :]
            result += bias
            clamp(result, self.bounds)
            out[...] = result
            return
        np.subtract(x.reshape(values.shape), self.input_zero_point, out=values, dtype=self.float_type)
        self.quantization.requantize(self.scatter(values), bias, out)
