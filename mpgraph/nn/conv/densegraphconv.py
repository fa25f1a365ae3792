"""Graph convolution on a dense adjacency matrix."""

import torch
from torch import nn

from ...base import DGLError
from ...ops import dense
from ..utils import as_dtype, check_choice, check_node_feat, compute_dtype, scale_rows

__all__ = ["DenseGraphConv"]


def check_adj(layer, adj, feat_rows):
    """Validate a dense adjacency ``(N_dst, N_src)`` against ``feat_rows`` source rows."""
    if not isinstance(adj, torch.Tensor) or adj.dim() != 2:
        raise DGLError(f"{layer}: expected a 2-D dense adjacency tensor (N_dst, N_src), got "
                       f"{type(adj).__name__} of shape {tuple(getattr(adj, 'shape', ()))}")
    if adj.shape[1] != feat_rows:
        raise DGLError(f"{layer}: expected adj with one column per source node ({feat_rows}), got shape "
                       f"{tuple(adj.shape)}; rows are destinations, columns sources")


class DenseGraphConv(nn.Module):
    r"""Graph convolution (as :class:`GraphConv`) on a dense adjacency matrix.

    .. math::

        H = \sigma\left(b + D_{dst}^{-1/2} A D_{src}^{-1/2} X W\right)

    where ``adj`` :math:`A` has a row per destination and a column per source,
    :math:`D_{src}` its column sums and :math:`D_{dst}` its row sums, clamped to
    at least 1. ``norm='right'`` uses :math:`D_{dst}^{-1} A X W`, ``'none'`` no
    normaliser. Degrees are float32 (float64 for float64) for any feature dtype.

    Parameters
    ----------
    in_feats : int
        Input feature size.
    out_feats : int
        Output feature size.
    norm : str, default 'both'
        ``'both'``, ``'right'`` or ``'none'``.
    bias : bool, default True
        Add a bias.
    activation : callable, optional
        Applied to the output.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.nn import DenseGraphConv
    >>> adj = torch.tensor([[0., 1., 1.], [1., 0., 0.], [1., 1., 0.]])
    >>> DenseGraphConv(4, 2)(adj, torch.ones(3, 4)).shape
    torch.Size([3, 2])
    """

    def __init__(self, in_feats, out_feats, norm="both", bias=True, activation=None):
        super().__init__()
        check_choice("DenseGraphConv", "norm", norm, ("none", "both", "right"))
        self._in_feats = in_feats
        self._out_feats = out_feats
        self._norm = norm
        self.weight = nn.Parameter(torch.empty(in_feats, out_feats))
        if bias:
            self.bias = nn.Parameter(torch.empty(out_feats))
        else:
            self.register_buffer("bias", None)
        self.reset_parameters()
        self._activation = activation

    def reset_parameters(self):
        """Reinitialise: Glorot-uniform weight, zero bias."""
        nn.init.xavier_uniform_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, adj, feat):
        """Compute the convolution: ``adj (N_dst, N_src)``, ``feat (N_src, in_feats)`` -> ``(N_dst, out_feats)``."""
        check_node_feat("DenseGraphConv", "feat", feat, self._in_feats)
        check_adj("DenseGraphConv", adj, feat.shape[0])
        dtype = compute_dtype(feat)
        acc = torch.float64 if feat.dtype == torch.float64 else torch.float32
        adj_acc = adj.to(acc)
        src_degrees = adj_acc.sum(dim=0).clamp(min=1)
        dst_degrees = adj_acc.sum(dim=1).clamp(min=1)
        adj = adj.to(feat.dtype)
        feat_src = feat
        if self._norm == "both":
            feat_src = scale_rows(feat_src, src_degrees.pow(-0.5))
        if self._in_feats > self._out_feats:
            rst = dense.matmul(adj, dense.matmul(feat_src, self.weight))
        else:
            rst = dense.matmul(dense.matmul(adj, feat_src), self.weight)
        if self._norm != "none":
            rst = scale_rows(rst, dst_degrees.pow(-0.5) if self._norm == "both" else 1.0 / dst_degrees)
        if self.bias is not None:
            rst = rst + self.bias
        if self._activation is not None:
            rst = self._activation(rst)
        return as_dtype(rst, dtype)

    def extra_repr(self):
        return f"in={self._in_feats}, out={self._out_feats}, normalization={self._norm}"

