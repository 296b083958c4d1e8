"""STABLEHLO_CASE and STABLEHLO_COMPOSITE (v1) against ai-edge-litert: the branch an index
picks (an index out of range: the last), branches of different output shapes (a dynamic
output), a branch returning its input, a composite's decomposition (nested too), and the
errors. CASE against LiteRT's default kernels (its reference resolver lacks CASE),
COMPOSITE against BUILTIN_REF."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import stamped_version
from oracle import assert_invokes_match_litert, assert_matches_litert

from delegate_sdk.context import KernelError
from delegate_sdk.tensor import Allocation
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import BuiltinOperator as B
from schema.params import StableHLOCompositeParams, StablehloCaseParams


def binary_subgraph(builder: ModelBuilder, op, shape=(2, 3), name="branch"):
    graph = builder.subgraph(name)
    x, y = graph.add_input("x", list(shape)), graph.add_input("y", list(shape))
    z = graph.add_tensor("z", list(shape))
    graph.add_operator(op, [x, y], [z])
    graph.add_output(z)
    return graph


def reshaping_subgraph(builder: ModelBuilder, shape=(2, 3)):
    """(x, y) -> reshape(x + y, [6]): another output shape."""
    graph = builder.subgraph("reshaping")
    x, y = graph.add_input("x", list(shape)), graph.add_input("y", list(shape))
    total = graph.add_tensor("total", list(shape))
    graph.add_operator(B.ADD, [x, y], [total])
    new_shape = graph.add_constant("new_shape", np.array([6], np.int32))
    flat = graph.add_tensor("flat", [6])
    graph.add_operator(B.RESHAPE, [total, new_shape], [flat])
    graph.add_output(flat)
    return graph


def passthrough_subgraph(builder: ModelBuilder, shape=(2, 3)):
    """(x, y) -> y, unchanged."""
    graph = builder.subgraph("passthrough")
    graph.add_input("x", list(shape))
    y = graph.add_input("y", list(shape))
    graph.add_output(y)
    return graph


def case_model(make_branches, out_shape=(2, 3)) -> bytes:
    builder = ModelBuilder()
    main = builder.subgraph()
    index = main.add_input("index", [], np.int32)
    x, y = main.add_input("x", [2, 3]), main.add_input("y", [2, 3])
    out = main.add_tensor("out", list(out_shape))
    branches = [make(builder).index for make in make_branches]
    main.add_operator(B.STABLEHLO_CASE, [index, x, y], [out], StablehloCaseParams(branch_subgraph_indices=tuple(branches)))
    main.add_output(out)
    builder.add_signature("serving_default", main)
    return builder.build()


THREE_BRANCHES = [lambda b: binary_subgraph(b, B.ADD), lambda b: binary_subgraph(b, B.MUL),
                  lambda b: binary_subgraph(b, B.SUB)]
RNG = np.random.default_rng(0)
X, Y = RNG.uniform(-2, 2, (2, 2, 3)).astype(np.float32)


def matches_litert_default_kernels(model, index):
    (outputs,) = assert_invokes_match_litert(model, [[np.array(index, np.int32), X, Y]],
                                             resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    return outputs


@pytest.mark.parametrize("index", [0, 1, 2])
def test_case_runs_the_branch_its_index_picks_as_litert(index):
    model = case_model(THREE_BRANCHES)
    assert stamped_version(model) == 1
    (out,) = matches_litert_default_kernels(model, index)
    np.testing.assert_allclose(out, [X + Y, X * Y, X - Y][index], rtol=1e-6)


@pytest.mark.parametrize("index", [-1, 3, 1000])
def test_case_with_an_index_out_of_range_runs_the_last_branch_as_litert(index):
    (out,) = matches_litert_default_kernels(case_model(THREE_BRANCHES), index)
    np.testing.assert_allclose(out, X - Y, rtol=1e-6)


def test_case_with_branches_of_different_shapes_has_a_dynamic_output_matching_litert():
    model = case_model([lambda b: binary_subgraph(b, B.ADD), reshaping_subgraph])
    for index, shape in ((0, (2, 3)), (1, (6,))):
        (out,) = matches_litert_default_kernels(model, index)
        assert out.shape == shape
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    assert interpreter._tensor(interpreter.get_output_details()[0]["index"]).allocation is Allocation.DYNAMIC


def test_case_with_same_shaped_branches_has_a_static_output():
    interpreter = Interpreter(model_content=case_model(THREE_BRANCHES))
    interpreter.allocate_tensors()
    assert interpreter._tensor(interpreter.get_output_details()[0]["index"]).allocation is Allocation.ARENA


def test_case_with_a_branch_returning_its_input_matches_litert():
    model = case_model([passthrough_subgraph, lambda b: binary_subgraph(b, B.MAXIMUM)])
    for index in (0, 1):
        matches_litert_default_kernels(model, index)


def test_case_with_a_float_index_is_refused_naming_the_op():
    builder = ModelBuilder()
    main = builder.subgraph()
    index, x = main.add_input("index", [], np.float32), main.add_input("x", [2, 3])
    out = main.add_tensor("out", [2, 3])
    branch = builder.subgraph("branch")
    branch.add_output(branch.add_input("x", [2, 3]))
    main.add_operator(B.STABLEHLO_CASE, [index, x], [out], StablehloCaseParams(branch_subgraph_indices=(1,)))
    main.add_output(out)
    with pytest.raises(KernelError, match=r"node 0 \(STABLEHLO_CASE v1\).*index 'index' has type FLOAT32; this kernel supports INT32"):
        Interpreter(model_content=builder.build()).allocate_tensors()


def test_case_without_branches_is_refused():
    with pytest.raises(KernelError, match=r"STABLEHLO_CASE v1: branch_subgraph_indices is empty"):
        Interpreter(model_content=case_model([])).allocate_tensors()


def test_case_whose_branch_takes_another_number_of_inputs_is_refused():
    def one_input(builder):
        graph = builder.subgraph("one_input")
        graph.add_output(graph.add_input("x", [2, 3]))
        return graph

    with pytest.raises(KernelError, match=r"STABLEHLO_CASE v1: the branch 1 subgraph 2 has 1 inputs and 1 outputs; "
                                          r"this node needs 2 and 1"):
        Interpreter(model_content=case_model([lambda b: binary_subgraph(b, B.ADD), one_input])).allocate_tensors()


# -- composite -------------------------------------------------------------------------------------


def composite_params(subgraph: int, name="odml.scaled_add") -> StableHLOCompositeParams:
    # (LiteRT's parser reads the name and the attributes without checking: both are written.)
    return StableHLOCompositeParams(name=name, decomposition_subgraph_index=subgraph, composite_attributes=(),
                                    version=1)


def composite_model(nested: bool = False) -> bytes:
    """main(x, y) = COMPOSITE(x, y); its decomposition: (x + y) * y, the ADD itself a
    composite when ``nested``."""
    builder = ModelBuilder()
    main = builder.subgraph()
    x, y = main.add_input("x", [2, 3]), main.add_input("y", [2, 3])
    out = main.add_tensor("out", [2, 3])
    main.add_operator(B.STABLEHLO_COMPOSITE, [x, y], [out], composite_params(1))
    main.add_output(out)
    builder.add_signature("serving_default", main)
    decomposition = builder.subgraph("decomposition")
    a, b = decomposition.add_input("a", [2, 3]), decomposition.add_input("b", [2, 3])
    total, product = decomposition.add_tensor("total", [2, 3]), decomposition.add_tensor("product", [2, 3])
    if nested:
        decomposition.add_operator(B.STABLEHLO_COMPOSITE, [a, b], [total], composite_params(2, "odml.add"))
        binary_subgraph(builder, B.ADD, name="inner")
    else:
        decomposition.add_operator(B.ADD, [a, b], [total])
    decomposition.add_operator(B.MUL, [total, b], [product])
    decomposition.add_output(product)
    return builder.build()


@pytest.mark.parametrize("nested", [False, True], ids=["flat", "nested"])
def test_composite_runs_its_decomposition_as_litert(nested):
    model = composite_model(nested)
    assert stamped_version(model) == 1
    (out,) = assert_matches_litert(model, [X, Y])
    np.testing.assert_allclose(out, (X + Y) * Y, rtol=1e-6)


def test_composite_on_consecutive_invokes_matches_litert():
    assert_invokes_match_litert(composite_model(), [[X, Y], [Y, X], [X, X]])


def test_composite_whose_decomposition_subgraph_does_not_exist_is_refused():
    builder = ModelBuilder()
    main = builder.subgraph()
    x = main.add_input("x", [2])
    out = main.add_tensor("out", [2])
    main.add_operator(B.STABLEHLO_COMPOSITE, [x], [out], composite_params(4))
    main.add_output(out)
    with pytest.raises(KernelError, match=r"node 0 \(STABLEHLO_COMPOSITE v1\).*subgraph index 4 out of range"):
        Interpreter(model_content=builder.build()).allocate_tensors()


def test_composite_whose_decomposition_returns_another_type_is_refused():
    builder = ModelBuilder()
    main = builder.subgraph()
    x = main.add_input("x", [2])
    out = main.add_tensor("out", [2])
    main.add_operator(B.STABLEHLO_COMPOSITE, [x], [out], composite_params(1))
    main.add_output(out)
    decomposition = builder.subgraph("decomposition")
    a = decomposition.add_input("a", [2])
    cast = decomposition.add_tensor("cast", [2], np.int32)
    decomposition.add_operator(B.CAST, [a], [cast])
    decomposition.add_output(cast)
    with pytest.raises(KernelError, match=r"STABLEHLO_COMPOSITE v1: output 0 of the decomposition subgraph 1 has type INT32"):
        Interpreter(model_content=builder.build()).allocate_tensors()


def test_subgraphs_that_call_each_other_through_composites_are_refused_not_a_recursion_error():
    # main's composite calls subgraph 1, whose composite calls main (found by the fuzzer).
    builder = ModelBuilder()
    for index in range(2):
        graph = builder.subgraph()
        x = graph.add_input("x", [2])
        out = graph.add_tensor("out", [2])
        graph.add_operator(B.STABLEHLO_COMPOSITE, [x], [out], composite_params(1 - index))
        graph.add_output(out)
    with pytest.raises(KernelError, match=r"STABLEHLO_COMPOSITE v1: the decomposition subgraph 1 is being prepared "
                                          r"already: subgraphs that call each other \(recursion\)"):
        Interpreter(model_content=builder.build()).allocate_tensors()


def test_subgraphs_that_call_each_other_through_if_and_case_are_refused():
    from schema.params import IfParams

    builder = ModelBuilder()
    main = builder.subgraph()
    cond, x = main.add_input("cond", [], np.bool_), main.add_input("x", [2])
    out = main.add_tensor("out", [2])
    main.add_operator(B.IF, [cond, x], [out], IfParams(then_subgraph_index=1, else_subgraph_index=1))
    main.add_output(out)
    branch = builder.subgraph("branch")  # (x) -> CASE(index 0: main's IF again)
    y = branch.add_input("y", [2])
    index = branch.add_constant("index", np.array(0, np.int32))
    always = branch.add_constant("always", np.array(True))
    z = branch.add_tensor("z", [2])
    branch.add_operator(B.STABLEHLO_CASE, [index, always, y], [z], StablehloCaseParams(branch_subgraph_indices=(0,)))
    branch.add_output(z)
    with pytest.raises(KernelError, match=r"subgraphs that call each other \(recursion\)"):
        Interpreter(model_content=builder.build()).allocate_tensors()
