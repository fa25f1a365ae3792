"""gSpMM on the CPU: reduce messages over the edges of each row of a compressed structure.

.. math::

    \\mathrm{out}[r] = \\bigoplus_{k=\\mathrm{indptr}[r]}^{\\mathrm{indptr}[r+1]-1}
        \\phi(\\mathrm{lhs}[\\mathrm{indices}[k]], \\mathrm{rhs}[\\mathrm{eid}[k]])

With ``Index.csc()`` (rows = destinations, ``indices`` = sources) this is forward
message passing, ``update_all(fn.u_mul_e('h', 'w', 'm'), fn.sum('m', 'h'))``; with
``Index.csr()`` it reduces over out-edges (the backward with respect to ``u``).

Work is split into chunks of consecutive rows with about equal edge counts
(:func:`._core.chunk_bounds`); threads claim chunks dynamically. Messages are
added to an fp32 accumulator (fp64 for fp64 output) edge by edge in slot order
and rounded once when stored, so results do not depend on threads or blocking.

Two row engines:

* blocked passes (layouts ``SAME`` and ``RHS_BLOCK``: copies, elementwise ops, GAT
  heads, per-edge scalars): a pass reduces 64 columns (128 for 16-bit output) of
  one row over all its edges with the accumulators in vector registers, software-
  prefetching the source rows ``PREFETCH_DISTANCE`` edges ahead; max/min that record
  winners keep each winner's slot (int32) in registers beside it, 32 columns a pass
  (``TRACK_BLOCK``), after passes of 128 or 64 where the kernels compile for AVX-512
  (``TRACK_WIDE``);
* one edge at a time into a scratch row (``LHS_BLOCK`` and ``GENERAL`` broadcasts).
"""

import functools
import os

import numpy as np
import torch
from numba import njit, types
from numba.extending import overload

from .._reference import split_hub_rows
from ._core import (PASS_SERIAL_WORK, SOURCE_HASH, acc_zero, alloc_acc, atomic_fetch_add, borrow, cached_njit,
                    chunk_bounds, edge_of, empty_out, index_view, kernel_view, line_elems, load, load_pair, num_threads,
                    pair_loads, prefetch, raw_get, raw_set, run_parallel, select, stack_acc, stack_i32, store,
                    target_vector_registers, to_acc)
from ._layout import (LHS_BLOCK, RHS_BLOCK, SAME, broadcast_layout, check_float, check_index, check_out_dtype,
                      needs_fp64_pass)
from ._ops import (REDUCES, SPMM_OPS, better, binop, is_arg_literal, is_arg_reduce, is_mean, literal_value,
                   reduce_init, uses_lhs, uses_rhs)

#: default software-prefetch distance in edges (0 disables); measured in benchmarks/cpu_kernels.py
PREFETCH_DISTANCE = 16


# ----------------------------------------------------------------------------- shared helpers


def _accumulate(reduce, acc, j, m, arg_l, arg_r, o, s, ek, track_l, track_r):
    """``acc[j] (+)= m`` for the literal ``reduce``; max/min also record the winner's ids (scratch-row engine)."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(_accumulate, prefer_literal=True)
def _accumulate_impl(reduce, acc, j, m, arg_l, arg_r, o, s, ek, track_l, track_r):
    if literal_value(reduce) is None:
        return None
    if is_arg_literal(reduce):
        def impl(reduce, acc, j, m, arg_l, arg_r, o, s, ek, track_l, track_r):
            if better(reduce, m, acc[j]):
                acc[j] = m
                if track_l:
                    raw_set(arg_l, o + j, s)
                if track_r:
                    raw_set(arg_r, o + j, ek)
        return impl

    def impl(reduce, acc, j, m, arg_l, arg_r, o, s, ek, track_l, track_r):
        acc[j] += m
    return impl


def _combine(reduce, acc, m):
    """``acc (+) m`` without branches: a sum, or the max/min (NaN messages never win)."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(_combine, prefer_literal=True)
def _combine_impl(reduce, acc, m):
    name = literal_value(reduce)
    if name in ("sum", "mean"):
        return lambda reduce, acc, m: acc + m
    if name in ("max", "min"):
        return lambda reduce, acc, m: select(better(reduce, m, acc), m, acc)
    return None


def _message(op, lhs, i, rhs, j):
    """``op(lhs[i], rhs[j])``, reading only the operands ``op`` uses."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(_message, prefer_literal=True)
def _message_impl(op, lhs, i, rhs, j):
    name = literal_value(op)
    if name is None:
        return None
    if name == "copy_lhs":
        return lambda op, lhs, i, rhs, j: load(lhs, i)
    if name == "copy_rhs":
        return lambda op, lhs, i, rhs, j: load(rhs, j)
    return lambda op, lhs, i, rhs, j: binop(op, load(lhs, i), load(rhs, j))


@njit
def _start_row(reduce, acc, F, zero, arg_l, arg_r, o, track_l, track_r):
    for j in range(F):
        acc[j] = reduce_init(reduce, zero)
    if track_l:
        for j in range(F):
            raw_set(arg_l, o + j, -1)
    if track_r:
        for j in range(F):
            raw_set(arg_r, o + j, -1)


@njit
def _finish_row(reduce, acc, out, o, F, deg, zero):
    """Round ``acc`` once into ``out[o : o + F]`` (mean divides first; rows without edges give 0)."""
    if deg == 0:
        for j in range(F):
            store(out, o + j, zero)
    elif is_mean(reduce):
        d = to_acc(out, deg)
        for j in range(F):
            store(out, o + j, acc[j] / d)
    else:
        for j in range(F):
            store(out, o + j, acc[j])


# ----------------------------------------------------------------------------- blocked passes
# A pass reduces the columns [col, col + W) of one row over all of the row's edges, then rounds once
# into ``out``. W is a compile-time constant, so the accumulator is a stack array that LLVM keeps in
# vector registers (4 zmm for W = 64 fp32, 8 for W = 128) while the loop over W is vectorised (16
# columns get fully unrolled into scalar code). A value pass reads 256 bytes of each source row (64 fp32
# or 128 16-bit values), prefetched ``pf_dist`` edges ahead, one hint per cache line; this measured faster
# than whole-row passes at D=256. 16-bit rows take 128-column passes, then one of 64; the last columns
# (fewer than 64) take a pass of runtime width with the accumulator in an L1-resident scratch row. Max/min
# keeping the winners take passes of TRACK_BLOCK (32) columns for every dtype, then the runtime-width one; on
# AVX-512 targets passes of the first TRACK_WIDE width (128 or 64) a row holds come first.

CONTRACT = {"contract"}
BLOCK = 64  # pass width for fp32/fp64 output
BLOCK_16 = 128  # pass width for 16-bit output (256 bytes of each source row per pass)
#: pass width of max/min keeping the winners, every dtype: 32 running extremes and 32 int32 slots take 8 of
#: AVX2's 16 vector registers; at 64 (128) columns they spilled: copy_u's pass took 2.6x (fp32) and 3.3x
#: (bf16) the time of the pass without winners on cached rows (1M edges from 4000 nodes, D=128: fp32 21.9 -> 12.3 ms,
#: bf16 25.3 -> 16.3, copy_e D=64 bf16 26.2 -> 15.8, GAT-like 8 heads of 8 bf16 24.5 -> 19.4; 16 columns
#: unrolled into scalar code, 68 ms; thirty-fifth session)
TRACK_BLOCK = 32
#: :func:`spmm_kernel`'s ``need_arg`` for slot winners of an elementwise product that also copy the edge
#: operand's element at each winner into ``rhs_won`` (:func:`gspmm`)
KEEP_RHS = 2
#: wider first passes of max/min keeping the winners where the kernels compile for AVX-512
#: (:func:`._core.target_vector_registers`), whose 32 vector registers hold 128 running fp32 extremes and their
#: 128 int32 slots (16 zmm): a row segment takes passes of the first of these widths it holds, then of
#: :data:`TRACK_BLOCK` columns (:func:`track_width`). Empty on AVX2. Measured against the 32-column passes on
#: a 2-core AMD EPYC (Zen 4; ``benchmarks/track_wide.py``, forty-fourth session): the forward that records the
#: winners 0.25-1.0x at D = 128 and 256 in 45 of 48 timings (1.02, 1.08, 1.22 in the others), 0.65-0.89x at
#: D = 64 except bf16 ``copy_u`` (1.09-1.18x of 7 ms); 0.73-0.96x on 10M edges at D = 128
TRACK_WIDE = (128, 64) if target_vector_registers() >= 32 else ()
#: the widest pass that takes float32 rows whole (:func:`takes_whole_rows`): :data:`BLOCK_16` (128 columns, 512
#: bytes of each source row) where the kernels compile for AVX-512, whose 32 vector registers hold the 128 fp32
#: sums in 8; :data:`BLOCK` on AVX2, where they would take all 16. A row of 128 columns then takes one walk over
#: its edges instead of two passes of 64. Measured (``benchmarks/ab_commit.py``, the forward of the commit before
#: and this one round-robin in one process, bit-equal results, 2 threads, Zen 4, forty-fifth session,
#: the last of three rounds in ``benchmarks/results/ab_fp32_rows128_s45.jsonl``): 10M-edge graph, D = 128,
#: ``copy_u`` sum, mean, max without winners and ``u_mul_e`` sum 0.68-0.89x; the 4M-edge power-law graph
#: 0.67-0.91x, except one round of ``copy_u`` sum at 1.05x (0.86x in the other two). Rows wider than 128 keep the
#: 64-column passes: 128-column passes there measured 0.84-0.92x for ``u_mul_e`` sum but 1.0-1.09x for ``copy_u``
#: sum (D = 192 and 256). The uniform graph's rows of 128 take the column slabs (:func:`slab_width`), unchanged
BLOCK_32 = BLOCK_16 if target_vector_registers() >= 32 else BLOCK


@njit
def _prefetch_rhs(rhs, start, count):
    """Prefetch ``count`` elements of ``rhs`` from ``start``: an upcoming edge's row (edge ids in slot order
    are a permutation, so these reads are as random as the source rows')."""
    for t in range(0, count, line_elems(rhs)):
        prefetch(rhs, start + t)


def _make_value_pass(W, chunk=False):
    """Sum/mean (or max/min without winners) pass over ``W`` columns (``W == 0``: runtime width ``w``
    into ``scratch``) of row ``r0``, or with ``chunk`` of the rows ``r0 : r1`` (an empty one gets zeros). Its
    arguments are :func:`_make_arg_pass`'s (the winners arrays and ``scratch_slot`` unused), so one column walk
    (:func:`_flat_segments`) drives both, a row at a time. A ``chunk`` pass serves the rows that one full-width
    pass covers (:func:`_whole_rows`). The pass of one row loops exactly once (its ``r1`` unused): compiled
    with a loop to ``r1`` it ran fp32 copy_u sum at D=128 (two passes a row) in 1.13x the time.
    """
    size = max(W, 1)
    half = max(W // 2, 1)

    @njit(fastmath=CONTRACT)
    def value_pass(op, reduce, w, col, r0, r1, indptr, k_last, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl, Fr,
                   scalar_rhs, rhs_col, pf_dist, scratch, scratch_slot):
        n = W if W > 0 else w
        acc = stack_acc(out, size) if W > 0 else scratch  # [W] fp32 (fp64 for fp64 output)
        # bfloat16 node rows in a fixed-width pass (copies, or products with one value per edge): two columns
        # per 32-bit load, the even ones accumulated in ev, the odd ones in od (the same sums, interleaved
        # back at the end)
        pairs = W > 1 and uses_lhs(op) and pair_loads(lhs) and (scalar_rhs or not uses_rhs(op))
        ev = stack_acc(out, half)
        od = stack_acc(out, half)
        zero = acc_zero(out)
        use_eid = eid.size > 0
        line = line_elems(lhs)
        prefetching = uses_lhs(op) and pf_dist > 0
        for r in range(r0, r1 if chunk else r0 + 1):
            k0 = raw_get(indptr, r)
            k1 = raw_get(indptr, r + 1)
            o = r * F
            if chunk and k1 == k0:  # (compile-time chunk) the column walk never passes an empty row
                _empty_row(op, out, arg_l, arg_r, o + col, n, False)
                continue
            # both initialised whatever ``pairs`` is: initialising only the one in use (twenty-second session) made
            # fp16 u_mul_e sum 2.5x slower on 10M edges (429 against 174 ms, D=128; twenty-third session)
            for j in range(n):
                acc[j] = reduce_init(reduce, zero)
            for i in range(half):
                ev[i] = reduce_init(reduce, zero)
                od[i] = reduce_init(reduce, zero)
            for k in range(k0, k1):
                if prefetching:
                    p = raw_get(indices, min(k + pf_dist, k_last)) * Fl + col
                    for t in range(0, n, line):
                        prefetch(lhs, p + t)
                if uses_rhs(op) and use_eid and pf_dist > 0:
                    _prefetch_rhs(rhs, raw_get(eid, min(k + pf_dist, k_last)) * Fr + (rhs_col if scalar_rhs else col),
                                  1 if scalar_rhs else n)
                lb = (raw_get(indices, k) if uses_lhs(op) else 0) * Fl + col
                ek = edge_of(eid, use_eid, k)
                if pairs:
                    b = to_acc(out, load(rhs, ek * Fr + rhs_col)) if uses_rhs(op) else zero
                    for i in range(half):
                        lo, hi = load_pair(lhs, lb + 2 * i)
                        if uses_rhs(op):
                            lo = binop(op, to_acc(out, lo), b)
                            hi = binop(op, to_acc(out, hi), b)
                        ev[i] = _combine(reduce, ev[i], to_acc(out, lo))
                        od[i] = _combine(reduce, od[i], to_acc(out, hi))
                elif uses_lhs(op) and uses_rhs(op) and scalar_rhs:  # [W] op scalar
                    b = to_acc(out, load(rhs, ek * Fr + rhs_col))
                    for j in range(n):
                        acc[j] = _combine(reduce, acc[j], binop(op, to_acc(out, load(lhs, lb + j)), b))
                else:  # [W] op [W]
                    rb = ek * Fr + col
                    for j in range(n):
                        acc[j] = _combine(reduce, acc[j], to_acc(out, _message(op, lhs, lb + j, rhs, rb + j)))
            if pairs:
                for i in range(half):
                    acc[2 * i] = ev[i]
                    acc[2 * i + 1] = od[i]
            if is_mean(reduce):
                d = to_acc(out, k1 - k0)
                for j in range(n):
                    store(out, o + col + j, acc[j] / d)
            else:
                for j in range(n):
                    store(out, o + col + j, acc[j])

    return value_pass


def _lhs_winner(arg_l, indices, kb, slot):
    """What ``arg_l`` records for a winner at slot ``kb`` (offset ``slot`` in its row, -1: none): the source
    node ``indices[kb]`` (or -1), or, when ``arg_l`` is 8 or 16 bits wide, ``slot`` itself (slot winners;
    -1 is stored as 255 in uint8, which no slot reaches since rows then have at most 255 edges)."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(_lhs_winner)
def _lhs_winner_impl(arg_l, indices, kb, slot):
    if arg_l.dtype.bitwidth <= 16:
        return lambda arg_l, indices, kb, slot: slot
    return lambda arg_l, indices, kb, slot: raw_get(indices, kb) if slot >= 0 else -1


def _rhs_winner(arg_r, eid, use_eid, kb, slot):
    """What ``arg_r`` records for a winner at slot ``kb``: its edge id (or -1), or, for 8/16-bit slot
    winners, ``slot`` itself (as :func:`_lhs_winner`; the op then passes one slot array as both)."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(_rhs_winner)
def _rhs_winner_impl(arg_r, eid, use_eid, kb, slot):
    if arg_r.dtype.bitwidth <= 16:
        return lambda arg_r, eid, use_eid, kb, slot: slot
    return lambda arg_r, eid, use_eid, kb, slot: edge_of(eid, use_eid, kb) if slot >= 0 else -1


def _make_arg_pass(W, keep=False):
    """Max/min pass over ``W`` columns (``W == 0``: runtime width ``w`` into scratch) of row ``r0`` (the
    arguments of :func:`_make_value_pass`). ``keep`` (slot winners of an elementwise product, compiled in):
    ``arg_r`` is not a winners array but ``rhs_won`` (:func:`gspmm`), which gets the edge operand's element at
    each winner: a compile-time ``W`` keeps it in registers beside the extreme (a select per element, stored
    once per row; copied after the loop from the winners' rows, the copy took 1.1-1.4x the bf16 pass's time),
    the runtime width copies it from the winning edge's row after the loop.

    Per column it keeps the running extreme and the winning edge's slot offset ``k - k0`` (int32, so
    the two fit in registers together), then maps the slot to the source node and the edge id. It reads one
    column per load: paired bf16 loads (as :func:`_make_value_pass`) measured 1.17x the time for copies and
    no gain for products with one value per edge (paired runs, 10M edges, D=128, twenty-second session).
    """
    size = max(W, 1)
    KEEP_REG = keep and W > 0       # the winners' edge operand values in registers

    @njit
    def arg_pass(op, reduce, w, col, r0, r1, indptr, k_last, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl, Fr,
                 scalar_rhs, rhs_col, pf_dist, scratch, scratch_slot):
        n = W if W > 0 else w
        acc = stack_acc(out, size) if W > 0 else scratch
        best = stack_i32(size) if W > 0 else scratch_slot
        kept = stack_acc(out, size if KEEP_REG else 1)  # [W] rhs at each column's winner, in the accumulator type
        zero = acc_zero(out)
        use_eid = eid.size > 0
        line = line_elems(lhs)
        for r in range(r0, r0 + 1):  # row r0 (never empty: the row driver writes those)
            k0 = raw_get(indptr, r)
            k1 = raw_get(indptr, r + 1)
            o = r * F
            for j in range(n):
                acc[j] = reduce_init(reduce, zero)
                best[j] = -1
                if KEEP_REG:
                    kept[j] = zero
            for k in range(k0, k1):
                if uses_lhs(op) and pf_dist > 0:
                    p = raw_get(indices, min(k + pf_dist, k_last)) * Fl + col
                    for t in range(0, n, line):
                        prefetch(lhs, p + t)
                if uses_rhs(op) and use_eid and pf_dist > 0:
                    _prefetch_rhs(rhs, raw_get(eid, min(k + pf_dist, k_last)) * Fr + (rhs_col if scalar_rhs else col),
                                  1 if scalar_rhs else n)
                lb = (raw_get(indices, k) if uses_lhs(op) else 0) * Fl + col
                ek = edge_of(eid, use_eid, k)
                slot = np.int32(k - k0)
                if uses_lhs(op) and uses_rhs(op) and scalar_rhs:
                    b = load(rhs, ek * Fr + rhs_col)
                    for j in range(n):  # branch-free selects: the accumulators stay in registers
                        m = to_acc(out, binop(op, load(lhs, lb + j), b))
                        win = better(reduce, m, acc[j])
                        acc[j] = select(win, m, acc[j])
                        best[j] = select(win, slot, best[j])
                else:
                    rb = ek * Fr + col
                    for j in range(n):
                        m = to_acc(out, _message(op, lhs, lb + j, rhs, rb + j))
                        win = better(reduce, m, acc[j])
                        acc[j] = select(win, m, acc[j])
                        best[j] = select(win, slot, best[j])
                        if KEEP_REG:    # (compile-time) exact: the accumulator type holds every rhs value
                            kept[j] = select(win, to_acc(out, load(rhs, rb + j)), kept[j])
            for j in range(n):
                store(out, o + col + j, acc[j])
            # one loop per winners array: with slot winners arg_l and arg_r are one array, and one loop storing
            # into both through two arguments corrupted the heap in the narrow-heads pass (not understood; perhaps
            # the two arguments are compiled as if they did not alias)
            if uses_lhs(op):
                for j in range(n):
                    raw_set(arg_l, o + col + j, _lhs_winner(arg_l, indices, k0 + best[j], best[j]))
            if KEEP_REG:    # (compile-time) rounded back into rhs's format: the same value
                for j in range(n):
                    store(arg_r, o + col + j, kept[j])
            elif keep:      # (compile-time) the edge operand at each winner, its bits copied (the first edge's
                for j in range(n):  # where none won: never read)
                    kw = k0 + max(best[j], 0)
                    raw_set(arg_r, o + col + j,
                            raw_get(rhs, edge_of(eid, use_eid, kw) * Fr + (rhs_col if scalar_rhs else col + j)))
            elif uses_rhs(op):
                for j in range(n):
                    raw_set(arg_r, o + col + j, _rhs_winner(arg_r, eid, use_eid, k0 + best[j], best[j]))

    return arg_pass


def _block_width(out):
    """Compile-time constant: the pass width for ``out`` (:data:`BLOCK_16` for 16-bit output)."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(_block_width)
def _block_width_impl(out):
    W = BLOCK_16 if out.dtype.bitwidth == 16 else BLOCK
    return lambda out: W


@functools.cache
def _passes(track, wide=0):
    """``(wide, block, tail)``: for the value reductions, the full-width pass for ``out``'s dtype
    (:func:`_block_width` columns), the 64-column pass of 16-bit output and the runtime-width one, all with one
    argument list; for max/min keeping the winners (``track``), the pass of ``wide`` columns (:func:`track_width`;
    0: of :data:`TRACK_BLOCK`), the :data:`TRACK_BLOCK`-column pass for every dtype and the runtime-width one
    (the last two the same functions for every ``wide``, so kernels share their compiled code). ``track == 2``:
    the passes also keep the edge operand's winning elements (:func:`_make_arg_pass`'s ``keep``)."""
    if track and wide:
        _, block, tail = _passes(track)
        return _make_arg_pass(wide, track == 2), block, tail
    if track:
        block = _make_arg_pass(TRACK_BLOCK, track == 2)
        return block, block, _make_arg_pass(0, track == 2)
    block, block_16, tail = _make_value_pass(BLOCK), _make_value_pass(BLOCK_16), _make_value_pass(0)

    def wide(op, reduce, w, col, r0, r1, indptr, k_last, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl, Fr,
             scalar_rhs, rhs_col, pf_dist, scratch, scratch_slot):
        raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")

    @overload(wide, prefer_literal=True)
    def _wide_impl(op, reduce, w, col, r0, r1, indptr, k_last, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl, Fr,
                   scalar_rhs, rhs_col, pf_dist, scratch, scratch_slot):
        fn = block_16 if out.dtype.bitwidth == 16 else block
        return (lambda op, reduce, w, col, r0, r1, indptr, k_last, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl,
                Fr, scalar_rhs, rhs_col, pf_dist, scratch, scratch_slot:
                fn(op, reduce, w, col, r0, r1, indptr, k_last, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl, Fr,
                   scalar_rhs, rhs_col, pf_dist, scratch, scratch_slot))

    return wide, block, tail


_CHUNK, _CHUNK_16 = _make_value_pass(BLOCK, True), _make_value_pass(BLOCK_16, True)
#: the chunk pass of rows of one column (:func:`_whole_rows`)
_CHUNK_1 = _make_value_pass(1, True)


@njit
def _empty_row(op, out, arg_l, arg_r, o, F, track):
    zero = acc_zero(out)
    for j in range(F):
        store(out, o + j, zero)
    if track and uses_lhs(op):
        for j in range(F):
            raw_set(arg_l, o + j, -1)
    if track and uses_rhs(op):
        for j in range(F):
            raw_set(arg_r, o + j, -1)


@functools.cache
def _row_driver(segments, track):
    """Rows ``r_begin : r_end`` of a blocked engine: the part every one shares (the last slot, the scratch rows
    the passes borrow, empty rows written as the op's identity), each other row handed to ``segments``. ``track``:
    max/min keeping the winners' slots (the empty rows' winners are -1)."""

    @njit
    def rows(op, reduce, r_begin, r_end, indptr, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl, Fr, n_seg, seg_len,
             scalar_rhs, pf_dist):
        k_last = raw_get(indptr, indptr.size - 1) - 1
        owner = alloc_acc(out, BLOCK_16)
        owner_slot = np.empty(BLOCK_16 if track else 1, np.int32)
        scratch, scratch_slot = borrow(owner), borrow(owner_slot)
        for r in range(r_begin, r_end):
            k0 = raw_get(indptr, r)
            k1 = raw_get(indptr, r + 1)
            o = r * F
            if k1 == k0:
                _empty_row(op, out, arg_l, arg_r, o, F, track)
                continue
            segments(op, reduce, r, indptr, k0, k1, k_last, indices, eid, lhs, rhs, out, arg_l, arg_r, o, F, Fl, Fr,
                     n_seg, seg_len, scalar_rhs, pf_dist, scratch, scratch_slot)
        owner[0] = 0  # keeps the scratch owners alive past the loop
        owner_slot[0] = 0

    return rows


def takes_whole_rows(layout, need_arg, Fr, B, F, out_dtype):
    """The pass width with which :func:`spmm_kernel` takes the rows whole (its ``whole`` argument), 0 if it does
    not: one value pass covers each row, a single segment of :func:`_block_width` columns (fp32/fp64 rows of 64,
    16-bit rows of 128), an fp32 row of :data:`BLOCK_32` columns (128 on AVX-512) or a 16-bit row of 64 columns
    (the 64-column pass), or the row is one column (``1``: one
    value per edge and node, as GAT's attention sums of one head), with no winners to record."""
    if need_arg:
        return 0
    # 16-bit rows of 64 columns too: the 64-column pass the row walk gives them (forty-third session)
    widths = {2: (BLOCK_16, BLOCK), 4: (BLOCK_32, BLOCK)}.get(out_dtype.itemsize, (BLOCK,))
    for width in dict.fromkeys(widths):
        if (layout == SAME and F == width) or (layout == RHS_BLOCK and Fr == 1 and B == width):
            return width
    if F == 1 and (layout == SAME or (layout == RHS_BLOCK and Fr == 1)):
        return 1
    return 0


@functools.cache
def _whole_rows(width):
    """Rows ``r_begin : r_end`` when one pass of ``width`` columns covers each (:func:`takes_whole_rows`): one call
    of that pass for all of them (``width`` 1: the one-column pass, its accumulator a register). On the 10M-edge
    graph (about 10 edges a row) a call per row took 1.17-1.32x this time in bf16 (D=128), 1.13-1.21x in fp32
    (D=64) and 1.03-1.10x in float16 (sum, mean, max, u_mul_e sum; ``benchmarks/whole_rows.py``, thirty-eighth
    session): the call's set-up, and in bf16 the rounding's constants, were paid per row. 16-bit rows of 64
    columns, walked a row at a time by the same 64-column pass until the forty-third session, take 0.67-0.89x
    that walk's time on the uniform graph and 0.86-0.94x on the 10M-edge graph (bf16 and fp16, sum, mean, max,
    u_mul_e sum; ``benchmarks/results/whole_rows_16bit64_s43.jsonl``). Rows of one column walked the
    runtime-width pass with the accumulator in a scratch row, a call per row: ``copy_e`` sum of one value per
    edge on the guide's GAT graph (1.14M edges, fp32) took 2.5-2.8 ms against 0.65 ms for a plain loop (fortieth
    session)."""
    chunk_pass = {1: _CHUNK_1, BLOCK: _CHUNK, BLOCK_16: _CHUNK_16}[width]

    @njit
    def rows(op, reduce, r_begin, r_end, indptr, indices, eid, lhs, rhs, out, F, Fl, Fr, scalar_rhs, pf_dist):
        k_last = raw_get(indptr, indptr.size - 1) - 1
        owner = alloc_acc(out, 1)       # the pass's (unused) scratch arguments, passed as they are (not borrowed)
        owner_slot = np.empty(1, np.int32)
        chunk_pass(op, reduce, F, 0, r_begin, r_end, indptr, k_last, indices, eid, lhs, rhs, out, owner_slot,
                   owner_slot, F, Fl, Fr, scalar_rhs, 0, pf_dist, owner, owner_slot)

    return rows


#: the repack reads and writes each source row once, the gathers read a slab of one per edge: slabs are taken
#: only with at least this many edges per source row
SLAB_MIN_DEGREE = 8


def _cache_bytes(level, default, base="/sys/devices/system/cpu/cpu0/cache"):
    """Size in bytes of CPU 0's unified or data cache of ``level`` (2 or 3) from Linux's sysfs (``base``), else
    ``default``."""
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return default
    for name in names:
        if not name.startswith("index"):
            continue
        try:
            with open(f"{base}/{name}/level") as f:
                lvl = int(f.read())
            with open(f"{base}/{name}/type") as f:
                kind = f.read().strip()
            with open(f"{base}/{name}/size") as f:
                text = f.read().strip()
        except (OSError, ValueError):
            continue
        if lvl != level or kind not in ("Unified", "Data"):
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
        digits = text[:-1] if text[-1:].isalpha() else text
        if digits.isdigit():
            return int(digits) * scale
    return default


#: the shared last-level cache that :func:`slab_width` plans with (Linux sysfs; 8 MiB where it is not known)
L3_BYTES = _cache_bytes(3, 8 << 20)


def slab_width(op, layout, need_arg, Fr, F, n_src, n_edges, dtypes):
    """Columns of the column slabs the source rows are gathered from (64 for float32, 128 for bfloat16: the
    full-width pass of each), or 0: the row walk.

    A row walk sums a row's edges in passes of 64 columns (128 in 16-bit): each pass gathers a piece of its
    source rows, and the pieces of all of ``lhs`` are spread over all of it, 1 KiB apart for rows of 256
    float32. Copied first into contiguous slabs (``(F // W, N_src, W)``, a parallel copy), the threads
    gather from one compact slab at a time, all chunks of rows slab by slab. Measured in the forty-second
    session (2-core AMD EPYC VM, 512 KiB L2, 32 MiB L3; copy_u sum, slabs with their repack against the row
    walk, two rounds each; ``benchmarks/slabs.py``, ``benchmarks/results/slabs_s42.jsonl``; uniform graphs of 2M
    edges and the guide's GCN graph, 2,330 nodes and 1.14M edges):

    * float32 ``copy_u`` sum, D=256: 0.73-0.74x (GCN graph), 0.79x (5k nodes), 0.72-0.77x (30k), 0.68-0.69x
      (100k); in scratch runs 0.95-1.05x on 200k nodes, whose 51 MB slab exceeds the L3. D=128 (two slabs):
      0.77-0.82x on 100k nodes, but 1.31-1.49x (scratch) on 30k, whose whole rows (15 MB) fit the L3 already.
      ``u_mul_e`` sum with one weight per edge, D=256: 0.69-0.94x up to 100k nodes.
    * bfloat16 ``copy_u`` sum, 128-column slabs, D=256: 0.88-0.90x (GCN graph), 0.87x (5k), 0.92x (30k); in
      scratch runs 1.03x on 100k nodes and 1.27-1.33x on 200k, 0.64-0.86x at D=512 up to 100k. ``u_mul_e``
      sum: 0.93-0.96x on the GCN graph and 5k nodes but 1.11-1.13x on 30k. 64-column slabs were no faster than
      the walk (D=256: 0.89-1.04x on the GCN graph, 1.01-1.18x on 200k nodes).

    So slabs are taken for float32 copies of the source rows and products with one value per edge
    (``copy_u``, ``u_mul_e`` with ``(E, 1)`` weights) and bfloat16 copies (sums, means, max/min without
    winners), rows of at least two whole slabs, at least :data:`SLAB_MIN_DEGREE` edges per source row, and a
    slab of at most the L3 (:data:`L3_BYTES`; half of it in bfloat16), in float32 with fewer than four slabs
    only where the whole rows exceed the L3.
    """
    if need_arg or n_src == 0 or n_edges < SLAB_MIN_DEGREE * n_src:
        return 0
    if not (op == "copy_lhs" or (layout == RHS_BLOCK and Fr == 1)) or len(set(dtypes)) != 1:
        return 0
    dtype = dtypes[0]
    if dtype not in (torch.float32, torch.bfloat16) or (dtype == torch.bfloat16 and op != "copy_lhs"):
        return 0
    W = BLOCK if dtype == torch.float32 else BLOCK_16
    if F % W or F < 2 * W:
        return 0
    slab, whole = n_src * W * dtype.itemsize, n_src * F * dtype.itemsize
    if dtype == torch.bfloat16:
        return W if slab <= L3_BYTES // 2 else 0
    return W if slab <= L3_BYTES and (F >= 4 * W or whole > L3_BYTES) else 0


@functools.cache
def _flat_segments(track, wide=0):
    """One row of ``n_seg`` column segments of ``seg_len``; segment ``h`` reads ``rhs`` column ``h`` when
    ``scalar_rhs`` (RHS_BLOCK: heads, or one per-edge scalar), else ``rhs`` elementwise (SAME). Each segment
    takes full-width passes, then (16-bit output) one of 64 columns, then one of the columns left; with
    ``track``, passes of ``wide`` columns (:func:`track_width`; none when 0), then of :data:`TRACK_BLOCK`
    columns, then one of the columns left."""
    wide_pass, block, tail = _passes(track, wide)

    @njit(inline="always")
    def segments(op, reduce, r, indptr, k0, k1, k_last, indices, eid, lhs, rhs, out, arg_l, arg_r, o, F, Fl, Fr,
                 n_seg, seg_len, scalar_rhs, pf_dist, scratch, scratch_slot):
        W = (wide if wide else TRACK_BLOCK) if track else _block_width(out)
        for h in range(n_seg):
            col = h * seg_len
            end = col + seg_len
            while col + W <= end:
                wide_pass(op, reduce, W, col, r, r + 1, indptr, k_last, indices, eid, lhs, rhs, out, arg_l, arg_r, F,
                          Fl, Fr, scalar_rhs, h, pf_dist, scratch, scratch_slot)
                col += W
            if track and wide:
                while col + TRACK_BLOCK <= end:
                    block(op, reduce, TRACK_BLOCK, col, r, r + 1, indptr, k_last, indices, eid, lhs, rhs, out, arg_l,
                          arg_r, F, Fl, Fr, scalar_rhs, h, pf_dist, scratch, scratch_slot)
                    col += TRACK_BLOCK
            elif not track and W > BLOCK and col + BLOCK <= end:
                block(op, reduce, BLOCK, col, r, r + 1, indptr, k_last, indices, eid, lhs, rhs, out, arg_l, arg_r, F,
                      Fl, Fr, scalar_rhs, h, pf_dist, scratch, scratch_slot)
                col += BLOCK
            if col < end:
                tail(op, reduce, end - col, col, r, r + 1, indptr, k_last, indices, eid, lhs, rhs, out, arg_l, arg_r,
                     F, Fl, Fr, scalar_rhs, h, pf_dist, scratch, scratch_slot)

    return segments


# ----------------------------------------------------------------------------- narrow heads
# GAT's (E, H, 1) weights against (N, H, D) features with D narrower than a pass: a pass per head would walk a
# row's edges H times for D-wide pieces of each source row. These passes take W // D whole heads at once, with
# D (SEG) and W compile-time constants so every loop unrolls (the runtime-width versions tried measured 3-8x
# slower than a copy of the same rows).

#: head widths with a specialised pass (powers of two below the 64-column pass); others take a pass per head
HEAD_SEGS = (1, 2, 4, 8, 16, 32)


@functools.cache
def _heads_pass(W, SEG, track):
    """Pass over ``W`` columns holding ``W // SEG`` heads of ``SEG`` columns; head ``h0 + i`` (the edge
    operand's column) scales columns ``i * SEG ..``. ``track``: max/min keeping the winners' slots."""
    NH = W // SEG

    @njit(fastmath=CONTRACT)
    def heads_pass(op, reduce, col, k0, k1, k_last, indices, eid, lhs, rhs, out, arg_l, arg_r, o, Fl, Fr, h0,
                   pf_dist):
        acc = stack_acc(out, W)
        best = stack_i32(W)
        bv = stack_acc(out, NH)     # the edge's weights of this pass's heads
        zero = acc_zero(out)
        use_eid = eid.size > 0
        line = line_elems(lhs)
        for j in range(W):
            acc[j] = reduce_init(reduce, zero)
            best[j] = -1
        for k in range(k0, k1):
            if pf_dist > 0:
                kp = min(k + pf_dist, k_last)
                p = raw_get(indices, kp) * Fl + col
                for t in range(0, W, line):
                    prefetch(lhs, p + t)
                if use_eid:
                    _prefetch_rhs(rhs, raw_get(eid, kp) * Fr + h0, NH)
            lb = raw_get(indices, k) * Fl + col
            rb = edge_of(eid, use_eid, k) * Fr + h0
            slot = np.int32(k - k0)
            for i in range(NH):
                bv[i] = to_acc(out, load(rhs, rb + i))
            for j in range(W):  # one flat loop: unrolled, j // SEG is a constant per column
                m = binop(op, to_acc(out, load(lhs, lb + j)), bv[j // SEG])
                if track:   # branch-free selects, as _make_arg_pass
                    win = better(reduce, m, acc[j])
                    acc[j] = select(win, m, acc[j])
                    best[j] = select(win, slot, best[j])
                else:
                    acc[j] = _combine(reduce, acc[j], m)
        if is_mean(reduce):
            dg = to_acc(out, k1 - k0)
            for j in range(W):
                store(out, o + col + j, acc[j] / dg)
        else:
            for j in range(W):
                store(out, o + col + j, acc[j])
        if track:   # one loop per winners array, as _make_arg_pass
            for j in range(W):
                raw_set(arg_l, o + col + j, _lhs_winner(arg_l, indices, k0 + best[j], best[j]))
            for j in range(W):
                raw_set(arg_r, o + col + j, _rhs_winner(arg_r, eid, use_eid, k0 + best[j], best[j]))

    return heads_pass


@functools.cache
def _heads_segments(W, SEG, track):
    """One row of ``n_seg`` heads of ``SEG`` columns, ``W // SEG`` heads per :func:`_heads_pass`; the heads left
    over (``n_seg`` not a multiple) take the runtime-width passes, one per head."""
    NH = W // SEG
    full = _heads_pass(W, SEG, track)
    tail = _passes(track)[2]

    @njit(inline="always")
    def segments(op, reduce, r, indptr, k0, k1, k_last, indices, eid, lhs, rhs, out, arg_l, arg_r, o, F, Fl, Fr,
                 n_seg, seg_len, scalar_rhs, pf_dist, scratch, scratch_slot):
        h = 0
        while h + NH <= n_seg:
            full(op, reduce, h * SEG, k0, k1, k_last, indices, eid, lhs, rhs, out, arg_l, arg_r, o, Fl, Fr, h,
                 pf_dist)
            h += NH
        while h < n_seg:
            tail(op, reduce, SEG, h * SEG, r, r + 1, indptr, k_last, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl,
                 Fr, True, h, pf_dist, scratch, scratch_slot)
            h += 1

    return segments


def track_width(layout, track, heads, n_seg, seg_len, out_dtype):
    """The first pass width of max/min keeping the winners (:func:`spmm_kernel`'s ``wide``), for the blocked
    passes (``SAME``, ``RHS_BLOCK``) over ``n_seg`` segments of ``seg_len`` columns with a float32 accumulator
    (fp32 and 16-bit output): the first width of :data:`TRACK_WIDE` that a segment holds, or, for 16-bit heads
    narrower than a pass (``heads``, :func:`heads_seg`), the first that divides the row (a pass takes
    ``width // heads`` whole heads); else 0 (passes of :data:`TRACK_BLOCK`). fp32 heads keep the 32-column
    passes: with 8 heads of 8 and of 16 on the uniform graph (``benchmarks/track_wide.py --heads 8``,
    ``u_mul_e_max`` and ``u_div_e_min``, two rounds) the wide passes took 0.90-1.12x their time in fp32
    (1.04-1.12x at 128 columns) and 0.69-0.93x in bf16."""
    if not track or layout not in (SAME, RHS_BLOCK) or out_dtype == torch.float64:
        return 0
    if heads:
        if out_dtype == torch.float32:
            return 0
        return next((w for w in TRACK_WIDE if (n_seg * seg_len) % w == 0), 0)
    return next((w for w in TRACK_WIDE if w <= seg_len), 0)


def heads_seg(layout, n_seg, seg_len, out_dtype):
    """The head width :func:`spmm_kernel` specialises on (its ``heads`` argument), or 0 for none: a block
    broadcast of several heads, each narrower than a pass (:data:`HEAD_SEGS`)."""
    return seg_len if layout == RHS_BLOCK and n_seg > 1 and seg_len < BLOCK and seg_len in HEAD_SEGS else 0


# ----------------------------------------------------------------------------- scratch-row engine


@njit
def _rows_lhs_block(op, reduce, r_begin, r_end, indptr, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl, Fr, B,
                    need_arg):
    """Rows with ``[Fl, 1] op [Fl, B]`` messages (one edge at a time, accumulator in a scratch row)."""
    use_eid = eid.size > 0
    track = is_arg_reduce(reduce) and need_arg
    acc = alloc_acc(out, F)
    zero = acc_zero(out)
    for r in range(r_begin, r_end):
        k0 = raw_get(indptr, r)
        k1 = raw_get(indptr, r + 1)
        o = r * F
        _start_row(reduce, acc, F, zero, arg_l, arg_r, o, track, track)
        for k in range(k0, k1):
            s = raw_get(indices, k)
            ek = edge_of(eid, use_eid, k)
            lb = s * Fl
            rb = ek * Fr
            for h in range(Fl):
                a = load(lhs, lb + h)
                for d in range(B):
                    j = h * B + d
                    _accumulate(reduce, acc, j, binop(op, a, load(rhs, rb + j)), arg_l, arg_r, o, s, ek, track, track)
        _finish_row(reduce, acc, out, o, F, k1 - k0, zero)


@njit
def _rows_general(op, reduce, r_begin, r_end, indptr, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl, Fr,
                  lhs_off, rhs_off, need_arg):
    """Rows with any other broadcast, through offset tables ``lhs_off[j]``, ``rhs_off[j]``."""
    use_eid = eid.size > 0
    track = is_arg_reduce(reduce) and need_arg
    acc = alloc_acc(out, F)
    zero = acc_zero(out)
    for r in range(r_begin, r_end):
        k0 = raw_get(indptr, r)
        k1 = raw_get(indptr, r + 1)
        o = r * F
        _start_row(reduce, acc, F, zero, arg_l, arg_r, o, track, track)
        for k in range(k0, k1):
            s = raw_get(indices, k)
            ek = edge_of(eid, use_eid, k)
            lb = s * Fl
            rb = ek * Fr
            for j in range(F):
                m = binop(op, load(lhs, lb + raw_get(lhs_off, j)), load(rhs, rb + raw_get(rhs_off, j)))
                _accumulate(reduce, acc, j, m, arg_l, arg_r, o, s, ek, track, track)
        _finish_row(reduce, acc, out, o, F, k1 - k0, zero)


def _rows(op, reduce, layout, need_arg, heads, whole, wide, r_begin, r_end, indptr, indices, eid, lhs, rhs, out, arg_l,
          arg_r, F, Fl, Fr, B, lhs_off, rhs_off, pf_dist):
    """Rows ``r_begin : r_end`` in the function for ``layout`` (copy ops: only ``SAME`` is compiled)."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(_rows, prefer_literal=True)
def _rows_impl(op, reduce, layout, need_arg, heads, whole, wide, r_begin, r_end, indptr, indices, eid, lhs, rhs, out,
               arg_l, arg_r, F, Fl, Fr, B, lhs_off, rhs_off, pf_dist):
    name = literal_value(op)
    if name is None or literal_value(reduce) is None:
        return None
    if not isinstance(layout, types.IntegerLiteral) or not isinstance(need_arg, types.IntegerLiteral):
        return None
    if not all(isinstance(a, types.IntegerLiteral) for a in (heads, whole, wide)):
        return None
    track = bool(is_arg_literal(reduce) and need_arg.literal_value)
    # need_arg 2: slot winners of an elementwise product that also keep its edge operand at the winners (SAME)
    keep = track and need_arg.literal_value == KEEP_RHS and layout.literal_value == SAME
    blocked = _row_driver(_flat_segments(KEEP_RHS if keep else track, wide.literal_value if track else 0), track)
    kind = layout.literal_value
    if whole.literal_value:
        scalar_rhs = kind == RHS_BLOCK
        run = _whole_rows(whole.literal_value)

        def impl(op, reduce, layout, need_arg, heads, whole, wide, r_begin, r_end, indptr, indices, eid, lhs, rhs, out,
                 arg_l, arg_r, F, Fl, Fr, B, lhs_off, rhs_off, pf_dist):
            run(op, reduce, r_begin, r_end, indptr, indices, eid, lhs, rhs, out, F, Fl, Fr, scalar_rhs, pf_dist)
    elif kind == RHS_BLOCK and heads.literal_value > 0:
        SEG = heads.literal_value
        rows = _row_driver(_heads_segments((wide.literal_value or TRACK_BLOCK) if track else BLOCK, SEG, track),
                           track)

        def impl(op, reduce, layout, need_arg, heads, whole, wide, r_begin, r_end, indptr, indices, eid, lhs, rhs, out,
                 arg_l, arg_r, F, Fl, Fr, B, lhs_off, rhs_off, pf_dist):
            rows(op, reduce, r_begin, r_end, indptr, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl, Fr, Fr, SEG,
                 True, pf_dist)
    elif kind == SAME:
        def impl(op, reduce, layout, need_arg, heads, whole, wide, r_begin, r_end, indptr, indices, eid, lhs, rhs, out,
                 arg_l, arg_r, F, Fl, Fr, B, lhs_off, rhs_off, pf_dist):
            blocked(op, reduce, r_begin, r_end, indptr, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl, Fr,
                    1, F, False, pf_dist)
    elif kind == RHS_BLOCK:
        def impl(op, reduce, layout, need_arg, heads, whole, wide, r_begin, r_end, indptr, indices, eid, lhs, rhs, out,
                 arg_l, arg_r, F, Fl, Fr, B, lhs_off, rhs_off, pf_dist):
            blocked(op, reduce, r_begin, r_end, indptr, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl, Fr,
                    Fr, B, True, pf_dist)
    elif kind == LHS_BLOCK:
        def impl(op, reduce, layout, need_arg, heads, whole, wide, r_begin, r_end, indptr, indices, eid, lhs, rhs, out,
                 arg_l, arg_r, F, Fl, Fr, B, lhs_off, rhs_off, pf_dist):
            _rows_lhs_block(op, reduce, r_begin, r_end, indptr, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl, Fr,
                            B, need_arg)
    else:
        def impl(op, reduce, layout, need_arg, heads, whole, wide, r_begin, r_end, indptr, indices, eid, lhs, rhs, out,
                 arg_l, arg_r, F, Fl, Fr, B, lhs_off, rhs_off, pf_dist):
            _rows_general(op, reduce, r_begin, r_end, indptr, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl, Fr,
                          lhs_off, rhs_off, need_arg)
    return impl


def spmm_kernel(op, reduce, layout, need_arg=True, heads=0, whole=False, wide=0):
    """The compiled gSpMM kernel for one ``(op, reduce, layout)`` (see :func:`_spmm_kernel`): one kernel object
    per distinct configuration, however the arguments are spelled (``functools.lru_cache`` keys ``f(a)`` and
    ``f(a, b=default)`` apart, which gave two objects, and two sets of cache statistics, for one kernel)."""
    return _spmm_kernel(op, reduce, int(layout), int(need_arg), int(heads), int(whole), int(wide))


@functools.lru_cache(maxsize=None)
def _spmm_kernel(op, reduce, layout, need_arg, heads, whole, wide):
    """The compiled gSpMM kernel for one ``(op, reduce, layout)``; dtypes specialise on first call.

    ``kernel(counter, bounds, indptr, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl, Fr, B,
    lhs_off, rhs_off, pf_dist)`` processes the row chunks ``bounds[c] : bounds[c + 1]``
    it claims from ``counter`` (see :func:`._core.run_parallel`); all arrays are flat. Each layout is
    its own kernel, so a call compiles only the code it runs. ``heads``: the head width of a block
    broadcast whose heads are narrower than a pass (:func:`heads_seg`), compiled into the kernel; 0 otherwise.
    ``whole``: the width of a pass that covers each row (:func:`takes_whole_rows`; 0: none), so a chunk of rows
    takes one call of it; negative, ``-W``: ``lhs`` is the source rows in slabs of ``W`` columns
    (:func:`slab_width`, :func:`_slab_kernel`; one slab for rows padded to ``W``, :func:`pad_width`).
    ``wide``: the first pass width of max/min keeping the winners (:func:`track_width`; 0: :data:`TRACK_BLOCK`).
    ``need_arg``: 0 (no winners), 1 (winners) or :data:`KEEP_RHS` (slot winners, and ``arg_r`` is ``rhs_won``).
    """
    source_hash = SOURCE_HASH  # part of Numba's cache key (see _core._source_hash)
    if whole < 0:
        return _slab_kernel(op, reduce, layout == RHS_BLOCK, -whole)

    @cached_njit(nogil=True)
    def kernel(counter, bounds, indptr, indices, eid, lhs, rhs, out, arg_l, arg_r,
               F, Fl, Fr, B, lhs_off, rhs_off, pf_dist):
        _ = source_hash
        nchunks = bounds.size - 1
        indptr, indices, eid, lhs, rhs = borrow(indptr), borrow(indices), borrow(eid), borrow(lhs), borrow(rhs)
        out, arg_l, arg_r = borrow(out), borrow(arg_l), borrow(arg_r)
        lhs_off, rhs_off = borrow(lhs_off), borrow(rhs_off)
        c = atomic_fetch_add(counter, 0, 1)
        while c < nchunks:
            _rows(op, reduce, layout, need_arg, heads, whole, wide, raw_get(bounds, c), raw_get(bounds, c + 1),
                  indptr, indices, eid, lhs, rhs, out, arg_l, arg_r, F, Fl, Fr, B, lhs_off, rhs_off, pf_dist)
            c = atomic_fetch_add(counter, 0, 1)

    return kernel


def _slab_kernel(op, reduce, scalar_rhs, W):
    """The gSpMM kernel over column slabs of ``W`` columns (:func:`slab_width`), with :func:`_spmm_kernel`'s
    arguments (``lhs`` the flat ``(F // W, N_src, W)`` slabs): the work is
    every (slab, chunk of rows) pair, claimed slab by slab, so that the threads gather from one slab at a time
    (a chunk walking all its slabs before the next chunk made every chunk fetch every slab again: no faster
    than the row walk)."""
    source_hash = SOURCE_HASH
    chunk_pass = _CHUNK if W == BLOCK else _CHUNK_16     # the full-width pass of W columns, for every dtype

    @cached_njit(nogil=True)
    def kernel(counter, bounds, indptr, indices, eid, lhs, rhs, out, arg_l, arg_r,
               F, Fl, Fr, B, lhs_off, rhs_off, pf_dist):
        _ = source_hash
        nchunks = bounds.size - 1
        indptr, indices, eid, lhs, rhs, out = borrow(indptr), borrow(indices), borrow(eid), borrow(lhs), \
            borrow(rhs), borrow(out)
        work = nchunks * (F // W)
        k_last = raw_get(indptr, indptr.size - 1) - 1
        owner = alloc_acc(out, 1)  # the pass's (unused) scratch arguments
        owner_slot = np.empty(1, np.int32)
        n_src = lhs.size // F
        c = atomic_fetch_add(counter, 0, 1)
        while c < work:
            b = c // nchunks
            ch = c - b * nchunks
            chunk_pass(op, reduce, W, b * W, raw_get(bounds, ch), raw_get(bounds, ch + 1), indptr, k_last,
                       indices, eid, lhs[b * W * (n_src - 1):], rhs, out, owner_slot, owner_slot, F, W, Fr,
                       scalar_rhs, 0, pf_dist, owner, owner_slot)
            c = atomic_fetch_add(counter, 0, 1)
        owner[0] = 0  # keeps the scratch owners alive past the loop
        owner_slot[0] = 0

    return kernel


@functools.cache
def _repack_kernel(W):
    """``kernel(counter, bounds, lhs, slabs, F)``: the rows ``bounds[c] : bounds[c + 1]`` of the flat ``(N_src, F)``
    ``lhs`` copied into the flat ``(F // W, N_src, W)`` ``slabs``, chunks claimed from ``counter``."""
    source_hash = SOURCE_HASH

    @cached_njit(nogil=True)
    def kernel(counter, bounds, lhs, slabs, F):
        _ = source_hash
        nchunks = bounds.size - 1
        lhs, slabs = borrow(lhs), borrow(slabs)
        n_src = lhs.size // F
        c = atomic_fetch_add(counter, 0, 1)
        while c < nchunks:
            for r in range(raw_get(bounds, c), raw_get(bounds, c + 1)):
                for b in range(F // W):
                    src = r * F + b * W
                    dst = (b * n_src + r) * W
                    for j in range(W):
                        slabs[dst + j] = lhs[src + j]
            c = atomic_fetch_add(counter, 0, 1)

    return kernel


@functools.cache
def _copy_rows_kernel():
    """``kernel(counter, bounds, src, dst, Fs, Fd)``: the rows ``bounds[c] : bounds[c + 1]`` of the flat ``(N, Fs)``
    ``src`` copied into the flat ``(N, Fd)`` ``dst``, the first ``min(Fs, Fd)`` columns, the rest of a wider
    ``dst`` row set to zero; chunks claimed from ``counter``."""
    source_hash = SOURCE_HASH

    @cached_njit(nogil=True)
    def kernel(counter, bounds, src, dst, Fs, Fd):
        _ = source_hash
        nchunks = bounds.size - 1
        src, dst = borrow(src), borrow(dst)
        n = min(Fs, Fd)
        zero = dst[0] * 0
        c = atomic_fetch_add(counter, 0, 1)
        while c < nchunks:
            for r in range(raw_get(bounds, c), raw_get(bounds, c + 1)):
                for j in range(n):
                    dst[r * Fd + j] = src[r * Fs + j]
                for j in range(n, Fd):
                    dst[r * Fd + j] = zero
            c = atomic_fetch_add(counter, 0, 1)

    return kernel


def _copy_rows(src, dst):
    """Rows of the tensors ``src`` ``(N, Fs)`` into ``dst`` ``(N, Fd)`` (:func:`_copy_rows_kernel`)."""
    n = src.shape[0]
    nthreads = num_threads(n * max(src[0].numel(), dst[0].numel()), PASS_SERIAL_WORK)
    run_parallel(_copy_rows_kernel(), nthreads, chunk_bounds(np.arange(n + 1, dtype=np.int64), nthreads),
                 kernel_view(src), kernel_view(dst), int(src[0].numel()), int(dst[0].numel()))


#: padded rows are taken only with at least this many edges per source row (:func:`pad_width`)
PAD_MIN_DEGREE = 64
#: and at least this many edges: below it the two copies cost about what the registers save
PAD_MIN_EDGES = 1 << 19


def pad_width(op, layout, need_arg, Fr, F, n_src, n_edges, dtypes):
    """Columns a row narrower than a full-width pass is padded to (64), or 0: the row walk.

    A row of fewer than 64 columns is walked a row at a time by the runtime-width pass, its sums in a scratch
    row in memory, not in registers: on the guide's GCN graph (2,330 nodes, 1.14M edges) ``copy_u`` sum of 41
    columns (its classes) took about twice the time of 64. Padded, the source rows are copied into rows of 64
    columns (zeros after ``F``), the gathers run as column slabs of one slab (:func:`_slab_kernel`: the
    64-column pass, its sums in registers, a call per chunk of rows) into padded rows, and their first ``F``
    columns are copied out. Results are bit for bit the row walk's (the padding's columns are summed apart).

    Measured in the forty-third session (2-core AMD EPYC VM; padded against the row walk, two rounds;
    ``benchmarks/padded_rows.py``, ``benchmarks/results/padded_rows_s43.jsonl``), ``copy_u`` and ``u_mul_e``
    sums of 41, 48 and 56 columns on graphs of 64 to 490 edges per node (the GCN graph, 11,650 and 50k nodes):
    0.57-0.91x in float32 and 0.47-0.82x in bfloat16; forced on 100k nodes of 20 edges each, 0.81-1.07x, and on
    2,000 nodes of 100 (a call of about 1 ms) 0.75-1.05x (1.03-1.21x in a scratch run before the small copies
    took one thread). In scratch runs 32 columns, which the walk takes fast, padded took 0.95-2.0x, and 33 and
    40 columns took 1.05-1.13x with 32 edges per node. So: the ops of :func:`slab_width` (``copy_u``, ``u_mul_e`` with
    ``(E, 1)`` weights) in float32, bfloat16 or float16, without winners, 33 to 63 columns, at
    least :data:`PAD_MIN_DEGREE` edges per source row and :data:`PAD_MIN_EDGES` edges in all (calls where the
    copies' fixed cost is a fair part of the time).
    """
    if need_arg or n_src == 0 or n_edges < max(PAD_MIN_EDGES, PAD_MIN_DEGREE * n_src) or not BLOCK // 2 < F < BLOCK:
        return 0
    if not (op == "copy_lhs" or (layout == RHS_BLOCK and Fr == 1)) or len(set(dtypes)) != 1:
        return 0
    return BLOCK if dtypes[0] in (torch.float32, torch.bfloat16, torch.float16) else 0


def winner_dtype(num_ids):
    """Dtype of max/min winners naming one of ``num_ids`` rows: int32 when every id fits, else int64."""
    return torch.int32 if num_ids < 2**31 else torch.int64


#: ops whose max/min can record slot winners (``need_arg='slots'``): the messages that are an operand as it
#: is or a sum/difference of two, so each operand's gradient is the output's gradient at the winner
SLOT_OPS = ("copy_lhs", "copy_rhs", "add", "sub", "mul", "div")


def slot_dtype(max_row, otherwise):
    """Dtype of slot winners for rows of at most ``max_row`` edges: uint8 (255 free to mean "none"), int16
    (-1), or ``otherwise`` when the slots do not fit 16 bits."""
    if max_row <= 255:
        return torch.uint8
    if max_row <= 32767:
        return torch.int16
    return otherwise


def gspmm(op, reduce, indptr, indices, eid, lhs, rhs, *, out_dtype=None, need_arg=True, prefetch_distance=None,
          max_row=None, whole_rows=True, split_slots=False, hub_rows=None, hub_edges=None, rhs_won=None):
    """Generalised SpMM over the rows of a compressed structure, on raw tensors.

    .. math::

        \\mathrm{out}[r] = \\bigoplus_{k=\\mathrm{indptr}[r]}^{\\mathrm{indptr}[r+1]-1}
            \\phi(\\mathrm{lhs}[\\mathrm{indices}[k]], \\mathrm{rhs}[\\mathrm{eid}[k]])

    Parameters
    ----------
    op : {'copy_lhs', 'copy_rhs', 'add', 'sub', 'mul', 'div'}
        Message :math:`\\phi` in DGL's names: ``copy_u`` is ``'copy_lhs'``, ``copy_e`` is
        ``'copy_rhs'``, ``u_mul_e`` is ``'mul'`` (``lhs`` = u, ``rhs`` = e), ...
    reduce : {'sum', 'mean', 'max', 'min'}
    indptr : Tensor, int64, ``(R + 1,)``
        Row pointer; ``Index.csc()[0]`` for forward message passing (``R = N_dst``).
    indices : Tensor, int64, ``(E,)``, or None
        Column of each edge slot (the source node with ``csc()``); None only for ``'copy_rhs'``.
    eid : Tensor, int64, ``(E,)``, or None
        Edge id of each slot, the row of ``rhs`` it reads; None means the identity
        (``rhs`` already in slot order, which also saves reading ``eid``).
    lhs : Tensor ``(N_src, *Fl)`` or None
        Node features: float64, float32, float16 or bfloat16. None for ``'copy_rhs'``.
    rhs : Tensor ``(E, *Fr)`` or None
        Edge features; None for ``'copy_lhs'``. ``Fl`` and ``Fr`` broadcast like numpy:
        ``(H, D)`` with ``(H, 1)`` (GAT) and ``(D,)`` with ``(1,)`` or ``()`` (a per-edge
        scalar) are fast paths; other broadcasts go through offset tables (slower).
    out_dtype : torch.dtype, optional
        Dtype of ``out`` (default: the promoted operand dtype), e.g. float32 results from
        float16 operands. Accumulation is fp64 when ``out`` or an operand is fp64, else fp32.
    need_arg : bool or 'slots', default True
        For ``max``/``min``: also return the winners' ids (what the backward needs). False skips
        tracking them (a faster kernel and no ``(R, *F)`` int64 outputs) and returns None for both.
        ``'slots'`` returns the winners as *slots* instead, for :data:`SLOT_OPS` without a broadcast
        (``Fl == Fr``) or with ``rhs`` a block broadcast (``(H, D)`` with ``(H, 1)``, ``(D,)`` with ``(1,)``
        or ``()``; other calls treat it as True): the offset of the winning edge within its row
        (``indices[indptr[r] + slot]`` is the source node, ``eid[indptr[r] + slot]`` the edge), in
        uint8 when no row has more than 255 edges (255: no winner), int16 when none has more than
        32767 (-1: no winner), else the ids of ``True``. One array names both ends: a quarter (an
        eighth) of the bytes of int32 ids to write here and to read in the backward
        (:func:`.scatter.gather_winners`, :func:`.scatter.edge_winners`). With ``split_slots`` see there.
    prefetch_distance : int, optional
        Software prefetch distance in edges (0 disables); default :data:`PREFETCH_DISTANCE`.
    max_row : int, optional
        The largest row length, ``max(indptr[r + 1] - indptr[r])``, when the caller has it cached (it picks
        the width of slot winners); computed from ``indptr`` otherwise. Trusted, like the structure.
    whole_rows : bool, default True
        Let rows that one full-width pass covers take one call of it per chunk of rows
        (:func:`takes_whole_rows`), rows too wide for the L2 cache be gathered from column slabs
        (:func:`slab_width`), and rows narrower than a pass be padded to one (:func:`pad_width`); False walks
        them a row at a time (the same results, bit for bit: for benchmarks and tests).
    split_slots : bool, default False
        With ``need_arg='slots'`` where some row has 256 to 32767 edges: *split* slot winners instead of int16,
        uint8 ``(R + 2 n_hub, *F)``. The rows with more than 255 edges are the *hub* rows (in increasing order);
        the others hold their uint8 slots in rows ``r < R`` (255: none), the ``h``-th hub row the low bytes of
        its slots in row ``R + 2h`` and the high bytes in row ``R + 2h + 1`` (255 and 255: none), and 0 in its
        own row. Half the bytes of int16 slots for the forward to write and the backward to read, where most
        rows are short (the power-law graphs): the pass runs with uint8 slots, and one more pass over the hub
        rows alone (their in-edges copied out) records their full slots.
    hub_rows : Tensor int64, optional
        The rows with more than 255 edges in increasing order, when the caller has them cached; computed from
        ``indptr`` otherwise. Trusted, like the structure.
    hub_edges : tuple, optional
        ``hub_in_edges(indptr, indices, eid, hub_rows)``, the hub rows' in-edges that the second pass runs over,
        when the caller has them cached with ``hub_rows`` (the CPU backend does, per graph); built per call
        otherwise. Trusted, like the structure.
    rhs_won : Tensor ``(R, *F)`` of ``rhs``'s dtype, optional
        Filled in place, for :func:`keeps_rhs` calls (``'mul'``/``'div'`` max/min with slot winners and operands
        of one feature shape): each element gets a bitwise copy of ``rhs``'s element at its winner (unspecified
        where no edge won). The product's backward then reads these ``R x F`` values where it would read the
        ``E x F`` edge operand (:func:`.scatter.edge_winners` with ``rhs_rows``); the pass copies each from the
        edge row it has just read. Other calls refuse it (ValueError).

    Returns
    -------
    out : Tensor ``(R, *broadcast(Fl, Fr))``
        In ``out_dtype``. Sums and means accumulate in fp32 (fp64 for
        fp64 output), edge by edge in slot order, and round once (RNE); a mean divides
        before rounding. Rows without edges are 0.
    arg_lhs, arg_rhs : Tensor int32 of ``out``'s shape (int64 when the ids need it), or None
        Only for ``max``/``min``: the ``indices`` value (source node) and the edge id of the
        winning edge per element (first winner in slot order), -1 where the row has no edge.
        int32 when every id fits (:func:`winner_dtype` of ``lhs``'s / ``rhs``'s row count).
        Slot winners (``need_arg='slots'``, see there) come back as ``arg_lhs``, uint8 or int16 (uint8 with
        two more rows per hub row with ``split_slots``), with
        ``arg_rhs`` None, for every op.
        ``arg_lhs`` is None for ``'copy_rhs'`` and ``arg_rhs`` for ``'copy_lhs'``.

    Raises
    ------
    ValueError
        Unknown ``op``/``reduce``, or feature shapes that do not broadcast.
    TypeError
        Tensors of unsupported dtypes or devices.

    Notes
    -----
    The contents of ``indptr``/``indices``/``eid`` are trusted (the public ops validate);
    out-of-range values read out of bounds. ``max``/``min`` skip NaN messages; an element
    whose messages are all NaN or all at the identity (``-inf`` for max) keeps the identity
    with arg -1.
    """
    if op not in SPMM_OPS:
        raise ValueError(f"expected op in {SPMM_OPS}, got {op!r}")
    if reduce not in REDUCES:
        raise ValueError(f"expected reduce in {REDUCES}, got {reduce!r}")
    check_index("indptr", indptr)
    R = indptr.numel() - 1
    if R < 0:
        raise ValueError("expected indptr with at least one element, got an empty tensor")
    if op != "copy_rhs":
        check_index("indices", indices)
        check_float("lhs", lhs)
    if op != "copy_lhs":
        check_float("rhs", rhs)
    if eid is not None:
        check_index("eid", eid)
    check_out_dtype(out_dtype)
    if rhs_won is not None:
        if not keeps_rhs(op, reduce, need_arg, lhs, rhs):
            raise ValueError(f"rhs_won is kept by 'mul'/'div' max/min with need_arg='slots' and lhs and rhs of one "
                             f"feature shape, got op {op!r}, reduce {reduce!r}, need_arg {need_arg!r}, feature "
                             f"shapes {None if lhs is None else tuple(lhs.shape[1:])} and "
                             f"{None if rhs is None else tuple(rhs.shape[1:])}; pass rhs_won=None")
        want = (indptr.numel() - 1,) + tuple(rhs.shape[1:])
        if (tuple(rhs_won.shape) != want or rhs_won.dtype != rhs.dtype or not rhs_won.is_contiguous()
                or rhs_won.device.type != "cpu"):
            raise ValueError(f"expected rhs_won a contiguous CPU tensor {want} of {rhs.dtype} (one row per "
                             f"destination, rhs's features and dtype), got {tuple(rhs_won.shape)} {rhs_won.dtype} "
                             f"on {rhs_won.device}{'' if rhs_won.is_contiguous() else ', not contiguous'}")
    if needs_fp64_pass(out_dtype, lhs, rhs):
        out, arg_lhs, arg_rhs = gspmm(op, reduce, indptr, indices, eid, lhs, rhs, out_dtype=torch.float64,
                                      need_arg=need_arg, prefetch_distance=prefetch_distance, max_row=max_row,
                                      whole_rows=whole_rows, split_slots=split_slots, hub_rows=hub_rows,
                                      hub_edges=hub_edges, rhs_won=rhs_won)
        return out.to(out_dtype), arg_lhs, arg_rhs
    lhs_off = rhs_off = None
    layout, B = SAME, 1
    if op == "copy_lhs":
        out_shape, dtype = tuple(lhs.shape[1:]), lhs.dtype
    elif op == "copy_rhs":
        out_shape, dtype = tuple(rhs.shape[1:]), rhs.dtype
    else:
        out_shape, layout, B, lhs_off, rhs_off = broadcast_layout(tuple(lhs.shape[1:]), tuple(rhs.shape[1:]))
        dtype = torch.promote_types(lhs.dtype, rhs.dtype)
    out = empty_out((R,) + tuple(out_shape), out_dtype or dtype)
    if need_arg not in (True, False, "slots"):
        raise ValueError(f"expected need_arg True, False or 'slots', got {need_arg!r}")
    track = reduce in ("max", "min") and bool(need_arg)
    slots = None
    # slots name the winning edge, so the gradients can find both operands' rows; the edge operand may be a
    # block broadcast (RHS_BLOCK: one value per edge or per head), the node operand may not
    if track and need_arg == "slots" and op in SLOT_OPS and layout in (SAME, RHS_BLOCK) and R > 0:
        longest = int((indptr[1:] - indptr[:-1]).max()) if max_row is None else int(max_row)
        narrow = slot_dtype(longest, None)
        if narrow == torch.int16 and split_slots:
            hub_rows = split_hub_rows(indptr) if hub_rows is None else hub_rows
            slots = empty_out((R + 2 * hub_rows.numel(),) + tuple(out_shape), torch.uint8)
        else:
            slots = None if narrow is None else empty_out(out.shape, narrow)
    if slots is not None:
        # one array of slots names the edge, so both ends (when the op has two) write the same values into it
        arg_lhs = slots if op != "copy_rhs" else None
        arg_rhs = slots if op != "copy_lhs" else None
    else:
        # winners as int32 when the ids fit: the forward writes and the backward reads half the bytes
        arg_lhs = empty_out(out.shape, winner_dtype(lhs.shape[0])) if track and op != "copy_rhs" else None
        arg_rhs = empty_out(out.shape, winner_dtype(rhs.shape[0])) if track and op != "copy_lhs" else None
    F = int(np.prod(out_shape, dtype=np.int64))
    if R == 0 or F == 0:
        return (out, slots, None) if slots is not None else (out, arg_lhs, arg_rhs)
    lhs_np = kernel_view(lhs.contiguous()) if lhs is not None else kernel_view(rhs[:0])
    rhs_np = kernel_view(rhs.contiguous()) if rhs is not None else kernel_view(lhs[:0])
    Fl = int(np.prod(lhs.shape[1:], dtype=np.int64)) if lhs is not None else 0
    Fr = int(np.prod(rhs.shape[1:], dtype=np.int64)) if rhs is not None else 0
    indptr_np = index_view(indptr.contiguous())
    indices_np = index_view(indices.contiguous() if indices is not None else None)
    eid_np = index_view(eid.contiguous() if eid is not None else None)
    E = int(indptr_np[-1] - indptr_np[0])
    if track and E >= 2**31 and int(np.diff(indptr_np).max()) >= 2**31:
        raise ValueError("max/min kernels record winners as int32 offsets within a row; got a row with 2**31 "
                         "or more edges")
    nthreads = num_threads((E + R) * F)
    bounds = chunk_bounds(indptr_np, nthreads)
    pf = PREFETCH_DISTANCE if prefetch_distance is None else int(prefetch_distance)
    heads = heads_seg(layout, Fr, B, out.dtype)
    whole = takes_whole_rows(layout, track, Fr, B, F, out.dtype) if whole_rows else 0
    dtypes = [t.dtype for t in (lhs, rhs, out) if t is not None]
    W = slab_width(op, layout, track, Fr, F, int(lhs.shape[0]), E, dtypes) if whole_rows and lhs is not None else 0
    if W:
        # source rows copied into contiguous column slabs, on huge pages as outputs are; by the kernels' threads
        # (torch's copy left its OpenMP threads spinning into the gathers, which then took 1.3-1.5x the time)
        n_src = int(lhs.shape[0])
        slabs = empty_out((F // W, n_src, W), lhs.dtype)
        run_parallel(_repack_kernel(W), nthreads, chunk_bounds(np.arange(n_src + 1, dtype=np.int64), nthreads),
                     lhs_np, kernel_view(slabs), F)
        lhs_np, whole = kernel_view(slabs), -W
    P = pad_width(op, layout, track, Fr, F, int(lhs.shape[0]), E, dtypes) if whole_rows and lhs is not None \
        and not W else 0
    target, F_out = out, F
    if P:
        # rows padded to one pass (zeros after F), gathered as one slab into padded rows, F columns copied out
        padded = empty_out((int(lhs.shape[0]), P), lhs.dtype)
        _copy_rows(lhs.contiguous().view(-1, F), padded)
        lhs_np, whole = kernel_view(padded), -P
        target, F_out = empty_out((R, P), out.dtype), P
    wide = track_width(layout, track, heads, Fr if layout == RHS_BLOCK else 1, B if layout == RHS_BLOCK else F,
                       out.dtype)
    keep = rhs_won is not None and slots is not None
    if rhs_won is not None and slots is None:     # ids, not slots (rows past 32767 edges): no copies to keep
        raise ValueError("rhs_won is kept with slot winners only; this graph has a row of more than 32767 edges, "
                         "whose winners are ids: pass rhs_won=None")
    run_parallel(spmm_kernel(op, reduce, layout, KEEP_RHS if keep else track, heads, whole, wide), nthreads, bounds,
                 indptr_np, indices_np, eid_np, lhs_np, rhs_np, kernel_view(target), index_view(arg_lhs),
                 kernel_view(rhs_won) if keep else index_view(arg_rhs), F_out, Fl, Fr, B, index_view(lhs_off),
                 index_view(rhs_off), pf)
    if P:
        _copy_rows(target, out.view(R, F))
    if slots is not None and slots.shape[0] > R:
        sub = hub_in_edges(indptr, indices, eid, hub_rows) if hub_edges is None else hub_edges
        _hub_slots(slots, R, F, hub_rows, sub, op, reduce, indices, lhs, rhs, out.dtype, longest, prefetch_distance,
                   whole_rows)
    return (out, slots, None) if slots is not None else (out, arg_lhs, arg_rhs)


def keeps_rhs(op, reduce, need_arg, lhs, rhs):
    """Whether :func:`gspmm` fills ``rhs_won`` for these arguments: ``'mul'``/``'div'`` max/min with
    ``need_arg='slots'`` on operands of one feature shape (no broadcast), where the product's backward needs the
    edge operand only at the winners."""
    return (op in ("mul", "div") and reduce in ("max", "min") and need_arg == "slots" and lhs is not None
            and rhs is not None and tuple(lhs.shape[1:]) == tuple(rhs.shape[1:]))


def hub_in_edges(indptr, indices, eid, hub_rows):
    """The in-edges of ``hub_rows`` alone, as a structure of their own: ``(sub_ptr, sub_indices, sub_eid)``, row
    after row in ``hub_rows``' order (``sub_indices`` None when ``indices`` is; ``sub_eid`` the slots' positions
    when ``eid`` is None). What the split slots' second pass runs over (:func:`gspmm`'s ``hub_edges``): constant
    per graph, about 1.5 ms to build on the 10M-edge benchmark graph's 389 hub rows."""
    starts = indptr[hub_rows]
    lens = indptr[hub_rows + 1] - starts
    sub_ptr = torch.zeros(hub_rows.numel() + 1, dtype=torch.int64)
    torch.cumsum(lens, 0, out=sub_ptr[1:])
    # the hub rows' slots, row after row: each row's start plus the offsets 0 .. len - 1
    pos = torch.repeat_interleave(starts - sub_ptr[:-1], lens) + torch.arange(int(sub_ptr[-1]))
    return sub_ptr, None if indices is None else indices[pos], pos if eid is None else eid[pos]


def _hub_slots(slots, R, F, hub_rows, sub, op, reduce, indices, lhs, rhs, out_dtype, longest, pf, whole):
    """Split slots' hub rows: the full int16 slots of ``hub_rows`` from a pass over their in-edges alone (``sub``,
    :func:`hub_in_edges`), as low and high bytes into rows ``R + 2h`` and ``R + 2h + 1``, and 0 into their own rows
    (see :func:`gspmm`)."""
    sub_ptr, sub_indices, sub_eid = sub
    sub_indices = None if indices is None else sub_indices      # copy_rhs reads no source rows
    _, full, _ = gspmm(op, reduce, sub_ptr, sub_indices, sub_eid, lhs, rhs, out_dtype=out_dtype, need_arg="slots",
                       prefetch_distance=pf, max_row=longest, whole_rows=whole)
    full = full.reshape(-1, F)
    pairs = slots.view(-1, F)[R:].view(-1, 2, F)
    pairs[:, 0] = full.to(torch.uint8)                                  # the low bytes
    pairs[:, 1] = torch.bitwise_right_shift(full, 8).to(torch.uint8)    # the high bytes: -1 (none) gives 255
    slots.view(-1, F)[hub_rows] = 0             # what no hub edge's slot (255 in the backward's tables) matches
