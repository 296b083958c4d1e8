"""TRANSPOSE_CONV on float32: the gradient of CONV_2D with respect to its input.

Inputs: ``output_shape`` (int32 ``[4]``: N, OH, OW, O), weights ``[O, KH, KW, I]``,
input ``[N, H, W, I]`` and, from version 3, an optional bias ``[O]``. Every input
pixel scatters its weighted filter into the output (TFLite's reference
``TransposeConv``):

    out[n, y*sh + ky - pad_top, x*sw + kx - pad_left, o] += in[n, y, x, i] * w[o, ky, kx, i]

(contributions falling outside the output are dropped), then the bias is added and,
from version 4, the fused activation applied. The padding is the one CONV_2D would
use from an ``OH x OW`` input with this filter and strides (``compute_padding``), and
that CONV_2D must give back ``H x W`` (LiteRT checks this too).

How: one BLAS matmul gives every pixel's scattered patch, ``[N, H, W, KH, KW, O]``
(the weights re-laid out once as ``[I, KH*KW*O]``); a loop over the KH*KW taps adds
each tap's patches into a zeroed scratch canvas with strided slices (col2im), and the
output is the canvas cropped by the padding.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.common import compute_padding
from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._window import activation_bounds, check_shapes, clamp, remember_shapes
from schema.enums import BuiltinOperator, TensorType


class OutputShapeFromInput(CpuKernel):
    """A kernel whose output shape is its input 0 (TRANSPOSE_CONV, CONV_3D_TRANSPOSE): int32
    ``[rank]`` values, positive, input 2's batch first and the filter's (input 1) output
    channels, along its axis ``filter_out_channels``, last. The subclass plans its buffers
    for one output shape in ``plan(shape)`` (which sets ``plan_shape``): at prepare when
    input 0 is constant, else at invoke (the output dynamic), again when the shape changes."""

    filter_out_channels: int  # the filter's axis of output channels

    def require_output_shape_input(self, rank: int) -> None:
        shape_tensor = self.inputs[0]
        self.require_types(shape_tensor, TensorType.INT32, role="output_shape")
        if len(shape_tensor.shape) != 1 or shape_tensor.num_elements != rank:
            raise self.unsupported(
                f"output_shape must be a 1-D tensor of {rank} values, got shape {list(shape_tensor.shape)}"
            )

    def plan_output(self) -> None:
        """The end of ``prepare``: plan for a constant output shape and size the output,
        or make the output dynamic; then remember the shapes planned for (``bind``)."""
        self.plan_shape = None
        if self.inputs[0].is_constant:
            self.plan(self.read_output_shape())
            self.outputs[0].resize(self.plan_shape)
        else:
            self.outputs[0].set_dynamic()  # the shape is only known at invoke
        remember_shapes(self)

    def bind(self):
        """``invoke``, once the node's tensors still have the shapes it was prepared for
        (``_window.check_shapes``: the buffers are planned for them)."""
        check_shapes(self)
        return super().bind()

    def read_output_shape(self) -> tuple[int, ...]:
        shape = tuple(int(d) for d in self.inputs[0].data)
        batch, channels = self.inputs[2].shape[0], self.inputs[1].shape[self.filter_out_channels]
        if any(d <= 0 for d in shape) or shape[0] != batch or shape[-1] != channels:
            raise self.unsupported(
                f"output_shape {list(shape)} must be positive, with batch {batch} and the filter's {channels} output channels"
            )
        return shape

    def output_at_invoke(self) -> None:
        """The start of ``invoke``: a dynamic output (or one never planned) gets the shape
        input 0 holds now, planned again when it changed."""
        if self.plan_shape is None or self.outputs[0].is_dynamic:
            shape = self.read_output_shape()
            if shape != self.plan_shape:
                self.plan(shape)
            self.outputs[0].set_data(np.empty(shape, self.outputs[0].dtype))


# v1: float32 (output_shape, weights, input).
# v3: an optional bias as 4th input.
# v4: fused activation function (TransposeConvOptions.fused_activation_function).
# v2 (int8 weights) and v5 (int16 activations with quantized_bias_type) are quantized: not here.
@register(BuiltinOperator.TRANSPOSE_CONV, 1, 1)
@register(BuiltinOperator.TRANSPOSE_CONV, 3, 4)
class TransposeConv(OutputShapeFromInput):
    """TRANSPOSE_CONV versions 1, 3 and 4 (float32; bias from v3, fused activation from v4)."""

    #: dtype of the canvas and patch buffers (the quantized kernel, which reuses
    #: ``plan``, picks float32 or float64 by its exactness bound)
    float_type = np.float32
    filter_out_channels = 0  # (weights [O, KH, KW, I])

    def prepare(self) -> None:
        self.require_num_inputs(3, 4)
        weights, x = self.inputs[1], self.inputs[2]
        bias = self.inputs[3] if len(self.inputs) == 4 else None
        self.require_output_shape_input(4)
        self.require_types(weights, TensorType.FLOAT32, role="weights")
        self.require_types(x, TensorType.FLOAT32, role="input")
        if bias is not None:
            self.require_types(bias, TensorType.FLOAT32, role="bias")
        self.require_types(self.outputs[0], TensorType.FLOAT32, role="output")
        if len(x.shape) != 4 or len(weights.shape) != 4:
            raise self.unsupported(
                f"input and weights must be 4-D (NHWC, OHWI), got {list(x.shape)} and {list(weights.shape)}"
            )
        if x.shape[3] != weights.shape[3]:
            raise self.unsupported(
                f"input channels ({x.shape[3]}) differ from the weights' in-channels ({weights.shape[3]})"
            )
        if bias is not None and bias.num_elements != weights.shape[0]:
            raise self.unsupported(f"bias has {bias.num_elements} elements, expected {weights.shape[0]}")
        params = self.params
        self.bounds = activation_bounds(params.fused_activation_function)
        if params.stride_h <= 0 or params.stride_w <= 0:
            raise self.unsupported(f"strides must be positive, got {[params.stride_h, params.stride_w]}")

        self.weight_matrix = self.patches_matrix(weights.data) if weights.is_constant else None
        self.plan_output()

    @staticmethod
    def patches_matrix(weights: np.ndarray) -> np.ndarray:
        """``[O, KH, KW, I]`` -> ``[I, KH*KW*O]``: an input pixel times it is its output patch."""
        out_channels, kh, kw, in_channels = weights.shape
        return np.ascontiguousarray(weights.transpose(3, 1, 2, 0)).reshape(in_channels, kh * kw * out_channels)

    def plan(self, output_shape: tuple[int, ...]) -> None:
        """Padding, canvas and patch buffers for one output shape (done once per shape)."""
        params, x, weights = self.params, self.inputs[2], self.inputs[1]
        batch, out_h, out_w, out_channels = output_shape
        _, in_h, in_w, _ = x.shape
        _, kh, kw, _ = weights.shape
        rows = compute_padding(params.padding, out_h, kh, params.stride_h)
        cols = compute_padding(params.padding, out_w, kw, params.stride_w)
        if (rows.out_size, cols.out_size) != (in_h, in_w):
            # LiteRT checks this too: the output must be one this conv could have come from.
            raise self.unsupported(
                f"output_shape {list(output_shape)} does not match the input {list(x.shape)}: a CONV_2D of "
                f"that output with this filter, stride and padding gives {rows.out_size}x{cols.out_size}, "
                f"not {in_h}x{in_w}"
            )
        self.pad_top, self.pad_left = rows.before, cols.before
        # The canvas holds every scattered patch and the cropped output window.
        canvas_h = max((in_h - 1) * params.stride_h + kh, self.pad_top + out_h)
        canvas_w = max((in_w - 1) * params.stride_w + kw, self.pad_left + out_w)
        self.canvas = np.empty((batch, canvas_h, canvas_w, out_channels), self.float_type)
        self.patches = np.empty((batch, in_h, in_w, kh, kw, out_channels), self.float_type)
        self.plan_shape = tuple(output_shape)

    def invoke(self) -> None:
        self.output_at_invoke()
        x, out = self.inputs[2].data, self.outputs[0].data
        weight_matrix = self.weight_matrix
        if weight_matrix is None:
            weight_matrix = self.patches_matrix(self.inputs[1].data)
        batch, in_h, in_w, kh, kw, out_channels = self.patches.shape
        np.matmul(x.reshape(-1, x.shape[3]), weight_matrix, out=self.patches.reshape(batch * in_h * in_w, -1))

        canvas = self.canvas
        canvas.fill(0.0)
        sh, sw = self.params.stride_h, self.params.stride_w
        for ky in range(kh):
            for kx in range(kw):
                target = canvas[:, ky : ky + (in_h - 1) * sh + 1 : sh, kx : kx + (in_w - 1) * sw + 1 : sw, :]
                np.add(target, self.patches[:, :, :, ky, kx, :], out=target)
        _, out_h, out_w, _ = out.shape
        out[...] = canvas[:, self.pad_top : self.pad_top + out_h, self.pad_left : self.pad_left + out_w, :]
        if len(self.inputs) == 4 and self.inputs[3] is not None:
            np.add(out, self.inputs[3].data.reshape(-1), out=out)
        clamp(out, self.bounds)
