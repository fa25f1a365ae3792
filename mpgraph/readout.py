r"""Graph readout: per-graph reductions, softmax, broadcast and top-k over a (batched) graph.

Every function works on the graphs of a batch (see :mod:`mpgraph.batch`); an
unbatched graph is a batch of one. Node functions take the node set of
``ntype`` (the destination nodes of a block), edge functions all edges. On a
(batched) :class:`~mpgraph.heterograph.HeteroGraph` they read the nodes of one
type (``ntype=``, required when there are several) or the edges of one
relation (``etype=``), with that type's per-graph counts
(``g.batch_num_nodes(ntype)``, ``g.batch_num_edges(etype)``).

``feat`` and ``weight`` name features of the graph (``g.ndata[feat]``), as in
DGL; a tensor with one row per node (edge) is accepted too, which lets layers
read out without writing into the user's frames.

Precision: sums, means and softmax denominators of float16/bfloat16 features
accumulate in float32 and round once (:mod:`mpgraph.ops.segment`); a weighted
readout of 16-bit features forms ``x * w`` in float32 before reducing. Graphs
without nodes (edges) read out as 0 for every reducer, as in DGL.
"""

import torch

from . import ops
from .base import DGLError, DGLTypeError
from .batch import _edge_counts, _node_counts
from .graph import Graph
from .heterograph import HeteroGraph
from .precision import accum_dtype, is_half_dtype

__all__ = [
    "readout_nodes", "readout_edges",
    "sum_nodes", "sum_edges", "mean_nodes", "mean_edges", "max_nodes", "max_edges", "min_nodes", "min_edges",
    "softmax_nodes", "softmax_edges", "broadcast_nodes", "broadcast_edges", "topk_nodes", "topk_edges",
]

_READOUT_OPS = ("sum", "mean", "max", "min")


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def _check_graph(graph):
    if not isinstance(graph, (Graph, HeteroGraph)):
        raise DGLTypeError(f"expected an mpgraph Graph or HeteroGraph, got {type(graph).__name__}")


def _whole(frame, device):
    return frame, torch.tensor([frame.num_rows], dtype=torch.int64, device=device)


def _typed_nodes(graph, ntype):
    """``(frame, seglen)`` of node type ``ntype`` of a HeteroGraph (the destination nodes of a typed block)."""
    nt = graph._ntype(ntype)
    if graph.is_block:
        return _whole(graph.dstnodes[nt].data, graph.device)
    return graph.nodes[nt].data, graph.batch_num_nodes(nt)


def _typed_edges(graph, etype):
    cet = graph.to_canonical_etype(etype)
    frame = graph.edges[cet].data
    if graph.is_block:
        return _whole(frame, graph.device)
    return frame, graph.batch_num_edges(cet)


def _nodes(graph, ntype):
    """``(frame, seglen)`` of the node set read out: seglen is ``(B,)`` int64."""
    _check_graph(graph)
    if isinstance(graph, HeteroGraph):
        return _typed_nodes(graph, ntype)
    s = graph._node_set(ntype, "dst" if graph.is_block else "both")
    frame = graph._node_frames[s]
    if graph._batch_num_nodes is None:
        return frame, torch.tensor([frame.num_rows], dtype=torch.int64, device=graph.device)
    return frame, _node_counts(graph)[s]


def _edges(graph, etype):
    _check_graph(graph)
    if isinstance(graph, HeteroGraph):
        return _typed_edges(graph, etype)
    graph._check_etype(etype)
    return graph._edge_frame, _edge_counts(graph)


def _column(frame, feat, kind, arg):
    """The tensor named (or given) by ``feat``, with one row per node/edge."""
    if isinstance(feat, str):
        return frame[feat]
    if isinstance(feat, torch.Tensor):
        if feat.dim() == 0 or feat.shape[0] != frame.num_rows:
            got = "a 0-d tensor" if feat.dim() == 0 else f"shape {tuple(feat.shape)}"
            raise DGLError(f"expected {arg} with {frame.num_rows} rows (one per {kind}), got {got}")
        return feat
    raise DGLTypeError(f"expected {arg} to be a {kind} feature name (str) or a tensor, got {type(feat).__name__}")


def _readout(seglen, frame, feat, weight, op, kind):
    if op not in _READOUT_OPS:
        raise DGLError(f"expected op in {_READOUT_OPS}, got {op!r}")
    x = _column(frame, feat, kind, "feat")
    if weight is not None:
        w = _column(frame, weight, kind, "weight")
        try:
            out_dtype = torch.result_type(x, w)
        except RuntimeError as err:
            raise DGLTypeError(f"expected feat and weight of compatible dtypes, got {x.dtype} and {w.dtype}") from err
        if is_half_dtype(out_dtype):
            acc = accum_dtype(out_dtype)
            return ops.segment_reduce(seglen, x.to(acc) * w.to(acc), op).to(out_dtype)
        try:
            x = x * w
        except RuntimeError as err:
            raise DGLError(f"expected weight broadcastable against feat {tuple(x.shape)} (e.g. shape "
                           f"({x.shape[0]}, 1)), got {tuple(w.shape)}") from err
    return ops.segment_reduce(seglen, x, op)


def _softmax(seglen, frame, feat, kind):
    return ops.segment_softmax(seglen, _column(frame, feat, kind, "feat"))


def _broadcast(seglen, graph_feat, kind):
    if not isinstance(graph_feat, torch.Tensor):
        raise DGLTypeError(f"expected graph_feat to be a tensor, got {type(graph_feat).__name__}")
    B = seglen.numel()
    if graph_feat.dim() == 0 or graph_feat.shape[0] != B:
        got = "a 0-d tensor" if graph_feat.dim() == 0 else f"shape {tuple(graph_feat.shape)}"
        raise DGLError(f"expected graph_feat with {B} rows (one per graph of the batch), got {got}; for one graph "
                       "use graph_feat.unsqueeze(0)")
    total = int(seglen.sum())
    return torch.repeat_interleave(graph_feat, seglen.to(graph_feat.device), dim=0, output_size=total)


def _topk(seglen, frame, feat, k, descending, sortby, kind):
    x = _column(frame, feat, kind, "feat")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise DGLError(f"expected k a positive int, got {k!r}")
    if x.dim() != 2:
        raise DGLError(f"expected a 2-D {kind} feature (N, D) for top-k, got shape {tuple(x.shape)}; reshape it "
                       f"with feat.reshape(N, -1)")
    D = x.shape[1]
    if sortby is not None and (not isinstance(sortby, int) or isinstance(sortby, bool) or not -D <= sortby < D):
        raise DGLError(f"expected sortby None or an int in [{-D}, {D}) (a feature column), got {sortby!r}")
    B = seglen.numel()
    counts = seglen.to(x.device)
    L = max(int(counts.max()) if B else 0, k)
    # dense (B, L, D) layout: row r of graph b sits at [b, r]
    offs = torch.cumsum(counts, 0) - counts
    gid = torch.repeat_interleave(torch.arange(B, device=x.device), counts, output_size=x.shape[0])
    pos = torch.arange(x.shape[0], device=x.device) - offs[gid]
    valid = torch.zeros(B, L, dtype=torch.bool, device=x.device)
    valid[gid, pos] = True
    dense = x.new_zeros(B, L, D)
    dense[gid, pos] = x
    fill = float("-inf") if descending else float("inf")
    if sortby is None:
        key = torch.where(valid.unsqueeze(-1), dense.detach(), fill)            # (B, L, D)
    else:
        key = torch.where(valid, dense[:, :, sortby].detach(), fill)            # (B, L)
    # stable sort: among equal keys the lower row wins and real rows precede padding
    order = torch.sort(key, dim=1, descending=descending, stable=True).indices[:, :k]   # (B, k[, D])
    if sortby is None:
        values = torch.gather(dense, 1, order)                                  # (B, k, D)
        pad = order >= counts.view(B, 1, 1)
    else:
        values = torch.gather(dense, 1, order.unsqueeze(-1).expand(B, k, D))     # (B, k, D)
        pad = order >= counts.view(B, 1)
    order = torch.where(pad, torch.full_like(order, -1), order)
    return values, order


# ---------------------------------------------------------------------------
# readout
# ---------------------------------------------------------------------------
def readout_nodes(graph, feat, weight=None, *, op="sum", ntype=None):
    r"""Reduce the node features of each graph in the batch.

    .. math::

        r^{(b)} = \bigoplus_{v \in \mathcal{V}_b} w_v x_v, \qquad \oplus \in \{\sum, \mathrm{mean}, \max, \min\}

    ``mean`` divides by the number of nodes (not by the sum of weights).

    Parameters
    ----------
    graph : Graph or HeteroGraph
        A (batched) graph with ``B`` graphs and ``N`` nodes (of type ``ntype``).
    feat : str or Tensor
        Node feature name, or a ``(N, *)`` tensor.
    weight : str or Tensor, optional
        Node weights (name or tensor), broadcastable against the feature, e.g.
        ``(N, 1)``. Default: ``None`` (no weighting).
    op : str, optional
        ``'sum'``, ``'mean'``, ``'max'`` or ``'min'``. Default: ``'sum'``.
    ntype : str, optional
        Node type (needed for uni-bipartite graphs and graphs with several
        node types). Default: ``None``.

    Returns
    -------
    Tensor
        ``(B, *)`` in the feature dtype (promoted with the weight's). Graphs
        without nodes give 0.

    Raises
    ------
    DGLError
        Unknown ``op``; a tensor with the wrong number of rows; a weight that
        does not broadcast; an unknown ``ntype``, or none on a graph with
        several node types.
    KeyError
        No node feature ``feat``.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.batch import batch
    >>> from mpgraph.readout import readout_nodes
    >>> g1, g2 = dgl.graph(([0], [1])), dgl.graph(([0, 1], [1, 2]))
    >>> g1.ndata['h'] = torch.tensor([[1.], [2.]])
    >>> g2.ndata['h'] = torch.tensor([[1.], [2.], [6.]])
    >>> bg = batch([g1, g2])
    >>> readout_nodes(bg, 'h')
    tensor([[3.],
            [9.]])
    >>> readout_nodes(bg, 'h', op='max')
    tensor([[2.],
            [6.]])

    A batch of heterographs reads out one node type:

    >>> h1 = dgl.heterograph({('u', 'r', 'v'): ([0], [0]), ('v', 's', 'u'): ([0], [1])})
    >>> h2 = dgl.heterograph({('u', 'r', 'v'): ([0], [1]), ('v', 's', 'u'): ([1], [0])})
    >>> h1.nodes['v'].data['x'] = torch.tensor([[1.]])
    >>> h2.nodes['v'].data['x'] = torch.tensor([[2.], [3.]])
    >>> readout_nodes(batch([h1, h2]), 'x', op='mean', ntype='v')
    tensor([[1.0000],
            [2.5000]])
    """
    frame, seglen = _nodes(graph, ntype)
    return _readout(seglen, frame, feat, weight, op, "node")


def readout_edges(graph, feat, weight=None, *, op="sum", etype=None):
    r"""Reduce the edge features of each graph in the batch.

    Same as :func:`readout_nodes` over edges: returns ``(B, *)``; graphs
    without edges give 0.

    Parameters
    ----------
    graph : Graph or HeteroGraph
        A (batched) graph with ``B`` graphs and ``E`` edges (of relation ``etype``).
    feat : str or Tensor
        Edge feature name, or a ``(E, *)`` tensor.
    weight : str or Tensor, optional
        Edge weights, broadcastable against the feature. Default: ``None``.
    op : str, optional
        ``'sum'``, ``'mean'``, ``'max'`` or ``'min'``. Default: ``'sum'``.
    etype : str or tuple of str, optional
        Edge type (needed on a graph with several relations). Default: ``None``.

    Returns
    -------
    Tensor
        ``(B, *)``.

    Raises
    ------
    DGLError
        Unknown ``op``, wrong row count, unknown ``etype``.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.batch import batch
    >>> from mpgraph.readout import readout_edges
    >>> g1, g2 = dgl.graph(([0], [1])), dgl.graph(([0, 1], [1, 2]))
    >>> g1.edata['w'] = torch.tensor([[1.]])
    >>> g2.edata['w'] = torch.tensor([[2.], [4.]])
    >>> readout_edges(batch([g1, g2]), 'w', op='mean')
    tensor([[1.],
            [3.]])
    """
    frame, seglen = _edges(graph, etype)
    return _readout(seglen, frame, feat, weight, op, "edge")


def sum_nodes(graph, feat, weight=None, *, ntype=None):
    """Per-graph sum of node features: :func:`readout_nodes` with ``op='sum'``. Returns ``(B, *)``."""
    return readout_nodes(graph, feat, weight, op="sum", ntype=ntype)


def sum_edges(graph, feat, weight=None, *, etype=None):
    """Per-graph sum of edge features: :func:`readout_edges` with ``op='sum'``. Returns ``(B, *)``."""
    return readout_edges(graph, feat, weight, op="sum", etype=etype)


def mean_nodes(graph, feat, weight=None, *, ntype=None):
    """Per-graph mean of node features: :func:`readout_nodes` with ``op='mean'``. Returns ``(B, *)``."""
    return readout_nodes(graph, feat, weight, op="mean", ntype=ntype)


def mean_edges(graph, feat, weight=None, *, etype=None):
    """Per-graph mean of edge features: :func:`readout_edges` with ``op='mean'``. Returns ``(B, *)``."""
    return readout_edges(graph, feat, weight, op="mean", etype=etype)


def max_nodes(graph, feat, weight=None, *, ntype=None):
    """Per-graph elementwise max of node features (0 for graphs without nodes). Returns ``(B, *)``."""
    return readout_nodes(graph, feat, weight, op="max", ntype=ntype)


def max_edges(graph, feat, weight=None, *, etype=None):
    """Per-graph elementwise max of edge features (0 for graphs without edges). Returns ``(B, *)``."""
    return readout_edges(graph, feat, weight, op="max", etype=etype)


def min_nodes(graph, feat, weight=None, *, ntype=None):
    """Per-graph elementwise min of node features (0 for graphs without nodes). Returns ``(B, *)``."""
    return readout_nodes(graph, feat, weight, op="min", ntype=ntype)


def min_edges(graph, feat, weight=None, *, etype=None):
    """Per-graph elementwise min of edge features (0 for graphs without edges). Returns ``(B, *)``."""
    return readout_edges(graph, feat, weight, op="min", etype=etype)


# ---------------------------------------------------------------------------
# softmax and broadcast
# ---------------------------------------------------------------------------
def softmax_nodes(graph, feat, *, ntype=None):
    r"""Softmax of node features over the nodes of each graph (per feature position).

    .. math::

        y_v = \frac{\exp(x_v)}{\sum_{u \in \mathcal{V}_{b(v)}} \exp(x_u)}

    Computed in float32 for 16-bit features (max-subtracted), rounded once.

    Parameters
    ----------
    graph : Graph or HeteroGraph
        A (batched) graph.
    feat : str or Tensor
        Node feature name or ``(N, *)`` tensor.
    ntype : str, optional
        Node type (needed with several node types). Default: ``None``.

    Returns
    -------
    Tensor
        ``(N, *)``, same dtype as the feature.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.batch import batch
    >>> from mpgraph.readout import softmax_nodes
    >>> g1, g2 = dgl.graph(([0], [1])), dgl.graph(([], []), num_nodes=1)
    >>> g1.ndata['s'] = torch.tensor([0., 0.])
    >>> g2.ndata['s'] = torch.tensor([5.])
    >>> softmax_nodes(batch([g1, g2]), 's')
    tensor([0.5000, 0.5000, 1.0000])
    """
    frame, seglen = _nodes(graph, ntype)
    return _softmax(seglen, frame, feat, "node")


def softmax_edges(graph, feat, *, etype=None):
    """Softmax of edge features over the edges of each graph; ``(E, *)``. See :func:`softmax_nodes`."""
    frame, seglen = _edges(graph, etype)
    return _softmax(seglen, frame, feat, "edge")


def broadcast_nodes(graph, graph_feat, *, ntype=None):
    r"""Copy each graph's feature to all its nodes: row ``b`` of ``graph_feat`` goes to the nodes of graph ``b``.

    Parameters
    ----------
    graph : Graph or HeteroGraph
        A (batched) graph with ``B`` graphs.
    graph_feat : Tensor
        ``(B, *)``.
    ntype : str, optional
        Node type (needed with several node types); row ``b`` goes to the
        ``ntype`` nodes of graph ``b``. Default: ``None``.

    Returns
    -------
    Tensor
        ``(N, *)``.

    Raises
    ------
    DGLError
        ``graph_feat`` without ``B`` rows.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.batch import batch
    >>> from mpgraph.readout import broadcast_nodes
    >>> bg = batch([dgl.graph(([0], [1])), dgl.graph(([0], [2]))])
    >>> broadcast_nodes(bg, torch.tensor([[1.], [2.]])).squeeze(1)
    tensor([1., 1., 2., 2., 2.])
    """
    _, seglen = _nodes(graph, ntype)
    return _broadcast(seglen, graph_feat, "node")


def broadcast_edges(graph, graph_feat, *, etype=None):
    """Copy each graph's feature ``(B, *)`` to all its edges; returns ``(E, *)``. See :func:`broadcast_nodes`."""
    _, seglen = _edges(graph, etype)
    return _broadcast(seglen, graph_feat, "edge")


# ---------------------------------------------------------------------------
# top-k
# ---------------------------------------------------------------------------
def topk_nodes(graph, feat, k, *, descending=True, sortby=None, ntype=None):
    r"""The ``k`` largest (or smallest) node features of each graph.

    With ``sortby=None`` every feature column is ranked independently (like
    ``torch.topk(x, k, dim=0)`` per graph); with ``sortby=j`` whole rows are
    ranked by column ``j``. Ties go to the lower node ID.

    Parameters
    ----------
    graph : Graph or HeteroGraph
        A (batched) graph with ``B`` graphs.
    feat : str or Tensor
        Node feature name or ``(N, D)`` tensor (2-D).
    k : int
        How many to keep per graph.
    descending : bool, optional
        Largest first (``True``) or smallest first. Default: ``True``.
    sortby : int, optional
        Column to rank rows by. Default: ``None`` (every column independently).
    ntype : str, optional
        Node type. Default: ``None``.

    Returns
    -------
    sorted_feat : Tensor
        ``(B, k, D)``; a graph with ``n < k`` nodes has zero rows ``n .. k-1``.
    sorted_idx : Tensor
        Node IDs within each graph, int64: ``(B, k, D)`` (``sortby=None``) or
        ``(B, k)``; -1 at padded positions.

    Raises
    ------
    DGLError
        ``k < 1``, a feature that is not 2-D, ``sortby`` out of range.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.batch import batch
    >>> from mpgraph.readout import topk_nodes
    >>> g1, g2 = dgl.graph(([0], [2])), dgl.graph(([0], [1]))
    >>> g1.ndata['h'] = torch.tensor([[1., 9.], [3., 8.], [2., 7.]])
    >>> g2.ndata['h'] = torch.tensor([[5., 0.], [4., 1.]])
    >>> bg = batch([g1, g2])
    >>> val, idx = topk_nodes(bg, 'h', 2, sortby=0)
    >>> val
    tensor([[[3., 8.],
             [2., 7.]],
    <BLANKLINE>
            [[5., 0.],
             [4., 1.]]])
    >>> idx
    tensor([[1, 2],
            [0, 1]])
    >>> topk_nodes(bg, 'h', 3)[1][1]
    tensor([[ 0,  1],
            [ 1,  0],
            [-1, -1]])
    """
    frame, seglen = _nodes(graph, ntype)
    return _topk(seglen, frame, feat, k, descending, sortby, "node")


def topk_edges(graph, feat, k, *, descending=True, sortby=None, etype=None):
    """The ``k`` largest (or smallest) edge features of each graph. See :func:`topk_nodes`.

    Returns ``(B, k, D)`` features (zero-padded) and edge IDs within each graph
    (``(B, k, D)`` or ``(B, k)`` with ``sortby``; -1 at padded positions).
    """
    frame, seglen = _edges(graph, etype)
    return _topk(seglen, frame, feat, k, descending, sortby, "edge")
