"""A generated typed graph for entity classification: authors, papers and venues."""

import numpy as np
import torch

from ._process import unique_edges
from .csbm import _check_number, _check_split, _split_masks
from .dgl_dataset import _GeneratedDataset

__all__ = ["typed_citation_graph", "SyntheticTypedGraphDataset", "TYPED_RELATIONS"]

_DEFAULT_NUM_CLASSES = 4

#: The relations of :func:`typed_citation_graph`, each forward relation followed by its reverse.
TYPED_RELATIONS = (
    ("author", "writes", "paper"), ("paper", "written-by", "author"),
    ("paper", "cites", "paper"), ("paper", "cited-by", "paper"),
    ("paper", "published-in", "venue"), ("venue", "publishes", "paper"),
)


def _pick(rng, label_src, label_pool, homophily):
    """For each source (class ``label_src[i]``) one pool member: same class w.p. ``homophily``, else uniform."""
    n, P = label_src.shape[0], label_pool.shape[0]
    C = int(max(label_pool.max(initial=0), label_src.max(initial=0))) + 1
    order = np.argsort(label_pool, kind="stable")
    sizes = np.bincount(label_pool, minlength=C)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    own = (rng.random(n) * sizes[label_src]).astype(np.int64)
    same = order[np.minimum(starts[label_src] + own, P - 1)]
    anyone = rng.integers(0, P, size=n)
    use_same = (rng.random(n) < homophily) & (sizes[label_src] > 0)
    return np.where(use_same, same, anyone)


def typed_citation_graph(num_papers=600, num_authors=300, num_venues=12, num_classes=_DEFAULT_NUM_CLASSES, num_feats=16,
                         authors_per_paper=2, cites_per_paper=3, homophily=0.8, snr=0.5, split=(0.6, 0.2, 0.2),
                         seed=0):
    r"""Generate an author / paper / venue graph whose structure depends on the papers' classes.

    Every node has a class (papers: balanced random; authors: balanced random;
    venue ``v``: ``v mod C``). Each paper draws ``authors_per_paper`` authors,
    ``cites_per_paper`` cited papers (no self-citation) and one venue; each draw
    is of the paper's class with probability ``homophily`` and uniform
    otherwise (duplicate pairs are dropped). The relations are
    :data:`TYPED_RELATIONS`: ``writes``/``written-by``, ``cites``/``cited-by``,
    ``published-in``/``publishes``. Every node type has features

    .. math::

        x_i = \mathrm{snr} \cdot \mu_{y_i} + \varepsilon_i, \qquad \varepsilon_i \sim \mathcal{N}(0, I_D),

    with unit-norm class means :math:`\mu_c` shared by all types, so a paper's
    own features are a weak signal and its typed neighbourhood a strong one.
    Everything is drawn from ``numpy.random.default_rng(seed)``.

    Parameters
    ----------
    num_papers, num_authors, num_venues : int, optional
        Node counts. Defaults: 600, 300, 12.
    num_classes : int, optional
        ``C >= 2``. Default: 4.
    num_feats : int, optional
        Feature size ``D``. Default: 16.
    authors_per_paper, cites_per_paper : int, optional
        Draws per paper. Defaults: 2, 3.
    homophily : float, optional
        Probability that a draw is of the paper's class. Default: 0.8.
    snr : float, optional
        Norm of the class means in noise units. Default: 0.5.
    split : tuple of 3 floats, optional
        Train/validation/test fractions of the papers. Default: ``(0.6, 0.2, 0.2)``.
    seed : int, optional
        Random seed. Default: 0.

    Returns
    -------
    HeteroGraph
        ``nodes[t].data['feat']`` ``(N_t, D)`` float32 for every type, ``nodes[t].data['label']``
        ``(N_t,)`` int64, and on ``'paper'`` the bool ``train_mask``/``val_mask``/``test_mask``.

    Raises
    ------
    DGLError
        A parameter out of range.

    Examples
    --------
    >>> from mpgraph.data.typed_graph import typed_citation_graph
    >>> g = typed_citation_graph(num_papers=40, num_authors=20, num_venues=4, seed=1)
    >>> g.ntypes, g.num_nodes('paper')
    (['author', 'paper', 'venue'], 40)
    >>> g.num_edges('writes') == g.num_edges('written-by')
    True
    """
    _check_number("num_papers", num_papers, 2, integer=True)
    _check_number("num_authors", num_authors, 1, integer=True)
    _check_number("num_venues", num_venues, 1, integer=True)
    _check_number("num_classes", num_classes, 2, num_papers, integer=True)
    _check_number("num_feats", num_feats, 1, integer=True)
    _check_number("authors_per_paper", authors_per_paper, 1, integer=True)
    _check_number("cites_per_paper", cites_per_paper, 0, integer=True)
    _check_number("homophily", homophily, 0, 1)
    _check_number("snr", snr, 0)
    _check_number("seed", seed, 0, integer=True)
    split = _check_split(split)
    rng = np.random.default_rng(seed)
    C = num_classes
    y_paper = rng.permutation(np.arange(num_papers, dtype=np.int64) % C)
    y_author = rng.permutation(np.arange(num_authors, dtype=np.int64) % C)
    y_venue = np.arange(num_venues, dtype=np.int64) % C

    paper_rep = np.repeat(np.arange(num_papers), authors_per_paper)
    authors = _pick(rng, y_paper[paper_rep], y_author, homophily)
    w_src, w_dst = unique_edges(authors, paper_rep, num_papers)             # author -> paper

    citing = np.repeat(np.arange(num_papers), cites_per_paper)
    cited = _pick(rng, y_paper[citing], y_paper, homophily)
    keep = cited != citing
    c_src, c_dst = unique_edges(citing[keep], cited[keep], num_papers)     # paper -> paper

    venue = _pick(rng, y_paper, y_venue, homophily)
    p_src, p_dst = np.arange(num_papers, dtype=np.int64), venue.astype(np.int64)

    means = rng.standard_normal((C, num_feats))
    means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)

    def feats(labels):
        return (snr * means[labels] + rng.standard_normal((labels.shape[0], num_feats))).astype(np.float32)

    x_author, x_paper, x_venue = feats(y_author), feats(y_paper), feats(y_venue)
    masks = _split_masks(num_papers, split, rng)

    from ..convert import heterograph

    def t(a):
        return torch.from_numpy(np.ascontiguousarray(a))

    data = {
        TYPED_RELATIONS[0]: (t(w_src), t(w_dst)), TYPED_RELATIONS[1]: (t(w_dst), t(w_src)),
        TYPED_RELATIONS[2]: (t(c_src), t(c_dst)), TYPED_RELATIONS[3]: (t(c_dst), t(c_src)),
        TYPED_RELATIONS[4]: (t(p_src), t(p_dst)), TYPED_RELATIONS[5]: (t(p_dst), t(p_src)),
    }
    g = heterograph(data, {"author": num_authors, "paper": num_papers, "venue": num_venues})
    for nt, x, y in (("author", x_author, y_author), ("paper", x_paper, y_paper), ("venue", x_venue, y_venue)):
        g.nodes[nt].data["feat"] = t(x)
        g.nodes[nt].data["label"] = t(y)
    for name, m in zip(("train_mask", "val_mask", "test_mask"), masks):
        g.nodes["paper"].data[name] = t(m)
    return g


class SyntheticTypedGraphDataset(_GeneratedDataset):
    """One generated author/paper/venue graph (:func:`typed_citation_graph`) for entity classification.

    Mirrors DGL's RDF entity-classification datasets: :attr:`predict_category`
    is ``'paper'`` and :attr:`num_classes` its number of classes; labels and
    masks live in ``g.nodes['paper'].data``. Keyword arguments are those of
    :func:`typed_citation_graph`.

    Examples
    --------
    >>> from mpgraph.data.typed_graph import SyntheticTypedGraphDataset
    >>> ds = SyntheticTypedGraphDataset(num_papers=60, num_authors=30, num_venues=6, seed=3)
    >>> g = ds[0]
    >>> ds.predict_category, ds.num_classes, int(g.nodes['paper'].data['train_mask'].sum())
    ('paper', 4, 36)
    """

    def __init__(self, verbose=False, transform=None, **kwargs):
        self._kwargs = dict(kwargs)
        super().__init__("typed_citation", hash_key=tuple(sorted(self._kwargs.items())), verbose=verbose,
                         transform=transform)

    def process(self):
        """Generate the graph."""
        self._g = typed_citation_graph(**self._kwargs)
        if self.verbose:
            g = self._g
            print(f"  NumNodes: { {nt: g.num_nodes(nt) for nt in g.ntypes} }")
            print(f"  NumEdges: { {et: g.num_edges(et) for et in g.canonical_etypes} }")

    @property
    def predict_category(self):
        """The node type to classify: ``'paper'``."""
        return "paper"

    @property
    def num_classes(self):
        """Number of classes."""
        return self._kwargs.get("num_classes", _DEFAULT_NUM_CLASSES)
