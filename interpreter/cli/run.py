"""``litedelegate run [MODEL]``: run a model once and summarize its outputs."""

from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np

from interpreter.cli.common import DELEGATE_HELP, DELEGATE_METAVAR, load_model, make_delegate, parse_inputs, safe_file_name, set_inputs
from interpreter.cli.output import Printer, Styled, Table, format_shape, print_json


def add_parser(commands, parents) -> None:
    parser = commands.add_parser(
        "run", parents=parents, help="run a model once and summarize its outputs",
        description="Run a model once (random inputs unless given) and print its outputs' shapes and a summary. "
        "With no MODEL, runs the example model shipped in the package.",
    )
    parser.add_argument("model", nargs="?", help="a .tflite file (default: the shipped example model)")
    parser.add_argument("--delegate", default="none", metavar=DELEGATE_METAVAR, help=DELEGATE_HELP)
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy", help="an input value")
    parser.add_argument("--output-dir", type=pathlib.Path, help="write every output as NAME.npy here")
    parser.add_argument("--seed", type=int, default=0, help="seed for random inputs that are not given")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from interpreter import Interpreter

    given = parse_inputs(args.input)
    choice = make_delegate(args.delegate)
    loaded = load_model(args.model)
    interpreter = Interpreter(model_content=loaded.data)
    report = None
    if choice.delegate is not None:  # a delegate that fails in prepare raises DelegatePrepareError
        report = interpreter.modify_graph_with_delegate(choice.delegate)
    interpreter.allocate_tensors()
    sources = set_inputs(interpreter, given, args.seed)
    start = time.perf_counter()
    interpreter.invoke()
    elapsed = time.perf_counter() - start

    placements = interpreter.node_placements()
    kinds = sorted({f"{p.op} v{p.version}" for p in placements if p.subgraph == 0})
    outputs = []
    written = []
    for detail in interpreter.get_output_details():
        value = interpreter.get_tensor(detail["index"])
        entry = {"name": detail["name"], "dtype": str(value.dtype), "shape": list(value.shape)}
        if value.size and value.dtype.kind in "biuf":
            entry.update(min=value.min().item(), max=value.max().item(), mean=float(np.mean(value, dtype=np.float64)))
        if args.output_dir:
            args.output_dir.mkdir(parents=True, exist_ok=True)
            path = args.output_dir / f"{safe_file_name(detail['name'])}.npy"
            np.save(path, value)
            entry["file"] = str(path)
            written.append(str(path))
        outputs.append(entry)
    delegated = sum(1 for p in placements if p.delegated)
    partitions = report.num_partitions if report is not None else 0
    summary = {
        "model": loaded.label,
        "nodes": len(placements),
        "ops": kinds,
        "inputs": [{"name": d["name"], "dtype": np.dtype(d["dtype"]).name, "shape": d["shape"].tolist(), "source": sources[d["name"]]}
                   for d in interpreter.get_input_details()],
        "outputs": outputs,
        "delegate": {"name": choice.name, "description": choice.describe(), "delegated": delegated, "partitions": partitions},
        "invoke_ms": elapsed * 1e3,
    }
    if args.json:
        print_json(summary)
        return 0
    out = Printer()
    out.line(f"model: {loaded.label}")
    out.line(f"nodes: {len(placements)} ({', '.join(kinds)})")
    for entry in summary["inputs"]:
        out.line(f"input {entry['name']}: {entry['dtype']}{format_shape(entry['shape'])} ({entry['source']})")
    table = Table(["output", "dtype", "shape", "min", "max", "mean"], right=frozenset({"min", "max", "mean"}))
    for entry in outputs:
        table.add(entry["name"], entry["dtype"], format_shape(entry["shape"]), entry.get("min"), entry.get("max"), entry.get("mean"))
    out.table(table)
    if choice.delegate is not None:
        out.line(Styled(f"delegate: {choice.describe()}: {delegated} of {len(placements)} node(s) in {partitions} partition(s)", "green"))
    where = "on the CPU" if choice.delegate is None else f"with {choice.name}"
    out.line(f"invoke: {elapsed * 1e3:.2f} ms {where}")
    for path in written:
        out.line(f"wrote {path}")
    return 0
