"""``benchmarks/device_check.py --host``: the device check runs end to end on the emulated
CUDA device, so the script a GPU machine runs is known to work before one is at hand."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_device_check_runs_on_the_emulated_device_and_writes_a_complete_report(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("REQUIRE_GPU", None)
    result = subprocess.run(
        [sys.executable, "benchmarks/device_check.py", "--host", "--out", str(tmp_path)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,  # (the script's own budget is 450 s)
    )
    report = (tmp_path / "device-check.md").read_text()
    assert result.returncode == 0, report[-3000:] + result.stderr[-2000:]
    for section in ("1. Machine", "2. GPU tests", "3. Parity with the CPU path", "4. CUDA graphs on vs off",
                    "5. Latency", "6. Counters per invoke", "7. Issue 24: graph nodes, throughput, float16",
                    "8. Issue 25: threads and placement", "9. Issue 31: kernels chosen by measurement", "Result"):
        assert f"## {section}" in report
    assert "all checks passed" in report
    assert "exit 0" in report and " passed" in report  # the gpu tests ran, on the emulated device
    assert "| mp_face_detection_short_range | 6 | yes | replaying |" in report
    # Section 8 embeds benchmarks/gpu_threads.py's report (kept beside it too).
    assert "### Threads: 4 interpreters" in report and "(rehearsal: host emulation is not a GPU)" in report
    assert (tmp_path / "gpu-threads.md").exists()
    # Section 9: the kernel each node chose, checked against the twin on the emulated device.
    assert "| mini_mobilenet_float32 | float32 | DEPTHWISE_CONV_2D v2 (node 1) | direct | tiled 8x8x16 | - |" in report
