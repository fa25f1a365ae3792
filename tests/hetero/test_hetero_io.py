"""save_graphs / load_graphs of HeteroGraphs and typed blocks: bit-exact round trips, mixed lists, integrity."""

import hashlib
import json
import struct

import pytest
import torch
from hetero_cases import typed_case

import mpgraph as dgl
from mpgraph.base import DGLError, NID
from mpgraph.dataloading import to_block
from mpgraph.graph_io import FORMAT_VERSION, MAGIC, load_graphs, save_graphs
from mpgraph.heterograph import HeteroBlock, HeteroGraph, batch_hetero


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "graphs.bin")


def _special(dtype, n):
    """``n`` values of ``dtype`` including NaN, signed zero and infinities (bit patterns matter)."""
    base = torch.tensor([float("nan"), -0.0, 0.0, float("inf"), -float("inf"), 1.5, -2.25, 3e-3])
    return base.repeat(n // base.numel() + 1)[:n].to(dtype)


def _bits(t):
    if t.dtype in (torch.float16, torch.bfloat16):
        return t.view(torch.int16)
    if t.dtype == torch.float32:
        return t.view(torch.int32)
    if t.dtype == torch.float64:
        return t.view(torch.int64)
    return t


def _assert_same(a, b):
    assert type(a) is type(b)
    assert a.ntypes == b.ntypes and a.canonical_etypes == b.canonical_etypes and a.idtype == b.idtype
    for cet in a.canonical_etypes:
        for x, y in zip(a.edges(etype=cet), b.edges(etype=cet)):
            assert torch.equal(x, y)
        ea, eb = a.edges[cet].data, b.edges[cet].data
        assert list(ea.keys()) == list(eb.keys())
        for k in ea:
            assert ea[k].dtype == eb[k].dtype and torch.equal(_bits(ea[k]), _bits(eb[k]))
    sides = ["src", "dst"] if a.is_block else [None]
    for side in sides:
        for nt in a.ntypes:
            if side is None:
                fa, fb = a.nodes[nt].data, b.nodes[nt].data
                assert a.num_nodes(nt) == b.num_nodes(nt)
            else:
                fa, fb = getattr(a, side + "nodes")[nt].data, getattr(b, side + "nodes")[nt].data
            assert list(fa.keys()) == list(fb.keys())
            for k in fa:
                assert fa[k].dtype == fb[k].dtype and torch.equal(_bits(fa[k]), _bits(fb[k]))


def _featured(idtype=torch.int64):
    g = typed_case(idtype)
    g.nodes["user"].data["h16"] = _special(torch.float16, 6).reshape(6, 1).repeat(1, 3)
    g.nodes["user"].data["bf"] = _special(torch.bfloat16, 12).reshape(6, 2)
    g.nodes["game"].data["f32"] = _special(torch.float32, 5)
    g.nodes["iso"].data["flag"] = torch.tensor([True, False])
    g.edges["plays"].data["w"] = _special(torch.bfloat16, 8)
    g.edges[("user", "likes", "dev")].data["w"] = _special(torch.float16, 3)
    g.edges["follows"].data["i"] = torch.arange(7, dtype=torch.int32)
    g.edges["sold-by"].data["f64"] = _special(torch.float64, 3)
    return g


@pytest.mark.parametrize("idtype", [torch.int32, torch.int64])
def test_round_trip_bit_exact(path, idtype):
    g = _featured(idtype)
    save_graphs(path, g)
    (back,), labels = load_graphs(path)
    assert labels == {} and isinstance(back, HeteroGraph)
    _assert_same(g, back)
    assert back.num_nodes("iso") == 2 and back.num_edges() == g.num_edges()


def test_mixed_list_batches_blocks_labels_and_selection(path):
    g = _featured()
    homo = dgl.graph(([0, 1], [1, 2]))
    homo.ndata["x"] = _special(torch.bfloat16, 3)
    b1, b2 = typed_case(), typed_case()
    b2.remove_nodes([0], ntype="user")
    batched = batch_hetero([b1, b2])
    block = to_block(dgl.sampling.sample_neighbors(g, {"game": [0, 3]}, -1), {"game": [0, 3]})
    labels = {"y": torch.tensor([1, 0, 2, 1]), "score": _special(torch.float16, 4)}
    save_graphs(path, [homo, g, batched, block], labels)
    graphs, back_labels = load_graphs(path)
    assert isinstance(graphs[0], dgl.Graph) and not isinstance(graphs[0], HeteroGraph)
    assert torch.equal(_bits(graphs[0].ndata["x"]), _bits(homo.ndata["x"]))
    _assert_same(g, graphs[1])
    _assert_same(batched, graphs[2])
    assert graphs[2].batch_size == 2
    for nt in batched.ntypes:
        assert torch.equal(graphs[2].batch_num_nodes(nt), batched.batch_num_nodes(nt))
    for cet in batched.canonical_etypes:
        assert torch.equal(graphs[2].batch_num_edges(cet), batched.batch_num_edges(cet))
    assert [x.num_nodes("user") for x in dgl.unbatch(graphs[2])] == [6, 5]
    assert isinstance(graphs[3], HeteroBlock)
    _assert_same(block, graphs[3])
    assert graphs[3].dstnodes["game"].data[NID].tolist() == [0, 3]
    assert set(back_labels) == {"y", "score"} and torch.equal(back_labels["y"], labels["y"])
    assert torch.equal(_bits(back_labels["score"]), _bits(labels["score"]))
    (only,), _ = load_graphs(path, [2])
    _assert_same(batched, only)


def _header(path):
    with open(path, "rb") as f:
        data = f.read()
    version, head_len = struct.unpack("<IQ", data[8:20])
    return data, version, head_len, json.loads(data[52:52 + head_len])


def test_version_2_only_when_typed(path):
    save_graphs(path, [dgl.graph(([0], [1]))])
    assert _header(path)[1] == 1
    save_graphs(path, [dgl.graph(([0], [1])), typed_case()])
    data, version, head_len, header = _header(path)
    assert version == header["version"] == FORMAT_VERSION == 2
    rec = header["graphs"][1]
    assert rec["kind"] == "hetero" and [t["ntype"] for t in rec["node_types"]] == ["dev", "game", "iso", "user"]
    assert [tuple(r["canonical_etype"]) for r in rec["relations"]] == typed_case().canonical_etypes


def _rewrite(path, data, header, version=None):
    head = json.dumps(header).encode()
    head_len = struct.unpack("<Q", data[12:20])[0]
    version = header["version"] if version is None else version
    with open(path, "wb") as f:
        f.write(MAGIC + struct.pack("<IQ", version, len(head)) + hashlib.sha256(head).digest() + head
                + data[52 + head_len:])


def test_corruption_and_bad_structure_raise(path):
    save_graphs(path, [_featured()])
    data, _, head_len, header = _header(path)
    (rel,) = [r for r in header["graphs"][0]["relations"] if r["canonical_etype"] == ["user", "likes", "dev"]]
    ref = rel["edge_data"]["w"]                                        # fp16
    pos = 52 + head_len + ref["offset"] + 1
    with open(path, "wb") as f:
        f.write(data[:pos] + bytes([data[pos] ^ 0x01]) + data[pos + 1:])
    with pytest.raises(DGLError, match="checksum mismatch"):
        load_graphs(path)
    with open(path, "wb") as f:
        f.write(data[:60] + bytes([data[60] ^ 0x20]) + data[61:])     # inside the header
    with pytest.raises(DGLError, match="header checksum mismatch"):
        load_graphs(path)
    with open(path, "wb") as f:
        f.write(data[:-3])
    with pytest.raises(DGLError, match="truncated"):
        load_graphs(path)
    # self-consistent files (valid checksums) describing impossible graphs
    bad = json.loads(json.dumps(header))
    bad["graphs"][0]["relations"][0]["canonical_etype"] = ["dev", "develops", "nowhere"]
    _rewrite(path, data, bad)
    with pytest.raises(DGLError, match="not a valid mpgraph graph file.*between saved node types"):
        load_graphs(path)
    bad = json.loads(json.dumps(header))
    bad["graphs"][0]["node_types"][1]["num_nodes"] = [2]                 # 'game' edges point past 2 nodes
    _rewrite(path, data, bad)
    with pytest.raises(DGLError, match="not a valid mpgraph graph file"):
        load_graphs(path)
    _rewrite(path, data, dict(header, version=1), version=1)             # typed record in a version-1 file
    with pytest.raises(DGLError, match="known kind for format version 1"):
        load_graphs(path)


def test_failed_save_leaves_file_untouched(path):
    save_graphs(path, [typed_case()])
    with open(path, "rb") as f:
        before = f.read()
    g = typed_case()
    g.nodes["game"].data["bad"] = torch.zeros(5, dtype=torch.uint16)
    with pytest.raises(DGLError, match="storable dtype"):
        save_graphs(path, [g])
    with open(path, "rb") as f:
        assert f.read() == before
    with pytest.raises(DGLError, match="Graph or HeteroGraph"):
        save_graphs(path, [typed_case(), "not a graph"])
