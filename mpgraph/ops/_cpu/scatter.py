"""The backward of gSpMM max/min on the CPU: scatter-add to winners, or gather by slot winners.

For every element ``(r, f)`` of a max/min result the gradient goes to the one input element that
won: ``out[winner[r, f] * cols + pos[f]] += coef[r, f]``, skipping ``winner < 0`` (rows without
edges). One pass, no ``(R, F)`` index tensors. Threads take disjoint blocks of columns ``f``: with
``pos`` the identity, different columns write different output elements, so no two threads ever
write the same place and no atomics are needed; a broadcast ``pos`` (several ``f`` reading one
column) runs on one thread. Winners are int32 or int64 (as the forward recorded them); ``coef`` may be
16-bit (read and widened in the pass, no float32 copy). Accumulation is in ``coef``'s accumulator dtype
(float32, float64 for float64), which is the result's; each output element receives its contributions in
row order, so results do not depend on the thread count.

The writes land on random rows, so the pass is bound by their latency: it reads and writes through raw
pointers (no index checks), takes blocks of up to 64 columns (as wide as still gives every thread a
block), and prefetches the output elements of the row :data:`PREFETCH_ROWS` ahead.

:func:`gather_winners` is the other form, for the node operand of ``copy_u``/``u_add_e``/``u_sub_e``
max/min whose forward recorded *slot winners* (``gspmm(..., need_arg='slots')``: the winning edge's
offset within its destination's in-edges, 8 or 16 bits). It walks the out-edges of each source ``u``
and adds ``G[v, f]`` where ``v``'s winner at ``f`` is this very edge: whole rows of ``G`` and of the
winners are read (contiguous, prefetched ahead) instead of single elements written to random rows,
each result row is written once by one thread (no zero fill, no atomics), and each edge is matched by
its slot, so parallel edges ``u -> v`` are told apart. Per edge it reads a row of ``G`` and a row of
1-byte or 2-byte winners: 1.5x the forward's bytes in bf16 with uint8. A graph whose longest row has 256 to
32767 edges needs 2-byte slots, though in a power-law graph few rows do: there the forward records *split
slots* (``gspmm(..., split_slots=True)``), 1 byte for every row and a second byte for the hub rows only, kept
apart, so the backward reads 1-byte rows except for the edges into hub rows (2 % of the 10M-edge benchmark
graph's edges).
:func:`edge_winners` gives the edge operand's gradient from the same slots (``copy_e``, ``u_add_e``,
``u_sub_e``): one pass over each destination's in-edges writes every edge's row once, ``G`` where the
edge's slot won and 0 elsewhere, so it needs neither a zero fill nor a scatter either.
"""

import functools

import numpy as np
import torch
from numba import njit, types
from numba.extending import overload

from ...precision import accum_dtype
from ._core import (FLOAT_DTYPES, SOURCE_HASH, STREAM_WIDTHS, acc_zero, alloc_acc, atomic_fetch_add, borrow,
                    cached_njit, chunk_bounds, div_grad_run, edge_of, empty_out, fold_adjacent, index_view, kernel_view,
                    line_elems, load, load_run, num_threads, prefetch, raw_get, raw_set, recip_run, run_parallel,
                    select, stack_acc, store, store_copied, store_fence, store_run, store_run_nt, streams, to_acc)
from ._layout import check_float, check_index, check_out_dtype

__all__ = ["scatter_winners", "pick_winners", "gather_winners", "edge_winners", "GATHER_PREFETCH", "EDGE_OPS"]

#: columns per work chunk: at least 16 (one 64-byte line of fp32), at most 64, and at most F / threads
MIN_COLUMN_BLOCK, MAX_COLUMN_BLOCK = 16, 64
#: rows ahead whose output elements are prefetched (0 disables)
PREFETCH_ROWS = 8


@functools.cache
def _kernel():
    source_hash = SOURCE_HASH  # part of Numba's cache key (see _core._source_hash)

    @cached_njit(nogil=True)
    def kernel(counter, out, winner, coef, pos, R, F, cols, identity, width, pf_rows):
        _ = source_hash
        out, winner, coef, pos = borrow(out), borrow(winner), borrow(coef), borrow(pos)
        nchunks = (F + width - 1) // width
        c = atomic_fetch_add(counter, 0, 1)
        while c < nchunks:
            f0 = c * width
            f1 = min(F, f0 + width)
            for r in range(R):
                base = r * F
                if pf_rows > 0 and r + pf_rows < R:     # the elements row r + pf_rows will update
                    ahead = base + pf_rows * F
                    for f in range(f0, f1):
                        wp = raw_get(winner, ahead + f)
                        if wp >= 0:
                            prefetch(out, wp * cols + (f if identity else raw_get(pos, f)))
                for f in range(f0, f1):
                    w = raw_get(winner, base + f)
                    if w >= 0:
                        i = w * cols + (f if identity else raw_get(pos, f))
                        raw_set(out, i, raw_get(out, i) + load(coef, base + f))
            c = atomic_fetch_add(counter, 0, 1)

    return kernel


#: rows per work chunk of the passes split by rows (the scatter with ``disjoint_rows``, :func:`pick_winners`)
ROW_CHUNK = 1024


@functools.cache
def _row_kernel(pick):
    """Rows split among threads, each element ``(r, f)`` at its winner ``w`` and column ``c = pos[f]``:
    ``pick`` reads ``out[r, f] = vals[w, c]`` (0 where ``w < 0``), else the scatter adds
    ``out[w, c] += vals[r, f]`` (race-free only when rows never share a winner)."""
    source_hash = SOURCE_HASH  # part of Numba's cache key (see _core._source_hash)

    @cached_njit(nogil=True)
    def kernel(counter, out, winner, vals, pos, R, F, cols, identity):
        _ = source_hash
        out, winner, vals, pos = borrow(out), borrow(winner), borrow(vals), borrow(pos)
        zero = acc_zero(out)
        c = atomic_fetch_add(counter, 0, 1)
        while c * ROW_CHUNK < R:
            for r in range(c * ROW_CHUNK, min(R, (c + 1) * ROW_CHUNK)):
                base = r * F
                for f in range(F):
                    w = raw_get(winner, base + f)
                    col = f if identity else raw_get(pos, f)
                    if pick:
                        v = zero
                        if w >= 0:
                            v = to_acc(out, load(vals, w * cols + col))
                        store(out, base + f, v)
                    elif w >= 0:
                        raw_set(out, w * cols + col, raw_get(out, w * cols + col) + load(vals, base + f))
            c = atomic_fetch_add(counter, 0, 1)

    return kernel


def scatter_winners(winner, coef, pos, rows, cols, disjoint_rows=False):
    """``out[winner[r, f] * cols + pos[f]] += coef[r, f]`` over ``winner >= 0``; returns ``(rows, cols)``.

    Parameters
    ----------
    winner : Tensor int32 or int64 ``(R, F)``
        Row of the output each element goes to (-1: nowhere).
    coef : Tensor float16/bfloat16/float32/float64 ``(R, F)``
        Values to add.
    pos : Tensor int64 ``(F,)`` or None
        Output column of each ``f``; None means ``f`` itself (then ``cols == F``).
    rows, cols : int
        Shape of the result.
    disjoint_rows : bool, default False
        The caller's promise that two different ``r`` never name the same winner (the edge operand: an edge
        wins only within its own destination's row). Threads then split the rows, also when ``pos``
        broadcasts (which the split by columns cannot do: it runs on one thread); each output element still
        receives its contributions from one row, in ``f`` order.

    Returns
    -------
    Tensor ``(rows, cols)``
        float64 for float64 ``coef``, else float32 (the sums of 16-bit values are not rounded to 16 bits).
    """
    if coef.dtype not in FLOAT_DTYPES:
        raise TypeError(f"expected float16/bfloat16/float32/float64 coefficients, got {coef.dtype}")
    if winner.dtype not in (torch.int32, torch.int64) or winner.shape != coef.shape or winner.dim() != 2:
        raise ValueError(f"expected int32/int64 winner of coef's 2-D shape {tuple(coef.shape)}, got {winner.dtype} "
                         f"{tuple(winner.shape)}")
    R, F = coef.shape
    if pos is None and cols != F:
        raise ValueError(f"expected cols == F ({F}) when pos is None, got {cols}")
    out = empty_out((rows * cols,), accum_dtype(coef.dtype)).zero_()
    if R == 0 or F == 0 or rows == 0:
        return out.reshape(rows, cols)
    identity = pos is None
    pos_np = np.zeros(0, np.int64) if identity else pos.contiguous().numpy()
    if disjoint_rows and not identity:
        nthreads = min(num_threads(R * F), (R + ROW_CHUNK - 1) // ROW_CHUNK)
        run_parallel(_row_kernel(False), nthreads, out.numpy(), winner.contiguous().reshape(-1).numpy(),
                     kernel_view(coef.contiguous()), pos_np, R, F, cols, identity)
        return out.reshape(rows, cols)
    nthreads = num_threads(R * F) if identity else 1
    nthreads = min(nthreads, (F + MIN_COLUMN_BLOCK - 1) // MIN_COLUMN_BLOCK)
    width = min(MAX_COLUMN_BLOCK, max(MIN_COLUMN_BLOCK, (F // nthreads) // MIN_COLUMN_BLOCK * MIN_COLUMN_BLOCK))
    run_parallel(_kernel(), nthreads, out.numpy(), winner.contiguous().reshape(-1).numpy(),
                 kernel_view(coef.contiguous()), pos_np, R, F, cols, identity, width, PREFETCH_ROWS)
    return out.reshape(rows, cols)


def pick_winners(winner, src, pos, cols):
    """``out[r, f] = src[winner[r, f], pos[f]]`` (0 where ``winner < 0``), in ``src``'s accumulator dtype.

    The other operand of a max/min product at each element's winner (``u_mul_e``/``u_div_e`` backward):
    one parallel pass of independent loads, without the ``(R, F)`` int64 index tensors that indexing in
    torch builds (and torch's indexing of 6.4M elements took 200 ms on 2 threads, this pass a few).

    Parameters
    ----------
    winner : Tensor int32 or int64 ``(R, F)``
        Row of ``src`` each element reads (-1: none, giving 0).
    src : Tensor float16/bfloat16/float32/float64 ``(rows, cols)``
    pos : Tensor int64 ``(F,)`` or None
        Column of ``src`` each ``f`` reads; None means ``f`` itself (then ``cols == F``).
    cols : int
        ``src``'s row width.

    Returns
    -------
    Tensor ``(R, F)``
        float64 for float64 ``src``, else float32 (exact widening).

    Notes
    -----
    Winner values are trusted (they come from the forward), as structure contents are in :func:`.gspmm`.
    """
    check_float("src", src, min_dim=1)
    if winner.dtype not in (torch.int32, torch.int64) or winner.dim() != 2:
        raise ValueError(f"expected an int32/int64 (R, F) winner, got {winner.dtype} {tuple(winner.shape)}")
    R, F = winner.shape
    if src.numel() % max(cols, 1) != 0 or (pos is None and cols != F):
        raise ValueError(f"expected src of rows of {cols} elements (cols == F == {F} when pos is None), got "
                         f"src {tuple(src.shape)}")
    out = empty_out((R, F), accum_dtype(src.dtype))
    if R == 0 or F == 0:
        return out
    identity = pos is None
    pos_np = np.zeros(0, np.int64) if identity else pos.contiguous().numpy()
    nthreads = min(num_threads(R * F), (R + ROW_CHUNK - 1) // ROW_CHUNK)
    run_parallel(_row_kernel(True), nthreads, kernel_view(out), winner.contiguous().reshape(-1).numpy(),
                 kernel_view(src.contiguous().reshape(-1)), pos_np, R, F, cols, identity)
    return out


#: software-prefetch distance of :func:`gather_winners`, in edges (0 disables)
GATHER_PREFETCH = 16
#: row widths with a register-resident accumulator in :func:`gather_winners`; others use a scratch row
GATHER_WIDTHS = (64, 128)


#: the edge operand's shape compiled into :func:`gather_winners`' row loop (:func:`_make_gather_rows`' ``HK``): any,
#: tested per edge (runtime widths and head counts); one value per edge; a whole row; heads of a compiled-in ``SEG``;
#: a whole row per *destination* (``other_rows``: the edge operand at the winners), read beside ``G``'s row
HK_ANY, HK_ONE, HK_FULL, HK_HEADS, HK_ROWS = 0, 1, 2, 3, 4


#: what multiplies ``G`` in the slot-winner passes: nothing (copies, sums, differences), the other operand
#: (``mul``), or divides it (``div``); compile-time constants of the kernels
FACTORS = {"copy": 0, "mul": 1, "div": 2}


@njit(inline="always")
def _div_grad(s, w, zero):
    """``u_div_e``'s edge gradient ``-s / w**2`` from ``s``, the sum of ``G * x`` over the columns the edge won;
    0 where ``s`` is zero and the weight's square is not a positive number (0, NaN, an underflow). An edge that
    won no column sums exactly zero, and the output does not depend on it: its gradient is 0, where ``-0 / 0``
    would be NaN (the reference's gradient, a sum over the won columns only, is 0 there). Read from ``s``, the
    case costs one compare: tracking the winners in the vector loop made 4-head ``u_div_e`` max
    forward+backward 2.5x slower, and reading them again in a cold branch 1.3x (twenty-third session). The one
    difference: an edge of weight 0 that won columns whose terms sum to exactly zero gets 0, not NaN."""
    return select((s == zero) & (not (w * w > zero)), zero, (zero - s) / (w * w))


def _make_gather_rows(W, factor, SEG=0, EG=False, TREE=False, XROW=False, VDIV=False, HUBS=False, HK=HK_ANY):
    """Source rows ``[r0, r1)`` of :func:`gather_winners`: ``W`` columns, a compile-time constant (a stack
    accumulator LLVM keeps in vector registers), or ``W == 0`` (runtime ``F`` into the scratch row);
    ``factor`` (:data:`FACTORS`) says whether ``G`` is multiplied or divided by the edge's ``other`` row.
    ``SEG > 0`` (with ``W``): ``other`` has ``W // SEG`` heads of ``SEG`` columns, compiled in, so the row
    loop stays one unrolled loop (a runtime block width measured 3-4x slower than a copy's gather).
    ``EG`` (a product): the same pass also writes the edge operand's gradient, from the ``G`` and winner rows
    it has loaded and the source's own row of ``x``: for each of the ``H`` blocks of ``n // H`` columns (one
    value per edge, ``H == 1``; GAT's heads; a whole row, ``H == n``)
    ``gw[eid[k], h] = sum_{j in block h} [won] G[v, j] x[r, j]`` (``div``: ``-sum / other[e, h]^2``). With
    ``SEG``, the terms go to a vector like ``acc`` and the heads are summed after the row loop, ``NH`` lanes
    at a time: summed per head inside the loop (flat or nested) the pass measured 182-212 ms against 92-97 ms
    for the separate edge pass (8 heads of 8, fp32, 2M edges), since each edge then paid ``NH`` horizontal
    reductions. ``TREE`` (:func:`_gather_tree`): the edge's head factors (div: their reciprocals) are spread
    over a row vector, and the terms of all heads are folded in halves together (``log2 SEG`` steps of vector
    adds) instead of summed head by head, and the source's row of ``x`` is widened once per row, not once per
    edge; ``XROW``: that row too for one value per edge (``H == 1``); ``VDIV`` (:data:`GATHER_VDIV_SEGS`): the
    per-head sums with that row, ``u_div_e``'s reciprocals and its edge gradient as one vector. ``HUBS``: split
    slot winners (:func:`gather_winners`): every edge runs the code of a graph without hubs; one into a hub row
    has the slot :data:`HUB_SLOT` there, which wins nowhere in its row of zeros, and then adds its terms from a
    second call site (``edge`` is inlined at both) reading its hub's two rows of bytes (:func:`_won`). Taking
    each edge down one of two call sites instead, by a test of a per-edge table, took 1.1-1.3x the time of the
    kernel without hubs (bf16 and fp32, 10M edges). ``HK`` (:data:`HK_ANY` and the others) compiles in the shape
    of ``other`` (one value per edge, a whole row, heads of a compiled-in ``SEG``) instead of testing the runtime
    ``H`` per edge: with every shape's branch in the loop, the one that indexes ``acc`` by a runtime block offset
    kept ``acc`` on the stack, stored and reloaded per edge, where the copies' loop keeps it in registers. One
    weight per edge, 64 columns, uniform graph: the node gradient alone took 1.7x (fp32) and 2.0x (bf16) the
    copy's gather, both gradients 2.9x and 2.8x (see the README, forty-seventh session)."""
    size = max(W, 1)
    NH = W // SEG if SEG > 0 else 1

    @njit(inline="always", fastmath={"reassoc", "contract"}, error_model="numpy")
    def edge(k, r, b, win, wb, me, hub, hb, hi, n, acc, bv, tv, dv, rv, bx, xr, zero, one, G, gx, eid, other, H, x,
             gw):
        """Edge ``k`` (from source ``r``, its ``G`` row at ``b``, its winner row at ``wb``): its terms where it won
        (:func:`_won`)."""
        if factor == 0:
            for j in range(n):              # branch-free: G where this edge won column j
                acc[j] += select(_won(win, wb, j, me, hub, hb, hi), to_acc(gx, load(G, b + j)), zero)
        elif HK == HK_FULL or HK == HK_ROWS or (HK == HK_ANY and H == n):
            ob = b if HK == HK_ROWS else raw_get(eid, k) * n    # HK_ROWS: the destination's row, as G's
            for j in range(n):              # G * other (or G / other) where this edge won
                g = to_acc(gx, load(G, b + j))
                o = to_acc(gx, load(other, ob + j))
                m = g * o if factor == 1 else g / o
                won = _won(win, wb, j, me, hub, hb, hi)
                acc[j] += select(won, m, zero)
                if EG:                      # the edge's gradient row: G x (div: -G x / o^2) where won
                    xv = to_acc(gx, load(x, r * n + j))
                    t = g * xv if factor == 1 else (zero - g * xv) / (o * o)
                    store(gw, ob + j, select(won, t, zero))
        elif SEG > 0 and TREE:              # (compile-time) W // SEG heads, the row's products as vectors
            ob = raw_get(eid, k) * NH
            load_run(other, ob, bv, NH)     # the edge's head values, one vector load
            if factor == 1:
                for i in range(NH):
                    rv[i] = bv[i]
            else:                           # div: the reciprocals as one vector division
                recip_run(rv, bv, one, NH)
            for j in range(W):              # each head's factor spread over its SEG columns
                bx[j] = rv[j // SEG]
            for j in range(W):
                g = to_acc(gx, load(G, b + j))
                won = _won(win, wb, j, me, hub, hb, hi)
                acc[j] += select(won, g * bx[j], zero)
                if EG:                      # the edge's terms G x where it won
                    tv[j] = select(won, g * xr[j], zero)
            if EG:                          # fold every head's terms by adjacent pairs, all heads at
                fold_adjacent(tv, W, NH)    # once: each head's sum ends contiguous in tv[:NH]
                if factor == 1:
                    store_run(gw, ob, tv, NH)
                else:                       # -sum / w^2 of all heads as one vector, then stored
                    div_grad_run(dv, tv, bv, NH)
                    store_run(gw, ob, dv, NH)
        elif SEG > 0:                       # W // SEG heads, both compile-time constants
            ob = raw_get(eid, k) * NH
            for i in range(NH):
                bv[i] = to_acc(gx, load(other, ob + i))
            if VDIV and factor == 2:        # (compile-time) the reciprocals as one vector division
                recip_run(rv, bv, one, NH)
            for j in range(W):
                g = to_acc(gx, load(G, b + j))
                if VDIV and factor == 2:
                    m = g * rv[j // SEG]
                else:
                    m = g * bv[j // SEG] if factor == 1 else g / bv[j // SEG]
                won = _won(win, wb, j, me, hub, hb, hi)
                acc[j] += select(won, m, zero)
                if EG and VDIV:             # the source's row widened once per row
                    tv[j] = select(won, g * xr[j], zero)
                elif EG:                    # the edge's terms G x where it won, a vector like acc
                    tv[j] = select(won, g * to_acc(gx, load(x, r * n + j)), zero)
            if EG:                          # each head's sum of its SEG terms, NH lanes at a time
                for i in range(NH):
                    dv[i] = tv[i * SEG]
                for d in range(1, SEG):
                    for i in range(NH):
                        dv[i] += tv[i * SEG + d]
                if VDIV and factor == 2:    # -sum / w^2 of all heads as one vector, then stored
                    div_grad_run(dv, dv, bv, NH)
                    for i in range(NH):
                        store(gw, ob + i, dv[i])
                else:
                    for i in range(NH):
                        store(gw, ob + i, dv[i] if factor == 1 else _div_grad(dv[i], bv[i], zero))
        elif HK == HK_ONE or (HK == HK_ANY and H == 1):     # one value per edge, a scalar over the row
            e = raw_get(eid, k)
            o = to_acc(gx, load(other, e))
            dot = zero
            for j in range(n):
                g = to_acc(gx, load(G, b + j))
                m = g * o if factor == 1 else g / o
                won = _won(win, wb, j, me, hub, hb, hi)
                acc[j] += select(won, m, zero)
                if EG and W > 0 and XROW:   # (compile-time) the source's row, widened once per row
                    dot += select(won, g * xr[j], zero)
                elif EG:
                    dot += select(won, g * to_acc(gx, load(x, r * n + j)), zero)
            if EG:
                store(gw, e, dot if factor == 1 else _div_grad(dot, o, zero))
        elif HK == HK_ANY:                  # block broadcast: other[e, h] for columns h*B .. h*B+B-1
            ob = raw_get(eid, k) * H
            B = n // H
            for h in range(H):
                o = to_acc(gx, load(other, ob + h))
                dot = zero
                for d in range(B):
                    j = h * B + d
                    g = to_acc(gx, load(G, b + j))
                    m = g * o if factor == 1 else g / o
                    won = _won(win, wb, j, me, hub, hb, hi)
                    acc[j] += select(won, m, zero)
                    if EG:
                        dot += select(won, g * to_acc(gx, load(x, r * n + j)), zero)
                if EG:
                    store(gw, ob + h, dot if factor == 1 else _div_grad(dot, o, zero))

    # numpy's error model: a division by zero gives inf/nan (as torch) and needs no test per element
    @njit(fastmath={"reassoc", "contract"}, error_model="numpy")
    def rows(r0, r1, indptr, indices, slot_of, G, win, gx, F, scratch, pf, eid, other, H, x, gw, hub_ptr, hub_info,
             R):
        n = W if W > 0 else F
        acc = stack_acc(gx, size) if W > 0 else scratch
        bv = stack_acc(gx, NH)      # SEG > 0: the edge's head values
        tv = stack_acc(gx, size)    # SEG > 0 with EG: the edge gradient's terms
        dv = stack_acc(gx, NH)      # and each head's sum
        rv = stack_acc(gx, NH if TREE or VDIV else 1)   # the head values or their reciprocals (div)
        bx = stack_acc(gx, size if TREE else 1)     # and those spread over the row, a vector like acc
        xr = stack_acc(gx, size if EG else 1)       # the source's row of x in the accumulator type (TREE, XROW)
        zero = acc_zero(gx)
        one = to_acc(gx, 1.0)
        g_line, w_line, o_line = line_elems(G), line_elems(win), line_elems(other)
        E_end = raw_get(indptr, indptr.size - 1)
        for r in range(r0, r1):
            for j in range(n):
                acc[j] = zero
            if EG and W > 0 and (TREE or XROW or VDIV):     # the source's own row of x, widened once
                for j in range(W):
                    xr[j] = to_acc(gx, load(x, r * W + j))
            hp = raw_get(hub_ptr, r) if HUBS else 0     # the row's first edge into a hub row in hub_info
            for k in range(raw_get(indptr, r), raw_get(indptr, r + 1)):
                if pf > 0 and k + pf < E_end:           # the G and winner rows pf edges ahead
                    vp = raw_get(indices, k + pf) * n
                    for t in range(0, n, g_line):
                        prefetch(G, vp + t)
                    for t in range(0, n, w_line):
                        prefetch(win, vp + t)
                    if HK == HK_ROWS:                   # (compile-time) and the destination's row of it
                        for t in range(0, n, o_line):
                            prefetch(other, vp + t)
                    elif factor != 0:                   # and that edge's row of the other operand
                        op_ = raw_get(eid, k + pf) * H
                        for t in range(0, H, o_line):
                            prefetch(other, op_ + t)
                        if EG:                          # and its element of the edge gradient, written then
                            prefetch(gw, op_)
                b = raw_get(indices, k) * n
                me = raw_get(slot_of, k)
                edge(k, r, b, win, b, me, False, 0, 0, n, acc, bv, tv, dv, rv, bx, xr, zero, one, G, gx, eid, other,
                     H, x, gw)
                if HUBS and me == HUB_SLOT:     # an edge into a hub row, which the call above found winning nowhere
                    info = raw_get(hub_info, hp)    # (its row there is 0): its hub and slot, its terms now
                    hp += 1
                    h, sl = info >> 16, info & 0xFFFF
                    edge(k, r, b, win, (R + 2 * h) * n, _as_slot(win, sl & 0xFF), True, (R + 2 * h + 1) * n, sl >> 8,
                         n, acc, bv, tv, dv, rv, bx, xr, zero, one, G, gx, eid, other, H, x, gw)
            for j in range(n):
                store(gx, r * n + j, acc[j])

    return rows


_GATHER_ROWS = {(W, f, hubs): _make_gather_rows(W, f, HUBS=hubs) for W in GATHER_WIDTHS + (0,)
                for f in FACTORS.values() for hubs in (False, True)}
#: head widths of the products' block broadcast with a compiled-in row loop (with ``W`` in :data:`GATHER_WIDTHS`)
GATHER_HEAD_SEGS = (2, 4, 8, 16, 32, 64)
#: head widths whose row loop of :data:`GATHER_TREE_WIDTH` columns keeps each edge's factors and terms as row vectors
#: and folds the terms of all heads in halves (:func:`_make_gather_rows` with ``TREE``), as the sum backward's heads of
#: 8 and 16 did from the twenty-fourth to the forty-fourth session. Measured against the per-head sums (in-process A/B
#: of ``gather_winners`` with both gradients, uniform graph, 2M edges, 2 threads, AMD EPYC, medians of 11 alternating
#: calls, three rounds, the last in ``benchmarks/results/gather_winners_ab_s25.jsonl``; ``u_mul_e``/``u_div_e`` max,
#: fp32 and bf16): 8 heads of 8 0.77-0.96x, 4 of 16 0.80-1.03x, 16 of 4 0.51-0.73x, 2 of 32 0.80-0.96x. Not taken: 32
#: heads of 2 (1.07-1.17x) and every head width at 128 columns (1.1-1.8x, except 32 heads of 4 in bf16), where the row
#: vectors spill.
GATHER_TREE_SEGS = (4, 8, 16, 32)
#: the row width of that loop
GATHER_TREE_WIDTH = 64


#: head widths whose per-head sums (heads not folded, :func:`_gather_tree`) take ``u_div_e``'s reciprocals and its
#: ``-s / w^2`` for all heads as one vector each (:func:`._core.recip_run`, :func:`._core.div_grad_run`: as loops,
#: LLVM left 32 scalar divisions per edge with 32 heads, forty-seventh session), and widen the source's row of ``x``
#: once per row (:func:`_make_gather_rows` with ``VDIV``). Measured as :data:`GATHER_TREE_SEGS` (one round, medians
#: of 11 alternating calls, against the same loop without): ``u_div_e`` max with 32 heads of 4 on 128 columns
#: 0.72-0.74x, 32 heads of 2 on 64 0.68-0.76x; ``u_mul_e`` 0.94-0.99x. Wider heads (8-32 columns on 128) took
#: 0.93-1.09x, so they keep the per-column divisions.
GATHER_VDIV_SEGS = (2, 4)


def _gather_tree(W, SEG):
    """Whether :func:`gather_winners` takes the folded row loop for ``W // SEG`` heads of ``SEG`` columns."""
    return W == GATHER_TREE_WIDTH and SEG in GATHER_TREE_SEGS


@functools.cache
def _gather_kernel(W, factor, SEG=0, EG=False, TREE=False, XROW=False, VDIV=False, HUBS=False, HK=HK_ANY):
    source_hash = SOURCE_HASH  # part of Numba's cache key (see _core._source_hash)
    rows = _make_gather_rows(W, factor, SEG, EG, TREE, XROW, VDIV, HUBS, HK) if SEG or EG or HK != HK_ANY \
        else _GATHER_ROWS[W, factor, HUBS]

    @cached_njit(nogil=True)
    def kernel(counter, bounds, indptr, indices, slot_of, G, win, gx, F, pf, eid, other, H, x, gw, hub_ptr, hub_info,
               R):
        _ = source_hash
        indptr, indices, slot_of, eid = borrow(indptr), borrow(indices), borrow(slot_of), borrow(eid)
        G, win, gx, other, x, gw = borrow(G), borrow(win), borrow(gx), borrow(other), borrow(x), borrow(gw)
        hub_ptr, hub_info = borrow(hub_ptr), borrow(hub_info)
        owner = alloc_acc(gx, F if W == 0 else 1)    # one scratch row per thread, not per row
        scratch = borrow(owner)
        c = atomic_fetch_add(counter, 0, 1)
        while c < bounds.size - 1:
            rows(raw_get(bounds, c), raw_get(bounds, c + 1), indptr, indices, slot_of, G, win, gx, F, scratch, pf,
                 eid, other, H, x, gw, hub_ptr, hub_info, R)
            c = atomic_fetch_add(counter, 0, 1)
        owner[0] = 0    # keeps the scratch owner alive past the loop

    return kernel


def gather_winners(indptr, indices, slot_of, grad, winners, *, out_dtype=None, prefetch_distance=None, op="copy",
                   eid=None, other=None, lhs=None, edge_dtype=None, hub_ptr=None, hub_info=None, other_rows=False):
    """The node operand's gradient of max/min (``copy_u``, ``u_{add,sub,mul,div}_e``) from slot winners, by source row.

    .. math::

        \\mathrm{out}[u, f] = \\sum_{k = \\mathrm{indptr}[u]}^{\\mathrm{indptr}[u+1]-1}
            [\\mathrm{winners}[v_k, f] = \\mathrm{slot\\_of}[k]]\\; \\mathrm{grad}[v_k, f]\\;
            (\\times \\text{ or } \\div\\ \\mathrm{other}[\\mathrm{eid}[k], f]),
        \\qquad v_k = \\mathrm{indices}[k]

    Parameters
    ----------
    indptr : Tensor int64 ``(N_src + 1,)``
        Out-edges of each source (``Index.csr()[0]``).
    indices : Tensor int64 ``(E,)``
        Destination of each out-edge slot (``Index.csr()[1]``).
    slot_of : Tensor uint8 or int16 ``(E,)``
        Offset of each out-edge slot's edge within its destination's in-edges (``Index.csc()`` order):
        what the forward records for the edge when it wins. Same dtype as ``winners``.
    grad : Tensor float16/bfloat16/float32/float64 ``(N_dst, F)``
        Gradient of the forward result.
    winners : Tensor uint8 or int16 ``(N_dst, F)``, or uint8 ``(N_dst + 2 n_hub, F)``
        The forward's slot winners (``gspmm(..., need_arg='slots')``); values no slot has (255, -1) add
        nothing. More rows than ``grad`` are split slots (``gspmm(..., split_slots=True)``), with ``hub_ptr``
        and ``hub_info``.
    out_dtype : torch.dtype, optional
        Result dtype, default ``grad``'s. Sums accumulate in float32 (float64 when ``grad`` or the result
        is float64) and round once.
    prefetch_distance : int, optional
        Software prefetch distance in edges (0 disables); default :data:`GATHER_PREFETCH`.
    op : {'copy', 'mul', 'div'}, default 'copy'
        ``'mul'``/``'div'``: each term is multiplied/divided by the edge operand ``other`` at the slot's edge
        (the gradient of ``u_mul_e``/``u_div_e`` with respect to ``u``).
    eid : Tensor int64 ``(E,)``, optional
        Edge id of each out-edge slot (``Index.csr()[2]``); needed with ``'mul'``/``'div'``.
    other : Tensor ``(E, F)`` or ``(E, H)``, optional
        The edge operand in edge-id order; needed with ``'mul'``/``'div'``. ``H`` columns with ``F % H == 0``
        are a block broadcast: column ``f`` reads ``other[e, f // (F // H)]`` (one weight per edge: ``H = 1``;
        GAT's ``(E, H, 1)`` against ``(N, H, D)``).
    lhs : Tensor ``(N_src, F)``, optional
        With ``'mul'``/``'div'``: the node operand of the forward. The same pass then also returns the edge
        operand's gradient (see Returns).
    edge_dtype : torch.dtype, optional
        Dtype of that edge gradient, default ``other``'s.
    hub_ptr, hub_info : Tensor int64 ``(N_src + 1,)`` and ``(E_hub,)``, optional
        Needed with split slots, where ``slot_of`` is :data:`HUB_SLOT` for each out-edge into a hub row:
        ``hub_info[hub_ptr[u]:hub_ptr[u + 1]]`` are ``h * 65536 + slot`` of source ``u``'s out-edges into hub
        rows, in slot order (``h``: the hub's number, its bytes in winner rows ``N_dst + 2h`` and
        ``N_dst + 2h + 1``).
    other_rows : bool, default False
        With ``'mul'``/``'div'`` and without ``lhs``: ``other`` is ``(N_dst, F)``, the edge operand at each
        element's winner (``spmm.gspmm``'s ``rhs_won``), read at the destination's row beside ``grad``'s, not at
        the edge id; ``eid`` is then not needed. Where an edge won, it is the value of its own row, so the sums
        are the same bit for bit.

    Returns
    -------
    Tensor ``(N_src, F)``
        Sources without out-edges (and edges that won nowhere) get 0. Each row is summed in slot order by
        one thread, so results do not depend on the thread count.
    (Tensor ``(N_src, F)``, Tensor ``(E, H)``) when ``lhs`` is given
        The node gradient and the edge gradient, in ``other``'s shape: column ``h`` of edge ``e = eid[k]``
        is ``sum_f [winners[v, f] = slot_of[k]] grad[v, f] lhs[u, f]`` over the ``F // H`` columns ``f`` of
        block ``h`` (``'div'``: that sum times ``-1 / other[e, h]^2``), summed in the accumulator dtype and
        rounded once (with ``H == F``, one term per column); 0 where the edge did not win.

    Raises
    ------
    TypeError, ValueError
        Operands of the wrong dtype, device or shape.

    Notes
    -----
    Structure contents are trusted, as in :func:`.gspmm`.
    """
    check_index("indptr", indptr)
    check_index("indices", indices)
    check_float("grad", grad, min_dim=2)
    if winners.dtype not in (torch.uint8, torch.int16) or slot_of.dtype != winners.dtype:
        raise TypeError(f"expected uint8 or int16 slot winners and slot_of of one dtype, got {winners.dtype} and "
                        f"{slot_of.dtype}")
    check_out_dtype(out_dtype)
    if (grad.dim() != 2 or winners.dim() != 2 or winners.shape[1] != grad.shape[1]
            or winners.shape[0] < grad.shape[0] or slot_of.dim() != 1 or slot_of.numel() != indices.numel()):
        raise ValueError(f"expected grad (N_dst, F), winners of its shape (or more rows, split slots) and slot_of of "
                         f"indices' {indices.numel()} elements, got grad {tuple(grad.shape)}, winners "
                         f"{tuple(winners.shape)}, slot_of {tuple(slot_of.shape)}")
    hubs = _split_check(winners, grad.shape[0], hub_ptr, "hub_ptr", indptr.numel(), torch.int64)
    if hubs and (hub_info is None or hub_info.dtype != torch.int64 or hub_info.dim() != 1
                 or hub_info.numel() != int(hub_ptr[-1])):
        raise ValueError(f"expected an int64 hub_info of hub_ptr[-1] = {int(hub_ptr[-1])} elements with split slot "
                         f"winners, got {None if hub_info is None else (hub_info.dtype, tuple(hub_info.shape))}")
    if op not in FACTORS:
        raise ValueError(f"expected op in {tuple(FACTORS)}, got {op!r}")
    E = indices.numel()
    if other_rows:
        check_float("other", other, min_dim=2)
        if op == "copy" or lhs is not None or tuple(other.shape) != tuple(grad.shape):
            raise ValueError(f"expected op 'mul'/'div', no lhs and other {tuple(grad.shape)} (grad's shape) for "
                             f"other_rows=True, got op {op!r}, lhs {None if lhs is None else tuple(lhs.shape)}, "
                             f"other {tuple(other.shape)}")
    elif op != "copy":
        check_index("eid", eid)
        check_float("other", other, min_dim=2)
        F = grad.shape[1]
        if (eid.numel() != E or other.dim() != 2 or other.shape[0] != E or other.shape[1] == 0
                or F % other.shape[1] != 0):
            raise ValueError(f"expected eid of {E} elements and other ({E}, H) with H dividing {F} with op {op!r}, "
                             f"got eid {None if eid is None else eid.numel()}, other {tuple(other.shape)}")
    out_dtype = out_dtype or grad.dtype
    N_src, F = indptr.numel() - 1, grad.shape[1]
    EG = lhs is not None
    if EG:
        check_float("lhs", lhs, min_dim=2)
        check_out_dtype(edge_dtype)
        if op == "copy" or tuple(lhs.shape) != (max(N_src, 0), F):
            raise ValueError(f"expected lhs ({max(N_src, 0)}, {F}) with op 'mul'/'div', got op {op!r}, lhs "
                             f"{tuple(lhs.shape)}")
        edge_dtype = edge_dtype or other.dtype
    # float64 accumulation whenever float64 is involved; the result is rounded once at the end
    involved = (grad.dtype, out_dtype) + ((lhs.dtype, other.dtype, edge_dtype) if EG else ())
    work_dtype = torch.float64 if torch.float64 in involved else out_dtype
    gx = empty_out((max(N_src, 0), F), work_dtype)
    if N_src <= 0 or F == 0 or E == 0:
        gx = gx.zero_().to(out_dtype)
        return (gx, torch.zeros(E, other.shape[1], dtype=edge_dtype)) if EG else gx
    gw = empty_out((E, other.shape[1]), edge_dtype) if EG else None    # every edge is a slot of the pass
    indptr_np = index_view(indptr.contiguous())
    nthreads = num_threads(E * F)
    bounds = chunk_bounds(indptr_np, nthreads, row_cost=max(1, F // 16))
    pf = GATHER_PREFETCH if prefetch_distance is None else int(prefetch_distance)
    W = F if F in GATHER_WIDTHS else 0
    factor = FACTORS[op]
    H = other.shape[1] if factor else F
    SEG = F // H if W and factor and 1 < H < F and F // H in GATHER_HEAD_SEGS else 0
    # one weight per edge: the source's row of x widened once per row, for 32/64-bit x (16-bit: 1.04x the
    # per-edge loads' time in the A/B of GATHER_TREE_SEGS; fp32 0.72-0.91x)
    xrow = EG and H == 1 and lhs.dtype in (torch.float32, torch.float64)
    vdiv = SEG in GATHER_VDIV_SEGS and not _gather_tree(W, SEG)
    hk = (HK_ROWS if other_rows else HK_ANY if not (W and factor) else HK_HEADS if SEG else HK_ONE if H == 1
          else HK_FULL if H == F else HK_ANY)
    run_parallel(_gather_kernel(W, factor, SEG, EG, _gather_tree(W, SEG), xrow, vdiv, hubs, hk), nthreads, bounds,
                 indptr_np,
                 index_view(indices.contiguous()),
                 slot_of.contiguous().numpy(), kernel_view(grad.contiguous()), winners.contiguous().reshape(-1).numpy(),
                 kernel_view(gx), F, pf, index_view(eid.contiguous() if factor and not other_rows else None),
                 kernel_view(other.contiguous() if factor else grad[:0]), other.shape[1] if factor else F,
                 kernel_view(lhs.contiguous() if EG else gx[:0]), kernel_view(gw if EG else gx[:0]),
                 _hub_view(hub_ptr, hubs, np.int64), _hub_view(hub_info, hubs, np.int64), grad.shape[0])
    gx = gx if work_dtype == out_dtype else gx.to(out_dtype)
    return (gx, gw) if EG else gx


@njit(inline="always")
def _won(win, wb, j, me, hub, hb, hi):
    """Whether the edge whose slot (its low byte) is ``me`` won column ``j`` of the winner row at ``wb``; with
    ``hub`` (a compile-time constant at each call site) its high byte ``hi`` must match row ``hb`` too (split
    slots)."""
    won = raw_get(win, wb + j) == me
    if hub:
        won = won & (raw_get(win, hb + j) == _as_slot(win, hi))
    return won


def _split_check(winners, rows, hubs, name, count, dtype):
    """Whether ``winners`` are split slots (more rows than ``rows``); then checks their dtype and the hub table
    ``hubs`` (argument ``name``, ``count`` elements of ``dtype``) the kernels need with them."""
    if winners.shape[0] == rows:
        return False
    if winners.dtype != torch.uint8 or (winners.shape[0] - rows) % 2 or hubs is None or hubs.dtype != dtype \
            or hubs.dim() != 1 or hubs.numel() != count:
        raise ValueError(f"expected uint8 split slot winners ({rows} rows and two per hub row, got "
                         f"{winners.shape[0]}) with {name}, {dtype} of {count} elements (the hub tables of "
                         f"gspmm(..., split_slots=True)), got {winners.dtype} winners and {name} "
                         f"{None if hubs is None else (hubs.dtype, tuple(hubs.shape))}")
    return True


def _hub_view(hubs, split, dtype):
    """A hub table as the kernels take it: an empty array without split slots."""
    return hubs.contiguous().numpy() if split else np.zeros(0, dtype)


def _as_slot(win, k):
    """Slot offset ``k`` in the dtype of the winners ``win`` (so the compare runs on narrow lanes)."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(_as_slot)
def _as_slot_impl(win, k):
    cast = {types.uint8: np.uint8, types.int16: np.int16}[win.dtype]
    return lambda win, k: cast(k)


#: the slot an edge into a hub row has in :func:`gather_winners`' ``slot_of`` with split slot winners: no edge of a
#: row of at most 255 edges has it, and a hub row's own row of winners holds 0
HUB_SLOT = 255

#: :func:`edge_winners` streams its edge gradient's rows (``nontemporal``) only from this many bytes a row: rows of one
#: line measured 0.93-1.62x the plain stores' time (uniform graph, 2M edges, float32 D = 16, bfloat16 D = 32), rows
#: of two lines or more 0.76-0.94x (``benchmarks/streaming.py``, forty-eighth session)
EDGE_STREAM_MIN_BYTES = 128

#: what :func:`edge_winners` writes where the edge won, per ``op``: ``(factor, negate)`` with ``factor`` as in
#: :data:`FACTORS`; ``'neg'`` is ``-G`` (``u_sub_e``'s edge operand), in the same single pass
EDGE_OPS = {"copy": (0, False), "neg": (0, True), "mul": (1, False), "div": (2, False)}


@functools.cache
def _edge_kernel(factor, negate=False, PICK=False, HUBS=False, NT=0, ROWS=False):
    """``PICK`` (a product with ``H == F``): the pass also writes ``pk[v, j]``, ``G[v, j]`` times (divided by)
    the winning edge's ``rhs[e, j]``, in ``pk``'s dtype (the terms :func:`gather_winners` sums for the node).
    ``HUBS``: split slot winners; each in-edge of a hub row (``hub_row[v] >= 0``) also compares the high bytes
    (:func:`_won`), at a call site of its own. ``NT > 0`` (a product with ``H == F == NT``, compiled in): each
    edge's gradient row goes out as one streaming store (:func:`._core.store_run_nt`; see :func:`edge_winners`).
    ``ROWS`` (a product with ``H == F``): ``rhs`` is one row per destination, the edge operand at the row's
    winners (``rhs_rows``), read at the row's ``G`` offset ``b`` where the edge's own row would be at ``e``."""
    source_hash = SOURCE_HASH  # part of Numba's cache key (see _core._source_hash)
    if NT and not factor:
        raise ValueError(f"streaming stores serve the products' edge gradient (factor 1 or 2), got factor {factor}")
    if ROWS and not factor:
        raise ValueError(f"rows of winning edge operands serve the products (factor 1 or 2), got factor {factor}")
    ROW = max(NT, 1)

    @njit(inline="always", fastmath={"reassoc", "contract"}, error_model="numpy")
    def edge(k, e, b, win, wb, me, hub, hb, hi, F, H, G, ge, src, lhs, rhs, pk, zero, pzero, row):
        """In-edge ``k`` (edge ``e``) of the row whose ``G`` starts at ``b``: its gradient row, ``G`` (times its
        factor) where it won (:func:`_won`), else 0."""
        if H != F and not NT:           # block broadcast: each of the H values sums B columns
            B = F // H
            ub = raw_get(src, k) * F if factor != 0 else 0
            for h in range(H):
                s = zero
                for d in range(B):
                    j = h * B + d
                    g = to_acc(ge, load(G, b + j))
                    if factor != 0:
                        g = g * to_acc(ge, load(lhs, ub + j))
                    if negate:
                        g = -g
                    s += select(_won(win, wb, j, me, hub, hb, hi), g, zero)
                if factor == 2:
                    s = _div_grad(s, to_acc(ge, load(rhs, e * H + h)), zero)
                store(ge, e * H + h, s)
        elif factor == 0 and not NT:
            for j in range(F):          # [F] G ('neg': -G) where this edge won column j, else 0
                g = to_acc(ge, load(G, b + j))
                if negate:              # a closure constant: compiled out of 'copy'
                    g = -g
                store_copied(ge, e * F + j, select(_won(win, wb, j, me, hub, hb, hi), g, zero), G)
        else:
            n = NT if NT else F             # (compile-time with NT) the row's columns
            ub = raw_get(src, k) * n
            rb = b if ROWS else e * n       # the edge operand: the row's winners' (ROWS), else the edge's own
            for j in range(n):              # [F] G * x (mul) or -G * x / r^2 (div) where it won
                won = _won(win, wb, j, me, hub, hb, hi)
                m = to_acc(ge, load(G, b + j)) * to_acc(ge, load(lhs, ub + j))
                if factor == 2:
                    r = to_acc(ge, load(rhs, rb + j))
                    m = -m / (r * r)
                if NT:                      # (compile-time) gathered into the row, stored below
                    row[j] = select(won, m, zero)
                else:
                    store(ge, e * n + j, select(won, m, zero))
                if PICK:                    # G * r (G / r) where it won: the node gradient's term
                    gp, rv = to_acc(pk, load(G, b + j)), to_acc(pk, load(rhs, rb + j))
                    t = gp * rv if factor == 1 else gp / rv
                    raw_set(pk, b + j, raw_get(pk, b + j) + select(won, t, pzero))
            if NT:                          # (compile-time) the row out as one streaming store
                store_run_nt(ge, e * n, row, NT)

    # reassoc: the block broadcast's sum over B columns vectorises (the other paths have no reduction)
    @cached_njit(nogil=True, fastmath={"reassoc", "contract"}, error_model="numpy")
    def kernel(counter, bounds, indptr, eid, G, win, ge, F, src, lhs, rhs, pf, H, pk, hub_row):
        _ = source_hash
        indptr, eid, G, win, ge = borrow(indptr), borrow(eid), borrow(G), borrow(win), borrow(ge)
        src, lhs, rhs, pk, hub_row = borrow(src), borrow(lhs), borrow(rhs), borrow(pk), borrow(hub_row)
        R = indptr.size - 1
        use_eid = eid.size > 0
        zero = acc_zero(ge)
        pzero = acc_zero(pk)
        row = stack_acc(ge, ROW)            # NT: the edge's gradient row
        x_line, r_line = line_elems(lhs), line_elems(rhs)
        E_end = raw_get(indptr, indptr.size - 1)
        c = atomic_fetch_add(counter, 0, 1)
        while c < bounds.size - 1:
            for v in range(raw_get(bounds, c), raw_get(bounds, c + 1)):
                k0 = raw_get(indptr, v)
                b = v * F
                if PICK:                            # the row's picked terms: 0 where no edge won
                    for j in range(F):
                        raw_set(pk, b + j, pzero)
                hr = raw_get(hub_row, v) if HUBS else -1
                for k in range(k0, raw_get(indptr, v + 1)):
                    e = edge_of(eid, use_eid, k)
                    me = _as_slot(win, k - k0)              # uint8: the slot's low byte
                    if factor != 0 and pf > 0 and k + pf < E_end:
                        up = raw_get(src, k + pf) * F   # the source row pf edges ahead (a random gather)
                        for t in range(0, F, x_line):
                            prefetch(lhs, up + t)
                        if (factor == 2 or PICK) and not ROWS:  # and that edge's H values of rhs (edge ids in
                                                                # any order; ROWS: the row's, read in order)
                            rp = edge_of(eid, use_eid, k + pf) * H
                            for t in range(0, H, r_line):
                                prefetch(rhs, rp + t)
                    if HUBS and hr >= 0:                    # a hub row: its two rows of bytes
                        edge(k, e, b, win, (R + 2 * hr) * F, me, True, (R + 2 * hr + 1) * F, (k - k0) >> 8, F, H, G,
                             ge, src, lhs, rhs, pk, zero, pzero, row)
                    else:
                        edge(k, e, b, win, b, me, False, 0, 0, F, H, G, ge, src, lhs, rhs, pk, zero, pzero, row)
            c = atomic_fetch_add(counter, 0, 1)
        if NT:      # (compile-time) this thread's streaming stores visible before the pass ends
            store_fence()

    return kernel


def edge_winners(indptr, eid, grad, winners, *, out_dtype=None, op="copy", src=None, lhs=None, rhs=None,
                 prefetch_distance=None, cols=None, picked=False, hub_row=None, nontemporal=None, rhs_rows=False):
    """The edge operand's gradient of max/min from slot winners: ``grad`` where the edge won, else 0.

    With ``op='mul'`` the value where the edge won is ``grad * lhs[src]`` (the gradient of ``u_mul_e``
    with respect to ``e``), with ``op='div'`` it is ``-grad * lhs[src] / rhs[e]^2`` (of ``u_div_e``), with
    ``op='neg'`` it is ``-grad`` (of ``u_sub_e``).

    .. math::

        \\mathrm{out}[\\mathrm{eid}[k], f] = [\\mathrm{winners}[r, f] = k - \\mathrm{indptr}[r]]\\;
            \\mathrm{grad}[r, f] \\qquad (\\mathrm{indptr}[r] \\le k < \\mathrm{indptr}[r + 1])

    Parameters
    ----------
    indptr : Tensor int64 ``(R + 1,)``
        In-edges of each destination (``Index.csc()[0]``), the structure the forward ran on.
    eid : Tensor int64 ``(E,)`` or None
        Edge id of each slot; None means the identity.
    grad : Tensor float16/bfloat16/float32/float64 ``(R, F)``
        Gradient of the forward result.
    winners : Tensor uint8 or int16 ``(R, F)``, or uint8 ``(R + 2 n_hub, F)``
        The forward's slot winners (``gspmm(..., need_arg='slots')``); more rows than ``grad`` are split slots
        (``gspmm(..., split_slots=True)``), with ``hub_row``.
    out_dtype : torch.dtype, optional
        Result dtype, default ``grad``'s (each value is computed in float32, float64 for float64 results,
        and rounded once).
    op : {'copy', 'neg', 'mul', 'div'}, default 'copy'
    src : Tensor int64 ``(E,)``, optional
        Source node of each slot (``Index.csc()[1]``); needed with ``'mul'``/``'div'``.
    lhs : Tensor ``(N_src, F)``, optional
        The node operand; needed with ``'mul'``/``'div'``.
    rhs : Tensor ``(E, F)``, optional
        The edge operand in edge-id order; needed with ``'div'``.
    prefetch_distance : int, optional
        Software prefetch distance in edges for the ``lhs`` rows (0 disables); default :data:`GATHER_PREFETCH`.
    cols : int, optional
        The edge operand's width ``H`` (default ``F``). ``H < F`` with ``F % H == 0`` is a block broadcast
        (one weight per edge: ``H = 1``): value ``h`` of an edge sums its terms over columns
        ``h * B .. h * B + B - 1`` (``B = F // H``), and ``'div'`` divides that sum by ``-rhs[e, h]^2``
        (``rhs``: ``(E, H)``).
    picked : bool, default False
        With ``'mul'``/``'div'``, ``rhs`` given and ``cols == F``: the same pass also returns, for each
        destination row ``r`` and column ``f``, ``grad[r, f] * rhs[e, f]`` (``'div'``: ``/``) at the edge ``e``
        that won there, 0 where none did, in float32 (float64 when any operand or the result is float64).
        :func:`gather_winners` with ``op='copy'`` over these sums the node operand's gradient. This pass reads
        the edge operand in slot order (sequential when the edge ids follow the destinations), where a
        gradient gathered by source reads it at random edge ids.
    hub_row : Tensor int32 ``(R,)``, optional
        Needed with split slots: ``h`` for the ``h``-th hub row (its slots' bytes are in winner rows ``R + 2h``
        and ``R + 2h + 1``), -1 for the others.
    nontemporal : bool, optional
        With ``'mul'``/``'div'`` and ``cols == F`` (:data:`._core.STREAM_WIDTHS` columns, rows of at least
        :data:`EDGE_STREAM_MIN_BYTES`): whether the edge gradient's rows, written once each at random edge ids, go
        out as streaming stores (:func:`._core.streams`): None (default) for a gradient larger than the L3, True
        whenever the rows allow, False never.
    rhs_rows : bool, default False
        With ``'mul'``/``'div'`` and ``cols == F``: ``rhs`` is ``(R, F)``, for each destination row and column
        the edge operand at the element's winner (``spmm.gspmm``'s ``rhs_won``), not ``(E, F)``. Where an edge
        won, that is the value it would read in its own row, so the results are the same bit for bit, and the
        pass reads ``R x F`` values in row order instead of ``E x F`` at edge ids.

    Returns
    -------
    Tensor ``(E, cols)``
        Every element is written once: no zero fill, no atomics, independent of the thread count.
    (Tensor ``(E, F)``, Tensor ``(R, F)``) with ``picked``
        The edge gradient and the picked terms.

    Raises
    ------
    TypeError, ValueError
        Operands of the wrong dtype, device or shape.
    """
    check_index("indptr", indptr)
    if eid is not None:
        check_index("eid", eid)
    check_float("grad", grad, min_dim=2)
    if winners.dtype not in (torch.uint8, torch.int16):
        raise TypeError(f"expected uint8 or int16 slot winners, got {winners.dtype}")
    check_out_dtype(out_dtype)
    R = indptr.numel() - 1
    E = int(indptr[-1]) if R >= 0 else 0
    if (grad.dim() != 2 or winners.dim() != 2 or winners.shape[1] != grad.shape[1] or grad.shape[0] != R
            or winners.shape[0] < R or (eid is not None and eid.numel() != E)):
        raise ValueError(f"expected grad ({R}, F), winners of its shape (or more rows, split slots) and eid of {E} "
                         f"elements, got grad {tuple(grad.shape)}, winners {tuple(winners.shape)}, eid "
                         f"{None if eid is None else eid.numel()}")
    hubs = _split_check(winners, R, hub_row, "hub_row", max(R, 0), torch.int32)
    F = grad.shape[1]
    if op not in EDGE_OPS:
        raise ValueError(f"expected op in {tuple(EDGE_OPS)}, got {op!r}")
    H = F if cols is None else int(cols)
    if H < 1 and F > 0 or H > 0 and F % H != 0:
        raise ValueError(f"expected cols dividing F = {F} (the edge operand's width), got {cols!r}")
    factor, negate = EDGE_OPS[op]
    if factor:
        check_index("src", src)
        check_float("lhs", lhs, min_dim=2)
        if src.numel() != E or lhs.dim() != 2 or lhs.shape[1] != F:
            raise ValueError(f"expected src of {E} elements and lhs (N_src, {F}) with op {op!r}, got src "
                             f"{None if src is None else src.numel()}, lhs {tuple(lhs.shape)}")
    if rhs_rows and (not factor or rhs is None or H != F):
        raise ValueError(f"expected op 'mul' or 'div' with rhs ({R}, {F}) for rhs_rows=True, got op {op!r}, rhs "
                         f"{None if rhs is None else tuple(rhs.shape)}, cols {H}")
    if picked and (not factor or rhs is None or H != F):
        raise ValueError(f"expected op 'mul' or 'div' with rhs ({E}, {F}) for picked=True, got op {op!r}, rhs "
                         f"{None if rhs is None else tuple(rhs.shape)}, cols {H}")
    if factor == 2 or picked or rhs_rows:
        check_float("rhs", rhs, min_dim=2)
        want = (R, F) if rhs_rows else (E, H)
        if tuple(rhs.shape) != want:
            raise ValueError(f"expected rhs {want} with op {op!r}{' and rhs_rows=True' if rhs_rows else ''}, got "
                             f"{tuple(rhs.shape)}")
    out_dtype = out_dtype or grad.dtype
    # float64 arithmetic whenever float64 is involved; each value is rounded once
    work_dtype = torch.float64 if torch.float64 in (grad.dtype, out_dtype) else out_dtype
    ge = empty_out((E, H if F else 0), work_dtype)
    pk = None
    if picked:
        wide = torch.float64 in (grad.dtype, out_dtype, lhs.dtype, rhs.dtype)
        pk = empty_out((max(R, 0), F), torch.float64 if wide else torch.float32)
    if E == 0 or F == 0:
        ge = ge.to(out_dtype)
        return (ge, pk.zero_()) if picked else ge
    indptr_np = index_view(indptr.contiguous())
    nthreads = num_threads(E * F)
    bounds = chunk_bounds(indptr_np, nthreads, row_cost=max(1, F // 16))
    pf = GATHER_PREFETCH if prefetch_distance is None else int(prefetch_distance)
    NT = (F if factor and H == F
          and streams(ge, F, nontemporal, widths=STREAM_WIDTHS, min_row_bytes=EDGE_STREAM_MIN_BYTES) else 0)
    rows = bool(rhs_rows) and (factor == 2 or picked)          # 'mul' without picked terms reads no rhs
    run_parallel(_edge_kernel(factor, negate, picked, hubs, NT, rows), nthreads, bounds, indptr_np,
                 index_view(None if eid is None else eid.contiguous()), kernel_view(grad.contiguous()),
                 winners.contiguous().reshape(-1).numpy(), kernel_view(ge), F,
                 index_view(src.contiguous() if factor else None),
                 kernel_view(lhs.contiguous() if factor else grad[:0]),
                 kernel_view(rhs.contiguous() if factor == 2 or picked else grad[:0]), pf, H,
                 kernel_view(pk if picked else ge[:0]), _hub_view(hub_row, hubs, np.int32))
    ge = ge if work_dtype == out_dtype else ge.to(out_dtype)
    return (ge, pk) if picked else ge
