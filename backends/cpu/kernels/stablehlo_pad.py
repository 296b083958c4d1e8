"""STABLEHLO_PAD: edge padding (negative: cropping) and interior padding, with a padding value.

TFLite (``kernels/stablehlo_pad.cc``), StableHLO's ``pad``: inputs (x, padding_value), the
value one element of x's type; options ``edge_padding_low``, ``edge_padding_high`` and
``interior_padding``, one entry per axis of x. Along each axis the elements are spread
``interior + 1`` apart, then ``low`` positions go before and ``high`` after (a negative
count crops that many), the gaps holding the padding value:

    out[low + i * (interior + 1)] = x[i]        (for the positions inside the output)
    out size = size + low + high + max(size - 1, 0) * interior

When an axis's size comes out 0 or negative, LiteRT 2.3 gives an output of size 0 on every
axis (measured), and so does this kernel. Version 1 (the only one) moves bytes: every
fixed-size type.
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._window import _clipped_axis
from backends.cpu.kernels.bitcast import FIXED_SIZE_TYPES
from schema.enums import BuiltinOperator


@register(BuiltinOperator.STABLEHLO_PAD, 1, 1)  # v1 (the only version): every fixed-size type
class StablehloPad(CpuKernel):
    """STABLEHLO_PAD v1."""

    def prepare(self) -> None:
        self.require_num_inputs(2)
        x, value = self.inputs
        self.require_types(x, *FIXED_SIZE_TYPES)
        self.require_types(value, x.type, role="padding_value")
        self.require_types(self.outputs[0], x.type, role="output")
        if value.num_elements != 1:
            raise self.unsupported(f"padding_value {value.name!r} has {value.num_elements} elements; it must hold one")
        rank = len(x.shape)
        if rank == 0:
            raise self.unsupported("the input must have at least one dimension")
        params = self.params
        vectors = {"edge_padding_low": params.edge_padding_low, "edge_padding_high": params.edge_padding_high,
                   "interior_padding": params.interior_padding}
        for name, vector in vectors.items():
            if vector is None or len(vector) != rank:
                raise self.unsupported(
                    f"{name} is {None if vector is None else list(vector)}; it must hold one value per input axis ({rank})"
                )
        if min(params.interior_padding) < 0:
            raise self.unsupported(f"interior_padding {list(params.interior_padding)} must not be negative")
        sizes = [
            size + low + high + max(size - 1, 0) * interior
            for size, low, high, interior in zip(x.shape, params.edge_padding_low, params.edge_padding_high,
                                                 params.interior_padding)
        ]
        if min(sizes) <= 0:
            sizes = [0] * rank  # (LiteRT: an axis of size <= 0 empties them all)
        self.outputs[0].resize(sizes)
        # Per axis: the input positions kept and the output positions they go to.
        self.placement = None
        if min(sizes) > 0:
            axes = [
                _clipped_axis(low, interior + 1, size, out_size)
                for size, low, interior, out_size in zip(x.shape, params.edge_padding_low, params.interior_padding, sizes)
            ]
            if all(axis is not None for axis in axes):
                self.placement = (tuple(a[1] for a in axes), tuple(a[0] for a in axes))

    def invoke(self) -> None:
        x, value = self.inputs
        out = self.outputs[0].data
        out[...] = value.data.reshape(-1)[0]
        if self.placement is not None:
            target, source = self.placement
            out[target] = x.data[source]
