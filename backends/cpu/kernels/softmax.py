"""SOFTMAX and LOG_SOFTMAX on float32, along the last axis.

TFLite's reference kernels (``reference/softmax.h``, ``reference/log_softmax.h``), per row:

    softmax:      e = exp((x - max(x)) * beta);   y = e / sum(e)
    log_softmax:  y = (x - max(x)) - log(sum(exp(x - max(x))))

all in float32 and in that order (LOG_SOFTMAX has no beta). Version 1 of each op is
float32 (and quantized uint8: softmax_quantized.py); v2/v3 are int8/int16, and SOFTMAX v4
float16 (``HalfSoftmax``).

Row max and sum are ``ufunc.reduce`` calls (``np.max`` adds a Python wrapper of several
microseconds on tiny rows). A single row is handled as a vector with a scalar max and a
0-d sum, so that subtracting and dividing take numpy's scalar path instead of
broadcasting (the same arithmetic, half the call cost on rows of a few values); its max
is the element at ``argmax()`` (the same value; with a NaN in the row, a NaN, as the
reduction gives) and its sum a BLAS dot with ones (float32 additions in another order:
within float rounding).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType


class _LastAxisKernel(CpuKernel):
    """Shared prepare: float32 in and out, rank >= 1, row buffers for max and sum."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x = self.inputs[0]
        if x is not None and x.type in (TensorType.UINT8, TensorType.INT8, TensorType.INT16):
            raise self.unsupported(f"input {x.name!r} has type {x.type_name}: quantized inputs are not implemented yet; this kernel supports FLOAT32")
        self.require_types(x, TensorType.FLOAT32)
        self.require_types(self.outputs[0], TensorType.FLOAT32, role="output")
        if len(x.shape) < 1:
            raise self.unsupported("the input must have at least one dimension")
        self.outputs[0].resize(x.shape)
        rows = int(np.prod(x.shape[:-1], dtype=np.int64))
        self.single_row = rows == 1
        row_shape = () if self.single_row else (*x.shape[:-1], 1)
        self.row_max = np.empty(row_shape, dtype=np.float32)
        self.row_sum = np.empty(row_shape, dtype=np.float32)
        # ufunc.reduce's positional (axis, dtype, out, keepdims): keywords cost up to ~0.7 us a call
        self.reduce_axis, self.keep_dims = (0, False) if self.single_row else (-1, True)
        self.ones = np.ones(x.shape[-1], np.float32) if self.single_row else None
        self._bound = (None, None)

    def views(self) -> tuple[np.ndarray, np.ndarray]:
        """The input and output as this kernel computes on them (views fixed until the
        next allocation): vectors for a single row, the arrays themselves otherwise."""
        x, y = self.inputs[0].data, self.outputs[0].data
        if self._bound[0] is not x or self._bound[1] is not y:
            if self.single_row:
                self._views = (x.reshape(-1), y.reshape(-1))
                # (a reshape of a non-contiguous array is a copy: then make it again at every invoke)
                self._bound = (x, y) if x.flags.c_contiguous else (None, None)
            else:
                self._views = (x, y)
                self._bound = (x, y)
        return self._views

    def bind(self) -> Callable[[], None]:
        x, y = self.inputs[0].data, self.outputs[0].data
        if y.size == 0 or not self.buffers_are_fixed() or (self.single_row and not x.flags.c_contiguous):
            return self.invoke
        return self.steps(*self.views())

    def invoke(self) -> None:
        x, y = self.views()
        if y.size:
            self.steps(x, y)()


# v1: float32 (and quantized uint8: softmax_quantized.py); v2 int8; v3 int16; v4 (LiteRT 2.3's
# default resolver registers it; TFLite's tables predate it): float16, ``HalfSoftmax`` below.
# Every version takes every type its kernels take, as TFLite's kernel looks at the types only.
@register(BuiltinOperator.SOFTMAX, 1, 4)
class Softmax(_LastAxisKernel):
    """SOFTMAX v1-v4 on float32, with beta."""

    def prepare(self) -> None:
        super().prepare()
        self.beta = np.float32(self.params.beta if self.params is not None else 0.0)

    def steps(self, x: np.ndarray, y: np.ndarray) -> Callable[[], None]:
        """``y = softmax(x)`` as a function of no argument (see the module notes)."""
        maximum, add, axis, keep = np.maximum.reduce, np.add.reduce, self.reduce_axis, self.keep_dims
        subtract, multiply, exp, divide = np.subtract, np.multiply, np.exp, np.divide
        row_max, row_sum, beta = self.row_max, self.row_sum, self.beta
        if self.single_row:
            # (positional out=: cheaper; bound methods: no dispatch)
            argmax, total, ones = x.argmax, y.dot, self.ones

            def softmax_row() -> None:
                subtract(x, x[argmax()], y)
                exp(y, y)
                total(ones, row_sum)
                divide(y, row_sum, y)

            if beta == 1:
                return softmax_row
            betas = np.full(y.shape, beta, np.float32)

            def softmax_row_with_beta() -> None:
                subtract(x, x[argmax()], y)
                multiply(y, betas, y)
                exp(y, y)
                total(ones, row_sum)
                divide(y, row_sum, y)

            return softmax_row_with_beta

        def softmax() -> None:
            maximum(x, axis, None, row_max, keep)  # (positional: cheaper)
            subtract(x, row_max, out=y)
            exp(y, out=y)
            add(y, axis, None, row_sum, keep)
            divide(y, row_sum, out=y)

        if beta == 1:
            return softmax
        beta = np.full(y.shape, beta, np.float32)  # (a same-shape operand: numpy's fast path)

        def softmax_with_beta() -> None:
            maximum(x, axis, None, row_max, keep)
            subtract(x, row_max, out=y)
            multiply(y, beta, out=y)
            exp(y, out=y)
            add(y, axis, None, row_sum, keep)
            divide(y, row_sum, out=y)

        return softmax_with_beta


@register(BuiltinOperator.SOFTMAX, 1, 4)
class HalfSoftmax(CpuKernel):
    """SOFTMAX on float16 (v4), as LiteRT 2.3's kernel computes it, per row::

        e = exp((float(x) - float(max(x))) * beta)          float32
        y = half(float(half(e)) / sum(e))                   the sum in float32, in order

    (each exponential is stored to the half output first, then divided by the sum of the
    unrounded ones)."""

    @classmethod
    def accepts(cls, context, node) -> bool:
        first = node.inputs[0] if len(node.inputs) else -1
        return first >= 0 and context.tensors[first].type == TensorType.FLOAT16

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x = self.inputs[0]
        self.require_types(self.outputs[0], TensorType.FLOAT16, role="output")
        if len(x.shape) < 1:
            raise self.unsupported("the input must have at least one dimension")
        self.beta = np.float32(self.params.beta if self.params is not None else 0.0)
        self.outputs[0].resize(x.shape)

    def invoke(self) -> None:
        x, y = self.inputs[0].data.astype(np.float32), self.outputs[0].data
        if y.size == 0:
            return
        with np.errstate(over="ignore", invalid="ignore"):
            e = np.exp((x - x.max(axis=-1, keepdims=True)) * self.beta)
            total = np.cumsum(e, axis=-1, dtype=np.float32)[..., -1:]  # (a sequential sum)
            y[...] = e
            y[...] = y.astype(np.float32) / total


@register(BuiltinOperator.LOG_SOFTMAX, 1, 1)  # v1: float32 (and quantized uint8, not here); v2 int8
class LogSoftmax(_LastAxisKernel):
    """LOG_SOFTMAX v1 (float32)."""

    def steps(self, x: np.ndarray, y: np.ndarray) -> Callable[[], None]:
        """``y = log_softmax(x)`` as a function of no argument (see the module notes)."""
        maximum, add, axis, keep = np.maximum.reduce, np.add.reduce, self.reduce_axis, self.keep_dims
        subtract, exp, log = np.subtract, np.exp, np.log
        row_max, row_sum = self.row_max, self.row_sum
        if self.single_row:
            argmax, total, ones = x.argmax, y.dot, self.ones

            def log_softmax_row() -> None:
                largest = x[argmax()]
                subtract(x, largest, y)
                exp(y, y)
                total(ones, row_sum)
                log(row_sum, row_sum)
                subtract(x, largest, y)
                subtract(y, row_sum, y)

            return log_softmax_row

        def log_softmax() -> None:
            maximum(x, axis, None, row_max, keep)
            subtract(x, row_max, out=y)
            exp(y, out=y)
            add(y, axis, None, row_sum, keep)
            log(row_sum, out=row_sum)
            subtract(x, row_max, out=y)
            subtract(y, row_sum, out=y)

        return log_softmax
