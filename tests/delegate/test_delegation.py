"""modify_graph_with_delegate: version-aware partitioning, the report, faults, data movement."""

from __future__ import annotations

import logging
import sys
import pathlib

import numpy as np
import pytest

from delegate_sdk import Delegate, DelegateKernel, KernelError, SimpleDelegate
from delegate_sdk.testing import ReferenceDelegate
from interpreter.testing import assert_matches_cpu, run_model
from delegate_sdk.delegate import DelegatePrepareError
from interpreter import DelegateError, Interpreter
from schema.builder import ModelBuilder
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding
from schema.params import AddParams, DepthwiseConv2DParams, MulParams, ReshapeParams

sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "examples"))
from add_mul_delegate import AddMulDelegate  # noqa: E402

DW = BuiltinOperator.DEPTHWISE_CONV_2D


def dilated_model() -> bytes:
    """x -> RELU -> DW(dil 2, v2) -> ADD(x') -> DW(dil 1, v1) -> DW(dil 2, v2) -> RELU6 -> y."""
    rng = np.random.default_rng(3)
    builder = ModelBuilder()
    g = builder.subgraph()
    shape = [1, 10, 10, 4]

    def dw(x, dilation, name):
        out = g.add_tensor(name, shape)
        g.add_operator(DW, [x, g.add_constant(name + "/w", rng.standard_normal((1, 3, 3, 4)).astype(np.float32)),
                            g.add_constant(name + "/b", rng.standard_normal(4).astype(np.float32))], [out],
                       DepthwiseConv2DParams(padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1,
                                             dilation_w_factor=dilation, dilation_h_factor=dilation))
        return out

    x = g.add_input("x", shape)
    r = g.add_tensor("r", shape)
    g.add_operator(BuiltinOperator.RELU, [x], [r])
    d1 = dw(r, 2, "dw1")
    s = g.add_tensor("s", shape)
    g.add_operator(BuiltinOperator.ADD, [d1, r], [s], AddParams())
    d2 = dw(s, 1, "dw2")
    d3 = dw(d2, 2, "dw3")
    y = g.add_tensor("y", shape)
    g.add_operator(BuiltinOperator.RELU6, [d3], [y])
    g.add_output(y)
    builder.add_signature("serving_default", g)
    return builder.build()


SUPPORT = {BuiltinOperator.RELU: 1, BuiltinOperator.RELU6: 1, BuiltinOperator.ADD: 1, DW: 2}


def test_delegate_capped_at_depthwise_v1_leaves_the_dilated_nodes_on_the_cpu():
    interpreter = assert_matches_cpu(dilated_model(), lambda: ReferenceDelegate(SUPPORT, version_caps={DW: 1}))
    placement = {p.node: p for p in interpreter.node_placements()}
    assert [n for n, p in placement.items() if not p.delegated] == [1, 4]
    assert placement[1].rejections == ("DEPTHWISE_CONV_2D v2: max version supported by ReferenceDelegate is 1 (capped by options)",)
    assert placement[3].delegated and placement[3].op == "DEPTHWISE_CONV_2D" and placement[3].version == 1


def test_raising_the_cap_to_2_delegates_the_dilated_nodes_too():
    interpreter = assert_matches_cpu(dilated_model(), lambda: ReferenceDelegate(SUPPORT))
    assert all(p.delegated for p in interpreter.node_placements())
    assert interpreter.delegation_report.num_partitions == 1


def test_report_counts_nodes_and_partitions_and_logs_tflites_line(caplog):
    interpreter = Interpreter(model_content=dilated_model())
    with caplog.at_level(logging.INFO, logger="litedelegate"):
        report = interpreter.modify_graph_with_delegate(ReferenceDelegate(SUPPORT, version_caps={DW: 1}))
    assert (report.num_nodes, report.num_delegated, report.num_partitions) == (6, 4, 3)
    line = "Replacing 4 out of 6 node(s) with delegate (ReferenceDelegate) node, yielding 3 partitions for subgraph 0."
    assert report.log_lines() == [line]
    assert line in caplog.text
    assert interpreter.delegation_report is report
    assert "max version supported by ReferenceDelegate is 1" in str(report)


def test_two_delegates_apply_in_sequence_and_outputs_are_unchanged():
    def both():
        return [ReferenceDelegate({DW: 2}, name="First"), ReferenceDelegate({BuiltinOperator.RELU: 1, BuiltinOperator.ADD: 1, BuiltinOperator.RELU6: 1}, name="Second")]

    interpreter = assert_matches_cpu(dilated_model(), both)
    first, second = interpreter.delegation_reports
    assert (first.num_delegated, first.num_partitions) == (3, 2)
    assert (second.num_delegated, second.num_partitions) == (3, 3)
    runs_on = [p.runs_on for p in interpreter.node_placements()]
    assert runs_on == ["Second", "First", "Second", "First", "First", "Second"]


def test_delegates_may_be_applied_after_allocate_tensors():
    model = dilated_model()
    x = np.random.default_rng(0).standard_normal((1, 10, 10, 4)).astype(np.float32)
    expected, _ = run_model(model, [x])
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    interpreter.modify_graph_with_delegate(ReferenceDelegate(SUPPORT))
    interpreter.set_tensor(0, x)
    interpreter.invoke()
    np.testing.assert_allclose(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), expected[0], rtol=1e-6)


def test_min_nodes_per_partition_keeps_small_partitions_on_the_cpu():
    interpreter = Interpreter(model_content=dilated_model())
    report = interpreter.modify_graph_with_delegate(ReferenceDelegate(SUPPORT, version_caps={DW: 1}, min_nodes_per_partition=2))
    assert report.num_delegated == 2  # only the RELU+ADD... partition of two nodes
    assert any("fewer than min_nodes_per_partition=2" in r for p in report.placements for r in p.rejections)


def test_max_delegated_partitions_keeps_the_largest():
    interpreter = Interpreter(model_content=dilated_model())
    report = interpreter.modify_graph_with_delegate(ReferenceDelegate(SUPPORT, version_caps={DW: 1}, max_delegated_partitions=1))
    assert report.num_partitions == 1 and report.num_delegated == 2
    assert any("max_delegated_partitions" in r for p in report.placements for r in p.rejections)


class BrokenInPrepare(ReferenceDelegate):
    def prepare(self, context):
        super().prepare(context)
        raise RuntimeError("the device went away")


def test_a_delegate_that_raises_in_prepare_leaves_the_plan_as_it_was():
    # As LiteRT: the plan is restored and the caller gets an exception (a RuntimeError,
    # with LiteRT's words), carrying the report.
    interpreter = Interpreter(model_content=dilated_model())
    plan_before = interpreter._main.execution_plan
    with pytest.raises(DelegatePrepareError, match=r"^Restored original execution plan after delegate application "
                       r"failure: delegate ReferenceDelegate failed in prepare: RuntimeError: the device went away") as caught:
        interpreter.modify_graph_with_delegate(BrokenInPrepare(SUPPORT))
    assert isinstance(caught.value, RuntimeError) and isinstance(caught.value, DelegateError)
    assert isinstance(caught.value.__cause__, RuntimeError)
    report = caught.value.report
    assert report.error == "RuntimeError: the device went away"
    assert report.num_delegated == 0 and not any(p.delegated for p in report.placements)
    assert interpreter._main.execution_plan == plan_before
    assert not any(p.delegated for p in interpreter.node_placements())
    x = np.ones((1, 10, 10, 4), np.float32)
    assert np.allclose(run_model(dilated_model(), [x])[0][0], _invoke(interpreter, x))


class FailingKernel(DelegateKernel):
    def eval(self, context, node):
        raise RuntimeError("kernel launch failed")


class BrokenInEval(SimpleDelegate):
    name = "BrokenInEval"
    support_table = {BuiltinOperator.ADD: 1, DW: 2}
    kernel_class = FailingKernel


def _invoke(interpreter, x):
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, x)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def test_a_delegate_kernel_that_fails_in_eval_raises_a_clear_error():
    interpreter = Interpreter(model_content=dilated_model())
    interpreter.modify_graph_with_delegate(BrokenInEval())
    with pytest.raises(KernelError, match=r"delegate node \d+ \(BrokenInEval, replacing nodes \[1, 2, 3, 4\]\) failed: RuntimeError: kernel launch failed"):
        _invoke(interpreter, np.ones((1, 10, 10, 4), np.float32))


def test_cpu_fallback_reruns_a_failed_invoke_on_the_cpu():
    x = np.random.default_rng(5).standard_normal((1, 10, 10, 4)).astype(np.float32)
    expected, _ = run_model(dilated_model(), [x])
    interpreter = Interpreter(model_content=dilated_model())
    interpreter.modify_graph_with_delegate(BrokenInEval())
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, x)
    with pytest.warns(RuntimeWarning, match="re-ran on the CPU"):
        assert interpreter.invoke_with_cpu_fallback() is False
    np.testing.assert_array_equal(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), expected[0])
    assert not any(p.delegated for p in interpreter.node_placements())


def dynamic_reshape_model() -> bytes:
    """RELU -> RESHAPE(shape from a model input) -> ADD: the reshape output is dynamic."""
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [2, 6])
    shape = g.add_input("shape", [2], np.int32)
    r = g.add_tensor("r", [2, 6])
    g.add_operator(BuiltinOperator.RELU, [x], [r])
    y = g.add_tensor("y", [3, 4])
    g.add_operator(BuiltinOperator.RESHAPE, [r, shape], [y], ReshapeParams())
    z = g.add_tensor("z", [3, 4])
    g.add_operator(BuiltinOperator.ADD, [y, y], [z], AddParams())
    g.add_output(z)
    return builder.build()


def test_a_static_shape_delegate_leaves_only_the_nodes_that_touch_a_dynamic_tensor():
    interpreter = Interpreter(model_content=dynamic_reshape_model())
    report = interpreter.modify_graph_with_delegate(ReferenceDelegate({BuiltinOperator.RELU: 1, BuiltinOperator.ADD: 1}))
    assert [p.node for p in interpreter.node_placements() if p.delegated] == [0]  # RELU: static tensors only
    (reason,) = report.reasons_for(2)  # ADD reads the RESHAPE's dynamic output 'y'
    assert "tensor 3 'y' is dynamic-sized" in reason and "supports_dynamic_tensors = True" in reason


def test_a_dynamic_tensor_inside_a_partition_is_the_delegates_business():
    interpreter = Interpreter(model_content=dynamic_reshape_model())
    interpreter.modify_graph_with_delegate(ReferenceDelegate({BuiltinOperator.RESHAPE: 1, BuiltinOperator.ADD: 1}))
    assert [p.node for p in interpreter.node_placements() if p.delegated] == [1, 2]


def test_the_static_shape_delegate_computes_what_the_cpu_computes_around_a_dynamic_tensor():
    x = np.random.default_rng(1).standard_normal((2, 6)).astype(np.float32)
    shape = np.array([3, 4], np.int32)
    assert_matches_cpu(dynamic_reshape_model(), lambda: ReferenceDelegate({BuiltinOperator.RELU: 1}), inputs=[x, shape],
                       invokes=1)


class TakesTheAdd(Delegate):
    """A low-level delegate that takes the ADD node (2) without looking at dynamic tensors."""

    name = "TakesTheAdd"

    def prepare(self, context):
        context.replace_node_subsets_with_delegate_kernels(ReferenceDelegate({}).kernel_registration(), [2], self)


def test_a_low_level_static_delegate_that_takes_a_dynamic_node_is_refused_naming_the_flag():
    interpreter = Interpreter(model_content=dynamic_reshape_model())
    with pytest.raises(DelegateError, match=r"only supports static-sized tensors .*tensor 3 'y' is dynamic-sized.*supports_dynamic_tensors = True"):
        interpreter.modify_graph_with_delegate(TakesTheAdd())
    assert not any(p.delegated for p in interpreter.node_placements())


def add_mul_chain() -> bytes:
    """a*b -> +c -> *d (all [1, 8, 8, 4]): one partition, three inputs... and one output."""
    builder = ModelBuilder()
    g = builder.subgraph()
    a, b, c, d = (g.add_input(n, [1, 8, 8, 4]) for n in "abcd")
    t1, t2, out = (g.add_tensor(n, [1, 8, 8, 4]) for n in ("t1", "t2", "out"))
    g.add_operator(BuiltinOperator.MUL, [a, b], [t1], MulParams())
    g.add_operator(BuiltinOperator.ADD, [t1, c], [t2], AddParams(fused_activation_function=ActivationFunctionType.RELU))
    g.add_operator(BuiltinOperator.MUL, [t2, d], [out], MulParams())
    g.add_output(out)
    return builder.build()


def test_data_crosses_only_at_partition_boundaries():
    interpreter = assert_matches_cpu(add_mul_chain(), AddMulDelegate, invokes=3)
    main = interpreter._main
    (delegate_node,) = main.execution_plan
    kernel = main.nodes[delegate_node].user_data
    assert (kernel.uploads, kernel.downloads) == (3 * 4, 3 * 1)  # per invoke: a, b, c, d in; out back
    for name in ("t1", "t2"):  # tensors inside the partition never get CPU memory
        (tensor,) = [t for t in main.tensors if t.name == name]
        assert tensor.data is None
    assert main.arena_bytes < 6 * 8 * 8 * 4 * 4


def test_a_support_table_may_list_versions_with_gaps():
    from delegate_sdk.testing import plan_delegation, single_op_model

    delegate = ReferenceDelegate({DW: frozenset({1, 3})}, name="Gappy")
    assert plan_delegation(delegate, single_op_model(DW, 1)).taken == [0]
    assert plan_delegation(delegate, single_op_model(DW, 3)).taken == [0]
    assert plan_delegation(delegate, single_op_model(DW, 2)).reason(0) == "DEPTHWISE_CONV_2D v2: Gappy supports DEPTHWISE_CONV_2D versions 1, 3 only"


def test_a_static_only_delegate_takes_its_nodes_in_a_streaming_model_with_resource_variables():
    """The wake-word model keeps its state in resource variables: READ_VARIABLE's outputs are
    dynamic-sized, yet no CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED touches them."""
    model = (pathlib.Path(__file__).parents[1] / "data" / "models" / "real" / "mww_hey_jarvis_int8_streaming.tflite").read_bytes()
    table = {BuiltinOperator.CONV_2D: 3, BuiltinOperator.DEPTHWISE_CONV_2D: 3, BuiltinOperator.FULLY_CONNECTED: 4}
    interpreter = assert_matches_cpu(model, lambda: ReferenceDelegate(table, name="StaticOnly"), invokes=4)
    taken = {p.op for p in interpreter.node_placements() if p.delegated}
    assert taken == {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}
    assert sum(p.delegated for p in interpreter.node_placements()) == 10


def misdeclared_add_model() -> bytes:
    """ADD of two [2, 6] inputs whose output the file declares [3, 4] (the CPU computes [2, 6])."""
    builder = ModelBuilder()
    g = builder.subgraph()
    a, b = g.add_input("a", [2, 6]), g.add_input("b", [2, 6])
    z = g.add_tensor("z", [3, 4])
    g.add_operator(BuiltinOperator.ADD, [a, b], [z], AddParams())
    g.add_output(z)
    return builder.build()


def test_a_delegated_node_gets_the_output_shape_the_cpu_computes_not_the_files():
    """AddMulDelegate's kernel computes with numpy and never resizes: the interpreter gives
    the delegated ADD the CPU's output shape before the delegate prepares (as LiteRT does)."""
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((2, 6)).astype(np.float32) for _ in range(2))
    interpreter = assert_matches_cpu(misdeclared_add_model(), AddMulDelegate, inputs=[a, b], invokes=1)
    assert interpreter.get_output_details()[0]["shape"].tolist() == [2, 6]
