"""Every transform on the shared graph cases (empty, isolated, multi-edge, ...) against brute-force oracles."""

import pytest
import torch

import mpgraph as dgl
from graph_cases import CASES
from mpgraph.transforms import functional as F

HOMOGENEOUS = sorted(k for k, (_, _, ns, nd) in CASES.items() if k != "bipartite")


def _graph(name, idtype):
    src, dst, ns, nd = CASES[name]
    if name == "bipartite":
        g = dgl.heterograph({("u", "r", "v"): (src, dst)}, {"u": ns, "v": nd}, idtype=idtype)
    else:
        g = dgl.graph((src, dst), num_nodes=ns, idtype=idtype)
    g.edata["e"] = torch.arange(src.numel(), dtype=torch.float64)
    return g


def _pairs(g):
    u, v = g.edges()
    return list(zip(u.tolist(), v.tolist()))


@pytest.mark.parametrize("name", HOMOGENEOUS)
def test_structural_transforms_match_oracles(name, idtype):
    g = _graph(name, idtype)
    N, E = g.num_nodes(), g.num_edges()
    pairs = _pairs(g)
    g.ndata["x"] = torch.arange(N, dtype=torch.float64)

    sl = F.add_self_loop(g)
    assert _pairs(sl) == pairs + [(i, i) for i in range(N)] and sl.idtype == idtype
    rs = F.remove_self_loop(g)
    assert _pairs(rs) == [p for p in pairs if p[0] != p[1]]
    ts, wm = F.to_simple(g, writeback_mapping=True)
    assert _pairs(ts) == sorted(set(pairs))
    assert ts.edata["count"].tolist() == [pairs.count(p) for p in sorted(set(pairs))]
    assert [_pairs(ts)[i] for i in wm.tolist()] == pairs
    assert _pairs(F.to_bidirected(g)) == sorted(set(pairs) | {(v, u) for u, v in pairs})
    assert _pairs(F.add_reverse_edges(g)) == pairs + [(v, u) for u, v in pairs if u != v]
    assert _pairs(F.reverse(g)) == [(v, u) for u, v in pairs]

    lg = F.line_graph(g)
    assert lg.num_nodes() == E
    assert _pairs(lg) == [(i, j) for i in range(E) for j in range(E) if i != j and pairs[i][1] == pairs[j][0]]
    A = torch.zeros(N, N, dtype=torch.int64)
    for u, v in pairs:
        A[u, v] += 1
    A2 = A @ A
    assert _pairs(F.khop_graph(g, 2)) == [(u, v) for u in range(N) for v in range(N) for _ in range(A2[u, v])]

    for algo, config in [(None, None), ("rcmk", None), ("degree", None), ("metis", {"k": min(2, max(N, 1))})]:
        rg = F.reorder_graph(g, node_permute_algo=algo, permute_config=config)
        nid, eid = rg.ndata[dgl.NID].long(), rg.edata[dgl.EID].long()
        assert sorted(nid.tolist()) == list(range(N)) and sorted(eid.tolist()) == list(range(E))
        assert [(int(nid[u]), int(nid[v])) for u, v in _pairs(rg)] == [pairs[e] for e in eid.tolist()]
        assert torch.equal(rg.ndata["x"], g.ndata["x"][nid]) and torch.equal(rg.edata["e"], g.edata["e"][eid])

    cg = F.compact_graphs(g)
    nid = cg.ndata[dgl.NID].tolist()
    assert set(nid) == {n for p in pairs for n in p}
    assert [(nid[u], nid[v]) for u, v in _pairs(cg)] == pairs

    sub = list(range(0, N, 2))
    ns = F.node_subgraph(g, sub)
    eids = [e for s in sub for e in range(E) if pairs[e][0] == s and pairs[e][1] in sub]
    assert ns.edata[dgl.EID].tolist() == eids
    assert [(sub[u], sub[v]) for u, v in _pairs(ns)] == [pairs[e] for e in eids]
    ins = F.in_subgraph(g, sub)
    assert ins.edata[dgl.EID].tolist() == [e for s in sub for e in range(E) if pairs[e][1] == s]
    if N:
        kin, inv = F.khop_in_subgraph(g, 0, k=2)
        reach = {0} | {u for u, v in pairs if v == 0}
        reach |= {u for u, v in pairs if v in reach}
        assert kin.ndata[dgl.NID].tolist() == sorted(reach) and inv.tolist() == [0]


@pytest.mark.parametrize("name", HOMOGENEOUS)
def test_positional_encodings_shapes(name):
    g = _graph(name, torch.int64)
    N = g.num_nodes()
    pe = F.random_walk_pe(g, 3)
    assert pe.shape == (N, 3) and pe.dtype == torch.float32 and bool(torch.isfinite(pe).all())
    pe = F.lap_pe(g, 2, padding=True)
    assert pe.shape == (N, 2) and bool(torch.isfinite(pe).all())


def test_bipartite_case(idtype):
    g = _graph("bipartite", idtype)
    pairs = _pairs(g)
    assert _pairs(F.to_simple(g)) == sorted(set(pairs))
    assert _pairs(F.reverse(g)) == [(v, u) for u, v in pairs]
    sg = F.edge_subgraph(g, [6, 0])
    assert sg.srcdata[dgl.NID].tolist() == [2, 0] and sg.dstdata[dgl.NID].tolist() == [1, 0]
    cg = F.compact_graphs(g)
    s, d = cg.srcdata[dgl.NID].tolist(), cg.dstdata[dgl.NID].tolist()
    assert [(s[u], d[v]) for u, v in _pairs(cg)] == pairs
