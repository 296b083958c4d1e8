"""``litedelegate batch MODEL INPUT... --output OUT.parquet``: a model over a dataset.

Runs :func:`interpreter.batch.run_batch`: every input (``.npy``, ``.npz``, images,
Parquet rows, directories of them) through the model, on the local engine (this process)
or on Ray, into ``OUT.parquet`` (one row per input, a ``source`` column, one column per
output) and ``OUT.errors.parquet`` (``source`` and ``error`` for every input that gave no
row). A progress bar shows rows per second on a terminal; the summary gives the rows,
errors, throughput and each worker's device. Exit code 0 only when every input gave a row.
"""

from __future__ import annotations

import argparse
import logging
import pathlib
import sys
import time
from typing import TextIO

from interpreter.cli.common import DELEGATE_HELP, DELEGATE_METAVAR, UsageError
from interpreter.cli.output import Printer, Styled, Table, print_json


def add_parser(commands, parents) -> None:
    from interpreter.batch.inputs import IMAGE_RANGES

    parser = commands.add_parser(
        "batch", parents=parents, help="run a model over a dataset into a Parquet file (local or Ray)",
        description="Run a model over every input (.npy, .npz, PNG/JPEG images, Parquet rows, directories of them) "
        "and write one Parquet row per input, with its source and outputs; inputs that cannot be read or do not fit go "
        "to OUT.errors.parquet with the reason. Exit code 0 only when every input gave a row. Needs the batch extra: "
        "pip install 'litedelegate[batch]'.",
    )
    parser.add_argument("model", help="a .tflite file")
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="files and directories of inputs")
    parser.add_argument("--output", "-o", required=True, metavar="OUT.parquet", help="the Parquet file of rows")
    parser.add_argument("--engine", choices=("local", "ray"), default="local",
                        help="local (default: this process, no Ray; one worker per visible GPU with --delegate gpu) or "
                        "ray (Ray Data map_batches with one actor per worker)")
    parser.add_argument("--address", help="ray: the cluster to join (default: start a local one and stop it at the end)")
    parser.add_argument("--batch-size", type=int, default=32, help="rows per batch (default 32)")
    parser.add_argument("--delegate", default="none", metavar=DELEGATE_METAVAR, help=DELEGATE_HELP)
    parser.add_argument("--precision", choices=("float32", "float16"), default="float32",
                        help="the GPU delegate's precision (default float32)")
    parser.add_argument("--workers", type=int, help="local: GPU workers (default: every visible GPU); ray: actors "
                        "(default: one per CPU of the cluster, one per GPU with --delegate gpu)")
    parser.add_argument("--gpus-per-worker", type=float, help="ray: GPUs per actor with --delegate gpu (default 1)")
    parser.add_argument("--image-range", choices=tuple(IMAGE_RANGES), default="0,1",
                        help="what image pixel values 0..255 become (default 0,1; write --image-range=-1,1, with the "
                        "equals sign, for -1,1)")
    parser.add_argument("--threads", type=int, help="BLAS threads per interpreter (default 1; float outputs can differ "
                        "in their last bits on another number of threads)")
    parser.add_argument("--inexact", action="store_true", help="batch even where batched outputs differ from single "
                        "invokes in their last bits (by default such a model runs sample by sample)")
    parser.add_argument("--fail-fast", action="store_true", help="stop after the batch holding the first bad input")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(handler=main)


class RowProgress:
    """A progress bar of rows with rows per second (tqdm, else a counter; on a terminal only)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.bar = None
        self.done = 0
        self.total = 0
        self.start = time.perf_counter()

    def __call__(self, rows: int, errors: int, total: int) -> None:
        if not self.stream.isatty():
            return
        if self.bar is None and not self.total:
            self.total = total
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc="batch", unit="row", file=self.stream, leave=False, dynamic_ncols=True)
            except ImportError:
                pass
        done = rows + errors
        if self.bar is not None:
            self.bar.update(done - self.done)
            self.bar.set_postfix(errors=errors, refresh=False)
        else:
            rate = rows / max(time.perf_counter() - self.start, 1e-9)
            self.stream.write(f"\rbatch: {done}/{self.total} ({errors} error(s), {rate:.1f} rows/s)")
            self.stream.flush()
        self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.stream.isatty() and self.done:
            self.stream.write("\r\033[K")


def main(args: argparse.Namespace) -> int:
    from interpreter.batch import run_batch

    if args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be at least 1")
    if args.engine == "local" and (args.address is not None or args.gpus_per_worker is not None):
        raise UsageError("--address and --gpus-per-worker are for --engine ray")
    if args.gpus_per_worker is not None and args.delegate != "gpu":
        raise UsageError("--gpus-per-worker is for --delegate gpu")
    if args.precision != "float32" and args.delegate not in ("gpu", "gpu-host"):
        raise UsageError("--precision is the GPU delegate's: use it with --delegate gpu or gpu-host")
    if args.threads is not None and args.threads < 1:
        raise UsageError("--threads must be at least 1")
    missing = [path for path in args.inputs if not pathlib.Path(path).exists()]
    if missing:
        raise UsageError(f"no such input file or directory: {', '.join(missing)}")
    progress = RowProgress() if not args.json else None
    # The summary says why a model runs sample by sample; the predictor's own warning would repeat it.
    logging.getLogger("interpreter.batch").addHandler(logging.NullHandler())
    logging.getLogger("interpreter.batch").propagate = False
    try:
        summary = run_batch(
            args.model, args.inputs, args.output, engine=args.engine, delegate=args.delegate, precision=args.precision,
            batch_size=args.batch_size, workers=args.workers, gpus_per_worker=args.gpus_per_worker, address=args.address,
            image_range=args.image_range, fail_fast=args.fail_fast, num_threads=args.threads, exact=not args.inexact,
            progress=progress,
        )
    finally:
        if progress is not None:
            progress.close()
    code = 0 if summary.complete else 1
    if args.json:
        print_json({"model": args.model, **summary.to_dict()})
        return code
    out = Printer()
    out.line(f"model: {args.model}")
    out.line(f"engine: {summary.engine}, batch size {args.batch_size}, delegate {args.delegate}")
    out.line(f"inputs: {summary.inputs}")
    out.line(Styled(f"rows: {summary.rows} -> {summary.output}", "green" if summary.rows else ""))
    out.line(Styled(f"errors: {summary.errors} -> {summary.errors_output}", "red" if summary.errors else ""))
    if summary.stopped_at:
        out.line(Styled(f"stopped at the first bad input (--fail-fast): {summary.stopped_at}", "red"))
    out.line(f"throughput: {summary.rows_per_second:.1f} rows/s ({summary.rows} rows in {summary.seconds:.2f} s)")
    table = Table(["worker", "device", "batching", "rows"], right=frozenset({"rows"}))
    for worker in summary.workers:
        table.add(worker.name, worker.device, worker.mode, worker.rows)
    out.table(table)
    for reason in dict.fromkeys(worker.reason for worker in summary.workers if worker.reason):
        out.line(f"sample by sample: {reason}")
    return code
