"""Fused edge softmax (forward and backward) in Triton, grouped per destination (or any rows).

.. math::

    y_k = \\frac{\\exp(x_k - m_v)}{\\sum_{j \\to v} \\exp(x_j - m_v)}, \\quad m_v = \\max_{j \\to v} x_j
    \\qquad
    \\frac{\\partial L}{\\partial x_k} = y_k \\Big(g_k - \\sum_{j \\to v} y_j g_j\\Big)

Max, exponentials and sums run in fp32 (fp64 for fp64) with an online (streaming) max, so one
read of the logits per row gives the normaliser. Rows are split per :class:`~._common.RowSchedule`:
a row that fits in one chunk is reduced and written by one program; a long row's chunks write
partial ``(max, sum)`` pairs, a combine kernel merges them per row, and an apply kernel writes the
row's outputs chunk-parallel.

Public entry points: :func:`edge_softmax_forward`, :func:`edge_softmax_backward`.
"""

import torch
import triton
import triton.language as tl

from ._common import (
    DEFAULT_SPLIT,
    FLOAT_DTYPES,
    INTERPRET,
    acc_type,
    autotuned,
    block_size,
    check_device,
    check_float,
    div,
    get_schedule,
    launch,
    promote,
    to_out,
)

__all__ = ["edge_softmax_forward", "edge_softmax_backward"]

#: Most heads per program (more heads tile over the grid's second axis).
MAX_BLOCK_H = 4 if INTERPRET else 32


@triton.jit
def _apply(X, G, OUT, eid, start, end, a, b, h, hmask, H,
           BACKWARD: tl.constexpr, HAS_EID: tl.constexpr, ACC: tl.constexpr, BLOCK_E: tl.constexpr):
    """Write edges ``[start, end)`` given the row statistics ``a``, ``b`` ([BLOCK_H] each).

    Forward: ``a`` = row max, ``b`` = sum of exp(x - a); OUT = exp(x - a) / b.
    Backward (X = y): ``a`` = sum of y * g; OUT = y * (g - a).
    """
    a_safe = tl.where(a == float("-inf"), 0.0, a)
    b = tl.where(hmask, b, 1.0)                                           # no 0/0 in masked heads
    for k0 in range(start, end, BLOCK_E):
        k = k0 + tl.arange(0, BLOCK_E)                                    # [BLOCK_E]
        kmask = k < end
        if HAS_EID:
            ei = tl.load(eid + k, mask=kmask, other=0).to(tl.int64)
        else:
            ei = k
        m2 = kmask[:, None] & hmask[None, :]                              # [BLOCK_E, BLOCK_H]
        offs = ei[:, None] * H + h[None, :]
        if BACKWARD:
            y = tl.load(X + offs, mask=m2, other=0.0).to(ACC)
            g = tl.load(G + offs, mask=m2, other=0.0).to(ACC)
            res = y * (g - a[None, :])
        else:
            x = tl.load(X + offs, mask=m2, other=float("-inf")).to(ACC)
            res = div(tl.exp(x - a_safe[None, :]), b[None, :], ACC)
        tl.store(OUT + offs, to_out(res, OUT), mask=m2)


@triton.jit
def _softmax_chunk_kernel(
    X, G, OUT, PART_A, PART_B, chunk_start, chunk_end, chunk_slot, eid, H,
    BACKWARD: tl.constexpr, HAS_EID: tl.constexpr, ACC: tl.constexpr,
    BLOCK_E: tl.constexpr, BLOCK_H: tl.constexpr,
):
    """One program = one chunk x BLOCK_H heads (grid: (C, cdiv(H, BLOCK_H))). Short rows are finished here."""
    c = tl.program_id(0)
    start = tl.load(chunk_start + c)
    end = tl.load(chunk_end + c)
    slot = tl.load(chunk_slot + c)
    h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)               # [BLOCK_H]
    hmask = h < H
    a = tl.full([BLOCK_H], float("-inf"), dtype=ACC)                      # running max (fwd)
    b = tl.zeros([BLOCK_H], dtype=ACC)                                    # running sum
    for k0 in range(start, end, BLOCK_E):
        k = k0 + tl.arange(0, BLOCK_E)                                    # [BLOCK_E]
        kmask = k < end
        if HAS_EID:
            ei = tl.load(eid + k, mask=kmask, other=0).to(tl.int64)
        else:
            ei = k
        m2 = kmask[:, None] & hmask[None, :]                              # [BLOCK_E, BLOCK_H]
        offs = ei[:, None] * H + h[None, :]
        if BACKWARD:
            y = tl.load(X + offs, mask=m2, other=0.0).to(ACC)
            g = tl.load(G + offs, mask=m2, other=0.0).to(ACC)
            b += tl.sum(y * g, axis=0)
        else:
            x = tl.load(X + offs, mask=m2, other=float("-inf")).to(ACC)
            a_new = tl.maximum(a, tl.max(x, axis=0))
            a_safe = tl.where(a_new == float("-inf"), 0.0, a_new)
            b = b * tl.exp(a - a_safe) + tl.sum(tl.exp(x - a_safe[None, :]), axis=0)
            a = a_new
    if BACKWARD:
        a = b
    if slot < 0:
        _apply(X, G, OUT, eid, start, end, a, b, h, hmask, H, BACKWARD, HAS_EID, ACC, BLOCK_E)
    else:
        tl.store(PART_A + slot * H + h, a, mask=hmask)
        if not BACKWARD:
            tl.store(PART_B + slot * H + h, b, mask=hmask)


@triton.jit
def _softmax_combine_kernel(
    PART_A, PART_B, ROW_A, ROW_B, long_ptr, H,
    BACKWARD: tl.constexpr, ACC: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_H: tl.constexpr,
):
    """One program = one long row x BLOCK_H heads: merge its slots' statistics (grid: (L, cdiv(H, BLOCK_H)))."""
    lr = tl.program_id(0)
    p0 = tl.load(long_ptr + lr)
    p1 = tl.load(long_ptr + lr + 1)
    h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    hmask = h < H
    a = tl.full([BLOCK_H], float("-inf"), dtype=ACC)
    b = tl.zeros([BLOCK_H], dtype=ACC)
    for q0 in range(p0, p1, BLOCK_P):
        q = q0 + tl.arange(0, BLOCK_P)                                    # [BLOCK_P]
        m2 = (q < p1)[:, None] & hmask[None, :]                           # [BLOCK_P, BLOCK_H]
        offs = q[:, None] * H + h[None, :]
        if BACKWARD:
            b += tl.sum(tl.load(PART_A + offs, mask=m2, other=0.0), axis=0)
        else:
            pa = tl.load(PART_A + offs, mask=m2, other=float("-inf"))
            pb = tl.load(PART_B + offs, mask=m2, other=0.0)
            a_new = tl.maximum(a, tl.max(pa, axis=0))
            a_safe = tl.where(a_new == float("-inf"), 0.0, a_new)
            b = b * tl.exp(a - a_safe) + tl.sum(pb * tl.exp(pa - a_safe[None, :]), axis=0)
            a = a_new
    if BACKWARD:
        a = b
    tl.store(ROW_A + lr * H + h, a, mask=hmask)
    tl.store(ROW_B + lr * H + h, b, mask=hmask)


@triton.jit
def _softmax_split_apply_kernel(
    X, G, OUT, ROW_A, ROW_B, slot_chunk, slot_long, chunk_start, chunk_end, eid, H,
    BACKWARD: tl.constexpr, HAS_EID: tl.constexpr, ACC: tl.constexpr,
    BLOCK_E: tl.constexpr, BLOCK_H: tl.constexpr,
):
    """One program = one chunk of a long row x BLOCK_H heads: write its edges (grid: (P, cdiv(H, BLOCK_H)))."""
    p = tl.program_id(0)
    c = tl.load(slot_chunk + p)
    lr = tl.load(slot_long + p)
    start = tl.load(chunk_start + c)
    end = tl.load(chunk_end + c)
    h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    hmask = h < H
    a = tl.load(ROW_A + lr * H + h, mask=hmask, other=0.0)
    b = tl.load(ROW_B + lr * H + h, mask=hmask, other=1.0)
    _apply(X, G, OUT, eid, start, end, a, b, h, hmask, H, BACKWARD, HAS_EID, ACC, BLOCK_E)


# Heads are few (BLOCK_H = next power of two >= H, at least 4), so tiles are narrow: small warps counts for
# short rows, long edge blocks for hubs; at most 16 elements per thread.
_CONFIGS = [  # the first is the default when autotuning is off
    triton.Config({"BLOCK_E": 32}, num_warps=2),
    triton.Config({"BLOCK_E": 32}, num_warps=1),
    triton.Config({"BLOCK_E": 64}, num_warps=2),
    triton.Config({"BLOCK_E": 128}, num_warps=4),
]
_chunk_tuned = autotuned(_softmax_chunk_kernel, _CONFIGS, key=["H", "BACKWARD"], width="BLOCK_H")
_combine_tuned = autotuned(_softmax_combine_kernel, [triton.Config({"BLOCK_P": 16}, num_warps=2)], key=["H"])
_split_apply_tuned = autotuned(_softmax_split_apply_kernel, _CONFIGS, key=["H", "BACKWARD"], width="BLOCK_H")


def _run(backward, x, g, indptr, eid, schedule, split, out_dtype=None):
    check_device(x, g, indptr, eid)
    E = x.shape[0]
    if eid is not None and eid.numel() != E:
        raise ValueError(f"expected eid of shape ({E},), got {tuple(eid.shape)}")
    device = x.device
    H = 1
    for n in x.shape[1:]:
        H *= n
    in_dtype = promote(x.dtype, g)
    if out_dtype is None:
        out_dtype = in_dtype
    elif out_dtype not in FLOAT_DTYPES:
        raise TypeError(f"expected out_dtype float16/bfloat16/float32/float64, got {out_dtype}")
    out = torch.empty(x.shape, dtype=out_dtype, device=device)
    if E == 0 or H == 0:
        return out
    schedule = get_schedule(indptr, schedule, split)
    xc = x.contiguous()
    gc = g.contiguous() if g is not None else xc
    acc = acc_type(promote(out_dtype, x, g))
    part_dtype = torch.float64 if acc == tl.float64 else torch.float32
    P, L = schedule.num_slots, schedule.num_long
    part_a = torch.empty((max(P, 1), H), dtype=part_dtype, device=device)
    part_b = torch.empty((max(P, 1), H), dtype=part_dtype, device=device)
    eid_ = eid if eid is not None else indptr
    flags = dict(BACKWARD=backward, HAS_EID=eid is not None, ACC=acc, BLOCK_H=block_size(H, max_block=MAX_BLOCK_H))
    nh = triton.cdiv(H, flags["BLOCK_H"])
    launch(_softmax_chunk_kernel, _chunk_tuned, (schedule.num_chunks, nh),
           (xc, gc, out, part_a, part_b, schedule.chunk_start, schedule.chunk_end, schedule.chunk_slot, eid_, H),
           flags)
    if L:
        row_a = torch.empty((L, H), dtype=part_dtype, device=device)
        row_b = torch.empty((L, H), dtype=part_dtype, device=device)
        launch(_softmax_combine_kernel, _combine_tuned, (L, nh),
               (part_a, part_b, row_a, row_b, schedule.long_ptr, H),
               dict(BACKWARD=backward, ACC=acc, BLOCK_H=flags["BLOCK_H"]))
        launch(_softmax_split_apply_kernel, _split_apply_tuned, (P, nh),
               (xc, gc, out, row_a, row_b, schedule.slot_chunk, schedule.slot_long, schedule.chunk_start,
                schedule.chunk_end, eid_, H),
               flags)
    return out


def edge_softmax_forward(logits, indptr, eid, *, schedule=None, split=DEFAULT_SPLIT, out_dtype=None):
    """Softmax of edge logits over the edges of each row (in-edges of each destination with CSC).

    Parameters
    ----------
    logits : Tensor
        ``(E, *h)`` (e.g. ``(E,)``, ``(E, H)``, ``(E, H, 1)``) float16/bfloat16/float32/float64, edge-ID
        order; trailing dims are flattened to ``H`` heads, each normalised independently.
    indptr : Tensor
        ``(R + 1,)`` int64/int32 row pointer: ``Index.csc()[0]`` to normalise over the in-edges of each
        destination (DGL's default), ``Index.csr()[0]`` for the out-edges of each source.
    eid : Tensor or None
        ``(E,)`` int64/int32 edge ID at each position (``Index.csc()[2]``); ``None``: position = edge ID.
    schedule : RowSchedule, optional
        ``row_schedule(indptr, split)``; built (a few host syncs) when omitted.
    split : int, default 256
        Chunk length when ``schedule`` is omitted.
    out_dtype : torch.dtype, optional
        Output dtype; default ``logits.dtype``. The computation runs in fp32 (fp64 if either is fp64).

    Returns
    -------
    Tensor
        Same shape as ``logits``, in ``out_dtype``. Max and sums in fp32 (fp64 for fp64). Edges whose row
        logits are all ``-inf`` get NaN (0/0), as in a dense softmax.
    """
    check_float("logits", logits)
    if logits.dim() < 1:
        raise ValueError(f"expected logits of shape (E, ...), got {tuple(logits.shape)}")
    return _run(False, logits, None, indptr, eid, schedule, split, out_dtype)


def edge_softmax_backward(out, grad_out, indptr, eid, *, schedule=None, split=DEFAULT_SPLIT, out_dtype=None):
    """Gradient of :func:`edge_softmax_forward` with respect to the logits.

    .. math::

        \\frac{\\partial L}{\\partial x_k} = y_k \\Big(g_k - \\sum_{j \\in \\text{row}(k)} y_j g_j\\Big)

    Parameters
    ----------
    out : Tensor
        ``(E, *h)`` the forward result ``y``.
    grad_out : Tensor
        ``(E, *h)`` the incoming gradient ``g`` (same shape as ``out``).
    indptr, eid, schedule, split
        As in :func:`edge_softmax_forward` (same rows).
    out_dtype : torch.dtype, optional
        Output dtype; default: the promoted dtype of ``out`` and ``grad_out``.

    Returns
    -------
    Tensor
        ``(E, *h)`` in ``out_dtype``; the row sum in fp32 (fp64 if any dtype is fp64).
    """
    check_float("out", out)
    check_float("grad_out", grad_out)
    if out.shape != grad_out.shape or out.dim() < 1:
        raise ValueError(f"expected out and grad_out of one shape (E, ...), got {tuple(out.shape)} "
                         f"and {tuple(grad_out.shape)}")
    return _run(True, out, grad_out, indptr, eid, schedule, split, out_dtype)
