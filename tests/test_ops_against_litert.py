"""The floor of the oracle: every (op, version) the CPU registers runs its recipe (the
delegate kit's model of exactly that version, ``delegate_sdk.testing.single_op_model``) in
litedelegate and in LiteRT on the same random inputs, and gives LiteRT's outputs: floats
within 1e-5 (relative), integers and booleans bit for bit.

The oracle is LiteRT's reference kernels (``BUILTIN_REF``); where the reference resolver
does not register the version (``docs/litert_ops.json``: CEIL, ROUND, ELU, ABS v4-5...) it is
LiteRT's default kernels (without XNNPACK). ``NOT_COMPARED`` names the versions LiteRT
cannot be compared with on a recipe (a LiteRT bug...), and the test that compares them
instead. Each op's own tests
(tests/cpu/) go further: shapes, params, edge values, error messages.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from backends.cpu import builtin_op_resolver
from delegate_sdk.testing import recipe, single_op_model
from interpreter.testing import _interpreter, _random_inputs
from oracle import assert_outputs_equal, run_interpreter, run_ours
from schema.enums import BuiltinOperator as B

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: (op, version) not compared here: why, and the test (``path::name``) that compares it with LiteRT.
NOT_COMPARED: dict[tuple[int, int], str] = {
    (B.DEPTHWISE_CONV_2D, 4): "LiteRT's hybrid per-tensor kernel reads the filter scale of channel c > 0 past the "
                              "one-element scale array; tests/cpu/test_depthwise_conv2d_quantized.py::"
                              "test_hybrid_per_tensor_depthwise_is_v4_and_equals_the_scale_repeated_per_channel",
    (B.SUM, 2): "LiteRT's reference SUM reads int8 data as uint8, and its default kernel rescales in float (one step "
                "off where input and output scales differ, as in the recipe); tests/cpu/test_reduce_quantized.py::"
                "test_quantized_sum_int8_equals_litert_reference_uint8_sum_shifted_by_128",
}

REGISTERED = builtin_op_resolver().registered_builtins()
COMPARED = [pair for pair in REGISTERED if pair not in NOT_COMPARED]
LITERT_REFERENCE = {
    (B[op], version)
    for op, by in json.loads((ROOT / "docs" / "litert_ops.json").read_text(encoding="utf-8"))["builtins"].items()
    for version in by["builtin_ref"]
}


def label(pair) -> str:
    return f"{B(pair[0]).name}-v{pair[1]}"


def litert_interpreter(model: bytes, pair):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kind = OpResolverType.BUILTIN_REF if pair in LITERT_REFERENCE else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    return Interpreter(model_content=model, experimental_op_resolver_type=kind)


@pytest.mark.parametrize("pair", COMPARED, ids=label)
def test_the_recipe_of_each_registered_op_version_gives_litert_s_outputs(pair):
    model = single_op_model(*pair)
    inputs = _random_inputs(_interpreter(model), 0)
    expected = run_interpreter(litert_interpreter(model, pair), inputs)
    ours = run_ours(model, inputs)
    assert_outputs_equal(ours, expected)
    assert any(np.size(output) for output in ours), f"{label(pair)}: the recipe's outputs are empty: nothing was compared"


def test_each_version_not_compared_here_names_a_test_that_compares_it():
    for pair, why in NOT_COMPARED.items():
        assert pair in REGISTERED, f"{label(pair)} is not registered: remove it from NOT_COMPARED"
        path, name = why.rsplit("; ", 1)[1].split("::")
        assert f"def {name}(" in (ROOT / path).read_text(encoding="utf-8"), f"{label(pair)}: {path} has no {name}"
        assert recipe(*pair)  # it has a recipe all the same
