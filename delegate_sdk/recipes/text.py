"""Recipes of the text-model ops of issue 32: EMBEDDING_LOOKUP (v1-v5),
EMBEDDING_LOOKUP_SPARSE, HASHTABLE_LOOKUP, LSH_PROJECTION, SKIP_GRAM and the
HASHTABLE ops. Ids, coordinates, shapes, keys
and hash seeds are constants (valid for every input the kit draws); tables, weights and
the values hashed or looked up are graph inputs."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from delegate_sdk.recipes.base import F32, I8, I32, STR, B, Graph, Kind, Recipe, hand_stamped
from schema.enums import TensorType
from schema.builder import quantization

FAMILY = "text"

UNBUILDABLE = {
    (B.EMBEDDING_LOOKUP, 2): "TFLite's rule gives EMBEDDING_LOOKUP v1 (v4 per-channel or int4, v5 int2); v2 and v3 "
                             "were stamped by TOCO-era converters and run the same kernel: the float32 recipe, "
                             "stamped v2 by hand",
    (B.EMBEDDING_LOOKUP, 3): "TFLite's rule gives EMBEDDING_LOOKUP v1 (v4 per-channel or int4, v5 int2); v2 and v3 "
                             "were stamped by TOCO-era converters and run the same kernel: the hybrid int8 recipe, "
                             "stamped v3 by hand",
}

U8 = Kind("uint8", TensorType.UINT8)
#: Per-row scales of the per-channel table (four rows).
ROW_SCALES = (0.5, 0.25, 0.125, 2.0)


def embedding_lookup(table: Kind, out: Kind) -> bytes:
    """Rows [2, 0, 3] of a [4, 3] table given at run time."""
    m = Graph()
    ids = m.i32("ids", [2, 0, 3])
    values = m.input("table", (4, 3), table)
    y = m.tensor("y", (3, 3), out)
    m.op(B.EMBEDDING_LOOKUP, [ids, values], [y])
    return m.build(y)


def embedding_lookup_int2() -> bytes:
    """Rows [2, 0, 3] of a [4, 4] int2 table, a constant (LiteRT's set_tensor refuses int2)."""
    m = Graph()
    ids = m.i32("ids", [2, 0, 3])
    values = m.const("table", (4, 4), Kind("int2 hybrid table", TensorType.INT2, quantization(0.5, 0)))
    y = m.tensor("y", (3, 4), F32)
    m.op(B.EMBEDDING_LOOKUP, [ids, values], [y])
    return m.build(y)


def embedding_lookup_sparse() -> bytes:
    """Five weighted ids in three buckets of a [3, 4] sparse tensor (one empty), MEAN of a [5, 2] table."""
    m = Graph()
    ids = m.i32("ids", [1, 3, 0, 4, 2])
    indices = m.i32("indices", [[0, 0], [0, 2], [2, 0], [2, 1], [2, 3]])
    dense_shape = m.i32("dense_shape", [3, 4])
    weights = m.input("weights", (5,), F32)
    table = m.input("table", (5, 2), F32)
    y = m.tensor("y", (3, 2), F32)
    m.op(B.EMBEDDING_LOOKUP_SPARSE, [ids, indices, dense_shape, weights, table], [y], combiner=1)
    return m.build(y)


def hashtable_lookup() -> bytes:
    """Drawn int32 keys looked up among six sorted constant keys; float32 [6, 2] values given at run time."""
    m = Graph()
    lookup = m.input("lookup", (5,), I32)
    keys = m.i32("keys", [-50, -3, 0, 7, 20, 99])
    values = m.input("values", (6, 2), F32)
    found, hits = m.tensor("found", (5, 2), F32), m.tensor("hits", (5,), U8)
    m.op(B.HASHTABLE_LOOKUP, [lookup, keys, values], [found, hits])
    return m.build(found, hits)


def lsh_projection() -> bytes:
    """SPARSE projection of a drawn int32 [5] input, weighted, by 3 hash functions of 4 bits."""
    m = Graph()
    seeds = m.g.add_constant("hash", np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4))
    x, weight = m.input("x", (5,), I32), m.input("weight", (5,), F32)
    y = m.tensor("y", (3,), I32)
    m.op(B.LSH_PROJECTION, [seeds, x, weight], [y], type=1)
    return m.build(y)


SENTENCES = (b"the quick brown fox jumps", b"a b c d", b"one  two\tthree four five six", b"tiny text")


def skip_gram() -> bytes:
    """Bigrams with one skip of the sentence a drawn int32 picks (FLOOR_MOD 4, then GATHER
    from four constant sentences: every draw gives words); SKIP_GRAM is node 2."""
    m = Graph()
    x = m.input("x", (1,), I32)
    index = m.tensor("index", (1,), I32)
    m.op(B.FLOOR_MOD, [x, m.i32("four", [4])], [index])
    sentences = m.g.add_constant("sentences", np.array(SENTENCES, dtype=object))
    sentence = m.tensor("sentence", (1,), STR)
    m.op(B.GATHER, [sentences, index], [sentence], axis=0)
    grams = m.g.add_tensor("grams", [1], TensorType.STRING, shape_signature=[-1])
    m.op(B.SKIP_GRAM, [sentence], [grams], ngram_size=2, max_skip_size=1, include_all_ngrams=False)
    return m.build(grams)


#: A STRING -> INT64 table ("apple" twice: the first value stays) and its lookups.
TABLE_KEYS = np.array([b"apple", b"pear", b"fig", b"apple", "caf\u00e9".encode()], dtype=object)
TABLE_VALUES = np.array([1, 2, 3, 4, 5], np.int64)


def hashtable_model(keys: np.ndarray = TABLE_KEYS, values: np.ndarray = TABLE_VALUES, default=-1,
                    query_shape=(3,), *, table_id: int = 1, find_before_import: bool = False,
                    values_as_input: bool = False, call_once: bool = False) -> bytes:
    """``found = HASHTABLE_FIND(table, query, default)``, ``size = HASHTABLE_SIZE(table)``
    after ``HASHTABLE_IMPORT(table, keys, values)``. Nodes: HASHTABLE 0, IMPORT 1, FIND 2,
    SIZE 3; ``find_before_import`` swaps IMPORT and FIND; ``call_once`` imports in an init
    subgraph run by CALL_ONCE (as the converter writes it: main is CALL_ONCE 0, HASHTABLE 1,
    FIND 2, SIZE 3). ``values_as_input``: the values are a graph input after the query."""
    from schema.enums import TensorType as T
    from schema.params import CallOnceParams, HashtableParams

    key_type = T.STRING if keys.dtype == object else T.INT64
    value_type = T.STRING if values.dtype == object else T.INT64
    options = HashtableParams(table_id=table_id, key_dtype=key_type, value_dtype=value_type)
    builder = Graph()
    m = builder.g
    query = m.add_input("query", list(query_shape), key_type)

    def table(graph):
        handle = graph.add_tensor("table", [1], T.RESOURCE)
        graph.add_operator(B.HASHTABLE, [], [handle], options)
        return handle

    def import_into(graph, handle, values_tensor):
        graph.add_operator(B.HASHTABLE_IMPORT, [handle, graph.add_constant("keys", keys), values_tensor], [])

    values_tensor = (m.add_input("values", list(values.shape), value_type) if values_as_input
                     else m.add_constant("values", values))
    if call_once:
        m.add_operator(B.CALL_ONCE, [], [], CallOnceParams(init_subgraph_index=1))
    handle = table(m)
    if not call_once and not find_before_import:
        import_into(m, handle, values_tensor)
    found = m.add_tensor("found", list(query_shape), value_type)
    fallback = np.array([default], dtype=object if value_type == T.STRING else np.int64)
    m.add_operator(B.HASHTABLE_FIND, [handle, query, m.add_constant("default", fallback)], [found])
    if find_before_import:
        import_into(m, handle, values_tensor)
    size = m.add_tensor("size", [1], T.INT64)
    m.add_operator(B.HASHTABLE_SIZE, [handle], [size])
    if call_once:
        init = builder.builder.subgraph("init")
        import_into(init, table(init), init.add_constant("values", values))
    return builder.build(found, size)


def recipes() -> Iterator[Recipe]:
    def r(op, version, description, build, **fields):
        return Recipe(op, version, build, description, FAMILY, **fields)

    hybrid = Kind("int8 hybrid table", I8.type, quantization(0.5, 0))
    per_channel = Kind("int8 per-channel table", I8.type, quantization(np.array(ROW_SCALES), 0))
    yield r(B.EMBEDDING_LOOKUP, 1, "float32 table", lambda: embedding_lookup(F32, F32))
    yield r(B.EMBEDDING_LOOKUP, 2, "float32 table (stamped v2 by hand)",
            hand_stamped(lambda: embedding_lookup(F32, F32), 2), hand_stamped=UNBUILDABLE[(B.EMBEDDING_LOOKUP, 2)])
    yield r(B.EMBEDDING_LOOKUP, 3, "int8 table, scale 0.5 -> float32 (stamped v3 by hand)",
            hand_stamped(lambda: embedding_lookup(hybrid, F32), 3), hand_stamped=UNBUILDABLE[(B.EMBEDDING_LOOKUP, 3)])
    yield r(B.EMBEDDING_LOOKUP, 4, "int8 table, a scale per row -> float32", lambda: embedding_lookup(per_channel, F32))
    yield r(B.EMBEDDING_LOOKUP, 5, "int2 constant table, rows of 4 values (whole bytes) -> float32", embedding_lookup_int2)
    yield r(B.EMBEDDING_LOOKUP_SPARSE, 1, "float32, MEAN of weighted ids in a [3, 4] sparse tensor",
            embedding_lookup_sparse)
    yield r(B.HASHTABLE_LOOKUP, 1, "int32 keys, float32 [6, 2] values and uint8 hits", hashtable_lookup)
    table = "HASHTABLE, HASHTABLE_IMPORT, HASHTABLE_FIND, HASHTABLE_SIZE of a STRING -> INT64 table"
    for subject, op in enumerate((B.HASHTABLE, B.HASHTABLE_IMPORT, B.HASHTABLE_FIND, B.HASHTABLE_SIZE)):
        yield r(op, 1, table, hashtable_model, subject=subject)
    yield r(B.SKIP_GRAM, 1, "bigrams with one skip of a string picked from four sentences", skip_gram, subject=2)
    yield r(B.LSH_PROJECTION, 1, "SPARSE, int32 input weighted, 3 hash functions of 4 bits", lsh_projection)
