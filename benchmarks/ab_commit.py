"""The CPU gSpMM forward of this checkout against another commit's, in one process, as JSON lines.

Runs on this machine are noisy enough (10-20 % between processes) to hide a change of that size, so this
imports both versions into one process: the other commit's ``mpgraph`` package is extracted with ``git
archive`` into a temporary directory as ``mpgraph_old`` (its imports inside the package are relative), and
the two ``gspmm`` run round-robin on the same inputs, after a check that their results are equal bit for
bit. Each package keeps its own kernel cache and buffer cache. One line per op and dtype. Usage::

    python benchmarks/ab_commit.py --old 3b6fc2b --graph large --dim 128
    python benchmarks/ab_commit.py --old HEAD~1 --graph uniform --dim 64 --ops copy_u_sum,copy_u_max_noarg
"""

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from mpgraph.ops._cpu.spmm import gspmm  # noqa: E402

from cpu_kernels import make_graph, timed  # noqa: E402
from whole_rows import OPS  # noqa: E402


def old_gspmm(rev, where):
    """``gspmm`` of commit ``rev``, imported from its package extracted under ``where`` as ``mpgraph_old``."""
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "mpgraph"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", where], input=archive, check=True)
    os.rename(os.path.join(where, "mpgraph"), os.path.join(where, "mpgraph_old"))
    sys.path.insert(0, where)
    return importlib.import_module("mpgraph_old.ops._cpu.spmm").gspmm


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", required=True, help="the commit to compare with (any git revision)")
    p.add_argument("--graph", default="large", help="uniform, powerlaw or large")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--ops", default="copy_u_sum,u_mul_e_sum,copy_u_mean")
    p.add_argument("--dtypes", default="float32,bfloat16,float16")
    p.add_argument("--reps", type=int, default=9)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as where:
        old = old_gspmm(a.old, where)
        g = make_graph(a.graph)
        indptr, src = g["indptr"], g["src"]
        gen = torch.Generator().manual_seed(0)
        x32 = torch.randn(g["N"], a.dim, generator=gen)
        w32 = torch.rand(int(indptr[-1]), 1, generator=gen)
        for name in a.dtypes.split(","):
            x, w = x32.to(getattr(torch, name)), w32.to(getattr(torch, name))
            for op_name in a.ops.split(","):
                op, reduce, weighted = OPS[op_name]
                rhs = w if weighted else None
                fns = {tag: (lambda f=f, op=op, reduce=reduce, x=x, rhs=rhs:
                             f(op, reduce, indptr, src, None, x, rhs, need_arg=False)[0])
                       for tag, f in (("old", old), ("new", gspmm))}
                if not torch.equal(fns["old"](), fns["new"]()):
                    raise SystemExit(f"{op_name} {name}: {a.old} and this checkout give different results")
                ms = timed(fns, a.reps)
                print(json.dumps({"bench": "ab_commit", "old": a.old, "graph": a.graph, "D": a.dim, "op": op_name,
                                  "dtype": name, "reps": a.reps, "threads": torch.get_num_threads(),
                                  "old_ms": round(ms["old"], 1), "new_ms": round(ms["new"], 1),
                                  "new_over_old": round(ms["new"] / ms["old"], 3)}), flush=True)


if __name__ == "__main__":
    main()
