"""MediaPipe's attention face mesh whole on the GPU delegate, on host emulation and on the emulated
CUDA device (every kernel, the three MediaPipe ops' included, through the host shim), against the
CPU path on the portrait's face crop (tests/face_mesh.py; the CPU path's mesh against MediaPipe's
plain face mesh: tests/cpu/test_face_mesh_with_attention.py).

Measured: host emulation equals the CPU bit for bit; the emulated CUDA device is within 6e-7 of
each output's largest magnitude (sums in the kernels' order; at most 9e-5 px on the mesh). The
limit is the float models' (tests/gpu/test_float_models_gpu.py): 1e-4 of each output's scale.
One invoke on the emulated CUDA device takes about 10 s of CPU (the convolutions on the shim), so
the test runs one; the graph's capture and replay are covered on the ops' own models
(tests/gpu/test_mediapipe_attention_gpu.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.gpu import GpuDelegate, emulated_cuda_device
from face_mesh import FACE_LANDMARK_WITH_ATTENTION, portrait_face_crop, run_model
from interpreter import Interpreter

LIMIT = 1e-4  # of each output's largest magnitude
DEVICES = {"host": lambda: "host", "emulated-cuda": emulated_cuda_device}


@pytest.fixture(scope="module")
def cpu():
    return run_model(FACE_LANDMARK_WITH_ATTENTION, portrait_face_crop())


@pytest.mark.parametrize("device", list(DEVICES))
def test_the_attention_face_mesh_runs_whole_on_the_gpu_as_on_the_cpu(device, cpu):
    delegate = GpuDelegate(device=DEVICES[device]())
    interpreter = Interpreter(model_path=str(FACE_LANDMARK_WITH_ATTENTION), experimental_delegates=[delegate])
    placements = interpreter.node_placements()
    assert all(p.delegated for p in placements), [(p.op, p.rejections) for p in placements if not p.delegated][:3]
    assert len(delegate.partition_stats()) == 1
    customs = {p.op for p in placements} & {"Landmarks2TransformMatrix", "TransformTensorBilinear", "TransformLandmarks"}
    assert len(customs) == 3
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], portrait_face_crop())
    interpreter.invoke()
    for detail in interpreter.get_output_details():
        got, want = interpreter.get_tensor(detail["index"]), cpu[detail["name"]]
        scale = float(np.abs(want).max())
        error = float(np.abs(got.astype(np.float64) - want).max())
        assert error <= LIMIT * scale, f"{detail['name']}: {error:.3g} ({error / scale:.2g} of its scale)"
