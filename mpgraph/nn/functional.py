"""Functional graph operators used by the nn layers (DGL's ``dgl.nn.functional``)."""

from .. import ops
from ..base import ALL

__all__ = ["edge_softmax"]


def edge_softmax(graph, logits, eids=ALL, norm_by="dst"):
    r"""Softmax of edge logits over the in-edges of each destination node (or out-edges of each source).

    .. math::

        a_{ij} = \frac{\exp(z_{ij})}{\sum_{k \in \mathcal{N}(j)} \exp(z_{kj})}

    where :math:`z_{ij}` is the logit of edge :math:`i \to j` and
    :math:`\mathcal{N}(j)` the in-neighbours of :math:`j` (``norm_by='dst'``).
    Every feature position is normalised separately, so ``(E, H, 1)`` attention
    logits give one softmax per head. The maximum and the denominator are
    computed in float32 for float16/bfloat16 logits (float64 for float64) and
    the result is rounded once; it has the dtype of ``logits`` (the autocast
    dtype under :class:`torch.autocast`). Differentiable.

    This is :func:`mpgraph.ops.edge_softmax`, under DGL's ``dgl.nn.functional`` name.

    Parameters
    ----------
    graph : Graph
        The graph (``E`` edges).
    logits : torch.Tensor
        ``(E, *F)`` logits in edge-ID order (``(len(eids), *F)`` when ``eids`` is given).
    eids : torch.Tensor or ALL, default ALL
        Restrict the softmax to these edges.
    norm_by : str, default 'dst'
        ``'dst'`` or ``'src'``.

    Returns
    -------
    torch.Tensor
        Same shape as ``logits``.

    Raises
    ------
    DGLError
        Wrong number of rows, unknown ``norm_by``, ``eids`` out of range.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn.functional import edge_softmax
    >>> g = dgl.graph(([0, 1, 2], [2, 2, 0]))
    >>> edge_softmax(g, torch.zeros(3, 1)).squeeze(1)
    tensor([0.5000, 0.5000, 1.0000])
    >>> edge_softmax(g, torch.zeros(3, 2, 1, dtype=torch.bfloat16)).dtype
    torch.bfloat16
    """
    return ops.edge_softmax(graph, logits, eids=eids, norm_by=norm_by)
