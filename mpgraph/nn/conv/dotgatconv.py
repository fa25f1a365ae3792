"""Dot-product graph attention."""

import math

from torch import nn

from ... import ops
from ...base import DGLError
from ..utils import as_dtype, check_src_dst, check_zero_in_degree, compute_dtype, expand_as_pair, project

__all__ = ["DotGatConv"]


class DotGatConv(nn.Module):
    r"""Graph attention with scaled dot-product scores (`Graph Attention Network
    <https://arxiv.org/abs/1710.10903>`__ with a dot-product attention function).

    .. math::

        h_i^{(l+1)} = \sum_{j \in \mathcal{N}(i)} \alpha_{i, j} W h_j^{(l)}, \qquad
        \alpha_{i, j} = \mathrm{softmax}_j\left(\frac{(W h_i)^T (W h_j)}{\sqrt{D}}\right)

    per head, where :math:`D` is ``out_feats``. The dot products accumulate in
    float32 for half inputs; softmax statistics are float32.

    Parameters
    ----------
    in_feats : int or pair of ints
        Input feature size (a ``(src, dst)`` pair gives ``fc_src``/``fc_dst``).
    out_feats : int
        Output feature size :math:`D` per head.
    num_heads : int
        Number of heads :math:`H`.
    allow_zero_in_degree : bool, default False
        Skip the 0-in-degree check.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import DotGatConv
    >>> g = dgl.graph(([0, 1, 2, 3, 2, 5] + list(range(6)), [1, 2, 3, 4, 0, 3] + list(range(6))))
    >>> DotGatConv(10, 2, num_heads=3)(g, torch.ones(6, 10)).shape
    torch.Size([6, 3, 2])
    """

    def __init__(self, in_feats, out_feats, num_heads, allow_zero_in_degree=False):
        super().__init__()
        self._in_src_feats, self._in_dst_feats = expand_as_pair(in_feats)
        self._out_feats = out_feats
        self._allow_zero_in_degree = allow_zero_in_degree
        self._num_heads = num_heads
        self._separate_fc = isinstance(in_feats, tuple)
        if self._separate_fc:
            self.fc_src = nn.Linear(self._in_src_feats, self._out_feats * num_heads, bias=False)
            self.fc_dst = nn.Linear(self._in_dst_feats, self._out_feats * num_heads, bias=False)
        else:
            self.fc = nn.Linear(self._in_src_feats, self._out_feats * num_heads, bias=False)

    def reset_parameters(self):
        """Reinitialise the projections (PyTorch's default ``nn.Linear`` initialisation)."""
        if self._separate_fc:
            self.fc_src.reset_parameters()
            self.fc_dst.reset_parameters()
        else:
            self.fc.reset_parameters()

    def set_allow_zero_in_degree(self, set_value):
        """Set the ``allow_zero_in_degree`` flag."""
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat, get_attention=False):
        """Compute the layer: ``(N_dst, H, D)`` (and the attention ``(E, H, 1)`` when ``get_attention``).

        Raises
        ------
        DGLError
            0-in-degree nodes (unless allowed); wrong feature width or row count.
        """
        check_zero_in_degree(graph, self._allow_zero_in_degree)
        H, D = self._num_heads, self._out_feats
        if isinstance(feat, (tuple, list)):
            h_src, h_dst = expand_as_pair(feat)
            check_src_dst("DotGatConv", graph, h_src, h_dst, self._in_src_feats, self._in_dst_feats)
            fc_src, fc_dst = (self.fc_src, self.fc_dst) if self._separate_fc else (self.fc, self.fc)
            feat_src = project(fc_src, h_src).view(-1, H, D)
            feat_dst = project(fc_dst, h_dst).view(-1, H, D)
        else:
            if self._separate_fc:
                raise DGLError(f"DotGatConv: built with in_feats=({self._in_src_feats}, {self._in_dst_feats}) it "
                               "expects a (feat_src, feat_dst) pair, got a single tensor")
            check_src_dst("DotGatConv", graph, feat, feat, self._in_src_feats, None)
            feat_src = feat_dst = project(self.fc, feat).view(-1, H, D)
            if graph.is_block:
                feat_dst = feat_src[: graph.num_dst_nodes()]
        dtype = compute_dtype(feat_src)
        score = ops.u_dot_v(graph, feat_src, feat_dst)                          # (E, H, 1)
        a = ops.edge_softmax(graph, score / math.sqrt(D))
        rst = as_dtype(ops.u_mul_e_sum(graph, feat_src, a), dtype)              # (N_dst, H, D)
        if get_attention:
            return rst, a
        return rst
