"""Per-edge ops on a graph whose edge ids are in random order against the same graph with its edges in slot order.

The CPU kernels walk the in-edges of each destination (``Index.csc()``). When the graph's edges are numbered in
that order (a graph built from edges sorted by destination, as the other benchmark graphs are), an edge's data
sits at its slot and each row's values are one contiguous block; a graph built from edges in any other order
(the reddit-like generator, most edge lists) reaches them through scattered edge ids. This times the public
ops on both numberings of one graph, round-robin in one process, after checking that they agree: edge softmax
forward and forward+backward (``--heads``), the gSDDMM ``u_add_v`` that feeds it in GAT and the ``copy_e`` sum
of its backward. One JSON line per op, heads and dtype, with ``scattered_over_slots``.

The default graph is the guide's GAT graph of ``mpgraph bench precision`` (reddit-like at scale 0.01: 2,330
nodes, 1.14M edges, edges in random order). Usage::

    python benchmarks/scattered_edges.py
    python benchmarks/scattered_edges.py --scale 0.05 --heads 1,4 --dtypes float32,bfloat16
"""

import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import mpgraph  # noqa: E402
from mpgraph import ops  # noqa: E402

from cpu_kernels import timed, with_grad  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _graphs(scale):
    """The reddit-like graph as generated (edge ids in random order) and renumbered in slot order, with the
    permutation ``order`` (edge ``i`` of the second is edge ``order[i]`` of the first)."""
    from mpgraph.data import RedditLikeDataset

    g = RedditLikeDataset(scale=scale, seed=0)[0]
    src, dst = g.edges()
    order = torch.argsort(dst * g.num_nodes() + src)
    slots = mpgraph.graph((src[order], dst[order]), num_nodes=g.num_nodes())
    scattered = mpgraph.graph((src, dst), num_nodes=g.num_nodes())
    for x in (slots, scattered):
        x.create_formats_()
    return scattered, slots, order


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=float, default=0.01, help="reddit-like size as a fraction of Reddit")
    p.add_argument("--heads", default="1,4")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    scattered, slots, order = _graphs(args.scale)
    N, E = scattered.num_nodes(), scattered.num_edges()
    gen = torch.Generator().manual_seed(0)
    for H in (int(h) for h in args.heads.split(",")):
        for name in args.dtypes.split(","):
            dtype = DTYPES[name]
            logits = torch.randn(E, H, 1, generator=gen).to(dtype)
            el, er = (torch.randn(N, H, 1, generator=gen).to(dtype) for _ in range(2))
            cases = {
                "edge_softmax": (ops.edge_softmax, (logits,), (logits[order],), True),
                "u_add_v": (ops.u_add_v, (el, er), (el, er), True),
                "copy_e_sum": (ops.copy_e_sum, (logits,), (logits[order],), False),
            }
            for op, (fn, on_scattered, on_slots, per_edge) in cases.items():
                a, b = fn(scattered, *on_scattered), fn(slots, *on_slots)
                a = a[order] if per_edge else a
                torch.testing.assert_close(a.float(), b.float(), rtol=1e-2, atol=1e-6)
                fns = {"scattered": lambda fn=fn, x=on_scattered: fn(scattered, *x),
                       "slots": lambda fn=fn, x=on_slots: fn(slots, *x)}
                fwdbwd = {k + "_fwdbwd": with_grad(lambda *t, fn=fn, g=g: fn(g, *t), x)
                          for k, g, x in (("scattered", scattered, on_scattered), ("slots", slots, on_slots))}
                ms = timed({**fns, **fwdbwd}, args.reps)
                print(json.dumps({
                    "bench": "scattered_edges", "op": op, "N": N, "E": E, "heads": H, "dtype": name,
                    "threads": torch.get_num_threads(), **{k + "_ms": round(v, 3) for k, v in ms.items()},
                    "scattered_over_slots": round(ms["scattered"] / ms["slots"], 3),
                    "fwdbwd_scattered_over_slots": round(ms["scattered_fwdbwd"] / ms["slots_fwdbwd"], 3)}),
                    flush=True)


if __name__ == "__main__":
    main()
