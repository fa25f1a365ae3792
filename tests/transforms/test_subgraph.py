"""Subgraph extraction: node/edge/in/out/k-hop subgraphs, with DGL's node and edge order."""

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


def _cycle(idtype=torch.int64):
    return _g([0, 1, 2, 3, 4], [1, 2, 3, 4, 0], idtype=idtype)


def _plays(idtype=torch.int64):
    g = dgl.heterograph({("user", "plays", "game"): (torch.tensor([0, 1, 1, 2]), torch.tensor([0, 0, 2, 1]))},
                        {"user": 3, "game": 3}, idtype=idtype)
    g.nodes["user"].data["x"] = torch.tensor([10.0, 11.0, 12.0])
    g.nodes["game"].data["y"] = torch.tensor([20.0, 21.0, 22.0])
    g.edata["w"] = torch.tensor([0.0, 1.0, 2.0, 3.0])
    return g


def _mixed(idtype):
    # e0 0->1, e1 4->0, e2 1->4, e3 4->1, e4 2->3, e5 0->4
    g = _g([0, 4, 1, 4, 2, 0], [1, 0, 4, 1, 3, 4], idtype=idtype)
    g.ndata["x"] = torch.arange(5) * 10
    g.edata["w"] = torch.arange(6.0)
    return g


# ----------------------------------------------------------------------
# node_subgraph
# ----------------------------------------------------------------------
def test_node_subgraph_order_and_features(idtype):
    g = _mixed(idtype)
    sg = F.node_subgraph(g, torch.tensor([4, 0, 1], dtype=idtype))
    # edges grouped by source in the order of `nodes`, then by edge ID (DGL's CSR slicing)
    assert sg.edata[dgl.EID].tolist() == [1, 3, 0, 5, 2]
    assert _edges(sg) == ([0, 0, 1, 1, 2], [1, 2, 2, 0, 0])
    assert sg.ndata[dgl.NID].tolist() == [4, 0, 1] and sg.ndata["x"].tolist() == [40, 0, 10]
    assert sg.edata["w"].tolist() == [1, 3, 0, 5, 2]
    assert sg.idtype == idtype and sg.ndata[dgl.NID].dtype == idtype and sg.edata[dgl.EID].dtype == idtype
    assert g.num_nodes() == 5 and set(g.ndata.keys()) == {"x"}  # input untouched


def test_node_subgraph_mask_no_relabel_no_ids(idtype):
    g = _mixed(idtype)
    sg = F.node_subgraph(g, torch.tensor([True, True, False, False, True]))
    assert sg.ndata[dgl.NID].tolist() == [0, 1, 4] and sg.edata[dgl.EID].tolist() == [0, 5, 2, 1, 3]
    sg = F.node_subgraph(g, [4, 0, 1], relabel_nodes=False)
    assert sg.num_nodes() == 5 and dgl.NID not in sg.ndata and sg.ndata["x"] is g.ndata["x"]
    assert _edges(sg) == ([4, 4, 0, 0, 1], [0, 1, 1, 4, 4]) and sg.edata[dgl.EID].tolist() == [1, 3, 0, 5, 2]
    sg = F.node_subgraph(g, [4, 0, 1], store_ids=False)
    assert dgl.NID not in sg.ndata and dgl.EID not in sg.edata
    assert F.node_subgraph(g, []).num_nodes() == 0


def test_node_subgraph_bipartite(idtype):
    g = _plays(idtype)
    sg = F.node_subgraph(g, {"user": [1, 2], "game": [0, 1]})
    assert sg.canonical_etypes == [("user", "plays", "game")]
    assert sg.edata[dgl.EID].tolist() == [1, 3] and _edges(sg) == ([0, 1], [0, 1])
    assert sg.srcdata[dgl.NID].tolist() == [1, 2] and sg.dstdata[dgl.NID].tolist() == [0, 1]
    assert sg.srcdata["x"].tolist() == [11, 12] and sg.dstdata["y"].tolist() == [20, 21]
    sg = F.node_subgraph(g, {"user": [1]})  # a missing type selects none of its nodes
    assert sg.num_src_nodes() == 1 and sg.num_dst_nodes() == 0 and sg.num_edges() == 0


def test_node_subgraph_errors():
    g = _mixed(torch.int64)
    with pytest.raises(DGLError, match=r"expected node IDs in \[0, 5\), got 7"):
        F.node_subgraph(g, [0, 7])
    with pytest.raises(DGLError, match=r"expected node IDs in \[0, 5\), got -1"):
        F.node_subgraph(g, [-1])
    with pytest.raises(DGLError, match="expected distinct node IDs, got node 1 more than once"):
        F.node_subgraph(g, [1, 2, 1])
    with pytest.raises(DGLError, match="bool mask of 5 elements"):
        F.node_subgraph(g, torch.tensor([True, False]))
    with pytest.raises(TypeError, match="expected integer node IDs, got dtype torch.float32"):
        F.node_subgraph(g, torch.tensor([0.0, 1.0]))
    with pytest.raises(DGLError, match="got a block"):
        F.node_subgraph(dgl.create_block(([0], [0])), [0])
    with pytest.raises(DGLError, match="expected a dict"):
        F.node_subgraph(_plays(), [0, 1])
    with pytest.raises(DGLError, match="expected node types among"):
        F.node_subgraph(_plays(), {"player": [0]})


# ----------------------------------------------------------------------
# edge_subgraph
# ----------------------------------------------------------------------
def test_edge_subgraph(idtype):
    g = _cycle(idtype)
    g.ndata["x"] = torch.arange(5) * 10
    g.edata["w"] = torch.arange(5.0)
    sg = F.edge_subgraph(g, [0, 4])
    # nodes in order of first appearance in (src..., dst...), as DGL
    assert sg.ndata[dgl.NID].tolist() == [0, 4, 1] and _edges(sg) == ([0, 1], [2, 0])
    assert sg.edata[dgl.EID].tolist() == [0, 4] and sg.ndata["x"].tolist() == [0, 40, 10]
    assert sg.edata["w"].tolist() == [0, 4] and sg.idtype == idtype
    sg = F.edge_subgraph(g, torch.tensor([True, False, False, False, True]), relabel_nodes=False)
    assert sg.num_nodes() == 5 and _edges(sg) == ([0, 4], [1, 0]) and dgl.NID not in sg.ndata
    assert _edges(F.edge_subgraph(g, {"_E": [4, 0]}, relabel_nodes=False)) == ([4, 0], [0, 1])
    with pytest.raises(DGLError, match=r"expected edge IDs in \[0, 5\), got 5"):
        F.edge_subgraph(g, [5])


def test_edge_subgraph_block_and_bipartite(idtype):
    b = dgl.create_block(([0, 1, 2], [0, 0, 1]), num_src_nodes=4, num_dst_nodes=2, idtype=idtype)
    sb = F.edge_subgraph(b, [2, 0], relabel_nodes=False)
    assert sb.is_block and sb.num_src_nodes() == 4 and sb.num_dst_nodes() == 2
    assert _edges(sb) == ([2, 0], [1, 0]) and sb.edata[dgl.EID].tolist() == [2, 0]
    with pytest.raises(DGLError, match="relabel_nodes=False for a block"):
        F.edge_subgraph(b, [0])
    sg = F.edge_subgraph(_plays(idtype), [3, 1])  # 2->1, 1->0
    assert sg.srcdata[dgl.NID].tolist() == [2, 1] and sg.dstdata[dgl.NID].tolist() == [1, 0]
    assert _edges(sg) == ([0, 1], [0, 1]) and sg.edata["w"].tolist() == [3, 1]


# ----------------------------------------------------------------------
# in_subgraph / out_subgraph
# ----------------------------------------------------------------------
def test_in_out_subgraph(idtype):
    g = _cycle(idtype)
    g.edata["w"] = torch.arange(5.0)
    sg = F.in_subgraph(g, [2, 0])
    assert sg.num_nodes() == 5 and _edges(sg) == ([1, 4], [2, 0]) and sg.edata[dgl.EID].tolist() == [1, 4]
    assert sg.edata["w"].tolist() == [1, 4] and dgl.NID not in sg.ndata and sg.idtype == idtype
    sg = F.in_subgraph(g, [2, 0], relabel_nodes=True)
    assert sg.ndata[dgl.NID].tolist() == [1, 4, 2, 0] and _edges(sg) == ([0, 1], [2, 3])
    sg = F.out_subgraph(g, [2, 0])
    assert _edges(sg) == ([2, 0], [3, 1]) and sg.edata[dgl.EID].tolist() == [2, 0]
    sg = F.out_subgraph(g, [2, 0], relabel_nodes=True, store_ids=False)
    assert _edges(sg) == ([0, 1], [2, 3]) and len(sg.ndata) == 0 and len(sg.edata) == 1
    # grouped by node in the given order, then by edge ID
    h = _g([0, 1, 2, 3, 2], [2, 2, 0, 2, 3], idtype=idtype)
    assert F.in_subgraph(h, [3, 2]).edata[dgl.EID].tolist() == [4, 0, 1, 3]


def test_in_subgraph_bipartite_and_errors():
    sg = F.in_subgraph(_plays(), {"game": [0]})
    assert sg.num_src_nodes() == 3 and sg.num_dst_nodes() == 3 and sg.edata[dgl.EID].tolist() == [0, 1]
    assert F.out_subgraph(_plays(), {"user": [1]}).edata[dgl.EID].tolist() == [1, 2]
    assert F.out_subgraph(_plays(), {"game": [1]}).num_edges() == 0
    with pytest.raises(DGLError, match="got a block"):
        F.in_subgraph(dgl.create_block(([0], [0])), [0])
    with pytest.raises(DGLError, match=r"expected node IDs in \[0, 5\), got 9"):
        F.out_subgraph(_cycle(), [9])


# ----------------------------------------------------------------------
# k-hop subgraphs
# ----------------------------------------------------------------------
def test_khop_in_subgraph(idtype):
    g = _g([1, 1, 2, 3, 4], [0, 2, 0, 4, 2], idtype=idtype)
    g.edata["w"] = torch.arange(5.0)
    sg, inv = F.khop_in_subgraph(g, 0, k=2)
    assert sg.ndata[dgl.NID].tolist() == [0, 1, 2, 4] and _edges(sg) == ([1, 1, 2, 3], [0, 2, 0, 2])
    assert sg.edata[dgl.EID].tolist() == [0, 1, 2, 4] and sg.edata["w"].tolist() == [0, 1, 2, 4]
    assert inv.tolist() == [0] and inv.dtype == idtype
    sg, inv = F.khop_in_subgraph(g, [2, 0], k=1)
    assert sg.ndata[dgl.NID].tolist() == [0, 1, 2, 4] and inv.tolist() == [2, 0]
    sg, inv = F.khop_in_subgraph(g, 0, k=1)
    assert sg.ndata[dgl.NID].tolist() == [0, 1, 2] and sg.edata[dgl.EID].tolist() == [0, 1, 2]
    sg, _ = F.khop_in_subgraph(g, 0, k=0)
    assert sg.num_nodes() == 1 and sg.num_edges() == 0
    sg = F.khop_in_subgraph(g, 0, k=2, relabel_nodes=False)  # just the graph, as DGL
    assert sg.num_nodes() == 5 and sg.edata[dgl.EID].tolist() == [0, 1, 2, 4]
    with pytest.raises(DGLError, match="expected k to be an int >= 0, got -1"):
        F.khop_in_subgraph(g, 0, k=-1)


def test_khop_out_subgraph(idtype):
    g = _g([0, 2, 0, 4, 2], [1, 1, 2, 3, 4], idtype=idtype)
    sg, inv = F.khop_out_subgraph(g, 0, k=2)
    assert sg.ndata[dgl.NID].tolist() == [0, 1, 2, 4] and inv.tolist() == [0]
    assert _edges(sg) == ([0, 0, 2, 2], [1, 2, 1, 3]) and sg.edata[dgl.EID].tolist() == [0, 2, 1, 4]
    sg, _ = F.khop_out_subgraph(g, 0, k=5)
    assert sg.ndata[dgl.NID].tolist() == [0, 1, 2, 3, 4]


def test_khop_subgraph_bipartite():
    sg, inv = F.khop_in_subgraph(_plays(), {"game": [0]}, k=2)
    assert sg.srcdata[dgl.NID].tolist() == [0, 1] and sg.dstdata[dgl.NID].tolist() == [0]
    assert sg.edata[dgl.EID].tolist() == [0, 1] and list(inv) == ["game"] and inv["game"].tolist() == [0]
    sg, inv = F.khop_out_subgraph(_plays(), {"user": [1]}, k=1)
    assert sg.srcdata[dgl.NID].tolist() == [1] and sg.dstdata[dgl.NID].tolist() == [0, 2]
    with pytest.raises(DGLError, match="expected a dict"):
        F.khop_in_subgraph(_plays(), 0, k=1)
