"""The sub-byte types (INT4, INT2, UINT4: packed in files, one value an element in memory,
``schema.packed``) and BFLOAT16 (ml_dtypes' bfloat16): the reader, the builder and the
interpreter's ``set_tensor`` / details, as LiteRT shows them."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from interpreter import Interpreter
from oracle import litert_interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B
from schema.enums import TensorType as T
from schema.enums import value_dtype
from schema.errors import ModelError
from schema.model import Model
from schema.packed import pack, unpack

INT4_VALUES = np.array([1, -2, 7, -8, 3], np.int8)


def test_int4_packs_two_values_a_byte_first_value_in_the_low_nibble():
    assert pack(INT4_VALUES, T.INT4).tolist() == [0xE1, 0x87, 0x03]


def test_int2_packs_four_values_a_byte_first_value_in_the_lowest_bits():
    assert pack(np.array([1, -2, 0, -1, 1]), T.INT2).tolist() == [0b11_00_10_01, 0b01]


@pytest.mark.parametrize("tensor_type, low, high", [(T.INT4, -8, 7), (T.INT2, -2, 1), (T.UINT4, 0, 15)],
                         ids=["int4", "int2", "uint4"])
def test_unpack_inverts_pack_over_the_whole_range(tensor_type, low, high):
    values = np.arange(low, high + 1).repeat(3)
    assert unpack(pack(values, tensor_type), tensor_type, values.size).tolist() == values.tolist()
    assert unpack(pack(values, tensor_type), tensor_type, values.size).dtype == value_dtype(tensor_type)


def test_pack_refuses_a_value_outside_the_type():
    with pytest.raises(ValueError, match="INT4 data must be between -8 and 7"):
        pack(np.array([8]), T.INT4)


def int4_constant_model(values=INT4_VALUES) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    c = graph.add_constant("c", values, dtype=T.INT4)
    y = graph.add_tensor("y", [values.size], T.FLOAT32)
    graph.add_operator(B.CAST, [c], [y])
    graph.add_output(y)
    return builder.build()


def test_the_builder_writes_int4_constants_packed_and_the_reader_unpacks_them():
    model = Model.from_bytes(int4_constant_model())
    constant = model.subgraphs[0].tensors[0]
    assert constant.type == T.INT4 and constant.dtype == np.int8
    assert constant.data.tolist() == INT4_VALUES.tolist()


def test_litert_reads_the_builder_s_int4_constants_as_written():
    interpreter = litert_interpreter(int4_constant_model())
    interpreter.allocate_tensors()
    interpreter.invoke()
    assert interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).tolist() == INT4_VALUES.tolist()


def test_a_packed_buffer_of_the_wrong_size_is_a_malformed_model():
    from schema import schema_generated as fb
    from delegate_sdk.recipes.base import repack

    model = fb.ModelT.InitFromPackedBuf(int4_constant_model(), 0)
    model.buffers[model.subgraphs[0].tensors[0].buffer].data = np.zeros(5, np.uint8)  # 5 values need 3 bytes
    with pytest.raises(ModelError, match="INT4 \\(3 bytes packed\\) but its buffer holds 5 bytes"):
        Model.from_bytes(repack(model))


def int4_input_model() -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [3], T.INT4)
    y = graph.add_tensor("y", [3], T.FLOAT32)
    graph.add_operator(B.CAST, [x], [y])
    graph.add_output(y)
    return builder.build()


def test_an_int4_input_is_int8_in_the_details_as_in_litert():
    ours = Interpreter(model_content=int4_input_model()).get_input_details()[0]["dtype"]
    assert ours == litert_interpreter(int4_input_model()).get_input_details()[0]["dtype"] == np.int8


def test_set_tensor_refuses_int4_values_outside_minus_8_to_7_as_litert_does():
    for runtime in (Interpreter(model_content=int4_input_model()), litert_interpreter(int4_input_model())):
        runtime.allocate_tensors()
        with pytest.raises(ValueError, match="Values for INT4 input must be between -8 and 7"):
            runtime.set_tensor(runtime.get_input_details()[0]["index"], np.array([1, 8, 0], np.int8))


def test_bfloat16_values_are_ml_dtypes_bfloat16():
    assert value_dtype(T.BFLOAT16) == np.dtype(ml_dtypes.bfloat16)
    builder = ModelBuilder()
    graph = builder.subgraph()
    c = graph.add_constant("c", np.array([1.5, -2.0], ml_dtypes.bfloat16))
    assert graph.tensors[c].type == T.BFLOAT16
