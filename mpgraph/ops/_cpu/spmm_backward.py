"""Fused backward of a weighted gSpMM sum (``u_mul_e`` or ``u_div_e`` with ``sum``/``mean``) on the CPU.

For ``out[v, h, :] = sum over in-edges e = (u -> v) of x[u, h, :] * w[e, h]`` (``x: (N_src, H, D)``,
``w: (E, H)``: one weight per edge and head, GAT's ``(E, H, 1)``; ``H = 1`` is a scalar per edge) and
``G = d loss / d out: (N_dst, H, D)``:

.. math::

    \\frac{\\partial L}{\\partial x_{u,h,d}} = \\sum_{e = (u \\to v)} G_{v,h,d}\\, w_{e,h},
    \\qquad
    \\frac{\\partial L}{\\partial w_{e,h}} = \\sum_d G_{v,h,d}\\, x_{u,h,d}

Both read ``G[v]`` for every edge. Composed from two kernels they gather it twice (a gSpMM on the
reversed graph for ``x``, then a gSDDMM for ``w``), and each gather of ``E`` rows costs as much as the
forward. This kernel walks the reversed structure once (rows are the forward sources ``u``): ``x[u]``
and the row's fp32 accumulator stay in cache, each ``G[v]`` row is gathered once (software prefetch
ahead) and used for both products. Edge ids in that order are scattered (the forward graph is sorted by
destination), so each edge's weights and their gradient are a random access as costly as the row gather
unless it is hidden: the kernel reads ``w[eid[k]]`` and writes ``grad_w[eid[k]]`` in place, prefetching
both :data:`PREFETCH_DISTANCE` slots ahead together with the ``G`` row. One weight per edge (``H = 1``) beyond
the cache is the exception (:func:`_slot_order`: measured faster on the CI machine): there the weights are first moved
into slot order by a parallel copy loop (a scatter over the edge ids when their inverse permutation is
given, which the CPU backend caches per graph, else a gather by ``eid``), the kernel reads and writes them
sequentially, and the gradient goes back to the edge ids by a second scatter. Elementwise weights
``w: (E, F)`` are the case ``H = F``, ``D = 1`` (the op layer sends them to the composed kernels unless
``F = 1``: measured faster).

``u_div_e`` (``divide=True``) is the same pass with each weight's reciprocal ``1 / w`` (fp32) as the factor of
``x``'s gradient, and ``-dot / w**2 = -dot * (1 / w)**2`` as the weight's: one kernel instead of a gSpMM,
a gSDDMM and an elementwise division over the edges.

A ``mean`` (``out[v]`` divided by ``v``'s in-degree) passes ``row_scale = 1 / in-degree``: each edge's factor
and dot are multiplied by ``row_scale[v]`` in the accumulator (one load per edge, prefetched with the ``G``
row), which saves the op layer a scaled copy of ``G``: a pass over it for bf16 and fp32, and for fp16 a float32
copy (``G / deg`` underflows fp16), with which the composed kernels ran.

Accumulation is fp32 (fp64 for fp64) and each result is rounded once to the operands' dtype. Rows are
split into balanced chunks (power-law hubs do not serialise a thread); each ``x`` row is written by the
one thread that owns it and each edge's weight gradient once, so results do not depend on the thread
count.
"""

import functools

import numpy as np
import torch
from numba import njit

from ...precision import accum_dtype
from ._core import (SOURCE_HASH, acc_zero, alloc_acc, atomic_fetch_add, borrow, cached_njit, chunk_bounds, edge_of,
                    empty_out, fold_adjacent, index_view, kernel_view, line_elems, load, load_run, mul_run,
                    num_threads, prefetch, raw_get, raw_set, run_parallel, stack_acc, store, store_fence, store_run,
                    store_run_nt, streams, to_acc)
from ._layout import check_float, check_index

__all__ = ["mul_sum_backward", "PREFETCH_DISTANCE"]

#: default software-prefetch distance in edges (0 disables)
PREFETCH_DISTANCE = 16


@functools.cache
def _make_general_rows(DIV):
    """The general row loop (runtime ``H`` and ``D``); ``DIV``: ``u_div_e`` (see :func:`mul_sum_backward`).

    Heads of ``D > 1`` columns take a row's edges four at a time: one pass over the head's columns loads ``x[u]``
    and the row's accumulator once for four ``G`` rows, and each ``G`` value feeds both its edge's dot and the
    accumulator (the last one to three edges of a row go one at a time, in the same single pass). Measured
    against the loop before (a dot pass, then an axpy pass reading ``G``'s row again, one edge at a time):
    the 1.14M-edge graph of ``mpgraph bench precision``, one head of 256, took 19-22 ms against 28-37 (fp32 and
    bf16); two heads of 128 there 24-27 against 35-38; on 100k nodes and 2M edges (the two in different rounds of
    one scratch script), heads (1, 16), (2, 48), (3, 24) and (8, 16) 0.52-0.99x, one head of 256 (beyond the
    cache) 0.81-1.04x (2 threads, AVX2 VM, forty-first session)."""

    @njit(fastmath={"reassoc", "contract"}, error_model="numpy")  # a zero weight of u_div_e gives inf/nan
    def rows(r_begin, r_end, indptr, indices, eid, G, x, w, gx, gw, acc, scale, H, D, pf_dist, pf_lines, pf_step):
        """Rows ``[r_begin, r_end)`` of the reversed structure: ``gx[r]``, and ``gw`` at each row's slots
        (``w`` and ``gw`` are indexed by ``eid[k]``, or by the slot ``k`` itself when ``eid`` is empty; ``G[v]``
        counts ``scale[v]`` times unless ``scale`` is empty)."""
        F = H * D
        E_end = raw_get(indptr, indptr.size - 1)
        use_eid = eid.size > 0
        use_scale = scale.size > 0
        zero = acc_zero(gx)
        one = to_acc(gx, 1.0)
        for r in range(r_begin, r_end):
            xb = r * F
            for j in range(F):                      # [F] accumulator of gx[r]
                acc[j] = zero
            k = raw_get(indptr, r)
            k_end = raw_get(indptr, r + 1)
            while k < k_end:
                n = 4 if D > 1 and k + 4 <= k_end else 1
                for kq in range(k + pf_dist, k + pf_dist + n):
                    if pf_dist > 0 and kq < E_end:  # G's row pf_dist slots ahead (written out here: a helper
                        vp = raw_get(indices, kq) * F   # taking arrays costs NRT calls per edge)
                        for t in range(pf_lines):
                            prefetch(G, vp + t * pf_step)
                        if use_eid:
                            _prefetch_edge(w, gw, raw_get(eid, kq) * H)
                        if use_scale:
                            prefetch(scale, raw_get(indices, kq))
                v = raw_get(indices, k)
                gb = v * F
                eb = edge_of(eid, use_eid, k) * H
                sc = _row_scale(scale, use_scale, v, one)
                if D == 1:                          # elementwise weights: one vectorisable loop over F
                    for h in range(H):
                        g = to_acc(gx, load(G, gb + h)) * sc
                        wv = _factor(DIV, one, to_acc(gx, load(w, eb + h)))
                        store(gw, eb + h, _weight_grad(DIV, g * to_acc(gx, load(x, xb + h)), wv))
                        acc[h] += g * wv
                elif n == 1:
                    for h in range(H):
                        hb = h * D
                        wv = _factor(DIV, one, to_acc(gx, load(w, eb + h)))
                        ws = wv * sc
                        dot = zero
                        for d in range(D):          # [D] the dot and the axpy in one pass over G's row
                            g = to_acc(gx, load(G, gb + hb + d))
                            dot += g * to_acc(gx, load(x, xb + hb + d))
                            acc[hb + d] += g * ws
                        store(gw, eb + h, _weight_grad(DIV, dot * sc, wv))
                else:                               # slots k .. k + 3
                    v1, v2, v3 = raw_get(indices, k + 1), raw_get(indices, k + 2), raw_get(indices, k + 3)
                    gb1, gb2, gb3 = v1 * F, v2 * F, v3 * F
                    eb1 = edge_of(eid, use_eid, k + 1) * H
                    eb2 = edge_of(eid, use_eid, k + 2) * H
                    eb3 = edge_of(eid, use_eid, k + 3) * H
                    sc1 = _row_scale(scale, use_scale, v1, one)
                    sc2 = _row_scale(scale, use_scale, v2, one)
                    sc3 = _row_scale(scale, use_scale, v3, one)
                    for h in range(H):
                        hb = h * D
                        wv = _factor(DIV, one, to_acc(gx, load(w, eb + h)))
                        wv1 = _factor(DIV, one, to_acc(gx, load(w, eb1 + h)))
                        wv2 = _factor(DIV, one, to_acc(gx, load(w, eb2 + h)))
                        wv3 = _factor(DIV, one, to_acc(gx, load(w, eb3 + h)))
                        ws, ws1, ws2, ws3 = wv * sc, wv1 * sc1, wv2 * sc2, wv3 * sc3
                        dot, dot1, dot2, dot3 = zero, zero, zero, zero
                        for d in range(D):          # [D] four dots and one axpy of four terms
                            xv = to_acc(gx, load(x, xb + hb + d))
                            g = to_acc(gx, load(G, gb + hb + d))
                            g1 = to_acc(gx, load(G, gb1 + hb + d))
                            g2 = to_acc(gx, load(G, gb2 + hb + d))
                            g3 = to_acc(gx, load(G, gb3 + hb + d))
                            dot += g * xv
                            dot1 += g1 * xv
                            dot2 += g2 * xv
                            dot3 += g3 * xv
                            acc[hb + d] += (g * ws + g1 * ws1) + (g2 * ws2 + g3 * ws3)
                        store(gw, eb + h, _weight_grad(DIV, dot * sc, wv))
                        store(gw, eb1 + h, _weight_grad(DIV, dot1 * sc1, wv1))
                        store(gw, eb2 + h, _weight_grad(DIV, dot2 * sc2, wv2))
                        store(gw, eb3 + h, _weight_grad(DIV, dot3 * sc3, wv3))
                k += n
            for j in range(F):
                store(gx, xb + j, acc[j])

    return rows


@njit(inline="always")
def _prefetch_edge(w, gw, start):
    """Prefetch an upcoming edge's weights and the place of their gradient (edge ids in slot order are a
    permutation: these accesses are as random as the ``G`` rows')."""
    prefetch(w, start)
    prefetch(gw, start)     # measured: without it the in-place route took 1.03-1.39x the slot-order route's time


@njit(inline="always")
def _row_scale(scale, use_scale, v, one):
    """The factor of ``G[v]``: ``scale[v]`` (a ``mean``'s ``1 / in-degree``), or ``one`` without a scale."""
    return raw_get(scale, v) if use_scale else one


@njit(inline="always")
def _factor(DIV, one, w):
    """The factor each ``G`` element is multiplied by: ``w`` (``u_mul_e``) or ``1 / w`` (``u_div_e``; a zero
    weight gives inf, so the sums become inf/nan as torch's division does)."""
    return one / w if DIV else w


@njit(inline="always")
def _weight_grad(DIV, dot, factor):
    """``d out / d w`` summed over the edge's head: ``dot`` (``u_mul_e``) or ``-dot / w**2`` written with the
    reciprocal ``factor = 1 / w`` (``u_div_e``)."""
    return -(dot * factor * factor) if DIV else dot


@functools.cache
def _make_heads_rows(W, SEG, DIV, NT=False):
    """Rows of exactly ``W`` features in ``H = W // SEG`` heads of ``SEG``, one weight per edge and head (GAT's
    ``(E, H, 1)``; ``SEG = W`` is one scalar per edge), both compile-time constants. The row's accumulator and
    its widened ``x`` row are stack arrays that LLVM keeps in vector registers (as in the forward's blocked
    passes). Heads of :data:`WIDE_HEAD` columns or more (one head: ``SEG = W``): each head's dot is a
    register reduction in the same loop as its accumulation. Narrow heads: the edge's ``H`` weights are one
    vector load (:func:`._core.load_run`), broadcast to their columns by ``j // SEG`` (a constant per column once
    the loops unroll); the row's ``W`` products ``G * x`` fold by adjacent pairs into the ``H`` dots
    (:func:`._core.fold_adjacent`: ``log2 SEG`` steps of one vector add of even against odd lanes), which are
    scaled and stored as one vector (:func:`._core.mul_run`, :func:`._core.store_run`). Written as Numba loops,
    LLVM made each head's dot a horizontal reduction of its own and each weight and gradient a scalar load or
    store: on the Zen 4 machine (2 threads, uniform graph, 2M edges, the backward alone, the code of 5a8e581 and
    this one round-robin in one process, ``benchmarks/ab_commit.py --heads``, fp32 and bf16, ``u_mul_e`` and
    ``u_div_e``; ``benchmarks/results/ab_fused_backward_heads_s45.jsonl``, forty-fifth session) 8 heads of 8 took
    0.47-0.53x the former fold's time, 4 heads of 16 0.53-0.65x, 4 heads of 8 0.65-0.85x (fp16 in an earlier
    round: 0.43-0.75x); shapes that summed each head on its own in slot order 0.38-0.94x (16 heads of 8, 8, 16 and
    32 heads of 4, 16, 32 and 64 heads of 2), and heads of 16 on 32 and 128 features, which took the general row
    loop, 0.52-0.84x. ``NT`` (elementwise weights, ``SEG == 1``, see :func:`._core.streams`): each edge's weight
    gradient row goes out as one streaming store (:func:`._core.store_run_nt`), and its line is not prefetched.
    ``scratch``, ``H_`` and ``D_`` are the shared row signature's, unused here."""
    H = W // SEG
    NARROW_H, NARROW_W = (H, W) if 1 < SEG < WIDE_HEAD else (1, 1)     # the products path's stack arrays
    if NT and SEG != 1:
        raise ValueError(f"streaming stores serve elementwise weights (SEG = 1) only, got SEG = {SEG}")

    @njit(fastmath={"reassoc", "contract"}, error_model="numpy")  # a zero weight of u_div_e gives inf/nan
    def rows(r_begin, r_end, indptr, indices, eid, G, x, w, gx, gw, scratch, scale, H_, D_, pf_dist, pf_lines,
             pf_step):
        W_LINES = (H + line_elems(w) - 1) // line_elems(w)
        acc = stack_acc(gx, W)                      # [W] accumulator of gx[r]
        xr = stack_acc(gx, W)                       # [W] x[r] in the accumulator type
        wv = stack_acc(gx, NARROW_H)                # [H] the edge's weights (narrow heads only)
        ws = stack_acc(gx, NARROW_H)                # [H] those times the row scale (narrow heads only)
        prod = stack_acc(gx, NARROW_W)              # [W] G * x of the edge, summed per head (narrow heads only)
        row = stack_acc(gx, W if NT else 1)         # [W] the edge's weight gradient row (streaming stores only)
        zero = acc_zero(gx)
        one = to_acc(gx, 1.0)
        E_end = raw_get(indptr, indptr.size - 1)
        use_eid = eid.size > 0
        use_scale = scale.size > 0
        for r in range(r_begin, r_end):
            xb = r * W
            for j in range(W):
                acc[j] = zero
                xr[j] = to_acc(gx, load(x, xb + j))
            for k in range(raw_get(indptr, r), raw_get(indptr, r + 1)):
                if pf_dist > 0 and k + pf_dist < E_end:   # G's row pf_dist slots ahead, as in the general rows
                    vp = raw_get(indices, k + pf_dist) * W
                    for t in range(pf_lines):
                        prefetch(G, vp + t * pf_step)
                    if use_eid:
                        ep = raw_get(eid, k + pf_dist) * H
                        if SEG == 1:                # (compile-time) elementwise weights: rows as long as G's
                            for t in range(pf_lines):
                                if NT:              # (compile-time) their gradient goes around the caches
                                    prefetch(w, ep + t * pf_step)
                                else:
                                    _prefetch_edge(w, gw, ep + t * pf_step)
                        else:               # every line of the edge's H weights (two or more from 128 B on)
                            for t in range(W_LINES):
                                _prefetch_edge(w, gw, ep + t * pf_step)
                    if use_scale:
                        prefetch(scale, raw_get(indices, k + pf_dist))
                v = raw_get(indices, k)
                gb = v * W
                eb = edge_of(eid, use_eid, k) * H
                sc = _row_scale(scale, use_scale, v, one)
                if SEG == 1:                        # (compile-time) elementwise weights (E, W): no dots
                    for j in range(W):
                        g = to_acc(gx, load(G, gb + j)) * sc
                        f = _factor(DIV, one, to_acc(gx, load(w, eb + j)))
                        acc[j] += g * f
                        if NT:                      # (compile-time) gathered into the row, stored below
                            row[j] = _weight_grad(DIV, g * xr[j], f)
                        else:
                            store(gw, eb + j, _weight_grad(DIV, g * xr[j], f))
                    if NT:                          # (compile-time) the row out as one streaming store
                        store_run_nt(gw, eb, row, W)
                    continue
                if SEG >= WIDE_HEAD:                # (compile-time) each head's dot is a register reduction in
                    for h in range(H):              # the loop; through prod[] measured 1.5-2.7x slower at
                        f = _factor(DIV, one, to_acc(gx, load(w, eb + h)))  # H = 1, W = 64
                        fs = f * sc
                        dot = zero
                        for d in range(SEG):        # [SEG]: one G element feeds both products
                            j = h * SEG + d
                            g = to_acc(gx, load(G, gb + j))
                            acc[j] += g * fs
                            dot += g * xr[j]
                        store(gw, eb + h, _weight_grad(DIV, dot * sc, f))
                    continue
                load_run(w, eb, wv, NARROW_H)
                if DIV:                             # (compile-time) the reciprocals in a loop of their own:
                    for h in range(H):              # one vector division
                        wv[h] = _factor(DIV, one, wv[h])
                mul_run(ws, wv, sc, NARROW_H)
                for j in range(W):                  # [W]: one G element feeds both products
                    g = to_acc(gx, load(G, gb + j))
                    acc[j] += g * ws[j // SEG]
                    prod[j] = g * xr[j]
                fold_adjacent(prod, W, H)           # each head's dot, contiguous in prod[:H]
                mul_run(prod, prod, sc, H)
                if DIV:                             # (compile-time) -dot / w**2 = -(dot * f) * f, f = 1 / w
                    mul_run(prod, prod, wv, H)
                    mul_run(prod, prod, wv, H)
                    mul_run(prod, prod, -one, H)
                store_run(gw, eb, prod, H)
            for j in range(W):
                store(gx, xb + j, acc[j])

    return rows


#: one weight per edge (``H == 1``) moves into slot order only when the weights take at least this many bytes;
#: smaller ones stay in the cache, where reading and writing them in place at the edge ids costs less than the
#: two permutes: on the AVX2 VM the 1.1M-edge graph of ``mpgraph bench precision`` (bf16 weights, 2.3 MB) took
#: 0.72-0.88x in place over slot order at D = 41, 64 and 128 (0.99 at 256), while fp32 weights there (4.6 MB)
#: took 1.01-1.16x, and 2M edges (4 MB of bf16) 0.95-1.17x. A fit to these points, not a cache size read from
#: the machine.
SLOT_ORDER_MIN_BYTES = 3 << 20


def _slot_order(W, SEG, H, weight_bytes):
    """Whether the kernel of :func:`_kernel_key` ``(W, SEG)`` for ``H`` heads takes its weights (``weight_bytes``
    in all) in slot order (moved there and back by :func:`_permute`) rather than reading and writing them at each
    slot's edge id with a software prefetch: one weight per edge (``H == 1``, every kernel family) of at least
    :data:`SLOT_ORDER_MIN_BYTES`.

    In place over slot order (``benchmarks/edge_order.py``, 2 threads): on the 2-core AVX2 AMD EPYC VM of the
    thirty-second to thirty-ninth sessions, ``H = 1`` took 1.03-1.30x on 10M edges (D = 64, 128, 256; fp32 and bf16)
    and 0.95-1.46x on 2M edges (D = 64, 128, 256) over two runs, so one weight per edge moves into slot order there
    (``edge_order_h1_s39.jsonl``); several heads measured 0.88-1.07x on 10M edges (in place faster for 4 and 8 heads
    of 16 in bf16), so they keep their routes. On the AVX-512 AMD EPYC machine of the eighteenth session the same
    script found ``H = 1`` 0.84-0.99x on 10M edges, general heads (4, 16) 0.83-0.86x, (8, 16) 0.90-1.07x; on 2M
    edges 0.71-1.07x; wide heads on both, (2, 64) 0.71-0.88x, (4, 32) 0.71-0.85x, (2, 32) 0.81-0.85x (2M only): the
    choice for one weight per edge depends on the machine's memory system and follows the one CI and the README's
    figures run on. Narrow heads kept their per-head sums in slot order where they did not fold their dots until
    the forty-fifth session; since every narrow shape folds in vectors (:func:`_make_heads_rows`) and prefetches
    every line of an edge's weights (32 fp32 weights are two lines; one was prefetched), all of them read in place
    (the folded kernel in place against the per-head sums in slot order: 0.52-0.92x, 64 heads of 2 0.69-1.06x; in
    slot order the folded kernel took 0.47-1.34x the same, behind in place for 16 heads of 8, 16 heads of 2 and
    8 heads of 4)."""
    return H == 1 and weight_bytes >= SLOT_ORDER_MIN_BYTES


#: head width from which the register kernel reduces each head's dot in its loop (narrower heads go through
#: a products array)
WIDE_HEAD = 32

#: row widths with a register-resident kernel (``H = 1``, or heads of :data:`HEAD_SEGS` columns); other shapes
#: take the general row loop. (Rows of heads a multiple of 128 columns had a column-blocked kernel from the
#: fifteenth to the fortieth session; the general loop's four-edge pass took 0.57-0.71x its time on the
#: 1.14M-edge graph, (1, 256) and (2, 128), and 0.9-1.07x on 100k nodes beyond the cache, so it went.)
#: 32 since the twenty-eighth session, against the general loop (uniform graph, 2M edges, 2 threads, fp32 and
#: bf16, ``u_mul_e``/``u_div_e`` sum, one in-process round of 7 reps): one weight per edge 0.78-0.83x, 8 heads of
#: 4 0.56-0.69x, 16 heads of 2 0.55-0.74x, elementwise (E, 32) 0.95-1.01x, 4 heads of 8 0.98-1.05x (0.84-0.86x
#: with its dots folded)
BLOCK_WIDTHS = (32, 64, 128)
#: head widths ``D`` with a register-resident kernel for ``H = W // D`` heads: narrow ones through a products
#: array folded into the dots, from :data:`WIDE_HEAD` on with each head's dot in the loop. Heads of 16 took it only
#: at 64 columns until the forty-fifth session (the general loop, whose per-head loops vectorise from D = 16 on,
#: was as fast as per-head sums of the products); with the vector fold, 2 heads of 16 and 8 heads of 16 took
#: 0.61-0.71x and 0.53-0.86x the general loop's time (:func:`_make_heads_rows`). Measured register kernel over
#: general loop before (2 threads, fp32 / bf16): narrow, 2M edges, (8, 8) fp32 38 against 62 ms; wide, 10M edges,
#: (2, 64) 0.51 / 0.81x, (4, 32) 0.70 / 0.78x, (2, 32) 0.67 / 0.70x, and on 2M edges 0.64-0.84x
HEAD_SEGS = (2, 4, 8, 16, 32, 64)


def _kernel_key(H, D):
    """``(W, SEG)`` of the kernel for ``H`` heads of ``D``: the register kernel of ``W // SEG`` heads (``SEG = W``:
    one weight per edge), or ``(0, 0)``, the general row loop."""
    W = H * D
    if W in BLOCK_WIDTHS and (H == 1 or D == 1 or D in HEAD_SEGS):
        return W, D
    return 0, 0


@functools.cache
def _kernel(W, SEG=0, DIV=False, NT=False):
    """The compiled kernel of a :func:`_kernel_key`: the general row loop when ``W = 0``, else
    :func:`_make_heads_rows` of ``(W, SEG)``; ``DIV`` compiles ``u_div_e``'s gradients instead of ``u_mul_e``'s,
    ``NT`` streaming stores of elementwise weights' gradient rows. Both row functions share one signature."""
    if not (W == 0 or (SEG and W % SEG == 0)):
        raise ValueError(f"expected a _kernel_key (W, SEG) with SEG dividing W, got {(W, SEG)}")
    source_hash = SOURCE_HASH  # part of Numba's cache key (see _core._source_hash)
    general = W == 0
    block_rows = _make_general_rows(DIV) if general else _make_heads_rows(W, SEG, DIV, NT)

    @cached_njit(nogil=True)
    def kernel(counter, bounds, indptr, indices, eid, G, x, w, gx, gw, scale, H, D, pf_dist, pf_lines, pf_step):
        _ = source_hash
        indptr, indices, eid = borrow(indptr), borrow(indices), borrow(eid)
        G, x, w, gx, gw, scale = borrow(G), borrow(x), borrow(w), borrow(gx), borrow(gw), borrow(scale)
        # one scratch per thread, not per row: the general loop's row accumulator
        acc = alloc_acc(gx, H * D if general else 1)
        nchunks = bounds.size - 1
        c = atomic_fetch_add(counter, 0, 1)
        while c < nchunks:
            block_rows(raw_get(bounds, c), raw_get(bounds, c + 1), indptr, indices, eid, G, x, w, gx, gw, acc, scale,
                       H, D, pf_dist, pf_lines, pf_step)
            c = atomic_fetch_add(counter, 0, 1)
        if NT:      # (compile-time) this thread's streaming stores visible before the pass ends
            store_fence()

    return kernel


#: edges per work chunk of the slot-order copies
COPY_CHUNK = 1 << 16


@functools.cache
def _copy_kernel():
    source_hash = SOURCE_HASH

    @cached_njit(nogil=True)
    def kernel(counter, out, src, perm, E, H, gather):
        """``out[k] = src[perm[k]]`` (gather) or ``out[perm[k]] = src[k]`` (scatter), rows of ``H`` raw
        elements; independent loads, so many are in flight at once."""
        _ = source_hash
        out, src, perm = borrow(out), borrow(src), borrow(perm)
        c = atomic_fetch_add(counter, 0, 1)
        while c * COPY_CHUNK < E:
            for k in range(c * COPY_CHUNK, min(E, (c + 1) * COPY_CHUNK)):
                p = raw_get(perm, k)
                for h in range(H):
                    if gather:
                        raw_set(out, k * H + h, raw_get(src, p * H + h))
                    else:
                        raw_set(out, p * H + h, raw_get(src, k * H + h))
            c = atomic_fetch_add(counter, 0, 1)

    return kernel


#: the empty ``scale`` of a call without a row scale, in each accumulator type (its kernels' argument type)
_NO_SCALE = {torch.float32: np.zeros(0, np.float32), torch.float64: np.zeros(0, np.float64)}


def _permute(t, perm, gather, out=None):
    """Rows of ``t: (E, H)`` moved by ``perm``: ``t[perm]`` (gather) or ``out[perm] = t`` (scatter), into
    ``out`` when given (a buffer of ``t``'s shape and dtype that does not overlap ``t``)."""
    if out is None:
        out = empty_out(t.shape, t.dtype)
    E, H = t.shape
    nthreads = min(num_threads(E * H), (E + COPY_CHUNK - 1) // COPY_CHUNK)
    run_parallel(_copy_kernel(), nthreads, kernel_view(out), kernel_view(t.contiguous()), index_view(perm), E, H,
                 gather)
    return out


def mul_sum_backward(indptr, indices, eid, G, x, w, *, divide=False, row_scale=None, eid_inverse=None,
                     prefetch_distance=None, nontemporal=None):
    """Both gradients of ``out = u_mul_e_sum(x, w)`` (or ``u_div_e_sum`` with ``divide``) in one pass over the
    reversed structure.

    Parameters
    ----------
    indptr : Tensor, int64, ``(N_src + 1,)``
        Row pointer of the reversed graph (the forward ``Index.csr()[0]``): row ``u`` holds ``u``'s
        out-edges.
    indices : Tensor, int64, ``(E,)``
        Forward destination ``v`` of each slot.
    eid : Tensor, int64, ``(E,)``, or None
        Edge id of each slot; None means the identity.
    G : Tensor ``(N_dst, H, D)``
        Gradient of the forward output.
    x : Tensor ``(N_src, H, D)``
        Forward source features; same dtype as ``G``.
    w : Tensor ``(E, H)``
        Forward edge weights (one per head); same dtype as ``G``.
    divide : bool, default False
        The forward divided by the weights (``u_div_e``): ``grad_x`` sums ``G[v] / w[e]`` and ``grad_w`` is
        ``-sum_d G[v] x[u] / w[e]**2``, both through the weight's reciprocal computed in the accumulator
        type (one extra rounding there, none in the output format). A zero weight gives inf/nan as torch's
        division does.
    row_scale : Tensor ``(N_dst,)``, float32 (float64 for float64 operands), optional
        A factor of each row of ``G``: the gradients are those of ``G[v] * row_scale[v]``, the product formed
        in the accumulator (``mean``'s ``1 / in-degree``: the forward divided each sum by it). Scaling inside
        the pass saves a pass over ``G`` and, for float16, a float32 copy of it (``G / deg`` underflows
        float16 at large in-degrees; here nothing scaled is stored).
    eid_inverse : Tensor, int64, ``(E,)``, optional
        The slot of each edge id (``eid_inverse[eid[k]] == k``). Used only where ``w`` is moved into slot
        order (:func:`_slot_order`): then by a scatter over the edge ids (sequential reads, random writes)
        instead of a gather by ``eid`` (random reads), measured 2-3x faster on 2M edges. Trusted, like the
        structure.
    prefetch_distance : int, optional
        Software prefetch distance in edges (0 disables); default :data:`PREFETCH_DISTANCE`.
    nontemporal : bool, optional
        Elementwise weights (``D == 1``) in a register kernel: whether their gradient rows go out as streaming
        stores (:func:`._core.streams`): None (default) for a gradient larger than the L3, True whenever the
        rows allow, False never.

    Returns
    -------
    grad_x : Tensor ``(N_src, H, D)``
    grad_w : Tensor ``(E, H)``
        In the operands' dtype; sums and dots accumulate in fp32 (fp64 for fp64) and round once.
        Nodes without out-edges get 0.

    Raises
    ------
    ValueError
        Shapes that do not fit together.
    TypeError
        Operands of different or unsupported dtypes, or not on the CPU.

    Notes
    -----
    Structure contents are trusted, as in :func:`.gspmm`.
    """
    check_index("indptr", indptr)
    check_index("indices", indices)
    if eid is not None:
        check_index("eid", eid)
    for name, t in (("G", G), ("x", x)):
        check_float(name, t, min_dim=3)
    check_float("w", w, min_dim=2)
    if not (G.dtype == x.dtype == w.dtype):
        raise TypeError(f"expected G, x and w of one dtype, got {G.dtype}, {x.dtype} and {w.dtype}")
    scale_dtype = accum_dtype(G.dtype)
    if row_scale is not None:
        if not isinstance(row_scale, torch.Tensor) or row_scale.dtype != scale_dtype or row_scale.device.type != "cpu":
            got = f"{row_scale.dtype} on {row_scale.device}" if isinstance(row_scale, torch.Tensor) else type(row_scale)
            raise TypeError(f"expected row_scale as a CPU {scale_dtype} tensor (the accumulator type of {G.dtype}), "
                            f"got {got}")
        if row_scale.dim() != 1 or row_scale.numel() != G.shape[0]:
            raise ValueError(f"expected row_scale of shape ({G.shape[0]},), one factor per row of G, got "
                             f"{tuple(row_scale.shape)}")
    N_src, H, D = x.shape[0], x.shape[1], x.shape[2]
    E = indices.numel()
    if (x.dim() != 3 or G.dim() != 3 or tuple(G.shape[1:]) != (H, D) or tuple(w.shape) != (E, H)
            or indptr.numel() != N_src + 1):
        raise ValueError(f"expected G (N_dst, {H}, {D}), w ({E}, {H}) and indptr of {N_src + 1} elements for x "
                         f"{tuple(x.shape)}, got G {tuple(G.shape)}, w {tuple(w.shape)}, indptr {indptr.numel()}")
    gx = empty_out(x.shape, x.dtype)
    if N_src == 0 or H * D == 0 or E == 0:
        return gx.zero_(), torch.zeros(w.shape, dtype=w.dtype)
    W, SEG = _kernel_key(H, D)
    permuted = eid is not None and _slot_order(W, SEG, H, w.numel() * w.element_size())
    if not permuted:                    # w and its gradient in edge order, reached through eid (None: identity)
        w_k, eid_k = w.contiguous(), eid
    elif eid_inverse is not None:
        check_index("eid_inverse", eid_inverse)
        if eid_inverse.numel() != E:
            raise ValueError(f"expected eid_inverse of {E} elements, got {eid_inverse.numel()}")
        w_k, eid_k = _permute(w, eid_inverse, gather=False), None   # w_k[eid_inverse[e]] = w[e]: random writes
    else:
        w_k, eid_k = _permute(w, eid, gather=True), None            # w_k[k] = w[eid[k]]: random reads
    gw_k = empty_out(w.shape, w.dtype)
    G_np = kernel_view(G.contiguous())
    indptr_np = index_view(indptr.contiguous())
    nthreads = num_threads(E * H * D)
    bounds = chunk_bounds(indptr_np, nthreads, row_cost=max(1, H * D // 16))
    pf = PREFETCH_DISTANCE if prefetch_distance is None else int(prefetch_distance)
    pf_lines = (H * D * G_np.itemsize + 63) // 64
    scale_np = (_NO_SCALE[scale_dtype] if row_scale is None else kernel_view(row_scale.contiguous()))
    NT = SEG == 1 and streams(gw_k, W, nontemporal)
    run_parallel(_kernel(W, SEG, DIV=bool(divide), NT=NT), nthreads, bounds, indptr_np,
                 index_view(indices.contiguous()), index_view(None if eid_k is None else eid_k.contiguous()), G_np,
                 kernel_view(x.contiguous()), kernel_view(w_k), kernel_view(gx), kernel_view(gw_k), scale_np, H, D, pf,
                 pf_lines, 64 // G_np.itemsize)
    if not permuted:
        return gx, gw_k
    # w_k is this call's own slot-order copy and no longer needed: it receives grad_w in edge order, so the
    # backward holds two (E, H) buffers at its peak, not three
    return gx, _permute(gw_k, eid, gather=False, out=w_k)

