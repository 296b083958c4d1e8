"""What LiteRT's Python interpreter does, litedelegate does (issue 17): each case runs on
both ``ai_edge_litert.interpreter.Interpreter`` and ours, so the expectation is checked on
LiteRT itself, not guessed. Our messages contain LiteRT's phrase (and may say more)."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import interpreter as ours

MODEL = pathlib.Path(__file__).parents[1] / "data" / "models" / "real" / "mp_face_detection_short_range.tflite"


def module(runtime: str):
    if runtime == "litert":
        from ai_edge_litert import interpreter as litert

        return litert
    return ours


both = pytest.mark.parametrize("runtime", ["litedelegate", "litert"])


@both
@pytest.mark.parametrize("content", [b"abc", b"\0" * 64, b"\x10\0\0\0TFL3" + b"\0" * 4],
                         ids=["too-short", "wrong-identifier", "root-past-the-end"])
def test_content_that_is_not_a_model_is_not_a_valid_flatbuffer(runtime, content):
    with pytest.raises(ValueError, match="The model is not a valid Flatbuffer buffer"):
        module(runtime).Interpreter(model_content=content)


@both
def test_a_missing_file_could_not_be_opened(runtime, tmp_path):
    path = tmp_path / "missing.tflite"
    with pytest.raises(ValueError, match=f"Could not open '{path}'"):
        module(runtime).Interpreter(model_path=str(path))


@both
@pytest.mark.parametrize("name", ["AUTO", "BUILTIN", "BUILTIN_REF", "BUILTIN_WITHOUT_DEFAULT_DELEGATES"])
def test_every_op_resolver_type_runs_the_model(runtime, name):
    m = module(runtime)
    interpreter = m.Interpreter(model_path=str(MODEL), experimental_op_resolver_type=m.OpResolverType[name])
    interpreter.allocate_tensors()
    interpreter.invoke()


def test_litert_s_own_op_resolver_type_is_accepted_by_ours():
    from ai_edge_litert.interpreter import OpResolverType as LiteRTResolverType

    interpreter = ours.Interpreter(model_path=str(MODEL), experimental_op_resolver_type=LiteRTResolverType.BUILTIN_REF)
    assert interpreter.op_resolver_type is ours.OpResolverType.BUILTIN_REF


@both
@pytest.mark.parametrize("value", ["test", 7], ids=["str", "int"])
def test_an_unknown_op_resolver_type_is_refused(runtime, value):
    with pytest.raises(ValueError, match=f"Unrecognized passed in op resolver type: {value}"):
        module(runtime).Interpreter(model_path=str(MODEL), experimental_op_resolver_type=value)


@both
def test_an_unknown_keyword_is_a_type_error(runtime):
    with pytest.raises(TypeError, match="unexpected keyword argument 'num_thread'"):
        module(runtime).Interpreter(model_path=str(MODEL), num_thread=2)


@both
def test_litert_s_tuning_keywords_are_accepted(runtime):
    module(runtime).Interpreter(
        model_path=str(MODEL),
        experimental_disable_delegate_clustering=True,
        experimental_default_delegate_latest_features=True,
    ).allocate_tensors()


@both
def test_safe_to_run_says_whether_a_tensor_view_is_held(runtime):
    interpreter = module(runtime).Interpreter(model_path=str(MODEL))
    interpreter.allocate_tensors()
    assert interpreter._safe_to_run()
    view = interpreter.tensor(interpreter.get_input_details()[0]["index"])()
    assert not interpreter._safe_to_run()
    del view
    assert interpreter._safe_to_run()


@both
@pytest.mark.parametrize("derive", [np.asarray, lambda view: view[0], lambda view: view.reshape(-1), np.array],
                         ids=["asarray", "slice", "reshape", "copy"])
def test_any_array_sharing_a_tensor_view_s_buffer_counts_as_held(runtime, derive):
    """LiteRT's rule: an array derived from the view without a copy keeps the interpreter
    unsafe to run (``np.asarray(interpreter.tensor(i)())`` cannot escape the check); a
    copy does not."""
    interpreter = module(runtime).Interpreter(model_path=str(MODEL))
    interpreter.allocate_tensors()
    derived = derive(interpreter.tensor(interpreter.get_input_details()[0]["index"])())
    if derive is np.array:
        assert interpreter._safe_to_run()
        return
    assert not interpreter._safe_to_run()
    with pytest.raises(RuntimeError, match="reference to internal data"):
        interpreter.allocate_tensors()
    del derived
    assert interpreter._safe_to_run()


@both
def test_a_bad_node_index_is_an_invalid_node_index(runtime):
    interpreter = module(runtime).Interpreter(model_path=str(MODEL))
    interpreter.allocate_tensors()
    with pytest.raises(ValueError, match="Invalid node index"):
        interpreter._get_op_details(10_000)


STREAMING = MODEL.parent / "mww_hey_jarvis_int8_streaming.tflite"  # has RESOURCE tensors


@both
def test_a_resource_tensor_reports_an_object_dtype_and_no_data(runtime):
    interpreter = module(runtime).Interpreter(model_path=str(STREAMING))
    interpreter.allocate_tensors()
    detail = next(d for d in interpreter.get_tensor_details() if d["name"] == "stream/states")
    assert detail["dtype"] is np.object_ and detail["shape"].tolist() == []
    with pytest.raises(ValueError, match="Tensor data is null"):
        interpreter.get_tensor(detail["index"])


@both
def test_resizing_a_tensor_that_is_not_an_input_is_refused(runtime):
    interpreter = module(runtime).Interpreter(model_path=str(STREAMING))
    interpreter.allocate_tensors()
    inputs = {d["index"] for d in interpreter.get_input_details()}
    other = next(d for d in interpreter.get_tensor_details() if d["index"] not in inputs and d["shape"].size)
    with pytest.raises(RuntimeError, match="Attempting to resize a fixed-size tensor"):
        interpreter.resize_tensor_input(other["index"], [1, 2])


@both
def test_sparsity_parameters_are_empty_for_a_dense_tensor(runtime):
    interpreter = module(runtime).Interpreter(model_path=str(MODEL))
    assert all(d["sparsity_parameters"] == {} for d in interpreter.get_tensor_details())


@pytest.mark.parametrize("block", [False, True], ids=["no-block-map", "1x4-blocks"])
def test_sparsity_parameters_equal_litert_s(block):
    # LiteRT 2.x reports block_map as an empty array when the model has none; so do we.
    from cpu.test_densify import CSR, DENSE, random_sparse, sparse_model
    from oracle import litert_interpreter

    dense = random_sparse(np.random.default_rng(0), (4, 8), np.float32)
    model = (sparse_model(dense, [0, 1, 2], [DENSE, CSR, DENSE], block_map=[1], block_size=[4]) if block
             else sparse_model(dense, [0, 1], [DENSE, CSR]))

    def sparse_details(interpreter):
        return [d["sparsity_parameters"] for d in interpreter.get_tensor_details() if d["sparsity_parameters"]]

    theirs, mine = sparse_details(litert_interpreter(model)), sparse_details(ours.Interpreter(model_content=model))
    assert len(theirs) == len(mine) == 1
    assert sorted(theirs[0]) == sorted(mine[0])
    for key in ("traversal_order", "block_map"):
        np.testing.assert_array_equal(mine[0][key], theirs[0][key])
    for their_dim, my_dim in zip(theirs[0]["dim_metadata"], mine[0]["dim_metadata"]):
        assert sorted(their_dim) == sorted(my_dim)
        for key in their_dim:
            np.testing.assert_array_equal(my_dim[key], their_dim[key])


def doubler_model() -> bytes:
    from schema.builder import ModelBuilder

    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [3], np.float32)
    y = graph.add_tensor("y", [3], np.float32)
    graph.add_operator("Doubler", [x], [y])
    graph.add_output(y)
    builder.add_signature("serving_default", graph)
    return builder.build()


@pytest.mark.parametrize("registerer", ["callable", "custom_op_registerers.register_doubler", "custom_op_registerers:register_doubler"])
def test_interpreter_with_custom_ops_runs_a_custom_op_its_registerer_adds(registerer):
    import custom_op_registerers

    given = custom_op_registerers.register_doubler if registerer == "callable" else registerer
    interpreter = ours.InterpreterWithCustomOps(custom_op_registerers=[given], model_content=doubler_model())
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.array([1, -2, 3.5], np.float32))
    interpreter.invoke()
    assert interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).tolist() == [2, -4, 7]


def test_without_the_registerer_the_custom_op_is_unsupported():
    with pytest.raises(ValueError, match="Doubler"):
        ours.Interpreter(model_content=doubler_model())


@both
def test_an_unknown_registerer_name_is_a_failed_symbol_lookup(runtime):
    with pytest.raises(ValueError, match="Looking up symbol 'NoSuchRegisterer' failed"):
        module(runtime).InterpreterWithCustomOps(custom_op_registerers=["NoSuchRegisterer"], model_path=str(MODEL))
