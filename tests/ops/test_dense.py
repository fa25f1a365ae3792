"""mpgraph.ops.dense: 16-bit linear maps as float32 products of the exact upcasts.

The float32 route is forced with ``MPGRAPH_HALF_MATMUL=fp32`` so that it is tested on every CPU (on one with
a fast 16-bit matmul the default would pick torch's kernel). Values and gradients are compared with float64
products of the same 16-bit operands (the format's tolerance, tests/tolerances.py) and with torch's own
16-bit kernel. gradcheck needs float64 operands, which never take this route: the float64 comparisons of
the gradients (also of a double backward) stand in for it.
"""

import pytest
import torch
from torch.nn import functional as F

import mpgraph
from mpgraph import precision
from mpgraph.ops import dense
from tolerances import MODEL_TOL, TOL

HALF = [torch.bfloat16, torch.float16]


def _close(got, ref, dtype, model=False):
    """``got`` against a float64 ``ref`` at ``dtype``'s tolerance; atol scaled to ``ref``'s magnitude (sums
    of products grow with the number of terms; the tolerance is relative to the largest of them)."""
    rtol, atol = (MODEL_TOL if model else TOL)[dtype]
    scale = max(1.0, ref.double().abs().max().item()) if ref.numel() else 1.0
    torch.testing.assert_close(got.double(), ref.double(), rtol=rtol, atol=atol * scale)


@pytest.fixture
def upcast(monkeypatch):
    monkeypatch.setenv(precision.HALF_MATMUL_ENV, "fp32")


@pytest.fixture
def native(monkeypatch):
    monkeypatch.setenv(precision.HALF_MATMUL_ENV, "native")


def _operands(dtype, rows=37, k=23, n=11, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, k, generator=gen).to(dtype)
    w = torch.randn(n, k, generator=gen).to(dtype)
    b = torch.randn(n, generator=gen).to(dtype)
    return x, w, b


def _f64_linear_grads(x, w, b, g):
    x64, w64, b64 = (t.detach().double().requires_grad_() for t in (x, w, b))
    y = F.linear(x64, w64, b64)
    y.backward(g.double())
    return y.detach(), x64.grad, w64.grad, b64.grad


@pytest.mark.parametrize("dtype", HALF)
def test_linear_matches_float64_values_and_grads(upcast, dtype):
    x, w, b = (t.requires_grad_() for t in _operands(dtype))
    assert dense.upcasts(x, w, b)
    y = dense.linear(x, w, b)
    assert y.dtype == dtype and y.shape == (37, 11)
    g = torch.randn(y.shape).to(dtype)
    y.backward(g)
    y64, gx64, gw64, gb64 = _f64_linear_grads(x, w, b, g)
    for got, ref in ((y, y64), (x.grad, gx64), (w.grad, gw64), (b.grad, gb64)):
        assert got.dtype == dtype
        # each entry is a sum of up to 37 products computed in float32 and rounded once
        _close(got, ref, dtype)


@pytest.mark.parametrize("dtype", HALF)
def test_linear_equals_torch_half_kernel(dtype, monkeypatch):
    x, w, b = _operands(dtype, rows=20, k=64, n=8)
    monkeypatch.setenv(precision.HALF_MATMUL_ENV, "native")
    ref = F.linear(x, w, b)
    monkeypatch.setenv(precision.HALF_MATMUL_ENV, "fp32")
    got = dense.linear(x, w, b)
    # both accumulate in float32 and round once; they may differ by the last bit (summation order)
    spacing = torch.finfo(dtype).eps * ref.double().abs().clamp_min(1)
    assert ((got.double() - ref.double()).abs() <= spacing).all()


@pytest.mark.parametrize("dtype", HALF)
def test_row_blocks_give_the_unblocked_result(upcast, dtype, monkeypatch):
    x, w, b = (t.requires_grad_() for t in _operands(dtype, rows=50, k=16, n=5))
    y_one = dense.linear(x, w, b)
    grads_one = torch.autograd.grad(y_one.sum(), (x, w, b))
    monkeypatch.setattr(dense, "BLOCK_ELEMENTS", 16 * 3)      # 3 rows per block: 17 blocks, the last short
    y_blk = dense.linear(x, w, b)
    grads_blk = torch.autograd.grad(y_blk.sum(), (x, w, b))
    assert torch.equal(y_one, y_blk)
    assert torch.equal(grads_one[0], grads_blk[0]) and torch.equal(grads_one[2], grads_blk[2])
    # the weight gradient sums the blocks' float32 partial products in another order: within an ulp
    _close(grads_blk[1], grads_one[1], dtype)


def test_batched_rows_and_matmul(upcast):
    x = torch.randn(3, 4, 6).bfloat16()
    w = torch.randn(6, 2).bfloat16()
    got = dense.matmul(x, w)
    ref = torch.matmul(x.double(), w.double())
    assert got.shape == (3, 4, 2) and got.dtype == torch.bfloat16
    _close(got, ref, torch.bfloat16)


def test_empty_rows(upcast):
    x = torch.zeros(0, 5, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(3, 5).bfloat16().requires_grad_()
    y = dense.linear(x, w)
    assert y.shape == (0, 3)
    y.sum().backward()
    assert x.grad.shape == (0, 5) and torch.equal(w.grad, torch.zeros_like(w))


@pytest.mark.parametrize("dtype", HALF)
def test_autocast_rounds_like_autocast_and_keeps_float32_grads(upcast, dtype):
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(30, 12, generator=gen, requires_grad=True)
    w = torch.randn(7, 12, generator=gen, requires_grad=True)
    b = torch.randn(7, generator=gen, requires_grad=True)
    with torch.autocast("cpu", dtype=dtype):
        assert dense.upcasts(x, w, b)
        y = dense.linear(x, w, b)
    assert y.dtype == dtype
    y.float().sum().backward()
    assert x.grad.dtype == w.grad.dtype == b.grad.dtype == torch.float32
    # the product of the operands rounded to the autocast dtype, as autocast's own matmul computes it
    ref = F.linear(*(t.detach().to(dtype).double() for t in (x, w, b)))
    _close(y, ref, dtype)
    _close(x.grad, torch.ones(30, 7).double() @ w.detach().to(dtype).double(), dtype)


def test_double_backward(upcast):
    x, w, _ = _operands(torch.bfloat16, rows=6, k=4, n=3)
    x.requires_grad_()
    w.requires_grad_()
    gx, = torch.autograd.grad(dense.linear(x, w).pow(2).sum(), x, create_graph=True)
    gx.sum().backward()
    x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
    gx64, = torch.autograd.grad(F.linear(x64, w64).pow(2).sum(), x64, create_graph=True)
    gx64.sum().backward()
    # a chain of 16-bit roundings (y, 2y, the products): the multi-op tolerance
    _close(gx, gx64, torch.bfloat16, model=True)
    _close(w.grad, w64.grad, torch.bfloat16, model=True)


def test_inputs_not_modified(upcast):
    x, w, b = _operands(torch.bfloat16)
    before = [t.clone() for t in (x, w, b)]
    dense.linear(x, w, b)
    assert all(torch.equal(a, t) for a, t in zip(before, (x, w, b)))


def test_native_mode_is_torch_itself(native):
    x, w, b = _operands(torch.bfloat16)
    assert not dense.upcasts(x, w, b)
    assert torch.equal(dense.linear(x, w, b), F.linear(x, w, b))


def test_float32_is_torch_itself(upcast):
    x, w, b = _operands(torch.bfloat16)
    x32, w32, b32 = (t.float() for t in (x, w, b))
    assert torch.equal(dense.linear(x32, w32, b32), F.linear(x32, w32, b32))
    assert torch.equal(dense.matmul(x32, w32.t()), torch.matmul(x32, w32.t()))


def test_mixed_dtypes_and_bad_shapes_give_torchs_errors(upcast):
    x, w, _ = _operands(torch.bfloat16)
    assert not dense.upcasts(x, w.float())
    with pytest.raises(RuntimeError):
        dense.linear(x, w.float())
    with pytest.raises(RuntimeError):
        dense.linear(x, w[:, :5])
    with pytest.raises(RuntimeError):
        dense.matmul(x, w)                      # (37, 23) @ (11, 23)


def test_bad_environment_value(monkeypatch):
    monkeypatch.setenv(precision.HALF_MATMUL_ENV, "fast")
    with pytest.raises(ValueError, match="MPGRAPH_HALF_MATMUL must be one of"):
        precision.native_half_matmul(torch.bfloat16)


def test_float32_and_cuda_are_always_native(upcast):
    assert precision.native_half_matmul(torch.float32)
    assert precision.native_half_matmul(torch.bfloat16, "cuda")
    assert not precision.native_half_matmul(torch.bfloat16)


def test_the_route_is_chosen_in_dispatch(upcast):
    """dense asks mpgraph.ops._dispatch for its route: the 16-bit dtype, or None for torch's kernel."""
    from mpgraph.ops import _dispatch

    x, w, b = _operands(torch.float16)
    assert _dispatch.dense_upcast_dtype(x, w, b) is torch.float16
    assert _dispatch.dense_upcast_dtype(x, w, None) is torch.float16       # no bias
    assert _dispatch.dense_upcast_dtype(x.float(), w.float()) is None      # float32: torch's own
    assert _dispatch.dense_upcast_dtype(x, w.bfloat16()) is None           # mixed: torch's own error
    assert _dispatch.dense_upcast_dtype(x.to("meta"), w.to("meta")) is None  # not a CPU tensor
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert _dispatch.dense_upcast_dtype(x.float(), w.float()) is torch.bfloat16
        assert _dispatch.dense_upcast_dtype(x.double(), w.float()) is None  # autocast leaves float64 alone


@pytest.mark.parametrize("layer", ["graph", "gat"])
def test_layers_take_the_route_with_the_same_results(layer, monkeypatch):
    torch.manual_seed(0)
    g = mpgraph.rand_graph(40, 160)
    g = mpgraph.add_self_loop(g)
    conv = mpgraph.nn.GraphConv(24, 8) if layer == "graph" else mpgraph.nn.GATConv(24, 4, num_heads=2)
    conv = conv.to(torch.bfloat16)
    x = torch.randn(40, 24).bfloat16()
    outs = {}
    for mode in ("native", "fp32"):
        monkeypatch.setenv(precision.HALF_MATMUL_ENV, mode)
        conv.zero_grad()
        out = conv(g, x)
        out.float().pow(2).sum().backward()
        outs[mode] = (out, [p.grad.clone() for p in conv.parameters()])
    (a, ga), (b, gb) = outs["native"], outs["fp32"]
    _close(b, a, torch.bfloat16, model=True)
    for p, q in zip(gb, ga):
        _close(p, q, torch.bfloat16, model=True)


def test_project_keeps_module_hooks(upcast):
    fc = torch.nn.Linear(5, 3).bfloat16()
    seen = []
    fc.register_forward_hook(lambda m, i, o: seen.append(o.shape))
    from mpgraph.nn.utils import project
    project(fc, torch.randn(4, 5).bfloat16())
    assert seen == [torch.Size([4, 3])]
