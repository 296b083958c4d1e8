"""``litedelegate diff MODEL --delegate X``: where a delegate's numbers leave the reference.

Runs the model with the delegate and with the reference (``cpu``: this runtime's CPU
kernels; ``litert-ref``: ai-edge-litert's BUILTIN_REF kernels, where installed) and
prints, per output, the error and both latencies; when an output is out of tolerance (or
with ``--nodes``, always), the first node in execution order whose delegated result
differs from the CPU's given the same inputs (``interpreter.testing.diff``).
Exit code 0 when everything agrees, 1 when something differs.
"""

from __future__ import annotations

import argparse

from interpreter.cli.common import DELEGATE_HELP, DELEGATE_METAVAR, UsageError, load_model, make_delegate
from interpreter.cli.output import Printer, Styled, Table, format_shape, print_json


def add_parser(commands, parents) -> None:
    parser = commands.add_parser(
        "diff", parents=parents, help="compare a delegate's outputs with the reference and find the first node that differs",
        description="Run MODEL with the delegate and with the reference on the same random inputs; print per output the "
        "error (absolute, relative, quantized steps) and both latencies; when an output is out of tolerance, delegate "
        "one node at a time to find the first node whose result differs from the CPU's given the same inputs.",
    )
    parser.add_argument("model", nargs="?", help="a .tflite file (default: the shipped example model)")
    parser.add_argument("--delegate", required=True, metavar=DELEGATE_METAVAR, help=DELEGATE_HELP)
    parser.add_argument("--reference", choices=("cpu", "litert-ref"), default="cpu",
                        help="what to compare with: this runtime's CPU kernels, or LiteRT's BUILTIN_REF (default: cpu)")
    parser.add_argument("--invokes", type=int, default=3, help="invokes, each with new inputs (default: 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--rtol", type=float, help="relative tolerance of float outputs (default: the SDK's per dtype)")
    parser.add_argument("--atol", type=float, help="absolute tolerance of float outputs, and steps allowed on integer ones")
    parser.add_argument("--nodes", action="store_true", help="check every delegated node alone even when the outputs agree")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from interpreter.testing import diff

    if args.invokes < 1:
        raise UsageError(f"--invokes must be at least 1, got {args.invokes}")
    if make_delegate(args.delegate).delegate is None:
        raise UsageError("diff needs a delegate: --delegate gpu, gpu-host or MODULE:CLASS")
    loaded = load_model(args.model)
    report = diff(loaded.data, lambda: make_delegate(args.delegate).delegate, reference=args.reference,
                  invokes=args.invokes, seed=args.seed, rtol=args.rtol, atol=args.atol, check_nodes=args.nodes)
    if args.json:
        print_json({"model": loaded.label, **report.to_json()})
        return 0 if report.ok else 1
    out = Printer()
    out.line(f"model: {loaded.label}")
    out.line(f"{report.delegate} vs {report.reference}: {report.delegated_nodes} node(s) delegated, {report.invokes} invoke(s)")
    table = Table(["output", "dtype", "shape", "max |diff|", "relative", "steps", "beyond", "tolerance"],
                  right=frozenset({"max |diff|", "relative", "steps", "beyond"}))
    for o in report.outputs:
        table.add(o.name, o.dtype, format_shape(list(o.shape)), f"{o.max_abs:.6g}", f"{o.max_rel:.3g}",
                  "" if o.max_steps is None else o.max_steps, f"{o.mismatched}/{o.size}", o.tolerance)
    out.table(table)
    out.line(f"latency: {report.reference_ms:.3f} ms ({report.reference}), {report.delegate_ms:.3f} ms ({report.delegate})")
    if report.first_divergent is not None:
        out.line(Styled(f"first node that differs ({report.nodes_checked} checked alone): {report.first_divergent}", "red"))
    elif report.ok:
        out.line(Styled("every output within tolerance", "green"))
    if report.note:
        out.line(report.note)
    return 0 if report.ok else 1
