"""Sampler base classes, feature prefetching, and edge-prediction wrapping (DGL's ``dgl.dataloading.base``).

A *sampler* turns a mini-batch of seed IDs into what a training step needs
(``Sampler.sample(g, indices)``). Features are gathered in the graph's storage
dtype (``index_select`` rows; a bfloat16 feature store moves half the bytes of a
float32 one, and nothing is upcast).
"""

import torch

from .._index import Index, as_index
from ..base import EID, NID, DGLError, DGLTypeError
from ..frame import Frame
from ..graph import Graph
from ..sampling._utils import as_ids, check_graph, is_typed
from .block import first_appearance

__all__ = ["Sampler", "BlockSampler", "EdgePredictionSampler", "as_edge_prediction_sampler"]

_I64 = torch.int64
_EXCLUDE = ("self", "reverse_id")


def _names(value, what, name):
    """Feature names: None (all), a list/tuple of str, or a one-entry ``{type: names}`` dict."""
    if value is None:
        return None
    if isinstance(value, dict):
        if len(value) != 1:
            raise DGLError(f"{what} expected one type in {name} (graphs hold one relation), got {list(value)}")
        (value,) = value.values()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise DGLTypeError(f"{what} expected {name} as a list of feature names, got {value!r}")
    return list(value)


def _feature_spec(value, what, name):
    """Feature names to prefetch: None (all), a list of str, or a dict ``{type: list of str}`` (typed graphs)."""
    if not isinstance(value, dict):
        return _names(value, what, name)
    spec = {}
    for key, names in value.items():
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, (list, tuple)) or not all(isinstance(v, str) for v in names):
            raise DGLTypeError(f"{what} expected {name}[{key!r}] as a list of feature names, got {names!r}")
        spec[key] = list(names)
    return spec


def _graph_spec(spec, what, name):
    """``spec`` for a graph with one relation: a dict must have exactly one entry."""
    if not isinstance(spec, dict):
        return spec
    if len(spec) != 1:
        raise DGLError(f"{what} expected one type in {name} for a graph with one relation, got {list(spec)}")
    (names,) = spec.values()
    return names


def _typed_spec(spec, types, frames, resolve, what, name):
    """``{type: names or None}`` for every type from a prefetch spec on a typed graph.

    A list names features looked up in every type that has them (each name must
    exist in at least one type); a dict gives the names per type (others: none).
    """
    if spec is None:
        return {t: None for t in types}
    if isinstance(spec, dict):
        out = {t: [] for t in types}
        for key, names in spec.items():
            out[resolve(key)] = names
        return out
    for k in spec:
        if not any(k in frames[t] for t in types):
            raise DGLError(f"{what} expected feature {k!r} of {name} in at least one type, got none of that name")
    return {t: [k for k in spec if k in frames[t]] for t in types}


def _gather_into(dst_frame, src_frame, names, ids):
    """``dst_frame[k] = src_frame[k][ids]`` for ``k`` in ``names`` (all of ``src_frame`` when None)."""
    keys = [k for k in src_frame.keys() if k != NID] if names is None else names
    if not keys:
        return
    rows = ids.to(_I64)
    for k in keys:
        if k not in src_frame:
            raise DGLError(f"expected feature {k!r} to prefetch, got none of that name; available: "
                           f"{sorted(src_frame.keys())}")
        value = src_frame[k]
        dst_frame[k] = value.index_select(0, rows.to(value.device)) if value.dim() else value


class Sampler:
    """Base class of graph samplers: ``sample(g, indices)`` returns one mini-batch."""

    def sample(self, g, indices):
        """Return the mini-batch for seed ``indices`` of graph ``g``."""
        raise NotImplementedError(f"{type(self).__name__} must implement sample(g, indices)")


class BlockSampler(Sampler):
    """Base class of samplers that return ``(input_nodes, output_nodes, blocks)``.

    Subclasses implement :meth:`sample_blocks`; :meth:`sample` adds the
    features and moves the result to ``output_device``.

    Parameters
    ----------
    prefetch_node_feats : list of str or dict, optional
        Node features gathered into ``blocks[0].srcdata``. Default (None):
        every node feature of the graph. On a graph with several types a list
        applies to every type having the feature, and ``{ntype: [names]}``
        names them per type.
    prefetch_labels : list of str or dict, optional
        Node features gathered into ``blocks[-1].dstdata``. Default (None):
        every node feature of the graph (typed as ``prefetch_node_feats``).
    prefetch_edge_feats : list of str or dict, optional
        Edge features gathered into every block's ``edata``. Default (None):
        every edge feature of the graph (``{etype: [names]}`` per relation).
    output_device : torch.device, optional
        Move the result there.

    Notes
    -----
    DGL attaches every feature to every block lazily; mpgraph gathers the
    features named here, eagerly, only at the model's two ends. Pass empty
    lists to gather nothing (e.g. when features live elsewhere).
    """

    def __init__(self, prefetch_node_feats=None, prefetch_labels=None, prefetch_edge_feats=None,
                 output_device=None):
        what = type(self).__name__
        self.prefetch_node_feats = _feature_spec(prefetch_node_feats, what, "prefetch_node_feats")
        self.prefetch_labels = _feature_spec(prefetch_labels, what, "prefetch_labels")
        self.prefetch_edge_feats = _feature_spec(prefetch_edge_feats, what, "prefetch_edge_feats")
        self.output_device = output_device

    def sample_blocks(self, g, seed_nodes, exclude_eids=None):
        """Return ``(input_nodes, output_nodes, blocks)`` without features."""
        raise NotImplementedError(f"{type(self).__name__} must implement sample_blocks(g, seed_nodes, exclude_eids)")

    def assign_features(self, g, blocks):
        """Gather the prefetched features of ``g`` into ``blocks`` (in place)."""
        if not blocks:
            return
        if is_typed(g):
            self._assign_typed(g, blocks)
            return
        what = type(self).__name__
        node_feats = _graph_spec(self.prefetch_node_feats, what, "prefetch_node_feats")
        labels = _graph_spec(self.prefetch_labels, what, "prefetch_labels")
        edge_feats = _graph_spec(self.prefetch_edge_feats, what, "prefetch_edge_feats")
        _gather_into(blocks[0].srcdata, g.srcdata, node_feats, blocks[0].srcdata[NID])
        _gather_into(blocks[-1].dstdata, g.dstdata, labels, blocks[-1].dstdata[NID])
        if edge_feats is None and not len(g.edata):
            return
        for block in blocks:
            _gather_into(block.edata, g.edata, edge_feats, block.edata[EID])

    def _assign_typed(self, g, blocks):
        """:meth:`assign_features` for typed blocks of a HeteroGraph (per node type and relation)."""
        what = type(self).__name__
        nframes = {nt: g.nodes[nt].data for nt in g.ntypes}
        eframes = {cet: g.edges[cet].data for cet in g.canonical_etypes}
        node_feats = _typed_spec(self.prefetch_node_feats, g.ntypes, nframes, g._ntype, what, "prefetch_node_feats")
        labels = _typed_spec(self.prefetch_labels, g.ntypes, nframes, g._ntype, what, "prefetch_labels")
        edge_feats = _typed_spec(self.prefetch_edge_feats, g.canonical_etypes, eframes, g.to_canonical_etype, what,
                                 "prefetch_edge_feats")
        first, last = blocks[0], blocks[-1]
        for nt in g.ntypes:
            src = first.srcnodes[nt].data
            _gather_into(src, nframes[nt], node_feats[nt], src[NID])
            dst = last.dstnodes[nt].data
            _gather_into(dst, nframes[nt], labels[nt], dst[NID])
        for block in blocks:
            for cet in g.canonical_etypes:
                edata = block.edges[cet].data
                _gather_into(edata, eframes[cet], edge_feats[cet], edata[EID])

    def sample(self, g, seed_nodes, exclude_eids=None):
        """Sample blocks for ``seed_nodes`` and gather their features: ``(input_nodes, output_nodes, blocks)``."""
        input_nodes, output_nodes, blocks = self.sample_blocks(g, seed_nodes, exclude_eids)
        self.assign_features(g, blocks)
        if self.output_device is not None:
            dev = torch.device(self.output_device)
            input_nodes, output_nodes = _ids_to(input_nodes, dev), _ids_to(output_nodes, dev)
            blocks = [b.to(dev) for b in blocks]
        return input_nodes, output_nodes, blocks


def _ids_to(ids, device):
    """IDs (a tensor, or ``{type: tensor}`` for typed graphs) on ``device``."""
    if isinstance(ids, dict):
        return {k: v.to(device) for k, v in ids.items()}
    return ids.to(device)


def _pair_graph(g, nodes, src_local, dst_local, eids=None):
    index = as_index(g)
    idtype = index.idtype
    pair_index = Index.from_coo(src_local.to(idtype), dst_local.to(idtype), nodes.numel(), nodes.numel())
    node_frame = Frame(nodes.numel(), g.device, "node")
    node_frame[NID] = nodes.to(idtype)
    edge_frame = Frame(src_local.numel(), g.device, "edge")
    if eids is not None:
        edge_frame[EID] = eids.to(idtype)
    return Graph(pair_index, g.canonical_etypes[0], False, [node_frame], edge_frame)


class EdgePredictionSampler(Sampler):
    """Wrap a :class:`BlockSampler` for edge prediction (see :func:`as_edge_prediction_sampler`)."""

    def __init__(self, sampler, exclude=None, reverse_eids=None, reverse_etypes=None, negative_sampler=None,
                 prefetch_labels=None):
        what = "as_edge_prediction_sampler"
        if not isinstance(sampler, BlockSampler):
            raise DGLTypeError(f"{what} expected a BlockSampler (e.g. NeighborSampler), got "
                               f"{type(sampler).__name__}")
        if reverse_etypes is not None or exclude == "reverse_types":
            raise DGLError(f"{what} expected exclude None, 'self', 'reverse_id' or a callable, got "
                           f"{exclude!r} (reverse_types needs several edge types; graphs hold one relation)")
        if not (exclude is None or exclude in _EXCLUDE or callable(exclude)):
            raise DGLError(f"{what} expected exclude None, 'self', 'reverse_id' or a callable, got {exclude!r}")
        if exclude == "reverse_id" and reverse_eids is None:
            raise DGLError(f"{what} expected reverse_eids with exclude='reverse_id', got None")
        if reverse_eids is not None and not isinstance(reverse_eids, torch.Tensor):
            reverse_eids = torch.as_tensor(reverse_eids, dtype=_I64)
        self.sampler = sampler
        self.exclude = exclude
        self.reverse_eids = reverse_eids
        self.negative_sampler = negative_sampler
        self.prefetch_labels = _names(prefetch_labels, what, "prefetch_labels") or []

    def _exclude_eids(self, seed_edges):
        if self.exclude is None:
            return None
        if self.exclude == "self":
            return seed_edges
        if self.exclude == "reverse_id":
            rev = self.reverse_eids.to(seed_edges.device)[seed_edges].to(_I64)
            return torch.cat([seed_edges, rev])
        return torch.as_tensor(self.exclude(seed_edges), device=seed_edges.device).reshape(-1).to(_I64)

    def sample(self, g, seed_edges):
        """Return ``(input_nodes, pair_graph, neg_pair_graph, blocks)`` (no ``neg_pair_graph`` without a
        negative sampler).

        ``pair_graph`` holds the seed edges over the compacted node set of the
        batch (``ndata[NID]``: IDs in ``g``; ``edata[EID]``: the seed edge IDs);
        ``neg_pair_graph`` holds the negative pairs over the same nodes. The
        blocks are sampled for those nodes, with the excluded edges removed.
        """
        what = "EdgePredictionSampler"
        check_graph(g, what)
        if g.is_block or g._bipartite:
            raise DGLError(f"{what} expected a graph with one node type, got node types {g.ntypes}")
        index = as_index(g)
        eids = as_ids(g, seed_edges, index.num_edges, what, "edge")
        src, dst = index.src64[eids], index.dst64[eids]
        parts = [src, dst]
        if self.negative_sampler is not None:
            neg_src, neg_dst = self.negative_sampler(g, eids)
            neg_src, neg_dst = neg_src.to(_I64), neg_dst.to(_I64)
            parts += [neg_src, neg_dst]
        nodes, rank = first_appearance(torch.cat(parts))
        sizes = [p.numel() for p in parts]
        local = torch.split(rank, sizes)
        pair = _pair_graph(g, nodes, local[0], local[1], eids)
        for k in self.prefetch_labels:
            pair.edata[k] = g.edata[k].index_select(0, eids.to(g.edata[k].device))
        exclude = self._exclude_eids(eids)
        input_nodes, _, blocks = self.sampler.sample(g, nodes, exclude)
        out_dev = self.sampler.output_device
        if out_dev is not None:
            pair = pair.to(out_dev)
        if self.negative_sampler is None:
            return input_nodes, pair, blocks
        neg = _pair_graph(g, nodes, local[2], local[3])
        if out_dev is not None:
            neg = neg.to(out_dev)
        return input_nodes, pair, neg, blocks


def as_edge_prediction_sampler(sampler, exclude=None, reverse_eids=None, reverse_etypes=None,
                               negative_sampler=None, prefetch_labels=None):
    """Turn a node-wise :class:`BlockSampler` into a sampler of edge mini-batches.

    The :class:`~mpgraph.dataloading.DataLoader` then iterates over edge IDs and
    yields ``(input_nodes, pair_graph, neg_pair_graph, blocks)``, or
    ``(input_nodes, pair_graph, blocks)`` without ``negative_sampler``.

    Parameters
    ----------
    sampler : BlockSampler
        Samples the blocks for the batch's nodes (e.g. :class:`NeighborSampler`).
    exclude : None, str or callable, optional
        Edges removed from the graph while sampling the blocks of a batch:
        None (keep all), ``'self'`` (the batch's edges), ``'reverse_id'`` (the
        batch's edges and ``reverse_eids[edges]``), or a callable from the
        batch's edge IDs to edge IDs.
    reverse_eids : Tensor, optional
        ``(E,)`` ID of each edge's reverse edge (for ``'reverse_id'``).
    reverse_etypes : dict, optional
        Not supported (graphs hold one relation).
    negative_sampler : callable, optional
        ``negative_sampler(g, eids) -> (src, dst)``, e.g.
        :class:`mpgraph.dataloading.negative_sampler.Uniform`.
    prefetch_labels : list of str, optional
        Edge features gathered into ``pair_graph.edata``.

    Returns
    -------
    EdgePredictionSampler

    Raises
    ------
    DGLError
        Unknown ``exclude``; ``'reverse_id'`` without ``reverse_eids``.
    """
    return EdgePredictionSampler(sampler, exclude, reverse_eids, reverse_etypes, negative_sampler, prefetch_labels)
