"""The raw Numba CPU kernels (mpgraph.ops._cpu) against float64 plain-torch formulas.

Each kernel compiles once per (operator, dtypes) and is cached on disk by Numba,
so the dtype x operator sweep below is kept to the combinations that exercise
distinct code: every operator and reduction in float32, the load/store paths of
the other formats with a representative subset.
"""

import math
import os

import pytest
import torch

pytest.importorskip("numba")

from graph_cases import CASES  # noqa: E402
from tolerances import assert_close  # noqa: E402

from mpgraph._index import Index  # noqa: E402
from mpgraph.ops import _cpu as K  # noqa: E402
from mpgraph.ops._cpu._layout import RHS_BLOCK, SAME  # noqa: E402

F64, F32, F16, BF16 = torch.float64, torch.float32, torch.float16, torch.bfloat16
DTYPES = [F64, F32, F16, BF16]
DTYPE_IDS = ["f64", "f32", "f16", "bf16"]
#: the product backward's op with a slot dtype (max_in 200: uint8 slots, 300: int16). The slot dtype only
#: changes the slot loads, and each (op, slot dtype) case compiles its forward and two or three backward
#: kernels (seconds each, most of CI's time), so each op takes one slot dtype instead of both: every
#: dtype, width and column layout still meets both slot dtypes and both ops
OP_SLOTS = [("mul", 200), ("div", 300)]
OP_SLOT_IDS = ["mul-u8", "div-i16"]
BINARY = ("add", "sub", "mul", "div")

# (lhs feature shape, rhs feature shape) per kernel layout: SAME, RHS_BLOCK (GAT heads, per-edge
# scalar as (1,) and ()), LHS_BLOCK, GENERAL (offset tables)
BCAST = [((3,), (3,)), ((2, 3), (2, 1)), ((4,), (1,)), ((4,), ()), ((2, 1), (2, 3)), ((2, 3), (3,)), ((1, 3), (2, 1))]


# ----------------------------------------------------------------------------- helpers


def csc(case, shuffle=False):
    """``(src, dst, n_src, n_dst, (indptr, indices, eid))`` of a named case; edge ids in COO order."""
    src, dst, n_src, n_dst = CASES[case]
    if shuffle and src.numel() > 1:
        perm = torch.randperm(src.numel(), generator=torch.Generator().manual_seed(7))
        src, dst = src[perm], dst[perm]
    return src, dst, n_src, n_dst, Index.from_coo(src, dst, n_src, n_dst).csc()


def random_hub_graph(N, E, empty, hub, seed):
    """``(src, dst, csc)`` of ``E`` random edges on ``N`` nodes: the last ``empty`` rows without edges, the
    first ``hub`` edges into node 3 (a hub)."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, N, (E,), generator=gen)
    dst = torch.randint(0, N - empty, (E,), generator=gen)
    dst[:hub] = 3
    return src, dst, Index.from_coo(src, dst, N, N).csc()


def rand(shape, dtype, seed, positive=False):
    """float64 values already rounded to ``dtype`` (the oracle sees the kernel's inputs)."""
    x = torch.rand(shape, generator=torch.Generator().manual_seed(seed), dtype=F64)
    x = x + 0.5 if positive else 2 * x - 1
    return x.to(dtype).to(F64)


def pad(a, b):
    """Insert leading 1s after the row dim so feature shapes broadcast like numpy."""
    nd = max(a.dim(), b.dim())
    return (a.reshape(a.shape[:1] + (1,) * (nd - a.dim()) + a.shape[1:]),
            b.reshape(b.shape[:1] + (1,) * (nd - b.dim()) + b.shape[1:]))


def messages(op, src, lhs, rhs):
    if op == "copy_lhs":
        return lhs[src]
    if op == "copy_rhs":
        return rhs
    a, b = pad(lhs[src], rhs)
    return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op]


def ref_spmm(op, reduce, src, dst, n_dst, lhs, rhs):
    """float64 scatter formula of gSpMM over in-edges."""
    msg = messages(op, src, lhs, rhs)
    feat = msg.shape[1:]
    flat = msg.reshape(msg.shape[0], math.prod(feat))
    deg = torch.bincount(dst, minlength=n_dst).to(F64)
    if reduce in ("sum", "mean"):
        out = torch.zeros(n_dst, flat.shape[1], dtype=F64).index_add_(0, dst, flat)
        if reduce == "mean":
            out = out / deg.clamp(min=1)[:, None]
    else:
        fill = -math.inf if reduce == "max" else math.inf
        out = torch.full((n_dst, flat.shape[1]), fill, dtype=F64)
        out.scatter_reduce_(0, dst[:, None].expand_as(flat), flat, "amax" if reduce == "max" else "amin")
        out[deg == 0] = 0
    return out.reshape((n_dst,) + feat)


def check_args(op, reduce, src, dst, out, arg_l, arg_r, lhs, rhs, dtype):
    """max/min ids: -1 exactly on empty rows, else they name an edge whose message is the result."""
    n_dst = out.shape[0]
    if n_dst == 0:
        return
    deg = torch.bincount(dst, minlength=n_dst)
    empty = (deg == 0).reshape((n_dst,) + (1,) * (out.dim() - 1)).expand(out.shape)
    for arg in (arg_l, arg_r):
        if arg is not None:
            assert arg.dtype == torch.int32 and arg.shape == out.shape   # ids fit: the kernels write int32
            assert bool((arg[empty] == -1).all()) and bool((arg[~empty] >= 0).all())
    assert (arg_l is None) == (op == "copy_rhs") and (arg_r is None) == (op == "copy_lhs")
    if src.numel() == 0:
        return
    if op == "copy_lhs":
        feat = lhs.reshape(lhs.shape[0], math.prod(lhs.shape[1:]))
        j = torch.arange(feat.shape[1]).expand(n_dst, -1)
        picked = feat[arg_l.reshape(n_dst, -1).clamp(min=0), j]
    else:
        msg = messages(op, src, lhs, rhs)
        msg = msg.reshape(src.numel(), math.prod(msg.shape[1:]))
        j = torch.arange(msg.shape[1]).expand(n_dst, -1)
        e = arg_r.reshape(n_dst, -1).clamp(min=0)
        picked = msg[e, j]
        if op != "copy_rhs":
            assert bool((src[e] == arg_l.reshape(n_dst, -1).clamp(min=0))[~empty.reshape(n_dst, -1)].all())
    picked = torch.where(empty.reshape(n_dst, -1), 0.0, picked)
    assert_close(out.reshape(n_dst, -1), picked, dtype)


def run_spmm(case, op, reduce, lshape, rshape, dtype, shuffle=False, seed=0, **kw):
    src, dst, n_src, n_dst, (indptr, indices, eid) = csc(case, shuffle)
    lhs = None if op == "copy_rhs" else rand((n_src,) + lshape, dtype, seed)
    rhs = None if op == "copy_lhs" else rand((src.numel(),) + rshape, dtype, seed + 1, positive=op == "div")
    out, arg_l, arg_r = K.gspmm(op, reduce, indptr, indices, eid, None if lhs is None else lhs.to(dtype),
                                None if rhs is None else rhs.to(dtype), **kw)
    expected = ref_spmm(op, reduce, src, dst, n_dst, lhs, rhs)
    assert out.dtype == dtype and out.shape == expected.shape, (case, op, reduce, out.shape, expected.shape)
    assert_close(out, expected, dtype)
    if reduce in ("max", "min"):
        check_args(op, reduce, src, dst, out, arg_l, arg_r, lhs, rhs, dtype)
    else:
        assert arg_l is None and arg_r is None
    return out


# ----------------------------------------------------------------------------- gSpMM


def test_available():
    assert K.available() is True
    assert K.unavailable_reason() is None


# every operator in float32; each broadcast layout with ``mul``; the other formats' load/store paths
# through a subset (each (op, reduce, layout, dtype) is one compilation)
SUM_SWEEP = {
    F32: [("copy_lhs", [((3,), (3,))]), ("copy_rhs", [((3,), (3,))]), ("add", BCAST[:1]), ("sub", BCAST[1:2]),
          ("div", BCAST[2:4]), ("mul", BCAST)],
    BF16: [("copy_lhs", [((3,), (3,))]), ("copy_rhs", [((3,), (3,))]), ("mul", BCAST), ("sub", BCAST[:1])],
    F16: [("copy_lhs", [((3,), (3,))]), ("mul", BCAST[:4])],
    F64: [("copy_lhs", [((3,), (3,))]), ("mul", BCAST[:4])],
}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_spmm_sum_ops(dtype):
    for op, shapes in SUM_SWEEP[dtype]:
        for lshape, rshape in shapes:
            for case in CASES:
                run_spmm(case, op, "sum", lshape, rshape, dtype, shuffle=case == "random")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_spmm_reduce(dtype):
    combos = [("copy_lhs", "mean"), ("copy_lhs", "max")]
    if dtype in (F32, BF16):
        combos += [("mul", "max"), ("copy_lhs", "min"), ("copy_rhs", "min"), ("div", "min")]
    for op, reduce in combos:
        if op == "mul":
            shapes = [((3,), (3,)), ((2, 3), (2, 1)), ((4,), ())]
        elif op == "div":
            shapes = [((2, 1), (2, 3)), ((1, 3), (2, 1))]  # the two slower layouts
        else:
            shapes = [((2, 3), (2, 3))]
        for lshape, rshape in shapes:
            for case in CASES:
                run_spmm(case, op, reduce, lshape, rshape, dtype, shuffle=case == "power_law")


def test_spmm_extremes_without_args():
    """need_arg=False: the same values, no winner ids (every layout)."""
    cases = [(F32, "copy_lhs", "max", (70,), None), (F32, "mul", "min", (2, 3), (2, 1)),
             (F32, "div", "max", (1, 3), (2, 1)), (F32, "sub", "min", (2, 1), (2, 3)),
             (BF16, "copy_lhs", "max", (150,), None)]
    for dtype, op, reduce, lshape, rshape in cases:
        src, dst, n_src, n_dst, (indptr, indices, eid) = csc("power_law", shuffle=True)
        lhs = rand((n_src,) + lshape, dtype, 0).to(dtype)
        rhs = None if rshape is None else rand((src.numel(),) + rshape, dtype, 1, positive=True).to(dtype)
        full = K.gspmm(op, reduce, indptr, indices, eid, lhs, rhs)
        bare = K.gspmm(op, reduce, indptr, indices, eid, lhs, rhs, need_arg=False)
        assert bare[1] is None and bare[2] is None
        assert torch.equal(full[0], bare[0]), (op, reduce)


def test_spmm_wide_rows():
    """Features wider than one register block (64/128 columns), with a tail; heads of 70 columns."""
    for dtype in (F32, BF16):
        run_spmm("power_law", "copy_lhs", "sum", (200,), None, dtype)
        run_spmm("power_law", "copy_lhs", "max", (150,), None, dtype)
        run_spmm("power_law", "mul", "sum", (3, 70), (3, 1), dtype)
        run_spmm("power_law", "mul", "mean", (150,), (), dtype)


#: (op, reduce, rhs feature shape with ``W`` for the pass width) per dtype, from kernels the tests above compile
ONE_PASS_ROWS = {
    F32: [("copy_lhs", "sum", None), ("copy_lhs", "mean", None), ("copy_lhs", "max", None), ("mul", "sum", (1,)),
          ("add", "sum", "W"), ("copy_rhs", "sum", "W")],
    BF16: [("copy_lhs", "sum", None), ("copy_lhs", "mean", None), ("copy_lhs", "max", None), ("mul", "sum", (1,)),
           ("sub", "sum", "W"), ("copy_rhs", "sum", "W")],
    F16: [("copy_lhs", "sum", None), ("copy_lhs", "mean", None), ("mul", "sum", ())],
    F64: [("copy_lhs", "sum", None), ("copy_lhs", "mean", None), ("mul", "sum", (1,))],
}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_spmm_rows_of_one_pass_take_whole_chunks(dtype):
    """When one value pass covers a row (64 columns in fp32 and fp64, and 128 in fp32 on AVX-512; 128 or 64 in 16-bit),
    the row driver hands the pass whole chunks of rows, empty ones included, instead of one row at a time. The same
    pass computes the first ``W`` columns of rows twice as wide a row at a time: the two must agree bit for bit (and
    match the float64 formula), on a graph with a hub, rows without edges and edge ids out of slot order; so must
    the row walk (``whole_rows=False``)."""
    gen = torch.Generator().manual_seed(5)
    N, E = 400, 6000
    src = torch.randint(0, N, (E,), generator=gen)
    dst = torch.randint(0, N - 20, (E,), generator=gen)        # the last 20 rows have no edges
    dst[:700] = 3                                                # a hub
    dst[700:705] = N - 10                                        # one row among them that has a few
    indptr, indices, eid = Index.from_coo(src, dst, N, N).csc()
    assert not torch.equal(eid, torch.arange(E))
    from mpgraph.ops._cpu import spmm as S

    # float32 rows of 128 columns take the 128-column pass where the kernels compile for AVX-512 (BLOCK_32)
    for W in ((128, 64) if dtype in (F16, BF16) else tuple(dict.fromkeys((S.BLOCK_32, 64)))):
        for op, reduce, rshape in ONE_PASS_ROWS[dtype]:
            lhs = None if op == "copy_rhs" else rand((N, 2 * W), dtype, 1)
            if op == "copy_lhs":
                rhs = None
            elif rshape == "W":
                rhs = rand((E, 2 * W), dtype, 2, positive=True)
            else:
                rhs = rand((E,) + rshape, dtype, 2, positive=True)
            wide = K.gspmm(op, reduce, indptr, indices, eid, None if lhs is None else lhs.to(dtype),
                           None if rhs is None else rhs.to(dtype), need_arg=False)[0]
            lhs_w = None if lhs is None else lhs[:, :W]
            rhs_w = rhs[:, :W] if rshape == "W" else rhs
            one, walk = (K.gspmm(op, reduce, indptr, indices, eid, None if lhs_w is None else lhs_w.to(dtype),
                                 None if rhs_w is None else rhs_w.to(dtype), need_arg=False, whole_rows=whole)[0]
                         for whole in (True, False))
            assert one.shape == (N, W) and torch.equal(one, wide[:, :W]), (W, op, reduce, rshape)
            assert torch.equal(one, walk), (W, op, reduce, rshape)
            assert_close(one, ref_spmm(op, reduce, src, dst, N, lhs_w, rhs_w), dtype)
            assert not one[N - 20:N - 10].any() and one[N - 10].any(), (op, reduce)
    if dtype == F32:
        assert S.takes_whole_rows(S.SAME, False, 128, 128, 128, dtype) == (128 if S.BLOCK_32 == 128 else 0)
        assert S.BLOCK_32 == (128 if S.target_vector_registers() >= 32 else 64)
    if dtype in (F16, BF16):
        assert S.takes_whole_rows(S.SAME, False, 64, 64, 64, dtype) == 64
        assert S.takes_whole_rows(S.RHS_BLOCK, False, 1, 64, 64, dtype) == 64
        assert S.takes_whole_rows(S.SAME, True, 64, 64, 64, dtype) == 0             # winners


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_spmm_rows_of_one_column_take_whole_chunks(dtype):
    """Rows of one column (one value per edge or node: GAT's attention sums of one head) go to the one-column
    pass a chunk of rows at a time, with its accumulator in a register; the row walk (``whole_rows=False``)
    sums them in the runtime-width pass. Both must agree bit for bit, and match the float64 formula, for
    copies, products and quotients with the edge operand as ``(E, 1)`` and ``(E,)``, each reduction without
    winners, on a graph with a hub, rows without edges and edge ids out of slot order."""
    N, E = 300, 4000
    src, dst, (indptr, indices, eid) = random_hub_graph(N, E, empty=20, hub=500, seed=6)
    assert not torch.equal(eid, torch.arange(E))
    # each case compiles two kernels (whole and walked), so the ops and reductions take turns
    cases = [("copy_rhs", None, (1,), "sum"), ("mul", (1,), (), "mean"), ("copy_lhs", (1,), None, "max"),
             ("div", (1,), (1,), "min")] + ([("add", (1,), (1,), "sum")] if dtype == F32 else [])
    for op, lshape, rshape, reduce in cases:
        lhs = None if lshape is None else rand((N,) + lshape, dtype, 1)
        rhs = None if rshape is None else rand((E,) + rshape, dtype, 2, positive=True)
        runs = [K.gspmm(op, reduce, indptr, indices, eid, None if lhs is None else lhs.to(dtype),
                        None if rhs is None else rhs.to(dtype), need_arg=False, whole_rows=whole)[0]
                for whole in (True, False)]
        assert runs[0].shape == (N, 1) and torch.equal(runs[0], runs[1]), (op, reduce, rshape)
        assert_close(runs[0], ref_spmm(op, reduce, src, dst, N, lhs, rhs), dtype)


@pytest.mark.parametrize("dtype", [F32, BF16], ids=["f32", "bf16"])
def test_spmm_column_slabs_equal_the_row_walk(monkeypatch, dtype):
    """Rows of several full-width passes (:func:`spmm.slab_width`: 64 columns in float32, 128 in bfloat16) are
    copied into contiguous column slabs and gathered a slab at a time over all chunks of rows. With the L3 size
    set so that a small graph takes them, each reduction without winners, for ``copy_u`` and (float32)
    ``u_mul_e`` with ``(E, 1)`` and ``(E,)`` weights, two to four slabs and a non-contiguous ``lhs``, must equal
    the row walk (``whole_rows=False``) bit for bit and match the float64 formula, on a graph with a hub, rows
    without edges and edge ids out of slot order; ``lhs`` is unchanged."""
    from mpgraph.ops._cpu import spmm as S
    N, E = 40, 2000
    src, dst, (indptr, indices, eid) = random_hub_graph(N, E, empty=5, hub=300, seed=11)
    W = 64 if dtype == F32 else 128
    # a slab (10 KB) fits (in bf16, half of it), whole float32 rows (20-40 KB) do not
    monkeypatch.setattr(S, "L3_BYTES", 20_000 if dtype == F32 else 25_000)
    cases = [(2, "copy_lhs", None, "sum"), (3, "copy_lhs", None, "mean"), (4, "copy_lhs", None, "max"),
             (2, "copy_lhs", None, "min")]
    if dtype == F32:                               # bfloat16 products take the row walk
        cases += [(3, "mul", (1,), "mean"), (4, "mul", (), "sum"), (2, "mul", (1,), "min")]
    for k, op, rshape, reduce in cases:
        D = k * W
        lhs = rand((N, 2 * D), dtype, 1).to(dtype)[:, ::2]       # every other column: not contiguous
        assert not lhs.is_contiguous()
        rhs = None if rshape is None else rand((E,) + rshape, dtype, 2, positive=True).to(dtype)
        layout = S.SAME if rhs is None else S.RHS_BLOCK
        assert S.slab_width(op, layout, False, 1, D, N, E, [dtype]) == W, (D, op)
        before = lhs.clone()
        runs = [S.gspmm(op, reduce, indptr, indices, eid, lhs, rhs, need_arg=False, whole_rows=whole)[0]
                for whole in (True, False)]
        assert torch.equal(runs[0], runs[1]), (D, op, reduce)
        assert torch.equal(lhs, before)
        assert_close(runs[0], ref_spmm(op, reduce, src, dst, N, lhs.to(F64), None if rhs is None else rhs.to(F64)),
                     dtype)
        assert not runs[0][N - 5:].any()


def test_slab_width_policy(monkeypatch):
    """Slabs only where they were measured to pay: float32, and bfloat16 copies, rows of whole slabs, no winners, enough
    edges per source row, a slab within the L3 (half of it in bfloat16) and, in float32 with fewer than four
    slabs, whole rows beyond it."""
    from mpgraph.ops._cpu import spmm as S
    monkeypatch.setattr(S, "L3_BYTES", 32 << 20)
    n, e = 100_000, 2_000_000
    assert S.slab_width("copy_lhs", S.SAME, False, 0, 256, n, e, [F32]) == 64
    assert S.slab_width("copy_lhs", S.SAME, False, 0, 128, n, e, [F32]) == 64      # 51 MB rows, 26 MB slabs
    assert S.slab_width("copy_lhs", S.SAME, False, 0, 128, 30_000, e, [F32]) == 0  # 15 MB rows fit the L3
    assert S.slab_width("copy_lhs", S.SAME, False, 0, 256, 30_000, e, [F32]) == 64
    assert S.slab_width("copy_lhs", S.SAME, False, 0, 256, 200_000, e, [F32]) == 0  # a 51 MB slab
    assert S.slab_width("copy_lhs", S.SAME, False, 0, 256, 30_000, e, [BF16]) == 128
    assert S.slab_width("mul", S.RHS_BLOCK, False, 1, 256, 30_000, e, [BF16]) == 0
    assert S.slab_width("copy_lhs", S.SAME, False, 0, 256, n, e, [BF16]) == 0       # a 26 MB slab
    assert S.slab_width("copy_lhs", S.SAME, False, 0, 128, 30_000, e, [BF16]) == 0  # one slab
    assert S.slab_width("copy_lhs", S.SAME, False, 0, 256, 30_000, e, [F16]) == 0
    assert S.slab_width("copy_lhs", S.SAME, False, 0, 256, 30_000, e, [F64]) == 0
    assert S.slab_width("mul", S.RHS_BLOCK, False, 1, 256, n, e, [F32, BF16]) == 0
    assert S.slab_width("copy_lhs", S.SAME, True, 0, 256, n, e, [F32]) == 0         # winners
    assert S.slab_width("copy_lhs", S.SAME, False, 0, 200, n, e, [F32]) == 0        # not whole slabs
    assert S.slab_width("copy_lhs", S.SAME, False, 0, 256, n, 7 * n, [F32]) == 0    # too few edges a row
    assert S.slab_width("mul", S.SAME, False, 256, 256, n, e, [F32]) == 0           # an (E, D) operand
    assert S.slab_width("mul", S.RHS_BLOCK, False, 4, 256, n, e, [F32]) == 0        # heads
    assert S.slab_width("copy_lhs", S.SAME, False, 0, 256, 0, 0, [F32]) == 0


@pytest.mark.parametrize("dtype", [F32, BF16, F16], ids=["f32", "bf16", "f16"])
def test_spmm_padded_rows_equal_the_row_walk(monkeypatch, dtype):
    """Rows of 33 to 63 columns (:func:`spmm.pad_width`) are copied into rows of 64 columns (zeros after the
    last), gathered by the 64-column pass into padded rows, and their columns copied out. Each reduction without
    winners, for ``copy_u`` and ``u_mul_e`` with ``(E, 1)``, ``(E,)`` and ``(E, 1, 1)`` weights (the last GAT's
    one head) and a non-contiguous ``lhs`` must equal the row walk (``whole_rows=False``) bit for bit and match
    the float64 formula, on a graph with a hub, rows without edges and edge ids out of slot order; ``lhs`` and
    the weights are unchanged. Through the public op, on int32 and int64 graphs, the forward and the gradient (a
    padded gather over the out-edges) match float64."""
    from mpgraph.ops._cpu import spmm as S
    monkeypatch.setattr(S, "PAD_MIN_EDGES", 0)          # a small graph takes them
    N, E = 40, 3000                                       # 75 edges per source row
    src, dst, (indptr, indices, eid) = random_hub_graph(N, E, empty=5, hub=300, seed=12)
    copies = []
    real_copy = S._copy_rows
    monkeypatch.setattr(S, "_copy_rows", lambda *a: copies.append(a[0].shape) or real_copy(*a))
    cases = [(33, "copy_lhs", None, "sum"), (41, "copy_lhs", None, "mean"), (63, "copy_lhs", None, "max"),
             (47, "copy_lhs", None, "min"), (41, "mul", (1,), "sum"), (33, "mul", (), "mean"),
             (50, "mul", (1,), "max"), (41, "mul", (1, 1), "sum")]
    for D, op, rshape, reduce in cases:
        shape = (N, 2 * D) if rshape != (1, 1) else (N, 1, 2 * D)
        lhs = rand(shape, dtype, 1).to(dtype)[..., ::2]      # every other column: not contiguous
        rhs = None if rshape is None else rand((E,) + rshape, dtype, 2, positive=True).to(dtype)
        layout = S.SAME if rhs is None else S.RHS_BLOCK
        assert S.pad_width(op, layout, False, 1, D, N, E, [dtype]) == 64, (D, op)
        before = (lhs.clone(), None if rhs is None else rhs.clone())
        copies.clear()
        runs = [S.gspmm(op, reduce, indptr, indices, eid, lhs, rhs, need_arg=False, whole_rows=whole)[0]
                for whole in (True, False)]
        assert copies == [(N, D), (N, 64)], copies         # padded in, padded result out: the path was taken
        assert runs[0].shape == (N,) + tuple(lhs.shape[1:]), (D, op, runs[0].shape)
        assert torch.equal(runs[0], runs[1]), (D, op, reduce)
        assert torch.equal(lhs, before[0]) and (rhs is None or torch.equal(rhs, before[1]))
        ref = ref_spmm(op, reduce, src, dst, N, lhs.to(F64).reshape(N, D),
                       None if rhs is None else rhs.to(F64).reshape(E, 1))
        assert_close(runs[0].reshape(N, D), ref, dtype)
        assert not runs[0][N - 5:].any()
    import mpgraph
    from mpgraph.ops import copy_u_sum
    x64 = rand((N, 41), dtype, 3)
    ref = ref_spmm("copy_lhs", "sum", src, dst, N, x64, None)
    grad_ref = ref_spmm("copy_lhs", "sum", dst, src, N, torch.ones(N, 41, dtype=F64), None)
    for idtype in (torch.int32, torch.int64):
        g = mpgraph.graph((src, dst), num_nodes=N, idtype=idtype)
        x = x64.to(dtype).requires_grad_()
        copies.clear()
        y = copy_u_sum(g, x)
        y.float().sum().backward()
        assert len(copies) == 4, copies                   # the forward and the gradient both padded
        assert_close(y, ref, dtype)
        assert_close(x.grad, grad_ref, dtype)


def test_pad_width_policy():
    """Padded rows only where they were measured to pay: 33 to 63 columns, float32/bfloat16/float16 copies or
    products with one weight per edge, no winners, at least ``PAD_MIN_DEGREE`` edges per source row and
    ``PAD_MIN_EDGES`` edges."""
    from mpgraph.ops._cpu import spmm as S
    n, e = 2330, 1_142_346                                    # the guide's GCN graph
    assert S.PAD_MIN_DEGREE == 64
    for dtype in (F32, BF16, F16):
        assert S.pad_width("copy_lhs", S.SAME, False, 0, 41, n, e, [dtype]) == 64
        assert S.pad_width("mul", S.RHS_BLOCK, False, 1, 41, n, e, [dtype, dtype]) == 64
    assert S.pad_width("copy_lhs", S.SAME, False, 0, 33, n, e, [F32]) == 64
    assert S.pad_width("copy_lhs", S.SAME, False, 0, 63, n, e, [F32]) == 64
    assert S.pad_width("copy_lhs", S.SAME, False, 0, 32, n, e, [F32]) == 0        # the walk is fast there
    assert S.pad_width("copy_lhs", S.SAME, False, 0, 64, n, e, [F32]) == 0        # a whole pass already
    assert S.pad_width("copy_lhs", S.SAME, False, 0, 100, n, e, [BF16]) == 0
    assert S.pad_width("copy_lhs", S.SAME, False, 0, 41, n, e, [F64]) == 0
    assert S.pad_width("copy_lhs", S.SAME, True, 0, 41, n, e, [F32]) == 0         # winners
    assert S.pad_width("copy_lhs", S.SAME, False, 0, 41, 50_000, 1_600_000, [F32]) == 0   # 32 edges a row
    assert S.pad_width("copy_lhs", S.SAME, False, 0, 41, 100, 6400, [F32]) == 0     # a small call
    assert S.pad_width("copy_lhs", S.SAME, False, 0, 41, 8000, 1 << 19, [F32]) == 64
    assert S.pad_width("copy_lhs", S.SAME, False, 0, 41, 8000, (1 << 19) - 1, [F32]) == 0
    assert S.pad_width("mul", S.SAME, False, 41, 41, n, e, [F32]) == 0           # an (E, D) operand
    assert S.pad_width("mul", S.RHS_BLOCK, False, 4, 41, n, e, [F32]) == 0       # heads
    assert S.pad_width("mul", S.RHS_BLOCK, False, 1, 41, n, e, [F32, BF16]) == 0  # mixed dtypes
    assert S.pad_width("copy_rhs", S.SAME, False, 41, 41, n, e, [F32]) == 0      # edge rows
    assert S.pad_width("copy_lhs", S.SAME, False, 0, 41, 0, 0, [F32]) == 0


def test_cache_size_from_sysfs(tmp_path):
    """The L3 size the slab policy plans with comes from sysfs entries like Linux's (level, type, size with a
    K/M suffix); a missing directory or no such level gives the default."""
    from mpgraph.ops._cpu import spmm as S
    for name, level, kind, size in [("index0", 1, "Data", "32K"), ("index1", 1, "Instruction", "32K"),
                                    ("index2", 2, "Unified", "512K"), ("index3", 3, "Unified", "32768K")]:
        (tmp_path / name).mkdir()
        for field, value in (("level", level), ("type", kind), ("size", size)):
            (tmp_path / name / field).write_text(f"{value}\n")
    assert S._cache_bytes(3, 1, str(tmp_path)) == 32 << 20
    assert S._cache_bytes(2, 1, str(tmp_path)) == 512 << 10
    assert S._cache_bytes(4, 7, str(tmp_path)) == 7
    assert S._cache_bytes(3, 7, str(tmp_path / "absent")) == 7


@pytest.mark.parametrize("dtype, heads, reduces", [
    (F32, (6, 16), ("sum", "max")),    # 4 heads per pass, then 2 heads a pass each (runtime width)
    (F32, (8, 8), ("mean", "min")),
    (F32, (16, 4), ("sum", "max")),
    (BF16, (6, 16), ("sum", "max")),
    (F64, (8, 8), ("sum",)),
    (F16, (2, 32), ("max",)),
], ids=["f32-6x16", "f32-8x8", "f32-16x4", "bf16-6x16", "f64-8x8", "f16-2x32"])
def test_spmm_narrow_heads_share_a_pass(dtype, heads, reduces):
    """GAT's ``(E, H, 1)`` weights against ``(N, H, D)`` with ``D`` narrower than a pass: ``64 // D`` heads per
    pass (``32 // D`` for max/min keeping winners) with ``D`` compiled in, the heads left over in passes of their
    own; values and max/min winners against float64, edge ids shuffled, and with ``eid=None``."""
    H, D = heads
    for reduce in reduces:
        run_spmm("power_law", "mul", reduce, (H, D), (H, 1), dtype, shuffle=True)
        run_spmm("zero_in_degree", "div", reduce, (H, D), (H, 1), dtype)
    src, dst, n_src, n_dst, (indptr, indices, eid) = csc("power_law", shuffle=True)
    x, w = rand((n_src, H, D), dtype, 0).to(dtype), rand((src.numel(), H, 1), dtype, 1).to(dtype)
    out = K.gspmm("mul", reduces[0], indptr, indices, eid, x, w)[0]
    assert torch.equal(out, K.gspmm("mul", reduces[0], indptr, indices, None, x, w[eid])[0])


def test_spmm_eid_none_is_identity():
    """eid=None reads rhs in slot order; the default prefetch changes nothing."""
    src, dst, n_src, n_dst, (indptr, indices, eid) = csc("power_law", shuffle=True)
    x, w = rand((n_src, 5), F32, 0).float(), rand((src.numel(), 1), F32, 1).float()
    out = K.gspmm("mul", "sum", indptr, indices, eid, x, w)[0]
    out_none = K.gspmm("mul", "sum", indptr, indices, None, x, w[eid])[0]
    out_nopf = K.gspmm("mul", "sum", indptr, indices, eid, x, w, prefetch_distance=0)[0]
    assert torch.equal(out, out_none) and torch.equal(out, out_nopf)


def test_spmm_mixed_dtypes_promote():
    src, dst, n_src, n_dst, (indptr, indices, eid) = csc("random")
    x, w = rand((n_src, 4), BF16, 0), rand((src.numel(), 1), F32, 1)
    out = K.gspmm("mul", "sum", indptr, indices, eid, x.to(BF16), w.float())[0]
    assert out.dtype == F32
    assert_close(out, ref_spmm("mul", "sum", src, dst, n_dst, x, w), F32)


def test_out_dtype():
    """Results in another dtype than the operands' (fp32 gradients of fp16 operands, ...), rounded once."""
    src, dst, n_src, n_dst, (indptr, indices, eid) = csc("power_law", shuffle=True)
    x = rand((n_src, 70), F16, 0)
    w = rand((src.numel(), 1), F16, 1)
    for in_dtype, out_dtype in ((F16, F32), (F32, BF16), (F64, F32)):
        xd, wd = x.to(in_dtype), w.to(in_dtype)
        out = K.gspmm("mul", "sum", indptr, indices, eid, xd, wd, out_dtype=out_dtype)[0]
        assert out.dtype == out_dtype
        assert_close(out, ref_spmm("mul", "sum", src, dst, n_dst, x, w), out_dtype)
        dot = K.gsddmm("dot", indptr, indices, eid, xd, xd, "u", "v", out_dtype=out_dtype)
        assert dot.dtype == out_dtype
        assert_close(dot, ref_sddmm("dot", src, dst, x, x, "u", "v"), out_dtype)
        s = K.edge_softmax_forward(indptr, eid, wd, out_dtype=out_dtype)
        assert s.dtype == out_dtype
        assert_close(s, ref_edge_softmax(dst, n_dst, w), out_dtype)


def test_spmm_csr_reverse():
    """The same kernel over out-edges (Index.csr()) reduces into sources."""
    src, dst, n_src, n_dst = CASES["bipartite"]
    indptr, indices, eid = Index.from_coo(src, dst, n_src, n_dst).csr()
    g = rand((n_dst, 3), F32, 0)
    out = K.gspmm("copy_lhs", "sum", indptr, indices, eid, g.float(), None)[0]
    assert_close(out, ref_spmm("copy_lhs", "sum", dst, src, n_src, g, None), F32)


# ----------------------------------------------------------------------------- hub node, threads, rounding


def hub_graph(n_in=100_000, n_other=3000, seed=0):
    """Node 0 has ``n_in`` in-edges (from every node); ``n_other`` random edges among the others."""
    gen = torch.Generator().manual_seed(seed)
    N = n_in
    src = torch.cat([torch.arange(N), torch.randint(0, N, (n_other,), generator=gen)])
    dst = torch.cat([torch.zeros(N, dtype=torch.int64), torch.randint(1, 50, (n_other,), generator=gen)])
    return src, dst, N, N


@pytest.mark.parametrize("threads", [1, 2])
def test_hub_fp16_sum_is_exact(threads):
    """60,000 ones into one node: an fp16 accumulator would stop at 2048; fp32 gives 60000 exactly."""
    src, dst, N, _ = hub_graph()
    indptr, indices, eid = Index.from_coo(src, dst, N, N).csc()
    x = torch.zeros(N, 130)  # two register blocks of 64 (fp32) or one of 128 (16-bit), and a tail
    x[:60_000] = 1.0
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        out16 = K.gspmm("copy_lhs", "sum", indptr, indices, eid, x.half(), None)[0]
        outb = K.gspmm("copy_lhs", "sum", indptr, indices, eid, x.bfloat16(), None)[0]
        mean16 = K.gspmm("copy_lhs", "mean", indptr, indices, eid, x.half(), None)[0]
        out32 = K.gspmm("copy_lhs", "sum", indptr, indices, eid, x, None)[0]
    finally:
        torch.set_num_threads(before)
    assert out16.dtype == F16 and out16[0].tolist() == [60000.0] * 130
    assert torch.equal(outb[0], torch.full((130,), 60000.0).bfloat16())  # rounded once from the exact sum
    assert torch.equal(mean16[0], torch.full((130,), 0.6).half())
    ref = ref_spmm("copy_lhs", "sum", src, dst, N, x.double(), None)
    assert_close(out32, ref, F32)
    assert_close(out16, ref, F16)


def test_threads_are_deterministic():
    """Each row is reduced by one thread in slot order, so thread count does not change bits."""
    src, dst, N, _ = hub_graph(n_in=20_000, n_other=200_000)
    indptr, indices, eid = Index.from_coo(src, dst, N, N).csc()
    x = rand((N, 72), F32, 3).float()
    w = rand((src.numel(),), F32, 4).float()
    before = torch.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            results.append(K.gspmm("mul", "sum", indptr, indices, eid, x, w)[0])
    finally:
        torch.set_num_threads(before)
    assert torch.equal(results[0], results[1]) and torch.equal(results[0], results[2])
    # rows of ~4,000 random terms: fp32 rounding error grows like sqrt(deg) * eps * |partial sums|
    torch.testing.assert_close(results[0].double(), ref_spmm("mul", "sum", src, dst, N, x.double(), w.double()),
                               rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("dtype", [F16, BF16], ids=["f16", "bf16"])
def test_store_rounds_to_nearest_even(dtype):
    """Sums of two 16-bit values are exact in fp32; the kernel must round them like torch (RNE, inf, NaN)."""
    gen = torch.Generator().manual_seed(11)
    a = torch.randn(4096, generator=gen) * torch.exp2(torch.randint(-6, 6, (4096,), generator=gen).float())
    b = a * torch.rand(4096, generator=gen)
    a, b = a.to(dtype), b.to(dtype)
    big = torch.finfo(dtype).max
    special = torch.tensor([[1.0, 2.0 ** -8], [1.0078125, 2.0 ** -8], [big, big], [float("nan"), 1.0],
                            [float("inf"), 1.0], [-0.0, -0.0], [1.0, -1.0]]).to(dtype)
    pairs = torch.cat([torch.stack([a, b], 1), special])
    offsets = torch.arange(0, 2 * pairs.shape[0] + 1, 2)
    out = K.segment_reduce("sum", pairs.reshape(-1, 1), offsets)[0].reshape(-1)
    expected = (pairs[:, 0].float() + pairs[:, 1].float()).to(dtype)
    same = (out.view(torch.int16) == expected.view(torch.int16)) | (torch.isnan(out) & torch.isnan(expected))
    assert bool(same.all()), (pairs[~same][:5], out[~same][:5], expected[~same][:5])


# ----------------------------------------------------------------------------- segment reductions


def ref_segment(reduce, x, offsets):
    seglen = offsets[1:] - offsets[:-1]
    dst = torch.repeat_interleave(torch.arange(seglen.numel()), seglen)
    rows = torch.arange(int(offsets[0]), int(offsets[-1])) if offsets.numel() > 1 else torch.zeros(0, dtype=torch.long)
    return ref_spmm("copy_lhs", reduce, rows, dst, seglen.numel(), x, None)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_segment_reduce(dtype):
    reduces = ("sum", "mean", "max", "min") if dtype == F32 else ("sum", "max")
    cases = [[0], [0, 3], [0, 2, 2, 5, 6], [0, 0, 0, 7, 7], [1, 3, 3, 6], list(range(8))]
    for reduce in reduces:
        for offsets in cases:
            offsets = torch.tensor(offsets, dtype=torch.int64)
            x = rand((8, 2, 3), dtype, seed=len(offsets))
            out, arg = K.segment_reduce(reduce, x.to(dtype), offsets)
            expected = ref_segment(reduce, x, offsets)
            assert out.dtype == dtype and out.shape == expected.shape
            assert_close(out, expected, dtype)
            if reduce in ("max", "min"):
                empty = (offsets[1:] == offsets[:-1]).reshape(-1, 1, 1).expand(out.shape)
                assert bool((arg[empty] == -1).all())
                picked = torch.gather(x, 0, arg.clamp(min=0))
                assert_close(torch.where(empty, 0.0, picked), expected, dtype)
            else:
                assert arg is None


# ----------------------------------------------------------------------------- gSDDMM


def ref_sddmm(op, src, dst, lhs, rhs, lt, rt):
    pick = {"u": lambda t: t[src], "v": lambda t: t[dst], "e": lambda t: t}
    a = pick[lt](lhs) if op != "copy_rhs" else None
    b = pick[rt](rhs) if op != "copy_lhs" else None
    if op == "copy_lhs":
        return a
    if op == "copy_rhs":
        return b
    a, b = pad(a, b)
    if op == "dot":
        return (a * b).sum(-1, keepdim=True)
    return {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op]


def run_sddmm(case, op, lshape, rshape, lt, rt, dtype, seed=0):
    src, dst, n_src, n_dst, (indptr, indices, eid) = csc(case, shuffle=case == "power_law")
    rows = {"u": n_src, "v": n_dst, "e": src.numel()}
    lhs = rand((rows[lt],) + lshape, dtype, seed)
    rhs = rand((rows[rt],) + rshape, dtype, seed + 1, positive=op == "div")
    out = K.gsddmm(op, indptr, indices, eid, lhs.to(dtype), rhs.to(dtype), lt, rt)
    expected = ref_sddmm(op, src, dst, lhs, rhs, lt, rt)
    assert out.dtype == dtype and out.shape == expected.shape, (case, op, out.shape, expected.shape)
    assert_close(out, expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_sddmm_dot(dtype):
    shapes = [((4, 16), (4, 16)), ((5,), (5,)), ((2, 1, 3), (1, 4, 3)), ((40,), (40,))]
    for lshape, rshape in shapes:
        for lt, rt in (("u", "v"), ("u", "e"), ("v", "u")):
            for case in CASES:
                run_sddmm(case, "dot", lshape, rshape, lt, rt, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_sddmm_dot_register_rows(dtype):
    """``dot`` of one feature shape with 32, 64 or 128 elements a row in two or more heads of a power of two takes the
    register kernel (vector loads, products folded by adjacent pairs, one vector store): against float64 and against the
    general edge body, every target pair, edge ids out of order, and with a wider ``out_dtype``."""
    from mpgraph.ops._cpu import sddmm as S

    for shape in [(8, 8), (2, 64), (4, 32), (16, 2), (2, 16), (32, 4), (2, 2, 8)]:
        src, dst, n_src, n_dst, (indptr, indices, eid) = csc("power_law", shuffle=True)
        assert S.dot_key(shape, shape, torch.zeros(1, dtype=dtype), torch.zeros(1, dtype=dtype)) is not None
        for lt, rt in (("u", "v"), ("e", "u"), ("v", "e")):
            rows = {"u": n_src, "v": n_dst, "e": src.numel()}
            lhs = rand((rows[lt],) + shape, dtype, 3)
            rhs = rand((rows[rt],) + shape, dtype, 4)
            expected = ref_sddmm("dot", src, dst, lhs, rhs, lt, rt)
            fast = K.gsddmm("dot", indptr, indices, eid, lhs.to(dtype), rhs.to(dtype), lt, rt)
            general = K.gsddmm("dot", indptr, indices, eid, lhs.to(dtype), rhs.to(dtype), lt, rt, fast_dot=False)
            assert fast.shape == expected.shape == general.shape and fast.dtype == dtype
            assert_close(fast, expected, dtype)
            assert_close(fast, general, dtype)
        wider = F64 if dtype == F32 else F32                   # accumulate and store in a wider out_dtype
        if dtype != F64:
            out = K.gsddmm("dot", indptr, indices, eid, lhs.to(dtype), rhs.to(dtype), lt, rt, out_dtype=wider)
            assert out.dtype == wider
            assert_close(out, expected, wider)
    # broadcasts, odd head widths, rows of other lengths and mixed dtypes keep the general body
    one = torch.zeros(1)
    assert S.dot_key((4, 16), (1, 16), one, one) is None
    assert S.dot_key((8, 6), (8, 6), one, one) is None
    assert S.dot_key((3, 32), (3, 32), one, one) is None
    assert S.dot_key((8, 8), (8, 8), one, one.to(BF16)) is None
    assert S.dot_key((64,), (64,), one, one) is None and S.dot_key((1, 128), (1, 128), one, one) is None  # one head


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_sddmm_streaming_rows_give_the_general_bodys_bits(dtype):
    """An elementwise op on operands of one feature shape of 16-256 elements, written with streaming stores
    (``nontemporal=True``; by default only results beyond the L3 take them): the general edge body's bits
    (inf/NaN from zero divisors included) and the float64 formula, for every target pair, edge ids out of order,
    a narrower or wider operand dtype and a wider ``out_dtype``; rows that do not fill whole lines keep the
    general body."""
    from mpgraph.ops._cpu import sddmm as S

    src, dst, n_src, n_dst, (indptr, indices, eid) = csc("power_law", shuffle=True)
    rows = {"u": n_src, "v": n_dst, "e": src.numel()}
    other = F32 if dtype != F32 else BF16
    for i, (shape, op, (lt, rt)) in enumerate(zip([(64,), (4, 8), (128,), (16,), (2, 128), (8, 4), (64,)],
                                                  ["add", "sub", "mul", "div", "mul", "div", "add"],
                                                  [("u", "v"), ("e", "u"), ("v", "e"), ("u", "e"), ("u", "v"),
                                                   ("v", "u"), ("e", "e")])):
        lhs64 = rand((rows[lt],) + shape, dtype, 5 + i)
        rhs64 = rand((rows[rt],) + shape, other if i % 2 else dtype, 6 + i)
        if op == "div":
            rhs64.view(-1)[::7] = 0.0
        lhs, rhs = lhs64.to(dtype), rhs64.to(other if i % 2 else dtype)
        general = K.gsddmm(op, indptr, indices, eid, lhs, rhs, lt, rt, nontemporal=False)
        streamed = K.gsddmm(op, indptr, indices, eid, lhs, rhs, lt, rt, nontemporal=True)
        W = math.prod(shape)
        assert S.streaming_width(op, shape, shape, SAME, streamed, None, True) == (
            W if (W * streamed.element_size()) % 64 == 0 else 0)
        assert streamed.dtype == general.dtype and torch.equal(streamed.isnan(), general.isnan())
        assert torch.equal(streamed.nan_to_num(), general.nan_to_num()), (shape, op, lt, rt)
        finite = streamed.isfinite()
        assert_close(streamed[finite], ref_sddmm(op, src, dst, lhs64, rhs64, lt, rt)[finite], streamed.dtype)
        if dtype != F64:
            wide = K.gsddmm(op, indptr, indices, eid, lhs, rhs, lt, rt, out_dtype=F64, nontemporal=True)
            assert torch.equal(wide.nan_to_num(), K.gsddmm(op, indptr, indices, eid, lhs, rhs, lt, rt, out_dtype=F64,
                                                           nontemporal=False).nan_to_num())
    # broadcasts, copies, dot and the u_div_e edge gradient keep their kernels
    out = torch.empty(4, 64)
    assert S.streaming_width("mul", (64,), (1,), RHS_BLOCK, out, None, True) == 0
    assert S.streaming_width("copy_lhs", (64,), (64,), SAME, out, None, True) == 0
    assert S.streaming_width("mul", (64,), (64,), SAME, out, out, True) == 0
    assert S.streaming_width("mul", (64,), (64,), SAME, out, None, True) == 64
    assert S.streaming_width("mul", (64,), (64,), SAME, out.double(), None, True, (out, out.double())) == 0


@pytest.mark.parametrize("dtype", [F32, BF16], ids=["f32", "bf16"])
def test_sddmm_elementwise(dtype):
    ops = BINARY + ("copy_lhs",) if dtype == F32 else ("mul", "sub")
    for op in ops:
        shapes = BCAST if op in ("mul", "sub") else BCAST[:2]
        for lshape, rshape in shapes:
            for lt, rt in (("u", "v"), ("e", "u"), ("v", "e")):
                for case in CASES:
                    run_sddmm(case, op, lshape, rshape if op != "copy_lhs" else lshape, lt, rt, dtype)


def _same_bits(a, b):
    """Equal bit for bit, or NaN in both (a NaN's payload may be quieted)."""
    ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return bool(((a.view(ints) == b.view(ints)) | (torch.isnan(a) & torch.isnan(b))).all())


@pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=["f16", "bf16", "f32"])
def test_sddmm_copies_store_elements_exactly(dtype):
    """copy_lhs / copy_rhs write each element as it is (16-bit elements skip the rounding of a computed
    value, ``_core.store_copied``): bit for bit the gathered rows, with -0, infinities, NaN, subnormals and
    the format's extremes; into another dtype they are converted as torch converts."""
    src, dst, n_src, n_dst, (indptr, indices, eid) = csc("power_law", shuffle=True)
    info = torch.finfo(dtype)
    special = torch.tensor([-0.0, float("inf"), -float("inf"), float("nan"), info.tiny / 4, -info.tiny, info.max,
                            -info.max, info.eps, 1.0 + info.eps])
    x = torch.cat([special, torch.randn(n_src * 12 - special.numel(), generator=torch.Generator().manual_seed(3))])
    x = x.to(dtype).reshape(n_src, 12)
    y = torch.roll(x.reshape(-1), 5).reshape(n_src, 12)[:n_dst]
    E = src.numel()
    lhs_out = K.gsddmm("copy_lhs", indptr, indices, eid, x, None, "u", "v")
    rhs_out = K.gsddmm("copy_rhs", indptr, indices, eid, None, y, "u", "v")
    assert lhs_out.dtype == rhs_out.dtype == dtype and lhs_out.shape == (E, 12)
    assert _same_bits(lhs_out, x[src]) and _same_bits(rhs_out, y[dst])
    other = F32 if dtype != F32 else BF16       # a conversion: rounded (or widened) as torch does
    assert _same_bits(K.gsddmm("copy_lhs", indptr, indices, eid, x, None, "u", "v", out_dtype=other),
                      x[src].to(other))
    assert _same_bits(K.gsddmm("copy_rhs", indptr, indices, eid, None, y, "u", "v", out_dtype=other),
                      y[dst].to(other))


@pytest.mark.parametrize("dtype", [F32, BF16, F16], ids=["f32", "bf16", "f16"])
def test_sddmm_one_value_per_edge(dtype):
    """One value per edge and node (GAT's ``u_add_v`` of one head; the kernel's loop without feature loops or
    prefetch): every elementwise op and copy, every target pair, operands ``(rows,)`` and ``(rows, 1)``,
    scattered edge ids, bit for bit what torch computes in the same dtype; into another dtype, as torch
    converts the float32 result."""
    for case in ("power_law", "multi_edge", "bipartite"):
        src, dst, n_src, n_dst, (indptr, indices, eid) = csc(case, shuffle=True)
        rows = {"u": n_src, "v": n_dst, "e": src.numel()}
        pick = {"u": lambda t, s=src: t[s], "v": lambda t, d=dst: t[d], "e": lambda t: t}
        for lt, rt in (("u", "v"), ("v", "u"), ("u", "e"), ("e", "v"), ("e", "u"), ("v", "e")):
            for shape in ((), (1,)):
                lhs = rand((rows[lt],) + shape, dtype, 1).to(dtype)
                rhs = rand((rows[rt],) + shape, dtype, 2, positive=True).to(dtype)
                idx = (indptr, indices, eid)
                for op in BINARY:
                    expected = {"add": torch.add, "sub": torch.sub, "mul": torch.mul,
                                "div": torch.div}[op](pick[lt](lhs), pick[rt](rhs))
                    out = K.gsddmm(op, *idx, lhs, rhs, lt, rt)
                    assert out.dtype == dtype and _same_bits(out, expected), (case, lt, rt, op, shape)
                assert _same_bits(K.gsddmm("copy_lhs", *idx, lhs, None, lt, rt), pick[lt](lhs))
                assert _same_bits(K.gsddmm("copy_rhs", *idx, None, rhs, lt, rt), pick[rt](rhs))
                other = F32 if dtype != F32 else BF16
                out = K.gsddmm("mul", indptr, indices, eid, lhs, rhs, lt, rt, out_dtype=other)
                expected = (pick[lt](lhs).float() * pick[rt](rhs).float()).to(other)
                assert out.dtype == other and _same_bits(out, expected)


@pytest.mark.parametrize("dtype", [F32, BF16], ids=["f32", "bf16"])
def test_division_by_zero_gives_inf_and_nan_as_torch(dtype):
    """x / 0 in the kernels is what torch gives (inf, -inf, nan for 0 / 0), not an exception raised from
    inside the compiled loop; max/min still pick among the infinities."""
    src, dst = torch.tensor([0, 1, 2, 0]), torch.tensor([1, 1, 0, 2])
    indptr, indices, eid = Index.from_coo(src, dst, 3, 3).csc()
    lhs = torch.tensor([[1.0, -2.0, 0.0], [3.0, 0.0, -1.0], [0.5, 1.0, 2.0]], dtype=F64)
    rhs = torch.tensor([[0.0, 0.0, 0.0], [2.0, 0.0, 4.0], [0.0, -1.0, 0.0], [-2.0, 0.0, 1.0]], dtype=F64)
    nonzero = torch.where(lhs == 0, 1.0, lhs)       # max/min skip NaN messages (documented): only +-inf there
    for reduce, x in (("sum", lhs), ("max", nonzero), ("min", nonzero)):
        out, _, _ = K.gspmm("div", reduce, indptr, indices, eid, x.to(dtype), rhs.to(dtype))
        expected = ref_spmm("div", reduce, src, dst, 3, x, rhs)
        torch.testing.assert_close(out.to(F64), expected, equal_nan=True, rtol=0, atol=0)
    out = K.gsddmm("div", indptr, indices, eid, lhs.to(dtype), rhs.to(dtype), "u", "e")
    torch.testing.assert_close(out.to(F64), lhs[src] / rhs, equal_nan=True, rtol=0, atol=0)
    assert bool(out.isnan().any()) and bool(out.isinf().any())


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_sddmm_neg_div_square_is_the_u_div_e_edge_gradient(dtype):
    """The epilogue ``-(x[u] * G[v]) / w[e]**2`` (u_div_e's edge gradient) against float64 on every graph
    case, shuffled edge ids included; a zero divisor gives inf as torch does, and mixed operand dtypes
    (a float32 mean-scaled G with 16-bit x and w) round once into the result's dtype."""
    for case in CASES:
        for shuffle in (False, True):
            src, dst, n_src, n_dst, (indptr, indices, eid) = csc(case, shuffle)
            E = src.numel()
            x, G = rand((n_src, 2, 3), dtype, 1), rand((n_dst, 2, 3), dtype, 2)
            w = rand((E, 2, 3), dtype, 3, positive=True)
            out = K.gsddmm("mul", indptr, indices, eid, x.to(dtype), G.to(dtype), "u", "v", out_dtype=dtype,
                           neg_div_square=w.to(dtype))
            expected = -(x[src] * G[dst]) / (w * w)
            assert out.dtype == dtype and out.shape == expected.shape, (case, out.shape)
            assert_close(out, expected, dtype)
    src, dst = torch.tensor([0, 1, 1]), torch.tensor([1, 0, 1])
    indptr, indices, eid = Index.from_coo(src, dst, 2, 2).csc()
    x, G = torch.tensor([[1.0, 2.0], [-3.0, 0.5]], dtype=F64), torch.tensor([[2.0, 1.0], [1.0, -4.0]], dtype=F64)
    w = torch.tensor([[0.0, 2.0], [1.0, 0.5], [4.0, 0.0]], dtype=F64)
    out = K.gsddmm("mul", indptr, indices, eid, x.to(dtype), G.float(), "u", "v", out_dtype=dtype,
                   neg_div_square=w.to(dtype))
    torch.testing.assert_close(out.to(F64), (-(x[src] * G[dst]) / (w * w)).to(dtype).to(F64), rtol=0, atol=0)


def test_sddmm_neg_div_square_rejects_what_it_cannot_compute():
    src, dst = torch.tensor([0, 1]), torch.tensor([1, 1])
    indptr, indices, eid = Index.from_coo(src, dst, 2, 2).csc()
    x = torch.ones(2, 3)
    with pytest.raises(ValueError, match="elementwise op on operands of one feature shape"):
        K.gsddmm("dot", indptr, indices, eid, x, x, neg_div_square=torch.ones(2, 1))
    with pytest.raises(ValueError, match="elementwise op on operands of one feature shape"):
        K.gsddmm("mul", indptr, indices, eid, x, torch.ones(2, 1), neg_div_square=torch.ones(2, 3))
    with pytest.raises(ValueError, match=r"expected neg_div_square of shape \(2, 3\)"):
        K.gsddmm("mul", indptr, indices, eid, x, x, neg_div_square=torch.ones(3, 3))
    with pytest.raises(TypeError, match="neg_div_square"):
        K.gsddmm("mul", indptr, indices, eid, x, x, neg_div_square=torch.ones(2, 3, dtype=torch.int32))


def test_sddmm_dot_long_rows_fp32_accumulation():
    """fp16 dot over D=4096 of ones: exact in fp32, beyond fp16's integer range of 2048 steps."""
    src, dst, n, _ = torch.tensor([0, 1]), torch.tensor([1, 1]), 2, 2
    indptr, indices, eid = Index.from_coo(src, dst, n, n).csc()
    x = torch.ones(n, 4096, dtype=F16)
    x[:, 3000:] = 0.5
    out = K.gsddmm("dot", indptr, indices, eid, x, x)
    assert out.tolist() == [[3000 + 1096 * 0.25]] * 2


# ----------------------------------------------------------------------------- edge softmax


def ref_edge_softmax(dst, n_dst, x):
    flat = x.reshape(x.shape[0], math.prod(x.shape[1:]))
    m = torch.full((n_dst, flat.shape[1]), -math.inf, dtype=F64)
    m.scatter_reduce_(0, dst[:, None].expand_as(flat), flat, "amax")
    ex = torch.exp(flat - m[dst])
    z = torch.zeros(n_dst, flat.shape[1], dtype=F64).index_add_(0, dst, ex)
    return (ex / z[dst]).reshape(x.shape)


def ref_edge_softmax_backward(dst, n_dst, s, g):
    flat = (s * g).reshape(s.shape[0], math.prod(s.shape[1:]))
    acc = torch.zeros(n_dst, flat.shape[1], dtype=F64).index_add_(0, dst, flat)
    return s * (g - acc[dst].reshape(s.shape))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_edge_softmax(dtype):
    for shape in ((4,), (2, 1), ()):
        for case in CASES:
            src, dst, n_src, n_dst, (indptr, indices, eid) = csc(case, shuffle=case in ("random", "power_law"))
            x = rand((src.numel(),) + shape, dtype, 0) * 8
            s = K.edge_softmax_forward(indptr, eid, x.to(dtype))
            expected = ref_edge_softmax(dst, n_dst, x)
            assert s.dtype == dtype and s.shape == x.shape
            assert_close(s, expected, dtype)
            g = rand(x.shape, dtype, 1)
            s_in = expected.to(dtype).to(F64)
            grad = K.edge_softmax_backward(indptr, eid, s_in.to(dtype), g.to(dtype))
            expected_grad = ref_edge_softmax_backward(dst, n_dst, s_in, g)
            assert grad.dtype == dtype and grad.shape == x.shape
            assert_close(grad, expected_grad, dtype)
            # eid=None: edge data already in slot order (the contiguous, lane-vectorised path)
            assert_close(K.edge_softmax_forward(indptr, None, x.to(dtype)[eid]), expected[eid], dtype)
            grad_slots = K.edge_softmax_backward(indptr, None, s_in.to(dtype)[eid], g.to(dtype)[eid])
            assert_close(grad_slots, expected_grad[eid], dtype)


def test_edge_softmax_hub_and_extremes():
    """100,000 in-edges on one node, large logits (no overflow), -inf logits (weight 0)."""
    src, dst, N, _ = hub_graph()
    indptr, indices, eid = Index.from_coo(src, dst, N, N).csc()
    x = rand((src.numel(), 4), F32, 5) * 50 + 60  # up to 110: exp would overflow fp32 without the max
    x[::7, 1] = -math.inf
    for dtype in (F32, BF16):
        expected = ref_edge_softmax(dst, N, x.to(dtype).to(F64))
        s = K.edge_softmax_forward(indptr, eid, x.to(dtype))
        assert_close(s, expected, dtype)
        assert bool((s[::7, 1] == 0).all())
        # the hub row is longer than the exp scratch: exp is recomputed in the last pass
        assert_close(K.edge_softmax_forward(indptr, None, x.to(dtype)[eid]), expected[eid], dtype)


def test_exp_f32_accuracy():
    """The kernels' vectorisable fp32 exp is within 2 ulp of exp over the range softmax uses."""
    from numba import njit

    from mpgraph.ops._cpu._core import exp_f32

    @njit
    def exp_all(x, out):
        for i in range(x.size):
            out[i] = exp_f32(x[i])

    x = torch.cat([torch.linspace(-87.0, 0.5, 400_001), torch.tensor([-math.inf, -1e30, -88.0, 89.0, math.nan])])
    out = torch.empty_like(x)
    exp_all(x.numpy(), out.numpy())
    exact = torch.exp(x[:-5].double())
    ulp = torch.finfo(F32).eps * exact  # spacing near the value (upper bound)
    assert float(((out[:-5].double() - exact).abs() / ulp).max()) <= 2.0
    assert out[-5:-2].tolist() == [0.0, 0.0, 0.0] and out[-2] == math.inf and math.isnan(out[-1])


# ----------------------------------------------------------------------------- errors


def test_errors():
    indptr, indices, eid = torch.tensor([0, 1]), torch.tensor([0]), torch.tensor([0])
    x = torch.ones(1, 2)
    with pytest.raises(ValueError, match="expected op"):
        K.gspmm("pow", "sum", indptr, indices, eid, x, x)
    with pytest.raises(ValueError, match="expected reduce"):
        K.gspmm("copy_lhs", "prod", indptr, indices, eid, x, None)
    with pytest.raises(TypeError, match="int64"):
        K.gspmm("copy_lhs", "sum", indptr.int(), indices, eid, x, None)
    with pytest.raises(TypeError, match="float"):
        K.gspmm("copy_lhs", "sum", indptr, indices, eid, x.long(), None)
    with pytest.raises(ValueError, match="broadcastable"):
        K.gspmm("mul", "sum", indptr, indices, eid, torch.ones(1, 3), torch.ones(1, 2))
    with pytest.raises(ValueError, match="last dimension"):
        K.gsddmm("dot", indptr, indices, eid, torch.ones(1, 3), torch.ones(1, 2))
    with pytest.raises(ValueError, match="lhs_target"):
        K.gsddmm("mul", indptr, indices, eid, x, x, "w", "v")
    with pytest.raises(ValueError, match="one per edge"):
        K.edge_softmax_forward(indptr, eid, torch.ones(3, 2))
    with pytest.raises(ValueError, match="offsets"):
        K.segment_reduce("sum", x, torch.tensor([0, 5]))
    with pytest.raises(ValueError, match="indptr"):
        K.gsddmm("dot", torch.tensor([0, 2]), indices, eid, x, x)


def test_inputs_that_require_grad():
    """The raw kernels read tensors that require grad (inside autograd.Function.forward) without copies."""
    indptr, indices, eid = torch.tensor([0, 1, 3]), torch.tensor([0, 1, 0]), torch.tensor([0, 1, 2])
    x = torch.ones(2, 3, requires_grad=True)
    w = torch.ones(3, 1, requires_grad=True)
    out = K.gspmm("mul", "sum", indptr, indices, eid, x, w)[0]
    assert out.tolist() == [[1.0] * 3, [2.0] * 3] and not out.requires_grad
    assert K.gsddmm("dot", indptr, indices, eid, x, x).tolist() == [[3.0]] * 3
    assert K.edge_softmax_forward(indptr, eid, w).tolist() == [[1.0], [0.5], [0.5]]


# ----------------------------------------------------------------------------- max/min backward scatter


@pytest.mark.parametrize("dtype", [F64, F32, BF16, F16], ids=["f64", "f32", "bf16", "f16"])
@pytest.mark.parametrize("broadcast", [False, True], ids=["identity", "broadcast"])
@pytest.mark.parametrize("winner_dtype", [torch.int64, torch.int32], ids=["i64", "i32"])
def test_scatter_winners_matches_plain_loop(dtype, broadcast, winner_dtype):
    from mpgraph.ops._cpu.scatter import scatter_winners

    gen = torch.Generator().manual_seed(11)
    R, F, rows = 257, 40, 31
    winner = torch.randint(-1, rows, (R, F), generator=gen)
    winner[5] = -1                                          # a row without edges
    coef = torch.randn(R, F, generator=gen, dtype=F64).to(dtype)
    coef[winner < 0] = float("nan")                         # ignored entries may hold anything
    winner = winner.to(winner_dtype)
    pos = torch.arange(F) % 4 if broadcast else None
    cols = 4 if broadcast else F
    expected = torch.zeros(rows, cols, dtype=F64)           # float64 sums of the values as given
    for r in range(R):
        for f in range(F):
            if winner[r, f] >= 0:
                expected[winner[r, f], f if pos is None else pos[f]] += coef[r, f].double()
    acc = F64 if dtype == F64 else F32                      # 16-bit values are summed (and returned) in fp32
    before = torch.get_num_threads()
    try:
        results = []
        for threads in (1, 2):
            torch.set_num_threads(threads)
            out = scatter_winners(winner, coef, pos, rows, cols)
            assert out.dtype == acc and out.shape == (rows, cols)
            results.append(out)
    finally:
        torch.set_num_threads(before)
    assert torch.equal(results[0], results[1])             # same sums, same order, any thread count
    assert_close(results[0], expected, acc)
    assert not torch.isnan(results[0]).any()


@pytest.mark.parametrize("dtype", [F64, F32, BF16], ids=["f64", "f32", "bf16"])
@pytest.mark.parametrize("broadcast", [False, True], ids=["identity", "broadcast"])
def test_scatter_winners_with_disjoint_rows_splits_rows(dtype, broadcast):
    """``disjoint_rows``: rows that never share a winner (an edge operand's) are split among threads, with a
    broadcast ``pos`` too, and give the plain loop's sums with any thread count."""
    from mpgraph.ops._cpu.scatter import scatter_winners

    gen = torch.Generator().manual_seed(13)
    R, F = 3000, 12                                         # more rows than one work chunk
    rows = 3 * R
    winner = 3 * torch.arange(R)[:, None] + torch.randint(0, 3, (R, F), generator=gen)   # row r: 3r .. 3r+2
    winner[torch.rand(R, F, generator=gen) < 0.2] = -1
    coef = torch.randn(R, F, generator=gen, dtype=F64).to(dtype)
    pos = torch.arange(F) % 4 if broadcast else None
    cols = 4 if broadcast else F
    expected = torch.zeros(rows, cols, dtype=F64)
    for r in range(R):
        for f in range(F):
            if winner[r, f] >= 0:
                expected[winner[r, f], f if pos is None else pos[f]] += coef[r, f].double()
    before = torch.get_num_threads()
    try:
        results = []
        for threads in (1, 2):
            torch.set_num_threads(threads)
            results.append(scatter_winners(winner.int(), coef, pos, rows, cols, disjoint_rows=True))
    finally:
        torch.set_num_threads(before)
    assert torch.equal(results[0], results[1])
    assert_close(results[0], expected, F64 if dtype == F64 else F32)
    assert torch.equal(results[0], scatter_winners(winner.int(), coef, pos, rows, cols))   # same sums, same order


def test_scatter_winners_rejects_bad_input():
    from mpgraph.ops._cpu.scatter import scatter_winners

    with pytest.raises(TypeError, match="float16/bfloat16/float32/float64"):
        scatter_winners(torch.zeros(2, 2, dtype=torch.int64), torch.zeros(2, 2, dtype=torch.int32), None, 2, 2)
    with pytest.raises(ValueError, match="int32/int64 winner"):
        scatter_winners(torch.zeros(2, 2, dtype=torch.int16), torch.zeros(2, 2), None, 2, 2)
    with pytest.raises(ValueError, match="winner"):
        scatter_winners(torch.zeros(2, 3, dtype=torch.int64), torch.zeros(2, 2), None, 2, 2)


@pytest.mark.parametrize("dtype", [F64, F32, BF16, F16], ids=["f64", "f32", "bf16", "f16"])
@pytest.mark.parametrize("broadcast", [False, True], ids=["identity", "broadcast"])
@pytest.mark.parametrize("winner_dtype", [torch.int64, torch.int32], ids=["i64", "i32"])
def test_pick_winners_matches_plain_loop_and_the_reference(dtype, broadcast, winner_dtype):
    from mpgraph.ops import _reference
    from mpgraph.ops._cpu.scatter import pick_winners

    gen = torch.Generator().manual_seed(12)
    R, F, rows = 2500, 24, 53                               # more rows than one work chunk
    cols = 3 if broadcast else F
    pos = torch.arange(F) % 3 if broadcast else None
    winner = torch.randint(-1, rows, (R, F), generator=gen)
    winner[7] = -1                                          # a row without edges
    src = torch.randn(rows, cols, generator=gen, dtype=F64).to(dtype)
    expected = torch.zeros(R, F, dtype=F64)
    for r in range(0, R, 97):                               # a plain loop over a sample of rows
        for f in range(F):
            if winner[r, f] >= 0:
                expected[r, f] = src[winner[r, f], f if pos is None else pos[f]].double()
    winner = winner.to(winner_dtype)
    acc = F64 if dtype == F64 else F32
    out = pick_winners(winner, src, pos, cols)
    assert out.dtype == acc and out.shape == (R, F)
    assert torch.equal(out[::97].double(), expected[::97])  # exact: a widening copy
    assert torch.equal(out, _reference.pick_winners(winner, src, pos, cols))
    assert bool((out[7] == 0).all())


def test_pick_winners_rejects_bad_input():
    from mpgraph.ops._cpu.scatter import pick_winners

    with pytest.raises(TypeError, match="src"):
        pick_winners(torch.zeros(2, 2, dtype=torch.int64), torch.zeros(2, 2, dtype=torch.int32), None, 2)
    with pytest.raises(ValueError, match="int32/int64"):
        pick_winners(torch.zeros(2, 2, dtype=torch.int16), torch.zeros(2, 2), None, 2)
    with pytest.raises(ValueError, match="cols == F"):
        pick_winners(torch.zeros(2, 2, dtype=torch.int64), torch.zeros(2, 3), None, 3)


@pytest.mark.parametrize("dtype", [BF16, F16, F32], ids=["bf16", "f16", "f32"])
def test_scatter_winners_int32_winners_and_half_coef_match_the_reference(dtype):
    """The forward's int32 winners and a 16-bit gradient as it is: the fast scatter and the index_add_ one
    (the differentiable path of double backward) agree and both sum in float32."""
    from mpgraph.ops import _reference
    from mpgraph.ops._cpu.scatter import scatter_winners

    gen = torch.Generator().manual_seed(3)
    winner = torch.randint(-1, 17, (64, 24), generator=gen, dtype=torch.int32)
    coef = torch.randn(64, 24, generator=gen).to(dtype)
    fast = scatter_winners(winner, coef, None, 17, 24)
    ref = _reference.scatter_winners(winner, coef, None, 17, 24)
    assert fast.dtype == ref.dtype == F32
    assert_close(fast, ref, F32)


# ----------------------------------------------------------------------------- slot winners and their gather


def slot_graph(max_in, seed=0, N=40):
    """Random edges with parallel edges (u -> v twice) and node 3 receiving ``max_in`` in-edges; node 0 has
    none. Returns ``(src, dst, N)``."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, N, (300,), generator=gen)
    dst = torch.randint(1, N, (300,), generator=gen)
    dst[dst == 3] = 4                                        # node 3's in-degree is exactly max_in
    src = torch.cat([src, src[:20], torch.randint(0, N, (max_in,), generator=gen)])     # 20 parallel edges
    dst = torch.cat([dst, dst[:20], torch.full((max_in,), 3)])
    return src, dst, N


def plain_winner_grads(src, dst, index, winners, op, x, w, grad):
    """float64 plain loops over the edges for max/min gradients from slot winners: ``(node, edge)``, the node
    operand's ``(N, F)`` and the edge operand's ``(E, H)`` (``w: (E, H)``, a block broadcast of ``F // H``
    columns; ``H == F``: none). Edge ``e`` contributes where its destination's winner is its slot: ``grad``
    (``add``), ``grad * w`` / ``grad / w`` to the node (``mul`` / ``div``), and ``grad * x[u]`` /
    ``-grad * x[u] / w^2`` to the edge, summed over each block."""
    indptr_c, _, eid_c = index.csc()
    E, H = w.shape
    N, F = grad.shape
    B = F // H
    pos = torch.empty(E, dtype=torch.int64)                 # each edge's offset in its destination's row
    pos[eid_c] = torch.arange(E) - indptr_c[dst[eid_c]]
    xd, gd = x.double().reshape(-1, F), grad.double()
    wd = w.double().repeat_interleave(B, 1)
    node = torch.zeros(xd.shape[0], F, dtype=F64)
    edge = torch.zeros(E, F, dtype=F64)
    for e in range(E):
        u, v = int(src[e]), int(dst[e])
        hit = winners.reshape(N, F)[v].long() == int(pos[e])
        factor = {"add": 1.0, "mul": wd[e], "div": 1 / wd[e]}[op]
        node[u] += torch.where(hit, gd[v] * factor, 0.0)
        term = {"add": gd[v], "mul": gd[v] * xd[u], "div": -gd[v] * xd[u] / (wd[e] * wd[e])}[op]
        edge[e] = torch.where(hit, term, 0.0)
    return node, edge.reshape(E, H, B).sum(-1)


@pytest.mark.parametrize("max_in, slot", [(200, torch.uint8), (255, torch.uint8), (256, torch.int16),
                                          (40_000, torch.int32)], ids=["u8", "u8-full", "i16", "ids"])
@pytest.mark.parametrize("reduce", ["max", "min"])
def test_spmm_slot_winners(max_in, slot, reduce):
    """``need_arg='slots'``: the same values as with ids; each slot names the winning edge within its row
    (uint8 while rows hold at most 255 edges, int16 up to 32767, else the int32 ids)."""
    src, dst, N = slot_graph(max_in)
    indptr, indices, eid = Index.from_coo(src, dst, N, N).csc()
    x = rand((N, 70), F32, 5).float()
    x[7, 3] = float("nan")                                  # NaN never wins
    x[:, 69] = float("nan")                                 # a column with no winner anywhere
    out_ids, ids, _ = K.gspmm("copy_lhs", reduce, indptr, indices, eid, x, None, need_arg=True)
    out, slots, none = K.gspmm("copy_lhs", reduce, indptr, indices, eid, x, None, need_arg="slots")
    assert none is None and slots.dtype == slot and torch.equal(out, out_ids)
    told = K.gspmm("copy_lhs", reduce, indptr, indices, eid, x, None, need_arg="slots", max_row=max_in)
    assert torch.equal(told[0], out) and torch.equal(told[1], slots)      # a cached widest row: same slots
    if slot == torch.int32:
        assert torch.equal(slots, ids)
        return
    missing = 255 if slot == torch.uint8 else -1
    valid = slots != missing
    assert torch.equal(valid, ids >= 0)
    assert not valid[0].any() and not valid[:, 69].any()     # no in-edges; all NaN
    at = (indptr[:-1, None] + slots.long()).clamp(max=indices.numel() - 1)
    assert torch.equal(indices[at][valid], ids.long()[valid])
    # a broadcast node operand has no slot winners: 'slots' means ids there; a block-broadcast edge
    # operand (one value per edge) records slots like no broadcast
    w = rand((src.numel(), 70), F32, 6).float()
    _, l_ids, e_ids = K.gspmm("add", reduce, indptr, indices, eid, x[:, :1], w, need_arg="slots")
    assert l_ids.dtype == e_ids.dtype == torch.int32
    _, block_slots, none = K.gspmm("mul", reduce, indptr, indices, eid, x, w[:, :1], need_arg="slots")
    assert none is None and block_slots.dtype == slot
    # sums, products and edge copies record one slot array naming the edge
    for op, operands in (("add", (x, w)), ("mul", (x, w)), ("div", (x, w + 2)), ("copy_rhs", (None, w))):
        _, op_slots, none = K.gspmm(op, reduce, indptr, indices, eid, *operands, need_arg="slots")
        _, _, e_ids = K.gspmm(op, reduce, indptr, indices, eid, *operands, need_arg=True)
        assert none is None and op_slots.dtype == slot
        if slot != torch.int32:
            ok = op_slots != (255 if slot == torch.uint8 else -1)
            at = (indptr[:-1, None] + op_slots.long()).clamp(max=indices.numel() - 1)
            assert torch.equal(ok, e_ids >= 0) and torch.equal(eid[at][ok], e_ids.long()[ok])
    with pytest.raises(ValueError, match="need_arg"):
        K.gspmm("copy_lhs", reduce, indptr, indices, eid, x, None, need_arg="ids")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("F", [64, 200, 70])
@pytest.mark.parametrize("op", ["copy_rhs", "copy_lhs", "add"])
@pytest.mark.parametrize("reduce", ["max", "min"])
def test_half_slot_winners_in_every_pass_width(dtype, F, op, reduce):
    """16-bit max/min recording slot winners through each pass (``TRACK_BLOCK``-column passes, the
    runtime-width tail): values equal the id path's and the float64 extreme, each slot names an edge that
    holds the extreme, and it is the id path's winner."""
    src, dst, N = slot_graph(200, seed=3)
    indptr, indices, eid = Index.from_coo(src, dst, N, N).csc()
    x = rand((N, F), F32, 7).to(dtype)
    w = rand((src.numel(), F), F32, 8).to(dtype)
    lhs, rhs = {"copy_rhs": (None, w), "copy_lhs": (x, None), "add": (x, w)}[op]
    out_ids, l_ids, r_ids = K.gspmm(op, reduce, indptr, indices, eid, lhs, rhs, need_arg=True)
    out, slots, none = K.gspmm(op, reduce, indptr, indices, eid, lhs, rhs, need_arg="slots")
    assert none is None and slots.dtype == torch.uint8 and torch.equal(out, out_ids)
    msg = {"copy_rhs": w.double()[eid], "copy_lhs": x.double()[indices],
           "add": (x.float()[indices] + w.float()[eid]).double()}[op]   # (E, F) in slot order, sums in fp32
    rows = torch.repeat_interleave(torch.arange(N), indptr[1:] - indptr[:-1])
    ext = torch.full((N, F), -torch.inf if reduce == "max" else torch.inf, dtype=torch.float64)
    ext = ext.scatter_reduce(0, rows[:, None].expand(-1, F), msg, "amax" if reduce == "max" else "amin")
    has = (indptr[1:] > indptr[:-1])[:, None].expand(-1, F)
    assert torch.equal(out.double()[has], ext.to(dtype).double()[has])
    assert (out[~has] == 0).all() and (slots[~has] == 255).all()
    at = (indptr[:-1, None] + slots.long()).clamp(max=indices.numel() - 1)
    named = msg.gather(0, at)
    assert torch.equal(named.to(dtype)[has], out[has])                      # the named edge holds the extreme
    ids = r_ids if op != "copy_lhs" else l_ids
    by_id = eid[at] if op != "copy_lhs" else indices[at]
    assert torch.equal(by_id[has], ids.long()[has])                         # and it is the id path's winner


@pytest.mark.parametrize("dtype", [F32, BF16, F16], ids=["f32", "bf16", "f16"])
@pytest.mark.parametrize("op", ["copy_lhs", "copy_rhs", "add", "mul", "heads"])
def test_track_wide_passes_equal_the_32_column_passes(monkeypatch, dtype, op):
    """Max/min keeping the winners with passes of ``TRACK_WIDE`` columns (forced on any machine: the AVX-512
    default) against passes of 32 only (the AVX2 default): the same values and slots bit for bit, for rows that
    take a 64-column pass (64) and a 128-column pass, then 32-column ones and the tail (200); ``mul`` with one
    weight per edge (``RHS_BLOCK``), ``heads``: ``u_mul_e`` with 8 heads of 8 and of 16 (the heads passes, 64 and
    128 columns; 16-bit only: fp32 heads keep the 32-column passes); ids for fp32 ``copy_lhs``. The path is
    checked as taken."""
    from mpgraph.ops._cpu import spmm as S

    reduce = "max" if op in ("copy_lhs", "add", "heads") else "min"
    src, dst, N = slot_graph(300, seed=5)
    indptr, indices, eid = Index.from_coo(src, dst, N, N).csc()
    taken = []
    width = S.track_width
    monkeypatch.setattr(S, "track_width", lambda *a: taken.append(width(*a)) or taken[-1])
    for F in (64, 128) if op == "heads" else (64, 200):
        H = {"mul": 1, "heads": 8}.get(op, F)
        x = rand((N, F), F32, 11).to(dtype)
        w = rand((src.numel(), H), F32, 12).to(dtype)
        lhs, rhs = {"copy_rhs": (None, w), "copy_lhs": (x, None)}.get(op, (x, w))
        for need_arg in ("slots", True) if (op, dtype) == ("copy_lhs", F32) else ("slots",):
            got = {}
            for wide in ((128, 64), ()):
                monkeypatch.setattr(S, "TRACK_WIDE", wide)
                if op == "heads":   # (N, H, F // H) features, (E, H, 1) weights: GAT's layout
                    res = K.gspmm("mul", reduce, indptr, indices, eid, x.view(N, H, -1), w.view(-1, H, 1),
                                  need_arg=need_arg)
                    res = tuple(t if t is None else t.reshape(N, F) for t in res)
                else:
                    res = K.gspmm(op, reduce, indptr, indices, eid, lhs, rhs, need_arg=need_arg)
                got[wide] = res
            assert taken[-2:] == [0 if (op, dtype) == ("heads", F32) else 64 if F == 64 else 128, 0]
            assert op != "heads" or S.heads_seg(S.RHS_BLOCK, H, F // H, dtype) == F // H     # the heads passes
            for a, b in zip(got[(128, 64)], got[()]):
                assert (a is None and b is None) or torch.equal(a, b)
            out, win = got[()][0], got[()][1] if got[()][1] is not None else got[()][2]
            assert win.dtype == (torch.int16 if need_arg == "slots" else torch.int32)
            if op in ("copy_rhs", "copy_lhs"):
                msg = w.double()[eid] if op == "copy_rhs" else x.double()[indices]
            elif op == "add":
                msg = (x.float()[indices] + w.float()[eid]).double()
            else:   # each head's weight over its columns, the product in fp32
                msg = (x.float()[indices] * w.float()[eid].repeat_interleave(F // H, dim=1)).double()
            rows = torch.repeat_interleave(torch.arange(N), indptr[1:] - indptr[:-1])
            ext = torch.full((N, F), -torch.inf if reduce == "max" else torch.inf, dtype=F64)
            ext = ext.scatter_reduce(0, rows[:, None].expand(-1, F), msg, "amax" if reduce == "max" else "amin")
            has = (indptr[1:] > indptr[:-1])[:, None].expand(-1, F)
            assert torch.equal(out.double()[has], ext.to(dtype).double()[has])
    assert width(S.SAME, True, 0, 1, 64, F32) == (64 if S.TRACK_WIDE else 0)


def test_track_width_policy(monkeypatch):
    """The first pass width of max/min keeping the winners: the first of ``TRACK_WIDE`` a segment holds, for
    blocked passes with a float32 accumulator only."""
    from mpgraph.ops._cpu import spmm as S

    monkeypatch.setattr(S, "TRACK_WIDE", (128, 64))
    assert [S.track_width(S.SAME, True, 0, 1, F, F32) for F in (32, 63, 64, 127, 128, 300)] == [0, 0, 64, 64, 128,
                                                                                               128]
    assert S.track_width(S.RHS_BLOCK, True, 0, 2, 128, BF16) == 128     # one weight per edge, or wide heads
    # heads narrower than a pass: the first width dividing the row, so each pass takes whole heads, none left
    assert [S.track_width(S.RHS_BLOCK, True, 8, H, 8, F16) for H in (4, 8, 12, 16, 24)] == [0, 64, 0, 128, 64]
    assert S.track_width(S.RHS_BLOCK, True, 8, 8, 8, F32) == 0           # fp32 heads: 32-column passes
    assert S.track_width(S.SAME, False, 0, 1, 128, F32) == 0            # no winners
    assert S.track_width(S.SAME, True, 0, 1, 128, F64) == 0             # float64 accumulators
    assert S.track_width(S.LHS_BLOCK, True, 0, 1, 128, F32) == 0
    monkeypatch.setattr(S, "TRACK_WIDE", ())
    assert S.track_width(S.SAME, True, 0, 1, 300, F32) == 0


def gather_expected(src, dst, N, slot_pos, grad, winners):
    """float64 plain loop of the gather's definition: edge e adds grad[v] where v's winner is its slot."""
    out = torch.zeros(N, grad.shape[1], dtype=F64)
    for e in range(src.numel()):
        v = int(dst[e])
        hit = winners[v].long() == int(slot_pos[e])
        out[int(src[e])] += torch.where(hit, grad[v].double(), 0.0)
    return out


#: (dtype, F, max_in) of the copy's gather: each dtype and width with one slot width, alternating (uint8
#: slots for graphs of at most 255 in-edges, int16 above), so each dtype meets both slot widths, each slot
#: width both compiled-in (64, 128) and runtime (5, 200) row widths. The slot width changes only the winner
#: loads, and each (width, dtype, slot width) is a kernel of its own to compile.
GATHER_CASES = [(dtype, F, (200, 300)[(i + j) % 2]) for i, dtype in enumerate(DTYPES)
                for j, F in enumerate([64, 128, 5, 200])]


@pytest.mark.parametrize("dtype, F, max_in", GATHER_CASES,
                         ids=[f"{DTYPE_IDS[DTYPES.index(d)]}-{F}-{'u8' if m == 200 else 'i16'}"
                              for d, F, m in GATHER_CASES])
def test_gather_winners_matches_plain_loop(dtype, F, max_in):
    from mpgraph.ops._cpu._backend import _csr_slots
    from mpgraph.ops._cpu.scatter import gather_winners

    src, dst, N = slot_graph(max_in, seed=F)
    index = Index.from_coo(src, dst, N, N)
    indptr_c, indices_c, eid_c = index.csc()
    x = rand((N, F), dtype, 8).to(dtype)
    _, winners, _ = K.gspmm("copy_lhs", "max", indptr_c, indices_c, eid_c, x, None, need_arg="slots")
    grad = rand((N, F), dtype, 9).to(dtype)
    grad[winners == (255 if winners.dtype == torch.uint8 else -1)] = float("nan")   # never read
    indptr, dst_r, _ = index.csr()
    slot_of = _csr_slots(index, winners.dtype)
    pos = torch.empty(src.numel(), dtype=torch.int64)        # each edge's offset in its destination's row
    pos[eid_c] = torch.arange(src.numel()) - indptr_c[dst[eid_c]]
    expected = gather_expected(src, dst, N, pos, grad, winners)
    before = torch.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            results.append(gather_winners(indptr, dst_r, slot_of, grad, winners))
    finally:
        torch.set_num_threads(before)
    assert torch.equal(results[0], results[1])
    assert results[0].dtype == dtype and results[0].shape == (N, F)
    assert_close(results[0], expected, dtype)
    # the expected sums equal what the id-based scatter gives (parallel edges counted once)
    _, ids, _ = K.gspmm("copy_lhs", "max", indptr_c, indices_c, eid_c, x, None, need_arg=True)
    from mpgraph.ops._cpu.scatter import scatter_winners
    assert_close(scatter_winners(ids, grad, None, N, F).to(dtype), expected, dtype)
    wide = gather_winners(indptr, dst_r, slot_of, grad, winners, out_dtype=F64 if dtype != F64 else F32)
    assert wide.dtype == (F64 if dtype != F64 else F32)


@pytest.mark.parametrize("dtype", [F64, F32, BF16], ids=["f64", "f32", "bf16"])
@pytest.mark.parametrize("op, max_in", OP_SLOTS, ids=OP_SLOT_IDS)
@pytest.mark.parametrize("F", [64, 5])
def test_slot_winner_passes_with_a_factor_match_plain_loops(dtype, op, F, max_in):
    """u_mul_e/u_div_e max from slot winners: the node gradient sums grad * (or /) the winning edge's
    operand over each source's out-edges; the edge gradient is grad * x[u] (mul) or -grad * x[u] / w^2
    (div) where the edge won, else 0; both against float64 plain loops, with any thread count."""
    from mpgraph.ops._cpu._backend import _csr_slots
    from mpgraph.ops._cpu.scatter import edge_winners, gather_winners

    src, dst, N = slot_graph(max_in, seed=F + 1)
    perm = torch.randperm(src.numel(), generator=torch.Generator().manual_seed(2))
    src, dst = src[perm], dst[perm]                         # edge ids in no particular order
    index = Index.from_coo(src, dst, N, N)
    indptr_c, indices_c, eid_c = index.csc()
    E = src.numel()
    x = rand((N, F), dtype, 8).to(dtype)
    w = rand((E, F), dtype, 9, positive=True).to(dtype)
    _, winners, none = K.gspmm(op, "max", indptr_c, indices_c, eid_c, x, w, need_arg="slots")
    assert none is None and winners.dtype in (torch.uint8, torch.int16)
    grad = rand((N, F), dtype, 10).to(dtype)
    node, edge = plain_winner_grads(src, dst, index, winners, op, x, w, grad)
    indptr_r, dst_r, eid_r = index.csr()
    slot_of = _csr_slots(index, winners.dtype)
    before = torch.get_num_threads()
    got = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            got.append((gather_winners(indptr_r, dst_r, slot_of, grad, winners, op=op, eid=eid_r, other=w),
                        edge_winners(indptr_c, eid_c, grad, winners, op=op, src=indices_c, lhs=x,
                                     rhs=w if op == "div" else None)))
    finally:
        torch.set_num_threads(before)
    for a, b in zip(got[0], got[1]):
        assert torch.equal(a, b) and a.dtype == dtype
    assert_close(got[0][0], node, dtype)
    assert_close(got[0][1], edge, dtype)
    # the two-pass route of an elementwise product: the edge pass also picks grad * w (grad / w) at each
    # element's winner; gathered as a copy, those terms give the node gradient bit for bit
    edge2, picked = edge_winners(indptr_c, eid_c, grad, winners, op=op, src=indices_c, lhs=x, rhs=w, picked=True)
    assert torch.equal(edge2, got[0][1]) and picked.dtype == (F64 if dtype == F64 else F32)
    # rows of 64 that fill whole lines may go out as streaming stores (by default only beyond the L3): same bits
    streamed = edge_winners(indptr_c, eid_c, grad, winners, op=op, src=indices_c, lhs=x, rhs=w, picked=True,
                            nontemporal=True)
    assert torch.equal(streamed[0], edge2) and torch.equal(streamed[1], picked)
    assert torch.equal(edge_winners(indptr_c, eid_c, grad, winners, op=op, src=indices_c, lhs=x,
                                    rhs=w if op == "div" else None, nontemporal=True), got[0][1])
    deg = indptr_c[1:] - indptr_c[:-1]
    has = (winners.long() >= 0) & (winners.long() < deg[:, None])     # no slot: 255 (uint8) or -1 (int16)
    at = eid_c[(indptr_c[:-1, None] + winners.long()).clamp(0, E - 1)]
    wv = w.double().gather(0, at)
    plain = torch.where(has, grad.double() * wv if op == "mul" else grad.double() / wv, 0.0)
    assert_close(picked, plain, F64 if dtype == F64 else F32)
    assert torch.equal(gather_winners(indptr_r, dst_r, slot_of, picked, winners, out_dtype=dtype), got[0][0])
    # the forward may keep w at each element's winner (rhs_won, bit for bit); read by destination row instead of
    # at edge ids, it gives the same bits in the edge pass (with and without picked terms) and in the gather
    won = torch.full((N, F), float("nan"), dtype=dtype)
    out_k, winners_k, _ = K.gspmm(op, "max", indptr_c, indices_c, eid_c, x, w, need_arg="slots", rhs_won=won)
    assert torch.equal(winners_k, winners)
    assert torch.equal(won[has], wv.to(dtype)[has]) and not won[has].isnan().any()
    rows = edge_winners(indptr_c, eid_c, grad, winners, op=op, src=indices_c, lhs=x, rhs=won, picked=True,
                        rhs_rows=True)
    assert torch.equal(rows[0], edge2) and torch.equal(rows[1], picked)
    assert torch.equal(edge_winners(indptr_c, eid_c, grad, winners, op=op, src=indices_c, lhs=x, rhs=won,
                                    rhs_rows=True, nontemporal=F == 64), got[0][1])
    assert torch.equal(gather_winners(indptr_r, dst_r, slot_of, grad, winners, op=op, other=won, other_rows=True),
                       got[0][0])
    with pytest.raises(ValueError, match="rhs_rows"):
        edge_winners(indptr_c, eid_c, grad, winners, op=op, src=indices_c, lhs=x, rhs=w, rhs_rows=True)
    with pytest.raises(ValueError, match="other_rows"):
        gather_winners(indptr_r, dst_r, slot_of, grad, winners, op=op, eid=eid_r, other=w, other_rows=True)
    with pytest.raises(ValueError, match="for picked=True"):
        edge_winners(indptr_c, eid_c, grad, winners, op=op, src=indices_c, lhs=x, picked=True)
    with pytest.raises(ValueError, match="expected eid"):
        gather_winners(indptr_r, dst_r, slot_of, grad, winners, op=op, eid=eid_r, other=w[:-1])
    with pytest.raises(ValueError, match="expected src"):
        edge_winners(indptr_c, eid_c, grad, winners, op=op, src=indices_c[:1], lhs=x, rhs=w)
    with pytest.raises(ValueError, match="expected op"):
        edge_winners(indptr_c, eid_c, grad, winners, op="pow")


@pytest.mark.parametrize("dtype", [F64, F32, BF16], ids=["f64", "f32", "bf16"])
@pytest.mark.parametrize("op", ["add", "mul", "div"])
@pytest.mark.parametrize("F, H", [(64, 1), (64, 4), (64, 8), (128, 16), (6, 1), (6, 3)],
                         ids=["64x1", "64x4", "64x8", "128x16", "6x1", "6x3"])
def test_slot_winner_passes_with_a_block_broadcast_match_plain_loops(dtype, op, F, H):
    """The edge operand a block broadcast, ``(E, H)`` against ``(N, F)`` (one weight per edge, or GAT's
    heads): the forward records slots, the node gradient multiplies (divides) by the edge's value of the
    column's block, and the edge gradient sums each block's terms where the edge won (div: over -w^2);
    against float64 plain loops, with any thread count."""
    from mpgraph.ops._cpu._backend import _csr_slots
    from mpgraph.ops._cpu.scatter import edge_winners, gather_winners

    src, dst, N = slot_graph(200, seed=F + H)
    perm = torch.randperm(src.numel(), generator=torch.Generator().manual_seed(4))
    src, dst = src[perm], dst[perm]
    index = Index.from_coo(src, dst, N, N)
    indptr_c, indices_c, eid_c = index.csc()
    E, B = src.numel(), F // H
    x = rand((N, H, B), dtype, 8).to(dtype)
    w = rand((E, H, 1), dtype, 9, positive=True).to(dtype)
    _, winners, none = K.gspmm(op, "max", indptr_c, indices_c, eid_c, x, w, need_arg="slots")
    assert none is None and winners.dtype == torch.uint8
    winners = winners.reshape(N, F)
    grad = rand((N, F), dtype, 10).to(dtype)
    node, edge = plain_winner_grads(src, dst, index, winners, op, x, w.reshape(E, H), grad)
    indptr_r, dst_r, eid_r = index.csr()
    slot_of = _csr_slots(index, winners.dtype)
    products = op != "add"
    w2 = w.reshape(E, H)
    before = torch.get_num_threads()
    got = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            got.append((gather_winners(indptr_r, dst_r, slot_of, grad, winners, op=op if products else "copy",
                                       eid=eid_r if products else None, other=w2 if products else None),
                        edge_winners(indptr_c, eid_c, grad, winners, op=op if products else "copy",
                                     src=indices_c if products else None, lhs=x.reshape(N, F) if products else None,
                                     rhs=w2 if op == "div" else None, cols=H)))
    finally:
        torch.set_num_threads(before)
    for a, b in zip(got[0], got[1]):
        assert torch.equal(a, b) and a.dtype == dtype
    assert got[0][1].shape == (E, H)
    assert_close(got[0][0], node, dtype)
    assert_close(got[0][1], edge, dtype)
    with pytest.raises(ValueError, match="expected cols dividing"):
        edge_winners(indptr_c, eid_c, grad, winners, cols=F + 1)
    with pytest.raises(ValueError, match="expected eid"):
        gather_winners(indptr_r, dst_r, slot_of, grad, winners, op="mul", eid=eid_r, other=torch.ones(E, F + 1))


#: (dtype, op, max_in, F, cols) of the gather with the edge gradient: each dtype, width and column layout with
#: one of ``OP_SLOTS``, alternating, so each dtype meets both ops (and slot widths) over the widths and layouts,
#: and each width and layout meets both over the dtypes; every case compiles a forward and two or three backward
#: kernels (about 7 s each on a slow machine), and crossing all of them took the largest share of a cold run
EDGE_GRADIENT_CASES = [(dtype, *OP_SLOTS[(i + j + k) % 2], F, cols) for i, dtype in enumerate(DTYPES)
                       for j, F in enumerate([64, 128, 6, 1]) for k, cols in enumerate(["one", "heads", "row"])]


@pytest.mark.parametrize("dtype, op, max_in, F, cols", EDGE_GRADIENT_CASES,
                         ids=[f"{DTYPE_IDS[DTYPES.index(d)]}-{o}-{F}-{c}" for d, o, _, F, c in EDGE_GRADIENT_CASES])
def test_gather_winners_with_the_edge_gradient_in_the_same_pass(dtype, op, F, max_in, cols):
    """``gather_winners(..., lhs=x)`` with one weight per edge (``cols='one'``), GAT's heads (a block
    broadcast: 8 or 4 heads, compiled-in head widths; 3 heads of 2 with a runtime width) or a whole row: the
    node gradient and the edge gradient (``sum [won] grad[v, f] x[u, f]`` over each block's columns, div:
    ``-sum / w^2``; per column for a row) from one pass over the sources' out-edges, against float64 plain
    loops, with any thread count; edges that win nowhere get 0."""
    C = {"one": 1, "heads": {64: 8, 128: 4, 6: 3, 1: 1}[F], "row": F}[cols]
    if cols == "heads" and C == 1:
        pytest.skip("one column has no heads")
    _check_gather_with_edge_gradient(dtype, op, F, max_in, C, cols == "heads")


#: (dtype, op, max_in, F, H): each dtype and head layout with one of ``OP_SLOTS``, alternating (as above)
FOLDED_CASES = [(dtype, *OP_SLOTS[(i + j) % 2], F, H) for i, dtype in enumerate(DTYPES)
                for j, (F, H) in enumerate([(64, 2), (64, 4), (64, 16), (64, 32), (128, 32)])]


@pytest.mark.parametrize("dtype, op, max_in, F, H", FOLDED_CASES,
                         ids=[f"{DTYPE_IDS[DTYPES.index(d)]}-{o}-{F}x{H}" for d, o, _, F, H in FOLDED_CASES])
def test_gather_winners_folded_heads_match_plain_loops(dtype, op, F, H, max_in):
    """GAT's heads, each compiled-in head width on 64 columns: 2, 4 and 16 heads (32, 16 and 4 columns; with
    8 heads of 8, above) take the row loop that folds all heads' terms in halves together; 32 heads of 2 on 64
    columns and of 4 on 128 the per-head sums with one vector of ``-s / w^2``; both gradients against float64
    plain loops, with any thread count."""
    from mpgraph.ops._cpu.scatter import GATHER_HEAD_SEGS, GATHER_VDIV_SEGS, _gather_tree

    assert F // H in GATHER_HEAD_SEGS
    assert _gather_tree(F, F // H) == (F == 64 and H != 32)
    assert (F // H in GATHER_VDIV_SEGS and not _gather_tree(F, F // H)) == (H == 32)
    _check_gather_with_edge_gradient(dtype, op, F, max_in, H, True)


@pytest.mark.parametrize("dtype, op, C", [(F32, "mul", 1), (BF16, "div", 1), (F32, "div", 64), (BF16, "mul", 8)],
                         ids=["f32-mul-one", "bf16-div-one", "f32-div-row", "bf16-mul-heads"])
def test_gather_winners_edge_shape_compiled_in_gives_the_runtime_tested_loops_bits(monkeypatch, dtype, op, C):
    """The row loop of 64 columns compiles in the edge operand's shape (``HK``: one value per edge, a whole row,
    compiled-in heads), which keeps the accumulator in registers; the same loop testing the runtime ``H`` per edge
    (``HK_ANY``) must give the same bits for both gradients, and both match float64 plain loops (above)."""
    from mpgraph.ops._cpu import scatter
    from mpgraph.ops._cpu._backend import _csr_slots

    F, max_in = 64, 200
    src, dst, N = slot_graph(max_in, seed=11)
    index = Index.from_coo(src, dst, N, N)
    indptr_c, indices_c, eid_c = index.csc()
    E = src.numel()
    x = rand((N, F), dtype, 8).to(dtype)
    w = rand((E, C), dtype, 9, positive=True).to(dtype)
    heads = 1 < C < F
    _, winners, _ = K.gspmm(op, "max", indptr_c, indices_c, eid_c, x.reshape(N, C, F // C) if heads else x,
                            w.reshape(E, C, 1) if heads else w, need_arg="slots")
    winners = winners.reshape(N, F)
    grad = rand((N, F), dtype, 10).to(dtype)
    indptr_r, dst_r, eid_r = index.csr()
    slot_of = _csr_slots(index, winners.dtype)
    seen = []
    compiled = scatter._gather_kernel

    def spy(*key):
        seen.append(key[8])
        return compiled(*key)

    def run(kernel):
        monkeypatch.setattr(scatter, "_gather_kernel", kernel)
        out = (scatter.gather_winners(indptr_r, dst_r, slot_of, grad, winners, op=op, eid=eid_r, other=w),
               *scatter.gather_winners(indptr_r, dst_r, slot_of, grad, winners, op=op, eid=eid_r, other=w, lhs=x))
        monkeypatch.setattr(scatter, "_gather_kernel", compiled)
        return out

    fixed = run(spy)
    assert seen == [{1: scatter.HK_ONE, F: scatter.HK_FULL}.get(C, scatter.HK_HEADS)] * 2
    tested = run(lambda *key: compiled(*key[:8], scatter.HK_ANY))
    for a, b in zip(fixed, tested):
        assert _same_bits(a, b)


def _check_gather_with_edge_gradient(dtype, op, F, max_in, C, heads):
    """``gather_winners(..., lhs=x)`` with ``C`` edge columns (``heads``: as GAT's ``(E, C, 1)`` against
    ``(N, C, F // C)`` in the forward) against float64 plain loops, with one and two threads."""
    from mpgraph.ops._cpu._backend import _csr_slots
    from mpgraph.ops._cpu.scatter import gather_winners

    src, dst, N = slot_graph(max_in, seed=F + 7)
    perm = torch.randperm(src.numel(), generator=torch.Generator().manual_seed(3))
    src, dst = src[perm], dst[perm]
    index = Index.from_coo(src, dst, N, N)
    indptr_c, indices_c, eid_c = index.csc()
    E = src.numel()
    x = rand((N, F), dtype, 8).to(dtype)
    w = rand((E, C), dtype, 9, positive=True).to(dtype)
    _, winners, _ = K.gspmm(op, "min", indptr_c, indices_c, eid_c, x.reshape(N, C, F // C) if heads else x,
                            w.reshape(E, C, 1) if heads else w, need_arg="slots")
    winners = winners.reshape(N, F)
    grad = rand((N, F), dtype, 10).to(dtype)
    node, edge = plain_winner_grads(src, dst, index, winners, op, x, w, grad)
    assert bool((edge == 0).any())                 # some edges win nowhere
    indptr_r, dst_r, eid_r = index.csr()
    slot_of = _csr_slots(index, winners.dtype)
    before = torch.get_num_threads()
    got = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            got.append(gather_winners(indptr_r, dst_r, slot_of, grad, winners, op=op, eid=eid_r, other=w, lhs=x))
    finally:
        torch.set_num_threads(before)
    for a, b in zip(got[0], got[1]):
        assert torch.equal(a, b) and a.dtype == dtype
    gx, gw = got[0]
    assert gx.shape == (N, F) and gw.shape == (E, C)
    assert_close(gx, node, dtype)
    assert_close(gw, edge, dtype)
    assert torch.equal(gx, gather_winners(indptr_r, dst_r, slot_of, grad, winners, op=op, eid=eid_r, other=w))
    if dtype in (F64, BF16):
        # an edge gradient of another dtype (the weights' own, float64 here) is a kernel of its own to compile
        # for each pass and dtype (about 4 s each): bfloat16 stands for the 16-bit and float32 operands
        wide = gather_winners(indptr_r, dst_r, slot_of, grad, winners, op=op, eid=eid_r, other=w, lhs=x,
                              edge_dtype=F64)
        assert wide[1].dtype == F64
        assert_close(wide[1], edge, F32 if dtype == F64 else dtype)
    with pytest.raises(ValueError, match="expected eid"):              # F + 1 columns do not divide F
        gather_winners(indptr_r, dst_r, slot_of, grad, winners, op=op, eid=eid_r, other=w[:, :1].repeat(1, F + 1),
                       lhs=x)
    with pytest.raises(ValueError, match="expected lhs"):
        gather_winners(indptr_r, dst_r, slot_of, grad, winners, op=op, eid=eid_r, other=w, lhs=x[:-1])


def test_gather_winners_rejects_bad_input():
    from mpgraph.ops._cpu.scatter import gather_winners

    indptr, indices = torch.tensor([0, 1, 2]), torch.tensor([0, 1])
    slots, grad = torch.zeros(2, dtype=torch.uint8), torch.zeros(2, 3)
    with pytest.raises(TypeError, match="uint8 or int16"):
        gather_winners(indptr, indices, slots, grad, torch.zeros(2, 3, dtype=torch.int32))
    with pytest.raises(TypeError, match="one dtype"):
        gather_winners(indptr, indices, slots.short(), grad, torch.zeros(2, 3, dtype=torch.uint8))
    with pytest.raises(ValueError, match="winners of its shape"):
        gather_winners(indptr, indices, slots, grad, torch.zeros(2, 4, dtype=torch.uint8))
    with pytest.raises(TypeError, match="expected grad"):
        gather_winners(indptr, indices, slots, grad.long(), torch.zeros(2, 3, dtype=torch.uint8))


#: (dtype, max_in, by_dst): each dtype with both slot widths and both edge orders, paired, the pairing
#: alternating between dtypes (edge ids in destination order compile a kernel without ``eid``)
EDGE_WINNER_CASES = [(dtype, max_in, by_dst) for i, dtype in enumerate(DTYPES) for max_in in (200, 300)
                     for by_dst in (True, False) if (i + (max_in == 300) + by_dst) % 2 == 0]


@pytest.mark.parametrize("dtype, max_in, by_dst", EDGE_WINNER_CASES,
                         ids=[f"{DTYPE_IDS[DTYPES.index(d)]}-{'u8' if m == 200 else 'i16'}-"
                              f"{'by_dst' if b else 'shuffled'}" for d, m, b in EDGE_WINNER_CASES])
def test_edge_winners_matches_plain_loop(dtype, max_in, by_dst):
    """The edge operand's gradient from slot winners: grad where the edge's own slot won, else 0 (every
    element written, no fill), in edge-id order; the same as the id-based scatter."""
    from mpgraph.ops._cpu.scatter import edge_winners, scatter_winners

    src, dst, N = slot_graph(max_in, seed=3)
    order = torch.sort(dst, stable=True).indices if by_dst else torch.randperm(
        src.numel(), generator=torch.Generator().manual_seed(1))
    src, dst = src[order], dst[order]                       # edge ids in destination order, or not
    indptr, indices, eid = Index.from_coo(src, dst, N, N).csc()
    E, F = src.numel(), 67
    x = rand((N, F), dtype, 8).to(dtype)
    w = rand((E, F), dtype, 9).to(dtype)
    _, slots, none = K.gspmm("add", "max", indptr, indices, eid, x, w, need_arg="slots")
    assert none is None and slots.dtype == (torch.uint8 if max_in <= 255 else torch.int16)
    grad = rand((N, F), dtype, 10).to(dtype)
    expected = torch.zeros(E, F, dtype=F64)
    for v in range(N):
        for k in range(int(indptr[v]), int(indptr[v + 1])):
            hit = slots[v].long() == k - int(indptr[v])
            expected[int(eid[k])] = torch.where(hit, grad[v].double(), 0.0)
    before = torch.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            results.append(edge_winners(indptr, eid, grad, slots))
    finally:
        torch.set_num_threads(before)
    assert torch.equal(results[0], results[1]) and results[0].dtype == dtype
    assert torch.equal(results[0].double(), expected)          # copies: exact
    assert torch.equal(edge_winners(indptr, eid, grad, slots, op="neg").double(), -expected)   # u_sub_e: -G
    _, _, e_ids = K.gspmm("add", "max", indptr, indices, eid, x, w, need_arg=True)
    assert torch.equal(scatter_winners(e_ids, grad, None, E, F).double(), expected)
    wide = edge_winners(indptr, eid, grad, slots, out_dtype=F64)
    assert wide.dtype == F64 and torch.equal(wide, expected)
    if by_dst:                                              # eid None: slots are edge ids
        assert torch.equal(eid, torch.arange(E))
        assert torch.equal(edge_winners(indptr, None, grad, slots), results[0])


def test_edge_winners_rejects_bad_input():
    from mpgraph.ops._cpu.scatter import edge_winners

    indptr, grad = torch.tensor([0, 1, 2]), torch.zeros(2, 3)
    with pytest.raises(TypeError, match="uint8 or int16"):
        edge_winners(indptr, None, grad, torch.zeros(2, 3, dtype=torch.int32))
    with pytest.raises(ValueError, match="winners of its shape"):
        edge_winners(indptr, None, grad, torch.zeros(2, 4, dtype=torch.uint8))
    with pytest.raises(ValueError, match="eid of 2 elements"):
        edge_winners(indptr, torch.tensor([0, 1, 2]), grad, torch.zeros(2, 3, dtype=torch.uint8))


# ----------------------------------------------------------------------------- split slot winners


def split_hub_graph(seed=0, N=40):
    """:func:`slot_graph` with two hub rows, node 3 (300 in-edges) and node 9 (600, so its slots' high bytes
    run 0 to 2), and node 5 at exactly 255 (not a hub). Returns ``(src, dst, N)`` with edge ids shuffled."""
    gen = torch.Generator().manual_seed(seed)
    src, dst, _ = slot_graph(300, seed=seed, N=N)
    keep = (dst != 9) & (dst != 5)
    src, dst = src[keep], dst[keep]
    src = torch.cat([src, torch.randint(0, N, (600 + 255,), generator=gen)])
    dst = torch.cat([dst, torch.full((600,), 9), torch.full((255,), 5)])
    perm = torch.randperm(src.numel(), generator=gen)
    return src[perm], dst[perm], N


def _hub_tables(index):
    """``(slot_of, hub_ptr, hub_info, hub_row)`` of ``index`` for split slots, as the CPU backend builds them
    (:mod:`mpgraph.ops._cpu._backend`)."""
    from mpgraph.ops._cpu._backend import _gather_slots, _hub_row

    split = torch.zeros(index.num_dst + 2, 1, dtype=torch.uint8)     # any winners with more rows than N
    return _gather_slots(index, split) + (_hub_row(index, split),)


#: (dtype, op, F, H) of the split slots' passes: a copy's compiled-in and runtime widths, an elementwise
#: product (its two passes), one weight per edge, folded heads (8 of 8), per-head sums (32 of 4) and a runtime
#: block broadcast (3 heads of 2); each with one dtype, in turn
SPLIT_CASES = [(DTYPES[i % 4], op, F, H) for i, (op, F, H) in enumerate(
    [("copy", 64, 0), ("copy", 128, 0), ("copy", 5, 0), ("mul", 64, 64), ("div", 6, 6), ("mul", 64, 1),
     ("div", 64, 8), ("mul", 128, 32), ("div", 6, 3), ("add", 64, 0)])]


@pytest.mark.parametrize("dtype, op, F, H", SPLIT_CASES,
                         ids=[f"{DTYPE_IDS[DTYPES.index(d)]}-{o}-{F}x{H}" for d, o, F, H in SPLIT_CASES])
def test_split_slot_winners_give_the_int16_gradients(dtype, op, F, H):
    """``gspmm(..., split_slots=True)`` on rows of more than 255 edges: uint8 winners with one row of high
    bytes per hub row, which joined give the int16 slots; the backward passes read them (with the hub tables)
    and give the gradients of the int16 slots, the same bits for a copy and within the dtype's tolerance where
    fast-math may reorder a product's sums; any thread count."""
    from mpgraph.ops._cpu._backend import _csr_slots
    from mpgraph.ops._cpu.scatter import edge_winners, gather_winners
    from mpgraph.ops._cpu.spmm import hub_in_edges
    from mpgraph.ops._reference import joined_slots, split_hub_rows

    src, dst, N = split_hub_graph(seed=F + H)
    index = Index.from_coo(src, dst, N, N)
    indptr_c, indices_c, eid_c = index.csc()
    E = src.numel()
    x = rand((N, F), dtype, F).to(dtype)
    w = rand((E, H if H else F), dtype, 9, positive=True).to(dtype)
    w[:, 0] = w[7, 0]                                           # ties: the first slot wins
    fop = "copy_lhs" if op == "copy" else op
    operands = (x, None) if op == "copy" else (x, w)
    if 1 <= H < F:                                              # the block broadcast as gspmm takes it
        operands = (x.view(N, H, F // H), w.view(E, H, 1))
    out16, win16, _ = K.gspmm(fop, "max", indptr_c, indices_c, eid_c, *operands, need_arg="slots")
    out8, win8, none = K.gspmm(fop, "max", indptr_c, indices_c, eid_c, *operands, need_arg="slots",
                               split_slots=True)
    # the hub rows and their in-edges as the CPU backend caches them per graph: the same result
    hubs = split_hub_rows(indptr_c)
    cached = K.gspmm(fop, "max", indptr_c, indices_c, eid_c, *operands, need_arg="slots", split_slots=True,
                     hub_rows=hubs, hub_edges=hub_in_edges(indptr_c, indices_c, eid_c, hubs))
    assert torch.equal(cached[0], out8) and torch.equal(cached[1], win8)
    win16, win8 = win16.reshape(-1, F), win8.reshape(-1, F)
    assert win16.dtype == torch.int16 and none is None and torch.equal(out8, out16)
    assert win8.dtype == torch.uint8 and win8.shape == (N + 4, F)
    assert torch.equal(joined_slots(index, win8), win16)
    s8, hub_ptr, hub_info, hub_row = _hub_tables(index)
    assert hub_row.tolist() == [-1] * 3 + [0] + [-1] * 5 + [1] + [-1] * (N - 10)
    assert int(hub_ptr[-1]) == hub_info.numel() == 900 and int((s8 == 255).sum()) == 900
    indptr_r, dst_r, eid_r = index.csr()
    s16 = _csr_slots(index, torch.int16)
    hub_of = dict(hub_ptr=hub_ptr, hub_info=hub_info)
    grad = rand((N, F), dtype, 10).to(dtype)
    products = op in ("mul", "div")
    factor = op if products else "copy"
    edge_kw = dict(op=factor, src=indices_c if products else None, lhs=x if products else None,
                   rhs=w if op == "div" else None, cols=w.shape[1] if products else None)
    node_kw = dict(op=factor, eid=eid_r if products else None, other=w if products else None)
    if products and 1 <= H < F:                                 # the block broadcast: both gradients, one pass
        node_kw.update(lhs=x)
    want = (gather_winners(indptr_r, dst_r, s16, grad, win16, **node_kw),
            edge_winners(indptr_c, eid_c, grad, win16, **edge_kw))
    before = torch.get_num_threads()
    got = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            got.append((gather_winners(indptr_r, dst_r, s8, grad, win8, **hub_of, **node_kw),
                        edge_winners(indptr_c, eid_c, grad, win8, hub_row=hub_row, **edge_kw)))
    finally:
        torch.set_num_threads(before)
    flat = lambda r: r if isinstance(r, tuple) else (r,)       # noqa: E731
    for a, b, c in zip(flat(got[0][0]) + got[0][1:], flat(got[1][0]) + got[1][1:], flat(want[0]) + want[1:]):
        assert torch.equal(a, b)
        if products:
            assert_close(a, c.double(), dtype)
        else:
            assert torch.equal(a, c)
    if products and H == F:                                     # the two-pass route: the picked terms
        edge_kw.update(rhs=w)
        e16, p16 = edge_winners(indptr_c, eid_c, grad, win16, picked=True, **edge_kw)
        e8, p8 = edge_winners(indptr_c, eid_c, grad, win8, picked=True, hub_row=hub_row, **edge_kw)
        assert torch.equal(e8, e16) and torch.equal(p8, p16)
        assert torch.equal(gather_winners(indptr_r, dst_r, s8, p8, win8, **hub_of),
                           gather_winners(indptr_r, dst_r, s16, p16, win16))


#: (dtype, op, reduce) of the forward keeping the edge operand at the winners: each dtype once, both ops and reducers
KEEP_CASES = [(F64, "mul", "max"), (F32, "div", "min"), (F16, "div", "max"), (BF16, "mul", "min")]


@pytest.mark.parametrize("dtype, op, reduce", KEEP_CASES,
                         ids=[f"{DTYPE_IDS[DTYPES.index(d)]}-{o}-{r}" for d, o, r in KEEP_CASES])
def test_rhs_won_holds_the_edge_operand_at_each_winner(dtype, op, reduce):
    """``gspmm(..., rhs_won=)`` with slot winners of an elementwise product: each element of ``rhs_won`` is
    ``rhs`` at the element's winning edge, bit for bit, for rows walked by the register passes (200 columns:
    128 + 64 + a runtime tail of 8; 64) and by the runtime width alone (5), with uint8, split and int16 slots
    (hub rows of 300 and 600 edges); the result and the winners are those of the call without it. Calls that
    keep no values refuse it."""
    from mpgraph.ops._cpu.spmm import keeps_rhs

    src, dst, N = split_hub_graph(seed=3)
    index = Index.from_coo(src, dst, N, N)
    indptr_c, indices_c, eid_c = index.csc()
    E = src.numel()
    for F in (200, 64, 5):
        x = rand((N, F), dtype, F).to(dtype)
        w = rand((E, F), dtype, 9, positive=True).to(dtype)
        w[:, 0] = w[7, 0]                                       # ties: the first slot wins
        _, ids_u, ids_e = K.gspmm(op, reduce, indptr_c, indices_c, eid_c, x, w, need_arg=True)
        has = ids_e >= 0
        expected = w.gather(0, ids_e.clamp(min=0).long())
        assert not has[0].any() and has[3].all() and has[9].all()     # node 0 has no in-edges; the hubs
        for split in (False, True):
            won = torch.empty(N, F, dtype=dtype)
            out, win, none = K.gspmm(op, reduce, indptr_c, indices_c, eid_c, x, w, need_arg="slots",
                                     split_slots=split, rhs_won=won)
            plain = K.gspmm(op, reduce, indptr_c, indices_c, eid_c, x, w, need_arg="slots", split_slots=split)
            assert none is None and torch.equal(out, plain[0]) and torch.equal(win, plain[1])
            assert torch.equal(won[has], expected[has]), (F, split)
    assert keeps_rhs(op, reduce, "slots", x, w)
    assert not keeps_rhs(op, reduce, True, x, w) and not keeps_rhs("add", reduce, "slots", x, w)
    won = torch.empty(N, F, dtype=dtype)
    with pytest.raises(ValueError, match="rhs_won is kept by"):
        K.gspmm("add", reduce, indptr_c, indices_c, eid_c, x, w, need_arg="slots", rhs_won=won)
    with pytest.raises(ValueError, match="rhs_won is kept by"):
        K.gspmm(op, "sum", indptr_c, indices_c, eid_c, x, w, rhs_won=won)
    with pytest.raises(ValueError, match="expected rhs_won"):
        K.gspmm(op, reduce, indptr_c, indices_c, eid_c, x, w, need_arg="slots", rhs_won=won[:-1])
    with pytest.raises(ValueError, match="expected rhs_won"):
        K.gspmm(op, reduce, indptr_c, indices_c, eid_c, x, w, need_arg="slots", rhs_won=won.to(F64 if dtype != F64
                                                                                                   else F32))


def test_split_slot_winners_reject_a_missing_hub_table():
    from mpgraph.ops._cpu.scatter import edge_winners, gather_winners
    from mpgraph.ops._reference import joined_slots

    src, dst, N = split_hub_graph()
    index = Index.from_coo(src, dst, N, N)
    indptr_c, indices_c, eid_c = index.csc()
    x = rand((N, 4), F32, 3).float()
    _, win8, _ = K.gspmm("copy_lhs", "max", indptr_c, indices_c, eid_c, x, None, need_arg="slots", split_slots=True)
    slot_of, hub_ptr, hub_info, hub_row = _hub_tables(index)
    indptr_r, dst_r, _ = index.csr()
    with pytest.raises(ValueError, match="with hub_ptr, torch.int64 of 41 elements"):
        gather_winners(indptr_r, dst_r, slot_of, x, win8)
    with pytest.raises(ValueError, match="with hub_ptr"):
        gather_winners(indptr_r, dst_r, slot_of, x, win8, hub_ptr=hub_ptr[:-1], hub_info=hub_info)
    with pytest.raises(ValueError, match="int64 hub_info of hub_ptr"):
        gather_winners(indptr_r, dst_r, slot_of, x, win8, hub_ptr=hub_ptr, hub_info=hub_info[1:])
    with pytest.raises(ValueError, match="two per hub row, got 43"):
        gather_winners(indptr_r, dst_r, slot_of, x, win8[:-1], hub_ptr=hub_ptr, hub_info=hub_info)
    with pytest.raises(ValueError, match="with hub_row, torch.int32"):
        edge_winners(indptr_c, eid_c, x, win8)
    with pytest.raises(ValueError, match="with hub_row"):
        edge_winners(indptr_c, eid_c, x, win8.short(), hub_row=hub_row)
    with pytest.raises(ValueError, match="split slot winners of 40 \\+ 2 x 2 rows"):
        joined_slots(index, win8[:-1])


# ----------------------------------------------------------------------------- huge-page advice on large outputs


def _vm_flags(address):
    """The ``VmFlags`` of the mapping holding ``address`` in this process (Linux ``/proc/self/smaps``)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and ":" not in head:
                lo, hi = (int(p, 16) for p in head.split("-"))
                inside = lo <= address < hi
            elif inside and line.startswith("VmFlags:"):
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


needs_thp = pytest.mark.skipif(
    not os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled") or os.environ.get("THP_MEM_ALLOC_ENABLE"),
    reason="needs Linux with transparent huge pages, and torch's own THP allocation off")


@needs_thp
def test_large_kernel_outputs_are_advised_as_huge_pages(monkeypatch):
    from mpgraph.ops._cpu import _core

    monkeypatch.delenv("MPGRAPH_HUGE_PAGES", raising=False)
    rows = _core.HUGE_PAGE_MIN_BYTES // (64 * 4) + 4096           # just above the threshold in float32
    indptr = torch.zeros(rows + 1, dtype=torch.int64)             # no edges: every row is empty
    x = torch.ones(3, 64)
    out, _, _ = K.gspmm("copy_lhs", "sum", indptr, torch.zeros(0, dtype=torch.int64), None, x, None)
    assert out.shape == (rows, 64) and not out.any()
    assert "hg" in _vm_flags(out.data_ptr() + out.numel() * 4 // 2)
    small, _, _ = K.gspmm("copy_lhs", "sum", indptr[:101], torch.zeros(0, dtype=torch.int64), None, x, None)
    assert small.shape == (100, 64) and not _core.advise_huge_pages(small)

    monkeypatch.setenv("MPGRAPH_HUGE_PAGES", "0")                 # the documented switch turns it off
    monkeypatch.setenv("MPGRAPH_CPU_CACHE_MB", "0")               # (a cached block may have been advised before)
    assert not _core.huge_pages_enabled()
    off, _, _ = K.gspmm("copy_lhs", "sum", indptr, torch.zeros(0, dtype=torch.int64), None, x, None)
    assert torch.equal(off, out)
    assert "hg" not in _vm_flags(off.data_ptr() + off.numel() * 4 // 2)


def test_huge_page_advice_leaves_small_and_non_linux_buffers_alone(monkeypatch):
    from mpgraph.ops._cpu import _core

    assert not _core.advise_huge_pages(torch.empty(16))           # far below the threshold
    monkeypatch.setattr(_core, "_MADVISE", [None])                # as on a system without madvise
    assert not _core.huge_pages_enabled()
    big = _core.empty_out((_core.HUGE_PAGE_MIN_BYTES // 4 + 1,), torch.float32)
    assert big.shape == (_core.HUGE_PAGE_MIN_BYTES // 4 + 1,) and big.dtype == torch.float32
    assert not _core.advise_huge_pages(big)


_LOCALITY_PROBE = """
import json, torch, mpgraph
g = mpgraph.graph(([0, 1], [1, 2]))
try:
    out, err = mpgraph.ops.copy_u_sum(g, torch.ones(3, 4)).sum().item(), None
    from mpgraph.ops._cpu import _core
    locality, source_hash = _core.PREFETCH_LOCALITY, _core.SOURCE_HASH
except ValueError as e:
    out, err, locality, source_hash = None, f"{type(e).__name__}: {e}", None, None
print(json.dumps({"locality": locality, "hash": source_hash, "out": out, "err": err}))
"""


def test_prefetch_locality_setting_is_compiled_in_and_checked():
    # MPGRAPH_PREFETCH_LOCALITY picks the prefetch hint compiled into every kernel, so it must be part of the
    # kernels' cache key; a value the hint cannot take fails the first op with the setting named, and does not
    # fall back quietly (nor break `import mpgraph`)
    pytest.importorskip("numba")
    from ops._triton_subprocess import records, run_python

    def probe(value):
        env = {} if value is None else {"MPGRAPH_PREFETCH_LOCALITY": value}
        proc = run_python("-c", _LOCALITY_PROBE, drop=("MPGRAPH_PREFETCH_LOCALITY",), timeout=300, **env)
        assert proc.returncode == 0 and records(proc), proc.stderr[-2000:]
        return proc

    default = records(probe(None))[0]
    assert default["locality"] == 2 and default["err"] is None and default["out"] == 8.0
    l1 = records(probe("3"))[0]
    assert l1["locality"] == 3 and l1["hash"] != default["hash"] and l1["out"] == 8.0
    for bad in ("4", "L2", "-1"):
        rec = records(probe(bad))[0]
        assert rec["out"] is None and rec["err"].startswith("SettingError: MPGRAPH_PREFETCH_LOCALITY must be 0, 1, "
                                                            "2 or 3") and repr(bad) in rec["err"], rec


def test_target_vector_registers_follows_numbas_target(monkeypatch):
    """32 vector registers only for an AVX-512 target: the host's features when Numba compiles for the host
    (16 when llvmlite cannot read them), else the named target's feature string."""
    from llvmlite import binding
    from numba.core import config

    from mpgraph.ops._cpu._core import target_vector_registers

    monkeypatch.setattr(config, "CPU_NAME", None)
    monkeypatch.setattr(config, "CPU_FEATURES", None)
    host = 32 if binding.get_host_cpu_features().get("avx512f", False) else 16
    assert target_vector_registers() == host

    def unreadable():
        raise RuntimeError("no host features here")

    monkeypatch.setattr(binding, "get_host_cpu_features", unreadable)
    assert target_vector_registers() == 16
    monkeypatch.setattr(config, "CPU_NAME", "generic")
    assert target_vector_registers() == 16
    monkeypatch.setattr(config, "CPU_FEATURES", "+sse2,+avx2,+avx512f,+avx512bw")
    assert target_vector_registers() == 32
    for features in ("+sse2,+avx2,-avx512f", "+avx2,+avx512fp16", ""):
        monkeypatch.setattr(config, "CPU_FEATURES", features)
        assert target_vector_registers() == 16


@pytest.mark.parametrize("op,reduce,rhs_cols", [("copy_lhs", "sum", 0), ("copy_lhs", "mean", 0), ("copy_lhs", "max", 0),
                                                ("copy_lhs", "min", 0), ("mul", "sum", 1), ("div", "min", 4),
                                                ("add", "max", 1), ("sub", "max", 4)])
def test_bf16_paired_loads_equal_fp32_sums_of_the_upcasts(op, reduce, rhs_cols):
    """bfloat16 rows read two columns per 32-bit load in the fixed-width passes (ev/od accumulators). Each
    column still sums the exact fp32 upcasts in edge order and rounds once, so the result must equal, bit for
    bit, the fp32 kernel on the upcasts rounded to bfloat16: the columns' interleaving, signed zeros, inf and
    NaN included. Widths: two 128-column passes (256), 128 + 64 + a 2-column tail (194), an odd tail (67).
    Max/min also run keeping the winners (ids and slots) on integer-valued rows, where ties are common: each
    column must pick the winner the fp32 kernel picks (the first in slot order)."""
    gen = torch.Generator().manual_seed(3)
    N, E = 300, 5000
    src, dst = torch.randint(0, N, (E,), generator=gen), torch.randint(0, N, (E,), generator=gen)
    dst[:400] = 7                                          # a hub row
    indptr, indices, eid = Index.from_coo(src, dst, N + 3, N + 3).csc()    # 3 rows without edges
    for F in (256, 194, 67):
        H = rhs_cols or 1
        x = (torch.randn(N + 3, F, generator=gen) * 4).bfloat16()
        x[0, :3] = torch.tensor([float("nan"), float("inf"), -0.0])
        x[1, 1::2] = -0.0                                  # odd columns: the upper half of each 32-bit pair
        if F % H:
            continue
        rhs = None if not rhs_cols else (torch.rand(E, H, 1, generator=gen) + 0.5).bfloat16()
        if rhs_cols:
            x = x.view(N + 3, H, F // H)                   # GAT-like heads: one value per edge and head
        for need_arg in (False, True, "slots") if reduce in ("max", "min") else (False,):
            xs = x if not need_arg else x.float().round().bfloat16()   # ties: the first in slot order wins
            got = K.gspmm(op, reduce, indptr, indices, eid, xs, rhs, need_arg=need_arg)
            ref = K.gspmm(op, reduce, indptr, indices, eid, xs.float(), None if rhs is None else rhs.float(),
                          need_arg=need_arg)
            want = ref[0].bfloat16()
            nan = torch.isnan(want)
            assert got[0].dtype == BF16
            assert torch.equal(torch.isnan(got[0]), nan), (F, op, reduce, need_arg)    # NaN payloads may differ
            assert torch.equal(got[0].view(torch.int16)[~nan], want.view(torch.int16)[~nan]), (F, op, reduce)
            if need_arg:
                assert got[1] is not None and torch.equal(got[1], ref[1]), (F, op, reduce, need_arg)
                assert (got[2] is None) == (ref[2] is None), (F, op, reduce, need_arg)
                assert got[2] is None or torch.equal(got[2], ref[2]), (F, op, reduce, need_arg)
