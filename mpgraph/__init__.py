"""mpgraph: DGL's graph neural network API on current PyTorch, with correct, fast mixed precision.

Code written for DGL runs after changing its imports::

    import mpgraph as dgl
    import mpgraph.function as fn
"""

from . import _openmp  # noqa: F401  (first: sets OpenMP's wait policy before torch loads; see its docstring)
from . import _thp  # noqa: F401  (asks torch's allocator for huge pages before its first allocation; see there)
from . import (backend, data, dataloading, distributed, function, init, nn, ops, partition, precision, sampling,
               transforms)
from ._index import Index
from .batch import batch, slice_batch, unbatch
from .base import ALL, EID, ETYPE, NID, NTYPE, DGLError
from .convert import (block_from_index, create_block, from_networkx, from_scipy, graph, heterograph, rand_bipartite,
                      rand_graph, seed, to_networkx)
from .graph import DGLBlock, DGLGraph, Graph
from .dataloading import to_block
from .graph_io import load_graphs, save_graphs
from .heterograph import (HeteroBlock, HeteroGraph, edge_type_subgraph, node_type_subgraph, to_heterogeneous,
                          to_homogeneous)
from .partition import metis_partition, metis_partition_assignment
from .readout import (broadcast_edges, broadcast_nodes, max_edges, max_nodes, mean_edges, mean_nodes, min_edges,
                      min_nodes, readout_edges, readout_nodes, softmax_edges, softmax_nodes, sum_edges, sum_nodes,
                      topk_edges, topk_nodes)
from .precision import to_bfloat16, to_double, to_float, to_half
from .transforms.functional import (add_reverse_edges, add_self_loop, compact_graphs, edge_subgraph, in_subgraph,
                                    khop_graph, khop_in_subgraph, khop_out_subgraph, lap_pe, laplacian_pe, line_graph,
                                    node_subgraph, out_subgraph, random_walk_pe, remove_self_loop, reorder_graph,
                                    reverse, to_bidirected, to_simple)

__version__ = "0.1.0"

__all__ = [
    "ALL", "EID", "ETYPE", "NID", "NTYPE", "DGLError", "DGLGraph", "DGLBlock", "Graph", "Index",
    "backend", "data", "dataloading", "distributed", "function", "init", "nn", "ops", "partition", "precision",
    "sampling",
    "graph", "heterograph", "create_block", "block_from_index", "rand_graph", "rand_bipartite",
    "from_scipy", "from_networkx", "to_networkx", "seed",
    "to_half", "to_bfloat16", "to_float", "to_double", "transforms",
    "add_reverse_edges", "add_self_loop", "compact_graphs", "edge_subgraph", "in_subgraph", "khop_graph",
    "khop_in_subgraph", "khop_out_subgraph", "lap_pe", "laplacian_pe", "line_graph", "node_subgraph", "out_subgraph",
    "random_walk_pe", "remove_self_loop", "reorder_graph", "reverse", "to_bidirected", "to_simple",
    "batch", "unbatch", "slice_batch", "save_graphs", "load_graphs", "to_block", "metis_partition",
    "metis_partition_assignment", "HeteroGraph", "HeteroBlock", "edge_type_subgraph", "node_type_subgraph",
    "to_heterogeneous",
    "to_homogeneous",
    "readout_nodes",
    "readout_edges",
    "sum_nodes",
    "sum_edges",
    "mean_nodes",
    "mean_edges",
    "max_nodes",
    "max_edges",
    "min_nodes",
    "min_edges",
    "softmax_nodes",
    "softmax_edges",
    "broadcast_nodes",
    "broadcast_edges",
    "topk_nodes",
    "topk_edges",
]
