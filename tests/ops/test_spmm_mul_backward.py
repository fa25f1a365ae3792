"""The fused ``u_mul_e`` / ``u_div_e`` sum backward (dispatch op ``spmm_mul_backward``): every backend, the op
layer's use.

Each backend's kernel is checked against a float64 formula written here, on the shared graph cases (empty
rows, multi-edges, bipartite, power-law) plus a hub with 100,000 in-edges, int32/int64 ids, every float
dtype; the op layer is checked to take the fused path exactly for the layouts it can serve and to give
the gradients of the composed path.
"""

import math

import pytest
import torch

from graph_cases import CASES
from mpgraph._index import Index
from mpgraph.ops import _dispatch, gspmm
from mpgraph.ops._checks import reversed_index
from mpgraph.ops._dispatch import record_backends, use_backend
from tolerances import assert_close

BACKENDS = ["reference", "torch", "cpu"]
DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16]
DTYPE_IDS = ["f64", "f32", "f16", "bf16"]


def _index(case, idtype):
    src, dst, n_src, n_dst = CASES[case]
    return Index.from_coo(src.to(idtype), dst.to(idtype), n_src, n_dst)


def _expected(index, G, x, w, op="mul"):
    """float64 gradients of ``out[v] = sum_{e=(u->v)} x[u] * w[e]`` (``op='div'``: ``x[u] / w[e]``) per head:
    (grad_x, grad_w)."""
    H = w.shape[1]
    D = x.shape[1] // H
    src, dst = index.src64, index.dst64
    g = G.double().reshape(-1, H, D)[dst]                                     # (E, H, D)
    xe = x.double().reshape(-1, H, D)[src]
    wd = w.double()
    factor = 1.0 / wd if op == "div" else wd
    grad_x = torch.zeros(index.num_src, H, D, dtype=torch.float64).index_add_(0, src, g * factor[:, :, None])
    dots = (g * xe).sum(-1)
    return grad_x.reshape(index.num_src, H * D), (-dots / (wd * wd) if op == "div" else dots)


def _operands(index, H, D, dtype, seed=0, op="mul"):
    """G, x, w; divisors (``op='div'``) of either sign in [0.5, 1.5) in magnitude."""
    gen = torch.Generator().manual_seed(seed)
    G = torch.randn(index.num_dst, H * D, generator=gen).to(dtype)
    x = torch.randn(index.num_src, H * D, generator=gen).to(dtype)
    w = torch.randn(index.num_edges, H, generator=gen)
    if op == "div":
        w = torch.where(w < 0, -1.0, 1.0) * (0.5 + torch.rand(w.shape, generator=gen))
    return G, x, w.to(dtype)


def _check_cpu_kernel(index, H, D, dtype, seed, op):
    """The ``cpu`` backend's fused backward on ``H`` heads of ``D`` against the float64 formula."""
    G, x, w = _operands(index, H, D, dtype, seed=seed, op=op)
    with use_backend("cpu", strict=True):
        grad_x, grad_w = _dispatch.spmm_mul_backward(reversed_index(index), G, x, w, H, op)
    ex, ew = _expected(index, G, x, w, op)
    assert_close(grad_x, ex, dtype)
    assert_close(grad_w, ew, dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", ["zero_in_degree", "multi_edge", "bipartite", "power_law"])
@pytest.mark.parametrize("H, D", [(1, 7), (3, 4), (5, 1)])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_kernel_matches_float64_formula(backend, dtype, case, H, D, op, idtype):
    index = _index(case, idtype)
    G, x, w = _operands(index, H, D, dtype, op=op)
    rev = reversed_index(index)
    copies = [t.clone() for t in (G, x, w)]
    with use_backend(backend, strict=True), record_backends() as seen:
        grad_x, grad_w = _dispatch.spmm_mul_backward(rev, G, x, w, H, op)
    assert seen == [backend]
    assert grad_x.dtype == dtype and grad_w.dtype == dtype
    assert grad_x.shape == (index.num_src, H * D) and grad_w.shape == (index.num_edges, H)
    ex, ew = _expected(index, G, x, w, op)
    assert_close(grad_x, ex, dtype)
    assert_close(grad_w, ew, dtype)
    for before, after in zip(copies, (G, x, w)):
        assert torch.equal(before, after)                                      # inputs untouched


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("D", [32, 64, 128])
@pytest.mark.parametrize("case", ["zero_in_degree", "power_law", "bipartite"])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_register_resident_rows_match_float64_formula(dtype, D, case, op, idtype):
    # one weight per edge and 32, 64 or 128 features: the Numba kernel's register-resident row variant
    index = _index(case, idtype)
    _check_cpu_kernel(index, 1, D, dtype, D, op)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("H, D", [(8, 8), (16, 8), (32, 2), (8, 4), (16, 2)])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_narrow_head_rows_match_float64_formula(dtype, H, D, op, idtype):
    # GAT's heads narrower than 16 columns on 64/128 features: the kernel's row variant with D compiled in
    index = _index("power_law", idtype)
    _check_cpu_kernel(index, H, D, dtype, H, op)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("H, D", [(4, 16), (8, 8), (4, 8), (8, 16), (2, 16), (64, 2), (32, 4)])
@pytest.mark.parametrize("case", ["zero_in_degree", "power_law", "bipartite"])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_folded_head_dots_match_float64_formula(dtype, H, D, case, op, idtype):
    # heads narrower than 32 on 32, 64 or 128 features: the register kernel folds all heads' products by adjacent
    # pairs into the dots, in vectors
    pytest.importorskip("numba")
    from mpgraph.ops._cpu import spmm_backward

    W, SEG = spmm_backward._kernel_key(H, D)
    assert (W, SEG) == (H * D, D) and 1 < SEG < spmm_backward.WIDE_HEAD
    assert not spmm_backward._slot_order(W, SEG, H, 1 << 30)  # weights read in place at their edge ids
    index = _index(case, idtype)
    _check_cpu_kernel(index, H, D, dtype, 3 * H + D, op)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("F", [32, 64, 128])
@pytest.mark.parametrize("case", ["zero_in_degree", "power_law", "bipartite"])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_elementwise_register_rows_match_float64_formula(dtype, F, case, op, idtype):
    # elementwise weights (E, F) of 32, 64 or 128 columns: the register kernel of F heads of one column (no dots)
    pytest.importorskip("numba")
    from mpgraph.ops._cpu import spmm_backward

    assert spmm_backward._kernel_key(F, 1) == (F, 1)
    assert not spmm_backward._slot_order(F, 1, F, 1 << 30)  # weight rows read and written in place
    index = _index(case, idtype)
    _check_cpu_kernel(index, F, 1, dtype, F + 7, op)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("H, D", [(2, 32), (4, 32), (2, 64)])
@pytest.mark.parametrize("case", ["zero_in_degree", "power_law", "bipartite"])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_wide_head_rows_match_float64_formula(dtype, H, D, case, op, idtype):
    # heads of 32 or 64 columns on 64/128 features: the register kernel with each head's dot in its loop
    pytest.importorskip("numba")
    from mpgraph.ops._cpu import spmm_backward

    W, SEG = spmm_backward._kernel_key(H, D)
    assert (W, SEG) == (H * D, D) and SEG >= spmm_backward.WIDE_HEAD
    index = _index(case, idtype)
    _check_cpu_kernel(index, H, D, dtype, H + D, op)


def test_kernel_keys_pick_the_register_rows_for_one_head_and_narrow_heads():
    # one weight per edge is the register kernel's single-head case; narrow heads its multi-head case; the
    # rest the general loop. A key whose head width does not divide the row is refused
    pytest.importorskip("numba")
    from mpgraph.ops._cpu import spmm_backward

    assert spmm_backward._kernel_key(1, 64) == (64, 64)
    assert spmm_backward._kernel_key(1, 128) == (128, 128)
    assert spmm_backward._kernel_key(8, 8) == (64, 8)
    assert spmm_backward._kernel_key(16, 8) == (128, 8)
    assert spmm_backward._kernel_key(2, 32) == (64, 32)        # wide heads: dots in the loop
    assert spmm_backward._kernel_key(2, 64) == (128, 64)
    assert spmm_backward._kernel_key(4, 32) == (128, 32)
    assert spmm_backward._kernel_key(4, 16) == (64, 16)        # heads of 16: folded dots
    assert spmm_backward._kernel_key(8, 16) == (128, 16)
    assert spmm_backward._kernel_key(1, 32) == (32, 32)        # 32 features
    assert spmm_backward._kernel_key(4, 8) == (32, 8)
    assert spmm_backward._kernel_key(8, 4) == (32, 4)
    assert spmm_backward._kernel_key(2, 16) == (32, 16)
    assert spmm_backward._kernel_key(16, 3) == (0, 0)          # a head width without a kernel
    # only one weight per edge beyond SLOT_ORDER_MIN_BYTES moves into slot order; several heads read in place
    assert [spmm_backward._slot_order(W, SEG, W // SEG, 1 << 30) for W, SEG in ((64, 64), (64, 8), (128, 4), (32, 2),
                                                                               (128, 32))] == [True] + [False] * 4
    assert not spmm_backward._slot_order(64, 64, 1, spmm_backward.SLOT_ORDER_MIN_BYTES - 1)
    assert spmm_backward._kernel_key(1, 256) == (0, 0)
    assert spmm_backward._kernel_key(2, 128) == (0, 0)
    assert spmm_backward._kernel_key(1, 96) == (0, 0)
    with pytest.raises(ValueError, match="SEG dividing W"):
        spmm_backward._kernel(64, 0)


def _fanout_index(idtype):
    """Source 0 with 700 out-edges (a long row of the reversed structure), sources without out-edges,
    multi-edges."""
    gen = torch.Generator().manual_seed(11)
    src = torch.cat([torch.zeros(700, dtype=torch.int64), torch.randint(1, 40, (300,), generator=gen)])
    dst = torch.randint(0, 50, (1000,), generator=gen)
    return Index.from_coo(src.to(idtype), dst.to(idtype), 60, 50)      # sources 40..59: no out-edges


def _degrees_index(idtype):
    """Source ``u`` of 0-10 with ``u`` out-edges (and 11-14 with 4-7 more each, to multi-edged destinations):
    every remainder of a row's edges taken four at a time, rows of one to three edges, and an empty row."""
    gen = torch.Generator().manual_seed(13)
    src = torch.cat([torch.full((u,), u) for u in range(11)] + [torch.full((4 + u,), 11 + u) for u in range(4)])
    dst = torch.randint(0, 9, (src.numel(),), generator=gen)
    return Index.from_coo(src.to(idtype), dst.to(idtype), 15, 9)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("H, D", [(1, 256), (2, 128), (1, 384), (3, 5), (6, 16)])
@pytest.mark.parametrize("case", ["fanout", "degrees", "power_law", "zero_in_degree"])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_general_rows_match_float64_formula(dtype, H, D, case, op, idtype):
    # shapes without a register kernel (rows wider than them, heads of odd widths): the general loop, whose
    # heads of D > 1 take a row's edges four at a time and the last one to three alone
    pytest.importorskip("numba")
    from mpgraph.ops._cpu import spmm_backward

    assert spmm_backward._kernel_key(H, D) == (0, 0)
    index = {"fanout": _fanout_index, "degrees": _degrees_index}.get(case, lambda i: _index(case, i))(idtype)
    _check_cpu_kernel(index, H, D, dtype, D + H, op)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("H, D", [(2, 8), (4, 16), (1, 64)])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_hub_with_100k_in_edges(backend, threads, H, D, op):
    E = 100_000
    src = torch.arange(E) % 997
    dst = torch.zeros(E, dtype=torch.int64)
    dst[::50] = 1                                           # a few edges elsewhere
    index = Index.from_coo(src, dst, 997, 3)                # node 2: no in-edges
    G, x, w = _operands(index, H, D, torch.bfloat16, seed=3, op=op)
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with use_backend(backend, strict=True):
            grad_x, grad_w = _dispatch.spmm_mul_backward(reversed_index(index), G, x, w, H, op)
    finally:
        torch.set_num_threads(previous)
    ex, ew = _expected(index, G, x, w, op)
    assert_close(grad_x, ex, torch.bfloat16)
    assert_close(grad_w, ew, torch.bfloat16)


def test_weights_moved_by_inverse_scatter_or_gather_agree(monkeypatch):
    """Where the weights go into slot order (one weight per edge beyond the cache), ``eid_inverse`` moves them
    by a scatter instead of a gather: same bits; a wrong length is refused."""
    pytest.importorskip("numba")
    from mpgraph.ops._cpu import spmm_backward
    from mpgraph.ops._cpu._backend import _csc, _inverse
    from mpgraph.ops._cpu.spmm_backward import mul_sum_backward

    monkeypatch.setattr(spmm_backward, "SLOT_ORDER_MIN_BYTES", 0)     # the small test weights move too
    assert spmm_backward._slot_order(*spmm_backward._kernel_key(1, 64), 1, 0)
    index = _index("power_law", torch.int64)
    indptr, src, eid = _csc(reversed_index(index))
    assert eid is not None                                  # out-edges are not in edge-id order
    G, x, w = _operands(index, 1, 64, torch.float32)
    args = (indptr, src, eid, G.reshape(-1, 1, 64), x.reshape(-1, 1, 64), w)
    gathered = mul_sum_backward(*args)
    scattered = mul_sum_backward(*args, eid_inverse=_inverse(eid))
    assert torch.equal(gathered[0], scattered[0]) and torch.equal(gathered[1], scattered[1])
    assert torch.equal(_inverse(eid)[eid], torch.arange(eid.numel()))
    with pytest.raises(ValueError, match="eid_inverse of"):
        mul_sum_backward(*args, eid_inverse=_inverse(eid)[:-1])


@pytest.mark.parametrize("H, D", [(1, 64), (8, 8), (16, 4), (4, 16), (64, 1), (4, 32), (3, 4), (1, 256), (4, 1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_weights_in_edge_order_or_slot_order_agree(monkeypatch, H, D, dtype, op):
    """Each kernel family (register rows of one or several heads, general loop, elementwise)
    gives the same bits whether it reaches the weights through the edge ids in place or takes them moved
    into slot order, and matches the float64 formula either way."""
    pytest.importorskip("numba")
    from mpgraph.ops._cpu import spmm_backward
    from mpgraph.ops._cpu._backend import _csc, _inverse

    index = _index("power_law", torch.int64)
    indptr, src, eid = _csc(reversed_index(index))
    assert eid is not None
    G, x, w = _operands(index, H, D, dtype, seed=H * D, op=op)
    args = (indptr, src, eid, G.reshape(-1, H, D), x.reshape(-1, H, D), w)
    results = {}
    for slot_order in (False, True):
        monkeypatch.setattr(spmm_backward, "_slot_order", lambda W, SEG, H, nbytes, s=slot_order: s)
        results[slot_order] = spmm_backward.mul_sum_backward(*args, divide=op == "div", eid_inverse=_inverse(eid))
    for a, b in zip(results[False], results[True]):
        assert torch.equal(a, b)
    ex, ew = _expected(index, G, x, w, op)
    assert_close(results[False][0].reshape(ex.shape), ex, dtype)
    assert_close(results[False][1], ew, dtype)


@pytest.mark.parametrize("W", [32, 64, 128])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", ["mul", "div"])
def test_elementwise_weight_gradients_streamed_or_stored_agree(W, dtype, op):
    """Elementwise weights (``W`` heads of one column) write their gradient rows with streaming stores where the
    rows fill whole lines (``nontemporal=True``; by default only gradients beyond the L3): the same bits as plain
    stores for both gradients, with and without a mean's row scale, and the float64 formula."""
    pytest.importorskip("numba")
    from mpgraph.ops._cpu import spmm_backward
    from mpgraph.ops._cpu._backend import _csc

    index = _index("power_law", torch.int64)
    indptr, src, eid = _csc(reversed_index(index))
    G, x, w = _operands(index, W, 1, dtype, seed=W, op=op)
    args = (indptr, src, eid, G.reshape(-1, W, 1), x.reshape(-1, W, 1), w)
    scale = torch.rand(index.num_dst, generator=torch.Generator().manual_seed(3)) + 0.5
    for row_scale in (scale.to(torch.float64 if dtype == torch.float64 else torch.float32), None):
        plain, streamed = (spmm_backward.mul_sum_backward(*args, divide=op == "div", row_scale=row_scale,
                                                          nontemporal=nt) for nt in (False, True))
        assert torch.equal(plain[0], streamed[0]) and torch.equal(plain[1], streamed[1])
    assert spmm_backward.streams(streamed[1], W, True) == ((W * w.element_size()) % 64 == 0)
    ex, ew = _expected(index, G, x, w, op)              # of the last pair, without a scale
    assert_close(streamed[0].reshape(ex.shape), ex, dtype)
    assert_close(streamed[1], ew, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("over", [False, True], ids=["cached", "beyond"])
def test_one_weight_per_edge_moves_to_slot_order_only_beyond_the_threshold(monkeypatch, dtype, over):
    """One weight per edge is read in place while the weights take fewer than ``SLOT_ORDER_MIN_BYTES`` and moved
    into slot order and back (two permutes) from there on; both give the float64 formula's gradients."""
    pytest.importorskip("numba")
    from mpgraph.ops._cpu import spmm_backward
    from mpgraph.ops._cpu._backend import _csc, _inverse

    itemsize = torch.empty(0, dtype=dtype).element_size()
    E = spmm_backward.SLOT_ORDER_MIN_BYTES // itemsize - (0 if over else 1)
    gen = torch.Generator().manual_seed(5)
    n = 3000
    index = Index.from_coo(torch.randint(0, n, (E,), generator=gen), torch.randint(0, n, (E,), generator=gen), n, n)
    indptr, src, eid = _csc(reversed_index(index))
    assert eid is not None
    G, x, w = _operands(index, 1, 2, dtype, seed=6)
    assert (w.numel() * w.element_size() >= spmm_backward.SLOT_ORDER_MIN_BYTES) == over
    calls = []
    permute = spmm_backward._permute
    monkeypatch.setattr(spmm_backward, "_permute", lambda *a, **k: calls.append(1) or permute(*a, **k))
    gx, gw = spmm_backward.mul_sum_backward(indptr, src, eid, G.reshape(-1, 1, 2), x.reshape(-1, 1, 2), w,
                                            eid_inverse=_inverse(eid))
    assert len(calls) == (2 if over else 0)
    ex, ew = _expected(index, G, x, w)
    assert_close(gx.reshape(ex.shape), ex, dtype)
    assert_close(gw, ew, dtype)


def test_no_edges_gives_zeros():
    index = _index("no_edges", torch.int64)
    G, x, w = _operands(index, 2, 3, torch.float32)
    grad_x, grad_w = _dispatch.spmm_mul_backward(reversed_index(index), G, x, w, 2)
    assert torch.equal(grad_x, torch.zeros(4, 6)) and grad_w.shape == (0, 2)


@pytest.fixture
def spy():
    """A top-priority ``spmm_mul_backward`` kernel that records its calls and runs the reference one."""
    from mpgraph.ops import _reference

    calls = []

    def kernel(index, grad, lhs, rhs, heads, op="mul", row_scale=None):
        calls.append(heads if op == "mul" else (heads, op))
        return _reference.spmm_mul_backward(index, grad, lhs, rhs, heads, op, row_scale)

    _dispatch.register("spmm_mul_backward", "spy", kernel, priority=1000)
    try:
        yield calls
    finally:
        _dispatch.unregister("spmm_mul_backward", "spy")


@pytest.mark.parametrize("x_shape, w_shape, heads", [
    ((4, 5), (4, 1), 4),          # GAT: (N, H, D) x (E, H, 1)
    ((6,), (), 1),                # a scalar weight per edge
    ((6,), (1,), 1),
    ((2, 3, 4), (1, 1, 1), 1),
    ((2, 3, 4), (2, 3, 1), 6),
    ((1,), (1,), 1),              # elementwise of one column: a scalar weight per edge
    ((3, 4), (3, 4), 12),         # elementwise rows of up to 16 columns on the CPU: fused
    ((40,), (40,), None),         # wider ones of other widths: the composed path
    ((64,), (64,), "div"),        # elementwise rows of 64 or 128 columns on the CPU: fused for u_div_e, and
                                  # for u_mul_e in fp32/fp64 or under a mean
    ((2, 64), (2, 64), "div"),
    ((4, 16), (4, 16), "div"),
    ((4, 5), (1, 5), None),       # weight varies along D but not H: the composed path
    ((1, 5), (4, 1), None),       # the node operand broadcasts: the composed path
])
@pytest.mark.parametrize("reduce_op", ["sum", "mean"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=["f64", "bf16"])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_op_layer_fuses_exactly_the_per_head_layouts(spy, x_shape, w_shape, heads, reduce_op, dtype, op):
    if heads == "div":
        heads = math.prod(x_shape) if op == "div" or dtype == torch.float64 or reduce_op == "mean" else None
    index = _index("power_law", torch.int32)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn((index.num_src,) + x_shape, generator=gen).to(dtype)
    w = torch.randn((index.num_edges,) + w_shape, generator=gen)
    w = (w.abs() + 0.5 if op == "div" else w).to(dtype)      # divisors away from zero
    gy = None
    grads = {}
    for path in ("fused", "composed"):
        xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
        y = gspmm(index, op, reduce_op, xr, wr)
        if gy is None:
            gy = torch.randn(y.shape, generator=gen).to(dtype)
        if path == "fused":
            y.backward(gy)
        else:   # the composed path: one operand requiring grad at a time
            gx, = torch.autograd.grad(gspmm(index, op, reduce_op, xr, w), xr, gy)
            gw, = torch.autograd.grad(gspmm(index, op, reduce_op, x, wr), wr, gy)
            xr.grad, wr.grad = gx, gw
        grads[path] = (xr.grad, wr.grad)
        if path == "fused":
            assert spy == ([heads if op == "mul" else (heads, op)] if heads is not None else [])
            spy.clear()
    assert spy == []                                        # one gradient at a time never fuses
    for fused, composed in zip(grads["fused"], grads["composed"]):
        assert fused.shape == composed.shape and fused.dtype == composed.dtype
        assert_close(fused, composed.double(), dtype)


def test_double_backward_keeps_the_differentiable_path(spy):
    index = _index("random", torch.int64)
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(20, 2, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    w = torch.randn(80, 2, 1, generator=gen, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda a, b: gspmm(index, "mul", "sum", a, b), (x, w))
    assert torch.autograd.gradcheck(lambda a, b: gspmm(index, "mul", "mean", a, b), (x, w))


@pytest.mark.parametrize("reduce_op", ["sum", "mean"])
@pytest.mark.parametrize("w_shape", [(2, 1), (1,), (2, 3)], ids=["heads", "scalar", "elementwise"])
def test_div_gradcheck_on_the_cpu_kernel(reduce_op, w_shape):
    # u_div_e's first-order gradients through the Numba kernel (float64), against finite differences
    pytest.importorskip("numba")
    index = _index("random", torch.int64)
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(20, 2, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    w = (torch.rand((80,) + w_shape, generator=gen, dtype=torch.float64) + 0.5).requires_grad_()
    with use_backend("cpu", strict=True), record_backends() as seen:
        assert torch.autograd.gradcheck(lambda a, b: gspmm(index, "div", reduce_op, a, b), (x, w))
    assert set(seen) == {"cpu"}


def _row_scale(index, dtype, seed):
    """A factor per ``G`` row in the accumulator dtype of ``dtype``, in [0.01, 1]: a mean's ``1 / deg`` spans it."""
    acc = torch.float64 if dtype == torch.float64 else torch.float32
    gen = torch.Generator().manual_seed(seed)
    return (0.01 + 0.99 * torch.rand(index.num_dst, generator=gen, dtype=torch.float64)).to(acc)


def _check_row_scale(backend, index, H, D, dtype, op, seed):
    G, x, w = _operands(index, H, D, dtype, seed=seed, op=op)
    scale = _row_scale(index, dtype, seed)
    copies = [t.clone() for t in (G, x, w, scale)]
    with use_backend(backend, strict=True), record_backends() as seen:
        grad_x, grad_w = _dispatch.spmm_mul_backward(reversed_index(index), G, x, w, H, op, row_scale=scale)
    assert seen == [backend]
    assert grad_x.dtype == dtype and grad_w.dtype == dtype
    scaled = G.double() * scale.double()[:, None]
    if backend == "torch" and dtype == torch.bfloat16:     # composed: the scaled rows are rounded to bf16 first
        scaled = (G.float() * scale[:, None]).to(dtype).double()
    ex, ew = _expected(index, scaled, x, w, op)
    assert_close(grad_x, ex, dtype)
    assert_close(grad_w, ew, dtype)
    for before, after in zip(copies, (G, x, w, scale)):
        assert torch.equal(before, after)                                      # inputs untouched


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", ["zero_in_degree", "power_law"])
@pytest.mark.parametrize("H, D", [(3, 4), (1, 64)])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_row_scale_matches_float64_formula(backend, dtype, case, H, D, op, idtype):
    # a mean's 1 / in-degree applied to each gradient row inside the pass: every backend (the composed ones
    # scale first; float16 on float32 copies)
    _check_row_scale(backend, _index(case, idtype), H, D, dtype, op, seed=H + D)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("H, D", [(5, 1), (4, 16), (16, 8), (2, 64), (64, 1), (1, 256), (1, 128)])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_row_scale_in_every_cpu_kernel_family(dtype, H, D, op):
    # general loop (elementwise), folded heads, narrow heads in slot order, a wide head's in-loop dots,
    # elementwise register rows, the general loop's wide rows, one weight per edge
    pytest.importorskip("numba")
    _check_row_scale("cpu", _fanout_index(torch.int64) if D == 256 else _index("power_law", torch.int64), H, D,
                     dtype, op, seed=7 * H + D)


def test_row_scale_is_checked():
    pytest.importorskip("numba")
    from mpgraph.ops._cpu._backend import _csc
    from mpgraph.ops._cpu.spmm_backward import mul_sum_backward

    index = _index("power_law", torch.int64)
    indptr, src, eid = _csc(reversed_index(index))
    G, x, w = _operands(index, 1, 4, torch.bfloat16)
    args = (indptr, src, eid, G.reshape(-1, 1, 4), x.reshape(-1, 1, 4), w)
    with pytest.raises(TypeError, match="row_scale as a CPU torch.float32 tensor"):
        mul_sum_backward(*args, row_scale=torch.ones(index.num_dst, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=rf"row_scale of shape \({index.num_dst},\)"):
        mul_sum_backward(*args, row_scale=torch.ones(index.num_dst + 1))


@pytest.mark.parametrize("w_shape", [(1,), (4, 1), (4, 8)], ids=["scalar", "heads", "elementwise"])
@pytest.mark.parametrize("op", ["mul", "div"])
def test_float16_mean_takes_the_fused_kernel_on_a_100k_hub(spy, w_shape, op):
    # float16 means used to scale G into a float32 copy and take the composed kernels (elementwise weights
    # of any width too, promoted to float32); the fused pass scales in its float32 accumulator: no copy,
    # and 1 / 100,000 underflows nothing
    E = 100_000
    src = torch.arange(E) % 997
    dst = torch.zeros(E, dtype=torch.int64)
    dst[::50] = 1
    index = Index.from_coo(src, dst, 997, 3)
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(997, 4, 8, generator=gen).half()
    w = (torch.rand((E,) + w_shape, generator=gen) + 0.5).half()
    gy = torch.randn(3, 4, 8, generator=gen).half()
    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    gspmm(index, op, "mean", xr, wr).backward(gy)
    heads = math.prod(w_shape)
    assert spy == [(heads if op == "mul" else (heads, op))]
    xd, wd = x.double().requires_grad_(), w.double().requires_grad_()
    with use_backend("reference", strict=True):
        gspmm(index, op, "mean", xd, wd).backward(gy.double())
    assert_close(xr.grad, xd.grad, torch.float16)
    assert_close(wr.grad, wd.grad, torch.float16)
