"""DGL's ``dgl.nn.pytorch.utils`` import path (see :mod:`mpgraph.nn.utils`)."""

from ..utils import Identity, JumpingKnowledge

__all__ = ["Identity", "JumpingKnowledge"]
