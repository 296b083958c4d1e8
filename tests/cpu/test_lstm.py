"""LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM, float32 and hybrid
(int8 weights), against ai-edge-litert over several invokes in a row (the output and cell
states are variable tensors that carry over).

The oracle is BUILTIN_REF, except for UNIDIRECTIONAL_SEQUENCE_LSTM v4 (diagonal
recurrent weights), which LiteRT registers in its optimized resolver only (BUILTIN).
Within 1e-5: the cell's sums, sigmoid and tanh are float32 in another order or library
than TFLite's. The integer LSTM (int8 activations, int16 cell) is tests/cpu/test_lstm_integer.py.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from model_helpers import stamped_version
from oracle import assert_invokes_match_litert

from delegate_sdk.context import KernelError
from delegate_sdk.recipes.sequence import basic_lstm_model, lstm_model
from interpreter import Interpreter
from schema.enums import ActivationFunctionType, BuiltinOperator

Op = BuiltinOperator
Act = ActivationFunctionType
#: (cifg, peephole, projection, layer_norm): every combination of the optional parts.
OPTIONAL_PARTS = list(itertools.product([False, True], repeat=4))


def invokes(model: bytes, count: int = 3, seed: int = 1) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    details = Interpreter(model_content=model).get_input_details()
    return [[rng.uniform(-2, 2, d["shape"]).astype(np.float32) for d in details] for _ in range(count)]


def check(model: bytes, resolver: str = "BUILTIN_REF") -> None:
    assert_invokes_match_litert(model, invokes(model), resolver=resolver)


def parts(cifg, peephole, projection, layer_norm) -> dict:
    return dict(cifg=cifg, peephole=peephole, projection=projection, layer_norm=layer_norm)


# -- LSTM (one step) --------------------------------------------------------------------------


@pytest.mark.parametrize("cifg, peephole, projection, layer_norm", OPTIONAL_PARTS)
def test_lstm_float_is_v1_and_matches_litert_with_optional_parts(cifg, peephole, projection, layer_norm):
    model = lstm_model(Op.LSTM, **parts(cifg, peephole, projection, layer_norm))
    assert stamped_version(model) == 1
    check(model)


def test_lstm_float_with_twenty_inputs_matches_litert():
    # The 20-input form (before layer norm existed).
    check(lstm_model(Op.LSTM, twenty_inputs=True))


def test_lstm_float_clips_cell_and_projection_as_litert():
    check(lstm_model(Op.LSTM, projection=True, cell_clip=0.3, proj_clip=0.2))


@pytest.mark.parametrize("cifg, peephole, projection, layer_norm", [(False, False, False, False), (True, True, True, True)])
def test_lstm_hybrid_is_v3_and_matches_litert(cifg, peephole, projection, layer_norm):
    model = lstm_model(Op.LSTM, hybrid=True, n_input=12, **parts(cifg, peephole, projection, layer_norm))
    assert stamped_version(model) == 3
    check(model)


def test_lstm_hybrid_asymmetric_inputs_is_v4_and_matches_litert():
    model = lstm_model(Op.LSTM, hybrid=True, asymmetric=True, n_input=12, peephole=True, projection=True)
    assert stamped_version(model) == 4
    check(model)


# -- UNIDIRECTIONAL_SEQUENCE_LSTM --------------------------------------------------------------


@pytest.mark.parametrize("cifg, peephole, projection, layer_norm", OPTIONAL_PARTS)
def test_unidirectional_sequence_lstm_float_is_v1_and_matches_litert_with_optional_parts(cifg, peephole, projection, layer_norm):
    model = lstm_model(**parts(cifg, peephole, projection, layer_norm))
    assert stamped_version(model) == 1
    check(model)


@pytest.mark.parametrize("time_major", [False, True])
def test_unidirectional_sequence_lstm_float_layouts_match_litert(time_major):
    check(lstm_model(time_major=time_major, batch=3, time=4))


@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU, Act.RELU6, Act.SIGN_BIT])
def test_unidirectional_sequence_lstm_float_activation_matches_litert(activation):
    check(lstm_model(activation=activation))


def test_unidirectional_sequence_lstm_float_clips_and_projects_without_bias_as_litert():
    check(lstm_model(projection=True, projection_bias=False, cell_clip=0.4, proj_clip=0.25))


@pytest.mark.parametrize("cifg, peephole, projection, layer_norm", [(False, False, False, False), (True, True, True, True), (False, True, False, True)])
def test_unidirectional_sequence_lstm_hybrid_is_v2_and_matches_litert(cifg, peephole, projection, layer_norm):
    model = lstm_model(hybrid=True, n_input=12, **parts(cifg, peephole, projection, layer_norm))
    assert stamped_version(model) == 2
    check(model)


@pytest.mark.parametrize("time_major", [False, True])
def test_unidirectional_sequence_lstm_hybrid_asymmetric_inputs_is_v3_and_matches_litert(time_major):
    model = lstm_model(hybrid=True, asymmetric=True, time_major=time_major, n_input=12, projection=True)
    assert stamped_version(model) == 3
    check(model)


@pytest.mark.parametrize("hybrid", [False, True])
def test_unidirectional_sequence_lstm_diagonal_recurrent_weights_are_v4_and_match_litert_builtin(hybrid):
    model = lstm_model(diagonal=True, hybrid=hybrid, n_input=12)
    assert stamped_version(model) == 4
    check(model, resolver="BUILTIN")  # (BUILTIN_REF does not register v4)


def test_unidirectional_sequence_lstm_needs_variable_states():
    interpreter = Interpreter(model_content=_with_plain_output_state(lstm_model()))
    with pytest.raises(KernelError, match="UNIDIRECTIONAL_SEQUENCE_LSTM v1.*must be a variable tensor"):
        interpreter.allocate_tensors()


def _with_plain_output_state(model: bytes) -> bytes:
    """The model with its output state made a subgraph input instead of a variable."""
    import flatbuffers

    from schema import schema_generated as fb

    tree = fb.ModelT.InitFromPackedBuf(model, 0)
    graph = tree.subgraphs[0]
    state = graph.operators[0].inputs[18]
    graph.tensors[state].isVariable = False
    graph.inputs = list(graph.inputs) + [state]
    builder = flatbuffers.Builder(1024)
    builder.Finish(tree.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


# -- BIDIRECTIONAL_SEQUENCE_LSTM ---------------------------------------------------------------


@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("merge_outputs", [False, True])
def test_bidirectional_sequence_lstm_float_is_v1_and_matches_litert(time_major, merge_outputs):
    batch = 2 if time_major or not merge_outputs else 1  # (see the refused case below)
    model = lstm_model(Op.BIDIRECTIONAL_SEQUENCE_LSTM, time_major=time_major, merge_outputs=merge_outputs, batch=batch)
    assert stamped_version(model) == 1
    check(model)


@pytest.mark.parametrize("cifg, peephole, projection", [(True, False, False), (False, True, False), (False, False, True), (True, True, True)])
def test_bidirectional_sequence_lstm_float_optional_parts_match_litert(cifg, peephole, projection):
    check(lstm_model(Op.BIDIRECTIONAL_SEQUENCE_LSTM, cifg=cifg, peephole=peephole, projection=projection))


@pytest.mark.parametrize("asymmetric", [False, True])
def test_bidirectional_sequence_lstm_hybrid_is_v2_or_v3_and_matches_litert(asymmetric):
    model = lstm_model(Op.BIDIRECTIONAL_SEQUENCE_LSTM, hybrid=True, asymmetric=asymmetric, n_input=12, time_major=True)
    assert stamped_version(model) == (3 if asymmetric else 2)
    check(model)


@pytest.mark.parametrize("hybrid", [False, True])
def test_bidirectional_sequence_lstm_aux_input_with_weights_matches_litert(hybrid):
    check(lstm_model(Op.BIDIRECTIONAL_SEQUENCE_LSTM, aux_size=3, hybrid=hybrid))


@pytest.mark.parametrize("time_major", [False, True])
def test_bidirectional_sequence_lstm_aux_input_without_weights_is_the_backward_input_as_in_litert(time_major):
    check(lstm_model(Op.BIDIRECTIONAL_SEQUENCE_LSTM, aux_size=4, aux_weights=False, time_major=time_major))


def test_bidirectional_sequence_lstm_batch_major_merged_batch_is_refused():
    # LiteRT's batch-major kernel offsets the states by the merged output width.
    model = lstm_model(Op.BIDIRECTIONAL_SEQUENCE_LSTM, merge_outputs=True, batch=2)
    with pytest.raises(KernelError, match="BIDIRECTIONAL_SEQUENCE_LSTM v1.*merged outputs of a batch-major node"):
        Interpreter(model_content=model).allocate_tensors()


def test_bidirectional_sequence_lstm_cells_of_different_sizes_are_refused_as_by_litert():
    model = lstm_model(Op.BIDIRECTIONAL_SEQUENCE_LSTM, bw_cell=4, projection=True)
    with pytest.raises(KernelError, match="must have the same sizes"):
        Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("hybrid", [False, True])
def test_lstm_activation_none_multiplies_the_output_gate_by_the_cell_gate_as_litert(hybrid):
    # TFLite's ApplyActivationToVector(NONE) returns without writing its output buffer.
    check(lstm_model(Op.LSTM, activation=Act.NONE, hybrid=hybrid, n_input=12))


def test_lstm_float_activation_none_with_an_all_zero_input_keeps_the_cell_gate_bias_as_litert():
    model = lstm_model(Op.LSTM, activation=Act.NONE)
    rng = np.random.default_rng(3)
    inputs = [[np.zeros((2, 4), np.float32)], [rng.uniform(-2, 2, (2, 4)).astype(np.float32)], [np.zeros((2, 4), np.float32)]]
    assert_invokes_match_litert(model, inputs)


# -- LSTM v2: the basic kernel -------------------------------------------------------------------


def test_lstm_basic_kernel_float_is_v2_and_matches_litert_over_invokes():
    model = basic_lstm_model()
    assert stamped_version(model) == 2
    check(model)


def test_lstm_basic_kernel_uint8_is_v2_and_matches_litert_bit_for_bit():
    model = basic_lstm_model(quantized=True, batch=3, n_input=5, n=6)
    assert stamped_version(model) == 2
    rng = np.random.default_rng(4)
    inputs = [[rng.integers(0, 256, (3, 5)).astype(np.uint8)] for _ in range(4)]
    outputs = assert_invokes_match_litert(model, inputs, rtol=0, atol=0)
    assert len(np.unique(outputs[-1][0])) > 5


def test_lstm_basic_kernel_uint8_needs_a_state_with_four_integer_bits():
    model = basic_lstm_model(quantized=True, state_scale_log2=-12)
    with pytest.raises(KernelError, match="LSTM v2.*4 integer bits"):
        Interpreter(model_content=model).allocate_tensors()
