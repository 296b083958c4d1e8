"""VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE: resource variables.

As in TFLite, VAR_HANDLE maps its ``(container, shared_name)`` to a resource id
(0, 1, 2... in the order the handles are created, shared by every subgraph of the
interpreter) and outputs it as a RESOURCE tensor (an int32 scalar). The id is fixed when
the kernel is created, so prepare publishes it as a constant (like a folded node): what
reads a handle, a delegate included, knows at prepare which variable it is. ASSIGN_VARIABLE
stores a copy of a value under that id, creating the variable on first use (any
shape and type; a later assignment may change both); READ_VARIABLE outputs it (a
dynamic output, since the variable's shape is only known at invoke).

All state lives in ``context.resources`` (shared by the interpreter's subgraphs,
kept across invokes, cleared by ``reset_all_variables``), under these keys:

- ``RESOURCE_IDS``: ``{(container, shared_name): resource id}``;
- ``("variable", resource_id)``: the variable's current value (a numpy array).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import BuiltinOperator, TensorType

RESOURCE_IDS = "var_handle.resource_ids"


def variable_key(resource_id: int) -> tuple[str, int]:
    return ("variable", int(resource_id))


class _UsesResource(CpuKernel):
    foldable = False
    blas_work = 0

    def require_resource_id(self, tensor) -> None:
        """Input 0 holds one resource id (RESOURCE, or INT32 as TFLite also accepts)."""
        self.require_types(tensor, TensorType.RESOURCE, TensorType.INT32, role="resource input")
        if tensor.num_elements != 1:
            raise self.unsupported(f"the resource input {tensor.name!r} has shape {list(tensor.shape)}; it must hold one id")

    def resource_id(self) -> int:
        return int(self.inputs[0].data.reshape(-1)[0])


# v1: the only version
@register(BuiltinOperator.VAR_HANDLE, 1, 1)
class VarHandle(_UsesResource):
    """VAR_HANDLE v1: the resource id of the variable named (container, shared_name)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # At init, as TFLite does, so ids follow the order handles are created in.
        ids = self.context.resources.setdefault(RESOURCE_IDS, {})
        name = (self.params.container or "", self.params.shared_name or "")
        self.id = ids.setdefault(name, len(ids))

    def prepare(self) -> None:
        if self.inputs or len(self.outputs) != 1:
            raise self.unsupported(f"takes no inputs and one output, has {len(self.inputs)} and {len(self.outputs)}")
        out = self.outputs[0]
        self.require_types(out, TensorType.RESOURCE, TensorType.INT32, role="output")
        shape = out.shape if out.num_elements == 1 else ()
        out.set_constant(np.full(shape, self.id, np.int32))

    def invoke(self) -> None:
        return None  # the id is the constant prepare published


# v1: the only version
@register(BuiltinOperator.ASSIGN_VARIABLE, 1, 1)
class AssignVariable(_UsesResource):
    """ASSIGN_VARIABLE v1: variable[resource id] = value (created if needed)."""

    def prepare(self) -> None:
        if len(self.inputs) != 2 or self.outputs:
            raise self.unsupported(f"takes two inputs and no output, has {len(self.inputs)} and {len(self.outputs)}")
        self.require_resource_id(self.inputs[0])
        if self.inputs[1] is None:
            raise self.unsupported("the value input is missing")

    def bind(self) -> Callable[[], None]:
        """With a constant resource id and a fixed value buffer: while the variable is the
        array the last assignment left (the same shape and type: written in place), one
        copy into it; else ``invoke``."""
        if not self.inputs[0].is_constant or not self.buffers_are_fixed():
            return self.invoke
        key, resources, value, invoke, copyto = variable_key(self.resource_id()), self.context.resources, self.inputs[1].data, self.invoke, np.copyto
        last = [None]  # the variable's array after the last assignment

        def assign() -> None:
            stored = resources.get(key)
            if stored is not None and stored is last[0]:
                copyto(stored, value)
                return
            invoke()
            last[0] = resources.get(key)

        return assign

    def invoke(self) -> None:
        key = variable_key(self.resource_id())
        value = self.inputs[1].data
        stored = self.context.resources.get(key)
        same_kind = stored is not None and stored.shape == value.shape and stored.dtype == value.dtype
        if same_kind and stored.flags.writeable:
            np.copyto(stored, value)  # (the variable's own array, written in place)
        else:
            self.context.resources[key] = np.array(value, copy=True)


# v1: the only version
@register(BuiltinOperator.READ_VARIABLE, 1, 1)
class ReadVariable(_UsesResource):
    """READ_VARIABLE v1: the current value of variable[resource id]."""

    def prepare(self) -> None:
        if len(self.inputs) != 1 or len(self.outputs) != 1:
            raise self.unsupported(f"takes one input and one output, has {len(self.inputs)} and {len(self.outputs)}")
        self.require_resource_id(self.inputs[0])
        self.outputs[0].set_dynamic()

    def bind(self) -> Callable[[], None]:
        """With a constant resource id: while the variable and the output are the arrays
        of the last read (the same shapes and types), one copy; else ``invoke`` (the
        output is dynamic: it may get a new array)."""
        if not self.inputs[0].is_constant:
            return self.invoke
        key, resources, out, invoke, copyto = variable_key(self.resource_id()), self.context.resources, self.outputs[0], self.invoke, np.copyto
        last = [None, None]  # (the variable's array, the output's array) after the last read

        def read() -> None:
            value, data = resources.get(key), out.data
            if value is not None and value is last[0] and data is last[1]:
                copyto(data, value)
                return
            invoke()
            last[0], last[1] = resources.get(key), out.data

        return read

    def invoke(self) -> None:
        resource_id = self.resource_id()
        value = self.context.resources.get(variable_key(resource_id))
        out = self.outputs[0]
        if value is None:
            raise ValueError(f"variable {resource_id} has not been assigned (read before any ASSIGN_VARIABLE)")
        if value.dtype != out.dtype:
            raise ValueError(f"variable {resource_id} holds {value.dtype}, the output {out.name!r} is {out.type_name}")
        if out.data is not None and out.data.shape == value.shape and out.data.flags.writeable:
            np.copyto(out.data, value)  # the same output buffer while the shape holds (TFLite resizes to equal dims)
        else:
            out.set_data(value.copy())
