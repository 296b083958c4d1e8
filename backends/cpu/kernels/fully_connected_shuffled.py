"""FULLY_CONNECTED v2: uint8 input, weights in the shuffled 4x16 int8 format, int16 output
(TFLite's ``reference_ops::ShuffledFullyConnected``, the kernel of ``weights_format``
SHUFFLED4x16INT8).

The weights are uint8 with zero point 128, stored with their sign bit flipped (so that read
as int8 they are ``w - 128``) and shuffled in blocks: for each block of 4 units and each block
of 16 depth values, the 4 x 16 values row by row. The input's sign bit is flipped the same
way (``x - 128``: its zero point is taken to be 128) into the node's second output, the
shuffled-input workspace, which TFLite requires and writes: the input itself for a batch of
1, blocks of 16 values of each of the 4 rows for a batch of 4. Then, per output::

    acc = sum((x - 128) * (w - 128)) + bias                      (int32)
    out = clamp(MultiplyByQuantizedMultiplier(acc, m, e))         int16, no zero point

with ``(m, e) = QuantizeMultiplier(float(s_in * s_w) / s_out)``. TFLite runs batches of 1
and 4 only (any other leaves the output unwritten), units a multiple of 4 and a depth a
multiple of 16; other nodes are refused here.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.quantization import (
    activation_range_quantized,
    legacy_params,
    multiply_by_quantized_multiplier,
    requantization_multiplier,
)
from schema.enums import ActivationFunctionType, BuiltinOperator, FullyConnectedOptionsWeightsFormat, TensorType

T = TensorType
SHUFFLED = FullyConnectedOptionsWeightsFormat.SHUFFLED4x16INT8
CLAMPING = (ActivationFunctionType.NONE, ActivationFunctionType.RELU, ActivationFunctionType.RELU_N1_TO_1,
            ActivationFunctionType.RELU6)


def unshuffled(stored: np.ndarray, units: int, depth: int) -> np.ndarray:
    """The ``[units, depth]`` weights ``w - 128`` (int64) of shuffled, sign-flipped bytes."""
    blocks = stored.reshape(-1).view(np.int8).astype(np.int64).reshape(units // 4, depth // 16, 4, 16)
    return blocks.transpose(0, 2, 1, 3).reshape(units, depth)


@register(BuiltinOperator.FULLY_CONNECTED, 2, 2)
class ShuffledFullyConnected(CpuKernel):
    """FULLY_CONNECTED v2: shuffled 4x16 int8 weights (see the module's docstring)."""

    def prepare(self) -> None:
        self.require_num_inputs(3)
        if self.params is None or self.params.weights_format != SHUFFLED:
            raise self.unsupported("version 2 is the shuffled weights format: weights_format must be SHUFFLED4x16INT8")
        x, weights, bias = self.inputs
        if len(self.outputs) != 2:
            raise self.unsupported(
                f"the node has {len(self.outputs)} outputs; the shuffled format needs 2 (the output and the "
                "shuffled-input workspace), as TFLite requires"
            )
        out, workspace = self.outputs
        self.require_types(x, T.UINT8, role="input")
        self.require_types(weights, T.UINT8, role="weights")
        self.require_types(bias, T.INT32, role="bias")
        self.require_types(out, T.INT16, role="output")
        self.require_types(workspace, T.UINT8, role="shuffled-input workspace (output 2)")
        if not weights.is_constant or len(weights.shape) != 2:
            raise self.unsupported("the shuffled weights must be a 2-D constant [units, depth]")
        units, depth = (int(d) for d in weights.shape)
        if units % 4 or depth % 16:
            raise self.unsupported(f"weights [{units}, {depth}]: units must be a multiple of 4 and depth of 16")
        if x.num_elements % depth:
            raise self.unsupported(f"input of {x.num_elements} elements cannot be split into rows of depth {depth}")
        self.batch = x.num_elements // depth
        if self.batch not in (1, 4):
            raise self.unsupported(f"a batch of {self.batch}: TFLite's shuffled kernel runs batches of 1 and 4 only")
        if bias.num_elements != units:
            raise self.unsupported(f"bias has {bias.num_elements} elements, expected {units}")
        activation = ActivationFunctionType(self.params.fused_activation_function)
        if activation not in CLAMPING:
            raise self.unsupported(f"fused activation {activation.name}; supported: NONE, RELU, RELU_N1_TO_1, RELU6")
        (in_scale, _), (w_scale, _), (out_scale, out_zp) = (legacy_params(t) for t in (x, weights, out))
        # GetQuantizedConvolutionMultipler: the input and weights scales' product in float32
        self.multiplier, self.shift = requantization_multiplier(
            float(np.float32(in_scale) * np.float32(w_scale)) / out_scale, "input scale x weights scale / output scale"
        )
        self.low, self.high = activation_range_quantized(activation, out_scale, out_zp, np.dtype(np.int16))
        self.weights = unshuffled(weights.data, units, depth)
        self.depth = depth
        out.resize((self.batch, units))
        workspace.resize(x.shape)

    def invoke(self) -> None:
        x, bias = self.inputs[0].data, self.inputs[2].data
        out, workspace = self.outputs[0].data, self.outputs[1].data
        flipped = (x.reshape(self.batch, self.depth) ^ 0x80).astype(np.uint8)
        if self.batch == 1:
            workspace.reshape(-1)[...] = flipped.reshape(-1)
        else:  # for each block of 16 depth values, that block of each of the 4 rows
            workspace.reshape(-1)[...] = flipped.reshape(4, -1, 16).transpose(1, 0, 2).reshape(-1)
        acc = flipped.view(np.int8).astype(np.int64) @ self.weights.T + bias.astype(np.int64)
        scaled = multiply_by_quantized_multiplier(acc, self.multiplier, self.shift)
        out[...] = np.clip(scaled, self.low, self.high).reshape(out.shape)
