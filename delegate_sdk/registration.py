"""``Registration``: what runs a node (TFLite's ``TfLiteRegistration``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from schema.enums import BuiltinOperator, builtin_operator_name

KernelFunction = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class Registration:
    """The kernel functions for one op at one version.

    ``init(context, node)`` returns the node's ``user_data``; ``prepare(context, node)``
    checks types and sets output shapes; ``invoke(context, node)`` computes;
    ``free(context, node)`` releases what ``init`` made. All are optional.

    A resolver hands out a copy whose ``version`` is the version of the node it
    resolved, so ``registration.version`` is always the node's version as stored
    in the model file: delegates decide support by it.
    """

    builtin_code: int
    custom_name: str | None = None
    version: int = 1
    init: KernelFunction | None = None
    prepare: KernelFunction | None = None
    invoke: KernelFunction | None = None
    free: KernelFunction | None = None
    #: For delegate kernels: the delegate's name (``"GpuDelegate"``), shown in reports.
    name: str = ""
    #: What implements it, for listings (``MutableOpResolver.list_ops``): the dotted names
    #: of the kernel classes, in the order they are asked (``"backends.cpu.kernels.binary.Add"``).
    kernels: tuple[str, ...] = ()

    @property
    def op_name(self) -> str:
        """``BuiltinOperator`` name, or the custom op's name."""
        if self.builtin_code == BuiltinOperator.CUSTOM:
            return self.custom_name or "CUSTOM"
        if self.builtin_code == BuiltinOperator.DELEGATE and self.name:
            return self.name
        return builtin_operator_name(self.builtin_code)

    def __str__(self) -> str:
        return f"{self.op_name} v{self.version}"
