"""The device check: everything that needs a real CUDA GPU, in one command, as a Markdown report.

    PYTHONPATH=. python benchmarks/device_check.py --out DIR          # a machine with a CUDA GPU
    PYTHONPATH=. python benchmarks/device_check.py --host --out DIR   # the emulated device (CI)

It needs only numpy, cupy, flatbuffers and pytest (no network, no pip, no ai-edge-litert:
the reference is litedelegate's own CPU path, which the test suite checks against LiteRT),
and writes ``DIR/device-check.md`` after every section, so a run cut short still leaves
what it measured. Sections:

1. the machine: GPU, CuPy, CUDA runtime, driver and NVRTC versions;
2. the ``gpu``-marked tests, run with ``REQUIRE_GPU=1`` (``--host``: against the emulated
   CUDA device, ``LITEDELEGATE_TEST_DEVICE=emulated``);
3. parity: every bundled model through ``GpuDelegate`` in float32 and float16 against the
   CPU path, several invokes with new inputs (max error per output, absolute and relative
   to the output's largest magnitude);
4. CUDA graphs on vs off: the same inputs, changing at every invoke, 100 invokes;
5. latency: CPU path, GPU eager, GPU with graphs (median and p90; batch 1, and batch 8
   where the model can be resized), with each partition's device time (CUDA events);
6. counters per invoke after warm-up: kernel launches, graph replays, transfers and
   bytes, synchronizations, pool allocations;
7. issue 24's figures, each beside its target: the MediaPipe float models' CUDA-graph nodes
   per delegated node and kernel variants; mp_face_detection_short_range's throughput at
   batch 1, 8, 32 and 128 (images/s) and host-clock ms per invoke at batch 1;
   mp_pose_detection's and mp_palm_detection_lite's device ms at batch 1; float16 against
   float32 at batch 8 (``--host`` rehearses it on face detection at batches 1 and 2);
8. issue 25's figures: ``benchmarks/gpu_threads.py`` (4 threads against one, each beside its
   target; the host-side cost of an invoke; placement="auto" against the CPU path on every
   bundled model), its report embedded and kept as ``DIR/gpu-threads.md`` (``--host``
   rehearses the threads and the host cost);
9. issue 31's figures: the kernel each node of the MediaPipe float models chose among its
   candidates (``backends/gpu/tactics.py``) in float32 and float16, with the runner-up, both
   times and every candidate that failed its check on the device; the first prepare of face
   detection (checks and timings, target <= 3 s) and a cached one (target <= 0.1 s)
   (``--host`` rehearses it on mini_mobilenet_float32 in float32, where nothing is timed).

Every section catches its own failures (they go into the report) and the run goes on;
the exit status is 1 when a check failed. ``--host`` runs every section the same way on
the emulated device with fewer invokes, to prove the script works before a GPU is at hand.
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import statistics
import subprocess
import sys
import time
import traceback
from typing import Any, Callable

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backends.gpu import GpuDelegate, emulated_cuda_device, open_device  # noqa: E402
from interpreter import Interpreter  # noqa: E402

MODELS = ROOT / "tests" / "data" / "models"


def bundled_models() -> list[pathlib.Path]:
    """Every model in the repository: the converter's float32 and int8 twins, the real ones."""
    return sorted(MODELS.glob("converter/*.tflite")) + sorted(MODELS.glob("real/*.tflite"))


def is_quantized_model(path: pathlib.Path) -> bool:
    """int8 models: bit-exactness is the bar, and float16 precision changes nothing."""
    return "int8" in path.stem


class Settings:
    def __init__(self, host: bool, budget: float) -> None:
        self.host = host
        self.deadline = time.perf_counter() + budget
        self.parity_invokes = 3 if host else 5
        self.graph_invokes = 6 if host else 100
        self.latency_runs = 3 if host else 50
        self.cpu_runs = 2 if host else 20
        self.batches = (1,) if host else (1, 8)
        # Section 7 (issue 24): the emulated CUDA device runs the tiled kernels a std::thread
        # per GPU thread (seconds per MediaPipe invoke), so --host rehearses the timings on
        # mini_mobilenet_float32 and counts graph nodes on face detection only.
        self.graph_node_models = ("mp_face_detection_short_range",) if host else (
            "mp_face_detection_short_range", "mp_face_landmark", "mp_palm_detection_lite", "mp_pose_detection")
        self.throughput_model = "mini_mobilenet_float32" if host else "mp_face_detection_short_range"
        self.throughput_batches = (1, 2) if host else (1, 8, 32, 128)
        self.throughput_runs = 2 if host else 20
        self.float16_batch = 2 if host else 8
        self.float16_models = ("mini_mobilenet_float32",) if host else ("mp_pose_detection", "mp_palm_detection_lite")
        self.device_ms_models = ("mini_mobilenet_float32",) if host else ("mp_pose_detection", "mp_palm_detection_lite")
        self.tactic_models = ("mini_mobilenet_float32",) if host else (
            "mp_face_detection_short_range", "mp_face_landmark", "mp_palm_detection_lite", "mp_pose_detection")
        self.tactic_precisions = ("float32",) if host else ("float32", "float16")
        self.models = bundled_models()
        if host:  # the emulated device runs the hand-written kernels on the CPU: keep CI short
            keep = ("mini_mobilenet_float32", "concat_float32", "mp_face_detection_short_range", "mini_mobilenet_int8",
                    "mww_hey_jarvis_int8_streaming")
            self.models = [m for m in self.models if m.stem in keep]

    def device(self) -> Any:
        return emulated_cuda_device() if self.host else open_device(0)

    def left(self) -> float:
        """Seconds left of the time budget."""
        return self.deadline - time.perf_counter()

    def models_in_time(self, report: "Report", share: float) -> Any:
        """The models, while the section's share of the time left lasts; says where it stopped."""
        stop = time.perf_counter() + share * self.left()
        for path in self.models:
            if time.perf_counter() > stop:
                report.add(f"_(time budget: stopped before {path.stem})_", "")
                report.fail("the time budget cut a section short")
                return
            yield path


# -- the report -----------------------------------------------------------------------------------


class Report:
    def __init__(self, path: pathlib.Path, title: str) -> None:
        self.path = path
        self.lines = [f"# {title}", ""]
        self.failures: list[str] = []

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)
        self.write()

    def table(self, header: list[str], rows: list[list[Any]]) -> None:
        self.add("| " + " | ".join(header) + " |", "|" + "---|" * len(header))
        self.add(*("| " + " | ".join(str(c) for c in row) + " |" for row in rows))
        self.add("")

    def fail(self, what: str) -> None:
        self.failures.append(what)
        self.add(f"**FAILED**: {what}", "")

    def section(self, title: str, run: Callable[[], None]) -> None:
        self.add(f"## {title}", "")
        start = time.perf_counter()
        try:
            run()
        except Exception as error:  # the report says what broke; the next section runs
            self.fail(f"{title}: {type(error).__name__}: {error}")
            self.add("```", *traceback.format_exc().splitlines()[-12:], "```", "")
        self.add(f"_({time.perf_counter() - start:.1f} s)_", "")

    def write(self) -> None:
        self.path.write_text("\n".join(self.lines) + "\n")


# -- running models ---------------------------------------------------------------------------------


def random_inputs(interpreter: Interpreter, seed: int) -> list[np.ndarray]:
    """Floats in [-1, 1]; integers over their type's whole range."""
    rng = np.random.default_rng(seed)
    values = []
    for detail in interpreter.get_input_details():
        dtype, shape = np.dtype(detail["dtype"]), tuple(detail["shape"])
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            values.append(rng.integers(info.min, int(info.max) + 1, shape).astype(dtype))
        else:
            values.append(rng.uniform(-1, 1, shape).astype(dtype))
    return values


def make(path: pathlib.Path, delegate: GpuDelegate | None = None, batch: int = 1, preserve: bool = False) -> Interpreter:
    interpreter = Interpreter(model_path=str(path), experimental_preserve_all_tensors=preserve)
    if batch != 1:
        for detail in interpreter.get_input_details():
            interpreter.resize_tensor_input(detail["index"], [batch, *detail["shape"][1:]])
        interpreter.allocate_tensors()
    if delegate is not None:
        interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    return interpreter


def invoke(interpreter: Interpreter, inputs: list[np.ndarray]) -> list[np.ndarray]:
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def intermediates(interpreter: Interpreter) -> dict[int, np.ndarray]:
    """Every non-constant tensor of the main subgraph the interpreter holds a value of."""
    found = {}
    for detail in interpreter.get_tensor_details():
        tensor = interpreter._main.tensors[detail["index"]]
        if tensor.is_constant or tensor.data is None or tensor.dtype is None or tensor.dtype.kind not in "iuf":
            continue
        found[detail["index"]] = np.array(tensor.data, copy=True)
    return found


def errors(got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    """(max absolute error, max absolute error / the output's largest magnitude)."""
    diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if want.size else 0.0
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    return diff, diff / scale if scale else diff


def timed(interpreter: Interpreter, inputs: list[np.ndarray], runs: int) -> list[float]:
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    for _ in range(3):  # warm-up: kernel caches, the graph capture
        interpreter.invoke()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        interpreter.invoke()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def median_p90(times: list[float]) -> str:
    ordered = sorted(times)
    return f"{statistics.median(ordered):.3f} / {ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]:.3f}"


# -- the sections -------------------------------------------------------------------------------------


def machine_section(report: Report, settings: Settings) -> None:
    from backends.gpu.probe import describe_cuda_install

    device = settings.device()
    report.add(
        f"- device: {device.name}",
        f"- install: {describe_cuda_install(device.xp)}",
        f"- mode: {'host (emulated CUDA device: the hand-written kernels through the host shim)' if settings.host else 'real CUDA device'}",
        f"- python {sys.version.split()[0]}, numpy {np.__version__}",
        "",
    )


def guarded(report: Report, rows: list[list[Any]], what: str, width: int, run: Callable[[], None]) -> None:
    """One model's measurement: a failure becomes a row and a failed check, not the end of the section."""
    try:
        run()
    except Exception as error:
        rows.append([what, f"**error**: {type(error).__name__}: {str(error).splitlines()[0][:160]}", *[""] * (width - 2)])
        report.fail(f"{what}: {type(error).__name__}: {str(error).splitlines()[0][:300]}")


def tests_section(report: Report, settings: Settings) -> None:
    env = dict(os.environ, REQUIRE_GPU="1", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if settings.host:
        env["LITEDELEGATE_TEST_DEVICE"] = "emulated"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "gpu", "-rfEs", "tests/gpu"]
    if settings.host:
        # The emulated CUDA device runs the tiled kernels a std::thread per GPU thread: the
        # face detection cases take most of a minute each there (a GPU runs them in
        # milliseconds), so --host leaves them to sections 3-7.
        command += ["-k", "not mp_face_detection_short_range"]
    timeout = max(60.0, min(300.0, 0.35 * settings.left()))
    try:
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        output = (expired.stdout or b"").decode(errors="replace") if isinstance(expired.stdout, bytes) else (expired.stdout or "")
        report.add(f"stopped after {timeout:.0f} s (time budget); the last lines:", "```", *output.splitlines()[-15:], "```", "")
        report.fail("gpu tests: cut short by the time budget")
        return
    (report.path.parent / "gpu-tests.log").write_text(result.stdout + result.stderr)
    summary = [line for line in result.stdout.splitlines() if line.strip()][-1:] or ["(no output)"]
    failed = [line for line in result.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    report.add(f"`{'LITEDELEGATE_TEST_DEVICE=emulated ' if settings.host else ''}REQUIRE_GPU=1 pytest -m gpu tests/gpu`: "
               f"exit {result.returncode}, {summary[0].strip('= ')}", "")
    if failed or result.returncode != 0:
        report.add("```", *(failed or result.stdout.splitlines()[-30:]), *result.stderr.splitlines()[-10:], "```", "")
        report.fail(f"gpu tests: exit {result.returncode}")


def parity_section(report: Report, settings: Settings) -> None:
    rows: list[list[Any]] = []

    def check(path: pathlib.Path, precision: str) -> None:
        quantized = is_quantized_model(path)
        limit = 0.0 if quantized else 1e-4 if precision == "float32" else 2e-2
        # int8 classifiers saturate on random inputs: compare every tensor, not only outputs.
        delegate = GpuDelegate(device=settings.device(), precision=precision, expose_intermediates=quantized)
        gpu, cpu = make(path, delegate), make(path, preserve=quantized)
        worst_abs: list[float] = []
        worst_rel: list[float] = []
        compared = 0
        for k in range(settings.parity_invokes * (2 if quantized else 1)):
            inputs = random_inputs(cpu, k)
            for i, (got, want) in enumerate(zip(invoke(gpu, inputs), invoke(cpu, inputs))):
                absolute, relative = errors(got, want)
                if i == len(worst_abs):
                    worst_abs.append(0.0)
                    worst_rel.append(0.0)
                worst_abs[i], worst_rel[i] = max(worst_abs[i], absolute), max(worst_rel[i], relative)
            if quantized:
                ours, theirs = intermediates(gpu), intermediates(cpu)
                shared = sorted(set(ours) & set(theirs))
                compared = max(compared, len(shared))
                differing = [t for t in shared if not np.array_equal(ours[t], theirs[t])]
                if differing:
                    report.fail(f"{path.stem}: invoke {k + 1}: {len(differing)} of {len(shared)} tensors differ from the CPU path")
        placed = gpu.delegation_report
        if quantized:
            precision = f"int8 ({compared} tensors)"
        ok = max(worst_rel) <= limit
        if not ok:
            report.fail(f"{path.stem} {precision}: error {max(worst_rel):.2e} of the output scale > {limit:g}")
        rows.append([path.stem, precision, f"{placed.num_delegated}/{placed.num_nodes}", placed.num_partitions,
                     ", ".join(f"{e:.3g}" for e in worst_abs), ", ".join(f"{e:.3g}" for e in worst_rel),
                     "ok" if ok else "**over**"])

    for path in settings.models_in_time(report, 0.3):
        # int8 models in float16 too: their integer path must not depend on the storage of
        # float activations (issue 23: bit-exact under precision="float16" as well).
        for precision in ("float32", "float16"):
            guarded(report, rows, f"{path.stem} {precision}", 7, lambda: check(path, precision))
    report.add(f"{settings.parity_invokes} invokes per model, new random inputs each; per output (in the model's order), "
               "error = max |GPU - CPU| over its elements and the invokes; relative = that over the output's largest "
               "magnitude. Limits: float32 1e-4, float16 2e-2 (relative); int8 models: 0 at both precisions (bit-exact; the CPU path is "
               "bit-exact with LiteRT's reference kernels).", "")
    report.table(["model", "precision", "nodes on GPU", "partitions", "max abs error per output",
                  "max rel error per output", ""], rows)


def graphs_section(report: Report, settings: Settings) -> None:
    rows: list[list[Any]] = []
    for path in settings.models_in_time(report, 0.3):
        guarded(report, rows, path.stem, 4, lambda: graphs_of(report, settings, path, rows))
    report.table(["model", "invokes", "bit-identical", "graphs"], rows)


def graphs_of(report: Report, settings: Settings, path: pathlib.Path, rows: list[list[Any]]) -> None:
    graph_delegate = GpuDelegate(device=settings.device())
    with_graphs = make(path, graph_delegate)
    eager = make(path, GpuDelegate(device=settings.device(), cuda_graphs=False))
    worst = 0.0
    identical = True
    for k in range(settings.graph_invokes):
        inputs = random_inputs(eager, 100 + k)
        for a, b in zip(invoke(with_graphs, inputs), invoke(eager, inputs)):
            identical = identical and np.array_equal(a, b, equal_nan=True)
            worst = max(worst, errors(a, b)[0])
    stats = graph_delegate.partition_stats()
    graph_state = ", ".join(sorted({s.graph if s.invokes >= 2 else "ran once" for s in stats})) or "no partition"
    if not identical:
        report.fail(f"{path.stem}: graphs on and off differ by up to {worst:.3g}")
    if any(s.graph != "replaying" for s in stats if s.invokes >= 2):  # (an init subgraph runs once)
        report.fail(f"{path.stem}: a partition is not replaying a graph ({graph_state})")
    rows.append([path.stem, settings.graph_invokes, "yes" if identical else f"**no** ({worst:.3g})", graph_state])


def latency_section(report: Report, settings: Settings, counters_rows: list[list[Any]]) -> None:
    rows: list[list[Any]] = []
    for path in settings.models_in_time(report, 0.8):
        for batch in settings.batches:
            guarded(report, rows, f"{path.stem} batch {batch}", 7, lambda: latency_of(settings, path, batch, rows, counters_rows))
    report.add("Milliseconds per invoke, median / p90, host clock around `invoke()` (after 3 warm-up invokes); "
               "speed-up = CPU median / GPU-with-graphs median; device ms = each partition's ops between two CUDA "
               "events, last invoke.", "")
    report.table(["model", "batch", "CPU path", "GPU eager", "GPU graphs", "speed-up", "device ms per partition"], rows)


def latency_of(settings: Settings, path: pathlib.Path, batch: int, rows: list[list[Any]], counters_rows: list[list[Any]]) -> None:
    try:
        cpu = make(path, batch=batch)
    except Exception as error:  # a model whose shapes are fixed
        rows.append([path.stem, batch, f"n/a ({type(error).__name__})", "", "", "", ""])
        return
    inputs = random_inputs(cpu, 7)
    cpu_times = timed(cpu, inputs, settings.cpu_runs)
    eager_delegate = GpuDelegate(device=settings.device(), cuda_graphs=False)
    eager = make(path, eager_delegate, batch)
    graph_delegate = GpuDelegate(device=settings.device())
    graphs = make(path, graph_delegate, batch)
    if not eager_delegate.kernels or not graph_delegate.kernels:
        rows.append([path.stem, batch, median_p90(cpu_times), "not delegated", "", "", ""])
        return
    eager_times = timed(eager, inputs, settings.latency_runs)
    graph_times = timed(graphs, inputs, settings.latency_runs)
    device_ms = [f"{s.device_ms:.3f}" for s in graph_delegate.partition_stats() if s.device_ms is not None]
    rows.append([path.stem, batch, median_p90(cpu_times), median_p90(eager_times), median_p90(graph_times),
                 f"{statistics.median(cpu_times) / statistics.median(graph_times):.1f}x", " + ".join(device_ms)])
    if batch != 1:
        return
    io = sum(x.nbytes for x in inputs) + sum(int(np.prod(d["shape"])) * np.dtype(d["dtype"]).itemsize
                                             for d in cpu.get_output_details())
    for mode, delegate in (("eager", eager_delegate), ("graphs", graph_delegate)):
        last = delegate.last_invoke()
        counters_rows.append([
            path.stem, mode, len(delegate.kernels),
            last.kernel_launches if delegate.device.counts_launches else "n/a",
            f"{last.graph_replays} / {last.graph_nodes}", last.uploads, last.downloads,
            f"{last.transfer_bytes} / {io}", last.synchronizations, last.pool_allocations,
        ])


def counters_section(report: Report, rows: list[list[Any]]) -> None:
    report.add("The last invoke of the latency runs (after warm-up), batch 1, summed over partitions. Launches: "
               "kernels launched one by one from the host (a real device does not count them: n/a); graph: replays / "
               "graph nodes they ran; bytes: moved / the model's inputs + outputs.", "")
    report.table(["model", "mode", "partitions", "launches", "graph", "uploads", "downloads", "bytes", "syncs",
                  "allocations"], rows)
    for row in rows:
        if row[1] == "graphs" and row[9] != 0:
            report.fail(f"{row[0]}: {row[9]} pool allocations per invoke after warm-up with graphs")


# -- 7. issue 24: float kernels near the hardware ------------------------------------------------------

#: Issue 24's acceptance on a GPU (an H100 or H200).
TARGET_DEVICE_MS = {"mp_pose_detection": 0.6, "mp_palm_detection_lite": 0.4}
TARGET_IMAGES_PER_S_BATCH_128 = 50_000
TARGET_FACE_MS_BATCH_1 = 0.25
TARGET_FLOAT16_SPEEDUP = 1.5
TARGET_GRAPH_NODES_PER_NODE = 0.4


def met(value: float, target: float, at_most: bool) -> str:
    ok = value <= target if at_most else value >= target
    return "yes" if ok else "**no**"


def device_ms(delegate: GpuDelegate) -> float:
    """The last invoke's device time, summed over the partitions (CUDA events)."""
    return sum(s.device_ms for s in delegate.partition_stats() if s.device_ms is not None)


def issue24_section(report: Report, settings: Settings) -> None:
    models = {p.stem: p for p in settings.models} | {p.stem: p for p in bundled_models()}
    report.add("Targets are issue 24's acceptance on a GPU; `--host` (the emulated CUDA device, kernels on the CPU) "
               "only rehearses the section: its times say nothing about a GPU.", "")

    # Graph nodes per delegated node, and the kernel variants prepare chose.
    rows: list[list[Any]] = []
    for name in settings.graph_node_models:
        def graph_nodes(name: str = name) -> None:
            delegate = GpuDelegate(device=settings.device())
            interpreter = make(models[name], delegate)
            inputs = random_inputs(interpreter, 24)
            for _ in range(2):  # the second invoke captures the graph and replays it
                invoke(interpreter, inputs)
            stats = delegate.partition_stats()
            nodes = sum(len(s.nodes) for s in stats)
            graph = sum(s.graph_nodes for s in stats)
            variants: dict[str, int] = {}
            for s in stats:
                for kind in s.kinds:
                    if kind.endswith("]"):
                        variant = kind[kind.rindex("[") + 1 : -1]
                        variants[variant] = variants.get(variant, 0) + 1
            fused = sum(1 for s in stats for kernel in s.kernels if kernel.startswith("fused: "))
            ratio = graph / nodes if nodes else 0.0
            rows.append([name, nodes, graph, f"{ratio:.3f}", met(ratio, TARGET_GRAPH_NODES_PER_NODE, True), fused,
                         ", ".join(f"{k}: {v}" for k, v in sorted(variants.items()))])
        guarded(report, rows, name, 7, graph_nodes)
    report.add("### CUDA-graph nodes per delegated node (target <= 0.4)", "")
    report.table(["model", "delegated nodes", "graph nodes", "ratio", "met", "fused launches", "kernel variants"], rows)

    # Face detection: throughput by batch, and the host-clock ms per invoke at batch 1.
    face = models[settings.throughput_model]
    rows = []
    for batch in settings.throughput_batches:
        def throughput(batch: int = batch) -> None:
            for precision in ("float32", "float16"):
                delegate = GpuDelegate(device=settings.device(), precision=precision)
                interpreter = make(face, delegate, batch)
                times = timed(interpreter, random_inputs(interpreter, 7), settings.throughput_runs)
                median = statistics.median(times)
                images = batch / (median / 1e3)
                target = ""
                if face.stem != "mp_face_detection_short_range":
                    target = "(rehearsal)"
                elif batch == 128:
                    target = f">= {TARGET_IMAGES_PER_S_BATCH_128:,}: {met(images, TARGET_IMAGES_PER_S_BATCH_128, False)}"
                elif batch == 1:
                    target = f"<= {TARGET_FACE_MS_BATCH_1} ms: {met(median, TARGET_FACE_MS_BATCH_1, True)}"
                rows.append([batch, precision, median_p90(times), f"{device_ms(delegate):.3f}", f"{images:,.0f}", target])
        guarded(report, rows, f"batch {batch}", 6, throughput)
    report.add(f"### {face.stem}: throughput", "",
               "Host clock around `invoke()` (median / p90 ms, after 3 warm-ups), device ms of the last invoke; "
               "images/s = batch / median. Targets: >= 50,000 images/s at batch 128 and <= 0.25 ms per invoke at "
               "batch 1 (float32).", "")
    report.table(["batch", "precision", "ms per invoke", "device ms", "images/s", "target"], rows)

    # Device ms at batch 1.
    rows = []
    for name in settings.device_ms_models:
        def one(name: str = name) -> None:
            delegate = GpuDelegate(device=settings.device())
            interpreter = make(models[name], delegate)
            times = timed(interpreter, random_inputs(interpreter, 7), settings.latency_runs)
            ms = device_ms(delegate)
            target = TARGET_DEVICE_MS.get(name)
            rows.append([name, median_p90(times), f"{ms:.3f}", f"<= {target}: {met(ms, target, True)}" if target else "(rehearsal)"])
        guarded(report, rows, name, 4, one)
    report.add("### Device ms at batch 1 (float32, graphs)", "")
    report.table(["model", "host ms (median / p90)", "device ms", "target"], rows)

    # float16 against float32.
    rows = []
    batch = settings.float16_batch
    for name in settings.float16_models:
        def compare(name: str = name) -> None:
            measured = {}
            for precision in ("float32", "float16"):
                delegate = GpuDelegate(device=settings.device(), precision=precision)
                interpreter = make(models[name], delegate, batch)
                times = timed(interpreter, random_inputs(interpreter, 7), settings.throughput_runs)
                measured[precision] = (statistics.median(times), device_ms(delegate))
            (host32, dev32), (host16, dev16) = measured["float32"], measured["float16"]
            speedup = dev32 / dev16 if dev16 else float("nan")
            target = "(rehearsal)" if settings.host else f">= {TARGET_FLOAT16_SPEEDUP}x: {met(speedup, TARGET_FLOAT16_SPEEDUP, False)}"
            rows.append([name, batch, f"{host32:.3f} / {dev32:.3f}", f"{host16:.3f} / {dev16:.3f}", f"{speedup:.2f}x", target])
        guarded(report, rows, name, 6, compare)
    report.add(f"### float16 against float32 at batch {batch}", "",
               "ms per invoke: host median / device; speed-up = float32 device ms / float16 device ms.", "")
    report.table(["model", "batch", "float32 ms", "float16 ms", "speed-up", "target"], rows)


def issue25_section(report: Report, settings: Settings) -> None:
    """``benchmarks/gpu_threads.py`` (issue 25: threads that scale, placement="auto" against the
    CPU path) in a subprocess, its report embedded here and kept as ``gpu-threads.md``.
    ``--host`` rehearses its threads and host-cost parts on host emulation (placement="auto"
    is tested by tests/gpu/test_placement.py with injected costs; timing every bundled model
    on the emulated device would take minutes)."""
    out = report.path.parent / "gpu-threads.md"
    command = [sys.executable, str(ROOT / "benchmarks" / "gpu_threads.py"), "--out", str(out)]
    if settings.host:
        command += ["--host", "--skip-placement", "--seconds", "0.3", "--runs", "5"]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    timeout = max(150.0, settings.left())
    try:
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        report.add(f"stopped after {timeout:.0f} s (time budget)", "")
        if out.exists():
            report.add(*out.read_text().splitlines()[1:])
        report.fail("gpu_threads: cut short by the time budget")
        return
    body = out.read_text().splitlines()[1:] if out.exists() else result.stdout.splitlines()
    # Its own headings one level down, under this section's.
    report.add(*(f"#{line}" if line.startswith("## ") else line for line in body), "")
    if result.returncode != 0:
        report.add("```", *result.stderr.splitlines()[-15:], "```", "")
        report.fail(f"gpu_threads: exit {result.returncode}")


#: Issue 31's targets: a first prepare of face detection (every node's candidates checked and
#: timed) and a cached one, in seconds.
TARGET_FIRST_PREPARE_S = 3.0
TARGET_CACHED_PREPARE_S = 0.1


def prepared_in(path: pathlib.Path, delegate: GpuDelegate) -> float:
    """Seconds to apply ``delegate`` to a new interpreter of ``path`` and allocate its tensors."""
    interpreter = Interpreter(model_path=str(path))
    started = time.perf_counter()
    interpreter.modify_graph_with_delegate(delegate)
    interpreter.allocate_tensors()
    return time.perf_counter() - started


def issue31_section(report: Report, settings: Settings) -> None:
    from backends.gpu.placement import PlacementCache

    models = {p.stem: p for p in bundled_models()}
    report.add("Each node with several candidate kernels chose one at prepare (`backends/gpu/tactics.py`): on a GPU "
               "the fastest by CUDA events among those that passed their check against the twin; `--host` (the "
               "emulated CUDA device) checks every candidate but times nothing, so it takes the table's first.", "")
    prepare_rows: list[list[Any]] = []
    node_rows: list[list[Any]] = []
    for name in settings.tactic_models:
        for precision in settings.tactic_precisions:
            def one(name: str = name, precision: str = precision) -> None:
                device, cache = settings.device(), PlacementCache()  # a cache of its own: nothing decided yet
                delegate = GpuDelegate(device=device, precision=precision, placement_cache=cache)
                first = prepared_in(models[name], delegate)
                cached = prepared_in(models[name], GpuDelegate(device=device, precision=precision, placement_cache=cache))
                targets = name == "mp_face_detection_short_range"  # (issue 31's targets are face detection's)
                prepare_rows.append([name, precision, f"{first:.2f}", met(first, TARGET_FIRST_PREPARE_S, True) if targets else "-",
                                     f"{cached:.3f}", met(cached, TARGET_CACHED_PREPARE_S, True) if targets else "-"])
                for kernel in delegate.kernels:
                    for label, choice in kernel.tactics():
                        node_rows.append([name, precision, label, *tactic_cells(choice)])
            guarded(report, node_rows, f"{name} {precision}", 7, one)
    report.add("### First and cached prepare (face detection's targets: <= 3 s and <= 0.1 s)", "")
    report.table(["model", "precision", "first prepare s", "met", "cached prepare s", "met"], prepare_rows)
    report.add("### The kernel each node chose", "")
    report.table(["model", "precision", "node", "chosen", "runner-up", "failed its check", "not applicable"], node_rows)
    failed = [row for row in node_rows if row[5] != "-"]
    if failed:
        report.fail(f"{len(failed)} node(s) had a candidate that failed its check on the device")


def tactic_cells(choice: Any) -> list[str]:
    """The chosen kernel and the runner-up (with their times), the failed and not applicable candidates."""
    def timed(name: str | None) -> str:
        if name is None:
            return "-"
        us = choice.times_us.get(name)
        return name if us is None else f"{name} ({us:.1f} µs)"

    failed = "; ".join(f"{n}: {why}" for n, why in choice.failed.items()) or "-"
    return [timed(choice.chosen), timed(choice.runner_up), failed, ", ".join(choice.not_applicable) or "-"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, required=True, help="directory for device-check.md")
    parser.add_argument("--host", action="store_true", help="run on the emulated CUDA device (no GPU needed)")
    parser.add_argument("--skip-tests", action="store_true", help="leave out section 2 (the pytest run)")
    parser.add_argument("--budget", type=float, default=450.0, help="seconds the whole run may take (default 450)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    settings = Settings(args.host, args.budget)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    report = Report(args.out / "device-check.md", f"litedelegate device check ({'host emulation' if args.host else 'CUDA'}), {stamp}")
    start = time.perf_counter()
    counters: list[list[Any]] = []
    report.section("1. Machine", lambda: machine_section(report, settings))
    if not args.skip_tests:
        report.section("2. GPU tests", lambda: tests_section(report, settings))
    report.section("3. Parity with the CPU path", lambda: parity_section(report, settings))
    report.section("4. CUDA graphs on vs off", lambda: graphs_section(report, settings))
    report.section("5. Latency", lambda: latency_section(report, settings, counters))
    report.section("6. Counters per invoke", lambda: counters_section(report, counters))
    report.section("7. Issue 24: graph nodes, throughput, float16", lambda: issue24_section(report, settings))
    report.section("8. Issue 25: threads and placement", lambda: issue25_section(report, settings))
    report.section("9. Issue 31: kernels chosen by measurement", lambda: issue31_section(report, settings))
    verdict = "all checks passed" if not report.failures else f"{len(report.failures)} check(s) failed"
    report.add("## Result", "", f"{verdict} in {time.perf_counter() - start:.0f} s.", "", *(f"- {f}" for f in report.failures))
    print(report.path.read_text())
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
