"""Negative samplers for edge prediction (DGL's ``dgl.dataloading.negative_sampler``).

A negative sampler is called as ``sampler(g, eids)`` and returns ``(src, dst)``
of the negative pairs for the positive edges ``eids`` (a ``{etype: (src, dst)}``
dict when ``eids`` is a dict).
"""

import torch

from .._index import as_index
from ..base import DGLError
from ..sampling._utils import as_ids
from ..sampling.negative import global_uniform_negative_sampling

__all__ = ["PerSourceUniform", "Uniform", "GlobalUniform"]


def _check_k(k, what):
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise DGLError(f"{what} expected k (negatives per edge) to be an int >= 1, got {k!r}")
    return k


class _BaseNegativeSampler:
    def _generate(self, g, eids):
        raise NotImplementedError(f"{type(self).__name__} must implement _generate(g, eids)")

    def __call__(self, g, eids):
        if isinstance(eids, dict):
            if len(eids) != 1:
                raise DGLError(f"{type(self).__name__} expected one edge type, got {list(eids)}")
            (etype, ids), = eids.items()
            return {g.to_canonical_etype(etype): self._generate(g, ids)}
        return self._generate(g, eids)


class PerSourceUniform(_BaseNegativeSampler):
    """For every positive edge ``(u, v)``, ``k`` pairs ``(u, v')`` with ``v'`` uniform over all nodes.

    Negative pairs may be edges of the graph (as in DGL); ``src`` is the
    positive sources, each repeated ``k`` times.

    Parameters
    ----------
    k : int
        Negatives per positive edge.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.dataloading.negative_sampler import Uniform
    >>> g = dgl.graph(([0, 1, 2], [1, 2, 3]))
    >>> src, dst = Uniform(2)(g, torch.tensor([0, 2]))
    >>> src, dst.shape
    (tensor([0, 0, 2, 2]), torch.Size([4]))
    """

    def __init__(self, k):
        self.k = _check_k(k, type(self).__name__)

    def _generate(self, g, eids):
        index = as_index(g)
        e = as_ids(g, eids, index.num_edges, type(self).__name__, "edge")
        src = index.src64[e].repeat_interleave(self.k)
        dst = torch.randint(0, index.num_dst, (src.numel(),), device=g.device) if index.num_dst else src[:0]
        return src.to(index.idtype), dst.to(index.idtype)


#: DGL's name of :class:`PerSourceUniform`.
Uniform = PerSourceUniform


class GlobalUniform(_BaseNegativeSampler):
    """``k * len(eids)`` pairs drawn uniformly among the non-edges of the graph.

    See :func:`mpgraph.sampling.global_uniform_negative_sampling` (fewer pairs
    may be returned on a nearly complete graph).

    Parameters
    ----------
    k : int
        Negatives per positive edge.
    exclude_self_loops : bool, optional
        Never return ``(u, u)`` (default True).
    replace : bool, optional
        Allow repeated pairs (default False).
    redundancy : float, optional
        Extra fraction of candidates drawn per round.
    """

    def __init__(self, k, exclude_self_loops=True, replace=False, redundancy=None):
        self.k = _check_k(k, type(self).__name__)
        self.exclude_self_loops = exclude_self_loops
        self.replace = replace
        self.redundancy = redundancy

    def _generate(self, g, eids):
        n = as_ids(g, eids, g.num_edges(), type(self).__name__, "edge").numel()
        return global_uniform_negative_sampling(g, n * self.k, self.exclude_self_loops, self.replace,
                                                redundancy=self.redundancy)
