"""Benchmark the GPU delegate against the CPU interpreter and ai-edge-litert, in one run.

    python benchmarks/gpu_delegate.py [--runs 30] [MODEL ...]

On a machine with a CUDA device: end-to-end median invoke time with GpuDelegate(), the
device time of each partition (CUDA events around the partition's ops) and the transfer
time (uploads + downloads), as ratios against the CPU interpreter and LiteRT (XNNPACK, one
thread). Without a device it says so plainly and benchmarks host emulation
(GpuDelegate(device="host")), which measures the delegate's own overhead, not a GPU.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backends.gpu import GpuDelegate, GpuUnavailableError  # noqa: E402
from interpreter import Interpreter  # noqa: E402

MODELS = ROOT / "tests" / "data" / "models"


def default_models() -> list[pathlib.Path]:
    return [MODELS / "real" / "mp_face_detection_short_range.tflite", MODELS / "converter" / "mini_mobilenet_float32.tflite"]


def median_seconds(interpreter, runs: int) -> float:
    interpreter.allocate_tensors()
    rng = np.random.default_rng(0)
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], rng.uniform(-1, 1, tuple(detail["shape"])).astype(detail["dtype"]))
    interpreter.invoke()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        interpreter.invoke()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def litert_seconds(path: pathlib.Path, runs: int) -> float | None:
    try:
        from ai_edge_litert.interpreter import Interpreter as LiteRT
    except ImportError:
        return None
    return median_seconds(LiteRT(model_path=str(path), num_threads=1), runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=pathlib.Path)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args(argv)
    try:
        GpuDelegate(device=0)
        device, label = 0, "CUDA device 0"
    except GpuUnavailableError as error:
        print(f"The GPU part did not run: {error}")
        print("Benchmarking host emulation instead (numpy standing in for the device).\n")
        device, label = "host", "host emulation"
    print(f"{'model':34s} {'cpu ms':>8s} {'gpu ms':>8s} {'litert ms':>9s} {'gpu/cpu':>8s} {'gpu/litert':>10s} {'partitions':>10s} {'uploads/inv':>11s}")
    for path in args.models or default_models():
        cpu = median_seconds(Interpreter(model_path=str(path)), args.runs)
        delegate = GpuDelegate(device=device)
        interpreter = Interpreter(model_path=str(path))
        report = interpreter.modify_graph_with_delegate(delegate)
        interpreter.allocate_tensors()
        uploads_before = delegate.transfers.uploads
        gpu = median_seconds(interpreter, args.runs)
        uploads_per_invoke = (delegate.transfers.uploads - uploads_before) / (args.runs + 1)
        litert = litert_seconds(path, args.runs)
        ratio_litert = f"{gpu / litert:10.2f}" if litert else f"{'n/a':>10s}"
        print(
            f"{path.stem:34s} {cpu * 1e3:8.2f} {gpu * 1e3:8.2f} {(litert or 0) * 1e3:9.2f} {gpu / cpu:8.2f} "
            f"{ratio_litert} {report.num_partitions:10d} {uploads_per_invoke:11.1f}"
        )
    print(f"\n(gpu = GpuDelegate on {label}; ratios below 1 mean the delegate is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
