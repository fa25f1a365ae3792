"""Layers for graphs with several node and edge types (DGL's ``dgl.nn.pytorch.hetero``).

* :class:`HeteroGraphConv`: one module per relation, results aggregated per
  destination node type;
* :class:`HeteroLinear`: one :class:`torch.nn.Linear` per type;
* :class:`HeteroEmbedding`: one :class:`torch.nn.Embedding` per type.

Precision: the built-in aggregations ``sum`` and ``mean`` add the per-relation
results of 16-bit modules in float32 and round once; ``max``/``min``/``stack``
are exact. The result has the dtype of the per-relation results.
"""

from functools import partial

import torch
from torch import nn

from ..base import DGLError, DGLTypeError
from ..precision import accum_dtype
from .utils import project

__all__ = ["HeteroGraphConv", "HeteroLinear", "HeteroEmbedding", "get_aggregate_fn"]

_AGGREGATES = ("sum", "max", "min", "mean", "stack")


def _stack_agg(inputs, dsttype):  # noqa: ARG001 (DGL's signature)
    if len(inputs) == 0:
        return None
    return torch.stack(inputs, dim=1)


def _reduce_agg(inputs, dsttype, reduce_op):  # noqa: ARG001
    """Combine ``inputs`` (same shape) with ``reduce_op``; sums/means accumulate in float32 for 16-bit inputs."""
    if len(inputs) == 0:
        return None
    dtype = inputs[0].dtype
    for x in inputs[1:]:
        dtype = torch.promote_types(dtype, x.dtype)
    if reduce_op in ("sum", "mean"):
        acc = accum_dtype(dtype) if dtype.is_floating_point else dtype
        total = inputs[0].to(acc)
        for x in inputs[1:]:
            total = total + x.to(acc)
        if reduce_op == "mean":
            total = total / len(inputs)
        return total.to(dtype)
    pick = torch.maximum if reduce_op == "max" else torch.minimum
    total = inputs[0].to(dtype)
    for x in inputs[1:]:
        total = pick(total, x.to(dtype))
    return total


def get_aggregate_fn(agg):
    """The cross-relation aggregation function ``f(list_of_tensors, dsttype)`` named ``agg``.

    Parameters
    ----------
    agg : str
        ``'sum'``, ``'max'``, ``'min'``, ``'mean'`` or ``'stack'``.

    Raises
    ------
    DGLError
        Any other name.
    """
    if agg == "stack":
        return _stack_agg
    if agg in _AGGREGATES:
        return partial(_reduce_agg, reduce_op=agg)
    raise DGLError(f"expected aggregate in {list(_AGGREGATES)} or a callable, got {agg!r}")


class HeteroGraphConv(nn.Module):
    r"""Apply one module per relation and aggregate the results per destination node type.

    .. math::

        h_{v}^{(l+1)} = \mathop{\mathrm{AGG}}_{r \in \mathcal{R},\, \mathrm{dst}(r) = \mathrm{type}(v)}
                        f_r\big(g_r, h_{r_{src}}^{(l)}, h_{r_{dst}}^{(l)}\big)

    where :math:`f_r` is the module of relation :math:`r` and :math:`g_r` its
    relation slice ``g[srctype, etype, dsttype]``. Modules that have
    ``set_allow_zero_in_degree`` get it set to True (a heterograph has no
    general self-loop rule), as in DGL.

    Parameters
    ----------
    mods : dict[str or tuple, nn.Module]
        Module per edge type name (or per canonical ``(srctype, etype, dsttype)``;
        a canonical key takes precedence over its name).
    aggregate : str or callable, default 'sum'
        ``'sum'``, ``'max'``, ``'min'``, ``'mean'``, ``'stack'`` (``(N, R, *)``,
        relations in ``g.canonical_etypes`` order) or ``f(list_of_tensors,
        dsttype) -> tensor``.

    Raises
    ------
    DGLError
        An unknown aggregate name.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> from mpgraph.nn import GraphConv
    >>> g = dgl.heterograph({('user', 'follows', 'user'): ([0, 1], [1, 2]),
    ...                      ('user', 'plays', 'game'): ([0, 1, 2], [0, 0, 1])})
    >>> conv = HeteroGraphConv({'follows': GraphConv(4, 3), 'plays': GraphConv(4, 3)}, aggregate='sum')
    >>> out = conv(g, {'user': torch.ones(3, 4), 'game': torch.ones(2, 4)})
    >>> sorted(out), tuple(out['game'].shape)
    (['game', 'user'], (2, 3))
    """

    def __init__(self, mods, aggregate="sum"):
        super().__init__()
        if not isinstance(mods, dict):
            raise DGLTypeError(f"HeteroGraphConv: expected mods as a dict {{etype: module}}, got {type(mods).__name__}")
        self.mod_dict = dict(mods)
        self.mods = nn.ModuleDict({str(k): v for k, v in mods.items()})
        for mod in self.mods.values():
            # DGL's rule: do not fail on 0-in-degree nodes (no general self-loop rule for heterographs)
            set_allow = getattr(mod, "set_allow_zero_in_degree", None)
            if callable(set_allow):
                set_allow(True)
        if isinstance(aggregate, str):
            self.agg_fn = get_aggregate_fn(aggregate)
        elif callable(aggregate):
            self.agg_fn = aggregate
        else:
            raise DGLError(f"HeteroGraphConv: expected aggregate in {list(_AGGREGATES)} or a callable, got "
                           f"{aggregate!r}")

    def _get_module(self, cetype):
        mod = self.mod_dict.get(cetype)
        if mod is not None:
            return mod
        mod = self.mod_dict.get(cetype[1])
        if mod is not None:
            return mod
        raise DGLError(f"HeteroGraphConv: no module for relation {cetype}; the modules are for "
                       f"{list(self.mod_dict)}")

    def forward(self, g, inputs, mod_args=None, mod_kwargs=None):
        """Run every relation's module and aggregate per destination type.

        Parameters
        ----------
        g : HeteroGraph or Graph
            The graph (or a block).
        inputs : dict[str, Tensor] or pair of dict
            Node features per type; or ``(src_inputs, dst_inputs)``. On a block a
            single dict gives the destination features as the first
            ``num_dst_nodes(ntype)`` rows. Relations whose source type has no
            input are skipped.
        mod_args : dict[str, tuple], optional
            Extra positional arguments per edge type name.
        mod_kwargs : dict[str, dict], optional
            Extra keyword arguments per edge type name.

        Returns
        -------
        dict[str, Tensor]
            Output per destination type reached by at least one relation.

        Raises
        ------
        DGLError
            No module for a relation; a destination type without input features.
        """
        mod_args = mod_args or {}
        mod_kwargs = mod_kwargs or {}
        if not isinstance(inputs, (dict, tuple)):
            raise DGLTypeError(f"HeteroGraphConv: expected inputs as a dict {{ntype: tensor}} or a (src, dst) pair "
                               f"of dicts, got {type(inputs).__name__}")
        if isinstance(inputs, tuple) or g.is_block:
            if isinstance(inputs, tuple):
                src_inputs, dst_inputs = inputs
            else:
                src_inputs = inputs
                dst_inputs = {k: v[: g.num_dst_nodes(k)] for k, v in inputs.items() if k in g.dsttypes}
        else:
            src_inputs = dst_inputs = inputs
        outputs = {nt: [] for nt in g.dsttypes}
        for cet in g.canonical_etypes:
            stype, etype, dtype = cet
            if stype not in src_inputs:
                continue
            if dtype not in dst_inputs:
                raise DGLError(f"HeteroGraphConv: relation {cet} needs features of destination type {dtype!r}; "
                               f"inputs has {sorted(dst_inputs)}")
            rel_graph = g[cet]
            out = self._get_module(cet)(rel_graph, (src_inputs[stype], dst_inputs[dtype]),
                                        *mod_args.get(etype, ()), **mod_kwargs.get(etype, {}))
            outputs[dtype].append(out)
        return {nt: self.agg_fn(alist, nt) for nt, alist in outputs.items() if len(alist) != 0}


class HeteroLinear(nn.Module):
    """One linear map per type: ``{type: x} -> {type: x W_type + b_type}``.

    Parameters
    ----------
    in_size : dict[str or tuple, int]
        Input size per type.
    out_size : int
        Output size (all types).
    bias : bool, default True
        Learn a bias per type.

    Examples
    --------
    >>> import torch
    >>> layer = HeteroLinear({'user': 2, ('user', 'follows', 'user'): 3}, 4)
    >>> out = layer({'user': torch.ones(5, 2), ('user', 'follows', 'user'): torch.ones(6, 3)})
    >>> tuple(out['user'].shape), tuple(out[('user', 'follows', 'user')].shape)
    ((5, 4), (6, 4))
    """

    def __init__(self, in_size, out_size, bias=True):
        super().__init__()
        if not isinstance(in_size, dict):
            raise DGLTypeError(f"HeteroLinear: expected in_size as a dict {{type: int}}, got {type(in_size).__name__}")
        self.linears = nn.ModuleDict({str(t): nn.Linear(n, out_size, bias=bias) for t, n in in_size.items()})

    def forward(self, feat):
        """Apply each type's map to ``feat[type]``; returns ``{type: (N_type, out_size)}``.

        Raises
        ------
        DGLError
            A type the layer was not built for.
        """
        out = {}
        for t, x in feat.items():
            key = str(t)
            if key not in self.linears:
                raise DGLError(f"HeteroLinear: no linear map for type {t!r}; the types are {list(self.linears)}")
            out[t] = project(self.linears[key], x)
        return out


class HeteroEmbedding(nn.Module):
    """One embedding table per type: ``{type: ids} -> {type: (len(ids), embedding_dim)}``.

    Parameters
    ----------
    num_embeddings : dict[str or tuple, int]
        Table size per type.
    embedding_dim : int
        Embedding size (all types).

    Examples
    --------
    >>> import torch
    >>> emb = HeteroEmbedding({'user': 3, 'game': 2}, 4)
    >>> out = emb({'user': torch.tensor([0, 2]), 'game': torch.tensor([1])})
    >>> tuple(out['user'].shape), tuple(out['game'].shape)
    ((2, 4), (1, 4))
    """

    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        if not isinstance(num_embeddings, dict):
            raise DGLTypeError(f"HeteroEmbedding: expected num_embeddings as a dict {{type: int}}, got "
                               f"{type(num_embeddings).__name__}")
        self.embeds = nn.ModuleDict({str(t): nn.Embedding(n, embedding_dim) for t, n in num_embeddings.items()})
        self.raw_keys = {str(t): t for t in num_embeddings}

    def reset_parameters(self):
        """Reinitialise every table (``N(0, 1)``, as :class:`torch.nn.Embedding`)."""
        for emb in self.embeds.values():
            emb.reset_parameters()

    @property
    def weight(self):
        """``{type: (num_embeddings, embedding_dim)}`` embedding tables."""
        return {self.raw_keys[k]: emb.weight for k, emb in self.embeds.items()}

    def forward(self, input_ids):
        """Look up ``input_ids[type]`` in each type's table.

        Raises
        ------
        DGLError
            A type the layer was not built for.
        """
        out = {}
        for t, ids in input_ids.items():
            key = str(t)
            if key not in self.embeds:
                raise DGLError(f"HeteroEmbedding: no table for type {t!r}; the types are {list(self.embeds)}")
            out[t] = self.embeds[key](ids)
        return out
