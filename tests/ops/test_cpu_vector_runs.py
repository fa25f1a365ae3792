"""The CPU kernels' vector helpers (``_cpu/_core.py``: ``load_run``, ``store_run``, ``store_run_nt``, ``mul_run``,
``fold_adjacent``, ``recip_run``, ``div_grad_run``) give exactly what the scalar helpers give, element by element, in
every storage format."""

import math

import numpy as np
import pytest
import torch

pytest.importorskip("numba")

from numba import njit  # noqa: E402
from numba.core.errors import TypingError  # noqa: E402

from mpgraph.ops._cpu._core import (NT_ALIGN, div_grad_run, fold_adjacent, kernel_view, load,  # noqa: E402
                                    load_run, mul_run, recip_run, stack_acc, store, store_fence, store_run,
                                    store_run_nt, streams)
from mpgraph.ops._cpu.scatter import _div_grad  # noqa: E402

DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16]
DTYPE_IDS = ["f64", "f32", "f16", "bf16"]


def _specials(dtype):
    """Values whose rounding to ``dtype`` is delicate (ties to even, overflow, subnormals, signed zeros, NaN), then
    random ones: 8 * 40 float64 values."""
    fin = torch.finfo(dtype)
    one = 1.0 + fin.eps / 2                       # a tie between 1 and the next value: rounds to even (1)
    above = 1.0 + fin.eps * 1.5                   # a tie that rounds up to 1 + 2 eps
    vals = [one, above, -one, -above, fin.max, -fin.max, fin.max * 1.5, fin.tiny, fin.tiny / 4, fin.tiny * 0.75,
            0.0, -0.0, math.inf, -math.inf, math.nan, 1e-30, 3.0e38, -3.4e38, 65504.0, 65520.0]
    gen = torch.Generator().manual_seed(5)
    rand = torch.randn(320 - len(vals), generator=gen, dtype=torch.float64) * 10.0 ** torch.randint(
        -8, 8, (320 - len(vals),), generator=gen)
    return torch.cat([torch.tensor(vals, dtype=torch.float64), rand])


@njit
def _store_both(acc, vec_out, scalar_out):
    run = stack_acc(acc, 8)                       # float32, or float64 for a float64 acc
    for b in range(0, acc.size, 8):
        for i in range(8):
            run[i] = acc[b + i]
        store_run(vec_out, b, run, 8)
        for i in range(8):
            store(scalar_out, b + i, run[i])


@njit
def _load_both(src, vec_out, scalar_out):
    run = stack_acc(vec_out, 8)                   # the type of vec_out
    for b in range(0, src.size, 8):
        load_run(src, b, run, 8)
        for i in range(8):
            vec_out[b + i] = run[i]
            scalar_out[b + i] = load(src, b + i)


@pytest.mark.parametrize("wide", [False, True], ids=["acc", "f64run"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_store_run_rounds_as_store(dtype, wide):
    # a run of the accumulator type, or of float64 (a float64 accumulator writing a narrower format)
    acc_dtype = torch.float64 if dtype == torch.float64 or wide else torch.float32
    acc = _specials(dtype).to(acc_dtype)
    vec, scalar = torch.empty(acc.numel(), dtype=dtype), torch.empty(acc.numel(), dtype=dtype)
    _store_both(acc.numpy(), kernel_view(vec), kernel_view(scalar))
    assert np.array_equal(kernel_view(vec).view(np.uint8), kernel_view(scalar).view(np.uint8))  # bit for bit
    # and both are the correctly rounded value of the float32 value (torch's conversion), NaN as NaN
    expected = acc.to(torch.float32 if dtype != torch.float64 else dtype).to(dtype)
    same = (vec == expected) | (vec.isnan() & expected.isnan())
    assert bool(same.all()), acc[~same]


@njit
def _store_streaming(acc, vec_out, plain_out):
    run = stack_acc(acc, 32)
    for b in range(0, acc.size, 32):
        for i in range(32):
            run[i] = acc[b + i]
        store_run_nt(vec_out, b, run, 32)
        store_run(plain_out, b, run, 32)
    store_fence()


@pytest.mark.parametrize("wide", [False, True], ids=["acc", "f64run"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_store_run_nt_stores_the_bits_of_store_run(dtype, wide):
    # runs of 32 fill whole lines in every format (64 bytes of 16-bit values, 256 of float64) from aligned starts
    acc = _specials(dtype).to(torch.float64 if dtype == torch.float64 or wide else torch.float32)
    vec, plain = torch.empty(acc.numel(), dtype=dtype), torch.empty(acc.numel(), dtype=dtype)
    assert vec.data_ptr() % NT_ALIGN == 0
    _store_streaming(acc.numpy(), kernel_view(vec), kernel_view(plain))
    assert np.array_equal(kernel_view(vec).view(np.uint8), kernel_view(plain).view(np.uint8))


def test_store_run_nt_refuses_runs_that_do_not_fill_lines():
    # 8 float32 values are half a line: a streaming store of them is not compiled
    @njit
    def half_line(out):
        run = stack_acc(out, 8)
        for i in range(8):
            run[i] = i
        store_run_nt(out, 0, run, 8)

    with pytest.raises(TypingError):
        half_line(np.zeros(16, np.float32))


def test_streams_needs_whole_aligned_lines_and_a_result_beyond_the_cache(monkeypatch):
    from mpgraph.ops._cpu import spmm

    out = torch.empty(1000, 64)
    assert streams(out, 64, True) and not streams(out, 64, False)
    assert not streams(out, 8, True)                            # rows of 32 bytes: lines shared by two rows
    assert not streams(torch.empty(64001)[1:].view(1000, 64), 64, True)    # a start 4 bytes past a line
    assert streams(out, 64, True, widths=(32, 64)) and not streams(out, 64, True, widths=(16, 32))
    assert streams(out, 64, True, min_row_bytes=256) and not streams(out, 64, True, min_row_bytes=257)
    assert not streams(out, 64, None, min_row_bytes=512)        # a kernel's minimum holds with auto as well
    monkeypatch.setattr(spmm, "L3_BYTES", out.numel() * 4)      # auto: only results larger than the L3
    assert not streams(out, 64)
    monkeypatch.setattr(spmm, "L3_BYTES", out.numel() * 4 - 1)
    assert streams(out, 64)


@pytest.mark.parametrize("wide", [False, True], ids=["acc", "f64run"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_load_run_widens_as_load(dtype, wide):
    src = _specials(dtype).to(dtype)
    acc = np.float64 if dtype == torch.float64 or wide else np.float32
    vec, scalar = np.empty(src.numel(), acc), np.empty(src.numel(), acc)
    _load_both(kernel_view(src), vec, scalar)
    assert np.array_equal(vec.view(np.uint64 if acc == np.float64 else np.uint32),
                          scalar.view(np.uint64 if acc == np.float64 else np.uint32))
    assert np.array_equal(vec, src.to(torch.float64).numpy().astype(acc), equal_nan=True)


@njit
def _fold(x, out, n, m):
    run = stack_acc(x, 64)
    for i in range(64):
        run[i] = x[i]
    if n == 64 and m == 8:
        fold_adjacent(run, 64, 8)
    elif n == 64 and m == 4:
        fold_adjacent(run, 64, 4)
    elif n == 32 and m == 4:
        fold_adjacent(run, 32, 4)
    else:
        fold_adjacent(run, 8, 8)
    for i in range(m):
        out[i] = run[i]
    for i in range(m, 64):                        # the folded part is scratch; the rest is left as it was
        out[i] = run[i] if i >= n else x[i]


@pytest.mark.parametrize("n, m", [(64, 8), (64, 4), (32, 4), (8, 8)])
def test_fold_adjacent_sums_consecutive_groups(n, m):
    # small integers: every order of the sums is exact, so the result must equal the grouped sum exactly
    x = torch.randint(-1000, 1000, (64,), generator=torch.Generator().manual_seed(n + m)).to(torch.float32)
    out = np.empty(64, np.float32)
    _fold(x.numpy(), out, n, m)
    assert torch.equal(torch.from_numpy(out[:m]), x[:n].reshape(m, n // m).sum(1))


@njit
def _muls(a, b, s, out_scalar, out_array):
    ra, rb, r1, r2 = stack_acc(a, 8), stack_acc(a, 8), stack_acc(a, 8), stack_acc(a, 8)
    for i in range(8):
        ra[i] = a[i]
        rb[i] = b[i]
    mul_run(r1, ra, s, 8)
    mul_run(r2, ra, rb, 8)
    mul_run(ra, ra, ra, 8)                        # in place
    for i in range(8):
        out_scalar[i] = r1[i]
        out_array[i] = r2[i] + ra[i]


def test_mul_run_multiplies_each_lane():
    a = np.array([1.5, -2.0, 0.0, np.inf, 3.0, 1e-20, -7.25, 1e15], np.float32)
    b = np.array([2.0, 0.5, -1.0, 2.0, np.nan, 1e-20, 4.0, 1e15], np.float32)
    s1, s2 = np.empty(8, np.float32), np.empty(8, np.float32)
    _muls(a, b, np.float32(-3.0), s1, s2)
    assert np.array_equal(s1, a * np.float32(-3.0))
    assert np.array_equal(s2, a * b + a * a, equal_nan=True)


@njit(error_model="numpy")      # as the kernels: a division by zero gives inf/NaN
def _divisions(s, w, vec_recip, vec_grad, scalar_recip, scalar_grad, one, zero):
    rs, rw, rr, rg = stack_acc(s, 8), stack_acc(s, 8), stack_acc(s, 8), stack_acc(s, 8)
    for b in range(0, s.size, 8):
        for i in range(8):
            rs[i] = s[b + i]
            rw[i] = w[b + i]
        recip_run(rr, rw, one, 8)
        div_grad_run(rg, rs, rw, 8)
        for i in range(8):
            vec_recip[b + i] = rr[i]
            vec_grad[b + i] = rg[i]
            scalar_recip[b + i] = one / w[b + i]
            scalar_grad[b + i] = _div_grad(s[b + i], w[b + i], zero)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_recip_and_div_grad_runs_give_the_scalar_bits(dtype):
    # u_div_e's edge gradient -s / w^2, 0 where s == 0 and w^2 is not positive (a zero, NaN or underflowing
    # weight): every pairing of sums and weights among zeros of both signs, infinities, NaN, subnormals, weights
    # whose square underflows or overflows, and ordinary values, against the scalar helper bit for bit
    tiny = np.finfo(dtype).tiny
    big = np.finfo(dtype).max / 4                 # its square overflows
    vals = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, tiny, tiny / 8, 1e-30, 3e38, big, 7.0, -1e-3,
                     0.125, 5e-324 if dtype == np.float64 else 1e-45], dtype)
    s, w = [a.ravel().copy() for a in np.meshgrid(vals, vals)]
    out = [np.empty_like(s) for _ in range(4)]
    _divisions(s, w, *out, dtype(1), dtype(0))
    bits = np.int32 if dtype == np.float32 else np.int64
    for vec, scalar in ((out[0], out[2]), (out[1], out[3])):
        same = (vec.view(bits) == scalar.view(bits)) | (np.isnan(vec) & np.isnan(scalar))
        assert same.all(), (s[~same], w[~same], vec[~same], scalar[~same])
    assert (out[1][(s == 0) & (w == 0)] == 0).all()             # an edge that won nothing: 0, not NaN
