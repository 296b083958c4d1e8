"""The base classes of GPU-delegate ops: array-namespace (``xp``) code that runs the same
on cupy (a device) and numpy (host emulation, and the tests).

- :class:`GpuOp`: one node inside a GPU partition (the support claim, prepare, run);
- :class:`FloatOp`: the float32 tensor check with readable reasons, and the per-op hook
  ``node_reason``;
- :class:`TypedOp`: the same over the types a class lists (the comparisons, SELECT, the
  logical ops, CAST);
- the checks the op families share (``tensor_reason``, ``inputs_reason``,
  ``broadcast_reason``, ``input_tensor``) and the fused activations
  (``fused_activation``, ``fused_activation_reason``, ``clamp_bounds``, ``clamp``...).

The quantized ops' base, :class:`~backends.gpu.ops.quantized_base.QuantizedOp`, is in
``quantized_base.py``; the ops that move values without arithmetic share ``moving_base.py``.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Sequence

import numpy as np

from backends.cpu.common import broadcast_shape, calculate_activation_range
from backends.gpu.tactics import TacticChoice, TacticRequest, TacticSettings
from backends.gpu.tactics import choose as choose_tactic
from delegate_sdk.node import Node
from delegate_sdk.tensor import RuntimeTensor
from schema.enums import ActivationFunctionType, TensorType, builtin_operator_name

Act = ActivationFunctionType
T = TensorType

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
    #: How the op chooses among its candidate kernels (``backends/gpu/tactics.py``): the
    #: delegate's timing source, cache and options (set before ``prepare``).
    tactic_settings: TacticSettings = TacticSettings()
    #: What it chose (``tactics.TacticChoice``: the kernel, the runner-up, the times, the
    #: candidates that failed their check); None for an op with one kernel.
    tactic: TacticChoice | None = None

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

    def finish_prepare(self) -> None:
        """Choose among the op's candidate kernels (``choose_kernel``), once ``fusion.py`` has
        folded its nodes into this one: the partition calls it after fusion, ``run`` if nobody
        did. Default: nothing to choose."""
        return None

    @property
    def label(self) -> str:
        """``"CONV_2D v1 (node 3)"``."""
        return f"{builtin_operator_name(self.op)} v{self.version} (node {self.node.index})"

    def choose_kernel(
        self, family: str, table: Sequence[Any], problem: Any, arguments: dict[str, Any],
        arrays: Callable[[], dict[str, Any]], call: Callable[[Any, Any], Any],
        timed_arrays: Callable[[], dict[str, Any]] | None = None,
    ) -> Any:
        """The launcher of the row of ``table`` that runs this node (``tactics.choose``: the rows
        that apply, checked on the device against the twin with ``arrays()``, the fastest by
        ``call(launcher, device arrays)`` on ``timed_arrays()``, default the check's), recorded
        in ``self.tactic``."""
        request = TacticRequest(
            family, table, problem, arguments, arrays, call, self.label, self.node.index, self.storage.name, timed_arrays,
        )
        tactic, self.tactic = choose_tactic(self.device, request, self.tactic_settings)
        return tactic.build(self.device, arguments)

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


#: Fused activations the GPU ops take (SIGN_BIT is rejected).
FUSED_ACTIVATIONS = (Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1, Act.TANH)


def activation_name(activation: int) -> str:
    try:
        return Act(activation).name
    except ValueError:
        return f"unknown ({activation})"


def fused_activation(params: Any) -> int:
    return int(getattr(params, "fused_activation_function", Act.NONE) or Act.NONE) if params is not None else int(Act.NONE)


def fused_activation_reason(params: Any, allowed: Sequence[int] = FUSED_ACTIVATIONS) -> str | None:
    """A reason when the node's fused activation is not one of ``allowed``."""
    activation = fused_activation(params)
    if activation not in allowed:
        names = ", ".join(Act(a).name for a in allowed)
        return f"fused activation {activation_name(activation)} is not supported (supported: {names})"
    return None


def clamp_bounds(activation: int) -> tuple[float, float] | None:
    """The clamp of a fused activation as the float conv/pool/FC/concat kernels apply it
    (TFLite's ``CalculateActivationRange``; NONE and TANH: no clamp at all, RELU: no
    upper bound). A fused TANH is never applied by TFLite's float kernels."""
    if activation == Act.RELU:
        return (0.0, float("inf"))
    if activation == Act.RELU6:
        return (0.0, 6.0)
    if activation == Act.RELU_N1_TO_1:
        return (-1.0, 1.0)
    return None


def saturating_bounds(activation: int) -> tuple[float, float]:
    """The clamp of the binary ops, convolutions, fully-connected layers and pools:
    ``ActivationFunctionWithMinMax`` over TFLite's ``CalculateActivationRange<float>``, so
    NONE/TANH clamp to +-FLT_MAX and RELU to [0, FLT_MAX] (+-inf saturates)."""
    return calculate_activation_range(activation, np.float32)


def clamp(xp: Any, values: Any, bounds: tuple[float, float] | None) -> Any:
    """``min(max(values, low), high)`` (a new array), or ``values`` for no bounds."""
    if bounds is None:
        return values
    low, high = bounds
    if high == float("inf"):
        return xp.maximum(values, low)
    return xp.clip(values, low, high)


def input_tensor(node: Node, tensors: Sequence[RuntimeTensor], position: int) -> RuntimeTensor | None:
    """Input ``position`` of the node (None when absent or omitted)."""
    if position >= len(node.inputs) or node.inputs[position] < 0:
        return None
    return tensors[node.inputs[position]]


class FloatOp(GpuOp):
    """A GPU op on float32 tensors. Subclasses list in ``index_inputs`` the input positions
    that hold integers (paddings, axes, shapes, sizes: read on the host at prepare), and
    add their own conditions in :meth:`node_reason`."""

    ops: ClassVar[dict[int, int]] = {}
    #: The type of the data tensors (DEQUANTIZE overrides this for its input).
    data_type: ClassVar[int] = TensorType.FLOAT32

    @classmethod
    def rejection_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        checked = [(f"input {p}", i, cls.input_type(p)) for p, i in enumerate(node.inputs) if p not in cls.index_inputs]
        checked += [(f"output {p}", i, TensorType.FLOAT32) for p, i in enumerate(node.outputs)]
        for role, index, expected in checked:
            if index < 0:
                continue
            tensor = tensors[index]
            if tensor.type != expected:
                expected_name = TensorType(expected).name
                return TypeReason(
                    f"{role} {tensor.name!r} is {tensor.type_name}; the GPU delegate runs "
                    f"{builtin_operator_name(op)} on {expected_name} tensors only"
                )
            reason = shape_reason(role, tensor)
            if reason:
                return reason
        return cls.node_reason(node, op, version, tensors)

    @classmethod
    def input_type(cls, position: int) -> int:
        return cls.data_type

    @classmethod
    def node_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        """Per-op conditions (after the type and rank checks). Default: none."""
        return None

    # -- helpers for run ------------------------------------------------------------------
    def compute(self, array: Any) -> Any:
        """``array`` in the compute dtype (no copy when it already is)."""
        return array.astype(self.compute_dtype, copy=False)

    def store(self, array: Any) -> Any:
        """``array`` in the storage dtype (no copy when it already is)."""
        return array.astype(self.storage, copy=False)


def type_names(types: Sequence[int]) -> str:
    return "/".join(TensorType(t).name for t in types)


def shape_reason(role: str, tensor: RuntimeTensor) -> str | None:
    """Why ``tensor``'s shape cannot be a data tensor's on the GPU: a rank above
    ``MAX_RANK``, or a shape known only at run time. None when it can."""
    if len(tensor.shape) > MAX_RANK:
        return f"{role} {tensor.name!r} has rank {len(tensor.shape)}; at most {MAX_RANK} is supported"
    if tensor.is_dynamic:
        return f"{role} {tensor.name!r} has a shape known only at run time (dynamic tensor)"
    return None


def tensor_reason(role: str, tensor: RuntimeTensor, types: Sequence[int], op: int) -> str | None:
    """Why ``tensor`` cannot be one of the op's data tensors: its type, rank, or a shape
    known only at run time. None when it can."""
    if tensor.type not in types:
        return (
            f"{role} {tensor.name!r} is {tensor.type_name}; the GPU delegate runs "
            f"{builtin_operator_name(op)} on {type_names(types)} tensors"
        )
    return shape_reason(role, tensor)


def inputs_reason(node: Node, count: int, what: str) -> str | None:
    """A reason when the node does not have exactly ``count`` present inputs."""
    if len(node.inputs) != count or (count and min(node.inputs) < 0):
        return f"expected {count} input{'s' if count != 1 else ''} ({what}), got {len(node.inputs)}"
    return None


def broadcast_reason(*tensors: RuntimeTensor) -> str | None:
    """A reason when the shapes do not broadcast together, or broadcast above rank 4."""
    shapes = [tuple(t.shape) for t in tensors]
    try:
        shape = broadcast_shape(*shapes)
    except ValueError as error:
        return str(error)
    if len(shape) > MAX_RANK:
        listed = " with ".join(str(list(s)) for s in shapes)
        return f"broadcasting {listed} has rank {len(shape)}; at most {MAX_RANK} is supported"
    return None


def binary_inputs_reason(node: Node, tensors: Sequence[RuntimeTensor]) -> str | None:
    """A reason when the node is not two present inputs (x, y) that broadcast together
    up to rank 4 (``inputs_reason``, then ``broadcast_reason``)."""
    reason = inputs_reason(node, 2, "x, y")
    return reason or broadcast_reason(*(tensors[i] for i in node.inputs))


class TypedOp(GpuOp):
    """A GPU op whose tensors are checked against the types the class lists.

    ``input_types`` / ``output_types`` are the types the data inputs (every input not in
    ``index_inputs``) and the outputs may have; with ``same_type`` every data input and
    output must share one type. Subclasses add their conditions in :meth:`node_reason`.
    Float tensors are held in the storage dtype, the others as they are.
    """

    input_types: ClassVar[tuple[int, ...]] = (T.FLOAT32,)
    output_types: ClassVar[tuple[int, ...]] = (T.FLOAT32,)
    same_type: ClassVar[bool] = True

    @classmethod
    def rejection_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        checked = [(f"input {p}", i, cls.input_types) for p, i in enumerate(node.inputs) if p not in cls.index_inputs]
        checked += [(f"output {p}", i, cls.output_types) for p, i in enumerate(node.outputs)]
        kinds = set()
        for role, index, types in checked:
            if index < 0:
                continue
            reason = tensor_reason(role, tensors[index], types, op)
            if reason:
                return reason
            kinds.add(tensors[index].type)
        if cls.same_type and len(kinds) > 1:
            return f"{builtin_operator_name(op)} mixes {type_names(sorted(kinds))} tensors; they must share one type"
        return cls.node_reason(node, op, version, tensors)

    @classmethod
    def node_reason(cls, node: Node, op: int, version: int, tensors: Sequence[RuntimeTensor]) -> str | None:
        """Per-op conditions (after the type checks). Default: none."""
        return None

    def compute(self, array: Any) -> Any:
        """A float ``array`` in the compute dtype, float32 (no copy when it already is)."""
        return array.astype(self.compute_dtype, copy=False)
