"""Pictures of an analysis: nodes coloured by where they run, each delegate partition boxed.

``.dot`` is Graphviz source (needs nothing to write). ``.svg`` is rendered by Graphviz's
``dot`` when it is installed, else laid out here. ``.html`` is one self-contained page with
an inline SVG laid out here (no external assets).

Our own layout follows the partitioning: the subgraph is cut into the node subsets TFLite
forms (``partition_graph_into_independent_node_subsets``: delegated and CPU subsets that
run in order), each subset becomes a horizontal band laid out in layers (a node sits one
layer below its lowest producer in the band), and each partition's band gets a box, so a
box never covers a node that is not in it.

Elements, for tools and tests: every node is ``<g class="node" id="s{subgraph}_n{node}">``,
every partition box ``<g class="cluster partition" id="cluster_partition_{id}">`` (Graphviz
writes ``<g class="cluster">`` with ``<title>cluster_partition_{id}</title>``).
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
from html import escape
from typing import Iterable

from delegate_sdk.partition import PlanNode, partition_graph_into_independent_node_subsets
from interpreter.cli.analysis import CPU, Analysis, NodeAnalysis
from interpreter.cli.output import format_shape

FORMATS = (".svg", ".html", ".dot")

CPU_FILL = "#e3e3e3"
UNSUPPORTED_FILL = "#f4a582"
DELEGATE_FILLS = ("#a6d96a", "#92c5de", "#fdb863", "#c2a5cf", "#f1b6da")
DELEGATE_STROKES = ("#1a9641", "#2166ac", "#e66101", "#5e3c99", "#c51b7d")

NODE_W, NODE_H, COL, ROW = 196, 42, 214, 72
MARGIN, BAND_GAP, BOX_PAD, LABEL_H = 24, 30, 12, 18
SKIP_BULGE, CHAR_W = 40, 6.2  # room right of the nodes for edges that skip layers; width of a character


def write_graph(analysis: Analysis, path: pathlib.Path) -> str | None:
    """Write the picture in the format the suffix names; returns a note on how it was drawn."""
    suffix = path.suffix.lower()
    if suffix == ".dot":
        path.write_text(to_dot(analysis), encoding="utf-8")
        return None
    if suffix == ".html":
        path.write_text(to_html(analysis), encoding="utf-8")
        return None
    if suffix == ".svg":
        dot = shutil.which("dot")
        if dot is not None:
            result = subprocess.run([dot, "-Tsvg"], input=to_dot(analysis).encode(), capture_output=True, timeout=120)
            if result.returncode == 0:
                path.write_bytes(result.stdout)
                return "rendered by graphviz"
            note = f"graphviz failed ({result.stderr.decode(errors='replace').strip()[:200]}): drawn with litedelegate's own layout"
        else:
            note = "graphviz (dot) is not installed: drawn with litedelegate's own layout"
        path.write_text(to_svg(analysis), encoding="utf-8")
        return note
    raise ValueError(f"--graph writes {', '.join(FORMATS)} files, not {suffix or 'files without a suffix'}")


# -- colours and labels ----------------------------------------------------------------------------

def _delegates(analysis: Analysis) -> list[str]:
    names = []
    for node in analysis.nodes:
        if node.runs_on not in (CPU, None) and node.runs_on not in names:
            names.append(node.runs_on)
    if analysis.delegate.delegate is not None and analysis.delegate.name not in names:
        names.append(analysis.delegate.name)
    return names


def _fill(analysis: Analysis, node: NodeAnalysis) -> str:
    if node.runs_on == CPU:
        return CPU_FILL
    if node.runs_on is None:
        return UNSUPPORTED_FILL
    return DELEGATE_FILLS[_delegates(analysis).index(node.runs_on) % len(DELEGATE_FILLS)]


def _stroke(analysis: Analysis, delegate: str) -> str:
    return DELEGATE_STROKES[_delegates(analysis).index(delegate) % len(DELEGATE_STROKES)]


def _where(node: NodeAnalysis) -> str:
    if node.runs_on is None:
        return "no kernel"
    return f"{node.runs_on} #{node.partition}" if node.partition is not None else node.runs_on


def _tooltip(node: NodeAnalysis) -> str:
    def tensors(infos) -> str:
        return ", ".join("-" if i is None else f"{i['name']} {i['type']}{format_shape(i['shape'])}" for i in infos)

    lines = [f"node {node.index}: {node.op} v{node.version}", f"runs on: {_where(node)}",
             f"inputs: {tensors(node.inputs)}", f"outputs: {tensors(node.outputs)}"]
    lines += node.why_not_elsewhere
    return "\n".join(lines)


def _node_id(node: NodeAnalysis) -> str:
    return f"s{node.subgraph}_n{node.index}"


def _title(analysis: Analysis) -> str:
    s = analysis.summary()
    return (f"{analysis.label}: {s['delegated']} of {s['nodes']} node(s) on {analysis.delegate.name}, "
            f"{s['partitions']} partition(s)")


# -- DOT -------------------------------------------------------------------------------------------

def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(analysis: Analysis) -> str:
    """Graphviz source: one node per model node, one cluster per partition."""
    lines = [
        "digraph model {",
        f"  graph [rankdir=TB, fontname=Helvetica, fontsize=12, labelloc=t, label={_dot_string(_title(analysis))}];",
        '  node [shape=box, style="rounded,filled", fontname=Helvetica, fontsize=10, color="#555555"];',
        '  edge [color="#888888", arrowsize=0.6];',
    ]
    many = len(analysis.subgraph_names) > 1
    for index, name in enumerate(analysis.subgraph_names):
        indent = "  "
        if many:
            lines.append(f"  subgraph cluster_subgraph_{index} {{")
            lines.append(f"    label={_dot_string(f'subgraph {index} ({name})')}; style=solid; color=\"#bbbbbb\";")
            indent = "    "
        members = [n for n in analysis.nodes if n.subgraph == index]
        for partition in (p for p in analysis.partitions if p.subgraph == index):
            color = _stroke(analysis, partition.delegate)
            label = f"{partition.delegate} partition {partition.id} ({len(partition.nodes)} nodes)"
            lines.append(f"{indent}subgraph cluster_partition_{partition.id} {{")
            lines.append(f'{indent}  label={_dot_string(label)}; style="dashed,rounded"; color="{color}"; penwidth=2;')
            lines.append(f"{indent}  " + "; ".join(f"s{index}_n{n}" for n in partition.nodes) + ";")
            lines.append(f"{indent}}}")
        for node in members:
            label = f"{node.index}: {node.op} v{node.version}\n{_where(node)}"
            lines.append(
                f"{indent}{_node_id(node)} [label={_dot_string(label)}, fillcolor=\"{_fill(analysis, node)}\", "
                f"tooltip={_dot_string(_tooltip(node))}];"
            )
        if many:
            lines.append("  }")
    for subgraph, source, target, tensor in analysis.edges:
        lines.append(f"  s{subgraph}_n{source} -> s{subgraph}_n{target} [tooltip={_dot_string(tensor)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- our own layout ----------------------------------------------------------------------------------

def _layout(analysis: Analysis) -> tuple[dict[tuple[int, int], tuple[float, float]], list[tuple], list[tuple], float, float]:
    """Positions of nodes (top-left corners), partition boxes, subgraph titles, width, height."""
    rows: list[tuple[str, object]] = []  # ("title", (subgraph, text)) or ("band", (subgraph, [[nodes of layer]], partition))
    for index, name in enumerate(analysis.subgraph_names):
        members = {n.index: n for n in analysis.nodes if n.subgraph == index}
        if len(analysis.subgraph_names) > 1:
            rows.append(("title", (index, f"subgraph {index} ({name})")))
        if not members:
            continue
        inputs_of = {n.index: [t["index"] for t in n.inputs if t is not None] for n in members.values()}
        outputs_of = {n.index: [t["index"] for t in n.outputs] for n in members.values()}
        plan = [PlanNode(i, inputs_of[i], outputs_of[i]) for i in sorted(members)]
        delegated = [i for i, n in members.items() if n.partition is not None]
        graph_outputs = sorted({t for outs in outputs_of.values() for t in outs})
        for subset in partition_graph_into_independent_node_subsets(plan, delegated, graph_outputs):
            producer = {t: i for i in subset.nodes for t in outputs_of[i]}
            layer: dict[int, int] = {}
            sources = []
            for i in subset.nodes:
                above = [layer[producer[t]] for t in inputs_of[i] if t in producer and producer[t] in layer]
                layer[i] = 1 + max(above) if above else 0
                if not above:
                    sources.append(i)
            # A node fed only from outside the band (e.g. DEQUANTIZE of constant weights) sits
            # just above its first consumer rather than in the first row.
            consumers: dict[int, list[int]] = {}
            for i in subset.nodes:
                for t in inputs_of[i]:
                    if t in producer and producer[t] != i:
                        consumers.setdefault(producer[t], []).append(i)
            for i in reversed(sources):
                if consumers.get(i):
                    layer[i] = max(layer[i], min(layer[c] for c in consumers[i]) - 1)
            used = sorted(set(layer.values()))
            layer = {i: used.index(k) for i, k in layer.items()}
            layers = [[i for i in subset.nodes if layer[i] == k] for k in range(max(layer.values()) + 1)]
            partition = members[subset.nodes[0]].partition if subset.delegated else None
            rows.append(("band", (index, layers, partition)))
    widest = max([len(layer) for kind, row in rows if kind == "band" for layer in row[1]] or [1])
    labels = {p.id: _partition_label(p) for p in analysis.partitions}
    widest_box = max([_box_width(labels[row[2]], max(len(layer) for layer in row[1])) for kind, row in rows
                      if kind == "band" and row[2] is not None] or [0])
    width = max(widest * COL - (COL - NODE_W) + 2 * (MARGIN + BOX_PAD) + SKIP_BULGE, widest_box + 2 * MARGIN, 560)
    positions: dict[tuple[int, int], tuple[float, float]] = {}
    boxes, titles = [], []
    y = MARGIN + 40  # room for the legend
    for kind, row in rows:
        if kind == "title":
            index, text = row
            titles.append((MARGIN, y + 14, text))
            y += 28
            continue
        index, layers, partition = row
        top = y
        if partition is not None:
            y += LABEL_H + BOX_PAD
        for layer in layers:
            span = len(layer) * COL - (COL - NODE_W)
            x = (width - span) / 2
            for i in layer:
                positions[(index, i)] = (x, y)
                x += COL
            y += ROW
        y -= ROW - NODE_H
        if partition is not None:
            box_width = _box_width(labels[partition], max(len(layer) for layer in layers))
            boxes.append((partition, (width - box_width) / 2, top, box_width, y + BOX_PAD - top))
            y += BOX_PAD
        y += BAND_GAP
    return positions, boxes, titles, width, y + MARGIN - BAND_GAP


def _partition_label(partition) -> str:
    return f"{partition.delegate} partition {partition.id} ({len(partition.nodes)} nodes)"


def _box_width(label: str, widest_layer: int) -> float:
    """Wide enough for the nodes, the edges that bulge to the right of them, and the label
    left of the centre line (where edges enter)."""
    span = widest_layer * COL - (COL - NODE_W)
    return max(span + 2 * BOX_PAD + SKIP_BULGE, 2 * (CHAR_W * len(label) + 16))


def _short(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def to_svg(analysis: Analysis, standalone: bool = True) -> str:
    """An SVG picture laid out here (no Graphviz needed)."""
    positions, boxes, titles, width, height = _layout(analysis)
    out: list[str] = []
    header = f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}"'
    out.append(header + ' font-family="Helvetica, Arial, sans-serif">')
    out.append(f"<title>{escape(_title(analysis))}</title>")
    out.append('<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
               'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#888888"/></marker></defs>')
    out.extend(_legend(analysis))
    for x, y, text in titles:
        out.append(f'<text class="subgraph-title" x="{x}" y="{y}" font-size="13" font-weight="bold">{escape(text)}</text>')
    partitions = {p.id: p for p in analysis.partitions}
    for pid, x, y, w, h in boxes:
        p = partitions[pid]
        color = _stroke(analysis, p.delegate)
        label = _partition_label(p)
        detail = (f"{label}: nodes {', '.join(map(str, p.nodes))}; "
                  f"{len(p.inputs)} input and {len(p.outputs)} output tensor(s) cross its boundary")
        out.append(f'<g class="cluster partition" id="cluster_partition_{pid}" data-delegate="{escape(p.delegate)}" '
                   f'data-nodes="{len(p.nodes)}"><title>{escape(detail)}</title>'
                   f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="8" fill="none" stroke="{color}" '
                   f'stroke-width="2" stroke-dasharray="6 4"/>'
                   f'<text x="{x + 8:.1f}" y="{y + 14:.1f}" font-size="11" fill="{color}">{escape(label)}</text></g>')
    for subgraph, source, target, tensor in analysis.edges:
        if (subgraph, source) not in positions or (subgraph, target) not in positions:
            continue
        x1, y1 = positions[(subgraph, source)]
        x2, y2 = positions[(subgraph, target)]
        blocked = any(
            y1 < py < y2 and abs(px - x1) < NODE_W and abs(px - x2) < NODE_W
            for (ps, _), (px, py) in positions.items() if ps == subgraph
        )
        if blocked and abs(x2 - x1) < COL / 2:
            # skips a layer straight down: leave and enter at the right, bulging past the nodes in between
            xa, ya, xb, yb = x1 + NODE_W, y1 + NODE_H / 2, x2 + NODE_W, y2 + NODE_H / 2
            side = max(xa, xb) + SKIP_BULGE
            path = f"M {xa:.1f} {ya:.1f} C {side:.1f} {ya:.1f}, {side:.1f} {yb:.1f}, {xb:.1f} {yb:.1f}"
        else:
            xa, ya, xb = x1 + NODE_W / 2, y1 + NODE_H, x2 + NODE_W / 2
            bend = max((y2 - ya) / 2, 20)
            path = f"M {xa:.1f} {ya:.1f} C {xa:.1f} {ya + bend:.1f}, {xb:.1f} {y2 - bend:.1f}, {xb:.1f} {y2:.1f}"
        out.append(f'<g class="edge"><title>{escape(tensor)}</title><path d="{path}" fill="none" stroke="#888888" '
                   f'stroke-width="1.2" marker-end="url(#arrow)"/></g>')
    for node in analysis.nodes:
        x, y = positions[(node.subgraph, node.index)]
        stroke = "#b2182b" if node.runs_on is None else "#555555"
        out.append(f'<g class="node" id="{_node_id(node)}" data-runs-on="{escape(node.runs_on or "")}">'
                   f"<title>{escape(_tooltip(node))}</title>"
                   f'<rect x="{x:.1f}" y="{y:.1f}" width="{NODE_W}" height="{NODE_H}" rx="6" fill="{_fill(analysis, node)}" '
                   f'stroke="{stroke}"/>'
                   f'<text x="{x + NODE_W / 2:.1f}" y="{y + 17:.1f}" font-size="11" text-anchor="middle">'
                   f"{escape(_short(f'{node.index}: {node.op} v{node.version}'))}</text>"
                   f'<text x="{x + NODE_W / 2:.1f}" y="{y + 32:.1f}" font-size="10" fill="#333333" text-anchor="middle">'
                   f"{escape(_short(_where(node)))}</text></g>")
    out.append("</svg>")
    text = "\n".join(out) + "\n"
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + text) if standalone else text


def _legend(analysis: Analysis) -> Iterable[str]:
    entries = [("CPU", CPU_FILL)] + [(name, DELEGATE_FILLS[i % len(DELEGATE_FILLS)]) for i, name in enumerate(_delegates(analysis))]
    if any(n.runs_on is None for n in analysis.nodes):
        entries.append(("no kernel can run it", UNSUPPORTED_FILL))
    x = MARGIN
    yield '<g class="legend">'
    for label, fill in entries:
        yield f'<rect x="{x}" y="{MARGIN}" width="14" height="14" rx="3" fill="{fill}" stroke="#555555"/>'
        yield f'<text x="{x + 20}" y="{MARGIN + 11}" font-size="11">{escape(label)}</text>'
        x += 34 + 7 * len(label)
    yield "</g>"


def to_html(analysis: Analysis) -> str:
    """One self-contained page: a summary and the inline SVG."""
    s = analysis.summary()
    summary = (f"{s['delegated']} of {s['nodes']} node(s) on {analysis.delegate.name} in {s['partitions']} partition(s), "
               f"{s['cpu']} on the CPU, {s['unsupported']} that nothing can run.")
    notes = [analysis.delegate.describe()]
    if analysis.load_error:
        notes.append(f"{analysis.load_error}; delegate decisions from a dry run on the file.")
    if analysis.delegate_error:
        notes.append(f"delegate not applied: {analysis.delegate_error}")
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(analysis.label)}: litedelegate analyze</title>",
        "<style>body{font-family:Helvetica,Arial,sans-serif;margin:1.5em;color:#222}"
        "g.node:hover rect{stroke-width:3}g.edge:hover path{stroke:#000}</style>",
        "</head><body>",
        f"<h1>{escape(analysis.label)}</h1>",
        f"<p>{escape(summary)}</p>",
        *(f"<p>{escape(note)}</p>" for note in notes),
        "<p>Hover a node for its tensors and why it is not elsewhere.</p>",
        to_svg(analysis, standalone=False),
        "</body></html>",
        "",
    ])
