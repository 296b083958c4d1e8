"""Write ``docs/GPU_OPS.md``, the table of the ops and versions the GPU delegate runs, from
its support table and its op classes (never by hand).

    python docs/generate_gpu_ops.py           # rewrite docs/GPU_OPS.md
    python docs/generate_gpu_ops.py --check   # exit 1 if docs/GPU_OPS.md is not what this would write

For each op: the versions the delegate claims, and for each class that implements it the
versions that class claims and the first paragraph of its docstring (what it takes). A test
(tests/gpu/test_gpu_ops_doc.py) checks that the committed file equals a fresh generation.
"""

from __future__ import annotations

import argparse
import inspect
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "GPU_OPS.md"
sys.path.insert(0, str(ROOT))

HEADER = """\
# Ops and versions on the GPU delegate

Generated from the delegate's support table and op classes by `python docs/generate_gpu_ops.py`;
do not edit by hand (a test checks that this file equals a fresh generation).

`GpuDelegate` takes a node when one of the classes below claims the node's version and
accepts the node (its types, shapes and options); every node it leaves has a reason in the
delegation report (`litedelegate analyze MODEL --delegate gpu-host`). Nodes whose outputs the
CPU kernels fold into constants at prepare (DENSIFY, DEQUANTIZE of float16 weights, shape
arithmetic) are taken whatever their op: they never run, their results stay on the device.
"""


def _summary(cls: type) -> str:
    doc = inspect.getdoc(cls) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _versions(claim) -> str:
    versions = sorted(range(1, claim + 1) if isinstance(claim, int) else claim)
    if versions == list(range(versions[0], versions[-1] + 1)) and len(versions) > 2:
        return f"{versions[0]}-{versions[-1]}"
    return ", ".join(map(str, versions))


def generate() -> str:
    from backends.gpu.ops import gpu_op_classes
    from schema.enums import builtin_operator_name

    table = gpu_op_classes()

    def name_of(key) -> str:
        return builtin_operator_name(key) if isinstance(key, int) else f"custom: {key}"

    lines = [HEADER, "| op | versions | class | versions it claims | what it takes |", "|---|---|---|---|---|"]
    for key in sorted(table, key=name_of):
        classes = table[key]
        claims = [cls.ops[key] if isinstance(key, int) else cls.custom_ops[key] for cls in classes]
        all_versions = sorted(set().union(*(set(range(1, c + 1)) if isinstance(c, int) else set(c) for c in claims)))
        for position, (cls, claim) in enumerate(zip(classes, claims)):
            op = f"`{name_of(key)}`" if position == 0 else ""
            versions = _versions(frozenset(all_versions)) if position == 0 else ""
            module = cls.__module__.rsplit(".", 1)[-1]
            lines.append(f"| {op} | {versions} | `{module}.{cls.__name__}` | {_versions(claim)} | {_summary(cls)} |")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        if OUTPUT.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT} is out of date: run python docs/generate_gpu_ops.py")
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
