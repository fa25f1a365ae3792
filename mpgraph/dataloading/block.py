"""Blocks (message-flow graphs) from sampled edges: :func:`to_block` and the samplers' fast path."""

import torch

from .._index import Index, as_index
from ..base import EID, NID, DGLError
from ..frame import Frame
from ..graph import Graph
from ..heterograph import HeteroBlock
from ..sampling._utils import as_ids, check_graph, is_typed, typed_ids

__all__ = ["to_block"]

_I64 = torch.int64


def first_appearance(x):
    """Distinct values of ``x`` in order of first appearance, and each element's rank among them."""
    n = x.numel()
    if n == 0:
        return x, x
    uniq, inv = torch.unique(x, return_inverse=True)
    first = torch.full((uniq.numel(),), n, dtype=_I64, device=x.device)
    first.scatter_reduce_(0, inv, torch.arange(n, device=x.device), reduce="amin")
    order = torch.sort(first).indices
    rank = torch.empty_like(order).index_copy_(0, order, torch.arange(order.numel(), device=x.device))
    return uniq.index_select(0, order), rank.index_select(0, inv)


def _lookup(table, query):
    """Position of each ``query`` value in ``table`` (distinct values), -1 where absent."""
    if table.numel() == 0:
        return torch.full_like(query, -1)
    values, perm = torch.sort(table)
    pos = torch.searchsorted(values, query).clamp(max=table.numel() - 1)
    return torch.where(values[pos] == query, perm[pos], -1)


def _check_distinct(ids, what, name):
    if ids.numel() > 1 and torch.unique(ids).numel() != ids.numel():
        raise DGLError(f"{what} expected distinct IDs in {name}, got {ids.numel() - torch.unique(ids).numel()} "
                       "repeated")


def block_from_sample(g, seeds, seg, nbr, eid, output_device=None):
    """Block with destination nodes ``seeds`` and edges ``nbr[k] -> seeds[seg[k]]`` (sampler fast path).

    Equal to ``to_block(frontier, seeds)`` for the frontier holding those edges
    in that order: source nodes are ``seeds`` then the other neighbours in
    order of first appearance; ``srcdata``/``dstdata[NID]`` and ``edata[EID]``
    (= ``eid``, the IDs in ``g``) are stored, no other features. ``seeds``
    must be distinct.
    """
    index = as_index(g)
    idtype = index.idtype
    S = seeds.numel()
    src_ids, rank = first_appearance(torch.cat([seeds, nbr]))
    block_index = Index.from_coo(rank[S:].to(idtype), seg.to(idtype), src_ids.numel(), S)
    device = g.device
    src_frame = Frame(src_ids.numel(), device, "node")
    src_frame[NID] = src_ids.to(idtype)
    dst_frame = Frame(S, device, "node")
    dst_frame[NID] = seeds.to(idtype)
    edge_frame = Frame(eid.numel(), device, "edge")
    edge_frame[EID] = eid.to(idtype)
    block = Graph(block_index, g.canonical_etypes[0], True, [src_frame, dst_frame], edge_frame)
    return block if output_device is None else block.to(output_device)


def _typed_sources(g, dst_ids, srcs, include_dst_in_src):
    """Source nodes per type: the type's destination nodes first, then edge sources in order of first appearance.

    ``srcs`` is ``{canonical etype: (E,) int64 sources}`` (relations in
    ``g.canonical_etypes`` order). Returns ``({ntype: ids}, {cet: local source IDs})``.
    """
    src_ids, src_local = {}, {}
    for nt in g.ntypes:
        prefix = dst_ids[nt] if include_dst_in_src else dst_ids[nt][:0]
        rels = [cet for cet in g.canonical_etypes if cet[0] == nt and cet in srcs]
        ids, rank = first_appearance(torch.cat([prefix] + [srcs[cet] for cet in rels]))
        src_ids[nt] = ids
        parts = torch.split(rank[prefix.numel():], [srcs[cet].numel() for cet in rels])
        src_local.update(zip(rels, parts))
    return src_ids, src_local


def typed_block_from_sample(g, seeds, samples, output_device=None):
    """Typed block with destination nodes ``seeds`` and the sampled edges of every relation (sampler fast path).

    ``seeds`` is ``{ntype: (S,) int64}`` for every node type of ``g`` (distinct
    IDs, possibly none); ``samples`` is ``{cet: (seg, nbr, eid)}`` from
    :func:`mpgraph.sampling.neighbor.sample_relations` (edges
    ``nbr[k] -> seeds[dsttype][seg[k]]``). Equal to :func:`to_block` on the
    frontier holding those edges: per type, the source nodes are the seeds,
    then the new neighbours in order of first appearance over the relations
    in ``g.canonical_etypes`` order. Only ``NID``/``EID`` are stored.
    """
    idtype, device = g.idtype, g.device
    empty = torch.zeros(0, dtype=_I64, device=device)
    srcs = {cet: samples[cet][1] if cet in samples else empty for cet in g.canonical_etypes}
    src_ids, src_local = _typed_sources(g, seeds, srcs, True)
    indexes, edge_frames = {}, {}
    for cet in g.canonical_etypes:
        seg, eid = (samples[cet][0], samples[cet][2]) if cet in samples else (empty, empty)
        indexes[cet] = Index.from_coo(src_local[cet].to(idtype), seg.to(idtype), src_ids[cet[0]].numel(),
                                      seeds[cet[2]].numel())
        edge_frames[cet] = Frame(eid.numel(), device, "edge", {EID: eid.to(idtype)})
    src_frames = {nt: Frame(ids.numel(), device, "node", {NID: ids.to(idtype)}) for nt, ids in src_ids.items()}
    dst_frames = {nt: Frame(ids.numel(), device, "node", {NID: ids.to(idtype)}) for nt, ids in seeds.items()}
    block = HeteroBlock(indexes, {nt: f.num_rows for nt, f in src_frames.items()},
                        {nt: f.num_rows for nt, f in dst_frames.items()}, src_frames, dst_frames, edge_frames,
                        idtype, device)
    return block if output_device is None else block.to(output_device)


def _typed_to_block(g, dst_nodes, include_dst_in_src, src_nodes, what):
    if g.is_block:
        raise DGLError(f"{what} expected a graph, got a typed block; pass the frontier (a graph) instead")
    device = g.device
    empty = torch.zeros(0, dtype=_I64, device=device)
    if dst_nodes is None:
        dst_ids = {nt: torch.unique(torch.cat([empty] + [g._indexes[cet].dst64 for cet in g.canonical_etypes
                                                          if cet[2] == nt])) for nt in g.ntypes}
    else:
        given = typed_ids(g, dst_nodes, what)
        for nt, ids in given.items():
            _check_distinct(ids, what, f"dst_nodes[{nt!r}]")
        dst_ids = {nt: given.get(nt, empty) for nt in g.ntypes}
    dst_local = {}
    for cet in g.canonical_etypes:
        dst = g._indexes[cet].dst64
        local = _lookup(dst_ids[cet[2]], dst)
        if bool((local < 0).any()):
            missing = int(dst[local < 0][0])
            raise DGLError(f"{what} expected dst_nodes[{cet[2]!r}] to include every destination of relation {cet}, "
                           f"got none for {cet[2]!r} node {missing}")
        dst_local[cet] = local
    srcs = {cet: g._indexes[cet].src64 for cet in g.canonical_etypes}
    if src_nodes is None:
        src_ids, src_local = _typed_sources(g, dst_ids, srcs, include_dst_in_src)
    else:
        given = typed_ids(g, src_nodes, what)
        src_ids = {nt: given.get(nt, empty) for nt in g.ntypes}
        for nt, ids in src_ids.items():
            _check_distinct(ids, what, f"src_nodes[{nt!r}]")
            if include_dst_in_src and not torch.equal(ids[:dst_ids[nt].numel()], dst_ids[nt]):
                raise DGLError(f"{what} expected src_nodes[{nt!r}] to start with dst_nodes[{nt!r}] "
                               f"(include_dst_in_src=True), got {ids[:dst_ids[nt].numel()].tolist()[:10]} for "
                               f"{dst_ids[nt].tolist()[:10]}")
        src_local = {}
        for cet, src in srcs.items():
            local = _lookup(src_ids[cet[0]], src)
            if bool((local < 0).any()):
                missing = int(src[local < 0][0])
                raise DGLError(f"{what} expected src_nodes[{cet[0]!r}] to include every source of relation {cet}, "
                               f"got none for {cet[0]!r} node {missing}")
            src_local[cet] = local
    idtype = g.idtype
    indexes, edge_frames = {}, {}
    for cet in g.canonical_etypes:
        indexes[cet] = Index.from_coo(src_local[cet].to(idtype), dst_local[cet].to(idtype), src_ids[cet[0]].numel(),
                                      dst_ids[cet[2]].numel())
        frame = g._edge_frames[cet].clone()
        frame[EID] = torch.arange(frame.num_rows, dtype=idtype, device=device)
        edge_frames[cet] = frame
    src_frames, dst_frames = {}, {}
    for ids_of, frames in ((src_ids, src_frames), (dst_ids, dst_frames)):
        for nt, ids in ids_of.items():
            frame = g._node_frames[nt].subframe(ids)
            frame[NID] = ids.to(idtype)
            frames[nt] = frame
    return HeteroBlock(indexes, {nt: ids.numel() for nt, ids in src_ids.items()},
                       {nt: ids.numel() for nt, ids in dst_ids.items()}, src_frames, dst_frames, edge_frames,
                       idtype, device)


def to_block(g, dst_nodes=None, include_dst_in_src=True, src_nodes=None):
    """Convert ``g`` into a block whose destination nodes are ``dst_nodes``.

    Every edge of ``g`` becomes an edge of the block, in edge-ID order. The
    source nodes are, as in DGL: the destination nodes first (with
    ``include_dst_in_src``, for a graph with one node type), then the other
    edge sources in order of first appearance along the edges. Original IDs
    are stored as ``srcdata[dgl.NID]``, ``dstdata[dgl.NID]`` and
    ``edata[dgl.EID]`` (edge IDs in ``g``, i.e. ``0..E-1``); the other node and
    edge features of ``g`` are gathered into the block.

    For a :class:`~mpgraph.heterograph.HeteroGraph` the result is a
    :class:`~mpgraph.heterograph.HeteroBlock` with every node type on both
    sides and every relation. Per node type the source nodes are that type's
    destination nodes first (with ``include_dst_in_src``), then the sources of
    the relations from that type, in order of first appearance over the
    relations in ``g.canonical_etypes`` order and along their edges. Features
    and IDs are stored per type and per relation as above.

    Parameters
    ----------
    g : Graph or HeteroGraph
        A graph (not a block), e.g. a frontier from
        :func:`mpgraph.sampling.sample_neighbors`.
    dst_nodes : int, sequence, Tensor or dict, optional
        Distinct destination nodes; must include every node with an in-edge.
        Default: the nodes with an in-edge, sorted. For a HeteroGraph a dict
        ``{ntype: ids}``; types left out get no destination nodes.
    include_dst_in_src : bool, optional
        Put the destination nodes first among the source nodes (default True).
    src_nodes : sequence, Tensor or dict, optional
        The source nodes (distinct, prefixed by ``dst_nodes`` when
        ``include_dst_in_src``); must include every edge source
        (``{ntype: ids}`` for a HeteroGraph).

    Returns
    -------
    Graph or HeteroBlock
        A block (``is_block`` True).

    Raises
    ------
    DGLError
        A block as input; IDs out of range or repeated; an edge whose
        destination is not in ``dst_nodes`` or whose source is not in
        ``src_nodes``; an unknown node type.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.dataloading import to_block
    >>> g = dgl.graph(([1, 2], [2, 3]))
    >>> block = to_block(g, torch.tensor([3, 2]))
    >>> block.srcdata[dgl.NID], block.dstdata[dgl.NID]
    (tensor([3, 2, 1]), tensor([3, 2]))
    >>> src, dst = block.edges()
    >>> block.srcdata[dgl.NID][src], block.dstdata[dgl.NID][dst], block.edata[dgl.EID]
    (tensor([1, 2]), tensor([2, 3]), tensor([0, 1]))
    """
    what = "to_block"
    if not isinstance(include_dst_in_src, bool):
        raise DGLError(f"{what} expected include_dst_in_src to be True or False, got {include_dst_in_src!r}")
    if is_typed(g):
        return _typed_to_block(g, dst_nodes, include_dst_in_src, src_nodes, what)
    check_graph(g, what)
    if g.is_block:
        raise DGLError(f"{what} expected a graph, got a block; pass the frontier (a graph) instead")
    index = as_index(g)
    idtype = index.idtype
    src, dst = index.src64, index.dst64
    if dst_nodes is None:
        dst_ids = torch.unique(dst)
    else:
        dst_ids = as_ids(g, dst_nodes, index.num_dst, what)
        _check_distinct(dst_ids, what, "dst_nodes")
    dst_local = _lookup(dst_ids, dst)
    if bool((dst_local < 0).any()):
        missing = int(dst[dst_local < 0][0])
        raise DGLError(f"{what} expected dst_nodes to include every edge destination, got none for node {missing}")
    same_type = not g._bipartite
    if src_nodes is None:
        prefix = dst_ids if include_dst_in_src and same_type else dst_ids[:0]
        src_ids, rank = first_appearance(torch.cat([prefix, src]))
        src_local = rank[prefix.numel():]
    else:
        src_ids = as_ids(g, src_nodes, index.num_src, what)
        _check_distinct(src_ids, what, "src_nodes")
        if include_dst_in_src and same_type and not torch.equal(src_ids[:dst_ids.numel()], dst_ids):
            raise DGLError(f"{what} expected src_nodes to start with dst_nodes (include_dst_in_src=True), got "
                           f"{src_ids[:dst_ids.numel()].tolist()[:10]} for {dst_ids.tolist()[:10]}")
        src_local = _lookup(src_ids, src)
        if bool((src_local < 0).any()):
            missing = int(src[src_local < 0][0])
            raise DGLError(f"{what} expected src_nodes to include every edge source, got none for node {missing}")
    block_index = Index.from_coo(src_local.to(idtype), dst_local.to(idtype), src_ids.numel(), dst_ids.numel())
    src_frame = g.srcdata.subframe(src_ids)
    src_frame[NID] = src_ids.to(idtype)
    dst_frame = g.dstdata.subframe(dst_ids)
    dst_frame[NID] = dst_ids.to(idtype)
    edge_frame = g.edata.clone()
    edge_frame[EID] = torch.arange(index.num_edges, dtype=idtype, device=g.device)
    return Graph(block_index, g.canonical_etypes[0], True, [src_frame, dst_frame], edge_frame)
