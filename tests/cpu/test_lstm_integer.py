"""The integer LSTM ("8x8->16": int8 input, output state and weights, int16 cell state)
of LSTM v1 and UNIDIRECTIONAL_SEQUENCE_LSTM v1, against ai-edge-litert's BUILTIN_REF
kernels, bit for bit, over several invokes in a row (the int8 output state starts at
its zero point and carries over with the int16 cell state).

Also issue 32's acceptance item: an LSTM model with int8 weights, built with the
project's ModelBuilder, gives LiteRT's outputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import stamped_version
from oracle import assert_invokes_match_litert

from delegate_sdk.context import KernelError
from delegate_sdk.recipes.sequence import add_integer_lstm, integer_lstm_model, lstm_model
from interpreter import Interpreter
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator, TensorType
from schema.params import FullyConnectedParams, StridedSliceParams

Op = BuiltinOperator
T = TensorType
EXACT = {"rtol": 0, "atol": 0}


def int8_invokes(model: bytes, count: int = 4, seed: int = 1) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    details = Interpreter(model_content=model).get_input_details()
    return [[rng.integers(-128, 128, d["shape"]).astype(np.int8) for d in details] for _ in range(count)]


def check(model: bytes) -> list:
    outputs = assert_invokes_match_litert(model, int8_invokes(model), **EXACT)
    values = np.concatenate([step[0].ravel() for step in outputs])
    assert len(np.unique(values)) > 10, "the outputs are (nearly) constant: the test would not see a difference"
    return outputs


# -- the standard Keras-converted shapes: no peephole, no projection ---------------------------


@pytest.mark.parametrize("layer_norm", [False, True])
@pytest.mark.parametrize("time_major", [False, True])
def test_unidirectional_sequence_lstm_int8_is_v1_and_matches_litert_bit_for_bit(layer_norm, time_major):
    model = integer_lstm_model(layer_norm=layer_norm, time_major=time_major)
    assert stamped_version(model) == 1
    check(model)


@pytest.mark.parametrize("layer_norm", [False, True])
def test_lstm_int8_is_v1_and_matches_litert_bit_for_bit(layer_norm):
    model = integer_lstm_model(Op.LSTM, layer_norm=layer_norm)
    assert stamped_version(model) == 1
    check(model)


@pytest.mark.parametrize("cell_scale_log2", [-15, -13, -10, -9])
def test_unidirectional_sequence_lstm_int8_cell_scales_match_litert(cell_scale_log2):
    # The cell state's power-of-two scale sets the shifts and the tanh's integer bits.
    check(integer_lstm_model(cell_scale_log2=cell_scale_log2))


def test_unidirectional_sequence_lstm_int8_zero_points_match_litert():
    check(integer_lstm_model(input_quant=(0.03, -40), state_quant=(0.01, 25), hidden_quant=(0.01, -17)))


# -- the optional parts ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "cifg, peephole, projection, layer_norm",
    [(True, False, False, False), (False, True, False, False), (False, False, True, False), (True, True, True, True), (True, False, True, True)],
)
def test_unidirectional_sequence_lstm_int8_optional_parts_match_litert(cifg, peephole, projection, layer_norm):
    check(integer_lstm_model(cifg=cifg, peephole=peephole, projection=projection, layer_norm=layer_norm))


@pytest.mark.parametrize("time_major", [False, True])
def test_unidirectional_sequence_lstm_int8_peephole_with_projection_matches_litert(time_major):
    # TFLite sizes the integer peephole by n_output (< n_cell here): reproduced, in both
    # the per-row (batch-major) and all-rows (time-major) walks.
    check(integer_lstm_model(peephole=True, projection=True, time_major=time_major))


def test_unidirectional_sequence_lstm_int8_clips_match_litert():
    check(integer_lstm_model(projection=True, cell_clip=0.5, proj_clip=0.3))


def test_lstm_int8_with_a_cell_scale_over_two_to_minus_9_is_refused_as_by_litert():
    model = integer_lstm_model(Op.LSTM, cell_scale_log2=-8)
    with pytest.raises(KernelError, match=r"LSTM v1.*at most 2\*\*-9"):
        Interpreter(model_content=model).allocate_tensors()


def test_lstm_int8_with_twelve_intermediates_is_refused_clearly():
    # The 8x8->8 kernel (12 intermediate tensors) is not implemented.
    model = integer_lstm_model(Op.LSTM, intermediates=12)
    with pytest.raises(KernelError, match="LSTM v1.*12 intermediate tensors .*8x8->8.* not supported"):
        Interpreter(model_content=model).allocate_tensors()


# -- issue 32's acceptance ----------------------------------------------------------------------


def keras_like_int8_lstm_model(seed: int = 0) -> bytes:
    """main(x int8 [1, 6, 4]) = FULLY_CONNECTED(UNIDIRECTIONAL_SEQUENCE_LSTM(x)[:, -1]), and
    the LSTM's whole sequence: a full-integer LSTM layer with layer norm (int8 weights,
    int16 cell state) whose last step feeds a dense layer, as a converted Keras model
    computes."""
    rng = np.random.default_rng(seed)
    builder = ModelBuilder()
    graph = builder.subgraph()
    input_quant = (0.05, 3)
    x = graph.add_input("x", [1, 6, 4], T.INT8, quantization=quantization(*input_quant))
    sequence = add_integer_lstm(graph, x, [1, 6, 4], n_cell=8, layer_norm=True, input_quant=input_quant, seed=seed)
    state_quant = quantization(1 / 128, -2)
    last = graph.add_tensor("last_step", [1, 8], T.INT8, quantization=state_quant)
    begin, end, strides = (graph.add_constant(n, np.array(v, np.int32)) for n, v in (("begin", [0, -1, 0]), ("end", [1, 0, 8]), ("strides", [1, 1, 1])))
    graph.add_operator(Op.STRIDED_SLICE, [sequence, begin, end, strides], [last], StridedSliceParams(end_mask=2, shrink_axis_mask=2))
    weights = graph.add_constant("dense_weights", rng.integers(-127, 128, (3, 8)).astype(np.int8), quantization=quantization(0.01, 0))
    bias = graph.add_constant("dense_bias", rng.integers(-500, 500, 3).astype(np.int32), quantization=quantization(0.01 / 128, 0))
    y = graph.add_tensor("y", [1, 3], T.INT8, quantization=quantization(0.02, 5))
    graph.add_operator(Op.FULLY_CONNECTED, [last, weights, bias], [y], FullyConnectedParams())
    graph.add_output(y)
    graph.add_output(sequence)
    return builder.build()


def test_acceptance_an_lstm_model_with_int8_weights_gives_litert_outputs():
    """Issue 32: an LSTM model with int8 weights gives LiteRT's outputs (full integer:
    int8 weights and activations, int16 cell state), over consecutive invokes."""
    model = keras_like_int8_lstm_model()
    outputs = assert_invokes_match_litert(model, int8_invokes(model, count=5), **EXACT)
    assert [op["op_name"] for op in Interpreter(model_content=model).get_ops_details()] == [
        "UNIDIRECTIONAL_SEQUENCE_LSTM", "STRIDED_SLICE", "FULLY_CONNECTED"
    ]
    assert len(np.unique(np.concatenate([step[1].ravel() for step in outputs]))) > 10


def test_acceptance_an_lstm_model_with_int8_weights_on_float_activations_gives_litert_outputs():
    """Issue 32, the hybrid form: int8 weights, float32 activations (v2)."""
    model = lstm_model(hybrid=True, n_input=12, n_cell=8, layer_norm=True)
    rng = np.random.default_rng(2)
    inputs = [[rng.uniform(-2, 2, (2, 3, 12)).astype(np.float32)] for _ in range(3)]
    assert_invokes_match_litert(model, inputs)


def test_int8_lstm_state_restarts_at_its_zero_point_after_reset_all_variables_as_in_litert():
    from oracle import litert_interpreter

    model = integer_lstm_model(state_quant=(0.01, 25))
    theirs, ours = litert_interpreter(model), Interpreter(model_content=model)
    feeds = int8_invokes(model, count=3)
    for runtime in (theirs, ours):
        runtime.allocate_tensors()
    results = []
    for step, (x,) in enumerate(feeds):
        if step == 2:
            theirs.reset_all_variables()
            ours.reset_all_variables()
        pair = []
        for runtime in (theirs, ours):
            runtime.set_tensor(runtime.get_input_details()[0]["index"], x)
            runtime.invoke()
            pair.append(runtime.get_tensor(runtime.get_output_details()[0]["index"]))
        np.testing.assert_array_equal(pair[1], pair[0], err_msg=f"invoke {step}")
        results.append(pair[1])
    fresh = Interpreter(model_content=model)
    fresh.allocate_tensors()
    fresh.set_tensor(fresh.get_input_details()[0]["index"], feeds[2][0])
    fresh.invoke()
    np.testing.assert_array_equal(results[2], fresh.get_tensor(fresh.get_output_details()[0]["index"]))
