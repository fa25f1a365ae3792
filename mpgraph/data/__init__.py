"""Datasets with DGL's API: the base class, download utilities, real graphs and generated ones.

Real datasets read their raw files from ``raw_dir`` (several layouts accepted, see
each class) or download them from DGL's server (``MPGRAPH_DATA_URL`` overrides it)
into ``$MPGRAPH_DOWNLOAD_DIR`` (default ``~/.mpgraph``). When the files are missing
and cannot be downloaded, one :class:`~mpgraph.base.DGLError` says which files to
put in which directory. Generated datasets (:class:`CSBMDataset`,
:class:`RedditLikeDataset`) need no files.
"""

from . import utils
from .citation_graph import CitationGraphDataset, CiteseerGraphDataset, CoraGraphDataset, PubmedGraphDataset
from .csbm import CSBMDataset
from .dgl_dataset import DGLBuiltinDataset, DGLDataset
from .graph_classification import SyntheticGraphClassification
from .geom_gcn import (ActorDataset, ChameleonDataset, CornellDataset, GeomGCNDataset, SquirrelDataset, TexasDataset,
                       WisconsinDataset)
from .gnn_benchmark import (AmazonCoBuyComputerDataset, AmazonCoBuyPhotoDataset, CoauthorCSDataset,
                            CoauthorPhysicsDataset, CoraFullDataset, GNNBenchmarkDataset)
from .reddit import RedditDataset
from .reddit_like import RedditLikeDataset
from .typed_graph import SyntheticTypedGraphDataset, typed_citation_graph
from .utils import DownloadError, download, extract_archive, get_download_dir

__all__ = [
    "utils",
    "DGLDataset",
    "DGLBuiltinDataset",
    "DownloadError",
    "download",
    "extract_archive",
    "get_download_dir",
    "CitationGraphDataset",
    "CoraGraphDataset",
    "CiteseerGraphDataset",
    "PubmedGraphDataset",
    "RedditDataset",
    "GNNBenchmarkDataset",
    "CoraFullDataset",
    "AmazonCoBuyComputerDataset",
    "AmazonCoBuyPhotoDataset",
    "CoauthorCSDataset",
    "CoauthorPhysicsDataset",
    "GeomGCNDataset",
    "CornellDataset",
    "TexasDataset",
    "WisconsinDataset",
    "ChameleonDataset",
    "SquirrelDataset",
    "ActorDataset",
    "CSBMDataset",
    "RedditLikeDataset",
    "SyntheticGraphClassification",
    "SyntheticTypedGraphDataset",
    "typed_citation_graph",
]
