"""Graph neural network layers with DGL's API (``dgl.nn``), functional inside and mixed-precision aware.

``from mpgraph.nn import GraphConv`` and ``from mpgraph.nn.pytorch import GraphConv``
both work, as with DGL. Layers call :mod:`mpgraph.ops` directly and never write
into the graph's feature frames. In float16/bfloat16 they keep degree
normalisers and softmax statistics in float32 and return the input's dtype (the
autocast dtype under :class:`torch.autocast`).
"""

from . import functional
from .conv import (APPNPConv, ChebConv, DenseChebConv, DenseGraphConv, DenseSAGEConv, DotGatConv, EdgeConv,
                   EdgeWeightNorm, GATConv, GatedGraphConv, GATv2Conv, GCN2Conv, GINConv, GINEConv, GraphConv,
                   RelGraphConv, SAGEConv, SGConv, TAGConv, HGTConv)
from .functional import edge_softmax
from .hetero import HeteroEmbedding, HeteroGraphConv, HeteroLinear
from .glob import AvgPooling, GlobalAttentionPooling, MaxPooling, Set2Set, SortPooling, SumPooling, WeightAndSum
from .linear import Linear, TypedLinear
from .utils import Identity, JumpingKnowledge

from . import pytorch  # noqa: E402  (re-exports the names above)

__all__ = [
    "functional", "pytorch", "edge_softmax",
    "GraphConv", "EdgeWeightNorm", "GATConv", "GATv2Conv", "DotGatConv", "SAGEConv", "GINConv", "GINEConv",
    "SGConv", "APPNPConv", "TAGConv", "ChebConv", "GCN2Conv", "GatedGraphConv", "EdgeConv", "RelGraphConv",
    "DenseGraphConv", "DenseSAGEConv", "DenseChebConv",
    "SumPooling", "AvgPooling", "MaxPooling", "SortPooling", "GlobalAttentionPooling", "Set2Set", "WeightAndSum",
    "Linear", "TypedLinear", "JumpingKnowledge", "Identity", "HGTConv", "HeteroGraphConv", "HeteroLinear",
    "HeteroEmbedding",
]
