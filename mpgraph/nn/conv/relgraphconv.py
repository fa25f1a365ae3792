"""Relational graph convolution (R-GCN)."""

import torch
from torch import nn

from ... import ops
from ..._index import as_index
from ...base import DGLError
from ...ops import dense
from ..linear import TypedLinear
from ..utils import Dropout
from ..utils import as_dtype, check_float_tensor, check_node_feat, compute_dtype, scale_rows

__all__ = ["RelGraphConv"]


class RelGraphConv(nn.Module):
    r"""Relational graph convolution from `Modeling Relational Data with Graph Convolutional Networks
    <https://arxiv.org/abs/1703.06103>`__.

    .. math::

        h_i^{(l+1)} = \sigma\left(\sum_{r \in \mathcal{R}} \sum_{j \in \mathcal{N}^r(i)}
        e_{j,i} W_r^{(l)} h_j^{(l)} + W_0^{(l)} h_i^{(l)}\right)

    where :math:`e_{j,i}` is the optional ``norm`` of the edge, :math:`W_r` the
    weight of relation :math:`r` (a :class:`TypedLinear`, optionally with the
    ``'basis'`` or ``'bdd'`` regularizer) and :math:`W_0` the self-loop weight.
    Messages are computed per edge (``(E, out_feat)``), summed in float32 for
    half inputs. After the sum: layer norm, bias, self-loop, activation, dropout
    (DGL's order).

    Parameters
    ----------
    in_feat : int
        Input feature size.
    out_feat : int
        Output feature size.
    num_rels : int
        Number of relations (edge types).
    regularizer : str, optional
        None, ``'basis'`` or ``'bdd'``.
    num_bases : int, optional
        Number of bases/blocks; defaults to ``num_rels`` with a regularizer.
    bias : bool, default True
        Add a bias.
    activation : callable, optional
        Applied to the output.
    self_loop : bool, default True
        Add the self-loop term.
    dropout : float, default 0.
        Dropout on the output.
    layer_norm : bool, default False
        Layer-normalise the aggregated messages.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import RelGraphConv
    >>> g = dgl.graph(([0, 1, 2, 3, 2, 5], [1, 2, 3, 4, 0, 3]))
    >>> conv = RelGraphConv(10, 2, num_rels=3, regularizer='basis', num_bases=2)
    >>> conv(g, torch.ones(6, 10), torch.tensor([0, 1, 2, 0, 1, 2])).shape
    torch.Size([6, 2])
    """

    def __init__(self, in_feat, out_feat, num_rels, regularizer=None, num_bases=None, bias=True, activation=None,
                 self_loop=True, dropout=0.0, layer_norm=False):
        super().__init__()
        if regularizer is not None and num_bases is None:
            num_bases = num_rels
        self._in_feat = in_feat
        self._out_feat = out_feat
        self._num_rels = num_rels
        self.linear_r = TypedLinear(in_feat, out_feat, num_rels, regularizer, num_bases)
        self.bias = bias
        self.activation = activation
        self.self_loop = self_loop
        self.layer_norm = layer_norm
        if self.bias:
            self.h_bias = nn.Parameter(torch.empty(out_feat))
        if self.layer_norm:
            self.layer_norm_weight = nn.LayerNorm(out_feat, elementwise_affine=True)
        if self.self_loop:
            self.loop_weight = nn.Parameter(torch.empty(in_feat, out_feat))
        self.dropout = Dropout(dropout)
        self.reset_parameters()

    def reset_parameters(self):
        """Reinitialise: relation weights as :class:`TypedLinear`, zero bias, Xavier-uniform self-loop weight."""
        self.linear_r.reset_parameters()
        if self.bias:
            nn.init.zeros_(self.h_bias)
        if self.layer_norm:
            self.layer_norm_weight.reset_parameters()
        if self.self_loop:
            nn.init.xavier_uniform_(self.loop_weight, gain=nn.init.calculate_gain("relu"))

    def forward(self, g, feat, etypes, norm=None, *, presorted=False):
        r"""Compute R-GCN.

        Parameters
        ----------
        g : Graph
            The graph (or a block).
        feat : torch.Tensor
            ``(N_src, in_feat)`` source features (on a block the destination nodes are the first rows).
        etypes : torch.Tensor or list of int
            ``(E,)`` relation of every edge, in ``[0, num_rels)``.
        norm : torch.Tensor, optional
            ``(E, 1)`` per-edge normaliser multiplying the messages.
        presorted : bool, default False
            Edges are already sorted by relation (skips the sort).

        Returns
        -------
        torch.Tensor
            ``(N_dst, out_feat)``.

        Raises
        ------
        DGLError
            Wrong feature width or row count; ``etypes`` or ``norm`` not one value per edge;
            relations out of range.
        """
        check_node_feat("RelGraphConv", "feat", feat, self._in_feat, g.num_src_nodes(), "source nodes")
        E = g.num_edges()
        etypes = torch.as_tensor(etypes, device=feat.device).reshape(-1)
        if etypes.numel() != E:
            raise DGLError(f"RelGraphConv: expected etypes with one relation per edge ({E},), got shape "
                           f"{tuple(etypes.shape)}")
        dtype = compute_dtype(feat)
        index = as_index(g)
        msg = self.linear_r(feat.index_select(0, index.src64), etypes, presorted)      # (E, out)
        if norm is not None:
            check_float_tensor("RelGraphConv", "norm", norm)
            if norm.shape[0] != E or norm.numel() != E:
                raise DGLError(f"RelGraphConv: expected norm of shape ({E}, 1), got {tuple(norm.shape)}")
            msg = scale_rows(msg, norm.reshape(E))
        h = as_dtype(ops.copy_e_sum(g, msg), dtype)                                   # (N_dst, out)
        if self.layer_norm:
            h = self.layer_norm_weight(h)
        if self.bias:
            h = h + self.h_bias
        if self.self_loop:
            h = h + dense.matmul(feat[: g.num_dst_nodes()], self.loop_weight)
        if self.activation is not None:
            h = self.activation(h)
        h = self.dropout(h)
        return as_dtype(h, dtype)

    def extra_repr(self):
        return f"in={self._in_feat}, out={self._out_feat}, num_rels={self._num_rels}"
