"""``tflite_runtime.interpreter``, re-exported from this project's ``interpreter``."""

from interpreter import *  # noqa: F401,F403
from interpreter import Delegate, Interpreter, InterpreterWithCustomOps, OpResolverType, SignatureRunner, load_delegate  # noqa: F401
