"""Seeded dropout on the CPU: a keep-or-drop decision per element from a hash of (seed, element index).

.. math::

    y_i = x_i \\cdot \\frac{[\\, u(s, i) \\ge t \\,]}{1 - p},
    \\qquad u(s, i) = R(R(\\ell_i \\gamma_{32} + k_1) \\oplus k_2) \\gg 8 \\in [0, 2^{24}),
    \\qquad t = \\mathrm{round}(p \\cdot 2^{24})

in 32-bit arithmetic: ``l_i`` is the low 32-bit word of the flat index ``i``, ``gamma_32`` an odd constant (2^32
over the golden ratio), and ``R`` a round of xor-shifts and two multiplies that spreads every input bit over
the whole word (the constants of "lowbias32" from Chris Wellons' hash-prospector search, among the least biased
two-multiply 32-bit mixers it found).
The two keys ``(k_1, k_2)`` are the low and high words of the SplitMix64 finaliser of ``seed + (h_i + 1) *
gamma_64``, with ``h_i`` the high word of ``i``: a new pair every 2^32 elements. ``k_1`` offsets the input and
``k_2`` enters between the rounds, so two seeds give shifted copies of one stream only if their ``k_2`` match
and their ``k_1`` differ by fewer than ``n`` steps of ``gamma_32`` (a chance of about ``n / 2^64``; with a key
added to the index alone it would be ``n / 2^32``). An element is kept with probability ``1 - t / 2^24``
(within ``2^-25`` of ``1 - p``).

The mask is a pure function of the seed and the flat element index: the backward recomputes it from the seed
instead of storing it (no ``E x H`` mask in memory between forward and backward), a run is independent of the
thread count, and :func:`mpgraph.ops._reference.dropout` computes the same mask with torch integer ops (the
oracle of the tests). torch's own CPU dropout draws a Bernoulli per element from one generator on one thread
(about 15 ns an element here), which made attention dropout the largest cost of a GAT training step on the CPU.

The element loop has no branches and runs in 32-bit integer lanes (eight per AVX2 vector, ``vpmulld``); values
are widened to fp32 (fp64 for fp64), scaled, and rounded once to the output's format. Until the forty-first
session the draw was SplitMix64 of ``seed + (i + 1) * gamma_64`` per element, whose 64-bit multiplies AVX2 has
no instruction for: on one thread of the AVX2 VM it took 0.99-1.28 ns an element in fp32 and 1.63-1.69 in bf16,
against 0.66-0.80 and 1.08-1.11 now (1M and 8M elements). The factors are drawn into a stack block of
:data:`BLOCK` and applied in a second loop, so that each loop vectorises at its own width: drawn and applied in
one loop, bf16 took 1.41-1.43 ns an element.
"""

import functools

import numpy as np
from numba import njit

from ._core import (SOURCE_HASH, atomic_fetch_add, borrow, cached_njit, empty_out, kernel_view, load, mul_u32,
                    num_threads, run_parallel, select, stack_acc, store, to_acc, xorshift_u32)
from ._layout import check_float

#: SplitMix64's increment (2^64 / golden ratio, odd) and its two finaliser multipliers: the keys of each 2^32
#: elements
GAMMA = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
#: the 32-bit increment applied to an element's low index word (2^32 / golden ratio, odd) and the two multipliers
#: of the 32-bit round
GAMMA32 = 0x9E3779B9
ROUND1 = 0x7FEB352D
ROUND2 = 0x846CA68B
#: bits of the hash compared with the threshold
BITS = 24
#: elements a thread claims at a time (divides 2^32: a chunk's elements share their keys)
CHUNK = 1 << 16
#: the low 32-bit word of an index
MASK32 = 0xFFFFFFFF
#: elements whose factors are drawn into a stack block before they are applied
BLOCK = 256


def threshold(p):
    """The integer threshold ``t``: an element is dropped when its 24-bit draw is below it."""
    return int(round(float(p) * (1 << BITS)))


@njit(inline="always")
def keys(seed, high):
    """The keys ``(k1, k2)`` (uint32) of the elements whose flat index has the high word ``high``: the SplitMix64
    finaliser of ``seed + (high + 1) * GAMMA`` (uint64 arithmetic wraps modulo 2^64), split in two words."""
    z = seed + np.uint64(high + 1) * np.uint64(GAMMA)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(MIX1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(MIX2)
    z = z ^ (z >> np.uint64(31))
    return np.uint32(z & np.uint64(MASK32)), np.uint32(z >> np.uint64(32))


@njit(inline="always")
def _round(z):
    """One 32-bit mixing round: xor-shift, multiply, xor-shift, multiply, xor-shift (products wrap modulo 2^32)."""
    z = mul_u32(xorshift_u32(z, 16), np.uint32(ROUND1))
    z = mul_u32(xorshift_u32(z, 15), np.uint32(ROUND2))
    return xorshift_u32(z, 16)


@njit(inline="always")
def draw(k1, k2, low):
    """24-bit uniform draw (uint32) of the element with the low index word ``low`` under the keys ``(k1, k2)``."""
    z = _round(np.uint32(mul_u32(np.uint32(low), np.uint32(GAMMA32)) + k1))
    return _round(np.uint32(z ^ k2)) >> np.uint32(32 - BITS)


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
        factors = stack_acc(out, BLOCK)
        c = atomic_fetch_add(counter, 0, 1)
        while c < nchunks:
            start = c * CHUNK
            stop = min(n, start + CHUNK)
            k1, k2 = keys(seed, start >> 32)
            for b in range(start, stop, BLOCK):
                m = min(BLOCK, stop - b)
                for j in range(m):
                    factors[j] = select(draw(k1, k2, (b + j) & MASK32) >= thr, kept, zero)
                for j in range(m):
                    store(out, b + j, to_acc(out, load(x, b + j)) * factors[j])
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
    run_parallel(dropout_kernel(), num_threads(n), n, np.uint64(int(seed)), np.uint32(threshold(p)),
                 np.float64(scale), xv, kernel_view(out))
    return out
