"""One-node models of the recurrent ops (RNN, SVDF, the LSTM family), built with the
project's ModelBuilder, for the tests against LiteRT (tests/cpu/test_rnn.py,
test_svdf.py, test_lstm*.py). State inputs are variable tensors, as the converter
writes them; weights are random constants, int8 with a per-tensor scale for hybrid
nodes."""

from __future__ import annotations

import numpy as np

from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType
from schema.params import BidirectionalSequenceRNNParams, RNNParams, SequenceRNNParams, SVDFParams

T = TensorType
Act = ActivationFunctionType


def add_weights(graph, name: str, shape, rng, hybrid: bool, scale: float = 0.5) -> int:
    """A constant weight tensor: float32 uniform in [-scale, scale], or its int8
    quantization (per-tensor scale) for a hybrid node."""
    values = rng.uniform(-scale, scale, size=shape).astype(np.float32)
    if not hybrid:
        return graph.add_constant(name, values)
    step = float(np.abs(values).max()) / 127 or 1.0
    quantized = np.clip(np.round(values / step), -127, 127).astype(np.int8)
    return graph.add_constant(name, quantized, quantization=quantization(step, 0))


def rnn_model(
    op=BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN,
    *,
    batch=2,
    time=3,
    input_size=4,
    units=5,
    bw_units=None,
    hybrid=False,
    asymmetric=False,
    time_major=False,
    activation=Act.TANH,
    merge_outputs=False,
    aux_size=None,
    aux_weights=True,
    seed=0,
) -> bytes:
    """An RNN / UNIDIRECTIONAL_SEQUENCE_RNN / BIDIRECTIONAL_SEQUENCE_RNN node with random
    weights. RNN takes ``[batch, input_size]``; the sequence ops ``[batch, time,
    input_size]`` (time first with ``time_major``). For the bidirectional op, ``aux_size``
    adds an aux input (with its weights unless ``aux_weights`` is False)."""
    rng = np.random.default_rng(seed)
    builder = ModelBuilder()
    graph = builder.subgraph()
    if op == BuiltinOperator.RNN:
        x_shape = [batch, input_size]
    else:
        x_shape = [time, batch, input_size] if time_major else [batch, time, input_size]
    x = graph.add_input("x", x_shape)

    def cell(prefix: str, n_units: int):
        weights = add_weights(graph, f"{prefix}weights", [n_units, input_size], rng, hybrid)
        recurrent = add_weights(graph, f"{prefix}recurrent", [n_units, n_units], rng, hybrid)
        bias = graph.add_constant(f"{prefix}bias", rng.uniform(-0.5, 0.5, n_units).astype(np.float32))
        state = graph.add_tensor(f"{prefix}state", [batch, n_units], is_variable=True)
        return [weights, recurrent, bias, state]

    def sequence_shape(width: int):
        return [time, batch, width] if time_major else [batch, time, width]

    if op == BuiltinOperator.RNN:
        y = graph.add_tensor("y", [batch, units])
        graph.add_operator(op, [x, *cell("", units)], [y], RNNParams(activation, asymmetric))
        outputs = [y]
    elif op == BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN:
        y = graph.add_tensor("y", sequence_shape(units))
        graph.add_operator(op, [x, *cell("", units)], [y], SequenceRNNParams(time_major, activation, asymmetric))
        outputs = [y]
    else:
        bw_units = units if bw_units is None else bw_units
        inputs = [x, *cell("fw_", units), *cell("bw_", bw_units), -1, -1, -1]
        if aux_size is not None:
            inputs[9] = graph.add_input("aux", [*x_shape[:2], aux_size])
            if aux_weights:
                inputs[10] = add_weights(graph, "fw_aux_weights", [units, aux_size], rng, hybrid)
                inputs[11] = add_weights(graph, "bw_aux_weights", [bw_units, aux_size], rng, hybrid)
        if merge_outputs:
            outputs = [graph.add_tensor("y", sequence_shape(units + bw_units))]
        else:
            outputs = [graph.add_tensor("fw_y", sequence_shape(units)), graph.add_tensor("bw_y", [time, batch, bw_units] if time_major else [batch, time, bw_units])]
        params = BidirectionalSequenceRNNParams(time_major, activation, merge_outputs, asymmetric)
        graph.add_operator(op, inputs, outputs, params)
    for output in outputs:
        graph.add_output(output)
    return builder.build()


def svdf_model(
    *,
    batch=2,
    input_size=4,
    units=3,
    rank=2,
    memory=5,
    kind="float",
    asymmetric=False,
    activation=Act.RELU,
    bias=True,
    seed=0,
) -> bytes:
    """An SVDF node: ``kind`` float (float32 weights), hybrid (int8 feature and time
    weights on float32 activations) or int8 (int8 input/output, int8 feature weights,
    int16 time weights and state, int32 bias)."""
    rng = np.random.default_rng(seed)
    builder = ModelBuilder()
    graph = builder.subgraph()
    filters = units * rank
    if kind == "int8":
        x = graph.add_input("x", [batch, input_size], T.INT8, quantization=quantization(0.03, 3))
        feature = graph.add_constant(
            "weights_feature", rng.integers(-127, 128, (filters, input_size)).astype(np.int8), quantization=quantization(0.01, 0)
        )
        time_w = graph.add_constant(
            "weights_time", rng.integers(-30000, 30000, (filters, memory)).astype(np.int16), quantization=quantization(3e-5, 0)
        )
        b = graph.add_constant("bias", rng.integers(-3000, 3000, units).astype(np.int32), quantization=quantization(1e-5, 0)) if bias else -1
        state = graph.add_tensor("state", [batch, filters * memory], T.INT16, quantization=quantization(0.002, 0), is_variable=True)
        y = graph.add_tensor("y", [batch, units], T.INT8, quantization=quantization(0.02, -5))
    else:
        hybrid = kind == "hybrid"
        x = graph.add_input("x", [batch, input_size])
        feature = add_weights(graph, "weights_feature", [filters, input_size], rng, hybrid)
        time_w = add_weights(graph, "weights_time", [filters, memory], rng, hybrid)
        b = graph.add_constant("bias", rng.uniform(-0.5, 0.5, units).astype(np.float32)) if bias else -1
        state = graph.add_tensor("state", [batch, filters * memory], is_variable=True)
        y = graph.add_tensor("y", [batch, units])
    graph.add_operator(BuiltinOperator.SVDF, [x, feature, time_w, b, state], [y], SVDFParams(rank, activation, asymmetric))
    graph.add_output(y)
    return builder.build()
