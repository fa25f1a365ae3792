"""GCNII: graph convolution with initial residual and identity mapping."""

import math

import torch
from torch import nn

from ...ops import dense
from ..utils import (as_dtype, check_edge_weight, check_node_feat, check_zero_in_degree, compute_dtype, degree_norm,
                     norm_dtype, propagate_sym)
from .graphconv import EdgeWeightNorm

__all__ = ["GCN2Conv"]


class GCN2Conv(nn.Module):
    r"""GCNII layer from `Simple and Deep Graph Convolutional Networks <https://arxiv.org/abs/2007.02133>`__.

    .. math::

        \mathbf{h}^{(l+1)} = \left( (1 - \alpha)(\mathbf{D}^{-1/2} \mathbf{\hat{A}} \mathbf{D}^{-1/2})
        \mathbf{h}^{(l)} + \alpha {\mathbf{h}^{(0)}} \right)
        \left( (1 - \beta_l) \mathbf{I} + \beta_l \mathbf{W} \right)

    with :math:`\beta_l = \log(\lambda / l + 1)` and :math:`D` the in-degrees
    clamped to at least 1. With ``project_initial_features=False`` the initial
    features get their own weight:
    :math:`(1-\beta_l)(P + Q) + \beta_l (P W_1 + Q W_2)` for
    :math:`P = (1-\alpha)\hat{A} h^{(l)}`, :math:`Q = \alpha h^{(0)}`.
    With ``edge_weight`` the normalised weighted adjacency (:class:`EdgeWeightNorm`,
    ``'both'``) replaces :math:`D^{-1/2}\hat{A}D^{-1/2}`.

    Parameters
    ----------
    in_feats : int
        Input (and output) feature size.
    layer : int
        Index :math:`l` of this layer (from 1), used in :math:`\beta_l`.
    alpha : float, default 0.1
        Weight of the initial features.
    lambda_ : float, default 1
        :math:`\lambda` in :math:`\beta_l`.
    project_initial_features : bool, default True
        Share the weight between the propagated and the initial features.
    allow_zero_in_degree : bool, default False
        Skip the 0-in-degree check.
    bias : bool, default True
        Learnable bias.
    activation : callable, optional
        Applied to the output.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import GCN2Conv
    >>> g = dgl.graph(([0, 1, 2, 3, 2, 5] + list(range(6)), [1, 2, 3, 4, 0, 3] + list(range(6))))
    >>> feat = torch.ones(6, 3)
    >>> GCN2Conv(3, layer=1, alpha=0.5)(g, feat, feat).shape
    torch.Size([6, 3])
    """

    def __init__(self, in_feats, layer, alpha=0.1, lambda_=1, project_initial_features=True,
                 allow_zero_in_degree=False, bias=True, activation=None):
        super().__init__()
        self._in_feats = in_feats
        self._project_initial_features = project_initial_features
        self.alpha = alpha
        self.beta = math.log(lambda_ / layer + 1)
        self._bias = bias
        self._activation = activation
        self._allow_zero_in_degree = allow_zero_in_degree
        self.weight1 = nn.Parameter(torch.empty(in_feats, in_feats))
        if project_initial_features:
            self.register_parameter("weight2", None)
        else:
            self.weight2 = nn.Parameter(torch.empty(in_feats, in_feats))
        if bias:
            self.bias = nn.Parameter(torch.empty(in_feats))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Reinitialise: standard-normal weights (as DGL), zero bias."""
        nn.init.normal_(self.weight1)
        if not self._project_initial_features:
            nn.init.normal_(self.weight2)
        if self._bias:
            nn.init.zeros_(self.bias)

    def set_allow_zero_in_degree(self, set_value):
        """Set the ``allow_zero_in_degree`` flag."""
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat, feat_0, edge_weight=None):
        r"""Compute GCNII.

        Parameters
        ----------
        graph : Graph
            The graph.
        feat : torch.Tensor
            ``(N, in_feats)`` current features.
        feat_0 : torch.Tensor
            ``(N, in_feats)`` initial features (its first ``N_dst`` rows are used).
        edge_weight : torch.Tensor, optional
            ``(E,)`` positive weights.

        Returns
        -------
        torch.Tensor
            ``(N_dst, in_feats)``.

        Raises
        ------
        DGLError
            0-in-degree nodes (unless allowed); wrong widths or row counts.
        """
        check_zero_in_degree(graph, self._allow_zero_in_degree)
        check_node_feat("GCN2Conv", "feat", feat, self._in_feats, graph.num_src_nodes(), "source nodes")
        check_node_feat("GCN2Conv", "feat_0", feat_0, self._in_feats)
        dtype = compute_dtype(feat)
        if edge_weight is not None:
            edge_weight = EdgeWeightNorm("both")(graph, check_edge_weight("GCN2Conv", graph, edge_weight))
            norm = None
        else:
            norm = degree_norm(graph, "in", -0.5, norm_dtype(feat))
        h = propagate_sym(graph, feat, norm, norm, edge_weight)
        h = as_dtype(h, dtype)
        feat_0 = as_dtype(feat_0[: h.shape[0]], dtype)
        if self._project_initial_features:
            feat_sum = torch.lerp(feat_0, h, 1 - self.alpha)             # (1 - a) h + a h0
            proj = dense.matmul(feat_sum, self.weight1)
        else:
            p, q = h * (1 - self.alpha), feat_0 * self.alpha
            feat_sum = p + q
            proj = dense.matmul(p, self.weight1) + dense.matmul(q, self.weight2)
        rst = torch.lerp(feat_sum, as_dtype(proj, feat_sum.dtype), self.beta)   # (1 - b) s + b sW
        if self.bias is not None:
            rst = rst + self.bias
        if self._activation is not None:
            rst = self._activation(rst)
        return as_dtype(rst, dtype)

    def extra_repr(self):
        return f"in={self._in_feats}, alpha={self.alpha}, beta={self.beta}"
