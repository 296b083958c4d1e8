"""SVDF: a fully connected layer factored into a feature and a time filter, with a memory
of the last ``memory`` activations per filter (TFLite's ``svdf.cc``,
``internal/reference/svdf.h``). With ``filters = units * rank``::

    state[b, f, :] <- shifted left by one; state[b, f, -1] = (W_feature x)[b, f]
    s[b, f]  = sum_m W_time[f, m] * state[b, f, m]
    y[b, u]  = activation(sum_r s[b, u * rank + r] + bias[u])

The state (input 4, a variable ``[batch, filters * memory]``) persists across invokes.

- v1: float32. v2: hybrid (int8 ``W_feature`` and ``W_time``, float32 activations; the
  input rows quantized on the fly, ``W_time`` dequantized once as ``int8 * scale`` in
  float32). v4: hybrid with ``asymmetric_quantize_inputs``.
- v3: int8 input and output, int8 ``W_feature``, int16 ``W_time`` and state, int32 bias:
  the feature product ``sum (x - x_zp) * w`` is rescaled (``MultiplyByQuantizedMultiplier``
  by ``s_x * s_wf / s_state``, computed in float32 as TFLite does) and clamped to int16
  into the state; the time product and the reduction are int32 (wrapping as the C), then
  rescaled by ``s_state * s_wt / s_y`` to int8. LiteRT requires a RELU activation for it
  and applies none (the int8 clamp is the only one): so here too.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._hybrid import apply_float_activation
from backends.cpu.kernels._recurrent import Dense, state_tensor, weights_kind
from backends.cpu.quantization import legacy_params, multiply_by_quantized_multiplier, quantize_multiplier, wrap_int32
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType

Act = ActivationFunctionType
T = TensorType


# v1: float32. v2: hybrid. v3: int8 (int16 state). v4: hybrid with asymmetric_quantize_inputs.
@register(BuiltinOperator.SVDF, 1, 4)
class Svdf(CpuKernel):
    """SVDF v1-v4."""

    foldable = False  # the state changes at every invoke

    def prepare(self) -> None:
        self.require_num_inputs(5)
        if len(self.outputs) != 1:
            raise self.unsupported(f"expected 1 output, got {len(self.outputs)}")
        x, feature, time_weights, bias, _ = self.inputs
        params = self.params
        rank = int(params.rank) if params is not None else 0
        if len(x.shape) != 2:
            raise self.unsupported(f"the input must be 2-D [batch, input_size], got {list(x.shape)}")
        if feature is None or time_weights is None or len(feature.shape) != 2 or len(time_weights.shape) != 2:
            raise self.unsupported("the feature and time weights must be 2-D [filters, input_size] and [filters, memory]")
        filters, memory = int(time_weights.shape[0]), int(time_weights.shape[1])
        if rank <= 0 or feature.shape[0] % rank:
            raise self.unsupported(f"rank {rank} must be positive and divide the {feature.shape[0]} filters")
        if feature.shape != (filters, x.shape[1]):
            raise self.unsupported(
                f"the feature weights {list(feature.shape)} must be [filters, input_size] = [{filters}, {x.shape[1]}]"
            )
        batch, units = int(x.shape[0]), filters // rank
        if bias is not None and bias.shape != (units,):
            raise self.unsupported(f"the bias has shape {list(bias.shape)}, expected [{units}]")
        self.state = state_tensor(self, 4, (batch, filters * memory))
        self.rank, self.units, self.filters, self.memory = rank, units, filters, memory
        self.activation = Act(params.fused_activation_function) if params is not None else Act.NONE
        self.outputs[0].resize((batch, units))
        if x.type == T.INT8:
            self._prepare_integer(x, feature, time_weights, bias)
        else:
            self._prepare_float(x, feature, time_weights, bias)

    def _prepare_float(self, x, feature, time_weights, bias) -> None:
        self.require_types(x, T.FLOAT32, T.INT8, role="input")
        self.kind = weights_kind(self, feature)
        for tensor, role in ((self.state, "state"), (self.outputs[0], "output")) + (((bias, "bias"),) if bias is not None else ()):
            self.require_types(tensor, T.FLOAT32, role=role)
        self.require_types(time_weights, feature.type, role="time weights")
        asymmetric = self.kind == "hybrid" and bool(getattr(self.params, "asymmetric_quantize_inputs", False))
        self.feature = Dense(feature, asymmetric)
        if self.activation not in (Act.NONE, Act.RELU, Act.RELU_N1_TO_1, Act.RELU6, Act.TANH, Act.SIGN_BIT):
            raise self.unsupported(f"fused activation {self.activation.name} is not supported")

    def _time_weights_float(self) -> np.ndarray:
        weights = self.inputs[2]
        if self.kind == "hybrid":
            return weights.data.astype(np.float32) * np.float32(legacy_params(weights)[0])
        return weights.data

    def _prepare_integer(self, x, feature, time_weights, bias) -> None:
        self.kind = "integer"
        self.require_types(feature, T.INT8, role="feature weights")
        self.require_types(time_weights, T.INT16, role="time weights")
        self.require_types(self.state, T.INT16, role="state")
        self.require_types(self.outputs[0], T.INT8, role="output")
        if bias is not None:
            self.require_types(bias, T.INT32, role="bias")
        if self.activation != Act.RELU:
            raise self.unsupported(f"an int8 SVDF takes a RELU activation (LiteRT's requirement), not {self.activation.name}")
        scales = {}
        for tensor, role in ((x, "input"), (feature, "feature weights"), (self.state, "state"), (time_weights, "time weights"), (self.outputs[0], "output")):
            scale, _ = legacy_params(tensor)
            if scale == 0.0:
                raise self.unsupported(f"the {role} {tensor.name!r} needs per-tensor quantization")
            scales[role] = np.float32(scale)
        # (float32 arithmetic, as TFLite's Prepare multiplies the tensors' float scales)
        self.scale_1 = quantize_multiplier(float(scales["input"] * scales["feature weights"] / scales["state"]))
        self.scale_2 = quantize_multiplier(float(scales["state"] * scales["time weights"] / scales["output"]))
        self.input_zp = legacy_params(x)[1]
        self.output_zp = legacy_params(self.outputs[0])[1]

    def _shift_state(self) -> np.ndarray:
        """Shift the whole state left by one value (TFLite's ``std::copy``: each filter's
        oldest activation drops out; each filter's last slot is overwritten next).
        Returns the state as ``[batch, filters, memory]``."""
        flat = self.state.data.reshape(-1)
        flat[:-1] = flat[1:].copy()
        return self.state.data.reshape(-1, self.filters, self.memory)

    def invoke(self) -> None:
        state = self._shift_state()
        x, out = self.inputs[0].data, self.outputs[0].data
        bias = self.inputs[3]
        if self.kind == "integer":
            self._invoke_integer(x, state, bias, out)
            return
        activations = np.zeros((x.shape[0], self.filters), np.float32)
        self.feature.accumulate(activations, x)
        state[:, :, -1] = activations
        time_weights = self._time_weights_float()
        filtered = np.einsum("bfm,fm->bf", state, time_weights).astype(np.float32)
        out[...] = filtered.reshape(-1, self.units, self.rank).sum(axis=2, dtype=np.float32)
        if bias is not None:
            out += bias.data
        apply_float_activation(out, self.activation)

    def _invoke_integer(self, x: np.ndarray, state: np.ndarray, bias, out: np.ndarray) -> None:
        feature = self.inputs[1].data.astype(np.int64)
        products = wrap_int32((x.astype(np.int64) - self.input_zp) @ feature.T)
        scaled = multiply_by_quantized_multiplier(products, *self.scale_1)
        state[:, :, -1] = np.clip(scaled, -32768, 32767)
        filtered = wrap_int32(np.einsum("bfm,fm->bf", state.astype(np.int64), self.inputs[2].data.astype(np.int64)))
        total = filtered.reshape(-1, self.units, self.rank).sum(axis=2)
        if bias is not None:
            total = total + bias.data.astype(np.int64)
        rescaled = multiply_by_quantized_multiplier(wrap_int32(total), *self.scale_2)
        out[...] = np.clip(rescaled + self.output_zp, -128, 127)
