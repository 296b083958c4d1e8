"""DEQUANTIZE: float16, or affine-quantized uint8/int8/int16/int4/int2/uint4, to float32.

``output = scale * (q - zero_point)`` (per tensor, or per channel along
``quantized_dimension``), and float16 widened exactly. TFLite's reference kernel
computes ``scale * (q - zero_point)`` in float/double and rounds once to float32;
here ``q - zero_point`` is exact in float32 (|q - zp| < 2**17) and the product is
rounded once, so the results are bit-identical.

TFLite runs every version with one kernel that looks only at the input's type
(real models carry float16 DEQUANTIZE nodes stamped v2), so this kernel does too.
A DEQUANTIZE of a constant (fp16 or int8 weights) is folded at prepare.

The GPU delegate's DEQUANTIZE of runtime int8/uint8 tensors (``backends/gpu/ops/quantize.py``)
takes this kernel's Prepare (``configure``: the float32 scale and zero point, per tensor
or shaped per channel) and its arithmetic (:func:`dequantize_affine`, written against
the array namespace).
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.quantization import namespace_of
from schema.enums import BuiltinOperator, TensorType

#: The sub-byte types are held one value an element (``schema.packed``), as TFLite's kernel
#: unpacks them before the same arithmetic.
SUB_BYTE_TYPES = (TensorType.INT4, TensorType.INT2, TensorType.UINT4)
AFFINE_TYPES = (TensorType.UINT8, TensorType.INT8, TensorType.INT16, *SUB_BYTE_TYPES)
#: Up to this many elements a per-tensor DEQUANTIZE is a table lookup (two calls that
#: beat the arithmetic's three on small tensors, and lose on large ones).
TABLE_SIZE_LIMIT = 1024
#: TFLite's per-channel path (PerChannelDequantizeImpl) takes uint8 and int8, and the
#: sub-byte types unpacked into them.
PER_CHANNEL_TYPES = (TensorType.UINT8, TensorType.INT8, *SUB_BYTE_TYPES)


def dequantize_affine(q, scale, zero_point, out=None):
    """``scale * (q - zero_point)`` in float32 (any array namespace): ``q - zero_point``
    is exact in float32 (|q - zp| < 2**17) and the product is rounded once, as TFLite's
    reference. ``scale`` and ``zero_point`` are float32 scalars or arrays broadcast
    against ``q`` (per channel); ``out`` (numpy only) receives the result."""
    if out is None:
        xp = namespace_of(q, scale, zero_point)
        return xp.multiply(xp.subtract(q.astype(np.float32), zero_point), scale).astype(np.float32, copy=False)
    np.subtract(q, zero_point, out=out, dtype=np.float32)  # exact
    np.multiply(out, scale, out=out)  # one rounding, as TFLite
    return out


# v1: uint8 (per tensor; also per channel)
# v2: int8 per tensor
# v3: int16 and float16
# v4: never stamped by op_version.cc (runtime table: 2.2.0); TFLite runs it with the
#     same kernel, so it takes everything v1-v3 and v5 take
# v5: int8 per channel
# v6 int4, v7 int2, v8 uint4 (per tensor or per channel)
# v9: LiteRT 2.3 registers it and TFLite's tables predate it; its kernel takes the types
#     above and no other (tests/cpu/test_dequantize.py), so v9 here too.
@register(BuiltinOperator.DEQUANTIZE, 1, 9)
class Dequantize(CpuKernel):
    """DEQUANTIZE v1-v9: uint8/int8/int4/int2/uint4 (per tensor or per channel), int16 and
    float16 to float32."""

    def prepare(self) -> None:
        self.configure()
        self.outputs[0].resize(self.inputs[0].shape)

    def configure(self) -> None:
        """The checks and ``self.scale``/``self.zero_point`` (float32; None for float16),
        with no effect on the tensors: also what another backend calls to reuse them
        (raises ``UnsupportedKernelError``)."""
        self.require_num_inputs(1)
        x, out = self.inputs[0], self.outputs[0]
        self.require_types(x, TensorType.FLOAT16, *AFFINE_TYPES)
        self.require_types(out, TensorType.FLOAT32, role="output")
        self.scale = self.zero_point = None
        if x.type == TensorType.FLOAT16:
            return
        q = x.quantization
        if q is None or not q.is_quantized:
            raise self.unsupported(f"input {x.name!r} of type {x.type_name} has no quantization scale")
        scale = np.asarray(q.scale, dtype=np.float32)
        zero_point = np.asarray(q.zero_point, dtype=np.float32)
        if q.is_per_channel:
            axis = int(q.quantized_dimension)
            if x.type not in PER_CHANNEL_TYPES:
                raise self.unsupported(
                    f"per-channel {x.type_name} input; per-channel dequantize takes UINT8, INT8, INT4, INT2 and UINT4"
                )
            if not 0 <= axis < len(x.shape) or x.shape[axis] != scale.size:
                raise self.unsupported(
                    f"input {x.name!r} has {scale.size} scales along quantized_dimension {axis} "
                    f"but shape {list(x.shape)}"
                )
            channel_shape = [1] * len(x.shape)
            channel_shape[axis] = scale.size
            self.scale, self.zero_point = scale.reshape(channel_shape), zero_point.reshape(channel_shape)
        else:
            self.scale, self.zero_point = np.float32(scale[0]), np.float32(zero_point[0])

    def bind(self) -> Callable[[], None]:
        if self.scale is None or not self.buffers_are_fixed():
            return self.invoke
        x, out = self.inputs[0].data, self.outputs[0].data
        if x.size > TABLE_SIZE_LIMIT:
            zero_point = np.full(x.shape, self.zero_point, np.float32)
            scale = np.full(x.shape, self.scale, np.float32)
            subtract, multiply = np.subtract, np.multiply

            def dequantize() -> None:
                out[...] = x  # exact
                subtract(out, zero_point, out=out)  # exact
                multiply(out, scale, out=out)  # one rounding, as TFLite

            return dequantize
        # Small inputs: every value's result in a table (the same float32 arithmetic),
        # indexed by the value modulo the table's size, i.e. by its bit pattern.
        if np.ndim(self.scale) != 0:
            return self.invoke
        values = np.arange(1 << (8 * x.dtype.itemsize), dtype=np.uint64).astype(f"u{x.dtype.itemsize}").view(x.dtype)
        table = np.subtract(values, self.zero_point, dtype=np.float32)
        np.multiply(table, self.scale, out=table)
        index, take = np.empty(x.shape, np.intp), table.take

        def look_up() -> None:
            index[...] = x
            take(index, None, out, "wrap")

        return look_up

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        if self.scale is None:
            widen_float16(x, out)
            return
        dequantize_affine(x, self.scale, self.zero_point, out=out)


#: Above this many values a float16 array is widened through ``_half_table`` (numpy's own
#: float16 -> float32 cast takes ~2 ns a value, the table ~1 ns: a model's float16 weights,
#: folded at prepare, are millions of values).
HALF_TABLE_MIN = 1 << 14
#: The table path converts this many values at a time (its index buffer: 512 KiB).
HALF_CHUNK = 1 << 16


@functools.lru_cache(maxsize=1)
def _half_table() -> np.ndarray:
    """float32 value of every float16 bit pattern (numpy's exact cast), 256 KiB."""
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)


def widen_float16(x: np.ndarray, out: np.ndarray) -> None:
    """``out[...] = x`` for a float16 ``x`` (float32 ``out`` of its shape): exact, the same
    bits as numpy's cast (NaN payloads included), through a table of every bit pattern for
    large contiguous arrays."""
    if x.size < HALF_TABLE_MIN or not (x.flags.c_contiguous and out.flags.c_contiguous):
        out[...] = x
        return
    bits, flat, take = x.reshape(-1).view(np.uint16), out.reshape(-1), _half_table().take
    index = np.empty(min(HALF_CHUNK, bits.size), np.intp)
    for start in range(0, bits.size, HALF_CHUNK):
        part = bits[start : start + HALF_CHUNK]
        chunk = index[: part.size]
        chunk[...] = part
        take(chunk, None, flat[start : start + part.size], "clip")

