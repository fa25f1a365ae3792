"""Reductions and softmax over consecutive segments of rows.

A segmentation with lengths ``seglen: (N,)`` is the graph whose edge ``k`` (row
``k`` of ``value``) points into segment ``i`` for ``sum(seglen[:i]) <= k <
sum(seglen[:i+1])``; the segment ops are gSpMM ``copy_e`` and the edge softmax
on that graph, so they share their kernels, precision and gradients.
"""

import torch

from .._index import Index
from ..base import DGLError
from ..precision import check_float_feature
from ._checks import check_choice, check_index_tensor
from .edge_softmax import edge_softmax
from .spmm import REDUCE_OPS, gspmm

__all__ = ["segment_reduce", "segment_softmax"]


def _segment_index(seglen, value, func):
    """Index with one edge per row of ``value`` pointing at its segment (sources: a single node)."""
    check_float_feature("value", value)
    if value.dim() == 0:
        raise DGLError(f"{func}: value must have a row dimension, got a 0-d tensor")
    if isinstance(seglen, torch.Tensor):
        seglen = seglen.to(value.device)
    seglen = check_index_tensor("seglen", seglen, value.device, func)
    total = int(seglen.sum()) if seglen.numel() else 0
    if seglen.numel() and int(seglen.min()) < 0:
        raise DGLError(f"{func}: seglen must be non-negative, got min {int(seglen.min())}")
    if total != value.shape[0]:
        raise DGLError(f"{func}: seglen sums to {total} but value has {value.shape[0]} rows; "
                       "expected sum(seglen) == value.shape[0]")
    N = seglen.numel()
    dst = torch.repeat_interleave(torch.arange(N, dtype=torch.int64, device=value.device), seglen,
                                  output_size=total)
    src = torch.zeros(total, dtype=torch.int64, device=value.device)
    return Index.from_coo(src, dst, 1, N)


def segment_reduce(seglen, value, reducer="sum"):
    r"""Reduce consecutive segments of rows.

    .. math::

        y_i = \bigoplus_{k = s_i}^{s_i + \mathrm{seglen}_i - 1} x_k, \qquad s_i = \sum_{j < i} \mathrm{seglen}_j

    Sums and means accumulate in float32 for half inputs (float64 for float64);
    empty segments give 0 for every reducer. Differentiable (``max``/``min`` send
    the gradient to the winning row).

    Parameters
    ----------
    seglen : torch.Tensor
        ``(N,)`` non-negative integer segment lengths; moved to ``value``'s device.
    value : torch.Tensor
        ``(sum(seglen), *F)`` float values.
    reducer : str, default 'sum'
        ``'sum'``, ``'mean'``, ``'max'`` or ``'min'``.

    Returns
    -------
    torch.Tensor
        ``(N, *F)`` in ``value.dtype``.

    Raises
    ------
    DGLError
        ``sum(seglen)`` differs from the number of rows, negative lengths, unknown reducer.
    DGLTypeError
        ``value`` not floating point, ``seglen`` not integer.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.ops import segment_reduce
    >>> x = torch.tensor([[1.], [2.], [3.], [4.]])
    >>> segment_reduce(torch.tensor([1, 0, 3]), x, 'sum')
    tensor([[1.],
            [0.],
            [9.]])
    >>> segment_reduce(torch.tensor([1, 0, 3]), x, 'max')
    tensor([[1.],
            [0.],
            [4.]])
    """
    check_choice("reducer", reducer, REDUCE_OPS, "segment_reduce")
    index = _segment_index(seglen, value, "segment_reduce")
    return gspmm(index, "copy_rhs", reducer, None, value)


def segment_softmax(seglen, value):
    r"""Softmax over consecutive segments of rows (per feature position).

    .. math::

        y_k = \frac{\exp(x_k - m_i)}{\sum_{j \in \mathrm{seg}(i)} \exp(x_j - m_i)}, \quad k \in \mathrm{seg}(i)

    Computed in float32 for half inputs (float64 for float64), rounded once.

    Parameters
    ----------
    seglen : torch.Tensor
        ``(N,)`` non-negative integer segment lengths.
    value : torch.Tensor
        ``(sum(seglen), *F)`` float values.

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``value``.

    Raises
    ------
    DGLError
        ``sum(seglen)`` differs from the number of rows, or negative lengths.
    DGLTypeError
        ``value`` not floating point, ``seglen`` not integer.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.ops import segment_softmax
    >>> segment_softmax(torch.tensor([2, 1]), torch.tensor([0., 0., 3.]))
    tensor([0.5000, 0.5000, 1.0000])
    """
    index = _segment_index(seglen, value, "segment_softmax")
    return edge_softmax(index, value)
