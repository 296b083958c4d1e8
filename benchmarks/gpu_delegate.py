"""Benchmark the GPU delegate against the CPU interpreter and ai-edge-litert, in one run.

    python benchmarks/gpu_delegate.py [--runs 30] [--host] [MODEL ...]

For each model: the median invoke time of the CPU interpreter, of ``GpuDelegate()``
(CUDA graphs on, after warm-up) and of LiteRT (XNNPACK, one thread, when installed); the
ratios; and from the delegate's own counters, per partition, the device time of its ops
between two CUDA events (median over the runs) and what one invoke moves across the bus.
Without a CUDA device it says so and measures host emulation (``--host`` asks for it),
which shows the delegate's own overhead, not a GPU. ``benchmarks/device_check.py`` is
the full check for a GPU machine.
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


def timed(interpreter, runs: int, after_each=None) -> float:
    """Median seconds of ``invoke()`` after three warm-up invokes (the delegate captures
    its graphs at the second)."""
    interpreter.allocate_tensors()
    rng = np.random.default_rng(0)
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], rng.uniform(-1, 1, tuple(detail["shape"])).astype(detail["dtype"]))
    for _ in range(3):
        interpreter.invoke()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        interpreter.invoke()
        times.append(time.perf_counter() - start)
        if after_each is not None:
            after_each()
    return statistics.median(times)


def litert_seconds(path: pathlib.Path, runs: int) -> float | None:
    try:
        from ai_edge_litert.interpreter import Interpreter as LiteRT
    except ImportError:
        return None
    return timed(LiteRT(model_path=str(path), num_threads=1), runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=pathlib.Path)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--host", action="store_true", help="measure host emulation even where a GPU is present")
    args = parser.parse_args(argv)
    device, label = "host", "host emulation"
    if not args.host:
        try:
            GpuDelegate(device=0)
            device, label = 0, "CUDA device 0"
        except GpuUnavailableError as error:
            print(f"The GPU part did not run: {error}")
            print("Benchmarking host emulation instead (numpy standing in for the device).\n")
    print(f"{'model':34s} {'cpu ms':>8s} {'gpu ms':>8s} {'litert ms':>9s} {'gpu/cpu':>8s} {'gpu/litert':>10s}  per partition: device ms, bytes moved")
    for path in args.models or default_models():
        cpu = timed(Interpreter(model_path=str(path)), args.runs)
        delegate = GpuDelegate(device=device)
        interpreter = Interpreter(model_path=str(path))
        interpreter.modify_graph_with_delegate(delegate)
        device_ms: dict[int, list[float]] = {}

        def collect() -> None:
            for stats in delegate.partition_stats():
                device_ms.setdefault(stats.partition, []).append(stats.device_ms)

        gpu = timed(interpreter, args.runs, collect)
        litert = litert_seconds(path, args.runs)
        ratio_litert = f"{gpu / litert:10.2f}" if litert else f"{'n/a':>10s}"
        partitions = ", ".join(
            f"#{s.partition}: {statistics.median(device_ms[s.partition]):.3f} ms, {s.last_invoke.transfer_bytes} B"
            for s in delegate.partition_stats()
        )
        print(f"{path.stem:34s} {cpu * 1e3:8.2f} {gpu * 1e3:8.2f} {(litert or 0) * 1e3:9.2f} {gpu / cpu:8.2f} {ratio_litert}  {partitions}")
    print(f"\n(gpu = GpuDelegate on {label}, CUDA graphs on; ratios below 1 mean the delegate is faster;"
          " device ms: the partition's ops between two CUDA events)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
