r"""Partition a graph for distributed training: :func:`partition_graph`, :func:`load_partition`.

A partitioned graph is a directory ``out_path`` holding::

    <graph_name>.json          the manifest (below)
    node_map.mpg               (N,) int32: the part that owns each node (graph_io file, label "node_map")
    edge_map.mpg               (E,) int32: the part that owns each edge (label "edge_map")
    part<i>/graph.mpg          part i's local graph: owned ("inner") nodes first, then halo nodes
    part<i>/node_feat.mpg      the owned nodes' features (labels named as the features)
    part<i>/edge_feat.mpg      the owned edges' features

Every ``.mpg`` file is written by :func:`mpgraph.save_graphs` (checksummed,
versioned, atomic). Node and edge IDs are the input graph's: there is no
reshuffling, so masks, labels and any per-node data of the original graph
keep their meaning. Each node is owned by exactly one part (its METIS or
random assignment); each edge is owned by the part that owns its destination.

Part ``i``'s local graph holds its owned nodes (ascending global ID, local IDs
``0 .. n_i - 1``), every in-edge of them, and ``num_hops`` rings of halo
nodes: each hop adds the in-edges of the nodes reached so far and their
sources. Its ``ndata``: ``dgl.NID`` (global ID), ``'inner_node'`` (owned),
``'halo_hop'`` (0 for owned nodes, ``k`` for a node first reached at hop
``k``: its in-edges are all present when ``k < num_hops``); its ``edata``:
``dgl.EID`` (global ID), ``'inner_edge'`` (owned: the destination is owned).
Owned features are stored in ascending global ID order, so row ``j`` of
``node_feat.mpg`` belongs to local node ``j``.

Manifest (JSON, format version 1)::

    {
      "format": "mpgraph.partition", "version": 1,
      "graph_name": str, "num_parts": k, "num_nodes": N, "num_edges": E,
      "part_method": "metis" | "random", "num_hops": h, "balance_edges": bool,
      "idtype": "int32" | "int64",
      "ntypes": ["_N"], "canonical_etypes": [["_N", "_E", "_N"]],
      "node_map": file, "edge_map": file,
      "node_feats": {name: {"dtype": str, "shape": [row dims]}}, "edge_feats": {...},
      "parts": [{"part_id": i, "num_nodes": owned, "num_edges": owned,
                 "num_local_nodes": int, "num_local_edges": int,
                 "graph": file, "node_feats": file, "edge_feats": file}, ...],
      "metadata": {...}                      # free JSON given to partition_graph
    }
    file = {"path": relative path, "bytes": int, "sha256": hex str}

:func:`load_partition` checks the manifest's format and version and the
SHA-256 of every file it reads (and :func:`mpgraph.load_graphs` the checksums
inside them); a mismatch raises :class:`~mpgraph.DGLError`.
"""

import hashlib
import json
import os
import re

import torch

from .._index import as_index
from ..base import EID, NID, DGLError, DGLTypeError
from ..graph import Graph
from ..graph_io import _atomic_write, load_graphs, save_graphs
from ..partition import metis_partition_assignment, partition_graph_with_halo

__all__ = ["partition_graph", "load_partition", "load_partition_book", "load_manifest", "GraphPartitionBook",
           "PARTITION_FORMAT_VERSION"]

#: Version of the manifest format :func:`partition_graph` writes (and the newest :func:`load_partition` reads).
PARTITION_FORMAT_VERSION = 1
_FORMAT = "mpgraph.partition"
_I64 = torch.int64
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_METHODS = ("metis", "random")


# ---------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------
def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _write(out_path, rel, graphs, labels):
    """Write one graph_io file; return its manifest record."""
    path = os.path.join(out_path, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    save_graphs(path, graphs, labels)
    return {"path": rel, "bytes": os.path.getsize(path), "sha256": _sha256(path)}


def _resolve(base, record, what, config):
    """Absolute path of a manifest file record, after checking its size and SHA-256."""
    if not isinstance(record, dict) or not isinstance(record.get("path"), str) \
            or not isinstance(record.get("sha256"), str):
        raise DGLError(f"{config!r} is not a valid partition manifest: expected a file record for {what}, got "
                       f"{record!r}")
    rel = record["path"]
    if os.path.isabs(rel) or ".." in rel.replace("\\", "/").split("/"):
        raise DGLError(f"{config!r} is not a valid partition manifest: expected a path inside the partition "
                       f"directory for {what}, got {rel!r}")
    path = os.path.join(base, rel)
    if not os.path.isfile(path):
        raise DGLError(f"expected the partition file {path!r} ({what}) listed in {config!r}, got no such file; "
                       "copy the whole partition directory or re-run partition_graph")
    size = os.path.getsize(path)
    if record.get("bytes") is not None and size != record["bytes"]:
        raise DGLError(f"partition file {path!r} ({what}) has {size} bytes, expected {record['bytes']} from "
                       f"{config!r}: the file is truncated or was replaced; re-run partition_graph")
    digest = _sha256(path)
    if digest != record["sha256"]:
        raise DGLError(f"checksum mismatch for partition file {path!r} ({what}): SHA-256 {digest}, expected "
                       f"{record['sha256']} from {config!r}; the file is corrupted or belongs to another "
                       "partitioning: re-run partition_graph")
    return path


def _load_labels(base, record, what, config):
    _, labels = load_graphs(_resolve(base, record, what, config))
    return labels


def load_manifest(part_config):
    """Read and check a partition manifest; returns ``(manifest dict, directory)``.

    Parameters
    ----------
    part_config : str or os.PathLike
        Path of ``<out_path>/<graph_name>.json``.

    Returns
    -------
    manifest : dict
        The parsed JSON (see the module docstring).
    base : str
        The directory the manifest's file paths are relative to.

    Raises
    ------
    DGLError
        A missing or unreadable file, not a partition manifest, a newer format
        version, missing fields.
    """
    config = os.fspath(part_config)
    if not os.path.isfile(config):
        raise DGLError(f"expected a partition manifest (<out_path>/<graph_name>.json written by partition_graph) "
                       f"at {config!r}, got no such file")
    try:
        with open(config, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise DGLError(f"{config!r} is not a valid partition manifest: expected JSON, got {err}") from err
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT:
        raise DGLError(f"{config!r} is not a valid partition manifest: expected format {_FORMAT!r}, got "
                       f"{manifest.get('format') if isinstance(manifest, dict) else type(manifest).__name__!r}")
    version = manifest.get("version")
    if not isinstance(version, int) or version < 1:
        raise DGLError(f"{config!r} is not a valid partition manifest: expected a positive int version, got "
                       f"{version!r}")
    if version > PARTITION_FORMAT_VERSION:
        raise DGLError(f"{config!r} uses partition format version {version}, expected at most "
                       f"{PARTITION_FORMAT_VERSION}; it was written by a newer mpgraph: upgrade mpgraph to read it")
    need = ("graph_name", "num_parts", "num_nodes", "num_edges", "num_hops", "node_map", "edge_map", "parts",
            "node_feats", "edge_feats", "ntypes", "canonical_etypes", "idtype")
    missing = [k for k in need if k not in manifest]
    if missing:
        raise DGLError(f"{config!r} is not a valid partition manifest: missing fields {missing}")
    parts = manifest["parts"]
    if not isinstance(parts, list) or len(parts) != manifest["num_parts"]:
        raise DGLError(f"{config!r} is not a valid partition manifest: expected {manifest['num_parts']} part "
                       f"records, got {len(parts) if isinstance(parts, list) else parts!r}")
    return manifest, os.path.dirname(os.path.abspath(config))


# ---------------------------------------------------------------------------
# partition book
# ---------------------------------------------------------------------------
class GraphPartitionBook:
    """Which part owns each node and edge, and where its row lives (DGL's ``GraphPartitionBook``).

    Node and edge IDs are global (the partitioned graph's). Local IDs of a
    part's owned nodes (edges) are their ranks in ascending global ID order
    among the nodes (edges) it owns: row ``j`` of the part's feature files.

    Parameters
    ----------
    part_id : int
        The part this process loaded.
    node_map : Tensor
        ``(N,)`` integer owner part of every node.
    num_parts : int
        Number of parts.
    edge_map : Tensor or callable, optional
        ``(E,)`` owner part of every edge, or a function returning it (the
        edge map is then read on first use). Default: none (edge lookups raise).
    num_edges : int, optional
        ``E`` (needed when ``edge_map`` is not given as a tensor).

    Examples
    --------
    >>> import torch
    >>> from mpgraph.distributed import GraphPartitionBook
    >>> gpb = GraphPartitionBook(0, torch.tensor([1, 0, 0, 1, 1]), 2)
    >>> gpb.nid2partid(torch.tensor([0, 2, 4])), gpb.partid2nids(1), gpb.nid2localnid(torch.tensor([3, 0]), 1)
    (tensor([1, 0, 1]), tensor([0, 3, 4]), tensor([1, 0]))
    """

    def __init__(self, part_id, node_map, num_parts, edge_map=None, num_edges=None):
        self._part_id = int(part_id)
        self._num_parts = int(num_parts)
        self._node_map = torch.as_tensor(node_map).reshape(-1)
        self._edge_map_src = edge_map
        self._edge_map = edge_map if isinstance(edge_map, torch.Tensor) else None
        if self._edge_map is not None:
            num_edges = self._edge_map.numel()
        self._num_edges = num_edges
        self._owned_nodes = {}
        self._owned_edges = {}

    # ----- sizes ----------------------------------------------------------
    @property
    def partid(self):
        """The part this process loaded."""
        return self._part_id

    def num_partitions(self):
        """Number of parts."""
        return self._num_parts

    @property
    def num_nodes(self):
        """``N``, nodes of the whole graph."""
        return self._node_map.numel()

    @property
    def num_edges(self):
        """``E``, edges of the whole graph (None when unknown)."""
        return self._num_edges

    def metadata(self):
        """One dict per part: ``machine_id`` (the part ID), ``num_nodes`` and ``num_edges`` it owns."""
        nodes = torch.bincount(self._node_map.to(_I64), minlength=self._num_parts)
        edges = torch.bincount(self.edge_map.to(_I64), minlength=self._num_parts) if self._has_edges() else None
        return [{"machine_id": p, "num_nodes": int(nodes[p]),
                 "num_edges": int(edges[p]) if edges is not None else None} for p in range(self._num_parts)]

    # ----- maps -----------------------------------------------------------
    @property
    def node_map(self):
        """``(N,)`` owner part of every node (int32)."""
        return self._node_map

    def _has_edges(self):
        return self._edge_map is not None or self._edge_map_src is not None

    @property
    def edge_map(self):
        """``(E,)`` owner part of every edge (int32); read on first use."""
        if self._edge_map is None:
            if self._edge_map_src is None:
                raise DGLError("expected a partition book with an edge map, got one without; load it with "
                               "load_partition_book(part_config, part_id)")
            self._edge_map = torch.as_tensor(self._edge_map_src()).reshape(-1)
            self._num_edges = self._edge_map.numel()
        return self._edge_map

    @staticmethod
    def _ids(ids, n, what):
        if isinstance(ids, torch.Tensor):
            if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
                raise DGLTypeError(f"{what} expected integer IDs, got dtype {ids.dtype}")
            t = ids.reshape(-1).to(_I64)
        else:
            try:
                t = torch.as_tensor(ids, dtype=_I64).reshape(-1)
            except (TypeError, ValueError, RuntimeError) as err:
                raise DGLTypeError(f"{what} expected integer IDs, got {type(ids).__name__}") from err
        return t.cpu()

    @staticmethod
    def _lookup(table, t, n, what):
        try:
            return table[t].to(_I64)
        except IndexError:
            bad = t[(t < 0) | (t >= n)]
            raise DGLError(f"{what} expected IDs in [0, {n}), got {int(bad[0])}") from None

    def nid2partid(self, nids):
        """Owner part of each node ID; ``(n,)`` int64."""
        t = self._ids(nids, self.num_nodes, "nid2partid")
        if t.numel() and (int(t.min()) < 0):
            raise DGLError(f"nid2partid expected IDs in [0, {self.num_nodes}), got {int(t.min())}")
        return self._lookup(self._node_map, t, self.num_nodes, "nid2partid")

    def eid2partid(self, eids):
        """Owner part of each edge ID; ``(n,)`` int64."""
        emap = self.edge_map
        t = self._ids(eids, emap.numel(), "eid2partid")
        if t.numel() and (int(t.min()) < 0):
            raise DGLError(f"eid2partid expected IDs in [0, {emap.numel()}), got {int(t.min())}")
        return self._lookup(emap, t, emap.numel(), "eid2partid")

    def _check_part(self, partid, what):
        if isinstance(partid, bool) or not isinstance(partid, int) or not 0 <= partid < self._num_parts:
            raise DGLError(f"{what} expected a part ID in [0, {self._num_parts}), got {partid!r}")

    def partid2nids(self, partid):
        """Global IDs of the nodes ``partid`` owns, ascending; ``(n,)`` int64."""
        self._check_part(partid, "partid2nids")
        if partid not in self._owned_nodes:
            self._owned_nodes[partid] = (self._node_map == partid).nonzero().squeeze(1)
        return self._owned_nodes[partid]

    def partid2eids(self, partid):
        """Global IDs of the edges ``partid`` owns, ascending; ``(n,)`` int64."""
        self._check_part(partid, "partid2eids")
        if partid not in self._owned_edges:
            self._owned_edges[partid] = (self.edge_map == partid).nonzero().squeeze(1)
        return self._owned_edges[partid]

    @staticmethod
    def _local(owned, t, partid, what, kind):
        if owned.numel() == 0:
            if t.numel():
                raise DGLError(f"{what} expected {kind} IDs owned by part {partid}, got {int(t[0])} (the part owns "
                               "none)")
            return t
        pos = torch.searchsorted(owned, t).clamp(max=owned.numel() - 1)
        if t.numel() and not bool((owned[pos] == t).all()):
            bad = t[owned[pos] != t]
            raise DGLError(f"{what} expected {kind} IDs owned by part {partid}, got {int(bad[0])}; find the owner "
                           f"with {'nid2partid' if kind == 'node' else 'eid2partid'}")
        return pos

    def nid2localnid(self, nids, partid):
        """Local IDs (rows of part ``partid``'s node features) of nodes that ``partid`` owns."""
        t = self._ids(nids, self.num_nodes, "nid2localnid")
        return self._local(self.partid2nids(partid), t, partid, "nid2localnid", "node")

    def eid2localeid(self, eids, partid):
        """Local IDs (rows of part ``partid``'s edge features) of edges that ``partid`` owns."""
        t = self._ids(eids, self._num_edges or 0, "eid2localeid")
        return self._local(self.partid2eids(partid), t, partid, "eid2localeid", "edge")


# ---------------------------------------------------------------------------
# partition_graph
# ---------------------------------------------------------------------------
def _assignment(g, num_parts, part_method, balance_ntypes, balance_edges, objtype, seed):
    N = g.num_nodes()
    if part_method == "metis":
        return metis_partition_assignment(g, num_parts, balance_ntypes=balance_ntypes, balance_edges=balance_edges,
                                          objtype=objtype).cpu()
    gen = torch.Generator().manual_seed(seed)
    part = torch.empty(N, dtype=_I64)
    part[torch.randperm(N, generator=gen)] = torch.arange(N) % num_parts       # balanced: sizes differ by <= 1
    return part


def _halo_hops(sub, num_inner, num_hops):
    """``(n,)`` hop at which each local node was reached (0: owned), by BFS along in-edges inside ``sub``."""
    n = sub.num_nodes()
    hop = torch.full((n,), -1, dtype=_I64)
    hop[:num_inner] = 0
    index = as_index(sub)
    src, dst = index.src64.cpu(), index.dst64.cpu()
    for k in range(1, num_hops + 1):
        frontier = hop == k - 1
        reached = src[frontier[dst] & (hop[src] < 0)]
        hop[reached] = k
    return hop


def partition_graph(g, graph_name, num_parts, out_path, num_hops=1, part_method="metis", balance_ntypes=None,
                    balance_edges=False, return_mapping=False, objtype="cut", seed=0, metadata=None):
    r"""Partition ``g`` into ``num_parts`` parts with halo nodes and write them to ``out_path``.

    Nodes are assigned to parts by METIS (through pymetis; deterministic) or
    at random (balanced); every node is owned by exactly one part and every
    edge by the part owning its destination. Each part's local graph holds
    its owned nodes, all their in-edges and ``num_hops`` rings of halo nodes
    (see the module docstring for the files and the manifest). Node and edge
    features of ``g`` are split by owner and stored in their dtype (a
    bfloat16 feature is stored, and later moved, in half the bytes of a
    float32 one). Global IDs are ``g``'s IDs: nothing is renumbered.

    Parameters
    ----------
    g : Graph
        A graph with one node type (on any device; written from the CPU).
    graph_name : str
        Name of the graph: the manifest is ``<out_path>/<graph_name>.json``.
        Letters, digits, ``_``, ``.`` and ``-`` only.
    num_parts : int
        Number of parts, ``>= 1``; training runs one process per part.
    out_path : str or os.PathLike
        Output directory (created if missing). One partitioned graph per
        directory: an existing partitioning there is overwritten.
    num_hops : int, optional
        Rings of halo nodes, ``>= 1`` (default 1). Sampling ``L`` layers
        touches only local structure when ``num_hops >= L``; other seeds are
        sampled by their owners (see :mod:`mpgraph.distributed.sampling`).
    part_method : str, optional
        ``'metis'`` (default; minimises the edge cut) or ``'random'``.
    balance_ntypes : Tensor, optional
        ``(N,)`` categories METIS balances across parts (e.g. the training
        mask), as in :func:`mpgraph.partition.metis_partition_assignment`.
    balance_edges : bool, optional
        METIS balances in-edges instead of nodes (default False).
    return_mapping : bool, optional
        Also return ``(orig_nids, orig_eids)``, DGL's mapping from the
        partitioned IDs to ``g``'s IDs: here the identity (IDs are kept).
    objtype : str, optional
        METIS objective, ``'cut'`` (default) or ``'vol'``.
    seed : int, optional
        Seed of the random assignment (default 0).
    metadata : dict, optional
        JSON-serialisable data stored as the manifest's ``"metadata"``
        (e.g. how the graph was made).

    Returns
    -------
    None or tuple of Tensor
        With ``return_mapping``: ``(orig_nids, orig_eids)``, ``(N,)`` and
        ``(E,)`` int64.

    Raises
    ------
    DGLError
        Not a graph with one node type; a bad ``graph_name``,
        ``num_parts``, ``num_hops`` or ``part_method``; more parts than
        nodes; a feature of a dtype the graph file format lacks;
        ``metadata`` not JSON-serialisable.

    Examples
    --------
    >>> import os, tempfile, torch, mpgraph as dgl
    >>> from mpgraph.distributed import partition_graph, load_partition
    >>> g = dgl.graph(([0, 1, 2, 3, 4, 5, 2], [1, 2, 0, 4, 5, 3, 3]))   # two triangles joined by 2->3
    >>> g.ndata['feat'] = torch.arange(6.0).unsqueeze(1)
    >>> out = tempfile.mkdtemp()
    >>> partition_graph(g, 'tri', 2, out)
    >>> local_g, node_feats, edge_feats, gpb, name, ntypes, etypes = load_partition(
    ...     os.path.join(out, 'tri.json'), 0)
    >>> owner = gpb.nid2partid(torch.arange(6)).tolist()
    >>> len(set(owner[:3])), len(set(owner[3:])), owner[0] != owner[3]
    (1, 1, True)
    >>> node_feats['_N/feat'].squeeze(1).tolist() == [float(i) for i in range(6) if owner[i] == 0]
    True
    """
    what = "partition_graph"
    if not isinstance(g, Graph):
        raise DGLTypeError(f"{what} expected an mpgraph graph, got {type(g).__name__}")
    if g.is_block or g._bipartite:
        raise DGLError(f"{what} expected a graph with one node type, got node types {g.ntypes}")
    if not isinstance(graph_name, str) or not _NAME.match(graph_name):
        raise DGLError(f"{what} expected graph_name of letters, digits, '_', '.', '-', got {graph_name!r}")
    N, E = g.num_nodes(), g.num_edges()
    if isinstance(num_parts, bool) or not isinstance(num_parts, int) or num_parts < 1:
        raise DGLError(f"{what} expected num_parts to be an int >= 1, got {num_parts!r}")
    if num_parts > max(N, 1):
        raise DGLError(f"{what} expected at most one part per node ({N} nodes), got num_parts={num_parts}")
    if isinstance(num_hops, bool) or not isinstance(num_hops, int) or num_hops < 1:
        raise DGLError(f"{what} expected num_hops to be an int >= 1 (every owned node keeps its in-edges), got "
                       f"{num_hops!r}")
    if part_method not in _METHODS:
        raise DGLError(f"{what} expected part_method 'metis' or 'random', got {part_method!r}")
    if metadata is not None:
        try:
            json.dumps(metadata)
        except (TypeError, ValueError) as err:
            raise DGLError(f"{what} expected JSON-serialisable metadata, got {err}") from err
    out_path = os.fspath(out_path)
    os.makedirs(out_path, exist_ok=True)
    g = g.to("cpu")
    node_part = _assignment(g, num_parts, part_method, balance_ntypes, balance_edges, objtype, seed)
    subs, _, _ = partition_graph_with_halo(g, node_part, num_hops)
    index = as_index(g)
    edge_part = node_part[index.dst64.cpu()]
    map_dtype = torch.int32
    node_feats = {k: v for k, v in g.ndata.items() if k != NID}
    edge_feats = {k: v for k, v in g.edata.items() if k != EID}
    manifest = {
        "format": _FORMAT, "version": PARTITION_FORMAT_VERSION, "graph_name": graph_name,
        "num_parts": num_parts, "num_nodes": N, "num_edges": E, "part_method": part_method, "num_hops": num_hops,
        "balance_edges": bool(balance_edges), "idtype": "int32" if g.idtype == torch.int32 else "int64",
        "ntypes": list(g.ntypes), "canonical_etypes": [list(c) for c in g.canonical_etypes],
        "node_map": _write(out_path, "node_map.mpg", [], {"node_map": node_part.to(map_dtype)}),
        "edge_map": _write(out_path, "edge_map.mpg", [], {"edge_map": edge_part.to(map_dtype)}),
        "node_feats": {k: {"dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape[1:])}
                       for k, v in node_feats.items()},
        "edge_feats": {k: {"dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape[1:])}
                       for k, v in edge_feats.items()},
        "parts": [], "metadata": metadata if metadata is not None else {},
    }
    for p in range(num_parts):
        sub = subs.get(p)
        if sub is None:            # a part METIS left empty
            sub = Graph(_empty_index(g))
            sub.ndata[NID] = torch.zeros(0, dtype=g.idtype)
            sub.ndata["inner_node"] = torch.zeros(0, dtype=torch.bool)
            sub.edata[EID] = torch.zeros(0, dtype=g.idtype)
            sub.edata["inner_edge"] = torch.zeros(0, dtype=torch.bool)
        inner = sub.ndata["inner_node"]
        num_inner = int(inner.sum())
        sub.ndata["halo_hop"] = _halo_hops(sub, num_inner, num_hops).to(torch.int32)
        local_dst = as_index(sub).dst64.cpu()
        owned_edge = inner[local_dst]
        sub.edata["inner_edge"] = owned_edge
        gnid = sub.ndata[NID][:num_inner].to(_I64)
        geid = sub.edata[EID][owned_edge].to(_I64)
        rel = f"part{p}"
        manifest["parts"].append({
            "part_id": p, "num_nodes": num_inner, "num_edges": int(owned_edge.sum()),
            "num_local_nodes": sub.num_nodes(), "num_local_edges": sub.num_edges(),
            "graph": _write(out_path, f"{rel}/graph.mpg", [sub], None),
            "node_feats": _write(out_path, f"{rel}/node_feat.mpg", [],
                                 {k: v.index_select(0, gnid.to(v.device)) for k, v in node_feats.items()}),
            "edge_feats": _write(out_path, f"{rel}/edge_feat.mpg", [],
                                 {k: v.index_select(0, geid.to(v.device)) for k, v in edge_feats.items()}),
        })
    text = json.dumps(manifest, indent=1, sort_keys=False).encode("utf-8")
    _atomic_write(os.path.join(out_path, f"{graph_name}.json"), [text])
    if return_mapping:
        return torch.arange(N, dtype=_I64), torch.arange(E, dtype=_I64)
    return None


def _empty_index(g):
    from .._index import Index
    z = torch.zeros(0, dtype=g.idtype)
    return Index.from_coo(z, z, 0, 0)


# ---------------------------------------------------------------------------
# load
# ---------------------------------------------------------------------------
def _check_part_id(manifest, part_id, config):
    k = manifest["num_parts"]
    if isinstance(part_id, bool) or not isinstance(part_id, int) or not 0 <= part_id < k:
        raise DGLError(f"expected a part ID in [0, {k}) for {config!r} ({k} parts), got {part_id!r}")


def load_partition_book(part_config, part_id):
    """Load the partition book of a partitioned graph (the node map now, the edge map on first use).

    Parameters
    ----------
    part_config : str or os.PathLike
        The manifest ``<out_path>/<graph_name>.json``.
    part_id : int
        The part this process serves.

    Returns
    -------
    gpb : GraphPartitionBook
    graph_name : str
    ntypes : list of str
    canonical_etypes : list of tuple of str

    Raises
    ------
    DGLError
        A bad manifest, a missing or corrupted node map, ``part_id`` out of range.
    """
    config = os.fspath(part_config)
    manifest, base = load_manifest(config)
    _check_part_id(manifest, part_id, config)
    node_map = _load_labels(base, manifest["node_map"], "node map", config)["node_map"]
    if node_map.numel() != manifest["num_nodes"]:
        raise DGLError(f"expected a node map of {manifest['num_nodes']} entries in {config!r}, got "
                       f"{node_map.numel()}")

    def edge_map():
        emap = _load_labels(base, manifest["edge_map"], "edge map", config)["edge_map"]
        if emap.numel() != manifest["num_edges"]:
            raise DGLError(f"expected an edge map of {manifest['num_edges']} entries in {config!r}, got "
                           f"{emap.numel()}")
        return emap

    gpb = GraphPartitionBook(part_id, node_map, manifest["num_parts"], edge_map, manifest["num_edges"])
    return gpb, manifest["graph_name"], list(manifest["ntypes"]), [tuple(c) for c in manifest["canonical_etypes"]]


def load_partition(part_config, part_id, load_feats=True):
    """Load part ``part_id`` of a graph written by :func:`partition_graph`, verifying every checksum.

    Parameters
    ----------
    part_config : str or os.PathLike
        The manifest ``<out_path>/<graph_name>.json``.
    part_id : int
        Which part, in ``[0, num_parts)``.
    load_feats : bool, optional
        Load the part's node and edge features (default True); otherwise
        both are ``{}``.

    Returns
    -------
    local_g : Graph
        The part's local graph: owned nodes first (``ndata['inner_node']``),
        then halo nodes; ``ndata[dgl.NID]``/``edata[dgl.EID]`` the global IDs,
        ``ndata['halo_hop']``, ``edata['inner_edge']`` (owned edges).
    node_feats : dict of str to Tensor
        Owned nodes' features keyed ``'<ntype>/<name>'`` (``'_N/feat'``), in
        local ID order (row ``j`` is local node ``j``).
    edge_feats : dict of str to Tensor
        Owned edges' features keyed ``'<src>:<etype>:<dst>/<name>'``
        (``'_N:_E:_N/feat'``), in ascending global edge ID order.
    gpb : GraphPartitionBook
    graph_name : str
    ntypes : list of str
    canonical_etypes : list of tuple of str

    Raises
    ------
    DGLError
        A missing manifest or part file; a file whose SHA-256 differs from
        the manifest's (corrupted or replaced); a newer format version;
        ``part_id`` out of range; a part inconsistent with the manifest.

    Examples
    --------
    >>> import os, tempfile, torch, mpgraph as dgl
    >>> from mpgraph.distributed import partition_graph, load_partition
    >>> g = dgl.graph(([0, 1, 2], [1, 2, 0]))
    >>> g.ndata['h'] = torch.tensor([[1.], [2.], [3.]], dtype=torch.bfloat16)
    >>> out = tempfile.mkdtemp()
    >>> partition_graph(g, 'ring', 1, out)
    >>> local_g, node_feats, _, gpb, *_ = load_partition(os.path.join(out, 'ring.json'), 0)
    >>> local_g.num_nodes(), node_feats['_N/h'].dtype, gpb.num_partitions()
    (3, torch.bfloat16, 1)
    """
    config = os.fspath(part_config)
    manifest, base = load_manifest(config)
    _check_part_id(manifest, part_id, config)
    gpb, graph_name, ntypes, etypes = load_partition_book(config, part_id)
    record = manifest["parts"][part_id]
    graphs, _ = load_graphs(_resolve(base, record.get("graph"), f"part {part_id} graph", config))
    if len(graphs) != 1:
        raise DGLError(f"expected one graph in part {part_id} of {config!r}, got {len(graphs)}")
    local_g = graphs[0]
    for key in (NID, "inner_node", "halo_hop"):
        if key not in local_g.ndata:
            raise DGLError(f"expected ndata {key!r} in part {part_id} of {config!r}; re-run partition_graph")
    num_inner = int(local_g.ndata["inner_node"].sum())
    if num_inner != record.get("num_nodes") or local_g.num_nodes() != record.get("num_local_nodes"):
        raise DGLError(f"part {part_id} of {config!r} has {num_inner} owned / {local_g.num_nodes()} local nodes, "
                       f"expected {record.get('num_nodes')} / {record.get('num_local_nodes')} from the manifest")
    node_feats, edge_feats = {}, {}
    if load_feats:
        ntype = ntypes[0]
        cet = ":".join(etypes[0])
        nf = _load_labels(base, record.get("node_feats"), f"part {part_id} node features", config)
        ef = _load_labels(base, record.get("edge_feats"), f"part {part_id} edge features", config)
        for k, v in nf.items():
            if v.shape[0] != num_inner:
                raise DGLError(f"expected {num_inner} rows of node feature {k!r} in part {part_id} of {config!r}, "
                               f"got {v.shape[0]}")
            node_feats[f"{ntype}/{k}"] = v
        for k, v in ef.items():
            if v.shape[0] != record.get("num_edges"):
                raise DGLError(f"expected {record.get('num_edges')} rows of edge feature {k!r} in part {part_id} "
                               f"of {config!r}, got {v.shape[0]}")
            edge_feats[f"{cet}/{k}"] = v
    return local_g, node_feats, edge_feats, gpb, graph_name, ntypes, etypes
