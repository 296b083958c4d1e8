"""Per-op micro-benchmarks of the float CPU kernels, against ai-edge-litert in the same run.

    python benchmarks/kernels.py [--runs 2000] [--rounds 5] [--blas-threads 1] [FILTER ...]

Each case is a one-node model (built with ``schema.builder``) with shapes taken from the
float test models and the face detection model. For every case: the median time of one
``Interpreter.invoke`` of litedelegate, of LiteRT's reference kernels (BUILTIN_REF) and of
LiteRT's default kernels (XNNPACK), one thread each, and the ratios. The runtimes are
timed in turns (``--rounds``), and each median is the smallest of the rounds' medians, so
that a busy neighbour on a shared machine does not decide a comparison. Tiny cases
measure mostly fixed costs: the interpreter's ~0.6 us per invoke and ~0.3 us per node
in Python, plus ~0.4-2 us per numpy call.

FILTER keeps the cases whose name contains one of the words (e.g. ``dwconv pool``).
``--blas-threads`` sets the BLAS thread count of numpy (default 1, like LiteRT here).
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time
from typing import Callable

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schema.builder import ModelBuilder  # noqa: E402
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding  # noqa: E402
from schema.params import (  # noqa: E402
    AddParams,
    ConcatenationParams,
    Conv2DParams,
    DepthwiseConv2DParams,
    FullyConnectedParams,
    MulParams,
    Pool2DParams,
    ReducerParams,
    ReshapeParams,
    SoftmaxParams,
)

B = BuiltinOperator
Act = ActivationFunctionType


def _one_op(op, inputs: list, params) -> bytes:
    """A model of one node: ``inputs`` are shapes (model inputs) or arrays (constants). The
    output's shape is written in the file (LiteRT's XNNPACK delegate skips nodes whose
    output shape is only known after prepare), as litedelegate's prepare computes it."""
    from interpreter import Interpreter

    def build(output_shape) -> bytes:
        builder = ModelBuilder()
        graph = builder.subgraph()
        indices = []
        for i, value in enumerate(inputs):
            if isinstance(value, np.ndarray):
                indices.append(graph.add_constant(f"c{i}", value))
            else:
                indices.append(graph.add_input(f"x{i}", value))
        y = graph.add_tensor("y", output_shape)
        graph.add_operator(op, indices, [y], params)
        graph.add_output(y)
        builder.add_signature("serving_default", graph)
        return builder.build()

    probe = Interpreter(model_content=build([1]))
    probe.allocate_tensors()
    return build(list(probe.get_output_details()[0]["shape"]))


def _weights(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def conv(x, out_channels, kernel, stride=1, dilation=1, padding=Padding.SAME, act=Act.NONE) -> bytes:
    n, h, w, c = x
    params = Conv2DParams(
        padding=padding, stride_w=stride, stride_h=stride, fused_activation_function=act,
        dilation_w_factor=dilation, dilation_h_factor=dilation,
    )
    return _one_op(B.CONV_2D, [x, _weights(out_channels, kernel, kernel, c), _weights(out_channels)], params)


def dwconv(x, kernel=3, stride=1, dilation=1, multiplier=1, padding=Padding.SAME, act=Act.NONE) -> bytes:
    c = x[3] * multiplier
    params = DepthwiseConv2DParams(
        padding=padding, stride_w=stride, stride_h=stride, depth_multiplier=multiplier,
        fused_activation_function=act, dilation_w_factor=dilation, dilation_h_factor=dilation,
    )
    return _one_op(B.DEPTHWISE_CONV_2D, [x, _weights(1, kernel, kernel, c), _weights(c)], params)


def pool(op, x, size, stride, padding=Padding.SAME) -> bytes:
    params = Pool2DParams(padding=padding, stride_w=stride, stride_h=stride, filter_width=size, filter_height=size)
    return _one_op(op, [x], params)


def fully_connected(batch, depth, units) -> bytes:
    return _one_op(B.FULLY_CONNECTED, [[batch, depth], _weights(units, depth), _weights(units)], FullyConnectedParams())


def binary(op, x, y_shape, constant=False) -> bytes:
    y = _weights(*y_shape) if constant else list(y_shape)
    params = AddParams() if op == B.ADD else MulParams()
    return _one_op(op, [x, y], params)


CASES: dict[str, Callable[[], bytes]] = {
    # converter models' nodes
    "conv 16x16x4 3x3 dil2": lambda: conv([1, 16, 16, 4], 8, 3, dilation=2),
    "conv 32x32x3 3x3/2 relu6": lambda: conv([1, 32, 32, 3], 8, 3, stride=2, act=Act.RELU6),
    "conv 16x16x8 1x1 relu": lambda: conv([1, 16, 16, 8], 16, 1, act=Act.RELU),
    "dwconv 16x16x8 dil1": lambda: dwconv([1, 16, 16, 8]),
    "dwconv 16x16x8 dil2 relu6": lambda: dwconv([1, 16, 16, 8], dilation=2, act=Act.RELU6),
    "dwconv 16x16x8 M2 /2 valid": lambda: dwconv([1, 16, 16, 8], stride=2, multiplier=2, padding=Padding.VALID),
    "avgpool 9x9x4 3x3/2": lambda: pool(B.AVERAGE_POOL_2D, [1, 9, 9, 4], 3, 2),
    "maxpool 9x9x4 3x3/2": lambda: pool(B.MAX_POOL_2D, [1, 9, 9, 4], 3, 2),
    "maxpool 16x16x16 2x2/2": lambda: pool(B.MAX_POOL_2D, [1, 16, 16, 16], 2, 2, Padding.VALID),
    "fully_connected 2x32->24": lambda: fully_connected(2, 32, 24),
    "softmax 1x10": lambda: _one_op(B.SOFTMAX, [[1, 10]], SoftmaxParams(beta=1.0)),
    "mean 7x7x8 axes 1,2": lambda: _one_op(
        B.MEAN, [[1, 7, 7, 8], np.array([1, 2], np.int32)], ReducerParams(keep_dims=False)
    ),
    "pad 5x5x3": lambda: _one_op(B.PAD, [[1, 5, 5, 3], np.array([[0, 0], [1, 2], [2, 1], [0, 0]], np.int32)], None),
    "add 8x8x8 + 1x8x1": lambda: binary(B.ADD, [1, 8, 8, 8], [1, 1, 8, 1]),
    "mul 8x8x8 * const 1x1x8": lambda: binary(B.MUL, [1, 8, 8, 8], [1, 1, 1, 8], constant=True),
    "concat 2x 8x8x8": lambda: _one_op(
        B.CONCATENATION, [[1, 8, 8, 8], [1, 8, 8, 8]], ConcatenationParams(axis=3)
    ),
    "reshape 4x4x8": lambda: _one_op(B.RESHAPE, [[1, 4, 4, 8], np.array([1, 8, 16], np.int32)], ReshapeParams()),
    # face detection model's nodes
    "face conv 128x128x3 5x5/2": lambda: conv([1, 128, 128, 3], 24, 5, stride=2),
    "face conv 64x64x24 1x1": lambda: conv([1, 64, 64, 24], 24, 1, padding=Padding.VALID),
    "face dwconv 64x64x24": lambda: dwconv([1, 64, 64, 24]),
    "face dwconv 64x64x28 /2": lambda: dwconv([1, 64, 64, 28], stride=2),
    "face dwconv 16x16x64": lambda: dwconv([1, 16, 16, 64]),
    "face maxpool 64x64x28 2x2/2": lambda: pool(B.MAX_POOL_2D, [1, 64, 64, 28], 2, 2),
    "face pad 64x64x24 ->28": lambda: _one_op(
        B.PAD, [[1, 64, 64, 24], np.array([[0, 0], [0, 0], [0, 0], [0, 4]], np.int32)], None
    ),
    "face add 64x64x24": lambda: binary(B.ADD, [1, 64, 64, 24], [1, 64, 64, 24]),
    "face relu 64x64x24": lambda: _one_op(B.RELU, [[1, 64, 64, 24]], None),
}


def _ours(model: bytes):
    from interpreter import Interpreter

    return Interpreter(model_content=model, num_threads=1)


def _litert(model: bytes, reference: bool):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kind = OpResolverType.BUILTIN_REF if reference else OpResolverType.AUTO
    return Interpreter(model_content=model, num_threads=1, experimental_op_resolver_type=kind)


def _ready(interpreter):
    interpreter.allocate_tensors()
    rng = np.random.default_rng(0)
    for detail in interpreter.get_input_details():
        value = rng.uniform(-1, 1, tuple(detail["shape"])).astype(detail["dtype"])
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return interpreter


def _median_seconds(invoke: Callable[[], None], runs: int, budget: float) -> float:
    times = []
    deadline = time.perf_counter() + budget
    for _ in range(runs):
        start = time.perf_counter()
        invoke()
        times.append(time.perf_counter() - start)
        if len(times) >= 5 and time.perf_counter() > deadline:
            break
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("filters", nargs="*")
    parser.add_argument("--runs", type=int, default=2000, help="invokes per round and runtime (at most)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--blas-threads", type=int, default=1)
    args = parser.parse_args(argv)

    from backends.cpu.common import set_blas_threads

    if set_blas_threads(args.blas_threads) is None:
        print("(numpy's BLAS thread count could not be set)")
    header = f"{'case':32s} {'ours us':>9s} {'ref us':>9s} {'xnn us':>9s} {'ours/ref':>9s} {'ours/xnn':>9s}"
    print(header)
    print("-" * len(header))
    ratios_ref, ratios_xnn = [], []
    for name, build in CASES.items():
        if args.filters and not any(f in name for f in args.filters):
            continue
        model = build()
        runtimes = [_ready(_ours(model)), _ready(_litert(model, True)), _ready(_litert(model, False))]
        best = [float("inf")] * 3
        for _ in range(args.rounds):
            for i, interpreter in enumerate(runtimes):
                best[i] = min(best[i], _median_seconds(interpreter.invoke, args.runs, 0.2))
        ours, ref, xnn = best
        ratios_ref.append(ours / ref)
        ratios_xnn.append(ours / xnn)
        print(f"{name:32s} {ours * 1e6:9.2f} {ref * 1e6:9.2f} {xnn * 1e6:9.2f} {ours / ref:9.2f} {ours / xnn:9.2f}")
    if ratios_ref:
        geomean = lambda values: float(np.exp(np.mean(np.log(values))))  # noqa: E731
        print("-" * len(header))
        print(f"{'geometric mean':32s} {'':9s} {'':9s} {'':9s} {geomean(ratios_ref):9.2f} {geomean(ratios_xnn):9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
