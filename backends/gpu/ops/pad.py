"""Padding on the GPU: PAD and PADV2 (constant fill; float32, int8, uint8) and MIRROR_PAD
(float32, int8, uint8, int32), bit-exact (values are moved, never computed).

Semantics are the CPU kernels' (``backends/cpu/kernels/pad.py``):

- PAD (v1 float32/uint8, v2 int8) and PADV2 (the same versions): constant paddings; the
  fill value is PADV2's value input, or else the output's zero point for quantized
  tensors and 0 otherwise (``pad.default_pad_value``, the CPU kernel's own). PADV2's
  value must share the output's quantization (TFLite's rule). A constant value is read
  at prepare; a runtime one is read on the device.
- MIRROR_PAD: REFLECT (edge not repeated) or SYMMETRIC (edge repeated) by constant
  paddings, each at most the axis size (minus 1 for REFLECT), as TFLite requires.

How: float32 PAD (``Pad``) is one launch of ``cuda/layout.cu``'s pad kernel, which writes
every output element (the value, or the input's); so is a float32 PADV2 with a constant
value. PAD / PADV2 of 8-bit tensors with a known fill are one launch of
``cuda/int8_layout.cu``. A PADV2 whose value is a runtime tensor fills a new array and
assigns the input into it (two operations). MIRROR_PAD: the source index of every output
position of each axis is computed on the host at prepare; run is one launch of
``cuda/layout.cu``'s gather along every axis (any element type). In host emulation each
launch runs its kernel's numpy twin.

Versions claimed (``schema/versioning/op_version.py``):

- PAD 1 (float32, uint8) and 2 (int8); PADV2 1 (float32, uint8) and 2 (int8). Versions
  3+ (int16, rank 5, bool) are not claimed.
- MIRROR_PAD 1 (float32, uint8, int32) and 2 (int8); not 3 (int16).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from backends.cpu.kernels.pad import default_pad_value, pads_quantized
from backends.gpu.cuda.int8_layout import BytePadCuda
from backends.gpu.cuda.layout import GatherAxesCuda, PadCuda, gather_tables
from backends.gpu.ops.base import FloatOp, input_tensor
from backends.gpu.ops.moving_base import (
    INDEX_TYPES,
    LayoutOp,
    MovingOp,
    constant_int_reason,
    constant_shape_int_reason,
    named_inputs_reason,
    quantization_differs,
)
from schema.enums import BuiltinOperator, MirrorPadMode

B = BuiltinOperator


def paddings_reason(paddings, rank: int) -> str | None:
    """Why the constant ``paddings`` are not the ``[rank, 2]`` (before, after) counts of a
    padding op, none negative."""
    if paddings.shape != (rank, 2):
        return f"paddings has shape {list(paddings.shape)}; it must be [{rank}, 2]"
    pads = np.asarray(paddings.data).astype(np.int64).reshape(rank, 2)
    if (pads < 0).any():
        return f"paddings {pads.tolist()} has a negative entry"
    return None


class Pad(FloatOp):
    """PAD version 1 (float32, rank <= 4, constant paddings, value 0)."""

    ops = {B.PAD: 1}
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 2 or min(node.inputs) < 0:
            return f"expected inputs (input, paddings), got {len(node.inputs)} inputs"
        x, paddings = (tensors[i] for i in node.inputs)
        return constant_shape_int_reason(paddings, "paddings") or paddings_reason(paddings, len(x.shape))

    def prepare(self) -> None:
        x = self.inputs[0]
        self.paddings = np.asarray(self.inputs[1].data).astype(np.int64).reshape(len(x.shape), 2).tolist()
        self.launcher = PadCuda(self.storage, **self.device.launcher_arguments("layout.cu"))

    def run(self, args):
        return [self.launcher(args[0], self.paddings, 0.0)]


class ConstantPad(MovingOp):
    """PAD and PADV2 v1 (float32, uint8) and v2 (int8): constant paddings, filled with
    PADV2's value or the quantized zero."""

    ops = {B.PAD: 2, B.PADV2: 2}
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) not in (2, 3) or node.inputs[0] < 0 or node.inputs[1] < 0:
            return f"expected inputs (input, paddings[, constant value]), got {len(node.inputs)} inputs"
        x, paddings, out = tensors[node.inputs[0]], tensors[node.inputs[1]], tensors[node.outputs[0]]
        reason = constant_int_reason(paddings, "paddings")
        if reason:
            return reason
        if len(x.shape) == 0:
            return "a scalar input cannot be padded on the GPU"
        reason = paddings_reason(paddings, len(x.shape))
        if reason:
            return reason
        value = input_tensor(node, tensors, 2)
        if value is not None:
            if value.num_elements != 1:
                return f"the constant value must be a single value, it has shape {list(value.shape)}"
            if pads_quantized(x):
                return quantization_differs(value, out)
            return None
        try:
            default_pad_value(x, out)
        except ValueError as error:
            return str(error)
        return None

    def prepare(self) -> None:
        x, out = self.inputs[0], self.outputs[0]
        rank = len(x.shape)
        pads = np.asarray(self.inputs[1].data).astype(np.int64).reshape(rank, 2)
        self.inner = tuple(slice(int(a), int(a) + d) for d, (a, _) in zip(x.shape, pads))
        self.out_shape = tuple(out.shape)
        self.dtype = self.output_dtype()
        value = self.inputs[2] if len(self.inputs) > 2 else None
        if value is None:
            self.fill: Any = default_pad_value(x, out)
        elif value.is_constant:
            self.fill = np.asarray(value.data).reshape(()).item()  # a Python scalar: no host array at run
            self.prepared_inputs.add(2)
        else:
            self.fill = None  # read on the device at each run
        self.launcher = self.float_launcher = None
        if self.dtype.itemsize == 1 and self.fill is not None:
            after = [int(o) - int(d) - int(b) for o, d, b in zip(out.shape, x.shape, pads[:, 0])]
            self.launcher = BytePadCuda(
                pads[:, 0].tolist(), after, int(self.fill), self.dtype, **self.device.launcher_arguments(BytePadCuda.source)
            )
        elif self.dtype.kind == "f" and self.fill is not None:
            self.pads = pads.tolist()
            self.float_launcher = PadCuda(self.dtype, **self.device.launcher_arguments(PadCuda.source))

    def run(self, args):
        xp = self.xp
        if self.launcher is not None:
            return [self.launcher(args[0])]
        if self.float_launcher is not None:
            return [self.float_launcher(args[0], self.pads, float(self.fill))]
        if self.fill is not None:
            out = xp.full(self.out_shape, self.fill, dtype=self.dtype)
        else:
            out = xp.empty(self.out_shape, dtype=self.dtype)
            out[...] = args[2].reshape(())
        out[self.inner] = args[0]
        return [out]


def mirror_sources(size: int, before: int, after: int, reflect: bool) -> np.ndarray:
    """The input index each output position of a mirror-padded axis reads (REFLECT skips
    the edge element, SYMMETRIC repeats it: numpy's ``reflect`` and ``symmetric``)."""
    return np.pad(np.arange(size, dtype=np.int64), (before, after), mode="reflect" if reflect else "symmetric")


class MirrorPad(LayoutOp):
    """MIRROR_PAD v1 (float32, uint8, int32) and v2 (int8), REFLECT and SYMMETRIC,
    constant paddings."""

    ops = {B.MIRROR_PAD: 2}
    index_inputs = (1,)

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = named_inputs_reason(node, ("input", "paddings"))
        if reason:
            return reason
        x, paddings = (tensors[i] for i in node.inputs)
        reason = constant_int_reason(paddings, "paddings", INDEX_TYPES)
        if reason:
            return reason
        rank = len(x.shape)
        if rank == 0:
            return "a scalar input cannot be padded on the GPU"
        reason = paddings_reason(paddings, rank)
        if reason:
            return reason
        mode = int(getattr(node.params, "mode", MirrorPadMode.REFLECT))
        if mode not in (MirrorPadMode.REFLECT, MirrorPadMode.SYMMETRIC):
            return f"mirror pad mode {mode} is not REFLECT or SYMMETRIC"
        edge = 1 if mode == MirrorPadMode.REFLECT else 0
        pads = np.asarray(paddings.data).astype(np.int64).reshape(rank, 2)
        for axis, ((before, after), size) in enumerate(zip(pads.tolist(), x.shape)):
            if max(before, after) > size - edge:
                name = MirrorPadMode(mode).name
                return f"{name} padding {[before, after]} of axis {axis} is larger than {size - edge} (size {size})"
        return quantization_differs(x, tensors[node.outputs[0]])

    def prepare(self) -> None:
        x = self.inputs[0]
        reflect = int(self.params.mode) == MirrorPadMode.REFLECT
        pads = np.asarray(self.inputs[1].data).astype(np.int64).reshape(len(x.shape), 2)
        sources = [mirror_sources(size, before, after, reflect) for (before, after), size in zip(pads.tolist(), x.shape)]
        self.out_shape = tuple(len(s) for s in sources)
        self.tables = self.upload(gather_tables(sources), np.int32)
        self.gather = GatherAxesCuda(**self.device.launcher_arguments("layout.cu"))

    def run(self, args):
        return [self.gather(args[0], self.tables, self.out_shape)]
