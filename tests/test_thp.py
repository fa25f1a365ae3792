"""``import mpgraph`` asks torch's allocator for transparent huge pages unless the user chose (mpgraph/_thp.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STATUS = "import os; from mpgraph import _thp; print(os.environ['THP_MEM_ALLOC_ENABLE']); print(_thp.status())"


def _run(code, **env):
    child = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"}
    child.update(env)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()


def test_set_before_torch_loads():
    value, status = _run("import mpgraph; " + STATUS)
    assert value == "1" and "before torch loaded" in status


def test_torch_first_says_when_it_applies():
    value, status = _run("import torch, mpgraph; " + STATUS)
    assert value == "1" and "unless a CPU tensor was made before" in status


@pytest.mark.parametrize("value", ["0", "1"])
def test_a_users_value_is_left_alone(value):
    got, status = _run("import mpgraph; " + STATUS, THP_MEM_ALLOC_ENABLE=value)
    assert got == value and "set by the user" in status


def test_info_reports_it():
    out = _run("from mpgraph.cli.info import collect; print(collect()['huge_pages'])")
    assert out[-1].startswith("THP_MEM_ALLOC_ENABLE=1") and "transparent huge pages" in out[-1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="torch advises huge pages on Linux only")
def test_torchs_allocator_takes_the_setting():
    # with the variable on, torch page-aligns an allocation of 2 MiB or more (and advises it); off, it aligns to
    # 64 bytes, and the C library's large blocks start just past a header, never on a page boundary
    code = ("import mpgraph, torch; ptrs = [torch.empty(3 << 20, dtype=torch.uint8).data_ptr() for _ in range(4)]; "
            "print(all(p % 4096 == 0 for p in ptrs))")
    assert _run(code) == ["True"]
    assert _run(code, THP_MEM_ALLOC_ENABLE="0") == ["False"]
