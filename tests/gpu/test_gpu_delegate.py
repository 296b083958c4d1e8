"""GpuDelegate: honest about the device, and complete in host emulation (device="host")."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from backends.gpu import GpuDelegate, GpuUnavailableError
from delegate_sdk.testing import single_op_model
from interpreter.testing import assert_matches_cpu, run_model
from interpreter import Interpreter
from interpreter.example_model import build_example_model
from schema.enums import BuiltinOperator

MODELS = pathlib.Path(__file__).parents[1] / "data" / "models"
FLOAT_MODELS = sorted(MODELS.glob("converter/*_float32.tflite")) + [MODELS / "real" / "mp_face_detection_short_range.tflite"]
DW = BuiltinOperator.DEPTHWISE_CONV_2D


def cuda_device_present() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.mark.skipif(cuda_device_present(), reason="this machine has a CUDA device")
def test_without_a_usable_gpu_the_default_delegate_says_what_is_missing():
    with pytest.raises(GpuUnavailableError) as caught:
        GpuDelegate()
    message = str(caught.value)
    assert any(what in message for what in ("cupy is not installed", "no usable CUDA driver", "no CUDA device", "NVRTC"))
    assert "device='host'" in message or "NVRTC" in message


def test_host_emulation_is_asked_for_by_name():
    delegate = GpuDelegate(device="host")
    assert delegate.device.is_host and delegate.device.name == "host"
    with pytest.raises(ValueError, match="device must be"):
        GpuDelegate(device="cpu")


def model_bytes(path: pathlib.Path) -> bytes:
    return path.read_bytes()


def float_tolerance(path: pathlib.Path) -> dict:
    # The face model's outputs sum thousands of products; the GPU ops accumulate in another
    # order than the CPU kernels (as LiteRT's kernels do), so compare relative to the output's
    # magnitude there.
    return {"rtol": 1e-5, "atol": 1e-4} if "face" in path.stem else {"rtol": 1e-5, "atol": 1e-5}


@pytest.mark.parametrize("path", FLOAT_MODELS, ids=lambda p: p.stem)
def test_float_models_run_through_host_emulation_with_cpu_equal_outputs(path):
    assert_matches_cpu(model_bytes(path), lambda: GpuDelegate(device="host"), **float_tolerance(path))


SMALL_FLOAT_MODELS = [p for p in FLOAT_MODELS if "face" not in p.stem]


@pytest.mark.parametrize("path", SMALL_FLOAT_MODELS, ids=lambda p: p.stem)
def test_float16_precision_stays_within_1e_2(path):
    assert_matches_cpu(model_bytes(path), lambda: GpuDelegate(device="host", precision="float16"), rtol=1e-2, atol=1e-2)


def test_float16_precision_on_the_deep_face_model_stays_within_1e_2_of_each_outputs_scale():
    # Thirty layers of float16 storage (about 3 significant digits per rounding) compound:
    # elementwise-relative error is meaningless for values near zero, so the error is
    # measured against each output's largest magnitude, as GPU fp16 accuracy usually is.
    path = MODELS / "real" / "mp_face_detection_short_range.tflite"
    x = [np.random.default_rng(0).uniform(-1, 1, (1, 128, 128, 3)).astype(np.float32)]
    expected, _ = run_model(model_bytes(path), x)
    got, _ = run_model(model_bytes(path), x, [GpuDelegate(device="host", precision="float16")])
    for g, e in zip(got, expected):
        assert np.max(np.abs(g - e)) <= 1e-2 * np.max(np.abs(e))


@pytest.mark.parametrize("path", FLOAT_MODELS, ids=lambda p: p.stem)
def test_every_node_left_on_the_cpu_has_a_reason(path):
    interpreter = Interpreter(model_content=model_bytes(path))
    report = interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    for placement in report.rejected:
        assert placement.rejections, f"node {placement.node} ({placement.op}) was left without a reason"


def test_depthwise_v2_is_delegated_by_default_and_rejected_when_capped_at_v1():
    model = build_example_model()
    default = assert_matches_cpu(model, lambda: GpuDelegate(device="host"))
    assert all(p.delegated for p in default.node_placements())
    capped = assert_matches_cpu(model, lambda: GpuDelegate(device="host", version_caps={DW: 1}))
    left = [p for p in capped.node_placements() if not p.delegated]
    assert [(p.op, p.version) for p in left] == [("DEPTHWISE_CONV_2D", 2)]
    assert left[0].rejections == ("DEPTHWISE_CONV_2D v2: max version supported by GpuDelegate is 1 (capped by options)",)


def test_int8_depthwise_v3_is_taken_and_rejected_by_a_cap_at_v2():
    from delegate_sdk.testing import plan_delegation

    assert plan_delegation(GpuDelegate(device="host"), single_op_model(DW, 3)).taken == [0]
    capped = plan_delegation(GpuDelegate(device="host", version_caps={DW: 2}), single_op_model(DW, 3))
    assert capped.taken == [] and capped.reason(0) == "DEPTHWISE_CONV_2D v3: max version supported by GpuDelegate is 2 (capped by options)"


def test_weights_are_uploaded_once_and_activations_once_per_invoke():
    delegate = GpuDelegate(device="host")
    interpreter = Interpreter(model_content=build_example_model())
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    after_prepare = delegate.transfers.uploads
    assert after_prepare > 0  # the weights
    x = np.ones((1, 32, 32, 8), np.float32)
    for _ in range(3):
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
        interpreter.invoke()
    assert delegate.transfers.uploads - after_prepare == 3  # one input per invoke, one partition
    assert delegate.transfers.downloads == 3


def test_tensors_inside_the_partition_have_no_cpu_memory():
    interpreter = Interpreter(model_content=build_example_model())
    interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    interpreter.allocate_tensors()
    main = interpreter._main
    boundary = set(main.inputs) | set(main.outputs)
    activations = [t for t in main.tensors if not t.is_constant and t.index not in boundary]
    assert activations and all(t.data is None for t in activations)


@pytest.mark.gpu
def test_the_real_device_runs_the_example_model_like_the_cpu(cuda_device):
    assert_matches_cpu(build_example_model(), lambda: GpuDelegate(device=cuda_device()), invokes=5)
