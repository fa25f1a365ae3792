"""The mini-batch :class:`DataLoader` (DGL's ``dgl.dataloading.DataLoader``).

Each epoch the main process fixes the batches (the order of ``indices``) and
one random seed per batch, derived from a draw of torch's global generator and
the batch number. A batch is sampled under its own seed, in the main process or
in a worker, so the batches do not depend on ``num_workers`` or on which worker
ran them: ``torch.manual_seed(s)`` before iterating reproduces an epoch exactly.
"""

import contextlib

import torch
import torch.utils.data

from ..base import DGLError, DGLTypeError
from ..graph import Graph
from ..heterograph import HeteroGraph
from .base import Sampler

__all__ = ["DataLoader"]

_I64 = torch.int64
_MASK64 = (1 << 64) - 1
#: keyword arguments of torch.utils.data.DataLoader that the DataLoader sets itself
_OWN = ("batch_size", "shuffle", "sampler", "batch_sampler", "collate_fn", "drop_last")


def _mix(*values):
    """A 63-bit seed from integers (splitmix64 finaliser over each value)."""
    h = 0x9E3779B97F4A7C15
    for v in values:
        h = (h ^ (int(v) & _MASK64)) & _MASK64
        h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & _MASK64
        h ^= h >> 31
    return h & ((1 << 63) - 1)


@contextlib.contextmanager
def _seeded(seed, device):
    """Run the body with torch's generators (CPU, and ``device`` if CUDA) seeded by ``seed``, then restore them."""
    cuda = device.type == "cuda"
    with torch.random.fork_rng(devices=[device] if cuda else []):
        torch.random.default_generator.manual_seed(seed)
        if cuda:
            with torch.cuda.device(device):
                torch.cuda.manual_seed(seed)
        yield


def _to_device(x, device):
    if isinstance(x, (torch.Tensor, Graph, HeteroGraph)):
        return x.to(device)
    if isinstance(x, tuple):
        return tuple(_to_device(v, device) for v in x)
    if isinstance(x, list):
        return [_to_device(v, device) for v in x]
    if isinstance(x, dict):
        return {k: _to_device(v, device) for k, v in x.items()}
    return x


def _identity(batch):
    return batch


def _split_types(type_ids, ids, type_names):
    """``{type name: ids}`` from parallel type-ID and ID tensors: types in order of their ID, IDs in batch order."""
    return {type_names[t]: ids[type_ids == t] for t in torch.unique(type_ids).tolist()}


class _BatchDataset(torch.utils.data.Dataset):
    """Map-style dataset whose keys are ``(batch number, seed IDs, batch seed)``.

    With typed indices (``type_names`` given) the seed IDs are a ``(2, B)``
    tensor of type IDs and IDs, handed to the sampler as ``{type: ids}``.
    """

    def __init__(self, graph, sampler, type_names=None):
        self.graph = graph
        self.sampler = sampler
        self.type_names = type_names

    def __getitem__(self, key):
        _, ids, seed = key
        if self.type_names is not None:
            ids = _split_types(ids[0], ids[1], self.type_names)
        with _seeded(seed, self.graph.device):
            return self.sampler.sample(self.graph, ids)

    def __len__(self):
        raise TypeError("_BatchDataset has no length; it is indexed by batch keys")


class _Keys(torch.utils.data.Sampler):
    """The current epoch's batch keys (read in the main process by torch's DataLoader).

    It holds the keys itself rather than a reference to the :class:`DataLoader`:
    a reference cycle through torch's loader would leave its worker shutdown to
    the cycle collector, which finalises the queues first (a 5 s wait per worker).
    """

    def __init__(self):
        self.keys = []

    def __iter__(self):
        return iter(self.keys)

    def __len__(self):
        return len(self.keys)


class DataLoader:
    """Iterate over mini-batches of ``indices``, sampled by ``graph_sampler``.

    Each batch is ``graph_sampler.sample(graph, batch_of_indices)``: for a
    :class:`~mpgraph.dataloading.NeighborSampler`,
    ``(input_nodes, output_nodes, blocks)``; for an edge-prediction sampler,
    ``(input_nodes, pair_graph, neg_pair_graph, blocks)``; for a
    :class:`~mpgraph.dataloading.ClusterGCNSampler`, a subgraph.

    Parameters
    ----------
    graph : Graph or HeteroGraph
        The graph to sample from.
    indices : Tensor, sequence or dict
        Seed IDs (node IDs, edge IDs for edge prediction, part IDs for
        Cluster-GCN); a one-entry ``{type: ids}`` dict is accepted for a
        Graph. For a HeteroGraph, ``{ntype: ids}``: the seeds of all types
        are batched (and shuffled) together, in the order of the dict, and
        each batch hands the sampler ``{ntype: ids}`` with the types present
        in that batch (as DGL).
    graph_sampler : Sampler
        The sampler.
    device : torch.device, optional
        Move every batch there (default: leave it where it was sampled).
    use_ddp : bool, optional
        With ``torch.distributed`` initialised, give each rank its share of
        ``indices`` as :class:`torch.utils.data.DistributedSampler` does
        (shuffled with ``ddp_seed + epoch``, padded by repetition unless
        ``drop_last``); call :meth:`set_epoch` every epoch. Without an
        initialised process group it is a no-op.
    ddp_seed : int, optional
        Seed of the distributed shuffle (default 0).
    batch_size : int, optional
        Seeds per batch (default 1).
    drop_last : bool, optional
        Drop the last, smaller batch (default False).
    shuffle : bool, optional
        New order of ``indices`` every epoch (default False).
    num_workers : int, optional
        Sample in this many worker processes (default 0: in this process).
        Batches are the same as with 0 for the same seed.
    use_uva : bool, optional
        Not supported (must be False).
    use_prefetch_thread, use_alternate_streams, pin_prefetcher : optional
        Accepted for DGL compatibility; no effect.
    **kwargs
        Passed to :class:`torch.utils.data.DataLoader` when ``num_workers > 0``
        (``persistent_workers``, ``prefetch_factor``, ``pin_memory``, ...).

    Raises
    ------
    DGLError
        A non-positive ``batch_size``, a negative ``num_workers``, workers with
        a graph on a GPU, ``use_uva=True``.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.dataloading import DataLoader, NeighborSampler
    >>> g = dgl.graph(([0, 1, 2, 3, 4], [1, 2, 3, 4, 0]))
    >>> g.ndata['feat'] = torch.randn(5, 3)
    >>> loader = DataLoader(g, torch.arange(5), NeighborSampler([2, 2]), batch_size=2)
    >>> len(loader), [output_nodes.tolist() for _, output_nodes, _ in loader]
    (3, [[0, 1], [2, 3], [4]])
    >>> hg = dgl.heterograph({('user', 'plays', 'game'): ([0, 1, 2], [0, 1, 1]),
    ...                       ('game', 'played-by', 'user'): ([0, 1, 1], [0, 1, 2])})
    >>> loader = DataLoader(hg, {'user': torch.tensor([0, 1]), 'game': torch.tensor([1])}, NeighborSampler([2]),
    ...                     batch_size=2)
    >>> [{k: v.tolist() for k, v in output_nodes.items()} for _, output_nodes, _ in loader]
    [{'user': [0, 1]}, {'game': [1]}]
    """

    def __init__(self, graph, indices, graph_sampler, device=None, use_ddp=False, ddp_seed=0, batch_size=1,
                 drop_last=False, shuffle=False, use_prefetch_thread=None, use_alternate_streams=None,
                 pin_prefetcher=None, use_uva=False, num_workers=0, **kwargs):
        what = "DataLoader"
        if not isinstance(graph, (Graph, HeteroGraph)):
            raise DGLTypeError(f"{what} expected an mpgraph graph, got {type(graph).__name__}")
        if not isinstance(graph_sampler, Sampler):
            raise DGLTypeError(f"{what} expected graph_sampler to be a mpgraph.dataloading.Sampler (e.g. "
                               f"NeighborSampler), got {type(graph_sampler).__name__}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise DGLError(f"{what} expected batch_size to be an int >= 1, got {batch_size!r}")
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise DGLError(f"{what} expected num_workers to be an int >= 0, got {num_workers!r}")
        if use_uva:
            raise DGLError(f"{what} expected use_uva=False (unified virtual addressing is not supported); move the "
                           "graph to the GPU with g.to('cuda') instead")
        own = sorted(set(kwargs) & set(_OWN))
        if own:
            raise DGLError(f"{what} sets {own} itself; got them as keyword arguments")
        if num_workers and graph.device.type != "cpu":
            raise DGLError(f"{what} expected num_workers=0 for a graph on {graph.device} (workers sample on the "
                           f"CPU), got {num_workers}")
        self.graph = graph
        self._type_names = None
        if isinstance(indices, dict) and (isinstance(graph, HeteroGraph) or len(indices) != 1):
            self._type_names = list(indices)
            if not self._type_names:
                raise DGLError(f"{what} expected a non-empty dict {{ntype: ids}} of indices, got an empty dict")
            parts = [self._indices(v, graph.device, f"{what} (indices[{k!r}])") for k, v in indices.items()]
            type_ids = torch.repeat_interleave(torch.arange(len(parts), device=graph.device),
                                               torch.tensor([p.numel() for p in parts], device=graph.device))
            self._type_ids = type_ids
            self.indices = torch.cat(parts)
        else:
            self.indices = self._indices(indices, graph.device, what)
        self.graph_sampler = graph_sampler
        self.device = torch.device(device) if device is not None else None
        self.batch_size = batch_size
        self.drop_last = bool(drop_last)
        self.shuffle = bool(shuffle)
        self.num_workers = num_workers
        self.use_ddp = bool(use_ddp)
        self.ddp_seed = int(ddp_seed)
        self.epoch = 0
        self._keys = _Keys()
        self._loader = None
        self._kwargs = kwargs
        if num_workers:
            graph.create_formats_()          # build CSR/CSC once, before workers copy the graph

    @staticmethod
    def _indices(indices, device, what):
        if isinstance(indices, dict):
            (indices,) = indices.values()           # one entry (several are typed indices, split by the caller)
        if isinstance(indices, torch.Tensor):
            if indices.dtype == torch.bool or indices.is_floating_point() or indices.is_complex():
                raise DGLTypeError(f"{what} expected integer indices, got dtype {indices.dtype}")
            return indices.reshape(-1).to(device=device, dtype=_I64)
        try:
            return torch.as_tensor(indices, dtype=_I64, device=device).reshape(-1)
        except (TypeError, ValueError, RuntimeError) as err:
            raise DGLTypeError(f"{what} expected indices as an integer tensor or sequence, got "
                               f"{type(indices).__name__}") from err

    # ----- distributed split ---------------------------------------------
    def _rank_world(self):
        if self.use_ddp and torch.distributed.is_available() and torch.distributed.is_initialized():
            return torch.distributed.get_rank(), torch.distributed.get_world_size()
        return 0, 1

    def set_epoch(self, epoch):
        """Set the epoch of the distributed shuffle (as ``DistributedSampler.set_epoch``)."""
        self.epoch = int(epoch)

    def _positions(self, epoch_seed):
        """Positions in ``indices`` this process iterates over this epoch, in order."""
        n = self.indices.numel()
        rank, world = self._rank_world()
        if self.use_ddp and world > 1:
            split = torch.utils.data.DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=self.shuffle,
                                                        seed=self.ddp_seed, drop_last=self.drop_last)
            split.set_epoch(self.epoch)
            return torch.tensor(list(split), dtype=_I64)
        if self.shuffle:
            return torch.randperm(n, generator=torch.Generator().manual_seed(epoch_seed))
        return torch.arange(n)

    def _plan(self):
        """The epoch's batch keys ``(batch number, seed IDs, batch seed)``."""
        epoch_seed = int(torch.randint(0, 2 ** 62, (1,)))          # one draw of the global generator per epoch
        rank, _ = self._rank_world()
        pos = self._positions(epoch_seed).to(self.indices.device)
        ids = self.indices[pos]
        if self._type_names is not None:
            ids = torch.stack([self._type_ids[pos], ids])        # (2, n): type ID and ID of every seed
        n = ids.shape[-1]
        stop = n - n % self.batch_size if self.drop_last else n
        return [(i, ids[..., s:s + self.batch_size], _mix(epoch_seed, rank, i))
                for i, s in enumerate(range(0, stop, self.batch_size))]

    def __len__(self):
        n = self.indices.numel()
        _, world = self._rank_world()
        if self.use_ddp and world > 1:
            n = n // world if self.drop_last and n % world else -(-n // world)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    # ----- iteration -----------------------------------------------------
    def _torch_loader(self):
        if self._loader is None:
            kwargs = dict(self._kwargs)
            # a private generator: torch's loader draws its workers' base seed from it, not from the global one,
            # so iterating with workers leaves the global generator where iterating without them does
            kwargs.setdefault("generator", torch.Generator().manual_seed(0))
            self._loader = torch.utils.data.DataLoader(
                _BatchDataset(self.graph, self.graph_sampler, self._type_names), batch_size=None, sampler=self._keys,
                collate_fn=_identity, num_workers=self.num_workers, **kwargs)
        return self._loader

    def __iter__(self):
        self._keys.keys = self._plan()
        if self.num_workers == 0:
            dataset = _BatchDataset(self.graph, self.graph_sampler, self._type_names)
            batches = (dataset[key] for key in self._keys.keys)
        else:
            batches = iter(self._torch_loader())
        for batch in batches:
            yield batch if self.device is None else _to_device(batch, self.device)
