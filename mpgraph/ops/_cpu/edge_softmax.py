"""Fused edge softmax on the CPU (forward and backward), grouped by destination.

.. math::

    s_{e} = \\frac{\\exp(x_e - m_v)}{\\sum_{e' \\to v} \\exp(x_{e'} - m_v)},
    \\qquad m_v = \\max_{e' \\to v} x_{e'}

per head, over the in-edges of every destination ``v`` (pass ``Index.csr()`` to
normalise over out-edges instead). The max, the fp32 sum of exponentials and the
normalisation run row by row in three passes over the row's edges, which stay in
cache; the row's exponentials wait in a 64 KiB per-chunk scratch between the last
two passes (hub rows that do not fit compute them twice), so nothing E-sized is
allocated besides the output.

With ``eid=None`` (edge data in slot order) a row's logits are one contiguous
block of ``deg * H`` values. When ``H`` divides 16 and the accumulator is fp32,
the block is walked 16 values at a time as one explicit 16-lane LLVM vector
(lane ``t`` always holds head ``t % H``; written as intrinsics below because
LLVM does not reliably vectorise these short loops by itself): the first pass
widens the logits to fp32 into the scratch and keeps a per-lane max, the second
turns the scratch into exponentials (a vector copy of the Cephes polynomial of
:func:`._core.exp_f32`, within 2 ulp) and per-lane sums, the last divides and
rounds once to the output format. The last partial vector of a row uses masked
loads and stores, and the lanes of one head are combined by a butterfly of
shuffles (a few instructions per row). Other ``H``, and fp64 (``np.exp``),
walk the block in steps of ``L`` values (a multiple of ``H``) with per-lane
partial results. With scattered edges (``eid`` given) each row's values are
first copied into contiguous scratch rows, the same 16-lane passes run there,
and the results are copied back to each edge (hub rows longer than the
scratch: the backward takes one masked ``H``-lane step per edge, the forward
the scalar walk); the scalar walks take the heads as the inner loop.

Backward: ``grad_x = s * (g - sum_{e' -> v} s_{e'} g_{e'})`` in two passes (16 lanes
at a time under the same conditions).
"""

import functools

import numpy as np
import torch
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from ._core import (SOURCE_HASH, acc_exp, acc_zero, alloc_acc, atomic_fetch_add, borrow, cached_njit, chunk_bounds,
                    element_ptr, empty_out, index_view, kernel_view, load, num_threads, prefetch, raw_get, raw_set,
                    run_parallel,
                    stack_acc, store, to_acc)
from ._layout import check_float, check_index, check_out_dtype, needs_fp64_pass


#: per-chunk fp32 scratch (64 KiB) that keeps a row's exp(x - m) from the sum pass for the normalising
#: pass; rows with more elements (hubs) compute exp twice instead
EXP_SCRATCH = 16384


def _lanes(H):
    """Lane count ``L``: a multiple of ``H`` of about one 16-float vector (``H`` when ``H > 16``)."""
    return H * max(1, 16 // H)


@njit
def _forward_row_flat(base, n, x, out, H, L, m, z, ml, zl, ex, cached):
    """One row whose logits are the flat block ``[base, base + n)``, walked ``L`` lanes at a time (lane
    ``t`` is head ``t % H``); lanes of one head are folded in lane order. The contiguous path for ``H``
    not dividing 16 and for fp64 (see :func:`_forward_row_lanes` for the others). ``cached`` (a
    compile-time constant) keeps exp(x - m) in ``ex`` between the sum and the normalisation instead of
    computing it twice."""
    zero = acc_zero(out)
    full = n - n % L
    for t in range(L):
        ml[t] = zero - np.inf
    for i in range(0, full, L):
        for t in range(L):
            ml[t] = max(ml[t], to_acc(out, load(x, base + i + t)))
    for h in range(H):
        m[h] = zero - np.inf
    for t in range(L if full > 0 else 0):
        m[t % H] = max(m[t % H], ml[t])
    for i in range(full, n):
        m[i % H] = max(m[i % H], to_acc(out, load(x, base + i)))
    for t in range(L):
        ml[t] = m[t % H]
        zl[t] = zero
    for i in range(0, full, L):
        for t in range(L):
            e = acc_exp(to_acc(out, load(x, base + i + t)) - ml[t])
            zl[t] += e
            if cached:
                ex[i + t] = e
    for h in range(H):
        z[h] = zero
    for t in range(L if full > 0 else 0):
        z[t % H] += zl[t]
    for i in range(full, n):
        e = acc_exp(to_acc(out, load(x, base + i)) - m[i % H])
        z[i % H] += e
        if cached:
            ex[i] = e
    for t in range(L):
        zl[t] = z[t % H]
    for i in range(0, full, L):
        for t in range(L):
            e = ex[i + t] if cached else acc_exp(to_acc(out, load(x, base + i + t)) - ml[t])
            store(out, base + i + t, e / zl[t])
    for i in range(full, n):
        e = ex[i] if cached else acc_exp(to_acc(out, load(x, base + i)) - m[i % H])
        store(out, base + i, e / z[i % H])


@njit
def _forward_rows_flat(r_begin, r_end, indptr, x, out, H, L):
    """Rows whose edges are contiguous (``eid`` is the identity), scalar lane walk."""
    m = alloc_acc(out, H)  # [H] max
    z = alloc_acc(out, H)  # [H] sum of exp(x - m), fp32
    ml = alloc_acc(out, L)  # [L] per-lane max, then m[t % H]
    zl = alloc_acc(out, L)  # [L] per-lane sum, then z[t % H]
    ex = alloc_acc(out, EXP_SCRATCH)
    for r in range(r_begin, r_end):
        base = raw_get(indptr, r) * H
        n = raw_get(indptr, r + 1) * H - base
        if n == 0:
            continue
        if n <= EXP_SCRATCH:
            _forward_row_flat(base, n, x, out, H, L, m, z, ml, zl, ex, True)
        else:
            _forward_row_flat(base, n, x, out, H, L, m, z, ml, zl, ex, False)


@njit
def _forward_row(k0, k1, eid, x, out, H, m, z, ex, cached):
    """One row whose edges are scattered (``eid`` given): three passes over the row, heads inner."""
    zero = acc_zero(out)
    for h in range(H):
        m[h] = zero - np.inf
        z[h] = zero
    for k in range(k0, k1):
        b = raw_get(eid, k) * H
        for h in range(H):
            m[h] = max(m[h], to_acc(out, load(x, b + h)))
    for k in range(k0, k1):
        b = raw_get(eid, k) * H
        for h in range(H):
            e = acc_exp(to_acc(out, load(x, b + h)) - m[h])
            z[h] += e
            if cached:
                ex[(k - k0) * H + h] = e
    for k in range(k0, k1):
        b = raw_get(eid, k) * H
        for h in range(H):
            e = ex[(k - k0) * H + h] if cached else acc_exp(to_acc(out, load(x, b + h)) - m[h])
            store(out, b + h, e / z[h])


@njit
def _forward_rows(r_begin, r_end, indptr, eid, x, out, H):
    m = alloc_acc(out, H)
    z = alloc_acc(out, H)
    ex = alloc_acc(out, EXP_SCRATCH)
    for r in range(r_begin, r_end):
        k0 = raw_get(indptr, r)
        k1 = raw_get(indptr, r + 1)
        if k1 == k0:
            continue
        if (k1 - k0) * H <= EXP_SCRATCH:
            _forward_row(k0, k1, eid, x, out, H, m, z, ex, True)
        else:
            _forward_row(k0, k1, eid, x, out, H, m, z, ex, False)


@njit
def _backward_rows_flat(r_begin, r_end, indptr, s, g, out, H, L):
    """Rows whose edges are contiguous: the flat lane walk of :func:`_forward_row_flat`."""
    zero = acc_zero(out)
    acc = alloc_acc(out, H)  # [H] sum over the row of s * g, fp32
    al = alloc_acc(out, L)  # [L] per-lane sums, then acc[t % H]
    for r in range(r_begin, r_end):
        base = raw_get(indptr, r) * H
        n = raw_get(indptr, r + 1) * H - base
        if n == 0:
            continue
        full = n - n % L
        for t in range(L):
            al[t] = zero
        for i in range(0, full, L):
            for t in range(L):
                al[t] += to_acc(out, load(s, base + i + t)) * to_acc(out, load(g, base + i + t))
        for h in range(H):
            acc[h] = zero
        for t in range(L if full > 0 else 0):
            acc[t % H] += al[t]
        for i in range(full, n):
            acc[i % H] += to_acc(out, load(s, base + i)) * to_acc(out, load(g, base + i))
        for t in range(L):
            al[t] = acc[t % H]
        for i in range(0, full, L):
            for t in range(L):
                sv = to_acc(out, load(s, base + i + t))
                store(out, base + i + t, sv * (to_acc(out, load(g, base + i + t)) - al[t]))
        for i in range(full, n):
            sv = to_acc(out, load(s, base + i))
            store(out, base + i, sv * (to_acc(out, load(g, base + i)) - acc[i % H]))


@njit
def _backward_rows(r_begin, r_end, indptr, eid, s, g, out, H):
    """Rows whose edges are scattered: two passes over the row, heads inner."""
    zero = acc_zero(out)
    acc = alloc_acc(out, H)  # [H] sum over the row of s * g, fp32
    for r in range(r_begin, r_end):
        k0 = raw_get(indptr, r)
        k1 = raw_get(indptr, r + 1)
        for h in range(H):
            acc[h] = zero
        for k in range(k0, k1):
            b = raw_get(eid, k) * H
            for h in range(H):
                acc[h] += to_acc(out, load(s, b + h)) * to_acc(out, load(g, b + h))
        for k in range(k0, k1):
            b = raw_get(eid, k) * H
            for h in range(H):
                sv = to_acc(out, load(s, b + h))
                store(out, b + h, sv * (to_acc(out, load(g, b + h)) - acc[h]))


# ----------------------------------------------------------------------------- 16-lane fp32 vector passes
# Each intrinsic below is one step over 16 consecutive values of a row, on explicit LLVM ``<16 x float>``
# vectors. Lane registers are 16-float stack arrays (``stack_acc(out, LANES)``) read and written whole, so
# LLVM keeps them in vector registers; other arrays are read and written at an element offset.

#: values per vector step of the contiguous path (one AVX-512 register of fp32)
LANES = 16

_F32 = ir.FloatType()
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_VF32 = ir.VectorType(_F32, LANES)
_VI32 = ir.VectorType(_I32, LANES)
_VI16 = ir.VectorType(ir.IntType(16), LANES)
_VHALF = ir.VectorType(ir.HalfType(), LANES)
_LANE_IDS = ir.Constant(ir.VectorType(_I64, LANES), list(range(LANES)))

#: storage formats a vector step reads and writes: fp32, bfloat16 bits (int16), float16 bits (uint16)
_VECTOR_DTYPES = (types.float32, types.int16, types.uint16)


def _splat(value, ty=_F32):
    return ir.Constant(ir.VectorType(ty, LANES), [value] * LANES)


def _call(builder, name, ret, args):
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ret, [a.type for a in args]), name)
    return builder.call(fn, args)


def _fma(builder, a, b, c):
    return _call(builder, "llvm.fma.v16f32", _VF32, [a, b, c])


def _lane_mask(builder, k):
    """``<16 x i1>``, lane ``t`` set when ``t < k`` (``0 <= k <= 16``)."""
    if k.type.width < 64:
        k = builder.zext(k, _I64)
    ks = builder.insert_element(ir.Constant(ir.VectorType(_I64, LANES), None), k, _I32(0))
    ks = builder.shuffle_vector(ks, ks, ir.Constant(_VI32, [0] * LANES))
    return builder.icmp_signed("<", _LANE_IDS, ks)


def _get(context, builder, aryty, ary, idx=None):
    """The 16 fp32 values at ``ary[idx:]`` (``idx`` None: a lane register)."""
    ptr = element_ptr(context, builder, aryty, ary, _I64(0) if idx is None else idx)
    return builder.load(builder.bitcast(ptr, _VF32.as_pointer()), align=4)


def _put(context, builder, aryty, ary, v, idx=None):
    """Write the 16 fp32 values ``v`` at ``ary[idx:]`` (``idx`` None: a lane register)."""
    ptr = element_ptr(context, builder, aryty, ary, _I64(0) if idx is None else idx)
    builder.store(v, builder.bitcast(ptr, _VF32.as_pointer()), align=4)


def _load_lanes(context, builder, aryty, ary, idx, k, fill):
    """``(v, mask)``: ``ary[idx + t]`` widened to fp32 in the lanes ``t < k`` (masked load: nothing past
    ``k`` is touched) and ``fill`` in the others."""
    ptr = element_ptr(context, builder, aryty, ary, idx)
    mask = _lane_mask(builder, k)
    if aryty.dtype == types.float32:
        v = _call(builder, "llvm.masked.load.v16f32.p0", _VF32, [ptr, _I32(4), mask, ir.Constant(_VF32, None)])
    else:
        bits = _call(builder, "llvm.masked.load.v16i16.p0", _VI16, [ptr, _I32(2), mask, ir.Constant(_VI16, None)])
        if aryty.dtype == types.int16:  # bfloat16: the upper half of an fp32
            v = builder.bitcast(builder.shl(builder.zext(bits, _VI32), _splat(16, _I32)), _VF32)
        else:  # float16, exact
            v = builder.fpext(builder.bitcast(bits, _VHALF), _VF32)
    return builder.select(mask, v, _splat(fill)), mask


def _store_lanes(context, builder, aryty, ary, idx, mask, v):
    """Round the fp32 vector ``v`` once to the array's format; write the lanes of ``mask`` at ``ary[idx:]``."""
    ptr = element_ptr(context, builder, aryty, ary, idx)
    if aryty.dtype == types.float32:
        _call(builder, "llvm.masked.store.v16f32.p0", ir.VoidType(), [v, ptr, _I32(4), mask])
        return
    if aryty.dtype == types.int16:  # bfloat16, round to nearest even; NaN stays a quiet NaN (as _core.store)
        b = builder.bitcast(v, _VI32)
        hi = builder.lshr(b, _splat(16, _I32))
        rne = builder.lshr(builder.add(builder.add(b, _splat(0x7FFF, _I32)), builder.and_(hi, _splat(1, _I32))),
                           _splat(16, _I32))
        nan = builder.icmp_unsigned(">", builder.and_(b, _splat(0x7FFFFFFF, _I32)), _splat(0x7F800000, _I32))
        bits = builder.trunc(builder.select(nan, builder.or_(hi, _splat(0x40, _I32)), rne), _VI16)
    else:  # float16: fptrunc rounds to nearest even
        bits = builder.bitcast(builder.fptrunc(v, _VHALF), _VI16)
    _call(builder, "llvm.masked.store.v16i16.p0", ir.VoidType(), [bits, ptr, _I32(2), mask])


def _exp_lanes(builder, x):
    """``exp`` of 16 fp32 lanes: the steps of :func:`._core.exp_f32` on a vector (Cephes ``expf`` range
    reduction and polynomial, the mul-adds fused; -inf -> 0, overflow -> inf, NaN -> NaN)."""
    lo, hi = _splat(-87.33654), _splat(88.72283)
    xc = builder.select(builder.fcmp_ordered("<", x, lo), lo, x)
    xc = builder.select(builder.fcmp_ordered(">", xc, hi), hi, xc)
    n = _call(builder, "llvm.floor.v16f32", _VF32, [_fma(builder, xc, _splat(1.4426950408889634), _splat(0.5))])
    r = _fma(builder, n, _splat(-0.693359375), xc)  # xc - n * ln2, in two parts
    r = _fma(builder, n, _splat(2.12194440e-4), r)
    p = _splat(1.9875691500e-4)
    for c in (1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1):
        p = _fma(builder, p, r, _splat(c))
    p = _fma(builder, builder.fmul(p, r), r, builder.fadd(r, _splat(1.0)))
    # times 2**n, built in the exponent field as two factors (n in [-126, 128] after the clamp)
    ni = builder.fptosi(n, _VI32)
    n1 = builder.ashr(ni, _splat(1, _I32))
    n2 = builder.sub(ni, n1)
    s1 = builder.bitcast(builder.shl(builder.add(n1, _splat(127, _I32)), _splat(23, _I32)), _VF32)
    s2 = builder.bitcast(builder.shl(builder.add(n2, _splat(127, _I32)), _splat(23, _I32)), _VF32)
    y = builder.fmul(builder.fmul(p, s1), s2)
    y = builder.select(builder.fcmp_ordered("<", x, lo), _splat(0.0), y)
    y = builder.select(builder.fcmp_ordered(">", x, hi), _splat(np.inf), y)
    return builder.select(builder.fcmp_unordered("uno", x, x), x, y)


def _vmax(builder, a, b):
    """``b if b > a else a`` per lane: the NaN behaviour of Python's ``max(a, b)`` in Numba."""
    return builder.select(builder.fcmp_ordered(">", b, a), b, a)


def _is_reg(a):
    return isinstance(a, types.Array) and a.ndim == 1 and a.dtype == types.float32


def _is_data(a):
    return isinstance(a, types.Array) and a.ndim == 1 and a.dtype in _VECTOR_DTYPES


def _ints(*args):
    return all(isinstance(a, types.Integer) for a in args)


def _void(context):
    return context.get_dummy_value()


@intrinsic
def _lanes_fill(typingctx, v, value):
    """Every lane of the register ``v`` set to ``value``."""
    if not _is_reg(v) or not isinstance(value, types.Float):
        return None
    sig = types.void(v, value)

    def codegen(context, builder, sig, args):
        val = context.cast(builder, args[1], sig.args[1], types.float32)
        vec = builder.insert_element(ir.Constant(_VF32, None), val, _I32(0))
        _put(context, builder, sig.args[0], args[0], builder.shuffle_vector(vec, vec, ir.Constant(_VI32, [0] * LANES)))
        return _void(context)

    return sig, codegen


@intrinsic
def _lanes_max(typingctx, m, x, idx, k, ex, j):
    """``m = max(m, x[idx + t])`` for the lanes ``t < k``; the widened values go to ``ex[j:j + 16]``
    (-inf past ``k``)."""
    if not (_is_reg(m) and _is_data(x) and _is_reg(ex) and _ints(idx, k, j)):
        return None
    sig = types.void(m, x, idx, k, ex, j)

    def codegen(context, builder, sig, args):
        m, x, idx, k, ex, j = args
        v, _ = _load_lanes(context, builder, sig.args[1], x, idx, k, -np.inf)
        _put(context, builder, sig.args[4], ex, v, j)
        _put(context, builder, sig.args[0], m, _vmax(builder, _get(context, builder, sig.args[0], m), v))
        return _void(context)

    return sig, codegen


@intrinsic
def _lanes_exp(typingctx, z, m, x, idx, k, ex, j):
    """``e = exp(x[idx + t] - m)`` for the lanes ``t < k`` (0 past ``k``) into ``ex[j:j + 16]``, and ``z += e``."""
    if not (_is_reg(z) and _is_reg(m) and _is_data(x) and _is_reg(ex) and _ints(idx, k, j)):
        return None
    sig = types.void(z, m, x, idx, k, ex, j)

    def codegen(context, builder, sig, args):
        z, m, x, idx, k, ex, j = args
        v, mask = _load_lanes(context, builder, sig.args[2], x, idx, k, -np.inf)
        e = _exp_lanes(builder, builder.fsub(v, _get(context, builder, sig.args[1], m)))
        e = builder.select(mask, e, _splat(0.0))
        _put(context, builder, sig.args[5], ex, e, j)
        _put(context, builder, sig.args[0], z, builder.fadd(_get(context, builder, sig.args[0], z), e))
        return _void(context)

    return sig, codegen


@intrinsic
def _lanes_div(typingctx, out, idx, k, ex, j, z):
    """``out[idx + t] = ex[j + t] / z`` for the lanes ``t < k``, rounded once to ``out``'s format."""
    if not (_is_data(out) and _is_reg(ex) and _is_reg(z) and _ints(idx, k, j)):
        return None
    sig = types.void(out, idx, k, ex, j, z)

    def codegen(context, builder, sig, args):
        out, idx, k, ex, j, z = args
        q = builder.fdiv(_get(context, builder, sig.args[3], ex, j), _get(context, builder, sig.args[5], z))
        _store_lanes(context, builder, sig.args[0], out, idx, _lane_mask(builder, k), q)
        return _void(context)

    return sig, codegen


@intrinsic
def _lanes_dot(typingctx, a, s, g, idx, k):
    """``a += s[idx + t] * g[idx + t]`` for the lanes ``t < k``."""
    if not (_is_reg(a) and _is_data(s) and _is_data(g) and _ints(idx, k)):
        return None
    sig = types.void(a, s, g, idx, k)

    def codegen(context, builder, sig, args):
        a, s, g, idx, k = args
        sv, _ = _load_lanes(context, builder, sig.args[1], s, idx, k, 0.0)
        gv, _ = _load_lanes(context, builder, sig.args[2], g, idx, k, 0.0)
        acc = builder.fadd(_get(context, builder, sig.args[0], a), builder.fmul(sv, gv))
        _put(context, builder, sig.args[0], a, acc)
        return _void(context)

    return sig, codegen


@intrinsic
def _lanes_grad(typingctx, out, s, g, idx, k, a):
    """``out[idx + t] = s * (g - a)`` for the lanes ``t < k``, rounded once to ``out``'s format."""
    if not (_is_data(out) and _is_data(s) and _is_data(g) and _is_reg(a) and _ints(idx, k)):
        return None
    sig = types.void(out, s, g, idx, k, a)

    def codegen(context, builder, sig, args):
        out, s, g, idx, k, a = args
        sv, mask = _load_lanes(context, builder, sig.args[1], s, idx, k, 0.0)
        gv, _ = _load_lanes(context, builder, sig.args[2], g, idx, k, 0.0)
        r = builder.fmul(sv, builder.fsub(gv, _get(context, builder, sig.args[5], a)))
        _store_lanes(context, builder, sig.args[0], out, idx, mask, r)
        return _void(context)

    return sig, codegen


def _combine_heads(is_max):
    """Intrinsic ``fold(v, H)``: max (or sum) over the lanes of each head of the register ``v``, left in
    every lane of that head. With ``H`` dividing 16, the lanes of a head are those whose index agrees
    in the bits below ``H``; a butterfly combines each lane with its partner across bit ``s`` for
    ``s = 8, 4, ...`` down to ``H``."""

    @intrinsic
    def fold(typingctx, v, H):
        if not _is_reg(v) or not isinstance(H, types.Integer):
            return None
        sig = types.void(v, H)

        def codegen(context, builder, sig, args):
            H = context.cast(builder, args[1], sig.args[1], types.int64)
            acc = _get(context, builder, sig.args[0], args[0])
            for s in (8, 4, 2, 1):
                other = builder.shuffle_vector(acc, acc, ir.Constant(_VI32, [t ^ s for t in range(LANES)]))
                both = _vmax(builder, acc, other) if is_max else builder.fadd(acc, other)
                acc = builder.select(builder.icmp_signed("<=", H, _I64(s)), both, acc)
            _put(context, builder, sig.args[0], args[0], acc)
            return _void(context)

        return sig, codegen

    return fold


_heads_max = _combine_heads(True)
_heads_sum = _combine_heads(False)


@njit(inline="always")
def _forward_row_lanes(base, n, x, out, H, ex, cached):
    """One contiguous row ``x[base:base + n]`` in 16-lane steps (``H`` divides 16, fp32 accumulator);
    ``cached`` (a compile-time constant) keeps the widened logits, then their exponentials, in ``ex``."""
    m = stack_acc(out, LANES)  # per-lane max, then the max of the lane's head
    z = stack_acc(out, LANES)  # per-lane sum of exp(x - m), then the sum of the lane's head
    _lanes_fill(m, -np.inf)
    _lanes_fill(z, 0.0)
    full = n - n % LANES
    rem = n - full
    if cached:
        for i in range(0, full, LANES):
            _lanes_max(m, x, base + i, LANES, ex, i)
        if rem > 0:
            _lanes_max(m, x, base + full, rem, ex, full)
        _heads_max(m, H)
        for i in range(0, full, LANES):
            _lanes_exp(z, m, ex, i, LANES, ex, i)
        if rem > 0:
            _lanes_exp(z, m, ex, full, rem, ex, full)
        _heads_sum(z, H)
        for i in range(0, full, LANES):
            _lanes_div(out, base + i, LANES, ex, i, z)
        if rem > 0:
            _lanes_div(out, base + full, rem, ex, full, z)
    else:  # a hub: read the logits in every pass and compute exp twice; ex[:16] is the step's scratch
        discard = stack_acc(out, LANES)  # the sum of the recomputed exponentials (already in z)
        for i in range(0, n, LANES):
            _lanes_max(m, x, base + i, min(LANES, n - i), ex, 0)
        _heads_max(m, H)
        for i in range(0, n, LANES):
            _lanes_exp(z, m, x, base + i, min(LANES, n - i), ex, 0)
        _heads_sum(z, H)
        for i in range(0, n, LANES):
            k = min(LANES, n - i)
            _lanes_exp(discard, m, x, base + i, k, ex, 0)
            _lanes_div(out, base + i, k, ex, 0, z)


@njit
def _forward_rows_lanes(r_begin, r_end, indptr, x, out, H):
    """Rows whose edges are contiguous, in 16-lane steps."""
    ex = alloc_acc(out, EXP_SCRATCH + LANES)  # a row's values, padded to whole steps
    for r in range(r_begin, r_end):
        base = raw_get(indptr, r) * H
        n = raw_get(indptr, r + 1) * H - base
        if n == 0:
            continue
        if n <= EXP_SCRATCH:
            _forward_row_lanes(base, n, x, out, H, ex, True)
        else:
            _forward_row_lanes(base, n, x, out, H, ex, False)


@njit(inline="always")
def _backward_row_lanes(base, n, s, g, out, H, a):
    """One contiguous row ``[base, base + n)`` in 16-lane steps: the row sums of ``s * g`` (in ``a``), then the
    gradient ``s * (g - a)`` (``out`` may be ``s`` itself: each step reads its lanes before writing them)."""
    full = n - n % LANES
    rem = n - full
    _lanes_fill(a, 0.0)
    for i in range(0, full, LANES):
        _lanes_dot(a, s, g, base + i, LANES)
    if rem > 0:
        _lanes_dot(a, s, g, base + full, rem)
    _heads_sum(a, H)
    for i in range(0, full, LANES):
        _lanes_grad(out, s, g, base + i, LANES, a)
    if rem > 0:
        _lanes_grad(out, s, g, base + full, rem, a)


@njit
def _backward_rows_lanes(r_begin, r_end, indptr, s, g, out, H):
    """Rows whose edges are contiguous, in 16-lane steps: the row sums of ``s * g``, then the gradient."""
    a = stack_acc(out, LANES)  # per-lane sums of s * g, then the sum of the lane's head
    for r in range(r_begin, r_end):
        base = raw_get(indptr, r) * H
        n = raw_get(indptr, r + 1) * H - base
        if n > 0:
            _backward_row_lanes(base, n, s, g, out, H, a)


#: edges ahead whose logits a scattered-row pass prefetches
SCATTER_PREFETCH = 16


@njit(inline="always")
def _gather_row(k0, k1, eid, x, H, xr, y, yr, out):
    """The ``H`` elements of each of the row's edges ``k0 : k1`` (scattered, ``eid`` given) in ``x``, copied as
    they are into the row's contiguous place ``xr[(k - k0) * H:]`` (an array of ``x``'s dtype), and likewise
    ``y``'s into ``yr`` unless ``y`` is empty; the edges :data:`SCATTER_PREFETCH` ahead are prefetched in ``x``,
    ``y`` and ``out`` (which :func:`_scatter_row` writes at the same places)."""
    last = eid.size - 1
    two = y.size > 0
    for k in range(k0, k1):
        ahead = raw_get(eid, min(k + SCATTER_PREFETCH, last)) * H
        prefetch(x, ahead)
        if two:
            prefetch(y, ahead)
        prefetch(out, ahead)
        b = raw_get(eid, k) * H
        j = (k - k0) * H
        if H == 1:      # one element, no loop (measured within noise of the loop: 3.2-3.9 against 3.4-3.8 ms)
            raw_set(xr, j, raw_get(x, b))
            if two:
                raw_set(yr, j, raw_get(y, b))
            continue
        for t in range(H):
            raw_set(xr, j + t, raw_get(x, b + t))
        if two:
            for t in range(H):
                raw_set(yr, j + t, raw_get(y, b + t))


@njit(inline="always")
def _scatter_row(k0, k1, eid, out, H, orow):
    """The contiguous row ``orow`` (of ``out``'s dtype) back to each edge's own ``H`` places in ``out``."""
    for k in range(k0, k1):
        b = raw_get(eid, k) * H
        j = (k - k0) * H
        if H == 1:
            raw_set(out, b, raw_get(orow, j))
            continue
        for t in range(H):
            raw_set(out, b + t, raw_get(orow, j + t))


@njit(inline="always")
def _forward_row_gathered(k0, k1, eid, x, out, H, ex, xr, orow):
    """One row whose edges are scattered (``eid`` given; ``H`` divides 16, fp32 accumulator, the row's
    ``(k1 - k0) * H`` values fit the scratch rows): the edges' logits are copied into the contiguous row ``xr``,
    the contiguous path runs from it into ``orow`` (so the results are its results, bit for bit), and each
    edge's ``H`` results are copied back to its place.

    Until the fortieth session each edge's ``H`` logits were read with a 16-lane masked load and its results
    written with a masked store, which are slow on AMD's cores. Measured on the AVX2 AMD EPYC VM (the guide's
    GAT graph, reddit-like at scale 0.01: 1.14M edges numbered in random order; the kernels alone, medians of
    15, alternating rounds, fp32 and bf16): forward with 1 head 3.2-3.9 ms against 6.3-8.4 for the masked
    steps, 2 heads 4.4-6.0 against 7.5-10.2, 4 heads 6.5-7.9 against 9.7-13.3, 8 heads 9.2-11.8 against
    13.5-17.1; backward 3.9-5.0 / 5.8-8.4 / 8.0-9.2 / 9.3-12.1 ms against 8.5-11.2 / 11.7-13.1 / 14.0-20.8 /
    15.2-18.3. (One head gathered and widened into the fp32 scratch, the first version of this change, ran its
    forward in 2.2-3.5 ms and its backward in 3.6-6.2: not enough to keep a second route.)"""
    _gather_row(k0, k1, eid, x, H, xr, x[:0], xr, out)
    _forward_row_lanes(0, (k1 - k0) * H, xr, orow, H, ex, True)
    _scatter_row(k0, k1, eid, out, H, orow)


@njit
def _forward_rows_lanes_eid(r_begin, r_end, indptr, eid, x, out, H):
    """Rows whose edges are scattered, 16-lane steps; hub rows that do not fit the scratch take the scalar
    :func:`_forward_row`."""
    ex = alloc_acc(out, EXP_SCRATCH + LANES)
    xr = np.empty(EXP_SCRATCH + LANES, x.dtype)
    orow = np.empty(EXP_SCRATCH + LANES, out.dtype)
    m = alloc_acc(out, H)
    z = alloc_acc(out, H)
    for r in range(r_begin, r_end):
        k0 = raw_get(indptr, r)
        k1 = raw_get(indptr, r + 1)
        if k1 == k0:
            continue
        if (k1 - k0) * H <= EXP_SCRATCH:
            _forward_row_gathered(k0, k1, eid, x, out, H, ex, xr, orow)
        else:
            _forward_row(k0, k1, eid, x, out, H, m, z, ex, False)


@njit
def _backward_rows_lanes_eid(r_begin, r_end, indptr, eid, s, g, out, H):
    """Rows whose edges are scattered: ``s`` and ``g`` copied into two contiguous rows, the contiguous path's
    16-lane passes from them into a third (its results, bit for bit), copied back to each edge (as
    :func:`_forward_row_gathered`). Rows of more than :data:`EXP_SCRATCH` values (hubs): one masked
    ``H``-lane step per edge, the row sums of ``s * g`` (edges ahead prefetched), then the gradient (the row's
    edges are in cache by then)."""
    sr = np.empty(EXP_SCRATCH + LANES, s.dtype)
    gr = np.empty(EXP_SCRATCH + LANES, g.dtype)
    orow = np.empty(EXP_SCRATCH + LANES, out.dtype)
    a = stack_acc(out, LANES)
    last = eid.size - 1
    for r in range(r_begin, r_end):
        k0 = raw_get(indptr, r)
        k1 = raw_get(indptr, r + 1)
        n = (k1 - k0) * H
        if n == 0:
            continue
        if n <= EXP_SCRATCH:
            _gather_row(k0, k1, eid, s, H, sr, g, gr, out)
            _backward_row_lanes(0, n, sr, gr, orow, H, a)
            _scatter_row(k0, k1, eid, out, H, orow)
            continue
        _lanes_fill(a, 0.0)
        for k in range(k0, k1):
            ahead = raw_get(eid, min(k + SCATTER_PREFETCH, last)) * H
            prefetch(s, ahead)
            prefetch(g, ahead)
            prefetch(out, ahead)
            _lanes_dot(a, s, g, raw_get(eid, k) * H, H)
        for k in range(k0, k1):
            _lanes_grad(out, s, g, raw_get(eid, k) * H, H, a)


def _vector_ok(*arrays):
    """Whether the 16-lane passes apply to these kernel arrays (fp32 accumulator: no fp64 array)."""
    return all(a.dtype in _VECTOR_DTYPES for a in arrays)


def _lanes_or_scalar(name, vector, scalar, floats, h_at, vector_argc):
    """A function for ``@njit`` code that runs rows through ``vector`` (the 16-lane passes) when they apply,
    else through ``scalar``; both take the same leading arguments (``vector`` the first ``vector_argc``).

    The choice is made where it can be: the arrays at positions ``floats`` decide at compile time (no fp64
    array), the head count at position ``h_at`` at run time (``LANES % H == 0``)."""

    def rows(*args):
        raise TypeError(f"{name}: a Numba intrinsic: it runs only inside @njit kernels, not from Python")

    rows.__name__ = rows.__qualname__ = name

    @overload(rows)
    def _rows_impl(*args):
        if not _vector_ok(*(args[i] for i in floats)):
            return lambda *args: scalar(*args)

        def impl(*args):
            if LANES % args[h_at] == 0:
                vector(*args[:vector_argc])
            else:
                scalar(*args)

        return impl

    return rows


#: rows whose edges are scattered (``eid`` given): ``(r_begin, r_end, indptr, eid, x, out, H)`` and
#: ``(r_begin, r_end, indptr, eid, s, g, out, H)``
_forward_scattered = _lanes_or_scalar("_forward_scattered", _forward_rows_lanes_eid, _forward_rows, (4, 5), 6, 7)
_backward_scattered = _lanes_or_scalar("_backward_scattered", _backward_rows_lanes_eid, _backward_rows, (4, 5, 6),
                                       7, 8)
#: rows whose edges are contiguous: ``(r_begin, r_end, indptr, x, out, H, L)`` and
#: ``(r_begin, r_end, indptr, s, g, out, H, L)`` (the 16-lane passes take no ``L``)
_forward_contiguous = _lanes_or_scalar("_forward_contiguous", _forward_rows_lanes, _forward_rows_flat, (3, 4), 5, 6)
_backward_contiguous = _lanes_or_scalar("_backward_contiguous", _backward_rows_lanes, _backward_rows_flat,
                                        (3, 4, 5), 6, 7)


@functools.lru_cache(maxsize=None)
def edge_softmax_kernels():
    """``(forward, backward)`` compiled kernels; dtypes specialise on first call."""
    source_hash = SOURCE_HASH  # part of Numba's cache key (see _core._source_hash)

    @cached_njit(nogil=True)
    def forward(counter, bounds, indptr, eid, x, out, H, L):
        _ = source_hash
        nchunks = bounds.size - 1
        indptr, eid, x, out = borrow(indptr), borrow(eid), borrow(x), borrow(out)
        c = atomic_fetch_add(counter, 0, 1)
        while c < nchunks:
            if eid.size == 0:
                _forward_contiguous(raw_get(bounds, c), raw_get(bounds, c + 1), indptr, x, out, H, L)
            else:
                _forward_scattered(raw_get(bounds, c), raw_get(bounds, c + 1), indptr, eid, x, out, H)
            c = atomic_fetch_add(counter, 0, 1)

    @cached_njit(nogil=True)
    def backward(counter, bounds, indptr, eid, s, g, out, H, L):
        _ = source_hash
        nchunks = bounds.size - 1
        indptr, eid, s, g, out = borrow(indptr), borrow(eid), borrow(s), borrow(g), borrow(out)
        c = atomic_fetch_add(counter, 0, 1)
        while c < nchunks:
            if eid.size == 0:
                _backward_contiguous(raw_get(bounds, c), raw_get(bounds, c + 1), indptr, s, g, out, H, L)
            else:
                _backward_scattered(raw_get(bounds, c), raw_get(bounds, c + 1), indptr, eid, s, g, out, H)
            c = atomic_fetch_add(counter, 0, 1)

    return forward, backward


def _check(indptr, eid, name, t):
    check_index("indptr", indptr)
    if eid is not None:
        check_index("eid", eid)
    check_float(name, t)
    if indptr.numel() > 0 and int(indptr[0]) != 0:
        raise ValueError(f"expected indptr[0] == 0 (every edge in a row), got {int(indptr[0])}")
    E = int(indptr[-1]) if indptr.numel() > 0 else 0
    if t.shape[0] != E:
        raise ValueError(f"expected {name} with {E} rows (one per edge, indptr[-1]), got shape {tuple(t.shape)}")


def edge_softmax_forward(indptr, eid, logits, *, out_dtype=None):
    """Softmax of edge logits over the edges of each row, on raw tensors.

    Parameters
    ----------
    indptr : Tensor, int64, ``(N_dst + 1,)``
        ``Index.csc()[0]`` (normalise over in-edges; ``Index.csr()[0]`` for out-edges).
    eid : Tensor, int64, ``(E,)``, or None
        Edge id of each slot (``Index.csc()[2]``); None means the identity.
    logits : Tensor ``(E, *H)``
        float64/float32/float16/bfloat16; e.g. ``(E, H)`` or ``(E, H, 1)``.
    out_dtype : torch.dtype, optional
        Dtype of the result; default ``logits.dtype``.

    Returns
    -------
    Tensor ``(E, *H)``
        In ``out_dtype``; max, exponentials and sums in fp32 (fp64 for fp64),
        rounded once. Edges of a row whose logits are all ``-inf`` get NaN (as
        ``torch.softmax``).
    """
    _check(indptr, eid, "logits", logits)
    check_out_dtype(out_dtype)
    if needs_fp64_pass(out_dtype, logits):
        return edge_softmax_forward(indptr, eid, logits, out_dtype=torch.float64).to(out_dtype)
    out = empty_out(logits.shape, out_dtype or logits.dtype)
    E = logits.shape[0]
    H = int(np.prod(logits.shape[1:], dtype=np.int64))
    R = indptr.numel() - 1
    if E == 0 or H == 0 or R <= 0:
        return out
    indptr_np = index_view(indptr.contiguous())
    nthreads = num_threads(3 * E * H)
    forward, _ = edge_softmax_kernels()
    run_parallel(forward, nthreads, chunk_bounds(indptr_np, nthreads), indptr_np,
                 index_view(eid.contiguous() if eid is not None else None),
                 kernel_view(logits.contiguous()), kernel_view(out), H, _lanes(H))
    return out


def edge_softmax_backward(indptr, eid, out, grad_out, *, out_dtype=None):
    """Gradient of :func:`edge_softmax_forward` with respect to the logits.

    .. math::

        \\partial x_e = s_e \\left(g_e - \\sum_{e' \\in \\mathrm{row}(e)} s_{e'} g_{e'}\\right)

    Parameters
    ----------
    indptr, eid : Tensor
        The structure given to the forward.
    out : Tensor ``(E, *H)``
        The forward's result ``s``.
    grad_out : Tensor ``(E, *H)``
        Gradient with respect to ``s`` (any supported float dtype).
    out_dtype : torch.dtype, optional
        Dtype of the result; default the promoted dtype of ``out`` and ``grad_out``.

    Returns
    -------
    Tensor ``(E, *H)``
        In ``out_dtype``; the row sums accumulate in fp32 (fp64 if anything is fp64).
    """
    _check(indptr, eid, "out", out)
    check_float("grad_out", grad_out)
    if grad_out.shape != out.shape:
        raise ValueError(f"expected grad_out of shape {tuple(out.shape)}, got {tuple(grad_out.shape)}")
    check_out_dtype(out_dtype)
    if needs_fp64_pass(out_dtype, out, grad_out):
        return edge_softmax_backward(indptr, eid, out, grad_out, out_dtype=torch.float64).to(out_dtype)
    dtype = out_dtype or torch.promote_types(out.dtype, grad_out.dtype)
    grad = empty_out(out.shape, dtype)
    E = out.shape[0]
    H = int(np.prod(out.shape[1:], dtype=np.int64))
    R = indptr.numel() - 1
    if E == 0 or H == 0 or R <= 0:
        return grad
    indptr_np = index_view(indptr.contiguous())
    nthreads = num_threads(2 * E * H)
    _, backward = edge_softmax_kernels()
    run_parallel(backward, nthreads, chunk_bounds(indptr_np, nthreads), indptr_np,
                 index_view(eid.contiguous() if eid is not None else None),
                 kernel_view(out.contiguous()), kernel_view(grad_out.contiguous()), kernel_view(grad), H, _lanes(H))
    return grad
