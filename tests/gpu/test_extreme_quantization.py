"""Quantization parameters at their extremes, for every quantized op the GPU delegate takes
(issue 35): scales of 1e-45, 1e-38, 1e-10, 1e10 and 3.4e38, zero points at the type's
limits (alone, and with each extreme output scale), per-channel scales that differ by 2**40
between channels.

The rule, on ``GpuDelegate(device="host")`` and on the emulated CUDA device (the ``.cu``
kernels through the host shim): the GPU computes what the CPU computes, bit for bit, or it
refuses the node at delegation with a reason, and then the node runs (or fails cleanly) on
the CPU. Never an internal error at invoke. Where TFLite's integer arithmetic cannot take
the parameters (a requantization ratio of 2**31 or more: a left shift of 32 bits or more,
undefined in C; a fused activation bound outside int32, which LiteRT refuses at Prepare),
the CPU kernels and the GPU ops refuse them through one shared derivation,
``backends.cpu.quantization.requantization_multiplier`` / ``activation_range_quantized``,
and the message names the parameter.

The models are test_quantized_ops_vs_litert's one-node models (which LiteRT checks bit for
bit at realistic scales) plus a few more ops, with one quantization parameter rewritten in
the flatbuffer.
"""

from __future__ import annotations

import functools
import pathlib
from typing import Any, Iterator

import flatbuffers
import numpy as np
import pytest

from backends.cpu import builtin_op_resolver
from backends.cpu.quantization import QuantizationParameterError
from backends.gpu import GpuDelegate
from backends.gpu.device import emulated_cuda_device, open_device
from delegate_sdk.context import KernelError
from delegate_sdk.delegate import DelegatePrepareError
from delegate_sdk.dry_run import dry_run
from interpreter import Interpreter
from schema import schema_generated as sg
from schema.builder import quantization
from schema.enums import BuiltinOperator, TensorType
from schema.model import Model
from schema.params import AddParams, BatchMatMulParams, LeakyReluParams, ReducerParams, SubParams
from test_quantized_ops_vs_litert import CASES, binary_model, const, full_range, model, unary_model, x

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # float32 scale products overflow here on purpose

B = BuiltinOperator
T = TensorType
MODELS = pathlib.Path(__file__).parents[1] / "data" / "models"

SCALES = (1e-45, 1e-38, 1e-10, 1e10, 3.4e38)
#: The scales that put a fused activation's bounds far from the zero point (outside int32).
SMALL_SCALES = (1e-45, 1e-38, 1e-10)
#: Two channels apart by 2**40, around the tensor's own scales (every other channel
#: multiplied by the second factor, the others by the first).
CHANNEL_SPREADS = ((2.0**-20, 2.0**20), (1.0, 2.0**40), (2.0**-40, 1.0))
ZERO_POINT_LIMITS = {
    sg.TensorType.INT8: (-128, 127),
    sg.TensorType.UINT8: (0, 255),
    sg.TensorType.INT16: (-32768, 32767),
    sg.TensorType.INT32: (-(2**31), 2**31 - 1),
}

#: Quantized ops the GPU takes that test_quantized_ops_vs_litert's table leaves out.
MORE_CASES = {
    "batch-matmul-int8": lambda: model(
        B.BATCH_MATMUL, [x((2, 3, 4), T.INT8, 0.05, 3), x((2, 4, 5), T.INT8, 0.04, -2)],
        ((2, 3, 5), T.INT8, quantization(0.3, 1)), BatchMatMulParams(),
    ),
    "sum-int8": lambda: model(
        B.SUM, [x((2, 5, 6), T.INT8, 0.02, -3), const([2], T.INT32)], ((2, 5), T.INT8, quantization(0.1, 2)),
        ReducerParams(keep_dims=False),
    ),
    "sub-uint8-relu": lambda: binary_model(
        B.SUB, T.UINT8, [(3, 7), (3, 7)], (3, 7), SubParams(fused_activation_function=1), (0.021, 0.033, 0.047), (120, 131, 128)
    ),
    "add-int8-relu-n1-to-1": lambda: binary_model(
        B.ADD, T.INT8, [(4, 5), (4, 5)], (4, 5), AddParams(fused_activation_function=2), (0.011, 0.013, 0.017), (3, -4, 1)
    ),
    "leaky-relu-uint8": lambda: unary_model(B.LEAKY_RELU, T.UINT8, (4, 16), (0.037, 130), (0.029, 120), LeakyReluParams(alpha=0.3)),
    "hard-swish-uint8": lambda: unary_model(B.HARD_SWISH, T.UINT8, (4, 16), (0.043, 128), (0.027, 100)),
    "equal-int8": lambda: model(B.EQUAL, [x((3, 8), T.INT8, 0.031, 2), x((3, 8), T.INT8, 0.047, -3)], ((3, 8), T.BOOL, None)),
    "minimum-int8": lambda: model(
        B.MINIMUM, [x((3, 8), T.INT8, 0.031, 2), x((3, 8), T.INT8, 0.031, 2)], ((3, 8), T.INT8, quantization(0.031, 2))
    ),
    "pad-int8": lambda: model(
        B.PAD, [x((1, 3, 3, 2), T.INT8, 0.03, -5), const([[0, 0], [1, 1], [1, 1], [0, 0]], T.INT32)],
        ((1, 5, 5, 2), T.INT8, quantization(0.03, -5)),
    ),
    "quantize-float-to-int8-per-channel": lambda: model(
        B.QUANTIZE, [x((3, 4), T.FLOAT32)], ((3, 4), T.INT8, quantization([0.01, 0.02, 0.03, 0.04], [1, -2, 3, 0], 1))
    ),
}

#: Cases of that table that repeat another's op, types and arithmetic at another geometry
#: (the extremes here are about parameters, not shapes).
REPEATS = {
    "conv2d-int8-per-channel", "depthwise-int8-per-channel", "depthwise-uint8-dilated", "fully-connected-int8-per-channel",
    "quantize-float-to-int8-ties", "quantize-float-to-uint8", "dequantize-uint8", "logistic-uint8", "max-pool-uint8",
}

ALL_CASES = {**{name: make for name, make in CASES.items() if name not in REPEATS}, **MORE_CASES}


# -- one parameter rewritten in the flatbuffer ----------------------------------------------------


def rewritten(model_bytes: bytes, tensor: int, scales=None, zero_points=None) -> bytes:
    """The model with tensor ``tensor``'s scales and/or zero points replaced."""
    m = sg.ModelT.InitFromPackedBuf(model_bytes, 0)
    q = m.subgraphs[0].tensors[tensor].quantization
    if scales is not None:
        q.scale = [float(s) for s in scales]
    if zero_points is not None:
        q.zeroPoint = [int(z) for z in zero_points]
    builder = flatbuffers.Builder(0)
    builder.Finish(m.Pack(builder), b"TFL3")
    return bytes(builder.Output())


def extreme_variants(model_bytes: bytes) -> Iterator[tuple[str, bytes]]:
    """(label, model) for each extreme parameter of each quantized tensor of the model."""
    m = sg.ModelT.InitFromPackedBuf(model_bytes, 0)
    for index, tensor in enumerate(m.subgraphs[0].tensors):
        q = tensor.quantization
        if q is None or q.scale is None or len(q.scale) == 0:
            continue
        name, count = tensor.name.decode(), len(q.scale)
        for scale in SCALES:
            yield f"{name}.scale={scale:g}", rewritten(model_bytes, index, scales=[scale] * count)
        if count > 1:
            base = np.asarray(q.scale, np.float64)
            for low, high in CHANNEL_SPREADS:
                spread = [b * (low if c % 2 == 0 else high) for c, b in enumerate(base)]
                yield f"{name}.scales*[{low:g},{high:g}]", rewritten(model_bytes, index, scales=spread)
        zero_points = q.zeroPoint if q.zeroPoint is not None else []
        if tensor.type in ZERO_POINT_LIMITS and len(zero_points):
            for limit in ZERO_POINT_LIMITS[tensor.type]:
                yield f"{name}.zero_point={limit}", rewritten(model_bytes, index, zero_points=[limit] * len(zero_points))
                if name == "y":  # the output: the fused activation's bounds see both
                    for scale in SMALL_SCALES:
                        both = rewritten(model_bytes, index, scales=[scale] * count, zero_points=[limit] * len(zero_points))
                        yield f"y.zero_point={limit},scale={scale:g}", both


def params() -> list:
    return [
        pytest.param(case, label, variant, id=f"{case}-{label}")
        for case, make in ALL_CASES.items()
        for label, variant in extreme_variants(make())
    ]


# -- running on the CPU, on host emulation, on the emulated CUDA device ---------------------------


@functools.cache
def resolver():
    return builtin_op_resolver()  # built once: the interpreters here need not each build one


#: One device of each kind for every run (as one process runs many models on one GPU): each
#: CUDA source is built for it once.
DEVICES = {"host": functools.cache(lambda: open_device("host")), "emulated CUDA": functools.cache(emulated_cuda_device)}


@functools.cache
def inputs_for(case: str) -> tuple[np.ndarray, ...]:
    """Full-range inputs of the case's model (the variants change no shape or type)."""
    details = Interpreter(model_content=ALL_CASES[case](), op_resolver=resolver()).get_input_details()
    rng = np.random.default_rng(35)
    return tuple(full_range(d["dtype"], tuple(d["shape"]), rng) for d in details)


def run(model_bytes: bytes, inputs, delegate=None) -> dict[str, Any]:
    """What a run gave: ``outputs``, or ``error`` (the exception that
    escaped) and ``root`` (its first cause that is not the interpreter's wrapper), and the
    GPU's rejections."""
    interpreter = Interpreter(model_content=model_bytes, op_resolver=resolver())
    result: dict[str, Any] = {"rejections": [], "delegated": False}
    try:
        if delegate is not None:
            interpreter.modify_graph_with_delegate(delegate)
            placements = interpreter.node_placements()
            result["delegated"] = any(p.delegated for p in placements)
            result["rejections"] = [r for p in placements for r in p.rejections]
        interpreter.allocate_tensors()
        for detail, value in zip(interpreter.get_input_details(), inputs):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        result["outputs"] = [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]
    except Exception as error:  # noqa: BLE001 (the test judges what escaped)
        root = error
        while isinstance(root, (KernelError, DelegatePrepareError)) and root.__cause__ is not None:
            root = root.__cause__
        result["error"], result["root"] = error, root
    return result


def assert_clean(error: BaseException, root: BaseException, where: str) -> None:
    """A refusal the project raised on purpose: a ValueError of the project's own (the
    kernels' UnsupportedKernelError, QuantizationParameterError) under the interpreter's
    KernelError, which names the node and the op (under DelegatePrepareError when the CPU
    node failed while the delegate was applied)."""
    assert isinstance(error, (KernelError, DelegatePrepareError)), f"{where}: {type(error).__name__}: {error}"
    assert isinstance(root, ValueError) and type(root).__module__.split(".")[0] in ("backends", "delegate_sdk"), (
        f"{where}: internal error {type(root).__name__}: {root}"
    )


def same_outputs(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(
        x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind == "f") for x, y in zip(a, b)
    )


@pytest.mark.parametrize("case", ALL_CASES)
def test_every_case_runs_delegated_at_its_own_scales(case):
    """The extreme tests below mean something only if the GPU takes the unchanged node."""
    result = run(ALL_CASES[case](), inputs_for(case), GpuDelegate(device="host"))
    assert "error" not in result, result.get("error")
    assert result["delegated"] and not result["rejections"], result["rejections"]


@pytest.mark.parametrize("case,label,variant", params())
def test_the_gpu_computes_what_the_cpu_computes_or_refuses_the_node(case, label, variant):
    inputs = inputs_for(case)
    cpu = run(variant, inputs)
    if "error" in cpu:
        assert_clean(cpu["error"], cpu["root"], "CPU")
    for name, device in DEVICES.items():
        gpu = run(variant, inputs, GpuDelegate(device=device()))
        where = f"{name} device"
        if "error" in gpu:
            assert_clean(gpu["error"], gpu["root"], where)
            # The GPU left the node to the CPU (or refused as the CPU does): the CPU's error.
            assert "error" in cpu and str(gpu["root"]) == str(cpu["root"]), (
                f"{where} failed where the CPU {'failed otherwise' if 'error' in cpu else 'ran'}: {gpu['error']}"
            )
            continue
        assert "error" not in cpu, f"{where} ran a node the CPU refuses: {cpu['error']}"
        assert same_outputs(gpu["outputs"], cpu["outputs"]), f"{where}'s outputs differ from the CPU's"
        if not gpu["delegated"]:
            assert gpu["rejections"] and all(("scale" in r or "zero point" in r) for r in gpu["rejections"]), gpu["rejections"]


# -- the reproducer of issue 35 and the refusals' messages ----------------------------------------


def mini_mobilenet_with_scale(scale: float, tensor: int = 13) -> bytes:
    """tests/data/models/converter/mini_mobilenet_int8.tflite with tensor 13 (the output of
    the first DEPTHWISE_CONV_2D, fused RELU6, zero point -128) at ``scale``."""
    data = (MODELS / "converter" / "mini_mobilenet_int8.tflite").read_bytes()
    count = len(sg.ModelT.InitFromPackedBuf(data, 0).subgraphs[0].tensors[tensor].quantization.scale)
    return rewritten(data, tensor, scales=[scale] * count)


@pytest.mark.parametrize("device", ["host", "emulated"])
def test_a_scale_of_1e_45_is_refused_at_prepare_with_a_reason_not_an_overflow_at_invoke(device):
    # Issue 35: the GPU partition took the node and failed at invoke with
    # "OverflowError: Python integer -2147483776 out of bounds for int32" (the RELU6 bound
    # zero_point + INT32_MIN), while the CPU ran it. LiteRT refuses the node at Prepare
    # (CalculateActivationRangeQuantized: 6 / 1e-45 is outside int32); so do both now.
    model_bytes = mini_mobilenet_with_scale(1e-45)

    def delegate():
        return GpuDelegate(device="host" if device == "host" else emulated_cuda_device())

    # What the delegate takes (the file alone): every node but the DEPTHWISE_CONV_2D
    # whose output scale is 1e-45, refused with a reason that names the parameter.
    plan = dry_run(delegate(), Model.from_bytes(model_bytes).subgraphs[0])
    assert 1 not in plan.taken and set(plan.taken) == set(range(9)) - {1}, plan.partitions
    assert any("output scale" in reason and "2**31" in reason for reason in plan.reasons[1]), plan.reasons
    # Applied, the node left to the CPU fails its Prepare with that reason: the delegate is
    # not applied (as in LiteRT), and nothing runs into an internal error.
    interpreter = Interpreter(model_content=model_bytes)
    with pytest.raises(DelegatePrepareError, match=r"node 1 \(DEPTHWISE_CONV_2D v3\) failed in prepare: QuantizationParameterError"):
        interpreter.modify_graph_with_delegate(delegate())
    with pytest.raises(KernelError, match=r"node 1 \(DEPTHWISE_CONV_2D v3\) failed in prepare") as caught:
        interpreter.allocate_tensors()
    assert isinstance(caught.value.__cause__, QuantizationParameterError)


def test_litert_refuses_the_1e_45_reproducer_at_prepare_as_the_cpu_does():
    from oracle import litert_interpreter

    with pytest.raises(RuntimeError, match="no_integer_overflow_from_quantization"):
        litert_interpreter(mini_mobilenet_with_scale(1e-45)).allocate_tensors()
    with pytest.raises(KernelError, match="DEPTHWISE_CONV_2D"):
        Interpreter(model_content=mini_mobilenet_with_scale(1e-45)).allocate_tensors()


@pytest.mark.parametrize("scale", [1e-38, 1e-10])
def test_a_relu6_bound_outside_int32_names_the_output_scale(scale):
    # DEPTHWISE_CONV_2D of the reproducer, RELU6 on its output: 6 / scale leaves int32
    # (its requantization ratio does too at 1e-38; the activation is checked after it).
    with pytest.raises(KernelError) as caught:
        Interpreter(model_content=mini_mobilenet_with_scale(scale)).allocate_tensors()
    message = str(caught.value.__cause__)
    assert "output scale" in message and ("fused activation" in message or "2**31" in message), message
