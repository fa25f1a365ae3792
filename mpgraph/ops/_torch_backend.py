"""Fast kernels built from fused PyTorch primitives (any device, any float dtype).

The workhorse is ``embedding_bag`` over the cached CSC structure: with
``offsets = indptr`` and ``indices`` = the source node (or edge ID) of each
in-edge it gathers and reduces in one pass, without the ``(E, F)`` gather that
``index_add_`` needs (about 100x faster than ``index_add_`` on CPU).

* sum/mean: ``embedding_bag(mode='sum')`` on float32 (float64) operands, so
  half inputs accumulate in float32 whatever the device's half kernel does;
  ``u_mul_e``/``u_div_e`` with one weight per edge (or per head) use
  ``per_sample_weights`` and never build messages.
* max/min: ``torch.embedding_bag(mode=max)``, which also returns the winning
  row (``max_indices``); min runs on negated values. Max/min are exact, so they
  run in the storage dtype. Ties go to the first in-edge, i.e. the smallest edge ID.
* sddmm: gathers plus one broadcast op in the storage dtype (correctly rounded,
  same as computing in float32 and rounding); ``dot`` runs over edge chunks in
  float32, so no ``(E, F * K)`` intermediate beyond one chunk exists.
* edge_softmax: per-destination max by ``embedding_bag`` max, ``exp`` and sum in
  float32, one rounding.

Signatures follow the kernel contract in :mod:`mpgraph.ops._dispatch`.
"""

import torch
import torch.nn.functional as nnF

from ..precision import accum_dtype
from ._reference import binary, composed_mul_backward

__all__ = ["spmm", "sddmm", "edge_softmax", "spmm_mul_backward", "dropout", "dropout_backward"]


def _accum(lhs, rhs, out_dtype):
    """Accumulation dtype for operands ``lhs``/``rhs`` (one dtype, either may be None) and ``out_dtype``."""
    operand = lhs.dtype if lhs is not None else rhs.dtype
    return accum_dtype(torch.promote_types(operand, out_dtype))

# Max number of groups (e.g. attention heads) for the per_sample_weights path.
_MAX_WEIGHT_GROUPS = 64
# Elements of one float32 temporary in the chunked dot product.
_DOT_CHUNK_ELEMENTS = 1 << 23
_MODE_MAX = 2  # torch.embedding_bag mode code for 'max'


def _bag_sum(indices, weight, indptr, per_sample_weights=None):
    # [N_dst, F] = sum over each row's slice of indices of weight[indices] (* per_sample_weights)
    return nnF.embedding_bag(indices, weight, indptr, mode="sum", include_last_offset=True,
                             per_sample_weights=per_sample_weights)


def _bag_max(indices, weight, indptr):
    out, _, _, max_indices = torch.embedding_bag(weight, indices, indptr, False, _MODE_MAX, False, None, True)
    return out, max_indices


def _weight_groups(bcast):
    """Number of weight groups G when rhs is one scalar per (edge, group) and lhs needs no broadcast.

    That is ``rhs_shape == out_shape[:k] + (1,) * (n - k)`` and ``lhs_shape == out_shape``;
    returns None when the layout does not fit.
    """
    if bcast.L != bcast.F:
        return None
    out, rhs = bcast.out_shape, bcast.rhs_shape
    k = len(out)
    while k > 0 and rhs[k - 1] == 1:
        k -= 1
    if rhs[:k] != out[:k] or bcast.R > _MAX_WEIGHT_GROUPS:
        return None
    return bcast.R


def _sum_messages(index, op, lhs, rhs, bcast, acc):
    """``(N_dst, F)`` sums in ``acc`` of the messages over in-edges."""
    indptr, src_c, eid_c = index.csc()
    N_src, N_dst, E, F = index.num_src, index.num_dst, index.num_edges, bcast.F
    if op == "copy_lhs":
        return _bag_sum(src_c, lhs.to(acc), indptr)
    if op == "copy_rhs":
        return _bag_sum(eid_c, rhs.to(acc), indptr)
    G = _weight_groups(bcast) if op in ("mul", "div") else None
    if G is not None:
        w = rhs.to(acc)
        if op == "div":
            w = 1.0 / w
        w = w.index_select(0, eid_c)                                    # (E, G) in CSC order
        x = lhs.to(acc)
        if G == 1:
            return _bag_sum(src_c, x, indptr, w.reshape(E))
        inner = F // G
        x = x.reshape(N_src, G, inner).transpose(0, 1).contiguous()     # (G, N_src, inner)
        w = w.t().contiguous()                                          # (G, E)
        out = torch.empty(N_dst, G, inner, dtype=acc, device=x.device)
        for g in range(G):
            out[:, g] = _bag_sum(src_c, x[g], indptr, w[g])
        return out.reshape(N_dst, F)
    # general: messages in acc (edge-ID order), then a bag sum over each row's edge IDs
    a = lhs.to(acc).reshape((N_src,) + bcast.lhs_shape).index_select(0, index.src64)
    b = rhs.to(acc).reshape((E,) + bcast.rhs_shape)
    msg = binary(op, a, b).reshape(E, F)
    return _bag_sum(eid_c, msg, indptr)


def spmm(index, op, reduce, lhs, rhs, bcast, out_dtype, need_arg=True):
    """gSpMM kernel (contract in :mod:`mpgraph.ops._dispatch`); always returns the max/min winners."""
    acc = _accum(lhs, rhs, out_dtype)
    if reduce in ("sum", "mean"):
        out = _sum_messages(index, op, lhs, rhs, bcast, acc)
        if reduce == "mean":
            deg = index.in_degrees().clamp(min=1).to(torch.float32)
            out = out / deg.unsqueeze(1)
        return out.to(out_dtype), None, None

    indptr, src_c, eid_c = index.csc()
    N_src, E = index.num_src, index.num_edges
    sign = 1.0 if reduce == "max" else -1.0
    if op == "copy_lhs":
        x = lhs.to(out_dtype)
        out, arg_u = _bag_max(src_c, x if sign > 0 else -x, indptr)
        arg_e = None
    else:
        if op == "copy_rhs":
            msg = rhs.to(out_dtype)
        else:
            # messages rounded once to out_dtype (computed in the wider of operand and output format)
            cdt = torch.promote_types(lhs.dtype, out_dtype)
            a = lhs.to(cdt).reshape((N_src,) + bcast.lhs_shape).index_select(0, index.src64)
            b = rhs.to(cdt).reshape((E,) + bcast.rhs_shape)
            msg = binary(op, a, b).reshape(E, bcast.F).to(out_dtype)
        out, arg_e = _bag_max(eid_c, msg if sign > 0 else -msg, indptr)
        arg_u = None if lhs is None else index.src64[arg_e]
    if sign < 0:
        out = -out
    empty = (index.in_degrees() == 0).unsqueeze(1)
    out = torch.where(empty, 0.0, out)
    if arg_u is not None:
        arg_u = torch.where(empty, -1, arg_u)
    if arg_e is not None:
        arg_e = torch.where(empty, -1, arg_e)
    return out, arg_u, arg_e


def _row_index(index, target):
    if target == "u":
        return index.src64
    if target == "v":
        return index.dst64
    return None


def _gather(x, rows):
    return x if rows is None else x.index_select(0, rows)


def sddmm(index, op, lhs, rhs, lhs_target, rhs_target, bcast, out_dtype):
    """gSDDMM kernel (contract in :mod:`mpgraph.ops._dispatch`)."""
    E, F = index.num_edges, bcast.F
    if op in ("copy_lhs", "copy_rhs"):
        x, rows = (lhs, _row_index(index, lhs_target)) if op == "copy_lhs" else (rhs, _row_index(index, rhs_target))
        return _gather(x, rows).to(out_dtype, copy=rows is None)     # never alias the input
    rows_l, rows_r = _row_index(index, lhs_target), _row_index(index, rhs_target)
    if op == "dot":
        return _dot(lhs, rhs, rows_l, rows_r, bcast, E, out_dtype)
    # elementwise ops are correctly rounded in a 16-bit storage dtype (same result as float32 and one
    # rounding), so they run in the wider of operand and output format, then round once
    cdt = torch.promote_types(lhs.dtype, out_dtype)
    a = _gather(lhs.to(cdt), rows_l).reshape((E,) + bcast.lhs_shape)
    b = _gather(rhs.to(cdt), rows_r).reshape((E,) + bcast.rhs_shape)
    return binary(op, a, b).reshape(E, F).to(out_dtype)


def _dot(lhs, rhs, rows_l, rows_r, bcast, E, out_dtype):
    """Per-edge dot products over the last dimension, in edge chunks, accumulated in float32/64."""
    acc = _accum(lhs, rhs, out_dtype)
    F, K = bcast.F, bcast.K
    out = torch.empty(E, F, dtype=out_dtype, device=lhs.device)
    chunk = max(1, _DOT_CHUNK_ELEMENTS // max(1, F * K))
    for start in range(0, E, chunk):
        stop = min(E, start + chunk)
        n = stop - start
        a = lhs[start:stop] if rows_l is None else lhs.index_select(0, rows_l[start:stop])
        b = rhs[start:stop] if rows_r is None else rhs.index_select(0, rows_r[start:stop])
        a = a.to(acc).reshape((n,) + bcast.lhs_shape)                   # [chunk, *lhs_body, K]
        b = b.to(acc).reshape((n,) + bcast.rhs_shape)                   # [chunk, *rhs_body, K]
        out[start:stop] = (a * b).sum(dim=-1).reshape(n, F)
    return out


def edge_softmax(index, logits, out_dtype):
    """Edge softmax kernel over in-edges of each destination (contract in :mod:`mpgraph.ops._dispatch`)."""
    acc = torch.promote_types(accum_dtype(out_dtype), accum_dtype(logits.dtype))
    indptr, _, eid_c = index.csc()
    dst = index.dst64
    m, _ = _bag_max(eid_c, logits, indptr)                              # [N_dst, F] exact in storage dtype
    z = torch.exp(logits.to(acc) - m.to(acc).index_select(0, dst))     # [E, F]
    s = _bag_sum(eid_c, z, indptr)                                      # [N_dst, F]
    return z.div_(s.index_select(0, dst)).to(out_dtype)


def edge_softmax_backward(index, out, grad_out, out_dtype):
    """Edge softmax gradient kernel (contract in :mod:`mpgraph.ops._dispatch`)."""
    acc = torch.promote_types(accum_dtype(out_dtype), accum_dtype(out.dtype))
    indptr, _, eid_c = index.csc()
    dst = index.dst64
    y = out.to(acc)                                                     # may be ``out`` itself: no in-place
    gy = grad_out.to(acc) * y                                           # [E, F], new
    s = _bag_sum(eid_c, gy, indptr)                                     # [N_dst, F]
    return gy.sub_(y * s.index_select(0, dst)).to(out_dtype)


#: ``spmm_mul_backward`` here is this backend's gSpMM and gSDDMM, one after the other
spmm_mul_backward = composed_mul_backward(spmm, sddmm)


def dropout(x, p, seed):
    """``torch.native_dropout`` (torch's generator, not ``seed``): ``(y, mask)``."""
    y, mask = torch.native_dropout(x, float(p), True)
    return y, mask


def dropout_backward(grad, p, seed, mask):
    """The gradient of :func:`dropout` through its saved mask."""
    return torch.ops.aten.native_dropout_backward(grad, mask, 1.0 / (1.0 - float(p)))


#: values per block of :func:`row_scale`: 2**20 (4 MiB of float32 scratch)
ROW_CHUNK = 1 << 20


def row_scale(x, s, out_dtype, divide):
    """Rows scaled by one factor each (:func:`._dispatch.row_scale`'s route without Numba). On the CPU, torch
    computes a 16-bit tensor times a float32 one element by element through a generic converting path (measured
    ~10x slower than this for N=100k x 128 bf16), so the rows go through one reused scratch block in the wider
    dtype: a copy, the product in place and a rounding copy per block, the same values bit for bit. The result
    and the scratch come from the CPU kernels' buffer cache when 1 MiB or more (:func:`mpgraph.ops.cpu_cache_info`).
    Off the CPU, with one dtype throughout, a 0-d ``x`` or no rows, this is ``torch.mul(x, s, out=...)`` itself
    (into a cached result on the CPU)."""
    from ._cpu._buffers import cached_empty

    op = torch.div if divide else torch.mul
    cpu = x.device.type == "cpu"
    out = cached_empty(x.shape, out_dtype) if cpu else None   # large: reused pages
    if out is None:
        out = torch.empty(x.shape, dtype=out_dtype, device=x.device)
    if not cpu or x.dtype == s.dtype == out_dtype or x.dim() == 0 or x.shape[0] == 0:
        return op(x, s, out=out)
    wide = torch.promote_types(x.dtype, s.dtype)
    rows = max(1, ROW_CHUNK // max(1, x[0].numel()))
    chunk = (min(rows, x.shape[0]),) + tuple(x.shape[1:])
    # the scratch (4 MiB at most) from the cache too: the C library re-faulted it on up to every call, 1,024
    # faults that cost 3-10 ms in a mean backward whose scaling otherwise takes 1.4 ms (bf16, 100k x 64)
    scratch = cached_empty(chunk, wide)
    if scratch is None:
        scratch = torch.empty(chunk, dtype=wide, device=x.device)
    for i in range(0, x.shape[0], rows):
        j = min(x.shape[0], i + rows)
        t = scratch[: j - i]
        t.copy_(x[i:j])
        op(t, s[i:j], out=t)
        out[i:j].copy_(t)
    return out
