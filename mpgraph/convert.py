"""Graph constructors: :func:`graph`, :func:`heterograph`, :func:`create_block`,
random graphs, and conversion from/to SciPy and NetworkX.

Every constructor validates at the boundary: IDs must be integers, non-negative
and below the declared node counts; ``u`` and ``v`` must have equal length.
"""

import random

import numpy as np
import torch

from ._index import Index
from .base import DGLError, DGLTypeError
from .graph import Graph
# Loaded here, while the package initialises, so that ``mpgraph.heterograph`` stays the function below:
# a submodule imported later would rebind the package attribute to the module.
from .heterograph import HeteroGraph

__all__ = ["graph", "heterograph", "create_block", "block_from_index", "rand_graph", "rand_bipartite",
           "from_scipy", "from_networkx", "to_networkx", "seed"]


def seed(val):
    """Seed mpgraph's random number generators (torch, numpy and ``random``)."""
    if not isinstance(val, int) or isinstance(val, bool):
        raise DGLTypeError(f"expected an int seed, got {type(val).__name__}")
    torch.manual_seed(val)
    np.random.seed(val % (2 ** 32))
    random.seed(val)


def _to_ids(x, name, idtype, device):
    """Convert user IDs to a 1-D tensor; returns (tensor, inferred idtype)."""
    if isinstance(x, torch.Tensor):
        if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
            raise DGLTypeError(f"expected integer node IDs for {name}, got dtype {x.dtype}")
        t = x
    elif isinstance(x, np.ndarray):
        if not np.issubdtype(x.dtype, np.integer):
            raise DGLTypeError(f"expected integer node IDs for {name}, got numpy dtype {x.dtype}")
        t = torch.from_numpy(np.ascontiguousarray(x))
    else:
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError) as err:
            raise DGLTypeError(f"expected a sequence of node IDs for {name}, got {type(x).__name__}") from err
        if arr.size == 0:
            arr = arr.astype(np.int64)
        if not np.issubdtype(arr.dtype, np.integer):
            raise DGLTypeError(f"expected integer node IDs for {name}, got {arr.dtype} values")
        t = torch.from_numpy(arr.astype(np.int64))
    if t.dim() != 1:
        t = t.reshape(-1)
    inferred = t.dtype if t.dtype in (torch.int32, torch.int64) else torch.int64
    idtype = idtype or inferred
    if idtype not in (torch.int32, torch.int64):
        raise DGLError(f"expected idtype torch.int32 or torch.int64, got {idtype}")
    dev = torch.device(device) if device is not None else t.device
    return t.to(device=dev), idtype


def _check_range(t, n, name, count_name):
    if t.numel() == 0:
        return
    lo, hi = int(t.min()), int(t.max())
    if lo < 0:
        raise DGLError(f"expected non-negative node IDs in {name}, got {lo}")
    if hi >= n:
        raise DGLError(f"expected {name} IDs below {count_name}={n}, got {hi}; raise {count_name} to at least "
                       f"{hi + 1} or leave it unset")


def _index_from_data(data, num_src, num_dst, idtype, device, src_name="num_src_nodes", dst_name="num_dst_nodes",
                     square=False):
    """Build an Index from ``(U, V)``, ``('coo', (U, V))``, ``('csr', ...)`` or ``('csc', ...)``."""
    fmt = "coo"
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], str):
        fmt, data = data
    if fmt == "coo":
        if not isinstance(data, (tuple, list)) or len(data) != 2:
            raise DGLError(f"expected graph data as a pair (U, V) of node-ID sequences, got {type(data).__name__}")
        u, idt_u = _to_ids(data[0], "U (source nodes)", idtype, device)
        v, idt_v = _to_ids(data[1], "V (destination nodes)", idtype, device)
        if idtype is None and idt_u != idt_v:
            raise DGLError(f"expected U and V of the same dtype, got {idt_u} and {idt_v}; pass idtype=")
        idtype = idtype or idt_u
        if u.device != v.device:
            raise DGLError(f"expected U and V on the same device, got {u.device} and {v.device}")
        if u.numel() != v.numel():
            raise DGLError(f"expected U and V of the same length, got {u.numel()} and {v.numel()}")
        if u.numel() and (int(u.min()) < 0 or int(v.min()) < 0):
            raise DGLError(f"expected non-negative node IDs, got {min(int(u.min()), int(v.min()))}")
        max_u = int(u.max()) + 1 if u.numel() else 0
        max_v = int(v.max()) + 1 if v.numel() else 0
        if square:
            need = max(max_u, max_v)
            if num_src is None:
                num_src = num_dst = need
        if num_src is None:
            num_src = max_u
        if num_dst is None:
            num_dst = max_v
        _check_int(num_src, src_name)
        _check_int(num_dst, dst_name)
        _check_range(u, num_src, "U (source node)", src_name)
        _check_range(v, num_dst, "V (destination node)", dst_name)
        return Index.from_coo(u.to(idtype), v.to(idtype), num_src, num_dst)
    if fmt in ("csr", "csc"):
        if not isinstance(data, (tuple, list)) or len(data) not in (2, 3):
            raise DGLError(f"expected ('{fmt}', (indptr, indices, eids)), got {type(data).__name__} of "
                           f"length {len(data) if hasattr(data, '__len__') else '?'}")
        indptr, _ = _to_ids(data[0], "indptr", torch.int64, device)
        indices, idt = _to_ids(data[1], "indices", idtype, device)
        idtype = idtype or idt
        eids = None
        if len(data) == 3 and data[2] is not None and not (hasattr(data[2], "__len__") and len(data[2]) == 0
                                                           and indices.numel() > 0):
            eids, _ = _to_ids(data[2], "eids", torch.int64, device)
        rows = indptr.numel() - 1
        if rows < 0:
            raise DGLError("expected indptr with at least one element (indptr[0] == 0)")
        E = indices.numel()
        if int(indptr[0]) != 0 or int(indptr[-1]) != E or bool((indptr[1:] < indptr[:-1]).any()):
            raise DGLError(f"expected a non-decreasing indptr from 0 to len(indices)={E}, got "
                           f"indptr[0]={int(indptr[0])}, indptr[-1]={int(indptr[-1])}")
        if eids is not None:
            if eids.numel() != E:
                raise DGLError(f"expected {E} edge IDs (one per index), got {eids.numel()}")
            if E and not torch.equal(torch.sort(eids.long()).values, torch.arange(E, device=eids.device)):
                raise DGLError(f"expected eids to be a permutation of 0..{E - 1}")
        cols_max = int(indices.max()) + 1 if E else 0
        if fmt == "csr":
            ns = rows if num_src is None else num_src
            nd = (max(cols_max, ns) if square else cols_max) if num_dst is None else num_dst
        else:
            nd = rows if num_dst is None else num_dst
            ns = (max(cols_max, nd) if square else cols_max) if num_src is None else num_src
        if square:
            ns = nd = max(ns, nd)
        _check_int(ns, src_name)
        _check_int(nd, dst_name)
        if fmt == "csr":
            if rows > ns:
                raise DGLError(f"expected at most {src_name}={ns} rows in indptr, got {rows}")
            indptr = torch.cat([indptr, indptr[-1:].expand(ns - rows)]) if rows < ns else indptr
            _check_range(indices, nd, "indices (destination node)", dst_name)
            return Index.from_csr(indptr, indices.to(idtype), eids, ns, nd)
        if rows > nd:
            raise DGLError(f"expected at most {dst_name}={nd} rows in indptr, got {rows}")
        indptr = torch.cat([indptr, indptr[-1:].expand(nd - rows)]) if rows < nd else indptr
        _check_range(indices, ns, "indices (source node)", src_name)
        return Index.from_csc(indptr, indices.to(idtype), eids, ns, nd)
    raise DGLError(f"expected sparse format 'coo', 'csr' or 'csc', got {fmt!r}")


def _check_int(n, name):
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise DGLError(f"expected a non-negative int for {name}, got {n!r}")


def graph(data, num_nodes=None, idtype=None, device=None, row_sorted=False, col_sorted=False):
    """Create a homogeneous graph.

    Parameters
    ----------
    data : tuple
        ``(U, V)`` or ``('coo', (U, V))``: edge ``k`` goes from ``U[k]`` to ``V[k]``;
        ``('csr', (indptr, indices, eids))``: out-edges per source (``indptr: (N + 1,)``);
        ``('csc', (indptr, indices, eids))``: in-edges per destination.
        ``eids`` may be empty or None (edges numbered in storage order).
    num_nodes : int, optional
        Number of nodes; default is the largest ID plus one.
    idtype : torch.dtype, optional
        ``torch.int32`` or ``torch.int64``; default from the ID tensors (int64 for lists).
    device : torch.device, optional
        Default: the device of the ID tensors.

    Returns
    -------
    Graph

    Raises
    ------
    DGLError
        Negative IDs, IDs not below ``num_nodes``, ``U``/``V`` of different lengths.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> g = dgl.graph(([0, 1, 2], [1, 2, 3]))
    >>> g.num_nodes(), g.num_edges()
    (4, 3)
    >>> dgl.graph(([0, 1], [1, 5]), num_nodes=3)
    Traceback (most recent call last):
    ...
    mpgraph.base.DGLError: expected V (destination node) IDs below num_nodes=3, got 5; ...
    """
    index = _index_from_data(data, num_nodes, num_nodes, idtype, device, "num_nodes", "num_nodes", square=True)
    return Graph(index)


def heterograph(data_dict, num_nodes_dict=None, idtype=None, device=None):
    """Create a graph from ``{(srctype, etype, dsttype): (U, V)}``, one entry per relation.

    With one relation whose node types are all the graph has, the result is a
    :class:`~mpgraph.graph.Graph` (homogeneous when ``srctype == dsttype``,
    uni-bipartite otherwise). With several relations, or when
    ``num_nodes_dict`` names node types that no relation uses, it is a
    :class:`~mpgraph.heterograph.HeteroGraph`. Node IDs are per type; the node
    count of a type is ``num_nodes_dict[type]``, or else the largest ID of that
    type in any relation plus one. Each relation accepts the data forms of
    :func:`graph` (``(U, V)``, ``('coo', ...)``, ``('csr', ...)``, ``('csc', ...)``).

    Parameters
    ----------
    data_dict : dict
        ``{(srctype, etype, dsttype): data}``; ``etype`` names may repeat across
        relations with different end types.
    num_nodes_dict : dict, optional
        ``{ntype: int}``.
    idtype : torch.dtype, optional
        ``torch.int32`` or ``torch.int64``; default from the ID tensors (int64 for lists).
    device : torch.device, optional
        Default: the device of the ID tensors.

    Returns
    -------
    Graph or HeteroGraph

    Raises
    ------
    DGLError
        An empty dict or a key that is not a ``(srctype, etype, dsttype)`` tuple
        of str; a relation given twice; negative IDs or IDs not below
        ``num_nodes_dict[type]``; relations of different ID types (pass
        ``idtype=``) or devices.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> g = dgl.heterograph({('user', 'plays', 'game'): ([0, 1, 2], [0, 0, 1])})
    >>> g.num_src_nodes(), g.num_dst_nodes(), g.ntypes
    (3, 2, ['game', 'user'])
    >>> hg = dgl.heterograph({('user', 'follows', 'user'): ([0, 1], [1, 2]),
    ...                       ('user', 'plays', 'game'): ([0, 2], [1, 0])},
    ...                      num_nodes_dict={'game': 4})
    >>> hg.num_nodes('user'), hg.num_nodes('game'), hg.canonical_etypes
    (3, 4, [('user', 'follows', 'user'), ('user', 'plays', 'game')])
    """
    if not isinstance(data_dict, dict) or not data_dict:
        raise DGLError(f"expected a non-empty dict {{(srctype, etype, dsttype): (U, V)}}, got {data_dict!r}")
    for key in data_dict:
        if not (isinstance(key, tuple) and len(key) == 3 and all(isinstance(k, str) for k in key)):
            raise DGLError(f"expected a canonical edge type (srctype, etype, dsttype) of str, got {key!r}")
    num_nodes_dict = dict(num_nodes_dict or {})
    used = {t for s, _, d in data_dict for t in (s, d)}
    if len(data_dict) == 1 and set(num_nodes_dict) <= used:
        (key, data), = data_dict.items()
        srctype, etype, dsttype = key
        if srctype == dsttype:
            n = num_nodes_dict.get(srctype)
            index = _index_from_data(data, n, n, idtype, device, f"num_nodes_dict[{srctype!r}]",
                                     f"num_nodes_dict[{srctype!r}]", square=True)
        else:
            index = _index_from_data(data, num_nodes_dict.get(srctype), num_nodes_dict.get(dsttype), idtype,
                                     device, f"num_nodes_dict[{srctype!r}]", f"num_nodes_dict[{dsttype!r}]")
        return Graph(index, (srctype, etype, dsttype))
    for t, n in num_nodes_dict.items():
        _check_int(n, f"num_nodes_dict[{t!r}]")
    indexes = {}
    for key, data in data_dict.items():
        s, _, d = key
        ns, nd = num_nodes_dict.get(s), num_nodes_dict.get(d)
        try:
            if s == d:
                indexes[key] = _index_from_data(data, ns, nd, idtype, device, f"num_nodes_dict[{s!r}]",
                                                f"num_nodes_dict[{d!r}]", square=True)
            else:
                indexes[key] = _index_from_data(data, ns, nd, idtype, device, f"num_nodes_dict[{s!r}]",
                                                f"num_nodes_dict[{d!r}]")
        except DGLError as err:
            raise type(err)(f"relation {key}: {err}") from err
    idtypes = {ix.idtype for ix in indexes.values()}
    if len(idtypes) > 1:
        raise DGLError(f"expected the ID tensors of every relation to have one dtype, got "
                       f"{sorted(str(t) for t in idtypes)}; pass idtype=")
    counts = dict(num_nodes_dict)
    for (s, _, d), ix in indexes.items():
        counts[s] = max(counts.get(s, 0), ix.num_src)
        counts[d] = max(counts.get(d, 0), ix.num_dst)
    for key, ix in indexes.items():
        s, _, d = key
        if (ix.num_src, ix.num_dst) != (counts[s], counts[d]):
            indexes[key] = Index.from_coo(ix.src, ix.dst, counts[s], counts[d])
    dev = next(iter(indexes.values())).device
    return HeteroGraph(indexes, counts, idtype=idtypes.pop(), device=dev)


def create_block(data_dict, num_src_nodes=None, num_dst_nodes=None, idtype=None, device=None):
    """Create a block (message-flow graph) with separate source and destination nodes.

    ``data_dict`` is ``(U, V)`` (or another :func:`graph` data form) or a
    one-relation dict ``{(srctype, etype, dsttype): (U, V)}``; node counts
    are ints (or one-entry dicts keyed by type).

    Examples
    --------
    >>> import mpgraph as dgl
    >>> b = dgl.create_block(([0, 1, 2], [0, 0, 1]), num_src_nodes=4, num_dst_nodes=2)
    >>> b
    Block(num_src_nodes=4,
          num_dst_nodes=2,
          num_edges=3)
    """
    key = ("_N", "_E", "_N")
    data = data_dict
    if isinstance(data_dict, dict):
        if len(data_dict) != 1:
            raise DGLError(f"expected one relation in create_block, got {len(data_dict)} (multi-relation "
                           "blocks are not supported yet)")
        (key, data), = data_dict.items()
        if isinstance(key, str):
            key = ("_N", key, "_N")
    if isinstance(num_src_nodes, dict):
        num_src_nodes = num_src_nodes.get(key[0])
    if isinstance(num_dst_nodes, dict):
        num_dst_nodes = num_dst_nodes.get(key[2])
    index = _index_from_data(data, num_src_nodes, num_dst_nodes, idtype, device)
    return Graph(index, tuple(key), is_block=True)


def block_from_index(index, canonical_etype=("_N", "_E", "_N")):
    """Block over an existing :class:`~mpgraph._index.Index` (for samplers; no validation)."""
    return Graph(index, canonical_etype, is_block=True)


def rand_graph(num_nodes, num_edges, idtype=torch.int64, device="cpu"):
    """Random graph with ``num_edges`` distinct edges drawn uniformly (self-loops allowed).

    Examples
    --------
    >>> import mpgraph as dgl
    >>> g = dgl.rand_graph(30, 100)
    >>> g.num_nodes(), g.num_edges(), g.is_multigraph
    (30, 100, False)
    """
    _check_int(num_nodes, "num_nodes")
    _check_int(num_edges, "num_edges")
    return Graph(_rand_index(num_nodes, num_nodes, num_edges, idtype, device))


def rand_bipartite(utype, etype, vtype, num_src_nodes, num_dst_nodes, num_edges, idtype=torch.int64, device="cpu"):
    """Random uni-bipartite graph ``utype --etype--> vtype`` with distinct edges."""
    _check_int(num_src_nodes, "num_src_nodes")
    _check_int(num_dst_nodes, "num_dst_nodes")
    _check_int(num_edges, "num_edges")
    return Graph(_rand_index(num_src_nodes, num_dst_nodes, num_edges, idtype, device), (utype, etype, vtype))


def _rand_index(ns, nd, E, idtype, device):
    total = ns * nd
    if E > total:
        raise DGLError(f"expected num_edges <= {total} (every possible edge), got {E}")
    if E == 0:
        keys = torch.zeros(0, dtype=torch.int64)
    elif E > total // 3:
        keys = torch.randperm(total)[:E]
    else:
        keys = torch.zeros(0, dtype=torch.int64)
        while keys.numel() < E:
            draw = torch.randint(0, total, (int((E - keys.numel()) * 1.1) + 16,))
            keys = torch.unique(torch.cat([keys, draw]))
        keys = keys[torch.randperm(keys.numel())[:E]]
    keys = torch.sort(keys).values
    src, dst = keys // nd, keys % nd
    return Index.from_coo(src.to(idtype).to(device), dst.to(idtype).to(device), ns, nd)


def from_scipy(sp_mat, eweight_name=None, idtype=None, device=None):
    """Graph from a SciPy sparse matrix (rows = sources, columns = destinations).

    A square matrix gives a homogeneous graph; otherwise use
    :func:`heterograph`. ``eweight_name`` stores the nonzero values as an edge
    feature (float32 for float matrices).
    """
    import scipy.sparse as sp
    if not sp.issparse(sp_mat):
        raise DGLTypeError(f"expected a scipy.sparse matrix, got {type(sp_mat).__name__}")
    n_rows, n_cols = sp_mat.shape
    if n_rows != n_cols:
        raise DGLError(f"expected a square matrix for a homogeneous graph, got shape {sp_mat.shape}")
    coo = sp_mat.tocoo()
    g = graph((coo.row.astype(np.int64), coo.col.astype(np.int64)), num_nodes=n_rows, idtype=idtype or torch.int64,
              device=device)
    if eweight_name is not None:
        g.edata[eweight_name] = torch.as_tensor(coo.data).to(g.device)
    return g


def from_networkx(nx_graph, node_attrs=None, edge_attrs=None, edge_id_attr_name=None, idtype=None, device=None):
    """Graph from a NetworkX graph (undirected graphs become two directed edges per edge).

    Nodes are relabelled ``0..N-1`` in ``nx_graph.nodes`` order. Node and edge
    attributes named in ``node_attrs``/``edge_attrs`` are stacked into features.
    """
    import networkx as nx
    if not isinstance(nx_graph, nx.Graph):
        raise DGLTypeError(f"expected a networkx graph, got {type(nx_graph).__name__}")
    nodes = list(nx_graph.nodes)
    pos = {n: i for i, n in enumerate(nodes)}
    directed = nx_graph.is_directed()
    edges = list(nx_graph.edges(data=True))
    if edge_id_attr_name is not None:
        try:
            edges.sort(key=lambda e: e[2][edge_id_attr_name])
        except KeyError as err:
            raise DGLError(f"expected every edge to have attribute {edge_id_attr_name!r}") from err
    src, dst, attrs = [], [], []
    for a, b, d in edges:
        src.append(pos[a])
        dst.append(pos[b])
        attrs.append(d)
        if not directed:
            src.append(pos[b])
            dst.append(pos[a])
            attrs.append(d)
    g = graph((torch.tensor(src, dtype=torch.int64), torch.tensor(dst, dtype=torch.int64)), num_nodes=len(nodes),
              idtype=idtype, device=device)
    for name in node_attrs or []:
        try:
            vals = [nx_graph.nodes[n][name] for n in nodes]
        except KeyError as err:
            raise DGLError(f"expected every node to have attribute {name!r}") from err
        g.ndata[name] = _stack(vals).to(g.device)
    for name in edge_attrs or []:
        try:
            vals = [d[name] for d in attrs]
        except KeyError as err:
            raise DGLError(f"expected every edge to have attribute {name!r}") from err
        g.edata[name] = _stack(vals).to(g.device)
    return g


def _stack(vals):
    if vals and isinstance(vals[0], torch.Tensor):
        return torch.stack(vals)
    return torch.as_tensor(np.asarray(vals))


def to_networkx(g, node_attrs=None, edge_attrs=None):
    """Convert a homogeneous graph to a :class:`networkx.MultiDiGraph` (edge attribute ``id``)."""
    import networkx as nx
    if g._bipartite:
        raise DGLError("expected a homogeneous graph in to_networkx, got a bipartite graph or block")
    out = nx.MultiDiGraph()
    out.add_nodes_from(range(g.num_nodes()))
    src, dst = g.edges()
    for eid, (u, v) in enumerate(zip(src.tolist(), dst.tolist())):
        attrs = {"id": eid}
        for name in edge_attrs or []:
            attrs[name] = g.edata[name][eid]
        out.add_edge(u, v, **attrs)
    for name in node_attrs or []:
        feat = g.ndata[name]
        for i in range(g.num_nodes()):
            out.nodes[i][name] = feat[i]
    return out
