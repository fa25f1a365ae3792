"""Simplifying graph convolution (SGC)."""

from torch import nn

from ..utils import (as_dtype, check_edge_weight, check_node_feat, check_zero_in_degree, compute_dtype, degree_norm,
                     norm_dtype, project, propagate_sym)
from .graphconv import EdgeWeightNorm

__all__ = ["SGConv"]


class SGConv(nn.Module):
    r"""SGC layer from `Simplifying Graph Convolutional Networks <https://arxiv.org/pdf/1902.07153.pdf>`__.

    .. math::

        H^{K} = \left(\tilde{D}^{-1/2} \tilde{A} \tilde{D}^{-1/2}\right)^K X \Theta

    where :math:`\tilde{A}` is the adjacency matrix (add self-loops to the graph
    for :math:`A + I`) and :math:`\tilde{D}` the in-degrees clamped to at least
    1, used on both sides as in DGL. With ``edge_weight`` the propagation matrix
    is the weighted adjacency normalised by :class:`EdgeWeightNorm` (``'both'``).
    Normalisers are float32 for half features; each hop rounds once per scaling.

    Parameters
    ----------
    in_feats : int
        Input feature size.
    out_feats : int
        Output feature size.
    k : int, default 1
        Number of hops :math:`K`.
    cached : bool, default False
        Cache :math:`(\tilde{D}^{-1/2}\tilde{A}\tilde{D}^{-1/2})^K X` after the first call
        (transductive use: graph and features must not change afterwards).
    bias : bool, default True
        Bias in the linear layer.
    norm : callable, optional
        Applied to the propagated features before the linear layer.
    allow_zero_in_degree : bool, default False
        Skip the 0-in-degree check.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import SGConv
    >>> g = dgl.graph(([0, 1, 2, 3, 2, 5] + list(range(6)), [1, 2, 3, 4, 0, 3] + list(range(6))))
    >>> SGConv(10, 2, k=2)(g, torch.ones(6, 10)).shape
    torch.Size([6, 2])
    """

    def __init__(self, in_feats, out_feats, k=1, cached=False, bias=True, norm=None, allow_zero_in_degree=False):
        super().__init__()
        self.fc = nn.Linear(in_feats, out_feats, bias=bias)
        self._in_feats = in_feats
        self._cached = cached
        self._cached_h = None
        self._k = k
        self.norm = norm
        self._allow_zero_in_degree = allow_zero_in_degree
        self.reset_parameters()

    def reset_parameters(self):
        """Reinitialise: Xavier-uniform weight, zero bias."""
        nn.init.xavier_uniform_(self.fc.weight)
        if self.fc.bias is not None:
            nn.init.zeros_(self.fc.bias)

    def set_allow_zero_in_degree(self, set_value):
        """Set the ``allow_zero_in_degree`` flag."""
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat, edge_weight=None):
        r"""Compute SGC: ``(N, in_feats)`` -> ``(N, out_feats)``.

        Raises
        ------
        DGLError
            0-in-degree nodes (unless allowed); wrong feature width or row count;
            ``edge_weight`` not one positive scalar per edge.
        """
        check_zero_in_degree(graph, self._allow_zero_in_degree)
        if self._cached_h is not None:
            return project(self.fc, self._cached_h)
        check_node_feat("SGConv", "feat", feat, self._in_feats, graph.num_src_nodes(), "source nodes")
        dtype = compute_dtype(feat)
        if edge_weight is not None:
            edge_weight = EdgeWeightNorm("both")(graph, check_edge_weight("SGConv", graph, edge_weight))
            norm = None
        else:
            norm = degree_norm(graph, "in", -0.5, norm_dtype(feat))
        for _ in range(self._k):
            feat = propagate_sym(graph, feat, norm, norm, edge_weight)
        if self.norm is not None:
            feat = self.norm(feat)
        if self._cached:
            self._cached_h = feat
        return as_dtype(project(self.fc, feat), dtype)

    def extra_repr(self):
        return f"k={self._k}, cached={self._cached}"
