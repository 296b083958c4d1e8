"""Elementwise binary ops with numpy broadcasting: ADD, SUB, MUL, DIV, SQUARED_DIFFERENCE,
MAXIMUM, MINIMUM, POW, FLOOR_DIV, FLOOR_MOD.

Facts from TFLite's kernels (``tensorflow/lite/kernels/{add,sub,mul,div,...}.cc`` and
``internal/reference/*.h``) that numpy does not give by itself:

- ADD, SUB, MUL, DIV end with ``min(max(r, lo), hi)`` where (lo, hi) comes from the fused
  activation (``CalculateActivationRange``): RELU [0, max], RELU6 [0, 6], RELU_N1_TO_1
  [-1, 1], and every other value (NONE, TANH, SIGN_BIT) [lowest, max] of the type. So a
  fused TANH is *not* applied, and float results of +-inf saturate to +-FLT_MAX.
- Integer DIV truncates toward zero (C++ ``/``) and fails on a zero divisor; float DIV
  by zero gives +-inf, which the clamp above turns into +-FLT_MAX.
- FLOOR_DIV is ``floor(double(x) / double(y))`` for every type and fails on any zero
  divisor, float included. FLOOR_MOD is ``r = fmod(x, y); r + y if r != 0 and
  sign(r) != sign(y)``; it fails on a zero divisor for integers only.
- MAXIMUM is ``x > y ? x : y`` and MINIMUM ``x < y ? x : y``: when one side is NaN the
  result is y (numpy's maximum would return the NaN of x).
- POW on int32 fails on a negative exponent.
- Integer results wrap on overflow, as numpy's do.

Broadcasting is numpy's; TFLite's kernels cap the rank (4-D to 6-D depending on the op),
a superset here. Quantized tensors (scale/zero point) are not implemented yet.

Speed: a constant operand that broadcasts (a bias, a scale, a scalar) is expanded once
at prepare to the output's shape when that is small (``_window.FULL_SIZE_LIMIT``), since
numpy's same-shape path costs a fraction of a broadcasting call on small tensors; a
non-constant one that broadcasts in short runs is copied to the output's shape at each
invoke for the same reason (``tiled_operand``); the float clamp is bound to the output
buffer once per allocation (``ActivationClamp.bind``).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from backends.cpu.common import broadcast_shape, calculate_activation_range
from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._window import FULL_SIZE_LIMIT, SMALL_CLIP_LIMIT, filled
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType

T = TensorType
B = BuiltinOperator
Act = ActivationFunctionType

FLT_MAX = float(np.finfo(np.float32).max)


def is_quantized(tensor) -> bool:
    """The tensor carries quantization scales (an int8/uint8/int16 tensor of a quantized model)."""
    q = tensor.quantization
    return q is not None and q.scale is not None and len(q.scale) > 0


def all_finite(values: np.ndarray) -> bool:
    """No NaN or +-inf in ``values``. One BLAS dot: a sum of squares is finite only if every
    element is (a finite overflow also reads as "not finite", which only costs a clamp)."""
    flat = values.reshape(-1)
    return math.isfinite(np.dot(flat, flat))


def has_nan(values: np.ndarray) -> bool:
    """Some element of float ``values`` is NaN (a sum of squares is NaN only then)."""
    flat = values.reshape(-1)
    return math.isnan(np.dot(flat, flat))


class ActivationClamp:
    """``min(max(r, lo), hi)`` in place, as TFLite's ``ActivationFunctionWithMinMax``."""

    def __init__(self, activation: int, dtype: np.dtype) -> None:
        self.dtype = np.dtype(dtype)
        self.lo, self.hi = calculate_activation_range(activation, self.dtype)
        if self.dtype.kind == "f":
            self.needed = True  # even NONE saturates +-inf
        else:
            info = np.iinfo(self.dtype)
            self.needed = (self.lo, self.hi) != (info.min, info.max)

    def __call__(self, out: np.ndarray) -> None:
        if self.dtype.kind != "f":
            np.clip(out, self.lo, self.hi, out=out)
        elif self.hi == FLT_MAX:
            # NONE or RELU: the top of the range only changes +inf; skip that pass
            # unless some element is not finite.
            if self.lo != -FLT_MAX:
                np.maximum(out, self.lo, out=out)
            if not all_finite(out):
                np.clip(out, self.lo, self.hi, out=out)
        else:
            np.clip(out, self.lo, self.hi, out=out)

    def bind(self, out: np.ndarray) -> Callable[[], None]:
        """``self(out)`` as a function of no argument, with its operands prepared for the
        buffer ``out`` (same results; see ``_window`` for why full-size bounds)."""
        if self.dtype.kind != "f" or not out.flags.c_contiguous:
            return lambda: self(out)
        clip, lo, hi = np.clip, self.lo, self.hi
        if hi == FLT_MAX:
            flat, isfinite = out.reshape(-1), math.isfinite
            if lo == -FLT_MAX:
                def saturate() -> None:
                    if not isfinite(flat.dot(flat)):
                        clip(out, lo, hi, out=out)
                return saturate
            lows, maximum = filled(lo, out.size, out.dtype.name).reshape(out.shape), np.maximum

            def relu_and_saturate() -> None:
                maximum(out, lows, out=out)
                if not isfinite(flat.dot(flat)):
                    clip(out, lo, hi, out=out)

            return relu_and_saturate
        if out.size > SMALL_CLIP_LIMIT:
            return lambda: clip(out, lo, hi, out=out)
        # np.clip(out, lo, hi) bit for bit (NaN and -0.0 included), at a third of the cost.
        lows = filled(lo, out.size, out.dtype.name).reshape(out.shape)
        highs = filled(hi, out.size, out.dtype.name).reshape(out.shape)
        maximum, minimum = np.maximum, np.minimum

        def clamp_small() -> None:
            maximum(lows, out, out=out)
            minimum(highs, out, out=out)

        return clamp_small


#: A non-constant operand that broadcasts with inner runs shorter than this (numpy's
#: inner loop) is copied to the output's shape first, when that has at most TILE_LIMIT
#: elements.
SHORT_RUN = 32
TILE_LIMIT = 1 << 14


def tiled_operand(operand: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(a buffer of the output's shape, the operand broadcast to it) for a small operand
    that broadcasts in short runs, e.g. [1, 1, W, 1] against [1, H, W, C]: numpy's
    same-shape loop after one broadcasting copy costs less than its broadcasting loop,
    whose inner loop is the short run. None otherwise (same shape, a scalar-like operand,
    long runs, or a large output). The values are the operand's, so the results too."""
    shape, target = operand.shape, out.shape
    if shape == target or out.size > TILE_LIMIT or operand.size <= 1:
        return None
    padded = (1,) * (len(target) - len(shape)) + tuple(shape)
    # numpy's inner loop covers the trailing axes where the operand is either whole or
    # all ones (both then coalesce).
    run, whole, ones = 1, True, True
    for size, extent in zip(reversed(padded), reversed(target)):
        whole, ones = whole and size == extent, ones and size == 1
        if not (whole or ones):
            break
        run *= extent
    if run >= SHORT_RUN:
        return None
    return np.empty(target, operand.dtype), np.broadcast_to(operand, target)


class BinaryKernel(CpuKernel):
    """Shared prepare: two inputs and an output of one type, output shape by broadcasting."""

    #: Tensor types the kernel takes (non-quantized), set by each subclass.
    types: tuple[int, ...] = ()

    def prepare(self) -> None:
        self.require_num_inputs(2)
        x, y = self.inputs
        out = self.outputs[0]
        self.require_types(x, *self.types, role="input 1")
        self.require_types(y, *self.types, role="input 2")
        if x.type != y.type:
            raise self.unsupported(f"inputs have types {x.type_name} and {y.type_name}; both must be the same type")
        if out.type != x.type:
            raise self.unsupported(f"output has type {out.type_name}; it must be the input type {x.type_name}")
        for tensor in (x, y, out):
            if is_quantized(tensor):
                raise self.unsupported(
                    f"tensor {tensor.name!r} is quantized ({tensor.type_name} with scales); "
                    "quantized kernels are not implemented yet, only plain (non-quantized) values"
                )
        shape = broadcast_shape(x.shape, y.shape)
        out.resize(shape)
        self.dtype = out.dtype
        # Constant operands that broadcast, expanded to the output's shape (same values).
        self.expanded = [self.expanded_constant(t, shape) for t in (x, y)]
        self._bound = None

    @staticmethod
    def expanded_constant(tensor, shape) -> np.ndarray | None:
        """A small constant operand of another shape than the output, broadcast to it and
        made contiguous; None otherwise (the operand is read from its tensor)."""
        if not tensor.is_constant or tuple(tensor.shape) == tuple(shape) or tensor.dtype.kind not in "fiu":
            return None
        if int(np.prod(shape, dtype=np.int64)) > FULL_SIZE_LIMIT:
            return None
        return np.ascontiguousarray(np.broadcast_to(tensor.data, shape))

    def operands(self) -> tuple[np.ndarray, np.ndarray]:
        """The two inputs (constant ones expanded to the output's shape)."""
        x, y = self.expanded
        return (self.inputs[0].data if x is None else x, self.inputs[1].data if y is None else y)

    def bind_clamp(self, out: np.ndarray) -> None:
        """``self.bound``: ``self.clamp`` bound to ``out`` (called when the output buffer changes)."""
        self.bound = self.clamp.bind(out) if self.clamp is not None else None
        self._bound = out

    def arithmetic(self, ufunc: np.ufunc) -> None:
        """``out = clamp(ufunc(x, y))``: the invoke of ADD, SUB and MUL on real types."""
        out = self.outputs[0].data
        if self._bound is not out:
            self.bind_clamp(out)
        x, y = self.expanded
        ufunc(self.inputs[0].data if x is None else x, self.inputs[1].data if y is None else y, out=out)
        if self.bound is not None:
            self.bound()

    def bind_arithmetic(self, ufunc: np.ufunc) -> Callable[[], None]:
        """``arithmetic(ufunc)`` as a function of no argument on this allocation's buffers
        (``invoke`` when a tensor is dynamic)."""
        if not self.buffers_are_fixed():
            return self.invoke
        x, y = self.operands()
        out = self.outputs[0].data
        self.bind_clamp(out)
        clamp = self.bound
        x_tile, y_tile = tiled_operand(x, out), tiled_operand(y, out)
        x = x if x_tile is None else x_tile[0]
        y = y if y_tile is None else y_tile[0]
        step = self.bind_steps(ufunc, x, y, out, clamp)
        copies = [tile for tile in (x_tile, y_tile) if tile is not None]
        if not copies:
            return step
        if len(copies) == 1:
            ((full, source),) = copies

            def with_tiled_operand() -> None:
                full[...] = source
                step()

            return with_tiled_operand

        def with_tiled_operands() -> None:
            for full, source in copies:
                full[...] = source
            step()

        return with_tiled_operands

    def bind_steps(self, ufunc: np.ufunc, x: np.ndarray, y: np.ndarray, out: np.ndarray, clamp) -> Callable[[], None]:
        """``out = clamp(ufunc(x, y))`` on these arrays as a function of no argument."""
        if self.dtype == np.float16:
            # Half results overflow often; the clamp saturates them (no warning: defined).
            def half_steps() -> None:
                with np.errstate(over="ignore"):
                    self.arithmetic(ufunc)

            return half_steps
        # (positional out arguments: cheaper than keywords)
        if clamp is None:
            return lambda: ufunc(x, y, out)
        if self.dtype.kind == "f" and self.clamp.lo == -FLT_MAX and self.clamp.hi == FLT_MAX and out.flags.c_contiguous:
            # NONE (or TANH, SIGN_BIT): only an infinite result changes (see ActivationClamp).
            flat, isfinite, clip = out.reshape(-1), math.isfinite, np.clip
            squared_norm = flat.dot  # (the bound method: BLAS without np.dot's dispatch)

            def saturated() -> None:
                ufunc(x, y, out)
                if not isfinite(squared_norm(flat)):
                    clip(out, -FLT_MAX, FLT_MAX, out=out)

            return saturated

        def clamped() -> None:
            ufunc(x, y, out)
            clamp()

        return clamped

    def fused_activation(self) -> ActivationClamp | None:
        """The clamp of ``params.fused_activation_function``, or None when it changes nothing."""
        activation = getattr(self.params, "fused_activation_function", Act.NONE) if self.params is not None else Act.NONE
        clamp = ActivationClamp(activation, self.dtype)
        return clamp if clamp.needed else None

    def check_nonzero_divisor(self) -> None:
        """Fail when input 2 has a zero (TFLite checks every element before dividing)."""
        if not np.all(self.inputs[1].data):
            raise ZeroDivisionError(f"{self.op_name}: division by zero (input 2 {self.inputs[1].name!r} has a zero element)")


# v1: float32, int32 (and quantized uint8, not here); v2 int8; v3 quantized int16 (general scales)
@register(B.ADD, 1, 1)
# v4: int64; v5: plain (not quantized) int16; v6: float16 (each sum rounded once to float16, as
# TFLite's float sum rounded to half is; the clamp at float16's range: +-65504)
@register(B.ADD, 4, 6)
class Add(BinaryKernel):
    """ADD v1, v4-v6: float32, float16, int32, int64, plain int16; fused activation as a clamp."""

    types = (T.FLOAT32, T.INT32, T.INT64, T.INT16, T.FLOAT16)

    def prepare(self) -> None:
        super().prepare()
        self.clamp = self.fused_activation()

    def invoke(self) -> None:
        self.arithmetic(np.add)

    def bind(self) -> Callable[[], None]:
        return self.bind_arithmetic(np.add)


# v1: float32, int32 (and quantized uint8, not here); v2 int8
@register(B.SUB, 1, 1)
# v3: broadcasting of more than 4 dimensions; v4: int64 (v5 is quantized int16)
@register(B.SUB, 3, 4)
class Sub(BinaryKernel):
    """SUB v1, v3, v4: float32, int32, int64, any broadcast rank; fused activation as a clamp."""

    types = (T.FLOAT32, T.INT32, T.INT64)

    def prepare(self) -> None:
        super().prepare()
        self.clamp = self.fused_activation()

    def invoke(self) -> None:
        self.arithmetic(np.subtract)

    def bind(self) -> Callable[[], None]:
        return self.bind_arithmetic(np.subtract)


# v1: float32, int32 (and quantized uint8, not here); v2-v4 quantized int8/int16
@register(B.MUL, 1, 1)
# v5: int64; v6: complex64; v7: plain (not quantized) int16, uint32; v8: float16 (as ADD v6)
@register(B.MUL, 5, 8)
class Mul(BinaryKernel):
    """MUL v1, v5-v8: float32, float16, int32, int64, complex64, plain int16, uint32."""

    types = (T.FLOAT32, T.INT32, T.INT64, T.COMPLEX64, T.INT16, T.UINT32, T.FLOAT16)

    def prepare(self) -> None:
        super().prepare()
        if self.dtype.kind == "c":
            activation = getattr(self.params, "fused_activation_function", Act.NONE) if self.params is not None else Act.NONE
            if activation != Act.NONE:
                raise self.unsupported(f"fused activation {Act(activation).name} is not allowed for COMPLEX64 inputs")
            self.clamp = None
        else:
            self.clamp = self.fused_activation()

    def invoke(self) -> None:
        if self.dtype.kind == "c":
            x, y = self.operands()
            self.complex_multiply(x, y, self.outputs[0].data)
            return
        self.arithmetic(np.multiply)

    def bind(self) -> Callable[[], None]:
        return self.invoke if self.dtype.kind == "c" else self.bind_arithmetic(np.multiply)

    @staticmethod
    def complex_multiply(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
        """(a + bi)(c + di) = (ac - bd) + (ad + bc)i, each product rounded to float32 on its
        own, as std::complex does (numpy's complex multiply fuses, differing in the last bit)."""
        a, b, c, d = x.real, x.imag, y.real, y.imag
        np.multiply(a, c, out=out.real)
        out.real -= b * d
        np.multiply(a, d, out=out.imag)
        out.imag += b * c


@register(B.DIV, 1, 2)  # v1: float32, int32 (and quantized uint8, not here); v2: broadcasting of more than 4 dimensions
class Div(BinaryKernel):
    """DIV v1-v2: float32 (x/0 saturates to +-FLT_MAX), int32 (truncating, fails on /0)."""

    types = (T.FLOAT32, T.INT32)

    def prepare(self) -> None:
        super().prepare()
        self.clamp = self.fused_activation()
        self.integer = self.dtype.kind == "i"
        # A constant divisor is checked once, here.
        self.check_divisor = self.integer and not self.inputs[1].is_constant
        if self.integer and self.inputs[1].is_constant:
            self.check_nonzero_divisor()

    def invoke(self) -> None:
        x, y, out = self.inputs[0].data, self.inputs[1].data, self.outputs[0].data
        if self.integer:
            if self.check_divisor:
                self.check_nonzero_divisor()
            # C++ integer division truncates toward zero. The float64 quotient of two int32
            # never rounds across an integer, so its truncation is exact.
            np.copyto(out, np.trunc(np.true_divide(x, y)), casting="unsafe")
        else:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                np.divide(x, y, out=out)
        if self.clamp is not None:
            self.clamp(out)


@register(B.SQUARED_DIFFERENCE, 1, 1)  # v1: float32, int32; v2 int8 (quantized)
class SquaredDifference(BinaryKernel):
    """SQUARED_DIFFERENCE v1: (x - y)^2 on float32, int32."""

    types = (T.FLOAT32, T.INT32)

    def invoke(self) -> None:
        out = self.outputs[0].data
        np.subtract(self.inputs[0].data, self.inputs[1].data, out=out)
        np.multiply(out, out, out=out)


# v1: float32, int32, int64 (and uint8, not here); v2 int8
@register(B.MAXIMUM, 1, 1)
@register(B.MINIMUM, 1, 1)
# v3: broadcasting of more than 4 dimensions (v4 is int16)
@register(B.MAXIMUM, 3, 3)
@register(B.MINIMUM, 3, 3)
class MaximumMinimum(BinaryKernel):
    """MAXIMUM, MINIMUM v1 and v3: float32, int32, int64, ``x > y ? x : y`` (resp. <)."""

    types = (T.FLOAT32, T.INT32, T.INT64)

    def prepare(self) -> None:
        super().prepare()
        self.ufunc = np.maximum if self.op == B.MAXIMUM else np.minimum
        self.is_float = self.dtype.kind == "f"

    def invoke(self) -> None:
        x, y, out = self.inputs[0].data, self.inputs[1].data, self.outputs[0].data
        self.ufunc(x, y, out=out)
        # numpy returns the NaN of either side; TFLite returns y whenever x is NaN.
        if self.is_float and has_nan(out):
            np.copyto(out, y, where=np.isnan(x))


@register(B.POW, 1, 1)  # v1: float32, int32
class Pow(BinaryKernel):
    """POW v1: float32, int32 (fails on a negative int32 exponent)."""

    types = (T.FLOAT32, T.INT32)

    def prepare(self) -> None:
        super().prepare()
        self.integer = self.dtype.kind == "i"
        self.check_exponent = self.integer and not self.inputs[1].is_constant
        if self.integer and self.inputs[1].is_constant:
            self.check_nonnegative_exponent()

    def check_nonnegative_exponent(self) -> None:
        if np.any(self.inputs[1].data < 0):
            raise ValueError(f"POW: negative exponents are not supported for INT32 (input 2 {self.inputs[1].name!r})")

    def invoke(self) -> None:
        x, y, out = self.inputs[0].data, self.inputs[1].data, self.outputs[0].data
        if self.integer:
            if self.check_exponent:
                self.check_nonnegative_exponent()
            np.power(x, y, out=out)
        else:
            with np.errstate(all="ignore"):
                np.power(x, y, out=out)


@register(B.FLOOR_DIV, 1, 3)  # v1: int32; v2: float32; v3: int16, int8 (plain integers)
class FloorDiv(BinaryKernel):
    """FLOOR_DIV v1-v3: floor(x / y) on int32, float32, int16, int8; fails on any zero divisor."""

    types = (T.INT32, T.FLOAT32, T.INT16, T.INT8)

    def prepare(self) -> None:
        super().prepare()
        self.is_float = self.dtype.kind == "f"
        self.check_divisor = not self.inputs[1].is_constant
        if self.inputs[1].is_constant:
            self.check_nonzero_divisor()

    def invoke(self) -> None:
        x, y, out = self.inputs[0].data, self.inputs[1].data, self.outputs[0].data
        if self.check_divisor:
            self.check_nonzero_divisor()
        if self.is_float:
            # TFLite divides in double, floors, then converts back to float.
            np.floor(np.true_divide(x, y, dtype=np.float64), out=out, casting="same_kind")
        else:
            # For integers numpy's floor division equals floor of the double quotient.
            np.floor_divide(x, y, out=out)


@register(B.FLOOR_MOD, 1, 2)  # v1: int32, int64, float32; v2: int16, int8 (plain integers)
class FloorMod(BinaryKernel):
    """FLOOR_MOD v1-v2: the remainder with the sign of y; int32, int64, float32, int16, int8."""

    types = (T.INT32, T.INT64, T.FLOAT32, T.INT16, T.INT8)

    def prepare(self) -> None:
        super().prepare()
        self.is_float = self.dtype.kind == "f"
        self.check_divisor = not self.is_float and not self.inputs[1].is_constant
        if not self.is_float and self.inputs[1].is_constant:
            self.check_nonzero_divisor()

    def invoke(self) -> None:
        x, y, out = self.inputs[0].data, self.inputs[1].data, self.outputs[0].data
        if not self.is_float:
            if self.check_divisor:
                self.check_nonzero_divisor()
            np.remainder(x, y, out=out)
            return
        with np.errstate(invalid="ignore", divide="ignore"):
            # numpy's float remainder is fmod plus y when the signs differ, as TFLite's,
            # except that a zero result takes the sign of y; TFLite keeps fmod's (x's).
            np.remainder(x, y, out=out)
            np.copysign(out, x, out=out, where=out == 0)
