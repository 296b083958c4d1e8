"""The runtime tensor: what kernels and delegates read and write (TFLite's ``TfLiteTensor``)."""

from __future__ import annotations

import enum
import math
from typing import Sequence

import numpy as np

from schema.enums import tensor_type_name, value_dtype
from schema.model import Quantization, Sparsity


class Allocation(enum.Enum):
    """Where a tensor's data lives (TFLite's ``TfLiteAllocationType``)."""

    NONE = "none"  #: not allocated yet (or an omitted optional tensor)
    CONSTANT = "constant"  #: read-only data from the model file
    PERSISTENT = "persistent"  #: computed once at prepare time, read-only afterwards
    ARENA = "arena"  #: an activation: a view into the interpreter's arena
    DYNAMIC = "dynamic"  #: shape known only at invoke; the kernel provides the data
    VARIABLE = "variable"  #: state that persists across invokes


class RuntimeTensor:
    """One tensor of a running subgraph.

    ``data`` is a numpy array of ``shape`` and ``dtype`` once allocated. Kernels
    set output shapes in ``prepare`` with :meth:`resize`, mark outputs whose shape
    depends on data with :meth:`set_dynamic`, and publish prepare-time results with
    :meth:`set_constant`.
    """

    __slots__ = (
        "index", "name", "type", "dtype", "shape", "shape_signature", "quantization",
        "sparsity", "data", "allocation", "is_variable",
    )

    def __init__(
        self,
        index: int,
        name: str,
        tensor_type: int,
        shape: Sequence[int],
        *,
        shape_signature: Sequence[int] | None = None,
        quantization: Quantization | None = None,
        sparsity: Sparsity | None = None,
        data: np.ndarray | None = None,
        allocation: Allocation = Allocation.NONE,
        is_variable: bool = False,
    ) -> None:
        self.index = index
        self.name = name
        self.type = tensor_type
        self.dtype = value_dtype(tensor_type)  # int8 / uint8 for the packed sub-byte types
        self.shape = tuple(map(int, shape))
        self.shape_signature = tuple(shape_signature) if shape_signature is not None else None
        self.quantization = quantization
        self.sparsity = sparsity
        self.data = data
        self.allocation = allocation
        self.is_variable = is_variable

    @classmethod
    def from_model(cls, tensor) -> "RuntimeTensor":
        """The runtime tensor of a model's tensor (a ``schema.model.Tensor``, whose shape
        and signature are tuples of ints already): its constant data for a constant, a
        copy of its initial value for a variable that has one, nothing otherwise. Set
        slot by slot: a model's hundreds of tensors paid ~2 us each through ``__init__``."""
        runtime = _NEW(cls)
        data, is_variable = tensor.data, tensor.is_variable
        runtime.index = tensor.index
        runtime.name = tensor.name
        runtime.type = tensor.type
        runtime.dtype = value_dtype(tensor.type)
        runtime.shape = tensor.shape
        runtime.shape_signature = tensor.shape_signature
        runtime.quantization = tensor.quantization
        runtime.sparsity = tensor.sparsity
        runtime.is_variable = is_variable
        if data is None:
            runtime.data, runtime.allocation = None, Allocation.NONE
        elif not is_variable:
            runtime.data, runtime.allocation = data, Allocation.CONSTANT
        else:
            runtime.data, runtime.allocation = np.array(data, copy=True), Allocation.VARIABLE
        return runtime

    # -- what the versioning code and kernels ask ---------------------------------------------
    @property
    def is_constant(self) -> bool:
        """True when the value is known before invoke (from the file, or folded at prepare)."""
        return self.allocation in (Allocation.CONSTANT, Allocation.PERSISTENT)

    @property
    def is_dynamic(self) -> bool:
        return self.allocation is Allocation.DYNAMIC

    @property
    def num_elements(self) -> int:
        count = math.prod(self.shape)
        # exact: a numpy integer among the dimensions makes numpy's (wrapping) product
        return count if type(count) is int else math.prod(map(int, self.shape))

    @property
    def nbytes(self) -> int:
        return self.num_elements * (self.dtype.itemsize if self.dtype is not None else 0)

    @property
    def type_name(self) -> str:
        return tensor_type_name(self.type)

    # -- what kernels do in prepare -------------------------------------------------------------
    def resize(self, shape: Sequence[int]) -> None:
        """Set the shape an output will have; the interpreter allocates after prepare."""
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape):
            raise ValueError(f"tensor {self.name!r}: negative dimension in shape {list(shape)}")
        if self.allocation in (Allocation.CONSTANT, Allocation.PERSISTENT):
            raise ValueError(f"tensor {self.name!r} is constant and cannot be resized")
        if shape != self.shape:
            self.shape = shape
            if self.allocation is not Allocation.DYNAMIC:
                self.data = None

    def set_dynamic(self) -> None:
        """Mark an output whose shape is only known at invoke (the kernel calls set_data then)."""
        self.allocation = Allocation.DYNAMIC
        self.data = None

    def set_static(self) -> None:
        """Undo :meth:`set_dynamic`: ``shape`` is final (for a delegate whose kernel fixes a
        shape the CPU kernel leaves to run time; the interpreter allocates it again)."""
        if self.allocation is Allocation.DYNAMIC:
            self.allocation = Allocation.NONE
            self.data = None

    def set_constant(self, value: np.ndarray) -> None:
        """Publish a value computed at prepare time: the tensor becomes read-only (PERSISTENT)."""
        value = np.asarray(value, dtype=self.dtype)
        self.shape = value.shape
        self.data = value
        self.allocation = Allocation.PERSISTENT

    # -- what kernels do in invoke --------------------------------------------------------------
    def set_data(self, value: np.ndarray) -> None:
        """Give a DYNAMIC output its value (and shape) at invoke time."""
        value = np.asarray(value, dtype=self.dtype)
        self.shape = value.shape
        self.data = value

    def __repr__(self) -> str:
        return (
            f"RuntimeTensor({self.index}, {self.name!r}, {self.type_name}, shape={list(self.shape)}, "
            f"{self.allocation.value})"
        )


_NEW = object.__new__
