"""Memory the model asks for is bounded (issue 16): an arena over the interpreter's limit
is refused with an error naming the largest tensors, before any allocation; a node that
writes its own input is refused when the model loads."""

from __future__ import annotations

import numpy as np
import pytest

from interpreter import ArenaLimitError, Interpreter
from interpreter.arena import default_arena_limit
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator
from schema.errors import ModelError
from schema.params import ReshapeParams

B = BuiltinOperator


def relu_model(shape) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", shape, np.float32)
    y = graph.add_tensor("y", shape, np.float32)
    graph.add_operator(B.RELU, [x], [y])
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


def test_an_arena_over_the_limit_is_refused_naming_the_largest_tensors():
    interpreter = Interpreter(model_content=relu_model([1, 1024, 1024]), experimental_arena_limit_bytes=4 << 20)
    with pytest.raises(ArenaLimitError, match=r"need 8\.0 MiB at once, over the interpreter's arena limit of 4\.0 MiB; "
                                              r"the largest: \d 'x' \[1, 1024, 1024\] FLOAT32 \(4\.0 MiB\)"):
        interpreter.allocate_tensors()


def test_the_same_model_allocates_under_a_larger_limit():
    interpreter = Interpreter(model_content=relu_model([1, 1024, 1024]), experimental_arena_limit_bytes=16 << 20)
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.full((1, 1024, 1024), -1, np.float32))
    interpreter.invoke()
    assert interpreter.get_tensor(1).max() == 0


def test_tensors_of_legal_sizes_that_together_exceed_the_default_limit_are_refused_before_numpy_is_asked():
    # Each input under the 4 GiB tensor limit; all are subgraph inputs, so all live at once.
    size = (1 << 30) - 1  # float32 elements: just under 4 GiB
    count = default_arena_limit() // (4 * size) + 2
    builder = ModelBuilder()
    graph = builder.subgraph()
    for i in range(count):
        y = graph.add_tensor(f"y{i}", [size], np.float32)
        graph.add_operator(B.RELU, [graph.add_input(f"x{i}", [size], np.float32)], [y])
        graph.add_output(y)
    builder.add_signature("serving_default", graph)
    interpreter = Interpreter(model_content=builder.build())
    with pytest.raises(ArenaLimitError, match=r"over the interpreter's arena limit of .*the largest: .*\(4\.0 GiB\)"):
        interpreter.allocate_tensors()


def test_resizing_an_input_past_the_limit_is_refused_at_allocate():
    interpreter = Interpreter(model_content=relu_model([1, 16]), experimental_arena_limit_bytes=1 << 20)
    interpreter.allocate_tensors()
    interpreter.resize_tensor_input(0, [1, 1 << 20])
    with pytest.raises(ArenaLimitError, match="Smaller input shapes"):
        interpreter.allocate_tensors()


@pytest.mark.parametrize("limit", [-1, 1.5, "1"])
def test_the_arena_limit_must_be_a_non_negative_int(limit):
    with pytest.raises((ValueError, TypeError)):
        Interpreter(model_content=relu_model([1, 4]), experimental_arena_limit_bytes=limit)


def test_a_node_whose_output_is_its_own_input_is_refused_at_load():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 3], np.float32)
    graph.add_operator(B.RESHAPE, [x], [x], ReshapeParams(new_shape=[2, 3]))
    graph.add_output(x)
    builder.add_signature("serving_default", graph)
    with pytest.raises(ModelError, match=r"operator 0 \(RESHAPE v1\) output 0 is tensor 0, which is also its input 0"):
        Interpreter(model_content=builder.build())


def test_a_node_writing_one_tensor_twice_is_refused_at_load():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [4], np.float32)
    y = graph.add_tensor("y", [2], np.float32)
    graph.add_operator(B.SPLIT, [graph.add_constant("axis", np.array(0, np.int32)), x], [y, y])
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    with pytest.raises(ModelError, match="output 1 is tensor .*, which is also its output 0"):
        Interpreter(model_content=builder.build())


def test_reading_an_output_that_no_node_writes_says_so_not_to_allocate_tensors():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2], np.float32)
    y = graph.add_tensor("y", [2], np.float32)
    orphan = graph.add_tensor("orphan", [3], np.float32)
    graph.add_operator(B.RELU, [x], [y])
    graph.add_output(y)
    graph.add_output(orphan)
    builder.add_signature("serving_default", graph)
    interpreter = Interpreter(model_content=builder.build())
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.array([-1, 2], np.float32))
    interpreter.invoke()
    # LiteRT raises the same ValueError, with "Run allocate_tensors() first" as its advice
    with pytest.raises(ValueError, match=r"^Tensor data is null: no node of the model writes tensor 2 \('orphan'\)"):
        interpreter.get_tensor(orphan)
