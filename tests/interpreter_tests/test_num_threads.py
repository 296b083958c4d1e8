"""``num_threads`` (issue 34): an interpreter's invokes run with every thread pool behind
numpy (threadpoolctl's: BLAS, OpenMP) at its own thread count, set when the invoke starts
and put back when it ends; without ``num_threads``, one thread (LiteRT's default)."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu.common import ThreadLimit, thread_pools
from backends.cpu.kernels import relu
from interpreter import Interpreter
from interpreter.interpreter import DEFAULT_NUM_THREADS
from model_helpers import In, Out, single_op_model
from schema.enums import BuiltinOperator as Op

pytestmark = pytest.mark.skipif(not thread_pools(), reason="threadpoolctl finds no thread pool behind numpy")


def pool_sizes() -> list[int]:
    return [pool.get_num_threads() for pool in thread_pools()]


@pytest.fixture
def seen(monkeypatch) -> list[list[int]]:
    """The thread-pool sizes each RELU step saw while it ran."""
    sizes: list[list[int]] = []

    def bind(self):
        def step() -> None:
            sizes.append(pool_sizes())
            np.maximum(self.inputs[0].data, 0, out=self.outputs[0].data)

        return step

    monkeypatch.setattr(relu.Relu, "bind", bind)
    return sizes


def ready(**kwargs) -> Interpreter:
    interpreter = Interpreter(model_content=single_op_model(Op.RELU, [In([4])], Out([4])), **kwargs)
    interpreter.allocate_tensors()
    return interpreter


def test_two_interpreters_each_run_with_their_own_thread_count(seen):
    one, two = ready(num_threads=1), ready(num_threads=2)
    for interpreter in (one, two, one, two):
        interpreter.invoke()
    assert seen == [[1] * len(thread_pools()), [2] * len(thread_pools())] * 2


def test_the_thread_count_is_put_back_after_the_invoke(seen):
    before = pool_sizes()
    interpreter = ready(num_threads=3)
    interpreter.invoke()
    assert seen == [[3] * len(thread_pools())]
    assert pool_sizes() == before


def test_without_num_threads_an_invoke_runs_on_one_thread(seen):
    interpreter = ready()
    interpreter.invoke()
    assert interpreter.num_threads == DEFAULT_NUM_THREADS == 1
    assert seen == [[1] * len(thread_pools())]


def test_a_failing_invoke_still_puts_the_thread_count_back(monkeypatch):
    before = pool_sizes()

    def bind(self):
        def step() -> None:
            raise RuntimeError("boom")

        return step

    monkeypatch.setattr(relu.Relu, "bind", bind)
    interpreter = ready(num_threads=3)
    with pytest.raises(RuntimeError, match="boom"):
        interpreter.invoke()
    assert pool_sizes() == before


def test_a_limit_entered_again_inside_itself_puts_back_once():
    before = pool_sizes()
    limit = ThreadLimit(3)
    with limit:
        with limit:  # (a subgraph run by a control-flow node)
            assert pool_sizes() == [3] * len(before)
        assert pool_sizes() == [3] * len(before)
    assert pool_sizes() == before
