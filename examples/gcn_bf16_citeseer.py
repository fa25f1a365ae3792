"""The guide's bfloat16 CPU GCN program on Citeseer, ported by changing imports.

Same as DGL's user guide (chapter 8, "BFloat16 CPU example") with ``import mpgraph as dgl``;
added: ``--data-dir`` (the Planetoid ``ind.citeseer.*`` files, e.g. shared/data/planetoid),
``--epochs``, and the ``optimizer.zero_grad()`` call the guide's loop omits (without it the
gradients accumulate across epochs and the loss oscillates, in fp32 as in bf16).

    python examples/gcn_bf16_citeseer.py --data-dir ../shared/data/planetoid
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import mpgraph as dgl
from mpgraph.data import CiteseerGraphDataset
from mpgraph.nn import GraphConv
from mpgraph.transforms import AddSelfLoop


class GCN(nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.layers = nn.ModuleList()
        # two-layer GCN
        self.layers.append(GraphConv(in_size, hid_size, activation=F.relu))
        self.layers.append(GraphConv(hid_size, out_size))
        self.dropout = nn.Dropout(0.5)

    def forward(self, g, features):
        h = features
        for i, layer in enumerate(self.layers):
            if i != 0:
                h = self.dropout(h)
            h = layer(g, h)
        return h


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", default=None)
    p.add_argument("--epochs", type=int, default=100)
    args = p.parse_args(argv)

    # Data loading
    transform = AddSelfLoop()
    data = CiteseerGraphDataset(raw_dir=args.data_dir, transform=transform)
    g = data[0]
    g = g.int()
    train_mask = g.ndata["train_mask"]
    test_mask = g.ndata["test_mask"]
    feat = g.ndata["feat"]
    label = g.ndata["label"]

    in_size = feat.shape[1]
    hid_size = 16
    out_size = data.num_classes
    model = GCN(in_size, hid_size, out_size)

    # Convert model and graph to bfloat16
    g = dgl.to_bfloat16(g)
    feat = feat.to(dtype=torch.bfloat16)
    model = model.to(dtype=torch.bfloat16)

    model.train()

    # Create optimizer
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
    loss_fcn = nn.CrossEntropyLoss()

    losses = []
    for epoch in range(args.epochs):
        optimizer.zero_grad()
        logits = model(g, feat)
        loss = loss_fcn(logits[train_mask], label[train_mask])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print("Epoch {} | Loss {}".format(epoch, loss.item()))
    model.eval()
    with torch.no_grad():
        acc = (model(g, feat).argmax(1)[test_mask] == label[test_mask]).float().mean().item()
    print(f"Test accuracy {acc:.3f}")
    return losses, acc


if __name__ == "__main__":
    main()
