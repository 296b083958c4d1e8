"""MediaPipe's custom op ``Convolution2DTransposeBias`` on float32 (version 1).

MediaPipe's segmentation models (selfie segmentation, hair segmentation...) use it:
a TRANSPOSE_CONV whose bias is part of the op, with inputs in another order and its
options in the node's ``custom_options`` bytes instead of builtin options. The
semantics are MediaPipe's ``mediapipe/util/tflite/operations/transpose_conv_bias.cc``:

- inputs: ``input [N, H, W, I]``, ``weights [O, KH, KW, I]`` (OHWI, as TRANSPOSE_CONV),
  ``bias [O]``; all float32; one float32 output;
- ``custom_options``: the bytes of a ``TfLiteTransposeConvParams`` struct, little-endian
  int32 fields ``padding`` (TfLitePadding: 0 unknown, 1 SAME, 2 VALID), ``stride_width``,
  ``stride_height``; later fields of the struct (a fused activation, a bias type), when
  present, are ignored as MediaPipe ignores them;
- the output shape is not an input: per spatial axis, with
  ``pad = SAME ? max(0, K - (in - 1) % stride - 1) : 0``,
  ``out = stride * (in - 1) + K - pad``, and the output starts ``pad // 2`` into the
  scattered canvas;
- every input pixel scatters ``in[n, y, x, i] * w[o, ky, kx, i]`` to
  ``out[n, y*sh + ky - pad_top, x*sw + kx - pad_left, o]`` (dropped outside the output),
  over the bias; no activation.

This is TFLite's TRANSPOSE_CONV with a bias (version 3) of output shape
``[N, out_h, out_w, O]`` and the same padding mode (an unknown padding as VALID): the
tests compare it with LiteRT's reference kernel on that builtin model.

How: as the TRANSPOSE_CONV kernel (``transpose_conv.py``), one BLAS matmul for every
pixel's patch, a col2im loop over the KH*KW taps into a zeroed canvas, the crop, the bias.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from backends.cpu.kernel import CpuKernel, register_custom
from backends.cpu.kernels.transpose_conv import TransposeConv
from schema.custom_options import CustomOptionsError
from schema.enums import TensorType

CONVOLUTION_2D_TRANSPOSE_BIAS = "Convolution2DTransposeBias"

#: TfLitePadding (the C enum, not the schema's Padding: there SAME is 0).
TFLITE_PADDING_UNKNOWN, TFLITE_PADDING_SAME, TFLITE_PADDING_VALID = 0, 1, 2
_PADDING_NAMES = {TFLITE_PADDING_UNKNOWN: "UNKNOWN", TFLITE_PADDING_SAME: "SAME", TFLITE_PADDING_VALID: "VALID"}


@dataclass(frozen=True)
class TransposeConvBiasOptions:
    """The options of a ``Convolution2DTransposeBias`` node (``TfLiteTransposeConvParams``)."""

    padding: int  # TfLitePadding: 0 unknown (no padding), 1 SAME, 2 VALID
    stride_w: int
    stride_h: int

    @property
    def padding_name(self) -> str:
        return _PADDING_NAMES.get(self.padding, f"unknown ({self.padding})")

    @classmethod
    def parse(cls, custom_options: bytes | None) -> "TransposeConvBiasOptions":
        """Read the first three int32 fields; raise ``CustomOptionsError`` saying what is wrong."""
        data = bytes(custom_options or b"")
        if len(data) < 12:
            raise CustomOptionsError(
                f"custom options must hold a TfLiteTransposeConvParams (padding, stride_width, stride_height: "
                f"12 bytes at least), got {len(data)} bytes"
            )
        padding, stride_w, stride_h = struct.unpack_from("<iii", data, 0)
        options = cls(padding, stride_w, stride_h)
        if padding not in _PADDING_NAMES:
            raise CustomOptionsError(f"padding {padding} is not a TfLitePadding (0 unknown, 1 SAME, 2 VALID)")
        if stride_w <= 0 or stride_h <= 0:
            raise CustomOptionsError(f"strides must be positive, got stride_height={stride_h}, stride_width={stride_w}")
        return options

    def to_bytes(self) -> bytes:
        """The 12 bytes a converter writes (for building models)."""
        return struct.pack("<iii", self.padding, self.stride_w, self.stride_h)


@dataclass(frozen=True)
class TransposeConvGeometry:
    """Output size and padding of one node (MediaPipe's Prepare/Eval arithmetic)."""

    batch: int
    in_h: int
    in_w: int
    kernel_h: int
    kernel_w: int
    stride_h: int
    stride_w: int
    out_h: int
    out_w: int
    out_channels: int
    pad_top: int
    pad_left: int

    @classmethod
    def of(cls, input_shape, weights_shape, options: TransposeConvBiasOptions) -> "TransposeConvGeometry":
        batch, in_h, in_w, _ = (int(d) for d in input_shape)
        out_channels, kh, kw, _ = (int(d) for d in weights_shape)
        same = options.padding == TFLITE_PADDING_SAME
        pad_h = max(0, kh - (in_h - 1) % options.stride_h - 1) if same else 0
        pad_w = max(0, kw - (in_w - 1) % options.stride_w - 1) if same else 0
        return cls(
            batch, in_h, in_w, kh, kw, options.stride_h, options.stride_w,
            out_h=options.stride_h * (in_h - 1) + kh - pad_h,
            out_w=options.stride_w * (in_w - 1) + kw - pad_w,
            out_channels=out_channels,
            pad_top=pad_h // 2,
            pad_left=pad_w // 2,
        )

    @property
    def output_shape(self) -> tuple[int, int, int, int]:
        return (self.batch, self.out_h, self.out_w, self.out_channels)

    @property
    def canvas_shape(self) -> tuple[int, int, int, int]:
        """Where every scattered patch lands (the output is a window of it)."""
        return (
            self.batch,
            max((self.in_h - 1) * self.stride_h + self.kernel_h, self.pad_top + self.out_h),
            max((self.in_w - 1) * self.stride_w + self.kernel_w, self.pad_left + self.out_w),
            self.out_channels,
        )

    def tap_slices(self, ky: int, kx: int) -> tuple[slice, slice, slice, slice]:
        """The canvas positions that tap (ky, kx) of every input pixel lands on."""
        return (
            slice(None),
            slice(ky, ky + (self.in_h - 1) * self.stride_h + 1, self.stride_h),
            slice(kx, kx + (self.in_w - 1) * self.stride_w + 1, self.stride_w),
            slice(None),
        )

    def crop(self) -> tuple[slice, slice, slice, slice]:
        """The output's window of the canvas."""
        return (
            slice(None),
            slice(self.pad_top, self.pad_top + self.out_h),
            slice(self.pad_left, self.pad_left + self.out_w),
            slice(None),
        )


def input_reason(input_shape, weights_shape, bias_count: int) -> str | None:
    """Why these shapes cannot run (MediaPipe's Prepare checks), or None."""
    if len(input_shape) != 4 or len(weights_shape) != 4:
        return f"input and weights must be 4-D (NHWC, OHWI), got {list(input_shape)} and {list(weights_shape)}"
    if input_shape[3] != weights_shape[3]:
        return f"input channels ({input_shape[3]}) differ from the weights' in-channels ({weights_shape[3]})"
    if bias_count != weights_shape[0]:
        return f"bias has {bias_count} elements, expected {weights_shape[0]} (the weights' out-channels)"
    return None


# v1: float32 (the only version MediaPipe has).
@register_custom(CONVOLUTION_2D_TRANSPOSE_BIAS, 1, 1)
class Convolution2DTransposeBias(CpuKernel):
    """MediaPipe's ``Convolution2DTransposeBias`` version 1 (float32)."""

    @property
    def op_name(self) -> str:
        return CONVOLUTION_2D_TRANSPOSE_BIAS

    def prepare(self) -> None:
        self.require_num_inputs(3)
        if len(self.outputs) != 1:
            raise self.unsupported(f"expected 1 output, got {len(self.outputs)}")
        x, weights, bias = self.inputs
        self.require_types(x, TensorType.FLOAT32, role="input")
        self.require_types(weights, TensorType.FLOAT32, role="weights")
        self.require_types(bias, TensorType.FLOAT32, role="bias")
        self.require_types(self.outputs[0], TensorType.FLOAT32, role="output")
        if len(bias.shape) != 1:
            raise self.unsupported(f"bias must be 1-D, got shape {list(bias.shape)}")
        reason = input_reason(x.shape, weights.shape, bias.num_elements)
        if reason:
            raise self.unsupported(reason)
        try:
            self.options = TransposeConvBiasOptions.parse(self.node.custom_options)
        except CustomOptionsError as error:
            raise self.unsupported(str(error)) from None
        self.geometry = g = TransposeConvGeometry.of(x.shape, weights.shape, self.options)
        self.outputs[0].resize(g.output_shape)
        self.weight_matrix = TransposeConv.patches_matrix(weights.data) if weights.is_constant else None
        self.canvas = np.empty(g.canvas_shape, np.float32)
        self.patches = np.empty((g.batch, g.in_h, g.in_w, g.kernel_h, g.kernel_w, g.out_channels), np.float32)

    def invoke(self) -> None:
        g = self.geometry
        x, bias, out = self.inputs[0].data, self.inputs[2].data, self.outputs[0].data
        weight_matrix = self.weight_matrix
        if weight_matrix is None:
            weight_matrix = TransposeConv.patches_matrix(self.inputs[1].data)
        np.matmul(x.reshape(-1, x.shape[3]), weight_matrix, out=self.patches.reshape(g.batch * g.in_h * g.in_w, -1))
        canvas = self.canvas
        canvas.fill(0.0)
        for ky in range(g.kernel_h):
            for kx in range(g.kernel_w):
                target = canvas[g.tap_slices(ky, kx)]
                np.add(target, self.patches[:, :, :, ky, kx, :], out=target)
        np.add(canvas[g.crop()], bias.reshape(-1), out=out)
