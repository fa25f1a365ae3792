"""METIS graph partitioning through pymetis (DGL's ``dgl.metis_partition`` and ``metis_partition_assignment``).

The graph is symmetrised (each edge in both directions, self-loops and
duplicates removed) before METIS sees it, as DGL does. METIS runs with a fixed
seed (0), so the same graph gives the same partition.
"""

import numpy as np
import torch

from ._index import Index, as_index
from .base import EID, NID, DGLError
from .graph import Graph

__all__ = ["metis_partition_assignment", "metis_partition", "partition_graph_with_halo"]

_I64 = torch.int64
_MODES = ("k-way", "recursive")


def _symmetric_csr(index):
    """``(indptr, indices)`` (int64, CPU) of the undirected simple graph without self-loops."""
    N = index.num_src
    src, dst = index.src64.cpu(), index.dst64.cpu()
    keep = src != dst
    src, dst = src[keep], dst[keep]
    key = torch.unique(torch.cat([src * N + dst, dst * N + src]))
    rows, cols = key // max(N, 1), key % max(N, 1)
    indptr = torch.zeros(N + 1, dtype=_I64)
    torch.cumsum(torch.bincount(rows, minlength=N), 0, out=indptr[1:])
    return indptr, cols


def _check_homogeneous(g, what):
    if not isinstance(g, Graph):
        raise DGLError(f"{what} expected an mpgraph graph, got {type(g).__name__}")
    if g.is_block or g._bipartite:
        raise DGLError(f"{what} expected a graph with one node type, got node types {g.ntypes}"
                       + (" (a block)" if g.is_block else ""))


def metis_partition_assignment(g, k, balance_ntypes=None, balance_edges=False, mode="k-way", objtype="cut"):
    """Partition ``g``'s nodes into ``k`` parts with METIS; return each node's part.

    Parameters
    ----------
    g : Graph
        A graph with one node type; edge directions are ignored.
    k : int
        Number of parts, ``>= 1``.
    balance_ntypes : Tensor, optional
        ``(N,)`` integer category per node: METIS balances every category's
        count across the parts (one constraint per category).
    balance_edges : bool, optional
        Balance the number of edges (in-degree + 1 as vertex weight) instead
        of nodes (default False).
    mode : str, optional
        ``'k-way'`` (default) or ``'recursive'`` bisection.
    objtype : str, optional
        ``'cut'`` (default; minimise the edge cut) or ``'vol'`` (communication volume).

    Returns
    -------
    Tensor
        ``(N,)`` int64 part ID of each node, on ``g.device``.

    Raises
    ------
    DGLError
        ``k`` not a positive int, unknown ``mode``/``objtype``, a graph with
        several node types, pymetis missing.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.partition import metis_partition_assignment
    >>> g = dgl.graph(([0, 1, 2, 3, 4, 5, 2], [1, 2, 0, 4, 5, 3, 3]))   # two triangles joined by 2->3
    >>> parts = metis_partition_assignment(g, 2)
    >>> len(set(parts[:3].tolist())), len(set(parts[3:].tolist())), bool(parts[0] != parts[3])
    (1, 1, True)
    """
    what = "metis_partition_assignment"
    _check_homogeneous(g, what)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise DGLError(f"{what} expected k to be an int >= 1, got {k!r}")
    if mode not in _MODES:
        raise DGLError(f"{what} expected mode 'k-way' or 'recursive', got {mode!r}")
    if objtype not in ("cut", "vol"):
        raise DGLError(f"{what} expected objtype 'cut' or 'vol', got {objtype!r}")
    try:
        import pymetis
    except ImportError as err:
        raise DGLError(f"{what} expected the pymetis package, got an ImportError; install it with "
                       "`pip install pymetis`") from err
    index = as_index(g)
    N = index.num_src
    if N == 0:
        return torch.zeros(0, dtype=_I64, device=g.device)
    if k == 1:
        return torch.zeros(N, dtype=_I64, device=g.device)
    indptr, cols = _symmetric_csr(index)
    weights = []
    if balance_ntypes is not None:
        types = torch.as_tensor(balance_ntypes).reshape(-1).cpu().to(_I64)
        if types.numel() != N:
            raise DGLError(f"{what} expected balance_ntypes with one entry per node ({N}), got {types.numel()}")
        _, types = torch.unique(types, return_inverse=True)
        weights.append(torch.nn.functional.one_hot(types).to(_I64))                       # (N, T)
    if balance_edges:
        weights.append((index.in_degrees().cpu() + 1).unsqueeze(1))                        # (N, 1)
    vweights = None
    if weights:
        vweights = np.ascontiguousarray(torch.cat(weights, 1).numpy().reshape(-1))         # (N * ncon,)
    options = pymetis.Options(seed=0)
    options.objtype = 0 if objtype == "cut" else 1
    adjacency = pymetis.CSRAdjacency(indptr.numpy(), cols.numpy())
    _, parts = pymetis.part_graph(k, adjacency=adjacency, vweights=vweights, recursive=mode == "recursive",
                                  options=options)
    return torch.as_tensor(np.asarray(parts, dtype=np.int64), device=g.device)


def partition_graph_with_halo(g, node_part, extra_cached_hops, reshuffle=False):
    """Split ``g`` by ``node_part`` into one subgraph per part, each with ``extra_cached_hops`` of halo.

    Part ``i``'s subgraph holds the part's nodes (``ndata['inner_node']`` True)
    and the edges among them, plus, for every extra hop, the in-edges of the
    nodes reached so far and their sources (halo nodes). ``ndata[NID]`` and
    ``edata[EID]`` give the IDs in ``g`` (in the reshuffled numbering with
    ``reshuffle``, where ``ndata['orig_id']``/``edata['orig_id']`` give the
    original ones). Node and edge features are not copied.

    Returns
    -------
    parts : dict of int to Graph
    orig_nids, orig_eids : Tensor or None
        With ``reshuffle``: the original ID of each new node / edge ID.
    """
    what = "partition_graph_with_halo"
    _check_homogeneous(g, what)
    index = as_index(g)
    N, E = index.num_src, index.num_edges
    device = g.device
    node_part = torch.as_tensor(node_part, device=device).reshape(-1).to(_I64)
    if node_part.numel() != N:
        raise DGLError(f"{what} expected node_part with one part ID per node ({N}), got {node_part.numel()}")
    if isinstance(extra_cached_hops, bool) or not isinstance(extra_cached_hops, int) or extra_cached_hops < 0:
        raise DGLError(f"{what} expected extra_cached_hops to be an int >= 0, got {extra_cached_hops!r}")
    num_parts = int(node_part.max()) + 1 if N else 0
    src, dst = index.src64, index.dst64
    new_nid = torch.arange(N, device=device)
    new_eid = torch.arange(E, device=device)
    orig_nids = orig_eids = None
    if reshuffle:
        orig_nids = torch.argsort(node_part, stable=True)                    # new ID -> original
        new_nid = torch.empty_like(orig_nids)
        new_nid[orig_nids] = torch.arange(N, device=device)
        orig_eids = torch.argsort(node_part[dst], stable=True)               # edges grouped by dst's part
        new_eid = torch.empty_like(orig_eids)
        new_eid[orig_eids] = torch.arange(E, device=device)
    indptr, in_src, in_eid = index.csc()
    parts = {}
    for p in range(num_parts):                           # over parts (k of them), not nodes
        inner = node_part == p
        edge_in = inner[src] & inner[dst]
        eids = edge_in.nonzero().squeeze(1)
        reached = inner.clone()
        frontier = inner.nonzero().squeeze(1)
        for _ in range(extra_cached_hops):
            start = indptr[frontier]
            deg = indptr[frontier + 1] - start
            pos = torch.repeat_interleave(start - (torch.cumsum(deg, 0) - deg), deg) + torch.arange(
                int(deg.sum()), device=device)
            hop_eids, hop_src = in_eid[pos], in_src[pos]
            eids = torch.unique(torch.cat([eids, hop_eids]))
            new = hop_src[~reached[hop_src]]
            reached[new] = True
            frontier = torch.unique(new)
        inner_nodes = inner.nonzero().squeeze(1)
        halo = (reached & ~inner).nonzero().squeeze(1)
        nodes = torch.cat([inner_nodes, halo])
        local = torch.full((N,), -1, dtype=_I64, device=device)
        local[nodes] = torch.arange(nodes.numel(), device=device)
        idtype = index.idtype
        sub = Graph(Index.from_coo(local[src[eids]].to(idtype), local[dst[eids]].to(idtype), nodes.numel(),
                                   nodes.numel()))
        sub.ndata[NID] = new_nid[nodes].to(idtype)
        sub.ndata["inner_node"] = torch.arange(nodes.numel(), device=device) < inner_nodes.numel()
        sub.edata[EID] = new_eid[eids].to(idtype)
        sub.edata["inner_edge"] = edge_in[eids]
        if reshuffle:
            sub.ndata["orig_id"] = nodes.to(idtype)
            sub.edata["orig_id"] = eids.to(idtype)
        parts[p] = sub
    return parts, orig_nids, orig_eids


def metis_partition(g, k, extra_cached_hops=0, reshuffle=False, balance_ntypes=None, balance_edges=False,
                    mode="k-way"):
    """Partition ``g`` with METIS into ``k`` subgraphs (see :func:`partition_graph_with_halo`).

    Returns
    -------
    dict of int to Graph
        Part ID to its subgraph (``ndata[NID]``, ``ndata['inner_node']``,
        ``edata[EID]``, ``edata['inner_edge']``).

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.partition import metis_partition
    >>> g = dgl.graph(([0, 1, 2, 3, 4, 5, 2], [1, 2, 0, 4, 5, 3, 3]))
    >>> parts = metis_partition(g, 2)
    >>> sorted(p.num_nodes() for p in parts.values()), sum(p.num_edges() for p in parts.values())
    ([3, 3], 6)
    """
    node_part = metis_partition_assignment(g, k, balance_ntypes, balance_edges, mode)
    parts, _, _ = partition_graph_with_halo(g, node_part, extra_cached_hops, reshuffle)
    return parts
