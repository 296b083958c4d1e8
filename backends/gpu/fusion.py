"""Fusion across nodes: the blocks MediaPipe's models repeat, folded into one kernel launch.

A GPU partition runs its ops one launch each (``delegate.GpuPartitionKernel``). Many of
those launches only read a tensor that the launch before wrote and nothing else reads:

- ``CONV_2D / DEPTHWISE_CONV_2D -> ADD (residual) -> RELU / RELU6 / RELU_N1_TO_1 /
  RELU_0_TO_1 / PRELU``, each part after the convolution optional, the residual possibly
  a ``PAD`` of its last channels with zeros (BlazeFace's and BlazePalm's blocks);
- ``PAD (rows and columns, zeros) -> CONV_2D / DEPTHWISE_CONV_2D`` (a stride-2 layer of
  BlazePose).

:func:`fuse_steps` folds each such chain into the convolution's kernel: the PAD in front
becomes the kernel's own padding (a tap in it is skipped, which equals adding zero times
a finite weight), the rest its epilogue (``cuda/epilogue.cuh``: the unfused ops' float32
arithmetic in their order). It only folds what keeps the results exact:

- every folded intermediate tensor has exactly one reader (the next node of the chain)
  and is not an output of the partition (a tensor the CPU, another partition or the
  caller reads is an output of the delegate node);
- ADD: same shape on both sides, no broadcasting; its residual is not the convolution's
  own output; its fused activation becomes the ADD's clamp;
- PRELU: a constant alpha with one value per channel;
- PAD: version 1 (zeros); in front, rows and columns only and a convolution whose filter
  is all finite; for a residual, the last channels only;
- not when the partition exposes its intermediates (``expose_intermediates``).

Float32 storage then gives the bits the unfused nodes give; float16 storage skips the
intermediate roundings to half (well within the 1e-2 bound).

The fused step takes the place of the chain's last node (every tensor it reads is
computed by then), and its label lists the nodes it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from backends.gpu.ops.activations import ACTIVATION_KERNEL_OPS, RELU_RANGES, Activation, Prelu, ReluRange
from backends.gpu.ops.base import saturating_bounds
from backends.gpu.ops.conv import Conv2D
from backends.gpu.ops.depthwise_conv import DepthwiseConv2D
from backends.gpu.ops.elementwise import Binary
from backends.gpu.ops.pad import Pad
from delegate_sdk.node import Node
from schema.enums import BuiltinOperator as B

#: One step of a partition: (op, node, input positions read on the device, label).
Step = tuple[Any, Node, list[int], str]

CONVOLUTIONS = (Conv2D, DepthwiseConv2D)


@dataclass
class _Chain:
    """A convolution and what is folded into it."""

    conv: int  # step index
    pad: int | None = None  # the PAD in front
    pre_padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    add: int | None = None
    residual: int | None = None  # the tensor the epilogue adds
    residual_channels: int = 0
    residual_pad: int | None = None  # the PAD of the residual's channels
    add_bounds: tuple[float, float] = (-np.inf, np.inf)
    activation: int | None = None
    post_bounds: tuple[float, float] = (-np.inf, np.inf)
    alpha: np.ndarray | None = None
    output: int = -1
    absorbed: list[int] = field(default_factory=list)


def fuse_steps(steps: Sequence[Step], tensors: Sequence[Any], keep: set[int]) -> list[Step]:
    """``steps`` with each foldable chain (module docstring) replaced by one step that runs
    the convolution's fused kernel. ``keep``: tensors that must stay materialized (the
    partition's outputs)."""
    readers: dict[int, list[int]] = {}
    producer: dict[int, int] = {}
    for index, (_, node, _, _) in enumerate(steps):
        for t in node.inputs:
            if t >= 0:
                readers.setdefault(t, []).append(index)
        for t in node.outputs:
            producer[t] = index

    def sole_reader(t: int) -> int | None:
        """The one step that reads ``t`` (once), when nothing else may see it."""
        found = readers.get(t, [])
        if t in keep or len(found) != 1:
            return None
        return found[0]

    taken: set[int] = set()
    chains: list[_Chain] = []
    for index, (op, node, _, _) in enumerate(steps):
        if index in taken or not _exactly(op, *CONVOLUTIONS) or len(node.outputs) != 1:
            continue
        chain = _Chain(conv=index, output=node.outputs[0])
        _fold_pad_in_front(chain, steps, tensors, producer, sole_reader, taken)
        _fold_residual_add(chain, steps, tensors, producer, sole_reader, taken)
        _fold_activation(chain, steps, tensors, sole_reader, taken)
        if chain.absorbed:
            taken.update(chain.absorbed)
            taken.add(index)
            chains.append(chain)

    if not chains:
        return list(steps)
    replaced: dict[int, Step] = {}
    removed: set[int] = set()
    for chain in chains:
        last = max([chain.conv, *chain.absorbed])
        replaced[last] = _fused_step(chain, steps)
        removed.update(i for i in [chain.conv, *chain.absorbed] if i != last)
    return [replaced.get(i, step) for i, step in enumerate(steps) if i not in removed]


# -- the parts of a chain -------------------------------------------------------------------------


def _zero_pad(op: Any) -> list[list[int]] | None:
    """A PAD v1 step's paddings ``[[before, after]] * 4`` (it pads with zeros), else None."""
    if not _exactly(op, Pad) or op.op != B.PAD or len(op.paddings) != 4:
        return None
    return [list(p) for p in op.paddings]


def _fold_pad_in_front(chain: _Chain, steps, tensors, producer, sole_reader, taken) -> None:
    op, node, _, _ = steps[chain.conv]
    source = node.inputs[0]
    pad = producer.get(source)
    if pad is None or pad in taken or sole_reader(source) != chain.conv:
        return
    paddings = _zero_pad(steps[pad][0])
    if paddings is None or paddings[0] != [0, 0] or paddings[3] != [0, 0]:
        return
    if not np.isfinite(np.asarray(tensors[node.inputs[1]].data, np.float32)).all():
        return  # a tap in the padding would add 0 * inf = NaN; a skipped tap adds nothing
    chain.pad = pad
    chain.pre_padding = (paddings[1][0], paddings[1][1], paddings[2][0], paddings[2][1])
    chain.absorbed.append(pad)


def _fold_residual_add(chain: _Chain, steps, tensors, producer, sole_reader, taken) -> None:
    add = sole_reader(chain.output)
    if add is None or add in taken:
        return
    op, node, _, _ = steps[add]
    if not _exactly(op, Binary) or op.op != B.ADD or len(node.inputs) != 2 or len(node.outputs) != 1:
        return
    first, second = node.inputs
    if first == second:
        return
    residual = second if first == chain.output else first
    shape = tuple(tensors[chain.output].shape)
    if len(shape) != 4 or tuple(tensors[residual].shape) != shape or tuple(tensors[node.outputs[0]].shape) != shape:
        return
    chain.add = add
    chain.residual = residual
    chain.residual_channels = shape[3]
    chain.add_bounds = tuple(saturating_bounds(_fused_activation(node)))
    chain.absorbed.append(add)
    chain.output = node.outputs[0]
    # A zero PAD of the residual's last channels, read only here: the epilogue adds zeros there.
    pad = producer.get(residual)
    if pad is None or pad in taken or sole_reader(residual) != add:
        return
    paddings = _zero_pad(steps[pad][0])
    if paddings is None or paddings[:3] != [[0, 0]] * 3 or paddings[3][0] != 0:
        return
    source = steps[pad][1].inputs[0]
    if tuple(tensors[source].shape)[:3] != shape[:3]:
        return
    chain.residual_pad = pad
    chain.residual = source
    chain.residual_channels = int(tensors[source].shape[3])
    chain.absorbed.append(pad)


def _exactly(op: Any, *classes: type) -> bool:
    """``op`` is an instance of one of ``classes`` itself, not of a subclass: a fused kernel
    reproduces what these classes compute, and a subclass (a delegate author's, or a test's
    deliberately wrong kernel) may compute something else, so it keeps its own launch."""
    return type(op) in classes


def _fold_activation(chain: _Chain, steps, tensors, sole_reader, taken) -> None:
    reader = sole_reader(chain.output)
    if reader is None or reader in taken:
        return
    op, node, _, _ = steps[reader]
    if len(node.outputs) != 1 or not node.inputs or node.inputs[0] != chain.output:
        return
    if _exactly(op, Activation) and op.op in (B.RELU, B.RELU6):
        chain.post_bounds = ACTIVATION_KERNEL_OPS[op.op][1]
    elif _exactly(op, ReluRange):
        chain.post_bounds = RELU_RANGES[op.op]
    elif _exactly(op, Prelu):
        alpha = tensors[node.inputs[1]] if len(node.inputs) == 2 and node.inputs[1] >= 0 else None
        channels = tensors[chain.output].shape[-1]
        if alpha is None or not alpha.is_constant or node.inputs[1] == chain.output:
            return
        if tuple(alpha.shape)[-1:] != (channels,) or int(np.prod(alpha.shape)) != channels:
            return  # not one value per channel
        chain.alpha = np.asarray(alpha.data, np.float32).reshape(-1)
    else:
        return
    chain.activation = reader
    chain.absorbed.append(reader)
    chain.output = node.outputs[0]


def _fused_activation(node: Node) -> int:
    return int(getattr(node.params, "fused_activation_function", 0) or 0)


# -- the fused step ---------------------------------------------------------------------------------


def _fused_step(chain: _Chain, steps: Sequence[Step]) -> Step:
    from backends.gpu.cuda.conv2d import Epilogue

    op, node, reads, label = steps[chain.conv]
    inputs = list(node.inputs)
    if chain.pad is not None:
        inputs[0] = steps[chain.pad][1].inputs[0]  # the PAD's input, padded by the kernel
    reads = list(reads)
    residual_position = None
    if chain.residual is not None:
        residual_position = len(inputs)
        inputs.append(chain.residual)
        reads.append(residual_position)
    epilogue = None
    if chain.add is not None or chain.activation is not None:
        epilogue = Epilogue(
            residual_channels=chain.residual_channels if chain.residual is not None else 0,
            add_bounds=chain.add_bounds,
            prelu=chain.alpha is not None,
            post_bounds=chain.post_bounds,
        )
    op.fuse(chain.pre_padding, epilogue, chain.alpha, residual_position)
    fused_node = Node(node.index, tuple(inputs), (chain.output,), node.params)
    parts = sorted([chain.conv, *chain.absorbed])
    fused_label = " + ".join(steps[i][3] for i in parts)
    return (op, fused_node, reads, f"fused: {fused_label}")

