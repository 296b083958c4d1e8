"""``litedelegate versions MODEL``: each node's declared version and the minimum it needs,
the model's ``min_runtime_version``, what an older release could not run, and
``--rewrite`` to lower over-stamped versions."""

from __future__ import annotations

import argparse
import os
import pathlib
import tempfile
from dataclasses import dataclass
from typing import Any

from interpreter.cli.common import UsageError, load_model, parse_release
from interpreter.cli.modelinfo import RUNTIME_TABLES, litedelegate_min_release, minimum_version
from interpreter.cli.output import Printer, Styled, Table, print_json
from schema.enums import BuiltinOperator
from schema.model import Model
from schema.versioning import compare_versions, get_min_runtime_version

#: Exit code when ``--runtime``/``--tflite`` finds nodes that release cannot run.
EXIT_OLDER_RELEASE_CANNOT_RUN = 3

RUNTIME_LABELS = {"litedelegate": "litedelegate", "tflite": "TFLite"}


def add_parser(commands, parents) -> None:
    parser = commands.add_parser(
        "versions", parents=parents, help="declared vs minimum op versions, runtime versions, --rewrite",
        description="For each node: the version in the file and the minimum its op, types and options need "
        "(get_builtin_operator_version); the model's min_runtime_version; which nodes an older release cannot run. "
        f"Exit code {EXIT_OLDER_RELEASE_CANNOT_RUN} when --runtime/--tflite finds such nodes.",
    )
    parser.add_argument("model", nargs="?", help="a .tflite file (default: the shipped example model)")
    parser.add_argument("--runtime", metavar="X.Y.Z", help="which nodes this litedelegate release could not run")
    parser.add_argument("--tflite", metavar="X.Y.Z", help="which nodes this TFLite release could not run")
    parser.add_argument("--rewrite", metavar="OUT.tflite", type=pathlib.Path,
                        help="write a copy with over-stamped versions lowered to the minimum (verified); "
                        "--runtime/--tflite then check the rewritten versions")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs used to verify --rewrite")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=main)


@dataclass
class NodeVersion:
    subgraph: int
    index: int
    op: str
    builtin_code: int
    declared: int
    minimum: int | None

    @property
    def target(self) -> int:
        """The version after ``--rewrite``: lowered to the minimum, never below it."""
        return self.minimum if self.minimum is not None and self.declared > self.minimum else self.declared

    @property
    def status(self) -> str:
        if self.minimum is None:
            return "custom op" if self.builtin_code == BuiltinOperator.CUSTOM else "unknown op"
        if self.declared > self.minimum:
            return "over-stamped"
        if self.declared < self.minimum:
            return "below minimum"
        return "ok"

    def to_json(self) -> dict[str, Any]:
        return {"subgraph": self.subgraph, "index": self.index, "op": self.op, "declared": self.declared,
                "minimum": self.minimum, "status": self.status, "after_rewrite": self.target}


def node_versions(model: Model) -> list[NodeVersion]:
    return [
        NodeVersion(s.index, op.index, op.op_name, op.builtin_code, op.version, minimum_version(s, op))
        for s in model.subgraphs
        for op in s.operators
    ]


def release_check(nodes: list[NodeVersion], runtime: str, release: str, rewritten: bool) -> dict[str, Any]:
    """Nodes that ``runtime`` release ``release`` cannot run, at the versions they have
    (or will have after ``--rewrite``), with the release that added each."""
    table = RUNTIME_TABLES[runtime]
    blocked = []
    for node in nodes:
        if node.builtin_code == BuiltinOperator.CUSTOM:
            continue  # custom ops: no release table covers them
        version = node.target if rewritten else node.declared
        added = table.get((node.builtin_code, version))
        if added is not None and added != "" and compare_versions(added, release) <= 0:
            continue
        entry = {"subgraph": node.subgraph, "index": node.index, "op": node.op, "version": version,
                 "added_in": added or None}
        if not rewritten:
            lowered = table.get((node.builtin_code, node.target))
            entry["runs_after_rewrite"] = bool(lowered) and compare_versions(lowered, release) <= 0
        blocked.append(entry)
    return {"runtime": runtime, "release": release, "checked": "after rewrite" if rewritten else "as stamped",
            "cannot_run": blocked}


def main(args: argparse.Namespace) -> int:
    runtime = parse_release(args.runtime, "--runtime")
    tflite = parse_release(args.tflite, "--tflite")
    if args.rewrite is not None and args.rewrite.suffix.lower() != ".tflite":
        raise UsageError(f"--rewrite writes a .tflite file, got {str(args.rewrite)!r}")
    loaded = load_model(args.model)
    model = loaded.model
    nodes = node_versions(model)
    declared_pairs = {(n.builtin_code, n.declared) for n in nodes if n.builtin_code != BuiltinOperator.CUSTOM}
    minimum_pairs = {(n.builtin_code, n.target) for n in nodes if n.builtin_code != BuiltinOperator.CUSTOM}
    report: dict[str, Any] = {
        "model": loaded.label,
        "nodes": [n.to_json() for n in nodes],
        "summary": {
            "nodes": len(nodes),
            "over_stamped": sum(1 for n in nodes if n.status == "over-stamped"),
            "below_minimum": sum(1 for n in nodes if n.status == "below minimum"),
            "not_checked": sum(1 for n in nodes if n.minimum is None),  # custom or unknown ops
        },
        "min_runtime_version": {
            "metadata": model.min_runtime_version,
            "tflite": get_min_runtime_version(declared_pairs) or None,
            "tflite_after_rewrite": get_min_runtime_version(minimum_pairs) or None,
            "litedelegate": litedelegate_min_release(declared_pairs),
        },
        "checks": [],
        "rewrite": None,
    }
    rewritten = args.rewrite is not None
    if rewritten:
        report["rewrite"] = _rewrite(loaded.data, nodes, args.rewrite, args.seed)
    for name, release in (("litedelegate", runtime), ("tflite", tflite)):
        if release is not None:
            report["checks"].append(release_check(nodes, name, release, rewritten))
    if args.json:
        print_json(report)
    else:
        show(report, Printer())
    if report["rewrite"] is not None and not report["rewrite"]["verification"]["ok"]:
        return 1
    if any(check["cannot_run"] for check in report["checks"]):
        return EXIT_OLDER_RELEASE_CANNOT_RUN
    return 0


def _rewrite(data: bytes, nodes: list[NodeVersion], out: pathlib.Path, seed: int) -> dict[str, Any]:
    from interpreter.cli.rewrite import rewrite_versions, verify

    targets = {(n.subgraph, n.index): n.target for n in nodes}
    new = rewrite_versions(data, targets)
    verification = verify(data, new, targets, seed)
    written = None
    if verification.ok:
        out.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=out.parent, prefix=out.name, suffix=".tmp")
        with os.fdopen(handle, "wb") as file:
            file.write(new)
        os.replace(temporary, out)
        written = str(out)
    after = Model.from_bytes(new)
    return {
        "path": written,
        "lowered": [
            {"subgraph": n.subgraph, "index": n.index, "op": n.op, "from": n.declared, "to": n.target}
            for n in nodes if n.target != n.declared
        ],
        "operator_codes": {"before": len(Model.from_bytes(data).operator_codes), "after": len(after.operator_codes)},
        "min_runtime_version": after.min_runtime_version,
        "bytes": len(new),
        "verification": verification.to_json(),
    }


STATUS_STYLE = {"ok": "green", "over-stamped": "yellow", "below minimum": "magenta"}


def show(report: dict[str, Any], out: Printer) -> None:
    out.line(Styled(f"model: {report['model']}", "bold"))
    table = Table(["subgraph", "node", "op", "declared", "minimum", "status"],
                  right=frozenset({"subgraph", "node", "declared", "minimum"}))
    for node in report["nodes"]:
        status = node["status"]
        if status == "over-stamped":
            status = f"over-stamped: can be v{node['minimum']}"
        elif status == "below minimum":
            status = f"below minimum: the rules give v{node['minimum']} (left as is)"
        table.add(node["subgraph"], node["index"], node["op"], f"v{node['declared']}",
                  f"v{node['minimum']}" if node["minimum"] is not None else "-", Styled(status, STATUS_STYLE.get(node["status"], "")))
    out.table(table)
    s = report["summary"]
    out.line(f"{s['nodes']} node(s): {s['over_stamped']} over-stamped, {s['below_minimum']} below the minimum, "
             f"{s['not_checked']} not checked (custom or unknown ops)")
    versions = report["min_runtime_version"]
    lite = versions["litedelegate"]
    line = (f"min_runtime_version: metadata {versions['metadata'] or 'none'}; TFLite table {versions['tflite'] or '-'}")
    if versions["tflite_after_rewrite"] != versions["tflite"]:
        line += f" ({versions['tflite_after_rewrite'] or '-'} with versions lowered)"
    line += f"; litedelegate {lite['release'] or '-'}" + (f" ({lite['note']})" if lite["note"] else "")
    out.line(line)
    if versions["metadata"] and versions["tflite"] and versions["metadata"] != versions["tflite"]:
        out.line(Styled(f"  the metadata says {versions['metadata']} but the op versions need TFLite {versions['tflite']}", "yellow"))

    rewrite = report["rewrite"]
    if rewrite is not None:
        out.line()
        verification = rewrite["verification"]
        if rewrite["lowered"]:
            for entry in rewrite["lowered"]:
                out.line(f"lowered: subgraph {entry['subgraph']} node {entry['index']} {entry['op']} v{entry['from']} -> v{entry['to']}")
        else:
            out.line("lowered: nothing (no node is over-stamped)")
        out.line(f"operator codes: {rewrite['operator_codes']['before']} -> {rewrite['operator_codes']['after']}; "
                 f"min_runtime_version metadata: {rewrite['min_runtime_version'] or '(empty)'}")
        out.line(f"verified: versions {'ok' if verification['versions'] else 'WRONG'}, structure "
                 f"{'unchanged' if verification['structure'] else 'CHANGED'}, outputs {verification['outputs']}")
        if verification["ok"]:
            out.line(Styled(f"wrote {rewrite['path']} ({rewrite['bytes']} bytes)", "green"))
        else:
            for problem in verification["problems"]:
                out.line(Styled(f"  problem: {problem}", "red"))
            out.line(Styled("verification failed: nothing written", "bold red"))

    for check in report["checks"]:
        out.line()
        label = f"{RUNTIME_LABELS[check['runtime']]} {check['release']}"
        what = "the rewritten model" if check["checked"] == "after rewrite" else "this model"
        if not check["cannot_run"]:
            out.line(Styled(f"{label} runs every node of {what}", "green"))
            continue
        out.line(Styled(f"{label} cannot run {len(check['cannot_run'])} node(s) of {what}:", "bold red"))
        lowerable = any(entry.get("runs_after_rewrite") for entry in check["cannot_run"])
        columns = ["subgraph", "node", "op", "version", "first release"] + (["after --rewrite"] if lowerable else [])
        table = Table(columns, right=frozenset({"subgraph", "node"}))
        for entry in check["cannot_run"]:
            after = entry.get("runs_after_rewrite")
            cells = [entry["subgraph"], entry["index"], entry["op"], f"v{entry['version']}", entry["added_in"] or "none known"]
            if lowerable:
                cells.append("" if after is None else ("runs" if after else "still cannot"))
            table.add(*cells)
        out.table(table)
