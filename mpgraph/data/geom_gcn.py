"""Heterophilous node-classification graphs of Geom-GCN (Pei et al., ICLR 2020), with their 10 splits.

WebKB (Cornell, Texas, Wisconsin), Wikipedia (Chameleon, Squirrel) and Actor
(called ``film`` upstream), processed as DGL's ``geom_gcn.py`` and ``actor.py``:
each line ``a<TAB>b`` of ``out1_graph_edges.txt`` becomes the edge ``b -> a``
(edges are not symmetrised and duplicates are kept), and the 10 random
60/20/20 splits are stacked into masks of shape ``(N, 10)``.
"""

import os
from functools import partialmethod

import numpy as np

from ..base import DGLError
from ._process import make_graph
from .dgl_dataset import _DGLArchiveDataset

__all__ = [
    "GeomGCNDataset",
    "CornellDataset",
    "TexasDataset",
    "WisconsinDataset",
    "ChameleonDataset",
    "SquirrelDataset",
    "ActorDataset",
]

_NUM_SPLITS = 10


def _read_node_file(path, sparse_index_features):
    """Parse ``out1_node_feature_label.txt``.

    Parameters
    ----------
    path : str
        Header line, then ``node_id<TAB>features<TAB>label`` per node.
    sparse_index_features : bool
        ``True`` (Actor): ``features`` lists the indices of the 1-entries.
        ``False``: ``features`` is the dense comma-separated vector.

    Returns
    -------
    tuple of numpy.ndarray
        ``feat`` ``(N, D)`` float32 and ``label`` ``(N,)`` int64, in node-ID order.
    """
    with open(path) as f:
        rows = [line.rstrip("\n").split("\t") for line in f.read().split("\n")[1:] if line.strip()]
    n = len(rows)
    ids = np.array([int(r[0]) for r in rows], dtype=np.int64)
    if n == 0 or np.any(np.sort(ids) != np.arange(n)):
        raise DGLError(f"expected node IDs 0..{n - 1} in {path}, got {n} rows with other IDs; re-download the file")
    label = np.empty(n, dtype=np.int64)
    label[ids] = [int(r[2]) for r in rows]
    if sparse_index_features:
        cols = [np.array(r[1].split(","), dtype=np.int64) if r[1] else np.empty(0, np.int64) for r in rows]
        num_feats = int(max((c.max() for c in cols if c.size), default=-1)) + 1
        feat = np.zeros((n, num_feats), dtype=np.float32)
        row_idx = np.repeat(ids, [c.size for c in cols])
        feat[row_idx, np.concatenate(cols)] = 1.0
    else:
        dense = np.array([r[1].split(",") for r in rows], dtype=np.float32)
        feat = np.empty_like(dense)
        feat[ids] = dense
    return feat, label


def _read_edge_file(path, num_nodes):
    """Parse ``out1_graph_edges.txt``: a header, then ``a<TAB>b`` per line, read as the edge ``b -> a``.

    Returns
    -------
    tuple of numpy.ndarray
        ``src, dst`` of shape ``(E,)``, int64, in file order.
    """
    pairs = np.loadtxt(path, dtype=np.int64, skiprows=1, delimiter="\t", ndmin=2)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= num_nodes):
        raise DGLError(f"expected node IDs in [0, {num_nodes}) in {path}, got [{pairs.min()}, {pairs.max()}]")
    return pairs[:, 1].copy(), pairs[:, 0].copy()


def _read_splits(paths, num_nodes):
    """Stack the ``train/val/test`` masks of the split files into ``(N, K)`` bool arrays."""
    masks = {"train_mask": [], "val_mask": [], "test_mask": []}
    for path in paths:
        with np.load(path) as f:
            for key in masks:
                m = np.asarray(f[key]).astype(bool)
                if m.shape != (num_nodes,):
                    raise DGLError(f"expected {key} of shape ({num_nodes},) in {path}, got {m.shape}")
                masks[key].append(m)
    return {k: np.stack(v, axis=1) for k, v in masks.items()}


class GeomGCNDataset(_DGLArchiveDataset):
    r"""Base of the Geom-GCN datasets: one directed graph, node classification, 10 splits.

    Parameters
    ----------
    name : str
        DGL's name: ``'cornell'``, ``'texas'``, ``'wisconsin'``, ``'chameleon'``,
        ``'squirrel'`` or ``'actor'``.
    raw_dir : str, optional
        Directory with the raw files. Accepted layouts: DGL's archive
        (``raw_dir/<name>/out1_*.txt`` and ``raw_dir/<name>/<name>_split_0.6_0.2_<i>.npz``),
        the Geom-GCN repository (``raw_dir/new_data/<name>/out1_*.txt`` and
        ``raw_dir/splits/<name>_split_0.6_0.2_<i>.npz``; Actor is ``film`` there),
        and all files directly in ``raw_dir``. Default: ``$MPGRAPH_DOWNLOAD_DIR``
        or ``~/.mpgraph``.
    force_reload : bool, optional
        Default: ``False``.
    verbose : bool, optional
        Default: ``True``.
    transform : callable, optional
        Applied to the graph on every access. Default: ``None``.

    Notes
    -----
    The graph holds each listed edge once, in one direction, duplicates and
    self-loops included. The graph's ``ndata`` has ``feat`` ``(N, D)`` float32,
    ``label`` ``(N,)`` int64, and ``train_mask``/``val_mask``/``test_mask``
    ``(N, 10)`` bool (column ``i`` is split ``i``).
    """

    _upstream = {"cornell": "cornell", "texas": "texas", "wisconsin": "wisconsin", "chameleon": "chameleon",
                 "squirrel": "squirrel", "actor": "film"}
    _source_hint = "github.com/graphdml-uiuc-jlu/geom-gcn (new_data/ and splits/)"

    def __init__(self, name, raw_dir=None, force_reload=False, verbose=True, transform=None):
        super().__init__(name, raw_dir, force_reload, verbose, transform)

    def _raw_layouts(self):
        name, up = self.name, self._upstream[self.name]

        def layout(data_dir, split_dir, split_name):
            out = {"edges": os.path.join(data_dir, "out1_graph_edges.txt"),
                   "nodes": os.path.join(data_dir, "out1_node_feature_label.txt")}
            for i in range(_NUM_SPLITS):
                out[f"split{i}"] = os.path.join(split_dir, f"{split_name}_split_0.6_0.2_{i}.npz")
            return out

        layouts = [
            layout(name, name, name),
            layout(os.path.join("new_data", up), "splits", up),
            layout("", "", name),
        ]
        if up != name:
            layouts += [layout(name, name, up), layout("", "", up)]
        return layouts

    def process(self):
        """Read the raw files and build the graph."""
        feat, label = _read_node_file(self.raw_files["nodes"], sparse_index_features=self.name == "actor")
        num_nodes = feat.shape[0]
        src, dst = _read_edge_file(self.raw_files["edges"], num_nodes)
        masks = _read_splits([self.raw_files[f"split{i}"] for i in range(_NUM_SPLITS)], num_nodes)
        self._num_classes = int(label.max()) + 1
        self._g = make_graph(src, dst, num_nodes, {"feat": feat, "label": label, **masks})
        self._print_info()

    def _print_info(self):
        if self.verbose:
            g = self._g
            print(f"  NumNodes: {g.num_nodes()}\n  NumEdges: {g.num_edges()}\n"
                  f"  NumFeats: {g.ndata['feat'].shape[1]}\n  NumClasses: {self.num_classes}\n"
                  f"  NumSplits: {g.ndata['train_mask'].shape[1]}")

    @property
    def num_classes(self):
        """Number of classes (``max(label) + 1``; 5 for every Geom-GCN dataset)."""
        return self._num_classes


def _doc(title, stats):
    """Docstring of a Geom-GCN dataset class."""
    return f"""{title}

    Statistics (as DGL's docs): {stats}

    Parameters
    ----------
    raw_dir : str, optional
        Directory with the raw files (see :class:`GeomGCNDataset` for the layouts), or
        where to download. Default: ``$MPGRAPH_DOWNLOAD_DIR`` or ``~/.mpgraph``.
    force_reload : bool, optional
        Default: ``False``.
    verbose : bool, optional
        Default: ``True``.
    transform : callable, optional
        Applied to the graph on every access. Default: ``None``.

    Notes
    -----
    The graph does not come with edges for both directions. Masks have shape ``(N, 10)``.
    """


class CornellDataset(GeomGCNDataset):
    __doc__ = _doc("Cornell web pages (WebKB), by Geom-GCN.",
                   "183 nodes, 298 edges, 1703 features, 5 classes; split 0 train/val/test 87/59/37.")
    __init__ = partialmethod(GeomGCNDataset.__init__, "cornell")


class TexasDataset(GeomGCNDataset):
    __doc__ = _doc("Texas web pages (WebKB), by Geom-GCN.",
                   "183 nodes, 325 edges, 1703 features, 5 classes; split 0 train/val/test 87/59/37.")
    __init__ = partialmethod(GeomGCNDataset.__init__, "texas")


class WisconsinDataset(GeomGCNDataset):
    __doc__ = _doc("Wisconsin web pages (WebKB), by Geom-GCN.",
                   "251 nodes, 515 edges, 1703 features, 5 classes; split 0 train/val/test 120/80/51.")
    __init__ = partialmethod(GeomGCNDataset.__init__, "wisconsin")


class ChameleonDataset(GeomGCNDataset):
    __doc__ = _doc("Wikipedia chameleon page-page network, by Geom-GCN.",
                   "2277 nodes, 36101 edges, 5 classes; train/val/test 1092/729/456.")
    __init__ = partialmethod(GeomGCNDataset.__init__, "chameleon")


class SquirrelDataset(GeomGCNDataset):
    __doc__ = _doc("Wikipedia squirrel page-page network, by Geom-GCN.",
                   "5201 nodes, 217073 edges, 5 classes; train/val/test 2496/1664/1041.")
    __init__ = partialmethod(GeomGCNDataset.__init__, "squirrel")


class ActorDataset(GeomGCNDataset):
    __doc__ = _doc("Actor co-occurrence network (``film`` in Geom-GCN); features are index lists.",
                   "7600 nodes, 33391 edges, 932 features, 5 classes; train/val/test 3648/2432/1520.")
    __init__ = partialmethod(GeomGCNDataset.__init__, "actor")
