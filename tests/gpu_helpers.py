"""Helpers the GPU delegate's tests share: run a model through a delegate, compare every
tensor with LiteRT's, and find the error a kernel raised under the interpreter's wrapping."""

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


def assert_tensors_equal_litert(ours: Interpreter, theirs, where: str) -> int:
    """After one invoke of each: every non-constant integer or float tensor ``ours`` holds
    equals LiteRT's (``theirs``, made with ``experimental_preserve_all_tensors=True``) bit for
    bit. Returns how many tensors were compared."""
    compared = 0
    for detail in theirs.get_tensor_details():
        if detail["index"] >= len(ours._main.tensors):  # LiteRT's own scratch tensors
            continue
        tensor = ours._main.tensors[detail["index"]]
        if tensor.is_constant or tensor.data is None or tensor.dtype is None or tensor.dtype.kind not in "iuf":
            continue
        try:
            expected = theirs.get_tensor(detail["index"])
        except ValueError:  # a tensor LiteRT did not keep
            continue
        np.testing.assert_array_equal(np.asarray(tensor.data), expected, err_msg=f"{where}: {detail['name']}")
        compared += 1
    return compared


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
