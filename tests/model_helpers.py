"""Small helpers the tests share: ``single_op_model``, the one builder of one-node models
(with ``In``, ``Const``, ``Out``), the stamped version of a one-node model, random inputs
over a quantized type's full range, and small models (concatenation, resource variables,
IF / WHILE) that the control-flow tests and the fuzzer's generated seeds both use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as Op
from schema.model import Model, Quantization
from schema.params import AddParams, ConcatenationParams, IfParams, WhileParams


@dataclass(frozen=True)
class In:
    """A graph input of a one-node model: ``shape``, ``dtype`` (numpy or ``TensorType``),
    quantization ``q``."""

    shape: Sequence[int]
    dtype: Any = np.float32
    q: Quantization | None = None


@dataclass(frozen=True)
class Const:
    """A constant input holding ``value`` (its dtype is the tensor's), quantization ``q``."""

    value: Any
    q: Quantization | None = None


@dataclass(frozen=True)
class Out:
    """An output of a one-node model. ``shape=None``: the shape our CPU kernel's prepare
    gives (a first build with a placeholder shape finds it); a -1 in ``shape`` makes that
    dimension unknown (stored as 1, -1 in the ``shape_signature``)."""

    shape: Sequence[int] | None = None
    dtype: Any = np.float32
    q: Quantization | None = None


def single_op_model(op, inputs, outputs, params=None, *, version=None, custom_options: bytes | None = None,
                    resolver=None) -> bytes:
    """The tests' one builder of one-node models: ``main(graph inputs) = op(inputs)``.

    ``inputs``: per input position an ``In`` (a graph input), a ``Const`` or a numpy array (a
    constant), or None (an absent optional input, index -1). ``outputs``: an ``Out`` or a
    list of them. ``op`` is a ``BuiltinOperator``, or a string for a custom op (with
    ``custom_options``). The builder stamps the version TFLite's rules give, unless
    ``version`` is given. Outputs without a shape take the shapes our CPU kernel's prepare
    gives a draft of the model (stamped by the rules, run with ``resolver`` if given).

    (``delegate_sdk.testing.single_op_model(op, version)`` is another thing: the delegate
    kit's recipe model of an (op, version).)
    """
    outputs = [outputs] if isinstance(outputs, Out) else list(outputs)
    if any(o.shape is None for o in outputs):
        from interpreter import Interpreter

        draft = _one_node(op, inputs, [o if o.shape is not None else Out([1], o.dtype, o.q) for o in outputs],
                          params, None, custom_options)
        interpreter = Interpreter(model_content=draft, op_resolver=resolver)
        interpreter.allocate_tensors()
        found = [list(interpreter.get_tensor(d["index"]).shape) for d in interpreter.get_output_details()]
        outputs = [o if o.shape is not None else Out(shape, o.dtype, o.q) for o, shape in zip(outputs, found)]
    return _one_node(op, inputs, outputs, params, version, custom_options)


def _one_node(op, inputs, outputs, params, version, custom_options) -> bytes:
    builder = ModelBuilder()
    graph = builder.subgraph()
    indices = []
    for k, spec in enumerate(inputs):
        if spec is None:
            indices.append(-1)
        elif isinstance(spec, In):
            indices.append(graph.add_input(f"x{k}", list(spec.shape), spec.dtype, quantization=spec.q))
        else:
            spec = spec if isinstance(spec, Const) else Const(spec)
            indices.append(graph.add_constant(f"c{k}", spec.value, quantization=spec.q))
    outs = [
        graph.add_tensor(f"y{k}", [1 if d == -1 else d for d in o.shape], o.dtype, quantization=o.q,
                         shape_signature=list(o.shape) if -1 in o.shape else None)
        for k, o in enumerate(outputs)
    ]
    graph.add_operator(op, indices, outs, params, version=version, custom_options=custom_options)
    for tensor in outs:
        graph.add_output(tensor)
    builder.add_signature("serving_default", graph)
    return builder.build()


def stamped_version(model: bytes) -> int:
    """The version the builder stamped on the first node of the main subgraph."""
    return Model.from_bytes(model).subgraphs[0].operators[0].version


def random_quantized_input(kind: str, shape, seed: int = 1) -> np.ndarray:
    """Values over the type's full range for ``kind`` uint8/int8/int16, or float32 in
    [-2, 2] for ``hybrid`` (float input, quantized weights)."""
    rng = np.random.default_rng(seed)
    if kind == "hybrid":
        return rng.uniform(-2, 2, shape).astype(np.float32)
    dtype = {"uint8": np.uint8, "int8": np.int8, "int16": np.int16}[kind]
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)


def concatenation_model(count: int, shape=(1, 3, 3, 2)) -> bytes:
    """CONCATENATION of ``count`` float32 model inputs of ``shape`` along the last axis.
    More than 8 is what makes CuPy's own concatenate upload a table of addresses from
    host memory, which a CUDA graph cannot hold (the GPU delegate must not use it)."""
    from schema.builder import ModelBuilder
    from schema.enums import BuiltinOperator
    from schema.params import ConcatenationParams

    builder = ModelBuilder()
    graph = builder.subgraph()
    inputs = [graph.add_input(f"x{i}", list(shape)) for i in range(count)]
    out = graph.add_tensor("out", [*shape[:-1], shape[-1] * count])
    graph.add_operator(BuiltinOperator.CONCATENATION, inputs, [out], ConcatenationParams(axis=len(shape) - 1))
    graph.add_output(out)
    return builder.build()


#: The value the CALL_ONCE initialisation of ``read_then_assign_model`` assigns.
INIT_VALUE = np.array([10.0, 20.0], np.float32)


def init_subgraph(builder, shared_name: str = "v", value=INIT_VALUE):
    """A subgraph with no inputs/outputs that assigns ``value`` to variable ``shared_name``."""
    from schema.enums import BuiltinOperator as Op
    from schema.enums import TensorType
    from schema.params import VarHandleParams

    graph = builder.subgraph("init")
    handle = graph.add_tensor("handle", [], TensorType.RESOURCE)
    constant = graph.add_constant("init_value", value)
    graph.add_operator(Op.VAR_HANDLE, [], [handle], VarHandleParams(shared_name=shared_name))
    graph.add_operator(Op.ASSIGN_VARIABLE, [handle, constant], [])
    return graph


def read_then_assign_model(shape=(2,), call_once: bool = True) -> bytes:
    """main(x): CALL_ONCE(init: v = [10, 20]); y = read(v); v = x; return y."""
    from schema.builder import ModelBuilder
    from schema.enums import BuiltinOperator as Op
    from schema.enums import TensorType
    from schema.params import CallOnceParams, VarHandleParams

    builder = ModelBuilder()
    main = builder.subgraph()
    x = main.add_input("x", list(shape))
    handle = main.add_tensor("handle", [], TensorType.RESOURCE)
    y = main.add_tensor("y", list(shape))
    if call_once:
        main.add_operator(Op.CALL_ONCE, [], [], CallOnceParams(init_subgraph_index=1))
    main.add_operator(Op.VAR_HANDLE, [], [handle], VarHandleParams(shared_name="v"))
    main.add_operator(Op.READ_VARIABLE, [handle], [y])
    main.add_operator(Op.ASSIGN_VARIABLE, [handle, x], [])
    main.add_output(y)
    if call_once:
        init_subgraph(builder)
    builder.add_signature("serving_default", main)
    return builder.build()


# -- control-flow models (tests/cpu/test_control_flow.py and the fuzzer's generated seeds) ------------

def unary_subgraph(builder: ModelBuilder, op, shape, dtype=np.float32):
    graph = builder.subgraph(op.name.lower())
    x = graph.add_input("x", shape, dtype)
    y = graph.add_tensor("y", shape, dtype)
    graph.add_operator(op, [x], [y])
    graph.add_output(y)
    return graph


def reshape_subgraph(builder: ModelBuilder, shape, new_shape):
    graph = builder.subgraph("reshape")
    x = graph.add_input("x", shape)
    target = graph.add_constant("new_shape", np.array(new_shape, np.int32))
    y = graph.add_tensor("y", new_shape)
    graph.add_operator(Op.RESHAPE, [x, target], [y])
    graph.add_output(y)
    return graph


def if_model(make_then, make_else, shape=(2, 3), out_shape=None) -> bytes:
    builder = ModelBuilder()
    main = builder.subgraph()
    cond = main.add_input("cond", [], np.bool_)
    x = main.add_input("x", list(shape))
    y = main.add_tensor("y", list(out_shape or shape))
    then_graph, else_graph = make_then(builder), make_else(builder)
    main.add_operator(Op.IF, [cond, x], [y], IfParams(then_graph.index, else_graph.index))
    main.add_output(y)
    builder.add_signature("serving_default", main)
    return builder.build()


def counting_loop_model(acc_shape=(3,), grow: bool = False) -> bytes:
    """main(n, x): i, acc = 0, x; while i < n: i += 1; acc = acc + x (or concat(acc, x)); return i, acc."""
    builder = ModelBuilder()
    main = builder.subgraph()
    n = main.add_input("n", [], np.int32)
    x = main.add_input("x", list(acc_shape))
    zero = main.add_constant("zero", np.array(0, np.int32))
    outs = [main.add_tensor(name, shape, dtype) for name, shape, dtype in (
        ("i_out", [], np.int32), ("n_out", [], np.int32), ("acc_out", list(acc_shape), np.float32), ("x_out", list(acc_shape), np.float32)
    )]
    main.add_operator(Op.WHILE, [zero, n, x, x], outs, WhileParams(cond_subgraph_index=1, body_subgraph_index=2))
    main.add_output(outs[0])
    main.add_output(outs[2])
    builder.add_signature("serving_default", main)

    cond = builder.subgraph("cond")
    i, limit = cond.add_input("i", [], np.int32), cond.add_input("n", [], np.int32)
    cond.add_input("acc", list(acc_shape))
    cond.add_input("x", list(acc_shape))
    going = cond.add_tensor("going", [], np.bool_)
    cond.add_operator(Op.LESS, [i, limit], [going])
    cond.add_output(going)

    body = builder.subgraph("body")
    i, limit = body.add_input("i", [], np.int32), body.add_input("n", [], np.int32)
    acc, step = body.add_input("acc", list(acc_shape)), body.add_input("x", list(acc_shape))
    one = body.add_constant("one", np.array(1, np.int32))
    next_i = body.add_tensor("next_i", [], np.int32)
    body.add_operator(Op.ADD, [i, one], [next_i], AddParams())
    if grow:
        next_acc = body.add_tensor("next_acc", [2 * acc_shape[0], *acc_shape[1:]])
        body.add_operator(Op.CONCATENATION, [acc, step], [next_acc], ConcatenationParams(axis=0))
    else:
        next_acc = body.add_tensor("next_acc", list(acc_shape))
        body.add_operator(Op.ADD, [acc, step], [next_acc], AddParams())
    for tensor in (next_i, limit, next_acc, step):
        body.add_output(tensor)
    return builder.build()


def while_with_if_model() -> bytes:
    """main(n, flag, x): while i < n: i += 1; x = (relu if flag else relu_n1_to_1)(x - 1)."""
    builder = ModelBuilder()
    main = builder.subgraph()
    n = main.add_input("n", [], np.int32)
    flag = main.add_input("flag", [], np.bool_)
    x = main.add_input("x", [4])
    zero = main.add_constant("zero", np.array(0, np.int32))
    outs = [
        main.add_tensor("i_out", [], np.int32),
        main.add_tensor("n_out", [], np.int32),
        main.add_tensor("flag_out", [], np.bool_),
        main.add_tensor("x_out", [4]),
    ]
    main.add_operator(Op.WHILE, [zero, n, flag, x], outs, WhileParams(1, 2))
    main.add_output(outs[3])
    cond = builder.subgraph("cond")
    i, limit = cond.add_input("i", [], np.int32), cond.add_input("n", [], np.int32)
    cond.add_input("flag", [], np.bool_)
    cond.add_input("x", [4])
    going = cond.add_tensor("going", [], np.bool_)
    cond.add_operator(Op.LESS, [i, limit], [going])
    cond.add_output(going)
    body = builder.subgraph("body")
    i, limit = body.add_input("i", [], np.int32), body.add_input("n", [], np.int32)
    b_flag, b_x = body.add_input("flag", [], np.bool_), body.add_input("x", [4])
    one = body.add_constant("one", np.array(1, np.int32))
    next_i = body.add_tensor("next_i", [], np.int32)
    body.add_operator(Op.ADD, [i, one], [next_i], AddParams())
    shifted = body.add_tensor("shifted", [4])
    minus_one = body.add_constant("minus_one", np.full([4], -1.0, np.float32))
    body.add_operator(Op.ADD, [b_x, minus_one], [shifted], AddParams())
    next_x = body.add_tensor("next_x", [4])
    body.add_operator(Op.IF, [b_flag, shifted], [next_x], IfParams(3, 4))
    for tensor in (next_i, limit, b_flag, next_x):
        body.add_output(tensor)
    unary_subgraph(builder, Op.RELU, [4])
    unary_subgraph(builder, Op.RELU_N1_TO_1, [4])
    return builder.build()


def call_once_empty_model() -> bytes:
    """main(x) = relu(x), after a CALL_ONCE of a subgraph with no nodes."""
    from schema.params import CallOnceParams

    builder = ModelBuilder()
    main = builder.subgraph()
    x = main.add_input("x", [2])
    y = main.add_tensor("y", [2])
    main.add_operator(Op.CALL_ONCE, [], [], CallOnceParams(init_subgraph_index=1))
    main.add_operator(Op.RELU, [x], [y])
    main.add_output(y)
    builder.subgraph("init")
    return builder.build()
