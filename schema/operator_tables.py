"""A subgraph's operator table read in bulk: numpy over every operator at once.

The operator-table twin of ``schema.tensor_tables``: the fixed-size fields of every
operator (its vtable, opcode index, the positions and lengths of its inputs, outputs
and intermediates vectors, and the type and table of its builtin options) are gathered
by a few numpy calls over the file's bytes, and the indices checked the same way
(opcode index against the operator code table, tensor indices against the tensor
table); what is left per operator is what makes Python objects (the index tuples, the
options' params, the ``Operator``).

The rules are ``schema.model``'s own, and so are its errors: wherever anything is out
of the ordinary (a read outside the file, a failed check, options that cannot be
parsed) this returns None and the table-by-table reader reads the
subgraph's operators again, raising its own error at the first operator that has one.
"""

from __future__ import annotations

import numpy as np

from schema.tensor_tables import _fields, _gather, _int32_vectors, _vectors

#: Operator tables read one by one below this many operators (the bulk reads' fixed cost).
BULK_MIN_OPERATORS = 16
#: The operator table's fields read here (slots 0..12: up to builtin_options_2).
_FIELD_COUNT = 13


def operator_fields(data: bytes, positions: list[int]) -> np.ndarray | None:
    """The offsets of every operator's first fields (``[13, n]``), or None where the
    table-by-table reader must read them (too few operators, or a vtable outside the
    file: its views then raise the error)."""
    if len(positions) < BULK_MIN_OPERATORS:
        return None
    try:
        return _fields(np.frombuffer(data, np.uint8), np.asarray(positions, np.int64), _FIELD_COUNT)
    except IndexError:
        return None


def read_operators(reader, positions: list[int], slots: np.ndarray, subgraph_where: str, num_tensors: int,
                   operator_codes) -> tuple | None:
    """The operators at ``positions`` (their fields' offsets ``slots``, from
    ``operator_fields``) as ``schema.model.Operator``s, or None where the table-by-table
    reader must decide (see the module notes)."""
    from schema import model
    from schema.option_parsers import SECOND_UNION_OPS, parse_builtin_options_at

    data = reader.data
    file_bytes = np.frombuffer(data, np.uint8)
    count = len(positions)
    try:
        tables = np.asarray(positions, np.int64)
        (opcode_at, inputs_at, outputs_at, options_type_at, options_at, _, _, _, intermediates_at,
         _, _, options_2_type_at, options_2_at) = slots
        opcodes = np.where(opcode_at > 0, _gather(file_bytes, tables + opcode_at, 4, "<u4"), 0)
        if int(opcodes.max()) >= len(operator_codes):
            return None
        _, input_starts, input_counts = _vectors(file_bytes, tables, inputs_at, 4)
        _, output_starts, output_counts = _vectors(file_bytes, tables, outputs_at, 4)
        _, intermediate_starts, intermediate_counts = _vectors(file_bytes, tables, intermediates_at, 4)
        inputs, input_firsts = _int32_vectors(file_bytes, input_starts, input_counts)
        outputs, output_firsts = _int32_vectors(file_bytes, output_starts, output_counts)
        intermediates, intermediate_firsts = _int32_vectors(file_bytes, intermediate_starts, intermediate_counts)
        if (inputs and (min(inputs) < -1 or max(inputs) >= num_tensors)) or (
            outputs and (min(outputs) < 0 or max(outputs) >= num_tensors)
        ) or (intermediates and (min(intermediates) < 0 or max(intermediates) >= num_tensors)):
            return None
        # The first union's type byte and table position (the second's, for the few ops
        # that use it, are read per operator below).
        option_types = np.where(options_type_at > 0, file_bytes[tables + options_type_at], 0)
        has_options = (option_types > 0) & (options_at > 0)
        at = tables + options_at
        option_positions = np.where(has_options, at + _gather(file_bytes, np.where(has_options, at, 0), 4, "<u4"), -1)
    except IndexError:
        return None

    codes = [operator_codes[i] for i in opcodes.tolist()]
    new_operator, custom, builtin_codes = model._new_operator, int(model.BuiltinOperator.CUSTOM), model._BUILTIN_CODES
    operators = []
    rows = zip(
        positions, codes, input_firsts.tolist(), input_counts.tolist(), output_firsts.tolist(), output_counts.tolist(),
        intermediate_firsts.tolist(), intermediate_counts.tolist(), option_types.tolist(), option_positions.tolist(),
        opcodes.tolist(),
    )
    try:
        for index, row in enumerate(rows):
            (pos, code, input_first, input_count, output_first, output_count, intermediate_first, intermediate_count,
             option_type, option_position, opcode_index) = row
            node_inputs = tuple(inputs[input_first : input_first + input_count])
            node_outputs = tuple(outputs[output_first : output_first + output_count])
            node_intermediates = (
                tuple(intermediates[intermediate_first : intermediate_first + intermediate_count]) if intermediate_count else ()
            )
            if output_count > 1 or (output_count and input_count):
                if len(set(node_outputs)) != output_count or not set(node_outputs).isdisjoint(node_inputs):
                    return None
            builtin_code = code.builtin_code
            custom_options = params = None
            if builtin_code == custom:
                custom_options = reader.read_custom_options(model.TableView(data, pos), subgraph_where)
            elif builtin_code in builtin_codes:
                if builtin_code in SECOND_UNION_OPS:
                    type_at, table_at = int(options_2_type_at[index]), int(options_2_at[index])
                    option_type = data[pos + type_at] if type_at else 0
                    option_position = model.table_position_at(data, pos + table_at) if option_type and table_at else -1
                params = parse_builtin_options_at(
                    builtin_code, option_type, data, option_position if option_position >= 0 else None
                )
            operators.append(new_operator(index, opcode_index, builtin_code, code.custom_name, code.version, node_inputs,
                                          node_outputs, node_intermediates, params, custom_options))
    except (model.ModelError, *model._LOW_LEVEL_ERRORS):
        return None  # (the table-by-table reader raises it, at the first operator that has it)
    return tuple(operators)
