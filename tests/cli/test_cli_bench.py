"""``litedelegate bench``: per-op and per-partition profiles, the GPU delegate's kernels per
partition (as its ``PartitionStats`` report them), and the LiteRT comparison."""

from __future__ import annotations

import importlib.util
import re

import numpy as np

from backends.gpu import GpuDelegate
from backends.gpu.delegate import PartitionStats
from backends.gpu.placement import PlacementCache
from cli_helpers import DWCONV_DIL2, MINI_MOBILENET_FLOAT
from interpreter import Interpreter
from interpreter.example_model import build_example_model
from schema.builder import ModelBuilder
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding
from schema.params import Conv2DParams

#: The GPU delegate on host emulation without CONV_2D: the example model in three partitions.
NO_CONV_ON_GPU_HOST = f"backends.gpu:GpuDelegate:device='host',excluded_ops=[{int(BuiltinOperator.CONV_2D)}]"


def test_cpu_profile_of_the_example_covers_every_node(cli):
    result = cli("bench", "--runs", "3", "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert data["runs"] == 3 and data["litert"] is None
    assert len(data["steps"]) == 8 and data["partitions"] == []
    assert sum(op["nodes"] for op in data["ops"]) == 8
    assert {op["op"] for op in data["ops"]} >= {"DEPTHWISE_CONV_2D v1", "DEPTHWISE_CONV_2D v2", "CONV_2D v1"}
    assert abs(sum(op["share"] for op in data["ops"]) - 1) < 1e-6
    assert data["profiled_invoke"]["median_ms"] > 0


def test_a_delegated_model_is_profiled_per_partition(cli):
    result = cli("bench", DWCONV_DIL2, "--delegate", "gpu-host", "--runs", "3", "--json")
    assert result.returncode == 0, result.stderr
    data = result.json()
    (partition,) = data["partitions"]
    assert (partition["delegate"], partition["nodes"], partition["node_indices"]) == ("GpuDelegate", 2, [0, 1])
    assert data["ops"] == []


def test_the_gpu_delegates_device_counters_are_shown_per_partition(cli):
    result = cli("bench", DWCONV_DIL2, "--delegate", "gpu-host", "--runs", "3", "--json")
    device = result.json()["partitions"][0]["device"]
    assert device["graph"] == "replaying" and device["device_ms_median"] > 0
    last = device["last_invoke"]  # after warm-up: one graph replay, the input up, the output down, one sync
    assert (last["graph_replays"], last["uploads"], last["downloads"], last["synchronizations"], last["pool_allocations"]) == (1, 1, 1, 1, 0)
    text = cli("bench", DWCONV_DIL2, "--delegate", "gpu-host", "--runs", "2").stdout
    assert "device counters per invoke" in text and "replaying" in text


def test_text_output_with_the_litert_comparison(cli):
    result = cli("bench", DWCONV_DIL2, "--runs", "3", "--compare-litert")
    assert result.returncode == 0, result.stderr
    assert "CPU time per op" in result.stdout and "DEPTHWISE_CONV_2D v2" in result.stdout
    if importlib.util.find_spec("ai_edge_litert") is None:
        assert "ai-edge-litert: not installed" in result.stdout
    else:
        assert "LiteRT XNNPACK" in result.stdout and "LiteRT BUILTIN_REF" in result.stdout


def test_bench_refuses_a_model_without_kernels_in_one_line(cli, built_models):
    result = cli("bench", built_models["custom_op"], "--runs", "2")
    assert result.returncode == 1
    assert len(result.error_lines) == 1 and "UnsupportedOperatorError" in result.error_lines[0]


# -- the kernels each GPU partition runs ------------------------------------------------------------

def gpu_host_partition_stats(model: bytes, **options) -> list[PartitionStats]:
    """``GpuDelegate(device="host", **options)``'s own stats for ``model``, prepared in this process."""
    delegate = GpuDelegate(device="host", **options)
    interpreter = Interpreter(model_content=model, num_threads=1)
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    return delegate.partition_stats()


def convolution_chain_model() -> bytes:
    """Three float CONV_2D, each with several candidate kernels; on host emulation each takes the
    first of its table (``tactics.py``: no times there), so one kind runs three times."""
    rng = np.random.default_rng(3)
    builder = ModelBuilder()
    graph = builder.subgraph("main")
    y = graph.add_input("x", (1, 40, 40, 6))
    for k, out_channels in enumerate((24, 24, 40)):
        filters = rng.uniform(-1, 1, (out_channels, 3, 3, 24 if k else 6)).astype(np.float32)
        out = graph.add_tensor(f"conv{k}", (1, 40, 40, out_channels))
        graph.add_operator(
            BuiltinOperator.CONV_2D,
            [y, graph.add_constant(f"w{k}", filters), graph.add_constant(f"b{k}", rng.uniform(-1, 1, out_channels).astype(np.float32))],
            [out],
            Conv2DParams(padding=Padding.SAME, stride_w=1, stride_h=1, fused_activation_function=ActivationFunctionType.RELU),
        )
        y = out
    graph.add_output(y)
    return builder.build()


def kernel_lines(text: str) -> dict[int, str]:
    """bench's "partition N kernels: ..." lines, by partition."""
    return {int(m[1]): m[2] for m in re.finditer(r"^partition (\d+) kernels: (.*)$", text, re.MULTILINE)}


def test_the_json_lists_each_steps_kernel_as_partition_stats_kernels(cli):
    (stats,) = gpu_host_partition_stats(MINI_MOBILENET_FLOAT.read_bytes())
    result = cli("bench", MINI_MOBILENET_FLOAT, "--delegate", "gpu-host", "--runs", "2", "--json")
    assert result.returncode == 0, result.stderr
    (partition,) = result.json()["partitions"]
    assert partition["device"]["kernels"] == list(stats.kernels)


def test_the_json_counts_the_kernel_variants_as_partition_stats_kernel_variants(cli, tmp_path):
    model = convolution_chain_model()
    (stats,) = gpu_host_partition_stats(model)
    assert stats.kernel_variants() == [("CONV_2D v1 [direct]", 3)]
    (tmp_path / "convs.tflite").write_bytes(model)
    result = cli("bench", tmp_path / "convs.tflite", "--delegate", "gpu-host", "--runs", "2", "--json")
    assert result.returncode == 0, result.stderr
    (partition,) = result.json()["partitions"]
    expected = [{"kernel": kernel, "count": count} for kernel, count in stats.kernel_variants()]
    assert partition["device"]["kernel_variants"] == expected


def test_the_text_prints_the_counted_kernel_variants_of_the_partition(cli):
    (stats,) = gpu_host_partition_stats(MINI_MOBILENET_FLOAT.read_bytes())
    result = cli("bench", MINI_MOBILENET_FLOAT, "--delegate", "gpu-host", "--runs", "2")
    assert result.returncode == 0, result.stderr
    expected = ", ".join(f"{kernel} x{count}" for kernel, count in stats.kernel_variants())
    assert kernel_lines(result.stdout) == {0: expected}


def test_each_partition_prints_its_own_kernels(cli):
    stats = gpu_host_partition_stats(build_example_model(), excluded_ops=[BuiltinOperator.CONV_2D])
    result = cli("bench", "--delegate", NO_CONV_ON_GPU_HOST, "--runs", "2")
    assert result.returncode == 0, result.stderr
    assert len(stats) == 3
    assert kernel_lines(result.stdout) == {
        s.partition: ", ".join(f"{kernel} x{count}" for kernel, count in s.kernel_variants()) for s in stats
    }


def test_a_cpu_only_bench_prints_no_kernels(cli):
    result = cli("bench", DWCONV_DIL2, "--runs", "2")
    assert result.returncode == 0, result.stderr
    assert "kernels per partition" not in result.stdout and kernel_lines(result.stdout) == {}


def test_bench_and_analyze_show_the_kernel_each_node_chose_and_its_candidates(cli, tmp_path):
    (tmp_path / "convs.tflite").write_bytes(convolution_chain_model())
    delegate = GpuDelegate(device="host", placement_cache=PlacementCache())  # as a new process: nothing cached
    interpreter = Interpreter(model_content=convolution_chain_model())
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    expected = delegate.tactic_report()
    assert [line.split(":")[0] for line in expected] == [f"CONV_2D v1 (node {n})" for n in range(3)]
    bench = cli("bench", tmp_path / "convs.tflite", "--delegate", "gpu-host", "--runs", "2", "--json")
    assert bench.returncode == 0, bench.stderr
    assert bench.json()["tactics"] == expected
    text = cli("bench", tmp_path / "convs.tflite", "--delegate", "gpu-host", "--runs", "2")
    assert all(f"  {line}" in text.stdout.splitlines() for line in expected)
    analyze = cli("analyze", tmp_path / "convs.tflite", "--delegate", "gpu-host", "--json")
    assert analyze.returncode == 0, analyze.stderr
    assert analyze.json()["tactics"] == expected
