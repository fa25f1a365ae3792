"""Segment reductions in Triton: reduce consecutive row ranges of a tensor.

.. math::

    \\text{out}[s] = \\bigoplus_{i = \\text{offsets}[s]}^{\\text{offsets}[s + 1] - 1} x[i]

with ``⊕`` one of ``sum, mean, max, min``; empty segments give 0. This is gSpMM's ``copy_e`` over
a structure whose edge positions are the rows of ``x``, so it shares gSpMM's kernels, fp32
accumulation and long-segment splitting (:mod:`.spmm`).

Public entry point: :func:`segment_reduce`.
"""

from ._common import DEFAULT_SPLIT, check_device, check_float, get_schedule
from .spmm import _COPY_E, REDUCES, _run_spmm

__all__ = ["segment_reduce"]


def segment_reduce(x, offsets, reduce, *, schedule=None, split=DEFAULT_SPLIT, need_arg=False):
    """Reduce ``x[offsets[s]:offsets[s + 1]]`` for every segment ``s``, Triton backend.

    Parameters
    ----------
    x : Tensor
        ``(L, *f)`` float16/bfloat16/float32/float64.
    offsets : Tensor
        ``(S + 1,)`` int64/int32, non-decreasing, ``offsets[0] >= 0`` and ``offsets[-1] <= L`` (trusted;
        e.g. ``cumsum`` of DGL's ``seglen`` with a leading 0).
    reduce : str
        ``"sum"``, ``"mean"``, ``"max"`` or ``"min"``.
    schedule : RowSchedule, optional
        ``row_schedule(offsets, split)``; built (a few host syncs) when omitted.
    split : int, default 256
        Chunk length when ``schedule`` is omitted.
    need_arg : bool, default False
        For ``max``/``min``, also return the row of ``x`` that won (first among ties; -1 for empty segments).

    Returns
    -------
    out : Tensor
        ``(S, *f)`` in ``x``'s dtype, accumulated in fp32 (fp64 for fp64); empty segments are 0.
    arg : Tensor or None
        Returned only with ``need_arg`` (then the result is ``(out, arg)``): for ``max``/``min`` an
        ``(S, *f)`` int64 tensor, else ``None``.
    """
    check_float("x", x)
    if x.dim() < 1:
        raise ValueError(f"expected x of shape (L, ...), got {tuple(x.shape)}")
    if reduce not in REDUCES:
        raise ValueError(f"expected reduce in {sorted(REDUCES)}, got {reduce!r}")
    if offsets.dim() != 1 or offsets.numel() < 1:
        raise ValueError(f"expected offsets of shape (S + 1,), got {tuple(offsets.shape)}")
    check_device(x, offsets)
    schedule = get_schedule(offsets, schedule, split)
    out, _, arg = _run_spmm(_COPY_E, REDUCES[reduce], None, x, tuple(x.shape[1:]), offsets, None, None, schedule,
                            need_arg, x.dtype)
    if need_arg:
        return out, arg
    return out
