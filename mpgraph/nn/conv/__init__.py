"""Graph convolution layers, one per module (DGL's ``dgl.nn.pytorch.conv``)."""

from .appnpconv import APPNPConv
from .chebconv import ChebConv
from .densechebconv import DenseChebConv
from .densegraphconv import DenseGraphConv
from .densesageconv import DenseSAGEConv
from .dotgatconv import DotGatConv
from .edgeconv import EdgeConv
from .gatconv import GATConv
from .gatedgraphconv import GatedGraphConv
from .gatv2conv import GATv2Conv
from .gcn2conv import GCN2Conv
from .ginconv import GINConv
from .gineconv import GINEConv
from .graphconv import EdgeWeightNorm, GraphConv
from .hgtconv import HGTConv
from .relgraphconv import RelGraphConv
from .sageconv import SAGEConv
from .sgconv import SGConv
from .tagconv import TAGConv

__all__ = [
    "GraphConv", "EdgeWeightNorm", "GATConv", "GATv2Conv", "DotGatConv", "SAGEConv", "GINConv", "GINEConv",
    "SGConv", "APPNPConv", "TAGConv", "ChebConv", "GCN2Conv", "GatedGraphConv", "EdgeConv", "RelGraphConv",
    "DenseGraphConv", "DenseSAGEConv", "DenseChebConv", "HGTConv",
]
