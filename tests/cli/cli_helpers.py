"""Helpers of the command-line tests: running ``python -m interpreter`` as a subprocess,
models built for the tests, and parsers of the rendered graph files."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from schema.builder import ModelBuilder
from schema.enums import ActivationFunctionType, BuiltinOperator, Padding
from schema.params import AddParams, DepthwiseConv2DParams, IfParams

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "data" / "models"
DWCONV_DIL2 = MODELS / "converter" / "dwconv_dil2_float32.tflite"
MINI_MOBILENET_FLOAT = MODELS / "converter" / "mini_mobilenet_float32.tflite"
MINI_MOBILENET_INT8 = MODELS / "converter" / "mini_mobilenet_int8.tflite"
FACE_DETECTION = MODELS / "real" / "mp_face_detection_short_range.tflite"


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)

    @property
    def error_lines(self) -> list[str]:
        """stderr without LiteRT's own log lines."""
        return [line for line in self.stderr.splitlines() if line.strip() and not line.startswith("INFO:")]


def run_cli(*args, cwd: pathlib.Path = ROOT, timeout: float = 120, env: dict[str, str] | None = None) -> Result:
    """``python -m interpreter *args`` with plain output (unless ``env`` asks for rich)."""
    base = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    base.pop("LITEDELEGATE_RICH", None)
    env = {**base, **(env or {})}
    completed = subprocess.run(
        [sys.executable, "-m", "interpreter", *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    return Result(completed.returncode, completed.stdout, completed.stderr)


# -- models built for the tests -------------------------------------------------------------------

def _depthwise(graph, name: str, x: int, dilation: int, version: int | None = None, seed: int = 0) -> int:
    rng = np.random.default_rng(seed)
    out = graph.add_tensor(name, (1, 8, 8, 4))
    graph.add_operator(
        BuiltinOperator.DEPTHWISE_CONV_2D,
        [x, graph.add_constant(f"{name}/w", rng.standard_normal((1, 3, 3, 4)).astype(np.float32)),
         graph.add_constant(f"{name}/b", rng.standard_normal(4).astype(np.float32))],
        [out],
        DepthwiseConv2DParams(padding=Padding.SAME, stride_w=1, stride_h=1, depth_multiplier=1,
                              fused_activation_function=ActivationFunctionType.NONE,
                              dilation_w_factor=dilation, dilation_h_factor=dilation),
        version=version,
    )
    return out


def over_stamped_model(shared_with_v2: bool) -> bytes:
    """Dilation-1 depthwise convolutions stamped v2 (they need v1). With ``shared_with_v2``
    a dilated node (which needs v2) shares their operator code, so a rewrite must split it."""
    builder = ModelBuilder(description="over-stamped test model")
    graph = builder.subgraph("main")
    x = graph.add_input("x", (1, 8, 8, 4))
    y = _depthwise(graph, "dw_a", x, dilation=1, version=2, seed=1)
    if shared_with_v2:
        y = _depthwise(graph, "dw_dilated", y, dilation=2, seed=2)
    z = _depthwise(graph, "dw_b", y, dilation=1, version=2, seed=3)
    out = graph.add_tensor("sum", (1, 8, 8, 4))
    graph.add_operator(BuiltinOperator.ADD, [y, z], [out], AddParams())
    graph.add_output(out)
    builder.add_signature("serving_default", graph)
    return builder.build()


def custom_op_model() -> bytes:
    """An ADD followed by a custom op no kernel runs."""
    builder = ModelBuilder()
    graph = builder.subgraph("main")
    x = graph.add_input("x", (1, 4))
    y = graph.add_tensor("y", (1, 4))
    graph.add_operator(BuiltinOperator.ADD, [x, x], [y], AddParams())
    z = graph.add_tensor("z", (1, 4))
    graph.add_operator("MyMissingOp", [y], [z])
    graph.add_output(z)
    return builder.build()


def if_model() -> bytes:
    """IF choosing between a RELU subgraph and a RELU_N1_TO_1 one (three subgraphs)."""
    builder = ModelBuilder()
    main = builder.subgraph()
    cond = main.add_input("cond", [], np.bool_)
    x = main.add_input("x", [2, 3])
    y = main.add_tensor("y", [2, 3])
    branches = []
    for op in (BuiltinOperator.RELU, BuiltinOperator.RELU_N1_TO_1):
        graph = builder.subgraph(op.name.lower())
        bx = graph.add_input("x", [2, 3])
        by = graph.add_tensor("y", [2, 3])
        graph.add_operator(op, [bx], [by])
        graph.add_output(by)
        branches.append(graph.index)
    main.add_operator(BuiltinOperator.IF, [cond, x], [y], IfParams(*branches))
    main.add_output(y)
    builder.add_signature("serving_default", main)
    return builder.build()


def write_built_models(folder: pathlib.Path) -> dict[str, pathlib.Path]:
    models = {
        "over_stamped_shared": over_stamped_model(shared_with_v2=True),
        "over_stamped": over_stamped_model(shared_with_v2=False),
        "custom_op": custom_op_model(),
        "if": if_model(),
    }
    paths = {}
    for name, data in models.items():
        paths[name] = folder / f"{name}.tflite"
        paths[name].write_bytes(data)
    return paths


# -- reading the rendered graphs --------------------------------------------------------------------

SVG = "{http://www.w3.org/2000/svg}"


def svg_counts(svg_text: str) -> tuple[int, int]:
    """(nodes, partition boxes) of an SVG written by graphviz or by our own layout."""
    root = ET.fromstring(svg_text)
    nodes = partitions = 0
    for g in root.iter(f"{SVG}g"):
        classes = (g.get("class") or "").split()
        title = g.find(f"{SVG}title")
        title_text = title.text if title is not None and title.text else ""
        if "node" in classes:
            nodes += 1
        if "cluster" in classes and ((g.get("id") or "").startswith("cluster_partition_") or title_text.startswith("cluster_partition_")):
            partitions += 1
    return nodes, partitions


def html_counts(html_text: str) -> tuple[int, int]:
    assert "<script" not in html_text and "http://" not in html_text.replace("http://www.w3.org/2000/svg", "")
    match = re.search(r"<svg\b.*</svg>", html_text, re.S)
    assert match, "no inline <svg> in the page"
    return svg_counts(match.group(0))


def dot_counts(dot_text: str) -> tuple[int, int]:
    nodes = len(re.findall(r"^\s*s\d+_n\d+ \[", dot_text, re.M))
    partitions = len(re.findall(r"^\s*subgraph cluster_partition_\d+ \{", dot_text, re.M))
    return nodes, partitions
