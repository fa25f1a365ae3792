"""GINE: GIN with edge features."""

import torch
from torch import nn

from ... import ops
from ..utils import as_dtype, check_node_feat, check_same_width, check_src_dst, compute_dtype, expand_as_pair

__all__ = ["GINEConv"]


class GINEConv(nn.Module):
    r"""GIN with edge features from `Strategies for Pre-training Graph Neural Networks
    <https://arxiv.org/abs/1905.12265>`__.

    .. math::

        h_i^{(l+1)} = f_\Theta\left((1 + \epsilon) h_i^{l} +
        \sum_{j \in \mathcal{N}(i)} \mathrm{ReLU}(h_j^{l} + e_{ji}^{l})\right)

    where :math:`e_{ji}` is the feature of edge :math:`j \to i` (same width as
    the node features). The per-edge messages are materialised as ``(E, D)``;
    the sum accumulates in float32 for half inputs.

    Parameters
    ----------
    apply_func : callable, optional
        :math:`f_\Theta`. Default: None (identity).
    init_eps : float, default 0
        Initial :math:`\epsilon`.
    learn_eps : bool, default False
        Make :math:`\epsilon` learnable.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import GINEConv
    >>> g = dgl.graph(([0, 1, 2], [1, 2, 0]))
    >>> GINEConv(torch.nn.Linear(4, 2))(g, torch.ones(3, 4), torch.ones(3, 4)).shape
    torch.Size([3, 2])
    """

    def __init__(self, apply_func=None, init_eps=0, learn_eps=False):
        super().__init__()
        self.apply_func = apply_func
        self._init_eps = float(init_eps)
        if learn_eps:
            self.eps = nn.Parameter(torch.tensor([self._init_eps]))
        else:
            self.register_buffer("eps", torch.tensor([self._init_eps]))

    def reset_parameters(self):
        """Reset :math:`\\epsilon` to ``init_eps`` (``apply_func`` belongs to the caller and is not reset)."""
        with torch.no_grad():
            self.eps.fill_(self._init_eps)

    def forward(self, graph, node_feat, edge_feat):
        r"""Compute GINE.

        Parameters
        ----------
        graph : Graph
            The graph, a uni-bipartite graph or a block.
        node_feat : torch.Tensor or pair of torch.Tensor
            ``(N, D)`` or a ``(feat_src, feat_dst)`` pair.
        edge_feat : torch.Tensor
            ``(E, D)`` edge features.

        Returns
        -------
        torch.Tensor
            ``(N_dst, D_out)``.

        Raises
        ------
        DGLError
            Row counts or widths that do not match (edge features must have the node width).
        """
        feat_src, feat_dst = expand_as_pair(node_feat, graph)
        check_src_dst("GINEConv", graph, feat_src, feat_dst, None, None)
        check_same_width("GINEConv", feat_src, feat_dst)
        check_node_feat("GINEConv", "edge_feat", edge_feat, feat_src.shape[-1], graph.num_edges(), "edges",
                        width_name="the node feature width")
        dtype = compute_dtype(feat_src)
        msg = torch.relu(ops.gsddmm(graph, "add", feat_src, edge_feat, "u", "e"))     # (E, D)
        neigh = as_dtype(ops.copy_e_sum(graph, msg), dtype)
        rst = (1 + self.eps) * feat_dst + neigh
        if feat_dst.dtype == neigh.dtype and rst.dtype != neigh.dtype:
            rst = rst.to(neigh.dtype)
        if self.apply_func is not None:
            rst = self.apply_func(rst)
        return as_dtype(rst, dtype)
