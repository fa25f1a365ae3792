"""Random row gathers from node features in 4 KiB pages against features advised as transparent huge pages.

The forward of a gSpMM gathers one source row per edge at random. If the misses of the CPU's TLB (one per
row on a 4 KiB page) were what holds the bfloat16 forward above half the float32 time, features on 2 MiB
pages would show it. For each dtype the features are copied into a tensor in ordinary pages (``4k``) and
into one advised with ``madvise(MADV_HUGEPAGE)`` before its first write (``huge``, as
``mpgraph.ops._cpu._core.advise_huge_pages`` advises the kernels' outputs), and the forwards of
copy_u_sum, u_mul_e_sum (one weight per edge) and copy_u_max on both are timed round-robin in one process.
One JSON line per op and dtype: the medians, ``huge_over_4k`` and ``over_fp32_4k`` (this dtype's time over
float32's on ordinary pages, the ratio the headline target names), plus the process's AnonHugePages (how
much Linux did back with huge pages: 0 where transparent huge pages are off). Usage::

    python benchmarks/input_pages.py                            # 10M-edge graph, D=128
    python benchmarks/input_pages.py --graph uniform --dim 64 --reps 9
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
from mpgraph.ops._cpu._core import advise_huge_pages  # noqa: E402

from cpu_kernels import make_graph, timed  # noqa: E402  (round-robin median timing)

OPS = ("copy_u_sum", "u_mul_e_sum", "copy_u_max")


def _placed(t, huge):
    """A copy of ``t`` in fresh memory, advised as huge pages before its first write when ``huge``."""
    out = torch.empty(t.shape, dtype=t.dtype)
    if huge and not advise_huge_pages(out):
        raise SystemExit("madvise(MADV_HUGEPAGE) was refused or is unavailable here: nothing to compare")
    out.copy_(t)
    return out


def _anon_huge_kb():
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graph", default="large", help="uniform, powerlaw or large")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--reps", type=int, default=7)
    args = p.parse_args(argv)
    g = make_graph(args.graph)
    N, E = g["N"], g["E"]
    gi = mpgraph.graph((g["src"], g["dst"]), num_nodes=N)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(N, args.dim, generator=gen)
    w = torch.rand(E, 1, generator=gen)
    dtypes = args.dtypes.split(",")
    if "float32" not in dtypes:
        dtypes.insert(0, "float32")
    fns = {}
    for name in dtypes:
        dt = getattr(torch, name)
        wd = w.to(dt)
        for pages in ("4k", "huge"):
            xd = _placed(x.to(dt), pages == "huge")
            fns[("copy_u_sum", name, pages)] = lambda xd=xd: ops.copy_u_sum(gi, xd)
            fns[("u_mul_e_sum", name, pages)] = lambda xd=xd, wd=wd: ops.u_mul_e_sum(gi, xd, wd)
            fns[("copy_u_max", name, pages)] = lambda xd=xd: ops.copy_u_max(gi, xd)
    with torch.no_grad():
        ms = timed(fns, args.reps)
    huge_kb = _anon_huge_kb()
    for op in OPS:
        for name in dtypes:
            a, b = ms[(op, name, "4k")], ms[(op, name, "huge")]
            print(json.dumps({"bench": "input_pages", "graph": args.graph, "N": N, "E": E, "D": args.dim, "op": op,
                              "dtype": name, "threads": torch.get_num_threads(), "reps": args.reps,
                              "ms": {"4k": round(a, 2), "huge": round(b, 2)}, "huge_over_4k": round(b / a, 3),
                              "over_fp32_4k": {"4k": round(a / ms[(op, "float32", "4k")], 3),
                                               "huge": round(b / ms[(op, "float32", "4k")], 3)},
                              "anon_huge_pages_kb": huge_kb}), flush=True)


if __name__ == "__main__":
    main()
