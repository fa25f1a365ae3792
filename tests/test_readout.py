"""Readout over batched graphs: against a per-graph float64 loop, half precision, top-k, errors."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerances import assert_close

import mpgraph as dgl
from mpgraph.base import DGLError
from mpgraph.batch import batch
from mpgraph.readout import (broadcast_edges, broadcast_nodes, max_nodes, mean_edges, mean_nodes, min_nodes,
                             readout_edges, readout_nodes, softmax_edges, softmax_nodes, sum_edges, sum_nodes,
                             topk_edges, topk_nodes)

SIZES = [(4, 6), (0, 0), (3, 0), (1, 1), (7, 12)]   # includes an empty graph and one without edges
OPS = ["sum", "mean", "max", "min"]


def _graphs(sizes=SIZES, dtype=torch.float64, D=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    gs = []
    for n, e in sizes:
        g = dgl.graph((torch.randint(0, max(n, 1), (e,), generator=gen),
                       torch.randint(0, max(n, 1), (e,), generator=gen)), num_nodes=n)
        g.ndata["h"] = torch.randn(n, D, generator=gen, dtype=torch.float64).to(dtype)
        g.ndata["w"] = torch.rand(n, 1, generator=gen, dtype=torch.float64).to(dtype)
        g.edata["h"] = torch.randn(e, D, generator=gen, dtype=torch.float64).to(dtype)
        g.edata["w"] = torch.rand(e, 1, generator=gen, dtype=torch.float64).to(dtype)
        gs.append(g)
    return gs


def _loop(gs, kind, op, weighted):
    """Per-graph readout in float64 (0 for graphs without nodes/edges)."""
    rows = []
    for g in gs:
        data = g.ndata if kind == "nodes" else g.edata
        x = data["h"].double()
        if weighted:
            x = x * data["w"].double()
        if x.shape[0] == 0:
            rows.append(torch.zeros(x.shape[1:], dtype=torch.float64))
        elif op == "sum":
            rows.append(x.sum(0))
        elif op == "mean":
            rows.append(x.mean(0))
        elif op == "max":
            rows.append(x.max(0).values)
        else:
            rows.append(x.min(0).values)
    return torch.stack(rows)


@pytest.mark.parametrize("weighted", [False, True], ids=["plain", "weighted"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kind", ["nodes", "edges"])
def test_readout_matches_per_graph_loop(kind, op, weighted, float_dtype):
    gs = _graphs(dtype=float_dtype)
    bg = batch(gs)
    w = "w" if weighted else None
    out = (readout_nodes(bg, "h", w, op=op) if kind == "nodes" else readout_edges(bg, "h", w, op=op))
    assert out.dtype == float_dtype and out.shape == (len(gs), 3)
    assert_close(out, _loop(gs, kind, op, weighted), dtype=float_dtype)
    if op in ("sum", "mean") and not weighted:
        # 16-bit inputs: the result is the float64 value rounded once (fp32 accumulation)
        assert_close(out, _loop(gs, kind, op, weighted).to(float_dtype), dtype=float_dtype)


def test_named_wrappers_and_unbatched_graph():
    gs = _graphs()
    bg = batch(gs)
    assert torch.equal(sum_nodes(bg, "h"), readout_nodes(bg, "h", op="sum"))
    assert torch.equal(mean_nodes(bg, "h", "w"), readout_nodes(bg, "h", "w", op="mean"))
    assert torch.equal(max_nodes(bg, "h"), readout_nodes(bg, "h", op="max"))
    assert torch.equal(min_nodes(bg, "h"), readout_nodes(bg, "h", op="min"))
    assert torch.equal(sum_edges(bg, "h"), readout_edges(bg, "h"))
    assert torch.equal(mean_edges(bg, "h", etype="_E"), readout_edges(bg, "h", op="mean"))
    g = gs[0]
    assert sum_nodes(g, "h").shape == (1, 3)
    torch.testing.assert_close(sum_nodes(g, "h")[0], g.ndata["h"].sum(0))


def test_empty_graphs_give_zero():
    bg = batch(_graphs(sizes=[(0, 0), (2, 0)]))
    for op in OPS:
        assert torch.equal(readout_nodes(bg, "h", op=op)[0], torch.zeros(3, dtype=torch.float64))
        assert torch.equal(readout_edges(bg, "h", op=op), torch.zeros(2, 3, dtype=torch.float64))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_sum_accumulates_in_fp32(dtype):
    # 4096 ones: a 16-bit running sum would stall (at 256 for bf16, 2048 for fp16)
    g = dgl.graph(([], []), num_nodes=4096)
    g.ndata["h"] = torch.ones(4096, 2, dtype=dtype)
    assert sum_nodes(g, "h").tolist() == [[4096.0, 4096.0]]
    # a weighted half readout forms x * w in fp32 too
    g.ndata["w"] = torch.full((4096, 1), 0.1, dtype=dtype)
    exact = 4096 * float(torch.tensor(0.1, dtype=dtype))
    assert_close(sum_nodes(g, "h", "w"), torch.full((1, 2), exact, dtype=torch.float64), dtype=dtype)


def test_autocast_readout():
    bg = batch(_graphs(dtype=torch.float32))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = sum_nodes(bg, "h")
    assert_close(out, _loop(_graphs(), "nodes", "sum", False), dtype=torch.bfloat16)


def test_tensor_feat_leaves_frames_alone_and_backprops():
    bg = batch(_graphs(dtype=torch.float64))
    n_keys = len(bg.ndata)
    x = torch.randn(bg.num_nodes(), 2, dtype=torch.float64, requires_grad=True)
    for op in OPS:
        torch.autograd.gradcheck(lambda t, op=op: readout_nodes(bg, t, op=op), (x,))
    torch.autograd.gradcheck(lambda t: softmax_nodes(bg, t), (x,))
    assert len(bg.ndata) == n_keys


@pytest.mark.parametrize("kind", ["nodes", "edges"])
def test_softmax_matches_per_graph_loop(kind, float_dtype):
    gs = _graphs(dtype=float_dtype)
    bg = batch(gs)
    out = softmax_nodes(bg, "h") if kind == "nodes" else softmax_edges(bg, "h")
    parts = [torch.softmax((g.ndata if kind == "nodes" else g.edata)["h"].double(), 0) for g in gs]
    assert out.dtype == float_dtype
    assert_close(out, torch.cat(parts), dtype=float_dtype)


def test_broadcast():
    gs = _graphs()
    bg = batch(gs)
    feat = torch.arange(len(gs) * 2, dtype=torch.float32).reshape(len(gs), 2)
    nodes = broadcast_nodes(bg, feat)
    expect = torch.cat([feat[i].expand(g.num_nodes(), 2) for i, g in enumerate(gs)])
    assert torch.equal(nodes, expect)
    edges = broadcast_edges(bg, feat)
    assert torch.equal(edges, torch.cat([feat[i].expand(g.num_edges(), 2) for i, g in enumerate(gs)]))
    with pytest.raises(DGLError, match=r"expected graph_feat with 5 rows .* got shape \(2, 2\)"):
        broadcast_nodes(bg, feat[:2])
    # readout then broadcast: per-node graph mean
    centred = bg.ndata["h"] - broadcast_nodes(bg, mean_nodes(bg, "h"))
    assert_close(mean_nodes(bg, centred), torch.zeros(len(gs), 3, dtype=torch.float64))


def _topk_loop(gs, k, descending, sortby, kind="nodes"):
    vals, idxs = [], []
    for g in gs:
        x = (g.ndata if kind == "nodes" else g.edata)["h"]
        n, D = x.shape
        kk = min(k, n)
        if sortby is None:
            v, i = torch.topk(x, kk, dim=0, largest=descending) if kk else (x[:0], x[:0].long())
            v = torch.cat([v, x.new_zeros(k - kk, D)])
            i = torch.cat([i, torch.full((k - kk, D), -1)])
        else:
            order = torch.argsort(x[:, sortby], descending=descending, stable=True)[:kk]
            v = torch.cat([x[order], x.new_zeros(k - kk, D)])
            i = torch.cat([order, torch.full((k - kk,), -1)])
        vals.append(v)
        idxs.append(i)
    return torch.stack(vals), torch.stack(idxs)


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), min_size=1, max_size=4),
       k=st.integers(1, 9), descending=st.booleans(), sortby=st.sampled_from([None, 0, 2, -1]),
       seed=st.integers(0, 1000), kind=st.sampled_from(["nodes", "edges"]))
def test_topk_matches_per_graph_loop(sizes, k, descending, sortby, seed, kind):
    sizes = [(n, e if n else 0) for n, e in sizes]
    gs = _graphs(sizes, dtype=torch.float32, seed=seed)
    bg = batch(gs)
    f = topk_nodes if kind == "nodes" else topk_edges
    val, idx = f(bg, "h", k, descending=descending, sortby=sortby)
    ev, ei = _topk_loop(gs, k, descending, sortby, kind)
    assert val.shape == (len(gs), k, 3) and val.dtype == torch.float32
    assert torch.equal(val, ev)
    assert torch.equal(idx, ei)


def test_topk_half_and_ties():
    g = dgl.graph(([], []), num_nodes=4)
    g.ndata["h"] = torch.tensor([[1.0], [3.0], [3.0], [-float("inf")]], dtype=torch.bfloat16)
    val, idx = topk_nodes(g, "h", 5)
    assert val.dtype == torch.bfloat16
    assert idx[0, :, 0].tolist() == [1, 2, 0, 3, -1]        # ties: lower ID first; a real -inf precedes padding
    assert val[0, :, 0].tolist() == [3.0, 3.0, 1.0, -float("inf"), 0.0]


def test_readout_errors():
    bg = batch(_graphs())
    with pytest.raises(DGLError, match=r"expected op in \('sum', 'mean', 'max', 'min'\), got 'prod'"):
        readout_nodes(bg, "h", op="prod")
    with pytest.raises(DGLError, match="expected feat with 15 rows"):
        sum_nodes(bg, torch.zeros(3, 2))
    with pytest.raises(KeyError, match="nope"):
        sum_nodes(bg, "nope")
    with pytest.raises(TypeError, match="feature name"):
        sum_nodes(bg, 3)
    bg.ndata["w2"] = torch.ones(15, 2, dtype=torch.float64)
    with pytest.raises(DGLError, match="expected weight broadcastable"):
        sum_nodes(bg, "h", "w2")
    with pytest.raises(DGLError, match="expected k a positive int"):
        topk_nodes(bg, "h", 0)
    with pytest.raises(DGLError, match=r"expected sortby None or an int in \[-3, 3\)"):
        topk_nodes(bg, "h", 2, sortby=3)
    with pytest.raises(DGLError, match="expected a 2-D node feature"):
        topk_nodes(bg, torch.zeros(15, 2, 2), 2)
    bip = dgl.heterograph({("user", "plays", "game"): ([0, 1], [0, 0])})
    bip.nodes["user"].data["h"] = torch.ones(2, 1)
    with pytest.raises(DGLError, match="name the node type"):
        sum_nodes(bip, "h")
    assert sum_nodes(bip, "h", ntype="user").tolist() == [[2.0]]
