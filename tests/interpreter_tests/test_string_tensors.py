"""STRING tensors at the API: details, ``set_tensor``, ``get_tensor``, string constants.

Every behaviour LiteRT shows is checked on ai-edge-litert as well (``runtime`` runs each
test body on both), so the expectation is LiteRT's, not a guess. What LiteRT cannot be
asked (it crashes: ``get_tensor`` of a string tensor never written) or does differently
on purpose (a 0-d object array) is tested on this runtime alone and says so.
"""

from __future__ import annotations

import numpy as np
import pytest

from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B
from schema.enums import TensorType as T
from schema.errors import ModelError
from schema.model import Model, decode_string_tensor, encode_string_tensor, string_array


def _litert(model: bytes):
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    return LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)


RUNTIMES = {"litedelegate": lambda model: Interpreter(model_content=model), "litert": _litert}


@pytest.fixture(params=list(RUNTIMES))
def runtime(request):
    """A function making an interpreter of a model, ours or LiteRT's."""
    return RUNTIMES[request.param]


def reshape_model(shape, signature=None) -> bytes:
    """x (STRING) -> RESHAPE to the same shape -> y; tensor 0 is x, tensor 2 is y."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", list(shape), T.STRING, shape_signature=signature)
    new_shape = graph.add_constant("shape", np.array([-1] if signature else list(shape), np.int32).reshape(-1))
    y = graph.add_tensor("y", list(shape), T.STRING)
    graph.add_operator(B.RESHAPE, [x, new_shape], [y])
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


def run(interpreter, value, output: int = 2):
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, value)
    interpreter.invoke()
    return interpreter.get_tensor(output)


def assert_strings(got: np.ndarray, expected) -> None:
    expected = np.asarray(expected, dtype=object)
    assert got.dtype == np.object_, got.dtype
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert all(type(item) is bytes for item in got.reshape(-1).tolist()), got
    assert got.tolist() == expected.tolist()


# -- details --------------------------------------------------------------------------------------


def test_details_report_string_tensors_as_numpy_bytes(runtime):
    interpreter = runtime(reshape_model([3]))
    assert interpreter.get_input_details()[0]["dtype"] is np.bytes_
    assert interpreter.get_output_details()[0]["dtype"] is np.bytes_
    assert [d["dtype"] for d in interpreter.get_tensor_details()] == [np.bytes_, np.int32, np.bytes_]
    op = interpreter._get_ops_details()[0]
    assert op["operand_types"] == [np.bytes_, np.int32] and op["result_types"] == [np.bytes_]


def test_signature_runner_details_report_numpy_bytes(runtime):
    runner = runtime(reshape_model([2], signature=[-1])).get_signature_runner()
    assert runner.get_input_details()["x"]["dtype"] is np.bytes_
    assert runner.get_output_details()["y"]["dtype"] is np.bytes_


# -- set_tensor / get_tensor -----------------------------------------------------------------------

ACCEPTED = {
    # value given -> strings stored (and read back as an object array of bytes)
    "bytes array": (np.array([b"a", b"bb", b"\xff\x00c"]), [b"a", b"bb", b"\xff\x00c"]),
    "str array, UTF-8": (np.array(["x", "\u00e9", ""]), [b"x", b"\xc3\xa9", b""]),
    "object array keeps trailing NULs": (np.array([b"a\x00", b"\x00", b"\x00b"], dtype=object), [b"a\x00", b"\x00", b"\x00b"]),
    "bytes array drops numpy's NUL padding": (np.array([b"a\x00", b"\x00", b"\x00b"]), [b"a", b"", b"\x00b"]),
    "str array drops trailing NUL chars": (np.array(["a\x00", "\x00", "\x00b"]), [b"a", b"", b"\x00b"]),
    "object array of numpy scalars": (np.array([np.bytes_(b"x"), np.str_("y"), b"z"], dtype=object), [b"x", b"y", b"z"]),
    "object array of str": (np.array(["\u4e2d", "b", ""], dtype=object), [b"\xe4\xb8\xad", b"b", b""]),
    "non-contiguous view, in logical order": (np.array([b"a", b"b", b"c"])[::-1], [b"c", b"b", b"a"]),
    "wider itemsize than needed": (np.array([b"a", b"b", b"c"], dtype="S9"), [b"a", b"b", b"c"]),
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_set_tensor_takes_numpy_arrays_of_bytes_str_or_objects(runtime, case):
    value, expected = ACCEPTED[case]
    interpreter = runtime(reshape_model([3]))
    assert_strings(run(interpreter, value), expected)
    assert_strings(interpreter.get_tensor(0), expected)


def test_a_transposed_matrix_is_read_in_logical_order(runtime):
    value = np.array([[b"a", b"b"], [b"c", b"d"]]).T
    assert_strings(run(runtime(reshape_model([2, 2])), value), [[b"a", b"c"], [b"b", b"d"]])


SCALARS = {
    # LiteRT stores a 0-d bytes/str array as its raw buffer: NUL padding and UCS-4 included.
    "exact bytes": (np.array(b"hello"), b"hello"),
    "padded bytes": (np.array(b"hi", dtype="S6"), b"hi\x00\x00\x00\x00"),
    "embedded NUL": (np.array(b"a\x00b\x00"), b"a\x00b\x00"),
    "empty bytes is one NUL": (np.array(b"", dtype="S1"), b"\x00"),
    "str is its UCS-4 buffer": (np.array("ab", dtype="U3"), b"a\x00\x00\x00b\x00\x00\x00\x00\x00\x00\x00"),
}


@pytest.mark.parametrize("case", list(SCALARS))
def test_a_scalar_string_is_the_raw_buffer_of_a_0d_array(runtime, case):
    value, expected = SCALARS[case]
    got = run(runtime(reshape_model([])), value)
    assert_strings(got, expected)
    assert got.shape == ()


def test_a_0d_object_array_is_its_element_here_and_garbage_in_litert():
    # LiteRT copies the 8 bytes of the element's PyObject pointer (PyArray_DATA of an
    # object array); this runtime converts the element like any other, a deliberate
    # difference.
    value = np.array(b"hi", dtype=object)
    assert_strings(run(Interpreter(model_content=reshape_model([])), value), b"hi")
    theirs = run(_litert(reshape_model([])), value)[()]
    assert theirs != b"hi" and len(theirs) == np.dtype(np.intp).itemsize


@pytest.mark.parametrize(
    "value, type_name",
    [([b"a", b"b", b"c"], "list"), (("a", "b", "c"), "tuple")],
)
def test_a_sequence_that_is_not_an_array_is_refused(runtime, value, type_name):
    interpreter = runtime(reshape_model([3]))
    interpreter.allocate_tensors()
    with pytest.raises(ValueError, match=f"Passed in value type is not a numpy array, got type {type_name}"):
        interpreter.set_tensor(0, value)


@pytest.mark.parametrize(
    "value, type_name", [(b"raw", "bytes"), ("text", "str"), (np.bytes_(b"nb"), "numpy.bytes_"), (np.str_("ns"), "numpy.str_")]
)
def test_a_bare_scalar_is_refused_for_a_0d_string(runtime, value, type_name):
    interpreter = runtime(reshape_model([]))
    interpreter.allocate_tensors()
    with pytest.raises(ValueError, match=f"Passed in value type is not a numpy array, got type {type_name}"):
        interpreter.set_tensor(0, value)


@pytest.mark.parametrize(
    "value, given",
    [(np.array([1, 2, 3], np.int32), "INT32"), (np.array([1.0, 2.0, 3.0]), "FLOAT64"), (np.array([True, False, True]), "BOOL")],
)
def test_a_numeric_array_is_refused_for_a_string_tensor(runtime, value, given):
    interpreter = runtime(reshape_model([3]))
    interpreter.allocate_tensors()
    with pytest.raises(ValueError, match=f"Got value of type {given} but expected type STRING"):
        interpreter.set_tensor(0, value)


def test_numpy_variable_width_strings_are_refused(runtime):
    # numpy 2's StringDType is no type LiteRT knows (it says NOTYPE).
    interpreter = runtime(reshape_model([2]))
    interpreter.allocate_tensors()
    with pytest.raises(ValueError, match="Cannot set tensor: Got value of type .* but expected type STRING"):
        interpreter.set_tensor(0, np.array(["a", "bc"], dtype=np.dtypes.StringDType()))


@pytest.mark.parametrize(
    "value", [np.array([b"a", b"b"]), np.array(["a", "b"]), np.array([b"a", b"b"], dtype=object), np.array([1.0, 2.0], dtype=object)]
)
def test_strings_are_refused_for_a_float_tensor(runtime, value):
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2])
    y = graph.add_tensor("y", [2])
    graph.add_operator(B.RELU, [x], [y])
    graph.add_output(y)
    interpreter = runtime(builder.build())
    interpreter.allocate_tensors()
    with pytest.raises(ValueError, match="Got value of type STRING but expected type FLOAT32"):
        interpreter.set_tensor(0, value)


@pytest.mark.parametrize(
    "element", [3, None, bytearray(b"x"), 1.5], ids=["int", "None", "bytearray", "float"]
)
def test_an_element_that_is_not_bytes_or_str_is_refused(runtime, element):
    value = np.empty(3, dtype=object)
    value[:] = [b"a", element, b"c"]
    interpreter = runtime(reshape_model([3]))
    interpreter.allocate_tensors()
    with pytest.raises(ValueError, match=r"PyBytes_AsStringAndSize\(\) failed"):
        interpreter.set_tensor(0, value)


def test_a_str_without_utf8_encoding_is_refused(runtime):
    value = np.array(["a", "\ud800", "c"], dtype=object)  # a lone surrogate
    interpreter = runtime(reshape_model([3]))
    interpreter.allocate_tensors()
    with pytest.raises(ValueError, match=r"PyUnicode_AsUTF8AndSize\(\) failed"):
        interpreter.set_tensor(0, value)


@pytest.mark.parametrize("value, message", [
    (np.array([b"a", b"b"]), "Dimension mismatch. Got 2 but expected 3 for dimension 0"),
    (np.array([[b"a", b"b", b"c"]]), "Dimension mismatch. Got 2 but expected 1"),
])
def test_a_string_array_of_the_wrong_shape_is_refused(runtime, value, message):
    interpreter = runtime(reshape_model([3]))
    interpreter.allocate_tensors()
    with pytest.raises(ValueError, match=message):
        interpreter.set_tensor(0, value)


def test_a_list_of_the_wrong_shape_fails_on_its_shape_first(runtime):
    # LiteRT converts the value to check type and shape before it asks for an ndarray.
    interpreter = runtime(reshape_model([3]))
    interpreter.allocate_tensors()
    with pytest.raises(ValueError, match="Dimension mismatch"):
        interpreter.set_tensor(0, [b"a", b"b"])


def test_empty_string_tensors(runtime):
    interpreter = runtime(reshape_model([0]))
    for value in (np.array([], dtype="S1"), np.zeros([0], dtype=object)):
        got = run(interpreter, value)
        assert got.dtype == np.object_ and got.shape == (0,)


def test_a_resized_string_input(runtime):
    interpreter = runtime(reshape_model([2], signature=[-1]))
    interpreter.resize_tensor_input(0, [4])
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.array([b"a", b"b", b"c", b"d"]))
    interpreter.invoke()
    assert_strings(interpreter.get_tensor(2), [b"a", b"b", b"c", b"d"])
    assert interpreter.get_output_details()[0]["shape"].tolist() == [4]


@pytest.mark.parametrize(
    "value, expected",
    [(np.array([b"a", b"b", b"c"]), [b"a", b"b", b"c"]), (np.array(["u", "\u00fc"]), [b"u", b"\xc3\xbc"]),
     (np.array([b"o"], dtype=object), [b"o"])],
)
def test_the_signature_runner_takes_string_arrays(runtime, value, expected):
    outputs = runtime(reshape_model([2], signature=[-1])).get_signature_runner()(x=value)
    assert_strings(outputs["y"], expected)


def test_strings_survive_a_second_allocate_tensors_and_can_be_overwritten(runtime):
    interpreter = runtime(reshape_model([2]))
    assert_strings(run(interpreter, np.array([b"a", b"b"])), [b"a", b"b"])
    interpreter.allocate_tensors()
    assert_strings(interpreter.get_tensor(0), [b"a", b"b"])
    interpreter.set_tensor(0, np.array([b"a much longer string than before", b""], dtype=object))
    interpreter.invoke()
    assert_strings(interpreter.get_tensor(2), [b"a much longer string than before", b""])


def test_strings_set_before_allocate_tensors_are_kept(runtime):
    # LiteRT's string tensors are dynamic buffers: set_tensor needs no allocation first.
    interpreter = runtime(reshape_model([2]))
    interpreter.set_tensor(0, np.array([b"early", b""]))
    assert_strings(interpreter.get_tensor(0), [b"early", b""])
    interpreter.allocate_tensors()
    assert_strings(interpreter.get_tensor(0), [b"early", b""])
    interpreter.invoke()
    assert_strings(interpreter.get_tensor(2), [b"early", b""])


def test_an_output_written_by_set_tensor_is_overwritten_by_invoke(runtime):
    interpreter = runtime(reshape_model([2]))
    interpreter.allocate_tensors()
    interpreter.set_tensor(2, np.array([b"q", b"r"]))
    assert_strings(interpreter.get_tensor(2), [b"q", b"r"])
    interpreter.set_tensor(0, np.array([b"a", b"b"]))
    interpreter.invoke()
    assert_strings(interpreter.get_tensor(2), [b"a", b"b"])


def test_reading_a_string_tensor_never_written_is_an_error_here():
    # LiteRT crashes (a segmentation fault) on this; here it is a ValueError saying why.
    interpreter = Interpreter(model_content=reshape_model([2]))
    interpreter.allocate_tensors()
    for index in (0, 2):
        with pytest.raises(ValueError, match="holds no strings yet"):
            interpreter.get_tensor(index)


def test_a_string_constant_cannot_be_set_here():
    builder = ModelBuilder()
    graph = builder.subgraph()
    graph.add_input("x", [1])
    k = graph.add_constant("k", np.array([b"a"], dtype=object))
    graph.add_output(k)
    interpreter = Interpreter(model_content=builder.build())
    interpreter.allocate_tensors()
    with pytest.raises(ValueError, match="is a constant of the model"):
        interpreter.set_tensor(k, np.array([b"b"]))


# -- string constants ----------------------------------------------------------------------------

CONSTANTS = {
    0: np.array(b"c0", dtype=object),
    1: np.array([b"", b"\xc3\xa9", b"\x00\xff", b"tail\x00"], dtype=object),
    2: np.array([[b"a", b"bb"], [b"", b"ccc"]], dtype=object),
    3: np.array([[[b"x"], [b"y"]], [[b"zz"], [b""]]], dtype=object),
}


@pytest.mark.parametrize("rank", list(CONSTANTS))
def test_a_string_constant_of_each_rank_is_a_model_output(runtime, rank):
    builder = ModelBuilder()
    graph = builder.subgraph()
    graph.add_input("x", [1])
    k = graph.add_constant("k", CONSTANTS[rank])
    graph.add_output(k)
    interpreter = runtime(builder.build())
    interpreter.allocate_tensors()
    interpreter.invoke()
    assert interpreter.get_output_details()[0]["dtype"] is np.bytes_
    assert_strings(interpreter.get_tensor(k), CONSTANTS[rank])


@pytest.mark.parametrize("rank", list(CONSTANTS))
def test_a_string_constant_of_each_rank_feeds_reshape_and_equal(runtime, rank):
    constant = CONSTANTS[rank]
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", list(constant.shape), T.STRING)
    k = graph.add_constant("k", constant)
    equal = graph.add_tensor("equal", list(constant.shape), T.BOOL)
    graph.add_operator(B.EQUAL, [x, k], [equal])
    flat = graph.add_tensor("flat", [constant.size], T.STRING)
    graph.add_operator(B.RESHAPE, [k, graph.add_constant("shape", np.array([-1], np.int32))], [flat])
    graph.add_output(equal)
    graph.add_output(flat)
    value = constant.copy()
    value.reshape(-1)[0] = b"different"
    interpreter = runtime(builder.build())
    interpreter.allocate_tensors()
    interpreter.set_tensor(x, value)
    interpreter.invoke()
    outputs = [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]
    expected_equal = np.ones(constant.shape, bool)
    expected_equal.reshape(-1)[0] = False
    np.testing.assert_array_equal(outputs[0], expected_equal)
    assert_strings(outputs[1], constant.reshape(-1))


# -- the schema: reading and writing string buffers ------------------------------------------------


@pytest.mark.parametrize(
    "value, expected",
    [
        (b"scalar", np.array(b"scalar", dtype=object)),
        ("\u00e9t\u00e9", np.array("\u00e9t\u00e9".encode(), dtype=object)),
        (["a", "b"], np.array([b"a", b"b"], dtype=object)),
        (np.array([[b"a", b""], [b"\x00", b"zz"]]), np.array([[b"a", b""], [b"", b"zz"]], dtype=object)),
        (np.array(["x", "\u00ff"]), np.array([b"x", b"\xc3\xbf"], dtype=object)),
        (np.array([b"keep\x00", b"\xff"], dtype=object), np.array([b"keep\x00", b"\xff"], dtype=object)),
    ],
    ids=["bytes", "str", "list of str", "bytes matrix", "str array", "object array"],
)
def test_the_builder_writes_string_constants_the_reader_reads_back(value, expected):
    builder = ModelBuilder()
    graph = builder.subgraph()
    k = graph.add_constant("k", value)
    graph.add_output(k)
    tensor = Model.from_bytes(builder.build()).subgraphs[0].tensors[k]
    assert tensor.type == T.STRING and tensor.shape == expected.shape
    assert_strings(np.asarray(tensor.data), expected)
    assert not tensor.data.flags.writeable


@pytest.mark.parametrize("dtype", [np.bytes_, np.str_, np.object_, T.STRING])
def test_the_builder_takes_bytes_str_or_object_dtypes_for_string_tensors(dtype):
    builder = ModelBuilder()
    graph = builder.subgraph()
    graph.add_input("x", [2], dtype)
    assert graph.tensors[0].type == T.STRING


def test_string_buffer_layout_is_tflites():
    raw = encode_string_tensor(np.array([b"ab", b"", b"c"], dtype=object))
    # count, offsets[count + 1] from the start of the buffer, then the bytes
    assert raw == np.array([3, 20, 22, 22, 23], "<i4").tobytes() + b"abc"
    assert_strings(decode_string_tensor(raw, (3,), "t"), [b"ab", b"", b"c"])
    assert_strings(decode_string_tensor(raw + b"ignored", (3,), "t"), [b"ab", b"", b"c"])
    assert_strings(decode_string_tensor(encode_string_tensor(np.zeros([0], object)), (0,), "t"), np.zeros([0], object))


@pytest.mark.parametrize(
    "raw, message",
    [
        (b"\x01\x00", "string buffer is 2 bytes long"),
        (np.array([2, 12, 13], "<i4").tobytes() + b"a", "holds 2 strings, the shape needs 3"),
        (np.array([3, 20, 22, 21, 23], "<i4").tobytes() + b"abc", "offsets are out of order or out of range"),
        (np.array([3, 20, 22, 22, 99], "<i4").tobytes() + b"abc", "offsets are out of order or out of range"),
        (np.array([3, 4, 22, 22, 23], "<i4").tobytes() + b"abc", "offsets are out of order or out of range"),
    ],
)
def test_a_malformed_string_buffer_is_a_model_error(raw, message):
    with pytest.raises(ModelError, match=message):
        decode_string_tensor(raw, (3,), "subgraph 0 tensor 1 ('k')")


def test_a_string_constant_holds_only_bytes_or_str():
    with pytest.raises(TypeError, match="holds bytes or str, not int"):
        string_array(np.array([b"a", 3], dtype=object))
    builder = ModelBuilder()
    graph = builder.subgraph()
    with pytest.raises(TypeError, match="not NoneType"):
        graph.add_constant("k", np.array([b"a", None], dtype=object), dtype=T.STRING)
