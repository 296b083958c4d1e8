"""Delegates: hand parts of a graph to another backend, node by node, version by version.

Two levels, as in TFLite:

- :class:`Delegate` is the low-level contract: ``prepare(context)`` looks at the
  execution plan and calls ``context.replace_node_subsets_with_delegate_kernels``.
- :class:`SimpleDelegate` is the SDK most authors use: declare a support table
  (op -> max version), optionally a predicate with a reason, and a
  :class:`DelegateKernel`; the SDK checks every node's ``registration.version``
  against the table (this cannot be forgotten), records why each rejected node was
  rejected, applies the partition options and builds the delegate kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Sequence

from schema.enums import BuiltinOperator, builtin_operator_name
from delegate_sdk.registration import Registration

if TYPE_CHECKING:  # pragma: no cover
    from delegate_sdk.context import DelegateContext
    from delegate_sdk.node import Node


def _op_key(op: int | str) -> int | str:
    """A builtin op as its int code, a custom op as its name (caps and exclusions)."""
    return op if isinstance(op, str) else int(op)


@dataclass(frozen=True)
class DelegateParams:
    """What a delegate node replaces (TFLite's ``TfLiteDelegateParams``)."""

    delegate: "Delegate"
    nodes_to_replace: tuple[int, ...]
    input_tensors: tuple[int, ...]
    output_tensors: tuple[int, ...]


class Delegate:
    """Low-level delegate: override :meth:`prepare`.

    ``supports_dynamic_tensors`` False (the default, as TFLite's flags) means the
    interpreter refuses this delegate on a graph with dynamic-shaped tensors.
    """

    name: str = "Delegate"
    supports_dynamic_tensors: bool = False

    def prepare(self, context: "DelegateContext") -> None:
        """Inspect ``context.execution_plan`` and replace supported node subsets."""
        raise NotImplementedError


class DelegateKernel:
    """The kernel of one delegate node (one partition). Override the three methods.

    ``init`` receives the :class:`DelegateParams` (the nodes it replaces and its
    boundary tensors); ``prepare`` runs at allocate time; ``eval`` at every invoke.
    Inputs and outputs are the partition's boundary tensors: read
    ``context.tensors[i].data`` for ``i in node.inputs`` and write the outputs' data.
    Tensors inside the partition are never allocated on the CPU side.
    """

    def init(self, context: "DelegateContext", params: DelegateParams) -> None:
        self.params = params

    def prepare(self, context: "DelegateContext", node: "Node") -> None:
        return None

    def eval(self, context: "DelegateContext", node: "Node") -> None:
        raise NotImplementedError


class _Uncapped:
    """A view of a delegate's support table without its caps (for the reason text)."""

    def __init__(self, delegate: "SimpleDelegate") -> None:
        self.support_table = delegate.support_table
        self.custom_support_table = delegate.custom_support_table
        self.version_caps: dict[int | str, int] = {}
        self.excluded_ops: set[int | str] = set()


@dataclass(frozen=True)
class NodeDecision:
    """Why a delegate took or left a node (read by the delegation report)."""

    delegate: str
    node: int
    accepted: bool
    reason: str = ""


class SimpleDelegate(Delegate):
    """A delegate defined by a support table, an optional predicate and a kernel class.

    Subclass and set:
      name: shown in reports and logs.
      support_table: ``{BuiltinOperator.ADD: 1, ...}``, the highest version of each op
        the kernels implement. A node of a higher version is rejected with the reason
        ``"ADD v2: max version supported by NAME is 1"``. Where the versions in between
        are not implemented (they exist only for other types), give the set instead:
        ``{BuiltinOperator.CONV_2D: frozenset({1, 6})}``.
      custom_support_table: custom ops by name, ``{"Convolution2DTransposeBias": 1}``,
        checked the same way against the node's custom name and version (a CUSTOM node
        whose name is not there is rejected).
      kernel_class: a :class:`DelegateKernel` subclass, one instance per partition.
    and optionally override :meth:`node_rejection_reason` to reject nodes for other
    reasons (types, shapes, params).

    Options: ``max_delegated_partitions`` (0 = no limit; the largest partitions are
    kept), ``min_nodes_per_partition`` (smaller partitions stay on the CPU),
    ``version_caps`` (lower the support table per op, to behave like an older
    delegate) and ``excluded_ops``; both may name custom ops too.
    """

    support_table: Mapping[int, int | frozenset[int]] = {}
    custom_support_table: Mapping[str, int | frozenset[int]] = {}
    kernel_class: type[DelegateKernel] = DelegateKernel

    def __init__(
        self,
        *,
        max_delegated_partitions: int = 0,
        min_nodes_per_partition: int = 1,
        version_caps: Mapping[int, int] | None = None,
        excluded_ops: Sequence[int] = (),
    ) -> None:
        if max_delegated_partitions < 0 or min_nodes_per_partition < 1:
            raise ValueError("max_delegated_partitions must be >= 0 and min_nodes_per_partition >= 1")
        self.max_delegated_partitions = max_delegated_partitions
        self.min_nodes_per_partition = min_nodes_per_partition
        self.version_caps = {_op_key(op): int(v) for op, v in (version_caps or {}).items()}
        self.excluded_ops = {_op_key(op) for op in excluded_ops}

    # -- what authors override ----------------------------------------------------------
    def node_rejection_reason(self, context: "DelegateContext", node: "Node", registration: Registration) -> str | None:
        """Return why this (version-supported) node cannot be delegated, or None to accept."""
        return None

    # -- the SDK ----------------------------------------------------------------------------
    def supported_versions(self, op: int) -> frozenset[int]:
        """Every version of ``op`` this delegate takes, after caps and exclusions."""
        table = self.custom_support_table if isinstance(op, str) else self.support_table
        entry = table.get(op, 0)
        versions = frozenset(range(1, int(entry) + 1)) if isinstance(entry, int) else frozenset(entry)
        if op in self.version_caps:
            versions = frozenset(v for v in versions if v <= self.version_caps[op])
        return frozenset() if op in self.excluded_ops else versions

    def max_supported_version(self, op: int) -> int:
        """The highest version of ``op`` this delegate takes (0 when it does not take ``op``)."""
        return max(self.supported_versions(op), default=0)

    def rejection_reason(self, context: "DelegateContext", node: "Node", registration: Registration) -> str | None:
        """The version check, then the author's predicate."""
        custom = registration.builtin_code == BuiltinOperator.CUSTOM
        op = (registration.custom_name or "") if custom else registration.builtin_code  # custom ops: by name
        label = f"{registration.op_name} v{registration.version}"
        if op in self.excluded_ops or registration.builtin_code in self.excluded_ops:
            return f"{label}: excluded by the {self.name} options"
        if op not in (self.custom_support_table if custom else self.support_table):
            return f"{label}: {self.name} does not support {registration.op_name}"
        versions = self.supported_versions(op)
        maximum = max(versions, default=0)
        if registration.version > maximum:
            table_max = max(SimpleDelegate.supported_versions(_Uncapped(self), op), default=0)
            capped = " (capped by options)" if maximum < table_max else ""
            return f"{label}: max version supported by {self.name} is {maximum}{capped}"
        if registration.version not in versions:
            listed = ", ".join(map(str, sorted(versions)))
            return f"{label}: {self.name} supports {registration.op_name} versions {listed} only"
        reason = self.node_rejection_reason(context, node, registration)
        return f"{label}: {reason}" if reason else None

    def prepare(self, context: "DelegateContext") -> None:
        supported = []
        for node_index in context.execution_plan:
            node, registration = context.get_node_and_registration(node_index)
            reason = self.rejection_reason(context, node, registration)
            if reason is None:
                supported.append(node_index)
            else:
                context.record_decision(NodeDecision(self.name, node_index, False, reason))
        chosen = self._apply_partition_options(context, supported)
        for node_index in chosen:
            context.record_decision(NodeDecision(self.name, node_index, True))
        if chosen:
            context.replace_node_subsets_with_delegate_kernels(self.kernel_registration(), chosen, self)

    def _apply_partition_options(self, context: "DelegateContext", supported: list[int]) -> list[int]:
        partitions = [p for p in context.preview_delegate_partitioning(supported)]
        partitions.sort(key=lambda p: -len(p.nodes))
        chosen: list[int] = []
        for rank, partition in enumerate(partitions):
            reason = None
            if len(partition.nodes) < self.min_nodes_per_partition:
                reason = f"its partition has {len(partition.nodes)} node(s), fewer than min_nodes_per_partition={self.min_nodes_per_partition}"
            elif self.max_delegated_partitions and rank >= self.max_delegated_partitions:
                reason = f"only the {self.max_delegated_partitions} largest partition(s) are delegated (max_delegated_partitions)"
            if reason is None:
                chosen.extend(partition.nodes)
                continue
            for node_index in partition.nodes:
                registration = context.get_node_and_registration(node_index)[1]
                context.record_decision(
                    NodeDecision(self.name, node_index, False, f"{registration.op_name} v{registration.version}: {reason}")
                )
        return sorted(chosen)

    def kernel_registration(self) -> Registration:
        """The registration of this delegate's partition nodes (builtin code DELEGATE)."""
        kernel_class = self.kernel_class

        def init(context, node):
            kernel = kernel_class()
            kernel.init(context, node.delegate_params)
            return kernel

        def prepare(context, node):
            node.user_data.prepare(context, node)

        def invoke(context, node):
            node.user_data.eval(context, node)

        return Registration(
            builtin_code=int(BuiltinOperator.DELEGATE), version=1, init=init, prepare=prepare, invoke=invoke, name=self.name
        )

    def __repr__(self) -> str:
        entries = [f"{builtin_operator_name(op)} v{sorted(self.supported_versions(op))}" for op in self.support_table]
        entries += [f"{name} v{sorted(self.supported_versions(name))}" for name in self.custom_support_table]
        table = ", ".join(entries)
        return f"{type(self).__name__}({self.name}: {table})"
