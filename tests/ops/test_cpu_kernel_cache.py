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


def _index_key(kernel):
    from numba.core.registry import cpu_target
    return kernel._cache._index_key(("sig",), cpu_target.target_context.codegen())


def test_kernels_differing_only_inside_the_row_loop_they_call_have_different_keys():
    # the gather kernel's closure holds its row loop; XROW, VDIV (and the sum backward's DIV) live only in the
    # row loop's own closure, so the key must describe the compiled functions a kernel calls, recursively
    from mpgraph.ops._cpu import scatter, spmm_backward
    keys = [_index_key(scatter._gather_kernel(64, 1, 8, True, True, xrow, vdiv))
            for xrow in (False, True) for vdiv in (False, True)]
    keys += [_index_key(spmm_backward._kernel(64, 8, div)) for div in (False, True)]
    keys += [_index_key(spmm_backward._kernel(0, 0, div)) for div in (False, True)]
    # the edge operand's shape, compiled into the row loop (HK_ONE) or tested per edge (HK_ANY)
    keys += [_index_key(scatter._gather_kernel(64, 1, 0, True, False, True, False, False, hk))
             for hk in (scatter.HK_ANY, scatter.HK_ONE)]
    assert len(set(keys)) == len(keys)
    assert _index_key(scatter._gather_kernel(64, 1, 8, True, True)) == keys[0]


def test_a_compiled_function_in_a_closure_is_described_the_same_in_every_process():
    # a set (fastmath flags) iterates in an order that follows the process's hash seed; a dispatcher pickles
    # with a number of its process: neither may reach the key
    script = textwrap.dedent("""
        import hashlib
        from numba import njit
        from numba.core import serialize
        from mpgraph.ops._cpu._core import _stable_closure_value
        inner = njit(fastmath={"reassoc", "contract", "nsz", "arcp"})(lambda a: a + 1)
        print(hashlib.sha256(serialize.dumps(_stable_closure_value((inner, 3)))).hexdigest())
    """)
    digests = {subprocess.run([sys.executable, "-c", script], env=dict(os.environ, PYTHONHASHSEED=seed),
                              capture_output=True, text=True, timeout=300, check=True).stdout
               for seed in ("1", "2", "3")}
    assert len(digests) == 1, digests


_ROW_LOOP_KERNELS_RUN = textwrap.dedent("""
    import numba.core.event as event
    import torch
    import mpgraph
    import mpgraph.function as fn

    compiled = []

    class Record(event.Listener):
        def on_start(self, ev):
            f = ev.data["dispatcher"].py_func
            if f.__module__.startswith("mpgraph."):
                compiled.append(f.__qualname__)

        def on_end(self, ev):
            return None

    event.register("numba:compile", Record())
    g = mpgraph.graph((torch.tensor([0, 1, 2, 2, 3]), torch.tensor([1, 2, 0, 1, 1])), num_nodes=4)
    x = torch.linspace(-1, 1, 128).reshape(4, 4, 8).requires_grad_()
    w = torch.linspace(1, 2, 20).reshape(5, 4, 1).requires_grad_()
    g.srcdata["h"], g.edata["w"] = x, w
    g.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "s"))    # backward: spmm_backward's fused kernel
    g.update_all(fn.copy_u("h", "m"), fn.max("m", "mx"))         # backward: scatter's winner gather
    (g.dstdata["s"].sum() + g.dstdata["mx"].sum()).backward()
    print(round(float(x.grad.sum()), 4), round(float(w.grad.sum()), 4), sorted(set(compiled)))
""")


@pytest.mark.slow
def test_kernels_calling_a_row_loop_are_loaded_by_the_next_process(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    runs = [subprocess.run([sys.executable, "-c", _ROW_LOOP_KERNELS_RUN], env=dict(env, PYTHONHASHSEED=seed),
                           capture_output=True, text=True, timeout=600) for seed in ("1", "2")]
    first, second = (r.stdout.strip() for r in runs)
    # (qualnames: scatter's "_gather_kernel.<locals>.kernel", spmm_backward's "_kernel.<locals>.kernel")
    assert "'_gather_kernel.<locals>.kernel'" in first and "'_kernel.<locals>.kernel'" in first, runs[0].stderr[-2000:]
    # the second process loads every kernel the first compiled, and gets the same gradients
    assert second == first.split(" [")[0] + " []", runs[1].stderr[-2000:]


def test_a_recursive_compiled_function_in_a_closure_is_described_by_name_where_it_recurs():
    from numba import njit

    def make(c):
        @njit
        def count(n):
            return c if n == 0 else count(n - 1)  # its own closure holds it

        return count

    a, b = _core._stable_closure_value(make(1)), _core._stable_closure_value(make(2))
    assert a != b and a == _core._stable_closure_value(make(1))   # told apart by c, alike when alike
    closure = a[-2]                                               # (count's own closure: c, then count)
    assert closure[0] == 1 and closure[1][0] == "compiled function, recursive" and closure[1][2].endswith("count")


_FUSED_RUN = textwrap.dedent("""
    import sys
    import torch
    from mpgraph._index import Index
    from mpgraph.ops import _dispatch
    from mpgraph.ops._checks import reversed_index
    from mpgraph.ops._dispatch import use_backend

    gen = torch.Generator().manual_seed(0)
    n, E = 50, 400
    src, dst = torch.randint(0, n, (E,), generator=gen), torch.randint(0, n, (E,), generator=gen)
    index = Index.from_coo(src.int(), dst.int(), n, n)
    for shape in sys.argv[1:]:          # 'HxD': heads of the fused u_div_e sum backward, float16
        H, D = (int(v) for v in shape.split("x"))
        G, x = torch.randn(n, H * D, generator=gen), torch.randn(n, H * D, generator=gen)
        w = (0.5 + torch.rand(E, H, generator=gen)) * torch.where(torch.rand(E, H, generator=gen) < 0.5, -1.0, 1.0)
        G, x, w = G.half(), x.half(), w.half()
        with use_backend("cpu", strict=True):
            gx, gw = _dispatch.spmm_mul_backward(reversed_index(index), G, x, w, H, "div")
        g, wd = G.double().view(n, H, D)[dst.long()], w.double()
        ex = torch.zeros(n, H, D, dtype=torch.float64).index_add_(0, src.long(), g / wd[:, :, None])
        ew = -(g * x.double().view(n, H, D)[src.long()]).sum(-1) / (wd * wd)
        good = (torch.allclose(gx.double(), ex.view(n, -1), rtol=1e-2, atol=1e-2)
                and torch.allclose(gw.double(), ew, rtol=1e-2, atol=1e-2))
        print(shape, "ok" if good else "WRONG")
""")


@pytest.mark.slow
def test_kernels_compiled_by_different_processes_run_their_own_row_loops_when_loaded_together(tmp_path):
    # Numba names a compiled function by its qualified name and a per-process counter. Processes A and B each
    # compile one fused backward (4 heads of 16, 8 heads of 8) after the same imports, so their row loops (same
    # qualified name and argument types, different code) get the same name; a process that loads both from the
    # cache had the two linkonce_odr definitions merged, and one kernel ran the other's row loop (wrong
    # gradients and heap corruption, seen in a pytest-xdist run; numba/numba#10486). _core now numbers functions
    # from a random start in every process.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    runs = [subprocess.run([sys.executable, "-c", _FUSED_RUN, *shapes], env=env, capture_output=True, text=True,
                           timeout=600) for shapes in (["2x32"], ["4x16"], ["8x8"], ["4x16", "8x8"])]
    # (the first process caches the helpers the others load, so A and B compile from the same count)
    assert [r.stdout.split() for r in runs] == [["2x32", "ok"], ["4x16", "ok"], ["8x8", "ok"],
                                                ["4x16", "ok", "8x8", "ok"]], [r.stderr[-1500:] for r in runs]
