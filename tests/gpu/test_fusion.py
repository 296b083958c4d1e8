"""Fusion across nodes (``backends/gpu/fusion.py``, issue 24 item 2): MediaPipe's blocks
CONV/DEPTHWISE -> ADD (residual, a PAD of its channels) -> RELU/PRELU and PAD -> conv run as
one launch of the convolution's fused kernel.

Specifications:
- the four MediaPipe float models run at most 0.4 CUDA-graph nodes per delegated node, on
  the emulated CUDA device (the ``.cu`` kernels through the host shim) and in host emulation;
- fusion is exact: in float32 storage the fused partition returns the bits of the unfused
  one (``expose_intermediates`` turns fusion off), and the fused kernels equal their twins
  and a numpy composition of the unfused ops;
- nothing is folded whose intermediate another node reads or the caller reads, nor a
  PRELU without one alpha per channel, nor a PAD that is not zeros of rows and columns (in
  front) or of the last channels (of a residual), nor a PAD in front of a non-finite filter.
The oracle for whole models is ai-edge-litert's BUILTIN_REF (``test_float_models_gpu.py``
runs the same models, fused, against it).
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from kernel_twin import assert_twin_matches, run_both_ways
from oracle import run_litert

from backends.gpu import GpuDelegate, emulated_cuda_device
from backends.gpu.cuda.conv2d import NO_CLAMP, Conv2DCuda, Epilogue, conv2d_filter_layout
from backends.gpu.cuda.depthwise import DepthwiseConv2DCuda, DepthwiseConv2DFusedCuda
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.enums import Padding
from schema.params import AddParams, Conv2DParams, DepthwiseConv2DParams

MODELS = pathlib.Path(__file__).parents[1] / "data" / "models" / "real"
MEDIAPIPE = [
    MODELS / "mp_face_detection_short_range.tflite",
    MODELS / "mp_face_landmark.tflite",
    MODELS / "mp_palm_detection_lite.tflite",
    MODELS / "mp_pose_detection.tflite",
]
RNG = np.random.default_rng(24)
SLOW_ON_THE_SHIM = {"mp_pose_detection", "mp_palm_detection_lite"}


def delegated(model, delegate: GpuDelegate) -> Interpreter:
    interpreter = Interpreter(model_path=str(model)) if isinstance(model, pathlib.Path) else Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    return interpreter


def invoke(interpreter: Interpreter, inputs: list[np.ndarray], times: int = 1) -> list[np.ndarray]:
    for _ in range(times):
        for detail, value in zip(interpreter.get_input_details(), inputs):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def random_inputs(interpreter: Interpreter, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, tuple(d["shape"])).astype(np.float32) for d in interpreter.get_input_details()]


def fused_labels(delegate: GpuDelegate) -> list[str]:
    return [label for kernel in delegate.kernels for _, _, _, label in kernel.steps if label.startswith("fused: ")]


# -- the four MediaPipe models ---------------------------------------------------------------------


# The emulated CUDA device runs the .cu kernels through the host shim, the tiled ones in its
# cooperative mode (a std::thread per GPU thread): BlazePose and BlazePalm take a minute there,
# so the suite runs those two in host emulation only (same ops, same launches: the node count
# does not depend on who runs a kernel). `-m slow` runs them on the emulated CUDA device too.
DEVICES = {"emulated-cuda": emulated_cuda_device, "host": lambda: "host"}
RATIO_CASES = [
    pytest.param(path, device, id=f"{path.stem}-{device}",
                 marks=[pytest.mark.slow] if device == "emulated-cuda" and path.stem in SLOW_ON_THE_SHIM else [])
    for path in MEDIAPIPE for device in DEVICES
]


@pytest.mark.parametrize("path, device", RATIO_CASES)
def test_mediapipe_models_run_at_most_0_4_graph_nodes_per_delegated_node(path, device, request):
    if path.stem in SLOW_ON_THE_SHIM and device == "emulated-cuda" and "slow" not in (request.config.getoption("-m") or ""):
        pytest.skip("a minute on the host shim: run with -m slow")
    delegate = GpuDelegate(device=DEVICES[device]())
    interpreter = delegated(path, delegate)
    invoke(interpreter, random_inputs(interpreter), times=2)  # the second invoke captures the graph and replays it
    stats = delegate.partition_stats()
    assert all(s.graph == "replaying" for s in stats), [s.graph for s in stats]
    delegated_nodes = sum(len(s.nodes) for s in stats)
    graph_nodes = sum(s.graph_nodes for s in stats)
    assert graph_nodes <= 0.4 * delegated_nodes, (graph_nodes, delegated_nodes)
    assert delegate.last_invoke().graph_nodes == graph_nodes


@pytest.mark.parametrize("path", MEDIAPIPE, ids=lambda p: p.stem)
def test_fused_float32_partitions_return_the_bits_of_the_unfused_ones(path):
    fused = delegated(path, GpuDelegate(device="host"))
    unfused_delegate = GpuDelegate(device="host", expose_intermediates=True)  # which turns fusion off
    unfused = delegated(path, unfused_delegate)
    assert not fused_labels(unfused_delegate)
    inputs = random_inputs(fused)
    for ours, theirs in zip(invoke(fused, inputs, times=2), invoke(unfused, inputs, times=2)):
        np.testing.assert_array_equal(ours, theirs)


def test_fused_face_detection_on_the_emulated_cuda_device_equals_builtin_ref():
    path = MEDIAPIPE[0]
    delegate = GpuDelegate(device=emulated_cuda_device())
    interpreter = delegated(path, delegate)
    assert fused_labels(delegate)
    inputs = random_inputs(interpreter)
    for ours, theirs in zip(invoke(interpreter, inputs, times=2), run_litert(path, inputs)):
        scale = float(np.max(np.abs(theirs))) or 1.0
        assert float(np.max(np.abs(ours.astype(np.float64) - theirs))) <= 1e-4 * scale


# -- small models: what is folded and what is not --------------------------------------------------


def block_model(
    *, depthwise=False, pad_in_front=None, residual_pad=0, activation="RELU", alpha_shape=None,
    extra_reader=None, output_intermediate=None, filter_value=None, add_activation=Act.NONE,
) -> bytes:
    """x [1, 8, 8, C] -> [PAD] -> conv (3x3) -> ADD(skip) -> RELU / PRELU, with the skip a
    PAD of x's channels when ``residual_pad``; ``extra_reader`` / ``output_intermediate``
    name an intermediate ("conv", "add", "pad") that a second node reads / the caller reads."""
    rng = np.random.default_rng(3)
    channels = 4
    pads = np.zeros((4, 2), np.int32) if pad_in_front is None else np.array(pad_in_front, np.int32)
    conv_in = channels + int(pads[3].sum())
    height, width = 8 + int(pads[1].sum()), 8 + int(pads[2].sum())  # SAME, stride 1: the output's size
    out_channels = conv_in if depthwise else channels + residual_pad
    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 8, 8, channels])
    tensors = {}
    source = x
    if pad_in_front is not None:
        pad_out = graph.add_tensor("padded", [1, height, width, conv_in])
        graph.add_operator(B.PAD, [source, graph.add_constant("pads", pads)], [pad_out])
        source = tensors["pad"] = pad_out
    if depthwise:
        w = rng.uniform(-1, 1, (1, 3, 3, conv_in)).astype(np.float32)
    else:
        w = rng.uniform(-1, 1, (out_channels, 3, 3, conv_in)).astype(np.float32)
    if filter_value is not None:
        w.reshape(-1)[0] = filter_value
    conv = graph.add_tensor("conv", [1, height, width, out_channels])
    params = (DepthwiseConv2DParams(padding=Padding.SAME, stride_h=1, stride_w=1, depth_multiplier=1)
              if depthwise else Conv2DParams(padding=Padding.SAME, stride_h=1, stride_w=1))
    op = B.DEPTHWISE_CONV_2D if depthwise else B.CONV_2D
    bias = graph.add_constant("b", rng.uniform(-1, 1, out_channels).astype(np.float32))
    graph.add_operator(op, [source, graph.add_constant("w", w), bias], [conv], params)
    tensors["conv"] = conv
    skip = x
    if residual_pad:
        skip = graph.add_tensor("skip", [1, 8, 8, out_channels])
        paddings = np.array([[0, 0], [0, 0], [0, 0], [0, residual_pad]], np.int32)
        graph.add_operator(B.PAD, [x, graph.add_constant("skip_pads", paddings)], [skip])
        tensors["skip"] = skip
    if (height, width, out_channels) != (8, 8, channels) and not residual_pad:
        skip = graph.add_input("y", [1, height, width, out_channels])  # the skip must have the output's shape
    shape = [1, height, width, out_channels]
    added = graph.add_tensor("added", shape)
    graph.add_operator(B.ADD, [skip, conv], [added], AddParams(fused_activation_function=add_activation))
    tensors["add"] = added
    out = graph.add_tensor("out", shape)
    if activation == "PRELU":
        alpha = rng.uniform(0, 0.5, alpha_shape or (1, 1, out_channels)).astype(np.float32)
        graph.add_operator(B.PRELU, [added, graph.add_constant("alpha", alpha)], [out])
    else:
        graph.add_operator(getattr(B, activation), [added], [out])
    graph.add_output(out)
    if extra_reader is not None:
        other = graph.add_tensor("other", [1, height, width, out_channels] if extra_reader != "skip" else [1, 8, 8, out_channels])
        graph.add_operator(B.RELU, [tensors[extra_reader]], [other])
        graph.add_output(other)
    if output_intermediate is not None:
        graph.add_output(tensors[output_intermediate])
    return builder.build()


def run_block(model: bytes, precision: str = "float32"):
    delegate = GpuDelegate(device="host", precision=precision)
    interpreter = delegated(model, delegate)
    inputs = random_inputs(interpreter, seed=5)
    ours = invoke(interpreter, inputs, times=2)
    reference = Interpreter(model_content=model)
    reference.allocate_tensors()
    theirs = invoke(reference, inputs)
    return delegate, ours, theirs


@pytest.mark.parametrize("depthwise", [False, True], ids=["conv", "depthwise"])
@pytest.mark.parametrize("activation", ["RELU", "RELU6", "RELU_N1_TO_1", "PRELU"])
def test_conv_add_activation_is_one_launch_equal_to_the_cpu(depthwise, activation):
    delegate, ours, theirs = run_block(block_model(depthwise=depthwise, activation=activation))
    (label,) = fused_labels(delegate)
    assert "ADD" in label and activation.split("_")[0] in label
    assert len(delegate.kernels[0].steps) == 1
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_the_residual_pad_of_channels_is_folded_into_the_add():
    delegate, ours, theirs = run_block(block_model(residual_pad=3))
    (label,) = fused_labels(delegate)
    assert label.count("PAD") == 1 and "ADD" in label and "RELU" in label
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("depthwise", [False, True], ids=["conv", "depthwise"])
def test_a_pad_of_rows_and_columns_in_front_becomes_the_kernels_padding(depthwise):
    pads = [[0, 0], [1, 2], [2, 0], [0, 0]]  # asymmetric
    delegate, ours, theirs = run_block(block_model(depthwise=depthwise, pad_in_front=pads, activation="RELU"))
    (label,) = fused_labels(delegate)
    assert label.startswith("fused: PAD") and "ADD" in label and "RELU" in label
    assert len(delegate.kernels[0].steps) == 1
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-5)


def test_float16_fusion_stays_within_the_float16_bound():
    delegate, ours, theirs = run_block(block_model(residual_pad=2, activation="PRELU"), precision="float16")
    assert fused_labels(delegate)
    scale = float(np.max(np.abs(theirs[0])))
    assert float(np.max(np.abs(ours[0].astype(np.float64) - theirs[0]))) <= 1e-2 * scale


def test_the_add_s_own_fused_activation_is_kept():
    delegate, ours, theirs = run_block(block_model(add_activation=Act.RELU6, activation="PRELU"))
    assert fused_labels(delegate)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("intermediate", ["conv", "add", "skip"])
def test_an_intermediate_with_a_second_reader_is_not_folded_away(intermediate):
    delegate, ours, theirs = run_block(block_model(residual_pad=2, extra_reader=intermediate))
    labels = " ".join(fused_labels(delegate))
    assert {"conv": "ADD", "add": "RELU", "skip": "PAD"}[intermediate] not in labels
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("intermediate", ["conv", "add"])
def test_an_intermediate_the_caller_reads_is_not_folded_away(intermediate):
    delegate, ours, theirs = run_block(block_model(output_intermediate=intermediate))
    labels = " ".join(fused_labels(delegate))
    assert ("ADD" not in labels) if intermediate == "conv" else ("RELU" not in labels)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_a_prelu_without_one_alpha_per_channel_is_not_folded():
    delegate, ours, theirs = run_block(block_model(activation="PRELU", alpha_shape=(8, 8, 4)))
    assert "PRELU" not in " ".join(fused_labels(delegate))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-5)


def test_a_pad_in_front_of_a_non_finite_filter_is_not_folded():
    pads = [[0, 0], [1, 1], [1, 1], [0, 0]]
    model = block_model(pad_in_front=pads, filter_value=np.inf)
    delegate = GpuDelegate(device="host")
    delegated(model, delegate)
    assert not any(label.startswith("fused: PAD") for label in fused_labels(delegate))


def test_a_subclass_of_a_foldable_op_keeps_its_own_launch():
    # A fused kernel reproduces what the delegate's own ADD computes; a subclass (a delegate
    # author's, or a deliberately wrong kernel that `litedelegate diff` must find) may
    # compute something else, so it is not folded and its own run() is what runs.
    class ScaledGpuDelegate(GpuDelegate):
        def op_class_for(self, node, registration, tensors):
            op_class, reason = super().op_class_for(node, registration, tensors)
            if op_class is None or registration.builtin_code != B.ADD:
                return op_class, reason

            class TwiceTheAdd(op_class):
                def run(self, args):
                    return [o * self.device.xp.float32(2) for o in super().run(args)]

            return TwiceTheAdd, None

    model = block_model(activation="RELU")
    delegate = ScaledGpuDelegate(device="host")
    interpreter = delegated(model, delegate)
    labels = " ".join(fused_labels(delegate))
    assert "ADD" not in labels
    inputs = random_inputs(interpreter, seed=5)
    ours = invoke(interpreter, inputs, times=2)
    reference = Interpreter(model_content=model)
    reference.allocate_tensors()
    theirs = invoke(reference, inputs)
    np.testing.assert_allclose(ours[0], 2 * theirs[0], rtol=1e-5, atol=1e-5)  # ReLU(2a) = 2 ReLU(a)


def test_a_pad_of_channels_in_front_is_not_folded():
    delegate, ours, theirs = run_block(block_model(pad_in_front=[[0, 0], [0, 0], [0, 0], [0, 1]]))
    assert fused_labels(delegate) and not any(label.startswith("fused: PAD") for label in fused_labels(delegate))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-5)


# -- the fused kernels: the .cu (host shim) against its twin and the unfused composition ------------


def unfused(values: np.ndarray, residual, residual_channels, add_bounds, alpha, post_bounds) -> np.ndarray:
    """The unfused ops in float32: ADD (of the zero-padded residual), its clamp, PRELU, the clamp."""
    f32 = np.float32
    if residual is not None:
        padded = np.zeros(values.shape, f32)
        padded[..., :residual_channels] = residual
        values = np.clip(values + padded, f32(add_bounds[0]), f32(add_bounds[1]))
    if alpha is not None:
        values = np.where(values >= 0, values, values * alpha)
    return np.clip(values, f32(post_bounds[0]), f32(post_bounds[1]))


EPILOGUES = {
    "residual": (4, NO_CLAMP, False, NO_CLAMP),
    "residual-of-fewer-channels-relu": (2, NO_CLAMP, False, (0.0, np.inf)),
    "residual-add-relu6-prelu": (4, (0.0, 6.0), True, NO_CLAMP),
    "prelu-only": (0, NO_CLAMP, True, NO_CLAMP),
    "relu-n1-to-1-only": (0, NO_CLAMP, False, (-1.0, 1.0)),
}


@pytest.mark.parametrize("storage", [np.float32, np.float16])
@pytest.mark.parametrize("case", list(EPILOGUES))
def test_fused_conv2d_kernel_matches_its_twin_and_the_unfused_ops(case, storage):
    residual_channels, add_bounds, prelu, post_bounds = EPILOGUES[case]
    epilogue = Epilogue(residual_channels, add_bounds, prelu, post_bounds)
    x = RNG.standard_normal((2, 7, 6, 3)).astype(storage)
    filters = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    w = conv2d_filter_layout(filters, 1).astype(storage)
    b = RNG.standard_normal(4).astype(storage)
    pre = (1, 0, 2, 1)
    out_shape = (2, 8, 9, 4)  # SAME over the 8x9 padded input
    residual = RNG.standard_normal((*out_shape[:3], residual_channels)).astype(storage) if residual_channels else None
    alpha = RNG.uniform(0, 0.5, 4).astype(storage) if prelu else None
    both = run_both_ways(
        lambda **where: Conv2DCuda(1, 1, "SAME", Act.NONE, storage, epilogue=epilogue, pre_padding=pre, **where),
        "conv2d.cu", [x, w, b, residual, alpha],
        call=lambda launcher, x, w, b, r, a: launcher(x, w, b, residual=r, alpha=a),
    )
    tol = {"rtol": 1e-5, "atol": 1e-5} if np.dtype(storage) == np.float32 else {"rtol": 1e-2, "atol": 1e-2}
    assert_twin_matches(both, **tol)
    # The plain kernel over the explicitly padded input, then the unfused ops.
    padded = np.pad(x, ((0, 0), (pre[0], pre[1]), (pre[2], pre[3]), (0, 0)))
    plain = run_both_ways(lambda **where: Conv2DCuda(1, 1, "SAME", Act.NONE, storage, **where), "conv2d.cu", [padded, w, b])
    want = unfused(plain.twin[0].astype(np.float32), None if residual is None else residual.astype(np.float32),
                   residual_channels, add_bounds, None if alpha is None else alpha.astype(np.float32), post_bounds)
    np.testing.assert_allclose(both.twin[0].astype(np.float32), want, **tol)
    if np.dtype(storage) == np.float32:
        np.testing.assert_array_equal(both.twin[0], want)  # the same float32 operations


@pytest.mark.parametrize("storage", [np.float32, np.float16])
@pytest.mark.parametrize("case", list(EPILOGUES))
def test_fused_depthwise_kernel_matches_its_twin_and_the_unfused_ops(case, storage):
    residual_channels, add_bounds, prelu, post_bounds = EPILOGUES[case]
    epilogue = Epilogue(residual_channels, add_bounds, prelu, post_bounds)
    x = RNG.standard_normal((2, 9, 8, 2)).astype(storage)
    w = RNG.standard_normal((1, 3, 3, 4)).astype(storage)  # multiplier 2
    b = RNG.standard_normal(4).astype(storage)
    pre = (2, 2, 1, 1)
    out_shape = (2, 6, 4, 4)  # VALID 3x3, stride 2, over the 13x10 padded input
    residual = RNG.standard_normal((*out_shape[:3], residual_channels)).astype(storage) if residual_channels else None
    alpha = RNG.uniform(0, 0.5, 4).astype(storage) if prelu else None
    both = run_both_ways(
        lambda **where: DepthwiseConv2DFusedCuda(2, 1, "VALID", Act.RELU6, storage, epilogue=epilogue, pre_padding=pre, **where),
        "depthwise_conv2d.cu", [x, w, b, residual, alpha],
        call=lambda launcher, x, w, b, r, a: launcher(x, w, b, residual=r, alpha=a),
    )
    assert both.twin[0].shape == out_shape
    tol = {"rtol": 1e-5, "atol": 1e-5} if np.dtype(storage) == np.float32 else {"rtol": 1e-2, "atol": 1e-2}
    assert_twin_matches(both, **tol)
    padded = np.pad(x, ((0, 0), (pre[0], pre[1]), (pre[2], pre[3]), (0, 0)))
    plain = run_both_ways(lambda **where: DepthwiseConv2DCuda(2, 1, "VALID", Act.RELU6, storage, **where),
                          "depthwise_conv2d.cu", [padded, w, b])
    want = unfused(plain.twin[0].astype(np.float32), None if residual is None else residual.astype(np.float32),
                   residual_channels, add_bounds, None if alpha is None else alpha.astype(np.float32), post_bounds)
    np.testing.assert_allclose(both.twin[0].astype(np.float32), want, **tol)
