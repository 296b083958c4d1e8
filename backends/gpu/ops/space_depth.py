"""Moving values between space, depth and batch on the GPU: DEPTH_TO_SPACE, SPACE_TO_DEPTH
(float32, int8, uint8, int32), SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND (float32, int8,
uint8), bit-exact (values are moved, never computed).

Semantics are the CPU kernels' (``backends/cpu/kernels/space_depth.py``), i.e. TFLite's
reference kernels:

- DEPTH_TO_SPACE: ``out[n, h*b+i, w*b+j, c] = in[n, h, w, (i*b+j)*C' + c]`` (NHWC);
  SPACE_TO_DEPTH its inverse; the block size from the params. How: ``reshape``,
  ``transpose`` and a copy (a new array, never a view of the input).
- SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND: constant block_shape and paddings / crops;
  SPACE_TO_BATCH_ND pads with 0, or the output's zero point for 8-bit tensors (the CPU
  kernel's rule, TFLite's memset). How: one launch of ``cuda/space_batch.cu`` (its numpy
  twin in host emulation).

Versions claimed (``schema/versioning/op_version.py``):

- DEPTH_TO_SPACE, SPACE_TO_DEPTH 1 (float32, uint8, int32) and 2 (int8).
- SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND 1 (float32 / uint8, 4-D), 2 (int8), 3 (3-D
  inputs); not 4 (int16), nor int32 / int64 tensors (also v1).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from backends.cpu.kernels.reshape import quantization_params
from backends.gpu.cuda.space_batch import SpaceBatchCuda, SpaceBatchGeometry
from backends.gpu.ops.moving_base import (
    INT8_TYPES,
    LayoutOp,
    MovingOp,
    constant_int_reason,
    int_list,
    named_inputs_reason,
    quantization_differs,
)
from schema.enums import BuiltinOperator, TensorType

B = BuiltinOperator
T = TensorType


class _Blocks(LayoutOp):
    """Shared by DEPTH_TO_SPACE and SPACE_TO_DEPTH: a 4-D NHWC input, ``block_size`` >= 1."""

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        reason = named_inputs_reason(node, ("input",))
        if reason:
            return reason
        x = tensors[node.inputs[0]]
        if len(x.shape) != 4:
            return f"the input must be 4-D (NHWC), it has shape {list(x.shape)}"
        block = int(getattr(node.params, "block_size", 0) or 0)
        if block < 1:
            return f"block_size {block} must be positive"
        return cls.shape_reason(x.shape, block) or quantization_differs(x, tensors[node.outputs[0]])

    @classmethod
    def shape_reason(cls, shape, block: int) -> str | None:
        raise NotImplementedError

    def run(self, args):
        # The 6-D view of the input, its axes swapped, copied (C order), seen as the output.
        return [args[0].reshape(self.split).transpose(0, 1, 3, 2, 4, 5).copy().reshape(self.out_shape)]


class DepthToSpace(_Blocks):
    """DEPTH_TO_SPACE v1 (float32, uint8, int32) and v2 (int8)."""

    ops = {B.DEPTH_TO_SPACE: 2}

    @classmethod
    def shape_reason(cls, shape, block):
        if shape[3] % (block * block):
            return f"depth {shape[3]} is not a multiple of block_size^2 = {block * block}"
        return None

    def prepare(self) -> None:
        n, h, w, c = self.inputs[0].shape
        b = int(self.params.block_size)
        self.split = (n, h, w, b, b, c // (b * b))  # -> (n, h, b, w, b, c')
        self.out_shape = (n, h * b, w * b, c // (b * b))


class SpaceToDepth(_Blocks):
    """SPACE_TO_DEPTH v1 (float32, uint8, int32) and v2 (int8)."""

    ops = {B.SPACE_TO_DEPTH: 2}

    @classmethod
    def shape_reason(cls, shape, block):
        if shape[1] % block or shape[2] % block:
            return f"height {shape[1]} and width {shape[2]} must be multiples of block_size {block}"
        return None

    def prepare(self) -> None:
        n, h, w, c = self.inputs[0].shape
        b = int(self.params.block_size)
        self.split = (n, h // b, b, w // b, b, c)  # -> (n, h/b, w/b, b, b, c)
        self.out_shape = (n, h // b, w // b, b * b * c)


class _SpaceBatch(MovingOp):
    """Shared by SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND: v1 (float32, uint8, 4-D), v2
    (int8), v3 (a 3-D input [N, H, C]); constant int32 block_shape and paddings / crops.
    One launch of ``cuda/space_batch.cu``. Not claimed: v4 (int16), and int32 / int64
    tensors (also v1)."""

    index_inputs = (1, 2)
    pairs_name: ClassVar[str]

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 3 or min(node.inputs) < 0:
            return f"expected inputs (input, block_shape, {cls.pairs_name}), got {len(node.inputs)} inputs"
        x, block, pairs, out = (tensors[i] for i in (*node.inputs, node.outputs[0]))
        for tensor, what in ((block, "block_shape"), (pairs, cls.pairs_name)):
            reason = constant_int_reason(tensor, what, (T.INT32,))
            if reason:
                return reason
        if len(x.shape) not in (3, 4):
            return f"the input must be 3-D or 4-D, it has shape {list(x.shape)}"
        spatial = len(x.shape) - 2
        if block.shape != (spatial,) or pairs.shape != (spatial, 2):
            return f"block_shape {list(block.shape)} and {cls.pairs_name} {list(pairs.shape)} must be [{spatial}] and [{spatial}, 2]"
        blocks, amounts = int_list(block), int_list(pairs)
        if min(blocks) <= 0 or min(amounts) < 0:
            return f"block_shape {blocks} must be positive and {cls.pairs_name} {amounts} not negative"
        if x.type in INT8_TYPES:
            reason = quantization_differs(x, out)
            if reason:
                return reason
        return cls.shape_reason(list(x.shape), blocks, np.reshape(amounts, (spatial, 2)).tolist())

    @classmethod
    def shape_reason(cls, shape: list[int], blocks: list[int], amounts: list[list[int]]) -> str | None:
        raise NotImplementedError

    def prepare(self) -> None:
        x, block, pairs = self.inputs
        spatial = len(x.shape) - 2
        amounts = np.reshape(int_list(pairs), (spatial, 2)).tolist()
        geometry = self.geometry(x.shape, int_list(block), amounts)
        out = self.outputs[0]
        fill = quantization_params(out)[1] if out.type in INT8_TYPES else 0
        self.out_shape = tuple(out.shape)
        self.launcher = SpaceBatchCuda(
            geometry, self.to_batch, fill, **self.device.launcher_arguments(SpaceBatchCuda.source)
        )

    def run(self, args):
        return [self.launcher(args[0], self.out_shape)]


class SpaceToBatchNd(_SpaceBatch):
    """SPACE_TO_BATCH_ND v1-v3: H and W padded (with 0, or the output's zero point), then
    each block offset moved to the batch."""

    ops = {B.SPACE_TO_BATCH_ND: 3}
    pairs_name = "paddings"
    to_batch = True
    geometry = staticmethod(SpaceBatchGeometry.space_to_batch)

    @classmethod
    def shape_reason(cls, shape, blocks, amounts):
        for size, b, (before, after) in zip(shape[1:-1], blocks, amounts):
            if (size + before + after) % b:
                return f"a padded size {size + before + after} is not a multiple of its block {b}"
        return None


class BatchToSpaceNd(_SpaceBatch):
    """BATCH_TO_SPACE_ND v1-v3: the batch's blocks moved back into H and W, then cropped."""

    ops = {B.BATCH_TO_SPACE_ND: 3}
    pairs_name = "crops"
    to_batch = False
    geometry = staticmethod(SpaceBatchGeometry.batch_to_space)

    @classmethod
    def shape_reason(cls, shape, blocks, amounts):
        block_size = int(np.prod(blocks))
        if shape[0] % block_size:
            return f"batch {shape[0]} is not a multiple of the block size {block_size}"
        for size, b, (before, after) in zip(shape[1:-1], blocks, amounts):
            if size * b - before - after < 0:
                return f"crops {amounts} are larger than the output"
        return None
