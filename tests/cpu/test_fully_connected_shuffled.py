"""FULLY_CONNECTED v2 (backends/cpu/kernels/fully_connected_shuffled.py): uint8 input, weights
in the shuffled 4x16 int8 format, int16 output and the shuffled-input workspace as a second
output, against LiteRT's reference kernel bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from model_helpers import stamped_version
from oracle import assert_matches_litert
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.enums import FullyConnectedOptionsWeightsFormat as Format
from schema.params import FullyConnectedParams


def shuffled(weights: np.ndarray) -> np.ndarray:
    """uint8 ``[units, depth]`` weights as the converter stores them shuffled: blocks of 4 units
    by 16 depth values, row by row, the sign bit flipped."""
    units, depth = weights.shape
    return (weights.reshape(units // 4, 4, depth // 16, 16).transpose(0, 2, 1, 3).reshape(units, depth) ^ 0x80)


def shuffled_model(batch: int, units: int = 8, depth: int = 32, activation=Act.NONE, outputs: int = 2) -> bytes:
    rng = np.random.default_rng(batch)
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [batch, depth], np.uint8, quantization=quantization(0.05, 128))
    w = graph.add_constant("w", shuffled(rng.integers(0, 256, (units, depth)).astype(np.uint8)),
                           quantization=quantization(0.02, 128))
    b = graph.add_constant("b", rng.integers(-3000, 3000, units).astype(np.int32), quantization=quantization(0.001, 0))
    tensors = [graph.add_tensor("y", [batch, units], np.int16, quantization=quantization(0.05, 0)),
               graph.add_tensor("workspace", [batch, depth], np.uint8)][:outputs]
    graph.add_operator(B.FULLY_CONNECTED, [x, w, b], tensors,
                       FullyConnectedParams(weights_format=Format.SHUFFLED4x16INT8, fused_activation_function=activation))
    for tensor in tensors:
        graph.add_output(tensor)
    return builder.build()


@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU], ids=lambda a: a.name)
def test_shuffled_weights_are_v2_and_match_litert_with_its_workspace(batch, activation):
    model = shuffled_model(batch, activation=activation)
    assert stamped_version(model) == 2
    values = np.random.default_rng(9).integers(0, 256, (batch, 32)).astype(np.uint8)
    assert_matches_litert(model, [values])  # both outputs: the int16 result and the shuffled input


def test_a_batch_litert_leaves_unwritten_is_refused_naming_the_op():
    with pytest.raises(KernelError, match="FULLY_CONNECTED v2: a batch of 2: TFLite's shuffled kernel runs batches of 1 and 4"):
        Interpreter(model_content=shuffled_model(2)).allocate_tensors()


def test_shuffled_weights_without_the_workspace_output_are_refused_as_litert_refuses_them():
    with pytest.raises(KernelError, match="FULLY_CONNECTED v2: the node has 1 outputs; the shuffled format needs 2"):
        Interpreter(model_content=shuffled_model(1, outputs=1)).allocate_tensors()
