"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN: the fully connected
recurrent cell (TFLite's ``basic_rnn.cc``, ``unidirectional_sequence_rnn.cc``,
``bidirectional_sequence_rnn.cc``, ``kernel_utils::RnnBatchStep``)::

    h = activation(b + W x + W_aux aux + U h_prev)          output = h

in float32, the sums added in that order. The hidden state ``h`` is an input tensor
(a variable) that the op overwrites, so it persists across invokes. Hybrid nodes (int8
``W``, ``U``: versions 2, and 3 with ``asymmetric_quantize_inputs``) quantize ``x``,
``aux`` and ``h_prev`` row by row on the fly (``_hybrid.HybridMatrix``); an all-zero
operand adds nothing, as TFLite skips it.

- RNN: one step, input ``[batch, input_size]``, output ``[batch, units]``.
- UNIDIRECTIONAL_SEQUENCE_RNN: input ``[batch, time, input_size]`` (``[time, batch, ...]``
  with ``time_major``), one step per time index.
- BIDIRECTIONAL_SEQUENCE_RNN: a forward cell over ``t = 0..T-1`` and a backward cell over
  ``t = T-1..0``; outputs fw ``[batch, time, fw_units]`` and bw, or one output with both
  concatenated on the last axis (``merge_outputs``). The optional aux input (9) with its
  weights (10, 11) is added to both cells; given without weights it is the backward cell's
  input. What LiteRT's kernel does beyond that is reproduced as it is: in batch-major
  layout the backward cell reads ``input`` even when aux stands for its input;
  a time-major hybrid node runs its whole sequence ``time`` times over (the hidden states
  carry on from pass to pass; the outputs are the last pass's).

Rows of different batch entries never interact, so the batch-major layouts (which
TFLite runs one batch entry at a time) run here as a time-major view, all rows at once.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._hybrid import apply_float_activation
from backends.cpu.kernels._recurrent import Dense, state_tensor, time_major_view, weights_kind
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType

Act = ActivationFunctionType
_ACTIVATIONS = (Act.NONE, Act.RELU, Act.RELU_N1_TO_1, Act.RELU6, Act.TANH, Act.SIGN_BIT)


class _Cell:
    """One direction's weights: ``step`` computes the next hidden state."""

    def __init__(self, kernel: CpuKernel, weights, recurrent, bias, aux_weights, input_size: int, aux_size: int) -> None:
        self.kind = weights_kind(kernel, weights)
        asymmetric = bool(getattr(kernel.params, "asymmetric_quantize_inputs", False)) and self.kind == "hybrid"
        units = int(weights.shape[0]) if len(weights.shape) == 2 else -1
        for tensor, shape, role in (
            (weights, (units, input_size), "input weights"),
            (recurrent, (units, units), "recurrent weights"),
            (bias, (units,), "bias"),
            (aux_weights, (units, aux_size), "aux input weights"),
        ):
            if tensor is None and role == "aux input weights":
                continue
            if tensor is None or tuple(tensor.shape) != shape:
                got = "missing" if tensor is None else f"shape {list(tensor.shape)}"
                raise kernel.unsupported(f"the {role} are {got}; expected {list(shape)}")
            if role == "bias":
                kernel.require_types(tensor, TensorType.FLOAT32, role=role)
            elif tensor.type != weights.type:
                raise kernel.unsupported(f"the {role} have type {tensor.type_name}, the input weights {weights.type_name}")
        self.units = units
        self.bias = bias
        self.weights = Dense(weights, asymmetric)
        self.recurrent = Dense(recurrent, asymmetric)
        self.aux_weights = Dense(aux_weights, asymmetric) if aux_weights is not None else None
        self.activation = kernel.activation

    def step(self, x: np.ndarray, aux: np.ndarray | None, h: np.ndarray) -> np.ndarray:
        """The next hidden state (float32 ``[batch, units]``) for inputs ``x`` (and ``aux``)."""
        out = np.repeat(self.bias.data.reshape(1, -1).astype(np.float32), x.shape[0], axis=0)
        self.weights.accumulate(out, x)
        if aux is not None and self.aux_weights is not None:
            self.aux_weights.accumulate(out, aux)
        self.recurrent.accumulate(out, h)
        apply_float_activation(out, self.activation)
        return out


class _RnnBase(CpuKernel):
    foldable = False  # the hidden state changes at every invoke

    def read_activation(self) -> None:
        activation = Act(self.params.fused_activation_function) if self.params is not None else Act.NONE
        if activation not in _ACTIVATIONS:
            raise self.unsupported(f"fused activation {activation.name} is not supported")
        self.activation = activation

    def require_float_input(self, tensor, role: str = "input") -> None:
        self.require_types(tensor, TensorType.FLOAT32, role=role)

    def prepare_cell(self, rank: int, layout: str):
        """The checks of a one-cell node (RNN, UNIDIRECTIONAL_SEQUENCE_RNN): five inputs,
        one output, a float32 input of ``rank``; builds ``self.cell``. Returns the input."""
        self.require_num_inputs(5)
        if len(self.outputs) != 1:
            raise self.unsupported(f"expected 1 output, got {len(self.outputs)}")
        x, weights, recurrent, bias = self.inputs[:4]
        self.require_float_input(x)
        if len(x.shape) != rank:
            raise self.unsupported(f"the input must be {rank}-D {layout}, got {list(x.shape)}")
        self.read_activation()
        self.cell = _Cell(self, weights, recurrent, bias, None, x.shape[-1], 0)
        return x


# v1: float32. v2: hybrid (int8 weights). v3: hybrid with asymmetric_quantize_inputs.
@register(BuiltinOperator.RNN, 1, 3)
class Rnn(_RnnBase):
    """RNN v1-v3: one step of the recurrent cell."""

    def prepare(self) -> None:
        x = self.prepare_cell(2, "[batch, input_size]")
        batch = x.shape[0]
        self.state = state_tensor(self, 4, (batch, self.cell.units), "hidden state", variable=False)
        self.require_float_input(self.state, "hidden state")
        self.require_types(self.outputs[0], TensorType.FLOAT32, role="output")
        self.outputs[0].resize((batch, self.cell.units))

    def invoke(self) -> None:
        h = self.cell.step(self.inputs[0].data, None, self.state.data)
        self.state.data[...] = h
        self.outputs[0].data[...] = h


def _run_sequence(cell: _Cell, xs: np.ndarray, auxs: np.ndarray | None, h: np.ndarray, out: np.ndarray, reverse: bool) -> None:
    """Steps over time-major ``xs``: ``out[t] = h = cell.step(xs[t], auxs[t], h)``; the
    final state is left in ``h`` (updated in place)."""
    steps = range(xs.shape[0] - 1, -1, -1) if reverse else range(xs.shape[0])
    for t in steps:
        h[...] = cell.step(xs[t], None if auxs is None else auxs[t], h)
        out[t] = h


# v1: float32. v2: hybrid (int8 weights). v3: hybrid with asymmetric_quantize_inputs.
@register(BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN, 1, 3)
class UnidirectionalSequenceRnn(_RnnBase):
    """UNIDIRECTIONAL_SEQUENCE_RNN v1-v3: the cell run over a sequence."""

    def prepare(self) -> None:
        x = self.prepare_cell(3, "[batch, time, input_size] (or time-major)")
        self.time_major = bool(self.params.time_major) if self.params is not None else False
        time, batch = (x.shape[0], x.shape[1]) if self.time_major else (x.shape[1], x.shape[0])
        units = self.cell.units
        self.state = state_tensor(self, 4, (batch, units), "hidden state")
        self.require_float_input(self.state, "hidden state")
        self.require_types(self.outputs[0], TensorType.FLOAT32, role="output")
        self.outputs[0].resize((time, batch, units) if self.time_major else (batch, time, units))

    def invoke(self) -> None:
        xs = time_major_view(self.inputs[0].data, self.time_major)
        out = time_major_view(self.outputs[0].data, self.time_major)
        _run_sequence(self.cell, xs, None, self.state.data, out, reverse=False)


# v1: float32. v2: hybrid (int8 weights). v3: hybrid with asymmetric_quantize_inputs.
@register(BuiltinOperator.BIDIRECTIONAL_SEQUENCE_RNN, 1, 3)
class BidirectionalSequenceRnn(_RnnBase):
    """BIDIRECTIONAL_SEQUENCE_RNN v1-v3: a forward and a backward cell over a sequence."""

    def prepare(self) -> None:
        self.require_num_inputs(12)
        params = self.params
        self.merge = bool(params.merge_outputs) if params is not None else False
        self.time_major = bool(params.time_major) if params is not None else False
        if len(self.outputs) != (1 if self.merge else 2):
            raise self.unsupported(
                f"expected {1 if self.merge else 2} output(s) (merge_outputs={self.merge}), got {len(self.outputs)}"
            )
        x = self.inputs[0]
        self.require_float_input(x)
        if len(x.shape) != 3:
            raise self.unsupported(f"the input must be 3-D [batch, time, input_size] (or time-major), got {list(x.shape)}")
        self.read_activation()
        aux, fw_aux_weights, bw_aux_weights = self.inputs[9:12]
        if (fw_aux_weights is None) != (bw_aux_weights is None):
            raise self.unsupported("the forward and backward aux input weights (inputs 10, 11) must both be given or both absent")
        time, batch = (x.shape[0], x.shape[1]) if self.time_major else (x.shape[1], x.shape[0])
        input_size = x.shape[2]
        # Without aux weights, an aux input stands for the backward cell's input (LiteRT's
        # "non-stacking" mode), and is no aux input of either cell.
        stand_in = aux is not None and fw_aux_weights is None
        self.aux = None if stand_in else aux
        self.bw_input = aux if (stand_in and self.time_major) else x
        aux_size = 0
        if self.aux is not None:
            self.require_float_input(self.aux, "aux input")
            if len(self.aux.shape) != 3 or tuple(self.aux.shape[:2]) != tuple(x.shape[:2]):
                raise self.unsupported(f"the aux input {list(self.aux.shape)} must match the input {list(x.shape)} but in its last axis")
            aux_size = self.aux.shape[2]
        if stand_in and self.time_major and tuple(aux.shape) != tuple(x.shape):
            raise self.unsupported(f"the aux input {list(aux.shape)} stands for the backward input; it must have the input's shape {list(x.shape)}")
        self.fw = _Cell(self, *self.inputs[1:4], fw_aux_weights, input_size, aux_size)
        self.bw = _Cell(self, *self.inputs[5:8], bw_aux_weights, input_size, aux_size)
        if self.fw.kind != self.bw.kind:
            raise self.unsupported("the forward and backward weights must have the same type")
        self.hybrid = self.fw.kind == "hybrid"
        if aux_size not in (0, input_size) and (self.time_major or self.hybrid):
            # LiteRT steps through the aux input with the input's row size there.
            raise self.unsupported(f"an aux input of size {aux_size} (not the input size {input_size}) is not supported here")
        asymmetric = bool(getattr(params, "asymmetric_quantize_inputs", False))
        if self.hybrid and self.merge and self.time_major and batch > 1 and not asymmetric:
            # LiteRT's kernel reads a zero point through a null pointer here (it crashes).
            raise self.unsupported(
                "a time-major hybrid node with merged outputs and a batch over 1 needs asymmetric_quantize_inputs "
                "(LiteRT's kernel cannot run it with symmetric quantization)"
            )
        self.fw_state = state_tensor(self, 4, (batch, self.fw.units), "forward hidden state")
        self.bw_state = state_tensor(self, 8, (batch, self.bw.units), "backward hidden state")
        for state in (self.fw_state, self.bw_state):
            self.require_float_input(state, "hidden state")
        fw_units, bw_units = self.fw.units, self.bw.units
        for out in self.outputs:
            self.require_types(out, TensorType.FLOAT32, role="output")
        width = fw_units + bw_units if self.merge else fw_units
        self.outputs[0].resize((time, batch, width) if self.time_major else (batch, time, width))
        if not self.merge:
            self.outputs[1].resize((time, batch, bw_units) if self.time_major else (batch, time, bw_units))

    def invoke(self) -> None:
        fw_units = self.fw.units
        xs = time_major_view(self.inputs[0].data, self.time_major)
        bw_xs = time_major_view(self.bw_input.data, self.time_major)
        auxs = None if self.aux is None else time_major_view(self.aux.data, self.time_major)
        fw_out = time_major_view(self.outputs[0].data, self.time_major)
        if self.merge:
            fw_out, bw_out = fw_out[..., :fw_units], fw_out[..., fw_units:]
        else:
            bw_out = time_major_view(self.outputs[1].data, self.time_major)
        passes = xs.shape[0] if (self.hybrid and self.time_major) else 1
        for _ in range(passes):
            _run_sequence(self.fw, xs, auxs, self.fw_state.data, fw_out, reverse=False)
            _run_sequence(self.bw, bw_xs, auxs, self.bw_state.data, bw_out, reverse=True)
