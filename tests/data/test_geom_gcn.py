"""Cornell / Texas / Wisconsin / Actor from the real Geom-GCN files, against DGL's statistics."""

import os

import numpy as np
import pytest
import torch

import mpgraph.data as D
from mpgraph.base import DGLError

# cls: (nodes, edges (file lines), features, classes, class counts, split-0 train/val/test)
STATS = {
    D.CornellDataset: (183, 298, 1703, 5, [33, 1, 18, 101, 30], (87, 59, 37)),
    D.TexasDataset: (183, 325, 1703, 5, [33, 1, 18, 101, 30], (87, 59, 37)),
    D.WisconsinDataset: (251, 515, 1703, 5, [10, 70, 118, 32, 21], (120, 80, 51)),
    D.ActorDataset: (7600, 33391, 932, 5, [853, 1337, 1630, 1815, 1965], (3648, 2432, 1520)),
}


@pytest.mark.parametrize("cls", list(STATS), ids=lambda c: c.__name__)
def test_dgl_statistics(geom_gcn_dir, cls):
    n, e, d, c, counts, split0 = STATS[cls]
    dataset = cls(raw_dir=geom_gcn_dir, verbose=False)
    g = dataset[0]
    assert dataset.num_classes == c and len(dataset) == 1
    assert g.num_nodes() == n and g.num_edges() == e
    assert g.ndata["feat"].shape == (n, d) and g.ndata["feat"].dtype == torch.float32
    assert torch.bincount(g.ndata["label"]).tolist() == counts and g.ndata["label"].dtype == torch.int64
    for key in ("train_mask", "val_mask", "test_mask"):
        assert g.ndata[key].shape == (n, 10) and g.ndata[key].dtype == torch.bool
    assert tuple(int(g.ndata[k][:, 0].sum()) for k in ("train_mask", "val_mask", "test_mask")) == split0
    # Each split is a partition of (a subset of) the nodes, and the 10 splits differ.
    total = g.ndata["train_mask"].int() + g.ndata["val_mask"].int() + g.ndata["test_mask"].int()
    assert int(total.max()) == 1
    assert not torch.equal(g.ndata["train_mask"][:, 0], g.ndata["train_mask"][:, 1])
    assert set(torch.unique(g.ndata["feat"]).tolist()) <= {0.0, 1.0}


def test_edge_direction_and_feature_rows(geom_gcn_dir):
    """Line ``a<TAB>b`` is the edge b -> a (as DGL reads it); features follow node IDs."""
    g = D.ActorDataset(raw_dir=geom_gcn_dir, verbose=False)[0]
    with open(os.path.join(geom_gcn_dir, "new_data", "film", "out1_graph_edges.txt")) as f:
        a, b = map(int, f.read().split("\n")[1].split("\t"))
    src, dst = g.edges()
    assert (int(src[0]), int(dst[0])) == (b, a)
    with open(os.path.join(geom_gcn_dir, "new_data", "film", "out1_node_feature_label.txt")) as f:
        node, feats, label = f.read().split("\n")[1].split("\t")
    row = g.ndata["feat"][int(node)]
    assert sorted(torch.nonzero(row).flatten().tolist()) == sorted(int(x) for x in feats.split(","))
    assert int(g.ndata["label"][int(node)]) == int(label)
    split = np.load(os.path.join(geom_gcn_dir, "splits", "film_split_0.6_0.2_3.npz"))
    assert np.array_equal(g.ndata["val_mask"][:, 3].numpy(), split["val_mask"].astype(bool))


def test_dgl_archive_layout_and_partial_files(geom_gcn_dir, tmp_path):
    # DGL's archive layout: raw_dir/cornell/{out1_*.txt, cornell_split_0.6_0.2_<i>.npz}
    dgl_dir = tmp_path / "cornell"
    dgl_dir.mkdir()
    for f in ("out1_graph_edges.txt", "out1_node_feature_label.txt"):
        os.symlink(os.path.join(geom_gcn_dir, "new_data", "cornell", f), dgl_dir / f)
    for i in range(10):
        name = f"cornell_split_0.6_0.2_{i}.npz"
        os.symlink(os.path.join(geom_gcn_dir, "splits", name), dgl_dir / name)
    g = D.CornellDataset(raw_dir=str(tmp_path), verbose=False)[0]
    assert (g.num_nodes(), g.num_edges()) == (183, 298)
    os.remove(dgl_dir / "cornell_split_0.6_0.2_7.npz")
    with pytest.raises(DGLError, match=r"got 11 of 12; missing: cornell_split_0.6_0.2_7.npz"):
        D.CornellDataset(raw_dir=str(tmp_path), verbose=False)


def test_chameleon_format_on_a_tiny_file(tmp_path):
    """Chameleon/Squirrel (absent from shared data) share the dense WebKB format."""
    d = tmp_path / "chameleon"
    d.mkdir()
    (d / "out1_node_feature_label.txt").write_text("node_id\tfeature\tlabel\n0\t1,0,1\t2\n1\t0,0,1\t0\n2\t1,1,1\t1\n")
    (d / "out1_graph_edges.txt").write_text("node_id\tnode_id\n0\t1\n2\t1\n")
    rng = np.random.default_rng(0)
    for i in range(10):
        m = rng.permutation(3)
        np.savez(d / f"chameleon_split_0.6_0.2_{i}.npz", train_mask=m == 0, val_mask=m == 1, test_mask=m == 2)
    dataset = D.ChameleonDataset(raw_dir=str(tmp_path), verbose=False)
    g = dataset[0]
    assert dataset.num_classes == 3
    assert g.ndata["feat"].tolist() == [[1, 0, 1], [0, 0, 1], [1, 1, 1]]
    assert [tuple(map(int, e)) for e in zip(*g.edges())] == [(1, 0), (1, 2)]
