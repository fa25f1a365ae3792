"""Validation and vectorised segment helpers shared by the samplers.

A *segment* is the run of candidate edges of one seed node in a compressed
structure: seed ``i`` owns positions ``start[i] : start[i] + deg[i]`` of the
``indices``/``eids`` arrays of a CSC (in-edges) or CSR (out-edges). Every
sampler here works on all segments at once; Python loops run over sampling
steps (fanout slots, walk steps), never over nodes.
"""

import numpy as np
import torch

from ..base import DGLError, DGLTypeError
from ..graph import Graph
from ..heterograph import HeteroGraph

_I64 = torch.int64
_F64 = torch.float64
EDGE_DIRS = ("in", "out")


# ----------------------------------------------------------------------
# validation at the public boundary
# ----------------------------------------------------------------------
def check_graph(g, what):
    if isinstance(g, HeteroGraph):
        raise DGLTypeError(f"{what} expected a graph with one relation (mpgraph.Graph), got a "
                           f"{type(g).__name__} with the relations {g.canonical_etypes}; {what} does not support "
                           "several relations: run it on one relation, g[etype]")
    if not isinstance(g, Graph):
        raise DGLTypeError(f"{what} expected an mpgraph graph with one relation (mpgraph.Graph), got "
                           f"{type(g).__name__}; build one with mpgraph.graph((src, dst))")


def is_typed(g):
    """True for a :class:`~mpgraph.heterograph.HeteroGraph` (several node or edge types)."""
    return isinstance(g, HeteroGraph)


def check_typed_graph(g, what):
    """``g`` checked to be a HeteroGraph that is not a block."""
    if g.is_block:
        raise DGLError(f"{what} expected a graph, got a typed block; sample from the graph itself")
    return g


def check_fanout_value(fanout, what, name="fanout"):
    """One fanout value: an int >= -1 (-1 = every neighbour)."""
    if isinstance(fanout, torch.Tensor) and fanout.numel() == 1 and not fanout.is_floating_point():
        fanout = int(fanout)
    if isinstance(fanout, bool) or not isinstance(fanout, (int, np.integer)) or fanout < -1:
        raise DGLError(f"{what} expected {name} to be an int >= 0 or -1 (all neighbours), got {fanout!r}")
    return int(fanout)


def typed_fanouts(g, fanout, what, name="fanout"):
    """``{canonical etype: int}`` for every relation of ``g`` from an int or an ``{etype: int}`` dict.

    A dict must give every relation exactly once (by name or canonical tuple), as in DGL.
    """
    if not isinstance(fanout, dict):
        value = check_fanout_value(fanout, what, name)
        return {cet: value for cet in g.canonical_etypes}
    out = {}
    for key, value in fanout.items():
        try:
            cet = g.to_canonical_etype(key)
        except DGLError as err:
            raise type(err)(f"{what}: {name} key {key!r}: {err}") from err
        if cet in out:
            raise DGLError(f"{what} expected each relation once in {name}, got {cet} twice (as a name and as a "
                           "canonical tuple)")
        out[cet] = check_fanout_value(value, what, f"{name}[{key!r}]")
    missing = [cet for cet in g.canonical_etypes if cet not in out]
    if missing:
        raise DGLError(f"{what} expected a fanout for every relation in the {name} dict, got none for {missing}; "
                       "give -1 to take every edge or 0 to take none")
    return out


def typed_ids(g, ids, what, kind="node"):
    """``{ntype: int64 ids}`` from an ``{ntype: ids}`` dict (plain IDs when ``g`` has one node type).

    Types not in the dict are absent from the result.
    """
    types = g.ntypes
    if not isinstance(ids, dict):
        if len(types) != 1:
            raise DGLError(f"{what} expected {kind} IDs as a dict {{ntype: ids}} for a graph with node types "
                           f"{types}, got {type(ids).__name__}")
        ids = {types[0]: ids}
    out = {}
    for ntype, value in ids.items():
        if ntype not in types:
            raise DGLError(f"{what} expected node types among {types}, got {ntype!r}; the graph has no node type "
                           f"{ntype!r}")
        out[ntype] = as_ids(g, value, g.num_nodes(ntype), what, f"{ntype!r} {kind}")
    return out


def typed_edge_weights(g, prob, mask, what):
    """``{canonical etype: (prob, mask)}`` edge tensors per relation (None where uniform).

    ``prob``/``mask`` is an edge feature name (relations without that feature
    sample uniformly / unmasked; at least one relation must have it) or a dict
    ``{etype: name or (E,) tensor}`` (relations not in the dict: uniform).
    """
    out = {cet: [None, None] for cet in g.canonical_etypes}
    for pos, (value, name) in enumerate(((prob, "prob"), (mask, "mask"))):
        if value is None:
            continue
        if isinstance(value, str):
            have = [cet for cet in g.canonical_etypes if value in g.edges[cet].data]
            if not have:
                raise DGLError(f"{what} expected {name}={value!r} to name an edge feature of at least one relation, "
                               f"got none of that name in {g.canonical_etypes}")
            per = {cet: value for cet in have}
        elif isinstance(value, dict):
            per = {}
            for key, v in value.items():
                per[g.to_canonical_etype(key)] = v
        else:
            raise DGLTypeError(f"{what} expected {name} on a graph with several relations as an edge feature name or "
                               f"a dict {{etype: name or tensor}}, got {type(value).__name__}")
        for cet, v in per.items():
            rel = g[cet]
            if pos == 0:
                out[cet][0] = edge_weights(rel, v, None, f"{what} (relation {cet})")[0]
            else:
                out[cet][1] = edge_weights(rel, None, v, f"{what} (relation {cet})")[1]
    return {cet: tuple(pm) for cet, pm in out.items()}


def typed_exclude(g, exclude_edges, what):
    """``{canonical etype: sorted int64 edge IDs}`` from an ``{etype: eids}`` dict, or None."""
    if exclude_edges is None:
        return {}
    if not isinstance(exclude_edges, dict):
        raise DGLTypeError(f"{what} expected exclude_edges as a dict {{etype: edge IDs}} for a graph with several "
                           f"relations, got {type(exclude_edges).__name__}")
    out = {}
    for key, value in exclude_edges.items():
        cet = g.to_canonical_etype(key)
        out[cet] = exclude_ids(g[cet], value, f"{what} (relation {cet})")
    return out


def check_edge_dir(edge_dir, what):
    if edge_dir not in EDGE_DIRS:
        raise DGLError(f"{what} expected edge_dir 'in' or 'out', got {edge_dir!r}")
    return edge_dir


def check_fanout(fanout, what, name="fanout"):
    """A fanout: an int >= -1 (-1 = every neighbour), or a one-entry ``{etype: int}`` dict."""
    if isinstance(fanout, dict):
        if len(fanout) != 1:
            raise DGLError(f"{what} expected one edge type in the {name} dict (this graph holds one relation), "
                           f"got {list(fanout)}")
        (fanout,) = fanout.values()
    return check_fanout_value(fanout, what, name)


def as_ids(g, ids, n, what, kind="node"):
    """User IDs (int, sequence, numpy array, integer tensor, one-entry dict) as int64 on ``g.device``.

    Raises :class:`DGLError` for IDs outside ``[0, n)`` (checked with one
    min/max reduction) and for tensors on another device.
    """
    if isinstance(ids, dict):
        if len(ids) != 1:
            raise DGLError(f"{what} expected one type in the {kind} ID dict (graphs hold one relation), "
                           f"got {list(ids)}")
        (ids,) = ids.values()
    if isinstance(ids, bool):
        raise DGLTypeError(f"{what} expected {kind} IDs as int, sequence or integer tensor, got bool")
    if isinstance(ids, torch.Tensor):
        if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
            raise DGLTypeError(f"{what} expected integer {kind} IDs, got dtype {ids.dtype}")
        if ids.device != g.device:
            raise DGLError(f"{what} expected {kind} IDs on {g.device} (the graph's device), got a tensor on "
                           f"{ids.device}; move them with .to(g.device)")
        t = ids.reshape(-1).to(_I64)
    else:
        arr = np.asarray(ids)
        if arr.size == 0:
            arr = arr.astype(np.int64)
        if not np.issubdtype(arr.dtype, np.integer):
            raise DGLTypeError(f"{what} expected integer {kind} IDs, got {arr.dtype} values")
        t = torch.as_tensor(arr.astype(np.int64).reshape(-1), device=g.device)
    if t.numel():
        lo, hi = int(t.min()), int(t.max())
        if lo < 0 or hi >= n:
            raise DGLError(f"{what} expected {kind} IDs in [0, {n}), got {lo if lo < 0 else hi}; "
                           f"the graph has {n} {kind}s")
    return t


def edge_values(g, value, what, name, kind="probability"):
    """Per-edge values from a feature name or a tensor of ``g.num_edges()`` elements; None passes."""
    if value is None:
        return None
    E = g.num_edges()
    if isinstance(value, str):
        if value not in g.edata:
            raise DGLError(f"{what} expected {name}={value!r} to name an edge feature, got none of that name; "
                           f"available: {sorted(g.edata.keys())}")
        value = g.edata[value]
    if not isinstance(value, torch.Tensor):
        raise DGLTypeError(f"{what} expected {name} as an edge feature name or a tensor of {E} {kind} values, "
                           f"got {type(value).__name__}")
    if value.dim() != 1 and not (value.dim() == 2 and value.shape[1] == 1):
        raise DGLError(f"{what} expected {name} of shape ({E},) (one {kind} per edge), got {tuple(value.shape)}")
    value = value.reshape(-1)
    if value.numel() != E:
        raise DGLError(f"{what} expected {name} of shape ({E},) (one {kind} per edge), got {value.numel()} values")
    if value.device != g.device:
        raise DGLError(f"{what} expected {name} on {g.device} (the graph's device), got {value.device}")
    return value


def edge_weights(g, prob, mask, what):
    """Validated ``(prob, mask)`` edge tensors (either may be None; both None = uniform sampling).

    Only shapes and dtypes are checked here (``O(1)``); values are checked on
    the candidate edges a sampler actually reads (:func:`candidate_weights`).
    """
    p = edge_values(g, prob, what, "prob")
    m = edge_values(g, mask, what, "mask", "mask")
    if p is not None and (p.dtype == torch.bool or p.is_complex()):
        raise DGLTypeError(f"{what} expected real prob values, got dtype {p.dtype}")
    return p, m


def candidate_weights(prob, mask, cand, what="sample_neighbors"):
    """Float64 weights of the candidate edges ``cand`` (edge IDs) from ``prob``/``mask``; None if uniform."""
    if prob is None and mask is None:
        return None
    if prob is not None:
        w = take(prob, cand).to(_F64)
        if w.numel() and bool(((w < 0) | ~torch.isfinite(w)).any()):
            bad = w[(w < 0) | ~torch.isfinite(w)][0]
            raise DGLError(f"{what} expected finite non-negative prob values, got {float(bad)}")
    else:
        w = torch.ones(cand.numel(), dtype=_F64, device=cand.device)
    if mask is not None:
        w = torch.where(take(mask, cand) != 0, w, 0.0)
    return w


def exclude_ids(g, exclude_edges, what):
    """Edge IDs to exclude, sorted int64 (for ``torch.isin``), or None."""
    if exclude_edges is None:
        return None
    ids = as_ids(g, exclude_edges, g.num_edges(), what, "edge")
    return torch.unique(ids)


# ----------------------------------------------------------------------
# segment helpers
# ----------------------------------------------------------------------
def expand_segments(start, length):
    """All positions of the segments ``[start[i], start[i] + length[i])``.

    Returns ``(pos: (T,), seg: (T,), rank: (T,))``: the position, the segment
    it belongs to and its offset inside the segment, segments in order.
    """
    T = int(length.sum()) if length.numel() else 0
    device = start.device
    if T == 0:
        z = torch.zeros(0, dtype=_I64, device=device)
        return z, z, z
    seg = torch.repeat_interleave(torch.arange(length.numel(), device=device), length, output_size=T)
    seg_start = torch.cumsum(length, 0) - length
    rank = torch.arange(T, device=device) - take(seg_start, seg)
    return take(start, seg) + rank, seg, rank


def segmented_order(seg, key):
    """Permutation sorting by ``(seg, key)``: ``key`` ascending inside each segment (stable)."""
    order = torch.argsort(key, stable=True)
    return take(order, torch.argsort(take(seg, order), stable=True))


def take(x, idx):
    """``x[idx]`` for 1-D int64 ``idx`` along dim 0 (``index_select``: several times faster than ``x[idx]``)."""
    return x.index_select(0, idx)
