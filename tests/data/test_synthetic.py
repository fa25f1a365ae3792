"""CSBMDataset and RedditLikeDataset: sizes, determinism, homophily, degree skew, learnable signal."""

import time

import numpy as np
import pytest
import torch

import mpgraph.data as D
from mpgraph.base import DGLError
from mpgraph.data.csbm import _generate_csbm
from mpgraph.data.reddit_like import _generate_reddit_like


def _nearest_mean_accuracy(feat, label, train, test):
    """Accuracy of the nearest class mean (fit on train): a floor for what a model can learn."""
    classes = torch.unique(label)
    means = torch.stack([feat[train & (label == c)].mean(0) for c in classes])
    pred = classes[torch.cdist(feat[test], means).argmin(1)]
    return float((pred == label[test]).float().mean())


def _edge_homophily(g):
    src, dst = g.edges()
    label = g.ndata["label"]
    return float((label[src] == label[dst]).float().mean())


def test_csbm_shapes_masks_and_symmetry():
    dataset = D.CSBMDataset(num_nodes=500, num_classes=4, avg_degree=8, homophily=0.7, num_feats=16, seed=3)
    g = dataset[0]
    assert dataset.num_classes == 4 and len(dataset) == 1
    assert g.num_nodes() == 500 and g.num_edges() == 4000  # 500 * 8 directed, exactly
    assert g.ndata["feat"].shape == (500, 16) and g.ndata["feat"].dtype == torch.float32
    assert torch.bincount(g.ndata["label"]).tolist() == [125] * 4
    masks = [g.ndata[k] for k in ("train_mask", "val_mask", "test_mask")]
    assert [int(m.sum()) for m in masks] == [300, 100, 100]
    assert torch.equal(masks[0].int() + masks[1].int() + masks[2].int(), torch.ones(500, dtype=torch.int32))
    src, dst = g.edges()
    assert not bool((src == dst).any())
    key = src * 500 + dst
    assert torch.unique(key).numel() == key.numel()
    assert torch.equal(key.sort().values, (dst * 500 + src).sort().values)


@pytest.mark.parametrize("h", [0.0, 0.3, 0.9, 1.0])
def test_csbm_homophily(h):
    g = D.CSBMDataset(num_nodes=2000, num_classes=5, avg_degree=10, homophily=h, num_feats=4, seed=0)[0]
    assert abs(_edge_homophily(g) - h) < 0.03


def test_csbm_is_deterministic_by_seed():
    a = _generate_csbm(300, 3, 6.0, 0.8, 8, 1.0, (0.6, 0.2, 0.2), seed=7)
    b = _generate_csbm(300, 3, 6.0, 0.8, 8, 1.0, (0.6, 0.2, 0.2), seed=7)
    c = _generate_csbm(300, 3, 6.0, 0.8, 8, 1.0, (0.6, 0.2, 0.2), seed=8)
    for key in ("src", "dst", "feat", "label", "train_mask"):
        assert np.array_equal(a[key], b[key])
    assert not np.array_equal(a["src"], c["src"]) and not np.array_equal(a["feat"], c["feat"])


def test_csbm_snr_controls_feature_signal():
    accs = []
    for snr in (0.0, 3.0):
        g = D.CSBMDataset(num_nodes=1000, num_classes=4, num_feats=32, snr=snr, seed=1)[0]
        accs.append(_nearest_mean_accuracy(g.ndata["feat"], g.ndata["label"], g.ndata["train_mask"],
                                           g.ndata["test_mask"]))
    assert accs[0] < 0.4 and accs[1] > 0.9


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_nodes=1), "num_nodes to be an int >= 2"),
        (dict(num_classes=1), "num_classes to be an int >= 2"),
        (dict(num_nodes=10, avg_degree=12), "avg_degree to be a number >= 0 and <= 9"),
        (dict(homophily=1.5), "homophily"),
        (dict(num_feats=0), "num_feats"),
        (dict(split=(0.5, 0.5, 0.5)), "split of 3 non-negative fractions"),
        (dict(num_nodes=True), "num_nodes"),
    ],
)
def test_csbm_errors(kwargs, match):
    with pytest.raises(DGLError, match=match):
        D.CSBMDataset(**kwargs)


def test_reddit_like_small_scale_builds_in_seconds():
    t0 = time.perf_counter()
    dataset = D.RedditLikeDataset(scale=0.05)
    elapsed = time.perf_counter() - t0
    g = dataset[0]
    assert elapsed < 20, f"scale=0.05 took {elapsed:.1f}s"
    n = round(232965 * 0.05)
    assert g.num_nodes() == n and dataset.num_classes == 41
    deg = g.in_degrees().double()
    assert abs(float(deg.mean()) - 114615892 / 232965) / 492 < 0.01  # mean degree ~492
    assert float(deg.max()) > 4 * float(deg.median())  # skewed
    assert g.ndata["feat"].shape == (n, 602) and g.ndata["feat"].dtype == torch.float32
    assert torch.unique(g.ndata["label"]).numel() == 41
    sizes = [int(g.ndata[k].sum()) for k in ("train_mask", "val_mask", "test_mask")]
    assert sum(sizes) == n
    np.testing.assert_allclose(np.array(sizes) / n, np.array([153431, 23831, 55703]) / 232965, atol=1e-3)
    src, dst = g.edges()
    assert not bool((src == dst).any())
    assert _edge_homophily(g) > 0.2  # far above the ~0.04 of random labels


def test_reddit_like_signal_is_learnable_and_deterministic():
    a = _generate_reddit_like(0.01, 0.75, 3.0, 2.0, seed=0)
    b = _generate_reddit_like(0.01, 0.75, 3.0, 2.0, seed=0)
    for key in ("src", "dst", "feat", "label", "test_mask"):
        assert np.array_equal(a[key], b[key])
    feat, label = torch.from_numpy(a["feat"]), torch.from_numpy(a["label"])
    train, test = torch.from_numpy(a["train_mask"]), torch.from_numpy(a["test_mask"])
    acc = _nearest_mean_accuracy(feat, label, train, test)
    assert acc > 0.3  # chance is below 1/14 (largest class share)
    # Structure carries signal too: majority label of the neighbours beats chance by far.
    src, dst = torch.from_numpy(a["src"]), torch.from_numpy(a["dst"])
    counts = torch.zeros(a["num_nodes"], 41).index_put_((dst, label[src]), torch.ones(len(src)), accumulate=True)
    assert float((counts.argmax(1) == label).float().mean()) > 0.3


def test_reddit_like_errors():
    with pytest.raises(DGLError, match="scale to be a number > 0"):
        D.RedditLikeDataset(scale=0)
    with pytest.raises(DGLError, match=r"round\(232965 \* scale\)"):
        D.RedditLikeDataset(scale=1e-5)
    with pytest.raises(DGLError, match="tail"):
        D.RedditLikeDataset(scale=0.01, tail=1.0)
