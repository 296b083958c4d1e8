"""The quantized window and row kernels (``pool2d.cu``: AVERAGE_POOL_2D, MAX_POOL_2D; ``int8_windows.cu``:
MEAN and SUM, SOFTMAX) and their numpy twins (``backends/gpu/cuda/int8_windows.py``):
each twin computes what its kernel computes (built for the CPU by the host shim, on the
emulated CUDA device), bit for bit, in one launch; and both equal our CPU path (TFLite's
reference kernels, tested against BUILTIN_REF in tests/cpu) on one-node models. The ops end
to end against the oracle are in test_quantized_windows.py and test_quantized_arithmetic.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu.kernels.softmax_quantized import QuantizedSoftmax as CpuQuantizedSoftmax
from backends.gpu.cuda.int8_windows import (
    QuantizedMeanCuda,
    QuantizedMeanParams,
    QuantizedPool2DCuda,
    QuantizedSoftmaxCuda,
    QuantizedSoftmaxParams,
)
from backends.cpu.kernels.reduce_quantized import folded_multiplier
from backends.cpu.quantization import quantize_multiplier
from backends.gpu import GpuDelegate, emulated_cuda_device
from interpreter.testing import assert_matches_cpu
from kernel_twin import assert_twin_matches, run_both_ways
from model_helpers import Const, In, Out, single_op_model
from oracle import random_inputs, run_interpreter, run_litert
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator as B
from schema.enums import TensorType as T
from schema.params import Pool2DParams, ReducerParams, SoftmaxParams
from interpreter import Interpreter

RNG = np.random.default_rng(5)
SOURCE = "int8_windows.cu"  # MEAN and SOFTMAX (the pools: QuantizedPool2DCuda.source, pool2d.cu)
TYPES = {np.int8: T.INT8, np.uint8: T.UINT8, np.int16: T.INT16}


def full_range(dtype, shape) -> np.ndarray:
    info = np.iinfo(dtype)
    values = RNG.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    values.reshape(-1)[:2] = [info.min, info.max][: values.size]
    return values


def cpu_one_node(op, x: np.ndarray, params, out_type=None, out_q=None, extra=None) -> np.ndarray:
    """``op`` on our CPU path, the input quantized (0.1, 3) and the output as given."""
    dtype = x.dtype.type
    zero = 3 if dtype == np.int8 else 131
    inputs = [In(x.shape, TYPES[dtype], quantization(0.1, zero))] + ([] if extra is None else [Const(np.asarray(extra, np.int32))])
    model = single_op_model(op, inputs, Out([1], out_type or TYPES[dtype], out_q or quantization(0.1, zero)), params)
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


POOL_CASES = [
    ((1, 9, 9, 4), (3, 3), (2, 2), "SAME"),
    ((2, 8, 7, 3), (3, 2), (1, 2), "SAME"),
    ((1, 10, 10, 2), (2, 2), (2, 2), "VALID"),
    ((1, 25, 5, 64), (25, 5), (1, 1), "VALID"),  # a global pool (keyword spotting)
    ((1, 3, 3, 1), (4, 4), (1, 1), "SAME"),
]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("is_max", [False, True], ids=["average", "max"])
@pytest.mark.parametrize("shape, filter_hw, stride, padding", POOL_CASES, ids=str)
def test_pool_twin_matches_the_kernel_and_the_cpu(shape, filter_hw, stride, padding, is_max, dtype):
    x = full_range(dtype, shape)
    info = np.iinfo(dtype)
    bounds = (int(info.min), int(info.max))
    both = run_both_ways(lambda **where: QuantizedPool2DCuda(is_max, filter_hw, stride, padding, bounds, dtype, **where), QuantizedPool2DCuda.source, [x])
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    params = Pool2DParams(padding=0 if padding == "SAME" else 1, stride_h=stride[0], stride_w=stride[1],
                          filter_height=filter_hw[0], filter_width=filter_hw[1])
    want = cpu_one_node(B.MAX_POOL_2D if is_max else B.AVERAGE_POOL_2D, x, params)
    np.testing.assert_array_equal(both.kernel[0], want)


@pytest.mark.parametrize("is_max", [False, True], ids=["average", "max"])
def test_pool_clamps_to_the_bounds(is_max):
    x = full_range(np.int8, (1, 6, 6, 3))
    both = run_both_ways(lambda **where: QuantizedPool2DCuda(is_max, (2, 2), (1, 1), "SAME", (-20, 40), np.int8, **where), QuantizedPool2DCuda.source, [x])
    assert_twin_matches(both)
    assert both.kernel[0].min() >= -20 and both.kernel[0].max() <= 40
    assert (both.kernel[0] == 40).any()


MEAN_CASES = [((2, 5, 6, 3), (1, 2)), ((2, 5, 6, 3), (3,)), ((2, 5, 6, 3), (0, 3)), ((2, 5, 6, 3), ()),
              ((1, 56, 56, 4), (1, 2)), ((4, 7), (0,)), ((9,), (0,))]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("shape, axes", MEAN_CASES, ids=str)
def test_mean_twin_matches_the_kernel_and_the_cpu(shape, axes, dtype):
    x = full_range(dtype, shape)
    count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    z_in = z_out = 3 if dtype == np.int8 else 131
    multiplier, shift = folded_multiplier(*quantize_multiplier(0.1 / 0.1), count, is_mean=True)
    info = np.iinfo(dtype)
    params = QuantizedMeanParams(z_in * count, multiplier, shift, z_out, (int(info.min), int(info.max)))
    kept = tuple(d for k, d in enumerate(shape) if k not in axes)
    both = run_both_ways(lambda **where: QuantizedMeanCuda(axes, params, dtype, **where), SOURCE, [x],
                         call=lambda launcher, x: launcher(x, kept))
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    want = cpu_one_node(B.MEAN, x, ReducerParams(keep_dims=False), extra=list(axes))
    np.testing.assert_array_equal(both.kernel[0].reshape(want.shape), want)


SOFTMAX_CASES = [
    # input dtype, output dtype, shape, beta, input scale
    (np.int8, np.int8, (1, 12), 1.0, 0.1),
    (np.int8, np.int8, (3, 4, 10), 0.5, 0.05),
    (np.uint8, np.uint8, (2, 1000), 1.0, 0.2),
    (np.int8, np.int16, (5, 33), 2.0, 0.02),
    (np.uint8, np.int16, (2, 3, 2, 7), 1.0, 0.3),
    (np.int8, np.int8, (4, 1), 1.0, 0.1),
]


@pytest.mark.parametrize("dtype, out_dtype, shape, beta, scale", SOFTMAX_CASES, ids=str)
def test_softmax_twin_matches_the_kernel_and_the_cpu(dtype, out_dtype, shape, beta, scale):
    x = full_range(dtype, shape)
    x.reshape(-1, shape[-1])[0, :] = np.iinfo(dtype).max  # a row of equal values
    if out_dtype == np.int16:
        out_q = quantization(1 / 32768, 0)
    else:
        out_q = quantization(1 / 256, -128 if out_dtype == np.int8 else 0)
    zero = 3 if dtype == np.int8 else 131
    # Our CPU path (input scale 0.1) where the case has that scale.
    want = cpu_one_node(B.SOFTMAX, x, SoftmaxParams(beta=beta), TYPES[out_dtype], out_q) if scale == 0.1 else None
    # The CPU kernel's own tables and parameters, for this scale and beta.
    kernel = _configured_softmax(x, zero, scale, beta, out_dtype, out_q)
    params = QuantizedSoftmaxParams(kernel.in_range, kernel.exponent_offset, int(kernel.out_info.min), int(kernel.out_info.max))
    exp, accumulated = kernel.exp_table.astype(np.int32), kernel.exp_accumulated.astype(np.int32)
    both = run_both_ways(lambda **where: QuantizedSoftmaxCuda(params, dtype, out_dtype, **where), SOURCE, [x, exp, accumulated])
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    if want is not None:
        np.testing.assert_array_equal(both.kernel[0], want)


def _configured_softmax(x, zero, scale, beta, out_dtype, out_q):
    """The CPU kernel configured for a one-node model with these parameters."""
    from backends.gpu.ops.quantized_base import configured_cpu_kernel

    builder = ModelBuilder()
    graph = builder.subgraph()
    inp = graph.add_input("x", list(x.shape), TYPES[x.dtype.type], quantization=quantization(scale, zero))
    out = graph.add_tensor("out", list(x.shape), TYPES[out_dtype], quantization=out_q)
    graph.add_operator(B.SOFTMAX, [inp], [out], SoftmaxParams(beta=beta))
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    interpreter = Interpreter(model_content=builder.build())
    interpreter.allocate_tensors()
    main = interpreter._main
    node = main.nodes[0]
    tensors = {i: main.tensors[i] for i in (*node.inputs, *node.outputs)}
    return configured_cpu_kernel(CpuQuantizedSoftmax, node, B.SOFTMAX, 2, tensors)


# -- SUM (the MEAN kernel without 1/count) --------------------------------------------------------


def quantized_sum_model(dtype, shape, axes, keep_dims, s_in=0.05, z=(3, -7), s_out=0.4) -> bytes:
    if dtype == np.uint8:
        z = (abs(z[0]) + 120, abs(z[1]) + 100)
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", list(shape), TYPES[dtype], quantization=quantization(s_in, z[0]))
    a = g.add_constant("axes", np.asarray(axes, np.int32))
    out = g.add_tensor("out", [1], TYPES[dtype], quantization=quantization(s_out, z[1]))
    g.add_operator(B.SUM, [x, a], [out], ReducerParams(keep_dims=keep_dims))
    g.add_output(out)
    builder.add_signature("serving_default", g)
    return builder.build()


SUM_CASES = [((2, 5, 6, 3), (1, 2), True), ((2, 5, 6, 3), (3,), False), ((4, 7), (0, 1), False), ((1, 9, 9, 8), (-2, 1), True)]


@pytest.mark.parametrize("device", [lambda: "host", emulated_cuda_device], ids=["host", "emulated-cuda"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("shape, axes, keep_dims", SUM_CASES, ids=str)
def test_quantized_sum_equals_the_cpu_path_and_builtin_ref_for_uint8(shape, axes, keep_dims, dtype, device):
    model = quantized_sum_model(dtype, shape, axes, keep_dims)
    delegate = GpuDelegate(device=device())
    interpreter = assert_matches_cpu(model, lambda: delegate, invokes=3)
    assert all(p.delegated for p in interpreter.node_placements())
    assert delegate.last_invoke().graph_nodes + delegate.last_invoke().kernel_launches == 1
    if dtype == np.uint8:  # LiteRT 2.3's int8 SUM runs uint8 code (reduce.py's docstring)
        x = random_inputs(model, seed=2)
        np.testing.assert_array_equal(run_interpreter(interpreter, x)[0], run_litert(model, x)[0])


# -- more than one block for more than one row (issue 31) --------------------------------------------


def recorded_launches(make_launcher, source, *arrays, **call):
    """The launches the launcher asks for (launch_configurations.RecordingModule), nothing run."""
    from launch_configurations import RecordingModule

    launches = []
    make_launcher(xp=np, module=RecordingModule(launches, "test"))(*arrays, **call)
    return launches


def blocks(launch) -> int:
    return launch.grid[0] * launch.grid[1] * launch.grid[2]


@pytest.mark.parametrize("rows", [2, 3, 5, 64, 1000])
@pytest.mark.parametrize("depth", [1, 10, 1000])
def test_a_softmax_of_more_than_one_row_runs_on_more_than_one_block(rows, depth):
    params = QuantizedSoftmaxParams(255, 0, -128, 127)
    tables = np.zeros(511, np.int32)
    (launch,) = recorded_launches(lambda **where: QuantizedSoftmaxCuda(params, np.int8, np.int8, **where), SOURCE,
                                  np.zeros((rows, depth), np.int8), tables, tables)
    assert blocks(launch) >= 2
    assert launch.block[1] * blocks(launch) >= rows and launch.threads <= 256


@pytest.mark.parametrize("outputs", [2, 3, 5, 64, 1000])
@pytest.mark.parametrize("count", [1, 49, 3000])
def test_a_mean_of_more_than_one_output_runs_on_more_than_one_block(outputs, count):
    params = QuantizedMeanParams(0, 1 << 30, 0, 0, (-128, 127))
    (launch,) = recorded_launches(lambda **where: QuantizedMeanCuda((1,), params, np.int8, **where), SOURCE,
                                  np.zeros((1, count, outputs), np.int8), (1, outputs))
    assert blocks(launch) >= 2
    assert launch.block[0] * blocks(launch) >= outputs and launch.threads <= 256


@pytest.mark.parametrize("rows", [2, 3, 64])
@pytest.mark.parametrize("units", [1, 10, 1000])
def test_a_fully_connected_of_more_than_one_row_runs_on_more_than_one_block(rows, units):
    from backends.gpu.cuda.conv_int8 import FullyConnectedInt8Cuda, OutputStage

    stage = OutputStage(0, 0, 0, -128, 127)
    (launch,) = recorded_launches(lambda **where: FullyConnectedInt8Cuda(stage, **where), "fully_connected_int8.cu",
                                  np.zeros((rows, 300), np.int8), np.zeros((300, units), np.int8), None, np.ones(units))
    assert blocks(launch) >= rows >= 2
    assert launch.threads <= 256


def test_a_row_of_many_values_is_shared_by_many_threads():
    params = QuantizedSoftmaxParams(255, 0, -128, 127)
    tables = np.zeros(511, np.int32)
    (launch,) = recorded_launches(lambda **where: QuantizedSoftmaxCuda(params, np.int8, np.int8, **where), SOURCE,
                                  np.zeros((1, 5000), np.int8), tables, tables)
    assert launch.block == (256, 1, 1)
