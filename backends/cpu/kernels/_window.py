"""Helpers shared by the sliding-window kernels (convolutions and pools).

Nothing here registers a kernel. The pieces:

- ``WindowGeometry``: TFLite's output size and padding of a 2-D window op
  (``ComputePaddingHeightWidth``: the extra pixel of an odd total goes after),
  for NHWC inputs, with strides and dilations;
- ``PaddedInput``: a padded copy of the input whose buffer is allocated once (in
  prepare) and whose interior is refreshed at every invoke; its border keeps the
  fill value (0 for sums, -inf for max);
- ``taps_inside_input`` (and ``WindowGeometry.clipped_taps``, its list): for each
  filter tap, the block of output positions where it falls inside the input and the
  strided block of input it reads there (for tap loops that need no padded copy);
- ``window_view``: all taps at once, as a read-only view
  ``[N, OH, OW, KH, KW, C]`` (numpy's ``sliding_window_view``), for im2col;
- ``activation_bounds`` / ``clamp``: the fused activation as these float kernels
  apply it in TFLite; ``make_clamp`` binds that clamp to one output buffer for
  repeated use, and ``filled`` / ``tiled_rows`` give the constant operands that keep
  numpy on its fast paths.

Speed notes (numpy 2.4, x86): a ufunc call costs ~0.4-0.7 us on tiny arrays when
all operands are arrays of one shape, but 1-3 us when an operand is a Python or
numpy scalar or needs broadcasting, and ``np.clip`` ~2.5 us; ``np.maximum`` and
``np.minimum`` with ``out`` passed positionally take a deprecation path (~2 us), so
``out=`` is always a keyword here. On large arrays a full-size constant operand is
also faster than a scalar or a broadcast row (one contiguous inner loop).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from backends.cpu.common import compute_padding
from schema.enums import ActivationFunctionType


@dataclass(frozen=True)
class WindowGeometry:
    """Geometry of a 2-D window op on an NHWC input."""

    batch: int
    in_h: int
    in_w: int
    channels: int
    filter_h: int
    filter_w: int
    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    out_h: int
    out_w: int
    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    #: Set by ``conv_cropped`` only: the input rows / columns before the ones this geometry
    #: describes (``input_view``), and the filter row / column that is its tap 0
    #: (``filter_view``). 0 for a geometry made by ``of``.
    crop_top: int = 0
    crop_left: int = 0
    first_ky: int = 0
    first_kx: int = 0

    @classmethod
    def of(
        cls,
        input_shape,
        filter_hw: tuple[int, int],
        padding: int,
        strides: tuple[int, int],
        dilations: tuple[int, int] = (1, 1),
    ) -> "WindowGeometry":
        """Output size and padding (TFLite's rules) of a window over ``input_shape`` (NHWC)."""
        batch, in_h, in_w, channels = (int(d) for d in input_shape)
        (filter_h, filter_w), (stride_h, stride_w), (dilation_h, dilation_w) = filter_hw, strides, dilations
        if min(filter_h, filter_w) <= 0:
            raise ValueError(f"filter sizes must be positive, got {[filter_h, filter_w]}")
        if min(stride_h, stride_w) <= 0:
            raise ValueError(f"strides must be positive, got {[stride_h, stride_w]}")
        if min(dilation_h, dilation_w) <= 0:
            raise ValueError(f"dilations must be positive, got {[dilation_h, dilation_w]}")
        rows = compute_padding(padding, in_h, filter_h, stride_h, dilation_h)
        cols = compute_padding(padding, in_w, filter_w, stride_w, dilation_w)
        if rows.out_size <= 0 or cols.out_size <= 0:
            raise ValueError(
                f"the window ({filter_h}x{filter_w}, dilation {dilation_h}x{dilation_w}) does not fit "
                f"the {in_h}x{in_w} input: output would be {rows.out_size}x{cols.out_size}"
            )
        return cls(
            batch, in_h, in_w, channels, filter_h, filter_w, stride_h, stride_w, dilation_h, dilation_w,
            rows.out_size, cols.out_size, rows.before, rows.after, cols.before, cols.after,
        )

    @property
    def is_padded(self) -> bool:
        return bool(self.pad_top or self.pad_bottom or self.pad_left or self.pad_right)

    @property
    def padded_shape(self) -> tuple[int, int, int, int]:
        return (
            self.batch,
            self.pad_top + self.in_h + self.pad_bottom,
            self.pad_left + self.in_w + self.pad_right,
            self.channels,
        )

    @property
    def output_shape(self) -> tuple[int, int, int]:
        """``(N, OH, OW)``: the caller appends the channel count."""
        return (self.batch, self.out_h, self.out_w)

    def tap_slices(self, ky: int, kx: int) -> tuple[slice, ...]:
        """What tap (ky, kx) reads of the *padded* input at every output position (NHWC)."""
        top, left = ky * self.dilation_h, kx * self.dilation_w
        return (
            slice(None),
            slice(top, top + (self.out_h - 1) * self.stride_h + 1, self.stride_h),
            slice(left, left + (self.out_w - 1) * self.stride_w + 1, self.stride_w),
            slice(None),
        )

    def clipped_taps(self) -> list[tuple[tuple[slice, ...], tuple[slice, ...]]]:
        """For each filter tap (row-major order) that sees the input at all: the output
        positions where it falls inside the input, and the input pixels it reads there.

        Returns ``(output_index, input_index)`` pairs of slices for NHWC arrays: a window
        op that combines taps can then work on the unpadded input.
        """
        return [(out_index, in_index) for _, _, out_index, in_index in taps_inside_input(self)]

    def cropped_to_input(self) -> "WindowGeometry":
        """The same windows without the filter rows and columns that never touch the input
        (for any output position), the padding shifted to match: equivalent for ops to
        which such taps contribute nothing (pools: the identity, and not counted). Its
        filter spans at most the input plus the strides between outputs, so the work of a
        pool is bounded by its tensors, whatever its filter size says (a 16,777,216-row
        filter over a 9-row input keeps 17 rows at most)."""
        if self.dilation_h != 1 or self.dilation_w != 1:
            return self  # (pools have no dilation; a dilated crop could start inside the input)
        (first_h, filter_h, pad_top) = _cropped_axis(self.filter_h, self.dilation_h, self.pad_top, self.stride_h, self.out_h, self.in_h)
        (first_w, filter_w, pad_left) = _cropped_axis(self.filter_w, self.dilation_w, self.pad_left, self.stride_w, self.out_w, self.in_w)
        if (filter_h, filter_w) == (self.filter_h, self.filter_w):
            return self
        pad_bottom = max(0, (self.out_h - 1) * self.stride_h + (filter_h - 1) * self.dilation_h + 1 - self.in_h - pad_top)
        pad_right = max(0, (self.out_w - 1) * self.stride_w + (filter_w - 1) * self.dilation_w + 1 - self.in_w - pad_left)
        return WindowGeometry(
            self.batch, self.in_h, self.in_w, self.channels, filter_h, filter_w, self.stride_h, self.stride_w,
            self.dilation_h, self.dilation_w, self.out_h, self.out_w, pad_top, pad_bottom, pad_left, pad_right,
        )

    def conv_cropped(self) -> "WindowGeometry":
        """The same convolution without the filter rows and columns that never touch the
        input (for any output position): such taps read only the padding, which adds
        nothing to a convolution (0, or the zero point that the kernels subtract). With a
        huge dilation (30000 over a 16-row input) that is all but one tap of each axis,
        whose padding would otherwise take gigabytes.

        Unlike ``cropped_to_input`` this works with dilation: the taps kept keep their
        dilation, and when the first of them starts inside the input (the padding before
        it would be negative) the geometry describes the input from there on
        (``crop_top``, ``crop_left``: ``input_view``). ``first_ky`` / ``first_kx`` say
        which filter taps are kept (``filter_view``). Its padding on each side is at most
        the span of the strided outputs, ``(out - 1) * stride``, which is less than the
        input (or, when no tap meets the input, that span plus one before it and none
        after), so the kernels' scratch is bounded by their tensors. ``self`` when no
        tap is dropped. Taps whose span meets the input but whose strided positions all
        miss it are kept (harmless, and bounded)."""
        rows = _conv_cropped_axis(self.filter_h, self.dilation_h, self.pad_top, self.stride_h, self.out_h, self.in_h)
        cols = _conv_cropped_axis(self.filter_w, self.dilation_w, self.pad_left, self.stride_w, self.out_w, self.in_w)
        (first_h, filter_h, pad_top, skip_h, dilation_h) = rows
        (first_w, filter_w, pad_left, skip_w, dilation_w) = cols
        if (filter_h, filter_w) == (self.filter_h, self.filter_w) and not (skip_h or skip_w):
            return self
        in_h, in_w = self.in_h - skip_h, self.in_w - skip_w
        pad_bottom = max(0, (self.out_h - 1) * self.stride_h + (filter_h - 1) * dilation_h + 1 - in_h - pad_top)
        pad_right = max(0, (self.out_w - 1) * self.stride_w + (filter_w - 1) * dilation_w + 1 - in_w - pad_left)
        return WindowGeometry(
            self.batch, in_h, in_w, self.channels, filter_h, filter_w, self.stride_h, self.stride_w,
            dilation_h, dilation_w, self.out_h, self.out_w, pad_top, pad_bottom, pad_left, pad_right,
            self.crop_top + skip_h, self.crop_left + skip_w, self.first_ky + first_h, self.first_kx + first_w,
        )

    @property
    def is_pointwise(self) -> bool:
        """Whether every output pixel is the one input pixel at its own position: a 1x1
        window, stride 1, no padding, the whole input (a convolution is then a matmul of
        the input itself). False for a ``conv_cropped`` 1x1 window that starts inside
        the input or reads only the padding."""
        return (
            (self.filter_h, self.filter_w, self.stride_h, self.stride_w) == (1, 1, 1, 1)
            and not self.is_padded
            and (self.in_h, self.in_w) == (self.out_h, self.out_w)
            and not (self.crop_top or self.crop_left)
        )

    def input_view(self, x: np.ndarray) -> np.ndarray:
        """The part of the NHWC input ``x`` this geometry describes (``x`` itself unless
        ``conv_cropped`` skipped rows or columns that no tap reads): a view."""
        if not (self.crop_top or self.crop_left):
            return x
        return x[:, self.crop_top : self.crop_top + self.in_h, self.crop_left : self.crop_left + self.in_w]

    def filter_view(self, filters: np.ndarray) -> np.ndarray:
        """The taps of a ``[O or 1, KH, KW, I]`` filter that this geometry keeps (the
        filter itself for an uncropped geometry): a view."""
        if (self.first_ky, self.first_kx) == (0, 0) and filters.shape[1:3] == (self.filter_h, self.filter_w):
            return filters
        return filters[:, self.first_ky : self.first_ky + self.filter_h, self.first_kx : self.first_kx + self.filter_w]

    @property
    def padded_elements(self) -> int:
        """The values of the padded input (``padded_shape``), a Python int (no overflow)."""
        n, h, w, c = self.padded_shape
        return n * h * w * c

    def valid_counts(self) -> np.ndarray:
        """``[OH, OW, 1]`` float32: how many taps of each window fall inside the input.

        (TFLite's average and L2 pools divide by this count, not by the filter size.)
        """
        rows = _valid_taps(self.out_h, self.stride_h, self.pad_top, self.filter_h, self.dilation_h, self.in_h)
        cols = _valid_taps(self.out_w, self.stride_w, self.pad_left, self.filter_w, self.dilation_w, self.in_w)
        return (rows[:, None] * cols[None, :]).astype(np.float32)[:, :, None]


def _valid_taps(
    out_size: int, stride: int, pad_before: int, filter_size: int, dilation: int, in_size: int
) -> np.ndarray:
    """For each output position of one axis, the number of filter taps inside the input:
    the taps k in [0, filter_size) with ``0 <= o*stride - pad_before + k*dilation <
    in_size``, counted from the ends of that range (work of the output's size, whatever
    the filter's: a 2**31 - 1 wide filter costs nothing more)."""
    start = np.arange(out_size, dtype=np.int64) * stride - pad_before  # tap 0's position
    first = np.maximum(0, -(start // dilation))  # ceil(-start / dilation), at least 0
    last = np.minimum(filter_size - 1, (in_size - 1 - start) // dilation)
    return np.maximum(last - first + 1, 0)


def _cropped_axis(filter_size: int, dilation: int, pad: int, stride: int, out_size: int, in_size: int) -> tuple[int, int, int]:
    """(first tap kept, taps kept, new padding) of one axis: taps k whose positions
    ``o*stride + k*dilation - pad`` (o in 0..out_size-1) span a range that meets the input
    (a tap that falls between strided positions may be kept: harmless, and bounded)."""
    first = max(0, -(-(pad - (out_size - 1) * stride) // dilation))  # ceil
    last = min(filter_size - 1, (in_size - 1 + pad) // dilation)
    if first > last:  # no tap touches the input (cannot happen for a window that fits)
        first, last = 0, 0
    return first, last - first + 1, pad - first * dilation


def _conv_cropped_axis(
    filter_size: int, dilation: int, pad: int, stride: int, out_size: int, in_size: int
) -> tuple[int, int, int, int, int]:
    """``(first tap kept, taps kept, new padding, input rows skipped, new dilation)`` of one
    axis of ``WindowGeometry.conv_cropped``: the taps k whose positions ``o*stride +
    k*dilation - pad`` (o in 0..out_size-1) span a range that meets the input. When none
    does (a huge dilation can step over the whole input), one tap that reads only the
    padding: the output is the bias alone, as in TFLite."""
    first = max(0, -(-(pad - (out_size - 1) * stride) // dilation))  # ceil
    last = min(filter_size - 1, (in_size - 1 + pad) // dilation)
    if first > last:  # no tap meets the input: keep tap 0, entirely before it
        return 0, 1, (out_size - 1) * stride + 1, 0, 1
    taps = last - first + 1
    new_pad = pad - first * dilation
    skip = 0
    if new_pad < 0:  # the first tap kept starts inside the input: describe the input from there
        skip, new_pad = -new_pad, 0
    return first, taps, new_pad, skip, (dilation if taps > 1 else 1)


def _clipped_axis(offset: int, stride: int, out_size: int, in_size: int) -> tuple[slice, slice] | None:
    """Outputs ``o`` with ``0 <= o*stride + offset < in_size``, and the inputs they read."""
    first = max(0, -(offset // stride))  # ceil(-offset / stride), at least 0
    last = min(out_size - 1, (in_size - 1 - offset) // stride)
    if first > last:
        return None
    start = first * stride + offset
    return slice(first, last + 1), slice(start, start + (last - first) * stride + 1, stride)


def taps_inside_input(geometry: Any) -> Iterator[tuple[int, int, tuple[slice, ...], tuple[slice, ...]]]:
    """``(ky, kx, output_index, input_index)`` for every filter tap that sees the input,
    in TFLite's order (row-major: ky, then kx), with the output positions where it falls
    inside the input and the input pixels it reads there (NHWC slices; on an array of
    more axes they index the first four). Taps that see only the padding are skipped.

    ``geometry`` is any window geometry with TFLite's field names (``WindowGeometry``,
    the GPU's ``DepthwiseGeometry``): ``filter_h/w``, ``stride_h/w``, ``dilation_h/w``,
    ``pad_top``, ``pad_left``, ``out_h/w``, ``in_h/w``."""
    g, every = geometry, slice(None)
    for ky in range(g.filter_h):
        rows = _clipped_axis(ky * g.dilation_h - g.pad_top, g.stride_h, g.out_h, g.in_h)
        if rows is None:
            continue
        for kx in range(g.filter_w):
            cols = _clipped_axis(kx * g.dilation_w - g.pad_left, g.stride_w, g.out_w, g.in_w)
            if cols is None:
                continue
            yield ky, kx, (every, rows[0], cols[0], every), (every, rows[1], cols[1], every)


class PaddedInput:
    """The input with its border, in a buffer allocated once and refreshed per invoke.

    ``repeat`` > 1 also repeats every channel that many times (channel ``c`` becomes
    channels ``c*repeat .. c*repeat + repeat-1``): the geometry then describes the
    repeated input. A depthwise convolution with a depth multiplier uses it.
    """

    def __init__(
        self, geometry: WindowGeometry, dtype=np.float32, fill: float = 0.0, repeat: int = 1, always: bool = False
    ) -> None:
        self.geometry = geometry
        self.repeat = repeat
        if geometry.is_padded or repeat > 1 or always:  # always: a buffer of ours even without a border
            g = geometry
            n, h, w, c = g.padded_shape
            # Only the border is filled: the copies write every other value at each invoke.
            grouped = np.empty((n, h, w, c // repeat, repeat), dtype)  # [.., C, repeat]
            top, left, bottom, right = g.pad_top, g.pad_left, g.pad_top + g.in_h, g.pad_left + g.in_w
            for border in (grouped[:, :top], grouped[:, bottom:], grouped[:, top:bottom, :left], grouped[:, top:bottom, right:]):
                if border.size:
                    border.fill(fill)
            self.buffer = grouped.reshape(g.padded_shape)  # a view: [.., C*repeat]
            self.interior = grouped[:, g.pad_top : g.pad_top + g.in_h, g.pad_left : g.pad_left + g.in_w]
            if repeat == 1:
                self.interior = self.interior[..., 0]
            # One copy per repetition: each is a strided copy with long inner loops (a single
            # broadcast copy x[..., None] would loop over runs of `repeat` values).
            self.copies = [self.interior[..., r] for r in range(repeat)] if repeat > 1 else [self.interior]
        else:
            self.buffer = None
            self.interior = None

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The padded input for ``x`` (``x`` itself when there is nothing to do)."""
        if self.buffer is None:
            return x
        for interior in self.copies:
            interior[...] = x
        return self.buffer


def window_view(geometry: WindowGeometry, padded: np.ndarray) -> np.ndarray:
    """Every window of ``padded`` at once: a view ``[N, OH, OW, KH, KW, C]`` (no copy)."""
    g = geometry
    span_h = (g.filter_h - 1) * g.dilation_h + 1
    span_w = (g.filter_w - 1) * g.dilation_w + 1
    windows = sliding_window_view(padded, (span_h, span_w), axis=(1, 2))  # [N, H', W', C, span_h, span_w]
    windows = windows[
        :,
        : (g.out_h - 1) * g.stride_h + 1 : g.stride_h,
        : (g.out_w - 1) * g.stride_w + 1 : g.stride_w,
        :,
        :: g.dilation_h,
        :: g.dilation_w,
    ]
    return windows.transpose(0, 1, 2, 4, 5, 3)


def activation_bounds(activation: int) -> tuple[float, float] | None:
    """The clamp ``[low, high]`` of a fused activation, or None for no clamp.

    TFLite's float convolution, pooling and matmul kernels turn the fused activation
    into a range (``CalculateActivationRange``): RELU, RELU6 and RELU_N1_TO_1 clamp;
    every other value (TANH, SIGN_BIT) gives the full float range, i.e. is ignored
    (LiteRT 2.3 checked: a CONV_2D with fused TANH returns values outside [-1, 1]).
    FULLY_CONNECTED rejects those values instead; see its kernel.
    """
    if activation == ActivationFunctionType.RELU:
        return (0.0, np.inf)
    if activation == ActivationFunctionType.RELU6:
        return (0.0, 6.0)
    if activation == ActivationFunctionType.RELU_N1_TO_1:
        return (-1.0, 1.0)
    return None


def clamp(values: np.ndarray, bounds: tuple[float, float] | None) -> None:
    """Apply ``activation_bounds`` in place."""
    if bounds is None:
        return
    low, high = bounds
    if high == np.inf:
        np.maximum(values, low, out=values)
    else:
        np.clip(values, low, high, out=values)


#: Up to this many elements, constant operands (clamp bounds, tiled biases) are
#: materialized at the output's full size (see the module notes).
FULL_SIZE_LIMIT = 1 << 17

#: Above this many elements (16 MiB of float32) a one-sided clamp takes its bound as a
#: scalar, not as a full-size constant (faster up to here, 1.4x at 2**20 elements; above,
#: the constant would cost as much memory again as the output).
CLAMP_OPERAND_LIMIT = 1 << 22

#: Up to this many elements a two-sided clamp is maximum + minimum with full-size
#: bounds (two cheap calls); above, one ``np.clip`` pass is faster.
SMALL_CLIP_LIMIT = 1 << 13


def node_geometry(kernel, input_shape, window: tuple[int, int], dilation: tuple[int, int] = (1, 1)) -> "WindowGeometry":
    """The ``WindowGeometry`` of a node's padding and strides (``kernel.params``), or
    the kernel's "not supported" error saying why the window does not fit."""
    params = kernel.params
    try:
        return WindowGeometry.of(input_shape, window, params.padding, (params.stride_h, params.stride_w), dilation)
    except ValueError as error:
        raise kernel.unsupported(str(error)) from None


#: TFLite's CONV_2D and DEPTHWISE_CONV_2D take strides and dilation factors up to this
#: (``TF_LITE_ENSURE(context, params->stride_height <= INT16_MAX)`` ... in their Prepare).
INT16_MAX = 32767


def check_conv_window_params(kernel, dilation: tuple[int, int]) -> None:
    """The kernel's "not supported" error for a CONV_2D / DEPTHWISE_CONV_2D stride or
    dilation factor above ``INT16_MAX``, as LiteRT refuses them (checked by its Prepare)."""
    params = kernel.params
    for name, value in (
        ("stride_h", params.stride_h),
        ("stride_w", params.stride_w),
        ("dilation_h_factor", dilation[0]),
        ("dilation_w_factor", dilation[1]),
    ):
        if int(value) > INT16_MAX:
            raise kernel.unsupported(f"{name} is {value}; TFLite takes at most {INT16_MAX} (INT16_MAX)")


def conv_layout(kernel, x, filters, bias) -> tuple[int, int, int, int, int]:
    """(out_channels, KH, KW, filter in-channels, groups) of a CONV_2D node, checked as
    TFLite checks them: 4-D NHWC input and OHWI filter, input channels a multiple of
    the filter's in-channels (groups), output channels a multiple of the groups, one
    bias value per output channel."""
    if len(x.shape) != 4 or len(filters.shape) != 4:
        raise kernel.unsupported(
            f"input and filter must be 4-D (NHWC, OHWI), got {list(x.shape)} and {list(filters.shape)}"
        )
    out_channels, kh, kw, group_in = (int(d) for d in filters.shape)
    in_channels = int(x.shape[3])
    if group_in <= 0 or in_channels <= 0 or in_channels % group_in:
        raise kernel.unsupported(
            f"input channels ({in_channels}) must be a positive multiple of the filter's in-channels ({group_in})"
        )
    groups = in_channels // group_in
    if out_channels % groups:
        raise kernel.unsupported(
            f"grouped convolution: output channels ({out_channels}) must be a multiple of groups ({groups})"
        )
    if bias is not None and bias.num_elements != out_channels:
        raise kernel.unsupported(f"bias has {bias.num_elements} elements, expected {out_channels}")
    return out_channels, kh, kw, group_in, groups


def depthwise_layout(kernel, x, filters, bias) -> tuple[int, int, int, int]:
    """(KH, KW, output channels, depth multiplier) of a DEPTHWISE_CONV_2D node, checked
    as TFLite checks them: 4-D NHWC input, a [1, KH, KW, C*M] filter whose channels are
    a multiple of the input's, one bias value per output channel."""
    if len(x.shape) != 4 or len(filters.shape) != 4 or filters.shape[0] != 1:
        raise kernel.unsupported(
            f"input must be 4-D NHWC and filter [1, KH, KW, C*M], got {list(x.shape)} and {list(filters.shape)}"
        )
    _, kh, kw, out_channels = (int(d) for d in filters.shape)
    in_channels = int(x.shape[3])
    if in_channels <= 0 or out_channels % in_channels:
        raise kernel.unsupported(
            f"filter channels ({out_channels}) must be a multiple of the input channels ({in_channels})"
        )
    if bias is not None and bias.num_elements != out_channels:
        raise kernel.unsupported(f"bias has {bias.num_elements} elements, expected {out_channels}")
    return kh, kw, out_channels, out_channels // in_channels


def require_inputs(kernel, *roles: str) -> None:
    """The kernel's "not supported" error naming the first of the node's leading inputs
    (``roles``, in order) that it lacks (index -1, or no such position). The interpreter
    checks the declared arity before prepare; this also holds where a delegate prepares
    the node itself (the GPU delegate's partitions prepare the CPU kernels of the nodes
    they fold)."""
    for position, role in enumerate(roles):
        if position >= len(kernel.inputs) or kernel.inputs[position] is None:
            raise kernel.unsupported(f"the {role} (input {position}) is missing")


def remember_shapes(kernel) -> None:
    """Record, at the end of ``prepare``, the shapes of the node's tensors that the kernel
    planned its buffers and views for (``check_shapes`` compares them in ``bind``)."""
    kernel.prepared_shapes = tuple(None if t is None else tuple(t.shape) for t in (*kernel.inputs, *kernel.outputs))


def check_shapes(kernel) -> None:
    """In ``bind`` (after every node is prepared, before any runs): the kernel's error when
    one of its tensors no longer has the shape it was prepared for, i.e. a node prepared
    later resized it: a tensor that a node writes after an earlier node read it (a model
    input, or another node's output, written again), or two nodes writing the same
    tensor. The kernel's buffers and views fit the old shape; TFLite would read or
    write past the tensor's memory. Dynamic tensors (resized at invoke) are not checked."""
    shapes = getattr(kernel, "prepared_shapes", None)
    if shapes is None:
        return
    tensors = (*kernel.inputs, *kernel.outputs)
    inputs = len(kernel.inputs)
    for position, (tensor, shape) in enumerate(zip(tensors, shapes)):
        if tensor is None or shape is None or tensor.is_dynamic:
            continue
        data = tensor.data
        now = tuple(tensor.shape) if data is None or tuple(data.shape) == tuple(tensor.shape) else tuple(data.shape)
        if now != shape:
            role = f"input {position}" if position < inputs else f"output {position - inputs}"
            raise kernel.unsupported(
                f"{role} {tensor.name!r} has shape {list(now)}, but the node was prepared for {list(shape)}: "
                f"a node prepared later resized it (a tensor written after this node reads it, or written "
                f"by two nodes)"
            )


def same_arrays(cached: tuple | None, arrays: tuple) -> bool:
    """Whether ``cached`` holds exactly the array objects ``arrays`` (identity, not values):
    how kernels tell that views they made of arena buffers still hold (``tensor.data``
    stays the same array object until the next ``allocate_tensors``)."""
    return cached is not None and len(cached) == len(arrays) and all(a is b for a, b in zip(cached, arrays))



def reshaped_view(array: np.ndarray, shape) -> np.ndarray:
    """``array.reshape(shape)``, which must be a view (a kernel keeps it to write or read
    the array through it later): raises ValueError where numpy would copy."""
    view = array.reshape(shape)
    if view.size and not np.may_share_memory(view, array):
        raise ValueError(f"an array of shape {array.shape} and strides {array.strides} has no view of shape {shape}")
    return view


#: Runs of up to this many bytes are copied as one void "record" each (``record_pair``).
RECORD_LIMIT = 512


def record_pair(target: np.ndarray, source: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(target, source)`` for ``target[...] = source``, as views whose elements are each a
    whole contiguous run of the last axis (a void dtype of the run's size) when both
    last axes are contiguous runs of the same length and dtype: numpy then copies one
    record per run instead of looping over its values, 1.2-4x faster for runs of
    2-48 floats between strided layouts (im2col, channel padding, concatenation along
    channels). The bytes copied are the same. Otherwise the arrays themselves."""
    if (
        target.ndim == 0
        or target.shape != source.shape
        or target.dtype != source.dtype
        or target.dtype.hasobject
        or target.strides[-1] != target.itemsize
        or source.strides[-1] != source.itemsize
        or target.shape[-1] * target.itemsize > RECORD_LIMIT
        or target.shape[-1] < 2
    ):
        return target, source
    record = np.dtype((np.void, target.shape[-1] * target.itemsize))
    try:
        return target.view(record)[..., 0], source.view(record)[..., 0]
    except ValueError:  # (a layout numpy refuses to view; keep the plain copy)
        return target, source


def filled(value: float, size: int, dtype: str = "float32") -> np.ndarray:
    """A read-only 1-D array of ``size`` copies of ``value`` (shared between kernels when
    small: the cache holds at most 64 arrays of at most 64 KiB)."""
    if size * np.dtype(dtype).itemsize <= 1 << 16:
        return _filled(value, size, dtype)
    array = np.full(size, value, dtype=dtype)
    array.flags.writeable = False
    return array


@functools.lru_cache(maxsize=64)
def _filled(value: float, size: int, dtype: str) -> np.ndarray:
    array = np.full(size, value, dtype=dtype)
    array.flags.writeable = False
    return array


def tiled_rows(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``values`` (e.g. a bias per channel) repeated along the last axis of ``shape`` (whose
    length is a multiple of theirs) and then over the other axes: the operand of an
    in-place ``np.add(out, operand, out=out)`` that adds ``values[i % len(values)]`` at
    last-axis position i. Contiguous when ``shape`` has at most ``FULL_SIZE_LIMIT``
    elements, else a broadcast view of one tiled row."""
    values = np.asarray(values).reshape(-1)
    row = np.tile(values, shape[-1] // values.size) if values.size != shape[-1] else values
    if int(np.prod(shape, dtype=np.int64)) <= FULL_SIZE_LIMIT:
        return np.ascontiguousarray(np.broadcast_to(row, shape))
    return np.broadcast_to(np.ascontiguousarray(row), shape)


#: ``long_rows`` views a target as rows of at least about this many values.
LONG_ROW = 4096


def long_rows(target: np.ndarray, operand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(target view, operand)`` for ``np.add(view, operand, out=view)`` doing what
    ``np.add(target, operand, out=target)`` does, where ``operand`` (from ``tiled_rows``)
    repeats one row along ``target``'s last axis: when it is a broadcast of a short row
    (a large target), the target is viewed as ``[-1, B*N]`` (B rows of N values at once,
    B dividing the row count) and the row tiled B times, so that numpy's inner loop runs
    over about LONG_ROW values rather than N ([9216, 16] float32: a bias add 40 -> 10 us).
    Otherwise both unchanged."""
    if target.ndim != 2 or operand.ndim != 2 or operand.strides[0] != 0 or not target.flags.c_contiguous:
        return target, operand
    rows, width = target.shape
    repeat = min(rows, max(1, LONG_ROW // max(width, 1)))
    while rows % repeat:
        repeat -= 1
    if repeat == 1:
        return target, operand
    return target.reshape(rows // repeat, repeat * width), np.tile(np.ascontiguousarray(operand[0]), repeat)


def make_clamp(
    bounds: tuple[float, float] | None, out: np.ndarray, source: np.ndarray | None = None
) -> Callable[[], None] | None:
    """``clamp(out, bounds)`` bound to the buffer ``out`` (or, with ``source``, ``out =
    clamp(source)``): a function of no argument, or None when ``bounds`` is None. Bit for
    bit what ``clamp`` (``np.maximum`` / ``np.clip``) computes: NaN stays NaN, and a
    two-sided clamp keeps ``-0.0`` as ``np.clip`` does (``maximum(low, x)`` returns its
    second operand when both compare equal)."""
    if bounds is None:
        return None
    source = out if source is None else source
    low, high = bounds
    dtype = out.dtype.name
    if high == np.inf:
        maximum = np.maximum
        if out.size > CLAMP_OPERAND_LIMIT:  # (a full-size operand would double a huge output's memory)
            low_value = out.dtype.type(low)
            return lambda: maximum(source, low_value, out=out)
        lows = filled(low, out.size, dtype).reshape(out.shape)
        return lambda: maximum(source, lows, out=out)
    if out.size > SMALL_CLIP_LIMIT:
        clip, low, high = np.clip, out.dtype.type(low), out.dtype.type(high)
        return lambda: clip(source, low, high, out=out)
    lows = filled(low, out.size, dtype).reshape(out.shape)
    highs = filled(high, out.size, dtype).reshape(out.shape)
    maximum, minimum = np.maximum, np.minimum

    def clamp_small() -> None:
        maximum(lows, source, out=out)
        minimum(highs, out, out=out)

    return clamp_small
