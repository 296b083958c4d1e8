"""The quantized convolution family's CUDA kernels (``cuda/conv2d_int8.cu``,
``depthwise_conv2d_int8.cu``, ``fully_connected_int8.cu``, ``batch_matmul_int8.cu``): one
launch per node, bit for bit.

Three levels, each exact:

- kernel: each ``.cu`` kernel, built for the CPU by the host shim (g++), equals its numpy
  twin (``cuda/conv_int8.py``, what host emulation launches) on random tensors and output
  stages that reach the edges: channel counts that fill no block, left and right shifts,
  offsets, clamps that bite, accumulators that leave int32 (FULLY_CONNECTED wraps and
  converts as the compiled C);
- node: one-node models through ``GpuDelegate(device="host")`` (the twins) and
  ``GpuDelegate(device=emulated_cuda_device())`` (the ``.cu`` kernels through the host shim)
  equal our CPU path and LiteRT's reference kernels (``BUILTIN_REF``) over four invokes
  (eager, captured, replayed), at the geometries the brief lists: 1x1, 3x3 and 5x5 filters,
  stride 2, dilation, SAME and VALID, groups, per-tensor and per-channel filters, depth
  multipliers, int8 and uint8, fused RELU / RELU6;
- launches: each such node is one kernel launch, graphs on and off.
"""

from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest

from backends.cpu.quantization import quantize_multiplier
from backends.gpu import GpuDelegate, emulated_cuda_device
from backends.gpu.cuda.conv2d import Conv2DGeometry, conv2d_filter_layout, conv2d_launch_config
from backends.gpu.cuda.matmul import MatmulShape, matmul_bias_act_launch_config
from backends.gpu.cuda.conv_int8 import (
    OutputStage,
    batch_matmul_int8_args,
    batch_matmul_int8_twin,
    conv2d_int8_args,
    conv2d_int8_twin,
    depthwise_conv2d_int8_twin,
    depthwise_int8_args,
    fully_connected_int8_args,
    fully_connected_int8_launch_config,
    fully_connected_int8_twin,
    quantized_kernel_name,
)
from backends.gpu.cuda.host import shipped_module
from backends.gpu.cuda.depthwise import DepthwiseGeometry, depthwise_launch_config
from interpreter import Interpreter
from interpreter.testing import assert_matches_cpu
from gpu_helpers import assert_tensors_equal_litert
from model_helpers import Const, In, Out, single_op_model
from oracle import litert_interpreter, run_interpreter
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.enums import Padding, TensorType
from schema.model import Model
from schema.params import BatchMatMulParams, Conv2DParams, DepthwiseConv2DParams, FullyConnectedParams

T = TensorType
SAME, VALID = Padding.SAME, Padding.VALID
NUMPY = {T.INT8: np.int8, T.UINT8: np.uint8}


def full_range(dtype, shape, rng) -> np.ndarray:
    """Random values over the whole integer type, both extremes included."""
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    values.reshape(-1)[:2] = [info.min, info.max][: values.size]
    return values


# -- kernel level: the .cu through the host shim equals its numpy twin -------------------------------


def random_stage(rng, dtype, channels: int, taps: int = 1) -> tuple[OutputStage, np.ndarray, np.ndarray]:
    """An output stage with offsets over the type and a clamp narrower than it, and per-channel
    multipliers from real scales around what spreads sums of ``taps`` products over the type
    (one channel at 1.5: a left shift)."""
    info = np.iinfo(dtype)
    low = int(rng.integers(info.min, info.min + 20))
    high = int(rng.integers(info.max - 20, info.max + 1))
    zero_point = int(rng.integers(info.min, info.max + 1))
    filter_offset = 0 if dtype == np.int8 else -int(rng.integers(0, 256))
    stage = OutputStage(-zero_point, filter_offset, int(rng.integers(info.min, info.max + 1)), low, high)
    reals = np.exp(rng.uniform(-1.5, 1.5, channels)) * 60 / (math.sqrt(taps) * 128 * 75)
    reals[0] = 1.5  # one left shift at least
    pairs = [quantize_multiplier(float(r)) for r in reals]
    return stage, np.array([p[0] for p in pairs], np.int32), np.array([p[1] for p in pairs], np.int32)


CONV_KERNEL_CASES = [
    # (input shape, groups, group_out, kernel, stride, dilation, padding)
    ((1, 7, 9, 3), 1, 13, (3, 3), (1, 1), (1, 1), SAME),
    ((2, 9, 8, 6), 2, 5, (3, 2), (2, 1), (1, 2), VALID),
    ((1, 5, 6, 17), 1, 33, (1, 1), (1, 1), (1, 1), VALID),
    ((1, 11, 10, 4), 4, 3, (5, 5), (2, 2), (2, 1), SAME),
]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("case", CONV_KERNEL_CASES)
def test_conv2d_kernel_equals_its_twin(case, dtype):
    input_shape, groups, group_out, kernel, stride, dilation, padding = case
    rng = np.random.default_rng(sum(input_shape) + groups)
    out_channels = groups * group_out
    x = full_range(dtype, input_shape, rng)
    filters = full_range(dtype, (out_channels, *kernel, input_shape[3] // groups), rng)
    w = conv2d_filter_layout(filters, groups)
    bias = rng.integers(-100000, 100000, out_channels).astype(np.int32)
    stage, multipliers, shifts = random_stage(rng, dtype, out_channels, math.prod(kernel) * input_shape[3] // groups)
    geometry = Conv2DGeometry.of(x.shape, w.shape, stride, dilation, padding)
    for b in (bias, None):
        got, want = np.empty(geometry.out_shape, dtype), np.empty(geometry.out_shape, dtype)
        grid, block = conv2d_launch_config(geometry)
        args = conv2d_int8_args(x, w, b, multipliers, shifts, got, geometry, stage, null=None)
        shipped_module("conv2d_int8.cu").get_function(quantized_kernel_name("conv2d", dtype))(grid, block, args)
        conv2d_int8_twin(x, w, b, multipliers, shifts, want, geometry=geometry, stage=stage)
        np.testing.assert_array_equal(got, want)
        assert len(np.unique(got)) > 10  # the outputs spread over the type, not just the clamp


DEPTHWISE_KERNEL_CASES = [
    # (input shape, multiplier, kernel, stride, dilation, padding)
    ((1, 9, 8, 5), 1, (3, 3), (1, 1), (1, 1), SAME),
    ((2, 10, 9, 3), 3, (3, 3), (2, 2), (1, 1), VALID),
    ((1, 11, 10, 7), 2, (5, 3), (1, 2), (2, 3), SAME),
]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("case", DEPTHWISE_KERNEL_CASES)
def test_depthwise_kernel_equals_its_twin(case, dtype):
    input_shape, multiplier, kernel, stride, dilation, padding = case
    rng = np.random.default_rng(sum(input_shape) + multiplier)
    channels = input_shape[3] * multiplier
    x = full_range(dtype, input_shape, rng)
    w = full_range(dtype, (1, *kernel, channels), rng)
    bias = rng.integers(-50000, 50000, channels).astype(np.int32)
    stage, multipliers, shifts = random_stage(rng, dtype, channels, math.prod(kernel))
    geometry = DepthwiseGeometry.of(x.shape, w.shape, stride, dilation, padding)
    for b in (bias, None):
        got, want = np.empty(geometry.out_shape, dtype), np.empty(geometry.out_shape, dtype)
        grid, block = depthwise_launch_config(geometry.out_shape)
        args = depthwise_int8_args(x, w, b, multipliers, shifts, got, geometry, stage, null=None)
        shipped_module("depthwise_conv2d_int8.cu").get_function(quantized_kernel_name("depthwise_conv2d", dtype))(
            grid, block, args
        )
        depthwise_conv2d_int8_twin(x, w, b, multipliers, shifts, want, geometry=geometry, stage=stage)
        np.testing.assert_array_equal(got, want)
        assert len(np.unique(got)) > 10


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("rows, depth, units", [(1, 300, 10), (7, 33, 65), (5, 1, 3)])
def test_fully_connected_kernel_equals_its_twin(rows, depth, units, dtype):
    rng = np.random.default_rng(rows * depth + units)
    x = full_range(dtype, (rows, depth), rng)
    w = full_range(dtype, (depth, units), rng)
    bias = rng.integers(-50000, 50000, units).astype(np.int32)
    stage, _, _ = random_stage(rng, dtype, units)
    scales = np.exp(rng.uniform(-1.5, 1.5, units)) * 60 / (math.sqrt(depth) * 128 * 75)
    scales[0] = 3e5  # a product far outside int32: INT32_MIN as on x86
    for b in (bias, None):
        got, want = np.empty((rows, units), dtype), np.empty((rows, units), dtype)
        grid, block = fully_connected_int8_launch_config(rows, units, depth)
        args = fully_connected_int8_args(x, w, b, scales, got, stage, null=None)
        shipped_module("fully_connected_int8.cu").get_function(quantized_kernel_name("fully_connected", dtype))(
            grid, block, args
        )
        fully_connected_int8_twin(x, w, b, scales, want, stage=stage)
        np.testing.assert_array_equal(got, want)


def test_fully_connected_kernel_wraps_its_int32_accumulator_as_the_twin():
    depth = 140000  # 128 * 127 * 140000 > 2**31: the accumulator wraps
    x = np.full((1, depth), -128, np.int8)
    w = np.full((depth, 2), -127, np.int8)
    stage = OutputStage(0, 0, 0, -128, 127)
    scales = np.array([1e-9, 1.0])
    got, want = np.empty((1, 2), np.int8), np.empty((1, 2), np.int8)
    args = fully_connected_int8_args(x, w, None, scales, got, stage, null=None)
    shipped_module("fully_connected_int8.cu").get_function("fully_connected_int8")(
        *fully_connected_int8_launch_config(1, 2, depth), args
    )
    fully_connected_int8_twin(x, w, None, scales, want, stage=stage)
    np.testing.assert_array_equal(got, want)
    wrapped = (128 * 127 * depth + 2**31) % 2**32 - 2**31  # negative: the sum wrapped
    assert wrapped < 0 and got[0, 1] == -128


@pytest.mark.parametrize(
    "a_shape, b_shape, adjoint_a, adjoint_b",
    [((3, 5, 37), (3, 37, 9), False, False), ((1, 21, 6), (4, 13, 21), True, True), ((7, 11), (2, 11, 66), False, False)],
)
def test_batch_matmul_kernel_equals_its_twin(a_shape, b_shape, adjoint_a, adjoint_b):
    rng = np.random.default_rng(len(a_shape) + a_shape[-1])
    a, b = full_range(np.int8, a_shape, rng), full_range(np.int8, b_shape, rng)
    shape = MatmulShape.of(a.shape, b.shape, adjoint_a, adjoint_b)
    stage = OutputStage(-int(rng.integers(-128, 128)), -int(rng.integers(-128, 128)), int(rng.integers(-128, 128)), -128, 127)
    multiplier, shift = quantize_multiplier(60 / (math.sqrt(shape.k) * 128 * 128))
    got, want = (np.empty((shape.batch, shape.m, shape.n), np.int8) for _ in range(2))
    args = batch_matmul_int8_args(a, b, got, shape, stage, multiplier, shift)
    shipped_module("batch_matmul_int8.cu").get_function("batch_matmul_int8")(
        *matmul_bias_act_launch_config(shape.batch, shape.m, shape.n), args
    )
    batch_matmul_int8_twin(a, b, want, adjoint_a=adjoint_a, adjoint_b=adjoint_b, stage=stage, multiplier=multiplier, shift=shift)
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) > 10


# -- node level: the delegate equals the CPU path and LiteRT (BUILTIN_REF) -----------------------------

DEVICES = [
    pytest.param(lambda: "host", id="host"),
    pytest.param(emulated_cuda_device, id="emulated-cuda"),
]


def one_node(op, x_spec, constants, params, out_spec) -> bytes:
    """``x_spec``: (shape, type, quantization) of the graph input; ``constants``: (values,
    type, quantization) per constant input (filter, bias); ``out_spec`` likewise."""
    constant_inputs = [Const(np.asarray(values, {T.INT32: np.int32, **NUMPY}[type_]), q) for values, type_, q in constants]
    return single_op_model(op, [In(*x_spec), *constant_inputs], Out([1], *out_spec), params)


def output_scale(input_scale: float, filter_scale: float, taps: int) -> float:
    """An output scale that spreads the outputs over the type (a few saturate)."""
    return float(input_scale * filter_scale * math.sqrt(taps) * 75 * 75 / 40)


def conv_model(io_type, input_shape, out_channels, kernel, *, groups=1, stride=(1, 1), dilation=(1, 1), padding=SAME,
               activation=Act.NONE, per_channel=True, bias=True, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    group_in = input_shape[3] // groups
    s_in = float(rng.uniform(0.005, 0.05))
    if io_type == T.UINT8:
        z_in, z_out, z_w = (int(v) for v in rng.integers(0, 256, 3))
        s_w = np.float32([rng.uniform(0.005, 0.05)])
        filters = rng.integers(0, 256, (out_channels, *kernel, group_in))
        w_quant = quantization(s_w, z_w)
    else:
        z_in, z_out = (int(v) for v in rng.integers(-128, 128, 2))
        s_w = np.float32(rng.uniform(0.005, 0.05, out_channels if per_channel else 1))
        filters = rng.integers(-127, 128, (out_channels, *kernel, group_in))
        w_quant = quantization(s_w, 0, 0)
    constants = [(filters, io_type, w_quant)]
    if bias:
        constants.append((rng.integers(-20000, 20000, out_channels), T.INT32, quantization(np.float32(s_in) * s_w, 0)))
    params = Conv2DParams(
        padding=padding, stride_h=stride[0], stride_w=stride[1], fused_activation_function=activation,
        dilation_h_factor=dilation[0], dilation_w_factor=dilation[1],
    )
    s_out = output_scale(s_in, float(np.mean(s_w)), kernel[0] * kernel[1] * group_in)
    return one_node(B.CONV_2D, (input_shape, io_type, quantization(s_in, z_in)), constants, params,
                    (io_type, quantization(s_out, z_out)))


def depthwise_model(io_type, input_shape, kernel, *, multiplier=1, stride=(1, 1), dilation=(1, 1), padding=SAME,
                    activation=Act.NONE, per_channel=True, bias=True, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    channels = input_shape[3] * multiplier
    s_in = float(rng.uniform(0.005, 0.05))
    if io_type == T.UINT8:
        z_in, z_out, z_w = (int(v) for v in rng.integers(0, 256, 3))
        s_w = np.float32([rng.uniform(0.005, 0.05)])
        filters = rng.integers(0, 256, (1, *kernel, channels))
        w_quant = quantization(s_w, z_w)
    else:
        z_in, z_out = (int(v) for v in rng.integers(-128, 128, 2))
        s_w = np.float32(rng.uniform(0.005, 0.05, channels if per_channel else 1))
        filters = rng.integers(-127, 128, (1, *kernel, channels))
        w_quant = quantization(s_w, 0, 3)
    constants = [(filters, io_type, w_quant)]
    if bias:
        constants.append((rng.integers(-5000, 5000, channels), T.INT32, quantization(np.float32(s_in) * s_w, 0)))
    params = DepthwiseConv2DParams(
        padding=padding, stride_h=stride[0], stride_w=stride[1], depth_multiplier=multiplier,
        fused_activation_function=activation, dilation_h_factor=dilation[0], dilation_w_factor=dilation[1],
    )
    s_out = output_scale(s_in, float(np.mean(s_w)), kernel[0] * kernel[1])
    return one_node(B.DEPTHWISE_CONV_2D, (input_shape, io_type, quantization(s_in, z_in)), constants, params,
                    (io_type, quantization(s_out, z_out)))


def fc_model(io_type, rows, depth, units, *, activation=Act.NONE, per_channel=False, bias=True, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    s_in = float(rng.uniform(0.005, 0.05))
    if io_type == T.UINT8:
        z_in, z_out, z_w = (int(v) for v in rng.integers(0, 256, 3))
        weights = rng.integers(0, 256, (units, depth))
    else:
        z_in, z_out = (int(v) for v in rng.integers(-128, 128, 2))
        z_w = 0
        weights = rng.integers(-127, 128, (units, depth))
    s_w = np.float32(rng.uniform(0.005, 0.05, units if per_channel else 1))
    w_quant = quantization(s_w, 0, 0) if per_channel else quantization(s_w, z_w)
    constants = [(weights, io_type, w_quant)]
    if bias:
        constants.append((rng.integers(-20000, 20000, units), T.INT32, quantization(np.float32(s_in) * s_w, 0)))
    params = FullyConnectedParams(fused_activation_function=activation)
    s_out = output_scale(s_in, float(np.mean(s_w)), depth)
    return one_node(B.FULLY_CONNECTED, ((rows, depth), io_type, quantization(s_in, z_in)), constants, params,
                    (io_type, quantization(s_out, z_out)))


def check(model: bytes, make_device, *, version: int, invokes: int = 4) -> None:
    """Stamped ``version``; delegated; equal to LiteRT's reference kernels over ``invokes``
    invokes with new inputs; the partition replays a CUDA graph; equal to our CPU path."""
    assert Model.from_bytes(model).subgraphs[0].operators[0].version == version
    delegate = GpuDelegate(device=make_device())
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(delegate)
    placements = interpreter.node_placements()
    assert placements and all(p.delegated for p in placements), [(p.op, p.rejections) for p in placements]
    interpreter.allocate_tensors()
    oracle = litert_interpreter(model)
    rng = np.random.default_rng(7)
    details = interpreter.get_input_details()
    for k in range(invokes):
        inputs = [full_range(d["dtype"], tuple(d["shape"]), rng) for d in details]
        for detail, value in zip(details, inputs):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        got = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        want = run_interpreter(oracle, inputs)[0]
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want, err_msg=f"invoke {k + 1}")
    assert len(np.unique(got)) > 5  # not a constant (all clamped) output
    stats = delegate.partition_stats()
    assert len(stats) == 1 and stats[0].graph == "replaying", stats
    assert_matches_cpu(model, lambda: GpuDelegate(device=make_device()), invokes=invokes, seed=3)


# (LiteRT's quantized CONV_2D requires a bias; the kernel's null bias is checked at the kernel level.)
CONV_CASES = {
    "int8-3x3-same-7to13": (T.INT8, dict(input_shape=(1, 9, 8, 7), out_channels=13, kernel=(3, 3)), 3),
    "int8-1x1-valid-17to33": (T.INT8, dict(input_shape=(2, 5, 6, 17), out_channels=33, kernel=(1, 1), padding=VALID), 3),
    "int8-5x5-stride2-same-relu": (T.INT8, dict(input_shape=(1, 12, 11, 3), out_channels=5, kernel=(5, 5), stride=(2, 2), activation=Act.RELU), 3),
    "int8-3x3-dilation2-valid-relu6": (T.INT8, dict(input_shape=(1, 11, 12, 4), out_channels=6, kernel=(3, 3), dilation=(2, 2), padding=VALID, activation=Act.RELU6), 3),
    "int8-3x2-stride2x1-dilation1x2-same": (T.INT8, dict(input_shape=(1, 10, 9, 5), out_channels=3, kernel=(3, 2), stride=(2, 1), dilation=(1, 2)), 3),
    "int8-per-tensor-filter": (T.INT8, dict(input_shape=(1, 8, 8, 6), out_channels=9, kernel=(3, 3), per_channel=False), 3),
    "int8-grouped-2-groups": (T.INT8, dict(input_shape=(1, 8, 7, 6), out_channels=10, kernel=(3, 3), groups=2), 6),
    "int8-grouped-3-groups-stride2-relu": (T.INT8, dict(input_shape=(1, 9, 9, 9), out_channels=6, kernel=(3, 3), groups=3, stride=(2, 2), activation=Act.RELU), 6),
    "uint8-3x3-same": (T.UINT8, dict(input_shape=(1, 9, 8, 5), out_channels=7, kernel=(3, 3)), 1),
    "uint8-5x5-stride2-valid-relu6": (T.UINT8, dict(input_shape=(2, 13, 12, 3), out_channels=4, kernel=(5, 5), stride=(2, 2), padding=VALID, activation=Act.RELU6), 1),
    "uint8-1x1-relu": (T.UINT8, dict(input_shape=(1, 6, 5, 11), out_channels=3, kernel=(1, 1), activation=Act.RELU), 1),
}


@pytest.mark.parametrize("make_device", DEVICES)
@pytest.mark.parametrize("case", list(CONV_CASES))
def test_conv2d_matches_cpu_and_litert(case, make_device):
    io_type, kwargs, version = CONV_CASES[case]
    check(conv_model(io_type, **kwargs), make_device, version=version)


DEPTHWISE_CASES = {
    "int8-3x3-same-7ch": (T.INT8, dict(input_shape=(1, 9, 8, 7), kernel=(3, 3)), 3),
    "int8-multiplier3-stride2-valid-relu6": (T.INT8, dict(input_shape=(1, 10, 9, 3), kernel=(3, 3), multiplier=3, stride=(2, 2), padding=VALID, activation=Act.RELU6), 3),
    "int8-5x5-dilation2-same-per-tensor": (T.INT8, dict(input_shape=(1, 12, 12, 5), kernel=(5, 5), dilation=(2, 2), per_channel=False), 3),
    "int8-1x1-relu-no-bias": (T.INT8, dict(input_shape=(2, 4, 5, 33), kernel=(1, 1), activation=Act.RELU, bias=False), 3),
    "uint8-3x3-multiplier2": (T.UINT8, dict(input_shape=(1, 8, 9, 3), kernel=(3, 3), multiplier=2), 1),
    "uint8-dilation2-relu": (T.UINT8, dict(input_shape=(1, 11, 10, 4), kernel=(3, 3), dilation=(2, 2), activation=Act.RELU), 2),
}


@pytest.mark.parametrize("make_device", DEVICES)
@pytest.mark.parametrize("case", list(DEPTHWISE_CASES))
def test_depthwise_conv2d_matches_cpu_and_litert(case, make_device):
    io_type, kwargs, version = DEPTHWISE_CASES[case]
    check(depthwise_model(io_type, **kwargs), make_device, version=version)


FC_CASES = {
    "int8-per-tensor": (T.INT8, dict(rows=1, depth=67, units=10), 4),
    "int8-per-channel-relu6-3rows": (T.INT8, dict(rows=3, depth=40, units=33, per_channel=True, activation=Act.RELU6), 4),
    "int8-no-bias-slot-relu": (T.INT8, dict(rows=5, depth=9, units=7, bias=False, activation=Act.RELU), 6),
    "uint8-per-tensor": (T.UINT8, dict(rows=2, depth=50, units=13), 1),
}


@pytest.mark.parametrize("make_device", DEVICES)
@pytest.mark.parametrize("case", list(FC_CASES))
def test_fully_connected_matches_cpu_and_litert(case, make_device):
    io_type, kwargs, version = FC_CASES[case]
    check(fc_model(io_type, **kwargs), make_device, version=version)


def bmm_model(x_shape, y_shape, *, adj_x=False, adj_y=False, constant_rhs=False, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    builder = ModelBuilder()
    graph = builder.subgraph()
    s_x, s_y = (float(v) for v in rng.uniform(0.005, 0.05, 2))
    z_x, z_y, z_out = (int(v) for v in rng.integers(-128, 128, 3))
    depth = x_shape[-2] if adj_x else x_shape[-1]
    x = graph.add_input("x", list(x_shape), T.INT8, quantization=quantization(s_x, z_x))
    if constant_rhs:
        y = graph.add_constant("y", rng.integers(-128, 128, y_shape).astype(np.int8), quantization=quantization(s_y, z_y))
    else:
        y = graph.add_input("y", list(y_shape), T.INT8, quantization=quantization(s_y, z_y))
    out = graph.add_tensor("out", [1], T.INT8, quantization=quantization(output_scale(s_x, s_y, depth) * 1.7, z_out))
    graph.add_operator(B.BATCH_MATMUL, [x, y], [out], BatchMatMulParams(adj_x=adj_x, adj_y=adj_y))
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


BMM_CASES = {
    "runtime-operands": dict(x_shape=(2, 3, 40), y_shape=(2, 40, 5)),
    "adjoints-broadcast-batches": dict(x_shape=(2, 1, 17, 6), y_shape=(1, 3, 9, 17), adj_x=True, adj_y=True),
    "constant-rhs-shared": dict(x_shape=(4, 7, 33), y_shape=(33, 10), constant_rhs=True),
    "constant-rhs-adjoint": dict(x_shape=(3, 5, 12), y_shape=(3, 8, 12), adj_y=True, constant_rhs=True),
}


@pytest.mark.parametrize("make_device", DEVICES)
@pytest.mark.parametrize("case", list(BMM_CASES))
def test_batch_matmul_int8_matches_cpu_and_litert(case, make_device):
    check(bmm_model(**BMM_CASES[case]), make_device, version=2)


DEVICE_CASES = {
    **{f"conv2d-{name}": (conv_model, case) for name, case in CONV_CASES.items()},
    **{f"depthwise-{name}": (depthwise_model, case) for name, case in DEPTHWISE_CASES.items()},
    **{f"fully-connected-{name}": (fc_model, case) for name, case in FC_CASES.items()},
    **{f"batch-matmul-{name}": (bmm_model, (None, kwargs, 2)) for name, kwargs in BMM_CASES.items()},
}


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(DEVICE_CASES))
def test_every_node_case_on_a_device_matches_cpu_and_litert(case, cuda_device):
    make_model, (io_type, kwargs, version) = DEVICE_CASES[case]
    model = make_model(**kwargs) if io_type is None else make_model(io_type, **kwargs)
    check(model, cuda_device, version=version)


# -- one launch per node ----------------------------------------------------------------------------


@pytest.mark.parametrize("cuda_graphs", [True, False], ids=["graphs-on", "graphs-off"])
@pytest.mark.parametrize("make_device", DEVICES)
@pytest.mark.parametrize(
    "model",
    [
        lambda: conv_model(T.INT8, (1, 9, 8, 7), 13, (3, 3), groups=1),
        lambda: conv_model(T.UINT8, (1, 9, 8, 6), 4, (3, 3), groups=2),
        lambda: depthwise_model(T.INT8, (1, 9, 8, 3), (3, 3), multiplier=2, dilation=(2, 2)),
        lambda: fc_model(T.INT8, 2, 30, 7, per_channel=True),
        lambda: bmm_model((2, 3, 40), (1, 40, 5), constant_rhs=True),
    ],
    ids=["conv2d", "grouped-uint8-conv2d", "depthwise", "fully-connected", "batch-matmul"],
)
def test_each_node_is_one_kernel_launch(model, make_device, cuda_graphs):
    delegate = GpuDelegate(device=make_device(), cuda_graphs=cuda_graphs)
    interpreter = Interpreter(model_content=model())
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    detail = interpreter.get_input_details()[0]
    rng = np.random.default_rng(0)
    for _ in range(3):  # eager, captured, replayed (graphs on)
        interpreter.set_tensor(detail["index"], full_range(detail["dtype"], tuple(detail["shape"]), rng))
        interpreter.invoke()
    (stats,) = delegate.partition_stats()
    assert stats.graph == ("replaying" if cuda_graphs else "off")
    last = stats.last_invoke
    assert last.kernel_launches + last.graph_nodes == 1, last


# -- what the kernels cannot run stays on the CPU, with the reason ----------------------------------------


def test_a_conv2d_whose_int32_accumulators_could_overflow_is_refused():
    # 255 * 255 * 3 * 3 * 4000 > 2**31: TFLite's int32 accumulator could wrap where the CPU kernel is exact.
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 3, 3, 4000], T.UINT8, quantization=quantization(0.02, 0))
    w = graph.add_constant("w", np.full((2, 3, 3, 4000), 255, np.uint8), quantization=quantization(0.02, 0))
    out = graph.add_tensor("out", [1, 3, 3, 2], T.UINT8, quantization=quantization(1000.0, 0))
    graph.add_operator(B.CONV_2D, [x, w], [out], Conv2DParams(padding=SAME, stride_h=1, stride_w=1))
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    interpreter = Interpreter(model_content=builder.build())
    interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    (placement,) = interpreter.node_placements()
    assert not placement.delegated
    assert "int32 accumulators could overflow" in str(placement.rejections), placement.rejections



def test_a_depthwise_conv2d_whose_bias_could_overflow_the_accumulator_is_refused():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 4, 4, 2], T.INT8, quantization=quantization(0.02, 0))
    w = graph.add_constant("w", np.full((1, 3, 3, 2), 100, np.int8), quantization=quantization([0.01, 0.01], 0, 3))
    b = graph.add_constant("b", np.array([2**31 - 1000, 0], np.int32), quantization=quantization([0.0002, 0.0002], 0))
    out = graph.add_tensor("out", [1, 4, 4, 2], T.INT8, quantization=quantization(1000.0, 0))
    params = DepthwiseConv2DParams(padding=SAME, stride_h=1, stride_w=1, depth_multiplier=1)
    graph.add_operator(B.DEPTHWISE_CONV_2D, [x, w, b], [out], params)
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    interpreter = Interpreter(model_content=builder.build())
    interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    (placement,) = interpreter.node_placements()
    assert not placement.delegated
    assert "int32 accumulators could overflow" in str(placement.rejections), placement.rejections

# -- every int8 model: every tensor on the device branch (the .cu kernels through the host shim) ----------

MODELS = pathlib.Path(__file__).parents[1] / "data" / "models"
INT8_MODELS = sorted(MODELS.glob("converter/*_int8.tflite")) + sorted(
    p for p in MODELS.glob("real/*int8*.tflite") if "streaming" not in p.stem  # (test_int8_models_gpu: 8 invokes there)
)


@pytest.mark.parametrize("path", INT8_MODELS, ids=lambda p: p.stem)
def test_every_tensor_of_every_int8_model_on_the_emulated_device_equals_builtin_ref(path):
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    delegate = GpuDelegate(device=emulated_cuda_device(), expose_intermediates=True)
    ours = Interpreter(model_path=str(path))
    ours.modify_graph_with_delegate(delegate)
    ours.allocate_tensors()
    assert any(p.delegated for p in ours.node_placements())
    theirs = LiteRT(model_path=str(path), experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                    experimental_preserve_all_tensors=True)
    theirs.allocate_tensors()
    rng = np.random.default_rng(1)
    compared = 0
    for step in range(3):  # eager, captured, replayed
        for mine, reference in zip(ours.get_input_details(), theirs.get_input_details()):
            dtype = np.dtype(mine["dtype"])
            value = (full_range(dtype, tuple(mine["shape"]), rng) if dtype.kind in "iu"
                     else rng.uniform(-2, 2, tuple(mine["shape"])).astype(dtype))
            ours.set_tensor(mine["index"], value)
            theirs.set_tensor(reference["index"], value)
        ours.invoke()
        theirs.invoke()
        compared += assert_tensors_equal_litert(ours, theirs, f"invoke {step}")
    assert compared >= 3 * 2


# -- AddressSanitizer: no kernel reads or writes outside its arrays -----------------------------------------
#
# A GPU forgives nothing a CPU loop would: a read past an array is garbage or a fault on a device.
# The kernels are built with -fsanitize=address and run in a Python process with libasan
# preloaded, so that numpy's buffers (exactly sized) carry redzones, over boundary geometries
# (windows mostly in the padding, dilated filters wider than the input, exact VALID fits,
# partial blocks of odd sizes); each launch must also equal its twin.

ASAN_SCRIPT = r'''
import sys
import numpy as np
from backends.gpu.cuda.conv2d import Conv2DGeometry, conv2d_filter_layout
from backends.gpu.cuda.matmul import MatmulShape
from backends.gpu.cuda.conv_int8 import (
    OutputStage, batch_matmul_int8_args, batch_matmul_int8_twin, conv2d_int8_args, conv2d_int8_twin,
    depthwise_conv2d_int8_twin, depthwise_int8_args, fully_connected_int8_args, fully_connected_int8_twin,
)
from backends.gpu.cuda.host import HostModule
from backends.gpu.cuda.sources import read_source
from backends.gpu.cuda.depthwise import DepthwiseGeometry
from backends.cpu.quantization import quantize_multiplier

FLAGS = ("-fsanitize=address", "-fno-omit-frame-pointer", "-g")
sources = dict(arg.split("=", 1) for arg in sys.argv[1:])  # name=path of a (possibly broken) source
def module(name, cooperative=False):
    text = open(sources[name]).read() if name in sources else read_source(name)
    return HostModule(text, name, cooperative=cooperative, flags=FLAGS)
rng = np.random.default_rng(0)
def values(dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
def launch(kernel, threads, block, args):
    kernel((-(-threads // block), 1, 1), (block, 1, 1), args)
def stage_for(dtype, channels):
    pairs = [quantize_multiplier(float(r)) for r in rng.uniform(1e-4, 1e-2, channels)]
    m = np.array([p[0] for p in pairs], np.int32); s = np.array([p[1] for p in pairs], np.int32)
    offset = -3 if dtype == np.int8 else -130
    return OutputStage(offset, 0 if dtype == np.int8 else -120, 5, int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)), m, s

CASES = [  # input shape, kernel, stride, dilation, padding, block
    ((1, 1, 1, 1), (3, 3), (1, 1), (1, 1), "SAME", 256),
    ((1, 2, 3, 2), (5, 5), (1, 1), (3, 3), "SAME", 32),
    ((2, 5, 4, 3), (3, 3), (2, 2), (1, 1), "VALID", 7),
    ((1, 7, 7, 2), (3, 3), (3, 3), (2, 2), "SAME", 64),
    ((1, 4, 4, 1), (4, 4), (1, 1), (1, 1), "VALID", 1),
    ((3, 3, 9, 5), (1, 7), (1, 2), (1, 2), "SAME", 100),
]
for dtype, suffix in ((np.int8, "int8"), (np.uint8, "uint8")):
    conv, depthwise = module("conv2d_int8.cu"), module("depthwise_conv2d_int8.cu")
    for shape, kernel, stride, dilation, padding, block in CASES:
        for groups, group_out in ((1, 3), (shape[3], 2)):
            x = values(dtype, shape)
            w = conv2d_filter_layout(values(dtype, (groups * group_out, *kernel, shape[3] // groups)), groups)
            stage, m, s = stage_for(dtype, groups * group_out)
            bias = rng.integers(-1000, 1000, groups * group_out).astype(np.int32)
            g = Conv2DGeometry.of(x.shape, w.shape, stride, dilation, padding)
            got, want = np.empty(g.out_shape, dtype), np.empty(g.out_shape, dtype)
            pixels = g.out_shape[0] * g.out_shape[1] * g.out_shape[2]
            launch(conv.get_function("conv2d_" + suffix), -(-pixels // 4) * g.out_channels, block,
                   conv2d_int8_args(x, w, bias, m, s, got, g, stage, None))
            conv2d_int8_twin(x, w, bias, m, s, want, geometry=g, stage=stage)
            assert (got == want).all(), ("conv2d", shape)
        for multiplier in (1, 3):
            x = values(dtype, shape)
            w = values(dtype, (1, *kernel, shape[3] * multiplier))
            stage, m, s = stage_for(dtype, shape[3] * multiplier)
            g = DepthwiseGeometry.of(x.shape, w.shape, stride, dilation, padding)
            got, want = np.empty(g.out_shape, dtype), np.empty(g.out_shape, dtype)
            launch(depthwise.get_function("depthwise_conv2d_" + suffix), got.size, block,
                   depthwise_int8_args(x, w, None, m, s, got, g, stage, None))
            depthwise_conv2d_int8_twin(x, w, None, m, s, want, geometry=g, stage=stage)
            assert (got == want).all(), ("depthwise", shape)
    fc = module("fully_connected_int8.cu", cooperative=True)  # __shared__, __syncthreads
    for rows, depth, units, block in ((1, 1, 1, (1, 1)), (5, 7, 3, (2, 1)), (9, 3, 33, (32, 2)), (2, 64, 5, (4, 4))):
        x, w = values(dtype, (rows, depth)), values(dtype, (depth, units))
        stage, _, _ = stage_for(dtype, units)
        scales = rng.uniform(1e-4, 1e-2, units)
        got, want = np.empty((rows, units), dtype), np.empty((rows, units), dtype)
        grid = (rows * -(-units // block[0]), 1, 1)  # a block per (row, tile of units)
        fc.get_function("fully_connected_" + suffix)(grid, (*block, 1), fully_connected_int8_args(x, w, None, scales, got, stage, None))
        fully_connected_int8_twin(x, w, None, scales, want, stage=stage)
        assert (got == want).all(), ("fully_connected", rows, depth, units)
bmm = module("batch_matmul_int8.cu")
for a_shape, b_shape, adj_a, adj_b in (((1, 1), (1, 1), False, False), ((3, 5, 2), (1, 7, 2), False, True), ((2, 9, 3), (2, 9, 6), True, False)):
    a, b = values(np.int8, a_shape), values(np.int8, b_shape)
    shape = MatmulShape.of(a.shape, b.shape, adj_a, adj_b)
    stage = OutputStage(-3, 4, 5, -128, 127)
    got, want = (np.empty((shape.batch, shape.m, shape.n), np.int8) for _ in range(2))
    grid = (-(-shape.n // 3), -(-(-(-shape.m // 4)) // 2), shape.batch)
    bmm.get_function("batch_matmul_int8")(grid, (3, 2, 1), batch_matmul_int8_args(a, b, got, shape, stage, 1 << 30, -6))
    batch_matmul_int8_twin(a, b, want, adjoint_a=adj_a, adjoint_b=adj_b, stage=stage, multiplier=1 << 30, shift=-6)
    assert (got == want).all(), ("batch_matmul", a_shape, b_shape)
print("clean")
'''


def run_under_asan(tmp_path, replacements: dict[str, str] | None = None):
    import os
    import subprocess
    import sys

    from backends.gpu.cuda.sources import read_source

    library = subprocess.run(["g++", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(library):
        pytest.skip("g++ has no libasan")
    arguments = []
    for name, text in (replacements or {}).items():
        path = tmp_path / name
        path.write_text(text)
        arguments.append(f"{name}={path}")
    script = tmp_path / "asan_check.py"
    script.write_text(ASAN_SCRIPT)
    root = pathlib.Path(__file__).parents[2]
    env = dict(os.environ, PYTHONPATH=str(root), LD_PRELOAD=library, ASAN_OPTIONS="detect_leaks=0:halt_on_error=1")
    return subprocess.run([sys.executable, str(script), *arguments], capture_output=True, text=True, timeout=600,
                          env=env, cwd=root, check=False)


def test_the_int8_kernels_are_clean_under_address_sanitizer_on_boundary_shapes(tmp_path):
    result = run_under_asan(tmp_path)
    assert result.returncode == 0 and result.stdout.strip().endswith("clean"), (result.stdout + result.stderr)[-4000:]
    assert "AddressSanitizer" not in result.stderr


ASAN_BREAKAGES = {
    # The partial last block runs past the output.
    "depthwise-no-index-guard": ("depthwise_conv2d_int8.cu", "if (index >= total) return false;", ""),
    # Padding columns read outside the input rows.
    "depthwise-no-column-check": ("depthwise_conv2d_int8.cu", "if (ix < 0 || ix >= in_w) continue;", ""),
    # The conv's pixels past the end (the last group of CONV2D_PIXELS) read past the input.
    "conv-pixels-past-the-end": ("conv2d_int8.cu", "const long long pixel = p.valid ? m : 0;", "const long long pixel = m;"),
    # FULLY_CONNECTED's units past the end (the last tile) read past the weights and write past the output.
    "fully-connected-units": ("fully_connected_int8.cu", "const bool valid = unit < units && row < rows;", "const bool valid = row < rows;"),
}


@pytest.mark.parametrize("breakage", sorted(ASAN_BREAKAGES))
def test_address_sanitizer_catches_an_int8_kernel_with_a_missing_bounds_check(breakage, tmp_path):
    from backends.gpu.cuda.sources import read_source

    name, old, new = ASAN_BREAKAGES[breakage]
    source = read_source(name)
    assert source.count(old) == 1, f"{name} no longer contains {old!r}: update this test"
    result = run_under_asan(tmp_path, {name: source.replace(old, new)})
    assert result.returncode != 0
    assert "AddressSanitizer" in result.stderr, (result.stdout + result.stderr)[-4000:]
