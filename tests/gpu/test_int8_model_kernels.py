"""Int8 models on the GPU delegate's hand-written integer kernels (issue 23):

- every int8 model of tests/data/models on the device branch (``emulated_cuda_device``:
  the ``.cu`` kernels built by the host shim, CuPy's capture rules) equals BUILTIN_REF in
  every tensor, eager, captured and replayed (the host-emulation runs, the twins, are in
  test_int8_models_gpu.py);
- ``precision="float16"`` leaves an int8 model exact: the float32 input of QUANTIZE is
  not rounded to half, nor the float32 output of DEQUANTIZE, and every tensor equals the
  CPU path's (a model built here: float32 -> QUANTIZE -> int8 ops -> DEQUANTIZE);
- the quantized ops of this family (everything but the convolutions, FULLY_CONNECTED and
  BATCH_MATMUL) take at most one device operation per node.
"""

from __future__ import annotations

import collections
import pathlib

import numpy as np
import pytest

from backends.gpu import GpuDelegate, emulated_cuda_device
from backends.gpu.device import DeviceCounters
from interpreter import Interpreter
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.enums import TensorType as T
from schema.params import AddParams, MulParams, Pool2DParams, ReshapeParams, SoftmaxParams
from test_int8_models_gpu import CONVERTER_INT8, REAL_INT8, every_tensor_equals_builtin_ref, random_input

MODELS = REAL_INT8 + CONVERTER_INT8


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_every_int8_model_on_the_device_branch_equals_builtin_ref_in_every_tensor(path):
    assert every_tensor_equals_builtin_ref(path, emulated_cuda_device(), invokes=3) > 0


# -- precision="float16" ------------------------------------------------------------------------------


def quantized_chain_model() -> bytes:
    """float32 [1, 8, 8, 3] -> QUANTIZE -> ADD (broadcast const) -> MUL -> AVERAGE_POOL_2D ->
    RESHAPE -> SOFTMAX -> DEQUANTIZE -> float32, and a second DEQUANTIZE of the pool."""
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [1, 8, 8, 3])
    q = g.add_tensor("q", [1, 8, 8, 3], T.INT8, quantization=quantization(0.0123, -3))
    g.add_operator(B.QUANTIZE, [x], [q])
    c = g.add_constant("c", np.array([-5, 0, 7], np.int8), quantization=quantization(0.05, 1))
    s = g.add_tensor("s", [1, 8, 8, 3], T.INT8, quantization=quantization(0.03, 2))
    g.add_operator(B.ADD, [q, c], [s], AddParams(fused_activation_function=Act.RELU))
    m = g.add_tensor("m", [1, 8, 8, 3], T.INT8, quantization=quantization(0.02, -1))
    g.add_operator(B.MUL, [s, q], [m], MulParams())
    p = g.add_tensor("p", [1, 4, 4, 3], T.INT8, quantization=quantization(0.02, -1))
    g.add_operator(B.AVERAGE_POOL_2D, [m], [p], Pool2DParams(padding=1, stride_h=2, stride_w=2, filter_height=2, filter_width=2))
    shape = g.add_constant("shape", np.array([1, 48], np.int32))
    r = g.add_tensor("r", [1, 48], T.INT8, quantization=quantization(0.02, -1))
    g.add_operator(B.RESHAPE, [p, shape], [r], ReshapeParams(new_shape=[1, 48]))
    sm = g.add_tensor("sm", [1, 48], T.INT8, quantization=quantization(1 / 256, -128))
    g.add_operator(B.SOFTMAX, [r], [sm], SoftmaxParams(beta=1.0))
    y = g.add_tensor("y", [1, 48], T.FLOAT32)
    g.add_operator(B.DEQUANTIZE, [sm], [y])
    z = g.add_tensor("z", [1, 4, 4, 3], T.FLOAT32)
    g.add_operator(B.DEQUANTIZE, [p], [z])
    g.add_output(y)
    g.add_output(z)
    builder.add_signature("serving_default", g)
    return builder.build()


def every_tensor(interpreter: Interpreter) -> dict[str, np.ndarray]:
    return {
        t.name: np.array(t.data) for t in interpreter._main.tensors
        if not t.is_constant and t.data is not None and t.dtype is not None and t.dtype.kind in "iuf"
    }


@pytest.mark.parametrize("device", [lambda: "host", emulated_cuda_device], ids=["host", "emulated-cuda"])
def test_float16_precision_leaves_an_int8_model_exact_in_every_tensor(device):
    model = quantized_chain_model()
    cpu = Interpreter(model_content=model, experimental_preserve_all_tensors=True)
    cpu.allocate_tensors()
    delegate = GpuDelegate(device=device(), precision="float16", expose_intermediates=True)
    gpu = Interpreter(model_content=model)
    gpu.modify_graph_with_delegate(delegate)
    gpu.allocate_tensors()
    assert all(p.delegated for p in gpu.node_placements())
    rng = np.random.default_rng(4)
    for step in range(4):  # eager, captured, replayed
        # float32 values that float16 cannot hold (they would quantize differently)
        x = (rng.standard_normal((1, 8, 8, 3)) * 1.3 + 1e-4).astype(np.float32)
        for interpreter in (cpu, gpu):
            interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
            interpreter.invoke()
        want, got = every_tensor(cpu), every_tensor(gpu)
        assert set(want) == set(got)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"invoke {step}: {name}")


def test_float16_precision_keeps_float32_only_where_every_use_agrees():
    """A DEQUANTIZE output that a float op reads stays in the storage dtype (the float op
    computes in half storage, as precision="float16" asks); the model's float input feeding
    QUANTIZE is uploaded as float32."""
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [4])
    q = g.add_tensor("q", [4], T.INT8, quantization=quantization(0.01, 0))
    g.add_operator(B.QUANTIZE, [x], [q])
    d = g.add_tensor("d", [4], T.FLOAT32)
    g.add_operator(B.DEQUANTIZE, [q], [d])
    y = g.add_tensor("y", [4], T.FLOAT32)
    g.add_operator(B.ADD, [d, d], [y], AddParams())
    g.add_output(y)
    builder.add_signature("serving_default", g)
    interpreter = Interpreter(model_content=builder.build())
    delegate = GpuDelegate(device="host", precision="float16")
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    (kernel,) = delegate.kernels
    names = {interpreter._main.tensors[t].name for t in kernel.float32_kept}
    assert names == {"x"}


# -- one device operation per node ---------------------------------------------------------------------

#: The GPU op classes of the other quantized family (convolutions and matrix products).
OTHER_FAMILY = {"QuantizedConv2D", "QuantizedDepthwiseConv2D", "QuantizedFullyConnected", "QuantizedBatchMatmul"}


def launches_per_op_class(path: pathlib.Path) -> dict[str, tuple[int, int]]:
    """op class -> (device operations, nodes) over one eager invoke on host emulation (each
    op's ``run`` counted on its own)."""
    delegate = GpuDelegate(device="host", cuda_graphs=False)
    interpreter = Interpreter(model_path=str(path))
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    counts: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])

    def counted(op):
        run = op.run

        def run_counted(args):
            counters = DeviceCounters()
            with delegate.device.counting(counters):
                results = run(args)
            entry = counts[type(op).__name__]
            entry[0] += counters.kernel_launches
            entry[1] += 1
            return results

        return run_counted

    for kernel in delegate.kernels:
        for op, _, _, _ in kernel.steps:
            op.run = counted(op)
    rng = np.random.default_rng(0)
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], random_input(detail, rng))
    interpreter.invoke()
    return {name: (launches, nodes) for name, (launches, nodes) in counts.items()}


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_the_quantized_ops_of_this_family_take_one_launch_per_node(path):
    for name, (launches, nodes) in launches_per_op_class(path).items():
        if name not in OTHER_FAMILY:
            assert launches <= nodes, (name, launches, nodes)


# -- on a real device (marked gpu: skipped without one; emulated with LITEDELEGATE_TEST_DEVICE) ------


def on_device_and_host(cuda_device, source, make_launcher, inputs, call):
    """``call(launcher, *arrays)`` with the .cu kernel on ``cuda_device()`` and with the twin
    in host emulation: the two results, on the host."""
    from backends.gpu.device import open_device

    results = []
    for device in (cuda_device(), open_device("host")):
        with device.active():
            launcher = make_launcher(**device.launcher_arguments(source))
            results.append(device.download(call(launcher, *[device.upload(np.asarray(a)) for a in inputs])))
    return results


def integer_kernel_cases():
    """(name, source, make_launcher, inputs, call) for every integer kernel of this family."""
    from backends.cpu.quantization import quantize_multiplier
    from backends.gpu.cuda.int8_elementwise import (
        DequantizeCuda, LookupCuda, PairLookupCuda, QuantizeCuda, QuantizedBinaryCuda, QuantizedBinaryParams, channel_parameters,
    )
    from backends.gpu.cuda.int8_layout import ByteConcatenationCuda, BytePadCuda
    from backends.gpu.cuda.int8_windows import (
        QuantizedMeanCuda, QuantizedMeanParams, QuantizedPool2DCuda, QuantizedSoftmaxCuda, QuantizedSoftmaxParams,
    )
    from backends.gpu.cuda.space_batch import SpaceBatchCuda, SpaceBatchGeometry

    rng = np.random.default_rng(23)
    q = rng.integers(-128, 128, (2, 9, 8, 5)).astype(np.int8)
    r = rng.integers(-128, 128, (1, 9, 1, 5)).astype(np.int8)
    f = (rng.standard_normal((2, 9, 8, 5)) * 2).astype(np.float32)
    add = QuantizedBinaryParams("ADD", (-3, 5, 2), quantize_multiplier(0.25), quantize_multiplier(0.5), quantize_multiplier(0.003), (-100, 127))
    mul = QuantizedBinaryParams("MUL", (-3, 5, 2), (0, 0), (0, 0), quantize_multiplier(2.5), (-128, 127))
    layout, scales, zero_points = channel_parameters(rng.uniform(0.01, 0.1, (1, 1, 1, 5)).astype(np.float32), rng.integers(-5, 5, (1, 1, 1, 5)), q.shape)
    table = rng.integers(-128, 128, 256).astype(np.int8)
    exp = (np.arange(256, dtype=np.int64) * 8388607).astype(np.int32)  # increasing Q0.31 values
    accumulated = (exp >> 12).astype(np.int32)
    plain = lambda launcher, *arrays: launcher(*arrays)  # noqa: E731
    return [
        ("add", "int8_elementwise.cu", lambda **w: QuantizedBinaryCuda(add, np.int8, **w), [q, r], plain),
        ("mul", "int8_elementwise.cu", lambda **w: QuantizedBinaryCuda(mul, np.int8, **w), [q, r], plain),
        ("lookup", "int8_elementwise.cu", lambda **w: LookupCuda(**w), [q, table], plain),
        ("pair lookup", "int8_elementwise.cu", lambda **w: PairLookupCuda(**w), [q, r, rng.integers(0, 2, 65536).astype(np.bool_)], plain),
        ("quantize f32", "int8_elementwise.cu", lambda **w: QuantizeCuda(np.int8, layout, (-128, 127), **w), [f, scales, zero_points], plain),
        ("quantize f16", "int8_elementwise.cu", lambda **w: QuantizeCuda(np.int8, layout, (-128, 127), **w), [f.astype(np.float16), scales, zero_points], plain),
        ("dequantize f32", "int8_elementwise.cu", lambda **w: DequantizeCuda(np.int8, np.float32, layout, **w), [q, scales, zero_points], plain),
        ("dequantize f16", "int8_elementwise.cu", lambda **w: DequantizeCuda(np.int8, np.float16, layout, **w), [q, scales, zero_points], plain),
        ("average pool", "pool2d.cu", lambda **w: QuantizedPool2DCuda(False, (3, 3), (2, 2), "SAME", (-128, 100), np.int8, **w), [q], plain),
        ("max pool", "pool2d.cu", lambda **w: QuantizedPool2DCuda(True, (3, 2), (1, 2), "SAME", (-20, 127), np.int8, **w), [q], plain),
        ("mean", "int8_windows.cu", lambda **w: QuantizedMeanCuda((1, 2), QuantizedMeanParams(-3 * 72, *quantize_multiplier(0.7 / 72), 4, (-128, 127)), np.int8, **w),
         [q], lambda launcher, x: launcher(x, (2, 5))),
        ("softmax", "int8_windows.cu", lambda **w: QuantizedSoftmaxCuda(QuantizedSoftmaxParams(255, 23, -128, 127), np.int8, np.int8, **w),
         [q, exp, accumulated], plain),
        ("pad", "int8_layout.cu", lambda **w: BytePadCuda((0, 1, 2, 0), (1, 0, 1, 3), -4, np.int8, **w), [q], plain),
        ("concatenation", "int8_layout.cu", lambda **w: ByteConcatenationCuda(2, **w), [q, q[:, :, :3]],
         lambda launcher, a, b: launcher([a, b])),
        ("space to batch", "space_batch.cu", lambda **w: SpaceBatchCuda(SpaceBatchGeometry.space_to_batch(q.shape, (2, 2), ((1, 0), (0, 0))), True, 3, **w),
         [q], lambda launcher, x: launcher(x, (8, 5, 4, 5))),
    ]


@pytest.mark.gpu
def test_the_integer_kernels_on_a_device_compute_their_twins(cuda_device):
    """Integer arithmetic (and float32 / float16 conversions rounded once) gives the same
    bits on a GPU as in the twins."""
    for name, source, make, inputs, call in integer_kernel_cases():
        got, twin = on_device_and_host(cuda_device, source, make, inputs, call)
        np.testing.assert_array_equal(got, twin, err_msg=name)


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["float32", "float16"])
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_every_int8_model_on_a_device_equals_the_cpu_path_in_every_tensor(cuda_device, path, precision):
    cpu = Interpreter(model_path=str(path), experimental_preserve_all_tensors=True)
    cpu.allocate_tensors()
    gpu = Interpreter(model_path=str(path))
    gpu.modify_graph_with_delegate(GpuDelegate(device=cuda_device(), precision=precision, expose_intermediates=True))
    gpu.allocate_tensors()
    rng = np.random.default_rng(1)
    for step in range(4):  # eager, captured, replayed
        for detail in cpu.get_input_details():
            value = random_input(detail, rng)
            cpu.set_tensor(detail["index"], value)
            gpu.set_tensor(detail["index"], value)
        cpu.invoke()
        gpu.invoke()
        want, got = every_tensor(cpu), every_tensor(gpu)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{path.stem} {precision} invoke {step}: {name}")
