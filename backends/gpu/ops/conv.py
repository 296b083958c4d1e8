"""CONV_2D on the GPU: float32 (``Conv2D``) and int8 / uint8 (``QuantizedConv2D``).

Also what the convolution family shares: the window arithmetic (``padded``,
``window_reason``, ``conv_window_reason``; the pools use it too), the float weights ops'
base ``WeightsOp`` (the weights laid out at prepare, the optional bias, what
``backends/gpu/fusion.py`` folds in; DEPTHWISE_CONV_2D and FULLY_CONNECTED derive from
it) and the quantized convolutions' base ``QuantizedConvOp`` (the int32 bias, the
per-channel multipliers and shifts, the accumulator bound).

Float semantics are the CPU kernel's (``backends/cpu/kernels/conv2d.py``), i.e. TFLite's
reference kernel: NHWC input, OHWI filter, optional bias, TFLite's SAME/VALID padding
(the extra pixel of an odd total goes after), fused activation as a clamp (TANH not
applied, as TFLite's).

How (float): one launch of a hand-written kernel per node, bias and activation fused; in
host emulation the kernel's numpy twin, as one launch too (``backends/gpu/cuda/conv2d.py``).
``backends/gpu/fusion.py`` may fold a PAD in front of a convolution and a residual ADD /
RELU / PRELU after it (``fuse``: the kernels' epilogue). Then ``finish_prepare`` chooses the
kernel among ``CONV2D_TACTICS`` (``backends/gpu/tactics.py``: checked on the device, the
fastest kept, recorded in ``self.tactic``): the direct NHWC convolution ``cuda/conv2d.cu``
(each thread a few output pixels of one output channel, the sum over (ky, kx, i) in TFLite's
order; the only one for a filter holding inf or NaN), the implicit GEMM over shared-memory
tiles ``cuda/conv2d_tiled.cu`` (the same sums in the same order), in float16 storage on
sm_80+ its tensor-core form ``cuda/conv2d_mma.cu``, and for a 1x1 filter with stride 1 the
vendor GEMM (``cuda/cublas.py``). The filter is laid out once at prepare as ``[groups, KH,
KW, I, O/groups]``; no im2col, no padded copy.

float16 storage: the kernels read and write halves and compute in float32; the weights
and bias are uploaded as halves (no float32 copies). As TFLite's reference kernels, the
clamp is ``ActivationFunctionWithMinMax`` over the activation's range: NONE (and TANH,
which these kernels do not apply) is [-FLT_MAX, FLT_MAX], so an overflow gives
+-FLT_MAX, not +-inf; NaN propagates.

The window arithmetic (``WindowGeometry``: TFLite's output sizes and padding, tap
slices, clipped taps, valid counts) is the CPU kernels' own, shared so that both
backends place every window identically.

Quantized: bit-exact with TFLite's reference kernels, in one kernel launch per node
(``cuda/conv2d_int8.cu``). Semantics are the CPU kernel's
(``backends/cpu/kernels/conv2d_quantized.py``):

- uint8 (version 1, per tensor): ``acc = sum (w - z_w) * (x - z_in) + bias``,
  ``out = clamp(MultiplyByQuantizedMultiplier(acc, m, s) + z_out)``;
- int8 (version 3, filter per channel or per tensor, filter zero points 0): the same with
  one multiplier per output channel;
- grouped (version 6, either type): output channel ``g * O + o`` reads the input channels
  of group ``g``.

The multipliers, shifts, zero points and the quantized clamp are the CPU kernel's own
(``ConvQuantization.of``); the kernel's integer arithmetic is ``cuda/fixed_point.cuh``,
tested equal to the CPU's. The kernel accumulates in int32 as TFLite does; a node whose
accumulators could leave int32 (``sum |w - z_w| * max |x - z_in| + |bias|``) is refused,
so that the result is also the CPU kernel's exact one.

Versions claimed (``ops``: a set where the versions in between are other types):

- ``Conv2D``: CONV_2D 1 and 6 (float32; v6: grouped convolution);
- ``QuantizedConv2D``: CONV_2D 1 (uint8), 3 (int8) and 6 (grouped, either).

int16 (v4, v8), hybrid (v2, v5) and int4 (v7) convolutions are not claimed.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from backends.cpu.kernels._quantized_window import ConvQuantization, uint8_bias_scale_error, zero_point_of
from backends.cpu.kernels._window import WindowGeometry
from backends.cpu.quantization import INT32_MAX
from backends.gpu.ops.base import FloatOp, fused_activation, fused_activation_reason, input_tensor
from backends.gpu.ops.quantized_base import QuantizedOp, parameter_reason, per_tensor
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator

#: The most output rows and columns of a convolution's candidate check (``WeightsOp.check_input_shape``):
#: 12 x 12 = 144 pixels, two tiles of the largest tile of pixels (128) and of the depthwise 8 x 8.
CHECK_OUTPUT_SIDE = 12
T = TensorType


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


def conv_inputs_reason(node, tensors, filter_rank_4: bool = True) -> str | None:
    if len(node.inputs) not in (2, 3) or node.inputs[0] < 0 or node.inputs[1] < 0:
        return f"expected inputs (input, filter[, bias]), got {len(node.inputs)} inputs"
    reason = FloatOp.require_constant(tensors, node.inputs[1], "filter")
    if reason:
        return reason + " (the GPU kernel lays the weights out once, at prepare)"
    x, w = tensors[node.inputs[0]], tensors[node.inputs[1]]
    if filter_rank_4 and (len(x.shape) != 4 or len(w.shape) != 4):
        return f"input and filter must be 4-D, got {list(x.shape)} and {list(w.shape)}"
    return None


def bias_count_reason(bias, count: int) -> str | None:
    if bias is not None and bias.num_elements != count:
        return f"bias has {bias.num_elements} elements, expected {count}"
    return None


def window_bias_activation_reason(node, tensors, filter_hw: tuple[int, int], out_channels: int) -> str | None:
    """The last checks of a float convolution (CONV_2D, DEPTHWISE_CONV_2D): its window over
    the input (``conv_window_reason``), one bias value per output channel, the fused
    activation."""
    x, params = tensors[node.inputs[0]], node.params
    _, reason = conv_window_reason(x.shape, filter_hw, params, (params.dilation_h_factor, params.dilation_w_factor))
    return (
        reason
        or bias_count_reason(input_tensor(node, tensors, 2), out_channels)
        or fused_activation_reason(params)
    )


class WeightsOp(FloatOp):
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
        self.kernel = None  # chosen again by finish_prepare, with what was folded in

    def epilogue_arrays(self, args) -> dict[str, Any]:
        """The residual and alpha the fused kernel reads (none without an epilogue)."""
        if self.epilogue is None:
            return {}
        residual = None if self.residual_position is None else args[self.residual_position]
        return {"residual": residual, "alpha": self.alpha}

    def candidate_arrays(self, x_shape: Sequence[int], w_shape: Sequence[int], filter_hw: Sequence[int], out_channels: int):
        """What a candidate kernel of this window is checked and timed with
        (``tactics.TacticRequest``'s ``arrays`` and ``timed_arrays``): makers of the inputs
        (``window_arrays``) of the check, on ``check_input_shape(x_shape)``, and of the timing,
        on the node's own input shape ``x_shape`` (before a folded PAD)."""
        check_shape = self.check_input_shape(x_shape, filter_hw)
        return (lambda: self.window_arrays(check_shape, w_shape, filter_hw, out_channels),
                lambda: self.window_arrays(x_shape, w_shape, filter_hw, out_channels))

    def window_sizes(self, x_shape: Sequence[int], filter_hw: Sequence[int]) -> list[Any]:
        """TFLite's output size and padding (``AxisPadding``) of the rows and the columns of the
        window over ``x_shape`` with the folded PAD (``pre_padding``) in front."""
        from backends.cpu.common import compute_padding

        params, (top, bottom, left, right) = self.params, self.pre_padding
        return [
            compute_padding(params.padding, int(size) + before + after, int(k), stride, dilation)
            for size, before, after, k, stride, dilation in (
                (x_shape[1], top, bottom, filter_hw[0], params.stride_h, params.dilation_h_factor),
                (x_shape[2], left, right, filter_hw[1], params.stride_w, params.dilation_w_factor),
            )
        ]

    def check_input_shape(self, x_shape: Sequence[int], filter_hw: Sequence[int]) -> tuple[int, ...]:
        """The input shape of the candidates' check: at most ``CHECK_OUTPUT_SIDE`` output rows
        and columns and 2 images, with every channel, the filter and the padding on every side
        of the node itself (rows and columns dropped a stride at a time: TFLite's padding stays
        the same), so that each code path of a kernel runs (the borders, the interior, a
        partial tile and a second one of every tile shape, each channel tile and step of depth)
        on a few blocks: the host shim runs a GPU's block as 256 threads, one block at a time."""
        params = self.params
        shape = [min(int(x_shape[0]), 2), int(x_shape[1]), int(x_shape[2]), int(x_shape[3])]
        for axis, (size, stride) in enumerate(zip(self.window_sizes(x_shape, filter_hw), (params.stride_h, params.stride_w))):
            dropped = min(max(size.out_size - CHECK_OUTPUT_SIDE, 0), (shape[axis + 1] - 1) // stride)
            shape[axis + 1] -= dropped * stride
        return tuple(shape)

    def window_arrays(self, x_shape: Sequence[int], w_shape: Sequence[int], filter_hw: Sequence[int], out_channels: int) -> dict[str, Any]:
        """Inputs of a candidate kernel (``tactics.check_values``: integers in {-2..2} in the
        storage dtype): ``x`` of ``x_shape``, the laid-out filter ``w``, the bias ``b``, and what
        the epilogue reads (``residual``, ``alpha``); None for what the node does not have."""
        from backends.gpu.tactics import check_values

        rng = np.random.default_rng(self.node.index)
        epilogue, storage = self.epilogue, self.storage
        rows, columns = (size.out_size for size in self.window_sizes(x_shape, filter_hw))
        residual = alpha = None
        if epilogue is not None and epilogue.residual_channels:
            residual = check_values(rng, (x_shape[0], rows, columns, epilogue.residual_channels), storage)
        if epilogue is not None and epilogue.prelu:
            alpha = check_values(rng, (out_channels,), storage)
        return {
            "x": check_values(rng, x_shape, storage), "w": check_values(rng, w_shape, storage),
            "b": check_values(rng, (out_channels,), storage) if self.has_bias else None,
            "residual": residual, "alpha": alpha,
        }

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


class Conv2D(WeightsOp):
    """CONV_2D versions 1 and 6 (float32; strides, SAME/VALID, dilation, bias, fused
    activation; v6: grouped convolution)."""

    ops = {B.CONV_2D: frozenset({1, 6})}  # v6: grouped; v2-5, 7, 8 are hybrid/int8/int16/int4

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = conv_inputs_reason(node, tensors)
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
        return window_bias_activation_reason(node, tensors, (kh, kw), out_channels)

    def prepare(self) -> None:
        x, filters = self.inputs[0], self.inputs[1]
        group_in = filters.shape[3]
        self.groups = x.shape[3] // group_in
        # The filter laid out once for the kernels: OHWI -> [groups, KH, KW, I, O/groups].
        from backends.gpu.cuda.conv2d import conv2d_filter_layout

        self.filter = self.upload(conv2d_filter_layout(np.asarray(filters.data, np.float32), self.groups))
        self.prepared_inputs.add(1)
        self.prepare_bias()
        self.kernel = None  # chosen by finish_prepare, once fusion.py folded its nodes in

    def finish_prepare(self) -> None:
        """The kernel: the row of ``CONV2D_TACTICS`` that wins on this node's shapes (the direct
        kernel, the shared-memory tiles, the tensor cores), with what ``fusion.py`` folded in."""
        from backends.gpu.cuda.conv2d import CONV2D_TACTICS, Conv2DGeometry, Conv2DProblem

        params = self.params
        filters = np.asarray(self.inputs[1].data, np.float32)
        out_channels, kh, kw, group_in = filters.shape
        filter_shape = (self.groups, kh, kw, group_in, out_channels // self.groups)
        top, bottom, left, right = self.pre_padding
        batch, height, width, channels = self.inputs[0].shape
        x_shape = (batch, height - top - bottom, width - left - right, channels)  # a folded PAD's input
        arguments = {
            "stride": (params.stride_h, params.stride_w), "dilation": (params.dilation_h_factor, params.dilation_w_factor),
            "padding": params.padding, "activation": params.fused_activation_function, "storage": self.storage,
            "epilogue": self.epilogue, "pre_padding": self.pre_padding,
        }
        geometry = Conv2DGeometry.of(x_shape, filter_shape, arguments["stride"], arguments["dilation"], params.padding, self.pre_padding)
        settings = self.tactic_settings
        problem = Conv2DProblem(
            geometry, self.storage.name, bool(np.isfinite(filters).all()), self.epilogue, self.device.compute_capability,
            self.pre_padding, settings.vendor_gemm, settings.allow_tf32, self.device.resident_threads,
        )
        checked, timed = self.candidate_arrays(x_shape, filter_shape, (kh, kw), out_channels)
        self.kernel = self.choose_kernel("CONV_2D", CONV2D_TACTICS, problem, arguments, checked, _call_convolution, timed)

    def run(self, args):
        if self.kernel is None:
            self.finish_prepare()
        return [self.kernel(args[0], self.filter, self.bias_value(args), **self.epilogue_arrays(args))]


def _call_convolution(kernel: Any, arrays: dict[str, Any]) -> Any:
    """One launch of a convolution candidate on its arrays (``WeightsOp.window_arrays``)."""
    return kernel(arrays["x"], arrays["w"], arrays["b"], residual=arrays["residual"], alpha=arrays["alpha"])


# --------------------------------------------------------------------------------------
# CONV_2D on int8 / uint8 (QuantizedConvOp: what the quantized convolutions share)
# --------------------------------------------------------------------------------------


def input_abs_max(x, input_zero_point: int) -> int:
    """The largest ``|x - z_in|`` of the input's integer type."""
    info = np.iinfo(x.dtype)
    return max(abs(int(info.min) - input_zero_point), abs(int(info.max) - input_zero_point))


def accumulator_reason(filter_abs_sums: np.ndarray, x, bias) -> str | None:
    """Why the int32 accumulators of a convolution could leave int32 (the kernels wrap as
    TFLite's; the CPU kernel computes exactly), or None: ``filter_abs_sums`` is
    ``sum |w - z_w|`` per output channel."""
    bound = np.asarray(filter_abs_sums, np.int64) * input_abs_max(x, zero_point_of(x))
    if bias is not None:
        bound = bound + np.abs(np.asarray(bias.data, np.int64).reshape(-1))
    largest = int(np.max(bound, initial=0))
    if largest > INT32_MAX:
        return f"the int32 accumulators could overflow (sum |w| * max |x| + |bias| = {largest})"
    return None


def quantized_conv_inputs_reason(node, tensors) -> str | None:
    """The first checks of a quantized convolution (CONV_2D, DEPTHWISE_CONV_2D): input and
    filter present (the bias optional), a constant filter, both 4-D."""
    if len(node.inputs) not in (2, 3) or node.inputs[0] < 0 or node.inputs[1] < 0:
        return f"expected inputs (input, filter[, bias]), got {len(node.inputs)} inputs"
    x, w = tensors[node.inputs[0]], tensors[node.inputs[1]]
    if not w.is_constant:
        return "the filter must be a constant tensor (the GPU kernel lays it out once, at prepare)"
    if len(x.shape) != 4 or len(w.shape) != 4:
        return f"input and filter must be 4-D, got {list(x.shape)} and {list(w.shape)}"
    return None


def bias_reason(node, tensors, channels: int) -> str | None:
    bias = conv_bias(node, tensors)
    if bias is None:
        return None
    if bias.type != T.INT32 or not bias.is_constant:
        return f"the bias must be a constant INT32 tensor, got {'a runtime' if not bias.is_constant else bias.type_name} tensor"
    if bias.num_elements != channels:
        return f"bias has {bias.num_elements} elements, expected {channels}"
    return None


class QuantizedConvOp(QuantizedOp):
    """What the quantized convolutions share: the bias and the output stage's per-channel
    parameters, uploaded once at prepare for their kernel."""

    def prepare_output_stage(self, filters, channels: int) -> None:
        """``self.quantization`` (the CPU kernel's ``ConvQuantization``), the kernel's
        ``OutputStage``, the int32 multipliers and shifts and the bias on the device."""
        from backends.gpu.cuda.conv_int8 import OutputStage

        x, output = self.inputs[0], self.outputs[0]
        self.quantization = q = ConvQuantization.of(x, filters, output, channels, fused_activation(self.params))
        filter_zero_point = zero_point_of(filters) if x.type == T.UINT8 else 0  # int8: zero points 0
        self.stage = OutputStage(-q.input_zero_point, -filter_zero_point, q.output_zero_point, q.low, q.high)
        self.multipliers = self.upload(q.multipliers, np.int32)
        self.shifts = self.upload(q.shifts, np.int32)
        bias = self.inputs[2] if len(self.inputs) > 2 else None
        self.bias = None if bias is None else self.upload(np.asarray(bias.data).reshape(-1), np.int32)
        if bias is not None:
            self.prepared_inputs.add(2)


    @staticmethod
    def output_stage_reason(node, tensors, channels: int) -> str | None:
        """Why the CPU kernel's ``ConvQuantization.of`` refuses the node's scales (a
        requantization ratio TFLite cannot compute, a fused activation bound outside
        int32), or None."""
        x, w, out = tensors[node.inputs[0]], tensors[node.inputs[1]], tensors[node.outputs[0]]
        return parameter_reason(lambda: ConvQuantization.of(x, w, out, channels, fused_activation(node.params)))

    @staticmethod
    def filter_quantization_reason(x, w, out_channels: int, channel_axis: int) -> str | None:
        """uint8: the filter per tensor; int8: zero points 0 and one scale, or one per output
        channel along ``channel_axis`` (0 for CONV_2D, 3 for DEPTHWISE_CONV_2D)."""
        q = w.quantization
        if x.type == T.UINT8:
            return None if per_tensor(w) else "a uint8 filter must be quantized per tensor"
        if np.any(np.asarray(q.zero_point) != 0):
            return "an int8 filter must have zero points 0"
        if q.scale.size not in (1, out_channels):
            return f"the filter has {q.scale.size} scales; expected 1 or {out_channels}"
        if q.scale.size > 1 and int(q.quantized_dimension) != channel_axis:
            return f"a per-channel filter must be quantized along dimension {channel_axis}, not {q.quantized_dimension}"
        return None

    @staticmethod
    def bias_and_window_reason(node, tensors, out_channels: int, kernel: tuple[int, int]) -> str | None:
        """The bias (one int32 per output channel; uint8: TFLite's bias-scale check), then the
        window (strides, dilation, padding) over the input."""
        x, w, out = tensors[node.inputs[0]], tensors[node.inputs[1]], tensors[node.outputs[0]]
        reason = bias_reason(node, tensors, out_channels)
        if reason:
            return reason
        if x.type == T.UINT8:
            reason = uint8_bias_scale_error(x, w, conv_bias(node, tensors), out)
            if reason:
                return reason
        params = node.params
        return conv_window_reason(x.shape, kernel, params, (params.dilation_h_factor, params.dilation_w_factor))[1]


def conv_bias(node, tensors):
    """A convolution's bias tensor, or None when the node has none."""
    return input_tensor(node, tensors, 2)


class QuantizedConv2D(QuantizedConvOp):
    """CONV_2D v1 (uint8), v3 (int8, per-channel) and v6 (grouped, either): strides,
    dilation, SAME/VALID, bias, fused activation as the quantized clamp."""

    ops = {B.CONV_2D: frozenset({1, 3, 6})}
    data_inputs = (0, 1)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = quantized_conv_inputs_reason(node, tensors)
        if reason:
            return reason
        x, w, out = tensors[node.inputs[0]], tensors[node.inputs[1]], tensors[node.outputs[0]]
        if not per_tensor(x) or not per_tensor(out):
            return "the input and the output must be quantized per tensor"
        out_channels, kh, kw, group_in = (int(d) for d in w.shape)
        channels = int(x.shape[3])
        if group_in <= 0 or channels <= 0 or channels % group_in:
            return f"input channels ({channels}) must be a positive multiple of the filter's in-channels ({group_in})"
        if out_channels % (channels // group_in):
            return f"grouped convolution: output channels ({out_channels}) must be a multiple of groups ({channels // group_in})"
        reason = cls.filter_quantization_reason(x, w, out_channels, 0) or cls.bias_and_window_reason(
            node, tensors, out_channels, (kh, kw)
        )
        if reason:
            return reason
        bias, params = conv_bias(node, tensors), node.params
        z_w = zero_point_of(w) if x.type == T.UINT8 else 0
        abs_sums = np.abs(np.asarray(w.data, np.int64) - z_w).reshape(out_channels, -1).sum(axis=1)
        return (
            accumulator_reason(abs_sums, x, bias)
            or fused_activation_reason(params)
            or cls.output_stage_reason(node, tensors, out_channels)
        )

    def prepare(self) -> None:
        from backends.gpu.cuda.conv2d import conv2d_filter_layout
        from backends.gpu.cuda.conv_int8 import Conv2DInt8Cuda

        x, filters = self.inputs[0], self.inputs[1]
        params = self.params
        out_channels = filters.shape[0]
        groups = x.shape[3] // filters.shape[3]
        self.prepare_output_stage(filters, out_channels)
        # OHWI -> [groups, KH, KW, I, O/groups], the filter's own type (conv2d_int8.cu).
        self.filter = self.upload(conv2d_filter_layout(np.asarray(filters.data), groups), filters.dtype)
        self.prepared_inputs.add(1)
        self.kernel = Conv2DInt8Cuda(
            (params.stride_h, params.stride_w), (params.dilation_h_factor, params.dilation_w_factor), params.padding,
            self.stage, **self.device.launcher_arguments("conv2d_int8.cu"),
        )

    def run(self, args: Any):
        return [self.kernel(args[0], self.filter, self.bias, self.multipliers, self.shifts)]
