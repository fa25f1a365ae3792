"""Cora, Citeseer and Pubmed citation graphs (Planetoid split), processed as DGL does.

The raw data are the Planetoid ``ind.<name>.<obj>`` files (Yang et al., ICML 2016;
github.com/kimiyoung/planetoid). Processing follows Kipf's GCN loader, as DGL's
``citation_graph.py`` does: test rows are put back in graph order, Citeseer's
isolated test ids get zero feature rows, features are row-normalised, and the
adjacency is made symmetric. DGL keeps self-loops (Citeseer has 124, Pubmed 3),
so the edge counts below include them.
"""

import io
import os
import pickle
from functools import partialmethod

import numpy as np

from ..base import DGLError
from ._process import bidirected_edges, graph_from_arrays, sort_by_dst, unique_edges
from .dgl_dataset import _DGLArchiveDataset

__all__ = ["CitationGraphDataset", "CoraGraphDataset", "CiteseerGraphDataset", "PubmedGraphDataset"]

_OBJECTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")


# -- safe reading of the Python-2 pickles ------------------------------------------------------------------------
def _allowed_globals():
    import scipy.sparse as sp

    try:
        from numpy._core.multiarray import _reconstruct
    except ImportError:  # numpy < 2
        from numpy.core.multiarray import _reconstruct
    import collections

    sparse = {"csr_matrix": sp.csr_matrix, "csc_matrix": sp.csc_matrix, "coo_matrix": sp.coo_matrix,
              "lil_matrix": sp.lil_matrix}
    allowed = {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        ("collections", "defaultdict"): collections.defaultdict,
        ("collections", "OrderedDict"): collections.OrderedDict,
    }
    for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        allowed[(module, "_reconstruct")] = _reconstruct
    for module in ("scipy.sparse", "scipy.sparse.csr", "scipy.sparse._csr", "scipy.sparse.csc", "scipy.sparse._csc",
                   "scipy.sparse.coo", "scipy.sparse._coo", "scipy.sparse.lil", "scipy.sparse._lil"):
        for name, cls in sparse.items():
            allowed[(module, name)] = cls
    for module in ("__builtin__", "builtins"):
        for name, obj in (("list", list), ("dict", dict), ("set", set), ("tuple", tuple), ("int", int),
                          ("float", float), ("long", int)):
            allowed[(module, name)] = obj
    return allowed


class _PlanetoidUnpickler(pickle.Unpickler):
    """Unpickler that resolves only numpy arrays, scipy sparse matrices and builtin containers.

    The Planetoid files are pickles from a download; refusing other globals means a
    tampered file cannot run code when it is read.
    """

    _allowed = None

    def find_class(self, module, name):
        if _PlanetoidUnpickler._allowed is None:
            _PlanetoidUnpickler._allowed = _allowed_globals()
        try:
            return _PlanetoidUnpickler._allowed[(module, name)]
        except KeyError:
            raise DGLError(
                f"expected a Planetoid pickle of numpy/scipy objects, got a reference to {module}.{name}; "
                "the file is not a Planetoid file (re-download it)"
            ) from None


def _pickle_load(path):
    with open(path, "rb") as f:
        return _PlanetoidUnpickler(io.BytesIO(f.read()), encoding="latin1").load()


def _parse_index_file(path):
    with open(path) as f:
        return np.array([int(line) for line in f if line.strip()], dtype=np.int64)


# -- array-level processing (no graph needed) -------------------------------------------------------------------
def _planetoid_paths(directory, prefix):
    """``{obj: directory/ind.<prefix>.<obj>}`` for the eight Planetoid objects."""
    return {obj: os.path.join(directory, f"ind.{prefix}.{obj}") for obj in _OBJECTS}


def _planetoid_edges(graph_dict, num_nodes, reverse_edge=True):
    """Edge arrays of a Planetoid ``{node: [neighbours]}`` dict.

    Parameters
    ----------
    graph_dict : dict of int to list of int
        The ``ind.<name>.graph`` object.
    num_nodes : int
        ``N``; every ID must be below it.
    reverse_edge : bool
        ``True``: both directions of every edge, each pair once, self-loops once
        (DGL's ``nx.DiGraph(nx.from_dict_of_lists(...))``), sorted by destination.
        ``False``: each undirected edge once, as ``src <= dst``.

    Returns
    -------
    tuple of numpy.ndarray
        ``src, dst`` of shape ``(E,)``, int64.
    """
    counts = np.fromiter((len(v) for v in graph_dict.values()), dtype=np.int64, count=len(graph_dict))
    u = np.repeat(np.fromiter(graph_dict.keys(), dtype=np.int64, count=len(graph_dict)), counts)
    v = np.fromiter((w for nbrs in graph_dict.values() for w in nbrs), dtype=np.int64, count=int(counts.sum()))
    ids = np.concatenate([u, v, np.fromiter(graph_dict.keys(), dtype=np.int64, count=len(graph_dict))])
    if ids.size and (ids.min() < 0 or ids.max() >= num_nodes):
        raise DGLError(
            f"expected node IDs in [0, {num_nodes}) in the Planetoid graph file, got range "
            f"[{ids.min()}, {ids.max()}]; the raw files do not belong together (re-download them)"
        )
    if reverse_edge:
        src, dst = bidirected_edges(u, v, num_nodes)
        order = sort_by_dst(src, dst)
        return src[order], dst[order]
    return unique_edges(np.minimum(u, v), np.maximum(u, v), num_nodes)


def _test_reorder(test_idx, num_base):
    """Row gather that puts ``tx``/``ty`` rows in graph order; pad size for missing test ids.

    Returns
    -------
    tuple
        ``(test_sorted, num_test_rows, perm)``: the sorted test IDs; the number of
        rows the test block needs (``max - min + 1``; Citeseer has 15 more than
        it has ``tx`` rows); and ``perm`` of shape ``(N,)`` with
        ``rows_in_graph_order = rows[perm]``.
    """
    test_sorted = np.sort(test_idx)
    lo, hi = int(test_sorted[0]), int(test_sorted[-1])
    if lo != num_base:
        raise DGLError(
            f"expected test IDs to start right after the {num_base} allx/ally rows, got {lo}; "
            "the raw files do not belong together (re-download them)"
        )
    num_test_rows = hi - lo + 1
    perm = np.arange(num_base + num_test_rows, dtype=np.int64)
    perm[test_idx] = test_sorted
    return test_sorted, num_test_rows, perm


def _pad_test_rows(rows, test_sorted, num_test_rows):
    """Place ``rows`` (one per sorted test ID) into a zero block of ``num_test_rows`` rows."""
    import scipy.sparse as sp

    if rows.shape[0] == num_test_rows:
        return rows
    at = test_sorted - test_sorted[0]
    if sp.issparse(rows):
        rows = rows.tocoo()
        return sp.csr_matrix((rows.data, (at[rows.row], rows.col)), shape=(num_test_rows, rows.shape[1]))
    out = np.zeros((num_test_rows, rows.shape[1]), dtype=rows.dtype)
    out[at] = rows
    return out


def _row_normalize(features):
    """Dense float32 ``D^-1 X`` with row sums ``D``; all-zero rows stay zero. Shape ``(N, D)``."""
    features = features.tocsr().astype(np.float64)
    rowsum = np.asarray(features.sum(axis=1)).ravel()
    with np.errstate(divide="ignore"):
        r_inv = np.where(rowsum != 0, 1.0 / rowsum, 0.0)
    features = features.multiply(r_inv[:, None]).tocsr()
    return np.asarray(features.todense(), dtype=np.float32)


def _read_planetoid(paths, reverse_edge=True, need_features=True):
    """Read and process Planetoid files into arrays, as DGL does.

    Parameters
    ----------
    paths : dict of str to str
        Path of each object in ``("x", "y", "tx", "ty", "allx", "ally", "graph",
        "test.index")``; ``"x"``, ``"tx"`` and ``"allx"`` are read only when
        ``need_features``.
    reverse_edge : bool, optional
        See :func:`_planetoid_edges`. Default: ``True``.
    need_features : bool, optional
        Read and row-normalise the features. Default: ``True``.

    Returns
    -------
    dict
        ``src``, ``dst`` (``(E,)`` int64), ``num_nodes`` (int), ``num_classes`` (int),
        ``label`` (``(N,)`` int64), ``train_mask``/``val_mask``/``test_mask``
        (``(N,)`` bool) and, with ``need_features``, ``feat`` (``(N, D)`` float32).
    """
    import scipy.sparse as sp

    y = _pickle_load(paths["y"])
    ty = _pickle_load(paths["ty"])
    ally = _pickle_load(paths["ally"])
    graph_dict = _pickle_load(paths["graph"])
    test_idx = _parse_index_file(paths["test.index"])

    test_sorted, num_test_rows, perm = _test_reorder(test_idx, ally.shape[0])
    onehot = np.vstack([ally, _pad_test_rows(np.asarray(ty), test_sorted, num_test_rows)])[perm]
    labels = np.argmax(onehot, axis=1).astype(np.int64)
    num_nodes = labels.shape[0]

    out = {"num_nodes": num_nodes, "num_classes": int(onehot.shape[1]), "label": labels}
    out["src"], out["dst"] = _planetoid_edges(graph_dict, num_nodes, reverse_edge)
    for key, index in (("train_mask", np.arange(len(y))),
                       ("val_mask", np.arange(len(y), len(y) + 500)),
                       ("test_mask", test_sorted)):
        mask = np.zeros(num_nodes, dtype=bool)
        mask[index] = True
        out[key] = mask
    if need_features:
        tx = _pickle_load(paths["tx"])
        allx = _pickle_load(paths["allx"])
        features = sp.vstack([allx, _pad_test_rows(tx, test_sorted, num_test_rows)]).tocsr()[perm]
        out["feat"] = _row_normalize(features)
    return out


# -- datasets --------------------------------------------------------------------------------------------------
class CitationGraphDataset(_DGLArchiveDataset):
    r"""A Planetoid citation graph: ``'cora'``, ``'citeseer'`` or ``'pubmed'``.

    Nodes are papers, edges are citations (made symmetric), features are
    row-normalised bag-of-words vectors, and the task is to predict each paper's
    topic with the fixed Planetoid split (20 labelled nodes per class, 500
    validation nodes, 1000 test nodes).

    Parameters
    ----------
    name : str
        ``'cora'``, ``'citeseer'`` or ``'pubmed'``.
    raw_dir : str, optional
        Directory that holds the raw files, or where to download them. Accepted
        layouts: ``raw_dir/ind.<name>.*``, ``raw_dir/<name>/ind.<name>.*`` and
        DGL's extracted archive (``raw_dir/cora_v2/ind.cora_v2.*`` for Cora).
        Default: ``$MPGRAPH_DOWNLOAD_DIR`` or ``~/.mpgraph``.
    force_reload : bool, optional
        Process again even if cached. Default: ``False``.
    verbose : bool, optional
        Print statistics. Default: ``True``.
    reverse_edge : bool, optional
        Store each edge in both directions. Default: ``True``. With ``False``,
        every undirected edge is stored once.
    transform : callable, optional
        Applied to the graph on every access. Default: ``None``.

    Raises
    ------
    DGLError
        If the name is unknown, or the raw files are missing and cannot be
        downloaded (the message lists the files and where to put them).
    """

    _source_hint = "github.com/kimiyoung/planetoid (folder data/)"

    def __init__(self, name, raw_dir=None, force_reload=False, verbose=True, reverse_edge=True, transform=None):
        plain = str(name).lower()
        if plain not in ("cora", "citeseer", "pubmed"):
            raise DGLError(f"expected name 'cora', 'citeseer' or 'pubmed', got {name!r}")
        self._plain_name = plain
        # DGL names its Cora archive cora_v2 (the GCN paper's Planetoid version).
        dgl_name = "cora_v2" if plain == "cora" else plain
        self._reverse_edge = reverse_edge
        super().__init__(dgl_name, raw_dir, force_reload, verbose, transform)

    def _raw_layouts(self):
        plain, dgl_name = self._plain_name, self.name
        # The first layout names the files in error messages: the Planetoid names.
        candidates = [(dgl_name, plain), (dgl_name, dgl_name), ("", plain), (plain, plain), ("", dgl_name)]
        seen, layouts = set(), []
        for directory, prefix in candidates:
            if (directory, prefix) in seen:
                continue
            seen.add((directory, prefix))
            layouts.append({obj: os.path.join(directory, f"ind.{prefix}.{obj}") for obj in _OBJECTS})
        return layouts

    def process(self):
        """Read the raw files and build the graph."""
        arrays = _read_planetoid(self.raw_files, reverse_edge=self._reverse_edge)
        self._num_classes = arrays["num_classes"]
        self._g = graph_from_arrays(arrays, ("train_mask", "val_mask", "test_mask", "label", "feat"))
        self._print_info()

    @property
    def num_classes(self):
        """Number of label classes (Cora 7, Citeseer 6, Pubmed 3)."""
        return self._num_classes

    @property
    def num_labels(self):
        """Deprecated alias of :attr:`num_classes` (kept for DGL code)."""
        return self._num_classes

    @property
    def reverse_edge(self):
        """Whether each edge is stored in both directions."""
        return self._reverse_edge

    def __getitem__(self, idx):
        """Return the graph.

        Parameters
        ----------
        idx : int
            Must be 0.

        Returns
        -------
        mpgraph.Graph
            With ``ndata``: ``feat`` ``(N, D)`` float32 (row-normalised),
            ``label`` ``(N,)`` int64, ``train_mask``/``val_mask``/``test_mask``
            ``(N,)`` bool.
        """
        return super().__getitem__(idx)


class CoraGraphDataset(CitationGraphDataset):
    r"""Cora citation network (Planetoid split), as DGL's ``CoraGraphDataset``.

    Statistics: 2708 nodes, 10556 edges, 1433 features, 7 classes;
    train/val/test 140/500/1000.

    Parameters
    ----------
    raw_dir : str, optional
        Directory with ``ind.cora.*`` (or DGL's ``cora_v2/ind.cora_v2.*``), or
        where to download. Default: ``$MPGRAPH_DOWNLOAD_DIR`` or ``~/.mpgraph``.
    force_reload : bool, optional
        Default: ``False``.
    verbose : bool, optional
        Default: ``True``.
    reverse_edge : bool, optional
        Default: ``True`` (5278 undirected edges stored as 10556 directed ones).
    transform : callable, optional
        Applied to the graph on every access. Default: ``None``.

    Examples
    --------
    >>> dataset = CoraGraphDataset(raw_dir="/path/to/planetoid")  # doctest: +SKIP
    >>> g = dataset[0]                                             # doctest: +SKIP
    >>> g.ndata["feat"].shape, dataset.num_classes                 # doctest: +SKIP
    (torch.Size([2708, 1433]), 7)
    """

    __init__ = partialmethod(CitationGraphDataset.__init__, "cora")


class CiteseerGraphDataset(CitationGraphDataset):
    r"""Citeseer citation network (Planetoid split), as DGL's ``CiteseerGraphDataset``.

    Statistics: 3327 nodes, 9228 edges (124 of them self-loops), 3703 features,
    6 classes; train/val/test 120/500/1000. The 15 test ids without a ``tx`` row
    are isolated nodes with zero features and label 0, as in DGL.

    Parameters
    ----------
    raw_dir : str, optional
        Directory with ``ind.citeseer.*`` (or ``citeseer/ind.citeseer.*``), or where
        to download. Default: ``$MPGRAPH_DOWNLOAD_DIR`` or ``~/.mpgraph``.
    force_reload : bool, optional
        Default: ``False``.
    verbose : bool, optional
        Default: ``True``.
    reverse_edge : bool, optional
        Default: ``True``.
    transform : callable, optional
        Applied to the graph on every access. Default: ``None``.
    """

    __init__ = partialmethod(CitationGraphDataset.__init__, "citeseer")


class PubmedGraphDataset(CitationGraphDataset):
    r"""Pubmed diabetes citation network (Planetoid split), as DGL's ``PubmedGraphDataset``.

    Statistics: 19717 nodes, 88651 edges (3 of them self-loops), 500 features,
    3 classes; train/val/test 60/500/1000.

    Parameters
    ----------
    raw_dir : str, optional
        Directory with ``ind.pubmed.*`` (or ``pubmed/ind.pubmed.*``), or where to
        download. Default: ``$MPGRAPH_DOWNLOAD_DIR`` or ``~/.mpgraph``.
    force_reload : bool, optional
        Default: ``False``.
    verbose : bool, optional
        Default: ``True``.
    reverse_edge : bool, optional
        Default: ``True``.
    transform : callable, optional
        Applied to the graph on every access. Default: ``None``.
    """

    __init__ = partialmethod(CitationGraphDataset.__init__, "pubmed")
