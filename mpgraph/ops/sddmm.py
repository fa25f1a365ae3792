"""Generalized sampled dense-dense matrix multiplication (gSDDMM): one value per edge from its endpoints."""

import torch

from .._index import as_index
from ..precision import accum_dtype, autocast_cast, autocast_disabled, autocast_dtype, result_dtype
from . import _dispatch
from . import spmm as _spmm_module
from ._broadcast import infer_bcast, sum_to_shape
from ._checks import ROW_NAMES, check_choice, check_feature, reversed_index, rows_of

__all__ = [
    "gsddmm", "copy_u", "copy_v",
    "u_add_v", "u_sub_v", "u_mul_v", "u_div_v", "u_dot_v",
    "u_add_e", "u_sub_e", "u_mul_e", "u_div_e", "u_dot_e",
    "v_add_u", "v_sub_u", "v_mul_u", "v_div_u", "v_dot_u",
    "v_add_e", "v_sub_e", "v_mul_e", "v_div_e", "v_dot_e",
    "e_add_u", "e_sub_u", "e_mul_u", "e_div_u", "e_dot_u",
    "e_add_v", "e_sub_v", "e_mul_v", "e_div_v", "e_dot_v",
]

SDDMM_OPS = ("add", "sub", "mul", "div", "dot", "copy_lhs", "copy_rhs")
TARGETS = ("u", "v", "e")


def gsddmm(g, op, lhs_data, rhs_data, lhs_target="u", rhs_target="v"):
    r"""Generalized SDDMM: compute a value on every edge from its source, destination or edge features.

    .. math::

        x_e = \phi(x_{\mathrm{lhs}}, x_{\mathrm{rhs}}), \quad \forall (u, e, v) \in \mathcal{G}

    where :math:`\phi` is ``op`` and each operand is read at the edge's source
    (``'u'``), destination (``'v'``) or the edge itself (``'e'``). Feature shapes
    broadcast as in :func:`gspmm`. ``'dot'`` contracts the last dimension (which
    must match) and keeps it as size 1: ``(N, H, D)`` with ``(N, H, D)`` gives
    ``(E, H, 1)``; its products accumulate in float32 for half inputs (float64
    for float64) and round once. Under :class:`torch.autocast`, float operands
    (not float64) are cast to the autocast dtype first. Differentiable in both
    operands.

    Parameters
    ----------
    g : Graph or Index
        The graph (``N_src`` source nodes, ``N_dst`` destination nodes, ``E`` edges).
    op : str
        ``'add'``, ``'sub'``, ``'mul'``, ``'div'``, ``'dot'``, ``'copy_lhs'`` or ``'copy_rhs'``.
    lhs_data : torch.Tensor or None
        Left operand, ``(N_src, *F1)``, ``(N_dst, *F1)`` or ``(E, *F1)`` by ``lhs_target``;
        ignored for ``'copy_rhs'``.
    rhs_data : torch.Tensor or None
        Right operand, rows by ``rhs_target``; ignored for ``'copy_lhs'``.
    lhs_target : str, default 'u'
        ``'u'``, ``'v'`` or ``'e'``.
    rhs_target : str, default 'v'
        ``'u'``, ``'v'`` or ``'e'``.

    Returns
    -------
    torch.Tensor
        ``(E, *F)`` in edge-ID order, in the promoted dtype of the operands.

    Raises
    ------
    DGLError
        Unknown ``op`` or target; wrong row count; tensor on another device than
        the graph; feature shapes that do not broadcast (or ``dot`` operands with
        different last dimensions).
    DGLTypeError
        A feature that is not a floating-point tensor.

    Examples
    --------
    >>> import torch
    >>> import mpgraph
    >>> from mpgraph.ops import gsddmm
    >>> g = mpgraph.graph((torch.tensor([0, 1, 2]), torch.tensor([1, 1, 2])))   # edges 0->1, 1->1, 2->2
    >>> x = torch.tensor([[1., 0.], [0., 1.], [1., 1.]])
    >>> gsddmm(g, 'dot', x, x, 'u', 'v')
    tensor([[0.],
            [1.],
            [2.]])
    >>> gsddmm(g, 'sub', x, x, 'v', 'u')
    tensor([[-1.,  1.],
            [ 0.,  0.],
            [ 0.,  0.]])
    """
    index = as_index(g)
    check_choice("op", op, SDDMM_OPS, "gsddmm")
    check_choice("lhs_target", lhs_target, TARGETS, "gsddmm")
    check_choice("rhs_target", rhs_target, TARGETS, "gsddmm")
    if op == "copy_lhs":
        rhs_data = None
    if op == "copy_rhs":
        lhs_data = None
    if op != "copy_rhs":
        check_feature("lhs_data", lhs_data, rows_of(index, lhs_target), ROW_NAMES[lhs_target], index.device,
                      "gsddmm")
    if op != "copy_lhs":
        check_feature("rhs_data", rhs_data, rows_of(index, rhs_target), ROW_NAMES[rhs_target], index.device,
                      "gsddmm")
    amp = autocast_dtype(index.device.type)
    if amp is None:
        return _gsddmm(index, op, lhs_data, rhs_data, lhs_target, rhs_target)
    lhs_data, rhs_data = autocast_cast(amp, lhs_data, rhs_data)
    with autocast_disabled(index.device.type):
        return _gsddmm(index, op, lhs_data, rhs_data, lhs_target, rhs_target)


def _gsddmm(index, op, lhs, rhs, lhs_target, rhs_target, out_dtype=None):
    """gSDDMM on validated operands (no autocast); ``out_dtype`` defaults to the promoted dtype."""
    dtype = result_dtype(lhs, rhs)
    lhs = None if lhs is None else lhs.to(dtype)
    rhs = None if rhs is None else rhs.to(dtype)
    bcast = infer_bcast(op, None if lhs is None else lhs.shape[1:], None if rhs is None else rhs.shape[1:],
                        index.device)
    lhs2 = None if lhs is None else lhs.reshape(lhs.shape[0], bcast.L * bcast.K).contiguous()
    rhs2 = None if rhs is None else rhs.reshape(rhs.shape[0], bcast.R * bcast.K).contiguous()
    out = GSDDMM.apply(index, op, lhs_target, rhs_target, bcast, out_dtype or dtype, lhs2, rhs2)
    return out.reshape((index.num_edges,) + bcast.out_shape)


class GSDDMM(torch.autograd.Function):
    """Autograd function of gSDDMM on flattened operands ``(rows, L*K)``, ``(rows, R*K)`` -> ``(E, F)``."""

    @staticmethod
    def forward(ctx, index, op, lhs_target, rhs_target, bcast, out_dtype, lhs, rhs):
        ctx.selection = _dispatch.capture()
        out = _dispatch.sddmm(index, op, lhs, rhs, lhs_target, rhs_target, bcast, out_dtype)
        ctx.index, ctx.op, ctx.targets, ctx.bcast = index, op, (lhs_target, rhs_target), bcast
        ctx.save_for_backward(lhs, rhs)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        with _dispatch.restored(ctx.selection):     # the forward's backend selection, on any thread
            return GSDDMM._backward(ctx, grad_out)

    @staticmethod
    def _backward(ctx, grad_out):
        lhs, rhs = ctx.saved_tensors
        index, op, bcast = ctx.index, ctx.op, ctx.bcast
        lhs_target, rhs_target = ctx.targets
        G = grad_out.reshape((index.num_edges,) + bcast.out_shape)
        lhs_nd = None if lhs is None else lhs.reshape((lhs.shape[0],) + bcast.lhs_shape)
        rhs_nd = None if rhs is None else rhs.reshape((rhs.shape[0],) + bcast.rhs_shape)
        grad_lhs = grad_rhs = None
        if ctx.needs_input_grad[6]:
            grad_lhs = _operand_grad(index, op, G, lhs_nd, lhs_target, rhs_nd, rhs_target, True, bcast)
            grad_lhs = grad_lhs.reshape(lhs.shape)
        if ctx.needs_input_grad[7]:
            grad_rhs = _operand_grad(index, op, G, rhs_nd, rhs_target, lhs_nd, lhs_target, False, bcast)
            grad_rhs = grad_rhs.reshape(rhs.shape)
        return None, None, None, None, None, None, grad_lhs, grad_rhs


def _scatter(index, t_e, target, out_dtype):
    """Sum per-edge values ``(E, *S)`` into the rows of ``target``: ``(rows, *S)`` in ``out_dtype``."""
    if target == "e":
        return t_e.to(out_dtype)
    group = index if target == "v" else reversed_index(index)
    return _spmm_module.gspmm_validated(group, "copy_rhs", "sum", None, t_e, out_dtype)


def _operand_grad(index, op, G, x, x_target, other, other_target, is_lhs, bcast):
    """Gradient of gSDDMM w.r.t. operand ``x`` (``other`` is the second operand), in ``x``'s dtype.

    Where ``x`` is read at one endpoint and ``other`` at the opposite one, the
    per-edge products never materialise: the sum over edges is one gSpMM on the
    graph grouped by ``x``'s endpoint (the reversed graph for ``'u'``).
    """
    x_shape = bcast.lhs_shape if is_lhs else bcast.rhs_shape
    acc = accum_dtype(x.dtype)
    odt = acc if x_shape != bcast.out_shape else x.dtype
    opposite = {"u": "v", "v": "u"}.get(x_target)
    if op in ("copy_lhs", "copy_rhs", "add", "sub"):
        t = _scatter(index, G, x_target, odt)
        if op == "sub" and not is_lhs:
            t = -t
    elif op in ("mul", "dot") or (op == "div" and is_lhs):
        factor = other
        if op == "div":  # d (l / r) / d l = 1 / r
            factor = 1.0 / other.to(accum_dtype(other.dtype))
        if other_target == opposite:
            group = index if x_target == "v" else reversed_index(index)
            t = _spmm_module.gspmm_validated(group, "mul", "sum", factor, G, odt)
        else:
            t_e = _gsddmm(index, "mul", G, factor, "e", other_target, acc)
            t = _scatter(index, t_e, x_target, odt)
    else:  # div w.r.t. its right operand: -G * l / r^2
        r2 = x.to(acc) * x.to(acc)
        t_e = _gsddmm(index, "mul", G, other, "e", other_target, acc)
        t_e = -_gsddmm(index, "div", t_e, r2, "e", x_target, acc)
        t = _scatter(index, t_e, x_target, acc)
    return sum_to_shape(t, x_shape).to(x.dtype)


# ----------------------------------------------------------------------------- named variants
# Written out one by one (no generated names), as DGL's dgl.ops.u_dot_v, e_sub_v, ...

def copy_u(g, x):
    """Source-node feature on every edge: ``gsddmm(g, 'copy_lhs', x, None, 'u')`` -> ``(E, *F)``."""
    return gsddmm(g, "copy_lhs", x, None, "u", "v")


def copy_v(g, x):
    """Destination-node feature on every edge: ``gsddmm(g, 'copy_rhs', None, x, 'u', 'v')`` -> ``(E, *F)``."""
    return gsddmm(g, "copy_rhs", None, x, "u", "v")


def u_add_v(g, x, y):
    """``x[u] + y[v]`` on every edge: ``gsddmm(g, 'add', x, y, 'u', 'v')``."""
    return gsddmm(g, "add", x, y, "u", "v")


def u_sub_v(g, x, y):
    """``x[u] - y[v]`` on every edge: ``gsddmm(g, 'sub', x, y, 'u', 'v')``."""
    return gsddmm(g, "sub", x, y, "u", "v")


def u_mul_v(g, x, y):
    """``x[u] * y[v]`` on every edge: ``gsddmm(g, 'mul', x, y, 'u', 'v')``."""
    return gsddmm(g, "mul", x, y, "u", "v")


def u_div_v(g, x, y):
    """``x[u] / y[v]`` on every edge: ``gsddmm(g, 'div', x, y, 'u', 'v')``."""
    return gsddmm(g, "div", x, y, "u", "v")


def u_dot_v(g, x, y):
    """``<x[u], y[v]>`` over the last dimension on every edge: ``gsddmm(g, 'dot', x, y, 'u', 'v')``."""
    return gsddmm(g, "dot", x, y, "u", "v")


def u_add_e(g, x, y):
    """``x[u] + y[e]`` on every edge: ``gsddmm(g, 'add', x, y, 'u', 'e')``."""
    return gsddmm(g, "add", x, y, "u", "e")


def u_sub_e(g, x, y):
    """``x[u] - y[e]`` on every edge: ``gsddmm(g, 'sub', x, y, 'u', 'e')``."""
    return gsddmm(g, "sub", x, y, "u", "e")


def u_mul_e(g, x, y):
    """``x[u] * y[e]`` on every edge: ``gsddmm(g, 'mul', x, y, 'u', 'e')``."""
    return gsddmm(g, "mul", x, y, "u", "e")


def u_div_e(g, x, y):
    """``x[u] / y[e]`` on every edge: ``gsddmm(g, 'div', x, y, 'u', 'e')``."""
    return gsddmm(g, "div", x, y, "u", "e")


def u_dot_e(g, x, y):
    """``<x[u], y[e]>`` over the last dimension: ``gsddmm(g, 'dot', x, y, 'u', 'e')``."""
    return gsddmm(g, "dot", x, y, "u", "e")


def v_add_u(g, x, y):
    """``x[v] + y[u]`` on every edge: ``gsddmm(g, 'add', x, y, 'v', 'u')``."""
    return gsddmm(g, "add", x, y, "v", "u")


def v_sub_u(g, x, y):
    """``x[v] - y[u]`` on every edge: ``gsddmm(g, 'sub', x, y, 'v', 'u')``."""
    return gsddmm(g, "sub", x, y, "v", "u")


def v_mul_u(g, x, y):
    """``x[v] * y[u]`` on every edge: ``gsddmm(g, 'mul', x, y, 'v', 'u')``."""
    return gsddmm(g, "mul", x, y, "v", "u")


def v_div_u(g, x, y):
    """``x[v] / y[u]`` on every edge: ``gsddmm(g, 'div', x, y, 'v', 'u')``."""
    return gsddmm(g, "div", x, y, "v", "u")


def v_dot_u(g, x, y):
    """``<x[v], y[u]>`` over the last dimension: ``gsddmm(g, 'dot', x, y, 'v', 'u')``."""
    return gsddmm(g, "dot", x, y, "v", "u")


def v_add_e(g, x, y):
    """``x[v] + y[e]`` on every edge: ``gsddmm(g, 'add', x, y, 'v', 'e')``."""
    return gsddmm(g, "add", x, y, "v", "e")


def v_sub_e(g, x, y):
    """``x[v] - y[e]`` on every edge: ``gsddmm(g, 'sub', x, y, 'v', 'e')``."""
    return gsddmm(g, "sub", x, y, "v", "e")


def v_mul_e(g, x, y):
    """``x[v] * y[e]`` on every edge: ``gsddmm(g, 'mul', x, y, 'v', 'e')``."""
    return gsddmm(g, "mul", x, y, "v", "e")


def v_div_e(g, x, y):
    """``x[v] / y[e]`` on every edge: ``gsddmm(g, 'div', x, y, 'v', 'e')``."""
    return gsddmm(g, "div", x, y, "v", "e")


def v_dot_e(g, x, y):
    """``<x[v], y[e]>`` over the last dimension: ``gsddmm(g, 'dot', x, y, 'v', 'e')``."""
    return gsddmm(g, "dot", x, y, "v", "e")


def e_add_u(g, x, y):
    """``x[e] + y[u]`` on every edge: ``gsddmm(g, 'add', x, y, 'e', 'u')``."""
    return gsddmm(g, "add", x, y, "e", "u")


def e_sub_u(g, x, y):
    """``x[e] - y[u]`` on every edge: ``gsddmm(g, 'sub', x, y, 'e', 'u')``."""
    return gsddmm(g, "sub", x, y, "e", "u")


def e_mul_u(g, x, y):
    """``x[e] * y[u]`` on every edge: ``gsddmm(g, 'mul', x, y, 'e', 'u')``."""
    return gsddmm(g, "mul", x, y, "e", "u")


def e_div_u(g, x, y):
    """``x[e] / y[u]`` on every edge: ``gsddmm(g, 'div', x, y, 'e', 'u')``."""
    return gsddmm(g, "div", x, y, "e", "u")


def e_dot_u(g, x, y):
    """``<x[e], y[u]>`` over the last dimension: ``gsddmm(g, 'dot', x, y, 'e', 'u')``."""
    return gsddmm(g, "dot", x, y, "e", "u")


def e_add_v(g, x, y):
    """``x[e] + y[v]`` on every edge: ``gsddmm(g, 'add', x, y, 'e', 'v')``."""
    return gsddmm(g, "add", x, y, "e", "v")


def e_sub_v(g, x, y):
    """``x[e] - y[v]`` on every edge: ``gsddmm(g, 'sub', x, y, 'e', 'v')``."""
    return gsddmm(g, "sub", x, y, "e", "v")


def e_mul_v(g, x, y):
    """``x[e] * y[v]`` on every edge: ``gsddmm(g, 'mul', x, y, 'e', 'v')``."""
    return gsddmm(g, "mul", x, y, "e", "v")


def e_div_v(g, x, y):
    """``x[e] / y[v]`` on every edge: ``gsddmm(g, 'div', x, y, 'e', 'v')``."""
    return gsddmm(g, "div", x, y, "e", "v")


def e_dot_v(g, x, y):
    """``<x[e], y[v]>`` over the last dimension: ``gsddmm(g, 'dot', x, y, 'e', 'v')``."""
    return gsddmm(g, "dot", x, y, "e", "v")
