"""A node is prepared again at invoke only when the shape of one of its inputs changed.

Nodes that read a tensor whose shape is only known at invoke (READ_VARIABLE's value, a
SLICE whose size is an input...) cannot be prepared by ``allocate_tensors``. LiteRT
prepares them again only after a tensor's shape actually changed; so do we, per node.
The calls are counted by a resolver whose registrations count their ``prepare``; the
outputs are compared with ai-edge-litert's reference kernels (``BUILTIN_REF``).
"""

from __future__ import annotations

import dataclasses
import pathlib
from collections import Counter

import numpy as np
from oracle import assert_outputs_equal, litert_interpreter, run_interpreter

from backends.cpu import builtin_op_resolver
from delegate_sdk.op_resolver import OpResolver
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as Op
from schema.params import AddParams, ReducerParams

STREAMING = pathlib.Path(__file__).parents[1] / "data" / "models" / "real" / "mww_hey_jarvis_int8_streaming.tflite"


class CountingResolver(OpResolver):
    """The builtin CPU kernels, each registration's ``prepare`` counted per node index."""

    def __init__(self) -> None:
        self.inner = builtin_op_resolver()
        self.prepares: Counter[int] = Counter()

    def count(self, registration):
        if registration is None or registration.prepare is None:
            return registration
        original = registration.prepare

        def prepare(context, node):
            if getattr(context, "index", 0) == 0:  # the main subgraph's nodes
                self.prepares[node.index] += 1
            return original(context, node)

        return dataclasses.replace(registration, prepare=prepare)

    def find_op(self, op, version):
        return self.count(self.inner.find_op(op, version))

    def find_custom(self, name, version):
        return self.count(self.inner.find_custom(name, version))

    def builtin_versions(self, op):
        return self.inner.builtin_versions(op)

    def custom_versions(self, name):
        return self.inner.custom_versions(name)


def streaming_input(interpreter, rng):
    detail = interpreter.get_input_details()[0]
    return rng.integers(-128, 128, detail["shape"]).astype(detail["dtype"])


def test_a_streaming_model_with_steady_shapes_prepares_nothing_after_its_first_invoke():
    resolver = CountingResolver()
    ours = Interpreter(model_path=STREAMING, op_resolver=resolver)
    ours.allocate_tensors()
    index = ours.get_input_details()[0]["index"]
    rng = np.random.default_rng(0)
    ours.set_tensor(index, streaming_input(ours, rng))
    ours.invoke()  # the first invoke learns the variables' shapes and prepares what reads them
    assert sum(resolver.prepares.values()) > 0
    resolver.prepares.clear()
    for _ in range(20):
        ours.set_tensor(index, streaming_input(ours, rng))
        ours.invoke()
    assert sum(resolver.prepares.values()) == 0


def test_a_streaming_model_with_steady_shapes_matches_litert_at_every_intermediate_tensor():
    """Over 30 invokes (state carried in resource variables), every tensor a node writes
    (both runtimes keep every tensor: ``experimental_preserve_all_tensors``)."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    theirs = LiteRT(
        model_path=str(STREAMING),
        experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
        experimental_preserve_all_tensors=True,
    )
    ours = Interpreter(model_path=STREAMING, experimental_preserve_all_tensors=True)
    theirs.allocate_tensors()
    ours.allocate_tensors()
    index = ours.get_input_details()[0]["index"]
    written = [t for op in ours.get_ops_details() for t in op["outputs"] if op["op_name"] != "VAR_HANDLE"]
    rng = np.random.default_rng(1)
    compared = 0
    for step in range(30):
        x = streaming_input(ours, rng)
        theirs.set_tensor(index, x)
        ours.set_tensor(index, x)
        theirs.invoke()
        ours.invoke()
        for t in written:
            expected, got = theirs.get_tensor(t), ours.get_tensor(t)
            assert got.dtype == expected.dtype and got.shape == expected.shape, (step, t)
            np.testing.assert_array_equal(got, expected, err_msg=f"invoke {step}, tensor {t}")
            compared += 1
    assert compared >= 30 * 30


def sliced_model() -> bytes:
    """main(x[6], n[1]): s = SLICE(x, [0], n) (its shape known only at invoke);
    doubled = s + s; total = SUM(s) (a scalar whatever n); total2 = total + total;
    negated = NEG(x) (static: prepared once by allocate_tensors)."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [6])
    n = graph.add_input("n", [1], np.int32)
    begin = graph.add_constant("begin", np.array([0], np.int32))
    axis = graph.add_constant("axis", np.array([0], np.int32))
    s = graph.add_tensor("s", [6], shape_signature=[-1])
    doubled = graph.add_tensor("doubled", [6], shape_signature=[-1])
    total = graph.add_tensor("total", [])
    total2 = graph.add_tensor("total2", [])
    negated = graph.add_tensor("negated", [6])
    graph.add_operator(Op.SLICE, [x, begin, n], [s])  # node 0
    graph.add_operator(Op.ADD, [s, s], [doubled], AddParams())  # node 1
    graph.add_operator(Op.SUM, [s, axis], [total], ReducerParams(keep_dims=False))  # node 2
    graph.add_operator(Op.ADD, [total, total], [total2], AddParams())  # node 3
    graph.add_operator(Op.NEG, [x], [negated])  # node 4
    for tensor in (doubled, total2, negated):
        graph.add_output(tensor)
    return builder.build()


def test_a_shape_change_at_invoke_prepares_again_exactly_the_nodes_whose_input_shapes_changed():
    model = sliced_model()
    resolver = CountingResolver()
    ours, theirs = Interpreter(model_content=model, op_resolver=resolver), litert_interpreter(model)
    x = np.arange(1, 7, dtype=np.float32)
    prepared = []
    for size in (2, 2, 5, 5, 5, 3, 3):
        feeds = [x, np.array([size], np.int32)]
        expected = run_interpreter(theirs, feeds)
        resolver.prepares.clear()
        got = run_interpreter(ours, feeds)
        assert_outputs_equal(got, expected)
        prepared.append(dict(resolver.prepares))
    first_allocation = prepared[0]
    assert first_allocation[4] == 1 and first_allocation[1] == first_allocation[2] == 1
    # n = 2 again: nothing; 5: SLICE's output grew, so the ADD and the SUM that read it
    # (not the ADD of SUM's scalar, whose input shape holds, nor NEG); 5, 5: nothing; 3: the same two.
    assert prepared[1:] == [{}, {1: 1, 2: 1}, {}, {}, {1: 1, 2: 1}, {}]


def variable_slice_model() -> bytes:
    """main(x[6], n[1]): CALL_ONCE(init: v = [10, 20]); y = READ_VARIABLE(v); doubled =
    y + y; v = SLICE(x, [0], n): the variable's shape follows n from the next invoke on."""
    from model_helpers import init_subgraph

    from schema.enums import TensorType
    from schema.params import CallOnceParams, VarHandleParams

    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [6])
    n = graph.add_input("n", [1], np.int32)
    begin = graph.add_constant("begin", np.array([0], np.int32))
    handle = graph.add_tensor("handle", [], TensorType.RESOURCE)
    y = graph.add_tensor("y", [2], shape_signature=[-1])
    doubled = graph.add_tensor("doubled", [2], shape_signature=[-1])
    s = graph.add_tensor("s", [6], shape_signature=[-1])
    graph.add_operator(Op.CALL_ONCE, [], [], CallOnceParams(init_subgraph_index=1))
    graph.add_operator(Op.VAR_HANDLE, [], [handle], VarHandleParams(shared_name="v"))
    graph.add_operator(Op.READ_VARIABLE, [handle], [y])
    graph.add_operator(Op.ADD, [y, y], [doubled], AddParams())
    graph.add_operator(Op.SLICE, [x, begin, n], [s])
    graph.add_operator(Op.ASSIGN_VARIABLE, [handle, s], [])
    graph.add_output(doubled)
    init_subgraph(builder)
    return builder.build()


def test_steady_nodes_run_their_bound_steps_without_checks_until_a_shape_changes():
    """Once every node prepared at invoke is steady, an invoke runs the bound functions
    themselves (``_steady_plan``); READ_VARIABLE's output getting a new array (the
    variable grew) hands the rest of that invoke to the checked steps, and the steady
    plan is made again once the new shapes hold. (Expected values by hand: LiteRT keeps
    a variable's first shape, see tests/cpu/test_variables.py.)"""
    ours = Interpreter(model_content=variable_slice_model())
    ours.allocate_tensors()
    x = np.arange(1, 7, dtype=np.float32)
    inputs = [d["index"] for d in ours.get_input_details()]
    output = ours.get_output_details()[0]["index"]
    variable = np.array([10, 20], np.float32)
    steady = []
    for size in (2, 2, 2, 2, 5, 5, 5, 5, 1, 1):
        ours.set_tensor(inputs[0], x)
        ours.set_tensor(inputs[1], np.array([size], np.int32))
        ours.invoke()
        np.testing.assert_array_equal(ours.get_tensor(output), variable + variable)
        variable = x[:size]
        steady.append(ours._main._steady is not None)
    assert steady[3] and steady[7] and not steady[4]  # steady at n = 2 and 5; not just after the change


def test_the_streaming_model_leaves_the_thread_pools_alone():
    """Every kernel of the streaming model says its BLAS calls are below what OpenBLAS
    splits over threads (``CpuKernel.blas_work``): once steady, its invokes enter no
    ``ThreadLimit``; a model with a large matmul keeps it."""
    from backends.cpu.common import ThreadLimit

    ours = Interpreter(model_path=STREAMING)
    ours.allocate_tensors()
    index = ours.get_input_details()[0]["index"]
    rng = np.random.default_rng(0)
    for _ in range(3):
        ours.set_tensor(index, streaming_input(ours, rng))
        ours.invoke()
    assert ours._main._steady is not None and not isinstance(ours._main._invoke_limit, ThreadLimit)
    face = Interpreter(model_path=STREAMING.parent / "mp_face_detection_short_range.tflite")
    face.allocate_tensors()
    assert isinstance(face._main._invoke_limit, ThreadLimit)
