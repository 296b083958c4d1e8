"""Recipes of the recurrent ops: RNN, UNIDIRECTIONAL_SEQUENCE_RNN,
BIDIRECTIONAL_SEQUENCE_RNN, SVDF and the LSTM family; and their builders, one-node models
built with the project's ModelBuilder, which the ops' own tests against LiteRT use too
(tests/cpu/test_rnn.py, test_svdf.py, test_lstm*.py).

State inputs are variable tensors, as the converter writes them; weights are random
constants, int8 with a per-tensor scale for hybrid nodes. The weights make the version:
float32 v1, hybrid (int8 weights on float32 activations) the next, and hybrid with
``asymmetric_quantize_inputs`` the one after; full-integer SVDF is v3, LSTM's basic kernel
(``kernel_type`` BASIC) v2, UNIDIRECTIONAL_SEQUENCE_LSTM's diagonal recurrent weights v4.
The integer LSTM (8x8->16) and the quantized basic LSTM are the int8 and uint8 forms of
their versions (``typed``).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from delegate_sdk.recipes.base import Recipe
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


def input_shape(op, batch: int, time: int, width: int, time_major: bool) -> list[int]:
    """The input of a recurrent node: ``[batch, width]`` for the one-step ops (RNN, LSTM),
    else ``[batch, time, width]`` (``[time, batch, width]`` with ``time_major``)."""
    if op in (BuiltinOperator.RNN, BuiltinOperator.LSTM):
        return [batch, width]
    return [time, batch, width] if time_major else [batch, time, width]


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
    x_shape = input_shape(op, batch, time, input_size, time_major)
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


def add_lstm_cell(graph, prefix: str, n_input: int, n_cell: int, n_output: int, rng, *, hybrid=False, cifg=False,
                  peephole=False, projection=False, projection_bias=True, layer_norm=False, diagonal=False,
                  aux_size=None) -> tuple[list[int], list[int], list[int]]:
    """The tensors of one float32 / hybrid LSTM cell: (the 17 cell inputs in TFLite's
    order, the 4 layer norm inputs, the 4 aux weight inputs), -1 where absent."""
    gates = ("input", "forget", "cell", "output")
    skip = {"input"} if cifg else set()

    def weights(name, shape):
        return add_weights(graph, f"{prefix}{name}", shape, rng, hybrid)

    cell = [weights(f"input_to_{g}", [n_cell, n_input]) if g not in skip else -1 for g in gates]
    for g in gates:
        if g in skip:
            cell.append(-1)
        elif diagonal:
            cell.append(graph.add_constant(f"{prefix}recurrent_to_{g}", rng.uniform(-0.5, 0.5, n_cell).astype(np.float32)))
        else:
            cell.append(weights(f"recurrent_to_{g}", [n_cell, n_output]))
    for g in ("input", "forget", "output"):
        cell.append(weights(f"cell_to_{g}", [n_cell]) if peephole and g not in skip else -1)
    for g in gates:
        cell.append(-1 if g in skip else graph.add_constant(f"{prefix}{g}_bias", rng.uniform(-0.5, 0.5, n_cell).astype(np.float32)))
    if projection:
        cell.append(weights("projection", [n_output, n_cell]))
        cell.append(graph.add_constant(f"{prefix}projection_bias", rng.uniform(-0.2, 0.2, n_output).astype(np.float32)) if projection_bias else -1)
    else:
        cell += [-1, -1]
    norms = [
        graph.add_constant(f"{prefix}{g}_layer_norm", rng.uniform(0.5, 1.5, n_cell).astype(np.float32)) if layer_norm and g not in skip else -1
        for g in gates
    ]
    aux = [weights(f"aux_to_{g}", [n_cell, aux_size]) if aux_size is not None and g not in skip else -1 for g in gates]
    return cell, norms, aux


def lstm_model(
    op=BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM,
    *,
    batch=2,
    time=3,
    n_input=4,
    n_cell=5,
    n_output=None,
    bw_cell=None,
    hybrid=False,
    asymmetric=False,
    cifg=False,
    peephole=False,
    projection=False,
    projection_bias=True,
    layer_norm=False,
    diagonal=False,
    time_major=False,
    activation=Act.TANH,
    cell_clip=0.0,
    proj_clip=0.0,
    merge_outputs=False,
    aux_size=None,
    aux_weights=True,
    twenty_inputs=False,
    seed=0,
) -> bytes:
    """A float32 or hybrid LSTM / UNIDIRECTIONAL_SEQUENCE_LSTM / BIDIRECTIONAL_SEQUENCE_LSTM
    node with random weights; the optional parts (CIFG, peephole, projection, layer norm)
    switched on by their flags. LSTM takes ``[batch, n_input]``."""
    from schema.params import BidirectionalSequenceLSTMParams, LSTMParams, UnidirectionalSequenceLSTMParams

    rng = np.random.default_rng(seed)
    n_output = (n_cell if not projection else 3) if n_output is None else n_output
    builder = ModelBuilder()
    graph = builder.subgraph()
    x_shape = input_shape(op, batch, time, n_input, time_major)
    x = graph.add_input("x", x_shape)
    options = dict(hybrid=hybrid, cifg=cifg, peephole=peephole, projection=projection, projection_bias=projection_bias)

    def states(prefix, size_out, size_cell):
        return [
            graph.add_tensor(f"{prefix}output_state", [batch, size_out], is_variable=True),
            graph.add_tensor(f"{prefix}cell_state", [batch, size_cell], is_variable=True),
        ]

    if op == BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM:
        bw_cell = n_cell if bw_cell is None else bw_cell
        fw, _, fw_aux = add_lstm_cell(graph, "fw_", n_input, n_cell, n_output, rng, aux_size=aux_size if aux_weights else None, **options)
        bw, _, bw_aux = add_lstm_cell(graph, "bw_", n_input, bw_cell, n_output, rng, aux_size=aux_size if aux_weights else None, **options)
        aux = graph.add_input("aux", [*x_shape[:2], aux_size]) if aux_size is not None else -1
        inputs = [x, *fw, *bw, *states("fw_", n_output, n_cell), *states("bw_", n_output, bw_cell), aux, *fw_aux, *bw_aux]
        lead = x_shape[:2]
        if merge_outputs:
            outputs = [graph.add_tensor("y", [*lead, 2 * n_output])]
        else:
            outputs = [graph.add_tensor("fw_y", [*lead, n_output]), graph.add_tensor("bw_y", [*lead, n_output])]
        params = BidirectionalSequenceLSTMParams(activation, cell_clip, proj_clip, merge_outputs, time_major, asymmetric)
    else:
        cell, norms, _ = add_lstm_cell(graph, "", n_input, n_cell, n_output, rng, layer_norm=layer_norm, diagonal=diagonal, **options)
        inputs = [x, *cell, *states("", n_output, n_cell)]
        if not twenty_inputs:
            inputs += norms
        outputs = [graph.add_tensor("y", [*x_shape[:-1], n_output])]
        if op == BuiltinOperator.LSTM:
            params = LSTMParams(activation, cell_clip, proj_clip, asymmetric_quantize_inputs=asymmetric)
        else:
            params = UnidirectionalSequenceLSTMParams(activation, cell_clip, proj_clip, time_major, asymmetric, diagonal)
    graph.add_operator(op, inputs, outputs, params)
    for output in outputs:
        graph.add_output(output)
    return builder.build()


def integer_lstm_model(op=BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, *, batch=2, time=3, n_input=6, time_major=False,
                       input_quant=(0.05, 3), **cell) -> bytes:
    """A one-node int8 (8x8->16) LSTM / UNIDIRECTIONAL_SEQUENCE_LSTM model (see
    :func:`add_integer_lstm` for the cell's options)."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x_shape = input_shape(op, batch, time, n_input, time_major)
    x = graph.add_input("x", x_shape, T.INT8, quantization=quantization(*input_quant))
    y = add_integer_lstm(graph, x, x_shape, op=op, time_major=time_major, input_quant=input_quant, **cell)
    graph.add_output(y)
    return builder.build()


def add_integer_lstm(
    graph,
    x: int,
    x_shape,
    *,
    op=BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM,
    n_cell=8,
    n_output=None,
    layer_norm=False,
    cifg=False,
    peephole=False,
    projection=False,
    time_major=False,
    cell_scale_log2=-11,
    cell_clip=0.0,
    proj_clip=0.0,
    input_quant=(0.05, 3),
    state_quant=(1 / 128, -2),
    hidden_quant=(1 / 128, 1),
    intermediates=5,
    seed=0,
) -> int:
    """An int8 (8x8->16) LSTM / UNIDIRECTIONAL_SEQUENCE_LSTM node on the int8 tensor ``x``
    as the converter writes it for a Keras LSTM: int8 output state and weights
    (symmetric, per tensor), int32 biases, an int16 cell state with a power-of-two scale,
    int16 layer norm coefficients, and the 5 intermediate tensors (the gates' scales for
    layer norm, the hidden state's scale and zero point). Scales are chosen so that the
    gates are not saturated. Returns the output tensor."""
    from schema.params import LSTMParams, UnidirectionalSequenceLSTMParams

    rng = np.random.default_rng(seed)
    n_input = x_shape[-1]
    batch = x_shape[0] if op == BuiltinOperator.LSTM or not time_major else x_shape[1]
    n_output = (n_cell if not projection else 5) if n_output is None else n_output
    gates = ("input", "forget", "cell", "output")
    skip = {"input"} if cifg else set()
    gate_scale = 2.0**-12  # Q3.12, what the gates are rescaled to without layer norm

    def int8_weights(name, shape, scale):
        return graph.add_constant(name, rng.integers(-127, 128, shape).astype(np.int8), quantization=quantization(scale, 0))

    def int32_bias(name, size, scale):
        return graph.add_constant(name, rng.integers(-2000, 2000, size).astype(np.int32), quantization=quantization(scale, 0))

    inputs = [x]
    inputs += [int8_weights(f"input_to_{g}", [n_cell, n_input], 0.004) if g not in skip else -1 for g in gates]
    inputs += [int8_weights(f"recurrent_to_{g}", [n_cell, n_output], 0.006) if g not in skip else -1 for g in gates]
    inputs += [
        graph.add_constant(f"cell_to_{g}", rng.integers(-3000, 3000, n_cell).astype(np.int16), quantization=quantization(1e-4, 0))
        if peephole and g not in skip else -1
        for g in ("input", "forget", "output")
    ]
    inputs += [int32_bias(f"{g}_bias", n_cell, input_quant[0] * 0.004) if g not in skip else -1 for g in gates]
    if projection:
        inputs.append(int8_weights("projection", [n_output, n_cell], 0.01))
        inputs.append(int32_bias("projection_bias", n_output, hidden_quant[0] * 0.01))
    else:
        inputs += [-1, -1]
    inputs.append(graph.add_tensor("output_state", [batch, n_output], T.INT8, quantization=quantization(*state_quant), is_variable=True))
    inputs.append(graph.add_tensor("cell_state", [batch, n_cell], T.INT16, quantization=quantization(2.0**cell_scale_log2, 0), is_variable=True))
    inputs += [
        graph.add_constant(f"{g}_layer_norm", rng.integers(8000, 20000, n_cell).astype(np.int16), quantization=quantization(1e-4, 0))
        if layer_norm and g not in skip else -1
        for g in gates
    ]
    if layer_norm:  # the gates' sums, before normalization
        inner = [graph.add_tensor(f"intermediate_{g}", [0], T.INT16, quantization=quantization(0.0005 * (k + 1), 0)) for k, g in enumerate(gates)]
    else:
        inner = [graph.add_tensor(f"intermediate_{g}", [0], T.INT16, quantization=quantization(gate_scale, 0)) for g in gates]
    inner.append(graph.add_tensor("intermediate_hidden", [0], T.INT8, quantization=quantization(*hidden_quant)))
    inner += [graph.add_tensor(f"intermediate_{k}", [0], T.INT8, quantization=quantization(0.01, 0)) for k in range(intermediates - 5)]
    output_quant = quantization(*state_quant)
    y = graph.add_tensor("lstm_output", [*x_shape[:-1], n_output], T.INT8, quantization=output_quant)
    if op == BuiltinOperator.LSTM:
        params = LSTMParams(Act.TANH, cell_clip, proj_clip)
    else:
        params = UnidirectionalSequenceLSTMParams(Act.TANH, cell_clip, proj_clip, time_major)
    graph.add_operator(op, inputs, [y], params, intermediates=inner[:intermediates])
    return y


def basic_lstm_model(*, batch=2, n_input=3, n=4, quantized=False, state_scale_log2=-11, seed=0) -> bytes:
    """An LSTM node with the basic kernel (version 2): inputs x, the previous activation
    and state (variables the op writes back), the [4n, n_input + n] weights and bias;
    outputs the activation, the state and the two temporaries. Quantized: uint8
    activations on [-1, 127/128] (scale 1/128, zero point 128), int16 state."""
    from schema.params import LSTMKernelType, LSTMParams

    rng = np.random.default_rng(seed)
    builder = ModelBuilder()
    graph = builder.subgraph()
    if quantized:
        activation_q = quantization(1 / 128, 128)
        state_q = quantization(2.0**state_scale_log2, 0)
        weights_scale = 0.02
        x = graph.add_input("x", [batch, n_input], T.UINT8, quantization=activation_q)
        prev_activation = graph.add_tensor("prev_activation", [batch, n], T.UINT8, quantization=activation_q, is_variable=True)
        weights = graph.add_constant(
            "weights", rng.integers(0, 256, (4 * n, n_input + n)).astype(np.uint8), quantization=quantization(weights_scale, 120)
        )
        bias = graph.add_constant("bias", rng.integers(-3000, 3000, 4 * n).astype(np.int32), quantization=quantization(weights_scale / 128, 0))
        prev_state = graph.add_tensor("prev_state", [batch, n], T.INT16, quantization=state_q, is_variable=True)
        outputs = [
            graph.add_tensor("activation", [batch, n], T.UINT8, quantization=activation_q),
            graph.add_tensor("state", [batch, n], T.INT16, quantization=state_q),
            graph.add_tensor("concat", [batch, n_input + n], T.UINT8, quantization=activation_q),
            graph.add_tensor("gates", [batch, 4 * n], T.INT16, quantization=quantization(2.0**-12, 0)),
        ]
    else:
        x = graph.add_input("x", [batch, n_input])
        prev_activation = graph.add_tensor("prev_activation", [batch, n], is_variable=True)
        weights = graph.add_constant("weights", rng.uniform(-0.5, 0.5, (4 * n, n_input + n)).astype(np.float32))
        bias = graph.add_constant("bias", rng.uniform(-0.5, 0.5, 4 * n).astype(np.float32))
        prev_state = graph.add_tensor("prev_state", [batch, n], is_variable=True)
        outputs = [
            graph.add_tensor("activation", [batch, n]),
            graph.add_tensor("state", [batch, n]),
            graph.add_tensor("concat", [batch, n_input + n]),
            graph.add_tensor("gates", [batch, 4 * n]),
        ]
    params = LSTMParams(Act.TANH, kernel_type=LSTMKernelType.BASIC)
    graph.add_operator(BuiltinOperator.LSTM, [x, prev_activation, weights, bias, prev_state], outputs, params)
    for output in outputs:
        graph.add_output(output)
    return builder.build()


# -- the recipes -------------------------------------------------------------------------------------

FAMILY = "sequence"
B = BuiltinOperator
_RNNS = (B.RNN, B.UNIDIRECTIONAL_SEQUENCE_RNN, B.BIDIRECTIONAL_SEQUENCE_RNN)
_HYBRID = "hybrid: float32 activations, int8 weights per tensor"
_ASYMMETRIC = _HYBRID + ", asymmetric_quantize_inputs"


def recipes() -> Iterator[Recipe]:
    bidi = B.BIDIRECTIONAL_SEQUENCE_LSTM
    versions = {
        **{
            op: {
                1: ("float32", lambda op=op: rnn_model(op)),
                2: (_HYBRID, lambda op=op: rnn_model(op, hybrid=True)),
                3: (_ASYMMETRIC, lambda op=op: rnn_model(op, hybrid=True, asymmetric=True)),
            }
            for op in _RNNS
        },
        B.SVDF: {
            1: ("float32, rank 2", lambda: svdf_model()),
            2: (_HYBRID, lambda: svdf_model(kind="hybrid")),
            3: ("int8: int8 feature weights, int16 time weights and state, int32 bias", lambda: svdf_model(kind="int8")),
            4: (_ASYMMETRIC, lambda: svdf_model(kind="hybrid", asymmetric=True)),
        },
        B.LSTM: {
            1: ("float32, the full kernel (24 inputs, no layer norm)", lambda: lstm_model(B.LSTM)),
            2: ("float32, the basic kernel (kernel_type BASIC: 5 inputs, 4 outputs)", lambda: basic_lstm_model()),
            3: (_HYBRID, lambda: lstm_model(B.LSTM, hybrid=True)),
            4: (_ASYMMETRIC, lambda: lstm_model(B.LSTM, hybrid=True, asymmetric=True)),
        },
        B.UNIDIRECTIONAL_SEQUENCE_LSTM: {
            1: ("float32", lambda: lstm_model()),
            2: (_HYBRID, lambda: lstm_model(hybrid=True)),
            3: (_ASYMMETRIC, lambda: lstm_model(hybrid=True, asymmetric=True)),
            4: ("float32, diagonal recurrent weights (diagonal_recurrent_tensors)", lambda: lstm_model(diagonal=True)),
        },
        # no CIFG in the hybrid ones: TFLite's rule reads input 1 (the forward input gate's weights)
        bidi: {
            1: ("float32, time major, two outputs", lambda: lstm_model(bidi, time_major=True)),
            2: (_HYBRID, lambda: lstm_model(bidi, hybrid=True, time_major=True)),
            3: (_ASYMMETRIC, lambda: lstm_model(bidi, hybrid=True, asymmetric=True, time_major=True)),
        },
    }
    for op, by_version in versions.items():
        for version, (description, build) in by_version.items():
            yield Recipe(op, version, build, description, FAMILY)


def typed() -> Iterator[Recipe]:
    integer = "int8 (8x8->16): int8 activations, output state and weights, int16 cell state"
    yield Recipe(B.LSTM, 1, lambda: integer_lstm_model(B.LSTM), integer, dtype="int8")
    yield Recipe(B.UNIDIRECTIONAL_SEQUENCE_LSTM, 1, lambda: integer_lstm_model(), integer, dtype="int8")
    yield Recipe(B.LSTM, 2, lambda: basic_lstm_model(quantized=True),
                 "the basic kernel in uint8 (activations on [-1, 1), int16 state)", dtype="uint8")
