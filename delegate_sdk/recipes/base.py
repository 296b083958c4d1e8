"""The shared machinery of the recipes: the ``Recipe`` type and the tables that hold them,
looking recipes up and checking their models, and the small model-building blocks
(tensor kinds, ``Graph``) that every family module uses.

Family modules (``elementwise``, ``convolution``...) build their models with ``Graph`` and
the ``Kind`` constants (``F32``, ``I8Q``...); ``delegate_sdk.recipes`` installs what they
yield into ``VERSION_RECIPES`` and ``TYPED_RECIPES``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from schema.builder import ModelBuilder, quantization
from schema.enums import BuiltinOperator, TensorType, builtin_operator_name, numpy_dtype, value_dtype
from schema.model import Model, Quantization
from schema.packed import VALUE_RANGE_OF_PACKED_TYPE
from schema.versioning.op_signature import op_signature_from_tensors
from schema.versioning.op_version import get_builtin_operator_version

B = BuiltinOperator
T = TensorType


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
#: for those that say so. Each family module declares its own (``UNBUILDABLE``).
UNBUILDABLE_VERSIONS: dict[tuple[int, int], str] = {}


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


# -- model-building blocks ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """A tensor type for recipes: the TensorType, and quantization of inputs and outputs."""

    name: str
    type: int
    q: Quantization | None = None
    q_out: Quantization | None = None

    @property
    def out(self) -> Quantization | None:
        return self.q_out if self.q_out is not None else self.q

    def same(self) -> "Kind":
        """The same type with the outputs quantized as the inputs (data movement ops)."""
        return dataclasses.replace(self, q_out=self.q)

    def with_out(self, scale: float, zero_point: int) -> "Kind":
        return dataclasses.replace(self, q_out=quantization(scale, zero_point))


F32 = Kind("float32", T.FLOAT32)
F16 = Kind("float16", T.FLOAT16)
I32 = Kind("int32", T.INT32)
I64 = Kind("int64", T.INT64)
U32 = Kind("uint32", T.UINT32)
U16 = Kind("uint16", T.UINT16)
I16 = Kind("int16", T.INT16)
I8 = Kind("int8", T.INT8)
BOOL = Kind("bool", T.BOOL)
STR = Kind("string", T.STRING)
C64 = Kind("complex64", T.COMPLEX64)
# Sub-byte types (one value an element here; LiteRT's set_tensor takes only values in range,
# so recipes hold them as constants) and bfloat16 (which LiteRT's Python API cannot feed).
I4 = Kind("int4", T.INT4)
I2 = Kind("int2", T.INT2)
U4 = Kind("uint4", T.UINT4)
BF16 = Kind("bfloat16", T.BFLOAT16)
I8Q = Kind("int8 quantized", T.INT8, quantization(0.05, 2), quantization(0.1, -3))
U8Q = Kind("uint8 quantized", T.UINT8, quantization(0.05, 128), quantization(0.1, 120))
I16Q = Kind("int16 quantized", T.INT16, quantization(1 / 1024, 0), quantization(1 / 512, 0))


def values(rng: np.random.Generator, shape: Sequence[int], t: Kind) -> np.ndarray:
    """Constant values of type ``t`` (small, so every kernel accepts them)."""
    shape = tuple(shape)
    if t.type == T.STRING:
        return np.array([b"ab", b"cd", b"ef"] * (int(np.prod(shape)) // 3 + 1), dtype=object)[: int(np.prod(shape))].reshape(shape)
    if t.type in VALUE_RANGE_OF_PACKED_TYPE:  # int4, int2, uint4: one value an element
        low, high = VALUE_RANGE_OF_PACKED_TYPE[t.type]
        return rng.integers(low, high, shape, endpoint=True).astype(value_dtype(t.type))
    dtype = numpy_dtype(t.type)
    if dtype.kind == "f" or t.type == T.BFLOAT16:
        return rng.uniform(-1, 1, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    low = 0 if dtype.kind == "u" else -100
    return rng.integers(low, 100, shape).astype(dtype)


class Graph:
    """A ModelBuilder with one main subgraph and short names for what recipes need."""

    def __init__(self) -> None:
        self.builder = ModelBuilder(description="litedelegate version recipe")
        self.g = self.builder.subgraph()
        self.rng = np.random.default_rng(0)

    def input(self, name: str, shape: Sequence[int], t: Kind = F32) -> int:
        return self.g.add_input(name, list(shape), t.type, quantization=t.q)

    def tensor(self, name: str, shape: Sequence[int], t: Kind = F32, out: bool = True) -> int:
        return self.g.add_tensor(name, list(shape), t.type, quantization=t.out if out else t.q)

    def const(self, name: str, value, t: Kind | None = None, q: Quantization | None = None) -> int:
        if t is not None and not isinstance(value, np.ndarray):
            value = values(self.rng, value, t)
        value = np.asarray(value)
        dtype = t.type if t is not None else None
        return self.g.add_constant(name, value, dtype=dtype, quantization=q if q is not None else (t.q if t else None))

    def i32(self, name: str, numbers) -> int:
        return self.g.add_constant(name, np.asarray(numbers, np.int32))

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
    from schema.option_parsers import params_class_of_op

    params_class = params_class_of_op(int(op))
    if params_class is None:
        raise ValueError(f"{_op_name(op)} has no params")
    return params_class()


S4 = (1, 3, 3, 2)  # a small NHWC tensor
S2 = (2, 3)


def nonzero(rng: np.random.Generator, shape: Sequence[int], t: Kind) -> np.ndarray:
    """Values without zeros (divisors)."""
    found = values(rng, shape, t)
    if found.dtype.kind in "iu":
        found = np.where(found == 0, 1, found).astype(found.dtype)
    return found


def with_constant(op: int, t: Kind, shape, const, out_shape, const_dtype=np.int32, **fields) -> bytes:
    """``op(x, constant)``: TILE, REVERSE_V2, EXPAND_DIMS, BROADCAST_TO, RESHAPE, CUMSUM..."""
    m = Graph()
    x = m.input("x", shape, t)
    c = m.g.add_constant("c", np.asarray(const, const_dtype))
    y = m.tensor("y", out_shape, t)
    m.op(op, [x, c], [y], **fields)
    return m.build(y)


def one_input(op: int, t: Kind, shape, out_shape, out: Kind | None = None, **fields) -> bytes:
    """``op(x)`` with an output of another shape (or type): SQUEEZE, CAST, SHAPE..."""
    m = Graph()
    x = m.input("x", shape, t)
    y = m.tensor("y", out_shape, out or t)
    m.op(op, [x], [y], **fields)
    return m.build(y)


def repack(model) -> bytes:
    """The bytes of ``model``, a ``schema_generated.ModelT`` edited by hand."""
    import flatbuffers

    from schema.model import FILE_IDENTIFIER

    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=FILE_IDENTIFIER)
    return bytes(builder.Output())


def litert_only(op: str, version: int, adds: str, recipe: str) -> str:
    """Why a version LiteRT 2.3 registers beyond TFLite's rules has a recipe stamped by hand
    (an ``UNBUILDABLE`` entry)."""
    return (f"LiteRT 2.3 registers {op} v{version}, which no rule here gives (TFLite's tables predate it); its kernel "
            f"{adds}, and so does the CPU's (the recipe is {recipe}, stamped v{version} by hand)")


def hand_stamped(build: Callable[[], bytes], version: int) -> Callable[[], bytes]:
    """``build`` with node 0 re-stamped ``version`` (for the recipes of ``UNBUILDABLE_VERSIONS``)."""

    def stamped() -> bytes:
        from schema import schema_generated as fb

        model = fb.ModelT.InitFromPackedBuf(build(), 0)
        code = model.subgraphs[0].operators[0].opcodeIndex
        model.operatorCodes[code].version = version
        return repack(model)

    return stamped
