"""Device operations per delegated node of the int8 models on the emulated device (issue 23).

    python benchmarks/int8_kernels_per_node.py [MODEL ...]

For every model (default: the int8 models of tests/data/models), what
``litedelegate bench --delegate gpu-host`` prints as "kernels per node", over the GPU
partitions of the last profiled invoke: CUDA-graph nodes with graphs on, eager launches
with graphs off, and the host-emulation invoke time (graphs on). The issue's target is
at most 1.25 device operations per delegated node, graphs on and off. Host emulation
times say how fast the numpy twins run, not how fast a GPU would.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from compare_litert import default_models  # noqa: E402

GRAPHS_OFF = "backends.gpu.delegate:GpuDelegate:device='host',cuda_graphs=False"
TARGET = 1.25


def bench(path: pathlib.Path, delegate: str) -> dict:
    command = [sys.executable, "-m", "interpreter", "bench", str(path), "--delegate", delegate, "--runs", "10", "--json"]
    return json.loads(subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout)


def operations_per_node(result: dict) -> tuple[int, int]:
    """(device operations, delegated nodes) over the GPU partitions of the last invoke."""
    operations = nodes = 0
    for partition in result["partitions"]:
        device = partition.get("device")
        if device is None:
            continue
        last = device["last_invoke"]
        operations += (last["kernel_launches"] if device["counts_launches"] else 0) + last["graph_nodes"]
        nodes += partition["nodes"]
    return operations, nodes


def main(argv: list[str]) -> int:
    models = [pathlib.Path(a) for a in argv] or default_models("int8")
    print(f"{'model':45s} {'graphs on':>15s} {'graphs off':>15s} {'host ms':>8s}")
    worst = 0.0
    for path in models:
        on = bench(path, "gpu-host")
        off = bench(path, GRAPHS_OFF)
        cells = []
        for result in (on, off):
            operations, nodes = operations_per_node(result)
            ratio = operations / max(nodes, 1)
            worst = max(worst, ratio)
            cells.append(f"{operations}/{nodes} = {ratio:.2f}")
        print(f"{path.stem:45s} {cells[0]:>15s} {cells[1]:>15s} {on['profiled_invoke']['median_ms']:8.3f}", flush=True)
    print(f"\nmost device operations per delegated node: {worst:.2f} (target: at most {TARGET})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
