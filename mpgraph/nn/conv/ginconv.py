"""Graph Isomorphism Network (GIN)."""

import torch
from torch import nn

from ..utils import (aggregate, as_dtype, check_choice, check_edge_weight, check_same_width, check_src_dst,
                     compute_dtype, expand_as_pair)

__all__ = ["GINConv"]


class GINConv(nn.Module):
    r"""Graph Isomorphism Network layer from `How Powerful are Graph Neural Networks?
    <https://arxiv.org/pdf/1810.00826.pdf>`__.

    .. math::

        h_i^{(l+1)} = f_\Theta\left((1 + \epsilon) h_i^{l} +
        \mathrm{aggregate}\left(\left\{e_{ji} h_j^{l}, j \in \mathcal{N}(i)\right\}\right)\right)

    with :math:`e_{ji}` the optional edge weight (1 without one) and
    :math:`f_\Theta` the ``apply_func``. Nodes without in-edges aggregate to 0.

    Parameters
    ----------
    apply_func : callable, optional
        :math:`f_\Theta`, e.g. an MLP. Default: None (identity).
    aggregator_type : str, default 'sum'
        ``'sum'``, ``'max'`` or ``'mean'``.
    init_eps : float, default 0
        Initial :math:`\epsilon`.
    learn_eps : bool, default False
        Make :math:`\epsilon` a learnable parameter (a buffer otherwise).
    activation : callable, optional
        Applied after ``apply_func``.

    Raises
    ------
    DGLError
        Unknown ``aggregator_type`` (DGL raises ``KeyError`` here).

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import GINConv
    >>> g = dgl.graph(([0, 1, 2, 3, 2, 5], [1, 2, 3, 4, 0, 3]))
    >>> GINConv(torch.nn.Linear(10, 2), 'max')(g, torch.ones(6, 10)).shape
    torch.Size([6, 2])
    """

    def __init__(self, apply_func=None, aggregator_type="sum", init_eps=0, learn_eps=False, activation=None):
        super().__init__()
        check_choice("GINConv", "aggregator_type", aggregator_type, ("sum", "max", "mean"))
        self.apply_func = apply_func
        self._aggregator_type = aggregator_type
        self.activation = activation
        self._init_eps = float(init_eps)
        if learn_eps:
            self.eps = nn.Parameter(torch.tensor([self._init_eps]))
        else:
            self.register_buffer("eps", torch.tensor([self._init_eps]))

    def reset_parameters(self):
        """Reset :math:`\\epsilon` to ``init_eps`` (``apply_func`` belongs to the caller and is not reset)."""
        with torch.no_grad():
            self.eps.fill_(self._init_eps)

    def forward(self, graph, feat, edge_weight=None):
        r"""Compute GIN.

        Parameters
        ----------
        graph : Graph
            The graph, a uni-bipartite graph or a block.
        feat : torch.Tensor or pair of torch.Tensor
            ``(N, D)`` or a ``(feat_src, feat_dst)`` pair (same width).
        edge_weight : torch.Tensor, optional
            ``(E,)`` weights multiplying the messages.

        Returns
        -------
        torch.Tensor
            ``(N_dst, D_out)``, ``D_out`` given by ``apply_func`` (``D`` without it).
        """
        feat_src, feat_dst = expand_as_pair(feat, graph)
        check_src_dst("GINConv", graph, feat_src, feat_dst, None, None)
        check_same_width("GINConv", feat_src, feat_dst)
        if edge_weight is not None:
            edge_weight = check_edge_weight("GINConv", graph, edge_weight)
        dtype = compute_dtype(feat_src)
        neigh = aggregate(graph, feat_src, self._aggregator_type, edge_weight)
        rst = (1 + self.eps) * feat_dst + neigh
        if feat_dst.dtype == neigh.dtype and rst.dtype != neigh.dtype:
            rst = rst.to(neigh.dtype)     # a float32 eps buffer must not promote half features
        if self.apply_func is not None:
            rst = self.apply_func(rst)
        if self.activation is not None:
            rst = self.activation(rst)
        return as_dtype(rst, dtype)

    def extra_repr(self):
        return f"aggregator_type={self._aggregator_type}"
