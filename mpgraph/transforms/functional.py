"""Functional graph transforms: DGL's ``dgl.transforms.functional`` and ``dgl.subgraph``.

Every function returns a **new** graph (the input graph, its structure and its
feature mappings are never modified) with the input's ``idtype`` and device.
Features are carried over as DGL carries them: node features are shared
(same tensors) when nodes are kept, gathered when nodes are selected or
reordered; edge features likewise. Where a function selects or reorders
nodes/edges and ``store_ids`` is True, the original IDs are stored as
``ndata[mpgraph.NID]`` / ``edata[mpgraph.EID]`` (both ``'_ID'``) in ``idtype``.

All work is vectorised torch code (no Python loop per node or edge), so it
runs on the graph's device. The few exceptions call SciPy or METIS on the CPU
(``reorder_graph`` with ``'rcmk'``/``'metis'``) and say so.

Blocks (message-flow graphs) are rejected with :class:`~mpgraph.DGLError`
where DGL rejects them; uni-bipartite graphs (one relation between two node
types) are handled where DGL handles them, with node-ID arguments given as
``{ntype: ids}``.

Graphs with several node or edge types (:class:`~mpgraph.heterograph.HeteroGraph`)
are accepted by ``add_self_loop``, ``remove_self_loop`` (one relation, named by
``etype``), ``to_simple``, ``to_bidirected``, ``add_reverse_edges``,
``reverse`` and ``compact_graphs``, which work relation by relation as DGL's
do; every other function here raises :class:`~mpgraph.DGLError` naming itself
for them.
"""

import numpy as np
import torch

from .._index import Index
from ..base import EID, NID, DGLError, DGLTypeError
from ..frame import Frame
from ..graph import Graph
from ..heterograph import HeteroGraph

__all__ = [
    "add_self_loop", "remove_self_loop", "to_simple", "to_bidirected", "add_reverse_edges", "reverse",
    "node_subgraph", "edge_subgraph", "in_subgraph", "out_subgraph", "khop_in_subgraph", "khop_out_subgraph",
    "line_graph", "khop_graph", "reorder_graph", "compact_graphs", "random_walk_pe", "lap_pe", "laplacian_pe",
]

_I64 = torch.int64


# ----------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------
def _check_graph(g, what):
    if isinstance(g, HeteroGraph):
        raise DGLTypeError(f"{what} does not support graphs with several node or edge types; got a "
                           f"{type(g).__name__} with the relations {g.canonical_etypes}. Apply {what} to one "
                           "relation's graph (mpgraph.edge_type_subgraph(g, [etype])) or to "
                           "mpgraph.to_homogeneous(g)")
    if not isinstance(g, Graph):
        raise DGLTypeError(f"{what} expected an mpgraph graph, got {type(g).__name__}; "
                           "build one with mpgraph.graph((src, dst))")


def _reject_block(g, what):
    _check_graph(g, what)
    if g.is_block:
        raise DGLError(f"{what} expected a graph, got a block (message-flow graph); apply {what} to the "
                       "graph before sampling blocks from it")


def _require_homogeneous(g, what):
    _reject_block(g, what)
    if g._bipartite:
        raise DGLError(f"{what} expected a homogeneous graph (one node type), got a uni-bipartite graph with "
                       f"node types {g.ntypes}")


def _check_bool(value, name, what):
    if not isinstance(value, bool):
        raise DGLTypeError(f"{what} expected {name} to be True or False, got {value!r}")


def _check_int(value, name, what, low=0):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise DGLError(f"{what} expected {name} to be an int >= {low}, got {value!r}")
    return int(value)


def _as_ids(g, ids, n, what, kind="node", allow_mask=True):
    """User node/edge IDs as an int64 tensor on ``g.device``, checked against ``[0, n)``.

    Accepts an int, a sequence, a numpy array or an integer tensor; with
    ``allow_mask`` also a bool tensor of ``n`` elements (the selected rows).
    """
    if isinstance(ids, bool):
        raise DGLTypeError(f"{what} expected {kind} IDs as int, sequence or integer tensor, got bool")
    if isinstance(ids, torch.Tensor):
        if ids.device != g.device:
            raise DGLError(f"{what} expected {kind} IDs on {g.device} (the graph's device), got a tensor on "
                           f"{ids.device}")
        if ids.dtype == torch.bool:
            if not allow_mask:
                raise DGLTypeError(f"{what} expected integer {kind} IDs, got a bool tensor; "
                                   "use mask.nonzero().squeeze(1)")
            if ids.numel() != n:
                raise DGLError(f"{what} expected a bool mask of {n} elements (one per {kind}), got {ids.numel()}")
            return ids.reshape(-1).nonzero().squeeze(1)
        if ids.is_floating_point() or ids.is_complex():
            raise DGLTypeError(f"{what} expected integer {kind} IDs, got dtype {ids.dtype}")
        t = ids.reshape(-1).to(_I64)
    else:
        arr = np.asarray(ids)
        if arr.size == 0:
            arr = arr.astype(np.int64)
        if not np.issubdtype(arr.dtype, np.integer):
            raise DGLTypeError(f"{what} expected integer {kind} IDs, got {arr.dtype} values ({ids!r})")
        t = torch.as_tensor(arr.astype(np.int64).reshape(-1), device=g.device)
    if t.numel():
        lo, hi = int(t.min()), int(t.max())
        if lo < 0 or hi >= n:
            raise DGLError(f"{what} expected {kind} IDs in [0, {n}), got {lo if lo < 0 else hi}; "
                           f"the graph has {n} {kind}s")
    return t


def _per_type_ids(g, nodes, what, allow_mask=True):
    """``{ntype: int64 ids}`` from ``nodes`` (IDs for a homogeneous graph, a dict otherwise)."""
    if isinstance(nodes, dict):
        out = {}
        for ntype, ids in nodes.items():
            if ntype not in g.ntypes:
                raise DGLError(f"{what} expected node types among {g.ntypes}, got {ntype!r}")
            out[ntype] = _as_ids(g, ids, g.num_nodes(ntype), what, f"{ntype!r} node", allow_mask)
        return out, True
    if g._bipartite:
        raise DGLError(f"{what} expected a dict {{ntype: ids}} for a graph with node types {g.ntypes}, "
                       f"got {type(nodes).__name__}")
    return {g.ntypes[0]: _as_ids(g, nodes, g.num_nodes(), what, "node", allow_mask)}, False


def _edge_ids_arg(g, edges, what):
    """Edge IDs (int64) from IDs, a bool mask or ``{etype: ids}``."""
    if isinstance(edges, dict):
        if len(edges) != 1:
            raise DGLError(f"{what} expected one edge type in the dict (the graph has {g.canonical_etypes}), "
                           f"got {list(edges)}")
        (etype, edges), = edges.items()
        g.to_canonical_etype(etype)
    return _as_ids(g, edges, g.num_edges(), what, "edge")


def _gather_rows(indptr, values, rows):
    """Concatenate ``values[indptr[r]:indptr[r + 1]]`` for every ``r`` in ``rows`` (int64)."""
    starts = indptr[rows]
    counts = indptr[rows + 1] - starts
    total = int(counts.sum()) if counts.numel() else 0
    if total == 0:
        return torch.zeros(0, dtype=_I64, device=indptr.device)
    shift = torch.repeat_interleave(starts - (torch.cumsum(counts, 0) - counts), counts, output_size=total)
    return values[torch.arange(total, device=indptr.device) + shift]


def _first_appearance(x):
    """Distinct values of ``x`` in order of first appearance, and each element's rank among them."""
    n = x.numel()
    if n == 0:
        return x, x
    uniq, inv = torch.unique(x, return_inverse=True)
    first = torch.full((uniq.numel(),), n, dtype=_I64, device=x.device)
    first.scatter_reduce_(0, inv, torch.arange(n, device=x.device), reduce="amin")
    order = torch.argsort(first)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel(), device=x.device)
    return uniq[order], rank[inv]


def _positions(ids, n, what):
    """``pos: (n,)`` with ``pos[ids[i]] = i`` and -1 elsewhere; duplicates in ``ids`` are an error."""
    pos = torch.full((n,), -1, dtype=_I64, device=ids.device)
    arange = torch.arange(ids.numel(), device=ids.device)
    pos[ids] = arange
    if ids.numel() and bool((pos[ids] != arange).any()):
        dup = int(ids[(pos[ids] != arange).nonzero()[0, 0]])
        raise DGLError(f"{what} expected distinct node IDs, got node {dup} more than once")
    return pos


def _accum_dtype(dtype):
    """Accumulation dtype of sums (fp32 for fp16/bf16, as in the design's precision rules)."""
    if dtype in (torch.float16, torch.bfloat16):
        return torch.float32
    return dtype


def _scatter_reduce_rows(values, index, n, how):
    """Reduce rows of ``values: (E, *)`` into ``(n, *)`` by ``index: (E,)``; empty rows get 0."""
    shape = (n,) + tuple(values.shape[1:])
    if how in ("sum", "mean"):
        acc = _accum_dtype(values.dtype) if values.is_floating_point() else torch.int64
        out = torch.zeros(shape, dtype=acc, device=values.device).index_add_(0, index, values.to(acc))
        if how == "mean":
            cnt = torch.bincount(index, minlength=n).clamp_(min=1).reshape((n,) + (1,) * (values.dim() - 1))
            out = out / cnt.to(out.dtype if out.is_floating_point() else torch.float64)
        return out.to(values.dtype)
    reduce = {"max": "amax", "min": "amin"}[how]
    idx = index.reshape((-1,) + (1,) * (values.dim() - 1)).expand_as(values)
    out = torch.zeros(shape, dtype=values.dtype, device=values.device)
    return out.scatter_reduce_(0, idx, values, reduce=reduce, include_self=False)


def _new_graph(g, src, dst, num_src, num_dst, node_frames=None, edge_frame=None, canonical_etype=None,
               is_block=False):
    """Graph with edges ``(src[k], dst[k])`` (int64 on ``g.device``) in ``g``'s idtype."""
    idtype = g.idtype
    index = Index.from_coo(src.to(idtype), dst.to(idtype), num_src, num_dst)
    return Graph(index, canonical_etype or g.canonical_etypes[0], is_block, node_frames, edge_frame)


def _shared_node_frames(g):
    """New mappings over ``g``'s node feature tensors (one per node set)."""
    return [f.clone() for f in g._node_frames]


def _empty_node_frames(g, counts=None):
    counts = counts or [f.num_rows for f in g._node_frames]
    return [Frame(n, g.device, "node") for n in counts]


def _sub_frame(frame, rows, store_ids, idtype, key):
    """Rows ``rows`` (int64) of ``frame``, with the original IDs under ``key`` when ``store_ids``."""
    sub = frame.subframe(rows)
    if store_ids:
        sub[key] = rows.to(idtype)
    return sub


def _maybe_to(g, device):
    return g if device is None else g.to(device)


# ----------------------------------------------------------------------
# graphs with several types: relation by relation
# ----------------------------------------------------------------------
def _is_typed(g):
    return isinstance(g, HeteroGraph)


def _typed_graph(g, what):
    if g.is_block:
        raise DGLError(f"{what} expected a graph, got a typed block (message-flow graph); apply {what} to the "
                       "graph before sampling blocks from it")
    return g


def _same_type_relation(g, etype, what):
    """The canonical relation named by ``etype``; it must join one node type to itself."""
    try:
        cet = g.to_canonical_etype(etype)
    except DGLError as err:
        raise type(err)(f"{what}: {err}") from err
    if cet[0] != cet[2]:
        raise DGLError(f"{what} expected a relation between one node type (srctype == dsttype), got the "
                       f"uni-bipartite relation {cet}; pass etype= naming such a relation")
    return cet


def _kept(g, cet, copy_edata=True):
    """Relation ``cet`` of ``g`` unchanged: its Index and (a new mapping over) its edge features."""
    index = g._indexes[cet]
    frame = g.edges[cet].data.clone() if copy_edata else Frame(index.num_edges, g.device, "edge")
    return index, frame


def _typed_rebuild(g, relations, copy_ndata=True):
    """HeteroGraph with ``g``'s node types and counts and ``relations = {cet: (Index, edge Frame)}``."""
    if copy_ndata:
        node_frames = {nt: g.nodes[nt].data.clone() for nt in g.ntypes}
    else:
        node_frames = {}
    return HeteroGraph({cet: ix for cet, (ix, _) in relations.items()}, {nt: g.num_nodes(nt) for nt in g.ntypes},
                       node_frames, {cet: f for cet, (_, f) in relations.items()}, g.idtype, g.device)


def _typed_add_self_loop(g, edge_feat_names, fill_data, etype):
    what = "add_self_loop"
    _typed_graph(g, what)
    cet = _same_type_relation(g, etype, what)
    res = add_self_loop(g[cet], edge_feat_names, fill_data)
    relations = {c: _kept(g, c) for c in g.canonical_etypes}
    relations[cet] = (res._index, res._edge_frame)
    return _typed_rebuild(g, relations)


def _typed_remove_self_loop(g, etype):
    what = "remove_self_loop"
    _typed_graph(g, what)
    cet = _same_type_relation(g, etype, what)
    index = g._indexes[cet]
    loop = index.src64 == index.dst64
    kept = (~loop).nonzero().squeeze(1)
    relations = {c: _kept(g, c) for c in g.canonical_etypes}
    relations[cet] = (Index.from_coo(index.src[kept], index.dst[kept], index.num_src, index.num_dst),
                      g.edges[cet].data.subframe(kept))
    out = _typed_rebuild(g, relations)
    if g._batch_num_nodes is not None:
        be = g.batch_num_edges(cet)
        seg = torch.searchsorted(torch.cumsum(be, 0), loop.nonzero().squeeze(1), right=True)
        out.set_batch_num_nodes({nt: g.batch_num_nodes(nt) for nt in g.ntypes})
        counts = {c: g.batch_num_edges(c) for c in g.canonical_etypes}
        counts[cet] = be - torch.bincount(seg, minlength=be.numel())
        out.set_batch_num_edges(counts)
    return out


def _typed_to_simple(g, return_counts, writeback_mapping, copy_ndata, copy_edata, aggregator):
    _typed_graph(g, "to_simple")
    relations, mappings = {}, {}
    for cet in g.canonical_etypes:
        res, mapping = to_simple(g[cet], return_counts, True, False, copy_edata, aggregator)
        relations[cet] = (res._index, res._edge_frame)
        mappings[cet] = mapping
    out = _typed_rebuild(g, relations, copy_ndata)
    return (out, mappings) if writeback_mapping else out


def _typed_to_bidirected(g, copy_ndata):
    what = "to_bidirected"
    _typed_graph(g, what)
    bad = [cet for cet in g.canonical_etypes if cet[0] != cet[2]]
    if bad:
        raise DGLError(f"{what} expected every relation to join one node type to itself, got the uni-bipartite "
                       f"relations {bad}; select the others with mpgraph.edge_type_subgraph")
    relations = {}
    for cet in g.canonical_etypes:
        res = to_bidirected(g[cet])
        relations[cet] = (res._index, res._edge_frame)
    return _typed_rebuild(g, relations, copy_ndata)


def _typed_add_reverse_edges(g, copy_ndata, copy_edata, ignore_bipartite, exclude_self):
    what = "add_reverse_edges"
    _typed_graph(g, what)
    relations = {}
    for cet in g.canonical_etypes:
        if cet[0] != cet[2]:
            if not ignore_bipartite:
                raise DGLError(f"{what} expected relations between one node type, got the uni-bipartite relation "
                               f"{cet}; pass ignore_bipartite=True to keep such relations unchanged, or use "
                               "mpgraph.transforms.AddReverse, which adds a 'rev_' relation")
            relations[cet] = _kept(g, cet, copy_edata)
            continue
        res = add_reverse_edges(g[cet], copy_ndata=False, copy_edata=copy_edata, exclude_self=exclude_self)
        relations[cet] = (res._index, res._edge_frame)
    return _typed_rebuild(g, relations, copy_ndata)


def _typed_reverse(g, copy_ndata, copy_edata):
    _typed_graph(g, "reverse")
    relations = {}
    for cet in g.canonical_etypes:
        s, e, d = cet
        index, frame = _kept(g, cet, copy_edata)
        relations[(d, e, s)] = (index.reverse(), frame)
    out = _typed_rebuild(g, relations, copy_ndata)
    if g._batch_num_nodes is not None:
        out.set_batch_num_nodes({nt: g.batch_num_nodes(nt) for nt in g.ntypes})
        out.set_batch_num_edges({(d, e, s): g.batch_num_edges((s, e, d)) for s, e, d in g.canonical_etypes})
    return out


def _typed_compact_graphs(graphs, always_preserve, copy_ndata, copy_edata, single):
    what = "compact_graphs"
    g0 = graphs[0]
    for i, g in enumerate(graphs):
        if not isinstance(g, HeteroGraph):
            raise DGLTypeError(f"{what} expected graphs of one kind, got a HeteroGraph and a {type(g).__name__} "
                               f"(graphs[{i}])")
        _typed_graph(g, what)
        if g.ntypes != g0.ntypes or any(g.num_nodes(nt) != g0.num_nodes(nt) for nt in g0.ntypes):
            raise DGLError(f"{what} expected graphs with the same node types and counts "
                           f"({ {nt: g0.num_nodes(nt) for nt in g0.ntypes} }), got "
                           f"{ {nt: g.num_nodes(nt) for nt in g.ntypes} } at graphs[{i}]")
        if g.idtype != g0.idtype or g.device != g0.device:
            raise DGLError(f"{what} expected graphs with the same idtype and device ({g0.idtype}, {g0.device}), "
                           f"got ({g.idtype}, {g.device}) at graphs[{i}]")
    preserve = {}
    if always_preserve is not None:
        if not isinstance(always_preserve, dict):
            if len(g0.ntypes) != 1:
                raise DGLError(f"{what} expected always_preserve as a dict {{ntype: ids}} for node types "
                               f"{g0.ntypes}, got {type(always_preserve).__name__}")
            always_preserve = {g0.ntypes[0]: always_preserve}
        for nt, ids in always_preserve.items():
            if nt not in g0.ntypes:
                raise DGLError(f"{what} expected node types among {g0.ntypes} in always_preserve, got {nt!r}")
            preserve[nt] = _as_ids(g0, ids, g0.num_nodes(nt), what, f"{nt!r} node", allow_mask=False)
    # per node type, the arrays whose first appearances order the kept nodes: always_preserve, then for each
    # graph and each relation (canonical order) its sources, then its destinations
    parts = {nt: [preserve[nt]] if nt in preserve else [] for nt in g0.ntypes}
    slots = []
    for g in graphs:
        slot = {}
        for cet in g.canonical_etypes:
            s, _, d = cet
            slot[cet] = (len(parts[s]), len(parts[d]) + (s == d))
            parts[s].append(g._indexes[cet].src64)
            parts[d].append(g._indexes[cet].dst64)
        slots.append(slot)
    induced, new_ids = {}, {}
    empty = torch.zeros(0, dtype=_I64, device=g0.device)
    for nt, arrays in parts.items():
        nodes, new = _first_appearance(torch.cat(arrays) if arrays else empty)
        induced[nt] = nodes
        new_ids[nt] = list(torch.split(new, [a.numel() for a in arrays]))
    idtype = g0.idtype
    out = []
    for g, slot in zip(graphs, slots):
        node_frames = {}
        for nt in g.ntypes:
            rows = induced[nt]
            frame = g.nodes[nt].data.subframe(rows) if copy_ndata else Frame(rows.numel(), g.device, "node")
            frame[NID] = rows.to(idtype)
            node_frames[nt] = frame
        indexes, edge_frames = {}, {}
        for cet, (si, di) in slot.items():
            s, _, d = cet
            indexes[cet] = Index.from_coo(new_ids[s][si].to(idtype), new_ids[d][di].to(idtype),
                                          induced[s].numel(), induced[d].numel())
            edge_frames[cet] = g.edges[cet].data.clone() if copy_edata else None
        out.append(HeteroGraph(indexes, {nt: induced[nt].numel() for nt in g.ntypes}, node_frames, edge_frames,
                               idtype, g.device))
    return out[0] if single else out


# ----------------------------------------------------------------------
# self-loops, simple graphs, reverse edges
# ----------------------------------------------------------------------
_FILL_AGGREGATORS = ("sum", "mean", "max", "min")


def add_self_loop(g, edge_feat_names=None, fill_data=1.0, etype=None):
    """Add a self-loop to every node and return the new graph.

    The ``N`` self-loops are appended after the existing edges: self-loop of
    node ``i`` has edge ID ``E + i``. Existing self-loops are kept (call
    :func:`remove_self_loop` first for exactly one loop per node). Node
    features are shared with ``g``; existing edges keep their features.

    On a :class:`~mpgraph.heterograph.HeteroGraph` the self-loops go to the
    relation ``etype`` (which must join one node type to itself); the other
    relations are unchanged.

    Parameters
    ----------
    g : Graph or HeteroGraph
        A homogeneous graph (not a block, not uni-bipartite), or a graph with
        several types.
    edge_feat_names : list of str, optional
        Edge features whose self-loop rows are set from ``fill_data``; the
        self-loop rows of other edge features are zero (the frame's
        initializer). Default ``None``: every edge feature.
    fill_data : int, float or str, optional
        Default ``1.0``. A number fills the self-loop rows with it (cast to
        each feature's dtype). ``'sum'``, ``'mean'``, ``'max'`` or ``'min'``
        aggregates the feature over each node's incoming edges (nodes without
        in-edges get 0; sums accumulate in fp32 for fp16/bf16).
    etype : str or (str, str, str), optional
        The edge type; required on a graph with several relations.

    Returns
    -------
    Graph or HeteroGraph
        ``N + E`` edges (in relation ``etype``); batch information is
        discarded, as in DGL.

    Raises
    ------
    DGLError
        For a block or a uni-bipartite graph, an unknown feature name or an
        unknown ``fill_data`` string; an unknown or missing ``etype``, or one
        joining two node types, on a graph with several types.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.transforms import add_self_loop
    >>> g = dgl.graph(([0, 0, 2], [2, 1, 0]))
    >>> g.edata['he'] = torch.tensor([[1.], [2.], [3.]])
    >>> sg = add_self_loop(g, fill_data='sum')
    >>> sg.edges()
    (tensor([0, 0, 2, 0, 1, 2]), tensor([2, 1, 0, 0, 1, 2]))
    >>> sg.edata['he'].squeeze(1)
    tensor([1., 2., 3., 3., 2., 1.])
    >>> add_self_loop(g).edata['he'].squeeze(1)
    tensor([1., 2., 3., 1., 1., 1.])
    >>> hg = dgl.heterograph({('user', 'follows', 'user'): ([0], [1]), ('user', 'plays', 'game'): ([1], [0])})
    >>> add_self_loop(hg, etype='follows').edges(etype='follows')
    (tensor([0, 0, 1]), tensor([1, 0, 1]))
    """
    if _is_typed(g):
        return _typed_add_self_loop(g, edge_feat_names, fill_data, etype)
    _reject_block(g, "add_self_loop")
    etype = g.to_canonical_etype(etype)
    if etype[0] != etype[2]:
        raise DGLError(f"add_self_loop expected a relation between one node type, got the uni-bipartite relation "
                       f"{etype}")
    if isinstance(fill_data, str):
        if fill_data not in _FILL_AGGREGATORS:
            raise DGLError(f"add_self_loop expected fill_data to be a number or one of {_FILL_AGGREGATORS}, "
                           f"got {fill_data!r}")
    elif isinstance(fill_data, bool) or not isinstance(fill_data, (int, float, np.integer, np.floating)):
        raise DGLTypeError(f"add_self_loop expected fill_data to be an int, float or str, got "
                           f"{type(fill_data).__name__}")
    names = list(g.edata.keys()) if edge_feat_names is None else list(edge_feat_names)
    missing = [k for k in names if k not in g.edata]
    if missing:
        raise DGLError(f"add_self_loop expected edge_feat_names among the edge features {list(g.edata.keys())}, "
                       f"got {missing}")
    N = g.num_nodes()
    dst = g._index.dst64
    data = {}
    for name in names:
        feat = g.edata[name]
        if isinstance(fill_data, str):
            data[name] = _scatter_reduce_rows(feat, dst, N, fill_data)
        else:
            data[name] = torch.as_tensor(fill_data).to(dtype=feat.dtype, device=feat.device).expand(
                (N,) + tuple(feat.shape[1:])).clone()
    loops = torch.arange(N, device=g.device)
    edge_frame = g._edge_frame.extend(N, data)
    return _new_graph(g, torch.cat([g._index.src64, loops]), torch.cat([dst, loops]), N, N,
                      _shared_node_frames(g), edge_frame)


def remove_self_loop(g, etype=None):
    """Remove every self-loop and return the new graph.

    Remaining edges keep their relative order and features (no ``EID`` is
    stored, as in DGL). Batch information is preserved: the per-graph edge
    counts are reduced by the self-loops each graph lost.

    On a :class:`~mpgraph.heterograph.HeteroGraph` the self-loops of relation
    ``etype`` (joining one node type to itself) are removed; the other
    relations are unchanged, and per-graph edge counts of a batch are kept.

    Parameters
    ----------
    g : Graph or HeteroGraph
        A homogeneous graph (not a block, not uni-bipartite), or a graph with
        several types.
    etype : str or (str, str, str), optional
        The edge type; required on a graph with several relations.

    Returns
    -------
    Graph or HeteroGraph

    Raises
    ------
    DGLError
        For a block or a uni-bipartite graph; an unknown or missing ``etype``,
        or one joining two node types, on a graph with several types.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.transforms import remove_self_loop
    >>> g = dgl.graph(([0, 0, 0, 1], [1, 0, 0, 2]))
    >>> g.edata['he'] = torch.tensor([0., 1., 2., 3.])
    >>> ng = remove_self_loop(g)
    >>> ng.edges(), ng.edata['he']
    ((tensor([0, 1]), tensor([1, 2])), tensor([0., 3.]))
    """
    if _is_typed(g):
        return _typed_remove_self_loop(g, etype)
    _reject_block(g, "remove_self_loop")
    etype = g.to_canonical_etype(etype)
    if etype[0] != etype[2]:
        raise DGLError(f"remove_self_loop expected a relation between one node type, got the uni-bipartite "
                       f"relation {etype}")
    src, dst = g._index.src64, g._index.dst64
    loop = src == dst
    kept = (~loop).nonzero().squeeze(1)
    N = g.num_nodes()
    out = _new_graph(g, src[kept], dst[kept], N, N, _shared_node_frames(g), g._edge_frame.subframe(kept))
    if g.batch_size > 1:
        be = g.batch_num_edges()
        seg = torch.searchsorted(torch.cumsum(be, 0), loop.nonzero().squeeze(1), right=True)
        out.set_batch_num_nodes(g.batch_num_nodes())
        out.set_batch_num_edges(be - torch.bincount(seg, minlength=be.numel()))
    return out


_AGGREGATORS = ("arbitrary", "sum", "mean")


def to_simple(g, return_counts="count", writeback_mapping=False, copy_ndata=True, copy_edata=False,
              aggregator="arbitrary"):
    """Merge parallel edges and return the simple graph.

    The result has one edge per distinct ``(u, v)`` pair, **sorted by
    (source, destination)** as in DGL's CPU implementation.

    On a :class:`~mpgraph.heterograph.HeteroGraph` every relation is
    simplified on its own, and the mapping is a dict ``{canonical etype: (E,)}``.

    Parameters
    ----------
    g : Graph or HeteroGraph
        A graph (homogeneous, uni-bipartite or with several types; not a block).
    return_counts : str or None, optional
        Edge feature that receives the number of merged edges (``idtype``);
        ``None`` stores nothing. Default ``'count'``.
    writeback_mapping : bool, optional
        Also return ``mapping: (E,)`` with the new edge ID of every input edge.
    copy_ndata : bool, optional
        Share the node features (default True).
    copy_edata : bool, optional
        Carry edge features, merged by ``aggregator`` (default False).
    aggregator : str, optional
        ``'arbitrary'`` (the feature of the first merged edge, lowest ID),
        ``'sum'`` or ``'mean'`` (sums accumulate in fp32 for fp16/bf16).

    Returns
    -------
    Graph or HeteroGraph, or (graph, mapping) when ``writeback_mapping``.

    Raises
    ------
    DGLError
        For a block or an unknown ``aggregator``.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.transforms import to_simple
    >>> g = dgl.graph(([0, 1, 2, 1], [1, 2, 0, 2]))
    >>> g.edata['h'] = torch.tensor([3., 4., 5., 6.])
    >>> sg, wm = to_simple(g, writeback_mapping=True, copy_edata=True, aggregator='sum')
    >>> sg.edges(), sg.edata['count'], sg.edata['h'], wm
    ((tensor([0, 1, 2]), tensor([1, 2, 0])), tensor([1, 2, 1]), tensor([ 3., 10.,  5.]), tensor([0, 1, 2, 1]))
    """
    if aggregator not in _AGGREGATORS:
        raise DGLError(f"to_simple expected aggregator in {_AGGREGATORS}, got {aggregator!r}")
    if _is_typed(g):
        return _typed_to_simple(g, return_counts, writeback_mapping, copy_ndata, copy_edata, aggregator)
    _reject_block(g, "to_simple")
    index = g._index
    ns, nd = index.num_src, index.num_dst
    key = index.src64 * max(nd, 1) + index.dst64
    uniq, inv, counts = torch.unique(key, return_inverse=True, return_counts=True)
    U = uniq.numel()
    if copy_edata:
        if aggregator == "arbitrary":
            first = torch.full((U,), index.num_edges, dtype=_I64, device=g.device)
            first.scatter_reduce_(0, inv, torch.arange(index.num_edges, device=g.device), reduce="amin")
            edge_frame = g._edge_frame.subframe(first)
        else:
            cols = {k: _scatter_reduce_rows(v, inv, U, aggregator) for k, v in g.edata.items()}
            edge_frame = Frame(U, g.device, "edge", cols)
    else:
        edge_frame = Frame(U, g.device, "edge")
    if return_counts is not None:
        edge_frame[return_counts] = counts.to(g.idtype)
    node_frames = _shared_node_frames(g) if copy_ndata else None
    sg = _new_graph(g, uniq // max(nd, 1), uniq % max(nd, 1), ns, nd, node_frames, edge_frame)
    if writeback_mapping:
        return sg, inv.to(g.idtype)
    return sg


def to_bidirected(g, copy_ndata=False, readonly=None):
    """The simple graph with an edge ``(v, u)`` for every edge ``(u, v)`` and vice versa.

    Parallel edges are merged; edges are sorted by (source, destination).
    Edge features are dropped (their rows no longer match one edge each).

    On a :class:`~mpgraph.heterograph.HeteroGraph` every relation (each must
    join one node type to itself) is made bidirected on its own.

    Parameters
    ----------
    g : Graph or HeteroGraph
        A homogeneous graph (not a block, not uni-bipartite), or a graph with
        several types whose relations each join one type to itself.
    copy_ndata : bool, optional
        Share the node features (default False, as in DGL).
    readonly : bool, optional
        Deprecated in DGL and ignored.

    Returns
    -------
    Graph

    Raises
    ------
    DGLError
        For a block or a uni-bipartite graph.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import to_bidirected
    >>> g = dgl.graph(([0, 1, 2, 0], [1, 2, 0, 1]))
    >>> to_bidirected(g).edges()
    (tensor([0, 0, 1, 1, 2, 2]), tensor([1, 2, 0, 2, 0, 1]))
    """
    if _is_typed(g):
        return _typed_to_bidirected(g, copy_ndata)
    _require_homogeneous(g, "to_bidirected")
    src, dst = g._index.src64, g._index.dst64
    N = g.num_nodes()
    key = torch.unique(torch.cat([src * N + dst, dst * N + src]))
    node_frames = _shared_node_frames(g) if copy_ndata else None
    return _new_graph(g, key // max(N, 1), key % max(N, 1), N, N, node_frames)


def add_reverse_edges(g, readonly=None, copy_ndata=True, copy_edata=False, ignore_bipartite=False,
                      exclude_self=True):
    """Append a reverse edge ``(v, u)`` for every edge ``(u, v)`` and return the new graph.

    Edge ``E + j`` is the reverse of the ``j``-th non-self-loop edge (of edge
    ``j`` when ``exclude_self`` is False). Parallel edges may result; use
    :func:`to_bidirected` for a simple graph.

    On a :class:`~mpgraph.heterograph.HeteroGraph` (as DGL) each relation
    joining one node type to itself gets its reverse edges appended in the
    same relation; a relation between two types is an error, or is kept
    unchanged with ``ignore_bipartite``. (The transform
    :class:`~mpgraph.transforms.AddReverse` adds ``'rev_<etype>'`` relations
    instead.)

    Parameters
    ----------
    g : Graph or HeteroGraph
        A homogeneous graph; a uni-bipartite graph only with ``ignore_bipartite``
        (then returned with its edges unchanged); a graph with several types.
    readonly : bool, optional
        Deprecated in DGL and ignored.
    copy_ndata : bool, optional
        Share the node features (default True).
    copy_edata : bool, optional
        Give reverse edges the features of their forward edges; if False
        (default) the result has no edge features.
    ignore_bipartite : bool, optional
        Accept a uni-bipartite graph (default False: error).
    exclude_self : bool, optional
        Add no reverse edge for self-loops (default True).

    Returns
    -------
    Graph

    Raises
    ------
    DGLError
        For a block, or a uni-bipartite graph without ``ignore_bipartite``.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.transforms import add_reverse_edges
    >>> g = dgl.graph(([0, 0], [0, 1]))
    >>> g.edata['h'] = torch.tensor([1., 2.])
    >>> rg = add_reverse_edges(g, copy_edata=True)
    >>> rg.edges(), rg.edata['h']
    ((tensor([0, 0, 1]), tensor([0, 1, 0])), tensor([1., 2., 2.]))
    """
    if _is_typed(g):
        return _typed_add_reverse_edges(g, copy_ndata, copy_edata, ignore_bipartite, exclude_self)
    _reject_block(g, "add_reverse_edges")
    index = g._index
    src, dst = index.src64, index.dst64
    node_frames = _shared_node_frames(g) if copy_ndata else None
    if g._bipartite:
        if not ignore_bipartite:
            raise DGLError(f"add_reverse_edges expected a homogeneous graph, got the uni-bipartite relation "
                           f"{g.canonical_etypes[0]}; pass ignore_bipartite=True to keep it unchanged")
        edge_frame = g._edge_frame.clone() if copy_edata else None
        return _new_graph(g, src, dst, index.num_src, index.num_dst, node_frames, edge_frame)
    eids = torch.arange(index.num_edges, device=g.device)
    rev = (src != dst).nonzero().squeeze(1) if exclude_self else eids
    all_eids = torch.cat([eids, rev])
    edge_frame = g._edge_frame.subframe(all_eids) if copy_edata else None
    N = g.num_nodes()
    return _new_graph(g, torch.cat([src, dst[rev]]), torch.cat([dst, src[rev]]), N, N, node_frames, edge_frame)


def reverse(g, copy_ndata=True, copy_edata=False, *, share_ndata=None, share_edata=None):
    """The graph with every edge reversed; edge ``k`` of the result is edge ``k`` of ``g`` reversed.

    A uni-bipartite relation ``(U, E, V)`` becomes ``(V, E, U)``; on a
    :class:`~mpgraph.heterograph.HeteroGraph` every relation is reversed so,
    and batch counts are kept. The result shares the structure's built sparse
    formats (its CSR is ``g``'s CSC), so nothing is re-sorted.

    Parameters
    ----------
    g : Graph or HeteroGraph
        A graph (not a block).
    copy_ndata : bool, optional
        Share the node features (default True).
    copy_edata : bool, optional
        Share the edge features (default False).
    share_ndata, share_edata : bool, optional
        Old names of ``copy_ndata`` / ``copy_edata``.

    Returns
    -------
    Graph

    Raises
    ------
    DGLError
        For a block.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import reverse
    >>> reverse(dgl.graph(([0, 1, 2], [1, 2, 0]))).edges()
    (tensor([1, 2, 0]), tensor([0, 1, 2]))
    """
    if share_ndata is not None:
        copy_ndata = share_ndata
    if share_edata is not None:
        copy_edata = share_edata
    if _is_typed(g):
        return _typed_reverse(g, copy_ndata, copy_edata)
    _reject_block(g, "reverse")
    srctype, etype, dsttype = g.canonical_etypes[0]
    if copy_ndata:
        node_frames = _shared_node_frames(g)[::-1]
    else:
        node_frames = _empty_node_frames(g)[::-1]
    edge_frame = g._edge_frame.clone() if copy_edata else None
    return Graph(g._index.reverse(), (dsttype, etype, srctype), False, node_frames, edge_frame)


# ----------------------------------------------------------------------
# subgraphs
# ----------------------------------------------------------------------
def _edge_subgraph_impl(g, eids, relabel_nodes, store_ids, is_block=False):
    """Subgraph with edges ``eids`` (int64, in that order)."""
    index = g._index
    idtype = g.idtype
    src, dst = index.src64[eids], index.dst64[eids]
    edge_frame = _sub_frame(g._edge_frame, eids, store_ids, idtype, EID)
    if not relabel_nodes:
        return _new_graph(g, src, dst, index.num_src, index.num_dst, _shared_node_frames(g), edge_frame,
                          is_block=is_block)
    if not g._bipartite:
        nodes, new = _first_appearance(torch.cat([src, dst]))
        m = src.numel()
        frame = _sub_frame(g._node_frames[0], nodes, store_ids, idtype, NID)
        return _new_graph(g, new[:m], new[m:], nodes.numel(), nodes.numel(), [frame], edge_frame)
    src_nodes, new_src = _first_appearance(src)
    dst_nodes, new_dst = _first_appearance(dst)
    frames = [_sub_frame(g._node_frames[0], src_nodes, store_ids, idtype, NID),
              _sub_frame(g._node_frames[1], dst_nodes, store_ids, idtype, NID)]
    return _new_graph(g, new_src, new_dst, src_nodes.numel(), dst_nodes.numel(), frames, edge_frame)


def node_subgraph(graph, nodes, *, relabel_nodes=True, store_ids=True, output_device=None):
    """The subgraph induced on ``nodes``: every edge with both endpoints among them.

    With ``relabel_nodes``, node ``i`` of the subgraph is ``nodes[i]``. Edges
    are ordered as DGL orders them: grouped by source node in the order of
    ``nodes``, then by original edge ID. Node and edge features are gathered.

    Parameters
    ----------
    graph : Graph
        A graph (not a block).
    nodes : int, sequence, Tensor, bool mask, or dict
        Distinct node IDs (or a bool mask over all nodes). For a uni-bipartite
        graph, ``{ntype: ids}``; a missing type selects none of its nodes.
    relabel_nodes : bool, optional
        Keep only ``nodes`` and renumber them (default True). If False, all
        nodes are kept with their IDs and features; only edges are selected.
    store_ids : bool, optional
        Store original IDs as ``edata[EID]`` and, when relabelling,
        ``ndata[NID]`` (default True).
    output_device : torch.device, optional
        Move the result there.

    Returns
    -------
    Graph

    Raises
    ------
    DGLError
        For a block, node IDs out of range, or a node given twice.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.transforms import node_subgraph
    >>> g = dgl.graph(([0, 1, 2, 3, 4], [1, 2, 3, 4, 0]))
    >>> g.ndata['x'] = torch.tensor([10, 11, 12, 13, 14])
    >>> sg = node_subgraph(g, [0, 1, 4])
    >>> sg.edges()
    (tensor([0, 2]), tensor([1, 0]))
    >>> sg.ndata[dgl.NID], sg.edata[dgl.EID], sg.ndata['x']
    (tensor([0, 1, 4]), tensor([0, 4]), tensor([10, 11, 14]))
    """
    what = "node_subgraph"
    _reject_block(graph, what)
    ids, _ = _per_type_ids(graph, nodes, what)
    index = graph._index
    srctype, _, dsttype = graph.canonical_etypes[0]
    empty = torch.zeros(0, dtype=_I64, device=graph.device)
    src_ids, dst_ids = ids.get(srctype, empty), ids.get(dsttype, empty)
    pos_src = _positions(src_ids, index.num_src, what)
    pos_dst = pos_src if not graph._bipartite else _positions(dst_ids, index.num_dst, what)
    src_pos, dst_pos = pos_src[index.src64], pos_dst[index.dst64]
    eids = ((src_pos >= 0) & (dst_pos >= 0)).nonzero().squeeze(1)
    eids = eids[torch.argsort(src_pos[eids], stable=True)]
    idtype = graph.idtype
    edge_frame = _sub_frame(graph._edge_frame, eids, store_ids, idtype, EID)
    if not relabel_nodes:
        sg = _new_graph(graph, index.src64[eids], index.dst64[eids], index.num_src, index.num_dst,
                        _shared_node_frames(graph), edge_frame)
        return _maybe_to(sg, output_device)
    frames = [_sub_frame(graph._node_frames[0], src_ids, store_ids, idtype, NID)]
    if graph._bipartite:
        frames.append(_sub_frame(graph._node_frames[1], dst_ids, store_ids, idtype, NID))
    sg = _new_graph(graph, src_pos[eids], dst_pos[eids], src_ids.numel(), dst_ids.numel(), frames, edge_frame)
    return _maybe_to(sg, output_device)


def edge_subgraph(graph, edges, *, relabel_nodes=True, store_ids=True, output_device=None):
    """The subgraph made of the edges ``edges`` (in that order) and their end nodes.

    With ``relabel_nodes``, the nodes are the end nodes of the selected
    edges, numbered in order of first appearance in ``(src of every selected
    edge, then dst of every selected edge)`` as in DGL (source and destination
    sets separately for a uni-bipartite graph).

    Parameters
    ----------
    graph : Graph
        A graph; a block only with ``relabel_nodes=False`` (the result is a block).
    edges : int, sequence, Tensor, bool mask, or ``{etype: ids}``
        Edge IDs (or a bool mask over all edges).
    relabel_nodes : bool, optional
        Keep only the end nodes and renumber them (default True).
    store_ids : bool, optional
        Store original IDs as ``edata[EID]`` and, when relabelling,
        ``ndata[NID]`` (default True).
    output_device : torch.device, optional
        Move the result there.

    Returns
    -------
    Graph

    Raises
    ------
    DGLError
        For edge IDs out of range, or a block with ``relabel_nodes``.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import edge_subgraph
    >>> g = dgl.graph(([0, 1, 2, 3, 4], [1, 2, 3, 4, 0]))
    >>> sg = edge_subgraph(g, [0, 4])
    >>> sg.edges(), sg.ndata[dgl.NID], sg.edata[dgl.EID]
    ((tensor([0, 1]), tensor([2, 0])), tensor([0, 4, 1]), tensor([0, 4]))
    """
    what = "edge_subgraph"
    _check_graph(graph, what)
    if graph.is_block and relabel_nodes:
        raise DGLError("edge_subgraph expected relabel_nodes=False for a block (its source and destination node "
                       "sets must stay aligned), got relabel_nodes=True")
    eids = _edge_ids_arg(graph, edges, what)
    sg = _edge_subgraph_impl(graph, eids, relabel_nodes, store_ids, is_block=graph.is_block)
    return _maybe_to(sg, output_device)


def _neighbour_subgraph(graph, nodes, relabel_nodes, store_ids, output_device, inbound, what):
    _reject_block(graph, what)
    ids, _ = _per_type_ids(graph, nodes, what)
    srctype, _, dsttype = graph.canonical_etypes[0]
    index = graph._index
    seeds = ids.get(dsttype if inbound else srctype)
    if seeds is None:
        eids = torch.zeros(0, dtype=_I64, device=graph.device)
    else:
        indptr, _, eid = index.csc() if inbound else index.csr()
        eids = _gather_rows(indptr, eid, seeds)
    return _maybe_to(_edge_subgraph_impl(graph, eids, relabel_nodes, store_ids), output_device)


def in_subgraph(graph, nodes, *, relabel_nodes=False, store_ids=True, output_device=None):
    """The subgraph of all in-edges of ``nodes``.

    Edges are grouped by destination in the order of ``nodes``, then by
    original edge ID. With ``relabel_nodes``, nodes are numbered as in
    :func:`edge_subgraph`.

    Parameters
    ----------
    graph : Graph
        A graph (not a block).
    nodes : int, sequence, Tensor or dict
        Destination node IDs; ``{ntype: ids}`` for a uni-bipartite graph.
    relabel_nodes : bool, optional
        Keep only the end nodes of the edges and renumber them (default False).
    store_ids : bool, optional
        Store ``edata[EID]`` (and ``ndata[NID]`` when relabelling); default True.
    output_device : torch.device, optional
        Move the result there.

    Returns
    -------
    Graph

    Raises
    ------
    DGLError
        For a block or node IDs out of range.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import in_subgraph
    >>> g = dgl.graph(([0, 1, 2, 3, 4], [1, 2, 3, 4, 0]))
    >>> sg = in_subgraph(g, [2, 0])
    >>> sg.num_nodes(), sg.edges(), sg.edata[dgl.EID]
    (5, (tensor([1, 4]), tensor([2, 0])), tensor([1, 4]))
    """
    return _neighbour_subgraph(graph, nodes, relabel_nodes, store_ids, output_device, True, "in_subgraph")


def out_subgraph(graph, nodes, *, relabel_nodes=False, store_ids=True, output_device=None):
    """The subgraph of all out-edges of ``nodes`` (see :func:`in_subgraph`).

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import out_subgraph
    >>> g = dgl.graph(([0, 1, 2, 3, 4], [1, 2, 3, 4, 0]))
    >>> sg = out_subgraph(g, [2, 0])
    >>> sg.edges(), sg.edata[dgl.EID]
    ((tensor([2, 0]), tensor([3, 1])), tensor([2, 0]))
    """
    return _neighbour_subgraph(graph, nodes, relabel_nodes, store_ids, output_device, False, "out_subgraph")


def _khop_subgraph(graph, nodes, k, relabel_nodes, store_ids, output_device, inbound, what):
    _reject_block(graph, what)
    k = _check_int(k, "k", what)
    if not isinstance(nodes, dict) and graph._bipartite:
        raise DGLError(f"{what} expected a dict {{ntype: ids}} for a graph with node types {graph.ntypes}, "
                       f"got {type(nodes).__name__}")
    ids, is_mapping = _per_type_ids(graph, nodes, what, allow_mask=False)
    srctype, _, dsttype = graph.canonical_etypes[0]
    index = graph._index
    # BFS over node types: in-edges lead from dsttype to srctype, out-edges the other way.
    frm, to = (dsttype, srctype) if inbound else (srctype, dsttype)
    indptr, nbrs, _ = index.csc() if inbound else index.csr()
    counts = {nt: graph.num_nodes(nt) for nt in graph.ntypes}
    reached = {nt: torch.zeros(counts[nt], dtype=torch.bool, device=graph.device) for nt in graph.ntypes}
    for nt, t in ids.items():
        reached[nt][t] = True
    frontier = ids.get(frm)
    for _ in range(k):
        if frontier is None or frontier.numel() == 0:
            break
        found = _gather_rows(indptr, nbrs, frontier)
        new = torch.zeros(counts[to], dtype=torch.bool, device=graph.device)
        new[found] = True
        new &= ~reached[to]
        reached[to] |= new
        # only a homogeneous relation leads on from the nodes just reached
        frontier = new.nonzero().squeeze(1) if to == frm else None
    k_hop = {nt: reached[nt].nonzero().squeeze(1) for nt in graph.ntypes}
    sg = node_subgraph(graph, k_hop, relabel_nodes=relabel_nodes, store_ids=store_ids,
                       output_device=output_device)
    if not relabel_nodes:
        return sg
    inverse = {}
    for nt, t in ids.items():
        rank = torch.cumsum(reached[nt].to(_I64), 0) - 1
        inverse[nt] = rank[t].to(graph.idtype)
        if output_device is not None:
            inverse[nt] = inverse[nt].to(output_device)
    return sg, (inverse if is_mapping else inverse[graph.ntypes[0]])


def khop_in_subgraph(graph, nodes, k, *, relabel_nodes=True, store_ids=True, output_device=None):
    """The subgraph induced on the nodes that reach ``nodes`` within ``k`` hops.

    The node set (seeds plus all nodes with a path of at most ``k`` edges
    to a seed) is sorted by ID and passed to :func:`node_subgraph`, so the
    subgraph holds *every* edge among these nodes (for ``k = 1`` more than
    :func:`in_subgraph`).

    Parameters
    ----------
    graph : Graph
        A graph (not a block).
    nodes : int, sequence, Tensor or dict
        Seed node IDs; ``{ntype: ids}`` for a uni-bipartite graph.
    k : int
        Number of hops (``>= 0``).
    relabel_nodes : bool, optional
        Renumber the nodes (default True); otherwise all nodes are kept.
    store_ids : bool, optional
        Store ``ndata[NID]`` / ``edata[EID]`` (default True).
    output_device : torch.device, optional
        Move the result there.

    Returns
    -------
    Graph
        The subgraph; with ``relabel_nodes`` a pair ``(subgraph, inverse_indices)``
        where ``inverse_indices`` (``idtype``, a dict when ``nodes`` is one)
        gives the new IDs of the seeds.

    Raises
    ------
    DGLError
        For a block, a negative ``k`` or node IDs out of range.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import khop_in_subgraph
    >>> g = dgl.graph(([1, 1, 2, 3, 4], [0, 2, 0, 4, 2]))
    >>> sg, inv = khop_in_subgraph(g, 0, k=2)
    >>> sg.ndata[dgl.NID], sg.edges(), sg.edata[dgl.EID], inv
    (tensor([0, 1, 2, 4]), (tensor([1, 1, 2, 3]), tensor([0, 2, 0, 2])), tensor([0, 1, 2, 4]), tensor([0]))
    """
    return _khop_subgraph(graph, nodes, k, relabel_nodes, store_ids, output_device, True, "khop_in_subgraph")


def khop_out_subgraph(graph, nodes, k, *, relabel_nodes=True, store_ids=True, output_device=None):
    """The subgraph induced on the nodes reachable from ``nodes`` within ``k`` hops.

    See :func:`khop_in_subgraph`; here paths leave the seeds along out-edges.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import khop_out_subgraph
    >>> g = dgl.graph(([0, 2, 0, 4, 2], [1, 1, 2, 3, 4]))
    >>> sg, inv = khop_out_subgraph(g, 0, k=2)
    >>> sg.edges(), sg.edata[dgl.EID]
    ((tensor([0, 0, 2, 2]), tensor([1, 2, 1, 3])), tensor([0, 2, 1, 4]))
    """
    return _khop_subgraph(graph, nodes, k, relabel_nodes, store_ids, output_device, False, "khop_out_subgraph")


# ----------------------------------------------------------------------
# derived graphs
# ----------------------------------------------------------------------
def line_graph(g, backtracking=True, shared=False):
    """The line graph: one node per edge of ``g``, an edge ``e1 -> e2`` when ``e1 = (u, v)``, ``e2 = (v, w)``.

    Node ``k`` of the result is edge ``k`` of ``g``. Edges are sorted by
    ``(e1, e2)``; an edge is never linked to itself (a self-loop gives no
    line-graph self-loop), as in DGL.

    Parameters
    ----------
    g : Graph
        A homogeneous graph (not a block, not uni-bipartite).
    backtracking : bool, optional
        If False, ``(u, v)`` is not linked to ``(v, u)`` (default True).
    shared : bool, optional
        Use the edge features of ``g`` as node features of the result
        (shared tensors); default False.

    Returns
    -------
    Graph

    Raises
    ------
    DGLError
        For a block or a uni-bipartite graph.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import line_graph
    >>> g = dgl.graph(([0, 1, 1, 2, 2], [2, 0, 2, 0, 1]))
    >>> line_graph(g).edges()
    (tensor([0, 0, 1, 2, 2, 3, 4, 4]), tensor([3, 4, 0, 3, 4, 0, 1, 2]))
    >>> line_graph(g, backtracking=False).edges()
    (tensor([0, 1, 2, 4]), tensor([4, 0, 3, 1]))
    """
    _require_homogeneous(g, "line_graph")
    index = g._index
    E = index.num_edges
    src, dst = index.src64, index.dst64
    indptr, _, out_eid = index.csr()
    e1 = torch.repeat_interleave(torch.arange(E, device=g.device), indptr[dst + 1] - indptr[dst])
    e2 = _gather_rows(indptr, out_eid, dst)
    keep = e1 != e2
    if not backtracking:
        keep &= dst[e2] != src[e1]
    node_frame = Frame(E, g.device, "node", dict(g.edata.items()) if shared else None)
    return _new_graph(g, e1[keep], e2[keep], E, E, [node_frame])


def khop_graph(g, k, copy_ndata=True):
    """The graph whose adjacency matrix is :math:`A^k`: one edge ``u -> v`` per walk of length ``k``.

    Edges are sorted by (source, destination); a pair joined by ``m`` walks
    gets ``m`` parallel edges. ``k = 0`` gives one self-loop per node.
    Walk counts are exact (int64).

    Parameters
    ----------
    g : Graph
        A homogeneous graph (not a block, not uni-bipartite).
    k : int
        The power (``>= 0``).
    copy_ndata : bool, optional
        Share the node features (default True).

    Returns
    -------
    Graph

    Raises
    ------
    DGLError
        For a block, a uni-bipartite graph or a negative ``k``.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import khop_graph
    >>> khop_graph(dgl.graph(([0, 1, 0], [1, 2, 1])), 2).edges()
    (tensor([0, 0]), tensor([2, 2]))
    """
    _require_homogeneous(g, "khop_graph")
    k = _check_int(k, "k", "khop_graph")
    N = g.num_nodes()
    dev = g.device
    if k == 0:
        row = col = torch.arange(N, device=dev)
    else:
        # walks as a coalesced (row, col, multiplicity) list, extended one edge at a time: exact int64 counts
        index = g._index
        NN = max(N, 1)
        indptr, out_dst, _ = index.csr()
        key, mult = torch.unique(index.src64 * NN + index.dst64, return_counts=True)
        for _ in range(k - 1):
            r, c = key // NN, key % NN
            deg = indptr[c + 1] - indptr[c]
            nxt = _gather_rows(indptr, out_dst, c)
            key, inv = torch.unique(torch.repeat_interleave(r, deg) * NN + nxt, return_inverse=True)
            mult = torch.zeros(key.numel(), dtype=_I64, device=dev).index_add_(0, inv,
                                                                               torch.repeat_interleave(mult, deg))
        row = torch.repeat_interleave(key // NN, mult)
        col = torch.repeat_interleave(key % NN, mult)
    node_frames = _shared_node_frames(g) if copy_ndata else None
    return _new_graph(g, row, col, N, N, node_frames)


# ----------------------------------------------------------------------
# reordering and compaction
# ----------------------------------------------------------------------
_NODE_ALGOS = (None, "rcmk", "rcm", "metis", "custom", "degree")
_EDGE_ALGOS = ("src", "dst", "custom")


def _permutation_arg(g, perm, n, name, kind):
    t = _as_ids(g, perm, n, "reorder_graph", kind, allow_mask=False)
    if t.numel() != n or (n and not torch.equal(torch.sort(t).values, torch.arange(n, device=t.device))):
        raise DGLError(f"reorder_graph expected permute_config[{name!r}] to be a permutation of 0..{n - 1} "
                       f"({n} distinct IDs), got {t.numel()} IDs" + ("" if t.numel() != n else " with repeats"))
    return t


def _symmetric_csr(g):
    """``(indptr, indices)`` (int64, CPU) of ``g``'s undirected simple graph without self-loops."""
    N = g.num_nodes()
    src, dst = g._index.src64.cpu(), g._index.dst64.cpu()
    keep = src != dst
    src, dst = src[keep], dst[keep]
    key = torch.unique(torch.cat([src * N + dst, dst * N + src]))
    rows, cols = key // max(N, 1), key % max(N, 1)
    indptr = torch.zeros(N + 1, dtype=_I64)
    torch.cumsum(torch.bincount(rows, minlength=N), 0, out=indptr[1:])
    return indptr, cols


def _rcm_perm(g):
    import scipy.sparse as sp
    from scipy.sparse.csgraph import reverse_cuthill_mckee
    N = g.num_nodes()
    if N == 0:
        return torch.zeros(0, dtype=_I64, device=g.device)
    src, dst = g._index.src64.cpu().numpy(), g._index.dst64.cpu().numpy()
    adj = sp.csr_matrix((np.ones(src.size, dtype=np.float32), (src, dst)), shape=(N, N))
    return torch.as_tensor(reverse_cuthill_mckee(adj).astype(np.int64), device=g.device)


def _metis_perm(g, k):
    try:
        import pymetis
    except ImportError as err:
        raise DGLError("reorder_graph expected the pymetis package for node_permute_algo='metis', got an "
                       "ImportError; install it with `pip install pymetis`") from err
    N = g.num_nodes()
    if k == 1 or N == 0:
        return torch.arange(N, device=g.device)
    indptr, cols = _symmetric_csr(g)
    xadj, adjncy = indptr.numpy(), cols.numpy()
    options = pymetis.Options(seed=0)
    if getattr(pymetis, "CSRAdjacency", None) is not None:
        part = pymetis.part_graph(k, adjacency=pymetis.CSRAdjacency(xadj, adjncy), options=options)
    else:  # pymetis < 2025
        part = pymetis.part_graph(k, xadj=xadj, adjncy=adjncy, options=options)
    parts = torch.as_tensor(np.asarray(part[1], dtype=np.int64), device=g.device)
    return torch.argsort(parts, stable=True)


def reorder_graph(g, node_permute_algo=None, edge_permute_algo="src", store_ids=True, permute_config=None):
    """Renumber the nodes and edges of ``g`` (for locality) and return the reordered graph.

    Nodes are permuted first, then edges. Node ``i`` of the result is node
    ``ndata[NID][i]`` of ``g`` and edge ``j`` is edge ``edata[EID][j]`` of ``g``;
    features are permuted with them, so message passing on the result
    equals message passing on ``g`` up to this renumbering. To bring a node
    result ``h_new`` back to the original order, use
    ``h = torch.empty_like(h_new); h[rg.ndata[NID].long()] = h_new``.

    Parameters
    ----------
    g : Graph
        A homogeneous graph (not a block, not uni-bipartite).
    node_permute_algo : str or None, optional
        ``None`` (default): keep the node order. ``'rcmk'`` (alias ``'rcm'``):
        reverse Cuthill-McKee of :math:`A + A^T` (SciPy, on the CPU), which
        reduces the bandwidth of the adjacency matrix. ``'metis'``: METIS
        partition into ``permute_config['k']`` parts of the symmetrised graph
        (pymetis, on the CPU, seed 0), nodes grouped by part in ID order.
        ``'custom'``: ``permute_config['nodes_perm']`` (new node ``i`` is old
        node ``nodes_perm[i]``). ``'degree'`` (an mpgraph extension): in-degree,
        descending, ties by node ID.
    edge_permute_algo : str, optional
        ``'src'`` (default): edges sorted by new source ID; ``'dst'``: by new
        destination ID (both stable); ``'custom'``:
        ``permute_config['edges_perm']``, indexing the edges of ``g``.
    store_ids : bool, optional
        Store the permutations as ``ndata[NID]`` and ``edata[EID]`` (default True).
    permute_config : dict, optional
        ``{'k': int}`` for ``'metis'``, ``{'nodes_perm': ids}`` and/or
        ``{'edges_perm': ids}`` for ``'custom'``.

    Returns
    -------
    Graph

    Raises
    ------
    DGLError
        For a block or uni-bipartite graph, an unknown algorithm, a missing
        ``permute_config`` entry, or a custom permutation that is not one.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.transforms import reorder_graph
    >>> g = dgl.graph(([0, 1, 2, 3, 4], [2, 2, 3, 2, 3]))
    >>> g.ndata['h'] = torch.tensor([0, 10, 20, 30, 40])
    >>> rg = reorder_graph(g, node_permute_algo='rcmk')
    >>> rg.ndata[dgl.NID], rg.ndata['h'], rg.edata[dgl.EID]
    (tensor([4, 3, 1, 2, 0]), tensor([40, 30, 10, 20,  0]), tensor([4, 3, 1, 2, 0]))
    >>> rg = reorder_graph(g, edge_permute_algo='dst')
    >>> rg.edges()
    (tensor([0, 1, 3, 2, 4]), tensor([2, 2, 2, 3, 3]))
    """
    what = "reorder_graph"
    _require_homogeneous(g, what)
    if node_permute_algo not in _NODE_ALGOS:
        raise DGLError(f"reorder_graph expected node_permute_algo in {list(_NODE_ALGOS)}, got {node_permute_algo!r}")
    if edge_permute_algo not in _EDGE_ALGOS:
        raise DGLError(f"reorder_graph expected edge_permute_algo in {list(_EDGE_ALGOS)}, got {edge_permute_algo!r}")
    config = {} if permute_config is None else permute_config
    if not isinstance(config, dict):
        raise DGLTypeError(f"reorder_graph expected permute_config to be a dict, got {type(config).__name__}")
    N, E = g.num_nodes(), g.num_edges()
    index = g._index
    src, dst = index.src64, index.dst64
    if node_permute_algo in ("rcmk", "rcm"):
        nodes_perm = _rcm_perm(g)
    elif node_permute_algo == "metis":
        if "k" not in config:
            raise DGLError(f"reorder_graph expected permute_config={{'k': <number of parts>}} for "
                           f"node_permute_algo='metis', got {permute_config!r}")
        k = _check_int(config["k"], "permute_config['k']", what, low=1)
        if k > max(N, 1):
            raise DGLError(f"reorder_graph expected permute_config['k'] (the number of METIS parts) to be at most "
                           f"the number of nodes ({N}), got {k}")
        nodes_perm = _metis_perm(g, k)
    elif node_permute_algo == "custom":
        if "nodes_perm" not in config:
            raise DGLError(f"reorder_graph expected permute_config={{'nodes_perm': ids}} for "
                           f"node_permute_algo='custom', got {permute_config!r}")
        nodes_perm = _permutation_arg(g, config["nodes_perm"], N, "nodes_perm", "node")
    elif node_permute_algo == "degree":
        nodes_perm = torch.sort(index.in_degrees(), descending=True, stable=True).indices
    else:
        nodes_perm = torch.arange(N, device=g.device)

    new_of_old = torch.empty_like(nodes_perm)
    new_of_old[nodes_perm] = torch.arange(N, device=g.device)
    new_src, new_dst = new_of_old[src], new_of_old[dst]
    if edge_permute_algo == "custom":
        if "edges_perm" not in config:
            raise DGLError(f"reorder_graph expected permute_config={{'edges_perm': ids}} for "
                           f"edge_permute_algo='custom', got {permute_config!r}")
        edges_perm = _permutation_arg(g, config["edges_perm"], E, "edges_perm", "edge")
    else:
        # DGL's order: node-permuted edges grouped by new source (node_subgraph), then a stable sort.
        edges_perm = torch.arange(E, device=g.device)
        if node_permute_algo is not None:
            edges_perm = torch.argsort(new_src, stable=True)
        key = new_src if edge_permute_algo == "src" else new_dst
        edges_perm = edges_perm[torch.argsort(key[edges_perm], stable=True)]

    idtype = g.idtype
    node_frame = _sub_frame(g._node_frames[0], nodes_perm, store_ids, idtype, NID)
    edge_frame = _sub_frame(g._edge_frame, edges_perm, store_ids, idtype, EID)
    return _new_graph(g, new_src[edges_perm], new_dst[edges_perm], N, N, [node_frame], edge_frame)


def compact_graphs(graphs, always_preserve=None, copy_ndata=True, copy_edata=True):
    """Remove the nodes that are isolated in every graph of ``graphs`` (which share one node set).

    The kept nodes are numbered in order of first appearance in:
    ``always_preserve``, then for each graph its edge sources, then its edge
    destinations (as in DGL's CPU implementation); the mapping is the same
    for all graphs and stored as ``ndata[NID]``. Edges keep their order.

    For :class:`~mpgraph.heterograph.HeteroGraph` graphs the same is done per
    node type: a node is kept when an edge of any relation of any graph
    touches it; the order of first appearance runs over ``always_preserve``,
    then for each graph and each relation (in ``canonical_etypes`` order) its
    sources, then its destinations.

    Parameters
    ----------
    graphs : Graph, HeteroGraph or list of them
        Graphs with the same node types, node counts, idtype and device (not
        blocks; all Graph or all HeteroGraph).
    always_preserve : Tensor, sequence or dict, optional
        Nodes to keep even when isolated (``{ntype: ids}`` for uni-bipartite
        graphs and graphs with several node types).
    copy_ndata : bool, optional
        Gather the node features of the kept nodes (default True). ``NID`` is
        stored either way.
    copy_edata : bool, optional
        Share the edge features (default True).

    Returns
    -------
    Graph or list of Graph
        A graph when ``graphs`` is one graph, a list otherwise.

    Raises
    ------
    DGLError
        For blocks, graphs that do not share a node set, or IDs out of range.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import compact_graphs
    >>> g = dgl.graph(([1, 3], [3, 5]), num_nodes=10)
    >>> g2 = dgl.graph(([6, 1], [1, 8]), num_nodes=10)
    >>> cg, cg2 = compact_graphs([g, g2])
    >>> cg.ndata[dgl.NID], cg.edges(), cg2.edges()
    (tensor([1, 3, 5, 6, 8]), (tensor([0, 1]), tensor([1, 2])), (tensor([3, 0]), tensor([0, 4])))
    """
    what = "compact_graphs"
    single = isinstance(graphs, (Graph, HeteroGraph))
    graphs = [graphs] if single else list(graphs)
    if not graphs:
        return []
    if isinstance(graphs[0], HeteroGraph):
        return _typed_compact_graphs(graphs, always_preserve, copy_ndata, copy_edata, single)
    g0 = graphs[0]
    for g in graphs:
        _reject_block(g, what)
        if g.ntypes != g0.ntypes or any(g.num_nodes(nt) != g0.num_nodes(nt) for nt in g0.ntypes):
            raise DGLError(f"{what} expected graphs with the same node types and counts "
                           f"({ {nt: g0.num_nodes(nt) for nt in g0.ntypes} }), got "
                           f"{ {nt: g.num_nodes(nt) for nt in g.ntypes} }")
        if g.idtype != g0.idtype or g.device != g0.device:
            raise DGLError(f"{what} expected graphs with the same idtype and device ({g0.idtype}, {g0.device}), "
                           f"got ({g.idtype}, {g.device})")
    if always_preserve is None:
        preserve = {}
    else:
        preserve, _ = _per_type_ids(g0, always_preserve, what, allow_mask=False)
    # per node type, the arrays whose first appearances order the kept nodes
    parts = {nt: [preserve[nt]] if nt in preserve else [] for nt in g0.ntypes}
    slots = []
    for g in graphs:
        srctype, _, dsttype = g.canonical_etypes[0]
        slots.append((srctype, len(parts[srctype]), dsttype, len(parts[dsttype]) + (srctype == dsttype)))
        parts[srctype].append(g._index.src64)
        parts[dsttype].append(g._index.dst64)
    induced, new_ids = {}, {}
    for nt, arrays in parts.items():
        sizes = [a.numel() for a in arrays]
        nodes, new = _first_appearance(torch.cat(arrays) if arrays else torch.zeros(0, dtype=_I64,
                                                                                    device=g0.device))
        induced[nt] = nodes
        new_ids[nt] = list(torch.split(new, sizes)) if arrays else []
    out = []
    idtype = g0.idtype
    for g, (srctype, si, dsttype, di) in zip(graphs, slots):
        types = [srctype] if not g._bipartite else [srctype, dsttype]
        frames = []
        for frame, nt in zip(g._node_frames, types):
            sub = frame.subframe(induced[nt]) if copy_ndata else Frame(induced[nt].numel(), g.device, "node")
            sub[NID] = induced[nt].to(idtype)
            frames.append(sub)
        edge_frame = g._edge_frame.clone() if copy_edata else None
        out.append(_new_graph(g, new_ids[srctype][si], new_ids[dsttype][di], induced[srctype].numel(),
                              induced[dsttype].numel(), frames, edge_frame))
    return out[0] if single else out


# ----------------------------------------------------------------------
# positional encodings
# ----------------------------------------------------------------------
def _dense_adjacency(g, weight=None):
    """``A: (N, N)`` float64 with ``A[u, v]`` = number (or summed weight) of edges ``u -> v``."""
    N = g.num_nodes()
    index = g._index
    values = torch.ones(index.num_edges, dtype=torch.float64, device=g.device) if weight is None else weight
    A = torch.zeros((N, N), dtype=torch.float64, device=g.device)
    return A.index_put_((index.src64, index.dst64), values.to(torch.float64), accumulate=True)


def random_walk_pe(g, k, eweight_name=None):
    r"""Random-walk positional encoding: landing probabilities of returning to the start node.

    With the transition matrix :math:`P = D^{-1} A` (row-normalised, rows are
    sources), the encoding of node :math:`i` is

    .. math::

        \mathrm{PE}_i = \left[P_{ii}, (P^2)_{ii}, \ldots, (P^k)_{ii}\right]

    computed densely in float64 (``O(k N^3)``; meant for small graphs such as
    molecules) and returned in float32. Nodes without out-edges get zeros.

    Parameters
    ----------
    g : Graph
        A homogeneous graph (not a block, not uni-bipartite).
    k : int
        Number of random-walk steps (``>= 1``).
    eweight_name : str, optional
        Edge feature of shape ``(E,)`` or ``(E, 1)`` used as edge weights
        (parallel edges add up); default ``None``: unweighted.

    Returns
    -------
    Tensor
        ``(N, k)`` float32.

    Raises
    ------
    DGLError
        For a block, a uni-bipartite graph, ``k < 1`` or an unknown ``eweight_name``.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import random_walk_pe
    >>> random_walk_pe(dgl.graph(([0, 1, 1], [1, 1, 0])), 2)
    tensor([[0.0000, 0.5000],
            [0.5000, 0.7500]])
    """
    _require_homogeneous(g, "random_walk_pe")
    k = _check_int(k, "k", "random_walk_pe", low=1)
    weight = None
    if eweight_name is not None:
        if eweight_name not in g.edata:
            raise DGLError(f"random_walk_pe expected eweight_name among the edge features {list(g.edata.keys())}, "
                           f"got {eweight_name!r}")
        weight = g.edata[eweight_name].reshape(g.num_edges(), -1)
        if weight.shape[1] != 1:
            raise DGLError(f"random_walk_pe expected one weight per edge, got edge feature {eweight_name!r} of "
                           f"shape {tuple(g.edata[eweight_name].shape)}")
        weight = weight.squeeze(1)
    A = _dense_adjacency(g, weight)
    P = A / (A.sum(1, keepdim=True) + 1e-30)
    pe = [torch.diagonal(P)]
    power = P
    for _ in range(k - 1):
        power = power @ P
        pe.append(torch.diagonal(power))
    return torch.stack(pe, dim=-1).to(torch.float32)


def lap_pe(g, k, padding=False, return_eigval=False):
    r"""Laplacian positional encoding: the ``k`` eigenvectors of smallest non-trivial eigenvalue.

    .. math::

        L = I - D^{-1/2} A D^{-1/2}

    with :math:`D` the in-degrees (at least 1). The eigenvector of the
    smallest eigenvalue is dropped and the next ``k`` (ascending eigenvalue)
    are returned as columns, each multiplied by a random sign drawn with
    ``torch.rand`` (so ``torch.manual_seed`` makes it reproducible). Computed
    densely in float64 (``eigh`` when :math:`L` is symmetric, i.e. the graph
    is bidirected; ``eig``, real parts, otherwise).

    Parameters
    ----------
    g : Graph
        A homogeneous graph, normally bidirected (not a block, not uni-bipartite).
    k : int
        Number of eigenvectors (``>= 1``).
    padding : bool, optional
        When ``N <= k``: if True pad with zero columns (and NaN eigenvalues),
        if False (default) raise.
    return_eigval : bool, optional
        Also return the ``k`` eigenvalues.

    Returns
    -------
    Tensor, or (Tensor, Tensor)
        ``PE: (N, k)`` float32, and with ``return_eigval`` the eigenvalues ``(k,)`` float32.

    Raises
    ------
    DGLError
        For a block, a uni-bipartite graph, ``k < 1``, or ``N <= k`` without ``padding``.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.transforms import lap_pe
    >>> g = dgl.graph(([0, 1, 2, 3, 1, 2, 3, 0], [1, 2, 3, 0, 0, 1, 2, 3]))
    >>> pe, val = lap_pe(g, 3, return_eigval=True)
    >>> val
    tensor([1., 1., 2.])
    >>> pe.abs()[:, 2]
    tensor([0.5000, 0.5000, 0.5000, 0.5000])
    """
    _require_homogeneous(g, "lap_pe")
    k = _check_int(k, "k", "lap_pe", low=1)
    N = g.num_nodes()
    if N <= k and not padding:
        raise DGLError(f"lap_pe expected k smaller than the number of nodes ({N}), got k={k}; "
                       "pass padding=True to pad with zeros")
    A = _dense_adjacency(g)
    norm = g._index.in_degrees().to(torch.float64).clamp(min=1) ** -0.5
    L = torch.eye(N, dtype=torch.float64, device=g.device) - norm[:, None] * A * norm[None, :]
    if torch.equal(L, L.T):
        eigval, eigvec = torch.linalg.eigh(L)
    else:
        eigval, eigvec = torch.linalg.eig(L)
        eigval, eigvec = eigval.real, eigvec.real
    m = max(min(N - 1, k), 0)
    order = torch.argsort(eigval, stable=True)[1:m + 1]
    sign = (torch.rand(m) > 0.5).to(torch.float64) * 2 - 1
    pe = (eigvec[:, order] * sign.to(g.device)).to(torch.float32)
    val = eigval[order].to(torch.float32)
    if m < k:
        pe = torch.cat([pe, torch.zeros((N, k - m), dtype=torch.float32, device=g.device)], dim=1)
        val = torch.cat([val, torch.full((k - m,), float("nan"), dtype=torch.float32, device=g.device)])
    return (pe, val) if return_eigval else pe


def laplacian_pe(g, k, padding=False, return_eigval=False):
    """Old name of :func:`lap_pe`."""
    return lap_pe(g, k, padding=padding, return_eigval=return_eigval)
