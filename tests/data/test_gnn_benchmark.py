"""The gnn-benchmark SparseGraph npz loader (CoraFull / Amazon / Coauthor), on cora.npz and citeseer.npz."""

import os

import numpy as np
import pytest
import torch

import mpgraph.data as D
from mpgraph.base import DGLError
from mpgraph.data.gnn_benchmark import _read_sparse_graph_npz


def _stand_in(tmp_path, source, rel):
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(source, path)
    return str(tmp_path)


@pytest.mark.parametrize(
    "cls, rel",
    [
        (D.CoraFullDataset, "cora_full/cora_full.npz"),  # DGL's archive layout
        (D.CoauthorCSDataset, "ms_academic_cs.npz"),  # upstream name, flat
        (D.AmazonCoBuyComputerDataset, "npz/amazon_electronics_computers.npz"),  # upstream repo layout
        (D.AmazonCoBuyPhotoDataset, "amazon_co_buy_photo.npz"),
        (D.CoauthorPhysicsDataset, "coauthor_physics/ms_academic_phy.npz"),
    ],
    ids=lambda x: x.__name__ if isinstance(x, type) else x,
)
def test_layouts_with_cora_npz(gnn_benchmark_dir, tmp_path, cls, rel):
    raw = _stand_in(tmp_path, os.path.join(gnn_benchmark_dir, "cora.npz"), rel)
    dataset = cls(raw_dir=raw)
    g = dataset[0]
    assert (g.num_nodes(), g.num_edges()) == (2708, 10556)
    assert g.ndata["feat"].shape == (2708, 1433) and g.ndata["feat"].dtype == torch.float32
    assert g.ndata["label"].dtype == torch.int64 and dataset.num_classes == 7
    assert sorted(torch.bincount(g.ndata["label"]).tolist()) == sorted([298, 418, 818, 426, 217, 180, 351])


def test_citeseer_npz_keeps_self_loops_once(gnn_benchmark_dir):
    a = _read_sparse_graph_npz(os.path.join(gnn_benchmark_dir, "citeseer.npz"))
    assert a["num_nodes"] == 3312 and len(a["src"]) == 9196  # 9072 + 124 self-loops
    assert int((a["src"] == a["dst"]).sum()) == 124
    assert a["feat"].shape == (3312, 3703)


def test_rcmk_reorder_is_a_consistent_relabelling(gnn_benchmark_dir):
    path = os.path.join(gnn_benchmark_dir, "cora.npz")
    plain = _read_sparse_graph_npz(path, reorder=False)
    ordered = _read_sparse_graph_npz(path)
    n = plain["num_nodes"]
    from mpgraph.data._process import rcmk_order

    perm = rcmk_order(plain["src"], plain["dst"], n)  # new i = old perm[i]
    assert np.array_equal(ordered["feat"], plain["feat"][perm])
    assert np.array_equal(ordered["label"], plain["label"][perm])
    old_edges = set(zip(perm[ordered["src"]].tolist(), perm[ordered["dst"]].tolist()))
    assert old_edges == set(zip(plain["src"].tolist(), plain["dst"].tolist()))
    assert np.all(np.diff(ordered["dst"]) >= 0)  # sorted by destination
    # RCMK reduces the bandwidth.
    assert np.abs(ordered["src"] - ordered["dst"]).max() < np.abs(plain["src"] - plain["dst"]).max()


def test_bad_npz_and_name(tmp_path):
    np.savez(tmp_path / "cora_full.npz", something=np.zeros(3))
    with pytest.raises(DGLError, match="expected a SparseGraph npz"):
        D.CoraFullDataset(raw_dir=str(tmp_path))
    with pytest.raises(DGLError, match="expected one of"):
        D.GNNBenchmarkDataset("cora")
