"""Fused ``u_mul_e`` sum backward on rows wider than the register kernels, against its forward.

For each dtype one JSON line per call: the median milliseconds of the forward ``u_mul_e_sum`` and of the
fused backward (``mpgraph.ops._cpu.spmm_backward.mul_sum_backward``, both gradients in one pass over the
reversed graph), timed round-robin in one process on a random graph with edge ids in destination order, and
``over_forward``. Rows wider than the register kernels take the general row loop, which walks a row's edges
four at a time (one pass over the columns per four gathered gradient rows); from the fifteenth to the fortieth
session heads of a multiple of 128 columns had a column-blocked kernel, whose lines are in
``benchmarks/results/wide_backward.jsonl``. Usage::

    python benchmarks/wide_backward.py                                  # GAT-like: 2330 nodes, 1.14M edges, D=256
    python benchmarks/wide_backward.py --nodes 100000 --edges 2000000  # features larger than the cache
    python benchmarks/wide_backward.py --heads 2 --dim 128
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
from mpgraph.ops._cpu import spmm_backward  # noqa: E402
from mpgraph.ops._cpu._backend import _csc  # noqa: E402
from mpgraph.ops._cpu.spmm import gspmm  # noqa: E402

from cpu_kernels import backward_structures, timed  # noqa: E402


def _structures(N, E, seed):
    """A random graph with its edge ids in destination order: the forward's ``(indptr, src, eid)`` (``eid``
    None: the slots are the edge ids) and the fused backward's reversed structure, both built by mpgraph."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, N, (E,), generator=gen)
    dst = torch.randint(0, N, (E,), generator=gen)
    order = torch.argsort(dst * N + src)
    src, dst = src[order], dst[order]
    forward = _csc(mpgraph.graph((src, dst), num_nodes=N)._op_index())
    return forward, backward_structures(src, dst, N)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nodes", type=int, default=2330)
    p.add_argument("--edges", type=int, default=1144676)
    p.add_argument("--dim", type=int, default=256, help="D, columns per head")
    p.add_argument("--heads", type=int, default=1)
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--reps", type=int, default=9)
    args = p.parse_args(argv)
    N, E, H, D = args.nodes, args.edges, args.heads, args.dim
    (fwd_ptr, fwd_src, fwd_eid), (rev_ptr, rev_dst, eid, inverse) = _structures(N, E, 0)
    kernel = "general" if spmm_backward._kernel_key(H, D) == (0, 0) else "register"
    for name in args.dtypes.split(","):
        dtype = getattr(torch, name)
        gen = torch.Generator().manual_seed(1)
        x, G = (torch.randn(N, H, D, generator=gen).to(dtype) for _ in range(2))
        w = torch.rand(E, H, generator=gen).to(dtype)
        ms = timed({"forward": lambda x=x, w=w: gspmm("mul", "sum", fwd_ptr, fwd_src, fwd_eid, x, w.view(E, H, 1)),
                    "backward": lambda G=G, x=x, w=w: spmm_backward.mul_sum_backward(
                        rev_ptr, rev_dst, eid, G, x, w, eid_inverse=inverse)}, args.reps)
        print(json.dumps({"bench": "wide_backward", "N": N, "E": E, "H": H, "D": D, "dtype": name,
                          "kernel": kernel, "threads": torch.get_num_threads(),
                          "forward_ms": round(ms["forward"], 3), "backward_ms": round(ms["backward"], 3),
                          "over_forward": round(ms["backward"] / ms["forward"], 3)}), flush=True)


if __name__ == "__main__":
    main()
