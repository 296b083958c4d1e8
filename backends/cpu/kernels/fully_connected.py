"""FULLY_CONNECTED on float32: ``out = in @ weights.T + bias``, then the fused activation.

Weights are ``[units, depth]``. The input is read as rows of ``depth`` values
(``[size / depth, depth]``); the output is ``[size / depth, units]``, or, with
``keep_num_dims`` (version 5), the input's shape with its last axis (which must then
be ``depth``) replaced by ``units``. The bias is optional (TFLite's reference
``FullyConnected``). One BLAS matmul with the transposed weights view (no copy).
"""

from __future__ import annotations

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._window import activation_bounds, clamp
from schema.enums import ActivationFunctionType, BuiltinOperator, FullyConnectedOptionsWeightsFormat, TensorType

Act = ActivationFunctionType


# v1: float32 input, weights and bias (weights_format DEFAULT).
# v5: keep_num_dims (the output keeps the input's leading dimensions).
# v6: a node with only two inputs (no bias slot at all).
# Not here: v2 (shuffled 4x16 int8 weights), v3/v9/v12 (hybrid: int8 weights on float
# input), v4/v7/v10/v11/v13/v14 (int8/int16/int4/int2), v8 (sparse weights).
@register(BuiltinOperator.FULLY_CONNECTED, 1, 1)
@register(BuiltinOperator.FULLY_CONNECTED, 5, 6)
class FullyConnected(CpuKernel):
    """FULLY_CONNECTED versions 1, 5 and 6 (float32; keep_num_dims, no bias)."""

    def prepare(self) -> None:
        self.require_num_inputs(2, 3)
        x, weights = self.inputs[0], self.inputs[1]
        bias = self.inputs[2] if len(self.inputs) == 3 else None
        params = self.params
        if params.weights_format != FullyConnectedOptionsWeightsFormat.DEFAULT:
            raise self.unsupported(
                f"weights_format {FullyConnectedOptionsWeightsFormat(params.weights_format).name} is not "
                "supported; only DEFAULT (the shuffled format is an int8 optimization of version 2)"
            )
        self.require_types(x, TensorType.FLOAT32, role="input")
        self.require_types(weights, TensorType.FLOAT32, role="weights")
        if bias is not None:
            self.require_types(bias, TensorType.FLOAT32, role="bias")
        self.require_types(self.outputs[0], TensorType.FLOAT32, role="output")
        if weights.sparsity is not None:
            raise self.unsupported("sparse weights (version 8) are not supported; densify them first")
        if len(weights.shape) != 2:
            raise self.unsupported(f"weights must be 2-D [units, depth], got {list(weights.shape)}")
        activation = ActivationFunctionType(params.fused_activation_function)
        if activation not in (Act.NONE, Act.RELU, Act.RELU_N1_TO_1, Act.RELU6):
            # TFLite's Prepare rejects these too (it has no float TANH/SIGN_BIT here).
            raise self.unsupported(f"fused activation {activation.name}; supported: NONE, RELU, RELU_N1_TO_1, RELU6")
        self.bounds = activation_bounds(activation)

        units, depth = weights.shape
        if bias is not None and bias.num_elements != units:
            raise self.unsupported(f"bias has {bias.num_elements} elements, expected {units}")
        size = x.num_elements
        if depth <= 0 or size % depth:
            raise self.unsupported(f"input of {size} elements cannot be split into rows of depth {depth}")
        self.batch = size // depth
        if params.keep_num_dims:
            if not x.shape or x.shape[-1] != depth:
                raise self.unsupported(
                    f"keep_num_dims: the last axis of the input {list(x.shape)} must be the depth {depth}"
                )
            self.outputs[0].resize((*x.shape[:-1], units))
        else:
            self.outputs[0].resize((self.batch, units))

    def invoke(self) -> None:
        x, weights = self.inputs[0].data, self.inputs[1].data
        out = self.outputs[0].data
        rows = out.reshape(self.batch, weights.shape[0])
        np.matmul(x.reshape(self.batch, weights.shape[1]), weights.T, out=rows)
        if len(self.inputs) == 3 and self.inputs[2] is not None:
            np.add(rows, self.inputs[2].data.reshape(-1), out=rows)
        clamp(out, self.bounds)
