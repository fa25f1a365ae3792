"""What ``test_triton_dispatch.py`` and ``test_triton_kernels.py`` share: running checks in a child process.

``triton.jit`` reads ``TRITON_INTERPRET`` when a kernel is defined, and pytest imports every test module into
one process, so each of those modules runs its interpreter checks in one subprocess: the module executed as a
script runs the named checks and prints one JSON line (``{"case", "status", "seconds"}``) per check, and its
parametrized ``test_interpreter`` cases read those lines. Both sides live here: the check registry
(:class:`Checks`), the child's launch (:func:`run_python`, :func:`records`), the module-scoped fixture that runs
the selected checks (:func:`interpreter_fixture`), the per-case assertion (:func:`assert_interpreter_ok`), and the
worker loop (:func:`run_checks`, :func:`report`).

Imported as ``ops._triton_subprocess``: ``tests`` is on pytest's ``pythonpath`` and on the child's PYTHONPATH.
"""

import functools
import importlib.util
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
HAS_TRITON = importlib.util.find_spec("triton") is not None
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


class Checks(dict):
    """``{name: check}``, filled by ``@checks.add(name)`` and ``checks.per_dtype(prefix, make)``."""

    def add(self, name):
        """Decorator: register the function as ``name``."""
        def register(fn):
            self[name] = fn
            return fn
        return register

    def per_dtype(self, prefix, make):
        """Register ``make(dtype)`` as ``{prefix}-f32``, ``{prefix}-f16`` and ``{prefix}-bf16``."""
        for dn, dt in DTYPES.items():
            self[f"{prefix}-{dn}"] = make(dt)


# ----------------------------------------------------------------------------------------------
# parent side (pytest)
# ----------------------------------------------------------------------------------------------
def run_python(*args, drop=(), paths=(ROOT, TESTS), timeout=900, **env):
    """``python *args`` in the repository root; the ``subprocess.CompletedProcess`` (text output captured).

    The child's environment is this one less the variables in ``drop``, plus ``env``, with ``paths`` put ahead
    of any PYTHONPATH already set.
    """
    child = {k: v for k, v in os.environ.items() if k not in drop}
    child.update(env, PYTHONPATH=os.pathsep.join([str(p) for p in paths]
                                                  + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    return subprocess.run([sys.executable, *map(str, args)], env=child, cwd=str(ROOT), capture_output=True,
                          text=True, timeout=timeout)


def records(proc):
    """The JSON records a worker printed (its stdout lines that start with ``{``)."""
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def interpreter_fixture(script, drop=(), **env):
    """A module-scoped fixture for ``script`` (a test module's own path); assign it to ``interpreter_results``.

    The fixture skips without Triton; otherwise it runs ``script`` with the names of the selected
    ``test_interpreter`` cases of that module, in one child with ``TRITON_INTERPRET=1``, ``OMP_NUM_THREADS=1``
    and ``env`` set (``drop`` unset), and returns ``{name: record}`` plus ``"__proc__"``, the finished process.
    """
    @pytest.fixture(scope="module")
    def interpreter_results(request):
        if not HAS_TRITON:
            pytest.skip("triton is not installed")
        names = [item.callspec.params["case"] for item in request.session.items
                 if item.path == script and item.originalname == "test_interpreter"]
        proc = run_python(script, *names, drop=drop, TRITON_INTERPRET="1", OMP_NUM_THREADS="1", **env)
        results = {record["case"]: record for record in records(proc)}
        results["__proc__"] = proc
        return results
    return interpreter_results


def assert_interpreter_ok(results, case):
    """``case`` has a record in ``results`` (the fixture's value), and its status is ``"ok"``."""
    record = results.get(case)
    if record is None:
        proc = results["__proc__"]
        pytest.fail(f"interpreter worker gave no result for {case} (rc {proc.returncode}):\n{proc.stderr[-4000:]}")
    assert record["status"] == "ok", record["status"]


# ----------------------------------------------------------------------------------------------
# child side (the test module run as a script)
# ----------------------------------------------------------------------------------------------
def report(case, run):
    """Call ``run()`` and print its record: status ``"ok"``, or the traceback of what it raised."""
    start = time.perf_counter()
    try:
        run()
        status = "ok"
    except Exception:  # report every failure, keep going
        status = traceback.format_exc()
    print(json.dumps({"case": case, "status": status, "seconds": round(time.perf_counter() - start, 3)}), flush=True)


def run_checks(checks, names, *args):
    """One intra-op thread, then ``checks[name](*args)`` for each name, each reported by :func:`report`."""
    torch.set_num_threads(1)
    for name in names:
        report(name, functools.partial(checks[name], *args))
