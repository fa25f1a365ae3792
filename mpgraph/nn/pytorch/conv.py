"""DGL's ``dgl.nn.pytorch.conv`` import path (see :mod:`mpgraph.nn.conv`)."""

from ..conv import *  # noqa: F401,F403
from ..conv import __all__  # noqa: F401
