"""``litedelegate bench MODEL``: time a model, per op and per partition, optionally against LiteRT.

Every timed run is ``Interpreter.invoke_profiled()``: one time per plan step (a CPU node,
or a whole delegate partition). ``--compare-litert`` also times plain ``invoke()`` of
litedelegate and of ai-edge-litert on one thread with its default kernels (XNNPACK) and
its reference kernels (BUILTIN_REF), as ``benchmarks/compare_litert.py`` does. Timings are
only comparable within one run on one machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

from interpreter.cli.common import (
    DELEGATE_HELP,
    DELEGATE_METAVAR,
    PLACEMENT_HELP,
    UsageError,
    load_model,
    make_delegate,
    placement_lines,
    tactic_lines,
    set_inputs,
)
from interpreter.cli.output import Printer, Styled, Table, print_json, progress


def add_parser(commands, parents) -> None:
    parser = commands.add_parser(
        "bench", parents=parents, help="time a model per op and per partition (optionally against LiteRT)",
        description="Run a model N times with Interpreter.invoke_profiled() and print the time per op and per "
        "delegate partition; --compare-litert adds ai-edge-litert (one thread, XNNPACK and BUILTIN_REF).",
    )
    parser.add_argument("model", nargs="?", help="a .tflite file (default: the shipped example model)")
    parser.add_argument("--delegate", default="none", metavar=DELEGATE_METAVAR, help="as for run: " + DELEGATE_HELP)
    parser.add_argument("--runs", type=int, default=50, help="timed runs (default 50), after one warm-up (two with the GPU delegate, which captures its CUDA graphs at the second)")
    parser.add_argument("--compare-litert", action="store_true", help="also time ai-edge-litert when it is installed")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--placement", choices=("all", "auto"), default="all", help=PLACEMENT_HELP)
    parser.add_argument("--json", action="store_true", help="print the timings as JSON")
    parser.set_defaults(handler=main)


def _stats(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "median_ms": statistics.median(ordered) * 1e3,
        "mean_ms": statistics.fmean(ordered) * 1e3,
        "min_ms": ordered[0] * 1e3,
        "p90_ms": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))] * 1e3,
    }


def _timed(invoke: Callable[[], Any], runs: int, description: str) -> list[float]:
    invoke()  # warm-up
    times = []
    for _ in progress(range(runs), runs, description):
        start = time.perf_counter()
        invoke()
        times.append(time.perf_counter() - start)
    return times


def main(args: argparse.Namespace) -> int:
    from interpreter import Interpreter

    if args.runs < 1:
        raise UsageError("--runs must be at least 1")
    choice = make_delegate(args.delegate, placement=args.placement)
    loaded = load_model(args.model)
    interpreter = Interpreter(model_content=loaded.data, num_threads=1)
    if choice.delegate is not None:  # a delegate that fails in prepare raises DelegatePrepareError
        interpreter.modify_graph_with_delegate(choice.delegate)
    interpreter.allocate_tensors()
    set_inputs(interpreter, {}, args.seed)

    device_stats = getattr(choice.delegate, "partition_stats", None)  # the GPU delegate's counters
    for _ in range(2 if device_stats else 1):  # warm-up (the GPU delegate captures its graphs at invoke 2)
        interpreter.invoke_profiled()
    steps: dict[int, dict[str, Any]] = {}
    totals = []
    device_ms: dict[int, list[float]] = {}
    for _ in progress(range(args.runs), args.runs, "profiling"):
        total = 0.0
        for step in interpreter.invoke_profiled():
            entry = steps.setdefault(step["index"], {**step, "times": []})
            entry["times"].append(step["seconds"])
            total += step["seconds"]
        totals.append(total)
        for stats in device_stats() if device_stats else ():
            if stats.device_ms is not None:
                device_ms.setdefault(stats.partition, []).append(stats.device_ms)

    step_rows = []
    for position, (index, entry) in enumerate(steps.items()):
        median = statistics.median(entry["times"])
        step_rows.append({
            "step": position, "plan_index": index, "op": entry["op_name"], "version": entry["version"],
            "delegate": entry["delegate"], "nodes": entry["replaces"], "median_ms": median * 1e3,
        })
    whole = sum(r["median_ms"] for r in step_rows) or 1e-12
    by_op: dict[str, dict[str, Any]] = {}
    for row in step_rows:
        if row["delegate"]:
            continue
        entry = by_op.setdefault(f"{row['op']} v{row['version']}", {"op": f"{row['op']} v{row['version']}", "nodes": 0, "median_ms": 0.0})
        entry["nodes"] += 1
        entry["median_ms"] += row["median_ms"]
    ops = sorted(by_op.values(), key=lambda e: -e["median_ms"])
    partitions = [
        {"partition": k, "delegate": r["delegate"], "nodes": len(r["nodes"]), "node_indices": r["nodes"], "median_ms": r["median_ms"]}
        for k, r in enumerate(r for r in step_rows if r["delegate"])
    ]
    for entry in (*ops, *partitions):
        entry["share"] = entry["median_ms"] / whole
    for stats in device_stats() if device_stats else ():
        if stats.partition < len(partitions):
            partitions[stats.partition]["device"] = {
                "device_ms_median": statistics.median(device_ms[stats.partition]) if device_ms.get(stats.partition) else None,
                "graph": stats.graph,
                "counts_launches": choice.delegate.device.counts_launches,
                "last_invoke": stats.last_invoke.as_dict(),
                "kernels": list(stats.kernels),  # per step: its node(s) and the variant prepare chose
                "kernel_variants": [{"kernel": kernel, "count": count} for kernel, count in stats.kernel_variants()],
            }

    result: dict[str, Any] = {
        "model": loaded.label,
        "delegate": choice.describe(),
        "runs": args.runs,
        "profiled_invoke": _stats(totals),
        "ops": ops,
        "partitions": partitions,
        "steps": step_rows,
        "placement": placement_lines(choice.delegate),
        "tactics": tactic_lines(choice.delegate),
        "litert": None,
    }
    if args.compare_litert:
        result["litert"] = _compare_litert(loaded.data, interpreter, args.runs, args.seed)

    if args.json:
        print_json(result)
        return 0
    out = Printer()
    out.line(Styled(f"model: {loaded.label}", "bold"))
    warm_up = "two warm-ups" if device_stats else "one warm-up"
    out.line(f"delegate: {choice.describe()}; {args.runs} profiled run(s) after {warm_up}")
    for line in result["placement"]:
        out.line(line)
    stats = result["profiled_invoke"]
    out.line(f"invoke (sum of steps): median {stats['median_ms']:.3f} ms, mean {stats['mean_ms']:.3f} ms, "
             f"min {stats['min_ms']:.3f} ms, p90 {stats['p90_ms']:.3f} ms")
    if ops:
        table = Table(["op", "nodes", "median ms", "share"], right=frozenset({"nodes", "median ms", "share"}), title="CPU time per op")
        for entry in ops:
            table.add(entry["op"], entry["nodes"], f"{entry['median_ms']:.3f}", f"{100 * entry['share']:.1f}%")
        out.line()
        out.table(table)
    if partitions:
        table = Table(["partition", "delegate", "nodes", "median ms", "share"],
                      right=frozenset({"partition", "nodes", "median ms", "share"}), title="time per delegate partition")
        for entry in partitions:
            table.add(entry["partition"], entry["delegate"], entry["nodes"], f"{entry['median_ms']:.3f}", f"{100 * entry['share']:.1f}%")
        out.line()
        out.table(table)
        _device_table(out, partitions)
        _kernel_lines(out, partitions)
    if result["tactics"]:
        out.line()
        out.line("kernels chosen per node (the fastest candidate, the runner-up, both times; candidates that failed their check)")
        for line in result["tactics"]:
            out.line(f"  {line}")
    litert = result["litert"]
    if litert is not None:
        out.line()
        if not litert["available"]:
            out.line(Styled(f"ai-edge-litert: {litert['note']}", "yellow"))
        else:
            table = Table(["runtime", "median ms", "litedelegate / it"], right=frozenset({"median ms", "litedelegate / it"}),
                          title="against ai-edge-litert (one thread; ratio below 1: litedelegate is faster)")
            table.add("litedelegate (invoke)", f"{litert['litedelegate_ms']:.3f}", "")
            for key, label in (("xnnpack", "LiteRT XNNPACK"), ("builtin_ref", "LiteRT BUILTIN_REF")):
                entry = litert[key]
                if entry.get("error"):
                    table.add(label, entry["error"], "")
                else:
                    table.add(label, f"{entry['median_ms']:.3f}", f"{entry['ratio']:.2f}")
            out.table(table)
    return 0


def _device_table(out: Any, partitions: list[dict[str, Any]]) -> None:
    """The GPU delegate's counters for the last profiled invoke, per partition."""
    rows = [p for p in partitions if "device" in p]
    if not rows:
        return
    table = Table(
        ["partition", "device ms", "graph", "launches", "graph replays/nodes", "kernels per node", "uploads", "downloads",
         "bytes moved", "syncs", "allocations"],
        right=frozenset({"partition", "device ms", "launches", "kernels per node", "uploads", "downloads", "bytes moved",
                         "syncs", "allocations"}),
        title="device counters per invoke (last run; launches: kernels launched one by one, counted on the emulated "
              "device only; kernels per node: launched or replayed, over the partition's nodes)",
    )
    for entry in rows:
        device, last = entry["device"], entry["device"]["last_invoke"]
        ms = device["device_ms_median"]
        kernels = (last["kernel_launches"] if device["counts_launches"] else 0) + last["graph_nodes"]
        table.add(
            entry["partition"], "" if ms is None else f"{ms:.3f}", device["graph"],
            last["kernel_launches"] if device["counts_launches"] else "n/a",
            f"{last['graph_replays']}/{last['graph_nodes']}", f"{kernels / max(entry['nodes'], 1):.2f}",
            last["uploads"], last["downloads"],
            last["upload_bytes"] + last["download_bytes"], last["synchronizations"], last["pool_allocations"],
        )
    out.line()
    out.table(table)


def _kernel_lines(out: Any, partitions: list[dict[str, Any]]) -> None:
    """Per GPU partition, the kernels its launches run, counted (``PartitionStats.kernel_variants``)."""
    rows = [p for p in partitions if p.get("device", {}).get("kernel_variants")]
    if not rows:
        return
    out.line()
    out.line("kernels per partition (its steps counted by op, version and, in brackets, the kernel prepare chose)")
    for entry in rows:
        counted = ", ".join(f"{v['kernel']} x{v['count']}" for v in entry["device"]["kernel_variants"])
        out.line(f"partition {entry['partition']} kernels: {counted}")


def _compare_litert(data: bytes, interpreter, runs: int, seed: int) -> dict[str, Any]:
    try:
        from ai_edge_litert.interpreter import Interpreter as LiteRT
        from ai_edge_litert.interpreter import OpResolverType
    except ImportError:
        return {"available": False, "note": "not installed (pip install ai-edge-litert); comparison skipped"}
    ours = statistics.median(_timed(interpreter.invoke, runs, "litedelegate")) * 1e3
    result: dict[str, Any] = {"available": True, "litedelegate_ms": ours}
    for key, kind in (("xnnpack", OpResolverType.AUTO), ("builtin_ref", OpResolverType.BUILTIN_REF)):
        try:
            other = LiteRT(model_content=data, num_threads=1, experimental_op_resolver_type=kind)
            other.allocate_tensors()
            set_inputs(other, {}, seed)
            median = statistics.median(_timed(other.invoke, runs, key)) * 1e3
            result[key] = {"median_ms": median, "ratio": ours / median if median else None}
        except Exception as error:
            result[key] = {"error": f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"}
    return result
