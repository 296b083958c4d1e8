"""Fixtures of the batch tests: one local Ray cluster for the session, and each real
model's inputs and single-invoke reference, made once."""

from __future__ import annotations

import functools
import pathlib
from dataclasses import dataclass

import numpy as np
import pytest

from batch_helpers import make_samples, single_invokes, write_samples

#: Inputs per model in the bit-equality tests: batches of 7 leave a partial one, and a
#: batch of 32 is one partial batch.
SAMPLES_PER_MODEL = 9


@pytest.fixture(autouse=True)
def one_blas_thread():
    """Jobs and references on one BLAS thread, as the workers run by default (float sums
    can round differently on another number of threads); the count is given back after."""
    from backends.cpu.common import set_blas_threads

    previous = set_blas_threads(1)
    yield
    if previous is not None:
        set_blas_threads(previous)


@pytest.fixture(scope="session")
def ray_cluster():
    """A local Ray cluster of 2 CPUs (and 2 GPUs that are only resources Ray counts: no
    device is opened on them), without a dashboard, for the whole session."""
    ray = pytest.importorskip("ray", reason="the ray engine needs the batch extra: pip install 'litedelegate[batch]'")
    from interpreter.batch.ray_engine import init_ray

    init_ray(num_cpus=2, num_gpus=2, object_store_memory=256 * 2**20)
    yield ray
    ray.shutdown()


@dataclass
class ModelCase:
    """A model's inputs as files, and what single invokes give for them."""

    model: pathlib.Path
    sources: list[str]
    samples: list[dict[str, np.ndarray]]
    expected: list[dict[str, np.ndarray]]


@pytest.fixture(scope="session")
def model_case(tmp_path_factory):
    """``model_case(path)``: the model's inputs written once per session, with their reference."""

    @functools.cache
    def case(model: pathlib.Path) -> ModelCase:
        samples = make_samples(model, SAMPLES_PER_MODEL)
        sources = write_samples(samples, tmp_path_factory.mktemp(model.stem))
        return ModelCase(model, sources, samples, single_invokes(model, samples))

    return case
