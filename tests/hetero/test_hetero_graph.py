"""HeteroGraph structure, queries, feature views, copies and errors.

Every query with ``etype=`` is compared with the same query on the relation
built on its own as a single-relation graph (``hetero_cases.reference``).
"""

import pytest
import torch
from hetero_cases import NUM_NODES, RELATIONS, reference, typed_case

import mpgraph as dgl
from mpgraph.base import DGLError
from mpgraph.graph import Graph
from mpgraph.heterograph import HeteroGraph


def _eq(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _eq(x, y)
        return
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        assert torch.equal(a, b), (a, b)
        return
    assert a == b, (a, b)


# ----------------------------------------------------------------------------- construction and types

def test_types_and_counts(idtype):
    g = typed_case(idtype)
    assert isinstance(g, HeteroGraph) and g.idtype == idtype and g.device == torch.device("cpu")
    assert g.ntypes == ["dev", "game", "iso", "user"]
    assert g.canonical_etypes == sorted(RELATIONS)
    assert g.etypes == [c[1] for c in sorted(RELATIONS)]
    assert g.srctypes == g.dsttypes == g.ntypes and not g.is_unibipartite and not g.is_homogeneous
    for nt, n in NUM_NODES.items():
        assert g.num_nodes(nt) == g.number_of_nodes(nt) == n
        assert g.num_src_nodes(nt) == g.num_dst_nodes(nt) == n
        assert g.nodes(nt).tolist() == list(range(n)) and g.nodes(nt).dtype == idtype
    assert g.num_nodes() == sum(NUM_NODES.values())
    for cet, (u, _) in RELATIONS.items():
        assert g.num_edges(cet) == len(u)
    assert g.num_edges("plays") == 8 and g.num_edges() == sum(len(u) for u, _ in RELATIONS.values())
    assert g.get_ntype_id("game") == 1 and g.get_etype_id(("user", "plays", "game")) == g.canonical_etypes.index(
        ("user", "plays", "game"))
    assert g.to_canonical_etype("plays") == ("user", "plays", "game")
    mg = g.metagraph()
    assert set(mg.nodes) == set(NUM_NODES) and mg.number_of_edges() == len(RELATIONS)
    assert mg.has_edge("user", "dev", key="likes") and mg.has_edge("user", "game", key="likes")
    assert g.is_multigraph   # user 5 plays game 3 twice
    text = repr(g)
    assert "num_nodes={'dev': 3, 'game': 5, 'iso': 2, 'user': 6}" in text and "('user', 'game', 'plays')" in text


def test_heterograph_returns_graph_or_heterograph():
    one = dgl.heterograph({("u", "r", "v"): ([0, 1], [1, 0])})
    assert isinstance(one, Graph) and one.canonical_etypes == [("u", "r", "v")]
    assert isinstance(dgl.heterograph({("n", "e", "n"): ([0], [1])}), Graph)
    extra = dgl.heterograph({("u", "r", "v"): ([0, 1], [1, 0])}, {"w": 3})
    assert isinstance(extra, HeteroGraph) and extra.ntypes == ["u", "v", "w"] and extra.num_nodes("w") == 3
    assert extra.num_edges() == 2 and extra.in_degrees().tolist() == [1, 1]
    two = dgl.heterograph({("u", "r", "v"): ([0], [0]), ("v", "s", "u"): ([0], [0])})
    assert isinstance(two, HeteroGraph) and two.is_unibipartite is False


def test_node_counts_inferred_across_relations():
    g = dgl.heterograph({("a", "r", "b"): ([0, 4], [1, 0]), ("b", "s", "a"): ([6], [1]), ("a", "t", "a"): ([2], [3])})
    assert g.num_nodes("a") == 5 and g.num_nodes("b") == 7
    assert g["r"].num_src_nodes() == 5 and g["r"].num_dst_nodes() == 7 and g["t"].num_nodes() == 5
    g2 = dgl.heterograph({("a", "r", "b"): ([0], [1]), ("b", "s", "a"): ([1], [0])}, {"a": 4, "b": 9})
    assert g2.num_nodes("a") == 4 and g2.num_nodes("b") == 9
    with pytest.raises(DGLError, match=r"relation \('a', 'r', 'b'\).*num_nodes_dict\['b'\]=1"):
        dgl.heterograph({("a", "r", "b"): ([0], [3]), ("b", "s", "a"): ([0], [0])}, {"b": 1})


def test_construction_forms_and_errors():
    g = dgl.heterograph({("a", "r", "b"): ("csr", (torch.tensor([0, 2, 3]), torch.tensor([0, 1, 1]), None)),
                         ("b", "s", "a"): ([1], [0])})
    assert [t.tolist() for t in g.edges(etype="r")] == [[0, 0, 1], [0, 1, 1]]
    with pytest.raises(DGLError, match="canonical edge type"):
        dgl.heterograph({("a", "r"): ([0], [0]), ("b", "s", "a"): ([0], [0])})
    with pytest.raises(DGLError, match="same dtype|one dtype|idtype"):
        dgl.heterograph({("a", "r", "b"): (torch.tensor([0], dtype=torch.int32), torch.tensor([0], dtype=torch.int32)),
                         ("b", "s", "a"): ([0], [0])})
    g32 = dgl.heterograph({("a", "r", "b"): ([0], [0]), ("b", "s", "a"): ([0], [0])}, idtype=torch.int32)
    assert g32.idtype == torch.int32 and g32.edges(etype="r")[0].dtype == torch.int32


# ----------------------------------------------------------------------------- queries against the reference

@pytest.mark.parametrize("cet", sorted(RELATIONS))
def test_queries_match_single_relation_graph(idtype, cet):
    g = typed_case(idtype)
    ref = reference(g, cet)
    s, name, d = cet
    key = cet if name == "likes" else name           # 'likes' is ambiguous, the others unique
    ns, nd = g.num_nodes(s), g.num_nodes(d)
    _eq(g.in_degrees(etype=key), ref.in_degrees())
    _eq(g.out_degrees(etype=key), ref.out_degrees())
    _eq(g.in_degrees(torch.tensor([0, nd - 1]), etype=key), ref.in_degrees(torch.tensor([0, nd - 1])))
    _eq(g.in_degrees(0, etype=key), ref.in_degrees(0))
    _eq(g.out_degrees([ns - 1], etype=key), ref.out_degrees([ns - 1]))
    for form in ("uv", "eid", "all"):
        for order in ("eid", "srcdst"):
            _eq(g.edges(form=form, order=order, etype=key), ref.edges(form=form, order=order))
            _eq(g.all_edges(form=form, order=order, etype=key), ref.all_edges(form=form, order=order))
        _eq(g.in_edges([0, nd - 1], form=form, etype=key), ref.in_edges([0, nd - 1], form=form))
        _eq(g.out_edges([0, ns - 1], form=form, etype=key), ref.out_edges([0, ns - 1], form=form))
    _eq(g.successors(0, etype=key), ref.successors(0))
    _eq(g.predecessors(0, etype=key), ref.predecessors(0))
    u, v = ref.edges()
    _eq(g.has_edges_between(u, v, etype=key), ref.has_edges_between(u, v))
    _eq(g.has_edges_between([0, ns - 1], [nd - 1, 0], etype=key), ref.has_edges_between([0, ns - 1], [nd - 1, 0]))
    _eq(g.edge_ids(u, v, etype=key), ref.edge_ids(u, v))
    _eq(g.edge_ids(u, v, return_uv=True, etype=key), ref.edge_ids(u, v, return_uv=True))
    _eq(g.find_edges([0, len(u) - 1], etype=key), ref.find_edges([0, len(u) - 1]))
    assert torch.equal(g.adj_external(etype=key).to_dense(), ref.adj_external().to_dense())
    assert torch.equal(g.adjacency_matrix(transpose=True, etype=key).to_dense(),
                       ref.adjacency_matrix(transpose=True).to_dense())
    assert (g.adj_external(scipy_fmt="csr", etype=key) != ref.adj_external(scipy_fmt="csr")).nnz == 0
    for fmt in ("coo", "csr", "csc"):
        _eq(g.adj_tensors(fmt, etype=key), ref.adj_tensors(fmt))
    _eq(g.num_edges(key), ref.num_edges())
    # the relation slice answers the same without etype
    sl = g[key]
    assert isinstance(sl, Graph) and sl.canonical_etypes == [cet]
    _eq(sl.in_degrees(), ref.in_degrees())
    _eq(sl.edges(form="all"), ref.edges(form="all"))
    assert g[s, name, d].num_edges() == ref.num_edges()


def test_filter_and_apply_nodes_per_type():
    g = typed_case()
    g.nodes["game"].data["x"] = torch.arange(5.0).unsqueeze(1)
    assert g.filter_nodes(lambda n: n.data["x"][:, 0] > 2, ntype="game").tolist() == [3, 4]
    assert g.filter_nodes(lambda n: n.data["x"][:, 0] > 2, [0, 4], ntype="game").tolist() == [4]
    g.apply_nodes(lambda n: {"y": n.data["x"] * 2}, ntype="game")
    assert g.nodes["game"].data["y"][:, 0].tolist() == [0, 2, 4, 6, 8]
    g.apply_nodes(lambda n: {"y": n.data["x"] * 0}, v=[1], ntype="game")
    assert g.nodes["game"].data["y"][:, 0].tolist() == [0, 0, 4, 6, 8]
    g.edges["plays"].data["w"] = torch.arange(8.0)
    assert g.filter_edges(lambda e: e.data["w"] > 5, etype="plays").tolist() == [6, 7]
    assert g.has_nodes([0, 4, 5], ntype="game").tolist() == [True, True, False]
    assert g.has_nodes(1, ntype="iso") is True


# ----------------------------------------------------------------------------- slices share frames

def test_slice_shares_frames_both_ways():
    g = typed_case()
    sl = g["plays"]
    sl.srcdata["h"] = torch.ones(6, 2)
    sl.edata["w"] = torch.arange(8.0)
    assert torch.equal(g.nodes["user"].data["h"], torch.ones(6, 2))
    assert torch.equal(g.edges["plays"].data["w"], torch.arange(8.0))
    g.nodes["game"].data["z"] = torch.zeros(5, 1)
    assert "z" in g["plays"].dstdata and "z" in g["develops"].dstdata
    # the homogeneous relation user->user shares the one 'user' frame
    assert torch.equal(g["follows"].ndata["h"], torch.ones(6, 2))
    import mpgraph.function as fn
    g["follows"].update_all(fn.copy_u("h", "m"), fn.sum("m", "s"))
    assert g.nodes["user"].data["s"][:, 0].tolist() == g["follows"].in_degrees().float().tolist()


# ----------------------------------------------------------------------------- feature views

def test_typed_feature_views():
    g = typed_case()
    g.ndata["h"] = {"user": torch.ones(6, 2), "game": torch.zeros(5, 2)}
    h = g.ndata["h"]
    assert set(h) == {"user", "game"} and h["user"].shape == (6, 2)
    assert "h" in g.ndata and "nope" not in g.ndata and g.ndata.keys() == ["h"] and len(g.ndata) == 1
    assert set(g.srcdata["h"]) == {"user", "game"}
    with pytest.raises(DGLError, match="assign a dict"):
        g.ndata["h"] = torch.ones(16, 2)
    with pytest.raises(KeyError):
        g.ndata["missing"]
    g.edata["w"] = {"plays": torch.ones(8), ("user", "likes", "dev"): torch.zeros(3)}
    assert set(g.edata["w"]) == {("user", "plays", "game"), ("user", "likes", "dev")}
    assert torch.equal(g.edges["plays"].data["w"], torch.ones(8))
    assert torch.equal(g.edges[("user", "likes", "dev")].data["w"], torch.zeros(3))
    del g.ndata["h"]
    assert "h" not in g.nodes["user"].data and "h" not in g.nodes["game"].data
    # subsets
    g.nodes["game"].data["x"] = torch.arange(5.0)
    assert g.nodes[[1, 3], "game"].data["x"].tolist() == [1.0, 3.0]
    g.nodes[[1, 3], "game"].data["x"] = torch.tensor([10.0, 30.0])
    assert g.nodes["game"].data["x"].tolist() == [0.0, 10.0, 2.0, 30.0, 4.0]
    assert g.node_attr_schemes("game") == {"x": ((), torch.float32)}
    assert g.edge_attr_schemes("plays") == {"w": ((), torch.float32)}
    with pytest.raises(DGLError, match="node types"):
        g.nodes[[0, 1]]


def test_one_node_type_several_relations_has_plain_ndata():
    g = dgl.heterograph({("n", "a", "n"): ([0, 1], [1, 2]), ("n", "b", "n"): ([2], [0])})
    g.ndata["h"] = torch.ones(3, 1)                      # one node type: ndata is that type's frame
    assert torch.equal(g.nodes["n"].data["h"], torch.ones(3, 1))
    assert g.nodes().tolist() == [0, 1, 2] and g.nodes[[2]].data["h"].shape == (1, 1)
    with pytest.raises(DGLError, match="dict"):
        g.edata["w"] = torch.ones(3)


def test_unibipartite_src_dst_views():
    g = dgl.heterograph({("user", "plays", "game"): ([0, 1], [0, 1]), ("user", "buys", "item"): ([2], [0])})
    assert g.is_unibipartite and g.srctypes == ["user"] and g.dsttypes == ["game", "item"]
    g.srcdata["h"] = torch.ones(3, 1)
    assert torch.equal(g.nodes["user"].data["h"], torch.ones(3, 1))
    g.dstdata["h"] = {"game": torch.zeros(2, 1), "item": torch.zeros(1, 1)}
    assert g.num_src_nodes() == 3 and g.num_dst_nodes() == 3
    assert g.srcnodes().tolist() == [0, 1, 2] and g.dstnodes("item").tolist() == [0]
    assert set(g.dstnodes["game"].data) == {"h"}


# ----------------------------------------------------------------------------- errors

def test_unknown_and_ambiguous_types():
    g = typed_case()
    with pytest.raises(DGLError, match=r"node type 'player' does not exist; the node types are \['dev', 'game'"):
        g.num_nodes("player")
    with pytest.raises(DGLError, match=r"node type 'player'"):
        _ = g.nodes["player"].data
    with pytest.raises(DGLError, match=r"edge type 'buys' does not exist; the edge types are \["):
        g.num_edges("buys")
    with pytest.raises(DGLError, match="does not exist"):
        g.in_degrees(etype=("user", "plays", "dev"))
    with pytest.raises(DGLError, match=r"'likes' is ambiguous.*\('user', 'likes', 'dev'\).*canonical"):
        g.in_degrees(etype="likes")
    with pytest.raises(DGLError, match="ambiguous"):
        g["likes"]
    with pytest.raises(DGLError, match="ambiguous"):
        _ = g.edges["likes"].data
    with pytest.raises(DGLError, match="pass etype="):
        g.in_degrees()
    with pytest.raises(DGLError, match="pass etype="):
        g.edges()
    with pytest.raises(DGLError, match="name one with ntype|node types"):
        g.apply_nodes(lambda n: {})
    with pytest.raises(DGLError, match="unknown|does not exist"):
        g.ndata["h"] = {"player": torch.ones(1, 1)}
    with pytest.raises(DGLError):
        g[("user", slice(None), "game")]
    with pytest.raises(DGLError, match="len"):
        len(g)


def test_feature_row_counts_name_the_type():
    g = typed_case()
    with pytest.raises(DGLError, match=r"expected 5 rows for 'game' node feature 'h'.*got 6 rows"):
        g.nodes["game"].data["h"] = torch.ones(6, 2)
    with pytest.raises(DGLError, match=r"expected 6 rows for 'user' node feature 'h'"):
        g.ndata["h"] = {"game": torch.ones(5, 2), "user": torch.ones(5, 2)}
    with pytest.raises(DGLError, match=r"expected 8 rows for \('user', 'plays', 'game'\) edge feature 'w'"):
        g.edges["plays"].data["w"] = torch.ones(3)
    with pytest.raises(DGLError, match=r"'dev' node feature 'h'"):
        g["develops"].srcdata["h"] = torch.ones(2, 1)
    with pytest.raises(DGLError, match=r"'game' node IDs in \[0, 5\)"):
        _ = g.nodes[[7], "game"].data


# ----------------------------------------------------------------------------- copies and precision casts

def test_local_scope_clone_idtype_device():
    g = typed_case()
    g.nodes["user"].data["h"] = torch.ones(6, 1)
    with g.local_scope():
        g.nodes["user"].data["h"] = torch.zeros(6, 1)
        g.edges["plays"].data["w"] = torch.ones(8)
        g.nodes["iso"].data["t"] = torch.ones(2)
    assert torch.equal(g.nodes["user"].data["h"], torch.ones(6, 1))
    assert "w" not in g.edges["plays"].data and "t" not in g.nodes["iso"].data
    c = g.clone()
    c.nodes["user"].data["h2"] = torch.ones(6, 1)
    assert "h2" not in g.nodes["user"].data and c.canonical_etypes == g.canonical_etypes
    g32 = g.int()
    assert g32.idtype == torch.int32 and g32.edges(etype="plays")[0].dtype == torch.int32
    assert g32.long().idtype == torch.int64 and g.to("cpu") is g and g.cpu() is g
    assert torch.equal(g32.nodes["user"].data["h"], torch.ones(6, 1))
    lv = g.local_var()
    lv.nodes["user"].data["h"] = torch.zeros(6, 1)
    assert torch.equal(g.nodes["user"].data["h"], torch.ones(6, 1))
    g.create_formats_()
    assert g.formats()["created"] == ["coo", "csr", "csc"]
    assert g.formats("csc").canonical_etypes == g.canonical_etypes


@pytest.mark.parametrize("cast, dtype", [(dgl.to_half, torch.float16), (dgl.to_bfloat16, torch.bfloat16),
                                         (dgl.to_float, torch.float32), (dgl.to_double, torch.float64)])
def test_precision_casts_cover_every_type(cast, dtype):
    g = typed_case()
    g.nodes["user"].data["h"] = torch.randn(6, 3)
    g.nodes["iso"].data["h"] = torch.randn(2, 3, dtype=torch.float64)
    g.nodes["game"].data["label"] = torch.arange(5)
    g.edges["plays"].data["w"] = torch.randn(8)
    g.edges[("user", "likes", "dev")].data["w"] = torch.randn(3)
    h = cast(g)
    assert isinstance(h, HeteroGraph)
    assert h.nodes["user"].data["h"].dtype == dtype and h.nodes["iso"].data["h"].dtype == dtype
    assert h.edges["plays"].data["w"].dtype == dtype and h.edges[("user", "likes", "dev")].data["w"].dtype == dtype
    assert h.nodes["game"].data["label"].dtype == torch.int64
    assert g.nodes["user"].data["h"].dtype == torch.float32          # the input is unchanged


def test_node_and_edge_type_subgraphs_share_features():
    from mpgraph.heterograph import edge_type_subgraph, node_type_subgraph
    g = typed_case()
    g.nodes["user"].data["h"] = torch.randn(6, 2)
    g.edges["follows"].data["w"] = torch.randn(7)
    sub = node_type_subgraph(g, ["user", "game"])
    assert sub.ntypes == ["game", "user"]
    assert sub.canonical_etypes == [("user", "follows", "user"), ("user", "likes", "game"), ("user", "plays", "game")]
    assert sub.nodes["user"].data["h"] is g.nodes["user"].data["h"]
    one = node_type_subgraph(g, "user")
    assert isinstance(one, Graph) and one.canonical_etypes == [("user", "follows", "user")]
    assert one.edata["w"] is g.edges["follows"].data["w"]
    esub = edge_type_subgraph(g, [("user", "likes", "dev"), "develops"])
    assert esub.ntypes == ["dev", "game", "user"] and len(esub.canonical_etypes) == 2
    assert torch.equal(esub.edges(etype="develops")[0], g.edges(etype="develops")[0])
    with pytest.raises(DGLError, match="node type 'x' does not exist"):
        node_type_subgraph(g, ["x"])
    with pytest.raises(DGLError, match="ambiguous"):
        edge_type_subgraph(g, ["likes"])
