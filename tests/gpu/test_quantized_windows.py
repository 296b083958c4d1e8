"""Quantized (int8 / uint8) DEPTHWISE_CONV_2D, FULLY_CONNECTED, AVERAGE_POOL_2D,
MAX_POOL_2D and MEAN on the GPU delegate, bit for bit against LiteRT's reference kernels
(``BUILTIN_REF``) and against our CPU path.

Every case is a one-node model run through ``GpuDelegate(device="host")`` (host emulation,
the numpy branch) and ``GpuDelegate(device=emulated_cuda_device())`` (the device branch:
the quantized ``.cu`` kernels through the host shim, CuPy's capture rules), over four invokes with new
inputs (the delegate runs eagerly, captures a CUDA graph at invoke 2 and replays it from
invoke 3). Each case checks that the node was delegated and that the partition replays
its graph. Then the version caps: the version just above each claim (int16, hybrid...)
is left on the CPU with a reason that names it.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.gpu import GpuDelegate, emulated_cuda_device
from delegate_sdk.testing import plan_delegation
from interpreter.testing import assert_matches_cpu
from interpreter import Interpreter
from model_helpers import Const, In, Out, single_op_model
from oracle import MODELS_DIR, litert_interpreter, run_interpreter
from schema.builder import quantization
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding, TensorType
from schema.model import Model
from schema.params import DepthwiseConv2DParams, FullyConnectedParams, Pool2DParams, ReducerParams

Act = ActivationFunctionType
B = BuiltinOperator
T = TensorType
SAME, VALID = Padding.SAME, Padding.VALID
NP = {T.INT8: np.int8, T.UINT8: np.uint8, T.INT16: np.int16, T.INT32: np.int32, T.INT64: np.int64, T.FLOAT32: np.float32}
CLAMPS = [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1]

DEVICES = [
    pytest.param(lambda: "host", id="host"),
    pytest.param(emulated_cuda_device, id="emulated-cuda"),
]


# -- running a model ----------------------------------------------------------------------------


def full_range(dtype, shape, rng) -> np.ndarray:
    """Random values over the whole integer type, its extremes included."""
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    values.reshape(-1)[:2] = [info.min, info.max][: values.size]
    return values


def stamped(model: bytes) -> int:
    return Model.from_bytes(model).subgraphs[0].operators[0].version


def check(model: bytes, make_device, *, version: int, invokes: int = 4, seed: int = 0) -> None:
    """The node is stamped ``version`` and delegated; over ``invokes`` invokes with new
    inputs its outputs equal LiteRT's reference kernels' bit for bit; the partition
    replays a CUDA graph; and the delegated model matches our CPU path."""
    assert stamped(model) == version
    delegate = GpuDelegate(device=make_device())
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(delegate)
    placements = interpreter.node_placements()
    assert placements and all(p.delegated for p in placements), [(p.op, p.rejections) for p in placements]
    interpreter.allocate_tensors()
    oracle = litert_interpreter(model)
    rng = np.random.default_rng(seed)
    details = interpreter.get_input_details()
    for k in range(invokes):
        inputs = [full_range(d["dtype"], tuple(d["shape"]), rng) for d in details]
        for detail, value in zip(details, inputs):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        got = [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]
        expected = run_interpreter(oracle, inputs)
        for i, (g, e) in enumerate(zip(got, expected)):
            assert g.dtype == e.dtype and g.shape == e.shape, f"invoke {k + 1}: {g.dtype}{g.shape} vs {e.dtype}{e.shape}"
            np.testing.assert_array_equal(g, e, err_msg=f"invoke {k + 1}, output {i}")
    stats = delegate.partition_stats()
    assert len(stats) == 1 and stats[0].graph == "replaying", stats
    assert_matches_cpu(model, lambda: GpuDelegate(device=make_device()), invokes=invokes, seed=seed + 100)


def one_node(op, inputs, params, out_type, out_quant, *, version=None) -> bytes:
    """``inputs``: (name, shape, type, quantization, constant values or None) per input
    (None for an omitted one)."""
    specs = [None if spec is None else In(spec[1], spec[2], spec[3]) if spec[4] is None
             else Const(np.asarray(spec[4], NP[spec[2]]), spec[3]) for spec in inputs]
    return single_op_model(op, specs, Out([1], out_type, out_quant), params, version=version)


# -- DEPTHWISE_CONV_2D --------------------------------------------------------------------------


def dw_model(
    io_type, input_shape, kernel=(3, 3), *, multiplier=1, padding=SAME, stride=(1, 1), dilation=(1, 1),
    activation=Act.NONE, per_channel=True, bias=True, seed=0, output_scale=None,
) -> bytes:
    rng = np.random.default_rng(seed)
    channels = input_shape[3] * multiplier
    input_scale = float(rng.uniform(0.005, 0.05))
    output_scale = float(rng.uniform(0.02, 0.1)) if output_scale is None else output_scale
    if io_type == T.UINT8:
        z_in, z_out, z_w = (int(v) for v in rng.integers(0, 256, 3))
        scales = np.float32([rng.uniform(0.005, 0.05)])
        w_quant = quantization(scales, z_w)
        weights = rng.integers(0, 256, (1, *kernel, channels))
    else:
        z_in, z_out = (int(v) for v in rng.integers(-128, 128, 2))
        scales = np.float32(rng.uniform(0.005, 0.05, channels if per_channel else 1))
        w_quant = quantization(scales, 0, 3)
        weights = rng.integers(-127, 128, (1, *kernel, channels))
    bias_scales = np.float32(input_scale) * scales
    b = ("b", [channels], T.INT32, quantization(bias_scales, 0), rng.integers(-5000, 5000, channels)) if bias else None
    params = DepthwiseConv2DParams(
        padding=padding, stride_h=stride[0], stride_w=stride[1], depth_multiplier=multiplier,
        fused_activation_function=activation, dilation_h_factor=dilation[0], dilation_w_factor=dilation[1],
    )
    inputs = [("x", input_shape, io_type, quantization(input_scale, z_in), None), ("w", weights.shape, io_type, w_quant, weights)]
    if bias:
        inputs.append(b)
    return one_node(B.DEPTHWISE_CONV_2D, inputs, params, io_type, quantization(output_scale, z_out))


DW_GEOMETRIES = [
    # (input shape, kernel, multiplier, padding, stride, dilation)
    ((1, 9, 8, 4), (3, 3), 1, SAME, (1, 1), (1, 1)),
    ((2, 10, 9, 3), (3, 3), 2, VALID, (2, 2), (1, 1)),
    ((1, 11, 10, 2), (3, 2), 3, SAME, (1, 2), (2, 2)),
    ((1, 12, 12, 5), (5, 5), 1, SAME, (2, 1), (3, 1)),
    ((1, 5, 5, 8), (5, 5), 1, VALID, (1, 1), (1, 1)),
]


@pytest.mark.parametrize("make_device", DEVICES)
@pytest.mark.parametrize("geometry", DW_GEOMETRIES, ids=lambda g: f"{g[0]}k{g[1]}m{g[2]}{g[3].name}s{g[4]}d{g[5]}")
def test_depthwise_int8_per_channel_v3(make_device, geometry):
    shape, kernel, multiplier, padding, stride, dilation = geometry
    model = dw_model(T.INT8, shape, kernel, multiplier=multiplier, padding=padding, stride=stride, dilation=dilation)
    check(model, make_device, version=3)


@pytest.mark.parametrize("make_device", DEVICES)
@pytest.mark.parametrize("activation", CLAMPS, ids=lambda a: Act(a).name)
def test_depthwise_int8_fused_activations(make_device, activation):
    check(dw_model(T.INT8, (1, 7, 7, 4), activation=activation, seed=3), make_device, version=3)


@pytest.mark.parametrize("make_device", DEVICES)
def test_depthwise_int8_per_tensor_filter_without_bias(make_device):
    check(dw_model(T.INT8, (1, 8, 6, 3), multiplier=2, per_channel=False, bias=False, seed=4), make_device, version=3)


@pytest.mark.parametrize("make_device", DEVICES)
def test_depthwise_int8_saturates(make_device):
    # A tiny output scale: most outputs clamp to -128 / 127.
    check(dw_model(T.INT8, (1, 6, 6, 4), output_scale=0.0005, seed=5), make_device, version=3)


@pytest.mark.parametrize("make_device", DEVICES)
@pytest.mark.parametrize("dilation,version", [((1, 1), 1), ((2, 2), 2)], ids=["v1", "v2-dilated"])
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU6])
def test_depthwise_uint8(make_device, dilation, version, activation):
    model = dw_model(T.UINT8, (1, 9, 9, 3), multiplier=2, dilation=dilation, activation=activation, stride=(1, 2), seed=6)
    check(model, make_device, version=version)


# -- FULLY_CONNECTED ----------------------------------------------------------------------------


def fc_model(
    io_type, batch_shape, units, depth, *, per_channel=False, bias="constant", activation=Act.NONE,
    keep_num_dims=False, seed=0, in_quant=None, out_quant=None, w_scale=None, bias_values=None,
) -> bytes:
    """``bias``: "constant", "omitted" (a -1 slot) or "absent" (two inputs: v6)."""
    rng = np.random.default_rng(seed)
    signed = io_type == T.INT8
    if in_quant is None:
        in_quant = quantization(float(rng.uniform(0.01, 0.1)), int(rng.integers(-128, 128) if signed else rng.integers(0, 256)))
    if out_quant is None:
        out_quant = quantization(float(rng.uniform(0.05, 0.5)), int(rng.integers(-128, 128) if signed else rng.integers(0, 256)))
    if per_channel:
        scales = np.float32(rng.uniform(0.002, 0.02, units))
        w_quant = quantization(scales, 0, 0)
    else:
        scales = np.float32([rng.uniform(0.002, 0.02) if w_scale is None else w_scale])
        w_quant = quantization(scales, 0 if signed else int(rng.integers(0, 256)))
    weights = full_range(NP[io_type], (units, depth), rng)
    inputs = [("x", [*batch_shape, depth], io_type, in_quant, None), ("w", weights.shape, io_type, w_quant, weights)]
    if bias == "constant":
        values = rng.integers(-(1 << 16), 1 << 16, units) if bias_values is None else bias_values
        inputs.append(("b", [units], T.INT32, quantization(np.float32(in_quant.scale[0]) * scales, 0), values))
    elif bias == "omitted":
        inputs.append(None)
    params = FullyConnectedParams(fused_activation_function=activation, keep_num_dims=keep_num_dims)
    return one_node(B.FULLY_CONNECTED, inputs, params, io_type, out_quant)


@pytest.mark.parametrize("make_device", DEVICES)
@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize("activation", CLAMPS, ids=lambda a: Act(a).name)
def test_fully_connected_int8_v4(make_device, per_channel, activation):
    model = fc_model(T.INT8, (3,), 7, 29, per_channel=per_channel, activation=activation, seed=10 + activation)
    check(model, make_device, version=4)


@pytest.mark.parametrize("make_device", DEVICES)
def test_fully_connected_int8_omitted_bias_and_flattened_input_v4(make_device):
    check(fc_model(T.INT8, (2, 3), 5, 16, bias="omitted", seed=11), make_device, version=4)


@pytest.mark.parametrize("make_device", DEVICES)
@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
def test_fully_connected_int8_keep_num_dims_v5(make_device, per_channel):
    check(fc_model(T.INT8, (2, 3), 6, 10, keep_num_dims=True, per_channel=per_channel, seed=12), make_device, version=5)


@pytest.mark.parametrize("make_device", DEVICES)
def test_fully_connected_int8_without_bias_slot_v6(make_device):
    check(fc_model(T.INT8, (4,), 9, 12, bias="absent", activation=Act.RELU, seed=13), make_device, version=6)


@pytest.mark.parametrize("make_device", DEVICES)
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU6])
def test_fully_connected_uint8_v1(make_device, activation):
    check(fc_model(T.UINT8, (3,), 8, 21, activation=activation, seed=14), make_device, version=1)


@pytest.mark.parametrize("make_device", DEVICES)
def test_fully_connected_uint8_keep_num_dims_v5_and_no_bias_v6(make_device):
    check(fc_model(T.UINT8, (2, 2), 4, 9, keep_num_dims=True, seed=15), make_device, version=5)
    check(fc_model(T.UINT8, (3,), 4, 9, bias="absent", seed=16), make_device, version=6)


@pytest.mark.parametrize("make_device", DEVICES)
def test_fully_connected_int8_rescale_beyond_int32(make_device):
    # s_in * s_w / s_out = 5000: round(double(acc) * scale) leaves int32, which x86
    # converts to INT32_MIN; then the zero point is added in int32.
    model = fc_model(T.INT8, (6,), 8, 37, in_quant=quantization(0.1, 3), out_quant=quantization(2e-6, -4), w_scale=0.1, seed=17)
    check(model, make_device, version=4)


@pytest.mark.parametrize("make_device", DEVICES)
def test_fully_connected_int8_accumulator_wraps_like_int32(make_device):
    # A bias near the int32 limits: TFLite's int32 accumulator wraps around.
    limit = 2**31 - 1
    model = fc_model(
        T.INT8, (4,), 6, 37, in_quant=quantization(0.02, 1), out_quant=quantization(0.05, 2), w_scale=0.02, seed=18,
        bias_values=[limit, -limit - 1, limit - 100, -limit + 100, 5, -5],
    )
    check(model, make_device, version=4)


# -- AVERAGE_POOL_2D / MAX_POOL_2D ------------------------------------------------------------------


def pool_model(op, io_type, input_shape, filter_hw, *, padding=SAME, stride=(1, 1), activation=Act.NONE, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    zero_point = int(rng.integers(-128, 128) if io_type == T.INT8 else rng.integers(0, 256))
    quant = quantization(float(rng.uniform(0.01, 0.1)), zero_point)
    params = Pool2DParams(
        padding=padding, stride_h=stride[0], stride_w=stride[1], filter_height=filter_hw[0], filter_width=filter_hw[1],
        fused_activation_function=activation,
    )
    return one_node(op, [("x", input_shape, io_type, quant, None)], params, io_type, quant)


POOLS = [B.AVERAGE_POOL_2D, B.MAX_POOL_2D]
POOL_GEOMETRIES = [
    # (input shape, filter, padding, stride)
    ((1, 8, 8, 3), (2, 2), VALID, (2, 2)),
    ((2, 9, 7, 4), (3, 3), SAME, (2, 2)),
    ((1, 10, 11, 2), (3, 2), SAME, (1, 3)),
    ((1, 6, 5, 5), (6, 5), VALID, (1, 1)),  # global
    ((1, 5, 5, 2), (4, 4), SAME, (1, 1)),
]


@pytest.mark.parametrize("make_device", DEVICES)
@pytest.mark.parametrize("op", POOLS, ids=lambda o: B(o).name)
@pytest.mark.parametrize("io_type,version", [(T.INT8, 2), (T.UINT8, 1)], ids=["int8-v2", "uint8-v1"])
@pytest.mark.parametrize("geometry", POOL_GEOMETRIES, ids=lambda g: f"{g[0]}f{g[1]}{g[2].name}s{g[3]}")
def test_pool(make_device, op, io_type, version, geometry):
    shape, filter_hw, padding, stride = geometry
    check(pool_model(op, io_type, shape, filter_hw, padding=padding, stride=stride, seed=20), make_device, version=version)


@pytest.mark.parametrize("make_device", DEVICES)
@pytest.mark.parametrize("op", POOLS, ids=lambda o: B(o).name)
@pytest.mark.parametrize("activation", [Act.RELU, Act.RELU6, Act.RELU_N1_TO_1])
def test_pool_fused_activation(make_device, op, activation):
    check(pool_model(op, T.INT8, (1, 7, 7, 3), (3, 3), activation=activation, seed=21), make_device, version=2)


# -- MEAN -----------------------------------------------------------------------------------------


def mean_model(io_type, input_shape, axes, keep_dims, *, same_quantization=False, seed=0, out_quant=None) -> bytes:
    rng = np.random.default_rng(seed)

    def quant():
        return quantization(float(rng.uniform(0.01, 0.1)), int(rng.integers(-128, 128) if io_type == T.INT8 else rng.integers(0, 256)))

    in_quant = quant()
    if out_quant is None:
        out_quant = in_quant if same_quantization else quant()
    axes = np.asarray(axes, np.int32)
    inputs = [("x", input_shape, io_type, in_quant, None), ("axes", axes.shape, T.INT32, None, axes)]
    return one_node(B.MEAN, inputs, ReducerParams(keep_dims=keep_dims), io_type, out_quant)


MEAN_CASES = [
    # (input shape, axes, keep_dims)
    ((1, 7, 6, 5), [1, 2], True),  # the real models: H and W, keep_dims
    ((2, 4, 4, 3), [1, 2], False),
    ((2, 5, 3), [-1], False),
    ((3, 4, 5), [0, 2, -3], True),  # repeated (0 and -3) and negative axes
    ((4, 6), [1], True),
]


@pytest.mark.parametrize("make_device", DEVICES)
@pytest.mark.parametrize("io_type,version", [(T.INT8, 2), (T.UINT8, 1)], ids=["int8-v2", "uint8-v1"])
@pytest.mark.parametrize("case", MEAN_CASES, ids=lambda c: f"{c[0]}axes{c[1]}keep{c[2]}")
def test_mean(make_device, io_type, version, case):
    shape, axes, keep_dims = case
    check(mean_model(io_type, shape, axes, keep_dims, seed=30), make_device, version=version)


@pytest.mark.parametrize("make_device", DEVICES)
def test_mean_with_the_inputs_quantization(make_device):
    check(mean_model(T.INT8, (1, 5, 5, 4), [1, 2], True, same_quantization=True, seed=31), make_device, version=2)


@pytest.mark.parametrize("make_device", DEVICES)
def test_mean_saturates(make_device):
    # An output scale far below the input's: most means clamp to -128 / 127.
    model = mean_model(T.INT8, (1, 4, 4, 6), [1, 2], True, out_quant=quantization(0.001, 5), seed=32)
    check(model, make_device, version=2)


# -- converter models -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["dwconv_dil2_odd_int8", "fully_connected_int8", "pool_int8", "mean_int8"])
def test_converter_models_match_the_cpu_path(name):
    model = (MODELS_DIR / "converter" / f"{name}.tflite").read_bytes()
    delegate = None

    def make():
        nonlocal delegate
        delegate = GpuDelegate(device="host")
        return delegate

    interpreter = assert_matches_cpu(model, make, invokes=3)
    assert all(p.delegated for p in interpreter.node_placements())
    assert all(s.graph == "replaying" for s in delegate.partition_stats())


# -- version caps and refused types -----------------------------------------------------------------


def reason(model: bytes) -> str:
    plan = plan_delegation(GpuDelegate(device="host"), model)
    assert plan.taken == [], "the node should have been left on the CPU"
    return plan.reason(0)


def int16_quant():
    return quantization(0.01, 0)


def test_depthwise_hybrid_v4_is_rejected_naming_the_version():
    rng = np.random.default_rng(0)
    w = ("w", [1, 3, 3, 4], T.INT8, quantization([0.02], 0, 3), rng.integers(-127, 128, (1, 3, 3, 4)))
    params = DepthwiseConv2DParams(padding=SAME, stride_h=1, stride_w=1, depth_multiplier=1)
    model = one_node(B.DEPTHWISE_CONV_2D, [("x", [1, 6, 6, 4], T.FLOAT32, None, None), w], params, T.FLOAT32, None)
    assert stamped(model) == 4
    assert "v4" in reason(model)


def test_depthwise_int16_is_rejected_naming_the_type():
    # int16 activations x int8 filter: TFLite's rule stamps it v1 (v2 dilated), like uint8.
    rng = np.random.default_rng(0)
    w = ("w", [1, 3, 3, 4], T.INT8, quantization([0.02] * 4, 0, 3), rng.integers(-127, 128, (1, 3, 3, 4)))
    params = DepthwiseConv2DParams(padding=SAME, stride_h=1, stride_w=1, depth_multiplier=1)
    model = one_node(B.DEPTHWISE_CONV_2D, [("x", [1, 6, 6, 4], T.INT16, int16_quant(), None), w], params, T.INT16, int16_quant())
    assert stamped(model) == 1
    assert "INT16" in reason(model)


def test_fully_connected_int16_x_int16_v7_is_rejected_naming_the_version():
    rng = np.random.default_rng(0)
    w = ("w", [3, 5], T.INT16, int16_quant(), rng.integers(-100, 100, (3, 5)))
    b = ("b", [3], T.INT64, quantization(0.0001, 0), np.zeros(3))
    model = one_node(B.FULLY_CONNECTED, [("x", [2, 5], T.INT16, int16_quant(), None), w, b], FullyConnectedParams(), T.INT16, int16_quant())
    assert stamped(model) == 7
    assert "v7" in reason(model)


@pytest.mark.parametrize("asymmetric,version", [(False, 3), (True, 9)])
def test_fully_connected_hybrid_is_rejected_naming_the_version(asymmetric, version):
    rng = np.random.default_rng(0)
    w = ("w", [3, 5], T.INT8, quantization(0.02, 0), rng.integers(-127, 128, (3, 5)))
    b = ("b", [3], T.FLOAT32, None, np.zeros(3))
    params = FullyConnectedParams(asymmetric_quantize_inputs=asymmetric)
    model = one_node(B.FULLY_CONNECTED, [("x", [2, 5], T.FLOAT32, None, None), w, b], params, T.FLOAT32, None)
    assert stamped(model) == version
    assert f"v{version}" in reason(model)


def test_fully_connected_int16_x_int8_stamped_v1_is_rejected_naming_the_type():
    rng = np.random.default_rng(0)
    w = ("w", [3, 5], T.INT8, quantization(0.02, 0), rng.integers(-127, 128, (3, 5)))
    b = ("b", [3], T.INT64, quantization(0.0002, 0), np.zeros(3))
    model = one_node(B.FULLY_CONNECTED, [("x", [2, 5], T.INT16, int16_quant(), None), w, b], FullyConnectedParams(), T.INT16, int16_quant())
    assert stamped(model) == 1
    assert "INT16" in reason(model)


@pytest.mark.parametrize("op", POOLS, ids=lambda o: B(o).name)
def test_pool_int16_v3_is_rejected_naming_the_version(op):
    params = Pool2DParams(padding=SAME, stride_h=1, stride_w=1, filter_height=2, filter_width=2)
    model = one_node(op, [("x", [1, 4, 4, 2], T.INT16, int16_quant(), None)], params, T.INT16, int16_quant())
    assert stamped(model) == 3
    assert "v3" in reason(model)


def test_mean_int16_v3_is_rejected_naming_the_version():
    axes = np.array([1, 2], np.int32)
    inputs = [("x", [1, 4, 4, 2], T.INT16, int16_quant(), None), ("axes", [2], T.INT32, None, axes)]
    model = one_node(B.MEAN, inputs, ReducerParams(keep_dims=True), T.INT16, int16_quant())
    assert stamped(model) == 3
    assert "v3" in reason(model)


def test_int8_pool_that_requantizes_is_rejected_naming_the_quantization():
    params = Pool2DParams(padding=SAME, stride_h=1, stride_w=1, filter_height=2, filter_width=2)
    model = one_node(B.AVERAGE_POOL_2D, [("x", [1, 4, 4, 2], T.INT8, quantization(0.1, 0), None)], params, T.INT8, quantization(0.2, 0))
    assert stamped(model) == 2
    assert "same quantization" in reason(model)


def test_fully_connected_uint8_per_channel_weights_are_rejected():
    rng = np.random.default_rng(0)
    w = ("w", [3, 5], T.UINT8, quantization([0.02, 0.03, 0.04], 0, 0), rng.integers(0, 255, (3, 5)))
    model = one_node(
        B.FULLY_CONNECTED, [("x", [2, 5], T.UINT8, quantization(0.1, 128), None), w, None],
        FullyConnectedParams(), T.UINT8, quantization(0.2, 128),
    )
    assert stamped(model) == 1
    assert "per-channel weights need int8 input" in reason(model)
