"""FULLY_CONNECTED on float32: ``out = in @ weights.T + bias``, then the fused activation.

Weights are ``[units, depth]``. The input is read as rows of ``depth`` values
(``[size / depth, depth]``); the output is ``[size / depth, units]``, or, with
``keep_num_dims`` (version 5), the input's shape with its last axis (which must then
be ``depth``) replaced by ``units``. The bias is optional (TFLite's reference
``FullyConnected``). One BLAS call (``np.dot``, the same sgemm/sgemv as ``np.matmul``
at a third of the call cost on tiny operands) with the transposed weights view (no
copy), then the bias as a prepared array of the output's shape and the clamp bound
to the output buffer (see ``_window``).

Overflow: TFLite clamps every output to the activation range, [lowest, FLT_MAX] even with
no activation, so +-inf comes out as +-FLT_MAX, and its sums are plain float32 additions
in depth order, where BLAS uses its own order and FMA (``-inf + inf`` is NaN in TFLite,
not always in BLAS). One BLAS dot of the input first tells whether any partial sum could
reach the float32 range (``_float_reference``): if not, the matmul's outputs are finite;
if so, TFLite's loop runs instead (slow, exact).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from backends.cpu.kernel import CpuKernel, register
from backends.cpu.kernels._float_reference import (
    OverflowGuard,
    bias_max,
    fully_connected_reference,
    max_row_norm,
    square_limit,
)
from backends.cpu.kernels._window import activation_bounds, check_shapes, make_clamp, remember_shapes, tiled_rows
from schema.enums import ActivationFunctionType, BuiltinOperator, FullyConnectedOptionsWeightsFormat, TensorType

Act = ActivationFunctionType


# v1: float32 input, weights and bias (weights_format DEFAULT).
# v5: keep_num_dims (the output keeps the input's leading dimensions).
# v6: a node with only two inputs (no bias slot at all).
# Not here: v2 (shuffled 4x16 int8 weights), v3/v9/v12 (hybrid: int8 weights on float
# input), v4/v7/v10/v11/v13/v14 (int8/int16/int4/int2), v8 (sparse weights).
@register(BuiltinOperator.FULLY_CONNECTED, 1, 1)
@register(BuiltinOperator.FULLY_CONNECTED, 5, 6)
class FullyConnected(OverflowGuard, CpuKernel):
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
            # TFLite's Prepare rejects these too (fully_connected.cc: "params->activation ==
            # kTfLiteActNone || ... Relu || ReluN1To1 || Relu6").
            raise self.unsupported(f"fused activation {activation.name}; supported: NONE, RELU, RELU_N1_TO_1, RELU6")
        self.activation = activation
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

        self.units, self.depth = units, depth
        self.has_bias = bias is not None
        self.tiled_bias = tiled_rows(bias.data, (self.batch, units)) if bias is not None and bias.is_constant else None
        #: the input sums of squares that the matmul may take (see _float_reference);
        #: None: computed at invoke (weights or bias not constant)
        self.square_limit = None
        if weights.is_constant and (bias is None or bias.is_constant):
            self.square_limit = square_limit(max_row_norm(weights.data), bias_max(None if bias is None else bias.data))
        self._bound = (None, None)
        remember_shapes(self)

    def reference(self) -> None:
        """TFLite's own loop (``_float_reference.fully_connected_reference``): for inputs
        that could overflow."""
        x, out = self.inputs[0].data, self.outputs[0].data
        bias = self.inputs[2].data if self.has_bias else None
        rows = np.empty((self.batch, self.units), np.float32)
        fully_connected_reference(x.reshape(self.batch, self.depth), self.inputs[1].data, bias, self.activation, rows)
        out[...] = rows.reshape(out.shape)

    def _bind(self, x: np.ndarray, out: np.ndarray) -> None:
        """Views of this allocation's input and output buffers (fixed until the next one)."""
        self.x_rows = x.reshape(self.batch, self.depth)
        self.out_rows = out.reshape(self.batch, self.units)
        self.clamp = make_clamp(self.bounds, out)
        # (a reshape of a non-contiguous array is a copy: then bind again at every invoke)
        self._bound = (x, out) if x.flags.c_contiguous else (None, None)

    def bind(self) -> Callable[[], None]:
        """``invoke`` on this allocation's buffers, as one function of no argument."""
        check_shapes(self)
        x, weights, out = self.inputs[0].data, self.inputs[1].data, self.outputs[0].data
        if not self.buffers_are_fixed() or not x.flags.c_contiguous or not self.inputs[1].is_constant:
            return self.invoke
        if self.has_bias and self.tiled_bias is None:
            return self.invoke
        self._bind(x, out)
        # (the input's own dot method: the same BLAS call as np.dot, without its dispatch;
        # positional out arguments: cheaper than keywords)
        dot, out_rows, weights_t, bias, clamp, add = (
            self.x_rows.dot, self.out_rows, weights.T, self.tiled_bias, self.clamp, np.add
        )
        # The overflow guard: the input's sum of squares (one BLAS dot) below the limit.
        flat, limit, reference = self.x_rows.reshape(-1), self.square_limit, self.reference
        squares = flat.dot
        if bias is None and clamp is None:

            def fully_connected_plain() -> None:
                if not squares(flat) < limit:
                    reference()
                    return
                dot(weights_t, out_rows)

            return fully_connected_plain
        if clamp is None:

            def fully_connected() -> None:
                if not squares(flat) < limit:
                    reference()
                    return
                dot(weights_t, out_rows)
                add(out_rows, bias, out_rows)

            return fully_connected
        if bias is None:

            def fully_connected_clamped() -> None:
                if not squares(flat) < limit:
                    reference()
                    return
                dot(weights_t, out_rows)
                clamp()

            return fully_connected_clamped

        def fully_connected_bias_clamped() -> None:
            if not squares(flat) < limit:
                reference()
                return
            dot(weights_t, out_rows)
            add(out_rows, bias, out_rows)
            clamp()

        return fully_connected_bias_clamped

    def invoke(self) -> None:
        x, out = self.inputs[0].data, self.outputs[0].data
        flat = x.reshape(-1)
        if not flat.dot(flat) < self.current_square_limit():
            self.reference()
            return
        if self._bound[0] is not x or self._bound[1] is not out:
            self._bind(x, out)
        rows = self.out_rows
        np.dot(self.x_rows, self.inputs[1].data.T, out=rows)
        if self.has_bias:
            bias = self.tiled_bias if self.tiled_bias is not None else tiled_rows(self.inputs[2].data, rows.shape)
            np.add(rows, bias, out=rows)
        if self.clamp is not None:
            self.clamp()
