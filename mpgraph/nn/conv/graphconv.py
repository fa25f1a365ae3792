"""Graph convolution (GCN) and the edge-weight normaliser it uses."""

import torch
from torch import nn

from ..._index import as_index
from ...base import DGLError
from ...ops import dense
from ..utils import (aggregate, as_dtype, check_choice, check_edge_weight, check_float_tensor, check_src_dst,
                     check_zero_in_degree, compute_dtype, degree_norm, expand_as_pair, norm_dtype, scale_rows)

__all__ = ["GraphConv", "EdgeWeightNorm"]

_NORMS = ("none", "both", "right", "left")


class EdgeWeightNorm(nn.Module):
    r"""Normalise positive scalar edge weights as in GCN.

    For an edge :math:`j \to i` with weight :math:`e_{ji}`, ``norm='both'`` returns

    .. math::

        \frac{e_{ji}}{\sqrt{\sum_{k \in \mathcal{N}_{out}(j)} e_{jk} + \epsilon}
                      \sqrt{\sum_{k \in \mathcal{N}_{in}(i)} e_{ki} + \epsilon}}

    ``'right'`` divides by :math:`\sum_{k \in \mathcal{N}_{in}(i)} e_{ki} + \epsilon`,
    ``'left'`` by :math:`\sum_{k \in \mathcal{N}_{out}(j)} e_{jk} + \epsilon`
    and ``'none'`` returns the weights unchanged. Use the result as ``edge_weight``
    of a layer built with ``norm='none'``. The weight sums and the division run
    in float32 for half-precision weights (float64 for float64) with one
    rounding to the weights' dtype. Differentiable in the weights.

    Parameters
    ----------
    norm : str, default 'both'
        ``'both'``, ``'right'``, ``'left'`` or ``'none'``.
    eps : float, default 0.
        Added to every weight sum.

    Raises
    ------
    DGLError
        Unknown ``norm``; weights that are not one scalar per edge; non-positive
        weights with ``norm='both'`` (their square root is undefined).

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import EdgeWeightNorm
    >>> g = dgl.graph(([0, 0, 1], [1, 2, 2]))
    >>> EdgeWeightNorm(norm='right')(g, torch.tensor([1., 1., 3.]))
    tensor([1.0000, 0.2500, 0.7500])
    """

    def __init__(self, norm="both", eps=0.0):
        super().__init__()
        check_choice("EdgeWeightNorm", "norm", norm, _NORMS)
        self._norm = norm
        self._eps = eps

    def forward(self, graph, edge_weight):
        """Return the normalised weights ``(E,)`` in ``edge_weight.dtype``.

        Parameters
        ----------
        graph : Graph
            The graph (a block or a bipartite graph works too).
        edge_weight : torch.Tensor
            ``(E,)`` positive weights.
        """
        check_float_tensor("EdgeWeightNorm", "edge_weight", edge_weight)
        if edge_weight.dim() != 1:
            raise DGLError("EdgeWeightNorm: the normalization is only defined on scalar edge weights: expected "
                           f"shape ({graph.num_edges()},), got {tuple(edge_weight.shape)}; normalize "
                           "high-dimensional weights yourself")
        edge_weight = check_edge_weight("EdgeWeightNorm", graph, edge_weight)
        if self._norm == "both" and bool((edge_weight <= 0).any()):
            raise DGLError('EdgeWeightNorm: non-positive edge weight detected with `norm="both"`, which leads '
                           "to the square root of zero or negative values; use positive weights or "
                           "norm='right'")
        if self._norm == "none":
            return edge_weight
        index = as_index(graph)
        acc = norm_dtype(edge_weight)
        w = edge_weight.to(acc)
        out = w
        if self._norm in ("both", "left"):
            out_w = torch.zeros(index.num_src, dtype=acc, device=w.device).index_add(0, index.src64, w) + self._eps
            fac = out_w.pow(-0.5) if self._norm == "both" else 1.0 / out_w
            out = out * fac.index_select(0, index.src64)
        if self._norm in ("both", "right"):
            in_w = torch.zeros(index.num_dst, dtype=acc, device=w.device).index_add(0, index.dst64, w) + self._eps
            fac = in_w.pow(-0.5) if self._norm == "both" else 1.0 / in_w
            out = out * fac.index_select(0, index.dst64)
        return out.to(edge_weight.dtype)

    def extra_repr(self):
        return f"norm={self._norm}, eps={self._eps}"


class GraphConv(nn.Module):
    r"""Graph convolution from `Semi-Supervised Classification with Graph Convolutional Networks
    <https://arxiv.org/abs/1609.02907>`__.

    .. math::

        h_i^{(l+1)} = \sigma\Big(b^{(l)} + \sum_{j \in \mathcal{N}(i)} \frac{e_{ji}}{c_{ji}} h_j^{(l)} W^{(l)}\Big)

    where :math:`\mathcal{N}(i)` are the in-neighbours of :math:`i`, :math:`e_{ji}`
    the optional edge weight (1 without one) and :math:`c_{ji}` the normaliser:
    :math:`\sqrt{d^{out}_j}\sqrt{d^{in}_i}` for ``norm='both'``,
    :math:`d^{in}_i` for ``'right'``, :math:`d^{out}_j` for ``'left'`` and 1 for
    ``'none'``. Degrees are structural (edge weights do not change them; use
    :class:`EdgeWeightNorm` with ``norm='none'`` for weighted degrees) and are
    clamped to at least 1. On a bipartite graph or block :math:`d^{out}` are the
    source nodes' out-degrees and :math:`d^{in}` the destination nodes' in-degrees.

    Precision: the normalisers are float32 (float64 for float64 features) and
    are applied to float16/bfloat16 features with one rounding; neighbour sums
    accumulate in float32. The output has the input's dtype (the autocast dtype
    under :class:`torch.autocast`).

    Parameters
    ----------
    in_feats : int
        Input feature size :math:`D_{in}`.
    out_feats : int
        Output feature size :math:`D_{out}`.
    norm : str, default 'both'
        ``'both'``, ``'right'``, ``'left'`` or ``'none'``.
    weight : bool, default True
        Learn a weight :math:`W` of shape ``(in_feats, out_feats)``; with
        ``False`` pass one to :meth:`forward` or aggregate without it.
    bias : bool, default True
        Add a learnable bias ``(out_feats,)`` (initialised to zero).
    activation : callable, optional
        Applied to the output. Default: None.
    allow_zero_in_degree : bool, default False
        Skip the check that every destination node has an in-edge (such nodes
        receive only the bias).

    Attributes
    ----------
    weight : torch.nn.Parameter or None
        ``(in_feats, out_feats)``, Glorot-uniform initialised.
    bias : torch.nn.Parameter or None
        ``(out_feats,)``.

    Raises
    ------
    DGLError
        Unknown ``norm``.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import GraphConv
    >>> g = dgl.graph(([0, 1, 2, 3, 2, 5] + list(range(6)), [1, 2, 3, 4, 0, 3] + list(range(6))))
    >>> conv = GraphConv(10, 2, norm='both')
    >>> conv(g, torch.ones(6, 10)).shape
    torch.Size([6, 2])
    >>> conv.to(torch.bfloat16)(g, torch.ones(6, 10, dtype=torch.bfloat16)).dtype
    torch.bfloat16

    A uni-bipartite graph takes a ``(source, destination)`` feature pair:

    >>> bg = dgl.heterograph({('_U', '_E', '_V'): ([0, 1, 0, 0, 1], [0, 1, 2, 3, 2])})
    >>> GraphConv(5, 2)(bg, (torch.rand(2, 5), torch.rand(4, 5))).shape
    torch.Size([4, 2])
    """

    def __init__(self, in_feats, out_feats, norm="both", weight=True, bias=True, activation=None,
                 allow_zero_in_degree=False):
        super().__init__()
        check_choice("GraphConv", "norm", norm, _NORMS)
        self._in_feats = in_feats
        self._out_feats = out_feats
        self._norm = norm
        self._allow_zero_in_degree = allow_zero_in_degree
        if weight:
            self.weight = nn.Parameter(torch.empty(in_feats, out_feats))
        else:
            self.register_parameter("weight", None)
        if bias:
            self.bias = nn.Parameter(torch.empty(out_feats))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()
        self._activation = activation

    def reset_parameters(self):
        """Reinitialise: Glorot-uniform weight, zero bias (as the original GCN)."""
        if self.weight is not None:
            nn.init.xavier_uniform_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def set_allow_zero_in_degree(self, set_value):
        """Set the ``allow_zero_in_degree`` flag."""
        self._allow_zero_in_degree = set_value

    def forward(self, graph, feat, weight=None, edge_weight=None):
        r"""Compute the graph convolution.

        Parameters
        ----------
        graph : Graph
            The graph, a uni-bipartite graph or a block.
        feat : torch.Tensor or pair of torch.Tensor
            ``(N, *, in_feats)``; or ``(feat_src, feat_dst)`` for a bipartite graph. On a
            block a single tensor holds the source nodes; destination features are its
            first ``num_dst_nodes`` rows.
        weight : torch.Tensor, optional
            External weight ``(in_feats, out_feats)``, only for a layer built with ``weight=False``.
        edge_weight : torch.Tensor, optional
            ``(E,)`` scalar weight per edge, multiplying the messages.

        Returns
        -------
        torch.Tensor
            ``(N_dst, *, out_feats)`` (``in_feats`` when there is no weight).

        Raises
        ------
        DGLError
            0-in-degree destination nodes (unless ``allow_zero_in_degree``); feature width
            or row count that does not match; ``edge_weight`` not one scalar per edge; an
            external ``weight`` given to a layer that has its own.
        """
        check_zero_in_degree(graph, self._allow_zero_in_degree)
        feat_src, feat_dst = expand_as_pair(feat, graph)
        check_src_dst("GraphConv", graph, feat_src, feat_dst, self._in_feats, None)
        if edge_weight is not None:
            edge_weight = check_edge_weight("GraphConv", graph, edge_weight)
        if weight is not None:
            if self.weight is not None:
                raise DGLError("GraphConv: an external weight is provided while the module has its own weight "
                               "parameter; create the module with weight=False to pass weights to forward")
            if tuple(weight.shape) != (self._in_feats, self._out_feats):
                raise DGLError(f"GraphConv: expected an external weight of shape ({self._in_feats}, "
                               f"{self._out_feats}), got {tuple(weight.shape)}")
        else:
            weight = self.weight
        dtype = compute_dtype(feat_src)
        acc = norm_dtype(feat_src)

        h = feat_src
        if self._norm in ("both", "left"):
            h = scale_rows(h, degree_norm(graph, "out", -0.5 if self._norm == "both" else -1.0, acc), dtype)
        if weight is not None and self._in_feats > self._out_feats:
            # multiply by W first: aggregation then runs on the smaller width
            h = dense.matmul(h, weight)
            rst = aggregate(graph, h, "sum", edge_weight)
        else:
            rst = aggregate(graph, h, "sum", edge_weight)
            if weight is not None:
                rst = dense.matmul(rst, weight)
        if self._norm in ("both", "right"):
            rst = scale_rows(rst, degree_norm(graph, "in", -0.5 if self._norm == "both" else -1.0, acc))
        if self.bias is not None:
            rst = rst + self.bias
        if self._activation is not None:
            rst = self._activation(rst)
        return as_dtype(rst, dtype)

    def extra_repr(self):
        summary = f"in={self._in_feats}, out={self._out_feats}, normalization={self._norm}"
        if self._activation is not None:
            summary += f", activation={self._activation}"
        return summary
