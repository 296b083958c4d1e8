"""LSTM v2: the basic kernel (``kernel_type`` BASIC; TFLite's ``lstm.cc`` ``basic`` and
``LstmCell``, reference in ``internal/reference/lstm_cell.h``).

Five inputs (input ``[batch, n_input]``, previous activation ``[batch, n]``, weights
``[4n, n_input + n]``, bias ``[4n]``, previous state ``[batch, n]``) and four outputs (the
activation, the state, and two temporaries: the concatenated input and the gates'
pre-activations). One step::

    gates = concat(input, prev_activation) @ weights.T + bias      (4n: i, g, f, o)
    state = sigmoid(i) * tanh(g) + sigmoid(f) * prev_state
    activation = sigmoid(o) * tanh(state)

then the activation and the state are copied back into inputs 1 and 4, which so carry
the cell from one invoke to the next (TFLite makes them persistent; here they must be
variables or model inputs, not constants).

- float32: the formula above.
- uint8 (activations on [-1, 127/128]: scale 1/128, zero point 128; int32 bias, int16
  state with 4 integer bits, the only case LiteRT implements): the products are rescaled
  to int16 Q3.12 by ``4096 * s_bias`` (``MultiplyByQuantizedMultiplier``), then gemmlowp's
  16-bit logistic and tanh, the state update in Q4.11 (saturating add), tanh of the state
  rescaled to Q3.12, and the activation ``rdbpot(o * tanh, 8)`` back to uint8.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._fixed_point import checked_log2, int16_logistic_table, int16_tanh_table, rescale, srdhm
from backends.cpu.kernels._lstm import sigmoid
from backends.cpu.kernels._recurrent import state_tensor
from backends.cpu.quantization import legacy_params, multiply_by_quantized_multiplier, quantize_multiplier, rounding_divide_by_pot, wrap_int32
from schema.enums import BuiltinOperator, TensorType
from schema.params import LSTMKernelType

T = TensorType


# v2: the basic kernel (float32, or uint8 with an int16 state). (v1, v3, v4: the full
# kernel, lstm.py; this class takes any version whose options say BASIC, as LiteRT.)
@register(BuiltinOperator.LSTM, 1, 4)
class LstmBasic(CpuKernel):
    """LSTM with ``kernel_type`` BASIC (version 2)."""

    foldable = False  # writes its state back into inputs 1 and 4

    @classmethod
    def accepts(cls, context, node) -> bool:
        return node.params is not None and node.params.kernel_type == LSTMKernelType.BASIC

    def prepare(self) -> None:
        self.require_num_inputs(5)
        if len(self.outputs) != 4:
            raise self.unsupported(f"the basic kernel has 4 outputs (activation, state and two temporaries), got {len(self.outputs)}")
        x, _, weights, bias, _ = self.inputs
        if len(x.shape) != 2:
            raise self.unsupported(f"the input must be 2-D [batch, n_input], got {list(x.shape)}")
        batch, n_input = x.shape
        activation = state_tensor(self, 1, role="previous activation", variable=False)
        state = state_tensor(self, 4, role="previous state", variable=False)
        if len(activation.shape) != 2 or activation.shape[0] != batch:
            raise self.unsupported(f"the previous activation must be [{batch}, n], got {list(activation.shape)}")
        n = int(activation.shape[1])
        for tensor, shape, role in ((weights, (4 * n, n_input + n), "weights"), (bias, (4 * n,), "bias"), (state, (batch, n), "previous state")):
            if tuple(tensor.shape) != shape:
                raise self.unsupported(f"the {role} {tensor.name!r} has shape {list(tensor.shape)}, expected {list(shape)}")
        self.n = n
        self.quantized = x.type == T.UINT8
        if self.quantized:
            types = (T.UINT8, T.UINT8, T.UINT8, T.INT32, T.INT16)
            out_types = (T.UINT8, T.INT16, T.UINT8, T.INT16)
        else:
            types, out_types = (T.FLOAT32,) * 5, (T.FLOAT32,) * 4
        for tensor, wanted, role in zip(self.inputs, types, ("input", "previous activation", "weights", "bias", "previous state")):
            self.require_types(tensor, wanted, role=role)
        for tensor, wanted, role in zip(self.outputs, out_types, ("activation", "state", "concatenation", "activation temporary")):
            self.require_types(tensor, wanted, role=f"output ({role})")
        if self.quantized:
            is_log2, log2 = checked_log2(legacy_params(self.outputs[1])[0])
            if not is_log2:
                raise self.unsupported("the internal state of a LSTM cell must have a power-of-two scale")
            if 15 + log2 != 4:
                raise self.unsupported("the only quantized basic LSTM cell supported has a state with 4 integer bits (scale 2**-11)")
            self.weights_zp = legacy_params(weights)[1]
            self.accum_scale = quantize_multiplier(float(np.float32(4096) * np.float32(legacy_params(bias)[0])))
        for out, shape in zip(self.outputs, ((batch, n), (batch, n), (batch, n_input + n), (batch, 4 * n))):
            out.resize(shape)

    def invoke(self) -> None:
        x, prev_activation, weights, bias, prev_state = (t.data for t in self.inputs)
        activation_out, state_out, concat_out, gates_out = (t.data for t in self.outputs)
        concat_out[...] = np.concatenate([x, prev_activation], axis=1)
        if self.quantized:
            self._invoke_uint8(concat_out, weights, bias, prev_state, activation_out, state_out, gates_out)
        else:
            gates_out[...] = concat_out @ weights.T + bias
            i, g, f, o = (gates_out[:, k * self.n : (k + 1) * self.n] for k in range(4))
            state_out[...] = sigmoid(i) * np.tanh(g) + sigmoid(f) * prev_state
            activation_out[...] = sigmoid(o) * np.tanh(state_out)
        prev_activation[...] = activation_out
        prev_state[...] = state_out

    def _invoke_uint8(self, concat, weights, bias, prev_state, activation_out, state_out, gates_out) -> None:
        products = (concat.astype(np.int64) - 128) @ (weights.astype(np.int64) - self.weights_zp).T
        accum = multiply_by_quantized_multiplier(wrap_int32(products + bias), *self.accum_scale)
        gates_out[...] = np.clip(accum, -32768, 32767)
        logistic, tanh = int16_logistic_table(3), int16_tanh_table(3)
        gates = gates_out.astype(np.int64) + 32768
        i, g, f, o = (gates[:, k * self.n : (k + 1) * self.n] for k in range(4))
        input_times_modulation = srdhm(logistic[i].astype(np.int64), tanh[g].astype(np.int64), bits=16)  # Q0.15
        kept = srdhm(logistic[f].astype(np.int64), prev_state.astype(np.int64), bits=16)  # Q4.11
        state = np.clip(rounding_divide_by_pot(input_times_modulation, 4) + kept, -32768, 32767)  # Rescale<4>, saturating add
        state_out[...] = state
        state_q3 = rescale(state, 4, 3, bits=16)
        activation = srdhm(logistic[o].astype(np.int64), tanh[state_q3 + 32768].astype(np.int64), bits=16)
        activation_out[...] = np.clip(rounding_divide_by_pot(activation, 8), -128, 127) + 128
