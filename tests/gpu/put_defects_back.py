"""Put each known GPU defect back, one at a time, and check that ordinary tests fail.

Each defect below is the one-line change that once was (or could be) the bug; the
script copies the project (the files git knows) into a scratch directory, applies one
change there, runs the tests that should catch it (the GPU ones on the emulated device,
``LITEDELEGATE_TEST_DEVICE=emulated``) and prints which failed. A defect that no test
catches is printed as ``NOT CAUGHT`` and the exit status is 1. The working tree is never
touched. tests/gpu/README.md lists the same defects with the tests that catch them.

    python tests/gpu/put_defects_back.py              # every defect (about 5 minutes on 2 cores)
    python tests/gpu/put_defects_back.py NAME ...     # some of them
    python tests/gpu/put_defects_back.py --list

An edit that no longer applies (the code changed) is an error: update its line here.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]

DEVICE_TESTS = [
    "tests/gpu/test_delegate_device.py", "tests/gpu/test_gpu_delegate_rules.py", "tests/gpu/test_on_device.py",
    "tests/gpu/test_emulated_device.py", "tests/gpu/test_gpu_delegate.py",
]
QUANTIZED_TESTS = ["tests/gpu/test_quantized_ops_vs_litert.py"]
KERNEL_TESTS = ["tests/gpu/test_tiled_kernels.py"]

#: name -> (file, the line as it is, the line that puts the defect back, the tests to run)
DEFECTS: dict[str, tuple[str, str, str, list[str]]] = {
    # issue 22: what the first audit found no test for
    "graph-pool-dropped": (
        "backends/gpu/delegate.py",
        "        self.graph_pool = pool  # the graph's memory: kept as long as the graph\n",
        "        self.graph_pool = pool  # the graph's memory: kept as long as the graph\n        self.graph_pool = None\n",
        DEVICE_TESTS,
    ),
    "pageable-input-staging": (
        "backends/gpu/delegate.py",
        "self.input_staging = {t: device.empty_pinned(tensors[t].shape, self._dtype(tensors[t], t))",
        "self.input_staging = {t: np.empty(tensors[t].shape, self._dtype(tensors[t], t))",
        DEVICE_TESTS,
    ),
    "open-device-0": (
        "backends/gpu/device.py",
        'return Device(cupy, device, name=f"cuda:{device} ({name})")',
        'return Device(cupy, 0, name=f"cuda:{device} ({name})")',
        DEVICE_TESTS,
    ),
    "device-built-on-0": (
        "backends/gpu/device.py",
        "self.cuda_device = cupy.cuda.Device(device_id)",
        "self.cuda_device = cupy.cuda.Device(0)",
        DEVICE_TESTS,
    ),
    "blocking-downloads": (
        "backends/gpu/device.py",
        "device_array.get(stream=self.stream, out=pinned, blocking=False)",
        "device_array.get(stream=self.stream, out=pinned, blocking=True)",
        DEVICE_TESTS,
    ),
    "per-channel-first-multiplier": (
        "backends/gpu/ops/conv.py",
        "self.multipliers = self.upload(q.multipliers, np.int32)\n        self.shifts = self.upload(q.shifts, np.int32)",
        "self.multipliers = self.upload(np.full_like(q.multipliers, q.multipliers[0]), np.int32)\n"
        "        self.shifts = self.upload(np.full_like(q.shifts, q.shifts[0]), np.int32)",
        QUANTIZED_TESTS,
    ),
    "rounding-half-up": (
        "backends/cpu/quantization.py",
        "    return (x + (half - negative)) >> exponent\n",
        "    return (x + half) >> exponent\n",
        QUANTIZED_TESTS,
    ),
    "roundf-to-even": (
        "backends/cpu/kernels/quantize.py",
        "    rounded = round_half_away(quotient)\n",
        "    rounded = xp.rint(quotient)\n",
        QUANTIZED_TESTS,
    ),
    # issue 13: the GPU-correctness work
    "ops-off-the-stream": (
        "backends/gpu/device.py",
        "with self.cuda_device, self.stream, self.xp.cuda.using_allocator(self._malloc):",
        "with self.cuda_device, self.xp.cuda.using_allocator(self._malloc):",
        DEVICE_TESTS,
    ),
    "device-not-entered": (
        "backends/gpu/device.py",
        "with self.cuda_device, self.stream, self.xp.cuda.using_allocator(self._malloc):",
        "with self.stream, self.xp.cuda.using_allocator(self._malloc):",
        DEVICE_TESTS,
    ),
    "graph-in-shared-pool": (
        "backends/gpu/delegate.py",
        "        pool = xp.cuda.MemoryPool()\n",
        "        pool = device.pool\n",
        DEVICE_TESTS,
    ),
    "pageable-output-staging": (
        "backends/gpu/delegate.py",
        "self.output_staging = {t: device.empty_pinned(tensors[t].shape, self._dtype(tensors[t], t))",
        "self.output_staging = {t: np.empty(tensors[t].shape, self._dtype(tensors[t], t))",
        DEVICE_TESTS,
    ),
    "handoffs-downloaded": (
        "backends/gpu/delegate.py",
        "device_only = self._read_only_by_this_delegate(context, outputs)",
        "device_only = set()",
        DEVICE_TESTS,
    ),
    "dead-uploads": (
        "backends/gpu/ops/base.py",
        "if tensor is not None and p not in self.index_inputs and p not in self.prepared_inputs",
        "if tensor is not None and p not in self.index_inputs",
        DEVICE_TESTS,
    ),
    "module-per-node": (
        "backends/gpu/device.py",
        "module = self._modules.get(source)",
        "module = None",
        DEVICE_TESTS,
    ),
    "concatenate-with-cupy": (
        "backends/gpu/ops/concat_split.py",
        "        return [self.launcher(args)]\n\n\nclass QuantizedConcatenation",
        "        return [self.xp.concatenate(args, axis=int(self.params.axis))]\n\n\nclass QuantizedConcatenation",
        DEVICE_TESTS,
    ),
    # issue 31: the emulated mma.sync synchronised the whole block, which hid a missing barrier
    "mma-conv2d-tile-overwritten": (
        "backends/gpu/cuda/conv2d_mma.cu",
        "        __syncthreads();  // the tiles are overwritten by the next step\n",
        "",
        KERNEL_TESTS,
    ),
    "mma-matmul-tile-overwritten": (
        "backends/gpu/cuda/matmul_mma.cu",
        "        __syncthreads();  // the tiles are overwritten by the next step\n",
        "",
        KERNEL_TESTS,
    ),
    "require-gpu-skips": (
        "tests/conftest.py",
        "        if require_gpu():\n",
        "        if False:\n",
        ["tests/test_require_gpu.py"],
    ),
}


def project_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def put_back(name: str, scratch: pathlib.Path) -> tuple[bool, list[str], str]:
    """Run ``name``'s tests with the defect put back: (caught, failed tests, pytest's summary)."""
    path, line, defect, tests = DEFECTS[name]
    work = scratch / name
    for file in project_files():
        (work / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / file, work / file)
    source = (work / path).read_text()
    if source.count(line) != 1:
        raise SystemExit(f"{name}: {path} has {source.count(line)} copies of {line.strip()!r} (expected 1): update DEFECTS")
    (work / path).write_text(source.replace(line, defect))
    env = dict(os.environ, LITEDELEGATE_TEST_DEVICE="emulated", PYTHONDONTWRITEBYTECODE="1")
    env.pop("REQUIRE_GPU", None)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", "--tb=no", *tests],
        cwd=work, env=env, capture_output=True, text=True, timeout=1800,
    )
    shutil.rmtree(work, ignore_errors=True)
    failed = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("FAILED ")]
    summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
    return bool(failed), failed, summary


def main(argv: list[str]) -> int:
    if argv == ["--list"]:
        for name, (path, line, defect, _) in DEFECTS.items():
            print(f"{name}: {path}: {line.strip()!r} -> {defect.strip()!r}")
        return 0
    names = argv or list(DEFECTS)
    unknown = [n for n in names if n not in DEFECTS]
    if unknown:
        raise SystemExit(f"unknown defects {unknown}; --list shows them")
    missed = []
    with tempfile.TemporaryDirectory(prefix="litedelegate-defects-") as scratch:
        for name in names:
            caught, failed, summary = put_back(name, pathlib.Path(scratch))
            print(f"{name}: {'caught' if caught else 'NOT CAUGHT'} ({summary})", flush=True)
            for test in failed[:5]:
                print(f"    {test}")
            if len(failed) > 5:
                print(f"    ... and {len(failed) - 5} more")
            if not caught:
                missed.append(name)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
