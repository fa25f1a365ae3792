"""Node-classification graphs in the gnn-benchmark "SparseGraph" npz layout (Shchur et al., 2018).

CoraFull, Amazon Computers/Photo and Coauthor CS/Physics, processed as DGL's
``gnn_benchmark.py``: the adjacency is made bidirected (duplicates removed,
self-loops kept once), nodes are put in reverse Cuthill-McKee order and edges
sorted by destination.
"""

import os
from functools import partialmethod

import numpy as np

from ..base import DGLError
from ._process import bidirected_edges, graph_from_arrays, permute_graph_arrays, rcmk_order
from .dgl_dataset import _DGLArchiveDataset

__all__ = [
    "GNNBenchmarkDataset",
    "CoraFullDataset",
    "AmazonCoBuyComputerDataset",
    "AmazonCoBuyPhotoDataset",
    "CoauthorCSDataset",
    "CoauthorPhysicsDataset",
]


def _csr_from_npz(loader, prefix):
    import scipy.sparse as sp

    return sp.csr_matrix(
        (loader[prefix + "_data"], loader[prefix + "_indices"], loader[prefix + "_indptr"]),
        shape=tuple(int(s) for s in loader[prefix + "_shape"]),
    )


def _read_sparse_graph_npz(path, reorder=True):
    """Read a SparseGraph npz and process it as DGL does.

    Parameters
    ----------
    path : str
        The ``.npz`` file: ``adj_data/adj_indices/adj_indptr/adj_shape`` (CSR
        adjacency), ``attr_*`` (CSR) or ``attr_matrix`` (dense) features, and
        ``labels`` (dense) or ``labels_*`` (CSR).
    reorder : bool, optional
        Reverse Cuthill-McKee node order and destination-sorted edges, as DGL.
        Default: ``True``.

    Returns
    -------
    dict
        ``src``, ``dst`` (``(E,)`` int64; bidirected, duplicates removed),
        ``num_nodes``, ``feat`` (``(N, D)`` float32), ``label`` (``(N,)`` int64).

    Raises
    ------
    DGLError
        If the file lacks the adjacency or the labels.
    """
    with np.load(path, allow_pickle=False) as loader:
        keys = set(loader.files)
        if not {"adj_data", "adj_indices", "adj_indptr", "adj_shape"} <= keys:
            raise DGLError(
                f"expected a SparseGraph npz with adj_data/adj_indices/adj_indptr/adj_shape, got keys "
                f"{sorted(keys)} in {path}; use the gnn-benchmark file (github.com/shchur/gnn-benchmark)"
            )
        adj = _csr_from_npz(loader, "adj").tocoo()
        num_nodes = adj.shape[0]
        if "attr_data" in keys:
            feat = np.asarray(_csr_from_npz(loader, "attr").todense(), dtype=np.float32)
        elif "attr_matrix" in keys:
            feat = np.asarray(loader["attr_matrix"], dtype=np.float32)
        else:
            feat = None
        if "labels_data" in keys:
            labels = np.asarray(_csr_from_npz(loader, "labels").todense())
        elif "labels" in keys:
            labels = np.asarray(loader["labels"])
        else:
            raise DGLError(f"expected labels or labels_* arrays in {path}, got keys {sorted(keys)}")
    # A one-hot label matrix (N, C) becomes class indices.
    labels = labels.argmax(axis=1) if labels.ndim == 2 else labels
    src, dst = bidirected_edges(adj.row.astype(np.int64), adj.col.astype(np.int64), num_nodes)
    ndata = {"label": labels.astype(np.int64)}
    if feat is not None:
        ndata["feat"] = feat
    if reorder:
        src, dst, ndata = permute_graph_arrays(src, dst, ndata, rcmk_order(src, dst, num_nodes))
    return {"src": src, "dst": dst, "num_nodes": num_nodes, **ndata}


class GNNBenchmarkDataset(_DGLArchiveDataset):
    r"""Base of the gnn-benchmark datasets (one graph, node classification).

    Parameters
    ----------
    name : str
        DGL's name: ``'cora_full'``, ``'amazon_co_buy_computer'``,
        ``'amazon_co_buy_photo'``, ``'coauthor_cs'`` or ``'coauthor_physics'``.
    raw_dir : str, optional
        Directory with the npz. Accepted: ``raw_dir/<name>/<name>.npz`` (DGL's
        archive), ``raw_dir/<name>.npz``, and the upstream file name (e.g.
        ``ms_academic_cs.npz``) in ``raw_dir``, ``raw_dir/npz`` or
        ``raw_dir/<name>``. Default: ``$MPGRAPH_DOWNLOAD_DIR`` or ``~/.mpgraph``.
    force_reload : bool, optional
        Default: ``False``.
    verbose : bool, optional
        Default: ``False``.
    transform : callable, optional
        Applied to the graph on every access. Default: ``None``.
    """

    #: DGL's dataset name -> file name in github.com/shchur/gnn-benchmark (data/npz/).
    _upstream = {
        "cora_full": "cora_full.npz",
        "amazon_co_buy_computer": "amazon_electronics_computers.npz",
        "amazon_co_buy_photo": "amazon_electronics_photo.npz",
        "coauthor_cs": "ms_academic_cs.npz",
        "coauthor_physics": "ms_academic_phy.npz",
    }
    _source_hint = "github.com/shchur/gnn-benchmark (data/npz/)"

    def _raw_layouts(self):
        name, up = self.name, self._upstream[self.name]
        rels = [os.path.join(name, name + ".npz"), name + ".npz", up, os.path.join("npz", up), os.path.join(name, up)]
        return [{"npz": rel} for rel in dict.fromkeys(rels)]

    def process(self):
        """Read the npz and build the graph."""
        arrays = _read_sparse_graph_npz(self.raw_files["npz"])
        self._num_classes = int(arrays["label"].max()) + 1
        self._g = graph_from_arrays(arrays, [k for k in ("feat", "label") if k in arrays])
        self._print_info()

    @property
    def num_classes(self):
        """Number of classes (``max(label) + 1``)."""
        return self._num_classes

    def __getitem__(self, idx):
        """Return the graph (``idx`` must be 0).

        Its ``ndata``: ``feat`` ``(N, D)`` float32 and ``label`` ``(N,)`` int64.
        """
        return super().__getitem__(idx)


def _doc(name, stats):
    """Docstring of a gnn-benchmark dataset class."""
    return f"""{stats}

    The raw file is ``{GNNBenchmarkDataset._upstream[name]}`` from gnn-benchmark, or DGL's
    ``{name}.zip``; see :class:`GNNBenchmarkDataset` for the accepted layouts.

    Parameters
    ----------
    raw_dir : str, optional
        Directory with the npz, or where to download. Default: ``$MPGRAPH_DOWNLOAD_DIR`` or ``~/.mpgraph``.
    force_reload : bool, optional
        Default: ``False``.
    verbose : bool, optional
        Default: ``False``.
    transform : callable, optional
        Applied to the graph on every access. Default: ``None``.
    """


class CoraFullDataset(GNNBenchmarkDataset):
    __doc__ = _doc(
        "cora_full",
        "Extended Cora citation graph. DGL's statistics: 19,793 nodes, 126,842 edges, 8,710 features, 70 classes.",
    )
    __init__ = partialmethod(GNNBenchmarkDataset.__init__, "cora_full")


class AmazonCoBuyComputerDataset(GNNBenchmarkDataset):
    __doc__ = _doc(
        "amazon_co_buy_computer",
        "Amazon Computers co-purchase graph. DGL's statistics: 13,752 nodes, 491,722 edges, 767 features, "
        "10 classes.",
    )
    __init__ = partialmethod(GNNBenchmarkDataset.__init__, "amazon_co_buy_computer")


class AmazonCoBuyPhotoDataset(GNNBenchmarkDataset):
    __doc__ = _doc(
        "amazon_co_buy_photo",
        "Amazon Photo co-purchase graph. DGL's statistics: 7,650 nodes, 238,163 edges, 745 features, 8 classes.",
    )
    __init__ = partialmethod(GNNBenchmarkDataset.__init__, "amazon_co_buy_photo")


class CoauthorCSDataset(GNNBenchmarkDataset):
    __doc__ = _doc(
        "coauthor_cs",
        "Coauthor CS co-authorship graph. DGL's statistics: 18,333 nodes, 163,788 edges, 6,805 features, "
        "15 classes.",
    )
    __init__ = partialmethod(GNNBenchmarkDataset.__init__, "coauthor_cs")


class CoauthorPhysicsDataset(GNNBenchmarkDataset):
    __doc__ = _doc(
        "coauthor_physics",
        "Coauthor Physics co-authorship graph. DGL's statistics: 34,493 nodes, 495,924 edges, 8,415 features, "
        "5 classes.",
    )
    __init__ = partialmethod(GNNBenchmarkDataset.__init__, "coauthor_physics")
