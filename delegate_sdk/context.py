"""The context that kernels and delegates see (TFLite's ``TfLiteContext``).

The interpreter implements it; kernels and delegates are written against it and
never import the interpreter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from delegate_sdk.node import Node
    from delegate_sdk.registration import Registration
    from delegate_sdk.tensor import RuntimeTensor


class KernelError(RuntimeError):
    """A kernel failed in prepare or invoke; the message names the node, op and version."""


class Context:
    """What a kernel or delegate may ask of the subgraph it runs in."""

    #: The subgraph's tensors, indexed as in the model file.
    tensors: Sequence["RuntimeTensor"]
    #: The subgraph's input and output tensors (what the caller writes and reads).
    inputs: Sequence[int]
    outputs: Sequence[int]

    @property
    def execution_plan(self) -> list[int]:
        """Node indices in the order they run."""
        raise NotImplementedError

    def get_node_and_registration(self, node_index: int) -> tuple["Node", "Registration"]:
        """The node and its registration; ``registration.version`` is the node's version."""
        raise NotImplementedError

    def tensor(self, index: int) -> "RuntimeTensor | None":
        """Tensor ``index``, or None for -1 (an omitted optional input)."""
        return self.tensors[index] if index >= 0 else None

    def get_subgraph(self, index: int) -> "SubgraphHandle":
        """Another subgraph of the model (for control-flow kernels)."""
        raise NotImplementedError

    @property
    def arena_limit_bytes(self) -> int | None:
        """The most bytes of tensors the interpreter holds at once
        (``experimental_arena_limit_bytes``), or None for no limit: kernels sizing scratch
        buffers and delegates holding tensors in memory of their own keep to it."""
        return None

    @property
    def resources(self) -> dict[Any, Any]:
        """Resource variables shared by all subgraphs (persist across invokes)."""
        raise NotImplementedError


class SubgraphHandle:
    """A subgraph that a control-flow kernel can run (IF, WHILE, CALL_ONCE)."""

    index: int
    inputs: Sequence[int]
    outputs: Sequence[int]
    tensors: Sequence["RuntimeTensor"]

    def run(self, inputs: Sequence["np.ndarray"]) -> list["np.ndarray"]:
        """Resize to the inputs' shapes if needed, invoke, and return copies of the outputs."""
        raise NotImplementedError


class DelegateContext(Context):
    """The context a delegate's ``prepare`` sees: the plan, and the means to replace parts of it."""

    def preview_delegate_partitioning(self, nodes_to_replace: Sequence[int]) -> list[Any]:
        """The partitions (``NodeSubset`` with ``delegated=True``) that replacing these nodes would give."""
        raise NotImplementedError

    def replace_node_subsets_with_delegate_kernels(
        self, registration: "Registration", nodes_to_replace: Sequence[int], delegate: Any
    ) -> None:
        """Replace each independent subset of ``nodes_to_replace`` with one node running ``registration``."""
        raise NotImplementedError

    def record_decision(self, decision: Any) -> None:
        """Record why a delegate took or left a node (``delegate_sdk.delegate.NodeDecision``)."""
        raise NotImplementedError

    @property
    def dynamic_tensors(self) -> frozenset[int]:
        """Tensors whose shape is known only at invoke because their kernel says so at
        prepare (TFLite's ``kTfLiteDynamic``: READ_VARIABLE's output, a RESHAPE to a shape
        computed from data, WHERE's output...). The interpreter prepares the graph on the
        CPU before a delegate's ``prepare`` (as TFLite's ``EnsureMemoryAllocations``) to
        find them; a dry run knows none. A delegate whose ``supports_dynamic_tensors`` is
        False must not take a node that reads or writes one (``SimpleDelegate`` leaves such
        nodes on the CPU with a reason); nodes further downstream are not in this set: they
        are prepared again before each invoke, with their inputs' shapes of that invoke."""
        return frozenset()
