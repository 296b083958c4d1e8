"""MediaPipe's custom op ``Convolution2DTransposeBias`` on the GPU (TFLite's GPU delegate
runs it too: segmentation models use it for their upsampling layers).

Semantics are the CPU kernel's (``backends/cpu/kernels/mediapipe_custom.py``, MediaPipe's
``transpose_conv_bias.cc``): inputs ``(input [N, H, W, I], weights [O, KH, KW, I],
bias [O])``, padding and strides from the ``custom_options`` bytes (a
``TfLiteTransposeConvParams``), the output shape computed from them, no activation. It
runs on the TRANSPOSE_CONV col2im machinery (``transpose_conv.Col2ImOp``).

Claimed as ``custom_ops = {"Convolution2DTransposeBias": 1}`` (MediaPipe's only
version), float32 only. As TFLite's GPU delegate (it reads input 1 as a constant
tensor), the weights must be constant; the bias may be constant or not.
"""

from __future__ import annotations

from backends.cpu.kernels.mediapipe_custom import (
    CONVOLUTION_2D_TRANSPOSE_BIAS,
    CustomOptionsError,
    TransposeConvBiasOptions,
    TransposeConvGeometry,
    input_reason,
)
from backends.gpu.ops.base import MAX_RANK
from backends.gpu.ops.transpose_conv import Col2ImOp, geometry_launch_reason
from schema.enums import TensorType


class Convolution2DTransposeBias(Col2ImOp):
    """MediaPipe's ``Convolution2DTransposeBias`` version 1 (float32, constant weights)."""

    custom_ops = {CONVOLUTION_2D_TRANSPOSE_BIAS: 1}

    @classmethod
    def rejection_reason(cls, node, op, version, tensors):
        name = CONVOLUTION_2D_TRANSPOSE_BIAS
        if len(node.inputs) != 3 or min(node.inputs) < 0:
            return f"expected inputs (input, weights, bias), got {len(node.inputs)} inputs"
        if len(node.outputs) != 1:
            return f"expected 1 output, got {len(node.outputs)}"
        roles = [("input", node.inputs[0]), ("weights", node.inputs[1]), ("bias", node.inputs[2]), ("output", node.outputs[0])]
        for role, index in roles:
            tensor = tensors[index]
            if tensor.type != TensorType.FLOAT32:
                return f"{role} {tensor.name!r} is {tensor.type_name}; the GPU delegate runs {name} on FLOAT32 tensors only"
            if len(tensor.shape) > MAX_RANK:
                return f"{role} {tensor.name!r} has rank {len(tensor.shape)}; at most {MAX_RANK} is supported"
            if tensor.is_dynamic:
                return f"{role} {tensor.name!r} has a shape known only at run time (dynamic tensor)"
        x, weights, bias = (tensors[i] for i in node.inputs)
        reason = cls.require_constant(tensors, node.inputs[1], "weights")
        if reason:
            return reason + " (as TFLite's GPU delegate)"
        if len(bias.shape) != 1:
            return f"bias must be 1-D, got shape {list(bias.shape)}"
        reason = input_reason(x.shape, weights.shape, bias.num_elements)
        if reason:
            return reason
        try:
            options = TransposeConvBiasOptions.parse(node.custom_options)
        except CustomOptionsError as error:
            return str(error)
        return geometry_launch_reason(TransposeConvGeometry.of(x.shape, weights.shape, options))

    def prepare(self) -> None:
        options = TransposeConvBiasOptions.parse(self.node.custom_options)
        self.geometry = TransposeConvGeometry.of(self.inputs[0].shape, self.inputs[1].shape, options)
        self.prepare_col2im(1, 2, None)  # MediaPipe's op has no activation

    def run(self, args):
        return [self.run_col2im(args[0], args)]
