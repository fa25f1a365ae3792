"""Gated graph convolution (GGNN)."""

import torch
from torch import nn

from ..._index import as_index
from ...base import DGLError
from ..utils import as_dtype, check_node_feat, compute_dtype, project
from ... import ops

__all__ = ["GatedGraphConv"]


class GatedGraphConv(nn.Module):
    r"""Gated graph convolution from `Gated Graph Sequence Neural Networks <https://arxiv.org/pdf/1511.05493.pdf>`__.

    .. math::

        h_{i}^{0} = [x_i \| \mathbf{0}], \qquad
        a_{i}^{t} = \sum_{j \in \mathcal{N}(i)} W_{e_{ij}} h_{j}^{t} + b_{e_{ij}}, \qquad
        h_{i}^{t+1} = \mathrm{GRU}(a_{i}^{t}, h_{i}^{t})

    for ``n_steps`` steps, with one linear map per edge type :math:`e_{ij}`.
    Input features narrower than ``out_feats`` are zero-padded.

    Parameters
    ----------
    in_feats : int
        Input feature size (at most ``out_feats``).
    out_feats : int
        Output (and hidden) feature size.
    n_steps : int
        Number of recurrent steps.
    n_etypes : int
        Number of edge types.
    bias : bool, default True
        Biases in the per-type linear maps and the GRU.

    Raises
    ------
    DGLError
        ``in_feats > out_feats``.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import GatedGraphConv
    >>> g = dgl.graph(([0, 1, 2, 3, 2, 5], [1, 2, 3, 4, 0, 3]))
    >>> conv = GatedGraphConv(10, 10, n_steps=2, n_etypes=3)
    >>> conv(g, torch.ones(6, 10), torch.tensor([0, 1, 2, 0, 1, 2])).shape
    torch.Size([6, 10])
    """

    def __init__(self, in_feats, out_feats, n_steps, n_etypes, bias=True):
        super().__init__()
        if in_feats > out_feats:
            raise DGLError(f"GatedGraphConv: expected in_feats <= out_feats (features are zero-padded to "
                           f"out_feats), got in_feats={in_feats}, out_feats={out_feats}")
        self._in_feats = in_feats
        self._out_feats = out_feats
        self._n_steps = n_steps
        self._n_etypes = n_etypes
        self.linears = nn.ModuleList([nn.Linear(out_feats, out_feats, bias=bias) for _ in range(n_etypes)])
        self.gru = nn.GRUCell(out_feats, out_feats, bias=bias)
        self.reset_parameters()

    def reset_parameters(self):
        """Reinitialise: Xavier-normal (ReLU gain) linear weights, zero biases, default GRU init."""
        gain = nn.init.calculate_gain("relu")
        self.gru.reset_parameters()
        for linear in self.linears:
            nn.init.xavier_normal_(linear.weight, gain=gain)
            if linear.bias is not None:
                nn.init.zeros_(linear.bias)

    def forward(self, graph, feat, etypes=None):
        r"""Compute GGNN: ``(N, in_feats)`` -> ``(N, out_feats)``.

        Parameters
        ----------
        graph : Graph
            The graph (homogeneous).
        feat : torch.Tensor
            ``(N, in_feats)``.
        etypes : torch.Tensor, optional
            ``(E,)`` edge types in ``[0, n_etypes)``; may be omitted when ``n_etypes == 1``.

        Raises
        ------
        DGLError
            Wrong feature width or row count; missing or out-of-range ``etypes``.
        """
        check_node_feat("GatedGraphConv", "feat", feat, self._in_feats, graph.num_nodes(), "nodes")
        dtype = compute_dtype(feat)
        T, D = self._n_etypes, self._out_feats
        E, N = graph.num_edges(), graph.num_nodes()
        if etypes is None:
            if T != 1:
                raise DGLError(f"GatedGraphConv: the layer has n_etypes={T}; pass etypes, an (E,) tensor of "
                               "edge types")
        else:
            etypes = torch.as_tensor(etypes, device=feat.device).reshape(-1)
            if etypes.numel() != E or etypes.is_floating_point():
                raise DGLError(f"GatedGraphConv: expected etypes as ({E},) integers, got "
                               f"{etypes.dtype} of shape {tuple(etypes.shape)}")
            if E and (int(etypes.min()) < 0 or int(etypes.max()) >= T):
                raise DGLError(f"GatedGraphConv: expected edge types in [0, {T}), got values in "
                               f"[{int(etypes.min())}, {int(etypes.max())}]")
        zero_pad = feat.new_zeros(N, D - feat.shape[1])
        h = torch.cat([feat, zero_pad], dim=-1)
        index = as_index(graph)
        for _ in range(self._n_steps):
            if etypes is None or T == 1:
                a = ops.copy_u_sum(graph, project(self.linears[0], h))
            else:
                # per-type projections of every node, gathered at each edge's (type, source)
                proj = torch.stack([project(linear, h) for linear in self.linears])  # (T, N, D)
                msg = proj.reshape(T * N, D).index_select(0, etypes.to(torch.int64) * N + index.src64)
                a = ops.copy_e_sum(graph, msg)                                      # (N, D)
            h = self.gru(as_dtype(a, h.dtype), h)
        return as_dtype(h, dtype)

    def extra_repr(self):
        return f"in={self._in_feats}, out={self._out_feats}, n_steps={self._n_steps}, n_etypes={self._n_etypes}"
