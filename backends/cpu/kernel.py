"""The CPU kernel base class and the builtin op resolver.

A CPU kernel is a small class, one instance per node::

    @register(BuiltinOperator.RELU, 1, 2)
    class Relu(CpuKernel):
        def prepare(self):
            self.outputs[0].resize(self.inputs[0].shape)

        def invoke(self):
            np.maximum(self.inputs[0].data, 0, out=self.outputs[0].data)

``prepare`` checks types and sets output shapes (``resize``; ``set_dynamic`` when the
shape depends on data); ``invoke`` reads ``inputs[i].data`` and writes into
``outputs[i].data`` (arena memory the interpreter allocated after prepare), or calls
``outputs[i].set_data`` for a dynamic output. The registration range says exactly
which versions of the op the class implements.

For speed on small tensors, where each numpy call costs about as much as LiteRT's whole
kernel, a kernel may also override ``bind``: called once the arena is allocated, it takes
its views (reshaped inputs and outputs, scratch buffers) and returns the function the
interpreter then calls at every invoke. ``invoke`` stays the general path.

A node whose inputs are all constant is folded at prepare time: it runs once and its
outputs become read-only constants (TFLite does this for DEQUANTIZE and DENSIFY of
constant weights; here it holds for every kernel marked ``foldable``).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np

from delegate_sdk.context import Context
from delegate_sdk.node import Node
from delegate_sdk.op_resolver import MutableOpResolver
from delegate_sdk.registration import Registration
from delegate_sdk.tensor import Allocation, RuntimeTensor
from schema.enums import BuiltinOperator, builtin_operator_name, tensor_type_name


class CpuKernel:
    """Base class of the numpy kernels. Subclasses implement ``prepare`` and ``invoke``."""

    #: False for kernels with side effects or state (variables, control flow, random).
    foldable: ClassVar[bool] = True

    #: Set by ``prepare`` when output 0 holds input 0's bytes unchanged under another
    #: shape (RESHAPE, SQUEEZE, EXPAND_DIMS): the interpreter may then place both in the
    #: same arena memory (TFLite's ``kTfLiteInplaceOpInput0Shared``), and ``bind``
    #: returns None - nothing is left to do at invoke.
    output_shares_input: bool = False

    #: The multiply-adds of the largest BLAS call (matmul, dot) the kernel makes at invoke,
    #: set by ``prepare`` (0: it makes none); None: not said. The interpreter leaves the
    #: thread pools alone around the invokes of a subgraph whose every kernel says a size
    #: OpenBLAS runs on one thread anyway (``common.BLAS_ONE_THREAD_WORK``).
    blas_work: int | None = None

    #: Set by the interpreter before it asks ``bind`` of a node it prepares at invoke
    #: (one that reads a dynamic tensor): it then checks, before every call of the bound
    #: function, that each input and output still has the same ``data`` array, and asks
    #: ``bind`` again when one changed. Views of dynamic tensors are then safe to keep.
    buffers_watched: bool = False

    def __init__(self, context: Context, node: Node, op: int, version: int) -> None:
        self.context = context
        self.node = node
        self.op = op
        self.version = version
        self.params = node.params
        tensors = context.tensors
        self.inputs: list[RuntimeTensor | None] = [tensors[i] if i >= 0 else None for i in node.inputs]
        self.outputs: list[RuntimeTensor] = [tensors[i] for i in node.outputs]

    @classmethod
    def accepts(cls, context: Context, node: Node) -> bool:
        """Whether this class runs ``node``, when several classes register the same
        (op, version) (e.g. a float kernel and a quantized one at version 1, where uint8
        lives). Classes that override it are asked first; the default accepts all."""
        return True

    def prepare(self) -> None:
        raise NotImplementedError(f"{type(self).__name__}.prepare")

    def invoke(self) -> None:
        raise NotImplementedError(f"{type(self).__name__}.invoke")

    def bind(self) -> Callable[[], None]:
        """What the interpreter calls at invoke, asked once the arena is allocated.

        Until the next ``allocate_tensors`` the ``data`` arrays of static tensors stay
        the same objects, so a kernel may override this to take its views (reshaped
        inputs and outputs, scratch) once and return a lean function of them. ``invoke``
        must still work on its own: constant folding, delegates' kernels and nodes
        prepared at invoke (until their buffers hold steady: ``buffers_watched``) call it
        directly. The default is ``self.invoke``, or
        None (no step at all) when ``output_shares_input`` holds and the interpreter did
        place the output in the input's memory.
        """
        if self.output_shares_input and _same_memory(self.inputs[0].data, self.outputs[0].data):
            return None
        return self.invoke

    def buffers_are_fixed(self) -> bool:
        """Whether ``bind`` may keep views of the inputs and outputs: none is DYNAMIC (its
        ``data`` replaced by ``set_data`` at invoke), so they hold until the next
        allocation, or the interpreter watches them (``buffers_watched``: it checks every
        buffer before each call of the bound function and asks ``bind`` again when one
        changed)."""
        return self.buffers_watched or not any(t is not None and t.is_dynamic for t in (*self.inputs, *self.outputs))

    # -- small checks with clear messages ---------------------------------------------------
    @property
    def op_name(self) -> str:
        return builtin_operator_name(self.op)

    def unsupported(self, what: str) -> "UnsupportedKernelError":
        """An error for a node this kernel does not implement (say what would be needed)."""
        return UnsupportedKernelError(f"{self.op_name} v{self.version}: {what}")

    def require_types(self, tensor: RuntimeTensor | None, *allowed: int, role: str = "input") -> None:
        if tensor is None:
            raise self.unsupported(f"the {role} is missing")
        if tensor.type not in allowed:
            names = ", ".join(tensor_type_name(t) for t in allowed)
            raise self.unsupported(
                f"{role} {tensor.name!r} has type {tensor.type_name}; this kernel supports {names}"
            )

    def require_num_inputs(self, *counts: int) -> None:
        if len(self.inputs) not in counts:
            raise self.unsupported(f"expected {' or '.join(map(str, counts))} inputs, got {len(self.inputs)}")


def _same_memory(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Whether two arrays are the same bytes (same start, same size)."""
    if a is None or b is None or a.nbytes != b.nbytes:
        return False
    return a.__array_interface__["data"][0] == b.__array_interface__["data"][0]


class UnsupportedKernelError(ValueError):
    """The node's types, shapes or params are outside what its kernel implements."""


@dataclass(frozen=True)
class KernelEntry:
    op: int
    min_version: int
    max_version: int
    kernel_class: type[CpuKernel]


KERNELS: list[KernelEntry] = []


@dataclass(frozen=True)
class CustomKernelEntry:
    name: str
    min_version: int
    max_version: int
    kernel_class: type[CpuKernel]


#: Kernels of custom ops (MediaPipe's ``Convolution2DTransposeBias``...), by name.
CUSTOM_KERNELS: list[CustomKernelEntry] = []


def register(op: int, min_version: int = 1, max_version: int = 1) -> Callable[[type[CpuKernel]], type[CpuKernel]]:
    """Class decorator: ``kernel_class`` implements versions min..max of ``op``.

    May be stacked to register one class for several ops.
    """

    def decorate(kernel_class: type[CpuKernel]) -> type[CpuKernel]:
        KERNELS.append(KernelEntry(int(op), min_version, max_version, kernel_class))
        return kernel_class

    return decorate


def register_custom(name: str, min_version: int = 1, max_version: int = 1) -> Callable[[type[CpuKernel]], type[CpuKernel]]:
    """Class decorator: ``kernel_class`` implements versions min..max of the custom op
    ``name`` (its ``op`` is ``BuiltinOperator.CUSTOM``; its options are the node's
    ``custom_options`` bytes). ``builtin_op_resolver`` registers it with ``add_custom``."""

    def decorate(kernel_class: type[CpuKernel]) -> type[CpuKernel]:
        CUSTOM_KERNELS.append(CustomKernelEntry(name, min_version, max_version, kernel_class))
        return kernel_class

    return decorate


def registration_for(op: int, kernel_classes: list[type[CpuKernel]]) -> Registration:
    """A ``Registration`` whose init/prepare/invoke drive the first of ``kernel_classes``
    that accepts the node (the ones overriding ``accepts`` are asked first)."""
    specific = [k for k in kernel_classes if k.accepts.__func__ is not CpuKernel.accepts.__func__]
    general = [k for k in kernel_classes if k not in specific]
    candidates = specific + general

    def init(context: Context, node: Node) -> CpuKernel:
        version = context.get_node_and_registration(node.index)[1].version
        # The first that accepts: a class overriding ``accepts`` is asked; the others accept all.
        for kernel_class in specific:
            if kernel_class.accepts(context, node):
                return kernel_class(context, node, op, version)
        return (general[0] if general else candidates[0])(context, node, op, version)

    def prepare(context: Context, node: Node) -> None:
        kernel: CpuKernel = node.user_data
        kernel.prepare()
        if kernel.foldable and _all_inputs_constant(kernel):
            _fold(kernel)

    def invoke(context: Context, node: Node) -> None:
        node.user_data.invoke()

    invoke.calls_user_data_invoke = True  # the interpreter may call kernel.bind()() directly
    kernels = tuple(f"{k.__module__}.{k.__qualname__}" for k in candidates)
    return Registration(builtin_code=op, init=init, prepare=prepare, invoke=invoke, kernels=kernels)


def _all_inputs_constant(kernel: CpuKernel) -> bool:
    present = [t for t in kernel.inputs if t is not None]
    return bool(present) and all(t.is_constant for t in present) and not any(t.is_dynamic for t in kernel.outputs)


def _fold(kernel: CpuKernel) -> None:
    """Run a node with constant inputs once, at prepare; its outputs become constants."""
    for tensor in kernel.outputs:
        tensor.data = np.empty(tensor.shape, dtype=tensor.dtype)
        tensor.allocation = Allocation.ARENA
    kernel.invoke()
    for tensor in kernel.outputs:
        tensor.set_constant(tensor.data)


def _import_kernel_modules() -> None:
    global _KERNEL_MODULES_IMPORTED
    if _KERNEL_MODULES_IMPORTED:
        return
    from backends.cpu import kernels

    for module in pkgutil.iter_modules(kernels.__path__):
        importlib.import_module(f"{kernels.__name__}.{module.name}")
    _KERNEL_MODULES_IMPORTED = True


#: The resolver ``builtin_op_resolver`` copies, with the kernel counts it was built from.
_BUILTINS: tuple[int, int, MutableOpResolver] | None = None


def builtin_op_resolver() -> MutableOpResolver:
    """A resolver with every CPU kernel of this package (TFLite's ``BuiltinOpResolver``):
    a new resolver each call (a caller may add to it), whose registrations are built
    once per process (again only when a kernel was registered since).

    ``builtin_op_resolver().list_ops()`` lists its builtin and custom ops, their versions and
    the kernel classes that run each version (``litedelegate ops`` prints it)."""
    global _BUILTINS
    _import_kernel_modules()
    if _BUILTINS is None or _BUILTINS[:2] != (len(KERNELS), len(CUSTOM_KERNELS)):
        _BUILTINS = (len(KERNELS), len(CUSTOM_KERNELS), _build_builtin_op_resolver())
    resolver = MutableOpResolver(_BUILTINS[2].description)
    resolver.add_all(_BUILTINS[2])
    return resolver


_KERNEL_MODULES_IMPORTED = False


def _build_builtin_op_resolver() -> MutableOpResolver:
    classes: dict[tuple[int, int], list[type[CpuKernel]]] = {}
    for entry in KERNELS:
        for version in range(entry.min_version, entry.max_version + 1):
            found = classes.setdefault((entry.op, version), [])
            if entry.kernel_class not in found:
                found.append(entry.kernel_class)
    resolver = MutableOpResolver("litedelegate CPU builtins")
    for (op, version), kernel_classes in sorted(classes.items()):
        resolver.add_builtin(op, registration_for(op, kernel_classes), version, version)
    # Custom ops with a CPU kernel here (MediaPipe's), so their models run out of the box.
    customs: dict[tuple[str, int], list[type[CpuKernel]]] = {}
    for custom in CUSTOM_KERNELS:
        for version in range(custom.min_version, custom.max_version + 1):
            found = customs.setdefault((custom.name, version), [])
            if custom.kernel_class not in found:
                found.append(custom.kernel_class)
    for (name, version), kernel_classes in sorted(customs.items()):
        resolver.add_custom(name, registration_for(BuiltinOperator.CUSTOM, kernel_classes), version, version)
    return resolver
