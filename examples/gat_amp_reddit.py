"""The guide's GAT-on-Reddit mixed-precision program, ported by changing imports.

DGL's user guide (chapter 8) trains a 3-layer GAT on Reddit with ``torch.amp.autocast``.
This is the same program with ``import mpgraph as dgl`` and friends; the only additions are
command-line flags (device, dtype, data directory, epochs) and ``reddit-like``, a generated
graph of Reddit's shape, for machines where Reddit cannot be downloaded. The guide's
deprecated ``torch.cuda.amp.GradScaler`` is ``torch.amp.GradScaler`` here.

    python examples/gat_amp_reddit.py --dataset reddit-like --scale 0.01 --epochs 20 --amp bf16
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.amp import GradScaler, autocast

import mpgraph as dgl  # noqa: F401  (the guide imports dgl)
from mpgraph.data import RedditDataset, RedditLikeDataset
from mpgraph.nn import GATConv
from mpgraph.transforms import AddSelfLoop


def forward(device_type, g, feat, label, mask, model, amp_dtype):
    amp_enabled = amp_dtype in (torch.float16, torch.bfloat16)
    with autocast(device_type, enabled=amp_enabled, dtype=amp_dtype):
        logit = model(g, feat)
    loss = F.cross_entropy(logit[mask].float(), label[mask])
    return loss


def backward(scaler, loss, optimizer):
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()


class GAT(nn.Module):
    def __init__(self, in_feats, n_hidden, n_classes, heads):
        super().__init__()
        self.layers = nn.ModuleList()
        self.layers.append(GATConv(in_feats, n_hidden, heads[0], activation=F.elu))
        self.layers.append(GATConv(n_hidden * heads[0], n_hidden, heads[1], activation=F.elu))
        self.layers.append(GATConv(n_hidden * heads[1], n_classes, heads[2], activation=F.elu))

    def forward(self, g, h):
        for i, layer in enumerate(self.layers):
            h = layer(g, h)
            if i != len(self.layers) - 1:
                h = h.flatten(1)
            else:
                h = h.mean(1)
        return h


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", choices=("reddit", "reddit-like"), default="reddit-like")
    p.add_argument("--data-dir", default=None, help="directory with reddit_graph.npz / reddit_data.npz")
    p.add_argument("--scale", type=float, default=0.01, help="reddit-like size relative to Reddit")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--amp", choices=("none", "bf16", "fp16"), default="bf16")
    p.add_argument("--heads", default="1,1,1")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--epochs", type=int, default=100)
    args = p.parse_args(argv)
    amp_dtype = {"none": None, "bf16": torch.bfloat16, "fp16": torch.float16}[args.amp]

    # Data loading
    transform = AddSelfLoop()
    if args.dataset == "reddit":
        data = RedditDataset(raw_dir=args.data_dir, transform=transform)
    else:
        data = RedditLikeDataset(scale=args.scale, transform=transform)
    device_type = torch.device(args.device).type
    dev = torch.device(args.device)
    g = data[0]
    g = g.int().to(dev)
    train_mask = g.ndata["train_mask"]
    feat = g.ndata["feat"]
    label = g.ndata["label"]
    in_feats = feat.shape[1]
    n_hidden = args.hidden
    n_classes = data.num_classes
    heads = [int(h) for h in args.heads.split(",")]

    model = GAT(in_feats, n_hidden, n_classes, heads)
    model = model.to(dev)
    model.train()

    # Create optimizer
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=5e-4)
    scaler = GradScaler(device_type)
    losses = []
    for epoch in range(args.epochs):
        optimizer.zero_grad()
        loss = forward(device_type, g, feat, label, train_mask, model, amp_dtype)
        if amp_dtype == torch.float16:
            # Backprop w/ gradient scaling
            backward(scaler, loss, optimizer)
        else:
            loss.backward()
            optimizer.step()
        losses.append(loss.item())
        print("Epoch {} | Loss {}".format(epoch, loss.item()))
    return losses


if __name__ == "__main__":
    main()
