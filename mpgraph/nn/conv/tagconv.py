"""Topology adaptive graph convolution (TAGCN)."""

import torch
from torch import nn

from ..utils import (as_dtype, check_edge_weight, check_node_feat, compute_dtype, degree_norm, norm_dtype, project,
                     propagate_sym)
from .graphconv import EdgeWeightNorm

__all__ = ["TAGConv"]


class TAGConv(nn.Module):
    r"""Topology adaptive graph convolution from `Topology Adaptive Graph Convolutional Networks
    <https://arxiv.org/pdf/1710.10370.pdf>`__.

    .. math::

        H^{K} = \sum_{k=0}^{K} \left(D^{-1/2} A D^{-1/2}\right)^{k} X \Theta_{k}

    computed as one linear layer on the concatenation
    :math:`[X, \hat{A}X, \ldots, \hat{A}^K X]` (width ``in_feats * (k + 1)``), with
    :math:`D` the in-degrees clamped to at least 1 (both sides, as in DGL).
    With ``edge_weight`` the normalised weighted adjacency
    (:class:`EdgeWeightNorm`, ``'both'``) replaces :math:`\hat{A}`.

    Parameters
    ----------
    in_feats : int
        Input feature size.
    out_feats : int
        Output feature size.
    k : int, default 2
        Number of hops :math:`K`.
    bias : bool, default True
        Bias in the linear layer.
    activation : callable, optional
        Applied to the output.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import TAGConv
    >>> g = dgl.graph(([0, 1, 2, 3, 2, 5], [1, 2, 3, 4, 0, 3]))
    >>> TAGConv(10, 2, k=2)(g, torch.ones(6, 10)).shape
    torch.Size([6, 2])
    """

    def __init__(self, in_feats, out_feats, k=2, bias=True, activation=None):
        super().__init__()
        self._in_feats = in_feats
        self._out_feats = out_feats
        self._k = k
        self._activation = activation
        self.lin = nn.Linear(in_feats * (self._k + 1), out_feats, bias=bias)
        self.reset_parameters()

    def reset_parameters(self):
        """Reinitialise: Xavier-normal (ReLU gain) weight, zero bias."""
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_normal_(self.lin.weight, gain=gain)
        if self.lin.bias is not None:
            nn.init.zeros_(self.lin.bias)

    def forward(self, graph, feat, edge_weight=None):
        r"""Compute TAGCN: ``(N, in_feats)`` -> ``(N, out_feats)``.

        Raises
        ------
        DGLError
            Wrong feature width or row count; ``edge_weight`` not one positive scalar per edge.
        """
        check_node_feat("TAGConv", "feat", feat, self._in_feats, graph.num_src_nodes(), "source nodes")
        dtype = compute_dtype(feat)
        if edge_weight is not None:
            edge_weight = EdgeWeightNorm("both")(graph, check_edge_weight("TAGConv", graph, edge_weight))
            norm = None
        else:
            norm = degree_norm(graph, "in", -0.5, norm_dtype(feat))
        fstack = [feat]
        for _ in range(self._k):
            fstack.append(propagate_sym(graph, fstack[-1], norm, norm, edge_weight))
        rst = project(self.lin, torch.cat([as_dtype(f, fstack[-1].dtype) for f in fstack], dim=-1))
        if self._activation is not None:
            rst = self._activation(rst)
        return as_dtype(rst, dtype)

    def extra_repr(self):
        return f"in={self._in_feats}, out={self._out_feats}, k={self._k}"
