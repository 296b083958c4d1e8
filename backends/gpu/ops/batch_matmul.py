"""BATCH_MATMUL on the GPU: float32 (``BatchMatMul``) and int8 (``QuantizedBatchMatMul``).

Semantics are the CPU kernel's (``backends/cpu/kernels/batch_matmul.py``), i.e. TFLite's
reference ``BatchMatMul``: ``out[..., i, j] = sum_k x'[..., i, k] * y'[..., k, j]`` where
``x'`` is ``x`` with its last two axes swapped when ``adj_x`` (``y'`` likewise with
``adj_y``); the batch axes (all but the last two) broadcast numpy-style, right-aligned.
Either operand may be a constant or a runtime tensor.

How: one of ``MATMUL_TACTICS`` (``cuda/matmul.py``: ``matmul.cu``'s ``matmul_bias_act`` with
no bias and no clamp, its tiles, its tensor-core form, the vendor GEMM), chosen on the
device at prepare (``backends/gpu/tactics.py``); in host emulation its numpy twin. Each operand
enters as ``[B_op, R, C]``, where ``B_op`` is 1 when the operand has a single batch (shared
by every batch of the output: batch stride 0) or the output's batch count B. A constant
operand is laid out so once, at prepare (transposed there for an adjoint). A runtime
operand is read where it lies: an adjoint one through swapped strides, with no copy; only
an operand whose batch axes broadcast partly (``[2, 1, ...]`` against ``[1, 3, ...]``) is
broadcast by a copy first. float16 storage: the kernel reads and writes halves and
computes in float32.

Versions claimed: BATCH_MATMUL 1 (float32) and 2 (int8 x int8 -> int8, per tensor:
``QuantizedBatchMatMul``, one launch of ``cuda/batch_matmul_int8.cu`` with the zero points,
``MultiplyByQuantizedMultiplier`` and the clamp to int8 fused, the operands laid out as the
float op's; semantics are the CPU kernel's, ``backends/cpu/kernels/batch_matmul_quantized.py``).
Not claimed: int8 -> int32 (raw products), v3 (int16) and v1/v4 hybrids. Ranks 2 to 4 (the
delegate's limit; the CPU kernel takes rank 5 too).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from backends.cpu.common import broadcast_shape
from backends.cpu.kernels.batch_matmul_quantized import product_multiplier
from backends.cpu.quantization import legacy_params
from backends.gpu.ops.base import FloatOp
from backends.gpu.ops.quantized_base import QuantizedOp, parameter_reason, per_tensor
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator

MIN_RANK = 2


def launch_reason(batch: int, rows: int, cols: int) -> str | None:
    """Why a ``[batch, rows, cols]`` product does not fit one ``matmul_bias_act`` launch, or None."""
    from backends.gpu.cuda.matmul import matmul_launch_reason

    return matmul_launch_reason(batch, rows, cols)


def _product_shape(shape, adjoint: bool) -> tuple[int, int]:
    """(rows, columns) of an operand's matrix as it enters the product."""
    rows, cols = (int(d) for d in shape[-2:])
    return (cols, rows) if adjoint else (rows, cols)


def shapes_reason(node, tensors) -> str | None:
    """Why a BATCH_MATMUL node's shapes do not fit one launch (any type), or None."""
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
        return f"inner dimensions differ: lhs {list(x.shape)} (adj_x={adj_x}) and rhs {list(y.shape)} (adj_y={adj_y})"
    try:
        batch = broadcast_shape(x.shape[:-2], y.shape[:-2])
    except ValueError as error:
        return f"batch axes do not broadcast: {error}"
    return launch_reason(math.prod(batch), rows, cols)


class _Operands:
    """How BATCH_MATMUL's operands enter ``[B_op, R, C]`` products: per operand "shared"
    (one batch, batch stride 0), "batched", or "broadcast" (made batched by a copy), and
    its layout uploaded once when it is a constant (transposed there for an adjoint)."""

    def prepare_operands(self, dtype: Any, upload_dtype: Any = None) -> None:
        """``dtype``: the constants' values on the host; ``upload_dtype``: on the device
        (None: the storage dtype)."""
        x, y = self.inputs
        self.adj = (bool(self.params.adj_x), bool(self.params.adj_y))
        self.batch_shape = broadcast_shape(x.shape[:-2], y.shape[:-2])
        self.out_shape = tuple(self.outputs[0].shape)
        self.modes: list[str] = []
        self.constants: list[Any] = []
        for position, tensor in enumerate((x, y)):
            own = math.prod(int(d) for d in tensor.shape[:-2])
            padded = (1,) * (len(self.batch_shape) - (len(tensor.shape) - 2)) + tuple(tensor.shape[:-2])
            mode = "shared" if own == 1 else "batched" if padded == tuple(self.batch_shape) else "broadcast"
            self.modes.append(mode)
            constant = None
            if tensor.is_constant:
                value = np.asarray(tensor.data, dtype)
                if self.adj[position]:
                    value = np.swapaxes(value, -1, -2)
                constant = self.upload(self.operand(np, value, position), upload_dtype)
                self.prepared_inputs.add(position)
            self.constants.append(constant)

    def operand(self, xp: Any, value: Any, position: int) -> Any:
        """The operand as ``[1 or B, R, C]`` as it is stored (R, C: its last two axes),
        broadcast by a copy to every batch where its batch axes broadcast only partly."""
        rows, cols = value.shape[-2:]
        if self.modes[position] == "broadcast":
            value = xp.broadcast_to(value, (*self.batch_shape, rows, cols))
        return xp.ascontiguousarray(value).reshape(-1, rows, cols)

    def operands(self, args) -> tuple[Any, Any, bool, bool]:
        """``(a, b, adjoint_a, adjoint_b)`` for the product: a constant was transposed at
        prepare, a runtime operand is read transposed."""
        a, b = (
            self.constants[p] if self.constants[p] is not None else self.operand(self.xp, args[p], p)
            for p in (0, 1)
        )
        adjoint_a, adjoint_b = (self.adj[p] and self.constants[p] is None for p in (0, 1))
        return a, b, adjoint_a, adjoint_b


class BatchMatMul(_Operands, FloatOp):
    """BATCH_MATMUL version 1 (float32: adj_x/adj_y, batch axes broadcast, ranks 2-4,
    constant or runtime operands)."""

    ops = {B.BATCH_MATMUL: 1}  # v2: int8, v3: int16, v4: hybrid

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        return shapes_reason(node, tensors)

    def prepare(self) -> None:
        self.prepare_operands(np.float32)
        self.product = None  # chosen by finish_prepare

    def finish_prepare(self) -> None:
        """The product: the row of ``MATMUL_TACTICS`` that wins on this node's shapes (no bias,
        no clamp), on the operands as they enter it."""
        from backends.gpu.cuda.matmul import MATMUL_TACTICS, NO_CLAMP, MatmulProblem, MatmulShape
        from backends.gpu.tactics import check_values

        shapes, adjoints = [], []
        for position, tensor in enumerate(self.inputs):
            constant = self.constants[position]
            if constant is not None:  # laid out at prepare, transposed there for an adjoint
                shapes.append(tuple(constant.shape))
                adjoints.append(False)
                continue
            rows, cols = (int(d) for d in tensor.shape[-2:])
            own = math.prod(int(d) for d in tensor.shape[:-2])
            batch = math.prod(int(d) for d in self.batch_shape) if self.modes[position] == "broadcast" else own
            shapes.append((batch, rows, cols))
            adjoints.append(self.adj[position])
        settings = self.tactic_settings
        problem = MatmulProblem(
            MatmulShape.of(shapes[0], shapes[1], *adjoints), False, NO_CLAMP, self.storage.name,
            self.device.compute_capability, settings.vendor_gemm, settings.allow_tf32,
        )

        def arrays(batches: int | None) -> dict[str, Any]:
            """Check inputs of the operands' shapes, with at most ``batches`` products (None: all)."""
            rng = np.random.default_rng(self.node.index)
            sized = [(min(shape[0], batches), *shape[1:]) if batches and len(shape) == 3 else shape for shape in shapes]
            return {"a": check_values(rng, sized[0], self.storage), "b": check_values(rng, sized[1], self.storage)}

        # Checked on two products of the node's shapes (every code path of one product runs in
        # each; the emulated device runs a tiled candidate one OS thread per GPU thread), timed
        # on all of them.
        self.product = self.choose_kernel(
            "BATCH_MATMUL", MATMUL_TACTICS, problem, {"activation": None, "storage": self.storage}, lambda: arrays(2),
            lambda product, a: product(a["a"], a["b"], adjoint_a=adjoints[0], adjoint_b=adjoints[1]),
            timed_arrays=lambda: arrays(None),
        )

    def run(self, args):
        if self.product is None:
            self.finish_prepare()
        a, b, adjoint_a, adjoint_b = self.operands(args)
        out = self.product(a, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b)  # [B, M, N]
        return [out.reshape(self.out_shape)]


class QuantizedBatchMatMul(_Operands, QuantizedOp):
    """BATCH_MATMUL version 2: int8 x int8 -> int8, per tensor (adj_x/adj_y, batch axes
    broadcast, ranks 2-4, constant or runtime operands), in one launch."""

    ops = {B.BATCH_MATMUL: frozenset({2})}

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = shapes_reason(node, tensors)
        if reason:
            return reason
        for role, index in (("lhs", node.inputs[0]), ("rhs", node.inputs[1]), ("output", node.outputs[0])):
            tensor = tensors[index]
            if tensor.type != TensorType.INT8:
                return f"the {role} is {tensor.type_name}; the GPU delegate's quantized BATCH_MATMUL takes int8 only"
            if not per_tensor(tensor):
                return f"the {role} must be quantized per tensor"
        scales = (legacy_params(tensors[i])[0] for i in (node.inputs[0], node.inputs[1], node.outputs[0]))
        return parameter_reason(lambda: product_multiplier(*scales))

    def prepare(self) -> None:
        from backends.gpu.cuda.conv_int8 import BatchMatmulInt8Cuda, OutputStage

        x, y = self.inputs
        out = self.outputs[0]
        self.prepare_operands(np.int8, np.int8)
        (x_scale, x_zp), (y_scale, y_zp), (out_scale, out_zp) = (legacy_params(t) for t in (x, y, out))
        multiplier, shift = product_multiplier(x_scale, y_scale, out_scale)  # the CPU kernel's
        stage = OutputStage(-x_zp, -y_zp, out_zp, -128, 127)
        self.product = BatchMatmulInt8Cuda(stage, multiplier, shift, **self.device.launcher_arguments("batch_matmul_int8.cu"))

    def run(self, args):
        a, b, adjoint_a, adjoint_b = self.operands(args)
        return [self.product(a, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b).reshape(self.out_shape)]
