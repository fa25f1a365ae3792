"""GraphSAGE (gcn aggregator) on a dense adjacency matrix."""

import torch
from torch import nn

from ...ops import dense
from ..utils import Dropout
from ..utils import as_dtype, check_node_feat, compute_dtype, expand_as_pair, project, scale_rows
from .densegraphconv import check_adj

__all__ = ["DenseSAGEConv"]


class DenseSAGEConv(nn.Module):
    r"""GraphSAGE with the ``'gcn'`` aggregator (as :class:`SAGEConv`) on a dense adjacency matrix.

    .. math::

        h_i = \sigma\left(W \frac{\sum_j A_{ij} x_j + x_i}{\sum_j A_{ij} + 1} + b\right)

    ``adj`` has a row per destination and a column per source; the divisor is
    float32 (float64 for float64) for any feature dtype.

    Parameters
    ----------
    in_feats : int
        Input feature size.
    out_feats : int
        Output feature size.
    feat_drop : float, default 0.
        Dropout on the input features.
    bias : bool, default True
        Bias in the linear layer.
    norm : callable, optional
        Applied after the activation.
    activation : callable, optional
        Applied to the output.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.nn import DenseSAGEConv
    >>> adj = torch.tensor([[0., 1., 1.], [1., 0., 0.], [1., 1., 0.]])
    >>> DenseSAGEConv(4, 2)(adj, torch.ones(3, 4)).shape
    torch.Size([3, 2])
    """

    def __init__(self, in_feats, out_feats, feat_drop=0.0, bias=True, norm=None, activation=None):
        super().__init__()
        self._in_feats = in_feats
        self._out_feats = out_feats
        self._norm = norm
        self.feat_drop = Dropout(feat_drop)
        self.activation = activation
        self.fc = nn.Linear(in_feats, out_feats, bias=bias)
        self.reset_parameters()

    def reset_parameters(self):
        """Reinitialise: Xavier-uniform (ReLU gain) weight, zero bias."""
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_uniform_(self.fc.weight, gain=gain)
        if self.fc.bias is not None:
            nn.init.zeros_(self.fc.bias)

    def forward(self, adj, feat):
        """Compute: ``adj (N_dst, N_src)``, ``feat (N_src, in_feats)`` or a pair -> ``(N_dst, out_feats)``."""
        pair = isinstance(feat, (tuple, list))
        feat_src, feat_dst = expand_as_pair(feat)
        check_node_feat("DenseSAGEConv", "feat", feat_src, self._in_feats)
        check_adj("DenseSAGEConv", adj, feat_src.shape[0])
        N_dst = adj.shape[0]
        if pair:
            check_node_feat("DenseSAGEConv", "destination features", feat_dst, self._in_feats, N_dst,
                            "destination nodes")
        dtype = compute_dtype(feat_src)
        feat_src = self.feat_drop(feat_src)
        feat_dst = self.feat_drop(feat_dst) if pair else feat_src[:N_dst]
        acc = torch.float64 if feat_src.dtype == torch.float64 else torch.float32
        inv = 1.0 / (adj.to(acc).sum(dim=1) + 1)
        total = dense.matmul(adj.to(feat_src.dtype), feat_src)
        h_neigh = scale_rows(total + as_dtype(feat_dst, total.dtype), inv)
        rst = project(self.fc, h_neigh)
        if self.activation is not None:
            rst = self.activation(rst)
        if self._norm is not None:
            rst = self._norm(rst)
        return as_dtype(rst, dtype)
