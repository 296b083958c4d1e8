"""BATCH_MATMUL on the GPU (float32 math).

Semantics are the CPU kernel's (``backends/cpu/kernels/batch_matmul.py``), i.e. TFLite's
reference ``BatchMatMul``: ``out[..., i, j] = sum_k x'[..., i, k] * y'[..., k, j]`` where
``x'`` is ``x`` with its last two axes swapped when ``adj_x`` (``y'`` likewise with
``adj_y``); the batch axes (all but the last two) broadcast numpy-style, right-aligned.
Either operand may be a constant or a runtime tensor.

How: one launch of ``cuda/matmul.cu``'s ``matmul_bias_act`` (no bias, no clamp), on a
device and in host emulation alike (there its numpy twin, as one launch). Each operand
enters as ``[B_op, R, C]``, where ``B_op`` is 1 when the operand has a single batch (shared
by every batch of the output: batch stride 0) or the output's batch count B. A constant
operand is laid out so once, at prepare (transposed there for an adjoint). A runtime
operand is read where it lies: an adjoint one through swapped strides, with no copy; only
an operand whose batch axes broadcast partly (``[2, 1, ...]`` against ``[1, 3, ...]``) is
broadcast by a copy first. float16 storage: the kernel reads and writes halves and
computes in float32.

Versions claimed: BATCH_MATMUL 1 (float32). v2 (int8), v3 (int16) and v4 (hybrid with
asymmetric_quantize_inputs) are quantized: not here. Ranks 2 to 4 (the delegate's limit;
the CPU kernel takes rank 5 too).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from backends.cpu.common import broadcast_shape
from backends.gpu.ops.elementwise import FloatOp
from schema.enums import BuiltinOperator

B = BuiltinOperator

MIN_RANK = 2


def launch_reason(batch: int, rows: int, cols: int) -> str | None:
    """Why a ``[batch, rows, cols]`` product does not fit one ``matmul_bias_act`` launch, or None."""
    from backends.gpu.cuda.conv2d import matmul_launch_reason

    return matmul_launch_reason(batch, rows, cols)


def _product_shape(shape, adjoint: bool) -> tuple[int, int]:
    """(rows, columns) of an operand's matrix as it enters the product."""
    rows, cols = (int(d) for d in shape[-2:])
    return (cols, rows) if adjoint else (rows, cols)


class BatchMatMul(FloatOp):
    """BATCH_MATMUL version 1 (float32: adj_x/adj_y, batch axes broadcast, ranks 2-4,
    constant or runtime operands)."""

    ops = {B.BATCH_MATMUL: 1}  # v2: int8, v3: int16, v4: hybrid

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 2 or min(node.inputs) < 0 or len(node.outputs) != 1:
            return f"expected 2 inputs and 1 output, got {len(node.inputs)} inputs and {len(node.outputs)} outputs"
        x, y = (tensors[i] for i in node.inputs)
        for role, tensor in (("lhs", x), ("rhs", y)):
            if len(tensor.shape) < MIN_RANK:
                return f"{role} must have rank {MIN_RANK} to 4, got shape {list(tensor.shape)}"
        adj_x, adj_y = bool(node.params.adj_x), bool(node.params.adj_y)
        rows, depth_x = _product_shape(x.shape, adj_x)
        depth_y, cols = _product_shape(y.shape, adj_y)
        if depth_x != depth_y:
            return (
                f"inner dimensions differ: lhs {list(x.shape)} (adj_x={adj_x}) and rhs {list(y.shape)} (adj_y={adj_y})"
            )
        try:
            batch = broadcast_shape(x.shape[:-2], y.shape[:-2])
        except ValueError as error:
            return f"batch axes do not broadcast: {error}"
        return launch_reason(math.prod(batch), rows, cols)

    def prepare(self) -> None:
        x, y = self.inputs
        self.adj = (bool(self.params.adj_x), bool(self.params.adj_y))
        self.batch_shape = broadcast_shape(x.shape[:-2], y.shape[:-2])
        self.out_shape = tuple(self.outputs[0].shape)
        # Per operand: how it enters the product ("shared", "batched", or "broadcast": made
        # batched by a copy), and its constant layout when it is a constant.
        self.modes: list[str] = []
        self.constants: list[Any] = []
        for position, tensor in enumerate((x, y)):
            own = math.prod(int(d) for d in tensor.shape[:-2])
            padded = (1,) * (len(self.batch_shape) - (len(tensor.shape) - 2)) + tuple(tensor.shape[:-2])
            mode = "shared" if own == 1 else "batched" if padded == tuple(self.batch_shape) else "broadcast"
            self.modes.append(mode)
            constant = None
            if tensor.is_constant:
                value = np.asarray(tensor.data, np.float32)
                if self.adj[position]:
                    value = np.swapaxes(value, -1, -2)
                constant = self.upload(self.operand(np, value, position))
                self.prepared_inputs.add(position)
            self.constants.append(constant)
        from backends.gpu.cuda.conv2d import matmul_launcher, matmul_variant

        rows, columns = (int(d) for d in self.out_shape[-2:])
        self.variant = matmul_variant(
            math.prod(int(d) for d in self.out_shape[:-2]), rows, columns, self.storage,
            int(self.device.cuda_device.compute_capability),
        )
        launcher = matmul_launcher(self.variant)
        self.product = launcher(None, self.storage, **self.device.launcher_arguments(launcher.source))

    def operand(self, xp: Any, value: Any, position: int) -> Any:
        """The operand as ``[1 or B, R, C]`` as it is stored (R, C: its last two axes),
        broadcast by a copy to every batch where its batch axes broadcast only partly."""
        rows, cols = value.shape[-2:]
        if self.modes[position] == "broadcast":
            value = xp.broadcast_to(value, (*self.batch_shape, rows, cols))
        return xp.ascontiguousarray(value).reshape(-1, rows, cols)

    def run(self, args):
        a, b = (
            self.constants[p] if self.constants[p] is not None else self.operand(self.xp, args[p], p)
            for p in (0, 1)
        )
        # A constant was transposed at prepare; a runtime operand is read transposed.
        adjoint_a, adjoint_b = (self.adj[p] and self.constants[p] is None for p in (0, 1))
        out = self.product(a, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b)  # [B, M, N]
        return [out.reshape(self.out_shape)]
