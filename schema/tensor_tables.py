"""A subgraph's tensor table read in bulk: numpy over every tensor at once.

``schema.model`` reads a tensor table by table, one ``struct`` read per field: some 10 us
a tensor in Python, most of a model's load time for the hundreds of tensors of a
MediaPipe model. Here the fixed-size fields (the vtable, type, buffer index, the flags,
the positions and lengths of the name, shape and shape signature vectors, the shapes'
and signatures' values) of every tensor are gathered by a few numpy calls over the
file's bytes, and checked the same way (rank, negative dimensions, the signature's
length and values, the buffer index); what is left per tensor is what makes Python
objects (the name, the shape tuple, the constant's view, the quantization and sparsity
tables, which few tensors have).

The rules are ``schema.model``'s own, and so are its errors: wherever anything is out of
the ordinary (a read outside the file, a failed check, a tensor type the size table
does not know) this returns None and the table-by-table reader reads the subgraph's
tensors again, raising its own error at the first tensor that has one.
"""

from __future__ import annotations

import math

import numpy as np

#: Tensor tables read one by one below this many tensors (the bulk reads' fixed cost).
BULK_MIN_TENSORS = 16

_OFFSETS = np.arange(32, dtype=np.int64)  # (the widest read: 16 vtable slots)


def _gather(file_bytes: np.ndarray, positions: np.ndarray, width: int, dtype: str) -> np.ndarray:
    """The little-endian ``dtype`` values of ``width`` bytes at each position (IndexError
    where one would read outside the file)."""
    return file_bytes[positions[:, None] + _OFFSETS[:width]].view(dtype).reshape(-1)


def _fields(file_bytes: np.ndarray, tables: np.ndarray, count: int) -> np.ndarray:
    """The offsets of the first ``count`` fields of each table (0: absent), ``[count, n]``."""
    vtables = tables - _gather(file_bytes, tables, 4, "<i4")
    if vtables.size and vtables.min() < 0:
        raise IndexError("a vtable lies before the file")
    present = (_gather(file_bytes, vtables, 2, "<u2").astype(np.int64) - 4) >> 1
    if vtables.size and (vtables + 4 + 2 * np.maximum(present, 0)).max() > file_bytes.size:
        raise IndexError("a vtable runs past the end of the file")  # (as TableView reads all its slots)
    slots = _gather(file_bytes, vtables + 4, 2 * count, "<u2").reshape(-1, count).astype(np.int64)
    slots[np.arange(count) >= present[:, None]] = 0  # (fields past the vtable's end: absent)
    return slots.T


def _vectors(file_bytes: np.ndarray, positions: np.ndarray, field: np.ndarray, element: int):
    """(present, first element position, length) of the vector field at ``field`` of each
    table (``field`` 0: absent; its position and length are then 0)."""
    present = field > 0
    at = positions + field
    start = at + np.where(present, _gather(file_bytes, at, 4, "<u4"), 0)
    length = np.where(present, _gather(file_bytes, start, 4, "<u4"), 0).astype(np.int64)
    if np.any(start + 4 + length * element > file_bytes.size):
        raise IndexError("a vector runs past the end of the file")
    return present, start + 4, length


def _int32_vectors(file_bytes: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[list[int], np.ndarray]:
    """Every int32 vector's values, flat (a list), and where each vector starts in it."""
    total = int(lengths.sum())
    firsts = np.cumsum(lengths) - lengths
    if not total:
        return [], firsts
    element = np.arange(total, dtype=np.int64) - np.repeat(firsts, lengths)
    values = _gather(file_bytes, np.repeat(starts, lengths) + 4 * element, 4, "<i4")
    return values.tolist(), firsts


def _vector_values(file_bytes: np.ndarray, starts: np.ndarray, lengths: np.ndarray, dtype: str) -> tuple[np.ndarray, list[int]]:
    """Every vector's ``dtype`` values, flat (one new array), and where each starts in it."""
    width = np.dtype(dtype).itemsize
    total = int(lengths.sum())
    firsts = np.cumsum(lengths) - lengths
    if not total:
        return np.zeros(0, dtype), firsts.tolist()
    element = np.arange(total, dtype=np.int64) - np.repeat(firsts, lengths)
    return _gather(file_bytes, np.repeat(starts, lengths) + width * element, width, dtype).astype(dtype[1:]), firsts.tolist()


def _read_quantizations(file_bytes: np.ndarray, tables: np.ndarray) -> tuple[list, bool] | None:
    """The ``Quantization`` of each quantization table at ``tables`` (None for a table
    that sets none of min, scale and zero point), read as ``read_quantization`` reads it
    (its arrays slices of one array per field, each slice a tensor's own), and whether
    every scale is finite and positive and every zero point an int32 (then of
    ``check_quantization``'s checks only the per-channel dimension's is left to make);
    None where it would raise (IndexError where a read leaves the file)."""
    from schema import model

    minimum_at, maximum_at, scale_at, zero_point_at, _, _, dimension_at = _fields(file_bytes, tables, 7)
    has_min, min_starts, min_counts = _vectors(file_bytes, tables, minimum_at, 4)
    has_max, max_starts, max_counts = _vectors(file_bytes, tables, maximum_at, 4)
    has_scale, scale_starts, scale_counts = _vectors(file_bytes, tables, scale_at, 4)
    _, zero_point_starts, zero_point_counts = _vectors(file_bytes, tables, zero_point_at, 8)
    dimensions = np.where(dimension_at > 0, _gather(file_bytes, tables + dimension_at, 4, "<i4"), 0)
    if np.any((zero_point_counts > 0) & (zero_point_counts != scale_counts)):
        return None  # (more or fewer zero points than scales: the table-by-table reader's error)
    scales, scale_firsts = _vector_values(file_bytes, scale_starts, scale_counts, "<f4")
    zero_points, zero_point_firsts = _vector_values(file_bytes, zero_point_starts, zero_point_counts, "<i8")
    minimums, min_firsts = _vector_values(file_bytes, min_starts, min_counts, "<f4")
    maximums, max_firsts = _vector_values(file_bytes, max_starts, max_counts, "<f4")
    low, high = model._INT32_RANGE
    plain = bool(np.all(np.isfinite(scales)) and np.all(scales > 0)) and (
        not zero_points.size or (int(zero_points.min()) >= low and int(zero_points.max()) <= high)
    )
    new_quantization, empty_floats, results = model._new_quantization, model._EMPTY_FLOATS, []
    rows = zip(
        has_scale.tolist(), scale_firsts, scale_counts.tolist(), zero_point_firsts, zero_point_counts.tolist(),
        has_min.tolist(), min_firsts, min_counts.tolist(), has_max.tolist(), max_firsts, max_counts.tolist(),
        dimensions.tolist(),
    )
    for (has_scale_, scale_first, scale_count, zero_point_first, zero_point_count, has_min_, min_first, min_count,
         has_max_, max_first, max_count, dimension) in rows:
        if not (scale_count or zero_point_count or min_count):
            results.append(None)
            continue
        scale = scales[scale_first : scale_first + scale_count] if has_scale_ else empty_floats
        zero_point = (
            zero_points[zero_point_first : zero_point_first + zero_point_count]
            if zero_point_count
            else np.zeros(scale_count, np.int64)
        )
        minimum = minimums[min_first : min_first + min_count] if has_min_ and min_count else None
        maximum = maximums[max_first : max_first + max_count] if has_max_ and max_count else None
        results.append(new_quantization(scale, zero_point, dimension, minimum, maximum))
    return results, plain


def read_tensors(reader, positions: list[int], subgraph_where: str) -> tuple | None:
    """The tensors at ``positions`` (their tables' positions) as ``schema.model.Tensor``s,
    or None where the table-by-table reader must decide (see the module notes)."""
    from schema import model

    count = len(positions)
    if count < BULK_MIN_TENSORS:
        return None
    data = reader.data
    file_bytes = np.frombuffer(data, np.uint8)
    try:
        tables = np.asarray(positions, np.int64)
        if tables.min() < 0:
            return None
        slots = _fields(file_bytes, tables, 9)
        shape_at, type_at, buffer_at, name_at, quantization_at, variable_at, sparsity_at, signature_at, rank_at = slots
        types = np.where(type_at > 0, file_bytes[tables + type_at].view(np.int8), 0).tolist()
        buffers = np.where(buffer_at > 0, _gather(file_bytes, tables + buffer_at, 4, "<u4"), 0)
        variables = ((variable_at > 0) & (file_bytes[tables + variable_at] != 0)).tolist()
        ranked = ((rank_at > 0) & (file_bytes[tables + rank_at] != 0)).tolist()
        named, name_starts, name_lengths = _vectors(file_bytes, tables, name_at, 1)
        _, shape_starts, ranks = _vectors(file_bytes, tables, shape_at, 4)
        signed, signature_starts, signature_ranks = _vectors(file_bytes, tables, signature_at, 4)
        if ranks.max() > model.MAX_RANK or int(buffers.max()) >= max(reader.num_buffers, 1):
            return None
        if np.any(signed & (signature_ranks != ranks)):
            return None
        dims, dim_firsts = _int32_vectors(file_bytes, shape_starts, ranks)
        signature_values, signature_firsts = _int32_vectors(file_bytes, signature_starts, np.where(signed, signature_ranks, 0))
        if (dims and min(dims) < 0) or (signature_values and min(signature_values) < -1):
            return None
        # Each tensor's buffer: (has a data vector, where its bytes start, how many); a
        # buffer kept after the flatbuffer (offset > 1) is read by ``read_buffer``.
        if reader.num_buffers:
            entries = reader.buffers_start + 4 * buffers
            buffer_tables = entries + _gather(file_bytes, entries, 4, "<u4")
            data_at, offset_at, _ = _fields(file_bytes, buffer_tables, 3)
            outside = (offset_at > 0) & (_gather(file_bytes, buffer_tables + offset_at, 8, "<u8") > 1)
            has_bytes, byte_starts, byte_counts = _vectors(file_bytes, buffer_tables, data_at, 1)
        else:
            outside = has_bytes = np.zeros(count, bool)
            byte_starts = byte_counts = np.zeros(count, np.int64)
        # Each quantization table read now (None: none, or what the table-by-table
        # reader must refuse).
        quantized = quantization_at > 0
        quantizations, plain_quantizations = [None] * count, True
        if quantized.any():
            quantized_tables = (tables + quantization_at)[quantized]
            quantized_tables += _gather(file_bytes, quantized_tables, 4, "<u4")
            read = _read_quantizations(file_bytes, quantized_tables)
            if read is None:
                return None
            read, plain_quantizations = read
            for index, quantization in zip(np.flatnonzero(quantized).tolist(), read):
                quantizations[index] = quantization
    except IndexError:
        return None

    itemsizes, plain_dtypes, new_tensor, tensors = model._ITEMSIZE_OF_TYPE, model._PLAIN_DTYPE_OF_TYPE, model._new_tensor, []
    buffers = buffers.tolist()
    sparse = (sparsity_at > 0).tolist()
    rows = zip(
        positions, types, buffers, named.tolist(), name_starts.tolist(), name_lengths.tolist(), ranks.tolist(),
        dim_firsts.tolist(), signed.tolist(), signature_firsts.tolist(), variables, ranked, quantizations, sparse,
        outside.tolist(), has_bytes.tolist(), byte_starts.tolist(), byte_counts.tolist(),
    )
    try:
        for index, row in enumerate(rows):
            (pos, tensor_type, buffer_index, has_name, name_start, name_length, rank, first, has_signature,
             signature_first, is_variable, has_rank, quantization, has_sparsity, elsewhere, has_raw, raw_start,
             raw_count) = row
            name = data[name_start : name_start + name_length].decode("utf-8", errors="replace") if has_name else ""
            shape = tuple(dims[first : first + rank])
            shape_signature = tuple(signature_values[signature_first : signature_first + rank]) if has_signature else None
            itemsize = itemsizes.get(tensor_type)
            elements = math.prod(shape)
            if itemsize is None or elements * itemsize > model.MAX_TENSOR_BYTES:
                return None
            # (``where`` only names a failure, and any failure here hands the subgraph to
            # the table-by-table reader, which names it: no per-tensor string is made)
            sparsity = None
            if has_sparsity:
                sparsity = reader.read_sparsity(model.table_at(data, pos + int(slots[6, index])), subgraph_where)
            if quantization is not None:
                channels = quantization.scale.size
                if not plain_quantizations or (channels > 1 and not (
                    0 <= quantization.quantized_dimension < rank and shape[quantization.quantized_dimension] == channels
                )):
                    model.check_quantization(quantization, tensor_type, shape, subgraph_where)
            constant = None
            if elsewhere:
                raw = reader.read_buffer(buffer_index, subgraph_where)
            else:
                raw = file_bytes[raw_start : raw_start + raw_count] if has_raw else None
            if raw is not None and (raw.size > 0 or sparsity is not None):
                # (the common case of ``constant_data``: a dense constant of the size its
                # shape needs, aligned; anything else is its)
                dtype = plain_dtypes.get(tensor_type)
                if sparsity is None and dtype is not None and raw.size == elements * dtype.itemsize:
                    constant = raw.view(dtype)
                    if constant.flags.aligned:
                        constant = constant.reshape(shape)
                        constant.flags.writeable = False
                    else:
                        constant = reader.constant_data(raw, tensor_type, shape, sparsity, subgraph_where)
                else:
                    constant = reader.constant_data(raw, tensor_type, shape, sparsity, subgraph_where)
            tensors.append(new_tensor(index, name, tensor_type, shape, shape_signature, buffer_index, constant,
                                      quantization, sparsity, is_variable, has_rank))
    except (model.ModelError, *model._LOW_LEVEL_ERRORS):
        return None  # (the table-by-table reader raises it, at the first tensor that has it)
    return tuple(tensors)
