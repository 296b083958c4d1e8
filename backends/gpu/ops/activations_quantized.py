"""LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU on int8 / uint8 tensors on the GPU, bit-exact
with TFLite's reference kernels.

Each of them maps one raw input value to one raw output value, so the CPU kernel
(``backends/cpu/kernels/activations_quantized.py``) tabulates the whole function at
prepare over the 256 input values, with TFLite's own arithmetic: ``LUTPopulate`` of the
C library's ``expf``/``tanhf`` for LOGISTIC and TANH, the 16-bit fixed point of
``reference_ops::HardSwish``, the two ``MultiplyByQuantizedMultiplier`` of LEAKY_RELU.
The GPU op configures that kernel's own class for the node (``configure``: the checks,
the multipliers and the table, no effect on the tensors), uploads the table once, and
each run is one launch of ``cuda/int8_elementwise.cu``'s ``lookup_b8`` at the input's bits.

Versions claimed: LOGISTIC and TANH v1 (uint8; float32 is ``elementwise.py``'s) and v2
(int8); HARD_SWISH v1 and LEAKY_RELU v1 (uint8 and int8; float32 is
``elementwise.py``'s). Not claimed: int16 (LOGISTIC/TANH v3, LEAKY_RELU v2). As on the
CPU, the arithmetic follows the tensor types, not the stamped version.
"""

from __future__ import annotations

from backends.cpu.kernels.activations_quantized import (
    QuantizedHardSwish,
    QuantizedLeakyRelu,
    QuantizedLogistic,
    QuantizedTanh,
)
from backends.gpu.cuda.int8_elementwise import LookupCuda
from backends.gpu.ops.elementwise_quantized import configured_cpu_kernel, cpu_kernel_reason, node_tensors
from backends.gpu.ops.quantized_base import QuantizedOp, per_tensor
from schema.enums import BuiltinOperator

B = BuiltinOperator


class QuantizedActivation(QuantizedOp):
    """LOGISTIC v1-v2, TANH v1-v2, HARD_SWISH v1, LEAKY_RELU v1 on per-tensor int8/uint8:
    the CPU kernel's 256-entry table, looked up on the device."""

    ops = {B.LOGISTIC: 2, B.TANH: 2, B.HARD_SWISH: 1, B.LEAKY_RELU: 1}
    KERNELS = {
        B.LOGISTIC: QuantizedLogistic,
        B.TANH: QuantizedTanh,
        B.HARD_SWISH: QuantizedHardSwish,
        B.LEAKY_RELU: QuantizedLeakyRelu,
    }

    @classmethod
    def node_reason(cls, node, op, version, tensors):
        if len(node.inputs) != 1 or node.inputs[0] < 0:
            return f"expected 1 input, got {len(node.inputs)}"
        for index in (node.inputs[0], node.outputs[0]):
            if not per_tensor(tensors[index]):
                return f"tensor {tensors[index].name!r} is quantized per channel; TFLite needs one scale"
        return cpu_kernel_reason(cls.KERNELS[op], node, op, version, tensors)

    def prepare(self) -> None:
        kernel = configured_cpu_kernel(self.KERNELS[self.op], self.node, self.op, self.version, node_tensors(self))
        #: the output of every input value, indexed by the value's code (bits as uint8)
        self.table = self.upload(kernel.table, self.outputs[0].dtype)
        self.launcher = LookupCuda(**self.device.launcher_arguments(LookupCuda.source))

    def run(self, args):
        return [self.launcher(args[0], self.table)]
