"""Mini-batches of a distributed graph: :class:`DistNodeDataLoader` (DGL's ``dgl.dataloading.DistNodeDataLoader``).

Each rank iterates over its own seeds (e.g. from
:func:`~mpgraph.distributed.node_split`). Sampling and feature fetching are
collectives, so every rank must run the same number of batches: the loader
gives every rank ``ceil(max_r n_r / batch_size)`` batches (``floor(min_r n_r
/ batch_size)`` with ``drop_last``), splitting each rank's seeds into that
many batches of near-equal size (at most ``batch_size``). A rank with fewer
seeds than batches repeats seeds, one per otherwise empty batch.

Randomness does not come from torch's global generator: the order of the
seeds is drawn from ``(seed, epoch, rank)`` and each batch is sampled under
a seed drawn from ``(seed, epoch, rank, batch)``, so an epoch is reproduced
exactly by the epoch number alone, which is what resuming from a checkpoint
needs (call :meth:`DistNodeDataLoader.set_epoch` every epoch).
"""

import torch

from ..base import NID, DGLError, DGLTypeError
from ..dataloading.dataloader import _mix, _seeded
from ..dataloading.neighbor_sampler import NeighborSampler
from ..dataloading.block import block_from_sample
from .dist_graph import DistGraph, _as_ids
from .sampling import sample_layer

__all__ = ["DistNodeDataLoader", "sample_blocks"]

_I64 = torch.int64


def sample_blocks(g, seeds, fanouts, replace=False):
    """Sample one block per fanout for ``seeds`` of a :class:`DistGraph` (input layer first); a collective.

    Parameters
    ----------
    g : DistGraph
    seeds : Tensor
        ``(S,)`` distinct global node IDs.
    fanouts : list of int
        One per layer, input layer first; -1 takes every in-edge.
    replace : bool, optional
        Sample with replacement (default False).

    Returns
    -------
    input_nodes : Tensor
        Global IDs of ``blocks[0]``'s source nodes.
    output_nodes : Tensor
        ``seeds``.
    blocks : list of Graph
        ``srcdata``/``dstdata[dgl.NID]`` and ``edata[dgl.EID]`` hold global IDs.
    """
    local_g = g.local_partition
    seeds = seeds.to(_I64)
    output_nodes = seeds.to(local_g.idtype)
    blocks = []
    for fanout in reversed(fanouts):
        seg, nbr, eid = sample_layer(g, seeds, fanout, replace)
        block = block_from_sample(local_g, seeds.to(local_g.device), seg.to(local_g.device), nbr.to(local_g.device),
                                  eid.to(local_g.device))
        blocks.insert(0, block)
        seeds = block.srcdata[NID].to(_I64).cpu()
    return blocks[0].srcdata[NID], output_nodes, blocks


class DistNodeDataLoader:
    """Iterate over mini-batches of this rank's seed nodes of a :class:`DistGraph`.

    Yields ``(input_nodes, output_nodes, blocks)`` as
    :class:`mpgraph.dataloading.DataLoader` with a
    :class:`~mpgraph.dataloading.NeighborSampler` does: ``blocks[0].srcdata``
    holds the sampler's ``prefetch_node_feats`` and ``blocks[-1].dstdata`` its
    ``prefetch_labels``, fetched from their owners in the storage dtype.
    Unlike the single-process loader, nothing is fetched when these are None
    (read ``g.ndata[name][input_nodes]`` yourself, as in DGL).

    Parameters
    ----------
    g : DistGraph
        The graph.
    nids : Tensor
        This rank's seed nodes (global IDs, distinct), e.g. from
        :func:`~mpgraph.distributed.node_split`.
    graph_sampler : NeighborSampler
        Fanouts (``edge_dir='in'``, no ``prob``/``mask``), replacement and
        the feature names to fetch.
    device : torch.device, optional
        Move every batch there (default: where the graph lives).
    batch_size : int, optional
        Most seeds per batch (default 1).
    shuffle : bool, optional
        New seed order every epoch (default False).
    drop_last : bool, optional
        Use only whole batches (default False).
    seed : int, optional
        Seed of the order and of the sampling (default 0).

    Raises
    ------
    DGLError
        Not a :class:`DistGraph` or a :class:`NeighborSampler`; an
        unsupported sampler option; a rank without seeds; a bad ``batch_size``.

    Examples
    --------
    >>> import os, tempfile, torch, mpgraph as dgl
    >>> from mpgraph.dataloading import NeighborSampler
    >>> from mpgraph.distributed import DistGraph, DistNodeDataLoader, partition_graph
    >>> g = dgl.graph(([0, 1, 2, 3, 4], [1, 2, 3, 4, 0]))
    >>> g.ndata['feat'] = torch.randn(5, 3).to(torch.bfloat16)
    >>> out = tempfile.mkdtemp()
    >>> partition_graph(g, 'ring5', 1, out)
    >>> dg = DistGraph('ring5', part_config=os.path.join(out, 'ring5.json'))
    >>> sampler = NeighborSampler([2, 2], prefetch_node_feats=['feat'])
    >>> loader = DistNodeDataLoader(dg, torch.arange(5), sampler, batch_size=2)
    >>> len(loader), [output_nodes.tolist() for _, output_nodes, _ in loader]
    (3, [[0, 1], [2, 3], [4]])
    >>> _, _, blocks = next(iter(loader))
    >>> torch.equal(blocks[0].srcdata['feat'], g.ndata['feat'][blocks[0].srcdata[dgl.NID]])
    True
    """

    def __init__(self, g, nids, graph_sampler, device=None, batch_size=1, shuffle=False, drop_last=False, seed=0):
        what = "DistNodeDataLoader"
        if not isinstance(g, DistGraph):
            raise DGLTypeError(f"{what} expected a DistGraph, got {type(g).__name__}")
        if not isinstance(graph_sampler, NeighborSampler):
            raise DGLTypeError(f"{what} expected a NeighborSampler, got {type(graph_sampler).__name__}")
        if graph_sampler.edge_dir != "in" or graph_sampler.prob is not None or graph_sampler.mask is not None:
            raise DGLError(f"{what} expected a NeighborSampler with edge_dir='in' and no prob/mask (distributed "
                           f"sampling is uniform over in-edges), got {graph_sampler!r} with prob/mask set"
                           if graph_sampler.edge_dir == "in" else
                           f"{what} expected edge_dir='in', got {graph_sampler.edge_dir!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise DGLError(f"{what} expected batch_size to be an int >= 1, got {batch_size!r}")
        self.g = g
        self.nids = _as_ids(nids, g.num_nodes(), what)
        self.graph_sampler = graph_sampler
        self.device = torch.device(device) if device is not None else None
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.seed = int(seed)
        self.epoch = 0
        comm = g._comm
        n = torch.tensor([self.nids.numel(), -self.nids.numel()], dtype=_I64)
        comm.all_reduce(n, "max", "DistNodeDataLoader seed counts")
        most, least = int(n[0]), -int(n[1])
        if least == 0:
            raise DGLError(f"{what} expected seeds on every rank, got none on at least one (this rank has "
                           f"{self.nids.numel()}); split them with node_split(..., force_even=True)")
        self.num_batches = least // batch_size if self.drop_last else -(-most // batch_size)

    def set_epoch(self, epoch):
        """Set the epoch: the seed order and the samples are functions of ``(seed, epoch, rank, batch)``."""
        self.epoch = int(epoch)

    def __len__(self):
        return self.num_batches

    def batches(self):
        """This epoch's batches of seeds: a list of ``num_batches`` int64 tensors."""
        rank = self.g.rank()
        ids = self.nids
        if self.shuffle:
            gen = torch.Generator().manual_seed(_mix(self.seed, self.epoch, rank))
            ids = ids[torch.randperm(ids.numel(), generator=gen)]
        nb = self.num_batches
        if nb == 0:
            return []
        if self.drop_last:
            ids = ids[:nb * self.batch_size]
        out = list(torch.tensor_split(ids, nb))
        for i, b in enumerate(out):
            if b.numel() == 0:                       # fewer seeds than batches: repeat one
                out[i] = ids[i % ids.numel():i % ids.numel() + 1]
        return out

    def __iter__(self):
        g = self.g
        rank = g.rank()
        sampler = self.graph_sampler
        for i, seeds in enumerate(self.batches()):
            with _seeded(_mix(self.seed, self.epoch, rank, i), torch.device("cpu")):
                input_nodes, output_nodes, blocks = sample_blocks(g, seeds, sampler.fanouts, sampler.replace)
            for k in sampler.prefetch_node_feats or []:
                blocks[0].srcdata[k] = g.ndata[k][input_nodes].to(blocks[0].device)
            for k in sampler.prefetch_labels or []:
                blocks[-1].dstdata[k] = g.ndata[k][output_nodes].to(blocks[-1].device)
            if self.device is not None:
                input_nodes, output_nodes = input_nodes.to(self.device), output_nodes.to(self.device)
                blocks = [b.to(self.device) for b in blocks]
            yield input_nodes, output_nodes, blocks
