"""HASHTABLE, HASHTABLE_IMPORT, HASHTABLE_FIND, HASHTABLE_SIZE against ai-edge-litert.

LiteRT's reference resolver (BUILTIN_REF) has no hash-table kernels: the oracle here is
its default kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES), which are its only ones. Tables of
both kinds (STRING -> INT64, INT64 -> STRING), repeated keys, keys of any shape, defaults,
the import running once, the converter's CALL_ONCE initializer, tables shared by id, and
the errors (finding before the import, types a table cannot hold)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_outputs_equal

from delegate_sdk.context import KernelError
from delegate_sdk.recipes.text import TABLE_KEYS, TABLE_VALUES, hashtable_model
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B
from schema.enums import TensorType as T
from schema.model import Model
from schema.params import HashtableParams, VarHandleParams

QUERY = np.array([b"fig", b"kiwi", b"apple"], dtype=object)
INT_KEYS = np.array([10, -3, 7, 10, 2**40], np.int64)
WORDS = np.array([b"ten", b"minus three", b"", b"again", b"big"], dtype=object)


def litert(model: bytes):
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    return LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)


def invoke_each(interpreter, feeds) -> list[list[np.ndarray]]:
    """Outputs after each invoke, one feed (a list of inputs) per invoke."""
    interpreter.allocate_tensors()
    results = []
    for inputs in feeds:
        for detail, value in zip(interpreter.get_input_details(), inputs):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        results.append([interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()])
    return results


def assert_matches_litert(model: bytes, *feeds) -> list[list[np.ndarray]]:
    ours = invoke_each(Interpreter(model_content=model), feeds)
    theirs = invoke_each(litert(model), feeds)
    for got, want in zip(ours, theirs):
        assert_outputs_equal(got, want)
    return ours


def test_a_string_to_int64_table_finds_its_values_and_the_default_like_litert():
    ours = assert_matches_litert(hashtable_model(), [QUERY])
    assert ours[0][0].tolist() == [3, -1, 1]  # "apple" keeps its first value
    assert ours[0][1].tolist() == [4]  # four distinct keys


def test_the_recipe_nodes_are_the_four_ops_at_version_1():
    operators = Model.from_bytes(hashtable_model()).subgraphs[0].operators
    assert [(op.builtin_code, op.version) for op in operators] == [
        (B.HASHTABLE, 1), (B.HASHTABLE_IMPORT, 1), (B.HASHTABLE_FIND, 1), (B.HASHTABLE_SIZE, 1)]


def test_an_int64_to_string_table_matches_litert():
    model = hashtable_model(INT_KEYS, WORDS, b"?", (4,))
    ours = assert_matches_litert(model, [np.array([7, 10, 11, 2**40], np.int64)])
    assert ours[0][0].tolist() == [b"", b"ten", b"?", b"big"]


def test_keys_of_rank_2_give_values_of_that_shape_like_litert():
    model = hashtable_model(query_shape=(2, 2))
    assert_matches_litert(model, [np.array([[b"pear", b""], ["caf\u00e9".encode(), b"Apple"]], dtype=object)])


def test_import_keys_and_values_of_rank_2_match_litert():
    model = hashtable_model(INT_KEYS[:4].reshape(2, 2), WORDS[:4].reshape(2, 2), b"-", (3,))
    assert_matches_litert(model, [np.array([-3, 10, 5], np.int64)])


def test_the_import_runs_once_later_values_are_ignored_like_litert():
    model = hashtable_model(values_as_input=True)
    first, second = TABLE_VALUES, TABLE_VALUES * 100
    ours = assert_matches_litert(model, [QUERY, first], [QUERY, second])
    assert ours[1][0].tolist() == ours[0][0].tolist() == [3, -1, 1]


def test_a_table_filled_by_the_call_once_initializer_matches_litert():
    ours = assert_matches_litert(hashtable_model(call_once=True), [QUERY], [QUERY[::-1].copy()])
    assert ours[1][0].tolist() == [1, -1, 3]


def test_tables_are_kept_across_invokes_and_allocations_like_litert():
    model = hashtable_model(call_once=True)
    results = []
    for interpreter in (Interpreter(model_content=model), litert(model)):
        invoke_each(interpreter, [[QUERY]])
        interpreter.resize_tensor_input(interpreter.get_input_details()[0]["index"], [1])
        results.append(invoke_each(interpreter, [[np.array([b"pear"], dtype=object)]])[0])
    assert_outputs_equal(*results)
    assert results[0][0].tolist() == [2]


def test_size_before_the_import_is_zero_like_litert():
    builder = ModelBuilder()
    graph = builder.subgraph()
    handle, size = graph.add_tensor("table", [1], T.RESOURCE), graph.add_tensor("size", [1], T.INT64)
    graph.add_operator(B.HASHTABLE, [], [handle], HashtableParams(table_id=3, key_dtype=T.STRING, value_dtype=T.INT64))
    graph.add_operator(B.HASHTABLE_SIZE, [handle], [size])
    graph.add_output(size)
    builder.add_signature("serving_default", graph)
    assert assert_matches_litert(builder.build(), [])[0][0].tolist() == [0]


def test_two_hashtable_nodes_with_one_id_share_the_table_like_litert():
    builder = ModelBuilder()
    graph = builder.subgraph()
    query = graph.add_input("query", [3], T.STRING)
    options = HashtableParams(table_id=9, key_dtype=T.STRING, value_dtype=T.INT64)
    first, second = graph.add_tensor("first", [1], T.RESOURCE), graph.add_tensor("second", [1], T.RESOURCE)
    graph.add_operator(B.HASHTABLE, [], [first], options)
    graph.add_operator(B.HASHTABLE_IMPORT, [first, graph.add_constant("k", TABLE_KEYS), graph.add_constant("v", TABLE_VALUES)], [])
    graph.add_operator(B.HASHTABLE, [], [second], options)
    found = graph.add_tensor("found", [3], T.INT64)
    graph.add_operator(B.HASHTABLE_FIND, [second, query, graph.add_constant("d", np.array([0], np.int64))], [found])
    graph.add_output(found)
    builder.add_signature("serving_default", graph)
    assert assert_matches_litert(builder.build(), [QUERY])[0][0].tolist() == [3, 0, 1]


def test_finding_before_the_import_fails_in_both_runtimes():
    model = hashtable_model(find_before_import=True)
    with pytest.raises(RuntimeError, match="hashtable need to be initialized"):
        invoke_each(litert(model), [[QUERY]])
    with pytest.raises(KernelError, match=r"node 1 \(HASHTABLE_FIND v1\).*HASHTABLE_IMPORT must run before it"):
        invoke_each(Interpreter(model_content=model), [[QUERY]])


def refused(model) -> str:
    with pytest.raises(KernelError) as error:
        Interpreter(model_content=model).allocate_tensors()
    return str(error.value)


def test_a_table_of_int64_to_int64_is_refused_as_in_litert():
    model = hashtable_model(INT_KEYS, INT_KEYS, 0, (2,))
    assert "HASHTABLE v1: the options give keys INT64 and values INT64" in refused(model)


def test_keys_and_values_of_other_shapes_are_refused_as_in_litert():
    model = hashtable_model(TABLE_KEYS[:4], TABLE_VALUES[:4].reshape(2, 2))
    assert "HASHTABLE_IMPORT v1: keys [4] and values [2, 2] must have the same shape" in refused(model)


def test_an_id_of_a_resource_variable_is_refused_for_a_table():
    builder = ModelBuilder()
    graph = builder.subgraph()
    variable, table = graph.add_tensor("variable", [], T.RESOURCE), graph.add_tensor("table", [1], T.RESOURCE)
    graph.add_operator(B.VAR_HANDLE, [], [variable], VarHandleParams(shared_name="v"))  # resource id 0
    graph.add_operator(B.ASSIGN_VARIABLE, [variable, graph.add_constant("x", np.ones(2, np.float32))], [])
    graph.add_operator(B.HASHTABLE, [], [table], HashtableParams(table_id=0, key_dtype=T.STRING, value_dtype=T.INT64))
    size = graph.add_tensor("size", [1], T.INT64)
    graph.add_operator(B.HASHTABLE_SIZE, [table], [size])
    graph.add_output(size)
    builder.add_signature("serving_default", graph)
    with pytest.raises(KernelError, match="resource id 0 is a resource variable's, not a hash table's"):
        invoke_each(Interpreter(model_content=builder.build()), [[]])
