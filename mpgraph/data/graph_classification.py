"""A generated graph-classification dataset: small graphs of several structural families."""

import numpy as np
import torch

from ..base import DGLError
from ..convert import graph as _graph
from ._process import unique_edges
from .csbm import _check_number
from .dgl_dataset import _GeneratedDataset

__all__ = ["SyntheticGraphClassification"]

#: Graph families, in class-label order.
FAMILIES = ("cycle", "tree", "grid", "ladder")


def _cycle(n, rng):
    u = np.arange(n)
    return u, (u + 1) % n, n


def _tree(n, rng):
    """Random recursive tree: node ``i`` hangs from a uniform earlier node."""
    child = np.arange(1, n)
    parent = (rng.random(n - 1) * child).astype(np.int64)
    return parent, child, n


def _lattice(rows, cols):
    ids = np.arange(rows * cols).reshape(rows, cols)
    right = (ids[:, :-1].ravel(), ids[:, 1:].ravel())
    down = (ids[:-1, :].ravel(), ids[1:, :].ravel())
    return np.concatenate([right[0], down[0]]), np.concatenate([right[1], down[1]]), rows * cols


def _grid(n, rng):
    """A ``rows x cols`` lattice with ``rows, cols >= 3`` and about ``n`` nodes."""
    rows = int(rng.integers(3, max(3, int(np.sqrt(n))) + 1))
    return _lattice(rows, max(3, int(round(n / rows))))


def _ladder(n, rng):
    """A ``2 x (n / 2)`` lattice."""
    return _lattice(2, max(3, n // 2))


_BUILDERS = {"cycle": _cycle, "tree": _tree, "grid": _grid, "ladder": _ladder}


def _make_graph(family, n, noise, feature, max_degree, rng):
    """One undirected graph (both edge directions), randomly relabelled, with ``ndata['feat']``."""
    u, v, num_nodes = _BUILDERS[family](n, rng)
    extra = int(rng.binomial(len(u), noise)) if noise > 0 else 0
    if extra:
        a = rng.integers(0, num_nodes, size=extra)
        b = rng.integers(0, num_nodes, size=extra)
        keep = a != b
        u, v = np.concatenate([u, a[keep]]), np.concatenate([v, b[keep]])
    lo, hi = unique_edges(np.minimum(u, v), np.maximum(u, v), num_nodes)  # distinct undirected edges
    perm = rng.permutation(num_nodes)                        # node order must not reveal the class
    src = np.concatenate([perm[lo], perm[hi]])
    dst = np.concatenate([perm[hi], perm[lo]])
    g = _graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=num_nodes)
    if feature == "degree":
        deg = np.minimum(np.bincount(dst, minlength=num_nodes), max_degree)
        feat = np.zeros((num_nodes, max_degree + 1), dtype=np.float32)
        feat[np.arange(num_nodes), deg] = 1.0
    else:
        feat = np.ones((num_nodes, 1), dtype=np.float32)
    g.ndata["feat"] = torch.from_numpy(feat)
    return g


class SyntheticGraphClassification(_GeneratedDataset):
    r"""Small graphs of several structural families, labelled by family.

    Class ``c`` is family ``FAMILIES[c]`` of ``('cycle', 'tree', 'grid',
    'ladder')``: a cycle of ``n`` nodes, a random recursive tree of ``n`` nodes,
    a ``r x c`` lattice with ``r, c >= 3`` and about ``n`` nodes, or a
    ``2 x (n / 2)`` ladder; ``n`` is uniform in ``[min_nodes, max_nodes]``.
    Each graph then gets ``Binomial(E, noise)`` random extra edges
    (``E`` = its edge count; self-loops and duplicates dropped) and a random
    node order. Edges are stored in both directions. Labels are balanced and
    shuffled. Everything is drawn from ``numpy.random.default_rng(seed)``:
    equal arguments give equal graphs.

    Parameters
    ----------
    num_graphs : int, optional
        Number of graphs. Default: 300.
    num_classes : int, optional
        Number of families used, 2 to 4. Default: 3.
    min_nodes, max_nodes : int, optional
        Node-count range (at least 6; grids and ladders round to their shape).
        Default: 8 and 24.
    noise : float, optional
        Expected extra edges per edge, in ``[0, 1]``. Default: 0.1.
    feature : str, optional
        ``'degree'``: one-hot of the degree, clipped at ``max_degree``
        (``(n, max_degree + 1)`` float32); ``'constant'``: ones ``(n, 1)``.
        Default: ``'degree'``.
    max_degree : int, optional
        Largest degree with its own one-hot column. Default: 6.
    seed : int, optional
        Random seed. Default: 0.
    verbose : bool, optional
        Print statistics. Default: ``False``.
    transform : callable, optional
        Applied to the graph of every item on access. Default: ``None``.

    Attributes
    ----------
    graphs : list of Graph
        The graphs, ``ndata['feat']`` float32.
    labels : Tensor
        ``(num_graphs,)`` int64 class labels.

    Raises
    ------
    DGLError
        A parameter out of range.

    Examples
    --------
    >>> from mpgraph.data.graph_classification import SyntheticGraphClassification
    >>> ds = SyntheticGraphClassification(num_graphs=6, seed=1)
    >>> len(ds), ds.num_classes, ds.dim_nfeats
    (6, 3, 7)
    >>> g, label = ds[0]
    >>> g.ndata['feat'].shape[1], label.dtype
    (7, torch.int64)
    >>> sorted(ds.labels.tolist())
    [0, 0, 1, 1, 2, 2]
    """

    def __init__(self, num_graphs=300, num_classes=3, min_nodes=8, max_nodes=24, noise=0.1, feature="degree",
                 max_degree=6, seed=0, verbose=False, transform=None):
        _check_number("num_graphs", num_graphs, 1, integer=True)
        _check_number("num_classes", num_classes, 2, len(FAMILIES), integer=True)
        _check_number("min_nodes", min_nodes, 6, integer=True)
        _check_number("max_nodes", max_nodes, min_nodes, integer=True)
        _check_number("noise", noise, 0, 1)
        _check_number("max_degree", max_degree, 1, integer=True)
        _check_number("seed", seed, 0, integer=True)
        if feature not in ("degree", "constant"):
            raise DGLError(f"expected feature 'degree' or 'constant', got {feature!r}")
        self._args = dict(num_graphs=num_graphs, num_classes=num_classes, min_nodes=min_nodes, max_nodes=max_nodes,
                          noise=noise, feature=feature, max_degree=max_degree, seed=seed)
        super().__init__("synthetic_graph_classification", hash_key=tuple(self._args.values()), verbose=verbose,
                         transform=transform)

    def process(self):
        """Generate the graphs and labels."""
        a = self._args
        rng = np.random.default_rng(a["seed"])
        labels = rng.permutation(np.arange(a["num_graphs"]) % a["num_classes"])
        self.graphs = []
        for c in labels:
            n = int(rng.integers(a["min_nodes"], a["max_nodes"] + 1))
            self.graphs.append(_make_graph(FAMILIES[c], n, a["noise"], a["feature"], a["max_degree"], rng))
        self.labels = torch.from_numpy(labels.astype(np.int64))
        if self.verbose:
            nodes = [g.num_nodes() for g in self.graphs]
            print(f"  NumGraphs: {len(self.graphs)}\n  NumClasses: {a['num_classes']}\n"
                  f"  AvgNodes: {np.mean(nodes):.1f}\n  AvgEdges: {np.mean([g.num_edges() for g in self.graphs]):.1f}")

    def __getitem__(self, idx):
        """``(graph, label)`` of graph ``idx`` (label a 0-d int64 tensor)."""
        if isinstance(idx, bool) or not isinstance(idx, (int, np.integer)) or not -len(self) <= idx < len(self):
            raise IndexError(f"expected an int index in [{-len(self)}, {len(self)}), got {idx!r}")
        g = self.graphs[idx]
        return (g if self._transform is None else self._transform(g)), self.labels[idx]

    def __len__(self):
        """Number of graphs."""
        return len(self.graphs)

    @property
    def num_classes(self):
        """Number of classes."""
        return self._args["num_classes"]

    @property
    def gclasses(self):
        """Number of classes (DGL's ``GINDataset`` name)."""
        return self.num_classes

    @property
    def dim_nfeats(self):
        """Width of ``ndata['feat']``."""
        return self._args["max_degree"] + 1 if self._args["feature"] == "degree" else 1

    def __repr__(self):
        return f'Dataset("{self.name}", num_graphs={len(self)}, hash={self.hash})'
