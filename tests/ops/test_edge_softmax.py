"""edge_softmax against a dense masked softmax, the reference backend, gradcheck and invariances."""

import math

import pytest
import torch
from graph_cases import CASES, NONEMPTY
from tolerances import assert_close

import mpgraph.ops as ops
from mpgraph._index import Index
from mpgraph.ops._dispatch import backends, record_backends, use_backend

SHAPES = [(), (1,), (3,), (2, 1)]


def make_index(case, idtype=torch.int64):
    src, dst, n_src, n_dst = CASES[case]
    return Index.from_coo(src.to(idtype), dst.to(idtype), n_src, n_dst)


def dense_softmax(src, dst, n_src, n_dst, logits, norm_by="dst"):
    """softmax over a dense (nodes, E) mask, read back at each edge's own node."""
    E = src.numel()
    group, n = (dst, n_dst) if norm_by == "dst" else (src, n_src)
    flat = logits.reshape(E, math.prod(logits.shape[1:]))
    mask = torch.zeros(n, E, dtype=torch.bool)
    mask[group, torch.arange(E)] = True
    masked = torch.where(mask.unsqueeze(2), flat.unsqueeze(0), float("-inf"))     # (n, E, F)
    p = torch.softmax(masked, dim=1)
    return p[group, torch.arange(E)].reshape(logits.shape)


def rand_logits(E, shape, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return (4 * torch.rand((E,) + shape, generator=gen, dtype=torch.float64) - 2).to(dtype).double()


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("norm_by", ["dst", "src"])
def test_matches_dense(case, float_dtype, idtype, norm_by):
    src, dst, n_src, n_dst = CASES[case]
    index = make_index(case, idtype)
    for shape in SHAPES:
        x = rand_logits(src.numel(), shape, float_dtype)
        out = ops.edge_softmax(index, x.to(float_dtype), norm_by=norm_by)
        assert out.dtype == float_dtype and out.shape == x.shape
        assert_close(out, dense_softmax(src, dst, n_src, n_dst, x, norm_by), float_dtype)


@pytest.mark.parametrize("case", NONEMPTY)
def test_backward_matches_dense(case, float_dtype):
    src, dst, n_src, n_dst = CASES[case]
    index = make_index(case)
    for norm_by in ("dst", "src"):
        x = rand_logits(src.numel(), (2, 1), float_dtype, seed=1)
        g = rand_logits(src.numel(), (2, 1), float_dtype, seed=2)
        x64 = x.clone().requires_grad_()
        xs = x.to(float_dtype).requires_grad_()
        ops.edge_softmax(index, xs, norm_by=norm_by).backward(g.to(float_dtype))
        (dense_softmax(src, dst, n_src, n_dst, x64, norm_by) * g).sum().backward()
        assert xs.grad.dtype == float_dtype
        assert_close(xs.grad, x64.grad, float_dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("backend", [b for b in backends("edge_softmax") if b != "reference"])
def test_fast_path_matches_reference(backend, dtype):
    index = make_index("power_law")
    x = rand_logits(index.num_edges, (2, 3), dtype, seed=3)
    results = {}
    for name in (backend, "reference"):
        xs = x.to(dtype).requires_grad_()
        with use_backend(name), record_backends() as seen:
            out = ops.edge_softmax(index, xs)
            out.backward(torch.ones_like(out) + torch.arange(out.numel()).reshape(out.shape).to(dtype) * 1e-2)
        if seen[0] != name:
            pytest.skip(f"backend {backend!r} does not take this call on this machine")
        results[name] = (out, xs.grad)
    for fast, ref in zip(results[backend], results["reference"]):
        assert_close(fast, ref.double(), dtype)


def test_gradcheck():
    for case in ("zero_in_degree", "multi_edge"):
        index = make_index(case, torch.int32)
        x = rand_logits(index.num_edges, (2,), torch.float64, seed=4).requires_grad_()
        for norm_by in ("dst", "src"):
            assert torch.autograd.gradcheck(lambda t, g=index, nb=norm_by: ops.edge_softmax(g, t, norm_by=nb), (x,))
        eids = torch.tensor([4, 0, 2]) if case == "zero_in_degree" else torch.tensor([5, 1, 2, 0])
        y = rand_logits(eids.numel(), (2,), torch.float64, seed=5).requires_grad_()
        assert torch.autograd.gradcheck(lambda t, g=index, ids=eids: ops.edge_softmax(g, t, ids), (y,))


def test_eids_subset():
    src, dst, n_src, n_dst = CASES["power_law"]
    index = make_index("power_law", torch.int32)
    gen = torch.Generator().manual_seed(6)
    eids = torch.randperm(src.numel(), generator=gen)[:150]
    x = rand_logits(150, (2,), torch.float64, seed=7)
    expected = dense_softmax(src[eids], dst[eids], n_src, n_dst, x)
    torch.testing.assert_close(ops.edge_softmax(index, x, eids), expected)
    torch.testing.assert_close(ops.edge_softmax(index, x, eids.to(torch.int32), norm_by="src"),
                               dense_softmax(src[eids], dst[eids], n_src, n_dst, x, "src"))


def test_edge_order_invariance():
    src, dst, n_src, n_dst = CASES["random"]
    perm = torch.randperm(src.numel(), generator=torch.Generator().manual_seed(8))
    x = rand_logits(src.numel(), (3,), torch.float64, seed=9)
    out = ops.edge_softmax(Index.from_coo(src, dst, n_src, n_dst), x)
    out_p = ops.edge_softmax(Index.from_coo(src[perm], dst[perm], n_src, n_dst), x[perm])
    torch.testing.assert_close(out_p, out[perm])


def test_stable_for_large_logits():
    index = make_index("multi_edge")
    x = torch.tensor([1000.0, 1000.0, 999.0, -1000.0, 5e4, 5e4], dtype=torch.float32)
    out = ops.edge_softmax(index, x)
    assert torch.isfinite(out).all()
    e = torch.exp(torch.tensor([0.0, 0.0, -1.0]))
    torch.testing.assert_close(out[:3], e / e.sum())
    torch.testing.assert_close(out[3:], torch.tensor([1.0, 0.5, 0.5]))
    half = ops.edge_softmax(index, torch.tensor([60000.0, 60000.0, 0.0, 1.0, -65000.0, 65000.0]).half())
    assert torch.isfinite(half).all()
    torch.testing.assert_close(half.float(), torch.tensor([0.5, 0.5, 0.0, 1.0, 0.0, 1.0]))


def test_sums_to_one_per_destination():
    index = make_index("power_law")
    x = torch.randn(index.num_edges, 4, dtype=torch.bfloat16)
    out = ops.edge_softmax(index, x)
    sums = ops.copy_e_sum(index, out.float())
    has_edges = index.in_degrees() > 0
    assert_close(sums[has_edges], torch.ones_like(sums[has_edges]).double(), torch.bfloat16)


def test_double_backward():
    index = make_index("multi_edge")
    x = rand_logits(index.num_edges, (2,), torch.float64, seed=11).requires_grad_()
    for norm_by in ("dst", "src"):
        assert torch.autograd.gradgradcheck(lambda t, nb=norm_by: ops.edge_softmax(index, t, norm_by=nb), (x,))
