"""FULLY_CONNECTED on the GPU: float32 (``FullyConnected``) and int8 / uint8
(``QuantizedFullyConnected``, bit-exact with TFLite's reference kernels).

Float semantics are the CPU kernel's (``backends/cpu/kernels/fully_connected.py``), i.e.
TFLite's reference kernel: ``[units, depth]`` weights, optional bias, the fused
activation as a clamp (TANH rejected, as TFLite does). How: one of ``MATMUL_TACTICS``
(``cuda/matmul.py``), chosen on the device at prepare (``backends/gpu/tactics.py``):
``cuda/matmul.cu``'s ``matmul_bias_act`` (the product with the bias and the clamp fused),
its shared-memory tiles ``cuda/matmul_tiled.cu``, its tensor-core form (float16 storage),
or the vendor GEMM (``cuda/cublas.py``), with the weights transposed once at prepare;
float16 storage as ``conv.py`` describes. The float op shares ``conv.WeightsOp``
with the convolutions (the bias upload).

Quantized semantics are the CPU kernel's (``backends/cpu/kernels/fully_connected_quantized.py``)::

    acc[b, u] = sum_d (w[u, d] - w_zp) * (x[b, d] - x_zp) + bias[u]        (int32)
    out = clamp(int32(round(double(acc) * (double(s_x) * s_w[u] / s_out))) + out_zp)

In the LiteRT we match, the reference FULLY_CONNECTED rescales in double, never with
``MultiplyByQuantizedMultiplier``; that output stage (``rescale_double``), its real
multipliers (``double_rescale_scale``) and the bias-scale check are the CPU kernel's own
functions; the kernel wraps its int32 accumulator and converts an out-of-range product
to INT32_MIN as the compiled C does (which the CPU kernel does where ``int32_hazards``
says it can happen).

Versions (``schema/versioning/op_version.py``: the rule stamps the first that applies of
v6 "two inputs", v5 "keep_num_dims", v4 "int8", else v1):

- v1: uint8 x uint8 -> uint8, weights per tensor;
- v4: int8 x int8 -> int8, weights per tensor or per channel (one scale per unit, zero
  points ignored as TFLite's per-channel kernels do);
- v5: keep_num_dims (output ``x.shape[:-1] + [units]``), v6: no bias slot, on the
  uint8/int8 nodes above: ``QuantizedFullyConnected``;
- float32 nodes of v1, v5 and v6: ``FullyConnected``.

Refused: hybrid (v3, v9, v12), int16 (v7, v11, and int16 x int8 nodes stamped v1/v5/v6),
shuffled (v2), sparse (v8) and int4/int2 (v10, v13, v14) nodes.

How (quantized): one launch of ``cuda/fully_connected_int8.cu`` per node: the int32 accumulation with
the zero points (the weights stay in their own type, laid out once at prepare as
``[depth, units]``), the bias, the int32 wrap of TFLite's accumulator, the double rescale
(``cuda/fixed_point.cuh``'s ``rescale_double``, tested equal to the CPU's), the clamp and
the store. The per-unit scales (float64) are ``double_rescale_scale``'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from backends.cpu.kernels.fully_connected_quantized import (
    CLAMPING_ACTIVATIONS,
    bias_scale_error,
    double_rescale_scale,
    input_abs_max,
)
from backends.cpu.quantization import INT32_MAX, activation_range_quantized, exact_float_dtype, legacy_params
from backends.gpu.cuda.sources import activation_range
from backends.gpu.ops.base import Act, FloatOp, fused_activation, fused_activation_reason, input_tensor
from backends.gpu.ops.conv import WeightsOp, bias_count_reason
from backends.gpu.ops.quantized_base import QuantizedOp, parameter_reason, per_tensor
from schema.enums import BuiltinOperator, FullyConnectedOptionsWeightsFormat, TensorType

B = BuiltinOperator
T = TensorType


FC_ACTIVATIONS = (Act.NONE, Act.RELU, Act.RELU_N1_TO_1, Act.RELU6)


def fully_connected_inputs_reason(node) -> str | None:
    """Why a FULLY_CONNECTED node's inputs or weights format cannot run (any type), or None."""
    if len(node.inputs) not in (2, 3) or node.inputs[0] < 0 or node.inputs[1] < 0:
        return f"expected inputs (input, weights[, bias]), got {len(node.inputs)} inputs"
    weights_format = int(getattr(node.params, "weights_format", 0) or 0)
    if weights_format != FullyConnectedOptionsWeightsFormat.DEFAULT:
        try:
            name = FullyConnectedOptionsWeightsFormat(weights_format).name
        except ValueError:
            name = str(weights_format)
        return f"weights_format {name} is not supported; only DEFAULT"
    return None


def dense_weights_reason(w) -> str | None:
    """Why ``w`` is not the dense 2-D ``[units, depth]`` weights of a FULLY_CONNECTED."""
    if w.sparsity is not None:
        return "sparse weights are not supported"
    if len(w.shape) != 2:
        return f"weights must be 2-D [units, depth], got {list(w.shape)}"
    return None


def input_rows_reason(x, depth: int, params) -> str | None:
    """Why the input ``x`` cannot be read as rows of ``depth`` values (with
    ``keep_num_dims``: its last axis must be that depth)."""
    if depth <= 0 or x.num_elements % depth:
        return f"input of shape {list(x.shape)} cannot be split into rows of depth {depth}"
    if getattr(params, "keep_num_dims", False) and (not x.shape or x.shape[-1] != depth):
        return f"keep_num_dims: the input's last axis ({list(x.shape)}) must be the depth {depth}"
    return None


class FullyConnected(WeightsOp):
    """FULLY_CONNECTED versions 1, 5 and 6 (float32, DEFAULT weights, optional bias; v5:
    keep_num_dims, v6: no bias slot)."""

    ops = {B.FULLY_CONNECTED: frozenset({1, 5, 6})}  # v5: keep_num_dims, v6: no bias slot; v2-4 quantized

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = fully_connected_inputs_reason(node)
        if reason:
            return reason
        params = node.params
        reason = FloatOp.require_constant(tensors, node.inputs[1], "weights")
        if reason:
            return reason + " (the GPU kernel transposes them once, at prepare)"
        x, w = tensors[node.inputs[0]], tensors[node.inputs[1]]
        reason = dense_weights_reason(w)
        if reason:
            return reason
        units, depth = w.shape
        reason = input_rows_reason(x, depth, params)
        if reason:
            return reason
        from backends.gpu.cuda.matmul import matmul_launch_reason

        # TFLite's FULLY_CONNECTED has no float TANH / SIGN_BIT (its Prepare fails).
        return (
            bias_count_reason(input_tensor(node, tensors, 2), units)
            or fused_activation_reason(params, FC_ACTIVATIONS)
            or matmul_launch_reason(1, x.num_elements // depth, units)
        )

    def prepare(self) -> None:
        weights = np.asarray(self.inputs[1].data, np.float32)
        self.units, self.depth = weights.shape
        self.weights = self.upload(np.ascontiguousarray(weights.T))  # [depth, units]
        self.prepared_inputs.add(1)
        self.prepare_bias()
        self.out_shape = tuple(self.outputs[0].shape)
        self.product = None  # chosen by finish_prepare

    def finish_prepare(self) -> None:
        """The product: the row of ``MATMUL_TACTICS`` that wins on this node's shapes, with the
        bias and the clamp fused, reading and writing the storage dtype."""
        from backends.gpu.cuda.matmul import MATMUL_TACTICS, MatmulProblem, MatmulShape
        from backends.gpu.tactics import check_rows, check_values

        rows = self.inputs[0].num_elements // self.depth
        activation = fused_activation(self.params)
        settings = self.tactic_settings
        problem = MatmulProblem(
            MatmulShape.of((rows, self.depth), (self.depth, self.units)), self.has_bias, activation_range(activation),
            self.storage.name, self.device.compute_capability, settings.vendor_gemm, settings.allow_tf32,
        )

        def arrays(count: int) -> dict[str, Any]:
            rng = np.random.default_rng(self.node.index)
            return {
                "a": check_values(rng, (count, self.depth), self.storage),
                "b": check_values(rng, (self.depth, self.units), self.storage),
                "bias": check_values(rng, (self.units,), self.storage) if self.has_bias else None,
            }

        self.product = self.choose_kernel(
            "FULLY_CONNECTED", MATMUL_TACTICS, problem, {"activation": activation, "storage": self.storage},
            lambda: arrays(check_rows(rows)), lambda product, a: product(a["a"], a["b"], a["bias"]),
            timed_arrays=lambda: arrays(rows),
        )

    def matmul(self, x: Any, bias: Any) -> Any:
        """``clamp(x @ weights + bias)`` in one launch, ``[rows, units]`` in the storage dtype."""
        if self.product is None:
            self.finish_prepare()
        return self.product(x, self.weights, bias)

    def run(self, args):
        x = args[0].reshape(-1, self.depth)
        return [self.matmul(x, self.bias_value(args)).reshape(self.out_shape)]


def _weight_scales(weights) -> np.ndarray | None:
    """The per-unit weight scales (float32[units]) of per-channel weights, else None."""
    q = weights.quantization
    return np.asarray(q.scale, np.float32) if q.scale.size > 1 else None


class QuantizedFullyConnected(QuantizedOp):
    """FULLY_CONNECTED v1 (uint8), v4 (int8, per-tensor or per-channel weights), v5
    (keep_num_dims) and v6 (no bias slot) of those."""

    ops = {B.FULLY_CONNECTED: frozenset({1, 4, 5, 6})}
    data_inputs = (0, 1)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = fully_connected_inputs_reason(node)
        if reason:
            return reason
        params = node.params
        x, w, out = tensors[node.inputs[0]], tensors[node.inputs[1]], tensors[node.outputs[0]]
        if not w.is_constant:
            return "the weights must be a constant tensor (the GPU kernel lays them out once, at prepare)"
        reason = dense_weights_reason(w)
        if reason:
            return reason
        units, depth = (int(d) for d in w.shape)
        if depth <= 0 or units <= 0:
            return f"weights of shape {list(w.shape)} are empty"
        reason = input_rows_reason(x, depth, params)
        if reason:
            return reason
        if not per_tensor(x) or not per_tensor(out):
            return "the input and the output must be quantized per tensor"
        q = w.quantization
        if q.scale.size > 1:
            if x.type != T.INT8:
                return f"per-channel weights need int8 input, got {x.type_name}"
            if int(q.quantized_dimension) != 0 or q.scale.size != units:
                return (
                    f"weights have {q.scale.size} scales along quantized_dimension {q.quantized_dimension}; "
                    f"per-channel weights need one scale per unit ({units}) along axis 0"
                )
        elif not per_tensor(w):
            return "the weights must have one zero point"
        bias = input_tensor(node, tensors, 2)
        if bias is not None:
            if bias.type != T.INT32 or not bias.is_constant:
                return f"the bias must be a constant INT32 tensor, got {'a runtime' if not bias.is_constant else bias.type_name} tensor"
            if bias.num_elements != units:
                return f"bias has {bias.num_elements} elements, expected {units}"
            if q.scale.size == 1:
                reason = bias_scale_error(legacy_params(x)[0], legacy_params(w)[0], bias, legacy_params(out)[0])
                if reason:
                    return reason
        if exact_float_dtype(cls._row_bound(x, w)) is None:
            return "the accumulators are too large to compute exactly"
        from backends.gpu.cuda.matmul import matmul_launch_reason

        # TFLite's integer FULLY_CONNECTED has no TANH / SIGN_BIT (its Prepare fails).
        out_scale, out_zp = legacy_params(out)
        return (
            fused_activation_reason(params, CLAMPING_ACTIVATIONS)
            or parameter_reason(lambda: activation_range_quantized(fused_activation(params), out_scale, out_zp, out.dtype))
            or matmul_launch_reason(1, x.num_elements // depth, units)
        )

    @staticmethod
    def _centered(weights) -> np.ndarray:
        """``[units, depth]`` int64: ``w - w_zp`` (per-channel weights: zero points ignored)."""
        w_zp = 0 if weights.quantization.scale.size > 1 else legacy_params(weights)[1]
        return np.asarray(weights.data, np.int64) - w_zp

    @classmethod
    def _row_bound(cls, x, weights) -> int:
        """max over units of ``sum |w - w_zp| * max |x - x_zp|`` (the CPU kernel's bound)."""
        row = int(np.abs(cls._centered(weights)).sum(axis=1).max(initial=0))
        return row * input_abs_max(x.dtype, legacy_params(x)[1])

    def prepare(self) -> None:
        from backends.gpu.cuda.conv_int8 import OutputStage

        x, weights, out = self.inputs[0], self.inputs[1], self.outputs[0]
        self.units, self.depth = (int(d) for d in weights.shape)
        in_scale, in_zp = legacy_params(x)
        out_scale, out_zp = legacy_params(out)
        scales = _weight_scales(weights)
        w_zp = 0 if scales is not None else legacy_params(weights)[1]  # per channel: zero points ignored
        channel_scales = scales.astype(np.float64) if scales is not None else np.float64(np.float32(legacy_params(weights)[0]))
        scale = np.broadcast_to(double_rescale_scale(in_scale, channel_scales, out_scale), (self.units,))
        self.scales = self.upload(scale, np.float64)
        low, high = activation_range_quantized(fused_activation(self.params), out_scale, out_zp, out.dtype)
        self.weights = self.upload(np.ascontiguousarray(np.asarray(weights.data).T), weights.dtype)  # [depth, units]
        self.prepared_inputs.add(1)
        bias = self.inputs[2] if len(self.inputs) > 2 else None
        self.bias = None if bias is None else self.upload(np.asarray(bias.data).reshape(-1), np.int32)
        if bias is not None:
            self.prepared_inputs.add(2)
        self.out_shape = tuple(out.shape)
        self.stage = OutputStage(-in_zp, -w_zp, out_zp, low, high)
        self.host_scales = np.ascontiguousarray(scale, np.float64)
        sums = np.abs(np.asarray(weights.data, np.int64)).sum(axis=1)  # per unit: sum |w|
        largest_bias = int(np.abs(np.asarray(bias.data, np.int64)).max(initial=0)) if bias is not None else 0
        # The vendor GEMM's sums without the zero point, and the zero point's correction, stay in int32.
        self.vendor_exact = 256 * int(sums.max(initial=0)) + largest_bias <= INT32_MAX
        self.kernel = None  # chosen by finish_prepare

    def finish_prepare(self) -> None:
        """The kernel: the row of ``cublas.fully_connected_int8_tactics()`` that wins on this node
        (``fully_connected_int8.cu``, or cuBLAS's int8 GEMM then the requantization), checked
        bit for bit against the twin on the device."""
        from backends.gpu.cuda.cublas import FullyConnectedInt8Problem, fully_connected_int8_tactics
        from backends.gpu.tactics import check_values

        x = self.inputs[0]
        rows = x.num_elements // self.depth
        problem = FullyConnectedInt8Problem(
            rows, self.depth, self.units, np.dtype(x.dtype).name, self.stage.filter_offset, self.vendor_exact,
            self.tactic_settings.vendor_gemm,
        )

        def arrays() -> dict[str, Any]:
            rng = np.random.default_rng(self.node.index)
            return {
                "x": check_values(rng, (rows, self.depth), x.dtype), "w": check_values(rng, (self.depth, self.units), x.dtype),
                "bias": check_values(rng, (self.units,), np.int32) if self.bias is not None else None,
                "scales": self.host_scales,
            }

        self.kernel = self.choose_kernel(
            "FULLY_CONNECTED int8", fully_connected_int8_tactics(), problem, {"stage": self.stage}, arrays,
            lambda kernel, a: kernel(a["x"], a["w"], a["bias"], a["scales"]),
        )

    def run(self, args):
        if self.kernel is None:
            self.finish_prepare()
        x = args[0].reshape(-1, self.depth)
        return [self.kernel(x, self.weights, self.bias, self.scales).reshape(self.out_shape)]
