"""Elementwise math, comparisons, selection, logical ops, activations and CAST on the GPU
(backends/gpu/ops/elementwise.py, comparison.py, unary.py, cast.py, activations.py)
against LiteRT's reference kernels (BUILTIN_REF; its default kernels for ELU and CEIL, which BUILTIN_REF lacks).

Every case runs through ``GpuDelegate(device="host")`` and through the emulated CUDA
device (the device branch, CuPy's rules), over four invokes with new inputs (the graph is
captured at the second and replayed from the third), against the oracle (float32 within
1e-5 relative; bool, integer and pure selections bit for bit) and against our CPU path;
the node must have been delegated and its partition must replay a graph. Each family
has a float16-storage case (tolerance 1e-2), and each claimed (op, version) a test that
the version above the claim (or a type not claimed) is refused, with a reason naming it.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.gpu import GpuDelegate, emulated_cuda_device
from backends.gpu.ops import gpu_support_table
from delegate_sdk.testing import plan_delegation
from interpreter.testing import assert_matches_cpu
from interpreter import Interpreter
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import litert_interpreter, run_interpreter
from schema.builder import quantization
from schema.enums import BuiltinOperator as B
from schema.params import GeluParams

INVOKES = 4

DEVICES = {
    "host": lambda precision="float32": GpuDelegate(device="host", precision=precision),
    "emulated-cuda": lambda precision="float32": GpuDelegate(device=emulated_cuda_device(), precision=precision),
}

F32, I32 = np.float32, np.int32
Q8 = quantization(0.05, -7)  # an int8 activation
QU8 = quantization(0.04, 131)  # a uint8 activation

#: Floats every op treats specially.
SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 100.0, -100.0], F32)


def name(value) -> str:
    return getattr(value, "name", None) or np.dtype(value).name


# -- building one-node models ---------------------------------------------------------------------


def _build(op, inputs, outputs, params, shapes, version=None) -> bytes:
    return single_op_model(op, inputs, [Out(shape, dtype, q) for (dtype, q), shape in zip(outputs, shapes)], params,
                           version=version)


def model(op, inputs, output, params=None) -> bytes:
    """A one-node model; ``output`` is a dtype or (dtype, quantization). Its shape is what
    our CPU kernel's prepare gives (a first build with a placeholder shape finds it)."""
    output = output if isinstance(output, tuple) else (output, None)
    return single_op_model(op, inputs, Out(None, *output), params)


def unstamped(op, inputs, output, shape, version, params=None) -> bytes:
    """A one-node model stamped with ``version`` (no kernel needed: for refusal tests)."""
    output = output if isinstance(output, tuple) else (output, None)
    return _build(op, inputs, [output], params, [shape], version=version)


# -- inputs ---------------------------------------------------------------------------------------


def values(dtype, shape, seed, *, low=-2.0, high=2.0, specials=False, float16_exact=False) -> np.ndarray:
    """Random values: floats in [low, high] (multiples of 1/16 with ``float16_exact``; with
    ``specials`` the first elements are NaN, +-inf, +-0...), integers over the type's
    whole range, bools half true."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -(2**31)), min(int(info.max), 2**31 - 1) + 1, shape).astype(dtype)
    if float16_exact:
        out = (rng.integers(int(low * 16), int(high * 16) + 1, shape) / 16).astype(dtype)
    else:
        out = rng.uniform(low, high, shape).astype(dtype)
    if specials:
        flat = out.reshape(-1)
        count = min(flat.size, SPECIALS.size)
        flat[:count] = rng.permutation(SPECIALS)[:count]
    return out


def oracle_for(m: bytes):
    """LiteRT on BUILTIN_REF, or on its default kernels for the ops BUILTIN_REF lacks (ELU,
    CEIL: as tests/cpu/test_activations.py and test_unary.py do)."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from ai_edge_litert.interpreter import OpResolverType

    from schema.model import Model

    op = Model.from_bytes(m).subgraphs[0].operators[0].builtin_code
    if op in (B.ELU, B.CEIL):
        return LiteRT(model_content=bytes(m), experimental_op_resolver_type=OpResolverType.BUILTIN)
    return litert_interpreter(m)


def invoke(interpreter, inputs) -> list[np.ndarray]:
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def check(m: bytes, make_inputs=None, *, precision="float32", devices=tuple(DEVICES), cpu=True, **value_options) -> None:
    """Through each device: the node delegated, four invokes matching LiteRT (float32
    within 1e-5, float16 storage within 1e-2, everything else bit for bit), a graph
    replaying; then (float32) the same model against our CPU path."""
    oracle = oracle_for(m)
    details = oracle.get_input_details()
    float16 = precision == "float16"
    if make_inputs is None:
        def make_inputs(k):
            return [values(d["dtype"], d["shape"], 10 * k + i, float16_exact=float16, **value_options)
                    for i, d in enumerate(details)]
    rtol, atol = (1e-2, 1e-2) if float16 else (1e-5, 1e-6)
    for device in devices:
        delegate = DEVICES[device](precision)
        interpreter = Interpreter(model_content=m)
        interpreter.modify_graph_with_delegate(delegate)
        interpreter.allocate_tensors()
        placements = interpreter.node_placements()
        assert placements and all(p.delegated for p in placements), [(p.op, p.version, p.rejections) for p in placements]
        for k in range(INVOKES):
            inputs = make_inputs(k)
            got, want = invoke(interpreter, inputs), run_interpreter(oracle, inputs)
            assert len(got) == len(want)
            for i, (g, w) in enumerate(zip(got, want)):
                where = f"{device}, invoke {k + 1}, output {i}"
                assert g.dtype == w.dtype and g.shape == w.shape, f"{where}: {g.dtype}{g.shape} vs LiteRT {w.dtype}{w.shape}"
                if w.dtype.kind == "f":
                    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=where)
                else:
                    np.testing.assert_array_equal(g, w, err_msg=where)
        stats = delegate.partition_stats()
        assert [s.graph for s in stats] == ["replaying"], [s.graph for s in stats]
        if cpu and not float16:
            assert_matches_cpu(m, lambda: DEVICES[device](), invokes=INVOKES)


def refused(m: bytes, *words: str) -> str:
    """The node is not taken and the reason names every one of ``words``."""
    plan = plan_delegation(GpuDelegate(device="host"), m)
    assert plan.taken == [], f"the node was delegated: {plan}"
    reason = plan.reason(0)
    for word in words:
        assert word in reason, f"{word!r} not in {reason!r}"
    return reason


def claims(op) -> set[int]:
    entry = gpu_support_table()[op]
    return set(range(1, entry + 1)) if isinstance(entry, int) else set(entry)


# -- MAXIMUM MINIMUM -----------------------------------------------------------------------------


@pytest.mark.parametrize("op", [B.MAXIMUM, B.MINIMUM], ids=name)
def test_maximum_minimum_float32_broadcasting_with_nan(op):
    m = model(op, [In([2, 3, 4]), In([3, 1])], F32)
    assert stamped_version(m) == 1
    check(m, specials=True)


@pytest.mark.parametrize("op", [B.MAXIMUM, B.MINIMUM], ids=name)
@pytest.mark.parametrize("dtype,q,version", [(I32, None, 1), (np.uint8, QU8, 1), (np.int8, Q8, 2)], ids=["int32", "uint8", "int8"])
def test_maximum_minimum_integers_raw(op, dtype, q, version):
    m = model(op, [In([2, 1, 5], dtype, q), In([3, 5], dtype, q)], (dtype, q))
    assert stamped_version(m) == version
    check(m)


def test_maximum_with_a_constant_operand():
    m = model(B.MAXIMUM, [In([1, 4, 4, 3]), np.array([0.25, -1.0, 0.0], F32)], F32)
    check(m)


def test_maximum_minimum_in_float16_storage():
    check(model(B.MINIMUM, [In([2, 3, 4]), In([4])], F32), precision="float16")


@pytest.mark.parametrize("op", [B.MAXIMUM, B.MINIMUM], ids=name)
def test_maximum_minimum_above_version_2_is_refused_naming_the_version(op):
    assert max(claims(op)) == 2
    m = unstamped(op, [In([2, 1, 1, 1, 3]), In([1, 2, 1, 1, 3])], F32, [2, 2, 1, 1, 3], version=None)
    assert stamped_version(m) == 3  # broadcasting above rank 4
    refused(m, "v3")
    q = quantization(0.001, 0)
    m = unstamped(op, [In([3], np.int16, q), In([3], np.int16, q)], (np.int16, q), [3], version=None)
    assert stamped_version(m) == 4
    refused(m, "v4")


def test_maximum_of_int64_is_refused_naming_the_type():
    m = model(B.MAXIMUM, [In([3], np.int64), In([3], np.int64)], np.int64)
    assert stamped_version(m) == 1
    refused(m, "INT64")


# -- SQUARED_DIFFERENCE POW ----------------------------------------------------------------------


def test_squared_difference_float32_broadcasting():
    m = model(B.SQUARED_DIFFERENCE, [In([2, 3, 4]), In([1, 4])], F32)
    assert stamped_version(m) == 1
    check(m, specials=True)


def test_pow_float32():
    m = model(B.POW, [In([3, 8]), In([3, 8])], F32)
    assert stamped_version(m) == 1

    def inputs(k):
        base = values(F32, [3, 8], k, low=0.0, high=3.0, specials=True)
        base[2] = -np.abs(base[2])  # negative bases with integer exponents below
        exponent = values(F32, [3, 8], 50 + k, low=-3.0, high=3.0)
        exponent[2] = np.round(exponent[2])
        return [base, exponent]

    check(m, inputs)


def test_pow_with_a_constant_exponent_broadcast():
    check(model(B.POW, [In([2, 3, 4]), np.array([2.0, 0.5, -1.0, 3.0], F32)], F32), low=0.1, high=4.0)


def test_squared_difference_and_pow_in_float16_storage():
    check(model(B.SQUARED_DIFFERENCE, [In([2, 3, 4]), In([3, 1])], F32), precision="float16")
    check(model(B.POW, [In([2, 5]), np.array([2.0], F32)], F32), precision="float16")


def test_squared_difference_v2_int8_is_refused_naming_the_version():
    assert max(claims(B.SQUARED_DIFFERENCE)) == 1
    m = unstamped(B.SQUARED_DIFFERENCE, [In([3], np.int8, Q8), In([3], np.int8, Q8)], (np.int8, Q8), [3], version=None)
    assert stamped_version(m) == 2
    refused(m, "v2")


def test_pow_above_version_1_and_of_int32_is_refused():
    assert max(claims(B.POW)) == 1
    refused(unstamped(B.POW, [In([3]), In([3])], F32, [3], version=2), "v2")
    m = model(B.POW, [In([3], I32), np.array([2, 0, 1], I32)], I32)
    assert stamped_version(m) == 1
    refused(m, "INT32")


# -- comparisons ---------------------------------------------------------------------------------

COMPARISONS = [B.LESS, B.LESS_EQUAL, B.GREATER, B.GREATER_EQUAL, B.EQUAL, B.NOT_EQUAL]


def tie_prone(dtype, shape, seed):
    """Values from a small set (equal pairs common); floats include NaN and +-inf."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype.kind == "f":
        return rng.choice(np.array([np.nan, np.inf, -np.inf, -1.5, 0.0, -0.0, 0.5, 2.0], F32), shape)
    return rng.choice(np.array([-3, -1, 0, 1, 2, 7], dtype), shape)


@pytest.mark.parametrize("op", COMPARISONS, ids=name)
def test_comparison_float32_broadcasting_with_nan(op):
    m = model(op, [In([2, 3, 4]), In([3, 1])], np.bool_)
    assert stamped_version(m) == 1
    check(m, lambda k: [tie_prone(F32, (2, 3, 4), k), tie_prone(F32, (3, 1), 20 + k)])


@pytest.mark.parametrize("op", [B.LESS, B.EQUAL], ids=name)
def test_comparison_int32(op):
    m = model(op, [In([4, 5], I32), In([5], I32)], np.bool_)
    check(m, lambda k: [tie_prone(I32, (4, 5), k), tie_prone(I32, (5,), 20 + k)])


@pytest.mark.parametrize("op", [B.EQUAL, B.NOT_EQUAL], ids=name)
def test_equality_of_bool(op):
    m = model(op, [In([3, 4], np.bool_), In([1, 4], np.bool_)], np.bool_)
    assert stamped_version(m) == 1
    check(m)


def test_comparison_with_a_constant_operand():
    check(model(B.GREATER, [In([2, 3, 4]), np.array([[0.5], [-0.25], [1.0]], F32)], np.bool_))


@pytest.mark.parametrize("op", COMPARISONS, ids=name)
@pytest.mark.parametrize("dtype,version", [(np.uint8, 1), (np.int8, 2)], ids=["uint8", "int8"])
def test_quantized_comparison_rescales_both_sides(op, dtype, version):
    # Different scales and zero points: the values are compared on a common scale.
    if dtype == np.uint8:
        qx, qy = quantization(0.04, 131), quantization(0.013, 7)
    else:
        qx, qy = quantization(0.05, -7), quantization(0.1, 3)
    m = model(op, [In([2, 3, 4], dtype, qx), In([3, 4], dtype, qy)], np.bool_)
    assert stamped_version(m) == version
    check(m)


def test_quantized_comparison_with_equal_quantization_and_a_constant():
    constant = Const(values(np.int8, (4,), 5), Q8)
    check(model(B.LESS_EQUAL, [In([3, 4], np.int8, Q8), constant], np.bool_))


def test_comparisons_in_float16_storage():
    check(model(B.LESS, [In([2, 3, 4]), In([4])], np.bool_), precision="float16")


@pytest.mark.parametrize("op,version", [(B.LESS, 3), (B.GREATER_EQUAL, 3), (B.NOT_EQUAL, 4), (B.EQUAL, 5)],
                         ids=lambda v: name(v) if not isinstance(v, int) else str(v))
def test_comparison_of_int16_is_refused_naming_the_version(op, version):
    assert max(claims(op)) == 2
    m = unstamped(op, [In([3], np.int16), In([3], np.int16)], np.bool_, [3], version=None)
    assert stamped_version(m) == version
    refused(m, f"v{version}")


@pytest.mark.parametrize("op", [B.LESS_EQUAL, B.GREATER], ids=name)
def test_less_equal_and_greater_above_version_2_are_refused(op):
    # int16 stays v1 for these two: refused by its type; v3 does not exist, stamped by hand.
    q = quantization(0.001, 0)
    m = unstamped(op, [In([3], np.int16, q), In([3], np.int16, q)], np.bool_, [3], version=None)
    assert stamped_version(m) == 1
    refused(m, "INT16")
    refused(unstamped(op, [In([3]), In([3])], np.bool_, [3], version=3), "v3")


def test_comparison_of_plain_int8_is_refused():
    m = unstamped(B.LESS, [In([3], np.int8), In([3], np.int8)], np.bool_, [3], version=None)
    refused(m, "no quantization scale")


def test_quantized_comparison_with_a_scale_of_one_or_more_is_refused():
    q = quantization(1.5, 0)
    m = unstamped(B.LESS, [In([3], np.int8, q), In([3], np.int8, q)], np.bool_, [3], version=None)
    refused(m, "scale")


# -- SELECT SELECT_V2 ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [F32, I32, np.int8, np.uint8, np.bool_], ids=name)
def test_select_v2_broadcasts_condition_x_and_y(dtype):
    m = model(B.SELECT_V2, [In([1, 3, 1], np.bool_), In([2, 1, 4], dtype), In([3, 4], dtype)], dtype)
    assert stamped_version(m) == 1
    check(m, specials=True)


def test_select_v2_with_constant_values():
    m = model(B.SELECT_V2, [In([2, 3], np.bool_), np.array([1.5, -2.0, 0.0], F32), np.array([[7.0]], F32)], F32)
    check(m)


@pytest.mark.parametrize("condition", [[2, 3, 4], [], [2]], ids=["same-shape", "scalar", "one-per-row"])
def test_select_v1_condition_shapes(condition):
    m = model(B.SELECT, [In(condition, np.bool_), In([2, 3, 4]), In([2, 3, 4])], F32)
    assert stamped_version(m) == 1
    check(m, specials=True)


@pytest.mark.parametrize("op", [B.SELECT, B.SELECT_V2], ids=name)
def test_select_of_one_element_keeps_the_declared_output_shape(op):
    m = _build(op, [In([1], np.bool_), In([1, 1], np.int8), In([1], np.int8)], [(np.int8, None)], None, [[1]])
    check(m)


def test_select_v2_in_float16_storage():
    check(model(B.SELECT_V2, [In([2, 1], np.bool_), In([2, 3]), In([3])], F32), precision="float16")


def test_select_above_version_1_is_refused_naming_the_version():
    assert max(claims(B.SELECT)) == 1 and max(claims(B.SELECT_V2)) == 1
    shape = [1, 2, 1, 2, 3]
    m = unstamped(B.SELECT, [In(shape, np.bool_), In(shape), In(shape)], F32, shape, version=None)
    assert stamped_version(m) == 3
    refused(m, "v3")
    m = unstamped(B.SELECT_V2, [In([3], np.bool_), In([3], np.uint32), In([3], np.uint32)], np.uint32, [3], version=2)
    refused(m, "v2")


def test_select_of_quantized_values_is_refused():
    m = unstamped(B.SELECT_V2, [In([3], np.bool_), In([3], np.int8, Q8), In([3], np.int8, Q8)], (np.int8, Q8), [3], version=None)
    refused(m, "quantized")


def test_select_v1_with_a_broadcasting_condition_is_refused():
    m = unstamped(B.SELECT, [In([3], np.bool_), In([2, 3]), In([2, 3])], F32, [2, 3], version=None)
    refused(m, "condition shape")


# -- LOGICAL_AND LOGICAL_OR LOGICAL_NOT ---------------------------------------------------------------


@pytest.mark.parametrize("op", [B.LOGICAL_AND, B.LOGICAL_OR], ids=name)
def test_logical_binary_broadcasting(op):
    m = model(op, [In([2, 3, 4], np.bool_), In([3, 1], np.bool_)], np.bool_)
    assert stamped_version(m) == 1
    check(m)


def test_logical_not():
    check(model(B.LOGICAL_NOT, [In([3, 5], np.bool_)], np.bool_))


@pytest.mark.parametrize("op", [B.LOGICAL_AND, B.LOGICAL_OR, B.LOGICAL_NOT], ids=name)
def test_logical_above_version_1_is_refused_naming_the_version(op):
    assert max(claims(op)) == 1
    inputs = [In([3], np.bool_)] * (1 if op == B.LOGICAL_NOT else 2)
    refused(unstamped(op, inputs, np.bool_, [3], version=2), "v2")


# -- unary math ----------------------------------------------------------------------------------

UNARY = [B.ABS, B.EXP, B.LOG, B.SQRT, B.RSQRT, B.SIN, B.COS, B.NEG, B.SQUARE, B.FLOOR, B.CEIL]
#: Input ranges that exercise each op (specials added: NaN, +-inf, +-0, negatives).
UNARY_RANGE = {B.EXP: (-20.0, 20.0), B.LOG: (0.0, 50.0), B.SQRT: (0.0, 50.0), B.RSQRT: (0.0, 50.0),
               B.SIN: (-20.0, 20.0), B.COS: (-20.0, 20.0), B.SQUARE: (-1e3, 1e3)}


@pytest.mark.parametrize("op", UNARY, ids=name)
def test_unary_math_float32(op):
    m = model(op, [In([4, 16])], F32)
    assert stamped_version(m) == 1
    low, high = UNARY_RANGE.get(op, (-6.0, 6.0))
    check(m, low=low, high=high, specials=True)


@pytest.mark.parametrize("op", [B.EXP, B.RSQRT], ids=name)
def test_unary_math_in_float16_storage(op):
    check(model(op, [In([3, 5])], F32), precision="float16", low=0.25, high=2.0)


@pytest.mark.parametrize("op", [B.ABS, B.EXP, B.LOG, B.SQRT, B.RSQRT], ids=name)
def test_unary_math_of_int8_is_refused_naming_the_version(op):
    assert max(claims(op)) == 1
    m = unstamped(op, [In([3], np.int8, Q8)], (np.int8, Q8), [3], version=None)
    assert stamped_version(m) == 2
    refused(m, "v2")


@pytest.mark.parametrize("op", [B.SIN, B.COS, B.NEG, B.SQUARE, B.FLOOR, B.CEIL], ids=name)
def test_unary_math_above_version_1_is_refused_naming_the_version(op):
    assert max(claims(op)) == 1
    refused(unstamped(op, [In([3])], F32, [3], version=2), "v2")


def test_neg_of_int32_is_refused_naming_the_type():
    m = model(B.NEG, [In([3], I32)], I32)
    assert stamped_version(m) == 1
    refused(m, "INT32")


# -- activations ---------------------------------------------------------------------------------


@pytest.mark.parametrize("approximate", [False, True], ids=["erfc", "tanh"])
def test_gelu(approximate):
    m = model(B.GELU, [In([4, 16])], F32, GeluParams(approximate=approximate))
    assert stamped_version(m) == 1
    check(m, low=-8.0, high=8.0)


def test_exact_gelu_over_a_dense_range():
    m = model(B.GELU, [In([2, 3000])], F32, GeluParams(approximate=False))
    dense = np.linspace(-12, 12, 6000, dtype=F32).reshape(2, 3000)
    check(m, lambda k: [np.roll(dense, 37 * k)], devices=("host",), cpu=False)


@pytest.mark.parametrize("op", [B.ELU, B.RELU_N1_TO_1, B.RELU_0_TO_1], ids=name)
def test_elu_and_relu_ranges(op):
    m = model(op, [In([4, 16])], F32)
    assert stamped_version(m) == 1
    check(m, low=-4.0, high=4.0, specials=True)


@pytest.mark.parametrize("approximate", [False, True], ids=["erfc", "tanh"])
def test_gelu_in_float16_storage(approximate):
    check(model(B.GELU, [In([3, 5])], F32, GeluParams(approximate=approximate)), precision="float16")


@pytest.mark.parametrize("op", [B.ELU, B.RELU_N1_TO_1, B.RELU_0_TO_1], ids=name)
def test_elu_and_relu_ranges_in_float16_storage(op):
    check(model(op, [In([3, 5])], F32), precision="float16", devices=("host",))


def test_gelu_v2_int8_is_refused_naming_the_version():
    assert max(claims(B.GELU)) == 1
    m = unstamped(B.GELU, [In([3], np.int8, Q8)], (np.int8, Q8), [3], version=None, params=GeluParams())
    assert stamped_version(m) == 2
    refused(m, "v2")


@pytest.mark.parametrize("op", [B.ELU, B.RELU_N1_TO_1, B.RELU_0_TO_1], ids=name)
def test_elu_and_relu_ranges_above_version_1_or_int8_are_refused(op):
    assert max(claims(op)) == 1
    refused(unstamped(op, [In([3])], F32, [3], version=2), "v2")
    m = unstamped(op, [In([3], np.int8, Q8)], (np.int8, Q8), [3], version=None)
    assert stamped_version(m) == 1
    refused(m, "INT8")


# -- CAST ------------------------------------------------------------------------------------------

CAST_TYPES = [F32, I32, np.int8, np.uint8, np.bool_]
#: Floats a cast treats specially: NaN, +-inf, signed zero, halves, values just outside
#: each integer range.
CAST_FLOATS = np.array([
    np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.9, -1.9, 127.6, -128.7, 255.5, 256.0, -129.0,
    2.2e9, -2.2e9, 3e38, 2147483520.0, -2147483648.0, 100.2,
], F32)


def cast_inputs(dtype, seed) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        rng = np.random.default_rng(seed)
        return rng.permutation(CAST_FLOATS).reshape(4, 5)
    return values(dtype, (4, 5), seed)


@pytest.mark.parametrize("target", CAST_TYPES, ids=name)
@pytest.mark.parametrize("source", CAST_TYPES, ids=name)
def test_cast(source, target):
    m = model(B.CAST, [In([4, 5], source)], target)
    assert stamped_version(m) == (3 if np.int8 in (source, target) else 1)
    check(m, lambda k: [cast_inputs(source, k)], devices=("host",))


@pytest.mark.parametrize("source,target", [(F32, np.int8), (np.uint8, F32), (I32, np.bool_)], ids=["f32-i8", "u8-f32", "i32-bool"])
def test_cast_on_the_emulated_cuda_device(source, target):
    check(model(B.CAST, [In([4, 5], source)], target), lambda k: [cast_inputs(source, k)], devices=("emulated-cuda",))


def test_cast_of_quantized_int8_takes_the_raw_values():
    m = model(B.CAST, [In([2, 3], np.int8, Q8)], F32)
    check(m)


@pytest.mark.parametrize("source,target", [(F32, I32), (I32, F32), (np.bool_, F32)], ids=["f32-i32", "i32-f32", "bool-f32"])
def test_cast_in_float16_storage(source, target):
    m = model(B.CAST, [In([3, 5], source)], target)
    if source == I32:  # values float16 holds exactly
        check(m, lambda k: [np.random.default_rng(k).integers(-2048, 2049, (3, 5)).astype(I32)], precision="float16")
    else:
        check(m, precision="float16", low=-40.0, high=40.0)


@pytest.mark.parametrize("dtype,version", [(np.uint32, 2), (np.uint16, 4), (np.float16, 5)],
                         ids=["uint32", "uint16", "float16"])
def test_cast_of_an_unclaimed_version_is_refused_naming_it(dtype, version):
    assert version not in claims(B.CAST)
    m = unstamped(B.CAST, [In([3])], dtype, [3], version=None)
    assert stamped_version(m) == version
    refused(m, f"v{version}")


def test_cast_of_int64_is_refused_naming_the_type():
    m = model(B.CAST, [In([3], np.int64)], F32)
    assert stamped_version(m) == 1
    refused(m, "INT64")
