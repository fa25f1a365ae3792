"""Seeded dropout on the CPU: a keep-or-drop decision per element from a hash of (seed, element index).

.. math::

    y_i = x_i \\cdot \\frac{[\\, u(s, i) \\ge t \\,]}{1 - p},
    \\qquad u(s, i) = \\mathrm{mix}(s + (i + 1)\\,\\gamma) \\gg 40 \\in [0, 2^{24}),
    \\qquad t = \\mathrm{round}(p \\cdot 2^{24})

``mix`` is the SplitMix64 finaliser (two xor-shift-multiply rounds and a last xor-shift) and ``gamma`` its
odd increment, so ``u`` is uniform on 24 bits and independent between elements; an element is kept with
probability ``1 - t / 2^24`` (within ``2^-25`` of ``1 - p``). The mask is a pure function of the seed and
the flat element index: the backward recomputes it from the seed instead of storing it (no ``E x H`` mask
in memory between forward and backward), a run is independent of the thread count, and
:func:`mpgraph.ops._reference.dropout` computes the same mask with torch integer ops (the oracle of the
tests). torch's own CPU dropout draws a Bernoulli per element from one generator on one thread (about 15 ns
an element here), which made attention dropout the largest cost of a GAT training step on the CPU.

The element loop has no branches and runs in 64-bit integer lanes (AVX-512 ``vpmullq``); values are
widened to fp32 (fp64 for fp64), scaled, and rounded once to the output's format.
"""

import functools

import numpy as np
from numba import njit

from ._core import (SOURCE_HASH, atomic_fetch_add, borrow, cached_njit, empty_out, kernel_view, load, num_threads,
                    run_parallel, select, store, to_acc)
from ._layout import check_float

#: SplitMix64's increment (2^64 / golden ratio, odd) and its two finaliser multipliers
GAMMA = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
#: bits of the hash compared with the threshold
BITS = 24
#: elements a thread claims at a time
CHUNK = 1 << 16


def threshold(p):
    """The integer threshold ``t``: an element is dropped when its 24-bit draw is below it."""
    return int(round(float(p) * (1 << BITS)))


@njit(inline="always")
def _draw(seed, i):
    """24-bit uniform draw of element ``i`` (uint64 arithmetic wraps modulo 2^64)."""
    z = seed + np.uint64(i + 1) * np.uint64(GAMMA)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(MIX1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(MIX2)
    z = z ^ (z >> np.uint64(31))
    return z >> np.uint64(64 - BITS)


@functools.lru_cache(maxsize=None)
def dropout_kernel():
    """The compiled kernel; dtypes specialise on first call."""
    source_hash = SOURCE_HASH  # part of Numba's cache key (see _core._source_hash)

    @cached_njit(nogil=True)
    def kernel(counter, n, seed, thr, scale, x, out):
        _ = source_hash
        x, out = borrow(x), borrow(out)
        nchunks = (n + CHUNK - 1) // CHUNK
        zero = to_acc(out, 0.0)
        kept = to_acc(out, scale)
        c = atomic_fetch_add(counter, 0, 1)
        while c < nchunks:
            lo = c * CHUNK
            hi = min(n, lo + CHUNK)
            for i in range(lo, hi):
                factor = select(_draw(seed, i) >= thr, kept, zero)
                store(out, i, to_acc(out, load(x, i)) * factor)
            c = atomic_fetch_add(counter, 0, 1)

    return kernel


def dropout(x, p, seed, *, out=None):
    """``x`` with the elements the seed drops zeroed and the others scaled by ``1 / (1 - p)``, on raw tensors.

    Parameters
    ----------
    x : Tensor, any shape
        float64/float32/float16/bfloat16, CPU.
    p : float
        Drop probability, ``0 <= p < 1``.
    seed : int
        ``0 <= seed < 2**64``; the same seed drops the same flat element indices.
    out : Tensor, optional
        Contiguous tensor of ``x``'s shape and dtype to write into (it may be ``x`` itself).

    Returns
    -------
    Tensor
        Of ``x``'s shape and dtype; computed in fp32 (fp64 for fp64), rounded once.
    """
    check_float("x", x, min_dim=0)
    if not 0.0 <= float(p) < 1.0:
        raise ValueError(f"expected a drop probability 0 <= p < 1, got {p}")
    if not 0 <= int(seed) < 1 << 64:
        raise ValueError(f"expected a seed in [0, 2**64), got {seed}")
    if out is None:
        out = empty_out(x.shape, x.dtype)
    elif out.shape != x.shape or out.dtype != x.dtype or not out.is_contiguous():
        raise ValueError(f"expected out to be a contiguous {x.dtype} tensor of shape {tuple(x.shape)}, got "
                         f"{'a non-contiguous ' if not out.is_contiguous() else ''}{out.dtype} {tuple(out.shape)}")
    n = x.numel()
    if n == 0:
        return out
    xv = kernel_view(x.contiguous())
    scale = 1.0 / (1.0 - float(p))
    run_parallel(dropout_kernel(), num_threads(n), n, np.uint64(int(seed)), np.uint64(threshold(p)),
                 np.float64(scale), xv, kernel_view(out))
    return out
