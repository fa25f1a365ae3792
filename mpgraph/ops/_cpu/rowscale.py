"""Rows scaled by one factor each on the CPU: ``out[r, :] = x[r, :] * s[r]`` (or ``/ s[r]``), rounded once.

The factor is float32 (a layer's degree normaliser, a mean's ``1 / in-degree``); the product is formed in
float32 from the exact float32 value of each element and rounded once to ``out``'s format, as
``torch.mul(x, s, out=out)`` computes it. torch runs a 16-bit tensor times a float32 one through a generic
converting loop (about 10x slower than a float32 product), so the torch backend scales a float32 copy of each
block of rows (:func:`mpgraph.ops._torch_backend.row_scale`): two copies and a product per block, each a
parallel region of its own. This is one pass over the rows on the kernels' threads, reading each element once
and writing it once. Results equal the torch backend's bit for bit.
"""

import functools

import numpy as np
import torch

from ._core import (PASS_SERIAL_WORK, SOURCE_HASH, atomic_fetch_add, borrow, cached_njit, chunk_bounds, empty_out,
                    kernel_view, load, num_threads, raw_get, run_parallel, store, to_acc)
from ._layout import check_float



@functools.cache
def _kernel(divide):
    """``kernel(counter, bounds, x, s, out, F)``: rows ``bounds[c] : bounds[c + 1]`` of the flat ``(N, F)`` ``x``
    scaled by ``s[r]`` (divided with ``divide``) into ``out``, chunks claimed from ``counter``."""
    source_hash = SOURCE_HASH

    @cached_njit(nogil=True)
    def kernel(counter, bounds, x, s, out, F):
        _ = source_hash
        x, s, out = borrow(x), borrow(s), borrow(out)
        nchunks = bounds.size - 1
        c = atomic_fetch_add(counter, 0, 1)
        while c < nchunks:
            for r in range(raw_get(bounds, c), raw_get(bounds, c + 1)):
                f = s[r]
                o = r * F
                if divide:
                    for j in range(F):
                        store(out, o + j, to_acc(out, load(x, o + j)) / f)
                else:
                    for j in range(F):
                        store(out, o + j, to_acc(out, load(x, o + j)) * f)
            c = atomic_fetch_add(counter, 0, 1)

    return kernel


def row_scale(x, s, out_dtype, divide=False):
    """``x * s`` (``x / s`` with ``divide``), one float32 factor per row of ``x``, into a new ``out_dtype`` tensor.

    Parameters
    ----------
    x : Tensor ``(N, *F)``
        float32, float16 or bfloat16, on the CPU (any strides).
    s : Tensor, float32, ``N`` elements
        ``(N,)`` or ``(N, 1, ...)``: one factor per row.
    out_dtype : torch.dtype
        float32, float16 or bfloat16.
    divide : bool, default False

    Returns
    -------
    Tensor ``(N, *F)`` in ``out_dtype``: each element's float32 product (quotient) rounded once.
    """
    check_float("x", x)
    if x.dtype == torch.float64 or out_dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise TypeError(f"expected float32/float16/bfloat16 x and out_dtype, got {x.dtype} and {out_dtype}")
    N = x.shape[0]
    if not isinstance(s, torch.Tensor) or s.dtype != torch.float32 or s.numel() != N or s.device != x.device:
        got = f"{s.numel()} of {s.dtype} on {s.device}" if isinstance(s, torch.Tensor) else type(s).__name__
        raise ValueError(f"expected one float32 factor per row of x ({N}) on {x.device}, got {got}")
    out = empty_out(x.shape, out_dtype)
    F = x.numel() // N if N else 0
    if N == 0 or F == 0:
        return out
    n = num_threads(N * F, PASS_SERIAL_WORK)
    bounds = chunk_bounds(np.arange(N + 1, dtype=np.int64), n)
    run_parallel(_kernel(bool(divide)), n, bounds, kernel_view(x.contiguous()), s.reshape(-1).contiguous().numpy(),
                 kernel_view(out), F)
    return out
