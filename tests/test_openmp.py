"""``import mpgraph`` sets OpenMP's wait policy to passive unless the user chose one (mpgraph/_openmp.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(code, **env):
    child = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    child.update(env)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()


STATUS = "import os; from mpgraph import _openmp; print(os.environ['OMP_WAIT_POLICY']); print(_openmp.status())"


def test_set_before_torch_loads():
    policy, status = _run("import mpgraph; " + STATUS)
    assert policy == "PASSIVE" and "before torch loaded" in status


def test_torch_first_reaches_numba_only_and_says_how_to_fix():
    policy, status = _run("import torch, mpgraph; " + STATUS)
    assert policy == "PASSIVE" and "Numba's threads only" in status and "OMP_WAIT_POLICY=PASSIVE" in status


@pytest.mark.parametrize("value", ["ACTIVE", "passive"])
def test_a_users_value_is_left_alone(value):
    policy, status = _run("import mpgraph; " + STATUS, OMP_WAIT_POLICY=value)
    assert policy == value and "set by the user" in status


def test_info_reports_it():
    out = _run("from mpgraph.cli.info import collect; print(collect()['openmp_wait'])")
    assert out[-1].startswith("OMP_WAIT_POLICY=PASSIVE")
