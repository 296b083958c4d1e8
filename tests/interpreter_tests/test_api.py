"""The Interpreter's Python API behaves like ai_edge_litert.interpreter.Interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from delegate_sdk.context import KernelError
from interpreter import Interpreter
from oracle import litert_interpreter
from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator


def chain_model(shape=(1, 4, 4, 3), shape_signature=None) -> bytes:
    """x -> RELU -> RELU6 -> RELU_N1_TO_1 -> RELU -> y: four nodes, three intermediates."""
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", shape, shape_signature=shape_signature)
    previous = x
    for i, op in enumerate([BuiltinOperator.RELU, BuiltinOperator.RELU6, BuiltinOperator.RELU_N1_TO_1, BuiltinOperator.RELU]):
        out = graph.add_tensor(f"t{i}", shape, shape_signature=shape_signature)
        graph.add_operator(op, [previous], [out])
        previous = out
    graph.add_output(previous)
    builder.add_signature("serving_default", graph, inputs={"input": x}, outputs={"output": previous})
    return builder.build()


def ported_script(interpreter_class, model: bytes, value: np.ndarray) -> dict:
    """A script written for ai_edge_litert: only the Interpreter class differs."""
    interpreter = interpreter_class(model_content=model)
    interpreter.allocate_tensors()
    input_detail = interpreter.get_input_details()[0]
    output_detail = interpreter.get_output_details()[0]
    interpreter.set_tensor(input_detail["index"], value)
    interpreter.invoke()
    result = interpreter.get_tensor(output_detail["index"])
    runner = interpreter.get_signature_runner("serving_default")
    by_signature = runner(input=value)["output"]
    return {
        "output": result,
        "by_signature": by_signature,
        "signatures": interpreter.get_signature_list(),
        "input_shape": input_detail["shape"].tolist(),
        "output_dtype": output_detail["dtype"],
    }


def test_a_litert_script_runs_unchanged_apart_from_the_import():
    from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter

    value = np.linspace(-3, 8, 48, dtype=np.float32).reshape(1, 4, 4, 3)
    ours = ported_script(Interpreter, chain_model(), value)
    theirs = ported_script(LiteRTInterpreter, chain_model(), value)
    np.testing.assert_array_equal(ours.pop("output"), theirs.pop("output"))
    np.testing.assert_array_equal(ours.pop("by_signature"), theirs.pop("by_signature"))
    assert ours == theirs


DETAIL_KEYS = ["name", "index", "shape", "shape_signature", "dtype", "quantization", "quantization_parameters", "sparsity_parameters"]


def assert_details_equal(ours: dict, theirs: dict) -> None:
    assert sorted(ours) == sorted(theirs)
    for key in DETAIL_KEYS:
        if key == "quantization_parameters":
            for inner in ("scales", "zero_points"):
                np.testing.assert_array_equal(ours[key][inner], theirs[key][inner])
                assert ours[key][inner].dtype == theirs[key][inner].dtype
            assert ours[key]["quantized_dimension"] == theirs[key]["quantized_dimension"]
        elif key in ("shape", "shape_signature"):
            np.testing.assert_array_equal(ours[key], theirs[key])
            assert ours[key].dtype == theirs[key].dtype
        else:
            assert ours[key] == theirs[key], key


@pytest.mark.parametrize("name", ["dwconv_dil2_int8", "mini_mobilenet_float32", "fully_connected_int8"])
def test_tensor_details_equal_litert(models_dir, name):
    path = models_dir / "converter" / f"{name}.tflite"
    ours = Interpreter(model_path=path, op_resolver=_everything_resolver())
    theirs = litert_interpreter(path)
    for mine, other in zip(ours.get_tensor_details(), theirs.get_tensor_details()):
        assert_details_equal(mine, other)
    for mine, other in zip(ours.get_input_details() + ours.get_output_details(), theirs.get_input_details() + theirs.get_output_details()):
        assert_details_equal(mine, other)


def _everything_resolver():
    """A resolver that accepts every (op, version) without running anything (details only)."""
    from delegate_sdk.op_resolver import OpResolver
    from delegate_sdk.registration import Registration

    class AcceptAll(OpResolver):
        def find_op(self, op, version):
            return Registration(builtin_code=op, version=version)

        def find_custom(self, name, version):
            return Registration(builtin_code=32, custom_name=name, version=version)

    return AcceptAll()


def allocated(model: bytes | None = None) -> Interpreter:
    interpreter = Interpreter(model_content=model or chain_model())
    interpreter.allocate_tensors()
    return interpreter


def test_set_tensor_with_wrong_dtype_names_the_tensor_and_both_types():
    interpreter = allocated()
    with pytest.raises(ValueError, match="Got value of type FLOAT64 but expected type FLOAT32 for tensor 0, name: x"):
        interpreter.set_tensor(0, np.zeros((1, 4, 4, 3)))


def test_set_tensor_with_wrong_shape_names_the_dimension():
    interpreter = allocated()
    with pytest.raises(ValueError, match="Got 5 but expected 4 for dimension 1 of tensor 0"):
        interpreter.set_tensor(0, np.zeros((1, 5, 4, 3), np.float32))
    with pytest.raises(ValueError, match="Dimension mismatch. Got 3 but expected 4"):
        interpreter.set_tensor(0, np.zeros((1, 4, 4), np.float32))


def test_set_tensor_before_allocate_says_to_allocate():
    interpreter = Interpreter(model_content=chain_model())
    with pytest.raises(ValueError, match="allocate_tensors"):
        interpreter.set_tensor(0, np.zeros((1, 4, 4, 3), np.float32))


def test_invalid_tensor_index_is_a_value_error():
    with pytest.raises(ValueError, match="Invalid tensor index 99"):
        allocated().get_tensor(99)


def test_invoke_before_allocate_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="not ready"):
        Interpreter(model_content=chain_model()).invoke()


def test_set_tensor_copies_and_get_tensor_returns_a_copy():
    interpreter = allocated()
    value = np.ones((1, 4, 4, 3), np.float32)
    interpreter.set_tensor(0, value)
    value[...] = -1
    interpreter.invoke()
    result = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    np.testing.assert_array_equal(result, 1)
    result[...] = 0
    np.testing.assert_array_equal(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), 1)


def test_invoke_refuses_while_a_tensor_view_is_held():
    interpreter = allocated()
    view = interpreter.tensor(0)()
    with pytest.raises(RuntimeError, match="reference to internal data"):
        interpreter.invoke()
    del view
    interpreter.invoke()


def test_tensor_view_writes_reach_the_input():
    interpreter = allocated()
    interpreter.tensor(0)().fill(0.5)
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), 0.5)


def test_resize_input_propagates_shapes_through_the_graph():
    interpreter = Interpreter(model_content=chain_model())
    interpreter.resize_tensor_input(0, [2, 3, 3, 3])
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.full((2, 3, 3, 3), 7, np.float32))
    interpreter.invoke()
    output = interpreter.get_output_details()[0]
    assert output["shape"].tolist() == [2, 3, 3, 3]
    np.testing.assert_array_equal(interpreter.get_tensor(output["index"]), 1)


def test_strict_resize_only_changes_unknown_dimensions():
    interpreter = Interpreter(model_content=chain_model(shape_signature=[-1, 4, 4, 3]))
    interpreter.resize_tensor_input(0, [5, 4, 4, 3], strict=True)
    with pytest.raises(ValueError, match="only allows mutating unknown dimensions"):
        interpreter.resize_tensor_input(0, [5, 8, 4, 3], strict=True)


def test_signature_runner_resizes_to_its_inputs_and_returns_a_dict():
    runner = Interpreter(model_content=chain_model()).get_signature_runner()
    result = runner(input=np.full((3, 2, 2, 3), -4, np.float32))
    assert list(result) == ["output"] and result["output"].shape == (3, 2, 2, 3)
    np.testing.assert_array_equal(result["output"], 0)


def test_signature_runner_refuses_unknown_input_names():
    runner = Interpreter(model_content=chain_model()).get_signature_runner("serving_default")
    with pytest.raises(ValueError, match="Invalid Input name"):
        runner(nope=np.zeros((1, 4, 4, 3), np.float32))


def test_unknown_signature_key_is_refused():
    with pytest.raises(ValueError, match='Invalid signature_key provided: "other"'):
        Interpreter(model_content=chain_model()).get_signature_runner("other")


def test_ops_details_report_each_node_version():
    ops = Interpreter(model_content=chain_model()).get_ops_details()
    assert [(op["op_name"], op["version"]) for op in ops] == [("RELU", 1), ("RELU6", 1), ("RELU_N1_TO_1", 1), ("RELU", 1)]


def test_intermediate_buffers_are_reused_once_their_reader_has_run():
    interpreter = allocated(chain_model(shape=(1, 64, 64, 8)))
    subgraph = interpreter._main
    tensor_bytes = sum(t.nbytes for t in subgraph.tensors)
    assert subgraph.arena_bytes < tensor_bytes
    t0, t2 = subgraph.tensors[1].data, subgraph.tensors[3].data
    assert np.shares_memory(t0, t2)  # t0's last reader (node 1) ran before node 2 writes t2


def test_preserve_all_tensors_keeps_every_intermediate_readable():
    interpreter = Interpreter(model_content=chain_model(), experimental_preserve_all_tensors=True)
    interpreter.allocate_tensors()
    value = np.linspace(-3, 8, 48, dtype=np.float32).reshape(1, 4, 4, 3)
    interpreter.set_tensor(0, value)
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(1), np.maximum(value, 0))
    np.testing.assert_array_equal(interpreter.get_tensor(2), np.clip(value, 0, 6))


def test_a_kernel_that_cannot_run_a_node_names_node_op_and_version():
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [4], np.int32)
    y = graph.add_tensor("y", [4], np.int32)
    graph.add_operator(BuiltinOperator.RELU, [x], [y])  # RELU has no int32 kernel, here or in TFLite
    graph.add_output(y)
    interpreter = Interpreter(model_content=builder.build())
    with pytest.raises(KernelError, match=r"node 0 \(RELU v1\) failed in prepare: .*has type INT32"):
        interpreter.allocate_tensors()


def test_an_under_stamped_node_runs_as_litert_runs_it():
    # A file whose int8 DEPTHWISE_CONV_2D claims version 1 (TFLite's rules give it 3):
    # TFLite's kernels choose their arithmetic by the tensor types, so LiteRT runs it,
    # and so does this runtime (real files are under-stamped, e.g. MediaPipe's float16
    # DEQUANTIZE nodes at version 2).
    import flatbuffers

    from delegate_sdk.testing import single_op_model
    from oracle import assert_matches_litert
    from schema import schema_generated as fb

    model = fb.ModelT.InitFromPackedBuf(bytearray(single_op_model(BuiltinOperator.DEPTHWISE_CONV_2D, 3)), 0)
    model.operatorCodes[0].version = 1
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    under_stamped = bytes(builder.Output())
    assert Interpreter(model_content=under_stamped).get_ops_details()[0]["version"] == 1
    assert_matches_litert(under_stamped)


def test_model_path_and_content_are_mutually_exclusive():
    with pytest.raises(ValueError, match="must be specified"):
        Interpreter()
    with pytest.raises(ValueError, match="Can't both provide"):
        Interpreter(model_path="x.tflite", model_content=b"1234")


def test_num_threads_must_be_a_positive_int():
    with pytest.raises(ValueError, match="num_threads should >= 1"):
        Interpreter(model_content=chain_model(), num_threads=0)


def test_string_inputs_live_outside_the_byte_arena_and_match_litert():
    from oracle import run_litert

    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [3], np.object_)
    y = graph.add_input("y", [3], np.object_)
    out = graph.add_tensor("out", [3], np.bool_)
    graph.add_operator(BuiltinOperator.EQUAL, [x, y], [out])
    graph.add_output(out)
    model = builder.build()
    values = [np.array([b"a", b"b", b"c"], dtype=object), np.array([b"a", b"x", b"c"], dtype=object)]
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    for index, value in zip((x, y), values):
        interpreter.set_tensor(index, value)
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(out), run_litert(model, values)[0])


def test_nodes_downstream_of_a_dynamic_shape_are_prepared_at_invoke():
    from oracle import run_litert, run_ours
    from schema.params import AddParams, ReshapeParams

    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [2, 6])
    shape = graph.add_input("shape", [2], np.int32)  # a shape known only at invoke
    y = graph.add_tensor("y", [3, 4])
    graph.add_operator(BuiltinOperator.RESHAPE, [x, shape], [y], ReshapeParams())
    z = graph.add_tensor("z", [3, 4])
    graph.add_operator(BuiltinOperator.ADD, [y, y], [z], AddParams())
    w = graph.add_tensor("w", [12])
    graph.add_operator(BuiltinOperator.RESHAPE, [z, graph.add_constant("flat", np.array([-1], np.int32))], [w], ReshapeParams())
    graph.add_output(w)
    model = builder.build()
    for new_shape in ([4, 3], [6, 2]):
        inputs = [np.arange(12, dtype=np.float32).reshape(2, 6), np.array(new_shape, np.int32)]
        np.testing.assert_array_equal(run_ours(model, inputs)[0], run_litert(model, inputs)[0])


def test_an_interpreter_with_a_resolver_capped_at_depthwise_v1_refuses_dilated_files(models_dir):
    from backends.cpu import builtin_op_resolver
    from delegate_sdk.op_resolver import UnsupportedOperatorError

    old = builtin_op_resolver().capped({BuiltinOperator.DEPTHWISE_CONV_2D: 1})
    Interpreter(model_path=models_dir / "converter" / "dwconv_dil1_float32.tflite", op_resolver=old).allocate_tensors()
    with pytest.raises(UnsupportedOperatorError) as caught:
        Interpreter(model_path=models_dir / "converter" / "dwconv_dil2_float32.tflite", op_resolver=old)
    message = str(caught.value)
    assert "2 node(s)" in message
    assert "node 0: DEPTHWISE_CONV_2D version 2: this runtime supports DEPTHWISE_CONV_2D versions 1; litedelegate 0.1.0 added it" in message


def test_a_resolver_as_of_tflite_1_11_refuses_what_1_12_added(models_dir):
    from backends.cpu import builtin_op_resolver
    from delegate_sdk.op_resolver import UnsupportedOperatorError

    with pytest.raises(UnsupportedOperatorError, match="DEPTHWISE_CONV_2D version 2"):
        Interpreter(model_path=models_dir / "converter" / "dwconv_dil2_float32.tflite",
                    op_resolver=builtin_op_resolver().as_of_release("1.11.0", runtime="tflite"))
