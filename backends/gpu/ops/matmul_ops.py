"""BATCH_MATMUL on the GPU (float32 math, ``xp`` only).

Semantics are the CPU kernel's (``backends/cpu/kernels/batch_matmul.py``), i.e. TFLite's
reference ``BatchMatMul``: ``out[..., i, j] = sum_k x'[..., i, k] * y'[..., k, j]`` where
``x'`` is ``x`` with its last two axes swapped when ``adj_x`` (``y'`` likewise with
``adj_y``); the batch axes (all but the last two) broadcast numpy-style, right-aligned.
Either operand may be a constant or a runtime tensor.

How: each operand becomes ``[B_op, R, C]`` (its matrix as it enters the product), where
``B_op`` is 1 when the operand has a single batch (shared by every batch of the output)
or the output's batch count B, the operand broadcast to it first when its batch axes
broadcast only partly (``[2, 1, ...]`` against ``[1, 3, ...]``). A constant operand is
laid out so once, at prepare; a runtime one at every run (a transposing or broadcasting
copy only where needed). Then one batched product:

- on a device, one launch of ``matmul_f32`` (``cuda/matmul.cu``, capturable in a CUDA
  graph, unlike CuPy's cuBLAS path) over the B batches, with a batch stride of 0 for a
  shared operand (``matmul_args``' layout);
- in host emulation, ``xp.matmul`` (numpy broadcasting of the leading 1).

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
    """Why a ``[batch, rows, cols]`` product does not fit one ``matmul_f32`` launch, or None."""
    from backends.gpu.cuda.sources import matmul_launch_config

    if batch * rows * cols == 0:
        return None  # nothing to launch
    try:
        matmul_launch_config(batch, rows, cols)
    except ValueError as error:
        return str(error)
    return None


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
        self.batches = math.prod(self.batch_shape)
        self.m, self.k = _product_shape(x.shape, self.adj[0])
        self.n = _product_shape(y.shape, self.adj[1])[1]
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
                constant = self.upload(self.operand(np, np.asarray(tensor.data, np.float32), position))
                self.prepared_inputs.add(position)
            self.constants.append(constant)
        self.gemm = None
        if not self.device.is_host:
            from backends.gpu.cuda.sources import MatmulCuda

            self.gemm = MatmulCuda(xp=self.xp, module=self.device.module("matmul.cu"))

    def operand(self, xp: Any, value: Any, position: int) -> Any:
        """The operand as ``[1 or B, R, C]``, C-contiguous: swapped for an adjoint, broadcast
        to every batch where its batch axes broadcast only partly."""
        if self.adj[position]:
            value = xp.swapaxes(value, -1, -2)
        rows, cols = value.shape[-2:]
        if self.modes[position] == "broadcast":
            value = xp.broadcast_to(value, (*self.batch_shape, rows, cols))
        return xp.ascontiguousarray(value).reshape(-1, rows, cols)

    def run(self, args):
        xp = self.xp
        a, b = (
            self.compute(self.constants[p]) if self.constants[p] is not None else self.operand(xp, self.compute(args[p]), p)
            for p in (0, 1)
        )
        if self.gemm is None:
            out = xp.matmul(a, b)  # [B, M, N] (a leading 1 broadcasts)
        else:
            out = self.batched_product(a, b)
        return [self.store(out).reshape(self.out_shape)]

    def batched_product(self, a: Any, b: Any) -> Any:
        """``matmul_f32`` over the B batches, batch stride 0 for an operand of one batch."""
        from backends.gpu.cuda.sources import matmul_launch_config

        xp, m, n, k = self.xp, self.m, self.n, self.k
        c = xp.empty((self.batches, m, n), dtype=self.compute_dtype)
        if c.size == 0:
            return c
        if k == 0:
            c[...] = 0
            return c
        strides = [np.int64(0 if operand.shape[0] == 1 else size) for operand, size in ((a, m * k), (b, k * n))]
        args = (a, b, c, np.int32(m), np.int32(n), np.int32(k), *strides, np.int64(m * n))
        grid, block = matmul_launch_config(self.batches, m, n)
        self.gemm.kernel("matmul_f32")(grid, block, args)
        return c
