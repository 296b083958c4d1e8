"""The float elementwise kernels (``backends/gpu/cuda/elementwise.cu``) and their numpy
twins (``cuda/elementwise.py``), and the GPU ops that use them: one launch per node.

Twin tests run each launcher both ways (``tests/kernel_twin.py``): the ``.cu`` kernel
built for the CPU by the host shim, and the twin in host emulation, and compare outputs
and launch counts, within kernel_twin.TWIN_TOLERANCE: on the host most ops are bit-exact, but
the ones that call a C library function (expf, tanhf, powf...: numpy's float32 versions, glibc's
and CUDA's may round differently in the last ulps), and on a device flush-to-zero, are not.

The one-launch tests build one-node models, delegate them (host emulation and the
emulated CUDA device) and read the partition's counters: one kernel launched eagerly at
the first invoke, a captured graph of one node replayed from the third.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from backends.cpu.kernels.activations import ERFC_COEFFICIENTS, GELU_CUBIC, INV_SQRT2, SQRT_2_OVER_PI
from backends.gpu import GpuDelegate, emulated_cuda_device
from backends.gpu.cuda.elementwise import (
    BINARY_OPS,
    CLAMPED_BINARY_OPS,
    UNARY_OPS,
    ElementwiseBinaryCuda,
    ElementwiseUnaryCuda,
    binary_twin,
    broadcast_strides,
    unary_twin,
)
from backends.gpu.cuda.sources import read_source
from interpreter.testing import assert_matches_cpu
from interpreter import Interpreter
from kernel_twin import assert_equals_twin, assert_twin_matches, run_both_ways
from model_helpers import Const, In, Out, single_op_model
from schema.builder import ModelBuilder
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.params import AddParams, DivParams, GeluParams, LeakyReluParams, MulParams, SubParams

SOURCE = "elementwise.cu"
F32, F16 = np.float32, np.float16
FLT_MAX = float(np.finfo(np.float32).max)
STORAGES = [F32, F16]
RNG = np.random.default_rng(11)

def binary(op, activation=Act.NONE, storage=F32):
    return lambda **where: ElementwiseBinaryCuda(op, activation, storage, **where)


def unary(op, storage=F32, **options):
    return lambda **where: ElementwiseUnaryCuda(op, storage=storage, **options, **where)


def enum_values(name: str) -> dict[str, int]:
    """``enum name { PREFIX_X = n, ... }`` of elementwise.cu, as {X: n}."""
    body = re.search(r"enum\s+" + name + r"\s*\{(.*?)\};", read_source(SOURCE), re.S).group(1)
    prefix = {"BinaryOp": "BINARY_", "UnaryOp": "UNARY_"}[name]
    return {k.removeprefix(prefix): int(v) for k, v in re.findall(r"(\w+)\s*=\s*(\d+)", body)}


# -- the source and the Python side agree ---------------------------------------------------------------


def test_the_op_codes_are_the_kernels_enums():
    assert enum_values("BinaryOp") == BINARY_OPS
    assert enum_values("UnaryOp") == UNARY_OPS


def test_the_gelu_constants_are_the_cpu_kernels_float32_values():
    defines = dict(re.findall(r"#define\s+(\w+)\s+(-?[\d.]+)f", read_source(SOURCE)))
    expected = {
        "GELU_SQRT_2_OVER_PI": SQRT_2_OVER_PI,
        "GELU_CUBIC_COEFFICIENT": F32(SQRT_2_OVER_PI * GELU_CUBIC),
        "GELU_HALF_INV_SQRT2": INV_SQRT2 / F32(2),
        **{f"ERFC_C{i}": F32(c) for i, c in enumerate(ERFC_COEFFICIENTS)},
    }
    for name, value in expected.items():
        # A decimal literal with an f suffix is rounded straight to float32, as F32(str) does.
        assert F32(defines[name]) == F32(value), name


@pytest.mark.parametrize(
    "shape, out_shape, strides",
    [
        ((2, 3, 4, 5), (2, 3, 4, 5), (60, 20, 5, 1)),
        ((), (2, 3, 4, 5), (0, 0, 0, 0)),
        ((1, 1, 1, 5), (2, 3, 4, 5), (0, 0, 0, 1)),
        ((5,), (2, 3, 4, 5), (0, 0, 0, 1)),
        ((3, 1, 5), (2, 3, 4, 5), (0, 5, 0, 1)),
        ((4, 1), (4, 7), (0, 0, 1, 0)),
    ],
)
def test_broadcast_strides_are_element_strides_with_zeros_where_an_input_broadcasts(shape, out_shape, strides):
    assert broadcast_strides(shape, out_shape) == strides


def test_broadcast_strides_refuse_what_does_not_broadcast():
    with pytest.raises(ValueError, match="does not broadcast"):
        broadcast_strides((3,), (2, 4))
    with pytest.raises(ValueError, match="rank 4"):
        broadcast_strides((2,), (1, 1, 1, 1, 2))


def test_launchers_refuse_unknown_ops_misplaced_options_and_other_dtypes():
    with pytest.raises(ValueError, match="unknown binary op"):
        ElementwiseBinaryCuda("FLOOR_DIV", host_device=None)
    with pytest.raises(ValueError, match="no fused activation"):
        ElementwiseBinaryCuda("MAXIMUM", Act.RELU)
    with pytest.raises(ValueError, match="unknown unary op"):
        ElementwiseUnaryCuda("ROUND")
    with pytest.raises(ValueError, match="CLAMP takes its bounds"):
        ElementwiseUnaryCuda("CLAMP")
    with pytest.raises(ValueError, match="CLAMP takes its bounds"):
        ElementwiseUnaryCuda("EXP", bounds=(0.0, 1.0))
    with pytest.raises(TypeError, match="CUDA kernels store float32 or float16"):
        ElementwiseUnaryCuda("EXP", storage=np.float64)
    with pytest.raises(TypeError, match="expected float16 arrays"):
        both_ways_binary("ADD", np.ones(3, F32), np.ones(3, F32), storage=F16)


def both_ways_binary(op, a, b, activation=Act.NONE, storage=F32):
    return run_both_ways(binary(op, activation, storage), SOURCE, [a, b])


# -- binary: every op, broadcasting, storage ---------------------------------------------------------------

BROADCASTS = {
    "same": ((2, 3, 4, 5), (2, 3, 4, 5)),
    "scalar-b": ((2, 3, 4, 5), ()),
    "scalar-a": ((), (3, 7)),
    "channels": ((1, 6, 5, 7), (1, 1, 1, 7)),
    "channels-rank1": ((2, 5, 3, 7), (7,)),
    "both": ((2, 1, 5, 1), (1, 3, 1, 4)),
    "odd": ((13,), (13,)),
    "rank2-rows": ((9, 1), (1, 11)),
    "one-element": ((1, 1, 1, 1), (1,)),
}


def operands(op, a_shape, b_shape, storage):
    a = RNG.uniform(-4, 4, a_shape).astype(storage)
    b = RNG.uniform(-4, 4, b_shape).astype(storage)
    if op == "POW":
        a = np.abs(a).astype(storage)  # real results mostly (NaN for negative bases is tested below)
    return a, b


@pytest.mark.parametrize("storage", STORAGES, ids=["f32", "f16"])
@pytest.mark.parametrize("pattern", list(BROADCASTS))
@pytest.mark.parametrize("op", list(BINARY_OPS))
def test_binary_twin_matches_the_kernel(op, pattern, storage):
    a, b = operands(op, *BROADCASTS[pattern], storage)
    both = both_ways_binary(op, a, b, storage=storage)
    assert both.kernel_launches == 1
    assert both.kernel[0].shape == np.broadcast_shapes(a.shape, b.shape)
    assert_twin_matches(both)


@pytest.mark.parametrize("storage", STORAGES, ids=["f32", "f16"])
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH])
@pytest.mark.parametrize("op", CLAMPED_BINARY_OPS)
def test_binary_fused_activations_match_the_kernel_and_clamp(op, activation, storage):
    a, b = operands(op, (3, 5, 7), (5, 1), storage)
    both = both_ways_binary(op, a, b, activation, storage)
    assert_twin_matches(both)
    low, high = {Act.RELU: (0, FLT_MAX), Act.RELU6: (0, 6), Act.RELU_N1_TO_1: (-1, 1)}.get(activation, (-FLT_MAX, FLT_MAX))
    out = both.twin[0].astype(np.float64)
    assert out.min() >= low and out.max() <= high
    if activation == Act.TANH:  # not applied by TFLite's float kernels
        assert out.max() > 1 or out.min() < -1


A_SPECIAL = np.array([np.nan, 1, np.inf, -np.inf, 3e38, -3e38, 0, -0.0, 1, -1, 0, 2, -2, 1e-30, 5], F32)
B_SPECIAL = np.array([1, np.nan, 1, 1, 3e38, -3e38, 0, 0, 0, 0, -np.inf, 0.5, np.inf, 1e-30, -3e38], F32)


@pytest.mark.parametrize("op", list(BINARY_OPS))
def test_binary_nan_inf_and_overflow_match_the_kernel(op):
    both = both_ways_binary(op, A_SPECIAL, B_SPECIAL)
    assert_twin_matches(both)


def test_add_sub_mul_div_saturate_at_flt_max_for_fused_none():
    def out(op, a, b):
        both = both_ways_binary(op, np.array(a, F32), np.array(b, F32))
        assert_twin_matches(both)
        return both.kernel[0].tolist()

    assert out("ADD", [np.inf, 3e38, -3e38, np.nan], [1, 3e38, -3e38, 1])[:3] == [FLT_MAX, FLT_MAX, -FLT_MAX]
    assert math.isnan(out("ADD", [np.nan], [1])[0])  # NaN passes the clamp
    assert out("SUB", [-np.inf, 3e38], [1, -3e38]) == [-FLT_MAX, FLT_MAX]
    assert out("MUL", [3e38, -3e38], [10, 10]) == [FLT_MAX, -FLT_MAX]
    quotients = out("DIV", [1, -1, 0], [0, 0, 0])
    assert quotients[:2] == [FLT_MAX, -FLT_MAX] and math.isnan(quotients[2])


def test_ops_without_a_clamp_keep_infinities_and_select_as_tflite():
    def out(op, a, b):
        both = both_ways_binary(op, np.array(a, F32), np.array(b, F32))
        assert_twin_matches(both)
        return both.kernel[0].tolist()

    assert out("SQUARED_DIFFERENCE", [3e38], [-3e38]) == [math.inf]
    assert out("MAXIMUM", [np.inf], [1]) == [math.inf]
    assert out("POW", [10], [100]) == [math.inf]
    # x > y ? x : y: a NaN x gives y; a NaN y gives the NaN (y)
    assert out("MAXIMUM", [np.nan], [1]) == [1] and math.isnan(out("MAXIMUM", [1], [np.nan])[0])
    assert out("MINIMUM", [np.nan], [1]) == [1] and math.isnan(out("MINIMUM", [1], [np.nan])[0])
    # PRELU: x >= 0 ? x : x * alpha, with an infinite input
    assert out("PRELU", [-np.inf, np.inf, -2, -0.0], [0.5, 0.5, 0.25, 0.5]) == [-math.inf, math.inf, -0.5, 0.0]


def test_float16_storage_computes_in_float32_and_rounds_once():
    a = np.array([2048, 60000, 0.1, -3], F16)
    b = np.array([1, 60000, 0.2, 0.5], F16)
    both = both_ways_binary("ADD", a, b, storage=F16)
    assert_twin_matches(both)
    # 2048 + 1 rounds to 2048 in half; 120000 is beyond half's range (FLT_MAX clamps float32).
    with np.errstate(over="ignore"):
        want = (a.astype(F32) + b.astype(F32)).astype(F16)
    np.testing.assert_array_equal(both.kernel[0], want)
    assert both.kernel[0][1] == np.inf


def test_an_empty_output_launches_nothing():
    both = both_ways_binary("ADD", np.zeros((2, 0, 3), F32), np.zeros(3, F32))
    assert both.kernel_launches == both.twin_launches == 0 and both.kernel[0].shape == (2, 0, 3)
    both = run_both_ways(unary("EXP"), SOURCE, [np.zeros((0, 4), F32)])
    assert both.kernel_launches == 0


def test_a_non_contiguous_input_is_read_as_its_values():
    x = np.arange(24, dtype=F32).reshape(4, 6)

    def call(launcher, a, b):
        return launcher(a[:, ::2], b)  # a strided view: made contiguous first

    both = run_both_ways(binary("SUB"), SOURCE, [x, np.array([1, 2, 3], F32)], call=call)
    assert_twin_matches(both)
    np.testing.assert_array_equal(both.kernel[0], x[:, ::2] - np.array([1, 2, 3], F32))


# -- unary: every op ---------------------------------------------------------------------------------------

UNARY_SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1, -1, 0.5, -0.5, 2.5, -2.5, 3, -3, 6, -6,
                           100, -100, 3e38, -3e38, 1e-30, -1e-30, 88.7, -88.7, 20, -20], F32)


def unary_input(storage, shape=(3, 7, 11)) -> np.ndarray:
    x = RNG.uniform(-8, 8, shape).astype(F32)
    flat = x.reshape(-1)
    flat[: UNARY_SPECIALS.size] = UNARY_SPECIALS
    with np.errstate(over="ignore"):  # 3e38 is inf in float16
        return x.astype(storage)


def unary_options(op) -> dict:
    if op == "CLAMP":
        return {"bounds": (0.0, 6.0)}
    if op == "LEAKY_RELU":
        return {"alpha": 0.2}
    return {}


@pytest.mark.parametrize("storage", STORAGES, ids=["f32", "f16"])
@pytest.mark.parametrize("op", list(UNARY_OPS))
def test_unary_twin_matches_the_kernel(op, storage):
    x = unary_input(storage)
    both = run_both_ways(unary(op, storage, **unary_options(op)), SOURCE, [x])
    assert both.kernel_launches == 1
    assert both.kernel[0].shape == x.shape and both.kernel[0].dtype == storage
    assert_twin_matches(both)


@pytest.mark.parametrize("bounds", [(0.0, math.inf), (0.0, 6.0), (-1.0, 1.0), (0.0, 1.0)], ids=["relu", "relu6", "n1-1", "0-1"])
def test_the_relu_clamps_match_the_kernel_and_keep_nan(bounds):
    x = unary_input(F32, (5, 13))
    both = run_both_ways(unary("CLAMP", bounds=bounds), SOURCE, [x])
    assert_twin_matches(both)
    out = both.kernel[0]
    expected = np.where(x < bounds[0], F32(bounds[0]), x)
    expected = np.where(expected > bounds[1], F32(bounds[1]), expected)
    np.testing.assert_array_equal(out, expected)
    assert np.isnan(out.reshape(-1)[0])  # NaN passes the clamp, as TFLite's RELUs


@pytest.mark.parametrize("alpha", [0.2, 0.0, -1.5, 3.0])
def test_leaky_relu_alphas_match_the_kernel(alpha):
    x = unary_input(F32, (4, 9))
    both = run_both_ways(unary("LEAKY_RELU", alpha=alpha), SOURCE, [x])
    assert_twin_matches(both)


def test_hard_swish_is_the_cpu_kernels_order_bit_for_bit():
    x = unary_input(F32, (6, 10))
    both = run_both_ways(unary("HARD_SWISH"), SOURCE, [x])
    assert_twin_matches(both)
    with np.errstate(all="ignore"):
        cpu = np.clip(x + F32(3), 0, 6)  # backends/cpu/kernels/activations.py HardSwish
        cpu = cpu * x
        cpu = cpu / F32(6)
    np.testing.assert_array_equal(both.kernel[0], cpu)


def test_the_twins_run_on_plain_numpy_arrays():
    out = np.empty((2, 2), F32)
    binary_twin(np.ones((2, 2), F32), np.full((), 2, F32), out, op="DIV", bounds=(-FLT_MAX, FLT_MAX))
    np.testing.assert_array_equal(out, np.full((2, 2), 0.5, F32))
    unary_twin(np.array([[-1, 2], [7, np.nan]], F32), out, op="CLAMP", alpha=0.0, bounds=(0.0, 6.0))
    np.testing.assert_array_equal(out, np.array([[0, 2], [6, np.nan]], F32))


# -- on a real device ---------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("storage", STORAGES, ids=["f32", "f16"])
def test_the_kernels_match_their_twins_on_a_device(cuda_device, storage):
    """CUDA's expf/tanhf/powf... are within a few ulp of the twins' numpy, and CuPy's
    -ftz=true flushes float32 subnormal results: kernel_twin.TWIN_TOLERANCE covers both."""
    device = cuda_device()
    with device.active():
        where = device.launcher_arguments(SOURCE)
        for op in BINARY_OPS:
            a, b = operands(op, (2, 5, 3, 7), (1, 1, 1, 7), storage)
            launcher = ElementwiseBinaryCuda(op, storage=storage, **where)
            got = launcher(device.upload(a), device.upload(b))
            want = np.empty(got.shape, storage)
            with np.errstate(all="ignore"):
                binary_twin(a, b, want, op=op, bounds=launcher.bounds)
            assert_equals_twin(device.download(got), want, err_msg=op)
        for op in UNARY_OPS:
            x = unary_input(storage)
            options = unary_options(op)
            launcher = ElementwiseUnaryCuda(op, storage=storage, **options, **where)
            got = launcher(device.upload(x))
            want = np.empty(x.shape, storage)
            with np.errstate(all="ignore"):
                unary_twin(x, want, op=op, alpha=launcher.alpha, bounds=launcher.bounds)
            assert_equals_twin(device.download(got), want, err_msg=op)


# -- the ops: one launch per node ----------------------------------------------------------------------------

DEVICES = {"host": lambda: GpuDelegate(device="host"), "emulated-cuda": lambda: GpuDelegate(device=emulated_cuda_device())}


def one_node_model(op, input_shapes, params=None, constant=None) -> bytes:
    """``op`` on float32 inputs of ``input_shapes`` (the last one the constant ``constant``
    when given); the output has the broadcast shape."""
    inputs = [In(shape, F32) for shape in input_shapes]
    if constant is not None:
        inputs[-1] = Const(np.asarray(constant, F32).reshape(input_shapes[-1]))
    return single_op_model(op, inputs, Out(np.broadcast_shapes(*map(tuple, input_shapes)), F32), params)


ALPHA = np.linspace(-0.5, 1.5, 5)

ONE_LAUNCH_CASES = {
    "ADD": lambda: one_node_model(B.ADD, [(1, 6, 6, 5), (1, 6, 6, 5)]),
    "ADD-relu6-broadcast": lambda: one_node_model(B.ADD, [(1, 6, 6, 5), (1, 1, 1, 5)], AddParams(Act.RELU6)),
    "ADD-relu-constant": lambda: one_node_model(B.ADD, [(2, 3, 5), (5,)], AddParams(Act.RELU), constant=ALPHA),
    "SUB-n1-1": lambda: one_node_model(B.SUB, [(4, 5), (4, 5)], SubParams(Act.RELU_N1_TO_1)),
    "MUL-scalar": lambda: one_node_model(B.MUL, [(3, 4, 5), ()], MulParams(Act.NONE), constant=1.5),
    "DIV": lambda: one_node_model(B.DIV, [(3, 4, 5), (1, 4, 1)], DivParams(Act.RELU)),
    "PRELU": lambda: one_node_model(B.PRELU, [(1, 6, 6, 5), (1, 1, 5)], constant=ALPHA),
    "PRELU-runtime-alpha": lambda: one_node_model(B.PRELU, [(1, 6, 6, 5), (1, 1, 5)]),
    "MAXIMUM": lambda: one_node_model(B.MAXIMUM, [(1, 6, 6, 5), (1, 6, 6, 5)]),
    "MINIMUM-constant": lambda: one_node_model(B.MINIMUM, [(2, 7), (7,)], constant=np.linspace(-1, 1, 7)),
    "SQUARED_DIFFERENCE": lambda: one_node_model(B.SQUARED_DIFFERENCE, [(2, 3, 4), (3, 1)]),
    "POW": lambda: one_node_model(B.POW, [(2, 3, 4), ()], constant=2.0),
    "RELU": lambda: one_node_model(B.RELU, [(1, 8, 8, 3)]),
    "RELU6": lambda: one_node_model(B.RELU6, [(1, 8, 8, 3)]),
    "RELU_N1_TO_1": lambda: one_node_model(B.RELU_N1_TO_1, [(2, 9)]),
    "RELU_0_TO_1": lambda: one_node_model(B.RELU_0_TO_1, [(2, 9)]),
    "LOGISTIC": lambda: one_node_model(B.LOGISTIC, [(1, 8, 8, 3)]),
    "TANH": lambda: one_node_model(B.TANH, [(3, 11)]),
    "LEAKY_RELU": lambda: one_node_model(B.LEAKY_RELU, [(3, 11)], LeakyReluParams(0.1)),
    "HARD_SWISH": lambda: one_node_model(B.HARD_SWISH, [(3, 11)]),
    "ELU": lambda: one_node_model(B.ELU, [(3, 11)]),
    "GELU": lambda: one_node_model(B.GELU, [(3, 11)], GeluParams(False)),
    "GELU-approximate": lambda: one_node_model(B.GELU, [(3, 11)], GeluParams(True)),
    **{op.name: (lambda op=op: one_node_model(op, [(3, 11)]))
       for op in (B.ABS, B.EXP, B.LOG, B.SQRT, B.RSQRT, B.SIN, B.COS, B.NEG, B.SQUARE, B.FLOOR, B.CEIL)},
}


@pytest.mark.parametrize("device", list(DEVICES))
@pytest.mark.parametrize("case", list(ONE_LAUNCH_CASES))
def test_each_float_elementwise_node_is_one_launch(case, device):
    model = ONE_LAUNCH_CASES[case]()
    delegate = DEVICES[device]()
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    assert all(p.delegated for p in interpreter.node_placements())
    launches = []
    for k in range(3):
        for detail in interpreter.get_input_details():
            interpreter.set_tensor(detail["index"], RNG.uniform(0.1 if case.startswith(("LOG", "SQRT", "RSQRT")) else -3, 3,
                                                                 tuple(detail["shape"])).astype(F32))
        interpreter.invoke()
        (stats,) = delegate.partition_stats()
        launches.append((stats.last_invoke.kernel_launches, stats.last_invoke.graph_nodes))
    assert stats.graph == "replaying" and stats.graph_nodes == 1
    # eager at the first invoke, captured at the second, replayed at the third
    assert launches[0] == (1, 0) and launches[2] == (0, 1), launches


@pytest.mark.parametrize("device", list(DEVICES))
@pytest.mark.parametrize("case", ["ADD-relu6-broadcast", "PRELU", "PRELU-runtime-alpha", "MAXIMUM", "LOGISTIC", "GELU"])
def test_the_one_launch_ops_match_the_cpu_path(case, device):
    assert_matches_cpu(ONE_LAUNCH_CASES[case](), DEVICES[device], invokes=3)


@pytest.mark.parametrize("device", list(DEVICES))
def test_a_chain_of_elementwise_nodes_is_one_launch_each(device):
    """ADD (fused RELU6) -> PRELU -> LOGISTIC -> MAXIMUM: four nodes, four graph nodes."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 5, 5, 4], F32)
    y = graph.add_input("y", [1, 1, 1, 4], F32)
    alpha = graph.add_constant("alpha", np.linspace(0.1, 0.4, 4).astype(F32).reshape(1, 1, 4))
    t = [graph.add_tensor(f"t{k}", [1, 5, 5, 4], F32) for k in range(4)]
    graph.add_operator(B.ADD, [x, y], [t[0]], AddParams(Act.RELU6))
    graph.add_operator(B.PRELU, [t[0], alpha], [t[1]])
    graph.add_operator(B.LOGISTIC, [t[1]], [t[2]])
    graph.add_operator(B.MAXIMUM, [t[2], x], [t[3]])
    graph.add_output(t[3])
    builder.add_signature("serving_default", graph)
    delegate = DEVICES[device]()
    assert_matches_cpu(builder.build(), lambda: delegate, invokes=3)
    (stats,) = delegate.partition_stats()
    assert stats.nodes == (0, 1, 2, 3) and stats.graph == "replaying" and stats.graph_nodes == 4


@pytest.mark.gpu
def test_every_one_launch_case_matches_the_cpu_path_on_a_device(cuda_device):
    """Each one-node model above through the GPU delegate on a device (one compile of
    elementwise.cu shared by all), against the CPU path, one graph node each."""
    device = cuda_device()
    for case, make_model in ONE_LAUNCH_CASES.items():
        delegate = GpuDelegate(device=device)
        assert_matches_cpu(make_model(), lambda: delegate, invokes=3)  # (NaN equals NaN)
        (stats,) = delegate.partition_stats()
        assert stats.graph == "replaying" and stats.graph_nodes in (0, 1), (case, stats.graph_nodes)
