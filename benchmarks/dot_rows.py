"""gSDDMM ``dot`` of one feature shape: the register kernel (``_cpu.sddmm.dot_kernel``) against the general edge
body (``gsddmm(..., fast_dot=False)``), round-robin in one process, as JSON lines.

For each ``HxD`` shape (``H`` heads of ``D``; rows of ``H * D`` elements), dtype and target pair, both compute the
dot of each edge's two rows; their results are checked within the dtype's tolerance (``tests/tolerances.py``:
the sums run in another order) and the medians and their ratio printed. Usage::

    python benchmarks/dot_rows.py                                # uniform graph, 8x8, 1x64, 4x32, 1x128; fp32, bf16
    python benchmarks/dot_rows.py --shapes 16x4 --dtypes float16 --targets u,e
"""

import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from mpgraph import graph  # noqa: E402
from mpgraph._index import as_index  # noqa: E402
from mpgraph.ops._cpu.sddmm import dot_key, gsddmm  # noqa: E402

from cpu_kernels import make_graph, timed  # noqa: E402
from tolerances import assert_close  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="uniform", help="uniform, powerlaw or large")
    p.add_argument("--shapes", default="8x8,1x64,4x32,1x128", help="HxD, comma-separated")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--targets", default="u,v", help="the lhs and rhs targets, e.g. u,v or u,e")
    p.add_argument("--reps", type=int, default=9)
    a = p.parse_args(argv)
    g = make_graph(a.graph)
    indptr, indices, eid = as_index(graph((g["src"], g["dst"]), num_nodes=g["N"])).csc()
    lt, rt = a.targets.split(",")
    rows = {"u": g["N"], "v": g["N"], "e": g["E"]}
    for shape in a.shapes.split(","):
        H, D = (int(v) for v in shape.split("x"))
        gen = torch.Generator().manual_seed(0)
        x32, y32 = torch.randn(rows[lt], H, D, generator=gen), torch.randn(rows[rt], H, D, generator=gen)
        for name in a.dtypes.split(","):
            dtype = getattr(torch, name)
            x, y = x32.to(dtype), y32.to(dtype)
            if dot_key(tuple(x.shape[1:]), tuple(y.shape[1:]), x, y) is None:
                raise SystemExit(f"{shape} {name}: no register kernel for this shape")
            fns = {tag: (lambda fast=fast, x=x, y=y: gsddmm("dot", indptr, indices, eid, x, y, lt, rt, fast_dot=fast))
                   for tag, fast in (("register", True), ("general", False))}
            assert_close(fns["register"](), fns["general"](), dtype)
            ms = timed(fns, a.reps)
            print(json.dumps({"bench": "dot_rows", "graph": a.graph, "E": g["E"], "H": H, "D": D, "dtype": name,
                              "targets": a.targets, "reps": a.reps, "threads": torch.get_num_threads(),
                              "register_ms": round(ms["register"], 2), "general_ms": round(ms["general"], 2),
                              "register_over_general": round(ms["register"] / ms["general"], 3)}), flush=True)


if __name__ == "__main__":
    main()
