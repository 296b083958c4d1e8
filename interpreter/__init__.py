"""The runtime: load a model, resolve kernels, apply delegates, run.

``from interpreter import Interpreter`` replaces
``from ai_edge_litert.interpreter import Interpreter``.
"""

from interpreter.arena import ArenaLimitError
from interpreter.delegation import DelegateError, DelegationReport, NodePlacement
from interpreter.interpreter import Interpreter, InterpreterWithCustomOps, OpResolverType, SignatureRunner
from interpreter.subgraph import InvokeCancelledError

__all__ = ["ArenaLimitError", "DelegateError", "DelegationReport", "Interpreter", "InterpreterWithCustomOps", "InvokeCancelledError", "NodePlacement", "OpResolverType", "SignatureRunner"]
