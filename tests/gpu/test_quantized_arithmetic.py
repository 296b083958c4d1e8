"""The GPU delegate's quantized arithmetic and lookup-table ops, bit-exact with LiteRT's
reference kernels (BUILTIN_REF): ADD, SUB, MUL (elementwise.py), QUANTIZE and
DEQUANTIZE (quantize.py), LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU
(activations.py), SOFTMAX (softmax.py).

Every case runs one-node models through ``GpuDelegate(device="host")`` (host emulation)
and ``GpuDelegate(device=emulated_cuda_device())`` (the device branch on the emulated
CUDA machine): first against our CPU path (``assert_matches_cpu``, 4 invokes: eager,
captured, replayed), then, on the same delegated interpreter, against the oracle itself
with new inputs at each invoke; the node must be delegated and its partition must replay
a CUDA graph. The version-cap tests stamp the version just above each claim (or a type
not claimed) and check that the node is left with a reason naming it.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pytest

from backends.gpu import GpuDelegate
from backends.gpu.device import emulated_cuda_device
from backends.gpu.ops import gpu_op_classes, select_op_class
from delegate_sdk.node import Node
from delegate_sdk.tensor import Allocation, RuntimeTensor
from delegate_sdk.testing import plan_delegation
from interpreter.testing import assert_matches_cpu
from interpreter import Interpreter
from model_helpers import Const, In, Out, single_op_model
from oracle import litert_interpreter, run_interpreter
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.model import Model
from schema.params import AddParams, LeakyReluParams, MulParams, SoftmaxParams, SubParams

DEVICES: dict[str, Callable[[], GpuDelegate]] = {
    "host": lambda: GpuDelegate(device="host"),
    "emulated_cuda": lambda: GpuDelegate(device=emulated_cuda_device()),
}
BINARY_PARAMS = {B.ADD: AddParams, B.SUB: SubParams, B.MUL: MulParams}


# -- models and inputs ----------------------------------------------------------------------------


def one_node_model(op, inputs, output, params=None, version=None) -> bytes:
    """One node. ``inputs``: (shape, dtype, quantization or None) graph inputs, or
    (array, quantization) constants; ``output``: (shape, dtype, quantization or None)."""
    specs = [Const(*spec) if isinstance(spec[0], np.ndarray) else In(*spec) for spec in inputs]
    return single_op_model(op, specs, Out(*output), params, version=version)


def stamped(model: bytes) -> int:
    return Model.from_bytes(model).subgraphs[0].operators[0].version


def full_range(shape, dtype, rng) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(int(info.min), int(info.max) + 1, size=shape).astype(dtype)


def model_inputs(model: bytes, seed: int) -> list[np.ndarray]:
    """Random values for the model's graph inputs: integers over their whole range (the
    extremes saturate), floats well beyond a quantized range, with exact ties and
    non-finite values in the mix."""
    rng = np.random.default_rng(seed)
    subgraph = Model.from_bytes(model).subgraphs[0]
    values = []
    for index in subgraph.inputs:
        tensor = subgraph.tensors[index]
        shape, dtype = tuple(tensor.shape), np.dtype(tensor.dtype)
        if dtype.kind == "f":
            x = rng.uniform(-30, 30, shape).astype(dtype)
            flat = x.reshape(-1)
            specials = [np.inf, -np.inf, np.nan, 1e10, -1e10, 0.0, -0.0]
            flat[: len(specials)] = specials[: flat.size]
            values.append(x)
        else:
            values.append(full_range(shape, dtype, rng))
    return values


def with_ties(x: np.ndarray, scale: float, seed: int) -> np.ndarray:
    """``x`` with some entries at exact halves of ``scale`` (where round-half-away and
    round-half-even differ)."""
    rng = np.random.default_rng(seed)
    x = x.copy()
    flat = x.reshape(-1)
    count = flat.size // 3
    where = rng.choice(flat.size, count, replace=False)
    flat[where] = ((rng.integers(-300, 300, count) + 0.5) * np.float32(scale)).astype(np.float32)
    return x


def invoke(interpreter, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def check_parity(model: bytes, device: str, make_inputs: Callable[[int], list[np.ndarray]] | None = None, invokes: int = 4):
    """The node is delegated; outputs equal our CPU path's and LiteRT's (BUILTIN_REF), bit
    for bit, over ``invokes`` invokes each; the partition replays a CUDA graph."""
    make_inputs = make_inputs or (lambda seed: model_inputs(model, seed))
    delegate = DEVICES[device]()
    interpreter = assert_matches_cpu(model, lambda: delegate, inputs=make_inputs(0), invokes=invokes)
    placements = interpreter.node_placements()
    assert [p.delegated for p in placements] == [True] * len(placements), [p.rejections for p in placements]
    oracle = litert_interpreter(model)
    for seed in range(1, invokes + 1):  # new values at each invoke
        inputs = make_inputs(seed)
        got, want = invoke(interpreter, inputs), run_interpreter(oracle, inputs)
        for i, (g, w) in enumerate(zip(got, want)):
            assert g.dtype == w.dtype and g.shape == w.shape, f"output {i}: {g.dtype}{g.shape} vs LiteRT {w.dtype}{w.shape}"
            np.testing.assert_array_equal(g, w, err_msg=f"invoke {seed}, output {i}")
    stats = delegate.partition_stats()
    assert len(stats) == 1 and stats[0].graph == "replaying"
    return delegate


devices = pytest.mark.parametrize("device", list(DEVICES))


# -- ADD, SUB, MUL --------------------------------------------------------------------------------


def binary_model(op, dtype, shapes, scales, zero_points, activation=Act.NONE, constant=None, version=None) -> bytes:
    """``constant``: (position, array) for a constant operand."""
    (s1, s2, so), (z1, z2, zo) = scales, zero_points
    specs = [(list(shapes[0]), dtype, quantization(s1, z1)), (list(shapes[1]), dtype, quantization(s2, z2))]
    if constant is not None:
        position, value = constant
        specs[position] = (value, specs[position][2])
    out_shape = list(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    params = BINARY_PARAMS[op](fused_activation_function=activation)
    return one_node_model(op, specs, (out_shape, dtype, quantization(so, zo)), params, version)


BINARY_CASES = {
    # op, dtype, shapes, scales, zero points, activation; the stamped version
    "add-int8-broadcast-rank3": ((B.ADD, np.int8, ([2, 3, 5], [3, 1]), (0.031, 0.057, 0.049), (-7, 20, 3)), 2),
    "add-int8-relu": ((B.ADD, np.int8, ([2, 3, 5], [5]), (0.031, 0.057, 0.049), (-7, 20, 3), Act.RELU), 2),
    "add-int8-relu6": ((B.ADD, np.int8, ([4, 8], [4, 8]), (0.05, 0.05, 0.0794702023267746), (0, 0, 0), Act.RELU6), 2),
    "add-int8-relu-n1-to-1": ((B.ADD, np.int8, ([1, 4, 4, 8], [1, 1, 1, 8]), (0.01, 0.02, 0.009), (5, -3, 0), Act.RELU_N1_TO_1), 2),
    "add-uint8-rank4-both-broadcast": ((B.ADD, np.uint8, ([2, 1, 3, 1], [1, 4, 1, 5]), (0.1, 0.05, 0.12), (128, 100, 130)), 1),
    "sub-int8-broadcast": ((B.SUB, np.int8, ([2, 3, 5], [2, 1, 5]), (0.02, 0.03, 0.04), (10, -20, 0), Act.RELU6), 2),
    "sub-uint8": ((B.SUB, np.uint8, ([3, 7], [3, 7]), (0.5, 0.25, 1.1), (128, 3, 250)), 1),
    "mul-int8-broadcast": ((B.MUL, np.int8, ([1, 8, 8, 8], [1, 1, 1, 8]), (0.0155, 0.00295, 0.01397), (-1, 8, 0)), 2),
    "mul-int8-saturating-relu": ((B.MUL, np.int8, ([3, 5], [3, 5]), (0.2, 0.03, 0.02), (0, -5, -100), Act.RELU), 2),
    "mul-uint8": ((B.MUL, np.uint8, ([2, 6], [6]), (0.02, 0.04, 0.003), (120, 7, 10)), 1),
    # s1 * s2 / s_out >= 1: a left shift in the multiplier (version 3)
    "mul-int8-rescale-above-one": ((B.MUL, np.int8, ([4, 5], [5]), (0.5, 0.4, 0.1), (3, -2, 1)), 3),
    "mul-uint8-rescale-above-one": ((B.MUL, np.uint8, ([4, 5], [4, 5]), (0.9, 0.7, 0.25), (128, 120, 128)), 3),
}


@devices
@pytest.mark.parametrize("case", list(BINARY_CASES))
def test_binary_matches_litert(case, device):
    spec, version = BINARY_CASES[case]
    model = binary_model(*spec)
    assert stamped(model) == version
    check_parity(model, device)


@devices
@pytest.mark.parametrize(
    "op, position, shape",
    [(B.MUL, 1, []), (B.SUB, 0, [5]), (B.ADD, 1, [3, 1])],
    ids=["mul-scalar-constant", "sub-constant-first", "add-constant-column"],
)
def test_binary_with_a_constant_operand_matches_litert(op, position, shape, device):
    constant = full_range(shape, np.int8, np.random.default_rng(7))
    shapes = [[3, 5], [3, 5]]
    shapes[position] = shape
    model = binary_model(op, np.int8, shapes, (0.02, 0.07, 0.05), (5, -11, 3), constant=(position, constant))
    delegate = check_parity(model, device)
    # The constant was uploaded once by the op itself (as int64): only x travels.
    assert delegate.last_invoke().uploads == 1


# -- QUANTIZE, DEQUANTIZE -------------------------------------------------------------------------


QUANTIZE_CASES = {
    "float-to-int8": (([2, 3, 8], np.float32, None), ([2, 3, 8], np.int8, quantization(0.05, 3)), 1),
    "float-to-uint8": (([4, 9], np.float32, None), ([4, 9], np.uint8, quantization(0.11, 128)), 1),
    "float-to-int8-negative-zero-point": (([1, 5, 5, 2], np.float32, None), ([1, 5, 5, 2], np.int8, quantization(0.2, -128)), 1),
    "float-to-int8-per-channel": (([2, 3, 4], np.float32, None), ([2, 3, 4], np.int8, quantization([0.05, 0.1, 0.3], [0, -3, 7], 1)), 3),
    "float-to-uint8-per-channel-last-axis": (
        ([3, 4], np.float32, None), ([3, 4], np.uint8, quantization([0.05, 0.1, 0.2, 0.4], [128, 0, 255, 3], 1)), 3),
    "int8-to-uint8": (([2, 3, 4], np.int8, quantization(0.00390625, -128)), ([2, 3, 4], np.uint8, quantization(0.00390625, 0)), 1),
    "uint8-to-int8-rescaled": (([5, 6], np.uint8, quantization(0.07, 120)), ([5, 6], np.int8, quantization(0.05, -3)), 1),
    "int8-to-int8-rescaled": (([5, 6], np.int8, quantization(0.3, 5)), ([5, 6], np.int8, quantization(0.02, -1)), 1),
    "uint8-to-uint8-rescaled": (([7], np.uint8, quantization(0.01, 0)), ([7], np.uint8, quantization(0.013, 17)), 1),
}


@devices
@pytest.mark.parametrize("case", list(QUANTIZE_CASES))
def test_quantize_matches_litert(case, device):
    x, y, version = QUANTIZE_CASES[case]
    model = one_node_model(B.QUANTIZE, [x], y)
    assert stamped(model) == version
    scale = float(y[2].scale[0])
    make = lambda seed: [with_ties(v, scale, seed) if v.dtype.kind == "f" else v for v in model_inputs(model, seed)]
    check_parity(model, device, make)


DEQUANTIZE_CASES = {
    "uint8": (([2, 3, 8], np.uint8, quantization(0.05, 128)), 1),
    "int8": (([2, 3, 8], np.int8, quantization(0.017, -5)), 2),
    "uint8-per-channel": (([3, 4], np.uint8, quantization([0.05, 0.1, 0.2], [128, 0, 255], 0)), 1),
}


@devices
@pytest.mark.parametrize("case", list(DEQUANTIZE_CASES))
def test_dequantize_matches_litert(case, device):
    x, version = DEQUANTIZE_CASES[case]
    model = one_node_model(B.DEQUANTIZE, [x], (x[0], np.float32, None))
    assert stamped(model) == version
    check_parity(model, device)


def test_dequantize_with_float16_storage_keeps_a_downloaded_result_in_float32():
    # Issue 23: the storage precision of float activations does not round a quantized
    # model's float output (the partition keeps DEQUANTIZE's downloaded output in float32).
    model = one_node_model(B.DEQUANTIZE, [([4, 16], np.int8, quantization(0.0123, 3))], ([4, 16], np.float32, None))
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(GpuDelegate(device="host", precision="float16"))
    interpreter.allocate_tensors()
    for seed in range(3):
        x = model_inputs(model, seed)
        want = run_interpreter(litert_interpreter(model), x)[0]
        np.testing.assert_array_equal(invoke(interpreter, x)[0], want)


# -- LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU -------------------------------------------------------


ACTIVATION_CASES = {
    "logistic-int8": (B.LOGISTIC, np.int8, (0.05, 3), (1 / 256, -128), None, 2),
    "logistic-int8-wide-input": (B.LOGISTIC, np.int8, (0.17895515, 30), (1 / 256, -128), None, 2),
    "logistic-uint8": (B.LOGISTIC, np.uint8, (0.1, 128), (1 / 256, 0), None, 1),
    "tanh-int8": (B.TANH, np.int8, (0.04, -10), (1 / 128, 0), None, 2),
    "tanh-uint8": (B.TANH, np.uint8, (0.03, 120), (1 / 128, 128), None, 1),
    "hard-swish-int8": (B.HARD_SWISH, np.int8, (0.05, 3), (0.03, -100), None, 1),
    "hard-swish-uint8": (B.HARD_SWISH, np.uint8, (0.04, 140), (0.025, 20), None, 1),
    "leaky-relu-int8": (B.LEAKY_RELU, np.int8, (0.05, 3), (0.03, -10), LeakyReluParams(alpha=0.2), 1),
    "leaky-relu-int8-negative-alpha": (B.LEAKY_RELU, np.int8, (0.05, 3), (0.06, 0), LeakyReluParams(alpha=-0.5), 1),
    "leaky-relu-uint8": (B.LEAKY_RELU, np.uint8, (0.02, 128), (0.05, 100), LeakyReluParams(alpha=0.01), 1),
}


@devices
@pytest.mark.parametrize("case", list(ACTIVATION_CASES))
def test_activation_matches_litert(case, device):
    op, dtype, (s_in, z_in), (s_out, z_out), params, version = ACTIVATION_CASES[case]
    shape = [2, 3, 4, 11]
    model = one_node_model(op, [(shape, dtype, quantization(s_in, z_in))], (shape, dtype, quantization(s_out, z_out)), params)
    assert stamped(model) == version
    check_parity(model, device)


# -- SOFTMAX --------------------------------------------------------------------------------------


SOFTMAX_CASES = {
    "int8": ([2, 10], np.int8, (0.0175, 1), np.int8, (1 / 256, -128), 1.0, 2),
    "int8-rank4-beta": ([2, 3, 4, 17], np.int8, (0.05, 3), np.int8, (1 / 256, -128), 0.7, 2),
    "int8-long-rows": ([2, 300], np.int8, (0.02, 0), np.int8, (1 / 256, -128), 1.0, 2),
    "int8-to-int16": ([3, 17], np.int8, (0.1, 3), np.int16, (1 / 32768, 0), 1.0, 2),
    "uint8": ([3, 12], np.uint8, (0.31, 64), np.uint8, (1 / 256, 0), 1.0, 1),
    "uint8-to-int16-beta": ([1, 2, 33], np.uint8, (0.08, 128), np.int16, (1 / 32768, 0), 2.5, 1),
}


@devices
@pytest.mark.parametrize("case", list(SOFTMAX_CASES))
def test_softmax_matches_litert(case, device):
    shape, dtype, (s_in, z_in), out_dtype, (s_out, z_out), beta, version = SOFTMAX_CASES[case]
    model = one_node_model(
        B.SOFTMAX, [(shape, dtype, quantization(s_in, z_in))], (shape, out_dtype, quantization(s_out, z_out)),
        SoftmaxParams(beta=beta),
    )
    assert stamped(model) == version

    def make(seed):
        (x,) = model_inputs(model, seed)
        x[..., :3] = x[..., :1]  # rows with several equal values (maxima, at times)
        if seed % 2:
            x[0, ...] = np.iinfo(dtype).max  # constant rows
        return [x]

    check_parity(model, device, make)


# -- a small graph of several of these ops, in one partition --------------------------------------


@devices
def test_a_chain_of_quantized_ops_runs_in_one_partition(device):
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3, 16], np.float32)
    q = graph.add_tensor("q", [2, 3, 16], np.int8, quantization=quantization(0.08, -4))
    graph.add_operator(B.QUANTIZE, [x], [q])
    b = graph.add_input("b", [16], np.int8, quantization=quantization(0.05, 9))
    s = graph.add_tensor("s", [2, 3, 16], np.int8, quantization=quantization(0.1, 2))
    graph.add_operator(B.ADD, [q, b], [s], AddParams(fused_activation_function=Act.RELU))
    h = graph.add_tensor("h", [2, 3, 16], np.int8, quantization=quantization(0.07, -20))
    graph.add_operator(B.HARD_SWISH, [s], [h])
    p = graph.add_tensor("p", [2, 3, 16], np.int8, quantization=quantization(1 / 256, -128))
    graph.add_operator(B.SOFTMAX, [h], [p], SoftmaxParams(beta=1.0))
    y = graph.add_tensor("y", [2, 3, 16], np.float32)
    graph.add_operator(B.DEQUANTIZE, [p], [y])
    graph.add_output(y)
    graph.add_output(s)
    builder.add_signature("serving_default", graph)
    model = builder.build()
    delegate = check_parity(model, device)
    assert delegate.partition_stats()[0].nodes == (0, 1, 2, 3, 4)


# -- version caps and refused nodes ---------------------------------------------------------------


def q(scale=0.05, zero_point=0):
    return quantization(scale, zero_point)


ABOVE_THE_CAP = {
    # a one-node model stamped just above the claim (or with a type not claimed); what the
    # reason must name
    "ADD v3 (int16, general scales)": (
        lambda: one_node_model(B.ADD, [([2, 3], np.int16, q()), ([2, 3], np.int16, q())], ([2, 3], np.int16, q()),
                               AddParams(pot_scale_int16=False)), 3, "ADD v3"),
    "SUB v3 (int8 stamped v3)": (
        lambda: binary_model(B.SUB, np.int8, ([2, 3], [2, 3]), (0.1, 0.1, 0.1), (0, 0, 0), version=3), 3, "SUB v3"),
    "MUL v4 (int16)": (
        lambda: one_node_model(B.MUL, [([2, 3], np.int16, q()), ([2, 3], np.int16, q())], ([2, 3], np.int16, q()), MulParams()),
        4, "MUL v4"),
    "QUANTIZE v2 (int16 output)": (
        lambda: one_node_model(B.QUANTIZE, [([2, 3], np.float32, None)], ([2, 3], np.int16, q())), 2, "QUANTIZE v2"),
    "QUANTIZE v1 int16 -> int8 (a type not claimed)": (
        lambda: one_node_model(B.QUANTIZE, [([2, 3], np.int16, q())], ([2, 3], np.int8, q())), 1, "INT16"),
    "DEQUANTIZE v5 (int8 per channel)": (
        lambda: one_node_model(B.DEQUANTIZE, [([2, 3], np.int8, quantization([0.1, 0.2, 0.3], 0, 1))], ([2, 3], np.float32, None)),
        5, "DEQUANTIZE v5"),
    "DEQUANTIZE v3 (int16)": (
        lambda: one_node_model(B.DEQUANTIZE, [([2, 3], np.int16, q())], ([2, 3], np.float32, None)), 3, "INT16"),
    "LOGISTIC v3 (int16)": (
        lambda: one_node_model(B.LOGISTIC, [([2, 3], np.int16, q())], ([2, 3], np.int16, q(1 / 32768))), 3, "LOGISTIC v3"),
    "TANH v3 (int16)": (
        lambda: one_node_model(B.TANH, [([2, 3], np.int16, q())], ([2, 3], np.int16, q(1 / 32768))), 3, "TANH v3"),
    "SOFTMAX v3 (int16)": (
        lambda: one_node_model(B.SOFTMAX, [([2, 3], np.int16, q())], ([2, 3], np.int16, q(1 / 32768)), SoftmaxParams(beta=1.0)),
        3, "SOFTMAX v3"),
    "LEAKY_RELU v2 (int16)": (
        lambda: one_node_model(B.LEAKY_RELU, [([2, 3], np.int16, q())], ([2, 3], np.int16, q()), LeakyReluParams(alpha=0.1)),
        2, "LEAKY_RELU v2"),
    "HARD_SWISH v2 (int8 stamped v2)": (
        lambda: one_node_model(B.HARD_SWISH, [([2, 3], np.int8, q())], ([2, 3], np.int8, q()), version=2), 2, "HARD_SWISH v2"),
}


@pytest.mark.parametrize("case", list(ABOVE_THE_CAP))
def test_a_version_or_type_not_claimed_is_left_with_a_reason(case):
    make, version, named = ABOVE_THE_CAP[case]
    model = make()
    assert stamped(model) == version
    plan = plan_delegation(GpuDelegate(device="host"), model)
    assert plan.taken == [], f"{case} was delegated"
    assert named in plan.reason(0), plan.reason(0)


REFUSED = {
    "LOGISTIC whose output scale is not 1/256": (
        lambda: one_node_model(B.LOGISTIC, [([2, 3], np.int8, q())], ([2, 3], np.int8, q(0.01, -128))), "needs scale"),
    "SOFTMAX int8 whose output zero point is not -128": (
        lambda: one_node_model(B.SOFTMAX, [([2, 3], np.int8, q())], ([2, 3], np.int8, q(1 / 256, 0)), SoftmaxParams(beta=1.0)),
        "zero point -128"),
    "SOFTMAX int8 -> uint8": (
        lambda: one_node_model(B.SOFTMAX, [([2, 3], np.int8, q())], ([2, 3], np.uint8, q(1 / 256, 0)), SoftmaxParams(beta=1.0)),
        "UINT8"),
    "ADD mixing int8 and uint8": (
        lambda: one_node_model(B.ADD, [([2, 3], np.int8, q()), ([2, 3], np.uint8, q())], ([2, 3], np.int8, q()), AddParams()),
        "mixes int8 and uint8"),
    "ADD with a fused SIGN_BIT": (
        lambda: binary_model(B.ADD, np.int8, ([2, 3], [2, 3]), (0.1, 0.1, 0.1), (0, 0, 0), Act.SIGN_BIT), "SIGN_BIT"),
    "SUB whose output scale is tiny": (
        lambda: binary_model(B.SUB, np.int8, ([2, 3], [2, 3]), (1.0, 1.0, 1e-9), (0, 0, 0)), "rescale factor"),
    "MUL per channel": (
        lambda: one_node_model(B.MUL, [([2, 3], np.int8, quantization([0.1, 0.2, 0.3], 0, 1)), ([2, 3], np.int8, q())],
                               ([2, 3], np.int8, q()), MulParams()), "per channel"),
    "ADD of rank 5": (
        lambda: binary_model(B.ADD, np.int8, ([1, 2, 1, 2, 3], [3]), (0.1, 0.1, 0.1), (0, 0, 0)), "rank 5"),
    "DEQUANTIZE of a constant int8 tensor (the CPU folds it)": (
        lambda: one_node_model(B.DEQUANTIZE, [(np.arange(6, dtype=np.int8).reshape(2, 3), q(0.5, 1))], ([2, 3], np.float32, None)),
        "constant INT8"),
    "QUANTIZE float -> float": (
        lambda: one_node_model(B.QUANTIZE, [([2, 3], np.float32, None)], ([2, 3], np.float32, None)), "FLOAT32"),
}


def op_class_and_reason(model: bytes):
    """What the GPU op classes say of the model's node 0 (the class that takes it, or
    None and the reasons), from the file alone."""
    subgraph = Model.from_bytes(model).subgraphs[0]
    tensors = [
        RuntimeTensor(t.index, t.name, t.type, t.shape, quantization=t.quantization, data=t.data,
                      allocation=Allocation.CONSTANT if t.data is not None else Allocation.NONE)
        for t in subgraph.tensors
    ]
    op = subgraph.operators[0]
    node = Node(op.index, op.inputs, op.outputs, op.params, op.custom_options, op.intermediates)
    return select_op_class(gpu_op_classes()[op.builtin_code], node, op.builtin_code, op.version, tensors)


@pytest.mark.parametrize("case", list(REFUSED))
def test_nodes_the_kernels_cannot_run_are_refused_with_the_reason(case):
    make, named = REFUSED[case]
    op_class, reason = op_class_and_reason(make())
    assert op_class is None, f"{case} was taken by {op_class.__name__}"
    assert named in reason, reason


# -- fixed_point.cuh: the device's integer arithmetic, equal bit for bit to the CPU's ---------------
#
# Each function of backends/gpu/cuda/fixed_point.cuh runs elementwise in a small kernel of its
# own (FIXED_POINT_CHECK below), built for the CPU by the host shim (g++) and compiled by
# NVRTC; on a GPU machine the `gpu` test runs it on the device. The references are the CPU's
# array-namespace functions (backends/cpu/quantization.py, backends/cpu/kernels/_fixed_point.py,
# fully_connected_quantized.rescale_double), which the CPU kernels and, through them,
# LiteRT's reference kernels (BUILTIN_REF) are checked against.

from backends.cpu.kernels import _fixed_point as fp  # noqa: E402
from backends.cpu.kernels.fully_connected_quantized import rescale_double  # noqa: E402
from backends.cpu import quantization as cpu_q  # noqa: E402
from backends.gpu.cuda.host import HostModule  # noqa: E402
from backends.gpu.cuda.sources import splice_headers  # noqa: E402

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

#: (kernel, the statement for element i, its parameters before ``long long n``).
_CHECKS = (
    ("fp_srdhm", "out[i] = saturating_rounding_doubling_high_mul(a[i], b[i])", "const int* a, const int* b, int* out"),
    ("fp_rdbpot", "out[i] = rounding_divide_by_pot(x[i], e[i])", "const int* x, const int* e, int* out"),
    ("fp_mbqm", "out[i] = multiply_by_quantized_multiplier(x[i], m[i], s[i])",
     "const int* x, const int* m, const int* s, int* out"),
    ("fp_mbqm_smaller", "out[i] = multiply_by_quantized_multiplier_smaller_than_one_exp(x[i], m[i], s[i])",
     "const int* x, const int* m, const int* s, int* out"),
    ("fp_mbqm_greater", "out[i] = multiply_by_quantized_multiplier_greater_than_one(x[i], m[i], s[i])",
     "const int* x, const int* m, const int* s, int* out"),
    ("fp_mbqm_int64", "out[i] = multiply_by_quantized_multiplier_int64(x[i], m[i], s[i])",
     "const long long* x, const int* m, const int* s, int* out"),
    ("fp_saturating_add", "out[i] = saturating_add(a[i], b[i])", "const int* a, const int* b, int* out"),
    ("fp_wrapping_add", "out[i] = wrapping_add(a[i], b[i])", "const int* a, const int* b, int* out"),
    ("fp_wrapping_sub", "out[i] = wrapping_sub(a[i], b[i])", "const int* a, const int* b, int* out"),
    ("fp_wrapping_mul", "out[i] = wrapping_mul(a[i], b[i])", "const int* a, const int* b, int* out"),
    ("fp_saturating_shift_left", "out[i] = saturating_shift_left(x[i], e[i])", "const int* x, const int* e, int* out"),
    ("fp_rounding_half_sum", "out[i] = rounding_half_sum(a[i], b[i])", "const int* a, const int* b, int* out"),
    ("fp_clamp", "out[i] = clamp_int(x[i], low, high)", "const int* x, int low, int high, int* out"),
    ("fp_rescale_double", "out[i] = rescale_double(acc[i], scale[i], zero_point, low, high)",
     "const int* acc, const double* scale, int zero_point, int low, int high, int* out"),
)
#: One elementwise kernel per function of the header, written out (no macro: the emulated
#: CuPy's RawModule, like the registry of shipped kernels, finds kernels by their definitions).
FIXED_POINT_CHECK = '#include "fixed_point.cuh"\n' + "".join(
    f"""
extern "C" __global__ void {name}({params}, long long n) {{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {{ {statement}; }}
}}
"""
    for name, statement, params in _CHECKS
)
FIXED_POINT_KERNELS = tuple(name for name, _, _ in _CHECKS)


@pytest.fixture(scope="module")
def fixed_point_host():
    """The check kernels built for the CPU by the host shim: ``run(name, *args)`` launches one
    over the length of its first array and returns the int32 output."""
    module = HostModule(splice_headers(FIXED_POINT_CHECK), "fixed_point_check.cu", FIXED_POINT_KERNELS)

    def run(name, *args):
        n = len(args[0])
        out = np.empty(n, np.int32)
        arrays = [np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a for a in args]
        module.get_function(name)((-(-n // 256), 1, 1), (256, 1, 1), (*arrays, out, np.int64(n)))
        return out

    return run


def i32(values) -> np.ndarray:
    return np.asarray(values, np.int64).astype(np.int32)


#: int32 values where the arithmetic turns: the extremes, powers of two and their neighbours, 0, +-1.
EDGES = sorted(
    {INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 1, 0, 1, -1, 2, -2, 3, -3}
    | {s * (1 << k) + d for k in range(1, 31) for s in (1, -1) for d in (-1, 0, 1)}
)


def edge_pairs(seed: int, random_count: int = 20000) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of EDGES, then random int32 pairs (uniform over int32, and small values)."""
    rng = np.random.default_rng(seed)
    edges = np.array(EDGES, np.int64)
    a, b = (grid.ravel() for grid in np.meshgrid(edges, edges))
    wide = rng.integers(INT32_MIN, INT32_MAX + 1, (2, random_count))
    small = rng.integers(-(1 << 16), 1 << 16, (2, random_count))
    return i32(np.concatenate([a, wide[0], small[0]])), i32(np.concatenate([b, wide[1], small[1]]))


def assert_same_bits(got: np.ndarray, want, inputs: dict) -> None:
    want = np.asarray(want, np.int64)
    assert want.min(initial=0) >= INT32_MIN and want.max(initial=0) <= INT32_MAX
    bad = np.flatnonzero(got.astype(np.int64) != want)
    if bad.size:
        first = bad[:5]
        detail = {k: np.asarray(v)[first].tolist() for k, v in inputs.items()}
        raise AssertionError(f"{bad.size} values differ, e.g. at {first.tolist()}: inputs {detail}, "
                             f"fixed_point.cuh {got[first].tolist()}, CPU {want[first].tolist()}")


def test_header_is_spliced_into_a_source_that_includes_it():
    text = splice_headers('#include "fixed_point.cuh"\n')
    assert "saturating_rounding_doubling_high_mul" in text
    assert not [line for line in text.splitlines() if line.startswith("#include")]


def test_saturating_rounding_doubling_high_mul_equals_the_cpu_including_int32_min_squared(fixed_point_host):
    a, b = edge_pairs(1)
    got = fixed_point_host("fp_srdhm", a, b)
    assert_same_bits(got, cpu_q.saturating_rounding_doubling_high_mul(a, b), {"a": a, "b": b})
    both_min = (a == INT32_MIN) & (b == INT32_MIN)
    assert both_min.sum() == 1 and got[both_min][0] == INT32_MAX  # the one overflow saturates


def test_rounding_divide_by_pot_equals_the_cpu_for_every_exponent_and_tie(fixed_point_host):
    rng = np.random.default_rng(2)
    xs, es = [], []
    for exponent in range(32):
        half = 1 << exponent >> 1
        multiples = rng.integers(-(2**31 >> exponent), 2**31 >> exponent, 200) << exponent
        ties = np.concatenate([multiples + half, multiples - half]) if exponent else multiples  # exact .5
        values = np.concatenate([np.array(EDGES), ties, ties + 1, ties - 1, rng.integers(INT32_MIN, INT32_MAX + 1, 500)])
        values = values[(values >= INT32_MIN) & (values <= INT32_MAX)]
        xs.append(values)
        es.append(np.full(values.size, exponent))
    x, e = i32(np.concatenate(xs)), i32(np.concatenate(es))
    got = fixed_point_host("fp_rdbpot", x, e)
    assert_same_bits(got, cpu_q.rounding_divide_by_pot(x.astype(np.int64), e.astype(np.int64)), {"x": x, "e": e})
    scalar = [fp.rdbpot(int(v), int(k)) for v, k in zip(x[::97], e[::97])]  # the Python-int form too
    assert_same_bits(got[::97], scalar, {"x": x[::97], "e": e[::97]})
    assert fixed_point_host("fp_rdbpot", i32([5, -5, 3, -3, 7, -7]), i32([1, 1, 1, 1, 1, 1])).tolist() == [3, -3, 2, -2, 4, -4]


def multiplier_cases(seed: int, shifts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x over EDGES and random int32, with multipliers of QuantizeMultiplier's range
    [2**30, 2**31) and its edges (0, 2**30, INT32_MAX, INT32_MIN for the saturating case),
    for each shift."""
    rng = np.random.default_rng(seed)
    multipliers = np.concatenate([[0, 1, 1 << 30, (1 << 30) + 1, INT32_MAX, INT32_MIN], rng.integers(1 << 30, 1 << 31, 10)])
    xs, ms, ss = [], [], []
    for shift in shifts:
        x = np.concatenate([np.array(EDGES), rng.integers(INT32_MIN, INT32_MAX + 1, 200), rng.integers(-5000, 5000, 200)])
        m = rng.choice(multipliers, x.size)
        m[: len(multipliers)] = multipliers
        xs.append(x)
        ms.append(m)
        ss.append(np.full(x.size, shift))
    return i32(np.concatenate(xs)), i32(np.concatenate(ms)), i32(np.concatenate(ss))


def test_multiply_by_quantized_multiplier_equals_the_cpu_for_shifts_minus_31_to_30(fixed_point_host):
    x, m, s = multiplier_cases(3, range(-31, 31))
    got = fixed_point_host("fp_mbqm", x, m, s)
    want = cpu_q.multiply_by_quantized_multiplier(x, m.astype(np.int64), s.astype(np.int64))
    assert_same_bits(got, want, {"x": x, "m": m, "s": s})
    assert set(np.unique(s)) == set(range(-31, 31))


def test_multiply_by_quantized_multiplier_ties_match_the_cpu(fixed_point_host):
    x = i32([1, -1, 3, -3, 5, -5, 2**31 - 1, -(2**31) + 1, INT32_MIN])
    m = i32([1 << 30] * x.size)  # 0.5
    for shift in (0, -1, -2):
        s = i32([shift] * x.size)
        got = fixed_point_host("fp_mbqm", x, m, s)
        assert_same_bits(got, cpu_q.multiply_by_quantized_multiplier(x, m.astype(np.int64), s.astype(np.int64)), {"x": x})
    s = i32([0] * x.size)
    # x * 0.5 at shift 0 is SaturatingRoundingDoublingHighMul alone, whose nudge rounds halves up
    # (toward +inf); a right shift's RoundingDivideByPOT rounds them away from zero.
    assert fixed_point_host("fp_mbqm", x, m, s)[:6].tolist() == [1, 0, 2, -1, 3, -2]
    assert fixed_point_host("fp_mbqm", x, i32([INT32_MAX] * x.size), i32([-1] * x.size))[:6].tolist() == [1, -1, 2, -2, 3, -3]


def test_the_smaller_than_one_and_greater_than_one_forms_equal_the_general_one(fixed_point_host):
    x, m, s = multiplier_cases(4, range(-31, 1))
    want = cpu_q.multiply_by_quantized_multiplier(x, m.astype(np.int64), s.astype(np.int64))
    assert_same_bits(fixed_point_host("fp_mbqm_smaller", x, m, s), want, {"x": x, "m": m, "s": s})
    x, m, s = multiplier_cases(5, range(0, 31))
    want = cpu_q.multiply_by_quantized_multiplier(x, m.astype(np.int64), s.astype(np.int64))
    assert_same_bits(fixed_point_host("fp_mbqm_greater", x, m, s), want, {"x": x, "m": m, "s": s})


def test_the_int64_overload_equals_the_cpu(fixed_point_host):
    rng = np.random.default_rng(6)
    n = 4000
    x = np.concatenate([rng.integers(-(2**47), 2**47, n), rng.integers(-(2**20), 2**20, n), [0, 1, -1, 2**47 - 1, -(2**47)]])
    m = rng.integers(1 << 30, 1 << 31, x.size)
    m[:4] = [0x7FFF0000 - 1, 0x7FFF0000, INT32_MAX, 1 << 30]
    s = rng.integers(-31, 15, x.size)
    got = fixed_point_host("fp_mbqm_int64", x.astype(np.int64), i32(m), i32(s))
    assert_same_bits(got, cpu_q.multiply_by_quantized_multiplier_int64(x, m, s), {"x": x, "m": m, "s": s})


def test_saturating_and_wrapping_adds_equal_the_cpu(fixed_point_host):
    a, b = edge_pairs(7)
    wide_a, wide_b = a.astype(np.int64), b.astype(np.int64)
    inputs = {"a": a, "b": b}
    assert_same_bits(fixed_point_host("fp_saturating_add", a, b), fp._saturating_add(wide_a, wide_b), inputs)
    assert_same_bits(fixed_point_host("fp_wrapping_add", a, b), fp.wrap32(wide_a + wide_b), inputs)
    assert_same_bits(fixed_point_host("fp_wrapping_sub", a, b), fp.wrap32(wide_a - wide_b), inputs)
    assert_same_bits(fixed_point_host("fp_wrapping_mul", a, b), cpu_q.wrap_int32(wide_a * wide_b), inputs)
    assert_same_bits(fixed_point_host("fp_rounding_half_sum", a, b), fp.rounding_half_sum(wide_a, wide_b), inputs)


def test_saturating_shift_left_equals_the_cpu(fixed_point_host):
    rng = np.random.default_rng(8)
    x = np.concatenate([np.tile(EDGES, 32), rng.integers(INT32_MIN, INT32_MAX + 1, 4000)])
    e = np.concatenate([np.repeat(np.arange(32), len(EDGES)), rng.integers(0, 32, 4000)])
    got = fixed_point_host("fp_saturating_shift_left", i32(x), i32(e))
    assert_same_bits(got, fp.saturating_shift_left(x, e), {"x": x, "e": e})


def test_clamp_equals_numpy_clip(fixed_point_host):
    x = i32(EDGES)
    assert_same_bits(fixed_point_host("fp_clamp", x, np.int32(-128), np.int32(127)), np.clip(x, -128, 127), {"x": x})


def test_the_double_rescale_of_fully_connected_equals_the_cpu(fixed_point_host):
    rng = np.random.default_rng(9)
    n = 20000
    acc = np.concatenate([rng.integers(-(2**20), 2**20, n), rng.integers(INT32_MIN, INT32_MAX + 1, n), EDGES])
    scale = np.concatenate([rng.uniform(1e-5, 2e-2, n), rng.uniform(0.5, 4.0, n), rng.uniform(0, 1, len(EDGES))])
    # exact ties: acc * scale a half (scale 0.5 and 0.25 on odd multiples)
    acc[:1000] = 2 * rng.integers(-1000, 1000, 1000) + 1
    scale[:1000] = 0.5
    for zero_point, low, high in ((-3, -128, 127), (128, 0, 255), (0, INT32_MIN, INT32_MAX), (100, -128, 127)):
        got = fixed_point_host("fp_rescale_double", i32(acc), scale.astype(np.float64), np.int32(zero_point), np.int32(low), np.int32(high))
        want = rescale_double(acc.astype(np.int64), scale, zero_point, low, high, check_int32_conversion=True)
        assert_same_bits(got, want, {"acc": acc, "scale": scale})


@pytest.mark.parametrize("arch", ("sm_75", "sm_80", "sm_90"))
def test_the_header_compiles_with_nvrtc_without_warnings(arch):
    from backends.gpu.cuda.nvrtc import compile_source

    ptx = compile_source(splice_headers(FIXED_POINT_CHECK), "fixed_point_check.cu", arch.replace("sm", "compute"), warnings_as_errors=True)
    for kernel in FIXED_POINT_KERNELS:
        assert f".entry {kernel}(" in ptx.decode()


@pytest.mark.gpu
def test_the_header_on_a_device_equals_the_host_shim(cuda_device, fixed_point_host):
    from backends.gpu.cuda.sources import CUPY_OPTIONS

    a, b = edge_pairs(10)
    x, m, s = multiplier_cases(11, range(-31, 31))
    e = i32(np.arange(a.size) % 32)
    cases = {
        "fp_srdhm": (a, b), "fp_rdbpot": (a, e), "fp_mbqm": (x, m, s), "fp_saturating_add": (a, b),
        "fp_wrapping_mul": (a, b), "fp_saturating_shift_left": (a, e), "fp_rounding_half_sum": (a, b),
        "fp_rescale_double": (a, np.abs(b.astype(np.float64)) / 2**31, np.int32(-5), np.int32(-128), np.int32(127)),
    }
    device = cuda_device()
    xp = device.xp
    with device.active():
        module = xp.RawModule(code=splice_headers(FIXED_POINT_CHECK), options=CUPY_OPTIONS)
        for name, args in cases.items():
            n = len(args[0])
            out = xp.empty(n, np.int32)
            device_args = [xp.asarray(v) if isinstance(v, np.ndarray) else v for v in args]
            module.get_function(name)((-(-n // 256),), (256,), (*device_args, out, np.int64(n)))
            np.testing.assert_array_equal(out.get(), fixed_point_host(name, *args), err_msg=name)
