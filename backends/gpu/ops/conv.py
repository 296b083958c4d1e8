"""CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED on the GPU (float32 math).

Semantics are the CPU kernels' (``backends/cpu/kernels/conv2d.py``,
``depthwise_conv2d.py``, ``fully_connected.py``), i.e. TFLite's reference kernels:
NHWC input, OHWI conv filter, ``[1, KH, KW, C*M]`` depthwise filter (M from the shapes),
``[units, depth]`` FC weights, optional bias, TFLite's SAME/VALID padding (the extra
pixel of an odd total goes after), fused activation as a clamp (TANH not applied by
conv/depthwise, rejected by FC as TFLite does).

How: one launch of a hand-written kernel per node, bias and activation fused; in host
emulation the kernel's numpy twin, as one launch too (``backends/gpu/cuda/conv2d.py``).
Prepare picks the kernel variant from the shapes and records it in ``self.variant`` (the
partition stats list it); ``backends/gpu/fusion.py`` may fold a PAD in front of a
convolution and a residual ADD / RELU / PRELU after it (``fuse``: the kernels' epilogue).

- CONV_2D: for tiny layers (and a filter holding inf or NaN) the direct NHWC convolution
  ``cuda/conv2d.cu`` (each thread a few output pixels of one output channel, the sum over
  (ky, kx, i) in TFLite's order); otherwise the implicit GEMM over shared-memory tiles
  ``cuda/conv2d_tiled.cu`` (the same sums in the same order), or in float16 storage on
  sm_80+ its tensor-core form ``cuda/conv2d_mma.cu``. The filter is laid out once at
  prepare as ``[groups, KH, KW, I, O/groups]``; no im2col, no padded copy.
- DEPTHWISE_CONV_2D: the direct kernel ``cuda/depthwise_conv2d.cu``, or for larger layers
  ``cuda/depthwise_conv2d_tiled.cu`` (each block's input patch staged in shared memory), on
  TFLite's filter layout.
- FULLY_CONNECTED: ``cuda/matmul.cu``'s ``matmul_bias_act`` (the product with the bias
  and the clamp fused), or ``cuda/matmul_tiled.cu`` for a product of many rows, with the
  weights transposed once at prepare.
- float16 storage: the kernels read and write halves and compute in float32; the weights
  and bias are uploaded as halves (no float32 copies). As TFLite's reference kernels, the
  clamp is ``ActivationFunctionWithMinMax`` over the activation's range: NONE (and TANH,
  which these kernels do not apply) is [-FLT_MAX, FLT_MAX], so an overflow gives
  +-FLT_MAX, not +-inf; NaN propagates.

The window arithmetic (``WindowGeometry``: TFLite's output sizes and padding, tap
slices, clipped taps, valid counts) is the CPU kernels' own, shared so that both
backends place every window identically.

Versions claimed (``ops``: a set where the versions in between are other types, which
other classes take: ``conv_quantized.py``, ``depthwise_quantized.py``,
``fully_connected_quantized.py``):

- CONV_2D 1 and 6 (grouped convolution). v2-v5, v7, v8 are hybrid/int8/int16/int4.
- DEPTHWISE_CONV_2D 1-2 (v1 float32 with depth multiplier, v2 adds dilation). v3-v7
  are int8/hybrid/int16/int4.
- FULLY_CONNECTED 1, 5 (keep_num_dims) and 6 (no bias slot). v2 (shuffled int8
  weights), v3 and v4 (hybrid, int8) are not float.
"""

from __future__ import annotations

from backends.gpu.ops.base import Act, FloatOp, fused_activation, fused_activation_reason, input_tensor
from typing import Any, Sequence

import numpy as np

from backends.cpu.kernels._window import WindowGeometry
from schema.enums import BuiltinOperator, FullyConnectedOptionsWeightsFormat

B = BuiltinOperator


def padded(xp: Any, x: Any, geometry: WindowGeometry, fill: float = 0.0) -> Any:
    """``x`` (NHWC) with the geometry's border (``x`` itself when there is none)."""
    g = geometry
    if not g.is_padded:
        return x
    shape = (x.shape[0], g.pad_top + g.in_h + g.pad_bottom, g.pad_left + g.in_w + g.pad_right, x.shape[3])
    out = xp.full(shape, fill, dtype=x.dtype)
    out[:, g.pad_top : g.pad_top + g.in_h, g.pad_left : g.pad_left + g.in_w, :] = x
    return out


def window_reason(input_shape, filter_hw, params, dilation=(1, 1)) -> tuple[WindowGeometry | None, str | None]:
    """The window geometry of a conv/pool node, or why it cannot be computed."""
    try:
        geometry = WindowGeometry.of(
            input_shape, filter_hw, params.padding, (params.stride_h, params.stride_w), dilation
        )
    except (ValueError, TypeError) as error:
        return None, str(error)
    return geometry, None


#: A convolution whose padded input would hold more than this many times the values of
#: the same convolution without its taps that never touch the input (plus
#: ``PADDING_SLACK``) is left to the CPU (see ``conv_window_reason``).
PADDING_RATIO = 4
PADDING_SLACK = 1 << 16


def conv_window_reason(input_shape, filter_hw, params, dilation) -> tuple[WindowGeometry | None, str | None]:
    """``window_reason`` for a convolution, and why it cannot run here when its filter taps
    reach far past the input (a huge dilation: the padded input of a 30000 dilation over
    16x16 pixels would hold 3.6 billion values per channel; past INT16_MAX the offsets
    of the CUDA kernels would overflow). The CPU kernel runs such a node without those
    taps (``WindowGeometry.conv_cropped``), or refuses it as LiteRT does (INT16_MAX).
    An empty input (a 0 batch) is left to the CPU: there is nothing to launch."""
    if 0 in tuple(input_shape):
        return None, f"the input is empty (shape {list(input_shape)})"
    geometry, reason = window_reason(input_shape, filter_hw, params, dilation)
    if reason:
        return None, reason
    cropped = geometry.conv_cropped()
    if cropped is not geometry and geometry.padded_elements > PADDING_RATIO * cropped.padded_elements + PADDING_SLACK:
        g = geometry
        return None, (
            f"the {g.filter_h}x{g.filter_w} filter with dilation {g.dilation_h}x{g.dilation_w} reaches far past "
            f"the {g.in_h}x{g.in_w} input: its padded input would hold {g.padded_elements} values "
            f"(the CPU kernel skips the taps that never touch the input)"
        )
    return geometry, None


def _conv_inputs_reason(node, tensors, filter_rank_4: bool = True) -> str | None:
    if len(node.inputs) not in (2, 3) or node.inputs[0] < 0 or node.inputs[1] < 0:
        return f"expected inputs (input, filter[, bias]), got {len(node.inputs)} inputs"
    reason = FloatOp.require_constant(tensors, node.inputs[1], "filter")
    if reason:
        return reason + " (the GPU kernel lays the weights out once, at prepare)"
    x, w = tensors[node.inputs[0]], tensors[node.inputs[1]]
    if filter_rank_4 and (len(x.shape) != 4 or len(w.shape) != 4):
        return f"input and filter must be 4-D, got {list(x.shape)} and {list(w.shape)}"
    return None


def _bias_reason(bias, count: int) -> str | None:
    if bias is not None and bias.num_elements != count:
        return f"bias has {bias.num_elements} elements, expected {count}"
    return None


class _WeightsOp(FloatOp):
    """Shared: the weights laid out at prepare and the optional bias (input 2, uploaded
    once when constant, in the storage dtype the fused kernels read)."""

    #: What ``backends/gpu/fusion.py`` folded into this convolution (``fuse``): a PAD's
    #: zeros in front (top, bottom, left, right), an epilogue after (``cuda.conv2d.Epilogue``),
    #: its PRELU alpha (a device array) and the input position of its residual.
    pre_padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    epilogue: Any = None
    alpha: Any = None
    residual_position: int | None = None

    def fuse(self, pre_padding: Sequence[int], epilogue: Any, alpha: np.ndarray | None, residual_position: int | None) -> None:
        """Run with the nodes ``fusion.py`` folded in: ``pre_padding`` zeros in front (the
        filter is finite: skipping a tap equals reading a zero), then ``epilogue`` (its
        residual at input ``residual_position`` of the fused node, ``alpha`` uploaded here)."""
        self.pre_padding = tuple(int(p) for p in pre_padding)
        self.epilogue = epilogue
        self.alpha = None if alpha is None else self.upload(np.asarray(alpha, np.float32).reshape(-1))
        self.residual_position = residual_position
        self.kernel = self.make_kernel()

    def epilogue_arrays(self, args) -> dict[str, Any]:
        """The residual and alpha the fused kernel reads (none without an epilogue)."""
        if self.epilogue is None:
            return {}
        residual = None if self.residual_position is None else args[self.residual_position]
        return {"residual": residual, "alpha": self.alpha}

    def prepare_bias(self, dtype: Any = None) -> None:
        """Upload a constant bias once (in ``dtype``, default the storage dtype)."""
        bias = self.inputs[2] if len(self.inputs) > 2 else None
        self.has_bias = bias is not None
        self.bias = None
        if bias is not None and bias.is_constant:
            self.bias = self.upload(bias.data.reshape(-1), dtype or self.storage)
            self.prepared_inputs.add(2)

    def bias_value(self, args) -> Any:
        """The bias for this run (prepared, or the runtime input), None without one."""
        if not self.has_bias:
            return None
        return self.bias if self.bias is not None else args[2]


# --------------------------------------------------------------------------------------
# CONV_2D
# --------------------------------------------------------------------------------------


class Conv2D(_WeightsOp):
    """CONV_2D versions 1 and 6 (float32; strides, SAME/VALID, dilation, bias, fused
    activation; v6: grouped convolution)."""

    ops = {B.CONV_2D: frozenset({1, 6})}  # v6: grouped; v2-5, 7, 8 are hybrid/int8/int16/int4

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = _conv_inputs_reason(node, tensors)
        if reason:
            return reason
        x, w = tensors[node.inputs[0]], tensors[node.inputs[1]]
        out_channels, kh, kw, group_in = w.shape
        channels = x.shape[3]
        if group_in <= 0 or channels <= 0 or channels % group_in:
            return f"input channels ({channels}) must be a positive multiple of the filter's in-channels ({group_in})"
        groups = channels // group_in
        if out_channels % groups:
            return f"grouped convolution: output channels ({out_channels}) must be a multiple of groups ({groups})"
        params = node.params
        _, reason = conv_window_reason(x.shape, (kh, kw), params, (params.dilation_h_factor, params.dilation_w_factor))
        return (
            reason
            or _bias_reason(input_tensor(node, tensors, 2), out_channels)
            or fused_activation_reason(params)
        )

    def prepare(self) -> None:
        x, filters = self.inputs[0], self.inputs[1]
        params = self.params
        group_in = filters.shape[3]
        self.groups = x.shape[3] // group_in
        # The hand-written direct NHWC kernel (cuda/conv2d.cu) with its fused bias +
        # activation epilogue: one launch per node. Its filter layout, laid out once here:
        # OHWI -> [groups, KH, KW, I, O/groups]. In host emulation its numpy twin runs, as
        # one launch.
        from backends.gpu.cuda.conv2d import conv2d_filter_layout

        self.kernel = self.make_kernel()
        self.filter = self.upload(conv2d_filter_layout(np.asarray(filters.data, np.float32), self.groups))
        self.prepared_inputs.add(1)
        self.prepare_bias()

    def make_kernel(self) -> Any:
        """The launcher of the variant the shapes call for (``conv2d_variant``: the direct
        kernel of ``conv2d.cu`` for tiny layers, else a tiled one of ``conv2d_tiled.cu``),
        recorded in ``self.variant`` (the partition's stats list it)."""
        from backends.gpu.cuda.conv2d import Conv2DGeometry, conv2d_launcher, conv2d_variant

        params = self.params
        filters = np.asarray(self.inputs[1].data, np.float32)
        out_channels, kh, kw, group_in = filters.shape
        stride = (params.stride_h, params.stride_w)
        dilation = (params.dilation_h_factor, params.dilation_w_factor)
        geometry = Conv2DGeometry.of(
            self.inputs[0].shape, (self.groups, kh, kw, group_in, out_channels // self.groups), stride, dilation, params.padding
        )
        self.variant = conv2d_variant(
            geometry, finite_filter=bool(np.isfinite(filters).all()), storage=self.storage,
            compute_capability=int(self.device.cuda_device.compute_capability),
        )
        options = {} if self.variant == "direct" else {"variant": self.variant}
        launcher = conv2d_launcher(self.variant)
        return launcher(
            stride=stride,
            dilation=dilation,
            padding=params.padding,
            activation=params.fused_activation_function,
            storage=self.storage,
            epilogue=self.epilogue,
            pre_padding=self.pre_padding,
            **options,
            **self.device.launcher_arguments(launcher.source),
        )

    def run(self, args):
        return [self.kernel(args[0], self.filter, self.bias_value(args), **self.epilogue_arrays(args))]


# --------------------------------------------------------------------------------------
# DEPTHWISE_CONV_2D
# --------------------------------------------------------------------------------------


class DepthwiseConv2D(_WeightsOp):
    """DEPTHWISE_CONV_2D versions 1-2 (float32; depth multiplier from the shapes as
    TFLite, strides, SAME/VALID, bias, fused activation; v2 adds dilation)."""

    ops = {B.DEPTHWISE_CONV_2D: 2}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = _conv_inputs_reason(node, tensors)
        if reason:
            return reason
        x, w = tensors[node.inputs[0]], tensors[node.inputs[1]]
        if w.shape[0] != 1:
            return f"filter must be [1, KH, KW, C*M], got {list(w.shape)}"
        _, kh, kw, out_channels = w.shape
        channels = x.shape[3]
        if channels <= 0 or out_channels % channels:
            return f"filter channels ({out_channels}) must be a multiple of the input channels ({channels})"
        params = node.params
        _, reason = conv_window_reason(x.shape, (kh, kw), params, (params.dilation_h_factor, params.dilation_w_factor))
        return (
            reason
            or _bias_reason(input_tensor(node, tensors, 2), out_channels)
            or fused_activation_reason(params)
        )

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
        # The hand-written direct NHWC kernel (cuda/depthwise_conv2d.cu) with its fused bias
        # + activation epilogue; it reads TFLite's filter layout and the storage dtype. In
        # host emulation its numpy twin runs, as one launch.
        self.kernel = self.make_kernel()
        self.filter = self.upload(np.asarray(filters.data))  # TFLite's [1, KH, KW, C*M]
        self.prepare_bias(self.storage)

    def make_kernel(self) -> Any:
        """The launcher of the variant the shapes call for (``depthwise_variant``: the
        shared-memory tiles of ``depthwise_conv2d_tiled.cu``, or ``depthwise_conv2d.cu``'s
        direct kernel, its fused entry point once ``fusion.py`` folded nodes into this one),
        recorded in ``self.variant``."""
        from backends.gpu.cuda.sources import DepthwiseConv2DCuda, DepthwiseGeometry
        from backends.gpu.cuda.windows import DepthwiseConv2DFusedCuda, DepthwiseConv2DTiledCuda, depthwise_variant

        params = self.params
        stride = (params.stride_h, params.stride_w)
        dilation = (params.dilation_h_factor, params.dilation_w_factor)
        self.variant = depthwise_variant(
            DepthwiseGeometry.of(self.inputs[0].shape, self.inputs[1].shape, stride, dilation, params.padding)
        )
        fused = self.epilogue is not None or any(self.pre_padding)
        options = {"epilogue": self.epilogue, "pre_padding": self.pre_padding} if fused or self.variant != "direct" else {}
        if self.variant != "direct":
            launcher = DepthwiseConv2DTiledCuda
        else:
            launcher = DepthwiseConv2DFusedCuda if fused else DepthwiseConv2DCuda
        return launcher(
            stride=(params.stride_h, params.stride_w),
            dilation=(params.dilation_h_factor, params.dilation_w_factor),
            padding=params.padding,
            activation=params.fused_activation_function,
            storage=self.storage,
            **options,
            **self.device.launcher_arguments(launcher.source),
        )

    def run(self, args):
        return [self.kernel(args[0], self.filter, self.bias_value(args), **self.epilogue_arrays(args))]


# --------------------------------------------------------------------------------------
# FULLY_CONNECTED
# --------------------------------------------------------------------------------------

FC_ACTIVATIONS = (Act.NONE, Act.RELU, Act.RELU_N1_TO_1, Act.RELU6)


def fully_connected_inputs_reason(node) -> str | None:
    """Why a FULLY_CONNECTED node's inputs or weights format cannot run (any type), or None."""
    if len(node.inputs) not in (2, 3) or node.inputs[0] < 0 or node.inputs[1] < 0:
        return f"expected inputs (input, weights[, bias]), got {len(node.inputs)} inputs"
    weights_format = int(getattr(node.params, "weights_format", 0) or 0)
    if weights_format != FullyConnectedOptionsWeightsFormat.DEFAULT:
        try:
            name = FullyConnectedOptionsWeightsFormat(weights_format).name
        except ValueError:
            name = str(weights_format)
        return f"weights_format {name} is not supported; only DEFAULT"
    return None


class FullyConnected(_WeightsOp):
    """FULLY_CONNECTED versions 1, 5 and 6 (float32, DEFAULT weights, optional bias; v5:
    keep_num_dims, v6: no bias slot)."""

    ops = {B.FULLY_CONNECTED: frozenset({1, 5, 6})}  # v5: keep_num_dims, v6: no bias slot; v2-4 quantized

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = fully_connected_inputs_reason(node)
        if reason:
            return reason
        params = node.params
        reason = FloatOp.require_constant(tensors, node.inputs[1], "weights")
        if reason:
            return reason + " (the GPU kernel transposes them once, at prepare)"
        x, w = tensors[node.inputs[0]], tensors[node.inputs[1]]
        if w.sparsity is not None:
            return "sparse weights are not supported"
        if len(w.shape) != 2:
            return f"weights must be 2-D [units, depth], got {list(w.shape)}"
        units, depth = w.shape
        if depth <= 0 or x.num_elements % depth:
            return f"input of shape {list(x.shape)} cannot be split into rows of depth {depth}"
        if getattr(params, "keep_num_dims", False) and (not x.shape or x.shape[-1] != depth):
            return f"keep_num_dims: the input's last axis ({list(x.shape)}) must be the depth {depth}"
        from backends.gpu.cuda.conv2d import matmul_launch_reason

        # TFLite's FULLY_CONNECTED has no float TANH / SIGN_BIT (its Prepare fails).
        return (
            _bias_reason(input_tensor(node, tensors, 2), units)
            or fused_activation_reason(params, FC_ACTIVATIONS)
            or matmul_launch_reason(1, x.num_elements // depth, units)
        )

    def prepare(self) -> None:
        weights = np.asarray(self.inputs[1].data, np.float32)
        self.units, self.depth = weights.shape
        self.weights = self.upload(np.ascontiguousarray(weights.T))  # [depth, units]
        self.prepared_inputs.add(1)
        self.prepare_bias()
        self.out_shape = tuple(self.outputs[0].shape)
        # One launch: matmul.cu's product with the bias and the clamp fused
        # (matmul_bias_act_f32/_f16), reading and writing the storage dtype.
        from backends.gpu.cuda.conv2d import matmul_launcher, matmul_variant

        self.variant = matmul_variant(
            1, self.inputs[0].num_elements // self.depth, self.units, self.storage, int(self.device.cuda_device.compute_capability)
        )
        launcher = matmul_launcher(self.variant)
        self.product = launcher(fused_activation(self.params), self.storage, **self.device.launcher_arguments(launcher.source))

    def matmul(self, x: Any, bias: Any) -> Any:
        """``clamp(x @ weights + bias)`` in one launch, ``[rows, units]`` in the storage dtype."""
        return self.product(x, self.weights, bias)

    def run(self, args):
        x = args[0].reshape(-1, self.depth)
        return [self.matmul(x, self.bias_value(args)).reshape(self.out_shape)]
