"""The default thread count on a loaded machine: face detection beside one busy process.

    python benchmarks/threads_under_load.py [--runs 200] [--rounds 3] [--model PATH]

Starts one process that spins on a core (a pure-Python loop) and, beside it, times the
model's invoke (median of ``--runs``) in a fresh process for each setting: no
``num_threads`` (the default), ``num_threads=1``, and ``num_threads=<cores>`` (every
core, what OpenBLAS does on its own). Each setting runs ``--rounds`` times, interleaved,
and keeps its best median. Then the same without the busy process. Printed: the
milliseconds and each setting's ratio to ``num_threads=1`` (issue 34: the default within
10% of it beside one busy process). On a machine shared with other work the figures
carry that load too.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / "tests" / "data" / "models" / "real" / "mp_face_detection_short_range.tflite"

TIMER = """
import json, statistics, sys, time
sys.path.insert(0, {root!r})
import numpy as np
from interpreter import Interpreter
kwargs = {kwargs}
interpreter = Interpreter(model_path={model!r}, **kwargs)
interpreter.allocate_tensors()
for detail in interpreter.get_input_details():
    interpreter.set_tensor(detail["index"], np.zeros(detail["shape"], detail["dtype"]))
for _ in range(5):
    interpreter.invoke()
times = []
for _ in range({runs}):
    start = time.perf_counter()
    interpreter.invoke()
    times.append(time.perf_counter() - start)
print(json.dumps(statistics.median(times)))
"""


def spin() -> None:  # pragma: no cover - runs in the busy process
    while True:
        pass


def median_invoke(model: pathlib.Path, num_threads: int | None, runs: int) -> float:
    kwargs = {} if num_threads is None else {"num_threads": num_threads}
    code = TIMER.format(root=str(ROOT), kwargs=kwargs, model=str(model), runs=runs)
    environment = {key: value for key, value in os.environ.items() if not key.startswith("OPENBLAS")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environment)
    return json.loads(result.stdout.strip().splitlines()[-1])


def measure(model: pathlib.Path, settings: list, runs: int, rounds: int) -> dict:
    best = {setting: float("inf") for setting in settings}
    for _ in range(rounds):
        for setting in settings:
            best[setting] = min(best[setting], median_invoke(model, setting, runs))
    return best


def report(title: str, best: dict) -> None:
    one = best[1]
    print(title)
    for setting, seconds in best.items():
        name = "default (no num_threads)" if setting is None else f"num_threads={setting}"
        print(f"  {name:28s} {seconds * 1e3:8.3f} ms  {seconds / one:5.2f}x num_threads=1")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=pathlib.Path, default=DEFAULT_MODEL)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    settings = [None, 1] + ([cores] if cores > 1 else [])
    print(f"{args.model.stem}, {cores} cores; median of {args.runs} invokes, best of {args.rounds} rounds")
    busy = multiprocessing.Process(target=spin, daemon=True)
    busy.start()
    try:
        time.sleep(0.5)
        report("beside one busy process:", measure(args.model, settings, args.runs, args.rounds))
    finally:
        busy.terminate()
        busy.join()
    report("alone:", measure(args.model, settings, args.runs, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
