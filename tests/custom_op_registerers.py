"""Custom op registerers for the InterpreterWithCustomOps tests (looked up by name as
``custom_op_registerers.register_doubler``)."""

from __future__ import annotations

from backends.cpu.kernel import CpuKernel, registration_for
from schema.enums import BuiltinOperator


class Doubler(CpuKernel):
    """A custom op "Doubler": y = 2 * x."""

    def prepare(self) -> None:
        self.outputs[0].resize(self.inputs[0].shape)

    def invoke(self) -> None:
        self.outputs[0].data[...] = 2 * self.inputs[0].data


def register_doubler(resolver) -> None:
    resolver.add_custom("Doubler", registration_for(BuiltinOperator.CUSTOM, [Doubler]))
