"""The ray engine: a batch job on a Ray cluster, through Ray Data.

The sources become a dataset of ``{"path", "row"}`` rows, and ``map_batches`` runs them
through :class:`~interpreter.batch.worker.SourcePredictor` as its actor class: a fixed
pool of ``workers`` actors, each built once with its interpreter, with a CPU each, or
``num_gpus`` with ``delegate="gpu"`` (the actor then opens the GPU Ray assigned to it).
An actor that dies is restarted and its batch retried (``max_restarts`` and
``max_task_retries`` unbounded); a batch's rows reach the driver only once its task has
finished, so no input is lost or duplicated. The driver writes the batches as they
arrive, in the order they finish (the ``source`` column says which input each row is).

Without ``address`` a local cluster is started (no dashboard) and stopped at the end; a
Ray already initialized in the process (``ray.init`` by the caller) is used as it is.
The workers import this project's packages from where the driver did: a local cluster's
workers get that directory on ``PYTHONPATH``; a cluster joined at ``address`` gets the
packages shipped as the job's ``py_modules`` (a caller that initializes Ray itself for a
remote cluster ships them, or installs litedelegate there, itself). Workers read the
input files themselves: on a cluster of several machines the paths must be readable on
every node (a shared filesystem).
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import re
from typing import Any, Sequence

import numpy as np

from interpreter.batch.inputs import Source, import_optional
from interpreter.batch.job import Collector, JobOptions
from interpreter.batch.worker import ERROR, PATH, ROW, WORKER, BatchResult, SourcePredictor

#: The packages a worker imports (``py_modules`` for a remote cluster).
PACKAGES = ("interpreter", "backends", "delegate_sdk", "schema")


def project_root() -> pathlib.Path:
    """The directory this project's packages were imported from."""
    import interpreter

    return pathlib.Path(interpreter.__file__).resolve().parent.parent


def runtime_env(remote: bool) -> dict[str, Any] | None:
    """The Ray ``runtime_env`` that lets workers import this project as the driver did:
    the packages as ``py_modules`` for a remote cluster; for a local one, the project's
    directory on ``PYTHONPATH`` unless it is the current directory (which Ray's local
    workers already have on ``sys.path``)."""
    root = project_root()
    if remote:
        return {"py_modules": [str(root / package) for package in PACKAGES]}
    if root == pathlib.Path.cwd().resolve():
        return None
    paths = [str(root), os.getcwd(), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {"env_vars": {"PYTHONPATH": os.pathsep.join(paths)}}


def init_ray(num_cpus: int | None = None, num_gpus: int | None = None, **init: Any) -> None:
    """``ray.init`` as batch jobs call it (a new local cluster, or the one at ``address=``
    in ``init``): no dashboard, Ray's usage statistics off, workers' log lines not
    forwarded (the job's summary reports them)."""
    ray = import_optional("ray")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Ray's default for a new local cluster, token authentication, without its notice that it is on.
    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
    init.setdefault("include_dashboard", False)
    init.setdefault("log_to_driver", False)
    init.setdefault("logging_level", logging.WARNING)
    ray.init(num_cpus=num_cpus, num_gpus=num_gpus, **init)


def run_ray(options: JobOptions, sources: Sequence[Source], collector: Collector, *, workers: int | None = None,
            gpus_per_worker: float | None = None, address: str | None = None,
            predictor_class: type[SourcePredictor] = SourcePredictor) -> None:
    """Run the job's batches on Ray actors, writing results as they finish."""
    ray = import_optional("ray")
    data = import_optional("ray.data")
    gpu = options.delegate == "gpu"
    if gpus_per_worker is not None and not gpu:
        raise ValueError("gpus_per_worker is for delegate 'gpu'")
    num_gpus = (1.0 if gpus_per_worker is None else float(gpus_per_worker)) if gpu else 0.0
    if gpu and num_gpus <= 0:
        raise ValueError(f"gpus_per_worker must be above 0 with delegate 'gpu', got {gpus_per_worker}")
    started = not ray.is_initialized()
    remote = address is not None
    if started:
        if remote:  # uploading the packages (py_modules) is only done for a whole job, at ray.init
            init_ray(address=address, runtime_env=runtime_env(remote=True))
        else:
            init_ray()
    try:
        context = data.DataContext.get_current()
        context.enable_progress_bars = False
        context.enable_operator_progress_bars = False
        context.print_on_execution_start = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)  # not a line per dataset run: the job's summary says it
        logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)  # "Progress bars disabled": we draw ours
        resources = ray.cluster_resources()
        if gpu and resources.get("GPU", 0) < num_gpus:
            raise ValueError(
                f"delegate 'gpu' needs {num_gpus:g} GPU(s) per worker, and the Ray cluster has {resources.get('GPU', 0):g} "
                "(use delegate 'gpu-host' or 'none' on a cluster without GPUs)"
            )
        if workers is None:
            workers = max(1, int(resources.get("GPU", 0) // num_gpus)) if gpu else max(1, int(resources.get("CPU", 1)))
        more: dict[str, Any] = {"model": options.model} if remote else {}  # a remote cluster gets the bytes, not the path
        dataset = data.from_items([{PATH: source.path, ROW: source.row} for source in sources])
        # Ray Data restarts a dead actor and retries its task (max_restarts and max_task_retries
        # default to -1 for map actors).
        results = dataset.map_batches(
            predictor_class,
            fn_constructor_kwargs=options.predictor_kwargs(**more),
            batch_size=options.batch_size,
            batch_format="numpy",
            compute=data.ActorPoolStrategy(size=workers),
            num_cpus=1,
            num_gpus=num_gpus,
            runtime_env=None if remote else runtime_env(remote=False),
        )
        try:
            for batch in results.iter_batches(batch_size=None, batch_format="numpy"):
                if not all(collector.add(result) for result in _batch_results(batch)):
                    break
        except ray.exceptions.RayError as error:
            raise WorkerError(f"a Ray worker failed: {_original_error(error)}") from error
    finally:
        if started:
            ray.shutdown()


class WorkerError(RuntimeError):
    """A Ray worker failed other than on one input: it could not start (a bad model or
    delegate, no device), or died more often than Ray retries."""


_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.*)$")


def _original_error(error: BaseException) -> str:
    """``Type: message`` of the exception a worker raised, from the traceback text Ray
    puts in its own error's message (the last such line), else Ray's error itself."""
    lines = [line.strip() for line in str(error).splitlines()]
    found = [match for match in map(_ERROR_LINE.match, lines) if match]
    if found:
        return f"{found[-1].group(1)}: {found[-1].group(2)}"
    first = lines[0] if lines else ""
    return f"{type(error).__name__}: {first}"


def _batch_results(batch: dict[str, np.ndarray]) -> list[BatchResult]:
    """A block of the workers' results (their Ray form) as :class:`BatchResult`, one per
    worker whose rows it holds."""
    workers = [str(worker) for worker in batch[WORKER]]
    results = []
    for worker in dict.fromkeys(workers):
        rows = [i for i, name in enumerate(workers) if name == worker]
        sources = [Source(str(batch[PATH][i]), int(batch[ROW][i])) for i in rows]
        errors = [str(batch[ERROR][i]) for i in rows]
        ok = [i for i, error in zip(rows, errors) if not error]
        outputs = {name: np.asarray(value)[ok] for name, value in batch.items() if name not in (PATH, ROW, ERROR, WORKER)}
        results.append(BatchResult(sources, errors, outputs, json.loads(worker)))
    return results
