"""A delegate kernel's outputs are checked after each eval, and blamed on the delegate node
(issue 18, item 5); with LITEDELEGATE_DEBUG=1 unwritten outputs are caught too."""

from __future__ import annotations

import numpy as np
import pytest

from delegate_sdk import DelegateKernel, DelegateKernelError, KernelError, SimpleDelegate
from interpreter import Interpreter
from interpreter.delegation import DEBUG_ENVIRONMENT_VARIABLE
from interpreter.testing import assert_matches_cpu
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B
from schema.params import AddParams, MulParams


def model(dtype=np.float32) -> bytes:
    """x -> ADD(x, x) -> t -> NEG (CPU) -> y; t is the partition's output, read by the CPU."""
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [2, 3], dtype)
    t = g.add_tensor("t", [2, 3], dtype)
    y = g.add_tensor("y", [2, 3], dtype)
    g.add_operator(B.ADD, [x, x], [t], AddParams())
    g.add_operator(B.NEG, [t], [y])
    g.add_output(y)
    return builder.build()


def delegate_with(eval_function, name="Faulty"):
    kernel = type("Kernel", (DelegateKernel,), {"eval": eval_function})
    return type(name, (SimpleDelegate,), {"name": name, "support_table": {B.ADD: 1}, "kernel_class": kernel})


def right(self, context, node):
    (x,) = {t: context.tensors[t].data for t in node.inputs}.values()
    context.tensors[node.outputs[0]].data[...] = x + x


def run(delegate, dtype=np.float32, invokes=1):
    interpreter = Interpreter(model_content=model(dtype))
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    for k in range(invokes):
        interpreter.set_tensor(0, np.full((2, 3), k + 1, dtype))
        interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def test_a_right_kernel_passes_the_checks():
    np.testing.assert_array_equal(run(delegate_with(right)(), invokes=2), np.full((2, 3), -4, np.float32))


def test_a_wrongly_shaped_array_in_data_is_blamed_on_the_delegate_node():
    """It used to fail in the next node (NEG), which read the wrong array."""

    def wrong_shape(self, context, node):
        context.tensors[node.outputs[0]].data = np.zeros((6,), np.float32)

    with pytest.raises(DelegateKernelError) as caught:
        run(delegate_with(wrong_shape)())
    message = str(caught.value)
    assert message.startswith("delegate node 2 (Faulty, replacing nodes [0]): its kernel left output tensor 1 't' as "
                              "float32[6], but the tensor is float32[2, 3]; write the result into the tensor's own array: "
                              "context.tensors[1].data[...] = result")
    assert isinstance(caught.value, KernelError) and "NEG" not in message


def test_a_wrong_dtype_is_blamed_on_the_delegate_node():
    def wrong_dtype(self, context, node):
        context.tensors[node.outputs[0]].data = np.zeros((2, 3), np.float64)

    with pytest.raises(DelegateKernelError, match=r"left output tensor 1 't' as float64\[2, 3\], but the tensor is float32\[2, 3\]"):
        run(delegate_with(wrong_dtype)())


def test_a_replaced_array_of_the_right_shape_is_caught_too():
    """The CPU nodes after it hold the original array: they would read stale values."""

    def replaces(self, context, node):
        (x,) = [context.tensors[t].data for t in node.inputs]
        context.tensors[node.outputs[0]].data = x + x

    with pytest.raises(DelegateKernelError, match=r"replaced the array of output tensor 1 't' \(float32\[2, 3\]\) instead of "
                       r"writing into it, so the nodes that read it would see stale values"):
        run(delegate_with(replaces)())


def test_the_interpreter_falls_back_after_a_contract_fault():
    def wrong_shape(self, context, node):
        context.tensors[node.outputs[0]].data = np.zeros((6,), np.float32)

    interpreter = Interpreter(model_content=model())
    interpreter.modify_graph_with_delegate(delegate_with(wrong_shape)())
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.ones((2, 3), np.float32))
    with pytest.warns(RuntimeWarning, match="re-ran on the CPU"):
        assert interpreter.invoke_with_cpu_fallback() is False
    np.testing.assert_array_equal(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), -2 * np.ones((2, 3)))


def never_writes(self, context, node):
    pass


def test_without_debug_an_unwritten_output_keeps_its_old_values():
    """What the debug mode is for: a kernel that never writes goes unnoticed."""
    assert run(delegate_with(never_writes)()).shape == (2, 3)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_], ids=lambda d: np.dtype(d).name)
def test_debug_mode_catches_an_unwritten_output(monkeypatch, dtype):
    monkeypatch.setenv(DEBUG_ENVIRONMENT_VARIABLE, "1")
    with pytest.raises(DelegateKernelError, match=r"delegate node 2 \(Faulty, replacing nodes \[0\]\): its kernel did not write "
                       r"output tensor 1 't' .*LITEDELEGATE_DEBUG=1.*context.tensors\[1\].data\[...\] = result"):
        if dtype == np.bool_:
            run(delegate_bool(never_writes)(), dtype)
        else:
            run(delegate_with(never_writes)(), dtype)


def delegate_bool(eval_function):
    """LOGICAL_OR instead of ADD, for bool tensors."""
    kernel = type("Kernel", (DelegateKernel,), {"eval": eval_function})
    return type("Faulty", (SimpleDelegate,), {"name": "Faulty", "support_table": {B.LOGICAL_OR: 1}, "kernel_class": kernel})


def bool_model() -> bytes:
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [2, 3], np.bool_)
    t = g.add_tensor("t", [2, 3], np.bool_)
    y = g.add_tensor("y", [2, 3], np.bool_)
    g.add_operator(B.LOGICAL_OR, [x, x], [t])
    g.add_operator(B.LOGICAL_NOT, [t], [y])
    g.add_output(y)
    return builder.build()


@pytest.fixture(autouse=True)
def _bool_model(monkeypatch):
    original = model

    def choose(dtype=np.float32):
        return bool_model() if dtype == np.bool_ else original(dtype)

    monkeypatch.setitem(globals(), "model", choose)


def test_debug_mode_catches_a_half_written_bool_output(monkeypatch):
    monkeypatch.setenv(DEBUG_ENVIRONMENT_VARIABLE, "1")

    def half(self, context, node):
        context.tensors[node.outputs[0]].data[0] = True

    with pytest.raises(DelegateKernelError, match="did not write output tensor 1 't'"):
        run(delegate_bool(half)(), np.bool_)


def test_debug_mode_passes_right_kernels_and_the_gpu_delegate(monkeypatch):
    monkeypatch.setenv(DEBUG_ENVIRONMENT_VARIABLE, "1")
    np.testing.assert_array_equal(run(delegate_with(right)(), invokes=3), np.full((2, 3), -6, np.float32))
    from backends.gpu import GpuDelegate
    from interpreter.example_model import build_example_model

    assert_matches_cpu(build_example_model(), lambda: GpuDelegate(device="host"), invokes=3)


def handoff_model() -> bytes:
    """a = ADD(x, x) [GPU]; c = LOGISTIC(x) stays on the CPU (excluded); d = MUL(a, c) [GPU].
    ``a`` goes from one GPU partition to the next: only that delegate reads it, so it may
    stay on the device, unwritten on the CPU side."""
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [2, 3])
    a, c, d = (g.add_tensor(n, [2, 3]) for n in "acd")
    g.add_operator(B.ADD, [x, x], [a], AddParams())
    g.add_operator(B.LOGISTIC, [x], [c])
    g.add_operator(B.MUL, [a, c], [d], MulParams())
    g.add_output(d)
    return builder.build()


def test_debug_mode_leaves_device_only_handoffs_alone(monkeypatch):
    from backends.gpu import GpuDelegate

    monkeypatch.setenv(DEBUG_ENVIRONMENT_VARIABLE, "1")
    make = lambda: GpuDelegate(device="host", excluded_ops=[B.LOGISTIC])  # noqa: E731
    interpreter = assert_matches_cpu(handoff_model(), make, invokes=3)
    assert interpreter.delegation_report.num_partitions == 2
