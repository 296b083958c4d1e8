"""ToyNpu: a delegate for an imaginary float32 accelerator, written against delegate_sdk.

It shows what a real delegate needs beyond ``add_mul_delegate.py``: the params of each op
(``node.params``, a ``schema.params`` dataclass: strides, padding, dilation, the fused
activation), the filter layouts (CONV_2D ``[O, KH, KW, I]``, DEPTHWISE_CONV_2D
``[1, KH, KW, C * M]``, FULLY_CONNECTED ``[O, I]``), version caps (it predates dilation:
DEPTHWISE_CONV_2D v1 only) and a predicate that says why it leaves a node.

Its "device" is numpy, and it computes convolutions as one matrix product over patches:
another summation order than the CPU kernels, so its outputs agree with the CPU's to
float32 rounding, not bit for bit (``interpreter.testing.assert_matches_cpu``'s default
tolerance). Try it:

    litedelegate analyze --delegate examples.toy_npu:ToyNpu --graph toy.html
    litedelegate run --delegate examples.toy_npu:ToyNpu:min_nodes_per_partition=2
"""

from __future__ import annotations

import numpy as np

from delegate_sdk import DelegateKernel, SimpleDelegate
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding, TensorType

B = BuiltinOperator
A = ActivationFunctionType

#: The fused activations the NPU applies after an op (``params.fused_activation_function``).
ACTIVATIONS = {
    A.NONE: lambda x: x,
    A.RELU: lambda x: np.maximum(x, 0),
    A.RELU_N1_TO_1: lambda x: np.clip(x, -1, 1),
    A.RELU6: lambda x: np.clip(x, 0, 6),
    A.TANH: np.tanh,
}


def _window(size: int, kernel: int, stride: int, dilation: int, padding: Padding) -> tuple[int, int]:
    """Output size and padding before, as TFLite computes them."""
    effective = (kernel - 1) * dilation + 1
    if padding == Padding.VALID:
        return (size - effective) // stride + 1, 0
    out = -(-size // stride)
    return out, max((out - 1) * stride + effective - size, 0) // 2


def _patches(x, kh, kw, params):
    """[N, OH, OW, KH, KW, C]: the input under each filter position (zeros where padded)."""
    n, h, w, c = x.shape
    dh, dw = params.dilation_h_factor, params.dilation_w_factor
    (oh, top), (ow, left) = (_window(h, kh, params.stride_h, dh, params.padding),
                             _window(w, kw, params.stride_w, dw, params.padding))
    padded = np.zeros((n, h + (oh - 1) * params.stride_h + (kh - 1) * dh + 1, w + (ow - 1) * params.stride_w + (kw - 1) * dw + 1, c), x.dtype)
    padded[:, top:top + h, left:left + w] = x
    rows = (np.arange(oh) * params.stride_h)[:, None] + np.arange(kh) * dh  # [OH, KH]
    cols = (np.arange(ow) * params.stride_w)[:, None] + np.arange(kw) * dw  # [OW, KW]
    return padded[:, rows[:, None, :, None], cols[None, :, None, :]]  # [N, OH, OW, KH, KW, C]


def conv_2d(x, w, b, params):
    o, kh, kw, i = w.shape  # CONV_2D filters are [O, KH, KW, I]
    patches = _patches(x, kh, kw, params)
    y = np.einsum("nhwijc,oijc->nhwo", patches, w, optimize=True)
    return y + b if b is not None else y


def depthwise_conv_2d(x, w, b, params):
    _, kh, kw, channels = w.shape  # DEPTHWISE_CONV_2D filters are [1, KH, KW, C * multiplier]
    patches = _patches(x, kh, kw, params)
    patches = np.repeat(patches, params.depth_multiplier, axis=-1)
    y = np.einsum("nhwijc,ijc->nhwc", patches, w[0], optimize=True)
    return y + b if b is not None else y


def fully_connected(x, w, b, params):
    y = x.reshape(-1, w.shape[1]) @ w.T  # weights are [O, I]
    return y + b if b is not None else y


def softmax(x, params):
    z = np.exp(params.beta * (x - x.max(axis=-1, keepdims=True)))
    return z / z.sum(axis=-1, keepdims=True)


#: op -> how to compute it from its input arrays (None for an omitted optional input) and params.
OPS = {
    B.ADD: lambda ins, p: ins[0] + ins[1],
    B.SUB: lambda ins, p: ins[0] - ins[1],
    B.MUL: lambda ins, p: ins[0] * ins[1],
    B.CONV_2D: lambda ins, p: conv_2d(*ins[:3], p),
    B.DEPTHWISE_CONV_2D: lambda ins, p: depthwise_conv_2d(*ins[:3], p),
    B.FULLY_CONNECTED: lambda ins, p: fully_connected(ins[0], ins[1], ins[2] if len(ins) > 2 else None, p),
    B.SOFTMAX: lambda ins, p: softmax(ins[0], p),
    B.RELU: lambda ins, p: np.maximum(ins[0], 0),
    B.LOGISTIC: lambda ins, p: 1 / (1 + np.exp(-ins[0])),
}


class ToyNpuKernel(DelegateKernel):
    """One partition: upload its inputs once, run its nodes on "device" arrays, download
    its outputs once."""

    def init(self, context, params):
        self.steps = [context.get_node_and_registration(i) for i in params.nodes_to_replace]

    def eval(self, context, node):
        device = {t: np.array(context.tensors[t].data) for t in node.inputs}  # upload
        for inner, registration in self.steps:
            inputs = [None if t < 0 else device[t] if t in device else context.tensors[t].data for t in inner.inputs]
            y = OPS[registration.builtin_code](inputs, inner.params)
            activation = getattr(inner.params, "fused_activation_function", A.NONE)
            device[inner.outputs[0]] = ACTIVATIONS[activation](y).astype(np.float32)
        for t in node.outputs:  # download: write into the CPU tensor's own array
            context.tensors[t].data[...] = device[t].reshape(context.tensors[t].shape)


class ToyNpu(SimpleDelegate):
    """Float32 ADD, SUB, MUL, CONV_2D, DEPTHWISE_CONV_2D (v1: no dilation), FULLY_CONNECTED,
    SOFTMAX, RELU and LOGISTIC, with the fused activations in ``ACTIVATIONS``."""

    name = "ToyNpu"
    support_table = {
        B.ADD: 1, B.SUB: 1, B.MUL: 1, B.CONV_2D: 1, B.DEPTHWISE_CONV_2D: 1, B.FULLY_CONNECTED: 1,
        B.SOFTMAX: 1, B.RELU: 1, B.LOGISTIC: 1,
    }
    kernel_class = ToyNpuKernel

    def node_rejection_reason(self, context, node, registration):
        tensors = [context.tensors[t] for t in (*node.inputs, *node.outputs) if t >= 0]
        if any(t.type != TensorType.FLOAT32 for t in tensors):
            return "only float32 tensors are supported"
        activation = getattr(node.params, "fused_activation_function", A.NONE)
        if activation not in ACTIVATIONS:
            return f"fused activation {activation.name} is not supported"
        op = registration.builtin_code
        if op == B.CONV_2D and context.tensors[node.inputs[0]].shape[-1] != context.tensors[node.inputs[1]].shape[-1]:
            return "grouped convolutions are not supported"
        if op in (B.CONV_2D, B.DEPTHWISE_CONV_2D, B.FULLY_CONNECTED) and not context.tensors[node.inputs[1]].is_constant:
            return "the weights must be constant"
        if op == B.FULLY_CONNECTED and node.params.keep_num_dims:
            return "keep_num_dims is not supported"
        return None
