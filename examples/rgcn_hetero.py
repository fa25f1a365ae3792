"""RGCN entity classification on a generated typed graph, trained in fp32 and in bfloat16 autocast.

The relational GCN (Schlichtkrull et al., 2018) is written as DGL's user guide
writes it for heterographs: one ``GraphConv`` per relation inside a
``HeteroGraphConv`` that sums the relations' results per node type

    h_v' = sum_{r : dst(r) = type(v)} GraphConv_r(g[r], h_src, h_v)

on an author / paper / venue graph whose links depend on the papers' classes
(``mpgraph.data.typed_graph``); the task is to classify papers. Both
precisions start from the same weights, so their accuracies are directly
comparable.

Usage::

    python examples/rgcn_hetero.py --epochs 60 --precision both
"""

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from mpgraph.data.typed_graph import SyntheticTypedGraphDataset
from mpgraph.nn import GraphConv
from mpgraph.nn.hetero import HeteroGraphConv


class RGCN(nn.Module):
    """Two HeteroGraphConv layers of per-relation GraphConv, summed across relations."""

    def __init__(self, in_feats, hidden, num_classes, rel_names, dropout=0.2):
        super().__init__()
        self.conv1 = HeteroGraphConv({rel: GraphConv(in_feats, hidden) for rel in rel_names}, aggregate="sum")
        self.conv2 = HeteroGraphConv({rel: GraphConv(hidden, num_classes) for rel in rel_names}, aggregate="sum")
        self.dropout = nn.Dropout(dropout)

    def forward(self, g, inputs):
        h = self.conv1(g, inputs)
        h = {k: self.dropout(F.relu(v)) for k, v in h.items()}
        return self.conv2(g, h)


def _accuracy(logits, labels, mask):
    return float((logits[mask].argmax(1) == labels[mask]).float().mean())


def train(g, category, num_classes, precision, epochs, seed, hidden=32, lr=1e-2):
    """Train one model; returns ``{precision, epochs, train_acc, val_acc, test_acc, final_loss, seconds}``."""
    torch.manual_seed(seed)
    feats = {nt: g.nodes[nt].data["feat"] for nt in g.ntypes}
    data = g.nodes[category].data
    labels, masks = data["label"], (data["train_mask"], data["val_mask"], data["test_mask"])
    model = RGCN(feats[category].shape[1], hidden, num_classes, sorted(set(g.etypes)))
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=5e-4)
    amp = precision == "amp-bf16"
    start = time.perf_counter()
    for _ in range(epochs):
        model.train()
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            logits = model(g, feats)[category]
        loss = F.cross_entropy(logits.float()[masks[0]], labels[masks[0]])
        loss.backward()
        opt.step()
    seconds = time.perf_counter() - start
    model.eval()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
        logits = model(g, feats)[category].float()
    return {"precision": precision, "epochs": epochs, "train_acc": _accuracy(logits, labels, masks[0]),
            "val_acc": _accuracy(logits, labels, masks[1]), "test_acc": _accuracy(logits, labels, masks[2]),
            "final_loss": float(loss.detach()), "seconds": seconds}


def format_table(results):
    head = f"{'precision':<10} {'epochs':>6} {'loss':>8} {'train':>7} {'val':>7} {'test':>7} {'seconds':>8}"
    rows = [f"{r['precision']:<10} {r['epochs']:>6} {r['final_loss']:>8.4f} {r['train_acc']:>7.3f} "
            f"{r['val_acc']:>7.3f} {r['test_acc']:>7.3f} {r['seconds']:>8.2f}" for r in results]
    return "\n".join([head] + rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--precision", choices=["fp32", "amp-bf16", "both"], default="both")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-papers", type=int, default=600)
    parser.add_argument("--num-authors", type=int, default=300)
    parser.add_argument("--num-venues", type=int, default=12)
    parser.add_argument("--num-classes", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=32)
    args = parser.parse_args(argv)
    dataset = SyntheticTypedGraphDataset(num_papers=args.num_papers, num_authors=args.num_authors,
                                         num_venues=args.num_venues, num_classes=args.num_classes, seed=args.seed)
    g = dataset[0]
    precisions = ["fp32", "amp-bf16"] if args.precision == "both" else [args.precision]
    results = [train(g, dataset.predict_category, dataset.num_classes, p, args.epochs, args.seed, args.hidden)
               for p in precisions]
    print(format_table(results))
    return results


if __name__ == "__main__":
    main()
