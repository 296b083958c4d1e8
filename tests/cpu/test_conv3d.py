"""CONV_3D and CONV_3D_TRANSPOSE (float32, v1) against ai-edge-litert (BUILTIN_REF): padding,
strides and dilation per axis, bias, fused activations, weights and output shapes given at
run time, the overflow corner (TFLite's loop), the blocked im2col, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from model_helpers import Const, In, Out, single_op_model, stamped_version
from oracle import assert_matches_litert, litert_interpreter, run_interpreter

from backends.cpu.kernels import conv3d
from delegate_sdk.context import KernelError
from interpreter import Interpreter
from schema.enums import ActivationFunctionType as A
from schema.enums import BuiltinOperator as B
from schema.enums import Padding
from schema.params import Conv3DParams

RNG = np.random.default_rng(3)
GEOMETRIES = [  # (strides d, h, w), (dilations d, h, w)
    ((1, 1, 1), (1, 1, 1)),
    ((2, 1, 2), (1, 1, 1)),
    ((1, 3, 1), (1, 1, 1)),
    ((1, 1, 1), (2, 1, 3)),
    ((2, 2, 1), (1, 2, 1)),
]


#: Each output sums up to 54 products (filter 3x2x3, 3 channels) of inputs in [-2, 2] (the
#: oracle's random inputs) and weights in [-1, 1], in BLAS's order here and TFLite's there:
#: the float32 roundings of two such sums differ by at most 54 * 2 * 2**-23 = 1.3e-5 in
#: absolute terms, which outputs near 0 show (relative: 1e-5, as everywhere).
ATOL = 54 * 2 * 2.0**-23


def assert_conv_matches_litert(model, inputs=None, seed=0):
    return assert_matches_litert(model, inputs, atol=ATOL, seed=seed)


def params(padding=Padding.SAME, strides=(1, 1, 1), dilations=(1, 1, 1), activation=A.NONE) -> Conv3DParams:
    return Conv3DParams(
        padding=padding, stride_d=strides[0], stride_h=strides[1], stride_w=strides[2],
        dilation_d_factor=dilations[0], dilation_h_factor=dilations[1], dilation_w_factor=dilations[2],
        fused_activation_function=activation,
    )


def weights(*shape) -> np.ndarray:
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def conv3d_model(x_shape=(2, 5, 6, 7, 3), filter_shape=(3, 2, 3, 3, 4), conv=None, bias=True, filter_input=False):
    filters = In(filter_shape) if filter_input else Const(weights(*filter_shape))
    inputs = [In(x_shape), filters] + ([Const(weights(filter_shape[4]))] if bias else [])
    return single_op_model(B.CONV_3D, inputs, Out(None), conv or params())


def output_shape_of(model) -> list[int]:
    interpreter = Interpreter(model_content=model)
    interpreter.allocate_tensors()
    return list(interpreter.get_output_details()[0]["shape"])


def transpose_model(out_shape, in_shape, filter_shape, conv=None, bias=True, shape_input=False):
    shape = In([5], np.int32) if shape_input else Const(np.array(out_shape, np.int32))
    inputs = [shape, Const(weights(*filter_shape)), In(in_shape)] + ([Const(weights(filter_shape[3]))] if bias else [])
    return single_op_model(B.CONV_3D_TRANSPOSE, inputs, Out(out_shape), conv or params())


# -- CONV_3D ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("padding", [Padding.SAME, Padding.VALID], ids=["same", "valid"])
@pytest.mark.parametrize("strides, dilations", GEOMETRIES)
def test_conv3d_matches_litert(padding, strides, dilations):
    model = conv3d_model(conv=params(padding, strides, dilations))
    assert stamped_version(model) == 1
    assert_conv_matches_litert(model)


@pytest.mark.parametrize("activation", [A.NONE, A.RELU, A.RELU6, A.RELU_N1_TO_1, A.TANH], ids=lambda a: a.name)
def test_conv3d_fused_activation_matches_litert(activation):
    # (TFLite clamps by CalculateActivationRange: a fused TANH is not applied.)
    assert_conv_matches_litert(conv3d_model(conv=params(activation=activation)), seed=1)


def test_conv3d_without_bias_matches_litert():
    assert_conv_matches_litert(conv3d_model(bias=False))


def test_conv3d_with_the_bias_omitted_as_input_minus_1_matches_litert():
    model = single_op_model(B.CONV_3D, [In([1, 3, 4, 4, 2]), Const(weights(2, 2, 1, 2, 3)), None], Out(None), params())
    assert_conv_matches_litert(model)


def test_conv3d_with_the_filter_as_a_graph_input_matches_litert():
    model = conv3d_model(filter_input=True)
    inputs = [RNG.uniform(-1, 1, (2, 5, 6, 7, 3)).astype(np.float32), weights(3, 2, 3, 3, 4)]
    assert_conv_matches_litert(model, inputs)


def test_conv3d_1x1x1_filter_matches_litert():
    assert_conv_matches_litert(conv3d_model(filter_shape=(1, 1, 1, 3, 5)))


def test_conv3d_with_a_dilation_whose_taps_only_read_the_padding_matches_litert():
    # Dilation 50 on a 4-deep input: SAME padding, and every depth tap but one lies in it.
    model = conv3d_model(x_shape=(1, 4, 3, 3, 2), filter_shape=(3, 2, 2, 2, 3), conv=params(dilations=(50, 1, 1)))
    assert output_shape_of(model) == [1, 4, 3, 3, 3]
    assert_conv_matches_litert(model)


def test_conv3d_blocked_im2col_matches_litert(monkeypatch):
    monkeypatch.setattr(conv3d, "IM2COL_BLOCK_BYTES", 2000)  # one image, a few output depths a block
    model = conv3d_model(x_shape=(2, 7, 5, 4, 3), conv=params(strides=(1, 2, 1)))
    assert_conv_matches_litert(model)


def test_conv3d_whose_sums_overflow_gives_litert_s_saturated_and_nan_outputs():
    # Partial sums beyond FLT_MAX: the BLAS order could differ; TFLite's loop runs instead.
    # With a filter of ones, output (0, 0, 0) sums 15 values of 3e37 (+inf) before the -inf
    # (NaN); output (1, 1, 1) starts with the -inf (-inf, saturated to -FLT_MAX).
    filters = np.ones((2, 2, 2, 2, 3), np.float32)
    model = single_op_model(B.CONV_3D, [In([1, 3, 3, 3, 2]), Const(filters)], Out([1, 3, 3, 3, 3]), params())
    x = np.full((1, 3, 3, 3, 2), 3e37, np.float32)
    x[0, 1, 1, 1, 1] = -np.inf
    outputs = assert_conv_matches_litert(model, [x])
    flt_max = np.finfo(np.float32).max
    assert np.isnan(outputs[0][0, 0, 0, 0]).all() and (outputs[0][0, 1, 1, 1] == -flt_max).all()
    assert (outputs[0][0, 2, 2, 2] == 2 * np.float32(3e37)).all()  # (one voxel, two channels)


def test_conv3d_with_mismatched_channels_is_refused_naming_node_op_and_version():
    model = single_op_model(B.CONV_3D, [In([1, 3, 3, 3, 2]), Const(weights(1, 1, 1, 3, 4))], Out([1, 3, 3, 3, 4]), params())
    with pytest.raises(KernelError, match=r"node 0 \(CONV_3D v1\).*input channels \(2\) differ from the filter's in-channels \(3\)"):
        Interpreter(model_content=model).allocate_tensors()


def test_conv3d_with_a_bias_of_the_wrong_size_is_refused():
    inputs = [In([1, 3, 3, 3, 2]), Const(weights(1, 1, 1, 2, 4)), Const(weights(3))]
    model = single_op_model(B.CONV_3D, inputs, Out([1, 3, 3, 3, 4]), params())
    with pytest.raises(KernelError, match=r"CONV_3D v1: bias has 3 elements, expected 4"):
        Interpreter(model_content=model).allocate_tensors()


def test_conv3d_of_int8_is_refused_as_litert_does():
    inputs = [In([1, 3, 3, 3, 2], np.int8), Const(np.ones([1, 1, 1, 2, 4], np.int8))]
    model = single_op_model(B.CONV_3D, inputs, Out([1, 3, 3, 3, 4], np.int8), params(), version=1)
    with pytest.raises(KernelError, match=r"CONV_3D v1: input 'x0' has type INT8; this kernel supports FLOAT32"):
        Interpreter(model_content=model).allocate_tensors()


def test_conv3d_with_a_zero_stride_is_refused():
    inputs = [In([1, 3, 3, 3, 2]), Const(weights(1, 1, 1, 2, 4))]
    model = single_op_model(B.CONV_3D, inputs, Out([1, 3, 3, 3, 4]), params(strides=(1, 0, 1)))
    with pytest.raises(KernelError, match=r"CONV_3D v1: strides \(depth, height, width\) must be positive, got \[1, 0, 1\]"):
        Interpreter(model_content=model).allocate_tensors()


def test_conv3d_whose_filter_does_not_fit_a_valid_input_is_refused():
    inputs = [In([1, 2, 3, 3, 2]), Const(weights(3, 1, 1, 2, 4))]
    model = single_op_model(B.CONV_3D, inputs, Out([1, 1, 3, 3, 4]), params(Padding.VALID))
    with pytest.raises(KernelError, match=r"CONV_3D v1: the filter \[3, 1, 1\] \(dilated\) does not fit"):
        Interpreter(model_content=model).allocate_tensors()


# -- CONV_3D_TRANSPOSE -----------------------------------------------------------------------------


def transpose_case(padding, strides, dilations, out_shape=(2, 5, 6, 7, 4), filter_shape=(3, 2, 3, 4, 3)):
    """A transpose conv whose input is what CONV_3D of ``out_shape`` with the same geometry gives."""
    conv = params(padding, strides, dilations)
    forward = single_op_model(
        B.CONV_3D, [In(out_shape), Const(weights(*filter_shape[:3], filter_shape[3], filter_shape[4]))], Out(None), conv
    )
    in_shape = output_shape_of(forward)[:4] + [filter_shape[4]]
    return conv, list(out_shape), in_shape, filter_shape


@pytest.mark.parametrize("padding", [Padding.SAME, Padding.VALID], ids=["same", "valid"])
@pytest.mark.parametrize("strides, dilations", GEOMETRIES)
def test_conv3d_transpose_matches_litert(padding, strides, dilations):
    conv, out_shape, in_shape, filter_shape = transpose_case(padding, strides, dilations)
    model = transpose_model(out_shape, in_shape, filter_shape, conv)
    assert stamped_version(model) == 1
    assert_conv_matches_litert(model)


@pytest.mark.parametrize("activation", [A.RELU, A.RELU6, A.RELU_N1_TO_1], ids=lambda a: a.name)
def test_conv3d_transpose_fused_activation_without_bias_matches_litert(activation):
    conv, out_shape, in_shape, filter_shape = transpose_case(Padding.SAME, (2, 2, 2), (1, 1, 1))
    conv = params(Padding.SAME, (2, 2, 2), activation=activation)
    assert_conv_matches_litert(transpose_model(out_shape, in_shape, filter_shape, conv, bias=False))


def test_conv3d_transpose_with_the_bias_omitted_as_input_minus_1_matches_litert():
    inputs = [Const(np.array([1, 4, 4, 4, 2], np.int32)), Const(weights(2, 2, 2, 2, 3)), In([1, 2, 2, 2, 3]), None]
    model = single_op_model(B.CONV_3D_TRANSPOSE, inputs, Out([1, 4, 4, 4, 2]), params(Padding.SAME, (2, 2, 2)))
    assert_conv_matches_litert(model)


def test_conv3d_transpose_with_an_output_one_larger_than_natural_matches_litert():
    # VALID, stride 2, filter 2: outputs of 8 and 9 both give back 4 (the last row gets no tap).
    conv = params(Padding.VALID, (2, 2, 2))
    assert_conv_matches_litert(transpose_model([1, 9, 8, 9, 2], [1, 4, 4, 4, 3], (2, 2, 2, 2, 3), conv))


def test_conv3d_transpose_with_the_output_shape_as_a_graph_input_matches_litert():
    conv, out_shape, in_shape, filter_shape = transpose_case(Padding.SAME, (2, 1, 2), (1, 1, 1))
    model = transpose_model(out_shape, in_shape, filter_shape, conv, shape_input=True)
    x = RNG.uniform(-1, 1, in_shape).astype(np.float32)
    shape = np.array(out_shape, np.int32)
    ours = Interpreter(model_content=model)
    expected = run_interpreter(litert_interpreter(model), [shape, x])
    got = run_interpreter(ours, [shape, x])
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=ATOL)
    assert list(ours.get_output_details()[0]["shape"]) == out_shape


def test_conv3d_transpose_with_an_output_shape_that_does_not_match_the_input_is_refused():
    model = transpose_model([1, 5, 5, 5, 2], [1, 4, 4, 4, 3], (2, 2, 2, 2, 3), params(Padding.VALID, (2, 2, 2)))
    with pytest.raises(KernelError, match=r"node 0 \(CONV_3D_TRANSPOSE v1\).*does not match the input"):
        Interpreter(model_content=model).allocate_tensors()


def test_conv3d_transpose_with_mismatched_channels_is_refused():
    model = transpose_model([1, 4, 4, 4, 2], [1, 4, 4, 4, 3], (1, 1, 1, 2, 5), params(), bias=False)
    with pytest.raises(KernelError, match=r"CONV_3D_TRANSPOSE v1: input channels \(3\) differ from the filter's in-channels \(5\)"):
        Interpreter(model_content=model).allocate_tensors()


def test_conv3d_transpose_output_shape_of_the_wrong_length_is_refused():
    inputs = [Const(np.array([1, 4, 4, 2], np.int32)), Const(weights(1, 1, 1, 2, 3)), In([1, 4, 4, 4, 3])]
    model = single_op_model(B.CONV_3D_TRANSPOSE, inputs, Out([1, 4, 4, 4, 2]), params())
    with pytest.raises(KernelError, match=r"CONV_3D_TRANSPOSE v1: output_shape must be a 1-D tensor of 5 values"):
        Interpreter(model_content=model).allocate_tensors()
