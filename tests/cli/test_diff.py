"""``litedelegate diff``: per-output error, both latencies, the first node that differs."""

from __future__ import annotations

import json
import pathlib
import textwrap

import pytest

from interpreter.cli import main


def _wrong_delegate_file(tmp_path, factor: float) -> str:
    path = tmp_path / "wrongish.py"
    path.write_text(textwrap.dedent(f"""
        import numpy as np
        from delegate_sdk.testing import ReferenceDelegate, ReferenceDelegateKernel
        from schema.enums import BuiltinOperator as B

        class Kernel(ReferenceDelegateKernel):
            def eval(self, context, node):
                for inner, registration in self.steps:
                    registration.invoke(context, inner)
                    if registration.builtin_code == B.DEPTHWISE_CONV_2D:
                        context.tensors[inner.outputs[0]].data[...] *= np.float32({factor})

        class Wrongish(ReferenceDelegate):
            kernel_class = Kernel

            def __init__(self):
                super().__init__({{op: 16 for op in (B.CONV_2D, B.DEPTHWISE_CONV_2D, B.ADD, B.MEAN, B.FULLY_CONNECTED)}},
                                 name="Wrongish")
    """))
    return f"{path}:Wrongish"


def test_diff_of_a_right_delegate_exits_0_and_reports_each_output(tmp_path, capsys):
    assert main(["diff", "--delegate", _wrong_delegate_file(tmp_path, 1.0), "--invokes", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["reference"] == "cpu" and report["first_divergent_node"] is None
    assert set(report["latency_ms"]) == {"reference", "delegate"}
    (output,) = report["outputs"]
    assert output["within"] and output["max_abs"] <= 1e-6 and output["max_steps"] is None


def test_diff_names_the_first_node_that_differs_and_exits_1(tmp_path, capsys):
    assert main(["diff", "--delegate", _wrong_delegate_file(tmp_path, 1.05), "--invokes", "1", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    node = report["first_divergent_node"]
    assert node["op"] == "DEPTHWISE_CONV_2D" and node["delegate"] == "Wrongish" and node["kernel"] == "Kernel"
    assert node["outputs"][0]["max_rel"] > 0.04


def test_diff_prints_a_table_and_the_node(tmp_path, capsys):
    assert main(["diff", "--delegate", _wrong_delegate_file(tmp_path, 1.05), "--invokes", "1"]) == 1
    out = capsys.readouterr().out
    assert "max |diff|" in out and "latency:" in out and "first node that differs" in out and "DEPTHWISE_CONV_2D v2" in out


def test_diff_needs_a_delegate(capsys):
    assert main(["diff", "--delegate", "none"]) == 2
    assert "diff needs a delegate" in capsys.readouterr().err


def test_an_option_value_that_is_not_a_literal_is_a_usage_error(capsys):
    assert main(["run", "--delegate", "examples.toy_npu:ToyNpu:version_caps={CONV_2D:2}"]) == 2
    assert "is not a Python literal" in capsys.readouterr().err


def test_diff_against_litert_builtin_ref(capsys):
    pytest.importorskip("ai_edge_litert")
    model = str(pathlib.Path(__file__).parents[1] / "data" / "models" / "real" / "mltk_keyword_spotting_dscnn_int8.tflite")
    tiny = str(pathlib.Path(__file__).parents[2] / "examples" / "tiny_dsp.py")
    assert main(["diff", model, "--delegate", f"{tiny}:TinyDsp", "--reference", "litert-ref", "--invokes", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reference"] == "litert-ref" and report["delegated_nodes"] == 10
    assert [(o["dtype"], o["max_abs"]) for o in report["outputs"]] == [("float32", 0.0)]  # bit-exact with BUILTIN_REF
