"""The fast paths of the CPU edge softmax against float64 formulas, with edges in slot order
(``eid=None``) and scattered (``eid`` a permutation).

Heads that divide 16 with an fp32 accumulator take the 16-lane vector passes (explicit LLVM vectors,
masked loads and stores for a row's last partial step, a shuffle butterfly per head; with ``eid``, each
row copied into contiguous scratch rows and back, hubs with one masked ``H``-lane step per edge); other head
counts and fp64 take the scalar walks. These tests
cover both, with row lengths around every multiple of 16 values, empty rows, a hub longer than the exp
scratch, all -inf heads and mixed dtypes.
"""

import math

import pytest
import torch

pytest.importorskip("numba")

from tolerances import assert_close  # noqa: E402

from mpgraph.ops import _cpu as K  # noqa: E402

F64, F32, F16, BF16 = torch.float64, torch.float32, torch.float16, torch.bfloat16


def _indptr(degrees):
    indptr = torch.zeros(len(degrees) + 1, dtype=torch.int64)
    indptr[1:] = torch.tensor(degrees, dtype=torch.int64).cumsum(0)
    return indptr


def _rows(indptr):
    """Destination row of every slot."""
    return torch.repeat_interleave(torch.arange(indptr.numel() - 1), indptr[1:] - indptr[:-1])


def _ref_forward(indptr, x):
    """Softmax over each row's slots per head, in float64 (NaN for a head whose logits are all -inf)."""
    rows, R = _rows(indptr), indptr.numel() - 1
    flat = x.double().reshape(x.shape[0], -1)
    m = torch.full((R, flat.shape[1]), -math.inf, dtype=F64)
    m.scatter_reduce_(0, rows[:, None].expand_as(flat), flat, "amax")
    ex = torch.exp(flat - m[rows])
    z = torch.zeros(R, flat.shape[1], dtype=F64).index_add_(0, rows, ex)
    return (ex / z[rows]).reshape(x.shape)


def _ref_backward(indptr, s, g):
    rows, R = _rows(indptr), indptr.numel() - 1
    sg = (s.double() * g.double()).reshape(s.shape[0], -1)
    acc = torch.zeros(R, sg.shape[1], dtype=F64).index_add_(0, rows, sg)
    return s.double() * (g.double() - acc[rows].reshape(s.shape))


def _assert_close_nan(actual, expected, dtype):
    nan = expected.isnan()
    assert torch.equal(actual.isnan(), nan)
    assert_close(actual[~nan], expected[~nan], dtype)


ORDERS = ["slots", "eid"]


class _Order:
    """Runs the kernels with edges in slot order (``slots``) or scattered by a random permutation ``eid``
    (slot ``k`` holds edge ``eid[k]``), taking and returning slot-ordered tensors either way."""

    def __init__(self, name, E, seed=0):
        self.perm = None
        if name != "slots":
            self.perm = torch.randperm(E, generator=torch.Generator().manual_seed(seed + 100))
            self.eid = self.perm

    def _edges(self, t):
        if self.perm is None:
            return t
        out = torch.empty_like(t)
        out[self.perm] = t
        return out

    def forward(self, indptr, x, **kw):
        if self.perm is None:
            return K.edge_softmax_forward(indptr, None, x, **kw)
        return K.edge_softmax_forward(indptr, self.eid, self._edges(x), **kw)[self.perm]

    def backward(self, indptr, s, g, **kw):
        if self.perm is None:
            return K.edge_softmax_backward(indptr, None, s, g, **kw)
        return K.edge_softmax_backward(indptr, self.eid, self._edges(s), self._edges(g), **kw)[self.perm]


# every remainder of deg * H modulo 16 for the small H, empty rows between, and a few whole vectors
DEGREES = [0, 1, 2, 3, 4, 5, 6, 7, 0, 8, 9, 11, 13, 15, 16, 17, 0, 0, 31, 33, 47, 64, 100, 2, 0]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("H", [1, 2, 4, 8, 16, 3, 17])
@pytest.mark.parametrize("dtype", [F32, BF16, F16], ids=["f32", "bf16", "f16"])
def test_rows_match_float64(H, dtype, order):
    indptr = _indptr(DEGREES)
    E = int(indptr[-1])
    run = _Order(order, E, H)
    gen = torch.Generator().manual_seed(H)
    x = (torch.randn(E, H, generator=gen, dtype=F64) * 6).to(dtype)
    s = run.forward(indptr, x)
    assert s.dtype == dtype and s.shape == x.shape
    expected = _ref_forward(indptr, x)
    assert_close(s, expected, dtype)
    g = torch.randn(E, H, generator=gen, dtype=F64).to(dtype)
    grad = run.backward(indptr, expected.to(dtype), g)
    assert grad.dtype == dtype
    assert_close(grad, _ref_backward(indptr, expected.to(dtype), g), dtype)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("H", [4, 3])
def test_mixed_dtypes(H, order):
    """Logits in one 16-bit format, output in another or fp32; s and g in different formats."""
    indptr = _indptr(DEGREES)
    E = int(indptr[-1])
    run = _Order(order, E)
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(E, H, 1, generator=gen, dtype=F64) * 4
    for src, dst in ((BF16, F32), (F16, BF16), (F32, F16), (BF16, F64)):
        xd = x.to(src)
        s = run.forward(indptr, xd, out_dtype=dst)
        assert s.dtype == dst
        assert_close(s, _ref_forward(indptr, xd), dst)
    s = _ref_forward(indptr, x).to(BF16)
    g = torch.randn(E, H, 1, generator=gen, dtype=F64).to(F16)
    grad = run.backward(indptr, s, g)
    assert grad.dtype == F32
    assert_close(grad, _ref_backward(indptr, s, g), F32)
    grad = run.backward(indptr, s, g, out_dtype=BF16)
    assert grad.dtype == BF16
    assert_close(grad, _ref_backward(indptr, s, g), BF16)


@pytest.mark.parametrize("order", ["slots", "eid"])
@pytest.mark.parametrize("H", [1, 4, 3])
def test_hub_longer_than_scratch_and_extremes(H, order):
    """A 100,000-edge row (exp computed twice), logits up to 110 (no overflow), -inf logits (weight 0) and
    a head whose logits are all -inf (NaN, as torch.softmax)."""
    indptr = _indptr([100_000, 5, 0, 19, 1])
    E = int(indptr[-1])
    x = torch.rand(E, H, generator=torch.Generator().manual_seed(5), dtype=F64) * 50 + 60
    x[::7, 0] = -math.inf
    x[100_000:100_005, H - 1] = -math.inf  # row 1: head H - 1 has only -inf logits
    run = _Order(order, E)
    for dtype in (F32, BF16):
        xd = x.to(dtype)
        s = run.forward(indptr, xd)
        expected = _ref_forward(indptr, xd)
        _assert_close_nan(s, expected, dtype)
        assert bool((s[:100_000:7, 0] == 0).all())
        assert bool(s[100_000:100_005, H - 1].isnan().all())
        if H > 1:
            assert not bool(s[100_000:100_005, 0].isnan().any())


@pytest.mark.parametrize("H", [1, 2, 4, 16])
@pytest.mark.parametrize("dtypes", [(F32, F32), (BF16, BF16), (F16, F16), (BF16, F32), (F16, BF16)],
                         ids=["f32", "bf16", "f16", "bf16-f32", "f16-bf16"])
def test_scattered_rows_equal_the_contiguous_path(H, dtypes):
    """Scattered rows are copied into scratch rows and take the contiguous path's passes, so both orders give
    the same bits, forward and backward; a hub beyond the scratch (scalar or masked steps per edge) still
    matches float64."""
    src, dst = dtypes
    for degrees in (DEGREES * 3, [100_000 // H, 5, 0, 19]):
        indptr = _indptr(degrees)
        E = int(indptr[-1])
        gen = torch.Generator().manual_seed(E)
        x = (torch.randn(E, H, generator=gen, dtype=F64) * 6).to(src)
        g = torch.randn(E, H, generator=gen, dtype=F64).to(src)
        slots, scattered = _Order("slots", E), _Order("eid", E, seed=E)
        s = slots.forward(indptr, x, out_dtype=dst)
        grad = slots.backward(indptr, s, g, out_dtype=dst)
        s_eid = scattered.forward(indptr, x, out_dtype=dst)
        grad_eid = scattered.backward(indptr, s, g, out_dtype=dst)
        if max(degrees) * H <= 16384:
            assert torch.equal(s_eid, s) and torch.equal(grad_eid, grad)
        assert_close(s_eid, _ref_forward(indptr, x), dst)
        assert_close(grad_eid, _ref_backward(indptr, s, g), dst)


@pytest.mark.parametrize("order", ["slots", "eid"])
def test_threads_do_not_change_results(order):
    indptr = _indptr(DEGREES * 200)
    x = torch.randn(int(indptr[-1]), 4, generator=torch.Generator().manual_seed(9)).to(BF16)
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(10))
    run = _Order(order, x.shape[0])
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        s1 = run.forward(indptr, x)
        g1 = run.backward(indptr, s1, g)
        torch.set_num_threads(2)
        s2 = run.forward(indptr, x)
        g2 = run.backward(indptr, s2, g)
    finally:
        torch.set_num_threads(old)
    assert torch.equal(s1, s2) and torch.equal(g1, g2)


def test_vector_exp_accuracy():
    """The 16-lane exp of the vector passes is within 2 ulp of exp, with the scalar exp_f32's specials."""
    import numpy as np
    from numba import njit

    from mpgraph.ops._cpu._core import stack_acc
    from mpgraph.ops._cpu.edge_softmax import LANES, _lanes_exp, _lanes_fill

    @njit
    def exp_all(x, out):
        z = stack_acc(out, 16)
        m = stack_acc(out, 16)
        _lanes_fill(m, 0.0)
        _lanes_fill(z, 0.0)
        for i in range(0, x.size, LANES):
            _lanes_exp(z, m, x, i, min(LANES, x.size - i), out, i)

    x = torch.cat([torch.linspace(-87.0, 0.5, 400_001), torch.tensor([-math.inf, -1e30, -88.0, 89.0, math.nan])])
    out = np.zeros(x.numel() + LANES, np.float32)
    exp_all(x.numpy(), out)
    out = torch.from_numpy(out[:x.numel()])
    exact = torch.exp(x[:-5].double())
    ulp = torch.finfo(F32).eps * exact
    assert float(((out[:-5].double() - exact).abs() / ulp).max()) <= 2.0
    assert out[-5:-2].tolist() == [0.0, 0.0, 0.0] and out[-2] == math.inf and math.isnan(out[-1])
