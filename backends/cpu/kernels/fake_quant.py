"""FAKE_QUANT: quantize to ``num_bits`` and back, over a fixed [min, max] range.

TFLite (``kernels/fake_quant.cc``, ``reference_ops::FakeQuant``, ``NudgeQuantizationRange``
and ``FakeQuantizeArray`` in ``internal/quantization_util.cc``, from TensorFlow's
``FakeQuantWithMinMaxArgs``), all in float32:

    scale       = (max - min) / (2**num_bits - 1)
    zero_point  = clamp(round(0 - min / scale), 0, 2**num_bits - 1)   (round: halves away from 0)
    nudged_min  = (0 - zero_point) * scale
    nudged_max  = (2**num_bits - 1 - zero_point) * scale
    y = round((clamp(x, nudged_min, nudged_max) - nudged_min) * (1 / scale)) * scale + nudged_min

so that 0 is exactly representable. The clamp is ``std::min(nudged_max, std::max(nudged_min,
x))``: a NaN input gives ``nudged_min``. Version 1: float32; version 2 adds
``narrow_range``, which LiteRT's kernel refuses at prepare ("not currently supported at
runtime"): so does this one (a version 2 node without it runs). ``num_bits`` must be in
2..16 and min < max (TensorFlow's own limits; TFLite only DCHECKs the range).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.quantization import round_half_away
from schema.enums import BuiltinOperator, TensorType

T = TensorType
F32 = np.float32


def nudged_range(min_value: float, max_value: float, num_bits: int) -> tuple[np.float32, np.float32, np.float32]:
    """TFLite's ``NudgeQuantizationRange`` for quant range [0, 2**num_bits - 1], in float32:
    (nudged_min, nudged_max, scale)."""
    quant_min, quant_max = F32(0), F32((1 << num_bits) - 1)
    low, high = F32(min_value), F32(max_value)
    scale = (high - low) / (quant_max - quant_min)
    zero_point_from_min = quant_min - low / scale
    if zero_point_from_min < quant_min:
        zero_point = quant_min
    elif zero_point_from_min > quant_max:
        zero_point = quant_max
    else:
        zero_point = round_half_away(np.array([zero_point_from_min], F32))[0]
    return (quant_min - zero_point) * scale, (quant_max - zero_point) * scale, scale


@register(BuiltinOperator.FAKE_QUANT, 1, 2)  # v1: float32; v2: narrow_range (refused, as LiteRT does)
class FakeQuant(CpuKernel):
    """FAKE_QUANT v1-v2."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        x = self.inputs[0]
        self.require_types(x, T.FLOAT32)
        self.require_types(self.outputs[0], T.FLOAT32, role="output")
        params = self.params
        if params is None:
            raise self.unsupported("the node has no FakeQuantOptions (min, max and num_bits are required)")
        if params.narrow_range:
            raise self.unsupported(
                "narrow_range is not supported at runtime (LiteRT refuses it too: it is meant for weights, "
                "which the converter folds, not for activations)"
            )
        if not 2 <= params.num_bits <= 16:
            raise self.unsupported(f"num_bits is {params.num_bits}; it must be in 2..16")
        if not F32(params.min) < F32(params.max):
            raise self.unsupported(f"min {params.min} must be below max {params.max}")
        self.nudged_min, self.nudged_max, self.scale = nudged_range(params.min, params.max, params.num_bits)
        self.inverse_scale = F32(1) / self.scale
        self.outputs[0].resize(x.shape)

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        clamped = np.where(self.nudged_min < x, x, self.nudged_min)  # std::max(nudged_min, x)
        clamped = np.where(clamped < self.nudged_max, clamped, self.nudged_max)  # std::min(nudged_max, .)
        steps = round_half_away((clamped - self.nudged_min) * self.inverse_scale)
        np.add(steps * self.scale, self.nudged_min, out=out)
