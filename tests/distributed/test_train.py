"""2 gloo ranks under torchrun train GraphSAGE on a partitioned CSBM graph: same parameters, single-process accuracy."""

import json

import torch
import torch.nn.functional as F

import mpgraph as dgl
from mpgraph.data import CSBMDataset
from mpgraph.dataloading import DataLoader, NeighborSampler
from mpgraph.distributed import partition_graph
from mpgraph.distributed.train import DistSAGE

EPOCHS, BATCH_PER_RANK, FANOUTS, LR, HIDDEN = 25, 128, [10, 10], 0.02, 32


def csbm():
    """Easy enough that both runs sit on a stable plateau (test accuracy spread ~0.3 points over seeds)."""
    ds = CSBMDataset(num_nodes=2000, num_classes=4, avg_degree=8, homophily=0.8, num_feats=32, snr=1.5,
                     split=(0.5, 0.1, 0.4), seed=0)
    return ds[0], ds.num_classes


def single_process(g, num_classes, seed=0):
    """The same model and settings in one process: the global batch (2 x 128) from the whole graph."""
    dgl.seed(seed)
    model = DistSAGE(g.ndata["feat"].shape[1], HIDDEN, num_classes, 2, 0.5)
    opt = torch.optim.Adam(model.parameters(), lr=LR, weight_decay=5e-4)
    train = g.ndata["train_mask"].nonzero().squeeze(1)
    sampler = NeighborSampler(FANOUTS, prefetch_node_feats=["feat"], prefetch_labels=["label"])
    loader = DataLoader(g, train, sampler, batch_size=2 * BATCH_PER_RANK, shuffle=True)
    for _ in range(EPOCHS):
        model.train()
        for _, _, blocks in loader:
            loss = F.cross_entropy(model(blocks, blocks[0].srcdata["feat"]), blocks[-1].dstdata["label"])
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        pred = model(g, g.ndata["feat"]).argmax(1)
    m = g.ndata["test_mask"]
    return float((pred[m] == g.ndata["label"][m]).float().mean())


def test_two_ranks_match_single_process(tmp_path, launch):
    g, num_classes = csbm()
    partition_graph(g, "csbm2k", 2, tmp_path / "parts")
    out = tmp_path / "result.json"
    job = launch.torchrun(["-m", "mpgraph.distributed.train", "--graph-name", "csbm2k", "--part-dir",
                           tmp_path / "parts", "--epochs", EPOCHS, "--batch-size", BATCH_PER_RANK, "--fanouts",
                           ",".join(map(str, FANOUTS)), "--lr", LR, "--hidden", HIDDEN, "--json", out,
                           "--dist-timeout", 60, "--quiet"], tmp_path)
    results = job.wait(timeout=150)
    assert results[0][0] == 0, job.outputs()
    s = json.loads(out.read_text())
    assert s["world_size"] == 2 and s["backend"] == "gloo" and s["epochs_run"] == list(range(EPOCHS))
    assert s["params_identical"] and len(s["param_sha256"]) == 2
    assert s["num_test"] == int(g.ndata["test_mask"].sum())                    # every test node, once
    assert s["median_bytes_sent_per_epoch"] > 0
    assert s["losses"][-1] < s["losses"][0] / 3
    reference = single_process(g, num_classes)
    print(f"test accuracy: 2 ranks {100 * s['test_acc']:.2f} %, single process {100 * reference:.2f} %")
    assert reference > 0.9 and s["test_acc"] > 0.9
    assert abs(s["test_acc"] - reference) <= 0.01
