"""Helpers shared by the CPU kernels: fused activations and TFLite's padding arithmetic."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schema.enums import ActivationFunctionType, Padding


def apply_activation(values: np.ndarray, activation: int) -> np.ndarray:
    """Apply a fused activation in place (float kernels) and return ``values``.

    Matches TFLite's ``ActivationFunctionWithMinMax``: ``min(max(x, lo), hi)``.
    """
    if activation == ActivationFunctionType.NONE:
        return values
    if activation == ActivationFunctionType.RELU:
        np.maximum(values, 0, out=values)
    elif activation == ActivationFunctionType.RELU6:
        np.clip(values, 0, 6, out=values)
    elif activation == ActivationFunctionType.RELU_N1_TO_1:
        np.clip(values, -1, 1, out=values)
    elif activation == ActivationFunctionType.TANH:
        np.tanh(values, out=values)
    else:
        raise ValueError(f"fused activation {ActivationFunctionType(activation).name} is not supported")
    return values


def check_activation(activation: int, op_name: str) -> None:
    """Reject at prepare time a fused activation that ``apply_activation`` cannot do."""
    supported = (
        ActivationFunctionType.NONE,
        ActivationFunctionType.RELU,
        ActivationFunctionType.RELU6,
        ActivationFunctionType.RELU_N1_TO_1,
        ActivationFunctionType.TANH,
    )
    if activation not in supported:
        raise ValueError(f"{op_name}: fused activation {ActivationFunctionType(activation).name} is not supported")


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
