"""BATCH_MATMUL on quantized tensors: int8, int16 (x int16 or int8) and hybrid.

Shapes as for float32 (rank 2 to 5, ``adj_x``/``adj_y``, batch axes broadcast). TFLite's
reference kernel (``reference_ops::BatchMatMul``), with ``x`` the lhs and ``y`` the rhs::

    acc[..., m, n] = sum_k (x[..., m, k] - x_zp) * (y[..., k, n] - y_zp)
    out = clamp(MultiplyByQuantizedMultiplier(acc, M, s) + out_zp)     (no activation)

``M, s`` from ``double(float(s_x * s_y)) / s_out``. int8 accumulates in int32 (wrapping
like the C when the bound allows overflow) and rescales with the int32
``MultiplyByQuantizedMultiplier``; int16 accumulates in int64 and uses the int64
overload. An int8 x int8 -> int32 node returns the raw products (no zero points).
The products are one ``numpy.matmul`` on floats, exact below 2**24 / 2**53.

Hybrid (float32 lhs, int8 rhs, float32 output): each row of the lhs (over k) is
quantized to int8 on the fly (symmetric, or asymmetric with ``asymmetric_quantize_inputs``)
and the integer products are scaled back in float32 as ``EvalHybrid`` does::

    total = int32(float(dot) - float(col_sum(y)) * x_zp)     (asymmetric only)
    out = (row_factor * s_y[n]) * float(total)
"""

from __future__ import annotations

import numpy as np

from backends.cpu.common import broadcast_shape
from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._hybrid import quantize_rows
from backends.cpu.quantization import (
    exact_float_dtype,
    legacy_params,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_int64,
    requantization_multiplier,
    wrap_int32,
)
from schema.enums import BuiltinOperator, TensorType

T = TensorType
MIN_RANK, MAX_RANK = 2, 5
INT32_LIMIT = 2**31


# v1: hybrid (float32 lhs, int8 rhs) with symmetric input quantization; float32 nodes of
#     v1 go to the float kernel.
# v2: int8 x int8 -> int8 (or -> int32, raw products).
# v3: int16 x int16 -> int16 and int16 x int8 -> int16.
# v4: hybrid with asymmetric_quantize_inputs.
# The arithmetic follows the tensor types, as in TFLite: an under-stamped node runs as
# LiteRT runs it.

def product_multiplier(x_scale: float, y_scale: float, out_scale: float) -> tuple[int, int]:
    """(multiplier, shift) of an integer BATCH_MATMUL (``GetQuantizedConvolutionMultipler``:
    the product of the scales in float32, then a double division), refused where
    TFLite's requantization is undefined (``requantization_multiplier``). Shared with the
    GPU delegate (``backends/gpu/ops/batch_matmul.py``)."""
    product = float(np.float32(x_scale) * np.float32(y_scale))
    return requantization_multiplier(product / float(np.float32(out_scale)), "lhs scale x rhs scale / output scale")

@register(BuiltinOperator.BATCH_MATMUL, 1, 4)
class BatchMatMulQuantized(CpuKernel):
    """BATCH_MATMUL v1 (hybrid), v2 (int8), v3 (int16), v4 (asymmetric hybrid)."""

    @classmethod
    def accepts(cls, context, node) -> bool:
        if len(node.inputs) < 2 or node.inputs[1] < 0:
            return False
        return context.tensors[node.inputs[1]].type in (T.INT8, T.INT16)

    def prepare(self) -> None:
        self.require_num_inputs(2)
        x, y, out = self.inputs[0], self.inputs[1], self.outputs[0]
        self.require_types(x, T.FLOAT32, T.INT8, T.INT16, role="lhs")
        self.require_types(y, T.INT8, T.INT16, role="rhs")
        for role, tensor in (("lhs", x), ("rhs", y)):
            if not MIN_RANK <= len(tensor.shape) <= MAX_RANK:
                raise self.unsupported(f"{role} must have rank {MIN_RANK} to {MAX_RANK}, got {list(tensor.shape)}")
        self.adj_x, self.adj_y = bool(self.params.adj_x), bool(self.params.adj_y)
        rows, depth_x = x.shape[-2:][::-1] if self.adj_x else x.shape[-2:]
        depth_y, cols = y.shape[-2:][::-1] if self.adj_y else y.shape[-2:]
        if depth_x != depth_y:
            raise self.unsupported(
                f"inner dimensions differ: lhs {list(x.shape)} (adj_x={self.adj_x}) and "
                f"rhs {list(y.shape)} (adj_y={self.adj_y})"
            )
        try:
            batch = broadcast_shape(x.shape[:-2], y.shape[:-2])
        except ValueError as error:
            raise self.unsupported(f"batch axes do not broadcast: {error}") from None
        self.rows, self.depth, self.cols = int(rows), int(depth_x), int(cols)
        out.resize((*batch, rows, cols))
        if x.type == T.FLOAT32:
            self._prepare_hybrid(x, y, out)
        else:
            self._prepare_integer(x, y, out)

    def _rhs(self, data: np.ndarray) -> np.ndarray:
        """The rhs as it enters the product ([..., k, n])."""
        return np.swapaxes(data, -1, -2) if self.adj_y else data

    def _lhs(self, data: np.ndarray) -> np.ndarray:
        return np.swapaxes(data, -1, -2) if self.adj_x else data

    # -- integer -----------------------------------------------------------------------------
    def _prepare_integer(self, x, y, out) -> None:
        self.mode = "integer"
        pairs = {(T.INT8, T.INT8), (T.INT16, T.INT16), (T.INT16, T.INT8)}
        if (x.type, y.type) not in pairs:
            raise self.unsupported(
                f"lhs {x.type_name} with rhs {y.type_name}; quantized BATCH_MATMUL takes int8 x int8, "
                "int16 x int16, int16 x int8 (or float32 x int8, hybrid)"
            )
        self.raw_int32 = x.type == T.INT8 and out.type == T.INT32
        if self.raw_int32:
            x_zp = y_zp = 0  # TFLite's int8 -> int32 kernel ignores the zero points
        else:
            self.require_types(out, x.type, role="output")
            for tensor, role in ((x, "lhs"), (y, "rhs"), (out, "output")):
                q = tensor.quantization
                if q is None or not q.is_quantized:
                    raise self.unsupported(f"{role} {tensor.name!r} of type {tensor.type_name} has no quantization")
                if q.is_per_channel:
                    raise self.unsupported(f"per-channel {role} ({tensor.name!r}) is not supported by integer BATCH_MATMUL")
            x_scale, x_zp = legacy_params(x)
            y_scale, y_zp = legacy_params(y)
            out_scale, out_zp = legacy_params(out)
            if x.type == T.INT16 and (x_zp or y_zp or out_zp):
                raise self.unsupported("int16 BATCH_MATMUL needs zero points 0")
            self.multiplier, self.shift = product_multiplier(x_scale, y_scale, out_scale)
            self.out_zp = out_zp
            info = np.iinfo(out.dtype)
            self.low, self.high = int(info.min), int(info.max)
        self.x_zp, self.y_zp = x_zp, y_zp
        self.int64_accumulator = x.type == T.INT16
        x_info = np.iinfo(x.dtype)
        max_x = max(abs(int(x_info.min) - x_zp), abs(int(x_info.max) - x_zp))
        if y.is_constant:
            centered = self._rhs(y.data).astype(np.int64) - y_zp
            bound = int(np.abs(centered).sum(axis=-2).max(initial=0)) * max_x
        else:
            y_info = np.iinfo(y.dtype)
            centered = None
            bound = self.depth * max(abs(int(y_info.min) - y_zp), abs(int(y_info.max) - y_zp)) * max_x
        self.float_type = exact_float_dtype(bound)
        if self.float_type is None:
            raise self.unsupported(f"the accumulators (up to {bound}) are too large to compute exactly")
        self.wrap = not self.int64_accumulator and bound >= INT32_LIMIT
        self.rhs = None if centered is None else np.ascontiguousarray(centered.astype(self.float_type))

    def _invoke_integer(self, out: np.ndarray) -> None:
        lhs = self._lhs(self.inputs[0].data).astype(self.float_type)
        if self.x_zp:
            lhs -= self.x_zp
        rhs = self.rhs
        if rhs is None:
            rhs = self._rhs(self.inputs[1].data).astype(self.float_type)
            if self.y_zp:
                rhs -= self.y_zp
        acc = np.matmul(lhs, rhs).astype(np.int64)  # exact integers
        if self.wrap or self.raw_int32:
            acc = wrap_int32(acc)
        if self.raw_int32:
            out[...] = acc
            return
        if self.int64_accumulator:
            scaled = multiply_by_quantized_multiplier_int64(acc, self.multiplier, self.shift)
        else:
            scaled = multiply_by_quantized_multiplier(acc, self.multiplier, self.shift)
        np.clip(scaled + self.out_zp, self.low, self.high, out=out, casting="unsafe")

    # -- hybrid ------------------------------------------------------------------------------
    def _prepare_hybrid(self, x, y, out) -> None:
        self.mode = "hybrid"
        if y.type != T.INT8:
            raise self.unsupported(f"hybrid (float32 lhs) needs an int8 rhs, got {y.type_name}")
        self.require_types(out, T.FLOAT32, role="output")
        q = y.quantization
        if q is None or not q.is_quantized:
            raise self.unsupported(f"rhs {y.name!r} of type {y.type_name} has no quantization")
        self.asymmetric = bool(self.params.asymmetric_quantize_inputs)
        self.per_channel_scale = None
        if q.scale.size > 1:
            axis = int(q.quantized_dimension)
            column_axis = len(y.shape) - (2 if self.adj_y else 1)
            if axis != column_axis or q.scale.size != self.cols:
                raise self.unsupported(
                    f"per-channel rhs {y.name!r} needs one scale per output column ({self.cols}) "
                    f"along axis {column_axis}; got {q.scale.size} scales along axis {axis}"
                )
            self.per_channel_scale = np.asarray(q.scale, np.float32)
        self.y_scale = np.float32(legacy_params(y)[0])
        self.float_type = exact_float_dtype(self.depth * 128 * 128)
        self.rhs = None
        if y.is_constant:
            self._set_hybrid_rhs(y.data)

    def _set_hybrid_rhs(self, data: np.ndarray) -> None:
        rhs = self._rhs(data)
        self.col_sums = rhs.astype(np.int64).sum(axis=-2, keepdims=True)  # [..., 1, n]
        self.rhs = np.ascontiguousarray(rhs.astype(self.float_type))

    def _invoke_hybrid(self, out: np.ndarray) -> None:
        if not self.inputs[1].is_constant:
            self._set_hybrid_rhs(self.inputs[1].data)
        lhs = self._lhs(self.inputs[0].data)
        batch_shape = lhs.shape[:-1]
        quantized, factors, offsets = quantize_rows(
            np.ascontiguousarray(lhs).reshape(-1, self.depth), self.asymmetric
        )
        quantized = quantized.reshape(*batch_shape, self.depth).astype(self.float_type)
        factors = factors.reshape(*batch_shape, 1)
        if self.per_channel_scale is None:
            scale = factors * self.y_scale  # float32 [..., m, 1]
        else:
            scale = factors * self.per_channel_scale  # float32 [..., m, n]
        dot = np.matmul(quantized, self.rhs)  # exact integers
        if offsets is not None:
            # total -= row_sum * batch_offset: int32 minus a float product, in float32,
            # truncated back to int32.
            correction = self.col_sums.astype(np.float32) * offsets.reshape(*batch_shape, 1).astype(np.float32)
            total = np.trunc(wrap_int32(np.rint(dot).astype(np.int64)).astype(np.float32) - correction)
        else:
            total = wrap_int32(np.rint(dot).astype(np.int64)).astype(np.float32)
        np.multiply(scale, total, out=out)

    def invoke(self) -> None:
        out = self.outputs[0].data
        if out.size == 0:
            return
        if self.mode == "hybrid":
            self._invoke_hybrid(out)
        else:
            self._invoke_integer(out)
