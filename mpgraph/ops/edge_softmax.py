"""Softmax of edge logits over the in-edges of each destination (or out-edges of each source)."""

import math

import torch

from .._index import Index, as_index
from ..base import ALL, DGLError, is_all
from ..precision import accum_dtype, autocast_dtype, check_float_feature
from . import _dispatch
from . import spmm as _spmm_module
from ._checks import check_choice, check_index_tensor, reversed_index

__all__ = ["edge_softmax"]


def edge_softmax(graph, logits, eids=ALL, norm_by="dst"):
    r"""Softmax of edge logits over the edges that share a destination (or a source).

    For ``norm_by='dst'``:

    .. math::

        a_{uv} = \frac{\exp(z_{uv} - m_v)}{\sum_{w \in \mathcal{N}(v)} \exp(z_{wv} - m_v)},
        \qquad m_v = \max_{w \in \mathcal{N}(v)} z_{wv}

    where :math:`\mathcal{N}(v)` are the in-neighbours of :math:`v`; ``'src'``
    normalises over the out-edges of each source instead. Each feature position
    is normalised separately (``(E, H, 1)`` attention logits give one softmax per
    head). Subtracting the per-node max keeps it stable; ``exp``, the sums and the
    division run in float32 (float64 for float64) with one rounding at the end.
    Under :class:`torch.autocast` the result has the autocast dtype (the
    computation stays float32). Differentiable.

    Parameters
    ----------
    graph : Graph or Index
        The graph (``E`` edges).
    logits : torch.Tensor
        ``(E, *F)`` edge logits in edge-ID order, or ``(len(eids), *F)`` when ``eids`` is given.
    eids : torch.Tensor or ALL, default ALL
        Edge IDs to normalise over; the softmax then runs on that edge subset only
        and ``logits[i]`` belongs to edge ``eids[i]``.
    norm_by : str, default 'dst'
        ``'dst'`` (in-edges of each destination) or ``'src'`` (out-edges of each source).

    Returns
    -------
    torch.Tensor
        Same shape as ``logits``, in ``logits.dtype`` (the autocast dtype under autocast).

    Raises
    ------
    DGLError
        Unknown ``norm_by``; ``logits`` row count not equal to the number of
        edges (or of ``eids``); ``eids`` out of range; tensors on another device.
    DGLTypeError
        ``logits`` not a floating-point tensor, or ``eids`` not integer.

    Examples
    --------
    >>> import torch
    >>> import mpgraph
    >>> from mpgraph.ops import edge_softmax
    >>> g = mpgraph.graph((torch.tensor([0, 1, 2]), torch.tensor([1, 1, 2])))   # edges 0->1, 1->1, 2->2
    >>> edge_softmax(g, torch.tensor([0., 0., 5.]))
    tensor([0.5000, 0.5000, 1.0000])
    >>> edge_softmax(g, torch.tensor([0., 0., 5.]), norm_by='src')
    tensor([1., 1., 1.])
    """
    index = as_index(graph)
    check_choice("norm_by", norm_by, ("dst", "src"), "edge_softmax")
    check_float_feature("logits", logits)
    if logits.dim() == 0:
        raise DGLError("edge_softmax: logits must have an edge dimension, got a 0-d tensor; "
                       f"give it shape ({index.num_edges}, ...)")
    if not is_all(eids):
        eids = check_index_tensor("eids", eids, index.device, "edge_softmax")
        if logits.shape[0] != eids.numel():
            raise DGLError(f"edge_softmax: logits has {logits.shape[0]} rows but eids selects {eids.numel()} "
                           f"edges; expected shape ({eids.numel()}, ...), one row per selected edge")
        if eids.numel() > 0 and (int(eids.min()) < 0 or int(eids.max()) >= index.num_edges):
            raise DGLError(f"edge_softmax: eids must be in [0, {index.num_edges}), got values in "
                           f"[{int(eids.min())}, {int(eids.max())}]")
        index = Index.from_coo(index.src64[eids], index.dst64[eids], index.num_src, index.num_dst)
    elif logits.shape[0] != index.num_edges:
        raise DGLError(f"edge_softmax: logits has {logits.shape[0]} rows but the graph has {index.num_edges} "
                       f"edges; expected shape ({index.num_edges}, ...), or pass eids for a subset")
    if logits.device != index.device:
        raise DGLError(f"edge_softmax: logits is on {logits.device} but the graph is on {index.device}; "
                       f"move one of them, e.g. logits.to({str(index.device)!r})")
    out_dtype = logits.dtype
    amp = autocast_dtype(index.device.type)
    if amp is not None and logits.dtype != torch.float64:
        out_dtype = amp
    return _edge_softmax(index, logits, norm_by, out_dtype)


def _edge_softmax(index, logits, norm_by="dst", out_dtype=None):
    """Edge softmax on validated inputs (no autocast)."""
    group = index if norm_by == "dst" else reversed_index(index)
    E = logits.shape[0]
    x = logits.reshape(E, math.prod(logits.shape[1:])).contiguous()                # [E, F]
    out = EdgeSoftmax.apply(group, out_dtype or logits.dtype, x)
    return out.reshape(logits.shape)


class EdgeSoftmax(torch.autograd.Function):
    """Autograd function of the edge softmax on ``logits: (E, F)`` grouped by ``index``'s destinations."""

    @staticmethod
    def forward(ctx, index, out_dtype, logits):
        ctx.selection = _dispatch.capture()
        out = _dispatch.edge_softmax(index, logits, out_dtype)
        ctx.index, ctx.logits_dtype = index, logits.dtype
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        with _dispatch.restored(ctx.selection):     # the forward's backend selection, on any thread
            return EdgeSoftmax._backward(ctx, grad_out)

    @staticmethod
    def _backward(ctx, grad_out):
        # d logits = y * (g - sum_{edges of the node} g * y), in float32 (float64)
        (y,) = ctx.saved_tensors
        index = ctx.index
        if not torch.is_grad_enabled():     # plain backward: one fused kernel
            g = grad_out.to(y.dtype).contiguous()
            return None, None, _dispatch.edge_softmax_backward(index, y, g, ctx.logits_dtype)
        # create_graph=True: the same formula from differentiable ops, so it has a gradient too
        acc = torch.promote_types(accum_dtype(y.dtype), accum_dtype(ctx.logits_dtype))
        g, y = grad_out.to(acc), y.to(acc)
        gy = g * y
        s = _spmm_module.gspmm_validated(index, "copy_rhs", "sum", None, gy, acc)          # [N_dst, F]
        grad = gy - y * s.index_select(0, index.dst64)
        return None, None, grad.to(ctx.logits_dtype)
