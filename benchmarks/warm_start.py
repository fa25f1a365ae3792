"""How much of a cold start a second process saves: the CPU kernels' on-disk cache, end to end.

A fresh process that runs GNN layers pays Numba's compiles first (seconds per kernel); a later process with
the same ``NUMBA_CACHE_DIR`` should load every kernel from disk and compile nothing. This runs one workload
(GAT with dropout, GraphConv, SAGE pool/mean, GIN max, DotGAT, GATv2, EdgeConv: forward and backward in
float32 and bfloat16 on a small random graph, then sum/max readout of a batch) in two fresh processes,
each with its own string hash seed, over one empty cache directory, and prints one JSON line:

``cold_s``/``warm_s`` (each process's workload time, imports excluded), ``warm_over_cold``, ``cold_compiles``/
``warm_compiles`` (Numba compile events of mpgraph functions, callees included) and ``warm_compiled`` (the
functions the second process compiled again: empty when every kernel's cache key is stable across processes).
Usage::

    python benchmarks/warm_start.py [--cache-dir DIR]     # DIR must not exist, or be empty
"""

import argparse
import json
import os
import tempfile

from _child import run_json

_WORKLOAD = r"""
import json, time
import numba.core.event as event
import torch
import mpgraph
from mpgraph import nn

compiled = []


class Record(event.Listener):
    def on_start(self, ev):
        f = ev.data["dispatcher"].py_func
        if f.__module__.startswith("mpgraph."):
            compiled.append(f"{f.__module__}.{f.__qualname__}")

    def on_end(self, ev):
        return None


event.register("numba:compile", Record())
t0 = time.perf_counter()
torch.manual_seed(0)
N, E = 200, 1500
g = mpgraph.add_self_loop(mpgraph.graph((torch.randint(0, N, (E,)), torch.randint(0, N, (E,))), num_nodes=N))
x = torch.randn(N, 16)
for dt in (torch.float32, torch.bfloat16):
    layers = [nn.GATConv(16, 8, 4, feat_drop=0.1, attn_drop=0.1), nn.GraphConv(16, 16), nn.SAGEConv(16, 16, "pool"),
              nn.SAGEConv(16, 16, "mean"), nn.GINConv(None, "max"), nn.DotGatConv(16, 8, 2), nn.GATv2Conv(16, 8, 2),
              nn.EdgeConv(16, 16)]
    for layer in layers:
        layer.to(dt)(g, x.to(dt).requires_grad_()).float().sum().backward()
bg = mpgraph.batch([g, g])
(nn.SumPooling()(bg, torch.randn(2 * N, 8, requires_grad=True)).sum()
 + nn.MaxPooling()(bg, torch.randn(2 * N, 8, requires_grad=True)).sum()).backward()
print(json.dumps({"seconds": time.perf_counter() - t0, "compiled": compiled}))
"""


def run(cache_dir, seed):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONHASHSEED=str(seed))
    return run_json(_WORKLOAD, env, "the workload")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cache-dir", default=None, help="an empty or new directory (default: a temporary one)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = args.cache_dir or os.path.join(tmp, "numba-cache")
        if os.path.isdir(cache_dir) and os.listdir(cache_dir):
            raise SystemExit(f"--cache-dir must be empty or new (a cold start), got {cache_dir} with files in it")
        cold, warm = run(cache_dir, 1), run(cache_dir, 2)
    print(json.dumps({"bench": "warm_start", "cold_s": round(cold["seconds"], 2), "warm_s": round(warm["seconds"], 2),
                      "warm_over_cold": round(warm["seconds"] / cold["seconds"], 4),
                      "cold_compiles": len(cold["compiled"]), "warm_compiles": len(warm["compiled"]),
                      "warm_compiled": sorted(set(warm["compiled"]))}))


if __name__ == "__main__":
    main()
