"""Plain PyTorch implementations of the op kernels: the test oracle and the last-resort path.

Written for obviousness, not speed: every operand is upcast to the accumulation
dtype, messages are materialised per edge (``dot`` too: ``(E, F, K)``), and
reductions use ``index_add_`` / ``scatter_reduce_``. Signatures and semantics are
the kernel contract documented in :mod:`mpgraph.ops._dispatch`.
"""

import torch

from ..precision import accum_dtype, rowwise_scale

__all__ = ["spmm", "sddmm", "edge_softmax", "binary", "spmm_mul_backward", "composed_mul_backward",
           "composed_mul_backward_supports", "dropout", "dropout_backward", "dropout_keep"]


def _accum(lhs, rhs, out_dtype):
    """Accumulation dtype for operands ``lhs``/``rhs`` (one dtype, either may be None) and ``out_dtype``."""
    operand = lhs.dtype if lhs is not None else rhs.dtype
    return accum_dtype(torch.promote_types(operand, out_dtype))


def binary(op, a, b):
    """``a op b`` with broadcasting; ``dot`` sums the last dimension and keeps it as 1."""
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / b
    if op == "dot":
        return (a * b).sum(dim=-1, keepdim=True)
    raise ValueError(f"unknown binary op {op!r}")  # unreachable: ops validate op names


def _rows(index, target):
    """Row of each edge in an operand with ``target`` rows (None: the edge itself)."""
    if target == "u":
        return index.src64
    if target == "v":
        return index.dst64
    return None


def _at_edges(x, rows, num_rows, shape, acc):
    """``x: (num_rows, prod(shape))`` -> ``(E, *shape)`` in ``acc`` at the edges' rows."""
    x = x.to(acc).reshape((num_rows,) + tuple(shape))
    return x if rows is None else x.index_select(0, rows)


def _num_rows(index, target):
    return {"u": index.num_src, "v": index.num_dst, "e": index.num_edges}[target]


def spmm(index, op, reduce, lhs, rhs, bcast, out_dtype, need_arg=True):
    """Reference gSpMM kernel (see :mod:`mpgraph.ops._dispatch` for the contract); always returns the
    max/min winners, whatever ``need_arg`` says."""
    acc = _accum(lhs, rhs, out_dtype)
    E, N, F = index.num_edges, index.num_dst, bcast.F
    src, dst = index.src64, index.dst64
    if op == "copy_lhs":
        msg = lhs.to(acc).index_select(0, src)                                 # (E, F)
    elif op == "copy_rhs":
        msg = rhs.to(acc)                                                      # (E, F)
    else:
        a = _at_edges(lhs, src, index.num_src, bcast.lhs_shape, acc)           # (E, *lhs_shape)
        b = _at_edges(rhs, None, E, bcast.rhs_shape, acc)                      # (E, *rhs_shape)
        msg = binary(op, a, b).reshape(E, F)
    deg = index.in_degrees()
    if reduce in ("sum", "mean"):
        out = torch.zeros(N, F, dtype=acc, device=msg.device).index_add_(0, dst, msg)
        if reduce == "mean":
            out = out / deg.clamp(min=1).to(torch.float32).unsqueeze(1)
        return out.to(out_dtype), None, None

    # max / min: messages rounded to the output format (as a kernel in that format computes them),
    # true +-inf identities, then the smallest edge ID attaining the extremum
    msg = msg.to(out_dtype).to(acc)
    identity = float("-inf") if reduce == "max" else float("inf")
    dst2 = dst.unsqueeze(1).expand(E, F)
    out = torch.full((N, F), identity, dtype=acc, device=msg.device)
    out.scatter_reduce_(0, dst2, msg, "amax" if reduce == "max" else "amin", include_self=True)
    eid = torch.arange(E, dtype=torch.int64, device=msg.device).unsqueeze(1).expand(E, F)
    candidate = torch.where(msg == out.index_select(0, dst), eid, E)
    arg_e = torch.full((N, F), E, dtype=torch.int64, device=msg.device)
    arg_e.scatter_reduce_(0, dst2, candidate, "amin", include_self=True)
    arg_e = torch.where(arg_e == E, -1, arg_e)                                 # no edge (or NaN)
    empty = (deg == 0).unsqueeze(1)
    out = torch.where(empty, 0.0, out)
    arg_u = None
    if lhs is not None:
        arg_u = torch.where(arg_e >= 0, src[arg_e.clamp(min=0)], -1)
    return out.to(out_dtype), arg_u, (arg_e if rhs is not None else None)


def sddmm(index, op, lhs, rhs, lhs_target, rhs_target, bcast, out_dtype):
    """Reference gSDDMM kernel (materialises ``dot`` products per edge)."""
    acc = _accum(lhs, rhs, out_dtype)
    E = index.num_edges
    if op == "copy_lhs":
        out = _at_edges(lhs, _rows(index, lhs_target), _num_rows(index, lhs_target), bcast.lhs_shape, acc)
    elif op == "copy_rhs":
        out = _at_edges(rhs, _rows(index, rhs_target), _num_rows(index, rhs_target), bcast.rhs_shape, acc)
    else:
        a = _at_edges(lhs, _rows(index, lhs_target), _num_rows(index, lhs_target), bcast.lhs_shape, acc)
        b = _at_edges(rhs, _rows(index, rhs_target), _num_rows(index, rhs_target), bcast.rhs_shape, acc)
        out = binary(op, a, b)
    return out.reshape(E, bcast.F).to(out_dtype, copy=op in ("copy_lhs", "copy_rhs"))   # never alias inputs


def edge_softmax(index, logits, out_dtype):
    """Reference edge softmax over the in-edges of each destination."""
    acc = torch.promote_types(accum_dtype(out_dtype), accum_dtype(logits.dtype))
    E, F = logits.shape
    N = index.num_dst
    dst = index.dst64
    x = logits.to(acc)
    m = torch.full((N, F), float("-inf"), dtype=acc, device=x.device)
    m.scatter_reduce_(0, dst.unsqueeze(1).expand(E, F), x, "amax", include_self=True)
    z = torch.exp(x - m.index_select(0, dst))
    s = torch.zeros(N, F, dtype=acc, device=x.device).index_add_(0, dst, z)
    return (z / s.index_select(0, dst)).to(out_dtype)


def edge_softmax_backward(index, out, grad_out, out_dtype):
    """Reference edge softmax gradient: ``y * (g - sum_group(y * g))`` in the accum dtype."""
    acc = torch.promote_types(accum_dtype(out_dtype), accum_dtype(out.dtype))
    y, g = out.to(acc), grad_out.to(acc)
    gy = g * y
    s = torch.zeros(index.num_dst, gy.shape[1], dtype=acc, device=gy.device).index_add_(0, index.dst64, gy)
    return (gy - y * s.index_select(0, index.dst64)).to(out_dtype)


def pick_winners(winner, src, pos, cols):
    """``src[winner[r, f], pos[f]]`` (0 where ``winner < 0``) by indexing (any device), in ``src``'s
    accumulator dtype."""
    F = winner.shape[1]
    col = torch.arange(F, dtype=torch.int64, device=src.device) if pos is None else pos
    flat = winner.clamp(min=0).to(torch.int64) * cols + col
    picked = src.reshape(-1)[flat].to(accum_dtype(src.dtype))
    return torch.where(winner >= 0, picked, 0.0)


def scatter_winners(winner, coef, pos, rows, cols, disjoint_rows=False):
    """``out[winner[r, f], pos[f]] += coef[r, f]`` for ``winner >= 0`` with ``index_add_`` (any device), in
    ``coef``'s accumulator dtype (``disjoint_rows`` is a scheduling hint; index_add_ needs none)."""
    valid = winner >= 0
    F = coef.shape[1]
    acc = accum_dtype(coef.dtype)
    col = torch.arange(F, dtype=torch.int64, device=coef.device) if pos is None else pos
    flat = (winner.clamp(min=0).to(torch.int64) * cols + col).reshape(-1)
    out = torch.zeros(rows * cols, dtype=acc, device=coef.device)
    out.index_add_(0, flat, torch.where(valid, coef.to(acc), 0.0).reshape(-1))
    return out.reshape(rows, cols)


def slot_winner_ids(index, winners, of="src"):
    """Slot winners (uint8/int16 offsets within each destination's in-edges, see the dispatch's ``spmm``)
    as int64 source nodes (``of='src'``) or edge ids (``of='eid'``), -1 where there is none."""
    indptr, src, eid = index.csc()
    ids = src if of == "src" else eid
    if winners.shape[0] > index.num_dst:
        winners = joined_slots(index, winners)
    none = 255 if winners.dtype == torch.uint8 else -1
    valid = winners != none
    pos = (indptr[:-1].unsqueeze(1) + winners.to(torch.int64)).clamp(max=max(ids.numel() - 1, 0))
    return torch.where(valid, ids[pos], -1)


#: rows longer than this many edges are the hub rows of split slot winners (see the dispatch's ``spmm``)
SPLIT_SLOT_ROW = 255


def split_hub_rows(indptr):
    """The rows of ``indptr`` with more than :data:`SPLIT_SLOT_ROW` edges (the hub rows of split slot winners),
    int64, in increasing order."""
    return torch.nonzero(indptr[1:] - indptr[:-1] > SPLIT_SLOT_ROW).reshape(-1)


def joined_slots(index, winners):
    """Split slot winners (uint8 ``(N_dst + 2 n_hub, F)``, see the dispatch's ``spmm``) as int16 ``(N_dst, F)``:
    the hub rows' low bytes joined with their high bytes, -1 where there is none."""
    N = index.num_dst
    hubs = split_hub_rows(index.csc()[0]).to(winners.device)
    if winners.dtype != torch.uint8 or winners.shape[0] != N + 2 * hubs.numel():
        raise ValueError(f"expected uint8 split slot winners of {N} + 2 x {hubs.numel()} rows (two for each "
                         f"destination with more than {SPLIT_SLOT_ROW} in-edges), got {winners.dtype} "
                         f"{tuple(winners.shape)}")
    out = winners[:N].to(torch.int16)
    out[out == 255] = -1        # none, in the rows of at most 255 edges
    pairs = winners[N:].to(torch.int16).view(-1, 2, winners.shape[1])
    out[hubs] = torch.bitwise_left_shift(pairs[:, 1], 8) | pairs[:, 0]
    return out


def gather_winners(index, grad, winners, out_dtype, op="copy_lhs", rhs=None, rhs_won=None):
    """Reference node-operand max/min gradient from slot winners: the slots as source ids, then ``index_add_``
    (``op`` 'mul'/'div': ``grad`` times/over ``rhs`` at the winning edge first; ``rhs_won``, a kernel's
    shortcut, is not needed here)."""
    if op in ("mul", "div"):
        r = pick_winners(slot_winner_ids(index, winners, of="eid"), _wide(rhs, grad, out_dtype),
                         _block_pos(grad.shape[1], rhs.shape[1], grad.device), rhs.shape[1])
        grad = _wide(grad, grad, out_dtype) * r if op == "mul" else _wide(grad, grad, out_dtype) / r
    return _scatter_slots(index, grad, winners, out_dtype, "src", index.num_src)


def winners_product_backward(index, grad, winners, op, lhs, rhs, lhs_dtype, rhs_dtype, rhs_won=None):
    """Reference of the fused max/min product backward: :func:`gather_winners` then :func:`edge_winners`
    (``rhs_won``, a kernel's shortcut, is not needed here)."""
    return (gather_winners(index, grad, winners, lhs_dtype, op, rhs),
            edge_winners(index, grad, winners, rhs_dtype, op, lhs, rhs if op == "div" else None,
                         cols=rhs.shape[1]))


def _block_pos(F, H, device):
    """The edge operand's column of each of ``F`` features for a block broadcast of ``H`` columns (None: F == H)."""
    return None if H == F else torch.arange(F, device=device) // (F // H)


def edge_winners(index, grad, winners, out_dtype, op="copy_rhs", lhs=None, rhs=None, cols=None):
    """Reference max/min edge gradient from slot winners: the slots as edge ids, then ``index_add_``
    (``op`` 'mul': ``grad * lhs`` at the winning source, 'div': ``-grad * lhs / rhs^2``); ``cols < F``: the
    block broadcast's sums (contract in :mod:`mpgraph.ops._dispatch`)."""
    F = grad.shape[1]
    H = F if cols is None else cols
    if op == "sub":
        grad = -_wide(grad, grad, out_dtype)
    if op in ("mul", "div"):
        x = pick_winners(slot_winner_ids(index, winners, of="src"), _wide(lhs, grad, out_dtype), None, F)
        grad = _wide(grad, grad, out_dtype) * x
        if op == "div":
            r = pick_winners(slot_winner_ids(index, winners, of="eid"), _wide(rhs, grad, out_dtype),
                             _block_pos(F, H, grad.device), H)
            grad = -grad / (r * r)
    if H == F:
        return _scatter_slots(index, grad, winners, out_dtype, "eid", index.num_edges)
    wide = _scatter_slots(index, grad, winners, accum_dtype(torch.promote_types(grad.dtype, out_dtype)), "eid",
                          index.num_edges)
    return wide.reshape(index.num_edges, H, F // H).sum(-1).to(out_dtype)


def _wide(t, grad, out_dtype):
    """``t`` in float64 when ``grad`` or the result is float64 (else as it is: the picks widen to float32)."""
    return t.to(torch.float64) if torch.float64 in (grad.dtype, out_dtype) else t


def _scatter_slots(index, grad, winners, out_dtype, of, rows):
    """``grad`` added at the ids (``of``: ``'src'``/``'eid'``) the slot winners name, ``(rows, F)`` in
    ``out_dtype``; float64 sums when either side is float64."""
    if grad.dtype == torch.float64 or out_dtype == torch.float64:
        grad = grad.to(torch.float64)
    return scatter_winners(slot_winner_ids(index, winners, of=of), grad, None, rows, grad.shape[1]).to(out_dtype)


def div_edge_grad(index, lhs, grad, rhs, out_dtype):
    """Reference ``u_div_e`` edge gradient ``-lhs[u] * grad[v] / rhs[e]**2`` by indexing (contract in
    :mod:`mpgraph.ops._dispatch`)."""
    acc = torch.float64 if torch.float64 in (lhs.dtype, grad.dtype, rhs.dtype, out_dtype) else torch.float32
    w = rhs.to(acc)
    return (-(lhs.to(acc)[index.src64] * grad.to(acc)[index.dst64]) / (w * w)).to(out_dtype)


def spmm_mul_backward(index, grad, lhs, rhs, heads, op="mul", row_scale=None):
    """Reference fused ``u_mul_e`` / ``u_div_e`` sum backward (see :mod:`mpgraph.ops._dispatch` for the contract)."""
    acc = accum_dtype(grad.dtype)
    H = heads
    D = grad.shape[1] // H
    v, u = index.src64, index.dst64                       # reversed graph: edge e goes v -> u
    g = grad.to(acc)
    if row_scale is not None:
        g = g * row_scale.to(acc).reshape(-1, 1)
    g = g.reshape(-1, H, D).index_select(0, v)                                   # (E, H, D)
    x = lhs.to(acc).reshape(-1, H, D)
    grad_lhs = torch.zeros(index.num_dst, H, D, dtype=acc, device=grad.device)
    w = rhs.to(acc).reshape(-1, H, 1)
    grad_lhs.index_add_(0, u, g / w if op == "div" else g * w)
    grad_rhs = (g * x.index_select(0, u)).sum(-1)                                # (E, H)
    if op == "div":
        grad_rhs = -grad_rhs / (w * w).reshape(-1, H)
    return grad_lhs.reshape(index.num_dst, H * D).to(lhs.dtype), grad_rhs.to(rhs.dtype)


def composed_mul_backward(spmm_kernel, sddmm_kernel):
    """``spmm_mul_backward`` of a backend without a fused kernel: its own gSpMM then its own gSDDMM.

    ``grad_lhs`` is the gSpMM ``u_mul_e`` (``u_div_e``) sum on the reversed graph, ``grad_rhs`` the gSDDMM
    ``u_dot_v`` on it (for ``u_div_e`` in the accumulator dtype, then divided by ``-w**2`` and rounded once):
    the same kernels the op layer would call one by one. A ``row_scale`` is applied to ``grad`` first
    (:func:`mpgraph.precision.rowwise_scale`: the product in the wider dtype, rounded once); the scaled rows
    are in ``grad``'s dtype for float32/float64 and bfloat16 (float32's exponent range: nothing underflows),
    while float16 operands (whose scaled rows could underflow) run the two kernels on float32 copies and round
    the results once.
    """
    def kernel(index, grad, lhs, rhs, heads, op="mul", row_scale=None):
        if row_scale is not None:
            s = row_scale.reshape(-1, 1)
            if grad.dtype != torch.float16:
                return kernel(index, rowwise_scale(grad, s, grad.dtype), lhs, rhs, heads, op)
            acc = accum_dtype(grad.dtype)
            grad_lhs, grad_rhs = kernel(index, rowwise_scale(grad, s, acc), lhs.to(acc), rhs.to(acc), heads, op)
            return grad_lhs.to(lhs.dtype), grad_rhs.to(rhs.dtype)
        mul, dot = _mul_backward_bcasts(grad, heads, op)
        grad_lhs, _, _ = spmm_kernel(index, op, "sum", grad, rhs, mul, lhs.dtype)
        if op == "mul":
            return grad_lhs, sddmm_kernel(index, "dot", grad, lhs, "u", "v", dot, rhs.dtype)
        # u_div_e: -dot / w**2 in the accumulator dtype, rounded once
        acc = accum_dtype(rhs.dtype)
        w = rhs.to(acc)
        t = sddmm_kernel(index, "dot", grad, lhs, "u", "v", dot, acc).reshape(w.shape)
        return grad_lhs, (-t / (w * w)).to(rhs.dtype)

    return kernel


def composed_mul_backward_supports(spmm_supports, sddmm_supports):
    """The ``supports`` predicate of :func:`composed_mul_backward`: both kernels take their call."""
    def supports(index, grad, lhs, rhs, heads, op="mul", row_scale=None):
        if row_scale is not None and grad.dtype == torch.float16:     # run on float32 copies (see above):
            grad, lhs, rhs = (torch.empty((), dtype=torch.float32, device=t.device).expand(t.shape)   # stand-ins
                              for t in (grad, lhs, rhs))                                             # of no memory
        mul, dot = _mul_backward_bcasts(grad, heads, op)
        out = rhs.dtype if op == "mul" else accum_dtype(rhs.dtype)
        return (spmm_supports(index, op, "sum", grad, rhs, mul, lhs.dtype)
                and sddmm_supports(index, "dot", grad, lhs, "u", "v", dot, out))

    return supports


def _mul_backward_bcasts(grad, heads, op="mul"):
    """Layouts of the two composed kernels: ``(H, D) * (H, 1)`` (``/`` for ``op='div'``) and ``(H, D) . (H, D)``."""
    from ._broadcast import infer_bcast

    H = heads
    D = grad.shape[1] // H
    return (infer_bcast(op, (H, D), (H, 1), grad.device), infer_bcast("dot", (H, D), (H, D), grad.device))


# ----------------------------------------------------------------------------------------------- seeded dropout
# The CPU kernel's draw (mpgraph.ops._cpu.dropout) on int64 tensors: element i is kept when
# R(R(low(i) * GAMMA32 + k1) ^ k2) >> 8 >= round(p * 2**24), in 32-bit arithmetic, with (k1, k2) the two words of
# SplitMix64(seed + (high(i) + 1) * GAMMA). Two's-complement int64 products wrap like uint64, so their low 32
# bits are the uint32 products; right shifts are made logical by masking.
_GAMMA, _MIX1, _MIX2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_GAMMA32, _ROUND1, _ROUND2 = 0x9E3779B9, 0x7FEB352D, 0x846CA68B
_MASK32 = 0xFFFFFFFF
_DRAW_BITS = 24
_DROPOUT_CHUNK = 1 << 20


def _i64(u):
    """The int64 with the bits of the uint64 ``u``."""
    return u - (1 << 64) if u >= 1 << 63 else u


def _shr(z, k):
    """Logical right shift of int64 ``z`` by ``k`` bits."""
    return (z >> k) & ((1 << (64 - k)) - 1)


def _round32(z):
    """The kernel's 32-bit mixing round on int64 tensors holding uint32 values."""
    z = z ^ (z >> 16)
    z = (z * _ROUND1) & _MASK32
    z = z ^ (z >> 15)
    z = (z * _ROUND2) & _MASK32
    return z ^ (z >> 16)


def dropout_keep(n, p, seed, device, start=0):
    """Bool mask of flat elements ``start .. start + n - 1``: True where the seeded draw keeps the element."""
    i = torch.arange(start, start + n, dtype=torch.int64, device=device)
    z = (i >> 32) * _i64(_GAMMA) + _i64((int(seed) + _GAMMA) % (1 << 64))   # seed + (high + 1) * GAMMA
    z = (z ^ _shr(z, 30)) * _i64(_MIX1)
    z = (z ^ _shr(z, 27)) * _i64(_MIX2)
    key = z ^ _shr(z, 31)
    z = _round32(((i & _MASK32) * _GAMMA32 + (key & _MASK32)) & _MASK32)
    z = _round32(z ^ _shr(key, 32))
    return (z >> (32 - _DRAW_BITS)) >= int(round(float(p) * (1 << _DRAW_BITS)))


def _apply_seeded_mask(x, p, seed):
    acc = accum_dtype(x.dtype)
    flat = x.reshape(-1)
    out = torch.empty(flat.shape, dtype=x.dtype, device=x.device)
    scale = 1.0 / (1.0 - float(p))
    for start in range(0, flat.numel(), _DROPOUT_CHUNK):          # bounds the int64 temporaries
        part = flat[start:start + _DROPOUT_CHUNK]
        keep = dropout_keep(part.numel(), p, seed, x.device, start)
        out[start:start + part.numel()] = (part.to(acc) * (keep.to(acc) * scale)).to(x.dtype)
    return out.reshape(x.shape)


def dropout(x, p, seed):
    """Seeded dropout: ``(x * keep / (1 - p), None)`` in ``x``'s dtype, computed in float32 (float64)."""
    return _apply_seeded_mask(x, p, seed), None


def dropout_backward(grad, p, seed, saved):
    """The gradient of :func:`dropout`: the same seeded mask and scale applied to ``grad``."""
    return _apply_seeded_mask(grad, p, seed)
