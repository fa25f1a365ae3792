"""Graphs with several node and edge types: :class:`HeteroGraph` (DGL's heterographs).

A :class:`HeteroGraph` holds, per node type, a :class:`~mpgraph.frame.Frame` of
features, and per *relation* (canonical edge type ``(srctype, etype, dsttype)``)
an immutable :class:`~mpgraph._index.Index` plus an edge :class:`Frame`.

Every per-relation operation goes through the *relation slice* ``g[etype]``: a
single-relation :class:`~mpgraph.graph.Graph` over the relation's Index that
shares the node frames of its source and destination types and the relation's
edge frame. Writes through a slice (``g['plays'].update_all(...)``,
``g['plays'].edata['w'] = ...``) are visible in the parent, so the one-relation
code of :mod:`mpgraph.graph` and :mod:`mpgraph._lowering` (fused gSpMM/gSDDMM
per relation) serves every relation, and no operation loops over edges in
Python.

:meth:`HeteroGraph.multi_update_all` reduces per relation with fp32
accumulation (fp64 for fp64) and combines relations with the cross reducer on
the unrounded per-relation results, rounding once to the output format: the
accuracy promise of a single ``update_all`` holds across relations.

Conversions: :func:`to_homogeneous` / :func:`to_heterogeneous`,
:func:`node_type_subgraph`, :func:`edge_type_subgraph`.

:class:`HeteroBlock` is the typed block (message-flow graph) that
:func:`mpgraph.dataloading.to_block` and the neighbour samplers build from a
HeteroGraph: separate source and destination node sets per type, relation
slices that are one-relation blocks.
"""

import contextlib

import torch

from . import _lowering
from ._index import GraphLike, Index
from .base import ALL, EID, ETYPE, NID, NTYPE, DGLError, DGLTypeError, is_all
from .frame import Frame
from .function import BinaryMessageFunction, CopyMessageFunction, MessageFunction, ReduceFunction
from .graph import Graph, _SubsetData, _Space
from .precision import accum_dtype, autocast_cast, autocast_disabled, autocast_dtype, result_dtype
from .udf import NodeBatch, check_udf_output

__all__ = ["HeteroGraph", "HeteroBlock", "to_homogeneous", "to_heterogeneous", "node_type_subgraph",
           "edge_type_subgraph", "batch_hetero", "unbatch_hetero", "CROSS_REDUCERS"]

#: Names of the built-in cross-type reducers of :meth:`HeteroGraph.multi_update_all`.
CROSS_REDUCERS = ("sum", "min", "max", "mean", "stack")


def _node_kind(ntype):
    return f"{ntype!r} node"


def _edge_kind(cetype):
    return f"{cetype!r} edge"


def _retyped(frame, num_rows, device, kind):
    """A Frame of ``kind`` with the columns of ``frame`` (None: empty); tensors are shared."""
    if frame is None:
        return Frame(num_rows, device, kind)
    if frame.num_rows != num_rows:
        raise DGLError(f"expected a frame of {num_rows} rows for the {kind}s, got {frame.num_rows}")
    return Frame(num_rows, device, kind, dict(frame.items()), frame._initializer)


def _is_canonical(key):
    return isinstance(key, tuple) and len(key) == 3 and all(isinstance(k, str) for k in key)


class HeteroGraph(GraphLike):
    """A graph with several node types and/or several relations (DGL's heterograph).

    Build it with :func:`mpgraph.heterograph` rather than with this
    constructor. Node IDs are per type (``0 .. num_nodes(ntype) - 1``), edge IDs
    per relation. Features live per type: ``g.nodes[ntype].data``,
    ``g.edges[etype].data``; ``g.ndata``/``g.edata`` are dict-valued
    (``{type: tensor}``) when the graph has several node/edge types.

    Parameters
    ----------
    indexes : dict
        ``{(srctype, etype, dsttype): Index}``, one structure per relation.
    num_nodes_dict : dict
        ``{ntype: int}`` for every node type (types without relations allowed).
    node_frames : dict, optional
        ``{ntype: Frame}``; empty frames by default.
    edge_frames : dict, optional
        ``{(srctype, etype, dsttype): Frame}``; empty frames by default.
    idtype : torch.dtype, optional
        ID type when there are no relations (otherwise that of the indexes).
    device : torch.device, optional
        Device when there are no relations (otherwise that of the indexes).

    Raises
    ------
    DGLError
        An index whose node counts differ from ``num_nodes_dict``, a relation
        naming an unknown node type, indexes of different ID types or devices.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> g = dgl.heterograph({
    ...     ('user', 'follows', 'user'): ([0, 1], [1, 2]),
    ...     ('user', 'plays', 'game'): ([0, 1, 1, 2], [0, 0, 1, 1]),
    ...     ('developer', 'develops', 'game'): ([0, 1], [0, 1])})
    >>> g.ntypes
    ['developer', 'game', 'user']
    >>> g.etypes
    ['develops', 'follows', 'plays']
    >>> g.num_nodes('user'), g.num_nodes(), g.num_edges('plays'), g.num_edges()
    (3, 7, 4, 8)
    >>> g['plays'].in_degrees()
    tensor([2, 2])
    >>> g.nodes['user'].data['h'] = torch.ones(3, 1)
    >>> sorted(g.ndata['h'])
    ['user']
    """

    def __init__(self, indexes, num_nodes_dict, node_frames=None, edge_frames=None, idtype=None, device=None):
        if not isinstance(indexes, dict) or not isinstance(num_nodes_dict, dict):
            raise DGLTypeError("expected dicts {canonical_etype: Index} and {ntype: int}; use mpgraph.heterograph")
        counts = {nt: int(n) for nt, n in num_nodes_dict.items()}
        self._init_relations(indexes, counts, counts, edge_frames, idtype, device)
        node_frames = node_frames or {}
        self._node_frames = {nt: _retyped(node_frames.get(nt), counts[nt], self._device, _node_kind(nt))
                             for nt in self._ntypes}
        has_in = {d for _, _, d in self._cetypes}
        has_out = {s for s, _, _ in self._cetypes}
        self._unibipartite = len(self._ntypes) > 1 and not (has_in & has_out)
        if self._unibipartite:
            self._srctypes = [t for t in self._ntypes if t not in has_in]
            self._dsttypes = [t for t in self._ntypes if t in has_in]
        else:
            self._srctypes = self._dsttypes = list(self._ntypes)

    def _init_relations(self, indexes, src_counts, dst_counts, edge_frames, idtype, device):
        """Validate and store the relations: types, ID type, device, indexes and edge frames.

        ``src_counts``/``dst_counts`` give the node count of every type as a
        source and as a destination (the same dict for a graph, two for a block).
        """
        self._ntypes = sorted(src_counts)
        if not self._ntypes:
            raise DGLError("expected at least one node type, got none")
        self._cetypes = sorted(indexes)
        idtypes = {ix.idtype for ix in indexes.values() if isinstance(ix, Index)}
        devices = {ix.device for ix in indexes.values() if isinstance(ix, Index)}
        if len(idtypes) > 1:
            raise DGLError(f"expected every relation to have the same ID type, got {sorted(map(str, idtypes))}; "
                           "pass idtype= to mpgraph.heterograph")
        if len(devices) > 1:
            raise DGLError(f"expected every relation on one device, got {sorted(map(str, devices))}")
        self._idtype = idtypes.pop() if idtypes else (idtype or torch.int64)
        self._device = devices.pop() if devices else torch.device(device or "cpu")
        for cet in self._cetypes:
            if not _is_canonical(cet):
                raise DGLError(f"expected canonical edge types (srctype, etype, dsttype) of str, got {cet!r}")
            s, _, d = cet
            for t in (s, d):
                if t not in src_counts:
                    raise DGLError(f"relation {cet} uses node type {t!r}, which is not among the node types "
                                   f"{self._ntypes}")
            ix = indexes[cet]
            if not isinstance(ix, Index):
                raise DGLTypeError(f"expected an Index for relation {cet}, got {type(ix).__name__}")
            if ix.num_src != src_counts[s] or ix.num_dst != dst_counts[d]:
                raise DGLError(f"relation {cet} has {ix.num_src} x {ix.num_dst} nodes, expected "
                               f"{src_counts[s]} {s!r} x {dst_counts[d]} {d!r} nodes")
        edge_frames = edge_frames or {}
        self._indexes = dict(indexes)
        self._edge_frames = {cet: _retyped(edge_frames.get(cet), self._indexes[cet].num_edges, self._device,
                                           _edge_kind(cet)) for cet in self._cetypes}
        self._etype2canonical = {}
        for cet in self._cetypes:
            name = cet[1]
            self._etype2canonical[name] = None if name in self._etype2canonical else cet
        self._batch_num_nodes = None       # {ntype: (B,) int64} when batched
        self._batch_num_edges = None       # {canonical etype: (B,) int64} when batched

    def _frames_of(self, side):
        """``{ntype: Frame}`` of the node set ``side`` (``'src'``, ``'dst'`` or None: all nodes).

        A graph has one node set per type, so every side is the same mapping;
        a :class:`HeteroBlock` has separate source and destination sets.
        """
        return self._node_frames

    # ------------------------------------------------------------------
    # types
    # ------------------------------------------------------------------
    def _op_index(self):
        if len(self._cetypes) == 1:
            return self._indexes[self._cetypes[0]]
        raise DGLError(f"this graph has {len(self._cetypes)} relations {self._cetypes}; ops run on one relation: "
                       "pass g[etype] (the relation slice)")

    @property
    def ntypes(self):
        """Node type names, sorted."""
        return list(self._ntypes)

    @property
    def etypes(self):
        """Edge type names, in the order of :attr:`canonical_etypes` (a name may repeat)."""
        return [cet[1] for cet in self._cetypes]

    @property
    def canonical_etypes(self):
        """``(srctype, etype, dsttype)`` of every relation, sorted."""
        return list(self._cetypes)

    @property
    def srctypes(self):
        """Source node types: all types, or those without in-relations on a uni-bipartite graph."""
        return list(self._srctypes)

    @property
    def dsttypes(self):
        """Destination node types: all types, or those with in-relations on a uni-bipartite graph."""
        return list(self._dsttypes)

    @property
    def is_unibipartite(self):
        """True when no node type is both a source and a destination of relations."""
        return self._unibipartite

    @property
    def is_block(self):
        """False for a graph (typed blocks, :class:`HeteroBlock`, are built by the samplers)."""
        return False

    @property
    def is_homogeneous(self):
        """Whether the graph has one node type and one edge type."""
        return len(self._ntypes) == 1 and len(self._cetypes) == 1

    @property
    def idtype(self):
        """Integer type of node and edge IDs."""
        return self._idtype

    @property
    def device(self):
        """Device of the structure and features."""
        return self._device

    def _ntype_error(self, ntype):
        return DGLError(f"node type {ntype!r} does not exist; the node types are {self._ntypes}")

    def _check_ntype(self, ntype, allow_none=True):
        """Validated ``ntype``; None means the only node type (an error with several)."""
        if ntype is None:
            if len(self._ntypes) == 1:
                return self._ntypes[0]
            if allow_none:
                return None
            raise DGLError(f"this graph has node types {self._ntypes}; name one with ntype=")
        if not isinstance(ntype, str):
            raise DGLTypeError(f"expected a node type name (str), got {type(ntype).__name__} {ntype!r}")
        if ntype not in self._ntypes:
            raise self._ntype_error(ntype)
        return ntype

    def _ntype(self, ntype):
        return self._check_ntype(ntype, allow_none=False)

    def to_canonical_etype(self, etype):
        """The canonical ``(srctype, etype, dsttype)`` of ``etype``.

        Raises
        ------
        DGLError
            ``etype`` unknown, or a name shared by several relations (pass the canonical form).
        """
        if etype is None:
            if len(self._cetypes) == 1:
                return self._cetypes[0]
            raise DGLError(f"this graph has {len(self._cetypes)} relations {self._cetypes}; pass etype= (an edge "
                           "type name or a canonical (srctype, etype, dsttype) tuple)")
        if isinstance(etype, tuple):
            if not _is_canonical(etype):
                raise DGLError(f"expected a canonical edge type (srctype, etype, dsttype) of str, got {etype!r}")
            if etype not in self._indexes:
                raise DGLError(f"canonical edge type {etype} does not exist; the relations are {self._cetypes}")
            return etype
        if not isinstance(etype, str):
            raise DGLTypeError(f"expected an edge type name or canonical tuple, got {type(etype).__name__} {etype!r}")
        if etype not in self._etype2canonical:
            raise DGLError(f"edge type {etype!r} does not exist; the edge types are {sorted(set(self.etypes))} "
                           f"(relations {self._cetypes})")
        cet = self._etype2canonical[etype]
        if cet is None:
            names = [c for c in self._cetypes if c[1] == etype]
            raise DGLError(f"edge type {etype!r} is ambiguous: it names the relations {names}; use the canonical "
                           "form (srctype, etype, dsttype)")
        return cet

    def get_ntype_id(self, ntype):
        """Integer ID of node type ``ntype`` (its position in :attr:`ntypes`)."""
        return self._ntypes.index(self._ntype(ntype))

    def get_etype_id(self, etype):
        """Integer ID of edge type ``etype`` (its position in :attr:`canonical_etypes`)."""
        return self._cetypes.index(self.to_canonical_etype(etype))

    def metagraph(self):
        """The type-level graph as a :class:`networkx.MultiDiGraph` (edge keys = edge type names)."""
        import networkx as nx
        mg = nx.MultiDiGraph()
        mg.add_nodes_from(self._ntypes)
        for s, e, d in self._cetypes:
            mg.add_edge(s, d, key=e)
        return mg

    # ------------------------------------------------------------------
    # relation slices
    # ------------------------------------------------------------------
    def _slice(self, cet):
        s, _, d = cet
        frames = [self._node_frames[s]] if s == d else [self._node_frames[s], self._node_frames[d]]
        return Graph(self._indexes[cet], cet, False, frames, self._edge_frames[cet])

    def _rel(self, etype):
        return self._slice(self.to_canonical_etype(etype))

    def __getitem__(self, key):
        """``g[etype]``: the relation slice, a one-relation :class:`~mpgraph.graph.Graph` sharing features.

        ``key`` is an edge type name, a canonical ``(srctype, etype, dsttype)``
        tuple (``g['user', 'plays', 'game']``), or None when there is one relation.
        """
        if isinstance(key, tuple) and any(isinstance(k, slice) for k in key):
            raise DGLError(f"expected an edge type name or a canonical (srctype, etype, dsttype) tuple, got {key!r}; "
                           "slices of several relations are not supported, use edge_type_subgraph")
        return self._rel(key)

    # ------------------------------------------------------------------
    # counts and queries (delegated to the relation slices)
    # ------------------------------------------------------------------
    def num_nodes(self, ntype=None):
        """Number of nodes of ``ntype`` (all types together when omitted)."""
        nt = self._check_ntype(ntype)
        if nt is None:
            return sum(f.num_rows for f in self._node_frames.values())
        return self._node_frames[nt].num_rows

    def number_of_nodes(self, ntype=None):
        """Alias of :meth:`num_nodes`."""
        return self.num_nodes(ntype)

    def num_src_nodes(self, ntype=None):
        """Number of source nodes of ``ntype`` (all source types together when omitted)."""
        if ntype is None:
            return sum(self._node_frames[t].num_rows for t in self._srctypes)
        return self.num_nodes(ntype)

    def num_dst_nodes(self, ntype=None):
        """Number of destination nodes of ``ntype`` (all destination types together when omitted)."""
        if ntype is None:
            return sum(self._node_frames[t].num_rows for t in self._dsttypes)
        return self.num_nodes(ntype)

    def number_of_src_nodes(self, ntype=None):
        return self.num_src_nodes(ntype)

    def number_of_dst_nodes(self, ntype=None):
        return self.num_dst_nodes(ntype)

    def num_edges(self, etype=None):
        """Number of edges of ``etype`` (all relations together when omitted)."""
        if etype is None:
            return sum(ix.num_edges for ix in self._indexes.values())
        return self._indexes[self.to_canonical_etype(etype)].num_edges

    def number_of_edges(self, etype=None):
        """Alias of :meth:`num_edges`."""
        return self.num_edges(etype)

    def has_nodes(self, vid, ntype=None):
        """Whether each of ``vid`` is a node of type ``ntype`` (bool, or bool tensor)."""
        n = self.num_nodes(self._ntype(ntype))
        scalar = isinstance(vid, int) or (isinstance(vid, torch.Tensor) and vid.dim() == 0)
        t = torch.as_tensor(vid, device=self.device).reshape(-1)
        res = (t >= 0) & (t < n)
        return bool(res[0]) if scalar else res

    def has_edges_between(self, u, v, etype=None):
        """Whether an edge ``u[i] -> v[i]`` of relation ``etype`` exists, for each pair."""
        return self._rel(etype).has_edges_between(u, v)

    def edge_ids(self, u, v, return_uv=False, etype=None):
        """Edge IDs of the pairs ``(u[i], v[i])`` in relation ``etype``."""
        return self._rel(etype).edge_ids(u, v, return_uv=return_uv)

    def find_edges(self, eid, etype=None):
        """Endpoints ``(src, dst)`` of edges ``eid`` of relation ``etype``."""
        return self._rel(etype).find_edges(eid)

    def all_edges(self, form="uv", order="eid", etype=None):
        """All edges of relation ``etype``."""
        return self._rel(etype).all_edges(form=form, order=order)

    def in_edges(self, v, form="uv", etype=None):
        """In-edges of destination nodes ``v`` in relation ``etype``."""
        return self._rel(etype).in_edges(v, form=form)

    def out_edges(self, u, form="uv", etype=None):
        """Out-edges of source nodes ``u`` in relation ``etype``."""
        return self._rel(etype).out_edges(u, form=form)

    def predecessors(self, v, etype=None):
        """Source nodes of the in-edges of ``v`` in relation ``etype``."""
        return self._rel(etype).predecessors(v)

    def successors(self, v, etype=None):
        """Destination nodes of the out-edges of ``v`` in relation ``etype``."""
        return self._rel(etype).successors(v)

    def in_degrees(self, v=ALL, etype=None):
        """In-degrees in relation ``etype`` (of all its destination nodes by default)."""
        return self._rel(etype).in_degrees(v)

    def out_degrees(self, u=ALL, etype=None):
        """Out-degrees in relation ``etype`` (of all its source nodes by default)."""
        return self._rel(etype).out_degrees(u)

    @property
    def is_multigraph(self):
        """Whether some relation has two edges between the same pair of nodes."""
        return any(self._slice(cet).is_multigraph for cet in self._cetypes)

    def adj_external(self, transpose=False, ctx=None, scipy_fmt=None, etype=None):
        """Adjacency matrix of relation ``etype`` (see :meth:`mpgraph.graph.Graph.adj_external`)."""
        return self._rel(etype).adj_external(transpose, ctx, scipy_fmt)

    def adjacency_matrix(self, transpose=False, ctx=None, scipy_fmt=None, etype=None):
        """Alias of :meth:`adj_external`."""
        return self.adj_external(transpose, ctx, scipy_fmt, etype)

    def adj_tensors(self, fmt, etype=None):
        """Structure tensors of relation ``etype``: ``'coo'``, ``'csr'`` or ``'csc'``."""
        return self._rel(etype).adj_tensors(fmt)

    def formats(self, formats=None):
        """Sparse formats built so far (of every relation), or a graph sharing structure and features."""
        allowed = ("coo", "csr", "csc")
        if formats is None:
            created = [f for f in allowed if all(f in ix.formats() for ix in self._indexes.values())]
            return {"created": created, "not created": [f for f in allowed if f not in created]}
        names = [formats] if isinstance(formats, str) else list(formats)
        bad = [f for f in names if f not in allowed]
        if bad:
            raise DGLError(f"expected formats among {allowed}, got {bad}")
        return self._shallow()

    def create_formats_(self):
        """Build every sparse format of every relation now."""
        for ix in self._indexes.values():
            ix.create_formats_()

    # ------------------------------------------------------------------
    # copies, devices, id types, precision
    # ------------------------------------------------------------------
    def _shallow(self, indexes=None, node_frames=None, edge_frames=None):
        indexes = self._indexes if indexes is None else indexes
        nf = {k: f.clone() for k, f in self._node_frames.items()} if node_frames is None else node_frames
        ef = {k: f.clone() for k, f in self._edge_frames.items()} if edge_frames is None else edge_frames
        idtype = next(iter(indexes.values())).idtype if indexes else self._idtype
        g = HeteroGraph(indexes, {nt: f.num_rows for nt, f in self._node_frames.items()}, nf, ef, idtype,
                        self._device)
        g._batch_num_nodes, g._batch_num_edges = self._batch_num_nodes, self._batch_num_edges
        return g

    def to(self, device, **kwargs):
        """Copy of the graph (structure and features) on ``device``."""
        device = torch.device(device)
        if device == self.device:
            return self
        g = HeteroGraph({k: ix.to(device) for k, ix in self._indexes.items()},
                        {nt: f.num_rows for nt, f in self._node_frames.items()},
                        {k: f.to(device, **kwargs) for k, f in self._node_frames.items()},
                        {k: f.to(device, **kwargs) for k, f in self._edge_frames.items()},
                        self._idtype, device)
        if self._batch_num_nodes is not None:
            g._batch_num_nodes = {k: c.to(device) for k, c in self._batch_num_nodes.items()}
            g._batch_num_edges = {k: c.to(device) for k, c in self._batch_num_edges.items()}
        return g

    def cpu(self):
        """Copy of the graph on the CPU."""
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to(device or "cuda")

    def clone(self):
        """Copy with its own feature mappings (tensors shared; structure is immutable)."""
        return self._shallow()

    def astype(self, idtype):
        """Copy with node/edge IDs of type ``idtype`` (int32 or int64)."""
        if idtype not in (torch.int32, torch.int64):
            raise DGLError(f"expected idtype torch.int32 or torch.int64, got {idtype}")
        g = self._shallow({k: ix.astype(idtype) for k, ix in self._indexes.items()})
        g._idtype = idtype
        return g

    def int(self):
        """Copy with int32 node/edge IDs."""
        return self.astype(torch.int32)

    def long(self):
        """Copy with int64 node/edge IDs."""
        return self.astype(torch.int64)

    def _astype_float(self, dtype):
        """Copy whose floating-point features (every type) are cast to ``dtype`` (structure shared)."""
        return self._shallow(node_frames={k: f.astype_float(dtype) for k, f in self._node_frames.items()},
                             edge_frames={k: f.astype_float(dtype) for k, f in self._edge_frames.items()})

    def local_var(self):
        """Graph sharing structure and tensors whose feature mappings changes stay local."""
        return self._shallow()

    @contextlib.contextmanager
    def local_scope(self):
        """Context in which feature changes (of every type) are undone on exit.

        Examples
        --------
        >>> import torch, mpgraph as dgl
        >>> g = dgl.heterograph({('a', 'r', 'b'): ([0], [1]), ('b', 's', 'a'): ([1], [0])})
        >>> with g.local_scope():
        ...     g.nodes['a'].data['h'] = torch.ones(1, 2)
        >>> 'h' in g.nodes['a'].data
        False
        """
        saved = self._node_frames, self._edge_frames
        self._node_frames = {k: f.clone() for k, f in saved[0].items()}
        self._edge_frames = {k: f.clone() for k, f in saved[1].items()}
        try:
            yield
        finally:
            self._node_frames, self._edge_frames = saved

    # ------------------------------------------------------------------
    # feature views
    # ------------------------------------------------------------------
    def _node_data(self, types, side=None):
        if len(types) == 1:
            return self._frames_of(side)[types[0]]
        return _TypedData(self, "node", types, side)

    @property
    def ndata(self):
        """Node features: a type's frame with one node type, else ``{ntype: tensor}``-valued."""
        return self._node_data(self._ntypes)

    @property
    def srcdata(self):
        """Features of the source node types (see :attr:`srctypes`)."""
        return self._node_data(self._srctypes, "src")

    @property
    def dstdata(self):
        """Features of the destination node types (see :attr:`dsttypes`)."""
        return self._node_data(self._dsttypes, "dst")

    @property
    def edata(self):
        """Edge features: the relation's frame with one relation, else ``{canonical_etype: tensor}``-valued."""
        if len(self._cetypes) == 1:
            return self._edge_frames[self._cetypes[0]]
        return _TypedData(self, "edge", self._cetypes)

    nodes = property(lambda self: _HeteroNodeView(self, None), doc="Node IDs and per-type feature views.")
    srcnodes = property(lambda self: _HeteroNodeView(self, "src"), doc="Source node IDs and feature views.")
    dstnodes = property(lambda self: _HeteroNodeView(self, "dst"), doc="Destination node IDs and feature views.")
    edges = property(lambda self: _HeteroEdgeView(self), doc="Edges (callable) and per-relation feature views.")

    def node_attr_schemes(self, ntype=None):
        """``{name: (shape, dtype)}`` of the features of node type ``ntype``."""
        return {k: (tuple(v.shape[1:]), v.dtype) for k, v in self._frames_of("dst")[self._ntype(ntype)].items()}

    def edge_attr_schemes(self, etype=None):
        """``{name: (shape, dtype)}`` of the features of relation ``etype``."""
        return {k: (tuple(v.shape[1:]), v.dtype) for k, v in self._edge_frames[self.to_canonical_etype(etype)].items()}

    def set_n_initializer(self, initializer, field=None, ntype=None):
        """Set the initializer of node features (of ``ntype``, or every type)."""
        types = self._ntypes if ntype is None else [self._ntype(ntype)]
        for t in types:
            self._node_frames[t].set_initializer(initializer)

    def set_e_initializer(self, initializer, field=None, etype=None):
        """Set the initializer of edge features (of ``etype``, or every relation)."""
        types = self._cetypes if etype is None else [self.to_canonical_etype(etype)]
        for t in types:
            self._edge_frames[t].set_initializer(initializer)

    # ------------------------------------------------------------------
    # message passing
    # ------------------------------------------------------------------
    def apply_nodes(self, func, v=ALL, ntype=None):
        """Update features of nodes ``v`` of type ``ntype`` with ``func(NodeBatch) -> dict``.

        On a block the destination nodes of ``ntype`` are updated.
        """
        frame = self._frames_of("dst")[self._ntype(ntype)]
        if is_all(v):
            nodes = torch.arange(frame.num_rows, device=self.device, dtype=self.idtype)
            res = check_udf_output(func(NodeBatch(frame, nodes, all_nodes=True)), frame.num_rows, "apply")
            for k, val in res.items():
                frame[k] = val
            return
        v_t = _node_ids(v, frame.num_rows, self.device, ntype)
        res = check_udf_output(func(NodeBatch(frame, v_t)), v_t.numel(), "apply")
        frame.update_rows(v_t, res)

    def filter_nodes(self, predicate, nodes=ALL, ntype=None):
        """IDs of the nodes of type ``ntype`` (among ``nodes``) for which ``predicate`` is True."""
        frame = self._frames_of("dst")[self._ntype(ntype)]
        if is_all(nodes):
            v_t = torch.arange(frame.num_rows, device=self.device)
            batch = NodeBatch(frame, v_t.to(self.idtype), all_nodes=True)
        else:
            v_t = _node_ids(nodes, frame.num_rows, self.device, ntype)
            batch = NodeBatch(frame, v_t.to(self.idtype))
        mask = predicate(batch)
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.numel() != v_t.numel():
            raise DGLError(f"expected the node predicate to return a bool tensor of {v_t.numel()} elements, got "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}")
        return v_t[mask.reshape(-1)].to(self.idtype)

    def filter_edges(self, predicate, edges=ALL, etype=None):
        """IDs of the edges of relation ``etype`` for which ``predicate(EdgeBatch)`` is True."""
        return self._rel(etype).filter_edges(predicate, edges)

    def apply_edges(self, func, edges=ALL, etype=None):
        """Compute edge features of relation ``etype`` with a builtin (gSDDMM) or an edge UDF.

        With ``etype`` omitted on a graph of several relations, a builtin runs on
        every relation (as DGL); a UDF needs ``etype``.
        """
        if etype is None and len(self._cetypes) > 1:
            if not is_all(edges):
                raise DGLError("apply_edges on selected edges needs etype= on a graph with several relations")
            if not _is_builtin_edge_func(func):
                raise DGLError(f"apply_edges with a user-defined function needs etype= on a graph with "
                               f"{len(self._cetypes)} relations; call it per relation")
            for cet in self._cetypes:
                with _relation_errors(cet):
                    self._slice(cet).apply_edges(func)
            return
        self._rel(etype).apply_edges(func, edges)

    def send_and_recv(self, edges, message_func, reduce_func, apply_node_func=None, etype=None, inplace=False):
        """Message passing over the edges ``edges`` of relation ``etype``."""
        self._rel(etype).send_and_recv(edges, message_func, reduce_func, apply_node_func)

    def pull(self, v, message_func, reduce_func, apply_node_func=None, etype=None, inplace=False):
        """Destination nodes ``v`` of relation ``etype`` pull messages from their in-edges."""
        self._rel(etype).pull(v, message_func, reduce_func, apply_node_func)

    def push(self, u, message_func, reduce_func, apply_node_func=None, etype=None, inplace=False):
        """Source nodes ``u`` of relation ``etype`` send messages along their out-edges."""
        self._rel(etype).push(u, message_func, reduce_func, apply_node_func)

    def update_all(self, message_func, reduce_func, apply_node_func=None, etype=None):
        r"""Send messages along every edge of relation ``etype`` and reduce them at its destinations.

        With ``etype`` omitted on a graph of several relations, builtin message
        and reduce functions run on every relation and the reducer applies over
        the in-edges of *all* relations at once (DGL's behaviour): ``sum``,
        ``max``, ``min``, and also ``mean`` (the mean over all in-edges, which
        DGL rejects). Each relation is one fused gSpMM accumulating in float32;
        the relations are combined unrounded and rounded once. Nodes without
        in-edges in any relation get 0; node types that are no relation's
        destination are left unchanged.

        Parameters
        ----------
        message_func, reduce_func : builtin or callable
            As :meth:`mpgraph.graph.Graph.update_all` (builtins only when ``etype`` is
            omitted on several relations).
        apply_node_func : callable, optional
            Node UDF applied to every updated node type afterwards.
        etype : str or tuple, optional
            The relation; may be omitted when the graph has one.

        Raises
        ------
        DGLError
            A UDF without ``etype`` on several relations; unknown or ambiguous ``etype``.
        """
        if etype is not None or len(self._cetypes) == 1:
            self._rel(etype).update_all(message_func, reduce_func, apply_node_func)
            return
        pairs = _builtin_pairs(message_func, reduce_func)
        if pairs is None:
            raise DGLError(f"update_all with user-defined functions needs etype= on a graph with "
                           f"{len(self._cetypes)} relations; use multi_update_all, or call it per relation")
        results = {}
        for cet in self._cetypes:
            sl = self._slice(cet)
            frames = sl._frames()
            deg = sl._index.in_degrees()
            for msg, red in pairs:
                op = "sum" if red.reduce_op == "mean" else red.reduce_op
                with _relation_errors(cet):
                    acc, dtype = _reduce_accumulated(sl._index, frames, msg, op)
                results.setdefault(cet[2], {}).setdefault(red.out_field, []).append((acc, dtype, deg, red.reduce_op))
        for ntype, outs in results.items():
            frame = self._frames_of("dst")[ntype]
            written = {}
            for name, parts in outs.items():
                written[name] = _combine_all_edges(parts)
            for name, val in written.items():
                frame[name] = val
            if apply_node_func is not None:
                self.apply_nodes(apply_node_func, ntype=ntype)

    def multi_update_all(self, etype_dict, cross_reducer, apply_node_func=None):
        r"""Message passing per relation, then a reduction across the relations into each node type.

        .. math::

            h_v = \bigoplus_{r \,:\, \mathrm{dst}(r) = \mathrm{type}(v)}
                  \Big( \bigotimes_{(u, e, v) \in r} \phi_r(x_u, x_e) \Big)

        where :math:`\phi_r, \bigotimes` are relation ``r``'s message and reduce
        functions and :math:`\bigoplus` is ``cross_reducer``. Builtin pairs run
        as one fused gSpMM per relation; for float16/bfloat16 features each
        relation's result stays float32 (unrounded), the cross reducer runs in
        float32 and the result is rounded once to the output format (float64
        stays float64). Nodes of a receiving type without in-edges in a relation
        get 0 from that relation (DGL's rule: the cross ``max`` of a relation
        delivering only negative values to a node and a relation with no edge
        to it is 0). Node types that no
        relation in ``etype_dict`` reaches get nothing written, as in DGL.

        Parameters
        ----------
        etype_dict : dict
            ``{etype: (message_func, reduce_func)}`` or
            ``{etype: (message_func, reduce_func, apply_node_func)}``; ``etype`` an
            edge type name or canonical tuple. The per-relation apply function
            sees the relation's result (in the output format) and the destination
            features, and its output is what gets combined.
        cross_reducer : str or callable
            ``'sum'``, ``'min'``, ``'max'``, ``'mean'`` or ``'stack'`` (results
            stacked on dimension 1, ``(N, R, *)``, relations in
            :attr:`canonical_etypes` order), or ``f(list_of_tensors) -> tensor``
            receiving the per-relation results in their output format (not called
            for a type reached by one relation, as DGL).
        apply_node_func : callable, optional
            Node UDF applied to every updated node type afterwards.

        Raises
        ------
        DGLError
            Unknown/ambiguous edge type, a relation given twice, values that are
            not ``(message, reduce[, apply])``, an unknown cross reducer,
            relations into one type producing different feature names or shapes.

        Examples
        --------
        >>> import torch, mpgraph as dgl
        >>> import mpgraph.function as fn
        >>> g = dgl.heterograph({
        ...     ('user', 'follows', 'user'): ([0, 1], [1, 1]),
        ...     ('game', 'attracts', 'user'): ([0], [2]),
        ...     ('user', 'plays', 'game'): ([0], [0])})
        >>> g.nodes['user'].data['h'] = torch.tensor([[1.], [2.], [3.]])
        >>> g.nodes['game'].data['h'] = torch.tensor([[10.]])
        >>> g.multi_update_all({'follows': (fn.copy_u('h', 'm'), fn.sum('m', 'h')),
        ...                     'attracts': (fn.copy_u('h', 'm'), fn.sum('m', 'h'))}, 'sum')
        >>> g.nodes['user'].data['h'].squeeze(1)
        tensor([ 0.,  3., 10.])
        >>> g.nodes['game'].data['h'].squeeze(1)   # no relation of the dict reaches 'game'
        tensor([10.])
        """
        if not isinstance(etype_dict, dict):
            raise DGLTypeError(f"expected etype_dict as {{etype: (message_func, reduce_func)}}, got "
                               f"{type(etype_dict).__name__}")
        if not (callable(cross_reducer) or cross_reducer in CROSS_REDUCERS):
            raise DGLError(f"expected cross_reducer in {list(CROSS_REDUCERS)} or a callable, got {cross_reducer!r}")
        per_dst = {}
        seen = set()
        for etype, args in etype_dict.items():
            cet = self.to_canonical_etype(etype)
            if cet in seen:
                raise DGLError(f"relation {cet} is given twice in etype_dict")
            seen.add(cet)
            if not isinstance(args, (tuple, list)) or len(args) not in (2, 3):
                raise DGLError(f"expected (message_func, reduce_func[, apply_node_func]) for edge type {etype!r}, "
                               f"got {args!r}")
            mfunc, rfunc = args[0], args[1]
            afunc = args[2] if len(args) == 3 else None
            with _relation_errors(cet):
                out = self._relation_reduce(cet, mfunc, rfunc, afunc)
            per_dst.setdefault(cet[2], []).append((self._cetypes.index(cet), cet, out))
        for ntype in self._ntypes:
            if ntype not in per_dst:
                continue
            items = sorted(per_dst[ntype], key=lambda x: x[0])
            names = set(items[0][2])
            for _, cet, out in items[1:]:
                if set(out) != names:
                    raise DGLError(f"relations into node type {ntype!r} produce different features: "
                                   f"{items[0][1]} gives {sorted(names)}, {cet} gives {sorted(out)}; "
                                   "name the outputs alike")
            frame = self._frames_of("dst")[ntype]
            merged = {name: _cross_reduce([(cet, out[name]) for _, cet, out in items], cross_reducer, ntype, name)
                      for name in sorted(names)}
            for name, val in merged.items():
                frame[name] = val
            if apply_node_func is not None:
                self.apply_nodes(apply_node_func, ntype=ntype)

    def _relation_reduce(self, cet, mfunc, rfunc, afunc):
        """One relation's reduced features ``{name: (value, out_dtype)}``, value unrounded (accum dtype)."""
        sl = self._slice(cet)
        index, frames = sl._index, sl._frames()
        N = index.num_dst
        out = {}
        pairs = _builtin_pairs(mfunc, rfunc)
        if pairs is not None:
            for msg, red in pairs:
                out[red.out_field] = _reduce_accumulated(index, frames, msg, red.reduce_op)
        else:
            nodes, res = _lowering.message_passing(index, frames, mfunc, rfunc, sl._edge_batch_args())
            for k, val in res.items():
                if nodes is not None:
                    full = torch.zeros((N,) + tuple(val.shape[1:]), dtype=val.dtype, device=val.device)
                    val = full.index_copy(0, nodes.to(torch.int64), val)
                out[k] = (_to_accum(val), val.dtype)
        if afunc is not None:
            frame = sl._dst_frame.clone()
            for k, (val, dtype) in out.items():
                frame[k] = val.to(dtype)
            nodes = torch.arange(N, device=self.device, dtype=self.idtype)
            res = check_udf_output(afunc(NodeBatch(frame, nodes, all_nodes=True)), N, "apply")
            out = {k: (_to_accum(v), v.dtype) for k, v in res.items()}
        return out

    # ------------------------------------------------------------------
    # mutation (replaces the immutable indexes; features follow)
    # ------------------------------------------------------------------
    def _refit(self):
        """Rebuild the indexes whose node counts no longer match their types' frames."""
        for cet, ix in self._indexes.items():
            ns, nd = self._node_frames[cet[0]].num_rows, self._node_frames[cet[2]].num_rows
            if (ix.num_src, ix.num_dst) != (ns, nd):
                self._indexes[cet] = Index.from_coo(ix.src, ix.dst, ns, nd)
        self._batch_num_nodes = self._batch_num_edges = None

    def _take_back(self, cet, sl):
        """Adopt the structure and frames of a mutated relation slice."""
        s, _, d = cet
        self._indexes[cet] = sl._index
        self._edge_frames[cet] = sl._edge_frame
        self._node_frames[s] = sl._node_frames[0]
        self._node_frames[d] = sl._node_frames[-1]
        self._refit()

    def add_nodes(self, num, data=None, ntype=None):
        """Add ``num`` nodes of type ``ntype`` (in place); ``data`` gives their features, others get zeros."""
        if not isinstance(num, int) or isinstance(num, bool) or num < 0:
            raise DGLError(f"expected a non-negative int number of nodes to add, got {num!r}")
        nt = self._ntype(ntype)
        self._node_frames[nt] = self._node_frames[nt].extend(num, data)
        self._refit()

    def add_edges(self, u, v, data=None, etype=None):
        """Add edges ``u[i] -> v[i]`` to relation ``etype`` (in place); missing end nodes are added."""
        cet = self.to_canonical_etype(etype)
        sl = self._slice(cet)
        sl.add_edges(u, v, data)
        self._take_back(cet, sl)

    def remove_edges(self, eids, etype=None, store_ids=False):
        """Remove edges ``eids`` of relation ``etype`` (in place); the rest are renumbered in order."""
        cet = self.to_canonical_etype(etype)
        sl = self._slice(cet)
        sl.remove_edges(eids, store_ids=store_ids)
        self._take_back(cet, sl)

    def remove_nodes(self, nids, ntype=None, store_ids=False):
        """Remove nodes ``nids`` of type ``ntype`` and their edges in every relation (in place)."""
        nt = self._ntype(ntype)
        n = self._node_frames[nt].num_rows
        v = _node_ids(nids, n, self.device, nt)
        keep = torch.ones(n, dtype=torch.bool, device=self.device)
        keep[v] = False
        kept = keep.nonzero().squeeze(1)
        new_id = torch.full((n,), -1, dtype=torch.int64, device=self.device)
        new_id[kept] = torch.arange(kept.numel(), device=self.device)
        for cet, ix in list(self._indexes.items()):
            s, _, d = cet
            if nt not in (s, d):
                continue
            src, dst = ix.src64, ix.dst64
            emask = torch.ones(ix.num_edges, dtype=torch.bool, device=self.device)
            if s == nt:
                emask &= keep[src]
            if d == nt:
                emask &= keep[dst]
            ekept = emask.nonzero().squeeze(1)
            src, dst = src[ekept], dst[ekept]
            if s == nt:
                src = new_id[src]
            if d == nt:
                dst = new_id[dst]
            ns = kept.numel() if s == nt else ix.num_src
            nd = kept.numel() if d == nt else ix.num_dst
            self._indexes[cet] = Index.from_coo(src.to(ix.idtype), dst.to(ix.idtype), ns, nd)
            self._edge_frames[cet] = self._edge_frames[cet].subframe(ekept)
            if store_ids:
                self._edge_frames[cet][EID] = ekept.to(self.idtype)
        self._node_frames[nt] = self._node_frames[nt].subframe(kept)
        if store_ids:
            self._node_frames[nt][NID] = kept.to(self.idtype)
        self._batch_num_nodes = self._batch_num_edges = None

    # ------------------------------------------------------------------
    # batching information (filled by batch_hetero)
    # ------------------------------------------------------------------
    @property
    def batch_size(self):
        """Number of graphs in this batched graph (1 for an unbatched graph)."""
        if self._batch_num_nodes is None:
            return 1
        return int(next(iter(self._batch_num_nodes.values())).numel())

    def batch_num_nodes(self, ntype=None):
        """Nodes of type ``ntype`` per graph of the batch, ``(batch_size,)`` int64."""
        nt = self._ntype(ntype)
        if self._batch_num_nodes is None:
            return torch.tensor([self.num_nodes(nt)], dtype=torch.int64, device=self.device)
        return self._batch_num_nodes[nt]

    def batch_num_edges(self, etype=None):
        """Edges of relation ``etype`` per graph of the batch, ``(batch_size,)`` int64."""
        cet = self.to_canonical_etype(etype)
        if self._batch_num_edges is None:
            return torch.tensor([self.num_edges(cet)], dtype=torch.int64, device=self.device)
        return self._batch_num_edges[cet]

    def _counts(self, val, total, what):
        from .batch import _as_counts
        c = _as_counts(val, what, self.device)
        if int(c.sum()) != total:
            raise DGLError(f"expected {what} counts summing to {total}, got {c.tolist()}")
        return c

    def set_batch_num_nodes(self, val):
        """Set the per-graph node counts: ``{ntype: counts}`` for every node type."""
        if not isinstance(val, dict) or {self._check_ntype(k) for k in val} != set(self._ntypes):
            raise DGLError(f"expected a dict {{ntype: counts}} with every node type {self._ntypes}, got "
                           f"{sorted(val) if isinstance(val, dict) else type(val).__name__}")
        counts = {k: self._counts(c, self.num_nodes(k), f"{k!r} node") for k, c in val.items()}
        if len({c.numel() for c in counts.values()}) > 1:
            raise DGLError("expected the same number of graphs for every node type")
        self._batch_num_nodes = counts

    def set_batch_num_edges(self, val):
        """Set the per-graph edge counts: ``{etype: counts}`` for every relation."""
        if not isinstance(val, dict):
            raise DGLError(f"expected a dict {{etype: counts}} for the relations {self._cetypes}, got "
                           f"{type(val).__name__}")
        counts = {self.to_canonical_etype(k): v for k, v in val.items()}
        if set(counts) != set(self._cetypes):
            raise DGLError(f"expected counts for every relation {self._cetypes}, got {sorted(counts)}")
        self._batch_num_edges = {k: self._counts(c, self.num_edges(k), f"{k} edge") for k, c in counts.items()}

    # ------------------------------------------------------------------
    # python protocol
    # ------------------------------------------------------------------
    def __len__(self):
        raise DGLError("len(g) is ambiguous; use g.num_nodes() or g.num_edges()")

    def __repr__(self):
        nodes = {nt: self.num_nodes(nt) for nt in self._ntypes}
        edges = {cet: self._indexes[cet].num_edges for cet in self._cetypes}
        meta = [(s, d, e) for s, e, d in self._cetypes]
        return f"Graph(num_nodes={nodes},\n      num_edges={edges},\n      metagraph={meta})"


# ----------------------------------------------------------------------------- typed blocks

class HeteroBlock(HeteroGraph):
    """A typed block (message-flow graph): per node type, separate source and destination node sets.

    This is what :func:`mpgraph.dataloading.to_block` and the neighbour
    samplers return for a :class:`HeteroGraph` (DGL's heterogeneous
    ``DGLBlock``). Every node type of the sampled graph is both a source and a
    destination type (possibly with no nodes on a side); relation
    ``(srctype, etype, dsttype)`` runs from the *source* nodes of ``srctype``
    to the *destination* nodes of ``dsttype``. Features live per side:
    ``block.srcdata``/``block.dstdata`` (``{ntype: tensor}``-valued with
    several types), ``block.srcnodes[ntype].data``,
    ``block.dstnodes[ntype].data``; the samplers store the IDs in the sampled
    graph as ``srcdata[dgl.NID]``, ``dstdata[dgl.NID]`` and ``edata[dgl.EID]``.
    ``block[etype]`` is the relation's one-relation block
    (:class:`~mpgraph.graph.Graph` with ``is_block``) sharing these features,
    so every layer that runs on a homogeneous block runs on a relation, and
    :class:`~mpgraph.nn.HeteroGraphConv` runs on the typed block. Message
    passing writes destination features.

    Parameters
    ----------
    indexes : dict
        ``{(srctype, etype, dsttype): Index}`` with ``num_src`` source nodes of
        ``srctype`` and ``num_dst`` destination nodes of ``dsttype``.
    num_src_nodes, num_dst_nodes : dict
        ``{ntype: int}``; a type missing from one dict has no nodes on that side.
    src_frames, dst_frames : dict, optional
        ``{ntype: Frame}`` per side; empty frames by default.
    edge_frames : dict, optional
        ``{(srctype, etype, dsttype): Frame}``.
    idtype, device : optional
        Used when there are no relations.

    Raises
    ------
    DGLError
        Counts that disagree with the indexes, unknown node types, mixed ID types or devices.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.dataloading import to_block
    >>> g = dgl.heterograph({('user', 'follows', 'user'): ([0, 1], [1, 2]),
    ...                      ('user', 'plays', 'game'): ([0, 2], [1, 1])})
    >>> block = to_block(g, {'user': torch.tensor([2, 1]), 'game': torch.tensor([1])})
    >>> block.is_block, block.num_src_nodes('user'), block.num_dst_nodes('game')
    (True, 3, 1)
    >>> block.srcdata[dgl.NID]['user'], block.edata[dgl.EID][('user', 'plays', 'game')]
    (tensor([2, 1, 0]), tensor([0, 1]))
    """

    def __init__(self, indexes, num_src_nodes, num_dst_nodes, src_frames=None, dst_frames=None, edge_frames=None,
                 idtype=None, device=None):
        if not (isinstance(indexes, dict) and isinstance(num_src_nodes, dict) and isinstance(num_dst_nodes, dict)):
            raise DGLTypeError("expected dicts {canonical_etype: Index}, {ntype: int} and {ntype: int}; build "
                               "typed blocks with mpgraph.dataloading.to_block")
        types = set(num_src_nodes) | set(num_dst_nodes)
        src_counts = {nt: int(num_src_nodes.get(nt, 0)) for nt in types}
        dst_counts = {nt: int(num_dst_nodes.get(nt, 0)) for nt in types}
        self._init_relations(indexes, src_counts, dst_counts, edge_frames, idtype, device)
        src_frames = src_frames or {}
        dst_frames = dst_frames or {}
        self._node_frames = None
        self._src_frames = {nt: _retyped(src_frames.get(nt), src_counts[nt], self._device, _node_kind(nt))
                            for nt in self._ntypes}
        self._dst_frames = {nt: _retyped(dst_frames.get(nt), dst_counts[nt], self._device, _node_kind(nt))
                            for nt in self._ntypes}
        self._unibipartite = True
        self._srctypes = self._dsttypes = list(self._ntypes)

    def _frames_of(self, side):
        if side == "src":
            return self._src_frames
        if side == "dst":
            return self._dst_frames
        raise DGLError("a block has separate source and destination nodes of every type; use srcdata/dstdata, "
                       "srcnodes/dstnodes or num_src_nodes/num_dst_nodes")

    def _slice(self, cet):
        s, _, d = cet
        return Graph(self._indexes[cet], cet, True, [self._src_frames[s], self._dst_frames[d]],
                     self._edge_frames[cet])

    @property
    def is_block(self):
        """Always True."""
        return True

    @property
    def ndata(self):
        """Not defined on a block: use :attr:`srcdata` or :attr:`dstdata`."""
        return self._frames_of(None)

    def num_nodes(self, ntype=None):
        """All source plus destination nodes; with ``ntype``, an error (use num_src_nodes/num_dst_nodes)."""
        if ntype is None:
            return self.num_src_nodes() + self.num_dst_nodes()
        nt = self._ntype(ntype)
        raise DGLError(f"a block has separate source and destination nodes of type {nt!r}; use "
                       f"num_src_nodes({nt!r}) or num_dst_nodes({nt!r})")

    def num_src_nodes(self, ntype=None):
        """Number of source nodes of ``ntype`` (of all types together when omitted)."""
        if ntype is None:
            return sum(f.num_rows for f in self._src_frames.values())
        return self._src_frames[self._ntype(ntype)].num_rows

    def num_dst_nodes(self, ntype=None):
        """Number of destination nodes of ``ntype`` (of all types together when omitted)."""
        if ntype is None:
            return sum(f.num_rows for f in self._dst_frames.values())
        return self._dst_frames[self._ntype(ntype)].num_rows

    def _shallow(self, indexes=None, src_frames=None, dst_frames=None, edge_frames=None):
        indexes = self._indexes if indexes is None else indexes
        sf = {k: f.clone() for k, f in self._src_frames.items()} if src_frames is None else src_frames
        df = {k: f.clone() for k, f in self._dst_frames.items()} if dst_frames is None else dst_frames
        ef = {k: f.clone() for k, f in self._edge_frames.items()} if edge_frames is None else edge_frames
        idtype = next(iter(indexes.values())).idtype if indexes else self._idtype
        return HeteroBlock(indexes, {nt: f.num_rows for nt, f in self._src_frames.items()},
                           {nt: f.num_rows for nt, f in self._dst_frames.items()}, sf, df, ef, idtype, self._device)

    def to(self, device, **kwargs):
        """Copy of the block (structure and features) on ``device``."""
        device = torch.device(device)
        if device == self.device:
            return self
        return HeteroBlock({k: ix.to(device) for k, ix in self._indexes.items()},
                           {nt: f.num_rows for nt, f in self._src_frames.items()},
                           {nt: f.num_rows for nt, f in self._dst_frames.items()},
                           {k: f.to(device, **kwargs) for k, f in self._src_frames.items()},
                           {k: f.to(device, **kwargs) for k, f in self._dst_frames.items()},
                           {k: f.to(device, **kwargs) for k, f in self._edge_frames.items()},
                           self._idtype, device)

    def astype(self, idtype):
        """Copy with node/edge IDs of type ``idtype`` (int32 or int64)."""
        if idtype not in (torch.int32, torch.int64):
            raise DGLError(f"expected idtype torch.int32 or torch.int64, got {idtype}")
        g = self._shallow({k: ix.astype(idtype) for k, ix in self._indexes.items()})
        g._idtype = idtype
        return g

    def _astype_float(self, dtype):
        return self._shallow(src_frames={k: f.astype_float(dtype) for k, f in self._src_frames.items()},
                             dst_frames={k: f.astype_float(dtype) for k, f in self._dst_frames.items()},
                             edge_frames={k: f.astype_float(dtype) for k, f in self._edge_frames.items()})

    @contextlib.contextmanager
    def local_scope(self):
        """Context in which feature changes (either side, every type) are undone on exit."""
        saved = self._src_frames, self._dst_frames, self._edge_frames
        self._src_frames = {k: f.clone() for k, f in saved[0].items()}
        self._dst_frames = {k: f.clone() for k, f in saved[1].items()}
        self._edge_frames = {k: f.clone() for k, f in saved[2].items()}
        try:
            yield
        finally:
            self._src_frames, self._dst_frames, self._edge_frames = saved

    def set_n_initializer(self, initializer, field=None, ntype=None):
        """Set the initializer of node features (both sides; of ``ntype``, or every type)."""
        types = self._ntypes if ntype is None else [self._ntype(ntype)]
        for t in types:
            self._src_frames[t].set_initializer(initializer)
            self._dst_frames[t].set_initializer(initializer)

    def _immutable(self, what):
        return DGLError(f"{what} is not supported on a block (its node sets are fixed by sampling); change the "
                        "graph, then sample blocks from it")

    def add_nodes(self, num, data=None, ntype=None):
        raise self._immutable("add_nodes")

    def add_edges(self, u, v, data=None, etype=None):
        raise self._immutable("add_edges")

    def remove_edges(self, eids, etype=None, store_ids=False):
        raise self._immutable("remove_edges")

    def remove_nodes(self, nids, ntype=None, store_ids=False):
        raise self._immutable("remove_nodes")

    def batch_num_nodes(self, ntype=None):
        raise DGLError("a block carries no batch information; batch the graphs before sampling blocks")

    def batch_num_edges(self, etype=None):
        raise DGLError("a block carries no batch information; batch the graphs before sampling blocks")

    def set_batch_num_nodes(self, val):
        raise self._immutable("set_batch_num_nodes")

    def set_batch_num_edges(self, val):
        raise self._immutable("set_batch_num_edges")

    def __repr__(self):
        src = {nt: f.num_rows for nt, f in self._src_frames.items()}
        dst = {nt: f.num_rows for nt, f in self._dst_frames.items()}
        edges = {cet: self._indexes[cet].num_edges for cet in self._cetypes}
        meta = [(s, d, e) for s, e, d in self._cetypes]
        return (f"Block(num_src_nodes={src},\n      num_dst_nodes={dst},\n      num_edges={edges},\n"
                f"      metagraph={meta})")


# ----------------------------------------------------------------------------- typed feature views

class _TypedData:
    """``g.ndata`` / ``g.edata`` of a graph with several types: ``g.ndata['h']`` is ``{type: tensor}``."""

    def __init__(self, graph, kind, types, side=None):
        self._g, self._kind, self._types, self._side = graph, kind, list(types), side

    def _store(self):
        return self._g._frames_of(self._side) if self._kind == "node" else self._g._edge_frames

    def _frames(self):
        src = self._store()
        return [(t, src[t]) for t in self._types]

    def _resolve(self, t):
        g = self._g
        if self._kind == "node":
            nt = g._ntype(t)
            if nt not in self._types:
                raise DGLError(f"node type {nt!r} is not among {self._types} of this view")
            return nt
        return g.to_canonical_etype(t)

    def __getitem__(self, key):
        out = {t: f[key] for t, f in self._frames() if key in f}
        if not out:
            raise KeyError(f"{self._kind} feature {key!r} not found for any {self._kind} type")
        return out

    def __setitem__(self, key, value):
        if not isinstance(value, dict):
            raise DGLError(f"this graph has {self._kind} types {self._types}; assign a dict {{type: tensor}} or use "
                           f"g.{'nodes' if self._kind == 'node' else 'edges'}[type].data")
        src = self._store()
        checked = [(self._resolve(t), v) for t, v in value.items()]
        for t, v in checked:
            src[t][key] = v

    def __delitem__(self, key):
        hit = False
        for _, f in self._frames():
            if key in f:
                del f[key]
                hit = True
        if not hit:
            raise KeyError(f"{self._kind} feature {key!r} not found for any {self._kind} type")

    def __contains__(self, key):
        return any(key in f for _, f in self._frames())

    def __iter__(self):
        return iter(sorted(set().union(*[set(f) for _, f in self._frames()])))

    def __len__(self):
        return len(list(iter(self)))

    def keys(self):
        return list(iter(self))

    def items(self):
        return [(k, self[k]) for k in self]

    def values(self):
        return [self[k] for k in self]

    def update(self, other):
        for k, v in dict(other).items():
            self[k] = v

    def __repr__(self):
        return repr({k: {t: tuple(v.shape) for t, v in self[k].items()} for k in self})


class _HeteroNodeView:
    """``g.nodes``: ``g.nodes('user')`` gives IDs, ``g.nodes['user'].data`` the features."""

    def __init__(self, graph, which):
        self._g, self._which = graph, which

    def _types(self):
        g = self._g
        return {"src": g._srctypes, "dst": g._dsttypes}.get(self._which, g._ntypes)

    def _ntype(self, ntype):
        g = self._g
        types = self._types()
        if ntype is None:
            if len(types) == 1:
                return types[0]
            raise DGLError(f"this graph has node types {types}; index g.nodes[ntype] with one of them")
        nt = g._check_ntype(ntype)
        if nt not in types:
            raise DGLError(f"node type {nt!r} is not among the {self._which} types {types}")
        return nt

    def __call__(self, ntype=None):
        n = self._g._frames_of(self._which)[self._ntype(ntype)].num_rows
        return torch.arange(n, dtype=self._g.idtype, device=self._g.device)

    def __getitem__(self, key):
        g = self._g
        if isinstance(key, slice):
            if key != slice(None):
                raise DGLError("only the full slice g.nodes[:] is supported")
            nodes, ntype = ALL, None
        elif isinstance(key, tuple):
            if len(key) != 2:
                raise DGLError(f"expected g.nodes[ids, ntype], got a tuple of {len(key)} items")
            nodes, ntype = key
        elif key is None or isinstance(key, str):
            nodes, ntype = ALL, key
        else:
            nodes, ntype = key, None
        nt = self._ntype(ntype)
        frame = g._frames_of(self._which)[nt]
        if is_all(nodes):
            return _Space(frame)
        return _Space(_SubsetData(frame, _node_ids(nodes, frame.num_rows, g.device, nt)))

    def __len__(self):
        frames = self._g._frames_of(self._which)
        return sum(frames[t].num_rows for t in self._types())


class _HeteroEdgeView:
    """``g.edges``: call it for the edges of a relation, index it by type for ``.data``."""

    def __init__(self, graph):
        self._g = graph

    def __call__(self, form="uv", order="eid", etype=None):
        return self._g.all_edges(form=form, order=order, etype=etype)

    def __getitem__(self, key):
        g = self._g
        if isinstance(key, slice):
            if key != slice(None):
                raise DGLError("only the full slice g.edges[:] is supported")
            edges, etype = ALL, None
        elif key is None:
            edges, etype = ALL, None
        elif isinstance(key, str) or _is_canonical(key):
            edges, etype = ALL, key
        else:
            edges, etype = key, None
        cet = g.to_canonical_etype(etype)
        frame = g._edge_frames[cet]
        if is_all(edges):
            return _Space(frame)
        return _Space(_SubsetData(frame, g._slice(cet)._edge_selection(edges)))

    def __len__(self):
        return self._g.num_edges()


def _node_ids(v, n, device, ntype):
    """Validate node IDs of a type with ``n`` nodes; returns int64."""
    if isinstance(v, torch.Tensor):
        if v.is_floating_point() or v.dtype == torch.bool:
            raise DGLTypeError(f"expected integer node IDs, got dtype {v.dtype}")
        t = v.reshape(-1).to(device=device, dtype=torch.int64)
    else:
        try:
            t = torch.as_tensor(v, dtype=torch.int64, device=device).reshape(-1)
        except (TypeError, ValueError, RuntimeError) as err:
            raise DGLTypeError(f"expected node IDs as int, list or integer tensor, got {v!r}") from err
    if t.numel() and (int(t.min()) < 0 or int(t.max()) >= n):
        bad = int(t.min()) if int(t.min()) < 0 else int(t.max())
        raise DGLError(f"expected {ntype!r} node IDs in [0, {n}), got {bad}")
    return t


# ----------------------------------------------------------------------------- message-passing helpers

@contextlib.contextmanager
def _relation_errors(cet):
    """Re-raise a DGLError with the relation it came from."""
    try:
        yield
    except DGLError as err:
        if str(cet) in str(err):
            raise
        raise type(err)(f"relation {cet}: {err}") from err


def _is_builtin_edge_func(func):
    if isinstance(func, MessageFunction):
        return True
    return isinstance(func, (list, tuple)) and bool(func) and all(isinstance(f, MessageFunction) for f in func)


def _builtin_pairs(message_func, reduce_func):
    """``[(message, reduce)]`` when both are builtins (matched by message name), else None."""
    reduces = list(reduce_func) if isinstance(reduce_func, (list, tuple)) else [reduce_func]
    msgs = list(message_func) if isinstance(message_func, (list, tuple)) else [message_func]
    if not (reduces and all(isinstance(r, ReduceFunction) for r in reduces)
            and msgs and all(isinstance(m, MessageFunction) for m in msgs)):
        return None
    by_name = {m.out_field: m for m in msgs}
    pairs = []
    for r in reduces:
        m = by_name.get(r.msg_field)
        if m is None:
            raise DGLError(f"reduce fn.{r.reduce_op}({r.msg_field!r}, {r.out_field!r}) reads message "
                           f"{r.msg_field!r}, but the message functions produce {sorted(by_name)}")
        pairs.append((m, r))
    return pairs


def _to_accum(val):
    """``val`` in its accumulation dtype (float32 for 16-bit floats); other tensors unchanged."""
    if val.is_floating_point():
        return val.to(accum_dtype(val.dtype)) if val.dtype in (torch.float16, torch.bfloat16) else val
    return val


def _spmm_accumulated(index, op, reduce_op, lhs, rhs):
    """gSpMM returning its accumulator unrounded: ``(value in accum dtype, output dtype)``.

    Same validation and autocast rule as :func:`mpgraph.ops.gspmm`; the value is
    what gspmm rounds to the output dtype (float32 for 16-bit operands).
    """
    from .ops._checks import check_feature
    from .ops.spmm import gspmm_validated
    if op == "copy_lhs":
        rhs = None
    if op == "copy_rhs":
        lhs = None
    if lhs is not None or op != "copy_rhs":
        check_feature("lhs_data", lhs, index.num_src, "source nodes", index.device, "gspmm")
    if rhs is not None or op != "copy_lhs":
        check_feature("rhs_data", rhs, index.num_edges, "edges", index.device, "gspmm")
    amp = autocast_dtype(index.device.type)
    if amp is not None:
        lhs, rhs = autocast_cast(amp, lhs, rhs)
    dtype = result_dtype(lhs, rhs)
    with autocast_disabled(index.device.type):
        return gspmm_validated(index, op, reduce_op, lhs, rhs, accum_dtype(dtype)), dtype


def _reduce_accumulated(index, frames, msg, reduce_op):
    """One builtin (message, reduce) on one relation, fused when possible: ``(accumulator, output dtype)``."""
    field = _lowering._field
    if isinstance(msg, CopyMessageFunction) and msg.target in ("u", "e"):
        if msg.target == "u":
            return _spmm_accumulated(index, "copy_lhs", reduce_op, field(frames, "u", msg.in_field), None)
        return _spmm_accumulated(index, "copy_rhs", reduce_op, None, field(frames, "e", msg.in_field))
    if isinstance(msg, BinaryMessageFunction) and msg.binary_op in ("add", "sub", "mul", "div"):
        pair = (msg.lhs_target, msg.rhs_target)
        if pair == ("u", "e"):
            return _spmm_accumulated(index, msg.binary_op, reduce_op, field(frames, "u", msg.lhs_field),
                                     field(frames, "e", msg.rhs_field))
        if pair == ("e", "u") and msg.binary_op in ("add", "mul"):
            return _spmm_accumulated(index, msg.binary_op, reduce_op, field(frames, "u", msg.rhs_field),
                                     field(frames, "e", msg.lhs_field))
    return _spmm_accumulated(index, "copy_rhs", reduce_op, None, _lowering._edge_builtin(index, frames, msg))


def _combine_all_edges(parts):
    """Reduce over the in-edges of several relations: ``parts = [(acc, dtype, in_deg, reduce_op)]``."""
    reduce_op = parts[0][3]
    out_dtype = parts[0][1]
    for _, dt, _, _ in parts[1:]:
        out_dtype = torch.promote_types(out_dtype, dt)
    acc_dtype = accum_dtype(out_dtype)
    shape = parts[0][0].shape
    for acc, _, _, _ in parts[1:]:
        if acc.shape != shape:
            raise DGLError(f"expected every relation to give results of shape {tuple(shape)}, got {tuple(acc.shape)}")
    deg_total = sum(p[2] for p in parts)
    if reduce_op in ("sum", "mean"):
        total = parts[0][0].to(acc_dtype)
        for acc, _, _, _ in parts[1:]:
            total = total + acc.to(acc_dtype)
        if reduce_op == "mean":
            d = deg_total.clamp(min=1).to(torch.float32 if acc_dtype != torch.float64 else torch.float64)
            total = total / d.reshape((-1,) + (1,) * (total.dim() - 1))
        return total.to(out_dtype)
    pick = torch.maximum if reduce_op == "max" else torch.minimum
    ident = float("-inf") if reduce_op == "max" else float("inf")
    total = None
    for acc, _, deg, _ in parts:
        has = (deg > 0).reshape((-1,) + (1,) * (acc.dim() - 1))
        val = torch.where(has, acc.to(acc_dtype), torch.full((), ident, dtype=acc_dtype, device=acc.device))
        total = val if total is None else pick(total, val)
    has_any = (deg_total > 0).reshape((-1,) + (1,) * (total.dim() - 1))
    return torch.where(has_any, total, torch.zeros((), dtype=acc_dtype, device=total.device)).to(out_dtype)


def _cross_reduce(parts, reducer, ntype, name):
    """Combine per-relation results ``parts = [(cet, (value, out_dtype))]`` with ``reducer``."""
    out_dtype = parts[0][1][1]
    for _, (_, dt) in parts[1:]:
        out_dtype = torch.promote_types(out_dtype, dt)
    values = [v for _, (v, _) in parts]
    shape = values[0].shape
    for cet, (v, _) in parts[1:]:
        if v.shape != shape:
            raise DGLError(f"cross reducer {reducer!r} on node type {ntype!r}: feature {name!r} has shape "
                           f"{tuple(shape)} from {parts[0][0]} but {tuple(v.shape)} from {cet}")
    if callable(reducer):
        if len(values) == 1:
            return values[0].to(out_dtype)
        return reducer([v.to(out_dtype) for v in values])
    if reducer == "stack":
        return torch.stack([v.to(out_dtype) for v in values], 1)
    if len(values) == 1:
        return values[0].to(out_dtype)
    if not out_dtype.is_floating_point:
        acc_dtype = out_dtype
    else:
        acc_dtype = accum_dtype(out_dtype)
    total = values[0].to(acc_dtype)
    if reducer in ("sum", "mean"):
        for v in values[1:]:
            total = total + v.to(acc_dtype)
        if reducer == "mean":
            total = total / len(values)
    else:
        pick = torch.maximum if reducer == "max" else torch.minimum
        for v in values[1:]:
            total = pick(total, v.to(acc_dtype))
    return total.to(out_dtype)


# ----------------------------------------------------------------------------- assembly and conversions

def _assemble(num_nodes_dict, indexes, node_frames=None, edge_frames=None, idtype=None, device=None):
    """A :class:`Graph` when there is one relation over exactly its node types, else a :class:`HeteroGraph`."""
    node_frames = node_frames or {}
    edge_frames = edge_frames or {}
    if len(indexes) == 1:
        (cet, index), = indexes.items()
        s, _, d = cet
        if set(num_nodes_dict) == {s, d}:
            frames = [_frame_or_new(node_frames.get(s), index.num_src, index.device, "node")]
            if s != d:
                frames.append(_frame_or_new(node_frames.get(d), index.num_dst, index.device, "node"))
            ef = _frame_or_new(edge_frames.get(cet), index.num_edges, index.device, "edge")
            return Graph(index, cet, False, frames, ef)
    return HeteroGraph(indexes, num_nodes_dict, node_frames, edge_frames, idtype, device)


def _frame_or_new(frame, num_rows, device, kind):
    return Frame(num_rows, device, kind) if frame is None else frame


def _typed_view(g):
    """``g`` checked to be a typed graph (a HeteroGraph, or a Graph that is not a block)."""
    if isinstance(g, HeteroGraph):
        if g.is_block:
            raise DGLError("expected a graph, got a typed block; convert the graph before sampling blocks from it")
        return g
    if isinstance(g, Graph):
        if g.is_block:
            raise DGLError("expected a graph, got a block; convert the graph before sampling blocks from it")
        return g
    raise DGLTypeError(f"expected an mpgraph graph, got {type(g).__name__}")


def _node_frame(g, ntype):
    return g._node_frames[ntype] if isinstance(g, HeteroGraph) else g.nodes[ntype].data


def _edge_frame(g, cet):
    return g._edge_frames[cet] if isinstance(g, HeteroGraph) else g._edge_frame


def to_homogeneous(G, ndata=None, edata=None, store_type=True, return_count=False):
    """The graph as one homogeneous graph, node and edge types stored as features.

    Nodes of type ``G.ntypes[i]`` get consecutive IDs after those of the types
    before it; edges of relation ``G.canonical_etypes[j]`` likewise. The result
    stores per-type IDs in ``ndata[NID]``/``edata[EID]`` (``G.idtype``) and,
    with ``store_type``, type IDs in ``ndata[NTYPE]``/``edata[ETYPE]`` (int64).

    Parameters
    ----------
    G : HeteroGraph or Graph
        The typed graph (not a block).
    ndata, edata : list of str, optional
        Features to concatenate across types; every type must have them, with
        one shape and dtype. Default: none.
    store_type : bool, default True
        Store :data:`~mpgraph.base.NTYPE` / :data:`~mpgraph.base.ETYPE`.
    return_count : bool, default False
        Also return the node count per type and edge count per relation.

    Returns
    -------
    Graph, or (Graph, list of int, list of int) with ``return_count``

    Raises
    ------
    DGLError
        A feature of ``ndata``/``edata`` missing in a type or of mismatched shape/dtype.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> hg = dgl.heterograph({('user', 'follows', 'user'): ([0, 1], [1, 2]),
    ...                       ('developer', 'develops', 'game'): ([0, 1], [0, 1])})
    >>> g = to_homogeneous(hg)
    >>> g.ndata['_TYPE'], g.ndata['_ID']
    (tensor([0, 0, 1, 1, 2, 2, 2]), tensor([0, 1, 0, 1, 0, 1, 2]))
    >>> g.edges()
    (tensor([0, 1, 4, 5]), tensor([2, 3, 5, 6]))
    """
    G = _typed_view(G)
    ntypes, cetypes = G.ntypes, G.canonical_etypes
    idtype, device = G.idtype, G.device
    counts = [G.num_nodes(nt) for nt in ntypes]
    offset = {nt: sum(counts[:i]) for i, nt in enumerate(ntypes)}
    srcs, dsts, ecounts = [], [], []
    for cet in cetypes:
        s, d = G.all_edges(form="uv", order="eid", etype=cet)
        srcs.append(s.to(torch.int64) + offset[cet[0]])
        dsts.append(d.to(torch.int64) + offset[cet[2]])
        ecounts.append(s.numel())
    N = sum(counts)
    empty = torch.zeros(0, dtype=torch.int64, device=device)
    src = torch.cat(srcs) if srcs else empty
    dst = torch.cat(dsts) if dsts else empty
    g = Graph(Index.from_coo(src.to(idtype), dst.to(idtype), N, N))
    for name in _names(ndata, "ndata"):
        g.ndata[name] = _concat_feature([(nt, _node_frame(G, nt)) for nt in ntypes], name, "node")
    for name in _names(edata, "edata"):
        g.edata[name] = _concat_feature([(cet, _edge_frame(G, cet)) for cet in cetypes], name, "edge")
    g.ndata[NID] = torch.cat([torch.arange(n, dtype=idtype, device=device) for n in counts])
    g.edata[EID] = torch.cat([torch.arange(n, dtype=idtype, device=device) for n in ecounts]) if ecounts \
        else torch.zeros(0, dtype=idtype, device=device)
    if store_type:
        g.ndata[NTYPE] = torch.repeat_interleave(torch.arange(len(ntypes), device=device),
                                                 torch.tensor(counts, device=device), output_size=N)
        g.edata[ETYPE] = torch.repeat_interleave(torch.arange(len(cetypes), device=device),
                                                 torch.tensor(ecounts, dtype=torch.int64, device=device),
                                                 output_size=src.numel())
    if return_count:
        return g, counts, ecounts
    return g


def _names(names, arg):
    if names is None:
        return []
    if isinstance(names, str):
        raise DGLTypeError(f"expected {arg} to be a list of feature names, got the str {names!r}; "
                           f"use {arg}=[{names!r}]")
    return list(names)


def _concat_feature(frames, name, kind):
    cols = []
    ref = None
    for t, f in frames:
        if name not in f:
            raise DGLError(f"expected {kind} feature {name!r} in every {kind} type, but {t!r} lacks it "
                           f"(it has {sorted(f)})")
        col = f[name]
        if ref is None:
            ref = (t, tuple(col.shape[1:]), col.dtype)
        elif (tuple(col.shape[1:]), col.dtype) != ref[1:]:
            raise DGLError(f"expected {kind} feature {name!r} of one shape and dtype in every type, got "
                           f"{ref[1]} {ref[2]} for {ref[0]!r} and {tuple(col.shape[1:])} {col.dtype} for {t!r}")
        cols.append(col)
    return torch.cat(cols)


def to_heterogeneous(G, ntypes, etypes, ntype_field=NTYPE, etype_field=ETYPE, metagraph=None):
    """A typed graph from a homogeneous one whose nodes and edges store their type IDs.

    Node ``i`` has type ``ntypes[G.ndata[ntype_field][i]]`` and edge ``k`` the
    name ``etypes[G.edata[etype_field][k]]``; each relation is
    ``(type of source, name, type of destination)``, so one name may give
    several relations. Nodes keep their relative order within a type, edges
    within a relation. Other features are split by type; ``ndata[NID]`` and
    ``edata[EID]`` hold the IDs in ``G``.

    Parameters
    ----------
    G : Graph
        Homogeneous graph with ``ndata[ntype_field]`` and ``edata[etype_field]``.
    ntypes : list of str
        Node type names, indexed by type ID.
    etypes : list of str
        Edge type names, indexed by type ID (canonical tuples are read by their name).
    ntype_field, etype_field : str
        Where the type IDs are stored. Default :data:`~mpgraph.base.NTYPE`, :data:`~mpgraph.base.ETYPE`.
    metagraph : networkx.MultiDiGraph, optional
        The relations to create, as ``(srctype, dsttype, key=etype)`` edges; inferred by default.

    Returns
    -------
    HeteroGraph, or Graph when the result has one relation over all its node types.

    Raises
    ------
    DGLError
        ``G`` not homogeneous; missing type fields; type IDs outside ``ntypes``/``etypes``;
        an edge whose relation is not in ``metagraph``.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> hg = dgl.heterograph({('user', 'develops', 'activity'): ([0, 1], [1, 2]),
    ...                       ('developer', 'develops', 'game'): ([0, 1], [0, 1])})
    >>> hg2 = to_heterogeneous(to_homogeneous(hg), hg.ntypes, hg.etypes)
    >>> hg2.canonical_etypes == hg.canonical_etypes
    True
    >>> hg2.ndata['_ID']['user']      # activity: 0-2, developer: 3-4, game: 5-6, user: 7-8
    tensor([7, 8])
    """
    if not isinstance(G, Graph) or G._bipartite:
        raise DGLError(f"expected a homogeneous mpgraph Graph, got {type(G).__name__}"
                       + (" with several node sets" if isinstance(G, Graph) else ""))
    ntypes = list(ntypes)
    names = [e[1] if _is_canonical(e) else e for e in etypes]
    device, idtype = G.device, G.idtype
    for field, frame, what in ((ntype_field, G.ndata, "ndata"), (etype_field, G.edata, "edata")):
        if field not in frame:
            raise DGLError(f"expected the type IDs in G.{what}[{field!r}], got only {sorted(frame)}")
    ntid = G.ndata[ntype_field].to(torch.int64)
    etid = G.edata[etype_field].to(torch.int64)
    for t, n, what in ((ntid, len(ntypes), "node"), (etid, len(names), "edge")):
        if t.numel() and (int(t.min()) < 0 or int(t.max()) >= n):
            raise DGLError(f"expected {what} type IDs in [0, {n}) (one per name given), got values in "
                           f"[{int(t.min())}, {int(t.max())}]")
    T = len(ntypes)
    counts = torch.bincount(ntid, minlength=T)
    order = torch.sort(ntid, stable=True).indices                      # node IDs grouped by type
    offsets = torch.cumsum(counts, 0) - counts
    local = torch.empty_like(ntid)
    local[order] = torch.arange(ntid.numel(), device=device) - offsets[ntid[order]]
    src, dst = G.all_edges(form="uv", order="eid")
    src, dst = src.to(torch.int64), dst.to(torch.int64)
    stid, dtid = ntid[src], ntid[dst]
    key = (stid * len(names) + etid) * T + dtid
    if metagraph is None:
        keys = torch.unique(key).tolist()
    else:
        keys = []
        for s, d, e in metagraph.edges(keys=True):
            if s not in ntypes or d not in ntypes or e not in names:
                raise DGLError(f"metagraph relation ({s!r}, {e!r}, {d!r}) uses a type not in ntypes/etypes")
            keys.append((ntypes.index(s) * len(names) + names.index(e)) * T + ntypes.index(d))
        known = torch.tensor(keys, dtype=torch.int64, device=device)
        if key.numel() and not bool(torch.isin(key, known).all()):
            raise DGLError("G has edges whose (source type, edge type, destination type) is not in metagraph")
    num_nodes = {nt: int(c) for nt, c in zip(ntypes, counts.tolist())}
    node_groups = {nt: order[int(offsets[i]):int(offsets[i]) + num_nodes[nt]] for i, nt in enumerate(ntypes)}
    indexes, edge_groups = {}, {}
    for k in keys:
        s_id, rest = divmod(k, len(names) * T)
        e_id, d_id = divmod(rest, T)
        cet = (ntypes[s_id], names[e_id], ntypes[d_id])
        if cet in indexes:
            raise DGLError(f"relation {cet} appears twice (repeated edge type names must join different node types)")
        eids = (key == k).nonzero().squeeze(1)
        edge_groups[cet] = eids
        indexes[cet] = Index.from_coo(local[src[eids]].to(idtype), local[dst[eids]].to(idtype),
                                      num_nodes[cet[0]], num_nodes[cet[2]])
    node_frames = {}
    for nt in ntypes:
        rows = node_groups[nt]
        cols = {k: v[rows] for k, v in G.ndata.items() if k not in (ntype_field, NID)}
        cols[NID] = rows.to(idtype)
        node_frames[nt] = Frame(rows.numel(), device, _node_kind(nt), cols)
    edge_frames = {}
    for cet, rows in edge_groups.items():
        cols = {k: v[rows] for k, v in G.edata.items() if k not in (etype_field, EID)}
        cols[EID] = rows.to(idtype)
        edge_frames[cet] = Frame(rows.numel(), device, _edge_kind(cet), cols)
    return _assemble(num_nodes, indexes, node_frames, edge_frames, idtype, device)


def node_type_subgraph(graph, ntypes, output_device=None):
    """The graph of node types ``ntypes`` and the relations among them; features are shared.

    Returns a :class:`Graph` when one relation covers exactly the chosen types,
    else a :class:`HeteroGraph`.

    Raises
    ------
    DGLError
        An unknown node type (the message lists the graph's types).

    Examples
    --------
    >>> import mpgraph as dgl
    >>> g = dgl.heterograph({('user', 'follows', 'user'): ([0, 1], [1, 2]),
    ...                      ('user', 'plays', 'game'): ([0, 1], [0, 1])})
    >>> sub = node_type_subgraph(g, ['user'])
    >>> sub.canonical_etypes, sub.num_edges()
    ([('user', 'follows', 'user')], 2)
    """
    G = _typed_view(graph)
    if isinstance(ntypes, str):
        ntypes = [ntypes]
    chosen = []
    for nt in ntypes:
        if nt not in G.ntypes:
            raise DGLError(f"node type {nt!r} does not exist; the node types are {G.ntypes}")
        chosen.append(nt)
    keep = [cet for cet in G.canonical_etypes if cet[0] in chosen and cet[2] in chosen]
    return _subgraph(G, set(chosen), keep, output_device)


def edge_type_subgraph(graph, etypes, output_device=None):
    """The graph of relations ``etypes`` and their end node types; features are shared.

    Raises
    ------
    DGLError
        An unknown or ambiguous edge type.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> g = dgl.heterograph({('user', 'follows', 'user'): ([0, 1], [1, 2]),
    ...                      ('user', 'plays', 'game'): ([0, 1], [0, 1])})
    >>> edge_type_subgraph(g, ['plays']).ntypes
    ['game', 'user']
    """
    G = _typed_view(graph)
    if isinstance(etypes, str) or _is_canonical(etypes):
        etypes = [etypes]
    keep = [G.to_canonical_etype(e) for e in etypes]
    ntypes = {t for cet in keep for t in (cet[0], cet[2])}
    return _subgraph(G, ntypes, sorted(set(keep)), output_device)


def _subgraph(G, ntypes, cetypes, output_device):
    indexes = {}
    for cet in cetypes:
        ix = G._indexes[cet] if isinstance(G, HeteroGraph) else G._index
        indexes[cet] = ix
    node_frames = {nt: _node_frame(G, nt).clone() for nt in ntypes}
    edge_frames = {cet: _edge_frame(G, cet).clone() for cet in cetypes}
    counts = {nt: G.num_nodes(nt) for nt in ntypes}
    out = _assemble(counts, indexes, node_frames, edge_frames, G.idtype, G.device)
    return out if output_device is None else out.to(output_device)


# ----------------------------------------------------------------------------- batching

def batch_hetero(graphs, ndata=ALL, edata=ALL):
    """Batch typed graphs with the same node types and relations into one :class:`HeteroGraph`.

    Per node type, graph ``i``'s nodes follow those of the graphs before it;
    per relation likewise for edges, whose endpoints are shifted by the node
    offsets of their source and destination types. Features are concatenated
    per type; the per-graph counts are kept (``batch_num_nodes(ntype)``,
    ``batch_num_edges(etype)``) for :func:`unbatch_hetero`. This is the typed
    branch for :func:`mpgraph.batch`.

    Parameters
    ----------
    graphs : list of HeteroGraph
        Same node types, relations, idtype and device (batched graphs allowed).
    ndata, edata : list of str, ALL or None, optional
        Features to batch (see :func:`mpgraph.batch.batch`). Default: ALL.

    Returns
    -------
    HeteroGraph

    Raises
    ------
    DGLError
        An empty list; graphs of different types, idtypes or devices; different feature schemes.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> g1 = dgl.heterograph({('u', 'r', 'v'): ([0], [1]), ('v', 's', 'u'): ([1], [0])})
    >>> g2 = dgl.heterograph({('u', 'r', 'v'): ([1, 0], [0, 0]), ('v', 's', 'u'): ([0], [1])})
    >>> bg = batch_hetero([g1, g2])
    >>> bg.batch_size, bg.batch_num_nodes('u').tolist(), bg.batch_num_edges('r').tolist()
    (2, [1, 2], [1, 2])
    >>> [t.tolist() for t in bg.edges(etype='r')]
    [[0, 2, 1], [1, 2, 2]]
    >>> [g.num_edges('r') for g in unbatch_hetero(bg)]
    [1, 2]
    """
    from .batch import _batch_frames, _feature_names
    ndata = _feature_names(ndata, "ndata")
    edata = _feature_names(edata, "edata")
    if isinstance(graphs, GraphLike):
        raise DGLTypeError("expected a list of graphs, got a single graph; wrap it in a list")
    graphs = list(graphs)
    if not graphs:
        raise DGLError("expected a non-empty list of graphs, got an empty list")
    g0 = graphs[0]
    for i, g in enumerate(graphs):
        if not isinstance(g, HeteroGraph):
            raise DGLTypeError(f"expected HeteroGraphs, got {type(g).__name__} at graphs[{i}]")
        if g.is_block:
            raise DGLError(f"expected graphs, got a typed block at graphs[{i}]; (un)batching blocks is not "
                           "supported: batch the graphs before sampling blocks from them")
        if g.ntypes != g0.ntypes or g.canonical_etypes != g0.canonical_etypes:
            raise DGLError(f"expected every graph to have the node types {g0.ntypes} and relations "
                           f"{g0.canonical_etypes} (those of graphs[0]), got {g.ntypes} and {g.canonical_etypes} at "
                           f"graphs[{i}]")
        if g.idtype != g0.idtype or g.device != g0.device:
            raise DGLError(f"expected every graph with idtype {g0.idtype} on {g0.device} (as graphs[0]), got "
                           f"{g.idtype} on {g.device} at graphs[{i}]")
    device, idtype = g0.device, g0.idtype
    node_counts = {nt: torch.cat([g.batch_num_nodes(nt) for g in graphs]) for nt in g0.ntypes}
    edge_counts = {cet: torch.cat([g.batch_num_edges(cet) for g in graphs]) for cet in g0.canonical_etypes}
    rows = {nt: torch.tensor([g.num_nodes(nt) for g in graphs], dtype=torch.int64, device=device)
            for nt in g0.ntypes}
    offsets = {nt: torch.cumsum(r, 0) - r for nt, r in rows.items()}
    indexes = {}
    for cet in g0.canonical_etypes:
        s, _, d = cet
        E_per = torch.tensor([g.num_edges(cet) for g in graphs], dtype=torch.int64, device=device)
        E = int(E_per.sum())
        src = torch.cat([g._indexes[cet].src64 for g in graphs])
        dst = torch.cat([g._indexes[cet].dst64 for g in graphs])
        src = src + torch.repeat_interleave(offsets[s], E_per, output_size=E)
        dst = dst + torch.repeat_interleave(offsets[d], E_per, output_size=E)
        indexes[cet] = Index.from_coo(src.to(idtype), dst.to(idtype), int(rows[s].sum()), int(rows[d].sum()))
    node_frames = {nt: _batch_frames([g._node_frames[nt] for g in graphs], ndata, "node", "ndata", device)
                   for nt in g0.ntypes}
    edge_frames = {cet: _batch_frames([g._edge_frames[cet] for g in graphs], edata, "edge", "edata", device)
                   for cet in g0.canonical_etypes}
    out = HeteroGraph(indexes, {nt: int(r.sum()) for nt, r in rows.items()}, node_frames, edge_frames, idtype,
                      device)
    out._batch_num_nodes, out._batch_num_edges = node_counts, edge_counts
    return out


def unbatch_hetero(g, node_split=None, edge_split=None):
    """Split a batched :class:`HeteroGraph` into its graphs (the inverse of :func:`batch_hetero`).

    Parameters
    ----------
    g : HeteroGraph
        The batched graph (an unbatched one gives ``[copy of g]``).
    node_split : dict, optional
        ``{ntype: counts}`` for every node type; default: the stored batch counts.
    edge_split : dict, optional
        ``{etype: counts}`` for every relation; default: the stored batch counts.

    Returns
    -------
    list of HeteroGraph
        Features are row slices (views) of the batched ones.

    Raises
    ------
    DGLError
        Counts that do not add up, or an edge joining nodes of different graphs.
    """
    if not isinstance(g, HeteroGraph):
        raise DGLTypeError(f"expected a HeteroGraph, got {type(g).__name__}")
    if g.is_block:
        raise DGLError("expected a batched graph, got a typed block; blocks carry no batch information")
    if (node_split is None) != (edge_split is None):
        raise DGLError("expected both node_split and edge_split, or neither")
    if node_split is not None:
        g = g._shallow()
        g.set_batch_num_nodes(node_split)
        g.set_batch_num_edges(edge_split)
    nc = {nt: g.batch_num_nodes(nt) for nt in g.ntypes}
    ec = {cet: g.batch_num_edges(cet) for cet in g.canonical_etypes}
    B = g.batch_size
    noff = {nt: (torch.cumsum(c, 0) - c).tolist() for nt, c in nc.items()}
    eoff = {cet: (torch.cumsum(c, 0) - c).tolist() for cet, c in ec.items()}
    out = []
    for i in range(B):
        counts = {nt: int(nc[nt][i]) for nt in g.ntypes}
        indexes, node_frames, edge_frames = {}, {}, {}
        for nt in g.ntypes:
            lo = noff[nt][i]
            node_frames[nt] = Frame(counts[nt], g.device, "node", {k: v[lo:lo + counts[nt]]
                                                                   for k, v in g._node_frames[nt].items()})
        for cet in g.canonical_etypes:
            s, _, d = cet
            ix = g._indexes[cet]
            lo, n = eoff[cet][i], int(ec[cet][i])
            src = ix.src64[lo:lo + n] - noff[s][i]
            dst = ix.dst64[lo:lo + n] - noff[d][i]
            if n and (int(src.min()) < 0 or int(src.max()) >= counts[s] or int(dst.min()) < 0
                      or int(dst.max()) >= counts[d]):
                raise DGLError(f"expected every edge of relation {cet} to join nodes of its own graph; graph {i}'s "
                               "edges reach outside its nodes (the node and edge counts do not describe one batch)")
            indexes[cet] = Index.from_coo(src.to(ix.idtype), dst.to(ix.idtype), counts[s], counts[d])
            edge_frames[cet] = Frame(n, g.device, "edge", {k: v[lo:lo + n] for k, v in g._edge_frames[cet].items()})
        out.append(HeteroGraph(indexes, counts, node_frames, edge_frames, g.idtype, g.device))
    return out
