"""Readout on (batched) HeteroGraphs with ntype= / etype=, against homogeneous graphs of the same counts."""

import pytest
import torch
from hetero_cases import typed_case

import mpgraph as dgl
from mpgraph.base import DGLError
from mpgraph.heterograph import batch_hetero
from mpgraph.readout import (broadcast_edges, broadcast_nodes, max_nodes, mean_nodes, readout_edges, readout_nodes,
                             softmax_edges, softmax_nodes, sum_nodes, topk_nodes)

F64 = torch.float64
NN = [{"a": 4, "b": 3, "c": 2}, {"a": 0, "b": 5, "c": 1}, {"a": 2, "b": 1, "c": 0}]
RELS = [{("a", "r", "b"): 6, ("b", "s", "b"): 4, ("b", "t", "c"): 2},
        {("a", "r", "b"): 0, ("b", "s", "b"): 7, ("b", "t", "c"): 3},
        {("a", "r", "b"): 2, ("b", "s", "b"): 1, ("b", "t", "c"): 0}]


def _batch(dtype=F64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    graphs = []
    for nn, rels in zip(NN, RELS):
        data = {(s, e, d): (torch.randint(0, max(nn[s], 1), (E,), generator=gen),
                            torch.randint(0, max(nn[d], 1), (E,), generator=gen)) for (s, e, d), E in rels.items()}
        g = dgl.heterograph(data, dict(nn))
        for nt in g.ntypes:
            g.nodes[nt].data["x"] = torch.randn(g.num_nodes(nt), 3, generator=gen, dtype=F64).to(dtype)
            g.nodes[nt].data["w"] = torch.rand(g.num_nodes(nt), 1, generator=gen, dtype=F64).to(dtype)
        for cet in g.canonical_etypes:
            g.edges[cet].data["e"] = torch.randn(g.num_edges(cet), 2, generator=gen, dtype=F64).to(dtype)
        graphs.append(g)
    return graphs, batch_hetero(graphs)


def _homogeneous_batch(graphs, ntype, names=("x", "w")):
    """The node set ``ntype`` of each graph as a homogeneous graph (no edges), batched."""
    hs = []
    for g in graphs:
        h = dgl.graph(([], []), num_nodes=g.num_nodes(ntype))
        for k in names:
            h.ndata[k] = g.nodes[ntype].data[k]
        hs.append(h)
    return dgl.batch(hs)


def _homogeneous_edges(graphs, cet):
    hs = []
    for g in graphs:
        u, v = g.edges(etype=cet)
        n = max(g.num_nodes(cet[0]), g.num_nodes(cet[2]))
        h = dgl.graph((u, v), num_nodes=n)
        h.edata["e"] = g.edges[cet].data["e"]
        hs.append(h)
    return dgl.batch(hs)


def _manual(parts, op, D):
    out = []
    for x in parts:
        if x.shape[0] == 0:
            out.append(torch.zeros(D, dtype=x.dtype))
        else:
            out.append({"sum": x.sum(0), "mean": x.mean(0), "max": x.amax(0), "min": x.amin(0)}[op])
    return torch.stack(out)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_readout_nodes_per_type_matches_homogeneous(op):
    graphs, bg = _batch()
    assert bg.batch_size == 3
    for nt in bg.ntypes:
        got = readout_nodes(bg, "x", op=op, ntype=nt)
        ref = readout_nodes(_homogeneous_batch(graphs, nt), "x", op=op)
        manual = _manual([g.nodes[nt].data["x"] for g in graphs], op, 3)
        torch.testing.assert_close(got, ref, rtol=0, atol=0)
        torch.testing.assert_close(got, manual, rtol=1e-12, atol=1e-12)
        weighted = readout_nodes(bg, "x", "w", op=op, ntype=nt)
        torch.testing.assert_close(weighted, readout_nodes(_homogeneous_batch(graphs, nt), "x", "w", op=op))
    assert torch.equal(sum_nodes(bg, "x", ntype="b"), readout_nodes(bg, "x", ntype="b"))
    assert torch.equal(mean_nodes(bg, "x", ntype="a")[1], torch.zeros(3, dtype=F64))   # graph without 'a' nodes
    assert torch.equal(max_nodes(bg, "x", ntype="c")[2], torch.zeros(3, dtype=F64))


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_readout_edges_per_relation(op):
    graphs, bg = _batch()
    for cet in bg.canonical_etypes:
        got = readout_edges(bg, "e", op=op, etype=cet[1])
        ref = readout_edges(_homogeneous_edges(graphs, cet), "e", op=op)
        manual = _manual([g.edges[cet].data["e"] for g in graphs], op, 2)
        torch.testing.assert_close(got, ref, rtol=0, atol=0)
        torch.testing.assert_close(got, manual, rtol=1e-12, atol=1e-12)


def test_softmax_and_broadcast_per_type():
    graphs, bg = _batch()
    for nt in bg.ntypes:
        got = softmax_nodes(bg, "x", ntype=nt)
        parts = [torch.softmax(g.nodes[nt].data["x"], 0) for g in graphs]
        torch.testing.assert_close(got, torch.cat(parts), rtol=1e-12, atol=1e-12)
        feat = torch.arange(6, dtype=F64).reshape(3, 2)
        out = broadcast_nodes(bg, feat, ntype=nt)
        want = torch.cat([feat[i].expand(g.num_nodes(nt), 2) for i, g in enumerate(graphs)])
        assert torch.equal(out, want)
    cet = ("b", "s", "b")
    parts = [torch.softmax(g.edges[cet].data["e"], 0) for g in graphs]
    torch.testing.assert_close(softmax_edges(bg, "e", etype="s"), torch.cat(parts), rtol=1e-12, atol=1e-12)
    out = broadcast_edges(bg, torch.tensor([[1.0], [2.0], [3.0]]), etype=("a", "r", "b"))
    assert out.squeeze(1).tolist() == [1.0] * 6 + [3.0] * 2
    vals, idx = topk_nodes(bg, "x", 2, ntype="b", sortby=0)
    for i, g in enumerate(graphs):
        x = g.nodes["b"].data["x"]
        order = torch.sort(x[:, 0], descending=True, stable=True).indices[:2]
        assert torch.equal(idx[i][:order.numel()], order)
        assert torch.equal(vals[i][:order.numel()], x[order])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_features_accumulate_in_fp32(dtype):
    graphs, bg = _batch(dtype, seed=4)
    for nt in bg.ntypes:
        got = readout_nodes(bg, "x", ntype=nt)
        want = _manual([g.nodes[nt].data["x"].float() for g in graphs], "sum", 3).to(dtype)
        assert got.dtype == dtype and torch.equal(got, want)
        got = readout_nodes(bg, "x", op="mean", ntype=nt)
        want = _manual([g.nodes[nt].data["x"].float() for g in graphs], "mean", 3).to(dtype)
        assert torch.equal(got, want)
        got = readout_nodes(bg, "x", "w", ntype=nt)
        want = _manual([(g.nodes[nt].data["x"].float() * g.nodes[nt].data["w"].float()) for g in graphs],
                       "sum", 3).to(dtype)
        assert torch.equal(got, want)
        sm = softmax_nodes(bg, "x", ntype=nt)
        want = torch.cat([torch.softmax(g.nodes[nt].data["x"].float(), 0) for g in graphs]).to(dtype)
        assert sm.dtype == dtype and torch.equal(sm, want)


def test_unbatched_block_and_errors():
    g = typed_case()
    g.nodes["game"].data["h"] = torch.arange(5.0).unsqueeze(1)
    g.edges[("user", "likes", "dev")].data["e"] = torch.tensor([1.0, 2.0, 4.0])
    assert readout_nodes(g, "h", ntype="game").tolist() == [[10.0]]
    assert readout_edges(g, "e", etype=("user", "likes", "dev"), op="mean").tolist() == [pytest.approx(7.0 / 3)]
    with pytest.raises(DGLError, match=r"node types \['dev', 'game', 'iso', 'user'\]; name one with ntype="):
        readout_nodes(g, "h")
    with pytest.raises(DGLError, match="node type 'player' does not exist"):
        sum_nodes(g, "h", ntype="player")
    with pytest.raises(DGLError, match="'likes' is ambiguous"):
        readout_edges(g, "e", etype="likes")
    with pytest.raises(DGLError, match="pass etype="):
        readout_edges(g, "e")
    with pytest.raises(DGLError, match="1 rows"):
        broadcast_nodes(g, torch.ones(3, 1), ntype="game")
    block = dgl.dataloading.to_block(dgl.sampling.sample_neighbors(g, {"game": [1, 3]}, -1), {"game": [1, 3]})
    block.dstnodes["game"].data["y"] = torch.tensor([[2.0], [5.0]])
    assert readout_nodes(block, "y", ntype="game").tolist() == [[7.0]]
