"""Quantized models on the GPU (issue 14's acceptance), on host emulation: the delegate
takes their nodes, and every tensor it exposes equals ai-edge-litert's BUILTIN_REF bit for
bit, invoke after invoke (int8 classifiers saturate on random inputs, so the intermediate
tensors are compared too: ``expose_intermediates`` against LiteRT's
``experimental_preserve_all_tensors``)."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from backends.gpu import GpuDelegate, emulated_cuda_device
from interpreter import Interpreter
from gpu_helpers import assert_tensors_equal_litert

MODELS = pathlib.Path(__file__).parents[1] / "data" / "models"
REAL_INT8 = sorted(MODELS.glob("real/*int8*.tflite"))
CONVERTER_INT8 = sorted(MODELS.glob("converter/*_int8.tflite"))
STREAMING = MODELS / "real" / "mww_hey_jarvis_int8_streaming.tflite"


def random_input(detail: dict, rng: np.random.Generator) -> np.ndarray:
    dtype, shape = np.dtype(detail["dtype"]), tuple(detail["shape"])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)
    return rng.uniform(-2, 2, shape).astype(dtype)


def every_tensor_equals_builtin_ref(path: pathlib.Path, device, invokes: int) -> int:
    """Run ``invokes`` random steps through the delegate and through BUILTIN_REF; compare
    every tensor both expose. Returns how many tensor values were compared."""
    delegate = GpuDelegate(device=device, expose_intermediates=True)
    ours = Interpreter(model_path=str(path))
    ours.modify_graph_with_delegate(delegate)
    ours.allocate_tensors()
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    theirs = LiteRT(model_path=str(path), experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                    experimental_preserve_all_tensors=True)
    theirs.allocate_tensors()
    rng = np.random.default_rng(0)
    compared = 0
    for step in range(invokes):
        for mine, reference in zip(ours.get_input_details(), theirs.get_input_details()):
            value = random_input(mine, rng)
            ours.set_tensor(mine["index"], value)
            theirs.set_tensor(reference["index"], value)
        ours.invoke()
        theirs.invoke()
        compared += assert_tensors_equal_litert(ours, theirs, f"invoke {step}")
    for stats in delegate.partition_stats():
        assert stats.graph == "replaying" or stats.invokes < 2, stats.graph
    return compared


@pytest.mark.parametrize("path", REAL_INT8, ids=lambda p: p.stem)
def test_real_int8_models_go_to_the_gpu_almost_whole(path):
    interpreter = Interpreter(model_path=str(path))
    report = interpreter.modify_graph_with_delegate(GpuDelegate(device="host"))
    placements = interpreter.node_placements()  # every subgraph
    taken = sum(p.delegated for p in placements)
    assert taken >= 0.9 * len(placements), [f"{p.op} v{p.version}: {p.rejections}" for p in placements if not p.delegated]
    assert report.num_partitions <= 3  # every subgraph's partitions


@pytest.mark.parametrize("path", CONVERTER_INT8, ids=lambda p: p.stem)
def test_converter_int8_models_equal_the_cpu_path_bit_for_bit_over_invokes(path):
    from interpreter.testing import assert_matches_cpu

    assert_matches_cpu(path.read_bytes(), lambda: GpuDelegate(device="host"), invokes=4)


@pytest.mark.parametrize("path", REAL_INT8, ids=lambda p: p.stem)
def test_real_int8_models_equal_builtin_ref_in_every_tensor(path):
    assert every_tensor_equals_builtin_ref(path, "host", invokes=3) > 0


def test_the_streaming_model_equals_builtin_ref_in_every_tensor_over_ten_invokes():
    assert every_tensor_equals_builtin_ref(STREAMING, "host", invokes=10) >= 10 * 30


def test_the_streaming_model_on_the_device_branch_equals_builtin_ref_over_eight_invokes():
    assert every_tensor_equals_builtin_ref(STREAMING, emulated_cuda_device(), invokes=8) >= 8 * 30


def test_a_streaming_invoke_moves_only_the_models_input_and_output():
    delegate = GpuDelegate(device="host")
    interpreter = Interpreter(model_path=str(STREAMING))
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    rng = np.random.default_rng(1)
    detail = interpreter.get_input_details()[0]
    io = detail["shape"].prod() * 1 + interpreter.get_output_details()[0]["shape"].prod() * 1
    for _ in range(4):
        interpreter.set_tensor(detail["index"], random_input(detail, rng))
        interpreter.invoke()
        assert delegate.last_invoke().transfer_bytes == io  # int8 in, uint8 out; the state stays
