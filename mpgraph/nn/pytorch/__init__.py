"""DGL's ``dgl.nn.pytorch`` namespace: every layer of :mod:`mpgraph.nn` under its DGL import path.

``from dgl.nn.pytorch import GATConv`` ports as ``from mpgraph.nn.pytorch import GATConv``;
the submodules ``conv``, ``glob``, ``softmax``, ``utils`` and ``linear`` mirror DGL's too.
"""

from ..conv import (APPNPConv, ChebConv, DenseChebConv, DenseGraphConv, DenseSAGEConv, DotGatConv, EdgeConv,
                    EdgeWeightNorm, GATConv, GatedGraphConv, GATv2Conv, GCN2Conv, GINConv, GINEConv, GraphConv,
                    RelGraphConv, SAGEConv, SGConv, TAGConv)
from ..functional import edge_softmax
from ..conv import HGTConv
from ..hetero import HeteroEmbedding, HeteroGraphConv, HeteroLinear
from ..glob import AvgPooling, GlobalAttentionPooling, MaxPooling, Set2Set, SortPooling, SumPooling, WeightAndSum
from ..linear import Linear, TypedLinear
from ..utils import Identity, JumpingKnowledge
from . import conv, glob, linear, softmax, utils

__all__ = [
    "conv", "glob", "linear", "softmax", "utils", "edge_softmax",
    "GraphConv", "EdgeWeightNorm", "GATConv", "GATv2Conv", "DotGatConv", "SAGEConv", "GINConv", "GINEConv",
    "SGConv", "APPNPConv", "TAGConv", "ChebConv", "GCN2Conv", "GatedGraphConv", "EdgeConv", "RelGraphConv",
    "DenseGraphConv", "DenseSAGEConv", "DenseChebConv",
    "SumPooling", "AvgPooling", "MaxPooling", "SortPooling", "GlobalAttentionPooling", "Set2Set", "WeightAndSum",
    "Linear", "TypedLinear", "JumpingKnowledge", "Identity", "HGTConv", "HeteroGraphConv", "HeteroLinear",
    "HeteroEmbedding",
]
