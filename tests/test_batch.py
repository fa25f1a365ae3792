"""batch / unbatch / slice_batch: structure, features, counts, errors, message passing."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import mpgraph as dgl
import mpgraph.function as fn
from mpgraph.base import DGLError
from mpgraph.batch import batch, slice_batch, unbatch


def _rand_graph(n, e, idtype, seed, feats=True):
    gen = torch.Generator().manual_seed(seed)
    if n == 0:
        e = 0
    src = torch.randint(0, max(n, 1), (e,), generator=gen)
    dst = torch.randint(0, max(n, 1), (e,), generator=gen)
    g = dgl.graph((src, dst), num_nodes=n, idtype=idtype)
    if feats:
        g.ndata["h"] = torch.randn(n, 2, generator=gen)
        g.ndata["i"] = torch.randint(0, 100, (n,), generator=gen)
        g.edata["w"] = torch.randn(e, 3, generator=gen).to(torch.bfloat16)
    return g


def assert_same_graph(a, b):
    assert a.idtype == b.idtype and a.device == b.device
    assert a.canonical_etypes == b.canonical_etypes
    assert a.num_src_nodes() == b.num_src_nodes() and a.num_dst_nodes() == b.num_dst_nodes()
    assert a.num_edges() == b.num_edges()
    for x, y in zip(a.edges(), b.edges()):
        assert x.dtype == y.dtype and torch.equal(x, y)
    for fa, fb in zip(a._node_frames + [a.edata], b._node_frames + [b.edata]):
        assert list(fa) == list(fb)
        for k in fa:
            assert fa[k].dtype == fb[k].dtype and torch.equal(fa[k], fb[k]), k


graph_specs = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 9), st.integers(0, 2 ** 16)), min_size=1,
                       max_size=6)


@settings(max_examples=60, deadline=None)
@given(specs=graph_specs, idtype=st.sampled_from([torch.int32, torch.int64]))
def test_unbatch_batch_roundtrip(specs, idtype):
    gs = [_rand_graph(n, e, idtype, seed) for n, e, seed in specs]
    bg = batch(gs)
    assert bg.batch_size == len(gs)
    assert bg.batch_num_nodes().tolist() == [g.num_nodes() for g in gs]
    assert bg.batch_num_edges().tolist() == [g.num_edges() for g in gs]
    assert bg.num_nodes() == sum(g.num_nodes() for g in gs)
    out = unbatch(bg)
    assert len(out) == len(gs)
    for a, b in zip(out, gs):
        assert_same_graph(a, b)
        assert a.batch_size == 1
    for i, g in enumerate(gs):
        assert_same_graph(slice_batch(bg, i), g)


@settings(max_examples=30, deadline=None)
@given(specs=graph_specs, cut=st.integers(0, 6))
def test_batch_of_batches_flattens(specs, cut):
    gs = [_rand_graph(n, e, torch.int64, seed) for n, e, seed in specs]
    cut = min(cut, len(gs) - 1)
    parts = [batch(gs[:cut]), *gs[cut:]] if cut else gs
    bg = batch(parts)
    assert bg.batch_size == len(gs)
    for a, b in zip(unbatch(bg), gs):
        assert_same_graph(a, b)


def test_offsets_and_features():
    g1 = dgl.graph(([0, 1], [1, 0]))
    g2 = dgl.graph(([0, 2], [1, 1]), num_nodes=4)
    g1.ndata["h"] = torch.tensor([[1.0], [2.0]])
    g2.ndata["h"] = torch.tensor([[3.0], [4.0], [5.0], [6.0]])
    g1.edata["e"] = torch.tensor([10, 11])
    g2.edata["e"] = torch.tensor([12, 13])
    bg = batch([g1, g2])
    src, dst = bg.edges()
    assert src.tolist() == [0, 1, 2, 4] and dst.tolist() == [1, 0, 3, 3]
    assert bg.ndata["h"].squeeze(1).tolist() == [1, 2, 3, 4, 5, 6]
    assert bg.edata["e"].tolist() == [10, 11, 12, 13]
    assert bg.batch_num_nodes().dtype == torch.int64


def test_feature_selection_and_empty_graphs():
    g1, g2 = _rand_graph(3, 4, torch.int64, 0), _rand_graph(2, 1, torch.int64, 1)
    bg = batch([g1, g2], ndata=["h"], edata=None)
    assert list(bg.ndata) == ["h"] and len(bg.edata) == 0
    # graphs without nodes/edges need not carry features
    empty = dgl.graph(([], []), num_nodes=0)
    no_edges = dgl.graph(([], []), num_nodes=2)
    no_edges.ndata["h"] = torch.zeros(2, 2)
    no_edges.ndata["i"] = torch.zeros(2, dtype=torch.int64)
    bg = batch([empty, g1, no_edges, g2])
    assert bg.batch_num_nodes().tolist() == [0, 3, 2, 2]
    assert bg.batch_num_edges().tolist() == [0, 4, 0, 1]
    assert bg.edata["w"].shape == (5, 3)
    out = unbatch(bg)
    assert out[0].ndata["h"].shape == (0, 2) and out[2].edata["w"].shape == (0, 3)
    assert torch.equal(out[1].ndata["h"], g1.ndata["h"])
    # all graphs empty
    bg = batch([empty, dgl.graph(([], []), num_nodes=0)])
    assert bg.num_nodes() == 0 and bg.batch_size == 2


def test_single_graph_and_unbatched_input():
    g = _rand_graph(4, 5, torch.int32, 3)
    bg = batch([g])
    assert bg.batch_size == 1 and bg.idtype == torch.int32
    (back,) = unbatch(g)
    assert_same_graph(back, g)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min"])
def test_message_passing_on_batch_equals_per_graph(reduce, float_dtype):
    gs = [_rand_graph(n, e, torch.int64, s) for n, e, s in [(5, 9, 0), (0, 0, 1), (3, 0, 2), (6, 14, 3)]]
    for g in gs:
        g.ndata["x"] = g.ndata["h"].to(float_dtype)
    bg = batch(gs)
    bg.update_all(fn.copy_u("x", "m"), getattr(fn, reduce)("m", "y"))
    bg.apply_edges(fn.u_add_v("x", "x", "s"))
    for g in gs:
        g.update_all(fn.copy_u("x", "m"), getattr(fn, reduce)("m", "y"))
        g.apply_edges(fn.u_add_v("x", "x", "s"))
    expect_y = torch.cat([g.ndata["y"] for g in gs])
    expect_s = torch.cat([g.edata["s"] for g in gs])
    assert torch.equal(bg.ndata["y"], expect_y)
    assert torch.equal(bg.edata["s"], expect_s)


def test_gradients_flow_through_batch_and_unbatch():
    g1, g2 = _rand_graph(3, 2, torch.int64, 0, feats=False), _rand_graph(2, 2, torch.int64, 1, feats=False)
    x1 = torch.randn(3, 2, requires_grad=True)
    x2 = torch.randn(2, 2, requires_grad=True)
    g1.ndata["x"], g2.ndata["x"] = x1, x2
    bg = batch([g1, g2])
    parts = unbatch(bg)
    (parts[0].ndata["x"].sum() * 2 + bg.ndata["x"].sum()).backward()
    assert torch.equal(x1.grad, torch.full((3, 2), 3.0))
    assert torch.equal(x2.grad, torch.ones(2, 2))


def test_batch_info_survives_copies():
    bg = batch([_rand_graph(3, 2, torch.int64, 0), _rand_graph(2, 2, torch.int64, 1)])
    for h in (bg.clone(), bg.local_var(), bg.to("cpu"), bg.int()):
        assert h.batch_num_nodes().tolist() == [3, 2] and h.batch_num_edges().tolist() == [2, 2]


def test_slice_batch_store_ids():
    gs = [_rand_graph(3, 4, torch.int32, 0), _rand_graph(4, 3, torch.int32, 1)]
    bg = batch(gs)
    sg = slice_batch(bg, 1, store_ids=True)
    assert sg.ndata[dgl.NID].tolist() == [3, 4, 5, 6] and sg.ndata[dgl.NID].dtype == torch.int32
    assert sg.edata[dgl.EID].tolist() == [4, 5, 6]
    assert slice_batch(bg, torch.tensor(0)).num_nodes() == 3
    for bad in (2, -1, 1.0, "0"):
        with pytest.raises(DGLError, match=r"expected gid an int in \[0, 2\)"):
            slice_batch(bg, bad)


def test_unbatch_explicit_splits():
    g = dgl.graph(([0, 1, 3, 4], [1, 2, 4, 3]), num_nodes=5)
    g.ndata["h"] = torch.arange(5.0)
    a, b = unbatch(g, node_split=[3, 2], edge_split=torch.tensor([2, 2]))
    assert a.edges()[0].tolist() == [0, 1] and b.edges()[0].tolist() == [0, 1]
    assert b.ndata["h"].tolist() == [3.0, 4.0]
    a, b = unbatch(g, node_split={"_N": [3, 2]}, edge_split={("_N", "_E", "_N"): [2, 2]})
    assert b.num_nodes() == 2


def test_unbatch_bipartite_with_splits():
    g = dgl.heterograph({("user", "plays", "game"): ([0, 1, 2], [0, 0, 1])})
    g.nodes["user"].data["h"] = torch.arange(3.0)
    a, b = unbatch(g, node_split={"user": [2, 1], "game": [1, 1]}, edge_split=[2, 1])
    assert a.canonical_etypes == [("user", "plays", "game")]
    assert (a.num_src_nodes(), a.num_dst_nodes(), b.num_src_nodes(), b.num_dst_nodes()) == (2, 1, 1, 1)
    assert b.edges()[0].tolist() == [0] and b.nodes["user"].data["h"].tolist() == [2.0]


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------
def test_batch_errors():
    g = _rand_graph(3, 2, torch.int64, 0)
    with pytest.raises(DGLError, match="non-empty list"):
        batch([])
    with pytest.raises(TypeError, match="single Graph"):
        batch(g)
    with pytest.raises(DGLError, match="expected every graph to have idtype torch.int64"):
        batch([g, _rand_graph(3, 2, torch.int32, 0)])
    other = _rand_graph(3, 2, torch.int64, 1)
    other.ndata["h"] = other.ndata["h"].double()
    with pytest.raises(DGLError, match=r"expected every graph with nodes to have the node features .* got .* at "
                                       r"graphs\[1\]"):
        batch([g, other])
    del other.ndata["h"]
    with pytest.raises(DGLError, match="same features"):
        batch([g, other])
    with pytest.raises(DGLError, match=r"expected node features \['nope'\]"):
        batch([g, other], ndata=["nope"])
    with pytest.raises(TypeError, match=r"use ndata=\['h'\]"):
        batch([g], ndata="h")
    block = dgl.create_block(([0], [0]))
    with pytest.raises(DGLError, match="block"):
        batch([block])
    bip = dgl.heterograph({("user", "plays", "game"): ([0], [0])})
    with pytest.raises(DGLError, match="expected every graph to have the relation"):
        batch([g, bip])


def test_unbatch_errors():
    g = dgl.graph(([0, 1, 3], [1, 2, 4]), num_nodes=5)
    with pytest.raises(DGLError, match="both given or both None, got only node_split"):
        unbatch(g, node_split=[3, 2])
    with pytest.raises(DGLError, match=r"expected node_split counts adding up to 5 .* got \[3, 1\]"):
        unbatch(g, node_split=[3, 1], edge_split=[2, 1])
    with pytest.raises(DGLError, match=r"expected edge_split counts adding up to 3"):
        unbatch(g, node_split=[3, 2], edge_split=[2, 2])
    with pytest.raises(DGLError, match="same length"):
        unbatch(g, node_split=[3, 2], edge_split=[2, 1, 0])
    with pytest.raises(DGLError, match="non-negative"):
        unbatch(g, node_split=[6, -1], edge_split=[2, 1])
    with pytest.raises(DGLError, match="edge 1 with destination node 2 outside graph 0"):
        unbatch(g, node_split=[2, 3], edge_split=[2, 1])
    with pytest.raises(TypeError, match="integer counts"):
        unbatch(g, node_split=torch.tensor([3.0, 2.0]), edge_split=[2, 1])
    bip = dgl.heterograph({("user", "plays", "game"): ([0], [0])})
    with pytest.raises(DGLError, match="dict"):
        unbatch(bip, node_split=[1], edge_split=[1])


def test_batch_unbatch_bipartite_roundtrip():
    g1 = dgl.heterograph({("user", "plays", "game"): ([0, 1, 2], [0, 0, 1])})
    g1.nodes["user"].data["h"] = torch.arange(3.0)
    g2 = dgl.heterograph({("user", "plays", "game"): ([0], [2])}, {"user": 2, "game": 3})
    g2.nodes["user"].data["h"] = torch.tensor([10.0, 11.0])
    bg = batch([g1, g2])
    assert bg.batch_size == 2
    assert bg.batch_num_nodes("user").tolist() == [3, 2] and bg.batch_num_nodes("game").tolist() == [2, 3]
    assert bg.edges()[0].tolist() == [0, 1, 2, 3] and bg.edges()[1].tolist() == [0, 0, 1, 4]
    a, b = unbatch(bg)
    assert (b.num_src_nodes(), b.num_dst_nodes()) == (2, 3) and b.nodes["user"].data["h"].tolist() == [10.0, 11.0]
    assert b.edges()[0].tolist() == [0] and b.edges()[1].tolist() == [2]
    assert torch.equal(a.edges()[0], g1.edges()[0])


def test_batch_routes_heterographs():
    def typed(n):
        return dgl.heterograph({("a", "r", "b"): (torch.arange(n), torch.zeros(n, dtype=torch.int64)),
                                ("b", "s", "a"): ([0], [0])}, {"a": n, "b": 1})
    bg = batch([typed(2), typed(3)])
    assert isinstance(bg, dgl.HeteroGraph) and bg.num_nodes("a") == 5 and bg.num_nodes("b") == 2
    parts = unbatch(bg)
    assert [p.num_nodes("a") for p in parts] == [2, 3]
