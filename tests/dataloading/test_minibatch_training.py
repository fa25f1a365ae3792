"""Mini-batch training (mpgraph.cli.minibatch): figures, precision modes, errors, and accuracy on Cora."""

import argparse
import math
import pathlib
import statistics

import pytest
import torch

import mpgraph as dgl
from mpgraph import DGLError
from mpgraph.cli.minibatch import BlockSAGE, train_minibatch
from mpgraph.cli.models import DEFAULTS
from mpgraph.dataloading import NeighborSampler

PLANETOID = pathlib.Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "planetoid"
KEYS = {"losses", "val_accs", "epoch_times", "median_epoch_s", "test_acc", "best_val_acc", "best_epoch",
        "peak_mem_bytes", "mem_method", "edges_per_s", "final_loss", "parameters", "epochs_run"}


def _args(model, precision, epochs, fanouts=(5, 5), batch_size=64, dataset="synthetic"):
    return argparse.Namespace(model=model, dataset=dataset, precision=precision, epochs=epochs, split=0,
                              fanouts=list(fanouts), batch_size=batch_size, patience=None)


def _settings(model, **over):
    s = dict(DEFAULTS[model])
    s["heads"] = [int(h) for h in s["heads"].split(",")] if s["heads"] else None
    s.update(over)
    return s


def _toy(n=300, classes=3, seed=0):
    """Homophilous graph with self-loops and informative features."""
    gen = torch.Generator().manual_seed(seed)
    label = torch.randint(0, classes, (n,), generator=gen)
    src = torch.randint(0, n, (n * 8,), generator=gen)
    dst = torch.randint(0, n, (n * 8,), generator=gen)
    same = label[src] == label[dst]
    src, dst = torch.cat([src[same], torch.arange(n)]), torch.cat([dst[same], torch.arange(n)])
    g = dgl.graph((src, dst), num_nodes=n)
    g.ndata["feat"] = torch.nn.functional.one_hot(label, classes).float() + torch.randn(n, classes, generator=gen)
    g.ndata["label"] = label
    split = torch.arange(n) % 10
    g.ndata["train_mask"], g.ndata["val_mask"], g.ndata["test_mask"] = split < 6, split == 6, split > 6
    return g, classes


@pytest.mark.parametrize("model, precision", [("sage", "fp32"), ("sage", "bf16"), ("sage", "amp-fp16"),
                                              ("gat", "amp-bf16"), ("gat", "fp16")])
def test_train_minibatch_figures(model, precision):
    g, classes = _toy()
    out = train_minibatch(g, classes, _args(model, precision, 3), _settings(model, hidden=8),
                          torch.device("cpu"), 0, progress=False)
    assert set(out) == KEYS
    assert len(out["losses"]) == len(out["val_accs"]) == len(out["epoch_times"]) == out["epochs_run"] == 3
    assert all(math.isfinite(x) for x in out["losses"]) and out["edges_per_s"] > 0
    assert out["parameters"] > 0 and 0 <= out["test_acc"] <= 1
    assert set(g.ndata.keys()) == {"feat", "label", "train_mask", "val_mask", "test_mask"}


def test_train_minibatch_learns_and_is_reproducible():
    g, classes = _toy()
    args, settings = _args("sage", "fp32", 8), _settings("sage", hidden=16)
    a = train_minibatch(g, classes, args, settings, torch.device("cpu"), 3, progress=False)
    b = train_minibatch(g, classes, args, settings, torch.device("cpu"), 3, progress=False)
    assert a["losses"] == b["losses"] and a["test_acc"] == b["test_acc"]
    assert a["losses"][-1] < a["losses"][0] and a["best_val_acc"] > 0.6


@pytest.mark.parametrize("fanouts, message", [
    ([5, 5, 5], "expected one fanout per layer (2 layers), got 3 fanouts [5, 5, 5]"),
    ([5], "expected one fanout per layer (2 layers), got 1 fanouts [5]"),
    ([5, 0], "expected fanouts >= 1 or -1 (every neighbour), got [5, 0]"),
])
def test_fanouts_must_match_layers(fanouts, message):
    g, classes = _toy(60)
    with pytest.raises(DGLError) as err:
        train_minibatch(g, classes, _args("sage", "fp32", 1, fanouts), _settings("sage"), torch.device("cpu"), 0,
                        progress=False)
    assert message in str(err.value)


def test_model_rejects_wrong_number_of_blocks():
    g, classes = _toy(60)
    model = BlockSAGE(3, 4, classes, 2, 0.0)
    _, _, blocks = NeighborSampler([2, 2, 2]).sample(g, torch.arange(4))
    with pytest.raises(DGLError, match=r"expected one block per layer \(2\), got 3 blocks"):
        model(blocks, blocks[0].srcdata["feat"])
    with pytest.raises(DGLError, match="expected a mini-batch model in"):
        train_minibatch(g, classes, _args("gcn", "fp32", 1), _settings("gcn"), torch.device("cpu"), 0,
                        progress=False)


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["fp32", "amp-bf16"])
def test_cora_minibatch_matches_full_graph(precision):
    """Mini-batch GraphSAGE (fanouts 10,10, batch 32) is within 1.5 points of full-graph training on Cora."""
    if not (PLANETOID / "ind.cora.graph").exists():
        pytest.skip(f"Cora files not found in {PLANETOID}")
    from mpgraph.cli.train import train_once
    from mpgraph.data import CoraGraphDataset
    g = CoraGraphDataset(raw_dir=str(PLANETOID), verbose=False)[0]
    args, settings = _args("sage", precision, 50, (10, 10), 32, "cora"), _settings("sage")
    full, mini = [], []
    for seed in (0, 1):
        full.append(train_once(g, 7, args, settings, torch.device("cpu"), seed, progress=False)["test_acc"])
        mini.append(train_minibatch(g, 7, args, settings, torch.device("cpu"), seed, progress=False)["test_acc"])
    print(f"cora sage {precision}: full-graph {full}, mini-batch {mini}")
    assert statistics.mean(mini) >= statistics.mean(full) - 0.015


def test_fanouts_argument_type():
    import argparse as ap

    from mpgraph.cli.minibatch import fanouts_arg
    assert fanouts_arg("25,10") == [25, 10] and fanouts_arg("-1") == [-1]
    for bad in ("25,x", "0,5", "-2"):
        with pytest.raises(ap.ArgumentTypeError, match="expected"):
            fanouts_arg(bad)
