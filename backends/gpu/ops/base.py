"""The base class of GPU-delegate ops: array-namespace (``xp``) code that runs the same
on cupy (a device) and numpy (host emulation, and the tests)."""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np

from delegate_sdk.node import Node
from delegate_sdk.tensor import RuntimeTensor
from schema.enums import TensorType

FLOAT_TYPES = (TensorType.FLOAT32, TensorType.FLOAT16)
MAX_RANK = 4


class TypeReason(str):
    """A rejection saying that the node's tensor types are not those the class runs. When
    another class of the same op takes those types but refuses the node for another reason,
    that other reason is the one reported (``select_op_class``): it names the condition
    that actually failed."""


class GpuOp:
    """One node inside a GPU partition.

    Subclasses set ``ops = {BuiltinOperator.X: max_version, ...}`` (exactly the versions
    they implement), may extend :meth:`rejection_reason`, and implement :meth:`prepare`
    (upload constants once, in the layout the op wants, with ``self.upload``, and list
    their positions in ``self.prepared_inputs``) and :meth:`run` (device arrays in, device
    arrays out). The delegate uploads only the inputs :meth:`device_inputs` names: a
    constant the op laid out itself, or an index tensor read on the host, never travels.

    Values are immutable once made: ``run`` never writes into its inputs (nor into a value
    another op returned), only into arrays it allocated itself. So an op may return a view
    of an input (RESHAPE does), and the delegate may hand a value to later ops, to a later
    partition or to the host without copying it.

    Precision: arrays are stored in ``self.storage`` (float32, or float16 with the
    ``float16`` precision option); ops compute in float32 (``self.compute_dtype``) and
    store their results in ``self.storage``.
    """

    ops: ClassVar[dict[int, int]] = {}
    #: Custom ops the class implements, by name: ``{"Convolution2DTransposeBias": 1}``.
    custom_ops: ClassVar[dict[str, int]] = {}
    #: Input positions that are integer index tensors (paddings, axes, shapes, sizes): read
    #: on the host at prepare, never uploaded.
    index_inputs: ClassVar[tuple[int, ...]] = ()
    #: What the partition gives its ops beyond their node (``GpuPartitionKernel`` sets it
    #: before ``prepare``): ``environment.variable(resource_id, shape, dtype)`` is the
    #: device buffer of a resource variable.
    environment: Any = None
    #: Positions of float32 inputs the op takes as float32 or float16 arrays alike, exactly
    #: (QUANTIZE), and of float32 outputs it can produce in float32 under any storage
    #: (DEQUANTIZE): the partition keeps such tensors in float32 when every use agrees
    #: (``GpuPartitionKernel._float32_kept``), so that ``precision="float16"`` does not round
    #: a quantized model's float inputs and outputs.
    exact_float32_inputs: ClassVar[tuple[int, ...]] = ()
    exact_float32_outputs: ClassVar[tuple[int, ...]] = ()
    #: The tensors (by index) the partition keeps in float32 whatever the storage (set
    #: before ``prepare``).
    float32_tensors: frozenset[int] = frozenset()

    def __init__(self, device: Any, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor], storage: Any = np.float32) -> None:
        self.device = device
        self.xp = device.xp
        self.node = node
        self.op = op
        self.version = version
        self.params = node.params
        self.inputs: list[RuntimeTensor | None] = [tensors[i] if i >= 0 else None for i in node.inputs]
        self.outputs: list[RuntimeTensor] = [tensors[i] for i in node.outputs]
        self.storage = np.dtype(storage)
        self.compute_dtype = np.dtype(np.float32)
        #: Input positions whose constant values ``prepare`` uploaded in its own layout.
        self.prepared_inputs: set[int] = set()

    # -- support ----------------------------------------------------------------------------
    @classmethod
    def rejection_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        """Why this node cannot run on the GPU, or None. Default: float tensors of rank <= 4."""
        for i in (*node.inputs, *node.outputs):
            if i < 0:
                continue
            tensor = tensors[i]
            if tensor.type not in FLOAT_TYPES:
                return TypeReason(f"tensor {tensor.name!r} is {tensor.type_name}; only float32/float16 tensors are supported")
            if len(tensor.shape) > MAX_RANK:
                return f"tensor {tensor.name!r} has rank {len(tensor.shape)}; at most {MAX_RANK} is supported"
        return None

    @staticmethod
    def require_constant(tensors: Sequence[RuntimeTensor], index: int, what: str) -> str | None:
        """A reason when input tensor ``index`` is not a constant (weights the kernel lays out)."""
        if index >= 0 and not tensors[index].is_constant:
            return f"the {what} must be a constant tensor"
        return None

    # -- running --------------------------------------------------------------------------
    def upload(self, array: np.ndarray, dtype: Any = None) -> Any:
        """Copy a constant to the device once (at prepare), in ``dtype`` or the storage dtype."""
        return self.device.upload(array, dtype=self.storage if dtype is None else dtype)

    def prepare(self) -> None:
        """Upload constants in the layout ``run`` wants. Default: nothing."""
        return None

    def device_inputs(self) -> list[int]:
        """The input positions ``run`` reads from ``args``: every present input except index
        tensors and the constants ``prepare`` laid out itself."""
        return [
            p for p, tensor in enumerate(self.inputs)
            if tensor is not None and p not in self.index_inputs and p not in self.prepared_inputs
        ]

    def run(self, args: Sequence[Any]) -> list[Any]:
        """Compute the outputs. ``args[i]`` is the device array of input ``i`` for the
        positions :meth:`device_inputs` names (constants uploaded once, in the storage
        dtype); None elsewhere."""
        raise NotImplementedError
