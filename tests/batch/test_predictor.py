"""The Predictor: batched where the model allows it, sample by sample where its batch is
fixed (said once), every row equal to a single invoke bit for bit; state reset per
sample; the GPU delegate without CUDA fails clearly. The reference is the plain
Interpreter API (``batch_helpers.single_invokes``)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from batch_helpers import (DSCNN, FACE_DETECTION, FACE_LANDMARK, HEY_JARVIS, fixed_reshape_model, float_conv_model,
                           gather_one_row_model, make_samples, single_invokes, two_input_model)
from interpreter import Interpreter
from interpreter.batch import Predictor
from interpreter.batch.predictor import cuda_index_of


def stacked(samples, name):
    return np.concatenate([sample[name] for sample in samples])


def expected_rows(model, samples, name):
    return np.stack([outputs[name] for outputs in single_invokes(model, samples)])


def test_a_model_with_a_free_batch_runs_batched_and_equals_single_invokes():
    model = float_conv_model()
    samples = make_samples(model, 10, seed=1)
    predictor = Predictor(model, batch_size=4, num_threads=1)
    assert (predictor.mode, predictor.mode_reason) == ("batched", "")
    assert predictor.interpreter.get_input_details()[0]["shape"].tolist() == [4, 12, 12, 8]  # resized once
    outputs = predictor({"x": stacked(samples, "x")})
    assert outputs["y"].shape == (10, 12, 12, 16)
    assert outputs["y"].tobytes() == expected_rows(model, samples, "y").tobytes()


@pytest.mark.parametrize("model, reason", [
    (FACE_DETECTION, "output 'regressors' has shape [1, 7168, 16] for a batch of 8, not [8, 896, 16]: its batch dimension is fixed"),
    (HEY_JARVIS, "the model keeps state between invokes (variables): each sample runs alone, from the initial state"),
], ids=["batch folded by a reshape", "state between invokes"])
def test_a_model_with_a_fixed_batch_runs_sample_by_sample_says_so_once_and_gives_the_same_outputs(model, reason, caplog):
    samples = make_samples(model, 5, seed=2)
    with caplog.at_level(logging.WARNING, logger="interpreter.batch"):
        predictor = Predictor(model, batch_size=8, num_threads=1)
        (name,) = [spec.name for spec in predictor.inputs]
        first = predictor({name: stacked(samples, name)})
        second = predictor({name: stacked(samples, name)})
    assert (predictor.mode, predictor.mode_reason) == ("sample by sample", reason)
    assert [record.getMessage() for record in caplog.records] == [f"{model}: running sample by sample: {reason}"]
    for output in predictor.outputs:
        expected = expected_rows(model, samples, output.name)
        assert first[output.name].tobytes() == second[output.name].tobytes() == expected.tobytes()


def test_a_model_whose_resize_fails_runs_sample_by_sample():
    model = fixed_reshape_model()
    predictor = Predictor(model, batch_size=3)
    assert predictor.mode == "sample by sample"
    assert predictor.mode_reason.startswith("the model does not take a batch of 3 (KernelError: node 0 (RESHAPE v1) failed")
    assert predictor.mode_reason.endswith("; the model declares a fixed batch for 'x'")
    assert predictor.interpreter.get_input_details()[0]["shape"].tolist() == [1, 3, 4]  # back at batch 1
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(predictor({"x": x})["y"], x.reshape(2, 12))


def test_a_stateful_model_starts_each_sample_from_the_initial_state():
    (name,) = make_samples(HEY_JARVIS, 1)[0]
    # Alone, a frame of zeros scores 0; after a stream of frames of 60 and of 100 the model's
    # memory of them makes it score 1 (of 255).
    frames = [np.full((1, 3, 40), value, np.int8) for value in [60] * 12 + [100] * 12 + [0] * 2]
    samples = [{name: frame} for frame in frames]
    outputs = Predictor(HEY_JARVIS, batch_size=4, num_threads=1)({name: stacked(samples, name)})
    fresh = expected_rows(HEY_JARVIS, samples, "StatefulPartitionedCall:0")  # a new interpreter per sample
    assert outputs["StatefulPartitionedCall:0"].tobytes() == fresh.tobytes()
    assert fresh[-2:].ravel().tolist() == [0, 0]
    interpreter = Interpreter(model_path=str(HEY_JARVIS), num_threads=1)  # one interpreter fed in order carries state
    interpreter.allocate_tensors()
    in_order = []
    for sample in samples:
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], sample[name])
        interpreter.invoke()
        in_order.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"])[0])
    assert np.stack(in_order)[-2:].ravel().tolist() == [1, 1], "the frames do not show the state: the test tests nothing"


def test_batched_outputs_that_differ_in_their_last_bits_run_sample_by_sample_unless_exact_is_off():
    predictor = Predictor(FACE_LANDMARK, batch_size=4, num_threads=1)
    assert predictor.mode == "sample by sample"
    assert predictor.mode_reason.startswith("batched outputs differ from single invokes (output 'conv2d_21', in the last bits")
    assert Predictor(FACE_LANDMARK, batch_size=4, num_threads=1, exact=False).mode == "batched"


def test_a_row_with_a_nan_runs_alone_and_leaves_the_other_rows_as_single_invokes_give_them():
    """The float convolution's overflow guard looks at its whole input: a NaN in one row of
    a batch would send every row to TFLite's exact loops, whose sums round otherwise."""
    model = float_conv_model()
    samples = make_samples(model, 6, seed=4)
    samples[3]["x"][0, 0, 0, 0] = np.nan
    outputs = Predictor(model, batch_size=6, num_threads=1)({"x": stacked(samples, "x")})
    expected = expected_rows(model, samples, "y")
    for row in range(6):
        assert outputs["y"][row].tobytes() == expected[row].tobytes(), row


def test_other_columns_pass_through_and_inputs_are_checked():
    model = two_input_model()
    predictor = Predictor(model, batch_size=2)
    a, b = np.ones((3, 4, 3), np.float32), np.full((3, 1, 4, 3), 2, np.uint8)  # leading 1 kept; uint8 casts safely
    outputs = predictor({"id": np.array([7, 8, 9]), "a": a, "b": b})
    assert list(outputs) == ["id", "sum"]
    assert outputs["id"].tolist() == [7, 8, 9]
    np.testing.assert_array_equal(outputs["sum"], np.full((3, 4, 3), 3, np.float32))
    with pytest.raises(ValueError, match=r"the batch has no column 'b' \(its columns: 'a'\); the model's inputs are 'a', 'b'"):
        predictor({"a": a})
    with pytest.raises(ValueError, match=r"input 'b': dtype float64, expected float32 \(a cast from float64 could lose values"):
        predictor({"a": a, "b": np.ones((3, 4, 3))})
    with pytest.raises(ValueError, match=r"input 'a': shape \[3,4,4\], expected \[3,4,3\]"):
        predictor({"a": np.ones((3, 4, 4), np.float32), "b": a})
    with pytest.raises(ValueError, match="the batch's column 'sum' has the name of a model output"):
        predictor({"a": a, "b": a, "sum": a})


@pytest.mark.parametrize("options, message", [
    ({"batch_size": 0}, "batch_size must be an int >= 1"),
    ({"precision": "float16"}, "precision 'float16' is the GPU delegate's"),
    ({"precision": "int4"}, "precision must be one of float32, float16"),
    ({"delegate": "tpu"}, "unknown delegate 'tpu'"),
    ({"delegate": "examples.toy_npu:NoSuchDelegate"}, "examples.toy_npu has no 'NoSuchDelegate'"),
])
def test_bad_options_are_value_errors(options, message):
    with pytest.raises(ValueError, match=message):
        Predictor(DSCNN, **options)


def test_any_delegate_runs_as_on_the_command_line():
    from examples.toy_npu import ToyNpu

    model = float_conv_model()
    samples = make_samples(model, 3, seed=5)
    predictor = Predictor(model, delegate="examples.toy_npu:ToyNpu", batch_size=2, num_threads=1)
    assert predictor.device.startswith("ToyNpu")
    outputs = predictor({"x": stacked(samples, "x")})
    assert outputs["y"].tobytes() == np.stack([o["y"] for o in single_invokes(model, samples, ToyNpu)]).tobytes()


def test_the_gpu_delegate_without_cuda_fails_clearly():
    from backends.gpu import GpuUnavailableError
    from backends.gpu.device import open_device

    try:
        open_device(0)
    except GpuUnavailableError as error:
        reason = str(error)
    else:
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(GpuUnavailableError) as raised:
        Predictor(DSCNN, delegate="gpu")
    assert str(raised.value) == reason


def test_gpu_host_rows_equal_its_own_single_invokes():
    from backends.gpu import GpuDelegate

    samples = make_samples(DSCNN, 5, seed=6)
    (name,) = samples[0]
    predictor = Predictor(DSCNN, delegate="gpu-host", batch_size=4, num_threads=1)
    assert predictor.device == "GpuDelegate on host emulation" and predictor.mode == "batched"
    outputs = predictor({name: stacked(samples, name)})
    expected = single_invokes(DSCNN, samples, lambda: GpuDelegate(device="host"))
    assert outputs["Identity"].tobytes() == np.stack([o["Identity"] for o in expected]).tobytes()


def test_ray_gpu_ids_are_found_among_the_visible_devices():
    assert cuda_index_of(3, "3") == 0  # Ray showed the worker only its GPU
    assert cuda_index_of("3", "2,3") == 1  # Ray left the node's list as it was
    assert cuda_index_of(5, None) == 5 and cuda_index_of(5, "") == 5
    with pytest.raises(ValueError, match="Ray assigned GPU 4, which is not in CUDA_VISIBLE_DEVICES=0,1"):
        cuda_index_of(4, "0,1")


def test_a_model_that_cannot_take_the_random_probe_runs_sample_by_sample():
    predictor = Predictor(gather_one_row_model(), batch_size=4)
    assert predictor.mode == "sample by sample"
    assert predictor.mode_reason.startswith("random probe rows could not be run (KernelError: ")
    assert predictor.mode_reason.endswith(", so batching cannot be checked")
    outputs = predictor({"i": np.zeros((3, 2), np.int32)})
    np.testing.assert_array_equal(outputs["rows"], np.tile(np.float32([1, 2, 3]), (3, 2, 1)))
