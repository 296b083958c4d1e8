#!/usr/bin/env python
"""Mutation fuzzer for ``Interpreter``: load, delegate, ``allocate_tensors``, ``invoke``.

    python tests/fuzz/harness.py --cases 20000 --seed 1 --device both --workers 2 --out /tmp/fuzz
    python tests/fuzz/harness.py --replay /tmp/fuzz/<hash>.tflite --device gpu-host
    LITEDELEGATE_SHIM_SANITIZE=1 python tests/fuzz/harness.py --cases 2000 --device gpu-emulated --out /tmp/fuzz-cuda

Each case is a mutated model (``mutate.make_case(corpus, seed, index)``, deterministic)
run on each device asked for, in a pool of long-lived worker processes (each with an
``RLIMIT_AS`` memory limit; a worker whose case runs past ``--case-timeout`` is killed
and restarted and the case is a HANG; a worker that dies makes its case a CRASH). The
outcomes, the rule that tells a clean error from a wrapped internal one, the output and
the replay are described in ``tests/fuzz/README.md`` and in :func:`classify`.

Exit status: 0 when no case was a HANG, CRASH, UNCAUGHT, WRAPPED_INTERNAL or
HARNESS_ERROR; 1 otherwise; 2 for a usage error.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dis
import faulthandler
import hashlib
import importlib
import json
import linecache
import os
import pathlib
import re
import resource
import signal
import subprocess
import sys
import time
import traceback
import warnings
import zlib
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Iterable, Iterator

HERE = pathlib.Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
for _path in (str(REPO_ROOT), str(HERE)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

# -- outcomes -------------------------------------------------------------------------------

OK = "OK"
CLEAN_ERROR = "CLEAN_ERROR"
WRAPPED_INTERNAL = "WRAPPED_INTERNAL"
UNCAUGHT = "UNCAUGHT"
HANG = "HANG"
CRASH = "CRASH"
HARNESS_ERROR = "HARNESS_ERROR"
OUTCOMES = (OK, CLEAN_ERROR, WRAPPED_INTERNAL, UNCAUGHT, HANG, CRASH, HARNESS_ERROR)
#: Outcomes that make the exit status 1 (what CI gates on).
FAILURES = (WRAPPED_INTERNAL, UNCAUGHT, HANG, CRASH, HARNESS_ERROR)
#: ``gpu-host``: ``GpuDelegate(device="host")`` (the ops' numpy twins); ``gpu-emulated``:
#: ``GpuDelegate(device=emulated_cuda_device())``, the branch a GPU runs (the ``.cu`` kernels
#: through the host shim, sanitized when ``LITEDELEGATE_SHIM_SANITIZE`` is set).
DEVICES = ("cpu", "gpu-host", "gpu-emulated")
#: ``--device`` choices that name several devices.
DEVICE_GROUPS = {"both": ("cpu", "gpu-host"), "all": DEVICES}


#: The case timeout is multiplied by this on a device: the emulated CUDA device runs every
#: CUDA thread of a launch as a C++ call on 2-8 host threads (a pool over a 21 MB input, a
#: legitimate mutant, takes 2-3 s of CPU there, 0.1 s on the numpy twins), and three
#: times slower again under the sanitizers.
DEVICE_TIME_FACTOR = {"gpu-emulated": 3.0}


def case_timeout_on(device: str, timeout: float) -> float:
    """``--case-timeout`` for one run on ``device`` (:data:`DEVICE_TIME_FACTOR`)."""
    return timeout * DEVICE_TIME_FACTOR.get(device, 1.0) * (3.0 if device == "gpu-emulated" and sanitizing() else 1.0)


def devices_of(choice: str) -> list[str]:
    """The devices of a ``--device`` choice."""
    return list(DEVICE_GROUPS.get(choice, (choice,)))


def sanitizing() -> bool:
    """Whether the host shim is built with ASan and UBSan (``LITEDELEGATE_SHIM_SANITIZE``):
    the workers then run under ASan's runtime, without an address-space limit (ASan
    reserves terabytes of it for its shadow memory)."""
    from backends.gpu.cuda.host import sanitizing as shim_sanitizing

    return shim_sanitizing()

#: The project's own error classes that are clear errors wherever they come from
#: (module path, class name).
CLEAR_ERRORS = (
    ("schema.errors", "ModelError"),
    ("delegate_sdk.op_resolver", "UnsupportedOperatorError"),
    ("backends.cpu.kernel", "UnsupportedKernelError"),
    ("schema.custom_options", "CustomOptionsError"),
    ("backends.cpu.quantization", "QuantizationParameterError"),
    ("interpreter.arena", "ArenaLimitError"),
    ("delegate_sdk.delegate", "DelegateError"),
    ("interpreter.subgraph", "InvokeCancelledError"),
    ("schema.versioning.runtime_version", "UnknownOpVersionError"),
    ("backends.gpu.device", "GpuUnavailableError"),
    ("backends.gpu.device", "DeviceMemoryError"),
)
#: Project error classes that report a bug of the project itself: never clean. The
#: emulated device catching a delegate's misuse of device memory or streams, and the
#: interpreter catching a delegate that breaks the SDK's contract (the only delegate
#: fuzzed is the project's own GpuDelegate).
INTERNAL_PROJECT_ERRORS = (
    ("backends.gpu.emulation", "EmulatedDeviceError"),
    ("backends.gpu.probe", "WrongResult"),
    ("delegate_sdk.delegate", "DelegateKernelError"),
    ("delegate_sdk.delegate", "InvalidReplacementError"),
    ("delegate_sdk.delegate", "DelegateDeclarationError"),
)
#: The interpreter's wrappers of another exception (``__cause__``): judged by that cause.
WRAPPER_ERRORS = (
    ("delegate_sdk.context", "KernelError"),
    ("delegate_sdk.delegate", "DelegatePrepareError"),
)
PROJECT_PACKAGES = ("schema", "delegate_sdk", "backends", "interpreter")
_PROJECT_PREFIXES = tuple(str(REPO_ROOT / p) + os.sep for p in PROJECT_PACKAGES)

_clear_types: tuple[type, ...] | None = None
_internal_types: tuple[type, ...] | None = None
_wrapper_types: tuple[type, ...] | None = None


def _load_types(names) -> tuple[type, ...]:
    found = []
    for module, name in names:
        try:
            found.append(getattr(importlib.import_module(module), name))
        except Exception:  # pragma: no cover - a class moved: say so in the report, not crash
            pass
    return tuple(found)


def clear_types() -> tuple[type, ...]:
    global _clear_types
    if _clear_types is None:
        _clear_types = _load_types(CLEAR_ERRORS)
    return _clear_types


def internal_project_types() -> tuple[type, ...]:
    global _internal_types
    if _internal_types is None:
        _internal_types = _load_types(INTERNAL_PROJECT_ERRORS)
    return _internal_types


def wrapper_types() -> tuple[type, ...]:
    global _wrapper_types
    if _wrapper_types is None:
        _wrapper_types = _load_types(WRAPPER_ERRORS)
    return _wrapper_types


def is_project_file(filename: str) -> bool:
    return os.path.realpath(filename).startswith(_PROJECT_PREFIXES)


def relative(filename: str) -> str:
    path = os.path.realpath(filename)
    root = str(REPO_ROOT) + os.sep
    return path[len(root):] if path.startswith(root) else os.path.basename(path)


def _tb_entries(exc: BaseException) -> list:
    entries, tb = [], exc.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    return entries


def innermost_project_frame(exc: BaseException) -> tuple[str, str]:
    """``("backends/cpu/kernels/pad.py:prepare", "backends/cpu/kernels/pad.py:57")`` for the
    innermost frame of the exception's traceback that is project code (not numpy, not
    the harness); ``("", "")`` when none is."""
    for tb in reversed(_tb_entries(exc)):
        code = tb.tb_frame.f_code
        if is_project_file(code.co_filename):
            path = relative(code.co_filename)
            return f"{path}:{code.co_name}", f"{path}:{tb.tb_lineno}"
    return "", ""


def deliberate_raise(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by a ``raise X(...)`` statement of project code (the
    innermost traceback entry is a project frame stopped on ``RAISE_VARARGS`` with an
    exception argument), as opposed to raised by Python itself (an index out of range,
    a missing attribute, a division by zero), by numpy or by a bare ``raise``."""
    entries = _tb_entries(exc)
    if not entries:
        return False
    tb = entries[-1]
    code = tb.tb_frame.f_code
    if not is_project_file(code.co_filename):
        return False
    for instruction in dis.get_instructions(code):
        if instruction.offset == tb.tb_lasti:
            return instruction.opname == "RAISE_VARARGS" and (instruction.arg or 0) >= 1
    return False


def is_clear(exc: BaseException) -> bool:
    """The rule for one exception (a KernelError's root cause, or an exception that
    escaped the API unwrapped):

    1. an instance of ``INTERNAL_PROJECT_ERRORS`` is not clear;
    2. an instance of the project's clear error classes (``CLEAR_ERRORS``) is;
    3. any other exception is clear only when it was raised on purpose by project code
       (:func:`deliberate_raise`), is a Python builtin or project class (not numpy's)
       and has a message: e.g. the ``raise ValueError("Cannot set tensor: ...")`` checks
       of interpreter.py, a kernel's ``raise ValueError(f"... must be ...")`` or the
       binary kernels' ``raise ZeroDivisionError("DIV: division by zero (...)")``.
       An IndexError, KeyError, AttributeError, TypeError, ZeroDivisionError,
       OverflowError, MemoryError, RecursionError or numpy error (UFuncTypeError,
       AxisError, "operands could not be broadcast", "cannot reshape array") raised by
       Python or numpy is internal, as is a bare ``raise NotImplementedError``.
    """
    if isinstance(exc, internal_project_types()):
        return False
    if isinstance(exc, clear_types()):
        return True
    module = type(exc).__module__
    if module != "builtins" and module.split(".")[0] not in PROJECT_PACKAGES:
        return False
    return deliberate_raise(exc) and bool(str(exc).strip())


_NODE_RE = re.compile(r"node \d+ \(([A-Z0-9_]+) v(-?\d+)\)")
_DELEGATE_NODE_RE = re.compile(r"delegate node \d+ \((\w+), replacing")
_FAILED_TYPE_RE = re.compile(r"failed(?: in \w+)?: ([A-Za-z_][\w.]*): ")


def _op_from_frames(exc: BaseException) -> str:
    """'PAD v2' from the innermost backends/ frame whose ``self``/``kernel``/``registration``
    is a kernel or registration (has an ``op_name`` and an integer ``version``)."""
    for tb in reversed(_tb_entries(exc)):
        filename = tb.tb_frame.f_code.co_filename
        if not is_project_file(filename) or not relative(filename).startswith("backends/"):
            continue  # (the interpreter's loops leave a stale `registration` behind)
        local = tb.tb_frame.f_locals
        for name in ("self", "kernel", "registration", "op"):
            obj = local.get(name)
            if obj is None:
                continue
            try:
                op_name, version = getattr(obj, "op_name", None), getattr(obj, "version", None)
            except Exception:
                continue
            if isinstance(op_name, str) and isinstance(version, int) and op_name:
                return f"{op_name} v{version}"
    return ""


def normalise(message: str) -> str:
    """A message with what varies between cases taken out: numbers become N, long or
    odd quoted strings (tensor names) 'S', runs of numbers N.. (shapes)."""
    text = (message or "").strip().splitlines()[0] if (message or "").strip() else ""

    def quoted(match: re.Match) -> str:
        inner = match.group(0)[1:-1]
        return match.group(0) if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,15}", inner) else "'S'"

    text = re.sub(r"'[^']*'|\"[^\"]*\"", quoted, text)
    text = re.sub(r"0x[0-9a-fA-F]+", "N", text)
    text = re.sub(r"(?<![A-Za-z_0-9])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", "N", text)
    text = re.sub(r"(?<![A-Za-z_])(?:nan|inf|-inf)(?![A-Za-z_])", "N", text)
    text = re.sub(r"N(?:(?:\s*[,x]\s*|\s+)N)+", "N..", text)
    text = re.sub(r"\s+", " ", text)
    return text[:200]


def classify(exc: BaseException) -> dict[str, Any]:
    """The outcome of an exception that escaped a case, and what its signature is made of.

    - A wrapper (``WRAPPER_ERRORS``: ``KernelError``, whose message names the node, op,
      version and phase, and ``DelegatePrepareError``, raised by
      ``modify_graph_with_delegate`` when the delegate's prepare raised) is judged by its
      root: the first exception down the ``__cause__`` chain that is not a wrapper (or is
      an ``INTERNAL_PROJECT_ERRORS`` one, such as ``DelegateKernelError``, a KernelError
      subclass). No root: CLEAN_ERROR, unless the message itself says
      ``failed...: <Type>: `` for a type that is not a clear one (a wrapper that kept only
      the text): WRAPPED_INTERNAL. A root for which :func:`is_clear` holds: CLEAN_ERROR;
      any other root: WRAPPED_INTERNAL.
    - any other exception: CLEAN_ERROR when :func:`is_clear` holds, else UNCAUGHT.
    """
    message = f"{type(exc).__name__}: {exc}"
    wrappers, internal = wrapper_types(), internal_project_types()
    if isinstance(exc, wrappers):
        root: BaseException | None = exc
        innermost_wrapper = exc
        while isinstance(root, wrappers) and not isinstance(root, internal):
            innermost_wrapper = root
            root = root.__cause__
        texts = [str(innermost_wrapper)] + ([str(root)] if root is not None else [])
        match = next((m for m in map(_NODE_RE.search, texts) if m), None)
        op = f"{match.group(1)} v{match.group(2)}" if match else ""
        delegate = next((m for m in map(_DELEGATE_NODE_RE.search, texts) if m), None)
        if root is None:
            named = _FAILED_TYPE_RE.search(str(innermost_wrapper))
            clear_names = {t.__name__ for t in clear_types()}
            if named and named.group(1).split(".")[-1] not in clear_names:
                outcome, exc_type, detail = WRAPPED_INTERNAL, named.group(1), str(innermost_wrapper)[named.end():]
            else:
                outcome, exc_type, detail = CLEAN_ERROR, type(innermost_wrapper).__name__, str(innermost_wrapper)
            frame, where = innermost_project_frame(innermost_wrapper)
        else:
            outcome = CLEAN_ERROR if is_clear(root) else WRAPPED_INTERNAL
            exc_type, detail = _type_name(root), str(root)
            frame, where = innermost_project_frame(root)
            if delegate or not op:
                op = _op_from_frames(root) or (f"delegate {delegate.group(1)}" if delegate else op)
        return {"outcome": outcome, "exc_type": exc_type, "op": op, "message": message[:500],
                "norm": normalise(detail), "frame": frame, "where": where}
    outcome = CLEAN_ERROR if is_clear(exc) else UNCAUGHT
    frame, where = innermost_project_frame(exc)
    return {"outcome": outcome, "exc_type": _type_name(exc), "op": _op_from_frames(exc), "message": message[:500],
            "norm": normalise(str(exc)), "frame": frame, "where": where}


def _type_name(exc: BaseException) -> str:
    kind = type(exc)
    module = kind.__module__
    if module == "builtins":
        return kind.__name__
    if module.split(".")[0] in PROJECT_PACKAGES:
        return kind.__name__
    return f"{module.split('.')[0]}.{kind.__name__}"  # numpy.UFuncTypeError, struct.error...


def signature_key(result: dict[str, Any]) -> tuple[str, str, str, str, str]:
    return (result["outcome"], result.get("exc_type", ""), result.get("op", ""), result.get("norm", ""), result.get("frame", ""))


def signature_hash(key: Iterable[str]) -> str:
    return hashlib.sha1("\x1f".join(key).encode()).hexdigest()[:12]


def format_exception(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-20000:]


# -- running one case (in a worker, or in-process for a replay) -----------------------------


#: Inputs with more elements are left as allocate_tensors made them (zeros).
MAX_INPUT_ELEMENTS = 4 << 20


def random_input(rng, detail: dict[str, Any]):
    """A random value of the input's dtype and shape (None: leave the input as it is)."""
    import numpy as np

    dtype = detail["dtype"]
    if dtype is None:
        return None
    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in detail["shape"])
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if size > MAX_INPUT_ELEMENTS:
        return None  # a mutated shape too big to be worth filling: the zeros of allocate_tensors
    if dtype.kind == "f":
        scale = 100.0 if rng.random() < 0.2 else 1.0
        value = rng.standard_normal(shape, dtype=np.float32)
        value *= np.float32(scale)
        return value.astype(dtype, copy=False)
    if dtype.kind == "c":
        return (rng.standard_normal(shape, dtype=np.float32) + 1j * rng.standard_normal(shape, dtype=np.float32)).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape, dtype=np.uint8).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if dtype.itemsize <= 2:
            low, high = int(info.min), int(info.max) + 1
        else:  # indices, counts, loop bounds: small values
            low, high = (0 if dtype.kind == "u" else -4), 16
        return rng.integers(low, high, size=shape, dtype=np.int32 if dtype.itemsize <= 2 else np.int64).astype(dtype, copy=False)
    if dtype.kind == "O":
        return np.array([b"fuzz"] * size, dtype=object).reshape(shape)
    return np.zeros(shape, dtype)


class _PrepareRecorder:
    """Wraps a delegate's ``prepare`` to keep the exception (with its traceback) that the
    interpreter raises as ``DelegatePrepareError`` after restoring the CPU plan."""

    def __init__(self, delegate) -> None:
        self.error: BaseException | None = None
        original = delegate.prepare

        def prepare(*args, **kwargs):
            try:
                return original(*args, **kwargs)
            except Exception as error:
                self.error = error
                raise

        delegate.prepare = prepare


def _warning_summary(caught) -> dict[str, int]:
    summary: collections.Counter = collections.Counter()
    for warning in caught[:10000]:
        text = str(warning.message)
        if text.startswith("delegate ") and "failed in prepare" in text:
            text = "delegate failed in prepare and was not applied (...)"  # counted in 'delegate'
        location = f"{relative(warning.filename)}:{warning.lineno}"
        summary[f"{warning.category.__name__}: {normalise(text)} @ {location}"] += 1
    return dict(summary)


#: The arena limit of the fuzzed interpreters: a mutant whose tensors need more (a batch
#: of 10**6, say) is a clean ArenaLimitError instead of seconds of legitimate arithmetic
#: that would pass the case's time limit. The bundled models need under 50 MiB.
ARENA_LIMIT_BYTES = 256 << 20


def run_case(data: bytes, device: str, *, max_while_iterations: int | None = None) -> dict[str, Any]:
    """Load ``data`` into an Interpreter (with ``GpuDelegate(device="host")`` for
    ``gpu-host``, on a new emulated CUDA device for ``gpu-emulated``), allocate, set random
    inputs (seeded by the model's CRC32), invoke twice and read the outputs. Returns the
    outcome and, for an exception, its classification."""

    def body(state: dict[str, Any]) -> None:
        import numpy as np

        from interpreter import Interpreter

        kwargs = {"experimental_arena_limit_bytes": ARENA_LIMIT_BYTES}
        if max_while_iterations:
            kwargs["experimental_max_while_iterations"] = max_while_iterations
        state["phase"] = "load"
        interpreter = Interpreter(model_content=data, **kwargs)
        if device in ("gpu-host", "gpu-emulated"):
            from backends.gpu import GpuDelegate
            from backends.gpu.device import emulated_cuda_device

            state["phase"] = "delegate"
            delegate = GpuDelegate(device="host" if device == "gpu-host" else emulated_cuda_device())
            recorder = _PrepareRecorder(delegate)
            try:
                # A delegate whose prepare raises makes this raise DelegatePrepareError (as
                # LiteRT): the run ends here and is judged by the cause (classify). Going on
                # with the restored CPU plan would only repeat the 'cpu' run.
                interpreter.modify_graph_with_delegate(delegate)
            finally:
                if recorder.error is not None:  # (an interpreter that only warns: kept apart)
                    state["delegate_error"] = recorder.error
        elif device != "cpu":
            raise SystemExit(f"unknown device {device!r}")
        state["phase"] = "allocate"
        interpreter.allocate_tensors()
        state["phase"] = "set_inputs"
        details = interpreter.get_input_details()
        rng = np.random.default_rng(zlib.crc32(data))
        for detail in details:
            state["phase"] = "make_inputs"
            try:
                value = random_input(rng, detail)
            except MemoryError:
                value = None  # the worker's memory limit: leave the input as it is
            except Exception as error:
                raise _HarnessError(f"random_input failed for {detail.get('name')!r}: {error!r}") from error
            state["phase"] = "set_inputs"
            if value is None:
                continue
            try:
                interpreter.set_tensor(detail["index"], value)
            except ValueError as error:
                if classify(error)["outcome"] != CLEAN_ERROR:
                    raise
                state["skipped_inputs"] = state.get("skipped_inputs", 0) + 1  # e.g. a constant input
        state["phase"] = "invoke"
        interpreter.invoke()
        state["phase"] = "invoke2"
        interpreter.invoke()
        state["phase"] = "outputs"
        for detail in interpreter.get_output_details():
            interpreter.get_tensor(detail["index"])

    return run_guarded(body, device)


class _HarnessError(Exception):
    """The harness's own code failed (not the project's)."""


def run_guarded(body: Callable[[dict[str, Any]], None], device: str) -> dict[str, Any]:
    """Run ``body(state)`` catching every exception (KeyboardInterrupt aside) and every
    warning; the result is what a worker sends back for one device."""
    state: dict[str, Any] = {"phase": "start"}
    result: dict[str, Any] = {"device": device, "outcome": OK}
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, _address_space_for(device):
        warnings.simplefilter("always")
        try:
            body(state)
        except KeyboardInterrupt:
            raise
        except _HarnessError as error:
            result.update(outcome=HARNESS_ERROR, exc_type="HarnessError", op="", message=str(error)[:500],
                          norm=normalise(str(error)), frame="tests/fuzz/harness.py", where="", traceback=format_exception(error))
        except BaseException as error:  # noqa: B036 - SystemExit or MemoryError from a case is a finding
            state["error"] = error
            info = classify(error)
            result.update(info)
            if info["outcome"] != CLEAN_ERROR:
                result["traceback"] = format_exception(error)
    result["phase"] = state["phase"]
    result["seconds"] = time.perf_counter() - start
    result["warnings"] = _warning_summary(caught)
    if "delegate_error" in state and not _caused_by(state.get("error"), state["delegate_error"]):
        error = state["delegate_error"]
        info = classify(error)
        info["traceback"] = format_exception(error)
        result["delegate"] = info
    if state.get("skipped_inputs"):
        result["skipped_inputs"] = state["skipped_inputs"]
    return result


def _caused_by(error: BaseException | None, cause: BaseException) -> bool:
    while error is not None:
        if error is cause:
            return True
        error = error.__cause__
    return False


def run_call(target: str, args: list, device: str) -> dict[str, Any]:
    """Run an injected case function ``module:function`` (the tests use it to check the
    supervision and the classification with cases that hang, abort or raise)."""
    module, _, name = target.partition(":")
    function = getattr(importlib.import_module(module), name)
    return run_guarded(lambda state: function(state, device, *args), device)


# -- the worker process ---------------------------------------------------------------------


def _set_memory_limit(memory_mb: int) -> None:
    if memory_mb and memory_mb > 0 and not sanitizing():
        limit = int(memory_mb) << 20
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


#: What a run on the emulated CUDA device may add to the worker's RLIMIT_AS: the host shim
#: runs a block of a cooperative kernel (``__syncthreads``, ``__shared__``) with one OS thread
#: per CUDA thread, up to 1024, each reserving a stack of address space (8 MiB by default);
#: under the plain limit a 1024-thread block cannot start its threads (std::system_error,
#: then abort: fuzz case 35:186, a CONV_2D of mp_palm_detection_lite with dilation 100,
#: whose tiled kernel runs 1024-thread blocks).
SHIM_THREADS = 1024 + 64


@contextlib.contextmanager
def _address_space_for(device: str) -> Iterator[None]:
    """On ``gpu-emulated``, the address-space limit raised by the shim's thread stacks
    (:data:`SHIM_THREADS`) for the duration of the run; elsewhere, nothing."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if device != "gpu-emulated" or soft == resource.RLIM_INFINITY:
        yield
        return
    stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
    stack = 8 << 20 if stack == resource.RLIM_INFINITY or stack <= 0 else stack
    raised = soft + SHIM_THREADS * stack
    resource.setrlimit(resource.RLIMIT_AS, (raised if hard == resource.RLIM_INFINITY else min(raised, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)
    except Exception:
        return 0.0


def worker_main(read_fd: int, write_fd: int) -> None:
    """A worker: receives its configuration, then tasks, and sends one result per device."""
    inbox, outbox = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    config = inbox.recv()
    _set_memory_limit(config.get("memory_mb", 0))
    faulthandler.enable(file=sys.stderr, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    corpus = None
    if config.get("warm", True):  # before the first task's clock runs out (see STARTUP_GRACE_S)
        import interpreter  # noqa: F401
        import backends.gpu  # noqa: F401
        import mutate

        if config.get("load_corpus"):
            corpus = mutate.load_corpus(config.get("models"))
    outbox.send({"ready": True})
    while True:
        try:
            task = inbox.recv()
        except EOFError:
            return
        if task is None:
            return
        kind = task["kind"]
        data, meta = None, {}
        if kind == "fuzz":
            try:
                import mutate

                if corpus is None:
                    corpus = mutate.load_corpus(config.get("models"))
                case = mutate.make_case(corpus, task["seed"], task["index"])
                data = case.data
                meta = {"seed_name": case.seed_name, "size": len(data), "mutations": case.mutations}
            except Exception as error:
                for device in task["devices"]:
                    outbox.send({"device": device, "outcome": HARNESS_ERROR, "exc_type": type(error).__name__,
                                 "op": "", "message": f"make_case failed: {error!r}"[:500], "norm": normalise(f"make_case failed: {error!r}"),
                                 "frame": "tests/fuzz/mutate.py", "where": "", "phase": "mutate",
                                 "traceback": format_exception(error), "warnings": {}, "seconds": 0.0})
                continue
        elif kind == "bytes":
            data = task["data"]
            meta = {"size": len(data)}
        for device in task["devices"]:
            sys.stderr.write(f"-- task {task.get('id')} device {device}\n")
            sys.stderr.flush()
            if kind == "call":
                result = run_call(task["target"], task.get("args", []), device)
            else:
                result = run_case(data, device, max_while_iterations=config.get("max_while_iterations"))
            result.update(meta)
            result["rss_mb"] = _rss_mb()
            outbox.send(result)


# -- the supervisor (parent) ----------------------------------------------------------------

_FRAME_LINE = re.compile(r'^\s*File "(.+)", line (\d+) in (\S+)')


_PHASE_OF_API = {
    "__init__": "load", "modify_graph_with_delegate": "delegate", "allocate_tensors": "allocate",
    "set_tensor": "set_inputs", "invoke": "invoke", "get_tensor": "outputs", "get_output_details": "outputs",
}


def phase_from_stack(frames: list[str]) -> str:
    """The API call a dumped stack is in ('allocate', 'invoke'...), from its outermost
    interpreter/interpreter.py frame; '?' when none."""
    for frame in reversed(frames):
        path, _, function = frame.rpartition(":")
        if path.startswith("interpreter/interpreter.py") and function in _PHASE_OF_API:
            return _PHASE_OF_API[function]
    return "?"


def parse_faulthandler(text: str) -> tuple[str, str, list[str]]:
    """``(innermost project frame file:function, file:line, frames)`` of the current
    thread's stack in a faulthandler dump (the first project frame, innermost first)."""
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        if line.startswith("Current thread") or (start is None and line.startswith("Stack (most recent call first)")):
            start = i
    if start is None:
        for i, line in enumerate(lines):
            if line.startswith("Thread 0x"):
                start = i
    frames = []
    if start is not None:
        for line in lines[start + 1:]:
            match = _FRAME_LINE.match(line)
            if not match:
                if frames:
                    break
                continue
            frames.append((match.group(1), int(match.group(2)), match.group(3)))
    shown = [f"{relative(f)}:{n}:{fn}" for f, n, fn in frames]
    for filename, lineno, function in frames:
        if is_project_file(filename):
            return f"{relative(filename)}:{function}", f"{relative(filename)}:{lineno}", shown
    if frames:
        filename, lineno, function = frames[0]
        return f"{relative(filename)}:{function}", f"{relative(filename)}:{lineno}", shown
    return "", "", shown


_SANITIZER_ERROR = re.compile(r"(ERROR: AddressSanitizer: [^\n]*|[^\s:]+:\d+:\d+: runtime error: [^\n]*)")
_SANITIZER_FRAME = re.compile(r"#\d+ 0x[0-9a-f]+ in (.+) (\S+?):(\d+)(?::\d+)?[ \t]*$", re.M)


def parse_sanitizer_report(text: str) -> tuple[str, str] | None:
    """``(what, kernel frame)`` of the first AddressSanitizer or UBSan report in a worker's
    log (the sanitized host shim: ``LITEDELEGATE_SHIM_SANITIZE``), or None: what is the
    report's line without addresses and thread ids; the frame is ``file.cu:function`` of
    the innermost frame in a ``.cu`` or ``.cuh`` file (the kernel), else the first one."""
    error = _SANITIZER_ERROR.search(text)
    if error is None:
        return None
    what = re.sub(r"\s*(on address|at pc|pc|bp|sp) 0x[0-9a-f]+", "", error.group(1)).strip()
    what = re.sub(r"^\S*/", "", what)  # a UBSan line starts with the source's (temporary) path
    frames = _SANITIZER_FRAME.findall(text[error.end():error.end() + 20000])
    kernel = [f for f in frames if f[1].endswith((".cu", ".cuh"))] or frames
    frame = f"{os.path.basename(kernel[0][1])}:{kernel[0][0].split('(')[0].split('<')[0].split()[-1]}" if kernel else ""
    return what, frame


#: Seconds a new worker may take to import numpy and the project and read the corpus
#: (it then says it is ready, and its first task's --case-timeout starts).
STARTUP_GRACE_S = 60.0


class _Worker:
    def __init__(self, number: int, config: dict[str, Any], log_dir: pathlib.Path) -> None:
        self.number = number
        self.log_path = log_dir / f"worker-{number}.log"
        parent_read, child_write = os.pipe()
        child_read, parent_write = os.pipe()
        env = dict(os.environ)
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(name, "1")
        env["PYTHONHASHSEED"] = "0"
        if sanitizing():
            from backends.gpu.cuda.host import sanitized_environment

            env = sanitized_environment(env)  # ASan's runtime loaded first, leak checks off
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "harness.py"), "--worker", str(child_read), str(child_write)],
            pass_fds=(child_read, child_write), stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            env=env, cwd=str(REPO_ROOT), start_new_session=True,
        )
        os.close(child_read)
        os.close(child_write)
        self.inbox = Connection(parent_read, writable=False)
        self.outbox = Connection(parent_write, readable=False)
        self.outbox.send(config)
        self.task: dict[str, Any] | None = None
        self.pending: list[str] = []
        self.deadline = 0.0
        self.log_offset = 0
        self.tasks_done = 0
        self.rss_mb = 0.0
        self.fresh = True

    def assign(self, task: dict[str, Any], timeout: float) -> None:
        self.task = task
        self.pending = list(task["devices"])
        self.log_offset = self._log_size()
        # a fresh worker imports numpy and the project, and reads the corpus, first
        # (its "ready" message restarts the clock)
        timeout = case_timeout_on(self.pending[0], timeout) if self.pending else timeout
        self.deadline = time.monotonic() + timeout + (STARTUP_GRACE_S if self.fresh else 0.0)
        self.fresh = False
        self.outbox.send(task)

    def _log_size(self) -> int:
        try:
            return os.path.getsize(self.log_path)
        except OSError:
            return 0

    def log_since(self, offset: int) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return f.read(200000).decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, kill: bool = False) -> None:
        try:
            if not kill and self.proc.poll() is None:
                try:
                    self.outbox.send(None)
                except OSError:
                    pass
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    kill = True
            if kill and self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        finally:
            for conn in (self.inbox, self.outbox):
                try:
                    conn.close()
                except OSError:
                    pass
            self.log.close()


class Supervisor:
    """Runs tasks on a pool of worker processes, with a time limit per (task, device).

    A task is a dict: ``{"id", "kind": "fuzz", "seed", "index", "devices"}`` (a mutated
    model), ``{"kind": "bytes", "data", ...}`` (given model bytes) or ``{"kind": "call",
    "target": "module:function", "args"}`` (an injected case function). ``on_result`` gets
    one result per device, with ``task`` added."""

    def __init__(self, *, workers: int = 2, case_timeout: float = 10.0, memory_mb: int = 2048,
                 models: str | None = None, max_while_iterations: int | None = 1000,
                 log_dir: str | os.PathLike | None = None, recycle_after: int = 500,
                 describe: Callable[[dict[str, Any]], dict[str, Any]] | None = None, load_corpus: bool = False) -> None:
        import tempfile

        self.describe = describe  # fills seed_name/size/mutations of a task whose worker died

        self.workers_wanted = max(1, int(workers))
        self.case_timeout = float(case_timeout)
        self.config = {"memory_mb": memory_mb, "models": models, "max_while_iterations": max_while_iterations,
                       "load_corpus": load_corpus}
        self.memory_mb = memory_mb
        self.log_dir = pathlib.Path(log_dir) if log_dir else pathlib.Path(tempfile.mkdtemp(prefix="litedelegate-fuzz-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.recycle_after = recycle_after
        self._numbers = 0
        self.restarts = collections.Counter()

    def _spawn(self) -> _Worker:
        self._numbers += 1
        return _Worker(self._numbers, self.config, self.log_dir)

    def run(self, tasks: Iterable[dict[str, Any]], on_result: Callable[[dict[str, Any]], None]) -> None:
        source: Iterator[dict[str, Any]] = iter(tasks)
        requeued: collections.deque = collections.deque()
        workers = [self._spawn() for _ in range(self.workers_wanted)]
        exhausted = False
        try:
            while True:
                for i, worker in enumerate(workers):
                    if worker.task is not None:
                        continue
                    if requeued:
                        task = requeued.popleft()
                    elif not exhausted:
                        task = next(source, None)
                        if task is None:
                            exhausted = True
                            continue
                    else:
                        continue
                    try:
                        worker.assign(task, self.case_timeout)
                    except OSError:  # died while idle: start another and give it the task
                        worker.stop(kill=True)
                        workers[i] = worker = self._spawn()
                        self.restarts["died idle"] += 1
                        worker.assign(task, self.case_timeout)
                busy = [w for w in workers if w.task is not None]
                if not busy:
                    break
                now = time.monotonic()
                timeout = max(0.0, min(w.deadline for w in busy) - now)
                ready = wait([w.inbox for w in busy], timeout)
                now = time.monotonic()
                for i, worker in enumerate(workers):
                    if worker.task is None:
                        continue
                    if worker.inbox in ready:
                        try:
                            result = worker.inbox.recv()
                        except (EOFError, OSError):
                            workers[i] = self._crashed(worker, requeued, on_result)
                            continue
                        if result.get("ready"):  # warmed up: the first task's clock starts now
                            worker.deadline = time.monotonic() + self._timeout(worker)
                            continue
                        self._deliver(worker, result, on_result)
                        if worker.task is None:
                            worker.tasks_done += 1
                            limit_mb = self.memory_mb * 0.6 if self.memory_mb else float("inf")
                            if worker.tasks_done >= self.recycle_after or worker.rss_mb > limit_mb:
                                worker.stop()
                                workers[i] = self._spawn()
                                self.restarts["recycled"] += 1
                    elif now >= worker.deadline:
                        workers[i] = self._hung(worker, requeued, on_result)
        finally:
            for worker in workers:
                worker.stop(kill=worker.task is not None)

    def _timeout(self, worker: _Worker) -> float:
        """The time limit of the worker's current run (its next pending device's)."""
        return case_timeout_on(worker.pending[0], self.case_timeout) if worker.pending else self.case_timeout

    def _deliver(self, worker: _Worker, result: dict[str, Any], on_result) -> None:
        result["task"] = {k: v for k, v in worker.task.items() if k != "data"}
        worker.rss_mb = result.get("rss_mb", 0.0)
        device = result.get("device")
        if device in worker.pending:
            worker.pending.remove(device)
        on_result(result)
        if worker.pending:
            worker.deadline = time.monotonic() + self._timeout(worker)
            worker.log_offset = worker._log_size()
        else:
            worker.task = None

    def _lost(self, worker: _Worker, requeued, on_result, result: dict[str, Any]) -> _Worker:
        task = worker.task
        device = worker.pending[0] if worker.pending else "?"
        rest = worker.pending[1:]
        result.setdefault("phase", "?")
        result.update(device=device, task={k: v for k, v in task.items() if k != "data"}, warnings={})
        if task.get("kind") == "bytes":
            result["size"] = len(task["data"])
        elif self.describe is not None:
            try:
                result.update(self.describe(task))
            except Exception as error:  # pragma: no cover - reported, not fatal
                result["describe_error"] = repr(error)
        on_result(result)
        if rest:
            requeued.appendleft(dict(task, devices=rest))
        return self._spawn()

    def _hung(self, worker: _Worker, requeued, on_result) -> _Worker:
        try:
            os.kill(worker.proc.pid, signal.SIGUSR1)  # faulthandler: dump every thread's stack
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and "most recent call first" not in worker.log_since(worker.log_offset):
            time.sleep(0.05)
        time.sleep(0.1)
        worker.stop(kill=True)
        dump = worker.log_since(worker.log_offset)
        frame, where, frames = parse_faulthandler(dump)
        frame = frame.rpartition(":")[0]  # a loop is caught at any line: its file is the signature
        self.restarts["hang"] += 1
        timeout = self._timeout(worker)
        message = f"no result within {timeout:g} s; stack: {' <- '.join(frames[:6])}"
        return self._lost(worker, requeued, on_result, {
            "phase": phase_from_stack(frames), "outcome": HANG, "exc_type": "", "op": "", "message": message[:500], "norm": "", "frame": frame,
            "where": where, "traceback": dump[-20000:], "seconds": timeout,
        })

    def _crashed(self, worker: _Worker, requeued, on_result) -> _Worker:
        try:
            returncode = worker.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            worker.stop(kill=True)
            returncode = worker.proc.returncode
        time.sleep(0.05)
        dump = worker.log_since(worker.log_offset)
        worker.stop(kill=True)
        if returncode is not None and returncode < 0:
            try:
                how = signal.Signals(-returncode).name
            except ValueError:
                how = f"signal {-returncode}"
        else:
            how = f"exit status {returncode}"
        frame, where, frames = parse_faulthandler(dump)
        message = f"worker died ({how}); stack: {' <- '.join(frames[:6])}"
        report = parse_sanitizer_report(dump)
        if report is not None:  # ASan / UBSan ended the worker: their report says where
            message, frame, where = f"worker died ({how}): {report[0]}; stack: {' <- '.join(frames[:6])}", report[1], report[1]
        self.restarts["crash"] += 1
        return self._lost(worker, requeued, on_result, {
            "phase": phase_from_stack(frames), "outcome": CRASH, "exc_type": how, "op": "", "message": message[:500],
            "norm": normalise(report[0]) if report else "", "frame": frame, "where": where, "traceback": dump[-20000:], "seconds": 0.0,
        })


# -- aggregation and the report ---------------------------------------------------------------


class Stats:
    """Counts per device and outcome, signatures with their smallest case, warnings."""

    def __init__(self) -> None:
        self.counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.signatures: dict[tuple, dict[str, Any]] = {}
        self.delegate_signatures: dict[tuple, dict[str, Any]] = {}
        self.warnings: collections.Counter = collections.Counter()
        self.runs_with_warnings: collections.Counter = collections.Counter()
        self.slowest: list[tuple[float, str, str, str]] = []
        self.runs = 0
        self.seconds = 0.0

    def add(self, result: dict[str, Any]) -> None:
        device, outcome = result.get("device", "?"), result["outcome"]
        self.runs += 1
        self.counts[device][outcome] += 1
        self.seconds += result.get("seconds", 0.0)
        task = result.get("task", {})
        case_id = f"{task.get('seed')}:{task.get('index')}" if task.get("kind") == "fuzz" else str(task.get("id", "?"))
        if result.get("warnings"):
            self.runs_with_warnings[device] += 1
            self.warnings.update(result["warnings"])
        if outcome != HANG:
            self.slowest.append((result.get("seconds", 0.0), case_id, device, result.get("seed_name", "")))
            self.slowest = sorted(self.slowest, reverse=True)[:10]
        if outcome != OK:
            self._add_signature(self.signatures, result, result, case_id)
        if result.get("delegate"):
            info = dict(result["delegate"])
            info["outcome"] = "DELEGATE_PREPARE_" + ("CLEAN" if info["outcome"] == CLEAN_ERROR else "INTERNAL")
            self._add_signature(self.delegate_signatures, info, result, case_id)

    @staticmethod
    def _add_signature(table, info: dict[str, Any], result: dict[str, Any], case_id: str) -> None:
        key = signature_key(info)
        entry = table.get(key)
        task = result.get("task", {})
        candidate = {
            "size": result.get("size", 0), "case": case_id, "device": result.get("device"),
            "seed_name": result.get("seed_name", ""), "mutations": result.get("mutations", []),
            "message": info.get("message", ""), "where": info.get("where", ""), "phase": result.get("phase", ""),
            "traceback": info.get("traceback", ""), "task": task,
        }
        order = (candidate["size"], str(candidate["case"]), str(candidate["device"]))
        if entry is None:
            entry = table[key] = {
                "hash": signature_hash(key), "outcome": key[0], "exc_type": key[1], "op": key[2], "norm": key[3],
                "frame": key[4], "count": 0, "devices": collections.Counter(), "phases": collections.Counter(),
                "smallest": candidate, "_order": order,
            }
        entry["count"] += 1
        entry["devices"][result.get("device", "?")] += 1
        entry["phases"][result.get("phase", "?")] += 1
        if order < entry["_order"]:
            entry["smallest"], entry["_order"] = candidate, order

    def failures(self) -> list[dict[str, Any]]:
        return sorted((e for e in self.signatures.values() if e["outcome"] in FAILURES),
                      key=lambda e: (-e["count"], e["hash"]))

    def clean(self) -> list[dict[str, Any]]:
        return sorted((e for e in self.signatures.values() if e["outcome"] == CLEAN_ERROR),
                      key=lambda e: (-e["count"], e["hash"]))

    def delegate_internal(self) -> list[dict[str, Any]]:
        return sorted((e for e in self.delegate_signatures.values() if e["outcome"].endswith("INTERNAL")),
                      key=lambda e: (-e["count"], e["hash"]))

    def total(self, outcome: str) -> int:
        return sum(c[outcome] for c in self.counts.values())

    def failed(self) -> bool:
        return any(self.total(o) for o in FAILURES)


def _entry_json(entry: dict[str, Any], *, with_traceback: bool = True) -> dict[str, Any]:
    out = {k: v for k, v in entry.items() if not k.startswith("_")}
    out["devices"], out["phases"] = dict(entry["devices"]), dict(entry["phases"])
    smallest = dict(entry["smallest"])
    if not with_traceback:
        smallest.pop("traceback", None)
    out["smallest"] = smallest
    return out


def write_reproducers(stats: Stats, out: pathlib.Path, corpus, args) -> None:
    """One ``<hash>.tflite`` (the smallest model of the signature) and ``<hash>.txt`` per
    failure signature, and per delegate-prepare signature with an internal exception."""
    import mutate

    for entry in stats.failures() + stats.delegate_internal():
        smallest = entry["smallest"]
        task = smallest["task"]
        if task.get("kind") != "fuzz":
            continue
        case = mutate.make_case(corpus, task["seed"], task["index"])
        path = out / f"{entry['hash']}.tflite"
        path.write_bytes(case.data)
        mismatch = "" if len(case.data) == smallest["size"] else (
            f"\nWARNING: regenerated {len(case.data)} bytes, the worker ran {smallest['size']} (non-deterministic mutation)\n"
        )
        entry["reproducer"] = str(path)
        device_flag = smallest["device"] or "cpu"
        replay = f"python tests/fuzz/harness.py --replay {path} --device {device_flag}"
        if args.max_while_iterations != 1000:
            replay += f" --max-while-iterations {args.max_while_iterations}"
        entry["replay"] = replay
        text = [
            f"signature {entry['hash']}: {entry['outcome']} {entry['exc_type']} {entry['op']}".rstrip(),
            f"  where: {entry['frame']} ({smallest['where']})",
            f"  normalised message: {entry['norm']}",
            f"  count: {entry['count']} (devices {dict(entry['devices'])}, phases {dict(entry['phases'])})",
            "",
            f"smallest case: {smallest['case']} (--seed {task['seed']}, index {task['index']}), device {smallest['device']}, phase {smallest['phase']}",
            f"seed model: {case.seed_name}; {len(case.data)} bytes",
            "mutations:",
            *[f"  - {m}" for m in case.mutations],
            "",
            f"message: {smallest['message']}",
            "",
            f"replay: {replay}",
            f"regenerate: python tests/fuzz/harness.py --replay-case {task['seed']}:{task['index']} --device {device_flag}"
            + (f" --models '{args.models}'" if args.models else ""),
            mismatch,
            "traceback:" if smallest.get("traceback") else "",
            smallest.get("traceback", ""),
        ]
        (out / f"{entry['hash']}.txt").write_text("\n".join(text) + "\n")


def verify_reproducers(stats: Stats, args) -> None:
    """Replay each reproducer in a fresh worker and say whether it gives its signature."""
    entries = [e for e in stats.failures() + stats.delegate_internal() if e.get("reproducer")]
    if not entries:
        return
    tasks = []
    for number, entry in enumerate(entries):
        data = pathlib.Path(entry["reproducer"]).read_bytes()
        tasks.append({"id": number, "kind": "bytes", "data": data, "devices": [entry["smallest"]["device"] or "cpu"]})
    got: dict[int, dict[str, Any]] = {}
    supervisor = Supervisor(workers=args.workers, case_timeout=args.case_timeout, memory_mb=args.memory_mb,
                            models=args.models, max_while_iterations=args.max_while_iterations or None,
                            log_dir=pathlib.Path(args.out) / "logs" / "verify")
    supervisor.run(tasks, lambda r: got.__setitem__(r["task"]["id"], r))
    for number, entry in enumerate(entries):
        result = got.get(number)
        if result is None:
            entry["replays"] = "no result"
            continue
        if entry["outcome"].startswith("DELEGATE_PREPARE"):
            info = result.get("delegate")
            if info:
                info = dict(info, outcome="DELEGATE_PREPARE_" + ("CLEAN" if info["outcome"] == CLEAN_ERROR else "INTERNAL"))
            ok = info is not None and signature_hash(signature_key(info)) == entry["hash"]
        elif entry["outcome"] in (HANG, CRASH):  # where the stack was when killed varies: compare outcomes
            ok = result["outcome"] == entry["outcome"]
        else:
            ok = signature_hash(signature_key(result)) == entry["hash"]
        entry["replays"] = "yes" if ok else f"no: {result['outcome']} {result.get('exc_type', '')} {result.get('message', '')[:150]}"
        txt = pathlib.Path(entry["reproducer"]).with_suffix(".txt")
        if txt.exists():
            txt.write_text(txt.read_text() + f"\nreplayed in a fresh worker: {entry['replays']}\n")


def render_report(stats: Stats, args, elapsed: float, cases_run: int, top: int = 30) -> str:
    devices = sorted(stats.counts)
    lines = [
        f"litedelegate fuzz: seed {args.seed}, cases {args.start}..{args.start + cases_run - 1} ({cases_run} mutated models) "
        f"on {', '.join(devices)}; models {args.models or '*'}; {args.workers} worker(s), case timeout {args.case_timeout:g} s, "
        f"memory {args.memory_mb} MiB, max WHILE iterations {args.max_while_iterations or 'unbounded'}",
        f"elapsed {elapsed:.1f} s: {stats.runs / elapsed if elapsed else 0:.1f} runs/s, {cases_run / elapsed if elapsed else 0:.1f} cases/s",
        "",
        f"{'outcome':18s}" + "".join(f"{d:>10s}" for d in devices) + f"{'total':>10s}",
    ]
    for outcome in OUTCOMES:
        row = [stats.counts[d][outcome] for d in devices]
        lines.append(f"{outcome:18s}" + "".join(f"{v:10d}" for v in row) + f"{sum(row):10d}")
    lines.append(f"{'runs with warnings':18s}" + "".join(f"{stats.runs_with_warnings[d]:10d}" for d in devices)
                 + f"{sum(stats.runs_with_warnings.values()):10d}  (not failures)")
    failures = stats.failures()
    lines += ["", f"failure signatures: {len(failures)} distinct (sorted by count; reproducers in {args.out})"]
    for rank, entry in enumerate(failures[:top], 1):
        smallest = entry["smallest"]
        lines.append(
            f"{rank:3d}. {entry['count']:6d}  {entry['outcome']:16s} {entry['exc_type'] or '-':22s} {entry['op'] or '-':28s} "
            f"{entry['frame'] or '-'}  [{entry['hash']}]"
        )
        lines.append(f"        e.g. {smallest['message'][:260]}")
        lines.append(f"        at {smallest['where'] or '-'}; devices {dict(entry['devices'])}; phases {dict(entry['phases'])}"
                     + (f"; replays: {entry['replays']}" if "replays" in entry else ""))
    if len(failures) > top:
        lines.append(f"     ... {len(failures) - top} more in summary.json")
    delegate = stats.delegate_internal()
    prepare_failures = sum(e["count"] for e in stats.delegate_signatures.values())
    if prepare_failures:
        internal = sum(e["count"] for e in delegate)
        lines += ["", f"GpuDelegate prepare failures that did not end the run (a warning, not DelegatePrepareError): {prepare_failures} run(s), "
                      f"{prepare_failures - internal} with a clean error, {internal} with an internal exception"]
    if delegate:
        lines += ["", f"GpuDelegate prepare failed with an internal exception but the run went on (not counted as failures): "
                      f"{len(delegate)} distinct"]
        for entry in delegate[:top]:
            lines.append(f"     {entry['count']:6d}  {entry['exc_type']:22s} {entry['op'] or '-':28s} {entry['frame'] or '-'}  [{entry['hash']}]")
            lines.append(f"        e.g. {entry['smallest']['message'][:260]}")
    clean = stats.clean()
    lines += ["", f"clean error signatures: {len(clean)} distinct; the most frequent:"]
    for entry in clean[:10]:
        lines.append(f"     {entry['count']:6d}  {entry['exc_type']:24s} {entry['op'] or '-':24s} {entry['norm'][:110]}")
    if stats.warnings:
        lines += ["", "warnings (counted, not failures); the most frequent:"]
        for text, count in stats.warnings.most_common(8):
            lines.append(f"     {count:6d}  {text[:170]}")
    if stats.slowest:
        lines += ["", "slowest runs: " + ", ".join(f"{s:.2f} s ({case} {device} {name})" for s, case, device, name in stats.slowest[:5])]
    return "\n".join(lines)


def summary_json(stats: Stats, args, elapsed: float, cases_run: int, restarts) -> dict[str, Any]:
    return {
        "seed": args.seed, "start": args.start, "cases": cases_run, "devices": sorted(stats.counts), "models": args.models,
        "workers": args.workers, "case_timeout": args.case_timeout, "memory_mb": args.memory_mb,
        "max_while_iterations": args.max_while_iterations, "elapsed_s": elapsed, "runs": stats.runs,
        "runs_per_s": stats.runs / elapsed if elapsed else 0.0, "cases_per_s": cases_run / elapsed if elapsed else 0.0,
        "counts": {d: {o: stats.counts[d][o] for o in OUTCOMES} for d in sorted(stats.counts)},
        "totals": {o: stats.total(o) for o in OUTCOMES},
        "runs_with_warnings": dict(stats.runs_with_warnings),
        "failure_signatures": [_entry_json(e) for e in stats.failures()],
        "delegate_prepare_internal_signatures": [_entry_json(e) for e in stats.delegate_internal()],
        "clean_error_signatures": [_entry_json(e, with_traceback=False) for e in stats.clean()],
        "warnings": dict(stats.warnings.most_common()),
        "worker_restarts": dict(restarts),
        "failed": stats.failed(),
    }


# -- the command line -------------------------------------------------------------------------


def fuzz_tasks(seed: int, start: int, count: int, devices: list[str], deadline: float | None, counter: list[int]):
    for index in range(start, start + count):
        if deadline is not None and time.monotonic() > deadline:
            return
        counter[0] += 1
        yield {"id": index, "kind": "fuzz", "seed": seed, "index": index, "devices": devices}


def run_fuzz(args) -> int:
    import mutate

    devices = devices_of(args.device)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    corpus = mutate.load_corpus(args.models)
    stats = Stats()
    started = time.monotonic()
    deadline = started + args.time_limit if args.time_limit else None
    dispatched = [0]
    last_progress = [started]

    def on_result(result: dict[str, Any]) -> None:
        stats.add(result)
        now = time.monotonic()
        if not args.quiet and now - last_progress[0] >= args.progress:
            last_progress[0] = now
            totals = " ".join(f"{o}={stats.total(o)}" for o in OUTCOMES if stats.total(o))
            print(f"[{now - started:7.0f} s] {dispatched[0]} cases dispatched, {stats.runs} runs "
                  f"({stats.runs / (now - started):.1f}/s): {totals}", file=sys.stderr, flush=True)

    def describe(task: dict[str, Any]) -> dict[str, Any]:
        case = mutate.make_case(corpus, task["seed"], task["index"])
        return {"seed_name": case.seed_name, "size": len(case.data), "mutations": case.mutations}

    supervisor = Supervisor(workers=args.workers, case_timeout=args.case_timeout, memory_mb=args.memory_mb,
                            models=args.models, max_while_iterations=args.max_while_iterations or None,
                            log_dir=out / "logs", recycle_after=args.recycle_after, describe=describe, load_corpus=True)
    supervisor.run(fuzz_tasks(args.seed, args.start, args.cases, devices, deadline, dispatched), on_result)
    elapsed = time.monotonic() - started
    write_reproducers(stats, out, corpus, args)
    if args.verify:
        verify_reproducers(stats, args)
    report = render_report(stats, args, elapsed, dispatched[0], top=args.top)
    summary = summary_json(stats, args, elapsed, dispatched[0], supervisor.restarts)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    (out / "report.txt").write_text(report + "\n")
    print(report)
    print(f"\nsummary: {out / 'summary.json'}; report: {out / 'report.txt'}")
    return 1 if stats.failed() else 0


def replay(args) -> int:
    """Run one model in this process (with the worker's memory limit) and print the
    outcome, the signature and the traceback."""
    import mutate

    if args.replay_case:
        seed, _, index = args.replay_case.partition(":")
        case = mutate.make_case(mutate.load_corpus(args.models), int(seed), int(index))
        data = case.data
        print(f"case {args.replay_case}: seed model {case.seed_name}, {len(data)} bytes")
        for mutation in case.mutations:
            print(f"  - {mutation}")
        if args.write:
            pathlib.Path(args.write).write_bytes(data)
            print(f"wrote {args.write}")
    else:
        data = pathlib.Path(args.replay).read_bytes()
    _set_memory_limit(args.memory_mb)
    faulthandler.enable(all_threads=True)
    devices = devices_of(args.device)
    failed = False
    for device in devices:
        faulthandler.dump_traceback_later(case_timeout_on(device, args.case_timeout), exit=True)
        result = run_case(data, device, max_while_iterations=args.max_while_iterations or None)
        faulthandler.cancel_dump_traceback_later()
        print(f"\n[{device}] {result['outcome']} (phase {result['phase']}, {result['seconds']:.3f} s)")
        if result["outcome"] != OK:
            print(f"  signature {signature_hash(signature_key(result))}: {result.get('exc_type')} | {result.get('op') or '-'} | "
                  f"{result.get('frame') or '-'} ({result.get('where')})")
            print(f"  message: {result.get('message')}")
            if result.get("traceback"):
                print(result["traceback"])
        if result.get("delegate"):
            info = result["delegate"]
            print(f"  GpuDelegate prepare failed ({info['outcome']}): {info['message']}")
            print(info.get("traceback", ""))
        for text, count in result.get("warnings", {}).items():
            print(f"  warning x{count}: {text}")
        failed |= result["outcome"] in FAILURES
    return 1 if failed else 0


def _run_under_sanitizers_if_asked(argv: list[str]) -> None:
    """In sanitized mode, a replay runs in this process: start it again with ASan's
    runtime loaded first (the sanitized shim cannot load otherwise)."""
    import ctypes

    if sanitizing() and not hasattr(ctypes.CDLL(None), "__asan_init"):
        from backends.gpu.cuda.host import sanitized_environment

        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable, str(HERE / "harness.py"), *argv], sanitized_environment())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        worker_main(int(argv[1]), int(argv[2]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000, help="mutated models to run (each on every device)")
    parser.add_argument("--seed", type=int, default=0, help="run seed: case i is make_case(seed, i)")
    parser.add_argument("--start", type=int, default=0, help="first case index (to split a long run)")
    parser.add_argument("--models", default=None, help="fnmatch pattern(s), comma-separated, on seed names "
                        "('converter/*', 'real/*', 'gen/*'); default: all")
    parser.add_argument("--device", choices=(*DEVICES, *DEVICE_GROUPS), default="both",
                        help="'both': cpu and gpu-host; 'all': the three")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", default=None, help="output directory (default /tmp/litedelegate-fuzz-<seed>)")
    parser.add_argument("--case-timeout", type=float, default=10.0, help="seconds per case and device before it is a HANG")
    parser.add_argument("--memory-mb", type=int, default=2048, help="RLIMIT_AS of each worker (0: none)")
    parser.add_argument("--max-while-iterations", type=int, default=1000,
                        help="Interpreter(experimental_max_while_iterations=...) so that an endless WHILE is a clean "
                        "error, not a hang (0: unbounded)")
    parser.add_argument("--time-limit", type=float, default=0, help="stop dispatching new cases after this many seconds")
    parser.add_argument("--top", type=int, default=30, help="failure signatures to list")
    parser.add_argument("--recycle-after", type=int, default=500, help="restart a worker after this many tasks")
    parser.add_argument("--no-verify", dest="verify", action="store_false", help="do not replay the reproducers")
    parser.add_argument("--progress", type=float, default=30.0, help="seconds between progress lines (stderr)")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--replay", metavar="FILE.tflite", help="run one model in this process and print its outcome")
    parser.add_argument("--replay-case", metavar="SEED:INDEX", help="regenerate one case and run it in this process")
    parser.add_argument("--write", metavar="FILE", help="with --replay-case: also write the model bytes")
    args = parser.parse_args(argv)
    if args.replay or args.replay_case:
        if args.device == "both" and "--device" not in argv:
            args.device = "cpu"
        _run_under_sanitizers_if_asked(argv)
        return replay(args)
    if args.cases < 0 or args.workers < 1:
        parser.error("--cases must be >= 0 and --workers >= 1")
    if args.out is None:
        args.out = f"/tmp/litedelegate-fuzz-{args.seed}"
    return run_fuzz(args)


if __name__ == "__main__":
    sys.exit(main())
