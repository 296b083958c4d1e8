"""TRANSPOSE_CONV on the GPU (float32 math), and the col2im machinery that
MediaPipe's ``Convolution2DTransposeBias`` (``mediapipe_custom.py``) shares.

Semantics are the CPU kernel's (``backends/cpu/kernels/transpose_conv.py``), i.e. TFLite's
reference ``TransposeConv``: inputs ``output_shape`` (int32 [4]), weights
``[O, KH, KW, I]``, input ``[N, H, W, I]``, from version 3 an optional bias ``[O]``;
every input pixel scatters its weighted filter into the output
(``out[n, y*sh + ky - pad_top, x*sw + kx - pad_left, o] += in[n, y, x, i] * w[o, ky, kx, i]``,
dropped outside), then the bias, then (version 4) the fused activation as a clamp. As
the CPU kernel (``activation_bounds``), NONE and TANH clamp nothing (TFLite's float
kernel ignores a fused TANH); SIGN_BIT is rejected. The padding is the one CONV_2D
would use from an ``OH x OW`` input with this filter and strides, and that CONV_2D must
give back ``H x W`` (a node where it does not is rejected, as LiteRT refuses it).

How (col2im):

- one matrix product gives every input pixel's patch: ``[N*H*W, I] @ [I, KH*KW*O]`` (the
  weights laid out once at prepare, in float32, when constant; at run otherwise), one
  launch of the hand-written ``cuda/matmul.cu`` (``matmul_bias_act`` with no bias and no
  clamp; CuPy refuses cuBLAS during graph capture) on a device and of its numpy twin in
  host emulation, so both launch the same kernels;
- a zeroed canvas receives the patches tap by tap: for each of the KH*KW taps, one
  strided-slice add of that tap's ``[N, H, W, O]`` patches (no two pixels of one tap land
  on the same canvas position, so no atomics are needed, and the taps add in the CPU
  kernel's order);
- the output is the canvas cropped by the padding, plus the bias, clamped, stored.

Versions claimed: TRANSPOSE_CONV 1, 3 (bias) and 4 (fused activation), all float32.
v2 (int8 weights, int8 activations) and v5 (int16 activations) are quantized: not here.
The output shape must be a constant (the delegate plans static shapes); runtime weights
and a runtime bias are taken (TFLite's GPU delegate accepts one or two runtime inputs).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from backends.cpu.common import compute_padding
from backends.cpu.kernels.mediapipe_custom import TransposeConvGeometry
from backends.gpu.ops.base import FloatOp, clamp, clamp_bounds, fused_activation, fused_activation_reason, input_tensor
from backends.gpu.ops.batch_matmul import launch_reason
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator


def geometry_launch_reason(geometry: TransposeConvGeometry) -> str | None:
    """Why the patches product of this geometry does not fit one matmul launch, or None."""
    g = geometry
    return launch_reason(1, g.batch * g.in_h * g.in_w, g.kernel_h * g.kernel_w * g.out_channels)


class Col2ImOp(FloatOp):
    """Shared by TRANSPOSE_CONV and ``Convolution2DTransposeBias``: the patches product,
    the tap-by-tap scatter-add into a zeroed canvas, the crop, the bias and the clamp.

    Subclasses set, in ``prepare``, ``self.geometry`` (a ``TransposeConvGeometry``) and
    call :meth:`prepare_col2im` with the input positions of their weights and bias."""

    def prepare_col2im(self, weights_position: int, bias_position: int | None, bounds: tuple[float, float] | None) -> None:
        self.weights_position = weights_position
        self.bias_position = bias_position
        self.bounds = bounds
        weights = self.inputs[weights_position]
        self.weight_matrix = None
        if weights.is_constant:  # [O, KH, KW, I] -> [I, KH*KW*O]: a pixel times it is its patch
            self.weight_matrix = self.upload(
                self.patches_matrix(np, np.asarray(weights.data, np.float32)), self.compute_dtype
            )
            self.prepared_inputs.add(weights_position)
        bias = self.inputs[bias_position] if bias_position is not None and bias_position < len(self.inputs) else None
        self.has_bias = bias is not None
        self.bias = None
        if bias is not None and bias.is_constant:
            self.bias = self.upload(np.asarray(bias.data, np.float32).reshape(-1), self.compute_dtype)
            self.prepared_inputs.add(bias_position)
        # The patches product: matmul.cu's matmul_bias_act in float32 (no bias, no clamp:
        # those follow the col2im), its numpy twin in host emulation.
        from backends.gpu.cuda.matmul import MatmulBiasActivationCuda

        self.product = MatmulBiasActivationCuda(None, self.compute_dtype, **self.device.launcher_arguments("matmul.cu"))

    @staticmethod
    def patches_matrix(xp: Any, weights: Any) -> Any:
        out_channels, kh, kw, in_channels = weights.shape
        return xp.ascontiguousarray(weights.transpose(3, 1, 2, 0)).reshape(in_channels, kh * kw * out_channels)

    def matmul(self, a: Any, b: Any) -> Any:
        """``a @ b`` in float32, one launch (matmul.cu; its twin in host emulation)."""
        return self.product(a, b)

    def run_col2im(self, x: Any, args) -> Any:
        xp, g = self.xp, self.geometry
        if self.weight_matrix is not None:
            weight_matrix = self.weight_matrix
        else:
            weight_matrix = self.patches_matrix(xp, self.compute(args[self.weights_position]))
        x = self.compute(x)
        patches = self.matmul(xp.ascontiguousarray(x).reshape(-1, x.shape[3]), weight_matrix)
        patches = patches.reshape(g.batch, g.in_h, g.in_w, g.kernel_h, g.kernel_w, g.out_channels)
        canvas = xp.zeros(g.canvas_shape, dtype=self.compute_dtype)
        for ky in range(g.kernel_h):
            for kx in range(g.kernel_w):
                target = canvas[g.tap_slices(ky, kx)]
                xp.add(target, patches[:, :, :, ky, kx, :], out=target)
        out = canvas[g.crop()]
        if self.has_bias:
            bias = self.bias if self.bias is not None else self.compute(args[self.bias_position]).reshape(-1)
            out = out + bias
        else:
            out = xp.ascontiguousarray(out)
        return self.store(clamp(xp, out, self.bounds))


class TransposeConv(Col2ImOp):
    """TRANSPOSE_CONV versions 1, 3 and 4 (float32: constant output shape, constant or
    runtime weights and bias, fused activation from v4)."""

    ops = {B.TRANSPOSE_CONV: frozenset({1, 3, 4})}  # v2: int8, v5: int16 activations
    index_inputs = (0,)  # output_shape: read on the host at prepare

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) not in (3, 4) or min(node.inputs[:3]) < 0:
            return f"expected inputs (output_shape, weights, input[, bias]), got {len(node.inputs)} inputs"
        if len(node.outputs) != 1:
            return f"expected 1 output, got {len(node.outputs)}"
        shape_tensor, weights, x = (tensors[i] for i in node.inputs[:3])
        if shape_tensor.type != TensorType.INT32:
            return f"output_shape {shape_tensor.name!r} is {shape_tensor.type_name}; expected INT32"
        if not shape_tensor.is_constant:
            return "output_shape must be a constant tensor (the GPU partition plans static shapes)"
        if len(shape_tensor.shape) != 1 or shape_tensor.num_elements != 4:
            return f"output_shape must be a 1-D tensor of 4 values, got shape {list(shape_tensor.shape)}"
        if len(x.shape) != 4 or len(weights.shape) != 4:
            return f"input and weights must be 4-D (NHWC, OHWI), got {list(x.shape)} and {list(weights.shape)}"
        if x.shape[3] != weights.shape[3]:
            return f"input channels ({x.shape[3]}) differ from the weights' in-channels ({weights.shape[3]})"
        bias = input_tensor(node, tensors, 3)
        if bias is not None and bias.num_elements != weights.shape[0]:
            return f"bias has {bias.num_elements} elements, expected {weights.shape[0]}"
        params = node.params
        if params.stride_h <= 0 or params.stride_w <= 0:
            return f"strides must be positive, got {[params.stride_h, params.stride_w]}"
        geometry, reason = cls.geometry_of(node, tensors)
        return reason or geometry_launch_reason(geometry) or fused_activation_reason(params)

    @staticmethod
    def geometry_of(node, tensors) -> tuple[TransposeConvGeometry | None, str | None]:
        """The node's geometry, or why its output shape does not fit its input."""
        shape_tensor, weights, x = (tensors[i] for i in node.inputs[:3])
        params = node.params
        output_shape = tuple(int(d) for d in np.asarray(shape_tensor.data).reshape(-1))
        batch, out_h, out_w, out_channels = output_shape
        if min(output_shape) <= 0 or batch != x.shape[0] or out_channels != weights.shape[0]:
            return None, (
                f"output_shape {list(output_shape)} must be positive, with batch {x.shape[0]} "
                f"and {weights.shape[0]} channels"
            )
        _, kh, kw, _ = weights.shape
        rows = compute_padding(params.padding, out_h, kh, params.stride_h)
        cols = compute_padding(params.padding, out_w, kw, params.stride_w)
        if (rows.out_size, cols.out_size) != tuple(x.shape[1:3]):
            return None, (
                f"output_shape {list(output_shape)} does not match the input {list(x.shape)}: a CONV_2D of "
                f"that output with this filter, stride and padding gives {rows.out_size}x{cols.out_size}"
            )
        geometry = TransposeConvGeometry(
            batch, x.shape[1], x.shape[2], kh, kw, params.stride_h, params.stride_w,
            out_h=out_h, out_w=out_w, out_channels=out_channels, pad_top=rows.before, pad_left=cols.before,
        )
        return geometry, None

    def prepare(self) -> None:
        tensors = {i: t for i, t in zip(self.node.inputs, self.inputs)}
        self.geometry, _ = self.geometry_of(self.node, tensors)
        self.prepare_col2im(1, 3, clamp_bounds(fused_activation(self.params)))

    def run(self, args):
        return [self.run_col2im(args[2], args)]
