"""Neighbour sampling (DGL's ``dgl.sampling.sample_neighbors`` and ``select_topk``).

Both functions work on every seed node at once over the cached CSC (in-edges)
or CSR (out-edges) of the graph's :class:`~mpgraph._index.Index`:

* uniform, without replacement: seeds with at most ``fanout`` neighbours keep
  them all; for the others Floyd's algorithm draws ``fanout`` distinct
  offsets in ``fanout`` vectorised steps (``O(fanout^2)`` work per seed,
  independent of its degree); for a fanout much larger than the degree a
  random key per edge and a segmented sort are used instead;
* uniform, with replacement: ``fanout`` independent offsets per seed;
* weighted (``prob``/``mask``) or with ``exclude_edges``: every candidate edge
  of the seeds gets a weight; without replacement, the ``fanout`` smallest
  exponential keys ``Exp(1) / w`` per seed (Efraimidis-Spirakis: successive
  draws proportional to ``w``); with replacement, inverse-CDF lookups in the
  per-seed normalised cumulative weights.

Randomness comes from torch's global generator on the graph's device, so
``mpgraph.seed``/``torch.manual_seed`` make samples reproducible.
"""

import torch

from .._index import Index, as_index
from ..base import EID, DGLError
from ..frame import Frame
from ..graph import Graph
from ..heterograph import HeteroGraph
from ._utils import (as_ids, candidate_weights, check_edge_dir, check_fanout, check_graph, check_typed_graph,
                     edge_values, edge_weights, exclude_ids, expand_segments, is_typed, segmented_order, take,
                     typed_edge_weights, typed_exclude, typed_fanouts, typed_ids)

__all__ = ["sample_neighbors", "select_topk"]

_I64 = torch.int64
_F64 = torch.float64


# ----------------------------------------------------------------------
# core: sample inside the segments of a compressed structure
# ----------------------------------------------------------------------
def _floyd(deg, k):
    """``(n, k)`` distinct offsets in ``[0, deg[i])`` per row, uniform over k-subsets (``deg[i] > k``).

    Floyd's algorithm: for ``j = 0..k-1`` draw ``t`` in ``[0, deg - k + j]``; keep
    it unless already taken, else take ``deg - k + j`` (which cannot be).
    """
    n = deg.numel()
    top = deg.unsqueeze(0) - k + torch.arange(k, device=deg.device).unsqueeze(1)          # (k, n)
    chosen = (torch.rand(k, n, dtype=_F64, device=deg.device) * (top + 1).to(_F64)).to(_I64).minimum(top)
    for j in range(1, k):                            # over fanout slots, every row at once
        taken = (chosen[:j] == chosen[j]).any(0)     # slot-major: chosen[:j] is contiguous
        chosen[j] = torch.where(taken, top[j], chosen[j])
    return chosen.t()


def _uniform_rows(start, deg, k, replace):
    """Positions and segment of sampled edges, uniform weights. Returns ``(pos, seg)``."""
    S = deg.numel()
    device = deg.device
    if replace:
        has = (deg > 0).nonzero().squeeze(1)
        d = take(deg, has).unsqueeze(1)
        off = (torch.rand(has.numel(), k, dtype=_F64, device=device) * d.to(_F64)).to(_I64).minimum(d - 1)
        return (take(start, has).unsqueeze(1) + off).reshape(-1), has.repeat_interleave(k)
    cnt = deg.clamp(max=k)
    out_start = torch.cumsum(cnt, 0) - cnt
    T = int(cnt.sum()) if S else 0
    pos = torch.empty(T, dtype=_I64, device=device)
    small = deg <= k
    rows = small.nonzero().squeeze(1)
    if rows.numel():
        p, s, r = expand_segments(take(start, rows), take(deg, rows))
        pos.index_copy_(0, take(take(out_start, rows), s) + r, p)
    big = (~small).nonzero().squeeze(1)
    if big.numel():
        # a random key per edge is cheaper than Floyd's k^2 comparisons when k is large against the degree
        by_keys = take(deg, big) * 32 < k * k
        rows = big[by_keys]
        if rows.numel():
            d = take(deg, rows)
            p, s, _ = expand_segments(take(start, rows), d)
            order = segmented_order(s, torch.rand(p.numel(), device=device))
            s_sorted = take(s, order)
            rank = torch.arange(p.numel(), device=device) - take(torch.cumsum(d, 0) - d, s_sorted)
            keep = rank < k
            sel = order[keep]
            pos.index_copy_(0, take(take(out_start, rows), s_sorted[keep]) + rank[keep], take(p, sel))
        rows = big[~by_keys]
        if rows.numel():
            chosen = _floyd(take(deg, rows), k)                                            # (n, k)
            slots = take(out_start, rows).unsqueeze(1) + torch.arange(k, device=device)    # (n, k)
            pos.index_copy_(0, slots.reshape(-1), (take(start, rows).unsqueeze(1) + chosen).reshape(-1))
    seg = torch.repeat_interleave(torch.arange(S, device=device), cnt, output_size=T)
    return pos, seg


def _weighted_rows(start, deg, k, replace, w):
    """Weighted sampling over every candidate edge; ``w: (C,)`` float64 weights of the candidates.

    Returns ``(sel, seg)``: indices into the candidate list (segments in order) and their segment.
    """
    S = deg.numel()
    device = deg.device
    C = w.numel()
    seg = torch.repeat_interleave(torch.arange(S, device=device), deg, output_size=C)
    if k < 0:
        sel = (w > 0).nonzero().squeeze(1)
        return sel, take(seg, sel)
    seg_start = torch.cumsum(deg, 0) - deg
    if not replace:
        key = torch.empty(C, dtype=_F64, device=device).exponential_() / w     # w == 0 -> inf: never taken
        order = segmented_order(seg, key)
        rank = torch.arange(C, device=device) - take(seg_start, take(seg, order))
        keep = (rank < k) & torch.isfinite(take(key, order))
        sel = order[keep]
        return sel, take(seg, sel)
    total = torch.zeros(S, dtype=_F64, device=device).index_add_(0, seg, w)
    has = (total > 0).nonzero().squeeze(1)
    if has.numel() == 0 or k == 0:
        z = torch.zeros(0, dtype=_I64, device=device)
        return z, z
    wn = w / torch.where(total > 0, total, 1.0)[seg]                 # each segment sums to 1
    cum = torch.cumsum(wn, 0)
    base = (cum - wn)[seg_start[has]]                                 # cumulative weight before the segment
    target = (base.unsqueeze(1) + torch.rand(has.numel(), k, dtype=_F64, device=device)).reshape(-1)
    sel = torch.searchsorted(cum, target, right=True)
    # round-off can step past the segment's end: clamp to its last positive-weight edge
    idx = torch.arange(C, device=device)
    last = torch.full((S,), -1, dtype=_I64, device=device).scatter_reduce_(
        0, seg, torch.where(w > 0, idx, -1), reduce="amax")
    out_seg = has.repeat_interleave(k)
    return sel.minimum(last[out_seg]), out_seg


def sample_rows(indptr, indices, eids, rows, fanout, replace, prob=None, mask=None, exclude=None):
    """Sample up to ``fanout`` entries from each row ``rows[i]`` of a compressed structure.

    Parameters
    ----------
    indptr, indices, eids : Tensor
        A CSC or CSR of the graph, int64 (``Index.csc()`` / ``Index.csr()``).
    rows : Tensor
        ``(S,)`` int64 seed rows (repeats allowed: each is sampled independently).
    fanout : int
        Entries per row; -1 takes them all.
    replace : bool
        Sample with replacement.
    prob, mask : Tensor, optional
        ``(E,)`` non-negative weights / boolean mask indexed by edge ID.
    exclude : Tensor, optional
        Sorted edge IDs that must not be sampled.

    Returns
    -------
    seg, nbr, eid : Tensor
        ``(T,)`` int64 each: the seed (index into ``rows``), the neighbour and the
        edge ID of every sampled edge, grouped by seed in the order of ``rows``.
    """
    start = take(indptr, rows)
    deg = take(indptr, rows + 1) - start
    if prob is None and mask is None and exclude is None:
        if fanout < 0 or (not replace and (deg.numel() == 0 or int(deg.max()) <= fanout)):
            pos, seg, _ = expand_segments(start, deg)
        else:
            pos, seg = _uniform_rows(start, deg, fanout, replace)
        return seg, take(indices, pos), take(eids, pos)
    pos, _, _ = expand_segments(start, deg)
    cand = take(eids, pos)
    w = candidate_weights(prob, mask, cand)
    if w is None:
        w = torch.ones(cand.numel(), dtype=_F64, device=cand.device)
    if exclude is not None and exclude.numel():
        w = torch.where(torch.isin(cand, exclude), 0.0, w)
    sel, seg = _weighted_rows(start, deg, fanout, replace, w)
    pos = take(pos, sel)
    return seg, take(indices, pos), take(eids, pos)


def _structure(g, edge_dir):
    """``(indptr, neighbours, eids, number of seed candidates)`` for sampling along ``edge_dir``."""
    index = as_index(g)
    if edge_dir == "in":
        indptr, nbr, eid = index.csc()
        return indptr, nbr, eid, index.num_dst
    indptr, nbr, eid = index.csr()
    return indptr, nbr, eid, index.num_src


def _frontier(g, seeds, seg, nbr, eid, edge_dir, copy_ndata, copy_edata, output_device):
    """Graph with all of ``g``'s nodes and the sampled edges; ``edata[EID]`` = their IDs in ``g``."""
    index = as_index(g)
    centre = take(seeds, seg)
    src, dst = (nbr, centre) if edge_dir == "in" else (centre, nbr)
    idtype = index.idtype
    new_index = Index.from_coo(src.to(idtype), dst.to(idtype), index.num_src, index.num_dst)
    node_frames = [f.clone() for f in g._node_frames] if copy_ndata else None
    edge_frame = g._edge_frame.subframe(eid) if copy_edata else Frame(eid.numel(), g.device, "edge")
    edge_frame[EID] = eid.to(idtype)
    out = Graph(new_index, g.canonical_etypes[0], g.is_block, node_frames, edge_frame)
    return out if output_device is None else out.to(output_device)


def _check_replace(replace, what):
    if not isinstance(replace, bool):
        raise DGLError(f"{what} expected replace to be True or False, got {replace!r}")


def sample_relations(g, seeds, fanouts, edge_dir, replace, weights, exclude):
    """Sample every relation of a typed graph around the seeds of its seed-side node type.

    Parameters
    ----------
    g : HeteroGraph
        The graph.
    seeds : dict
        ``{ntype: (S,) int64}`` seed nodes; types may be missing.
    fanouts : dict
        ``{canonical etype: int}`` for every relation.
    edge_dir : str
        ``'in'``: relation ``(s, e, d)`` samples in-edges of the ``d`` seeds;
        ``'out'``: out-edges of the ``s`` seeds.
    replace : bool
        Sample with replacement.
    weights, exclude : dict
        ``{canonical etype: (prob, mask)}`` and ``{canonical etype: sorted edge IDs}``.

    Returns
    -------
    dict
        ``{canonical etype: (seg, nbr, eid)}`` for the relations whose seed-side
        type has seeds (see :func:`sample_rows`); one loop step per relation,
        every seed of it at once.
    """
    out = {}
    for cet in g.canonical_etypes:
        rows = seeds.get(cet[2] if edge_dir == "in" else cet[0])
        if rows is None or rows.numel() == 0:
            continue
        index = g._indexes[cet]
        indptr, nbr_all, eid_all = index.csc() if edge_dir == "in" else index.csr()
        prob, mask = weights.get(cet, (None, None))
        out[cet] = sample_rows(indptr, nbr_all, eid_all, rows, fanouts[cet], replace, prob, mask, exclude.get(cet))
    return out


def _typed_frontier(g, seeds, samples, edge_dir, copy_ndata, copy_edata, output_device):
    """HeteroGraph with all of ``g``'s nodes and the sampled edges of every relation."""
    idtype, device = g.idtype, g.device
    empty = torch.zeros(0, dtype=_I64, device=device)
    indexes, edge_frames = {}, {}
    for cet in g.canonical_etypes:
        index = g._indexes[cet]
        if cet in samples:
            seg, nbr, eid = samples[cet]
            centre = take(seeds[cet[2] if edge_dir == "in" else cet[0]], seg)
            src, dst = (nbr, centre) if edge_dir == "in" else (centre, nbr)
        else:
            src = dst = eid = empty
        indexes[cet] = Index.from_coo(src.to(idtype), dst.to(idtype), index.num_src, index.num_dst)
        frame = g._edge_frames[cet].subframe(eid) if copy_edata else Frame(eid.numel(), device, "edge")
        frame[EID] = eid.to(idtype)
        edge_frames[cet] = frame
    node_frames = {nt: g._node_frames[nt].clone() for nt in g.ntypes} if copy_ndata else None
    out = HeteroGraph(indexes, {nt: g.num_nodes(nt) for nt in g.ntypes}, node_frames, edge_frames, idtype, device)
    return out if output_device is None else out.to(output_device)


def _sample_neighbors_typed(g, nodes, fanout, edge_dir, prob, replace, copy_ndata, copy_edata, exclude_edges,
                            output_device, mask):
    what = "sample_neighbors"
    check_typed_graph(g, what)
    check_edge_dir(edge_dir, what)
    _check_replace(replace, what)
    seeds = typed_ids(g, nodes, what)
    fanouts = typed_fanouts(g, fanout, what)
    weights = typed_edge_weights(g, prob, mask, what)
    exclude = typed_exclude(g, exclude_edges, what)
    samples = sample_relations(g, seeds, fanouts, edge_dir, replace, weights, exclude)
    return _typed_frontier(g, seeds, samples, edge_dir, copy_ndata, copy_edata, output_device)


# ----------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------
def sample_neighbors(g, nodes, fanout, edge_dir="in", prob=None, replace=False, copy_ndata=True,
                     copy_edata=True, exclude_edges=None, output_device=None, mask=None):
    r"""Sample up to ``fanout`` neighbouring edges of each node in ``nodes``.

    The result keeps every node of ``g`` and holds only the sampled edges,
    grouped by seed node in the order of ``nodes``; ``edata[dgl.EID]`` holds
    their IDs in ``g``. Without replacement each seed gets
    :math:`\min(\text{fanout}, d)` edges (``d`` its degree along ``edge_dir``,
    counting only edges with positive ``prob`` and not in ``exclude_edges``),
    uniformly or by successive draws proportional to ``prob``; with
    replacement it gets exactly ``fanout`` edges when ``d > 0``, each drawn
    with probability :math:`p_e / \sum_{e'} p_{e'}`.

    On a :class:`~mpgraph.heterograph.HeteroGraph` every relation is sampled
    on its own: relation ``(s, e, d)`` samples up to ``fanout[(s, e, d)]``
    in-edges of each seed of type ``d`` (out-edges of each seed of type ``s``
    for ``edge_dir='out'``). The result is a HeteroGraph with every node type
    and count of ``g``, every relation (possibly without edges), and
    ``edges[etype].data[dgl.EID]`` per relation.

    Parameters
    ----------
    g : Graph or HeteroGraph
        The graph (homogeneous, uni-bipartite, or with several types).
    nodes : int, sequence, Tensor or dict
        Seed node IDs (destination nodes for ``edge_dir='in'``, source nodes
        for ``'out'``); ``{ntype: ids}`` for a HeteroGraph (types left out have
        no seeds; a one-entry dict is accepted for a Graph).
    fanout : int or dict
        Edges to sample per seed; ``-1`` takes every edge. For a HeteroGraph an
        int applies to every relation, and a dict ``{etype: int}`` (names or
        canonical tuples) must give every relation.
    edge_dir : str, optional
        ``'in'`` samples in-edges (default), ``'out'`` out-edges.
    prob : str, Tensor or dict, optional
        Unnormalised sampling weight per edge: an edge feature name or an
        ``(E,)`` tensor of finite non-negative values. Zero-weight edges are
        never sampled (also not with ``fanout=-1``). Default: uniform. For a
        HeteroGraph: a feature name (relations without that feature sample
        uniformly; at least one must have it) or ``{etype: name or tensor}``.
    replace : bool, optional
        Sample with replacement (default False).
    copy_ndata : bool, optional
        Share ``g``'s node features with the result (default True).
    copy_edata : bool, optional
        Gather the sampled edges' features (default True).
    exclude_edges : Tensor, sequence or dict, optional
        Edge IDs that must not be sampled (``{etype: ids}`` for a HeteroGraph).
    output_device : torch.device, optional
        Move the result there.
    mask : str, Tensor or dict, optional
        Boolean edge mask; edges where it is False are never sampled (typed as ``prob``).

    Returns
    -------
    Graph or HeteroGraph
        Same nodes as ``g``, the sampled edges, ``edata[dgl.EID]``.

    Raises
    ------
    DGLError
        Unknown ``edge_dir``; seed IDs out of range; ``fanout`` below -1;
        ``prob``/``mask`` without one value per edge or with negative values;
        for a HeteroGraph, an unknown node or edge type (named in the message),
        a fanout dict missing a relation, or a typed block.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.sampling import sample_neighbors
    >>> g = dgl.graph(([1, 2, 3, 0, 2, 0], [0, 0, 0, 1, 1, 2]))
    >>> sg = sample_neighbors(g, [0, 1], 2)
    >>> sg.num_nodes(), sg.num_edges(), sg.in_degrees([0, 1]).tolist()
    (4, 4, [2, 2])
    >>> sg = sample_neighbors(g, [1, 2], -1)          # every in-edge, grouped by seed
    >>> sg.edges(), sg.edata[dgl.EID]
    ((tensor([0, 2, 0]), tensor([1, 1, 2])), tensor([3, 4, 5]))
    >>> sample_neighbors(g, [4], 2)
    Traceback (most recent call last):
    ...
    mpgraph.base.DGLError: sample_neighbors expected node IDs in [0, 4), got 4; the graph has 4 nodes

    With several types, one fanout per relation:

    >>> hg = dgl.heterograph({('user', 'follows', 'user'): ([0, 1, 2], [1, 1, 1]),
    ...                       ('user', 'plays', 'game'): ([0, 1, 2], [0, 0, 0])})
    >>> sg = sample_neighbors(hg, {'user': [1], 'game': [0]}, {'follows': 2, 'plays': -1})
    >>> sg.num_edges('follows'), sg.num_edges('plays'), sg.num_nodes('user')
    (2, 3, 3)
    """
    if is_typed(g):
        return _sample_neighbors_typed(g, nodes, fanout, edge_dir, prob, replace, copy_ndata, copy_edata,
                                       exclude_edges, output_device, mask)
    what = "sample_neighbors"
    check_graph(g, what)
    check_edge_dir(edge_dir, what)
    fanout = check_fanout(fanout, what)
    _check_replace(replace, what)
    indptr, nbr_all, eid_all, n = _structure(g, edge_dir)
    seeds = as_ids(g, nodes, n, what)
    prob, mask = edge_weights(g, prob, mask, what)
    exclude = exclude_ids(g, exclude_edges, what)
    seg, nbr, eid = sample_rows(indptr, nbr_all, eid_all, seeds, fanout, replace, prob, mask, exclude)
    return _frontier(g, seeds, seg, nbr, eid, edge_dir, copy_ndata, copy_edata, output_device)


def select_topk(g, k, weight, nodes=None, edge_dir="in", ascending=False, copy_ndata=True, copy_edata=True,
                output_device=None):
    """Keep, for each node in ``nodes``, the ``k`` neighbouring edges of largest (or smallest) ``weight``.

    Ties keep the lower edge ID. Edges are grouped by node in the order of
    ``nodes``, by weight inside a group; ``edata[dgl.EID]`` holds their IDs in ``g``.

    Parameters
    ----------
    g : Graph
        The graph.
    k : int or dict
        Edges per node; ``-1`` keeps every edge.
    weight : str or Tensor
        Edge feature name, or an ``(E,)`` tensor of real values.
    nodes : int, sequence or Tensor, optional
        Nodes to select for (default: all destination nodes for ``'in'``,
        all source nodes for ``'out'``).
    edge_dir : str, optional
        ``'in'`` (default) or ``'out'``.
    ascending : bool, optional
        Keep the smallest weights instead (default False).
    copy_ndata, copy_edata : bool, optional
        Share node features / gather edge features (default True).
    output_device : torch.device, optional
        Move the result there.

    Returns
    -------
    Graph
        Same nodes as ``g``, the selected edges.

    Raises
    ------
    DGLError
        Unknown ``edge_dir``, ``k`` below -1, node IDs out of range, ``weight``
        missing or of the wrong length.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.sampling import select_topk
    >>> g = dgl.graph(([1, 2, 3, 0], [0, 0, 0, 1]))
    >>> g.edata['w'] = torch.tensor([0.5, 2.0, 1.0, 3.0])
    >>> sg = select_topk(g, 2, 'w')
    >>> sg.edges(), sg.edata[dgl.EID]
    ((tensor([2, 3, 0]), tensor([0, 0, 1])), tensor([1, 2, 3]))
    """
    what = "select_topk"
    check_graph(g, what)
    check_edge_dir(edge_dir, what)
    k = check_fanout(k, what, "k")
    w = edge_values(g, weight, what, "weight", "weight")
    if w is None:
        raise DGLError(f"{what} expected weight as an edge feature name or a tensor of {g.num_edges()} values, "
                       "got None")
    if w.dtype == torch.bool or w.is_complex():
        raise DGLError(f"{what} expected real weight values, got dtype {w.dtype}")
    indptr, nbr_all, eid_all, n = _structure(g, edge_dir)
    if nodes is None:
        seeds = torch.arange(n, device=g.device)
    else:
        seeds = as_ids(g, nodes, n, what)
    start = indptr[seeds]
    deg = indptr[seeds + 1] - start
    pos, seg, _ = expand_segments(start, deg)
    key = w[eid_all[pos]].to(_F64)
    order = segmented_order(seg, key if ascending else -key)
    if k >= 0:
        seg_start = torch.cumsum(deg, 0) - deg
        rank = torch.arange(pos.numel(), device=g.device) - seg_start[seg[order]]
        order = order[rank < k]
    pos = pos[order]
    return _frontier(g, seeds, seg[order], nbr_all[pos], eid_all[pos], edge_dir, copy_ndata, copy_edata,
                     output_device)
