"""Segment reductions on the CPU: reduce consecutive rows of ``x`` given segment offsets.

A segment reduction is gSpMM ``copy_rhs`` with ``offsets`` as the row pointer and
the identity as edge ids, so it shares that kernel (and its compiled code).
"""

from ._layout import check_float, check_index
from ._ops import REDUCES
from .spmm import gspmm


def segment_reduce(reduce, x, offsets):
    """Reduce ``x[offsets[i]:offsets[i + 1]]`` for every segment ``i``, on raw tensors.

    Parameters
    ----------
    reduce : {'sum', 'mean', 'max', 'min'}
    x : Tensor ``(L, *F)``
        float64/float32/float16/bfloat16.
    offsets : Tensor, int64, ``(S + 1,)``
        Non-decreasing segment boundaries within ``[0, L]`` (``offsets[0]`` need not be 0).

    Returns
    -------
    out : Tensor ``(S, *F)``
        Same dtype as ``x``; sums and means accumulate in fp32 (fp64 for fp64) and
        round once; empty segments give 0.
    arg : Tensor int64 ``(S, *F)`` or None
        For ``max``/``min``: the row of ``x`` that won, -1 for empty segments; None otherwise.

    Raises
    ------
    ValueError
        Unknown ``reduce``, empty ``offsets``, or ``offsets[-1] > L``.
    TypeError
        Unsupported dtypes or devices.
    """
    if reduce not in REDUCES:
        raise ValueError(f"expected reduce in {REDUCES}, got {reduce!r}")
    check_index("offsets", offsets)
    check_float("x", x)
    if offsets.numel() == 0:
        raise ValueError("expected offsets with at least one element (S + 1 boundaries), got an empty tensor")
    if offsets.numel() > 1 and int(offsets[-1]) > x.shape[0]:
        raise ValueError(f"expected offsets[-1] <= x.shape[0] = {x.shape[0]}, got {int(offsets[-1])}")
    out, _, arg = gspmm("copy_rhs", reduce, offsets, None, None, None, x)
    return out, arg
