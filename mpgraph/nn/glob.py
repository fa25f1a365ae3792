"""Graph-level readout (pooling) layers.

Every layer reads the batch layout from ``graph.batch_num_nodes()`` (one
graph when the graph is not a batch) and reduces each graph's node rows with
:func:`mpgraph.ops.segment_reduce` / :func:`mpgraph.ops.segment_softmax`:
sums, means and softmax statistics are float32 for half inputs.
"""

import torch
from torch import nn

from ..base import DGLError
from .utils import (as_dtype, batch_num_nodes, broadcast_nodes, check_node_feat, compute_dtype, readout_nodes,
                    softmax_nodes)

__all__ = ["SumPooling", "AvgPooling", "MaxPooling", "SortPooling", "GlobalAttentionPooling", "Set2Set",
           "WeightAndSum"]


class SumPooling(nn.Module):
    r"""Sum of the node features of each graph: :math:`r^{(i)} = \sum_{k=1}^{N_i} x^{(i)}_k`.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import SumPooling
    >>> g = dgl.graph(([0, 1], [1, 2]))
    >>> SumPooling()(g, torch.ones(3, 4))
    tensor([[3., 3., 3., 3.]])
    """

    def forward(self, graph, feat):
        """``feat: (N, *)`` -> ``(B, *)`` for a batch of ``B`` graphs."""
        check_node_feat("SumPooling", "feat", feat, None)
        return readout_nodes(graph, feat, "sum", "SumPooling")


class AvgPooling(nn.Module):
    r"""Mean of the node features of each graph: :math:`r^{(i)} = \frac{1}{N_i}\sum_{k=1}^{N_i} x^{(i)}_k`.

    An empty graph gives 0.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import AvgPooling
    >>> g = dgl.graph(([0, 1], [1, 2]))
    >>> AvgPooling()(g, torch.arange(3.).unsqueeze(1))
    tensor([[1.]])
    """

    def forward(self, graph, feat):
        """``feat: (N, *)`` -> ``(B, *)``."""
        check_node_feat("AvgPooling", "feat", feat, None)
        return readout_nodes(graph, feat, "mean", "AvgPooling")


class MaxPooling(nn.Module):
    r"""Element-wise max of the node features of each graph: :math:`r^{(i)} = \max_{k} x^{(i)}_k`.

    An empty graph gives 0.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import MaxPooling
    >>> g = dgl.graph(([0, 1], [1, 2]))
    >>> MaxPooling()(g, torch.arange(3.).unsqueeze(1))
    tensor([[2.]])
    """

    def forward(self, graph, feat):
        """``feat: (N, *)`` -> ``(B, *)``."""
        check_node_feat("MaxPooling", "feat", feat, None)
        return readout_nodes(graph, feat, "max", "MaxPooling")


class SortPooling(nn.Module):
    r"""Sort pooling from `An End-to-End Deep Learning Architecture for Graph Classification
    <https://www.cse.wustl.edu/~ychen/public/DGCNN.pdf>`__.

    Each node's features are sorted in ascending order; then the ``k`` nodes
    with the largest last (largest) feature are kept per graph, in descending
    order of it, and flattened. Graphs with fewer than ``k`` nodes are padded
    with zero rows.

    Parameters
    ----------
    k : int
        Number of nodes kept per graph.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import SortPooling
    >>> g = dgl.graph(([0, 1], [1, 2]))
    >>> SortPooling(k=2)(g, torch.tensor([[1., 5.], [3., 2.], [0., 4.]]))
    tensor([[1., 5., 0., 4.]])
    """

    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, graph, feat):
        """``feat: (N, D)`` -> ``(B, k * D)``."""
        check_node_feat("SortPooling", "feat", feat, None)
        if feat.dim() != 2:
            raise DGLError(f"SortPooling: expected feat of shape (N, D), got {tuple(feat.shape)}")
        counts = batch_num_nodes(graph, feat, "SortPooling")
        feat, _ = feat.sort(dim=-1)
        B, D = counts.numel(), feat.shape[1]
        counts_dev = counts.to(feat.device)
        max_n = int(counts.max()) if B else 0
        # pad every graph to max_n rows; padded rows sort last (key -inf) and are zeroed
        offsets = torch.cumsum(counts_dev, 0) - counts_dev                                     # (B,)
        graph_of = torch.repeat_interleave(torch.arange(B, device=feat.device), counts_dev,
                                           output_size=feat.shape[0])
        pos = torch.arange(feat.shape[0], device=feat.device) - offsets[graph_of]
        key = torch.full((B, max_n), float("-inf"), dtype=feat.dtype, device=feat.device)
        key = key.index_put((graph_of, pos), feat[:, -1])
        kk = min(self.k, max_n)
        order = torch.sort(key, dim=1, descending=True, stable=True).indices[:, :kk]            # (B, kk)
        valid = order < counts_dev.unsqueeze(1)
        rows = (offsets.unsqueeze(1) + order).clamp(max=max(feat.shape[0] - 1, 0))
        picked = feat[rows.reshape(-1)].reshape(B, kk, D) if feat.shape[0] else feat.new_zeros(B, kk, D)
        picked = torch.where(valid.unsqueeze(-1), picked, torch.zeros((), dtype=feat.dtype, device=feat.device))
        if kk < self.k:
            picked = torch.cat([picked, picked.new_zeros(B, self.k - kk, D)], dim=1)
        return picked.reshape(B, self.k * D)

    def extra_repr(self):
        return f"k={self.k}"


class GlobalAttentionPooling(nn.Module):
    r"""Global attention pooling from `Gated Graph Sequence Neural Networks <https://arxiv.org/abs/1511.05493>`__.

    .. math::

        r^{(i)} = \sum_{k=1}^{N_i} \mathrm{softmax}\left(f_{gate}(x^{(i)}_k)\right) f_{feat}(x^{(i)}_k)

    with the softmax over the nodes of each graph (float32 statistics for half inputs).

    Parameters
    ----------
    gate_nn : torch.nn.Module
        Maps ``(N, D)`` to ``(N, 1)`` scores.
    feat_nn : torch.nn.Module, optional
        Maps the features before weighting; identity when None.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import GlobalAttentionPooling
    >>> g = dgl.graph(([0, 1], [1, 2]))
    >>> pool = GlobalAttentionPooling(torch.nn.Linear(4, 1))
    >>> out, gate = pool(g, torch.ones(3, 4), get_attention=True)
    >>> out.shape, gate.shape
    (torch.Size([1, 4]), torch.Size([3, 1]))
    """

    def __init__(self, gate_nn, feat_nn=None):
        super().__init__()
        self.gate_nn = gate_nn
        self.feat_nn = feat_nn

    def forward(self, graph, feat, get_attention=False):
        """``feat: (N, D)`` -> ``(B, D')`` (and the gate ``(N, 1)`` when ``get_attention``).

        Raises
        ------
        DGLError
            ``gate_nn`` output without a last dimension of size 1; wrong row count.
        """
        check_node_feat("GlobalAttentionPooling", "feat", feat, None)
        gate = self.gate_nn(feat)
        if gate.dim() != 2 or gate.shape[-1] != 1:
            raise DGLError(f"GlobalAttentionPooling: expected gate_nn to output shape (N, 1), got "
                           f"{tuple(gate.shape)}")
        feat = self.feat_nn(feat) if self.feat_nn is not None else feat
        gate = softmax_nodes(graph, gate, "GlobalAttentionPooling")
        readout = readout_nodes(graph, feat * gate, "sum", "GlobalAttentionPooling")
        if get_attention:
            return readout, gate
        return readout


class Set2Set(nn.Module):
    r"""Set2Set readout from `Order Matters: Sequence to sequence for sets <https://arxiv.org/pdf/1511.06391.pdf>`__.

    .. math::

        q_t = \mathrm{LSTM}(q^*_{t-1}), \quad
        \alpha_{i,t} = \mathrm{softmax}(x_i \cdot q_t), \quad
        r_t = \sum_{i=1}^N \alpha_{i,t} x_i, \quad
        q^*_t = q_t \Vert r_t

    for ``n_iters`` steps, softmax and sums per graph.

    Parameters
    ----------
    input_dim : int
        Feature size :math:`D`; the output has ``2 * D``.
    n_iters : int
        Number of iterations.
    n_layers : int
        Number of LSTM layers.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import Set2Set
    >>> g = dgl.graph(([0, 1], [1, 2]))
    >>> Set2Set(4, n_iters=2, n_layers=1)(g, torch.ones(3, 4)).shape
    torch.Size([1, 8])
    """

    def __init__(self, input_dim, n_iters, n_layers):
        super().__init__()
        self.input_dim = input_dim
        self.output_dim = 2 * input_dim
        self.n_iters = n_iters
        self.n_layers = n_layers
        self.lstm = nn.LSTM(self.output_dim, self.input_dim, n_layers)
        self.reset_parameters()

    def reset_parameters(self):
        """Reinitialise the LSTM (PyTorch's default init)."""
        self.lstm.reset_parameters()

    def forward(self, graph, feat):
        """``feat: (N, input_dim)`` -> ``(B, 2 * input_dim)``."""
        check_node_feat("Set2Set", "feat", feat, self.input_dim, width_name="input_dim")
        B = graph.batch_size
        dtype = compute_dtype(feat)
        h = (feat.new_zeros((self.n_layers, B, self.input_dim), dtype=dtype),
             feat.new_zeros((self.n_layers, B, self.input_dim), dtype=dtype))
        q_star = feat.new_zeros(B, self.output_dim, dtype=dtype)
        for _ in range(self.n_iters):
            q, h = self.lstm(q_star.unsqueeze(0), h)
            q = q.view(B, self.input_dim)
            e = (feat * broadcast_nodes(graph, as_dtype(q, feat.dtype))).sum(dim=-1, keepdim=True)   # (N, 1)
            alpha = softmax_nodes(graph, e, "Set2Set")
            readout = readout_nodes(graph, feat * as_dtype(alpha, feat.dtype), "sum", "Set2Set")
            q_star = torch.cat([as_dtype(q, dtype), as_dtype(readout, dtype)], dim=-1)
        return q_star

    def extra_repr(self):
        return f"n_iters={self.n_iters}, input_dim={self.input_dim}, n_layers={self.n_layers}"


class WeightAndSum(nn.Module):
    r"""Weighted sum of node features with learned, sigmoid-gated node weights.

    .. math::

        r^{(i)} = \sum_{k=1}^{N_i} \sigma(w^T x^{(i)}_k + b)\, x^{(i)}_k

    Parameters
    ----------
    in_feats : int
        Feature size.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import WeightAndSum
    >>> g = dgl.graph(([0, 1], [1, 2]))
    >>> WeightAndSum(4)(g, torch.ones(3, 4)).shape
    torch.Size([1, 4])
    """

    def __init__(self, in_feats):
        super().__init__()
        self.in_feats = in_feats
        self.atom_weighting = nn.Sequential(nn.Linear(in_feats, 1), nn.Sigmoid())

    def reset_parameters(self):
        """Reinitialise the scoring layer (PyTorch's default ``nn.Linear`` init)."""
        self.atom_weighting[0].reset_parameters()

    def forward(self, g, feats):
        """``feats: (N, in_feats)`` -> ``(B, in_feats)``."""
        check_node_feat("WeightAndSum", "feats", feats, self.in_feats)
        w = self.atom_weighting(feats)                                               # (N, 1)
        return readout_nodes(g, feats * as_dtype(w, feats.dtype), "sum", "WeightAndSum")
