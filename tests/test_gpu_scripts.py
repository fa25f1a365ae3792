"""The GPU benchmark scripts run where CI runs: without CUDA they say so and exit 0, and the shell drivers parse."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA path")
@pytest.mark.parametrize("args", [["benchmarks/triton_configs.py"],
                                  ["benchmarks/triton_ab.py", "--old", "benchmarks/triton_ab.py"],
                                  ["benchmarks/gpu_check.py"]])
def test_script_without_cuda(args):
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no CUDA" in proc.stdout


def test_triton_ab_needs_the_old_copy():
    proc = subprocess.run([sys.executable, "benchmarks/triton_ab.py"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2 and "--old" in proc.stderr


@pytest.mark.parametrize("script", ["benchmarks/gpu_session.sh", "benchmarks/gpu_ab.sh"])
def test_shell_drivers_parse(script):
    proc = subprocess.run(["bash", "-n", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
