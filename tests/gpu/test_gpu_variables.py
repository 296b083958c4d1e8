"""Resource variables on the GPU (issue 14): each variable lives in one device buffer
between invokes, so a streaming model's state never crosses the bus; the results equal
ai-edge-litert's BUILTIN_REF step after step, on host emulation and on the emulated CUDA
device (the device branch), CUDA graphs replaying."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import INIT_VALUE, read_then_assign_model
from oracle import litert_interpreter, run_interpreter

from backends.gpu import GpuDelegate, emulated_cuda_device
from delegate_sdk.delegate import DelegatePrepareError
from interpreter import Interpreter
from schema.enums import BuiltinOperator

DEVICES = {"host": lambda: "host", "emulated-cuda": emulated_cuda_device}


def delegated(model: bytes, delegate: GpuDelegate) -> Interpreter:
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    return interpreter


@pytest.mark.parametrize("device", DEVICES)
def test_a_variable_read_and_overwritten_each_invoke_follows_litert_over_eight_invokes(device):
    model = read_then_assign_model()
    delegate = GpuDelegate(device=DEVICES[device]())
    ours, theirs = delegated(model, delegate), litert_interpreter(model)
    for step in range(8):
        x = np.array([step, -step / 2], np.float32)
        got, want = run_interpreter(ours, [x]), run_interpreter(theirs, [x])
        np.testing.assert_array_equal(got[0], want[0], err_msg=f"invoke {step}")
    np.testing.assert_array_equal(run_interpreter(ours, [np.zeros(2, np.float32)])[0], [7, -3.5])
    assert all(p.delegated for p in ours.node_placements() if p.op != "CALL_ONCE")


@pytest.mark.parametrize("device", DEVICES)
def test_the_state_stays_on_the_device_only_inputs_and_outputs_travel(device):
    delegate = GpuDelegate(device=DEVICES[device]())
    interpreter = delegated(read_then_assign_model(), delegate)
    for step in range(4):
        run_interpreter(interpreter, [np.full(2, step, np.float32)])
        assert delegate.last_invoke().transfer_bytes == 2 * 8  # x in, y out
    main_partition = delegate.partition_stats()[0]
    assert main_partition.graph == "replaying"


def test_the_initialisation_runs_on_the_gpu_so_the_initial_value_never_travels():
    delegate = GpuDelegate(device="host")
    interpreter = delegated(read_then_assign_model(), delegate)
    uploads_before = delegate.counters.upload_bytes  # constants, at prepare
    np.testing.assert_array_equal(run_interpreter(interpreter, [np.ones(2, np.float32)])[0], INIT_VALUE)
    assert delegate.counters.upload_bytes - uploads_before == 8  # x only
    init = [p for p in interpreter.node_placements() if p.subgraph == 1]
    assert [p.op for p in init] == ["VAR_HANDLE", "ASSIGN_VARIABLE"] and all(p.delegated for p in init)


def test_a_variable_the_cpu_initialised_is_uploaded_once_then_stays():
    # min_nodes_per_partition=3 leaves the 2-node initialisation subgraph on the CPU.
    delegate = GpuDelegate(device="host", min_nodes_per_partition=3)
    interpreter = delegated(read_then_assign_model(), delegate)
    assert not any(p.delegated for p in interpreter.node_placements() if p.subgraph == 1)
    np.testing.assert_array_equal(run_interpreter(interpreter, [np.ones(2, np.float32)])[0], INIT_VALUE)
    assert delegate.last_invoke().transfer_bytes == 8 + 2 * 8  # the CPU's initial value once, x, y
    run_interpreter(interpreter, [np.ones(2, np.float32)])
    assert delegate.last_invoke().transfer_bytes == 2 * 8


def test_a_variable_also_used_on_the_cpu_keeps_the_partition_off_the_gpu():
    delegate = GpuDelegate(device="host", excluded_ops=[BuiltinOperator.ASSIGN_VARIABLE])
    interpreter = Interpreter(model_content=read_then_assign_model())
    with pytest.raises(DelegatePrepareError, match="variable 0 is used by GPU partition nodes and by ASSIGN_VARIABLE"):
        interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    assert run_interpreter(interpreter, [np.ones(2, np.float32)])[0].tolist() == INIT_VALUE.tolist()


def test_after_reset_all_variables_the_gpu_still_follows_the_cpu_path():
    # As in LiteRT, reset_all_variables leaves resource variables as they are: on the CPU
    # and on the device alike.
    model = read_then_assign_model()
    gpu, cpu = delegated(model, GpuDelegate(device="host")), Interpreter(model_content=model)
    cpu.allocate_tensors()
    for step in range(6):
        x = np.array([step, step * 3], np.float32)
        np.testing.assert_array_equal(run_interpreter(gpu, [x])[0], run_interpreter(cpu, [x])[0], err_msg=f"invoke {step}")
        if step == 2:
            gpu.reset_all_variables()
            cpu.reset_all_variables()
