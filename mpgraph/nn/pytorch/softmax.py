"""DGL's ``dgl.nn.pytorch.softmax`` import path (see :mod:`mpgraph.nn.functional`)."""

from ..functional import edge_softmax

__all__ = ["edge_softmax"]
