"""Quantized reductions: MEAN and SUM (uint8, int8, int16, requantizing to the output's
scale and zero point), REDUCE_MAX / REDUCE_MIN (raw values) and REDUCE_PROD (int8, int16,
rescaled at each step: ``QuantizedReduceProd``), bit-exact with TFLite's reference kernels
(``kernels/reduce.cc``, ``reference/reduce.h``).

MEAN and SUM (``reference_ops::QuantizedMeanOrSum``), for each output element with
``n`` reduced input elements::

    acc   = sum(q)                          (int32, wrapping like TFLite's temp_sum)
    shifted = int32(acc - z_in * n)
    (m, e) = QuantizeMultiplier(double(s_in) / double(s_out))
    MEAN only: k = min(floor(log2 n), 32, 31 + e); m = (m << k) / n; e = e - k
    out   = clamp(M(shifted, m, e) + z_out, type range)

(``M`` is ``MultiplyByQuantizedMultiplier``; no fused activation.) LiteRT 2.3's
reference MEAN takes this path for every input, also when input and output share their
quantization and for the 4-D mean over H and W (the special paths of older TFLite
releases are gone; the tests check both cases). An empty input gives 0. int16 needs zero
points 0. SUM follows the same reference arithmetic for every type; LiteRT 2.3's reference
SUM runs its uint8 code on int8/int16 data (a bug of that build, documented and worked
around in tests/cpu/test_reduce_quantized.py), which this kernel does not reproduce.

REDUCE_MAX / REDUCE_MIN compare raw values and require the output to have the input's
scale and zero point (TFLite checks it); an empty reduction gives the type's lowest
(highest) value.

Axes follow reduce.py (negative, repeated, empty lists; a non-constant axis tensor makes
the output dynamic).

How (MEAN/SUM): an output depends only on its exact sum, so when the reduced axes are
one block of the input's layout and the possible sums are few (8-bit inputs), invoke
sums with one float matmul and looks every output up in a table of all sums built at
prepare (``_SumLookup``); otherwise the int32 sums are requantized with the shared
arithmetic (``requantize_sums``, with ``mean_sum_multiplier`` and ``folded_multiplier``:
plain functions, the first written against the array namespace, that the GPU delegate's
quantized MEAN calls on device arrays too).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.reduce import reduced_shape, resolve_axes
from backends.cpu.kernels.reshape import require_planned_shapes
from backends.cpu import quantization
from backends.cpu.kernels._quantized_window import ConvQuantization
from backends.cpu.quantization import (
    INT32_MAX,
    INT32_MIN,
    _wrap_int32,
    exact_float_dtype,
    is_quantized,
    multiply_by_quantized_multiplier,
    namespace_of,
    requantization_multiplier,
)
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType

QUANTIZED_TYPES = (T.UINT8, T.INT8, T.INT16)


def _params(tensor) -> tuple[float, int]:
    q = tensor.quantization
    return float(np.float32(q.scale[0])), int(q.zero_point[0]) if q.zero_point.size else 0


# -- the integer arithmetic of MEAN/SUM, shared with the GPU delegate (backends/gpu/ops/reduce.py)


def mean_sum_multiplier(input_tensor, output_tensor) -> tuple[int, int]:
    """``QuantizeMultiplier(double(s_in) / double(s_out))`` of a quantized MEAN/SUM."""
    (s_in, _), (s_out, _) = _params(input_tensor), _params(output_tensor)
    return requantization_multiplier(s_in / s_out, "input scale / output scale")


def folded_multiplier(multiplier: int, shift: int, count: int, is_mean: bool) -> tuple[int, int]:
    """(multiplier, shift) applied to ``sum - z_in * count``: MEAN folds 1/count in
    (quantize_multiplier's shift is >= -31, so k >= 0; the int64 quotient truncates
    as C's does, both being positive); SUM keeps them."""
    if is_mean:
        k = min(count.bit_length() - 1, 32, 31 + shift)
        multiplier = (multiplier << k) // count
        shift -= k
    return multiplier, shift


def requantize_sums(sums, zero_sum: int, multiplier: int, shift: int, z_out: int, limits: tuple[int, int]):
    """The outputs (int64) of exact (or int32-wrapped) sums of raw inputs:
    ``clamp(MultiplyByQuantizedMultiplier(int32(sum - zero_sum), m, s) + z_out)`` with
    ``zero_sum = z_in * count`` and the folded ``(m, s)``; written against the array
    namespace of ``sums`` (numpy, or device arrays)."""
    xp = namespace_of(sums)
    shifted = _wrap_int32(sums.astype(np.int64) - zero_sum)  # static_cast<int32_t>
    result = multiply_by_quantized_multiplier(shifted, multiplier, shift) + z_out
    return xp.clip(result, *limits)


class _Plan:
    """Axes, output shape and element count of one (input shape, axis values)."""

    def __init__(self, shape: tuple[int, ...], axis_values: np.ndarray, keep_dims: bool) -> None:
        self.axes = resolve_axes(axis_values, len(shape))
        self.out_shape = reduced_shape(shape, self.axes, keep_dims)
        self.count = int(np.prod([shape[a] for a in self.axes], dtype=np.int64))
        self.empty = int(np.prod(shape, dtype=np.int64)) == 0


class _QuantizedReduce(CpuKernel):
    """Shared prepare (types, axes, static or dynamic output) and invoke."""

    def prepare(self) -> None:
        data, axis = self.inputs
        self.require_types(data, *QUANTIZED_TYPES)
        self.require_types(axis, T.INT32, role="axis")
        self.require_types(self.outputs[0], data.type, role="output")
        self.keep_dims = bool(self.params.keep_dims) if self.params is not None else False
        self.check_quantization()
        if axis.is_constant or axis.num_elements == 0:
            values = axis.data if axis.num_elements else np.zeros(0, np.int32)
            self.plan = self.make_plan(data.shape, values)
            self.planned_shapes = [(data, tuple(data.shape)), (self.outputs[0], self.plan.out_shape)]
            self.outputs[0].resize(self.plan.out_shape)
        else:
            self.plan = None
            self.outputs[0].set_dynamic()

    def check_planned_shapes(self) -> bool:
        """Whether ``bind`` may take views of the buffers (a static plan, fixed buffers);
        a clear error when a buffer no longer has the shape the plan was made for."""
        if self.plan is None or not self.buffers_are_fixed():
            return False
        require_planned_shapes(self, self.planned_shapes)
        return True

    def make_plan(self, shape, axis_values) -> _Plan:
        try:
            return _Plan(tuple(shape), axis_values, self.keep_dims)
        except ValueError as error:
            raise self.unsupported(str(error)) from None

    def invoke(self) -> None:
        x = self.inputs[0].data
        if self.plan is not None:
            self.reduce(x, self.plan, self.outputs[0].data)
            return
        plan = self.make_plan(x.shape, self.inputs[1].data)
        out = np.empty(plan.out_shape, dtype=x.dtype)
        self.reduce(x, plan, out)
        self.outputs[0].set_data(out)

    def check_quantization(self) -> None:
        raise NotImplementedError

    def reduce(self, x: np.ndarray, plan: _Plan, out: np.ndarray) -> None:
        raise NotImplementedError


# v1: uint8 (float32/int32/int64 v1 are in reduce.py); v2: int8; v3: int16.
@register(B.MEAN, 1, 3)
# v1: uint8 and int16 (TFLite stamps no separate version for int16); v2: int8.
@register(B.SUM, 1, 2)
class QuantizedMeanSum(_QuantizedReduce):
    """MEAN v1-v3 and SUM v1-v2 on quantized uint8, int8, int16 (requantizing)."""

    @classmethod
    def accepts(cls, context, node) -> bool:
        first = node.inputs[0] if len(node.inputs) else -1
        return first >= 0 and context.tensors[first].type in QUANTIZED_TYPES and is_quantized(context.tensors[first])

    def check_quantization(self) -> None:
        data, out = self.inputs[0], self.outputs[0]
        for tensor in (data, out):
            if not is_quantized(tensor) or tensor.quantization.is_per_channel:
                raise self.unsupported(f"tensor {tensor.name!r} must be quantized per tensor (a scale and zero point)")
        (s_in, self.z_in), (s_out, self.z_out) = _params(data), _params(out)
        if data.type == T.INT16 and (self.z_in != 0 or self.z_out != 0):
            raise self.unsupported("int16 tensors must have zero point 0 (symmetric int16)")
        if s_out == 0.0:
            raise self.unsupported(f"output {out.name!r} has scale 0")
        self.multiplier, self.shift = mean_sum_multiplier(data, out)
        self.is_mean = self.op == B.MEAN
        info = np.iinfo(data.dtype)
        self.limits = (int(info.min), int(info.max))

    def prepare(self) -> None:
        super().prepare()
        self._fast = None
        self._lookup = None
        plan = self.plan
        if plan is not None and not plan.empty:
            multiplier, shift = self.folded_multiplier(plan.count)
            # (multiplier, shift, z_in * count) of the static plan, and whether the
            # output is small enough for Python ints (fewer calls than numpy's).
            size = int(np.prod(plan.out_shape, dtype=np.int64))
            self._fast = (multiplier, shift, self.z_in * plan.count, size <= 16)
            self._source = None
            # Larger outputs: the convolutions' output stage (its exact float64 path)
            # on acc = sum - z_in * count, when that cannot leave int32 (no wrap).
            info = np.iinfo(self.inputs[0].dtype)
            bound = plan.count * (max(abs(int(info.min)), int(info.max)) + abs(self.z_in))
            self._stage = None
            if bound < (1 << 31):
                low, high = self.limits
                self._stage = ConvQuantization([multiplier], [shift], 0, self.z_out, low, high, False)
                self._stage.accumulator_bound = bound
                self._offset = np.array([-self.z_in * plan.count], np.int64)
            self._lookup = self.sum_lookup(plan)

    def folded_multiplier(self, count: int) -> tuple[int, int]:
        """(multiplier, shift) applied to ``sum - z_in * count`` (``folded_multiplier``)."""
        return folded_multiplier(self.multiplier, self.shift, count, self.is_mean)

    def requantize(self, sums: np.ndarray, count: int) -> np.ndarray:
        """The output values (int64) of exact sums of ``count`` raw inputs each."""
        multiplier, shift = self.folded_multiplier(count)
        return requantize_sums(np.asarray(sums), self.z_in * count, multiplier, shift, self.z_out, self.limits)

    def sum_lookup(self, plan: _Plan) -> "_SumLookup | None":
        """The table path of a static plan, when the table is small and the reduced axes
        are one block of the input's layout."""
        x, out = self.inputs[0], self.outputs[0]
        layout = matmul_layout(x.shape, plan.axes)
        info = np.iinfo(x.dtype)
        low, high = plan.count * int(info.min), plan.count * int(info.max)
        size = high - low + 1
        if layout is None or size > SUM_TABLE_LIMIT:
            return None
        sums = np.arange(low, high + 1, dtype=np.int64)
        table = np.empty(size, out.dtype)
        table[sums % size] = self.requantize(sums, plan.count)  # indexed by sum mod size
        # Every partial sum is an integer of magnitude at most count * 2^15.
        exact = exact_float_dtype(plan.count * max(-int(info.min), int(info.max)))
        return _SumLookup(layout, table, exact, quantization.SINGLE_ROUNDING)

    def usable_lookup(self) -> "_SumLookup | None":
        """The table path, if it applies to this invoke: built for the rounding scheme in
        force, and contiguous buffers (the path reads and writes them through reshapes)."""
        lookup = self._lookup
        if lookup is None or lookup.single_rounding != quantization.SINGLE_ROUNDING:
            return None
        x, out = self.inputs[0].data, self.outputs[0].data
        return lookup if x.flags.c_contiguous and out.flags.c_contiguous else None

    def bind(self) -> Callable[[], None]:
        if not self.check_planned_shapes():
            return self.invoke
        lookup = self.usable_lookup()
        if lookup is None:
            return self.invoke
        return lookup.bind(self.inputs[0].data, self.outputs[0].data)

    def invoke(self) -> None:
        lookup = self.usable_lookup()
        if lookup is not None:
            lookup.bind(self.inputs[0].data, self.outputs[0].data)()
            return
        fast = self._fast
        if fast is None or quantization.SINGLE_ROUNDING:
            super().invoke()
            return
        x = self.inputs[0].data
        if x is not self._source:
            self._source = x
            self._sums = np.empty(self.plan.out_shape, np.int32)
            self._flat_out = self.outputs[0].data.reshape(-1)
        # TFLite accumulates in int32 with wrap-around; numpy's int32 sum wraps the same way.
        sums = np.add.reduce(x, axis=self.plan.axes, dtype=np.int32, keepdims=self.keep_dims, out=self._sums)
        multiplier, shift, zero_sum, small = fast
        low, high = self.limits
        if small:
            left = shift if shift > 0 else 0
            right = -shift if shift < 0 else 0
            mask = (1 << right) - 1
            half = mask >> 1
            z_out = self.z_out
            results = []
            for total in sums.reshape(-1).tolist():
                value = ((total - zero_sum + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)  # int32
                if left:
                    value = (((value << left) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)
                if value == multiplier == INT32_MIN:
                    high_mul = INT32_MAX
                else:
                    high_mul = (value * multiplier + (1 << 30)) >> 31
                value = (high_mul >> right) + ((high_mul & mask) > half + (high_mul < 0)) + z_out
                results.append(low if value < low else high if value > high else value)
            self._flat_out[:] = results
            return
        if self._stage is not None:
            self._stage.requantize(sums, self._offset, self.outputs[0].data)
            return
        result = requantize_sums(sums, zero_sum, multiplier, shift, self.z_out, self.limits)
        np.copyto(self._flat_out, result.reshape(-1), casting="unsafe")

    def reduce(self, x: np.ndarray, plan: _Plan, out: np.ndarray) -> None:
        if plan.empty:
            out[...] = 0
            return
        # TFLite accumulates in int32 with wrap-around; numpy's int32 sum wraps the same way.
        sums = np.asarray(np.add.reduce(x, axis=plan.axes, dtype=np.int32, keepdims=self.keep_dims))
        out[...] = self.requantize(sums, plan.count).reshape(out.shape)


#: Largest sum table (entries: count times the input type's range).
SUM_TABLE_LIMIT = 1 << 20


def matmul_layout(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, int, int] | None:
    """(A, R, B) such that the input, reshaped to [A, R, B], is reduced over its middle
    axis: the reduced axes (ignoring those of size 1) must be one block of the layout.
    None when they are not."""
    sizes = [d for d in shape if d != 1]
    marked = [k for k, i in enumerate(i for i, d in enumerate(shape) if d != 1) if i in axes]
    first, end = (marked[0], marked[-1] + 1) if marked else (len(sizes), len(sizes))
    if end - first != len(marked):
        return None  # a kept axis between two reduced ones

    def product(values: list[int]) -> int:
        return int(np.prod(values, dtype=np.int64))

    return product(sizes[:first]), product(sizes[first:end]), product(sizes[end:])


class _SumLookup:
    """MEAN/SUM of 8-bit (or few 16-bit) values as sum -> table: the input is copied
    into a float buffer, summed by one BLAS matmul (exact: integers below 2^24 in
    float32, 2^53 in float64), the sums stored into an intp index (exact integers) and
    the output looked up in a table of every possible sum (indexed modulo its size,
    which is the number of possible sums: negative sums wrap onto free entries)."""

    def __init__(self, layout: tuple[int, int, int], table: np.ndarray, dtype: np.dtype, single_rounding: bool) -> None:
        self.layout = layout
        self.table = table
        self.dtype = dtype
        self.single_rounding = single_rounding

    def bind(self, x: np.ndarray, out: np.ndarray) -> Callable[[], None]:
        a, r, b = self.layout
        if a == 1:  # [1, R] @ [R, B]
            values = np.zeros((r, b), self.dtype)
            operands = (np.ones((1, r), self.dtype), values)
        elif b == 1:  # [A, R] @ [R, 1]
            values = np.zeros((a, r), self.dtype)
            operands = (values, np.ones((r, 1), self.dtype))
        else:  # [1, R] @ [A, R, B] -> [A, 1, B]
            values = np.zeros((a, r, b), self.dtype)
            operands = (np.ones((1, r), self.dtype), values)
        source = x.reshape(values.shape)
        sums = np.matmul(*operands)
        index = np.empty(sums.shape, np.intp)
        result = out.reshape(sums.shape)
        left, right = operands
        # np.dot: the same BLAS call as np.matmul for 2-D operands, at a lower call cost
        # (for more dimensions it is not a batched product).
        product, take = np.dot if values.ndim == 2 else np.matmul, self.table.take

        def mean() -> None:
            values[...] = source
            product(left, right, out=sums)
            index[...] = sums  # exact integers
            take(index, None, result, "wrap")  # (a sum s is entry s mod table size)

        return mean


# v1: uint8 (float32/int32/int64/bool v1 are in reduce.py); v2: int8; v3: int16.
@register(B.REDUCE_MAX, 1, 3)
@register(B.REDUCE_MIN, 1, 3)
class QuantizedReduceMaxMin(_QuantizedReduce):
    """REDUCE_MAX, REDUCE_MIN v1-v3 on uint8, int8, int16: the largest (smallest) raw value."""

    @classmethod
    def accepts(cls, context, node) -> bool:
        first = node.inputs[0] if len(node.inputs) else -1
        return first >= 0 and context.tensors[first].type in QUANTIZED_TYPES

    def check_quantization(self) -> None:
        data, out = self.inputs[0], self.outputs[0]
        params_in = _params(data) if is_quantized(data) else (0.0, 0)
        params_out = _params(out) if is_quantized(out) else (0.0, 0)
        if params_in != params_out:
            raise self.unsupported(
                f"input (scale, zero point) {params_in} and output {params_out} must be equal: "
                "TFLite's quantized REDUCE_MAX/REDUCE_MIN do not requantize"
            )
        info = np.iinfo(data.dtype)
        self.is_max = self.op == B.REDUCE_MAX
        self.ufunc = np.maximum if self.is_max else np.minimum
        self.initial = info.min if self.is_max else info.max

    def reduce(self, x: np.ndarray, plan: _Plan, out: np.ndarray) -> None:
        result = self.ufunc.reduce(x, axis=plan.axes, keepdims=self.keep_dims, initial=self.initial)
        out[...] = np.asarray(result).reshape(out.shape)

    def bind(self) -> Callable[[], None]:
        if not self.check_planned_shapes():
            return self.invoke
        x, out = self.inputs[0].data, self.outputs[0].data
        reduce, axes, keep_dims, initial = self.ufunc.reduce, self.plan.axes, self.keep_dims, self.initial
        # (positional arguments: cheaper; the output has the reduction's own shape)
        return lambda: reduce(x, axes, None, out, keep_dims, initial)



# v2: int8 and int16 (float32/int32/int64 v1 are in reduce.py; TFLite has no uint8 product).
@register(B.REDUCE_PROD, 1, 2)
class QuantizedReduceProd(_QuantizedReduce):
    """REDUCE_PROD v2 on int8 and int16 (``reference_ops::QuantizedReduceProd``): each
    product step is rescaled, so that it fits int32::

        (m, e)  = QuantizeMultiplier(s_in / s_out ** (1 / n))        (double)
        acc     = q_0 - z_in;  acc = M64(acc * (q_k - z_in), m, e)    (k = 1 .. n - 1)
        out     = clamp(M64(acc, m, e) + z_out)

    with ``M64`` the int64 ``MultiplyByQuantizedMultiplier``, the elements taken in the
    input's row-major order."""

    @classmethod
    def accepts(cls, context, node) -> bool:
        first = node.inputs[0] if len(node.inputs) else -1
        return first >= 0 and is_quantized(context.tensors[first])

    def check_quantization(self) -> None:
        data, out = self.inputs[0], self.outputs[0]
        self.require_types(data, T.INT8, T.INT16)
        for tensor, role in ((data, "input"), (out, "output")):
            if not is_quantized(tensor) or tensor.quantization.is_per_channel:
                raise self.unsupported(f"the {role} {tensor.name!r} needs one scale and zero point")
        (self.s_in, self.z_in), (self.s_out, self.z_out) = _params(data), _params(out)
        if data.type == T.INT16 and (self.z_in or self.z_out):
            raise self.unsupported(f"int16 tensors need zero point 0 (got {self.z_in} in, {self.z_out} out)")
        info = np.iinfo(data.dtype)
        self.limits = (int(info.min), int(info.max))

    def reduce(self, x: np.ndarray, plan: _Plan, out: np.ndarray) -> None:
        if plan.count == 0 or plan.empty:
            raise self.unsupported("an empty reduction: TFLite's quantized product of no values is not defined")
        multiplier, shift = requantization_multiplier(
            self.s_in / self.s_out ** (1.0 / plan.count), "input scale / output scale ** (1 / count)"
        )
        axes = sorted(plan.axes)
        rows = np.moveaxis(x, axes, range(x.ndim - len(axes), x.ndim)).reshape(-1, plan.count).astype(np.int64)
        rows -= self.z_in
        product = rows[:, 0]
        for k in range(1, plan.count):
            product = quantization.multiply_by_quantized_multiplier_int64(product * rows[:, k], multiplier, shift)
        result = quantization.multiply_by_quantized_multiplier_int64(product, multiplier, shift) + self.z_out
        out[...] = np.clip(result, *self.limits).reshape(out.shape)
