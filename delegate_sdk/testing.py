"""Testing helpers for delegate authors (use them in pytest).

- :func:`single_op_model` builds a one-node model of an op *at a given version*
  (float32, int8, dilation... whatever that version means), with the project's builder.
- :func:`plan_delegation` is a dry run: which nodes a delegate would take and why it
  would leave the others. It needs no kernels, so it works for every version,
  including those the CPU backend cannot run yet.
- :func:`assert_takes_versions_up_to` checks the version cap: versions 1..N taken,
  N+1 rejected with a reason that names the version.
- :func:`assert_matches_cpu` runs a model with and without the delegate and compares.
- :class:`ReferenceDelegate` takes the nodes of a support table and runs them with their
  own CPU kernels on buffers it owns: a stand-in device for partitioning tests.

The last two run models, so they import the interpreter (this module is a test tool,
the one place in ``delegate_sdk`` allowed to).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from delegate_sdk.context import DelegateContext
from delegate_sdk.delegate import Delegate, DelegateKernel, DelegateParams, NodeDecision, SimpleDelegate
from delegate_sdk.node import Node
from delegate_sdk.partition import NodeSubset, PlanNode, partition_graph_into_independent_node_subsets
from delegate_sdk.registration import Registration
from delegate_sdk.tensor import Allocation, RuntimeTensor
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator, Padding, builtin_operator_name
from schema.model import Model
from schema.params import AddParams, DepthwiseConv2DParams, MulParams, SubParams

# -- one-node models at a chosen version ----------------------------------------------------------

_INT8_IN = quantization(0.05, 2)
_INT8_OUT = quantization(0.1, -3)


def _binary(op: int, params_class: type, int8: bool) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    kwargs = {"quantization": _INT8_IN} if int8 else {}
    dtype = np.int8 if int8 else np.float32
    x = graph.add_input("x", [1, 4, 4, 3], dtype, **kwargs)
    y = graph.add_input("y", [1, 4, 4, 3], dtype, **kwargs)
    out = graph.add_tensor("out", [1, 4, 4, 3], dtype, **({"quantization": _INT8_OUT} if int8 else {}))
    graph.add_operator(op, [x, y], [out], params_class())
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


def _depthwise(dilation: int, int8: bool) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    rng = np.random.default_rng(0)
    params = DepthwiseConv2DParams(padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1,
                                   dilation_w_factor=dilation, dilation_h_factor=dilation)
    if int8:
        x = graph.add_input("x", [1, 8, 8, 4], np.int8, quantization=_INT8_IN)
        w = graph.add_constant("w", rng.integers(-127, 128, (1, 3, 3, 4)).astype(np.int8), quantization=quantization([0.02] * 4, 0, 3))
        b = graph.add_constant("b", np.zeros(4, np.int32), quantization=quantization([0.001] * 4, 0))
        out = graph.add_tensor("out", [1, 8, 8, 4], np.int8, quantization=_INT8_OUT)
    else:
        x = graph.add_input("x", [1, 8, 8, 4])
        w = graph.add_constant("w", rng.standard_normal((1, 3, 3, 4)).astype(np.float32))
        b = graph.add_constant("b", rng.standard_normal(4).astype(np.float32))
        out = graph.add_tensor("out", [1, 8, 8, 4])
    graph.add_operator(BuiltinOperator.DEPTHWISE_CONV_2D, [x, w, b], [out], params)
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


#: (op, version) -> a function building a one-node model stamped with that version.
VERSION_RECIPES: dict[tuple[int, int], Callable[[], bytes]] = {
    (BuiltinOperator.ADD, 1): lambda: _binary(BuiltinOperator.ADD, AddParams, int8=False),
    (BuiltinOperator.ADD, 2): lambda: _binary(BuiltinOperator.ADD, AddParams, int8=True),
    (BuiltinOperator.SUB, 1): lambda: _binary(BuiltinOperator.SUB, SubParams, int8=False),
    (BuiltinOperator.SUB, 2): lambda: _binary(BuiltinOperator.SUB, SubParams, int8=True),
    (BuiltinOperator.MUL, 1): lambda: _binary(BuiltinOperator.MUL, MulParams, int8=False),
    (BuiltinOperator.MUL, 2): lambda: _binary(BuiltinOperator.MUL, MulParams, int8=True),
    (BuiltinOperator.DEPTHWISE_CONV_2D, 1): lambda: _depthwise(1, int8=False),
    (BuiltinOperator.DEPTHWISE_CONV_2D, 2): lambda: _depthwise(2, int8=False),
    (BuiltinOperator.DEPTHWISE_CONV_2D, 3): lambda: _depthwise(2, int8=True),
}


def single_op_model(op: int, version: int) -> bytes:
    """A one-node model of ``op`` stamped ``version`` because it needs that version.

    Raises:
      KeyError: no recipe for that (op, version); add one to ``VERSION_RECIPES``.
    """
    try:
        recipe = VERSION_RECIPES[(int(op), int(version))]
    except KeyError:
        known = sorted(v for (o, v) in VERSION_RECIPES if o == int(op))
        raise KeyError(
            f"no recipe for {builtin_operator_name(op)} v{version} (recipes exist for versions {known}); "
            "add one to delegate_sdk.testing.VERSION_RECIPES"
        ) from None
    model = recipe()
    stamped = Model.from_bytes(model).subgraphs[0].operators[0].version
    if stamped != version:
        raise AssertionError(f"recipe for {builtin_operator_name(op)} v{version} produced a v{stamped} node")
    return model


# -- dry runs ---------------------------------------------------------------------------------------

@dataclass
class DelegationPlan:
    """What a delegate would do to a model's main subgraph (a dry run, no kernels)."""

    taken: list[int] = field(default_factory=list)
    partitions: list[list[int]] = field(default_factory=list)
    reasons: dict[int, list[str]] = field(default_factory=dict)

    def reason(self, node: int) -> str:
        return "; ".join(self.reasons.get(node, []))


class _ModelContext(DelegateContext):
    """A DelegateContext over a model file alone: nodes, versions, tensors, no kernels."""

    def __init__(self, model: Model) -> None:
        subgraph = model.subgraphs[0]
        self.tensors = [
            RuntimeTensor(t.index, t.name, t.type, t.shape, shape_signature=t.shape_signature, quantization=t.quantization,
                          sparsity=t.sparsity, data=t.data,
                          allocation=Allocation.CONSTANT if t.data is not None else Allocation.NONE, is_variable=t.is_variable)
            for t in subgraph.tensors
        ]
        self.nodes = [Node(op.index, op.inputs, op.outputs, op.params, op.custom_options, op.intermediates) for op in subgraph.operators]
        self.registrations = [Registration(op.builtin_code, op.custom_name, op.version) for op in subgraph.operators]
        self.outputs = list(subgraph.outputs)
        self.plan = DelegationPlan()

    @property
    def execution_plan(self) -> list[int]:
        return list(range(len(self.nodes)))

    def get_node_and_registration(self, node_index: int):
        return self.nodes[node_index], self.registrations[node_index]

    def _subsets(self, nodes: Sequence[int]) -> list[NodeSubset]:
        plan = [PlanNode(n.index, n.inputs, n.outputs) for n in self.nodes]
        return partition_graph_into_independent_node_subsets(plan, nodes, self.outputs)

    def preview_delegate_partitioning(self, nodes_to_replace: Sequence[int]) -> list[NodeSubset]:
        return [s for s in self._subsets(nodes_to_replace) if s.delegated]

    def replace_node_subsets_with_delegate_kernels(self, registration, nodes_to_replace, delegate) -> None:
        self.plan.taken = sorted(nodes_to_replace)
        self.plan.partitions = [s.nodes for s in self.preview_delegate_partitioning(nodes_to_replace)]

    def record_decision(self, decision: NodeDecision) -> None:
        if not decision.accepted:
            self.plan.reasons.setdefault(decision.node, []).append(decision.reason)


def plan_delegation(delegate: Delegate, model: bytes | Model) -> DelegationPlan:
    """Dry run: which nodes of the main subgraph ``delegate`` would take, and why not the rest."""
    context = _ModelContext(model if isinstance(model, Model) else Model.from_bytes(model))
    delegate.prepare(context)
    return context.plan


def assert_takes_versions_up_to(make_delegate: Callable[[], Delegate], op: int, max_version: int) -> None:
    """Versions 1..max_version of ``op`` are taken; max_version + 1 is rejected with a reason
    naming the version. Versions without a recipe in ``VERSION_RECIPES`` are skipped below
    the cap; the version above the cap must have one."""
    name = builtin_operator_name(op)
    checked = 0
    for version in range(1, max_version + 1):
        if (int(op), version) not in VERSION_RECIPES:
            continue
        plan = plan_delegation(make_delegate(), single_op_model(op, version))
        assert plan.taken == [0], f"{name} v{version} should be delegated, but was left: {plan.reason(0)}"
        checked += 1
    assert checked, f"no recipe for any version of {name} up to {max_version}"
    over = max_version + 1
    plan = plan_delegation(make_delegate(), single_op_model(op, over))
    assert plan.taken == [], f"{name} v{over} is above the cap {max_version} but was delegated"
    assert f"v{over}" in plan.reason(0), f"the rejection should name the version: {plan.reason(0)!r}"


# -- running with and without a delegate ----------------------------------------------------------

def _random_inputs(interpreter, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    values = []
    for detail in interpreter.get_input_details():
        dtype, shape = np.dtype(detail["dtype"]), tuple(detail["shape"])
        if dtype.kind == "f":
            values.append(rng.uniform(-2, 2, shape).astype(dtype))
        elif dtype == np.bool_:
            values.append(rng.integers(0, 2, shape).astype(bool))
        else:
            values.append(rng.integers(-100, 100, shape).astype(dtype))
    return values


def run_model(model: bytes, inputs: Sequence[np.ndarray], delegates: Sequence[Delegate] = ()) -> tuple[list[np.ndarray], Any]:
    """Outputs of the main subgraph after one invoke, and the interpreter (to read its
    delegation report)."""
    interpreter = _interpreter(model, delegates)
    return _invoke(interpreter, inputs), interpreter


def _interpreter(model: bytes, delegates: Sequence[Delegate] = ()) -> Any:
    from interpreter import Interpreter  # a test tool may run models

    interpreter = Interpreter(model_content=model)
    for delegate in delegates:
        interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    return interpreter


def _invoke(interpreter: Any, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def assert_matches_cpu(
    model: bytes,
    make_delegates: Callable[[], Sequence[Delegate]] | Callable[[], Delegate],
    inputs: Sequence[np.ndarray] | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    seed: int = 0,
    require_delegation: bool = True,
    invokes: int = 3,
) -> Any:
    """Run ``model`` on the CPU alone and with the delegate(s), ``invokes`` times with new
    input values each time; the outputs must agree at every invoke.

    A delegate's later invokes often take other paths than its first (a CUDA graph
    captured at the second and replayed from the third, cached buffers), so one invoke
    proves little. ``inputs`` are the first invoke's (default: random); invoke ``k``
    uses them rolled by ``k`` places (same values, other positions), or new random ones.
    With ``require_delegation`` (the default) at least one node must have been delegated,
    so the comparison cannot pass vacuously. Returns the delegated interpreter.
    """
    delegates = make_delegates()
    delegates = list(delegates) if isinstance(delegates, (list, tuple)) else [delegates]
    cpu, delegated = _interpreter(model), _interpreter(model, delegates)
    if require_delegation:
        assert any(p.delegated for p in delegated.node_placements()), "no node was delegated"
    for k in range(invokes):
        if inputs is None:
            values = _random_inputs(cpu, seed + k)
        else:
            values = [np.roll(np.asarray(x), k * 7) for x in inputs]
        expected, got = _invoke(cpu, values), _invoke(delegated, values)
        for i, (g, e) in enumerate(zip(got, expected)):
            where = f"invoke {k + 1}, output {i}"
            assert g.shape == e.shape and g.dtype == e.dtype, f"{where}: {g.dtype}{g.shape} vs CPU {e.dtype}{e.shape}"
            if e.dtype.kind == "f":
                np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=where)
            else:
                np.testing.assert_array_equal(g, e, err_msg=where)
    return delegated


# -- a reference delegate ---------------------------------------------------------------------------

class ReferenceDelegateKernel(DelegateKernel):
    """Runs the replaced nodes with their own (CPU) kernels; internal tensors live in
    buffers this kernel owns, as they would on a device."""

    def init(self, context: DelegateContext, params: DelegateParams) -> None:
        self.params = params
        self.steps = [context.get_node_and_registration(i) for i in params.nodes_to_replace]
        self.boundary = set(params.input_tensors) | set(params.output_tensors)
        self.owned: dict[int, np.ndarray] = {}

    def prepare(self, context: DelegateContext, node: Node) -> None:
        self.owned.clear()
        for inner, registration in self.steps:
            if registration.prepare is not None:
                registration.prepare(context, inner)
            for t in inner.outputs:
                tensor = context.tensors[t]
                if t not in self.boundary and not tensor.is_constant:
                    self.owned[t] = tensor.data = np.empty(tensor.shape, dtype=tensor.dtype)

    def eval(self, context: DelegateContext, node: Node) -> None:
        for inner, registration in self.steps:
            registration.invoke(context, inner)


class ReferenceDelegate(SimpleDelegate):
    """Takes the ops in ``support_table`` (op -> max version), and optionally only the
    node indices in ``only_nodes``; runs them with their own CPU kernels."""

    kernel_class = ReferenceDelegateKernel

    def __init__(self, support_table: Mapping[int, int | frozenset[int]], name: str = "ReferenceDelegate",
                 only_nodes: Sequence[int] | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.support_table = {int(op): v if isinstance(v, int) else frozenset(v) for op, v in support_table.items()}
        self.name = name
        self.only_nodes = set(only_nodes) if only_nodes is not None else None

    def node_rejection_reason(self, context, node, registration) -> str | None:
        if self.only_nodes is not None and node.index not in self.only_nodes:
            return "not in this test's support set"
        return None
