"""Rows per second of a batch job: a plain loop of ``invoke`` against the local engine and
Ray with 1 and 2 workers, on the CPU path and on ``gpu-host`` (and ``gpu`` where CUDA is).

    python benchmarks/batch_throughput.py                      # face detection, 2,000 inputs
    python benchmarks/batch_throughput.py --inputs 200 --delegates none --runs loop,local

The inputs are ``.npy`` files written once to a temporary directory; every runner reads
them, runs the model on one BLAS thread per interpreter (``num_threads=1``) and writes the
outputs to one Parquet file:

- ``loop``: what one writes by hand: ``np.load``, ``set_tensor``, ``invoke``,
  ``get_tensor`` per file, then the rows written at the end (the same Parquet writer);
- ``local``: ``run_batch(engine="local")`` (reads a batch ahead in a thread, writes as it goes);
- ``ray1``/``ray2``: ``run_batch(engine="ray", workers=1 or 2)`` on a local Ray cluster of
  all CPUs, started once before (its start is not timed).

Two figures per run: rows over the whole job (workers' start included), and the steady
rate after the first batch came back (the rows after it over the time after it), which
is what a long job sees. The runs go round ``--rounds`` times, each round every run in
turn, and the medians are reported, so that a machine whose load changes over minutes
weighs on every run alike. Timings compare only within one run on one machine.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

FACE_DETECTION = ROOT / "tests" / "data" / "models" / "real" / "mp_face_detection_short_range.tflite"
RUNS = ("loop", "local", "ray1", "ray2")


def write_inputs(model: pathlib.Path, count: int, directory: pathlib.Path) -> list[str]:
    from interpreter import Interpreter

    interpreter = Interpreter(model_path=str(model))
    interpreter.allocate_tensors()
    (detail,) = interpreter.get_input_details()
    rng = np.random.default_rng(0)
    paths = []
    for i in range(count):
        path = directory / f"input_{i:05d}.npy"
        np.save(path, rng.uniform(-1, 1, detail["shape"]).astype(detail["dtype"]))
        paths.append(str(path))
    return paths


def make_delegate(kind: str):
    from backends.gpu import GpuDelegate

    return {"none": lambda: None, "gpu-host": lambda: GpuDelegate(device="host"), "gpu": lambda: GpuDelegate()}[kind]()


def plain_loop(model: pathlib.Path, delegate: str, paths: list[str], output: pathlib.Path) -> tuple[float, float]:
    """(seconds for the whole loop, seconds after the first row)."""
    from interpreter import Interpreter
    from interpreter.batch.predictor import OutputSpec
    from interpreter.batch.results import ResultWriter

    start = time.perf_counter()
    interpreter = Interpreter(model_path=str(model), num_threads=1)
    if delegate != "none":
        interpreter.modify_graph_with_delegate(make_delegate(delegate))
    interpreter.allocate_tensors()
    (detail,) = interpreter.get_input_details()
    outputs = interpreter.get_output_details()
    rows: dict[str, list[np.ndarray]] = {d["name"]: [] for d in outputs}
    first = None
    for path in paths:
        interpreter.set_tensor(detail["index"], np.load(path))
        interpreter.invoke()
        for d in outputs:
            rows[d["name"]].append(interpreter.get_tensor(d["index"])[0])
        first = first or time.perf_counter()
    specs = [OutputSpec(d["name"], d["index"], rows[d["name"]][0].dtype, rows[d["name"]][0].shape, True) for d in outputs]
    writer = ResultWriter(output, specs)
    writer.write_rows(paths, {name: np.stack(values) for name, values in rows.items()})
    writer.close()
    end = time.perf_counter()
    return end - start, end - first


def engine_run(model: pathlib.Path, delegate: str, paths: list[str], output: pathlib.Path, engine: str,
               batch_size: int, workers: int | None) -> tuple[float, float, int]:
    """(seconds for the job, seconds after the first batch came back, rows of that batch)."""
    from interpreter.batch import run_batch

    seen: list[tuple[float, int]] = []
    summary = run_batch(model, paths, output, engine=engine, delegate=delegate, batch_size=batch_size, workers=workers,
                        num_threads=1, progress=lambda rows, errors, total: seen.append((time.perf_counter(), rows)))
    assert summary.complete, summary
    first_time, first_rows = seen[1]  # seen[0] is the call at the start
    return summary.seconds, seen[-1][0] - first_time, first_rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=pathlib.Path, default=FACE_DETECTION)
    parser.add_argument("--inputs", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--delegates", default=None, help="comma-separated: none, gpu-host, gpu (default: none,gpu-host, "
                        "and gpu where CUDA is)")
    parser.add_argument("--runs", default=",".join(RUNS), help=f"comma-separated, of {', '.join(RUNS)}")
    parser.add_argument("--rounds", type=int, default=2, help="times every run is made, in turn (default 2); medians")
    args = parser.parse_args()
    runs = args.runs.split(",")
    if args.delegates is None:
        from interpreter.batch.local import visible_gpus

        delegates = ["none", "gpu-host"] + (["gpu"] if visible_gpus() else [])
    else:
        delegates = args.delegates.split(",")
    print(f"model: {args.model.name}; {args.inputs} inputs; batch size {args.batch_size}; one BLAS thread per interpreter; "
          f"{os.cpu_count()} CPUs; load average {', '.join(f'{v:.1f}' for v in os.getloadavg())}")
    results = []
    with tempfile.TemporaryDirectory(prefix="batch_throughput_") as scratch:
        scratch = pathlib.Path(scratch)
        (scratch / "inputs").mkdir()
        paths = write_inputs(args.model, args.inputs, scratch / "inputs")
        if any(run.startswith("ray") for run in runs):
            from interpreter.batch.ray_engine import init_ray

            init_ray(num_cpus=os.cpu_count())
        rates: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for round_ in range(args.rounds):
            for delegate in delegates:
                for run in runs:
                    output = scratch / f"{delegate}_{run}.parquet"
                    if run == "loop":
                        total, steady = plain_loop(args.model, delegate, paths, output)
                        steady_rows = len(paths) - 1
                    else:
                        engine, workers = ("local", None) if run == "local" else ("ray", int(run[3:]))
                        total, steady, first_rows = engine_run(args.model, delegate, paths, output, engine, args.batch_size,
                                                               workers)
                        steady_rows = len(paths) - first_rows
                    rates.setdefault((delegate, run), []).append((len(paths) / total, steady_rows / steady))
                    print(f"  round {round_ + 1}: {delegate:8s} {run:5s}: {len(paths) / total:7.1f} rows/s over the job, "
                          f"{steady_rows / steady:7.1f} after the first batch; load average {os.getloadavg()[0]:.1f}",
                          flush=True)
        for (delegate, run), values in rates.items():
            results.append((delegate, run, float(np.median([v[0] for v in values])), float(np.median([v[1] for v in values]))))
    print()
    print(f"medians of {args.rounds} round(s)")
    print("| delegate | run | rows/s (job) | rows/s (after the first batch) | job vs loop |")
    print("|---|---|---:|---:|---:|")
    loops = {delegate: rate for delegate, run, rate, _ in results if run == "loop"}
    for delegate, run, rate, steady in results:
        ratio = f"{rate / loops[delegate]:.2f}x" if delegate in loops else ""
        print(f"| {delegate} | {run} | {rate:.1f} | {steady:.1f} | {ratio} |")
    rays = {(delegate, run): steady for delegate, run, _, steady in results if run.startswith("ray")}
    for delegate in delegates:
        if (delegate, "ray1") in rays and (delegate, "ray2") in rays:
            print(f"{delegate}: Ray 2 workers / 1 worker, after the first batch: "
                  f"{rays[(delegate, 'ray2')] / rays[(delegate, 'ray1')]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
