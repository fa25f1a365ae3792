"""The :class:`Graph`: structure (an :class:`~mpgraph._index.Index`) plus feature frames.

A graph holds one relation (``srctype --etype--> dsttype``): homogeneous when
source and destination node sets are the same, uni-bipartite otherwise, and a
*block* (a message-flow graph of mini-batch training) when the source and
destination node sets are stored separately even under one type name.
Message passing (``update_all``, ``apply_edges``, ...) is lowered to
:mod:`mpgraph.ops` by :mod:`mpgraph._lowering`.
"""

import contextlib

import torch

from . import _lowering
from ._index import GraphLike, Index
from .base import ALL, DGLError, DGLTypeError, is_all
from .frame import Frame
from .udf import EdgeBatch, NodeBatch, check_udf_output

__all__ = ["Graph", "DGLGraph", "DGLBlock"]

_DEFAULT_NTYPE = "_N"
_DEFAULT_ETYPE = "_E"


def _format_ids_error(what, n, bad):
    return (f"expected {what} IDs in [0, {n}), got {bad}; "
            f"the graph has {n} {what}s (add more with g.add_nodes/add_edges)")


class Graph(GraphLike):
    """A graph with node and edge features (DGL's ``DGLGraph``).

    Build graphs with :func:`mpgraph.graph`, :func:`mpgraph.heterograph`,
    :func:`mpgraph.create_block` or :func:`mpgraph.rand_graph` rather than with
    this constructor.

    Parameters
    ----------
    index : Index
        The structure: ``num_src`` source nodes, ``num_dst`` destination nodes, edges.
    canonical_etype : tuple of str, optional
        ``(srctype, etype, dsttype)``; defaults to ``('_N', '_E', '_N')``.
    is_block : bool
        Keep source and destination nodes as separate sets even when the type
        names are equal (a message-flow graph).
    """

    def __init__(self, index, canonical_etype=None, is_block=False, node_frames=None, edge_frame=None):
        if not isinstance(index, Index):
            raise DGLTypeError(f"expected an Index, got {type(index).__name__}; use mpgraph.graph(...)")
        srctype, etype, dsttype = canonical_etype or (_DEFAULT_NTYPE, _DEFAULT_ETYPE, _DEFAULT_NTYPE)
        self._index = index
        self._srctype, self._etype, self._dsttype = srctype, etype, dsttype
        self._is_block = bool(is_block)
        self._bipartite = self._is_block or srctype != dsttype
        if not self._bipartite and index.num_src != index.num_dst:
            raise DGLError(f"expected equal source and destination node counts for a homogeneous graph, got "
                           f"{index.num_src} and {index.num_dst}")
        device = index.device
        if node_frames is None:
            node_frames = [Frame(index.num_src, device, "node")]
            if self._bipartite:
                node_frames.append(Frame(index.num_dst, device, "node"))
        self._node_frames = list(node_frames)
        self._edge_frame = edge_frame if edge_frame is not None else Frame(index.num_edges, device, "edge")
        self._batch_num_nodes = None
        self._batch_num_edges = None

    # ------------------------------------------------------------------
    # structure basics
    # ------------------------------------------------------------------
    def _op_index(self):
        return self._index

    @property
    def _src_frame(self):
        return self._node_frames[0]

    @property
    def _dst_frame(self):
        return self._node_frames[-1]

    def _frames(self):
        return {"u": self._src_frame, "v": self._dst_frame, "e": self._edge_frame}

    @property
    def idtype(self):
        """Integer type of node and edge IDs (``torch.int32`` or ``torch.int64``)."""
        return self._index.idtype

    @property
    def device(self):
        """Device of the structure and features."""
        return self._index.device

    @property
    def is_block(self):
        """True for blocks (message-flow graphs with separate source/destination node sets)."""
        return self._is_block

    @property
    def ntypes(self):
        """Node type names, sorted (``['_N']`` for a homogeneous graph)."""
        if self._is_block and self._srctype == self._dsttype:
            return [self._srctype]
        return sorted({self._srctype, self._dsttype})

    @property
    def etypes(self):
        """Edge type names."""
        return [self._etype]

    @property
    def canonical_etypes(self):
        """``[(srctype, etype, dsttype)]``."""
        return [(self._srctype, self._etype, self._dsttype)]

    @property
    def srctypes(self):
        """Source node types."""
        return [self._srctype]

    @property
    def dsttypes(self):
        """Destination node types."""
        return [self._dsttype]

    def to_canonical_etype(self, etype):
        """The canonical ``(srctype, etype, dsttype)`` of ``etype``."""
        self._check_etype(etype)
        return self.canonical_etypes[0]

    def get_ntype_id(self, ntype):
        """Integer ID of node type ``ntype``."""
        if ntype is None:
            return 0
        return self.ntypes.index(self._check_ntype(ntype))

    def get_etype_id(self, etype):
        """Integer ID of edge type ``etype`` (always 0)."""
        self._check_etype(etype)
        return 0

    def metagraph(self):
        """The type-level graph as a :class:`networkx.MultiDiGraph`."""
        import networkx as nx
        mg = nx.MultiDiGraph()
        mg.add_nodes_from(self.ntypes)
        mg.add_edge(self._srctype, self._dsttype, key=self._etype)
        return mg

    def _check_ntype(self, ntype):
        if ntype is None:
            return None
        if ntype not in (self._srctype, self._dsttype):
            raise DGLError(f"expected a node type in {self.ntypes}, got {ntype!r}")
        return ntype

    def _check_etype(self, etype):
        if etype is None:
            return None
        if isinstance(etype, tuple):
            if etype != self.canonical_etypes[0]:
                raise DGLError(f"expected a canonical edge type in {self.canonical_etypes}, got {etype!r}")
        elif etype != self._etype:
            raise DGLError(f"expected an edge type in {self.etypes}, got {etype!r}")
        return etype

    def _node_set(self, ntype, default="both"):
        """Frame index (0 = source set, 1 = destination set) selected by ``ntype``."""
        self._check_ntype(ntype)
        if not self._bipartite:
            return 0
        if self._is_block or ntype is None:
            if default == "both":
                raise DGLError("this graph has separate source and destination node sets; use srcdata/dstdata, "
                               "num_src_nodes/num_dst_nodes, or name the node type")
            return 0 if default == "src" else 1
        return 0 if ntype == self._srctype else 1

    # ------------------------------------------------------------------
    # counts and node/edge queries
    # ------------------------------------------------------------------
    def num_nodes(self, ntype=None):
        """Number of nodes (of ``ntype``; all types together when omitted)."""
        self._check_ntype(ntype)
        if not self._bipartite:
            return self._index.num_src
        if ntype is None:
            return self._index.num_src + self._index.num_dst
        if self._is_block:
            raise DGLError("a block's source and destination nodes share the type name; "
                           "use num_src_nodes() or num_dst_nodes()")
        return self._index.num_src if ntype == self._srctype else self._index.num_dst

    def number_of_nodes(self, ntype=None):
        """Alias of :meth:`num_nodes`."""
        return self.num_nodes(ntype)

    def num_src_nodes(self, ntype=None):
        """Number of source nodes."""
        self._check_ntype(ntype)
        return self._index.num_src

    def num_dst_nodes(self, ntype=None):
        """Number of destination nodes."""
        self._check_ntype(ntype)
        return self._index.num_dst

    def number_of_src_nodes(self, ntype=None):
        """Alias of :meth:`num_src_nodes`."""
        return self.num_src_nodes(ntype)

    def number_of_dst_nodes(self, ntype=None):
        """Alias of :meth:`num_dst_nodes`."""
        return self.num_dst_nodes(ntype)

    def num_edges(self, etype=None):
        """Number of edges."""
        self._check_etype(etype)
        return self._index.num_edges

    def number_of_edges(self, etype=None):
        """Alias of :meth:`num_edges`."""
        return self.num_edges(etype)

    def _ids(self, ids, n, what):
        """Validate user node/edge IDs: returns (int64 tensor, was_scalar)."""
        if isinstance(ids, bool):
            raise DGLTypeError(f"expected {what} IDs as int, list or integer tensor, got bool")
        scalar = isinstance(ids, int) or (isinstance(ids, torch.Tensor) and ids.dim() == 0)
        if isinstance(ids, torch.Tensor):
            if ids.dtype == torch.bool:
                raise DGLTypeError(f"expected integer {what} IDs, got a bool tensor; use mask.nonzero().squeeze(1)")
            if ids.is_floating_point() or ids.is_complex():
                raise DGLTypeError(f"expected integer {what} IDs, got dtype {ids.dtype}")
            if ids.device != self.device:
                raise DGLError(f"expected {what} IDs on {self.device} (the graph's device), got {ids.device}")
            t = ids.reshape(-1).to(torch.int64)
        else:
            try:
                t = torch.as_tensor(ids, dtype=torch.int64, device=self.device).reshape(-1)
            except (TypeError, ValueError, RuntimeError) as err:
                raise DGLTypeError(f"expected {what} IDs as int, list or integer tensor, got {ids!r}") from err
        if t.numel():
            lo, hi = int(t.min()), int(t.max())
            if lo < 0 or hi >= n:
                raise DGLError(_format_ids_error(what, n, lo if lo < 0 else hi))
        return t, scalar

    def _out_ids(self, t):
        return t.to(self.idtype)

    def has_nodes(self, vid, ntype=None):
        """Whether each of ``vid`` is a node of the graph (bool, or bool tensor)."""
        n = self.num_nodes(ntype) if not self._bipartite or ntype is not None else self.num_dst_nodes()
        scalar = isinstance(vid, int) or (isinstance(vid, torch.Tensor) and vid.dim() == 0)
        t = torch.as_tensor(vid, device=self.device).reshape(-1)
        res = (t >= 0) & (t < n)
        return bool(res[0]) if scalar else res

    def has_edges_between(self, u, v, etype=None):
        """Whether an edge ``u[i] -> v[i]`` exists, for each pair."""
        self._check_etype(etype)
        u_t, scalar = self._ids(u, self._index.num_src, "source node")
        v_t, _ = self._ids(v, self._index.num_dst, "destination node")
        u_t, v_t = torch.broadcast_tensors(u_t, v_t)
        keys, _ = self._edge_keys()
        q = u_t * self._index.num_dst + v_t
        pos = torch.searchsorted(keys, q).clamp(max=max(keys.numel() - 1, 0))
        res = (keys[pos] == q) if keys.numel() else torch.zeros_like(q, dtype=torch.bool)
        return bool(res[0]) if scalar else res

    def _edge_keys(self):
        def build():
            key = self._index.src64 * self._index.num_dst + self._index.dst64
            sorted_key, order = torch.sort(key, stable=True)
            return sorted_key, order
        return self._index.cached("edge_keys", build)

    def edge_ids(self, u, v, return_uv=False, etype=None):
        """Edge IDs of the pairs ``(u[i], v[i])``.

        Raises :class:`DGLError` when a pair has no edge. With ``return_uv=True``
        every edge of every pair is returned as ``(src, dst, eid)`` (multigraphs).
        """
        self._check_etype(etype)
        u_t, scalar = self._ids(u, self._index.num_src, "source node")
        v_t, _ = self._ids(v, self._index.num_dst, "destination node")
        u_t, v_t = torch.broadcast_tensors(u_t, v_t)
        keys, order = self._edge_keys()
        q = u_t * self._index.num_dst + v_t
        lo = torch.searchsorted(keys, q)
        hi = torch.searchsorted(keys, q, right=True)
        missing = hi == lo
        if bool(missing.any()):
            i = int(missing.nonzero()[0])
            raise DGLError(f"expected an edge between every pair, got no edge {int(u_t[i])} -> {int(v_t[i])}")
        if return_uv:
            counts = hi - lo
            starts = torch.repeat_interleave(lo, counts)
            offs = torch.arange(starts.numel(), device=self.device) - torch.repeat_interleave(
                torch.cumsum(counts, 0) - counts, counts)
            eids = order[starts + offs]
            return (self._out_ids(self._index.src64[eids]), self._out_ids(self._index.dst64[eids]),
                    self._out_ids(eids))
        eids = order[lo]
        return int(eids[0]) if scalar else self._out_ids(eids)

    def find_edges(self, eid, etype=None):
        """Endpoints ``(src, dst)`` of edges ``eid``."""
        self._check_etype(etype)
        e, _ = self._ids(eid, self._index.num_edges, "edge")
        return self._out_ids(self._index.src64[e]), self._out_ids(self._index.dst64[e])

    def _all_edges(self, form, eids):
        src = self._index.src64[eids] if eids is not None else self._index.src64
        dst = self._index.dst64[eids] if eids is not None else self._index.dst64
        if eids is None:
            eids = torch.arange(self._index.num_edges, device=self.device)
        if form == "uv":
            return self._out_ids(src), self._out_ids(dst)
        if form == "eid":
            return self._out_ids(eids)
        if form == "all":
            return self._out_ids(src), self._out_ids(dst), self._out_ids(eids)
        raise DGLError(f"expected form in 'uv', 'eid', 'all', got {form!r}")

    def all_edges(self, form="uv", order="eid", etype=None):
        """All edges; ``order='srcdst'`` sorts them by (source, destination)."""
        self._check_etype(etype)
        if order == "eid":
            return self._all_edges(form, None)
        if order == "srcdst":
            return self._all_edges(form, self._edge_keys()[1])
        raise DGLError(f"expected order 'eid' or 'srcdst', got {order!r}")

    def in_edges(self, v, form="uv", etype=None):
        """In-edges of nodes ``v`` (grouped by node in the order given)."""
        self._check_etype(etype)
        v_t, _ = self._ids(v, self._index.num_dst, "destination node")
        indptr, _, eid = self._index.csc()
        return self._all_edges(form, _gather_rows(indptr, eid, v_t))

    def out_edges(self, u, form="uv", etype=None):
        """Out-edges of nodes ``u`` (grouped by node in the order given)."""
        self._check_etype(etype)
        u_t, _ = self._ids(u, self._index.num_src, "source node")
        indptr, _, eid = self._index.csr()
        return self._all_edges(form, _gather_rows(indptr, eid, u_t))

    def predecessors(self, v, etype=None):
        """Source nodes of the in-edges of node ``v``."""
        return self.in_edges(v, form="uv", etype=etype)[0]

    def successors(self, v, etype=None):
        """Destination nodes of the out-edges of node ``v``."""
        return self.out_edges(v, form="uv", etype=etype)[1]

    def in_degrees(self, v=ALL, etype=None):
        """In-degree of nodes ``v`` (all destination nodes by default); an int for one node."""
        self._check_etype(etype)
        deg = self._index.in_degrees()
        if is_all(v):
            return self._out_ids(deg)
        v_t, scalar = self._ids(v, self._index.num_dst, "destination node")
        return int(deg[v_t][0]) if scalar else self._out_ids(deg[v_t])

    def out_degrees(self, u=ALL, etype=None):
        """Out-degree of nodes ``u`` (all source nodes by default); an int for one node."""
        self._check_etype(etype)
        deg = self._index.out_degrees()
        if is_all(u):
            return self._out_ids(deg)
        u_t, scalar = self._ids(u, self._index.num_src, "source node")
        return int(deg[u_t][0]) if scalar else self._out_ids(deg[u_t])

    @property
    def is_multigraph(self):
        """Whether some pair of nodes has more than one edge."""
        keys, _ = self._edge_keys()
        return bool(keys.numel() > 1 and (keys[1:] == keys[:-1]).any())

    @property
    def is_homogeneous(self):
        """Whether the graph has one node type and one edge type."""
        return len(self.ntypes) == 1 and len(self.etypes) == 1

    # ------------------------------------------------------------------
    # adjacency and formats
    # ------------------------------------------------------------------
    def adj_external(self, transpose=False, ctx=None, scipy_fmt=None, etype=None):
        """Adjacency matrix, rows = sources and columns = destinations (swapped if ``transpose``).

        Returns a ``torch.sparse_coo_tensor`` of float32 ones, or a SciPy matrix
        when ``scipy_fmt`` is ``'csr'`` or ``'coo'``.
        """
        self._check_etype(etype)
        rows, cols = self._index.src64, self._index.dst64
        shape = (self._index.num_src, self._index.num_dst)
        if transpose:
            rows, cols, shape = cols, rows, shape[::-1]
        if scipy_fmt is None:
            dev = torch.device(ctx) if ctx is not None else self.device
            values = torch.ones(rows.numel(), device=dev)
            return torch.sparse_coo_tensor(torch.stack([rows, cols]).to(dev), values, shape, check_invariants=False)
        import numpy as np
        import scipy.sparse as sp
        data = np.ones(rows.numel(), dtype=np.float32)
        mat = sp.coo_matrix((data, (rows.cpu().numpy(), cols.cpu().numpy())), shape=shape)
        if scipy_fmt == "coo":
            return mat
        if scipy_fmt == "csr":
            return mat.tocsr()
        raise DGLError(f"expected scipy_fmt 'csr', 'coo' or None, got {scipy_fmt!r}")

    def adjacency_matrix(self, transpose=False, ctx=None, scipy_fmt=None, etype=None):
        """Alias of :meth:`adj_external`."""
        return self.adj_external(transpose, ctx, scipy_fmt, etype)

    def adj_tensors(self, fmt, etype=None):
        """Structure tensors: ``'coo'`` -> (src, dst); ``'csr'``/``'csc'`` -> (indptr, indices, eids)."""
        self._check_etype(etype)
        if fmt == "coo":
            return self._index.src, self._index.dst
        if fmt in ("csr", "csc"):
            indptr, indices, eid = self._index.csr() if fmt == "csr" else self._index.csc()
            return self._out_ids(indptr), self._out_ids(indices), self._out_ids(eid)
        raise DGLError(f"expected fmt 'coo', 'csr' or 'csc', got {fmt!r}")

    def formats(self, formats=None):
        """Sparse formats: without argument, ``{'created': [...], 'not created': [...]}``.

        With ``formats`` (str or list of 'coo', 'csr', 'csc') returns a graph
        sharing structure and features; formats are always built lazily.
        """
        allowed = ("coo", "csr", "csc")
        if formats is None:
            created = self._index.formats()
            return {"created": created, "not created": [f for f in allowed if f not in created]}
        names = [formats] if isinstance(formats, str) else list(formats)
        bad = [f for f in names if f not in allowed]
        if bad:
            raise DGLError(f"expected formats among {allowed}, got {bad}")
        return self._shallow(self._index)

    def create_formats_(self):
        """Build every sparse format now (before forking workers, for example)."""
        self._index.create_formats_()

    # ------------------------------------------------------------------
    # copies, devices, id types
    # ------------------------------------------------------------------
    def _shallow(self, index, node_frames=None, edge_frame=None):
        g = Graph(index, self.canonical_etypes[0], self._is_block,
                  node_frames if node_frames is not None else [f.clone() for f in self._node_frames],
                  edge_frame if edge_frame is not None else self._edge_frame.clone())
        g._batch_num_nodes = self._batch_num_nodes
        g._batch_num_edges = self._batch_num_edges
        return g

    def to(self, device, **kwargs):
        """Copy of the graph (structure and features) on ``device``."""
        device = torch.device(device)
        if device == self.device:
            return self
        g = self._shallow(self._index.to(device), [f.to(device, **kwargs) for f in self._node_frames],
                          self._edge_frame.to(device, **kwargs))
        if self._batch_num_nodes is not None:
            g._batch_num_nodes = [c.to(device) for c in self._batch_num_nodes]
        if self._batch_num_edges is not None:
            g._batch_num_edges = self._batch_num_edges.to(device)
        return g

    def cpu(self):
        """Copy of the graph on the CPU."""
        return self.to("cpu")

    def cuda(self, device=None):
        """Copy of the graph on a CUDA device (the current one by default)."""
        return self.to(device or "cuda")

    def clone(self):
        """Copy with its own feature mappings (tensors shared; structure is immutable)."""
        return self._shallow(self._index)

    def int(self):
        """Copy with int32 node/edge IDs."""
        return self._shallow(self._index.astype(torch.int32))

    def long(self):
        """Copy with int64 node/edge IDs."""
        return self._shallow(self._index.astype(torch.int64))

    def astype(self, idtype):
        """Copy with IDs of type ``idtype``."""
        if idtype not in (torch.int32, torch.int64):
            raise DGLError(f"expected idtype torch.int32 or torch.int64, got {idtype}")
        return self._shallow(self._index.astype(idtype))

    def _astype_float(self, dtype):
        """Copy whose floating-point features are cast to ``dtype`` (structure shared)."""
        return self._shallow(self._index, [f.astype_float(dtype) for f in self._node_frames],
                             self._edge_frame.astype_float(dtype))

    def local_var(self):
        """Graph sharing structure and tensors whose feature mappings changes stay local."""
        return self._shallow(self._index)

    @contextlib.contextmanager
    def local_scope(self):
        """Context in which feature changes are undone on exit (tensors are not copied).

        Examples
        --------
        >>> import torch, mpgraph as dgl
        >>> g = dgl.graph(([0, 1], [1, 2]))
        >>> with g.local_scope():
        ...     g.ndata['h'] = torch.ones(3, 1)
        >>> 'h' in g.ndata
        False
        """
        saved_nodes, saved_edges = self._node_frames, self._edge_frame
        self._node_frames = [f.clone() for f in saved_nodes]
        if not self._bipartite:
            self._node_frames = [self._node_frames[0]]
        self._edge_frame = saved_edges.clone()
        try:
            yield
        finally:
            self._node_frames, self._edge_frame = saved_nodes, saved_edges

    # ------------------------------------------------------------------
    # feature views
    # ------------------------------------------------------------------
    @property
    def ndata(self):
        """Node features (the node set must be unambiguous: use srcdata/dstdata on blocks)."""
        if self._bipartite:
            if self._is_block:
                raise DGLError("a block has separate source and destination features; use srcdata or dstdata")
            return _TypedData(self, "node")
        return self._node_frames[0]

    @property
    def srcdata(self):
        """Features of the source nodes."""
        return self._src_frame

    @property
    def dstdata(self):
        """Features of the destination nodes."""
        return self._dst_frame

    @property
    def edata(self):
        """Edge features."""
        return self._edge_frame

    nodes = property(lambda self: NodeView(self, "both"), doc="Node IDs and per-type/per-subset feature views.")
    srcnodes = property(lambda self: NodeView(self, "src"), doc="Source node IDs and feature views.")
    dstnodes = property(lambda self: NodeView(self, "dst"), doc="Destination node IDs and feature views.")
    edges = property(lambda self: EdgeView(self), doc="Edges (callable as g.edges(form, order)) and feature views.")

    def node_attr_schemes(self, ntype=None):
        """``{name: (feature shape, dtype)}`` of the node features."""
        return {k: (tuple(v.shape[1:]), v.dtype) for k, v in self._node_frames[self._node_set(ntype, "dst")].items()}

    def edge_attr_schemes(self, etype=None):
        """``{name: (feature shape, dtype)}`` of the edge features."""
        self._check_etype(etype)
        return {k: (tuple(v.shape[1:]), v.dtype) for k, v in self._edge_frame.items()}

    def set_n_initializer(self, initializer, field=None, ntype=None):
        """Set the initializer of node features for rows created without values."""
        for f in self._node_frames:
            f.set_initializer(initializer)

    def set_e_initializer(self, initializer, field=None, etype=None):
        """Set the initializer of edge features for rows created without values."""
        self._edge_frame.set_initializer(initializer)

    # ------------------------------------------------------------------
    # message passing
    # ------------------------------------------------------------------
    def _edge_batch_args(self, eids=None, sub_frame=None):
        if eids is None:
            return (self._src_frame, self._dst_frame, self._edge_frame, self._index.src, self._index.dst,
                    torch.arange(self._index.num_edges, device=self.device, dtype=self.idtype), True)
        return (self._src_frame, self._dst_frame, sub_frame, self._index.src[eids], self._index.dst[eids],
                eids.to(self.idtype), True)

    def apply_nodes(self, func, v=ALL, ntype=None):
        """Update node features with ``func(NodeBatch) -> dict`` on nodes ``v`` (all by default).

        Examples
        --------
        >>> import torch, mpgraph as dgl
        >>> g = dgl.graph(([0, 1], [1, 2]))
        >>> g.ndata['h'] = torch.ones(3, 2)
        >>> g.apply_nodes(lambda nodes: {'h2': nodes.data['h'] * 2})
        >>> g.ndata['h2'][0]
        tensor([2., 2.])
        """
        frame = self._node_frames[self._node_set(ntype, "dst")]
        if is_all(v):
            nodes = torch.arange(frame.num_rows, device=self.device, dtype=self.idtype)
            res = check_udf_output(func(NodeBatch(frame, nodes, all_nodes=True)), frame.num_rows, "apply")
            for k, val in res.items():
                frame[k] = val
            return
        v_t, _ = self._ids(v, frame.num_rows, "node")
        res = check_udf_output(func(NodeBatch(frame, v_t)), v_t.numel(), "apply")
        frame.update_rows(v_t, res)

    def apply_edges(self, func, edges=ALL, etype=None):
        """Compute edge features with a builtin (gSDDMM) or ``func(EdgeBatch) -> dict``.

        Examples
        --------
        >>> import torch, mpgraph as dgl
        >>> import mpgraph.function as fn
        >>> g = dgl.graph(([0, 1], [1, 2]))
        >>> g.ndata['h'] = torch.tensor([[1.], [2.], [3.]])
        >>> g.apply_edges(fn.u_add_v('h', 'h', 's'))
        >>> g.edata['s']
        tensor([[3.],
                [5.]])
        """
        self._check_etype(etype)
        if is_all(edges):
            out = _lowering.apply_edges(self._index, self._frames(), func, self._edge_batch_args())
            for k, val in out.items():
                self._edge_frame[k] = val
            return
        eids = self._edge_selection(edges)
        sub_index, frames = self._edge_subset(eids)
        out = _lowering.apply_edges(sub_index, frames, func, self._edge_batch_args(eids, frames["e"]))
        self._edge_frame.update_rows(eids, out)

    def _edge_selection(self, edges):
        """Edge IDs (int64) from eids or a ``(u, v)`` pair of node-ID sequences."""
        if isinstance(edges, tuple) and len(edges) == 2:
            eids = self.edge_ids(edges[0], edges[1])
            return torch.as_tensor(eids, device=self.device).reshape(-1).to(torch.int64)
        return self._ids(edges, self._index.num_edges, "edge")[0]

    def _edge_subset(self, eids):
        index = self._index
        sub = Index.from_coo(index.src[eids], index.dst[eids], index.num_src, index.num_dst)
        frames = {"u": self._src_frame, "v": self._dst_frame, "e": self._edge_frame.subframe(eids)}
        return sub, frames

    def _write_reduced(self, nodes, out, rows=None):
        """Write reduce results into the destination frame.

        ``nodes`` None means ``out`` covers every destination node. ``rows``
        restricts the write to some destination nodes (send_and_recv/pull).
        """
        frame = self._dst_frame
        n = frame.num_rows
        full = {}
        for k, val in out.items():
            if nodes is None:
                full[k] = val
            else:
                t = torch.zeros((n,) + tuple(val.shape[1:]), dtype=val.dtype, device=val.device)
                t = t.index_copy(0, nodes.to(torch.int64), val)
                full[k] = t
        if rows is None:
            for k, val in full.items():
                frame[k] = val
        else:
            frame.update_rows(rows, {k: val[rows] for k, val in full.items()})

    def _apply_after(self, apply_node_func, rows=None):
        if apply_node_func is None:
            return
        frame = self._dst_frame
        if rows is None:
            nodes = torch.arange(frame.num_rows, device=self.device, dtype=self.idtype)
            res = check_udf_output(apply_node_func(NodeBatch(frame, nodes, all_nodes=True)), frame.num_rows, "apply")
            for k, val in res.items():
                frame[k] = val
        else:
            res = check_udf_output(apply_node_func(NodeBatch(frame, rows)), rows.numel(), "apply")
            frame.update_rows(rows, res)

    def update_all(self, message_func, reduce_func, apply_node_func=None, etype=None):
        """Send messages along every edge, reduce them at destinations, optionally apply.

        A builtin message with a builtin reduce runs as one fused gSpMM.
        Destination nodes without in-edges get 0.

        Examples
        --------
        >>> import torch, mpgraph as dgl
        >>> import mpgraph.function as fn
        >>> g = dgl.graph(([0, 1, 2], [2, 2, 0]))
        >>> g.ndata['h'] = torch.tensor([[1.], [2.], [4.]])
        >>> g.update_all(fn.copy_u('h', 'm'), fn.mean('m', 'h_mean'))
        >>> g.ndata['h_mean'].squeeze(1)
        tensor([4.0000, 0.0000, 1.5000])
        """
        self._check_etype(etype)
        nodes, out = _lowering.message_passing(self._index, self._frames(), message_func, reduce_func,
                                               self._edge_batch_args())
        self._write_reduced(nodes, out)
        self._apply_after(apply_node_func)

    def send_and_recv(self, edges, message_func, reduce_func, apply_node_func=None, etype=None, inplace=False):
        """Message passing over the edges ``edges`` only; only their destinations are updated."""
        self._check_etype(etype)
        eids = self._edge_selection(edges)
        self._partial_message_passing(eids, message_func, reduce_func, apply_node_func,
                                      torch.unique(self._index.dst64[eids]))

    def _partial_message_passing(self, eids, message_func, reduce_func, apply_node_func, rows):
        sub_index, frames = self._edge_subset(eids)
        nodes, out = _lowering.message_passing(sub_index, frames, message_func, reduce_func,
                                               self._edge_batch_args(eids, frames["e"]))
        self._write_reduced(nodes, out, rows)
        self._apply_after(apply_node_func, rows)

    def pull(self, v, message_func, reduce_func, apply_node_func=None, etype=None, inplace=False):
        """Nodes ``v`` pull messages from their in-edges; nodes in ``v`` without in-edges get 0."""
        self._check_etype(etype)
        v_t, _ = self._ids(v, self._index.num_dst, "destination node")
        v_t = torch.unique(v_t)
        indptr, _, eid = self._index.csc()
        self._partial_message_passing(_gather_rows(indptr, eid, v_t), message_func, reduce_func,
                                      apply_node_func, v_t)

    def push(self, u, message_func, reduce_func, apply_node_func=None, etype=None, inplace=False):
        """Nodes ``u`` send messages along their out-edges; the receivers are updated."""
        self._check_etype(etype)
        u_t, _ = self._ids(u, self._index.num_src, "source node")
        indptr, _, eid = self._index.csr()
        eids = _gather_rows(indptr, eid, torch.unique(u_t))
        self._partial_message_passing(eids, message_func, reduce_func, apply_node_func,
                                      torch.unique(self._index.dst64[eids]))

    def filter_nodes(self, predicate, nodes=ALL, ntype=None):
        """IDs of the nodes (among ``nodes``) for which ``predicate(NodeBatch)`` is True."""
        frame = self._node_frames[self._node_set(ntype, "dst")]
        if is_all(nodes):
            v_t = torch.arange(frame.num_rows, device=self.device)
            batch = NodeBatch(frame, v_t.to(self.idtype), all_nodes=True)
        else:
            v_t, _ = self._ids(nodes, frame.num_rows, "node")
            batch = NodeBatch(frame, v_t.to(self.idtype))
        mask = _check_mask(predicate(batch), v_t.numel(), "node")
        return self._out_ids(v_t[mask])

    def filter_edges(self, predicate, edges=ALL, etype=None):
        """IDs of the edges (among ``edges``) for which ``predicate(EdgeBatch)`` is True."""
        self._check_etype(etype)
        if is_all(edges):
            eids = torch.arange(self._index.num_edges, device=self.device)
            batch = EdgeBatch(*self._edge_batch_args())
        else:
            eids = self._edge_selection(edges)
            batch = EdgeBatch(*self._edge_batch_args(eids, self._edge_frame.subframe(eids)))
        mask = _check_mask(predicate(batch), eids.numel(), "edge")
        return self._out_ids(eids[mask])

    def sample_neighbors(self, nodes, fanout, edge_dir="in", prob=None, replace=False, copy_ndata=True,
                         copy_edata=True, exclude_edges=None, output_device=None):
        """Sample neighbours of ``nodes``; see :func:`mpgraph.sampling.sample_neighbors`."""
        from .sampling import sample_neighbors
        return sample_neighbors(self, nodes, fanout, edge_dir=edge_dir, prob=prob, replace=replace,
                                copy_ndata=copy_ndata, copy_edata=copy_edata, exclude_edges=exclude_edges,
                                output_device=output_device)

    # ------------------------------------------------------------------
    # mutation (replaces the immutable Index; features follow)
    # ------------------------------------------------------------------
    def _check_mutable(self, what):
        if self._is_block:
            raise DGLError(f"{what} is not supported on blocks; build a new block with mpgraph.create_block")

    def add_nodes(self, num, data=None, ntype=None):
        """Add ``num`` nodes (in place); ``data`` gives their features, others are zero-initialised."""
        self._check_mutable("add_nodes")
        if not isinstance(num, int) or isinstance(num, bool) or num < 0:
            raise DGLError(f"expected a non-negative int number of nodes to add, got {num!r}")
        index = self._index
        if not self._bipartite:
            self._node_frames = [self._node_frames[0].extend(num, data)]
            new = (index.num_src + num, index.num_dst + num)
        else:
            if ntype is None:
                raise DGLError(f"this graph has node types {self.ntypes}; pass ntype= to add_nodes")
            s = self._node_set(ntype)
            self._node_frames[s] = self._node_frames[s].extend(num, data)
            new = (index.num_src + num, index.num_dst) if s == 0 else (index.num_src, index.num_dst + num)
        self._index = Index.from_coo(index.src, index.dst, *new)
        self._batch_num_nodes = self._batch_num_edges = None

    def add_edges(self, u, v, data=None, etype=None):
        """Add edges ``u[i] -> v[i]`` (in place). Missing end nodes are added, as in DGL."""
        self._check_mutable("add_edges")
        self._check_etype(etype)
        u_t = _as_id_tensor(u, self.device, "source node")
        v_t = _as_id_tensor(v, self.device, "destination node")
        if u_t.numel() == 1 and v_t.numel() != 1:
            u_t = u_t.expand(v_t.numel())
        if v_t.numel() == 1 and u_t.numel() != 1:
            v_t = v_t.expand(u_t.numel())
        if u_t.numel() != v_t.numel():
            raise DGLError(f"expected u and v of the same length, got {u_t.numel()} and {v_t.numel()}")
        if u_t.numel() and (int(u_t.min()) < 0 or int(v_t.min()) < 0):
            raise DGLError("expected non-negative node IDs in add_edges, got a negative ID")
        index = self._index
        ns, nd = index.num_src, index.num_dst
        need_s = int(u_t.max()) + 1 if u_t.numel() else 0
        need_d = int(v_t.max()) + 1 if v_t.numel() else 0
        if not self._bipartite:
            grow = max(need_s, need_d, ns) - ns
            if grow:
                self._node_frames = [self._node_frames[0].extend(grow)]
            ns = nd = ns + grow
        else:
            if need_s > ns:
                self._node_frames[0] = self._node_frames[0].extend(need_s - ns)
                ns = need_s
            if need_d > nd:
                self._node_frames[1] = self._node_frames[1].extend(need_d - nd)
                nd = need_d
        self._edge_frame = self._edge_frame.extend(u_t.numel(), data)
        self._index = Index.from_coo(torch.cat([index.src, u_t.to(index.idtype)]),
                                     torch.cat([index.dst, v_t.to(index.idtype)]), ns, nd)
        self._batch_num_nodes = self._batch_num_edges = None

    def remove_edges(self, eids, etype=None, store_ids=False):
        """Remove edges ``eids`` (in place); remaining edges are renumbered in order."""
        self._check_mutable("remove_edges")
        self._check_etype(etype)
        e, _ = self._ids(eids, self._index.num_edges, "edge")
        keep = torch.ones(self._index.num_edges, dtype=torch.bool, device=self.device)
        keep[e] = False
        kept = keep.nonzero().squeeze(1)
        index = self._index
        self._edge_frame = self._edge_frame.subframe(kept)
        if store_ids:
            self._edge_frame["_ID"] = kept.to(self.idtype)
        self._index = Index.from_coo(index.src[kept], index.dst[kept], index.num_src, index.num_dst)
        self._batch_num_nodes = self._batch_num_edges = None

    def remove_nodes(self, nids, ntype=None, store_ids=False):
        """Remove nodes ``nids`` and their edges (in place); the rest are renumbered in order."""
        self._check_mutable("remove_nodes")
        index = self._index
        s = self._node_set(ntype, "src") if self._bipartite else 0
        if self._bipartite and ntype is None:
            raise DGLError(f"this graph has node types {self.ntypes}; pass ntype= to remove_nodes")
        n = index.num_src if s == 0 else index.num_dst
        v, _ = self._ids(nids, n, "node")
        keep = torch.ones(n, dtype=torch.bool, device=self.device)
        keep[v] = False
        kept = keep.nonzero().squeeze(1)
        new_id = torch.full((n,), -1, dtype=torch.int64, device=self.device)
        new_id[kept] = torch.arange(kept.numel(), device=self.device)
        src, dst = index.src64, index.dst64
        if not self._bipartite:
            emask = keep[src] & keep[dst]
            ns = nd = kept.numel()
            src_new, dst_new = new_id[src], new_id[dst]
        elif s == 0:
            emask = keep[src]
            ns, nd = kept.numel(), index.num_dst
            src_new, dst_new = new_id[src], dst
        else:
            emask = keep[dst]
            ns, nd = index.num_src, kept.numel()
            src_new, dst_new = src, new_id[dst]
        ekept = emask.nonzero().squeeze(1)
        self._node_frames[s] = self._node_frames[s].subframe(kept)
        if store_ids:
            self._node_frames[s]["_ID"] = kept.to(self.idtype)
        self._edge_frame = self._edge_frame.subframe(ekept)
        if store_ids:
            self._edge_frame["_ID"] = ekept.to(self.idtype)
        self._index = Index.from_coo(src_new[ekept].to(index.idtype), dst_new[ekept].to(index.idtype), ns, nd)
        self._batch_num_nodes = self._batch_num_edges = None

    # ------------------------------------------------------------------
    # batching information (filled by mpgraph.batch)
    # ------------------------------------------------------------------
    @property
    def batch_size(self):
        """Number of graphs in this batched graph (1 for an unbatched graph)."""
        return 1 if self._batch_num_nodes is None else int(self._batch_num_nodes[0].numel())

    def _node_set_counts(self):
        """Per-graph node counts of each node set (a list of ``(batch_size,)`` int64 tensors)."""
        if self._batch_num_nodes is None:
            return [torch.tensor([f.num_rows], dtype=torch.int64, device=self.device) for f in self._node_frames]
        return list(self._batch_num_nodes)

    def batch_num_nodes(self, ntype=None):
        """Nodes per graph of the batch, ``(batch_size,)`` int64.

        On a uni-bipartite graph name the node type (``ntype``); without it the
        counts of both types are added.
        """
        counts = self._node_set_counts()
        if len(counts) == 1:
            self._check_ntype(ntype)
            return counts[0]
        if ntype is None:
            return counts[0] + counts[1]
        return counts[self._node_set(ntype)]

    def batch_num_edges(self, etype=None):
        """Edges per graph of the batch, ``(batch_size,)`` int64."""
        self._check_etype(etype)
        if self._batch_num_edges is None:
            return torch.tensor([self.num_edges()], dtype=torch.int64, device=self.device)
        return self._batch_num_edges

    def _counts_tensor(self, val, total, what):
        val = torch.as_tensor(val, dtype=torch.int64, device=self.device).reshape(-1)
        if int(val.sum()) != total or bool((val < 0).any()):
            raise DGLError(f"expected non-negative {what} counts summing to {total}, got {val.tolist()}")
        return val

    def set_batch_num_nodes(self, val):
        """Set the per-graph node counts (they must add up to the node count).

        A uni-bipartite graph takes ``{ntype: counts}`` with both node types.
        """
        if len(self._node_frames) == 1:
            self._batch_num_nodes = [self._counts_tensor(val, self.num_nodes(), "node")]
            return
        if not isinstance(val, dict) or set(val) != {self._srctype, self._dsttype} or self._is_block:
            raise DGLError(f"expected a dict {{ntype: counts}} for node types {self.ntypes} of this uni-bipartite "
                           f"graph, got {type(val).__name__}")
        counts = [self._counts_tensor(val[self._srctype], self.num_src_nodes(), f"{self._srctype!r} node"),
                  self._counts_tensor(val[self._dsttype], self.num_dst_nodes(), f"{self._dsttype!r} node")]
        if counts[0].numel() != counts[1].numel():
            raise DGLError(f"expected the same number of graphs for both node types, got {counts[0].numel()} and "
                           f"{counts[1].numel()}")
        self._batch_num_nodes = counts

    def set_batch_num_edges(self, val):
        """Set the per-graph edge counts (they must add up to the edge count)."""
        if isinstance(val, dict):
            if len(val) != 1:
                raise DGLError(f"expected one edge type in the counts dict, got {sorted(val)}")
            (etype, val), = val.items()
            self._check_etype(etype)
        self._batch_num_edges = self._counts_tensor(val, self.num_edges(), "edge")

    # ------------------------------------------------------------------
    # python protocol
    # ------------------------------------------------------------------
    def __len__(self):
        raise DGLError("len(g) is ambiguous; use g.num_nodes() or g.num_edges()")

    def __getitem__(self, key):
        """``g[etype]``: the relation slice (this graph itself, as it holds one relation)."""
        self._check_etype(key)
        return self

    def __repr__(self):
        def schemes(frame):
            return {k: f"Scheme(shape={tuple(v.shape[1:])}, dtype={v.dtype})" for k, v in frame.items()}
        if self._is_block:
            return (f"Block(num_src_nodes={self.num_src_nodes()},\n      num_dst_nodes={self.num_dst_nodes()},\n"
                    f"      num_edges={self.num_edges()})")
        if self._bipartite:
            return (f"Graph(num_nodes={{{self._srctype!r}: {self.num_src_nodes()}, {self._dsttype!r}: "
                    f"{self.num_dst_nodes()}}},\n      num_edges={{{self.canonical_etypes[0]!r}: "
                    f"{self.num_edges()}}},\n      metagraph=[({self._srctype!r}, {self._dsttype!r}, "
                    f"{self._etype!r})])")
        return (f"Graph(num_nodes={self.num_nodes()}, num_edges={self.num_edges()},\n"
                f"      ndata_schemes={schemes(self._node_frames[0])}\n"
                f"      edata_schemes={schemes(self._edge_frame)})")


#: DGL's name for the graph class.
DGLGraph = Graph
#: DGL's name for blocks (the same class, with ``is_block`` True).
DGLBlock = Graph


class _TypedData:
    """``g.ndata`` of a uni-bipartite graph: ``g.ndata['h']`` is ``{ntype: tensor}``."""

    def __init__(self, graph, kind):
        self._g = graph

    def __getitem__(self, key):
        g = self._g
        out = {}
        for t, f in ((g._srctype, g._src_frame), (g._dsttype, g._dst_frame)):
            if key in f:
                out[t] = f[key]
        if not out:
            raise KeyError(f"node feature {key!r} not found for any node type")
        return out

    def __setitem__(self, key, value):
        g = self._g
        if not isinstance(value, dict):
            raise DGLError(f"this graph has node types {g.ntypes}; assign a dict {{ntype: tensor}} or use "
                           "g.nodes[ntype].data")
        for t, v in value.items():
            g._node_frames[g._node_set(t)][key] = v

    def __contains__(self, key):
        return any(key in f for f in self._g._node_frames)

    def __iter__(self):
        return iter(sorted(set().union(*[set(f) for f in self._g._node_frames])))

    def __len__(self):
        return len(list(iter(self)))

    def keys(self):
        return list(iter(self))


class _SubsetData:
    """``g.nodes[ids].data`` / ``g.edges[ids].data``: read gathers rows, write updates rows."""

    def __init__(self, frame, rows):
        self._frame, self._rows = frame, rows

    def __getitem__(self, key):
        return self._frame[key][self._rows]

    def __setitem__(self, key, value):
        self._frame.update_rows(self._rows, {key: value})

    def __contains__(self, key):
        return key in self._frame

    def __iter__(self):
        return iter(self._frame)

    def __len__(self):
        return len(self._frame)

    def keys(self):
        return list(self._frame)


class _Space:
    def __init__(self, data):
        self.data = data


class NodeView:
    """``g.nodes``: call it for node IDs, index it by type or by IDs for ``.data``."""

    def __init__(self, graph, which):
        self._g, self._which = graph, which

    def _set(self, ntype):
        g = self._g
        if self._which == "src":
            g._check_ntype(ntype)
            return 0
        if self._which == "dst":
            g._check_ntype(ntype)
            return len(g._node_frames) - 1
        return g._node_set(ntype, "dst" if g._is_block else "both")

    def __call__(self, ntype=None):
        g = self._g
        n = g._node_frames[self._set(ntype)].num_rows
        return torch.arange(n, dtype=g.idtype, device=g.device)

    def __getitem__(self, key):
        g = self._g
        if isinstance(key, str):
            return _Space(g._node_frames[self._set(key)])
        if isinstance(key, slice) and key == slice(None):
            return _Space(g._node_frames[self._set(None)])
        frame = g._node_frames[self._set(None)]
        rows, _ = g._ids(key, frame.num_rows, "node")
        return _Space(_SubsetData(frame, rows))

    def __len__(self):
        return self._g.num_nodes()

    def __iter__(self):
        return iter(self().tolist())


class EdgeView:
    """``g.edges``: call it for the edges, index it by type or by IDs for ``.data``."""

    def __init__(self, graph):
        self._g = graph

    def __call__(self, form="uv", order="eid", etype=None):
        return self._g.all_edges(form=form, order=order, etype=etype)

    def __getitem__(self, key):
        g = self._g
        if isinstance(key, (str, tuple)) and (isinstance(key, str) or all(isinstance(k, str) for k in key)):
            g._check_etype(key)
            return _Space(g._edge_frame)
        if isinstance(key, slice) and key == slice(None):
            return _Space(g._edge_frame)
        rows = g._edge_selection(key)
        return _Space(_SubsetData(g._edge_frame, rows))

    def __len__(self):
        return self._g.num_edges()


def _gather_rows(indptr, values, rows):
    """Concatenate ``values[indptr[r]:indptr[r+1]]`` for each ``r`` in ``rows`` (int64)."""
    starts = indptr[rows]
    counts = indptr[rows + 1] - starts
    total = int(counts.sum()) if counts.numel() else 0
    if total == 0:
        return torch.zeros(0, dtype=torch.int64, device=indptr.device)
    row_start = torch.repeat_interleave(starts - (torch.cumsum(counts, 0) - counts), counts, output_size=total)
    pos = torch.arange(total, device=indptr.device) + row_start
    return values[pos]


def _check_mask(mask, n, what):
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.numel() != n:
        raise DGLError(f"expected the {what} predicate to return a bool tensor of {n} elements, got "
                       f"{getattr(mask, 'dtype', type(mask).__name__)} of shape {tuple(getattr(mask, 'shape', ()))}")
    return mask.reshape(-1)


def _as_id_tensor(x, device, what):
    if isinstance(x, torch.Tensor):
        if x.is_floating_point() or x.dtype == torch.bool:
            raise DGLTypeError(f"expected integer {what} IDs, got dtype {x.dtype}")
        return x.reshape(-1).to(device=device, dtype=torch.int64)
    try:
        return torch.as_tensor(x, dtype=torch.int64, device=device).reshape(-1)
    except (TypeError, ValueError, RuntimeError) as err:
        raise DGLTypeError(f"expected {what} IDs as int, list or integer tensor, got {x!r}") from err
