"""GraphSAGE."""

import torch
import torch.nn.functional as F
from torch import nn

from ..._index import as_index
from ...base import DGLError
from ..utils import Dropout
from ..utils import (aggregate, as_dtype, check_choice, check_edge_weight, check_src_dst, compute_dtype, expand_as_pair,
                     norm_dtype, project, scale_rows)

__all__ = ["SAGEConv"]

_AGGREGATORS = ("mean", "gcn", "pool", "lstm")


class SAGEConv(nn.Module):
    r"""GraphSAGE layer from `Inductive Representation Learning on Large Graphs
    <https://arxiv.org/abs/1706.02216>`__.

    .. math::

        h_{\mathcal{N}(i)}^{(l+1)} = \mathrm{aggregate}\left(\{e_{ji} h_j^{l}, \forall j \in \mathcal{N}(i)\}\right)

        h_i^{(l+1)} = \sigma\left(W_{self} h_i^{l} + W_{neigh} h_{\mathcal{N}(i)}^{(l+1)} + b\right)

        h_i^{(l+1)} = \mathrm{norm}(h_i^{(l+1)})

    with :math:`e_{ji}` the optional edge weight (1 without one). Aggregators:

    * ``'mean'``: mean of the (weighted) neighbour features;
    * ``'gcn'``: :math:`(\sum_j e_{ji} h_j + h_i) / (d^{in}_i + 1)`, and no
      :math:`W_{self}` term;
    * ``'pool'``: element-wise max of :math:`\mathrm{ReLU}(W_{pool} e_{ji} h_j + b_{pool})`;
    * ``'lstm'``: the final hidden state of an LSTM run over the neighbours in edge-ID order.

    Nodes without in-edges aggregate to 0. For ``'mean'`` and ``'gcn'`` the
    projection :math:`W_{neigh}` is applied before message passing when it
    shrinks the features. Half precision: sums and means accumulate in float32,
    the ``'gcn'`` divisor is float32, the output has the input's (or the
    autocast) dtype.

    Parameters
    ----------
    in_feats : int or pair of ints
        Input feature size; a ``(src, dst)`` pair for bipartite inputs.
    out_feats : int
        Output feature size.
    aggregator_type : str
        ``'mean'``, ``'gcn'``, ``'pool'`` or ``'lstm'``.
    feat_drop : float, default 0.
        Dropout on the input features.
    bias : bool, default True
        Learnable bias (inside ``fc_self``, or a separate ``bias`` for ``'gcn'``).
    norm : callable, optional
        Applied to the output after the activation.
    activation : callable, optional
        Applied to the output.

    Raises
    ------
    DGLError
        Unknown ``aggregator_type``; ``'gcn'`` with different source and
        destination widths.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import SAGEConv
    >>> g = dgl.graph(([0, 1, 2, 3, 2, 5], [1, 2, 3, 4, 0, 3]))
    >>> SAGEConv(10, 2, 'pool')(g, torch.ones(6, 10)).shape
    torch.Size([6, 2])
    >>> SAGEConv(10, 2, 'mean').to(torch.float16)(g, torch.ones(6, 10, dtype=torch.float16)).dtype
    torch.float16
    >>> bg = dgl.heterograph({('_U', '_E', '_V'): ([0, 1, 0, 0, 1], [0, 1, 2, 3, 2])})
    >>> SAGEConv((5, 10), 2, 'lstm')(bg, (torch.rand(2, 5), torch.rand(4, 10))).shape
    torch.Size([4, 2])
    """

    def __init__(self, in_feats, out_feats, aggregator_type, feat_drop=0.0, bias=True, norm=None,
                 activation=None):
        super().__init__()
        check_choice("SAGEConv", "aggregator_type", aggregator_type, _AGGREGATORS)
        self._in_src_feats, self._in_dst_feats = expand_as_pair(in_feats)
        if aggregator_type == "gcn" and self._in_src_feats != self._in_dst_feats:
            raise DGLError("SAGEConv: aggregator 'gcn' adds destination features to the neighbour sum, so it needs "
                           f"equal source and destination widths, got in_feats={in_feats}")
        self._out_feats = out_feats
        self._aggre_type = aggregator_type
        self.norm = norm
        self.feat_drop = Dropout(feat_drop)
        self.activation = activation
        if aggregator_type == "pool":
            self.fc_pool = nn.Linear(self._in_src_feats, self._in_src_feats)
        if aggregator_type == "lstm":
            self.lstm = nn.LSTM(self._in_src_feats, self._in_src_feats, batch_first=True)
        self.fc_neigh = nn.Linear(self._in_src_feats, out_feats, bias=False)
        if aggregator_type != "gcn":
            self.fc_self = nn.Linear(self._in_dst_feats, out_feats, bias=bias)
        elif bias:
            self.bias = nn.Parameter(torch.zeros(self._out_feats))
        else:
            self.register_buffer("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Reinitialise: Xavier-uniform (ReLU gain) linear weights, PyTorch-default biases and LSTM, zero ``bias``."""
        gain = nn.init.calculate_gain("relu")
        if self._aggre_type == "pool":
            self.fc_pool.reset_parameters()                   # bias: PyTorch's default, as at construction
            nn.init.xavier_uniform_(self.fc_pool.weight, gain=gain)
        if self._aggre_type == "lstm":
            self.lstm.reset_parameters()
        if self._aggre_type != "gcn":
            self.fc_self.reset_parameters()
            nn.init.xavier_uniform_(self.fc_self.weight, gain=gain)
        elif self.bias is not None:
            nn.init.zeros_(self.bias)
        nn.init.xavier_uniform_(self.fc_neigh.weight, gain=gain)

    def _lstm_aggregate(self, graph, h_src, edge_weight):
        """Final LSTM hidden state over each node's in-neighbours, batched by in-degree: ``(N_dst, D_src)``."""
        index = as_index(graph)
        indptr, src, eid = index.csc()
        deg = indptr[1:] - indptr[:-1]
        nodes_parts, out_parts = [], []
        for d in torch.unique(deg[deg > 0]).tolist():
            nodes = (deg == d).nonzero().squeeze(1)                                   # (B,)
            pos = indptr[nodes].unsqueeze(1) + torch.arange(d, device=deg.device)     # (B, d)
            m = h_src.index_select(0, src[pos].reshape(-1)).reshape(nodes.numel(), d, -1)   # (B, d, D)
            if edge_weight is not None:
                m = as_dtype(m * edge_weight[eid[pos]].unsqueeze(-1), m.dtype)
            # under autocast hand the LSTM its autocast dtype already (CPU float16 autocast
            # cannot run an LSTM on float32 inputs)
            _, (h_n, _) = self.lstm(as_dtype(m, compute_dtype(m)))                     # (1, B, D)
            nodes_parts.append(nodes)
            out_parts.append(h_n.squeeze(0))
        if not out_parts:
            return h_src.new_zeros(index.num_dst, self._in_src_feats, dtype=compute_dtype(h_src))
        out = torch.cat(out_parts)
        return torch.zeros(index.num_dst, out.shape[1], dtype=out.dtype, device=out.device).index_copy(
            0, torch.cat(nodes_parts), out)

    def forward(self, graph, feat, edge_weight=None):
        r"""Compute GraphSAGE.

        Parameters
        ----------
        graph : Graph
            The graph, a uni-bipartite graph or a block.
        feat : torch.Tensor or pair of torch.Tensor
            ``(N, D_in)`` or a ``(feat_src, feat_dst)`` pair; on a block a single
            tensor holds the source nodes (destinations are its first rows).
        edge_weight : torch.Tensor, optional
            ``(E,)`` weights multiplying the messages.

        Returns
        -------
        torch.Tensor
            ``(N_dst, out_feats)``.

        Raises
        ------
        DGLError
            Wrong feature width or row count; ``edge_weight`` not one scalar per edge.
        """
        if isinstance(feat, (tuple, list)):
            feat_src, feat_dst = expand_as_pair(feat)
            check_src_dst("SAGEConv", graph, feat_src, feat_dst, self._in_src_feats, self._in_dst_feats)
            feat_src = self.feat_drop(feat_src)
            feat_dst = self.feat_drop(feat_dst)
            pair = True
        else:
            check_src_dst("SAGEConv", graph, feat, feat, self._in_src_feats, None)
            feat_src = feat_dst = self.feat_drop(feat)
            if graph.is_block:
                feat_dst = feat_src[: graph.num_dst_nodes()]
            pair = False
        if edge_weight is not None:
            edge_weight = check_edge_weight("SAGEConv", graph, edge_weight)
        dtype = compute_dtype(feat_src)
        h_self = feat_dst
        lin_before_mp = self._in_src_feats > self._out_feats

        if self._aggre_type == "mean":
            h = project(self.fc_neigh, feat_src) if lin_before_mp else feat_src
            h_neigh = aggregate(graph, h, "mean", edge_weight)
            if not lin_before_mp:
                h_neigh = project(self.fc_neigh, h_neigh)
        elif self._aggre_type == "gcn":
            h = project(self.fc_neigh, feat_src) if lin_before_mp else feat_src
            if pair:
                h_dst = project(self.fc_neigh, feat_dst) if lin_before_mp else feat_dst
            else:
                h_dst = h[: graph.num_dst_nodes()]
            total = aggregate(graph, h, "sum", edge_weight)
            total = total + as_dtype(h_dst, total.dtype)
            # divide by (in-degree + 1), a float32 (float64) normaliser
            inv = _inv_degree_plus_one(graph, norm_dtype(total))
            h_neigh = scale_rows(total, inv)
            if not lin_before_mp:
                h_neigh = project(self.fc_neigh, h_neigh)
        elif self._aggre_type == "pool":
            h = F.relu(project(self.fc_pool, feat_src))
            h_neigh = project(self.fc_neigh, aggregate(graph, h, "max", edge_weight))
        else:
            h_neigh = project(self.fc_neigh, self._lstm_aggregate(graph, feat_src, edge_weight))

        if self._aggre_type == "gcn":
            rst = h_neigh
            if self.bias is not None:
                rst = rst + self.bias
        else:
            rst = project(self.fc_self, h_self) + h_neigh
        if self.activation is not None:
            rst = self.activation(rst)
        if self.norm is not None:
            rst = self.norm(rst)
        return as_dtype(rst, dtype)

    def extra_repr(self):
        return (f"in=({self._in_src_feats}, {self._in_dst_feats}), out={self._out_feats}, "
                f"aggregator={self._aggre_type}")


def _inv_degree_plus_one(graph, dtype):
    """``1 / (in_degree + 1)`` of every destination node, ``(N_dst,)`` in ``dtype``, cached."""
    index = as_index(graph)
    return index.cached(f"nn.inv_deg_plus_one.{dtype}", lambda: 1.0 / (index.in_degrees().to(dtype) + 1))

