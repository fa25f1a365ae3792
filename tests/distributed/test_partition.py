"""partition_graph / load_partition round trip, halo correctness, integrity checks, the partition book."""

import json
import os
import shutil

import pytest
import torch

import mpgraph as dgl
from mpgraph import DGLError
from mpgraph.data import CSBMDataset
from mpgraph.distributed import (DistGraph, GraphPartitionBook, load_partition, load_partition_book, node_split,
                                 partition_graph)


@pytest.fixture(scope="module")
def graph():
    g = CSBMDataset(num_nodes=240, num_classes=3, avg_degree=5, num_feats=4, seed=2)[0]
    g.ndata["h16"] = g.ndata["feat"].to(torch.bfloat16)
    g.edata["w"] = torch.arange(g.num_edges(), dtype=torch.float32)
    return g


def _in_hops(g, owned, num_hops):
    """``{node: hop}`` of the nodes reached from ``owned`` along in-edges within ``num_hops``."""
    src, dst = g.edges()
    hop = {int(v): 0 for v in owned}
    frontier = set(hop)
    for k in range(1, num_hops + 1):
        mask = torch.tensor([int(d) in frontier for d in dst.tolist()], dtype=torch.bool)
        new = {int(s) for s in src[mask].tolist()} - set(hop)
        for v in new:
            hop[v] = k
        frontier = new
    return hop


@pytest.mark.parametrize("num_hops,method", [(1, "metis"), (2, "metis"), (1, "random")])
def test_round_trip(graph, tmp_path, num_hops, method):
    g = graph
    k = 3
    partition_graph(g, "g", k, tmp_path, num_hops=num_hops, part_method=method)
    config = tmp_path / "g.json"
    src, dst = g.edges()
    owner = torch.full((g.num_nodes(),), -1)
    edge_owner = torch.full((g.num_edges(),), -1)
    for p in range(k):
        local_g, nfeat, efeat, gpb, name, ntypes, etypes = load_partition(config, p)
        assert name == "g" and ntypes == ["_N"] and etypes == [("_N", "_E", "_N")] and gpb.partid == p
        nid, inner = local_g.ndata[dgl.NID], local_g.ndata["inner_node"]
        n_in = int(inner.sum())
        assert bool(inner[:n_in].all()) and not bool(inner[n_in:].any())       # owned nodes first
        owned = nid[:n_in]
        assert torch.equal(owned, owned.sort().values)
        assert bool((owner[owned] == -1).all())                                 # owned by exactly one part
        owner[owned] = p
        assert torch.equal(gpb.partid2nids(p), owned)
        # local edges are real edges, with their global IDs
        ls, ld = local_g.edges()
        eid = local_g.edata[dgl.EID]
        assert torch.equal(src[eid], nid[ls]) and torch.equal(dst[eid], nid[ld])
        # owned edges: exactly the in-edges of owned nodes
        own_e = eid[local_g.edata["inner_edge"]]
        assert torch.equal(own_e, torch.isin(dst, owned).nonzero().squeeze(1))
        edge_owner[own_e] = p
        # halo: the nodes within num_hops along in-edges, with their hop
        hop = _in_hops(g, owned.tolist(), num_hops)
        assert sorted(nid.tolist()) == sorted(hop)
        assert local_g.ndata["halo_hop"].tolist() == [hop[v] for v in nid.tolist()]
        # nodes before the last ring have every in-edge locally
        complete = nid[local_g.ndata["halo_hop"] < num_hops]
        want = torch.isin(dst, complete).nonzero().squeeze(1)
        assert set(want.tolist()) <= set(eid.tolist())
        # features of owned rows, in storage dtype
        assert torch.equal(nfeat["_N/feat"], g.ndata["feat"][owned])
        assert nfeat["_N/h16"].dtype == torch.bfloat16 and torch.equal(nfeat["_N/h16"], g.ndata["h16"][owned])
        assert torch.equal(efeat["_N:_E:_N/w"], g.edata["w"][own_e])
        assert torch.equal(gpb.nid2localnid(owned, p), torch.arange(n_in))
    assert bool((owner >= 0).all()) and bool((edge_owner >= 0).all())
    assert torch.equal(gpb.nid2partid(torch.arange(g.num_nodes())), owner)
    assert torch.equal(gpb.eid2partid(torch.arange(g.num_edges())), edge_owner)
    sizes = torch.bincount(owner, minlength=k)
    if method == "random":
        assert int(sizes.max() - sizes.min()) <= 1


def test_metis_cuts_fewer_edges_than_random(graph, tmp_path):
    cut = {}
    for method in ("metis", "random"):
        partition_graph(graph, method, 2, tmp_path / method, part_method=method)
        gpb, *_ = load_partition_book(tmp_path / method / f"{method}.json", 0)
        src, dst = graph.edges()
        cut[method] = int((gpb.nid2partid(src) != gpb.nid2partid(dst)).sum())
    assert cut["metis"] < cut["random"]


def test_manifest_and_mapping(graph, tmp_path):
    orig_nids, orig_eids = partition_graph(graph, "m", 2, tmp_path, return_mapping=True, metadata={"note": 1})
    assert torch.equal(orig_nids, torch.arange(graph.num_nodes()))
    assert torch.equal(orig_eids, torch.arange(graph.num_edges()))
    manifest = json.loads((tmp_path / "m.json").read_text())
    assert manifest["format"] == "mpgraph.partition" and manifest["version"] == 1
    assert manifest["num_parts"] == 2 and manifest["metadata"] == {"note": 1}
    assert manifest["node_map"]["path"] == "node_map.mpg"                     # a file, not inline JSON
    assert all(len(p["graph"]["sha256"]) == 64 for p in manifest["parts"])
    assert manifest["node_feats"]["h16"] == {"dtype": "bfloat16", "shape": [4]}


def test_corruption_is_detected(graph, tmp_path):
    partition_graph(graph, "c", 2, tmp_path)
    config = tmp_path / "c.json"
    path = tmp_path / "part1" / "node_feat.mpg"
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x40
    path.write_bytes(bytes(data))
    load_partition(config, 0)                                                  # part 0 is intact
    with pytest.raises(DGLError, match="checksum mismatch.*node features"):
        load_partition(config, 1)
    load_partition(config, 1, load_feats=False)


def test_swapped_or_missing_files_are_detected(graph, tmp_path):
    partition_graph(graph, "s", 2, tmp_path)
    config = tmp_path / "s.json"
    shutil.copy(tmp_path / "part0" / "graph.mpg", tmp_path / "part1" / "graph.mpg")   # a valid file, wrong part
    with pytest.raises(DGLError, match="part 1 graph"):
        load_partition(config, 1)
    os.remove(tmp_path / "node_map.mpg")
    with pytest.raises(DGLError, match="no such file"):
        load_partition(config, 0)


def test_manifest_checks(graph, tmp_path):
    partition_graph(graph, "v", 2, tmp_path)
    config = tmp_path / "v.json"
    manifest = json.loads(config.read_text())
    manifest["version"] = 99
    config.write_text(json.dumps(manifest))
    with pytest.raises(DGLError, match="newer mpgraph"):
        load_partition(config, 0)
    manifest["version"] = 1
    manifest["parts"][0]["graph"]["path"] = "../outside.mpg"
    config.write_text(json.dumps(manifest))
    with pytest.raises(DGLError, match="inside the partition directory"):
        load_partition(config, 0)
    with pytest.raises(DGLError, match="part ID in"):
        load_partition(config, 2)
    with pytest.raises(DGLError, match="no such file"):
        load_partition(tmp_path / "missing.json", 0)


def test_bad_arguments(graph, tmp_path):
    with pytest.raises(DGLError, match="num_hops"):
        partition_graph(graph, "b", 2, tmp_path, num_hops=0)
    with pytest.raises(DGLError, match="num_parts"):
        partition_graph(graph, "b", 0, tmp_path)
    with pytest.raises(DGLError, match="at most one part per node"):
        partition_graph(dgl.graph(([0], [1])), "b", 3, tmp_path)
    with pytest.raises(DGLError, match="graph_name"):
        partition_graph(graph, "a/b", 2, tmp_path)
    with pytest.raises(DGLError, match="part_method"):
        partition_graph(graph, "b", 2, tmp_path, part_method="kmeans")


def test_partition_book_lookups():
    gpb = GraphPartitionBook(1, torch.tensor([1, 0, 0, 1, 1], dtype=torch.int32), 2,
                             edge_map=torch.tensor([0, 1, 1], dtype=torch.int32))
    assert gpb.nid2localnid(torch.tensor([4, 0]), 1).tolist() == [2, 0]
    assert gpb.eid2localeid(torch.tensor([2, 1]), 1).tolist() == [1, 0]
    assert [m["num_nodes"] for m in gpb.metadata()] == [2, 3]
    with pytest.raises(DGLError, match="owned by part 0"):
        gpb.nid2localnid(torch.tensor([0]), 0)
    with pytest.raises(DGLError, match="owned by part 1"):
        gpb.nid2localnid(torch.tensor([1]), 1)
    with pytest.raises(DGLError, match=r"IDs in \[0, 5\)"):
        gpb.nid2partid(torch.tensor([5]))
    with pytest.raises(DGLError, match="part ID"):
        gpb.partid2nids(2)


def test_standalone_dist_graph(graph, tmp_path):
    partition_graph(graph, "one", 1, tmp_path)
    g = DistGraph("one", part_config=tmp_path / "one.json", float_dtype=torch.float16)
    ids = torch.tensor([5, 0, 5, 239])
    assert g.ndata["feat"].dtype == torch.float16 and g.ndata["label"].dtype == torch.int64
    assert torch.equal(g.ndata["feat"][ids], graph.ndata["feat"][ids].half())
    g.ndata["feat"][torch.tensor([1])] = torch.ones(1, 4)
    assert g.ndata["feat"][torch.tensor([1])].tolist() == [[1.0] * 4]
    assert g.comm_stats()["total_bytes_sent"] == 0
    train = node_split(g.ndata["train_mask"], g.get_partition_book())
    assert torch.equal(train, graph.ndata["train_mask"].nonzero().squeeze(1))
    with pytest.raises(DGLError, match="one process per part"):
        partition_graph(graph, "two", 2, tmp_path)
        DistGraph("two", part_config=tmp_path / "two.json")
    with pytest.raises(DGLError, match="expected graph 'other'"):
        DistGraph("other", part_config=tmp_path / "one.json")
