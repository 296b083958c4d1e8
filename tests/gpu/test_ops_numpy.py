"""The GPU delegate's op implementations (``backends/gpu/ops``) run on numpy through
``HostDevice``, compared with the CPU kernels (the semantics reference).

Each case builds a one-node model, runs it with the CPU interpreter, then builds the
node's ``GpuOp`` from the same node/registration/tensors, prepares it and runs it on
the same inputs. float32 must agree within rtol 1e-5 / atol 1e-6. That holds for the
transcendental ops too (LOGISTIC, TANH, SOFTMAX): on numpy both sides call the same
libm; on CUDA ``expf``/``tanhf`` are within 2 ulp, still far inside 1e-5. float16
storage (inputs, weights and outputs rounded to float16, float32 math) must agree
within 1e-2 relative and absolute.

Grouped CONV_2D v6, FULLY_CONNECTED v5/v6 and RESIZE_* v3 are claimed as version sets
(``frozenset({1, 6})``...): the versions in between are int8/hybrid only.
"""

from __future__ import annotations

import ast
import pathlib
from typing import Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from backends.cpu.common import compute_out_size
from backends.gpu.device import HostDevice
from backends.gpu.ops import gpu_op_classes, gpu_support_table, select_op_class
from delegate_sdk.node import Node
from delegate_sdk.tensor import Allocation, RuntimeTensor
from interpreter import Interpreter
from model_helpers import In, Out, single_op_model
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType, BuiltinOperator, FullyConnectedOptionsWeightsFormat, Padding
from schema.model import Model
from schema.enums import MirrorPadMode
from schema.params import (
    AddParams,
    BatchMatMulParams,
    CumsumParams,
    DepthToSpaceParams,
    GatherParams,
    GeluParams,
    MirrorPadParams,
    SpaceToDepthParams,
    TransposeConvParams,
    ConcatenationParams,
    Conv2DParams,
    DepthwiseConv2DParams,
    DivParams,
    FullyConnectedParams,
    LeakyReluParams,
    MulParams,
    Pool2DParams,
    ReducerParams,
    ReshapeParams,
    ResizeBilinearParams,
    ResizeNearestNeighborParams,
    PackParams,
    SoftmaxParams,
    SplitParams,
    SplitVParams,
    StridedSliceParams,
    SubParams,
)

B = BuiltinOperator
Act = ActivationFunctionType
SAME, VALID = Padding.SAME, Padding.VALID
FUSED = [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH]
OPS_DIR = pathlib.Path(__file__).resolve().parents[2] / "backends" / "gpu" / "ops"


# -- one-node models ---------------------------------------------------------------------------


def model(op: int, specs: Sequence[In | np.ndarray | None], params=None, *, version: int | None = None, out_dtype=np.float32) -> bytes:
    """One ``op`` node: an ``In`` is a model input, an array a constant, None an omitted input."""
    return single_op_model(op, specs, Out([1], out_dtype), params, version=version)


def rand(shape, seed: int = 0, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(np.float32)


def stamped(model_bytes: bytes) -> int:
    return Model.from_bytes(model_bytes).subgraphs[0].operators[0].version


# -- running a node on the CPU and as a GpuOp on numpy --------------------------------------------


def check(
    model_bytes: bytes,
    *,
    storage=np.float32,
    claimed: bool = True,
    seed: int = 1,
    low: float = -2.0,
    high: float = 2.0,
    values: Sequence[np.ndarray] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
) -> np.ndarray:
    """Run node 0 with the CPU kernels and with its GpuOp on ``HostDevice``; compare."""
    storage = np.dtype(storage)
    interpreter = Interpreter(model_content=model_bytes)
    interpreter.allocate_tensors()
    rng = np.random.default_rng(seed)
    details = interpreter.get_input_details()
    if values is None:
        values = [rng.uniform(low, high, size=tuple(d["shape"])).astype(d["dtype"]) for d in details]
    for detail, value in zip(details, values):
        value = np.asarray(value, dtype=detail["dtype"])
        if storage == np.float16 and value.dtype == np.float32:
            value = value.astype(np.float16).astype(np.float32)  # what the device will hold
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    expected = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])

    main = interpreter._main
    node, registration = main.nodes[0], main.registrations[0]
    tensors = main.tensors
    op, version = registration.builtin_code, registration.version
    table = gpu_support_table()
    assert op in table, f"{registration} is not in the GPU support table"
    entry = table[op]
    versions = set(range(1, entry + 1)) if isinstance(entry, int) else set(entry)
    assert (version in versions) == claimed, f"{registration}: table claims versions {sorted(versions)}, expected claimed={claimed}"
    cls, reason = select_op_class(gpu_op_classes()[op], node, op, version, tensors)
    assert reason is None, reason

    device = HostDevice()
    with device.active():  # the delegate's stream and pool, as in a partition
        gpu_op = cls(device, node, op, version, tensors, storage)
        gpu_op.prepare()
        reads = gpu_op.device_inputs()
        args = [
            device.upload(tensors[i].data, dtype=storage if tensors[i].dtype == np.float32 else None) if p in reads else None
            for p, i in enumerate(node.inputs)
        ]
        before = [None if a is None else a.get() for a in args]
        outputs = gpu_op.run(args)
        for arg, copy in zip(args, before):
            if arg is not None:
                np.testing.assert_array_equal(arg.get(), copy, err_msg="run() modified an input")
        assert len(outputs) == len(node.outputs)
        got = outputs[0].get()
    assert got.dtype == storage, f"output dtype {got.dtype}, storage {storage}"
    assert got.shape == expected.shape == tuple(tensors[node.outputs[0]].shape)
    if storage == np.float16:
        rtol, atol = rtol or 1e-2, atol or 1e-2
    else:
        rtol, atol = rtol or 1e-5, atol or 1e-6
    np.testing.assert_allclose(got.astype(np.float32), expected, rtol=rtol, atol=atol)
    return got


# -- the support table ------------------------------------------------------------------------------


def test_support_table_is_exactly_the_implemented_versions():
    # Float ops (this file, test_float_*_ops.py, test_conv_family_ops.py), quantized ones
    # (test_quantized_*.py), data movement for both (test_quantized_layout.py,
    # test_float_layout_ops.py), resource variables (test_gpu_variables.py).
    assert gpu_support_table() == {
        B.ABS: 1,
        B.ADD: 2,
        B.ASSIGN_VARIABLE: 1,
        B.AVERAGE_POOL_2D: 2,
        B.BATCH_MATMUL: 2,  # v2: int8
        B.BATCH_TO_SPACE_ND: 3,
        B.CAST: frozenset({1, 3}),
        B.CEIL: 1,
        B.CONCATENATION: 2,
        B.CONV_2D: frozenset({1, 3, 6}),
        B.COS: 1,
        B.CUMSUM: 1,
        B.DEPTHWISE_CONV_2D: 3,
        B.DEPTH_TO_SPACE: 2,
        B.DEQUANTIZE: 3,
        B.DIV: 1,
        B.ELU: 1,
        B.EQUAL: 2,
        B.EXP: 1,
        B.FLOOR: 1,
        B.FULLY_CONNECTED: frozenset({1, 4, 5, 6}),
        B.GATHER: 2,
        B.GELU: 1,
        B.GREATER: 2,
        B.GREATER_EQUAL: 2,
        B.HARD_SWISH: 1,
        B.LEAKY_RELU: 1,
        B.LESS: 2,
        B.LESS_EQUAL: 2,
        B.LOG: 1,
        B.LOGICAL_AND: 1,
        B.LOGICAL_NOT: 1,
        B.LOGICAL_OR: 1,
        B.LOGISTIC: 2,
        B.MAXIMUM: 2,
        B.MAX_POOL_2D: 2,
        B.MEAN: 2,
        B.MINIMUM: 2,
        B.MIRROR_PAD: 2,
        B.ONE_HOT: 1,
        B.MUL: 3,
        B.NEG: 1,
        B.NOT_EQUAL: 2,
        B.PACK: 2,
        B.PAD: 2,
        B.PADV2: 2,
        B.POW: 1,
        B.PRELU: 1,
        B.QUANTIZE: frozenset({1, 3}),
        B.READ_VARIABLE: 1,
        B.REDUCE_MAX: 2,
        B.REDUCE_MIN: 2,
        B.REDUCE_PROD: 1,
        B.RELU: 1,
        B.RELU6: 1,
        B.RELU_0_TO_1: 1,
        B.RELU_N1_TO_1: 1,
        B.RESHAPE: 1,
        B.RESIZE_BILINEAR: frozenset({1, 3}),
        B.RESIZE_NEAREST_NEIGHBOR: frozenset({1, 3}),
        B.RSQRT: 1,
        B.SELECT: 1,
        B.SELECT_V2: 1,
        B.SIN: 1,
        B.SLICE: 2,
        B.SOFTMAX: 2,
        B.SPACE_TO_BATCH_ND: 3,
        B.SPACE_TO_DEPTH: 2,
        B.SPLIT: 2,
        B.SPLIT_V: 2,
        B.SQRT: 1,
        B.SQUARE: 1,
        B.SQUARED_DIFFERENCE: 1,
        B.STRIDED_SLICE: frozenset({1, 2, 6, 8}),
        B.SUB: 2,
        B.SUM: 2,
        B.TANH: 2,
        B.TILE: frozenset({1, 3}),
        B.TRANSPOSE: 2,
        B.TRANSPOSE_CONV: frozenset({1, 3, 4}),
        B.UNPACK: 2,
        B.VAR_HANDLE: 1,
    }


# -- CONV_2D --------------------------------------------------------------------------------------


def conv_params(padding=SAME, stride=(1, 1), dilation=(1, 1), activation=Act.NONE):
    return Conv2DParams(
        padding=padding, stride_h=stride[0], stride_w=stride[1], fused_activation_function=activation,
        dilation_h_factor=dilation[0], dilation_w_factor=dilation[1],
    )


def conv_model(input_shape, out_channels, kernel, params, *, bias="const", groups=1, seed=0):
    in_channels = input_shape[3] // groups
    w = rand((out_channels, *kernel, in_channels), seed)
    b = {"const": rand((out_channels,), seed + 1), "input": In((out_channels,)), "none": None, "absent": None}[bias]
    specs = [In(tuple(input_shape)), w] + ([b] if bias != "absent" else [])
    return model(B.CONV_2D, specs, params)


@pytest.mark.parametrize("dilation", [(1, 1), (2, 2), (3, 1)], ids=str)
@pytest.mark.parametrize("stride", [(1, 1), (2, 2), (2, 1)], ids=str)
@pytest.mark.parametrize("padding", [SAME, VALID], ids=["same", "valid"])
def test_conv2d(padding, stride, dilation):
    check(conv_model([2, 9, 8, 3], 4, (3, 3), conv_params(padding, stride, dilation)))


@pytest.mark.parametrize(
    "input_shape, kernel, stride, padding",
    [([1, 5, 6, 4], (1, 1), (1, 1), SAME), ([1, 5, 6, 4], (1, 1), (2, 2), VALID), ([2, 7, 6, 2], (2, 3), (1, 1), SAME),
     ([1, 4, 4, 1], (4, 4), (1, 1), VALID), ([1, 3, 3, 2], (5, 5), (2, 2), SAME)],
    ids=["pointwise", "1x1-stride2", "2x3-even-kernel", "window-equals-input", "kernel-larger-than-input"],
)
def test_conv2d_shapes(input_shape, kernel, stride, padding):
    check(conv_model(input_shape, 5, kernel, conv_params(padding, stride)))


@pytest.mark.parametrize("activation", FUSED, ids=lambda a: Act(a).name)
def test_conv2d_fused_activation(activation):
    check(conv_model([1, 6, 6, 3], 4, (3, 3), conv_params(activation=activation)), low=-4, high=4)


@pytest.mark.parametrize("bias", ["none", "absent", "input"])
def test_conv2d_bias_variants(bias):
    # "none": the bias slot is -1; "absent": a 2-input node; "input": a bias known only at run time
    check(conv_model([1, 6, 5, 3], 4, (3, 3), conv_params(), bias=bias))


def test_conv2d_grouped_v6_is_claimed_and_runs():
    m = conv_model([1, 7, 7, 6], 4, (3, 3), conv_params(SAME, (2, 2)), groups=2)
    assert stamped(m) == 6
    check(m)


# -- DEPTHWISE_CONV_2D ----------------------------------------------------------------------------


def dw_params(padding=SAME, stride=(1, 1), dilation=(1, 1), multiplier=1, activation=Act.NONE):
    return DepthwiseConv2DParams(
        padding=padding, stride_h=stride[0], stride_w=stride[1], depth_multiplier=multiplier,
        fused_activation_function=activation, dilation_h_factor=dilation[0], dilation_w_factor=dilation[1],
    )


def dw_model(input_shape, kernel, multiplier, params, *, bias="const", seed=0):
    channels = input_shape[3] * multiplier
    w = rand((1, *kernel, channels), seed)
    b = {"const": rand((channels,), seed + 1), "input": In((channels,)), "none": None}[bias]
    return model(B.DEPTHWISE_CONV_2D, [In(tuple(input_shape)), w, b], params)


@pytest.mark.parametrize("stride", [(1, 1), (2, 2), (1, 2)], ids=str)
@pytest.mark.parametrize("padding", [SAME, VALID], ids=["same", "valid"])
@pytest.mark.parametrize("multiplier", [1, 2, 3])
@pytest.mark.parametrize("dilation", [1, 2, 3])
def test_depthwise(dilation, multiplier, padding, stride):
    m = dw_model([2, 11, 10, 3], (3, 3), multiplier, dw_params(padding, stride, (dilation, dilation), multiplier))
    assert stamped(m) == (1 if dilation == 1 else 2)
    check(m)


@pytest.mark.parametrize("activation", FUSED, ids=lambda a: Act(a).name)
def test_depthwise_fused_activation(activation):
    check(dw_model([1, 7, 7, 4], (3, 3), 2, dw_params(activation=activation, dilation=(2, 1))), low=-4, high=4)


@pytest.mark.parametrize("bias", ["none", "input"])
def test_depthwise_bias_variants(bias):
    check(dw_model([1, 5, 6, 2], (3, 2), 2, dw_params(), bias=bias))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    h=st.integers(1, 12), w=st.integers(1, 12), c=st.integers(1, 5), multiplier=st.integers(1, 3),
    kh=st.integers(1, 4), kw=st.integers(1, 4), sh=st.integers(1, 3), sw=st.integers(1, 3),
    dh=st.integers(1, 3), dw=st.integers(1, 3), padding=st.sampled_from([SAME, VALID]),
    activation=st.sampled_from(FUSED), batch=st.integers(1, 2),
)
def test_depthwise_random_geometry(h, w, c, multiplier, kh, kw, sh, sw, dh, dw, padding, activation, batch):
    assume(compute_out_size(padding, h, kh, sh, dh) > 0 and compute_out_size(padding, w, kw, sw, dw) > 0)
    m = dw_model([batch, h, w, c], (kh, kw), multiplier, dw_params(padding, (sh, sw), (dh, dw), multiplier, activation))
    assert stamped(m) == (1 if (dh, dw) == (1, 1) else 2)
    check(m)


# -- FULLY_CONNECTED ------------------------------------------------------------------------------


def fc_model(input_shape, units, *, bias="const", activation=Act.NONE, keep_num_dims=False, seed=0):
    depth = input_shape[-1]
    w = rand((units, depth), seed)
    b = {"const": rand((units,), seed + 1), "input": In((units,)), "none": None, "absent": None}[bias]
    specs = [In(tuple(input_shape)), w] + ([b] if bias != "absent" else [])
    return model(B.FULLY_CONNECTED, specs, FullyConnectedParams(fused_activation_function=activation, keep_num_dims=keep_num_dims))


@pytest.mark.parametrize("bias", ["const", "none", "input"])
@pytest.mark.parametrize("input_shape", [(3, 7), (2, 3, 4, 7), (7,)], ids=str)
def test_fully_connected(input_shape, bias):
    m = fc_model(input_shape, 5, bias=bias)
    assert stamped(m) == 1
    check(m)


@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1], ids=lambda a: Act(a).name)
def test_fully_connected_fused_activation(activation):
    check(fc_model((4, 9), 6, activation=activation), low=-4, high=4)


@pytest.mark.parametrize("variant", ["keep_num_dims", "two_inputs"])
def test_fully_connected_v5_v6_are_claimed_and_run(variant):
    m = fc_model((2, 3, 8), 4, keep_num_dims=variant == "keep_num_dims", bias="absent" if variant == "two_inputs" else "const")
    assert stamped(m) == (5 if variant == "keep_num_dims" else 6)
    check(m)


# -- ADD SUB MUL DIV ------------------------------------------------------------------------------

BINARY = {B.ADD: AddParams, B.SUB: SubParams, B.MUL: MulParams, B.DIV: DivParams}
BROADCASTS = [
    ((2, 3, 4, 5), (2, 3, 4, 5)),
    ((2, 3, 4, 5), (5,)),
    ((1, 3, 1, 5), (2, 1, 4, 1)),
    ((4,), (2, 3, 1, 4)),
    ((), (2, 3)),
    ((3, 1), (1, 4)),
]


@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
@pytest.mark.parametrize("op", list(BINARY), ids=lambda o: B(o).name)
def test_binary_broadcasting(op, shapes):
    check(model(op, [In(shapes[0]), In(shapes[1])], BINARY[op]()))


@pytest.mark.parametrize("activation", FUSED, ids=lambda a: Act(a).name)
@pytest.mark.parametrize("op", list(BINARY), ids=lambda o: B(o).name)
def test_binary_fused_activation(op, activation):
    check(model(op, [In((2, 4, 3)), In((3,))], BINARY[op](fused_activation_function=activation)), low=-3, high=3)


def test_binary_with_constant_operand():
    check(model(B.MUL, [In((2, 5)), rand((5,), 3)], MulParams()))


def test_div_by_zero_saturates_like_the_cpu_kernel():
    x = np.array([[1.0, -1.0, 0.0, 3.0e38, 2.0]], np.float32)
    y = np.array([[0.0, 0.0, 0.0, 0.1, -0.0]], np.float32)
    got = check(model(B.DIV, [In((1, 5)), In((1, 5))], DivParams()), values=[x, y])
    assert got[0, 0] == np.finfo(np.float32).max and np.isnan(got[0, 2])


@pytest.mark.filterwarnings("ignore:overflow encountered")  # the CPU kernel's numpy add
def test_add_overflow_saturates_to_flt_max():
    x = np.full((4,), 3.0e38, np.float32)
    got = check(model(B.ADD, [In((4,)), In((4,))], AddParams(fused_activation_function=Act.TANH)), values=[x, x])
    assert np.all(got == np.finfo(np.float32).max)


# -- activations ----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (2, 3, 4, 5)], ids=str)
@pytest.mark.parametrize("op", [B.LOGISTIC, B.TANH, B.RELU, B.RELU6, B.HARD_SWISH], ids=lambda o: B(o).name)
def test_activation(op, shape):
    check(model(op, [In(shape)]), low=-10, high=10)


@pytest.mark.parametrize("op", [B.LOGISTIC, B.TANH], ids=lambda o: B(o).name)
def test_transcendental_extremes(op):
    x = np.array([-1000.0, -100.0, -88.8, -20.0, -1e-8, 0.0, 1e-8, 20.0, 88.8, 100.0, 1000.0], np.float32)
    check(model(op, [In(x.shape)]), values=[x])


@pytest.mark.parametrize("alpha", [0.2, 0.0, 1.0, 1.5, -0.5])
def test_leaky_relu(alpha):
    check(model(B.LEAKY_RELU, [In((2, 4, 5))], LeakyReluParams(alpha=alpha)), low=-5, high=5)


@pytest.mark.parametrize("constant", [True, False], ids=["const-alpha", "input-alpha"])
@pytest.mark.parametrize("shapes", [((2, 4, 4, 3), (3,)), ((2, 4, 4, 3), (1, 1, 3)), ((2, 4, 3), (4, 1)), ((2, 3), (2, 3))], ids=str)
def test_prelu(shapes, constant):
    x_shape, alpha_shape = shapes
    alpha = rand(alpha_shape, 5, -1.5, 1.5) if constant else In(alpha_shape)
    check(model(B.PRELU, [In(x_shape), alpha]))


# -- pools ----------------------------------------------------------------------------------------


def pool_params(filter_hw, stride, padding, activation=Act.NONE):
    return Pool2DParams(
        padding=padding, stride_h=stride[0], stride_w=stride[1], filter_height=filter_hw[0],
        filter_width=filter_hw[1], fused_activation_function=activation,
    )


@pytest.mark.parametrize(
    "filter_hw, stride",
    [((2, 2), (2, 2)), ((3, 3), (2, 2)), ((3, 2), (1, 2)), ((5, 5), (1, 1)), ((1, 1), (3, 3))],
    ids=str,
)
@pytest.mark.parametrize("padding", [SAME, VALID], ids=["same", "valid"])
@pytest.mark.parametrize("op", [B.AVERAGE_POOL_2D, B.MAX_POOL_2D], ids=lambda o: B(o).name)
def test_pool(op, padding, filter_hw, stride):
    check(model(op, [In((2, 9, 8, 3))], pool_params(filter_hw, stride, padding)))


@pytest.mark.parametrize("activation", FUSED, ids=lambda a: Act(a).name)
@pytest.mark.parametrize("op", [B.AVERAGE_POOL_2D, B.MAX_POOL_2D], ids=lambda o: B(o).name)
def test_pool_fused_activation(op, activation):
    check(model(op, [In((1, 6, 6, 2))], pool_params((3, 3), (1, 1), SAME, activation)), low=-4, high=4)


@pytest.mark.parametrize("op", [B.AVERAGE_POOL_2D, B.MAX_POOL_2D], ids=lambda o: B(o).name)
def test_global_pool(op):
    check(model(op, [In((2, 7, 7, 16))], pool_params((7, 7), (1, 1), VALID)))


def test_max_pool_skips_nan_like_the_cpu_kernel():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    x[0, 0, 0, 0] = np.nan
    check(model(B.MAX_POOL_2D, [In((1, 4, 4, 1))], pool_params((2, 2), (2, 2), VALID)), values=[x])


# -- MEAN -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("keep_dims", [False, True])
@pytest.mark.parametrize("axes", [[1, 2], [-1], [0, 3], [1, 1], [], [0, 1, 2, 3], [3, -3]], ids=str)
def test_mean(axes, keep_dims):
    check(model(B.MEAN, [In((2, 5, 6, 3)), np.array(axes, np.int32)], ReducerParams(keep_dims=keep_dims)))


# -- SOFTMAX --------------------------------------------------------------------------------------


@pytest.mark.parametrize("beta", [1.0, 0.5, 2.5])
@pytest.mark.parametrize("shape", [(10,), (3, 10), (2, 3, 7), (2, 2, 3, 5)], ids=str)
def test_softmax(shape, beta):
    check(model(B.SOFTMAX, [In(shape)], SoftmaxParams(beta=beta)), low=-10, high=10)


# -- CONCATENATION --------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
def test_concatenation(axis):
    shapes = []
    for k, size in enumerate((1, 3, 2)):
        shape = [2, 3, 4, 5]
        shape[axis] = size
        shapes.append(tuple(shape))
    check(model(B.CONCATENATION, [In(shapes[0]), rand(shapes[1], 2), In(shapes[2])], ConcatenationParams(axis=axis)))


@pytest.mark.parametrize("activation", FUSED, ids=lambda a: Act(a).name)
def test_concatenation_fused_activation(activation):
    params = ConcatenationParams(axis=1, fused_activation_function=activation)
    check(model(B.CONCATENATION, [In((2, 3)), In((2, 4))], params), low=-3, high=3)


def test_concatenation_rank_1_and_single_input():
    check(model(B.CONCATENATION, [In((4,)), In((3,))], ConcatenationParams(axis=0)))
    check(model(B.CONCATENATION, [In((2, 3))], ConcatenationParams(axis=1)))


# -- RESHAPE --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "input_shape, new_shape, how",
    [((2, 3, 4), (6, 4), "tensor"), ((2, 3, 4), (-1,), "tensor"), ((24,), (2, -1, 3, 2), "tensor"),
     ((2, 3, 4), (4, 6), "params"), ((1, 1, 1, 5), (5,), "params")],
    ids=str,
)
def test_reshape(input_shape, new_shape, how):
    if how == "tensor":
        m = model(B.RESHAPE, [In(input_shape), np.array(new_shape, np.int32)])
    else:
        m = model(B.RESHAPE, [In(input_shape)], ReshapeParams(new_shape=tuple(new_shape)))
    check(m)


# -- PAD ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, paddings",
    [((5,), [[2, 1]]), ((3, 4), [[0, 1], [2, 0]]), ((2, 3, 4), [[1, 1], [0, 0], [3, 2]]),
     ((1, 4, 5, 3), [[0, 0], [1, 2], [2, 1], [0, 0]]), ((1, 2, 2, 1), [[1, 0], [0, 0], [0, 0], [0, 1]])],
    ids=str,
)
def test_pad(shape, paddings):
    check(model(B.PAD, [In(shape), np.array(paddings, np.int32)]))


# -- RESIZE ---------------------------------------------------------------------------------------

RESIZE_SIZES = [(8, 10), (3, 2), (5, 5), (1, 1), (9, 4)]


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", RESIZE_SIZES, ids=str)
def test_resize_bilinear_v1(size, align_corners):
    m = model(B.RESIZE_BILINEAR, [In((2, 4, 5, 3)), np.array(size, np.int32)], ResizeBilinearParams(align_corners=align_corners))
    assert stamped(m) == 1
    check(m)


@pytest.mark.parametrize("size", RESIZE_SIZES, ids=str)
def test_resize_bilinear_half_pixel_v3_is_claimed_and_runs(size):
    m = model(B.RESIZE_BILINEAR, [In((1, 4, 5, 2)), np.array(size, np.int32)], ResizeBilinearParams(half_pixel_centers=True))
    assert stamped(m) == 3
    check(m)


@pytest.mark.parametrize("size", RESIZE_SIZES, ids=str)
def test_resize_nearest_neighbor_v1(size):
    m = model(B.RESIZE_NEAREST_NEIGHBOR, [In((2, 4, 5, 3)), np.array(size, np.int32)], ResizeNearestNeighborParams())
    assert stamped(m) == 1
    check(m)


@pytest.mark.parametrize("flags", [(True, False), (False, True)], ids=["align_corners", "half_pixel_centers"])
@pytest.mark.parametrize("size", RESIZE_SIZES, ids=str)
def test_resize_nearest_neighbor_v3_is_claimed_and_runs(size, flags):
    params = ResizeNearestNeighborParams(align_corners=flags[0], half_pixel_centers=flags[1])
    m = model(B.RESIZE_NEAREST_NEIGHBOR, [In((1, 4, 5, 2)), np.array(size, np.int32)], params)
    assert stamped(m) == 3
    check(m)


# -- DEQUANTIZE -----------------------------------------------------------------------------------


def dequantize_model(version: int | None = None, storage_shape=(3, 4)) -> bytes:
    """DEQUANTIZE(constant float16) feeding an ADD, so that the model has an input."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", list(storage_shape))
    w16 = graph.add_constant("w16", (rand(storage_shape, 7, -70000, 70000) / 1000).astype(np.float16))
    w32 = graph.add_tensor("w32", list(storage_shape))
    out = graph.add_tensor("out", list(storage_shape))
    graph.add_operator(B.DEQUANTIZE, [w16], [w32], version=version)
    graph.add_operator(B.ADD, [x, w32], [out], AddParams())
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


@pytest.mark.parametrize("storage", [np.float32, np.float16])
@pytest.mark.parametrize("version", [None, 2], ids=["stamped-v3", "old-converter-v2"])
def test_dequantize_constant_float16(version, storage):
    m = dequantize_model(version)
    assert stamped(m) == (version or 3)
    interpreter = Interpreter(model_content=m)
    interpreter.allocate_tensors()
    main = interpreter._main
    node, registration = main.nodes[0], main.registrations[0]
    tensors = main.tensors
    assert registration.version <= gpu_support_table()[B.DEQUANTIZE]
    cls, reason = select_op_class(gpu_op_classes()[B.DEQUANTIZE], node, B.DEQUANTIZE, registration.version, tensors)
    assert reason is None, reason
    device = HostDevice()
    with device.active():
        gpu_op = cls(device, node, B.DEQUANTIZE, registration.version, tensors, storage)
        uploads = device.counters.uploads
        gpu_op.prepare()
        assert device.counters.uploads == uploads + 1
        assert gpu_op.device_inputs() == []  # the float16 input never travels
        first = gpu_op.run([None])[0]
        second = gpu_op.run([None])[0]
        assert first is second  # computed once, at prepare
        assert first.dtype == np.dtype(storage)
        expected = tensors[node.inputs[0]].data.astype(np.float32)
        np.testing.assert_array_equal(first.get().astype(np.float32), expected)  # exact, also in float16 storage


# -- float16 storage ------------------------------------------------------------------------------

FLOAT16_CASES = {
    "conv2d": lambda: conv_model([1, 8, 7, 3], 4, (3, 3), conv_params(SAME, (2, 1), (1, 2), Act.RELU6)),
    "conv2d-pointwise": lambda: conv_model([2, 4, 4, 6], 3, (1, 1), conv_params()),
    "depthwise": lambda: dw_model([1, 9, 9, 3], (3, 3), 2, dw_params(SAME, (1, 1), (2, 2), 2)),
    "fully_connected": lambda: fc_model((3, 16), 5),
    "add": lambda: model(B.ADD, [In((2, 3, 4)), In((4,))], AddParams(fused_activation_function=Act.RELU)),
    "sub": lambda: model(B.SUB, [In((2, 3, 4)), rand((3, 1), 4)], SubParams()),
    "mul": lambda: model(B.MUL, [In((2, 3, 4)), In((2, 1, 4))], MulParams()),
    "div": lambda: model(B.DIV, [In((2, 3)), np.array([1.5, -2.0, 4.0], np.float32)], DivParams()),
    "logistic": lambda: model(B.LOGISTIC, [In((3, 5))]),
    "tanh": lambda: model(B.TANH, [In((3, 5))]),
    "relu": lambda: model(B.RELU, [In((3, 5))]),
    "relu6": lambda: model(B.RELU6, [In((3, 5))]),
    "hard_swish": lambda: model(B.HARD_SWISH, [In((3, 5))]),
    "leaky_relu": lambda: model(B.LEAKY_RELU, [In((3, 5))], LeakyReluParams(alpha=0.1)),
    "prelu": lambda: model(B.PRELU, [In((2, 3, 5)), rand((5,), 3)]),
    "average_pool": lambda: model(B.AVERAGE_POOL_2D, [In((1, 6, 6, 2))], pool_params((3, 3), (2, 2), SAME)),
    "max_pool": lambda: model(B.MAX_POOL_2D, [In((1, 6, 6, 2))], pool_params((3, 3), (2, 2), SAME)),
    "mean": lambda: model(B.MEAN, [In((2, 5, 6, 3)), np.array([1, 2], np.int32)], ReducerParams(keep_dims=True)),
    "softmax": lambda: model(B.SOFTMAX, [In((3, 8))], SoftmaxParams(beta=1.0)),
    "concatenation": lambda: model(B.CONCATENATION, [In((2, 3)), In((2, 2))], ConcatenationParams(axis=1)),
    "reshape": lambda: model(B.RESHAPE, [In((2, 6)), np.array([3, 4], np.int32)]),
    "pad": lambda: model(B.PAD, [In((1, 3, 3, 2)), np.array([[0, 0], [1, 1], [2, 0], [0, 0]], np.int32)]),
    "resize_bilinear": lambda: model(B.RESIZE_BILINEAR, [In((1, 3, 4, 2)), np.array([7, 5], np.int32)], ResizeBilinearParams()),
    "resize_nearest": lambda: model(B.RESIZE_NEAREST_NEIGHBOR, [In((1, 3, 4, 2)), np.array([7, 5], np.int32)], ResizeNearestNeighborParams()),
    "padv2": lambda: model(B.PADV2, [In((1, 3, 3, 2)), np.array([[0, 0], [1, 1], [2, 0], [0, 0]], np.int32), np.array([0.5], np.float32)]),
    "strided_slice": lambda: model(B.STRIDED_SLICE, [In((3, 7, 6)), np.array([1, -1, 0], np.int32), np.array([3, 0, 6], np.int32), np.array([1, -2, 2], np.int32)], StridedSliceParams()),
    "split": lambda: model(B.SPLIT, [np.array([1], np.int32), In((2, 6, 3))], SplitParams(num_splits=1)),
    "split_v": lambda: model(B.SPLIT_V, [In((2, 6, 3)), np.array([6], np.int32), np.array([1], np.int32)], SplitVParams(num_splits=1)),
    "pack": lambda: model(B.PACK, [In((2, 3)), In((2, 3))], PackParams(values_count=2, axis=1)),
    # helper D: elementwise math and activations
    "maximum": lambda: model(B.MAXIMUM, [In((2, 3, 4)), In((4,))]),
    "minimum": lambda: model(B.MINIMUM, [In((2, 3, 4)), rand((3, 1), 4)]),
    "squared_difference": lambda: model(B.SQUARED_DIFFERENCE, [In((2, 3, 4)), In((3, 1))]),
    "pow": lambda: model(B.POW, [In((2, 3)), np.array([2.0, 3.0, 1.0], np.float32)]),
    "select_v2": lambda: model(B.SELECT_V2, [In((2, 1), np.bool_), In((2, 3)), In((3,))]),
    "select": lambda: model(B.SELECT, [In((2,), np.bool_), In((2, 3)), In((2, 3))]),
    "cast": lambda: model(B.CAST, [In((3, 5), np.int32)]),
    "gelu": lambda: model(B.GELU, [In((3, 5))], GeluParams()),
    **{B(op).name.lower(): (lambda op=op: model(op, [In((3, 5))]))
       for op in (B.ELU, B.RELU_N1_TO_1, B.RELU_0_TO_1, B.ABS, B.EXP, B.NEG, B.SQUARE, B.FLOOR, B.CEIL, B.SIN, B.COS)},
    # helper E: data movement and reductions
    "slice": lambda: model(B.SLICE, [In((2, 5, 6, 3)), np.array([1, 1, 0, 0], np.int32), np.array([1, -1, 4, 2], np.int32)]),
    "transpose": lambda: model(B.TRANSPOSE, [In((2, 3, 4, 5)), np.array([0, 3, 1, 2], np.int32)]),
    "depth_to_space": lambda: model(B.DEPTH_TO_SPACE, [In((1, 3, 4, 8))], DepthToSpaceParams(block_size=2)),
    "space_to_depth": lambda: model(B.SPACE_TO_DEPTH, [In((1, 4, 6, 3))], SpaceToDepthParams(block_size=2)),
    "gather": lambda: model(B.GATHER, [In((3, 5, 4)), np.array([4, 0, 2], np.int32)], GatherParams(axis=1)),
    "tile": lambda: model(B.TILE, [In((2, 1, 3)), np.array([2, 3, 1], np.int32)]),
    "mirror_pad": lambda: model(B.MIRROR_PAD, [In((2, 4, 3, 3)), np.array([[0, 1], [2, 3], [1, 0], [2, 2]], np.int32)],
                                MirrorPadParams(mode=MirrorPadMode.SYMMETRIC)),
    "sum": lambda: model(B.SUM, [In((2, 3, 4)), np.array([0, 2], np.int32)], ReducerParams(keep_dims=True)),
    "reduce_prod": lambda: model(B.REDUCE_PROD, [In((2, 3, 4)), np.array([1], np.int32)], ReducerParams()),
    "reduce_max": lambda: model(B.REDUCE_MAX, [In((2, 3, 4)), np.array([2], np.int32)], ReducerParams()),
    "reduce_min": lambda: model(B.REDUCE_MIN, [In((2, 3, 4)), np.array([0, 1], np.int32)], ReducerParams()),
    "cumsum": lambda: model(B.CUMSUM, [In((3, 6)), np.array([1], np.int32)], CumsumParams(exclusive=True, reverse=True)),
    # helper F: products and transposed convolutions
    "batch_matmul": lambda: model(B.BATCH_MATMUL, [In((2, 3, 4)), In((4, 5))], BatchMatMulParams()),
    "transpose_conv": lambda: model(B.TRANSPOSE_CONV, [np.array([1, 8, 8, 2], np.int32), rand((2, 3, 3, 3), 5), In((1, 4, 4, 3)),
                                                       rand((2,), 6)], TransposeConvParams(padding=SAME, stride_h=2, stride_w=2)),
}


@pytest.mark.parametrize("case", list(FLOAT16_CASES))
def test_float16_storage(case):
    check(FLOAT16_CASES[case](), storage=np.float16)


#: Ops the GPU runs on integer tensors only (tested in test_quantized_arithmetic.py), or on
#: resource variables of any type (test_gpu_variables.py).
NOT_FLOAT_OPS = {
    B.QUANTIZE, B.VAR_HANDLE, B.READ_VARIABLE, B.ASSIGN_VARIABLE,
    # bool outputs, whatever the storage (test_float_elementwise_ops.py)
    B.LESS, B.LESS_EQUAL, B.GREATER, B.GREATER_EQUAL, B.EQUAL, B.NOT_EQUAL, B.LOGICAL_AND, B.LOGICAL_OR, B.LOGICAL_NOT,
}
#: Float ops whose float16 cases live in their own test file: several outputs (UNPACK),
#: inputs that must be positive (LOG, SQRT, RSQRT: test_float_elementwise_ops.py).
FLOAT16_ELSEWHERE = {B.UNPACK, B.LOG, B.SQRT, B.RSQRT, B.ONE_HOT,  # ONE_HOT: test_float_layout_ops.test_one_hot
                     B.SPACE_TO_BATCH_ND, B.BATCH_TO_SPACE_ND}  # test_int8_layout_kernels.py


def test_float16_cases_cover_every_float_op_of_the_table():
    ops = {Model.from_bytes(factory()).subgraphs[0].operators[0].builtin_code for factory in FLOAT16_CASES.values()}
    # DEQUANTIZE: test_dequantize_constant_float16
    assert ops | {B.DEQUANTIZE} | FLOAT16_ELSEWHERE == set(gpu_support_table()) - NOT_FLOAT_OPS


# -- rejection reasons ----------------------------------------------------------------------------


def model_node(model_bytes: bytes, node_index: int = 0):
    """Node ``node_index`` with its version and the subgraph's tensors, from the file alone
    (no kernels: also for nodes the CPU backend cannot run)."""
    subgraph = Model.from_bytes(model_bytes).subgraphs[0]
    tensors = [
        RuntimeTensor(t.index, t.name, t.type, t.shape, shape_signature=t.shape_signature, quantization=t.quantization,
                      sparsity=t.sparsity, data=t.data, allocation=Allocation.CONSTANT if t.data is not None else Allocation.NONE)
        for t in subgraph.tensors
    ]
    op = subgraph.operators[node_index]
    node = Node(op.index, op.inputs, op.outputs, op.params, op.custom_options, op.intermediates)
    return node, op.builtin_code, op.version, tensors


def reason_for(model_bytes: bytes, node_index: int = 0) -> str | None:
    node, op, version, tensors = model_node(model_bytes, node_index)
    return select_op_class(gpu_op_classes()[op], node, op, version, tensors)[1]


@pytest.mark.parametrize("op", [B.CONV_2D, B.DEPTHWISE_CONV_2D], ids=lambda o: B(o).name)
def test_non_constant_filter_is_rejected(op):
    shape = (4, 3, 3, 2) if op == B.CONV_2D else (1, 3, 3, 2)
    params = conv_params() if op == B.CONV_2D else dw_params()
    reason = reason_for(model(op, [In((1, 6, 6, 2)), In(shape), rand((shape[0] if op == B.CONV_2D else 2,), 1)], params))
    assert "filter must be a constant" in reason


def test_non_constant_fc_weights_are_rejected():
    assert "weights must be a constant" in reason_for(model(B.FULLY_CONNECTED, [In((2, 5)), In((3, 5)), None], FullyConnectedParams()))


def test_fc_shuffled_weights_format_is_rejected():
    params = FullyConnectedParams(weights_format=FullyConnectedOptionsWeightsFormat.SHUFFLED4x16INT8)
    m = model(B.FULLY_CONNECTED, [In((2, 5)), rand((3, 5)), None], params, version=1)
    assert "SHUFFLED4x16INT8" in reason_for(m)


def test_fc_fused_tanh_is_rejected():
    m = model(B.FULLY_CONNECTED, [In((2, 5)), rand((3, 5)), None], FullyConnectedParams(fused_activation_function=Act.TANH))
    assert "TANH" in reason_for(m)


@pytest.mark.parametrize(
    "op, specs, params",
    [(B.ADD, [In((2, 3)), In((3,))], AddParams), (B.CONV_2D, [In((1, 4, 4, 2)), rand((3, 3, 3, 2)), None], conv_params),
     (B.DEPTHWISE_CONV_2D, [In((1, 4, 4, 2)), rand((1, 3, 3, 2)), None], dw_params),
     (B.CONCATENATION, [In((2, 3)), In((2, 3))], ConcatenationParams)],
    ids=["ADD", "CONV_2D", "DEPTHWISE_CONV_2D", "CONCATENATION"],
)
def test_sign_bit_fused_activation_is_rejected(op, specs, params):
    kwargs = {"activation" if params in (conv_params, dw_params) else "fused_activation_function": Act.SIGN_BIT}
    assert "SIGN_BIT" in reason_for(model(op, specs, params(**kwargs), version=1))


def test_prelu_alpha_that_does_not_broadcast_to_x_is_rejected():
    assert "must broadcast to the input's shape" in reason_for(model(B.PRELU, [In((4, 3)), In((2, 1, 3))]))


def test_rank_5_is_rejected():
    assert "rank 5" in reason_for(model(B.ADD, [In((1, 2, 3, 4, 5)), In((5,))], AddParams(), version=1))


def test_binary_shapes_that_do_not_broadcast_are_rejected():
    assert "cannot be broadcast" in reason_for(model(B.MUL, [In((2, 3)), In((4,))], MulParams()))


@pytest.mark.parametrize(
    "op, specs, expected",
    [
        (B.PAD, [In((2, 3)), In((2, 2), np.int32)], "paddings must be a constant"),
        (B.MEAN, [In((2, 3)), In((1,), np.int32)], "axes must be a constant"),
        (B.RESHAPE, [In((2, 3)), In((2,), np.int32)], "shape tensor must be constant"),
        (B.RESIZE_BILINEAR, [In((1, 2, 2, 1)), In((2,), np.int32)], "size must be a constant"),
        (B.RESIZE_NEAREST_NEIGHBOR, [In((1, 2, 2, 1)), In((2,), np.int32)], "size must be a constant"),
    ],
    ids=["PAD", "MEAN", "RESHAPE", "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"],
)
def test_non_constant_shape_arguments_are_rejected(op, specs, expected):
    assert expected in reason_for(model(op, specs))


def test_constant_index_inputs_are_not_taken_for_float_data():
    # The int32 paddings / axes / shape / size inputs are not subject to the float check.
    assert reason_for(model(B.PAD, [In((2, 3)), np.array([[1, 0], [0, 2]], np.int32)])) is None
    assert reason_for(model(B.MEAN, [In((2, 3)), np.array([1], np.int32)], ReducerParams())) is None
    assert reason_for(model(B.RESHAPE, [In((2, 3)), np.array([6], np.int32)])) is None


def test_dequantize_rejections():
    builder = ModelBuilder()
    graph = builder.subgraph()
    h = graph.add_input("h", [3], np.float16)
    out = graph.add_tensor("out", [3])
    graph.add_operator(B.DEQUANTIZE, [h], [out])
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    assert "constant float16" in reason_for(builder.build())

    builder = ModelBuilder()
    graph = builder.subgraph()
    q = graph.add_constant("q", np.arange(3, dtype=np.int8), quantization=quantization(0.5, 0))
    out = graph.add_tensor("out", [3])
    graph.add_operator(B.DEQUANTIZE, [q], [out])
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    m = builder.build()
    assert stamped(m) == 2
    assert "INT8" in reason_for(m)


def test_float16_tensors_are_only_taken_by_dequantize():
    assert "FLOAT16" in reason_for(model(B.RELU, [In((3,), np.float16)], out_dtype=np.float16))


def test_resize_bilinear_with_both_flags_is_rejected():
    params = ResizeBilinearParams(align_corners=True, half_pixel_centers=True)
    assert "cannot both be true" in reason_for(model(B.RESIZE_BILINEAR, [In((1, 2, 2, 1)), np.array([3, 3], np.int32)], params))


def test_window_that_does_not_fit_is_rejected():
    m = model(B.CONV_2D, [In((1, 2, 2, 1)), rand((1, 3, 3, 1)), None], conv_params(VALID))
    assert "does not fit" in reason_for(m)


# -- portability: only names cupy has ------------------------------------------------------------


def _xp_attributes() -> set[str]:
    """Every ``xp.NAME`` / ``self.xp.NAME`` used in the GPU op modules."""
    names = set()
    for path in OPS_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute):
                base = node.value
                if (isinstance(base, ast.Name) and base.id == "xp") or (isinstance(base, ast.Attribute) and base.attr == "xp"):
                    names.add(node.attr)
    return names


def test_ops_use_only_names_cupy_also_has():
    cupy = pytest.importorskip("cupy")  # importing cupy needs no device
    names = _xp_attributes()
    assert {"ascontiguousarray", "empty"} <= names  # the scan sees the modules
    missing = sorted(name for name in names if not hasattr(cupy, name) or not hasattr(np, name))
    assert not missing, f"xp names cupy or numpy lacks: {missing}"


# -- the same cases on a real device -----------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(FLOAT16_CASES))
def test_ops_on_cuda_device(cuda_device, case):
    device = cuda_device()
    m = FLOAT16_CASES[case]()
    interpreter = Interpreter(model_content=m)
    interpreter.allocate_tensors()
    detail = interpreter.get_input_details()
    values = [rand(tuple(d["shape"]), 3 + k, -2, 2) for k, d in enumerate(detail)]
    values = [v > 0 if d["dtype"] == np.bool_ else np.round(v * 50).astype(d["dtype"]) if np.dtype(d["dtype"]).kind in "iu" else v
              for d, v in zip(detail, values)]
    for d, v in zip(detail, values):
        interpreter.set_tensor(d["index"], v)
    interpreter.invoke()
    expected = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    main = interpreter._main
    node, registration = main.nodes[0], main.registrations[0]
    op = registration.builtin_code
    with device.active():
        cls, _ = select_op_class(gpu_op_classes()[op], node, op, registration.version, main.tensors)
        gpu_op = cls(device, node, op, registration.version, main.tensors, np.float32)
        gpu_op.prepare()
        reads = gpu_op.device_inputs()
        args = [device.upload(main.tensors[i].data) if p in reads else None for p, i in enumerate(node.inputs)]
        got = gpu_op.run(args)[0].get()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
