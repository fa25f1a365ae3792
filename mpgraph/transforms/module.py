"""Transform modules (DGL's ``dgl.transforms.module``): callables ``g -> g`` for datasets and pipelines.

Structural transforms (:class:`AddSelfLoop`, :class:`DropEdge`, ...) return a
new graph and leave the input alone. Feature transforms
(:class:`RowFeatNormalizer`, :class:`FeatMask`, :class:`GCNNorm`,
:class:`RandomWalkPE`, :class:`LapPE`) write their result into the input
graph's features and return that graph, as DGL's do; they replace the stored
tensors and never modify a tensor in place.

Random transforms draw from torch's global generator (on the CPU, as DGL
does), so ``torch.manual_seed`` makes them reproducible.

Graphs with several node or edge types
(:class:`~mpgraph.heterograph.HeteroGraph`) are transformed relation by
relation by :class:`AddSelfLoop`, :class:`RemoveSelfLoop`, :class:`AddReverse`
(which adds a ``'rev_<etype>'`` relation for every relation between two
types) and :class:`ToSimple`; the other transforms raise
:class:`~mpgraph.DGLError` naming themselves for them. A
:class:`~mpgraph.graph.Graph` holds one relation, so transforms that would add
a relation to it (``AddReverse`` on a uni-bipartite Graph) raise, and so do
``AddSelfLoop(new_etypes=True)`` and ``AddReverse(sym_new_etype=True)``
(not implemented). Blocks are rejected by every transform here.
"""

import numbers

import torch
from torch.distributions import Bernoulli

from .._index import Index
from ..base import DGLError, DGLTypeError
from ..frame import Frame
from . import functional
from .functional import (_AGGREGATORS, _FILL_AGGREGATORS, _check_int, _is_typed, _kept, _new_graph, _reject_block,
                         _shared_node_frames, _typed_graph, _typed_rebuild)

__all__ = [
    "BaseTransform", "Compose", "AddSelfLoop", "RemoveSelfLoop", "AddReverse", "ToSimple", "LineGraph",
    "KHopGraph", "RowFeatNormalizer", "FeatMask", "GCNNorm", "DropEdge", "DropNode", "AddEdge", "NodeShuffle",
    "RandomWalkPE", "LapPE", "LaplacianPE",
]


def _check_prob(p, name, cls):
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= float(p) <= 1.0:
        raise DGLError(f"{cls} expected {name} to be a probability in [0, 1], got {p!r}")
    return float(p)


def _check_names(names, name, cls):
    if names is None:
        return []
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise DGLTypeError(f"{cls} expected {name} to be a list of str, got {names!r}")
    return list(names)


def _node_spaces(g, key, cls):
    """``(ntype, frame)`` of every node set holding feature ``key`` (in ``g.ntypes`` order)."""
    if not g._bipartite:
        spaces = [(g.ntypes[0], g._node_frames[0])]
    else:
        srctype, _, dsttype = g.canonical_etypes[0]
        frames = {srctype: g._node_frames[0], dsttype: g._node_frames[1]}
        spaces = [(nt, frames[nt]) for nt in g.ntypes]
    found = [(nt, f) for nt, f in spaces if key in f]
    if not found:
        raise DGLError(f"{cls} expected node feature {key!r} in the graph, got node features "
                       f"{sorted(set().union(*[set(f) for _, f in spaces]))}")
    return found


def _edge_frame(g, key, cls):
    if key not in g._edge_frame:
        raise DGLError(f"{cls} expected edge feature {key!r} in the graph, got edge features {list(g.edata.keys())}")
    return g._edge_frame


class BaseTransform:
    """Base class of transforms: subclasses implement ``__call__(g) -> Graph``."""

    def __call__(self, g):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(g)")

    def __repr__(self):
        return self.__class__.__name__ + "()"


class Compose(BaseTransform):
    """Apply ``transforms`` one after the other.

    Parameters
    ----------
    transforms : list of callable
        Each takes and returns a graph.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph import transforms as T
    >>> g = dgl.graph(([0, 0], [1, 1]))
    >>> T.Compose([T.ToSimple(), T.AddReverse()])(g).edges()
    (tensor([0, 1]), tensor([1, 0]))
    """

    def __init__(self, transforms):
        self.transforms = list(transforms)
        for t in self.transforms:
            if not callable(t):
                raise DGLTypeError(f"Compose expected callables (transforms), got {type(t).__name__}")

    def __call__(self, g):
        for transform in self.transforms:
            g = transform(g)
        return g

    def __repr__(self):
        args = ["  " + str(t) for t in self.transforms]
        return self.__class__.__name__ + "([\n" + ",\n".join(args) + "\n])"


class AddSelfLoop(BaseTransform):
    """Add a self-loop to every node (see :func:`~mpgraph.transforms.add_self_loop`).

    A uni-bipartite graph is returned unchanged (its relation joins two node
    types), as in DGL. On a :class:`~mpgraph.heterograph.HeteroGraph` every
    relation joining one node type to itself gets the self-loops (the others
    are unchanged); ``edge_feat_names`` then applies to the relations having
    those features.

    Parameters
    ----------
    allow_duplicate : bool, optional
        If False (default), remove existing self-loops first, so each node
        ends with exactly one.
    new_etypes : bool, optional
        DGL adds a ``'self'`` relation per node type; that needs
        multi-relation graphs, so only False (default) is supported.
    edge_feat_names : list of str, optional
        Features set from ``fill_data`` (default: all edge features).
    fill_data : int, float or str, optional
        Value, or ``'sum'``/``'mean'``/``'max'``/``'min'`` of the in-edges (default 1.0).

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import AddSelfLoop
    >>> AddSelfLoop()(dgl.graph(([1, 1], [1, 2]))).edges()
    (tensor([1, 0, 1, 2]), tensor([2, 0, 1, 2]))
    >>> hg = dgl.heterograph({('user', 'follows', 'user'): ([0], [1]), ('user', 'plays', 'game'): ([1], [0])})
    >>> ng = AddSelfLoop()(hg)
    >>> ng.num_edges('follows'), ng.num_edges('plays')
    (3, 1)
    """

    def __init__(self, allow_duplicate=False, new_etypes=False, edge_feat_names=None, fill_data=1.0):
        if new_etypes:
            raise DGLError("AddSelfLoop expected new_etypes=False: a 'self' relation per node type needs "
                           "multi-relation heterographs, which are not supported yet; got new_etypes=True")
        if isinstance(fill_data, str) and fill_data not in _FILL_AGGREGATORS:
            raise DGLError(f"AddSelfLoop expected fill_data to be a number or one of {_FILL_AGGREGATORS}, "
                           f"got {fill_data!r}")
        self.allow_duplicate = allow_duplicate
        self.new_etypes = new_etypes
        self.edge_feat_names = edge_feat_names
        self.fill_data = fill_data

    def __call__(self, g):
        if _is_typed(g):
            _typed_graph(g, "AddSelfLoop")
            for cet in g.canonical_etypes:
                if cet[0] != cet[2]:
                    continue
                if not self.allow_duplicate:
                    g = functional.remove_self_loop(g, etype=cet)
                names = self.edge_feat_names
                if names is not None:
                    names = [k for k in names if k in g.edges[cet].data]
                g = functional.add_self_loop(g, edge_feat_names=names, fill_data=self.fill_data, etype=cet)
            return g
        _reject_block(g, "AddSelfLoop")
        utype, _, vtype = g.canonical_etypes[0]
        if utype != vtype:
            return g
        if not self.allow_duplicate:
            g = functional.remove_self_loop(g)
        return functional.add_self_loop(g, edge_feat_names=self.edge_feat_names, fill_data=self.fill_data)


class RemoveSelfLoop(BaseTransform):
    """Remove every self-loop (see :func:`~mpgraph.transforms.remove_self_loop`).

    A uni-bipartite graph is returned unchanged; on a
    :class:`~mpgraph.heterograph.HeteroGraph` every relation joining one node
    type to itself loses its self-loops.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import RemoveSelfLoop
    >>> RemoveSelfLoop()(dgl.graph(([1, 1], [1, 2]))).edges()
    (tensor([1]), tensor([2]))
    """

    def __call__(self, g):
        if _is_typed(g):
            _typed_graph(g, "RemoveSelfLoop")
            for cet in g.canonical_etypes:
                if cet[0] == cet[2]:
                    g = functional.remove_self_loop(g, etype=cet)
            return g
        _reject_block(g, "RemoveSelfLoop")
        utype, _, vtype = g.canonical_etypes[0]
        if utype != vtype:
            return g
        return functional.remove_self_loop(g)


class AddReverse(BaseTransform):
    """Append a reverse edge ``(v, u)`` for every edge ``(u, v)``.

    For a relation joining one node type to itself (a homogeneous graph),
    reverse edge ``E + k`` reverses edge ``k`` (self-loops too) in the same
    relation; edge features are extended: reverse rows copy the forward rows
    with ``copy_edata``, and are zero otherwise. On a
    :class:`~mpgraph.heterograph.HeteroGraph` a relation ``(U, E, V)``
    between two types gets a new relation ``(V, 'rev_E', U)`` whose edge
    ``k`` reverses edge ``k`` of ``(U, E, V)`` (with its features when
    ``copy_edata``, none otherwise). Node features are shared.

    Parameters
    ----------
    copy_edata : bool, optional
        Copy edge features to the reverse edges (default False: zeros).
    sym_new_etype : bool, optional
        DGL can also put the reverse edges of a same-type relation in a new
        ``'rev_<etype>'`` relation; only False (default) is supported.

    Raises
    ------
    DGLError
        ``sym_new_etype=True``; at call time, a uni-bipartite Graph (its
        reverse is a second relation, which a one-relation Graph cannot hold),
        a block, or a ``'rev_<etype>'`` relation that already exists.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.transforms import AddReverse
    >>> g = dgl.graph(([0], [1]))
    >>> g.edata['w'] = torch.tensor([[1., 1.]])
    >>> ng = AddReverse()(g)
    >>> ng.edges(), ng.edata['w']
    ((tensor([0, 1]), tensor([1, 0])), tensor([[1., 1.],
            [0., 0.]]))
    >>> hg = dgl.heterograph({('user', 'follows', 'user'): ([0], [1]), ('user', 'plays', 'game'): ([1], [0])})
    >>> AddReverse()(hg).canonical_etypes
    [('game', 'rev_plays', 'user'), ('user', 'follows', 'user'), ('user', 'plays', 'game')]
    """

    def __init__(self, copy_edata=False, sym_new_etype=False):
        if sym_new_etype:
            raise DGLError("AddReverse expected sym_new_etype=False: reverse relations for relations within one "
                           "node type are not implemented; got sym_new_etype=True")
        self.copy_edata = copy_edata
        self.sym_new_etype = sym_new_etype

    def _doubled(self, frame, E, device):
        """Edge frame of a same-type relation with its reverse rows appended."""
        cols = {}
        for key, feat in frame.items():
            cols[key] = torch.cat([feat, feat if self.copy_edata else torch.zeros_like(feat)], 0)
        return Frame(2 * E, device, "edge", cols)

    def _typed(self, g):
        _typed_graph(g, "AddReverse")
        relations = {}
        for cet in g.canonical_etypes:
            utype, etype, vtype = cet
            index, frame = _kept(g, cet)
            if utype == vtype:
                src, dst = index.src, index.dst
                relations[cet] = (Index.from_coo(torch.cat([src, dst]), torch.cat([dst, src]), index.num_src,
                                                 index.num_dst), self._doubled(frame, index.num_edges, g.device))
                continue
            relations[cet] = (index, frame)
            rev = (vtype, "rev_" + etype, utype)
            if rev in g.canonical_etypes:
                raise DGLError(f"AddReverse expected no relation {rev} in the graph (it holds the reverse of {cet}), "
                               "got one; rename it or add the reverse edges yourself")
            relations[rev] = (index.reverse(), frame.clone() if self.copy_edata else Frame(index.num_edges,
                                                                                          g.device, "edge"))
        return _typed_rebuild(g, relations)

    def __call__(self, g):
        if _is_typed(g):
            return self._typed(g)
        _reject_block(g, "AddReverse")
        if g._bipartite:
            utype, etype, vtype = g.canonical_etypes[0]
            raise DGLError(f"AddReverse expected a homogeneous Graph: reversing the uni-bipartite relation "
                           f"{g.canonical_etypes[0]} adds the relation {(vtype, 'rev_' + etype, utype)}, and a Graph "
                           "holds one relation; build the graph with both relations with mpgraph.heterograph, e.g. "
                           f"{{{g.canonical_etypes[0]}: (u, v), {(vtype, 'rev_' + etype, utype)}: (v, u)}}")
        src, dst = g._index.src64, g._index.dst64
        N = g.num_nodes()
        edge_frame = self._doubled(g.edata, g.num_edges(), g.device)
        return _new_graph(g, torch.cat([src, dst]), torch.cat([dst, src]), N, N,
                          _shared_node_frames(g), edge_frame)


class ToSimple(BaseTransform):
    """Merge parallel edges (see :func:`~mpgraph.transforms.to_simple`), keeping edge features.

    On a :class:`~mpgraph.heterograph.HeteroGraph` every relation is simplified on its own.

    Parameters
    ----------
    return_counts : str, optional
        Edge feature receiving the multiplicities (default ``'count'``).
    aggregator : str, optional
        ``'arbitrary'`` (default), ``'sum'`` or ``'mean'`` for merged edge features.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.transforms import ToSimple
    >>> g = dgl.graph(([0, 1, 1], [1, 2, 2]))
    >>> g.edata['w'] = torch.tensor([0.1, 0.2, 0.3])
    >>> sg = ToSimple()(g)
    >>> sg.edges(), sg.edata['count'], sg.edata['w']
    ((tensor([0, 1]), tensor([1, 2])), tensor([1, 2]), tensor([0.1000, 0.2000]))
    """

    def __init__(self, return_counts="count", aggregator="arbitrary"):
        if aggregator not in _AGGREGATORS:
            raise DGLError(f"ToSimple expected aggregator in {_AGGREGATORS}, got {aggregator!r}")
        self.return_counts = return_counts
        self.aggregator = aggregator

    def __call__(self, g):
        return functional.to_simple(g, return_counts=self.return_counts, copy_edata=True,
                                    aggregator=self.aggregator)


class LineGraph(BaseTransform):
    """The line graph (see :func:`~mpgraph.transforms.line_graph`); edge features become node features.

    Parameters
    ----------
    backtracking : bool, optional
        If False, ``(u, v)`` is not linked to ``(v, u)`` (default True).

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import LineGraph
    >>> LineGraph()(dgl.graph(([0, 1, 1], [1, 0, 2]))).edges()
    (tensor([0, 0, 1]), tensor([1, 2, 0]))
    """

    def __init__(self, backtracking=True):
        self.backtracking = backtracking

    def __call__(self, g):
        return functional.line_graph(g, backtracking=self.backtracking, shared=True)


class KHopGraph(BaseTransform):
    """The graph of walks of length ``k`` (see :func:`~mpgraph.transforms.khop_graph`).

    Parameters
    ----------
    k : int
        Number of hops.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import KHopGraph
    >>> KHopGraph(2)(dgl.graph(([0, 1], [1, 2]))).edges()
    (tensor([0]), tensor([2]))
    """

    def __init__(self, k):
        self.k = _check_int(k, "k", "KHopGraph")

    def __call__(self, g):
        return functional.khop_graph(g, self.k)


class RowFeatNormalizer(BaseTransform):
    r"""Scale each row of the named features so that it sums to one.

    .. math::

        x \leftarrow \frac{x}{\max(\sum_j x_j, 1)}

    As in DGL, the row sum is clamped to at least 1, so rows summing to less
    than one (all-zero rows, for instance) are left as they are. With
    ``subtract_min`` the minimum of the whole feature tensor is subtracted
    first, making it non-negative. Sums accumulate in fp32 for fp16/bf16;
    the dtype is kept. The results replace the features of ``g``, which is
    returned.

    Parameters
    ----------
    subtract_min : bool, optional
        Subtract the tensor's minimum first (default False).
    node_feat_names, edge_feat_names : list of str, optional
        Floating-point features to normalise (default: none).

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.transforms import RowFeatNormalizer
    >>> g = dgl.graph(([0, 1], [1, 2]))
    >>> g.ndata['h'] = torch.tensor([[1., 3.], [2., 2.], [0.2, 0.3]])
    >>> RowFeatNormalizer(node_feat_names=['h'])(g).ndata['h']
    tensor([[0.2500, 0.7500],
            [0.5000, 0.5000],
            [0.2000, 0.3000]])
    """

    def __init__(self, subtract_min=False, node_feat_names=None, edge_feat_names=None):
        self.subtract_min = subtract_min
        self.node_feat_names = _check_names(node_feat_names, "node_feat_names", "RowFeatNormalizer")
        self.edge_feat_names = _check_names(edge_feat_names, "edge_feat_names", "RowFeatNormalizer")

    def row_normalize(self, feat):
        """Row-normalised copy of ``feat``."""
        if not feat.is_floating_point():
            raise DGLError(f"RowFeatNormalizer expected floating-point features, got dtype {feat.dtype}")
        acc = torch.float32 if feat.dtype in (torch.float16, torch.bfloat16) else feat.dtype
        x = feat.to(acc)
        if self.subtract_min:
            x = x - x.min()
        return (x / x.sum(dim=-1, keepdim=True).clamp(min=1.0)).to(feat.dtype)

    def __call__(self, g):
        _reject_block(g, "RowFeatNormalizer")
        for key in self.node_feat_names:
            for _, frame in _node_spaces(g, key, "RowFeatNormalizer"):
                frame[key] = self.row_normalize(frame[key])
        for key in self.edge_feat_names:
            frame = _edge_frame(g, key, "RowFeatNormalizer")
            frame[key] = self.row_normalize(frame[key])
        return g


class FeatMask(BaseTransform):
    """Zero random feature columns, each with probability ``p`` (one mask per feature tensor).

    The mask has one entry per column (last dimension) and is drawn from
    ``torch.distributions.Bernoulli(p)`` in the order node features (node
    types in ``g.ntypes`` order), then edge features, as in DGL. The masked
    features replace those of ``g``, which is returned.

    Parameters
    ----------
    p : float, optional
        Probability of masking a column (default 0.5).
    node_feat_names, edge_feat_names : list of str, optional
        Features to mask (default: none).

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.transforms import FeatMask
    >>> g = dgl.graph(([0, 1], [1, 2]))
    >>> g.ndata['h'] = torch.ones(3, 4)
    >>> _ = torch.manual_seed(0)
    >>> FeatMask(p=0.5, node_feat_names=['h'])(g).ndata['h'][0]
    tensor([0., 1., 0., 0.])
    """

    def __init__(self, p=0.5, node_feat_names=None, edge_feat_names=None):
        self.p = _check_prob(p, "p", "FeatMask")
        self.node_feat_names = _check_names(node_feat_names, "node_feat_names", "FeatMask")
        self.edge_feat_names = _check_names(edge_feat_names, "edge_feat_names", "FeatMask")
        self.dist = Bernoulli(self.p)

    def _mask(self, feat):
        mask = self.dist.sample(torch.Size([feat.shape[-1]])).bool().to(feat.device)
        return feat.masked_fill(mask, 0)

    def __call__(self, g):
        _reject_block(g, "FeatMask")
        if self.p == 0:
            return g
        for key in self.node_feat_names:
            for _, frame in _node_spaces(g, key, "FeatMask"):
                frame[key] = self._mask(frame[key])
        for key in self.edge_feat_names:
            frame = _edge_frame(g, key, "FeatMask")
            frame[key] = self._mask(frame[key])
        return g


class GCNNorm(BaseTransform):
    r"""Symmetric GCN normalisation of edge weights, stored in ``g.edata[eweight_name]``.

    .. math::

        w_{uv} \leftarrow \frac{w_{uv}}{\sqrt{d_u d_v}}, \qquad d_v = \sum_{u \to v} w_{uv}

    with :math:`w = 1` when ``g`` has no feature ``eweight_name`` (then
    :math:`d_v` is the in-degree). Both endpoints use their (weighted)
    in-degree, as in DGL; a node of degree 0 contributes a factor 0.
    Degrees and the result are float32 (float64 for float64 weights; other
    weights are cast back to their dtype). A uni-bipartite graph is returned
    unchanged. ``g`` is updated and returned.

    Parameters
    ----------
    eweight_name : str, optional
        Edge feature read (if present) and written (default ``'w'``).

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.transforms import GCNNorm
    >>> g = dgl.graph(([0, 1, 2], [0, 0, 1]))
    >>> GCNNorm()(g).edata['w']
    tensor([0.5000, 0.7071, 0.0000])
    >>> g.edata['w'] = torch.tensor([0.1, 0.2, 0.3])
    >>> GCNNorm()(g).edata['w']
    tensor([0.3333, 0.6667, 0.0000])
    """

    def __init__(self, eweight_name="w"):
        self.eweight_name = eweight_name

    def __call__(self, g):
        _reject_block(g, "GCNNorm")
        if g._bipartite:
            return g
        index = g._index
        N = g.num_nodes()
        src, dst = index.src64, index.dst64
        if self.eweight_name in g.edata:
            w = g.edata[self.eweight_name]
            acc = torch.float64 if w.dtype == torch.float64 else torch.float32
            wa = w.to(acc)
            deg = torch.zeros((N,) + tuple(w.shape[1:]), dtype=acc, device=g.device).index_add_(0, dst, wa)
            inv = deg.pow(-0.5)
            inv = torch.where(torch.isinf(inv), torch.zeros_like(inv), inv)
            out = inv[src] * wa * inv[dst]
            out = out.to(w.dtype) if w.is_floating_point() else out
        else:
            inv = index.in_degrees().to(torch.float32).pow(-0.5)
            inv = torch.where(torch.isinf(inv), torch.zeros_like(inv), inv)
            out = inv[src] * inv[dst]
        g.edata[self.eweight_name] = out
        return g


class DropEdge(BaseTransform):
    """Drop each edge with probability ``p``; a new graph is returned.

    The mask is ``torch.distributions.Bernoulli(p).sample((E,))``, as in DGL.
    Kept edges keep their order and features (no ``EID`` is stored).

    Parameters
    ----------
    p : float, optional
        Probability of dropping an edge (default 0.5).

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.transforms import DropEdge
    >>> g = dgl.graph(([0, 1, 2, 3], [1, 2, 3, 0]))
    >>> g.edata['h'] = torch.arange(4)
    >>> _ = torch.manual_seed(0)
    >>> DropEdge()(g).edata['h']
    tensor([1])
    """

    def __init__(self, p=0.5):
        self.p = _check_prob(p, "p", "DropEdge")
        self.dist = Bernoulli(self.p)

    def __call__(self, g):
        _reject_block(g, "DropEdge")
        g = g.clone()
        if self.p == 0:
            return g
        drop = self.dist.sample(torch.Size([g.num_edges()])).bool().to(g.device)
        g.remove_edges(drop.nonzero().squeeze(1))
        return g


class DropNode(BaseTransform):
    """Drop each node, and its edges, with probability ``p``; a new graph is returned.

    One mask per node type (in ``g.ntypes`` order) from
    ``torch.distributions.Bernoulli(p)``, as in DGL. Kept nodes and edges
    keep their order and features (no ``NID``/``EID`` stored).

    Parameters
    ----------
    p : float, optional
        Probability of dropping a node (default 0.5).

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.transforms import DropNode
    >>> g = dgl.graph(([0, 1, 2, 3], [1, 2, 3, 0]))
    >>> g.ndata['h'] = torch.arange(4)
    >>> _ = torch.manual_seed(0)
    >>> ng = DropNode()(g)
    >>> ng.ndata['h'], ng.num_edges()
    (tensor([1]), 0)
    """

    def __init__(self, p=0.5):
        self.p = _check_prob(p, "p", "DropNode")
        self.dist = Bernoulli(self.p)

    def __call__(self, g):
        _reject_block(g, "DropNode")
        g = g.clone()
        if self.p == 0:
            return g
        for ntype in g.ntypes:
            drop = self.dist.sample(torch.Size([g.num_nodes(ntype)])).bool().to(g.device)
            g.remove_nodes(drop.nonzero().squeeze(1), ntype=ntype)
        return g


class AddEdge(BaseTransform):
    """Add ``int(E * ratio)`` edges with uniformly random end nodes; a new graph is returned.

    New edges are appended after the existing ones (``torch.randint`` for
    sources, then destinations, as in DGL); their features are zero (the
    frame's initializer).

    Parameters
    ----------
    ratio : float, optional
        Number of new edges over the number of edges (default 0.2).

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import AddEdge
    >>> AddEdge(ratio=0.5)(dgl.graph(([0, 1, 2, 3], [1, 2, 3, 0]))).num_edges()
    6
    """

    def __init__(self, ratio=0.2):
        if isinstance(ratio, bool) or not isinstance(ratio, numbers.Real) or ratio < 0:
            raise DGLError(f"AddEdge expected ratio to be a number >= 0, got {ratio!r}")
        self.ratio = float(ratio)

    def __call__(self, g):
        _reject_block(g, "AddEdge")
        if self.ratio == 0.0:
            return g
        g = g.clone()
        n = int(g.num_edges() * self.ratio)
        src = torch.randint(0, max(g.num_src_nodes(), 1), (n,), dtype=g.idtype).to(g.device)
        dst = torch.randint(0, max(g.num_dst_nodes(), 1), (n,), dtype=g.idtype).to(g.device)
        g.add_edges(src, dst)
        return g


class NodeShuffle(BaseTransform):
    """Randomly permute the node features among the nodes (structure unchanged); a new graph is returned.

    One ``torch.randperm`` per node type (in ``g.ntypes`` order); every node
    feature of that type is permuted with it.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.transforms import NodeShuffle
    >>> g = dgl.graph(([0, 1], [1, 2]))
    >>> g.ndata['h'] = torch.tensor([1., 2., 3.])
    >>> sorted(NodeShuffle()(g).ndata['h'].tolist())
    [1.0, 2.0, 3.0]
    """

    def __call__(self, g):
        _reject_block(g, "NodeShuffle")
        g = g.clone()
        for ntype in g.ntypes:
            frame = g.nodes[ntype].data
            perm = torch.randperm(g.num_nodes(ntype)).to(g.device)
            for key in list(frame.keys()):
                frame[key] = frame[key][perm]
        return g


class RandomWalkPE(BaseTransform):
    """Store :func:`~mpgraph.transforms.random_walk_pe` as ``g.ndata[feat_name]`` and return ``g``.

    Parameters
    ----------
    k : int
        Number of random-walk steps.
    feat_name : str, optional
        Node feature to write (default ``'PE'``).
    eweight_name : str, optional
        Edge weights to use (default: unweighted).

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import RandomWalkPE
    >>> RandomWalkPE(k=2)(dgl.graph(([0, 1, 1], [1, 1, 0]))).ndata['PE']
    tensor([[0.0000, 0.5000],
            [0.5000, 0.7500]])
    """

    def __init__(self, k, feat_name="PE", eweight_name=None):
        self.k = _check_int(k, "k", "RandomWalkPE", low=1)
        self.feat_name = feat_name
        self.eweight_name = eweight_name

    def __call__(self, g):
        g.ndata[self.feat_name] = functional.random_walk_pe(g, self.k, eweight_name=self.eweight_name)
        return g


class LapPE(BaseTransform):
    """Store :func:`~mpgraph.transforms.lap_pe` as ``g.ndata[feat_name]`` and return ``g``.

    Parameters
    ----------
    k : int
        Number of eigenvectors.
    feat_name : str, optional
        Node feature for the eigenvectors (default ``'PE'``).
    eigval_name : str, optional
        If given, node feature for the eigenvalues, ``(N, k)`` (the same row
        for every node).
    padding : bool, optional
        Pad when ``N <= k`` instead of raising (default False).

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.transforms import LapPE
    >>> g = dgl.graph(([0, 1, 2, 3, 1, 2, 3, 0], [1, 2, 3, 0, 0, 1, 2, 3]))
    >>> g = LapPE(k=2, eigval_name='eigval')(g)
    >>> g.ndata['PE'].shape, g.ndata['eigval'][0]
    (torch.Size([4, 2]), tensor([1., 1.]))
    """

    def __init__(self, k, feat_name="PE", eigval_name=None, padding=False):
        self.k = _check_int(k, "k", "LapPE", low=1)
        self.feat_name = feat_name
        self.eigval_name = eigval_name
        self.padding = padding

    def __call__(self, g):
        if self.eigval_name:
            pe, eigval = functional.lap_pe(g, self.k, padding=self.padding, return_eigval=True)
            g.ndata[self.eigval_name] = eigval.reshape(1, -1).expand(g.num_nodes(), -1).clone()
        else:
            pe = functional.lap_pe(g, self.k, padding=self.padding)
        g.ndata[self.feat_name] = pe
        return g


class LaplacianPE(LapPE):
    """Old name of :class:`LapPE`."""

