"""Backend registry: selection by priority and predicate, forcing, env var, broadcast layout."""

import doctest
import importlib

import pytest
import torch

import mpgraph.ops as ops
from mpgraph._index import Index
from mpgraph.base import DGLError
from mpgraph.ops import _broadcast, _dispatch, _reference


@pytest.fixture
def index():
    return Index.from_coo(torch.tensor([0, 1, 2, 2]), torch.tensor([1, 2, 0, 1]), 3, 3)


@pytest.fixture
def spy(monkeypatch):
    """A test backend for spmm that records its calls and runs the reference kernel."""
    monkeypatch.delenv("MPGRAPH_BACKEND", raising=False)
    calls = []

    def kernel(index, op, reduce, lhs, rhs, bcast, out_dtype):
        calls.append((op, reduce, out_dtype, None if lhs is None else tuple(lhs.shape),
                      None if rhs is None else tuple(rhs.shape), bcast.F))
        return _reference.spmm(index, op, reduce, lhs, rhs, bcast, out_dtype)

    def supports(index, op, reduce, lhs, rhs, bcast, out_dtype):
        return out_dtype == torch.float32

    _dispatch.register("spmm", "spy", kernel, supports, priority=100)
    yield calls
    _dispatch.unregister("spmm", "spy")


def test_registered_backend_is_selected_by_priority_and_predicate(index, spy):
    x = torch.randn(3, 2, 4)
    w = torch.randn(4, 2, 1)
    ops.u_mul_e_sum(index, x, w)
    assert spy == [("mul", "sum", torch.float32, (3, 8), (4, 2), 8)]      # flattened operands
    ops.copy_u_sum(index, x.double())                                     # predicate says no
    assert len(spy) == 1
    assert _dispatch.backends("spmm")[0] == "spy"


def test_backward_runs_through_backends(index, spy):
    x = torch.randn(3, 4, requires_grad=True)
    ops.copy_u_mean(index, x).sum().backward()
    # forward on the graph, backward on the reversed graph (copy_lhs sum of the scaled gradient)
    assert [c[:2] for c in spy] == [("copy_lhs", "mean"), ("copy_lhs", "sum")]


def test_use_backend_forces_and_falls_back(index, spy):
    x = torch.randn(3, 4)
    with _dispatch.use_backend("reference"):
        ops.copy_u_sum(index, x)
    assert spy == []
    with _dispatch.use_backend("spy"):
        ops.copy_u_sum(index, x.double())                                 # unsupported: falls back
    with _dispatch.use_backend("spy", strict=True), pytest.raises(DGLError, match="cannot run this spmm call"):
        ops.copy_u_sum(index, x.double())
    with pytest.raises(DGLError, match="unknown backend 'nope'"):
        with _dispatch.use_backend("nope"):
            pass


def test_env_var_forces_backend(index, spy, monkeypatch):
    x = torch.randn(3, 4)
    monkeypatch.setenv("MPGRAPH_BACKEND", "reference")
    ops.copy_u_sum(index, x)
    assert spy == []
    monkeypatch.setenv("MPGRAPH_BACKEND", "bogus")
    with pytest.raises(DGLError, match="MPGRAPH_BACKEND='bogus' is not a known backend"):
        ops.copy_u_sum(index, x)
    monkeypatch.delenv("MPGRAPH_BACKEND")
    ops.copy_u_sum(index, x)
    assert len(spy) == 1


def test_backend_status_lists_builtin_and_optional():
    status = _dispatch.backend_status()
    assert status["reference"] == "loaded" and status["torch"] == "loaded"
    assert "cpu" in status and "triton" in status
    for op in _dispatch.OPS:
        assert _dispatch.backends(op)[-2:] == ["torch", "reference"]


def test_empty_graph_never_reaches_kernels(spy):
    empty = Index.from_coo(torch.tensor([], dtype=torch.int64), torch.tensor([], dtype=torch.int64), 2, 3)
    out = ops.copy_u_max(empty, torch.randn(2, 4))
    assert spy == [] and out.shape == (3, 4) and (out == 0).all()


@pytest.mark.parametrize("lshape,rshape,op", [
    ((2, 3), (2, 1), "mul"), ((1,), (3,), "add"), ((3,), (1,), "sub"), ((), (4,), "div"),
    ((2, 1, 3), (4, 1), "add"), ((2, 5), (5,), "dot"), ((1, 5), (3, 5), "dot"),
])
def test_bcast_offsets_match_torch_broadcasting(lshape, rshape, op):
    b = _broadcast.infer_bcast(op, lshape, rshape, torch.device("cpu"))
    L, R, K = b.L, b.R, b.K
    lhs = torch.arange(L * K, dtype=torch.float64).reshape(1, L * K)
    rhs = 1000 + torch.arange(R * K, dtype=torch.float64).reshape(1, R * K)
    expected = _reference.binary(op, lhs.reshape((1,) + b.lhs_shape), rhs.reshape((1,) + b.rhs_shape))
    assert expected.shape[1:] == b.out_shape
    lo = torch.arange(L) if b.lhs_off is None else b.lhs_off
    ro = torch.arange(R) if b.rhs_off is None else b.rhs_off
    a3, r3 = lhs.reshape(L, K)[lo], rhs.reshape(R, K)[ro]                     # [F, K] via offsets
    via_offsets = (a3 * r3).sum(-1) if op == "dot" else _reference.binary(op, a3[:, 0], r3[:, 0])
    torch.testing.assert_close(via_offsets, expected.reshape(-1))
    assert b.F == expected.numel() and b.use_bcast == (lo.numel() != L or ro.numel() != R or L != R)


def test_doctests():
    # importlib: ``mpgraph.ops.edge_softmax`` as an attribute is the function, not the module
    names = ["mpgraph.ops.spmm", "mpgraph.ops.sddmm", "mpgraph.ops.edge_softmax", "mpgraph.ops.segment",
             "mpgraph.ops._dispatch", "mpgraph.precision"]
    for name in names:
        result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0, name
        assert result.attempted > 0, name


def test_backward_keeps_the_forward_selection_on_another_thread():
    """Autograd runs CUDA backwards on its own threads; the op layer carries the selection there."""
    import threading

    from mpgraph._index import Index
    from mpgraph.ops import copy_u_sum
    from mpgraph.ops._dispatch import record_backends, use_backend

    g = Index.from_coo(torch.tensor([0, 1, 2]), torch.tensor([1, 2, 2]), 3, 3)
    x = torch.randn(3, 4, requires_grad=True)
    with record_backends() as seen, use_backend("reference"):
        out = copy_u_sum(g, x)
    assert seen == ["reference"]
    worker = threading.Thread(target=lambda: out.sum().backward())   # no use_backend/record_backends here
    worker.start()
    worker.join()
    assert seen == ["reference", "reference"]                          # the backward's kernel, recorded
    torch.testing.assert_close(x.grad, torch.tensor([[1.0] * 4, [1.0] * 4, [1.0] * 4]))


@pytest.mark.parametrize("reduce", ["max", "min"])
def test_max_min_skip_winners_when_no_gradient_is_needed(index, reduce):
    from mpgraph.ops import _reference

    flags = []

    def kernel(index, op, reduce, lhs, rhs, bcast, out_dtype, need_arg=True):
        flags.append(need_arg)
        out, arg_u, arg_e = _reference.spmm(index, op, reduce, lhs, rhs, bcast, out_dtype)
        return (out, arg_u, arg_e) if need_arg else (out, None, None)

    _dispatch.register("spmm", "spy", kernel, priority=100)
    try:
        x = torch.randn(index.num_src, 3)
        with torch.no_grad():
            inference = ops.gspmm(index, "copy_lhs", reduce, x, None)
        plain = ops.gspmm(index, "copy_lhs", reduce, x, None)          # nothing requires grad either
        xr = x.clone().requires_grad_()
        trained = ops.gspmm(index, "copy_lhs", reduce, xr, None)
        trained.sum().backward()
        w = torch.randn(index.num_edges, 3, requires_grad=True)
        ops.gspmm(index, "mul", reduce, x, w).sum().backward()
        w1 = torch.randn(index.num_edges, 1, requires_grad=True)
        ops.gspmm(index, "mul", reduce, x, w1).sum().backward()
        ops.gspmm(index, "mul", reduce, x[:, :1], w).sum().backward()
    finally:
        _dispatch.unregister("spmm", "spy")
    # copies, sums, differences and products may take their winners as slots (a kernel without them returns
    # ids), also with one weight per edge (a block broadcast of the edge operand); a broadcast node operand
    # asks for ids
    assert flags == [False, False, "slots", "slots", "slots", True]
    assert torch.equal(inference, plain) and torch.equal(inference, trained.detach())
    assert xr.grad is not None and float(xr.grad.sum()) == float((index.in_degrees() > 0).sum() * 3)
