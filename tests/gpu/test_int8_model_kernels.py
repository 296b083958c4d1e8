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
