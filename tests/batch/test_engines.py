"""Batch jobs on both engines: rows equal single invokes bit for bit, for every bundled real
model at batch sizes 1, 7 and 32; a dead Ray worker loses and duplicates nothing; workers
get their devices (GPUs injected or counted by Ray: no device is opened)."""

from __future__ import annotations

import os

import pytest

from batch_helpers import DSCNN, REAL_MODELS, assert_rows_equal_single_invokes, make_samples, read_results, single_invokes, write_samples
from interpreter.batch import SourcePredictor, run_batch
from interpreter.batch.local import local_worker_devices
from interpreter.batch.predictor import ray_assigned_gpu

BATCH_SIZES = (1, 7, 32)


@pytest.mark.parametrize("batch_size", BATCH_SIZES)
@pytest.mark.parametrize("model", REAL_MODELS, ids=lambda path: path.stem)
def test_local_engine_rows_equal_single_invokes(model, batch_size, model_case, tmp_path):
    case = model_case(model)
    summary = run_batch(model, case.sources, tmp_path / "out.parquet", batch_size=batch_size)
    assert (summary.inputs, summary.rows, summary.errors) == (len(case.sources), len(case.sources), 0)
    assert_rows_equal_single_invokes(read_results(tmp_path / "out.parquet"), case.sources, case.expected)


@pytest.mark.parametrize("batch_size", BATCH_SIZES)
@pytest.mark.parametrize("model", REAL_MODELS, ids=lambda path: path.stem)
def test_ray_engine_rows_equal_single_invokes(model, batch_size, model_case, ray_cluster, tmp_path):
    case = model_case(model)
    summary = run_batch(model, case.sources, tmp_path / "out.parquet", engine="ray", batch_size=batch_size, workers=1)
    assert (summary.inputs, summary.rows, summary.errors) == (len(case.sources), len(case.sources), 0)
    assert_rows_equal_single_invokes(read_results(tmp_path / "out.parquet"), case.sources, case.expected)


def test_a_ray_worker_that_exits_on_its_third_batch_is_replaced_and_no_input_is_lost_or_repeated(ray_cluster, tmp_path):
    died = tmp_path / "a worker died"

    class ExitsOnItsThirdBatch(SourcePredictor):
        """Exits its process at its third batch, once in the whole job (the marker file)."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.batches = 0

        def __call__(self, batch):
            self.batches += 1
            if self.batches == 3:
                try:
                    os.close(os.open(died, os.O_CREAT | os.O_EXCL))
                except FileExistsError:
                    pass
                else:
                    os._exit(1)
            return super().__call__(batch)

    samples = make_samples(DSCNN, 40, seed=5)
    sources = write_samples(samples, tmp_path / "inputs")
    summary = run_batch(DSCNN, sources, tmp_path / "out.parquet", engine="ray", batch_size=4, workers=2,
                        predictor_class=ExitsOnItsThirdBatch)
    assert died.exists(), "no worker reached its third batch: the test did not test a fault"
    assert (summary.rows, summary.errors) == (40, 0)
    result = read_results(tmp_path / "out.parquet")
    assert result.errors == {}
    assert len(result.row_sources) == len(set(result.row_sources)) == 40
    assert_rows_equal_single_invokes(result, sources, single_invokes(DSCNN, samples))


def test_the_ray_engine_reports_each_worker(ray_cluster, tmp_path):
    samples = make_samples(DSCNN, 12, seed=6)
    sources = write_samples(samples, tmp_path / "inputs")
    summary = run_batch(DSCNN, sources, tmp_path / "out.parquet", engine="ray", batch_size=2, workers=2)
    assert summary.engine == "ray" and summary.complete
    assert sum(worker.rows for worker in summary.workers) == 12
    assert all(worker.device == "CPU (numpy)" and worker.mode == "batched" for worker in summary.workers)
    assert all(" pid " in worker.name for worker in summary.workers)


# -- devices -------------------------------------------------------------------------------------

def test_local_workers_are_one_per_visible_gpu_with_the_gpu_delegate():
    assert local_worker_devices("gpu", None, [0, 1, 2, 3]) == [0, 1, 2, 3]
    assert local_worker_devices("gpu", 2, [0, 1, 2, 3]) == [0, 1]
    assert local_worker_devices("gpu", None, [3]) == [3]
    assert local_worker_devices("gpu", None, []) == [0]  # GpuDelegate(device=0) then says what is missing
    with pytest.raises(ValueError, match="3 workers asked for, but 2 GPU"):
        local_worker_devices("gpu", 3, [0, 1])


@pytest.mark.parametrize("delegate", ["none", "gpu-host", "examples.toy_npu:ToyNpu"])
def test_other_delegates_run_one_local_worker(delegate):
    assert local_worker_devices(delegate, None, [0, 1]) == [None]
    assert local_worker_devices(delegate, 1, [0, 1]) == [None]
    with pytest.raises(ValueError, match="one worker"):
        local_worker_devices(delegate, 2, [0, 1])


def host_stand_in():
    """A worker class that takes the device a ``"gpu"`` worker would open (given, or Ray's)
    and runs on host emulation instead, saying which device it stands in for."""

    class GpuStandIn(SourcePredictor):
        def __init__(self, *args, delegate, device=None, **kwargs):
            assigned = ray_assigned_gpu()
            super().__init__(*args, delegate="gpu-host", **kwargs)
            cuda = device if device is not None else (assigned[0] if assigned else 0)
            self.worker["device"] = f"cuda:{cuda}" + (f" ({assigned[1]})" if assigned else "")

    return GpuStandIn


def test_the_local_engine_runs_a_worker_per_injected_gpu_each_on_its_device(tmp_path):
    from backends.gpu import GpuDelegate

    samples = make_samples(DSCNN, 16, seed=7)
    sources = write_samples(samples, tmp_path / "inputs")
    summary = run_batch(DSCNN, sources, tmp_path / "out.parquet", delegate="gpu", batch_size=2, devices=[0, 1],
                        predictor_class=host_stand_in())
    assert sorted(worker.device for worker in summary.workers) == ["cuda:0", "cuda:1"]
    assert all(worker.rows > 0 for worker in summary.workers) and summary.rows == 16
    result = read_results(tmp_path / "out.parquet")
    assert result.row_sources == sources  # the local engine writes rows in input order
    assert_rows_equal_single_invokes(result, sources, single_invokes(DSCNN, samples, lambda: GpuDelegate(device="host")))


def test_a_ray_gpu_worker_opens_the_gpu_ray_assigned_to_it(ray_cluster):
    @ray_cluster.remote(num_gpus=1)
    class Probe:
        def assigned(self):
            return ray_assigned_gpu(), os.environ.get("CUDA_VISIBLE_DEVICES")

    probes = [Probe.remote(), Probe.remote()]
    try:
        answers = ray_cluster.get([probe.assigned.remote() for probe in probes])
    finally:
        for probe in probes:
            ray_cluster.kill(probe)
    # Ray shows each actor only its own GPU: CUDA device 0 of the process is the one assigned.
    assert sorted(visible for _, visible in answers) == ["0", "1"]
    assert [index for (index, _), _ in answers] == [0, 0]
    assert sorted(text for (_, text), _ in answers) == ["Ray GPU 0, CUDA_VISIBLE_DEVICES=0", "Ray GPU 1, CUDA_VISIBLE_DEVICES=1"]


def test_the_ray_engine_gives_gpu_workers_a_gpu_each(ray_cluster, tmp_path):
    samples = make_samples(DSCNN, 8, seed=8)
    sources = write_samples(samples, tmp_path / "inputs")
    summary = run_batch(DSCNN, sources, tmp_path / "out.parquet", engine="ray", delegate="gpu", batch_size=2,
                        workers=2, predictor_class=host_stand_in())
    assert summary.complete
    devices = sorted(worker.device for worker in summary.workers)
    assert all(device.startswith("cuda:0 (Ray GPU ") for device in devices)
    assert len(set(devices)) == len(devices)  # no two workers on one GPU


def test_a_gpu_job_on_a_cluster_without_enough_gpus_fails_before_starting_workers(ray_cluster, tmp_path):
    sources = write_samples(make_samples(DSCNN, 2), tmp_path / "inputs")
    with pytest.raises(ValueError, match=r"needs 4 GPU\(s\) per worker, and the Ray cluster has 2"):
        run_batch(DSCNN, sources, tmp_path / "out.parquet", engine="ray", delegate="gpu", gpus_per_worker=4)
    assert not (tmp_path / "out.parquet").exists()


def test_a_worker_error_is_reported_as_the_exception_the_worker_raised():
    from interpreter.batch.ray_engine import _original_error

    text = ("The actor died because of an error raised in its creation task, ray::MapWorker.__init__()\n"
            "  File \"backends/gpu/device.py\", line 310, in open_device\n"
            "backends.gpu.errors.GpuUnavailableError: no usable CUDA driver (...); use GpuDelegate(device='host')\n")
    assert _original_error(RuntimeError(text)) == "GpuUnavailableError: no usable CUDA driver (...); use GpuDelegate(device='host')"
    assert _original_error(RuntimeError("lost")) == "RuntimeError: lost"


def test_the_local_engine_rejects_ray_options(tmp_path):
    sources = write_samples(make_samples(DSCNN, 1), tmp_path / "inputs")
    with pytest.raises(ValueError, match="ray engine's options"):
        run_batch(DSCNN, sources, tmp_path / "out.parquet", address="auto")
    with pytest.raises(ValueError, match="engine must be one of local, ray"):
        run_batch(DSCNN, sources, tmp_path / "out.parquet", engine="spark")

