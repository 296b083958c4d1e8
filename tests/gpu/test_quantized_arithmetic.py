"""The GPU delegate's quantized arithmetic and lookup-table ops, bit-exact with LiteRT's
reference kernels (BUILTIN_REF): ADD, SUB, MUL (elementwise_quantized.py), QUANTIZE and
DEQUANTIZE (quantize.py), LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU
(activations_quantized.py), SOFTMAX (softmax_quantized.py).

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
    builder = ModelBuilder()
    graph = builder.subgraph()
    indices = []
    for i, spec in enumerate(inputs):
        if isinstance(spec[0], np.ndarray):
            indices.append(graph.add_constant(f"c{i}", spec[0], quantization=spec[1]))
        else:
            shape, dtype, q = spec
            indices.append(graph.add_input(f"x{i}", shape, dtype, quantization=q))
    shape, dtype, q = output
    y = graph.add_tensor("y", shape, dtype, quantization=q)
    graph.add_operator(op, indices, [y], params, version=version)
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


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


def test_dequantize_with_float16_storage_rounds_the_float32_result_once():
    model = one_node_model(B.DEQUANTIZE, [([4, 16], np.int8, quantization(0.0123, 3))], ([4, 16], np.float32, None))
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(GpuDelegate(device="host", precision="float16"))
    interpreter.allocate_tensors()
    for seed in range(3):
        x = model_inputs(model, seed)
        want = run_interpreter(litert_interpreter(model), x)[0]
        np.testing.assert_array_equal(invoke(interpreter, x)[0], want.astype(np.float16).astype(np.float32))


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
