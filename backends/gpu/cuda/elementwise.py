"""Launchers and numpy twins of ``elementwise.cu``: the float elementwise ops of the GPU
delegate, one launch per node.

- :class:`ElementwiseBinaryCuda`: ADD SUB MUL DIV (fused activation as a clamp, +-inf
  saturating at +-FLT_MAX for NONE, as TFLite's float kernels), MAXIMUM MINIMUM
  SQUARED_DIFFERENCE POW PRELU (no clamp), with numpy broadcasting up to rank 4.
- :class:`ElementwiseUnaryCuda`: the RELU family as a clamp, LEAKY_RELU, HARD_SWISH,
  LOGISTIC, TANH, ELU, GELU (exact and tanh), and ABS EXP LOG SQRT RSQRT SIN COS NEG
  SQUARE FLOOR CEIL.

float32 or float16 storage, float32 arithmetic. In host emulation each launch runs the
twin (:func:`binary_twin`, :func:`unary_twin`) as one launch; the twins compute the same
float32 formulas in the same order (``tests/gpu/test_elementwise_kernels.py`` checks them
against the kernels built by the host shim: bit for bit, except the C library functions
expf, tanhf, powf..., whose float32 results numpy and glibc may round differently in the
last ulps; see the ``.cu`` for the device's error bounds).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Sequence

import numpy as np

from backends.cpu.kernels.activations import ERFC_COEFFICIENTS, GELU_CUBIC, INV_SQRT2, SQRT_2_OVER_PI
from backends.gpu.cuda.sources import _Launcher, _storage_kernel, activation_range, elementwise_launch_config
from schema.enums import ActivationFunctionType

#: ``enum BinaryOp`` of elementwise.cu (a test checks the two agree).
BINARY_OPS: dict[str, int] = {
    "ADD": 0, "SUB": 1, "MUL": 2, "DIV": 3, "MAXIMUM": 4, "MINIMUM": 5,
    "SQUARED_DIFFERENCE": 6, "POW": 7, "PRELU": 8,
}
#: The binary ops whose TFLite kernels end with the fused activation's clamp; the others
#: have no clamp at all.
CLAMPED_BINARY_OPS = ("ADD", "SUB", "MUL", "DIV")

#: ``enum UnaryOp`` of elementwise.cu (a test checks the two agree).
UNARY_OPS: dict[str, int] = {
    "CLAMP": 0, "LEAKY_RELU": 1, "HARD_SWISH": 2, "LOGISTIC": 3, "TANH": 4, "ELU": 5,
    "GELU": 6, "GELU_TANH": 7, "ABS": 8, "EXP": 9, "LOG": 10, "SQRT": 11, "RSQRT": 12,
    "SIN": 13, "COS": 14, "NEG": 15, "SQUARE": 16, "FLOOR": 17, "CEIL": 18,
}

#: The rank the binary kernel indexes (the delegate's rank limit).
MAX_RANK = 4
NO_CLAMP = (-math.inf, math.inf)

F32 = np.float32


def binary_kernel_name(storage: Any) -> str:
    """``elementwise_binary_f32`` or ``_f16``."""
    return _storage_kernel("elementwise_binary", storage)


def unary_kernel_name(storage: Any) -> str:
    """``elementwise_unary_f32`` or ``_f16``."""
    return _storage_kernel("elementwise_unary", storage)


def broadcast_strides(shape: Sequence[int], out_shape: Sequence[int]) -> tuple[int, ...]:
    """The element strides of a C-contiguous array of ``shape`` read at the indices of
    ``out_shape`` (rank <= 4), padded to rank 4 with leading 0s: 0 on every axis where the
    array has size 1 (it broadcasts, or the axis is 1 anyway)."""
    shape, out_shape = tuple(int(d) for d in shape), tuple(int(d) for d in out_shape)
    if len(out_shape) > MAX_RANK or len(shape) > len(out_shape):
        raise ValueError(f"cannot read {list(shape)} as {list(out_shape)}: at most rank {MAX_RANK}")
    padded = (1,) * (len(out_shape) - len(shape)) + shape
    strides, step = [], 1
    for size, extent in zip(reversed(padded), reversed(out_shape)):
        if size not in (1, extent):
            raise ValueError(f"{list(shape)} does not broadcast to {list(out_shape)}")
        strides.append(0 if size == 1 else step)
        step *= size
    strides.reverse()
    return (0,) * (MAX_RANK - len(strides)) + tuple(strides)


def binary_args(a: Any, b: Any, out: Any, op: str, bounds: tuple[float, float]) -> tuple:
    """The arguments of an ``elementwise_binary_*`` launch, in parameter order."""
    out_shape = tuple(out.shape)
    dims = (1,) * (MAX_RANK - len(out_shape)) + out_shape
    broadcast = tuple(a.shape) != out_shape or tuple(b.shape) != out_shape
    a_strides, b_strides = broadcast_strides(a.shape, out_shape), broadcast_strides(b.shape, out_shape)
    return (
        a, b, out, np.int64(out.size), np.int32(BINARY_OPS[op]), np.int32(broadcast),
        *(np.int64(d) for d in dims[1:]), *(np.int64(s) for s in a_strides), *(np.int64(s) for s in b_strides),
        F32(bounds[0]), F32(bounds[1]),
    )


def unary_args(x: Any, out: Any, op: str, alpha: float, bounds: tuple[float, float]) -> tuple:
    """The arguments of an ``elementwise_unary_*`` launch, in parameter order."""
    return (x, out, np.int64(out.size), np.int32(UNARY_OPS[op]), F32(alpha), F32(bounds[0]), F32(bounds[1]))


def broadcast_pair_shape(a: Any, b: Any) -> tuple[int, ...]:
    """The shape ``a`` and ``b`` broadcast to (numpy's rules); ValueError above ``MAX_RANK``."""
    shape = tuple(int(d) for d in np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
    if len(shape) > MAX_RANK:
        raise ValueError(f"broadcasting {list(a.shape)} with {list(b.shape)} has rank {len(shape)}; at most {MAX_RANK}")
    return shape


def _prepared(xp: Any, storage: np.dtype, *arrays: Any) -> list[Any]:
    """The arrays C-contiguous (no work when they are), checked to be ``storage``."""
    for array in arrays:
        if array.dtype != storage:
            raise TypeError(f"expected {storage} arrays, got {array.dtype}")
    return [array if array.flags.c_contiguous else xp.ascontiguousarray(array) for array in arrays]


def _output(xp: Any, out: Any, shape: tuple[int, ...], storage: np.dtype) -> Any:
    if out is None:
        return xp.empty(shape, dtype=storage)
    if tuple(out.shape) != shape or out.dtype != storage or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {storage} array of shape {list(shape)}")
    return out


class ElementwiseBinaryCuda(_Launcher):
    """``out = clamp(op(a, b))`` with numpy broadcasting up to rank 4, in one launch:
    ``op`` one of :data:`BINARY_OPS` (``"PRELU"``: ``a >= 0 ? a : a * b``, b = alpha).
    ADD SUB MUL DIV clamp to ``activation``'s range (TFLite's ``CalculateActivationRange``:
    NONE saturates at +-FLT_MAX, TANH is not applied); the other ops take no activation.
    ``xp``, ``module`` and ``host_device`` as in ``sources._Launcher``."""

    source = "elementwise.cu"

    def __init__(
        self,
        op: str,
        activation: int = ActivationFunctionType.NONE,
        storage: Any = np.float32,
        *,
        xp: Any = None,
        module: Any = None,
        host_device: Any = None,
    ) -> None:
        if op not in BINARY_OPS:
            raise ValueError(f"unknown binary op {op!r}; elementwise.cu has {list(BINARY_OPS)}")
        self.op = op
        self.activation = ActivationFunctionType(activation)
        if op in CLAMPED_BINARY_OPS:
            self.bounds = activation_range(self.activation)
        elif self.activation != ActivationFunctionType.NONE:
            raise ValueError(f"{op} has no fused activation (got {self.activation.name})")
        else:
            self.bounds = NO_CLAMP
        self.storage = np.dtype(storage)
        self.kernel_name = binary_kernel_name(self.storage)
        super().__init__(xp, module, host_device)

    def __call__(self, a: Any, b: Any, out: Any = None) -> Any:
        a, b = _prepared(self.xp, self.storage, a, b)
        shape = broadcast_pair_shape(a, b)
        out = _output(self.xp, out, shape, self.storage)
        if out.size == 0:
            return out
        grid, block = elementwise_launch_config(out.size)
        args = binary_args(a, b, out, self.op, self.bounds)
        twin = functools.partial(binary_twin, op=self.op, bounds=self.bounds)
        self.launch(self.kernel_name, grid, block, args, twin, (a, b), (out,))
        return out


class ElementwiseUnaryCuda(_Launcher):
    """``out = clamp(f(x))`` in one launch, ``f`` one of :data:`UNARY_OPS`. ``"CLAMP"`` is
    the RELU family: ``bounds`` is its range (``(0, inf)`` for RELU); every other op is
    launched without a clamp. ``alpha`` is LEAKY_RELU's slope. ``xp``, ``module`` and
    ``host_device`` as in ``sources._Launcher``."""

    source = "elementwise.cu"

    def __init__(
        self,
        op: str,
        *,
        alpha: float = 0.0,
        bounds: tuple[float, float] | None = None,
        storage: Any = np.float32,
        xp: Any = None,
        module: Any = None,
        host_device: Any = None,
    ) -> None:
        if op not in UNARY_OPS:
            raise ValueError(f"unknown unary op {op!r}; elementwise.cu has {list(UNARY_OPS)}")
        if (op == "CLAMP") != (bounds is not None):
            raise ValueError("CLAMP takes its bounds, and only CLAMP takes bounds")
        self.op = op
        self.alpha = F32(alpha)
        self.bounds = NO_CLAMP if bounds is None else (float(bounds[0]), float(bounds[1]))
        self.storage = np.dtype(storage)
        self.kernel_name = unary_kernel_name(self.storage)
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any, out: Any = None) -> Any:
        (x,) = _prepared(self.xp, self.storage, x)
        out = _output(self.xp, out, tuple(x.shape), self.storage)
        if out.size == 0:
            return out
        grid, block = elementwise_launch_config(out.size)
        args = unary_args(x, out, self.op, self.alpha, self.bounds)
        twin = functools.partial(unary_twin, op=self.op, alpha=self.alpha, bounds=self.bounds)
        self.launch(self.kernel_name, grid, block, args, twin, (x,), (out,))
        return out


# -- numpy twins (host emulation runs these, one launch each; see sources._Launcher) -----------------


def _clamp_into(out: np.ndarray, values: np.ndarray, bounds: tuple[float, float]) -> None:
    """``out = clamp(values)`` as the kernels' ``clamp_range`` (NaN kept), converted to the
    storage dtype (float16: round to nearest even, as the kernels' cvt.rn)."""
    low, high = bounds
    if low != -math.inf:
        values = np.where(values < F32(low), F32(low), values)
    if high != math.inf:
        values = np.where(values > F32(high), F32(high), values)
    out[...] = values


def binary_twin(a: np.ndarray, b: np.ndarray, out: np.ndarray, *, op: str, bounds: tuple[float, float]) -> None:
    """``elementwise_binary_f32/_f16`` in numpy: float32 ``op`` with numpy's broadcasting,
    then the clamp."""
    a, b = a.astype(F32, copy=False), b.astype(F32, copy=False)
    if op == "ADD":
        values = a + b
    elif op == "SUB":
        values = a - b
    elif op == "MUL":
        values = a * b
    elif op == "DIV":
        values = a / b
    elif op == "MAXIMUM":
        values = np.where(a > b, a, b)
    elif op == "MINIMUM":
        values = np.where(a < b, a, b)
    elif op == "SQUARED_DIFFERENCE":
        difference = a - b
        values = difference * difference
    elif op == "POW":
        values = np.power(a, b)
    elif op == "PRELU":
        values = np.where(a >= 0, a, a * b)
    else:
        raise ValueError(f"unknown binary op {op!r}")
    _clamp_into(out, np.broadcast_to(values, out.shape), bounds)


def gelu_erfc(x: np.ndarray) -> np.ndarray:
    """GELU (exact) as the kernel's ``gelu_erfc``: the CPU kernel's steps in float32."""
    c = [F32(coefficient) for coefficient in ERFC_COEFFICIENTS]
    minus_z2 = x * x * F32(-0.5)
    t = F32(1) / (np.absolute(x) * (INV_SQRT2 / F32(2)) + F32(1))
    p = t * c[-1] + c[-2]
    for coefficient in c[-3::-1]:
        p = p * t + coefficient
    half_r = np.exp(minus_z2 + p) * t * F32(0.5)  # q = r / 2
    step = (half_r * F32(-2) + F32(1)) * (x > 0).astype(F32)
    return (half_r + step) * x


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """GELU (approximate) as the kernel's ``gelu_tanh``, the CPU kernel's order."""
    inner = (x * x * F32(SQRT_2_OVER_PI * GELU_CUBIC) + SQRT_2_OVER_PI) * x
    return (np.tanh(inner) + F32(1)) * x * F32(0.5)


def _hard_swish(x: np.ndarray) -> np.ndarray:
    t = x + F32(3)
    t = np.where(t < 0, F32(0), t)
    t = np.where(t > 6, F32(6), t)
    return (t * x) / F32(6)


_UNARY_FUNCTIONS = {
    "CLAMP": lambda x, alpha: x,
    "LEAKY_RELU": lambda x, alpha: np.where(x > 0, x, x * alpha),
    "HARD_SWISH": lambda x, alpha: _hard_swish(x),
    "LOGISTIC": lambda x, alpha: F32(1) / (F32(1) + np.exp(-x)),
    "TANH": lambda x, alpha: np.tanh(x),
    "ELU": lambda x, alpha: np.where(x >= 0, x, np.expm1(x)),
    "GELU": lambda x, alpha: gelu_erfc(x),
    "GELU_TANH": lambda x, alpha: gelu_tanh(x),
    "ABS": lambda x, alpha: np.absolute(x),
    "EXP": lambda x, alpha: np.exp(x),
    "LOG": lambda x, alpha: np.log(x),
    "SQRT": lambda x, alpha: np.sqrt(x),
    "RSQRT": lambda x, alpha: F32(1) / np.sqrt(x),
    "SIN": lambda x, alpha: np.sin(x),
    "COS": lambda x, alpha: np.cos(x),
    "NEG": lambda x, alpha: np.negative(x),
    "SQUARE": lambda x, alpha: x * x,
    "FLOOR": lambda x, alpha: np.floor(x),
    "CEIL": lambda x, alpha: np.ceil(x),
}


def unary_twin(x: np.ndarray, out: np.ndarray, *, op: str, alpha: float, bounds: tuple[float, float]) -> None:
    """``elementwise_unary_f32/_f16`` in numpy: float32 ``f(x)``, then the clamp."""
    function = _UNARY_FUNCTIONS.get(op)
    if function is None:
        raise ValueError(f"unknown unary op {op!r}")
    _clamp_into(out, function(x.astype(F32, copy=False), F32(alpha)), bounds)
