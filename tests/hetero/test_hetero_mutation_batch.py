"""HeteroGraph mutation (add/remove nodes and edges) and batching (batch_hetero / unbatch_hetero)."""

import pytest
import torch
from hetero_cases import random_typed, typed_case

import mpgraph.function as fn
from mpgraph.base import EID, NID, DGLError
from mpgraph.heterograph import batch_hetero, unbatch_hetero


def _edge_set(g, cet):
    u, v = g.edges(etype=cet)
    return list(zip(u.tolist(), v.tolist()))


def test_add_nodes_and_edges_refit_every_relation():
    g = typed_case()
    g.nodes["game"].data["x"] = torch.ones(5, 2)
    g.add_nodes(2, {"x": torch.full((2, 2), 3.0)}, ntype="game")
    assert g.num_nodes("game") == 7
    assert g["plays"].num_dst_nodes() == 7 and g["develops"].num_dst_nodes() == 7 and g["sold-by"].num_src_nodes() == 7
    assert g.nodes["game"].data["x"][5:].tolist() == [[3.0, 3.0]] * 2
    assert g.in_degrees(etype="develops").tolist() == [1, 1, 0, 1, 1, 0, 0]
    g.edges["plays"].data["w"] = torch.arange(8.0)
    g.add_edges([6, 7], [8, 0], {"w": torch.tensor([10.0, 11.0])}, etype="plays")    # new users 6, 7 and game 8
    assert g.num_nodes("user") == 8 and g.num_nodes("game") == 9
    assert g["follows"].num_nodes() == 8 and g[("user", "likes", "dev")].num_src_nodes() == 8
    assert _edge_set(g, "plays")[-2:] == [(6, 8), (7, 0)] and g.edges["plays"].data["w"][-2:].tolist() == [10, 11]
    g.remove_edges([0, 8], etype="plays", store_ids=True)
    assert g.num_edges("plays") == 8 and g.edges["plays"].data[EID].tolist() == [1, 2, 3, 4, 5, 6, 7, 9]
    with pytest.raises(DGLError, match="ambiguous"):
        g.add_edges([0], [0], etype="likes")


def test_remove_nodes_filters_every_relation_of_the_type():
    g = typed_case()
    before = {cet: _edge_set(g, cet) for cet in g.canonical_etypes}
    g.nodes["user"].data["x"] = torch.arange(6.0)
    g.remove_nodes([1, 4], ntype="user", store_ids=True)
    kept = [0, 2, 3, 5]
    new = {old: i for i, old in enumerate(kept)}
    assert g.num_nodes("user") == 4 and g.nodes["user"].data["x"].tolist() == [0.0, 2.0, 3.0, 5.0]
    assert g.nodes["user"].data[NID].tolist() == kept
    for cet, edges in before.items():
        s, _, d = cet
        expect = [(new[u] if s == "user" else u, new[v] if d == "user" else v) for u, v in edges
                  if (s != "user" or u in new) and (d != "user" or v in new)]
        assert _edge_set(g, cet) == expect, cet
    assert g["plays"].num_src_nodes() == 4 and g["follows"].num_nodes() == 4


def _rand(seed):
    g = random_typed({"a": 4 + seed, "b": 3, "c": 2 + seed % 2},
                     {("a", "r", "b"): 6 + seed, ("b", "s", "b"): 4, ("c", "t", "a"): 3}, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    for nt in g.ntypes:
        g.nodes[nt].data["h"] = torch.randn(g.num_nodes(nt), 2, generator=gen)
    for cet in g.canonical_etypes:
        g.edges[cet].data["w"] = torch.randn(g.num_edges(cet), 2, generator=gen)
    return g


def test_batch_then_message_passing_equals_per_graph():
    graphs = [_rand(i) for i in range(3)]
    bg = batch_hetero(graphs)
    assert bg.batch_size == 3 and bg.batch_num_nodes("a").tolist() == [4, 5, 6]
    assert bg.batch_num_edges("r").tolist() == [6, 7, 8] and bg.num_edges("r") == 21
    funcs = {cet: (fn.u_mul_e("h", "w", "m"), fn.sum("m", "o")) for cet in bg.canonical_etypes}
    bg.multi_update_all(funcs, "mean")
    for g in graphs:
        g.multi_update_all(funcs, "mean")
    for nt in ("a", "b"):
        torch.testing.assert_close(bg.nodes[nt].data["o"], torch.cat([g.nodes[nt].data["o"] for g in graphs]))
    parts = unbatch_hetero(bg)
    assert len(parts) == 3
    for p, g in zip(parts, graphs):
        for cet in g.canonical_etypes:
            assert _edge_set(p, cet) == _edge_set(g, cet)
            assert torch.equal(p.edges[cet].data["w"], g.edges[cet].data["w"])
        for nt in g.ntypes:
            assert torch.equal(p.nodes[nt].data["h"], g.nodes[nt].data["h"])
    nested = batch_hetero([batch_hetero(graphs[:2]), graphs[2]])
    assert nested.batch_size == 3 and nested.batch_num_nodes("c").tolist() == [2, 3, 2]
    again = unbatch_hetero(bg, {nt: bg.batch_num_nodes(nt) for nt in bg.ntypes},
                           {cet: bg.batch_num_edges(cet) for cet in bg.canonical_etypes})
    assert [p.num_edges("s") for p in again] == [4, 4, 4]


def test_batch_errors():
    with pytest.raises(DGLError, match="non-empty"):
        batch_hetero([])
    other = random_typed({"a": 2, "b": 2}, {("a", "r", "b"): 2, ("b", "s", "a"): 1})
    with pytest.raises(DGLError, match="node types"):
        batch_hetero([_rand(0), other])
    g = _rand(1)
    with pytest.raises(DGLError, match="summing to"):
        unbatch_hetero(g, {"a": [1, 1], "b": [3], "c": [3]}, {"r": [7], "s": [4], "t": [3]})
    with pytest.raises(DGLError, match="own graph"):
        bad = batch_hetero([_rand(0), _rand(2)])
        unbatch_hetero(bad, {"a": [1, 9], "b": [3, 3], "c": [2, 2]},
                       {"r": bad.batch_num_edges("r"), "s": bad.batch_num_edges("s"), "t": bad.batch_num_edges("t")})
