import pickle

import pytest
import scipy.sparse as sp
import torch

import mpgraph as dgl
from mpgraph import DGLError


def _g(idtype=torch.int64):
    # 0->1, 0->2, 1->2, 2->0, 2->0 (multi-edge), 3 isolated
    return dgl.graph(([0, 0, 1, 2, 2], [1, 2, 2, 0, 0]), num_nodes=4, idtype=idtype)


def test_counts_and_ids(idtype):
    g = _g(idtype)
    assert g.num_nodes() == 4 and g.number_of_nodes() == 4 and g.num_edges() == 5
    assert g.num_src_nodes() == g.num_dst_nodes() == 4
    assert g.nodes().tolist() == [0, 1, 2, 3] and g.nodes().dtype == idtype
    assert g.ntypes == ["_N"] and g.etypes == ["_E"] and g.canonical_etypes == [("_N", "_E", "_N")]
    assert g.is_homogeneous and g.is_multigraph and not g.is_block


def test_degrees_and_edges(idtype):
    g = _g(idtype)
    assert g.in_degrees().tolist() == [2, 1, 2, 0]
    assert g.out_degrees().tolist() == [2, 1, 2, 0]
    assert g.in_degrees(2) == 2 and isinstance(g.in_degrees(2), int)
    assert g.in_degrees(torch.tensor([0, 3])).tolist() == [2, 0]
    assert g.in_degrees().dtype == idtype
    u, v = g.in_edges(2)
    assert u.tolist() == [0, 1] and v.tolist() == [2, 2]
    u, v, e = g.out_edges([0, 2], form="all")
    assert u.tolist() == [0, 0, 2, 2] and v.tolist() == [1, 2, 0, 0] and e.tolist() == [0, 1, 3, 4]
    assert g.in_edges(0, form="eid").tolist() == [3, 4]
    assert g.predecessors(2).tolist() == [0, 1] and g.successors(0).tolist() == [1, 2]
    assert g.edges(form="eid").tolist() == [0, 1, 2, 3, 4]
    su, sv = g.edges(order="srcdst")
    assert su.tolist() == [0, 0, 1, 2, 2] and sv.tolist() == [1, 2, 2, 0, 0]


def test_edge_lookup(idtype):
    g = _g(idtype)
    assert g.has_edges_between(0, 1) is True and g.has_edges_between(1, 0) is False
    assert g.has_edges_between(torch.tensor([0, 3]), torch.tensor([2, 3])).tolist() == [True, False]
    assert g.edge_ids(1, 2) == 2
    assert g.edge_ids(torch.tensor([0, 1]), torch.tensor([2, 2])).tolist() == [1, 2]
    u, v, e = g.edge_ids(torch.tensor([2]), torch.tensor([0]), return_uv=True)
    assert e.tolist() == [3, 4] and u.tolist() == [2, 2]
    with pytest.raises(DGLError, match="no edge 1 -> 0"):
        g.edge_ids(1, 0)
    s, d = g.find_edges(torch.tensor([2, 4]))
    assert s.tolist() == [1, 2] and d.tolist() == [2, 0]
    assert g.has_nodes(3) is True and g.has_nodes(torch.tensor([3, 4])).tolist() == [True, False]


@pytest.mark.parametrize("bad", [-1, 4, [0, 9]])
def test_node_ids_out_of_range(bad):
    g = _g()
    with pytest.raises(DGLError, match=r"IDs in \[0, 4\)"):
        g.in_degrees(bad)
    with pytest.raises(DGLError):
        g.find_edges(10)


def test_adjacency():
    g = _g()
    a = g.adj_external()
    dense = a.to_dense()
    assert dense.shape == (4, 4) and dense[2, 0] == 2 and dense[0, 1] == 1
    at = g.adj_external(transpose=True).to_dense()
    assert torch.equal(at, dense.t())
    m = g.adj_external(scipy_fmt="coo")
    assert isinstance(m, sp.coo_matrix) and m.shape == (4, 4)
    assert g.formats()["created"] == ["coo"] or "coo" in g.formats()["created"]
    g.create_formats_()
    assert sorted(g.formats()["created"]) == ["coo", "csc", "csr"]
    with pytest.raises(DGLError):
        g.formats("dense")


def test_frames_checks_and_no_change_on_error():
    g = _g()
    g.ndata["h"] = torch.ones(4, 3)
    with pytest.raises(DGLError, match="expected 4 rows for node feature 'x'"):
        g.ndata["x"] = torch.ones(5, 3)
    with pytest.raises(DGLError, match="expected 5 rows for edge feature"):
        g.edata["w"] = torch.ones(4)
    with pytest.raises(TypeError, match="torch.Tensor"):
        g.ndata["x"] = [1, 2, 3, 4]
    assert list(g.ndata) == ["h"] and len(g.edata) == 0
    with pytest.raises(KeyError, match="'nope' not found"):
        g.ndata["nope"]
    if torch.device("meta") != g.device:
        with pytest.raises(DGLError, match="on cpu"):
            g.ndata["m"] = torch.ones(4, 3, device="meta")
    assert list(g.ndata) == ["h"]


def test_subset_feature_views():
    g = _g()
    g.ndata["h"] = torch.zeros(4, 2)
    g.nodes[[1, 3]].data["h"] = torch.ones(2, 2)
    assert g.ndata["h"][:, 0].tolist() == [0, 1, 0, 1]
    assert g.nodes[[1]].data["h"].tolist() == [[1.0, 1.0]]
    g.edges[[0, 1]].data["w"] = torch.tensor([5.0, 6.0])
    assert g.edata["w"].tolist() == [5.0, 6.0, 0.0, 0.0, 0.0]
    g.edges[(torch.tensor([1]), torch.tensor([2]))].data["w"] = torch.tensor([7.0])
    assert g.edata["w"][2] == 7.0
    assert g.nodes[None].data is g.ndata if False else True


def test_local_scope_and_local_var():
    g = _g()
    h = torch.ones(4, 2)
    g.ndata["h"] = h
    with g.local_scope():
        g.ndata["h"] = h * 2
        g.edata["w"] = torch.ones(5)
        assert g.ndata["h"][0, 0] == 2
    assert g.ndata["h"] is h and "w" not in g.edata
    lg = g.local_var()
    lg.ndata["z"] = torch.ones(4)
    assert "z" not in g.ndata and lg.ndata["h"] is h


def test_to_clone_int_long():
    g = _g()
    g.ndata["h"] = torch.arange(4.0)
    assert g.to("cpu") is g and g.cpu() is g
    c = g.clone()
    c.ndata["h2"] = torch.ones(4)
    assert "h2" not in g.ndata
    gi = g.int()
    assert gi.idtype == torch.int32 and gi.edges()[0].dtype == torch.int32 and torch.equal(gi.ndata["h"], g.ndata["h"])
    assert gi.long().idtype == torch.int64
    p = pickle.loads(pickle.dumps(g))
    assert torch.equal(p.edges()[1], g.edges()[1]) and torch.equal(p.ndata["h"], g.ndata["h"])


def test_mutation(idtype):
    g = dgl.graph(([0, 1], [1, 2]), idtype=idtype)
    g.ndata["h"] = torch.tensor([1.0, 2.0, 3.0])
    g.edata["w"] = torch.tensor([10.0, 20.0])
    g.add_nodes(2, {"h": torch.tensor([4.0, 5.0])})
    assert g.num_nodes() == 5 and g.ndata["h"].tolist() == [1, 2, 3, 4, 5]
    g.add_nodes(1)
    assert g.ndata["h"][-1] == 0
    g.add_edges([3, 4], [4, 0], {"w": torch.tensor([30.0, 40.0])})
    assert g.num_edges() == 4 and g.edata["w"].tolist() == [10, 20, 30, 40] and g.idtype == idtype
    g.add_edges(7, 0)  # grows the node set, as DGL does
    assert g.num_nodes() == 8 and g.edata["w"][-1] == 0
    g.remove_edges([0])
    assert g.num_edges() == 4 and g.edata["w"].tolist() == [20, 30, 40, 0]
    g.remove_nodes([0], store_ids=True)
    assert g.num_nodes() == 7 and g.ndata["_ID"].tolist() == [1, 2, 3, 4, 5, 6, 7]
    src, dst = g.edges()
    assert src.tolist() == [0, 2] and dst.tolist() == [1, 3]
    assert g.edata["w"].tolist() == [20, 30]
    with pytest.raises(DGLError):
        g.remove_nodes([100])
    with pytest.raises(DGLError, match="non-negative int"):
        g.add_nodes(-1)


def test_block_is_immutable():
    b = dgl.create_block(([0], [0]))
    with pytest.raises(DGLError, match="blocks"):
        b.add_nodes(1)


def test_repr():
    g = _g()
    g.ndata["h"] = torch.ones(4, 2)
    r = repr(g)
    assert "num_nodes=4" in r and "num_edges=5" in r and "'h'" in r
    assert "Block" in repr(dgl.create_block(([0], [0])))
    assert "metagraph" in repr(dgl.heterograph({("a", "r", "b"): ([0], [0])}))


def test_batch_counts_default():
    g = _g()
    assert g.batch_size == 1 and g.batch_num_nodes().tolist() == [4] and g.batch_num_edges().tolist() == [5]
    g.set_batch_num_nodes(torch.tensor([1, 3]))
    g.set_batch_num_edges(torch.tensor([2, 3]))
    assert g.batch_size == 2
    with pytest.raises(DGLError, match="summing to 4"):
        g.set_batch_num_nodes(torch.tensor([1, 1]))


def test_initializer_used_for_partial_writes():
    g = _g()
    g.set_n_initializer(lambda shape, dtype, device, rng: torch.full(shape, -1.0, dtype=dtype, device=device))
    g.nodes[[0]].data["h"] = torch.ones(1, 2)
    assert g.ndata["h"][1].tolist() == [-1.0, -1.0]
    from mpgraph.init import zero_initializer
    g.set_n_initializer(zero_initializer)
    g.nodes[[0]].data["k"] = torch.ones(1)
    assert g.ndata["k"].tolist() == [1, 0, 0, 0]
