"""The window kernels (``pool2d.cu``, ``resize.cu``) and their numpy twins
(``backends/gpu/cuda/windows.py``): each twin computes what its kernel computes (the
kernel built for the CPU by the host shim, on the emulated CUDA device), bit for bit, in
one launch; both agree with the CPU kernels (TFLite's reference semantics); and the ops
(AVERAGE_POOL_2D, MAX_POOL_2D, MEAN, RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR) take one
launch per node on both devices.

The pools and MEAN sum in the same order in both (ky, then kx; the reduced elements in
row-major order) and the bilinear kernel rounds each product and sum (no fused
multiply-add), so the twins are exact, not approximate. On a GPU the pools' and MEAN's
``acc += v`` is the same float32 sum (no product to contract).
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu.kernels.pool2d import FLT_MAX
from backends.gpu.cuda.windows import (
    MeanCuda,
    PoolGeometry,
    Pool2DCuda,
    ResizeBilinearCuda,
    ResizeNearestCuda,
    bilinear_tables,
    nearest_tables,
)
from backends.gpu import GpuDelegate, emulated_cuda_device
from interpreter import Interpreter
from kernel_twin import assert_equals_twin, assert_twin_matches, run_both_ways
from model_helpers import Const, In, Out, single_op_model
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.params import Pool2DParams, ReducerParams, ResizeBilinearParams, ResizeNearestNeighborParams

RNG = np.random.default_rng(11)
ACTIVATIONS = [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH]


# -- references: the CPU kernels through a one-node model ---------------------------------------------


def one_node(op, x_shape, params, extra=None) -> bytes:
    """One ``op`` node on a float32 input ``x``; ``extra``: a constant int32 second input
    (a resize's size, a mean's axes)."""
    inputs = [In(x_shape)] + ([] if extra is None else [Const(np.asarray(extra, np.int32))])
    return single_op_model(op, inputs, Out([1]), params)


def cpu_result(model: bytes, x: np.ndarray) -> np.ndarray:
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def pool_params(filter_hw, stride, padding, activation=Act.NONE) -> Pool2DParams:
    return Pool2DParams(
        padding=padding, stride_h=stride[0], stride_w=stride[1], filter_height=filter_hw[0],
        filter_width=filter_hw[1], fused_activation_function=activation,
    )


# -- pools ---------------------------------------------------------------------------------------


POOL_CASES = [
    # shape, filter, stride, padding: clipped windows at every edge, odd sizes, global pools
    ((1, 9, 9, 4), (3, 3), (2, 2), "SAME"),
    ((2, 8, 7, 3), (3, 2), (1, 2), "SAME"),
    ((1, 10, 10, 2), (2, 2), (2, 2), "VALID"),
    ((1, 5, 6, 8), (5, 5), (1, 1), "SAME"),
    ((2, 7, 7, 5), (7, 7), (1, 1), "VALID"),
    ((1, 4, 4, 3), (1, 1), (3, 3), "SAME"),
    ((1, 3, 3, 1), (4, 4), (1, 1), "SAME"),  # the window larger than the input
]


@pytest.mark.parametrize("storage", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("is_max", [False, True], ids=["average", "max"])
@pytest.mark.parametrize("shape, filter_hw, stride, padding", POOL_CASES, ids=str)
def test_pool_twin_matches_the_kernel_and_the_cpu(shape, filter_hw, stride, padding, is_max, storage):
    x = (RNG.standard_normal(shape) * 3).astype(storage)
    both = run_both_ways(lambda **where: Pool2DCuda(is_max, filter_hw, stride, padding, Act.NONE, storage, **where),
                         "pool2d.cu", [x])
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    op = B.MAX_POOL_2D if is_max else B.AVERAGE_POOL_2D
    want = cpu_result(one_node(op, shape, pool_params(filter_hw, stride, 0 if padding == "SAME" else 1)), x.astype(np.float32))
    got = both.twin[0].astype(np.float32)
    if storage == np.float32:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)  # the CPU may sum in another order
    else:
        np.testing.assert_allclose(got, want.astype(np.float16).astype(np.float32), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("storage", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("activation", ACTIVATIONS, ids=lambda a: Act(a).name)
@pytest.mark.parametrize("is_max", [False, True], ids=["average", "max"])
def test_pool_fused_activations(is_max, activation, storage):
    x = (RNG.standard_normal((1, 6, 6, 3)) * 4).astype(storage)
    both = run_both_ways(lambda **where: Pool2DCuda(is_max, (3, 3), (1, 1), "SAME", activation, storage, **where),
                         "pool2d.cu", [x])
    assert_twin_matches(both)
    op = B.MAX_POOL_2D if is_max else B.AVERAGE_POOL_2D
    want = cpu_result(one_node(op, x.shape, pool_params((3, 3), (1, 1), 0, activation)), x.astype(np.float32))
    np.testing.assert_allclose(both.twin[0].astype(np.float32), want.astype(storage).astype(np.float32), rtol=1e-3, atol=1e-6)


def specials(shape, storage) -> np.ndarray:
    """Random values with NaN, +-inf and +-FLT_MAX-sized values at fixed places, and one
    window of only NaN and -inf."""
    x = RNG.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[::7] = np.nan
    flat[3::11] = np.inf
    flat[5::13] = -np.inf
    if storage == np.float32:
        flat[2::17] = 3e38
        flat[4::19] = -3e38
    x[0, 0:2, 0:2, 0] = [[np.nan, -np.inf], [np.nan, np.nan]]
    return x.astype(storage)


@pytest.mark.parametrize("storage", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU, Act.RELU6], ids=lambda a: Act(a).name)
@pytest.mark.parametrize("is_max", [False, True], ids=["average", "max"])
@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_pool_nan_inf_and_saturation_as_the_cpu_kernel(is_max, activation, storage):
    """Max: NaN never wins, a window of NaN and -inf gives lowest (then the clamp); +-inf
    saturates at +-FLT_MAX with no activation. Average: NaN propagates, inf saturates."""
    x = specials((1, 8, 8, 2), storage)
    both = run_both_ways(lambda **where: Pool2DCuda(is_max, (2, 2), (2, 2), "VALID", activation, storage, **where),
                         "pool2d.cu", [x])
    assert_twin_matches(both)
    op = B.MAX_POOL_2D if is_max else B.AVERAGE_POOL_2D
    want = cpu_result(one_node(op, x.shape, pool_params((2, 2), (2, 2), 1, activation)), x.astype(np.float32))
    got = both.twin[0].astype(np.float32)
    if storage == np.float16:
        want = want.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    if is_max:
        assert not np.isnan(got).any()
        expected_corner = {Act.NONE: -FLT_MAX, Act.RELU: 0.0, Act.RELU6: 0.0}[activation]
        assert got[0, 0, 0, 0] == np.float32(expected_corner).astype(storage)


def test_pool_geometry_counts_only_the_inside_elements():
    g = PoolGeometry.of((1, 3, 3, 1), (3, 3), 1, "SAME")
    assert (g.pad_top, g.pad_left, g.out_h, g.out_w) == (1, 1, 3, 3)
    np.testing.assert_array_equal(g.counts()[:, :, 0], [[4, 6, 4], [6, 9, 6], [4, 6, 4]])
    with pytest.raises(ValueError, match="does not fit"):
        PoolGeometry.of((1, 2, 2, 1), (3, 3), 1, "VALID")


# -- MEAN ------------------------------------------------------------------------------------------

MEAN_CASES = [
    ((2, 5, 6, 3), (1, 2)),
    ((2, 5, 6, 3), (3,)),
    ((2, 5, 6, 3), (0, 3)),
    ((2, 5, 6, 3), ()),
    ((2, 5, 6, 3), (0, 1, 2, 3)),  # one output: a sum of everything
    ((1, 56, 56, 4), (1, 2)),  # a long sum
    ((4, 7), (0,)),
    ((9,), (0,)),
    ((3, 4, 5), (0, 2)),
]


@pytest.mark.parametrize("storage", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("shape, axes", MEAN_CASES, ids=str)
def test_mean_twin_matches_the_kernel_and_the_cpu(shape, axes, storage):
    x = (RNG.standard_normal(shape) * 3).astype(storage)
    both = run_both_ways(lambda **where: MeanCuda(axes, storage, **where), "pool2d.cu", [x])
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    want = cpu_result(one_node(B.MEAN, shape, ReducerParams(keep_dims=False), axes), x.astype(np.float32))
    got = both.twin[0].astype(np.float32)
    tolerance = 1e-5 if storage == np.float32 else 2e-3  # the CPU sums pairwise
    np.testing.assert_allclose(got.reshape(want.shape), want.astype(storage).astype(np.float32), rtol=tolerance, atol=tolerance)


def test_mean_propagates_nan_and_inf():
    x = specials((2, 4, 4, 3), np.float32)
    both = run_both_ways(lambda **where: MeanCuda((1, 2), np.float32, **where), "pool2d.cu", [x])
    assert_twin_matches(both)
    assert np.isnan(both.kernel[0]).all()  # every 4x4 window holds a NaN


def test_mean_writes_any_output_shape_of_the_kept_size():
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    both = run_both_ways(lambda **where: MeanCuda((1, 2), np.float32, **where), "pool2d.cu", [x],
                         call=lambda launcher, x: launcher(x, (2, 1, 1, 5)))
    assert_twin_matches(both)
    assert both.kernel[0].shape == (2, 1, 1, 5)


# -- resize --------------------------------------------------------------------------------------------

RESIZE_CASES = [
    # input shape, output size, align_corners, half_pixel_centers
    ((1, 4, 5, 3), (8, 10), False, False),
    ((2, 4, 5, 2), (3, 2), True, False),
    ((1, 4, 5, 2), (9, 4), False, True),
    ((1, 3, 3, 1), (1, 1), True, False),
    ((1, 1, 1, 4), (5, 3), False, True),
    ((1, 6, 7, 5), (6, 7), False, False),
    ((1, 5, 4, 3), (13, 11), True, False),
]


@pytest.mark.parametrize("storage", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("shape, size, align, half", RESIZE_CASES, ids=str)
def test_resize_bilinear_twin_matches_the_kernel_and_the_cpu(shape, size, align, half, storage):
    x = (RNG.standard_normal(shape) * 3).astype(storage)
    tables = bilinear_tables(shape[1], shape[2], *size, align, half)
    both = run_both_ways(lambda **where: ResizeBilinearCuda(storage, **where), "resize.cu", [x, *tables])
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    params = ResizeBilinearParams(align_corners=align, half_pixel_centers=half)
    want = cpu_result(one_node(B.RESIZE_BILINEAR, shape, params, size), x.astype(np.float32))
    got = both.twin[0].astype(np.float32)
    if storage == np.float32:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)  # the CPU sums rows first
    else:
        np.testing.assert_allclose(got, want.astype(np.float16).astype(np.float32), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("storage", [np.float32, np.float16], ids=["f32", "f16"])
def test_resize_bilinear_propagates_nan_and_inf_as_the_twin(storage):
    x = specials((1, 5, 5, 2), storage)
    tables = bilinear_tables(5, 5, 9, 7, False, True)
    both = run_both_ways(lambda **where: ResizeBilinearCuda(storage, **where), "resize.cu", [x, *tables])
    assert_twin_matches(both)
    assert np.isnan(both.kernel[0]).any()


@pytest.mark.parametrize("storage", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("shape, size, align, half", RESIZE_CASES, ids=str)
def test_resize_nearest_twin_matches_the_kernel_and_the_cpu(shape, size, align, half, storage):
    x = specials(shape, storage) if shape[1] > 1 else RNG.standard_normal(shape).astype(storage)
    tables = nearest_tables(shape[1], shape[2], *size, align, half)
    both = run_both_ways(lambda **where: ResizeNearestCuda(storage, **where), "resize.cu", [x, *tables])
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    params = ResizeNearestNeighborParams(align_corners=align, half_pixel_centers=half)
    want = cpu_result(one_node(B.RESIZE_NEAREST_NEIGHBOR, shape, params, size), x.astype(np.float32))
    np.testing.assert_array_equal(both.twin[0], want.astype(storage))  # values moved, bit for bit


def test_resize_nearest_to_an_empty_output_launches_nothing():
    x = RNG.standard_normal((1, 3, 3, 2)).astype(np.float32)
    both = run_both_ways(lambda **where: ResizeNearestCuda(np.float32, **where), "resize.cu",
                         [x, *nearest_tables(3, 3, 0, 4, False, False)])
    assert both.kernel_launches == both.twin_launches == 0
    assert both.kernel[0].shape == (1, 0, 4, 2)


def test_launchers_refuse_the_wrong_storage():
    x = np.zeros((1, 2, 2, 1), np.float16)
    with pytest.raises(TypeError, match="float32"):
        run_both_ways(lambda **where: Pool2DCuda(True, (2, 2), **where), "pool2d.cu", [x])


# -- one launch per node, on both devices -------------------------------------------------------------

DEVICES = {"host": lambda: "host", "emulated-cuda": emulated_cuda_device}

NODES = {
    "average_pool": (B.AVERAGE_POOL_2D, (1, 9, 9, 4), pool_params((3, 3), (2, 2), 0, Act.RELU6), None),
    "max_pool": (B.MAX_POOL_2D, (1, 9, 9, 4), pool_params((3, 3), (2, 2), 0, Act.NONE), None),
    "mean": (B.MEAN, (2, 6, 6, 4), ReducerParams(keep_dims=True), (1, 2)),
    "resize_bilinear": (B.RESIZE_BILINEAR, (1, 4, 5, 3), ResizeBilinearParams(half_pixel_centers=True), (8, 10)),
    "resize_nearest": (B.RESIZE_NEAREST_NEIGHBOR, (1, 4, 5, 3), ResizeNearestNeighborParams(), (8, 10)),
}


@pytest.mark.parametrize("precision", ["float32", "float16"])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("node", NODES)
def test_one_launch_per_node(node, device, precision):
    op, shape, params, size = NODES[node]
    model = one_node(op, shape, params, size)
    delegate = GpuDelegate(device=DEVICES[device](), precision=precision)
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    cpu = Interpreter(model_content=model)
    cpu.allocate_tensors()
    for k in range(3):  # eager, captured, replayed
        x = np.random.default_rng(k).uniform(-4, 4, shape).astype(np.float32)
        if precision == "float16":
            x = x.astype(np.float16).astype(np.float32)
        got = cpu_result_of(interpreter, x)
        want = cpu_result_of(cpu, x)
        tolerance = 1e-5 if precision == "float32" else 1e-2
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
        (stats,) = delegate.partition_stats()
        if k == 0:
            assert stats.last_invoke.kernel_launches == 1, stats.last_invoke
    assert stats.graph == "replaying" and stats.graph_nodes == 1, (stats.graph, stats.graph_nodes)


def cpu_result_of(interpreter, x):
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


# -- on a real device (marked gpu: skipped without one; emulated with LITEDELEGATE_TEST_DEVICE) ------


def on_device_and_host(cuda_device, source, make_launcher, inputs, call=None):
    """``call(launcher, *arrays)`` with the .cu kernel on ``cuda_device()`` and with the twin
    in host emulation: the two results, on the host."""
    from backends.gpu.device import open_device

    call = call or (lambda launcher, *arrays: launcher(*arrays))
    results = []
    for device in (cuda_device(), open_device("host")):
        with device.active():
            launcher = make_launcher(**device.launcher_arguments(source))
            results.append(device.download(call(launcher, *[device.upload(np.asarray(a)) for a in inputs])))
    return results


@pytest.mark.gpu
@pytest.mark.parametrize("storage", [np.float32, np.float16], ids=["f32", "f16"])
def test_window_kernels_on_a_device_compute_their_twins(cuda_device, storage):
    """The float32 sums are in the twins' order and bilinear's products are not contracted
    into fmas, so a GPU should give the twins' bits; compared, as every kernel with its twin,
    within kernel_twin.TWIN_TOLERANCE (CuPy flushes subnormals to zero)."""
    x = (RNG.standard_normal((2, 9, 8, 5)) * 3).astype(storage)
    cases = [
        ("pool2d.cu", lambda **w: Pool2DCuda(False, (3, 3), (2, 2), "SAME", Act.RELU6, storage, **w), [x]),
        ("pool2d.cu", lambda **w: Pool2DCuda(True, (3, 2), (1, 2), "SAME", Act.NONE, storage, **w), [x]),
        ("pool2d.cu", lambda **w: MeanCuda((1, 2), storage, **w), [x]),
        ("resize.cu", lambda **w: ResizeBilinearCuda(storage, **w), [x, *bilinear_tables(9, 8, 13, 5, False, True)]),
        ("resize.cu", lambda **w: ResizeNearestCuda(storage, **w), [x, *nearest_tables(9, 8, 13, 5, True, False)]),
    ]
    for source, make, inputs in cases:
        got, twin = on_device_and_host(cuda_device, source, make, inputs)
        assert_equals_twin(got, twin, err_msg=source)


@pytest.mark.gpu
def test_pools_and_resize_run_on_a_device_in_one_launch_per_node(cuda_device):
    for op, shape, params, size in NODES.values():
        model = one_node(op, shape, params, size)
        delegate = GpuDelegate(device=cuda_device())
        interpreter = Interpreter(model_content=model)
        interpreter.modify_graph_with_delegate(delegate)
        interpreter.allocate_tensors()
        cpu = Interpreter(model_content=model)
        cpu.allocate_tensors()
        for k in range(3):
            x = np.random.default_rng(k).uniform(-4, 4, shape).astype(np.float32)
            np.testing.assert_allclose(cpu_result_of(interpreter, x), cpu_result_of(cpu, x), rtol=1e-5, atol=1e-5)
        (stats,) = delegate.partition_stats()
        assert stats.graph == "replaying" and stats.graph_nodes in (0, 1), (op, stats.graph, stats.graph_nodes)
