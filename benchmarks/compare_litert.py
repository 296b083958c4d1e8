"""Benchmark litedelegate against ai-edge-litert on the same models, in one run.

    python benchmarks/compare_litert.py [--kind float32|int8|all] [--real] [--runs 50]
                                        [--rounds 1] [--no-ref] [--statistic median|min]
                                        [--clock wall|cpu] [MODEL ...]

For every model: median invoke time of litedelegate, of LiteRT with its default kernels
(XNNPACK), and of LiteRT's reference kernels (BUILTIN_REF), all on one thread, and the
ratios ours/XNNPACK and ours/REF (below 1 means litedelegate is faster). Ends with the
geometric means (of float32 and int8 models apart when both are listed). ``--real``
takes only tests/data/models/real (the converter's one-op models are left out);
``--rounds N`` measures every runtime N times, interleaved (ours, XNNPACK, REF, ours,
...), and keeps the median of each one's rounds (``--statistic min``: the least
disturbed round): on a machine shared with other work the load then falls on all alike. Timings are only ever compared within one run on one machine.
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

MODELS_DIR = ROOT / "tests" / "data" / "models"


def default_models(kind: str, real_only: bool = False) -> list[pathlib.Path]:
    models = [] if real_only else sorted(MODELS_DIR.glob("converter/*.tflite"))
    models += sorted(MODELS_DIR.glob("real/*.tflite"))
    if kind == "all":
        return models
    return [m for m in models if ("int8" in m.stem) == (kind == "int8")]


def inputs_for(interpreter, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    values = []
    for detail in interpreter.get_input_details():
        dtype, shape = np.dtype(detail["dtype"]), tuple(detail["shape"])
        if dtype.kind == "f":
            values.append(rng.uniform(-1, 1, shape).astype(dtype))
        else:
            values.append(rng.integers(-128, 128, shape).astype(dtype))
    return values


#: what the invokes are timed with (``--clock cpu``: this process's CPU time, immune to
#: preemption on a machine shared with other work; both runtimes run on one thread)
CLOCK = time.perf_counter


def median_invoke_seconds(interpreter, runs: int) -> float:
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs_for(interpreter)):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()  # warm-up
    times = []
    deadline = time.perf_counter() + 20.0
    clock = CLOCK
    for _ in range(runs):
        start = clock()
        interpreter.invoke()
        times.append(clock() - start)
        if time.perf_counter() > deadline and len(times) >= 5:
            break
    return statistics.median(times)


def litert(path: pathlib.Path, reference: bool):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kind = OpResolverType.BUILTIN_REF if reference else OpResolverType.AUTO
    return Interpreter(model_path=str(path), num_threads=1, experimental_op_resolver_type=kind)


def ours(path: pathlib.Path):
    from interpreter import Interpreter

    return Interpreter(model_path=str(path), num_threads=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=pathlib.Path)
    parser.add_argument("--kind", choices=["float32", "int8", "all"], default="float32")
    parser.add_argument("--real", action="store_true", help="only the real models (tests/data/models/real)")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=1, help="interleaved measurements of each runtime")
    parser.add_argument("--no-ref", action="store_true", help="skip BUILTIN_REF (slow on large models)")
    parser.add_argument("--statistic", choices=["median", "min"], default="median",
                        help="how the rounds' medians combine: min keeps each runtime's least disturbed round "
                             "(for a machine shared with other work)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = parser.parse_args(argv)
    global CLOCK
    CLOCK = time.perf_counter if args.clock == "wall" else time.process_time
    models = args.models or default_models(args.kind, args.real)
    header = f"{'model':40s} {'ours ms':>9s} {'xnnpack ms':>10s} {'ref ms':>9s} {'ours/xnn':>9s} {'ours/ref':>9s}"
    print(header)
    print("-" * len(header))
    ratios_xnn, ratios_ref, names = [], [], []
    for path in models:
        runner = "litedelegate"
        try:
            runtimes = [ours(path)]
            runner = "LiteRT"  # (MediaPipe's custom ops, which only litedelegate runs)
            runtimes.append(litert(path, reference=False))
            if not args.no_ref:
                runtimes.append(litert(path, reference=True))
            runner = "either runtime"
            times = [[] for _ in runtimes]
            for _ in range(max(1, args.rounds)):
                for position, runtime in enumerate(runtimes):
                    times[position].append(median_invoke_seconds(runtime, args.runs))
        except Exception as error:  # a model a runtime cannot run is reported, not hidden
            print(f"{path.stem:40s} not run by {runner}: {type(error).__name__}: {str(error).splitlines()[0]}")
            continue
        combine = min if args.statistic == "min" else statistics.median
        t_ours, t_xnn = combine(times[0]), combine(times[1])
        t_ref = combine(times[2]) if not args.no_ref else float("nan")
        ratios_xnn.append(t_ours / t_xnn)
        ratios_ref.append(t_ours / t_ref)
        names.append(path.stem)
        print(
            f"{path.stem:40s} {t_ours * 1e3:9.3f} {t_xnn * 1e3:10.3f} {t_ref * 1e3:9.3f} "
            f"{t_ours / t_xnn:9.2f} {t_ours / t_ref:9.2f}"
        )
    if ratios_xnn:
        geomean = lambda values: float(np.exp(np.mean(np.log(values)))) if values else float("nan")  # noqa: E731
        print("-" * len(header))
        groups = {"": range(len(names))}
        kinds = {"int8": [i for i, n in enumerate(names) if "int8" in n], "float": [i for i, n in enumerate(names) if "int8" not in n]}
        if all(kinds.values()):
            groups = {f" ({kind}, {len(members)} models)": members for kind, members in kinds.items()} | groups
        for label, members in groups.items():
            print(
                f"{('geometric mean of ratios' + label):71s} {geomean([ratios_xnn[i] for i in members]):9.2f} "
                f"{geomean([ratios_ref[i] for i in members]):9.2f}"
            )
        slower = [name for name, r in zip(names, ratios_ref) if r >= 1]
        if not args.no_ref:
            print(f"models slower than BUILTIN_REF: {', '.join(slower) if slower else 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
