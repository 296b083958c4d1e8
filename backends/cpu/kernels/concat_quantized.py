"""CONCATENATION of uint8 inputs whose scale or zero point differ from the output's:
TFLite's reference kernel rescales each such input (``ConcatenationWithScaling`` in
``internal/reference/concatenation.h``), in float32::

    scale = s_in * (1.f / s_out)             (float32, as TFLite)
    bias  = -z_in * scale                    (float32)
    out   = clamp(round(q * scale + bias) + z_out, 0, 255)     round: halves away from 0

and copies the inputs whose parameters equal the output's unchanged. Only version 1
(uint8) rescales: TFLite's Prepare requires int8 (v2) inputs to have the output's
scale and zero point, and int16 (v3) zero points 0 (concat_split.py handles those, and
uint8 inputs that all share the output's parameters). This class takes exactly the
uint8 nodes that need rescaling.

How: each rescaled input maps its 256 possible values through a table built at prepare
(the float32 arithmetic above, evaluated once per value); invoke is one lookup per
rescaled input and one ``np.concatenate``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.quantize import quantize_quotient
from backends.cpu.kernels.reshape import inputs_pending, normalize_axis
from backends.cpu.quantization import is_quantized
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType

T = TensorType


def _params(tensor) -> tuple[float, int]:
    """(scale, zero_point) as TFLite's ``params`` (0, 0 when absent)."""
    if not is_quantized(tensor):
        return 0.0, 0
    q = tensor.quantization
    return float(np.float32(q.scale[0])), int(q.zero_point[0]) if q.zero_point.size else 0


def rescale_table(input_params: tuple[float, int], output_params: tuple[float, int]) -> np.ndarray:
    """uint8[256]: each uint8 input value rescaled to the output, in TFLite's float32 steps
    (``clamp(int32(round(q * scale + bias)) + z_out, 0, 255)``: a rounded value outside
    int32, as extreme scales give, converts to INT32_MIN as on x86)."""
    (s_in, z_in), (s_out, z_out) = input_params, output_params
    f32 = np.float32
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        inverse_output_scale = f32(1.0) / f32(s_out)
        scale = f32(s_in) * inverse_output_scale
        bias = f32(-z_in) * scale
        values = np.arange(256, dtype=np.float32) * scale + bias  # float32 steps
    return quantize_quotient(values, z_out, 0, 255).astype(np.uint8)


def rescale_tables(inputs, output) -> list[np.ndarray | None]:
    """Per input, the uint8[256] table that rescales it to ``output``'s quantization, or
    None for an input whose (scale, zero point) equal the output's (copied unchanged).
    The Prepare-time parameters of the rescaling CONCATENATION, shared by the CPU kernel
    and the GPU delegate."""
    target = _params(output)
    return [None if _params(t) == target else rescale_table(_params(t), target) for t in inputs]


def needs_rescaling(context, node) -> bool:
    """A uint8 node with some input whose (scale, zero point) differ from the output's."""
    if not len(node.outputs) or not len(node.inputs):
        return False
    out = context.tensors[node.outputs[0]]
    if out.type != T.UINT8:
        return False
    target = _params(out)
    return any(i >= 0 and _params(context.tensors[i]) != target for i in node.inputs)


@register(BuiltinOperator.CONCATENATION, 1, 1)  # v1: uint8 (float32, int32, ... also v1: concat_split.py)
class RescalingConcatenation(CpuKernel):
    """CONCATENATION v1 on uint8 inputs that TFLite rescales to the output's quantization."""

    @classmethod
    def accepts(cls, context, node) -> bool:
        return needs_rescaling(context, node)

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        inputs, out = self.inputs, self.outputs[0]
        for tensor in inputs:
            self.require_types(tensor, T.UINT8)
        self.require_types(out, T.UINT8, role="output")
        if self.params.fused_activation_function != ActivationFunctionType.NONE:
            raise self.unsupported("a fused activation is not supported on uint8 (TFLite rejects it)")
        for tensor in (*inputs, out):
            if is_quantized(tensor) and tensor.quantization.is_per_channel:
                raise self.unsupported(f"tensor {tensor.name!r} is quantized per channel; only per-tensor is supported")
        first = inputs[0]
        rank = len(first.shape)
        if rank == 0:
            raise self.unsupported("scalars cannot be concatenated with rescaling")
        self.axis = normalize_axis(self, self.params.axis, rank)
        total = 0
        for t in inputs:
            others = [d for i, d in enumerate(t.shape) if i != self.axis]
            if len(t.shape) != rank or others != [d for i, d in enumerate(first.shape) if i != self.axis]:
                raise self.unsupported(f"input shapes {[list(t.shape) for t in inputs]} differ outside axis {self.axis}")
            total += t.shape[self.axis]
        target = _params(out)
        if target[0] == 0.0:
            raise self.unsupported(f"output {out.name!r} has no quantization scale to rescale to")
        self.tables = rescale_tables(inputs, out)
        out.resize([total if i == self.axis else d for i, d in enumerate(first.shape)])

    def bind(self) -> Callable[[], None]:
        """One bound ``take`` per rescaled input (into its own buffer, indexed through an
        intp copy of the values: a uint8 index would be converted at each call), then
        one ``concatenate``."""
        if not self.buffers_are_fixed():
            return self.invoke
        parts, lookups = [], []
        for tensor, table in zip(self.inputs, self.tables):
            if table is None:
                parts.append(tensor.data)
                continue
            index, rescaled = np.empty(tensor.shape, np.intp), np.empty(tensor.shape, np.uint8)
            lookups.append((index, tensor.data, table.take, rescaled))
            parts.append(rescaled)
        concatenate, axis, out = np.concatenate, self.axis, self.outputs[0].data

        def concatenation() -> None:
            for index, values, take, rescaled in lookups:
                index[...] = values
                take(index, None, rescaled, "clip")  # (valid indices: "clip" skips a temporary)
            concatenate(parts, axis, out)

        return concatenation

    def invoke(self) -> None:
        parts = [
            t.data if table is None else np.take(table, t.data)
            for t, table in zip(self.inputs, self.tables)
        ]
        np.concatenate(parts, axis=self.axis, out=self.outputs[0].data)

