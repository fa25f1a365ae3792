"""Reddit post-to-post graph (Hamilton et al., GraphSAGE, 2017) in DGL's file format."""

import os

import numpy as np

from ..base import DGLError
from ._process import graph_from_arrays, permute_graph_arrays, rcmk_order
from .dgl_dataset import _DGLArchiveDataset

__all__ = ["RedditDataset"]


def _read_reddit(graph_path, data_path, reorder=True):
    """Read DGL's Reddit files into arrays.

    Parameters
    ----------
    graph_path : str
        ``reddit_graph.npz`` (or ``reddit_self_loop_graph.npz``): a
        :func:`scipy.sparse.save_npz` matrix of shape ``(N, N)``; entry ``(u, v)``
        is the edge ``u -> v``.
    data_path : str
        ``reddit_data.npz`` with ``feature`` ``(N, 602)``, ``label`` ``(N,)`` and
        ``node_types`` ``(N,)`` (1 train, 2 validation, 3 test).
    reorder : bool, optional
        Reverse Cuthill-McKee node order and destination-sorted edges, as DGL.
        Default: ``True``.

    Returns
    -------
    dict
        ``src``, ``dst`` (``(E,)`` int64), ``num_nodes``, ``feat`` (``(N, D)``
        float32), ``label`` (``(N,)`` int64), ``train_mask``/``val_mask``/``test_mask``
        (``(N,)`` bool).
    """
    import scipy.sparse as sp

    adj = sp.load_npz(graph_path).tocoo()
    if adj.shape[0] != adj.shape[1]:
        raise DGLError(f"expected a square adjacency in {graph_path}, got shape {adj.shape}")
    num_nodes = adj.shape[0]
    with np.load(data_path, allow_pickle=False) as data:
        missing = {"feature", "label", "node_types"} - set(data.files)
        if missing:
            raise DGLError(f"expected arrays feature, label, node_types in {data_path}, missing {sorted(missing)}")
        feat = np.asarray(data["feature"], dtype=np.float32)
        label = np.asarray(data["label"]).astype(np.int64)
        node_types = np.asarray(data["node_types"])
    if feat.shape[0] != num_nodes or label.shape != (num_nodes,) or node_types.shape != (num_nodes,):
        raise DGLError(
            f"expected feature/label/node_types with {num_nodes} rows (the graph's node count), got "
            f"{feat.shape[0]}/{label.shape[0]}/{node_types.shape[0]}; the two files do not belong together"
        )
    ndata = {
        "train_mask": node_types == 1,
        "val_mask": node_types == 2,
        "test_mask": node_types == 3,
        "feat": feat,
        "label": label,
    }
    src, dst = adj.row.astype(np.int64), adj.col.astype(np.int64)
    if reorder:
        src, dst, ndata = permute_graph_arrays(src, dst, ndata, rcmk_order(src, dst, num_nodes))
    return {"src": src, "dst": dst, "num_nodes": num_nodes, **ndata}


class RedditDataset(_DGLArchiveDataset):
    r"""Reddit posts of September 2014, linked when one user commented on both; predict the subreddit.

    Statistics (DGL's): 232,965 nodes, 114,615,892 edges, 602 features,
    41 classes; train/val/test 153,431/23,831/55,703.

    Parameters
    ----------
    self_loop : bool, optional
        Load the variant with self-loops (``reddit_self_loop_graph.npz``).
        Default: ``False``.
    raw_dir : str, optional
        Directory with ``reddit_graph.npz`` and ``reddit_data.npz``, directly or
        in ``raw_dir/reddit`` (DGL's archive layout; ``raw_dir/reddit_self_loop``
        with ``self_loop=True``), or where to download (about 1.9 GB). Default:
        ``$MPGRAPH_DOWNLOAD_DIR`` or ``~/.mpgraph``.
    force_reload : bool, optional
        Default: ``False``.
    verbose : bool, optional
        Default: ``False``.
    transform : callable, optional
        Applied to the graph on every access. Default: ``None``.

    Notes
    -----
    As in DGL, nodes are put in reverse Cuthill-McKee order and edges sorted by
    destination. The graph's ``ndata``: ``feat`` ``(N, 602)`` float32, ``label``
    ``(N,)`` int64, ``train_mask``/``val_mask``/``test_mask`` ``(N,)`` bool.
    Without the real files, :class:`~mpgraph.data.RedditLikeDataset` generates a
    graph of the same shape.
    """

    _source_hint = "DGL's data server (dataset/reddit.zip), from snap.stanford.edu/graphsage"

    def __init__(self, self_loop=False, raw_dir=None, force_reload=False, verbose=False, transform=None):
        self._self_loop_str = "_self_loop" if self_loop else ""
        super().__init__(f"reddit{self._self_loop_str}", raw_dir, force_reload, verbose, transform)

    def _raw_layouts(self):
        graph_file = f"reddit{self._self_loop_str}_graph.npz"
        return [
            {"graph": os.path.join(self.name, graph_file), "data": os.path.join(self.name, "reddit_data.npz")},
            {"graph": graph_file, "data": "reddit_data.npz"},
        ]

    def process(self):
        """Read the two npz files and build the graph."""
        arrays = _read_reddit(self.raw_files["graph"], self.raw_files["data"])
        self._g = graph_from_arrays(arrays, ("train_mask", "val_mask", "test_mask", "feat", "label"))
        self._print_info()

    @property
    def num_classes(self):
        """Number of classes: 41."""
        return 41
