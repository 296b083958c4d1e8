"""STABLEHLO_ADD, STABLEHLO_MULTIPLY, STABLEHLO_MAXIMUM, STABLEHLO_MINIMUM, STABLEHLO_AND and
STABLEHLO_SHIFT_LEFT: elementwise on two tensors of one type and one shape.

TFLite (``kernels/stablehlo_elementwise.h``, ``stablehlo_shift_left.cc``): no broadcasting,
the output of the inputs' shape; version 1 (the only one) of each. Per element, as C++
computes it on the type:

- ADD ``a + b``, MULTIPLY ``a * b``: integers wrap; on bool they are OR and AND.
- MAXIMUM ``std::max(a, b)``, that is ``a < b ? b : a``; MINIMUM ``std::min(a, b)``,
  ``b < a ? b : a``: with a NaN they return ``a`` (not numpy's propagated NaN), and of
  ``-0.0`` and ``0.0`` the first.
- AND: ``a & b`` on integers, ``a && b`` on bool (floats refused).
- SHIFT_LEFT: ``a << b`` on int8, int16, int32 (the bits shifted out are lost). A count
  outside ``0 .. bits - 1`` is undefined behaviour in C++, and LiteRT's results for it
  depend on the element's position (its vectorized loop and its scalar tail differ); here
  it gives 0, StableHLO's definition (and what LiteRT gives for int8 and int16 counts up
  to 31).

Types: float16, float32, float64, int8 to int64, uint8 to uint64 and bool (AND: no float;
SHIFT_LEFT: int8, int16, int32). The output must have the inputs' type.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType

T = TensorType
B = BuiltinOperator

FLOAT_TYPES = (T.FLOAT16, T.FLOAT32, T.FLOAT64)
INTEGER_TYPES = (T.INT8, T.INT16, T.INT32, T.INT64, T.UINT8, T.UINT16, T.UINT32, T.UINT64)
ARITHMETIC_TYPES = (*FLOAT_TYPES, *INTEGER_TYPES, T.BOOL)


class StablehloElementwise(CpuKernel):
    """Two inputs of one type and one shape; the output of that type and shape."""

    types: tuple[int, ...] = ARITHMETIC_TYPES

    def prepare(self) -> None:
        self.require_num_inputs(2)
        x, y = self.inputs
        self.require_types(x, *self.types, role="input 1")
        self.require_types(y, x.type, role="input 2")
        self.require_types(self.outputs[0], x.type, role="output")
        if x.shape != y.shape:
            raise self.unsupported(
                f"the inputs have shapes {list(x.shape)} and {list(y.shape)}; StableHLO ops take one shape "
                "(no broadcasting)"
            )
        self.outputs[0].resize(x.shape)

    def invoke(self) -> None:
        with np.errstate(over="ignore", invalid="ignore"):
            self.compute(self.inputs[0].data, self.inputs[1].data, self.outputs[0].data)

    def compute(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        raise NotImplementedError


@register(B.STABLEHLO_ADD, 1, 1)  # v1 (the only version): every arithmetic type and bool
class StablehloAdd(StablehloElementwise):
    """STABLEHLO_ADD v1."""

    def compute(self, a, b, out):
        np.add(a, b, out=out)  # (bool: numpy's add is OR, as C++'s bool(a + b))


@register(B.STABLEHLO_MULTIPLY, 1, 1)  # v1 (the only version): every arithmetic type and bool
class StablehloMultiply(StablehloElementwise):
    """STABLEHLO_MULTIPLY v1."""

    def compute(self, a, b, out):
        np.multiply(a, b, out=out)  # (bool: AND)


@register(B.STABLEHLO_MAXIMUM, 1, 1)  # v1 (the only version): every arithmetic type and bool
class StablehloMaximum(StablehloElementwise):
    """STABLEHLO_MAXIMUM v1: ``a < b ? b : a``."""

    def compute(self, a, b, out):
        np.copyto(out, a)
        np.copyto(out, b, where=a < b)


@register(B.STABLEHLO_MINIMUM, 1, 1)  # v1 (the only version): every arithmetic type and bool
class StablehloMinimum(StablehloElementwise):
    """STABLEHLO_MINIMUM v1: ``b < a ? b : a``."""

    def compute(self, a, b, out):
        np.copyto(out, a)
        np.copyto(out, b, where=b < a)


@register(B.STABLEHLO_AND, 1, 1)  # v1 (the only version): integers and bool
class StablehloAnd(StablehloElementwise):
    """STABLEHLO_AND v1: bitwise on integers, logical on bool."""

    types = (*INTEGER_TYPES, T.BOOL)

    def compute(self, a, b, out):
        np.bitwise_and(a, b, out=out)


@register(B.STABLEHLO_SHIFT_LEFT, 1, 1)  # v1 (the only version): int8, int16, int32
class StablehloShiftLeft(StablehloElementwise):
    """STABLEHLO_SHIFT_LEFT v1: ``a << b``; 0 for a count outside ``0 .. bits - 1``."""

    types = (T.INT8, T.INT16, T.INT32)

    def compute(self, a, b, out):
        bits = a.dtype.itemsize * 8
        in_range = (b >= 0) & (b < bits)
        np.left_shift(a, np.where(in_range, b, 0).astype(a.dtype), out=out)
        out[~in_range] = 0
