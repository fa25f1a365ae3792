"""A generated graph shaped like Reddit (node count x scale, degree 492, 602 features, 41 classes)."""

import numpy as np

from ._process import graph_from_arrays
from .csbm import _NODE_ARRAYS, _check_number, _labelled_graph_arrays
from .dgl_dataset import _GeneratedDataset

__all__ = ["RedditLikeDataset"]

# DGL's Reddit statistics.
REDDIT_NUM_NODES = 232_965
REDDIT_NUM_EDGES = 114_615_892
REDDIT_NUM_FEATS = 602
REDDIT_NUM_CLASSES = 41
REDDIT_SPLIT = (153_431, 23_831, 55_703)


def _degree_weights(num_nodes, mean_degree, tail, rng):
    """Expected degrees: Lomax (Pareto II) with tail index ``tail``, floor 2% of the mean, capped for Chung-Lu.

    The cap ``sqrt(N * mean)`` keeps every pair probability ``w_u w_v / sum(w)``
    at most 1. Returns float64 weights of shape ``(N,)`` with mean ``mean_degree``.
    """
    w = (1.0 - rng.random(num_nodes)) ** (-1.0 / tail) - 1.0
    cap = np.sqrt(num_nodes * mean_degree)
    w += 0.02 * w.mean()
    for _ in range(20):  # rescale to the mean, clip at the cap, repeat
        w *= mean_degree / w.mean()
        if w.max() <= cap * (1 + 1e-9):
            break
        np.minimum(w, cap, out=w)
    return w


def _generate_reddit_like(scale, homophily, snr, tail, seed):
    """Generate the arrays of :class:`RedditLikeDataset`.

    Returns
    -------
    dict
        ``src``, ``dst`` (``(E,)`` int64, both directions), ``num_nodes``,
        ``feat`` (``(N, 602)`` float32), ``label`` (``(N,)`` int64),
        ``train_mask``/``val_mask``/``test_mask`` (``(N,)`` bool).
    """
    rng = np.random.default_rng(seed)
    N = int(round(REDDIT_NUM_NODES * scale))
    C = REDDIT_NUM_CLASSES
    mean_degree = min(REDDIT_NUM_EDGES / REDDIT_NUM_NODES, (N - 1) / 2)

    # Imbalanced classes (sizes ~ rank^-0.7), every class present.
    p = np.arange(1, C + 1, dtype=np.float64) ** -0.7
    label = rng.choice(C, size=N, p=p / p.sum()).astype(np.int64)
    label[rng.choice(N, size=C, replace=False)] = np.arange(C)

    # Chung-Lu with homophily: the first end is drawn in proportion to its expected
    # degree; the second too, from the first end's class with probability
    # `homophily`, else from all nodes.
    w = _degree_weights(N, mean_degree, tail, rng)
    order = np.argsort(label, kind="stable")
    cum = np.cumsum(w[order])  # (N,) cumulative weight, nodes grouped by class
    bounds = np.concatenate([[0.0], cum])
    class_end = np.cumsum(np.bincount(label, minlength=C))
    class_lo = bounds[class_end - np.bincount(label, minlength=C)]
    class_hi = bounds[class_end]
    total = cum[-1]

    def pick(r):
        return order[np.minimum(np.searchsorted(cum, r, side="right"), N - 1)]

    # A node of a class of n_c nodes has fewer than n_c same-class neighbours; cap
    # the same-class probability of an end of expected degree w at n_c / w, so that
    # small classes (at small scales) and hubs do not saturate their class.
    class_size = np.bincount(label, minlength=C).astype(np.float64)

    def sample(n):
        u = pick(rng.random(n) * total)
        cu = label[u]
        p_same = np.minimum(homophily, class_size[cu] / w[u])
        r_any = rng.random(n) * total
        r_same = class_lo[cu] + rng.random(n) * (class_hi[cu] - class_lo[cu])
        v = pick(np.where(rng.random(n) < p_same, r_same, r_any))
        return u, v

    total_split = sum(REDDIT_SPLIT)
    split = [n / total_split for n in REDDIT_SPLIT]
    return _labelled_graph_arrays(sample, int(round(N * mean_degree / 2)), label, C, REDDIT_NUM_FEATS, snr, split, rng)


class RedditLikeDataset(_GeneratedDataset):
    r"""A generated stand-in for :class:`~mpgraph.data.RedditDataset`, at any scale.

    ``N = round(232965 * scale)`` nodes with Reddit's mean degree 492 (capped at
    ``(N - 1) / 2`` for tiny scales), so about ``114.6M * scale`` directed edges,
    each undirected edge stored in both directions, no self-loops or duplicates.
    Degrees are skewed: expected degrees follow a Lomax (power-law tail) law
    (Chung-Lu model), capped at ``sqrt(N * 492)``. 41 imbalanced classes;
    an edge's second end is drawn from the first end's class with probability
    ``min(homophily, n_c / w)`` (``n_c`` the class size, ``w`` the first end's
    expected degree), else from all nodes, so the measured edge homophily grows
    with the scale (0.32 at ``scale=0.05``, 0.53 at 0.2, 0.69 at 1);
    602 float32 features are class means of norm ``snr`` plus standard Gaussian
    noise, so both features and structure carry learnable class signal. Masks
    follow Reddit's split proportions (153,431 / 23,831 / 55,703), on random nodes.
    Deterministic given ``seed`` and the arguments.

    Parameters
    ----------
    scale : float, optional
        Fraction of Reddit's node count, ``> 0``. Default: 1.0.
    homophily : float, optional
        Largest probability that an edge's second end is drawn from the first
        end's class, in ``[0, 1]``. Default: 0.75.
    snr : float, optional
        Norm of the class means in noise standard deviations. Default: 3.0
        (at ``scale=0.05`` the nearest class mean of the features is right for
        67% of test nodes, the majority label of the neighbours for 96%).
    tail : float, optional
        Tail index of the degree law (``> 1``; smaller is more skewed). Default: 2.0.
    seed : int, optional
        Random seed. Default: 0.
    verbose : bool, optional
        Print statistics. Default: ``False``.
    transform : callable, optional
        Applied to the graph on every access. Default: ``None``.

    Raises
    ------
    DGLError
        If a parameter is out of range, or ``scale`` gives fewer than 82 nodes.

    Notes
    -----
    Memory at ``scale=1``: the edge IDs are 2 x 114.6M int64 = 1.8 GB, features
    232,965 x 602 float32 = 0.56 GB. Edges are sampled 4M at a time; measured
    (``benchmarks/datasets.py``, 2 shared CPU cores): ``scale=1`` peaks at
    4.4 GiB RSS and builds in about 2 minutes (mean degree 492.0, median 254,
    max 9729); ``scale=0.05`` (11,648 nodes, 5.7M edges) in about 3 s and
    0.44 GiB. The graph's ``ndata``: ``feat`` ``(N, 602)``
    float32, ``label`` ``(N,)`` int64, ``train_mask``/``val_mask``/``test_mask``
    ``(N,)`` bool.

    Examples
    --------
    >>> from mpgraph.data import RedditLikeDataset
    >>> g = RedditLikeDataset(scale=0.002)[0]
    >>> g.num_nodes(), tuple(g.ndata["feat"].shape)
    (466, (466, 602))
    """

    def __init__(self, scale=1.0, homophily=0.75, snr=3.0, tail=2.0, seed=0, verbose=False, transform=None):
        _check_number("scale", scale, 0, lo_open=True)
        _check_number("homophily", homophily, 0, 1)
        _check_number("snr", snr, 0)
        _check_number("tail", tail, 1, lo_open=True)
        _check_number("seed", seed, 0, integer=True)
        _check_number("round(232965 * scale)", int(round(REDDIT_NUM_NODES * scale)), 2 * REDDIT_NUM_CLASSES,
                      integer=True)
        self._args = dict(scale=float(scale), homophily=homophily, snr=snr, tail=tail, seed=seed)
        super().__init__("reddit_like", hash_key=tuple(self._args.values()), verbose=verbose, transform=transform)

    def process(self):
        """Generate the graph."""
        a = _generate_reddit_like(**self._args)
        self._g = graph_from_arrays(a, _NODE_ARRAYS)
        if self.verbose:
            print(f"  NumNodes: {a['num_nodes']}\n  NumEdges: {len(a['src'])}\n  NumFeats: {REDDIT_NUM_FEATS}")

    @property
    def num_classes(self):
        """Number of classes: 41."""
        return REDDIT_NUM_CLASSES

    @property
    def scale(self):
        """Fraction of Reddit's node count."""
        return self._args["scale"]
