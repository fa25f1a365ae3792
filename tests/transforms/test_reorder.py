"""reorder_graph: DGL's documented permutations, message passing invariance, RCM bandwidth, errors."""

import pytest
import torch

import mpgraph as dgl
import mpgraph.function as fn
from mpgraph import DGLError
from mpgraph.transforms import functional as F


def _doc_graph(idtype=torch.int64):
    g = dgl.graph((torch.tensor([0, 1, 2, 3, 4]), torch.tensor([2, 2, 3, 2, 3])), idtype=idtype)
    g.ndata["h"] = torch.arange(10).view(5, 2)
    g.edata["w"] = torch.arange(5).view(5, 1)
    return g


@pytest.mark.parametrize("node_algo,edge_algo,config,nid,eid", [
    # the permutations of DGL's reorder_graph docstring
    ("rcmk", "src", None, [4, 3, 1, 2, 0], [4, 3, 1, 2, 0]),
    ("rcm", "src", None, [4, 3, 1, 2, 0], [4, 3, 1, 2, 0]),
    ("custom", "src", {"nodes_perm": [3, 2, 0, 4, 1]}, [3, 2, 0, 4, 1], [3, 2, 0, 4, 1]),
    ("rcmk", "dst", None, [4, 3, 1, 2, 0], [4, 2, 3, 1, 0]),
    (None, "custom", {"edges_perm": [1, 2, 3, 4, 0]}, [0, 1, 2, 3, 4], [1, 2, 3, 4, 0]),
    # mpgraph's extension: in-degree descending, ties by ID
    ("degree", "src", None, [2, 3, 0, 1, 4], [2, 3, 0, 1, 4]),
])
def test_reorder_graph_permutations(node_algo, edge_algo, config, nid, eid, idtype):
    g = _doc_graph(idtype)
    rg = F.reorder_graph(g, node_permute_algo=node_algo, edge_permute_algo=edge_algo, permute_config=config)
    assert rg.idtype == idtype and rg.ndata[dgl.NID].dtype == idtype and rg.edata[dgl.EID].dtype == idtype
    assert rg.ndata[dgl.NID].tolist() == nid and rg.edata[dgl.EID].tolist() == eid
    assert torch.equal(rg.ndata["h"], g.ndata["h"][nid]) and torch.equal(rg.edata["w"], g.edata["w"][eid])
    # edge j of rg is edge eid[j] of g, renumbered
    new_of_old = torch.argsort(torch.tensor(nid))
    u, v = g.edges()
    ru, rv = rg.edges()
    assert ru.tolist() == new_of_old[u[eid].long()].tolist() and rv.tolist() == new_of_old[v[eid].long()].tolist()
    # the input is untouched
    assert set(g.ndata.keys()) == {"h"} and set(g.edata.keys()) == {"w"}


def test_reorder_graph_sorts_edges_and_skips_ids():
    g = _doc_graph()
    rg = F.reorder_graph(g, edge_permute_algo="dst", store_ids=False)
    assert rg.edges()[1].tolist() == [2, 2, 2, 3, 3] and rg.edges()[0].tolist() == [0, 1, 3, 2, 4]
    assert set(rg.ndata.keys()) == {"h"} and set(rg.edata.keys()) == {"w"}
    rg = F.reorder_graph(g, node_permute_algo="degree", edge_permute_algo="src")
    assert rg.edges()[0].tolist() == sorted(rg.edges()[0].tolist())


@pytest.mark.parametrize("node_algo,config", [(None, None), ("rcmk", None), ("metis", {"k": 3}),
                                              ("degree", None), ("custom", "random")])
@pytest.mark.parametrize("edge_algo", ["src", "dst"])
def test_reorder_graph_message_passing_invariant(node_algo, config, edge_algo, idtype):
    gen = torch.Generator().manual_seed(1)
    N, E = 60, 300
    g = dgl.graph((torch.randint(0, N, (E,), generator=gen), torch.randint(0, N, (E,), generator=gen)),
                  num_nodes=N, idtype=idtype)
    g.ndata["h"] = torch.randn(N, 4, generator=gen, dtype=torch.float64)
    g.edata["w"] = torch.randn(E, 1, generator=gen, dtype=torch.float64)
    if config == "random":
        config = {"nodes_perm": torch.randperm(N, generator=gen).to(idtype)}
    rg = F.reorder_graph(g, node_permute_algo=node_algo, edge_permute_algo=edge_algo, permute_config=config)
    nid = rg.ndata[dgl.NID].long()
    assert torch.equal(torch.sort(nid).values, torch.arange(N))
    g.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "out"))
    rg.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "out"))
    back = torch.empty_like(rg.ndata["out"])
    back[nid] = rg.ndata["out"]
    assert torch.allclose(back, g.ndata["out"], rtol=1e-12, atol=1e-12)
    g.update_all(fn.copy_u("h", "m"), fn.max("m", "mx"))
    rg.update_all(fn.copy_u("h", "m"), fn.max("m", "mx"))
    assert torch.equal(rg.ndata["mx"], g.ndata["mx"][nid])


def _bandwidth(g):
    u, v = g.edges()
    return int((u.long() - v.long()).abs().max())


def test_rcm_reduces_bandwidth_of_shuffled_band_matrix():
    N, b = 300, 3
    i = torch.arange(N).repeat_interleave(2 * b + 1)
    j = i + torch.arange(-b, b + 1).repeat(N)
    keep = (j >= 0) & (j < N)
    band = dgl.graph((i[keep], j[keep]), num_nodes=N)
    assert _bandwidth(band) == b
    shuffled = F.reorder_graph(band, node_permute_algo="custom",
                               permute_config={"nodes_perm": torch.randperm(N, generator=torch.Generator()
                                                                            .manual_seed(0))})
    assert _bandwidth(shuffled) > N // 2
    rg = F.reorder_graph(shuffled, node_permute_algo="rcmk")
    assert _bandwidth(rg) <= 2 * b


def test_metis_groups_components():
    # two 10-cliques with interleaved labels: METIS with k=2 separates them
    a = torch.arange(0, 20, 2)
    b = torch.arange(1, 20, 2)
    src = torch.cat([a.repeat_interleave(10), b.repeat_interleave(10)])
    dst = torch.cat([a.repeat(10), b.repeat(10)])
    g = dgl.graph((src, dst), num_nodes=20)
    nid = F.reorder_graph(g, node_permute_algo="metis", permute_config={"k": 2}).ndata[dgl.NID]
    first = set((nid[:10] % 2).tolist())
    assert len(first) == 1 and set((nid[10:] % 2).tolist()) == {1 - first.pop()}
    one = F.reorder_graph(g, node_permute_algo="metis", permute_config={"k": 1})
    assert one.ndata[dgl.NID].tolist() == list(range(20))


def test_reorder_graph_errors():
    g = _doc_graph()
    with pytest.raises(DGLError, match=r"expected node_permute_algo in \[None, 'rcmk', .*\], got 'foo'"):
        F.reorder_graph(g, node_permute_algo="foo")
    with pytest.raises(DGLError, match=r"expected edge_permute_algo in \['src', 'dst', 'custom'\], got 'eid'"):
        F.reorder_graph(g, edge_permute_algo="eid")
    with pytest.raises(DGLError, match=r"expected permute_config=\{'k': <number of parts>\}"):
        F.reorder_graph(g, node_permute_algo="metis")
    with pytest.raises(DGLError, match="expected permute_config\\['k'\\] to be an int >= 1, got 0"):
        F.reorder_graph(g, node_permute_algo="metis", permute_config={"k": 0})
    with pytest.raises(DGLError, match=r"at most the number of nodes \(5\), got 6"):
        F.reorder_graph(g, node_permute_algo="metis", permute_config={"k": 6})
    with pytest.raises(DGLError, match=r"expected permute_config=\{'nodes_perm': ids\}"):
        F.reorder_graph(g, node_permute_algo="custom", permute_config={})
    with pytest.raises(DGLError, match=r"expected node IDs in \[0, 5\), got 7"):
        F.reorder_graph(g, node_permute_algo="custom", permute_config={"nodes_perm": [0, 1, 2, 3, 7]})
    with pytest.raises(DGLError, match=r"permutation of 0..4 \(5 distinct IDs\), got 5 IDs with repeats"):
        F.reorder_graph(g, node_permute_algo="custom", permute_config={"nodes_perm": [0, 0, 1, 2, 3]})
    with pytest.raises(DGLError, match=r"permutation of 0..4 \(5 distinct IDs\), got 3 IDs"):
        F.reorder_graph(g, edge_permute_algo="custom", permute_config={"edges_perm": [0, 1, 2]})
    with pytest.raises(DGLError, match=r"expected edge IDs in \[0, 5\), got 5"):
        F.reorder_graph(g, edge_permute_algo="custom", permute_config={"edges_perm": [1, 2, 3, 4, 5]})
    with pytest.raises(DGLError, match="homogeneous"):
        F.reorder_graph(dgl.heterograph({("u", "r", "v"): ([0], [0])}))
    with pytest.raises(DGLError, match="got a block"):
        F.reorder_graph(dgl.create_block(([0], [0])))
