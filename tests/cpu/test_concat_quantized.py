"""Parity of the rescaling CONCATENATION (backends/cpu/kernels/concat_quantized.py) with
LiteRT's reference kernel, bit for bit: uint8 (v1) inputs whose scale or zero point differ
from the output's are requantized; int8 (v2) ones are refused, as TFLite does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.cpu.kernels.concat_quantized import RescalingConcatenation
from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import stamped_version
from oracle import assert_matches_litert
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator as B
from schema.model import Model
from schema.params import ConcatenationParams


def concat_model(shapes, dtype, input_params, output_params, axis, constants=None) -> bytes:
    """``constants``: {input position: array} for inputs stored in the file."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    indices = []
    constants = constants or {}
    for i, (shape, params) in enumerate(zip(shapes, input_params)):
        if i in constants:
            indices.append(graph.add_constant(f"c{i}", constants[i], quantization=quantization(*params)))
        else:
            indices.append(graph.add_input(f"x{i}", shape, dtype, quantization=quantization(*params)))
    rank = len(shapes[0])
    out_shape = list(shapes[0])
    out_shape[axis % rank] = sum(s[axis % rank] for s in shapes)
    y = graph.add_tensor("y", out_shape, dtype, quantization=quantization(*output_params))
    graph.add_operator(B.CONCATENATION, indices, [y], ConcatenationParams(axis=axis))
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


def uint8_values(shape, seed) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=shape).astype(np.uint8)



@pytest.mark.parametrize("axis", [0, 1, -1, 2])
def test_uint8_concat_rescales_inputs_with_other_quantization_like_litert(axis):
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    for i in range(3):
        shapes[i] = list(shapes[i])
        shapes[i][axis % 3] = i + 1
    input_params = [(0.05, 128), (0.013, 7), (0.1, 250)]  # the first equals the output's: copied
    model = concat_model(shapes, np.uint8, input_params, (0.05, 128), axis)
    assert stamped_version(model) == 1
    assert RescalingConcatenation.accepts(_context_of(model), _node_of(model))
    assert_matches_litert(model, [uint8_values(s, i) for i, s in enumerate(shapes)])


def test_uint8_concat_rescales_a_constant_input_like_litert():
    constant = uint8_values([2, 2], 5)
    model = concat_model([[2, 3], [2, 2]], np.uint8, [(0.02, 10), (0.2, 100)], (0.04, 0), 1, constants={1: constant})
    assert_matches_litert(model, [uint8_values([2, 3], 1)])


def test_uint8_concat_whose_rescaled_values_saturate_matches_litert():
    # Input range much wider than the output's: most values clamp to 0 or 255.
    model = concat_model([[3, 5], [3, 5]], np.uint8, [(0.5, 128), (0.001, 0)], (0.01, 128), 0)
    assert_matches_litert(model, [uint8_values([3, 5], 1), uint8_values([3, 5], 2)])


@settings(max_examples=25, deadline=None)
@given(
    count=st.integers(1, 4),
    rank=st.integers(1, 4),
    data=st.data(),
    output_params=st.tuples(st.floats(0.001, 0.2), st.integers(0, 255)),
    seed=st.integers(0, 2**16),
)
def test_uint8_concat_rescaling_property_matches_litert(count, rank, data, output_params, seed):
    base = data.draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    axis = data.draw(st.integers(-rank, rank - 1))
    shapes = []
    for _ in range(count):
        shape = list(base)
        shape[axis % rank] = data.draw(st.integers(1, 3))
        shapes.append(shape)
    input_params = data.draw(
        st.lists(st.tuples(st.floats(0.001, 0.2), st.integers(0, 255)), min_size=count, max_size=count)
    )
    input_params[0] = (input_params[0][0] * 1.5, input_params[0][1])  # at least one differs
    model = concat_model(shapes, np.uint8, input_params, output_params, axis)
    assert_matches_litert(model, [uint8_values(s, seed + i) for i, s in enumerate(shapes)])


def test_uint8_concat_sharing_the_output_quantization_is_left_to_the_copying_kernel():
    model = concat_model([[2, 2], [2, 3]], np.uint8, [(0.05, 3), (0.05, 3)], (0.05, 3), 1)
    assert not RescalingConcatenation.accepts(_context_of(model), _node_of(model))
    assert_matches_litert(model, [uint8_values([2, 2], 0), uint8_values([2, 3], 1)])


def test_int8_concat_with_differing_quantization_is_refused_as_tflite_does():
    model = concat_model([[2, 3], [2, 3]], np.int8, [(0.05, 0), (0.1, 0)], (0.05, 0), 0)
    assert stamped_version(model) == 2
    with pytest.raises(KernelError, match="CONCATENATION"):
        Interpreter(model_content=model).allocate_tensors()
    from oracle import litert_interpreter

    with pytest.raises(RuntimeError, match="scale"):
        litert_interpreter(model).allocate_tensors()


# -- helpers for the dispatch test: the model's context and node, as the registry sees them --


class _Tensors:
    def __init__(self, model: Model) -> None:
        self.tensors = model.subgraphs[0].tensors

    def __getitem__(self, index):
        return self.tensors[index]


class _Context:
    def __init__(self, model: Model) -> None:
        self.tensors = _Tensors(model)


def _context_of(model_bytes: bytes) -> _Context:
    return _Context(Model.from_bytes(model_bytes))


def _node_of(model_bytes: bytes):
    return Model.from_bytes(model_bytes).subgraphs[0].operators[0]
