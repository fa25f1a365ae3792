"""Multi-process and multi-machine training on ``torch.distributed`` (DGL's ``dgl.distributed``).

Workflow::

    # once: split the graph (METIS through pymetis, halo nodes, checksummed files + a JSON manifest)
    mpgraph.distributed.partition_graph(g, 'mygraph', num_parts=2, out_path='parts')

    # every process (torchrun --nproc_per_node=2 train.py): rank r serves part r
    torch.distributed.init_process_group('gloo', timeout=datetime.timedelta(seconds=60))
    g = DistGraph('mygraph', part_config='parts/mygraph.json')
    train_nids = node_split(g.ndata['train_mask'], g.get_partition_book())
    sampler = NeighborSampler([10, 10], prefetch_node_feats=['feat'], prefetch_labels=['label'])
    loader = DistNodeDataLoader(g, train_nids, sampler, batch_size=256, shuffle=True)
    model = torch.nn.parallel.DistributedDataParallel(model)
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for input_nodes, output_nodes, blocks in loader:
            ...

Remote rows and remote sampling use collectives (all-to-all), not DGL's RPC
servers: every rank runs the same number of batches (the loader sees to it).
``mpgraph train --distributed`` (:func:`mpgraph.distributed.train.run_distributed`)
does all of this, with checkpoints and resume.
"""

from ._comm import DistributedError
from .checkpoint import load_checkpoint, save_checkpoint
from .dataloader import DistNodeDataLoader, sample_blocks
from .dist_graph import DistGraph, DistTensor, edge_split, node_split
from .partition import (PARTITION_FORMAT_VERSION, GraphPartitionBook, load_manifest, load_partition,
                        load_partition_book, partition_graph)
from .sampling import sample_neighbors

__all__ = [
    "partition_graph", "load_partition", "load_partition_book", "load_manifest", "GraphPartitionBook",
    "PARTITION_FORMAT_VERSION", "DistGraph", "DistTensor", "node_split", "edge_split", "DistNodeDataLoader",
    "sample_blocks", "sample_neighbors", "DistributedError", "save_checkpoint", "load_checkpoint",
]
