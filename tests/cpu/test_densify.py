"""DENSIFY (sparse constant weights -> dense) against ai-edge-litert.

The builder writes dense constants only, so these tests encode a dense array in
TFLite's sparse format themselves (``encode_sparse``, the rules of TFLite's
``FormatConverter::DenseToSparse``) and patch the tensor's buffer and sparsity
into the built model. LiteRT decoding the patched model back to the original
array checks the encoder; our output matching LiteRT's checks the kernel.
"""

from __future__ import annotations

import flatbuffers
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_matches_litert, run_litert

from delegate_sdk.context import KernelError
from delegate_sdk.tensor import Allocation
from interpreter import Interpreter
from schema import schema_generated as fb
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator
from schema.model import FILE_IDENTIFIER, Model

DENSE, CSR = 0, 1


def encode_sparse(dense: np.ndarray, traversal_order, formats, block_map=(), block_size=()):
    """``dense`` in TFLite's sparse format: (values, dim_metadata list of dicts).

    ``formats[L]`` is the format of level L (the dimension ``traversal_order[L]``).
    A SPARSE_CSR level keeps a child only if its subtree holds a nonzero; a DENSE
    level keeps every child (as ``DenseToSparse`` does).
    """
    rank = dense.ndim
    # Expanded tensor: original dims (blocked) first, then the block dims.
    split_shape, axes_outer, axes_inner = [], [], []
    for dim, size in enumerate(dense.shape):
        if dim in block_map:
            b = block_size[list(block_map).index(dim)]
            axes_outer.append(len(split_shape))
            split_shape += [size // b, b]
            axes_inner.append((list(block_map).index(dim), len(split_shape) - 1))
        else:
            axes_outer.append(len(split_shape))
            split_shape.append(size)
    inner = [axis for _, axis in sorted(axes_inner)]
    expanded = dense.reshape(split_shape).transpose(axes_outer + inner)
    tree = expanded.transpose(traversal_order)
    depth = tree.ndim
    nonzero = tree != 0
    keep = np.ones((), dtype=bool)  # kept nodes at the previous level (shape of the prefix)
    metadata = []
    for level in range(depth):
        if formats[level] == DENSE:
            child_keep = np.broadcast_to(keep[..., None], tree.shape[: level + 1])
            metadata.append({"format": DENSE, "dense_size": tree.shape[level]})
        else:
            has_nonzero = nonzero.any(axis=tuple(range(level + 1, depth))) if level + 1 < depth else nonzero
            child_keep = keep[..., None] & has_nonzero
            rows = child_keep[keep].reshape(-1, tree.shape[level])
            counts = rows.sum(axis=1)
            metadata.append(
                {
                    "format": CSR,
                    "array_segments": np.concatenate([[0], np.cumsum(counts)]).astype(np.int32),
                    "array_indices": np.nonzero(rows)[1].astype(np.int32),
                }
            )
        keep = np.array(child_keep)
    return tree[keep], metadata


def sparse_model(dense: np.ndarray, traversal_order, formats, block_map=(), block_size=(), index_type="int32"):
    """A model with no inputs whose output is DENSIFY of ``dense`` stored sparse."""
    values, metadata = encode_sparse(dense, traversal_order, formats, block_map, block_size)
    builder = ModelBuilder()
    graph = builder.subgraph()
    w = graph.add_constant("w_sparse", np.zeros(dense.shape, dense.dtype))
    y = graph.add_tensor("dense", dense.shape, dense.dtype)
    graph.add_operator(BuiltinOperator.DENSIFY, [w], [y])
    graph.add_output(y)
    return patch_sparsity(builder.build(), "w_sparse", values, traversal_order, block_map, metadata, index_type)


def patch_sparsity(model_bytes, tensor_name, values, traversal_order, block_map, metadata, index_type="int32"):
    model = fb.ModelT.InitFromPackedBuf(model_bytes, 0)
    graph = model.subgraphs[0]
    tensor = next(t for t in graph.tensors if t.name.decode() == tensor_name)
    model.buffers[tensor.buffer].data = np.ascontiguousarray(values).view(np.uint8).ravel()
    vector_types = {
        "int32": (fb.SparseIndexVector.Int32Vector, fb.Int32VectorT, np.int32),
        "uint16": (fb.SparseIndexVector.Uint16Vector, fb.Uint16VectorT, np.uint16),
        "uint8": (fb.SparseIndexVector.Uint8Vector, fb.Uint8VectorT, np.uint8),
    }
    kind, vector_class, dtype = vector_types[index_type]
    sparsity = fb.SparsityParametersT()
    sparsity.traversalOrder = list(traversal_order)
    sparsity.blockMap = list(block_map)
    sparsity.dimMetadata = []
    for entry in metadata:
        dim = fb.DimensionMetadataT()
        dim.format = entry["format"]
        if entry["format"] == DENSE:
            dim.denseSize = int(entry["dense_size"])
        else:
            for field in ("array_segments", "array_indices"):
                vector = vector_class()
                vector.values = np.asarray(entry[field], dtype=dtype)
                if field == "array_segments":
                    dim.arraySegmentsType, dim.arraySegments = kind, vector
                else:
                    dim.arrayIndicesType, dim.arrayIndices = kind, vector
        sparsity.dimMetadata.append(dim)
    tensor.sparsity = sparsity
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=FILE_IDENTIFIER)
    return bytes(builder.Output())


def random_sparse(rng, shape, dtype, density=0.3):
    values = rng.uniform(-3, 3, size=shape) * (rng.uniform(size=shape) < density)
    if np.dtype(dtype).kind == "i":
        values = np.round(values * 20)
    return values.astype(dtype)


def check(dense, *layout, **kwargs):
    model = sparse_model(dense, *layout, **kwargs)
    np.testing.assert_array_equal(run_litert(model, [])[0], dense)  # the encoder is right
    (ours,) = assert_matches_litert(model, [])
    np.testing.assert_array_equal(ours, dense)
    return model


# -- formats ------------------------------------------------------------------------------------------------


def test_densify_stamps_version_1():
    model = sparse_model(np.eye(3, dtype=np.float32), [0, 1], [DENSE, CSR])
    assert Model.from_bytes(model).subgraphs[0].operators[0].version == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_densify_csr_matrix_matches_litert(dtype):
    dense = random_sparse(np.random.default_rng(1), (6, 9), dtype)
    check(dense, [0, 1], [DENSE, CSR])


def test_densify_column_major_traversal_matches_litert():
    dense = random_sparse(np.random.default_rng(2), (5, 7), np.float32)
    check(dense, [1, 0], [DENSE, CSR])


def test_densify_doubly_compressed_matrix_with_empty_rows_matches_litert():
    dense = np.zeros((6, 5), np.float32)
    dense[1, 3], dense[4, 0], dense[4, 4] = 1.5, -2.0, 3.25
    check(dense, [0, 1], [CSR, CSR])


def test_densify_all_zero_tensor_matches_litert():
    check(np.zeros((3, 4), np.float32), [0, 1], [DENSE, CSR])


def test_densify_block_sparse_1x4_matches_litert():
    # The layout TFLite's converter writes for sparse FULLY_CONNECTED weights:
    # rows dense, 1x4 blocks of columns compressed, each block stored dense.
    rng = np.random.default_rng(3)
    blocks = (rng.uniform(size=(4, 3)) < 0.4)[:, :, None] * rng.uniform(-1, 1, size=(4, 3, 4))
    dense = blocks.reshape(4, 12).astype(np.float32)
    check(dense, [0, 1, 2], [DENSE, CSR, DENSE], block_map=[1], block_size=[4])


def test_densify_2x2_blocks_of_a_3d_tensor_matches_litert():
    dense = random_sparse(np.random.default_rng(4), (3, 4, 6), np.float32, density=0.15)
    check(dense, [0, 1, 2, 3, 4], [DENSE, CSR, CSR, DENSE, DENSE], block_map=[1, 2], block_size=[2, 2])


def test_densify_blocks_traversed_in_swapped_order_match_litert():
    dense = random_sparse(np.random.default_rng(7), (4, 6), np.float32, density=0.5)
    check(dense, [0, 1, 3, 2], [DENSE, CSR, DENSE, DENSE], block_map=[0, 1], block_size=[2, 3])


@pytest.mark.parametrize("index_type", ["uint8", "uint16"])
def test_densify_narrow_index_vectors_match_litert(index_type):
    dense = random_sparse(np.random.default_rng(5), (4, 10), np.float32)
    check(dense, [0, 1], [DENSE, CSR], index_type=index_type)


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    data=st.data(),
)
def test_densify_any_traversal_and_formats_matches_litert(shape, data):
    rank = len(shape)
    order = data.draw(st.permutations(range(rank)))
    formats = data.draw(st.lists(st.sampled_from([DENSE, CSR]), min_size=rank, max_size=rank))
    seed = data.draw(st.integers(0, 2**16))
    dense = random_sparse(np.random.default_rng(seed), tuple(shape), np.float32, density=0.4)
    check(dense, list(order), formats)


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    data=st.data(),
)
def test_densify_positions_in_traversal_order_equal_the_tree_walk(shape, data):
    """The converter's usual layout (dimensions in their own order, no blocks) takes a
    shortcut (``_dense_positions_in_order``): the same flat positions as the general walk."""
    from types import SimpleNamespace

    from backends.cpu.kernels.densify import _dense_positions, _dense_positions_in_order

    rank = len(shape)
    formats = data.draw(st.lists(st.sampled_from([DENSE, CSR]), min_size=rank, max_size=rank))
    dense = random_sparse(np.random.default_rng(data.draw(st.integers(0, 2**16))), tuple(shape), np.float32, 0.4)
    _, metadata = encode_sparse(dense, list(range(rank)), formats)
    levels = [SimpleNamespace(format=m["format"], dense_size=m.get("dense_size", 0),
                              array_segments=m.get("array_segments"), array_indices=m.get("array_indices"))
              for m in metadata]
    sparsity = SimpleNamespace(traversal_order=list(range(rank)), block_map=[], dim_metadata=levels)
    fast = _dense_positions_in_order(sparsity, tuple(shape))
    assert fast is not None
    np.testing.assert_array_equal(fast, _dense_positions(sparsity, tuple(shape)))


# -- folding and errors ------------------------------------------------------------------------------------


def test_densify_is_folded_at_prepare():
    dense = random_sparse(np.random.default_rng(6), (4, 4), np.float32)
    interpreter = Interpreter(model_content=sparse_model(dense, [0, 1], [DENSE, CSR]))
    interpreter.allocate_tensors()
    output = interpreter._tensor(interpreter.get_output_details()[0]["index"])
    assert output.allocation is Allocation.PERSISTENT
    np.testing.assert_array_equal(output.data, dense)


def test_sparse_float16_weights_densified_then_dequantized_are_both_folded_and_match_litert():
    # The converter's layout for sparse fp16 weights: DENSIFY -> DEQUANTIZE -> consumer.
    dense = random_sparse(np.random.default_rng(8), (4, 8), np.float16)
    values, metadata = encode_sparse(dense, [0, 1], [DENSE, CSR])
    builder = ModelBuilder()
    graph = builder.subgraph()
    w = graph.add_constant("w_sparse", np.zeros(dense.shape, np.float16))
    w_dense = graph.add_tensor("w_dense", dense.shape, np.float16)
    y = graph.add_tensor("w_float", dense.shape)
    graph.add_operator(BuiltinOperator.DENSIFY, [w], [w_dense])
    graph.add_operator(BuiltinOperator.DEQUANTIZE, [w_dense], [y])
    graph.add_output(y)
    model = patch_sparsity(builder.build(), "w_sparse", values, [0, 1], [], metadata)
    (ours,) = assert_matches_litert(model, [], rtol=0, atol=0)
    np.testing.assert_array_equal(ours, dense.astype(np.float32))
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    assert interpreter._tensor(w_dense).allocation is Allocation.PERSISTENT
    assert interpreter._tensor(y).allocation is Allocation.PERSISTENT


def test_densify_of_a_dense_constant_fails_naming_the_op():
    builder = ModelBuilder()
    graph = builder.subgraph()
    w = graph.add_constant("w", np.ones((2, 2), np.float32))
    y = graph.add_tensor("y", [2, 2])
    graph.add_operator(BuiltinOperator.DENSIFY, [w], [y])
    graph.add_output(y)
    with pytest.raises(KernelError, match="DENSIFY.*no sparsity"):
        Interpreter(model_content=builder.build()).allocate_tensors()


def test_densify_with_segments_past_the_indices_fails_naming_the_op():
    dense = np.eye(3, dtype=np.float32)
    values, metadata = encode_sparse(dense, [0, 1], [DENSE, CSR])
    metadata[1]["array_segments"] = np.array([0, 1, 2, 9], np.int32)
    builder = ModelBuilder()
    graph = builder.subgraph()
    w = graph.add_constant("w_sparse", np.zeros((3, 3), np.float32))
    y = graph.add_tensor("y", [3, 3])
    graph.add_operator(BuiltinOperator.DENSIFY, [w], [y])
    graph.add_output(y)
    model = patch_sparsity(builder.build(), "w_sparse", values, [0, 1], [], metadata)
    with pytest.raises(KernelError, match="DENSIFY.*array_segments"):
        Interpreter(model_content=model).allocate_tensors()
