"""Structural transforms against hand-computed small cases (DGL's semantics)."""

import pytest
import torch

import mpgraph as dgl
from mpgraph import DGLError
from mpgraph.transforms import functional as F


def _g(src, dst, n=None, idtype=torch.int64):
    return dgl.graph((torch.tensor(src), torch.tensor(dst)), num_nodes=n, idtype=idtype)


def _edges(g):
    u, v = g.edges()
    return u.tolist(), v.tolist()


def _plays(idtype=torch.int64):
    # user 0->game 0, user 1->game 0, user 1->game 2, user 2->game 1
    return dgl.heterograph({("user", "plays", "game"): (torch.tensor([0, 1, 1, 2]), torch.tensor([0, 0, 2, 1]))},
                           {"user": 3, "game": 3}, idtype=idtype)


def _block():
    return dgl.create_block(([0, 1, 2], [0, 0, 1]), num_src_nodes=4, num_dst_nodes=2)


# ----------------------------------------------------------------------
# add_self_loop / remove_self_loop
# ----------------------------------------------------------------------
def test_add_self_loop_fills_and_carries(idtype):
    g = _g([0, 0, 2], [2, 1, 0], idtype=idtype)
    g.ndata["h"] = torch.arange(3.0)
    g.edata["he"] = torch.tensor([[1.0], [2.0], [3.0]])
    g.edata["w"] = torch.tensor([5, 6, 7])
    sg = F.add_self_loop(g)
    assert sg.idtype == idtype and sg.edges()[0].dtype == idtype
    assert _edges(sg) == ([0, 0, 2, 0, 1, 2], [2, 1, 0, 0, 1, 2])
    assert sg.edata["he"].squeeze(1).tolist() == [1, 2, 3, 1, 1, 1]
    assert sg.edata["w"].tolist() == [5, 6, 7, 1, 1, 1] and sg.edata["w"].dtype == torch.int64
    assert sg.ndata["h"] is g.ndata["h"]
    # the input is untouched
    assert g.num_edges() == 3 and set(g.edata.keys()) == {"he", "w"}

    sg = F.add_self_loop(g, edge_feat_names=["he"], fill_data=0.5)
    assert sg.edata["he"].squeeze(1).tolist() == [1, 2, 3, 0.5, 0.5, 0.5]
    assert sg.edata["w"].tolist() == [5, 6, 7, 0, 0, 0]  # not named: zero-initialised


@pytest.mark.parametrize("how,expect", [("sum", [0, 7, 8]), ("mean", [0, 7 / 3, 8]), ("max", [0, 4, 8]),
                                        ("min", [0, 1, 8])])
def test_add_self_loop_aggregates_in_edges(how, expect, idtype):
    g = _g([0, 1, 2, 0], [1, 1, 1, 2], idtype=idtype)
    g.edata["he"] = torch.tensor([1.0, 2.0, 4.0, 8.0])
    sg = F.add_self_loop(g, fill_data=how)
    assert torch.allclose(sg.edata["he"][4:], torch.tensor(expect, dtype=torch.float32))
    assert sg.edata["he"][:4].tolist() == [1, 2, 4, 8]


def test_add_self_loop_half_sum_keeps_dtype():
    g = _g([0, 1, 2], [1, 1, 1])
    g.edata["he"] = torch.full((3, 2), 0.1, dtype=torch.float16)
    sg = F.add_self_loop(g, fill_data="sum")
    assert sg.edata["he"].dtype == torch.float16
    assert torch.allclose(sg.edata["he"][4].float(), torch.full((2,), 0.3), atol=1e-3)


def test_add_self_loop_rejects():
    with pytest.raises(DGLError, match="uni-bipartite"):
        F.add_self_loop(_plays())
    with pytest.raises(DGLError, match="got a block"):
        F.add_self_loop(_block())
    g = _g([0], [1])
    g.edata["he"] = torch.ones(1)
    with pytest.raises(DGLError, match="expected fill_data .* got 'median'"):
        F.add_self_loop(g, fill_data="median")
    with pytest.raises(DGLError, match=r"expected edge_feat_names among .*\['he'\], got \['x'\]"):
        F.add_self_loop(g, edge_feat_names=["x"])
    with pytest.raises(TypeError, match="expected an mpgraph graph"):
        F.add_self_loop("not a graph")


def test_remove_self_loop(idtype):
    g = _g([0, 0, 0, 1], [1, 0, 0, 2], idtype=idtype)
    g.edata["he"] = torch.tensor([0.0, 1.0, 2.0, 3.0])
    ng = F.remove_self_loop(g)
    assert ng.idtype == idtype and _edges(ng) == ([0, 1], [1, 2])
    assert ng.edata["he"].tolist() == [0, 3] and dgl.EID not in ng.edata
    assert g.num_edges() == 4
    with pytest.raises(DGLError, match="uni-bipartite"):
        F.remove_self_loop(_plays())


def test_remove_self_loop_keeps_batch_counts():
    # graph 1: nodes 0-1, edges 0->0, 0->1; graph 2: nodes 2-3, edges 2->3, 3->3, 3->3
    g = _g([0, 0, 2, 3, 3], [0, 1, 3, 3, 3])
    g.set_batch_num_nodes([2, 2])
    g.set_batch_num_edges([2, 3])
    ng = F.remove_self_loop(g)
    assert ng.batch_num_edges().tolist() == [1, 1] and ng.batch_num_nodes().tolist() == [2, 2]


# ----------------------------------------------------------------------
# to_simple / to_bidirected / add_reverse_edges / reverse
# ----------------------------------------------------------------------
def test_to_simple(idtype):
    g = _g([2, 0, 1, 1, 0], [0, 1, 2, 2, 1], idtype=idtype)
    g.ndata["h"] = torch.arange(3.0)
    g.edata["he"] = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    sg, wm = F.to_simple(g, writeback_mapping=True, copy_edata=True)
    assert _edges(sg) == ([0, 1, 2], [1, 2, 0])  # sorted by (src, dst)
    assert sg.edata["count"].tolist() == [2, 2, 1] and sg.edata["count"].dtype == idtype
    assert wm.tolist() == [2, 0, 1, 1, 0] and wm.dtype == idtype
    assert sg.edata["he"].tolist() == [2, 3, 1]  # 'arbitrary' = first (lowest-ID) merged edge
    assert sg.ndata["h"] is g.ndata["h"]
    assert F.to_simple(g, copy_edata=True, aggregator="sum").edata["he"].tolist() == [7, 7, 1]
    assert F.to_simple(g, copy_edata=True, aggregator="mean").edata["he"].tolist() == [3.5, 3.5, 1]
    bare = F.to_simple(g, return_counts=None, copy_ndata=False)
    assert len(bare.edata) == 0 and len(bare.ndata) == 0
    with pytest.raises(DGLError, match="expected aggregator in .* got 'max'"):
        F.to_simple(g, aggregator="max")
    with pytest.raises(DGLError, match="got a block"):
        F.to_simple(_block())


def test_to_simple_bipartite(idtype):
    g = dgl.heterograph({("u", "r", "v"): ([0, 0, 1], [1, 1, 0])}, {"u": 2, "v": 3}, idtype=idtype)
    sg = F.to_simple(g)
    assert sg.canonical_etypes == [("u", "r", "v")] and sg.num_src_nodes() == 2 and sg.num_dst_nodes() == 3
    assert _edges(sg) == ([0, 1], [1, 0]) and sg.edata["count"].tolist() == [2, 1]


def test_to_bidirected(idtype):
    g = _g([0, 1, 2, 0], [1, 2, 0, 1], idtype=idtype)
    g.ndata["h"] = torch.arange(3.0)
    g.edata["he"] = torch.arange(4.0)
    bg = F.to_bidirected(g)
    assert bg.idtype == idtype and _edges(bg) == ([0, 0, 1, 1, 2, 2], [1, 2, 0, 2, 0, 1])
    assert len(bg.ndata) == 0 and len(bg.edata) == 0
    assert F.to_bidirected(g, copy_ndata=True).ndata["h"] is g.ndata["h"]
    assert _edges(F.to_bidirected(_g([0, 1], [1, 1]))) == ([0, 1, 1], [1, 0, 1])
    with pytest.raises(DGLError, match="homogeneous"):
        F.to_bidirected(_plays())


def test_add_reverse_edges(idtype):
    g = _g([0, 0, 1], [0, 1, 2], idtype=idtype)
    g.edata["he"] = torch.tensor([1.0, 2.0, 3.0])
    g.ndata["h"] = torch.arange(3.0)
    rg = F.add_reverse_edges(g, copy_edata=True)
    assert _edges(rg) == ([0, 0, 1, 1, 2], [0, 1, 2, 0, 1])  # no reverse of the self-loop
    assert rg.edata["he"].tolist() == [1, 2, 3, 2, 3] and rg.ndata["h"] is g.ndata["h"]
    rg = F.add_reverse_edges(g, exclude_self=False)
    assert _edges(rg) == ([0, 0, 1, 0, 1, 2], [0, 1, 2, 0, 0, 1]) and len(rg.edata) == 0
    with pytest.raises(DGLError, match="ignore_bipartite"):
        F.add_reverse_edges(_plays())
    kept = F.add_reverse_edges(_plays(), ignore_bipartite=True)
    assert _edges(kept) == _edges(_plays())


def test_reverse(idtype):
    g = _g([0, 1, 2], [1, 2, 0], idtype=idtype)
    g.ndata["h"] = torch.arange(3.0)
    g.edata["he"] = torch.arange(3.0)
    g.create_formats_()
    rg = F.reverse(g)
    assert rg.idtype == idtype and _edges(rg) == ([1, 2, 0], [0, 1, 2])
    assert rg.ndata["h"] is g.ndata["h"] and len(rg.edata) == 0
    assert "csr" in rg.formats()["created"]  # the input's CSC, not re-sorted
    assert F.reverse(g, copy_edata=True).edata["he"] is g.edata["he"]
    assert len(F.reverse(g, copy_ndata=False).ndata) == 0
    p = _plays(idtype)
    p.nodes["game"].data["hg"] = torch.ones(3, 1)
    rp = F.reverse(p)
    assert rp.canonical_etypes == [("game", "plays", "user")]
    assert rp.srcdata["hg"] is p.dstdata["hg"] and _edges(rp) == ([0, 0, 2, 1], [0, 1, 1, 2])
    with pytest.raises(DGLError, match="got a block"):
        F.reverse(_block())


# ----------------------------------------------------------------------
# line_graph / khop_graph
# ----------------------------------------------------------------------
def test_line_graph(idtype):
    g = _g([0, 1, 1, 2, 2], [2, 0, 2, 0, 1], idtype=idtype)
    g.edata["w"] = torch.arange(5.0)
    lg = F.line_graph(g)
    assert lg.idtype == idtype and lg.num_nodes() == 5 and len(lg.ndata) == 0
    assert _edges(lg) == ([0, 0, 1, 2, 2, 3, 4, 4], [3, 4, 0, 3, 4, 0, 1, 2])
    assert _edges(F.line_graph(g, backtracking=False)) == ([0, 1, 2, 4], [4, 0, 3, 1])
    assert F.line_graph(g, shared=True).ndata["w"] is g.edata["w"]
    # a self-loop is not linked to itself
    assert _edges(F.line_graph(_g([0, 0], [0, 1]))) == ([0], [1])
    with pytest.raises(DGLError, match="homogeneous"):
        F.line_graph(_plays())


def test_khop_graph(idtype):
    g = _g([0, 1, 0], [1, 2, 1], idtype=idtype)
    g.ndata["h"] = torch.arange(3.0)
    kg = F.khop_graph(g, 2)
    assert kg.idtype == idtype and _edges(kg) == ([0, 0], [2, 2]) and kg.ndata["h"] is g.ndata["h"]
    assert _edges(F.khop_graph(g, 1)) == ([0, 0, 1], [1, 1, 2])
    assert _edges(F.khop_graph(g, 0)) == ([0, 1, 2], [0, 1, 2])
    assert len(F.khop_graph(g, 2, copy_ndata=False).ndata) == 0
    with pytest.raises(DGLError, match="expected k to be an int >= 0, got -1"):
        F.khop_graph(g, -1)


def test_khop_graph_counts_walks():
    g = _g([0, 1, 2, 3, 4, 0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 1, 2, 3, 4, 0])
    A = torch.zeros(5, 5, dtype=torch.int64)
    A[g.edges()[0], g.edges()[1]] = 1
    kg = F.khop_graph(g, 3)
    assert kg.num_edges() == 40
    counts = torch.bincount(kg.edges()[0] * 5 + kg.edges()[1], minlength=25).reshape(5, 5)
    assert torch.equal(counts, torch.linalg.matrix_power(A, 3))


# ----------------------------------------------------------------------
# compact_graphs
# ----------------------------------------------------------------------
def test_compact_graphs_homogeneous(idtype):
    g = _g([1, 3], [3, 5], n=10, idtype=idtype)
    g.ndata["x"] = torch.arange(10) * 10
    g.edata["w"] = torch.tensor([0.5, 1.5])
    cg = F.compact_graphs(g)
    assert cg.num_nodes() == 3 and cg.ndata[dgl.NID].tolist() == [1, 3, 5] and cg.ndata[dgl.NID].dtype == idtype
    assert _edges(cg) == ([0, 1], [1, 2]) and cg.ndata["x"].tolist() == [10, 30, 50]
    assert cg.edata["w"] is g.edata["w"]
    cg = F.compact_graphs(g, always_preserve=torch.tensor([9, 3]))
    assert cg.ndata[dgl.NID].tolist() == [9, 3, 1, 5] and _edges(cg) == ([2, 1], [1, 3])
    bare = F.compact_graphs([g], copy_ndata=False, copy_edata=False)
    assert isinstance(bare, list) and list(bare[0].ndata.keys()) == [dgl.NID] and len(bare[0].edata) == 0
    assert F.compact_graphs([]) == []


def test_compact_graphs_bipartite(idtype):
    def plays(src, dst):
        return dgl.heterograph({("user", "plays", "game"): (src, dst)}, {"user": 20, "game": 10}, idtype=idtype)
    g, g2 = plays([1, 3], [3, 5]), plays([1, 6], [6, 8])
    cg, cg2 = F.compact_graphs([g, g2])
    assert cg.srcdata[dgl.NID].tolist() == [1, 3, 6] and cg.dstdata[dgl.NID].tolist() == [3, 5, 6, 8]
    assert _edges(cg) == ([0, 1], [0, 1]) and _edges(cg2) == ([0, 2], [2, 3])
    cg = F.compact_graphs(g, always_preserve={"game": torch.tensor([0])})
    assert cg.dstdata[dgl.NID].tolist() == [0, 3, 5]


def test_compact_graphs_rejects():
    with pytest.raises(DGLError, match="same node types and counts"):
        F.compact_graphs([_g([0], [1], n=3), _g([0], [1], n=4)])
    with pytest.raises(DGLError, match="got a block"):
        F.compact_graphs(_block())
    with pytest.raises(DGLError, match=r"expected node IDs in \[0, 3\), got 5"):
        F.compact_graphs(_g([0], [1], n=3), always_preserve=[5])
