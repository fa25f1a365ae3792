"""DGL's ``dgl.nn.pytorch.linear`` import path (see :mod:`mpgraph.nn.linear`)."""

from ..linear import Linear, TypedLinear

__all__ = ["Linear", "TypedLinear"]
