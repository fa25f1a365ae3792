"""Graph transforms: functions (:mod:`mpgraph.transforms.functional`) and callable modules.

``mpgraph.transforms`` is DGL's ``dgl.transforms``: the functional forms
(``add_self_loop``, ``node_subgraph``, ``reorder_graph``, ...) and the
transform classes (``AddSelfLoop``, ``DropEdge``, ``Compose``, ...) for
dataset pipelines.
"""

from .functional import (add_reverse_edges, add_self_loop, compact_graphs, edge_subgraph, in_subgraph,
                         khop_graph, khop_in_subgraph, khop_out_subgraph, lap_pe, laplacian_pe, line_graph,
                         node_subgraph, out_subgraph, random_walk_pe, remove_self_loop, reorder_graph, reverse,
                         to_bidirected, to_simple)
from .module import (AddEdge, AddReverse, AddSelfLoop, BaseTransform, Compose, DropEdge, DropNode, FeatMask,
                     GCNNorm, KHopGraph, LapPE, LaplacianPE, LineGraph, NodeShuffle, RandomWalkPE, RemoveSelfLoop,
                     RowFeatNormalizer, ToSimple)

__all__ = [
    # functional
    "add_self_loop", "remove_self_loop", "to_simple", "to_bidirected", "add_reverse_edges", "reverse",
    "node_subgraph", "edge_subgraph", "in_subgraph", "out_subgraph", "khop_in_subgraph", "khop_out_subgraph",
    "line_graph", "khop_graph", "reorder_graph", "compact_graphs", "random_walk_pe", "lap_pe", "laplacian_pe",
    # modules
    "BaseTransform", "Compose", "AddSelfLoop", "RemoveSelfLoop", "AddReverse", "ToSimple", "LineGraph",
    "KHopGraph", "RowFeatNormalizer", "FeatMask", "GCNNorm", "DropEdge", "DropNode", "AddEdge", "NodeShuffle",
    "RandomWalkPE", "LapPE", "LaplacianPE",
]
