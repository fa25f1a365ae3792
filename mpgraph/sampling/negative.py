"""Global uniform negative sampling (DGL's ``dgl.sampling.global_uniform_negative_sampling``)."""

import math

import torch

from .._index import as_index
from ..base import DGLError
from ._utils import check_graph

__all__ = ["global_uniform_negative_sampling"]

_I64 = torch.int64


def global_uniform_negative_sampling(g, num_samples, exclude_self_loops=True, replace=False, etype=None,
                                     redundancy=None):
    """Draw node pairs ``(u, v)`` uniformly among those that are not edges of ``g``.

    Candidates are drawn in bulk (a few vectorised rounds, sized by the graph's
    density), those that are edges (or self-loops, when excluded) are dropped,
    and without replacement repeated pairs are dropped too. Like DGL, fewer
    than ``num_samples`` pairs may be returned when the graph is nearly complete.

    Parameters
    ----------
    g : Graph
        The graph (homogeneous or uni-bipartite).
    num_samples : int
        Number of pairs wanted.
    exclude_self_loops : bool, optional
        Never return ``(u, u)`` (homogeneous graphs; default True).
    replace : bool, optional
        Allow the same pair more than once (default False).
    etype : str or tuple, optional
        The edge type (graphs hold one).
    redundancy : float, optional
        Extra fraction of candidates drawn per round (default: from the density).

    Returns
    -------
    src, dst : Tensor
        ``(n,)`` each, ``n <= num_samples``, in ``g.idtype``, in random order.

    Raises
    ------
    DGLError
        ``num_samples`` not a non-negative int; unknown ``etype``.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.sampling import global_uniform_negative_sampling
    >>> g = dgl.graph(([0, 1, 2], [1, 2, 0]))
    >>> src, dst = global_uniform_negative_sampling(g, 3)     # the only non-edges: 1->0, 2->1, 0->2
    >>> sorted(zip(src.tolist(), dst.tolist()))
    [(0, 2), (1, 0), (2, 1)]
    """
    what = "global_uniform_negative_sampling"
    check_graph(g, what)
    if etype is not None:
        g.to_canonical_etype(etype)
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 0:
        raise DGLError(f"{what} expected num_samples to be an int >= 0, got {num_samples!r}")
    index = as_index(g)
    ns, nd = index.num_src, index.num_dst
    device = g.device
    no_loops = bool(exclude_self_loops) and not g._bipartite
    total = ns * nd
    empty = torch.zeros(0, dtype=index.idtype, device=device)
    if num_samples == 0 or total == 0:
        return empty, empty
    # fraction of the pair space that is acceptable (duplicated edges make this a lower bound)
    free = total - index.num_edges - (ns if no_loops else 0)
    if free <= 0:
        free = 1
    accept = free / total
    extra = 0.1 if redundancy is None else float(redundancy)
    keys = torch.zeros(0, dtype=_I64, device=device)
    for _ in range(4):                                # rounds of bulk draws, not a loop over samples
        need = num_samples - keys.numel()
        if need <= 0:
            break
        m = int(math.ceil(need / accept * (1 + extra))) + 16
        cand = torch.randint(0, total, (m,), device=device)
        src, dst = cand // nd, cand % nd
        ok = ~g.has_edges_between(src, dst)
        if no_loops:
            ok &= src != dst
        keys = torch.cat([keys, cand[ok]])
        if not replace:
            keys = _distinct_in_order(keys)
    keys = keys[:num_samples]
    return (keys // nd).to(index.idtype), (keys % nd).to(index.idtype)


def _distinct_in_order(x):
    """Distinct values of ``x`` in order of first appearance."""
    if x.numel() == 0:
        return x
    uniq, inv = torch.unique(x, return_inverse=True)
    first = torch.full((uniq.numel(),), x.numel(), dtype=_I64, device=x.device)
    first.scatter_reduce_(0, inv, torch.arange(x.numel(), device=x.device), reduce="amin")
    return uniq[torch.sort(first).indices]
