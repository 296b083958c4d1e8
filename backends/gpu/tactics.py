"""Tactics, as TensorRT has them: every GPU node with more than one kernel chooses among its
candidates by measuring them on the device, at prepare.

Each op family declares its candidates in one table of :class:`Tactic` rows (name, launcher,
when it applies, its launch shape), as Triton's ``@autotune(configs=...)`` and TorchInductor's
``select_algorithm`` do: ``cuda/conv2d.py``'s ``CONV2D_TACTICS``, ``cuda/depthwise.py``'s
``DEPTHWISE_TACTICS``, ``cuda/matmul.py``'s ``MATMUL_TACTICS`` (the hand-written kernels and
the vendor GEMM, ``cuda/cublas.py``). Adding a candidate is adding one row.

At prepare (``GpuOp.choose_kernel``, after ``fusion.py`` folded its nodes in), :func:`choose`:

1. keeps the rows that apply to the node's problem (the others are listed with why not);
2. checks each on the device, once per device and problem: every input (data, weights,
   bias, residual, alpha) holds integers in {-2..2}, so every float sum is exact in any order
   (a convolution's check input keeps the node's channels, filter and padding on fewer rows
   and columns: ``ops/conv.py``'s ``WeightsOp.check_input_shape``),
   and the result must equal the node's numpy twin exactly (values equal: IEEE ``==``, so
   the sign of a zero aside; int8 exact). A vendor row is also run captured in a CUDA graph
   and replayed, which must give the same values. A row that fails is never chosen, and the
   report names it and why;
3. times the rows that passed on the node's real shapes with CUDA events (one warm-up launch,
   then ``TIMED_LAUNCHES`` launches between two events), and keeps the fastest; a tie goes
   to the row first in the table.

The emulated device has no time of its own: there the time of each row is injected
(``GpuDelegate(tactic_timing=...)``, a callable taking a :class:`TacticTrial` and returning
microseconds), as placement's costs are. Without injected times it chooses the first row of
the table that applies and passed its check (the tables list the direct kernel, the reference
every other row is checked against, first). Host emulation (``device="host"``) runs every
row's numpy twin, the reference itself: its rows are not checked.

Decisions (the choice, the times, the checks) are cached by GPU name, compute capability,
driver, op family, problem (shapes, dtypes, parameters), precision, the candidates (their names
and the digests of their CUDA sources) and where the times came from: in memory, and in the
directory of ``placement.PlacementCache`` when it has one (the placement decisions' cache, a
``tactic-<key>.json`` file per decision). A second prepare of the same model on the same device
neither checks nor times again.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from backends.gpu.placement import SHARED_CACHE, PlacementCache, format_us

#: The launch shape of a row: ``(grid, block)``.
LaunchShape = tuple[tuple[int, int, int], tuple[int, int, int]]

#: Launches timed between the two events (after one warm-up launch).
TIMED_LAUNCHES = 3

#: The values of every check input: integers whose products and sums are exact in float16
#: and float32, in any order.
CHECK_VALUES = (-2, 2)


#: From this many outputs a node must keep the GPU as busy as its direct kernel would: a row whose
#: grid leaves more of the GPU idle does not apply to it (``emptier_reason``; issue 31's audit
#: found tiles of 4,096 outputs running such nodes on a few blocks of an idle GPU at batch 1).
FILL_OUTPUTS = 16384


def _always(problem: Any) -> str | None:
    return None


def launch_blocks(shape: LaunchShape) -> int:
    """The blocks of a launch shape ``(grid, block)``."""
    (x, y, z), _ = shape
    return int(x) * int(y) * int(z)


def launch_threads(shape: LaunchShape) -> int:
    """The threads of a launch shape ``(grid, block)``."""
    _, (x, y, z) = shape
    return launch_blocks(shape) * int(x) * int(y) * int(z)


def emptier_reason(outputs: int, shape: LaunchShape, direct: LaunchShape, resident_threads: int) -> str | None:
    """Why a row launching ``shape`` leaves the GPU emptier than the direct kernel's launch
    ``direct`` on a node of ``outputs`` outputs, or None. From ``FILL_OUTPUTS`` outputs, the
    row's threads must keep as much of the GPU busy as the direct kernel's: as many threads, up
    to what the GPU holds at once (``resident_threads``: multiprocessors x threads each, from
    ``Device.resident_threads``; 0: unknown, no cap). At batch 1 that is as many blocks of 256
    threads as the direct kernel; where both grids fill the GPU (large batches) the fewer blocks
    of a larger tile leave nothing idle, and the row applies."""
    if outputs < FILL_OUTPUTS:
        return None
    row, reference = launch_threads(shape), launch_threads(direct)
    if resident_threads > 0:
        row, reference = min(row, resident_threads), min(reference, resident_threads)
    if row >= reference:
        return None
    return (
        f"its {launch_blocks(shape)} blocks would leave the GPU emptier than the direct kernel's {launch_blocks(direct)} "
        f"({outputs} outputs)"
    )


@dataclass(frozen=True)
class Tactic:
    """One candidate kernel of an op family: a row of the family's table.

    ``name``: unique in its table, shown in reports (``"tiled 64x64"``). ``launcher``: the
    ``sources._Launcher`` class that runs it (its ``source`` is the ``.cu`` file compiled for
    it). ``applies(problem)``: None when the row can run the node, else why not (a reason
    about correctness or the hardware, not a guess at speed: speed is measured).
    ``launch_shape(problem)``: the ``(grid, block)`` it launches (a ValueError means it cannot
    launch this problem). ``options``: the launcher's keyword arguments fixed by the row
    (``{"tile": (64, 64)}``). ``vendor``: a library call (cuBLAS): also checked captured in a
    CUDA graph, and built with the device's library handle."""

    name: str
    launcher: type
    applies: Callable[[Any], str | None] = _always
    launch_shape: Callable[[Any], LaunchShape] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    vendor: bool = False

    def reason(self, problem: Any) -> str | None:
        """Why this row cannot run ``problem``, or None."""
        try:
            why = self.applies(problem)
            if why is None and self.launch_shape is not None:
                self.launch_shape(problem)
        except ValueError as error:  # a launch it cannot make (a grid past CUDA's limits)
            return str(error)
        return why

    def build(self, device: Any, arguments: Mapping[str, Any]) -> Any:
        """The launcher for one node: its ``arguments``, the row's options, and what the device
        gives a launcher of this source (compiled module, host emulation, library handle)."""
        return self.launcher(**arguments, **self.options, **device.launcher_arguments(self.launcher.source, vendor=self.vendor))


@dataclass(frozen=True)
class TacticTrial:
    """What an injected timing is asked: the time of ``tactic`` on one node (``op``: its op,
    version and node index, ``family``: the table, ``problem``: its shapes and parameters)."""

    node: int
    op: str
    family: str
    tactic: str
    problem: Any


#: An injected timing source: ``timing(trial) -> microseconds``.
TacticTiming = Callable[[TacticTrial], float]


@dataclass(frozen=True)
class TacticSettings:
    """What a delegate tells its ops about choosing: the injected timing (None: measure on a
    device, the table's order on an emulated one), the cache, and the options that add or
    remove candidates (``allow_tf32``: cuBLAS may round float32 operands to TF32;
    ``vendor_gemm``: cuBLAS is among the candidates)."""

    timing: TacticTiming | None = None
    cache: PlacementCache = SHARED_CACHE
    allow_tf32: bool = False
    vendor_gemm: bool = True


@dataclass
class TacticChoice:
    """What prepare chose for one node, and why: the rows that applied and passed their
    check (table order), those whose check failed (with why), those that do not apply (with
    why), the times (microseconds, per timed row; empty when nothing was timed) and where
    they came from (``"measured"``, ``"injected"``, or ``"table order"``), and the launch shape
    ``(grid, block)`` of each applicable row that declares one (``launches``)."""

    family: str
    chosen: str
    passed: tuple[str, ...]
    failed: dict[str, str] = field(default_factory=dict)
    not_applicable: dict[str, str] = field(default_factory=dict)
    times_us: dict[str, float] = field(default_factory=dict)
    source: str = "table order"
    checked: bool = True
    from_cache: bool = False
    launches: dict[str, LaunchShape] = field(default_factory=dict)

    @property
    def runner_up(self) -> str | None:
        """The next best row: the second fastest timed one (or, untimed, the next in table order)."""
        others = [name for name in self.passed if name != self.chosen]
        if not others:
            return None
        if self.times_us:
            timed = [name for name in others if name in self.times_us]
            return min(timed, key=lambda name: (self.times_us[name], self.passed.index(name))) if timed else None
        return others[0]

    def summary(self) -> str:
        """``"tiled 64x64"``, with times ``"tiled 64x64 12.0 µs, runner-up direct 15.3 µs"``,
        and ``"; failed its check: mma 64x64 (...)"`` for each row that failed."""
        text = self.chosen
        if self.chosen in self.times_us:
            text += f" {format_us(self.times_us[self.chosen])}"
            runner_up = self.runner_up
            if runner_up is not None:
                text += f", runner-up {runner_up} {format_us(self.times_us[runner_up])}"
        for name, why in self.failed.items():
            text += f"; failed its check: {name} ({why})"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "family": self.family, "chosen": self.chosen, "passed": list(self.passed), "failed": self.failed,
            "not_applicable": self.not_applicable, "times_us": self.times_us, "source": self.source,
            "checked": self.checked, "launches": {name: [list(g), list(b)] for name, (g, b) in self.launches.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], names: Sequence[str]) -> "TacticChoice | None":
        """A cached choice, if it is one for these candidates (None for anything else, a
        damaged file included: the node is then checked and timed again)."""
        try:
            choice = cls(
                str(data["family"]), str(data["chosen"]), tuple(str(n) for n in data["passed"]),
                {str(k): str(v) for k, v in data["failed"].items()},
                {str(k): str(v) for k, v in data["not_applicable"].items()},
                {str(k): float(v) for k, v in data["times_us"].items()}, str(data["source"]), bool(data["checked"]),
                from_cache=True,
                launches={str(k): (_dim3(g), _dim3(b)) for k, (g, b) in data.get("launches", {}).items()},
            )
        except (AttributeError, KeyError, TypeError, ValueError):
            return None
        known = set(names)
        if choice.chosen not in choice.passed or not set(choice.passed) <= known or not set(choice.failed) <= known:
            return None
        return choice


def _dim3(values: Sequence[Any]) -> tuple[int, int, int]:
    x, y, z = (int(v) for v in values)
    return (x, y, z)


class NoTacticError(RuntimeError):
    """No candidate of a node can run it: none applies, or every one failed its check."""


@dataclass
class TacticRequest:
    """One node's choice: its ``family`` table and ``problem``, the launchers' ``arguments``
    (the node's own: stride, activation, storage...), the check ``arrays`` (host arrays in
    the storage dtype, integers in {-2..2}; None for an absent input) and ``call(launcher,
    arrays) -> output``, one launch on device arrays. ``label`` names the node in errors.
    ``timed_arrays``: the arrays a device times the rows on, the node's real shapes (default:
    the check's; a convolution checks on a smaller input that runs the same code paths)."""

    family: str
    table: Sequence[Tactic]
    problem: Any
    arguments: Mapping[str, Any]
    arrays: Callable[[], dict[str, np.ndarray | None]]
    call: Callable[[Any, Mapping[str, Any]], Any]
    label: str
    node: int
    precision: str
    timed_arrays: Callable[[], dict[str, np.ndarray | None]] | None = None


def check_values(rng: np.random.Generator, shape: Sequence[int], dtype: Any) -> np.ndarray:
    """A check input: integers in {-2..2} (``CHECK_VALUES``) of ``shape``, as ``dtype``."""
    low, high = CHECK_VALUES
    return rng.integers(low, high + 1, size=tuple(int(d) for d in shape)).astype(dtype)


#: A product's candidate check keeps all its rows up to this many (``check_rows``).
CHECK_ROWS_ALL = 192


def check_rows(rows: int) -> int:
    """The rows (M) of a product's candidate check: all of them up to ``CHECK_ROWS_ALL``, else
    128 plus the node's own remainder modulo 64: two full tiles of the largest tile's 64 rows
    and the node's partial tile, every alignment of the real count kept (as the convolutions'
    checks keep at most ``ops/conv.py``'s ``CHECK_OUTPUT_SIDE`` output rows and columns). The
    depth and the columns stay the node's; a device times the rows on the real shapes. On the
    emulated device a tiled candidate runs one OS thread per GPU thread, so checking a
    [2000, 512] FULLY_CONNECTED on all its rows took over 30 s of prepare."""
    rows = int(rows)
    return rows if rows <= CHECK_ROWS_ALL else 128 + rows % 64


def choose(device: Any, request: TacticRequest, settings: TacticSettings) -> tuple[Tactic, TacticChoice]:
    """The row that runs ``request``'s node, and the report of the choice (the rules are this
    module's docstring's). Raises :class:`NoTacticError` when no row applies or passes."""
    table = tuple(request.table)
    not_applicable = {t.name: why for t in table if (why := t.reason(request.problem)) is not None}
    applicable = [t for t in table if t.name not in not_applicable]
    if not applicable:
        raise NoTacticError(f"{request.label}: no kernel can run it: " + "; ".join(f"{n}: {w}" for n, w in not_applicable.items()))
    measured = settings.timing is None and not device.emulated
    source = "injected" if settings.timing is not None else "measured" if measured else "table order"
    key = _key(device, request, table, source)
    cached = settings.cache.get(key)
    if cached is not None:
        choice = TacticChoice.from_json(cached, [t.name for t in applicable])
        if choice is not None:
            return next(t for t in applicable if t.name == choice.chosen), choice
    checked = not device.is_host
    failed: dict[str, str] = {}
    times: dict[str, float] = {}
    passed = applicable
    if checked or measured:
        passed, failed, times = _check_and_time(device, request, applicable, measured)
    if not passed:
        raise NoTacticError(
            f"{request.label}: no kernel passed its check on {device.name}: " + "; ".join(f"{n}: {w}" for n, w in failed.items())
        )
    if settings.timing is not None:
        times = {
            t.name: float(settings.timing(TacticTrial(request.node, request.label, request.family, t.name, request.problem)))
            for t in passed
        }
    order = {t.name: position for position, t in enumerate(table)}
    chosen = min(passed, key=lambda t: (times.get(t.name, 0.0), order[t.name])) if times else passed[0]
    launches = {t.name: t.launch_shape(request.problem) for t in applicable if t.launch_shape is not None}
    choice = TacticChoice(
        request.family, chosen.name, tuple(t.name for t in passed), failed, not_applicable, times, source, checked,
        launches=launches,
    )
    settings.cache.put(key, choice.to_json())
    return chosen, choice


def _check_and_time(device: Any, request: TacticRequest, applicable: Sequence[Tactic], measured: bool):
    """Check every applicable row against the node's twin, and (on a real device) time those
    that pass: ``(passed rows, {failed row: why}, {row: µs})``."""
    host_arrays = request.arrays()
    expected = _twin_output(request, applicable[0], host_arrays)
    passed: list[Tactic] = []
    failed: dict[str, str] = {}
    times: dict[str, float] = {}
    with device.labelled(f"{request.label}: checking its kernels"), device.side_stream() as stream:
        xp = device.xp
        arrays = {name: None if a is None else xp.asarray(a) for name, a in host_arrays.items()}
        timed = arrays
        if measured and request.timed_arrays is not None:
            timed = {name: None if a is None else xp.asarray(a) for name, a in request.timed_arrays().items()}
        for tactic in applicable:
            try:
                launcher = tactic.build(device, request.arguments)
                why = _mismatch(expected, request.call(launcher, arrays).get(stream=stream))
                if why is None and tactic.vendor:
                    replayed = _captured_output(device, stream, lambda: request.call(launcher, arrays))
                    why = _mismatch(expected, replayed, "replayed in a CUDA graph, ")
                if why is None and measured:
                    times[tactic.name] = _measure(device, stream, lambda: request.call(launcher, timed))
            except Exception as error:  # a launch the device refused: this row cannot run the node
                from backends.gpu.emulation import EmulatedDeviceError

                if isinstance(error, EmulatedDeviceError):
                    raise  # a bug the emulated device caught: not a property of the row
                why = f"{type(error).__name__}: {error}"
            if why is not None:
                failed[tactic.name] = why
                continue
            passed.append(tactic)
    return passed, failed, times


def _twin_output(request: TacticRequest, reference: Tactic, host_arrays: Mapping[str, Any]) -> np.ndarray:
    """The node's numpy twin on the check arrays: the reference row (the table's first that
    applies) run in host emulation."""
    twin_device = _twin_device()
    with twin_device.active():
        launcher = reference.build(twin_device, request.arguments)
        arrays = {name: None if a is None else twin_device.upload(a, a.dtype) for name, a in host_arrays.items()}
        return twin_device.download(request.call(launcher, arrays))


@functools.lru_cache(maxsize=1)
def _twin_device() -> Any:
    from backends.gpu.device import open_device

    return open_device("host")


def _mismatch(expected: np.ndarray, actual: np.ndarray, how: str = "") -> str | None:
    """Why ``actual`` is not ``expected`` exactly (values equal, NaN where NaN), or None."""
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return f"{how}gave {actual.dtype}{list(actual.shape)}, expected {expected.dtype}{list(expected.shape)}"
    equal = (actual == expected) | (np.isnan(actual) & np.isnan(expected) if actual.dtype.kind == "f" else False)
    if np.all(equal):
        return None
    wrong = np.argwhere(~np.asarray(equal))
    first = tuple(int(i) for i in wrong[0])
    return (
        f"{how}{len(wrong)} of {expected.size} outputs differ from the twin on inputs in {{-2..2}}, the first at "
        f"{list(first)}: {actual[first]!r}, expected {expected[first]!r}"
    )


def _captured_output(device: Any, stream: Any, launch: Callable[[], Any]) -> np.ndarray:
    """``launch()`` captured on ``stream`` in a CUDA graph (into a pool of its own), replayed
    once, read back."""
    xp = device.xp
    pool = xp.cuda.MemoryPool()
    with xp.cuda.using_allocator(pool.malloc):
        stream.begin_capture()
        try:
            out = launch()
        except BaseException:
            try:
                stream.end_capture()  # (invalidated by the failure: what matters is the failure)
            except Exception:
                pass
            raise
        graph = stream.end_capture()
        graph.launch(stream=stream)
        return out.get(stream=stream)


def _measure(device: Any, stream: Any, launch: Callable[[], Any]) -> float:
    """Microseconds per launch on ``stream``: one warm-up, then ``TIMED_LAUNCHES`` between two
    CUDA events."""
    events = device.xp.cuda.Event(), device.xp.cuda.Event()
    launch()
    events[0].record(stream)
    for _ in range(TIMED_LAUNCHES):
        launch()
    events[1].record(stream)
    stream.synchronize()
    return device.elapsed_ms(*events) * 1e3 / TIMED_LAUNCHES


def _key(device: Any, request: TacticRequest, table: Sequence[Tactic], source: str) -> str:
    """The cache key of one choice (see the module docstring)."""
    digest = hashlib.sha256()
    parts = (
        "tactic", *device.identity(), request.family, repr(request.problem), request.precision, source,
        repr(sorted(request.arguments.items(), key=lambda item: item[0])),
        *(f"{t.name}|{t.launcher.__module__}.{t.launcher.__qualname__}|{_source_digest(t.launcher.source)}" for t in table),
    )
    for part in parts:
        digest.update(str(part).encode() + b"\0")
    return "tactic-" + digest.hexdigest()[:32]


@functools.lru_cache(maxsize=None)
def _source_digest(source: str) -> str:
    from backends.gpu.cuda.sources import SOURCES, read_source

    if source not in SOURCES:
        return source
    return hashlib.sha256(read_source(source).encode()).hexdigest()[:16]


def report_lines(choices: Sequence[tuple[str, TacticChoice]]) -> list[str]:
    """One line per node that chose among kernels: ``"CONV_2D v1 (node 3): tiled 64x64 12.0 µs,
    runner-up direct 15.3 µs"``, then a line per candidate whose check failed."""
    lines = []
    for label, choice in choices:
        times = f" ({choice.source}{', cached' if choice.from_cache else ''})"
        lines.append(f"{label}: {choice.summary()}{times if choice.times_us or choice.from_cache else ''}")
    return lines


__all__ = [
    "FILL_OUTPUTS", "LaunchShape", "NoTacticError", "Tactic", "TacticChoice", "TacticRequest", "TacticSettings", "TacticTiming",
    "TacticTrial", "check_values", "choose", "emptier_reason", "launch_blocks", "launch_threads", "report_lines",
]
