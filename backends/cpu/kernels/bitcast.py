"""BITCAST: the input's bytes read as another type.

TFLite (``kernels/bitcast.cc``), with ``in`` and ``out`` the two types' sizes in bytes:

- same size: the output has the input's shape;
- a wider input: a last axis of ``in / out`` elements is appended
  (float32 [2, 3] -> int8 [2, 3, 4]);
- a narrower input: its last axis must hold exactly ``out / in`` elements, and goes
  (uint8 [2, 4] -> float32 [2]).

The output's type is the one the model declares for it; its shape is computed, whatever
the model declares. Version 1 (the only one): every type with a fixed size and a numpy
type here, bfloat16 included (not STRING or the sub-byte INT4/INT2/UINT4, which this
runtime holds one value an element, not packed). Bytes are read in this
machine's order (little-endian, as TFLite's ``memcpy`` on the platforms it runs on).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from schema.enums import NUMPY_DTYPE_OF_TENSOR_TYPE, BuiltinOperator, TensorType

T = TensorType

#: Types with a fixed size in bytes and a numpy dtype.
FIXED_SIZE_TYPES = tuple(
    t for t, dtype in NUMPY_DTYPE_OF_TENSOR_TYPE.items() if dtype != np.object_ and t not in (T.RESOURCE, T.VARIANT)
)


@register(BuiltinOperator.BITCAST, 1, 1)  # v1 (the only version): every fixed-size type
class Bitcast(CpuKernel):
    """BITCAST v1."""

    def prepare(self) -> None:
        self.output_shares_input = False
        self.require_num_inputs(1)
        x, out = self.inputs[0], self.outputs[0]
        self.require_types(x, *FIXED_SIZE_TYPES)
        self.require_types(out, *FIXED_SIZE_TYPES, role="output")
        size_in, size_out = x.dtype.itemsize, out.dtype.itemsize
        shape = list(x.shape)
        if size_in > size_out:
            shape.append(size_in // size_out)
        elif size_in < size_out:
            ratio = size_out // size_in
            if not shape or shape[-1] != ratio:
                raise self.unsupported(
                    f"input {x.name!r} {x.type_name} {shape} -> output {out.type_name}: the input's last axis must "
                    f"hold {ratio} elements ({size_out} bytes / {size_in} bytes), it has "
                    f"{shape[-1] if shape else 'no axis (a scalar)'}"
                )
            shape.pop()
        out.resize(shape)
        self.output_shares_input = True

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        out.reshape(-1).view(np.uint8)[...] = np.ascontiguousarray(x).reshape(-1).view(np.uint8)
