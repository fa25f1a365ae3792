"""The ``triton`` backend through the public ops (``mpgraph.ops`` and ``Graph.update_all``).

Every check runs an op forward and backward with ``use_backend('triton', strict=True)`` and again with
``use_backend('reference')``, compares outputs and gradients at the tolerance of the dtype, and asserts
(``record_backends``) that every kernel call, backward included, ran on triton.

On CPU the backend only runs under Triton's interpreter with the opt-in ``MPGRAPH_TRITON_ON_CPU=1``.
``triton.jit`` reads ``TRITON_INTERPRET`` when kernels are defined, so (like ``test_triton_kernels.py``)
the checks run in one subprocess: this file executed as a script with both variables set prints one
JSON line per check, and the parametrized ``test_interpreter`` cases read them (``_triton_subprocess.py``
holds the runner both files share). The worker lowers the backend's row split to 8 so that the hub row
(30 in-edges) takes the two-pass (partials + combine) path.
In-process tests check that without the opt-in CPU calls never select triton.
"""

import os
import sys
from pathlib import Path

import pytest
import torch

from ops._triton_subprocess import (HAS_TRITON, ROOT, Checks, assert_interpreter_ok, interpreter_fixture,
                                    run_checks, run_python)
from tolerances import assert_close

HERE = Path(__file__).resolve()

SPLIT = 8
#: where the checks put graphs and tensors: the CPU in the interpreter worker, CUDA in ``test_gpu``
DEVICE = torch.device("cpu")
SPMM_OPS = ["copy_lhs", "copy_rhs", "add", "sub", "mul", "div"]
REDUCES = ["sum", "mean", "max", "min"]


# ----------------------------------------------------------------------------------------------
# graphs, features, and the two-backend comparison
# ----------------------------------------------------------------------------------------------
def _edges(seed=0):
    """9 sources -> 7 destinations, edges in random order: in-degrees [0, 30, 1, 8, 9, 0, 3].

    Empty rows, a hub longer than SPLIT, rows of exactly SPLIT and SPLIT + 1 edges; the hub has a
    repeated source (exact ties for copy_u max/min).
    """
    gen = torch.Generator().manual_seed(seed)
    deg = torch.tensor([0, 30, 1, 8, 9, 0, 3])
    dst = torch.repeat_interleave(torch.arange(deg.numel()), deg)
    src = torch.randint(0, 9, (dst.numel(),), generator=gen)
    src[1:4] = 2
    perm = torch.randperm(dst.numel(), generator=gen)
    return src[perm], dst[perm]


def _graph():
    """Homogeneous graph of 9 nodes on :func:`_edges` (nodes 0, 5, 7, 8 without in-edges)."""
    import mpgraph

    src, dst = _edges()
    return mpgraph.graph((src, dst), num_nodes=9, device=DEVICE)


def _bipartite():
    """``Index`` of :func:`_edges` with 9 source and 7 destination nodes."""
    from mpgraph._index import Index

    src, dst = _edges()
    return Index.from_coo(src.to(DEVICE), dst.to(DEVICE), 9, 7)


def _feat(shape, dtype, seed, positive=False):
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(shape, generator=gen) * 1.5 + 0.5 if positive else torch.randn(shape, generator=gen)
    return x.to(DEVICE, dtype)


def _run(backend, fn, inputs, seed=99):
    """``fn(*inputs)`` and the gradients of a random projection of its outputs, under ``backend``.

    Returns ``(outputs, grads, backends_seen)``; ``inputs`` are copied to fresh leaves.
    """
    from mpgraph.ops._dispatch import record_backends, use_backend

    leaves = [x.detach().clone().requires_grad_(True) for x in inputs]
    with record_backends() as seen, use_backend(backend, strict=True):
        outs = fn(*leaves)
        outs = outs if isinstance(outs, tuple) else (outs,)
        gen = torch.Generator().manual_seed(seed)
        loss = sum((o.float() * torch.randn(o.shape, generator=gen).to(o.device)).sum() for o in outs)
        loss.backward()
    return outs, [x.grad for x in leaves], list(seen)


def _compare(fn, inputs, dtype=None, min_calls=1):
    """Triton (strict) against the reference backend, forward and backward."""
    outs, grads, seen = _run("triton", fn, inputs)
    ref_outs, ref_grads, _ = _run("reference", fn, inputs)
    assert len(seen) >= min_calls and set(seen) == {"triton"}, seen
    for o, r in zip(outs, ref_outs):
        assert o.dtype == r.dtype and o.shape == r.shape, (o.dtype, r.dtype, o.shape, r.shape)
        assert_close(o, r, dtype or r.dtype)
    for i, (gr, rg) in enumerate(zip(grads, ref_grads)):
        assert (gr is None) == (rg is None), i
        if rg is not None:
            assert gr.dtype == rg.dtype, (i, gr.dtype, rg.dtype)
            assert_close(gr, rg, dtype or rg.dtype)
    return seen


# ----------------------------------------------------------------------------------------------
# checks (each runs in the interpreter subprocess)
# ----------------------------------------------------------------------------------------------
CHECKS = Checks()


@CHECKS.add("gspmm-all-ops-f32")
def _gspmm_all_ops():
    from mpgraph.ops import gspmm

    g = _graph()
    E = g.num_edges()
    x = _feat((9, 2, 3), torch.float32, 1)
    for op in SPMM_OPS:
        w = _feat((E, 2, 3), torch.float32, 2, positive=(op == "div"))
        for reduce in REDUCES:
            # copies ignore the other operand (its gradient stays None). Sum/mean of binary ops: forward, then
            # lhs grad (reversed graph) and rhs grad (sddmm), or, for mul/div of elementwise weights of up to 16
            # columns on CPU tensors (these, in the interpreter), both in one spmm_mul_backward call (Triton's
            # own kernels composed); the max/min backward is a scatter in the op layer
            binary = op not in ("copy_lhs", "copy_rhs") and reduce in ("sum", "mean")
            fused = op in ("mul", "div") and DEVICE.type == "cpu"
            _compare(lambda a, b, op=op, reduce=reduce: gspmm(g, op, reduce, a, b), [x, w],
                     min_calls=(2 if fused else 3) if binary else 1)


def _named_check(dtype):
    def run():
        from mpgraph import ops

        g = _graph()
        E = g.num_edges()
        _compare(lambda a: ops.copy_u_sum(g, a), [_feat((9, 5), dtype, 1)], min_calls=2)
        # GAT: u (N, H, D) x e (E, H, 1); both gradients in one spmm_mul_backward call (the rhs grad
        # contracts D with a dot)
        _compare(lambda a, b: ops.u_mul_e_sum(g, a, b),
                 [_feat((9, 3, 4), dtype, 2), _feat((E, 3, 1), dtype, 3, positive=True)], min_calls=2)
        # scalar edge weight (E,) against (N, D)
        _compare(lambda a, b: ops.u_mul_e_sum(g, a, b), [_feat((9, 4), dtype, 4), _feat((E,), dtype, 5)])
        _compare(lambda a: ops.copy_u_max(g, a), [_feat((9, 6), dtype, 6)])
        _compare(lambda a: ops.copy_u_min(g, a), [_feat((9, 6), dtype, 7)])
        _compare(lambda a, b: ops.u_div_e_mean(g, a, b),
                 [_feat((9, 4), dtype, 8), _feat((E, 4), dtype, 9, positive=True)])
        _compare(lambda a, b: ops.u_add_e_max(g, a, b), [_feat((9, 2, 3), dtype, 10), _feat((E, 2, 1), dtype, 11)])
        _compare(lambda a, b: ops.u_dot_v(g, a, b), [_feat((9, 2, 5), dtype, 12), _feat((9, 2, 5), dtype, 13)],
                 min_calls=3)
    return run


CHECKS.per_dtype("named-ops", _named_check)


@CHECKS.add("gsddmm-targets-f32")
def _gsddmm_targets():
    from mpgraph.ops import gsddmm

    g = _graph()
    E = g.num_edges()
    rows = {"u": 9, "v": 9, "e": E}
    for lt, rt in (("u", "v"), ("e", "u"), ("v", "e")):
        for op in ("add", "sub", "mul", "div", "dot", "copy_lhs", "copy_rhs"):
            a = _feat((rows[lt], 2, 4), torch.float32, 1)
            b = _feat((rows[rt], 1, 4) if op != "dot" else (rows[rt], 2, 4), torch.float32, 2,
                      positive=(op == "div"))
            if op == "copy_lhs":
                _compare(lambda x, op=op, lt=lt, rt=rt: gsddmm(g, op, x, None, lt, rt), [a])
            elif op == "copy_rhs":
                _compare(lambda y, op=op, lt=lt, rt=rt: gsddmm(g, op, None, y, lt, rt), [b])
            else:
                _compare(lambda x, y, op=op, lt=lt, rt=rt: gsddmm(g, op, x, y, lt, rt), [a, b])


def _softmax_check(dtype):
    def run():
        from mpgraph.ops import edge_softmax

        g = _graph()
        E = g.num_edges()
        logits = (_feat((E, 3, 1), torch.float32, 1) * 3).to(dtype)
        _compare(lambda z: edge_softmax(g, z), [logits], min_calls=2)          # backward: copy_rhs sum
        _compare(lambda z: edge_softmax(g, z, norm_by="src"), [logits])
        eids = torch.tensor([0, 3, 5, 6, 7, 11, 20, 40, 50], device=DEVICE)
        _compare(lambda z: edge_softmax(g, z, eids=eids), [logits[eids]])
    return run


CHECKS.per_dtype("edge_softmax", _softmax_check)


@CHECKS.add("bipartite-f32")
def _bipartite_ops():
    from mpgraph import ops

    index = _bipartite()
    E = index.num_edges
    _compare(lambda a: ops.copy_u_mean(index, a), [_feat((9, 3), torch.float32, 1)])
    f32 = torch.float32
    _compare(lambda a, b: ops.u_sub_e_min(index, a, b), [_feat((9, 3), f32, 2), _feat((E, 3), f32, 3)])
    _compare(lambda a, b: ops.u_add_v(index, a, b), [_feat((9, 3), f32, 4), _feat((7, 3), f32, 5)])
    _compare(lambda z: ops.edge_softmax(index, z), [_feat((E, 2), torch.float32, 6)])


@CHECKS.add("float64")
def _float64():
    from mpgraph import ops

    g = _graph()
    E = g.num_edges()
    _compare(lambda a, b: ops.u_mul_e_sum(g, a, b),
             [_feat((9, 2, 3), torch.float64, 1), _feat((E, 2, 1), torch.float64, 2)])
    _compare(lambda z: ops.edge_softmax(g, z), [_feat((E, 2), torch.float64, 3)])
    # gradcheck of the GAT aggregation on a tiny graph, every kernel on triton
    from mpgraph._index import Index
    from mpgraph.ops._dispatch import use_backend

    small = Index.from_coo(torch.tensor([0, 1, 2, 3, 3], device=DEVICE), torch.tensor([1, 1, 1, 0, 2], device=DEVICE),
                           4, 4)
    x = _feat((4, 2, 2), torch.float64, 4).requires_grad_(True)
    a = _feat((5, 2, 1), torch.float64, 5).requires_grad_(True)
    with use_backend("triton", strict=True):
        assert torch.autograd.gradcheck(lambda p, q: ops.u_mul_e_sum(small, p, q), (x, a), fast_mode=True)


@CHECKS.add("autocast-bf16")
def _autocast():
    from mpgraph import ops

    g = _graph()
    E = g.num_edges()

    def fn(x, w, z):
        with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
            h = ops.u_mul_e_sum(g, x, w)                  # fp32 operands run in bf16
            a = ops.edge_softmax(g, z)                    # fp32 logits, bf16 result (fp32 inside)
        assert h.dtype == torch.bfloat16 and a.dtype == torch.bfloat16, (h.dtype, a.dtype)
        return h, a

    _compare(fn, [_feat((9, 4), torch.float32, 1), _feat((E, 1), torch.float32, 2), _feat((E, 2), torch.float32, 3)],
             dtype=torch.bfloat16, min_calls=4)


def _update_all_check(dtype):
    def run():
        import mpgraph.function as fn

        g = _graph()
        E = g.num_edges()

        def message_passing(h, w, q):
            g.ndata["h"], g.edata["w"], g.ndata["q"] = h, w, q
            g.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "s"))
            g.update_all(fn.copy_u("h", "m"), fn.max("m", "mx"))
            g.update_all(fn.copy_u("h", "m"), fn.mean("m", "mn"))
            g.apply_edges(fn.u_dot_v("h", "q", "d"))
            return g.ndata.pop("s"), g.ndata.pop("mx"), g.ndata.pop("mn"), g.edata.pop("d")

        seen = _compare(message_passing, [_feat((9, 2, 4), dtype, 1), _feat((E, 2, 1), dtype, 2),
                                          _feat((9, 2, 4), dtype, 3)], min_calls=8)
        assert len(seen) >= 8, seen
    return run


CHECKS.per_dtype("update_all", _update_all_check)


@CHECKS.add("unsupported-broadcast-falls-back")
def _fallback():
    from mpgraph import ops
    from mpgraph.base import DGLError
    from mpgraph.ops._dispatch import record_backends, use_backend

    g = _graph()
    E = g.num_edges()
    x = _feat((9, 2, 1, 3), torch.float32, 1)       # (2, 1, 3) against (1, 4, 1): three stride groups
    w = _feat((E, 1, 4, 1), torch.float32, 2)
    with use_backend("triton", strict=True):
        try:
            ops.u_mul_e_sum(g, x, w)
        except DGLError:
            pass
        else:
            raise AssertionError("strict triton accepted a three-group broadcast")
    with record_backends() as seen, use_backend("triton"):
        out = ops.u_mul_e_sum(g, x, w)
    assert seen and "triton" not in seen, seen
    with use_backend("reference"):
        assert_close(out, ops.u_mul_e_sum(g, x, w), torch.float32)


@CHECKS.add("no-opt-in-no-triton")
def _no_opt_in():
    """With TRITON_INTERPRET=1 but without MPGRAPH_TRITON_ON_CPU, CPU calls never select triton."""
    from mpgraph import ops
    from mpgraph.base import DGLError
    from mpgraph.ops._dispatch import record_backends, use_backend

    g = _graph()
    x = _feat((9, 4), torch.float32, 1)
    saved = os.environ.pop("MPGRAPH_TRITON_ON_CPU")
    try:
        with record_backends() as seen:
            ops.copy_u_sum(g, x)
            ops.edge_softmax(g, _feat((g.num_edges(), 2), torch.float32, 2))
            ops.u_dot_v(g, x, x)
        assert seen and "triton" not in seen, seen
        with use_backend("triton", strict=True):
            try:
                ops.copy_u_sum(g, x)
            except DGLError:
                pass
            else:
                raise AssertionError("triton ran a CPU call without the opt-in")
    finally:
        os.environ["MPGRAPH_TRITON_ON_CPU"] = saved


# ----------------------------------------------------------------------------------------------
# interpreter tests (one subprocess for all selected checks)
# ----------------------------------------------------------------------------------------------
# {name: {"case", "status", "seconds"}} for the selected checks, run with the CPU opt-in and without a
# MPGRAPH_BACKEND override
interpreter_results = interpreter_fixture(HERE, drop=("MPGRAPH_BACKEND",), MPGRAPH_TRITON_ON_CPU="1")


@pytest.mark.interpreter
@pytest.mark.parametrize("case", sorted(CHECKS))
def test_interpreter(case, interpreter_results):
    assert_interpreter_ok(interpreter_results, case)


# ----------------------------------------------------------------------------------------------
# the same checks on a GPU (in-process, compiled kernels)
# ----------------------------------------------------------------------------------------------
requires_cuda = pytest.mark.skipif(
    not (HAS_TRITON and torch.cuda.is_available()) or os.environ.get("TRITON_INTERPRET") == "1",
    reason="needs triton and CUDA (and TRITON_INTERPRET unset)")
CPU_ONLY = {"no-opt-in-no-triton"}     # the CPU opt-in rule has no meaning on CUDA


@pytest.mark.gpu
@requires_cuda
@pytest.mark.parametrize("case", sorted(set(CHECKS) - CPU_ONLY))
def test_gpu(case, monkeypatch):
    from mpgraph.ops._triton import _backend, _common

    monkeypatch.setattr(sys.modules[__name__], "DEVICE", torch.device("cuda"))
    monkeypatch.setattr(_backend, "SPLIT", SPLIT)
    monkeypatch.setattr(_common, "AUTOTUNE", False)   # one compile per variant
    CHECKS[case]()


# ----------------------------------------------------------------------------------------------
# in-process: selection rules (no interpreter, no GPU)
# ----------------------------------------------------------------------------------------------
def test_cpu_calls_never_select_triton_without_opt_in(monkeypatch):
    from mpgraph import ops
    from mpgraph.base import DGLError
    from mpgraph.ops._dispatch import backends, record_backends, use_backend

    monkeypatch.delenv("MPGRAPH_TRITON_ON_CPU", raising=False)
    monkeypatch.delenv("MPGRAPH_BACKEND", raising=False)
    g = _graph()
    x = _feat((9, 2, 4), torch.float32, 1).requires_grad_(True)
    w = _feat((g.num_edges(), 2, 1), torch.float32, 2).requires_grad_(True)
    with record_backends() as seen:
        ops.u_mul_e_sum(g, x, w).sum().backward()
        ops.edge_softmax(g, w).sum().backward()
        ops.copy_u_max(g, x.detach().half())
    assert seen and "triton" not in seen, seen
    if "triton" in backends("spmm"):
        with use_backend("triton", strict=True), pytest.raises(DGLError, match="cannot run this spmm call"):
            ops.copy_u_sum(g, x.detach())


def test_triton_backend_registers_without_importing_triton():
    from mpgraph.ops import _dispatch, _triton

    if not HAS_TRITON:
        assert _triton.KERNELS == {}
        assert "triton" not in _dispatch.backends("spmm")
        return
    assert set(_triton.KERNELS) == {"spmm", "sddmm", "edge_softmax", "edge_softmax_backward", "scatter_winners",
                                    "pick_winners", "spmm_mul_backward", "div_edge_grad"}
    assert _dispatch.backend_status()["triton"] == "loaded"
    for op in ("spmm", "sddmm", "edge_softmax", "edge_softmax_backward"):
        assert _dispatch.backends(op)[0] == "triton"
    # the package and its backend module import without Triton (checked in a clean interpreter)
    code = ("import sys, mpgraph.ops._triton as t, mpgraph.ops._triton._backend; "
            "assert t.KERNELS and 'triton' not in sys.modules, sorted(m for m in sys.modules if 'triton' in m)")
    proc = run_python("-c", code, paths=(ROOT,), timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("op, lhs, rhs, keep_last, fits", [
    ("mul", (2, 3), (2, 3), False, True),            # same layout: one group
    ("mul", (3, 4), (3, 1), False, True),            # GAT (H, D) x (H, 1)
    ("mul", (4,), (), False, True),                  # scalar edge weight
    ("mul", (2, 1, 3), (1, 4, 1), False, False),     # three groups
    ("mul", (5, 2, 3), (1, 2, 3), False, True),      # (H, D) inner block shared: two groups
    ("dot", (2, 5), (2, 5), True, True),
    ("dot", (2, 3, 5), (2, 1, 5), True, False),      # lead dims need two groups besides D
    ("dot", (1, 3, 5), (2, 1, 5), True, False),
])
def test_supports_broadcast_groups(op, lhs, rhs, keep_last, fits):
    from mpgraph.ops._broadcast import infer_bcast
    from mpgraph.ops._triton._layout import fits_groups

    bcast = infer_bcast(op, lhs, rhs, torch.device("cpu"))
    assert fits_groups([bcast.lhs_shape, bcast.rhs_shape], bcast.out_shape, keep_last=keep_last) == fits


# ----------------------------------------------------------------------------------------------
# worker entry point: TRITON_INTERPRET=1 MPGRAPH_TRITON_ON_CPU=1 python tests/ops/test_triton_dispatch.py [names...]
# ----------------------------------------------------------------------------------------------
def _worker(names):
    from mpgraph.ops._triton import _backend

    _backend.SPLIT = SPLIT
    run_checks(CHECKS, names)


if __name__ == "__main__":
    if os.environ.get("TRITON_INTERPRET") != "1" or os.environ.get("MPGRAPH_TRITON_ON_CPU") != "1":
        sys.exit("run with TRITON_INTERPRET=1 MPGRAPH_TRITON_ON_CPU=1 (pytest does this for you)")
    _worker(sys.argv[1:] or sorted(CHECKS))
