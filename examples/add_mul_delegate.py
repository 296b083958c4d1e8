"""A complete delegate in a few dozen lines: float32 ADD and MUL, version 1 only.

Its "device" is a dict of numpy arrays owned by the kernel. It counts every transfer
between CPU tensors and the device, so tests can check that data crosses only at the
partition boundary. See README.md, "Writing a delegate".
"""

from __future__ import annotations

import numpy as np

from delegate_sdk import DelegateKernel, SimpleDelegate
from schema.enums import ActivationFunctionType, BuiltinOperator, TensorType

#: The fused activations this device applies (ADD's and MUL's params carry one; a kernel
#: that ignored it would give wrong results, so the others are refused).
ACTIVATIONS = {ActivationFunctionType.NONE: lambda x: x, ActivationFunctionType.RELU: lambda x: np.maximum(x, 0)}


class AddMulKernel(DelegateKernel):
    """One partition of ADD/MUL nodes, run on the delegate's own buffers."""

    def init(self, context, params):
        self.params = params
        self.steps = [context.get_node_and_registration(i) for i in params.nodes_to_replace]
        self.uploads = self.downloads = 0

    def eval(self, context, node):
        device = {}
        for t in node.inputs:  # upload the partition's inputs once
            device[t] = np.array(context.tensors[t].data)
            self.uploads += 1
        for inner, registration in self.steps:
            x, y = (device[t] for t in inner.inputs)
            result = x + y if registration.builtin_code == BuiltinOperator.ADD else x * y
            device[inner.outputs[0]] = ACTIVATIONS[inner.params.fused_activation_function](result)
        for t in node.outputs:  # download the partition's outputs once, into the tensors' own arrays
            context.tensors[t].data[...] = device[t]
            self.downloads += 1


class AddMulDelegate(SimpleDelegate):
    """Takes float32 ADD and MUL (version 1) with no or RELU activation and equal shapes."""

    name = "AddMulDelegate"
    support_table = {BuiltinOperator.ADD: 1, BuiltinOperator.MUL: 1}
    kernel_class = AddMulKernel

    def node_rejection_reason(self, context, node, registration):
        tensors = [context.tensors[t] for t in (*node.inputs, *node.outputs)]
        if any(t.type != TensorType.FLOAT32 for t in tensors):
            return "only float32 tensors are supported"
        if len({t.shape for t in tensors}) != 1:
            return "broadcasting is not supported"
        if node.params.fused_activation_function not in ACTIVATIONS:
            return f"fused activation {node.params.fused_activation_function.name} is not supported"
        return None
