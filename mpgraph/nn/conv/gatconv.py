"""Graph attention (GAT)."""

import torch
from torch import nn

from ... import ops
from ...base import DGLError
from ..utils import Dropout
from ..utils import (Identity, as_dtype, check_edge_weight, check_src_dst, check_zero_in_degree, compute_dtype,
                     expand_as_pair, project)

__all__ = ["GATConv"]


def _weighted_attention(a, edge_weight):
    """``a: (E, *, H, 1)`` times a per-edge scalar ``(E,)``, rounded once to ``a.dtype``."""
    w = edge_weight.reshape((-1,) + (1,) * (a.dim() - 1))
    return as_dtype(a * w, a.dtype)


class GATConv(nn.Module):
    r"""Graph attention layer from `Graph Attention Network <https://arxiv.org/abs/1710.10903>`__.

    .. math::

        h_i^{(l+1)} = \sum_{j \in \mathcal{N}(i)} \alpha_{ij}^{(l)} W^{(l)} h_j^{(l)}

        \alpha_{ij}^{(l)} = \mathrm{softmax}_j(e_{ij}^{(l)}), \qquad
        e_{ij}^{(l)} = \mathrm{LeakyReLU}\left(\vec{a}_l^T W h_j + \vec{a}_r^T W h_i\right)

    with one attention head per slice of :math:`H` (``num_heads``); the softmax runs over
    the in-edges of each destination :math:`i`. An optional ``edge_weight``
    multiplies :math:`\alpha_{ij}` after the softmax. A residual connection adds
    ``res_fc(h_i)`` (a linear map when widths differ, identity otherwise), then the
    bias, then the activation.

    Precision: the softmax maximum and denominator are float32 for float16/bfloat16
    (float64 for float64) and the attention is rounded once; the weighted sum
    accumulates in float32. The output has the input's dtype, or the autocast dtype
    under :class:`torch.autocast`.

    Parameters
    ----------
    in_feats : int or pair of ints
        Input feature size; a pair ``(src, dst)`` gives separate projections
        ``fc_src``/``fc_dst`` for bipartite inputs.
    out_feats : int
        Output feature size :math:`D` per head.
    num_heads : int
        Number of heads :math:`H`.
    feat_drop : float, default 0.
        Dropout on the input features.
    attn_drop : float, default 0.
        Dropout on the attention weights.
    negative_slope : float, default 0.2
        LeakyReLU slope.
    residual : bool, default False
        Add a residual connection.
    activation : callable, optional
        Applied to the output. Default: None.
    allow_zero_in_degree : bool, default False
        Skip the check that every destination node has an in-edge.
    bias : bool, default True
        Learnable bias ``(H * D,)`` (carried by ``res_fc`` when the residual is linear).
    msg_drop : float, default 0.
        mpgraph extension (not in DGL): dropout on the projected source features
        :math:`W h_j` as they are weighted and summed, after the attention logits
        were computed from them. The GAT authors' reference code applies its input
        dropout here too; ``mpgraph train --model gat`` sets it to ``--dropout``.

    Notes
    -----
    Shapes: Input ``(N, *, D_in)``; output ``(N_dst, *, H, D)``; attention ``(E, *, H, 1)``.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import GATConv
    >>> g = dgl.graph(([0, 1, 2, 3, 2, 5] + list(range(6)), [1, 2, 3, 4, 0, 3] + list(range(6))))
    >>> conv = GATConv(10, 2, num_heads=3)
    >>> out, attn = conv(g, torch.ones(6, 10), get_attention=True)
    >>> out.shape, attn.shape
    (torch.Size([6, 3, 2]), torch.Size([12, 3, 1]))
    >>> with torch.autocast('cpu', dtype=torch.bfloat16):
    ...     conv(g, torch.ones(6, 10)).dtype
    torch.bfloat16
    """

    def __init__(self, in_feats, out_feats, num_heads, feat_drop=0.0, attn_drop=0.0, negative_slope=0.2,
                 residual=False, activation=None, allow_zero_in_degree=False, bias=True, msg_drop=0.0):
        super().__init__()
        self._num_heads = num_heads
        self._in_src_feats, self._in_dst_feats = expand_as_pair(in_feats)
        self._out_feats = out_feats
        self._allow_zero_in_degree = allow_zero_in_degree
        self._separate_fc = isinstance(in_feats, tuple)
        if self._separate_fc:
            self.fc_src = nn.Linear(self._in_src_feats, out_feats * num_heads, bias=False)
            self.fc_dst = nn.Linear(self._in_dst_feats, out_feats * num_heads, bias=False)
        else:
            self.fc = nn.Linear(self._in_src_feats, out_feats * num_heads, bias=False)
        self.attn_l = nn.Parameter(torch.empty(1, num_heads, out_feats))
        self.attn_r = nn.Parameter(torch.empty(1, num_heads, out_feats))
        self.feat_drop = Dropout(feat_drop)
        self.attn_drop = Dropout(attn_drop)
        self.msg_drop = Dropout(msg_drop)
        self.leaky_relu = nn.LeakyReLU(negative_slope)
        self.has_linear_res = False
        self.has_explicit_bias = False
        if residual:
            if self._in_dst_feats != out_feats * num_heads:
                self.res_fc = nn.Linear(self._in_dst_feats, num_heads * out_feats, bias=bias)
                self.has_linear_res = True
            else:
                self.res_fc = Identity()
        else:
            self.register_buffer("res_fc", None)
        if bias and not self.has_linear_res:
            self.bias = nn.Parameter(torch.empty(num_heads * out_feats))
            self.has_explicit_bias = True
        else:
            self.register_buffer("bias", None)
        self.reset_parameters()
        self.activation = activation

    def reset_parameters(self):
        """Reinitialise: Xavier-normal (ReLU gain) projections and attention vectors, zero biases."""
        gain = nn.init.calculate_gain("relu")
        if self._separate_fc:
            nn.init.xavier_normal_(self.fc_src.weight, gain=gain)
            nn.init.xavier_normal_(self.fc_dst.weight, gain=gain)
        else:
            nn.init.xavier_normal_(self.fc.weight, gain=gain)
        nn.init.xavier_normal_(self.attn_l, gain=gain)
        nn.init.xavier_normal_(self.attn_r, gain=gain)
        if self.has_explicit_bias:
            nn.init.constant_(self.bias, 0)
        if isinstance(self.res_fc, nn.Linear):
            nn.init.xavier_normal_(self.res_fc.weight, gain=gain)
            if self.res_fc.bias is not None:
                nn.init.constant_(self.res_fc.bias, 0)

    def set_allow_zero_in_degree(self, set_value):
        """Set the ``allow_zero_in_degree`` flag."""
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat, edge_weight=None, get_attention=False):
        r"""Compute the attention layer.

        Parameters
        ----------
        graph : Graph
            The graph, a uni-bipartite graph or a block.
        feat : torch.Tensor or pair of torch.Tensor
            ``(N, *, D_in)`` or a ``(feat_src, feat_dst)`` pair.
        edge_weight : torch.Tensor, optional
            ``(E,)`` weights multiplying the attention after the softmax.
        get_attention : bool, default False
            Also return the attention ``(E, *, H, 1)``.

        Returns
        -------
        torch.Tensor or (torch.Tensor, torch.Tensor)
            ``(N_dst, *, H, D)``, and the attention when ``get_attention``.

        Raises
        ------
        DGLError
            0-in-degree nodes (unless allowed); wrong feature width or row count;
            ``edge_weight`` not one scalar per edge.
        """
        check_zero_in_degree(graph, self._allow_zero_in_degree)
        H, D = self._num_heads, self._out_feats
        if isinstance(feat, (tuple, list)):
            feat_src_in, feat_dst_in = expand_as_pair(feat)
            check_src_dst("GATConv", graph, feat_src_in, feat_dst_in, self._in_src_feats, self._in_dst_feats)
            h_src = self.feat_drop(feat_src_in)
            h_dst = self.feat_drop(feat_dst_in)
            fc_src, fc_dst = (self.fc_src, self.fc_dst) if self._separate_fc else (self.fc, self.fc)
            feat_src = project(fc_src, h_src).view(*h_src.shape[:-1], H, D)
            feat_dst = project(fc_dst, h_dst).view(*h_dst.shape[:-1], H, D)
        else:
            if self._separate_fc:
                raise DGLError(f"GATConv: built with in_feats=({self._in_src_feats}, {self._in_dst_feats}) it "
                               "expects a (feat_src, feat_dst) pair, got a single tensor")
            check_src_dst("GATConv", graph, feat, feat, self._in_src_feats, None)
            h_src = h_dst = self.feat_drop(feat)
            feat_src = feat_dst = project(self.fc, h_src).view(*h_src.shape[:-1], H, D)
            if graph.is_block:
                feat_dst = feat_src[: graph.num_dst_nodes()]
                h_dst = h_dst[: graph.num_dst_nodes()]
        if edge_weight is not None:
            edge_weight = check_edge_weight("GATConv", graph, edge_weight)
        dtype = compute_dtype(feat_src)
        # a^T [W h_j || W h_i] = a_l^T W h_j + a_r^T W h_i: two node-wise dots, added per edge
        el = (feat_src * self.attn_l).sum(dim=-1, keepdim=True)                # (N_src, *, H, 1)
        er = (feat_dst * self.attn_r).sum(dim=-1, keepdim=True)                # (N_dst, *, H, 1)
        e = self.leaky_relu(ops.u_add_v(graph, el, er))                        # (E, *, H, 1)
        a = self.attn_drop(ops.edge_softmax(graph, e))
        if edge_weight is not None:
            a = _weighted_attention(a, edge_weight)
        rst = as_dtype(ops.u_mul_e_sum(graph, self.msg_drop(feat_src), a), dtype)  # (N_dst, *, H, D)
        if self.res_fc is not None:
            rst = rst + project(self.res_fc, h_dst).view(*h_dst.shape[:-1], -1, D)
        if self.has_explicit_bias:
            rst = rst + self.bias.view(*((1,) * (rst.dim() - 2)), H, D)
        if self.activation is not None:
            rst = self.activation(rst)
        rst = as_dtype(rst, dtype)
        if get_attention:
            return rst, a
        return rst
