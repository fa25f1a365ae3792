"""``import mpgraph`` sets two environment defaults unless the user chose: OpenMP's passive wait policy
(mpgraph/_openmp.py) and transparent huge pages for torch's large CPU tensors (mpgraph/_thp.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OMP, THP = "OMP_WAIT_POLICY", "THP_MEM_ALLOC_ENABLE"
STATUS = {OMP: "import os; from mpgraph import _openmp; print(os.environ['OMP_WAIT_POLICY']); print(_openmp.status())",
          THP: "import os; from mpgraph import _thp; print(os.environ['THP_MEM_ALLOC_ENABLE']); print(_thp.status())"}
DEFAULT = {OMP: "PASSIVE", THP: "1"}


def _run(code, **env):
    """Run ``code`` in a fresh interpreter with neither variable set, except as ``env`` says; its output lines."""
    child = {k: v for k, v in os.environ.items() if k not in (OMP, THP)}
    child.update(env)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=child, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()


@pytest.mark.parametrize("name", [OMP, THP])
def test_set_before_torch_loads(name):
    value, status = _run("import mpgraph; " + STATUS[name])
    assert value == DEFAULT[name] and "before torch loaded" in status


def test_torch_first_openmp_reaches_numba_only_and_says_how_to_fix():
    policy, status = _run("import torch, mpgraph; " + STATUS[OMP])
    assert policy == "PASSIVE" and "Numba's threads only" in status and "OMP_WAIT_POLICY=PASSIVE" in status


def test_torch_first_huge_pages_say_when_they_apply():
    value, status = _run("import torch, mpgraph; " + STATUS[THP])
    assert value == "1" and "unless a CPU tensor was made before" in status


@pytest.mark.parametrize("name, value", [(OMP, "ACTIVE"), (OMP, "passive"), (THP, "0"), (THP, "1")])
def test_a_users_value_is_left_alone(name, value):
    got, status = _run("import mpgraph; " + STATUS[name], **{name: value})
    assert got == value and "set by the user" in status and f"{name}={value}" in status


@pytest.mark.parametrize("key, start", [("openmp_wait", "OMP_WAIT_POLICY=PASSIVE"),
                                        ("huge_pages", "THP_MEM_ALLOC_ENABLE=1")])
def test_info_reports_it(key, start):
    out = _run(f"from mpgraph.cli.info import collect; print(collect()['{key}'])")
    assert out[-1].startswith(start)
    if key == "huge_pages":
        assert "transparent huge pages" in out[-1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="torch advises huge pages on Linux only")
def test_torchs_allocator_takes_the_huge_page_setting():
    # with the variable on, torch page-aligns an allocation of 2 MiB or more (and advises it); off, it aligns to
    # 64 bytes, and the C library's large blocks start just past a header, never on a page boundary
    code = ("import mpgraph, torch; ptrs = [torch.empty(3 << 20, dtype=torch.uint8).data_ptr() for _ in range(4)]; "
            "print(all(p % 4096 == 0 for p in ptrs))")
    assert _run(code) == ["True"]
    assert _run(code, THP_MEM_ALLOC_ENABLE="0") == ["False"]
