"""DGL 2.1's ops timed in a process that never imports mpgraph, as JSON lines.

``benchmarks/ops.py`` times DGL beside mpgraph in one process, where ``import mpgraph`` has set
``OMP_WAIT_POLICY=PASSIVE`` and ``THP_MEM_ALLOC_ENABLE=1`` (when unset) for DGL's OpenMP threads and torch's
allocator too. This times the same ``dgl.ops`` calls on the same graph and inputs (``shared/bench/graphs.py``,
features from a generator seeded 1) in DGL's own environment, to check that those defaults are not what the
comparison measures. Run it in the venv that has DGL (``shared/bench/README.md``)::

    python benchmarks/dgl_alone.py --ops copy_u_sum,copy_u_mean,copy_u_max,u_mul_e_sum
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import dgl  # noqa: E402

from _graphs import bench_graphs  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def with_grad(fn, inputs):
    """Forward and backward from an upstream gradient of ones made at the first (untimed) call."""
    seed = []

    def run():
        leaves = [t.detach().requires_grad_(True) for t in inputs]
        out = fn(*leaves)
        if not seed:
            seed.append(torch.ones_like(out))
        out.backward(seed[0])
    return run


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="uniform")
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--ops", default="copy_u_sum,copy_u_mean,copy_u_max,u_mul_e_sum")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args(argv)
    if "mpgraph" in sys.modules:
        raise SystemExit("mpgraph was imported: this script times DGL without it")
    g = bench_graphs().make_graph(a.graph)
    gd = dgl.graph((g["src"], g["dst"]), num_nodes=g["N"])
    gd.create_formats_()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(g["N"], a.dim, generator=gen)
    w = torch.rand(g["E"], 1, generator=gen)
    for name in a.dtypes.split(","):
        xd, wd = x.to(DTYPES[name]), w.to(DTYPES[name])
        fns = {}
        for op in a.ops.split(","):
            f = getattr(dgl.ops, op)
            args = (xd, wd) if op == "u_mul_e_sum" else (xd,)
            fns[op + ".fwd"] = lambda f=f, args=args: f(gd, *args)
            fns[op + ".fwdbwd"] = with_grad(lambda *t, f=f: f(gd, *t), args)
        for f in fns.values():
            f()
        times = {k: [] for k in fns}
        for _ in range(a.reps):
            for k, f in fns.items():
                t0 = time.perf_counter()
                f()
                times[k].append(time.perf_counter() - t0)
        print(json.dumps({"bench": "dgl_alone", "graph": a.graph, "D": a.dim, "dtype": name, "reps": a.reps,
                          "threads": torch.get_num_threads(), "dgl": dgl.__version__,
                          "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
                          "ms": {k: round(1e3 * float(np.median(v)), 1) for k, v in times.items()}}), flush=True)


if __name__ == "__main__":
    main()
