"""The ``litedelegate`` command line (also ``python -m interpreter``).

    litedelegate run      [MODEL] [--delegate gpu|gpu-host|none|MODULE:CLASS[:K=V,...]] [--input NAME=FILE.npy ...] [--output-dir DIR]
    litedelegate analyze  [MODEL] [--delegate ...] [--cap OP=VERSION ...] [--json] [--graph FILE.svg|.html|.dot]
    litedelegate versions [MODEL] [--runtime X.Y.Z] [--tflite X.Y.Z] [--rewrite OUT.tflite] [--json]
    litedelegate bench    [MODEL] [--delegate ...] [--runs N] [--compare-litert] [--json]
    litedelegate diff     [MODEL] --delegate ... [--reference cpu|litert-ref] [--invokes N] [--nodes] [--json]
    litedelegate ops      [--compare-litert] [--json]
    litedelegate batch    MODEL INPUT... --output OUT.parquet [--engine local|ray] [--batch-size N] [--delegate ...]

With no MODEL every command uses the example model shipped in the package
(``interpreter.example_model``). Exit codes: 0 ok, 1 a runtime or model error, 2 a usage
error, 3 (``versions``) an older release named by ``--runtime``/``--tflite`` cannot run
some node. Errors are one line; ``--debug`` shows the traceback.

``--delegate MODULE:CLASS[:KEY=VALUE,...]`` applies any delegate (a class or a function
returning one, imported from MODULE or a ``.py`` file, the current directory included),
so an author sees their delegate in the same reports, timings and pictures as the GPU's.

One module per command (``run``, ``analyze``, ``versions``, ``bench``, ``diff``, ``ops``); ``analysis``
places nodes, ``graph`` draws them, ``rewrite`` edits versions, ``output`` prints.
"""

from __future__ import annotations

import argparse
import sys

from interpreter.cli.common import UsageError

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
PROG = "litedelegate"


def build_parser() -> argparse.ArgumentParser:
    from interpreter.cli import analyze, batch, bench, diff, ops, run, versions

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks of errors")
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="litedelegate: run, analyze, version-check and benchmark .tflite models.",
        epilog="Exit codes: 0 ok, 1 runtime/model error, 2 usage error, 3 (versions) an older release cannot run "
        "some node. Run `litedelegate COMMAND -h` for a command's options.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (run, analyze, versions, bench, diff, ops, batch):
        module.add_parser(commands, [common])
    return parser


def _one_line(error: BaseException) -> str:
    from delegate_sdk.op_resolver import UnsupportedOperatorError

    if isinstance(error, UnsupportedOperatorError):
        groups: dict[str, list[str]] = {}
        for entry in error.unresolved:
            where = f"{entry.subgraph}:{entry.node}" if entry.subgraph else str(entry.node)
            groups.setdefault(f"{entry.op_name} v{entry.version}", []).append(where)
        listed = "; ".join(f"{op} (node {', '.join(nodes)})" for op, nodes in groups.items())
        return (f"UnsupportedOperatorError: no CPU kernel runs {len(error.unresolved)} node(s) at their versions: {listed} "
                "(`litedelegate analyze MODEL` says why; --debug shows the full error)")
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    text = lines[0] if lines else ""
    if len(lines) > 1:
        text += f" (+{len(lines) - 1} more line(s); --debug shows them)"
    name = type(error).__name__
    return f"{name}: {text}" if text else name


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit:  # argparse: usage errors are 2, --help is 0
        return int(exit.code or 0) if isinstance(exit.code, int) else EXIT_USAGE
    debug = getattr(args, "debug", False)
    try:
        return args.handler(args)
    except UsageError as error:
        if debug:
            raise
        print(f"{PROG} {args.command}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as error:  # one clear line unless --debug
        if debug:
            raise
        print(f"{PROG}: error: {_one_line(error)}", file=sys.stderr)
        return EXIT_ERROR
