"""LiteRT's interpreter tests that read ``Delegate._library``, ported, on both runtimes.

LiteRT's ``tensorflow/lite/python/interpreter_test.py`` (class ``InterpreterDelegateTest``)
loads ``testdata/test_delegate.so`` and calls the test delegate's own functions through
``delegate._library``, the ctypes library object its ``Delegate`` loaded. The plugin is
ported to C in ``tests/data/c_delegate/test_delegate.c`` (same exports, same counters);
``permute_float.tflite`` (a [1, 4] input through a FULLY_CONNECTED whose weights permute
it) is built here. Each test runs as in LiteRT, on ai-edge-litert and on litedelegate
(the ``runtime`` parameter), with the only change that ``interpreter_wrapper`` is the
runtime's module. ``testDestructionOrder`` is not ported: LiteRT skips it (flaky), and it
hangs its marker on LiteRT's private ``_interpreter``, which litedelegate does not have.

The plugin's counters live in the library, which both runtimes share in this process;
``initialize_counters`` resets them before every test, as LiteRT's ``setUp`` does.
"""

from __future__ import annotations

import ctypes
import gc
import pathlib
import shutil
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

import interpreter as litedelegate
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator
from schema.params import FullyConnectedParams

SOURCE_DIR = pathlib.Path(__file__).parents[1] / "data" / "c_delegate"


@pytest.fixture(scope="module")
def delegate_file(tmp_path_factory) -> str:
    """LiteRT's testdata/test_delegate.so, built from the C port."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler (gcc or cc) on this machine: the test delegate cannot be built")
    out = tmp_path_factory.mktemp("test_delegate") / "test_delegate.so"
    command = [compiler, "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-I", str(SOURCE_DIR),
               str(SOURCE_DIR / "test_delegate.c"), "-o", str(out)]
    built = subprocess.run(command, capture_output=True, text=True)
    assert built.returncode == 0, f"{' '.join(command)} failed:\n{built.stderr}"
    return str(out)


@pytest.fixture(scope="module")
def model_file(tmp_path_factory) -> str:
    """LiteRT's testdata/permute_float.tflite: input [1, 4] -> FULLY_CONNECTED with a
    permutation matrix as weights -> output [1, 4] (three tensors)."""
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("input", [1, 4])
    permutation = np.eye(4, dtype=np.float32)[[3, 0, 1, 2]]
    weights = g.add_constant("weights", permutation)
    y = g.add_tensor("output", [1, 4])
    g.add_operator(BuiltinOperator.FULLY_CONNECTED, [x, weights], [y], FullyConnectedParams())
    g.add_output(y)
    path = tmp_path_factory.mktemp("permute") / "permute_float.tflite"
    path.write_bytes(builder.build())
    return str(path)


@pytest.fixture(params=["litert", "litedelegate"])
def interpreter_wrapper(request):
    """The module the ported tests call ``load_delegate`` and ``Interpreter`` from."""
    if request.param == "litert":
        return pytest.importorskip("ai_edge_litert.interpreter")
    return SimpleNamespace(load_delegate=litedelegate.load_delegate, Interpreter=litedelegate.Interpreter)


@pytest.fixture(autouse=True)
def fresh_counters(delegate_file):
    """LiteRT's setUp: load the library to reset the counters (after collecting what an
    earlier test left, so that no destruction lands in this test's counts)."""
    gc.collect()
    library = ctypes.pydll.LoadLibrary(delegate_file)
    library.initialize_counters()


def _test_interpreter(interpreter_wrapper, delegate_file, model_path, options=None):
    """LiteRT's _TestInterpreter: an interpreter with the delegate."""
    delegate = interpreter_wrapper.load_delegate(delegate_file, options)
    return interpreter_wrapper.Interpreter(model_path=model_path, experimental_delegates=[delegate])


def test_delegate(interpreter_wrapper, delegate_file, model_file):
    """testDelegate: the delegate's creation and destruction."""
    interpreter = _test_interpreter(interpreter_wrapper, delegate_file, model_file)
    lib = interpreter._delegates[0]._library

    assert lib.get_num_delegates_created() == 1
    assert lib.get_num_delegates_destroyed() == 0
    assert lib.get_num_delegates_invoked() == 1

    del interpreter

    assert lib.get_num_delegates_created() == 1
    assert lib.get_num_delegates_destroyed() == 1
    assert lib.get_num_delegates_invoked() == 1


def test_multiple_interpreters(interpreter_wrapper, delegate_file, model_file):
    """testMultipleInterpreters: one delegate, two interpreters; destroyed after the last."""
    delegate = interpreter_wrapper.load_delegate(delegate_file)
    lib = delegate._library

    assert lib.get_num_delegates_created() == 1
    assert lib.get_num_delegates_destroyed() == 0
    assert lib.get_num_delegates_invoked() == 0

    interpreter_a = interpreter_wrapper.Interpreter(model_path=model_file, experimental_delegates=[delegate])

    assert lib.get_num_delegates_created() == 1
    assert lib.get_num_delegates_destroyed() == 0
    assert lib.get_num_delegates_invoked() == 1

    interpreter_b = interpreter_wrapper.Interpreter(model_path=model_file, experimental_delegates=[delegate])

    assert lib.get_num_delegates_created() == 1
    assert lib.get_num_delegates_destroyed() == 0
    assert lib.get_num_delegates_invoked() == 2

    del delegate
    del interpreter_a

    assert lib.get_num_delegates_created() == 1
    assert lib.get_num_delegates_destroyed() == 0
    assert lib.get_num_delegates_invoked() == 2

    del interpreter_b

    assert lib.get_num_delegates_created() == 1
    assert lib.get_num_delegates_destroyed() == 1
    assert lib.get_num_delegates_invoked() == 2


def test_options(interpreter_wrapper, delegate_file):
    """testOptions: options reach tflite_plugin_create_delegate as strings."""
    delegate_a = interpreter_wrapper.load_delegate(delegate_file)
    lib = delegate_a._library

    assert lib.get_num_delegates_created() == 1
    assert lib.get_num_delegates_destroyed() == 0
    assert lib.get_num_delegates_invoked() == 0
    assert lib.get_options_counter() == 0

    delegate_b = interpreter_wrapper.load_delegate(delegate_file, options={"unused": False, "options_counter": 2})
    lib = delegate_b._library

    assert lib.get_num_delegates_created() == 2
    assert lib.get_num_delegates_destroyed() == 0
    assert lib.get_num_delegates_invoked() == 0
    assert lib.get_options_counter() == 2

    del delegate_a
    del delegate_b

    assert lib.get_num_delegates_created() == 2
    assert lib.get_num_delegates_destroyed() == 2
    assert lib.get_num_delegates_invoked() == 0
    assert lib.get_options_counter() == 2


# LiteRT's Delegate.__del__ runs on the half-built object after a failed creation and
# raises AttributeError, which Python reports as "Exception ignored" (pytest: a warning).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_fail(interpreter_wrapper, delegate_file):
    """testFail: a creation that fails is a ValueError "Failed to load delegate from"."""
    with pytest.raises(ValueError, match="Failed to load delegate from") as raised:
        interpreter_wrapper.load_delegate(delegate_file, options={"fail": "fail"})
    assert "Fail argument sent." in str(raised.value)


def test_the_library_is_a_ctypes_pydll_on_both_runtimes(interpreter_wrapper, delegate_file):
    """What ``_library`` is: the ctypes library LiteRT loads with ``ctypes.pydll``."""
    delegate = interpreter_wrapper.load_delegate(delegate_file)
    assert isinstance(delegate._library, ctypes.PyDLL)
    assert delegate._library._name == delegate_file
