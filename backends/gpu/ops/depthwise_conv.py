"""DEPTHWISE_CONV_2D on the GPU: float32 (``DepthwiseConv2D``) and int8 / uint8
(``QuantizedDepthwiseConv2D``, bit-exact with TFLite's reference kernels).

Semantics are the CPU kernels' (``backends/cpu/kernels/depthwise_conv2d.py``,
``depthwise_conv2d_quantized.py``): input ``[N, H, W, C]``, filter ``[1, KH, KW, C*M]``
(the depth multiplier M from the shapes), output channel ``o = c*M + m`` reading input
channel ``c``; strides, dilation, SAME/VALID padding (positions outside the input
contribute nothing), optional bias;

- float32 (versions 1 and 2, v2 adds dilation): the fused activation as a clamp (TANH
  not applied, as TFLite's); float16 storage as ``conv.py`` describes (halves read and
  written, float32 math, the clamp over [-FLT_MAX, FLT_MAX] for NONE);
- uint8 (versions 1 and 2, per tensor; v2 is a dilated uint8 node):
  ``acc = sum (w - z_w) * (x - z_in) + bias``,
  ``out = clamp(MultiplyByQuantizedMultiplier(acc, m, s) + z_out)``;
- int8 (version 3, filter per channel along dimension 3 or per tensor, zero points 0):
  the same with one multiplier per output channel.

The quantized multipliers, shifts, zero points and the quantized clamp are the CPU
kernels' own (``ConvQuantization.of``, through ``conv.QuantizedConvOp``, shared with the
quantized CONV_2D); the float op shares ``conv.WeightsOp`` with CONV_2D (the bias, and
what ``backends/gpu/fusion.py`` folds in).

How (float): one of ``DEPTHWISE_TACTICS`` (``cuda/depthwise.py``), chosen on the device at
prepare (``backends/gpu/tactics.py``): the direct kernel ``cuda/depthwise_conv2d.cu`` (its
fused entry point once ``fusion.py`` folded nodes in) or ``cuda/depthwise_conv2d_tiled.cu``
(each block's input patch staged in shared memory), on TFLite's filter layout, bias and
activation fused; in host emulation the kernel's numpy twin, as one launch.

How (quantized): one launch of ``cuda/depthwise_conv2d_int8.cu`` per node: the int32
accumulation with the zero points, the bias, ``MultiplyByQuantizedMultiplier`` per output
channel (``cuda/fixed_point.cuh``), the clamp and the store; the filter stays in TFLite's
layout and type. The kernel's accumulator is int32 as TFLite's; the node is refused when
``sum |w - z_w| * max |x - z_in| + |bias|`` of a channel could leave int32.

Versions claimed: DEPTHWISE_CONV_2D 1-2 float32 (``DepthwiseConv2D``), 1-2 uint8 and 3
int8 (``QuantizedDepthwiseConv2D``). Hybrid (v4, v6), int16 (v5) and int4 (v7) nodes are
not claimed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from backends.cpu.kernels._quantized_window import zero_point_of
from backends.cpu.kernels._window import WindowGeometry
from backends.gpu.ops.base import fused_activation_reason
from backends.gpu.ops.conv import (
    QuantizedConvOp,
    WeightsOp,
    accumulator_reason,
    conv_bias,
    conv_inputs_reason,
    quantized_conv_inputs_reason,
    window_bias_activation_reason,
)
from backends.gpu.ops.quantized_base import per_tensor
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


def depthwise_filter_reason(x, w) -> str | None:
    """Why ``w`` is not a depthwise filter of the 4-D input ``x``: TFLite's ``[1, KH, KW,
    C*M]``, its channels a multiple of the input's (the depth multiplier M)."""
    if w.shape[0] != 1:
        return f"filter must be [1, KH, KW, C*M], got {list(w.shape)}"
    out_channels, channels = w.shape[3], x.shape[3]
    if channels <= 0 or out_channels % channels:
        return f"filter channels ({out_channels}) must be a multiple of the input channels ({channels})"
    return None


class DepthwiseConv2D(WeightsOp):
    """DEPTHWISE_CONV_2D versions 1-2 (float32; depth multiplier from the shapes as
    TFLite, strides, SAME/VALID, bias, fused activation; v2 adds dilation)."""

    ops = {B.DEPTHWISE_CONV_2D: 2}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = conv_inputs_reason(node, tensors)
        if reason:
            return reason
        x, w = tensors[node.inputs[0]], tensors[node.inputs[1]]
        reason = depthwise_filter_reason(x, w)
        if reason:
            return reason
        _, kh, kw, out_channels = w.shape
        return window_bias_activation_reason(node, tensors, (kh, kw), out_channels)

    def prepare(self) -> None:
        x, filters = self.inputs[0], self.inputs[1]
        params = self.params
        _, kh, kw, out_channels = filters.shape
        self.multiplier = out_channels // x.shape[3]
        # The geometry of the input with each channel repeated M times.
        self.geometry = WindowGeometry.of(
            (*x.shape[:3], out_channels), (kh, kw), params.padding, (params.stride_h, params.stride_w),
            (params.dilation_h_factor, params.dilation_w_factor),
        )
        self.prepared_inputs.add(1)
        self.filter = self.upload(np.asarray(filters.data))  # TFLite's [1, KH, KW, C*M]
        self.prepare_bias(self.storage)
        self.kernel = None  # chosen by finish_prepare, once fusion.py folded its nodes in

    def finish_prepare(self) -> None:
        """The kernel: the row of ``DEPTHWISE_TACTICS`` that wins on this node's shapes (the
        direct kernel, its fused entry point once ``fusion.py`` folded nodes into this one, the
        shared-memory tiles)."""
        from backends.gpu.cuda.depthwise import DEPTHWISE_TACTICS, DepthwiseProblem, depthwise_geometry

        params = self.params
        top, bottom, left, right = self.pre_padding
        batch, height, width, channels = self.inputs[0].shape
        x_shape = (batch, height - top - bottom, width - left - right, channels)  # a folded PAD's input
        w_shape = tuple(self.inputs[1].shape)
        arguments = {
            "stride": (params.stride_h, params.stride_w), "dilation": (params.dilation_h_factor, params.dilation_w_factor),
            "padding": params.padding, "activation": params.fused_activation_function, "storage": self.storage,
            "epilogue": self.epilogue, "pre_padding": self.pre_padding,
        }
        geometry = depthwise_geometry(x_shape, w_shape, arguments["stride"], arguments["dilation"], params.padding, self.pre_padding)
        fused = self.epilogue is not None or any(self.pre_padding)
        problem = DepthwiseProblem(geometry, self.storage.name, fused, self.epilogue, self.device.resident_threads)
        checked, timed = self.candidate_arrays(x_shape, w_shape, w_shape[1:3], w_shape[3])
        self.kernel = self.choose_kernel("DEPTHWISE_CONV_2D", DEPTHWISE_TACTICS, problem, arguments, checked, _call_depthwise, timed)

    def run(self, args):
        if self.kernel is None:
            self.finish_prepare()
        return [self.kernel(args[0], self.filter, self.bias_value(args), **self.epilogue_arrays(args))]


def _call_depthwise(kernel: Any, arrays: dict[str, Any]) -> Any:
    """One launch of a depthwise candidate on its arrays (``WeightsOp.window_arrays``):
    the plain entry point takes no residual nor alpha."""
    extra = {k: arrays[k] for k in ("residual", "alpha") if arrays[k] is not None}
    return kernel(arrays["x"], arrays["w"], arrays["b"], **extra)


def _centered_filter(filters) -> np.ndarray:
    """``[KH, KW, C*M]`` int64: the filter as the kernels multiply it, ``w - z_w`` (uint8;
    int8 filters have zero points 0)."""
    z_w = zero_point_of(filters) if filters.type == T.UINT8 else 0
    return np.asarray(filters.data, np.int64)[0] - z_w


class QuantizedDepthwiseConv2D(QuantizedConvOp):
    """DEPTHWISE_CONV_2D v1, v2 (uint8, v2 dilated) and v3 (int8, per-channel or
    per-tensor filter): depth multiplier, strides, dilation, SAME/VALID, bias, fused
    activation as the quantized clamp."""

    ops = {B.DEPTHWISE_CONV_2D: 3}  # v1/v2 uint8 (float32 v1/v2: DepthwiseConv2D), v3 int8
    data_inputs = (0, 1)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = quantized_conv_inputs_reason(node, tensors) or depthwise_filter_reason(
            tensors[node.inputs[0]], tensors[node.inputs[1]]
        )
        if reason:
            return reason
        x, w, out = tensors[node.inputs[0]], tensors[node.inputs[1]], tensors[node.outputs[0]]
        _, kh, kw, out_channels = w.shape
        if not per_tensor(x) or not per_tensor(out):
            return "the input and the output must be quantized per tensor"
        reason = cls.filter_quantization_reason(x, w, out_channels, 3) or cls.bias_and_window_reason(
            node, tensors, out_channels, (kh, kw)
        )
        if reason:
            return reason
        bias, params = conv_bias(node, tensors), node.params
        abs_sums = np.abs(_centered_filter(w)).reshape(-1, out_channels).sum(axis=0)
        return (
            accumulator_reason(abs_sums, x, bias)
            or fused_activation_reason(params)
            or cls.output_stage_reason(node, tensors, out_channels)
        )

    def prepare(self) -> None:
        from backends.gpu.cuda.conv_int8 import DepthwiseConv2DInt8Cuda

        filters = self.inputs[1]
        params = self.params
        self.prepare_output_stage(filters, filters.shape[3])
        self.filter = self.upload(np.asarray(filters.data), filters.dtype)  # TFLite's [1, KH, KW, C*M]
        self.prepared_inputs.add(1)
        self.kernel = DepthwiseConv2DInt8Cuda(
            (params.stride_h, params.stride_w), (params.dilation_h_factor, params.dilation_w_factor), params.padding,
            self.stage, **self.device.launcher_arguments("depthwise_conv2d_int8.cu"),
        )

    def run(self, args):
        return [self.kernel(args[0], self.filter, self.bias, self.multipliers, self.shifts)]
