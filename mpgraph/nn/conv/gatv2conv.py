"""GATv2: graph attention with a dynamic attention function."""

from torch import nn

from ... import ops
from ...base import DGLError
from ..utils import Dropout
from ..utils import Identity, as_dtype, check_src_dst, check_zero_in_degree, compute_dtype, expand_as_pair, project

__all__ = ["GATv2Conv"]


class GATv2Conv(nn.Module):
    r"""GATv2 from `How Attentive are Graph Attention Networks? <https://arxiv.org/abs/2105.14491>`__.

    .. math::

        h_i^{(l+1)} = \sum_{j \in \mathcal{N}(i)} \alpha_{ij}^{(l)} W^{(l)}_{right} h_j^{(l)}

        \alpha_{ij}^{(l)} = \mathrm{softmax}_j(e_{ij}^{(l)}), \qquad
        e_{ij}^{(l)} = \vec{a}^{(l)T} \mathrm{LeakyReLU}\left(W^{(l)}_{left} h_i + W^{(l)}_{right} h_j\right)

    per head; :math:`W_{right}` (``fc_src``) projects the sources and
    :math:`W_{left}` (``fc_dst``) the destinations, one shared matrix when
    ``share_weights``. The per-edge sum :math:`W_{left} h_i + W_{right} h_j` is
    materialised as ``(E, H, D)``.

    Precision: as :class:`GATConv` (float32 softmax statistics, float32
    accumulation, output in the input's or the autocast dtype).

    Parameters
    ----------
    in_feats : int or pair of ints
        Input feature size (a ``(src, dst)`` pair for bipartite inputs).
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
        Add a residual connection (linear when widths differ).
    activation : callable, optional
        Applied to the output.
    allow_zero_in_degree : bool, default False
        Skip the 0-in-degree check.
    bias : bool, default True
        Biases in ``fc_src``, ``fc_dst`` and a linear ``res_fc``.
    share_weights : bool, default False
        One projection for sources and destinations (homogeneous inputs).

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import GATv2Conv
    >>> g = dgl.graph(([0, 1, 2, 3, 2, 5] + list(range(6)), [1, 2, 3, 4, 0, 3] + list(range(6))))
    >>> GATv2Conv(10, 2, num_heads=3)(g, torch.ones(6, 10)).shape
    torch.Size([6, 3, 2])
    """

    def __init__(self, in_feats, out_feats, num_heads, feat_drop=0.0, attn_drop=0.0, negative_slope=0.2,
                 residual=False, activation=None, allow_zero_in_degree=False, bias=True, share_weights=False):
        super().__init__()
        self._num_heads = num_heads
        self._in_src_feats, self._in_dst_feats = expand_as_pair(in_feats)
        self._out_feats = out_feats
        self._allow_zero_in_degree = allow_zero_in_degree
        self._separate_fc = isinstance(in_feats, tuple)
        self.fc_src = nn.Linear(self._in_src_feats, out_feats * num_heads, bias=bias)
        if self._separate_fc:
            self.fc_dst = nn.Linear(self._in_dst_feats, out_feats * num_heads, bias=bias)
        elif share_weights:
            self.fc_dst = self.fc_src
        else:
            self.fc_dst = nn.Linear(self._in_src_feats, out_feats * num_heads, bias=bias)
        self.attn = nn.Parameter(self.fc_src.weight.new_empty(1, num_heads, out_feats))
        self.feat_drop = Dropout(feat_drop)
        self.attn_drop = Dropout(attn_drop)
        self.leaky_relu = nn.LeakyReLU(negative_slope)
        if residual:
            if self._in_dst_feats != out_feats * num_heads:
                self.res_fc = nn.Linear(self._in_dst_feats, num_heads * out_feats, bias=bias)
            else:
                self.res_fc = Identity()
        else:
            self.register_buffer("res_fc", None)
        self.activation = activation
        self.share_weights = share_weights and not self._separate_fc
        self.bias = bias
        self.reset_parameters()

    def reset_parameters(self):
        """Reinitialise: Xavier-normal (ReLU gain) weights and attention vector, zero biases."""
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_normal_(self.fc_src.weight, gain=gain)
        if self.bias:
            nn.init.constant_(self.fc_src.bias, 0)
        if not self.share_weights:
            nn.init.xavier_normal_(self.fc_dst.weight, gain=gain)
            if self.bias:
                nn.init.constant_(self.fc_dst.bias, 0)
        nn.init.xavier_normal_(self.attn, gain=gain)
        if isinstance(self.res_fc, nn.Linear):
            nn.init.xavier_normal_(self.res_fc.weight, gain=gain)
            if self.bias:
                nn.init.constant_(self.res_fc.bias, 0)

    def set_allow_zero_in_degree(self, set_value):
        """Set the ``allow_zero_in_degree`` flag."""
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat, get_attention=False):
        """Compute the layer: ``(N_dst, H, D)`` (and the attention ``(E, H, 1)`` when ``get_attention``).

        Parameters
        ----------
        graph : Graph
            The graph, a uni-bipartite graph or a block.
        feat : torch.Tensor or pair of torch.Tensor
            ``(N, D_in)`` or a ``(feat_src, feat_dst)`` pair.
        get_attention : bool, default False
            Also return the attention.

        Raises
        ------
        DGLError
            0-in-degree nodes (unless allowed); wrong feature width or row count.
        """
        check_zero_in_degree(graph, self._allow_zero_in_degree)
        H, D = self._num_heads, self._out_feats
        if isinstance(feat, (tuple, list)):
            feat_src_in, feat_dst_in = expand_as_pair(feat)
            check_src_dst("GATv2Conv", graph, feat_src_in, feat_dst_in, self._in_src_feats, self._in_dst_feats)
            h_src = self.feat_drop(feat_src_in)
            h_dst = self.feat_drop(feat_dst_in)
            feat_src = project(self.fc_src, h_src).view(-1, H, D)
            feat_dst = project(self.fc_dst, h_dst).view(-1, H, D)
        else:
            if self._separate_fc:
                raise DGLError(f"GATv2Conv: built with in_feats=({self._in_src_feats}, {self._in_dst_feats}) it "
                               "expects a (feat_src, feat_dst) pair, got a single tensor")
            check_src_dst("GATv2Conv", graph, feat, feat, self._in_src_feats, None)
            h_src = h_dst = self.feat_drop(feat)
            feat_src = project(self.fc_src, h_src).view(-1, H, D)
            feat_dst = feat_src if self.share_weights else project(self.fc_dst, h_src).view(-1, H, D)
            if graph.is_block:
                feat_dst = feat_dst[: graph.num_dst_nodes()]
                h_dst = h_dst[: graph.num_dst_nodes()]
        dtype = compute_dtype(feat_src)
        e = self.leaky_relu(ops.u_add_v(graph, feat_src, feat_dst))                # (E, H, D)
        e = (e * as_dtype(self.attn, e.dtype)).sum(dim=-1, keepdim=True)         # (E, H, 1)
        a = self.attn_drop(ops.edge_softmax(graph, e))
        rst = as_dtype(ops.u_mul_e_sum(graph, feat_src, a), dtype)               # (N_dst, H, D)
        if self.res_fc is not None:
            rst = rst + project(self.res_fc, h_dst).view(h_dst.shape[0], -1, D)
        if self.activation is not None:
            rst = self.activation(rst)
        rst = as_dtype(rst, dtype)
        if get_attention:
            return rst, a
        return rst
