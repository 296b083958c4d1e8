"""Resource variables on the GPU: VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE (v1 each).

A streaming model keeps its state in resource variables, read and overwritten at every
invoke. On the GPU each variable lives in one device buffer for the whole life of the
interpreter (``DeviceVariables``): READ_VARIABLE copies it out, ASSIGN_VARIABLE copies a
value in, both on the device, so an invoke moves no state across the bus. The buffer's
address never changes, so a CUDA graph can read and write it at every replay.

The buffer takes its values from the host once: a variable first assigned on the CPU
(by a CALL_ONCE initialisation left there, say) is uploaded before the first GPU read;
one first assigned on the GPU never travels. From then on the device copy is the
variable: the delegate refuses (at prepare) a partition whose variable a CPU node of the
same subgraph also reads or assigns.

The variable's shape and type are fixed by the model: READ_VARIABLE's output and
ASSIGN_VARIABLE's value must have static declared shapes (the CPU kernel gives
READ_VARIABLE a dynamic output, as TFLite does, since a variable may change shape; on the
GPU a variable of another shape than the model declares is an error, said at the read).
VAR_HANDLE's output is a constant the CPU kernel publishes at prepare: inside a partition
the node is folded, and the resource id is known to the ops that use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from backends.cpu.kernels.variables import variable_key
from backends.gpu.ops.base import MAX_RANK, GpuOp
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


@dataclass
class DeviceVariable:
    """One resource variable's device buffer."""

    resource_id: int
    buffer: Any
    initialized: bool = False  # the buffer holds the variable's value (the device is its home)

    def initialize_from_host(self, device: Any, resources: dict) -> None:
        """Upload the CPU copy of the variable (what a CPU ASSIGN_VARIABLE left) once."""
        value = resources.get(variable_key(self.resource_id))
        if value is None:
            raise ValueError(f"variable {self.resource_id} has not been assigned (read before any ASSIGN_VARIABLE)")
        value = np.asarray(value)
        if value.shape != tuple(self.buffer.shape):
            raise ValueError(
                f"variable {self.resource_id} holds shape {list(value.shape)}; the GPU partition runs the shape the model "
                f"declares, {list(self.buffer.shape)}"
            )
        device.upload_into(self.buffer, np.ascontiguousarray(value, dtype=self.buffer.dtype))
        self.initialized = True


class DeviceVariables:
    """The device buffers of the resource variables of the interpreters a delegate runs,
    keyed by (the interpreter's resources, resource id)."""

    def __init__(self) -> None:
        self._variables: dict[tuple[int, int], DeviceVariable] = {}

    def get(self, device: Any, resources: dict, resource_id: int, shape: tuple[int, ...], dtype: Any) -> DeviceVariable:
        """The variable's buffer, made on first use (inside ``device.active()``)."""
        key = (id(resources), int(resource_id))
        variable = self._variables.get(key)
        if variable is None:
            buffer = device.xp.empty(shape, dtype=dtype)
            variable = self._variables[key] = DeviceVariable(int(resource_id), buffer)
        elif tuple(variable.buffer.shape) != tuple(shape) or np.dtype(variable.buffer.dtype) != np.dtype(dtype):
            raise ValueError(
                f"variable {resource_id} is used as {np.dtype(dtype)}{list(shape)} here and as "
                f"{np.dtype(variable.buffer.dtype)}{list(variable.buffer.shape)} elsewhere in the model"
            )
        return variable


def _static_reason(tensor, role: str) -> str | None:
    if tensor.shape_signature is not None and any(d < 0 for d in tensor.shape_signature):
        return f"{role} {tensor.name!r} has no static declared shape ({list(tensor.shape_signature)})"
    if len(tensor.shape) > MAX_RANK:
        return f"{role} {tensor.name!r} has rank {len(tensor.shape)}; at most {MAX_RANK} is supported"
    if tensor.type in (T.STRING, T.RESOURCE, T.VARIANT) or tensor.dtype is None:
        return f"{role} {tensor.name!r} is {tensor.type_name}: not a numeric variable"
    return None


def _resource_reason(node, tensors) -> str | None:
    if not node.inputs or node.inputs[0] < 0:
        return "the resource input is missing"
    handle = tensors[node.inputs[0]]
    if handle.type not in (T.RESOURCE, T.INT32) or handle.num_elements != 1:
        return f"the resource input {handle.name!r} must hold one id (RESOURCE or INT32), got {handle.type_name}{list(handle.shape)}"
    return None


class _VariableOp(GpuOp):
    index_inputs = (0,)  # the resource id: read on the host at prepare

    def resource_id(self) -> int:
        handle = self.inputs[0]
        if not handle.is_constant:
            raise ValueError(f"the resource id of {handle.name!r} is not known at prepare (not from a VAR_HANDLE)")
        return int(np.asarray(handle.data).reshape(-1)[0])

    def variable_for(self, tensor, *, reads: bool) -> DeviceVariable:
        dtype = self.storage if tensor.dtype.kind == "f" else tensor.dtype
        return self.environment.variable(self.resource_id(), tuple(tensor.shape), dtype, reads=reads)


class VarHandle(GpuOp):
    """VAR_HANDLE v1: folded at prepare (the CPU kernel publishes the id as a constant)."""

    ops = {B.VAR_HANDLE: 1}

    @classmethod
    def rejection_reason(cls, node, op, version, tensors):
        if node.inputs or len(node.outputs) != 1:
            return f"takes no inputs and one output, has {len(node.inputs)} and {len(node.outputs)}"
        return None

    def run(self, args):  # not reached: the node is folded, its output a constant
        raise RuntimeError("VAR_HANDLE runs at prepare")


class ReadVariable(_VariableOp):
    """READ_VARIABLE v1: a copy of the variable's device buffer (the model's declared shape)."""

    ops = {B.READ_VARIABLE: 1}

    @classmethod
    def rejection_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 1 or len(node.outputs) != 1:
            return f"takes one input and one output, has {len(node.inputs)} and {len(node.outputs)}"
        return _resource_reason(node, tensors) or _static_reason(tensors[node.outputs[0]], "output")

    def prepare(self) -> None:
        self.variable = self.variable_for(self.outputs[0], reads=True)

    def run(self, args):
        return [self.variable.buffer.copy()]


class AssignVariable(_VariableOp):
    """ASSIGN_VARIABLE v1: the value copied into the variable's device buffer."""

    ops = {B.ASSIGN_VARIABLE: 1}

    @classmethod
    def rejection_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 2 or node.outputs:
            return f"takes two inputs and no output, has {len(node.inputs)} and {len(node.outputs)}"
        if node.inputs[1] < 0:
            return "the value input is missing"
        return _resource_reason(node, tensors) or _static_reason(tensors[node.inputs[1]], "value")

    def prepare(self) -> None:
        self.variable = self.variable_for(self.inputs[1], reads=False)

    def run(self, args):
        self.variable.buffer[...] = args[1]
        return []
