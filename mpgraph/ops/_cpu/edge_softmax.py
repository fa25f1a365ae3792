"""Fused edge softmax on the CPU (forward and backward), grouped by destination.

.. math::

    s_{e} = \\frac{\\exp(x_e - m_v)}{\\sum_{e' \\to v} \\exp(x_{e'} - m_v)},
    \\qquad m_v = \\max_{e' \\to v} x_{e'}

per head, over the in-edges of every destination ``v`` (pass ``Index.csr()`` to
normalise over out-edges instead). The max, the fp32 sum of exponentials and the
normalisation run row by row in three passes over the row's edges, which stay in
cache; the row's exponentials wait in a 64 KiB per-chunk scratch between the last
two passes (hub rows that do not fit compute them twice), so nothing E-sized is
allocated besides the output. ``exp`` is a vectorisable fp32 polynomial
(:func:`._core.exp_f32`, within 2 ulp); fp64 uses ``np.exp``. With ``eid=None``
(edge data in slot order) a row is one contiguous block, walked in vector-wide
lanes; otherwise heads are the inner loop.

Backward: ``grad_x = s * (g - sum_{e' -> v} s_{e'} g_{e'})`` in two passes.
"""

import functools

import numpy as np
import torch
from numba import njit

from ._core import (SOURCE_HASH, acc_exp, acc_zero, alloc_acc, atomic_fetch_add, borrow, chunk_bounds, index_view,
                    kernel_view, load, num_threads, raw_get, run_parallel, store, to_acc)
from ._layout import check_float, check_index, check_out_dtype, needs_fp64_pass


#: per-chunk fp32 scratch (64 KiB) that keeps a row's exp(x - m) from the sum pass for the normalising
#: pass; rows with more elements (hubs) compute exp twice instead
EXP_SCRATCH = 16384


def _lanes(H):
    """Lane count ``L``: a multiple of ``H`` of about one 16-float vector (``H`` when ``H > 16``)."""
    return H * max(1, 16 // H)


@njit
def _forward_row_flat(base, n, x, out, H, L, m, z, ml, zl, ex, cached):
    """One row whose logits are the flat block ``[base, base + n)``, walked ``L`` lanes at a time (lane
    ``t`` is head ``t % H``) so that every loop is contiguous and vectorised; lanes of one head are
    folded in lane order. ``cached`` (a compile-time constant) keeps exp(x - m) in ``ex`` between the
    sum and the normalisation instead of computing it twice."""
    zero = acc_zero(out)
    full = n - n % L
    for t in range(L):
        ml[t] = zero - np.inf
    for i in range(0, full, L):
        for t in range(L):
            ml[t] = max(ml[t], to_acc(out, load(x, base + i + t)))
    for h in range(H):
        m[h] = zero - np.inf
    for t in range(L if full > 0 else 0):
        m[t % H] = max(m[t % H], ml[t])
    for i in range(full, n):
        m[i % H] = max(m[i % H], to_acc(out, load(x, base + i)))
    for t in range(L):
        ml[t] = m[t % H]
        zl[t] = zero
    for i in range(0, full, L):
        for t in range(L):
            e = acc_exp(to_acc(out, load(x, base + i + t)) - ml[t])
            zl[t] += e
            if cached:
                ex[i + t] = e
    for h in range(H):
        z[h] = zero
    for t in range(L if full > 0 else 0):
        z[t % H] += zl[t]
    for i in range(full, n):
        e = acc_exp(to_acc(out, load(x, base + i)) - m[i % H])
        z[i % H] += e
        if cached:
            ex[i] = e
    for t in range(L):
        zl[t] = z[t % H]
    for i in range(0, full, L):
        for t in range(L):
            e = ex[i + t] if cached else acc_exp(to_acc(out, load(x, base + i + t)) - ml[t])
            store(out, base + i + t, e / zl[t])
    for i in range(full, n):
        e = ex[i] if cached else acc_exp(to_acc(out, load(x, base + i)) - m[i % H])
        store(out, base + i, e / z[i % H])


@njit
def _forward_rows_flat(r_begin, r_end, indptr, x, out, H, L):
    """Rows whose edges are contiguous (``eid`` is the identity)."""
    m = alloc_acc(out, H)  # [H] max
    z = alloc_acc(out, H)  # [H] sum of exp(x - m), fp32
    ml = alloc_acc(out, L)  # [L] per-lane max, then m[t % H]
    zl = alloc_acc(out, L)  # [L] per-lane sum, then z[t % H]
    ex = alloc_acc(out, EXP_SCRATCH)
    for r in range(r_begin, r_end):
        base = raw_get(indptr, r) * H
        n = raw_get(indptr, r + 1) * H - base
        if n == 0:
            continue
        if n <= EXP_SCRATCH:
            _forward_row_flat(base, n, x, out, H, L, m, z, ml, zl, ex, True)
        else:
            _forward_row_flat(base, n, x, out, H, L, m, z, ml, zl, ex, False)


@njit
def _forward_row(k0, k1, eid, x, out, H, m, z, ex, cached):
    """One row whose edges are scattered (``eid`` given): three passes over the row, heads inner."""
    zero = acc_zero(out)
    for h in range(H):
        m[h] = zero - np.inf
        z[h] = zero
    for k in range(k0, k1):
        b = raw_get(eid, k) * H
        for h in range(H):
            m[h] = max(m[h], to_acc(out, load(x, b + h)))
    for k in range(k0, k1):
        b = raw_get(eid, k) * H
        for h in range(H):
            e = acc_exp(to_acc(out, load(x, b + h)) - m[h])
            z[h] += e
            if cached:
                ex[(k - k0) * H + h] = e
    for k in range(k0, k1):
        b = raw_get(eid, k) * H
        for h in range(H):
            e = ex[(k - k0) * H + h] if cached else acc_exp(to_acc(out, load(x, b + h)) - m[h])
            store(out, b + h, e / z[h])


@njit
def _forward_rows(r_begin, r_end, indptr, eid, x, out, H):
    m = alloc_acc(out, H)
    z = alloc_acc(out, H)
    ex = alloc_acc(out, EXP_SCRATCH)
    for r in range(r_begin, r_end):
        k0 = raw_get(indptr, r)
        k1 = raw_get(indptr, r + 1)
        if k1 == k0:
            continue
        if (k1 - k0) * H <= EXP_SCRATCH:
            _forward_row(k0, k1, eid, x, out, H, m, z, ex, True)
        else:
            _forward_row(k0, k1, eid, x, out, H, m, z, ex, False)


@njit
def _backward_rows_flat(r_begin, r_end, indptr, s, g, out, H, L):
    """Rows whose edges are contiguous: the flat lane walk of :func:`_forward_row_flat`."""
    zero = acc_zero(out)
    acc = alloc_acc(out, H)  # [H] sum over the row of s * g, fp32
    al = alloc_acc(out, L)  # [L] per-lane sums, then acc[t % H]
    for r in range(r_begin, r_end):
        base = raw_get(indptr, r) * H
        n = raw_get(indptr, r + 1) * H - base
        if n == 0:
            continue
        full = n - n % L
        for t in range(L):
            al[t] = zero
        for i in range(0, full, L):
            for t in range(L):
                al[t] += to_acc(out, load(s, base + i + t)) * to_acc(out, load(g, base + i + t))
        for h in range(H):
            acc[h] = zero
        for t in range(L if full > 0 else 0):
            acc[t % H] += al[t]
        for i in range(full, n):
            acc[i % H] += to_acc(out, load(s, base + i)) * to_acc(out, load(g, base + i))
        for t in range(L):
            al[t] = acc[t % H]
        for i in range(0, full, L):
            for t in range(L):
                sv = to_acc(out, load(s, base + i + t))
                store(out, base + i + t, sv * (to_acc(out, load(g, base + i + t)) - al[t]))
        for i in range(full, n):
            sv = to_acc(out, load(s, base + i))
            store(out, base + i, sv * (to_acc(out, load(g, base + i)) - acc[i % H]))


@njit
def _backward_rows(r_begin, r_end, indptr, eid, s, g, out, H):
    """Rows whose edges are scattered: two passes over the row, heads inner."""
    zero = acc_zero(out)
    acc = alloc_acc(out, H)  # [H] sum over the row of s * g, fp32
    for r in range(r_begin, r_end):
        k0 = raw_get(indptr, r)
        k1 = raw_get(indptr, r + 1)
        for h in range(H):
            acc[h] = zero
        for k in range(k0, k1):
            b = raw_get(eid, k) * H
            for h in range(H):
                acc[h] += to_acc(out, load(s, b + h)) * to_acc(out, load(g, b + h))
        for k in range(k0, k1):
            b = raw_get(eid, k) * H
            for h in range(H):
                sv = to_acc(out, load(s, b + h))
                store(out, b + h, sv * (to_acc(out, load(g, b + h)) - acc[h]))


@functools.lru_cache(maxsize=None)
def edge_softmax_kernels():
    """``(forward, backward)`` compiled kernels; dtypes specialise on first call."""
    source_hash = SOURCE_HASH  # part of Numba's cache key (see _core._source_hash)

    @njit(cache=True, nogil=True)
    def forward(counter, bounds, indptr, eid, x, out, H, L):
        _ = source_hash
        nchunks = bounds.size - 1
        indptr, eid, x, out = borrow(indptr), borrow(eid), borrow(x), borrow(out)
        c = atomic_fetch_add(counter, 0, 1)
        while c < nchunks:
            if eid.size == 0:
                _forward_rows_flat(raw_get(bounds, c), raw_get(bounds, c + 1), indptr, x, out, H, L)
            else:
                _forward_rows(raw_get(bounds, c), raw_get(bounds, c + 1), indptr, eid, x, out, H)
            c = atomic_fetch_add(counter, 0, 1)

    @njit(cache=True, nogil=True)
    def backward(counter, bounds, indptr, eid, s, g, out, H, L):
        _ = source_hash
        nchunks = bounds.size - 1
        indptr, eid, s, g, out = borrow(indptr), borrow(eid), borrow(s), borrow(g), borrow(out)
        c = atomic_fetch_add(counter, 0, 1)
        while c < nchunks:
            if eid.size == 0:
                _backward_rows_flat(raw_get(bounds, c), raw_get(bounds, c + 1), indptr, s, g, out, H, L)
            else:
                _backward_rows(raw_get(bounds, c), raw_get(bounds, c + 1), indptr, eid, s, g, out, H)
            c = atomic_fetch_add(counter, 0, 1)

    return forward, backward


def _check(indptr, eid, name, t):
    check_index("indptr", indptr)
    if eid is not None:
        check_index("eid", eid)
    check_float(name, t)
    if indptr.numel() > 0 and int(indptr[0]) != 0:
        raise ValueError(f"expected indptr[0] == 0 (every edge in a row), got {int(indptr[0])}")
    E = int(indptr[-1]) if indptr.numel() > 0 else 0
    if t.shape[0] != E:
        raise ValueError(f"expected {name} with {E} rows (one per edge, indptr[-1]), got shape {tuple(t.shape)}")


def edge_softmax_forward(indptr, eid, logits, *, out_dtype=None):
    """Softmax of edge logits over the edges of each row, on raw tensors.

    Parameters
    ----------
    indptr : Tensor, int64, ``(N_dst + 1,)``
        ``Index.csc()[0]`` (normalise over in-edges; ``Index.csr()[0]`` for out-edges).
    eid : Tensor, int64, ``(E,)``, or None
        Edge id of each slot (``Index.csc()[2]``); None means the identity.
    logits : Tensor ``(E, *H)``
        float64/float32/float16/bfloat16; e.g. ``(E, H)`` or ``(E, H, 1)``.
    out_dtype : torch.dtype, optional
        Dtype of the result; default ``logits.dtype``.

    Returns
    -------
    Tensor ``(E, *H)``
        In ``out_dtype``; max, exponentials and sums in fp32 (fp64 for fp64),
        rounded once. Edges of a row whose logits are all ``-inf`` get NaN (as
        ``torch.softmax``).
    """
    _check(indptr, eid, "logits", logits)
    check_out_dtype(out_dtype)
    if needs_fp64_pass(out_dtype, logits):
        return edge_softmax_forward(indptr, eid, logits, out_dtype=torch.float64).to(out_dtype)
    out = torch.empty(logits.shape, dtype=out_dtype or logits.dtype)
    E = logits.shape[0]
    H = int(np.prod(logits.shape[1:], dtype=np.int64))
    R = indptr.numel() - 1
    if E == 0 or H == 0 or R <= 0:
        return out
    indptr_np = index_view(indptr.contiguous())
    nthreads = num_threads(3 * E * H)
    forward, _ = edge_softmax_kernels()
    run_parallel(forward, nthreads, chunk_bounds(indptr_np, nthreads), indptr_np,
                 index_view(eid.contiguous() if eid is not None else None),
                 kernel_view(logits.contiguous()), kernel_view(out), H, _lanes(H))
    return out


def edge_softmax_backward(indptr, eid, out, grad_out, *, out_dtype=None):
    """Gradient of :func:`edge_softmax_forward` with respect to the logits.

    .. math::

        \\partial x_e = s_e \\left(g_e - \\sum_{e' \\in \\mathrm{row}(e)} s_{e'} g_{e'}\\right)

    Parameters
    ----------
    indptr, eid : Tensor
        The structure given to the forward.
    out : Tensor ``(E, *H)``
        The forward's result ``s``.
    grad_out : Tensor ``(E, *H)``
        Gradient with respect to ``s`` (any supported float dtype).
    out_dtype : torch.dtype, optional
        Dtype of the result; default the promoted dtype of ``out`` and ``grad_out``.

    Returns
    -------
    Tensor ``(E, *H)``
        In ``out_dtype``; the row sums accumulate in fp32 (fp64 if anything is fp64).
    """
    _check(indptr, eid, "out", out)
    check_float("grad_out", grad_out)
    if grad_out.shape != out.shape:
        raise ValueError(f"expected grad_out of shape {tuple(out.shape)}, got {tuple(grad_out.shape)}")
    check_out_dtype(out_dtype)
    if needs_fp64_pass(out_dtype, out, grad_out):
        return edge_softmax_backward(indptr, eid, out, grad_out, out_dtype=torch.float64).to(out_dtype)
    dtype = out_dtype or torch.promote_types(out.dtype, grad_out.dtype)
    grad = torch.empty(out.shape, dtype=dtype)
    E = out.shape[0]
    H = int(np.prod(out.shape[1:], dtype=np.int64))
    R = indptr.numel() - 1
    if E == 0 or H == 0 or R <= 0:
        return grad
    indptr_np = index_view(indptr.contiguous())
    nthreads = num_threads(2 * E * H)
    _, backward = edge_softmax_kernels()
    run_parallel(backward, nthreads, chunk_bounds(indptr_np, nthreads), indptr_np,
                 index_view(eid.contiguous() if eid is not None else None),
                 kernel_view(out.contiguous()), kernel_view(grad_out.contiguous()), kernel_view(grad), H, _lanes(H))
    return grad
