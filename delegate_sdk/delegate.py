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

import difflib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from schema.enums import BuiltinOperator, builtin_operator_name
from schema.op_arity import arity_problem
from delegate_sdk.context import KernelError
from delegate_sdk.registration import Registration

if TYPE_CHECKING:  # pragma: no cover
    from delegate_sdk.context import DelegateContext
    from delegate_sdk.node import Node


def _op_key(op: int | str) -> int | str:
    """A builtin op as its int code, a custom op as its name (caps and exclusions)."""
    return op if isinstance(op, str) else int(op)


class DelegateError(ValueError):
    """A delegate cannot be applied to this graph (for example static shapes only), or is
    declared wrongly. When raised by ``modify_graph_with_delegate``, ``report`` is the
    ``DelegationReport`` of the attempt (the plan was restored: every node on the CPU, or
    where earlier delegates put it)."""

    report: Any = None


class DelegateDeclarationError(DelegateError, TypeError):
    """A delegate's declaration is wrong: a support table keyed by something that is not an
    op, a version that is not a positive int, a ``kernel_class`` that is not a
    :class:`DelegateKernel` class, a rejection reason that is not a str. The message says
    what to write instead."""


class DelegatePrepareError(DelegateError, RuntimeError):
    """The delegate raised in ``prepare`` (or its kernels in init/prepare) while it was
    applied: the execution plan was restored, as LiteRT does ("Restored original execution
    plan after delegate application failure."), and the interpreter runs as before.
    ``report`` says where every node runs now and carries the failure in ``report.error``;
    ``__cause__`` is the delegate's exception. A ``RuntimeError`` too, as LiteRT's."""


class InvalidReplacementError(DelegateError):
    """A delegate asked ``replace_node_subsets_with_delegate_kernels`` for a bad node set
    (a node twice, a node not in the execution plan, something that is not a node index),
    or passed a registration or delegate that cannot run the partition."""


class DelegateKernelError(KernelError):
    """A delegate kernel broke the contract at invoke: it left an output with the wrong
    shape or dtype, replaced an output's array instead of writing into it, or (with
    ``LITEDELEGATE_DEBUG=1``) did not write an output at all. Names the delegate node."""


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
    delegate must not take a node that reads or writes a dynamic-sized tensor
    (``context.dynamic_tensors``: a shape known only at invoke, such as READ_VARIABLE's
    output). ``SimpleDelegate`` leaves those nodes on the CPU, with a reason naming this
    attribute, and takes the rest; a low-level delegate that takes one anyway is refused
    with ``DelegateError``. Set it True when the kernels handle shapes that change at
    invoke (the output arrays may then be replaced by new ones of the new shape).
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
        raise NotImplementedError(
            f"{type(self).__name__}.eval is not written: a DelegateKernel subclass computes the partition's outputs "
            "in eval(context, node) (context.tensors[t].data[...] = value for t in node.outputs)"
        )


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
        ``{BuiltinOperator.CONV_2D: frozenset({1, 6})}``. Op names are accepted and
        converted (``{"ADD": 1}`` is ``{BuiltinOperator.ADD: 1}``).
      custom_support_table: custom ops by name, ``{"Convolution2DTransposeBias": 1}``,
        checked the same way against the node's custom name and version (a CUSTOM node
        whose name is not there is rejected).
      kernel_class: a :class:`DelegateKernel` subclass, one instance per partition.
    and optionally override :meth:`node_rejection_reason` to reject nodes for other
    reasons (types, shapes, params).

    The declaration is checked when the delegate is constructed and again when it is
    applied: a key that is not an op, a version that is not a positive int or a set of
    them, a ``kernel_class`` that is not a kernel class, or a rejection reason that is
    not a str raises :class:`DelegateDeclarationError` saying what to write instead.

    Options: ``max_delegated_partitions`` (0 = no limit; the largest partitions are
    kept), ``min_nodes_per_partition`` (smaller partitions stay on the CPU),
    ``version_caps`` (lower the support table per op, to behave like an older
    delegate) and ``excluded_ops``; both may name custom ops too, and builtin ops by name.
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
        if version_caps is not None and not isinstance(version_caps, Mapping):
            raise DelegateDeclarationError(
                f"version_caps must be a dict of op -> highest version (e.g. {{BuiltinOperator.ADD: 1}}), "
                f"got {type(version_caps).__name__}"
            )
        if isinstance(excluded_ops, (str, int)):
            raise DelegateDeclarationError(
                f"excluded_ops must be a list of ops (e.g. [BuiltinOperator.ADD]), got {excluded_ops!r}"
            )
        self.version_caps = {_op_key(op): v for op, v in (version_caps or {}).items()}
        self.excluded_ops = {_op_key(op) for op in excluded_ops}
        self.check_declaration()

    # -- what authors override ----------------------------------------------------------
    def node_rejection_reason(self, context: "DelegateContext", node: "Node", registration: Registration) -> str | None:
        """Return why this (version-supported) node cannot be delegated, or None to accept."""
        return None

    # -- the declaration ------------------------------------------------------------------
    def check_declaration(self) -> None:
        """Check ``support_table``, ``custom_support_table``, ``version_caps``,
        ``excluded_ops`` and ``kernel_class``, and normalize them: op names become
        ``BuiltinOperator`` members, version sets become frozensets. Runs at construction
        and each time the delegate is applied (a subclass may set its tables later).

        Raises:
          DelegateDeclarationError: what is wrong, and what to write instead.
        """
        who = type(self).__name__
        if not getattr(self, "name", "") or self.name == Delegate.name:
            self.name = who  # the name reports and reasons use: the class's, unless set
        tables = (
            ("support_table", False, self.support_table),
            ("custom_support_table", True, self.custom_support_table),
        )
        for attribute, custom, table in tables:
            normalized = _normalize_table(who, attribute, table, custom)
            if normalized != table or type(table) is not dict:
                setattr(self, attribute, normalized)
        customs = set(self.custom_support_table)
        self.version_caps = {
            _normalize_option_key(who, "version_caps", op, customs): _check_cap(who, op, v)
            for op, v in self.version_caps.items()
        }
        self.excluded_ops = {_normalize_option_key(who, "excluded_ops", op, customs) for op in self.excluded_ops}
        if type(self).kernel_registration is SimpleDelegate.kernel_registration:
            _check_kernel_class(who, self.kernel_class)

    # -- the SDK ----------------------------------------------------------------------------
    def supported_versions(self, op: int) -> frozenset[int]:
        """Every version of ``op`` this delegate takes, after caps and exclusions."""
        if isinstance(op, str) and op not in self.custom_support_table and op.upper() in BuiltinOperator.__members__:
            op = BuiltinOperator[op.upper()]
        table = self.custom_support_table if isinstance(op, str) else self.support_table
        entry = table.get(op, 0)
        versions = frozenset(range(1, int(entry) + 1)) if isinstance(entry, int) else frozenset(entry)
        if op in self.version_caps:
            versions = frozenset(v for v in versions if v <= self.version_caps[op])
        return frozenset() if op in self.excluded_ops else versions

    def max_supported_version(self, op: int) -> int:
        """The highest version of ``op`` this delegate takes (0 when it does not take ``op``)."""
        return max(self.supported_versions(op), default=0)

    def version_rejection_reason(self, registration: Registration) -> str | None:
        """Why the SDK rejects a node of this op and version before the predicate runs (an
        excluded op, an op not in the tables, a version above the cap or outside the set),
        or None when the version is supported. The reason starts with ``"OP vN: "``."""
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
        return None

    def rejection_reason(self, context: "DelegateContext", node: "Node", registration: Registration) -> str | None:
        """The version check, then the author's predicate.

        Raises:
          DelegateDeclarationError: the predicate returned something other than None or a
            non-empty str.
        """
        reason = self.version_rejection_reason(registration)
        if reason is not None:
            return reason
        problem = arity_problem(registration.builtin_code, node.inputs, node.outputs, lambda t: _static_rank(context, t))
        if problem is not None:
            return f"{registration.op_name} v{registration.version}: malformed node: {problem}"
        reason = self.node_rejection_reason(context, node, registration)
        if reason is None:
            return None
        label = f"{registration.op_name} v{registration.version}"
        if not isinstance(reason, str) or not reason.strip():
            hint = " (False does not accept a node: return None)" if reason is False else ""
            raise DelegateDeclarationError(
                f"{type(self).__name__}.node_rejection_reason returned {reason!r} for node {node.index} ({label}){hint}: "
                "return None to accept the node, or a str saying why it is rejected "
                "(e.g. 'only float32 tensors are supported'), which the delegation report shows"
            )
        return f"{label}: {reason}"

    def keep_dynamic_tensors_inside(self, context: "DelegateContext", supported: Sequence[int]) -> list[int]:
        """For a static-only delegate (``supports_dynamic_tensors = False``): drop from
        ``supported`` the nodes that read a dynamic-sized tensor (``context.dynamic_tensors``)
        coming from outside the delegate (its writer not taken, or a subgraph input),
        recording why. A dynamic tensor a taken node writes is the delegate's to shape (the
        GPU delegate fixes READ_VARIABLE's); one is refused when applied if it stays dynamic
        at the partition's boundary. Only those nodes stay on the CPU: the rest is taken."""
        dynamic = getattr(context, "dynamic_tensors", frozenset())
        if self.supports_dynamic_tensors or not dynamic:
            return list(supported)
        writer: dict[int, int] = {}
        for node_index in context.execution_plan:
            for t in context.get_node_and_registration(node_index)[0].outputs:
                writer[t] = node_index
        taken = set(supported)
        changed = True
        while changed:
            changed = False
            for node_index in sorted(taken):
                node, registration = context.get_node_and_registration(node_index)
                outside = [t for t in node.inputs if t in dynamic and writer.get(t) not in taken]
                if not outside:
                    continue
                taken.discard(node_index)
                changed = True
                t = outside[0]
                name = getattr(context.tensors[t], "name", "")
                context.record_decision(NodeDecision(self.name, node_index, False, (
                    f"{registration.op_name} v{registration.version}: tensor {t} {name!r} is dynamic-sized (its "
                    f"shape is known only at invoke) and {self.name} only supports static-sized tensors (set "
                    "supports_dynamic_tensors = True on the delegate class if its kernels handle shapes that "
                    "change at invoke)")))
        return [n for n in supported if n in taken]

    def prepare(self, context: "DelegateContext") -> None:
        self.check_declaration()
        supported = []
        for node_index in context.execution_plan:
            node, registration = context.get_node_and_registration(node_index)
            reason = self.rejection_reason(context, node, registration)
            if reason is None:
                supported.append(node_index)
            else:
                context.record_decision(NodeDecision(self.name, node_index, False, reason))
        supported = self.keep_dynamic_tensors_inside(context, supported)
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
        _check_kernel_class(type(self).__name__, kernel_class)
        who = type(self).__name__

        def init(context, node):
            if getattr(kernel_class, "eval", None) is DelegateKernel.eval:
                raise DelegateDeclarationError(
                    f"{who}.kernel_class is {kernel_class.__name__}, whose eval is not written: set kernel_class to a "
                    "DelegateKernel subclass that overrides eval(context, node)"
                )
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


# -- checking declarations ---------------------------------------------------------------------------

_EXAMPLE = "{BuiltinOperator.ADD: 2}"


def _static_rank(context: "DelegateContext", tensor_index: int) -> int | None:
    tensor = context.tensors[tensor_index]
    return None if tensor.is_dynamic else len(tensor.shape)


def _builtin_named(name: str) -> BuiltinOperator | None:
    return BuiltinOperator.__members__.get(name.strip().upper())


def _close_ops(name: str) -> str:
    close = difflib.get_close_matches(name.upper(), list(BuiltinOperator.__members__), n=3, cutoff=0.6)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def _normalize_table(who: str, attribute: str, table: Any, custom: bool) -> dict:
    if not isinstance(table, Mapping):
        example = '{"MyCustomOp": 1}' if custom else _EXAMPLE
        raise DelegateDeclarationError(
            f"{who}.{attribute} must be a dict of op -> highest version (e.g. {example}), got {type(table).__name__} {table!r}"
        )
    normalized: dict = {}
    for key, value in table.items():
        op = _custom_key(who, attribute, key) if custom else _builtin_key(who, attribute, key)
        if op in normalized:
            raise DelegateDeclarationError(f"{who}.{attribute} names {_label(op)} twice ({key!r} and an earlier key)")
        normalized[op] = _versions(who, attribute, op, value)
    return normalized


def _label(op: int | str) -> str:
    return op if isinstance(op, str) else builtin_operator_name(op)


def _builtin_key(who: str, attribute: str, key: Any) -> BuiltinOperator:
    if isinstance(key, str):
        op = _builtin_named(key)
        if op is None:
            raise DelegateDeclarationError(
                f"{who}.{attribute} key {key!r} is not a builtin op{_close_ops(key)}: builtin ops are keyed by "
                f"BuiltinOperator (e.g. {_EXAMPLE}); a custom op goes in custom_support_table = {{{key!r}: 1}}"
            )
        return op
    if isinstance(key, bool) or not isinstance(key, int):
        raise DelegateDeclarationError(
            f"{who}.{attribute} key {key!r} ({type(key).__name__}) is not an op: key it by BuiltinOperator (e.g. {_EXAMPLE})"
        )
    try:
        return BuiltinOperator(int(key))
    except ValueError:
        raise DelegateDeclarationError(
            f"{who}.{attribute} key {key} is no builtin op code: key it by BuiltinOperator (e.g. {_EXAMPLE})"
        ) from None


def _custom_key(who: str, attribute: str, key: Any) -> str:
    if isinstance(key, str) and key:
        return key
    hint = ""
    if isinstance(key, int) and not isinstance(key, bool):
        hint = "; builtin ops go in support_table"
    raise DelegateDeclarationError(
        f"{who}.{attribute} is keyed by the custom op's name (a non-empty str, e.g. {{'MyCustomOp': 1}}), got {key!r}{hint}"
    )


def _versions(who: str, attribute: str, op: int | str, value: Any) -> int | frozenset[int]:
    name = _label(op)
    fix = (f"give the highest version the kernel implements ({{{_render(op)}: 2}}), or the set of versions "
           f"({{{_render(op)}: frozenset({{1, 3}})}})")
    if isinstance(value, bool) or isinstance(value, (str, bytes, float)) or value is None:
        raise DelegateDeclarationError(f"{who}.{attribute}[{name}] is {value!r}: {fix}")
    if isinstance(value, int):
        if value < 1:
            raise DelegateDeclarationError(
                f"{who}.{attribute}[{name}] is {value}, which supports no version: remove the entry, or {fix}"
            )
        return int(value)
    if isinstance(value, Iterable):
        versions = list(value)
        if not versions or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in versions):
            raise DelegateDeclarationError(f"{who}.{attribute}[{name}] is {value!r}: {fix}")
        return frozenset(int(v) for v in versions)
    raise DelegateDeclarationError(f"{who}.{attribute}[{name}] is {value!r} ({type(value).__name__}): {fix}")


def _render(op: int | str) -> str:
    return repr(op) if isinstance(op, str) else f"BuiltinOperator.{builtin_operator_name(op)}"


def _normalize_option_key(who: str, attribute: str, op: Any, customs: set[str]) -> int | str:
    """Caps and exclusions: a builtin op (code or name), or a custom op's name."""
    if isinstance(op, str):
        if op in customs:  # a declared custom op wins over a builtin of the same name
            return op
        builtin = _builtin_named(op)
        return int(builtin) if builtin is not None else op
    if isinstance(op, bool) or not isinstance(op, int):
        raise DelegateDeclarationError(
            f"{who} {attribute}: {op!r} is not an op: name a builtin op by BuiltinOperator (or its name), a custom op by its name"
        )
    return int(op)


def _check_cap(who: str, op: int | str, version: Any) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise DelegateDeclarationError(
            f"{who} version_caps[{_label(op)}] is {version!r}: give the highest version to take, an int >= 0 "
            f"(e.g. version_caps={{{_render(op)}: 1}})"
        )
    return int(version)


def _check_kernel_class(who: str, kernel_class: Any) -> None:
    if isinstance(kernel_class, type) and callable(getattr(kernel_class, "eval", None)):
        return
    if kernel_class is None:
        problem = "is None"
    elif isinstance(kernel_class, DelegateKernel):
        problem = f"is an instance of {type(kernel_class).__name__}, not the class"
    else:
        problem = f"is {kernel_class!r}, not a DelegateKernel class"
    raise DelegateDeclarationError(
        f"{who}.kernel_class {problem}: set kernel_class = YourKernel, a delegate_sdk.DelegateKernel subclass "
        "(the SDK makes one instance per partition and calls its init, prepare and eval)"
    )
