"""Random walks (DGL's ``dgl.sampling.random_walk``), all traces advanced together one step at a time."""

import torch

from .._index import as_index
from ..base import DGLError
from ._utils import as_ids, candidate_weights, check_graph, edge_weights

__all__ = ["random_walk"]

_I64 = torch.int64
_F64 = torch.float64


def _steps(g, metapath, length, what):
    if metapath is None:
        if length is None:
            raise DGLError(f"{what} expected metapath or length, got neither; pass length=<number of steps>")
        if isinstance(length, bool) or not isinstance(length, int) or length < 0:
            raise DGLError(f"{what} expected length to be an int >= 0, got {length!r}")
        return length
    if isinstance(metapath, (str, tuple)):
        raise DGLError(f"{what} expected metapath as a list of edge types, got {metapath!r}")
    metapath = list(metapath)
    for etype in metapath:
        try:
            g.to_canonical_etype(etype)
        except DGLError as err:
            raise DGLError(f"{what} expected metapath entries among the graph's edge types {g.etypes}, got "
                           f"{etype!r}") from err
    return len(metapath)


def _restart(restart_prob, L, device, what):
    """Per-step termination probability as ``(L,)`` float64, or None."""
    if restart_prob is None:
        return None
    if isinstance(restart_prob, torch.Tensor):
        rp = restart_prob.to(device=device, dtype=_F64).reshape(-1)
        if rp.numel() != L:
            raise DGLError(f"{what} expected restart_prob with one value per step ({L}), got {rp.numel()}")
    else:
        try:
            rp = torch.full((L,), float(restart_prob), dtype=_F64, device=device)
        except (TypeError, ValueError) as err:
            raise DGLError(f"{what} expected restart_prob as a float or a tensor, got {restart_prob!r}") from err
    if rp.numel() and bool(((rp < 0) | (rp > 1) | torch.isnan(rp)).any()):
        raise DGLError(f"{what} expected restart_prob values in [0, 1], got {rp.tolist()}")
    return rp


def random_walk(g, nodes, *, metapath=None, length=None, prob=None, restart_prob=None, return_eids=False):
    r"""Random walks along out-edges, starting from each node of ``nodes``.

    At every step a walk moves along one out-edge of its current node, chosen
    uniformly or with probability proportional to ``prob``. A walk that
    reaches a node without out-edges (or whose out-edges all have zero
    ``prob``), or that terminates with probability ``restart_prob`` before a
    step, stops; the rest of its trace is padded with -1.

    Parameters
    ----------
    g : Graph
        A homogeneous graph (a uni-bipartite graph allows one step).
    nodes : sequence or Tensor
        Start nodes (repeats give independent walks).
    metapath : list of str, optional
        Edge type of every step; its length is the number of steps.
    length : int, optional
        Number of steps when ``metapath`` is not given.
    prob : str or Tensor, optional
        Unnormalised transition weight per edge (feature name or ``(E,)`` tensor).
    restart_prob : float or Tensor, optional
        Probability to terminate before each step (a scalar, or one per step).
    return_eids : bool, optional
        Also return the traversed edge IDs (default False).

    Returns
    -------
    traces : Tensor
        ``(S, L + 1)`` node IDs (``g.idtype``), -1 after a walk stops.
    eids : Tensor
        ``(S, L)`` edge IDs, -1 padded; only with ``return_eids=True``.
    types : Tensor
        ``(L + 1,)`` int64 node type ID of every trace position.

    Raises
    ------
    DGLError
        Neither ``metapath`` nor ``length``; start nodes out of range; ``prob``
        without one value per edge; ``restart_prob`` outside ``[0, 1]``.

    Examples
    --------
    >>> import mpgraph as dgl
    >>> from mpgraph.sampling import random_walk
    >>> g = dgl.graph(([0, 1, 2], [1, 2, 0]))          # a directed 3-cycle: walks are deterministic
    >>> traces, types = random_walk(g, [0, 2], length=4)
    >>> traces, types
    (tensor([[0, 1, 2, 0, 1],
            [2, 0, 1, 2, 0]]), tensor([0, 0, 0, 0, 0]))
    """
    what = "random_walk"
    check_graph(g, what)
    L = _steps(g, metapath, length, what)
    index = as_index(g)
    if g._bipartite and L > 1:
        raise DGLError(f"{what} expected a homogeneous graph for walks of more than one step, got node types "
                       f"{g.ntypes} and {L} steps")
    seeds = as_ids(g, nodes, index.num_src, what)
    prob, _ = edge_weights(g, prob, None, what)
    rp = _restart(restart_prob, L, g.device, what)
    device = g.device
    S = seeds.numel()
    indptr, dst, eid = index.csr()
    if prob is not None:
        # per-row normalised cumulative weights, so every lookup is base[row] + U(0, 1)
        w = candidate_weights(prob, None, eid, what)
        row = torch.repeat_interleave(torch.arange(index.num_src, device=device), indptr[1:] - indptr[:-1],
                                      output_size=eid.numel())
        total = torch.zeros(index.num_src, dtype=_F64, device=device).index_add_(0, row, w)
        wn = w / torch.where(total > 0, total, 1.0)[row]
        cum = torch.cumsum(wn, 0)
        base = torch.zeros(index.num_src, dtype=_F64, device=device)
        nonempty = indptr[1:] > indptr[:-1]
        base[nonempty] = (cum - wn)[indptr[:-1][nonempty]]
        pos_all = torch.arange(eid.numel(), device=device)
        last = torch.full((index.num_src,), -1, dtype=_I64, device=device).scatter_reduce_(
            0, row, torch.where(w > 0, pos_all, -1), reduce="amax")
    traces = torch.full((S, L + 1), -1, dtype=_I64, device=device)
    eids = torch.full((S, L), -1, dtype=_I64, device=device)
    traces[:, 0] = seeds
    alive = torch.arange(S, device=device)            # walks still going, and their current nodes
    cur = seeds
    for step in range(L):                             # over steps, every walk at once
        if rp is not None and alive.numel():
            go = torch.rand(alive.numel(), dtype=_F64, device=device) >= rp[step]
            alive, cur = alive[go], cur[go]
        start = indptr[cur]
        if prob is None:
            deg = indptr[cur + 1] - start
            ok = deg > 0
            u = torch.rand(cur.numel(), dtype=_F64, device=device)
            pos = start + (u * deg.to(_F64)).to(_I64).minimum((deg - 1).clamp(min=0))
        else:
            ok = total[cur] > 0
            u = torch.rand(cur.numel(), dtype=_F64, device=device)
            pos = torch.searchsorted(cum, base[cur] + u, right=True).minimum(last[cur]).clamp(min=0)
        alive, pos = alive[ok], pos[ok]
        cur = dst[pos]
        traces[alive, step + 1] = cur
        eids[alive, step] = eid[pos]
    traces = traces.to(index.idtype)
    if g._bipartite:
        types = torch.tensor([g.get_ntype_id(g.srctypes[0]), g.get_ntype_id(g.dsttypes[0])][:L + 1],
                             dtype=_I64, device=device)
    else:
        types = torch.zeros(L + 1, dtype=_I64, device=device)
    if return_eids:
        return traces, eids.to(index.idtype), types
    return traces, types
