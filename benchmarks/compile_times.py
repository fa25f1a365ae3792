"""A pytest plugin that times Numba's kernel compiles per test, to see where the test suite's time goes.

Almost all of a cold test run (a clean clone has no compiled kernels on disk) is Numba compiling. Load it
with ``-p`` from the repository root; every process (each pytest-xdist worker too) appends one JSON line per
test that compiled something to ``MPGRAPH_COMPILE_LOG`` (default ``compile_times.jsonl`` in the working
directory)::

    python -m pytest -n 2 --dist worksteal -p benchmarks.compile_times tests/ops/test_spmm.py
    python benchmarks/compile_times.py compile_times.jsonl      # seconds per test function, largest first

Each line: ``{"test": nodeid, "worker": ..., "compile_s": ..., "compiles": ..., "kernels": [...]}``; ``kernels``
names each outermost compile (the function, its closure's constants, the argument types); ``compile_s`` counts
only outermost compiles (a kernel's callees compile inside it), so the figures add up to wall time spent
compiling. Do not put ``benchmarks`` itself on ``PYTHONPATH``: its ``ops.py`` then hides the tests' ``ops``
package (``tests/ops``), and the Triton test files fail to import.
"""

import json
import os
import sys
import time
from collections import defaultdict

_state = {"depth": 0, "t0": 0.0, "seconds": 0.0, "count": 0, "kernels": []}


def _kernel_name(data):
    """``module.qualname(closure constants)[argument types]`` of a compile event: which kernel, specialised how."""
    disp = (data or {}).get("dispatcher")
    func = getattr(disp, "py_func", None)
    if func is None:
        return "?"
    consts = []
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if name != "source_hash" and isinstance(value, (bool, int, float, str, type(None))):
            consts.append(f"{name}={value!r}")
    args = ",".join(str(a) for a in (data.get("args") or ()))
    return f"{func.__module__}.{func.__qualname__}({','.join(consts)})[{args}]"


def _install():
    import numba.core.event as event

    class _Timer(event.Listener):
        def on_start(self, ev):
            if _state["depth"] == 0:
                _state["t0"] = time.perf_counter()
                _state["kernels"].append(_kernel_name(ev.data))
            _state["depth"] += 1

        def on_end(self, ev):
            _state["depth"] -= 1
            if _state["depth"] == 0:
                _state["seconds"] += time.perf_counter() - _state["t0"]
                _state["count"] += 1

    event.register("numba:compile", _Timer())


def pytest_configure(config):
    _install()


def pytest_runtest_setup(item):
    _state.update(seconds=0.0, count=0, kernels=[])


def pytest_runtest_teardown(item, nextitem):
    if _state["count"]:
        line = {"test": item.nodeid, "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
                "compile_s": round(_state["seconds"], 3), "compiles": _state["count"],
                "kernels": _state["kernels"]}
        with open(os.environ.get("MPGRAPH_COMPILE_LOG", "compile_times.jsonl"), "a") as f:
            f.write(json.dumps(line) + "\n")


def summarize(path, top=40):
    """Compile seconds and compiles per test function (parameters folded), largest first."""
    seconds, count, cases = defaultdict(float), defaultdict(int), defaultdict(int)
    with open(path) as f:
        for raw in f:
            rec = json.loads(raw)
            name = rec["test"].split("[")[0]
            seconds[name] += rec["compile_s"]
            count[name] += rec["compiles"]
            cases[name] += 1
    total = sum(seconds.values())
    print(f"{total:.0f} s compiling in {sum(count.values())} compiles over {sum(cases.values())} tests")
    for name in sorted(seconds, key=seconds.get, reverse=True)[:top]:
        print(f"{seconds[name]:8.1f} s {count[name]:5d} compiles {cases[name]:4d} cases  {name}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python benchmarks/compile_times.py COMPILE_LOG.jsonl")
    summarize(sys.argv[1])
