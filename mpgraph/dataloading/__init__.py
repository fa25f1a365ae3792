"""Mini-batch training (DGL's ``dgl.dataloading``): samplers, blocks and the :class:`DataLoader`.

Node classification::

    sampler = NeighborSampler([25, 10], prefetch_node_feats=['feat'], prefetch_labels=['label'])
    loader = DataLoader(g, train_nids, sampler, batch_size=1024, shuffle=True)
    for input_nodes, output_nodes, blocks in loader:
        logits = model(blocks, blocks[0].srcdata['feat'])
        loss = F.cross_entropy(logits, blocks[-1].dstdata['label'])

Features are gathered in the graph's storage dtype (store ``g.ndata['feat']``
in bfloat16 to move half the bytes).

Graphs with several types (:class:`~mpgraph.heterograph.HeteroGraph`) work the
same way with dicts: ``DataLoader(g, {'paper': train_ids}, NeighborSampler([{'cites': 10, 'writes': 5}] * 2))``
yields ``{ntype: ids}`` input/output nodes and typed blocks
(:class:`~mpgraph.heterograph.HeteroBlock`) for
:class:`~mpgraph.nn.HeteroGraphConv` layers. Node-wise sampling only: edge
prediction and Cluster-GCN take graphs with one relation.
"""

from . import negative_sampler
from .base import BlockSampler, EdgePredictionSampler, Sampler, as_edge_prediction_sampler
from .block import to_block
from .cluster_gcn import ClusterGCNSampler
from .dataloader import DataLoader
from .neighbor_sampler import MultiLayerFullNeighborSampler, MultiLayerNeighborSampler, NeighborSampler

__all__ = [
    "Sampler", "BlockSampler", "EdgePredictionSampler", "as_edge_prediction_sampler", "to_block",
    "NeighborSampler", "MultiLayerNeighborSampler", "MultiLayerFullNeighborSampler", "ClusterGCNSampler",
    "DataLoader", "negative_sampler",
]
