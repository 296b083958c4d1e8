"""The tiled CONV_2D (``cuda/conv2d_tiled.cu``, issue 24 item 1): an implicit GEMM over
shared-memory tiles, run here by the host shim's cooperative mode (a std::thread per GPU
thread, ``__syncthreads`` a barrier, ``__shared__`` poisoned at each block).

Specifications, at the tile edges (channels and pixels not a multiple of the tile, K not a
multiple of TILE_K, 1x1 and 7x7 filters, stride 2, dilation, groups, batch 1 and 128):
- each tiled variant returns the direct kernel's results: equal arrays, in float32 and float16,
  for inputs whose sums are exact in any order (kernel_twin.exact_values), so that the equality
  holds on a device too (its fused multiply-adds, flush-to-zero, a tensor core's order);
- its numpy twin (host emulation's launch) computes what the kernel computes (within
  kernel_twin.TWIN_TOLERANCE), with as many launches;
- the candidates' tables (``CONV2D_TACTICS``, ``DEPTHWISE_TACTICS``, ``MATMUL_TACTICS``) say
  which rows apply (the tiles need a finite filter and a patch that fits, the tensor cores
  float16 on sm_80+), and the partition stats record the row prepare chose
  (``kernel_variants`` counts them by kind, for ``litedelegate bench``); a model whose
  convolution is tiled equals the CPU kernels (TFLite's reference) on the emulated CUDA
  device. How a row is chosen is ``test_tactics.py``'s.
The direct kernel itself is checked against a float64 reference of TFLite's loop in
``test_conv_kernels.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_twin import assert_twin_matches, exact_values, run_both_ways

from backends.gpu import GpuDelegate, emulated_cuda_device
from backends.gpu.delegate import PartitionStats
from backends.gpu.device import DeviceCounters
from backends.gpu.cuda.conv2d import (
    CONV2D_TACTICS,
    Conv2DCuda,
    Conv2DGeometry,
    Conv2DMmaCuda,
    Conv2DProblem,
    Conv2DTiledCuda,
    Epilogue,
    conv2d_filter_layout,
    conv2d_launch_config,
    conv2d_tiled_launch_config,
)
from backends.gpu.cuda.depthwise import DEPTHWISE_TACTICS
from backends.gpu.cuda.matmul import MATMUL_TILES
from backends.gpu.placement import PlacementCache
from interpreter import Interpreter
from schema.builder import ModelBuilder
from schema.enums import ActivationFunctionType as Act
from schema.enums import BuiltinOperator as B
from schema.params import Conv2DParams

RNG = np.random.default_rng(2024)
#: The tiles of each kernel, as its table's rows have them: every row is checked here.
TILED = [tactic.options["tile"] for tactic in CONV2D_TACTICS if tactic.launcher is Conv2DTiledCuda]
MMA_TILES = [tactic.options["tile"] for tactic in CONV2D_TACTICS if tactic.launcher is Conv2DMmaCuda]
DEPTHWISE_TILES = [tactic.options["tile"] for tactic in DEPTHWISE_TACTICS if "tile" in tactic.options]

# (input shape, filter hw, groups, out channels per group, stride, dilation, padding)
EDGE_CASES = {
    "channels-not-a-multiple-of-the-tile": ((1, 9, 9, 17), (3, 3), 1, 33, 1, 1, "SAME"),
    "k-not-a-multiple-of-tile-k": ((1, 6, 7, 5), (3, 3), 1, 70, 1, 1, "VALID"),
    "1x1": ((2, 8, 8, 20), (1, 1), 1, 70, 1, 1, "SAME"),
    "7x7-stride-2": ((1, 12, 12, 3), (7, 7), 1, 24, 2, 1, "SAME"),
    "3x3-stride-2": ((1, 11, 11, 5), (3, 3), 1, 40, 2, 1, "SAME"),
    "dilated": ((1, 12, 12, 6), (3, 3), 1, 9, 1, 2, "SAME"),
    "dilated-strided-valid": ((2, 13, 12, 4), (3, 3), 1, 12, 2, (2, 3), "VALID"),
    "groups": ((1, 8, 8, 12), (3, 3), 3, 22, 1, 1, "SAME"),
    "groups-1x1": ((1, 5, 9, 8), (1, 1), 4, 3, 1, 1, "SAME"),
    "batch-1-fewer-pixels-than-a-tile": ((1, 3, 3, 4), (2, 2), 1, 5, 1, 1, "SAME"),
    "batch-128": ((128, 4, 4, 3), (3, 3), 1, 8, 1, 1, "SAME"),
}


def conv_inputs(shape, filter_hw, groups, group_out, storage):
    """Values whose sums are exact in any order (kernel_twin.exact_values): two kernels that add
    the same products agree bit for bit, on the shim and on a device."""
    x = exact_values(RNG, shape, storage)
    filters = exact_values(RNG, (groups * group_out, *filter_hw, shape[3] // groups))
    w = conv2d_filter_layout(filters, groups).astype(storage)
    b = exact_values(RNG, groups * group_out, storage)
    return x, w, b


@pytest.mark.parametrize("storage", [np.float32, np.float16])
@pytest.mark.parametrize("tile", TILED, ids=str)
@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_tiled_conv2d_equals_the_direct_kernel_and_its_twin(case, tile, storage):
    shape, filter_hw, groups, group_out, stride, dilation, padding = EDGE_CASES[case]
    x, w, b = conv_inputs(shape, filter_hw, groups, group_out, storage)
    tiled = run_both_ways(
        lambda **where: Conv2DTiledCuda(stride, dilation, padding, Act.RELU6, storage, tile=tile, **where),
        "conv2d_tiled.cu", [x, w, b],
    )
    direct = run_both_ways(
        lambda **where: Conv2DCuda(stride, dilation, padding, Act.RELU6, storage, **where), "conv2d.cu", [x, w, b]
    )
    np.testing.assert_array_equal(tiled.kernel[0], direct.kernel[0])
    assert_twin_matches(tiled)


@pytest.mark.parametrize("tile", TILED, ids=str)
def test_tiled_conv2d_without_bias_and_with_a_fused_epilogue_and_padding_matches_its_twin(tile):
    shape, filter_hw, groups, group_out = (2, 7, 6, 9), (3, 3), 1, 37
    x, w, _ = conv_inputs(shape, filter_hw, groups, group_out, np.float32)
    epilogue = Epilogue(residual_channels=30, add_bounds=(-1.5, 3.0), prelu=True, post_bounds=(-0.5, np.inf))
    pre = (2, 1, 0, 3)
    residual = exact_values(RNG, (2, 10, 9, 30))  # SAME over the 10x9 padded input
    alpha = (RNG.integers(0, 3, group_out) / 4).astype(np.float32)

    def make(launcher, **extra):
        return lambda **where: launcher(1, 1, "SAME", Act.NONE, np.float32, epilogue=epilogue, pre_padding=pre, **extra, **where)

    call = lambda launcher, x, w, r, a: launcher(x, w, None, residual=r, alpha=a)  # noqa: E731
    tiled = run_both_ways(make(Conv2DTiledCuda, tile=tile), "conv2d_tiled.cu", [x, w, residual, alpha], call)
    direct = run_both_ways(make(Conv2DCuda), "conv2d.cu", [x, w, residual, alpha], call)
    np.testing.assert_array_equal(tiled.kernel[0], direct.kernel[0])
    assert_twin_matches(tiled)


def test_tiled_conv2d_propagates_nan_inputs_as_the_direct_kernel():
    x, w, b = conv_inputs((1, 9, 9, 17), (3, 3), 1, 33, np.float32)
    x[0, 4, 4, 3] = np.nan
    x[0, 0, 0, 0] = np.inf
    tiled = run_both_ways(lambda **where: Conv2DTiledCuda(tile=(64, 64), **where), "conv2d_tiled.cu", [x, w, b])
    direct = run_both_ways(lambda **where: Conv2DCuda(**where), "conv2d.cu", [x, w, b])
    np.testing.assert_array_equal(tiled.kernel[0], direct.kernel[0])
    assert np.isnan(tiled.kernel[0]).any()


# -- which rows apply ----------------------------------------------------------------------------


def geometry(shape, filter_hw=(3, 3), group_out=16, groups=1):
    return Conv2DGeometry.of(shape, (groups, *filter_hw, shape[3] // groups, group_out), 1, 1, "SAME")


def applying(table, problem) -> list[str]:
    return [tactic.name for tactic in table if tactic.reason(problem) is None]


def conv_problem(g, storage="float32", finite_filter=True, compute_capability=90) -> Conv2DProblem:
    return Conv2DProblem(g, storage, finite_filter, None, compute_capability)


def test_every_float32_tile_that_fits_applies_to_a_finite_filter_below_the_fill_threshold():
    # 64 output channels, 8 x 8 pixels: 4,096 outputs (below tactics.FILL_OUTPUTS).
    assert applying(CONV2D_TACTICS, conv_problem(geometry((1, 8, 8, 16), group_out=64))) == [
        "direct", "tiled 64x64", "tiled 128x32", "tiled 32x32", "tiled 64x16", "tiled 32x16",
    ]


def test_a_tile_more_than_twice_as_wide_as_the_layer_s_channels_does_not_apply_and_says_why():
    problem = conv_problem(geometry((1, 8, 8, 16), group_out=16))
    assert applying(CONV2D_TACTICS, problem) == ["direct", "tiled 128x32", "tiled 32x32", "tiled 64x16", "tiled 32x16"]
    assert CONV2D_TACTICS[1].reason(problem) == "its tile of 64 channels is more than twice the layer's 16 per group"
    thin = conv_problem(geometry((1, 8, 8, 16), group_out=8, groups=2), "float16")  # 8 channels per group
    assert [name for name in applying(CONV2D_TACTICS, thin) if "x" in name] == [
        "tiled 64x16", "tiled 32x16", "mma 64x16", "mma 128x8",
    ]


def test_a_tile_whose_grid_leaves_the_gpu_emptier_than_the_direct_kernel_does_not_apply_to_a_large_layer():
    # 64 x 64 pixels of 16 channels: 65,536 outputs, 64 direct blocks.
    g = geometry((1, 64, 64, 8), group_out=16)
    assert conv2d_launch_config(g) == ((64, 1, 1), (256, 1, 1))
    problem = conv_problem(g, "float16")
    assert applying(CONV2D_TACTICS, problem) == ["direct", "tiled 32x32", "tiled 64x16", "tiled 32x16", "mma 64x16", "mma 128x8"]
    reasons = {tactic.name: tactic.reason(problem) for tactic in CONV2D_TACTICS}
    assert reasons["tiled 128x32"] == "its 32 blocks would leave the GPU emptier than the direct kernel's 64 (65536 outputs)"


def test_where_every_grid_fills_the_gpu_a_larger_tile_applies_again():
    # Batch 64: the direct kernel's 8,192 blocks and a 128x32 tile's 2,048 both more than the
    # 1,056 blocks of 256 threads an H200 holds (132 multiprocessors of 2,048 threads).
    g = geometry((64, 64, 64, 8), group_out=32)
    resident = 132 * 2048
    small = Conv2DProblem(geometry((1, 64, 64, 8), group_out=32), "float32", True, None, 90, resident_threads=resident)
    large = Conv2DProblem(g, "float32", True, None, 90, resident_threads=resident)
    assert "tiled 128x32" not in applying(CONV2D_TACTICS, small)
    assert "tiled 128x32" in applying(CONV2D_TACTICS, large)


def test_a_filter_with_inf_or_nan_leaves_only_the_direct_kernel_and_says_why():
    problem = conv_problem(geometry((1, 64, 64, 24), group_out=24), "float16", finite_filter=False)
    assert applying(CONV2D_TACTICS, problem) == ["direct"]
    reasons = {tactic.name: tactic.reason(problem) for tactic in CONV2D_TACTICS}
    assert "inf or NaN" in reasons["tiled 64x64"] and "inf or NaN" in reasons["mma 64x64"]


def test_the_tiled_grid_covers_every_output_once():
    g = geometry((3, 17, 9, 12), group_out=35, groups=2)
    for tactic in (t for t in CONV2D_TACTICS if "tile" in t.options):
        tile_m, tile_n = tactic.options["tile"]
        grid, block = conv2d_tiled_launch_config(g, (tile_m, tile_n))
        assert block == (256, 1, 1)
        assert grid[0] * tile_m >= 3 * 17 * 9 > (grid[0] - 1) * tile_m
        assert grid[1] == 2 * -(-35 // tile_n)
        assert tactic.launch_shape(conv_problem(g)) == (grid, block)


def timing_that_prefers(name: str):
    """An injected timing (``GpuDelegate(tactic_timing=...)``) where ``name`` is fastest."""
    return lambda trial: 1.0 if trial.tactic == name else 2.0


def conv_model(shape, out_channels, filter_value=None) -> bytes:
    rng = np.random.default_rng(7)
    builder = ModelBuilder()
    graph = builder.subgraph()
    w = rng.uniform(-1, 1, (out_channels, 3, 3, shape[3])).astype(np.float32)
    if filter_value is not None:
        w.reshape(-1)[5] = filter_value
    x = graph.add_input("x", list(shape))
    out = graph.add_tensor("out", [1])
    bias = graph.add_constant("b", rng.uniform(-1, 1, out_channels).astype(np.float32))
    graph.add_operator(B.CONV_2D, [x, graph.add_constant("w", w), bias], [out],
                       Conv2DParams(stride_h=1, stride_w=1, fused_activation_function=Act.RELU))
    graph.add_output(out)
    return builder.build()


@pytest.mark.parametrize("shape, out_channels, variant", [((2, 20, 21, 6), 24, "tiled 32x32"), ((1, 16, 15, 6), 40, "tiled 64x64")])
def test_a_tiled_convolution_in_a_model_equals_the_cpu_on_the_emulated_cuda_device(shape, out_channels, variant):
    model = conv_model(shape, out_channels)
    delegate = GpuDelegate(device=emulated_cuda_device(), tactic_timing=timing_that_prefers(variant), placement_cache=PlacementCache())
    interpreter = Interpreter(model_content=model)
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    x = RNG.uniform(-1, 1, shape).astype(np.float32)
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    ours = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    (stats,) = delegate.partition_stats()
    assert stats.kinds == (f"CONV_2D v1 [{variant}]",)
    reference = Interpreter(model_content=model)  # the CPU kernels: TFLite's reference
    reference.allocate_tensors()
    reference.set_tensor(reference.get_input_details()[0]["index"], x)
    reference.invoke()
    np.testing.assert_allclose(ours, reference.get_tensor(reference.get_output_details()[0]["index"]), rtol=1e-5, atol=1e-5)


def test_the_partition_stats_record_the_direct_choice_for_a_non_finite_filter():
    delegate = GpuDelegate(device="host", tactic_timing=timing_that_prefers("tiled 64x64"), placement_cache=PlacementCache())
    interpreter = Interpreter(model_content=conv_model((1, 40, 40, 6), 24, filter_value=np.inf))
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    (stats,) = delegate.partition_stats()
    assert stats.kinds == ("CONV_2D v1 [direct]",)
    assert stats.kernels == ("CONV_2D v1 (node 0) [direct 2.0 µs]",)  # the only row that applies: no runner-up


def stats_with_kernels(*labels: str) -> PartitionStats:  # (labels only: their kinds are counted from them)
    return PartitionStats(0, tuple(range(len(labels))), DeviceCounters(), DeviceCounters(), 0, None, "off", 0, labels)


def test_kernel_variants_count_the_steps_by_their_labels_without_node_indices():
    stats = stats_with_kernels(
        "CONV_2D v1 (node 0) [tiled 128x32]", "fused: DEPTHWISE_CONV_2D v2 (node 1) + ADD v1 (node 2) [direct]",
        "CONV_2D v1 (node 3) [tiled 128x32]", "MEAN v1 (node 4)",
    )
    assert stats.kernel_variants() == [
        ("CONV_2D v1 [tiled 128x32]", 2), ("MEAN v1", 1), ("fused: DEPTHWISE_CONV_2D v2 + ADD v1 [direct]", 1),
    ]


def test_kernel_variants_put_the_most_frequent_first_and_ties_in_name_order():
    stats = stats_with_kernels(
        "SOFTMAX v1 (node 0)", "CONV_2D v1 (node 1) [direct]", "CONV_2D v1 (node 2) [tiled 64x64]",
        "CONV_2D v1 (node 3) [tiled 64x64]", "ADD v1 (node 4)",
    )
    assert [kernel for kernel, _ in stats.kernel_variants()] == [
        "CONV_2D v1 [tiled 64x64]", "ADD v1", "CONV_2D v1 [direct]", "SOFTMAX v1",
    ]


# -- DEPTHWISE_CONV_2D with shared-memory input tiles ------------------------------------------------

# (input shape, filter hw, multiplier, stride, dilation, padding)
DEPTHWISE_EDGE_CASES = {
    "channels-not-a-multiple-of-16": ((1, 11, 10, 21), (3, 3), 1, 1, 1, "SAME"),
    "multiplier-2": ((1, 9, 9, 7), (3, 3), 2, 1, 1, "SAME"),
    "5x5-stride-2": ((1, 17, 18, 16), (5, 5), 1, 2, 1, "SAME"),
    "3x3-stride-2-valid": ((2, 16, 15, 5), (3, 3), 1, 2, 1, "VALID"),
    "dilation-2": ((1, 12, 13, 6), (3, 3), 1, 1, 2, "SAME"),
    "dilation-and-stride": ((1, 14, 14, 3), (3, 3), 1, (2, 1), (2, 3), "SAME"),
    "1x1": ((1, 9, 7, 18), (1, 1), 1, 1, 1, "VALID"),
    "7x7": ((1, 10, 10, 4), (7, 7), 1, 1, 1, "SAME"),
    "batch-1-fewer-pixels-than-a-tile": ((1, 3, 5, 2), (3, 3), 1, 1, 1, "SAME"),
    "batch-128": ((128, 3, 3, 17), (3, 3), 1, 1, 1, "SAME"),
}


@pytest.mark.parametrize("storage", [np.float32, np.float16])
@pytest.mark.parametrize("tile", DEPTHWISE_TILES)
@pytest.mark.parametrize("case", list(DEPTHWISE_EDGE_CASES))
def test_tiled_depthwise_equals_the_direct_kernel_and_its_twin(case, tile, storage):
    from backends.gpu.cuda.depthwise import DepthwiseConv2DCuda, DepthwiseConv2DTiledCuda

    shape, filter_hw, multiplier, stride, dilation, padding = DEPTHWISE_EDGE_CASES[case]
    x = exact_values(RNG, shape, storage)
    w = exact_values(RNG, (1, *filter_hw, shape[3] * multiplier), storage)
    b = exact_values(RNG, shape[3] * multiplier, storage)
    tiled = run_both_ways(
        lambda **where: DepthwiseConv2DTiledCuda(stride, dilation, padding, Act.RELU6, storage, tile=tile, **where),
        "depthwise_conv2d_tiled.cu", [x, w, b],
    )
    direct = run_both_ways(
        lambda **where: DepthwiseConv2DCuda(stride, dilation, padding, Act.RELU6, storage, **where),
        "depthwise_conv2d.cu", [x, w, b],
    )
    np.testing.assert_array_equal(tiled.kernel[0], direct.kernel[0])
    assert_twin_matches(tiled)


@pytest.mark.parametrize("tile", DEPTHWISE_TILES)
def test_tiled_depthwise_with_a_fused_epilogue_and_padding_matches_its_twin_and_the_fused_direct_kernel(tile):
    from backends.gpu.cuda.depthwise import DepthwiseConv2DFusedCuda, DepthwiseConv2DTiledCuda

    x = exact_values(RNG, (2, 10, 9, 20))
    w = exact_values(RNG, (1, 3, 3, 20))
    epilogue = Epilogue(residual_channels=12, add_bounds=(-2.0, 2.0), prelu=True, post_bounds=(-0.25, np.inf))
    pre = (1, 2, 0, 1)
    residual = exact_values(RNG, (2, 13, 10, 12))
    alpha = (RNG.integers(0, 3, 20) / 4).astype(np.float32)

    def make(launcher, **extra):
        return lambda **where: launcher(1, 1, "SAME", Act.NONE, np.float32, epilogue=epilogue, pre_padding=pre, **extra, **where)

    call = lambda launcher, x, w, r, a: launcher(x, w, None, residual=r, alpha=a)  # noqa: E731
    tiled = run_both_ways(make(DepthwiseConv2DTiledCuda, tile=tile), "depthwise_conv2d_tiled.cu", [x, w, residual, alpha], call)
    direct = run_both_ways(make(DepthwiseConv2DFusedCuda), "depthwise_conv2d.cu", [x, w, residual, alpha], call)
    np.testing.assert_array_equal(tiled.kernel[0], direct.kernel[0])
    assert_twin_matches(tiled)


def depthwise_rows(shape, filter_hw, stride=1, dilation=1, fused=False):
    from backends.gpu.cuda.depthwise import DepthwiseGeometry, DepthwiseProblem

    g = DepthwiseGeometry.of(shape, (1, *filter_hw, shape[3]), stride, dilation, "SAME")
    return applying(DEPTHWISE_TACTICS, DepthwiseProblem(g, "float32", fused, None))


def test_the_depthwise_tiles_apply_where_a_tile_s_input_patch_fits():
    # 24 channels of 16 x 16 pixels (stride 1): 6,144 outputs, below tactics.FILL_OUTPUTS.
    assert depthwise_rows((1, 16, 16, 24), (3, 3)) == ["direct", "tiled 8x8x16", "tiled 4x4x16"]
    assert depthwise_rows((1, 16, 16, 24), (5, 5), stride=2) == ["direct", "tiled 8x8x16", "tiled 4x4x16"]  # 19x19, 11x11
    assert depthwise_rows((1, 16, 16, 24), (7, 7), stride=2) == ["direct"]  # 21x21 and 13x13: larger than the patches
    assert depthwise_rows((1, 16, 16, 24), (3, 3), dilation=8) == ["direct"]
    assert depthwise_rows((1, 8, 8, 24), (3, 3), fused=True) == ["direct fused", "tiled 8x8x16", "tiled 4x4x16"]


def test_a_depthwise_tile_that_leaves_the_gpu_emptier_than_the_direct_kernel_does_not_apply_to_a_large_layer():
    # 64 x 64 pixels of 24 channels: 98,304 outputs, 384 direct blocks of 256; 8 x 8 tiles
    # of 16 channels: 128 blocks; 4 x 4 tiles: 512.
    assert depthwise_rows((1, 64, 64, 24), (3, 3)) == ["direct", "tiled 4x4x16"]


# -- FULLY_CONNECTED / BATCH_MATMUL: the tiled product ------------------------------------------------

# (a shape, b shape, adjoint_a, adjoint_b, bias)
MATMUL_EDGE_CASES = {
    "not-multiples-of-the-tile": ((70, 37), (37, 65), False, False, True),
    "k-below-a-tile-step": ((33, 5), (5, 17), False, False, True),
    "one-row": ((1, 40), (40, 90), False, False, True),
    "batched-adjoint-a": ((3, 21, 66), (3, 21, 18), True, False, False),
    "batched-adjoint-b-shared-a": ((1, 30, 19), (4, 50, 19), False, True, False),
    "batch-128": ((128, 3, 8), (128, 8, 20), False, False, False),
}


@pytest.mark.parametrize("storage", [np.float32, np.float16])
@pytest.mark.parametrize("tile", MATMUL_TILES, ids=str)
@pytest.mark.parametrize("case", list(MATMUL_EDGE_CASES))
def test_tiled_matmul_equals_the_direct_kernel_and_its_twin(case, tile, storage):
    from backends.gpu.cuda.matmul import MatmulBiasActivationCuda, MatmulBiasActivationTiledCuda

    a_shape, b_shape, adjoint_a, adjoint_b, with_bias = MATMUL_EDGE_CASES[case]
    a = exact_values(RNG, a_shape, storage)
    b = exact_values(RNG, b_shape, storage)
    n = b_shape[-2] if adjoint_b else b_shape[-1]
    bias = exact_values(RNG, n, storage) if with_bias else None
    call = lambda launcher, a, b, bias: launcher(a, b, bias, adjoint_a=adjoint_a, adjoint_b=adjoint_b)  # noqa: E731
    activation = Act.RELU if with_bias else None
    tiled = run_both_ways(
        lambda **where: MatmulBiasActivationTiledCuda(activation, storage, tile=tile, **where), "matmul_tiled.cu", [a, b, bias], call
    )
    direct = run_both_ways(lambda **where: MatmulBiasActivationCuda(activation, storage, **where), "matmul.cu", [a, b, bias], call)
    np.testing.assert_array_equal(tiled.kernel[0], direct.kernel[0])
    assert_twin_matches(tiled)


# -- float16 on tensor cores (conv2d_mma.cu) ----------------------------------------------------------
# The host shim emulates mma.sync m16n8k16 from the PTX ISA's fragment layout, so the kernel must
# give the direct kernel's halves exactly: a wrong fragment load shows as a wrong result. A GPU's
# tensor core adds each step's products in its own order, which the exact inputs make harmless:
# the equality holds there too.

MMA_CASES = ["channels-not-a-multiple-of-the-tile", "k-not-a-multiple-of-tile-k", "1x1", "7x7-stride-2",
             "dilated-strided-valid", "groups", "batch-128"]


@pytest.mark.parametrize("tile", MMA_TILES, ids=str)
@pytest.mark.parametrize("case", MMA_CASES)
def test_tensor_core_conv2d_equals_the_direct_kernel_on_the_shim_and_its_twin(case, tile):
    shape, filter_hw, groups, group_out, stride, dilation, padding = EDGE_CASES[case]
    x, w, b = conv_inputs(shape, filter_hw, groups, group_out, np.float16)
    mma = run_both_ways(
        lambda **where: Conv2DMmaCuda(stride, dilation, padding, Act.RELU6, np.float16, tile=tile, **where),
        "conv2d_mma.cu", [x, w, b],
    )
    direct = run_both_ways(
        lambda **where: Conv2DCuda(stride, dilation, padding, Act.RELU6, np.float16, **where), "conv2d.cu", [x, w, b]
    )
    np.testing.assert_array_equal(mma.kernel[0], direct.kernel[0])
    assert_twin_matches(mma)


@pytest.mark.parametrize("tile", MMA_TILES, ids=str)
def test_tensor_core_conv2d_with_a_fused_epilogue_matches_its_twin(tile):
    x, w, _ = conv_inputs((2, 7, 6, 9), (3, 3), 1, 37, np.float16)
    epilogue = Epilogue(residual_channels=30, add_bounds=(-1.5, 3.0), prelu=True, post_bounds=(-0.5, np.inf))
    residual = exact_values(RNG, (2, 10, 9, 30), np.float16)
    alpha = (RNG.integers(0, 3, 37) / 4).astype(np.float16)
    call = lambda launcher, x, w, r, a: launcher(x, w, None, residual=r, alpha=a)  # noqa: E731
    mma = run_both_ways(
        lambda **where: Conv2DMmaCuda(1, 1, "SAME", Act.NONE, np.float16, epilogue=epilogue, pre_padding=(2, 1, 0, 3), tile=tile, **where),
        "conv2d_mma.cu", [x, w, residual, alpha], call,
    )
    assert_twin_matches(mma)


def test_the_tensor_cores_apply_to_float16_from_sm_80_and_never_to_float32():
    g = geometry((1, 8, 8, 24), group_out=64)
    mma = [name for name in applying(CONV2D_TACTICS, conv_problem(g, "float16", compute_capability=80)) if "mma" in name]
    assert mma == ["mma 64x64", "mma 64x16", "mma 128x8"]
    assert not [name for name in applying(CONV2D_TACTICS, conv_problem(g, "float16", compute_capability=75)) if "mma" in name]
    assert not [name for name in applying(CONV2D_TACTICS, conv_problem(g, "float32", compute_capability=90)) if "mma" in name]


@pytest.mark.parametrize("case", list(MATMUL_EDGE_CASES))
def test_tensor_core_matmul_equals_the_direct_kernel_on_the_shim_and_its_twin(case):
    from backends.gpu.cuda.matmul import MatmulBiasActivationCuda, MatmulBiasActivationMmaCuda

    a_shape, b_shape, adjoint_a, adjoint_b, with_bias = MATMUL_EDGE_CASES[case]
    a = exact_values(RNG, a_shape, np.float16)
    b = exact_values(RNG, b_shape, np.float16)
    n = b_shape[-2] if adjoint_b else b_shape[-1]
    bias = exact_values(RNG, n, np.float16) if with_bias else None
    call = lambda launcher, a, b, bias: launcher(a, b, bias, adjoint_a=adjoint_a, adjoint_b=adjoint_b)  # noqa: E731
    activation = Act.RELU if with_bias else None
    mma = run_both_ways(lambda **where: MatmulBiasActivationMmaCuda(activation, np.float16, **where), "matmul_mma.cu", [a, b, bias], call)
    direct = run_both_ways(lambda **where: MatmulBiasActivationCuda(activation, np.float16, **where), "matmul.cu", [a, b, bias], call)
    np.testing.assert_array_equal(mma.kernel[0], direct.kernel[0])
    assert_twin_matches(mma)


def test_float16_products_may_take_tensor_cores_from_sm_80():
    from backends.gpu.cuda.matmul import MATMUL_TACTICS, NO_CLAMP, MatmulProblem, MatmulShape

    def rows(storage, compute_capability):
        problem = MatmulProblem(MatmulShape.of((256, 64), (64, 256)), False, NO_CLAMP, storage, compute_capability)
        return [name for name in applying(MATMUL_TACTICS, problem) if not name.startswith("cuBLAS")]

    assert rows("float16", 80) == ["direct", "tiled 64x64", "tiled 32x32", "mma 64x64"]
    assert rows("float16", 75) == ["direct", "tiled 64x64", "tiled 32x32"]
    assert rows("float32", 90) == ["direct", "tiled 64x64", "tiled 32x32"]
