"""Comparisons, logical ops and selection, with numpy broadcasting: LESS, LESS_EQUAL, GREATER,
GREATER_EQUAL, EQUAL, NOT_EQUAL, LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT, SELECT, SELECT_V2.

Facts from TFLite (``kernels/comparisons.cc``, ``logical.cc``, ``select.cc``):

- Comparisons output BOOL; both inputs have one type. Ordering comparisons take float32,
  int32, int64 and plain int16 (GREATER is LESS with the inputs swapped, so NaN compares
  false as in IEEE); EQUAL / NOT_EQUAL also take bool and string. Quantized inputs are
  rescaled before comparing (compare_quantized.py).
- The kernel never reads the node's version: LiteRT runs every type above at every version
  it registers (EQUAL 1-5, NOT_EQUAL 1-4, whatever the converter would stamp; checked with
  LiteRT 2.3, BUILTIN_REF and BUILTIN), strings included. So does this kernel. The writer
  stamps string EQUAL / NOT_EQUAL v3 (schema/versioning/op_version.py).
- NOT_EQUAL on plain (non-quantized) int16 is refused: TFLite's kernel sends it nowhere and
  leaves the output unwritten, so there is no behaviour to match.
- SELECT (v1 kernel): x and y have one shape; the condition has that shape too, or is a
  scalar (selects all of x or all of y), or is 1-D with one entry per x row (dim 0).
  When condition, x, y and output all hold one element, the output keeps the shape the
  model declares.
- SELECT_V2 broadcasts condition, x and y together.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.common import broadcast_shape
from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels.binary import is_quantized
from schema.enums import BuiltinOperator, TensorType

T = TensorType
B = BuiltinOperator

ORDERING_TYPES = (T.FLOAT32, T.INT32, T.INT64, T.INT16)
EQUALITY_TYPES = (T.BOOL, T.FLOAT32, T.INT32, T.INT64, T.INT16, T.STRING)

COMPARISON_UFUNC = {
    B.LESS: np.less,
    B.LESS_EQUAL: np.less_equal,
    B.GREATER: np.greater,
    B.GREATER_EQUAL: np.greater_equal,
    B.EQUAL: np.equal,
    B.NOT_EQUAL: np.not_equal,
}


def require_not_quantized(kernel: CpuKernel, *tensors) -> None:
    for tensor in tensors:
        if tensor is not None and is_quantized(tensor):
            raise kernel.unsupported(
                f"tensor {tensor.name!r} is quantized ({tensor.type_name} with scales); "
                "quantized kernels are not implemented yet, only plain (non-quantized) values"
            )


# v1: float32, int32, int64 (and quantized uint8, not here); v2 int8
@register(B.LESS, 1, 1)
@register(B.GREATER_EQUAL, 1, 1)
# v3: int16 (plain values here)
@register(B.LESS, 3, 3)
@register(B.GREATER_EQUAL, 3, 3)
# v1 (v2 is int8). TFLite stamps no separate version for int16 on these two.
@register(B.LESS_EQUAL, 1, 1)
@register(B.GREATER, 1, 1)
# What the writer stamps: v1 bool, float32, int32, int64 (and quantized uint8); v2 int8
# (quantized); v3 string; EQUAL v5 / NOT_EQUAL v4 int16. Registered at every version LiteRT
# registers, as LiteRT runs every plain type at each (quantized inputs go to
# compare_quantized.py's kernel, registered at the same versions).
@register(B.EQUAL, 1, 5)
@register(B.NOT_EQUAL, 1, 4)
class Comparison(CpuKernel):
    """LESS v1,v3; GREATER_EQUAL v1,v3; LESS_EQUAL v1; GREATER v1; EQUAL v1-v5; NOT_EQUAL v1-v4."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        x, y = self.inputs
        types = EQUALITY_TYPES if self.op in (B.EQUAL, B.NOT_EQUAL) else ORDERING_TYPES
        self.require_types(x, *types, role="input 1")
        self.require_types(y, *types, role="input 2")
        if x.type != y.type:
            raise self.unsupported(f"inputs have types {x.type_name} and {y.type_name}; both must be the same type")
        self.require_types(self.outputs[0], T.BOOL, role="output")
        require_not_quantized(self, x, y)
        if self.op == B.NOT_EQUAL and x.type == T.INT16:
            raise self.unsupported(
                "NOT_EQUAL on plain (non-quantized) int16 is not supported: TFLite's kernel leaves "
                "the output unwritten there, so there is no behaviour to match"
            )
        self.outputs[0].resize(broadcast_shape(x.shape, y.shape))
        self.ufunc = COMPARISON_UFUNC[self.op]
        # numpy compares object (string) arrays elementwise into an object result.
        self.dtype_arg = {"dtype": np.bool_} if x.type == T.STRING else {}

    def invoke(self) -> None:
        self.ufunc(self.inputs[0].data, self.inputs[1].data, out=self.outputs[0].data, **self.dtype_arg)


@register(B.LOGICAL_AND, 1, 1)  # v1: bool
@register(B.LOGICAL_OR, 1, 1)  # v1: bool
class LogicalBinary(CpuKernel):
    """LOGICAL_AND, LOGICAL_OR v1: bool, with broadcasting."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        x, y = self.inputs
        self.require_types(x, T.BOOL, role="input 1")
        self.require_types(y, T.BOOL, role="input 2")
        self.require_types(self.outputs[0], T.BOOL, role="output")
        self.outputs[0].resize(broadcast_shape(x.shape, y.shape))
        self.ufunc = np.logical_and if self.op == B.LOGICAL_AND else np.logical_or

    def invoke(self) -> None:
        self.ufunc(self.inputs[0].data, self.inputs[1].data, out=self.outputs[0].data)


@register(B.LOGICAL_NOT, 1, 1)  # v1: bool
class LogicalNot(CpuKernel):
    """LOGICAL_NOT v1: bool."""

    def prepare(self) -> None:
        self.require_num_inputs(1)
        self.require_types(self.inputs[0], T.BOOL)
        self.require_types(self.outputs[0], T.BOOL, role="output")
        self.outputs[0].resize(self.inputs[0].shape)

    def invoke(self) -> None:
        np.logical_not(self.inputs[0].data, out=self.outputs[0].data)


def merge_bits(out: np.ndarray, condition: np.ndarray, values: np.ndarray, mask: np.ndarray) -> None:
    """``out = condition ? values : out``, bit for bit, with broadcasting.

    Branch-free: numpy's masked copies (``copyto(where=)``, ``where``) slow down several
    times on irregular conditions. ``mask`` is a scratch array of ``out``'s shape whose
    unsigned type has ``out``'s item size. Uses b ^ ((b ^ a) & m) = m ? a : b.
    """
    bits = out.view(mask.dtype)
    value_bits = values.view(mask.dtype)
    np.copyto(mask, condition, casting="unsafe")  # 0 or 1
    np.negative(mask, out=mask)  # 0 or all ones
    np.bitwise_xor(bits, value_bits, out=bits)
    np.bitwise_and(mask, bits, out=mask)
    np.bitwise_xor(bits, value_bits, out=bits)
    np.bitwise_xor(bits, mask, out=bits)


#: Value types SELECT copies (TFLite copies any 8/16/32/64-bit type bit for bit; complex64
#: too, not complex128). Quantized values are copied as they are: TFLite's kernel never reads
#: their scales (not even when x, y and the output differ).
SELECT_TYPES = (
    T.FLOAT32, T.INT32, T.INT64, T.BOOL, T.UINT32, T.INT16, T.INT8, T.UINT8, T.COMPLEX64,
    T.FLOAT16, T.BFLOAT16, T.UINT16, T.FLOAT64,
)


class SelectBase(CpuKernel):
    """Shared checks and invoke: ``out = condition ? x : y`` with numpy broadcasting."""

    def check_types(self) -> None:
        self.require_num_inputs(3)
        condition, x, y = self.inputs
        self.require_types(condition, T.BOOL, role="condition (input 1)")
        self.require_types(x, *SELECT_TYPES, role="x (input 2)")
        self.require_types(y, *SELECT_TYPES, role="y (input 3)")
        if x.type != y.type:
            raise self.unsupported(f"x and y have types {x.type_name} and {y.type_name}; both must be the same type")
        if self.outputs[0].type != x.type:
            raise self.unsupported(f"output has type {self.outputs[0].type_name}; it must be the type of x, {x.type_name}")
        #: Shapes to view condition, x and y with before selecting (None: as they are).
        self.views: tuple | None = None

    def single_element_case(self) -> bool:
        """Every tensor holds one element: TFLite keeps the output shape the model declares
        (so [1] and [1, 1] inputs may give a [1] output). All are then viewed as scalars."""
        if all(int(np.prod(t.shape, dtype=np.int64)) == 1 for t in (*self.inputs, self.outputs[0])):
            self.views = ((), (), ())
            return True
        return False

    def prepare_mask(self) -> None:
        out = self.outputs[0]
        self.mask = np.empty(out.shape, dtype=np.dtype(f"u{out.dtype.itemsize}"))

    def invoke(self) -> None:
        condition, x, y = (t.data for t in self.inputs)
        if self.views is not None:
            condition, x, y = (a.reshape(shape) for a, shape in zip((condition, x, y), self.views))
        out = self.outputs[0].data
        np.copyto(out, y)
        merge_bits(out, condition, x, self.mask)


# v1: condition and values of one shape, scalar or rank-1 condition; v2 int8 (quantized: the
# raw values, as TFLite copies them); v3: 5-D inputs; v4: uint32 values. Every type at every
# version, as TFLite's kernel looks at the types only.
@register(B.SELECT, 1, 4)
class Select(SelectBase):
    """SELECT v1-v4: condition of x's shape, a scalar, or one entry per row of x."""

    def prepare(self) -> None:
        self.check_types()
        condition, x, y = self.inputs
        if self.single_element_case():
            self.outputs[0].resize(self.outputs[0].shape)
            self.prepare_mask()
            return
        if x.shape != y.shape:
            raise self.unsupported(f"x {list(x.shape)} and y {list(y.shape)} must have the same shape (SELECT_V2 broadcasts)")
        if condition.shape != x.shape:
            one_per_row = len(condition.shape) == 1 and len(x.shape) >= 1 and condition.shape[0] == x.shape[0]
            if not (len(condition.shape) == 0 or one_per_row):
                raise self.unsupported(
                    f"condition shape {list(condition.shape)} must equal x's {list(x.shape)}, be a scalar, "
                    "or be 1-D with one entry per row of x (SELECT_V2 broadcasts)"
                )
            # A scalar broadcasts as is; one entry per row broadcasts over the trailing axes.
            self.views = (condition.shape + (1,) * (len(x.shape) - len(condition.shape)), x.shape, y.shape)
        self.outputs[0].resize(x.shape)
        self.prepare_mask()


@register(B.SELECT_V2, 1, 2)  # v1: broadcasting condition, x and y; v2: uint32 values
class SelectV2(SelectBase):
    """SELECT_V2 v1-v2: condition, x and y broadcast together."""

    def prepare(self) -> None:
        self.check_types()
        condition, x, y = self.inputs
        if not self.single_element_case():
            self.outputs[0].resize(broadcast_shape(condition.shape, x.shape, y.shape))
        self.prepare_mask()
