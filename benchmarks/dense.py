"""16-bit linear maps on the CPU: torch's own 16-bit matmul against mpgraph's float32 route, in one process.

``mpgraph.ops.dense.linear`` multiplies the exact float32 upcasts of 16-bit operands in float32 and rounds
once, where torch's 16-bit CPU matmul is slow (no AVX-512: a scalar fallback). This compares, round-robin
call by call (a busy machine slows all alike), for each shape: float32 ``F.linear`` (the baseline), torch's
16-bit ``F.linear`` and mpgraph's route, forward and forward+backward (gradients of the input and the
weight). Shapes are the layers of the CLI's models: GCN's first layer on Cora, the guide's GAT on
reddit-like (scale 0.01, hidden 256), and a wide hidden layer of a larger graph. One JSON line per shape x
dtype::

    {"bench": "dense", "shape": [2708, 1433, 64], "dtype": "bfloat16", "native_half_matmul": false,
     "threads": 2, "rounds": 5, "fwd_ms": {"fp32": ..., "torch_half": ..., "mpgraph_half": ...},
     "fwdbwd_ms": {...}, "over_fp32": {"torch_half": {"fwd": ..., "fwdbwd": ...}, "mpgraph_half": {...}}}

Usage::

    python benchmarks/dense.py --rounds 5
"""

import argparse
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F

from mpgraph import precision
from mpgraph.ops import dense

SHAPES = ((2708, 1433, 64), (2330, 602, 256), (20_000, 256, 256))


def _run(f, x, w, backward):
    x.grad = w.grad = None
    t0 = time.perf_counter()
    if backward:
        f(x, w).float().sum().backward()
    else:
        with torch.no_grad():
            f(x, w)
    return (time.perf_counter() - t0) * 1e3


def _forced(mode, fn):
    def call(x, w):
        old = os.environ.get(precision.HALF_MATMUL_ENV)
        os.environ[precision.HALF_MATMUL_ENV] = mode
        try:
            return fn(x, w)
        finally:
            if old is None:
                del os.environ[precision.HALF_MATMUL_ENV]
            else:
                os.environ[precision.HALF_MATMUL_ENV] = old
    return call


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dtypes", default="bfloat16,float16")
    args = ap.parse_args(argv)
    for rows, k, n in SHAPES:
        gen = torch.Generator().manual_seed(0)
        x32 = torch.randn(rows, k, generator=gen)
        w32 = torch.randn(n, k, generator=gen) / k ** 0.5
        for name in args.dtypes.split(","):
            dtype = getattr(torch, name)
            operands = {"fp32": (x32, w32), "torch_half": (x32.to(dtype), w32.to(dtype)),
                        "mpgraph_half": (x32.to(dtype), w32.to(dtype))}
            impls = {"fp32": F.linear, "torch_half": F.linear, "mpgraph_half": _forced("fp32", dense.linear)}
            operands = {k_: tuple(t.clone().requires_grad_() for t in v) for k_, v in operands.items()}
            times = {k_: {"fwd": [], "fwdbwd": []} for k_ in impls}
            for k_, f in impls.items():          # warm-up
                _run(f, *operands[k_], True)
            for _ in range(args.rounds):
                for phase in ("fwd", "fwdbwd"):
                    for k_, f in impls.items():
                        times[k_][phase].append(_run(f, *operands[k_], phase == "fwdbwd"))
            med = {k_: {p: statistics.median(v) for p, v in t.items()} for k_, t in times.items()}
            print(json.dumps({
                "bench": "dense", "shape": [rows, k, n], "dtype": name,
                "native_half_matmul": precision.native_half_matmul(dtype), "threads": torch.get_num_threads(),
                "rounds": args.rounds,
                "fwd_ms": {k_: round(m["fwd"], 2) for k_, m in med.items()},
                "fwdbwd_ms": {k_: round(m["fwdbwd"], 2) for k_, m in med.items()},
                "over_fp32": {k_: {p: round(med[k_][p] / med["fp32"][p], 3) for p in ("fwd", "fwdbwd")}
                              for k_ in ("torch_half", "mpgraph_half")},
            }), flush=True)


if __name__ == "__main__":
    main()
