"""Versioned op resolution and forward-incompatibility detection."""

from __future__ import annotations

import pathlib

import pytest

from delegate_sdk.op_resolver import MutableOpResolver, UnsupportedOperatorError, resolve_model
from delegate_sdk.registration import Registration
from model_helpers import In, Out, single_op_model
from schema.enums import BuiltinOperator
from schema.model import Model

CONVERTER = pathlib.Path(__file__).parents[1] / "data" / "models" / "converter"


def resolver_with(*entries) -> MutableOpResolver:
    resolver = MutableOpResolver("test resolver")
    for op, low, high in entries:
        resolver.add_builtin(op, Registration(builtin_code=op), low, high)
    return resolver


def test_find_op_returns_a_registration_stamped_with_the_requested_version():
    resolver = resolver_with((BuiltinOperator.DEPTHWISE_CONV_2D, 1, 2))
    assert resolver.find_op(BuiltinOperator.DEPTHWISE_CONV_2D, 2).version == 2
    assert resolver.find_op(BuiltinOperator.DEPTHWISE_CONV_2D, 1).version == 1
    assert resolver.find_op(BuiltinOperator.DEPTHWISE_CONV_2D, 3) is None


def test_resolver_capped_at_v1_accepts_the_dilation_1_file():
    resolver = resolver_with((BuiltinOperator.DEPTHWISE_CONV_2D, 1, 2)).capped({BuiltinOperator.DEPTHWISE_CONV_2D: 1})
    registrations = resolve_model(Model.from_path(CONVERTER / "dwconv_dil1_float32.tflite"), resolver)
    assert [r.version for r in registrations[0]] == [1, 1]


def test_resolver_capped_at_v1_refuses_the_dilation_2_file_listing_every_node():
    resolver = resolver_with((BuiltinOperator.DEPTHWISE_CONV_2D, 1, 2)).capped({BuiltinOperator.DEPTHWISE_CONV_2D: 1})
    with pytest.raises(UnsupportedOperatorError) as caught:
        resolve_model(Model.from_path(CONVERTER / "dwconv_dil2_float32.tflite"), resolver)
    message = str(caught.value)
    assert len(caught.value.unresolved) == 2
    assert "node 0: DEPTHWISE_CONV_2D version 2" in message and "node 1: DEPTHWISE_CONV_2D version 2" in message
    assert "supports DEPTHWISE_CONV_2D versions 1" in message
    assert "TFLite 1.12.0" in message or "litedelegate" in message


def test_resolver_as_of_an_old_tflite_release_refuses_newer_op_versions():
    full = resolver_with((BuiltinOperator.DEPTHWISE_CONV_2D, 1, 2))
    old = full.as_of_release("1.11.0", runtime="tflite")
    assert old.builtin_versions(BuiltinOperator.DEPTHWISE_CONV_2D) == (1,)
    assert full.as_of_release("1.12.0", runtime="tflite").builtin_versions(BuiltinOperator.DEPTHWISE_CONV_2D) == (1, 2)


def unknown_op_model(code: int) -> bytes:
    """A one-node model whose builtin code ``code`` the schema does not know (a RELU node, rewritten)."""
    from schema import schema_generated as fb
    import flatbuffers

    model = fb.ModelT.InitFromPackedBuf(bytearray(single_op_model(BuiltinOperator.RELU, [In([2])], Out([2]))), 0)
    model.operatorCodes[0].builtinCode = code
    model.operatorCodes[0].deprecatedBuiltinCode = min(code, 127)
    model.subgraphs[0].operators[0].builtinOptionsType = 0
    builder = flatbuffers.Builder(256)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def test_op_version_99_fails_naming_op_version_and_supported_range():
    resolver = resolver_with((BuiltinOperator.RELU, 1, 3))
    with pytest.raises(UnsupportedOperatorError, match=r"RELU version 99: this runtime supports RELU versions 1\.\.3"):
        resolve_model(Model.from_bytes(single_op_model(BuiltinOperator.RELU, [In([2])], Out([2]), version=99)), resolver)


def test_unknown_builtin_code_250_fails_clearly():
    resolver = resolver_with((BuiltinOperator.RELU, 1, 1))
    with pytest.raises(UnsupportedOperatorError, match="unknown builtin operator code 250"):
        resolve_model(Model.from_bytes(unknown_op_model(250)), resolver)


def test_bad_version_range_is_refused():
    with pytest.raises(ValueError, match="bad version range"):
        resolver_with((BuiltinOperator.RELU, 2, 1))


def test_custom_ops_resolve_by_name_and_version():
    resolver = MutableOpResolver()
    resolver.add_custom("MyOp", Registration(builtin_code=BuiltinOperator.CUSTOM), 1, 2)
    assert resolver.find_custom("MyOp", 2).custom_name == "MyOp"
    assert resolver.find_custom("MyOp", 3) is None


def test_list_ops_gives_each_op_its_versions_and_the_kernels_of_each_version():
    resolver = MutableOpResolver("listing")
    B = BuiltinOperator
    resolver.add_builtin(B.RELU, Registration(B.RELU, kernels=("k.FloatRelu",)), 1, 1)
    resolver.add_builtin(B.RELU, Registration(B.RELU, kernels=("k.QuantizedRelu", "k.FloatRelu")), 2, 3)
    resolver.add_builtin(B.ADD, Registration(B.ADD), 1, 2)
    resolver.add_custom("MyOp", Registration(B.CUSTOM, kernels=("k.MyOp",)), 1, 2)
    add, relu, custom = resolver.list_ops()
    assert (add.name, add.versions, add.kernels, add.is_custom) == ("ADD", (1, 2), (), False)
    assert relu.versions == (1, 2, 3)
    assert relu.kernels == (("k.FloatRelu", (1, 2, 3)), ("k.QuantizedRelu", (2, 3)))
    assert (custom.name, custom.custom_name, custom.builtin_code, custom.versions) == ("MyOp", "MyOp", B.CUSTOM, (1, 2))
    assert custom.to_json() == {"op": "MyOp", "custom": True, "versions": [1, 2],
                                "kernels": [{"kernel": "k.MyOp", "versions": [1, 2]}]}
    assert resolver.capped({B.RELU: 1}).list_ops()[1].versions == (1,)


def test_the_cpu_resolver_lists_the_kernel_classes_behind_each_version():
    from backends.cpu import builtin_op_resolver

    listed = {entry.name: entry for entry in builtin_op_resolver().list_ops()}
    depthwise = listed["DEPTHWISE_CONV_2D"]
    assert depthwise.versions == (1, 2, 3, 4, 5, 6, 7)
    assert depthwise.kernels == (  # by first version, then by name: the same on every machine
        ("backends.cpu.kernels.depthwise_conv2d.DepthwiseConv2D", (1, 2)),
        ("backends.cpu.kernels.depthwise_conv2d_quantized.QuantizedDepthwiseConv2D", (1, 2, 3, 4, 5, 6, 7)),
    )
    assert all(entry.kernels for entry in listed.values())
