"""Generalized SpMM (gSpMM) in Triton: reduce edge messages onto destination nodes.

.. math::

    \\text{out}[v] = \\bigoplus_{k = (u \\to v)} \\text{msg}(x_u[u], x_e[k])

with ``msg`` one of ``copy_u, copy_e, u_add_e, u_sub_e, u_mul_e, u_div_e`` and ``⊕`` one of
``sum, mean, max, min``. Messages and reductions are computed in fp32 (fp64 for fp64 inputs)
and rounded once on store. Work is split per :class:`~._common.RowSchedule` (long rows over
several programs, combined by a second kernel), see :mod:`._common`.

Public entry point: :func:`gspmm`.
"""

import torch
import triton
import triton.language as tl

from ._common import (
    INTERPRET,
    acc_type,
    autotuned,
    block_size,
    div,
    check_device,
    check_float,
    dummy,
    feature_layout,
    get_schedule,
    launch,
    promote,
    to_out,
)
from ._common import DEFAULT_SPLIT as DEFAULT_SPLIT

__all__ = ["gspmm", "MESSAGES", "REDUCES", "DEFAULT_SPLIT"]

#: Most features per program (more tile over the grid's second axis); small under the interpreter so that
#: tests cover several feature blocks.
MAX_BLOCK_F = 8 if INTERPRET else 64

#: Message name -> kernel code. ``u`` is the source-node operand, ``e`` the edge operand.
MESSAGES = {"copy_u": 0, "copy_e": 1, "u_add_e": 2, "u_sub_e": 3, "u_mul_e": 4, "u_div_e": 5}
#: Reduction name -> kernel code.
REDUCES = {"sum": 0, "mean": 1, "max": 2, "min": 3}

_COPY_U = 0
_COPY_E = 1


@triton.jit
def _gather(PTR, rows, kmask, col, fmask, f0, sN, sH, F,
            MODE: tl.constexpr, D: tl.constexpr, ACC: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_F: tl.constexpr):
    """Rows ``rows`` ([BLOCK_E]) of an operand on features ``f0 + arange(BLOCK_F)`` -> [BLOCK_E, BLOCK_F] in ACC.

    ``MODE`` (see :func:`_operand_mode`) says how the operand varies over the features: 0 element by element
    (offsets ``col``); 1 not at all (one value per row, loaded once and broadcast); 2 per head only (one value
    per row and head ``f // D``, stride ``sH``; loaded once per head and repeated ``D`` times). Modes 1 and 2
    issue one load per row (per head) instead of one per feature: a broadcast operand loaded element by element
    costs a load instruction per element, all to the same address (measured on an H200: a scalar edge weight
    made ``u_mul_e`` sum 2-4x slower than ``copy_u`` sum).
    """
    if MODE == 0:
        x = tl.load(PTR + rows[:, None] * sN + col[None, :], mask=kmask[:, None] & fmask[None, :],
                    other=0.0).to(ACC)
    elif MODE == 1:
        x1 = tl.load(PTR + rows * sN, mask=kmask, other=0.0).to(ACC)                       # [BLOCK_E]
        x = tl.broadcast_to(x1[:, None], (BLOCK_E, BLOCK_F))
    else:
        h = f0 // D + tl.arange(0, BLOCK_F // D)                                            # [BLOCK_F // D]
        xh = tl.load(PTR + rows[:, None] * sN + h[None, :] * sH, mask=kmask[:, None] & (h * D < F)[None, :],
                     other=0.0).to(ACC)                                                     # [BLOCK_E, heads]
        x = tl.reshape(tl.broadcast_to(xh[:, :, None], (BLOCK_E, BLOCK_F // D, D)), (BLOCK_E, BLOCK_F))
    return x


@triton.jit
def _message(U, EF, src, eid, k, kmask, u_col, e_col, fmask, f0, u_sN, u_sH, e_sN, e_sH, F,
             MSG: tl.constexpr, HAS_EID: tl.constexpr, ACC: tl.constexpr, U_MODE: tl.constexpr,
             E_MODE: tl.constexpr, D: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_F: tl.constexpr):
    """Messages of edge positions ``k`` ([BLOCK_E]) on features ``f`` ([BLOCK_F]) -> [BLOCK_E, BLOCK_F] in ACC."""
    m2 = kmask[:, None] & fmask[None, :]                              # [BLOCK_E, BLOCK_F]
    if MSG != 1:
        s = tl.load(src + k, mask=kmask, other=0).to(tl.int64)        # [BLOCK_E]
        xu = _gather(U, s, kmask, u_col, fmask, f0, u_sN, u_sH, F, U_MODE, D, ACC, BLOCK_E, BLOCK_F)
    if MSG != 0:
        if HAS_EID:
            ei = tl.load(eid + k, mask=kmask, other=0).to(tl.int64)   # [BLOCK_E]
        else:
            ei = k
        xe = _gather(EF, ei, kmask, e_col, fmask, f0, e_sN, e_sH, F, E_MODE, D, ACC, BLOCK_E, BLOCK_F)
    if MSG == 0:
        msg = xu
    elif MSG == 1:
        msg = xe
    elif MSG == 2:
        msg = xu + xe
    elif MSG == 3:
        msg = xu - xe
    elif MSG == 4:
        msg = xu * xe
    else:
        msg = tl.where(m2, div(xu, tl.where(m2, xe, 1.0), ACC), 0.0)
    return msg


@triton.jit
def _store_row(OUT, ARG_U, ARG_E, src, eid, row, deg, acc, pos, f, fmask, F,
               MSG: tl.constexpr, REDUCE: tl.constexpr, HAS_EID: tl.constexpr, WANT_ARG: tl.constexpr,
               ACC: tl.constexpr):
    """Finish row ``row`` (``deg`` edges) from its accumulator ``acc`` and best edge position ``pos``."""
    if REDUCE == 0:
        val = acc
    elif REDUCE == 1:
        val = div(acc, tl.maximum(deg, 1).to(acc.dtype), ACC)
    else:
        if REDUCE == 3:
            acc = -acc                                                # min was computed as max of -msg
        val = tl.where(deg > 0, acc, 0.0)
    tl.store(OUT + row * F + f, to_out(val, OUT), mask=fmask)
    if REDUCE >= 2:
        if WANT_ARG:
            has = fmask & (pos >= 0)
            if MSG != 1:
                arg_u = tl.load(src + pos, mask=has, other=-1).to(tl.int64)
                tl.store(ARG_U + row * F + f, arg_u, mask=fmask)
            if MSG != 0:
                if HAS_EID:
                    arg_e = tl.load(eid + pos, mask=has, other=-1).to(tl.int64)
                else:
                    arg_e = tl.where(has, pos, -1)
                tl.store(ARG_E + row * F + f, arg_e, mask=fmask)


@triton.jit
def _spmm_chunk_kernel(
    U, EF, OUT, ARG_U, ARG_E, PART, PART_POS,
    chunk_row, chunk_start, chunk_end, chunk_slot, src, eid,
    F, D: tl.constexpr, u_sN, u_sH, u_sD, e_sN, e_sH, e_sD,
    MSG: tl.constexpr, REDUCE: tl.constexpr, HAS_EID: tl.constexpr, WANT_ARG: tl.constexpr,
    ACC: tl.constexpr, U_MODE: tl.constexpr, E_MODE: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_F: tl.constexpr,
):
    """One program = one chunk of one row x one block of BLOCK_F features (grid: (C, cdiv(F, BLOCK_F)))."""
    c = tl.program_id(0)
    row = tl.load(chunk_row + c)
    start = tl.load(chunk_start + c)
    end = tl.load(chunk_end + c)
    slot = tl.load(chunk_slot + c)
    f0 = tl.program_id(1) * BLOCK_F
    f = f0 + tl.arange(0, BLOCK_F)                                    # [BLOCK_F]
    fmask = f < F
    fh = f // D
    fd = f % D
    u_col = fh * u_sH + fd * u_sD                                     # [BLOCK_F]
    e_col = fh * e_sH + fd * e_sD
    if REDUCE < 2:
        acc = tl.zeros([BLOCK_F], dtype=ACC)
    else:
        acc = tl.full([BLOCK_F], float("-inf"), dtype=ACC)
    pos = tl.full([BLOCK_F], -1, dtype=tl.int64)                      # best edge position (max/min)
    local = tl.arange(0, BLOCK_E)                                     # [BLOCK_E] int32
    for k0 in range(start, end, BLOCK_E):
        k = k0 + local                                                # [BLOCK_E] int64
        kmask = k < end
        msg = _message(U, EF, src, eid, k, kmask, u_col, e_col, fmask, f0, u_sN, u_sH, e_sN, e_sH, F,
                       MSG, HAS_EID, ACC, U_MODE, E_MODE, D, BLOCK_E, BLOCK_F)   # [BLOCK_E, BLOCK_F]
        if REDUCE < 2:
            acc += tl.sum(msg, axis=0)
        else:
            # compare messages as stored (rounded to OUT's format), so ties after rounding go to the
            # first edge, as in the other backends (a no-op when OUT is in the accumulator's format)
            msg = to_out(msg, OUT).to(ACC)
            if REDUCE == 3:
                msg = -msg
            msg = tl.where(kmask[:, None], msg, float("-inf"))
            best = tl.max(msg, axis=0)                                # [BLOCK_F]
            # first edge of the tile reaching it (int32 tile index; masked lanes only tie at -inf,
            # which never replaces acc)
            first = tl.min(tl.where(msg == best[None, :], local[:, None], BLOCK_E), axis=0)
            better = best > acc
            acc = tl.where(better, best, acc)
            pos = tl.where(better, k0 + first, pos)
    if slot < 0:
        _store_row(OUT, ARG_U, ARG_E, src, eid, row, end - start, acc, pos, f, fmask, F,
                   MSG, REDUCE, HAS_EID, WANT_ARG, ACC)
    else:
        tl.store(PART + slot * F + f, acc, mask=fmask)
        if REDUCE >= 2:
            if WANT_ARG:
                tl.store(PART_POS + slot * F + f, pos, mask=fmask)


@triton.jit
def _spmm_combine_kernel(
    OUT, ARG_U, ARG_E, PART, PART_POS, long_row, long_ptr, indptr, src, eid, F,
    MSG: tl.constexpr, REDUCE: tl.constexpr, HAS_EID: tl.constexpr, WANT_ARG: tl.constexpr,
    ACC: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_F: tl.constexpr,
):
    """One program = one long row x BLOCK_F features: combine its slots (grid: (L, cdiv(F, BLOCK_F)))."""
    lr = tl.program_id(0)
    row = tl.load(long_row + lr)
    p0 = tl.load(long_ptr + lr)
    p1 = tl.load(long_ptr + lr + 1)
    deg = tl.load(indptr + row + 1) - tl.load(indptr + row)
    f = tl.program_id(1) * BLOCK_F + tl.arange(0, BLOCK_F)             # [BLOCK_F]
    fmask = f < F
    if REDUCE < 2:
        acc = tl.zeros([BLOCK_F], dtype=ACC)
    else:
        acc = tl.full([BLOCK_F], float("-inf"), dtype=ACC)
    pos = tl.full([BLOCK_F], -1, dtype=tl.int64)
    for q0 in range(p0, p1, BLOCK_P):
        q = q0 + tl.arange(0, BLOCK_P)                                # [BLOCK_P]
        m2 = (q < p1)[:, None] & fmask[None, :]                       # [BLOCK_P, BLOCK_F]
        if REDUCE < 2:
            acc += tl.sum(tl.load(PART + q[:, None] * F + f[None, :], mask=m2, other=0.0), axis=0)
        else:
            x = tl.load(PART + q[:, None] * F + f[None, :], mask=m2, other=float("-inf"))
            best = tl.max(x, axis=0)
            better = best > acc
            acc = tl.where(better, best, acc)
            if WANT_ARG:
                pp = tl.load(PART_POS + q[:, None] * F + f[None, :], mask=m2, other=-1)
                # slots are in edge order, so the smallest position among tied slots is the row's first
                first = tl.min(tl.where(m2 & (x == best[None, :]) & (pp >= 0), pp, 1 << 62), axis=0)
                pos = tl.where(better, first, pos)
    _store_row(OUT, ARG_U, ARG_E, src, eid, row, deg, acc, pos, f, fmask, F,
               MSG, REDUCE, HAS_EID, WANT_ARG, ACC)


# One program walks one row chunk (a mean of 20 edges on the benchmark graph), so small programs win: on an H200
# (fp32/bf16/fp16, D=64, 10M edges; benchmarks/results/triton_configs_h200_s27.jsonl) one warp with 16-32 edges
# per tile beat every config of 2-8 warps: bf16 copy_u sum 0.38 ms against 0.79 ms with the (16 edges, 2 warps)
# the autotuner had picked, fp32 0.54 against 0.62. Up to 64 elements per thread (BLOCK_E * BLOCK_F / (32 *
# num_warps); BLOCK_F <= 64): loads are vectorised along the features, so a thread holds one address per vector.
# Larger BLOCK_E for narrow features.
_CHUNK_CONFIGS = [  # the first is the default when autotuning is off
    triton.Config({"BLOCK_E": 16}, num_warps=1),
    triton.Config({"BLOCK_E": 32}, num_warps=1),
    triton.Config({"BLOCK_E": 8}, num_warps=2),
    triton.Config({"BLOCK_E": 16}, num_warps=2),
    triton.Config({"BLOCK_E": 32}, num_warps=4),
    triton.Config({"BLOCK_E": 64}, num_warps=1),
    triton.Config({"BLOCK_E": 128}, num_warps=4),
]
_spmm_chunk_tuned = autotuned(_spmm_chunk_kernel, _CHUNK_CONFIGS,
                              key=["F", "D", "MSG", "REDUCE", "WANT_ARG", "U_MODE", "E_MODE"], width="BLOCK_F",
                              max_per_thread=64)
_spmm_combine_tuned = autotuned(_spmm_combine_kernel, [triton.Config({"BLOCK_P": 16}, num_warps=4)], key=["F"])


def _operand_mode(strides, H, D, block_f):
    """How an operand with element strides ``(s_row, s_H, s_D)`` varies over the ``(H, D)`` features: 0 element
    by element, 1 not at all (one value per row: a scalar edge weight), 2 per head only (``(E, H, 1)`` GAT
    attention; needs ``D`` to divide the feature block, so that a block holds whole heads)."""
    _, s_h, s_d = strides
    if s_d != 0 and D > 1:
        return 0
    if s_h == 0 or H == 1:
        return 1
    if D == 1:
        return 0
    return 2 if D <= block_f and block_f % D == 0 else 0


def _run_spmm(msg_code, reduce_code, u, e, out_shape, indptr, src, eid, schedule, need_arg,
              out_dtype):
    """Shared launcher of gSpMM and segment reductions (``eid=None``: edge operand indexed by CSC position)."""
    device = indptr.device
    N_dst = indptr.numel() - 1
    F = 1
    for n in out_shape:
        F *= n
    out = torch.empty((N_dst,) + tuple(out_shape), dtype=out_dtype, device=device)
    want_arg = need_arg and reduce_code >= 2
    arg_u = arg_e = None
    if want_arg and msg_code != _COPY_E:
        arg_u = torch.empty(out.shape, dtype=torch.int64, device=device)   # every row is written
    if want_arg and msg_code != _COPY_U:
        arg_e = torch.empty(out.shape, dtype=torch.int64, device=device)
    if N_dst == 0 or F == 0:
        return out, arg_u, arg_e
    (H, D), (u_v, e_v), (u_st, e_st) = feature_layout([u, e], out_shape)
    u_st = u_st or (0, 0, 0)
    e_st = e_st or (0, 0, 0)
    some = u_v if u_v is not None else e_v
    u_v = some if u_v is None else u_v
    e_v = some if e_v is None else e_v
    acc = acc_type(promote(out_dtype, u, e))
    part_dtype = torch.float64 if acc == tl.float64 else torch.float32
    part = torch.empty((max(schedule.num_slots, 1), F), dtype=part_dtype, device=device)
    part_pos = torch.empty((max(schedule.num_slots, 1), F), dtype=torch.int64, device=device) if want_arg \
        else dummy(device)
    src_ = src if src is not None else dummy(device)
    eid_ = eid if eid is not None else dummy(device)
    arg_u_ = arg_u if arg_u is not None else dummy(device)
    arg_e_ = arg_e if arg_e is not None else dummy(device)
    BLOCK_F = block_size(F, max_block=MAX_BLOCK_F)
    n_fblocks = triton.cdiv(F, BLOCK_F)
    flags = dict(MSG=msg_code, REDUCE=reduce_code, HAS_EID=eid is not None, WANT_ARG=want_arg, ACC=acc,
                 BLOCK_F=BLOCK_F)
    launch(_spmm_chunk_kernel, _spmm_chunk_tuned, (schedule.num_chunks, n_fblocks),
           (u_v, e_v, out, arg_u_, arg_e_, part, part_pos,
            schedule.chunk_row, schedule.chunk_start, schedule.chunk_end, schedule.chunk_slot, src_, eid_,
            F, D, u_st[0], u_st[1], u_st[2], e_st[0], e_st[1], e_st[2]),
           dict(flags, U_MODE=_operand_mode(u_st, H, D, BLOCK_F), E_MODE=_operand_mode(e_st, H, D, BLOCK_F)))
    if schedule.num_long:     # the combine kernel loads no operands: no modes
        launch(_spmm_combine_kernel, _spmm_combine_tuned, (schedule.num_long, n_fblocks),
               (out, arg_u_, arg_e_, part, part_pos, schedule.long_row, schedule.long_ptr, indptr, src_, eid_, F),
               flags)
    return out, arg_u, arg_e


def gspmm(msg, reduce, u, e, indptr, src, eid, *, schedule=None, split=DEFAULT_SPLIT, need_arg=True,
          out_dtype=None):
    """Generalized sparse-dense matrix multiplication over in-edges (CSC), Triton backend.

    .. math::

        \\text{out}[v] = \\bigoplus_{k = (u \\to v)} \\text{msg}(u[u], e[k])

    Parameters
    ----------
    msg : str
        ``"copy_u"``, ``"copy_e"``, ``"u_add_e"``, ``"u_sub_e"``, ``"u_mul_e"`` or ``"u_div_e"``.
    reduce : str
        ``"sum"``, ``"mean"``, ``"max"`` or ``"min"``.
    u : Tensor or None
        Source-node features ``(N_src, *fu)``, float16/bfloat16/float32/float64; ``None`` for ``copy_e``.
    e : Tensor or None
        Edge features ``(E, *fe)`` in edge-ID order; ``None`` for ``copy_u``. ``fu`` and ``fe`` broadcast
        with numpy rules (aligned right), e.g. ``u (N, H, D)`` with ``e (E, H, 1)`` (GAT), or
        ``u (N, D)`` with a scalar per edge ``e (E,)``. Patterns needing more than two stride groups after
        merging dims run on operands materialised at the full broadcast shape.
    indptr : Tensor
        ``(N_dst + 1,)`` int64 (or int32), in-edge row pointer (``Index.csc()[0]``).
    src : Tensor or None
        ``(E,)`` int64/int32, source of each CSC position (``Index.csc()[1]``); unused by ``copy_e``.
    eid : Tensor or None
        ``(E,)`` int64/int32, edge ID of each CSC position (``Index.csc()[2]``); ``None`` means position
        ``k`` is edge ``k``.
    schedule : RowSchedule, optional
        ``row_schedule(indptr, split)``; built (a few host syncs) when omitted. Cache it per graph.
    split : int, default 256
        Chunk length when ``schedule`` is omitted.
    need_arg : bool, default True
        Compute ``arg_u``/``arg_e`` for ``max``/``min``.
    out_dtype : torch.dtype, optional
        Defaults to ``torch.promote_types`` of the operands.

    Returns
    -------
    out : Tensor
        ``(N_dst, *broadcast(fu, fe))`` in ``out_dtype``. Rows without in-edges are 0.
    arg_u, arg_e : Tensor or None
        For ``max``/``min`` with ``need_arg``: int64 of ``out``'s shape, the source node (``arg_u``, for
        messages that read ``u``) and edge ID (``arg_e``, for messages that read ``e``) of the winning edge,
        the first in CSC (= edge-ID) order among ties; -1 for rows without in-edges. Otherwise ``None``.

    Raises
    ------
    ValueError
        Unknown ``msg``/``reduce``, missing operand, mismatched devices or row counts.
    TypeError
        Non-float features.
    """
    if msg not in MESSAGES:
        raise ValueError(f"expected msg in {sorted(MESSAGES)}, got {msg!r}")
    if reduce not in REDUCES:
        raise ValueError(f"expected reduce in {sorted(REDUCES)}, got {reduce!r}")
    msg_code = MESSAGES[msg]
    uses_u = msg_code != _COPY_E
    uses_e = msg_code != _COPY_U
    u = u if uses_u else None
    e = e if uses_e else None
    if uses_u:
        check_float("u", u)
        if u.dim() < 1:
            raise ValueError(f"expected u of shape (N_src, ...), got {tuple(u.shape)}")
        if src is None:
            raise ValueError(f"msg {msg!r} reads u, so src is required")
    if uses_e:
        check_float("e", e)
        if e.dim() < 1:
            raise ValueError(f"expected e of shape (E, ...), got {tuple(e.shape)}")
    check_device(u, e, indptr, src, eid)
    E = src.numel() if src is not None else (eid.numel() if eid is not None else e.shape[0])
    if uses_e and e.shape[0] != E:
        raise ValueError(f"expected e with {E} rows (one per edge), got {e.shape[0]}")
    fu = tuple(u.shape[1:]) if uses_u else ()
    fe = tuple(e.shape[1:]) if uses_e else ()
    out_shape = torch.broadcast_shapes(fu, fe)
    if out_dtype is None:
        out_dtype = u.dtype if not uses_e else (e.dtype if not uses_u else torch.promote_types(u.dtype, e.dtype))
    schedule = get_schedule(indptr, schedule, split)
    return _run_spmm(msg_code, REDUCES[reduce], u, e, out_shape, indptr, src, eid, schedule, need_arg,
                     out_dtype)

