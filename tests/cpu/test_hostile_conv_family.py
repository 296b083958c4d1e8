"""Issue 16 (fuzzing): hostile models for the window kernels (CONV_2D, DEPTHWISE_CONV_2D,
pools), FULLY_CONNECTED and RELU end in the kernels' own clear errors, or run with work
and memory bounded by their tensors where LiteRT runs them (BUILTIN_REF is the oracle).

- a huge dilation: the taps that never touch the input are dropped
  (``WindowGeometry.conv_cropped``), so the padded input stays near the input's size;
  strides and dilations past INT16_MAX are refused, as LiteRT's Prepare refuses them;
- an im2col larger than ``IM2COL_BLOCK_BYTES`` is filled a block of output rows at a time;
- a tensor that a later node resizes (it writes a tensor an earlier node read, or two
  nodes write one tensor) is refused in bind, naming the tensor and both shapes;
- a missing filter / input reaching a kernel through the GPU delegate's folding is refused;
- RELU with an output type other than its input's is refused (TFLite: ReluPrepare);
- the window counts of pools and the quantized pool's index tables cost what the output
  costs, whatever the filter size says.
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest

from schema.errors import ModelError

import backends.cpu.kernels.conv2d as conv2d_module
import backends.cpu.kernels.conv2d_quantized as conv2d_quantized_module
from backends.cpu.kernel import UnsupportedKernelError
from backends.cpu.kernels import _window
from backends.cpu.kernels._window import WindowGeometry, _valid_taps, make_clamp
from backends.gpu import GpuDelegate
from delegate_sdk.context import KernelError
from delegate_sdk.delegate import DelegatePrepareError
from interpreter import Interpreter
from model_helpers import random_quantized_input
from oracle import assert_matches_litert, litert_interpreter, run_litert, run_ours
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType as Act, BuiltinOperator as B, Padding, TensorType as T
from schema.params import Conv2DParams, FullyConnectedParams, Pool2DParams
from test_conv2d import conv_model, conv_params
from test_conv2d_quantized import conv_model as quantized_conv_model, conv_params as quantized_conv_params
from test_depthwise_conv2d import depthwise_model, dw_params
from test_depthwise_conv2d_quantized import dw_model as quantized_dw_model, dw_params as quantized_dw_params


def prepare_error(model: bytes) -> KernelError:
    """The KernelError of ``allocate_tensors``, whose cause is the kernel's clear error."""
    with pytest.raises(KernelError) as caught:
        Interpreter(model_content=model).allocate_tensors()
    assert isinstance(caught.value.__cause__, UnsupportedKernelError), repr(caught.value.__cause__)
    return caught.value


def litert_refuses(model: bytes, fragment: str) -> None:
    with pytest.raises(RuntimeError, match=fragment):
        litert_interpreter(model).allocate_tensors()


# -- huge dilations: taps that never touch the input are dropped ---------------------------


def test_conv_cropped_geometry_gives_the_same_sums_as_the_full_one():
    """Brute force over small geometries: every output sums the same input pixels times the
    same filter taps, with the taps (and leading input rows) ``conv_cropped`` drops."""
    rng = np.random.default_rng(0)

    def direct(x, w, g):
        xs, ws = g.input_view(x), g.filter_view(w)
        out = np.zeros((g.out_h, g.out_w))
        for oy in range(g.out_h):
            for ox in range(g.out_w):
                for ky in range(g.filter_h):
                    for kx in range(g.filter_w):
                        iy, ix = oy * g.stride_h + ky * g.dilation_h - g.pad_top, ox * g.stride_w + kx * g.dilation_w - g.pad_left
                        if 0 <= iy < g.in_h and 0 <= ix < g.in_w:
                            out[oy, ox] += xs[0, iy, ix, 0] * ws[0, ky, kx, 0]
        return out

    cropped = []
    for h, w, k, stride, dilation in [(2, 3, 3, 100, 10), (3, 3, 2, 1, 10), (16, 5, 3, 2, 999), (5, 7, 4, 3, 2), (9, 9, 3, 1, 4)]:
        g = WindowGeometry.of((1, h, w, 1), (k, k), Padding.SAME, (stride, stride), (dilation, dilation))
        c = g.conv_cropped()
        if c is not g:
            cropped.append((h, w, k, stride, dilation))
        x, filters = rng.standard_normal((1, h, w, 1)), rng.standard_normal((1, k, k, 1))
        np.testing.assert_allclose(direct(x, filters, c), direct(x, filters, g))
        assert c.padded_shape[1] <= 3 * h + stride and c.padded_shape[2] <= 3 * w + stride
    assert cropped == [(2, 3, 3, 100, 10), (3, 3, 2, 1, 10), (16, 5, 3, 2, 999)]


@pytest.mark.parametrize(
    ("kind", "shape", "stride", "dilation"),
    [
        ("float", [1, 16, 15, 3], (2, 3), (30000, 7)),  # the first tap kept starts inside the input
        ("float", [2, 17, 17, 2], (1, 1), (32767, 32767)),  # only the centre tap is left
        ("float", [1, 3, 3, 2], (1, 1), (10, 10)),  # no tap touches the input: the bias alone
    ],
    ids=["offset", "centre", "bias-only"],
)
@pytest.mark.parametrize("op", ["conv", "depthwise"])
def test_float_conv_with_a_huge_dilation_runs_and_matches_litert(op, kind, shape, stride, dilation):
    # Uncropped, the padded input of the first case would be (1, 60015, 45, 3) floats, of
    # the second (2, 65551, 65551, 2): 64 GiB.
    kernel = (2, 2) if shape[1] == 3 else (3, 3)
    if op == "conv":
        model = conv_model(shape, [4, *kernel, shape[3]], conv_params(Padding.SAME, stride, dilation))
    else:
        model = depthwise_model(shape, kernel, 2, dw_params(Padding.SAME, stride, dilation, 2))
    assert_matches_litert(model)


@pytest.mark.parametrize("kind", ["int8", "uint8", "int16", "hybrid"])
def test_quantized_conv_with_a_huge_dilation_is_exact(kind):
    model = quantized_conv_model(
        kind, [1, 16, 15, 3], [4, 3, 3, 3], quantized_conv_params(Padding.SAME, (2, 3), (30000, 7)),
        per_channel=kind != "uint8",
    )
    inputs = [random_quantized_input(kind, [1, 16, 15, 3])]
    if kind == "hybrid":
        assert_matches_litert(model, inputs)
    else:
        np.testing.assert_array_equal(run_ours(model, inputs)[0], run_litert(model, inputs)[0])


@pytest.mark.parametrize("kind", ["int8", "uint8", "int16"])
def test_quantized_depthwise_with_a_huge_dilation_is_exact(kind):
    model = quantized_dw_model(
        kind, [1, 16, 15, 3], (3, 3), quantized_dw_params(2, Padding.SAME, (2, 1), (30000, 32767)),
        per_channel=kind != "uint8",
    )
    inputs = [random_quantized_input(kind, [1, 16, 15, 3])]
    np.testing.assert_array_equal(run_ours(model, inputs)[0], run_litert(model, inputs)[0])


@pytest.mark.parametrize(("field", "value"), [("stride_h", 32768), ("stride_w", 2**31 - 1), ("dilation_h_factor", 32768), ("dilation_w_factor", 2**31 - 1)])
@pytest.mark.parametrize("op", ["conv", "depthwise"])
def test_strides_and_dilations_past_int16_max_are_refused_as_litert_refuses_them(op, field, value):
    settings = {"stride": (1, 1), "dilation": (1, 1)}
    axis = 0 if field.endswith("_h") or field == "dilation_h_factor" else 1
    key = "stride" if field.startswith("stride") else "dilation"
    pair = list(settings[key])
    pair[axis] = value
    settings[key] = tuple(pair)
    if op == "conv":
        model = conv_model([1, 8, 8, 2], [3, 3, 3, 2], conv_params(Padding.SAME, settings["stride"], settings["dilation"]))
    else:
        model = depthwise_model([1, 8, 8, 2], (3, 3), 1, dw_params(Padding.SAME, settings["stride"], settings["dilation"]))
    error = prepare_error(model)
    assert f"{field} is {value}; TFLite takes at most 32767 (INT16_MAX)" in str(error)
    litert_refuses(model, "INT16_MAX")


def test_the_gpu_delegate_leaves_a_conv_with_a_huge_dilation_to_the_cpu():
    model = conv_model([1, 16, 16, 2], [3, 3, 3, 2], conv_params(Padding.SAME, (1, 1), (30000, 30000)))
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    (placement,) = interpreter.delegation_reports[-1].placements
    assert placement.runs_on == "CPU"
    assert any("reaches far past the 16x16 input" in reason for reason in placement.rejections)
    x = np.random.default_rng(1).uniform(-1, 1, [1, 16, 16, 2]).astype(np.float32)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    np.testing.assert_allclose(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), run_litert(model, [x])[0], rtol=1e-5, atol=1e-6)


# -- large im2col matrices: a block of output rows at a time --------------------------------


@pytest.mark.parametrize(
    ("groups", "stride", "dilation", "padding"),
    [(1, (1, 1), (1, 1), Padding.SAME), (1, (2, 3), (2, 1), Padding.SAME), (2, (1, 2), (1, 3), Padding.VALID), (2, (2, 2), (1, 1), Padding.SAME)],
)
@pytest.mark.parametrize("filter_is_input", [False, True], ids=["constant", "input"])
def test_float_conv_in_blocks_of_output_rows_matches_litert(monkeypatch, groups, stride, dilation, padding, filter_is_input):
    monkeypatch.setattr(conv2d_module, "IM2COL_BLOCK_BYTES", 2000)  # a few output rows per block
    model = conv_model(
        [2, 11, 9, 4], [4, 3, 2, 4 // groups], conv_params(padding, stride, dilation, Act.RELU6), filter_is_input=filter_is_input
    )
    assert_matches_litert(model)


@pytest.mark.parametrize("kind", ["int8", "uint8", "int16", "hybrid"])
def test_quantized_conv_in_blocks_of_output_rows_is_exact(monkeypatch, kind):
    model = quantized_conv_model(
        kind, [2, 11, 9, 4], [5, 3, 2, 4], quantized_conv_params(Padding.SAME, (2, 1), (1, 2)), per_channel=kind != "uint8"
    )
    inputs = [random_quantized_input(kind, [2, 11, 9, 4])]
    whole = run_ours(model, inputs)[0]
    monkeypatch.setattr(conv2d_quantized_module, "IM2COL_BLOCK_BYTES", 2000)
    blocked = run_ours(model, inputs)[0]
    np.testing.assert_array_equal(blocked, whole)
    if kind != "hybrid":
        np.testing.assert_array_equal(blocked, run_litert(model, inputs)[0])


# -- tensors a later node would resize: refused when the model is read ------------------------
# (The kernels' bind also checks that their tensors keep the shapes they were prepared for:
# a defence behind the interpreter's load-time checks of tensor sources.)


def load_error(model: bytes) -> ModelError:
    with pytest.raises(ModelError) as caught:
        Interpreter(model_content=model)
    return caught.value


def test_a_conv_whose_input_a_later_node_overwrites_is_refused():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 8, 8, 2])
    w = graph.add_constant("w", np.ones([3, 3, 3, 2], np.float32))
    y = graph.add_tensor("y", [1, 8, 8, 3])
    graph.add_operator(B.CONV_2D, [x, w], [y], Conv2DParams(Padding.SAME, 1, 1))
    w2 = graph.add_constant("w2", np.ones([2, 1, 1, 3], np.float32))
    graph.add_operator(B.CONV_2D, [y, w2], [x], Conv2DParams(Padding.VALID, 2, 2))  # writes the model's input
    graph.add_output(y)
    error = load_error(builder.build())
    assert "node 1 (CONV_2D v1) output 0 is tensor 0 ('x'), an input of subgraph 0" in str(error)


def test_a_pool_output_that_a_second_node_also_writes_is_refused():
    builder = ModelBuilder()
    graph = builder.subgraph()
    q = quantization(0.5, 0)
    x = graph.add_input("x", [1, 10, 10, 4], T.INT8, quantization=q)
    y = graph.add_tensor("y", [1, 4, 4, 4], T.INT8, quantization=q)
    graph.add_operator(B.AVERAGE_POOL_2D, [x], [y], Pool2DParams(Padding.VALID, 2, 2, 2, 2))  # [1, 5, 5, 4]
    graph.add_operator(B.MAX_POOL_2D, [x], [y], Pool2DParams(Padding.SAME, 3, 3, 3, 3))  # [1, 4, 4, 4]
    graph.add_output(y)
    error = load_error(builder.build())
    assert "node 1 (MAX_POOL_2D v2) output 0 is tensor 1 ('y'), which node 0 (AVERAGE_POOL_2D v2) also writes" in str(error)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_a_fully_connected_whose_input_a_later_node_overwrites_is_refused(dtype):
    builder = ModelBuilder()
    graph = builder.subgraph()
    if dtype == "float32":
        kwargs, w_kwargs, weights = {}, {}, np.ones([10, 32], np.float32)
        later = np.ones([16, 10], np.float32)
    else:
        kwargs = {"dtype": T.INT8, "quantization": quantization(0.5, 0)}
        w_kwargs = {"quantization": quantization(0.25, 0)}
        weights, later = np.ones([10, 32], np.int8), np.ones([16, 10], np.int8)
    x = graph.add_input("x", [2, 32], **kwargs)
    y = graph.add_tensor("y", [2, 10], **kwargs)
    graph.add_operator(B.FULLY_CONNECTED, [x, graph.add_constant("w", weights, **w_kwargs)], [y], FullyConnectedParams())
    graph.add_operator(B.FULLY_CONNECTED, [y, graph.add_constant("w2", later, **w_kwargs)], [x], FullyConnectedParams())
    graph.add_output(y)
    error = load_error(builder.build())
    assert "output 0 is tensor 0 ('x'), an input of subgraph 0 (each tensor has one writer)" in str(error)


# -- inputs missing where a delegate prepares the node itself -------------------------------


def folded_node_model(op: str) -> bytes:
    """A node whose present inputs are all constants (the GPU delegate takes it, to fold)
    and whose data input (FULLY_CONNECTED) or filter (CONV_2D) is marked absent."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    q = quantization(0.5, 0)
    if op == "fc":
        w = graph.add_constant("w", np.ones([4, 8], np.int8), quantization=quantization(0.25, 0))
        b = graph.add_constant("b", np.zeros([4], np.int32), quantization=quantization(0.125, 0))
        y = graph.add_tensor("y", [1, 4], T.INT8, quantization=q)
        graph.add_operator(B.FULLY_CONNECTED, [-1, w, b], [y], FullyConnectedParams(), version=4)
    else:
        x = graph.add_constant("x", np.ones([1, 4, 4, 2], np.int8), quantization=q)
        b = graph.add_constant("b", np.zeros([3], np.int32), quantization=quantization(0.125, 0))
        y = graph.add_tensor("y", [1, 4, 4, 3], T.INT8, quantization=q)
        graph.add_operator(B.CONV_2D, [x, -1, b], [y], Conv2DParams(Padding.SAME, 1, 1), version=3)
    graph.add_output(y)
    return builder.build()


@pytest.mark.parametrize(("op", "message"), [("fc", "input 0 is required"), ("conv", "input 1 is required")])
def test_a_missing_input_of_a_node_the_gpu_delegate_could_fold_is_left_to_the_cpu_and_refused(op, message):
    interpreter = Interpreter(model_content=folded_node_model(op))
    interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    (placement,) = interpreter.delegation_reports[-1].placements
    assert placement.runs_on == "CPU" and message in placement.rejections[0]
    with pytest.raises(KernelError, match=message) as caught:
        interpreter.allocate_tensors()
    assert isinstance(caught.value.__cause__, ModelError)


# -- RELU ----------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [B.RELU, B.RELU6, B.RELU_N1_TO_1, B.RELU_0_TO_1], ids=lambda op: op.name)
def test_relu_with_an_integer_output_of_a_float_input_is_refused(op):
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3])
    y = graph.add_tensor("y", [2, 3], T.INT32)
    graph.add_operator(op, [x], [y], version=1)
    graph.add_output(y)
    model = builder.build()
    assert "output 'y' has type INT32; this kernel supports FLOAT32" in str(prepare_error(model))
    litert_refuses(model, r"input->type != output->type \(FLOAT32 != INT32\)")


def test_a_one_sided_clamp_of_a_huge_output_takes_a_scalar_bound(monkeypatch):
    monkeypatch.setattr(_window, "CLAMP_OPERAND_LIMIT", 4)
    source = np.array([-2.0, np.nan, 3.0, -0.0, 1.0, -1.0], np.float32)
    out = np.empty_like(source)
    make_clamp((0.0, np.inf), out, source)()
    np.testing.assert_array_equal(out, np.maximum(source, np.float32(0)))


# -- pools: work of the output's size, whatever the filter's --------------------------------


def test_valid_tap_counts_are_computed_from_the_ends_of_each_range():
    for out_size, stride, pad, filter_size, dilation, in_size in [(4, 2, 1, 3, 1, 9), (5, 1, 7, 16, 1, 5), (3, 3, 0, 2, 2, 8), (1, 1, 3, 8, 1, 2)]:
        positions = np.arange(out_size)[:, None] * stride - pad + np.arange(filter_size)[None, :] * dilation
        expected = ((positions >= 0) & (positions < in_size)).sum(axis=1)
        np.testing.assert_array_equal(_valid_taps(out_size, stride, pad, filter_size, dilation, in_size), expected)
    tracemalloc.start()
    geometry = WindowGeometry.of((1, 9, 9, 4), (3, 2**31 - 1), Padding.SAME, (2, 2))
    # Rows: windows of 3 from row -1 in steps of 2; columns: every window spans the input.
    expected = np.outer([2, 3, 3, 3, 2], [9, 9, 9, 9, 9])
    np.testing.assert_array_equal(geometry.valid_counts()[:, :, 0], expected)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20  # bytes; an [OW, 2**31 - 1] table of positions would take 16 GiB


def test_a_quantized_pool_over_millions_of_windows_prepares_without_building_python_index_lists():
    builder = ModelBuilder()
    graph = builder.subgraph()
    q = quantization(0.5, 0)
    x = graph.add_input("x", [1, 9, 1 << 21, 1], T.INT8, quantization=q)
    y = graph.add_tensor("y", [1], T.INT8, quantization=q)
    graph.add_operator(B.AVERAGE_POOL_2D, [x], [y], Pool2DParams(Padding.VALID, 2, 2, 2, 2))
    graph.add_output(y)
    interpreter = Interpreter(model_content=builder.build())
    started = time.process_time()  # this process's CPU time, whatever else the machine runs
    interpreter.allocate_tensors()  # 4.2 million windows: the Python loop took minutes
    assert time.process_time() - started < 10.0  # a guard against per-window Python work, not a speed figure
    x_value = np.random.default_rng(0).integers(-128, 128, [1, 9, 1 << 21, 1]).astype(np.int8)
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x_value)
    interpreter.invoke()
    out = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    windows = x_value[0, :8].astype(np.int32).reshape(4, 2, 1 << 20, 2).sum(axis=(1, 3))
    expected = np.where(windows < 0, -((-windows + 2) // 4), (windows + 2) // 4)
    np.testing.assert_array_equal(out[0, :, :, 0], expected)
