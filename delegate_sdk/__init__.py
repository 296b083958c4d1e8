"""The extension contract kernels and delegates are written against.

Kernels: ``Registration`` (init/prepare/invoke/free, and the node's ``version``), op
resolvers (``MutableOpResolver.add_builtin(op, registration, min_version, max_version)``).
Delegates: ``Delegate`` (low level), ``SimpleDelegate`` + ``DelegateKernel`` (the SDK),
the ``DelegateContext`` they see, the errors that name a delegate's mistakes, and
``delegate_sdk.testing`` (version recipes, dry runs, cap checks) for their tests.
"""

from delegate_sdk.context import Context, DelegateContext, KernelError
from delegate_sdk.delegate import (
    Delegate,
    DelegateDeclarationError,
    DelegateError,
    DelegateKernel,
    DelegateKernelError,
    DelegateParams,
    DelegatePrepareError,
    InvalidReplacementError,
    NodeDecision,
    SimpleDelegate,
)
from delegate_sdk.node import Node
from delegate_sdk.op_resolver import MutableOpResolver, OpListing, OpResolver, UnsupportedOperatorError
from delegate_sdk.registration import Registration
from delegate_sdk.tensor import Allocation, RuntimeTensor

__all__ = [
    "Allocation", "Context", "Delegate", "DelegateContext", "DelegateDeclarationError", "DelegateError",
    "DelegateKernel", "DelegateKernelError", "DelegateParams", "DelegatePrepareError", "InvalidReplacementError",
    "KernelError", "MutableOpResolver", "Node", "NodeDecision", "OpListing", "OpResolver", "Registration", "RuntimeTensor",
    "SimpleDelegate", "UnsupportedOperatorError",
]
