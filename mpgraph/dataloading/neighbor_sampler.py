"""Multi-layer neighbour samplers (DGL's ``NeighborSampler`` and ``MultiLayerFullNeighborSampler``)."""

import torch

from .._index import as_index
from ..base import NID, DGLError, DGLTypeError
from ..sampling._utils import (as_ids, check_edge_dir, check_fanout, check_fanout_value, check_graph,
                               check_typed_graph, edge_weights, exclude_ids, is_typed, typed_edge_weights,
                               typed_exclude, typed_fanouts, typed_ids)
from ..sampling.neighbor import sample_relations, sample_rows
from .base import BlockSampler
from .block import block_from_sample, typed_block_from_sample

__all__ = ["NeighborSampler", "MultiLayerNeighborSampler", "MultiLayerFullNeighborSampler"]


def _layer_fanout(fanout, what, name):
    """One layer's fanout: an int >= -1, or an ``{etype: int}`` dict (resolved against the graph when sampling)."""
    if not isinstance(fanout, dict):
        return check_fanout_value(fanout, what, name)
    if not fanout:
        raise DGLError(f"{what} expected {name} as an int or a non-empty dict {{etype: int}}, got an empty dict")
    out = {}
    for key, value in fanout.items():
        if not (isinstance(key, str) or (isinstance(key, tuple) and len(key) == 3
                                         and all(isinstance(k, str) for k in key))):
            raise DGLTypeError(f"{what} expected the keys of {name} to be edge type names or canonical "
                               f"(srctype, etype, dsttype) tuples, got {key!r}")
        out[key] = check_fanout_value(value, what, f"{name}[{key!r}]")
    return out


class NeighborSampler(BlockSampler):
    """Sample one block per layer, from the output nodes back to the input nodes.

    For a batch of seed nodes, the last layer's block samples up to
    ``fanouts[-1]`` in-edges of every seed (as
    :func:`mpgraph.sampling.sample_neighbors`); its source nodes (the seeds
    first, then the new neighbours) are the seeds of the layer before, and
    so on. ``blocks[i]`` feeds layer ``i`` of the model. Each block stores
    ``srcdata``/``dstdata[dgl.NID]`` and ``edata[dgl.EID]`` (IDs in the graph);
    features are gathered as set by the ``prefetch_*`` arguments.

    On a :class:`~mpgraph.heterograph.HeteroGraph` the seeds are a dict
    ``{ntype: ids}`` and every relation is sampled on its own (its fanout
    from the layer's entry); each layer's block is a
    :class:`~mpgraph.heterograph.HeteroBlock` whose destination nodes are the
    seeds of every type, and ``input_nodes``/``output_nodes`` are dicts.

    Parameters
    ----------
    fanouts : list of int or dict
        Edges sampled per node, one entry per layer (input layer first); -1
        takes every neighbour. For a HeteroGraph an entry may be a dict
        ``{etype: int}`` giving every relation (names or canonical tuples).
    edge_dir : str, optional
        ``'in'`` (default): sample in-edges. ``'out'``: sample out-edges; the
        block's edges then point from the sampled successor to the seed
        (the reversed graph edge, whose ID is in ``edata[dgl.EID]``), so
        messages still flow toward the seeds.
    prob : str or Tensor, optional
        Edge feature name (or ``(E,)`` tensor) of unnormalised sampling weights.
    mask : str or Tensor, optional
        Boolean edge feature: edges where it is False are never sampled.
    replace : bool, optional
        Sample with replacement (default False).
    prefetch_node_feats, prefetch_labels, prefetch_edge_feats, output_device
        See :class:`~mpgraph.dataloading.BlockSampler`.

    Raises
    ------
    DGLError
        No fanouts, a fanout below -1, unknown ``edge_dir``; when sampling a
        HeteroGraph, a fanout dict missing a relation, an unknown node or edge
        type, or ``edge_dir='out'`` (add reverse relations and sample in-edges).

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.dataloading import NeighborSampler
    >>> g = dgl.graph(([1, 2, 3, 0, 2, 0, 3], [0, 0, 0, 1, 1, 2, 2]))
    >>> g.ndata['feat'] = torch.arange(4.0).unsqueeze(1).to(torch.bfloat16)
    >>> input_nodes, output_nodes, blocks = NeighborSampler([-1, -1]).sample(g, torch.tensor([1]))
    >>> [(b.num_src_nodes(), b.num_dst_nodes(), b.num_edges()) for b in blocks]
    [(4, 3, 7), (3, 1, 2)]
    >>> input_nodes, blocks[0].srcdata['feat'].dtype
    (tensor([1, 0, 2, 3]), torch.bfloat16)

    Per-relation fanouts on a graph with several types:

    >>> hg = dgl.heterograph({('user', 'follows', 'user'): ([0, 1, 2], [1, 2, 0]),
    ...                       ('user', 'plays', 'game'): ([0, 1, 2], [0, 0, 1])})
    >>> sampler = NeighborSampler([{'follows': 1, 'plays': -1}])
    >>> input_nodes, output_nodes, blocks = sampler.sample(hg, {'game': torch.tensor([0])})
    >>> input_nodes['user'], blocks[0].num_edges('plays'), blocks[0].num_dst_nodes('game')
    (tensor([0, 1]), 2, 1)
    """

    def __init__(self, fanouts, edge_dir="in", prob=None, mask=None, replace=False, prefetch_node_feats=None,
                 prefetch_labels=None, prefetch_edge_feats=None, output_device=None):
        super().__init__(prefetch_node_feats, prefetch_labels, prefetch_edge_feats, output_device)
        what = type(self).__name__
        if isinstance(fanouts, torch.Tensor):
            fanouts = fanouts.tolist()
        if not isinstance(fanouts, (list, tuple)) or len(fanouts) == 0:
            raise DGLError(f"{what} expected fanouts as a non-empty list with one int per layer, got {fanouts!r}")
        self.fanouts = [_layer_fanout(f, what, f"fanouts[{i}]") for i, f in enumerate(fanouts)]
        self.edge_dir = check_edge_dir(edge_dir, what)
        if not isinstance(replace, bool):
            raise DGLError(f"{what} expected replace to be True or False, got {replace!r}")
        self.prob = prob
        self.mask = mask
        self.replace = replace

    def __repr__(self):
        return f"{type(self).__name__}(fanouts={self.fanouts}, edge_dir={self.edge_dir!r}, replace={self.replace})"

    def sample_blocks(self, g, seed_nodes, exclude_eids=None):
        """Return ``(input_nodes, output_nodes, blocks)``: one block per fanout, input layer first."""
        if is_typed(g):
            return self._sample_typed(g, seed_nodes, exclude_eids)
        what = type(self).__name__
        check_graph(g, what)
        fanouts = [check_fanout(f, what, f"fanouts[{i}]") for i, f in enumerate(self.fanouts)]
        index = as_index(g)
        if g._bipartite and len(self.fanouts) > 1:
            raise DGLError(f"{what} expected one fanout for a uni-bipartite graph (its sources are not "
                           f"destinations of another layer), got {len(self.fanouts)}")
        if self.edge_dir == "in":
            indptr, nbr_all, eid_all = index.csc()
            n = index.num_dst
        else:
            indptr, nbr_all, eid_all = index.csr()
            n = index.num_src
        seeds = as_ids(g, seed_nodes, n, what)
        output_nodes = seeds.to(index.idtype)
        prob, mask = edge_weights(g, self.prob, self.mask, what)
        exclude = exclude_ids(g, exclude_eids, what)
        blocks = []
        for fanout in reversed(fanouts):
            seg, nbr, eid = sample_rows(indptr, nbr_all, eid_all, seeds, fanout, self.replace, prob, mask, exclude)
            block = block_from_sample(g, seeds, seg, nbr, eid)
            blocks.insert(0, block)
            seeds = block.srcdata[NID].to(torch.int64)
        return blocks[0].srcdata[NID], output_nodes, blocks

    def _sample_typed(self, g, seed_nodes, exclude_eids):
        """:meth:`sample_blocks` on a HeteroGraph: dict seeds, one typed block per layer."""
        what = type(self).__name__
        check_typed_graph(g, what)
        if self.edge_dir != "in":
            raise DGLError(f"{what} expected edge_dir='in' on a graph with several relations, got "
                           f"{self.edge_dir!r}: a block's edges must point into the seeds of their relation's "
                           "destination type; add reverse relations (mpgraph.transforms.AddReverse) and sample "
                           "in-edges")
        given = typed_ids(g, seed_nodes, what)
        fanouts = [typed_fanouts(g, f, what, f"fanouts[{i}]") for i, f in enumerate(self.fanouts)]
        weights = typed_edge_weights(g, self.prob, self.mask, what)
        exclude = typed_exclude(g, exclude_eids, what)
        empty = torch.zeros(0, dtype=torch.int64, device=g.device)
        seeds = {nt: given.get(nt, empty) for nt in g.ntypes}
        output_nodes = {nt: ids.to(g.idtype) for nt, ids in given.items()}
        blocks = []
        for fanout in reversed(fanouts):
            samples = sample_relations(g, seeds, fanout, "in", self.replace, weights, exclude)
            block = typed_block_from_sample(g, seeds, samples)
            blocks.insert(0, block)
            seeds = {nt: block.srcnodes[nt].data[NID].to(torch.int64) for nt in g.ntypes}
        input_nodes = {nt: blocks[0].srcnodes[nt].data[NID] for nt in g.ntypes}
        return input_nodes, output_nodes, blocks


#: DGL's older name of :class:`NeighborSampler`.
MultiLayerNeighborSampler = NeighborSampler


class MultiLayerFullNeighborSampler(NeighborSampler):
    """:class:`NeighborSampler` that takes every neighbour in each of ``num_layers`` layers.

    Parameters
    ----------
    num_layers : int
        Number of blocks (model layers), ``>= 1``.
    edge_dir, prefetch_node_feats, prefetch_labels, prefetch_edge_feats, output_device
        See :class:`NeighborSampler`.
    """

    def __init__(self, num_layers, edge_dir="in", prefetch_node_feats=None, prefetch_labels=None,
                 prefetch_edge_feats=None, output_device=None):
        if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 1:
            raise DGLError(f"MultiLayerFullNeighborSampler expected num_layers to be an int >= 1, got {num_layers!r}")
        super().__init__([-1] * num_layers, edge_dir=edge_dir, prefetch_node_feats=prefetch_node_feats,
                         prefetch_labels=prefetch_labels, prefetch_edge_feats=prefetch_edge_feats,
                         output_device=output_device)
