"""LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM (TFLite's ``lstm.cc``,
``unidirectional_sequence_lstm.cc``, ``bidirectional_sequence_lstm.cc``).

The cell is in ``_lstm.py`` (float32 and hybrid) and ``_lstm_integer.py`` (int8 input and
output, int16 cell state: "8x8->16"); this module reads the nodes, checks them, and runs
the cell over time. The output state (input 18 of LSTM / UNIDIRECTIONAL_SEQUENCE_LSTM) and
the cell state (19) are variable tensors the op overwrites: they carry over from one
invoke to the next. Rows of a batch never interact, so batch-major sequences (which TFLite
runs one batch entry at a time) run here on a time-major view, all rows at once.

- LSTM (full kernel, 20 or 24 inputs; 24 with layer norm): one step, input ``[batch,
  n_input]``. v1 float32 (and int8 8x8->16), v3 hybrid, v4 hybrid with
  ``asymmetric_quantize_inputs``. v2, the basic kernel (``kernel_type`` BASIC, 5 inputs,
  4 outputs), is ``lstm_basic.py``: both classes register versions 1-4 and the options'
  ``kernel_type`` picks one (``accepts``), as LiteRT dispatches.
- UNIDIRECTIONAL_SEQUENCE_LSTM: input ``[batch, time, n_input]`` (``time_major``: time
  first). v1 float32 (and int8 8x8->16), v2 hybrid, v3 asymmetric hybrid, v4 diagonal
  recurrent weights (1-D; LiteRT registers v4 in its optimized resolver only).
- BIDIRECTIONAL_SEQUENCE_LSTM (48 inputs, no layer norm): a forward and a backward
  cell (over reversed time); outputs fw and bw, or one with both on the last axis
  (``merge_outputs``). The aux input (39) with aux weights (40-47) adds to both cells;
  without aux weights it is the backward cell's input. v1 float32, v2 hybrid, v3 hybrid
  with ``asymmetric_quantize_inputs``.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._lstm import FloatLstmCell, cell_tensors, check_cell
from backends.cpu.kernels._lstm_integer import IntegerLstmCell
from backends.cpu.kernels._recurrent import state_tensor, time_major_view, weights_kind
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType
from schema.params import LSTMKernelType

T = TensorType
Act = ActivationFunctionType
_ACTIVATIONS = (Act.NONE, Act.RELU, Act.RELU_N1_TO_1, Act.RELU6, Act.TANH, Act.SIGN_BIT)

# Inputs of LSTM / UNIDIRECTIONAL_SEQUENCE_LSTM (lstm_shared.h).
_OUTPUT_STATE, _CELL_STATE, _LAYER_NORM = 18, 19, 20


class _LstmBase(CpuKernel):
    foldable = False  # the states change at every invoke
    diagonal_recurrent = False  # UNIDIRECTIONAL_SEQUENCE_LSTM takes 1-D recurrent weights
    requires_small_cell_scale = False  # LSTM's int8 kernel wants a cell scale <= 2**-9

    def read_params(self) -> None:
        params = self.params
        self.activation = Act(params.fused_activation_function) if params is not None else Act.NONE
        if self.activation not in _ACTIVATIONS:
            raise self.unsupported(f"fused activation {self.activation.name} is not supported")
        self.cell_clip = float(params.cell_clip) if params is not None else 0.0
        self.proj_clip = float(params.proj_clip) if params is not None else 0.0
        if self.cell_clip < 0 or self.proj_clip < 0:
            raise self.unsupported(f"cell_clip ({self.cell_clip}) and proj_clip ({self.proj_clip}) must not be negative")
        self.asymmetric = bool(getattr(params, "asymmetric_quantize_inputs", False))

    def make_cell(self, tensors, x, n_input: int, n_aux: int, batch: int, state_index: tuple[int, int], integer_ok: bool):
        """Check one cell's tensors and states, and build it (float/hybrid or integer)."""
        forget = tensors.input_weights["forget"]
        recurrent = tensors.recurrent_weights["output"]
        if forget is None or recurrent is None or tensors.input_weights["output"] is None:
            raise self.unsupported("the input-to-forget, input-to-output and recurrent-to-output weights are required")
        if len(tensors.input_weights["output"].shape) != 2 or len(recurrent.shape) not in (1, 2):
            raise self.unsupported(
                f"the input-to-output weights must be 2-D, the recurrent-to-output weights 2-D (or 1-D diagonal); got "
                f"{list(tensors.input_weights['output'].shape)} and {list(recurrent.shape)}"
            )
        n_cell = int(tensors.input_weights["output"].shape[0])
        n_output = n_cell if len(recurrent.shape) == 1 else int(recurrent.shape[-1])
        output_state = state_tensor(self, state_index[0], role="output state")
        cell_state = state_tensor(self, state_index[1], role="cell state")
        for state, size in ((output_state, n_output), (cell_state, n_cell)):
            if state.num_elements != batch * size:
                raise self.unsupported(f"the state {state.name!r} has {state.num_elements} values, expected {batch} x {size}")
        if x.type == T.INT8 and integer_ok:
            cell = IntegerLstmCell(self, tensors, n_input, n_output, n_cell, output_state, cell_state)
        else:
            self.require_types(x, T.FLOAT32, role="input")
            kind = weights_kind(self, forget)
            check_cell(self, tensors, n_input, n_output, n_cell, n_aux, forget.type)
            if any(len(w.shape) == 1 for w in tensors.recurrent_weights.values() if w is not None) and n_output != n_cell:
                raise self.unsupported("diagonal recurrent weights need the output size to be the cell size")
            for state in (output_state, cell_state):
                self.require_types(state, T.FLOAT32, role="state")
            cell = FloatLstmCell(self, tensors, n_cell, self.activation, self.cell_clip, self.proj_clip, self.asymmetric and kind == "hybrid")
        cell.n_output, cell.n_cell = n_output, n_cell
        cell.states = (output_state, cell_state)
        return cell

    @staticmethod
    def run(cell, xs: np.ndarray, auxs: np.ndarray | None, out: np.ndarray, reverse: bool = False) -> None:
        """Run ``cell`` over time-major ``xs`` ``[time, batch, n_input]``; ``out[t]`` gets
        the outputs of step ``t``."""
        output_state, cell_state = cell.states
        batch = xs.shape[1]
        h = output_state.data.reshape(batch, -1)
        c = cell_state.data.reshape(batch, -1)
        steps = range(xs.shape[0] - 1, -1, -1) if reverse else range(xs.shape[0])
        for t in steps:
            out[t] = cell.step(xs[t], None if auxs is None else auxs[t], h, c)


# v1: float32 (and int8 input, int16 cell: 8x8->16). v3: hybrid (int8 weights).
# v4: hybrid with asymmetric_quantize_inputs. (v2 is the basic kernel: lstm_basic.py.)
@register(BuiltinOperator.LSTM, 1, 4)
class Lstm(_LstmBase):
    """LSTM v1, v3, v4 (the full kernel): one step of the cell."""

    requires_small_cell_scale = True

    @classmethod
    def accepts(cls, context, node) -> bool:
        params = node.params
        return params is None or params.kernel_type == LSTMKernelType.FULL

    def prepare(self) -> None:
        self.require_num_inputs(20, 24)
        if len(self.outputs) != 1:
            raise self.unsupported(f"expected 1 output, got {len(self.outputs)}")
        self.read_params()
        x = self.inputs[0]
        if len(x.shape) != 2:
            raise self.unsupported(f"the input must be 2-D [batch, n_input], got {list(x.shape)}")
        batch, n_input = int(x.shape[0]), int(x.shape[1])
        layer_norm = _LAYER_NORM if len(self.inputs) == 24 else None
        tensors = cell_tensors(self, 1, layer_norm)
        self.cell = self.make_cell(tensors, x, n_input, 0, batch, (_OUTPUT_STATE, _CELL_STATE), integer_ok=True)
        self.require_types(self.outputs[0], x.type, role="output")
        self.outputs[0].resize((batch, self.cell.n_output))

    def invoke(self) -> None:
        x = self.inputs[0].data
        self.run(self.cell, x[None], None, self.outputs[0].data[None])


# v1: float32 (and int8 8x8->16). v2: hybrid. v3: hybrid with asymmetric_quantize_inputs.
# v4: diagonal recurrent weights (diagonal_recurrent_tensors).
@register(BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, 1, 4)
class UnidirectionalSequenceLstm(_LstmBase):
    """UNIDIRECTIONAL_SEQUENCE_LSTM v1-v4: the cell over a sequence."""

    diagonal_recurrent = True

    def prepare(self) -> None:
        self.require_num_inputs(20, 24)
        if len(self.outputs) != 1:
            raise self.unsupported(f"expected 1 output, got {len(self.outputs)}")
        self.read_params()
        self.time_major = bool(self.params.time_major) if self.params is not None else False
        x = self.inputs[0]
        if len(x.shape) != 3:
            raise self.unsupported(f"the input must be 3-D [batch, time, n_input] (or time-major), got {list(x.shape)}")
        batch = int(x.shape[1] if self.time_major else x.shape[0])
        n_input = int(x.shape[2])
        layer_norm = _LAYER_NORM if len(self.inputs) == 24 else None
        tensors = cell_tensors(self, 1, layer_norm)
        self.cell = self.make_cell(tensors, x, n_input, 0, batch, (_OUTPUT_STATE, _CELL_STATE), integer_ok=True)
        self.require_types(self.outputs[0], x.type, role="output")
        self.outputs[0].resize((*x.shape[:2], self.cell.n_output))

    def invoke(self) -> None:
        xs = time_major_view(self.inputs[0].data, self.time_major)
        out = time_major_view(self.outputs[0].data, self.time_major)
        self.run(self.cell, xs, None, out)


# v1: float32. v2: hybrid (int8 weights). v3: hybrid with asymmetric_quantize_inputs.
@register(BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM, 1, 3)
class BidirectionalSequenceLstm(_LstmBase):
    """BIDIRECTIONAL_SEQUENCE_LSTM v1-v3: a forward and a backward cell over a sequence."""

    def prepare(self) -> None:
        self.require_num_inputs(48)
        self.read_params()
        params = self.params
        self.merge = bool(params.merge_outputs) if params is not None else False
        self.time_major = bool(params.time_major) if params is not None else True
        if len(self.outputs) != (1 if self.merge else 2):
            raise self.unsupported(f"expected {1 if self.merge else 2} output(s) (merge_outputs={self.merge}), got {len(self.outputs)}")
        x = self.inputs[0]
        self.require_types(x, T.FLOAT32, role="input")
        if len(x.shape) != 3:
            raise self.unsupported(f"the input must be 3-D [time, batch, n_input] (or batch-major), got {list(x.shape)}")
        time, batch = (int(x.shape[0]), int(x.shape[1])) if self.time_major else (int(x.shape[1]), int(x.shape[0]))
        n_input = int(x.shape[2])
        aux = self.inputs[39]
        fw = cell_tensors(self, 1, aux_first=40)
        bw = cell_tensors(self, 18, aux_first=44)
        has_aux_weights = fw.aux_weights["forget"] is not None
        for tensors in (fw, bw):
            given = [w is not None for g, w in tensors.aux_weights.items() if g != "input"]
            if any(given) != has_aux_weights or not (all(given) or not any(given)):
                raise self.unsupported("the aux input weights (inputs 40-47) must be all given or all absent")
        # Without aux weights an aux input stands for the backward cell's input.
        self.bw_input = aux if (aux is not None and not has_aux_weights) else x
        self.aux = aux if has_aux_weights else None
        n_aux = 0
        if aux is not None:
            self.require_types(aux, T.FLOAT32, role="aux input")
            if len(aux.shape) != 3 or tuple(aux.shape[:2]) != tuple(x.shape[:2]):
                raise self.unsupported(f"the aux input {list(aux.shape)} must match the input {list(x.shape)} but in its last axis")
            if has_aux_weights:
                n_aux = int(aux.shape[2])
            elif aux.shape[2] != n_input:
                raise self.unsupported(f"the aux input stands for the backward input: its last axis must be {n_input}")
        if has_aux_weights and aux is None:
            raise self.unsupported("aux input weights are given without the aux input (39)")
        self.fw = self.make_cell(fw, x, n_input, n_aux, batch, (35, 36), integer_ok=False)
        self.bw = self.make_cell(bw, x, n_input, n_aux, batch, (37, 38), integer_ok=False)
        if (self.fw.n_cell, self.fw.n_output) != (self.bw.n_cell, self.bw.n_output):
            raise self.unsupported(
                f"the forward cell ({self.fw.n_cell} cells, {self.fw.n_output} outputs) and the backward cell "
                f"({self.bw.n_cell}, {self.bw.n_output}) must have the same sizes (as LiteRT checks)"
            )
        if self.merge and not self.time_major and batch > 1:
            # LiteRT's batch-major kernel steps through the states by the merged width.
            raise self.unsupported("merged outputs of a batch-major node with a batch over 1 are not supported (LiteRT reads its states out of bounds there)")
        fw_size, bw_size = self.fw.n_output, self.bw.n_output
        lead = (time, batch) if self.time_major else (batch, time)
        for out in self.outputs:
            self.require_types(out, T.FLOAT32, role="output")
        self.outputs[0].resize((*lead, fw_size + bw_size if self.merge else fw_size))
        if not self.merge:
            self.outputs[1].resize((*lead, bw_size))

    def invoke(self) -> None:
        xs = time_major_view(self.inputs[0].data, self.time_major)
        bw_xs = time_major_view(self.bw_input.data, self.time_major)
        auxs = None if self.aux is None else time_major_view(self.aux.data, self.time_major)
        fw_out = time_major_view(self.outputs[0].data, self.time_major)
        if self.merge:
            fw_out, bw_out = fw_out[..., : self.fw.n_output], fw_out[..., self.fw.n_output :]
        else:
            bw_out = time_major_view(self.outputs[1].data, self.time_major)
        self.run(self.fw, xs, auxs, fw_out)
        self.run(self.bw, bw_xs, auxs, bw_out, reverse=True)
