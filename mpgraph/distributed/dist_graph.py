r"""The partitioned graph seen from one training process: :class:`DistGraph`, :class:`DistTensor`, :func:`node_split`.

Each process (rank ``r`` of ``W``) loads part ``r`` of a graph written by
:func:`~mpgraph.distributed.partition_graph` (one part per process). Node and
edge data are :class:`DistTensor`\ s: each rank stores the rows it owns and
``g.ndata['feat'][ids]`` returns the rows of any global IDs, reading owned
rows directly and fetching the others from their owners with
``torch.distributed`` collectives (two variable-sized all-to-alls: IDs out,
rows back; see :mod:`mpgraph.distributed._comm`). Rows move in the storage
dtype, so a bfloat16 feature moves half the bytes of a float32 one; the
bytes are counted (:meth:`DistGraph.comm_stats`).

Collectives instead of DGL's RPC servers
    DGL serves remote rows from server processes over RPC, so a trainer may
    read whenever it likes. Here the owners answer inside the same
    collective, so **remote reads and writes are collective operations**:
    every rank calls them the same number of times, in the same order (as
    with DDP's gradient all-reduce). :class:`~mpgraph.distributed.DistNodeDataLoader`
    keeps the ranks in step by giving each the same number of batches.
    Reads of owned rows only (:meth:`DistTensor.local`) are not collective.
"""

import torch

from .._index import as_index
from ..base import EID, NID, DGLError, DGLTypeError
from ._comm import Communicator
from .partition import load_manifest, load_partition

__all__ = ["DistGraph", "DistTensor", "node_split", "edge_split"]

_I64 = torch.int64
_FLOATS = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def _as_ids(ids, n, what):
    """1-D int64 CPU tensor of IDs (a boolean mask of length ``n`` is turned into the IDs it selects)."""
    if isinstance(ids, slice):
        return torch.arange(n)[ids]
    if isinstance(ids, torch.Tensor):
        if ids.dtype == torch.bool:
            if ids.numel() != n:
                raise DGLError(f"{what} expected a boolean mask of {n} entries, got {ids.numel()}")
            return ids.reshape(-1).nonzero().squeeze(1).cpu()
        if ids.is_floating_point() or ids.is_complex():
            raise DGLTypeError(f"{what} expected integer IDs, got dtype {ids.dtype}")
        return ids.reshape(-1).to(device="cpu", dtype=_I64)
    try:
        return torch.as_tensor(ids, dtype=_I64).reshape(-1)
    except (TypeError, ValueError, RuntimeError) as err:
        raise DGLTypeError(f"{what} expected integer IDs, got {type(ids).__name__}") from err


class DistTensor:
    """A tensor whose rows are spread over the ranks: each stores the rows of the nodes (edges) it owns.

    Obtained from :attr:`DistGraph.ndata` / :attr:`DistGraph.edata`.
    Indexing with global IDs (``t[ids]``) and assigning (``t[ids] = rows``)
    are collective: every rank must make the same sequence of calls (a rank
    with nothing to read passes an empty ID tensor).

    Attributes
    ----------
    name : str
    shape : tuple of int
        ``(N, *row_shape)``: global rows.
    dtype : torch.dtype
        Storage dtype; rows are moved and returned in it.
    local_tensor : Tensor
        The owned rows, ``(n_own, *row_shape)``, in ascending global ID order.
    """

    def __init__(self, name, local_tensor, num_rows, kind, dist_graph):
        self.name = name
        self.local_tensor = local_tensor
        self._num_rows = int(num_rows)
        self.kind = kind
        self._g = dist_graph

    @property
    def shape(self):
        """``(N, *row_shape)``."""
        return (self._num_rows,) + tuple(self.local_tensor.shape[1:])

    @property
    def dtype(self):
        """Storage dtype."""
        return self.local_tensor.dtype

    @property
    def device(self):
        """Device of the owned rows (and of fetched rows)."""
        return self.local_tensor.device

    def __len__(self):
        return self._num_rows

    def __repr__(self):
        return f"DistTensor(name={self.name!r}, shape={self.shape}, dtype={self.dtype}, kind={self.kind!r})"

    def _owner(self, ids):
        gpb = self._g._gpb
        return gpb.nid2partid(ids) if self.kind == "node" else gpb.eid2partid(ids)

    def _local_rows(self, ids, part):
        gpb = self._g._gpb
        return gpb.nid2localnid(ids, part) if self.kind == "node" else gpb.eid2localeid(ids, part)

    def _route(self, ids):
        """Group ``ids`` by owner: ``(order, counts, chunks)`` with ``chunks[r]`` the IDs owned by rank ``r``."""
        W = self._g._comm.world_size
        owner = self._owner(ids)
        order = torch.argsort(owner, stable=True)
        counts = torch.bincount(owner, minlength=W).tolist()
        id_dtype = self._g._id_dtype
        chunks = list(torch.split(ids[order].to(id_dtype), counts))
        return order, counts, chunks

    def local(self, ids):
        """Rows of owned IDs only, without communication; a :class:`~mpgraph.DGLError` for others."""
        ids = _as_ids(ids, self._num_rows, f"DistTensor {self.name!r}")
        rows = self._local_rows(ids, self._g._part_id)
        return self.local_tensor.index_select(0, rows.to(self.local_tensor.device))

    def __getitem__(self, ids):
        """Rows of the global ``ids`` (``(n, *row_shape)``, storage dtype): a collective."""
        comm = self._g._comm
        ids = _as_ids(ids, self._num_rows, f"DistTensor {self.name!r}")
        if comm.world_size == 1:
            return self.local(ids)
        order, _, chunks = self._route(ids)
        asked = comm.exchange(chunks, "ids")
        me = self._g._part_id
        replies = [self.local_tensor.index_select(0, self._local_rows(a.to(_I64), me).to(self.device))
                   for a in asked]
        rows = comm.exchange(replies, f"feature/{self.name}")
        out = torch.empty((ids.numel(),) + tuple(self.local_tensor.shape[1:]), dtype=self.dtype, device=self.device)
        out[order.to(self.device)] = torch.cat(rows) if rows else out[:0]
        return out

    def __setitem__(self, ids, value):
        """Write rows of the global ``ids`` on their owners (a collective); repeated IDs: one write wins."""
        comm = self._g._comm
        ids = _as_ids(ids, self._num_rows, f"DistTensor {self.name!r}")
        value = torch.as_tensor(value, dtype=self.dtype, device=self.device)
        row_shape = tuple(self.local_tensor.shape[1:])
        if value.shape != (ids.numel(),) + row_shape:
            value = value.expand((ids.numel(),) + row_shape)
        if comm.world_size == 1:
            self.local_tensor[self._local_rows(ids, 0).to(self.device)] = value
            return
        order, counts, chunks = self._route(ids)
        got_ids = comm.exchange(chunks, "ids")
        got_rows = comm.exchange(list(torch.split(value[order.to(self.device)], counts)), f"feature/{self.name}")
        me = self._g._part_id
        for a, rows in zip(got_ids, got_rows):
            if a.numel():
                self.local_tensor[self._local_rows(a.to(_I64), me).to(self.device)] = rows


class _DistData:
    """Read-only mapping ``name -> DistTensor`` (``DistGraph.ndata`` / ``edata``)."""

    def __init__(self, tensors, kind):
        self._tensors = tensors
        self._kind = kind

    def __getitem__(self, name):
        try:
            return self._tensors[name]
        except KeyError:
            raise KeyError(f"{self._kind} data {name!r} not found; available: {sorted(self._tensors)}") from None

    def __contains__(self, name):
        return name in self._tensors

    def __iter__(self):
        return iter(self._tensors)

    def __len__(self):
        return len(self._tensors)

    def keys(self):
        return self._tensors.keys()

    def items(self):
        return self._tensors.items()

    def values(self):
        return self._tensors.values()

    def __repr__(self):
        return f"{{{', '.join(f'{k!r}: {v!r}' for k, v in self._tensors.items())}}}"


class DistGraph:
    """One process's view of a partitioned graph (DGL's ``dgl.distributed.DistGraph``).

    Rank ``r`` of the default process group loads part ``r`` (so the group
    has as many ranks as the graph has parts). Without an initialised
    process group it runs standalone on a one-part graph.

    Parameters
    ----------
    graph_name : str
        The name given to :func:`~mpgraph.distributed.partition_graph`.
    gpb : GraphPartitionBook, optional
        Ignored when ``part_config`` is given (kept for DGL's signature).
    part_config : str or os.PathLike
        The manifest ``<out_path>/<graph_name>.json``.
    float_dtype : torch.dtype, optional
        Store (and move) floating-point node and edge data in this dtype,
        e.g. ``torch.bfloat16`` (integer and boolean data are kept).
        Default: as stored in the partition.
    group : ProcessGroup, optional
        Default: the default group.
    device : torch.device, optional
        Where local structure and data live (default CPU).

    Raises
    ------
    DGLError
        No ``part_config``; a name that differs from the manifest's; a group
        size different from the number of parts; a partition that fails its
        checks (see :func:`~mpgraph.distributed.load_partition`).

    Examples
    --------
    >>> import os, tempfile, torch, mpgraph as dgl
    >>> from mpgraph.distributed import DistGraph, partition_graph
    >>> g = dgl.graph(([0, 1, 2, 3], [1, 2, 3, 0]))
    >>> g.ndata['feat'] = torch.arange(8.0).reshape(4, 2)
    >>> out = tempfile.mkdtemp()
    >>> partition_graph(g, 'cycle', 1, out)
    >>> dg = DistGraph('cycle', part_config=os.path.join(out, 'cycle.json'), float_dtype=torch.bfloat16)
    >>> dg.num_nodes(), dg.ndata['feat'][torch.tensor([3, 0])]
    (4, tensor([[6., 7.],
            [0., 1.]], dtype=torch.bfloat16))
    """

    def __init__(self, graph_name, gpb=None, part_config=None, float_dtype=None, group=None, device=None):
        if part_config is None:
            raise DGLError("DistGraph expected part_config, the manifest written by partition_graph "
                           "(<out_path>/<graph_name>.json), got None")
        self._comm = Communicator(group)
        manifest, _ = load_manifest(part_config)
        if manifest["graph_name"] != graph_name:
            raise DGLError(f"DistGraph expected graph {graph_name!r} in {part_config!r}, got "
                           f"{manifest['graph_name']!r}")
        W = self._comm.world_size
        if manifest["num_parts"] != W:
            raise DGLError(f"DistGraph expected one process per part: {part_config!r} has {manifest['num_parts']} "
                           f"parts, the process group has {W} processes; partition with num_parts={W} or launch "
                           f"{manifest['num_parts']} processes (torchrun --nproc_per_node)")
        if float_dtype is not None and float_dtype not in _FLOATS:
            raise DGLError(f"DistGraph expected float_dtype in {_FLOATS}, got {float_dtype!r}")
        self.graph_name = graph_name
        self.part_config = part_config
        self._part_id = self._comm.rank
        self._manifest = manifest
        device = torch.device(device) if device is not None else torch.device("cpu")
        local_g, node_feats, edge_feats, gpb, _, ntypes, etypes = load_partition(part_config, self._part_id)
        self._gpb = gpb
        self._ntypes, self._canonical_etypes = ntypes, etypes
        self._num_hops = int(manifest["num_hops"])
        self._N, self._E = int(manifest["num_nodes"]), int(manifest["num_edges"])
        self._id_dtype = torch.int32 if max(self._N, self._E) < 2 ** 31 else _I64
        self.local_partition = local_g.to(device)
        self._device = device

        def cast(t):
            if float_dtype is not None and t.dtype in _FLOATS:
                t = t.to(float_dtype)
            return t.to(device)

        self._ndata = _DistData({k.split("/", 1)[1]: DistTensor(k.split("/", 1)[1], cast(v), self._N, "node", self)
                                 for k, v in node_feats.items()}, "node")
        self._edata = _DistData({k.split("/", 1)[1]: DistTensor(k.split("/", 1)[1], cast(v), self._E, "edge", self)
                                 for k, v in edge_feats.items()}, "edge")
        # local structure for sampling: CSC of the local graph, global <-> local IDs
        nid = local_g.ndata[NID].to(_I64)
        self._local_nid = nid
        self._local_eid = local_g.edata[EID].to(_I64)
        self._sorted_nid, self._sorted_perm = torch.sort(nid)
        self._complete = local_g.ndata["halo_hop"].to(_I64) < self._num_hops     # all in-edges are local
        self._num_inner = int(local_g.ndata["inner_node"].sum())

    # ----- DGL graph API -------------------------------------------------
    def num_nodes(self, ntype=None):
        """``N``: nodes of the whole graph."""
        return self._N

    def num_edges(self, etype=None):
        """``E``: edges of the whole graph."""
        return self._E

    number_of_nodes = num_nodes
    number_of_edges = num_edges

    @property
    def ntypes(self):
        """Node types (one: ``['_N']``)."""
        return list(self._ntypes)

    @property
    def etypes(self):
        """Edge types (one: ``['_E']``)."""
        return [c[1] for c in self._canonical_etypes]

    @property
    def canonical_etypes(self):
        """``[(srctype, etype, dsttype)]``."""
        return list(self._canonical_etypes)

    @property
    def idtype(self):
        """ID dtype of the local graph and of sampled blocks."""
        return self.local_partition.idtype

    @property
    def device(self):
        """Where the local graph and the owned rows live."""
        return self._device

    @property
    def ndata(self):
        """Node data: name to :class:`DistTensor`."""
        return self._ndata

    @property
    def edata(self):
        """Edge data: name to :class:`DistTensor`."""
        return self._edata

    @property
    def num_hops(self):
        """Halo rings stored with each part."""
        return self._num_hops

    def get_partition_book(self):
        """The :class:`~mpgraph.distributed.GraphPartitionBook`."""
        return self._gpb

    def rank(self):
        """This process's rank (= its part ID)."""
        return self._part_id

    @property
    def world_size(self):
        """Number of processes (= parts)."""
        return self._comm.world_size

    def barrier(self):
        """Wait for every rank (a collective)."""
        if self._comm.world_size > 1:
            with self._comm.guard("barrier"):
                torch.distributed.barrier(group=self._comm.group)

    # ----- communication accounting ------------------------------------
    def comm_stats(self):
        """Bytes this rank sent to and received from other ranks, by kind, since the last reset.

        Returns
        -------
        dict
            ``bytes_sent`` and ``bytes_received`` (``{'ids': int, 'feature':
            int, 'feature/<name>': int, 'sampling': int, 'counts': int}``:
            requested IDs, rows of all data and of each tensor, remote
            sampling, exchange sizes), ``total_bytes_sent`` and
            ``exchanges`` (number of all-to-all exchanges).
        """
        return self._comm.stats()

    def reset_comm_stats(self):
        """Zero the byte counters."""
        self._comm.reset_stats()

    # ----- global <-> local ---------------------------------------------
    def _to_local(self, gids):
        """Local ID of each global ID in this part's local graph (owned or halo), -1 where absent."""
        if self._sorted_nid.numel() == 0:
            return torch.full_like(gids, -1)
        pos = torch.searchsorted(self._sorted_nid, gids).clamp(max=self._sorted_nid.numel() - 1)
        return torch.where(self._sorted_nid[pos] == gids, self._sorted_perm[pos], -1)

    def _csc(self):
        return as_index(self.local_partition).csc()


def _even_slices(sizes, W):
    """Rank ``r`` takes positions ``[r * n // W, (r + 1) * n // W)`` of the concatenation."""
    n = sum(sizes)
    return [(r * n // W, (r + 1) * n // W) for r in range(W)]


def _split(ids_of_part, W, rank, force_even):
    if not force_even:
        return ids_of_part[rank]
    lo, hi = _even_slices([t.numel() for t in ids_of_part], W)[rank]
    return torch.cat(ids_of_part)[lo:hi] if ids_of_part else torch.zeros(0, dtype=_I64)


def node_split(nodes, partition_book=None, ntype="_N", rank=None, force_even=True, node_trainer_ids=None):
    """This rank's share of ``nodes`` (DGL's ``dgl.distributed.node_split``).

    Nodes are ordered by owner part, then ID; with ``force_even`` rank ``r``
    takes positions ``[r n / W, (r + 1) n / W)`` of that order, so the shares
    differ by at most one node and are (nearly) the nodes each rank owns.
    Without ``force_even`` each rank takes exactly the nodes it owns.

    Parameters
    ----------
    nodes : Tensor or DistTensor
        A boolean mask over all nodes (``(N,)`` tensor, or a boolean
        :class:`DistTensor` such as ``g.ndata['train_mask']``) or global node IDs.
    partition_book : GraphPartitionBook
        The graph's partition book (``g.get_partition_book()``).
    ntype : str, optional
        Accepted for DGL compatibility (one node type).
    rank : int, optional
        Default: this process's rank.
    force_even : bool, optional
        Balance the shares (default True).
    node_trainer_ids : optional
        Not supported (must be None).

    Returns
    -------
    Tensor
        ``(n_r,)`` int64 global node IDs, ascending within each owner.

    Raises
    ------
    DGLError
        No partition book; ``node_trainer_ids`` given; a mask of the wrong length.

    Notes
    -----
    With a :class:`DistTensor` mask each rank reads only its own rows; the
    owned IDs are then gathered from every rank, so the call is collective.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.distributed import GraphPartitionBook, node_split
    >>> gpb = GraphPartitionBook(0, torch.tensor([0, 0, 0, 1, 1, 1]), 2)
    >>> mask = torch.tensor([True, True, True, True, False, False])
    >>> node_split(mask, gpb, rank=0), node_split(mask, gpb, rank=1), node_split(mask, gpb, rank=1, force_even=False)
    (tensor([0, 1]), tensor([2, 3]), tensor([3]))
    """
    if partition_book is None:
        raise DGLError("node_split expected a partition book (g.get_partition_book()), got None")
    if node_trainer_ids is not None:
        raise DGLError("node_split expected node_trainer_ids=None (one trainer per part), got a value")
    gpb = partition_book
    W = gpb.num_partitions()
    rank = gpb.partid if rank is None else int(rank)
    if isinstance(nodes, DistTensor):
        if nodes.kind != "node":
            raise DGLError(f"node_split expected a node DistTensor, got an {nodes.kind} one ({nodes.name!r})")
        local = nodes.local_tensor.reshape(-1)
        owned = gpb.partid2nids(gpb.partid)
        mine = owned[local.bool().cpu()] if local.dtype == torch.bool else owned[local.cpu() != 0]
        comm = nodes._g._comm
        if not force_even and rank == comm.rank:
            return mine
        got = comm.exchange([mine] * W, "ids")            # everyone's owned IDs, to everyone
        return _split([t.to(_I64) for t in got], W, rank, force_even)
    ids = _as_ids(nodes, gpb.num_nodes, "node_split")
    owner = gpb.nid2partid(ids)
    return _split([ids[owner == p] for p in range(W)], W, rank, force_even)


def edge_split(edges, partition_book=None, etype="_E", rank=None, force_even=True, edge_trainer_ids=None):
    """This rank's share of ``edges`` (DGL's ``dgl.distributed.edge_split``); see :func:`node_split`.

    ``edges`` is an ``(E,)`` boolean mask or global edge IDs (not a
    :class:`DistTensor`).
    """
    if partition_book is None:
        raise DGLError("edge_split expected a partition book (g.get_partition_book()), got None")
    if edge_trainer_ids is not None:
        raise DGLError("edge_split expected edge_trainer_ids=None (one trainer per part), got a value")
    gpb = partition_book
    W = gpb.num_partitions()
    rank = gpb.partid if rank is None else int(rank)
    ids = _as_ids(edges, gpb.num_edges, "edge_split")
    owner = gpb.eid2partid(ids)
    return _split([ids[owner == p] for p in range(W)], W, rank, force_even)
