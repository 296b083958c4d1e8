"""``interpreter.testing.diff`` finds the one wrong kernel of a delegate in a real model.

Each test delegate is right everywhere but at one node in the middle of a real model: an
ADD whose result is 1% too large, or an int8 FULLY_CONNECTED rescaled with the fixed-point
multiplier (``MultiplyByQuantizedMultiplier``) where LiteRT's reference kernel rescales in
double. The reference is the CPU path (bit-exact with LiteRT's BUILTIN_REF, see
tests/test_int8_models.py). ``diff`` must name exactly that node, on a delegate running the
CPU kernels and on the GPU delegate in host emulation.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from backends.cpu.quantization import multiply_by_quantized_multiplier, quantize_multiplier
from delegate_sdk.testing import ReferenceDelegate, ReferenceDelegateKernel
from interpreter import Interpreter
from interpreter.testing import assert_matches_cpu, diff
from schema.enums import BuiltinOperator as B

REAL = pathlib.Path(__file__).parents[1] / "data" / "models" / "real"
FACE = REAL / "mp_face_detection_short_range.tflite"  # float32, 164 nodes
RPS = REAL / "mltk_rock_paper_scissors_int8.tflite"  # int8, 12 nodes
WRONG_ADD = 29  # an ADD in the middle of the face detector
#: The real models' FULLY_CONNECTED layers are too small (4 to 32 outputs, rescales shifting
#: right by 9 bits and more) for the fixed-point rescale to differ on more than ~1 in 700
#: values: the kit's bit-exact int8 FULLY_CONNECTED (256 outputs, a rescale shifting by 4 or 5
#: bits) shows it on every invoke, behind a QUANTIZE-free ADD and before a RELU.
WRONG_FC = 1


def fc_in_the_middle() -> bytes:
    """int8 RELU -> FULLY_CONNECTED (the kit's bit-exact weights and scales) -> RELU."""
    from schema.builder import ModelBuilder, quantization
    from schema.enums import TensorType
    from schema.model import Model
    from schema.params import FullyConnectedParams
    from delegate_sdk.testing import single_op_model

    kit = Model.from_bytes(single_op_model(B.FULLY_CONNECTED, 4, "int8")).subgraphs[0]
    x_kit, w_kit, b_kit = (kit.tensors[i] for i in kit.operators[0].inputs)
    y_kit = kit.tensors[kit.operators[0].outputs[0]]
    builder = ModelBuilder()
    g = builder.subgraph()
    in_q = quantization(float(x_kit.quantization.scale[0]), int(x_kit.quantization.zero_point[0]))
    out_q = quantization(float(y_kit.quantization.scale[0]), int(y_kit.quantization.zero_point[0]))
    x = g.add_input("x", list(x_kit.shape), TensorType.INT8, quantization=in_q)
    r = g.add_tensor("relu_in", list(x_kit.shape), TensorType.INT8, quantization=in_q)
    g.add_operator(B.RELU, [x], [r])
    w = g.add_constant("w", np.array(w_kit.data), quantization=quantization(float(w_kit.quantization.scale[0]), 0))
    b = g.add_constant("b", np.array(b_kit.data), quantization=quantization(float(b_kit.quantization.scale[0]), 0))
    y = g.add_tensor("fc", list(y_kit.shape), TensorType.INT8, quantization=out_q)
    g.add_operator(B.FULLY_CONNECTED, [r, w, b], [y], FullyConnectedParams())
    z = g.add_tensor("relu_out", list(y_kit.shape), TensorType.INT8, quantization=out_q)
    g.add_operator(B.RELU, [y], [z])
    g.add_output(z)
    return builder.build()


def fixed_point_fully_connected(context, node) -> np.ndarray:
    """int8 FULLY_CONNECTED rescaled with MultiplyByQuantizedMultiplier (the mistake)."""
    x, w, b = (context.tensors[t] for t in node.inputs[:3])
    out = context.tensors[node.outputs[0]]
    in_scale, in_zp = float(x.quantization.scale[0]), int(x.quantization.zero_point[0])
    out_scale, out_zp = float(out.quantization.scale[0]), int(out.quantization.zero_point[0])
    acc = (x.data.reshape(-1, w.shape[1]).astype(np.int64) - in_zp) @ w.data.astype(np.int64).T + b.data.astype(np.int64)
    w_scales = np.broadcast_to(np.asarray(w.quantization.scale, np.float64), (w.shape[0],))
    result = np.empty(acc.shape, np.int64)
    for unit, w_scale in enumerate(w_scales):
        multiplier, shift = quantize_multiplier(float(np.float32(in_scale)) * w_scale / float(np.float32(out_scale)))
        result[:, unit] = multiply_by_quantized_multiplier(acc[:, unit], multiplier, shift)
    low = out_zp if node.params.fused_activation_function == 1 else -128  # RELU or NONE
    return np.clip(result + out_zp, max(low, -128), 127).astype(np.int8).reshape(out.shape)


class OneWrongKernel(ReferenceDelegateKernel):
    """The CPU kernels, except at ``wrong_node``."""

    def eval(self, context, node):
        for inner, registration in self.steps:
            registration.invoke(context, inner)
            if inner.index == self.params.delegate.wrong_node:
                output = context.tensors[inner.outputs[0]].data
                if output.dtype == np.float32:
                    output *= np.float32(1.01)
                else:
                    output[...] = fixed_point_fully_connected(context, inner)


class OneWrongDelegate(ReferenceDelegate):
    kernel_class = OneWrongKernel

    def __init__(self, model: pathlib.Path, wrong_node: int) -> None:
        main = Interpreter(model_path=str(model))._main
        table = {main.registrations[n].builtin_code: 16 for n in main.execution_plan if main.registrations[n].builtin_code != B.CUSTOM}
        super().__init__(table, name="OneWrong")
        self.wrong_node = wrong_node


def _gpu_with_one_wrong_kernel(wrong_node: int):
    from backends.gpu import GpuDelegate

    class WrongGpu(GpuDelegate):
        def op_class_for(self, node, registration, tensors):
            op_class, reason = super().op_class_for(node, registration, tensors)
            if op_class is None or node.index != wrong_node:
                return op_class, reason

            class Wrong(op_class):
                def run(self, args):
                    outputs = super().run(args)
                    xp = self.device.xp
                    if registration.builtin_code == B.ADD:
                        return [o * xp.float32(1.01) for o in outputs]
                    host = fixed_point_fully_connected(_HostView(self, args, xp), self.node)
                    return [xp.asarray(host)]

            Wrong.__name__ = f"Wrong{op_class.__name__}"
            return Wrong, None

    return WrongGpu(device="host")


class _HostView:
    """The node's tensors with their device values copied to the host (for the wrong FC)."""

    def __init__(self, op, args, xp) -> None:
        from types import SimpleNamespace

        self.tensors = {}
        for position, t in enumerate(op.node.inputs):
            tensor = op.inputs[position]
            data = tensor.data if tensor.is_constant or args[position] is None else xp.asnumpy(args[position])
            self.tensors[t] = SimpleNamespace(data=np.asarray(data), quantization=tensor.quantization, shape=tensor.shape)
        out = op.outputs[0]
        self.tensors[op.node.outputs[0]] = SimpleNamespace(quantization=out.quantization, shape=out.shape)


def test_the_wrong_kernels_are_wrong_and_the_rest_right():
    with pytest.raises(AssertionError, match="the delegated outputs differ"):
        assert_matches_cpu(FACE.read_bytes(), lambda: OneWrongDelegate(FACE, WRONG_ADD), invokes=1)
    assert_matches_cpu(FACE.read_bytes(), lambda: OneWrongDelegate(FACE, -1), invokes=1)


@pytest.mark.parametrize("device", ["cpu kernels", "gpu host"])
def test_diff_names_the_add_that_is_one_percent_too_large(device):
    make = (lambda: OneWrongDelegate(FACE, WRONG_ADD)) if device == "cpu kernels" else (lambda: _gpu_with_one_wrong_kernel(WRONG_ADD))
    report = diff(FACE.read_bytes(), make, invokes=1)
    assert not report.ok
    found = report.first_divergent
    assert (found.node, found.op, found.version) == (WRONG_ADD, "ADD", 1), str(report)
    assert found.outputs[0].max_rel == pytest.approx(0.01, rel=0.05)
    if device == "gpu host":
        assert found.kernel.startswith("Wrong")  # the GPU op class chosen for the node


@pytest.mark.filterwarnings("ignore:GpuDelegate. CUDA graph capture failed")  # the wrong op copies to the host
@pytest.mark.parametrize("device", ["cpu kernels", "gpu host"])
def test_diff_names_the_fully_connected_that_rescales_in_fixed_point(device, tmp_path):
    model = fc_in_the_middle()
    path = tmp_path / "fc.tflite"
    path.write_bytes(model)
    make = (lambda: OneWrongDelegate(path, WRONG_FC)) if device == "cpu kernels" else (lambda: _gpu_with_one_wrong_kernel(WRONG_FC))
    report = diff(model, make, invokes=2)
    assert not report.ok
    found = report.first_divergent
    assert found is not None, str(report)
    assert (found.node, found.op, found.version) == (WRONG_FC, "FULLY_CONNECTED", 4), str(report)
    assert found.outputs[0].max_steps == 1  # one quantized step, on a few percent of the values
    assert found.output_shapes == [[8, 32]] and found.input_shapes[0] == [8, 64]


def test_a_right_delegate_diffs_clean_with_both_latencies():
    report = diff(RPS.read_bytes(), lambda: OneWrongDelegate(RPS, -1), invokes=2)
    assert report.ok and report.first_divergent is None
    assert report.reference_ms > 0 and report.delegate_ms > 0 and report.delegated_nodes == 12
    assert [(o.max_abs, o.max_steps) for o in report.outputs] == [(0.0, None)]  # a float output: no steps
    assert report.to_json()["outputs"][0]["within"] is True


def test_assert_matches_cpu_names_the_wrong_node_when_it_fails():
    with pytest.raises(AssertionError, match=rf"first node that differs from the CPU given the same inputs: node {WRONG_ADD} ADD v1"):
        assert_matches_cpu(FACE.read_bytes(), lambda: OneWrongDelegate(FACE, WRONG_ADD), invokes=1)


def test_assert_matches_cpu_compares_intermediates_when_asked(tmp_path):
    model = fc_in_the_middle()
    path = tmp_path / "fc.tflite"
    path.write_bytes(model)
    assert_matches_cpu(model, lambda: OneWrongDelegate(path, -1), invokes=1, intermediates=True)
    with pytest.raises(AssertionError, match=rf"node {WRONG_FC} FULLY_CONNECTED v4"):
        assert_matches_cpu(model, lambda: OneWrongDelegate(path, WRONG_FC), invokes=1, intermediates=True)


def test_an_output_judged_within_tolerance_reports_the_differences_it_was_judged_by():
    """``diff``'s per-output figures come from the same differences as its verdict: two NaNs
    (or two equal infinities) differ by 0, so a matching output never reports inf."""
    from interpreter.testing import DEFAULT_TOLERANCES, _measure

    expected = np.array([1.0, np.nan, np.inf, -2.0], np.float32)
    same = _measure(0, "y", expected.copy(), expected, DEFAULT_TOLERANCES["float32"])
    assert same.within and (same.max_abs, same.mismatched) == (0.0, 0)
    off = _measure(0, "y", np.array([1.0, 3.0, np.inf, -2.0], np.float32), expected, DEFAULT_TOLERANCES["float32"])
    assert not off.within and (off.max_abs, off.mismatched) == (np.inf, 1)
