"""Quick demo: a 2-layer GCN on a generated graph in fp32 and bf16 (``python -m mpgraph.demo``).

It builds a random graph with a planted class structure, trains the same
model from the same initial weights in fp32 and in bf16 (graph features and
model converted, as in DGL's CPU bf16 recipe) and prints losses, accuracy and
time per epoch for both. The GCN layer here is written with
:func:`mpgraph.ops.gspmm` so that the demo depends on the core only.
"""

import argparse
import copy
import statistics
import time

import torch
import torch.nn.functional as F

from . import ops
from .convert import graph, seed


def _planted_graph(num_nodes, avg_degree, num_classes, feat_dim, homophily=0.8):
    labels = torch.randint(0, num_classes, (num_nodes,))
    E = num_nodes * avg_degree
    dst = torch.randint(0, num_nodes, (E,))
    src = torch.randint(0, num_nodes, (E,))
    same = torch.rand(E) < homophily
    # rewire intra-class edges to a random node of the destination's class
    by_class = [torch.nonzero(labels == c).squeeze(1) for c in range(num_classes)]
    for c in range(num_classes):
        sel = same & (labels[dst] == c)
        members = by_class[c]
        src[sel] = members[torch.randint(0, members.numel(), (int(sel.sum()),))]
    centers = torch.randn(num_classes, feat_dim)
    feat = centers[labels] * 0.5 + torch.randn(num_nodes, feat_dim)
    src_all = torch.cat([src, dst, torch.arange(num_nodes)])  # symmetric + self-loops
    dst_all = torch.cat([dst, src, torch.arange(num_nodes)])
    g = graph((src_all, dst_all), num_nodes=num_nodes)
    return g, feat, labels


class GCNLayer(torch.nn.Module):
    """``D^-1/2 A D^-1/2 X W + b`` with the normaliser kept in fp32."""

    def __init__(self, in_feats, out_feats):
        super().__init__()
        self.linear = torch.nn.Linear(in_feats, out_feats)

    def forward(self, g, x, norm):
        h = self.linear(x)
        h = h * norm.to(h.dtype)
        h = ops.copy_u_sum(g, h)
        return h * norm.to(h.dtype)


class GCN(torch.nn.Module):
    def __init__(self, in_feats, hidden, classes):
        super().__init__()
        self.l1 = GCNLayer(in_feats, hidden)
        self.l2 = GCNLayer(hidden, classes)

    def forward(self, g, x, norm):
        h = F.relu(self.l1(g, x, norm))
        h = F.dropout(h, 0.5, self.training)
        return self.l2(g, h, norm)


def train(g, feat, labels, masks, model, dtype, epochs):
    model = copy.deepcopy(model).to(dtype)
    x = feat.to(dtype)
    norm = g.in_degrees().float().clamp(min=1).pow(-0.5).unsqueeze(1)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    train_mask, test_mask = masks
    losses, times = [], []
    for _ in range(epochs):
        t0 = time.perf_counter()
        model.train()
        logits = model(g, x, norm)
        loss = F.cross_entropy(logits[train_mask].float(), labels[train_mask])
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        pred = model(g, x, norm).argmax(1)
    acc = (pred[test_mask] == labels[test_mask]).float().mean().item()
    return losses, statistics.median(times), acc


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m mpgraph.demo", description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=20000)
    p.add_argument("--degree", type=int, default=10)
    p.add_argument("--features", type=int, default=128)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--classes", type=int, default=8)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    seed(args.seed)
    g, feat, labels = _planted_graph(args.nodes, args.degree, args.classes, args.features)
    perm = torch.randperm(args.nodes)
    train_mask = torch.zeros(args.nodes, dtype=torch.bool)
    test_mask = torch.zeros(args.nodes, dtype=torch.bool)
    train_mask[perm[: args.nodes // 10]] = True
    test_mask[perm[args.nodes // 2:]] = True
    model = GCN(args.features, args.hidden, args.classes)
    print(f"graph: {g.num_nodes()} nodes, {g.num_edges()} edges; GCN {args.features}-{args.hidden}-{args.classes}, "
          f"{args.epochs} epochs, {torch.get_num_threads()} threads")
    results = {}
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        seed(args.seed + 1)
        losses, t, acc = train(g, feat, labels, (train_mask, test_mask), model, dtype, args.epochs)
        results[name] = (losses, t, acc)
        print(f"{name}: loss {losses[0]:.4f} -> {losses[-1]:.4f}, test acc {acc:.3f}, "
              f"median epoch {t * 1e3:.1f} ms")
    ratio = results["bf16"][1] / results["fp32"][1]
    print(f"bf16/fp32 epoch time ratio: {ratio:.2f}; final loss difference "
          f"{abs(results['bf16'][0][-1] - results['fp32'][0][-1]):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
