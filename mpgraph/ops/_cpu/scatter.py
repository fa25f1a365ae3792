"""Scatter-add to winners on the CPU: the backward of gSpMM max/min.

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
"""

import functools

import numpy as np
import torch
from numba import njit

from ...precision import accum_dtype
from ._core import (FLOAT_DTYPES, SOURCE_HASH, atomic_fetch_add, borrow, kernel_view, load, num_threads, prefetch,
                    raw_get, raw_set, run_parallel)

__all__ = ["scatter_winners"]

#: columns per work chunk: at least 16 (one 64-byte line of fp32), at most 64, and at most F / threads
MIN_COLUMN_BLOCK, MAX_COLUMN_BLOCK = 16, 64
#: rows ahead whose output elements are prefetched (0 disables)
PREFETCH_ROWS = 8


@functools.cache
def _kernel():
    source_hash = SOURCE_HASH  # part of Numba's cache key (see _core._source_hash)

    @njit(cache=True, nogil=True)
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


def scatter_winners(winner, coef, pos, rows, cols):
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
    out = torch.zeros(rows * cols, dtype=accum_dtype(coef.dtype))
    if R == 0 or F == 0 or rows == 0:
        return out.reshape(rows, cols)
    identity = pos is None
    pos_np = np.zeros(0, np.int64) if identity else pos.contiguous().numpy()
    nthreads = num_threads(R * F) if identity else 1
    nthreads = min(nthreads, (F + MIN_COLUMN_BLOCK - 1) // MIN_COLUMN_BLOCK)
    width = min(MAX_COLUMN_BLOCK, max(MIN_COLUMN_BLOCK, (F // nthreads) // MIN_COLUMN_BLOCK * MIN_COLUMN_BLOCK))
    run_parallel(_kernel(), nthreads, out.numpy(), winner.contiguous().reshape(-1).numpy(),
                 kernel_view(coef.contiguous()), pos_np, R, F, cols, identity, width, PREFETCH_ROWS)
    return out.reshape(rows, cols)
