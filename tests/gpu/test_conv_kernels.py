"""CONV_2D and FULLY_CONNECTED in one launch each (``cuda/conv2d.cu``, ``cuda/matmul.cu``'s
``matmul_bias_act``), and the other products on the same launcher (BATCH_MATMUL,
TRANSPOSE_CONV's patches): each kernel against its numpy twin (``tests/kernel_twin.py``:
the ``.cu`` through the host shim against host emulation's twin, results and launch
counts), the kernels against a plain float64 reference of TFLite's formula, and one
launch per node through the delegate on both devices.

Tolerances: a kernel against its twin or the float64 reference, kernel_twin.TWIN_TOLERANCE
(other orders of the sums, fused multiply-adds and flush-to-zero on a device); a model against
the CPU path, model_tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.gpu import GpuDelegate, emulated_cuda_device
from backends.gpu.cuda.conv2d import (
    CONV2D_PIXELS,
    Conv2DCuda,
    Conv2DGeometry,
    conv2d_filter_layout,
    conv2d_launch_config,
)
from backends.gpu.cuda.matmul import MatmulBiasActivationCuda, matmul_bias_act_launch_config
from backends.gpu.cuda.sources import activation_range
from interpreter import Interpreter
from kernel_twin import assert_close_to_reference, assert_equals_twin, assert_twin_matches, run_both_ways
from schema.builder import ModelBuilder
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.enums import Padding
from schema.model import Model
from schema.params import BatchMatMulParams, Conv2DParams, FullyConnectedParams, TransposeConvParams

RNG = np.random.default_rng(15)
FLT_MAX = float(np.finfo(np.float32).max)
ACTIVATIONS = [Act.NONE, Act.RELU, Act.RELU_N1_TO_1, Act.RELU6, Act.TANH]


def model_tolerance(precision: str) -> dict:
    """A delegated model against the CPU path: float32 sums in other orders, or in float16
    precision every tensor rounded to half on the way (not a kernel against its twin:
    kernel_twin.TWIN_TOLERANCE is that one)."""
    return {"rtol": 1e-5, "atol": 1e-5} if precision == "float32" else {"rtol": 1e-2, "atol": 1e-2}


# -- CONV_2D: the kernel against its twin -------------------------------------------------------------

# (input shape, filter hw, groups, out channels per group, stride, dilation, padding)
CONV_CASES = {
    "3x3-same": ((1, 9, 9, 4), (3, 3), 1, 8, 1, 1, "SAME"),
    "3x3-same-stride2-batch2": ((2, 8, 7, 3), (3, 3), 1, 5, 2, 1, "SAME"),
    "5x5-valid-stride21": ((1, 11, 10, 2), (5, 5), 1, 6, (2, 1), 1, "VALID"),
    "3x2-dilated": ((1, 10, 10, 3), (3, 2), 1, 4, 1, (2, 3), "SAME"),
    "dilated-strided-valid": ((2, 12, 11, 2), (3, 3), 1, 3, 2, 2, "VALID"),
    "1x1": ((1, 6, 5, 16), (1, 1), 1, 33, 1, 1, "SAME"),
    "1x1-stride2": ((3, 7, 7, 5), (1, 1), 1, 7, 2, 1, "VALID"),
    "grouped-2": ((1, 8, 8, 6), (3, 3), 2, 4, 1, 1, "SAME"),
    "grouped-3-strided-dilated": ((2, 9, 9, 6), (3, 3), 3, 2, 2, 2, "SAME"),
    "grouped-depthwise-like": ((1, 5, 6, 4), (3, 3), 4, 1, 1, 1, "SAME"),
    "filter-as-large-as-input": ((1, 4, 4, 3), (4, 4), 1, 2, 1, 1, "VALID"),
    "odd-pixels-per-thread": ((1, 3, 3, 2), (2, 2), 1, 3, 1, 1, "SAME"),  # 9 pixels: a partial group
}


def conv_inputs(shape, filter_hw, groups, group_out, storage, bias=True):
    x = RNG.standard_normal(shape).astype(storage)
    filters = RNG.standard_normal((groups * group_out, *filter_hw, shape[3] // groups)).astype(np.float32)
    b = RNG.standard_normal(groups * group_out).astype(storage) if bias else None
    return x, filters, b


def run_conv(x, filters, b, groups, stride, dilation, padding, activation, storage):
    w = conv2d_filter_layout(filters, groups).astype(storage)
    return run_both_ways(
        lambda **where: Conv2DCuda(stride, dilation, padding, activation, storage, **where),
        "conv2d.cu", [x, w, b],
    )


def reference_conv(x, filters, b, groups, stride, dilation, padding, activation) -> np.ndarray:
    """TFLite's reference Conv in float64: taps outside the input skipped, then the clamp."""
    stride = (stride, stride) if np.ndim(stride) == 0 else stride
    dilation = (dilation, dilation) if np.ndim(dilation) == 0 else dilation
    geometry = Conv2DGeometry.of(x.shape, conv2d_filter_layout(filters, groups).shape, stride, dilation, padding)
    g = geometry.window
    x, filters = x.astype(np.float64), filters.astype(np.float64)
    out = np.zeros(geometry.out_shape)
    group_in, group_out = geometry.group_in, geometry.group_out
    for oy in range(g.out_h):
        for ox in range(g.out_w):
            for ky in range(g.filter_h):
                iy = oy * g.stride_h + ky * g.dilation_h - g.pad_top
                for kx in range(g.filter_w):
                    ix = ox * g.stride_w + kx * g.dilation_w - g.pad_left
                    if not (0 <= iy < g.in_h and 0 <= ix < g.in_w):
                        continue
                    for group in range(groups):
                        pixel = x[:, iy, ix, group * group_in : (group + 1) * group_in]  # [N, I]
                        taps = filters[group * group_out : (group + 1) * group_out, ky, kx, :]  # [O, I]
                        out[:, oy, ox, group * group_out : (group + 1) * group_out] += pixel @ taps.T
    if b is not None:
        out += b.astype(np.float64)
    low, high = activation_range(activation)
    return np.clip(out, low, high)


@pytest.mark.parametrize("storage", [np.float32, np.float16])
@pytest.mark.parametrize("case", list(CONV_CASES))
def test_conv2d_twin_matches_the_kernel_and_the_reference(case, storage):
    shape, filter_hw, groups, group_out, stride, dilation, padding = CONV_CASES[case]
    x, filters, b = conv_inputs(shape, filter_hw, groups, group_out, storage)
    both = run_conv(x, filters, b, groups, stride, dilation, padding, Act.RELU6 if groups > 1 else Act.NONE, storage)
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    want = reference_conv(x, filters.astype(storage), b, groups, stride, dilation, padding,
                          Act.RELU6 if groups > 1 else Act.NONE)
    assert_close_to_reference(both.kernel[0], want)


@pytest.mark.parametrize("storage", [np.float32, np.float16])
@pytest.mark.parametrize("activation", ACTIVATIONS, ids=lambda a: a.name)
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no-bias"])
def test_conv2d_twin_matches_the_kernel_for_every_activation(activation, with_bias, storage):
    x, filters, b = conv_inputs((1, 7, 6, 3), (3, 3), 1, 5, storage, bias=with_bias)
    x *= storage(0.5)  # outputs around the RELU_N1_TO_1 / RELU6 bounds as well as beyond
    both = run_conv(x, filters, b, 1, 1, 1, "SAME", activation, storage)
    assert_twin_matches(both)
    low, high = activation_range(activation)
    out = both.kernel[0].astype(np.float64)
    assert out.min() >= low and out.max() <= high
    want = reference_conv(x, filters.astype(storage), b, 1, 1, 1, "SAME", activation)
    assert_close_to_reference(both.kernel[0], want)


@pytest.mark.parametrize("storage", [np.float32, np.float16])
def test_conv2d_nan_propagates_through_the_sum_and_the_clamp(storage):
    x, filters, b = conv_inputs((1, 6, 6, 2), (3, 3), 1, 3, storage)
    x[0, 2, 3, 1] = np.nan
    both = run_conv(x, filters, b, 1, 1, 1, "SAME", Act.RELU6, storage)
    assert_twin_matches(both)
    nan = np.isnan(both.kernel[0])
    # Every output whose window holds that pixel is NaN (the clamp keeps it), no other.
    assert nan[0, 1:4, 2:5, :].all() and nan.sum() == 9 * 3


def test_conv2d_skips_taps_outside_the_input_so_an_infinite_weight_there_reads_nothing():
    x, filters, b = conv_inputs((1, 5, 5, 2), (3, 3), 1, 2, np.float32)
    filters[:, 0, 0, :] = np.inf  # the top-left tap: outside the input for the first row/column
    x = np.abs(x)  # so that inf * x is +inf where the tap sees the input
    both = run_conv(x, filters, b, 1, 1, 1, "SAME", Act.NONE, np.float32)
    assert_twin_matches(both)
    out = both.kernel[0]
    assert np.isfinite(out[0, 0, :, :]).all() and np.isfinite(out[0, :, 0, :]).all()  # 0 * inf never formed
    assert (out[0, 1:, 1:, :] == FLT_MAX).all()  # +inf saturates at FLT_MAX (NONE's range)


def test_conv2d_overflow_saturates_at_flt_max_as_tflite():
    x = np.full((1, 3, 3, 2), 3e38, np.float32)
    filters = np.stack([np.ones((1, 1, 2)), -np.ones((1, 1, 2))]).astype(np.float32)  # [2, 1, 1, 2]
    both = run_conv(x, filters, None, 1, 1, 1, "VALID", Act.NONE, np.float32)
    assert_twin_matches(both)
    assert (both.kernel[0][..., 0] == FLT_MAX).all() and (both.kernel[0][..., 1] == -FLT_MAX).all()


def test_conv2d_float16_reads_halves_and_rounds_the_float32_sum_once():
    # Products of halves are exact in float32: with sums that stay exact too, the kernel
    # and the twin give the same bits, the float32 result rounded to half once.
    x = (RNG.integers(-8, 8, (1, 5, 5, 4)) / 8).astype(np.float16)
    filters = (RNG.integers(-8, 8, (3, 3, 3, 4)) / 4).astype(np.float32)
    b = np.array([0.5, -0.25, 0.125], np.float16)
    both = run_conv(x, filters, b, 1, 1, 1, "SAME", Act.NONE, np.float16)
    assert_twin_matches(both)
    want = reference_conv(x, filters, b, 1, 1, 1, "SAME", Act.NONE).astype(np.float16)
    np.testing.assert_array_equal(both.kernel[0], want)


def test_conv2d_launch_gives_each_thread_a_few_pixels_of_one_channel():
    geometry = Conv2DGeometry.of((2, 9, 9, 4), (1, 3, 3, 4, 24), 1, 1, "SAME")
    grid, block = conv2d_launch_config(geometry)
    pixel_groups = -(-2 * 9 * 9 // CONV2D_PIXELS)
    assert block == (256, 1, 1) and grid[0] * 256 >= pixel_groups * 24 > (grid[0] - 1) * 256


def test_conv2d_filter_layout_puts_a_groups_output_channels_last():
    filters = np.arange(6 * 2 * 2 * 3, dtype=np.float32).reshape(6, 2, 2, 3)  # 2 groups of 3 outputs
    layout = conv2d_filter_layout(filters, 2)
    assert layout.shape == (2, 2, 2, 3, 3) and layout.flags.c_contiguous
    assert layout[1, 0, 1, 2, 0] == filters[3, 0, 1, 2]


def test_conv2d_launcher_refuses_mismatched_arrays():
    x = np.zeros((1, 4, 4, 3), np.float32)
    launcher = Conv2DCuda(xp=np)
    with pytest.raises(ValueError, match="groups"):
        launcher(x, np.zeros((1, 3, 3, 2, 4), np.float32))
    with pytest.raises(TypeError, match="float32"):
        launcher(x, np.zeros((1, 3, 3, 3, 4), np.float16))
    with pytest.raises(ValueError, match="bias"):
        launcher(x, np.zeros((1, 3, 3, 3, 4), np.float32), np.zeros(3, np.float32))


# -- matmul_bias_act: the kernel against its twin -----------------------------------------------------

# (a shape as stored, b shape as stored, adjoint_a, adjoint_b)
MATMUL_CASES = {
    "fc-one-row": ((1, 37), (37, 10), False, False),
    "fc-rows": ((9, 20), (20, 33), False, False),
    "batched": ((3, 6, 4), (3, 4, 10), False, False),
    "shared-rhs": ((2, 33, 17), (17, 40), False, False),
    "shared-lhs-leading-1": ((1, 5, 7), (4, 7, 3), False, False),
    "adjoint-a": ((2, 4, 6), (2, 4, 5), True, False),
    "adjoint-b": ((2, 6, 4), (2, 5, 4), False, True),
    "adjoint-both-shared": ((4, 6), (3, 5, 4), True, True),
    "k-is-zero": ((3, 0), (0, 4), False, False),
}


def product_reference(a, b, bias, adjoint_a, adjoint_b, bounds) -> np.ndarray:
    a, b = a.astype(np.float64), b.astype(np.float64)
    out = np.matmul(np.swapaxes(a, -1, -2) if adjoint_a else a, np.swapaxes(b, -1, -2) if adjoint_b else b)
    if bias is not None:
        out = out + bias.astype(np.float64)
    return np.clip(out, *bounds)


@pytest.mark.parametrize("storage", [np.float32, np.float16])
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("case", list(MATMUL_CASES))
def test_matmul_bias_act_twin_matches_the_kernel(case, with_bias, storage):
    a_shape, b_shape, adjoint_a, adjoint_b = MATMUL_CASES[case]
    a = RNG.standard_normal(a_shape).astype(storage)
    b = RNG.standard_normal(b_shape).astype(storage)
    n = b_shape[-2] if adjoint_b else b_shape[-1]
    bias = RNG.standard_normal(n).astype(storage) if with_bias else None
    both = run_both_ways(
        lambda **where: MatmulBiasActivationCuda(Act.RELU, storage, **where), "matmul.cu", [a, b, bias],
        call=lambda launcher, a, b, bias: launcher(a, b, bias, adjoint_a=adjoint_a, adjoint_b=adjoint_b),
    )
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    want = product_reference(a, b, bias, adjoint_a, adjoint_b, activation_range(Act.RELU))
    assert_close_to_reference(both.kernel[0], want)


@pytest.mark.parametrize("storage", [np.float32, np.float16])
@pytest.mark.parametrize("activation", [None, *ACTIVATIONS], ids=lambda a: "no-clamp" if a is None else a.name)
def test_matmul_bias_act_clamps_to_each_activation_and_keeps_nan(activation, storage):
    a = (RNG.standard_normal((6, 9)) * 2).astype(storage)
    a[2, 4] = np.nan
    b = RNG.standard_normal((9, 7)).astype(storage)
    bias = RNG.standard_normal(7).astype(storage)
    both = run_both_ways(
        lambda **where: MatmulBiasActivationCuda(activation, storage, **where), "matmul.cu", [a, b, bias]
    )
    assert_twin_matches(both)
    out = both.kernel[0]
    assert np.isnan(out[2]).all() and not np.isnan(np.delete(out, 2, axis=0)).any()
    bounds = (-np.inf, np.inf) if activation is None else activation_range(activation)
    want = product_reference(a, b, bias, False, False, bounds)
    assert_close_to_reference(out, want)


def test_matmul_bias_act_saturates_with_an_activation_and_passes_inf_without_one():
    a = np.array([[3e38, 3e38]], np.float32)
    b = np.array([[1.0, -1.0], [1.0, -1.0]], np.float32)
    for activation, want in ((Act.NONE, [FLT_MAX, -FLT_MAX]), (None, [np.inf, -np.inf])):
        both = run_both_ways(lambda **where: MatmulBiasActivationCuda(activation, **where), "matmul.cu", [a, b])
        assert_twin_matches(both)
        np.testing.assert_array_equal(both.kernel[0], np.array([want], np.float32))


def test_matmul_bias_act_uses_every_thread_of_a_block_for_one_row():
    assert matmul_bias_act_launch_config(1, 1, 1000) == ((4, 1, 1), (256, 1, 1))
    assert matmul_bias_act_launch_config(2, 100, 40) == ((2, 4, 2), (32, 8, 1))


# -- on a real device ---------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("storage", [np.float32, np.float16], ids=["f32", "f16"])
def test_the_kernels_match_their_twins_on_a_device(cuda_device, storage):
    """conv2d.cu and matmul_bias_act as CuPy compiles and runs them (CuPy's -ftz=true
    flushes float32 subnormals: normal-sized random values have none)."""
    from backends.gpu.cuda.conv2d import conv2d_twin
    from backends.gpu.cuda.matmul import matmul_bias_act_twin

    device = cuda_device()
    with device.active():
        for case in ("3x3-same-stride2-batch2", "grouped-3-strided-dilated", "1x1", "dilated-strided-valid"):
            shape, filter_hw, groups, group_out, stride, dilation, padding = CONV_CASES[case]
            x, filters, b = conv_inputs(shape, filter_hw, groups, group_out, storage)
            w = conv2d_filter_layout(filters, groups).astype(storage)
            launcher = Conv2DCuda(stride, dilation, padding, Act.RELU6, storage, **device.launcher_arguments("conv2d.cu"))
            got = device.download(launcher(device.upload(x), device.upload(w), device.upload(b)))
            want = np.empty(got.shape, storage)
            conv2d_twin(x, w, b, want, geometry=Conv2DGeometry.of(x.shape, w.shape, stride, dilation, padding),
                        bounds=launcher.bounds)
            assert_equals_twin(got, want, err_msg=case)
        for case in ("fc-one-row", "batched", "adjoint-both-shared"):
            a_shape, b_shape, adjoint_a, adjoint_b = MATMUL_CASES[case]
            a = RNG.standard_normal(a_shape).astype(storage)
            b = RNG.standard_normal(b_shape).astype(storage)
            bias = RNG.standard_normal(b_shape[-2] if adjoint_b else b_shape[-1]).astype(storage)
            launcher = MatmulBiasActivationCuda(Act.RELU, storage, **device.launcher_arguments("matmul.cu"))
            got = device.download(launcher(device.upload(a), device.upload(b), device.upload(bias),
                                           adjoint_a=adjoint_a, adjoint_b=adjoint_b))
            want = np.empty(got.shape, storage)
            matmul_bias_act_twin(a, b, bias, want, adjoint_a=adjoint_a, adjoint_b=adjoint_b, bounds=launcher.bounds)
            assert_equals_twin(got, want, err_msg=case)


# -- one launch per node, through the delegate, on both devices -----------------------------------------

DEVICES = {"host": lambda: "host", "emulated-cuda": emulated_cuda_device}


def conv_model(x_shape, out_channels, filter_hw, groups=1, stride=1, dilation=1, padding=Padding.SAME,
               activation=Act.RELU6, bias=True) -> bytes:
    rng = np.random.default_rng(3)
    builder = ModelBuilder()
    graph = builder.subgraph()
    inputs = [graph.add_input("x", list(x_shape)),
              graph.add_constant("w", rng.uniform(-1, 1, (out_channels, *filter_hw, x_shape[3] // groups)).astype(np.float32))]
    if bias:
        inputs.append(graph.add_constant("b", rng.uniform(-1, 1, out_channels).astype(np.float32)))
    out = graph.add_tensor("out", [1])
    graph.add_operator(B.CONV_2D, inputs, [out], Conv2DParams(
        padding=padding, stride_h=stride, stride_w=stride, fused_activation_function=activation,
        dilation_h_factor=dilation, dilation_w_factor=dilation))
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


def fc_model(x_shape, units, activation=Act.RELU, bias=True, keep_num_dims=False) -> bytes:
    rng = np.random.default_rng(4)
    builder = ModelBuilder()
    graph = builder.subgraph()
    inputs = [graph.add_input("x", list(x_shape)),
              graph.add_constant("w", rng.uniform(-1, 1, (units, x_shape[-1])).astype(np.float32))]
    if bias:
        inputs.append(graph.add_constant("b", rng.uniform(-1, 1, units).astype(np.float32)))
    out = graph.add_tensor("out", [1])
    graph.add_operator(B.FULLY_CONNECTED, inputs, [out],
                       FullyConnectedParams(fused_activation_function=activation, keep_num_dims=keep_num_dims))
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


def bmm_model(x_shape, y_shape, adj_x=False, adj_y=False) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x, y = graph.add_input("x", list(x_shape)), graph.add_input("y", list(y_shape))
    out = graph.add_tensor("out", [1])
    graph.add_operator(B.BATCH_MATMUL, [x, y], [out], BatchMatMulParams(adj_x=adj_x, adj_y=adj_y))
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


NODES = {
    "conv-3x3-same-relu6": lambda: conv_model((1, 9, 9, 4), 8, (3, 3)),
    "conv-5x5-stride2-valid-no-bias": lambda: conv_model((2, 11, 11, 3), 6, (5, 5), stride=2,
                                                         padding=Padding.VALID, activation=Act.NONE, bias=False),
    "conv-dilated": lambda: conv_model((1, 10, 10, 2), 4, (3, 3), dilation=2, activation=Act.RELU),
    "conv-1x1": lambda: conv_model((1, 6, 6, 16), 24, (1, 1), activation=Act.NONE),
    "conv-grouped-v6": lambda: conv_model((1, 8, 8, 6), 6, (3, 3), groups=3),
    "fc": lambda: fc_model((1, 20), 10),
    "fc-no-bias-rows": lambda: fc_model((3, 2, 16), 5, activation=Act.NONE, bias=False),
    "fc-keep-num-dims": lambda: fc_model((2, 3, 8), 4, activation=Act.RELU6, keep_num_dims=True),
    "batch_matmul-adjoint": lambda: bmm_model((2, 5, 3), (2, 4, 5), adj_x=True, adj_y=True),
}


def invoke(interpreter, inputs) -> list[np.ndarray]:
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


@pytest.mark.parametrize("precision", ["float32", "float16"])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("node", NODES)
def test_one_launch_per_node(node, device, precision):
    model = NODES[node]()
    delegate = GpuDelegate(device=DEVICES[device](), precision=precision)
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    assert all(p.delegated for p in interpreter.node_placements())
    cpu = Interpreter(model_content=model)
    cpu.allocate_tensors()
    for k in range(3):  # eager, captured, replayed
        rng = np.random.default_rng(k)
        inputs = [rng.uniform(-2, 2, tuple(d["shape"])).astype(np.float32) for d in cpu.get_input_details()]
        (got,), (want,) = invoke(interpreter, inputs), invoke(cpu, inputs)
        np.testing.assert_allclose(got, want, **model_tolerance(precision))
        (stats,) = delegate.partition_stats()
        if k == 0:
            assert stats.last_invoke.kernel_launches == 1, stats.last_invoke
    assert stats.graph == "replaying" and stats.graph_nodes == 1, (stats.graph, stats.graph_nodes)


def tconv_model() -> bytes:
    rng = np.random.default_rng(5)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 4, 5, 3])
    shape = graph.add_constant("shape", np.array([1, 8, 10, 2], np.int32))
    w = graph.add_constant("w", rng.uniform(-1, 1, (2, 3, 3, 3)).astype(np.float32))
    b = graph.add_constant("b", rng.uniform(-1, 1, 2).astype(np.float32))
    out = graph.add_tensor("out", [1, 8, 10, 2])
    graph.add_operator(B.TRANSPOSE_CONV, [shape, w, x, b], [out], TransposeConvParams(
        padding=Padding.SAME, stride_h=2, stride_w=2, fused_activation_function=Act.RELU))
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


@pytest.mark.parametrize("precision", ["float32", "float16"])
def test_transpose_conv_launches_the_same_kernels_on_host_and_device(precision):
    model = tconv_model()
    assert Model.from_bytes(model).subgraphs[0].operators[0].version == 4
    launches, results = [], []
    for make_device in DEVICES.values():
        delegate = GpuDelegate(device=make_device(), precision=precision, cuda_graphs=False)
        interpreter = Interpreter(model_content=model)
        interpreter.modify_graph_with_delegate(delegate)
        interpreter.allocate_tensors()
        x = np.random.default_rng(1).uniform(-2, 2, (1, 4, 5, 3)).astype(np.float32)
        results.append(invoke(interpreter, [x])[0])
        launches.append(delegate.last_invoke().kernel_launches)
    assert launches[0] == launches[1], launches
    np.testing.assert_allclose(results[0], results[1], **model_tolerance(precision))
