"""One subgraph at run time: tensors, nodes, the execution plan, prepare, allocate, invoke."""

from __future__ import annotations

import contextlib
import operator
from typing import Any, Callable, Sequence

import numpy as np

from backends.cpu.common import BLAS_ONE_THREAD_WORK, ThreadLimit
from delegate_sdk.context import DelegateContext, KernelError, SubgraphHandle
from delegate_sdk.delegate import DelegateParams, NodeDecision
from delegate_sdk.partition import NodeSubset, PlanNode, partition_graph_into_independent_node_subsets
from delegate_sdk.node import Node
from delegate_sdk.registration import Registration
from delegate_sdk.tensor import Allocation, RuntimeTensor
from interpreter.arena import ArenaLimitError, default_arena_limit, format_bytes, make_views, plan_arena, tensor_lifetimes
from schema import model as schema_model
from schema.enums import BuiltinOperator, TensorType
from schema.errors import ModelError
from schema.op_arity import arity_problem


#: The ops that read a sparse constant (its compressed values) as such.
_READS_SPARSE = {BuiltinOperator.DENSIFY: 0, BuiltinOperator.FULLY_CONNECTED: 1}  # op: the input position


class InvokeCancelledError(RuntimeError):
    """``Interpreter.cancel()`` stopped the invoke in flight (TFLite's kTfLiteCancelled)."""


class SharedState:
    """What all subgraphs of one interpreter share: the subgraphs, resource variables,
    limits and the cancellation flag."""

    def __init__(
        self,
        preserve_all_tensors: bool = False,
        arena_limit_bytes: int | None = None,
        max_while_iterations: int | None = None,
        num_threads: int = 1,
    ) -> None:
        self.subgraphs: list["SubgraphRuntime"] = []
        #: the thread pools' size while a subgraph of this interpreter prepares or runs
        self.thread_limit = ThreadLimit(num_threads)
        self.resources: dict[Any, Any] = {}
        self.preserve_all_tensors = preserve_all_tensors
        self.arena_limit_bytes = default_arena_limit() if arena_limit_bytes is None else int(arena_limit_bytes)
        self.max_while_iterations = max_while_iterations
        #: Set by ``Interpreter.cancel()`` (from any thread), cleared when an invoke starts.
        self.cancel_requested = False

    def check_cancelled(self) -> None:
        if self.cancel_requested:
            self.cancel_requested = False
            raise InvokeCancelledError("Client requested cancel during Invoke()")


class SubgraphRuntime(DelegateContext, SubgraphHandle):
    """A subgraph ready to run. Implements the kernel/delegate ``Context``."""

    def __init__(
        self,
        shared: SharedState,
        subgraph: schema_model.Subgraph,
        registrations: Sequence[Registration],
    ) -> None:
        self.shared = shared
        self.index = subgraph.index
        self.name = subgraph.name
        self.inputs = list(subgraph.inputs)
        self.outputs = list(subgraph.outputs)
        self.tensors = list(map(RuntimeTensor.from_model, subgraph.tensors))
        # (Node's fields by position: index, inputs, outputs, params, custom_options, intermediates)
        pairs = list(zip(subgraph.operators, registrations))
        self.nodes: list[Node] = [
            Node(op.index, op.inputs, op.outputs, op.params, op.custom_options, op.intermediates) for op, _ in pairs
        ]
        self.registrations: list[Registration] = [registration for _, registration in pairs]
        self._execution_plan = list(range(len(self.nodes)))
        self._check_tensor_sources()
        self._steps: list[tuple[int, Callable[[], None]]] = []
        self._step_functions: list[Callable[[], None]] = []
        self._profile_steps: list[tuple[int, Callable[[], None] | None]] = []
        self._invoke_limit: Any = self.shared.thread_limit  # (see _build_steps)
        #: The steady plan of a subgraph with nodes prepared at invoke (``_steady_plan``):
        #: (functions, node indices, guarded tensors, their arrays), or None.
        self._steady: tuple | None = None
        self._has_reprepared = False
        self.allocated = False
        self.arena: np.ndarray | None = None
        self.arena_bytes = 0
        self._initialized: set[int] = set()
        self.decisions: list[NodeDecision] = []  # what delegates said about each node
        #: How many times a node was prepared again at invoke (its input shapes changed).
        self.prepares_at_invoke = 0

    # -- Context ----------------------------------------------------------------------------
    @property
    def execution_plan(self) -> list[int]:
        return list(self._execution_plan)

    def get_node_and_registration(self, node_index: int) -> tuple[Node, Registration]:
        if not 0 <= node_index < len(self.nodes):
            raise ValueError(f"Invalid node index {node_index}: subgraph {self.index} has {len(self.nodes)} nodes")
        return self.nodes[node_index], self.registrations[node_index]

    def get_subgraph(self, index: int) -> "SubgraphRuntime":
        if not 0 <= index < len(self.shared.subgraphs):
            raise ValueError(f"subgraph index {index} out of range: the model has {len(self.shared.subgraphs)}")
        return self.shared.subgraphs[index]

    @property
    def arena_limit_bytes(self) -> int | None:
        return self.shared.arena_limit_bytes

    @property
    def resources(self) -> dict[Any, Any]:
        return self.shared.resources

    def describe_node(self, node_index: int) -> str:
        """'node 3 (DEPTHWISE_CONV_2D v2)', with the subgraph when it is not the main one."""
        registration = self.registrations[node_index]
        where = f"subgraph {self.index} " if self.index else ""
        params = self.nodes[node_index].delegate_params
        if params is not None:
            return f"{where}delegate node {node_index} ({registration.op_name}, replacing nodes {list(params.nodes_to_replace)})"
        return f"{where}node {node_index} ({registration.op_name} v{registration.version})"

    # -- DelegateContext ----------------------------------------------------------------------
    def _plan_nodes(self) -> list[PlanNode]:
        return [PlanNode(i, self.nodes[i].inputs, self.nodes[i].outputs) for i in self._execution_plan]

    def preview_delegate_partitioning(self, nodes_to_replace: Sequence[int]) -> list[NodeSubset]:
        self._check_plan_nodes(nodes_to_replace)
        subsets = partition_graph_into_independent_node_subsets(self._plan_nodes(), nodes_to_replace, self.outputs)
        return [subset for subset in subsets if subset.delegated]

    def replace_node_subsets_with_delegate_kernels(
        self, registration: Registration, nodes_to_replace: Sequence[int], delegate: Any
    ) -> None:
        self._check_plan_nodes(nodes_to_replace)
        subsets = partition_graph_into_independent_node_subsets(self._plan_nodes(), nodes_to_replace, self.outputs)
        plan: list[int] = []
        for subset in subsets:
            if not subset.delegated:
                plan.extend(subset.nodes)
                continue
            node = Node(
                index=len(self.nodes),
                inputs=tuple(subset.input_tensors),
                outputs=tuple(subset.output_tensors),
                delegate=delegate,
                delegate_params=DelegateParams(
                    delegate, tuple(subset.nodes), tuple(subset.input_tensors), tuple(subset.output_tensors)
                ),
            )
            self.nodes.append(node)
            self.registrations.append(registration)
            plan.append(node.index)
        self._execution_plan = plan
        self.allocated = False
        self.init_nodes()

    def record_decision(self, decision: NodeDecision) -> None:
        self.decisions.append(decision)

    def _check_plan_nodes(self, node_indices: Sequence[int]) -> None:
        in_plan = set(self._execution_plan)
        stray = [i for i in node_indices if i not in in_plan]
        if stray:
            raise ValueError(f"nodes {stray} are not in the execution plan of subgraph {self.index}")

    def snapshot(self) -> tuple:
        """What a failed delegation must restore."""
        return (list(self._execution_plan), len(self.nodes), len(self.decisions), self.allocated)

    def restore(self, snapshot: tuple) -> None:
        plan, num_nodes, num_decisions, allocated = snapshot
        for node_index in range(num_nodes, len(self.nodes)):
            node, registration = self.nodes[node_index], self.registrations[node_index]
            if node_index in self._initialized:
                if registration.free is not None:
                    registration.free(self, node)
                self._initialized.discard(node_index)
        del self.nodes[num_nodes:]
        del self.registrations[num_nodes:]
        del self.decisions[num_decisions:]
        self._execution_plan = plan
        self.allocated = False

    # -- lifecycle ----------------------------------------------------------------------------
    def init_nodes(self) -> None:
        """Call every registration's ``init`` once (TFLite's OpInit)."""
        initialized, nodes, registrations = self._initialized, self.nodes, self.registrations
        for node_index in self._execution_plan:
            if node_index in initialized:
                continue
            node, registration = nodes[node_index], registrations[node_index]
            if registration.init is not None:
                try:
                    node.user_data = registration.init(self, node)
                except KernelError:
                    raise
                except Exception as error:
                    _Blame(self, node_index, "init").__exit__(type(error), error, error.__traceback__)
            initialized.add(node_index)

    def fold_constants(self) -> None:
        """Prepare, now, the nodes whose inputs are all constant, so kernels that fold
        (DEQUANTIZE of float16 weights, DENSIFY...) publish their outputs as constants
        before delegates look at the graph; and SHAPE / RANK of a tensor of static shape,
        which publish theirs (so a SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE chain is
        constants for a delegate, too). A failure here is left for ``allocate_tensors``
        to report."""
        for node_index in self._execution_plan:
            node, registration = self.nodes[node_index], self.registrations[node_index]
            inputs = [self.tensors[t] for t in node.inputs if t >= 0]
            shape_only = registration.builtin_code in (BuiltinOperator.SHAPE, BuiltinOperator.RANK) and bool(inputs)
            if shape_only:
                shape_only = not inputs[0].is_dynamic and not any(d < 0 for d in (inputs[0].shape_signature or ()))
            if registration.prepare is None or not inputs or not (shape_only or all(t.is_constant for t in inputs)):
                continue
            if self.declaration_problem(node_index) is not None:
                continue
            try:
                registration.prepare(self, node)
            except Exception:
                continue

    def declaration_problem(self, node_index: int, at_invoke: bool = False) -> str | None:
        """What is wrong with a node by its op's declaration (``schema.op_arity``: inputs,
        outputs, ranks of the current shapes; a dynamic tensor's rank only ``at_invoke``),
        or None. Reported when the node is prepared, as TFLite's kernels report it."""
        node, registration = self.nodes[node_index], self.registrations[node_index]

        def rank_of(tensor_index: int) -> int | None:
            tensor = self.tensors[tensor_index]
            return None if tensor.is_dynamic and not at_invoke else len(tensor.shape)

        return arity_problem(registration.builtin_code, node.inputs, node.outputs, rank_of)

    def _check_tensor_sources(self) -> None:
        """Refuse at load a model whose tensors do not flow as TFLite's kernels assume:
        every tensor a node reads is a constant, a variable, an input of the subgraph or
        written by a node before it (otherwise its value would be whatever the memory
        held: TFLite reads uninitialised arena bytes); each tensor has one writer, never
        a subgraph input or a constant; a sparse constant (its compressed values) is read
        only by the ops that expand it; every tensor a node or the subgraph touches has a
        type the runtime can hold."""
        if self._tensor_sources_plain():
            return
        written = set(self.inputs)
        writer: dict[int, int] = {}
        for node in self.nodes:
            for position, t in enumerate(node.outputs):
                tensor = self.tensors[t]
                problem = None
                if t in writer:
                    problem = f"which {self.describe_node(writer[t])} also writes"
                elif t in self.inputs:
                    problem = f"an input of subgraph {self.index}"
                elif tensor.is_constant:
                    problem = "a constant"
                if problem is not None:
                    raise ModelError(
                        f"malformed model: {self.describe_node(node.index)} output {position} is tensor {t} "
                        f"({tensor.name!r}), {problem} (each tensor has one writer)"
                    )
                writer[t] = node.index
            written.update(node.outputs)
        duplicated = sorted({t for t in self.inputs if self.inputs.count(t) > 1})
        if duplicated:
            raise ModelError(
                f"malformed model: subgraph {self.index} lists tensor {duplicated[0]} "
                f"({self.tensors[duplicated[0]].name!r}) among its inputs more than once"
            )
        for role, tensors in (("input", self.inputs), ("output", self.outputs)):
            for position, t in enumerate(tensors):
                if self.tensors[t].dtype is None:
                    where = f"subgraph {self.index} {role} {position}"
                    raise ModelError(
                        f"malformed model: {where} is tensor {t} ({self.tensors[t].name!r}) of type "
                        f"{self.tensors[t].type_name}, which this runtime cannot hold"
                    )
        for node, registration in zip(self.nodes, self.registrations):
            for role, tensors in (("input", node.inputs), ("output", node.outputs)):
                for position, t in enumerate(tensors):
                    if t >= 0 and self.tensors[t].dtype is None:
                        raise ModelError(
                            f"malformed model: {self.describe_node(node.index)} {role} {position} is tensor {t} "
                            f"({self.tensors[t].name!r}) of type {self.tensors[t].type_name}, which this runtime cannot hold"
                        )
            for position, t in enumerate(node.inputs):
                tensor = self.tensors[t] if t >= 0 else None
                if tensor is not None and tensor.sparsity is not None and _READS_SPARSE.get(registration.builtin_code) != position:
                    raise ModelError(
                        f"malformed model: {self.describe_node(node.index)} input {position} is tensor {t} "
                        f"({tensor.name!r}), which is sparse: only DENSIFY (its input) and FULLY_CONNECTED (its weights) read sparse tensors"
                    )
                if t >= 0 and t in writer and writer[t] >= node.index:
                    raise ModelError(
                        f"malformed model: {self.describe_node(node.index)} input {position} is tensor {t} "
                        f"({self.tensors[t].name!r}), which {self.describe_node(writer[t])} writes: a node reads "
                        "what the nodes before it wrote (the operators are not in execution order)"
                    )
                if t < 0 or t in written:
                    continue
                if tensor.is_constant or tensor.is_variable:
                    continue
                if 0 in tuple(tensor.shape):  # an empty constant ([0]) has an empty buffer: its value is []
                    tensor.data = np.empty(tensor.shape, dtype=tensor.dtype)
                    tensor.allocation = Allocation.CONSTANT
                    continue
                raise ModelError(
                    f"malformed model: {self.describe_node(node.index)} input {position} is tensor {t} "
                    f"({tensor.name!r}), which has no data (its buffer is empty), is not a variable, not an input of the "
                    "subgraph and not written by any node"
                )

    def _tensor_sources_plain(self) -> bool:
        """Whether ``_check_tensor_sources`` has nothing to refuse and nothing to do, found
        in one pass over the nodes with set lookups alone; False sends the subgraph to its
        full check, which raises the error (or gives an empty constant its empty value)."""
        inputs = self.inputs
        subgraph_inputs = set(inputs)
        constants, readable, unholdable, sparse = set(), set(subgraph_inputs), set(), set()
        for index, tensor in enumerate(self.tensors):
            if tensor.allocation is Allocation.CONSTANT:
                constants.add(index)
                readable.add(index)
            elif tensor.is_variable:
                readable.add(index)
            if tensor.dtype is None:
                unholdable.add(index)
            if tensor.sparsity is not None:
                sparse.add(index)
        if len(subgraph_inputs) != len(inputs) or not unholdable.isdisjoint((*inputs, *self.outputs)):
            return False
        all_outputs: set[int] = set()
        for node in self.nodes:
            all_outputs.update(node.outputs)
        written: set[int] = set()
        for node, registration in zip(self.nodes, self.registrations):
            for position, t in enumerate(node.inputs):
                if t < 0 or t in written:
                    continue
                if t in all_outputs or t not in readable or t in unholdable:
                    return False  # (written by this node or a later one, never written, or unholdable)
                if t in sparse and _READS_SPARSE.get(registration.builtin_code) != position:
                    return False
            for t in node.outputs:
                if t in written or t in constants or t in subgraph_inputs or t in unholdable:
                    return False
                written.add(t)
        return True

    def free_nodes(self) -> None:
        for node_index in list(self._initialized):
            node, registration = self.nodes[node_index], self.registrations[node_index]
            if registration.free is not None:
                registration.free(self, node)
        self._initialized.clear()

    def allocate_tensors(self) -> None:
        """Prepare every node in plan order (propagating shapes), plan the arena, allocate.

        A no-op when nothing changed since the last allocation (as in TFLite): a resize or
        a delegate marks the subgraph unallocated.
        """
        if self.allocated:
            return
        with self.shared.thread_limit:
            self._allocate()

    def _allocate(self) -> None:
        self.init_nodes()
        for tensor in self.tensors:
            # Start from a clean slate: shapes may have changed, so prepare-time
            # constants are recomputed and the arena is planned again.
            if tensor.allocation in (Allocation.ARENA, Allocation.DYNAMIC, Allocation.PERSISTENT):
                tensor.allocation = Allocation.NONE
                tensor.data = None
        for tensor_index in self.inputs:
            tensor = self.tensors[tensor_index]
            if tensor.allocation is Allocation.NONE:
                tensor.allocation = Allocation.ARENA
        self._allocate_variables()
        # Prepare in plan order. A node that reads a dynamic tensor cannot know its shapes
        # yet: like TFLite, it is not prepared now but before each invoke, and its outputs
        # are dynamic too.
        dynamic: set[int] = set()
        self._reprepare: set[int] = set()
        for node_index in self._execution_plan:
            node, registration = self.nodes[node_index], self.registrations[node_index]
            if any(t in dynamic for t in node.inputs if t >= 0):
                self._reprepare.add(node_index)
                for t in node.outputs:
                    self.tensors[t].set_dynamic()
                    dynamic.add(t)
                continue
            with self._blame(node_index, "prepare"):
                problem = self.declaration_problem(node_index)
                if problem is not None:
                    raise ModelError(problem)
                if registration.prepare is not None:
                    registration.prepare(self, node)
            dynamic.update(t for t in node.outputs if self.tensors[t].allocation is Allocation.DYNAMIC)
        self._allocate_variables()  # (again: for a variable a node resized in prepare)
        self._allocate_arena()
        self._build_steps()
        self.allocated = True

    def _allocate_variables(self) -> None:
        for tensor in self.tensors:
            if tensor.is_variable and (tensor.data is None or tensor.data.shape != tensor.shape):
                tensor.data = np.full(tensor.shape, _variable_reset_value(tensor), dtype=tensor.dtype)
                tensor.allocation = Allocation.VARIABLE

    def _live_nodes(self) -> list[int]:
        """Plan nodes that still compute at invoke (not folded into constants at prepare)."""
        live = []
        for node_index in self._execution_plan:
            outputs = [self.tensors[t] for t in self.nodes[node_index].outputs if t >= 0]
            if outputs and all(t.allocation is Allocation.PERSISTENT for t in outputs):
                continue
            live.append(node_index)
        return live

    def _allocate_arena(self) -> None:
        live = self._live_nodes()
        dynamic = self._dynamic_tensors(live)
        arena_tensors: set[int] = set()
        for node_index in live:
            node = self.nodes[node_index]
            for t in (*node.outputs, *node.temporaries):
                tensor = self.tensors[t]
                if t not in dynamic and tensor.allocation in (Allocation.NONE, Allocation.ARENA):
                    arena_tensors.add(t)
        for t in self.inputs:
            if self.tensors[t].allocation in (Allocation.NONE, Allocation.ARENA):
                arena_tensors.add(t)
        # Strings are Python objects: they get arrays of their own, outside the byte arena
        # (None until written). A value set_tensor gave before this first allocation is
        # kept, as LiteRT keeps it (its string tensors are dynamic buffers).
        for t in [t for t in arena_tensors if self.tensors[t].dtype == np.object_]:
            arena_tensors.discard(t)
            tensor = self.tensors[t]
            tensor.allocation = Allocation.ARENA
            if tensor.data is None or tensor.data.shape != tensor.shape or tensor.data.dtype != np.object_:
                tensor.data = np.empty(tensor.shape, dtype=object)
        for t in arena_tensors:
            self.tensors[t].allocation = Allocation.ARENA
        for t in dynamic:
            self.tensors[t].allocation = Allocation.DYNAMIC
        plan_inputs = [self.nodes[n].inputs for n in live]
        plan_outputs = [(*self.nodes[n].outputs, *self.nodes[n].temporaries) for n in live]
        whole = set(self.inputs) | set(self.outputs)
        lifetimes = tensor_lifetimes(arena_tensors, plan_inputs, plan_outputs, whole)
        shared = self._shared_buffers(live, arena_tensors)
        for t, root in shared.items():  # the memory lives as long as any tensor placed on it
            lifetimes[root] = (min(lifetimes[root][0], lifetimes[t][0]), max(lifetimes[root][1], lifetimes[t][1]))
        planned = [t for t in arena_tensors if t not in shared]
        sizes = {t: self.tensors[t].nbytes for t in planned}
        placements, total = plan_arena(
            sizes, {t: lifetimes[t] for t in planned}, share_memory=not self.shared.preserve_all_tensors
        )
        self.arena = self._new_arena(total, planned)
        self.arena_bytes = total
        offsets = {}
        for placement in placements:
            tensor = self.tensors[placement.tensor]
            tensor.data = make_views(self.arena, placement.offset, tensor.shape, tensor.dtype)
            offsets[placement.tensor] = placement.offset
        for t, root in shared.items():
            tensor = self.tensors[t]
            tensor.data = make_views(self.arena, offsets[root], tensor.shape, tensor.dtype)

    def _new_arena(self, total: int, planned: Sequence[int]) -> np.ndarray:
        """The zeroed arena of ``total`` bytes, or ArenaLimitError naming the largest tensors."""
        limit = self.shared.arena_limit_bytes
        why = None
        if total > limit:
            why = f"over the interpreter's arena limit of {format_bytes(limit)}"
        else:
            try:
                return np.zeros(total, dtype=np.uint8)
            except MemoryError:
                why = "more than this machine could allocate"
        largest = sorted(planned, key=lambda t: -self.tensors[t].nbytes)[:3]
        listed = ", ".join(
            f"{t} {self.tensors[t].name!r} {list(self.tensors[t].shape)} {self.tensors[t].type_name} "
            f"({format_bytes(self.tensors[t].nbytes)})"
            for t in largest
        )
        raise ArenaLimitError(
            f"allocate_tensors: the tensors of subgraph {self.index} need {format_bytes(total)} at once, {why}; "
            f"the largest: {listed}. Smaller input shapes (resize_tensor_input) need less; "
            "Interpreter(experimental_arena_limit_bytes=...) sets the limit"
        )

    def _shared_buffers(self, live: Sequence[int], arena_tensors: set[int]) -> dict[int, int]:
        """{output: tensor whose memory it takes} for the nodes whose kernel says output 0
        is input 0's bytes under a new shape (RESHAPE, SQUEEZE, EXPAND_DIMS), when both are
        arena tensors of the same size and the input is not a subgraph input (what the
        caller writes there stays apart from what the model computes)."""
        shared: dict[int, int] = {}
        for node_index in live:
            node = self.nodes[node_index]
            if not getattr(node.user_data, "output_shares_input", False) or node_index in self._reprepare:
                continue
            source, target = node.inputs[0], node.outputs[0]
            if (
                source in arena_tensors
                and target in arena_tensors
                and source not in self.inputs
                and target not in shared
                and self.tensors[source].nbytes == self.tensors[target].nbytes
            ):
                shared[target] = shared.get(source, source)
        return shared

    def _dynamic_tensors(self, live: Sequence[int]) -> set[int]:
        """Outputs whose shape is only known at invoke (marked during prepare)."""
        return {t.index for t in self.tensors if t.allocation is Allocation.DYNAMIC}

    def _build_steps(self) -> None:
        steps = []
        for node_index in self._live_nodes():
            node, registration = self.nodes[node_index], self.registrations[node_index]
            if registration.invoke is None:
                continue
            if node_index in self._reprepare:
                steps.append((node_index, self._reprepared_step(node, registration)))
            else:
                kernel = node.user_data
                direct = None
                if getattr(kernel, "buffers_watched", False):  # (watched in an earlier plan: not now)
                    kernel.buffers_watched = False
                if self._computes_nothing(node):
                    steps.append((node_index, None))
                    continue
                if getattr(registration.invoke, "calls_user_data_invoke", False):
                    with self._blame(node_index, "bind"):
                        direct = kernel.bind()
                    if direct is None:  # nothing to do at invoke (an output sharing its input's memory)
                        steps.append((node_index, None))
                        continue
                steps.append((node_index, direct or _bind(registration.invoke, self, node)))
        self._profile_steps = steps  # every live node; None for one with nothing to run
        self._steps = [(node_index, step) for node_index, step in steps if step is not None]
        self._step_functions = [step for _, step in self._steps]  # (what invoke runs, in order)
        self._steady = None
        self._has_reprepared = bool(self._reprepare)
        self._invoke_limit = self._thread_limit_for(self._steps)

    def _thread_limit_for(self, steps: Sequence[tuple[int, Any]]) -> Any:
        """What an invoke of ``steps`` runs in: the interpreter's ``ThreadLimit``, or no
        limit when every kernel says its BLAS calls are too small for a second thread
        (``CpuKernel.blas_work``, set by prepare: a node not prepared yet says nothing):
        then changing OpenBLAS's count, and waking its threads after, is pure cost."""
        for node_index, _ in steps:
            work = getattr(self.nodes[node_index].user_data, "blas_work", None)
            if work is None or work > BLAS_ONE_THREAD_WORK:
                return self.shared.thread_limit
        return _NO_LIMIT

    def _computes_nothing(self, node: Node) -> bool:
        """Whether a prepared node has nothing to compute: every output is empty (a 0 in
        its shape) and its kernel has no side effects (``foldable``). Such a node is not
        run, as TFLite's kernels return at once on empty tensors."""
        outputs = [self.tensors[t] for t in node.outputs]
        return (
            bool(outputs)
            and all(0 in t.shape and not t.is_dynamic for t in outputs)
            and getattr(node.user_data, "foldable", False) is True
        )

    def _reprepared_step(self, node: Node, registration: Registration) -> Callable[[], None]:
        """The step of a node that reads a tensor whose shape is only known at invoke.

        As in TFLite, the node is prepared again only when the shape of one of its inputs
        changed since its last prepare (kernels read only constant inputs' values in
        prepare: a value-dependent shape is a dynamic output, set at invoke). Its outputs
        keep their memory while their shapes hold. Once it finds the same input and output
        buffers at two invokes in a row, it runs its kernel's bound function (``bind``,
        asked again whenever a buffer changes), as a node prepared at allocation does."""
        inputs = [self.tensors[t] for t in node.inputs if t >= 0]
        outputs = [self.tensors[t] for t in node.outputs if t >= 0]
        # Only dynamic tensors change shape or memory between allocations: the checks
        # at each invoke look at those alone.
        dynamic_inputs = [t for t in inputs if t.is_dynamic]
        watched = [t for t in inputs + outputs if t.is_dynamic]
        kernel = node.user_data
        can_bind = getattr(registration.invoke, "calls_user_data_invoke", False) and hasattr(kernel, "bind")
        invoke_once = _bind(registration.invoke, self, node)
        # shapes: the input shapes of the last prepare; owned: the output arrays made here
        # (an output the kernel replaces at invoke, by set_data, is never bound);
        # buffers: the arrays seen at the last invoke; bound: the kernel's bound function.
        state: dict[str, Any] = {"shapes": None, "owned": [None] * len(outputs), "buffers": None, "bound": None}

        def prepare() -> None:
            state["shapes"] = state["buffers"] = state["bound"] = None
            problem = self.declaration_problem(node.index, at_invoke=True)
            if problem is not None:
                raise ModelError(f"{self.describe_node(node.index)}: {problem}")
            if registration.prepare is not None:
                self.prepares_at_invoke += 1
                registration.prepare(self, node)
            owned = state["owned"]
            for position, tensor in enumerate(outputs):
                if tensor.allocation is not Allocation.DYNAMIC:
                    continue
                if tensor.data is None or tensor.data is not owned[position] or tensor.data.shape != tensor.shape:
                    tensor.data = owned[position] = np.empty(tensor.shape, dtype=tensor.dtype)

        # The steady state, checked first: the bound function and the arrays it was bound to.
        # Each watched tensor still holding the same array means no shape changed (a
        # dynamic tensor's shape is its array's: set_data sets both, and prepare() above
        # gives an output a new array when its shape changes).
        steady: list = [None, ()]
        get_data, same = operator.attrgetter("data"), operator.is_

        def step() -> None:
            bound = steady[0]
            if bound is not None and all(map(same, map(get_data, watched), steady[1])):
                bound()
                return
            steady[0] = None
            shapes = [t.shape for t in dynamic_inputs]
            if shapes != state["shapes"]:
                prepare()
                state["shapes"] = shapes
            buffers = [t.data for t in watched]
            seen = state["buffers"]
            unchanged = seen is not None and all(a is b for a, b in zip(buffers, seen))
            if unchanged and state["bound"] is not None:
                state["bound"]()
                return
            if unchanged and can_bind and all(t.data is mine for t, mine in zip(outputs, state["owned"])):
                kernel.buffers_watched = True  # (checked here before every call: see CpuKernel)
                state["bound"] = kernel.bind() or _nothing
                steady[0], steady[1] = state["bound"], tuple(buffers)
                state["bound"]()
                return
            state["bound"] = None
            state["buffers"] = buffers
            invoke_once()

        # What the steady plan reads: the bound function and its arrays (steady[0] None
        # while not steady), the watched tensors, and whether the bound function may give
        # an output a new array (the kernel's invoke itself: it may call set_data).
        step.steady, step.watched = steady, watched
        step.may_replace = lambda: steady[0] == kernel.invoke
        return step

    def invoke(self) -> None:
        """Run the plan once."""
        if not self.allocated:
            raise RuntimeError("Invoke called on model that is not ready.")
        shared = self.shared
        with self._invoke_limit:
            steady = self._steady
            if steady is not None:
                functions, nodes, tensors, arrays = steady
                if all(map(operator.is_, map(_DATA, tensors), arrays)):
                    stopped = self._run(functions, nodes)
                    if stopped is None:
                        return
                    # A buffer changed: the rest of the steps as below (nodes prepared
                    # again may now make larger BLAS calls: the pools limited).
                    self._steady, self._invoke_limit = None, shared.thread_limit
                    with shared.thread_limit:
                        self._run(self._step_functions, [n for n, _ in self._steps], stopped + 1)
                    return
                self._steady, self._invoke_limit = None, shared.thread_limit
            with shared.thread_limit if self._steady is None and self._has_reprepared else _NO_LIMIT:
                self._run(self._step_functions, [n for n, _ in self._steps])
            if self._has_reprepared:
                self._steady = self._steady_plan()
                if self._steady is not None:
                    self._invoke_limit = self._thread_limit_for(self._steps)

    def _run(self, functions: Sequence[Callable[[], None]], nodes: Sequence[int], start: int = 0) -> int | None:
        """Run ``functions[start:]`` (the steps of ``nodes``); None when all ran, or the
        position of a steady-plan step after which a buffer changed (``_BufferChanged``)."""
        shared = self.shared
        position = start - 1
        try:
            # The steps are fixed for the allocation (bound closures, checked at prepare):
            # between two, only the cancellation flag is read.
            for position in range(start, len(functions)):
                if shared.cancel_requested:
                    shared.check_cancelled()
                functions[position]()
        except _BufferChanged:
            return position
        except (KernelError, InvokeCancelledError):
            raise
        except Exception as error:
            node_index = nodes[position] if position >= 0 else -1
            raise KernelError(
                f"{self.describe_node(node_index)} failed: {type(error).__name__}: {error}"
            ) from as_arena_limit_error(error)
        return None

    def _steady_plan(self) -> tuple | None:
        """The plan a subgraph with nodes prepared at invoke runs once each of them runs its
        bound function: those functions themselves, without the per-step checks of
        ``_reprepared_step``. Valid while every tensor they watch holds the same array
        (checked once, when an invoke starts) and no step gives a dynamic output a new
        array: a step that may (a node prepared at allocation with a dynamic output, such
        as READ_VARIABLE; a node prepared at invoke whose bound function is its kernel's
        invoke) is checked after it runs, and a change hands the rest of that invoke to
        the checked steps. None while some node is not steady yet."""
        functions, nodes, tensors, arrays, expected = [], [], [], [], {}
        for node_index, step in self._steps:
            steady = getattr(step, "steady", None)
            if steady is not None:
                bound, watched_arrays = steady
                if bound is None:
                    return None
                for tensor, array in zip(step.watched, watched_arrays):
                    if expected.setdefault(id(tensor), array) is not array:
                        return None
                    if len(expected) > len(tensors):
                        tensors.append(tensor)
                        arrays.append(array)
                function, replaces = bound, step.may_replace()
            else:
                function = step
                replaces = any(self.tensors[t].is_dynamic for t in self.nodes[node_index].outputs if t >= 0)
            outputs = [self.tensors[t] for t in self.nodes[node_index].outputs if t >= 0 and self.tensors[t].is_dynamic]
            if replaces and outputs:
                function = _checked_step(function, outputs)
            functions.append(function)
            nodes.append(node_index)
        return functions, nodes, tensors, arrays

    @property
    def max_while_iterations(self) -> int | None:
        """The interpreter's bound on the iterations of one WHILE node's run (None: none)."""
        return self.shared.max_while_iterations

    def invoke_profiled(self) -> list[tuple[int, float]]:
        """Run the plan once, timing every step: [(plan node index, seconds)].

        A delegate node is one step (its whole partition)."""
        import time

        if not self.allocated:
            raise RuntimeError("Invoke called on model that is not ready.")
        timings = []
        node_index = -1
        with self.shared.thread_limit:
            try:
                for node_index, step in self._profile_steps:
                    self.shared.check_cancelled()
                    start = time.perf_counter()
                    if step is not None:
                        step()
                    timings.append((node_index, time.perf_counter() - start))
            except (KernelError, InvokeCancelledError):
                raise
            except Exception as error:
                raise KernelError(
                    f"{self.describe_node(node_index)} failed: {type(error).__name__}: {error}"
                ) from as_arena_limit_error(error)
        return timings

    # -- SubgraphHandle (for control-flow kernels) ------------------------------------------
    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        if len(inputs) != len(self.inputs):
            raise ValueError(f"subgraph {self.index} takes {len(self.inputs)} inputs, got {len(inputs)}")
        self.shared.check_cancelled()  # (a WHILE over subgraphs without nodes checks here)
        resized = False
        for tensor_index, value in zip(self.inputs, inputs):
            tensor = self.tensors[tensor_index]
            if tuple(np.shape(value)) != tensor.shape:
                tensor.shape = tuple(np.shape(value))
                resized = True
        if resized:
            self.allocated = False
        self.allocate_tensors()
        for position, (tensor_index, value) in enumerate(zip(self.inputs, inputs)):
            tensor = self.tensors[tensor_index]
            if tensor.is_constant or tensor.data is None:
                why = "a constant" if tensor.is_constant else "a tensor without memory"
                raise ValueError(
                    f"subgraph {self.index} input {position} is tensor {tensor_index} ({tensor.name!r}), {why}: "
                    "it cannot take the value the calling node passes"
                )
            tensor.data[...] = value
        self.invoke()
        for position, tensor_index in enumerate(self.outputs):
            if self.tensors[tensor_index].data is None:
                raise ValueError(
                    f"subgraph {self.index} output {position} is tensor {tensor_index} "
                    f"({self.tensors[tensor_index].name!r}), which has no value: no node of the subgraph writes it"
                )
        return [np.array(self.tensors[t].data, copy=True) for t in self.outputs]

    def reset_variables(self) -> None:
        for tensor in self.tensors:
            if tensor.is_variable and tensor.data is not None:
                tensor.data[...] = _variable_reset_value(tensor)

    # -- helpers --------------------------------------------------------------------------
    def _blame(self, node_index: int, phase: str):
        return _Blame(self, node_index, phase)


class _Blame:
    """Re-raise a kernel failure as KernelError naming the node, op, version and phase."""

    def __init__(self, subgraph: SubgraphRuntime, node_index: int, phase: str) -> None:
        self.subgraph, self.node_index, self.phase = subgraph, node_index, phase

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, error, traceback) -> bool:
        if error is None or isinstance(error, KernelError):
            return False
        raise KernelError(
            f"{self.subgraph.describe_node(self.node_index)} failed in {self.phase}: {type(error).__name__}: {error}"
        ) from as_arena_limit_error(error)


def as_arena_limit_error(error: BaseException) -> BaseException:
    """A kernel's or a delegate's ``MemoryError`` (numpy could not allocate its scratch) as
    the arena's ArenaLimitError (the machine could not give the memory), chained to it;
    other errors as they are."""
    if not isinstance(error, MemoryError):
        return error
    try:
        raise ArenaLimitError(
            f"out of memory: {error or 'the allocation failed'} (smaller input shapes need less)"
        ) from error
    except ArenaLimitError as converted:
        return converted


def _variable_reset_value(tensor: RuntimeTensor) -> int:
    """What LiteRT's ``ResetVariableTensor`` fills a variable tensor with (at its first
    allocation and at ``reset_all_variables``): the zero point of an int8 tensor, else 0."""
    if tensor.type == TensorType.INT8 and tensor.quantization is not None and np.size(tensor.quantization.zero_point):
        return int(np.asarray(tensor.quantization.zero_point).ravel()[0])
    return 0


def _nothing() -> None:
    return None


_DATA = operator.attrgetter("data")
_NO_LIMIT = contextlib.nullcontext()


class _BufferChanged(Exception):
    """A step of the steady plan gave a dynamic output a new array (its shape changed)."""


def _checked_step(function: Callable[[], None], outputs: Sequence[RuntimeTensor]) -> Callable[[], None]:
    """``function``, then a check that ``outputs`` still hold the arrays they hold now."""
    arrays = [tensor.data for tensor in outputs]
    if len(outputs) == 1:
        (tensor,), (array,) = outputs, arrays

        def checked_one() -> None:
            function()
            if tensor.data is not array:
                raise _BufferChanged

        return checked_one

    def checked() -> None:
        function()
        if not all(map(operator.is_, map(_DATA, outputs), arrays)):
            raise _BufferChanged

    return checked


def _bind(function: Callable, context: DelegateContext, node: Node) -> Callable[[], None]:
    return lambda: function(context, node)
