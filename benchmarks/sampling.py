"""Neighbour-sampling throughput and mini-batch epoch time on a generated Reddit-like graph, as JSON lines.

Cases, all in one run on the same graph (``mpgraph.data.RedditLikeDataset``):

* ``sample``: one pass over the training nodes in batches of ``--batch-size``
  with ``NeighborSampler(--fanouts)``, blocks plus gathered features (``feat``
  into the first block, ``label`` into the last); against the baseline
  ``full_neighbours`` (``MultiLayerFullNeighborSampler``, the same number of
  layers), which gathers every neighbour. Reported: sampled edges/s,
  mini-batches/s, mean input nodes and edges per batch. ``--feature-dtype``
  variants show the gather in a float32 and a bfloat16 feature store.
* ``train``: median epoch time of mini-batch GraphSAGE (``mpgraph.cli.minibatch``,
  sampling included) in ``fp32`` (the baseline) and ``amp-bf16``, and the test
  accuracy each reached.

Usage::

    python benchmarks/sampling.py                      # scale 0.02: 4,659 nodes, 2.3M edges
    python benchmarks/sampling.py --scale 0.05 --threads 2 --epochs 3

Output, one line per case::

    {"bench": "sampling", "case": "sample", "sampler": "neighbor[25, 10]", "feature_dtype": "float32",
     "edges_per_s": ..., "batches_per_s": ..., ...}
"""

import argparse
import json
import statistics
import time

import torch


def _sample_pass(g, train_ids, sampler, batch_size, repeats):
    from mpgraph.dataloading import DataLoader
    loader = DataLoader(g, train_ids, sampler, batch_size=batch_size, shuffle=True)
    times, edges, inputs, batches = [], 0, 0, 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        for input_nodes, _, blocks in loader:
            edges += sum(b.num_edges() for b in blocks)
            inputs += input_nodes.numel()
            batches += 1
        times.append(time.perf_counter() - t0)
    total = sum(times)
    return dict(edges_per_s=edges / total, batches_per_s=batches / total, input_nodes_per_batch=inputs / batches,
                edges_per_batch=edges / batches, pass_s=statistics.median(times), batches_per_pass=len(loader))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=float, default=0.02)
    p.add_argument("--fanouts", default="25,10")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--repeats", type=int, default=3, help="passes over the training nodes per sampler case")
    p.add_argument("--epochs", type=int, default=3, help="training epochs per precision (0: skip training)")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    import mpgraph as dgl
    from mpgraph.cli.minibatch import train_minibatch
    from mpgraph.cli.models import DEFAULTS
    from mpgraph.data import RedditLikeDataset
    from mpgraph.dataloading import MultiLayerFullNeighborSampler, NeighborSampler

    fanouts = [int(f) for f in args.fanouts.split(",")]
    ds = RedditLikeDataset(scale=args.scale, seed=args.seed)
    g = ds[0]
    g.create_formats_()
    train_ids = g.ndata["train_mask"].nonzero().squeeze(1)
    common = dict(bench="sampling", scale=args.scale, num_nodes=g.num_nodes(), num_edges=g.num_edges(),
                  train_nodes=train_ids.numel(), batch_size=args.batch_size, threads=torch.get_num_threads())
    store32 = g
    store16 = g.clone()
    store16.ndata["feat"] = g.ndata["feat"].to(torch.bfloat16)
    cases = [("full_neighbours (baseline)", MultiLayerFullNeighborSampler(len(fanouts), prefetch_node_feats=["feat"],
              prefetch_labels=["label"], prefetch_edge_feats=[]), store32),
             (f"neighbor{fanouts}", NeighborSampler(fanouts, prefetch_node_feats=["feat"], prefetch_labels=["label"],
              prefetch_edge_feats=[]), store32),
             (f"neighbor{fanouts}", NeighborSampler(fanouts, prefetch_node_feats=["feat"], prefetch_labels=["label"],
              prefetch_edge_feats=[]), store16),
             (f"neighbor{fanouts} (structure only)", NeighborSampler(fanouts, prefetch_node_feats=[],
              prefetch_labels=[], prefetch_edge_feats=[]), store32)]
    for name, sampler, store in cases:
        dgl.seed(args.seed)
        out = _sample_pass(store, train_ids, sampler, args.batch_size, args.repeats)
        print(json.dumps(dict(common, case="sample", sampler=name,
                              feature_dtype=str(store.ndata["feat"].dtype).replace("torch.", ""), **out)),
              flush=True)
    if args.epochs <= 0:
        return
    settings = dict(DEFAULTS["sage"], heads=None)
    for precision in ("fp32", "amp-bf16"):
        ns = argparse.Namespace(model="sage", dataset="reddit-like", precision=precision, epochs=args.epochs,
                                split=0, fanouts=fanouts, batch_size=args.batch_size, patience=None)
        r = train_minibatch(g, ds.num_classes, ns, settings, torch.device("cpu"), args.seed, progress=False)
        print(json.dumps(dict(common, case="train", model="sage", precision=precision,
                              baseline=precision == "fp32", fanouts=fanouts, epochs=args.epochs,
                              median_epoch_s=r["median_epoch_s"], epoch_times=r["epoch_times"],
                              sampled_edges_per_s=r["edges_per_s"], test_acc=r["test_acc"],
                              final_loss=r["final_loss"])), flush=True)


if __name__ == "__main__":
    main()
