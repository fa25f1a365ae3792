r"""Graph files: :func:`save_graphs` and :func:`load_graphs` (DGL's API, mpgraph's own format).

File format, versions 1 and 2
=============================

All integers are little-endian. A file is four parts, back to back::

    offset  size         field
    0       8            magic: the bytes 89 4D 50 47 52 41 50 48  (b"\x89MPGRAPH")
    8       4            format version, uint32 (this module reads 1 and 2; it writes 1
                         unless the file holds a typed graph, which needs 2)
    12      8            header length H in bytes, uint64
    20      32           SHA-256 of the header bytes
    52      H            header: UTF-8 JSON object (below)
    52 + H  P            payload: the raw bytes of every tensor, back to back in the
                         order the header lists them (no padding: every payload byte
                         belongs to exactly one checksummed tensor)

The file is exactly ``52 + H + P`` bytes long, where ``P`` is the header's
``payload_size``. The first byte is not ASCII (so a text transfer is caught) and
the magic is checked before anything else is trusted.

Header (JSON object)::

    {
      "format": "mpgraph.graphs",
      "version": 1 | 2,
      "byteorder": "little",
      "payload_size": P,
      "graphs": [graph, ...],                 # in the order given to save_graphs
      "labels": {name: tensor, ...}           # {} when no labels were saved
    }

    graph = {
      "canonical_etype": [srctype, etype, dsttype],
      "is_block": false,
      "idtype": "int32" | "int64",
      "num_src_nodes": int, "num_dst_nodes": int, "num_edges": int,
      "bipartite": bool,                      # two node sets (srcdata, dstdata)
      "src": tensor, "dst": tensor,           # (E,) COO endpoints in edge-ID order, in idtype
      "node_data": [{name: tensor, ...}, ...],  # one mapping per node set (1, or 2 when bipartite)
      "edge_data": {name: tensor, ...},
      "batch_num_nodes": tensor | null,       # (B,) int64 when the graph is a batch
      "batch_num_edges": tensor | null
    }

    typed graph (version 2; a HeteroGraph or a typed block) = {
      "kind": "hetero",
      "is_block": bool,
      "idtype": "int32" | "int64",
      "node_types": [{                          # sorted by name, as HeteroGraph.ntypes
          "ntype": str,
          "num_nodes": [int] | [num_src, num_dst],     # one node set per type, two in a block
          "node_data": [{name: tensor, ...}, ...],     # one mapping per node set
          "batch_num_nodes": tensor | null             # (B,) int64 when the graph is a batch
      }, ...],
      "relations": [{                           # sorted, as HeteroGraph.canonical_etypes
          "canonical_etype": [srctype, etype, dsttype],
          "num_edges": int,
          "src": tensor, "dst": tensor,          # (E,) COO endpoints in edge-ID order, in idtype
          "edge_data": {name: tensor, ...},
          "batch_num_edges": tensor | null
      }, ...]
    }

    tensor = {
      "dtype": "float64" | "float32" | "float16" | "bfloat16" | "int64" | "int32" | "int16" | "int8"
               | "uint8" | "bool" | "float8_e4m3fn" | "float8_e5m2" | "complex64" | "complex128",
      "shape": [int, ...],
      "offset": int,                          # from the payload start
      "nbytes": int,                          # prod(shape) * itemsize
      "sha256": hex str                       # SHA-256 of the nbytes payload bytes
    }

Tensor bytes are the C-contiguous elements in little-endian order, written as
stored (no conversion): float16/bfloat16/float8 round-trip bit for bit, NaN
payloads and signed zeros included. Feature names and order are kept.

Integrity: the loader checks the magic, the version (a newer file says which
version it is and asks for a newer mpgraph), the file size, the header checksum,
the header's structure, and the checksum of every tensor it reads; any failure
raises :class:`~mpgraph.base.DGLError` naming the file and the problem. No
graph is returned from a file that fails a check.

Writes are atomic: the file is written to a temporary file in the target
directory, flushed and fsynced, then moved over the target with
:func:`os.replace`; on any error the temporary file is removed and an existing
target is left untouched.
"""

import hashlib
import json
import os
import struct
import sys
import tempfile

import torch

from ._index import GraphLike, Index
from .base import DGLError, DGLTypeError
from .frame import Frame
from .graph import Graph
from .heterograph import HeteroBlock, HeteroGraph

__all__ = ["save_graphs", "load_graphs", "MAGIC", "FORMAT_VERSION"]

#: First 8 bytes of every mpgraph graph file.
MAGIC = b"\x89MPGRAPH"
#: Newest version of the format this module reads and writes (2: typed graphs).
FORMAT_VERSION = 2
#: Version needed by files whose graphs all hold one relation (readable by older mpgraph).
_BASE_VERSION = 1
_PREFIX = struct.Struct("<8sIQ32s")   # magic, version, header length, header sha256
_MAX_HEADER = 1 << 31

_DTYPES = {
    "float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8,
    "bool": torch.bool, "complex64": torch.complex64, "complex128": torch.complex128,
    "float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2,
}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}


# ---------------------------------------------------------------------------
# tensors <-> bytes
# ---------------------------------------------------------------------------
def _tensor_bytes(t, what):
    if t.dtype not in _DTYPE_NAMES:
        raise DGLTypeError(f"expected {what} of a storable dtype ({', '.join(_DTYPES)}), got {t.dtype}")
    flat = t.detach().to("cpu").contiguous().reshape(-1)
    raw = flat.view(torch.uint8) if flat.numel() else torch.zeros(0, dtype=torch.uint8)
    if sys.byteorder == "big" and t.element_size() > 1:
        raw = _swap_bytes(raw, t.element_size())
    return raw.numpy().tobytes()


def _swap_bytes(raw, itemsize):
    """Reverse the bytes of each ``itemsize``-byte element of a uint8 tensor."""
    return raw.reshape(-1, itemsize).flip(1).reshape(-1)


def _tensor_from_bytes(data, dtype, shape):
    if not data:
        return torch.zeros(shape, dtype=dtype)
    raw = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    itemsize = torch.empty(0, dtype=dtype).element_size()
    if sys.byteorder == "big" and itemsize > 1:
        raw = _swap_bytes(raw, itemsize).contiguous()
    return raw.view(dtype).reshape(shape)


class _Writer:
    """Collects tensors into the payload and describes them for the header."""

    def __init__(self):
        self.chunks = []
        self.size = 0

    def add(self, t, what):
        if not isinstance(t, torch.Tensor):
            raise DGLTypeError(f"expected {what} to be a torch.Tensor, got {type(t).__name__}")
        data = _tensor_bytes(t, what)
        ref = {"dtype": _DTYPE_NAMES[t.dtype], "shape": list(t.shape), "offset": self.size, "nbytes": len(data),
               "sha256": hashlib.sha256(data).hexdigest()}
        self.chunks.append(data)
        self.size += len(data)
        return ref

    def add_frame(self, frame, what):
        return {k: self.add(v, f"{what} {k!r}") for k, v in frame.items()}


def _describe_typed(g, w, i):
    """Header record of a HeteroGraph or typed block; tensors go to the payload in record order."""
    what = f"graphs[{i}]"
    batched = g._batch_num_nodes is not None
    node_types = []
    for nt in g.ntypes:
        frames = [g.srcnodes[nt].data, g.dstnodes[nt].data] if g.is_block else [g.nodes[nt].data]
        node_types.append({
            "ntype": nt,
            "num_nodes": [f.num_rows for f in frames],
            "node_data": [w.add_frame(f, f"{what} {nt!r} node feature") for f in frames],
            "batch_num_nodes": w.add(g._batch_num_nodes[nt], f"{what} batch_num_nodes[{nt!r}]") if batched else None,
        })
    relations = []
    for cet in g.canonical_etypes:
        index = g._indexes[cet]
        relations.append({
            "canonical_etype": list(cet),
            "num_edges": index.num_edges,
            "src": w.add(index.src, f"{what} {cet} src"),
            "dst": w.add(index.dst, f"{what} {cet} dst"),
            "edge_data": w.add_frame(g.edges[cet].data, f"{what} {cet} edge feature"),
            "batch_num_edges": w.add(g._batch_num_edges[cet], f"{what} batch_num_edges[{cet}]") if batched else None,
        })
    return {"kind": "hetero", "is_block": g.is_block, "idtype": _DTYPE_NAMES[g.idtype], "node_types": node_types,
            "relations": relations}


def _describe_graph(g, w, i):
    if isinstance(g, HeteroGraph):
        return _describe_typed(g, w, i)
    if not isinstance(g, Graph):
        raise DGLTypeError(f"expected graphs[{i}] to be an mpgraph Graph or HeteroGraph, got {type(g).__name__}")
    index = g._index
    srctype, etype, dsttype = g.canonical_etypes[0]
    has_batch = g._batch_num_nodes is not None
    return {
        "canonical_etype": [srctype, etype, dsttype],
        "is_block": g.is_block,
        "idtype": _DTYPE_NAMES[g.idtype],
        "num_src_nodes": index.num_src,
        "num_dst_nodes": index.num_dst,
        "num_edges": index.num_edges,
        "bipartite": len(g._node_frames) > 1,
        "src": w.add(index.src, f"graphs[{i}] src"),
        "dst": w.add(index.dst, f"graphs[{i}] dst"),
        "node_data": [w.add_frame(f, f"graphs[{i}] node feature") for f in g._node_frames],
        "edge_data": w.add_frame(g._edge_frame, f"graphs[{i}] edge feature"),
        "batch_num_nodes": ([w.add(c, f"graphs[{i}] batch_num_nodes[{k}]") for k, c in enumerate(g._batch_num_nodes)]
                            if has_batch else None),
        "batch_num_edges": w.add(g._batch_num_edges, f"graphs[{i}] batch_num_edges") if has_batch else None,
    }


# ---------------------------------------------------------------------------
# save
# ---------------------------------------------------------------------------
def save_graphs(filename, g_list, labels=None, formats=None):
    r"""Save graphs (structure, features, batch information) and optional labels to one file.

    The format is described in :mod:`mpgraph.graph_io`: a checksummed JSON
    header plus raw little-endian tensor bytes, so every dtype (including
    float16, bfloat16 and float8) round-trips bit for bit. The write is atomic:
    a crash or error never leaves a half-written file at ``filename``.
    Heterographs (node types, relations, per-type features, batch counts per
    type) and typed blocks are saved too, in any mix with one-relation graphs;
    such a file is format version 2, other files version 1.

    Parameters
    ----------
    filename : str or os.PathLike
        Destination path; its directory must exist. An existing file is replaced.
    g_list : Graph, HeteroGraph or list of them
        Graphs to save (any device; they are read back on the CPU).
    labels : dict of str to Tensor, optional
        Extra tensors saved with the graphs (e.g. graph labels). Default: ``None``.
    formats : optional
        Accepted for DGL compatibility and ignored: sparse formats are built
        lazily after loading.

    Raises
    ------
    DGLError
        ``labels`` not a dict of tensors; a tensor of a dtype the format lacks;
        ``g_list`` not graphs; the directory missing.

    Examples
    --------
    >>> import os, tempfile, torch, mpgraph as dgl
    >>> from mpgraph.graph_io import save_graphs, load_graphs
    >>> g = dgl.graph(([0, 1], [1, 2]))
    >>> g.ndata['h'] = torch.tensor([[1.], [2.], [3.]], dtype=torch.bfloat16)
    >>> path = os.path.join(tempfile.mkdtemp(), 'graphs.bin')
    >>> save_graphs(path, [g], {'y': torch.tensor([1])})
    >>> gs, labels = load_graphs(path)
    >>> gs[0].edges(), gs[0].ndata['h'].dtype, labels['y']
    ((tensor([0, 1]), tensor([1, 2])), torch.bfloat16, tensor([1]))
    >>> hg = dgl.heterograph({('user', 'plays', 'game'): ([0, 1], [1, 1]), ('game', 'rev', 'user'): ([1], [0])})
    >>> hg.nodes['game'].data['x'] = torch.tensor([0.5, 1.5], dtype=torch.float16)
    >>> save_graphs(path, [g, hg])
    >>> gs, _ = load_graphs(path)
    >>> gs[1].canonical_etypes, gs[1].nodes['game'].data['x']
    ([('game', 'rev', 'user'), ('user', 'plays', 'game')], tensor([0.5000, 1.5000], dtype=torch.float16))
    """
    graphs = [g_list] if isinstance(g_list, GraphLike) else g_list
    try:
        graphs = list(graphs)
    except TypeError as err:
        raise DGLTypeError(f"expected g_list to be a Graph or a list of graphs, got {type(g_list).__name__}") from err
    if labels is None:
        labels = {}
    if not isinstance(labels, dict):
        raise DGLTypeError(f"expected labels as a dict {{name: tensor}}, got {type(labels).__name__}; "
                           "wrap it: labels={'label': tensor}")
    for k in labels:
        if not isinstance(k, str):
            raise DGLTypeError(f"expected str label names, got {type(k).__name__} {k!r}")
    w = _Writer()
    records = [_describe_graph(g, w, i) for i, g in enumerate(graphs)]
    version = FORMAT_VERSION if any("kind" in r for r in records) else _BASE_VERSION
    header = {
        "format": "mpgraph.graphs",
        "version": version,
        "byteorder": "little",
        "graphs": records,
        "labels": {k: w.add(v, f"label {k!r}") for k, v in labels.items()},
    }
    header["payload_size"] = w.size
    head = json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode("utf-8")
    prefix = _PREFIX.pack(MAGIC, version, len(head), hashlib.sha256(head).digest())
    _atomic_write(os.fspath(filename), [prefix, head] + w.chunks)


def _atomic_write(path, chunks):
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise DGLError(f"expected an existing directory for {path!r}, got missing {directory!r}; create it first "
                       "(os.makedirs)")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def _fsync_dir(directory):
    """Persist the rename (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------
# load
# ---------------------------------------------------------------------------
class _Reader:
    """Reads and verifies tensors of an open file whose payload starts at ``base``."""

    def __init__(self, f, path, base, payload_size):
        self.f, self.path, self.base, self.payload_size = f, path, base, payload_size

    def fail(self, msg):
        raise DGLError(f"{self.path!r} is not a valid mpgraph graph file: {msg}")

    def tensor(self, ref, what):
        if not isinstance(ref, dict) or set(ref) != {"dtype", "shape", "offset", "nbytes", "sha256"}:
            self.fail(f"expected a tensor record for {what}, got {ref!r}")
        dtype = _DTYPES.get(ref["dtype"])
        if dtype is None:
            self.fail(f"expected a known dtype for {what}, got {ref['dtype']!r}")
        shape = ref["shape"]
        if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
            self.fail(f"expected a shape of non-negative ints for {what}, got {shape!r}")
        numel = 1
        for d in shape:
            numel *= d
        offset, nbytes = ref["offset"], ref["nbytes"]
        itemsize = torch.empty(0, dtype=dtype).element_size()
        if not (_is_count(offset) and _is_count(nbytes)) or nbytes != numel * itemsize \
                or offset + nbytes > self.payload_size:
            self.fail(f"expected {what} ({numel} x {ref['dtype']}) inside the payload, got offset {offset!r}, "
                      f"nbytes {nbytes!r} (payload {self.payload_size} bytes)")
        self.f.seek(self.base + offset)
        data = self.f.read(nbytes)
        if len(data) != nbytes:
            self.fail(f"expected {nbytes} bytes of {what}, got {len(data)} (the file is truncated)")
        if hashlib.sha256(data).hexdigest() != ref["sha256"]:
            self.fail(f"checksum mismatch for {what} (the file is corrupted); re-create it with save_graphs")
        return _tensor_from_bytes(data, dtype, shape)

    def frame(self, refs, num_rows, kind, what):
        if not isinstance(refs, dict):
            self.fail(f"expected a mapping of {what}, got {type(refs).__name__}")
        cols = {}
        for k, ref in refs.items():
            t = self.tensor(ref, f"{what} {k!r}")
            if t.dim() == 0 or t.shape[0] != num_rows:
                self.fail(f"expected {num_rows} rows for {what} {k!r}, got shape {tuple(t.shape)}")
            cols[k] = t
        return Frame(num_rows, "cpu", kind, cols)


def _is_count(x):
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _read_header(f, path, size):
    def fail(msg):
        raise DGLError(f"{path!r} is not a valid mpgraph graph file: {msg}")

    prefix = f.read(_PREFIX.size)
    if len(prefix) < len(MAGIC) or prefix[:len(MAGIC)] != MAGIC:
        fail(f"expected the magic bytes {MAGIC!r} at the start, got {prefix[:len(MAGIC)]!r}; was it written by "
             "mpgraph.save_graphs?")
    if len(prefix) < _PREFIX.size:
        fail(f"expected at least {_PREFIX.size} bytes, got {size} (the file is truncated)")
    _, version, head_len, head_sha = _PREFIX.unpack(prefix)
    if version > FORMAT_VERSION:
        raise DGLError(f"{path!r} uses graph file format version {version}, expected at most {FORMAT_VERSION}; it was "
                       "written by a newer mpgraph: upgrade mpgraph to read it")
    if version < 1:
        fail(f"expected format version 1..{FORMAT_VERSION}, got {version}")
    if head_len > min(_MAX_HEADER, size - _PREFIX.size):
        fail(f"expected a header within the file, got header length {head_len} for a {size}-byte file (the file is "
             "truncated or corrupted)")
    head = f.read(head_len)
    if hashlib.sha256(head).digest() != head_sha:
        fail("header checksum mismatch (the file is corrupted); re-create it with save_graphs")
    try:
        header = json.loads(head.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        fail(f"expected a JSON header, got undecodable bytes ({err})")
    if not isinstance(header, dict) or header.get("format") != "mpgraph.graphs" \
            or not isinstance(header.get("graphs"), list) or not isinstance(header.get("labels"), dict) \
            or not _is_count(header.get("payload_size")) or header.get("byteorder") != "little":
        fail("expected a header with format, byteorder, graphs, labels and payload_size")
    if header.get("version") != version:
        fail(f"expected the header version to match the prefix version {version}, got {header.get('version')!r}")
    expect = _PREFIX.size + head_len + header["payload_size"]
    if size != expect:
        fail(f"expected {expect} bytes, got {size} (the file is {'truncated' if size < expect else 'longer'}); "
             "re-create it with save_graphs")
    return header, _PREFIX.size + head_len


def _fields(r, meta, keys, what):
    if not isinstance(meta, dict) or set(meta) != keys:
        r.fail(f"expected {what} with fields {sorted(keys)}, got {sorted(meta) if isinstance(meta, dict) else meta!r}")


def _load_typed(r, meta, i):
    what = f"graphs[{i}]"
    _fields(r, meta, {"kind", "is_block", "idtype", "node_types", "relations"}, what)
    idtype = {"int32": torch.int32, "int64": torch.int64}.get(meta["idtype"])
    is_block = meta["is_block"]
    if idtype is None or not isinstance(is_block, bool):
        r.fail(f"expected {what} idtype int32/int64 and a bool is_block, got {meta['idtype']!r}, {is_block!r}")
    sets = 2 if is_block else 1
    if not isinstance(meta["node_types"], list) or not isinstance(meta["relations"], list):
        r.fail(f"expected {what} node_types and relations as lists")
    counts, frames, batch_nodes = {}, {}, {}
    for k, nmeta in enumerate(meta["node_types"]):
        nwhat = f"{what} node_types[{k}]"
        _fields(r, nmeta, {"ntype", "num_nodes", "node_data", "batch_num_nodes"}, nwhat)
        nt, num = nmeta["ntype"], nmeta["num_nodes"]
        if not isinstance(nt, str) or nt in counts:
            r.fail(f"expected {nwhat} ntype to be a new str, got {nt!r}")
        if not (isinstance(num, list) and len(num) == sets and all(_is_count(n) for n in num)):
            r.fail(f"expected {nwhat} num_nodes as a list of {sets} non-negative ints, got {num!r}")
        refs = nmeta["node_data"]
        if not isinstance(refs, list) or len(refs) != sets:
            r.fail(f"expected {nwhat} node_data with {sets} node set(s)")
        counts[nt] = num
        frames[nt] = [r.frame(ref, n, "node", f"{what} {nt!r} node feature") for ref, n in zip(refs, num)]
        if nmeta["batch_num_nodes"] is not None:
            batch_nodes[nt] = r.tensor(nmeta["batch_num_nodes"], f"{what} batch_num_nodes[{nt!r}]")
    indexes, edge_frames, batch_edges = {}, {}, {}
    for k, rmeta in enumerate(meta["relations"]):
        rwhat = f"{what} relations[{k}]"
        _fields(r, rmeta, {"canonical_etype", "num_edges", "src", "dst", "edge_data", "batch_num_edges"}, rwhat)
        cet = rmeta["canonical_etype"]
        if not (isinstance(cet, list) and len(cet) == 3 and all(isinstance(x, str) for x in cet)):
            r.fail(f"expected {rwhat} canonical_etype of 3 str, got {cet!r}")
        cet = tuple(cet)
        E = rmeta["num_edges"]
        if cet in indexes or cet[0] not in counts or cet[2] not in counts or not _is_count(E):
            r.fail(f"expected {rwhat} to be a new relation between saved node types with a non-negative edge "
                   f"count, got {cet!r} with {E!r} edges")
        ns, nd = counts[cet[0]][0], counts[cet[2]][-1]
        src = r.tensor(rmeta["src"], f"{rwhat} src")
        dst = r.tensor(rmeta["dst"], f"{rwhat} dst")
        for name, t, n in (("src", src, ns), ("dst", dst, nd)):
            if t.dtype != idtype or tuple(t.shape) != (E,):
                r.fail(f"expected {rwhat} {name} of shape ({E},) and dtype {idtype}, got {tuple(t.shape)} {t.dtype}")
            if E and (int(t.min()) < 0 or int(t.max()) >= n):
                r.fail(f"expected {rwhat} {name} node IDs in [0, {n}), got [{int(t.min())}, {int(t.max())}]")
        indexes[cet] = Index.from_coo(src, dst, ns, nd)
        edge_frames[cet] = r.frame(rmeta["edge_data"], E, "edge", f"{what} {cet} edge feature")
        if rmeta["batch_num_edges"] is not None:
            batch_edges[cet] = r.tensor(rmeta["batch_num_edges"], f"{what} batch_num_edges[{cet}]")
    try:
        if is_block:
            if batch_nodes or batch_edges:
                r.fail(f"expected no batch counts in {what}, a typed block")
            return HeteroBlock(indexes, {nt: c[0] for nt, c in counts.items()}, {nt: c[1] for nt, c in counts.items()},
                               {nt: f[0] for nt, f in frames.items()}, {nt: f[1] for nt, f in frames.items()},
                               edge_frames, idtype, "cpu")
        g = HeteroGraph(indexes, {nt: c[0] for nt, c in counts.items()}, {nt: f[0] for nt, f in frames.items()},
                        edge_frames, idtype, "cpu")
        if batch_nodes or batch_edges:
            if set(batch_nodes) != set(counts) or set(batch_edges) != set(indexes):
                r.fail(f"expected {what} batch counts for every node type and relation, or for none")
            g.set_batch_num_nodes(batch_nodes)
            g.set_batch_num_edges(batch_edges)
    except DGLError as err:
        if "is not a valid mpgraph graph file" in str(err):
            raise
        r.fail(f"inconsistent {what}: {err}")
    return g


def _load_graph(r, meta, i, version):
    if isinstance(meta, dict) and "kind" in meta:
        if version < 2 or meta["kind"] != "hetero":
            r.fail(f"expected graphs[{i}] of a known kind for format version {version}, got kind {meta['kind']!r}")
        return _load_typed(r, meta, i)
    what = f"graphs[{i}]"
    keys = {"canonical_etype", "is_block", "idtype", "num_src_nodes", "num_dst_nodes", "num_edges", "bipartite",
            "src", "dst", "node_data", "edge_data", "batch_num_nodes", "batch_num_edges"}
    _fields(r, meta, keys, what)
    cet = meta["canonical_etype"]
    if not (isinstance(cet, list) and len(cet) == 3 and all(isinstance(x, str) for x in cet)):
        r.fail(f"expected {what} canonical_etype of 3 str, got {cet!r}")
    idtype = {"int32": torch.int32, "int64": torch.int64}.get(meta["idtype"])
    ns, nd, E = meta["num_src_nodes"], meta["num_dst_nodes"], meta["num_edges"]
    if idtype is None or not all(_is_count(x) for x in (ns, nd, E)):
        r.fail(f"expected {what} idtype int32/int64 and non-negative counts, got {meta['idtype']!r}, {ns!r}, "
               f"{nd!r}, {E!r}")
    bipartite = meta["bipartite"]
    if bipartite is not (bool(meta["is_block"]) or cet[0] != cet[2]):
        r.fail(f"expected {what} bipartite to be true exactly for blocks and relations between two node types, got "
               f"{bipartite!r} for {cet!r} (is_block={meta['is_block']!r})")
    src = r.tensor(meta["src"], f"{what} src")
    dst = r.tensor(meta["dst"], f"{what} dst")
    for name, t, n in (("src", src, ns), ("dst", dst, nd)):
        if t.dtype != idtype or tuple(t.shape) != (E,):
            r.fail(f"expected {what} {name} of shape ({E},) and dtype {idtype}, got {tuple(t.shape)} {t.dtype}")
        if E and (int(t.min()) < 0 or int(t.max()) >= n):
            r.fail(f"expected {what} {name} node IDs in [0, {n}), got [{int(t.min())}, {int(t.max())}]")
    node_refs = meta["node_data"]
    if not isinstance(node_refs, list) or len(node_refs) != (2 if bipartite else 1):
        r.fail(f"expected {what} node_data with {2 if bipartite else 1} node sets")
    rows = [ns, nd] if bipartite else [ns]
    node_frames = [r.frame(refs, n, "node", f"{what} node feature") for refs, n in zip(node_refs, rows)]
    edge_frame = r.frame(meta["edge_data"], E, "edge", f"{what} edge feature")
    bnn, bne = meta["batch_num_nodes"], meta["batch_num_edges"]
    if (bnn is None) != (bne is None):
        r.fail(f"expected {what} batch_num_nodes and batch_num_edges both present or both null")
    counts = None
    if bnn is not None:
        if not isinstance(bnn, list) or len(bnn) != len(rows):
            r.fail(f"expected {what} batch_num_nodes as a list of {len(rows)} count tensors (one per node set)")
        counts = ([r.tensor(ref, f"{what} batch_num_nodes[{k}]") for k, ref in enumerate(bnn)],
                  r.tensor(bne, f"{what} batch_num_edges"))
    try:
        g = Graph(Index.from_coo(src, dst, ns, nd), tuple(cet), bool(meta["is_block"]), node_frames, edge_frame)
        if counts is not None:
            node_counts = counts[0][0] if len(counts[0]) == 1 else {cet[0]: counts[0][0], cet[2]: counts[0][1]}
            g.set_batch_num_nodes(node_counts)
            g.set_batch_num_edges(counts[1])
    except DGLError as err:
        r.fail(f"inconsistent {what}: {err}")
    return g


def load_graphs(filename, idx_list=None):
    r"""Load graphs and labels saved by :func:`save_graphs`.

    Every byte read is verified (magic, version, size, header and tensor
    SHA-256 checksums) before a graph is built; a damaged file raises instead
    of returning wrong graphs. With ``idx_list`` only the selected graphs'
    tensors are read.

    Parameters
    ----------
    filename : str or os.PathLike
        Path of the file.
    idx_list : list of int, optional
        Indices of the graphs to load, in the order wanted. Default: ``None``
        (all graphs).

    Returns
    -------
    graphs : list of Graph or HeteroGraph
        On the CPU, with the saved idtype, node and edge types, features and
        batch information (HeteroGraphs and typed blocks come back as such).
    labels : dict of str to Tensor
        All saved labels (whatever ``idx_list``); ``{}`` when none were saved.

    Raises
    ------
    DGLError
        The file is missing, not an mpgraph graph file (wrong magic), from a
        newer format version, truncated, or corrupted (checksum mismatch);
        ``idx_list`` out of range.

    Examples
    --------
    >>> import os, tempfile, mpgraph as dgl
    >>> from mpgraph.graph_io import save_graphs, load_graphs
    >>> path = os.path.join(tempfile.mkdtemp(), 'gs.bin')
    >>> save_graphs(path, [dgl.graph(([0], [1])), dgl.graph(([0, 1], [1, 2]))])
    >>> gs, _ = load_graphs(path, [1])
    >>> len(gs), gs[0].num_edges()
    (1, 2)
    """
    path = os.fspath(filename)
    if not os.path.isfile(path):
        raise DGLError(f"expected an mpgraph graph file at {path!r}, got no such file")
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        header, base = _read_header(f, path, size)
        r = _Reader(f, path, base, header["payload_size"])
        metas = header["graphs"]
        n = len(metas)
        if idx_list is None:
            idx = list(range(n))
        else:
            if isinstance(idx_list, int):
                idx_list = [idx_list]
            try:
                idx = [int(i) for i in idx_list]
            except (TypeError, ValueError) as err:
                raise DGLTypeError(f"expected idx_list to be a list of ints, got {idx_list!r}") from err
            bad = [i for i in idx if not 0 <= i < n]
            if bad:
                raise DGLError(f"expected graph indices in [0, {n}) ({path!r} holds {n} graphs), got {bad}")
        graphs = [_load_graph(r, metas[i], i, header["version"]) for i in idx]
        labels = {k: r.tensor(ref, f"label {k!r}") for k, ref in header["labels"].items()}
    return graphs, labels
