"""The runtime: load a model, resolve kernels, apply delegates, run.

``from interpreter import Interpreter`` replaces
``from ai_edge_litert.interpreter import Interpreter``.
"""

from interpreter.arena import ArenaLimitError
from interpreter.delegation import DelegateError, DelegatePrepareError, DelegationReport, NodePlacement
from interpreter.interpreter import Interpreter, InterpreterWithCustomOps, OpResolverType, SignatureRunner
from interpreter.subgraph import InvokeCancelledError
from interpreter.external_delegate import Delegate, load_delegate  # LiteRT's load_delegate / Delegate (TFLite C plugins)

__all__ = ["ArenaLimitError", "Delegate", "DelegateError", "DelegatePrepareError", "DelegationReport", "Interpreter", "InterpreterWithCustomOps", "InvokeCancelledError", "NodePlacement", "OpResolverType", "SignatureRunner", "load_delegate"]
