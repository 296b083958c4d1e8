"""Helpers the GPU delegate's tests share: run a model through a delegate, and find the
error a kernel raised under the interpreter's wrapping."""

from __future__ import annotations

import contextlib
import re

import numpy as np
import pytest

from backends.gpu import GpuDelegate
from interpreter import Interpreter


def run(model: bytes, delegate: GpuDelegate, invokes: int = 3) -> Interpreter:
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    rng = np.random.default_rng(0)
    for _ in range(invokes):
        for detail in interpreter.get_input_details():
            interpreter.set_tensor(detail["index"], rng.uniform(-1, 1, tuple(detail["shape"])).astype(np.float32))
        interpreter.invoke()
    return interpreter


@contextlib.contextmanager
def raises_caused_by(kind: type, match: str = ""):
    """The interpreter wraps a kernel's error (naming the node): look down the chain."""
    with pytest.raises(Exception) as caught:
        yield
    error = caught.value
    while error is not None and not isinstance(error, kind):
        error = error.__cause__
    assert error is not None, f"{caught.value!r} was not caused by a {kind.__name__}"
    assert re.search(match, str(error)), f"{error} does not match {match!r}"
