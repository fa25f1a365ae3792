"""Approximate personalised propagation of neural predictions (APPNP)."""

import torch
from torch import nn

from ..utils import Dropout
from ..utils import (as_dtype, check_edge_weight, check_node_feat, compute_dtype, degree_norm, norm_dtype,
                     propagate_sym)
from .graphconv import EdgeWeightNorm

__all__ = ["APPNPConv"]


class APPNPConv(nn.Module):
    r"""APPNP propagation from `Predict then Propagate: Graph Neural Networks meet Personalized PageRank
    <https://arxiv.org/pdf/1810.05997.pdf>`__.

    .. math::

        H^{0} = X, \qquad
        H^{l+1} = (1-\alpha)\left(\tilde{D}_{in}^{-1/2} \tilde{A} \tilde{D}_{out}^{-1/2} H^{l}\right) + \alpha H^{0}

    for :math:`K` steps, degrees clamped to at least 1. With ``edge_weight`` the
    normalised weighted adjacency (:class:`EdgeWeightNorm`, ``'both'``) replaces
    the normalised adjacency. ``edge_drop`` drops edges (scaling the kept ones)
    in training. The mixing step is one ``lerp`` (computed in float32 for half
    features, one rounding).

    Parameters
    ----------
    k : int
        Number of iterations :math:`K`.
    alpha : float
        Teleport probability :math:`\alpha`.
    edge_drop : float, default 0.
        Dropout rate on the edges.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import APPNPConv
    >>> g = dgl.graph(([0, 1, 2, 3, 2, 5], [1, 2, 3, 4, 0, 3]))
    >>> APPNPConv(k=3, alpha=0.5)(g, torch.ones(6, 10)).shape
    torch.Size([6, 10])
    """

    def __init__(self, k, alpha, edge_drop=0.0):
        super().__init__()
        self._k = k
        self._alpha = alpha
        self.edge_drop = Dropout(edge_drop)

    def forward(self, graph, feat, edge_weight=None):
        r"""Propagate ``feat: (N, *)``; returns the same shape.

        Raises
        ------
        DGLError
            Wrong row count; ``edge_weight`` not one positive scalar per edge.
        """
        check_node_feat("APPNPConv", "feat", feat, None, graph.num_src_nodes(), "source nodes")
        dtype = compute_dtype(feat)
        acc = norm_dtype(feat)
        if edge_weight is None:
            src_norm = degree_norm(graph, "out", -0.5, acc)
            dst_norm = degree_norm(graph, "in", -0.5, acc)
        else:
            edge_weight = EdgeWeightNorm("both")(graph, check_edge_weight("APPNPConv", graph, edge_weight))
            src_norm = dst_norm = None
        dropping = self.training and self.edge_drop.p > 0
        feat_0 = as_dtype(feat[: graph.num_dst_nodes()], dtype)
        for _ in range(self._k):
            w = edge_weight
            if dropping:
                ones = torch.ones(graph.num_edges(), dtype=acc, device=feat.device)
                w = self.edge_drop(ones if edge_weight is None else edge_weight)
            h = propagate_sym(graph, feat, src_norm, dst_norm, w)
            feat = torch.lerp(feat_0, as_dtype(h, dtype), 1.0 - self._alpha)
        return feat

    def extra_repr(self):
        return f"k={self._k}, alpha={self._alpha}"
