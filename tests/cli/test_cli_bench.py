"""``litedelegate bench``: per-op and per-partition profiles, and the LiteRT comparison."""

from __future__ import annotations

import importlib.util

from cli_helpers import DWCONV_DIL2


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
