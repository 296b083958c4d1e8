"""REDUCE_WINDOW (deprecated) and STABLEHLO_REDUCE_WINDOW: a reduction over sliding windows.

TFLite (``kernels/stablehlo_reduce_window.cc``, which implements both), StableHLO's
``reduce_window`` with one input:

1. dilate the input by ``base_dilations`` (``d - 1`` init values between neighbours);
2. pad it with ``padding`` (a (low, high) pair per axis; negative: cropping), with the
   init value;
3. per output position, ``accu = init``, then for each window element in row-major order
   ``accu = f(accu, element)``: windows of ``window_dimensions``, their elements
   ``window_dilations`` apart, the windows ``window_strides`` apart. Along an axis the
   output has ``(size - dilated window) / stride + 1`` positions, or 0 when the window
   does not fit.

``f`` is C++'s, on the type: ADD and MUL wrap on integers (bool is stored as int8 and
reduced as one: an ADD of two trues stores 2, as LiteRT does); MAXIMUM ``a >= b ? a : b``
and MINIMUM ``a <= b ? a : b`` (a NaN accumulated so far is replaced by the next element;
a NaN element is kept); ALL and ANY give 0 or 1 from "non-zero".

REDUCE_WINDOW v1: inputs (input, init_value, window_dimensions, window_strides,
window_dilations), the last three constant int64 vectors; no base dilation or padding; the
function in ``ReduceWindowOptions.reduce_function`` (UNSUPPORTED, the default, is refused).
STABLEHLO_REDUCE_WINDOW v1: inputs (input, init_value), the window in
``StablehloReduceWindowOptions`` (absent vectors: all 1, padding all 0, as LiteRT's
parser fills them), every size, stride and dilation at least 1; the function is the op
of the body subgraph's one node (ADD, MUL, MAXIMUM, MINIMUM, LOGICAL_AND, LOGICAL_OR or
their STABLEHLO_ forms), which LiteRT reads and runs itself (``_regions``).

Types: bool, int8, int16, int32, int64, uint8, float32, float64 (LiteRT's list); the input,
the init value and the output of one type; input rank 1 to 6.
"""

from __future__ import annotations

import itertools

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._regions import region_op
from backends.cpu.kernels._window import _clipped_axis
from backends.cpu.kernels.reshape import int_values
from schema.enums import BuiltinOperator, ReduceWindowFunction, TensorType

T = TensorType
B = BuiltinOperator
F = ReduceWindowFunction

TYPES = (T.BOOL, T.INT8, T.INT16, T.INT32, T.INT64, T.UINT8, T.FLOAT32, T.FLOAT64)
MAX_RANK = 6

#: STABLEHLO_REDUCE_WINDOW's body op -> the function LiteRT runs.
BODY_FUNCTIONS = {
    B.ADD: F.ADD, B.STABLEHLO_ADD: F.ADD,
    B.MUL: F.MUL, B.STABLEHLO_MULTIPLY: F.MUL,
    B.MAXIMUM: F.MAXIMUM, B.STABLEHLO_MAXIMUM: F.MAXIMUM,
    B.MINIMUM: F.MINIMUM, B.STABLEHLO_MINIMUM: F.MINIMUM,
    B.LOGICAL_AND: F.ALL, B.STABLEHLO_AND: F.ALL,
    B.LOGICAL_OR: F.ANY, B.STABLEHLO_OR: F.ANY,
}


def accumulate(function: int, accu: np.ndarray, element: np.ndarray) -> None:
    """``accu = f(accu, element)`` in place, as C++ computes it on the type."""
    if function == F.ADD:
        np.add(accu, element, out=accu)
    elif function == F.MUL:
        np.multiply(accu, element, out=accu)
    elif function == F.MAXIMUM:  # a >= b ? a : b
        np.copyto(accu, element, where=~(accu >= element))
    elif function == F.MINIMUM:  # a <= b ? a : b
        np.copyto(accu, element, where=~(accu <= element))
    elif function == F.ALL:
        np.copyto(accu, (accu != 0) & (element != 0), casting="unsafe")
    else:  # ANY
        np.copyto(accu, (accu != 0) | (element != 0), casting="unsafe")


class ReduceWindowKernel(CpuKernel):
    """The shared part: types, the window geometry, the reduction."""

    def check_types(self) -> None:
        x, init = self.inputs[0], self.inputs[1]
        self.require_types(x, *TYPES)
        self.require_types(init, x.type, role="init_value")
        self.require_types(self.outputs[0], x.type, role="output")
        if not 1 <= len(x.shape) <= MAX_RANK:
            raise self.unsupported(f"the input has rank {len(x.shape)}; LiteRT takes 1 to {MAX_RANK}")
        if init.num_elements < 1:
            raise self.unsupported(f"init_value {init.name!r} is empty")

    def plan(self, window, strides, window_dilations, base_dilations, padding) -> None:
        """Check the window against the input and set the output's shape."""
        shape = self.inputs[0].shape
        rank = len(shape)
        named = {"window_dimensions": window, "window_strides": strides, "window_dilations": window_dilations,
                 "base_dilations": base_dilations}
        for name, values in named.items():
            if len(values) != rank or min(values) < 1:
                raise self.unsupported(f"{name} {list(values)} must hold one value of at least 1 per input axis ({rank})")
        if len(padding) != 2 * rank:
            raise self.unsupported(f"padding {list(padding)} must hold a (low, high) pair per input axis ({2 * rank} values)")
        dilated = [(s - 1) * d + 1 if s else 0 for s, d in zip(shape, base_dilations)]
        padded = [s + padding[2 * a] + padding[2 * a + 1] for a, s in enumerate(dilated)]
        if min(padded) <= 0:
            raise self.unsupported(f"the padding {list(padding)} leaves no element of the (dilated) input {dilated}")
        spans = [(w - 1) * d + 1 for w, d in zip(window, window_dilations)]
        out_shape = [0 if p < span else (p - span) // s + 1 for p, span, s in zip(padded, spans, strides)]
        self.geometry = (tuple(window), tuple(strides), tuple(window_dilations), tuple(base_dilations), tuple(padding))
        self.dilated_shape, self.padded_shape = tuple(dilated), tuple(padded)
        self.outputs[0].resize(out_shape)

    def padded_input(self, x: np.ndarray, init) -> np.ndarray:
        """Steps 1 and 2: the input dilated by ``base_dilations`` and padded / cropped."""
        _, _, _, base_dilations, padding = self.geometry
        if any(d != 1 for d in base_dilations):
            dilated = np.full(self.dilated_shape, init, x.dtype)
            dilated[tuple(slice(None, None, d) for d in base_dilations)] = x
            x = dilated
        if not any(padding):
            return x
        padded = np.full(self.padded_shape, init, x.dtype)
        axes = [_clipped_axis(padding[2 * a], 1, size, out) for a, (size, out) in enumerate(zip(x.shape, padded.shape))]
        if all(axis is not None for axis in axes):
            padded[tuple(a[1] for a in axes)] = x[tuple(a[0] for a in axes)]
        return padded

    def reduce(self, function: int) -> None:
        x, init, out = self.inputs[0].data, self.inputs[1].data.reshape(-1)[0], self.outputs[0].data
        if x.dtype == np.bool_:  # (bool is reduced as the int8 that stores it)
            x, init, out = x.view(np.int8), np.int8(init), out.view(np.int8)
        window, strides, window_dilations, _, _ = self.geometry
        padded = self.padded_input(x, init)
        out[...] = init
        if out.size == 0:
            return
        with np.errstate(over="ignore", invalid="ignore"):
            for tap in itertools.product(*(range(w) for w in window)):  # row-major, as TFLite
                view = tuple(
                    slice(t * d, t * d + (n - 1) * s + 1, s)
                    for t, d, s, n in zip(tap, window_dilations, strides, out.shape)
                )
                accumulate(function, out, padded[view])


@register(B.REDUCE_WINDOW, 1, 1)  # v1 (the only version)
class ReduceWindow(ReduceWindowKernel):
    """REDUCE_WINDOW v1 (deprecated): the window as constant int64 inputs."""

    def prepare(self) -> None:
        self.require_num_inputs(5)
        self.check_types()
        vectors = []
        for position, role in ((2, "window_dimensions"), (3, "window_strides"), (4, "window_dilations")):
            tensor = self.inputs[position]
            self.require_types(tensor, T.INT64, role=role)
            if not tensor.is_constant:
                raise self.unsupported(f"{role} {tensor.name!r} must be a constant (LiteRT requires it)")
            vectors.append(int_values(tensor))
        self.function = self.params.reduce_function
        if self.function == F.UNSUPPORTED:
            raise self.unsupported("reduce_function is UNSUPPORTED (the default): set ADD, MUL, MINIMUM, MAXIMUM, ALL or ANY")
        rank = len(self.inputs[0].shape)
        self.plan(*vectors, [1] * rank, [0] * (2 * rank))

    def invoke(self) -> None:
        self.reduce(self.function)


@register(B.STABLEHLO_REDUCE_WINDOW, 1, 1)  # v1 (the only version)
class StablehloReduceWindow(ReduceWindowKernel):
    """STABLEHLO_REDUCE_WINDOW v1: the window in the options, the function in the body."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        self.check_types()
        params = self.params
        if not params.window_dimensions:
            raise self.unsupported("window_dimensions is absent or empty (LiteRT requires it)")
        rank = len(params.window_dimensions)

        def filled(values, fill: int, count: int) -> list[int]:  # LiteRT's parser: absent or empty -> fill
            return list(values) if values else [fill] * count

        self.function = region_op(self, params.body_subgraph_index, "body", BODY_FUNCTIONS)
        self.plan(
            list(params.window_dimensions), filled(params.window_strides, 1, rank),
            filled(params.window_dilations, 1, rank), filled(params.base_dilations, 1, rank),
            filled(params.padding, 0, 2 * rank),
        )

    def invoke(self) -> None:
        self.reduce(self.function)
