"""``load_delegate`` runs real TensorFlow Lite external delegates (C plugins).

The plugin is ``tests/data/c_delegate/add_mul_delegate.c``, compiled here with the C
compiler (skipped without one). Where it makes sense the same test runs on ai-edge-litert
as well (the ``runtime`` parameter): the same ``.so`` is loaded by LiteRT's
``load_delegate`` and by litedelegate's, so the tests state LiteRT's behaviour. Where the
two differ on purpose the test says so.

The plugin takes float32 ADD and MUL (v1, same shapes, no or RELU activation); its
counters (``add_mul_delegate_counter``) live in the library, which both runtimes share
in this process, so tests compare counters before and after.
"""

from __future__ import annotations

import ctypes
import gc
import os
import pathlib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

from interpreter import Delegate, DelegateError, Interpreter, load_delegate
from interpreter import external_delegate as abi
from schema.builder import ModelBuilder, quantization
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding, TensorType
from schema.params import (
    AddParams,
    ConcatenationParams,
    Conv2DParams,
    DepthwiseConv2DParams,
    DivParams,
    FullyConnectedParams,
    GatherParams,
    LeakyReluParams,
    MulParams,
    PackParams,
    Pool2DParams,
    ReducerParams,
    ReshapeParams,
    SoftmaxParams,
    SplitParams,
    SqueezeParams,
    StridedSliceParams,
    SubParams,
)

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))
from oracle import FLOAT_ATOL, FLOAT_RTOL, run_interpreter  # noqa: E402

SOURCE_DIR = pathlib.Path(__file__).parents[1] / "data" / "c_delegate"
RELU = ActivationFunctionType.RELU


# -- the plugin --------------------------------------------------------------------------------


class Plugin:
    """The compiled plugin, and its test exports through ctypes."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = str(path)
        self.lib = ctypes.CDLL(self.path)
        self.lib.add_mul_delegate_counter.argtypes = [ctypes.c_char_p]
        self.lib.add_mul_delegate_probe.restype = ctypes.c_longlong
        self.lib.add_mul_delegate_layout_name.restype = ctypes.c_char_p
        self.lib.add_mul_delegate_layout_value.restype = ctypes.c_long

    def counter(self, name: str) -> int:
        value = self.lib.add_mul_delegate_counter(name.encode())
        assert value >= 0, f"no counter {name!r}"
        return value

    def counters(self) -> dict[str, int]:
        """Every counter, after a garbage collection (so that delegates and kernels an
        earlier test left behind are freed before, not during, the next test's count)."""
        gc.collect()
        names = ("created", "destroyed", "prepares", "kernel_inits", "kernel_frees", "kernel_invokes", "nodes_taken",
                 "frees_after_destroy")
        return {name: self.counter(name) for name in names}

    def probe(self) -> list[int]:
        return [self.lib.add_mul_delegate_probe(i) for i in range(6)]

    def layout(self) -> dict[str, int]:
        return {
            self.lib.add_mul_delegate_layout_name(i).decode(): self.lib.add_mul_delegate_layout_value(i)
            for i in range(self.lib.add_mul_delegate_layout_count())
        }

    def nodes_seen(self) -> list[dict[str, Any]]:
        """What the last dump_only Prepare saw of every node."""
        nodes = []
        for i in range(self.lib.add_mul_delegate_dump_count()):
            fields, data = (ctypes.c_int * 6)(), (ctypes.c_ubyte * 64)()
            assert self.lib.add_mul_delegate_dump(i, fields, data) == 0
            keys = ("node", "builtin_code", "version", "num_inputs", "num_outputs", "has_builtin_data")
            nodes.append({**dict(zip(keys, fields)), "builtin_data": bytes(data)})
        return nodes

    def tensors_seen(self) -> list[dict[str, Any]]:
        """What the last dump_only Prepare saw of every tensor."""
        tensors = []
        for i in range(self.lib.add_mul_delegate_tensor_count()):
            fields, scale, name = (ctypes.c_longlong * 16)(), ctypes.c_float(), ctypes.create_string_buffer(64)
            assert self.lib.add_mul_delegate_tensor(i, fields, ctypes.byref(scale), name) == 0
            rank = fields[7]
            tensors.append({
                "name": name.value.decode(), "type": fields[0], "allocation_type": fields[1], "bytes": fields[2],
                "is_variable": fields[3], "has_data": fields[4], "zero_point": fields[5], "quantization_type": fields[6],
                "dims": list(fields[8:8 + rank]), "buffer_handle": fields[14], "has_delegate": fields[15],
                "scale": scale.value,
            })
        return tensors


def _compiler() -> str | None:
    for candidate in (os.environ.get("CC"), "gcc", "cc"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Plugin:
    compiler = _compiler()
    if compiler is None:
        pytest.skip("no C compiler (gcc or cc, or $CC) on this machine: the external delegate plugin cannot be built")
    out = tmp_path_factory.mktemp("c_delegate") / "libadd_mul.so"
    command = [compiler, "-shared", "-fPIC", "-O1", "-Wall", "-I", str(SOURCE_DIR),
               str(SOURCE_DIR / "add_mul_delegate.c"), "-o", str(out)]
    built = subprocess.run(command, capture_output=True, text=True)
    assert built.returncode == 0, f"{' '.join(command)} failed:\n{built.stderr}"
    return Plugin(out)


# -- the runtimes ----------------------------------------------------------------------------


@dataclass
class Runtime:
    name: str
    load_delegate: Callable[..., Any]
    make: Callable[..., Any]  # make(model, delegates=()) -> interpreter

    @property
    def litert(self) -> bool:
        return self.name == "litert"


def _ours() -> Runtime:
    return Runtime("litedelegate", load_delegate,
                   lambda model, delegates=(): Interpreter(model_content=model, experimental_delegates=list(delegates)))


def _litert() -> Runtime:
    litert = pytest.importorskip("ai_edge_litert.interpreter")

    def make(model, delegates=()):
        return litert.Interpreter(model_content=model, experimental_delegates=list(delegates) or None,
                                  experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)

    return Runtime("litert", litert.load_delegate, make)


@pytest.fixture(params=["litedelegate", "litert"])
def runtime(request) -> Runtime:
    return _litert() if request.param == "litert" else _ours()


# -- models ----------------------------------------------------------------------------------

SHAPE = [2, 3, 4]


def add_mul_model(with_logistic: bool = True) -> bytes:
    """d = ADD(LOGISTIC(MUL(ADD(x, y, RELU), y)), x): the plugin takes nodes 0, 1 and 3
    (two partitions), LOGISTIC (node 2) stays on the CPU. Without it, c = b."""
    builder = ModelBuilder()
    g = builder.subgraph()
    x, y = g.add_input("x", SHAPE), g.add_input("y", SHAPE)
    a, b, c, d = (g.add_tensor(name, SHAPE) for name in "abcd")
    g.add_operator(BuiltinOperator.ADD, [x, y], [a], AddParams(fused_activation_function=RELU))
    g.add_operator(BuiltinOperator.MUL, [a, y], [b], MulParams())
    if with_logistic:
        g.add_operator(BuiltinOperator.LOGISTIC, [b], [c])
    else:
        c = b
    g.add_operator(BuiltinOperator.ADD, [c, x], [d], AddParams())
    g.add_output(d)
    return builder.build()


def inputs(shape=SHAPE, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, shape).astype(np.float32) for _ in range(2)]


def cpu_outputs(model: bytes, values, runtime: Runtime | None = None) -> list[np.ndarray]:
    """The outputs without a delegate: on litedelegate's CPU kernels, or LiteRT's."""
    return run_interpreter(runtime.make(model) if runtime is not None else Interpreter(model_content=model), values)


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in before}


# -- running -----------------------------------------------------------------------------------


def test_the_c_delegate_takes_add_and_mul_and_its_outputs_equal_the_cpu_path(plugin, runtime):
    model, values = add_mul_model(), inputs()
    before = plugin.counters()
    delegate = runtime.load_delegate(plugin.path)
    interpreter = runtime.make(model, [delegate])
    outputs = run_interpreter(interpreter, values)
    interpreter.invoke()  # a second invoke reuses the same kernels
    changes = delta(before, plugin.counters())
    assert changes["created"] == 1 and changes["prepares"] == 1
    assert plugin.counter("nodes_taken") == 3
    assert changes["kernel_inits"] == 2  # one kernel per partition: {0, 1} and {3}
    assert changes["kernel_invokes"] == 4
    np.testing.assert_array_equal(outputs[0], cpu_outputs(model, values, runtime)[0])


def test_the_same_plugin_gives_the_same_outputs_in_litert_and_in_litedelegate(plugin):
    """All of the first model runs in the plugin: bit for bit the same. In the second,
    LOGISTIC runs on each runtime's own CPU kernel (within the oracle's tolerance)."""
    for model, exact in ((add_mul_model(with_logistic=False), True), (add_mul_model(), False)):
        values = inputs(seed=3)
        ours, theirs = (
            run_interpreter(runtime.make(model, [runtime.load_delegate(plugin.path)]), values)[0]
            for runtime in (_ours(), _litert())
        )
        if exact:
            np.testing.assert_array_equal(ours, theirs)
        else:
            np.testing.assert_allclose(ours, theirs, rtol=FLOAT_RTOL, atol=FLOAT_ATOL)


def test_the_report_names_the_nodes_the_c_delegate_took_and_why_it_left_the_others(plugin):
    delegate = load_delegate(plugin.path)
    assert delegate.name == "add_mul"
    interpreter = Interpreter(model_content=add_mul_model())
    report = interpreter.modify_graph_with_delegate(delegate)
    assert report.delegate == "add_mul"
    assert (report.num_nodes, report.num_delegated, report.num_partitions) == (4, 3, 2)
    assert report.log_lines() == [
        "Replacing 3 out of 4 node(s) with delegate (add_mul) node, yielding 2 partitions for subgraph 0."
    ]
    placement = {p.node: p for p in interpreter.node_placements()}
    assert [placement[n].runs_on for n in range(4)] == ["add_mul", "add_mul", "CPU", "add_mul"]
    assert placement[2].rejections == ("LOGISTIC v1: not taken by the external delegate add_mul",)
    assert placement[0].partition != placement[3].partition
    assert [op["op_name"] for op in interpreter.get_ops_details()] == ["add_mul", "LOGISTIC", "add_mul"]


def test_options_reach_the_plugin(plugin, runtime):
    """refuse=MUL: the plugin leaves MUL on the CPU; the outputs do not change."""
    model, values = add_mul_model(), inputs(seed=1)
    before = plugin.counters()
    interpreter = runtime.make(model, [runtime.load_delegate(plugin.path, {"refuse": "MUL"})])
    outputs = run_interpreter(interpreter, values)
    assert plugin.counter("nodes_taken") == 2
    assert delta(before, plugin.counters())["kernel_inits"] == 2  # {0} and {3}
    np.testing.assert_array_equal(outputs[0], cpu_outputs(model, values, runtime)[0])
    if not runtime.litert:
        placement = {p.node: p for p in interpreter.node_placements()}
        assert [placement[n].runs_on for n in range(4)] == ["add_mul", "CPU", "CPU", "add_mul"]
        assert placement[1].rejections == ("MUL v1: not taken by the external delegate add_mul",)


def test_a_c_delegate_after_a_python_delegate_sees_its_node_as_a_delegate_node(plugin):
    sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "examples"))
    from add_mul_delegate import AddMulDelegate

    model, values = add_mul_model(), inputs(seed=2)
    interpreter = Interpreter(model_content=model, experimental_delegates=[AddMulDelegate(), load_delegate(plugin.path)])
    assert plugin.counter("nodes_taken") == 0  # it saw two DELEGATE nodes and LOGISTIC
    report = interpreter.delegation_report
    assert report.num_delegated == 0
    placement = {p.node: p for p in interpreter.node_placements()}
    assert placement[2].runs_on == "CPU"
    assert "LOGISTIC v1: not taken by the external delegate add_mul" in placement[2].rejections
    np.testing.assert_array_equal(run_interpreter(interpreter, values)[0], cpu_outputs(model, values)[0])


def test_applied_after_allocate_tensors_and_after_a_resize_the_kernels_see_the_new_arena(plugin, runtime):
    model = add_mul_model()
    if runtime.litert:  # LiteRT's Python API applies delegates at construction only
        interpreter = runtime.make(model, [runtime.load_delegate(plugin.path)])
    else:
        interpreter = runtime.make(model)
        interpreter.allocate_tensors()
        interpreter.invoke()
        interpreter.modify_graph_with_delegate(runtime.load_delegate(plugin.path))
    values = inputs(seed=4)
    np.testing.assert_array_equal(run_interpreter(interpreter, values)[0], cpu_outputs(model, values, runtime)[0])
    before = plugin.counter("kernel_invokes")
    bigger = inputs(shape=[3, 5, 4], seed=5)  # run_interpreter resizes both inputs
    outputs = run_interpreter(interpreter, bigger)
    assert outputs[0].shape == (3, 5, 4)
    np.testing.assert_array_equal(outputs[0], cpu_outputs(model, bigger, runtime)[0])
    assert plugin.counter("kernel_invokes") > before


def test_the_delegate_is_destroyed_once_after_the_last_interpreter_using_it_is_gone(plugin, runtime):
    model, values = add_mul_model(), inputs()
    before = plugin.counters()
    delegate = runtime.load_delegate(plugin.path)
    first, second = runtime.make(model, [delegate]), runtime.make(model, [delegate])
    run_interpreter(first, values), run_interpreter(second, values)
    del delegate
    gc.collect()
    assert delta(before, plugin.counters())["destroyed"] == 0  # the interpreters hold it
    del first
    gc.collect()
    assert delta(before, plugin.counters())["destroyed"] == 0
    del second
    gc.collect()
    changes = delta(before, plugin.counters())
    assert changes["destroyed"] == 1 and changes["created"] == 1
    assert changes["kernel_frees"] == changes["kernel_inits"] == 4  # every kernel freed...
    assert changes["frees_after_destroy"] == 0  # ...before the delegate was destroyed


def test_a_delegate_no_interpreter_used_is_destroyed_with_its_object(plugin, runtime):
    before = plugin.counters()
    delegate = runtime.load_delegate(plugin.path)
    del delegate
    assert delta(before, plugin.counters())["destroyed"] == 1


# -- failures ------------------------------------------------------------------------------------


# LiteRT's Delegate.__del__ runs on the half-built object after these failures and raises
# AttributeError, which Python reports as "Exception ignored" (pytest: a warning).
LITERT_DEL_NOISE = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@LITERT_DEL_NOISE
def test_a_library_that_does_not_load(runtime):
    if runtime.litert:  # LiteRT 2.x lets ctypes' OSError through, whatever its docstring says
        with pytest.raises(OSError, match="nonexistent"):
            runtime.load_delegate("/nonexistent/libnothing.so")
        return
    with pytest.raises(ValueError, match="^Failed to load delegate from /nonexistent/libnothing.so\n") as caught:
        runtime.load_delegate("/nonexistent/libnothing.so")
    assert isinstance(caught.value, OSError)  # so code written for LiteRT's actual error keeps working
    with pytest.raises(OSError):
        load_delegate("/nonexistent/libnothing.so")


@LITERT_DEL_NOISE
def test_a_library_without_the_plugin_entry_points(runtime, tmp_path):
    compiler = _compiler()
    if compiler is None:
        pytest.skip("no C compiler")
    source, library = tmp_path / "empty.c", tmp_path / "libempty.so"
    source.write_text("int not_a_delegate(void) { return 0; }\n")
    subprocess.run([compiler, "-shared", "-fPIC", str(source), "-o", str(library)], check=True)
    if runtime.litert:  # LiteRT: ctypes' AttributeError for the missing symbol
        with pytest.raises(AttributeError, match="tflite_plugin_create_delegate"):
            runtime.load_delegate(str(library))
        return
    with pytest.raises(ValueError, match="does not export tflite_plugin_create_delegate"):
        runtime.load_delegate(str(library))


@pytest.mark.parametrize("options, message", [
    ({"fail_create": 1}, "add_mul_delegate: creation failed on purpose (fail_create=1)"),
    ({"colour": "blue"}, "add_mul_delegate: unknown option 'colour'"),
])
def test_creation_failure_is_a_value_error_with_what_the_plugin_reported(plugin, runtime, options, message):
    before = plugin.counters()
    with pytest.raises(ValueError) as caught:
        runtime.load_delegate(plugin.path, options)
    assert str(caught.value) == f"Failed to load delegate from {plugin.path}\n{message}"
    gc.collect()
    assert delta(before, plugin.counters())["destroyed"] == 0  # nothing was created


def test_prepare_failure_raises_with_the_formatted_message_and_restores_the_plan(plugin, runtime):
    """The plugin calls ReportError(context, "... (%s, %d)", "fail_prepare", 42): both runtimes
    format the variadic arguments."""
    delegate = runtime.load_delegate(plugin.path, {"fail_prepare": 1})
    with pytest.raises(RuntimeError, match=r"Prepare failed on purpose \(fail_prepare, 42\)") as caught:
        runtime.make(add_mul_model(), [delegate])
    assert "Restored original execution plan after delegate application failure" in str(caught.value)
    if runtime.litert:
        return
    assert isinstance(caught.value, DelegateError)
    assert isinstance(caught.value.__cause__, abi.ExternalDelegateError)
    model, values = add_mul_model(), inputs()
    interpreter = Interpreter(model_content=model)
    with pytest.raises(RuntimeError):
        interpreter.modify_graph_with_delegate(delegate)
    assert [op["op_name"] for op in interpreter.get_ops_details()] == ["ADD", "MUL", "LOGISTIC", "ADD"]
    np.testing.assert_array_equal(run_interpreter(interpreter, values)[0], cpu_outputs(model, values, runtime)[0])


def test_a_kernel_that_fails_in_invoke(plugin, runtime):
    interpreter = runtime.make(add_mul_model(), [runtime.load_delegate(plugin.path, {"fail_invoke": 1})])
    with pytest.raises(RuntimeError, match=r"invoke failed on purpose \(node 0, fail_invoke\)") as caught:
        run_interpreter(interpreter, inputs())
    assert "Node number 4 (AddMulCDelegate) failed to invoke." in str(caught.value)


def test_invoke_with_cpu_fallback_runs_a_failing_c_kernel_s_nodes_on_the_cpu(plugin):
    model, values = add_mul_model(), inputs(seed=6)
    before = plugin.counters()
    interpreter = Interpreter(model_content=model, experimental_delegates=[load_delegate(plugin.path, {"fail_invoke": 1})])
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), values):
        interpreter.set_tensor(detail["index"], value)
    with pytest.warns(RuntimeWarning, match="invoke failed on purpose"):
        assert interpreter.invoke_with_cpu_fallback() is False
    output = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    np.testing.assert_array_equal(output, cpu_outputs(model, values)[0])
    changes = delta(before, plugin.counters())
    assert changes["kernel_frees"] == changes["kernel_inits"] == 2  # removing the delegate freed its kernels
    assert changes["destroyed"] == 1  # and nothing uses it any more


def test_remove_all_delegates_frees_the_c_kernels(plugin):
    model, values = add_mul_model(), inputs(seed=8)
    before = plugin.counters()
    interpreter = Interpreter(model_content=model, experimental_delegates=[load_delegate(plugin.path)])
    run_interpreter(interpreter, values)
    interpreter.remove_all_delegates()
    changes = delta(before, plugin.counters())
    assert changes["kernel_frees"] == changes["kernel_inits"] == 2
    assert changes["destroyed"] == 1  # the interpreter let go of it, and nothing else held it
    assert [op["op_name"] for op in interpreter.get_ops_details()] == ["ADD", "MUL", "LOGISTIC", "ADD"]
    np.testing.assert_array_equal(run_interpreter(interpreter, values)[0], cpu_outputs(model, values)[0])


def test_a_dry_run_asks_the_c_delegate_what_it_would_take(plugin):
    """``delegate_sdk.dry_run`` (what ``litedelegate analyze`` runs on files the interpreter
    refuses) gives the plugin a context over the model file alone."""
    from delegate_sdk.dry_run import dry_run
    from schema.model import Model

    result = dry_run(load_delegate(plugin.path), Model.from_bytes(add_mul_model()).subgraphs[0])
    assert result.partitions == [[0, 1], [3]]
    assert result.reasons == {2: ["LOGISTIC v1: not taken by the external delegate add_mul"]}


def test_litert_s_interpreter_runs_a_delegate_from_litedelegate_s_load_delegate(plugin):
    """LiteRT's Interpreter needs only ``_get_native_delegate_pointer()``."""
    model, values = add_mul_model(with_logistic=False), inputs(seed=9)
    litert = _litert()
    before = plugin.counters()
    interpreter = litert.make(model, [load_delegate(plugin.path)])
    outputs = run_interpreter(interpreter, values)
    assert plugin.counter("nodes_taken") == 3
    np.testing.assert_array_equal(outputs[0], cpu_outputs(model, values, litert)[0])
    del interpreter
    assert delta(before, plugin.counters())["destroyed"] == 1


# -- the ABI --------------------------------------------------------------------------------------


def _ctypes_layout(name: str) -> int:
    if name.startswith("sizeof "):
        struct = name.split()[1]
        if struct == "TfLitePtrUnion":  # declared as the one pointer it is
            return ctypes.sizeof(ctypes.c_void_p)
        return ctypes.sizeof(getattr(abi, struct))
    struct, field = name.split(".")
    return getattr(getattr(abi, struct), field).offset


def test_the_c_header_and_the_ctypes_declarations_have_the_same_layout(plugin):
    layout = plugin.layout()
    assert len(layout) > 80
    mismatches = {name: (value, _ctypes_layout(name)) for name, value in layout.items() if value != _ctypes_layout(name)}
    assert not mismatches, f"C header vs ctypes (C, ctypes): {mismatches}"


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="the known layout below is the LP64 one")
def test_the_ctypes_declarations_have_tflite_s_lp64_layout():
    """The sizes and offsets of tflite/core/c/common.h on 64-bit Linux (LiteRT 2.3)."""
    assert ctypes.sizeof(abi.TfLiteTensor) == 112
    assert (abi.TfLiteTensor.bytes.offset, abi.TfLiteTensor.quantization.offset, abi.TfLiteTensor.dims_signature.offset) == (40, 80, 104)
    assert ctypes.sizeof(abi.TfLiteNode) == 80 and abi.TfLiteNode.delegate.offset == 64
    assert ctypes.sizeof(abi.TfLiteRegistration) == 88 and abi.TfLiteRegistration.inplace_operator.offset == 80
    assert ctypes.sizeof(abi.TfLiteContext) == 200
    assert (abi.TfLiteContext.ReplaceNodeSubsetsWithDelegateKernels.offset, abi.TfLiteContext.GetTensor.offset) == (64, 160)
    assert ctypes.sizeof(abi.TfLiteDelegate) == 56 and abi.TfLiteDelegate.flags.offset == 40
    assert ctypes.sizeof(abi.TfLiteDelegateParams) == 32


def probe_model() -> bytes:
    """Every op whose builtin_data litedelegate provides, with non-default options, and a
    quantized tensor: what a C delegate sees of each node and tensor."""
    rng = np.random.default_rng(7)
    f32 = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)  # noqa: E731
    builder = ModelBuilder()
    g = builder.subgraph()
    x = g.add_input("x", [1, 4, 4, 2])
    B, T = BuiltinOperator, g.add_tensor

    def op(code, ins, shape, params=None, name=None, dtype=TensorType.FLOAT32, quantization=None):
        out = T(name or f"t{len(g.tensors)}", shape, dtype, quantization=quantization)
        g.add_operator(code, ins, [out], params)
        return out

    c1 = op(B.CONV_2D, [x, g.add_constant("w1", f32(2, 3, 3, 2)), g.add_constant("b1", f32(2))], [1, 4, 4, 2],
            Conv2DParams(padding=Padding.SAME, stride_w=1, stride_h=1, fused_activation_function=ActivationFunctionType.RELU6))
    c2 = op(B.DEPTHWISE_CONV_2D, [c1, g.add_constant("w2", f32(1, 3, 3, 2)), g.add_constant("b2", f32(2))], [1, 4, 4, 2],
            DepthwiseConv2DParams(padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1,
                                  dilation_w_factor=2, dilation_h_factor=2))
    pool = dict(stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    p1 = op(B.AVERAGE_POOL_2D, [c2], [1, 2, 2, 2], Pool2DParams(padding=Padding.VALID, **pool))
    p2 = op(B.MAX_POOL_2D, [c2], [1, 2, 2, 2], Pool2DParams(padding=Padding.SAME, fused_activation_function=RELU, **pool))
    p3 = op(B.L2_POOL_2D, [c2], [1, 2, 2, 2], Pool2DParams(padding=Padding.VALID, **pool))
    cat = op(B.CONCATENATION, [p1, p2, p3], [1, 2, 2, 6], ConcatenationParams(axis=-1))
    a = op(B.ADD, [p1, p2], [1, 2, 2, 2], AddParams(fused_activation_function=RELU))
    s = op(B.SUB, [a, p3], [1, 2, 2, 2], SubParams(fused_activation_function=ActivationFunctionType.RELU_N1_TO_1))
    m = op(B.MUL, [s, p1], [1, 2, 2, 2], MulParams(fused_activation_function=ActivationFunctionType.RELU6))
    dv = op(B.DIV, [m, g.add_constant("divisor", np.array([2.0, -4.0], np.float32))], [1, 2, 2, 2], DivParams())
    r = op(B.RESHAPE, [cat, g.add_constant("shape", np.array([1, 24], np.int32))], [1, 24], ReshapeParams(new_shape=(1, 24)))
    fc = op(B.FULLY_CONNECTED, [r, g.add_constant("w3", f32(5, 24)), g.add_constant("b3", f32(5))], [1, 5],
            FullyConnectedParams(fused_activation_function=RELU))
    sm = op(B.SOFTMAX, [fc], [1, 5], SoftmaxParams(beta=0.5))
    mean = op(B.MEAN, [dv, g.add_constant("axes", np.array([1, 2], np.int32))], [1, 1, 1, 2], ReducerParams(keep_dims=True))
    sq = op(B.SQUEEZE, [mean], [1, 2], SqueezeParams(squeeze_dims=(1, 2)))
    lr = op(B.LEAKY_RELU, [sq], [1, 2], LeakyReluParams(alpha=0.25))
    pk = op(B.PACK, [lr, lr], [2, 1, 2], PackParams(values_count=2, axis=0))
    gathered = op(B.GATHER, [sm, g.add_constant("indices", np.array([0, 2, 4], np.int32))], [1, 3], GatherParams(axis=1))
    halves = [T("half0", [1, 2, 2, 3]), T("half1", [1, 2, 2, 3])]
    g.add_operator(B.SPLIT, [g.add_constant("split_axis", np.array(3, np.int32)), cat], halves, SplitParams(num_splits=2))
    sliced = op(B.STRIDED_SLICE, [halves[0], *(g.add_constant(n, np.array(v, np.int32)) for n, v in
                                               (("begin", [0, 0, 0, 1]), ("end", [1, 2, 2, 3]), ("strides", [1, 1, 1, 1])))],
                [1, 2, 2, 2], StridedSliceParams(begin_mask=1, end_mask=2))
    quantized = op(B.QUANTIZE, [sliced], [1, 2, 2, 2], dtype=TensorType.INT8, name="quantized",
                   quantization=quantization(0.05, -3))
    for out in (pk, gathered, halves[1], quantized):
        g.add_output(out)
    return builder.build()


# The fields of each builtin_data struct to compare (the ctypes declaration, minus what the
# op's kernel fills in at prepare).
_COMPARED_BUILTIN_DATA = {code: struct for code, struct in (
    (BuiltinOperator.ADD, abi.TfLiteAddParams), (BuiltinOperator.SUB, abi.TfLiteAddParams),
    (BuiltinOperator.MUL, abi.TfLiteMulParams), (BuiltinOperator.DIV, abi.TfLiteMulParams),
    (BuiltinOperator.CONV_2D, abi.TfLiteConvParams), (BuiltinOperator.DEPTHWISE_CONV_2D, abi.TfLiteDepthwiseConvParams),
    (BuiltinOperator.FULLY_CONNECTED, abi.TfLiteFullyConnectedParams),
    (BuiltinOperator.AVERAGE_POOL_2D, abi.TfLitePoolParams), (BuiltinOperator.MAX_POOL_2D, abi.TfLitePoolParams),
    (BuiltinOperator.L2_POOL_2D, abi.TfLitePoolParams), (BuiltinOperator.SOFTMAX, abi.TfLiteSoftmaxParams),
    (BuiltinOperator.CONCATENATION, abi.TfLiteConcatenationParams), (BuiltinOperator.RESHAPE, abi.TfLiteReshapeParams),
    (BuiltinOperator.SQUEEZE, abi.TfLiteSqueezeParams), (BuiltinOperator.MEAN, abi.TfLiteReducerParams),
    (BuiltinOperator.LEAKY_RELU, abi.TfLiteLeakyReluParams), (BuiltinOperator.PACK, abi.TfLitePackParams),
    (BuiltinOperator.GATHER, abi.TfLiteGatherParams), (BuiltinOperator.SPLIT, abi.TfLiteSplitParams),
    (BuiltinOperator.STRIDED_SLICE, abi.TfLiteStridedSliceParams),
)}


def _fields(struct: type, data: bytes) -> dict[str, Any]:
    value = struct.from_buffer_copy(data[:ctypes.sizeof(struct)])
    result = {}
    for name, kind in struct._fields_:
        if name == "computed":
            continue  # TfLitePoolParams.computed: the pool kernel's prepare fills it
        field = getattr(value, name)
        result[name] = list(field) if isinstance(field, ctypes.Array) else field
    return result


def _seen_by_the_plugin(plugin: Plugin, runtime: Runtime, model: bytes) -> tuple[list, list, list]:
    runtime.make(model, [runtime.load_delegate(plugin.path, {"dump_only": 1})])
    return plugin.nodes_seen(), plugin.tensors_seen(), plugin.probe()


def test_litedelegate_shows_a_c_delegate_the_nodes_and_tensors_litert_shows_it(plugin):
    model = probe_model()
    litert_nodes, litert_tensors, litert_probe = _seen_by_the_plugin(plugin, _litert(), model)
    nodes, tensors, probe = _seen_by_the_plugin(plugin, _ours(), model)
    # The installed LiteRT hands out nodes and registrations of the sizes declared here.
    assert litert_probe[0] == ctypes.sizeof(abi.TfLiteNode)
    assert litert_probe[1] == ctypes.sizeof(abi.TfLiteNode) + ctypes.sizeof(abi.TfLiteRegistration)
    assert (litert_probe[2], probe[2], probe[3]) == (0, 1, 0)  # LiteRT leaves GetTensor NULL; ours: &tensors[i]
    # tensors_size: the model's tensors (LiteRT's kernels have added their temporaries).
    model_tensors = len(Interpreter(model_content=model).get_tensor_details())
    assert probe[4] == model_tensors <= litert_probe[4]
    assert probe[5] == litert_probe[5]  # recommended_num_threads
    assert len(nodes) == len(litert_nodes) == len(Interpreter(model_content=model).get_ops_details())
    for ours, theirs in zip(nodes, litert_nodes):
        where = f"node {theirs['node']} (builtin code {theirs['builtin_code']})"
        plain = {k: v for k, v in ours.items() if k != "builtin_data"}
        assert plain == {k: v for k, v in theirs.items() if k != "builtin_data"}, where
        struct = _COMPARED_BUILTIN_DATA.get(theirs["builtin_code"])
        if struct is not None:
            assert _fields(struct, ours["builtin_data"]) == _fields(struct, theirs["builtin_data"]), where
    assert {n["builtin_code"] for n in litert_nodes} >= set(_COMPARED_BUILTIN_DATA)  # each one was compared
    assert len(tensors) == model_tensors
    for ours, theirs in zip(tensors, litert_tensors):
        assert ours == theirs, ours["name"]


def test_builtin_data_is_provided_only_where_a_layout_was_compared_with_litert():
    """The other reductions share MEAN's TfLiteReducerParams."""
    reductions = {BuiltinOperator.SUM, BuiltinOperator.REDUCE_MAX, BuiltinOperator.REDUCE_MIN,
                  BuiltinOperator.REDUCE_PROD, BuiltinOperator.REDUCE_ANY, BuiltinOperator.REDUCE_ALL}
    assert abi.BUILTIN_DATA_OPS == set(_COMPARED_BUILTIN_DATA) | reductions


# -- ReportError's printf ---------------------------------------------------------------------------


def test_report_error_arguments_are_formatted_as_printf_would():
    text = ctypes.create_string_buffer(b"conv")
    address = ctypes.addressof(text)
    ints = [(-5) & 0xFFFFFFFF, address, 7, 255]
    assert abi.format_printf(b"%d %s #%03d %x 100%%", ints, []) == "-5 conv #007 ff 100%"
    assert abi.format_printf(b"%.2f %g %s", [0], [3.14159, 0.25]) == "3.14 0.25 (null)"
    assert abi.format_printf(b"%ld %u", [2**40, 2**32 + 3], []) == f"{2**40} 3"
    assert abi.format_printf(b"%d %d %d", [1], []) == "1 %d %d"  # past the known arguments: verbatim


def test_the_delegate_object_mirrors_litert_s(plugin):
    delegate = load_delegate(plugin.path, {"refuse": "MUL"})
    assert isinstance(delegate, Delegate)
    assert delegate._get_native_delegate_pointer() > 0
    assert delegate.supports_dynamic_tensors is False  # the plugin's flags are kTfLiteDelegateFlagsNone
    assert delegate.options == {"refuse": "MUL"}
