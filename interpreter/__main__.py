"""``litedelegate`` / ``python -m interpreter``: run a model from the command line.

    litedelegate run [MODEL] [--input NAME=FILE.npy ...] [--output-dir DIR] [--seed N]

With no MODEL it runs the example model built by ``interpreter.example_model``.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="litedelegate", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a model once and summarize its outputs")
    run.add_argument("model", nargs="?", help="a .tflite file (default: the shipped example model)")
    run.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy", help="an input value")
    run.add_argument("--output-dir", type=pathlib.Path, help="write every output as NAME.npy here")
    run.add_argument("--seed", type=int, default=0, help="seed for random inputs that are not given")
    return parser.parse_args(argv)


def _random_value(detail: dict, rng: np.random.Generator) -> np.ndarray:
    dtype, shape = np.dtype(detail["dtype"]), tuple(detail["shape"])
    if dtype.kind == "f":
        return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -128), min(info.max, 127) + 1, size=shape).astype(dtype)


def run(args: argparse.Namespace) -> int:
    from interpreter import Interpreter
    from interpreter.example_model import build_example_model

    if args.model:
        interpreter, label = Interpreter(model_path=args.model), args.model
    else:
        interpreter, label = Interpreter(model_content=build_example_model()), "example model (dilated depthwise classifier)"
    given = {}
    for item in args.input:
        name, _, path = item.partition("=")
        if not path:
            raise ValueError(f"--input takes NAME=FILE.npy, got {item!r}")
        given[name] = np.load(path)
    interpreter.allocate_tensors()
    rng = np.random.default_rng(args.seed)
    for detail in interpreter.get_input_details():
        value = given.pop(detail["name"], None)
        interpreter.set_tensor(detail["index"], value if value is not None else _random_value(detail, rng))
    if given:
        raise ValueError(f"no model input named {sorted(given)}")
    start = time.perf_counter()
    interpreter.invoke()
    elapsed = time.perf_counter() - start
    ops = interpreter.get_ops_details()
    print(f"model: {label}")
    kinds = sorted({f"{op['op_name']} v{op['version']}" for op in ops})
    print(f"nodes: {len(ops)} ({', '.join(kinds)})")
    for detail in interpreter.get_output_details():
        value = interpreter.get_tensor(detail["index"])
        print(f"output {detail['name']}: {value.dtype}{list(value.shape)} min={value.min():.6g} max={value.max():.6g}")
        if args.output_dir:
            args.output_dir.mkdir(parents=True, exist_ok=True)
            np.save(args.output_dir / f"{detail['name'].replace('/', '_').replace(':', '_')}.npy", value)
    print(f"invoke: {elapsed * 1e3:.2f} ms on the CPU")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    try:
        return {"run": run}[args.command](args)
    except Exception as error:  # one clear line unless --debug
        if args.debug:
            raise
        print(f"litedelegate: error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
