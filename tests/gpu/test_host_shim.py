"""The delegate's CUDA kernels executed on the CPU through the host shim (g++ +
``cuda_host.h``), compared with the project's CPU kernel; the shim punishing what a GPU
punishes (races between blocks, reliance on block order, reading shared memory nobody
wrote); and the same kernels under AddressSanitizer, in a standalone executable."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
import types

import numpy as np
import pytest

from backends.gpu.cuda import host, sources
from backends.gpu.cuda.host import HostModule, HostShimError, run_bias_activation_host, run_depthwise_conv2d_host
from backends.gpu.cuda.depthwise import DepthwiseConv2DCuda, DepthwiseGeometry
from backends.gpu.cuda.sources import FLT_MAX, activation_range, read_source
from kernel_twin import assert_close_to_reference
from oracle import run_litert, run_ours
from schema.builder import ModelBuilder
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator, Padding
from schema.params import DepthwiseConv2DParams



# -- the reference: the CPU kernel through the interpreter ----------------------------------------

def cpu_depthwise(x, w, b, stride, dilation, padding, activation) -> np.ndarray:
    """One DEPTHWISE_CONV_2D node (weights and bias constant) run by the project's CPU kernel."""
    multiplier = w.shape[3] // x.shape[3]
    params = DepthwiseConv2DParams(
        padding=padding, stride_h=stride[0], stride_w=stride[1], depth_multiplier=multiplier,
        fused_activation_function=activation, dilation_h_factor=dilation[0], dilation_w_factor=dilation[1],
    )
    builder = ModelBuilder()
    graph = builder.subgraph()
    inputs = [graph.add_input("x", list(x.shape)), graph.add_constant("w", w)]
    if b is not None:
        inputs.append(graph.add_constant("b", b))
    geometry = DepthwiseGeometry.of(x.shape, w.shape, stride, dilation, padding)
    y = graph.add_tensor("y", list(geometry.out_shape))
    graph.add_operator(BuiltinOperator.DEPTHWISE_CONV_2D, inputs, [y], params)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return run_ours(builder.build(), [x])[0]


def random_case(input_shape, kernel, multiplier, seed=0, bias=True, scale=2.0):
    rng = np.random.default_rng(seed)
    channels = input_shape[3] * multiplier
    x = rng.uniform(-scale, scale, input_shape).astype(np.float32)
    w = rng.uniform(-1, 1, (1, *kernel, channels)).astype(np.float32)
    b = rng.uniform(-1, 1, channels).astype(np.float32) if bias else None
    return x, w, b


def fits(input_shape, kernel, stride, dilation, padding) -> bool:
    try:
        DepthwiseGeometry.of(input_shape, (1, *kernel, input_shape[3]), stride, dilation, padding)
    except ValueError:
        return False
    return True


# -- the grid: shapes x strides x dilations x multipliers x paddings (activations cycled) ----------

SHAPES = [((1, 7, 9, 3), (3, 3)), ((2, 6, 5, 2), (2, 4))]
ACTIVATIONS = [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1]
GRID = [
    (shape, kernel, (stride, stride), (dilation, dilation), multiplier, padding)
    for (shape, kernel), stride, dilation, multiplier, padding in itertools.product(
        SHAPES, (1, 2), (1, 2, 3), (1, 2, 3), (Padding.SAME, Padding.VALID)
    )
    if fits(shape, kernel, (stride, stride), (dilation, dilation), padding)
]
# Different strides and dilations along the two axes.
GRID += [
    ((1, 11, 8, 2), (3, 2), (1, 2), (3, 1), 2, Padding.SAME),
    ((1, 8, 11, 3), (2, 3), (2, 1), (1, 2), 1, Padding.VALID),
    ((1, 9, 9, 1), (3, 3), (2, 1), (2, 3), 3, Padding.SAME),
]


def grid_id(case) -> str:
    shape, kernel, stride, dilation, multiplier, padding = case
    return (
        f"{'x'.join(map(str, shape))}-k{kernel[0]}x{kernel[1]}-s{stride[0]}{stride[1]}-"
        f"d{dilation[0]}{dilation[1]}-m{multiplier}-{Padding(padding).name.lower()}"
    )


@pytest.mark.parametrize("case_index", range(len(GRID)), ids=[grid_id(c) for c in GRID])
def test_depthwise_cu_on_host_matches_cpu_kernel(case_index):
    shape, kernel, stride, dilation, multiplier, padding = GRID[case_index]
    activation = ACTIVATIONS[case_index % len(ACTIVATIONS)]
    x, w, b = random_case(shape, kernel, multiplier, seed=case_index)
    got = run_depthwise_conv2d_host(x, w, b, stride, dilation, padding, activation, multiplier)
    want = cpu_depthwise(x, w, b, stride, dilation, padding, activation)
    assert got.shape == want.shape and got.dtype == np.float32
    assert_close_to_reference(got, want)


def test_grid_covers_every_stride_dilation_multiplier_and_padding():
    seen = {(c[2][0], c[3][0], c[4], c[5]) for c in GRID}
    for combo in itertools.product((1, 2), (1, 2, 3), (1, 2, 3), (Padding.SAME, Padding.VALID)):
        assert combo in seen, f"stride, dilation, multiplier, padding {combo} is not in the grid"


@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH], ids=lambda a: a.name)
def test_every_fused_activation_clamps_like_the_cpu_kernel(activation):
    # Inputs large enough that every bound is crossed; TANH is no clamp in TFLite's float kernels.
    x, w, b = random_case((1, 6, 7, 3), (3, 3), 2, seed=11, scale=8.0)
    got = run_depthwise_conv2d_host(x, w, b, 1, 2, Padding.SAME, activation, 2)
    want = cpu_depthwise(x, w, b, (1, 1), (2, 2), Padding.SAME, activation)
    assert_close_to_reference(got, want)
    low, high = activation_range(activation)
    assert got.min() >= low and got.max() <= high


def test_without_bias_the_null_pointer_adds_nothing():
    x, w, _ = random_case((2, 5, 6, 2), (3, 3), 3, seed=3, bias=False)
    got = run_depthwise_conv2d_host(x, w, None, 2, 1, Padding.SAME, Act.RELU6, 3)
    assert_close_to_reference(got, cpu_depthwise(x, w, None, (2, 2), (1, 1), Padding.SAME, Act.RELU6))


def test_nan_propagates_through_the_clamp_like_the_cpu_kernel():
    x, w, b = random_case((1, 5, 5, 1), (3, 3), 1, seed=4)
    x[0, 2, 2, 0] = np.nan
    got = run_depthwise_conv2d_host(x, w, b, 1, 1, Padding.SAME, Act.RELU6, 1)
    want = cpu_depthwise(x, w, b, (1, 1), (1, 1), Padding.SAME, Act.RELU6)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got).sum() == 9  # the 3x3 outputs whose window holds the NaN
    assert_close_to_reference(got[~np.isnan(got)], want[~np.isnan(want)])


@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU], ids=lambda a: a.name)
def test_infinities_are_clamped_to_flt_max_like_litert(activation):
    # TFLite's float range for NONE/RELU ends at +-FLT_MAX (CalculateActivationRange), so an
    # infinite sum comes out as +-FLT_MAX from LiteRT's reference kernel, and from ours.
    builder = ModelBuilder()
    graph = builder.subgraph()
    x_index = graph.add_input("x", [1, 3, 3, 1])
    w_index = graph.add_constant("w", np.ones((1, 1, 1, 1), np.float32))
    y = graph.add_tensor("y", [1, 3, 3, 1])
    params = DepthwiseConv2DParams(padding=Padding.SAME, stride_h=1, stride_w=1, depth_multiplier=1,
                                   fused_activation_function=activation)
    graph.add_operator(BuiltinOperator.DEPTHWISE_CONV_2D, [x_index, w_index], [y], params)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    x = np.zeros((1, 3, 3, 1), np.float32)
    x[0, 1, 1, 0], x[0, 0, 0, 0] = np.inf, -np.inf
    got = run_depthwise_conv2d_host(x, np.ones((1, 1, 1, 1), np.float32), None, 1, 1, Padding.SAME, activation, 1)
    np.testing.assert_array_equal(got, run_litert(builder.build(), [x])[0])
    assert got[0, 1, 1, 0] == FLT_MAX


def test_float16_storage_kernel_matches_the_cpu_kernel_to_half_precision():
    x, w, b = random_case((1, 9, 8, 3), (3, 3), 2, seed=5)
    x16, w16, b16 = x.astype(np.float16), w.astype(np.float16), b.astype(np.float16)
    got = run_depthwise_conv2d_host(x16, w16, b16, 1, 2, Padding.SAME, Act.NONE, 2)
    assert got.dtype == np.float16
    # Reference: float32 math on the same (half-rounded) values, rounded to half at the end.
    want = cpu_depthwise(x16.astype(np.float32), w16.astype(np.float32), b16.astype(np.float32),
                         (1, 1), (2, 2), Padding.SAME, Act.NONE).astype(np.float16)
    ulp = np.spacing(np.abs(want)).astype(np.float32)
    assert np.all(np.abs(got.astype(np.float32) - want.astype(np.float32)) <= ulp)


def test_multiplier_that_does_not_match_the_shapes_is_refused():
    x, w, b = random_case((1, 4, 4, 2), (3, 3), 2)
    with pytest.raises(ValueError, match="multiplier 3"):
        run_depthwise_conv2d_host(x, w, b, 1, 1, Padding.SAME, Act.NONE, 3)


# -- the fused bias + activation epilogue -----------------------------------------------------------

@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1], ids=lambda a: a.name)
def test_bias_activation_cu_on_host_equals_add_then_clamp(activation):
    rng = np.random.default_rng(int(activation))
    values = rng.uniform(-8, 8, (3, 7, 5, 6)).astype(np.float32)
    bias = rng.uniform(-2, 2, 6).astype(np.float32)
    low, high = activation_range(activation)
    np.testing.assert_array_equal(run_bias_activation_host(values, bias, activation), np.clip(values + bias, low, high))
    np.testing.assert_array_equal(run_bias_activation_host(values, None, activation), np.clip(values, low, high))


def test_bias_activation_float16_rounds_the_float32_result_once():
    rng = np.random.default_rng(1)
    values = rng.uniform(-8, 8, (300, 5)).astype(np.float16)
    bias = rng.uniform(-2, 2, 5).astype(np.float16)
    want = np.clip(values.astype(np.float32) + bias.astype(np.float32), 0, 6).astype(np.float16)
    np.testing.assert_array_equal(run_bias_activation_host(values, bias, Act.RELU6), want)


# -- the launcher: arguments are checked against the kernel's parameters -----------------------------

def test_launch_with_a_float64_where_the_kernel_takes_a_float_is_refused():
    kernel = host.shipped_module("depthwise_conv2d.cu").get_function("depthwise_conv2d_f32")
    x, w, b = random_case((1, 4, 4, 1), (3, 3), 1)
    out = np.empty((1, 4, 4, 1), np.float32)
    ints = DepthwiseGeometry.of(x.shape, w.shape, 1, 1, Padding.SAME).scalar_args()
    with pytest.raises(HostShimError, match="argument 19 has 8 bytes, the parameter has 4"):
        kernel((1,), (256,), (x, w, b, out, *ints, np.float64(-FLT_MAX), np.float32(FLT_MAX)))
    with pytest.raises(HostShimError, match="takes 21 arguments, 20 given"):
        kernel((1,), (256,), (x, w, b, out, *ints, np.float32(0)))


def test_launch_with_more_than_1024_threads_per_block_is_refused_like_on_a_gpu():
    kernel = host.shipped_module("depthwise_conv2d.cu").get_function("depthwise_conv2d_f32")
    x, w, b = random_case((1, 4, 4, 1), (3, 3), 1)
    out = np.empty((1, 4, 4, 1), np.float32)
    ints = DepthwiseGeometry.of(x.shape, w.shape, 1, 1, Padding.SAME).scalar_args()
    with pytest.raises(HostShimError, match="invalid launch configuration"):
        kernel((1,), (2048,), (x, w, b, out, *ints, np.float32(-1), np.float32(1)))


# -- the CuPy launchers, with numpy and the host shim standing in for cupy -----------------------------

class _HostRawModule:
    """``cupy.RawModule`` for the launcher classes, backed by the host shim."""

    def __init__(self, code: str, options: tuple) -> None:
        assert options == sources.CUPY_OPTIONS
        (filename,) = [name for name in sources.SOURCES if read_source(name) == code]
        self._module = HostModule(code, filename)

    def get_function(self, name: str):
        return self._module.get_function(name)


@pytest.fixture
def host_cupy(monkeypatch):
    fake = types.SimpleNamespace(RawModule=_HostRawModule, ascontiguousarray=np.ascontiguousarray, empty=np.empty)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    return fake


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("storage", [np.float32, np.float16], ids=["f32", "f16"])
def test_cupy_depthwise_launcher_passes_the_arguments_the_kernel_expects(host_cupy, storage, bias):
    x, w, b = random_case((2, 7, 6, 2), (3, 3), 2, seed=9, bias=bias)
    op = DepthwiseConv2DCuda(stride=(2, 1), dilation=(1, 3), padding="same", activation=Act.RELU6, storage=storage)
    b_arg = None if b is None else b.astype(storage)
    got = op(x.astype(storage), w.astype(storage), b_arg)
    want = run_depthwise_conv2d_host(x.astype(storage), w.astype(storage), b_arg, (2, 1), (1, 3), Padding.SAME, Act.RELU6, 2)
    assert got.dtype == storage
    np.testing.assert_array_equal(got, want)


def test_cupy_bias_activation_launcher_works_in_place(host_cupy):
    rng = np.random.default_rng(2)
    values = rng.uniform(-8, 8, (5, 4, 3)).astype(np.float32)
    bias = rng.uniform(-1, 1, 3).astype(np.float32)
    want = np.clip(values + bias, -1, 1)
    out = sources.BiasActivationCuda(Act.RELU_N1_TO_1)(values, bias)
    assert out is values
    np.testing.assert_array_equal(values, want)


# -- block execution modes ------------------------------------------------------------------------

BLOCK_SUM = r"""
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float partial[128];
    const int t = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + t;
    partial[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride) partial[t] += partial[t + stride];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = partial[0];
}
"""


def test_cooperative_mode_runs_a_shared_memory_block_reduction():
    module = HostModule(BLOCK_SUM, "block_sum.cu", ["block_sum"], cooperative=True)
    x = np.arange(300, dtype=np.float32)
    out = np.zeros(3, np.float32)
    module.get_function("block_sum")((3,), (128,), (x, out, np.int32(300)))
    np.testing.assert_array_equal(out, [x[:128].sum(), x[128:256].sum(), x[256:].sum()])


COORDINATES = r"""
extern "C" __global__ void coordinates(int* out) {
    const int block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    const int thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    const int i = block * (blockDim.x * blockDim.y * blockDim.z) + thread;
    atomicAdd(&out[4 * i], 1);
    out[4 * i + 1] = blockIdx.x + 10 * blockIdx.y + 100 * blockIdx.z;
    out[4 * i + 2] = threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z;
    out[4 * i + 3] = gridDim.x * blockDim.y;
}
"""


@pytest.mark.parametrize("cooperative", [False, True], ids=["sequential", "cooperative"])
def test_launch_runs_every_thread_of_a_3d_grid_once_with_its_indices(cooperative):
    module = HostModule(COORDINATES, "coordinates.cu", ["coordinates"], cooperative=cooperative)
    grid, block = (3, 2, 2), (4, 3, 2)
    out = np.zeros((2, 2, 3, 2, 3, 4, 4), np.int32)  # [bz, by, bx, tz, ty, tx, field]
    module.get_function("coordinates")(grid, block, (out,))
    bz, by, bx, tz, ty, tx = np.indices(out.shape[:-1])
    np.testing.assert_array_equal(out[..., 0], 1)
    np.testing.assert_array_equal(out[..., 1], bx + 10 * by + 100 * bz)
    np.testing.assert_array_equal(out[..., 2], tx + 10 * ty + 100 * tz)
    np.testing.assert_array_equal(out[..., 3], 3 * 3)


EARLY_EXIT_SUM = r"""
extern "C" __global__ void early_exit_sum(const float* x, float* out, int n) {
    __shared__ float total;
    if (threadIdx.x == 0) total = 0.0f;
    __syncthreads();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;  // exited threads no longer take part in __syncthreads
    atomicAdd(&total, x[i]);
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = total;
}
"""


def test_cooperative_syncthreads_does_not_wait_for_threads_that_returned():
    module = HostModule(EARLY_EXIT_SUM, "early_exit_sum.cu", ["early_exit_sum"], cooperative=True)
    x = np.ones(70, np.float32)
    out = np.zeros(3, np.float32)
    module.get_function("early_exit_sum")((3,), (32,), (x, out, np.int32(70)))
    np.testing.assert_array_equal(out, [32, 32, 6])


def test_syncthreads_without_cooperative_mode_fails_to_build_saying_why():
    with pytest.raises(HostShimError, match="needs the cooperative mode"):
        HostModule(BLOCK_SUM, "block_sum.cu", ["block_sum"])


# -- warps: a block's warps take turns between barriers; __syncwarp is the warp's own barrier --------

# Each step, every thread stages one value of a tile and reads its neighbour's, which another
# warp staged (thread t reads t + 32, mod the block): a __syncthreads() after the staging and one
# before the next step's staging are both needed.
TILE_STEPS = r"""
extern "C" __global__ void tile_steps(const int* x, int* out, int steps, int barrier_before_next) {
    __shared__ int tile[128];
    const int t = threadIdx.x, n = blockDim.x;
    int acc = 0;
    for (int step = 0; step < steps; ++step) {
        tile[t] = x[step * n + t];
        __syncthreads();
        acc += tile[(t + 32) % n];
        if (barrier_before_next) __syncthreads();  // the tile is overwritten by the next step
    }
    out[t] = acc;
}
"""


def tile_steps(barrier_before_next: bool) -> tuple[np.ndarray, np.ndarray]:
    kernel = HostModule(TILE_STEPS, "tile_steps.cu", ["tile_steps"], cooperative=True).get_function("tile_steps")
    steps, n = 3, 128
    x = np.arange(steps * n, dtype=np.int32).reshape(steps, n) * 7
    out = np.zeros(n, np.int32)
    kernel((1,), (n,), (x, out, np.int32(steps), np.int32(barrier_before_next)))
    return out, np.roll(x, -32, axis=1).sum(axis=0)


def test_a_block_whose_barriers_are_all_there_sums_every_step():
    got, want = tile_steps(barrier_before_next=True)
    np.testing.assert_array_equal(got, want)


def test_a_missing_barrier_between_a_tiles_last_read_and_the_next_staging_fails_every_time(monkeypatch):
    # The warp that runs first stages the next step over the tile before the others read it:
    # whatever the order of the warps, some thread reads a later step's value.
    for seed in range(5):
        monkeypatch.setenv("CUDA_HOST_SEED", str(seed))
        got, want = tile_steps(barrier_before_next=False)
        assert not np.array_equal(got, want), f"seed {seed}: the race went unseen"


MISSING_FIRST_BARRIER = r"""
extern "C" __global__ void missing_first_barrier(int* out) {
    __shared__ int tile[64];
    tile[threadIdx.x] = threadIdx.x;
    out[threadIdx.x] = tile[63 - threadIdx.x];  // the other warp's value, read with no barrier
}
"""


def test_a_warp_reading_what_another_warp_has_not_written_yet_reads_poison():
    kernel = HostModule(MISSING_FIRST_BARRIER, "missing_first_barrier.cu", ["missing_first_barrier"], cooperative=True)
    out = np.zeros(64, np.int32)
    kernel.get_function("missing_first_barrier")((1,), (64,), (out,))
    # The warp that ran first read the other warp's half before it was written: poison (-1);
    # the warp that ran second found the first warp's values.
    warp_0_first = bool((out[:32] == -1).all())
    first, second = (out[:32], out[32:]) if warp_0_first else (out[32:], out[:32])
    np.testing.assert_array_equal(first, -1)
    np.testing.assert_array_equal(np.sort(second), np.arange(32) + (0 if warp_0_first else 32))


WARP_EXCHANGE = r"""
extern "C" __global__ void warp_exchange(int* out) {
    __shared__ int lanes[64];
    const int t = threadIdx.x, lane = t % 32, base = t - lane;
    lanes[t] = 10 * t;
    __syncwarp();  // the warp's own values: no block barrier needed
    out[t] = lanes[base + 31 - lane];
}
"""


def test_syncwarp_synchronises_the_threads_of_a_warp():
    kernel = HostModule(WARP_EXCHANGE, "warp_exchange.cu", ["warp_exchange"], cooperative=True)
    out = np.zeros(64, np.int32)
    kernel.get_function("warp_exchange")((2,), (64,), (out,))
    t = np.arange(64)
    np.testing.assert_array_equal(out, 10 * (t - t % 32 + 31 - t % 32))


def test_syncwarp_without_cooperative_mode_fails_to_build_saying_why():
    with pytest.raises(HostShimError, match=r"__syncwarp\(\) needs the cooperative mode"):
        HostModule(WARP_EXCHANGE.replace("__shared__ int lanes[64];", "int lanes[64];"), "warp_exchange.cu", ["warp_exchange"])


# -- what a GPU punishes: races between blocks, block order, uninitialized shared memory -----------

RACY_SUM = r"""
extern "C" __global__ void racy_sum(const float* x, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[0] += x[i];  // a read-modify-write that threads of other blocks interleave with
}
"""

ATOMIC_SUM = r"""
extern "C" __global__ void atomic_sum(const int* x, int* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, x[i]);
}
"""

SUM_THREADS, SUM_BLOCK = 100_000, 256
SUM_GRID = (SUM_THREADS + SUM_BLOCK - 1) // SUM_BLOCK


def racy_sum(x: np.ndarray) -> float:
    out = np.zeros(1, np.float32)
    kernel = HostModule(RACY_SUM, "racy_sum.cu", ["racy_sum"]).get_function("racy_sum")
    kernel((SUM_GRID,), (SUM_BLOCK,), (x, out, np.int32(x.size)))
    return float(out[0])


def test_non_atomic_accumulation_from_many_blocks_loses_updates(monkeypatch):
    monkeypatch.delenv("CUDA_HOST_WORKERS", raising=False)
    x = np.ones(SUM_THREADS, np.float32)  # every partial sum is exact in float32: only lost updates differ
    # Blocks overlap only while two cores are free for the workers (a launch takes ~1 ms). On a
    # machine with a free core the first launch or two lose updates; while other processes
    # hold the cores it can take a few hundred launches, hence a time budget, not a count.
    deadline, launches = time.monotonic() + 10.0, 0
    while True:
        total, launches = racy_sum(x), launches + 1
        if total != SUM_THREADS or time.monotonic() > deadline:
            break
    assert total < SUM_THREADS, f"{launches} launches of a racy kernel in 10 s all gave the exact sum"


def test_with_one_worker_blocks_do_not_overlap_and_the_racy_sum_is_exact(monkeypatch):
    monkeypatch.setenv("CUDA_HOST_WORKERS", "1")
    x = np.ones(SUM_THREADS, np.float32)
    assert [racy_sum(x) for _ in range(5)] == [SUM_THREADS] * 5


def test_atomic_add_from_many_blocks_gives_the_exact_sum(monkeypatch):
    monkeypatch.delenv("CUDA_HOST_WORKERS", raising=False)
    kernel = HostModule(ATOMIC_SUM, "atomic_sum.cu", ["atomic_sum"]).get_function("atomic_sum")
    x = np.random.default_rng(0).integers(-1000, 1000, SUM_THREADS).astype(np.int32)
    for _ in range(5):
        out = np.zeros(1, np.int32)
        kernel((SUM_GRID,), (SUM_BLOCK,), (x, out, np.int32(x.size)))
        assert out[0] == x.sum()


BLOCK_ORDER = r"""
extern "C" __global__ void block_order(int* count, int* order) {
    if (threadIdx.x == 0) order[atomicAdd(count, 1)] = blockIdx.x;  // blocks, as they ran
}
"""

ORDER_MODES = {"sequential-one-worker": False, "cooperative": True}


def run_order(cooperative: bool, blocks: int = 64) -> tuple[list[int], int]:
    """The order the blocks of one launch ran in, and the launch's seed."""
    kernel = HostModule(BLOCK_ORDER, "block_order.cu", ["block_order"], cooperative=cooperative).get_function("block_order")
    count, order = np.zeros(1, np.int32), np.full(blocks, -1, np.int32)
    kernel((blocks,), (32,), (count, order))
    return order.tolist(), kernel.last_seed


@pytest.fixture(params=sorted(ORDER_MODES))
def order_mode(request, monkeypatch):
    # One worker: the order the atomic counter sees is the launcher's order, not a race.
    monkeypatch.setenv("CUDA_HOST_WORKERS", "1")
    monkeypatch.delenv("CUDA_HOST_SEED", raising=False)
    return ORDER_MODES[request.param]


def test_blocks_run_in_a_shuffled_order_that_changes_between_launches(order_mode):
    first, first_seed = run_order(order_mode)
    second, second_seed = run_order(order_mode)
    assert sorted(first) == list(range(64)), "every block runs exactly once"
    assert first != list(range(64))
    assert first != second and first_seed != second_seed


def test_a_fixed_cuda_host_seed_gives_the_same_block_order(order_mode, monkeypatch):
    monkeypatch.setenv("CUDA_HOST_SEED", "1234")
    first, seed = run_order(order_mode)
    assert run_order(order_mode)[0] == first and seed == 1234
    monkeypatch.setenv("CUDA_HOST_SEED", "1235")
    assert run_order(order_mode)[0] != first


def test_last_seed_replays_the_block_order_of_a_launch(order_mode, monkeypatch):
    order, seed = run_order(order_mode)
    monkeypatch.setenv("CUDA_HOST_SEED", str(seed))
    assert run_order(order_mode)[0] == order


@pytest.mark.parametrize("variable, value", [("CUDA_HOST_WORKERS", "0"), ("CUDA_HOST_WORKERS", "two"), ("CUDA_HOST_SEED", "-1")])
def test_a_malformed_environment_variable_fails_the_launch_saying_which(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises(HostShimError, match=f"'{variable}': '{value}'"):
        run_order(False)


READ_BEFORE_WRITE = r"""
extern "C" __global__ void read_before_write(unsigned int* ints_seen, float* floats_seen) {
    __shared__ unsigned int ints[64];
    __shared__ float floats[64];
    const unsigned int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    ints_seen[i] = ints[t];  // nothing wrote them in this block
    floats_seen[i] = floats[t];
    ints[t] = blockIdx.x;  // what the next block must not find
    floats[t] = 0.0f;
}
"""

POISON = 0xFFFFFFFF


def test_shared_memory_read_before_it_is_written_is_poison_in_every_block():
    kernel = HostModule(READ_BEFORE_WRITE, "read_before_write.cu", ["read_before_write"], cooperative=True)
    ints, floats = np.zeros((8, 64), np.uint32), np.zeros((8, 64), np.float32)
    kernel.get_function("read_before_write")((8,), (64,), (ints, floats))
    np.testing.assert_array_equal(ints, POISON)  # not 0, not the previous block's index
    np.testing.assert_array_equal(floats.view(np.uint32), POISON)  # a NaN


HANDOFF = r"""
extern "C" __global__ void handoff(int* seen) {
    __shared__ int previous_block;
    if (threadIdx.x == 0) seen[blockIdx.x] = previous_block;  // hoping for the block that ran before
    __syncthreads();
    if (threadIdx.x == 0) previous_block = blockIdx.x;
}
"""


def test_shared_memory_does_not_carry_a_value_to_the_next_block_or_launch():
    kernel = HostModule(HANDOFF, "handoff.cu", ["handoff"], cooperative=True).get_function("handoff")
    for _ in range(2):  # the second launch's first block would find the first launch's last one
        seen = np.zeros(8, np.int32)
        kernel((8,), (32,), (seen,))
        np.testing.assert_array_equal(seen, -1)


TEMPLATE_SHARED = r"""
template <typename T>
__device__ void first_read(T* seen) {
    static __shared__ T scratch[32];  // in a function template, and `static` as well
    seen[blockIdx.x * blockDim.x + threadIdx.x] = scratch[threadIdx.x];
    scratch[threadIdx.x] = T(1);
}
extern "C" __global__ void first_read_f32(float* seen) { first_read<float>(seen); }
extern "C" __global__ void first_read_i32(int* seen) { first_read<int>(seen); }
"""


def test_shared_memory_in_a_function_template_is_poisoned_too():
    module = HostModule(TEMPLATE_SHARED, "first_read.cu", ["first_read_f32", "first_read_i32"], cooperative=True)
    for name, dtype in (("first_read_f32", np.float32), ("first_read_i32", np.int32)):
        seen = np.zeros((4, 32), dtype)
        module.get_function(name)((4,), (32,), (seen,))
        np.testing.assert_array_equal(seen.view(np.uint32), POISON)


def test_host_source_rewrites_each_shared_declaration_on_its_line():
    source = (
        "#define TILE 16  // __shared__ in a comment\n"
        "/* __shared__ int x; */ const char* s = \"__shared__ int y;\";\n"
        "__global__ void k() {\n"
        "    __shared__ float tile[TILE][TILE + 1], total;\n"
        "    static __shared__ __align__(16) unsigned long long counters[4];\n"
        "}\n"
    )
    got = host.host_source(source, "k.cu").splitlines()
    assert got[:3] == source.splitlines()[:3]  # comments, literals, directives: untouched
    assert got[3] == ("    CUDA_HOST_SHARED float tile[TILE][TILE + 1], total; "
                      "CUDA_HOST_SHARED_REGISTER(tile) CUDA_HOST_SHARED_REGISTER(total)")
    assert got[4] == "    CUDA_HOST_SHARED __align__(16) unsigned long long counters[4]; CUDA_HOST_SHARED_REGISTER(counters)"


def test_dynamic_shared_memory_is_refused_with_its_line():
    source = "__global__ void k(float* x) {\n    extern __shared__ float dynamic[];\n}\n"
    with pytest.raises(HostShimError, match=r"k\.cu:2: dynamic shared memory \(extern __shared__\) is not supported"):
        HostModule(source, "k.cu", ["k"], cooperative=True)


def test_shared_declared_through_a_macro_fails_to_build_saying_why():
    source = (
        "#define SCRATCH __shared__ float scratch[32]\n"
        "extern \"C\" __global__ void k(float* x) { SCRATCH; x[0] = scratch[0]; }\n"
    )
    with pytest.raises(HostShimError, match="was not rewritten by host.py's host_source"):
        HostModule(source, "k.cu", ["k"], cooperative=True)


# -- AddressSanitizer ---------------------------------------------------------------------------------

# Boundary-heavy geometries: windows mostly in the padding, dilated filters wider than the
# input, exact VALID fits, outputs not a multiple of the block, odd block sizes.
ASAN_CASES = [
    # input shape, kernel, stride, dilation, multiplier, padding, block, bias
    ((1, 1, 1, 1), (3, 3), (1, 1), (1, 1), 1, Padding.SAME, 256, True),
    ((1, 2, 3, 1), (5, 5), (1, 1), (3, 3), 2, Padding.SAME, 32, False),
    ((2, 5, 4, 3), (3, 3), (2, 2), (1, 1), 2, Padding.VALID, 7, True),
    ((1, 7, 7, 2), (3, 3), (3, 3), (2, 2), 3, Padding.SAME, 64, True),
    ((1, 4, 4, 1), (4, 4), (1, 1), (1, 1), 1, Padding.VALID, 1, True),
    ((3, 3, 9, 5), (1, 7), (1, 2), (1, 2), 1, Padding.SAME, 100, False),
    ((1, 6, 6, 4), (2, 2), (2, 2), (3, 3), 1, Padding.SAME, 256, True),
]

ASAN_MAIN = r"""
#include "cuda_host.h"
#include "depthwise_conv2d.cu"

#include <cmath>
#include <cstdio>
#include <vector>

struct Case {
    int n, h, w, c, m, kh, kw, sh, sw, dh, dw, oh, ow, pt, pl, block, bias;
    float lo, hi;
};
static const Case kCases[] = {
@CASES@
};

template <typename T, typename Kernel>
static int run(const Case& k, Kernel kernel, T (*from_float)(float), bool (*unwritten)(T)) {
    const int oc = k.c * k.m;
    std::vector<T> in(size_t(k.n) * k.h * k.w * k.c), filter(size_t(k.kh) * k.kw * oc), bias(oc);
    std::vector<T> out(size_t(k.n) * k.oh * k.ow * oc, from_float(NAN));  // exact sizes: ASan's bounds
    for (size_t i = 0; i < in.size(); ++i) in[i] = from_float(float(int(i % 7) - 3) * 0.25f);
    for (size_t i = 0; i < filter.size(); ++i) filter[i] = from_float(float(int(i % 5) - 2) * 0.5f);
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = from_float(0.125f * float(i));
    const T* in_ptr = in.data();
    const T* filter_ptr = filter.data();
    const T* bias_ptr = k.bias ? bias.data() : nullptr;
    T* out_ptr = out.data();
    int ints[15] = {k.n, k.h, k.w, k.c, k.oh, k.ow, k.m, k.kh, k.kw, k.sh, k.sw, k.dh, k.dw, k.pt, k.pl};
    float lo = k.lo, hi = k.hi;
    void* args[21] = {&in_ptr, &filter_ptr, &bias_ptr, &out_ptr};
    for (int i = 0; i < 15; ++i) args[4 + i] = &ints[i];
    args[19] = &lo;
    args[20] = &hi;
    const unsigned total = unsigned(out.size());
    const dim3 grid((total + k.block - 1) / k.block), block(k.block);
    if (cuda_host::launch(kernel, grid, block, args) != 0) return 1;
    for (const T& value : out)
        if (unwritten(value)) return 1;  // every output element must be written
    return 0;
}

int main() {
    int failures = 0;
    for (const Case& k : kCases) {
        failures += run<float>(k, &depthwise_conv2d_f32, [](float v) { return v; },
                               [](float v) { return bool(std::isnan(v)); });
        failures += run<unsigned short>(k, &depthwise_conv2d_f16, &cuda_host::float_to_half_bits,
                                        [](unsigned short v) { return (v & 0x7c00u) == 0x7c00u && (v & 0x3ffu); });
    }
    if (failures) std::fprintf(stderr, "%d launches left outputs unwritten\n", failures);
    return failures ? 1 : 0;
}
"""

ASAN_FLAGS = ("-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined", "-g")


def _asan_cases_source() -> str:
    lines = []
    for shape, kernel, stride, dilation, multiplier, padding, block, bias in ASAN_CASES:
        g = DepthwiseGeometry.of(shape, (1, *kernel, shape[3] * multiplier), stride, dilation, padding)
        lo, hi = activation_range(Act.RELU6 if bias else Act.NONE)
        ints = (g.batches, g.in_h, g.in_w, g.in_channels, g.multiplier, g.filter_h, g.filter_w, g.stride_h,
                g.stride_w, g.dilation_h, g.dilation_w, g.out_h, g.out_w, g.pad_top, g.pad_left, block, int(bias))
        lines.append("    {" + ", ".join(map(str, ints)) + f", {lo!r}f, {hi!r}f}},")
    return "\n".join(lines)


def run_under_asan(kernel_source: str) -> subprocess.CompletedProcess:
    main = ASAN_MAIN.replace("@CASES@", _asan_cases_source())
    executable = host.build(main, "depthwise_asan", {"depthwise_conv2d.cu": kernel_source}, ASAN_FLAGS, executable=True)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:halt_on_error=1", UBSAN_OPTIONS="print_stacktrace=1")
    return subprocess.run([str(executable)], capture_output=True, text=True, timeout=60, env=env, check=False)


def test_depthwise_cu_is_clean_under_address_sanitizer_on_boundary_shapes():
    result = run_under_asan(read_source("depthwise_conv2d.cu"))
    assert result.returncode == 0, result.stderr[-4000:]
    assert "AddressSanitizer" not in result.stderr and "runtime error" not in result.stderr


BREAKAGES = {
    # The partial last block runs past the output.
    "no-index-guard": ("if (index >= total) return false;", ""),
    # Padding columns read outside the input rows.
    "no-column-bounds-check": ("if (ix < 0 || ix >= in_w) continue;", ""),
}


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_address_sanitizer_catches_a_kernel_with_a_missing_bounds_check(breakage):
    old, new = BREAKAGES[breakage]
    source = read_source("depthwise_conv2d.cu")
    assert source.count(old) == 1, f"the kernel no longer contains {old!r}: update this test"
    result = run_under_asan(source.replace(old, new))
    assert result.returncode != 0
    assert "AddressSanitizer" in result.stderr, result.stderr[-4000:]
