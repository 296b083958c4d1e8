"""PAD, PADV2 (constant padding) and MIRROR_PAD (REFLECT / SYMMETRIC).

Both write the input into the middle of the output and fill the borders (no padded
temporary). The views of the output (middle, border slabs) are made once per
allocation. PAD fills the whole output first, then copies the middle, when the output
is small or the last axis is padded (one contiguous fill beats many short strided
border writes); otherwise it writes only the border slabs, one axis at a time.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._window import record_pair, same_arrays
from backends.cpu.kernels.reshape import (
    INDEX_TYPES,
    MOVABLE_TYPES,
    QUANTIZED_TYPES,
    checked_bytes,
    inputs_pending,
    quantization_params,
    require_int16_zero_point_0,
    require_same_quantization,
)
from schema.enums import BuiltinOperator, MirrorPadMode, TensorType

T = TensorType
PADDING_TYPES = (T.INT32, T.INT64, T.INT8, T.INT16, T.BOOL)


def read_paddings(kernel: CpuKernel, paddings, rank: int) -> list[tuple[int, int]]:
    if paddings.shape != (rank, 2):
        raise kernel.unsupported(f"paddings has shape {list(paddings.shape)}; it must be [{rank}, 2]")
    values = np.asarray(paddings.data).astype(np.int64).reshape(rank, 2)
    if (values < 0).any():
        raise kernel.unsupported(f"paddings {values.tolist()} has a negative entry")
    return [(int(a), int(b)) for a, b in values]


def pads_quantized(x) -> bool:
    """Whether PAD/PADV2 treat ``x`` as quantized (uint8 always; int8/int16 with a scale)."""
    return x.type == T.UINT8 or (x.type in QUANTIZED_TYPES and quantization_params(x) != (0.0, 0))


def default_pad_value(x, out) -> int:
    """The value PAD (and PADV2 without its value input) fills with: the output's zero
    point for quantized tensors, else 0. Shared by the CPU kernel and the GPU delegate;
    a ValueError when the zero point does not fit the type."""
    value = quantization_params(out)[1] if pads_quantized(x) else 0
    low, high = (np.iinfo(x.dtype).min, np.iinfo(x.dtype).max) if x.dtype.kind in "iu" else (0, 0)
    if not low <= value <= high:
        raise ValueError(f"the output zero point {value} is outside the {x.type_name} range")
    return value


def along(axis: int, index: slice) -> tuple[slice, ...]:
    return (slice(None),) * axis + (index,)


class _PadBase(CpuKernel):
    """Shared plan: output shape, where the input goes, and the border slabs."""

    def plan(self, shape, pads) -> list[int]:
        self.pads = pads
        self.inner = tuple(slice(a, a + d) for d, (a, _) in zip(shape, pads))
        return [d + a + b for d, (a, b) in zip(shape, pads)]

    def output(self) -> np.ndarray:
        """The output array; for a dynamic output, (re)plan from the current paddings."""
        x, out = self.inputs[0], self.outputs[0]
        if self.from_values:
            shape = self.plan(x.data.shape, read_paddings(self, self.inputs[1], x.data.ndim))
            checked_bytes(self, shape, x.dtype, f"output {out.name!r}")
            out.set_data(np.empty(shape, x.dtype))
        return out.data


# v1: float32, int32, int64, uint8 up to 4-D; v2: int8; v3: int16; v4: 5-D; v5: bool. v6:
# LiteRT 2.3 registers it (TFLite's tables predate it); its kernel adds float16 and bfloat16,
# and so does this one at every version.
@register(BuiltinOperator.PAD, 1, 6)
@register(BuiltinOperator.PADV2, 1, 6)
class Pad(_PadBase):
    """PAD and PADV2 v1-v6: constant padding (0, the quantized zero, or PADV2's value)."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        x, paddings = self.inputs[0], self.inputs[1]
        value = self.inputs[2] if len(self.inputs) > 2 else None
        out = self.outputs[0]
        self.require_types(x, *MOVABLE_TYPES, T.FLOAT16, T.BFLOAT16)
        self.require_types(paddings, *PADDING_TYPES, role="paddings")
        self.require_types(out, x.type, role="output")
        if value is not None:
            self.require_types(value, x.type, role="constant value")
            if value.num_elements != 1:
                raise self.unsupported(f"the constant value must be a single value, it has shape {list(value.shape)}")
        # Quantized tensors pad with the quantized zero; a given value must share the scale.
        if pads_quantized(x) and value is not None:
            require_same_quantization(self, value, out)
        try:
            self.default_value = 0 if value is not None else default_pad_value(x, out)
        except ValueError as error:
            raise self.unsupported(str(error)) from None
        self.from_values = not paddings.is_constant or len(x.shape) == 0
        if self.from_values:
            out.set_dynamic()
            return
        out.resize(self.plan(x.shape, read_paddings(self, paddings, len(x.shape))))

    def invoke(self) -> None:
        x = self.inputs[0].data
        out = self.output()
        given = self.inputs[2] if len(self.inputs) > 2 else None
        value = given.data.reshape(()) if given is not None else self.default_value
        if not same_arrays(self._bound, (x, out)):
            self._bind(x, out)
        if self.borders is None:
            out.fill(value)
        else:
            for border in self.borders:
                border[...] = value
        middle, source = self.middle
        middle[...] = source

    def bind(self) -> Callable[[], None]:
        """``invoke`` as a function of no argument on this allocation's buffers."""
        if getattr(self, "from_values", True) or not self.buffers_are_fixed():  # (not prepared: inputs pending)
            return self.invoke
        x, out = self.inputs[0].data, self.outputs[0].data
        self._bind(x, out)
        given = self.inputs[2] if len(self.inputs) > 2 else None
        value = given.data.reshape(()) if given is not None else self.default_value  # (a view: read at each call)
        (middle, source), borders = self.middle, self.borders
        if borders is None:
            fill = out.fill

            def pad() -> None:
                fill(value)
                middle[...] = source

            return pad

        def pad_borders() -> None:
            for border in borders:
                border[...] = value
            middle[...] = source

        return pad_borders

    _bound = None

    def _bind(self, x: np.ndarray, out: np.ndarray) -> None:
        """Views of the output: its middle and, unless the whole output is filled, the
        border slabs of each axis (in the order the previous versions wrote them)."""
        self.middle = record_pair(out[self.inner], x)
        last_axis_padded = bool(self.pads) and any(self.pads[-1])
        if out.size <= 4096 or last_axis_padded:
            self.borders = None
        else:
            self.borders = []
            for axis, (before, after) in enumerate(self.pads):
                if before:
                    self.borders.append(out[along(axis, slice(0, before))])
                if after:
                    self.borders.append(out[along(axis, slice(out.shape[axis] - after, None))])
        # A dynamic output is a new array at every invoke: nothing to keep then.
        self._bound = None if self.from_values else (x, out)


# v1: float32, int32, int64, uint8; v2: int8; v3: int16.
@register(BuiltinOperator.MIRROR_PAD, 1, 3)
class MirrorPad(_PadBase):
    """MIRROR_PAD v1-v3: REFLECT (edge not repeated) or SYMMETRIC (edge repeated) padding."""

    def prepare(self) -> None:
        if inputs_pending(self):
            return
        x, paddings, out = self.inputs[0], self.inputs[1], self.outputs[0]
        self.require_types(x, *MOVABLE_TYPES, T.COMPLEX64)
        self.require_types(paddings, *INDEX_TYPES, role="paddings")
        self.require_types(out, x.type, role="output")
        if x.type in QUANTIZED_TYPES:
            require_same_quantization(self, x, out)
            require_int16_zero_point_0(self, x, out)
        # REFLECT skips the edge element (offset 1), SYMMETRIC repeats it (offset 0).
        self.edge = 1 if self.params.mode == MirrorPadMode.REFLECT else 0
        self.from_values = not paddings.is_constant
        if self.from_values:
            out.set_dynamic()
            return
        out.resize(self.plan(x.shape, self.checked(read_paddings(self, paddings, len(x.shape)), x.shape)))

    def checked(self, pads, shape):
        for axis, ((before, after), size) in enumerate(zip(pads, shape)):
            if max(before, after) > size - self.edge:
                mode = "REFLECT" if self.edge else "SYMMETRIC"
                raise self.unsupported(
                    f"{mode} padding {[before, after]} of axis {axis} is larger than {size - self.edge} (size {size})"
                )
        return pads

    def invoke(self) -> None:
        x = self.inputs[0].data
        if self.from_values:
            self.checked(read_paddings(self, self.inputs[1], x.ndim), x.shape)
        out = self.output()
        out[self.inner] = x
        edge = self.edge
        for axis, ((before, after), size) in enumerate(zip(self.pads, x.shape)):
            # Left border position p mirrors output position 2*before - 1 + edge - p.
            if before:
                first = 2 * before - 1 + edge
                out[along(axis, slice(0, before))] = out[along(axis, slice(first, first - before, -1))]
            # Right border position before+size+q mirrors before+size-1-edge-q.
            if after:
                first = before + size - 1 - edge
                stop = first - after
                out[along(axis, slice(before + size, None))] = out[
                    along(axis, slice(first, stop if stop >= 0 else None, -1))
                ]
