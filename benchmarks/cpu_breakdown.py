"""Where the CPU path's time goes, node by node, and inside each convolution.

    python benchmarks/cpu_breakdown.py [--runs 200] [--top 25] [MODEL ...]

Default models: tests/data/models/real/*.tflite. On one thread (BLAS included), each
plan step of the main subgraph is timed on its own (median of ``--runs`` calls, after
one whole invoke with random inputs, in plan order: the arena keeps a tensor until its
last reader, so each step's inputs hold that invoke's values). Printed per model:

- the time between steps: the whole invoke minus the sum of its steps, each step timed
  in place during interleaved rounds (medians), per invoke and per step; and the
  invoke's own cost per step, measured with its steps replaced by no-ops (the thread
  limit, the checks and the loop alone);
- the time per op type (sum of the steps' medians, each step timed alone, and its share);
- for each CONV_2D / DEPTHWISE_CONV_2D (float32 or int8), the step's phases, each
  timed alone on the kernel's own buffers (the bound closure's variables):
  ``guard`` (the float kernels' overflow check), ``gather`` (the input into the padded
  float buffer, and im2col), ``matmul`` (the BLAS call, or the depthwise einsum),
  ``requant`` (the int8 output stage, or the float bias and clamp), ``store`` (the
  output stage's last copy into the output and its sign flip, timed alone and taken out
  of ``requant``), and ``fixed`` (the step minus its phases: the call and Python cost);
- ``floor``: one float32 BLAS call of the convolution's [M, K] x [K, N] shape plus one
  pass over its output (a float32 -> int8 / float32 copy of the output's size), the
  target of issue 26; and ``x floor``, the step over that floor. No BLAS call fits a
  depthwise node: its floor is one pass over its output (``x floor`` then reads as
  passes over the output).
- a step that runs ``invoke`` (not a bound closure) is marked ``invoke``: its phases
  are not split. A node prepared at invoke (it reads a dynamic tensor) shows the bound
  function it runs once its buffers hold steady.

Timings are noisy on a shared machine: every figure is the median of single timed calls. Compare figures only within one run.
"""

from __future__ import annotations

import argparse
import inspect
import pathlib
import statistics
import sys
import time
from collections import defaultdict
from typing import Callable

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODELS_DIR = ROOT / "tests" / "data" / "models" / "real"
CONVOLUTIONS = ("CONV_2D", "DEPTHWISE_CONV_2D")


def median_seconds(function: Callable[[], object], runs: int) -> float:
    """Median of ``runs`` timed calls (after 3 warm-up calls): a median, not a mean, so
    that the other processes' preemptions on a shared machine drop out."""
    for _ in range(3):
        function()
    clock = time.perf_counter
    times = []
    for _ in range(max(1, runs)):
        start = clock()
        function()
        times.append(clock() - start)
    return statistics.median(times)


def closure_of(function: Callable) -> dict:
    try:
        return dict(inspect.getclosurevars(function).nonlocals)
    except (TypeError, ValueError):
        return {}


def copies_phase(copies) -> Callable[[], None]:
    def gather() -> None:
        for target, source in copies:
            target[...] = source

    return gather


def store_phase(finish: Callable) -> Callable[[], None] | None:
    """The last copy of ``FloatOutputStage.finish`` (into the output, then the sign flip)."""
    names = closure_of(finish)
    target, t, integers, sign_bit = names.get("target"), names.get("t"), names.get("integers"), names.get("sign_bit")
    if target is None and names.get("out") is not None and t is not None:  # (the path that floors t)
        target, sign_bit = names["out"], None
    if target is None or t is None:
        return None
    source = integers if integers is not None else t

    def store() -> None:
        target[...] = source
        if sign_bit is not None:
            np.bitwise_xor(target, sign_bit, out=target)

    return store


def find_finish(requantize: Callable) -> Callable | None:
    """The ``finish`` closure inside a ``FloatOutputStage.from_sums`` function (or itself)."""
    names = closure_of(requantize)
    if "target" in names or "floor" in names:
        return requantize
    inner = names.get("finish")
    return inner if callable(inner) else None


def conv_phases(step: Callable) -> dict[str, Callable[[], object]] | None:
    """The phases of a bound convolution step, from its closure; None if not recognised."""
    names = closure_of(step)
    phases: dict[str, Callable[[], object]] = {}
    if "squares" in names and "flat" in names:  # float kernels: the overflow guard
        squares, flat = names["squares"], names["flat"]
        phases["guard"] = lambda: squares(flat)
    copies = list(names.get("copies", ()))
    if copies and not isinstance(copies[0], tuple):  # the float kernels: the padded input's interiors
        x = names.get("source_x", names.get("x"))
        copies = [(interior, x) for interior in copies]
    if names.get("target") is not None and "source" in names:  # (the float CONV_2D's im2col)
        copies.append((names["target"], names["source"]))
    phases["gather"] = copies_phase(copies)
    if "dot" in names and "columns" in names and "weights" in names:
        dot, columns, weights = names["dot"], names["columns"], names["weights"]
        out = names.get("sums", names.get("t", names.get("rows", names.get("products"))))
        if out is None:
            return None
        phases["matmul"] = lambda: dot(columns, weights, out=out)
    elif "einsum" in names and "taps" in names:  # int8 depthwise
        einsum, subscripts, runs, taps, rows = names["einsum"], names["subscripts"], names["runs"], names["taps"], names["sum_rows"]
        phases["matmul"] = lambda: einsum(subscripts, runs, taps, out=rows)
    elif "taps" in names and "weights" in names:  # float depthwise
        from backends.cpu.kernels import depthwise_conv2d as module

        taps, weights = names["taps"], names["weights"]
        if "wide" in names:
            out, subscripts = names["wide"], module._FLAT_SUBSCRIPTS
        else:
            out, subscripts = names["rows"], module._SUBSCRIPTS
        phases["matmul"] = lambda: module._einsum(subscripts, taps, weights, out=out)
    else:
        return None
    requantize = names.get("requantize", names.get("finish"))
    if requantize is not None:  # int8: FloatOutputStage
        phases["requant"] = requantize
        finish = find_finish(requantize)
        store = store_phase(finish) if finish is not None else None
        if store is not None:
            phases["store"] = store
    else:  # float: bias and clamp (and the flat layout's copy of the real columns)
        add, bias, clamp = names.get("add"), names.get("bias"), names.get("clamp")
        rows = names.get("wide", names.get("rows"))
        wide_rows, real_rows = names.get("wide_rows"), names.get("rows")

        bias_rows = names.get("bias_rows", rows)  # (the float CONV_2D: long rows for the bias)

        def epilogue() -> None:
            if bias is not None:
                add(bias_rows, bias, out=bias_rows)
            if clamp is not None:
                clamp()

        phases["requant"] = epilogue
        if wide_rows is not None:

            def store() -> None:
                real_rows[...] = wide_rows

            phases["store"] = store
    return phases


def conv_floor(kernel, out: np.ndarray, op_name: str, runs: int) -> float:
    """One float32 BLAS call of the node's [M, K] x [K, N] (CONV_2D) plus one pass over its
    output (float32 -> the output's type)."""
    seconds = 0.0
    if op_name == "CONV_2D" and hasattr(kernel, "rows") and hasattr(kernel, "depth"):
        rows, depth, channels = int(kernel.rows), int(kernel.depth), int(getattr(kernel, "out_channels", out.shape[-1]))
        a = np.ones((rows, depth), np.float32)
        b = np.ones((depth, channels), np.float32)
        c = np.empty((rows, channels), np.float32)
        seconds += median_seconds(lambda: np.dot(a, b, out=c), runs)
    source = np.zeros(out.shape, np.float32)
    seconds += median_seconds(lambda: np.copyto(out, source, casting="unsafe"), runs)
    return seconds


def random_feed(interpreter) -> None:
    rng = np.random.default_rng(0)
    for detail in interpreter.get_input_details():
        dtype, shape = np.dtype(detail["dtype"]), tuple(detail["shape"])
        value = rng.uniform(-1, 1, shape) if dtype.kind == "f" else rng.integers(-128, 128, shape)
        interpreter.set_tensor(detail["index"], value.astype(dtype))


def between_steps(interpreter, runs: int) -> tuple[float, float]:
    """(whole invoke, sum of its steps), each from ``runs`` interleaved rounds: one timed
    invoke, then the same steps run in plan order, each timed where it runs (its inputs
    just written, as in the invoke). Medians: the whole invoke's, and the sum of each
    step's. Their difference is what the invoke costs besides its steps (the loop, the
    thread limit, the checks before the first step)."""
    steps = invoked_steps(interpreter._main)
    clock = time.perf_counter
    wholes, per_step = [], [[] for _ in steps]
    invoke = interpreter.invoke
    for _ in range(max(1, runs)):
        start = clock()
        invoke()
        wholes.append(clock() - start)
        for times, step in zip(per_step, steps):
            start = clock()
            step()
            times.append(clock() - start)
    return statistics.median(wholes), sum(statistics.median(times) for times in per_step)


def loop_overhead(interpreter, runs: int) -> float:
    """Seconds per step that the invoke spends besides its steps, measured directly: the
    whole invoke with every step replaced by a no-op (the thread limit, the checks and
    the loop), minus the no-ops' own calls, over the number of steps (the least of
    ``runs`` timings: short enough that a preemption rarely lands in one)."""
    subgraph = interpreter._main
    saved, saved_steady = subgraph._step_functions, subgraph._steady
    noop = lambda: None  # noqa: E731
    subgraph._step_functions = [noop] * len(saved)
    if saved_steady is not None:  # (the steady plan: its functions replaced, its guards kept)
        subgraph._steady = ([noop] * len(saved_steady[0]), *saved_steady[1:])
    try:
        clock = time.perf_counter
        best = noops = float("inf")
        for _ in range(max(1, runs)):
            start = clock()
            interpreter.invoke()
            best = min(best, clock() - start)
            start = clock()
            for step in subgraph._step_functions:
                step()
            noops = min(noops, clock() - start)
    finally:
        subgraph._step_functions, subgraph._steady = saved, saved_steady
    return (best - noops) / max(len(saved), 1)


def invoked_steps(subgraph) -> list[Callable]:
    """The functions an invoke runs: the steady plan's (a subgraph whose nodes prepared at
    invoke all run their bound functions: ``SubgraphRuntime._steady_plan``), else the steps."""
    steady = subgraph._steady
    return list(steady[0]) if steady is not None else list(subgraph._step_functions)


def unwrapped(step: Callable) -> Callable:
    """The kernel's bound function inside the step of a node prepared at invoke (it reads
    a dynamic tensor), once its buffers held steady; else the step itself."""
    if "_reprepared_step" in getattr(step, "__qualname__", ""):
        steady = closure_of(step).get("steady")
        if steady and steady[0] is not None:
            return steady[0]
    return step


def breakdown(path: pathlib.Path, runs: int, top: int) -> None:
    from interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path), num_threads=1)
    interpreter.allocate_tensors()
    random_feed(interpreter)
    subgraph = interpreter._main
    started = time.perf_counter()
    for _ in range(3):
        interpreter.invoke()  # (a node prepared at invoke binds once its buffers hold)
    whole, steps_sum = between_steps(interpreter, min(runs, 200))
    interpreter.invoke()  # then each step in plan order: its inputs hold this invoke's values
    count_steps = len(subgraph._steps)
    print(f"\n== {path.stem}: {whole * 1e3:.3f} ms per invoke (median), {count_steps} steps")
    print(f"between steps: {(whole - steps_sum) * 1e6:.1f} us per invoke, {(whole - steps_sum) / max(count_steps, 1) * 1e6:.2f} us "
          f"per step (the whole invoke {whole * 1e6:.1f} us minus its steps {steps_sum * 1e6:.1f} us, each timed in place: "
          f"medians, which a loaded machine's preemptions inflate for the longer whole invoke); the invoke's own cost: "
          f"{loop_overhead(interpreter, min(runs, 200)) * 1e6:.2f} us per step (its steps replaced by no-ops)")
    per_op: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    rows = []
    for node_index, step in subgraph._profile_steps:
        if step is None:
            continue
        node, registration = subgraph.get_node_and_registration(node_index)
        op_name = registration.op_name
        seconds = median_seconds(step, runs)
        per_op[op_name] += seconds
        count[op_name] += 1
        if op_name not in CONVOLUTIONS:
            continue
        kernel = node.user_data
        out = subgraph.tensors[node.outputs[0]].data
        step = unwrapped(step)
        name = getattr(step, "__qualname__", type(step).__name__)
        bound = "<locals>" in name
        phases = conv_phases(step) if bound else None
        timed = {key: median_seconds(function, runs) for key, function in (phases or {}).items()}
        if "store" in timed and "requant" in timed and timed["requant"] > timed["store"] and op_name != "x":
            if subgraph.tensors[node.outputs[0]].dtype != np.float32:  # (int8: the store is inside requant)
                timed["requant"] -= timed["store"]
        floor = conv_floor(kernel, out, op_name, runs)
        path_name = name.split(".<locals>")[0].split(".")[-1] + ("." + name.split(".")[-1] if bound else "")
        rows.append((node_index, op_name, subgraph.tensors[node.outputs[0]].type_name, tuple(out.shape),
                     path_name if bound else "invoke", seconds, timed, floor))
    total = sum(per_op.values())
    print(f"{'op':22s} {'nodes':>5s} {'us':>9s} {'share':>6s}")
    for op_name, seconds in sorted(per_op.items(), key=lambda item: -item[1]):
        print(f"{op_name:22s} {count[op_name]:5d} {seconds * 1e6:9.1f} {seconds / total:6.1%}")
    print(f"{'sum of steps':22s} {sum(count.values()):5d} {total * 1e6:9.1f}   (each step timed alone, warm; "
          f"whole invoke {whole * 1e6:.1f} us)")
    if not rows:
        return
    keys = ("guard", "gather", "matmul", "requant", "store")
    header = (f"{'node':>4s} {'op':6s} {'type':7s} {'output':18s} {'path':28s} {'total':>7s} "
              + " ".join(f"{k:>7s}" for k in keys) + f" {'fixed':>7s} {'floor':>7s} {'x floor':>7s}")
    print("\nconvolutions, microseconds (largest first):")
    print(header)
    sums = defaultdict(float)
    for node_index, op_name, type_name, shape, path_name, seconds, timed, floor in sorted(rows, key=lambda r: -r[5])[:top]:
        fixed = seconds - sum(timed.values()) if timed else float("nan")
        cells = " ".join(f"{timed[k] * 1e6:7.1f}" if k in timed else f"{'-':>7s}" for k in keys)
        short = "CONV" if op_name == "CONV_2D" else "DW"
        print(f"{node_index:4d} {short:6s} {type_name:7s} {str(list(shape)):18s} {path_name[:28]:28s} {seconds * 1e6:7.1f} "
              f"{cells} {fixed * 1e6:7.1f} {floor * 1e6:7.1f} {seconds / floor:7.1f}")
    for _, _, _, _, _, seconds, timed, floor in rows:
        sums["total"] += seconds
        sums["floor"] += floor
        for key, value in timed.items():
            sums[key] += value
        if timed:
            sums["fixed"] += seconds - sum(timed.values())
    print(f"all {len(rows)} convolutions: total {sums['total'] * 1e6:.1f} us = "
          + ", ".join(f"{k} {sums[k] * 1e6:.1f}" for k in (*keys, "fixed") if k in sums)
          + f"; floor {sums['floor'] * 1e6:.1f} us ({sums['total'] / sums['floor']:.1f}x)")
    print(f"(measured in {time.perf_counter() - started:.1f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=pathlib.Path)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--top", type=int, default=25, help="convolutions listed per model (largest first)")
    args = parser.parse_args(argv)
    from backends.cpu.common import set_blas_threads

    set_blas_threads(1)
    one = np.zeros(1)
    call = median_seconds(lambda: np.add(one, one, out=one), 1000)
    print(f"one numpy ufunc call on 1 value: {call * 1e6:.2f} us (the floor of every numpy call)")
    for path in args.models or sorted(MODELS_DIR.glob("*.tflite")):
        breakdown(path, args.runs, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
