"""Generalized sparse-dense matrix multiplication (gSpMM): messages on edges reduced at destinations."""

import torch

from .._index import as_index
from ..precision import (accum_dtype, autocast_cast, autocast_disabled, autocast_dtype, result_dtype,
                         rowwise_scale)
from . import _dispatch
from . import sddmm as _sddmm_module
from ._broadcast import infer_bcast, sum_to_shape
from ._checks import check_choice, check_feature, in_degrees_f32, inverse_in_degrees, reversed_index

__all__ = [
    "gspmm",
    "copy_u_sum", "copy_u_mean", "copy_u_max", "copy_u_min",
    "copy_e_sum", "copy_e_mean", "copy_e_max", "copy_e_min",
    "u_add_e_sum", "u_add_e_mean", "u_add_e_max", "u_add_e_min",
    "u_sub_e_sum", "u_sub_e_mean", "u_sub_e_max", "u_sub_e_min",
    "u_mul_e_sum", "u_mul_e_mean", "u_mul_e_max", "u_mul_e_min",
    "u_div_e_sum", "u_div_e_mean", "u_div_e_max", "u_div_e_min",
]

SPMM_OPS = ("add", "sub", "mul", "div", "copy_lhs", "copy_rhs")
REDUCE_OPS = ("sum", "max", "min", "mean")


def gspmm(g, op, reduce_op, lhs_data, rhs_data):
    r"""Generalized SpMM: compute a message on every edge and reduce them at each destination.

    .. math::

        x_v = \bigoplus_{(u, e, v) \in \mathcal{G}} \phi(x_u, x_e)

    where :math:`\phi` is ``op`` and :math:`\bigoplus` is ``reduce_op``. Feature
    shapes (all dimensions after the first) broadcast like numpy's: a missing
    leading dimension counts as 1, so ``(N, H, D)`` with ``(E, H, 1)`` gives
    ``(N_dst, H, D)`` and ``(N, D)`` with ``(E,)`` gives ``(N_dst, D)``.

    Sums and means accumulate in float32 for float16/bfloat16 features (float64
    for float64) and round once; ``mean`` divides by the in-degree before that
    rounding. ``max``/``min`` start from -inf/+inf; a node without in-edges gets 0
    for every reducer. Under :class:`torch.autocast` float operands (not float64)
    are cast to the autocast dtype first, as ``matmul`` does. Differentiable in
    both operands (``max``/``min`` send the gradient to the winning edge).

    Parameters
    ----------
    g : Graph or Index
        The graph (``N_src`` source nodes, ``N_dst`` destination nodes, ``E`` edges).
    op : str
        ``'add'``, ``'sub'``, ``'mul'``, ``'div'``, ``'copy_lhs'`` or ``'copy_rhs'``.
    reduce_op : str
        ``'sum'``, ``'max'``, ``'min'`` or ``'mean'``.
    lhs_data : torch.Tensor or None
        Source-node features ``(N_src, *F1)``; ignored (may be None) for ``'copy_rhs'``.
    rhs_data : torch.Tensor or None
        Edge features ``(E, *F2)`` in edge-ID order; ignored (may be None) for ``'copy_lhs'``.

    Returns
    -------
    torch.Tensor
        ``(N_dst, *F)`` with ``F`` the broadcast feature shape, in the promoted
        dtype of the operands (:func:`torch.result_type` rules).

    Raises
    ------
    DGLError
        Unknown ``op``/``reduce_op``; wrong row count; tensor on another device
        than the graph; feature shapes that do not broadcast.
    DGLTypeError
        A feature that is not a floating-point tensor.

    Examples
    --------
    >>> import torch
    >>> import mpgraph
    >>> from mpgraph.ops import gspmm
    >>> g = mpgraph.graph((torch.tensor([0, 1, 2]), torch.tensor([1, 1, 2])))   # edges 0->1, 1->1, 2->2
    >>> x = torch.tensor([[1.], [2.], [3.]])
    >>> w = torch.tensor([10., 20., 30.])
    >>> gspmm(g, 'mul', 'sum', x, w)
    tensor([[ 0.],
            [50.],
            [90.]])
    >>> gspmm(g, 'copy_lhs', 'max', x.half(), None)
    tensor([[0.],
            [2.],
            [3.]], dtype=torch.float16)
    """
    index = as_index(g)
    check_choice("op", op, SPMM_OPS, "gspmm")
    check_choice("reduce_op", reduce_op, REDUCE_OPS, "gspmm")
    if op == "copy_lhs":
        rhs_data = None
    if op == "copy_rhs":
        lhs_data = None
    if lhs_data is not None or op != "copy_rhs":
        check_feature("lhs_data", lhs_data, index.num_src, "source nodes", index.device, "gspmm")
    if rhs_data is not None or op != "copy_lhs":
        check_feature("rhs_data", rhs_data, index.num_edges, "edges", index.device, "gspmm")
    amp = autocast_dtype(index.device.type)
    if amp is None:
        return gspmm_validated(index, op, reduce_op, lhs_data, rhs_data)
    lhs_data, rhs_data = autocast_cast(amp, lhs_data, rhs_data)
    with autocast_disabled(index.device.type):
        return gspmm_validated(index, op, reduce_op, lhs_data, rhs_data)


def gspmm_validated(index, op, reduce_op, lhs, rhs, out_dtype=None):
    """gSpMM on validated operands (no autocast); ``out_dtype`` defaults to the promoted dtype."""
    dtype = result_dtype(lhs, rhs)
    lhs = None if lhs is None else lhs.to(dtype)
    rhs = None if rhs is None else rhs.to(dtype)
    bcast = infer_bcast(op, None if lhs is None else lhs.shape[1:], None if rhs is None else rhs.shape[1:],
                        index.device)
    lhs2 = None if lhs is None else lhs.reshape(index.num_src, bcast.L).contiguous()
    rhs2 = None if rhs is None else rhs.reshape(index.num_edges, bcast.R).contiguous()
    out = GSpMM.apply(index, op, reduce_op, bcast, out_dtype or dtype, lhs2, rhs2)
    return out.reshape((index.num_dst,) + bcast.out_shape)


class GSpMM(torch.autograd.Function):
    """Autograd function of gSpMM on flattened operands ``lhs: (N_src, L)``, ``rhs: (E, R)`` -> ``(N_dst, F)``."""

    @staticmethod
    def forward(ctx, index, op, reduce_op, bcast, out_dtype, lhs, rhs):
        ctx.selection = _dispatch.capture()
        # winners are only needed by the backward: without a gradient to compute (inference,
        # torch.no_grad) max/min take the kernel that does not track them. Copies, sums and differences
        # without a broadcast may get them as 1- or 2-byte slots (a backend's choice), whose backward
        # gathers rows instead of scattering elements
        need_arg = any(ctx.needs_input_grad[5:7])
        if need_arg and op in SLOT_OPS and _slot_winners_allowed(bcast):
            need_arg = "slots"
        out, arg_u, arg_e = _dispatch.spmm(index, op, reduce_op, lhs, rhs, bcast, out_dtype, need_arg=need_arg)
        ctx.index, ctx.op, ctx.reduce_op, ctx.bcast = index, op, reduce_op, bcast
        ctx.save_for_backward(lhs, rhs, arg_u, arg_e)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        with _dispatch.restored(ctx.selection):     # the forward's backend selection, on any thread
            return GSpMM._backward(ctx, grad_out)

    @staticmethod
    def _backward(ctx, grad_out):
        lhs, rhs, arg_u, arg_e = ctx.saved_tensors
        need_lhs, need_rhs = ctx.needs_input_grad[5], ctx.needs_input_grad[6]
        if ctx.reduce_op in ("max", "min"):
            grad_lhs, grad_rhs = _extreme_backward(ctx.index, ctx.op, ctx.bcast, lhs, rhs, arg_u, arg_e,
                                                   grad_out, need_lhs, need_rhs)
        else:
            grad_lhs, grad_rhs = _sum_backward(ctx.index, ctx.op, ctx.reduce_op, ctx.bcast, lhs, rhs,
                                               grad_out, need_lhs, need_rhs)
        return None, None, None, None, None, grad_lhs, grad_rhs


def _sum_backward(index, op, reduce_op, bcast, lhs, rhs, grad_out, need_lhs, need_rhs):
    """Gradients of sum/mean gSpMM, written as gSpMM on the reversed graph and gSDDMM."""
    N_src, N_dst, E = index.num_src, index.num_dst, index.num_edges
    out_shape = bcast.out_shape
    G = grad_out.reshape((N_dst,) + out_shape)
    fusable = (op in ("mul", "div") and need_lhs and need_rhs and G.dtype == lhs.dtype
               and not _double_backward(G, lhs, rhs))
    heads = _weight_heads(bcast, op, G.dtype, mean=reduce_op == "mean") if fusable else None
    if heads is not None:
        # both gradients in one pass over the reversed graph: each G row is gathered once, not twice; a mean's
        # 1 / in-degree is applied to each row there, in the accumulator (no scaled copy of G, and none in
        # float32 for float16)
        row_scale = inverse_in_degrees(index, accum_dtype(G.dtype)) if reduce_op == "mean" else None
        grad_lhs, grad_rhs = _dispatch.spmm_mul_backward(reversed_index(index), G.reshape(N_dst, bcast.F).contiguous(),
                                                         lhs, rhs, heads, op, row_scale=row_scale)
        return grad_lhs.reshape(N_src, bcast.L), grad_rhs.reshape(E, bcast.R)
    if reduce_op == "mean":
        deg = in_degrees_f32(index).reshape((N_dst,) + (1,) * len(out_shape))
        # one pass, computed in float32 (deg is float32). bfloat16 has float32's exponent range, so G / deg
        # is stored back in bf16 without underflow at one extra rounding (2**-9 relative), and the reverse
        # gather below reads half the bytes; float16 would underflow for large in-degrees: float32 copy
        scaled_dtype = torch.bfloat16 if G.dtype == torch.bfloat16 else accum_dtype(G.dtype)
        if _double_backward(G):
            G = (G.to(accum_dtype(G.dtype)) / deg).to(scaled_dtype)
        else:
            G = rowwise_scale(G, deg, scaled_dtype, divide=True)
    lhs_nd = None if lhs is None else lhs.reshape((N_src,) + bcast.lhs_shape)
    rhs_nd = None if rhs is None else rhs.reshape((E,) + bcast.rhs_shape)
    grad_lhs = grad_rhs = None
    if need_lhs:
        # d lhs[u] = sum over out-edges (u, e, v) of G[v] * d msg / d lhs
        broadcast = bcast.lhs_shape != out_shape
        odt = accum_dtype(lhs.dtype) if broadcast else lhs.dtype
        rev = reversed_index(index)
        if op in ("copy_lhs", "add", "sub"):
            t = gspmm_validated(rev, "copy_lhs", "sum", G, None, odt)
        else:  # mul, div: G[v] * rhs[e] or G[v] / rhs[e]
            t = gspmm_validated(rev, op, "sum", G, rhs_nd, odt)
        grad_lhs = sum_to_shape(t, bcast.lhs_shape).to(lhs.dtype).reshape(N_src, bcast.L)
    elementwise = bcast.lhs_shape == bcast.rhs_shape == out_shape
    if need_rhs and op == "div" and elementwise and not _double_backward(G, lhs, rhs):
        # -x[u] * G[v] / w[e]^2 in one edge pass, rounded once into w's dtype: no (E, F) temporaries
        grad_rhs = _dispatch.div_edge_grad(index, lhs, G.reshape(N_dst, bcast.F).contiguous(), rhs, rhs.dtype)
    elif need_rhs:
        broadcast = bcast.rhs_shape != out_shape
        acc = accum_dtype(rhs.dtype)
        negate = False
        odt = acc if broadcast else rhs.dtype
        if op == "sub" and not _double_backward(G) and odt.itemsize >= 4:
            # -G[v] as 0 - G[v] in the same single edge pass (exact), instead of a copy negated in a second
            # pass over (E, F); the zero is one element per destination, broadcast over the features. 16-bit
            # results keep the copy and the in-place negation, measured faster there (uniform graph, D=64,
            # u_sub_e_sum forward+backward: fp32 81-88 -> 64-75 ms, bf16 40-52 -> 49-58 ms)
            zero = G.new_zeros((N_dst,) + (1,) * len(out_shape))
            t = _sddmm_module._gsddmm(index, "sub", zero, G, "v", "v", odt)
        elif op in ("copy_rhs", "add", "sub"):
            t = _sddmm_module._gsddmm(index, "copy_rhs", None, G, "u", "v", odt)
            if op == "sub":     # a fresh (E, F) tensor: negated where it is (a copy would be a second one)
                t = -t if _double_backward(t) else t.neg_()
        else:
            odt = acc if (broadcast or op == "div") else rhs.dtype
            if len(out_shape) > 0 and bcast.rhs_shape[-1] == 1 and out_shape[-1] > 1:
                # rhs is constant along the last dimension (GAT: (E, H, 1) against (N, H, D)):
                # contract it with a dot instead of materialising (E, ..., D)
                t = _sddmm_module._gsddmm(index, "dot", lhs_nd, G, "u", "v", odt)
            else:
                t = _sddmm_module._gsddmm(index, "mul", lhs_nd, G, "u", "v", odt)
            if op == "div":  # d (l / r) / d r = -l / r^2
                if _double_backward(t, rhs_nd):
                    r = rhs_nd.to(acc)
                    t = -t / (r * r)
                else:
                    # r * r by the edge kernel in float32 (exact for 16-bit r), then one in-place division
                    # of the fresh float32 t: no (E, F) conversion of r, no temporaries (torch's
                    # mixed-dtype loops are slow); the sign goes on the rounded result below
                    t = t.div_(_sddmm_module._gsddmm(index, "mul", rhs_nd, rhs_nd, "e", "e", acc))
                    negate = True
        grad_rhs = sum_to_shape(t, bcast.rhs_shape).to(rhs.dtype).reshape(E, bcast.R)
        if negate:          # t or a fresh reduction/copy of it: ours to negate in place
            grad_rhs = grad_rhs.neg_()
    return grad_lhs, grad_rhs


def _double_backward(*tensors):
    """True when this backward is itself recorded (``create_graph=True``): only differentiable ops then."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _weight_heads(bcast, op="mul", dtype=torch.float32, mean=False):
    """``H`` when ``u_mul_e``'s (``u_div_e``'s) weights take the fused backward, else None: one scalar per edge
    and head, or, on the CPU, elementwise rows (as ``H = F`` heads of one column) of up to
    :data:`SMALL_FUSED_ELEMENTWISE` columns, of :data:`HALF_FUSED_ELEMENTWISE` columns in 16-bit dtypes, of
    :data:`FUSED_ELEMENTWISE` columns for ``u_div_e``, for ``u_mul_e`` in fp32/fp64 and for a ``mean``
    (``mean=True``), and of any width for a float16 ``mean``.

    The node operand must not broadcast (``lhs_shape == out_shape``). Weights constant along the last
    dimension: ``(E, H, 1)`` against ``(N, H, D)`` (GAT: ``H`` heads) or a scalar per edge (``H = 1``).
    Other elementwise weights take the two composed kernels. A mean is fused more widely because the fused
    pass scales the rows by ``1 / in-degree`` itself, where the composed kernels need a scaled copy of the
    gradient first: float32 for float16 (``G / deg`` underflows float16), which promoted the 16-bit weights
    to float32 too, 131k page faults per call on 2M edges x 64 (395 ms against 38 for the sum).
    Fused over composed, forward+backward (twenty-eighth session, uniform graph, 2M edges, 2 threads, AMD
    EPYC, interleaved in one process, ``u_mul_e``): F = 2-16 0.65-0.95x in every dtype (sum and mean; 1.0x
    fp32 F = 12), ``u_div_e`` F = 4-16 0.66-0.85x; F = 32 0.74-0.84x 16-bit but 1.5-1.9x fp32; F = 24 1.2x
    bf16 and 2.0x fp32, F = 31 1.1-1.3x, F = 100 1.2-1.7x: composed there; float16 means 0.15-0.65x at every
    width measured (4-128, 31, 100); 16-bit means at F = 64 0.84-0.89x bf16, at F = 128 0.9x bf16 (sums
    1.1-1.3x) (``benchmarks/results/fused_backward_s28.jsonl`` has one run of ``benchmarks/fused_backward.py``).
    """
    out = bcast.out_shape
    if bcast.lhs_shape != out or len(out) == 0:
        return None
    if bcast.rhs_shape == out and bcast.F > 1:
        cpu = bcast.device is None or torch.device(bcast.device).type == "cpu"
        if not cpu:
            return None
        F = bcast.F
        wide = dtype not in (torch.float16, torch.bfloat16)
        if (F <= SMALL_FUSED_ELEMENTWISE or (mean and dtype == torch.float16)
                or (not wide and F in HALF_FUSED_ELEMENTWISE)):
            return F
        return F if (op == "div" or wide or mean) and F in FUSED_ELEMENTWISE else None
    return _rhs_block_heads(bcast)


#: elementwise weights of up to this many columns take the fused CPU backward in every dtype (the general row
#: loop over one-column heads; measured in :func:`_weight_heads`)
SMALL_FUSED_ELEMENTWISE = 16
#: and of these widths in float16/bfloat16 (16-bit rows of 32 columns measured 0.70-0.84x the composed kernels'
#: time in the general loop, 0.95-0.97x of that since the register rows of 32 columns; float32 ones 1.5-1.9x)
HALF_FUSED_ELEMENTWISE = (32,)

#: elementwise weight widths ``F`` whose ``u_div_e`` sum backward, and ``u_mul_e``'s in fp32/fp64 or under a mean,
#: take the fused CPU pass (the register kernel of one-column heads in ``_cpu/spmm_backward.py``: each edge's
#: weight row read and its gradient written in place, no dots to reduce) instead of a gSpMM and a gSDDMM.
#: Measured (``benchmarks/fused_backward.py``, uniform graph, 2M edges, 2 threads, AMD EPYC; forward+backward,
#: fused over composed, three runs, the last in ``benchmarks/results/fused_backward_elementwise_s24.jsonl``): div
#: F = 64 0.89-0.93x fp32, 0.88-0.93x bf16, 0.86-0.92x fp16; F = 128 0.70-0.94x fp32, 0.84-1.03x bf16,
#: 0.94-0.97x fp16; mul fp32 F = 64 0.63-1.04x, F = 128 0.81-0.96x. 16-bit ``u_mul_e`` sums stay composed:
#: 0.85-1.11x, no gain beyond the noise (1.1-1.3x at F = 128 in the twenty-eighth session). The fused backward
#: reads two random rows per edge (``G``, the weights) and writes a third (their gradient), against the
#: forward's two reads, so neither route reaches 2.5x the forward (3.0-4.3x fp32 in those runs)
FUSED_ELEMENTWISE = (64, 128)


def _rhs_block_heads(bcast):
    """``H`` when the edge operand is one value per edge and block of the output's last dimension, else None:
    ``R = 1`` (one value per edge, ``H = 1``) or ``(E, *out[:-1], 1)`` (GAT's ``(E, H, 1)`` against
    ``(N, H, D)``, ``H = R``). Says nothing of the node operand: callers check that it does not broadcast."""
    out, rs = bcast.out_shape, bcast.rhs_shape
    if bcast.R == 1:
        return 1
    if len(out) > 0 and len(rs) == len(out) and rs[:-1] == out[:-1] and rs[-1] == 1:
        return bcast.R
    return None


def _scatter_winners(winner, coef, pos, rows, cols, disjoint_rows=False):
    """The max/min backward scatter: the selected kernel, or (create_graph=True) differentiable index_add_."""
    if _double_backward(coef):
        from ._reference import scatter_winners as differentiable
        return differentiable(winner, coef, pos, rows, cols)
    return _dispatch.scatter_winners(winner, coef, pos, rows, cols, disjoint_rows)


def _slot_winners_allowed(bcast):
    """True when max/min may record slot winners: neither operand broadcasts, or the edge operand is a block
    broadcast (:func:`_rhs_block_heads`) against a node operand that does not, whose gradient then sums each
    block's columns (``edge_winners(..., cols=R)``)."""
    if bcast.lhs_off is not None:
        return False
    return bcast.rhs_off is None or _rhs_block_heads(bcast) is not None


#: dtypes of slot winners (the dispatch's ``spmm(..., need_arg='slots')``); ids are int32/int64
SLOT_DTYPES = (torch.uint8, torch.int16)
#: ops whose max/min may record slot winners: each operand's gradient is the output's at the winner (sub: minus),
#: times the other operand there for the products
SLOT_OPS = ("copy_lhs", "copy_rhs", "add", "sub", "mul", "div")


def _extreme_backward(index, op, bcast, lhs, rhs, arg_u, arg_e, grad_out, need_lhs, need_rhs):
    """Gradients of max/min gSpMM: each output element's gradient goes to its winning edge."""
    N_src, E = index.num_src, index.num_edges
    F = bcast.F
    grad_lhs = grad_rhs = None
    if E == 0:
        if need_lhs:
            grad_lhs = torch.zeros_like(lhs)
        if need_rhs:
            grad_rhs = torch.zeros_like(rhs)
        return grad_lhs, grad_rhs
    # coefficients where the winner is -1 are ignored by the scatter (whatever they hold)
    F_idx = None
    products = op in ("mul", "div")
    L, R = bcast.L, bcast.R

    def col(off):
        nonlocal F_idx
        if off is not None:
            return off
        if F_idx is None:
            F_idx = torch.arange(F, dtype=torch.int64, device=grad_out.device)
        return F_idx

    # copies, add and sub pass the gradient as it is (16-bit values are widened inside the scatter, which
    # sums in the accumulator dtype); products multiply in the accumulator dtype first
    def as_given(acc):      # grad_out itself when the scatter would sum it in ``acc`` anyway
        return grad_out if accum_dtype(grad_out.dtype) == acc else grad_out.to(acc)

    if arg_u is not None and arg_u.dtype in SLOT_DTYPES:   # no broadcast: gathered by slot, no scatter
        if not _double_backward(grad_out, lhs, rhs):
            if products and need_lhs and need_rhs:    # both in one pass
                # arg_e: None, or the edge operand at the winners (the dispatch's rhs_won)
                return _dispatch.winners_product_backward(index, grad_out, arg_u, op, lhs, rhs, lhs.dtype,
                                                          rhs.dtype, rhs_won=arg_e)
            if need_lhs:        # (arg_e: the edge operand at the winners where the backend kept it, else None)
                grad_lhs = _dispatch.gather_winners(index, grad_out, arg_u, lhs.dtype, op, rhs if products else None,
                                                    rhs_won=arg_e if products else None)
            if need_rhs:
                grad_rhs = _dispatch.edge_winners(index, grad_out, arg_u, rhs.dtype, op, lhs if products else None,
                                                  rhs if op == "div" else None, cols=R)
            return grad_lhs, grad_rhs
        from ._reference import slot_winner_ids
        # the differentiable scatter below takes ids: the source and the edge of each winning slot
        arg_u, arg_e = slot_winner_ids(index, arg_u), slot_winner_ids(index, arg_u, of="eid")

    def at_winners(winner, operand, width, off):
        """The other operand of a product at each element's winner, in its accumulator dtype (0 where none)."""
        if _double_backward(grad_out, lhs, rhs):    # differentiable indexing (create_graph=True)
            # not _reference.pick_winners: it zeroes the picks of absent winners, and a zero divisor there
            # (u_div_e) makes the double backward nan even though the scatter drops those coefficients
            idx = winner.clamp(min=0).long() * width + col(off)  # int64: winner * width must not overflow
            return operand.reshape(-1)[idx].to(accum_dtype(operand.dtype))
        return _dispatch.pick_winners(winner, operand.reshape(-1, width), off, width)

    r_won = at_winners(arg_e, rhs, R, bcast.rhs_off) if products and (need_lhs or op == "div") else None
    if need_lhs:
        acc = accum_dtype(lhs.dtype)
        coef = as_given(acc)
        if op == "mul":
            coef = coef.to(acc) * r_won
        elif op == "div":
            coef = coef.to(acc) / r_won
        grad = _scatter_winners(arg_u, coef, bcast.lhs_off, N_src, L)
        grad_lhs = grad.to(lhs.dtype)
    if need_rhs:
        acc = accum_dtype(rhs.dtype)
        coef = as_given(acc)
        if op in ("mul", "div"):
            x = at_winners(arg_u, lhs, L, bcast.lhs_off)
            coef = coef * x if op == "mul" else -coef * x / (r_won * r_won)
        # an edge wins only within its own destination's row: rows never share a winner here
        grad = _scatter_winners(arg_e, coef, bcast.rhs_off, E, R, disjoint_rows=True)
        if op == "sub":     # d (l - r) / d r = -1: negate the sums (exact), not every coefficient
            grad = -grad if _double_backward(grad) else grad.neg_()
        grad_rhs = grad.to(rhs.dtype)
    return grad_lhs, grad_rhs


# ----------------------------------------------------------------------------- named variants
# Written out one by one (no generated names): DGL's dgl.ops.copy_u_sum, u_mul_e_max, ...

def copy_u_sum(g, x):
    """Sum of source-node features over in-edges: ``gspmm(g, 'copy_lhs', 'sum', x, None)``."""
    return gspmm(g, "copy_lhs", "sum", x, None)


def copy_u_mean(g, x):
    """Mean of source-node features over in-edges: ``gspmm(g, 'copy_lhs', 'mean', x, None)``."""
    return gspmm(g, "copy_lhs", "mean", x, None)


def copy_u_max(g, x):
    """Max of source-node features over in-edges: ``gspmm(g, 'copy_lhs', 'max', x, None)``."""
    return gspmm(g, "copy_lhs", "max", x, None)


def copy_u_min(g, x):
    """Min of source-node features over in-edges: ``gspmm(g, 'copy_lhs', 'min', x, None)``."""
    return gspmm(g, "copy_lhs", "min", x, None)


def copy_e_sum(g, x):
    """Sum of edge features over in-edges: ``gspmm(g, 'copy_rhs', 'sum', None, x)``."""
    return gspmm(g, "copy_rhs", "sum", None, x)


def copy_e_mean(g, x):
    """Mean of edge features over in-edges: ``gspmm(g, 'copy_rhs', 'mean', None, x)``."""
    return gspmm(g, "copy_rhs", "mean", None, x)


def copy_e_max(g, x):
    """Max of edge features over in-edges: ``gspmm(g, 'copy_rhs', 'max', None, x)``."""
    return gspmm(g, "copy_rhs", "max", None, x)


def copy_e_min(g, x):
    """Min of edge features over in-edges: ``gspmm(g, 'copy_rhs', 'min', None, x)``."""
    return gspmm(g, "copy_rhs", "min", None, x)


def u_add_e_sum(g, x, y):
    """``gspmm(g, 'add', 'sum', x, y)``: sum of ``x[u] + y[e]`` over in-edges."""
    return gspmm(g, "add", "sum", x, y)


def u_add_e_mean(g, x, y):
    """``gspmm(g, 'add', 'mean', x, y)``: mean of ``x[u] + y[e]`` over in-edges."""
    return gspmm(g, "add", "mean", x, y)


def u_add_e_max(g, x, y):
    """``gspmm(g, 'add', 'max', x, y)``: max of ``x[u] + y[e]`` over in-edges."""
    return gspmm(g, "add", "max", x, y)


def u_add_e_min(g, x, y):
    """``gspmm(g, 'add', 'min', x, y)``: min of ``x[u] + y[e]`` over in-edges."""
    return gspmm(g, "add", "min", x, y)


def u_sub_e_sum(g, x, y):
    """``gspmm(g, 'sub', 'sum', x, y)``: sum of ``x[u] - y[e]`` over in-edges."""
    return gspmm(g, "sub", "sum", x, y)


def u_sub_e_mean(g, x, y):
    """``gspmm(g, 'sub', 'mean', x, y)``: mean of ``x[u] - y[e]`` over in-edges."""
    return gspmm(g, "sub", "mean", x, y)


def u_sub_e_max(g, x, y):
    """``gspmm(g, 'sub', 'max', x, y)``: max of ``x[u] - y[e]`` over in-edges."""
    return gspmm(g, "sub", "max", x, y)


def u_sub_e_min(g, x, y):
    """``gspmm(g, 'sub', 'min', x, y)``: min of ``x[u] - y[e]`` over in-edges."""
    return gspmm(g, "sub", "min", x, y)


def u_mul_e_sum(g, x, y):
    """``gspmm(g, 'mul', 'sum', x, y)``: sum of ``x[u] * y[e]`` over in-edges (weighted aggregation)."""
    return gspmm(g, "mul", "sum", x, y)


def u_mul_e_mean(g, x, y):
    """``gspmm(g, 'mul', 'mean', x, y)``: mean of ``x[u] * y[e]`` over in-edges."""
    return gspmm(g, "mul", "mean", x, y)


def u_mul_e_max(g, x, y):
    """``gspmm(g, 'mul', 'max', x, y)``: max of ``x[u] * y[e]`` over in-edges."""
    return gspmm(g, "mul", "max", x, y)


def u_mul_e_min(g, x, y):
    """``gspmm(g, 'mul', 'min', x, y)``: min of ``x[u] * y[e]`` over in-edges."""
    return gspmm(g, "mul", "min", x, y)


def u_div_e_sum(g, x, y):
    """``gspmm(g, 'div', 'sum', x, y)``: sum of ``x[u] / y[e]`` over in-edges."""
    return gspmm(g, "div", "sum", x, y)


def u_div_e_mean(g, x, y):
    """``gspmm(g, 'div', 'mean', x, y)``: mean of ``x[u] / y[e]`` over in-edges."""
    return gspmm(g, "div", "mean", x, y)


def u_div_e_max(g, x, y):
    """``gspmm(g, 'div', 'max', x, y)``: max of ``x[u] / y[e]`` over in-edges."""
    return gspmm(g, "div", "max", x, y)


def u_div_e_min(g, x, y):
    """``gspmm(g, 'div', 'min', x, y)``: min of ``x[u] / y[e]`` over in-edges."""
    return gspmm(g, "div", "min", x, y)
