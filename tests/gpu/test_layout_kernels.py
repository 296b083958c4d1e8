"""The layout kernels (``layout.cu``: PAD, CONCATENATION, the gather of MIRROR_PAD) and their numpy twins
(``backends/gpu/cuda/layout.py``): each twin computes what its kernel computes (the kernel
built for the CPU by the host shim, on the emulated CUDA device), bit for bit, in as many
launches; both agree with the CPU kernels. The ops take one launch per node (CONCATENATION:
one per 8 inputs) on both devices, and RESHAPE none: its output is a view of its input,
which these tests show is safe in every place a partition keeps or moves values (partition
inputs and outputs, hand-offs between partitions, replayed CUDA graphs).
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.gpu import GpuDelegate, emulated_cuda_device
from backends.gpu.cuda.layout import (
    CONCAT_MAX_INPUTS,
    ConcatenationCuda,
    GatherAxesCuda,
    PadCuda,
    concatenation_groups,
    gather_tables,
)
from backends.gpu.ops.pad import mirror_sources
from interpreter import Interpreter
from kernel_twin import assert_twin_matches, run_both_ways
from schema.builder import ModelBuilder
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.enums import MirrorPadMode
from schema.params import AddParams, ConcatenationParams, MirrorPadParams, ReshapeParams

RNG = np.random.default_rng(5)
ACTIVATIONS = [Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH]
STORAGES = pytest.mark.parametrize("storage", [np.float32, np.float16], ids=["f32", "f16"])


def with_specials(shape, storage) -> np.ndarray:
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    flat = x.reshape(-1)
    flat[::5] = np.nan
    flat[1::7] = np.inf
    flat[2::11] = -np.inf
    return x.astype(storage)


# -- PAD -------------------------------------------------------------------------------------------

PAD_CASES = [
    ((5,), [[2, 1]]),
    ((3, 4), [[0, 1], [2, 0]]),
    ((2, 3, 4), [[1, 1], [0, 0], [3, 2]]),
    ((1, 4, 5, 3), [[0, 0], [1, 2], [2, 1], [0, 0]]),
    ((1, 2, 2, 1), [[1, 0], [0, 0], [0, 0], [0, 1]]),
    ((2, 3, 3, 2), [[0, 0], [0, 0], [0, 0], [0, 0]]),  # nothing padded: a copy
    ((1, 1, 1, 1), [[2, 2], [2, 2], [2, 2], [2, 2]]),  # mostly padding
]


@STORAGES
@pytest.mark.parametrize("value", [0.0, -1.5], ids=["zero", "value"])
@pytest.mark.parametrize("shape, paddings", PAD_CASES, ids=str)
def test_pad_twin_matches_the_kernel_and_numpy(shape, paddings, value, storage):
    x = with_specials(shape, storage)
    both = run_both_ways(lambda **where: PadCuda(storage, **where), "layout.cu", [x],
                         call=lambda launcher, x: launcher(x, paddings, value))
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    np.testing.assert_array_equal(both.twin[0], np.pad(x, paddings, constant_values=storage(value)))


def test_pad_refuses_negative_paddings_and_rank_5():
    with pytest.raises(ValueError, match="non-negative"):
        run_both_ways(lambda **where: PadCuda(np.float32, **where), "layout.cu", [np.zeros((2, 2), np.float32)],
                      call=lambda launcher, x: launcher(x, [[0, -1], [0, 0]]))
    with pytest.raises(ValueError, match="rank <= 4"):
        run_both_ways(lambda **where: PadCuda(np.float32, **where), "layout.cu", [np.zeros((1,) * 5, np.float32)],
                      call=lambda launcher, x: launcher(x, [[0, 1]] * 5))


# -- CONCATENATION ------------------------------------------------------------------------------------


def concat_inputs(count, axis, storage, rank=4, specials=False):
    shape = [2, 3, 4, 5][:rank]
    arrays = []
    for k in range(count):
        piece = list(shape)
        piece[axis] = 1 + (k % 3)
        arrays.append(with_specials(piece, storage) if specials else (RNG.standard_normal(piece) * 4).astype(storage))
    return arrays


@STORAGES
@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
@pytest.mark.parametrize("count", [2, 3, 6, 8, 9])
def test_concatenation_twin_matches_the_kernel_and_numpy(count, axis, storage):
    arrays = concat_inputs(count, axis % 4, storage, specials=True)
    both = run_both_ways(lambda **where: ConcatenationCuda(axis, Act.NONE, storage, **where), "layout.cu", arrays,
                         call=lambda launcher, *xs: launcher(list(xs)))
    assert both.kernel_launches == -(-count // CONCAT_MAX_INPUTS)  # one launch per 8 inputs
    assert_twin_matches(both)
    np.testing.assert_array_equal(both.twin[0], np.concatenate(arrays, axis=axis))  # moved unchanged, inf and NaN too


@pytest.mark.parametrize("count", [2, 4, 5, 7, 9])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_concatenation_of_lower_ranks(rank, count):
    for axis in range(rank):
        arrays = concat_inputs(count, axis, np.float32, rank=rank)
        both = run_both_ways(lambda **where: ConcatenationCuda(axis, Act.NONE, np.float32, **where), "layout.cu", arrays,
                             call=lambda launcher, *xs: launcher(list(xs)))
        assert_twin_matches(both)
        np.testing.assert_array_equal(both.twin[0], np.concatenate(arrays, axis=axis))


@STORAGES
@pytest.mark.parametrize("activation", ACTIVATIONS, ids=lambda a: Act(a).name)
@pytest.mark.parametrize("count", [2, 9])
def test_concatenation_fused_activation(count, activation, storage):
    arrays = concat_inputs(count, 3, storage, specials=True)
    both = run_both_ways(lambda **where: ConcatenationCuda(3, activation, storage, **where), "layout.cu", arrays,
                         call=lambda launcher, *xs: launcher(list(xs)))
    assert_twin_matches(both)
    joined = np.concatenate(arrays, axis=3).astype(np.float32)
    low, high = {Act.RELU: (0, np.inf), Act.RELU6: (0, 6), Act.RELU_N1_TO_1: (-1, 1)}.get(activation, (-np.inf, np.inf))
    want = np.where(joined < low, np.float32(low), joined)
    want = np.where(want > high, np.float32(high), want)  # NaN passes the clamp, as TFLite's
    np.testing.assert_array_equal(both.twin[0], want.astype(storage))


def test_concatenation_skips_empty_inputs_and_groups():
    arrays = [RNG.standard_normal((2, k, 3)).astype(np.float32) for k in (0, 2, 0, 1, 0, 0, 0, 0, 0, 0, 3)]
    assert concatenation_groups([a.shape[1] for a in arrays]) == [(0, 8, 0), (8, 11, 3)]
    both = run_both_ways(lambda **where: ConcatenationCuda(1, Act.NONE, np.float32, **where), "layout.cu", arrays,
                         call=lambda launcher, *xs: launcher(list(xs)))
    assert both.kernel_launches == 2
    assert_twin_matches(both)
    np.testing.assert_array_equal(both.twin[0], np.concatenate(arrays, axis=1))
    assert concatenation_groups([0] * 8 + [1]) == [(8, 9, 0)]  # a group with no rows is not launched


def test_the_same_input_twice():
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    both = run_both_ways(lambda **where: ConcatenationCuda(0, Act.RELU, np.float32, **where), "layout.cu", [x],
                         call=lambda launcher, x: launcher([x, x, x]))
    assert_twin_matches(both)
    np.testing.assert_array_equal(both.twin[0], np.maximum(np.concatenate([x, x, x]), 0))


# -- the gather along every axis (MIRROR_PAD) -----------------------------------------------------------

GATHER_CASES = [
    ((5,), [[2, 1]], True),
    ((3, 4), [[1, 2], [3, 0]], False),
    ((2, 3, 4), [[1, 1], [0, 0], [3, 3]], True),
    ((1, 4, 5, 3), [[0, 0], [2, 3], [4, 1], [0, 0]], False),
    ((2, 3, 3, 2), [[0, 0]] * 4, True),  # nothing padded: a copy
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint8, np.int32])
@pytest.mark.parametrize("shape, paddings, reflect", GATHER_CASES, ids=str)
def test_mirror_gather_twin_matches_the_kernel_and_numpy(shape, paddings, reflect, dtype):
    x = with_specials(shape, dtype) if np.dtype(dtype).kind == "f" else RNG.integers(-100, 100, shape).astype(dtype)
    sources = [mirror_sources(size, a, b, reflect) for size, (a, b) in zip(shape, paddings)]
    out_shape = [len(s) for s in sources]
    both = run_both_ways(lambda **where: GatherAxesCuda(**where), "layout.cu", [x, gather_tables(sources)],
                         call=lambda launcher, x, tables: launcher(x, tables, out_shape))
    assert both.kernel_launches == 1
    assert_twin_matches(both)
    want = np.pad(x, paddings, mode="reflect" if reflect else "symmetric")
    np.testing.assert_array_equal(both.twin[0].view(np.uint8), want.view(np.uint8))  # bits, NaN included


def test_gather_refuses_8_byte_elements():
    x = np.zeros((2, 2), np.float64)
    with pytest.raises(TypeError, match="1, 2 or 4 bytes"):
        run_both_ways(lambda **where: GatherAxesCuda(**where), "layout.cu", [x, gather_tables([[0, 1], [0, 1]])],
                      call=lambda launcher, x, tables: launcher(x, tables, (2, 2)))


# -- one-node and small models through the delegate ---------------------------------------------------

DEVICES = {"host": lambda: "host", "emulated-cuda": emulated_cuda_device}


def build(nodes, inputs, outputs, constants=()) -> bytes:
    """A model: ``inputs`` {name: shape}, ``constants`` {name: array}, ``nodes`` [(op,
    input names, output name, output shape, params)], ``outputs`` names."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    index = {name: graph.add_input(name, list(shape)) for name, shape in inputs.items()}
    index.update({name: graph.add_constant(name, value) for name, value in dict(constants).items()})
    for op, ins, out, shape, params in nodes:
        index[out] = graph.add_tensor(out, list(shape))
        graph.add_operator(op, [index[i] for i in ins], [index[out]], params)
    for name in outputs:
        graph.add_output(index[name])
    builder.add_signature("serving_default", graph)
    return builder.build()


def run_invokes(model, device, *, invokes=4, precision="float32", **options):
    """The delegated model against the CPU path over ``invokes`` invokes with new inputs
    (eager, captured, replayed...); the delegate."""
    delegate = GpuDelegate(device=DEVICES[device](), precision=precision, **options)
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    cpu = Interpreter(model_content=model)
    cpu.allocate_tensors()
    tolerance = 1e-6 if precision == "float32" else 1e-2
    for k in range(invokes):
        rng = np.random.default_rng(100 + k)
        for detail in interpreter.get_input_details():
            value = rng.uniform(-4, 4, tuple(detail["shape"])).astype(np.float32)
            if precision == "float16":
                value = value.astype(np.float16).astype(np.float32)
            interpreter.set_tensor(detail["index"], value)
            cpu.set_tensor(detail["index"], value)
        interpreter.invoke()
        cpu.invoke()
        for detail in cpu.get_output_details():
            np.testing.assert_allclose(
                interpreter.get_tensor(detail["index"]), cpu.get_tensor(detail["index"]), rtol=tolerance, atol=tolerance,
                err_msg=f"{device}, invoke {k + 1}, output {detail['name']}",
            )
    return delegate, interpreter


ONE_NODE = {
    "pad": ([(B.PAD, ["x", "p"], "y", (1, 7, 8, 3), None)], {"x": (1, 4, 5, 3)},
            {"p": np.array([[0, 0], [1, 2], [2, 1], [0, 0]], np.int32)}, 1),
    "concatenation_2": ([(B.CONCATENATION, ["x", "z"], "y", (1, 4, 5, 7), ConcatenationParams(axis=3))],
                        {"x": (1, 4, 5, 3), "z": (1, 4, 5, 4)}, {}, 1),
    "concatenation_6_relu6": ([(B.CONCATENATION, ["x", "z", "x", "c", "z", "x"], "y", (6, 4, 5, 3),
                                ConcatenationParams(axis=0, fused_activation_function=Act.RELU6))],
                              {"x": (1, 4, 5, 3), "z": (1, 4, 5, 3)}, {"c": np.full((2, 4, 5, 3), 7, np.float32)}, 1),
    "concatenation_9": ([(B.CONCATENATION, ["x"] * 9, "y", (1, 36, 5, 3), ConcatenationParams(axis=1))],
                        {"x": (1, 4, 5, 3)}, {}, 2),
    "mirror_pad": ([(B.MIRROR_PAD, ["x", "p"], "y", (1, 6, 9, 3), MirrorPadParams(mode=MirrorPadMode.SYMMETRIC))],
                   {"x": (1, 4, 5, 3)}, {"p": np.array([[0, 0], [1, 1], [2, 2], [0, 0]], np.int32)}, 1),
    "reshape": ([(B.RESHAPE, ["x", "s"], "y", (20, 3), None)], {"x": (1, 4, 5, 3)}, {"s": np.array([20, 3], np.int32)}, 0),
}


@pytest.mark.parametrize("precision", ["float32", "float16"])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", ONE_NODE)
def test_launches_per_node(case, device, precision):
    nodes, inputs, constants, launches = ONE_NODE[case]
    model = build(nodes, inputs, ["y"], constants)
    delegate, interpreter = run_invokes(model, device, precision=precision)  # eager, captured, replayed
    assert all(p.delegated for p in interpreter.node_placements())
    (stats,) = delegate.partition_stats()
    assert stats.graph == "replaying" and stats.graph_nodes == launches, (stats.graph, stats.graph_nodes)
    eager, _ = run_invokes(model, device, invokes=2, precision=precision, cuda_graphs=False)
    assert eager.last_invoke().kernel_launches == launches


# -- RESHAPE as a view: safe wherever a partition keeps or moves values ---------------------------------

VIEW_MODELS = {
    # the output is a view of the partition's input buffer, downloaded after each refill
    "of_a_partition_input": (
        [(B.RESHAPE, ["x", "s"], "y", (6, 4), None), (B.ADD, ["x", "x"], "z", (2, 3, 4), AddParams())],
        {"x": (2, 3, 4)}, ["y", "z"], {"s": np.array([6, 4], np.int32)}, {},
    ),
    # a chain of views, read by a kernel and downloaded too
    "chained_and_read_by_a_kernel": (
        [(B.ADD, ["x", "x"], "a", (2, 3, 4), AddParams()),
         (B.RESHAPE, ["a", "s"], "b", (6, 4), None),
         (B.RESHAPE, ["b", "t"], "c", (24,), None),
         (B.ADD, ["c", "c"], "y", (24,), AddParams(fused_activation_function=Act.RELU)),
         (B.CONCATENATION, ["b", "b"], "z", (12, 4), ConcatenationParams(axis=0))],
        {"x": (2, 3, 4)}, ["y", "z", "c"], {"s": np.array([6, 4], np.int32), "t": np.array([24], np.int32)}, {},
    ),
    # reshape params instead of a shape tensor; the input a constant folded or uploaded
    "of_an_op_output_then_padded": (
        [(B.ADD, ["x", "k"], "a", (4, 6), AddParams()),
         (B.RESHAPE, ["a"], "b", (1, 2, 3, 4), ReshapeParams(new_shape=(1, 2, 3, 4))),
         (B.PAD, ["b", "p"], "y", (1, 4, 3, 5), None)],
        {"x": (4, 6)}, ["y", "b"], {"k": np.arange(24, dtype=np.float32).reshape(4, 6), "p": np.array([[0, 0], [1, 1], [0, 0], [0, 1]], np.int32)}, {},
    ),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", VIEW_MODELS)
def test_reshape_views_hold_the_current_values(case, device):
    nodes, inputs, outputs, constants, options = VIEW_MODELS[case]
    model = build(nodes, inputs, outputs, constants)
    delegate, interpreter = run_invokes(model, device, invokes=5, **options)
    assert all(p.delegated for p in interpreter.node_placements())
    assert [s.graph for s in delegate.partition_stats()] == ["replaying"]


def hand_off_model() -> bytes:
    """Two GPU partitions around a CPU node (SUB, excluded): partition 1 computes a and
    its reshape r, a view of a, which it hands to partition 2 (copied into a device buffer
    that never leaves the device) and w, a view downloaded; partition 2 reshapes u, the
    CPU node's output (a view of its input buffer), and adds the handed-in r."""
    return build(
        [(B.ADD, ["x", "x"], "a", (2, 6), AddParams()),
         (B.SUB, ["x", "x"], "u", (2, 6), None),
         (B.RESHAPE, ["a", "s"], "r", (3, 4), None),
         (B.RESHAPE, ["u", "s"], "v", (3, 4), None),
         (B.ADD, ["r", "v"], "y", (3, 4), AddParams()),
         (B.RESHAPE, ["a", "s"], "w", (3, 4), None)],
        {"x": (2, 6)}, ["y", "w"], {"s": np.array([3, 4], np.int32)},
    )


@pytest.mark.parametrize("device", DEVICES)
def test_reshape_views_across_partitions(device):
    model = hand_off_model()
    delegate, interpreter = run_invokes(model, device, invokes=5, excluded_ops=[B.SUB])
    stats = delegate.partition_stats()
    assert [(s.nodes, s.graph) for s in stats] == [((0, 2, 5), "replaying"), ((3, 4), "replaying")]
    producer, consumer = delegate.kernels
    assert list(producer.handed_out) == list(consumer.handed_in)  # r stays on the device


@pytest.mark.parametrize("device", DEVICES)
def test_reshape_views_without_graphs_and_with_intermediates_exposed(device):
    model = VIEW_MODELS["chained_and_read_by_a_kernel"]
    model = build(model[0], model[1], model[2], model[3])
    run_invokes(model, device, invokes=3, cuda_graphs=False)
    _, interpreter = run_invokes(model, device, invokes=3, expose_intermediates=True)


# -- on a real device (marked gpu: skipped without one; emulated with LITEDELEGATE_TEST_DEVICE) ------


@pytest.mark.gpu
@pytest.mark.parametrize("storage", [np.float32, np.float16], ids=["f32", "f16"])
def test_layout_kernels_on_a_device_compute_their_twins(cuda_device, storage):
    from backends.gpu.device import open_device

    x = with_specials((2, 3, 4, 5), storage)
    arrays = concat_inputs(9, 2, storage, specials=True)
    sources = [mirror_sources(size, a, b, True) for size, (a, b) in zip(x.shape, [[1, 1], [2, 0], [0, 3], [0, 0]])]
    cases = [
        (lambda **w: PadCuda(storage, **w), [x], lambda launcher, x: launcher(x, [[0, 1], [2, 0], [1, 1], [0, 2]], -1.5)),
        (lambda **w: ConcatenationCuda(2, Act.RELU6, storage, **w), arrays, lambda launcher, *xs: launcher(list(xs))),
        (lambda **w: ConcatenationCuda(-2, Act.NONE, storage, **w), arrays[:3], lambda launcher, *xs: launcher(list(xs))),
        (lambda **w: GatherAxesCuda(**w), [x, gather_tables(sources)],
         lambda launcher, x, tables: launcher(x, tables, [len(s) for s in sources])),
    ]
    for make, inputs, call in cases:
        results = []
        for device in (cuda_device(), open_device("host")):
            with device.active():
                launcher = make(**device.launcher_arguments("layout.cu"))
                results.append(device.download(call(launcher, *[device.upload(a) for a in inputs])))
        np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.gpu
def test_a_reshape_only_partition_replays_an_empty_graph_on_a_device(cuda_device):
    """RESHAPE launches nothing, so a partition of only reshapes captures a CUDA graph with
    no node; CUDA instantiates and launches such a graph (were it refused, the partition
    would run eagerly with a warning, never wrongly)."""
    model = build([(B.RESHAPE, ["x", "s"], "y", (20, 3), None)], {"x": (1, 4, 5, 3)}, ["y"], {"s": np.array([20, 3], np.int32)})
    delegate = GpuDelegate(device=cuda_device())
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    for k in range(3):
        x = np.random.default_rng(k).uniform(-4, 4, (1, 4, 5, 3)).astype(np.float32)
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
        interpreter.invoke()
        np.testing.assert_array_equal(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), x.reshape(20, 3))
    (stats,) = delegate.partition_stats()
    assert stats.graph == "replaying" and stats.graph_nodes == 0 and stats.last_invoke.kernel_launches == 0
