"""Rows that one full-width pass covers: one pass call per chunk of rows against one per row, as JSON lines.

When no winners are recorded and a single value pass covers a row (fp32 rows of 64 columns, 16-bit rows of
128; ``mpgraph.ops._cpu.spmm.takes_whole_rows``), the CPU gSpMM hands the pass a whole chunk of rows. This
times that (``gspmm(..., whole_rows=True)``, the default) against the row-at-a-time walk (``whole_rows=False``)
round-robin in one process, on the structure the op layer builds, after checking the two results are equal bit
for bit. One line per graph, op, dtype and D (by default the pass width of the dtype). Usage::

    python benchmarks/whole_rows.py --graph large
    python benchmarks/whole_rows.py --graph uniform --ops copy_u_sum,copy_u_max_noarg
"""

import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from mpgraph.ops._cpu.spmm import gspmm, takes_whole_rows  # noqa: E402
from mpgraph.ops._cpu._layout import RHS_BLOCK, SAME  # noqa: E402

from cpu_kernels import max_structures, timed  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
#: op name -> (gspmm op, reduce, one weight per edge)
OPS = {"copy_u_sum": ("copy_lhs", "sum", False), "copy_u_mean": ("copy_lhs", "mean", False),
       "copy_u_max_noarg": ("copy_lhs", "max", False), "u_mul_e_sum": ("mul", "sum", True)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="large", help="uniform, powerlaw or large")
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--dtypes", default="float32,bfloat16,float16")
    p.add_argument("--dims", default=None, help="feature widths (default: each dtype's pass width, 64 or 128)")
    p.add_argument("--reps", type=int, default=9)
    a = p.parse_args(argv)
    s = max_structures(a.graph)
    indptr, indices, eid = s["indptr_c"], s["src_c"], s["eid_c"]
    N, E = s["g"]["N"], int(indptr[-1])
    gen = torch.Generator().manual_seed(0)
    for name in a.dtypes.split(","):
        dtype = DTYPES[name]
        dims = [int(d) for d in a.dims.split(",")] if a.dims else [128 if dtype.itemsize == 2 else 64]
        for D in dims:
            x = torch.randn(N, D, generator=gen).to(dtype)
            w = torch.rand(E, 1, generator=gen).to(dtype)
            for op_name in a.ops.split(","):
                op, reduce, weighted = OPS[op_name]
                layout = RHS_BLOCK if weighted else SAME
                if not takes_whole_rows(layout, False, 1 if weighted else D, D, D, dtype):
                    print(json.dumps({"bench": "whole_rows", "graph": a.graph, "op": op_name, "dtype": name, "D": D,
                                      "skipped": "one pass does not cover a row"}), flush=True)
                    continue
                rhs = w if weighted else None

                def run(whole, op=op, reduce=reduce, x=x, rhs=rhs):
                    return gspmm(op, reduce, indptr, indices, eid, x, rhs, need_arg=False, whole_rows=whole)[0]

                if not torch.equal(run(True), run(False)):
                    raise SystemExit(f"{op_name} {name} D={D}: whole rows and the row walk differ")
                ms = timed({"whole": lambda run=run: run(True), "per_row": lambda run=run: run(False)}, a.reps)
                print(json.dumps({"bench": "whole_rows", "graph": a.graph, "op": op_name, "dtype": name, "D": D,
                                  "reps": a.reps, "threads": torch.get_num_threads(),
                                  "whole_ms": round(ms["whole"], 2), "per_row_ms": round(ms["per_row"], 2),
                                  "whole_over_per_row": round(ms["whole"] / ms["per_row"], 3)}), flush=True)


if __name__ == "__main__":
    main()
