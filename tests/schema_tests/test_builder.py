"""The writer: files it writes carry the minimum versions and load and run in ai-edge-litert."""

from __future__ import annotations

import numpy as np
import pytest

from oracle import run_litert
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding
from schema.model import Model
from schema.params import DepthwiseConv2DParams


def depthwise_reference(x, w, b, stride, dilation, padding):
    """Direct depthwise convolution (NHWC input, [1, kh, kw, C*M] filter), TFLite's padding rule."""
    _, h, wd, c = x.shape
    _, kh, kw, cm = w.shape
    multiplier = cm // c
    def axis(in_size, k):
        effective = (k - 1) * dilation + 1
        out = (in_size + stride - 1) // stride if padding == Padding.SAME else (in_size - effective + stride) // stride
        total = max((out - 1) * stride + effective - in_size, 0)
        return out, total // 2
    oh, pad_h = axis(h, kh)
    ow, pad_w = axis(wd, kw)
    out = np.zeros((x.shape[0], oh, ow, cm), np.float64)
    for oy in range(oh):
        for ox in range(ow):
            for ky in range(kh):
                for kx in range(kw):
                    iy, ix = oy * stride - pad_h + ky * dilation, ox * stride - pad_w + kx * dilation
                    if 0 <= iy < h and 0 <= ix < wd:
                        out[:, oy, ox, :] += np.repeat(x[:, iy, ix, :], multiplier, axis=-1) * w[0, ky, kx, :]
    return (out + b).astype(np.float32)


def depthwise_model(dilation: int, *, int8: bool = False, padding=Padding.SAME, stride: int = 1, seed: int = 0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((1, 3, 3, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    builder = ModelBuilder()
    graph = builder.subgraph()
    params = DepthwiseConv2DParams(
        padding=padding, stride_w=stride, stride_h=stride, depth_multiplier=1, dilation_w_factor=dilation, dilation_h_factor=dilation
    )
    out_size = 9 if padding == Padding.SAME else 9 - 2 * dilation
    if int8:
        x = graph.add_input("x", [1, 9, 9, 4], np.int8, quantization=quantization(0.05, 3))
        wq = graph.add_constant("w", np.clip(np.round(w / 0.02), -127, 127).astype(np.int8), quantization=quantization([0.02] * 4, 0, 3))
        bq = graph.add_constant("b", np.round(b / (0.05 * 0.02)).astype(np.int32), quantization=quantization([0.001] * 4, 0))
        y = graph.add_tensor("y", [1, out_size, out_size, 4], np.int8, quantization=quantization(0.1, -2))
        graph.add_operator(BuiltinOperator.DEPTHWISE_CONV_2D, [x, wq, bq], [y], params)
    else:
        x = graph.add_input("x", [1, 9, 9, 4])
        y = graph.add_tensor("y", [1, out_size, out_size, 4])
        graph.add_operator(BuiltinOperator.DEPTHWISE_CONV_2D, [x, graph.add_constant("w", w), graph.add_constant("b", b)], [y], params)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build(), w, b


@pytest.mark.parametrize("dilation, version", [(1, 1), (2, 2), (3, 2)])
def test_float_depthwise_conv_is_stamped_v2_only_with_dilation(dilation, version):
    model, _, _ = depthwise_model(dilation)
    assert Model.from_bytes(model).subgraphs[0].operators[0].version == version


@pytest.mark.parametrize("dilation", [1, 2])
def test_int8_depthwise_conv_is_stamped_v3_with_or_without_dilation(dilation):
    model, _, _ = depthwise_model(dilation, int8=True)
    assert Model.from_bytes(model).subgraphs[0].operators[0].version == 3


@pytest.mark.parametrize("dilation, padding, stride", [(1, Padding.SAME, 1), (2, Padding.SAME, 1), (2, Padding.VALID, 1), (3, Padding.SAME, 2)])
def test_litert_runs_a_written_depthwise_conv_and_matches_numpy(dilation, padding, stride):
    model, w, b = depthwise_model(dilation, padding=padding, stride=stride)
    x = np.random.default_rng(1).standard_normal((1, 9, 9, 4)).astype(np.float32)
    (got,) = run_litert(model, [x])
    np.testing.assert_allclose(got, depthwise_reference(x, w, b, stride, dilation, padding), rtol=1e-5, atol=1e-5)


def test_litert_runs_a_written_int8_depthwise_conv():
    model, _, _ = depthwise_model(2, int8=True)
    x = np.random.default_rng(2).integers(-128, 128, (1, 9, 9, 4)).astype(np.int8)
    (got,) = run_litert(model, [x])
    assert got.dtype == np.int8 and got.shape == (1, 9, 9, 4)


def test_min_runtime_version_metadata_is_the_tflite_release_of_the_newest_op_version():
    assert Model.from_bytes(depthwise_model(1)[0]).min_runtime_version == "1.5.0"
    assert Model.from_bytes(depthwise_model(2)[0]).min_runtime_version == "1.12.0"
    assert Model.from_bytes(depthwise_model(2, int8=True)[0]).min_runtime_version == "1.14.0"


def test_explicit_version_overrides_the_minimum():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2])
    y = graph.add_tensor("y", [2])
    graph.add_operator(BuiltinOperator.RELU, [x], [y], version=99)
    graph.add_output(y)
    assert Model.from_bytes(builder.build()).subgraphs[0].operators[0].version == 99


def test_written_model_round_trips_tensors_signatures_and_metadata():
    builder = ModelBuilder(description="round trip")
    graph = builder.subgraph("main")
    x = graph.add_input("x", [1, 3], shape_signature=[-1, 3])
    c = graph.add_constant("c", np.arange(3, dtype=np.float32).reshape(1, 3))
    y = graph.add_tensor("y", [1, 3])
    graph.add_operator(BuiltinOperator.ADD, [x, c], [y])
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    builder.add_metadata("note", b"hello")
    model = Model.from_bytes(builder.build())
    main = model.subgraphs[0]
    assert model.description == "round trip"
    assert main.name == "main"
    assert [t.name for t in main.tensors] == ["x", "c", "y"]
    assert main.tensors[0].shape_signature == (-1, 3)
    np.testing.assert_array_equal(main.tensors[1].data, np.arange(3, dtype=np.float32).reshape(1, 3))
    assert main.tensors[1].data.ctypes.data % 16 == 0  # constant buffers are aligned
    assert model.signature("serving_default").inputs == {"x": 0}
    assert model.metadata["note"] == b"hello"


def test_opcode_at_or_above_127_puts_the_placeholder_in_the_deprecated_field():
    from schema import schema_generated as fb

    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [4])
    y = graph.add_tensor("y", [4])
    graph.add_operator(BuiltinOperator.GELU, [x], [y])  # code 150
    graph.add_output(y)
    data = builder.build()
    code = fb.Model.GetRootAs(data, 0).OperatorCodes(0)
    assert (code.DeprecatedBuiltinCode(), code.BuiltinCode()) == (127, BuiltinOperator.GELU)
    assert Model.from_bytes(data).subgraphs[0].operators[0].op_name == "GELU"
