"""Generalized SDDMM (gSDDMM) in Triton: one value per edge from its endpoints' and its own features.

.. math::

    \\text{out}[k] = \\text{op}(\\text{lhs}[t_l(k)], \\text{rhs}[t_r(k)]), \\qquad k = (u \\to v)

with targets ``t`` in ``u`` (source node), ``v`` (destination node), ``e`` (the edge) and ``op`` one
of ``add, sub, mul, div, dot, copy_lhs, copy_rhs``. Edge-parallel (no load-balance issue: every
program handles BLOCK_E edges). Computed in fp32 (fp64 for fp64), ``dot`` accumulated in fp32 over
the last dimension, rounded once on store.

Public entry point: :func:`gsddmm`.
"""

import torch
import triton
import triton.language as tl

from ._common import (
    INTERPRET,
    acc_type,
    autotuned,
    block_size,
    check_device,
    check_float,
    div,
    feature_layout,
    launch,
    promote,
    to_out,
)

#: Edges per program under the interpreter (edge-parallel kernels need no small blocks to cover tails).
_INTERPRET_META = {"BLOCK_E": 16}
#: Most features per step of the dot loop.
_MAX_BLOCK_D = 8 if INTERPRET else 64
#: Most features per program of the elementwise kernel.
_MAX_BLOCK_F = 8 if INTERPRET else 64

__all__ = ["gsddmm", "OPS", "TARGETS"]

#: Operation name -> kernel code.
OPS = {"add": 0, "sub": 1, "mul": 2, "div": 3, "copy_lhs": 4, "copy_rhs": 5, "dot": 6}
#: Target name -> kernel code ("src"/"dst"/"edge" are accepted as aliases).
TARGETS = {"u": 0, "e": 1, "v": 2, "src": 0, "edge": 1, "dst": 2}

_COPY_LHS = 4
_COPY_RHS = 5
_DOT = 6


@triton.jit
def _rows(src, dst, k, kmask, TARGET: tl.constexpr):
    """Row of the operand read by edges ``k`` ([BLOCK_E]): src[k], k itself, or dst[k]."""
    if TARGET == 0:
        r = tl.load(src + k, mask=kmask, other=0).to(tl.int64)
    elif TARGET == 1:
        r = k
    else:
        r = tl.load(dst + k, mask=kmask, other=0).to(tl.int64)
    return r


@triton.jit
def _sddmm_kernel(
    LHS, RHS, OUT, src, dst, E, F, D,
    l_sN, l_sH, l_sD, r_sN, r_sH, r_sD,
    OP: tl.constexpr, LHS_T: tl.constexpr, RHS_T: tl.constexpr, ACC: tl.constexpr,
    BLOCK_E: tl.constexpr, BLOCK_F: tl.constexpr,
):
    """Elementwise ops. Grid: (cdiv(E, BLOCK_E), cdiv(F, BLOCK_F)); OUT is (E, F) contiguous."""
    k = tl.program_id(0).to(tl.int64) * BLOCK_E + tl.arange(0, BLOCK_E)   # [BLOCK_E]
    kmask = k < E
    f = tl.program_id(1) * BLOCK_F + tl.arange(0, BLOCK_F)                 # [BLOCK_F]
    fmask = f < F
    m2 = kmask[:, None] & fmask[None, :]                                   # [BLOCK_E, BLOCK_F]
    fh = f // D
    fd = f % D
    if OP != 5:
        li = _rows(src, dst, k, kmask, LHS_T)
        x = tl.load(LHS + li[:, None] * l_sN + (fh * l_sH + fd * l_sD)[None, :], mask=m2, other=0.0).to(ACC)
    if OP != 4:
        ri = _rows(src, dst, k, kmask, RHS_T)
        y = tl.load(RHS + ri[:, None] * r_sN + (fh * r_sH + fd * r_sD)[None, :], mask=m2, other=1.0).to(ACC)
    if OP == 0:
        res = x + y
    elif OP == 1:
        res = x - y
    elif OP == 2:
        res = x * y
    elif OP == 3:
        res = div(x, y, ACC)
    elif OP == 4:
        res = x
    else:
        res = y
    tl.store(OUT + k[:, None] * F + f[None, :], to_out(res, OUT), mask=m2)


@triton.jit
def _sddmm_dot_kernel(
    LHS, RHS, OUT, src, dst, E, H, D,
    l_sN, l_sH, l_sD, r_sN, r_sH, r_sD,
    LHS_T: tl.constexpr, RHS_T: tl.constexpr, ACC: tl.constexpr,
    BLOCK_E: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """Dot over the last dim. Grid: (cdiv(E, BLOCK_E), H); OUT is (E, H) contiguous."""
    k = tl.program_id(0).to(tl.int64) * BLOCK_E + tl.arange(0, BLOCK_E)   # [BLOCK_E]
    kmask = k < E
    h = tl.program_id(1)
    li = _rows(src, dst, k, kmask, LHS_T)
    ri = _rows(src, dst, k, kmask, RHS_T)
    l_base = li * l_sN + h * l_sH                                           # [BLOCK_E]
    r_base = ri * r_sN + h * r_sH
    acc = tl.zeros([BLOCK_E], dtype=ACC)
    for d0 in range(0, D, BLOCK_D):
        d = d0 + tl.arange(0, BLOCK_D)                                      # [BLOCK_D]
        m2 = kmask[:, None] & (d < D)[None, :]                              # [BLOCK_E, BLOCK_D]
        x = tl.load(LHS + l_base[:, None] + (d * l_sD)[None, :], mask=m2, other=0.0).to(ACC)
        y = tl.load(RHS + r_base[:, None] + (d * r_sD)[None, :], mask=m2, other=0.0).to(ACC)
        acc += tl.sum(x * y, axis=1)
    tl.store(OUT + k * H + h, to_out(acc, OUT), mask=kmask)


# Tiles of at most 32 elements per thread (ptxas, sm_90: <= ~100 registers, no spills); long edge blocks
# only for narrow features (e.g. GAT's el + er, F = H).
_sddmm_tuned = autotuned(_sddmm_kernel, [  # the first is the default when autotuning is off
    triton.Config({"BLOCK_E": 64}, num_warps=8),
    triton.Config({"BLOCK_E": 32}, num_warps=4),
    triton.Config({"BLOCK_E": 128}, num_warps=8),
    triton.Config({"BLOCK_E": 256}, num_warps=4),
    triton.Config({"BLOCK_E": 512}, num_warps=4),
], key=["F", "D", "OP"], width="BLOCK_F", max_per_thread=32)
_sddmm_dot_tuned = autotuned(_sddmm_dot_kernel, [
    triton.Config({"BLOCK_E": 32}, num_warps=4),
    triton.Config({"BLOCK_E": 64}, num_warps=4),
    triton.Config({"BLOCK_E": 128}, num_warps=8),
    triton.Config({"BLOCK_E": 256}, num_warps=4),
], key=["H", "D"], width="BLOCK_D", max_per_thread=32)


def gsddmm(op, lhs, rhs, src, dst, lhs_target="u", rhs_target="v", *, out_dtype=None):
    """Generalized sampled dense-dense matrix multiplication over edges (COO), Triton backend.

    .. math::

        \\text{out}[k] = \\text{op}(\\text{lhs}[t_l(k)], \\text{rhs}[t_r(k)])

    Parameters
    ----------
    op : str
        ``"add"``, ``"sub"``, ``"mul"``, ``"div"``, ``"dot"``, ``"copy_lhs"`` or ``"copy_rhs"``.
    lhs, rhs : Tensor or None
        Operands ``(R, *f)``, float16/bfloat16/float32/float64, with ``R`` the number of source nodes,
        edges or destination nodes for target ``"u"``, ``"e"``, ``"v"``. The unused one of a copy may be
        ``None``. Feature shapes broadcast with numpy rules (aligned right).
    src, dst : Tensor
        ``(E,)`` int64/int32 endpoints of each edge, in edge-ID order (``Index.src64``/``Index.dst64``).
    lhs_target, rhs_target : str, default ``"u"``, ``"v"``
        ``"u"``/``"src"``, ``"e"``/``"edge"`` or ``"v"``/``"dst"``.
    out_dtype : torch.dtype, optional
        Defaults to ``torch.promote_types`` of the operands used.

    Returns
    -------
    Tensor
        ``(E, *broadcast(fl, fr))`` for elementwise ops; for ``dot``,
        ``(E, *broadcast(fl[:-1], fr[:-1]), 1)`` (the last dims must broadcast; the dot runs over it,
        accumulated in fp32).

    Raises
    ------
    ValueError
        Unknown op/target, missing operand, mismatched devices.
    TypeError
        Non-float operands.

    Notes
    -----
    Broadcast patterns that need more than two stride groups after merging dims (more than one, besides
    the last dim, for ``dot``) run on operands materialised at the full broadcast shape.
    """
    if op not in OPS:
        raise ValueError(f"expected op in {sorted(OPS)}, got {op!r}")
    for name, t in (("lhs_target", lhs_target), ("rhs_target", rhs_target)):
        if t not in TARGETS:
            raise ValueError(f"expected {name} in {sorted(TARGETS)}, got {t!r}")
    code = OPS[op]
    if code == _COPY_RHS:
        lhs = None
    if code == _COPY_LHS:
        rhs = None
    for name, x, needed in (("lhs", lhs, code != _COPY_RHS), ("rhs", rhs, code != _COPY_LHS)):
        if needed:
            check_float(name, x)
            if x.dim() < 1:
                raise ValueError(f"expected {name} of shape (R, ...), got {tuple(x.shape)}")
    if src is None or dst is None or src.shape != dst.shape or src.dim() != 1:
        raise ValueError("expected src and dst of shape (E,), got "
                         f"{None if src is None else tuple(src.shape)} and {None if dst is None else tuple(dst.shape)}")
    check_device(lhs, rhs, src, dst)
    E = src.numel()
    device = src.device
    if out_dtype is None:
        dts = [x.dtype for x in (lhs, rhs) if x is not None]
        out_dtype = dts[0] if len(dts) == 1 else torch.promote_types(*dts)
    fl = tuple(lhs.shape[1:]) if lhs is not None else ()
    fr = tuple(rhs.shape[1:]) if rhs is not None else ()
    lt, rt = TARGETS[lhs_target], TARGETS[rhs_target]
    acc = acc_type(promote(out_dtype, lhs, rhs))

    if code == _DOT:
        if len(fl) < 1 or len(fr) < 1:
            raise ValueError(f"dot needs a last (reduced) dim on both operands, got {fl} and {fr}")
        lead = torch.broadcast_shapes(fl[:-1], fr[:-1])
        D = torch.broadcast_shapes(fl[-1:], fr[-1:])[0]
        out = torch.empty((E,) + tuple(lead) + (1,), dtype=out_dtype, device=device)
        if E == 0 or out.numel() == 0:
            return out
        if D == 0:
            return out.zero_()
        # operands as (R, *lead, D): lead dims coalesce to one group H, the reduced dim stays D
        (H, _), (lv, rv), (ls, rs) = feature_layout([lhs, rhs], tuple(lead) + (D,), keep_last=True)
        launch(_sddmm_dot_kernel, _sddmm_dot_tuned,
               lambda meta: (triton.cdiv(E, meta["BLOCK_E"]), H),
               (lv, rv, out, src, dst, E, H, D, ls[0], ls[1], ls[2], rs[0], rs[1], rs[2]),
               dict(LHS_T=lt, RHS_T=rt, ACC=acc, BLOCK_D=block_size(D, max_block=_MAX_BLOCK_D)), _INTERPRET_META)
        return out

    shape = torch.broadcast_shapes(fl, fr)
    out = torch.empty((E,) + tuple(shape), dtype=out_dtype, device=device)
    if out.numel() == 0:
        return out
    (H, D), (lv, rv), (ls, rs) = feature_layout([lhs, rhs], shape)
    F = H * D
    ls = ls or (0, 0, 0)
    rs = rs or (0, 0, 0)
    some = lv if lv is not None else rv
    lv = some if lv is None else lv
    rv = some if rv is None else rv
    BLOCK_F = block_size(F, max_block=_MAX_BLOCK_F)
    launch(_sddmm_kernel, _sddmm_tuned,
           lambda meta: (triton.cdiv(E, meta["BLOCK_E"]), triton.cdiv(F, BLOCK_F)),
           (lv, rv, out, src, dst, E, F, D, ls[0], ls[1], ls[2], rs[0], rs[1], rs[2]),
           dict(OP=code, LHS_T=lt, RHS_T=rt, ACC=acc, BLOCK_F=BLOCK_F), _INTERPRET_META)
    return out
