"""The ``cpu`` backend of :mod:`mpgraph.ops._dispatch`: adapters from the dispatch's contract to the Numba kernels.

The dispatch hands kernels contiguous 2-D operands ``(rows, L * K)`` / ``(rows, R * K)`` plus a
:class:`~mpgraph.ops._broadcast.Bcast`; the Numba wrappers take N-D operands and broadcast their feature
shapes like numpy. An adapter views each operand as ``(rows, *bcast.lhs_shape)`` (no copy), calls the
kernel on ``index.csc()`` and views the result back as ``(rows, F)``. The backward pass calls the same
adapters on ``index.reverse()``, whose ``csc()`` is the forward ``csr()`` (built once, cached).

When a graph's edges are already sorted by destination (``csc()``'s edge ids are ``0..E-1``), the adapters
pass ``eid=None``: the kernels then skip one indirection per edge, and edge softmax takes its contiguous
path. The check runs once per index (``index.cached('cpu.eid_identity', ...)``).

``supports`` accepts a call when the operands are CPU tensors of float16/bfloat16/float32/float64 and
Numba imports. If it does not import, the backend declines every call (the ``torch`` backend runs them)
and warns once, saying why.
"""

import warnings

import torch

from . import available, unavailable_reason

__all__ = ["KERNELS", "spmm", "sddmm", "edge_softmax", "edge_softmax_backward", "scatter_winners", "spmm_supports",
           "sddmm_supports", "edge_softmax_supports", "edge_softmax_backward_supports", "scatter_winners_supports",
           "pick_winners", "pick_winners_supports",
           "gather_winners", "gather_winners_supports", "edge_winners", "edge_winners_supports", "spmm_mul_backward",
           "spmm_mul_backward_supports", "div_edge_grad", "div_edge_grad_supports", "dropout", "dropout_backward",
           "dropout_supports", "dropout_backward_supports", "winners_product_backward",
           "winners_product_backward_supports", "row_scale", "row_scale_supports"]

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_SPMM_OPS = ("copy_lhs", "copy_rhs", "add", "sub", "mul", "div")
_REDUCES = ("sum", "mean", "max", "min")
_SDDMM_OPS = ("add", "sub", "mul", "div", "dot", "copy_lhs", "copy_rhs")
_TARGETS = ("u", "v", "e")
_warned = []


def _numba_ok():
    if available():
        return True
    if not _warned:
        _warned.append(True)
        warnings.warn(f"mpgraph's fast CPU kernels are off: {unavailable_reason()}. Message passing on the CPU "
                      "falls back to plain PyTorch kernels (correct, slower; half precision gains little).",
                      RuntimeWarning, stacklevel=4)
    return False


def _ok(tensors, out_dtype):
    for t in tensors:
        if t is not None and (t.device.type != "cpu" or t.dtype not in _FLOATS):
            return False
    return out_dtype in _FLOATS and _numba_ok()


def _nd(x, shape):
    """Contiguous ``x: (rows, prod(shape))`` viewed as ``(rows, *shape)``; ``None`` stays ``None``."""
    return None if x is None else x.view((x.shape[0],) + tuple(shape))


def _csc(index):
    """``(indptr, src, eid or None)`` of ``index.csc()``, with ``None`` when the edge ids are the identity."""
    indptr, src, eid = index.csc()
    identity = index.cached("cpu.eid_identity",
                            lambda: bool(torch.equal(eid, torch.arange(eid.numel(), dtype=eid.dtype))))
    return indptr, src, (None if identity else eid)


# ----------------------------------------------------------------------------------------------------- supports
def spmm_supports(index, op, reduce, lhs, rhs, bcast, out_dtype):
    """Whether :func:`spmm` runs this call: CPU float operands and Numba present."""
    return op in _SPMM_OPS and reduce in _REDUCES and _ok((lhs, rhs), out_dtype)


def sddmm_supports(index, op, lhs, rhs, lhs_target, rhs_target, bcast, out_dtype):
    """Whether :func:`sddmm` runs this call: CPU float operands and Numba present."""
    return (op in _SDDMM_OPS and lhs_target in _TARGETS and rhs_target in _TARGETS
            and _ok((lhs, rhs), out_dtype))


def edge_softmax_supports(index, logits, out_dtype):
    """Whether :func:`edge_softmax` runs this call: CPU float logits and Numba present."""
    return _ok((logits,), out_dtype)


def edge_softmax_backward_supports(index, out, grad_out, out_dtype):
    """Whether :func:`edge_softmax_backward` runs this call: CPU float tensors and Numba present."""
    return _ok((out, grad_out), out_dtype)


# ------------------------------------------------------------------------------------------------------ kernels
def spmm(index, op, reduce, lhs, rhs, bcast, out_dtype, need_arg=True):
    """gSpMM over ``index.csc()``: ``(out: (N_dst, F), arg_u, arg_e)`` (contract in the dispatch); max/min
    without ``need_arg`` run the kernel that does not track winners. Slot winners of ``mul``/``div`` without a
    broadcast also keep the edge operand at the winners (``gspmm``'s ``rhs_won``), returned as ``arg_e``: the
    backward (:func:`winners_product_backward`) then reads ``N_dst x F`` values where it would read ``E x F``."""
    from .._reference import SPLIT_SLOT_ROW
    from ._core import empty_out
    from .spmm import gspmm, keeps_rhs, slot_dtype

    indptr, src, eid = _csc(index)
    longest = hubs = None
    if need_arg == "slots" and reduce in ("max", "min") and indptr.numel() > 1:
        # the widest row picks the slots' width: one O(N) pass per graph, not per call
        longest = index.cached("cpu.max_in_degree", lambda: int(index.in_degrees().max()))
        hubs = _hub_rows(index) if longest > SPLIT_SLOT_ROW else None
    lhs_nd = _nd(lhs, bcast.lhs_shape) if op != "copy_rhs" else None
    rhs_nd = _nd(rhs, bcast.rhs_shape) if op != "copy_lhs" else None
    won = None
    if longest is not None and slot_dtype(longest, None) is not None and keeps_rhs(op, reduce, need_arg, lhs_nd,
                                                                                      rhs_nd):
        won = empty_out((index.num_dst,) + tuple(rhs_nd.shape[1:]), rhs_nd.dtype)
    out, arg_u, arg_e = gspmm(op, reduce, indptr, None if op == "copy_rhs" else src, eid, lhs_nd, rhs_nd,
                              out_dtype=out_dtype, need_arg=need_arg, max_row=longest, split_slots=True,
                              hub_rows=hubs, hub_edges=None if hubs is None else _hub_edges(index), rhs_won=won)
    N_dst, F = index.num_dst, bcast.F
    arg_u = None if arg_u is None else arg_u.view(-1, F)    # split slots have rows past N_dst
    arg_e = won if won is not None else arg_e
    arg_e = None if arg_e is None else arg_e.view(N_dst, F)
    return out.view(N_dst, F), arg_u, arg_e


def sddmm(index, op, lhs, rhs, lhs_target, rhs_target, bcast, out_dtype):
    """gSDDMM per destination over ``index.csc()``, written in edge-ID order: ``(E, F)``."""
    from .sddmm import gsddmm

    indptr, src, eid = _csc(index)
    out = gsddmm(op, indptr, src, eid, _nd(lhs, bcast.lhs_shape) if op != "copy_rhs" else None,
                 _nd(rhs, bcast.rhs_shape) if op != "copy_lhs" else None, lhs_target, rhs_target,
                 out_dtype=out_dtype)
    return out.view(index.num_edges, bcast.F)


def edge_softmax(index, logits, out_dtype):
    """Softmax of ``logits: (E, F)`` over each destination's in-edges: ``(E, F)`` in ``out_dtype``."""
    from .edge_softmax import edge_softmax_forward

    indptr, _, eid = _csc(index)
    return edge_softmax_forward(indptr, eid, logits, out_dtype=out_dtype)


def edge_softmax_backward(index, out, grad_out, out_dtype):
    """Edge softmax gradient over the same groups, fused (one pass per group): ``(E, F)`` in ``out_dtype``."""
    from .edge_softmax import edge_softmax_backward as kernel

    indptr, _, eid = _csc(index)
    return kernel(indptr, eid, out, grad_out, out_dtype=out_dtype)


def scatter_winners_supports(winner, coef, pos, rows, cols, disjoint_rows=False):
    """Whether :func:`scatter_winners` runs this call: CPU tensors and Numba present."""
    return winner.device.type == "cpu" and coef.device.type == "cpu" and coef.dtype in _FLOATS and _numba_ok()


def scatter_winners(winner, coef, pos, rows, cols, disjoint_rows=False):
    """Max/min backward: add ``coef`` to each element's winner, one pass (:mod:`.scatter`)."""
    from .scatter import scatter_winners as kernel

    return kernel(winner, coef, pos, rows, cols, disjoint_rows)


def pick_winners_supports(winner, src, pos, cols):
    """Whether :func:`pick_winners` runs this call: CPU tensors and Numba present."""
    return winner.device.type == "cpu" and src.device.type == "cpu" and src.dtype in _FLOATS and _numba_ok()


def pick_winners(winner, src, pos, cols):
    """Max/min backward of products: the other operand at each element's winner, one pass (:mod:`.scatter`)."""
    from .scatter import pick_winners as kernel

    return kernel(winner, src, pos, cols)


def gather_winners_supports(index, grad, winners, out_dtype, op="copy_lhs", rhs=None, rhs_won=None):
    """Whether :func:`gather_winners` runs this call: CPU float operands, uint8/int16 slots, Numba present."""
    return (winners.device.type == "cpu" and winners.dtype in (torch.uint8, torch.int16)
            and _ok((grad, rhs), out_dtype))


def _factor(op):
    """The slot-winner kernels' name for what multiplies the gradient: 'mul', 'div' or 'copy'."""
    return op if op in ("mul", "div") else "copy"


def gather_winners(index, grad, winners, out_dtype, op="copy_lhs", rhs=None, rhs_won=None):
    """The node operand's max/min gradient from slot winners, gathered per source's out-edges (:mod:`.scatter`).
    A product's ``rhs_won`` (the edge operand at the winners, which this backend's forward keeps; see
    :func:`spmm`) is read beside each destination's gradient row (``other_rows``), not the ``E x F`` operand at
    edge ids: the same bits."""
    from .scatter import gather_winners as kernel

    indptr, dst, eid = index.csr()
    factor = _factor(op)
    slot_of, hub_ptr, hub_info = _gather_slots(index, winners)
    if factor != "copy" and rhs_won is not None:
        return kernel(indptr, dst, slot_of, grad, winners, out_dtype=out_dtype, op=factor, other=rhs_won,
                      other_rows=True, hub_ptr=hub_ptr, hub_info=hub_info)
    return kernel(indptr, dst, slot_of, grad, winners, out_dtype=out_dtype, op=factor,
                  eid=eid if factor != "copy" else None, other=rhs if factor != "copy" else None,
                  hub_ptr=hub_ptr, hub_info=hub_info)


def _hub_rows(index):
    """:func:`mpgraph.ops._reference.split_hub_rows` of the destinations, cached."""
    from .._reference import split_hub_rows

    return index.cached("cpu.hub_rows", lambda: split_hub_rows(index.csc()[0]))


def _hub_edges(index):
    """:func:`.spmm.hub_in_edges` of :func:`_hub_rows` over ``index.csc()``, cached: the split slots' second pass
    runs over them on every max/min forward."""
    from .spmm import hub_in_edges

    return index.cached("cpu.hub_edges", lambda: hub_in_edges(*_csc(index), _hub_rows(index)))


def _hub_row(index, winners):
    """For split slot winners (more rows than ``index.num_dst``): each destination's hub number ``h`` (its
    slots' bytes in rows ``num_dst + 2h`` and ``num_dst + 2h + 1``) or -1, int32 (``edge_winners``' ``hub_row``);
    None otherwise."""
    if winners.shape[0] == index.num_dst:
        return None

    def build():
        out = torch.full((index.num_dst,), -1, dtype=torch.int32)
        hubs = _hub_rows(index)
        out[hubs] = torch.arange(hubs.numel(), dtype=torch.int32)
        return out
    return index.cached("cpu.hub_row", build)


def _gather_slots(index, winners):
    """``gather_winners``' ``(slot_of, hub_ptr, hub_info)`` for ``winners``: :func:`_csr_slots` and no hub tables,
    or, for split slot winners, uint8 slots with :data:`.scatter.HUB_SLOT` for the out-edges into hub rows and
    their tables (``hub_info``: ``h * 65536 + slot`` of those edges in ``index.csr()`` order, ``hub_ptr``: where
    each source's begin). Cached."""
    if winners.shape[0] == index.num_dst:
        return _csr_slots(index, winners.dtype), None, None

    def build():
        from .scatter import HUB_SLOT

        indptr, dst, _ = index.csr()
        slot = _slot_offsets(index)
        h = _hub_row(index, winners)[dst].to(torch.int64)
        hub = h >= 0
        before = torch.zeros(dst.numel() + 1, dtype=torch.int64)       # out-edges into hubs before each slot
        torch.cumsum(hub, 0, out=before[1:])
        return (torch.where(hub, HUB_SLOT, slot).to(torch.uint8), before[indptr],
                torch.bitwise_left_shift(h[hub], 16) | slot[hub])
    return index.cached("cpu.split_gather_slots", build)


def winners_product_backward_supports(index, grad, winners, op, lhs, rhs, lhs_dtype, rhs_dtype, rhs_won=None):
    """Whether :func:`winners_product_backward` runs this call: as :func:`gather_winners_supports`."""
    return (gather_winners_supports(index, grad, winners, lhs_dtype, op, rhs)
            and _ok((lhs,), rhs_dtype))


def winners_product_backward(index, grad, winners, op, lhs, rhs, lhs_dtype, rhs_dtype, rhs_won=None):
    """Both gradients of a ``u_mul_e``/``u_div_e`` max/min from slot winners.

    An elementwise edge operand (``rhs: (E, F)``) takes two passes: one over the destinations' in-edges
    (:func:`.scatter.edge_winners` with ``picked``) writes the edge gradient and each output element's term
    ``grad * rhs`` at its winner, reading ``rhs`` and writing its gradient in slot order; then
    :func:`.scatter.gather_winners` sums those terms over each source's out-edges, a copy's gather. In one pass
    over the sources (below) both ``E x F`` arrays would be read and written at random edge ids: measured
    0.52-0.91x that pass's time (uniform graph, 2M edges, F in {4, 16, 64}, fp32 and bf16, mul and div), with
    bitwise the same results (the same fp32 terms, summed in the same order).

    A block broadcast (``rhs: (E, H)``, ``H < F``: one value per edge or GAT's heads) is one pass over the
    sources' out-edges (:func:`.scatter.gather_winners` with ``lhs``): the edge gradient comes from the
    gradient and winner rows the node gradient loads anyway, and its ``E x H`` arrays are narrow.

    ``rhs_won`` (this backend's forward keeps it: the edge operand at each element's winner, ``(N_dst, F)``): the
    edge pass reads it by destination row (:func:`.scatter.edge_winners` with ``rhs_rows``) and never the
    ``E x F`` edge operand, which the node gradient's terms and ``u_div_e``'s edge gradient need only at the
    winners; with 16-bit operands the edge pass picks no terms and the gather multiplies by ``rhs_won``'s rows
    (:func:`.scatter.gather_winners` with ``other_rows``). The same results, bit for bit (the same values, the
    same arithmetic). Measured on the uniform graph (2M edges, ``(E, 64)`` weights, the backward's kernels alone,
    forty-ninth session): float32 0.79-0.92x the time of the edge operand's route (picked terms from
    ``rhs_won``; the gather by ``rhs_won`` took 0.92-1.22x), bfloat16 0.64-0.89x (the gather by ``rhs_won``; the
    picked terms from it took 0.97-1.31x)."""
    from .scatter import edge_winners, gather_winners

    indptr, dst, eid = index.csr()
    slots, hub_ptr, hub_info = _gather_slots(index, winners)
    if rhs.shape[1] == grad.shape[1]:
        indptr_c, src_c, eid_c = _csc(index)
        if rhs_won is not None and grad.element_size() == rhs_won.element_size() == lhs_dtype.itemsize == 2:
            # 16-bit: the gather multiplies G by rhs_won itself (two 16-bit rows per out-edge, the bytes of one
            # float32 row of picked terms), and the edge pass neither reads the edge operand nor writes terms
            grad_rhs = edge_winners(indptr_c, eid_c, grad, winners, out_dtype=rhs_dtype, op=op, src=src_c, lhs=lhs,
                                    rhs=rhs_won if op == "div" else None, hub_row=_hub_row(index, winners),
                                    rhs_rows=op == "div")
            return gather_winners(indptr, dst, slots, grad, winners, out_dtype=lhs_dtype, op=op, other=rhs_won,
                                  other_rows=True, hub_ptr=hub_ptr, hub_info=hub_info), grad_rhs
        rows = rhs_won is not None
        grad_rhs, picked = edge_winners(indptr_c, eid_c, grad, winners, out_dtype=rhs_dtype, op=op, src=src_c,
                                        lhs=lhs, rhs=rhs_won if rows else rhs, picked=True,
                                        hub_row=_hub_row(index, winners), rhs_rows=rows)
        return gather_winners(indptr, dst, slots, picked, winners, out_dtype=lhs_dtype, hub_ptr=hub_ptr,
                              hub_info=hub_info), grad_rhs
    return gather_winners(indptr, dst, slots, grad, winners, out_dtype=lhs_dtype, op=op, eid=eid, other=rhs,
                          lhs=lhs, edge_dtype=rhs_dtype, hub_ptr=hub_ptr, hub_info=hub_info)


def edge_winners_supports(index, grad, winners, out_dtype, op="copy_rhs", lhs=None, rhs=None, cols=None):
    """Whether :func:`edge_winners` runs this call: as :func:`gather_winners_supports`."""
    return gather_winners_supports(index, grad, winners, out_dtype) and _ok((lhs, rhs), out_dtype)


def edge_winners(index, grad, winners, out_dtype, op="copy_rhs", lhs=None, rhs=None, cols=None):
    """The edge operand's max/min gradient from slot winners, one pass over ``index.csc()`` (:mod:`.scatter`)."""
    from .scatter import edge_winners as kernel

    indptr, src, eid = _csc(index)
    factor = _factor(op)
    products = factor != "copy"
    return kernel(indptr, eid, grad, winners, out_dtype=out_dtype, op="neg" if op == "sub" else factor,
                  src=src if products else None, lhs=lhs if products else None,
                  rhs=rhs if factor == "div" else None, cols=cols, hub_row=_hub_row(index, winners))


def _csr_slots(index, dtype):
    """For each slot of ``index.csr()``, its edge's offset within the destination's in-edges (``index.csc()``
    order), in ``dtype``: what a max/min forward records as the slot winner when that edge wins. Cached."""
    return index.cached(f"cpu.csr_slots.{dtype}", lambda: _slot_offsets(index).to(dtype))


def _slot_offsets(index):
    """:func:`_csr_slots` in int64, not cached: edge id -> its csc slot -> offset within its destination's row
    (uint8 keeps the low byte)."""
    indptr_c = index.csc()[0]
    _, dst_r, eid_r = index.csr()
    return _eid_inverse(index)[eid_r] - indptr_c[dst_r]


def spmm_mul_backward_supports(index, grad, lhs, rhs, heads, op="mul", row_scale=None):
    """Whether :func:`spmm_mul_backward` runs this call: CPU float operands of one dtype and Numba present."""
    return grad.dtype == lhs.dtype == rhs.dtype and _ok((grad, lhs, rhs), lhs.dtype)


def spmm_mul_backward(index, grad, lhs, rhs, heads, op="mul", row_scale=None):
    """Both gradients of a ``u_mul_e`` (``u_div_e``) sum in one pass over ``index.csc()`` (:mod:`.spmm_backward`);
    ``row_scale`` (a mean's ``1 / in-degree``) is applied inside the pass."""
    from .spmm_backward import mul_sum_backward

    indptr, src, eid = _csc(index)
    H = heads
    D = grad.shape[1] // H
    inverse = None if eid is None else _eid_inverse(index)
    grad_lhs, grad_rhs = mul_sum_backward(indptr, src, eid, grad.view(-1, H, D), lhs.view(-1, H, D), rhs,
                                          divide=op == "div", row_scale=row_scale, eid_inverse=inverse)
    return grad_lhs.view(index.num_dst, H * D), grad_rhs


def div_edge_grad_supports(index, lhs, grad, rhs, out_dtype):
    """Whether :func:`div_edge_grad` runs this call: CPU float operands and Numba present."""
    return _ok((lhs, grad, rhs), out_dtype)


def div_edge_grad(index, lhs, grad, rhs, out_dtype):
    """The ``u_div_e`` edge gradient in one gSDDMM pass over ``index.csc()`` with a divisor epilogue (:mod:`.sddmm`)."""
    from .sddmm import gsddmm

    indptr, src, eid = _csc(index)
    return gsddmm("mul", indptr, src, eid, lhs, grad, "u", "v", out_dtype=out_dtype, neg_div_square=rhs)


def _eid_inverse(index):
    """The csc slot of each edge id (the inverse of ``index.csc()``'s edge ids), built once per graph."""
    return index.cached("cpu.eid_inverse", lambda: _inverse(index.csc()[2]))


def _inverse(perm):
    """The inverse permutation: ``out[perm[k]] = k``."""
    out = torch.empty_like(perm)
    out[perm] = torch.arange(perm.numel(), dtype=perm.dtype)
    return out


def dropout_supports(x, p, seed):
    """Whether :func:`dropout` runs this call: a CPU float tensor and Numba present."""
    return _ok((x,), x.dtype)


def dropout_backward_supports(grad, p, seed, saved):
    """Whether :func:`dropout_backward` runs this call: a CPU float tensor and Numba present."""
    return _ok((grad,), grad.dtype)


def dropout(x, p, seed):
    """Seeded dropout (:mod:`.dropout`): ``(y, None)``; the backward recomputes the mask from ``seed``."""
    from .dropout import dropout as kernel

    return kernel(x, p, seed), None


def dropout_backward(grad, p, seed, saved):
    """The gradient of :func:`dropout`: the same seeded mask on ``grad``."""
    from .dropout import dropout as kernel

    return kernel(grad, p, seed)


def row_scale_supports(x, s, out_dtype, divide):
    """Whether :func:`row_scale` runs this call: CPU tensors, float32 factors, no float64, Numba present."""
    return (x.device.type == "cpu" and s.device.type == "cpu" and s.dtype == torch.float32
            and x.dtype in _FLOATS[:3] and out_dtype in _FLOATS[:3] and _numba_ok())


def row_scale(x, s, out_dtype, divide):
    """Rows scaled by one float32 factor each (:mod:`.rowscale`; routed by :func:`mpgraph.ops._dispatch.row_scale`,
    not a dispatch op)."""
    from .rowscale import row_scale as kernel

    return kernel(x, s, out_dtype, divide)


KERNELS = {
    "spmm": (spmm, spmm_supports),
    "spmm_mul_backward": (spmm_mul_backward, spmm_mul_backward_supports),
    "sddmm": (sddmm, sddmm_supports),
    "edge_softmax": (edge_softmax, edge_softmax_supports),
    "edge_softmax_backward": (edge_softmax_backward, edge_softmax_backward_supports),
    "scatter_winners": (scatter_winners, scatter_winners_supports),
    "pick_winners": (pick_winners, pick_winners_supports),
    "gather_winners": (gather_winners, gather_winners_supports),
    "edge_winners": (edge_winners, edge_winners_supports),
    "div_edge_grad": (div_edge_grad, div_edge_grad_supports),
    "winners_product_backward": (winners_product_backward, winners_product_backward_supports),
    "dropout": (dropout, dropout_supports),
    "dropout_backward": (dropout_backward, dropout_backward_supports),
}
