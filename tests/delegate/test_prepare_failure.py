"""A delegate that fails in prepare: as LiteRT, the plan is restored and the caller gets an
exception, a RuntimeError with LiteRT's words, carrying the report (issue 18, item 8)."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from delegate_sdk import DelegateError, DelegatePrepareError
from delegate_sdk.testing import ReferenceDelegate
from interpreter import Interpreter
from interpreter.example_model import build_example_model
from interpreter.testing import run_model
from schema.enums import BuiltinOperator as B

LITERT_MESSAGE = "Restored original execution plan after delegate application failure"
SUPPORT = {B.CONV_2D: 1, B.ADD: 1, B.DEPTHWISE_CONV_2D: 2}


class BrokenInPrepare(ReferenceDelegate):
    def prepare(self, context):
        super().prepare(context)  # it has replaced nodes when it fails
        raise ValueError("no device memory left")


class BrokenKernel(ReferenceDelegate):
    """Its kernels fail at allocation (the interpreter prepares them while applying it)."""

    def kernel_registration(self):
        registration = super().kernel_registration()

        def prepare(context, node):
            raise RuntimeError("kernel compilation failed")

        import dataclasses

        return dataclasses.replace(registration, prepare=prepare)


def outputs(interpreter, x):
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


@pytest.mark.parametrize("allocated", [False, True], ids=["before-allocate", "after-allocate"])
@pytest.mark.parametrize("broken,cause", [(BrokenInPrepare, "ValueError: no device memory left"),
                                          (BrokenKernel, "kernel compilation failed")], ids=["prepare", "kernel"])
def test_a_failing_delegate_raises_restores_the_plan_and_the_interpreter_runs_on(allocated, broken, cause):
    model = build_example_model()
    interpreter = Interpreter(model_content=model)
    if allocated:
        interpreter.allocate_tensors()
    plan = interpreter._main.execution_plan
    with pytest.raises(DelegatePrepareError) as caught:
        interpreter.modify_graph_with_delegate(broken(SUPPORT))
    error = caught.value
    assert str(error).startswith(f"{LITERT_MESSAGE}: delegate ReferenceDelegate failed in prepare: ")
    assert cause in str(error)
    assert isinstance(error, RuntimeError) and isinstance(error, DelegateError)
    assert error.__cause__ is not None
    assert error.report.error and cause in error.report.error
    assert error.report.num_delegated == 0 and len(error.report.placements) == 8
    assert interpreter._main.execution_plan == plan
    assert interpreter._main.allocated == allocated  # as it was
    interpreter.allocate_tensors()
    x = np.random.default_rng(1).uniform(-1, 1, (1, 32, 32, 8)).astype(np.float32)
    np.testing.assert_array_equal(outputs(interpreter, x), run_model(model, [x])[0][0])
    assert interpreter.modify_graph_with_delegate(ReferenceDelegate(SUPPORT)).num_delegated == 5  # a good one still applies


def test_experimental_delegates_raise_too():
    with pytest.raises(DelegatePrepareError, match=LITERT_MESSAGE):
        Interpreter(model_content=build_example_model(), experimental_delegates=[BrokenInPrepare(SUPPORT)])


def test_no_warning_is_left_behind(recwarn):
    with pytest.raises(DelegatePrepareError):
        Interpreter(model_content=build_example_model()).modify_graph_with_delegate(BrokenInPrepare(SUPPORT))
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


FAILING_PLUGIN = r"""
#include <stdint.h>
#include <stdlib.h>
typedef struct TfLiteDelegate {
  void* data_; int (*Prepare)(void*, struct TfLiteDelegate*); void* CopyFromBufferHandle;
  void* CopyToBufferHandle; void* FreeBufferHandle; int64_t flags; void* opaque_delegate_builder;
} TfLiteDelegate;
static int prepare(void* context, TfLiteDelegate* d) { return 1; /* kTfLiteError */ }
TfLiteDelegate* tflite_plugin_create_delegate(char** k, char** v, size_t n, void (*report)(const char*)) {
  TfLiteDelegate* d = calloc(1, sizeof(TfLiteDelegate)); d->Prepare = prepare; return d;
}
void tflite_plugin_destroy_delegate(TfLiteDelegate* d) { free(d); }
"""


def test_litert_behaves_the_same_with_a_delegate_whose_prepare_fails(tmp_path):
    """LiteRT's ModifyGraphWithDelegate raises RuntimeError with these words and leaves an
    interpreter that invokes."""
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build a failing delegate plugin")
    source, library = tmp_path / "fail.c", tmp_path / "libfail.so"
    source.write_text(FAILING_PLUGIN)
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    model = build_example_model()
    failing = litert.load_delegate(str(library))  # kept alive while the interpreter may hold its pointer
    reference = litert.Interpreter(model_content=model)
    reference.allocate_tensors()
    with pytest.raises(RuntimeError, match=LITERT_MESSAGE):
        reference._interpreter.ModifyGraphWithDelegate(failing._get_native_delegate_pointer())
    x = np.ones((1, 32, 32, 8), np.float32)
    reference.set_tensor(reference.get_input_details()[0]["index"], x)
    reference.invoke()  # usable after the failure
    ours = Interpreter(model_content=model)
    ours.allocate_tensors()
    with pytest.raises(RuntimeError, match=LITERT_MESSAGE):
        ours.modify_graph_with_delegate(BrokenInPrepare(SUPPORT))
    np.testing.assert_allclose(outputs(ours, x), reference.get_tensor(reference.get_output_details()[0]["index"]),
                               rtol=1e-5, atol=1e-6)
    del reference  # before the delegate it was given
    del failing
