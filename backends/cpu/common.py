"""Helpers shared by the CPU kernels: fused activations, TFLite's padding arithmetic, and
the thread pools behind numpy (``ThreadLimit``, ``set_blas_threads``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from schema.enums import ActivationFunctionType, Padding


def calculate_activation_range(activation: int, dtype: Any = np.float32) -> tuple:
    """TFLite's ``CalculateActivationRange<T>``: the ``(lo, hi)`` of ``ActivationFunctionWithMinMax``,
    which the float kernels that clamp apply even with no activation: NONE (and TANH /
    SIGN_BIT, which these kernels do not apply) is [lowest, max] of ``dtype``, RELU
    [0, max], so +-inf saturates to +-FLT_MAX in float32."""
    dtype = np.dtype(dtype)
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    if activation == ActivationFunctionType.RELU:
        lo, hi = 0, info.max
    elif activation == ActivationFunctionType.RELU6:
        lo, hi = 0, 6
    elif activation == ActivationFunctionType.RELU_N1_TO_1:
        lo, hi = -1, 1
    else:
        lo, hi = info.min, info.max
    if dtype.kind == "f":
        return float(lo), float(hi)
    # C++ assigns the literal to T: -1 wraps for an unsigned type (uint32 RELU_N1_TO_1).
    return tuple(np.array([lo, hi], dtype=np.int64).astype(dtype).tolist())


def activation_range(activation: int) -> tuple[float | None, float | None]:
    """(min, max) clamp of a fused activation in float kernels (TFLite's
    ``CalculateActivationRange``): TANH and SIGN_BIT, like NONE, clamp nothing."""
    if activation == ActivationFunctionType.RELU:
        return 0.0, None
    if activation == ActivationFunctionType.RELU6:
        return 0.0, 6.0
    if activation == ActivationFunctionType.RELU_N1_TO_1:
        return -1.0, 1.0
    if activation in (ActivationFunctionType.NONE, ActivationFunctionType.TANH, ActivationFunctionType.SIGN_BIT):
        return None, None
    raise ValueError(f"unknown fused activation {activation}")


def apply_activation(values: np.ndarray, activation: int) -> np.ndarray:
    """Apply a fused activation in place (float kernels) and return ``values``.

    Matches TFLite's ``ActivationFunctionWithMinMax``: ``min(max(x, lo), hi)``.
    """
    low, high = activation_range(activation)
    if low is not None and high is not None:
        np.clip(values, low, high, out=values)
    elif low is not None:
        np.maximum(values, low, out=values)
    return values


def check_activation(activation: int, op_name: str) -> None:
    """Reject at prepare time a value that is not a fused activation."""
    try:
        activation_range(activation)
    except ValueError:
        raise ValueError(f"{op_name}: unknown fused activation {activation}") from None


def effective_filter_size(filter_size: int, dilation: int) -> int:
    return (filter_size - 1) * dilation + 1


def compute_out_size(padding: int, in_size: int, filter_size: int, stride: int, dilation: int = 1) -> int:
    """Output extent of a window op along one axis (TFLite's ``ComputeOutSize``)."""
    effective = effective_filter_size(filter_size, dilation)
    if stride <= 0:
        raise ValueError(f"stride must be positive, got {stride}")
    if padding == Padding.SAME:
        return (in_size + stride - 1) // stride
    if padding == Padding.VALID:
        return (in_size + stride - effective) // stride
    raise ValueError(f"unknown padding {padding}")


@dataclass(frozen=True)
class AxisPadding:
    """Padding of one spatial axis: ``before`` + ``after`` (after = before + offset)."""

    out_size: int
    before: int
    after: int


def compute_padding(padding: int, in_size: int, filter_size: int, stride: int, dilation: int = 1) -> AxisPadding:
    """Output size and padding of one axis (TFLite's ``ComputePaddingHeightWidth``).

    The extra padding pixel for an odd total goes after (TFLite's padding offset).
    """
    out_size = compute_out_size(padding, in_size, filter_size, stride, dilation)
    effective = effective_filter_size(filter_size, dilation)
    total = max((out_size - 1) * stride + effective - in_size, 0)
    return AxisPadding(out_size, total // 2, total - total // 2)


def broadcast_shape(*shapes) -> tuple[int, ...]:
    """numpy broadcasting of shapes, with a clear error."""
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise ValueError(f"shapes {[list(s) for s in shapes]} cannot be broadcast together") from None


# -- the thread pools behind numpy ----------------------------------------------------------------
#
# numpy's wheels bundle OpenBLAS, which runs a large matmul on as many threads as there are
# cores (OPENBLAS_NUM_THREADS at import, else all). On a machine whose other cores are busy,
# OpenBLAS's worker threads wait for a time slice and a 5 ms model can take 60 ms
# (measured: the face detection model on 2 cores with a concurrent test run: 3.7 ms on one
# thread, 64 ms on two). ``threadpoolctl`` finds every such pool loaded in the process
# (BLAS, OpenMP) and sets its size; ``ThreadLimit`` does so for the time of one invoke.


#: BLAS calls of at most this many multiply-adds run on one thread in OpenBLAS whatever its
#: thread count: it splits a gemm from 65536 x GEMM_MULTITHREAD_THRESHOLD (4) multiply-adds
#: on, a gemv from 2304 x 4 and a dot from 10000 (``interface/gemm.c``, ``gemv.c``,
#: ``kernel/x86_64/sdot.c``). A subgraph whose kernels all stay below it (``CpuKernel.
#: blas_work``) is invoked without ``ThreadLimit``: no pool would use a second thread.
BLAS_ONE_THREAD_WORK = 8192


class ThreadLimit:
    """The thread pools of the libraries behind numpy (BLAS, OpenMP: what
    ``threadpoolctl`` finds loaded), limited to ``count`` threads inside ``with``, and
    put back as they were after (so one interpreter's limit never outlives its invoke).

    Cheap when nothing changes: a pool already at ``count`` threads is not touched (one
    ``get_num_threads`` call per pool, about 1 us). The pools are those loaded when the
    first limit is entered. The size of a pool is the process's: two threads invoking
    at once with different limits share whichever was set last; and threadpoolctl lets
    only one Python thread (the first that sets it) resize a pthreads OpenBLAS, so an
    invoke from another thread runs with the size that thread left."""

    __slots__ = ("count", "_restore", "_depth")

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError(f"a thread limit is at least 1, got {count}")
        self.count = int(count)
        self._restore: list = []
        self._depth = 0  # (re-entered by a subgraph that a control-flow node runs)

    def __enter__(self) -> "ThreadLimit":
        self._depth += 1
        if self._depth > 1:
            return self
        count = self.count
        restore = self._restore
        for pool in thread_pools():
            previous = pool.get_num_threads()
            if previous is not None and previous != count:
                pool.set_num_threads(count)
                restore.append((pool, previous))
        return self

    def __exit__(self, *exc_info) -> None:
        self._depth -= 1
        if self._depth:
            return
        restore = self._restore
        while restore:
            pool, previous = restore.pop()
            pool.set_num_threads(previous)


_THREAD_POOLS: list | None = None


def thread_pools() -> list:
    """The thread-pool controllers (``threadpoolctl``) of the libraries loaded now,
    found once per process."""
    global _THREAD_POOLS
    if _THREAD_POOLS is None:
        from threadpoolctl import ThreadpoolController

        _THREAD_POOLS = list(ThreadpoolController().lib_controllers)
    return _THREAD_POOLS


def set_blas_threads(count: int) -> int | None:
    """Let numpy's BLAS use ``count`` threads from now on, process-wide (benchmarks; an
    interpreter limits its own invokes with ``ThreadLimit``); returns the previous count
    of the first BLAS pool, or None when threadpoolctl finds none (nothing changes)."""
    previous = None
    for pool in thread_pools():
        if pool.user_api != "blas":
            continue
        if previous is None:
            previous = pool.get_num_threads()
        pool.set_num_threads(int(count))
    return previous
