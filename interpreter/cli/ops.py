"""``litedelegate ops``: the ops the CPU op resolver runs, their versions and kernels;
``--compare-litert`` adds the versions LiteRT's resolvers register and what is missing here.

The table is ``builtin_op_resolver().list_ops()``; LiteRT's side is asked of the installed
ai-edge-litert (``interpreter.cli.litert_ops``). ``docs/OPS.md`` is generated from
``litedelegate ops --json`` (``docs/generate_ops.py``).
"""

from __future__ import annotations

import argparse
from typing import Any, Sequence

from interpreter.cli.output import Printer, Styled, Table, print_json

KERNELS_PACKAGE = "backends.cpu.kernels."


def add_parser(commands, parents) -> None:
    parser = commands.add_parser(
        "ops", parents=parents, help="the ops and versions the CPU runs, with their kernels (--compare-litert)",
        description="List every builtin and custom op the CPU op resolver runs: its versions and the kernel classes "
        "that run them. --compare-litert adds, per op, the versions ai-edge-litert's resolvers register "
        "(a one-node model per op and version, a few seconds) and the versions missing here.",
    )
    parser.add_argument("--compare-litert", action="store_true",
                        help="also ask the installed ai-edge-litert which op versions it registers")
    parser.add_argument("--json", action="store_true", help="print the table as JSON")
    parser.set_defaults(handler=main)


def format_versions(versions: Sequence[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``"1-3, 5"``."""
    parts: list[str] = []
    for version in sorted(versions):
        if parts and parts[-1][1] == version - 1:
            parts[-1] = (parts[-1][0], version)
        else:
            parts.append((version, version))
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in parts)


def short_kernel(name: str) -> str:
    return name.removeprefix(KERNELS_PACKAGE)


def is_stablehlo(op: str) -> bool:
    return op.startswith("STABLEHLO_")


def report(resolver=None) -> dict[str, Any]:
    """The resolver's ops as plain data (what ``--json`` prints without ``--compare-litert``)."""
    if resolver is None:
        from backends.cpu import builtin_op_resolver

        resolver = builtin_op_resolver()
    listed = resolver.list_ops()
    builtins = [entry.to_json() for entry in listed if not entry.is_custom]
    custom = [entry.to_json() for entry in listed if entry.is_custom]
    return {
        "resolver": resolver.description,
        "totals": {
            "builtin_ops": len(builtins),
            "builtin_versions": sum(len(e["versions"]) for e in builtins),
            "custom_ops": len(custom),
            "custom_versions": sum(len(e["versions"]) for e in custom),
        },
        "builtins": builtins,
        "custom": custom,
    }


def compare(ours: dict[str, Any], litert: dict[str, Any]) -> dict[str, Any]:
    """Per op of either side: our versions, those LiteRT's default (``litert``) and reference
    (``litert_ref``) resolvers register, and ``missing`` (LiteRT's, not ours); with totals
    for the builtins, the StableHLO builtins and the custom ops. ``litert`` is
    ``LiteRTOps.to_json()``."""
    rows = []
    for kind, our_entries, their_table in (("builtin", ours["builtins"], litert["builtins"]),
                                           ("custom", ours["custom"], litert["custom"])):
        mine = {e["op"]: e["versions"] for e in our_entries}
        for op in sorted(set(mine) | set(their_table)):
            theirs = their_table.get(op, {})
            registered = theirs.get("builtin", [])
            rows.append({
                "op": op,
                "kind": "custom" if kind == "custom" else ("stablehlo" if is_stablehlo(op) else "builtin"),
                "litedelegate": mine.get(op, []),
                "litert": registered,
                "litert_ref": theirs.get("builtin_ref", []),
                "missing": sorted(set(registered) - set(mine.get(op, []))),
            })
    totals = {}
    for kind in ("builtin", "stablehlo", "custom"):
        of_kind = [r for r in rows if r["kind"] == kind and r["litert"]]
        totals[kind] = {
            "litert_ops": len(of_kind),
            "litert_versions": sum(len(r["litert"]) for r in of_kind),
            "covered_versions": sum(len(r["litert"]) - len(r["missing"]) for r in of_kind),
            "missing_versions": sum(len(r["missing"]) for r in of_kind),
            "ops_without_kernel": sum(1 for r in of_kind if not r["litedelegate"]),
            "ops_only_here": sum(1 for r in rows if r["kind"] == kind and r["litedelegate"] and not r["litert"]),
        }
    return {"package": litert["package"], "ops": rows, "totals": totals}


def main(args: argparse.Namespace) -> int:
    result = report()
    if args.compare_litert:
        from interpreter.cli.litert_ops import probe_litert

        result["litert"] = compare(result, probe_litert().to_json())
    if args.json:
        print_json(result)
        return 0
    out = Printer()
    totals = result["totals"]
    out.line(f"{result['resolver']}: {totals['builtin_ops']} builtin ops ({totals['builtin_versions']} op versions), "
             f"{totals['custom_ops']} custom op(s) ({totals['custom_versions']} version(s))")
    if "litert" in result:
        _print_comparison(out, result)
        return 0
    table = Table(["op", "versions", "kernels"])
    for entry in (*result["builtins"], *result["custom"]):
        name = entry["op"] + (" (custom)" if entry["custom"] else "")
        table.add(name, format_versions(entry["versions"]), _kernels_text(entry))
    out.table(table)
    return 0


def _kernels_text(entry: dict[str, Any]) -> str:
    kernels = entry["kernels"]
    if len(kernels) == 1 and kernels[0]["versions"] == entry["versions"]:
        return short_kernel(kernels[0]["kernel"])
    return "; ".join(f"{short_kernel(k['kernel'])} ({format_versions(k['versions'])})" for k in kernels)


def _print_comparison(out: Printer, result: dict[str, Any]) -> None:
    comparison = result["litert"]
    table = Table(["op", "litedelegate", "LiteRT", "LiteRT ref", "missing here"])
    for row in comparison["ops"]:
        name = row["op"] + (" (custom)" if row["kind"] == "custom" else "")
        missing = format_versions(row["missing"])
        table.add(name, format_versions(row["litedelegate"]), format_versions(row["litert"]),
                  format_versions(row["litert_ref"]), Styled(missing, "red") if missing else "")
    out.table(table)
    labels = {"builtin": "builtin ops (besides StableHLO)", "stablehlo": "StableHLO builtin ops", "custom": "custom ops"}
    for kind, label in labels.items():
        t = comparison["totals"][kind]
        out.line(f"{label}: LiteRT ({comparison['package']}) registers {t['litert_ops']} ops, {t['litert_versions']} op "
                 f"versions; litedelegate runs {t['covered_versions']} of them, misses {t['missing_versions']} "
                 f"({t['ops_without_kernel']} ops without a kernel here); {t['ops_only_here']} ops only here")
