"""gSDDMM on the CPU: one value per edge from its endpoints' and its own features.

.. math::

    \\mathrm{out}[e] = \\phi(X[t_l(e)], Y[t_r(e)]), \\qquad t(e) \\in \\{u, v, e\\}

Edges are walked row by row of a compressed structure (``Index.csc()``: rows are
destinations), so the destination operand is loaded once per row and stays in
cache while the source rows are gathered; results are written at the edge id.
``dot`` reduces the last feature dimension in registers (fp32 accumulation, no
``E x D`` intermediate).
"""

import functools

import numpy as np
import torch
from numba import njit

from ._core import (SOURCE_HASH, STREAM_WIDTHS, acc_zero, atomic_fetch_add, borrow, cached_njit, chunk_bounds, edge_of,
                    empty_out, fold_adjacent, index_view, kernel_view, load, load_run, mul_run, num_threads, prefetch,
                    raw_get, run_parallel, stack_acc, store, store_copied, store_fence, store_run, store_run_nt,
                    streams)
from ._layout import (LHS_BLOCK, RHS_BLOCK, SAME, broadcast_layout, check_float, check_index, check_out_dtype,
                      leading_offsets, needs_fp64_pass)
from ._ops import SDDMM_OPS, binop, divides_square, is_dot, uses_lhs, uses_rhs

#: default software-prefetch distance in edges (0 disables)
PREFETCH_DISTANCE = 16

TARGETS = {"u": 0, "e": 1, "v": 2}
_U, _E, _V = 0, 1, 2


@njit
def _pick(target, s, ek, r):
    return s if target == _U else (ek if target == _E else r)


@njit(inline="always")
def _scalar_rows(op, c, bounds, indptr, indices, eid, lhs, rhs, out, lhs_target, rhs_target):
    """Rows ``bounds[c] : bounds[c + 1]`` of an elementwise op (or copy) with one value per edge (GAT's logits
    ``u_add_v`` of one head): no loop over features and no prefetch, as a node operand of one value per node
    is small and stays in cache. The general edge body took 4.6-5.3 ms against 1.1 ms for this on the guide's
    GAT graph (1.14M edges, fp32; fortieth session)."""
    use_eid = eid.size > 0
    for r in range(raw_get(bounds, c), raw_get(bounds, c + 1)):
        for k in range(raw_get(indptr, r), raw_get(indptr, r + 1)):
            s = raw_get(indices, k)
            ek = edge_of(eid, use_eid, k)
            if not uses_lhs(op):
                store_copied(out, ek, load(rhs, _pick(rhs_target, s, ek, r)), rhs)
            elif not uses_rhs(op):
                store_copied(out, ek, load(lhs, _pick(lhs_target, s, ek, r)), lhs)
            else:
                a = load(lhs, _pick(lhs_target, s, ek, r))
                store(out, ek, binop(op, a, load(rhs, _pick(rhs_target, s, ek, r))))


@njit(fastmath={"reassoc", "contract"})
def _sddmm_chunk(op, post, c, bounds, indptr, indices, eid, lhs, rhs, divisor, out, lhs_target, rhs_target,
                 layout, F, Fl, Fr, B, D, lhs_off, rhs_off, pf_dist, pf_lhs, pf_rhs, pf_step_l, pf_step_r):
    """Edges of rows ``bounds[c] : bounds[c + 1]``; ``post == 'neg_div_sq'`` (elementwise layout only) stores
    ``-(a op b) / divisor[e]**2`` instead of ``a op b``."""
    E_end = raw_get(indptr, indptr.size - 1)
    use_eid = eid.size > 0
    zero = acc_zero(out)
    if not is_dot(op) and not divides_square(post) and F == 1 and Fl <= 1 and Fr <= 1:
        _scalar_rows(op, c, bounds, indptr, indices, eid, lhs, rhs, out, lhs_target, rhs_target)
        return
    for r in range(raw_get(bounds, c), raw_get(bounds, c + 1)):
        for k in range(raw_get(indptr, r), raw_get(indptr, r + 1)):
            if pf_dist > 0:  # gathered (source-node) operand rows pf_dist edges ahead
                kp = k + pf_dist
                if kp < E_end:
                    sp = raw_get(indices, kp)
                    for t in range(pf_lhs):
                        prefetch(lhs, sp * Fl + t * pf_step_l)
                    for t in range(pf_rhs):
                        prefetch(rhs, sp * Fr + t * pf_step_r)
            s = raw_get(indices, k)
            ek = edge_of(eid, use_eid, k)
            lb = _pick(lhs_target, s, ek, r) * Fl
            rb = _pick(rhs_target, s, ek, r) * Fr
            ob = ek * F
            if is_dot(op):  # [F, D] . [F, D] -> [F]; offsets index the leading dims
                for h in range(F):
                    la = lb + raw_get(lhs_off, h) * D
                    ra = rb + raw_get(rhs_off, h) * D
                    acc = zero
                    for d in range(D):
                        acc += load(lhs, la + d) * load(rhs, ra + d)
                    store(out, ob + h, acc)
            elif not uses_lhs(op):     # copy_rhs (always SAME): elements stored as they are
                for j in range(F):
                    store_copied(out, ob + j, load(rhs, rb + j), rhs)
            elif not uses_rhs(op):     # copy_lhs
                for j in range(F):
                    store_copied(out, ob + j, load(lhs, lb + j), lhs)
            elif layout == SAME:
                for j in range(F):
                    a = load(lhs, lb + j)
                    b = load(rhs, rb + j)
                    if divides_square(post):   # d (l / r) / d r = -l / r^2, with l = x[u] * G[v] here
                        w = load(divisor, ob + j)
                        store(out, ob + j, binop("div", -binop(op, a, b), w * w))
                    else:
                        store(out, ob + j, binop(op, a, b))
            elif layout == RHS_BLOCK:
                for h in range(Fr):
                    b = load(rhs, rb + h)
                    for d in range(B):
                        store(out, ob + h * B + d, binop(op, load(lhs, lb + h * B + d), b))
            elif layout == LHS_BLOCK:
                for h in range(Fl):
                    a = load(lhs, lb + h)
                    for d in range(B):
                        store(out, ob + h * B + d, binop(op, a, load(rhs, rb + h * B + d)))
            else:
                for j in range(F):
                    a = load(lhs, lb + raw_get(lhs_off, j))
                    b = load(rhs, rb + raw_get(rhs_off, j))
                    store(out, ob + j, binop(op, a, b))


#: row widths ``W = H * D`` with a register kernel for ``dot`` of operands of one feature shape ``(H, D)``
#: (:func:`dot_kernel`; ``D`` and ``H`` powers of two, ``H >= 2``)
DOT_WIDTHS = (32, 64, 128)


def dot_key(fl, fr, lhs, rhs):
    """``(W, D)`` of :func:`dot_kernel` for a ``dot`` of feature shapes ``fl`` and ``fr``, or None: one shape
    (no broadcast), ``W`` elements a row in :data:`DOT_WIDTHS`, ``D`` (the last dimension) a power of two below
    ``W`` (two heads or more), and both operands in one dtype. One head keeps the general body, whose single dot
    is already one vector reduction: the register kernel took 0.90-0.95x its time at D = 64 and 0.95-1.15x at
    D = 128 (fp32, bf16; ``benchmarks/dot_rows.py``, forty-fifth session)."""
    if fl != fr or len(fl) == 0 or lhs.dtype != rhs.dtype:
        return None
    W, D = int(np.prod(fl, dtype=np.int64)), int(fl[-1])
    if W not in DOT_WIDTHS or D <= 0 or D & (D - 1) or D == W:
        return None
    return W, D


@functools.lru_cache(maxsize=None)
def dot_kernel(W, D):
    """``dot`` of rows of ``W = H * D`` elements in ``H`` heads of ``D`` (both compile-time constants): each edge's
    two rows load as vectors (:func:`._core.load_run`), their products fold by adjacent pairs into the ``H`` dots
    (:func:`._core.fold_adjacent`), stored as one vector (:func:`._core.store_run`). The general edge body loops
    over runtime heads and ``D``, with offsets read per head, and ends each dot in a horizontal sum and a scalar
    store. Measured against that body (``benchmarks/dot_rows.py``, round-robin in one process, uniform graph, 2M
    edges, 2 threads, Zen 4, forty-fifth session, ``benchmarks/results/dot_rows_s45.jsonl``), ``u_dot_v``: 8 heads
    of 8 0.41-0.72x (fp32, bf16, fp16), 16 heads of 4 0.14-0.30x, 4 of 16 0.65-0.69x, 2 of 32 0.68-0.84x, 4 of 32
    0.59-0.93x; ``u_dot_e`` (the edge's own row) 8 of 8 and 4 of 16 0.47-0.70x in bf16, 1.03-1.06x in fp32."""
    H = W // D

    @njit(inline="always", fastmath={"reassoc", "contract"})
    def body(a, b, out, ek):
        mul_run(a, a, b, W)
        fold_adjacent(a, W, H)
        store_run(out, ek * H, a, H)

    return _row_pair_kernel(W, body, False)


def _row_pair_kernel(W, body, stream):
    """The edge loop of the register kernels (:func:`dot_kernel`, :func:`streaming_kernel`): for each edge, its two
    operand rows of ``W`` elements (a compile-time constant) load as vectors (:func:`._core.load_run`) into ``a``
    and ``b``, and ``body(a, b, out, ek)`` writes the edge's result; ``stream``: ``body`` writes with streaming
    stores, fenced when the thread's work ends (:func:`._core.store_fence`)."""
    source_hash = SOURCE_HASH  # part of Numba's cache key (see _core._source_hash)

    @cached_njit(nogil=True, fastmath={"reassoc", "contract"}, error_model="numpy")
    def kernel(counter, bounds, indptr, indices, eid, lhs, rhs, out, lhs_target, rhs_target, pf_dist, pf_lhs,
               pf_rhs, pf_step_l, pf_step_r):
        _ = source_hash
        indptr, indices, eid, lhs, rhs, out = (borrow(indptr), borrow(indices), borrow(eid), borrow(lhs),
                                                borrow(rhs), borrow(out))
        a = stack_acc(out, W)
        b = stack_acc(out, W)
        E_end = raw_get(indptr, indptr.size - 1)
        use_eid = eid.size > 0
        c = atomic_fetch_add(counter, 0, 1)
        while c < bounds.size - 1:
            for r in range(raw_get(bounds, c), raw_get(bounds, c + 1)):
                for k in range(raw_get(indptr, r), raw_get(indptr, r + 1)):
                    if pf_dist > 0 and k + pf_dist < E_end:   # gathered (source-node) rows pf_dist edges ahead
                        sp = raw_get(indices, k + pf_dist) * W
                        for t in range(pf_lhs):
                            prefetch(lhs, sp + t * pf_step_l)
                        for t in range(pf_rhs):
                            prefetch(rhs, sp + t * pf_step_r)
                    s = raw_get(indices, k)
                    ek = edge_of(eid, use_eid, k)
                    load_run(lhs, _pick(lhs_target, s, ek, r) * W, a, W)
                    load_run(rhs, _pick(rhs_target, s, ek, r) * W, b, W)
                    body(a, b, out, ek)
            c = atomic_fetch_add(counter, 0, 1)
        if stream:          # (compile-time) this thread's streaming stores visible before the pass ends
            store_fence()

    return kernel


def streaming_width(op, fl, fr, layout, out, neg_div_square, nontemporal=None, operands=()):
    """The row width with which :func:`gsddmm` writes its result through :func:`streaming_kernel`, or 0: an
    elementwise op (add/sub/mul/div) on operands of one feature shape of ``W`` elements (:data:`STREAM_WIDTHS`),
    without ``neg_div_square``, whose result :func:`._core.streams` (``nontemporal`` as there). A float64 result
    of narrower ``operands`` (the float64 pass) keeps the general body, which computes in the operands' float32."""
    if op not in ("add", "sub", "mul", "div") or layout != SAME or fl != fr or neg_div_square is not None:
        return 0
    if out.dtype == torch.float64 and any(t.dtype != torch.float64 for t in operands):
        return 0
    W = int(np.prod(fl, dtype=np.int64))
    return W if streams(out, W, nontemporal, widths=STREAM_WIDTHS) else 0


@functools.lru_cache(maxsize=None)
def streaming_kernel(op, W):
    """An elementwise ``op`` of two rows of ``W`` elements (a compile-time constant) per edge, its result row
    written with streaming stores (:func:`._core.store_run_nt`): each edge's operand rows load as vectors
    (:func:`._core.load_run`), ``op`` runs on them in the accumulator type and the row is rounded once, as the
    general edge body does (the same bits). A result larger than the caches, written row by row at edge ids
    (random order), costs a plain store one read of each line before its write; streaming stores skip that read.
    A scratch kernel writing 2M rows of 64 float32 at random rows (512 MB) took 0.67x the plain stores' time
    (45 against 67 ms; 0.79x in row order), forty-eighth session."""
    @njit(inline="always", fastmath={"reassoc", "contract"}, error_model="numpy")
    def body(a, b, out, ek):
        for j in range(W):
            a[j] = binop(op, a[j], b[j])
        store_run_nt(out, ek * W, a, W)

    return _row_pair_kernel(W, body, True)


@functools.lru_cache(maxsize=None)
def sddmm_kernel(op, post="none"):
    """The compiled gSDDMM kernel for one ``op`` and epilogue ``post`` (``'none'`` or ``'neg_div_sq'``);
    dtypes specialise on first call.

    The edge loop is compiled with ``fastmath={'reassoc', 'contract'}`` so the fp32 dot
    over ``D`` vectorises (several fp32 partial sums, fused multiply-adds); no flag that
    changes inf/NaN handling is used.
    """
    source_hash = SOURCE_HASH  # part of Numba's cache key (see _core._source_hash)

    @cached_njit(nogil=True)
    def kernel(counter, bounds, indptr, indices, eid, lhs, rhs, divisor, out, lhs_target, rhs_target,
               layout, F, Fl, Fr, B, D, lhs_off, rhs_off, pf_dist, pf_lhs, pf_rhs, pf_step_l, pf_step_r):
        _ = source_hash
        nchunks = bounds.size - 1
        indptr, indices, eid, lhs, rhs = borrow(indptr), borrow(indices), borrow(eid), borrow(lhs), borrow(rhs)
        out, lhs_off, rhs_off, divisor = borrow(out), borrow(lhs_off), borrow(rhs_off), borrow(divisor)
        c = atomic_fetch_add(counter, 0, 1)
        while c < nchunks:
            _sddmm_chunk(op, post, c, bounds, indptr, indices, eid, lhs, rhs, divisor, out, lhs_target, rhs_target,
                         layout, F, Fl, Fr, B, D, lhs_off, rhs_off, pf_dist, pf_lhs, pf_rhs, pf_step_l, pf_step_r)
            c = atomic_fetch_add(counter, 0, 1)

    return kernel


def gsddmm(op, indptr, indices, eid, lhs, rhs, lhs_target="u", rhs_target="v", *, out_dtype=None,
           prefetch_distance=None, neg_div_square=None, fast_dot=True, nontemporal=None):
    """Generalised SDDMM over the edges of a compressed structure, on raw tensors.

    .. math::

        \\mathrm{out}[\\mathrm{eid}[k]] = \\phi(\\mathrm{lhs}[t_l(k)], \\mathrm{rhs}[t_r(k)]),
        \\quad t(k) = \\mathrm{indices}[k]\\ (u),\\ r\\ (v),\\ \\mathrm{eid}[k]\\ (e)

    for every slot ``k`` of row ``r``.

    Parameters
    ----------
    op : {'add', 'sub', 'mul', 'div', 'dot', 'copy_lhs', 'copy_rhs'}
    indptr : Tensor, int64, ``(N_dst + 1,)``
        ``Index.csc()[0]``: in-edges grouped by destination ``v``.
    indices : Tensor, int64, ``(E,)``
        Source node ``u`` of each slot (``Index.csc()[1]``).
    eid : Tensor, int64, ``(E,)``, or None
        Edge id of each slot (``Index.csc()[2]``); None means the identity.
    lhs, rhs : Tensor ``(N_u or N_v or E, *F)``
        Operands (float64/float32/float16/bfloat16), rows picked by ``lhs_target`` and
        ``rhs_target``; ignored (may be None) when ``op`` does not read them.
    lhs_target, rhs_target : {'u', 'v', 'e'}
        Defaults ``'u'`` and ``'v'`` (``u_dot_v`` and friends).
    out_dtype : torch.dtype, optional
        Dtype of the result (default: the promoted operand dtype); accumulation is fp64 when the
        result or an operand is fp64, else fp32.
    prefetch_distance : int, optional
        Software prefetch distance in edges for operands gathered by ``u`` (0 disables).
    fast_dot : bool, default True
        ``dot`` of operands of one feature shape whose rows hold 32, 64 or 128 elements in heads of a power of two
        takes the register kernel :func:`dot_kernel`; False keeps the general edge body (for comparisons).
    nontemporal : bool, optional
        Whether an elementwise op writes its result with streaming stores (:func:`streaming_kernel`, where
        :func:`streaming_width` allows): None (default) for results larger than the L3, True whenever the rows
        allow, False never (the general edge body; for comparisons).
    neg_div_square : Tensor ``(E, *Fo)``, optional
        An edge operand in edge-ID order, of the result's shape: the result is then
        ``-phi(...) / neg_div_square[e] ** 2``, all in the accumulator type and rounded once
        (the ``u_div_e`` edge gradient ``-x[u] * G[v] / w[e] ** 2`` in one pass). Elementwise
        ops whose operands do not broadcast only.

    Returns
    -------
    out : Tensor ``(E, *Fo)``
        In ``out_dtype``. Elementwise ops broadcast the feature shapes like
        numpy; ``dot`` reduces the last dimension and keeps it as size 1:
        ``(H, D)`` dot ``(H, D)`` gives ``(H, 1)``, ``(D,)`` dot ``(D,)`` gives ``(1,)``.
        ``dot`` accumulates in fp32 (fp64 for fp64) and rounds once.

    Raises
    ------
    ValueError
        Unknown ``op`` or target, mismatched dot lengths, shapes that do not broadcast.
    TypeError
        Unsupported dtypes or devices.

    Notes
    -----
    Structure contents are trusted, as in :func:`.gspmm`.
    """
    if op not in SDDMM_OPS:
        raise ValueError(f"expected op in {SDDMM_OPS}, got {op!r}")
    for name, t in (("lhs_target", lhs_target), ("rhs_target", rhs_target)):
        if t not in TARGETS:
            raise ValueError(f"expected {name} in ('u', 'v', 'e'), got {t!r}")
    check_index("indptr", indptr)
    check_index("indices", indices)
    if eid is not None:
        check_index("eid", eid)
    E = indices.numel()
    if indptr.numel() == 0 or int(indptr[-1]) != E or int(indptr[0]) != 0:
        raise ValueError(f"expected indptr from 0 to len(indices) = {E}, got indptr of {indptr.numel()} elements "
                         f"ending at {int(indptr[-1]) if indptr.numel() else None}")
    if op != "copy_rhs":
        check_float("lhs", lhs)
    if op != "copy_lhs":
        check_float("rhs", rhs)
    check_out_dtype(out_dtype)
    if neg_div_square is not None:
        check_float("neg_div_square", neg_div_square)
    if needs_fp64_pass(out_dtype, lhs, rhs, neg_div_square):
        return gsddmm(op, indptr, indices, eid, lhs, rhs, lhs_target, rhs_target, out_dtype=torch.float64,
                      prefetch_distance=prefetch_distance, neg_div_square=neg_div_square,
                      fast_dot=fast_dot, nontemporal=nontemporal).to(out_dtype)
    if lhs is None:
        lhs = rhs[:0]
    if rhs is None:
        rhs = lhs[:0]
    fl, fr = tuple(lhs.shape[1:]), tuple(rhs.shape[1:])
    lhs_off = rhs_off = None
    layout, B, D = SAME, 1, 1
    if op == "dot":
        if len(fl) == 0 or len(fr) == 0 or fl[-1] != fr[-1]:
            raise ValueError(f"expected dot operands with the same last dimension, got feature shapes {fl} and {fr}")
        lead, lhs_off, rhs_off = leading_offsets(fl[:-1], fr[:-1])
        out_shape, D = lead + (1,), int(fl[-1])
        dtype = torch.promote_types(lhs.dtype, rhs.dtype)
    elif op == "copy_lhs":
        out_shape, dtype = fl, lhs.dtype
    elif op == "copy_rhs":
        out_shape, dtype = fr, rhs.dtype
    else:
        out_shape, layout, B, lhs_off, rhs_off = broadcast_layout(fl, fr)
        dtype = torch.promote_types(lhs.dtype, rhs.dtype)
    if neg_div_square is not None:
        if op in ("dot", "copy_lhs", "copy_rhs") or layout != SAME or fl != fr:
            raise ValueError(f"neg_div_square needs an elementwise op on operands of one feature shape, got op "
                             f"{op!r} on feature shapes {fl} and {fr}")
        if tuple(neg_div_square.shape) != (E,) + tuple(out_shape):
            raise ValueError(f"expected neg_div_square of shape {(E,) + tuple(out_shape)} (one row per edge, the "
                             f"result's features), got {tuple(neg_div_square.shape)}")
    out = empty_out((E,) + tuple(out_shape), out_dtype or dtype)
    F = int(np.prod(out_shape, dtype=np.int64))  # for dot: one output per leading index
    if E == 0 or F == 0:
        return out
    lhs_np = kernel_view(lhs.contiguous())
    rhs_np = kernel_view(rhs.contiguous())
    Fl = int(np.prod(fl, dtype=np.int64))
    Fr = int(np.prod(fr, dtype=np.int64))
    indptr_np = index_view(indptr.contiguous())
    nthreads = num_threads(E * max(F, Fl, Fr))
    bounds = chunk_bounds(indptr_np, nthreads)
    pf = PREFETCH_DISTANCE if prefetch_distance is None else int(prefetch_distance)
    pf_lhs = (Fl * lhs_np.itemsize + 63) // 64 if lhs_target == "u" and op != "copy_rhs" else 0
    pf_rhs = (Fr * rhs_np.itemsize + 63) // 64 if rhs_target == "u" and op != "copy_lhs" else 0
    if pf_lhs == 0 and pf_rhs == 0:
        pf = 0
    key = dot_key(fl, fr, lhs, rhs) if op == "dot" and fast_dot else None
    W = 0 if key is not None else streaming_width(op, fl, fr, layout, out, neg_div_square, nontemporal, (lhs, rhs))
    if key is not None or W:        # one row pair per edge (_row_pair_kernel): a dot or a streamed elementwise op
        run_parallel(dot_kernel(*key) if key is not None else streaming_kernel(op, W), nthreads, bounds, indptr_np,
                     index_view(indices.contiguous()), index_view(eid.contiguous() if eid is not None else None),
                     lhs_np, rhs_np, kernel_view(out), TARGETS[lhs_target], TARGETS[rhs_target], pf, pf_lhs, pf_rhs,
                     64 // lhs_np.itemsize, 64 // rhs_np.itemsize)
        return out
    post = "none" if neg_div_square is None else "neg_div_sq"
    divisor = kernel_view((rhs if neg_div_square is None else neg_div_square).contiguous())
    run_parallel(sddmm_kernel(op, post), nthreads, bounds, indptr_np, index_view(indices.contiguous()),
                 index_view(eid.contiguous() if eid is not None else None), lhs_np, rhs_np, divisor, kernel_view(out),
                 TARGETS[lhs_target], TARGETS[rhs_target], layout, F, Fl, Fr, B, D,
                 index_view(lhs_off), index_view(rhs_off), pf, pf_lhs, pf_rhs,
                 64 // lhs_np.itemsize, 64 // rhs_np.itemsize)
    return out
