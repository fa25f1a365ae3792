"""RedditDataset on a tiny file written in DGL's exact format."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import mpgraph.data as D
from mpgraph.base import DGLError


def _write_reddit(directory, n=30, d=6, self_loop=False, seed=0):
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, n, 120)
    cols = rng.integers(0, n, 120)
    keep = rows != cols
    rows, cols = rows[keep], cols[keep]
    if self_loop:
        rows, cols = np.concatenate([rows, np.arange(n)]), np.concatenate([cols, np.arange(n)])
    adj = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n)).tocsr().tocoo()  # merge duplicates
    directory.mkdir(parents=True, exist_ok=True)
    sp.save_npz(directory / f"reddit{'_self_loop' if self_loop else ''}_graph.npz", adj)
    feature = rng.standard_normal((n, d))  # float64 on disk, as DGL's file
    label = rng.integers(0, 41, n)
    node_types = rng.integers(1, 4, n)
    np.savez(directory / "reddit_data.npz", feature=feature, label=label, node_types=node_types)
    return adj, feature, label, node_types


@pytest.mark.parametrize("self_loop", [False, True])
def test_dgl_format(tmp_path, self_loop):
    name = "reddit_self_loop" if self_loop else "reddit"
    adj, feature, label, node_types = _write_reddit(tmp_path / name, self_loop=self_loop)
    dataset = D.RedditDataset(self_loop=self_loop, raw_dir=str(tmp_path))
    g = dataset[0]
    assert dataset.num_classes == 41 and dataset.name == name
    assert g.num_nodes() == 30 and g.num_edges() == adj.nnz
    assert g.ndata["feat"].dtype == torch.float32 and g.ndata["label"].dtype == torch.int64
    assert [int(g.ndata[k].sum()) for k in ("train_mask", "val_mask", "test_mask")] == [
        int((node_types == t).sum()) for t in (1, 2, 3)]
    # Nodes are relabelled (RCMK); recover the relabelling from the features and check everything follows it.
    feat = g.ndata["feat"].numpy()
    perm = np.array([int(np.argmin(np.abs(feature - row).sum(1))) for row in feat])  # new i = old perm[i]
    assert sorted(perm.tolist()) == list(range(30))
    np.testing.assert_allclose(feat, feature[perm].astype(np.float32))
    assert np.array_equal(g.ndata["label"].numpy(), label[perm])
    assert np.array_equal(g.ndata["train_mask"].numpy(), node_types[perm] == 1)
    src, dst = (t.numpy() for t in g.edges())
    assert set(zip(perm[src].tolist(), perm[dst].tolist())) == set(zip(adj.row.tolist(), adj.col.tolist()))
    assert int((src == dst).sum()) == (30 if self_loop else 0)


def test_flat_layout_and_mismatched_files(tmp_path):
    _write_reddit(tmp_path, n=30)
    assert D.RedditDataset(raw_dir=str(tmp_path))[0].num_nodes() == 30
    _write_reddit(tmp_path / "bad" / "reddit", n=30)
    np.savez(tmp_path / "bad" / "reddit" / "reddit_data.npz", feature=np.zeros((5, 2)), label=np.zeros(5),
             node_types=np.ones(5))
    with pytest.raises(DGLError, match="expected feature/label/node_types with 30 rows"):
        D.RedditDataset(raw_dir=str(tmp_path / "bad"))


def test_missing_files_message(tmp_path):
    (tmp_path / "reddit").mkdir()
    sp.save_npz(tmp_path / "reddit" / "reddit_graph.npz", sp.coo_matrix((3, 3)))
    with pytest.raises(DGLError, match=r"got 1 of 2; missing: reddit_data.npz"):
        D.RedditDataset(raw_dir=str(tmp_path))
