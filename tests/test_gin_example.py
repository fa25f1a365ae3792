"""The GIN graph-classification example (fp32 and amp-bf16) and its generated dataset."""

import importlib.util
import os

import pytest
import torch

from mpgraph.base import DGLError
from mpgraph.batch import batch
from mpgraph.data.graph_classification import FAMILIES, SyntheticGraphClassification

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "gin_graph_classification.py")


def _load_example():
    spec = importlib.util.spec_from_file_location("gin_graph_classification", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gin_example_fp32_and_amp_bf16(capsys):
    ex = _load_example()
    results = ex.main(["--epochs", "4", "--precision", "both", "--seed", "0", "--num-graphs", "96",
                       "--hidden", "16", "--batch-size", "16"])
    table = capsys.readouterr().out
    print(table)                      # shown with pytest -s
    assert [r["precision"] for r in results] == ["fp32", "amp-bf16"]
    assert "precision" in table and "amp-bf16" in table
    fp32, bf16 = results
    for r in results:
        assert r["epochs"] == 4 and 0.0 <= r["test_acc"] <= 1.0
        assert r["train_acc"] > 0.8, r  # 3 balanced classes: chance is 1/3
    assert abs(fp32["test_acc"] - bf16["test_acc"]) <= 0.15, results


def test_example_rejects_unknown_precision():
    ex = _load_example()
    with pytest.raises(SystemExit):
        ex.main(["--precision", "fp8"])


def test_dataset_deterministic_and_balanced():
    a = SyntheticGraphClassification(num_graphs=40, num_classes=4, seed=3)
    b = SyntheticGraphClassification(num_graphs=40, num_classes=4, seed=3)
    c = SyntheticGraphClassification(num_graphs=40, num_classes=4, seed=4)
    assert len(a) == 40 and a.num_classes == a.gclasses == 4
    assert torch.bincount(a.labels).tolist() == [10, 10, 10, 10]
    for (ga, ya), (gb, yb) in zip(a, b):
        assert int(ya) == int(yb)
        assert all(torch.equal(x, y) for x, y in zip(ga.edges(), gb.edges()))
        assert torch.equal(ga.ndata["feat"], gb.ndata["feat"])
    assert any(ga.num_edges() != gc.num_edges() for (ga, _), (gc, _) in zip(a, c))
    g, y = a[-1]
    assert y.dtype == torch.int64 and y.dim() == 0
    assert g.ndata["feat"].shape == (g.num_nodes(), a.dim_nfeats)
    assert torch.equal(g.ndata["feat"].sum(1), torch.ones(g.num_nodes()))   # one-hot degrees
    src, dst = g.edges()
    assert torch.equal(torch.sort(src * 100 + dst).values, torch.sort(dst * 100 + src).values)  # undirected
    assert batch([x for x, _ in a]).batch_size == 40


def test_dataset_families_without_noise():
    ds = SyntheticGraphClassification(num_graphs=8, num_classes=4, noise=0.0, feature="constant", seed=0)
    assert ds.dim_nfeats == 1
    for g, y in ds:
        deg = g.in_degrees()
        family = FAMILIES[int(y)]
        if family == "cycle":
            assert bool((deg == 2).all())
        elif family == "tree":
            assert g.num_edges() == 2 * (g.num_nodes() - 1)
        elif family == "grid":
            assert int(deg.max()) == 4 and int(deg.min()) == 2
        else:
            assert int(deg.max()) == 3 and int(deg.min()) == 2


def test_dataset_errors_and_transform():
    with pytest.raises(DGLError, match="expected num_classes to be an int >= 2 and <= 4, got 5"):
        SyntheticGraphClassification(num_classes=5)
    with pytest.raises(DGLError, match="expected feature 'degree' or 'constant'"):
        SyntheticGraphClassification(feature="random")
    ds = SyntheticGraphClassification(num_graphs=3, transform=lambda g: g.int())
    assert ds[0][0].idtype == torch.int32
    with pytest.raises(IndexError, match=r"expected an int index in \[-3, 3\)"):
        ds[3]
