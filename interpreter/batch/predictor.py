"""The predictor: a model with its delegate, called with batches of samples.

``Predictor(model, delegate, precision, batch_size)`` builds one interpreter at
construction and is then called with ``{input name: array [N, ...]}``, returning
``{output name: array [N, ...]}`` whose rows equal, bit for bit, what single ``invoke``
calls give. It is what a Ray Data job needs from a model, and can be used there as it is::

    dataset.map_batches(Predictor, fn_constructor_kwargs={"model": "model.tflite", "delegate": "gpu"},
                        batch_size=32, num_gpus=1, concurrency=2)

Under Ray, a GPU worker opens the device Ray assigned to it (``ray.get_gpu_ids()``, found
among ``CUDA_VISIBLE_DEVICES``).

How a batch runs. At construction the predictor resizes the model's batch dimension to
``batch_size`` (``resize_tensor_input`` and ``allocate_tensors``, as LiteRT users do) and
checks, on random probe rows, that the batched outputs have a batch dimension and equal
single invokes bit for bit. When they do, every batch runs as invokes of exactly
``batch_size`` rows (a last, partial batch padded with copies of its own rows, whose
outputs are dropped), so that the interpreter is allocated once. When they do not (a
fixed batch dimension: the resize fails, or an output keeps a batch of 1, as where a
RESHAPE folds the batch into another axis; or batched float sums that round differently,
as BLAS may for another number of rows) it runs the samples one by one and says so once
(a warning on the ``interpreter.batch`` logger; :attr:`Predictor.mode_reason`).
``exact=False`` keeps batching when only the last bits differ.

A model that keeps state between invokes (resource variables: VAR_HANDLE, ASSIGN_VARIABLE;
or variable tensors), such as a streaming keyword spotter, runs sample by sample, each
sample from the state a fresh interpreter starts with: rows are independent samples, as
in any batch job, whatever the worker and the order they run in.

Bit-equality rests on every row of a batch being computed as it is alone, which the
probe checks for the shapes used. Rows with a NaN or an infinity in a float input run
alone (padded with copies of themselves): the float convolutions' overflow guard looks
at a whole input tensor and would otherwise send the other rows to TFLite's exact loops.
Finite inputs near the float32 range (sums of squares above about 2**250) can still do
so; such data is not what models are fed.
"""

from __future__ import annotations

import copy
import logging
import os
import pathlib
import sys
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from interpreter.batch.inputs import InputSpec, conform

logger = logging.getLogger("interpreter.batch")

#: ``delegate=`` choices besides ``MODULE:CLASS[:KEY=VALUE,...]``.
DELEGATES = ("none", "gpu", "gpu-host")
PRECISIONS = ("float32", "float16")
#: Rows run alone and compared with the batched outputs at construction (every row of the
#: probe batch is one of them, so every position in the batch is checked).
PROBE_ROWS = 8


@dataclass(frozen=True)
class OutputSpec:
    """One model output as a batch job sees it: ``row_shape`` is one sample's part (the
    output's shape at batch 1 without its leading 1, when it has one)."""

    name: str
    index: int
    dtype: np.dtype
    row_shape: tuple[int, ...]
    batch_axis: bool

    @classmethod
    def from_detail(cls, detail: Mapping[str, Any], value: np.ndarray) -> "OutputSpec":
        shape = tuple(int(d) for d in value.shape)
        batch_axis = len(shape) > 0 and shape[0] == 1
        return cls(detail["name"], int(detail["index"]), np.dtype(value.dtype), shape[1:] if batch_axis else shape, batch_axis)


class Predictor:
    """A model and its delegate, called with batches: ``{input name: [N, ...]}`` ->
    ``{output name: [N, ...]}``, each row equal to a single ``invoke`` bit for bit.

    One interpreter, built at construction (one per worker when a job has several).
    Columns of a batch that are not model inputs (an id, a file name) are passed through
    to the result unchanged, so it is an actor class for Ray Data as it is:
    ``dataset.map_batches(Predictor, fn_constructor_kwargs={"model": path, "delegate":
    "gpu"}, batch_size=32, num_gpus=1, concurrency=4)``.

    The model's batch dimension is resized to ``batch_size`` when the model allows it and
    a probe at construction finds batched outputs equal to single invokes bit for bit;
    otherwise (a fixed batch, state kept between invokes, sums that round otherwise) the
    samples run one by one, said once on the ``interpreter.batch`` logger (see the
    module's notes).

    Args:
      model: a ``.tflite`` path, or the model's bytes.
      delegate: ``"none"`` (the CPU kernels), ``"gpu"`` (``GpuDelegate`` on a CUDA device:
        ``device``, else the one Ray assigned to this worker, else device 0; without CUDA
        this fails with ``GpuUnavailableError``), ``"gpu-host"`` (its host emulation), or
        ``"MODULE:CLASS[:KEY=VALUE,...]"`` as on the command line.
      precision: the GPU delegate's ``"float32"`` or ``"float16"``.
      batch_size: rows per invoke when the model's batch dimension can be resized.
      num_threads: the interpreter's ``num_threads`` (BLAS threads, process-wide). Rows
        equal single invokes made with the same count: float sums can round differently
        on another number of BLAS threads.
      exact: run sample by sample when batched outputs differ from single invokes in any
        bit (the default); ``False`` batches whenever the shapes allow it.
      device: the CUDA device for ``delegate="gpu"`` (default: see ``delegate``).

    Attributes:
      mode: ``"batched"`` (invokes of ``batch_size`` rows) or ``"sample by sample"``.
      mode_reason: why the samples run one by one although ``batch_size`` > 1 ("" otherwise).
      device: where the model runs (``"CPU (numpy)"``, the delegate and its device).
      inputs: the model's inputs (``InputSpec``: name, dtype, one sample's shape).
      outputs: the model's outputs (``OutputSpec``).
      interpreter: the interpreter.

    Raises:
      ValueError: a bad option, or a model that cannot be loaded.
      GpuUnavailableError: ``delegate="gpu"`` without a usable CUDA device.
    """

    def __init__(self, model: str | os.PathLike | bytes, delegate: str = "none", precision: str = "float32",
                 batch_size: int = 32, *, num_threads: int | None = None, exact: bool = True,
                 device: int | None = None) -> None:
        from interpreter import Interpreter

        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        data = bytes(model) if isinstance(model, (bytes, bytearray, memoryview)) else pathlib.Path(model).read_bytes()
        self.model_label = "model bytes" if isinstance(model, (bytes, bytearray, memoryview)) else str(model)
        self.batch_size = batch_size
        delegate_object, self.device = _make_delegate(delegate, precision, device)
        self.interpreter = Interpreter(model_content=data, num_threads=num_threads)
        if delegate_object is not None:
            self.interpreter.modify_graph_with_delegate(delegate_object)
        self.interpreter.allocate_tensors()
        self.inputs = [InputSpec.from_detail(d) for d in self.interpreter.get_input_details()]
        self._initial_state = _InitialState(self.interpreter) if _keeps_state(self.interpreter) else None
        self._probe = _probe_rows(self.inputs)
        try:
            self._invoke_one(self._probe, 0)  # the outputs' shapes at batch 1, dynamic ones included
            probe_error = ""
        except Exception as error:  # random rows a model cannot take (indices out of range...)
            probe_error = f"random probe rows could not be run ({type(error).__name__}: {_first_line(error)})"
        try:
            self.outputs = [OutputSpec.from_detail(d, self.interpreter.get_tensor(d["index"]))
                            for d in self.interpreter.get_output_details()]
        except ValueError:  # an output whose shape only an invoke gives
            raise ValueError(f"the model's output shapes are not known: {probe_error}") from None
        kinds = {spec.dtype.kind for spec in self.outputs}
        if "O" in kinds or "U" in kinds or "S" in kinds:
            raise ValueError("the model has a STRING output: batch jobs take numeric outputs only")
        self.mode = "batched" if batch_size > 1 else "sample by sample"
        self.mode_reason = ""
        if batch_size > 1:
            reason = probe_error + ", so batching cannot be checked" if probe_error else self._batch(exact)
            if reason:
                self.mode, self.mode_reason = "sample by sample", reason
                logger.warning("%s: running sample by sample: %s", self.model_label, reason)

    # -- calls -----------------------------------------------------------------------------------
    def __call__(self, batch: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """``{input name: [N, ...]}`` -> ``{output name: [N, ...]}`` (and the batch's other
        columns, passed through).

        Raises:
          ValueError: an input missing, with the wrong shape or dtype (``InputError``), or
            a pass-through column named like an output.
        """
        names = [spec.name for spec in self.inputs]
        missing = [name for name in names if name not in batch]
        if missing:
            raise ValueError(
                f"the batch has no column {', '.join(map(repr, missing))} (its columns: {', '.join(map(repr, batch))}); "
                f"the model's inputs are {', '.join(map(repr, names))}"
            )
        rows = len(batch[names[0]]) if names else 0
        arrays = {spec.name: conform(batch[spec.name], spec, leading=rows) for spec in self.inputs}
        outputs = self.predict(arrays, rows)
        clashes = [name for name in batch if name in outputs and name not in names]
        if clashes:
            raise ValueError(f"the batch's column {', '.join(map(repr, clashes))} has the name of a model output")
        passed = {name: value for name, value in batch.items() if name not in names}
        return {**passed, **outputs}

    def predict(self, arrays: Mapping[str, np.ndarray], rows: int) -> dict[str, np.ndarray]:
        """The outputs of ``rows`` samples given as conforming arrays ``[rows, *row_shape]``."""
        results = {spec.name: np.empty((rows, *spec.row_shape), spec.dtype) for spec in self.outputs}
        if self.mode != "batched":
            for row in range(rows):
                self._invoke_rows(arrays, [row], results, row)
            return results
        alone = _rows_with_non_finite_values(arrays, self.inputs)
        for start in range(0, rows, self.batch_size):
            chunk = [row for row in range(start, min(start + self.batch_size, rows)) if row not in alone]
            if chunk:
                self._invoke_rows(arrays, chunk, results, chunk)
        for row in sorted(alone):
            self._invoke_rows(arrays, [row], results, row)
        return results

    # -- running -------------------------------------------------------------------------------
    def _invoke_one(self, arrays: Mapping[str, np.ndarray], row: int) -> None:
        """Invoke at batch 1 on one row of ``arrays`` (the interpreter must be at batch 1),
        from the initial state for a model that keeps state."""
        if self._initial_state is not None:
            self._initial_state.restore(self.interpreter)
        for spec in self.inputs:
            value = arrays[spec.name][row]
            self.interpreter.set_tensor(spec.index, value[None] if spec.batch_axis else value)
        self.interpreter.invoke()

    def _invoke_rows(self, arrays: Mapping[str, np.ndarray], rows: list[int], results: dict[str, np.ndarray],
                     into: list[int] | int) -> None:
        """Run ``rows`` of ``arrays``: at batch 1 one row, batched ``batch_size`` rows (fewer
        are padded with copies of themselves), and store the outputs at ``into``."""
        if self.mode != "batched":
            self._invoke_one(arrays, rows[0])
            for spec in self.outputs:
                value = self.interpreter.get_tensor(spec.index)
                results[spec.name][into] = value[0] if spec.batch_axis else value
            return
        take = np.resize(np.asarray(rows), self.batch_size)  # the rows, repeated to fill the batch
        for spec in self.inputs:
            self.interpreter.set_tensor(spec.index, arrays[spec.name][take])
        self.interpreter.invoke()
        count = len(rows)
        for spec in self.outputs:
            results[spec.name][into] = self.interpreter.get_tensor(spec.index)[:count]

    def _batch(self, exact: bool) -> str:
        """Resize to ``batch_size`` and check the probe; "" when batching works, else why not
        (the interpreter is then back at batch 1)."""
        n = self.batch_size
        if self._initial_state is not None:
            return "the model keeps state between invokes (variables): each sample runs alone, from the initial state"
        fixed = [spec for spec in self.inputs if not spec.batch_axis]
        if fixed:
            return f"input {fixed[0].name!r} has no leading batch dimension of 1 ({fixed[0].describe()})"
        signatures = {d["name"]: [int(v) for v in d["shape_signature"]] for d in self.interpreter.get_input_details()}
        singles_count = min(PROBE_ROWS, n)
        take = np.arange(n) % singles_count  # every row of the probe batch is one of the rows run alone
        singles: list[list[np.ndarray]] = []
        try:
            self._resize(n)
            problem = self._output_shape_problem()  # the shapes allocate_tensors gives: no invoke yet
            if problem:
                return self._back_to_one(problem, signatures)
            if exact:
                self._resize(1)
                for row in range(singles_count):
                    self._invoke_one(self._probe, row)
                    singles.append([self.interpreter.get_tensor(spec.index)[0] for spec in self.outputs])
                self._resize(n)
            for spec in self.inputs:
                self.interpreter.set_tensor(spec.index, self._probe[spec.name][take])
            self.interpreter.invoke()
        except Exception as error:
            reason = f"the model does not take a batch of {n} ({type(error).__name__}: {_first_line(error)})"
            return self._back_to_one(reason, signatures)
        problem = self._output_shape_problem()
        if problem:
            return self._back_to_one(problem, signatures)
        if exact:
            for position, spec in enumerate(self.outputs):
                expected = np.stack([singles[row][position] for row in take])
                if self.interpreter.get_tensor(spec.index).tobytes() != expected.tobytes():  # bit for bit
                    reason = (f"batched outputs differ from single invokes (output {spec.name!r}, in the last bits: "
                              "float sums in another order); exact=False (--inexact) batches anyway")
                    return self._back_to_one(reason, signatures)
        return ""

    def _resize(self, rows: int) -> None:
        for spec in self.inputs:
            self.interpreter.resize_tensor_input(spec.index, [rows, *spec.row_shape])
        self.interpreter.allocate_tensors()

    def _output_shape_problem(self) -> str:
        """Why the outputs at batch ``batch_size`` are not ``[batch_size, *row_shape]``
        ("" when they are, or are not known before an invoke)."""
        n = self.batch_size
        for spec in self.outputs:
            try:
                shape = self.interpreter.get_tensor(spec.index).shape
            except ValueError:  # a dynamic output: known after an invoke
                continue
            if not spec.batch_axis or shape != (n, *spec.row_shape):
                return (f"output {spec.name!r} has shape {list(shape)} for a batch of {n}, not {[n, *spec.row_shape]}: "
                        "its batch dimension is fixed")
        return ""

    def _back_to_one(self, reason: str, signatures: dict[str, list[int]]) -> str:
        self._resize(1)
        fixed = [name for name, signature in signatures.items() if signature[:1] != [-1]]
        if fixed and "batch dimension is fixed" not in reason:
            reason += f"; the model declares a fixed batch for {', '.join(map(repr, fixed))}"
        return reason


#: Ops that keep state in the interpreter between invokes.
STATEFUL_OPS = frozenset({"VAR_HANDLE", "ASSIGN_VARIABLE", "READ_VARIABLE", "CALL_ONCE"})


def _keeps_state(interpreter: Any) -> bool:
    """Whether invokes depend on earlier ones: resource variables or variable tensors."""
    for subgraph in interpreter.model.subgraphs:
        if any(op.op_name in STATEFUL_OPS for op in subgraph.operators) or any(t.is_variable for t in subgraph.tensors):
            return True
    return False


class _InitialState:
    """The state an interpreter has before its first invoke, to start each sample from:
    its resource variables and CALL_ONCE record (the interpreter's shared ``resources``,
    which VAR_HANDLE fills at construction) and its variable tensors (reset to zero, as
    ``reset_all_variables`` does)."""

    def __init__(self, interpreter: Any) -> None:
        self.resources = copy.deepcopy(interpreter._shared.resources)

    def restore(self, interpreter: Any) -> None:
        resources = interpreter._shared.resources
        resources.clear()
        resources.update(copy.deepcopy(self.resources))
        interpreter.reset_all_variables()


def _probe_rows(specs: list[InputSpec]) -> dict[str, np.ndarray]:
    """PROBE_ROWS random rows per input (seeded): floats in [-1, 1), integers 0 and 1
    (valid even as indices), booleans."""
    rng = np.random.default_rng(0)
    probe = {}
    for spec in specs:
        shape = (PROBE_ROWS, *spec.row_shape)
        if spec.dtype.kind == "f":
            probe[spec.name] = rng.uniform(-1.0, 1.0, size=shape).astype(spec.dtype)
        elif spec.dtype.kind == "b":
            probe[spec.name] = rng.integers(0, 2, size=shape).astype(bool)
        elif spec.dtype.kind in "iu":
            probe[spec.name] = rng.integers(0, 2, size=shape).astype(spec.dtype)
        else:
            raise ValueError(f"input {spec.name!r} is {spec.dtype.name}: batch jobs take numeric inputs only")
    return probe


def _rows_with_non_finite_values(arrays: Mapping[str, np.ndarray], specs: list[InputSpec]) -> set[int]:
    alone: set[int] = set()
    for spec in specs:
        if spec.dtype.kind == "f":
            value = arrays[spec.name]
            finite = np.isfinite(value.reshape(len(value), -1)).all(axis=1)
            alone.update(np.flatnonzero(~finite).tolist())
    return alone


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""


# -- delegates -------------------------------------------------------------------------------

def _make_delegate(kind: str, precision: str, device: int | None) -> tuple[Any, str]:
    """(the delegate for ``kind``, or None; a description of where the model runs)."""
    if kind == "none" or (kind not in DELEGATES and ":" in kind):
        if precision != "float32":
            raise ValueError(f"precision {precision!r} is the GPU delegate's: use it with delegate 'gpu' or 'gpu-host'")
        if kind == "none":
            return None, "CPU (numpy)"
        from interpreter.cli.common import UsageError, load_delegate_spec

        try:
            choice = load_delegate_spec(kind)
        except UsageError as error:
            raise ValueError(str(error)) from None
        return choice.delegate, choice.describe()
    if kind not in DELEGATES:
        raise ValueError(f"unknown delegate {kind!r}; expected one of {', '.join(DELEGATES)} or MODULE:CLASS[:KEY=VALUE,...]")
    from backends.gpu import GpuDelegate

    if kind == "gpu-host":
        return GpuDelegate(device="host", precision=precision), "GpuDelegate on host emulation"
    assigned = ray_assigned_gpu()
    if device is None:
        device = assigned[0] if assigned else 0
    delegate = GpuDelegate(device=device, precision=precision)
    where = f"GpuDelegate on {delegate.device.name}"
    if assigned:
        where += f" ({assigned[1]})"
    return delegate, where


def ray_assigned_gpu() -> tuple[int, str] | None:
    """In a Ray worker that Ray gave a GPU: (its CUDA device index in this process, a
    description); None elsewhere (Ray not running here, or no GPU assigned)."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    ids = ray.get_gpu_ids()
    if not ids:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return cuda_index_of(ids[0], visible), f"Ray GPU {ids[0]}, CUDA_VISIBLE_DEVICES={visible}"


def cuda_index_of(gpu_id: int | str, visible: str | None) -> int:
    """The CUDA device index of Ray's GPU ``gpu_id`` in a process whose
    ``CUDA_VISIBLE_DEVICES`` is ``visible``: its place in that list (Ray sets the list to
    the GPUs it assigned, so usually 0), or the id itself when the variable is unset.

    Raises:
      ValueError: the GPU is not among the visible ones.
    """
    if visible is None or not visible.strip():
        return int(gpu_id)
    entries = [entry.strip() for entry in visible.split(",")]
    if str(gpu_id) not in entries:
        raise ValueError(f"Ray assigned GPU {gpu_id}, which is not in CUDA_VISIBLE_DEVICES={visible}")
    return entries.index(str(gpu_id))
