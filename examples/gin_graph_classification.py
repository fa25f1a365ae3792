"""GIN graph classification on generated graphs, trained in fp32 and in bfloat16 autocast.

The Graph Isomorphism Network (Xu et al., ICLR 2019) updates node features with

    h_v' = MLP((1 + eps) * h_v + sum_{u in N(v)} h_u)

(``mpgraph.nn.GINConv``) and classifies a graph from the sums of its node
features after every layer (``mpgraph.nn.SumPooling``). Mini-batches are
batched graphs (``mpgraph.batch``). Both precisions start from the same weights
and see the same batches, so their accuracies are directly comparable.

Usage::

    python examples/gin_graph_classification.py --epochs 30 --precision both
"""

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from mpgraph.batch import batch
from mpgraph.data.graph_classification import SyntheticGraphClassification
from mpgraph.nn import GINConv, SumPooling


class MLP(nn.Sequential):
    """``Linear -> BatchNorm -> ReLU -> Linear``: GIN's update function."""

    def __init__(self, in_feats, out_feats):
        super().__init__(nn.Linear(in_feats, out_feats), nn.BatchNorm1d(out_feats), nn.ReLU(),
                         nn.Linear(out_feats, out_feats))


class GIN(nn.Module):
    """GIN layers (learnable eps, sum aggregation), then one linear score per layer on the sum-pooled features."""

    def __init__(self, in_feats, hidden, num_classes, num_layers=3, dropout=0.2):
        super().__init__()
        dims = [in_feats] + [hidden] * num_layers
        self.layers = nn.ModuleList(GINConv(MLP(a, b), "sum", learn_eps=True) for a, b in zip(dims[:-1], dims[1:]))
        self.norms = nn.ModuleList(nn.BatchNorm1d(hidden) for _ in range(num_layers))
        self.heads = nn.ModuleList(nn.Linear(d, num_classes) for d in dims)
        self.pool = SumPooling()
        self.dropout = nn.Dropout(dropout)

    def forward(self, g, h):
        score = self.heads[0](self.pool(g, h))             # (B, C)
        for layer, norm, head in zip(self.layers, self.norms, self.heads[1:]):
            h = F.relu(norm(layer(g, h)))                   # (N, hidden)
            score = score + self.dropout(head(self.pool(g, h)))
        return score


def _batches(dataset, indices, batch_size, generator=None):
    order = indices if generator is None else indices[torch.randperm(len(indices), generator=generator)]
    for lo in range(0, len(order), batch_size):
        items = [dataset[int(i)] for i in order[lo:lo + batch_size]]
        yield batch([g for g, _ in items]), torch.stack([y for _, y in items])


def _logits(model, g, precision):
    if precision == "amp-bf16":
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model(g, g.ndata["feat"]).float()
    return model(g, g.ndata["feat"])


@torch.no_grad()
def evaluate(model, dataset, indices, precision, batch_size):
    """Accuracy of ``model`` on ``dataset[indices]``."""
    model.eval()
    correct = 0
    for g, y in _batches(dataset, indices, batch_size):
        correct += int((_logits(model, g, precision).argmax(1) == y).sum())
    return correct / max(len(indices), 1)


def train(dataset, precision, epochs, seed, hidden=32, num_layers=3, batch_size=32, lr=0.01):
    """Train a GIN in ``precision`` ('fp32' or 'amp-bf16'); return a dict of results."""
    torch.manual_seed(seed)
    n = len(dataset)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    n_train = int(0.8 * n)
    train_idx, test_idx = perm[:n_train], perm[n_train:]
    model = GIN(dataset.dim_nfeats, hidden, dataset.num_classes, num_layers)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    shuffle = torch.Generator().manual_seed(seed + 1)
    start = time.perf_counter()
    loss_sum = 0.0
    for _ in range(epochs):
        model.train()
        loss_sum, seen = 0.0, 0
        for g, y in _batches(dataset, train_idx, batch_size, shuffle):
            loss = F.cross_entropy(_logits(model, g, precision), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_sum += float(loss.detach()) * len(y)
            seen += len(y)
        loss_sum /= max(seen, 1)
    seconds = time.perf_counter() - start
    return {"precision": precision, "epochs": epochs, "loss": loss_sum,
            "train_acc": evaluate(model, dataset, train_idx, precision, batch_size),
            "test_acc": evaluate(model, dataset, test_idx, precision, batch_size), "seconds": seconds}


def format_table(results):
    """The results as a small text table."""
    lines = [f"{'precision':<10} {'epochs':>6} {'loss':>8} {'train_acc':>9} {'test_acc':>8} {'seconds':>8}"]
    for r in results:
        lines.append(f"{r['precision']:<10} {r['epochs']:>6} {r['loss']:>8.4f} {r['train_acc']:>9.3f} "
                     f"{r['test_acc']:>8.3f} {r['seconds']:>8.2f}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--precision", choices=["fp32", "amp-bf16", "both"], default="both")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-graphs", type=int, default=400)
    parser.add_argument("--num-classes", type=int, default=3)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)
    dataset = SyntheticGraphClassification(num_graphs=args.num_graphs, num_classes=args.num_classes, seed=args.seed)
    precisions = ["fp32", "amp-bf16"] if args.precision == "both" else [args.precision]
    results = [train(dataset, p, args.epochs, args.seed, hidden=args.hidden, batch_size=args.batch_size)
               for p in precisions]
    print(format_table(results))
    return results


if __name__ == "__main__":
    main()
