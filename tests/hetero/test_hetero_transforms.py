"""Transforms on HeteroGraphs: each relation against the homogeneous transform of its standalone graph."""

import pytest
import torch
from hetero_cases import reference

import mpgraph as dgl
import mpgraph.transforms as T
from mpgraph.base import DGLError, NID
from mpgraph.heterograph import HeteroGraph, batch_hetero
from mpgraph.transforms import functional as F

NN = {"user": 5, "game": 4, "dev": 2}
RELS = {
    ("user", "follows", "user"): ([0, 1, 1, 2, 3, 3, 4, 0], [0, 2, 2, 2, 1, 0, 4, 1]),    # loops 0, 2, 4; (1,2) x2
    ("user", "plays", "game"): ([0, 1, 1, 4, 4], [3, 0, 0, 2, 3]),                         # (1,0) x2
    ("game", "similar", "game"): ([0, 1, 3, 3], [1, 1, 2, 2]),                             # loop 1; (3,2) x2
    ("dev", "makes", "game"): ([0, 1], [0, 3]),
}


def _graph():
    g = dgl.heterograph({k: (torch.tensor(u), torch.tensor(v)) for k, (u, v) in RELS.items()}, dict(NN))
    gen = torch.Generator().manual_seed(0)
    for nt in g.ntypes:
        g.nodes[nt].data["h"] = torch.randn(g.num_nodes(nt), 2, generator=gen, dtype=torch.float64)
    for cet in g.canonical_etypes:
        g.edges[cet].data["w"] = torch.randn(g.num_edges(cet), 3, generator=gen, dtype=torch.float64)
    return g


def _snapshot(g):
    return ({cet: [t.clone() for t in g.edges(etype=cet)] for cet in g.canonical_etypes},
            {cet: dict(g.edges[cet].data) for cet in g.canonical_etypes},
            {nt: dict(g.nodes[nt].data) for nt in g.ntypes})


def _assert_unchanged(g, snap):
    edges, edata, ndata = snap
    for cet in g.canonical_etypes:
        assert all(torch.equal(a, b) for a, b in zip(g.edges(etype=cet), edges[cet]))
        assert dict(g.edges[cet].data) == edata[cet]
    for nt in g.ntypes:
        assert dict(g.nodes[nt].data) == ndata[nt]


def _ref_with_w(g, cet):
    ref = reference(g, cet)
    ref.edata["w"] = g.edges[cet].data["w"]
    return ref


def _same_relation(out, cet, ref, out_cet=None, names=("w",)):
    out_cet = out_cet or cet
    for a, b in zip(out.edges(etype=out_cet), ref.edges()):
        assert torch.equal(a, b), out_cet
    for k in names:
        if k in ref.edata:
            assert torch.equal(out.edges[out_cet].data[k], ref.edata[k]), (out_cet, k)


@pytest.mark.parametrize("fill", [1.0, "sum", "max"])
def test_add_self_loop_one_relation(fill):
    g = _graph()
    snap = _snapshot(g)
    for etype in ("follows", ("game", "similar", "game")):
        out = F.add_self_loop(g, fill_data=fill, etype=etype)
        cet = g.to_canonical_etype(etype)
        assert isinstance(out, HeteroGraph) and out.canonical_etypes == g.canonical_etypes
        _same_relation(out, cet, F.add_self_loop(_ref_with_w(g, cet), fill_data=fill))
        for other in g.canonical_etypes:
            if other != cet:
                _same_relation(out, other, _ref_with_w(g, other))
        assert out.nodes["user"].data["h"] is g.nodes["user"].data["h"]
    _assert_unchanged(g, snap)
    with pytest.raises(DGLError, match="add_self_loop: this graph has 4 relations"):
        F.add_self_loop(g)
    with pytest.raises(DGLError, match="uni-bipartite relation \\('user', 'plays', 'game'\\)"):
        F.add_self_loop(g, etype="plays")
    with pytest.raises(DGLError, match="'nope' does not exist"):
        F.add_self_loop(g, etype="nope")


def test_remove_self_loop_keeps_batch_counts():
    g = _graph()
    out = F.remove_self_loop(g, etype="follows")
    _same_relation(out, ("user", "follows", "user"), F.remove_self_loop(_ref_with_w(g, ("user", "follows", "user"))))
    _same_relation(out, ("game", "similar", "game"), _ref_with_w(g, ("game", "similar", "game")))
    bg = batch_hetero([_graph(), _graph()])
    out = F.remove_self_loop(bg, etype="similar")
    assert out.batch_num_edges("similar").tolist() == [3, 3]
    assert out.batch_num_edges("follows").tolist() == [8, 8]
    assert [x.num_edges("similar") for x in dgl.unbatch(out)] == [3, 3]
    with pytest.raises(DGLError, match="uni-bipartite"):
        F.remove_self_loop(g, etype="makes")


@pytest.mark.parametrize("aggregator", ["arbitrary", "sum", "mean"])
def test_to_simple_every_relation(aggregator):
    g = _graph()
    snap = _snapshot(g)
    out, mapping = F.to_simple(g, writeback_mapping=True, copy_edata=True, aggregator=aggregator)
    assert set(mapping) == set(g.canonical_etypes)
    for cet in g.canonical_etypes:
        ref, ref_map = F.to_simple(_ref_with_w(g, cet), writeback_mapping=True, copy_edata=True,
                                   aggregator=aggregator)
        _same_relation(out, cet, ref, names=("w", "count"))
        assert torch.equal(mapping[cet], ref_map)
    assert out.num_edges("follows") == 7 and out.edges["plays"].data["count"].tolist() == [1, 2, 1, 1]
    assert "h" not in F.to_simple(g, copy_ndata=False).nodes["user"].data
    _assert_unchanged(g, snap)
    sg = T.ToSimple(aggregator=aggregator)(g)
    for cet in g.canonical_etypes:
        assert all(torch.equal(a, b) for a, b in zip(sg.edges(etype=cet), out.edges(etype=cet)))
        assert torch.equal(sg.edges[cet].data["w"], out.edges[cet].data["w"])


def test_reverse_and_batch_counts():
    g = _graph()
    out = F.reverse(g, copy_edata=True)
    assert out.canonical_etypes == sorted((d, e, s) for s, e, d in g.canonical_etypes)
    for s, e, d in g.canonical_etypes:
        ref = F.reverse(_ref_with_w(g, (s, e, d)), copy_edata=True)
        _same_relation(out, (s, e, d), ref, out_cet=(d, e, s))
    assert "w" not in F.reverse(g).edges[("game", "plays", "user")].data
    bg = batch_hetero([_graph(), g])
    rb = F.reverse(bg)
    assert rb.batch_num_edges(("game", "plays", "user")).tolist() == [5, 5]
    assert [x.num_edges("makes") for x in dgl.unbatch(rb)] == [2, 2]


def test_add_reverse_edges_and_to_bidirected():
    g = _graph()
    with pytest.raises(DGLError, match=r"uni-bipartite relation \('dev', 'makes', 'game'\).*ignore_bipartite"):
        F.add_reverse_edges(g)
    out = F.add_reverse_edges(g, ignore_bipartite=True, copy_edata=True)
    for cet in g.canonical_etypes:
        if cet[0] == cet[2]:
            ref = F.add_reverse_edges(_ref_with_w(g, cet), copy_edata=True)
        else:
            ref = _ref_with_w(g, cet)
        _same_relation(out, cet, ref)
    out = F.add_reverse_edges(g, ignore_bipartite=True, exclude_self=False)
    assert out.num_edges("follows") == 16 and len(out.edges["follows"].data) == 0
    same = dgl.edge_type_subgraph(g, ["follows", "similar"])
    bi = F.to_bidirected(same)
    for cet in same.canonical_etypes:
        _same_relation(bi, cet, F.to_bidirected(reference(g, cet)))
    with pytest.raises(DGLError, match="to_bidirected expected every relation"):
        F.to_bidirected(g)


def test_compact_graphs_hand_computed():
    g1 = dgl.heterograph({("u", "r", "v"): ([3, 1], [0, 2]), ("v", "s", "v"): ([4], [2])}, {"u": 5, "v": 6})
    g2 = dgl.heterograph({("u", "r", "v"): ([0], [5]), ("v", "s", "v"): ([2], [2])}, {"u": 5, "v": 6})
    g1.nodes["u"].data["h"] = torch.arange(5.0)
    c1, c2 = F.compact_graphs([g1, g2], always_preserve={"v": [1]})
    # u: g1 r sources 3, 1; g2 r source 0. v: preserve 1; g1 r dst 0, 2; g1 s src 4, dst 2; g2 r dst 5; ...
    assert c1.nodes["u"].data[NID].tolist() == [3, 1, 0]
    assert c1.nodes["v"].data[NID].tolist() == [1, 0, 2, 4, 5]
    assert c1.nodes["u"].data["h"].tolist() == [3.0, 1.0, 0.0]
    for c, g in ((c1, g1), (c2, g2)):
        for cet in g.canonical_etypes:
            u, v = c.edges(etype=cet)
            gu, gv = g.edges(etype=cet)
            assert torch.equal(c.nodes[cet[0]].data[NID][u], gu) and torch.equal(c.nodes[cet[2]].data[NID][v], gv)
    single = F.compact_graphs(g1)
    assert isinstance(single, HeteroGraph) and single.num_nodes("v") == 3
    with pytest.raises(DGLError, match="'w'"):
        F.compact_graphs(g1, always_preserve={"w": [0]})


def test_modules_on_heterographs():
    g = _graph()
    snap = _snapshot(g)
    out = T.AddSelfLoop()(g)
    for cet in (("user", "follows", "user"), ("game", "similar", "game")):
        ref = T.AddSelfLoop()(_ref_with_w(g, cet))
        _same_relation(out, cet, ref)
        u, v = out.edges(etype=cet)
        assert int((u == v).sum()) == out.num_nodes(cet[0])          # exactly one loop per node
    _same_relation(out, ("user", "plays", "game"), _ref_with_w(g, ("user", "plays", "game")))
    assert T.AddSelfLoop(edge_feat_names=["w"], fill_data=2.0)(g).edges["follows"].data["w"][-1].tolist() == [2.0] * 3
    out = T.RemoveSelfLoop()(g)
    assert out.num_edges("follows") == 5 and out.num_edges("similar") == 3 and out.num_edges("plays") == 5
    out = T.AddReverse(copy_edata=True)(g)
    assert {("game", "rev_plays", "user"), ("game", "rev_makes", "dev")} <= set(out.canonical_etypes)
    ru, rv = out.edges(etype="rev_plays")
    pu, pv = g.edges(etype="plays")
    assert torch.equal(ru, pv) and torch.equal(rv, pu)
    assert torch.equal(out.edges["rev_plays"].data["w"], g.edges["plays"].data["w"])
    fu, fv = out.edges(etype="follows")
    gu, gv = g.edges(etype="follows")
    assert torch.equal(fu, torch.cat([gu, gv])) and torch.equal(fv, torch.cat([gv, gu]))
    zero = T.AddReverse()(g)
    assert torch.equal(zero.edges["follows"].data["w"][8:], torch.zeros(8, 3, dtype=torch.float64))
    assert len(zero.edges["rev_plays"].data) == 0
    with pytest.raises(DGLError, match="AddReverse expected no relation \\('game', 'rev_makes', 'dev'\\)"):
        T.AddReverse()(out)
    _assert_unchanged(g, snap)


@pytest.mark.parametrize("name", ["node_subgraph", "in_subgraph", "line_graph", "khop_graph", "reorder_graph",
                                  "random_walk_pe", "DropEdge", "DropNode", "GCNNorm", "LineGraph", "FeatMask"])
def test_unsupported_transforms_raise_naming_themselves(name):
    g = _graph()
    calls = {
        "node_subgraph": lambda: F.node_subgraph(g, {"user": [0]}),
        "in_subgraph": lambda: F.in_subgraph(g, {"user": [0]}),
        "line_graph": lambda: F.line_graph(g),
        "khop_graph": lambda: F.khop_graph(g, 2),
        "reorder_graph": lambda: F.reorder_graph(g),
        "random_walk_pe": lambda: F.random_walk_pe(g, 2),
        "DropEdge": lambda: T.DropEdge()(g),
        "DropNode": lambda: T.DropNode()(g),
        "GCNNorm": lambda: T.GCNNorm()(g),
        "LineGraph": lambda: T.LineGraph()(g),
        "FeatMask": lambda: T.FeatMask(node_feat_names=["h"])(g),
    }
    what = {"LineGraph": "line_graph"}.get(name, name)
    with pytest.raises(DGLError, match=f"{what} does not support graphs with several node or edge types"):
        calls[name]()
