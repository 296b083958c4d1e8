"""``GpuDelegate``: runs the nodes its kernels support, at their versions, on a CUDA device.

>>> interpreter.modify_graph_with_delegate(GpuDelegate())            # a real GPU (device 0)
>>> interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))  # host emulation, by name

Every partition becomes one delegate node with a device plan, made at prepare:

- constants (and the outputs of nodes folded at prepare) are uploaded once, each only
  if an op reads it from the device, in the layout that op wants; they never travel again;
- each runtime input has a device buffer and a pinned host staging buffer, and each
  output the CPU side or the caller reads a pinned staging buffer: an invoke copies the
  inputs in, runs the ops, copies the outputs out, all queued on the delegate's stream,
  then synchronizes once;
- an output that only other partitions of the same delegate read never leaves the
  device: the producing partition copies it into a device buffer it owns, which the
  consuming partitions read in place of an upload;
- from the second invoke on (the first warms up CuPy's kernel caches and cuBLAS), the
  ops are captured once as a CUDA graph, into a memory pool that only the graph uses and
  that the partition keeps, and each invoke replays it: no allocation, one launch.

All of it runs inside ``device.active()``: the delegate's device current, its stream
current, its pool allocating. The per-invoke and per-partition counters (launches,
transfers, synchronizations, allocations, graph replays, device time) are in
:meth:`GpuDelegate.partition_stats`.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from backends.gpu.device import Device, DeviceCounters, DeviceMemoryError, open_device
from backends.gpu.fusion import fuse_steps
from backends.gpu.ops import gpu_custom_support_table, gpu_op_classes, gpu_support_table, select_op_class
from backends.gpu.ops.base import GpuOp
from backends.gpu.ops.variables import DeviceVariable, DeviceVariables
from backends.gpu.tactics import TacticChoice, TacticSettings, TacticTiming, report_lines
from backends.gpu.placement import (
    PLACEMENTS,
    SHARED_CACHE,
    Candidate,
    PlacementCache,
    PlacementDecision,
    PlacementTiming,
    PlacementUnavailable,
    SubgraphTiming,
    decide,
    subgraph_fingerprint,
)
from delegate_sdk.delegate import DelegateKernel, DelegateParams, NodeDecision, SimpleDelegate
from delegate_sdk.node import Node
from schema.enums import BuiltinOperator, TensorType
from schema.op_arity import arity_problem

PRECISIONS = {"float32": np.float32, "float16": np.float16}


class GpuDelegate(SimpleDelegate):
    """The CuPy GPU delegate.

    Args:
      device: CUDA device id, ``"host"`` to emulate the device with numpy (asked for by
        name; without it, a machine with no usable GPU raises ``GpuUnavailableError``), or
        a ``Device`` (``backends.gpu.device.emulated_cuda_device()`` in tests).
      precision: ``"float32"``, or ``"float16"`` (float16 storage, float32 accumulation).
      max_delegated_partitions, min_nodes_per_partition, excluded_ops, version_caps: as
        ``SimpleDelegate``; ``version_caps={BuiltinOperator.DEPTHWISE_CONV_2D: 1}`` behaves
        like a delegate that predates dilation.
      cuda_graphs: from the second invoke on, replay each partition as a captured CUDA graph.
      expose_intermediates: also copy every tensor a partition computes back to the host at
        each invoke, so ``get_tensor`` reads it (for debugging and parity tests against the
        reference kernels; it costs a transfer per tensor).
      placement: ``"all"`` (the default, as LiteRT's GPU delegate): every partition of
        supported nodes runs on the device. ``"auto"``: each partition is timed on the
        device and on the CPU when the delegate is applied, and stays on the CPU where the
        device does not win; the whole subgraph is then timed with that choice, with every
        partition on the device and on the CPU path, and the fastest of the three is kept
        (``backends/gpu/placement.py`` has the rules; :meth:`placement_report` the outcome).
      placement_timing: the timing source for ``"auto"`` (a callable taking a
        ``placement.Trial`` and returning ``placement.TrialTimes``); default: trials on a
        private copy of the subgraph, on this delegate's device.
      placement_cache: where ``"auto"`` keeps its decisions (by subgraph content, device
        and options), and where every node keeps the kernel it chose (``tactics.py``):
        default the process-wide ``placement.SHARED_CACHE``; ``PlacementCache(directory)``
        also keeps them on disk for the next process.
      tactic_timing: the time of each candidate kernel of a node (a callable taking a
        ``tactics.TacticTrial`` and returning microseconds), for the emulated device; default:
        measured with CUDA events on a device, and on an emulated device the first candidate
        of the node's table that applies and passes its check (``backends/gpu/tactics.py``).
      allow_tf32: let cuBLAS round float32 operands to TF32 (10 mantissa bits) on tensor
        cores: a faster candidate for the float32 products, no longer float32's precision.
        Off by default (float32 results stay within float32's rounding of TFLite's).
      vendor_gemm: the vendor GEMM (cuBLAS, ``cuda/cublas.py``) is among the candidates of
        the products (FULLY_CONNECTED, BATCH_MATMUL, CONV_2D 1x1 with stride 1).
    """

    name = "GpuDelegate"
    supports_dynamic_tensors = False

    def __init__(
        self,
        device: int | str | Device = 0,
        precision: str = "float32",
        *,
        max_delegated_partitions: int = 0,
        min_nodes_per_partition: int = 1,
        excluded_ops: Sequence[int] = (),
        version_caps: Mapping[int, int] | None = None,
        cuda_graphs: bool = True,
        expose_intermediates: bool = False,
        placement: str = "all",
        placement_timing: PlacementTiming | None = None,
        placement_cache: PlacementCache | None = None,
        tactic_timing: TacticTiming | None = None,
        allow_tf32: bool = False,
        vendor_gemm: bool = True,
    ) -> None:
        super().__init__(
            max_delegated_partitions=max_delegated_partitions,
            min_nodes_per_partition=min_nodes_per_partition,
            version_caps=version_caps,
            excluded_ops=excluded_ops,
        )
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
        if placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {list(PLACEMENTS)}, got {placement!r}")
        self.precision = precision
        self.placement = placement
        self.placement_timing = placement_timing
        self.placement_cache = placement_cache if placement_cache is not None else SHARED_CACHE
        #: How every node chooses among its candidate kernels (``backends/gpu/tactics.py``).
        self.tactic_settings = TacticSettings(tactic_timing, self.placement_cache, bool(allow_tf32), bool(vendor_gemm))
        #: One decision per subgraph that "auto" placed (in the order they were applied).
        self.placement_decisions: list[PlacementDecision] = []
        self.storage = np.dtype(PRECISIONS[precision])
        self.device: Device = open_device(device)
        self.cuda_graphs = cuda_graphs
        self.expose_intermediates = expose_intermediates
        self.op_classes = gpu_op_classes()
        self.support_table = gpu_support_table()
        self.custom_support_table = gpu_custom_support_table()  # by name: MediaPipe's custom ops
        self.kernels: list[GpuPartitionKernel] = []
        #: (subgraph, tensor) -> the device buffer a partition hands to later partitions.
        self.handoffs: dict[tuple[int, int], Any] = {}
        #: The device buffers of resource variables (streaming models' state).
        self.variables = DeviceVariables()

    @property
    def transfers(self) -> DeviceCounters:
        """Everything asked of the device so far, prepare included (uploads, downloads,
        bytes, launches, synchronizations, allocations, graph replays)."""
        return self.device.counters

    @property
    def counters(self) -> DeviceCounters:
        return self.device.counters

    def last_invoke(self) -> DeviceCounters:
        """What the last invoke asked of the device, over the partitions that ran in it
        (those invoked as often as the most invoked one: not a CALL_ONCE initialisation's)."""
        total = DeviceCounters()
        latest = max((kernel.invokes for kernel in self.kernels), default=0)
        for kernel in self.kernels:
            if kernel.invokes == latest:
                total.add(kernel.last_invoke)
        return total

    def partition_stats(self) -> list["PartitionStats"]:
        """Per partition: its nodes, its last invoke's counters and device time, its totals."""
        return [kernel.stats(i) for i, kernel in enumerate(self.kernels)]

    def prepare(self, context) -> None:
        self._folded = self.nodes_folded_at_prepare(context)
        #: the tensors those nodes make: constants once the partition is prepared
        self._constant_at_prepare = {
            t for index in self._folded for t in context.get_node_and_registration(index)[0].outputs
            if not context.tensors[t].is_constant
        }
        super().prepare(context)

    def rejection_reason(self, context, node: Node, registration) -> str | None:
        """As SimpleDelegate's, except that a node the CPU kernels fold into constants at
        prepare is taken whatever its op (it never runs: its outputs are constants, which
        stay on the device), unless the options exclude its op."""
        folded = node.index in getattr(self, "_folded", ())
        if folded and registration.builtin_code not in self.excluded_ops and not _malformed(context, node, registration):
            return None
        return super().rejection_reason(context, node, registration)

    @staticmethod
    def nodes_folded_at_prepare(context) -> set[int]:
        """The nodes whose outputs will be constants once prepared: SHAPE and RANK of a
        tensor of static shape, and nodes whose every input is a constant (or such an
        output) and whose CPU kernel folds (DENSIFY of sparse weights, DEQUANTIZE of
        float16 weights, the STRIDED_SLICE / PACK of a shape chain...). Constant work never
        splits a partition."""
        tensors = context.tensors
        constant = {t.index for t in tensors if t.is_constant}
        folded: set[int] = set()
        shape_ops = (BuiltinOperator.SHAPE, BuiltinOperator.RANK)
        for index in context.execution_plan:
            node, registration = context.get_node_and_registration(index)
            if node.delegate is not None or not node.outputs:
                continue
            inputs = [t for t in node.inputs if t >= 0]
            if all(tensors[t].is_constant for t in node.outputs):  # folded already (at interpreter init)
                folds = True
            elif registration.builtin_code in shape_ops:
                # The shape at prepare: a dimension the signature leaves open (-1, a Keras
                # model's batch) is the current one; resizing re-prepares the partition,
                # whose CPU prepare publishes the new shape.
                source = tensors[inputs[0]] if inputs else None
                folds = source is not None and not source.is_dynamic
            else:
                folds = bool(inputs) and all(t in constant for t in inputs) and getattr(node.user_data, "foldable", False)
            if folds:
                folded.add(index)
                constant.update(node.outputs)
        return folded

    def op_class_for(self, node: Node, registration, tensors) -> tuple[type[GpuOp] | None, str | None]:
        """The GpuOp class that runs this node, or None and why none does."""
        op = registration.builtin_code
        if op == BuiltinOperator.CUSTOM:  # custom ops' classes are keyed by name
            op = registration.custom_name or ""
        classes = self.op_classes.get(op, ())
        return select_op_class(classes, node, op, registration.version, tensors)

    def node_rejection_reason(self, context, node: Node, registration) -> str | None:
        tensors = context.tensors
        known = getattr(self, "_constant_at_prepare", ())
        shape = node.inputs[1] if registration.builtin_code == BuiltinOperator.RESHAPE and len(node.inputs) > 1 else -1
        if shape >= 0 and shape in known:
            # RESHAPE's shape from a chain folded at prepare (SHAPE -> STRIDED_SLICE -> PACK):
            # a constant by the time the partition prepares, as the op requires.
            tensors = list(tensors)
            tensors[shape] = _ConstantAtPrepare(tensors[shape])
        return self.op_class_for(node, registration, tensors)[1]

    # -- placement="auto" ----------------------------------------------------------------------
    def _apply_partition_options(self, context, supported: list[int]) -> list[int]:
        chosen = super()._apply_partition_options(context, supported)
        if self.placement == "all" or not chosen:
            return chosen
        return self._place(context, chosen)

    def _place(self, context, chosen: list[int]) -> list[int]:
        """The nodes of the candidate partitions that the decision keeps on the device; the
        others are recorded as kept on the CPU, with both times."""
        subgraph = getattr(context, "index", 0)
        candidates = tuple(
            Candidate(subgraph, tuple(p.nodes), tuple(context.get_node_and_registration(n)[1].op_name for n in p.nodes))
            for p in context.preview_delegate_partitioning(chosen)
        )
        decision = self._placement_decision(context, subgraph, candidates)
        self.placement_decisions.append(decision)
        kept: list[int] = []
        for candidate in candidates:
            if decision.is_on_device(candidate):
                kept.extend(candidate.nodes)
                continue
            reason = decision.reason(candidate)
            for n in candidate.nodes:
                registration = context.get_node_and_registration(n)[1]
                context.record_decision(NodeDecision(self.name, n, False, f"{registration.op_name} v{registration.version}: {reason}"))
        return sorted(kept)

    def _placement_decision(self, context, subgraph: int, candidates: tuple[Candidate, ...]) -> PlacementDecision:
        key = subgraph_fingerprint(context, (self.device.name, self.precision, str(self.cuda_graphs),
                                             repr([c.nodes for c in candidates])))
        cached = self.placement_cache.get(key)
        if cached is not None:
            decision = PlacementDecision.from_json(cached, subgraph, candidates)
            if decision is not None:
                return decision
        timing = self.placement_timing
        try:
            if timing is None:
                trial_delegate = GpuDelegate(
                    self.device, self.precision, cuda_graphs=self.cuda_graphs, placement_cache=self.placement_cache,
                    tactic_timing=self.tactic_settings.timing, allow_tf32=self.tactic_settings.allow_tf32,
                    vendor_gemm=self.tactic_settings.vendor_gemm,
                )
                timing = SubgraphTiming(context, GpuPartitionKernel, trial_delegate)
            decision = decide(subgraph, candidates, timing)
        except PlacementUnavailable as why:
            return _everything_on_device(subgraph, candidates, str(why))
        except Exception as error:  # the measured trial failed: place as "all", which reports its own errors
            if self.placement_timing is not None:
                raise
            return _everything_on_device(subgraph, candidates, f"the trial failed: {type(error).__name__}: {error}")
        self.placement_cache.put(key, decision.to_json())
        return decision

    def placement_report(self) -> list[str]:
        """What ``placement="auto"`` decided, per subgraph (empty for ``"all"``)."""
        return [line for decision in self.placement_decisions for line in decision.lines()]

    def tactic_report(self) -> list[str]:
        """Per node that chose among kernels: the kernel, the runner-up and both times, and
        every candidate that failed its check (``tactics.report_lines``)."""
        return report_lines([choice for kernel in self.kernels for choice in kernel.tactics()])

    kernel_class = None  # built per delegate below, so each kernel knows its delegate

    def kernel_registration(self):
        delegate = self

        class _Kernel(GpuPartitionKernel):
            def init(self, context, params):
                super().init(context, params)
                delegate.kernels.append(self)

        self.kernel_class = _Kernel
        return super().kernel_registration()

    def __repr__(self) -> str:
        return f"GpuDelegate(device={self.device.name!r}, precision={self.precision!r})"


def _everything_on_device(subgraph: int, candidates: tuple[Candidate, ...], why: str) -> PlacementDecision:
    return PlacementDecision(subgraph, candidates, frozenset(c.nodes for c in candidates), unavailable=why)


class _ConstantAtPrepare:
    """A tensor that a node folded at prepare will hold as a constant (seen so by the op
    classes' checks before the partition prepares); everything else is the tensor's."""

    is_constant = True

    def __init__(self, tensor: Any) -> None:
        self._tensor = tensor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tensor, name)


def _malformed(context, node: Node, registration) -> bool:
    """Whether the node breaks its op's declaration (``schema.op_arity``): never taken,
    even to fold (SimpleDelegate's check then gives the reason)."""
    return arity_problem(registration.builtin_code, node.inputs, node.outputs, lambda t: len(context.tensors[t].shape)) is not None


@dataclass
class PartitionStats:
    """One partition's numbers, for reports (``litedelegate bench``, the device check)."""

    partition: int
    nodes: tuple[int, ...]
    last_invoke: DeviceCounters
    total: DeviceCounters
    invokes: int
    device_ms: float | None  # the last invoke's ops, between two CUDA events
    graph: str  # "replaying", "not captured yet", "off", or why capture failed
    graph_nodes: int
    #: What each launch of the partition runs: its nodes (several when fusion.py folded them
    #: into one kernel) and, for an op with candidate kernels, the one prepare chose, the
    #: runner-up with both times, and the candidates that failed their check
    #: (``tactics.TacticChoice.summary``: ``"CONV_2D v1 (node 3) [tiled 64x64 12.0 µs,
    #: runner-up direct 15.3 µs]"``).
    kernels: tuple[str, ...] = ()
    #: The same steps by kind: each label without its node indices, with only the chosen
    #: kernel (``"CONV_2D v1 [tiled 64x64]"``).
    kinds: tuple[str, ...] = ()

    def kernel_variants(self) -> list[tuple[str, int]]:
        """``kinds`` counted (``"CONV_2D v1 [tiled 64x64]"``, ``"fused: DEPTHWISE_CONV_2D v2 +
        ADD v1 [direct fused]"``), with how many of the partition's steps run each; the most
        frequent first, ties in name order."""
        counts: dict[str, int] = {}
        for kind in self.kinds or tuple(_NODE_INDEX.sub("", label) for label in self.kernels):
            counts[kind] = counts.get(kind, 0) + 1
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


#: The node part of a step's label (``"CONV_2D v1 (node 3)"``, see ``GpuPartitionKernel.prepare``).
_NODE_INDEX = re.compile(r" \(node \d+\)")


class _Environment:
    """What a partition gives its ops beyond their node: the resource variables' buffers
    (recording which ones the partition reads and assigns)."""

    def __init__(self, delegate: GpuDelegate, resources: dict) -> None:
        self.delegate = delegate
        self.resources = resources
        self.used: dict[int, DeviceVariable] = {}
        self.read_first: list[DeviceVariable] = []  # read before this partition assigns them

    def variable(self, resource_id: int, shape: tuple[int, ...], dtype: Any, *, reads: bool) -> DeviceVariable:
        variable = self.delegate.variables.get(self.delegate.device, self.resources, resource_id, shape, dtype)
        if variable.resource_id not in self.used and reads:
            self.read_first.append(variable)
        self.used[variable.resource_id] = variable
        return variable


class GpuPartitionKernel(DelegateKernel):
    """One GPU partition: its ops, its device-resident constants, its plan."""

    def init(self, context, params: DelegateParams) -> None:
        self.params = params
        self.delegate: GpuDelegate = params.delegate
        self.device = self.delegate.device
        self.inner = [context.get_node_and_registration(i) for i in params.nodes_to_replace]
        self.total = DeviceCounters()
        self.last_invoke = DeviceCounters()
        self._timed = False  # (device_ms: None until an invoke recorded the timing events)
        self.variables: list[DeviceVariable] = []
        self._drop_graph()

    # -- prepare ---------------------------------------------------------------------------------
    def prepare(self, context, node: Node) -> None:
        # Shapes: the CPU kernels' prepare propagates them (and folds constant nodes).
        tensors = context.tensors
        for inner, registration in self.inner:
            if registration.prepare is not None:
                registration.prepare(context, inner)
            if registration.builtin_code == BuiltinOperator.READ_VARIABLE:
                for t in inner.outputs:  # dynamic on the CPU (as TFLite); the declared shape here
                    tensors[t].set_static()
        self._check_memory(context)
        device, storage = self.device, self.delegate.storage
        self._drop_graph()
        self.steps: list[tuple[GpuOp, Node, list[int], str]] = []
        self.constants: dict[int, Any] = {}
        self.environment = _Environment(self.delegate, context.resources)
        chosen = []
        for inner, registration in self.inner:
            if inner.outputs and all(tensors[t].is_constant for t in inner.outputs):
                continue  # folded at prepare: its outputs are constants like any other
            op_class, reason = self.delegate.op_class_for(inner, registration, tensors)
            if op_class is None:  # the shapes changed since the delegate took the node
                raise ValueError(f"node {inner.index} cannot run on the GPU any more: {reason}")
            chosen.append((inner, registration, op_class))
        self.float32_kept = self._float32_kept(context, node, chosen)
        with device.active(), device.counting(self.total):
            for inner, registration, op_class in chosen:
                op = op_class(device, inner, registration.builtin_code, registration.version, tensors, storage)
                op.environment = self.environment
                op.float32_tensors = self.float32_kept
                op.tactic_settings = self.delegate.tactic_settings
                label = f"{registration.op_name} v{registration.version} (node {inner.index})"
                with device.labelled(label):
                    op.prepare()
                    reads = op.device_inputs()
                    for position in reads:
                        t = inner.inputs[position]
                        if tensors[t].is_constant and t not in self.constants:
                            self.constants[t] = self._upload_constant(tensors[t])
                self.steps.append((op, inner, reads, label))
            if not self.delegate.expose_intermediates:  # fold conv -> ADD -> RELU/PRELU, PAD -> conv (fusion.py)
                self.steps = fuse_steps(self.steps, tensors, keep=set(node.outputs))
            for op, _, _, label in self.steps:  # each op's kernel, chosen among its candidates (tactics.py)
                with device.labelled(label):
                    op.finish_prepare()
            handoffs = self.delegate.handoffs
            self.handed_in = {
                t: handoffs[(id(context), t)] for t in node.inputs if (id(context), t) in handoffs and self._read_on_device(t)
            }
            self.runtime_inputs = [
                t for t in node.inputs if not tensors[t].is_constant and t not in self.handed_in and self._read_on_device(t)
            ]
            # What leaves the device: outputs the CPU side or the caller reads. A folded
            # constant is on the host already; an output only later GPU partitions read
            # stays on the device.
            outputs = [t for t in node.outputs if not tensors[t].is_constant]
            device_only = self._read_only_by_this_delegate(context, outputs)
            self.downloads = [t for t in outputs if t not in device_only]
            self.handed_out = {t: device.xp.empty(tensors[t].shape, dtype=self._dtype(tensors[t], t)) for t in device_only}
            handoffs.update({(id(context), t): buffer for t, buffer in self.handed_out.items()})
            self.input_buffers = {t: device.xp.empty(tensors[t].shape, dtype=self._dtype(tensors[t], t)) for t in self.runtime_inputs}
        self.exposed = []
        if self.delegate.expose_intermediates:  # the tensors only this partition sees, in host memory of its own
            outputs = set(node.outputs)
            for _, inner, _, _ in self.steps:
                for t in inner.outputs:
                    if t not in outputs and not tensors[t].is_constant:
                        tensors[t].data = np.empty(tensors[t].shape, tensors[t].dtype)
                        self.exposed.append(t)
        self.variables = list(self.environment.used.values())
        self._refuse_variables_the_cpu_also_uses(context)
        self.input_staging = {t: device.empty_pinned(tensors[t].shape, self._dtype(tensors[t], t)) for t in self.runtime_inputs}
        self.output_staging = {t: device.empty_pinned(tensors[t].shape, self._dtype(tensors[t], t)) for t in self.downloads}
        self._prepare_invoke_path()

    def _check_memory(self, context) -> None:
        """DeviceMemoryError when the partition's tensors (now that the CPU kernels'
        prepare gave their shapes) need more than the interpreter's arena limit: the
        device and its pinned staging hold them instead of the arena, under the same
        limit."""
        limit = context.arena_limit_bytes
        if limit is None:
            return
        tensors = context.tensors
        touched = {t for inner, _ in self.inner for t in (*inner.inputs, *inner.outputs) if t >= 0}
        sizes = {t: tensors[t].nbytes for t in touched if not tensors[t].is_constant}
        total = sum(sizes.values())
        if total > limit:
            largest = max(sizes, key=sizes.get)
            raise DeviceMemoryError(
                f"{self.device.name}: the partition's tensors need {total} bytes, over the interpreter's arena limit of "
                f"{limit} bytes (the largest: {largest} {tensors[largest].name!r} {list(tensors[largest].shape)}, "
                f"{sizes[largest]} bytes); smaller input shapes need less, Interpreter(experimental_arena_limit_bytes=...) "
                "sets the limit"
            )

    def _refuse_variables_the_cpu_also_uses(self, context) -> None:
        """The device buffer is the variable once the GPU has it: a CPU node of this
        subgraph reading or assigning it would see a stale copy."""
        mine = {v.resource_id for v in self.variables}
        for index in context.execution_plan:
            node, registration = context.get_node_and_registration(index)
            if node.delegate is not None or registration.builtin_code not in (
                BuiltinOperator.READ_VARIABLE, BuiltinOperator.ASSIGN_VARIABLE
            ):
                continue
            handle = context.tensors[node.inputs[0]] if node.inputs else None
            if handle is not None and handle.is_constant and int(np.asarray(handle.data).reshape(-1)[0]) in mine:
                raise ValueError(
                    f"variable {int(np.asarray(handle.data).reshape(-1)[0])} is used by GPU partition nodes and by "
                    f"{registration.op_name} node {index} on the CPU; the GPU keeps a variable only when it runs all of its uses"
                )

    def _read_only_by_this_delegate(self, context, outputs: list[int]) -> set[int]:
        """The outputs that no CPU node and not the caller reads: every consumer is a
        partition of this delegate, and the tensor is not a subgraph output."""
        caller_reads = set(getattr(context, "outputs", None) or outputs)
        consumers: dict[int, list[Node]] = {t: [] for t in outputs}
        for index in context.execution_plan:
            other = context.get_node_and_registration(index)[0]
            for t in other.inputs:
                if t in consumers:
                    consumers[t].append(other)
        return {
            t for t, nodes in consumers.items()
            if nodes and t not in caller_reads and all(n.delegate is self.delegate for n in nodes)
        }

    def _read_on_device(self, tensor: int) -> bool:
        return any(inner.inputs[p] == tensor for _, inner, reads, _ in self.steps for p in reads)

    def _dtype(self, tensor, index: int | None = None) -> np.dtype:
        if index is not None and index in self.float32_kept:
            return np.dtype(np.float32)
        return self.delegate.storage if tensor.dtype.kind == "f" else tensor.dtype

    def _float32_kept(self, context, node: Node, chosen: list) -> frozenset[int]:
        """The float32 tensors this partition keeps in float32 whatever the storage precision
        (``precision="float16"`` stores float activations as half): those whose every use
        here takes exact float32 (a QUANTIZE's input, a DEQUANTIZE's output: the ops'
        ``exact_float32_inputs`` / ``_outputs``), written by such an op or uploaded from the
        host, and read by no later partition. So a quantized model's integer path, and the
        float tensors that feed it or come out of it, do not depend on the storage."""
        if self.delegate.storage == np.float32:
            return frozenset()
        tensors = context.tensors
        writers: dict[int, bool] = {}  # tensor -> whether its writer here produces exact float32
        readers: dict[int, bool] = {}  # tensor -> whether every reader here takes exact float32
        for inner, _, op_class in chosen:
            for position, t in enumerate(inner.outputs):
                writers[t] = position in op_class.exact_float32_outputs
            for position, t in enumerate(inner.inputs):
                if t >= 0 and position not in op_class.index_inputs:
                    readers[t] = readers.get(t, True) and position in op_class.exact_float32_inputs
        handoffs = self.delegate.handoffs
        kept = set()
        for t in {*writers, *readers}:
            tensor = tensors[t]
            if tensor.type != TensorType.FLOAT32 or tensor.is_constant or not readers.get(t, True):
                continue
            if t in writers:
                if not writers[t] or (t in node.outputs and self._read_only_by_this_delegate(context, [t])):
                    continue  # not written in float32, or handed to a later partition
            elif t not in node.inputs or (id(context), t) in handoffs:
                continue
            kept.add(t)
        return frozenset(kept)

    def _upload_constant(self, tensor) -> Any:
        """Float constants in the storage dtype; integer ones as they are."""
        return self.device.upload(tensor.data, dtype=self._dtype(tensor))

    # -- invoke ----------------------------------------------------------------------------------
    def _prepare_invoke_path(self) -> None:
        """What every invoke reuses, made once: the two events that time the ops (recorded
        again at each invoke; the elapsed time is read only when asked, :attr:`device_ms`)."""
        with self.device.cuda_device:
            self._timing_events = (self.device.xp.cuda.Event(), self.device.xp.cuda.Event())
        self._timed = False

    @property
    def device_ms(self) -> float | None:
        """The last invoke's ops on the device, in ms (between its two events); None before one."""
        if not self._timed:
            return None
        return self.device.elapsed_ms(*self._timing_events)

    def eval(self, context, node: Node) -> None:
        tensors = context.tensors
        device = self.device
        stream = device.stream
        start, end = self._timing_events
        invoke = DeviceCounters()
        with device.active(), device.counting(invoke, self.total):
            for variable in self.environment.read_first:  # one the CPU assigned first: its value, once
                if not variable.initialized:
                    variable.initialize_from_host(device, context.resources)
            for t, staging in self.input_staging.items():
                staging[...] = tensors[t].data  # (float32 -> float16 here, for float16 storage)
                device.upload_into(self.input_buffers[t], staging)
            if self.graph is None and self.delegate.cuda_graphs and self.invokes >= 1 and self.graph_failure is None:
                self._capture()
            start.record(stream)
            if self.graph is not None:
                device.launch_graph(self.graph, self.graph_nodes)
                results, values = self.graph_outputs, self.graph_values
            else:
                values = self._run_ops(self._inputs())
                results = {t: values[t] for t in self.downloads}
            end.record(stream)
            for t in self.downloads:
                device.download_async(results[t], self.output_staging[t])
            device.synchronize()
            for t in self.exposed:
                tensors[t].data[...] = device.download(values[t])
        for t in self.downloads:
            tensors[t].data[...] = self.output_staging[t]
        for variable in self.variables:  # the device buffer is the variable now
            variable.initialized = True
        self._timed = True
        self.last_invoke = invoke
        self.invokes += 1

    def _inputs(self) -> dict[int, Any]:
        return {**self.constants, **self.handed_in, **self.input_buffers}

    def _run_ops(self, values: dict[int, Any]) -> dict[int, Any]:
        """The partition's ops, then the copies into the buffers later partitions read."""
        device = self.device
        for op, inner, reads, label in self.steps:
            args: list[Any] = [None] * len(inner.inputs)
            for position in reads:
                args[position] = values[inner.inputs[position]]
            with device.labelled(label):
                results = op.run(args)
            values.update(zip(inner.outputs, results))
        with device.labelled("hand-off to a later partition"):
            for t, buffer in self.handed_out.items():
                buffer[...] = values[t]
        return values

    # -- CUDA graphs -----------------------------------------------------------------------------
    def _capture(self) -> None:
        """Capture the ops once, reading the fixed input buffers, into a pool that only the
        graph uses (every intermediate the graph writes stays the graph's)."""
        device = self.device
        xp, stream = device.xp, device.stream
        pool = xp.cuda.MemoryPool()
        values = self._inputs()
        try:
            with xp.cuda.using_allocator(pool.malloc):
                stream.begin_capture()
                try:
                    self._run_ops(values)
                finally:
                    graph = stream.end_capture()
        except Exception as error:
            from backends.gpu.emulation import EmulatedDeviceError

            if isinstance(error, EmulatedDeviceError):
                raise  # a bug the emulated device caught, not a capture limitation
            self.graph_failure = f"{type(error).__name__}: {error}"
            warnings.warn(f"GpuDelegate: CUDA graph capture failed, this partition runs eagerly ({self.graph_failure})", RuntimeWarning)
            return
        self.graph = graph
        self.graph_pool = pool  # the graph's memory: kept as long as the graph
        self.graph_outputs = {t: values[t] for t in self.downloads}
        self.graph_values = {t: values[t] for t in self.exposed}
        self.graph_nodes = device.graph_node_count(graph)

    def _drop_graph(self) -> None:
        self.graph = None
        self.graph_pool = None
        self.graph_outputs = {}
        self.graph_values = {}
        self.graph_nodes = 0
        self.graph_failure = None
        self.invokes = 0

    # -- reports ---------------------------------------------------------------------------------
    def stats(self, partition: int) -> PartitionStats:
        if not self.delegate.cuda_graphs:
            graph = "off"
        elif self.graph_failure:
            graph = f"capture failed: {self.graph_failure}"
        else:
            graph = "replaying" if self.graph is not None else "not captured yet"
        return PartitionStats(
            partition, tuple(self.params.nodes_to_replace), self.last_invoke, self.total, self.invokes,
            self.device_ms, graph, self.graph_nodes,
            tuple(label + (f" [{op.tactic.summary()}]" if op.tactic else "") for op, _, _, label in self.steps),
            tuple(_NODE_INDEX.sub("", label) + (f" [{op.tactic.chosen}]" if op.tactic else "") for op, _, _, label in self.steps),
        )

    def tactics(self) -> list[tuple[str, TacticChoice]]:
        """``(label, choice)`` of each step that chose among kernels."""
        return [(label, op.tactic) for op, _, _, label in self.steps if op.tactic is not None]
