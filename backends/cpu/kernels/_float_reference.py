"""TFLite's reference float loops of CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED, for
the inputs where a fast sum (BLAS, einsum) could overflow differently; and the guard that
tells those inputs apart at the cost of one BLAS dot. Only those three kernels use it.

What TFLite's reference kernels do (``internal/reference/conv.h``,
``depthwiseconv_float.h``, ``fully_connected.h``; ``kernel_util.h``, ``common.h``):

- every output is ``total = 0.f; total += input * filter`` over its taps in order (conv:
  filter row, filter column, input channel; depthwise: row, column; FC: depth), taps
  outside the input *skipped* (not multiplied by a padded 0: ``0 * inf`` would be NaN),
  in float32 with no fused multiply-add (``-inf + inf`` gives NaN), then
  ``ActivationFunctionWithMinMax(total + bias_value, min, max)``, that is
  ``std::min(std::max(x, min), max)``, which keeps a NaN (``std::max(NaN, min)`` returns
  its first operand, and so does ``std::min``);
- ``(min, max)`` comes from ``CalculateActivationRange<float>``: RELU [0, FLT_MAX],
  RELU6 [0, 6], RELU_N1_TO_1 [-1, 1], and every other value (NONE, TANH, SIGN_BIT)
  [lowest, FLT_MAX]. So a fused TANH is not applied, and even with no activation an
  output of +-inf comes out as +-FLT_MAX.

Why a guard: BLAS sums in its own order and with FMA (``fma(a, b, -inf)`` is -inf where
TFLite's ``-inf + a*b`` with ``a*b = inf`` is NaN), and an overflow in one order need not
happen in another. All of that only matters when some partial sum can reach the float32
range. By Cauchy-Schwarz every partial sum of every output is at most
``sqrt(sum(x**2)) * max_o ||w_o|| + max|bias|`` in magnitude (``w_o``: the weights that
output o multiplies), so when that is below ``SAFE_MAGNITUDE`` (a quarter of FLT_MAX)
no order overflows, every output is finite, and the fast path's clamp to [lowest,
FLT_MAX] changes nothing. ``square_limit`` turns the bound into a limit on the input's
sum of squares, which one float32 BLAS dot gives at invoke (NaN or inf in the input make
it NaN or inf: never below the limit). The factor 4 covers the worst-case rounding of
that dot (inputs of up to 2**23 values: at most a factor sqrt(2) on the norm) and of
the sums themselves (up to 2**24 terms: at most a factor e). Inputs above the limit run
the loops here (slow, exact). The dot itself notes a float overflow (numpy's
RuntimeWarning) when the input holds values of about 1e19 or more.
"""

from __future__ import annotations

import math

import numpy as np

from backends.cpu.common import calculate_activation_range
from backends.cpu.kernels._window import WindowGeometry, taps_inside_input

FLT_MAX = float(np.finfo(np.float32).max)

#: Partial sums bounded by this magnitude cannot overflow float32 in any order (a quarter
#: of FLT_MAX: room for the rounding of the sums and of the guard's dot; module notes).
SAFE_MAGNITUDE = 2.0**126


def activation_range(activation: int) -> tuple[float, float]:
    """TFLite's ``CalculateActivationRange<float>``: the ``(min, max)`` of the final clamp."""
    return calculate_activation_range(activation, np.float32)


def max_row_norm(weights_by_output: np.ndarray) -> float:
    """``max_o ||w_o||`` of a ``[outputs, taps]`` matrix, or a bound just above it (inf or
    NaN when a weight is not finite).

    float32 weights are summed in float32, with no float64 copy (the weights of a large
    model are read once): each row's sum of ``n`` squares is then within ``(n + 1) *
    2**-24`` of the exact one, relatively (any order of the additions), and within ``n *
    2**-149`` absolutely (squares below the normal range), so ``s * (1 + (n + 1) *
    2**-23) + n * 2**-126`` is above it (n up to 2**20). Where a square overflows float32
    (a weight beyond 1.8e19) the sums are done again in float64."""
    rows = np.asarray(weights_by_output)
    if rows.size == 0:
        return 0.0
    taps = rows.shape[1]
    if rows.dtype == np.float32 and taps <= 1 << 20:
        with np.errstate(over="ignore", invalid="ignore"):
            largest = float(np.max(np.einsum("ij,ij->i", rows, rows)))
        if not math.isinf(largest):  # (NaN: a NaN weight, as in float64)
            return math.sqrt(largest * (1.0 + (taps + 1) * 2.0**-23) + taps * 2.0**-126)
    with np.errstate(invalid="ignore"):  # (a signalling NaN weight: NaN, without a warning)
        rows = np.asarray(weights_by_output, np.float64)
    return math.sqrt(float(np.max(np.einsum("ij,ij->i", rows, rows))))


def norm_bound(values: np.ndarray) -> float:
    """An upper bound of ``max_o ||w_o||`` (or of ``max |bias|``) at the cost of one BLAS
    dot: the norm of all the values (inf when their float32 sum of squares overflows)."""
    flat = np.ascontiguousarray(values).reshape(-1)
    with np.errstate(over="ignore"):
        return math.sqrt(float(flat.dot(flat)))


def square_limit(weight_norm: float, bias_max: float) -> float:
    """The input sums of squares ``s`` with ``s < limit`` for which no partial sum can
    reach ``SAFE_MAGNITUDE`` (``sqrt(s) * weight_norm + bias_max`` below it). -1 (no
    input is safe) when a weight or the bias is not finite or the bias alone is too big;
    inf when every weight is 0 (only a NaN or infinite input is then unsafe: its sum of
    squares is NaN or inf, and ``inf < inf`` is false): the same when the limit is above
    the float32 range."""
    if not (math.isfinite(weight_norm) and math.isfinite(bias_max)) or bias_max >= SAFE_MAGNITUDE:
        return -1.0
    limit = math.inf if weight_norm == 0.0 else ((SAFE_MAGNITUDE - bias_max) / weight_norm) ** 2
    # The sum of squares is a float32, compared with the limit as a float32: above the
    # float32 range the limit is inf (any finite sum is then safe; casting a larger
    # Python float would overflow, with a warning).
    return limit if limit <= FLT_MAX else math.inf


def bias_max(bias: np.ndarray | None) -> float:
    """``max |bias|`` in float64 (0 without a bias; NaN when a bias value is NaN)."""
    if bias is None or bias.size == 0:
        return 0.0
    with np.errstate(invalid="ignore"):  # (a signalling NaN: NaN, without a warning)
        return float(np.max(np.abs(np.asarray(bias, np.float64))))


def _finish(total: np.ndarray, bias: np.ndarray | None, activation: int, out: np.ndarray) -> None:
    """``out = min(max(total + bias, min), max)``; NaN stays NaN (as ``np.clip``)."""
    if bias is not None:
        np.add(total, bias.reshape(-1), out=total)
    low, high = activation_range(activation)
    np.clip(total, np.float32(low), np.float32(high), out=out)


def conv_reference(
    x: np.ndarray, filters: np.ndarray, bias: np.ndarray | None, geometry: WindowGeometry, activation: int,
    out: np.ndarray,
) -> None:
    """TFLite's reference float ``Conv`` (grouped: ``groups = C / filter in-channels``) into
    ``out`` ``[N, OH, OW, O]``, vectorized over the outputs, looping over the taps and
    input channels in TFLite's order. ``geometry`` may be ``conv_cropped``: its views of
    ``x`` and ``filters`` are taken here."""
    x, filters = geometry.input_view(x), geometry.filter_view(filters)
    out_channels, _, _, group_in = filters.shape
    per_group = out_channels // (x.shape[3] // group_in)
    first = (np.arange(out_channels) // per_group) * group_in  # each output's group, first channel
    total = np.zeros(out.shape, np.float32)
    product = np.empty(out.shape, np.float32)
    with np.errstate(all="ignore"):
        for ky, kx, out_index, in_index in taps_inside_input(geometry):
            pixels, target, part = x[in_index], total[out_index], product[out_index]
            for i in range(group_in):
                np.multiply(pixels[..., first + i], filters[:, ky, kx, i], out=part)
                np.add(target, part, out=target)
        _finish(total, bias, activation, out)


def depthwise_reference(
    x: np.ndarray, filters: np.ndarray, bias: np.ndarray | None, geometry: WindowGeometry, activation: int,
    out: np.ndarray,
) -> None:
    """TFLite's reference float ``DepthwiseConv`` into ``out`` ``[N, OH, OW, C*M]``: output
    channel o reads input channel ``o // M``; the taps in TFLite's order. ``geometry`` may
    be ``conv_cropped``: its views of ``x`` and ``filters`` are taken here."""
    x, filters = geometry.input_view(x), geometry.filter_view(filters)
    out_channels = filters.shape[3]
    source = np.arange(out_channels) // (out_channels // x.shape[3])
    total = np.zeros(out.shape, np.float32)
    product = np.empty(out.shape, np.float32)
    with np.errstate(all="ignore"):
        for ky, kx, out_index, in_index in taps_inside_input(geometry):
            target, part = total[out_index], product[out_index]
            np.multiply(x[in_index][..., source], filters[0, ky, kx], out=part)
            np.add(target, part, out=target)
        _finish(total, bias, activation, out)


def fully_connected_reference(
    rows: np.ndarray, weights: np.ndarray, bias: np.ndarray | None, activation: int, out: np.ndarray
) -> None:
    """TFLite's reference float ``FullyConnected``: ``rows`` ``[batch, depth]``, ``weights``
    ``[units, depth]``, into ``out`` ``[batch, units]``, the depth in order."""
    total = np.zeros(out.shape, np.float32)
    product = np.empty(out.shape, np.float32)
    with np.errstate(all="ignore"):
        for d in range(weights.shape[1]):
            np.multiply(rows[:, d, None], weights[:, d], out=product)
            np.add(total, product, out=total)
        _finish(total, bias, activation, out)


class OverflowGuard:
    """For the float kernels with an overflow guard (CONV_2D, DEPTHWISE_CONV_2D,
    FULLY_CONNECTED): they set ``square_limit`` at prepare from constant weights, else
    it is computed from each invoke's weights and bias."""

    square_limit: float | None

    def current_square_limit(self) -> float:
        """``square_limit``, or the same bound from this invoke's weights and bias."""
        if self.square_limit is not None:
            return self.square_limit
        bias = self.inputs[2].data if self.has_bias else None
        return square_limit(norm_bound(self.inputs[1].data), 0.0 if bias is None else norm_bound(bias))
