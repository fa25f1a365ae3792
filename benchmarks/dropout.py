"""Dropout on the CPU: mpgraph's seeded kernel (``mpgraph.ops.dropout``) against torch's, in one process.

Shapes are the ones a GAT training step drops: the attention ``(E, H, 1)`` of a 2M-edge graph with 8 heads
and the node features ``(N, D)``. The two implementations alternate call by call (round-robin), so a busy
machine slows both alike. Forward is one call in training mode; forward+backward adds the backward of a
sum weighted by a fixed random tensor. One JSON line per shape x dtype::

    {"bench": "dropout", "shape": [2000000, 8, 1], "dtype": "bfloat16", "p": 0.6, "threads": 2, "rounds": 7,
     "fwd_ms": {"mpgraph": ..., "torch": ...}, "fwdbwd_ms": {...},
     "mpgraph_over_torch": {"fwd": ..., "fwdbwd": ...}}

Usage::

    python benchmarks/dropout.py --rounds 7
"""

import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

from mpgraph.ops import dropout

SHAPES = ((2_000_000, 8, 1), (100_000, 64), (100_000, 602))


def _fwd(f, x, w):
    with torch.no_grad():
        f(x)


def _fwdbwd(f, x, w):
    x.grad = None
    f(x).backward(w)


def _time(step, f, x, w):
    t0 = time.perf_counter()
    step(f, x, w)
    return (time.perf_counter() - t0) * 1e3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--p", type=float, default=0.6)
    ap.add_argument("--dtypes", default="float32,bfloat16")
    args = ap.parse_args(argv)
    impls = {"mpgraph": lambda x: dropout(x, args.p, True), "torch": lambda x: F.dropout(x, args.p, True)}
    for shape in SHAPES:
        for name in args.dtypes.split(","):
            dtype = getattr(torch, name)
            x = torch.randn(shape).to(dtype).requires_grad_()
            w = torch.randn(shape).to(dtype)
            times = {k: {"fwd": [], "fwdbwd": []} for k in impls}
            for f in impls.values():           # warm-up (compilation)
                _fwd(f, x, w)
                _fwdbwd(f, x, w)
            for _ in range(args.rounds):
                for k, f in impls.items():
                    times[k]["fwd"].append(_time(_fwd, f, x, w))
                    times[k]["fwdbwd"].append(_time(_fwdbwd, f, x, w))
            med = {k: {m: statistics.median(v) for m, v in t.items()} for k, t in times.items()}
            print(json.dumps({
                "bench": "dropout", "shape": list(shape), "dtype": name, "p": args.p,
                "threads": torch.get_num_threads(), "rounds": args.rounds,
                "fwd_ms": {k: round(med[k]["fwd"], 3) for k in impls},
                "fwdbwd_ms": {k: round(med[k]["fwdbwd"], 3) for k in impls},
                "mpgraph_over_torch": {m: round(med["mpgraph"][m] / med["torch"][m], 4) for m in ("fwd", "fwdbwd")},
            }), flush=True)


if __name__ == "__main__":
    main()
