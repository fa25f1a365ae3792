"""mpgraph: DGL's graph neural network API on current PyTorch, with correct, fast mixed precision.

Code written for DGL runs after changing its imports::

    import mpgraph as dgl
    import mpgraph.function as fn
"""

from . import backend, function, init, ops, precision
from ._index import Index
from .base import ALL, EID, ETYPE, NID, NTYPE, DGLError
from .convert import (block_from_index, create_block, from_networkx, from_scipy, graph, heterograph, rand_bipartite,
                      rand_graph, seed, to_networkx)
from .graph import DGLBlock, DGLGraph, Graph
from .precision import to_bfloat16, to_double, to_float, to_half

__version__ = "0.1.0"

__all__ = [
    "ALL", "EID", "ETYPE", "NID", "NTYPE", "DGLError", "DGLGraph", "DGLBlock", "Graph", "Index",
    "backend", "function", "init", "ops", "precision",
    "graph", "heterograph", "create_block", "block_from_index", "rand_graph", "rand_bipartite",
    "from_scipy", "from_networkx", "to_networkx", "seed",
    "to_half", "to_bfloat16", "to_float", "to_double",
]
