"""DGL's ``dgl.nn.pytorch.glob`` import path (see :mod:`mpgraph.nn.glob`)."""

from ..glob import *  # noqa: F401,F403
from ..glob import __all__  # noqa: F401
