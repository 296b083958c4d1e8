"""``litedelegate analyze MODEL``: per node where it runs and why not elsewhere, partitions,
minimum runtime version, size statistics; ``--graph`` draws it."""

from __future__ import annotations

import argparse
import pathlib

from interpreter.cli.analysis import CPU, DRY_RUN, Analysis, analyze
from interpreter.cli.common import (
    DELEGATE_HELP,
    DELEGATE_METAVAR,
    PLACEMENT_HELP,
    UsageError,
    describe_caps,
    load_model,
    make_delegate,
    parse_caps,
    parse_op,
    placement_lines,
    tactic_lines,
)
from interpreter.cli.output import Printer, Styled, Table, format_bytes, format_shape, print_json

RUNS_ON_STYLE = {CPU: "", None: "bold red"}


def add_parser(commands, parents) -> None:
    parser = commands.add_parser(
        "analyze", parents=parents, help="where every node would run and why, partitions, versions, size",
        description="Apply a delegate for real and report, per subgraph and node, the op, version, tensor shapes and "
        "types, where the node runs and why not elsewhere; the partitions; the minimum runtime version; size "
        "statistics.",
    )
    parser.add_argument("model", nargs="?", help="a .tflite file (default: the shipped example model)")
    parser.add_argument("--delegate", default=None, metavar=DELEGATE_METAVAR,
                        help="default: the GPU if CUDA is usable, else gpu-host (host emulation); " + DELEGATE_HELP)
    parser.add_argument("--cap", action="append", default=[], metavar="OP=VERSION",
                        help="lower the delegate's version cap for OP (e.g. DEPTHWISE_CONV_2D=1)")
    parser.add_argument("--exclude", action="append", default=[], metavar="OP", help="keep OP off the delegate")
    parser.add_argument("--placement", choices=("all", "auto"), default="all", help=PLACEMENT_HELP)
    parser.add_argument("--json", action="store_true", help="print the analysis as JSON")
    parser.add_argument("--graph", metavar="FILE", type=pathlib.Path,
                        help="draw the graph: .svg (graphviz if installed, else our own layout), .html or .dot")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    if args.graph is not None:
        from interpreter.cli.graph import FORMATS

        if args.graph.suffix.lower() not in FORMATS:
            raise UsageError(f"--graph writes {', '.join(FORMATS)} files, got {args.graph.name!r}")
    caps = parse_caps(args.cap)
    excluded = [parse_op(op) for op in args.exclude]
    choice = make_delegate(args.delegate or "auto", caps, excluded, args.placement)
    analysis = analyze(load_model(args.model), choice)
    graph_note = None
    if args.graph is not None:
        from interpreter.cli.graph import write_graph

        graph_note = write_graph(analysis, args.graph)
    if args.json:
        data = analysis.to_json()
        data["graph"] = {"path": str(args.graph), "note": graph_note} if args.graph else None
        data["placement"] = placement_lines(choice.delegate)
        data["tactics"] = tactic_lines(choice.delegate)
        print_json(data)
    else:
        show(analysis, Printer())
        for line in placement_lines(choice.delegate):
            Printer().line(line)
        tactics = tactic_lines(choice.delegate)
        if tactics:
            Printer().line("kernels chosen per node (the fastest candidate, the runner-up, both times; candidates that failed their check):")
        for line in tactics:
            Printer().line(f"  {line}")
        if args.graph is not None:
            Printer().line(f"graph: {args.graph}" + (f" ({graph_note})" if graph_note else ""))
    return 0


def _tensors(infos) -> str:
    parts = []
    for info in infos:
        if info is None:
            parts.append("-")
            continue
        text = f"{info['type']}{format_shape(info['shape'])}"
        parts.append(f"const {text}" if info["constant"] else text)
    return ", ".join(parts)


def show(analysis: Analysis, out: Printer) -> None:
    size = analysis.size
    nodes_total = len(analysis.nodes)
    out.line(Styled(f"model: {analysis.label}", "bold"))
    out.line(f"  {nodes_total} node(s) in {len(analysis.subgraph_names)} subgraph(s), {format_bytes(size['file_bytes'])}")
    out.line(f"delegate: {analysis.delegate.describe()}")
    delegate = analysis.delegate.delegate
    caps = getattr(delegate, "version_caps", {}) if delegate is not None else {}
    if caps:
        out.line(f"  version caps: {describe_caps(caps)}")
    if analysis.delegate.note:
        out.line(Styled(f"  note: {analysis.delegate.note}", "yellow"))
    if analysis.method == DRY_RUN:
        out.line(Styled(f"checked: {analysis.load_error}; delegate decisions come from a dry run of its prepare on the file", "yellow"))
    else:
        out.line("checked: model loaded into an Interpreter, delegate applied with modify_graph_with_delegate, tensors allocated")
    if analysis.delegate_error:
        out.line(Styled(f"delegate not applied: {analysis.delegate_error}", "red"))
    if analysis.allocate_error:
        out.line(Styled(f"allocate_tensors failed: {analysis.allocate_error}", "red"))

    for index, name in enumerate(analysis.subgraph_names):
        members = [n for n in analysis.nodes if n.subgraph == index]
        table = Table(["node", "op", "inputs", "outputs", "runs on", "why not elsewhere"], right=frozenset({"node"}),
                      title=f"subgraph {index} ({name!r}): {len(members)} node(s)")
        for node in members:
            runs_on = node.runs_on if node.runs_on is not None else "nothing (no kernel)"
            style = RUNS_ON_STYLE.get(node.runs_on, "green")
            if node.partition is not None:
                runs_on = f"{runs_on} #{node.partition}"
            table.add(node.index, f"{node.op} v{node.version}", _tensors(node.inputs), _tensors(node.outputs),
                      Styled(runs_on, style), "; ".join(node.why_not_elsewhere))
        out.line()
        out.table(table)

    out.line()
    if analysis.partitions:
        table = Table(["partition", "subgraph", "delegate", "nodes", "node indices", "inputs", "outputs"],
                      right=frozenset({"partition", "subgraph", "nodes", "inputs", "outputs"}), title="partitions")
        for p in analysis.partitions:
            table.add(p.id, p.subgraph, p.delegate, len(p.nodes), _ranges(p.nodes), len(p.inputs), len(p.outputs))
        out.table(table)
    else:
        out.line("partitions: none")

    s = analysis.summary()
    out.line()
    delegate_name = analysis.delegate.name
    out.line(Styled(
        f"summary: {s['delegated']} of {s['nodes']} node(s) on {delegate_name} in {s['partitions']} partition(s), "
        f"{s['cpu']} on the CPU, {s['unsupported']} that nothing can run",
        "bold",
    ))
    if s["no_cpu_kernel"]:
        out.line(Styled(f"  {s['no_cpu_kernel']} node(s) have no CPU kernel at their version: "
                        "`litedelegate run` refuses this model", "red"))
    versions = analysis.min_runtime_version
    lite = versions["litedelegate"]
    out.line(
        f"minimum runtime version: TFLite {versions['tflite'] or '-'} (metadata in the file: {versions['metadata'] or 'none'}); "
        f"litedelegate {lite['release'] or '-'}" + (f" ({lite['note']})" if lite["note"] else "")
    )
    data = size["constant_data_bytes"]
    total = max(size["file_bytes"], 1)
    by_type = ", ".join(f"{k} {format_bytes(v)}" for k, v in size["constant_bytes_by_type"].items())
    out.line(
        f"size: {format_bytes(size['file_bytes'])}: constant data {format_bytes(data)} ({100 * data / total:.1f}%"
        + (f"; {by_type}" if by_type else "") + f"), metadata {format_bytes(size['metadata_bytes'])}, "
        f"structure {format_bytes(size['structure_bytes'])}; {size['operator_codes']} operator code(s), {size['buffers']} buffer(s)"
    )
    for sub in size["subgraphs"]:
        out.line(
            f"  subgraph {sub['index']}: {sub['tensors']} tensors ({sub['constant_tensors']} constant, "
            f"{sub['parameters']} parameters), activations {format_bytes(sub['activation_bytes'])}; "
            + ", ".join(f"{op} x{count}" for op, count in sub["ops"].items())
        )


def _ranges(indices: list[int]) -> str:
    parts, start = [], None
    for i, value in enumerate(indices):
        if start is None:
            start = value
        if i + 1 == len(indices) or indices[i + 1] != value + 1:
            parts.append(str(start) if start == value else f"{start}-{value}")
            start = None
    return ",".join(parts)
