"""Cora / Citeseer / Pubmed from the real Planetoid files, against DGL's statistics."""

import io
import os
import pickle
import zipfile

import networkx as nx
import numpy as np
import pytest
import torch

import mpgraph.data as D
from mpgraph.base import DGLError
from mpgraph.data.citation_graph import _pickle_load, _planetoid_paths, _read_planetoid

# name: (cls, nodes, edges (DGL's, self-loops included), features, classes, train, val, test, self-loops)
STATS = {
    "cora": (D.CoraGraphDataset, 2708, 10556, 1433, 7, 140, 500, 1000, 0),
    "citeseer": (D.CiteseerGraphDataset, 3327, 9228, 3703, 6, 120, 500, 1000, 124),
}


@pytest.mark.parametrize("name", sorted(STATS))
def test_dgl_statistics(planetoid_dir, name):
    cls, n, e, d, c, ntr, nva, nte, loops = STATS[name]
    dataset = cls(raw_dir=planetoid_dir, verbose=False)
    assert len(dataset) == 1 and dataset.num_classes == c and dataset.num_labels == c
    g = dataset[0]
    assert g.num_nodes() == n and g.num_edges() == e
    feat, label = g.ndata["feat"], g.ndata["label"]
    assert feat.shape == (n, d) and feat.dtype == torch.float32
    assert label.shape == (n,) and label.dtype == torch.int64 and int(label.max()) == c - 1
    for key, size in (("train_mask", ntr), ("val_mask", nva), ("test_mask", nte)):
        assert g.ndata[key].dtype == torch.bool and int(g.ndata[key].sum()) == size
    masks = torch.stack([g.ndata["train_mask"], g.ndata["val_mask"], g.ndata["test_mask"]]).int()
    assert int(masks.sum(0).max()) == 1  # disjoint
    assert g.ndata["train_mask"][:ntr].all()  # train = the first len(y) nodes
    assert g.ndata["val_mask"][ntr:ntr + 500].all()
    # Row-normalised: rows sum to 1, except the all-zero rows (Citeseer's 15 padded test ids).
    rowsum = feat.sum(1)
    zero = rowsum == 0
    assert torch.allclose(rowsum[~zero], torch.ones(int((~zero).sum())), atol=1e-5)
    assert int(zero.sum()) == (15 if name == "citeseer" else 0)
    src, dst = g.edges()
    assert int((src == dst).sum()) == loops
    # Symmetric: the reversed edge set is the same set.
    key = (src * n + dst).sort().values
    rkey = (dst * n + src).sort().values
    assert torch.equal(key, rkey)
    assert torch.unique(key).numel() == e  # no duplicates


@pytest.mark.parametrize("name", ["cora", "citeseer", "pubmed"])
def test_edges_match_networkx_construction(planetoid_dir, name):
    """Same edge set as DGL's ``nx.DiGraph(nx.from_dict_of_lists(graph))``."""
    paths = _planetoid_paths(planetoid_dir, name)
    arrays = _read_planetoid(paths, need_features=False)
    nxg = nx.DiGraph(nx.from_dict_of_lists(_pickle_load(paths["graph"])))
    want = sorted(nxg.edges())
    got = sorted(zip(arrays["src"].tolist(), arrays["dst"].tolist()))
    assert got == want
    assert nxg.number_of_nodes() == arrays["num_nodes"]
    undirected = _read_planetoid(paths, reverse_edge=False, need_features=False)
    assert len(undirected["src"]) == nx.Graph(nxg).number_of_edges()
    assert (undirected["src"] <= undirected["dst"]).all()


def test_labels_and_features_follow_kipf_reordering(planetoid_dir):
    """Test rows are put back in graph order: node test_idx[i] gets row i of tx/ty."""
    paths = _planetoid_paths(planetoid_dir, "cora")
    arrays = _read_planetoid(paths)
    ty = _pickle_load(paths["ty"])
    tx = _pickle_load(paths["tx"]).toarray()
    test_idx = np.loadtxt(paths["test.index"], dtype=np.int64)
    assert np.array_equal(arrays["label"][test_idx], ty.argmax(1))
    rows = tx / tx.sum(1, keepdims=True)
    np.testing.assert_allclose(arrays["feat"][test_idx], rows, rtol=1e-6)
    ally = _pickle_load(paths["ally"])
    assert np.array_equal(arrays["label"][: len(ally)], ally.argmax(1))


def test_pubmed_structure_labels_and_missing_allx(planetoid_dir):
    paths = _planetoid_paths(planetoid_dir, "pubmed")
    arrays = _read_planetoid(paths, need_features=False)  # allx is not needed for these
    assert arrays["num_nodes"] == 19717 and len(arrays["src"]) == 88651
    assert int((arrays["src"] == arrays["dst"]).sum()) == 3
    assert arrays["num_classes"] == 3 and arrays["label"].shape == (19717,)
    assert [int(arrays[k].sum()) for k in ("train_mask", "val_mask", "test_mask")] == [60, 500, 1000]
    with pytest.raises(DGLError) as info:
        D.PubmedGraphDataset(raw_dir=planetoid_dir, verbose=False)
    message = str(info.value)
    assert "missing: ind.pubmed.allx" in message and planetoid_dir in message and "7 of 8" in message
    assert isinstance(info.value, ValueError)


def _link_files(src_dir, dst_dir, prefix, new_prefix=None):
    os.makedirs(dst_dir, exist_ok=True)
    for f in os.listdir(src_dir):
        if f.startswith(f"ind.{prefix}."):
            target = f if new_prefix is None else f.replace(f"ind.{prefix}.", f"ind.{new_prefix}.")
            os.symlink(os.path.join(src_dir, f), os.path.join(dst_dir, target))


def test_dgl_layouts(planetoid_dir, tmp_path):
    # DGL's extracted archive: raw_dir/citeseer/ind.citeseer.*
    _link_files(planetoid_dir, tmp_path / "a" / "citeseer", "citeseer")
    g = D.CiteseerGraphDataset(raw_dir=str(tmp_path / "a"), verbose=False)[0]
    assert (g.num_nodes(), g.num_edges()) == (3327, 9228)
    # DGL's Cora archive: raw_dir/cora_v2/ind.cora_v2.*
    _link_files(planetoid_dir, tmp_path / "b" / "cora_v2", "cora", "cora_v2")
    dataset = D.CoraGraphDataset(raw_dir=str(tmp_path / "b"), verbose=False)
    assert dataset[0].num_edges() == 10556
    assert dataset.raw_files["graph"] == str(tmp_path / "b" / "cora_v2" / "ind.cora_v2.graph")
    assert dataset.name == "cora_v2" and dataset.raw_path == str(tmp_path / "b" / "cora_v2")


def test_reverse_edge_false_transform_and_indexing(planetoid_dir):
    dataset = D.CoraGraphDataset(raw_dir=planetoid_dir, verbose=False, reverse_edge=False,
                                 transform=lambda g: ("transformed", g.num_edges()))
    assert dataset.reverse_edge is False
    assert dataset[0] == ("transformed", 5278)
    with pytest.raises(IndexError, match="expected index 0, got 1"):
        dataset[1]
    assert [item for item in dataset] == [("transformed", 5278)]  # iteration stops at IndexError
    with pytest.raises(DGLError, match="expected name 'cora', 'citeseer' or 'pubmed', got 'corafull'"):
        D.CitationGraphDataset("corafull")


def test_offline_message_names_files_and_directory(tmp_path):
    raw = tmp_path / "empty"
    with pytest.raises(DGLError) as info:
        D.CoraGraphDataset(raw_dir=str(raw), verbose=False)
    message = str(info.value)
    assert "CoraGraphDataset" in message and "download failed" in message
    assert "ind.cora.x" in message and "ind.cora.test.index" in message
    assert str(raw / "cora_v2") in message and "cora_v2.zip" in message
    assert "ConnectionRefused" in message
    assert not any(p.name.endswith(".part") for p in raw.rglob("*"))


def test_download_extract_and_process(planetoid_dir, http_server, tmp_path, monkeypatch):
    """End to end: DGL's cora_v2.zip served locally, downloaded into raw_dir, extracted, processed."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for obj in ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"):
            with open(os.path.join(planetoid_dir, f"ind.cora.{obj}"), "rb") as f:
                z.writestr(f"ind.cora_v2.{obj}", f.read())
    route = http_server.add("/dataset/cora_v2.zip", buf.getvalue())
    monkeypatch.setenv("MPGRAPH_DATA_URL", http_server.url("/"))
    monkeypatch.setenv("MPGRAPH_DOWNLOAD_DIR", str(tmp_path / "root"))
    dataset = D.CoraGraphDataset(verbose=False)
    assert dataset.raw_dir == str(tmp_path / "root")
    assert (tmp_path / "root" / "cora_v2.zip").is_file()
    assert (tmp_path / "root" / "cora_v2" / "ind.cora_v2.graph").is_file()
    assert dataset[0].num_edges() == 10556
    D.CoraGraphDataset(verbose=False)  # second time: files found, no request
    assert route.requests == 1


def test_refuses_foreign_pickles(planetoid_dir, tmp_path):
    _link_files(planetoid_dir, tmp_path, "cora")
    os.remove(tmp_path / "ind.cora.graph")

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    (tmp_path / "ind.cora.graph").write_bytes(pickle.dumps(Evil(), protocol=2))
    with pytest.raises(DGLError, match="not a Planetoid file"):
        D.CoraGraphDataset(raw_dir=str(tmp_path), verbose=False)


def test_corrupt_archive_message(tmp_path):
    (tmp_path / "citeseer.zip").write_bytes(b"not a zip at all")
    with pytest.raises(DGLError, match=r"expected a valid archive at .*citeseer.zip, got a corrupt one"):
        D.CiteseerGraphDataset(raw_dir=str(tmp_path), verbose=False)
