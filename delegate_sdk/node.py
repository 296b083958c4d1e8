"""``Node``: one entry of an execution plan (TFLite's ``TfLiteNode``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Node:
    """A node: its tensors (indices into the subgraph; -1 = omitted optional input),
    its parsed params (``builtin_data``), custom options, and the kernel's state.

    For a delegate node, ``delegate`` is the delegate that owns it and
    ``delegate_params`` says which nodes and tensors it replaced.
    """

    index: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    params: Any = None
    custom_options: bytes | None = None
    intermediates: tuple[int, ...] = ()
    temporaries: list[int] = field(default_factory=list)
    user_data: Any = None
    delegate: Any = None
    delegate_params: Any = None
