"""ARG_MAX and ARG_MIN: the index of the largest (smallest) value along one axis.

TFLite's reference kernel (``kernels/arg_min_max.cc``, ``reference/arg_min_max.h``)
walks the axis keeping the first element and replacing it only when the candidate is
strictly better, so:

- ties give the first index;
- NaN ranks below every number for ARG_MAX and above every number for ARG_MIN (a NaN
  never replaces a number, a number always replaces a NaN; all NaN gives index 0),
  as TensorFlow does. (LiteRT's SIMD path for the last axis, used for float rows of 4
  or more, does not follow this rule for NaN; the reference rule is implemented here.)
- the axis is one int32 or int64 value, negative counts from the end; a non-constant
  axis makes the output dynamic; the output type (int32 or int64) is ``output_type``.

Versions: v1 float32, int32, uint8 (raw values: the index of the largest raw value is
that of the largest real value, whatever the scale); v2 int8 (a quantized-only version,
not registered here); v3 bool.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType, tensor_type_name

T = TensorType

INPUT_TYPES_OF_VERSION = {
    1: (T.FLOAT32, T.INT32, T.UINT8),
    3: (T.FLOAT32, T.INT32, T.UINT8, T.BOOL),
}


def normalize_axis(axis_tensor_data: np.ndarray, rank: int) -> int:
    axis = int(np.asarray(axis_tensor_data).reshape(-1)[0])
    resolved = axis + rank if axis < 0 else axis
    if not 0 <= resolved < rank:
        raise ValueError(f"axis {axis} is out of range for an input of rank {rank}")
    return resolved


@register(BuiltinOperator.ARG_MAX, 1, 1)  # v1: float32, int32, uint8
@register(BuiltinOperator.ARG_MIN, 1, 1)
@register(BuiltinOperator.ARG_MAX, 3, 3)  # v3: bool input (v2, int8, is quantized: not here)
@register(BuiltinOperator.ARG_MIN, 3, 3)
class ArgMinMax(CpuKernel):
    """ARG_MAX and ARG_MIN, versions 1 and 3."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        data, axis = self.inputs
        allowed = INPUT_TYPES_OF_VERSION.get(self.version, INPUT_TYPES_OF_VERSION[1])
        self.require_types(data, *allowed)
        self.require_types(axis, T.INT32, T.INT64, role="axis")
        if axis.num_elements != 1:
            raise self.unsupported(f"the axis tensor must hold one value, it has shape {list(axis.shape)}")
        if len(data.shape) < 1:
            raise self.unsupported("the input must have at least one dimension")
        output_type = self.params.output_type if self.params is not None else T.FLOAT32
        if output_type not in (T.INT32, T.INT64):
            raise self.unsupported(f"output_type {tensor_type_name(output_type)}: only INT32 and INT64 are supported")
        self.require_types(self.outputs[0], output_type, role="output")
        self.is_max = self.op == BuiltinOperator.ARG_MAX
        self.is_float = data.type == T.FLOAT32
        if axis.is_constant:
            self.axis = self._checked_axis(axis.data, data.shape)
            self.outputs[0].resize(data.shape[: self.axis] + data.shape[self.axis + 1 :])
        else:
            self.axis = None
            self.outputs[0].set_dynamic()

    def _checked_axis(self, axis_data: np.ndarray, shape: tuple[int, ...]) -> int:
        axis = normalize_axis(axis_data, len(shape))
        if shape[axis] == 0:
            raise ValueError("cannot compute ArgMin/ArgMax over an empty axis")
        return axis

    def invoke(self) -> None:
        x = self.inputs[0].data
        if self.axis is not None:
            out = self.outputs[0].data
            if out.size:
                self._arg(x, self.axis, out)
            return
        axis = self._checked_axis(self.inputs[1].data, x.shape)
        out = np.empty(x.shape[:axis] + x.shape[axis + 1 :], dtype=self.outputs[0].dtype)
        if out.size:
            self._arg(x, axis, out)
        self.outputs[0].set_data(out)

    def _arg(self, x: np.ndarray, axis: int, out: np.ndarray) -> None:
        out[...] = np.argmax(x, axis=axis) if self.is_max else np.argmin(x, axis=axis)
        if self.is_float and np.isnan(x.max()):  # one fast pass; NaN is rare
            self._skip_nan_like_tflite(x, axis, out)

    def _skip_nan_like_tflite(self, x: np.ndarray, axis: int, out: np.ndarray) -> None:
        """numpy picks the first NaN; TFLite picks the first best number (0 if all NaN).

        Only the slots where numpy picked a NaN are recomputed.
        """
        picked = np.take_along_axis(x, np.expand_dims(out, axis).astype(np.intp), axis=axis)
        bad = np.isnan(picked).reshape(out.shape)
        rows = np.moveaxis(x, axis, -1)[bad]  # (slots with a NaN, axis length)
        is_number = ~np.isnan(rows)
        cleaned = np.where(is_number, rows, -np.inf if self.is_max else np.inf)
        best = cleaned.max(axis=-1, keepdims=True) if self.is_max else cleaned.min(axis=-1, keepdims=True)
        out[bad] = np.argmax(is_number & (cleaned == best), axis=-1)  # first number equal to the best
