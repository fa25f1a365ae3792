"""Fused ``u_mul_e`` sum backward on rows wider than the register kernels: column blocks against the general loop.

For each dtype one JSON line per kernel choice: the median milliseconds of the fused backward
(``mpgraph.ops._cpu.spmm_backward.mul_sum_backward``) with the column-blocked kernel at each block width of
``--blocks`` (``0`` is the general row loop), and of the forward ``u_mul_e_sum`` as the baseline, all timed
round-robin in one process on a random graph. Results of every choice are checked against the first before
timing. Usage::

    python benchmarks/wide_backward.py                                  # GAT-like: 2330 nodes, 1.14M edges, D=256
    python benchmarks/wide_backward.py --nodes 100000 --edges 2000000  # features larger than the cache
    python benchmarks/wide_backward.py --heads 4 --dim 64 --blocks 0,64
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import mpgraph  # noqa: E402
from mpgraph.ops._cpu import spmm_backward  # noqa: E402
from mpgraph.ops._cpu._backend import _csc  # noqa: E402
from mpgraph.ops._cpu.spmm import gspmm  # noqa: E402

from cpu_kernels import backward_structures  # noqa: E402


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
    p.add_argument("--blocks", default="0,64,128", help="column-block widths to time (0: the general loop)")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--reps", type=int, default=9)
    args = p.parse_args(argv)
    N, E, H, D = args.nodes, args.edges, args.heads, args.dim
    blocks = [int(b) for b in args.blocks.split(",")]
    if any(b and D % b for b in blocks):
        raise SystemExit(f"every block width must divide --dim {D}, got {blocks}")
    (fwd_ptr, fwd_src, fwd_eid), (rev_ptr, rev_dst, eid, inverse) = _structures(N, E, 0)
    saved = spmm_backward.WIDE_BLOCKS
    fns = {}
    try:
        for name in args.dtypes.split(","):
            dtype = getattr(torch, name)
            gen = torch.Generator().manual_seed(1)
            x, G = (torch.randn(N, H, D, generator=gen).to(dtype) for _ in range(2))
            w = torch.rand(E, H, generator=gen).to(dtype)
            fns[(name, "forward")] = lambda x=x, w=w: gspmm("mul", "sum", fwd_ptr, fwd_src, fwd_eid, x, w.view(E, H, 1))
            for b in blocks:
                def bwd(x=x, w=w, G=G, b=b):
                    spmm_backward.WIDE_BLOCKS = (b,) if b else ()
                    return spmm_backward.mul_sum_backward(rev_ptr, rev_dst, eid, G, x, w, eid_inverse=inverse)
                fns[(name, b)] = bwd
            first = fns[(name, blocks[0])]()
            for b in blocks[1:]:
                other = fns[(name, b)]()
                for a, c in zip(first, other):
                    scale = float(a.float().abs().max())
                    torch.testing.assert_close(a.float(), c.float(), rtol=2e-2, atol=2e-2 * scale)
        for f in fns.values():
            f()
        times = {k: [] for k in fns}
        for _ in range(args.reps):
            for k, f in fns.items():
                t = time.perf_counter()
                f()
                times[k].append(time.perf_counter() - t)
    finally:
        spmm_backward.WIDE_BLOCKS = saved
    for (name, kind), ts in times.items():
        ms = 1e3 * statistics.median(ts)
        fwd = 1e3 * statistics.median(times[(name, "forward")])
        print(json.dumps({"bench": "wide_backward", "N": N, "E": E, "H": H, "D": D, "dtype": name,
                          "kernel": kind if kind == "forward" else ("general" if kind == 0 else f"blocks{kind}"),
                          "threads": torch.get_num_threads(), "ms": round(ms, 3),
                          "over_forward": round(ms / fwd, 3)}), flush=True)


if __name__ == "__main__":
    main()
