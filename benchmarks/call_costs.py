"""Per-call costs against LiteRT, in one run: ``set_tensor``, ``get_tensor`` and
``tensor()()`` on a tiny model, and a whole invoke of the streaming keyword model.

    python benchmarks/call_costs.py [--calls 20000] [--rounds 7] [--clock wall|cpu]

The tiny model is one RELU on a [1, 4] float32 tensor; the streaming model is
tests/data/models/real/mww_hey_jarvis_int8_streaming.tflite (one 30 ms frame per invoke,
its state in variables). Each figure is the best of ``--rounds`` averages over
``--calls`` calls (invokes: a tenth as many), microseconds per call, for litedelegate and
for ai-edge-litert (default resolver, one thread), with the ratio. Issue 34's targets:
each per-call cost at most 2x LiteRT's, the streaming invoke at most 50 us. ``--clock
cpu`` counts this process's CPU time (immune to preemption on a shared machine).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STREAMING_MODEL = ROOT / "tests" / "data" / "models" / "real" / "mww_hey_jarvis_int8_streaming.tflite"
PER_CALL_TARGET = 2.0
STREAMING_TARGET_US = 50.0


def tiny_model() -> bytes:
    from schema.builder import ModelBuilder
    from schema.enums import BuiltinOperator

    builder = ModelBuilder()
    graph = builder.subgraph()
    x = graph.add_input("x", [1, 4])
    y = graph.add_tensor("y", [1, 4])
    graph.add_operator(BuiltinOperator.RELU, [x], [y])
    graph.add_output(y)
    return builder.build()


def per_call(function, calls: int, rounds: int, clock) -> float:
    """Seconds per call: the best of ``rounds`` averages over ``calls`` calls."""
    best = float("inf")
    for _ in range(rounds):
        start = clock()
        for _ in range(calls):
            function()
        best = min(best, (clock() - start) / calls)
    return best


def costs(interpreter, calls: int, rounds: int, clock) -> dict[str, float]:
    interpreter.allocate_tensors()
    source = interpreter.get_input_details()[0]["index"]
    result = interpreter.get_output_details()[0]["index"]
    value = np.ones((1, 4), np.float32)
    view = interpreter.tensor(result)
    interpreter.invoke()
    return {
        "set_tensor": per_call(lambda: interpreter.set_tensor(source, value), calls, rounds, clock),
        "get_tensor": per_call(lambda: interpreter.get_tensor(result), calls, rounds, clock),
        "tensor()()": per_call(view, calls, rounds, clock),
        "invoke (tiny)": per_call(interpreter.invoke, calls // 10, rounds, clock),
    }


def streaming_invoke(interpreter, calls: int, rounds: int, clock) -> float:
    interpreter.allocate_tensors()
    detail = interpreter.get_input_details()[0]
    frame = np.random.default_rng(0).integers(-128, 128, detail["shape"]).astype(detail["dtype"])
    interpreter.set_tensor(detail["index"], frame)
    for _ in range(20):
        interpreter.invoke()
    return per_call(interpreter.invoke, max(1, calls // 10), rounds, clock)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = parser.parse_args(argv)
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    from interpreter import Interpreter

    clock = time.perf_counter if args.clock == "wall" else time.process_time
    model = tiny_model()
    ours = costs(Interpreter(model_content=model), args.calls, args.rounds, clock)
    theirs = costs(LiteRT(model_content=model, num_threads=1), args.calls, args.rounds, clock)
    print(f"{args.clock} clock, microseconds per call (best of {args.rounds} rounds); target: ours/LiteRT <= {PER_CALL_TARGET:g}")
    print(f"{'call':20s} {'ours':>8s} {'LiteRT':>8s} {'ratio':>7s}")
    for name in ours:
        print(f"{name:20s} {ours[name] * 1e6:8.2f} {theirs[name] * 1e6:8.2f} {ours[name] / theirs[name]:7.2f}")
    mine = streaming_invoke(Interpreter(model_path=str(STREAMING_MODEL), num_threads=1), args.calls, args.rounds, clock)
    litert = streaming_invoke(LiteRT(model_path=str(STREAMING_MODEL), num_threads=1), args.calls, args.rounds, clock)
    print(f"{STREAMING_MODEL.stem} invoke: ours {mine * 1e6:.1f} us, LiteRT {litert * 1e6:.1f} us "
          f"(target: ours <= {STREAMING_TARGET_US:g} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
