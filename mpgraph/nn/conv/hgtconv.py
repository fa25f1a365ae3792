"""Heterogeneous graph transformer convolution (HGT) on a homogeneous view of a typed graph."""

import math

import torch
from torch import nn

from ... import ops
from ..._index import as_index
from ...base import DGLError
from ...precision import accum_dtype
from ...ops import dense
from ..linear import TypedLinear
from ..utils import Dropout
from ..utils import as_dtype, check_node_feat, compute_dtype

__all__ = ["HGTConv"]


def _type_ids(name, t, n, num_types, device):
    t = torch.as_tensor(t, device=device).reshape(-1)
    if t.is_floating_point() or t.dtype == torch.bool or t.numel() != n:
        raise DGLError(f"HGTConv: expected {name} as ({n},) integer type IDs, got {t.dtype} of shape {tuple(t.shape)}")
    t = t.to(torch.int64)
    if t.numel() and (int(t.min()) < 0 or int(t.max()) >= num_types):
        raise DGLError(f"HGTConv: expected {name} in [0, {num_types}), got values in [{int(t.min())}, {int(t.max())}]")
    return t


class HGTConv(nn.Module):
    r"""Heterogeneous graph transformer convolution from `Heterogeneous Graph Transformer
    <https://arxiv.org/abs/2003.01332>`__.

    For an edge :math:`e = (s, t)` of type :math:`\phi(e)` between nodes of types
    :math:`\tau(s), \tau(t)`, and each head :math:`i`:

    .. math::

        k_s &= W^K_{\tau(s)} x_s, \quad q_t = W^Q_{\tau(t)} x_t, \quad v_s = W^V_{\tau(s)} x_s \\
        a^i_e &= \frac{(k^i_s W^{ATT,i}_{\phi(e)}) \cdot q^i_t \; \mu^i_{\phi(e)}}{\sqrt{d}}, \qquad
        \alpha^i_e = \mathrm{softmax}_{e \in \mathrm{in}(t)}(a^i_e) \\
        h_t &= W^A_{\tau(t)} \,\Big\Vert_i \sum_{e \in \mathrm{in}(t)} \alpha^i_e \, v^i_s W^{MSG,i}_{\phi(e)} \\
        y_t &= \sigma(\beta_{\tau(t)})\, \mathrm{drop}(h_t) + (1 - \sigma(\beta_{\tau(t)}))\, x_t W^{res}

    (:math:`W^{res}` is the identity when ``in_size == head_size * num_heads``),
    then an optional layer norm. The graph is a homogeneous graph (e.g. from
    :func:`mpgraph.to_homogeneous`) with node types ``ntype`` and edge types
    ``etype`` given as tensors. Attention logits and the softmax are computed in
    float32 (float64 for float64) for every input format; the aggregation is one
    gSpMM accumulating in float32.

    Parameters
    ----------
    in_size : int
        Input feature size.
    head_size : int
        Size of each head; the output size is ``head_size * num_heads``.
    num_heads : int
        Number of attention heads.
    num_ntypes : int
        Number of node types.
    num_etypes : int
        Number of edge types.
    dropout : float, default 0.2
        Dropout on the aggregated output.
    use_norm : bool, default False
        Apply a layer norm to the output.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.nn.conv.hgtconv import HGTConv
    >>> g = dgl.graph(([0, 1, 2, 3], [1, 2, 3, 0]))
    >>> conv = HGTConv(4, head_size=2, num_heads=3, num_ntypes=2, num_etypes=2, dropout=0.0)
    >>> conv(g, torch.ones(4, 4), torch.tensor([0, 1, 0, 1]), torch.tensor([0, 1, 1, 0])).shape
    torch.Size([4, 6])
    """

    def __init__(self, in_size, head_size, num_heads, num_ntypes, num_etypes, dropout=0.2, use_norm=False):
        super().__init__()
        self.in_size = in_size
        self.head_size = head_size
        self.num_heads = num_heads
        self.num_ntypes = num_ntypes
        self.num_etypes = num_etypes
        self.sqrt_d = math.sqrt(head_size)
        self.use_norm = use_norm
        out = head_size * num_heads
        self.linear_k = TypedLinear(in_size, out, num_ntypes)
        self.linear_q = TypedLinear(in_size, out, num_ntypes)
        self.linear_v = TypedLinear(in_size, out, num_ntypes)
        self.linear_a = TypedLinear(out, out, num_ntypes)
        self.relation_pri = nn.ParameterList([nn.Parameter(torch.ones(num_etypes)) for _ in range(num_heads)])
        self.relation_att = nn.ModuleList([TypedLinear(head_size, head_size, num_etypes) for _ in range(num_heads)])
        self.relation_msg = nn.ModuleList([TypedLinear(head_size, head_size, num_etypes) for _ in range(num_heads)])
        self.skip = nn.Parameter(torch.ones(num_ntypes))
        self.drop = Dropout(dropout)
        if use_norm:
            self.norm = nn.LayerNorm(out)
        if in_size != out:
            self.residual_w = nn.Parameter(torch.empty(in_size, out))
            nn.init.xavier_uniform_(self.residual_w)

    def forward(self, g, x, ntype, etype, *, presorted=False):
        """Compute HGT.

        Parameters
        ----------
        g : Graph
            Homogeneous graph or block (``N_src`` sources, ``N_dst`` destinations, ``E`` edges).
        x : torch.Tensor
            ``(N_src, in_size)`` node features (on a block the destinations are the first rows).
        ntype : torch.Tensor
            ``(N_src,)`` node type IDs in ``[0, num_ntypes)``.
        etype : torch.Tensor
            ``(E,)`` edge type IDs in ``[0, num_etypes)``.
        presorted : bool, default False
            Nodes and edges are already sorted by type (skips the sorts in :class:`TypedLinear`).

        Returns
        -------
        torch.Tensor
            ``(N_dst, head_size * num_heads)``, in ``x``'s dtype (the autocast dtype under autocast).

        Raises
        ------
        DGLError
            Wrong feature width or row count; type IDs not one per node/edge or out of range.
        """
        index = as_index(g)
        N_src, N_dst, E = index.num_src, index.num_dst, index.num_edges
        H, D = self.num_heads, self.head_size
        check_node_feat("HGTConv", "x", x, self.in_size, N_src, "source nodes")
        ntype = _type_ids("ntype", ntype, N_src, self.num_ntypes, x.device)
        etype = _type_ids("etype", etype, E, self.num_etypes, x.device)
        dtype = compute_dtype(x)
        acc = accum_dtype(dtype)
        x_dst, dstntype = x[:N_dst], ntype[:N_dst]
        k = self.linear_k(x, ntype, presorted).view(-1, H, D)                     # (N_src, H, D)
        q = self.linear_q(x_dst, dstntype, presorted).view(-1, H, D)              # (N_dst, H, D)
        v = self.linear_v(x, ntype, presorted).view(-1, H, D)                     # (N_src, H, D)
        k_e, v_e = k.index_select(0, index.src64), v.index_select(0, index.src64)  # (E, H, D)
        q_e = q.index_select(0, index.dst64)                                      # (E, H, D)
        logits, msgs = [], []
        for i in range(H):
            kw = self.relation_att[i](k_e[:, i], etype, presorted)                 # (E, D)
            dot = (kw.to(acc) * q_e[:, i].to(acc)).sum(-1)                         # (E,) in fp32
            logits.append(dot * self.relation_pri[i][etype].to(acc) / self.sqrt_d)
            msgs.append(self.relation_msg[i](v_e[:, i], etype, presorted))          # (E, D)
        a = torch.stack(logits, 1)                                                 # (E, H)
        m = torch.stack(msgs, 1)                                                   # (E, H, D)
        attn = ops.edge_softmax(g, a)                                              # (E, H)
        m = m * attn.to(m.dtype).unsqueeze(-1)
        h = ops.copy_e_sum(g, m).reshape(N_dst, H * D)                             # (N_dst, H * D)
        h = self.drop(self.linear_a(h, dstntype, presorted))
        alpha = torch.sigmoid(self.skip[dstntype]).unsqueeze(-1)                   # (N_dst, 1)
        if self.in_size != H * D:
            h = h * alpha + dense.matmul(x_dst, self.residual_w) * (1 - alpha)
        else:
            h = h * alpha + x_dst * (1 - alpha)
        if self.use_norm:
            h = self.norm(h)
        return as_dtype(h, dtype)

    def extra_repr(self):
        return (f"in={self.in_size}, head_size={self.head_size}, num_heads={self.num_heads}, "
                f"num_ntypes={self.num_ntypes}, num_etypes={self.num_etypes}")
