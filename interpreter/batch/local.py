"""The local engine: a batch job in this process, without Ray.

One worker (one interpreter), or with ``delegate="gpu"`` one worker per visible GPU, each
in a thread of its own with its own interpreter and device, batches dealt to them in
turn. Inputs are read one batch
ahead in a reader thread and the results written in input order by the calling thread,
so reading, running and writing overlap (numpy's BLAS, file reads and pyarrow's writes
release the GIL).
"""

from __future__ import annotations

import collections
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Sequence

from interpreter.batch.inputs import InputLoader, Source
from interpreter.batch.job import Collector, JobOptions
from interpreter.batch.worker import BatchResult, SourcePredictor


def visible_gpus() -> list[int]:
    """The CUDA device ids CuPy sees (none without CuPy or a driver)."""
    try:
        import cupy

        return list(range(cupy.cuda.runtime.getDeviceCount()))
    except Exception:  # no cupy, no driver: no GPU
        return []


def local_worker_devices(delegate: str, workers: int | None, visible: Sequence[int]) -> list[int | None]:
    """The device of each local worker: one per visible GPU (or the first ``workers`` of
    them) for ``delegate="gpu"``, else one worker (device None). Without a visible GPU,
    ``"gpu"`` gets one worker on device 0, whose ``GpuDelegate`` then says what is missing.

    Raises:
      ValueError: more workers than visible GPUs, or several workers without ``"gpu"``.
    """
    if delegate != "gpu":
        if workers not in (None, 1):
            raise ValueError(f"the local engine runs one worker with delegate {delegate!r} (one per GPU with 'gpu'); "
                             "use the ray engine for more")
        return [None]
    if not visible:
        return [0]
    if workers is None:
        return list(visible)
    if workers > len(visible):
        raise ValueError(f"{workers} workers asked for, but {len(visible)} GPU(s) are visible ({list(visible)})")
    return list(visible[:workers])


def run_local(options: JobOptions, sources: Sequence[Source], collector: Collector, *, workers: int | None = None,
              devices: Sequence[int] | None = None, predictor_class: type[SourcePredictor] = SourcePredictor) -> None:
    """Run the job's batches on local workers, writing results in input order."""
    if devices is None:
        devices = visible_gpus() if options.delegate == "gpu" else []
    placement = local_worker_devices(options.delegate, workers, devices)
    predictors = [predictor_class(**options.predictor_kwargs(device=device)) for device in placement]
    if len(predictors) > 1:
        for number, predictor in enumerate(predictors):
            predictor.worker["name"] += f" worker {number}"
    loader = InputLoader(predictors[0].inputs, options.image_range)
    size = options.batch_size
    batches = [list(sources[start:start + size]) for start in range(0, len(sources), size)]
    reader = ThreadPoolExecutor(1, "litedelegate-read")
    # One thread per worker, each with its own predictor; batch k goes to worker k mod n.
    runners = [ThreadPoolExecutor(1, f"litedelegate-worker-{i}") for i in range(len(predictors))]
    pending: collections.deque[Future] = collections.deque()
    submitted = 0

    def submit_next() -> None:
        nonlocal submitted
        if submitted < len(batches):
            batch, worker = batches[submitted], submitted % len(predictors)
            loaded = reader.submit(loader.load_many, batch)
            pending.append(runners[worker].submit(_run, predictors[worker], batch, loaded))
            submitted += 1

    try:
        for _ in range(len(predictors) + 1):  # each worker busy, and one batch read ahead
            submit_next()
        while pending:
            result = pending.popleft().result()
            submit_next()
            if not collector.add(result):
                break
    finally:
        for future in pending:
            future.cancel()
        for executor in (reader, *runners):
            executor.shutdown(wait=True)


def _run(predictor: SourcePredictor, batch: list[Source], loaded: Future) -> BatchResult:
    return predictor.run(batch, loaded.result())
