"""Version recipes: for each (op, version), the smallest model that needs exactly that version.

A delegate declares, per op, the versions it runs (``support_table``). To test such a
declaration it needs, for every declared version, a model whose node *is* that version,
and for the version above, one it must refuse. A recipe builds that model with the
project's builder, which stamps every node with the minimum version TFLite's rules give
(``schema.versioning.get_builtin_operator_version``): a recipe does not choose its version,
it chooses the types, shapes and params that make the rules give it. Every recipe is
checked against the rules when it is used (``single_op_model``) and by the tests.

The recipes are generated from one small builder per op family (elementwise, binary,
comparison, reduction, pooling, convolution, shape and data movement, control flow,
resource variables...) and a table, per op, of the variation that makes each version:
the input type (float32, int8 or int16 quantized, int64, bool, string...), a rank above
4, a param (dilation, ``keep_num_dims``, ``half_pixel_centers``...), a hybrid or
per-channel filter. Float is used wherever the version allows: a float-only delegate can
test DEPTHWISE_CONV_2D v2 (dilation), FULLY_CONNECTED v5 and v6, SUB v3 (5-D broadcast).

There is a recipe for every (op, version) the CPU backend registers, plus the versions
TFLite defines that it does not register (int4, int2, bfloat16, sparse or shuffled
weights: family ``"dry run only"``, for ``plan_delegation`` and a cap's "version above"
check). ``UNBUILDABLE_VERSIONS`` lists, with the reason, the (op, version) pairs that the
rules never give to a model the kernels accept (TFLite's rule for TRANSPOSE_CONV v5 tests
the output-shape tensor for int16, which is always int32); those the CPU registers have a
recipe stamped *by hand* (``Recipe.hand_stamped`` says why), except DEQUANTIZE v4, which no
rule gives at all.

Per type: ``TYPED_RECIPES`` holds, for (op, version, dtype), the int8, uint8 and int16
forms of a version whose default recipe is of another type (uint8 CONV_2D v1, int8
RESHAPE v1, int8 FULLY_CONNECTED v5...), and bit-exact int8 models of the main integer
kernels; :func:`typed_recipes` ``(op, "int8")`` gives every version of an op in a type,
which is what an int8-only delegate's tests need (``assert_takes_versions_up_to`` infers
the type, ``check_delegate(..., dtype="int8")``).

Authors add their own (a custom layout, another type) with :func:`register_recipe`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from schema.builder import ModelBuilder, quantization
from schema.enums import (
    ActivationFunctionType,
    BuiltinOperator,
    MirrorPadMode,
    Padding,
    TensorType,
    builtin_operator_name,
    numpy_dtype,
)
from schema.model import Model, Quantization
from schema.versioning.op_signature import op_signature_from_tensors
from schema.versioning.op_version import get_builtin_operator_version

B = BuiltinOperator
T = TensorType

__all__ = [
    "DTYPE_FORMS",
    "QUANTIZED_DTYPES",
    "Recipe",
    "RecipeError",
    "TYPED_RECIPES",
    "UNBUILDABLE_VERSIONS",
    "VERSION_RECIPES",
    "recipe",
    "recipes_for",
    "register_recipe",
    "checked_model",
    "rule_version",
    "single_op_model",
    "typed_recipes",
    "dtype_name",
]


class RecipeError(KeyError):
    """No recipe for an (op, version), or a recipe whose model is not that version."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Recipe:
    """How to build the model of one (op, version).

    ``build()`` returns the model's bytes; ``subject`` is the index, in the main subgraph,
    of the node under test (0 for one-node models; control flow and resource variables
    need a few nodes around it). ``hand_stamped`` is empty when the builder's rules stamp
    the version, else why the version had to be given by hand. Calling a recipe builds it.
    """

    op: int
    version: int
    build: Callable[[], bytes]
    description: str = ""
    family: str = ""
    subject: int = 0
    hand_stamped: str = ""
    dtype: str = ""  #: the activations' type ("int8", "uint8", "int16"...); empty: read from the model

    def __call__(self) -> bytes:
        return self.build()

    @property
    def label(self) -> str:
        return f"{_op_name(self.op)} v{self.version}"

    @property
    def activation_dtype(self) -> str:
        """The type of the data the node computes on: its first input that is not a
        constant (its first output when every input is), by ``TensorType`` name in lower
        case: ``"float32"``, ``"int8"``, ``"uint8"``, ``"int16"``..."""
        if self.dtype:
            return self.dtype
        if self not in _DTYPE_CACHE:
            _DTYPE_CACHE[self] = _activation_dtype(self.build(), self.subject)
        return _DTYPE_CACHE[self]


_DTYPE_CACHE: dict["Recipe", str] = {}


def _activation_dtype(model: bytes, node: int) -> str:
    from schema.enums import tensor_type_name

    subgraph = Model.from_bytes(model).subgraphs[0]
    operator = subgraph.operators[node]
    candidates = [i for i in operator.inputs if i >= 0 and not subgraph.tensors[i].is_constant] or list(operator.outputs)
    if not candidates:
        return ""
    return tensor_type_name(subgraph.tensors[candidates[0]].type).lower()


def _op_name(op: int | str) -> str:
    return op if isinstance(op, str) else builtin_operator_name(op)


#: (op, version) -> its Recipe. Read it, or add to it with :func:`register_recipe`.
VERSION_RECIPES: dict[tuple[int, int], Recipe] = {}

#: (op, version, dtype) -> a Recipe whose activations are ``dtype`` ("int8", "uint8", "int16"):
#: the quantized forms of a version whose recipe in ``VERSION_RECIPES`` is of another type
#: (uint8 CONV_2D v1, int8 RESHAPE v1, int8 FULLY_CONNECTED v5 with keep_num_dims...), and
#: the bit-exact models of the main integer kernels (CONV_2D v3, DEPTHWISE_CONV_2D v3,
#: FULLY_CONNECTED v4, ADD v2, MUL v2: hundreds of outputs, per-channel scales and zero
#: points that are not round numbers, so a rounding error of one step shows). Read them
#: through :func:`typed_recipes`, which adds the ``VERSION_RECIPES`` of that type.
TYPED_RECIPES: dict[tuple[int, int, str], Recipe] = {}

#: The integer types the kit builds quantized models in.
QUANTIZED_DTYPES = ("int8", "uint8", "int16")

#: (op, version) pairs the CPU backend registers (or TFLite's tables list) that TFLite's
#: rules never give to a model the kernels accept, and why. A recipe stamped by hand exists
#: for those that say so.
UNBUILDABLE_VERSIONS: dict[tuple[int, int], str] = {
    (B.EQUAL, 4): "no rule gives EQUAL v4 (int16 is v5, string v3, int8 v2), yet LiteRT registers and runs it (its "
                  "kernel ignores the version) and so does the CPU (the recipe compares strings, stamped v4 by hand)",
    (B.QUANTIZE, 6): "no rule gives QUANTIZE v6 (TFLite's rules stop at 5); the CPU does not register it; no recipe",
    (B.DEQUANTIZE, 4): "no rule gives DEQUANTIZE v4: TFLite's GetBuiltinOperatorVersion returns 1, 2, 3, 5, 6, 7 or 8 "
                       "for it (v4 exists in the runtime tables only); no recipe",
    (B.TRANSPOSE_CONV, 5): "TFLite's rule tests input 0 for int16, and input 0 of TRANSPOSE_CONV is the int32 output "
                           "shape: the rules never give v5 (the recipe is an int16x8 node with quantized_bias_type, "
                           "stamped v5 by hand)",
    (B.SELECT, 4): "TFLite's rule tests input 0 for uint32, and input 0 of SELECT is the bool condition: the rules "
                   "never give v4 (the recipe selects uint32 values, stamped v4 by hand)",
    (B.SELECT_V2, 2): "TFLite's rule tests input 0 for uint32, and input 0 of SELECT_V2 is the bool condition: the "
                      "rules never give v2 (the recipe selects uint32 values, stamped v2 by hand)",
    (B.CONV_2D, 4): "the rules give v4 to int16 activations with an int16 filter, which no kernel (TFLite's or ours) "
                    "runs; the CPU's v4 is int16 activations with an int8 filter (the recipe), stamped v4 by hand",
    (B.DEPTHWISE_CONV_2D, 5): "the rules give v5 to int16 activations with an int16 filter, which no kernel runs; the "
                              "CPU's v5 is int16 activations with an int8 filter (the recipe), stamped v5 by hand",
    (B.FULLY_CONNECTED, 7): "the rules give v7 to int16 activations with int16 weights, which no kernel runs; the CPU's "
                            "v7 is int16 activations with int8 weights (the recipe), stamped v7 by hand",
}


def register_recipe(
    op: int,
    version: int,
    build: Callable[[], bytes] | None = None,
    *,
    description: str = "",
    subject: int = 0,
    hand_stamped: str = "",
    replace: bool = False,
):
    """Add a recipe for (op, version): ``build()`` returns a model whose node ``subject``
    (in the main subgraph) is ``op``, stamped ``version`` by the rules (say why in
    ``hand_stamped`` when it is stamped by hand). Usable as a decorator::

        @register_recipe(BuiltinOperator.CONV_2D, 1, description="float32, 1x1 filter")
        def pointwise_conv() -> bytes: ...

    Raises:
      ValueError: a recipe for (op, version) exists and ``replace`` is False.
    """

    def add(function: Callable[[], bytes]) -> Callable[[], bytes]:
        key = (int(op), int(version))
        if key in VERSION_RECIPES and not replace:
            raise ValueError(
                f"a recipe for {_op_name(op)} v{version} exists ({VERSION_RECIPES[key].description}); "
                "pass replace=True to replace it"
            )
        VERSION_RECIPES[key] = Recipe(int(op), int(version), function, description, "registered", subject, hand_stamped)
        return function

    return add(build) if build is not None else add


def recipe(op: int, version: int) -> Recipe:
    """The recipe of (op, version).

    Raises:
      RecipeError: there is none (the message says which versions have one, and why
        this one cannot be built when ``UNBUILDABLE_VERSIONS`` says so).
    """
    try:
        return VERSION_RECIPES[(int(op), int(version))]
    except KeyError:
        known = sorted(v for (o, v) in VERSION_RECIPES if o == int(op))
        why = UNBUILDABLE_VERSIONS.get((int(op), int(version)))
        raise RecipeError(
            f"no recipe for {_op_name(op)} v{version} (recipes exist for versions {known})"
            + (f": {why}" if why else "")
            + "; add one with delegate_sdk.testing.register_recipe"
        ) from None


def recipes_for(op: int, dtype: str | None = None) -> list[Recipe]:
    """Every recipe of ``op``, by version; with ``dtype``, those whose activations are of
    that type (``typed_recipes``)."""
    if dtype is not None:
        return [r for _, r in sorted(typed_recipes(op, dtype).items())]
    return [VERSION_RECIPES[key] for key in sorted(k for k in VERSION_RECIPES if k[0] == int(op))]


def typed_recipes(op: int, dtype: str) -> dict[int, Recipe]:
    """version -> the recipe of ``op`` at that version whose activations are ``dtype``
    (``"int8"``, ``"uint8"``, ``"int16"``, ``"float32"``...): from ``TYPED_RECIPES`` first
    (the bit-exact models), else the ``VERSION_RECIPES`` entry when it is of that type. The
    versions missing are those where TFLite's rules give ``op`` no such form (int8 CONV_2D
    is v3 at the least: v1 is float32 or uint8, v2 hybrid)."""
    dtype = dtype_name(dtype)
    found = {v: r for (o, v), r in VERSION_RECIPES.items() if o == int(op) and r.activation_dtype == dtype}
    found.update({v: r for (o, v, d), r in TYPED_RECIPES.items() if o == int(op) and d == dtype})
    return dict(sorted(found.items()))


#: What the kit's ``dtype=`` arguments accept (named by :func:`dtype_name`'s TypeError).
DTYPE_FORMS = (
    "a numpy dtype or scalar type (np.dtype('int8'), np.int8), a TensorType member (TensorType.INT8) "
    "or a string ('int8')"
)


def dtype_name(dtype) -> str:
    """The kit's name of a tensor type, as :attr:`Recipe.activation_dtype` spells it
    (``"int8"``, ``"float32"``...), from any of :data:`DTYPE_FORMS`.

    Raises:
      TypeError: ``dtype`` is none of those (a bare int, a Python type such as ``float``,
        which numpy would read as float64, a list...).
      ValueError: a string that names no tensor type.
    """
    if isinstance(dtype, TensorType):
        return dtype.name.lower()
    if isinstance(dtype, str):
        if dtype.upper() in TensorType.__members__:
            return dtype.lower()
        try:
            return np.dtype(dtype).name
        except TypeError:
            raise ValueError(f"dtype {dtype!r} names no tensor type; use e.g. 'int8', 'uint8', 'int16', 'float32'") from None
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        return np.dtype(dtype).name
    raise TypeError(f"dtype must be {DTYPE_FORMS}; got {dtype!r} ({type(dtype).__name__})")


_dtype_name = dtype_name  # former name, kept for callers


def rule_version(model: bytes | Model, node: int = 0) -> int:
    """The version TFLite's rules give node ``node`` of the main subgraph of ``model``
    (``get_builtin_operator_version`` on its op, tensors and params)."""
    model = model if isinstance(model, Model) else Model.from_bytes(model)
    subgraph = model.subgraphs[0]
    operator = subgraph.operators[node]
    signature = op_signature_from_tensors(
        BuiltinOperator(operator.builtin_code),
        operator.params,
        [subgraph.tensors[i] if i >= 0 else None for i in operator.inputs],
        [subgraph.tensors[i] for i in operator.outputs],
    )
    return get_builtin_operator_version(signature)


def single_op_model(op: int, version: int, dtype: str | None = None) -> bytes:
    """The model of ``recipe(op, version)``, checked: its node ``subject`` is ``op`` and is
    stamped ``version``, the version the rules give it (unless the recipe is hand-stamped).
    With ``dtype`` (``"int8"``, ``"uint8"``, ``"int16"``...), the recipe of that version
    whose activations are of that type (:func:`typed_recipes`).

    Raises:
      RecipeError: no recipe for that (op, version) (add one with ``register_recipe``), or
        none of that dtype, or the recipe's model is not what it claims.
    """
    if dtype is None:
        entry = recipe(op, version)
    else:
        found = typed_recipes(op, dtype)
        if int(version) not in found:
            raise RecipeError(
                f"no {dtype_name(dtype)} recipe for {_op_name(op)} v{version} ({dtype_name(dtype)} recipes exist for "
                f"versions {sorted(found)}; TFLite's rules give {_op_name(op)} no {dtype_name(dtype)} form at the others)"
            )
        entry = found[int(version)]
    return checked_model(entry)


def checked_model(entry: Recipe) -> bytes:
    """``entry``'s model, checked against its claims (see :func:`single_op_model`)."""
    op, version = entry.op, entry.version
    model = entry.build()
    view = Model.from_bytes(model)
    operators = view.subgraphs[0].operators
    if not 0 <= entry.subject < len(operators) or operators[entry.subject].builtin_code != int(op):
        raise RecipeError(f"recipe for {entry.label}: node {entry.subject} of its model is not {_op_name(op)}")
    stamped = operators[entry.subject].version
    if stamped != version:
        raise RecipeError(f"recipe for {entry.label} produced a v{stamped} node")
    if not entry.hand_stamped:
        ruled = rule_version(view, entry.subject)
        if ruled != version:
            raise RecipeError(
                f"recipe for {entry.label}: the versioning rules give its node v{ruled} "
                "(stamp it by hand and say why in hand_stamped, or change the model)"
            )
    return model


# -- types -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _T:
    """A tensor type for recipes: the TensorType, and quantization of inputs and outputs."""

    name: str
    type: int
    q: Quantization | None = None
    q_out: Quantization | None = None

    @property
    def out(self) -> Quantization | None:
        return self.q_out if self.q_out is not None else self.q

    def same(self) -> "_T":
        """The same type with the outputs quantized as the inputs (data movement ops)."""
        return dataclasses.replace(self, q_out=self.q)

    def with_out(self, scale: float, zero_point: int) -> "_T":
        return dataclasses.replace(self, q_out=quantization(scale, zero_point))


F32 = _T("float32", T.FLOAT32)
F16 = _T("float16", T.FLOAT16)
I32 = _T("int32", T.INT32)
I64 = _T("int64", T.INT64)
U32 = _T("uint32", T.UINT32)
U16 = _T("uint16", T.UINT16)
I16 = _T("int16", T.INT16)
I8 = _T("int8", T.INT8)
BOOL = _T("bool", T.BOOL)
STR = _T("string", T.STRING)
C64 = _T("complex64", T.COMPLEX64)
# Types without a numpy representation here: for dry runs only (graph inputs, no data).
I4 = _T("int4", T.INT4)
I2 = _T("int2", T.INT2)
U4 = _T("uint4", T.UINT4)
BF16 = _T("bfloat16", T.BFLOAT16)
I8Q = _T("int8 quantized", T.INT8, quantization(0.05, 2), quantization(0.1, -3))
U8Q = _T("uint8 quantized", T.UINT8, quantization(0.05, 128), quantization(0.1, 120))
I16Q = _T("int16 quantized", T.INT16, quantization(1 / 1024, 0), quantization(1 / 512, 0))

_WEIGHT_SCALE = 0.02


def _values(rng: np.random.Generator, shape: Sequence[int], t: _T) -> np.ndarray:
    """Constant values of type ``t`` (small, so every kernel accepts them)."""
    shape = tuple(shape)
    if t.type == T.STRING:
        return np.array([b"ab", b"cd", b"ef"] * (int(np.prod(shape)) // 3 + 1), dtype=object)[: int(np.prod(shape))].reshape(shape)
    dtype = numpy_dtype(t.type)
    if dtype.kind == "f":
        return rng.uniform(-1, 1, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    low = 0 if dtype.kind == "u" else -100
    return rng.integers(low, 100, shape).astype(dtype)


class _Graph:
    """A ModelBuilder with one main subgraph and short names for what recipes need."""

    def __init__(self) -> None:
        self.builder = ModelBuilder(description="litedelegate version recipe")
        self.g = self.builder.subgraph()
        self.rng = np.random.default_rng(0)

    def input(self, name: str, shape: Sequence[int], t: _T = F32) -> int:
        return self.g.add_input(name, list(shape), t.type, quantization=t.q)

    def tensor(self, name: str, shape: Sequence[int], t: _T = F32, out: bool = True) -> int:
        return self.g.add_tensor(name, list(shape), t.type, quantization=t.out if out else t.q)

    def const(self, name: str, value, t: _T | None = None, q: Quantization | None = None) -> int:
        if t is not None and not isinstance(value, np.ndarray):
            value = _values(self.rng, value, t)
        value = np.asarray(value)
        dtype = t.type if t is not None else None
        return self.g.add_constant(name, value, dtype=dtype, quantization=q if q is not None else (t.q if t else None))

    def i32(self, name: str, values) -> int:
        return self.g.add_constant(name, np.asarray(values, np.int32))

    def op(self, op: int, inputs: Sequence[int], outputs: Sequence[int], params=None, **fields) -> None:
        if fields:
            params = dataclasses.replace(params if params is not None else _default_params(op), **fields)
        self.g.add_operator(op, list(inputs), list(outputs), params)

    def build(self, *outputs: int) -> bytes:
        for t in outputs:
            self.g.add_output(t)
        self.builder.add_signature("serving_default", self.g)
        return self.builder.build()


def _default_params(op: int):
    from schema.option_parsers import OPTIONS_TABLE_OF_OP

    entry = OPTIONS_TABLE_OF_OP.get(int(op))
    if entry is None:
        raise ValueError(f"{_op_name(op)} has no params")
    return entry[1]()


# -- family builders -----------------------------------------------------------------------------------
# Each returns the bytes of a model whose node 0 (unless said) is ``op``.

S4 = (1, 3, 3, 2)  # a small NHWC tensor
S2 = (2, 3)


def _unary(op: int, t: _T, shape: Sequence[int] = S2, out: _T | None = None, **fields) -> bytes:
    m = _Graph()
    x = m.input("x", shape, t)
    y = m.tensor("y", shape, out or t)
    m.op(op, [x], [y], **fields)
    return m.build(y)


def _binary(op: int, t: _T, shapes=(S2, S2), out: _T | None = None, const_second: bool = False,
            second: _T | None = None, **fields) -> bytes:
    m = _Graph()
    x = m.input("x", shapes[0], t)
    other = second or t
    if const_second:
        y = m.const("y", _nonzero(m.rng, shapes[1], other), other)
    else:
        y = m.input("y", shapes[1], other)
    out_shape = np.broadcast_shapes(tuple(shapes[0]), tuple(shapes[1]))
    z = m.tensor("z", out_shape, out or t)
    m.op(op, [x, y], [z], **fields)
    return m.build(z)


def _nonzero(rng, shape, t: _T) -> np.ndarray:
    """Values without zeros (divisors)."""
    values = _values(rng, shape, t)
    if values.dtype.kind in "iu":
        values = np.where(values == 0, 1, values).astype(values.dtype)
    return values


def _compare(op: int, t: _T, shapes=(S2, S2)) -> bytes:
    return _binary(op, t, shapes, out=BOOL)


def _reduce(op: int, t: _T, shape: Sequence[int] = S4, axis=(1, 2), **fields) -> bytes:
    m = _Graph()
    x = m.input("x", shape, t)
    a = m.i32("axis", list(axis))
    out_shape = [1 if d in axis else s for d, s in enumerate(shape)]
    y = m.tensor("y", out_shape, t)
    m.op(op, [x, a], [y], keep_dims=True, **fields)
    return m.build(y)


def _pool(op: int, t: _T) -> bytes:
    m = _Graph()
    x = m.input("x", (1, 4, 4, 2), t)
    y = m.tensor("y", (1, 2, 2, 2), t)
    m.op(op, [x], [y], padding=Padding.VALID, stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    return m.build(y)


def _weights(m: _Graph, shape, kind: str, channels_axis: int, in_scale: float = 0.05):
    """Filter and bias constants. ``kind``: float, hybrid (int8 per tensor), hybrid-pc
    (int8 per channel), int8 (per channel, int32 bias), 16x8 (int8 filter, int64 bias)."""
    channels = shape[channels_axis]
    if kind == "float":
        return m.const("w", shape, F32), m.const("b", [channels], F32)
    scales = [_WEIGHT_SCALE] * channels if kind != "hybrid" else [_WEIGHT_SCALE]
    wq = quantization(scales, 0, channels_axis if len(scales) > 1 else 0)
    w = m.g.add_constant("w", m.rng.integers(-100, 100, shape).astype(np.int8), quantization=wq)
    if kind in ("hybrid", "hybrid-pc"):
        return w, m.const("b", [channels], F32)
    bias_q = quantization([in_scale * _WEIGHT_SCALE] * channels, 0)
    bias_dtype = np.int32 if kind == "int8" else np.int64
    b = m.g.add_constant("b", m.rng.integers(-1000, 1000, channels).astype(bias_dtype), quantization=bias_q)
    return w, b


_ACTIVATIONS = {"float": F32, "hybrid": F32, "hybrid-pc": F32, "int8": I8Q, "16x8": I16Q}


def _conv(kind: str = "float", groups: int = 1, **fields) -> bytes:
    t = _ACTIVATIONS[kind]
    m = _Graph()
    x = m.input("x", (1, 5, 5, 2 * groups), t)
    w, b = _weights(m, (2 * groups, 3, 3, 2), kind, 0, t.q.scale[0] if t.q is not None else 0.05)
    y = m.tensor("y", (1, 5, 5, 2 * groups), t)
    m.op(B.CONV_2D, [x, w, b], [y], padding=Padding.SAME, stride_w=1, stride_h=1, **fields)
    return m.build(y)


def _depthwise(kind: str = "float", **fields) -> bytes:
    t = _ACTIVATIONS[kind]
    m = _Graph()
    x = m.input("x", (1, 5, 5, 2), t)
    w, b = _weights(m, (1, 3, 3, 2), kind, 3, t.q.scale[0] if t.q is not None else 0.05)
    y = m.tensor("y", (1, 5, 5, 2), t)
    m.op(B.DEPTHWISE_CONV_2D, [x, w, b], [y], padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1, **fields)
    return m.build(y)


def _fully_connected(kind: str = "float", bias: bool = True, rank: int = 2, **fields) -> bytes:
    t = _ACTIVATIONS[kind]
    m = _Graph()
    shape = (1, 2, 4) if rank == 3 else (2, 4)
    x = m.input("x", shape, t)
    w, b = _weights(m, (3, 4), kind, 0, t.q.scale[0] if t.q is not None else 0.05)
    out_shape = (*shape[:-1], 3) if fields.get("keep_num_dims") else (int(np.prod(shape[:-1])), 3)
    y = m.tensor("y", out_shape, t)
    m.op(B.FULLY_CONNECTED, [x, w, b] if bias else [x, w], [y], **fields)
    return m.build(y)


def _transpose_conv(kind: str = "float", bias: bool = False, **fields) -> bytes:
    t = _ACTIVATIONS[kind]
    m = _Graph()
    shape = m.i32("output_shape", [1, 4, 4, 2])
    w, b = _weights(m, (2, 3, 3, 2), kind, 0, t.q.scale[0] if t.q is not None else 0.05)
    x = m.input("x", (1, 2, 2, 2), t)
    y = m.tensor("y", (1, 4, 4, 2), t)
    m.op(B.TRANSPOSE_CONV, [shape, w, x, b] if bias else [shape, w, x], [y], padding=Padding.SAME,
         stride_w=2, stride_h=2, **fields)
    return m.build(y)


def _batch_matmul(t: _T, hybrid: bool = False, **fields) -> bytes:
    m = _Graph()
    x = m.input("x", (1, 2, 4), t)
    if hybrid:
        y = m.g.add_constant("y", m.rng.integers(-100, 100, (1, 4, 3)).astype(np.int8), quantization=quantization(_WEIGHT_SCALE, 0))
    else:
        y = m.input("y", (1, 4, 3), t)
    z = m.tensor("z", (1, 2, 3), t)
    m.op(B.BATCH_MATMUL, [x, y], [z], **fields)
    return m.build(z)


def _concatenation(t: _T) -> bytes:
    m = _Graph()
    x, y = m.input("x", S2, t), m.input("y", S2, t)
    z = m.tensor("z", (2, 6), t)
    m.op(B.CONCATENATION, [x, y], [z], axis=1)
    return m.build(z)


def _pack(t: _T) -> bytes:
    m = _Graph()
    x, y = m.input("x", S2, t), m.input("y", S2, t)
    z = m.tensor("z", (2, 2, 3), t)
    m.op(B.PACK, [x, y], [z], values_count=2, axis=0)
    return m.build(z)


def _unpack(t: _T) -> bytes:
    m = _Graph()
    x = m.input("x", S2, t)
    a, b = m.tensor("a", (3,), t), m.tensor("b", (3,), t)
    m.op(B.UNPACK, [x], [a, b], num=2, axis=0)
    return m.build(a, b)


def _split(t: _T) -> bytes:
    m = _Graph()
    axis = m.g.add_constant("axis", np.array(1, np.int32))
    x = m.input("x", (2, 4), t)
    a, b = m.tensor("a", (2, 2), t), m.tensor("b", (2, 2), t)
    m.op(B.SPLIT, [axis, x], [a, b], num_splits=2)
    return m.build(a, b)


def _split_v(t: _T) -> bytes:
    m = _Graph()
    x = m.input("x", (2, 4), t)
    sizes, axis = m.i32("size_splits", [1, 3]), m.g.add_constant("axis", np.array(1, np.int32))
    a, b = m.tensor("a", (2, 1), t), m.tensor("b", (2, 3), t)
    m.op(B.SPLIT_V, [x, sizes, axis], [a, b], num_splits=2)
    return m.build(a, b)


def _slice(t: _T, rank: int = 2) -> bytes:
    m = _Graph()
    shape = (2, 3) if rank == 2 else (1, 1, 1, 2, 3)
    x = m.input("x", shape, t)
    begin = m.i32("begin", [0] * (rank - 1) + [1])
    size = m.i32("size", list(shape[:-1]) + [2])
    y = m.tensor("y", (*shape[:-1], 2), t)
    m.op(B.SLICE, [x, begin, size], [y])
    return m.build(y)


def _strided_slice(t: _T, rank: int = 2, **fields) -> bytes:
    m = _Graph()
    shape = (2, 3) if rank == 2 else (1, 1, 1, 2, 3)
    x = m.input("x", shape, t)
    begin = m.i32("begin", [0] * (rank - 1) + [1])
    if fields.get("offset"):
        end = m.i32("end", [d for d in shape[:-1]] + [2])  # with offset, end is begin + end
    else:
        end = m.i32("end", list(shape))
    strides = m.i32("strides", [1] * rank)
    out_shape = (*shape[:-1], 2)
    if fields.get("new_axis_mask"):
        out_shape = (1, *out_shape)
        begin = m.i32("begin_new", [0] + [0] * (rank - 1) + [1])
        end = m.i32("end_new", [1, *shape])
        strides = m.i32("strides_new", [1] * (rank + 1))
    y = m.tensor("y", out_shape, t)
    m.op(B.STRIDED_SLICE, [x, begin, end, strides], [y], **fields)
    return m.build(y)


def _gather(t: _T, indices: _T = I32, **fields) -> bytes:
    m = _Graph()
    if fields.get("batch_dims"):
        x = m.input("x", (2, 3), t)
        idx = m.g.add_constant("indices", np.array([[2], [0]], numpy_dtype(indices.type)))
        y = m.tensor("y", (2, 1), t)
        m.op(B.GATHER, [x, idx], [y], axis=1, **fields)
    else:
        x = m.input("x", (3, 2), t)
        idx = m.g.add_constant("indices", np.array([2, 0], numpy_dtype(indices.type)))
        y = m.tensor("y", (2, 2), t)
        m.op(B.GATHER, [x, idx], [y], axis=0, **fields)
    return m.build(y)


def _gather_nd(t: _T, indices: _T = I32) -> bytes:
    m = _Graph()
    x = m.input("x", (2, 3), t)
    idx = m.g.add_constant("indices", np.array([[1], [0]], numpy_dtype(indices.type)))
    y = m.tensor("y", (2, 3), t)
    m.op(B.GATHER_ND, [x, idx], [y])
    return m.build(y)


def _with_const(op: int, t: _T, shape, const, out_shape, const_dtype=np.int32, **fields) -> bytes:
    """``op(x, constant)``: TILE, REVERSE_V2, EXPAND_DIMS, BROADCAST_TO, RESHAPE..."""
    m = _Graph()
    x = m.input("x", shape, t)
    c = m.g.add_constant("c", np.asarray(const, const_dtype))
    y = m.tensor("y", out_shape, t)
    m.op(op, [x, c], [y], **fields)
    return m.build(y)


def _pad(op: int, t: _T, rank: int = 2, **fields) -> bytes:
    m = _Graph()
    shape = (2, 3) if rank == 2 else (1, 1, 1, 2, 3)
    x = m.input("x", shape, t)
    paddings = m.i32("paddings", [[0, 0]] * (rank - 1) + [[1, 1]])
    inputs = [x, paddings]
    if op == B.PADV2:
        inputs.append(m.const("value", np.zeros((), numpy_dtype(t.type)) if t.type != T.STRING else np.array(b"", object), t.same()))
    y = m.tensor("y", (*shape[:-1], 5), t)
    m.op(op, inputs, [y], **fields)
    return m.build(y)


def _space_batch(op: int, t: _T, rank: int = 4) -> bytes:
    m = _Graph()
    if op == B.SPACE_TO_BATCH_ND:
        shape, out_shape = ((1, 4, 4, 1), (4, 2, 2, 1)) if rank == 4 else ((1, 4, 1), (2, 2, 1))
        block = m.i32("block", [2, 2] if rank == 4 else [2])
        pads = m.i32("paddings", [[0, 0], [0, 0]] if rank == 4 else [[0, 0]])
    else:
        shape, out_shape = ((4, 2, 2, 1), (1, 4, 4, 1)) if rank == 4 else ((2, 2, 1), (1, 4, 1))
        block = m.i32("block", [2, 2] if rank == 4 else [2])
        pads = m.i32("crops", [[0, 0], [0, 0]] if rank == 4 else [[0, 0]])
    x = m.input("x", shape, t)
    y = m.tensor("y", out_shape, t)
    m.op(op, [x, block, pads], [y])
    return m.build(y)


def _space_depth(op: int, t: _T) -> bytes:
    shape, out_shape = ((1, 2, 2, 1), (1, 1, 1, 4)) if op == B.SPACE_TO_DEPTH else ((1, 1, 1, 4), (1, 2, 2, 1))
    return _shape_changing(op, t, shape, out_shape, block_size=2)


def _shape_changing(op: int, t: _T, shape, out_shape, out: _T | None = None, **fields) -> bytes:
    m = _Graph()
    x = m.input("x", shape, t)
    y = m.tensor("y", out_shape, out or t)
    m.op(op, [x], [y], **fields)
    return m.build(y)


def _resize(op: int, t: _T, **fields) -> bytes:
    return _with_const(op, t, (1, 2, 2, 1), [4, 4], (1, 4, 4, 1), **fields)


def _fill(t: _T) -> bytes:
    m = _Graph()
    dims = m.i32("dims", [2, 3])
    value = m.const("value", _values(m.rng, (), t), t)
    y = m.tensor("y", (2, 3), t)
    m.op(B.FILL, [dims, value], [y])
    return m.build(y)


def _range(t: _T) -> bytes:
    m = _Graph()
    dtype = numpy_dtype(t.type)
    start, limit, delta = (m.g.add_constant(n, np.array(v, dtype)) for n, v in (("start", 0), ("limit", 5), ("delta", 1)))
    y = m.tensor("y", (5,), t)
    m.op(B.RANGE, [start, limit, delta], [y])
    return m.build(y)


def _select(op: int, t: _T, rank: int = 2) -> bytes:
    m = _Graph()
    shape = S2 if rank == 2 else (1, 1, 1, 2, 3)
    c = m.input("condition", shape, BOOL)
    x, y = m.input("x", shape, t), m.input("y", shape, t)
    z = m.tensor("z", shape, t)
    m.op(op, [c, x, y], [z])
    return m.build(z)


def _where(t: _T) -> bytes:
    m = _Graph()
    c = m.input("condition", S2, t)
    y = m.tensor("y", (6, 2), I64)
    m.op(B.WHERE, [c], [y])
    return m.build(y)


def _arg(op: int, t: _T) -> bytes:
    m = _Graph()
    x = m.input("x", S2, t)
    axis = m.i32("axis", [1])
    y = m.tensor("y", (2,), I32)
    m.op(op, [x, axis], [y], output_type=T.INT32)
    return m.build(y)


def _cast(source: _T, target: _T) -> bytes:
    return _shape_changing(B.CAST, source, S2, S2, out=target, in_data_type=source.type, out_data_type=target.type)


def _dequantize(t: _T, per_channel: bool = False) -> bytes:
    m = _Graph()
    if per_channel:
        x = m.g.add_constant("x", m.rng.integers(-100, 100, (3, 2)).astype(np.int8),
                             quantization=quantization([0.1, 0.2, 0.3], 0, 0))
    else:
        x = m.input("x", S2, t)
    y = m.tensor("y", (3, 2) if per_channel else S2, F32)
    m.op(B.DEQUANTIZE, [x], [y])
    return m.build(y)


def _quantize(target: _T, per_channel: bool = False) -> bytes:
    m = _Graph()
    x = m.input("x", (3, 2), F32)
    q = quantization([0.1, 0.2, 0.3], 0, 0) if per_channel else target.q
    y = m.g.add_tensor("y", [3, 2], target.type, quantization=q)
    m.op(B.QUANTIZE, [x], [y])
    return m.build(y)


def _one_hot() -> bytes:
    m = _Graph()
    indices = m.input("indices", (3,), I32)
    depth = m.g.add_constant("depth", np.array(4, np.int32))
    on, off = m.g.add_constant("on", np.array(1.0, np.float32)), m.g.add_constant("off", np.array(0.0, np.float32))
    y = m.tensor("y", (3, 4), F32)
    m.op(B.ONE_HOT, [indices, depth, on, off], [y], axis=-1)
    return m.build(y)


def _shape_of(op: int) -> bytes:
    out_shape = (2,) if op == B.SHAPE else ()
    return _shape_changing(op, F32, S2, out_shape, out=I32, **({"out_type": T.INT32} if op == B.SHAPE else {}))


def _densify() -> bytes:
    """DENSIFY of a constant stored sparse (every dimension dense: the simplest format)."""
    from schema import schema_generated as fb
    from schema.model import FILE_IDENTIFIER

    import flatbuffers

    dense = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]], np.float32)
    m = _Graph()
    w = m.g.add_constant("w", dense)
    y = m.tensor("y", dense.shape, F32)
    m.op(B.DENSIFY, [w], [y])
    model = fb.ModelT.InitFromPackedBuf(m.build(y), 0)
    tensor = next(t for t in model.subgraphs[0].tensors if t.name.decode() == "w")
    sparsity = fb.SparsityParametersT()
    sparsity.traversalOrder = [0, 1]
    sparsity.blockMap = []
    sparsity.dimMetadata = []
    for size in dense.shape:
        dim = fb.DimensionMetadataT()
        dim.format = 0  # DENSE
        dim.denseSize = size
        sparsity.dimMetadata.append(dim)
    tensor.sparsity = sparsity
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=FILE_IDENTIFIER)
    return bytes(builder.Output())


# control flow and resource variables: a few nodes around the subject


def _branch(builder: ModelBuilder, op: int, name: str):
    graph = builder.subgraph(name)
    x = graph.add_input("x", list(S2))
    y = graph.add_tensor("y", list(S2))
    graph.add_operator(op, [x], [y])
    graph.add_output(y)
    return graph


def _if() -> bytes:
    m = _Graph()
    cond = m.input("cond", (), BOOL)
    x = m.input("x", S2)
    y = m.tensor("y", S2)
    then_graph, else_graph = _branch(m.builder, B.RELU, "then"), _branch(m.builder, B.NEG, "else")
    m.op(B.IF, [cond, x], [y], then_subgraph_index=then_graph.index, else_subgraph_index=else_graph.index)
    m.g.add_output(y)
    m.builder.add_signature("serving_default", m.g)
    return m.builder.build()


def _while() -> bytes:
    """i = 0; while i < 3: i += 1."""
    m = _Graph()
    x = m.input("x", (), I32)
    y = m.tensor("y", (), I32)
    m.op(B.WHILE, [x], [y], cond_subgraph_index=1, body_subgraph_index=2)
    m.g.add_output(y)
    m.builder.add_signature("serving_default", m.g)
    cond = m.builder.subgraph("cond")
    i = cond.add_input("i", [], np.int32)
    three = cond.add_constant("three", np.array(3, np.int32))
    going = cond.add_tensor("going", [], np.bool_)
    cond.add_operator(B.LESS, [i, three], [going])
    cond.add_output(going)
    body = m.builder.subgraph("body")
    i = body.add_input("i", [], np.int32)
    one = body.add_constant("one", np.array(1, np.int32))
    j = body.add_tensor("j", [], np.int32)
    body.add_operator(B.ADD, [i, one], [j])
    body.add_output(j)
    return m.builder.build()


def _variables(call_once: bool = False) -> bytes:
    """[CALL_ONCE,] VAR_HANDLE, ASSIGN_VARIABLE(x), READ_VARIABLE -> y (without CALL_ONCE);
    with it, CALL_ONCE(init assigns a constant), VAR_HANDLE, READ_VARIABLE -> y."""
    from schema.params import VarHandleParams

    m = _Graph()
    if call_once:
        init = m.builder.subgraph("init")
        handle = init.add_tensor("handle", [], T.RESOURCE)
        value = init.add_constant("value", np.array([1.0, 2.0], np.float32))
        init.add_operator(B.VAR_HANDLE, [], [handle], VarHandleParams(shared_name="v"))
        init.add_operator(B.ASSIGN_VARIABLE, [handle, value], [])
        m.op(B.CALL_ONCE, [], [], init_subgraph_index=init.index)
    else:
        x = m.input("x", (2,))
    handle = m.g.add_tensor("handle", [], T.RESOURCE)
    m.op(B.VAR_HANDLE, [], [handle], VarHandleParams(shared_name="v"))
    if not call_once:
        m.op(B.ASSIGN_VARIABLE, [handle, x], [])
    y = m.tensor("y", (2,))
    m.op(B.READ_VARIABLE, [handle], [y])
    m.g.add_output(y)
    m.builder.add_signature("serving_default", m.g)
    return m.builder.build()


def _hand_stamped(build: Callable[[], bytes], version: int) -> Callable[[], bytes]:
    """``build`` with node 0 re-stamped ``version`` (for UNBUILDABLE_VERSIONS' recipes)."""

    def stamped() -> bytes:
        from schema import schema_generated as fb
        from schema.model import FILE_IDENTIFIER

        import flatbuffers

        model = fb.ModelT.InitFromPackedBuf(build(), 0)
        code = model.subgraphs[0].operators[0].opcodeIndex
        model.operatorCodes[code].version = version
        builder = flatbuffers.Builder(1024)
        builder.Finish(model.Pack(builder), file_identifier=FILE_IDENTIFIER)
        return bytes(builder.Output())

    return stamped


# -- the table -----------------------------------------------------------------------------------------


def _table() -> Iterator[tuple[int, int, str, str, Callable[[], bytes], int]]:
    """(op, version, family, description, build, subject) for every recipe."""

    def r(op, version, family, description, build, subject=0):
        return (op, version, family, description, build, subject)

    # elementwise unary ops: the type makes the version
    unary = {
        B.ABS: {1: F32, 2: I8Q.same(), 3: I16Q.same(), 4: I16, 5: I32},
        B.CEIL: {1: F32}, B.COS: {1: F32}, B.ELU: {1: F32}, B.FLOOR: {1: F32}, B.HARD_SWISH: {1: F32},
        B.NEG: {1: F32}, B.ROUND: {1: F32}, B.SIN: {1: F32}, B.SQUARE: {1: F32}, B.ZEROS_LIKE: {1: F32},
        B.RELU_0_TO_1: {1: F32}, B.RELU_N1_TO_1: {1: F32}, B.LOGICAL_NOT: {1: BOOL},
        B.EXP: {1: F32, 2: I8Q}, B.LOG: {1: F32, 2: I8Q}, B.SQRT: {1: F32, 2: I8Q},
        B.RSQRT: {1: F32, 2: I8Q, 3: I16Q},
        B.GELU: {1: F32, 2: I8Q},
        B.RELU: {1: F32, 2: I8Q, 3: I16Q}, B.RELU6: {1: F32, 2: I8Q, 3: I16Q},
        B.LEAKY_RELU: {1: F32, 2: I16Q},
        B.SIGN: {1: F32, 2: I32},
        B.LOGISTIC: {1: F32, 2: I8Q.with_out(1 / 256, -128), 3: I16Q.with_out(1 / 32768, 0)},
        B.TANH: {1: F32, 2: I8Q.with_out(1 / 128, 0), 3: I16Q.with_out(1 / 32768, 0)},
        B.SOFTMAX: {1: F32, 2: I8Q.with_out(1 / 256, -128), 3: I16Q.with_out(1 / 32768, 0)},
        B.LOG_SOFTMAX: {1: F32, 2: I8Q.with_out(16 / 256, 127)},
        B.L2_NORMALIZATION: {1: F32, 2: I8Q.with_out(1 / 128, 0)},
    }
    fields = {B.LEAKY_RELU: {"alpha": 0.2}, B.SOFTMAX: {"beta": 1.0}}
    for op, versions in unary.items():
        for version, t in versions.items():
            yield r(op, version, "unary", t.name, lambda op=op, t=t: _unary(op, t, **fields.get(op, {})))
    yield r(B.LOCAL_RESPONSE_NORMALIZATION, 1, "unary", "float32, 4-D",
            lambda: _unary(B.LOCAL_RESPONSE_NORMALIZATION, F32, S4, radius=1, bias=1.0, alpha=1.0, beta=0.5))

    # elementwise binary ops
    i16_general = {"pot_scale_int16": False}
    b5 = ((1, 1, 1, 2, 3), (1, 1, 1, 1, 3))  # broadcasting with 5 dimensions
    mul3 = dataclasses.replace(I8Q, q=quantization(0.5, 0), q_out=quantization(0.125, 0))
    binary = [
        (B.ADD, 1, F32, {}), (B.ADD, 2, I8Q, {}), (B.ADD, 3, I16Q, i16_general), (B.ADD, 4, I64, {}),
        (B.ADD, 5, I16, {}), (B.ADD, 6, F16, {}),
        (B.SUB, 1, F32, {}), (B.SUB, 2, I8Q, {}), (B.SUB, 3, F32, {"shapes": b5}), (B.SUB, 4, I64, {}),
        (B.SUB, 5, I16Q, i16_general),
        (B.MUL, 1, F32, {}), (B.MUL, 2, I8Q, {}), (B.MUL, 3, mul3, {}), (B.MUL, 4, I16Q, {}), (B.MUL, 5, I64, {}),
        (B.MUL, 6, C64, {}), (B.MUL, 7, I16, {}), (B.MUL, 8, F16, {}),
        (B.DIV, 1, F32, {"const_second": True}), (B.DIV, 2, F32, {"shapes": b5, "const_second": True}),
        (B.MAXIMUM, 1, F32, {}), (B.MAXIMUM, 2, I8Q.same(), {}), (B.MAXIMUM, 3, F32, {"shapes": b5}),
        (B.MAXIMUM, 4, I16Q.same(), {}),
        (B.MINIMUM, 1, F32, {}), (B.MINIMUM, 2, I8Q.same(), {}), (B.MINIMUM, 3, F32, {"shapes": b5}),
        (B.MINIMUM, 4, I16Q.same(), {}),
        (B.FLOOR_DIV, 1, I32, {"const_second": True}), (B.FLOOR_DIV, 2, F32, {"const_second": True}),
        (B.FLOOR_DIV, 3, I16, {"const_second": True}),
        (B.FLOOR_MOD, 1, I32, {"const_second": True}), (B.FLOOR_MOD, 2, I16, {"const_second": True}),
        (B.SQUARED_DIFFERENCE, 1, F32, {}), (B.SQUARED_DIFFERENCE, 2, I8Q, {}),
        (B.POW, 1, F32, {}),
        (B.PRELU, 1, F32, {"const_second": True}),
        (B.LOGICAL_AND, 1, BOOL, {}), (B.LOGICAL_OR, 1, BOOL, {}),
    ]
    for op, version, t, options in binary:
        options = dict(options)
        description = t.name + (", 5-D broadcast" if options.get("shapes") is b5 else "")
        if op in (B.ADD, B.SUB) and options.get("pot_scale_int16") is False:
            description += ", pot_scale_int16=False"
        if op == B.MUL and version == 3:
            description = "int8 quantized, input scales product / output scale >= 1"
        yield r(op, version, "binary", description, lambda op=op, t=t, o=options: _binary(op, t, **o))

    comparisons = {
        B.EQUAL: {1: F32, 2: I8Q, 3: STR, 5: I16Q}, B.NOT_EQUAL: {1: F32, 2: I8Q, 3: STR, 4: I16Q},
        B.LESS: {1: F32, 2: I8Q, 3: I16}, B.GREATER_EQUAL: {1: F32, 2: I8Q, 3: I16},
        B.GREATER: {1: F32, 2: I8Q}, B.LESS_EQUAL: {1: F32, 2: I8Q},
    }
    for op, versions in comparisons.items():
        for version, t in versions.items():
            yield r(op, version, "comparison", f"{t.name} -> bool", lambda op=op, t=t: _compare(op, t))

    # reductions
    reductions = {
        B.MEAN: {1: F32, 2: I8Q, 3: I16Q}, B.REDUCE_MAX: {1: F32, 2: I8Q.same(), 3: I16Q.same()},
        B.REDUCE_MIN: {1: F32, 2: I8Q.same(), 3: I16Q.same()}, B.SUM: {1: F32, 2: I8Q},
        B.REDUCE_PROD: {1: F32, 2: I8Q}, B.REDUCE_ALL: {1: BOOL}, B.REDUCE_ANY: {1: BOOL},
    }
    for op, versions in reductions.items():
        for version, t in versions.items():
            yield r(op, version, "reduction", f"{t.name}, axes 1 and 2, keep_dims", lambda op=op, t=t: _reduce(op, t))
    yield r(B.CUMSUM, 1, "reduction", "float32", lambda: _with_const(B.CUMSUM, F32, S2, 1, S2))
    for op in (B.ARG_MAX, B.ARG_MIN):
        for version, t in {1: F32, 2: I8Q, 3: BOOL}.items():
            yield r(op, version, "reduction", f"{t.name} -> int32", lambda op=op, t=t: _arg(op, t))

    # pooling
    for op in (B.MAX_POOL_2D, B.AVERAGE_POOL_2D):
        for version, t in {1: F32, 2: I8Q.same(), 3: I16Q.same()}.items():
            yield r(op, version, "pooling", f"{t.name}, 2x2 window, stride 2", lambda op=op, t=t: _pool(op, t))
    yield r(B.L2_POOL_2D, 1, "pooling", "float32, 2x2 window, stride 2", lambda: _pool(B.L2_POOL_2D, F32))

    # convolutions and matrix products (filters OHWI, depthwise 1HWC)
    relu = ActivationFunctionType.RELU
    conv = {
        1: ("float32", lambda: _conv("float")),
        2: ("hybrid: float32 activations, int8 filter per tensor", lambda: _conv("hybrid")),
        3: ("int8 quantized, per-channel filter", lambda: _conv("int8")),
        5: ("hybrid, int8 filter per channel", lambda: _conv("hybrid-pc")),
        6: ("float32, grouped (2 groups)", lambda: _conv("float", groups=2)),
        8: ("int16 activations, int8 filter, quantized_bias_type=INT64", lambda: _conv("16x8", quantized_bias_type=T.INT64)),
    }
    for version, (description, build) in conv.items():
        yield r(B.CONV_2D, version, "convolution", description, build)
    depthwise = {
        1: ("float32", lambda: _depthwise("float")),
        2: ("float32, dilation 2", lambda: _depthwise("float", dilation_w_factor=2, dilation_h_factor=2)),
        3: ("int8 quantized, per-channel filter", lambda: _depthwise("int8")),
        4: ("hybrid: float32 activations, int8 filter per tensor", lambda: _depthwise("hybrid")),
        6: ("hybrid, int8 filter per channel", lambda: _depthwise("hybrid-pc")),
    }
    for version, (description, build) in depthwise.items():
        yield r(B.DEPTHWISE_CONV_2D, version, "convolution", description, build)
    fully_connected = {
        1: ("float32", lambda: _fully_connected("float")),
        3: ("hybrid: float32 activations, int8 weights per tensor", lambda: _fully_connected("hybrid")),
        4: ("int8 quantized", lambda: _fully_connected("int8")),
        5: ("float32, keep_num_dims", lambda: _fully_connected("float", rank=3, keep_num_dims=True)),
        6: ("float32, two inputs (no bias slot)", lambda: _fully_connected("float", bias=False)),
        9: ("hybrid, asymmetric_quantize_inputs", lambda: _fully_connected("hybrid", asymmetric_quantize_inputs=True)),
        11: ("int16 activations, int8 weights, quantized_bias_type=INT64",
             lambda: _fully_connected("16x8", quantized_bias_type=T.INT64)),
        12: ("hybrid, int8 weights per channel", lambda: _fully_connected("hybrid-pc")),
    }
    for version, (description, build) in fully_connected.items():
        yield r(B.FULLY_CONNECTED, version, "convolution", description, build)
    transpose_conv = {
        1: ("float32, no bias", lambda: _transpose_conv("float")),
        2: ("int8 quantized, no bias", lambda: _transpose_conv("int8")),
        3: ("float32 with bias", lambda: _transpose_conv("float", bias=True)),
        4: ("float32 with bias and a fused RELU", lambda: _transpose_conv("float", bias=True, fused_activation_function=relu)),
    }
    for version, (description, build) in transpose_conv.items():
        yield r(B.TRANSPOSE_CONV, version, "convolution", description, build)
    batch_matmul = {
        1: ("float32", lambda: _batch_matmul(F32)),
        2: ("int8 quantized", lambda: _batch_matmul(I8Q)),
        3: ("int16 quantized", lambda: _batch_matmul(I16Q)),
        4: ("hybrid with asymmetric_quantize_inputs", lambda: _batch_matmul(F32, hybrid=True, asymmetric_quantize_inputs=True)),
    }
    for version, (description, build) in batch_matmul.items():
        yield r(B.BATCH_MATMUL, version, "convolution", description, build)

    # shape and data movement: the type (and the rank) make the version
    movement = [
        (B.CONCATENATION, {1: F32, 2: I8Q.same(), 3: I16Q.same(), 4: U32}, _concatenation),
        (B.PACK, {1: F32, 2: I8Q.same(), 3: I16Q.same(), 4: U32}, _pack),
        (B.UNPACK, {1: F32, 2: I8Q.same(), 3: BOOL, 4: I16Q.same(), 5: F16}, _unpack),
        (B.SPLIT, {1: F32, 2: I8Q.same(), 3: I32, 4: I16Q.same()}, _split),
        (B.SPLIT_V, {1: F32, 2: I8Q.same()}, _split_v),
        (B.GATHER_ND, {1: F32, 2: STR, 3: I16Q.same(), 5: BOOL}, _gather_nd),
        (B.FILL, {1: F32, 2: BOOL, 3: I8, 4: F16}, _fill),
        (B.RANGE, {1: I32, 2: I64}, _range),
        (B.WHERE, {1: BOOL, 2: F32}, _where),
    ]
    for op, versions, builder in movement:
        for version, t in versions.items():
            yield r(op, version, "data movement", t.name, lambda builder=builder, t=t: builder(t))
    yield r(B.GATHER_ND, 4, "data movement", "float32, int16 indices", lambda: _gather_nd(F32, I16))
    for version, t in {1: F32, 2: I8Q.same(), 3: BOOL, 4: I16Q.same()}.items():
        yield r(B.GATHER, version, "data movement", t.name, lambda t=t: _gather(t))
    yield r(B.GATHER, 5, "data movement", "float32, batch_dims=1", lambda: _gather(F32, batch_dims=1))
    yield r(B.GATHER, 6, "data movement", "float32, int16 indices", lambda: _gather(F32, I16))
    for version, (t, rank) in {1: (F32, 2), 2: (I8Q.same(), 2), 3: (STR, 2), 4: (I16Q.same(), 2), 5: (F32, 5),
                               6: (U32, 2)}.items():
        yield r(B.SLICE, version, "data movement", t.name + (", 5-D" if rank == 5 else ""),
                lambda t=t, rank=rank: _slice(t, rank))
    strided = {
        1: ("float32", lambda: _strided_slice(F32)),
        2: ("int8 quantized", lambda: _strided_slice(I8Q.same())),
        3: ("bool", lambda: _strided_slice(BOOL)),
        4: ("float32, 5-D", lambda: _strided_slice(F32, rank=5)),
        5: ("string", lambda: _strided_slice(STR)),
        6: ("float32, new_axis_mask", lambda: _strided_slice(F32, new_axis_mask=1)),
        7: ("uint32", lambda: _strided_slice(U32)),
        8: ("float32, offset", lambda: _strided_slice(F32, offset=True)),
    }
    for version, (description, build) in strided.items():
        yield r(B.STRIDED_SLICE, version, "data movement", description, build)
    for version, (t, rank) in {1: (F32, 2), 2: (I8Q.same(), 2), 3: (BOOL, 2), 4: (F32, 5), 5: (I16Q.same(), 2),
                               6: (F32, 6), 8: (F32, 7)}.items():
        shape = (2, 3) if rank == 2 else (1,) * (rank - 2) + (2, 3)
        perm = list(range(rank - 2)) + [rank - 1, rank - 2]
        out_shape = shape[:-2] + (3, 2)
        yield r(B.TRANSPOSE, version, "data movement", t.name + (f", {rank}-D" if rank > 2 else ""),
                lambda t=t, shape=shape, perm=perm, out_shape=out_shape: _with_const(B.TRANSPOSE, t, shape, perm, out_shape))
    for version, t in {1: F32, 2: STR, 3: I8Q.same()}.items():
        yield r(B.TILE, version, "data movement", t.name, lambda t=t: _with_const(B.TILE, t, S2, [2, 1], (4, 3)))
    for version, t in {1: F32, 2: BOOL, 3: I8Q.same()}.items():
        yield r(B.REVERSE_V2, version, "data movement", t.name, lambda t=t: _with_const(B.REVERSE_V2, t, S2, [1], S2))
    for version, t in {2: F32, 3: I8Q.same()}.items():
        yield r(B.BROADCAST_TO, version, "data movement", t.name,
                lambda t=t: _with_const(B.BROADCAST_TO, t, (1, 3), [2, 3], S2))
    yield r(B.EXPAND_DIMS, 1, "data movement", "float32", lambda: _with_const(B.EXPAND_DIMS, F32, S2, 0, (1, 2, 3)))
    yield r(B.RESHAPE, 1, "data movement", "float32",
            lambda: _with_const(B.RESHAPE, F32, S2, [3, 2], (3, 2), new_shape=(3, 2)))
    yield r(B.SQUEEZE, 1, "data movement", "float32",
            lambda: _shape_changing(B.SQUEEZE, F32, (1, 2, 1, 3), S2, squeeze_dims=(0, 2)))
    yield r(B.SQUEEZE, 2, "data movement", "string",
            lambda: _shape_changing(B.SQUEEZE, STR, (1, 2, 1, 3), S2, squeeze_dims=(0, 2)))
    for op in (B.PAD, B.PADV2):
        for version, (t, rank) in {1: (F32, 2), 2: (I8Q.same(), 2), 3: (I16Q.same(), 2), 4: (F32, 5), 5: (BOOL, 2)}.items():
            yield r(op, version, "data movement", t.name + (", 5-D" if rank == 5 else ""),
                    lambda op=op, t=t, rank=rank: _pad(op, t, rank))
    for version, t in {1: F32, 2: I8Q.same(), 3: I16Q.same()}.items():
        yield r(B.MIRROR_PAD, version, "data movement", f"{t.name}, REFLECT",
                lambda t=t: _pad(B.MIRROR_PAD, t, mode=MirrorPadMode.REFLECT))
    for op in (B.SPACE_TO_BATCH_ND, B.BATCH_TO_SPACE_ND):
        for version, (t, rank) in {1: (F32, 4), 2: (I8Q.same(), 4), 3: (F32, 3), 4: (I16Q.same(), 4)}.items():
            yield r(op, version, "data movement", t.name + (", 3-D" if rank == 3 else ""),
                    lambda op=op, t=t, rank=rank: _space_batch(op, t, rank))
    for op in (B.SPACE_TO_DEPTH, B.DEPTH_TO_SPACE):
        for version, t in {1: F32, 2: I8Q.same()}.items():
            yield r(op, version, "data movement", f"{t.name}, block 2", lambda op=op, t=t: _space_depth(op, t))
    resize = {
        B.RESIZE_BILINEAR: {1: (F32, {}), 2: (I8Q.same(), {}), 3: (F32, {"half_pixel_centers": True}), 4: (I16Q.same(), {})},
        B.RESIZE_NEAREST_NEIGHBOR: {1: (F32, {}), 2: (I8Q.same(), {}), 3: (F32, {"align_corners": True}),
                                    4: (I16Q.same(), {})},
    }
    for op, versions in resize.items():
        for version, (t, options) in versions.items():
            description = t.name + "".join(f", {k}" for k in options) + ", 2x2 -> 4x4"
            yield r(op, version, "data movement", description, lambda op=op, t=t, o=options: _resize(op, t, **o))
    for version, (t, rank) in {1: (F32, 2), 3: (F32, 5)}.items():
        yield r(B.SELECT, version, "data movement", t.name + (", 5-D" if rank == 5 else ""),
                lambda t=t, rank=rank: _select(B.SELECT, t, rank))
    yield r(B.SELECT_V2, 1, "data movement", "float32", lambda: _select(B.SELECT_V2, F32))
    yield r(B.SHAPE, 1, "data movement", "float32 -> int32", lambda: _shape_of(B.SHAPE))
    yield r(B.RANK, 1, "data movement", "float32 -> int32", lambda: _shape_of(B.RANK))
    yield r(B.ONE_HOT, 1, "data movement", "int32 indices -> float32", _one_hot)

    # types and quantization
    for version, (source, target) in {1: (F32, I32), 2: (U32, F32), 3: (I8, F32), 4: (U16, F32), 5: (F32, F16)}.items():
        yield r(B.CAST, version, "type conversion", f"{source.name} -> {target.name}",
                lambda s=source, t=target: _cast(s, t))
    dequantize = {
        1: ("uint8 quantized -> float32", lambda: _dequantize(U8Q)),
        2: ("int8 quantized -> float32", lambda: _dequantize(I8Q)),
        3: ("int16 quantized -> float32", lambda: _dequantize(I16Q)),
        5: ("int8 per channel (a constant) -> float32", lambda: _dequantize(I8Q, per_channel=True)),
    }
    for version, (description, build) in dequantize.items():
        yield r(B.DEQUANTIZE, version, "type conversion", description, build)
    quantize = {
        1: ("float32 -> int8", lambda: _quantize(I8Q)),
        2: ("float32 -> int16", lambda: _quantize(I16Q)),
        3: ("float32 -> int8 per channel", lambda: _quantize(I8Q, per_channel=True)),
    }
    for version, (description, build) in quantize.items():
        yield r(B.QUANTIZE, version, "type conversion", description, build)
    yield r(B.DENSIFY, 1, "type conversion", "float32 constant stored sparse", _densify)

    # control flow and resource variables
    yield r(B.IF, 1, "control flow", "float32 branches (RELU or NEG)", _if)
    yield r(B.WHILE, 1, "control flow", "int32 counter: while i < 3: i += 1", _while)
    yield r(B.CALL_ONCE, 1, "control flow", "initialises a variable read after it", lambda: _variables(call_once=True))
    yield r(B.VAR_HANDLE, 1, "resource variable", "VAR_HANDLE, ASSIGN_VARIABLE, READ_VARIABLE", _variables)
    yield r(B.ASSIGN_VARIABLE, 1, "resource variable", "VAR_HANDLE, ASSIGN_VARIABLE, READ_VARIABLE", _variables, 1)
    yield r(B.READ_VARIABLE, 1, "resource variable", "VAR_HANDLE, ASSIGN_VARIABLE, READ_VARIABLE", _variables, 2)


def _typed_inputs(op: int, types: Sequence[_T], shapes: Sequence[Sequence[int]], out: _T, out_shape, **fields) -> bytes:
    """``op`` over graph inputs of the given types (no constants): for types the runtime
    cannot hold (int4, int2, uint4, bfloat16), whose recipes serve dry runs only."""
    m = _Graph()
    inputs = [m.input(f"x{i}", shape, t) for i, (t, shape) in enumerate(zip(types, shapes))]
    y = m.tensor("y", out_shape, out)
    m.op(op, inputs, [y], **fields)
    return m.build(y)


def _sparse_fully_connected() -> bytes:
    """FULLY_CONNECTED whose float32 weights are stored sparse (every dimension dense)."""
    from schema import schema_generated as fb
    from schema.model import FILE_IDENTIFIER

    import flatbuffers

    model = fb.ModelT.InitFromPackedBuf(_fully_connected("float"), 0)
    tensor = next(t for t in model.subgraphs[0].tensors if t.name.decode() == "w")
    sparsity = fb.SparsityParametersT()
    sparsity.traversalOrder, sparsity.blockMap, sparsity.dimMetadata = [0, 1], [], []
    for size in tensor.shape:
        dim = fb.DimensionMetadataT()
        dim.format, dim.denseSize = 0, int(size)
        sparsity.dimMetadata.append(dim)
    tensor.sparsity = sparsity
    operator = model.subgraphs[0].operators[0]
    model.operatorCodes[operator.opcodeIndex].version = 8  # what the rules give once the weights are sparse
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=FILE_IDENTIFIER)
    return bytes(builder.Output())


def _dry_run_table() -> Iterator[tuple[int, int, str, str, Callable[[], bytes], int]]:
    """Versions the CPU does not register (other types, formats): for dry runs of delegates
    whose cap is just below them (``assert_takes_versions_up_to(..., max_version=N)`` needs
    a recipe for N + 1)."""
    family = "dry run only"
    w2, x24, o23 = (3, 4), (2, 4), (2, 3)
    yield (B.FULLY_CONNECTED, 2, family, "shuffled 4x16 int8 weights format (uint8 input, int16 output)",
           lambda: _typed_inputs(B.FULLY_CONNECTED, [U8Q, I8Q, I32], [x24, w2, (3,)], I16Q, o23, weights_format=1), 0)
    yield (B.FULLY_CONNECTED, 8, family, "float32, sparse weights", _sparse_fully_connected, 0)
    yield (B.FULLY_CONNECTED, 10, family, "int8 activations, int4 weights",
           lambda: _typed_inputs(B.FULLY_CONNECTED, [I8Q, I4, I32], [x24, w2, (3,)], I8Q, o23), 0)
    yield (B.FULLY_CONNECTED, 13, family, "int16 activations, int4 weights",
           lambda: _typed_inputs(B.FULLY_CONNECTED, [I16Q, I4, I64], [x24, w2, (3,)], I16Q, o23), 0)
    yield (B.FULLY_CONNECTED, 14, family, "int2 weights",
           lambda: _typed_inputs(B.FULLY_CONNECTED, [I8Q, I2, I32], [x24, w2, (3,)], I8Q, o23), 0)
    conv_shapes = [(1, 5, 5, 2), (2, 3, 3, 2), (2,)]
    yield (B.CONV_2D, 7, family, "int8 activations, int4 filter",
           lambda: _typed_inputs(B.CONV_2D, [I8Q, I4, I32], conv_shapes, I8Q, (1, 5, 5, 2), stride_w=1, stride_h=1), 0)
    yield (B.DEPTHWISE_CONV_2D, 7, family, "int8 activations, int4 filter",
           lambda: _typed_inputs(B.DEPTHWISE_CONV_2D, [I8Q, I4, I32], [(1, 5, 5, 2), (1, 3, 3, 2), (2,)], I8Q,
                                 (1, 5, 5, 2), stride_w=1, stride_h=1, depth_multiplier=1), 0)
    yield (B.CONCATENATION, 5, family, "int4",
           lambda: _typed_inputs(B.CONCATENATION, [I4, I4], [S2, S2], I4, (2, 6), axis=1), 0)
    yield (B.GATHER, 7, family, "int4 params",
           lambda: _typed_inputs(B.GATHER, [I4, I32], [(3, 2), (2,)], I4, (2, 2)), 0)
    yield (B.TRANSPOSE, 7, family, "int4",
           lambda: _typed_inputs(B.TRANSPOSE, [I4, I32], [S2, (2,)], I4, (3, 2)), 0)
    yield (B.SLICE, 7, family, "int4",
           lambda: _typed_inputs(B.SLICE, [I4, I32, I32], [S2, (2,), (2,)], I4, (2, 2)), 0)
    yield (B.SELECT, 2, family, "int8 condition (the rule tests input 0)",
           lambda: _typed_inputs(B.SELECT, [I8, F32, F32], [S2, S2, S2], F32, S2), 0)
    for version, source in {6: I4, 7: I2, 8: U4}.items():
        yield (B.DEQUANTIZE, version, family, f"{source.name} -> float32",
               lambda source=source: _typed_inputs(B.DEQUANTIZE, [source], [S2], F32, S2), 0)
    for version, (source, target) in {6: (I4, F32), 7: (BF16, F32), 8: (I2, F32)}.items():
        yield (B.CAST, version, family, f"{source.name} -> {target.name}",
               lambda s=source, t=target: _typed_inputs(B.CAST, [s], [S2], t, S2), 0)
    for version, target in {4: I4, 5: U4}.items():
        yield (B.QUANTIZE, version, family, f"float32 -> {target.name}",
               lambda t=target: _typed_inputs(B.QUANTIZE, [F32], [S2], t, S2), 0)


def _hand_stamped_table() -> Iterator[tuple[int, int, str, str, Callable[[], bytes]]]:
    """Recipes for the registered versions the rules never give (see UNBUILDABLE_VERSIONS)."""
    yield (B.TRANSPOSE_CONV, 5, "convolution", "int16 activations, int8 filter, bias, quantized_bias_type=INT64",
           _hand_stamped(lambda: _transpose_conv("16x8", bias=True, quantized_bias_type=T.INT64), 5))
    yield (B.SELECT, 4, "data movement", "uint32 values", _hand_stamped(lambda: _select(B.SELECT, U32), 4))
    yield (B.SELECT_V2, 2, "data movement", "uint32 values", _hand_stamped(lambda: _select(B.SELECT_V2, U32), 2))
    yield (B.CONV_2D, 4, "convolution", "int16 activations, int8 filter", _hand_stamped(lambda: _conv("16x8"), 4))
    yield (B.DEPTHWISE_CONV_2D, 5, "convolution", "int16 activations, int8 filter", _hand_stamped(lambda: _depthwise("16x8"), 5))
    yield (B.FULLY_CONNECTED, 7, "convolution", "int16 activations, int8 weights",
           _hand_stamped(lambda: _fully_connected("16x8"), 7))
    yield (B.EQUAL, 4, "comparison", "string -> bool", _hand_stamped(lambda: _compare(B.EQUAL, STR), 4))


# -- typed and bit-exact recipes --------------------------------------------------------------------


def _realistic(rng: np.random.Generator, channels: int) -> list[float]:
    """Per-channel weight scales as a converter writes them: not round numbers."""
    return [float(np.float32(v)) for v in rng.uniform(0.0031, 0.0197, channels)]


def _bitexact(op: int, kind: str = "conv", **fields) -> bytes:
    """An int8 model of ``op`` big enough, with realistic scales, that a kernel off by one
    step anywhere in its rescaling differs from the reference on some outputs: hundreds of
    outputs, per-channel weight scales and zero points that are not round numbers, an
    output scale chosen from the float range so the outputs do not saturate."""
    m = _Graph()
    rng = np.random.default_rng(27)
    in_q = quantization(0.0237, -7)
    if op == B.ADD or op == B.MUL:
        a = m.g.add_input("a", [1, 8, 8, 8], T.INT8, quantization=in_q)
        b = m.g.add_input("b", [1, 8, 8, 8], T.INT8, quantization=quantization(0.0391, 11))
        out_q = quantization(0.0617 if op == B.ADD else 0.0317, 3)
        y = m.g.add_tensor("y", [1, 8, 8, 8], T.INT8, quantization=out_q)
        m.op(op, [a, b], [y], **fields)
        return m.build(y)
    if op == B.FULLY_CONNECTED:
        rows, depth, units = 8, 64, 32
        x_shape, w_shape, axis = [rows, depth], [units, depth], 0
        keep = fields.get("keep_num_dims", False)
        if keep:
            x_shape = [2, rows // 2, depth]
        y_shape = [*x_shape[:-1], units] if keep else [rows, units]
    elif op == B.CONV_2D:
        x_shape, w_shape, axis, y_shape = [1, 8, 8, 8], [8, 3, 3, 8], 0, [1, 8, 8, 8]
        depth = 9 * 8
    else:  # DEPTHWISE_CONV_2D
        x_shape, w_shape, axis, y_shape = [1, 8, 8, 8], [1, 3, 3, 8], 3, [1, 8, 8, 8]
        depth = 9
    channels = w_shape[axis]
    scales = _realistic(rng, channels) if op != B.FULLY_CONNECTED else [_realistic(rng, 1)[0]]
    x = m.g.add_input("x", x_shape, T.INT8, quantization=in_q)
    # FULLY_CONNECTED: small weights and an output scale about 24x the accumulator's, so the
    # rescale shifts right by 4 or 5 bits only: where the fixed-point multiply's two roundings
    # differ from one rounding in double on a few percent of the values, not ~0.1%
    w_limit = 6 if op == B.FULLY_CONNECTED else 128
    w = m.g.add_constant("w", rng.integers(-w_limit + 1, w_limit, w_shape).astype(np.int8),
                         quantization=quantization(scales, 0, axis if len(scales) > 1 else 0))
    bias_scales = [float(np.float32(0.0237) * np.float32(s)) for s in scales]
    b = m.g.add_constant("b", rng.integers(-3000, 3000, channels).astype(np.int32),
                         quantization=quantization(bias_scales if len(scales) > 1 else bias_scales[0], 0))
    # the accumulator's spread is about sqrt(depth) * 64 * 64 steps: map 3 of its sigmas on int8
    out_scale = float(np.float32(3 * np.sqrt(depth) * 64 * 64 * 0.0237 * max(scales) / 127))
    if op == B.FULLY_CONNECTED:
        out_scale = float(np.float32(23.7 * 0.0237 * scales[0]))
    y = m.g.add_tensor("y", y_shape, T.INT8, quantization=quantization(out_scale, 2))
    inputs = [x, w] if fields.pop("no_bias", False) else [x, w, b]
    if op == B.FULLY_CONNECTED:
        m.op(op, inputs, [y], **fields)
    elif op == B.CONV_2D:
        m.op(op, inputs, [y], padding=Padding.SAME, stride_w=1, stride_h=1, **fields)
    else:
        m.op(op, inputs, [y], padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1, **fields)
    return m.build(y)


def _uint8_weights_conv(op: int) -> bytes:
    """uint8 CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED v1 (TFLite's first quantized
    form: uint8 activations and filter, per-tensor scales, zero points 128)."""
    m = _Graph()
    x_shape, w_shape, y_shape = {
        B.CONV_2D: ((1, 5, 5, 2), (2, 3, 3, 2), (1, 5, 5, 2)),
        B.DEPTHWISE_CONV_2D: ((1, 5, 5, 2), (1, 3, 3, 2), (1, 5, 5, 2)),
        B.FULLY_CONNECTED: ((2, 4), (3, 4), (2, 3)),
    }[op]
    channels = w_shape[3] if op == B.DEPTHWISE_CONV_2D else w_shape[0]
    x = m.input("x", x_shape, U8Q)
    w = m.g.add_constant("w", m.rng.integers(28, 228, w_shape).astype(np.uint8), quantization=quantization(0.02, 128))
    b = m.g.add_constant("b", m.rng.integers(-1000, 1000, channels).astype(np.int32),
                         quantization=quantization(0.05 * 0.02, 0))
    y = m.g.add_tensor("y", list(y_shape), T.UINT8, quantization=quantization(0.5, 120))
    if op == B.FULLY_CONNECTED:
        m.op(op, [x, w, b], [y])
    elif op == B.CONV_2D:
        m.op(op, [x, w, b], [y], padding=Padding.SAME, stride_w=1, stride_h=1)
    else:
        m.op(op, [x, w, b], [y], padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1)
    return m.build(y)


def _typed_table() -> Iterator[tuple[int, int, str, str, Callable[[], bytes]]]:
    """(op, version, dtype, description, build) of the typed recipes (``TYPED_RECIPES``)."""
    exact = "bit-exact: realistic per-channel scales, "
    yield B.CONV_2D, 3, "int8", exact + "8x8x8 -> 8 channels, 3x3", lambda: _bitexact(B.CONV_2D)
    yield B.CONV_2D, 6, "int8", "int8 quantized, grouped (2 groups)", lambda: _conv_grouped_int8()
    yield B.DEPTHWISE_CONV_2D, 3, "int8", exact + "8x8x8, 3x3", lambda: _bitexact(B.DEPTHWISE_CONV_2D)
    yield B.FULLY_CONNECTED, 4, "int8", exact + "8x64 by 32x64", lambda: _bitexact(B.FULLY_CONNECTED)
    yield B.FULLY_CONNECTED, 5, "int8", "int8, keep_num_dims", lambda: _bitexact(B.FULLY_CONNECTED, keep_num_dims=True)
    yield B.FULLY_CONNECTED, 6, "int8", "int8, two inputs (no bias slot)", lambda: _bitexact(B.FULLY_CONNECTED, no_bias=True)
    yield B.ADD, 2, "int8", exact + "1x8x8x8, scales 0.0237 and 0.0391", lambda: _bitexact(B.ADD)
    yield B.MUL, 2, "int8", exact + "1x8x8x8", lambda: _bitexact(B.MUL)
    for op in (B.CONV_2D, B.DEPTHWISE_CONV_2D, B.FULLY_CONNECTED):
        yield op, 1, "uint8", "uint8 quantized activations and weights", lambda op=op: _uint8_weights_conv(op)
    for op in (B.ADD, B.SUB, B.MUL):
        yield op, 1, "uint8", "uint8 quantized", lambda op=op: _binary(op, U8Q)
    pot = _T("int16 quantized", T.INT16, quantization(1 / 512, 0), quantization(1 / 512, 0))
    finer = dataclasses.replace(pot, q=quantization(1 / 1024, 0))
    for op in (B.ADD, B.SUB):
        yield op, 1, "int16", "int16 quantized, power-of-two scales (pot_scale_int16)", lambda op=op: _binary(op, pot, second=finer)
    for op in (B.MAX_POOL_2D, B.AVERAGE_POOL_2D):
        yield op, 1, "uint8", "uint8 quantized, 2x2 window, stride 2", lambda op=op: _pool(op, U8Q.same())
    for name, t in (("int8", I8Q.same()), ("uint8", U8Q.same()), ("int16", I16Q.same())):
        yield B.RESHAPE, 1, name, f"{name} quantized", lambda t=t: _with_const(B.RESHAPE, t, S2, [3, 2], (3, 2), new_shape=(3, 2))
        yield B.SQUEEZE, 1, name, f"{name} quantized", lambda t=t: _shape_changing(B.SQUEEZE, t, (1, 2, 1, 3), S2, squeeze_dims=(0, 2))
        yield B.EXPAND_DIMS, 1, name, f"{name} quantized", lambda t=t: _with_const(B.EXPAND_DIMS, t, S2, 0, (1, 2, 3))
    yield B.CONCATENATION, 1, "uint8", "uint8 quantized", lambda: _concatenation(U8Q.same())
    yield B.LOGISTIC, 1, "uint8", "uint8 quantized", lambda: _unary(B.LOGISTIC, U8Q.with_out(1 / 256, 0))
    yield B.SOFTMAX, 1, "uint8", "uint8 quantized", lambda: _unary(B.SOFTMAX, U8Q.with_out(1 / 256, 0), beta=1.0)


def _quantized_variants() -> Iterator[tuple[int, int, str, str, Callable[[], bytes]]]:
    """The quantized (and int16) forms of ops whose default recipe at that version is of
    another type: uint8 at version 1, where TFLite's first quantized kernels live, and the
    types the rules give no version of their own (int8 RELU_N1_TO_1 is v1). Each one is
    checked by the tests: its rule version, its type, and that the CPU runs it."""
    types = {"uint8": U8Q, "int8": I8Q, "int16": I16Q}
    same = {name: t.same() for name, t in types.items()}
    unary = {B.RELU: ("uint8",), B.RELU6: ("uint8",), B.RELU_N1_TO_1: ("uint8", "int8"), B.LEAKY_RELU: ("uint8", "int8"),
             B.HARD_SWISH: ("uint8", "int8"), B.TANH: ("uint8",), B.ELU: ("int8",)}
    for op, names in unary.items():
        for name in names:
            options = {"alpha": 0.2} if op == B.LEAKY_RELU else {}
            yield op, name, f"{name} quantized", lambda op=op, t=types[name], o=options: _unary(op, t, **o)
    yield B.DIV, "uint8", "uint8 quantized", lambda: _binary(B.DIV, U8Q, const_second=True)
    for op in (B.MAXIMUM, B.MINIMUM):
        yield op, "uint8", "uint8 quantized", lambda op=op: _binary(op, same["uint8"])
    comparisons = {B.EQUAL: ("uint8",), B.NOT_EQUAL: ("uint8",), B.LESS: ("uint8",), B.LESS_EQUAL: ("uint8", "int16"),
                   B.GREATER: ("uint8", "int16"), B.GREATER_EQUAL: ("uint8",)}
    for op, names in comparisons.items():
        for name in names:
            yield op, name, f"{name} quantized -> bool", lambda op=op, t=types[name]: _compare(op, t)
    reductions = {B.MEAN: ("uint8",), B.REDUCE_MAX: ("uint8",), B.REDUCE_MIN: ("uint8",), B.SUM: ("uint8", "int16")}
    for op, names in reductions.items():
        for name in names:
            t = same[name] if op in (B.REDUCE_MAX, B.REDUCE_MIN) else types[name]
            yield op, name, f"{name} quantized, axes 1 and 2, keep_dims", lambda op=op, t=t: _reduce(op, t)
    for op in (B.ARG_MAX, B.ARG_MIN):
        yield op, "uint8", "uint8 quantized -> int32", lambda op=op: _arg(op, U8Q)
    movement = {
        B.PACK: (_pack, ("uint8",)), B.UNPACK: (_unpack, ("uint8",)), B.SPLIT: (_split, ("uint8",)),
        B.SPLIT_V: (_split_v, ("uint8", "int16")), B.GATHER: (_gather, ("uint8",)), B.SLICE: (_slice, ("uint8",)),
        B.STRIDED_SLICE: (_strided_slice, ("uint8", "int16")), B.PAD: (lambda t: _pad(B.PAD, t), ("uint8",)),
        B.PADV2: (lambda t: _pad(B.PADV2, t), ("uint8",)),
        B.SPACE_TO_DEPTH: (lambda t: _space_depth(B.SPACE_TO_DEPTH, t), ("uint8",)),
        B.DEPTH_TO_SPACE: (lambda t: _space_depth(B.DEPTH_TO_SPACE, t), ("uint8",)),
        B.RESIZE_BILINEAR: (lambda t: _resize(B.RESIZE_BILINEAR, t), ("uint8",)),
        B.RESIZE_NEAREST_NEIGHBOR: (lambda t: _resize(B.RESIZE_NEAREST_NEIGHBOR, t), ("uint8",)),
        B.SPACE_TO_BATCH_ND: (lambda t: _space_batch(B.SPACE_TO_BATCH_ND, t), ("uint8",)),
        B.BATCH_TO_SPACE_ND: (lambda t: _space_batch(B.BATCH_TO_SPACE_ND, t), ("uint8",)),
        B.TRANSPOSE: (lambda t: _with_const(B.TRANSPOSE, t, S2, [1, 0], (3, 2)), ("uint8",)),
        B.TILE: (lambda t: _with_const(B.TILE, t, S2, [2, 1], (4, 3)), ("uint8", "int16")),
        B.REVERSE_V2: (lambda t: _with_const(B.REVERSE_V2, t, S2, [1], S2), ("uint8", "int16")),
        B.BROADCAST_TO: (lambda t: _with_const(B.BROADCAST_TO, t, (1, 3), [2, 3], S2), ("uint8", "int16")),
        B.MIRROR_PAD: (lambda t: _pad(B.MIRROR_PAD, t, mode=MirrorPadMode.REFLECT), ("uint8",)),
        B.GATHER_ND: (_gather_nd, ("uint8", "int8")),
    }
    for op, (build, names) in movement.items():
        for name in names:
            yield op, name, f"{name} quantized", lambda build=build, t=same[name]: build(t)


#: The versions of ``_quantized_variants`` other than 1.
_VARIANT_VERSIONS = {(B.RELU, "uint8"): 2, (B.UNPACK, "uint8"): 2, (B.BROADCAST_TO, "uint8"): 2,
                     (B.BROADCAST_TO, "int16"): 3}


def _conv_grouped_int8() -> bytes:
    t = I8Q
    m = _Graph()
    x = m.input("x", (1, 5, 5, 4), t)
    w, b = _weights(m, (4, 3, 3, 2), "int8", 0, t.q.scale[0])
    y = m.tensor("y", (1, 5, 5, 4), t)
    m.op(B.CONV_2D, [x, w, b], [y], padding=Padding.SAME, stride_w=1, stride_h=1)
    return m.build(y)


def _install() -> None:
    for op, version, family, description, build, subject in (*_table(), *_dry_run_table()):
        VERSION_RECIPES[(int(op), version)] = Recipe(int(op), version, build, description, family, subject)
    for op, version, family, description, build in _hand_stamped_table():
        why = UNBUILDABLE_VERSIONS[(op, version)]
        VERSION_RECIPES[(int(op), version)] = Recipe(int(op), version, build, description, family, 0, why)
    for op, version, dtype, description, build in _typed_table():
        TYPED_RECIPES[(int(op), version, dtype)] = Recipe(int(op), version, build, description, "typed", 0, "", dtype)
    for op, dtype, description, build in _quantized_variants():
        version = _VARIANT_VERSIONS.get((op, dtype), 1)  # what the rules give (checked by the tests)
        TYPED_RECIPES.setdefault((int(op), version, dtype), Recipe(int(op), version, build, description, "typed", 0, "", dtype))


_install()
