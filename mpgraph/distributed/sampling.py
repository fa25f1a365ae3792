"""Neighbour sampling on a :class:`~mpgraph.distributed.DistGraph`: local structure first, owners for the rest.

A seed's in-edges are all in this rank's local graph when the seed is owned
here or is a halo node reached before the last halo ring (``ndata['halo_hop']
< num_hops``); such seeds are sampled locally. The others are sent to their
owners, which sample them from their local graph and send back the sampled
edges (global IDs), in two exchanges (seeds out, ``(degree, neighbours, edge
IDs)`` back). With ``num_hops >= len(fanouts)`` and owned seeds every seed is
local and only the (empty) exchange counts move. Samples are uniform per seed,
with or without replacement, as :func:`mpgraph.sampling.sample_neighbors`.

Sampling is collective (every rank calls it the same number of times); the
random draws are those of torch's generator on each rank, which
:class:`~mpgraph.distributed.DistNodeDataLoader` seeds per batch.
"""

import torch

from .._index import Index
from ..base import EID, DGLError, DGLTypeError
from ..graph import Graph
from ..sampling._utils import check_fanout
from ..sampling.neighbor import sample_rows
from .dist_graph import DistGraph, _as_ids

__all__ = ["sample_neighbors", "sample_layer"]

_I64 = torch.int64


def sample_layer(g, seeds, fanout, replace=False):
    """Sample up to ``fanout`` in-edges of every seed; a collective.

    Parameters
    ----------
    g : DistGraph
    seeds : Tensor
        ``(S,)`` int64 global node IDs (repeats are sampled independently).
    fanout : int
        Edges per seed, -1 for all.
    replace : bool, optional
        With replacement (default False).

    Returns
    -------
    seg, nbr, eid : Tensor
        ``(T,)`` int64 each: the seed's position in ``seeds``, the neighbour's
        and the edge's global IDs; grouped by seed, in the order of ``seeds``.
    """
    comm = g._comm
    W, me = comm.world_size, g._part_id
    gpb = g._gpb
    indptr, src_local, eid_local = g._csc()
    seeds = seeds.to(device="cpu", dtype=_I64)
    loc = g._to_local(seeds)
    here = loc >= 0
    here[here.clone()] = g._complete[loc[here]]
    local_pos = here.nonzero().squeeze(1)
    seg, nbr, eid = sample_rows(indptr, src_local, eid_local, loc[local_pos], fanout, replace)
    segs, nbrs, eids = [local_pos[seg]], [g._local_nid[nbr]], [g._local_eid[eid]]
    if W > 1:
        id_dtype = g._id_dtype
        remote_pos = (~here).nonzero().squeeze(1)
        owner = gpb.nid2partid(seeds[remote_pos])
        order = torch.argsort(owner, stable=True)
        counts = torch.bincount(owner, minlength=W).tolist()
        asked = comm.exchange(list(torch.split(seeds[remote_pos[order]].to(id_dtype), counts)), "sampling")
        replies = []
        for r, a in enumerate(asked):
            if r == me or a.numel() == 0:
                replies.append(torch.zeros(0, dtype=id_dtype))
                continue
            rows = gpb.nid2localnid(a.to(_I64), me)
            s, n, e = sample_rows(indptr, src_local, eid_local, rows, fanout, replace)
            deg = torch.bincount(s, minlength=a.numel())
            replies.append(torch.cat([deg, g._local_nid[n], g._local_eid[e]]).to(id_dtype))
        got = comm.exchange(replies, "sampling")
        start = 0
        for r, (k, reply) in enumerate(zip(counts, got)):
            if k == 0:
                continue
            reply = reply.to(_I64)
            deg = reply[:k]
            T = int(deg.sum())
            if reply.numel() != k + 2 * T:
                raise DGLError(f"sample_layer expected {k + 2 * T} values from rank {r}, got {reply.numel()}")
            pos = remote_pos[order[start:start + k]]
            segs.append(pos.repeat_interleave(deg))
            nbrs.append(reply[k:k + T])
            eids.append(reply[k + T:])
            start += k
    seg, nbr, eid = torch.cat(segs), torch.cat(nbrs), torch.cat(eids)
    o = torch.argsort(seg, stable=True)
    return seg[o], nbr[o], eid[o]


def sample_neighbors(g, nodes, fanout, edge_dir="in", prob=None, replace=False):
    """Sample in-edges of ``nodes`` in a distributed graph (DGL's ``dgl.distributed.sample_neighbors``).

    A collective: every rank calls it (a rank with no seeds passes an empty tensor).

    Parameters
    ----------
    g : DistGraph
    nodes : Tensor
        Global node IDs (distinct).
    fanout : int
        In-edges per node, -1 for all.
    edge_dir : str, optional
        ``'in'`` only (parts store in-edges).
    prob : optional
        Not supported (must be None).
    replace : bool, optional
        With replacement (default False).

    Returns
    -------
    Graph
        A frontier with all ``N`` nodes and the sampled edges (global IDs),
        ``edata[dgl.EID]`` their global edge IDs.

    Raises
    ------
    DGLError
        ``edge_dir='out'``; ``prob`` given; a bad fanout.

    Examples
    --------
    >>> import os, tempfile, torch, mpgraph as dgl
    >>> from mpgraph.distributed import DistGraph, partition_graph, sample_neighbors
    >>> out = tempfile.mkdtemp()
    >>> partition_graph(dgl.graph(([1, 2, 3, 0], [0, 0, 0, 1])), 'star', 1, out)
    >>> dg = DistGraph('star', part_config=os.path.join(out, 'star.json'))
    >>> frontier = sample_neighbors(dg, torch.tensor([0]), -1)
    >>> frontier.num_nodes(), sorted(frontier.edges()[0].tolist()), frontier.edata[dgl.EID].sort().values
    (4, [1, 2, 3], tensor([0, 1, 2]))
    """
    what = "sample_neighbors"
    if not isinstance(g, DistGraph):
        raise DGLTypeError(f"{what} expected a DistGraph, got {type(g).__name__}")
    if edge_dir != "in":
        raise DGLError(f"{what} expected edge_dir='in' (parts store every in-edge of their nodes), got {edge_dir!r}")
    if prob is not None:
        raise DGLError(f"{what} expected prob=None (weighted distributed sampling is not supported), got {prob!r}")
    fanout = check_fanout(fanout, what)
    seeds = _as_ids(nodes, g.num_nodes(), what)
    seg, nbr, eid = sample_layer(g, seeds, fanout, replace)
    idtype = g.idtype
    index = Index.from_coo(nbr.to(idtype), seeds[seg].to(idtype), g.num_nodes(), g.num_nodes())
    frontier = Graph(index, g.canonical_etypes[0])
    frontier.edata[EID] = eid.to(idtype)
    return frontier
