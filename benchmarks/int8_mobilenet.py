"""A MobileNet-v1-style int8 image classifier on 96x96 inputs, built with the model builder,
and where the CPU path's time goes on it (``cpu_breakdown``), against LiteRT.

    python benchmarks/int8_mobilenet.py [--alpha 0.25] [--size 96] [--runs 100] [--save PATH]

The network: a 3x3 stride-2 convolution, then 13 blocks of a 3x3 depthwise convolution
(stride 2 where MobileNet v1 has it) and a 1x1 convolution, all with RELU6, then an
average pool and a fully-connected layer. Weights are random int8 with per-channel
scales; activations use RELU6's usual quantization (scale 6/255, zero point -128);
layers chosen with ``--linear`` have no activation (a zero point inside the range: the
output stage's general path). The figures: each convolution's time against its floor
(issue 34: within 1.5x), and the whole invoke against XNNPACK's on one thread.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (stride of the depthwise convolution, output channels of the 1x1) per block, MobileNet v1
BLOCKS = [(1, 64), (2, 128), (1, 128), (2, 256), (1, 256), (2, 512)] + [(1, 512)] * 5 + [(2, 1024), (1, 1024)]
RELU6_SCALE = 6.0 / 255.0


def build_mobilenet(size: int = 96, alpha: float = 0.25, classes: int = 10, seed: int = 0, linear: tuple = ()) -> bytes:
    """The int8 model's bytes. ``linear``: indices of 1x1 convolutions without activation."""
    from schema.builder import ModelBuilder, quantization
    from schema.enums import ActivationFunctionType as Act
    from schema.enums import BuiltinOperator as Op
    from schema.enums import Padding
    from schema.enums import TensorType as T
    from schema.params import Conv2DParams, DepthwiseConv2DParams, FullyConnectedParams, Pool2DParams, ReshapeParams

    rng = np.random.default_rng(seed)
    builder = ModelBuilder("int8 mobilenet (benchmark)")
    graph = builder.subgraph("main")
    channels = 3
    input_scale = 1.0 / 128
    x = graph.add_input("image", [1, size, size, channels], T.INT8, quantization=quantization(input_scale, 0))
    height = size

    def conv_weights(shape, taps, in_scale):
        values = rng.integers(-127, 128, shape).astype(np.int8)
        scales = rng.uniform(0.5, 1.5, shape[0] if len(shape) == 4 and shape[0] > 1 else shape[-1]) * 0.02
        return values, scales

    def activation_output(name, shape, activation_is_linear):
        if activation_is_linear:
            return graph.add_tensor(name, shape, T.INT8, quantization=quantization(0.05, 3)), Act.NONE
        return graph.add_tensor(name, shape, T.INT8, quantization=quantization(RELU6_SCALE, -128)), Act.RELU6

    def conv(x, in_scale, out_channels, kernel, stride, name, is_linear=False):
        nonlocal channels, height
        values, scales = conv_weights([out_channels, kernel, kernel, channels], kernel * kernel * channels, in_scale)
        w = graph.add_constant(f"{name}_w", values, quantization=quantization(scales.astype(np.float32), 0, 0))
        bias_scale = (in_scale * scales).astype(np.float32)
        b = graph.add_constant(f"{name}_b", rng.integers(-2000, 2000, out_channels).astype(np.int32),
                               quantization=quantization(bias_scale, 0, 0))
        height = (height + stride - 1) // stride
        y, act = activation_output(f"{name}_out", [1, height, height, out_channels], is_linear)
        graph.add_operator(Op.CONV_2D, [x, w, b], [y], Conv2DParams(padding=Padding.SAME, stride_w=stride, stride_h=stride,
                                                                    fused_activation_function=act))
        channels = out_channels
        return y, (0.05 if is_linear else RELU6_SCALE)

    def depthwise(x, in_scale, stride, name):
        nonlocal height
        values = rng.integers(-127, 128, [1, 3, 3, channels]).astype(np.int8)
        scales = (rng.uniform(0.5, 1.5, channels) * 0.02).astype(np.float32)
        w = graph.add_constant(f"{name}_w", values, quantization=quantization(scales, 0, 3))
        b = graph.add_constant(f"{name}_b", rng.integers(-2000, 2000, channels).astype(np.int32),
                               quantization=quantization((in_scale * scales).astype(np.float32), 0, 0))
        height = (height + stride - 1) // stride
        y, act = activation_output(f"{name}_out", [1, height, height, channels], False)
        graph.add_operator(Op.DEPTHWISE_CONV_2D, [x, w, b], [y],
                           DepthwiseConv2DParams(padding=Padding.SAME, stride_w=stride, stride_h=stride, depth_multiplier=1,
                                                 fused_activation_function=act))
        return y, RELU6_SCALE

    scale = input_scale
    x, scale = conv(x, scale, max(8, int(32 * alpha)), 3, 2, "conv0")
    for index, (stride, out_channels) in enumerate(BLOCKS):
        x, scale = depthwise(x, scale, stride, f"dw{index + 1}")
        x, scale = conv(x, scale, max(8, int(out_channels * alpha)), 1, 1, f"pw{index + 1}", is_linear=index in linear)
    pooled = graph.add_tensor("pooled", [1, 1, 1, channels], T.INT8, quantization=quantization(scale, -128 if scale == RELU6_SCALE else 3))
    graph.add_operator(Op.AVERAGE_POOL_2D, [x], [pooled], Pool2DParams(padding=Padding.VALID, stride_w=1, stride_h=1,
                                                                         filter_width=height, filter_height=height))
    flat = graph.add_tensor("flat", [1, channels], T.INT8, quantization=quantization(scale, -128 if scale == RELU6_SCALE else 3))
    graph.add_operator(Op.RESHAPE, [pooled, graph.add_constant("shape", np.array([1, channels], np.int32))], [flat],
                       ReshapeParams(new_shape=(1, channels)))
    fc_scale = 0.01
    fw = graph.add_constant("fc_w", rng.integers(-127, 128, [classes, channels]).astype(np.int8), quantization=quantization(fc_scale, 0))
    fb = graph.add_constant("fc_b", rng.integers(-500, 500, classes).astype(np.int32), quantization=quantization(scale * fc_scale, 0))
    logits = graph.add_tensor("logits", [1, classes], T.INT8, quantization=quantization(0.1, 0))
    graph.add_operator(Op.FULLY_CONNECTED, [flat, fw, fb], [logits], FullyConnectedParams())
    graph.add_output(logits)
    return builder.build()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=96)
    parser.add_argument("--alpha", type=float, default=0.25)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--linear", type=int, nargs="*", default=[1, 4, 8], help="1x1 blocks without activation")
    parser.add_argument("--save", type=pathlib.Path, help="also write the model here")
    parser.add_argument("--no-breakdown", action="store_true")
    args = parser.parse_args(argv)
    model = build_mobilenet(args.size, args.alpha, linear=tuple(args.linear))
    path = args.save or pathlib.Path(tempfile.mkdtemp()) / f"int8_mobilenet_{args.size}_{args.alpha}.tflite"
    path.write_bytes(model)
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    from interpreter import Interpreter

    from benchmarks.compare_litert import median_invoke_seconds

    ours = median_invoke_seconds(Interpreter(model_content=model, num_threads=1), args.runs)
    xnnpack = median_invoke_seconds(LiteRT(model_content=model, num_threads=1), args.runs)
    print(f"{path.name}: ours {ours * 1e3:.3f} ms, XNNPACK {xnnpack * 1e3:.3f} ms ({ours / xnnpack:.2f}x), one thread")
    if not args.no_breakdown:
        from benchmarks.cpu_breakdown import breakdown
        from backends.cpu.common import set_blas_threads

        set_blas_threads(1)
        breakdown(path, args.runs, top=40)
    return 0


if __name__ == "__main__":
    sys.exit(main())
