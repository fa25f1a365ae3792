"""The precision promise: float32 accumulation for half formats, dtype rules, autocast."""

import math

import pytest
import torch

import mpgraph.ops as ops
from mpgraph import precision
from mpgraph._index import Index
from mpgraph.base import DGLTypeError
from mpgraph.ops._dispatch import use_backend

BACKENDS = ["torch", "reference"]
HALF = [torch.float16, torch.bfloat16]


def star(n):
    """n edges from n distinct sources (1..n) into node 0: in-degree n at node 0, 0 elsewhere."""
    return Index.from_coo(torch.arange(n) + 1, torch.zeros(n, dtype=torch.int64), n + 1, n + 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fp16_sum_of_60000_ones_is_exact(backend):
    # float16 cannot add 1 to 2048: naive float16 accumulation would stop there
    assert torch.tensor(2048.0, dtype=torch.float16) + 1 == 2048
    index = star(60000)
    x = torch.ones(60001, 1, dtype=torch.float16)
    with use_backend(backend, strict=True):
        out = ops.copy_u_sum(index, x)
        out_e = ops.copy_e_sum(index, torch.ones(60000, dtype=torch.float16))
        out_w = ops.u_mul_e_sum(index, x, torch.ones(60000, dtype=torch.float16))
    assert out.dtype == torch.float16
    assert out[0, 0].item() == 60000.0
    assert out_e[0].item() == 60000.0
    assert out_w[0, 0].item() == 60000.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_fp16_backward_accumulates_in_fp32(backend):
    # one source with 60000 out-edges: its gradient is a 60000-term sum
    n = 60000
    index = Index.from_coo(torch.zeros(n, dtype=torch.int64), torch.arange(n), 1, n)
    x = torch.ones(1, 2, dtype=torch.float16, requires_grad=True)
    with use_backend(backend, strict=True):
        ops.copy_u_sum(index, x).backward(torch.ones(n, 2, dtype=torch.float16))
    assert x.grad.dtype == torch.float16
    assert (x.grad == 60000.0).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_fp16_mean_of_100000_ones_is_one(backend):
    index = star(100000)
    with use_backend(backend, strict=True):
        out = ops.copy_u_mean(index, torch.ones(100001, 3, dtype=torch.float16))
        out_e = ops.copy_e_mean(index, torch.ones(100000, dtype=torch.float16))
    assert out.dtype == torch.float16
    assert (out[0] == 1.0).all()          # the sum (100000) overflows float16; dividing first does not
    assert (out[1:] == 0.0).all()
    assert out_e[0].item() == 1.0


def ulp(x, dtype):
    """Spacing of ``dtype`` numbers at the magnitude of ``x`` (float64 tensor)."""
    mantissa = {torch.float16: 10, torch.bfloat16: 7}[dtype]
    tiny = torch.finfo(dtype).tiny
    exp = torch.floor(torch.log2(x.abs().clamp(min=tiny)))
    return torch.pow(2.0, exp - mantissa)


@pytest.mark.parametrize("dtype", HALF, ids=["f16", "bf16"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_half_dot_1024_within_2_ulp(dtype, backend):
    gen = torch.Generator().manual_seed(0)
    N, E, D = 30, 60, 1024
    src, dst = torch.randint(0, N, (E,), generator=gen), torch.randint(0, N, (E,), generator=gen)
    index = Index.from_coo(src, dst, N, N)
    x = torch.randn(N, 2, D, generator=gen).to(dtype)
    y = torch.randn(N, 2, D, generator=gen).to(dtype)
    with use_backend(backend, strict=True):
        out = ops.u_dot_v(index, x, y)
    assert out.dtype == dtype and out.shape == (E, 2, 1)
    exact32 = (x.float()[src] * y.float()[dst]).sum(-1, keepdim=True)        # float32 result
    expected = exact32.to(dtype).double()
    assert ((out.double() - expected).abs() <= 2 * ulp(expected, dtype)).all()


@pytest.mark.parametrize("dtype", HALF, ids=["f16", "bf16"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_half_max_min_zero_in_degree_is_zero(dtype, backend):
    index = Index.from_coo(torch.tensor([0, 1, 2, 3, 3]), torch.tensor([1, 2, 0, 0, 2]), 5, 5)
    x = -torch.arange(1, 6, dtype=dtype).unsqueeze(1)          # all negative: max over edges is < 0
    w = torch.full((5, 1), 3.0, dtype=dtype)
    with use_backend(backend, strict=True):
        for out in (ops.copy_u_max(index, x), ops.copy_u_min(index, -x), ops.u_add_e_max(index, x, w),
                    ops.copy_e_min(index, w)):
            assert out.dtype == dtype
            assert torch.isfinite(out).all()
            assert out[3].item() == 0.0 and out[4].item() == 0.0   # no in-edges
    assert ops.copy_u_max(index, x)[0].item() == -3.0


def test_half_works_on_cpu_end_to_end():
    index = Index.from_coo(torch.tensor([0, 1, 2, 2]), torch.tensor([1, 2, 0, 1]), 3, 3)
    for dtype in HALF:
        x = torch.randn(3, 4).to(dtype).requires_grad_()
        w = torch.rand(4, 1).to(dtype).requires_grad_()
        a = ops.edge_softmax(index, ops.u_dot_v(index, x, x))
        h = ops.u_mul_e_sum(index, x, a * w) + ops.copy_u_max(index, x)
        h.sum().backward()
        assert h.dtype == dtype and x.grad.dtype == dtype and w.grad.dtype == dtype
        assert torch.isfinite(x.grad.float()).all() and torch.isfinite(w.grad.float()).all()


def test_mixed_dtypes_promote():
    index = Index.from_coo(torch.tensor([0, 1]), torch.tensor([1, 1]), 2, 2)
    xb = torch.ones(2, 3, dtype=torch.bfloat16, requires_grad=True)
    w32 = torch.full((2, 1), 0.5, requires_grad=True)
    out = ops.u_mul_e_sum(index, xb, w32)
    assert out.dtype == torch.float32
    out.sum().backward()
    assert xb.grad.dtype == torch.bfloat16 and w32.grad.dtype == torch.float32
    xh = torch.ones(2, 3, dtype=torch.float16)
    assert ops.u_add_v(index, xh, xb.detach()).dtype == torch.float32
    assert ops.u_dot_v(index, xh, xh.double()).dtype == torch.float64


def test_autocast_cpu_linear_meets_fp32_edge_weight():
    torch.manual_seed(0)
    index = Index.from_coo(torch.tensor([0, 1, 2, 2]), torch.tensor([1, 2, 0, 1]), 3, 3)
    lin = torch.nn.Linear(4, 5)
    feat = torch.randn(3, 4)
    w = torch.rand(4, 1, requires_grad=True)                        # float32 edge weight
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = lin(feat)
        assert h.dtype == torch.bfloat16
        out = ops.u_mul_e_sum(index, h, w)
        att = ops.edge_softmax(index, ops.u_dot_v(index, h, h))
        logits32 = torch.randn(4, 1)
        soft = ops.edge_softmax(index, logits32)
        keep64 = ops.copy_u_sum(index, torch.ones(3, 2, dtype=torch.float64))
    assert out.dtype == torch.bfloat16
    assert att.dtype == torch.bfloat16
    assert soft.dtype == torch.bfloat16                              # computed in fp32, returned in bf16
    torch.testing.assert_close(soft, ops.edge_softmax(index, logits32).to(torch.bfloat16), rtol=0, atol=0)
    assert keep64.dtype == torch.float64                             # autocast leaves float64 alone
    expected = ops.u_mul_e_sum(index, h.detach(), w.detach().to(torch.bfloat16))
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    out.float().sum().backward()
    assert w.grad.dtype == torch.float32 and lin.weight.grad.dtype == torch.float32


def test_precision_helpers():
    assert precision.accum_dtype(torch.float16) == torch.float32
    assert precision.accum_dtype(torch.bfloat16) == torch.float32
    assert precision.accum_dtype(torch.float32) == torch.float32
    assert precision.accum_dtype(torch.float64) == torch.float64
    assert precision.result_dtype(None, torch.ones(1, dtype=torch.float16), torch.ones(1, dtype=torch.bfloat16)) \
        == torch.float32
    assert all(precision.is_float_dtype(d) for d in precision.FLOAT_DTYPES)
    assert not precision.is_float_dtype(torch.int32)
    assert precision.is_half_dtype(torch.bfloat16) and not precision.is_half_dtype(torch.float32)
    with pytest.raises(DGLTypeError, match="floating-point"):
        precision.check_float_feature("h", torch.ones(2, dtype=torch.int64))
    with pytest.raises(TypeError, match="torch.Tensor"):
        precision.check_float_feature("h", [1.0, 2.0])
    assert precision.autocast_dtype("cpu") is None
    with torch.autocast("cpu", dtype=torch.float16):
        assert precision.autocast_enabled("cpu")
        assert precision.autocast_dtype("cpu") == torch.float16
        a, b, c = precision.autocast_cast(torch.float16, torch.ones(1), torch.ones(1, dtype=torch.float64), None)
        assert (a.dtype, b.dtype, c) == (torch.float16, torch.float64, None)
        with precision.autocast_disabled("cpu"):
            assert not precision.autocast_enabled("cpu")


def test_output_dtype_is_input_dtype():
    index = Index.from_coo(torch.tensor([0, 1]), torch.tensor([1, 0]), 2, 2)
    for dtype in precision.FLOAT_DTYPES:
        x = torch.ones(2, 2, dtype=dtype)
        e = torch.ones(2, 2, dtype=dtype)
        for out in (ops.copy_u_mean(index, x), ops.u_div_e_max(index, x, e), ops.e_dot_v(index, e, x),
                    ops.edge_softmax(index, e), ops.segment_reduce(torch.tensor([2]), x, "mean")):
            assert out.dtype == dtype
    assert math.isclose(ops.copy_u_mean(index, torch.ones(2, 1, dtype=torch.bfloat16))[0].item(), 1.0)


@pytest.mark.parametrize("divide", [False, True], ids=["mul", "div"])
@pytest.mark.parametrize("x_dtype,s_dtype,out_dtype", [
    (torch.bfloat16, torch.float32, torch.bfloat16), (torch.float16, torch.float32, torch.float32),
    (torch.float32, torch.float32, torch.bfloat16), (torch.bfloat16, torch.float64, torch.bfloat16),
    (torch.float32, torch.float32, torch.float32)], ids=["bf16", "f16-to-f32", "f32-to-bf16", "bf16-f64", "f32"])
@pytest.mark.parametrize("route", ["rowwise_scale", "cpu", "torch"])
def test_rowwise_scale_matches_torch_bit_for_bit(monkeypatch, route, divide, x_dtype, s_dtype, out_dtype):
    """The row scaling (mean backward, GraphConv norms) gives exactly torch's mixed-dtype result through the
    public helper and through each route :func:`mpgraph.ops._dispatch.row_scale` can take: the Numba pass and the
    torch backend's blocks across chunk boundaries (7 rows per chunk: 10 chunks, a short last one); ``x``
    non-contiguous too, and left unchanged. A forced backend does not apply to it, and nothing is recorded."""
    from mpgraph import precision
    from mpgraph.ops import _cpu, _dispatch, _torch_backend
    from mpgraph.ops._cpu import _backend as cpu_backend

    monkeypatch.setattr(_torch_backend, "ROW_CHUNK", 7 * 3 * 2)
    gen = torch.Generator().manual_seed(4)
    for x in ((torch.randn(67, 3, 2, generator=gen) * 100).to(x_dtype),
              (torch.randn(67, 3, 4, generator=gen) * 100).to(x_dtype)[:, :, ::2]):
        s = torch.randint(1, 1000, (67, 1, 1), generator=gen).to(s_dtype)
        before = x.clone()
        if route == "rowwise_scale":
            with _dispatch.use_backend("reference", strict=True), _dispatch.record_backends() as ran:
                got = precision.rowwise_scale(x, s, out_dtype, divide=divide)
            assert ran == []
        elif route == "cpu":
            if not (_cpu.available() and cpu_backend.row_scale_supports(x, s, out_dtype, divide)):
                assert s_dtype == torch.float64 or not _cpu.available()     # the only calls it leaves
                continue
            got = cpu_backend.row_scale(x, s, out_dtype, divide)
        else:
            got = _torch_backend.row_scale(x, s, out_dtype, divide)
        expected = torch.empty(x.shape, dtype=out_dtype)
        (torch.div if divide else torch.mul)(x, s, out=expected)
        assert got.dtype == out_dtype and torch.equal(got, expected), route
        assert torch.equal(x, before)
