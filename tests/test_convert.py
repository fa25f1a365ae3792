import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
import torch

import mpgraph as dgl
from mpgraph import DGLError


def test_graph_from_pairs_and_formats(idtype):
    u = torch.tensor([0, 0, 1, 3], dtype=idtype)
    v = torch.tensor([1, 2, 2, 0], dtype=idtype)
    g = dgl.graph((u, v))
    assert g.idtype == idtype and g.num_nodes() == 4 and g.num_edges() == 4
    su, sv = g.edges()
    assert torch.equal(su, u) and torch.equal(sv, v) and su.dtype == idtype
    g2 = dgl.graph(("coo", (u, v)), num_nodes=6)
    assert g2.num_nodes() == 6
    # csr: out-edges per source; csc: in-edges per destination
    indptr, indices, eids = g.adj_tensors("csr")
    g3 = dgl.graph(("csr", (indptr, indices, eids)))
    assert torch.equal(g3.edges()[0], u) and torch.equal(g3.edges()[1], v)
    indptr, indices, eids = g.adj_tensors("csc")
    g4 = dgl.graph(("csc", (indptr, indices, eids)))
    assert torch.equal(g4.edges()[0], u) and torch.equal(g4.edges()[1], v)
    # csr without eids numbers edges in storage order
    g5 = dgl.graph(("csr", (torch.tensor([0, 2, 2, 3]), torch.tensor([1, 2, 0]), None)))
    assert g5.edges()[0].tolist() == [0, 0, 2] and g5.edges()[1].tolist() == [1, 2, 0]


def test_graph_lists_default_int64():
    g = dgl.graph(([0, 1], [1, 2]))
    assert g.idtype == torch.int64
    g = dgl.graph(([0, 1], [1, 2]), idtype=torch.int32)
    assert g.idtype == torch.int32 and g.edges()[0].dtype == torch.int32
    g = dgl.graph(([], []))
    assert g.num_nodes() == 0 and g.num_edges() == 0


@pytest.mark.parametrize("data, num_nodes, match", [
    (([0, -1], [1, 2]), None, "non-negative"),
    (([0, 1], [1, 5]), 3, "below num_nodes=3, got 5"),
    (([0, 1, 2], [1, 2]), None, "same length"),
    (([0.0, 1.0], [1, 2]), None, "integer"),
    (("bad", ([0], [1])), None, "'coo', 'csr' or 'csc'"),
    (("csr", ([0, 5], [1], None)), None, "indptr"),
])
def test_graph_bad_input(data, num_nodes, match):
    with pytest.raises(DGLError, match=match):
        dgl.graph(data, num_nodes=num_nodes)


def test_graph_error_is_value_error():
    with pytest.raises(ValueError):
        dgl.graph(([0], [7]), num_nodes=2)


def test_rand_graph_no_duplicates():
    dgl.seed(0)
    g = dgl.rand_graph(30, 100)
    assert g.num_nodes() == 30 and g.num_edges() == 100 and not g.is_multigraph
    g = dgl.rand_graph(5, 25, idtype=torch.int32)
    assert g.num_edges() == 25 and not g.is_multigraph and g.idtype == torch.int32
    with pytest.raises(DGLError, match="num_edges"):
        dgl.rand_graph(3, 10)


def test_seed_reproducible():
    dgl.seed(7)
    a = dgl.rand_graph(50, 200).edges()
    dgl.seed(7)
    b = dgl.rand_graph(50, 200).edges()
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_heterograph_one_relation_bipartite():
    g = dgl.heterograph({("user", "plays", "game"): ([0, 1, 2], [0, 0, 1])}, num_nodes_dict={"user": 4})
    assert g.ntypes == ["game", "user"] and g.etypes == ["plays"]
    assert g.canonical_etypes == [("user", "plays", "game")]
    assert g.num_src_nodes() == 4 and g.num_dst_nodes() == 2 and g.num_nodes("user") == 4
    assert g.num_nodes("game") == 2 and not g.is_homogeneous
    g.nodes["user"].data["h"] = torch.ones(4, 2)
    g.nodes["game"].data["h"] = torch.zeros(2, 2)
    assert g.srcdata["h"].shape == (4, 2) and g.dstdata["h"].shape == (2, 2)
    assert set(g.ndata["h"]) == {"user", "game"}
    with pytest.raises(DGLError, match="node type"):
        g.num_nodes("item")
    many = dgl.heterograph({("a", "r", "b"): ([0], [0]), ("b", "s", "a"): ([0], [0])})
    assert isinstance(many, dgl.HeteroGraph) and many.canonical_etypes == [("a", "r", "b"), ("b", "s", "a")]
    same = dgl.heterograph({("n", "e", "n"): ([0, 1], [1, 2])})
    assert same.is_homogeneous and same.num_nodes() == 3


def test_create_block():
    b = dgl.create_block(([0, 1, 2], [0, 0, 1]), num_src_nodes=4, num_dst_nodes=2)
    assert b.is_block and b.num_src_nodes() == 4 and b.num_dst_nodes() == 2 and b.num_edges() == 3
    b.srcdata["h"] = torch.ones(4, 3)
    b.dstdata["h"] = torch.zeros(2, 3)
    assert b.srcnodes().tolist() == [0, 1, 2, 3] and b.dstnodes().tolist() == [0, 1]
    with pytest.raises(DGLError, match="srcdata or dstdata"):
        _ = b.ndata
    with pytest.raises(DGLError, match="below num_dst_nodes=1"):
        dgl.create_block(([0], [1]), num_src_nodes=2, num_dst_nodes=1)


def test_scipy_roundtrip():
    m = sp.coo_matrix((np.array([1.0, 2.0, 3.0]), (np.array([0, 1, 2]), np.array([1, 2, 0]))), shape=(3, 3))
    g = dgl.from_scipy(m, eweight_name="w")
    assert g.num_edges() == 3 and torch.allclose(g.edata["w"].float(), torch.tensor([1.0, 2.0, 3.0]))
    back = g.adj_external(scipy_fmt="csr")
    assert (back != (m != 0).astype(np.float32)).nnz == 0


def test_networkx_roundtrip():
    nxg = nx.karate_club_graph()
    g = dgl.from_networkx(nxg)
    assert g.num_nodes() == 34 and g.num_edges() == 2 * nxg.number_of_edges()
    out = dgl.to_networkx(g)
    assert out.number_of_edges() == g.num_edges()
    d = nx.DiGraph()
    d.add_edge(0, 1, w=1.5)
    d.add_edge(1, 2, w=2.5)
    g2 = dgl.from_networkx(d, edge_attrs=["w"])
    assert g2.edata["w"].tolist() == [1.5, 2.5]


def test_backend_name_and_aliases():
    assert dgl.backend.backend_name == "pytorch"
    assert dgl.DGLGraph is dgl.Graph
    assert dgl.NID == "_ID" and dgl.EID == "_ID"
    assert issubclass(dgl.DGLError, ValueError)
