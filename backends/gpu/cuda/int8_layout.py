"""Launchers and numpy twins of ``int8_layout.cu``: PAD and CONCATENATION of 8-bit
tensors (int8 / uint8, moved as bytes), one launch per node (CONCATENATION: per 8 inputs).

- :class:`BytePadCuda`: constant PAD / PADV2 with a fill byte (PADV2's value, or the
  output's zero point);
- :class:`ByteConcatenationCuda`: CONCATENATION along one axis, each input optionally
  rescaled through the CPU kernel's 256-entry table (``concat_quantized.rescale_tables``).

``tests/gpu/test_int8_layout_kernels.py`` checks each twin against its kernel (built by the
host shim) bit for bit, and both against the CPU path.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from backends.gpu.cuda.int8_elementwise import _contiguous
from backends.gpu.cuda.layout import CONCAT_MAX_INPUTS, concatenation_groups
from backends.gpu.cuda.sources import _Launcher, elementwise_launch_config

_NULL = np.uint64(0)  # an absent pointer, passed by value


def _check_bytes(*arrays: Any) -> None:
    for array in arrays:
        if array.dtype.itemsize != 1:
            raise TypeError(f"expected 8-bit arrays, got {array.dtype}")


class BytePadCuda(_Launcher):
    """PAD of an 8-bit tensor (rank <= 4) with ``before`` / ``after`` paddings per axis,
    filled with ``value`` (a raw value of the tensor's type). One launch."""

    source = "int8_layout.cu"
    kernel_name = "pad_b8"

    def __init__(self, before: Sequence[int], after: Sequence[int], value: int, dtype: Any, *, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        self.before, self.after = tuple(int(v) for v in before), tuple(int(v) for v in after)
        self.dtype = np.dtype(dtype)
        self.fill = np.array(value, dtype=self.dtype).view(np.uint8).reshape(())[()]  # the fill's byte
        super().__init__(xp, module, host_device)

    def __call__(self, x: Any) -> Any:
        _check_bytes(x)
        rank = x.ndim
        if rank > 4 or len(self.before) != rank:
            raise ValueError(f"pad takes rank <= 4 and one padding per axis, got {list(x.shape)} and {list(self.before)}")
        shape = tuple(int(d) + b + a for d, b, a in zip(x.shape, self.before, self.after))
        x = _contiguous(self.xp, x)
        out = self.xp.empty(shape, dtype=x.dtype)
        if out.size == 0:
            return out
        lead = 4 - rank
        in4 = (1,) * lead + tuple(int(d) for d in x.shape)
        out4 = (1,) * lead + shape
        before4 = (0,) * lead + self.before
        args = (x, out, *(np.int32(v) for v in (*in4, *out4, *before4)), np.uint8(self.fill))
        grid, block = elementwise_launch_config(out.size)
        twin = functools.partial(byte_pad_twin, before=self.before, fill=self.fill)
        self.launch(self.kernel_name, grid, block, args, twin, (x,), (out,))
        return out


def byte_pad_twin(x: np.ndarray, out: np.ndarray, *, before: Sequence[int], fill: int) -> None:
    """``pad_b8`` in numpy: the fill byte everywhere, then the input in its place."""
    out.view(np.uint8)[...] = fill
    out[tuple(slice(b, b + d) for b, d in zip(before, x.shape))] = x


class ByteConcatenationCuda(_Launcher):
    """CONCATENATION of 8-bit tensors along ``axis`` (negative counts from the end).
    ``tables``: None (every input moved as it is) or a device uint8 array [inputs, 256]
    of each input's rescale table (the identity where the input is not rescaled). One launch
    per CONCAT_MAX_INPUTS (8) inputs."""

    source = "int8_layout.cu"
    kernel_name = "concatenation_b8"

    def __init__(self, axis: int, *, xp: Any = None, module: Any = None, host_device: Any = None) -> None:
        self.axis = int(axis)
        super().__init__(xp, module, host_device)

    def __call__(self, inputs: Sequence[Any], tables: Any = None) -> Any:
        if not inputs:
            raise ValueError("nothing to concatenate")
        _check_bytes(*inputs)
        rank = inputs[0].ndim
        axis = self.axis % rank
        first = tuple(inputs[0].shape)
        extents = [int(a.shape[axis]) for a in inputs]
        shape = first[:axis] + (sum(extents),) + first[axis + 1:]
        xp = self.xp
        out = xp.empty(shape, dtype=inputs[0].dtype)
        if out.size == 0:
            return out
        outer = int(np.prod(first[:axis], dtype=np.int64))
        inner = int(np.prod(first[axis + 1:], dtype=np.int64))
        for begin, end, start in concatenation_groups(extents):
            group = [_contiguous(xp, a) for a in inputs[begin:end]]
            group_tables = None if tables is None else tables[begin:end]
            group_extents = extents[begin:end]
            pad = CONCAT_MAX_INPUTS - len(group)
            args = (
                out, *group, *([_NULL] * pad), *(np.int32(e) for e in group_extents), *([np.int32(0)] * pad),
                _NULL if group_tables is None else group_tables,
                np.int32(outer), np.int32(inner), np.int32(shape[axis]), np.int32(start),
            )
            grid, block = elementwise_launch_config(outer * sum(group_extents) * inner)
            twin = functools.partial(byte_concatenation_twin, axis=axis, start=start, count=len(group))
            self.launch(self.kernel_name, grid, block, args, twin, (*group, group_tables), (out,))
        return out


def byte_concatenation_twin(*arrays: Any, axis: int, start: int, count: int) -> None:
    """``concatenation_b8`` in numpy: ``arrays`` are one launch's ``count`` inputs, its
    tables (or None), then the output; each input (looked up in its table) goes into its
    rows of the axis from ``start``."""
    inputs, tables, out = arrays[:count], arrays[count], arrays[count + 1]
    row = start
    for k, x in enumerate(inputs):
        rows = x.shape[axis]
        target = out[(slice(None),) * axis + (slice(row, row + rows),)]
        target[...] = x if tables is None else tables[k].view(x.dtype)[x.view(np.uint8)]
        row += rows
