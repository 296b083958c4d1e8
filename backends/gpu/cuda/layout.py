"""Launchers and numpy twins of ``layout.cu``: PAD (a constant value), CONCATENATION and a
gather along every axis (MIRROR_PAD).

Each launcher (a ``sources._Launcher``) computes the grid and the arguments of its
launches and calls ``launch``: on a device the ``.cu`` kernel runs, in host emulation its
twin (the ``*_twin`` function below) runs as one launch of the emulated machine.
``tests/gpu/test_layout_kernels.py`` checks each twin against its kernel built by the host
shim.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from backends.cpu.common import activation_range as clamp_range
from backends.gpu.cuda.sources import _Launcher, _storage_kernel, elementwise_launch_config
from backends.gpu.cuda.windows import _check_storage, _contiguous, _output
from schema.enums import ActivationFunctionType

F32 = np.float32
#: Inputs one ``concatenation_*`` launch joins (the kernel's CONCAT_MAX_INPUTS).
CONCAT_MAX_INPUTS = 8
_NULL = np.uint64(0)  # an absent pointer, passed by value


# -- PAD ---------------------------------------------------------------------------------------------


def pad_args(x: Any, out: Any, before: Sequence[int], value: float) -> tuple:
    """The arguments of a ``pad_*`` launch: the shapes left-padded to 4-D (1s) and the
    paddings before each axis (0s), in parameter order."""
    rank = x.ndim
    if rank > 4 or out.ndim != rank or len(before) != rank:
        raise ValueError(f"pad takes rank <= 4, got input {list(x.shape)}, output {list(out.shape)}, before {list(before)}")
    lead = 4 - rank
    in_shape = (1,) * lead + tuple(int(d) for d in x.shape)
    out_shape = (1,) * lead + tuple(int(d) for d in out.shape)
    before4 = (0,) * lead + tuple(int(b) for b in before)
    return (x, out, *(np.int32(v) for v in (*in_shape, *out_shape, *before4)), np.float32(value))


class PadCuda(_Launcher):
    """PAD / PADV2 with a constant value, rank <= 4, ``storage`` float32 or float16: ``out``
    [before + in + after per axis] holds ``x`` at offset ``before`` and ``value``
    elsewhere, written in one launch. ``xp``, ``module`` and ``host_device`` as in
    ``sources._Launcher``."""

    source = "layout.cu"

    def __init__(self, storage: Any = np.float32, *, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        self.storage = np.dtype(storage)
        self.kernel_name = _storage_kernel("pad", self.storage)
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any, paddings: Sequence[Sequence[int]], value: float = 0.0, out: Any = None) -> Any:
        """``paddings``: (before, after) per axis, as TFLite's [rank, 2] paddings."""
        _check_storage(self.storage, x)
        pads = [(int(a), int(b)) for a, b in paddings]
        if len(pads) != x.ndim or min((min(p) for p in pads), default=0) < 0:
            raise ValueError(f"paddings {pads} must be [rank, 2] non-negative pairs for a rank-{x.ndim} input")
        shape = tuple(int(d) + a + b for d, (a, b) in zip(x.shape, pads))
        xp = self.xp
        out = _output(xp, out, shape, self.storage)
        if out.size == 0:
            return out
        x = _contiguous(xp, x)
        before = [a for a, _ in pads]
        grid, block = elementwise_launch_config(out.size)
        twin = functools.partial(pad_twin, before=tuple(before), value=float(value))
        self.launch(self.kernel_name, grid, block, pad_args(x, out, before, value), twin, (x,), (out,))
        return out


def pad_twin(x: np.ndarray, out: np.ndarray, *, before: Sequence[int], value: float) -> None:
    """``pad_*`` in numpy: the value (rounded to the storage type as the kernel's store
    rounds it) everywhere, then the input in its place."""
    out[...] = F32(value)
    out[tuple(slice(b, b + d) for b, d in zip(before, x.shape))] = x


# -- CONCATENATION -----------------------------------------------------------------------------------


def concatenation_bounds(activation: int) -> tuple[float, float] | None:
    """The clamp CONCATENATION applies for a fused activation, or None (NONE, TANH: the
    values are moved unchanged, inf included), as the CPU kernel (``activation_range``)."""
    low, high = clamp_range(ActivationFunctionType(activation))
    if low is None and high is None:
        return None
    return (-np.inf if low is None else float(low), np.inf if high is None else float(high))


def concatenation_groups(extents: Sequence[int]) -> list[tuple[int, int, int]]:
    """The launches for inputs with these extents along the axis: (first input, end input,
    first output row) per group of up to CONCAT_MAX_INPUTS inputs with at least one row."""
    groups = []
    start = 0
    for first in range(0, len(extents), CONCAT_MAX_INPUTS):
        end = min(first + CONCAT_MAX_INPUTS, len(extents))
        rows = sum(extents[first:end])
        if rows:
            groups.append((first, end, start))
        start += rows
    return groups


class ConcatenationCuda(_Launcher):
    """CONCATENATION version 1 along ``axis`` (negative counts from the end), ``storage``
    float32 or float16, with the fused activation's clamp (RELU, RELU6, RELU_N1_TO_1; NONE
    and TANH move the values unchanged). One launch per CONCAT_MAX_INPUTS (8) inputs: a
    model's 2-6 inputs are one launch. ``xp``, ``module`` and ``host_device`` as in
    ``sources._Launcher``."""

    source = "layout.cu"

    def __init__(
        self,
        axis: int,
        activation: int = ActivationFunctionType.NONE,
        storage: Any = np.float32,
        *,
        xp: Any = None,
        module: Any = None,
        host_device: Any = None,
    ) -> None:
        self.axis = int(axis)
        self.activation = ActivationFunctionType(activation)
        self.bounds = concatenation_bounds(self.activation)
        self.storage = np.dtype(storage)
        self.kernel_name = _storage_kernel("concatenation", self.storage)
        super().__init__(xp, module, host_device)

    def __call__(self, inputs: Sequence[Any], out: Any = None) -> Any:
        if not inputs:
            raise ValueError("nothing to concatenate")
        _check_storage(self.storage, *inputs)
        rank = inputs[0].ndim
        if not -rank <= self.axis < rank:
            raise ValueError(f"axis {self.axis} is out of range for rank {rank}")
        axis = self.axis % rank
        first = tuple(inputs[0].shape)
        for array in inputs:
            if array.ndim != rank or any(d != e for k, (d, e) in enumerate(zip(array.shape, first)) if k != axis):
                raise ValueError(f"input shapes {[list(a.shape) for a in inputs]} differ outside axis {axis}")
        extents = [int(a.shape[axis]) for a in inputs]
        shape = first[:axis] + (sum(extents),) + first[axis + 1:]
        xp = self.xp
        out = _output(xp, out, shape, self.storage)
        if out.size == 0:
            return out
        outer = int(np.prod(first[:axis], dtype=np.int64))
        inner = int(np.prod(first[axis + 1:], dtype=np.int64))
        clamp = self.bounds is not None
        act_min, act_max = self.bounds or (-np.inf, np.inf)
        for begin, end, start in concatenation_groups(extents):
            group = [_contiguous(xp, a) for a in inputs[begin:end]]
            group_extents = extents[begin:end]
            rows = sum(group_extents)
            pad = CONCAT_MAX_INPUTS - len(group)
            args = (
                out, *group, *([_NULL] * pad), *(np.int32(e) for e in group_extents), *([np.int32(0)] * pad),
                np.int32(outer), np.int32(inner), np.int32(shape[axis]), np.int32(start),
                np.int32(clamp), np.float32(act_min), np.float32(act_max),
            )
            grid, block = elementwise_launch_config(outer * rows * inner)
            twin = functools.partial(concatenation_twin, axis=axis, start=start, bounds=self.bounds)
            self.launch(self.kernel_name, grid, block, args, twin, tuple(group), (out,))
        return out


def concatenation_twin(*arrays: np.ndarray, axis: int, start: int, bounds: tuple[float, float] | None) -> None:
    """``concatenation_*`` in numpy: ``arrays`` are one launch's inputs, then the output;
    each input goes into its rows of the axis from ``start``, clamped in float32 (as
    TFLite's ActivationFunctionWithMinMax: NaN passes) or, without bounds, moved."""
    *inputs, out = arrays
    row = start
    for x in inputs:
        rows = x.shape[axis]
        target = out[(slice(None),) * axis + (slice(row, row + rows),)]
        if bounds is None:
            target[...] = x
        else:
            values = x.astype(F32, copy=False)
            values = np.where(values < F32(bounds[0]), F32(bounds[0]), values)
            target[...] = np.where(values > F32(bounds[1]), F32(bounds[1]), values)
        row += rows


# -- a gather along every axis (MIRROR_PAD) --------------------------------------------------------

_ELEMENT_KERNELS = {1: "gather_axes_b8", 2: "gather_axes_b16", 4: "gather_axes_b32"}


def gather_tables(sources: Sequence[Sequence[int]]) -> np.ndarray:
    """The one int32 table ``gather_axes_*`` reads: each axis's source indices, axis after
    axis, for ``sources`` (one index vector per axis of the input, rank <= 4), left-padded
    to 4 axes with [0]."""
    if len(sources) > 4:
        raise ValueError(f"the gather takes rank <= 4, got {len(sources)} axes")
    padded = [np.zeros(1, np.int64)] * (4 - len(sources)) + [np.asarray(s, np.int64).reshape(-1) for s in sources]
    return np.concatenate(padded).astype(np.int32)


class GatherAxesCuda(_Launcher):
    """``out[o0, ..] = x[t0[o0], t1[o1], ..]`` for a rank <= 4 array of any element type
    of 1, 2 or 4 bytes, with one source-index vector per axis (prepared on the host:
    MIRROR_PAD's mirrored indices, ``arange`` for an axis kept as it is) in the device
    table of :func:`gather_tables`. One launch; values are moved, bits unchanged. ``xp``,
    ``module`` and ``host_device`` as in ``sources._Launcher``."""

    source = "layout.cu"

    def __init__(self, *, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any, tables: Any, out_shape: Sequence[int]) -> Any:
        """``tables``: the device array of :func:`gather_tables`; ``out_shape``: the length
        of each axis's index vector."""
        out_shape = tuple(int(d) for d in out_shape)
        if len(out_shape) != x.ndim or x.ndim > 4:
            raise ValueError(f"out_shape {list(out_shape)} must have the input's rank (<= 4), got {list(x.shape)}")
        name = _ELEMENT_KERNELS.get(np.dtype(x.dtype).itemsize)
        if name is None:
            raise TypeError(f"the gather moves elements of 1, 2 or 4 bytes, not {x.dtype}")
        lead = 4 - x.ndim
        in4 = (1,) * lead + tuple(int(d) for d in x.shape)
        out4 = (1,) * lead + out_shape
        if tables.dtype != np.int32 or tuple(tables.shape) != (sum(out4),):
            raise ValueError(f"tables must be the int32 [{sum(out4)}] array of gather_tables")
        xp = self.xp
        out = xp.empty(out_shape, dtype=x.dtype)
        if out.size == 0:
            return out
        x = _contiguous(xp, x)
        grid, block = elementwise_launch_config(out.size)
        args = (x, tables, out, *(np.int32(v) for v in (*in4[1:], *out4)))
        twin = functools.partial(gather_axes_twin, out4=out4)
        self.launch(name, grid, block, args, twin, (x, tables), (out,))
        return out


def gather_axes_twin(x: np.ndarray, tables: np.ndarray, out: np.ndarray, *, out4: Sequence[int]) -> None:
    """``gather_axes_*`` in numpy: one ``np.ix_`` gather of the 4-D views."""
    starts = np.cumsum([0, *out4])
    index = [tables[starts[k]:starts[k + 1]] for k in range(4)]
    in4 = (1,) * (4 - x.ndim) + x.shape
    out.reshape(out4)[...] = x.reshape(in4)[np.ix_(*index)]
