"""The integer LSTM cell ("8x8->16": int8 input, output state and weights, int16 cell state,
gates and peephole/layer-norm coefficients, int32 biases) of LSTM and
UNIDIRECTIONAL_SEQUENCE_LSTM (TFLite's ``lstm.cc`` ``PopulateQuantizedLstmParams8x8_16``,
``lstm_eval.cc`` ``LstmStepInteger8x8_16`` and the portable tensor utils, which the x86-64
wheel runs for all of these). Everything is integer, so it matches bit for bit:

- each gate: ``acc = bias' + sum x * W`` for the input and for the output state, each
  rescaled to int16 (``MultiplyByQuantizedMultiplier`` by ``s_x * s_W / s_gate``) and added
  with saturation; ``bias'`` holds the zero-point terms (``-zp * row_sum(W)``), and the
  gate bias unless there is layer norm (then the bias is applied after it). Peephole:
  ``+ rescale(P * c)`` (over ``n_output`` values, as TFLite's call sizes it). Layer norm: TFLite's integer ``ApplyLayerNorm`` (mean and variance
  in int64, the inverse square root by Newton-Raphson). Then gemmlowp's 16-bit sigmoid
  (Q3.12 in, Q0.15 out), or tanh for the cell gate;
- ``c = sat16(rdbpot(f * c, 15) + rdbpot(i * g, 30 + cell_scale))`` (``i = 32767 - f``
  with CIFG), clipped by ``cell_clip`` quantized;
- ``h = sat8(rescale(o * tanh(c)) + hidden_zp)`` (tanh with ``15 + cell_scale`` integer
  bits), then the projection (``proj_bias + hidden_zp * row_sum(W_proj) + sum h * W_proj``,
  rescaled, ``+ zp_out``, clipped) if there is one; with a projection LiteRT adds
  ``-hidden_zp`` in ``h`` instead (its b/246629213), and so does this cell.

The gemmlowp functions come from ``_fixed_point`` (16-bit tables of every int16 input).
The scales are combined in float32 where TFLite's ``Prepare`` computes in float.
The 12-intermediate "8x8->8" kernel is not implemented: refused with an error.
"""

from __future__ import annotations

import math

import numpy as np

from backends.cpu.kernels._fixed_point import checked_log2, int16_logistic_table, int16_tanh_table, inv_sqrt_quantized_multiplier
from backends.cpu.kernels._lstm import GATES, CellTensors
from backends.cpu.quantization import Requantizer, legacy_params, quantize_multiplier, rounding_divide_by_pot, wrap_int32
from schema.enums import TensorType

T = TensorType
INT16_MIN, INT16_MAX = -32768, 32767
F32 = np.float32


def _sat16(x) -> np.ndarray:
    return np.minimum(np.maximum(x, INT16_MIN), INT16_MAX)


class IntegerLstmCell:
    """An 8x8->16 cell: :meth:`step` runs one time step on a batch of int8 rows."""

    def __init__(self, kernel, t: CellTensors, n_input: int, n_output: int, n_cell: int, output_state, cell_state) -> None:
        x = kernel.inputs[0]
        intermediates = [kernel.context.tensors[i] for i in kernel.node.intermediates]
        if len(intermediates) == 12:
            raise kernel.unsupported("the int8 LSTM with 12 intermediate tensors (the 8x8->8 kernel) is not supported; the 8x8->16 kernel (5) is")
        if len(intermediates) != 5:
            raise kernel.unsupported(f"an int8 LSTM needs 5 intermediate tensors (8x8->16), the node has {len(intermediates)}")
        self.gates = GATES[1:] if t.use_cifg else GATES
        self.use_cifg = t.use_cifg
        self.use_layer_norm = t.layer_norm["forget"] is not None
        self.n_output, self.n_cell = n_output, n_cell
        #: whether TFLite steps all the batch's rows in one call (LSTM; time-major
        #: UNIDIRECTIONAL_SEQUENCE_LSTM) or one row at a time (batch-major)
        self.rows_at_once = bool(getattr(kernel, "time_major", True))
        self._check(kernel, t, x, n_input, n_output, n_cell, output_state, cell_state)

        def scale(tensor, role: str) -> np.float32:
            value, _ = legacy_params(tensor)
            if value == 0.0:
                raise kernel.unsupported(f"the {role} {tensor.name!r} needs per-tensor quantization")
            return F32(value)

        input_scale, input_zp = scale(x, "input"), legacy_params(x)[1]
        state_scale, self.output_state_zp = scale(output_state, "output state"), legacy_params(output_state)[1]
        is_log2, cell_scale = checked_log2(scale(cell_state, "cell state"))
        if not is_log2:
            raise kernel.unsupported(f"the cell state's scale {legacy_params(cell_state)[0]} must be a power of two")
        if kernel.requires_small_cell_scale and cell_scale > -9:
            raise kernel.unsupported(f"the cell state's scale 2**{cell_scale} must be at most 2**-9 (LiteRT's LSTM requires it)")
        if not 0 <= 15 + cell_scale <= 6:
            raise kernel.unsupported(f"the cell state's scale 2**{cell_scale} is outside 2**-15..2**-9 (tanh of 0 to 6 integer bits)")
        self.cell_scale = cell_scale
        # Intermediate scales: the gates' (Q3.12 without layer norm) and the hidden state's.
        gate_scales, gate_zps = [], []
        for k in range(4):
            if self.use_layer_norm:
                gate_scales.append(scale(intermediates[k], f"intermediate {k}"))
                gate_zps.append(legacy_params(intermediates[k])[1])
            else:
                gate_scales.append(F32(2.0**-12))
        hidden_scale = scale(intermediates[4], "intermediate 4 (hidden state)")
        self.hidden_zp = legacy_params(intermediates[4])[1]

        params = kernel.params
        cell_clip, proj_clip = F32(params.cell_clip), F32(params.proj_clip)
        cell_state_scale = F32(legacy_params(cell_state)[0])
        self.cell_clip = int(np.trunc(min(max(cell_clip / cell_state_scale, F32(-32768)), F32(32767)))) if cell_clip > 0 else 0
        out_scale = F32(legacy_params(kernel.outputs[0])[0])
        self.proj_clip = int(np.trunc(min(max(proj_clip / out_scale, F32(-128)), F32(127)))) if proj_clip > 0 and out_scale else 0

        def matrix(tensor) -> np.ndarray:
            return tensor.data.astype(np.int64)

        # Per gate: weights (transposed), effective scales, effective biases.
        self.input_weights, self.recurrent_weights = {}, {}
        self.input_scale, self.recurrent_scale, self.peephole_scale = {}, {}, {}
        self.input_bias, self.recurrent_bias = {}, {}
        self.peephole, self.layer_norm, self.layer_norm_scale, self.variance_guard, self.gate_bias = {}, {}, {}, {}, {}
        for k, gate in enumerate(GATES):
            if gate not in self.gates:
                continue
            w_x, w_h = t.input_weights[gate], t.recurrent_weights[gate]
            self.input_weights[gate] = matrix(w_x).T
            self.recurrent_weights[gate] = matrix(w_h).T
            self.input_scale[gate] = quantize_multiplier(float(scale(w_x, f"input-to-{gate} weights") * input_scale / gate_scales[k]))
            self.recurrent_scale[gate] = quantize_multiplier(float(scale(w_h, f"recurrent-to-{gate} weights") * state_scale / gate_scales[k]))
            bias = t.bias[gate].data.astype(np.int64)
            x_bias = np.zeros(n_cell, np.int64) if self.use_layer_norm else bias
            self.input_bias[gate] = wrap_int32(x_bias + matrix(w_x).sum(axis=1) * -input_zp)
            self.recurrent_bias[gate] = wrap_int32(matrix(w_h).sum(axis=1) * -self.output_state_zp)
            peephole = t.peephole.get(gate)
            if peephole is not None:
                self.peephole[gate] = peephole.data.astype(np.int64)
                real = math.pow(2.0, cell_scale) * float(scale(peephole, f"cell-to-{gate} weights")) / float(gate_scales[k])
                self.peephole_scale[gate] = quantize_multiplier(float(F32(real)))
            if self.use_layer_norm:
                coefficients = t.layer_norm[gate]
                ln_scale = scale(coefficients, f"{gate} layer norm coefficients")
                self.layer_norm[gate] = coefficients.data.astype(np.int64)
                self.layer_norm_scale[gate] = quantize_multiplier(float(ln_scale))
                self.variance_guard[gate] = max(1, int(np.trunc(F32(10000) * ln_scale)))
                self.gate_bias[gate] = bias
        # The gates' products with x and with h as one stacked product each, rescaled per
        # column by the gate's multiplier.
        self.columns = {g: slice(k * n_cell, (k + 1) * n_cell) for k, g in enumerate(self.gates)}
        self.stacked = []
        for weights, bias, multipliers in (
            (self.input_weights, self.input_bias, self.input_scale),
            (self.recurrent_weights, self.recurrent_bias, self.recurrent_scale),
        ):
            multiplier = np.concatenate([np.full(n_cell, multipliers[g][0], np.int64) for g in self.gates])
            shift = np.concatenate([np.full(n_cell, multipliers[g][1], np.int64) for g in self.gates])
            self.stacked.append((
                np.concatenate([weights[g] for g in self.gates], axis=1),
                np.concatenate([bias[g] for g in self.gates]),
                Requantizer(multiplier, shift),
            ))
        self.peephole_scale = {g: Requantizer(*m) for g, m in self.peephole_scale.items()}
        self.layer_norm_scale = {g: Requantizer(m, shift + 12) for g, (m, shift) in self.layer_norm_scale.items()}
        self.hidden_scale = Requantizer(*quantize_multiplier(float(F32(2.0**-15 / float(hidden_scale) * 2.0**-15))))
        projection = t.projection["weights"]
        self.projection = None
        if projection is not None:
            self.projection = matrix(projection).T
            proj_scale = scale(projection, "projection weights")
            self.projection_scale = Requantizer(*quantize_multiplier(float(proj_scale * hidden_scale / state_scale)))
            bias = t.projection["bias"]
            base = bias.data.astype(np.int64) if bias is not None else np.zeros(n_output, np.int64)
            self.projection_bias = wrap_int32(base + matrix(projection).sum(axis=1) * self.hidden_zp)
        self.sigmoid = int16_logistic_table(3)
        self.tanh_gate = int16_tanh_table(3)
        self.tanh_cell = int16_tanh_table(15 + cell_scale)

    @staticmethod
    def _check(kernel, t: CellTensors, x, n_input, n_output, n_cell, output_state, cell_state) -> None:
        """Types and shapes of an 8x8->16 cell (TFLite's CheckInputTensorDimensions with
        ``is_integer``)."""

        def expect(tensor, shape, types, role):
            if tensor is None:
                raise kernel.unsupported(f"the {role} is missing")
            kernel.require_types(tensor, *types, role=role)
            if tuple(tensor.shape) != tuple(shape):
                raise kernel.unsupported(f"the {role} {tensor.name!r} has shape {list(tensor.shape)}, expected {list(shape)}")

        kernel.require_types(x, T.INT8, role="input")
        kernel.require_types(kernel.outputs[0], T.INT8, role="output")
        kernel.require_types(output_state, T.INT8, role="output state")
        kernel.require_types(cell_state, T.INT16, role="cell state")
        if (t.input_weights["input"] is None) != (t.recurrent_weights["input"] is None):
            raise kernel.unsupported("the input gate's weights must both be given or both be absent (CIFG)")
        for gate in GATES:
            if t.use_cifg and gate == "input":
                if t.bias["input"] is not None:
                    raise kernel.unsupported("a CIFG cell takes no input gate bias")
                continue
            expect(t.input_weights[gate], (n_cell, n_input), (T.INT8,), f"input-to-{gate} weights")
            expect(t.recurrent_weights[gate], (n_cell, n_output), (T.INT8,), f"recurrent-to-{gate} weights")
            expect(t.bias[gate], (n_cell,), (T.INT32,), f"{gate} gate bias")
            if t.layer_norm["forget"] is not None:
                expect(t.layer_norm[gate], (n_cell,), (T.INT16,), f"{gate} gate layer norm coefficients")
        peepholes = [t.peephole[g] for g in ("input", "forget", "output")]
        if any(p is not None for p in peepholes):
            if not (peepholes[1] is not None and peepholes[2] is not None and (peepholes[0] is not None or t.use_cifg)):
                raise kernel.unsupported("the peephole weights must be all given or all absent")
            for gate, tensor in t.peephole.items():
                if tensor is not None:
                    expect(tensor, (n_cell,), (T.INT16,), f"cell-to-{gate} (peephole) weights")
        weights, bias = t.projection["weights"], t.projection["bias"]
        if weights is None and bias is not None:
            raise kernel.unsupported("a projection bias needs projection weights")
        if weights is not None:
            expect(weights, (n_output, n_cell), (T.INT8,), "projection weights")
            if bias is not None:
                expect(bias, (n_output,), (T.INT32,), "projection bias")
        elif n_output != n_cell:
            raise kernel.unsupported(f"without projection the output size ({n_output}) must be the cell size ({n_cell})")

    # -- the step ---------------------------------------------------------------------------

    def _layer_norm(self, gate: str, values: np.ndarray) -> np.ndarray:
        """TFLite's ``PortableApplyLayerNorm`` on int16 rows ``[batch, n_cell]``: the mean
        and variance in int64 (C's truncating divisions), ``1 / sqrt(variance)`` per row by
        ``GetInvSqrtQuantizedMultiplierExp``, int32 products that wrap, then the rescale."""
        n = values.shape[1]
        mean = _c_div(values.sum(axis=1) * 1024, n)
        variance = _c_div((values * values).sum(axis=1) * _c_div(1 << 20, n) - mean * mean, 1 << 20)
        variance = np.where(variance < 1, self.variance_guard[gate], variance)
        inverse = [inv_sqrt_quantized_multiplier(int(v), -1) for v in variance]
        if len(inverse) == 1:  # (scalars: the fast path of the requantizer)
            normalize = Requantizer(*inverse[0])
        else:
            normalize = Requantizer(np.array([m for m, _ in inverse])[:, None], np.array([e for _, e in inverse])[:, None])
        rescaled = normalize(wrap_int32(1024 * values - mean[:, None]))
        scaled = wrap_int32(rescaled * self.layer_norm[gate] + self.gate_bias[gate])
        quotient = _c_div(np.where(scaled > 0, scaled + 512, scaled - 512), 1024)
        return _sat16(self.layer_norm_scale[gate](quotient))

    def _sums(self, x: np.ndarray, h: np.ndarray) -> np.ndarray:
        """Every gate's rescaled products, stacked ``[batch, gates * n_cell]``: the input's
        saturated to int16, then the output state's added with saturation (TFLite's two
        ``MatrixBatchVectorMultiplyAccumulate`` into the zeroed gate)."""
        acc = 0
        for rows, (weights, bias, rescale_columns) in zip((x, h), self.stacked):
            acc = _sat16(rescale_columns(wrap_int32(bias + rows @ weights)) + acc)
        return acc

    def _gate(self, gate: str, sums: np.ndarray, c: np.ndarray) -> np.ndarray:
        acc = sums[:, self.columns[gate]].copy()
        if gate in self.peephole:
            # TFLite passes n_output as the vector size here. A call for all rows (time
            # major) walks the first batch * n_output values of the gate and the cell state
            # in a row, meeting the weights cyclically; a call per row (batch major) the
            # first n_output values of each row.
            n, weights = self.n_output, self.peephole[gate][: self.n_output]
            if self.rows_at_once:
                flat_acc, flat_c = acc.reshape(-1), c.reshape(-1)
                count = acc.shape[0] * n
                products = self.peephole_scale[gate](np.tile(weights, acc.shape[0]) * flat_c[:count])
                flat_acc[:count] = _sat16(products + flat_acc[:count])
            else:
                acc[:, :n] = _sat16(self.peephole_scale[gate](weights * c[:, :n]) + acc[:, :n])
        if self.use_layer_norm:
            acc = self._layer_norm(gate, acc)
        table = self.tanh_gate if gate == "cell" else self.sigmoid
        return table[acc + 32768].astype(np.int64)

    def step(self, x: np.ndarray, aux, h: np.ndarray, c: np.ndarray) -> np.ndarray:
        """One step: updates the int8 output state ``h`` and the int16 cell state ``c`` in
        place; returns the output rows (int8)."""
        c64 = c.astype(np.int64)
        sums = self._sums(x.astype(np.int64), h.astype(np.int64))
        gates = {gate: self._gate(gate, sums, c64) for gate in self.gates[:-1]}
        forget = gates["forget"]
        input_gate = 32767 - forget if self.use_cifg else gates["input"]
        kept = rounding_divide_by_pot(forget * c64, 15)
        added = rounding_divide_by_pot(input_gate * gates["cell"], 30 + self.cell_scale)
        new_c = _sat16(kept + added)
        if self.cell_clip > 0:
            new_c = np.clip(new_c, -self.cell_clip, self.cell_clip)
        c[...] = new_c
        output_gate = self._gate("output", sums, new_c)
        tanh_c = self.tanh_cell[new_c + 32768].astype(np.int64)
        # (LiteRT's projection assumes the hidden state's zero point negated: b/246629213)
        hidden_zp = -self.hidden_zp if self.projection is not None else self.hidden_zp
        hidden = np.clip(self.hidden_scale(output_gate * tanh_c) + hidden_zp, -128, 127)
        if self.projection is not None:
            products = wrap_int32(self.projection_bias + hidden @ self.projection)
            out = np.clip(self.projection_scale(products) + self.output_state_zp, -128, 127)
            if self.proj_clip > 0:
                out = np.clip(out, -self.proj_clip, self.proj_clip)
        else:
            out = hidden
        h[...] = out
        return out


def _c_div(a, b: int):
    """C's integer division (truncating toward zero) by a positive ``b``, of Python ints
    or int64 arrays."""
    if isinstance(a, np.ndarray):
        return np.where(a >= 0, a // b, -((-a) // b))
    q = abs(a) // b
    return q if a >= 0 else -q
