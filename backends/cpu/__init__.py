"""numpy kernels for the builtin ops: the CPU backend and every delegate's fallback."""

from backends.cpu.kernel import CpuKernel, UnsupportedKernelError, builtin_op_resolver, register

__all__ = ["CpuKernel", "UnsupportedKernelError", "builtin_op_resolver", "register"]
