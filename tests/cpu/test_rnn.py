"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN against ai-edge-litert's
BUILTIN_REF kernels, over several invokes in a row (the hidden state is a variable
tensor that carries over from one invoke to the next).

Float nodes within 1e-5 (BLAS sums in another order than TFLite's loops). Hybrid nodes
(int8 weights) bit-for-bit with a RELU-family activation: the int8 products are exact
and the on-the-fly quantization is the wheel's; with TANH, numpy's float32 tanh and the C
library's tanhf differ by an ulp now and then, so those take the float tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import stamped_version
from oracle import assert_invokes_match_litert

from delegate_sdk.context import KernelError
from delegate_sdk.recipes.sequence import rnn_model
from interpreter import Interpreter
from schema.enums import ActivationFunctionType, BuiltinOperator

Op = BuiltinOperator
Act = ActivationFunctionType
EXACT = {"rtol": 0, "atol": 0}


def invokes(model: bytes, count: int = 3, seed: int = 1) -> list[list[np.ndarray]]:
    """``count`` sets of random inputs for the model's inputs."""
    rng = np.random.default_rng(seed)
    interpreter = Interpreter(model_content=model)
    return [
        [rng.uniform(-2, 2, detail["shape"]).astype(np.float32) for detail in interpreter.get_input_details()]
        for _ in range(count)
    ]


def check(model: bytes, **tolerance) -> None:
    assert_invokes_match_litert(model, invokes(model), **tolerance)


# -- RNN ----------------------------------------------------------------------------------


@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU, Act.RELU_N1_TO_1, Act.RELU6, Act.TANH, Act.SIGN_BIT])
def test_rnn_float_is_v1_and_matches_litert_over_invokes(activation):
    model = rnn_model(Op.RNN, activation=activation)
    assert stamped_version(model) == 1
    check(model)


def test_rnn_hybrid_is_v2_and_matches_litert_bit_for_bit():
    model = rnn_model(Op.RNN, hybrid=True, activation=Act.RELU, input_size=20, units=9)
    assert stamped_version(model) == 2
    check(model, **EXACT)


def test_rnn_hybrid_asymmetric_inputs_is_v3_and_matches_litert_bit_for_bit():
    model = rnn_model(Op.RNN, hybrid=True, asymmetric=True, activation=Act.RELU6, input_size=20, units=9)
    assert stamped_version(model) == 3
    check(model, **EXACT)


def test_rnn_hybrid_tanh_matches_litert():
    check(rnn_model(Op.RNN, hybrid=True))


def test_rnn_hybrid_all_zero_input_and_state_gives_the_bias():
    model = rnn_model(Op.RNN, hybrid=True, activation=Act.NONE)
    zeros = [[np.zeros(detail["shape"], np.float32) for detail in Interpreter(model_content=model).get_input_details()]]
    assert_invokes_match_litert(model, zeros, **EXACT)


# -- UNIDIRECTIONAL_SEQUENCE_RNN --------------------------------------------------------------


@pytest.mark.parametrize("time_major", [False, True])
def test_unidirectional_sequence_rnn_float_is_v1_and_matches_litert(time_major):
    model = rnn_model(time_major=time_major)
    assert stamped_version(model) == 1
    check(model)


@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("asymmetric", [False, True])
def test_unidirectional_sequence_rnn_hybrid_is_v2_or_v3_and_matches_litert_bit_for_bit(time_major, asymmetric):
    model = rnn_model(hybrid=True, asymmetric=asymmetric, time_major=time_major, activation=Act.RELU, input_size=17, units=6)
    assert stamped_version(model) == (3 if asymmetric else 2)
    check(model, **EXACT)


def test_unidirectional_sequence_rnn_needs_a_variable_hidden_state():
    from schema.builder import ModelBuilder
    from schema.params import SequenceRNNParams

    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 2, 3])
    state = graph.add_input("state", [1, 4])  # an input, not a variable
    weights = graph.add_constant("w", np.ones((4, 3), np.float32))
    recurrent = graph.add_constant("u", np.ones((4, 4), np.float32))
    bias = graph.add_constant("b", np.zeros(4, np.float32))
    y = graph.add_tensor("y", [1, 2, 4])
    graph.add_operator(Op.UNIDIRECTIONAL_SEQUENCE_RNN, [x, weights, recurrent, bias, state], [y], SequenceRNNParams())
    graph.add_output(y)
    interpreter = Interpreter(model_content=builder.build())
    with pytest.raises(KernelError, match="UNIDIRECTIONAL_SEQUENCE_RNN v1.*must be a variable tensor"):
        interpreter.allocate_tensors()


# -- BIDIRECTIONAL_SEQUENCE_RNN ---------------------------------------------------------------


@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("merge_outputs", [False, True])
def test_bidirectional_sequence_rnn_float_is_v1_and_matches_litert(time_major, merge_outputs):
    model = rnn_model(Op.BIDIRECTIONAL_SEQUENCE_RNN, time_major=time_major, merge_outputs=merge_outputs, bw_units=3)
    assert stamped_version(model) == 1
    check(model)


@pytest.mark.parametrize("asymmetric", [False, True])
def test_bidirectional_sequence_rnn_hybrid_is_v2_or_v3_and_matches_litert_bit_for_bit(asymmetric):
    model = rnn_model(Op.BIDIRECTIONAL_SEQUENCE_RNN, hybrid=True, asymmetric=asymmetric, activation=Act.RELU, input_size=17)
    assert stamped_version(model) == (3 if asymmetric else 2)
    check(model, **EXACT)


@pytest.mark.parametrize("merge_outputs", [False, True])
def test_bidirectional_sequence_rnn_hybrid_time_major_runs_the_sequence_time_times_as_litert(merge_outputs):
    # LiteRT's time-major hybrid kernel loops over the whole sequence once per time step
    # (its states carry on): one pass would not match.
    model = rnn_model(
        Op.BIDIRECTIONAL_SEQUENCE_RNN, hybrid=True, asymmetric=True, time_major=True, merge_outputs=merge_outputs, activation=Act.RELU
    )
    check(model, **EXACT)


def test_bidirectional_sequence_rnn_symmetric_hybrid_merged_time_major_batch_is_refused():
    # LiteRT's kernel crashes on this node (a zero-point pointer offset from null).
    model = rnn_model(Op.BIDIRECTIONAL_SEQUENCE_RNN, hybrid=True, time_major=True, merge_outputs=True)
    with pytest.raises(KernelError, match="BIDIRECTIONAL_SEQUENCE_RNN v2.*needs asymmetric_quantize_inputs"):
        Interpreter(model_content=model).allocate_tensors()


# (a time-major aux input of another size than the input is refused: see the error test)
@pytest.mark.parametrize("time_major, aux_size", [(False, 4), (False, 3), (True, 4)])
def test_bidirectional_sequence_rnn_aux_input_with_weights_matches_litert(time_major, aux_size):
    check(rnn_model(Op.BIDIRECTIONAL_SEQUENCE_RNN, aux_size=aux_size, time_major=time_major))


def test_bidirectional_sequence_rnn_hybrid_aux_input_with_weights_matches_litert():
    check(rnn_model(Op.BIDIRECTIONAL_SEQUENCE_RNN, aux_size=4, hybrid=True, activation=Act.RELU), **EXACT)


@pytest.mark.parametrize("time_major", [False, True])
def test_bidirectional_sequence_rnn_aux_input_without_weights_matches_litert(time_major):
    # Without aux weights the aux input stands for the backward cell's input (time-major);
    # LiteRT's batch-major kernel reads the input there regardless.
    check(rnn_model(Op.BIDIRECTIONAL_SEQUENCE_RNN, aux_size=4, aux_weights=False, time_major=time_major))


def test_bidirectional_sequence_rnn_time_major_aux_of_another_size_is_refused():
    model = rnn_model(Op.BIDIRECTIONAL_SEQUENCE_RNN, aux_size=3, time_major=True)
    with pytest.raises(KernelError, match="BIDIRECTIONAL_SEQUENCE_RNN v1.*aux input of size 3"):
        Interpreter(model_content=model).allocate_tensors()
