"""to_homogeneous / to_heterogeneous: DGL's layout, round trips, features, errors."""

import networkx as nx
import pytest
import torch
from hetero_cases import typed_case

import mpgraph as dgl
from mpgraph.base import EID, ETYPE, NID, NTYPE, DGLError
from mpgraph.graph import Graph
from mpgraph.heterograph import HeteroGraph, to_heterogeneous, to_homogeneous


def test_to_homogeneous_layout_as_dgl(idtype):
    hg = dgl.heterograph({("user", "follows", "user"): ([0, 1], [1, 2]),
                          ("developer", "develops", "game"): ([0, 1], [0, 1])}, idtype=idtype)
    hg.nodes["user"].data["h"] = torch.ones(3, 1)
    hg.nodes["developer"].data["h"] = torch.zeros(2, 1)
    hg.nodes["game"].data["h"] = torch.ones(2, 1)
    g = to_homogeneous(hg)
    assert isinstance(g, Graph) and g.idtype == idtype and g.num_nodes() == 7 and g.num_edges() == 4
    # types: developer 0, game 1, user 2; relations: develops 0, follows 1
    assert g.ndata[NTYPE].tolist() == [0, 0, 1, 1, 2, 2, 2] and g.ndata[NTYPE].dtype == torch.int64
    assert g.ndata[NID].tolist() == [0, 1, 0, 1, 0, 1, 2] and g.ndata[NID].dtype == idtype
    assert g.edata[ETYPE].tolist() == [0, 0, 1, 1] and g.edata[EID].tolist() == [0, 1, 0, 1]
    assert [t.tolist() for t in g.edges()] == [[0, 1, 4, 5], [2, 3, 5, 6]]
    assert set(g.ndata) == {NID, NTYPE}                 # NID and EID share the name '_ID', NTYPE/ETYPE '_TYPE'
    g2 = to_homogeneous(hg, ndata=["h"])
    assert g2.ndata["h"][:, 0].tolist() == [0, 0, 1, 1, 1, 1, 1]
    g3, ncount, ecount = to_homogeneous(hg, store_type=False, return_count=True)
    assert ncount == [2, 2, 3] and ecount == [2, 2] and NTYPE not in g3.ndata and ETYPE not in g3.edata


def test_to_homogeneous_feature_errors():
    g = typed_case()
    g.nodes["user"].data["h"] = torch.ones(6, 2)
    with pytest.raises(DGLError, match="'dev' lacks it"):
        to_homogeneous(g, ndata=["h"])
    for nt in g.ntypes:
        g.nodes[nt].data["h"] = torch.ones(g.num_nodes(nt), 2)
    g.nodes["iso"].data["h"] = torch.ones(2, 3)
    with pytest.raises(DGLError, match="one shape and dtype"):
        to_homogeneous(g, ndata=["h"])
    with pytest.raises(DGLError, match="list of feature names"):
        to_homogeneous(g, ndata="h")


def test_to_homogeneous_of_a_one_relation_graph():
    bip = dgl.heterograph({("user", "plays", "game"): ([0, 1, 2], [0, 0, 1])})
    g = to_homogeneous(bip)
    assert g.num_nodes() == 5 and [t.tolist() for t in g.edges()] == [[2, 3, 4], [0, 0, 1]]
    with pytest.raises(DGLError, match="block"):
        to_homogeneous(dgl.create_block(([0], [0])))


def test_round_trip(idtype):
    g = typed_case(idtype)
    gen = torch.Generator().manual_seed(0)
    for nt in g.ntypes:
        g.nodes[nt].data["x"] = torch.randn(g.num_nodes(nt), 2, generator=gen)
    for cet in g.canonical_etypes:
        g.edges[cet].data["w"] = torch.randn(g.num_edges(cet), generator=gen)
    homo = to_homogeneous(g, ndata=["x"], edata=["w"])
    back = to_heterogeneous(homo, g.ntypes, g.etypes)
    assert isinstance(back, HeteroGraph) and back.idtype == idtype
    assert back.ntypes == g.ntypes and back.canonical_etypes == g.canonical_etypes
    offsets = {}
    start = 0
    for nt in g.ntypes:
        offsets[nt] = start
        start += g.num_nodes(nt)
        assert back.num_nodes(nt) == g.num_nodes(nt)
        assert torch.equal(back.nodes[nt].data["x"], g.nodes[nt].data["x"])
        assert back.nodes[nt].data[NID].tolist() == list(range(offsets[nt], offsets[nt] + g.num_nodes(nt)))
        assert NTYPE not in back.nodes[nt].data or NTYPE == NID
    e0 = 0
    for cet in g.canonical_etypes:
        for a, b in zip(back.edges(etype=cet, form="all"), g.edges(etype=cet, form="all")):
            assert torch.equal(a, b)
        assert torch.equal(back.edges[cet].data["w"], g.edges[cet].data["w"])
        assert back.edges[cet].data[EID].tolist() == list(range(e0, e0 + g.num_edges(cet)))
        e0 += g.num_edges(cet)


def test_to_heterogeneous_splits_one_name_into_relations_and_keeps_order():
    # one edge type ID joining different node type pairs gives several canonical relations
    g = dgl.graph(([0, 3, 1, 2, 4], [1, 4, 2, 3, 0]))
    g.ndata[NTYPE] = torch.tensor([0, 0, 1, 1, 0])
    g.edata[ETYPE] = torch.tensor([0, 0, 0, 1, 0])
    g.ndata["f"] = torch.arange(5.0)
    hg = to_heterogeneous(g, ["A", "B"], ["e", "k"])
    # edges: 0->1 A-A, 3->4 B-A, 1->2 A-B (type e); 2->3 B-B (type k); 4->0 A-A (type e)
    assert hg.canonical_etypes == [("A", "e", "A"), ("A", "e", "B"), ("B", "e", "A"), ("B", "k", "B")]
    # A = nodes 0, 1, 4 (local 0, 1, 2); B = nodes 2, 3 (local 0, 1)
    assert hg.nodes["A"].data[NID].tolist() == [0, 1, 4] and hg.nodes["B"].data["f"].tolist() == [2.0, 3.0]
    assert [t.tolist() for t in hg.edges(etype=("A", "e", "A"))] == [[0, 2], [1, 0]]
    assert hg.edges[("A", "e", "A")].data[EID].tolist() == [0, 4]
    assert [t.tolist() for t in hg.edges(etype=("A", "e", "B"))] == [[1], [0]]
    assert [t.tolist() for t in hg.edges(etype=("B", "e", "A"))] == [[1], [2]]
    assert [t.tolist() for t in hg.edges(etype="k")] == [[0], [1]]
    mg = nx.MultiDiGraph()
    mg.add_edge("A", "A", key="e")
    with pytest.raises(DGLError, match="not in metagraph"):
        to_heterogeneous(g, ["A", "B"], ["e", "k"], metagraph=mg)


def test_to_heterogeneous_single_relation_is_a_graph_and_errors():
    g = dgl.graph(([0, 1], [1, 2]))
    g.ndata[NTYPE] = torch.zeros(3, dtype=torch.int64)
    g.edata[ETYPE] = torch.zeros(2, dtype=torch.int64)
    out = to_heterogeneous(g, ["n"], ["e"])
    assert isinstance(out, Graph) and out.canonical_etypes == [("n", "e", "n")]
    with pytest.raises(DGLError, match=r"node type IDs in \[0, 1\)"):
        g.ndata[NTYPE] = torch.tensor([0, 1, 0])
        to_heterogeneous(g, ["n"], ["e"])
    with pytest.raises(DGLError, match=r"type IDs in G.ndata\[.t.\]"):
        to_heterogeneous(dgl.graph(([0], [1])), ["n"], ["e"], ntype_field="t")
    with pytest.raises(DGLError, match="homogeneous"):
        to_heterogeneous(typed_case(), ["n"], ["e"])
