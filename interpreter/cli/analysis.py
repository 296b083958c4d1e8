"""Where every node of a model would run, and why not elsewhere, checked for real.

The checks run: the CPU op resolver is asked for every (op, version); when it can run
every node the model is loaded into an ``Interpreter``, the delegate is applied with
``modify_graph_with_delegate`` (its ``DelegationReport`` gives placements and reasons) and
tensors are allocated (kernels' and delegate kernels' ``prepare``). When some node has no
CPU kernel, the interpreter refuses the model, so the delegate's ``prepare`` is run on the
file alone (:mod:`interpreter.cli.dryrun`) and the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from backends.cpu import builtin_op_resolver
from delegate_sdk.delegate import DelegateError
from delegate_sdk.op_resolver import OpResolver, find_unresolved_operators
from delegate_sdk.partition import PlanNode, partition_graph_into_independent_node_subsets
from interpreter import Interpreter
from interpreter.cli.common import DelegateChoice, LoadedModel
from interpreter.cli.dryrun import dry_run
from interpreter.cli.modelinfo import min_runtime_versions, node_tensors, size_statistics, tensor_info
from schema.enums import builtin_operator_name

CPU = "CPU"
INTERPRETER = "interpreter"
DRY_RUN = "dry run"


@dataclass
class NodeAnalysis:
    subgraph: int
    index: int
    op: str
    builtin_code: int
    version: int
    inputs: list[dict[str, Any] | None]
    outputs: list[dict[str, Any]]
    cpu_kernel: bool  #: a CPU kernel is registered for (op, version)
    cpu_problem: str | None  #: why the CPU cannot run it
    runs_on: str | None  #: "CPU", the delegate's name, or None when nothing can run it
    partition: int | None  #: the partition's id (see ``Analysis.partitions``)
    why_not_delegated: list[str] = field(default_factory=list)

    @property
    def why_not_elsewhere(self) -> list[str]:
        reasons = list(self.why_not_delegated)
        if self.cpu_problem and self.runs_on != CPU:
            reasons.append(f"CPU: {self.cpu_problem}")
        return reasons

    def to_json(self) -> dict[str, Any]:
        return {
            "subgraph": self.subgraph,
            "index": self.index,
            "op": self.op,
            "builtin_code": self.builtin_code,
            "version": self.version,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "cpu_kernel": self.cpu_kernel,
            "cpu_problem": self.cpu_problem,
            "runs_on": self.runs_on,
            "partition": self.partition,
            "why_not_delegated": self.why_not_delegated,
        }


@dataclass
class PartitionAnalysis:
    id: int
    subgraph: int
    delegate: str
    nodes: list[int]
    inputs: list[int]  #: runtime tensors entering the partition (constants excluded)
    outputs: list[int]  #: tensors leaving it

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Analysis:
    label: str
    delegate: DelegateChoice
    method: str  #: INTERPRETER or DRY_RUN
    nodes: list[NodeAnalysis]
    partitions: list[PartitionAnalysis]
    subgraph_names: list[str]
    load_error: str | None = None
    delegate_error: str | None = None
    allocate_error: str | None = None
    min_runtime_version: dict[str, Any] = field(default_factory=dict)
    size: dict[str, Any] = field(default_factory=dict)
    edges: list[tuple[int, int, int, str]] = field(default_factory=list)  #: (subgraph, from, to, tensor name)

    def count(self, runs_on: str | None) -> int:
        return sum(1 for n in self.nodes if n.runs_on == runs_on)

    @property
    def num_delegated(self) -> int:
        return sum(1 for n in self.nodes if n.runs_on not in (CPU, None))

    @property
    def can_load(self) -> bool:
        return self.load_error is None

    def summary(self) -> dict[str, Any]:
        return {
            "nodes": len(self.nodes),
            "delegated": self.num_delegated,
            "cpu": self.count(CPU),
            "unsupported": self.count(None),
            "partitions": len(self.partitions),
            "no_cpu_kernel": sum(1 for n in self.nodes if not n.cpu_kernel),
        }

    def to_json(self) -> dict[str, Any]:
        delegate = self.delegate.delegate
        return {
            "model": self.label,
            "delegate": {
                "name": self.delegate.name,
                "kind": self.delegate.kind,
                "description": self.delegate.describe(),
                "version_caps": dict(sorted((_op_label(op), v) for op, v in getattr(delegate, "version_caps", {}).items())),
                "excluded_ops": sorted(_op_label(op) for op in getattr(delegate, "excluded_ops", ())),
                "note": self.delegate.note or None,
                "error": self.delegate_error,
            },
            "method": self.method,
            "load_error": self.load_error,
            "allocate_error": self.allocate_error,
            "summary": self.summary(),
            "subgraphs": [
                {
                    "index": i,
                    "name": name,
                    "nodes": [n.to_json() for n in self.nodes if n.subgraph == i],
                    "partitions": [p.to_json() for p in self.partitions if p.subgraph == i],
                }
                for i, name in enumerate(self.subgraph_names)
            ],
            "min_runtime_version": self.min_runtime_version,
            "size": self.size,
        }


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


#: (subgraph, node) -> (runs on, partition key or None, rejection reasons)
Placements = dict[tuple[int, int], tuple[str, Any, tuple[str, ...]]]


def _place_with_interpreter(interpreter: Interpreter, choice: DelegateChoice) -> tuple[Placements, str | None, str | None]:
    """Apply the delegate for real and read the placements; then allocate tensors."""
    delegate_error = allocate_error = None
    if choice.delegate is not None:
        try:
            interpreter.modify_graph_with_delegate(choice.delegate)
        except DelegateError as error:  # failed in prepare (the plan is restored), dynamic tensors, a bad declaration
            report = getattr(error, "report", None)
            delegate_error = report.error if report is not None and report.error else _first_line(error)
    placements = {
        (p.subgraph, p.node): (p.runs_on, (p.subgraph, p.partition) if p.partition is not None else None, p.rejections)
        for p in interpreter.node_placements()
    }
    try:
        interpreter.allocate_tensors()
    except Exception as error:
        allocate_error = _first_line(error)
    return placements, delegate_error, allocate_error


def _place_by_dry_run(model, choice: DelegateChoice) -> tuple[Placements, str | None]:
    """The delegate's ``prepare`` on each subgraph of the file; the rest stays on the CPU."""
    placements: Placements = {}
    delegate_error = None
    for subgraph in model.subgraphs:
        result = None
        if choice.delegate is not None:
            try:
                result = dry_run(choice.delegate, subgraph)
            except Exception as error:
                delegate_error = _first_line(error)
        for node in range(len(subgraph.operators)):
            placements[(subgraph.index, node)] = (CPU, None, tuple(result.reasons.get(node, ())) if result else ())
        for k, nodes in enumerate(result.partitions if result else ()):
            for node in nodes:
                placements[(subgraph.index, node)] = (choice.name, (subgraph.index, k), ())
    return placements, delegate_error


def analyze(loaded: LoadedModel, choice: DelegateChoice, resolver: OpResolver | None = None) -> Analysis:
    """Place every node of ``loaded`` with ``choice``'s delegate (see the module docstring)."""
    resolver = resolver if resolver is not None else builtin_op_resolver()
    model = loaded.model
    unresolved = {(u.subgraph, u.node): u for u in find_unresolved_operators(model, resolver)}
    load_error = delegate_error = allocate_error = None
    interpreter = None
    if unresolved:
        load_error = (
            f"UnsupportedOperatorError: the CPU op resolver cannot run {len(unresolved)} node(s), so the "
            "interpreter refuses this model"
        )
    else:
        try:
            interpreter = Interpreter(model_content=loaded.data, op_resolver=resolver)
        except Exception as error:  # a kernel refusing a node at init
            load_error = _first_line(error)
    if interpreter is not None:
        method = INTERPRETER
        placements, delegate_error, allocate_error = _place_with_interpreter(interpreter, choice)
    else:
        method = DRY_RUN
        placements, delegate_error = _place_by_dry_run(model, choice)

    partition_ids: dict[Any, int] = {}
    nodes = []
    edges = []
    for subgraph in model.subgraphs:
        producer: dict[int, int] = {}
        for operator in subgraph.operators:
            key = (subgraph.index, operator.index)
            runs_on, partition_key, reasons = placements[key]
            problem = unresolved[key].describe().split(": ", 1)[1] if key in unresolved else None
            if key in unresolved and runs_on == CPU:
                runs_on = None
            partition = None
            if partition_key is not None:
                partition = partition_ids.setdefault(partition_key, len(partition_ids))
            inputs, outputs = node_tensors(subgraph, operator)
            nodes.append(NodeAnalysis(
                subgraph=subgraph.index, index=operator.index, op=operator.op_name, builtin_code=operator.builtin_code,
                version=operator.version, inputs=[tensor_info(t) for t in inputs], outputs=[tensor_info(t) for t in outputs],
                cpu_kernel=key not in unresolved, cpu_problem=problem, runs_on=runs_on, partition=partition,
                why_not_delegated=list(reasons),
            ))
            for t in operator.inputs:
                if t in producer:
                    edges.append((subgraph.index, producer[t], operator.index, subgraph.tensors[t].name))
            for t in operator.outputs:
                producer[t] = operator.index

    return Analysis(
        label=loaded.label,
        delegate=choice,
        method=method,
        nodes=nodes,
        partitions=_partitions(model, nodes),
        subgraph_names=[s.name for s in model.subgraphs],
        load_error=load_error,
        delegate_error=delegate_error,
        allocate_error=allocate_error,
        min_runtime_version=min_runtime_versions(model),
        size=size_statistics(model),
        edges=edges,
    )


def _partitions(model, nodes: list[NodeAnalysis]) -> list[PartitionAnalysis]:
    """Each partition's nodes and boundary tensors (TFLite's node-subset partitioning)."""
    result = []
    by_id: dict[int, list[NodeAnalysis]] = {}
    for node in nodes:
        if node.partition is not None:
            by_id.setdefault(node.partition, []).append(node)
    for pid, members in sorted(by_id.items()):
        subgraph = model.subgraphs[members[0].subgraph]
        plan = [PlanNode(op.index, op.inputs, op.outputs) for op in subgraph.operators]
        member_set = {n.index for n in members}
        subsets = partition_graph_into_independent_node_subsets(plan, member_set, subgraph.outputs)
        inputs: set[int] = set()
        outputs: set[int] = set()
        for subset in subsets:
            if subset.delegated and set(subset.nodes) <= member_set:
                inputs.update(t for t in subset.input_tensors if not subgraph.tensors[t].is_constant)
                outputs.update(subset.output_tensors)
        result.append(PartitionAnalysis(
            id=pid, subgraph=subgraph.index, delegate=members[0].runs_on or "", nodes=sorted(member_set),
            inputs=sorted(inputs), outputs=sorted(outputs),
        ))
    return result


def _op_label(op: int | str) -> str:
    """A builtin op's name, or a custom op's own name (delegates may cap custom ops by name)."""
    return op if isinstance(op, str) else builtin_operator_name(op)
