"""GraphSAGE node classification with neighbour sampling (DGL's ``graphsage/node_classification.py``).

Each step trains on a mini-batch of seed nodes: ``NeighborSampler`` samples
``--fanouts`` in-neighbours per node and layer, and the ``DataLoader`` yields
``(input_nodes, output_nodes, blocks)`` with the input features gathered into
``blocks[0].srcdata['feat']`` and the labels into ``blocks[-1].dstdata['label']``,
in the feature store's dtype. Validation samples too; the test accuracy comes
from layer-wise full-neighbour inference (every node, one layer at a time).

Precisions: ``fp32``; ``bf16`` (a bfloat16 feature store and model: half the
bytes gathered per batch); ``amp-bf16`` (float32 store and model under
``torch.autocast``).

Usage::

    python examples/sage_minibatch.py                                  # generated Reddit-like graph, ~20 s on 1 core
    python examples/sage_minibatch.py --dataset cora --data-dir ../shared/data/planetoid --fanouts 10,10
    python examples/sage_minibatch.py --precision amp-bf16 --num-workers 2
"""

import argparse
import contextlib
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import mpgraph as dgl
from mpgraph.data import CoraGraphDataset, RedditLikeDataset
from mpgraph.dataloading import DataLoader, MultiLayerFullNeighborSampler, NeighborSampler
from mpgraph.nn import SAGEConv


class SAGE(nn.Module):
    """Mean-aggregator GraphSAGE; ``forward`` takes one block per layer."""

    def __init__(self, in_size, hid_size, out_size, num_layers=2, dropout=0.5):
        super().__init__()
        dims = [in_size] + [hid_size] * (num_layers - 1) + [out_size]
        self.layers = nn.ModuleList(SAGEConv(a, b, "mean") for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = nn.Dropout(dropout)
        self.hid_size, self.out_size = hid_size, out_size

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(block, h)
            if i != len(self.layers) - 1:
                h = self.dropout(F.relu(h))
        return h

    @torch.no_grad()
    def inference(self, g, feat, batch_size, ctx):
        """Every node's output, one layer at a time over full-neighbour one-layer blocks."""
        loader = DataLoader(g, torch.arange(g.num_nodes()), MultiLayerFullNeighborSampler(1, prefetch_node_feats=[],
                            prefetch_labels=[], prefetch_edge_feats=[]), batch_size=batch_size)
        h = feat
        for i, layer in enumerate(self.layers):
            out = torch.empty(g.num_nodes(), self.out_size if i == len(self.layers) - 1 else self.hid_size,
                              dtype=feat.dtype)
            for input_nodes, output_nodes, blocks in loader:
                with ctx():
                    y = layer(blocks[0], h[input_nodes.long()])
                    if i != len(self.layers) - 1:
                        y = F.relu(y)
                out[output_nodes.long()] = y.to(out.dtype)
            h = out
        return h


def load(args):
    if args.dataset == "cora":
        ds = CoraGraphDataset(raw_dir=args.data_dir, verbose=False)
    else:
        ds = RedditLikeDataset(scale=args.scale)
    return ds[0], ds.num_classes


def main(argv=None):
    """Train and evaluate; returns the test accuracy."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", choices=("reddit-like", "cora"), default="reddit-like")
    p.add_argument("--data-dir", default=None, help="directory with the Planetoid files (for --dataset cora)")
    p.add_argument("--scale", type=float, default=0.02, help="reddit-like size (fraction of Reddit; default 0.02)")
    p.add_argument("--fanouts", default="10,5", help="neighbours sampled per layer, input layer first")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--precision", choices=("fp32", "bf16", "amp-bf16"), default="fp32")
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    dgl.seed(args.seed)

    g, num_classes = load(args)
    if args.precision == "bf16":
        g.ndata["feat"] = g.ndata["feat"].to(torch.bfloat16)          # the feature store: half the bytes
    train_ids = g.ndata["train_mask"].nonzero().squeeze(1)
    val_ids = g.ndata["val_mask"].nonzero().squeeze(1)
    test_mask = g.ndata["test_mask"]
    print(f"{args.dataset}: {g.num_nodes()} nodes, {g.num_edges()} edges, {train_ids.numel()} training nodes; "
          f"fanouts {fanouts}, batch {args.batch_size}, {args.precision}")

    sampler = NeighborSampler(fanouts, prefetch_node_feats=["feat"], prefetch_labels=["label"],
                              prefetch_edge_feats=[])
    train_loader = DataLoader(g, train_ids, sampler, batch_size=args.batch_size, shuffle=True,
                              num_workers=args.num_workers)
    val_loader = DataLoader(g, val_ids, sampler, batch_size=args.batch_size)

    model = SAGE(g.ndata["feat"].shape[1], args.hidden, num_classes, len(fanouts))
    if args.precision == "bf16":
        model = model.to(torch.bfloat16)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)

    def ctx():
        if args.precision == "amp-bf16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    for epoch in range(args.epochs):
        model.train()
        t0 = time.perf_counter()
        total, steps = 0.0, 0
        for _, _, blocks in train_loader:
            with ctx():
                logits = model(blocks, blocks[0].srcdata["feat"])
            loss = F.cross_entropy(logits.float(), blocks[-1].dstdata["label"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, steps = total + float(loss.detach()), steps + 1
        dt = time.perf_counter() - t0
        model.eval()
        correct = count = 0
        with torch.no_grad():
            for _, output_nodes, blocks in val_loader:
                with ctx():
                    pred = model(blocks, blocks[0].srcdata["feat"]).argmax(1)
                correct += int((pred == blocks[-1].dstdata["label"]).sum())
                count += output_nodes.numel()
        print(f"epoch {epoch:3d}  loss {total / max(steps, 1):.4f}  val acc {correct / max(count, 1):.4f}  "
              f"time {dt:.2f} s ({steps / dt:.1f} batches/s)")

    model.eval()
    pred = model.inference(g, g.ndata["feat"], 4 * args.batch_size, ctx).float().argmax(1)
    acc = float((pred[test_mask] == g.ndata["label"][test_mask]).float().mean())
    print(f"test accuracy (layer-wise full-neighbour inference): {acc:.4f}")
    return acc


if __name__ == "__main__":
    main()
