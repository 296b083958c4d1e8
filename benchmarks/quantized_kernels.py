"""Per-node timings of the quantized models, to find the kernels worth speeding up.

    python benchmarks/quantized_kernels.py [--runs 100] [MODEL ...]

For every model (default: the int8 models of tests/data/models), the median time of each
plan step over ``--runs`` profiled invokes (``Interpreter.invoke_profiled``), with the
op, its version, the kernel class and the output shape; then the sum of the medians.
Timings include the profiler's own overhead (about a microsecond per step) and are only
comparable within one run on one machine.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from compare_litert import default_models, inputs_for  # noqa: E402


def profile(path: pathlib.Path, runs: int) -> list[tuple[float, str]]:
    from interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path), num_threads=1)
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs_for(interpreter)):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()  # warm-up (binds cached views)
    times: dict[int, list[float]] = collections.defaultdict(list)
    names: dict[int, str] = {}
    for _ in range(runs):
        for step in interpreter.invoke_profiled():
            times[step["index"]].append(step["seconds"])
            names[step["index"]] = f"{step['op_name']} v{step['version']}"
    rows = []
    for index, samples in times.items():
        kernel = interpreter._main.nodes[index].user_data
        outputs = getattr(kernel, "outputs", None)
        shape = tuple(outputs[0].shape) if outputs else ()
        label = f"{index:3d} {names[index]:26s} {type(kernel).__name__:28s} {shape}"
        rows.append((statistics.median(samples), label))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=pathlib.Path)
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args(argv)
    for path in args.models or default_models("int8"):
        rows = profile(path, args.runs)
        print(f"== {path.stem}")
        for seconds, label in rows:
            print(f"  {seconds * 1e6:9.1f} us  {label}")
        print(f"  {sum(s for s, _ in rows) * 1e6:9.1f} us  total")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
