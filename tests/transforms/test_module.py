"""Transform modules: hand-computed cases, seeded reproducibility, statistics on bigger graphs."""

import pytest
import torch
from torch.distributions import Bernoulli

import mpgraph as dgl
from mpgraph import DGLError
from mpgraph import transforms as T


def _g(src, dst, n=None, idtype=torch.int64):
    return dgl.graph((torch.tensor(src), torch.tensor(dst)), num_nodes=n, idtype=idtype)


def _edges(g):
    u, v = g.edges()
    return u.tolist(), v.tolist()


def _plays(idtype=torch.int64):
    return dgl.heterograph({("user", "plays", "game"): (torch.tensor([0, 1, 1, 2]), torch.tensor([0, 0, 2, 1]))},
                           {"user": 3, "game": 3}, idtype=idtype)


def _big(idtype=torch.int64, N=2000, E=20000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    g = dgl.graph((torch.randint(0, N, (E,), generator=gen), torch.randint(0, N, (E,), generator=gen)),
                  num_nodes=N, idtype=idtype)
    g.ndata["id"] = torch.arange(N)
    g.edata["id"] = torch.arange(E)
    return g


def _block():
    return dgl.create_block(([0, 1], [0, 0]), num_src_nodes=2, num_dst_nodes=1)


def test_base_and_compose():
    with pytest.raises(NotImplementedError):
        T.BaseTransform()(_g([0], [1]))
    c = T.Compose([T.ToSimple(), T.AddReverse()])
    assert repr(c) == "Compose([\n  ToSimple(),\n  AddReverse()\n])"
    assert _edges(c(_g([0, 0], [1, 1]))) == ([0, 1], [1, 0])
    with pytest.raises(TypeError, match="Compose expected callables"):
        T.Compose([1])


def test_add_self_loop_module(idtype):
    g = _g([1, 1], [1, 2], idtype=idtype)
    g.edata["w"] = torch.tensor([5.0, 6.0])
    ng = T.AddSelfLoop()(g)
    assert ng.idtype == idtype and _edges(ng) == ([1, 0, 1, 2], [2, 0, 1, 2])
    assert ng.edata["w"].tolist() == [6, 1, 1, 1]
    assert _edges(T.AddSelfLoop(allow_duplicate=True)(g)) == ([1, 1, 0, 1, 2], [1, 2, 0, 1, 2])
    assert T.AddSelfLoop(fill_data="sum")(g).edata["w"].tolist() == [6, 0, 0, 6]
    p = _plays()
    assert T.AddSelfLoop()(p) is p and T.RemoveSelfLoop()(p) is p
    with pytest.raises(DGLError, match="expected new_etypes=False"):
        T.AddSelfLoop(new_etypes=True)
    with pytest.raises(DGLError, match="got 'median'"):
        T.AddSelfLoop(fill_data="median")
    with pytest.raises(DGLError, match="AddSelfLoop expected a graph, got a block"):
        T.AddSelfLoop()(_block())
    assert _edges(T.RemoveSelfLoop()(g)) == ([1], [2])


def test_add_reverse_module(idtype):
    g = _g([0, 2], [1, 2], idtype=idtype)
    g.ndata["h"] = torch.arange(3.0)
    g.edata["w"] = torch.tensor([[1.0, 1.0], [2.0, 2.0]])
    ng = T.AddReverse()(g)
    assert ng.idtype == idtype and _edges(ng) == ([0, 2, 1, 2], [1, 2, 0, 2])  # self-loops reversed too
    assert ng.edata["w"].tolist() == [[1, 1], [2, 2], [0, 0], [0, 0]] and ng.ndata["h"] is g.ndata["h"]
    assert T.AddReverse(copy_edata=True)(g).edata["w"].tolist() == [[1, 1], [2, 2], [1, 1], [2, 2]]
    with pytest.raises(DGLError, match="rev_plays"):
        T.AddReverse()(_plays())
    with pytest.raises(DGLError, match="expected sym_new_etype=False"):
        T.AddReverse(sym_new_etype=True)


def test_to_simple_line_khop_modules(idtype):
    g = _g([0, 1, 1], [1, 2, 2], idtype=idtype)
    g.edata["w"] = torch.tensor([0.1, 0.2, 0.3])
    sg = T.ToSimple()(g)
    assert _edges(sg) == ([0, 1], [1, 2]) and sg.edata["count"].tolist() == [1, 2]
    assert torch.allclose(sg.edata["w"], torch.tensor([0.1, 0.2]))
    assert torch.allclose(T.ToSimple(aggregator="mean")(g).edata["w"], torch.tensor([0.1, 0.25]))
    with pytest.raises(DGLError, match="expected aggregator"):
        T.ToSimple(aggregator="max")
    lg_in = _g([0, 1, 1], [1, 0, 2], idtype=idtype)
    lg_in.edata["w"] = torch.tensor([0.0, 0.1, 0.2])
    lg = T.LineGraph()(lg_in)
    assert _edges(lg) == ([0, 0, 1], [1, 2, 0]) and lg.ndata["w"] is lg_in.edata["w"]
    assert _edges(T.LineGraph(backtracking=False)(lg_in)) == ([0], [2])
    assert _edges(T.KHopGraph(2)(_g([0, 1], [1, 2], idtype=idtype))) == ([0], [2])


def test_row_feat_normalizer(idtype):
    g = _g([0, 1], [1, 2], idtype=idtype)
    h = torch.tensor([[1.0, 3.0], [2.0, 2.0], [0.2, 0.3]])
    g.ndata["h"] = h
    g.edata["w"] = torch.tensor([[-1.0, 1.0], [0.0, 2.0]], dtype=torch.float16)
    out = T.RowFeatNormalizer(node_feat_names=["h"], edge_feat_names=["w"])(g)
    assert out is g and g.ndata["h"] is not h and h[0, 0] == 1.0  # replaced, not modified in place
    assert torch.allclose(g.ndata["h"], torch.tensor([[0.25, 0.75], [0.5, 0.5], [0.2, 0.3]]))  # sum < 1 kept
    assert g.edata["w"].dtype == torch.float16
    g.edata["w"] = torch.tensor([[-1.0, 1.0], [0.0, 2.0]])
    T.RowFeatNormalizer(subtract_min=True, edge_feat_names=["w"])(g)
    assert torch.allclose(g.edata["w"], torch.tensor([[0.0, 1.0], [1 / 4, 3 / 4]]))
    p = _plays()
    p.nodes["user"].data["h"] = torch.tensor([[1.0, 1.0]] * 3)
    p.nodes["game"].data["h"] = torch.tensor([[2.0, 6.0]] * 3)
    T.RowFeatNormalizer(node_feat_names=["h"])(p)
    assert p.srcdata["h"][0].tolist() == [0.5, 0.5] and p.dstdata["h"][0].tolist() == [0.25, 0.75]
    with pytest.raises(DGLError, match="expected node feature 'x' in the graph"):
        T.RowFeatNormalizer(node_feat_names=["x"])(g)
    g.ndata["i"] = torch.ones(3, 2, dtype=torch.int64)
    with pytest.raises(DGLError, match="expected floating-point features, got dtype torch.int64"):
        T.RowFeatNormalizer(node_feat_names=["i"])(g)


def test_feat_mask_seeded_and_statistics():
    g = _g([0, 1], [1, 2])
    h = torch.ones(3, 2000)
    g.ndata["h"] = h
    g.edata["e"] = torch.ones(2, 10)
    torch.manual_seed(3)
    T.FeatMask(p=0.3, node_feat_names=["h"], edge_feat_names=["e"])(g)
    torch.manual_seed(3)
    mask_h = Bernoulli(0.3).sample((2000,)).bool()  # DGL's draw order: node features, then edge features
    mask_e = Bernoulli(0.3).sample((10,)).bool()
    assert torch.equal(g.ndata["h"][0] == 0, mask_h) and torch.equal(g.edata["e"][1] == 0, mask_e)
    assert bool((g.ndata["h"] == g.ndata["h"][0]).all())  # whole columns
    assert abs(mask_h.float().mean().item() - 0.3) < 0.05
    assert bool((h == 1).all())  # the stored tensor was replaced, not modified
    same = T.FeatMask(p=0.0, node_feat_names=["h"])
    before = g.ndata["h"]
    assert same(g).ndata["h"] is before
    with pytest.raises(DGLError, match=r"expected p to be a probability in \[0, 1\], got 1.5"):
        T.FeatMask(p=1.5)


def test_gcn_norm():
    g = _g([0, 1, 2], [0, 0, 1])
    assert torch.allclose(T.GCNNorm()(g).edata["w"], torch.tensor([0.5, 2 ** -0.5, 0.0]))
    g.edata["w"] = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64)
    out = T.GCNNorm()(g).edata["w"]
    assert out.dtype == torch.float64 and torch.allclose(out, torch.tensor([1 / 3, 2 / 3, 0.0], dtype=torch.float64))
    p = _plays()
    assert T.GCNNorm()(p) is p and "w" not in p.edata


def test_drop_edge(idtype):
    g = _big(idtype)
    torch.manual_seed(7)
    a = T.DropEdge(p=0.3)(g)
    torch.manual_seed(7)
    b = T.DropEdge(p=0.3)(g)
    torch.manual_seed(7)
    kept = ~Bernoulli(0.3).sample((g.num_edges(),)).bool()  # DGL's draw
    assert a.idtype == idtype and torch.equal(a.edata["id"], kept.nonzero().squeeze(1))
    assert torch.equal(a.edata["id"], b.edata["id"]) and a.num_nodes() == g.num_nodes()
    u, v = g.edges()
    au, av = a.edges()
    assert torch.equal(au, u[a.edata["id"]]) and torch.equal(av, v[a.edata["id"]])
    assert abs(a.num_edges() / g.num_edges() - 0.7) < 0.02
    assert g.num_edges() == 20000  # input untouched
    assert T.DropEdge(p=0.0)(g).num_edges() == g.num_edges()


def test_drop_node(idtype):
    g = _big(idtype)
    torch.manual_seed(5)
    a = T.DropNode(p=0.4)(g)
    torch.manual_seed(5)
    keep = ~Bernoulli(0.4).sample((g.num_nodes(),)).bool()
    assert a.idtype == idtype and torch.equal(a.ndata["id"], keep.nonzero().squeeze(1))
    u, v = g.edges()
    both = keep[u.long()] & keep[v.long()]
    assert torch.equal(a.edata["id"], both.nonzero().squeeze(1))
    au, av = a.edges()
    assert torch.equal(a.ndata["id"][au.long()], u[a.edata["id"]].long())
    assert torch.equal(a.ndata["id"][av.long()], v[a.edata["id"]].long())
    assert abs(a.num_nodes() / g.num_nodes() - 0.6) < 0.05
    pb = T.DropNode(p=1.0)(_plays(idtype))
    assert pb.num_src_nodes() == 0 and pb.num_dst_nodes() == 0 and pb.num_edges() == 0


def test_add_edge(idtype):
    g = _big(idtype, N=1000, E=10000)
    torch.manual_seed(11)
    a = T.AddEdge(ratio=0.5)(g)
    torch.manual_seed(11)
    b = T.AddEdge(ratio=0.5)(g)
    assert a.idtype == idtype and a.num_edges() == 15000 and torch.equal(a.edges()[0], b.edges()[0])
    u, v = g.edges()
    au, av = a.edges()
    assert torch.equal(au[:10000], u) and torch.equal(av[:10000], v)
    assert bool((a.edata["id"][10000:] == 0).all())
    assert abs(au[10000:].double().mean().item() - 499.5) < 15 and abs(av[10000:].double().mean().item() - 499.5) < 15
    assert T.AddEdge(ratio=0.0)(g) is g
    bp = T.AddEdge(ratio=1.0)(_plays(idtype))
    assert bp.num_edges() == 8 and int(bp.edges()[1].max()) < 3
    with pytest.raises(DGLError, match="expected ratio to be a number >= 0, got -1"):
        T.AddEdge(ratio=-1)


def test_node_shuffle(idtype):
    g = _g([0, 1, 2], [1, 2, 3], idtype=idtype)
    g.ndata["h1"] = torch.arange(4.0)
    g.ndata["h2"] = torch.arange(4.0) * 2
    torch.manual_seed(2)
    s = T.NodeShuffle()(g)
    torch.manual_seed(2)
    perm = torch.randperm(4)
    assert torch.equal(s.ndata["h1"], g.ndata["h1"][perm]) and torch.equal(s.ndata["h2"], 2 * s.ndata["h1"])
    assert _edges(s) == _edges(g) and g.ndata["h1"].tolist() == [0, 1, 2, 3]
    big = _big(idtype)
    sb = T.NodeShuffle()(big)
    assert not torch.equal(sb.ndata["id"], big.ndata["id"])
    assert torch.equal(torch.sort(sb.ndata["id"]).values, big.ndata["id"])


def test_random_walk_pe():
    g = _g([0, 1, 1], [1, 1, 0])
    out = T.RandomWalkPE(k=2)(g)
    assert out is g and torch.allclose(g.ndata["PE"], torch.tensor([[0.0, 0.5], [0.5, 0.75]]))
    assert g.ndata["PE"].dtype == torch.float32
    # weights: node 1 goes to 1 with 3/4 and to 0 with 1/4
    g.edata["w"] = torch.tensor([1.0, 3.0, 1.0])
    pe = T.RandomWalkPE(k=2, feat_name="rw", eweight_name="w")(g).ndata["rw"]
    assert torch.allclose(pe, torch.tensor([[0.0, 0.25], [0.75, 0.75 ** 2 + 0.25]]))
    with pytest.raises(DGLError, match="homogeneous"):
        T.RandomWalkPE(k=2)(_plays())


def test_lap_pe():
    # 6-cycle, both directions
    src = torch.arange(6)
    g = dgl.graph((torch.cat([src, (src + 1) % 6]), torch.cat([(src + 1) % 6, src])))
    torch.manual_seed(0)
    g = T.LapPE(k=3, eigval_name="ev")(g)
    pe, ev = g.ndata["PE"], g.ndata["ev"]
    assert pe.shape == (6, 3) and ev.shape == (6, 3)
    assert torch.allclose(ev[0], torch.tensor([0.5, 0.5, 1.5]), atol=1e-6)
    A = torch.zeros(6, 6)
    A[g.edges()[0], g.edges()[1]] = 1
    L = torch.eye(6) - A / 2
    for j in range(3):
        assert torch.allclose(L @ pe[:, j], ev[0, j] * pe[:, j], atol=1e-5)
    torch.manual_seed(0)
    again = T.LapPE(k=3)(g).ndata["PE"]
    assert torch.equal(again, pe)  # same seed, same signs
    small = dgl.graph(([0, 1], [1, 0]))
    pe, ev = T.functional.lap_pe(small, 3, padding=True, return_eigval=True)
    assert pe.shape == (2, 3) and bool((pe[:, 1:] == 0).all()) and torch.isnan(ev[1:]).all()
    with pytest.raises(DGLError, match=r"expected k smaller than the number of nodes \(2\), got k=3"):
        T.LapPE(k=3)(small)
