"""Batched graphs: :func:`batch`, :func:`unbatch` and :func:`slice_batch`.

A batched graph is one :class:`~mpgraph.graph.Graph` holding several graphs as
disjoint components: the nodes of graph ``i`` follow those of graph ``i - 1``,
its edges follow theirs, and every node/edge ID is shifted by the counts of the
graphs before it. Features are concatenated row-wise in the same order. The
per-graph counts are kept on the result (``g.batch_num_nodes()``,
``g.batch_num_edges()``), which :func:`unbatch`, :func:`slice_batch` and the
readout functions (:mod:`mpgraph.readout`) use. Because the components are
disjoint, message passing on the batch equals message passing on each graph.

Node sets: a homogeneous graph has one node set; a uni-bipartite graph has two
(source and destination). The helpers below work on a list of node sets, so the
same code covers both.
"""

import torch

from ._index import Index
from .base import ALL, EID, NID, DGLError, DGLTypeError, is_all
from .frame import Frame
from .graph import Graph

__all__ = ["batch", "unbatch", "slice_batch"]

_INT32_MAX = 2 ** 31 - 1


# ---------------------------------------------------------------------------
# per-graph counts (the one place that knows how a Graph stores them)
# ---------------------------------------------------------------------------
def _node_counts(g):
    """Per-graph node counts of each node set: a list of ``(B,)`` int64 tensors.

    One tensor for a homogeneous graph, two (source, destination) for a
    uni-bipartite graph or block.
    """
    return g._node_set_counts()


def _edge_counts(g):
    """Per-graph edge counts, ``(B,)`` int64."""
    return g.batch_num_edges()


def _set_counts(g, node_counts, edge_counts):
    """Store per-graph counts on ``g`` (``node_counts``: one ``(B,)`` tensor per node set)."""
    if len(node_counts) > 1:
        g.set_batch_num_nodes({g.srctypes[0]: node_counts[0], g.dsttypes[0]: node_counts[1]})
    else:
        g.set_batch_num_nodes(node_counts[0])
    g.set_batch_num_edges(edge_counts)


# ---------------------------------------------------------------------------
# argument checks
# ---------------------------------------------------------------------------
def _check_graph(g, name="g"):
    if not isinstance(g, Graph):
        raise DGLTypeError(f"expected {name} to be an mpgraph Graph, got {type(g).__name__}")
    if g.is_block:
        raise DGLError(f"expected a graph, got a block as {name}; (un)batching blocks is not supported: "
                       "batch the graphs before sampling blocks from them")


def _check_graph_list(graphs):
    if isinstance(graphs, Graph):
        raise DGLTypeError("expected a list of graphs, got a single Graph; wrap it in a list: batch([g])")
    try:
        graphs = list(graphs)
    except TypeError as err:
        raise DGLTypeError(f"expected a list of graphs, got {type(graphs).__name__}") from err
    if not graphs:
        raise DGLError("expected a non-empty list of graphs, got an empty list")
    for i, g in enumerate(graphs):
        _check_graph(g, f"graphs[{i}]")
    g0 = graphs[0]
    for i, g in enumerate(graphs[1:], 1):
        if g.canonical_etypes != g0.canonical_etypes:
            raise DGLError(f"expected every graph to have the relation {g0.canonical_etypes[0]} (that of graphs[0]), "
                           f"got {g.canonical_etypes[0]} at graphs[{i}]; batch graphs of one kind")
        if g.idtype != g0.idtype:
            raise DGLError(f"expected every graph to have idtype {g0.idtype} (that of graphs[0]), got {g.idtype} at "
                           f"graphs[{i}]; convert with g.long() or g.int()")
        if g.device != g0.device:
            raise DGLError(f"expected every graph on {g0.device} (the device of graphs[0]), got {g.device} at "
                           f"graphs[{i}]; move it with g.to(...)")
    return graphs


def _feature_names(keys, arg):
    """Normalise the ``ndata``/``edata`` argument: ALL, None, or a list of names."""
    if keys is None or is_all(keys):
        return keys
    if isinstance(keys, str):
        raise DGLTypeError(f"expected {arg} to be a list of feature names, ALL or None, got the str {keys!r}; "
                           f"use {arg}=[{keys!r}]")
    try:
        names = list(keys)
    except TypeError as err:
        raise DGLTypeError(f"expected {arg} to be a list of feature names, ALL or None, got "
                           f"{type(keys).__name__}") from err
    for k in names:
        if not isinstance(k, str):
            raise DGLTypeError(f"expected {arg} to hold str feature names, got {type(k).__name__} {k!r}")
    return names


def _schemes(frame, names=None):
    names = list(frame) if names is None else names
    return {k: (tuple(frame[k].shape[1:]), frame[k].dtype) for k in names if k in frame}


def _fmt_schemes(schemes):
    return "{" + ", ".join(f"{k!r}: (shape={s}, dtype={d})" for k, (s, d) in schemes.items()) + "}"


def _batch_frames(frames, keys, kind, arg, device):
    """Concatenate the columns ``keys`` of ``frames`` (one frame per graph) into one Frame.

    Frames with zero rows contribute nothing and are exempt from the schema
    check (an empty graph need not carry features).
    """
    total = sum(f.num_rows for f in frames)
    if keys is None:
        return Frame(total, device, kind)
    rows = [i for i, f in enumerate(frames) if f.num_rows > 0]
    ref = rows[0] if rows else 0
    names = list(frames[ref]) if is_all(keys) else keys
    want = _schemes(frames[ref], names)
    missing = [k for k in names if k not in want]
    if missing:
        raise DGLError(f"expected {kind} features {missing} in graphs[{ref}] ({arg} asks for them), got only "
                       f"{sorted(frames[ref])}; add them or leave them out of {arg}")
    for i in rows:
        got = _schemes(frames[i], None if is_all(keys) else names)
        if got != want:
            raise DGLError(f"expected every graph with {kind}s to have the {kind} features {_fmt_schemes(want)} "
                           f"(those of graphs[{ref}]), got {_fmt_schemes(got)} at graphs[{i}]; give every graph the "
                           f"same features (names, shapes, dtypes) or choose common ones with {arg}=[...]")
    cols = {}
    for k in names:
        parts = [frames[i][k] for i in rows]
        cols[k] = torch.cat(parts, 0) if parts else frames[ref][k]
    return Frame(total, device, kind, cols)


def _as_counts(x, what, device):
    """A 1-D int64 tensor of non-negative counts from a tensor or sequence."""
    if isinstance(x, torch.Tensor):
        if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
            raise DGLTypeError(f"expected integer counts for {what}, got dtype {x.dtype}")
        t = x.to(device=device, dtype=torch.int64).reshape(-1)
    else:
        try:
            t = torch.as_tensor(x, dtype=torch.int64, device=device).reshape(-1)
        except (TypeError, ValueError, RuntimeError) as err:
            raise DGLTypeError(f"expected a sequence or tensor of integer counts for {what}, got {x!r}") from err
    if t.numel() and int(t.min()) < 0:
        raise DGLError(f"expected non-negative counts for {what}, got {t.tolist()}")
    return t


def _split_arg(split, g, kind):
    """Per-set counts from ``node_split`` (``kind='node'``) or ``edge_split`` (``'edge'``)."""
    arg = f"{kind}_split"
    if kind == "node":
        types = [g._srctype, g._dsttype] if len(g._node_frames) > 1 else [g.ntypes[0]]
        rows = [f.num_rows for f in g._node_frames]
    else:
        types = [g._etype]
        rows = [g.num_edges()]
    if isinstance(split, dict):
        keys = list(split)
        if kind == "edge" and len(split) == 1 and keys[0] in (g._etype, g.canonical_etypes[0]):
            split = {g._etype: split[keys[0]]}
        if sorted(split, key=str) != sorted(types):
            raise DGLError(f"expected {arg} keyed by {types}, got keys {keys}")
        parts = [split[t] for t in types]
    elif len(types) > 1:
        raise DGLError(f"expected {arg} as a dict {{ntype: counts}} for node types {types} of this uni-bipartite "
                       f"graph, got {type(split).__name__}")
    else:
        parts = [split]
    out = []
    for t, p, n in zip(types, parts, rows):
        c = _as_counts(p, f"{arg}[{t!r}]" if len(types) > 1 else arg, g.device)
        if int(c.sum()) != n:
            raise DGLError(f"expected {arg} counts adding up to {n} (the graph's {kind} count"
                           f"{'' if len(types) == 1 else f' of type {t!r}'}), got {c.tolist()} (sum {int(c.sum())}); "
                           f"the counts must describe every {kind} exactly once")
        out.append(c)
    return out


def _exclusive_cumsum(c):
    return torch.cumsum(c, 0) - c


def _local_endpoints(g, node_counts, edge_counts):
    """Endpoints of every edge relative to its own graph's first node, with a membership check.

    Returns ``(src_local, dst_local)`` int64 ``(E,)``. Raises when an edge of
    graph ``i`` (by ``edge_counts``) has an endpoint outside graph ``i``'s nodes
    (by ``node_counts``).
    """
    index = g._index
    B = edge_counts.numel()
    gid = torch.repeat_interleave(torch.arange(B, device=g.device), edge_counts, output_size=index.num_edges)
    ends = []
    for end, counts in (("source", node_counts[0]), ("destination", node_counts[-1])):
        ids = index.src64 if end == "source" else index.dst64
        local = ids - _exclusive_cumsum(counts)[gid]
        bad = (local < 0) | (local >= counts[gid])
        if index.num_edges and bool(bad.any()):
            k = int(bad.nonzero()[0])
            i = int(gid[k])
            lo = int(_exclusive_cumsum(counts)[i])
            raise DGLError(f"expected every edge to join nodes of its own graph, got edge {k} with {end} node "
                           f"{int(ids[k])} outside graph {i}'s nodes [{lo}, {lo + int(counts[i])}); the node and edge "
                           f"counts do not describe the same batch (check node_split/edge_split or the batch "
                           f"counts set on the graph)")
        ends.append(local)
    return ends[0], ends[1]


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------
def batch(graphs, ndata=ALL, edata=ALL):
    r"""Batch a list of graphs into one graph whose components are the input graphs.

    Graph ``i``'s nodes get IDs ``offset_i + v`` where ``offset_i`` is the
    number of nodes of the graphs before it (likewise for edges), and its
    features become rows ``offset_i, ..., offset_i + n_i - 1`` of the batched
    features. The result remembers the per-graph counts
    (``batch_num_nodes()``, ``batch_num_edges()``), so :func:`unbatch` returns
    the inputs. Batching graphs that are themselves batched flattens the
    counts: ``batch([batch([a, b]), c]).batch_size == 3``.

    Parameters
    ----------
    graphs : list of Graph
        Homogeneous graphs with the same relation type, idtype and device
        (batched graphs allowed). Blocks are not accepted.
    ndata : list of str, ALL or None, optional
        Node features to batch. Default: :data:`~mpgraph.base.ALL` (every
        feature; graphs with nodes must then have the same feature names,
        shapes and dtypes; graphs without nodes are exempt). ``None`` batches
        none.
    edata : list of str, ALL or None, optional
        Edge features to batch, likewise. Default: ``ALL``.

    Returns
    -------
    Graph
        With ``N = sum(n_i)`` nodes, ``E = sum(e_i)`` edges, features of shape
        ``(N, *)``/``(E, *)`` and ``batch_size == sum(B_i)``.

    Raises
    ------
    DGLError
        An empty list; graphs of different relation types, idtypes or devices;
        blocks; different feature schemes; a requested feature missing; more
        than ``2**31 - 1`` nodes with idtype int32.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.batch import batch
    >>> g1 = dgl.graph(([0, 1], [1, 0]))
    >>> g1.ndata['h'] = torch.tensor([[1.], [2.]])
    >>> g2 = dgl.graph(([0, 1], [1, 2]))
    >>> g2.ndata['h'] = torch.tensor([[3.], [4.], [5.]])
    >>> bg = batch([g1, g2])
    >>> bg.batch_size, bg.batch_num_nodes().tolist(), bg.batch_num_edges().tolist()
    (2, [2, 3], [2, 2])
    >>> bg.edges()
    (tensor([0, 1, 2, 3]), tensor([1, 0, 3, 4]))
    >>> bg.ndata['h'].squeeze(1)
    tensor([1., 2., 3., 4., 5.])
    """
    from .heterograph import HeteroGraph, batch_hetero
    if isinstance(graphs, (list, tuple)) and graphs and all(isinstance(x, HeteroGraph) for x in graphs):
        return batch_hetero(graphs, ndata, edata)
    ndata = _feature_names(ndata, "ndata")
    edata = _feature_names(edata, "edata")
    graphs = _check_graph_list(graphs)
    g0 = graphs[0]
    device, idtype = g0.device, g0.idtype
    n_sets = len(g0._node_frames)

    counts = [_node_counts(g) for g in graphs]
    node_counts = [torch.cat([c[s] for c in counts]) for s in range(n_sets)]
    edge_counts = torch.cat([_edge_counts(g) for g in graphs])
    num_rows = [[g._node_frames[s].num_rows for g in graphs] for s in range(n_sets)]
    num_edges = [g.num_edges() for g in graphs]
    totals = [sum(r) for r in num_rows]
    if idtype == torch.int32 and max(totals + [sum(num_edges)]) > _INT32_MAX:
        raise DGLError(f"expected at most {_INT32_MAX} nodes and edges for idtype int32, got {totals} nodes and "
                       f"{sum(num_edges)} edges; convert the graphs with g.long() before batching")

    E_per = torch.tensor(num_edges, dtype=torch.int64, device=device)
    E = sum(num_edges)
    ids = []
    for s, which in ((0, "src64"), (n_sets - 1, "dst64")):
        offs = _exclusive_cumsum(torch.tensor(num_rows[s], dtype=torch.int64, device=device))
        parts = [getattr(g._index, which) for g in graphs]
        shift = torch.repeat_interleave(offs, E_per, output_size=E)
        ids.append((torch.cat(parts) + shift).to(idtype))
    index = Index.from_coo(ids[0], ids[1], totals[0], totals[-1])

    node_frames = [_batch_frames([g._node_frames[s] for g in graphs], ndata, "node", "ndata", device)
                   for s in range(n_sets)]
    edge_frame = _batch_frames([g._edge_frame for g in graphs], edata, "edge", "edata", device)
    out = Graph(index, g0.canonical_etypes[0], False, node_frames, edge_frame)
    _set_counts(out, node_counts, edge_counts)
    return out


def unbatch(g, node_split=None, edge_split=None):
    r"""Split a batched graph into its graphs (the inverse of :func:`batch`).

    Graph ``i`` gets the nodes and edges in its range (by the per-graph
    counts), renumbered from 0, with the matching rows of every feature
    (views of the batched tensors, so gradients flow back to them).

    Parameters
    ----------
    g : Graph
        The batched graph (an unbatched graph gives ``[copy of g]``).
    node_split : sequence of int or Tensor, optional
        Nodes per graph, ``(B,)``; for a uni-bipartite graph a dict
        ``{ntype: counts}``. Default: ``g.batch_num_nodes()``.
    edge_split : sequence of int or Tensor, optional
        Edges per graph, ``(B,)`` (or ``{etype: counts}``). Default:
        ``g.batch_num_edges()``. Give both splits or neither.

    Returns
    -------
    list of Graph
        ``B`` unbatched graphs with ``g``'s idtype, device and relation type.

    Raises
    ------
    DGLError
        Only one split given; splits of different lengths, with negative
        counts, or not adding up to the node/edge counts; an edge whose
        endpoints lie outside its graph's node range; ``g`` a block.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.batch import batch, unbatch
    >>> g1 = dgl.graph(([0], [1]))
    >>> g2 = dgl.graph(([0, 2], [1, 1]))
    >>> gs = unbatch(batch([g1, g2]))
    >>> [(x.num_nodes(), x.num_edges()) for x in gs]
    [(2, 1), (3, 2)]
    >>> gs[1].edges()
    (tensor([0, 2]), tensor([1, 1]))
    >>> g = dgl.graph(([0, 2], [1, 3]))
    >>> [x.num_nodes() for x in unbatch(g, node_split=[2, 2], edge_split=[1, 1])]
    [2, 2]
    """
    from .heterograph import HeteroGraph, unbatch_hetero
    if isinstance(g, HeteroGraph):
        return unbatch_hetero(g, node_split, edge_split)
    _check_graph(g)
    if (node_split is None) != (edge_split is None):
        given = "node_split" if node_split is not None else "edge_split"
        raise DGLError(f"expected node_split and edge_split both given or both None, got only {given}; pass the "
                       "per-graph node and edge counts together, or neither to use g.batch_num_nodes()/"
                       "g.batch_num_edges()")
    if node_split is None:
        node_counts, edge_counts = _node_counts(g), _edge_counts(g)
    else:
        node_counts = _split_arg(node_split, g, "node")
        edge_counts = _split_arg(edge_split, g, "edge")[0]
    lengths = [c.numel() for c in node_counts] + [edge_counts.numel()]
    if len(set(lengths)) != 1:
        raise DGLError(f"expected node and edge splits of the same length (one count per graph), got lengths "
                       f"{lengths[:-1]} (nodes) and {lengths[-1]} (edges)")
    src_local, dst_local = _local_endpoints(g, node_counts, edge_counts)
    idtype = g.idtype
    n_lists = [c.tolist() for c in node_counts]
    e_list = edge_counts.tolist()
    src_parts = torch.split(src_local.to(idtype), e_list)
    dst_parts = torch.split(dst_local.to(idtype), e_list)
    node_cols = [{k: torch.split(v, n, 0) for k, v in f.items()} for f, n in zip(g._node_frames, n_lists)]
    edge_cols = {k: torch.split(v, e_list, 0) for k, v in g._edge_frame.items()}
    out = []
    for i in range(len(e_list)):
        index = Index.from_coo(src_parts[i], dst_parts[i], n_lists[0][i], n_lists[-1][i])
        frames = [Frame(n[i], g.device, "node", {k: v[i] for k, v in cols.items()})
                  for n, cols in zip(n_lists, node_cols)]
        eframe = Frame(e_list[i], g.device, "edge", {k: v[i] for k, v in edge_cols.items()})
        out.append(Graph(index, g.canonical_etypes[0], False, frames, eframe))
    return out


def slice_batch(g, gid, store_ids=False):
    r"""Graph ``gid`` of a batched graph, without unbatching the others.

    Parameters
    ----------
    g : Graph
        The batched graph.
    gid : int
        Index of the graph in the batch, ``0 <= gid < g.batch_size``.
    store_ids : bool, optional
        Store the node and edge IDs the graph had in the batch as
        ``ndata[dgl.NID]`` and ``edata[dgl.EID]`` (``'_ID'``). Default: ``False``.

    Returns
    -------
    Graph
        The graph with its features (views of the batched tensors).

    Raises
    ------
    DGLError
        ``gid`` out of range or not an int; edges leaving the graph's node range.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.batch import batch, slice_batch
    >>> bg = batch([dgl.graph(([0], [1])), dgl.graph(([0, 2], [1, 1]))])
    >>> sg = slice_batch(bg, 1, store_ids=True)
    >>> sg.edges(), sg.ndata['_ID']
    ((tensor([0, 2]), tensor([1, 1])), tensor([2, 3, 4]))
    """
    _check_graph(g)
    if isinstance(gid, torch.Tensor) and gid.dim() == 0 and not gid.is_floating_point():
        gid = int(gid)
    B = g.batch_size
    if not isinstance(gid, int) or isinstance(gid, bool) or not 0 <= gid < B:
        raise DGLError(f"expected gid an int in [0, {B}) (the batch size), got {gid!r}")
    node_counts, edge_counts = _node_counts(g), _edge_counts(g)
    n = [int(c[gid]) for c in node_counts]
    n_off = [int(c[:gid].sum()) for c in node_counts]
    e, e_off = int(edge_counts[gid]), int(edge_counts[:gid].sum())
    index = g._index
    src = index.src64[e_off:e_off + e] - n_off[0]
    dst = index.dst64[e_off:e_off + e] - n_off[-1]
    for end, ids, lim, off in (("source", src, n[0], n_off[0]), ("destination", dst, n[-1], n_off[-1])):
        bad = (ids < 0) | (ids >= lim)
        if e and bool(bad.any()):
            k = int(bad.nonzero()[0])
            raise DGLError(f"expected the edges of graph {gid} to join its nodes [{off}, {off + lim}), got edge "
                           f"{e_off + k} with {end} node {int(ids[k]) + off}; the batch counts do not match the "
                           "structure")
    sub = Index.from_coo(src.to(g.idtype), dst.to(g.idtype), n[0], n[-1])
    frames = []
    for f, rows, off in zip(g._node_frames, n, n_off):
        cols = {k: v.narrow(0, off, rows) for k, v in f.items()}
        if store_ids:
            cols[NID] = torch.arange(off, off + rows, dtype=g.idtype, device=g.device)
        frames.append(Frame(rows, g.device, "node", cols))
    cols = {k: v.narrow(0, e_off, e) for k, v in g._edge_frame.items()}
    if store_ids:
        cols[EID] = torch.arange(e_off, e_off + e, dtype=g.idtype, device=g.device)
    return Graph(sub, g.canonical_etypes[0], False, frames, Frame(e, g.device, "edge", cols))
