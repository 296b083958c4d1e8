"""Helpers shared by the CPU kernels: fused activations and TFLite's padding arithmetic."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schema.enums import ActivationFunctionType, Padding


def activation_range(activation: int) -> tuple[float | None, float | None]:
    """(min, max) clamp of a fused activation in float kernels (TFLite's
    ``CalculateActivationRange``): TANH and SIGN_BIT, like NONE, clamp nothing."""
    if activation == ActivationFunctionType.RELU:
        return 0.0, None
    if activation == ActivationFunctionType.RELU6:
        return 0.0, 6.0
    if activation == ActivationFunctionType.RELU_N1_TO_1:
        return -1.0, 1.0
    if activation in (ActivationFunctionType.NONE, ActivationFunctionType.TANH, ActivationFunctionType.SIGN_BIT):
        return None, None
    raise ValueError(f"unknown fused activation {activation}")


def apply_activation(values: np.ndarray, activation: int) -> np.ndarray:
    """Apply a fused activation in place (float kernels) and return ``values``.

    Matches TFLite's ``ActivationFunctionWithMinMax``: ``min(max(x, lo), hi)``.
    """
    low, high = activation_range(activation)
    if low is not None and high is not None:
        np.clip(values, low, high, out=values)
    elif low is not None:
        np.maximum(values, low, out=values)
    return values


def check_activation(activation: int, op_name: str) -> None:
    """Reject at prepare time a value that is not a fused activation."""
    try:
        activation_range(activation)
    except ValueError:
        raise ValueError(f"{op_name}: unknown fused activation {activation}") from None


def effective_filter_size(filter_size: int, dilation: int) -> int:
    return (filter_size - 1) * dilation + 1


def compute_out_size(padding: int, in_size: int, filter_size: int, stride: int, dilation: int = 1) -> int:
    """Output extent of a window op along one axis (TFLite's ``ComputeOutSize``)."""
    effective = effective_filter_size(filter_size, dilation)
    if stride <= 0:
        raise ValueError(f"stride must be positive, got {stride}")
    if padding == Padding.SAME:
        return (in_size + stride - 1) // stride
    if padding == Padding.VALID:
        return (in_size + stride - effective) // stride
    raise ValueError(f"unknown padding {padding}")


@dataclass(frozen=True)
class AxisPadding:
    """Padding of one spatial axis: ``before`` + ``after`` (after = before + offset)."""

    out_size: int
    before: int
    after: int


def compute_padding(padding: int, in_size: int, filter_size: int, stride: int, dilation: int = 1) -> AxisPadding:
    """Output size and padding of one axis (TFLite's ``ComputePaddingHeightWidth``).

    The extra padding pixel for an odd total goes after (TFLite's padding offset).
    """
    out_size = compute_out_size(padding, in_size, filter_size, stride, dilation)
    effective = effective_filter_size(filter_size, dilation)
    total = max((out_size - 1) * stride + effective - in_size, 0)
    return AxisPadding(out_size, total // 2, total - total // 2)


def broadcast_shape(*shapes) -> tuple[int, ...]:
    """numpy broadcasting of shapes, with a clear error."""
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise ValueError(f"shapes {[list(s) for s in shapes]} cannot be broadcast together") from None
