"""SHAPE, RANK, FILL, RANGE, WHERE: tensors made from shapes, or shapes made from values."""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.reshape import (
    INDEX_TYPES,
    MOVABLE_TYPES,
    checked_bytes,
    inputs_pending,
    int_values,
    quantization_params,
    require_int16_zero_point_0,
    require_same_quantization,
)
from schema.enums import BuiltinOperator, TensorType

T = TensorType


class _ShapeOf(CpuKernel):
    """A value known from the input's shape alone.

    As in TFLite the value is published at prepare time (a constant, so that chains
    such as SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE fold). When the input is a dynamic
    tensor (its shape known only at invoke) the node computes it at invoke instead.
    """

    def value(self, shape: tuple[int, ...]) -> np.ndarray:
        raise NotImplementedError

    def publish(self) -> None:
        x, out = self.inputs[0], self.outputs[0]
        if x.is_dynamic:
            out.resize(self.value(x.shape).shape)
        else:
            out.set_constant(self.value(x.shape))

    def invoke(self) -> None:
        self.outputs[0].data[...] = self.value(self.inputs[0].data.shape)


# v1: int32 or int64 output (out_type).
@register(BuiltinOperator.SHAPE, 1, 1)
class Shape(_ShapeOf):
    """SHAPE v1: the input's shape as an int32 or int64 vector (``out_type``)."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        out = self.outputs[0]
        out_type = self.params.out_type if self.params is not None else None
        if out_type not in (T.INT32, T.INT64):
            name = T(out_type).name if out_type is not None else None
            raise self.unsupported(f"out_type {name} is not int32 or int64")
        self.require_types(out, out_type, role="output")
        self.publish()

    def value(self, shape):
        return np.array(shape, dtype=self.outputs[0].dtype)


# v1: the rank as an int32 scalar.
@register(BuiltinOperator.RANK, 1, 1)
class Rank(_ShapeOf):
    """RANK v1: the input's number of dimensions (int32 scalar)."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        self.require_types(self.outputs[0], T.INT32, role="output")
        self.publish()

    def value(self, shape):
        return np.array(len(shape), dtype=np.int32)


#: FILL's values beyond MOVABLE_TYPES, float16, string and complex64 (LiteRT 2.3).
FILL_EXTRA_TYPES = (T.BFLOAT16, T.UINT16, T.UINT32, T.FLOAT64)


# v1: float32, int32, int64 values; v2: bool, string; v3: int8, int16; v4: float16. v5: LiteRT
# 2.3 registers it (TFLite's tables predate it); its kernel adds bfloat16, uint16, uint32 and
# float64 values, and so does this one at every version.
@register(BuiltinOperator.FILL, 1, 5)
class Fill(CpuKernel):
    """FILL v1-v5: a tensor of shape ``dims`` filled with the scalar ``value``."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        dims, value, out = self.inputs[0], self.inputs[1], self.outputs[0]
        self.require_types(dims, *INDEX_TYPES, role="dims")
        self.require_types(value, *MOVABLE_TYPES, T.FLOAT16, T.STRING, T.COMPLEX64, *FILL_EXTRA_TYPES, role="value")
        self.require_types(out, value.type, role="output")
        if len(dims.shape) != 1:
            raise self.unsupported(f"dims must be a vector, it has shape {list(dims.shape)}")
        if len(value.shape) != 0:
            raise self.unsupported(f"value must be a scalar, it has shape {list(value.shape)}")
        require_same_quantization(self, value, out)
        require_int16_zero_point_0(self, value)
        self.from_values = not dims.is_constant
        if self.from_values:
            out.set_dynamic()
            return
        out.resize(self.shape())

    def shape(self) -> list[int]:
        shape = int_values(self.inputs[0])
        if any(d < 0 for d in shape):
            raise self.unsupported(f"dims {shape} must not be negative")
        return shape

    def invoke(self) -> None:
        out = self.outputs[0]
        if self.from_values:
            shape = self.shape()
            checked_bytes(self, shape, out.dtype, f"output {out.name!r}")
            out.set_data(np.empty(shape, out.dtype))
        # ``[()]`` takes the element: a string's ``bytes`` (``fill`` with a 0-d object array
        # would store the array itself).
        out.data.fill(self.inputs[1].data.reshape(())[()])


RANGE_TYPES = (T.FLOAT32, T.INT32, T.INT64, T.INT8, T.INT16)


# v1: float32, int32 (and unquantized int8/int16); v2: int64.
@register(BuiltinOperator.RANGE, 1, 2)
class Range(CpuKernel):
    """RANGE v1-v2: ``start, start + delta, ...`` up to (not including) ``limit``."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        start, limit, delta = self.inputs
        self.require_types(start, *RANGE_TYPES, role="start")
        self.require_types(limit, start.type, role="limit")
        self.require_types(delta, start.type, role="delta")
        self.require_types(self.outputs[0], start.type, role="output")
        for t in self.inputs:
            if len(t.shape) != 0:
                raise self.unsupported(f"{t.name!r} must be a scalar, it has shape {list(t.shape)}")
            if quantization_params(t) != (0.0, 0):
                raise self.unsupported("quantized (scaled) int8/int16 ranges are not supported")
        self.from_values = not all(t.is_constant for t in self.inputs)
        if self.from_values:
            self.outputs[0].set_dynamic()
            return
        self.outputs[0].resize([self.size()])

    def size(self) -> int:
        start, limit, delta = (t.data.reshape(()) for t in self.inputs)
        if delta == 0:
            raise ValueError(f"{self.op_name}: delta must not be 0")
        if not ((start >= limit and delta < 0) or (start <= limit and delta > 0)):
            raise ValueError(f"{self.op_name}: delta {delta} does not lead from start {start} to limit {limit}")
        if np.issubdtype(start.dtype, np.integer):
            start, limit, delta = int(start), int(limit), int(delta)
            return (abs(limit - start) + abs(delta) - 1) // abs(delta)
        count = np.ceil(np.abs((limit - start) / delta))  # float32 arithmetic, as TFLite
        if not np.isfinite(count):
            raise ValueError(f"{self.op_name}: start {start}, limit {limit} and delta {delta} give no finite length")
        return int(count)

    def invoke(self) -> None:
        out = self.outputs[0]
        if self.from_values:
            size = self.size()
            checked_bytes(self, [size], out.dtype, f"output {out.name!r}")
            out.set_data(np.empty(size, out.dtype))
        start, delta = self.inputs[0].data.reshape(()), self.inputs[2].data.reshape(())
        data = out.data
        if data.dtype.kind == "f":
            # TFLite accumulates (value += delta) in float32; add.accumulate is sequential too.
            steps = np.full(data.shape, delta, dtype=data.dtype)
            if data.size:
                steps[0] = start
            np.add.accumulate(steps, out=data)
        else:
            np.add(start, np.arange(data.size, dtype=np.int64) * int(delta), out=data, casting="unsafe")


# v1: bool condition; v2: float32, int32, int64, int8, uint8, uint32 conditions.
@register(BuiltinOperator.WHERE, 1, 2)
class Where(CpuKernel):
    """WHERE v1-v2: the coordinates (int64, one row each) of the non-zero elements."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        cond = self.inputs[0]
        self.require_types(cond, T.BOOL, T.FLOAT32, T.INT64, T.INT32, T.INT8, T.UINT8, T.UINT32, role="condition")
        self.require_types(self.outputs[0], T.INT64, role="output")
        if len(cond.shape) == 0:
            raise self.unsupported("the condition must have rank > 0")
        if cond.is_constant:
            self.outputs[0].resize(np.argwhere(cond.data).shape)
        else:
            self.outputs[0].set_dynamic()

    def invoke(self) -> None:
        coordinates = np.argwhere(self.inputs[0].data)
        out = self.outputs[0]
        if out.is_dynamic:
            out.set_data(coordinates)
        else:
            np.copyto(out.data, coordinates)
