"""Contextual stochastic block model (Deshpande et al., NeurIPS 2018): a synthetic node-classification graph."""

import math
import numbers

import numpy as np

from ..base import DGLError
from ._process import graph_from_arrays, sample_simple_undirected
from .dgl_dataset import _GeneratedDataset

__all__ = ["CSBMDataset"]


def _split_masks(num_nodes, fractions, rng):
    """Random disjoint boolean masks; sizes ``round(f * N)`` for all but the last, which takes the rest."""
    perm = rng.permutation(num_nodes)
    sizes = [int(round(f * num_nodes)) for f in fractions[:-1]]
    bounds = np.cumsum([0] + sizes + [num_nodes - sum(sizes)])
    masks = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        m = np.zeros(num_nodes, dtype=bool)
        m[perm[lo:hi]] = True
        masks.append(m)
    return masks


def _class_means(num_classes, num_feats, snr, rng):
    """Class means ``(C, D)`` float32: random directions of norm ``snr``."""
    g = rng.standard_normal((num_classes, num_feats))
    g /= np.maximum(np.linalg.norm(g, axis=1, keepdims=True), 1e-12)
    return (snr * g).astype(np.float32)


def _features(label, means, rng, chunk_rows=1 << 14):
    """``means[label] + N(0, I)`` in float32, generated ``chunk_rows`` rows at a time. Shape ``(N, D)``."""
    num_nodes, num_feats = label.shape[0], means.shape[1]
    feat = np.empty((num_nodes, num_feats), dtype=np.float32)
    for lo in range(0, num_nodes, chunk_rows):
        hi = min(lo + chunk_rows, num_nodes)
        block = feat[lo:hi]
        rng.standard_normal(out=block, dtype=np.float32)
        block += means[label[lo:hi]]
    return feat


#: The node arrays of a generated graph, in ``ndata`` order.
_NODE_ARRAYS = ("feat", "label", "train_mask", "val_mask", "test_mask")


def _labelled_graph_arrays(sample, num_pairs, label, num_classes, num_feats, snr, split, rng):
    """Sample the edges, then draw the features and masks, of a generated node-classification graph.

    Parameters
    ----------
    sample : callable
        The pair sampler of :func:`~mpgraph.data._process.sample_simple_undirected`.
    num_pairs : int
        Number of undirected edges to draw.
    label : numpy.ndarray
        ``(N,)`` int64 node classes.
    num_classes, num_feats : int
        ``C`` and the feature size ``D``.
    snr : float
        Norm of the class means (see :func:`_class_means`).
    split : sequence of float
        Train, validation and test fractions (see :func:`_split_masks`).
    rng : numpy.random.Generator
        Drawn from in this order: edges, class means, features, masks.

    Returns
    -------
    dict
        ``src``, ``dst`` (``(E,)`` int64, both directions), ``num_nodes``,
        ``feat`` (``(N, D)`` float32), ``label``, ``train_mask``/``val_mask``/``test_mask``
        (``(N,)`` bool).
    """
    num_nodes = label.shape[0]
    lo, hi = sample_simple_undirected(num_pairs, sample, num_nodes)
    src, dst = np.concatenate([lo, hi]), np.concatenate([hi, lo])
    del lo, hi
    feat = _features(label, _class_means(num_classes, num_feats, snr, rng), rng)
    train, val, test = _split_masks(num_nodes, split, rng)
    return {"src": src, "dst": dst, "num_nodes": num_nodes, "feat": feat, "label": label,
            "train_mask": train, "val_mask": val, "test_mask": test}


def _generate_csbm(num_nodes, num_classes, avg_degree, homophily, num_feats, snr, split, seed):
    """Generate the arrays of a contextual SBM; see :class:`CSBMDataset`.

    Returns
    -------
    dict
        ``src``, ``dst`` (``(E,)`` int64, both directions), ``num_nodes``,
        ``feat`` (``(N, D)`` float32), ``label`` (``(N,)`` int64),
        ``train_mask``/``val_mask``/``test_mask`` (``(N,)`` bool).
    """
    rng = np.random.default_rng(seed)
    N, C = num_nodes, num_classes
    label = rng.permutation(np.arange(N, dtype=np.int64) % C)  # balanced classes
    order = np.argsort(label, kind="stable")  # node IDs grouped by class
    sizes = np.bincount(label, minlength=C)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])

    def sample(n):
        u = rng.integers(0, N, size=n)
        cu = label[u]
        intra = rng.random(n) < homophily
        # Same class: uniform over the class block. Other class: uniform over the
        # N - size(c) positions outside the block (skip over it).
        r_in = (rng.random(n) * sizes[cu]).astype(np.int64)
        r_out = (rng.random(n) * (N - sizes[cu])).astype(np.int64)
        r_out += (r_out >= starts[cu]) * sizes[cu]
        v = order[np.where(intra, starts[cu] + r_in, r_out)]
        return u, v

    return _labelled_graph_arrays(sample, int(round(N * avg_degree / 2)), label, C, num_feats, snr, split, rng)


def _check_number(name, value, lo, hi=math.inf, integer=False, lo_open=False):
    kind = numbers.Integral if integer else numbers.Real
    ok = isinstance(value, kind) and not isinstance(value, bool)
    if ok:
        ok = (value > lo if lo_open else value >= lo) and value <= hi
    if not ok:
        what = "an int" if integer else "a number"
        bound = f"> {lo}" if lo_open else f">= {lo}"
        upper = "" if hi == math.inf else f" and <= {hi}"
        raise DGLError(f"expected {name} to be {what} {bound}{upper}, got {value!r}")


def _check_split(split):
    """Return ``split`` as a tuple after checking it holds 3 non-negative fractions summing to 1."""
    split = tuple(split)
    if len(split) != 3 or any(not isinstance(f, numbers.Real) or f < 0 for f in split) \
            or not math.isclose(sum(split), 1.0):
        raise DGLError(f"expected split of 3 non-negative fractions summing to 1, got {split!r}")
    return split


class CSBMDataset(_GeneratedDataset):
    r"""Contextual stochastic block model: a graph with tunable homophily and Gaussian features.

    Nodes get balanced random labels in ``C`` classes. ``round(N * avg_degree / 2)``
    distinct undirected edges are drawn: one end uniformly, the other from the same
    class with probability ``homophily`` and else uniformly from the other classes;
    self-loops and duplicates are redrawn. Each edge is stored in both directions,
    so the mean in-degree is ``avg_degree`` and the edge homophily (fraction of
    edges joining same-class nodes) is ``homophily`` up to sampling noise.
    Features are class means plus standard Gaussian noise:

    .. math::

        x_i = \mu_{y_i} + \varepsilon_i, \quad \varepsilon_i \sim \mathcal{N}(0, I_D), \quad
        \mu_c = \mathrm{snr} \cdot g_c / \lVert g_c \rVert_2, \quad g_c \sim \mathcal{N}(0, I_D),

    so ``snr`` is the distance of each class mean from the origin in units of the
    noise standard deviation, whatever ``D``. Everything is drawn from
    ``numpy.random.default_rng(seed)``: equal arguments give equal graphs.

    Parameters
    ----------
    num_nodes : int, optional
        ``N``. Default: 1000.
    num_classes : int, optional
        ``C >= 2``. Default: 5.
    avg_degree : float, optional
        Mean in-degree (= out-degree), at most ``N - 1``. Default: 10.
    homophily : float, optional
        Fraction of intra-class edges, in ``[0, 1]``. Default: 0.8.
    num_feats : int, optional
        Feature dimension ``D``. Default: 128.
    snr : float, optional
        Signal-to-noise ratio of the features (norm of the class means). Default: 1.
    split : tuple of 3 floats, optional
        Train, validation and test fractions (random nodes). Default: ``(0.6, 0.2, 0.2)``.
    seed : int, optional
        Random seed. Default: 0.
    verbose : bool, optional
        Print statistics. Default: ``False``.
    transform : callable, optional
        Applied to the graph on every access. Default: ``None``.

    Raises
    ------
    DGLError
        If a parameter is out of range.

    Notes
    -----
    The graph's ``ndata``: ``feat`` ``(N, D)`` float32, ``label`` ``(N,)`` int64,
    ``train_mask``/``val_mask``/``test_mask`` ``(N,)`` bool. Memory is about
    ``N * D * 4 + E * 16`` bytes; generation is vectorised. When the requested
    edges do not exist (``homophily * avg_degree`` near the class size), the
    graph gets as many as 8 sampling rounds find, fewer than asked.

    Examples
    --------
    >>> from mpgraph.data import CSBMDataset
    >>> dataset = CSBMDataset(num_nodes=200, num_classes=4, avg_degree=6, homophily=0.9, seed=1)
    >>> g = dataset[0]
    >>> g.num_nodes(), g.num_edges(), dataset.num_classes
    (200, 1200, 4)
    >>> tuple(g.ndata["feat"].shape)
    (200, 128)
    """

    def __init__(
        self,
        num_nodes=1000,
        num_classes=5,
        avg_degree=10.0,
        homophily=0.8,
        num_feats=128,
        snr=1.0,
        split=(0.6, 0.2, 0.2),
        seed=0,
        verbose=False,
        transform=None,
    ):
        _check_number("num_nodes", num_nodes, 2, integer=True)
        _check_number("num_classes", num_classes, 2, num_nodes, integer=True)
        _check_number("avg_degree", avg_degree, 0, num_nodes - 1)
        _check_number("homophily", homophily, 0, 1)
        _check_number("num_feats", num_feats, 1, integer=True)
        _check_number("snr", snr, 0)
        _check_number("seed", seed, 0, integer=True)
        split = _check_split(split)
        self._args = dict(num_nodes=num_nodes, num_classes=num_classes, avg_degree=avg_degree, homophily=homophily,
                          num_feats=num_feats, snr=snr, split=split, seed=seed)
        super().__init__("csbm", hash_key=tuple(self._args.values()), verbose=verbose, transform=transform)

    def process(self):
        """Generate the graph."""
        a = _generate_csbm(**self._args)
        self._g = graph_from_arrays(a, _NODE_ARRAYS)
        if self.verbose:
            same = (a["label"][a["src"]] == a["label"][a["dst"]]).mean() if len(a["src"]) else float("nan")
            print(f"  NumNodes: {a['num_nodes']}\n  NumEdges: {len(a['src'])}\n  EdgeHomophily: {same:.3f}")

    @property
    def num_classes(self):
        """Number of classes ``C``."""
        return self._args["num_classes"]
