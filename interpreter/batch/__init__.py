"""Batch inference over a dataset: a predictor, and jobs on a local or a Ray engine.

- :class:`Predictor`: a model with its delegate, called with ``{input name: [N, ...]}``
  and returning ``{output name: [N, ...]}``, each row equal to a single ``invoke`` bit for
  bit; usable as it is as the actor class of Ray Data's ``map_batches``.
- :func:`run_batch`: every input of some files and directories (``.npy``, ``.npz``,
  images, Parquet) through a model, into one Parquet file of rows and one of errors, on
  the ``"local"`` engine (this process, no Ray) or the ``"ray"`` engine (Ray Data).
  ``litedelegate batch`` is its command line.

pyarrow (results, Parquet inputs), Pillow (images) and Ray (the ray engine) are the
``batch`` extra: ``pip install "litedelegate[batch]"``; they are imported when used.
"""

from interpreter.batch.job import BatchSummary, WorkerReport, run_batch
from interpreter.batch.predictor import Predictor
from interpreter.batch.worker import SourcePredictor

__all__ = ["BatchSummary", "Predictor", "SourcePredictor", "WorkerReport", "run_batch"]
