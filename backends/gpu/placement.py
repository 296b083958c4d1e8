"""Placement that pays: which of the GPU delegate's partitions run on the device.

``GpuDelegate(placement="all")`` (the default, as LiteRT's GPU delegate) takes every
partition of supported nodes. ``GpuDelegate(placement="auto")`` times them first, when the
delegate is applied, and keeps on the CPU every partition where the device does not win:

1. The candidates are the partitions "all" would make (after ``max_delegated_partitions``
   and ``min_nodes_per_partition``).
2. One trial runs the subgraph with every candidate on the device, one with none (the CPU
   path): each gives the time of every candidate (its delegate node's invoke, or the sum
   of its nodes' CPU invokes) and the time of the whole subgraph.
3. A candidate goes to the device when its device time is strictly below its CPU time
   (a tie stays on the CPU: the device must win).
4. Per-partition times do not add up (transfers at partition boundaries, caches, a
   hand-off between partitions that the split removes): when the choice is neither all
   nor none, a third trial times it end to end. The fastest of the three placements (CPU
   path, the choice, all on the device) is kept; on equal times the one with fewer
   partitions on the device wins (CPU path, then the choice, then all).

Trials run on a private copy of the subgraph's tensors and nodes (the CPU kernels'
``init``/``prepare``/``invoke`` and the delegate's own partition kernels, on the same
device), with the subgraph's current shapes and inputs filled with fixed values: 2
warm-up invokes (the second captures the CUDA graphs), then 5 timed ones, medians kept.
A subgraph the trial cannot copy (control flow, resource variables, dynamic-sized
tensors) is placed as "all", and the report says why.

The timing source is a callable (``GpuDelegate(placement_timing=...)``), so that tests on
the emulated device decide from given costs. The decision is cached per subgraph content
and device (:class:`PlacementCache`: in memory for the process, and in a directory if
given), so the next load of the same model on the same device does not time again.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from delegate_sdk.delegate import DelegateParams
from delegate_sdk.node import Node
from delegate_sdk.partition import PlanNode, partition_graph_into_independent_node_subsets
from delegate_sdk.tensor import Allocation, RuntimeTensor
from schema.enums import BuiltinOperator

PLACEMENTS = ("all", "auto")

#: The three placements compared end to end, in the order that breaks ties.
CPU_PATH, CHOSEN, ALL_ON_DEVICE = "CPU path", "chosen", "all on the device"
TIE_ORDER = (CPU_PATH, CHOSEN, ALL_ON_DEVICE)

WARMUP_INVOKES = 2
TIMED_INVOKES = 5


@dataclass(frozen=True)
class Candidate:
    """One partition that "all" would delegate: its subgraph and nodes (plan order)."""

    subgraph: int
    nodes: tuple[int, ...]
    ops: tuple[str, ...] = ()

    def describe(self) -> str:
        shown = ", ".join(self.ops[:4]) + (", ..." if len(self.ops) > 4 else "")
        return f"nodes {list(self.nodes)} ({shown})" if self.ops else f"nodes {list(self.nodes)}"


@dataclass(frozen=True)
class Trial:
    """One run to time: the subgraph with ``on_device`` delegated, the other candidates on the CPU."""

    subgraph: int
    candidates: tuple[Candidate, ...]
    on_device: frozenset[Candidate]


@dataclass(frozen=True)
class TrialTimes:
    """What a trial measured, in microseconds per invoke: the whole subgraph, and each
    candidate (its device invoke if it was on the device, else its nodes' CPU invokes)."""

    total_us: float
    partition_us: Mapping[Candidate, float]


#: The timing source: ``timing(trial) -> TrialTimes``.
PlacementTiming = Callable[[Trial], TrialTimes]


class PlacementUnavailable(Exception):
    """The trial cannot run this subgraph (the message says why); it is placed as "all"."""


def format_us(us: float) -> str:
    return f"{us:.1f} µs" if us < 10 else f"{us:.0f} µs"


@dataclass
class PlacementDecision:
    """Where the candidates of one subgraph run, and the times that decided it."""

    subgraph: int
    candidates: tuple[Candidate, ...]
    on_device: frozenset[tuple[int, ...]]  # the nodes of the candidates kept on the device
    device_us: dict[tuple[int, ...], float] = field(default_factory=dict)
    cpu_us: dict[tuple[int, ...], float] = field(default_factory=dict)
    totals_us: dict[str, float] = field(default_factory=dict)  # CPU_PATH, CHOSEN, ALL_ON_DEVICE
    kept: str = ALL_ON_DEVICE  # which of the three placements won end to end
    unavailable: str | None = None  # why no timing was possible (then everything is on the device)
    from_cache: bool = False

    def is_on_device(self, candidate: Candidate) -> bool:
        return candidate.nodes in self.on_device

    def reason(self, candidate: Candidate) -> str:
        """Why a candidate stays on the CPU ("kept on the CPU: device 41 µs, CPU 5 µs")."""
        times = f"device {format_us(self.device_us[candidate.nodes])}, CPU {format_us(self.cpu_us[candidate.nodes])}"
        if self.kept == CPU_PATH and self.device_us[candidate.nodes] < self.cpu_us[candidate.nodes]:
            return f"kept on the CPU: {times}, but end to end the CPU path is fastest ({self._totals()})"
        return f"kept on the CPU: {times}"

    def _totals(self) -> str:
        return ", ".join(f"{name} {format_us(self.totals_us[name])}" for name in TIE_ORDER if name in self.totals_us)

    def lines(self) -> list[str]:
        """The decision, for reports and the command line."""
        where = f"subgraph {self.subgraph}: " if self.subgraph else ""
        if self.unavailable is not None:
            return [f"placement auto: {where}not timed ({self.unavailable}); every partition on the device"]
        cached = " (cached)" if self.from_cache else ""
        out = [f"placement auto: {where}{self.kept} kept, end to end {self._totals()}{cached}"]
        for candidate in self.candidates:
            device, cpu = self.device_us[candidate.nodes], self.cpu_us[candidate.nodes]
            place = "device" if self.is_on_device(candidate) else "CPU"
            out.append(f"  partition {candidate.describe()}: on the {place} (device {format_us(device)}, CPU {format_us(cpu)})")
        return out

    # -- the cache's form ------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "candidates": [list(c.nodes) for c in self.candidates],
            "on_device": sorted(list(n) for n in self.on_device),
            "device_us": [[list(n), t] for n, t in self.device_us.items()],
            "cpu_us": [[list(n), t] for n, t in self.cpu_us.items()],
            "totals_us": self.totals_us,
            "kept": self.kept,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], subgraph: int, candidates: tuple[Candidate, ...]) -> "PlacementDecision | None":
        """The cached decision, if it was made for these very candidates (None for anything
        else, a damaged cache file included: the candidates are then timed again)."""
        try:
            if [list(c.nodes) for c in candidates] != data.get("candidates"):
                return None
            decision = cls(
                subgraph, candidates, frozenset(tuple(n) for n in data["on_device"]),
                {tuple(n): float(t) for n, t in data["device_us"]}, {tuple(n): float(t) for n, t in data["cpu_us"]},
                {str(k): float(v) for k, v in data["totals_us"].items()}, str(data["kept"]), from_cache=True,
            )
        except (AttributeError, KeyError, TypeError, ValueError):
            return None
        nodes = {c.nodes for c in candidates}
        if decision.kept not in TIE_ORDER or not decision.on_device <= nodes or set(decision.device_us) != nodes \
                or set(decision.cpu_us) != nodes:
            return None
        return decision


def decide(subgraph: int, candidates: Sequence[Candidate], timing: PlacementTiming) -> PlacementDecision:
    """Time the candidates and choose (the rules are this module's docstring's)."""
    candidates = tuple(candidates)
    everything = frozenset(candidates)
    on_device = timing(Trial(subgraph, candidates, everything))
    on_cpu = timing(Trial(subgraph, candidates, frozenset()))
    device_us = {c.nodes: float(on_device.partition_us[c]) for c in candidates}
    cpu_us = {c.nodes: float(on_cpu.partition_us[c]) for c in candidates}
    chosen = frozenset(c for c in candidates if device_us[c.nodes] < cpu_us[c.nodes])
    totals = {CPU_PATH: float(on_cpu.total_us), ALL_ON_DEVICE: float(on_device.total_us)}
    placements = {CPU_PATH: frozenset(), ALL_ON_DEVICE: everything}
    if chosen not in (frozenset(), everything):
        totals[CHOSEN] = float(timing(Trial(subgraph, candidates, chosen)).total_us)
        placements[CHOSEN] = chosen
    kept = min(totals, key=lambda name: (totals[name], TIE_ORDER.index(name)))
    return PlacementDecision(
        subgraph, candidates, frozenset(c.nodes for c in placements[kept]), device_us, cpu_us, totals, kept,
    )


# =====================================================================================
# The cache
# =====================================================================================


class PlacementCache:
    """Decisions by key (subgraph content + device + delegate options): in memory, and
    as one JSON file per key in ``directory`` when given (shared by processes). The kernel
    each node chose among its candidates is kept here too (``tactics.py``: keys
    ``tactic-<digest>``)."""

    def __init__(self, directory: str | os.PathLike | None = None) -> None:
        self.directory = os.fspath(directory) if directory is not None else None
        self._memory: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._memory.get(key)
        if found is None and self.directory is not None:
            try:
                with open(os.path.join(self.directory, f"{key}.json"), encoding="utf-8") as file:
                    found = json.load(file)
            except (OSError, ValueError):
                return None
            with self._lock:
                self._memory[key] = found
        return found

    def put(self, key: str, decision: dict[str, Any]) -> None:
        with self._lock:
            self._memory[key] = decision
        if self.directory is not None:
            os.makedirs(self.directory, exist_ok=True)
            path = os.path.join(self.directory, f"{key}.json")
            temporary = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(temporary, "w", encoding="utf-8") as file:
                json.dump(decision, file)
            os.replace(temporary, path)  # atomic: a reader sees the old file or the new one

    def __len__(self) -> int:
        return len(self._memory)


#: The process-wide cache ``GpuDelegate(placement="auto")`` uses unless given another.
SHARED_CACHE = PlacementCache()


def subgraph_fingerprint(context: Any, extra: Sequence[str] = ()) -> str:
    """A key for one subgraph's content: its plan (ops, versions, tensors, params), its
    tensors (types, shapes, quantization, constant bytes) and ``extra`` (device, options)."""
    digest = hashlib.sha256()
    for text in extra:
        digest.update(text.encode() + b"\0")
    for index in context.execution_plan:
        node, registration = context.get_node_and_registration(index)
        digest.update(repr((index, registration.builtin_code, registration.custom_name, registration.version,
                            tuple(node.inputs), tuple(node.outputs), repr(node.params), node.custom_options)).encode())
    for tensor in context.tensors:
        digest.update(repr((tensor.index, tensor.type, tensor.shape, repr(tensor.quantization), tensor.is_variable)).encode())
        if tensor.is_constant and tensor.data is not None:
            data = np.asarray(tensor.data)
            digest.update(data.tobytes() if data.dtype != object else repr(data.tolist()).encode())
    return digest.hexdigest()[:32]


# =====================================================================================
# The timing source: trials on a private copy of the subgraph
# =====================================================================================

#: Ops a trial cannot run on a copy of the subgraph (they reach other subgraphs or state
#: shared with them).
NOT_COPYABLE = frozenset({
    BuiltinOperator.IF, BuiltinOperator.WHILE, BuiltinOperator.CALL_ONCE, BuiltinOperator.VAR_HANDLE,
    BuiltinOperator.READ_VARIABLE, BuiltinOperator.ASSIGN_VARIABLE,
})


class _TrialContext:
    """A private copy of a subgraph for one trial: the kernels' ``Context`` over copied
    tensors and nodes (constants shared, read-only), with the trial's own plan."""

    def __init__(self, context: Any) -> None:
        self.index = getattr(context, "index", 0)
        self.inputs = list(context.inputs)
        self.outputs = list(context.outputs)
        self.tensors = [_copy_tensor(t) for t in context.tensors]
        self.nodes: dict[int, Node] = {}
        self.registrations: dict[int, Any] = {}
        self.arena_limit_bytes = None
        self.resources: dict[Any, Any] = {}
        self._plan: list[int] = []
        self._next_index = 0

    @property
    def execution_plan(self) -> list[int]:
        return list(self._plan)

    def get_node_and_registration(self, node_index: int):
        return self.nodes[node_index], self.registrations[node_index]

    def tensor(self, index: int):
        return self.tensors[index] if index >= 0 else None

    def get_subgraph(self, index: int):
        raise PlacementUnavailable("a node reaches another subgraph")


def _copy_tensor(tensor: RuntimeTensor) -> RuntimeTensor:
    """A copy sharing the file's constants; what prepare computed (PERSISTENT) is computed
    again by the copy's prepare, as ``allocate_tensors`` does."""
    constant = tensor.allocation is Allocation.CONSTANT
    return RuntimeTensor(
        tensor.index, tensor.name, tensor.type, tensor.shape, shape_signature=tensor.shape_signature,
        quantization=tensor.quantization, sparsity=tensor.sparsity, data=tensor.data if constant else None,
        allocation=tensor.allocation if constant else Allocation.NONE, is_variable=tensor.is_variable,
    )


def _fill(tensor: RuntimeTensor) -> None:
    """Fixed input values: floats in [-1, 1), integers and bools 0 (valid indices), strings empty."""
    if tensor.dtype is None:
        raise PlacementUnavailable(f"input {tensor.name!r} has type {tensor.type_name}")
    if tensor.dtype == object:
        tensor.data = np.full(tensor.shape, b"", dtype=object)
    elif tensor.dtype.kind == "f":
        tensor.data = np.random.default_rng(0).uniform(-1, 1, tensor.shape).astype(tensor.dtype)
    else:
        tensor.data = np.zeros(tensor.shape, dtype=tensor.dtype)
    tensor.allocation = Allocation.ARENA


class SubgraphTiming:
    """The measured timing source: each trial runs on a private copy of the subgraph, the
    candidates on the device through ``make_kernel()`` (the delegate's partition kernel,
    on its device), the rest through the CPU kernels; wall-clock microseconds per invoke
    (a delegate node's time includes its copies and its synchronization)."""

    def __init__(self, context: Any, make_kernel: Callable[[], Any], trial_delegate: Any,
                 warmup: int = WARMUP_INVOKES, timed: int = TIMED_INVOKES) -> None:
        self.context = context
        self.make_kernel = make_kernel
        self.trial_delegate = trial_delegate
        self.warmup, self.timed = warmup, timed
        for index in context.execution_plan:
            node, registration = context.get_node_and_registration(index)
            if registration.builtin_code in NOT_COPYABLE:
                raise PlacementUnavailable(f"node {index} is {registration.op_name}, which a trial cannot run on a copy")
            if node.delegate is not None:
                raise PlacementUnavailable(f"node {index} belongs to an earlier delegate")
        if any(context.tensors[t].is_dynamic for t in context.inputs):
            raise PlacementUnavailable("the subgraph has dynamic-sized inputs")

    def __call__(self, trial: Trial) -> TrialTimes:
        shadow = _TrialContext(self.context)
        source = self.context
        plan = source.execution_plan
        for index in plan:  # every original node, initialised on the copy (a partition's prepare prepares them)
            node, registration = source.get_node_and_registration(index)
            copy = Node(index=node.index, inputs=tuple(node.inputs), outputs=tuple(node.outputs), params=node.params,
                        custom_options=node.custom_options, intermediates=tuple(node.intermediates))
            shadow.nodes[index], shadow.registrations[index] = copy, registration
            if registration.init is not None:
                copy.user_data = registration.init(shadow, copy)
        next_index = max(plan, default=-1) + 1
        delegated = sorted(n for c in trial.on_device for n in c.nodes)
        subsets = partition_graph_into_independent_node_subsets(
            [PlanNode(i, source.get_node_and_registration(i)[0].inputs, source.get_node_and_registration(i)[0].outputs)
             for i in plan],
            delegated, source.outputs,
        )
        steps: list[tuple[int, Candidate | None]] = []  # (node index in the copy, the candidate it runs)
        by_nodes = {c.nodes: c for c in trial.candidates}
        kernels: list[Any] = []
        for subset in subsets:
            if not subset.delegated:
                steps.extend((i, None) for i in subset.nodes)
                continue
            params = DelegateParams(self.trial_delegate, tuple(subset.nodes), tuple(subset.input_tensors),
                                    tuple(subset.output_tensors))
            node = Node(index=next_index, inputs=tuple(subset.input_tensors), outputs=tuple(subset.output_tensors),
                        delegate=self.trial_delegate, delegate_params=params)
            kernel = self.make_kernel()
            shadow.nodes[next_index], shadow.registrations[next_index] = node, None
            node.user_data = kernel
            kernels.append(kernel)
            steps.append((next_index, by_nodes.get(tuple(subset.nodes))))
            next_index += 1
        shadow._plan = [i for i, _ in steps]
        for index, _ in steps:  # (partition kernels' init reads the copy's plan)
            node = shadow.nodes[index]
            if node.delegate is not None:
                node.user_data.init(shadow, node.delegate_params)
        for t in shadow.inputs:
            _fill(shadow.tensors[t])
        for tensor in shadow.tensors:
            if tensor.is_variable:
                tensor.data = np.zeros(tensor.shape, dtype=tensor.dtype)
        runs = self._prepare(shadow, steps)
        try:
            return self._time(runs, steps, trial)
        finally:
            for index in plan:
                node, registration = shadow.nodes[index], shadow.registrations[index]
                if registration.free is not None and node.user_data is not None:
                    registration.free(shadow, node)

    def _prepare(self, shadow: _TrialContext, steps) -> list[Callable[[], None] | None]:
        runs: list[Callable[[], None] | None] = []
        for index, _ in steps:
            node, registration = shadow.get_node_and_registration(index)
            if node.delegate is not None:
                node.user_data.prepare(shadow, node)
                run = (lambda kernel, n: lambda: kernel.eval(shadow, n))(node.user_data, node)
            else:
                if registration.prepare is not None:
                    registration.prepare(shadow, node)
                outputs = [shadow.tensors[t] for t in node.outputs if t >= 0]
                if outputs and all(t.is_constant for t in outputs) or registration.invoke is None:
                    runs.append(None)  # folded at prepare: nothing to run
                    continue
                run = (lambda r, n: lambda: r.invoke(shadow, n))(registration, node)
            for t in node.outputs:
                tensor = shadow.tensors[t] if t >= 0 else None
                if tensor is None or tensor.is_constant:
                    continue
                if tensor.is_dynamic:
                    raise PlacementUnavailable(f"tensor {tensor.name!r} has a shape only known at invoke")
                if tensor.data is None or tensor.data.shape != tensor.shape:
                    tensor.data = np.empty(tensor.shape, dtype=tensor.dtype) if tensor.dtype != object else \
                        np.full(tensor.shape, b"", dtype=object)
                    tensor.allocation = Allocation.ARENA
            runs.append(run)
        return runs

    def _time(self, runs, steps, trial: Trial) -> TrialTimes:
        per_step: list[list[float]] = [[] for _ in steps]
        totals: list[float] = []
        clock = time.perf_counter
        for invoke in range(self.warmup + self.timed):
            started = clock()
            for position, run in enumerate(runs):
                if run is None:
                    continue
                before = clock()
                run()
                if invoke >= self.warmup:
                    per_step[position].append(clock() - before)
            if invoke >= self.warmup:
                totals.append(clock() - started)
        median_us = [statistics.median(times) * 1e6 if times else 0.0 for times in per_step]
        partition_us: dict[Candidate, float] = {}
        for candidate in trial.candidates:
            if candidate in trial.on_device:
                partition_us[candidate] = sum(us for (_, c), us in zip(steps, median_us) if c == candidate)
            else:
                members = set(candidate.nodes)
                partition_us[candidate] = sum(us for (i, c), us in zip(steps, median_us) if c is None and i in members)
        return TrialTimes(statistics.median(totals) * 1e6, partition_us)

