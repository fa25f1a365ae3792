"""DGL's ``dgl.nn.pytorch.linear`` import path (see :mod:`mpgraph.nn.linear`)."""

from ..linear import TypedLinear

__all__ = ["TypedLinear"]
