"""Multi-layer neighbour samplers (DGL's ``NeighborSampler`` and ``MultiLayerFullNeighborSampler``)."""

import torch

from .._index import as_index
from ..base import NID, DGLError
from ..sampling._utils import as_ids, check_edge_dir, check_fanout, check_graph, edge_weights, exclude_ids
from ..sampling.neighbor import sample_rows
from .base import BlockSampler
from .block import block_from_sample

__all__ = ["NeighborSampler", "MultiLayerNeighborSampler", "MultiLayerFullNeighborSampler"]


class NeighborSampler(BlockSampler):
    """Sample one block per layer, from the output nodes back to the input nodes.

    For a batch of seed nodes, the last layer's block samples up to
    ``fanouts[-1]`` in-edges of every seed (as
    :func:`mpgraph.sampling.sample_neighbors`); its source nodes (the seeds
    first, then the new neighbours) are the seeds of the layer before, and
    so on. ``blocks[i]`` feeds layer ``i`` of the model. Each block stores
    ``srcdata``/``dstdata[dgl.NID]`` and ``edata[dgl.EID]`` (IDs in the graph);
    features are gathered as set by the ``prefetch_*`` arguments.

    Parameters
    ----------
    fanouts : list of int
        Edges sampled per node, one entry per layer (input layer first); -1
        takes every neighbour.
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
        No fanouts, a fanout below -1, unknown ``edge_dir``.

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
    """

    def __init__(self, fanouts, edge_dir="in", prob=None, mask=None, replace=False, prefetch_node_feats=None,
                 prefetch_labels=None, prefetch_edge_feats=None, output_device=None):
        super().__init__(prefetch_node_feats, prefetch_labels, prefetch_edge_feats, output_device)
        what = type(self).__name__
        if isinstance(fanouts, torch.Tensor):
            fanouts = fanouts.tolist()
        if not isinstance(fanouts, (list, tuple)) or len(fanouts) == 0:
            raise DGLError(f"{what} expected fanouts as a non-empty list with one int per layer, got {fanouts!r}")
        self.fanouts = [check_fanout(f, what, f"fanouts[{i}]") for i, f in enumerate(fanouts)]
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
        what = type(self).__name__
        check_graph(g, what)
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
        for fanout in reversed(self.fanouts):
            seg, nbr, eid = sample_rows(indptr, nbr_all, eid_all, seeds, fanout, self.replace, prob, mask, exclude)
            block = block_from_sample(g, seeds, seg, nbr, eid)
            blocks.insert(0, block)
            seeds = block.srcdata[NID].to(torch.int64)
        return blocks[0].srcdata[NID], output_nodes, blocks


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
