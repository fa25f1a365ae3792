"""The CPU kernels' on-disk compile cache is safe for processes that compile at the same time.

Numba's own ``cache=True`` numbers a function's data files in save order, so two processes saving
different overloads of one function at once can leave the index naming one overload and the file
holding the other (seen in CI as "can't unbox array from PyObject" in a pytest-xdist worker; with
equal argument types it runs the other operator's code). ``_core.cached_njit`` names each data file
by a hash of its key instead.
"""

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba")

from mpgraph.ops._cpu import _core  # noqa: E402
from mpgraph.ops._cpu._layout import SAME  # noqa: E402
from mpgraph.ops._cpu.spmm import spmm_kernel  # noqa: E402

KEY_A = (("float32",), ("x86_64", "cpu", ""), ("code", "closure-a"))
KEY_B = (("float32",), ("x86_64", "cpu", ""), ("code", "closure-b"))


def cache_file(path):
    return _core._KeyNamedCacheFile(str(path), "kernel-1.py311", ("stamp", 1))


def test_data_file_names_are_the_keys_hashes(tmp_path):
    a, b = cache_file(tmp_path), cache_file(tmp_path)
    assert a._name_for(KEY_A) == b._name_for(KEY_A)  # two processes agree on a key's file
    assert a._name_for(KEY_A) != a._name_for(KEY_B)
    a.save(KEY_A, ("code of", "a"))
    assert b.load(KEY_A) == ("code of", "a")
    assert b.load(KEY_B) is None


def test_saves_from_a_stale_index_never_load_another_keys_code(tmp_path, monkeypatch):
    # both "processes" read the index before either wrote it: the race that broke Numba's numbering
    a, b = cache_file(tmp_path), cache_file(tmp_path)
    monkeypatch.setattr(a, "_load_index", lambda: {})
    monkeypatch.setattr(b, "_load_index", lambda: {})
    a.save(KEY_A, ("code of", "a"))
    b.save(KEY_B, ("code of", "b"))
    monkeypatch.undo()
    reader = cache_file(tmp_path)
    assert reader.load(KEY_B) == ("code of", "b")
    assert reader.load(KEY_A) is None  # its index entry was overwritten: a recompile, not a wrong load
    reader.save(KEY_A, ("code of", "a"))
    assert reader.load(KEY_A) == ("code of", "a") and reader.load(KEY_B) == ("code of", "b")


def test_an_index_entry_naming_another_keys_file_is_ignored(tmp_path):
    # an index left by Numba's numbering (or by the race) that points a key at someone else's code
    f = cache_file(tmp_path)
    f.save(KEY_A, ("code of", "a"))
    f._save_index({KEY_A: f._name_for(KEY_A), KEY_B: f._name_for(KEY_A)})
    assert f.load(KEY_B) is None
    assert f.load(KEY_A) == ("code of", "a")


def test_cached_njit_rejects_a_cache_option():
    with pytest.raises(TypeError, match="always caches"):
        _core.cached_njit(cache=False)


def test_every_cached_kernel_uses_the_key_named_cache():
    kernel = spmm_kernel("copy_lhs", "max", SAME, True, 0)
    assert isinstance(kernel._cache, _core._KeyNamedFunctionCache)
    assert isinstance(kernel._cache._cache_file, _core._KeyNamedCacheFile)
    src = pathlib.Path(_core.__file__).parent
    decorated = re.compile(r"^\s*@(numba\.)?n?jit\(.*cache\s*=\s*True", re.M)
    plain = [p.name for p in sorted(src.glob("*.py")) if decorated.search(p.read_text())]
    assert plain == [], f"kernels cached by Numba's own cache=True in {plain}: use _core.cached_njit"


_WORKER = textwrap.dedent("""
    import random, sys, time
    import numpy as np
    from numba.core import caching
    from mpgraph.ops._cpu._core import cached_njit

    # widen the window between reading the index and writing the files, as a busy machine does
    for name in ("_save_index", "_save_data"):
        orig = getattr(caching.IndexDataCacheFile, name)
        def slow(self, *a, _orig=orig):
            time.sleep(random.random() * 0.05)
            return _orig(self, *a)
        setattr(caching.IndexDataCacheFile, name, slow)

    def make(c):
        def f(x):  # one function, many overloads told apart by the closure variable (as the kernels)
            out = np.empty_like(x)
            for i in range(x.size):
                out[i] = x[i] + c
            return out
        return cached_njit(nogil=True)(f)

    order = list(range(int(sys.argv[2])))
    if sys.argv[1] == "reverse":
        order.reverse()
    wrong, hits = [], 0
    for c in order:
        f = make(c)
        if f(np.zeros(2))[0] != c:
            wrong.append(c)
        hits += sum(f.stats.cache_hits.values())
    print("wrong", wrong, "cache hits", hits)
""")


@pytest.mark.slow
def test_processes_compiling_at_once_load_their_own_code(tmp_path):
    script = tmp_path / "cache_race_worker.py"
    script.write_text(_WORKER)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    n = "12"
    procs = [subprocess.Popen([sys.executable, str(script), order, n], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for order in ("forward", "reverse")]
    outs = [p.communicate(timeout=300) for p in procs]
    # then two more processes that load what those two saved
    for order in ("forward", "reverse"):
        r = subprocess.run([sys.executable, str(script), order, n], env=env, capture_output=True, text=True,
                           timeout=300)
        outs.append((r.stdout, r.stderr))
    for out, err in outs:
        assert out.startswith("wrong [] "), err[-2000:]
    # the racing saves may drop index entries (a recompile); the third process saved those again
    assert outs[-1][0].strip() == f"wrong [] cache hits {n}"


_KERNEL_RUN = textwrap.dedent("""
    import torch
    from mpgraph._index import Index
    from mpgraph.ops import _cpu as K
    from mpgraph.ops._cpu.spmm import spmm_kernel
    from mpgraph.ops._cpu._layout import SAME

    idx = Index(torch.tensor([0, 1, 2, 2]), torch.tensor([1, 2, 0, 1]), 3, 3)
    indptr, indices, eid = idx.csc()
    x = torch.arange(6, dtype=torch.bfloat16).reshape(3, 2)
    out, arg, _ = K.gspmm("copy_lhs", "max", indptr, indices, eid, x, None)
    assert out.tolist() == [[4.0, 5.0], [4.0, 5.0], [2.0, 3.0]], out
    print("cache hits", sum(spmm_kernel("copy_lhs", "max", SAME, True, 0).stats.cache_hits.values()))
""")


@pytest.mark.slow
def test_a_kernel_compiled_by_one_process_is_loaded_by_the_next(tmp_path):
    # the data file's name hashes repr(key): it must not change between processes, or nothing is reused
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    runs = [subprocess.run([sys.executable, "-c", _KERNEL_RUN], env=env, capture_output=True, text=True,
                           timeout=600) for _ in range(2)]
    assert [r.stdout.strip() for r in runs] == ["cache hits 0", "cache hits 1"], runs[-1].stderr[-2000:]
