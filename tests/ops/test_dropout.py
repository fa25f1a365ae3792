"""mpgraph.ops.dropout: the CPU kernel against the reference's torch formula of the same seeded mask, the
mask's statistics, gradients on every backend, errors, and the nn module that uses it."""

import math

import numpy as np
import pytest
import torch

import mpgraph
from mpgraph.base import DGLError, DGLTypeError
from mpgraph.nn.utils import Dropout
from mpgraph.ops import _dispatch, _reference, dropout

pytest.importorskip("numba")

from mpgraph.ops._cpu import dropout as cpu_dropout  # noqa: E402

DTYPES = [torch.float64, torch.float32, torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_cpu_kernel_equals_reference_mask_and_values(dtype, p):
    x = (torch.randn(3001, 7, dtype=torch.float64) * 100).to(dtype)
    for seed in (0, 12345, 2 ** 63 + 99, 2 ** 64 - 1):
        y = cpu_dropout.dropout(x, p, seed)
        expected, saved = _reference.dropout(x, p, seed)
        assert saved is None and y.dtype == dtype and y.shape == x.shape
        assert torch.equal(y, expected)
        keep = _reference.dropout_keep(x.numel(), p, seed, x.device).reshape(x.shape)
        assert torch.equal(y == 0, ~keep | (x == 0))
        scaled = (x.to(torch.float64) / (1 - p))[keep]
        tol = {torch.bfloat16: 2 ** -8, torch.float16: 2 ** -11, torch.float32: 2 ** -23}.get(dtype, 1e-15)
        assert torch.allclose(y[keep].to(torch.float64), scaled, rtol=tol, atol=0)


def test_reference_chunks_continue_the_element_count():
    """The reference builds the mask in chunks; element i's draw must not depend on the chunk."""
    n = _reference._DROPOUT_CHUNK + 1000
    whole = _reference.dropout_keep(n, 0.5, 77, torch.device("cpu"))
    tail = _reference.dropout_keep(1000, 0.5, 77, torch.device("cpu"), start=n - 1000)
    assert torch.equal(whole[-1000:], tail)
    x = torch.ones(n)
    assert torch.equal(_reference.dropout(x, 0.5, 77)[0] != 0, whole)


def test_kernel_draw_past_2_to_the_32_elements_equals_the_reference():
    """Beyond 2^32 elements (not allocated here) the keys change with the index's high word: the kernel's
    ``keys`` and ``draw``, run for indices around 1 * 2^32 and 5 * 2^32, give the reference's mask there."""
    from numba import njit

    @njit
    def kept(seed, thr, start, n):
        out = np.empty(n, np.bool_)
        for j in range(n):
            i = start + j
            k1, k2 = cpu_dropout.keys(seed, i >> 32)
            out[j] = cpu_dropout.draw(k1, k2, i & cpu_dropout.MASK32) >= thr
        return out

    for start in ((1 << 32) - 700, (5 << 32) - 300, 0):
        for seed, p in ((7, 0.5), (2 ** 64 - 1, 0.2)):
            mine = kept(np.uint64(seed), np.uint32(cpu_dropout.threshold(p)), start, 1000)
            ref = _reference.dropout_keep(1000, p, seed, torch.device("cpu"), start=start)
            assert torch.equal(torch.from_numpy(mine), ref)
    across = _reference.dropout_keep(1 << 16, 0.5, 3, torch.device("cpu"), start=(1 << 32) - (1 << 15)).double()
    assert abs(float(across.mean()) - 0.5) < 6 * math.sqrt(0.25 / (1 << 16))


@pytest.mark.parametrize("p", [0.05, 0.5, 0.6, 0.95])
def test_keep_rate_and_independence(p):
    n = 1 << 21
    keep = _reference.dropout_keep(n, p, 2024, torch.device("cpu")).double()
    q = 1 - p
    sigma = math.sqrt(q * (1 - q) / n)
    assert abs(float(keep.mean()) - q) < 6 * sigma
    for lag in (1, 2, 4, 8, 16, 1000):  # neighbours (and lanes of one vector) are independent
        both = float((keep[:-lag] * keep[lag:]).mean())
        assert abs(both - q * q) < 6 * math.sqrt(q * q * (1 - q * q) / n)
    other = _reference.dropout_keep(n, p, 2025, torch.device("cpu")).double()
    assert abs(float((keep * other).mean()) - q * q) < 6 * math.sqrt(q * q * (1 - q * q) / n)


def test_results_do_not_depend_on_threads():
    x = torch.randn(1 << 18, dtype=torch.float32)
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        a = cpu_dropout.dropout(x, 0.3, 5)
        torch.set_num_threads(2)
        b = cpu_dropout.dropout(x, 0.3, 5)
    finally:
        torch.set_num_threads(old)
    assert torch.equal(a, b)


def test_non_contiguous_and_zero_dim_inputs():
    x = torch.randn(64, 33).t()
    torch.manual_seed(0)
    y = dropout(x, 0.5)
    torch.manual_seed(0)
    seed = int(torch.randint(0, 2 ** 63 - 1, ()).item())
    assert torch.equal(y, _reference.dropout(x.contiguous(), 0.5, seed)[0])
    s = torch.tensor(3.0)
    ys = dropout(s, 0.5)
    assert ys.shape == () and float(ys) in (0.0, 6.0)


@pytest.mark.parametrize("backend", ["cpu", "reference", "torch"])
def test_gradients_use_the_forward_mask(backend):
    x = torch.randn(40, 6, dtype=torch.float64, requires_grad=True)
    with _dispatch.use_backend(backend, strict=True):
        y = dropout(x, 0.4)
        (y * 3).sum().backward()
        assert torch.equal(x.grad == 0, y == 0)
        assert torch.allclose(x.grad[y != 0], torch.tensor(3 / 0.6, dtype=torch.float64))

        def fixed(t):
            torch.manual_seed(7)            # the seed (or torch's mask) is the same for every evaluation
            return dropout(t, 0.4)

        assert torch.autograd.gradcheck(fixed, (x.detach().requires_grad_(),))
        assert torch.autograd.gradgradcheck(fixed, (x.detach().requires_grad_(),))


def test_seeds_follow_torch_manual_seed():
    x = torch.randn(1000)
    torch.manual_seed(11)
    a, b = dropout(x, 0.5), dropout(x, 0.5)
    torch.manual_seed(11)
    assert torch.equal(dropout(x, 0.5), a) and not torch.equal(a, b)


def test_special_cases_and_input_untouched():
    x = torch.randn(50, 4)
    before = x.clone()
    assert dropout(x, 0.0) is x and dropout(x, 0.7, training=False) is x
    empty = torch.zeros(0, 3)
    assert dropout(empty, 0.5) is empty
    zero = dropout(x, 1.0)
    assert torch.equal(zero, torch.zeros_like(x))
    nan = torch.tensor([math.nan, 1.0])
    assert torch.isnan(dropout(nan, 1.0)[0])
    dropout(x, 0.5)
    assert torch.equal(x, before)


@pytest.mark.parametrize("p", [-0.1, 1.5, "0.5", True, None])
def test_bad_probability(p):
    with pytest.raises(DGLError, match=r"expected a probability p in \[0, 1\]"):
        dropout(torch.ones(3), p)


def test_bad_tensor():
    with pytest.raises(DGLTypeError, match="floating-point"):
        dropout(torch.ones(3, dtype=torch.int64), 0.5)
    with pytest.raises(DGLTypeError, match="torch.Tensor"):
        dropout([1.0, 2.0], 0.5)


def test_every_backend_registers_both_ops():
    for op in ("dropout", "dropout_backward"):
        assert _dispatch.backends(op) == ["cpu", "torch", "reference"]


def test_dropout_module():
    drop = Dropout(0.5)
    assert isinstance(drop, torch.nn.Dropout) and repr(drop) == repr(torch.nn.Dropout(0.5))
    x = torch.ones(2000)
    y = drop(x)
    assert set(y.unique().tolist()) <= {0.0, 2.0} and 800 < int((y != 0).sum()) < 1200
    assert drop.eval()(x) is x
    inplace = Dropout(0.5, inplace=True).train()
    z = torch.ones(100)
    out = inplace(z)
    assert out.data_ptr() == z.data_ptr() and set(z.unique().tolist()) <= {0.0, 2.0}


def test_layers_use_the_module():
    conv = mpgraph.nn.GATConv(4, 3, 2, feat_drop=0.2, attn_drop=0.3)
    assert isinstance(conv.attn_drop, Dropout) and isinstance(conv.feat_drop, Dropout)
    assert conv.attn_drop.p == 0.3
    assert isinstance(mpgraph.nn.SAGEConv(4, 3, "mean", feat_drop=0.1).feat_drop, Dropout)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_half_gradient_is_the_same_mask(dtype):
    x = torch.randn(100, 8).to(dtype).requires_grad_()
    torch.manual_seed(3)
    y = dropout(x, 0.25)
    torch.manual_seed(3)
    seed = int(torch.randint(0, 2 ** 63 - 1, ()).item())
    g = torch.randn(100, 8).to(dtype)
    y.backward(g)
    assert x.grad.dtype == dtype
    assert torch.equal(x.grad, cpu_dropout.dropout(g, 0.25, seed))
    assert torch.equal(y, cpu_dropout.dropout(x.detach(), 0.25, seed))
