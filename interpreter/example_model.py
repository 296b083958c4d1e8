"""The example model that ``litedelegate run`` uses when no model is given.

A small image classifier written with the project's builder: depthwise
convolutions with dilation 2 (DEPTHWISE_CONV_2D v2) and 1 (v1), pointwise
convolutions, a residual ADD, global MEAN, FULLY_CONNECTED and SOFTMAX.
Weights are seeded, so every build gives the same bytes.
"""

from __future__ import annotations

import numpy as np

from schema.builder import ModelBuilder
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding
from schema.params import (
    Conv2DParams,
    DepthwiseConv2DParams,
    FullyConnectedParams,
    ReducerParams,
    SoftmaxParams,
    AddParams,
)

INPUT_SHAPE = (1, 32, 32, 8)
NUM_CLASSES = 10


def build_example_model(seed: int = 7) -> bytes:
    """Bytes of the example ``.tflite`` model (input float32[1,32,32,8], output float32[1,10])."""
    rng = np.random.default_rng(seed)
    channels = INPUT_SHAPE[-1]
    builder = ModelBuilder(description="litedelegate example: dilated depthwise classifier")
    graph = builder.subgraph("main")

    def weights(*shape: int) -> np.ndarray:
        fan_in = int(np.prod(shape[1:]))
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)

    def depthwise(name: str, x: int, dilation: int) -> int:
        out = graph.add_tensor(name, INPUT_SHAPE)
        graph.add_operator(
            BuiltinOperator.DEPTHWISE_CONV_2D,
            [x, graph.add_constant(f"{name}/filter", weights(1, 3, 3, channels)), graph.add_constant(f"{name}/bias", np.zeros(channels, np.float32))],
            [out],
            DepthwiseConv2DParams(
                padding=Padding.SAME,
                stride_w=1,
                stride_h=1,
                depth_multiplier=1,
                fused_activation_function=ActivationFunctionType.RELU6,
                dilation_w_factor=dilation,
                dilation_h_factor=dilation,
            ),
        )
        return out

    def pointwise(name: str, x: int) -> int:
        out = graph.add_tensor(name, INPUT_SHAPE)
        graph.add_operator(
            BuiltinOperator.CONV_2D,
            [x, graph.add_constant(f"{name}/filter", weights(channels, 1, 1, channels)), graph.add_constant(f"{name}/bias", np.zeros(channels, np.float32))],
            [out],
            Conv2DParams(padding=Padding.SAME, stride_w=1, stride_h=1, fused_activation_function=ActivationFunctionType.RELU),
        )
        return out

    image = graph.add_input("image", INPUT_SHAPE)
    x = pointwise("block1/pointwise", depthwise("block1/depthwise_dilated", image, dilation=2))
    y = pointwise("block2/pointwise", depthwise("block2/depthwise", x, dilation=1))
    residual = graph.add_tensor("residual", INPUT_SHAPE)
    graph.add_operator(BuiltinOperator.ADD, [x, y], [residual], AddParams())
    pooled = graph.add_tensor("pooled", (1, channels))
    graph.add_operator(
        BuiltinOperator.MEAN, [residual, graph.add_constant("pool/axes", np.array([1, 2], np.int32))], [pooled], ReducerParams(keep_dims=False)
    )
    logits = graph.add_tensor("logits", (1, NUM_CLASSES))
    graph.add_operator(
        BuiltinOperator.FULLY_CONNECTED,
        [pooled, graph.add_constant("classifier/weights", weights(NUM_CLASSES, channels)), graph.add_constant("classifier/bias", np.zeros(NUM_CLASSES, np.float32))],
        [logits],
        FullyConnectedParams(),
    )
    probabilities = graph.add_tensor("probabilities", (1, NUM_CLASSES))
    graph.add_operator(BuiltinOperator.SOFTMAX, [logits], [probabilities], SoftmaxParams(beta=1.0))
    graph.add_output(probabilities)
    builder.add_signature("serving_default", graph)
    return builder.build()
