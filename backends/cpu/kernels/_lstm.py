"""The LSTM cell of LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM,
float32 and hybrid (TFLite's ``lstm_eval.cc``: ``LstmStepFloat``, ``LstmStepHybrid``).

One step, for the rows ``x`` (and ``aux``) of a batch, with the output state ``h`` and the
cell state ``c`` of the previous step::

    gate_g = W_g x + W_aux_g aux + U_g h (+ P_g * c)       g in input, forget, cell, output
             (+ bias_g first; with layer norm: LN_g * normalize(...) + bias_g instead)
    i, f, o = sigmoid(gate_i, gate_f, gate_o)        (CIFG: no input gate, i = 1 - f)
    c = clip(f * c + i * act(gate_c))                 (act: the fused activation, TANH...)
    out = o * act(c)                                  (the output gate's peephole reads
                                                       the new c)
    h = out, or clip(projection_bias + W_proj out)   (projection)

``normalize`` is ``(v - mean) / sqrt(variance + 1e-8)`` over the cells of a row. With
the activation NONE, TFLite's buffers make ``out = o * gate_c`` (the cell gate, not the
cell state), and the float cell gate misses terms when the input is all zero: reproduced. Hybrid
cells (int8 weights) quantize ``x``, ``aux``, ``h`` and the projection's operand row by row,
once per step (``_recurrent.operand``); their peephole weights are ``int8 * scale`` in
float32. UNIDIRECTIONAL_SEQUENCE_LSTM v4 may give diagonal recurrent weights (1-D
``[n_cell]``, float32): ``U_g h`` is then ``U_g * h``.

The tensors of one cell come in the order of TFLite's ``lstm_shared.h`` (see
:data:`CELL_ROLES`); :func:`cell_tensors` collects them from a node's inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from backends.cpu.kernels._hybrid import apply_float_activation
from backends.cpu.kernels._recurrent import Dense, operand
from backends.cpu.quantization import legacy_params
from schema.enums import ActivationFunctionType, TensorType

T = TensorType
GATES = ("input", "forget", "cell", "output")

#: The 17 tensors of one cell, by their offset in a UNIDIRECTIONAL_SEQUENCE_LSTM / LSTM
#: node (input 1 onwards) and in each half of a BIDIRECTIONAL_SEQUENCE_LSTM node.
CELL_ROLES = (
    ("input_weights", "input"), ("input_weights", "forget"), ("input_weights", "cell"), ("input_weights", "output"),
    ("recurrent_weights", "input"), ("recurrent_weights", "forget"), ("recurrent_weights", "cell"),
    ("recurrent_weights", "output"),
    ("peephole", "input"), ("peephole", "forget"), ("peephole", "output"),
    ("bias", "input"), ("bias", "forget"), ("bias", "cell"), ("bias", "output"),
    ("projection", "weights"), ("projection", "bias"),
)


@dataclass
class CellTensors:
    """The tensors of one LSTM cell (None where absent), by role and gate."""

    input_weights: dict
    recurrent_weights: dict
    peephole: dict
    bias: dict
    projection: dict
    layer_norm: dict
    aux_weights: dict

    @property
    def use_cifg(self) -> bool:
        return self.input_weights["input"] is None


def cell_tensors(kernel, first: int, layer_norm_first: int | None = None, aux_first: int | None = None) -> CellTensors:
    """The cell whose 17 tensors start at input ``first``, its 4 layer norm coefficients at
    ``layer_norm_first`` and its 4 aux input weights at ``aux_first`` (when given)."""
    inputs = kernel.inputs

    def at(index: int | None):
        return inputs[index] if index is not None and index < len(inputs) else None

    groups: dict[str, dict] = {name: {} for name in ("input_weights", "recurrent_weights", "peephole", "bias", "projection")}
    for offset, (group, key) in enumerate(CELL_ROLES):
        groups[group][key] = at(first + offset)
    layer_norm = {gate: at(None if layer_norm_first is None else layer_norm_first + k) for k, gate in enumerate(GATES)}
    aux = {gate: at(None if aux_first is None else aux_first + k) for k, gate in enumerate(GATES)}
    return CellTensors(**groups, layer_norm=layer_norm, aux_weights=aux)


def check_cell(kernel, t: CellTensors, n_input: int, n_output: int, n_cell: int, n_aux: int, weight_type: int) -> None:
    """TFLite's ``CheckInputTensorDimensions`` for a float or hybrid cell, with messages."""

    def shape_of(tensor, expected, role):
        if tuple(tensor.shape) != tuple(expected):
            raise kernel.unsupported(f"the {role} {tensor.name!r} has shape {list(tensor.shape)}, expected {list(expected)}")

    def typed(tensor, allowed, role):
        kernel.require_types(tensor, *allowed, role=role)

    cifg = t.use_cifg
    if (t.input_weights["input"] is None) != (t.recurrent_weights["input"] is None):
        raise kernel.unsupported("the input gate's weights (input-to-input and recurrent-to-input) must both be given or both be absent (CIFG)")
    for gate in GATES:
        if cifg and gate == "input":
            continue
        for group, depth, role in ((t.input_weights, n_input, "input"), (t.recurrent_weights, n_output, "recurrent")):
            tensor = group[gate]
            if tensor is None:
                raise kernel.unsupported(f"the {role}-to-{gate} weights are missing")
            if role == "recurrent" and len(tensor.shape) == 1:
                if not kernel.diagonal_recurrent:
                    raise kernel.unsupported(f"the recurrent-to-{gate} weights are 1-D (diagonal); only UNIDIRECTIONAL_SEQUENCE_LSTM v4 takes those")
                shape_of(tensor, (n_cell,), f"diagonal recurrent-to-{gate} weights")
                typed(tensor, (T.FLOAT32,), f"diagonal recurrent-to-{gate} weights")
                continue
            shape_of(tensor, (n_cell, depth), f"{role}-to-{gate} weights")
            typed(tensor, (weight_type,), f"{role}-to-{gate} weights")
        bias = t.bias[gate]
        if bias is None:
            raise kernel.unsupported(f"the {gate} gate bias is missing")
        shape_of(bias, (n_cell,), f"{gate} gate bias")
        typed(bias, (T.FLOAT32,), f"{gate} gate bias")
        aux = t.aux_weights[gate]
        if n_aux and aux is None:
            raise kernel.unsupported(f"the aux-input-to-{gate} weights are missing")
        if aux is not None:
            shape_of(aux, (n_cell, n_aux), f"aux-input-to-{gate} weights")
            typed(aux, (weight_type,), f"aux-input-to-{gate} weights")
    if cifg and t.bias["input"] is not None:
        raise kernel.unsupported("a CIFG cell (no input gate weights) takes no input gate bias")
    peepholes = [t.peephole[g] for g in ("input", "forget", "output")]
    present = [p is not None for p in peepholes]
    if any(present) and not (present[1] and present[2] and (present[0] or cifg)):
        raise kernel.unsupported("the peephole weights (cell-to-gate) must be all given or all absent")
    for gate, tensor in t.peephole.items():
        if tensor is not None:
            shape_of(tensor, (n_cell,), f"cell-to-{gate} (peephole) weights")
            typed(tensor, (weight_type,), f"cell-to-{gate} (peephole) weights")
    weights, bias = t.projection["weights"], t.projection["bias"]
    if weights is None and bias is not None:
        raise kernel.unsupported("a projection bias needs projection weights")
    if weights is not None:
        shape_of(weights, (n_output, n_cell), "projection weights")
        typed(weights, (weight_type,), "projection weights")
    elif n_output != n_cell:
        raise kernel.unsupported(f"without projection the output size ({n_output}) must be the cell size ({n_cell})")
    if bias is not None:
        shape_of(bias, (n_output,), "projection bias")
        typed(bias, (T.FLOAT32,), "projection bias")
    norms = [t.layer_norm[g] for g in GATES]
    if any(n is not None for n in norms):
        for gate, tensor in t.layer_norm.items():
            if cifg and gate == "input":
                if tensor is not None:
                    raise kernel.unsupported("a CIFG cell takes no input gate layer norm coefficients")
                continue
            if tensor is None:
                raise kernel.unsupported(f"the {gate} gate layer norm coefficients are missing (layer norm needs all)")
            shape_of(tensor, (n_cell,), f"{gate} gate layer norm coefficients")
            typed(tensor, (T.FLOAT32,), f"{gate} gate layer norm coefficients")


def sigmoid(values: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-v))`` in float32 (TFLite's ``ApplySigmoidToVector``)."""
    with np.errstate(over="ignore"):
        return np.float32(1) / (np.float32(1) + np.exp(-values))


def mean_stddev_normalization(values: np.ndarray) -> np.ndarray:
    """TFLite's ``MeanStddevNormalization`` over the last axis, float32."""
    mean = values.mean(axis=-1, keepdims=True, dtype=np.float32)
    variance = np.square(values - mean).mean(axis=-1, keepdims=True, dtype=np.float32)
    return (values - mean) * (np.float32(1) / np.sqrt(variance + np.float32(1e-8)))


class FloatLstmCell:
    """A float32 or hybrid cell: :meth:`step` runs one time step on a batch of rows.

    The gates' products with the same rows (input, aux, output state) are one stacked
    product (``Dense`` of the gates' matrices): each gate's sum is still ``bias + W x +
    W_aux aux + U h`` in that order."""

    def __init__(self, kernel, t: CellTensors, n_cell: int, activation, cell_clip: float, proj_clip: float, asymmetric: bool) -> None:
        self.hybrid = t.input_weights["forget"].type == T.INT8
        self.asymmetric = asymmetric and self.hybrid
        self.gates = GATES[1:] if t.use_cifg else GATES
        self.use_cifg = t.use_cifg
        self.n_cell = n_cell
        self.activation = ActivationFunctionType(activation)
        #: with activation NONE the float cell gate keeps a buffer TFLite did not finish
        self.quirky_cell_gate = self.activation == ActivationFunctionType.NONE and not self.hybrid
        self.cell_clip, self.proj_clip = np.float32(cell_clip), np.float32(proj_clip)
        #: column slices of the stacked gates
        self.columns = {g: slice(k * n_cell, (k + 1) * n_cell) for k, g in enumerate(self.gates)}
        self.input_weights = Dense([t.input_weights[g] for g in self.gates], self.asymmetric)
        aux = [t.aux_weights[g] for g in self.gates]
        self.aux_weights = Dense(aux, self.asymmetric) if all(w is not None for w in aux) else None
        recurrent = [t.recurrent_weights[g] for g in self.gates]
        #: 1-D recurrent weights (v4: diagonal), by gate; the others are one stacked product
        self.diagonal = {g: w.data.astype(np.float32) for g, w in zip(self.gates, recurrent) if len(w.shape) == 1}
        matrices = [w for w in recurrent if len(w.shape) == 2]
        self.recurrent = Dense(matrices, self.asymmetric) if matrices else None
        self.recurrent_columns = None  # (all gates' columns, unless some are diagonal)
        if matrices and self.diagonal:
            self.recurrent_columns = np.concatenate(
                [np.arange(n_cell) + k * n_cell for k, g in enumerate(self.gates) if g not in self.diagonal]
            )
        self.peephole = {}
        for g, tensor in t.peephole.items():
            if tensor is not None and g in self.gates:
                values = tensor.data.astype(np.float32)
                self.peephole[g] = values * np.float32(legacy_params(tensor)[0]) if self.hybrid else values
        self.bias = {g: t.bias[g].data for g in self.gates}
        self.stacked_bias = np.concatenate([self.bias[g] for g in self.gates]).astype(np.float32)
        self.layer_norm = {g: t.layer_norm[g].data for g in self.gates if t.layer_norm[g] is not None} or None
        weights = t.projection["weights"]
        self.projection = Dense(weights, self.asymmetric) if weights is not None else None
        self.projection_bias = t.projection["bias"].data if t.projection["bias"] is not None else None

    def _sums(self, x, aux, h_operand, h: np.ndarray, batch: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Every gate's ``bias + W x + W_aux aux + U h``, stacked ``[batch, gates * n_cell]``;
        with the NONE quirk also the sums before the inputs and before the recurrent term."""
        if self.layer_norm is None:
            acc = np.repeat(self.stacked_bias.reshape(1, -1), batch, axis=0)
        else:
            acc = np.zeros((batch, len(self.gates) * self.n_cell), np.float32)
        initial = acc.copy() if self.quirky_cell_gate else None
        self.input_weights.add(acc, x)
        if self.aux_weights is not None:
            self.aux_weights.add(acc, aux)
        before_recurrent = acc.copy() if self.quirky_cell_gate else None
        if self.recurrent is not None:
            if self.recurrent_columns is None:
                self.recurrent.add(acc, h_operand)
            else:
                part = np.zeros((batch, self.recurrent.rows), np.float32)
                self.recurrent.add(part, h_operand)
                acc[:, self.recurrent_columns] += part
        if not self.hybrid or h.any():  # diagonal (hybrid: skipped for an all-zero state)
            for gate, diagonal in self.diagonal.items():
                acc[:, self.columns[gate]] += diagonal * h
        return acc, initial, before_recurrent

    def _gate(self, gate: str, sums, x, aux, c: np.ndarray) -> np.ndarray:
        acc = sums[0][:, self.columns[gate]].copy()
        if gate in self.peephole:
            acc += self.peephole[gate] * c
        if self.layer_norm is not None:
            acc = mean_stddev_normalization(acc) * self.layer_norm[gate] + self.bias[gate]
        if gate != "cell":
            return sigmoid(acc)
        if self.quirky_cell_gate:
            # TFLite's float gate sums ping-pong between two buffers, one swap per input
            # that is not all zero, and ``ApplyActivationToVector`` with NONE returns without
            # copying: the gate keeps what its own buffer holds.
            swaps = int(np.any(x)) + int(aux is not None and self.aux_weights is not None and np.any(aux))
            if swaps == 0:
                return sums[1][:, self.columns[gate]]
            if swaps == 2:
                return sums[2][:, self.columns[gate]]
            return acc
        apply_float_activation(acc, self.activation)
        return acc

    def step(self, x: np.ndarray, aux: np.ndarray | None, h: np.ndarray, c: np.ndarray) -> np.ndarray:
        """One step: updates the states ``h`` ``[batch, n_output]`` and ``c`` ``[batch,
        n_cell]`` in place and returns the output rows (the new ``h``)."""
        batch = x.shape[0]
        x_operand = operand(x, self.hybrid, self.asymmetric)
        aux_operand = operand(aux, self.hybrid, self.asymmetric) if aux is not None else None
        h_operand = operand(h, self.hybrid, self.asymmetric)
        sums = self._sums(x_operand, aux_operand, h_operand, h, batch)
        gates = {}
        for gate in self.gates[:-1]:  # the input, forget and cell gates read the old c
            gates[gate] = self._gate(gate, sums, x, aux, c)
        input_gate = np.float32(1) - gates["forget"] if self.use_cifg else gates["input"]
        new_c = gates["forget"] * c + gates["cell"] * input_gate
        if self.cell_clip > 0:
            np.clip(new_c, -self.cell_clip, self.cell_clip, out=new_c)
        c[...] = new_c
        output_gate = self._gate("output", sums, x, aux, c)
        if self.activation == ActivationFunctionType.NONE:
            # ``ApplyActivationToVector(c, NONE, scratch)`` leaves its scratch, the cell
            # gate's buffer, as it was: TFLite multiplies the output gate by the cell gate.
            activated = gates["cell"]
        else:
            activated = c.copy()
            apply_float_activation(activated, self.activation)
        out = output_gate * activated
        if self.projection is not None:
            projected = np.zeros((batch, h.shape[1]), np.float32)
            if self.projection_bias is not None:
                projected += self.projection_bias
            self.projection.add(projected, operand(out, self.hybrid, self.asymmetric))
            if self.proj_clip > 0:
                np.clip(projected, -self.proj_clip, self.proj_clip, out=projected)
            out = projected
        h[...] = out
        return out
