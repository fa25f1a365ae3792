"""Sampling across types: sample_neighbors, to_block, HeteroBlock, NeighborSampler and DataLoader on HeteroGraphs.

Every sampled relation is checked against the graph itself (edges exist, with the right IDs and endpoints)
and against per-seed degrees computed on the relation's standalone reference graph; a full-fanout block
pipeline is checked against full-graph HeteroGraphConv in float64.
"""

import pytest
import torch
from hetero_cases import random_typed, reference, typed_case

import mpgraph as dgl
import mpgraph.function as fn
from mpgraph.base import EID, NID, DGLError
from mpgraph.dataloading import DataLoader, MultiLayerFullNeighborSampler, NeighborSampler, to_block
from mpgraph.heterograph import HeteroBlock, HeteroGraph
from mpgraph.nn import GraphConv, SAGEConv
from mpgraph.nn.hetero import HeteroGraphConv
from mpgraph.sampling import sample_neighbors

F64 = torch.float64
NN = {"a": 40, "b": 30, "c": 12}
RELS = {("a", "r", "b"): 200, ("b", "s", "b"): 150, ("c", "t", "b"): 30, ("a", "u", "c"): 60, ("b", "v", "a"): 90,
        ("a", "r", "a"): 120}


def _graph(idtype=torch.int64, seed=3):
    return random_typed(NN, RELS, seed=seed, idtype=idtype)


def _check_edges_in_graph(g, sg, cet):
    """Every sampled edge of ``cet`` is the graph edge ``EID`` with the same endpoints."""
    eid = sg.edges[cet].data[EID].long()
    u, v = sg.edges(etype=cet)
    gu, gv = g.edges(etype=cet)
    assert torch.equal(gu[eid], u) and torch.equal(gv[eid], v)
    return eid


@pytest.mark.parametrize("idtype", [torch.int32, torch.int64])
def test_counts_are_min_fanout_degree_per_relation(idtype):
    g = _graph(idtype)
    seeds = {"b": torch.tensor([0, 3, 7, 29, 11]), "a": torch.tensor([5, 1]), "c": torch.tensor([2])}
    fanout = {("a", "r", "b"): 3, "s": 2, "t": -1, "u": 0, "v": 4, ("a", "r", "a"): 1}
    torch.manual_seed(0)
    sg = sample_neighbors(g, seeds, fanout)
    assert isinstance(sg, HeteroGraph) and sg.idtype == idtype
    assert sg.ntypes == g.ntypes and sg.canonical_etypes == g.canonical_etypes
    assert all(sg.num_nodes(nt) == g.num_nodes(nt) for nt in g.ntypes)
    k = {cet: fanout.get(cet, fanout.get(cet[1])) for cet in g.canonical_etypes}
    for cet in g.canonical_etypes:
        eid = _check_edges_in_graph(g, sg, cet)
        assert eid.unique().numel() == eid.numel()                    # without replacement: distinct edges
        deg = reference(g, cet).in_degrees().long()                   # oracle: the relation on its own
        got = sg.in_degrees(etype=cet).long()
        rows = seeds[cet[2]]
        want = deg[rows] if k[cet] < 0 else deg[rows].clamp(max=k[cet])
        assert torch.equal(got[rows], want), cet
        others = torch.ones(g.num_nodes(cet[2]), dtype=torch.bool)
        others[rows] = False
        assert int(got[others].sum()) == 0                             # only seeds receive edges


def test_int_fanout_replace_and_out_direction():
    g = _graph()
    seeds = {"a": torch.tensor([0, 1, 2, 3]), "b": torch.tensor([4])}
    torch.manual_seed(1)
    sg = sample_neighbors(g, seeds, 5, replace=True)
    for cet in g.canonical_etypes:
        _check_edges_in_graph(g, sg, cet)
        deg = reference(g, cet).in_degrees()
        rows = seeds.get(cet[2], torch.zeros(0, dtype=torch.int64))
        want = torch.where(deg[rows] > 0, 5, 0)
        assert torch.equal(sg.in_degrees(etype=cet)[rows].long(), want.long())
    sg = sample_neighbors(g, seeds, 2, edge_dir="out")
    for cet in g.canonical_etypes:
        _check_edges_in_graph(g, sg, cet)
        deg = reference(g, cet).out_degrees()
        rows = seeds.get(cet[0], torch.zeros(0, dtype=torch.int64))
        assert torch.equal(sg.out_degrees(etype=cet)[rows].long(), deg[rows].clamp(max=2).long())
        assert int(sg.out_degrees(etype=cet).sum()) == int(deg[rows].clamp(max=2).sum())


def test_prob_per_relation_mask_and_exclude():
    g = _graph()
    w = torch.ones(g.num_edges("s"))
    w[::2] = 0.0                                                       # even edge IDs of 's' never sampled
    g.edges["s"].data["p"] = w
    seeds = {"b": torch.arange(30)}
    sg = sample_neighbors(g, seeds, -1, prob="p")
    eid = _check_edges_in_graph(g, sg, ("b", "s", "b"))
    assert torch.equal(torch.sort(eid).values, torch.arange(1, g.num_edges("s"), 2))
    # relations without the feature sample uniformly: 'r' into b keeps every in-edge with fanout -1
    assert sg.num_edges(("a", "r", "b")) == g.num_edges(("a", "r", "b"))
    sg = sample_neighbors(g, seeds, 3, prob="p")
    eid = _check_edges_in_graph(g, sg, ("b", "s", "b"))
    assert bool((eid % 2 == 1).all())
    excl = torch.arange(0, g.num_edges("t"), 3)
    sg = sample_neighbors(g, seeds, -1, exclude_edges={"t": excl}, mask={("a", "r", "b"): torch.arange(200) < 100})
    assert not bool(torch.isin(sg.edges["t"].data[EID], excl).any())
    assert bool((sg.edges[("a", "r", "b")].data[EID] < 100).all())
    assert sg.num_edges("t") == g.num_edges("t") - excl.numel()
    with pytest.raises(DGLError, match="prob='nope'"):
        sample_neighbors(g, seeds, 2, prob="nope")
    g.edges["v"].data["p"] = -torch.ones(g.num_edges("v"))
    with pytest.raises(DGLError, match="non-negative"):
        sample_neighbors(g, {"a": [0, 1, 2]}, 2, prob="p")


def test_features_copied_and_inputs_untouched():
    g = _graph()
    g.edges["s"].data["x"] = torch.arange(g.num_edges("s"), dtype=torch.bfloat16)
    g.nodes["b"].data["h"] = torch.randn(30, 2)
    seeds = {"b": torch.tensor([1, 2])}
    before = seeds["b"].clone()
    sg = sample_neighbors(g, seeds, 2)
    assert torch.equal(seeds["b"], before) and set(g.edges["s"].data.keys()) == {"x"}
    eid = sg.edges["s"].data[EID].long()
    assert torch.equal(sg.edges["s"].data["x"], g.edges["s"].data["x"][eid])
    assert sg.nodes["b"].data["h"] is g.nodes["b"].data["h"]
    sg = sample_neighbors(g, seeds, 2, copy_ndata=False, copy_edata=False)
    assert "h" not in sg.nodes["b"].data and set(sg.edges["s"].data.keys()) == {EID}


def test_deterministic_with_seed():
    g = _graph()
    seeds = {"b": torch.arange(30), "a": torch.arange(40)}

    def run(s):
        torch.manual_seed(s)
        sg = sample_neighbors(g, seeds, {("a", "r", "b"): 2, ("a", "r", "a"): 1, "s": 2, "t": 1, "u": 1, "v": 2})
        return {cet: sg.edges[cet].data[EID].tolist() for cet in sg.canonical_etypes}

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_errors_name_types():
    g = _graph()
    with pytest.raises(DGLError, match="'zzz'"):
        sample_neighbors(g, {"zzz": [0]}, 2)
    with pytest.raises(DGLError, match=r"none for \[\('a', 'u', 'c'\)"):
        sample_neighbors(g, {"b": [0]}, {("a", "r", "b"): 1, ("a", "r", "a"): 1, "s": 1, "t": 1, "v": 1})
    with pytest.raises(DGLError, match="key 'r'.*ambiguous"):
        sample_neighbors(g, {"b": [0]}, {"r": 1})
    with pytest.raises(DGLError, match="'nope'"):
        sample_neighbors(g, {"b": [0]}, {"nope": 1})
    with pytest.raises(DGLError, match="fanout"):
        sample_neighbors(g, {"b": [0]}, -2)
    with pytest.raises(DGLError, match=r"\[0, 30\), got 30"):
        sample_neighbors(g, {"b": [30]}, 1)
    with pytest.raises(DGLError, match="dict"):
        sample_neighbors(g, [0, 1], 1)
    block = to_block(sample_neighbors(g, {"b": [0]}, 1), {"b": [0]})
    with pytest.raises(DGLError, match="typed block"):
        sample_neighbors(block, {"b": [0]}, 1)
    with pytest.raises(DGLError, match="select_topk.*several relations"):
        dgl.sampling.select_topk(g, 1, "w")


# --------------------------------------------------------------------------- to_block and HeteroBlock

def test_to_block_ids_order_and_edges():
    g = typed_case()
    g.nodes["user"].data["h"] = torch.arange(6.0)
    g.edges["plays"].data["w"] = torch.arange(8.0)
    dst = {"game": torch.tensor([3, 0, 1, 2, 4]), "user": torch.tensor([1, 2, 0]), "dev": torch.tensor([0, 1, 2])}
    fr = dgl.edge_type_subgraph(g, [("user", "plays", "game"), ("user", "follows", "user"),
                                    ("dev", "develops", "game")])
    block = to_block(fr, dst)
    assert isinstance(block, HeteroBlock) and block.is_block and block.ntypes == fr.ntypes
    assert block.srctypes == block.dsttypes == fr.ntypes
    # user sources: dst users first, then new sources in order of first appearance over the relations
    # ('user','follows','user') then ('user','plays','game'), along their edges
    assert block.srcnodes["user"].data[NID].tolist() == [1, 2, 0, 3, 5, 4]
    assert block.srcnodes["dev"].data[NID].tolist() == [0, 1, 2]
    assert block.num_src_nodes("game") == 5 and block.num_dst_nodes("user") == 3
    for cet in fr.canonical_etypes:
        s, d = block.edges(etype=cet)
        src_nid = block.srcnodes[cet[0]].data[NID][s.long()]
        dst_nid = block.dstnodes[cet[2]].data[NID][d.long()]
        gu, gv = fr.edges(etype=cet)
        assert torch.equal(src_nid, gu) and torch.equal(dst_nid, gv)
        assert block.edges[cet].data[EID].tolist() == list(range(fr.num_edges(cet)))
    assert torch.equal(block.srcdata["h"]["user"], g.nodes["user"].data["h"][block.srcnodes["user"].data[NID]])
    assert torch.equal(block.edges["plays"].data["w"], torch.arange(8.0))
    # nodes of a type left out of dst_nodes: no destination nodes; sources still prefixed per type
    into_games = dgl.edge_type_subgraph(fr, ["plays", "develops"])
    nb = to_block(into_games, {"game": torch.arange(5)}, include_dst_in_src=False)
    assert nb.num_dst_nodes("user") == 0 and nb.num_src_nodes("game") == 0
    assert nb.srcnodes["user"].data[NID].tolist() == [0, 1, 2, 4, 5]
    with pytest.raises(DGLError, match=r"dst_nodes\['user'\].*follows"):
        to_block(fr, {"game": torch.arange(5)})
    with pytest.raises(DGLError, match="repeated"):
        to_block(fr, {"game": [0, 0, 1, 2, 3, 4], "user": [0, 1, 2]})
    default = to_block(fr)
    assert default.dstnodes["user"].data[NID].tolist() == [0, 1, 2]   # nodes with in-edges, sorted
    given = to_block(fr, dst, src_nodes={"user": [1, 2, 0, 5, 4, 3], "dev": [0, 1, 2], "game": [3, 0, 1, 2, 4]})
    assert given.srcnodes["user"].data[NID].tolist() == [1, 2, 0, 5, 4, 3]
    with pytest.raises(DGLError, match="start with dst_nodes"):
        to_block(fr, dst, src_nodes={"user": [0, 1, 2, 3, 4, 5]})


def test_block_views_and_message_passing():
    g = typed_case()
    block = to_block(sample_neighbors(g, {"game": [0, 1, 3], "user": [1]}, -1), {"game": [0, 1, 3], "user": [1]})
    assert block.num_nodes() == block.num_src_nodes() + block.num_dst_nodes()
    with pytest.raises(DGLError, match="num_src_nodes"):
        block.num_nodes("user")
    with pytest.raises(DGLError, match="srcdata/dstdata"):
        _ = block.ndata
    rel = block["plays"]
    assert rel.is_block and rel.num_src_nodes() == block.num_src_nodes("user")
    assert rel.num_dst_nodes() == block.num_dst_nodes("game")
    x = torch.randn(block.num_src_nodes("user"), 3, dtype=F64)
    block.srcnodes["user"].data["x"] = x
    with block.local_scope():
        block.update_all(fn.copy_u("x", "m"), fn.sum("m", "y"), etype="plays")
        src, dst = block.edges(etype="plays")
        want = torch.zeros(3, 3, dtype=F64).index_add_(0, dst.long(), x[src.long()])
        assert torch.equal(block.dstnodes["game"].data["y"], want)
        block.srcnodes["game"].data["x"] = torch.randn(block.num_src_nodes("game"), 3, dtype=F64)
        block.srcnodes["dev"].data["x"] = torch.randn(block.num_src_nodes("dev"), 3, dtype=F64)
        block.multi_update_all({"plays": (fn.copy_u("x", "m"), fn.sum("m", "z")),
                                "develops": (fn.copy_u("x", "m"), fn.sum("m", "z"))}, "sum")
        d_src, d_dst = block.edges(etype="develops")
        want = want + torch.zeros(3, 3, dtype=F64).index_add_(0, d_dst.long(),
                                                               block.srcdata["x"]["dev"][d_src.long()])
        torch.testing.assert_close(block.dstdata["z"]["game"], want)
    assert "y" not in block.dstnodes["game"].data
    moved = block.to("cpu").int()
    assert moved.idtype == torch.int32 and moved.is_block and moved.num_src_nodes("user") == block.num_src_nodes("user")
    with pytest.raises(DGLError, match="block"):
        block.add_nodes(1, ntype="user")
    with pytest.raises(DGLError, match="typed block"):
        dgl.to_homogeneous(block)


def _model(kind):
    torch.manual_seed(0)
    if kind == "sage":
        mk = lambda: {e: SAGEConv(4, 4, "mean").double() for e in ("r", "s", "t", "u", "v")}  # noqa: E731
    else:
        mk = lambda: {e: GraphConv(4, 4, norm="right").double() for e in ("r", "s", "t", "u", "v")}  # noqa: E731
    return [HeteroGraphConv(mk(), aggregate="sum"), HeteroGraphConv(mk(), aggregate="mean")]


@pytest.mark.parametrize("kind", ["sage", "gcn"])
def test_full_fanout_blocks_match_full_graph_conv(kind):
    g = random_typed(NN, {cet: n for cet, n in RELS.items() if cet != ("a", "r", "a")}, seed=5)
    gen = torch.Generator().manual_seed(1)
    x = {nt: torch.randn(g.num_nodes(nt), 4, generator=gen, dtype=F64) for nt in g.ntypes}
    layers = _model(kind)
    h = x
    for layer in layers:
        h = layer(g, h)
    seeds = {"b": torch.tensor([3, 0, 17, 9]), "a": torch.tensor([2, 39])}
    sampler = NeighborSampler([-1, {"r": -1, "s": -1, "t": -1, "u": -1, "v": -1}], prefetch_node_feats=[])
    input_nodes, output_nodes, blocks = sampler.sample(g, seeds)
    assert all(isinstance(b, HeteroBlock) for b in blocks)
    assert {k: v.tolist() for k, v in output_nodes.items()} == {k: v.tolist() for k, v in seeds.items()}
    hb = {nt: x[nt][input_nodes[nt].long()] for nt in g.ntypes}
    for i, (layer, block) in enumerate(zip(layers, blocks)):
        if i == 0:
            hb = layer(block, hb)                                      # one dict: destination rows come first
        else:
            dst = {nt: v[:block.num_dst_nodes(nt)] for nt, v in hb.items()}
            hb = layer(block, (hb, dst))
    for nt, ids in seeds.items():
        torch.testing.assert_close(hb[nt], h[nt][ids], rtol=1e-12, atol=1e-12)


def test_neighbor_sampler_fanouts_and_prefetch():
    g = _graph()
    g.nodes["a"].data["feat"] = torch.randn(40, 3).to(torch.bfloat16)
    g.nodes["b"].data["feat"] = torch.randn(30, 3).to(torch.bfloat16)
    g.nodes["b"].data["label"] = torch.arange(30)
    g.edges["s"].data["w"] = torch.arange(150.0)
    fan = [{("a", "r", "b"): 1, ("a", "r", "a"): 2, "s": 2, "t": 0, "u": 3, "v": -1}, 2]
    sampler = NeighborSampler(fan, prefetch_node_feats=["feat"], prefetch_labels={"b": ["label"]},
                              prefetch_edge_feats={"s": ["w"]})
    torch.manual_seed(0)
    input_nodes, output_nodes, blocks = sampler.sample(g, {"b": torch.tensor([0, 5, 6])})
    assert list(output_nodes) == ["b"] and len(blocks) == 2
    for block, layer_fan in zip(blocks, fan):
        for cet in g.canonical_etypes:
            k = layer_fan if isinstance(layer_fan, int) else layer_fan.get(cet, layer_fan.get(cet[1]))
            deg = reference(g, cet).in_degrees().long()
            dst_nid = block.dstnodes[cet[2]].data[NID].long()
            want = deg[dst_nid] if k < 0 else deg[dst_nid].clamp(max=k)
            assert torch.equal(block.in_degrees(etype=cet).long(), want), cet
            src, dst = block.edges(etype=cet)
            eid = block.edges[cet].data[EID].long()
            gu, gv = g.edges(etype=cet)
            assert torch.equal(block.srcnodes[cet[0]].data[NID][src.long()], gu[eid])
            assert torch.equal(dst_nid[dst.long()], gv[eid])
    # the destination nodes of layer 0 are the source nodes of layer 1
    for nt in g.ntypes:
        assert torch.equal(blocks[0].dstnodes[nt].data[NID], blocks[1].srcnodes[nt].data[NID])
        assert torch.equal(input_nodes[nt], blocks[0].srcnodes[nt].data[NID])
    assert blocks[0].srcnodes["a"].data["feat"].dtype == torch.bfloat16
    assert torch.equal(blocks[0].srcnodes["b"].data["feat"], g.nodes["b"].data["feat"][input_nodes["b"].long()])
    assert "feat" not in blocks[0].srcnodes["c"].data
    assert blocks[-1].dstnodes["b"].data["label"].tolist() == [0, 5, 6]
    assert "feat" not in blocks[-1].dstnodes["b"].data
    for block in blocks:
        assert torch.equal(block.edges["s"].data["w"], g.edges["s"].data["w"][block.edges["s"].data[EID].long()])
        assert "w" not in block.edges["v"].data
    with pytest.raises(DGLError, match="fanouts"):
        NeighborSampler([{"r": -3}])
    with pytest.raises(DGLError, match=r"fanouts\[0\] dict, got none for"):
        NeighborSampler([{"s": 1}]).sample(g, {"b": [0]})
    with pytest.raises(DGLError, match="edge_dir='in'"):
        NeighborSampler([1], edge_dir="out").sample(g, {"b": [0]})
    with pytest.raises(DGLError, match="'feat2'"):
        NeighborSampler([1], prefetch_node_feats=["feat2"]).sample(g, {"b": [0]})


def test_dataloader_typed_indices():
    g = _graph()
    indices = {"b": torch.arange(10), "a": torch.arange(5)}
    loader = DataLoader(g, indices, MultiLayerFullNeighborSampler(2), batch_size=4, shuffle=True)
    assert len(loader) == 4
    torch.manual_seed(0)
    seen = {"a": [], "b": []}
    for input_nodes, output_nodes, blocks in loader:
        assert isinstance(input_nodes, dict) and set(input_nodes) == set(g.ntypes)
        assert sum(v.numel() for v in output_nodes.values()) <= 4
        for nt, ids in output_nodes.items():
            seen[nt] += ids.tolist()
            assert torch.equal(blocks[-1].dstnodes[nt].data[NID], ids)
    assert sorted(seen["b"]) == list(range(10)) and sorted(seen["a"]) == list(range(5))
    torch.manual_seed(0)
    again = [{k: v.tolist() for k, v in out.items()} for _, out, _ in loader]
    torch.manual_seed(0)
    assert again == [{k: v.tolist() for k, v in out.items()} for _, out, _ in loader]
    ordered = DataLoader(g, indices, NeighborSampler([1]), batch_size=6)
    assert [{k: v.tolist() for k, v in out.items()} for _, out, _ in ordered] == [
        {"b": [0, 1, 2, 3, 4, 5]}, {"b": [6, 7, 8, 9], "a": [0, 1]}, {"a": [2, 3, 4]}]
    with pytest.raises(DGLError, match="'q'"):
        next(iter(DataLoader(g, {"q": torch.arange(3)}, NeighborSampler([1]))))
