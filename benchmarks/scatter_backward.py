"""``copy_u_max``'s backward as a scatter by destination, against the shipped gather by source, as JSON lines.

The shipped backward (``scatter.gather_winners``) walks each source's out-edges and reads, per edge, the
destination's gradient row and its slot-winner row: two random rows per edge. This script times the other
order, which is not in the package: walk the destinations in order (their gradient and winner rows stream),
and for each column add the gradient to the row of the source whose in-edge won it,
``out[src[indptr[v] + winners[v, f]], f] += grad[v, f]``. Its random accesses are the written source rows,
only the lines holding a won column. Threads split the columns (no two threads write one element, and each
element is summed in destination order, the order the gather sums it in, so the results are bitwise equal);
the result is zeroed first, and for 16-bit gradients the sums stay in float32 and are rounded once at the
end. ``--distances`` prefetches the written lines of the destination that many rows ahead (0: none).

Each line gives the medians of the plain forward (``fwd``), the shipped gather (``gather``) and the scatter
with each column split and distance (``scatter_<parts>_pf<distance>``), round-robin in one process, after a
bitwise comparison of every variant with the gather. Usage::

    python benchmarks/scatter_backward.py --graph large --dtypes float32,bfloat16
"""

import argparse
import json
import os
import sys

import torch
from numba import njit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from mpgraph.ops._cpu._core import atomic_fetch_add, kernel_view, load, prefetch, run_parallel  # noqa: E402
from mpgraph.ops._cpu.scatter import gather_winners  # noqa: E402
from mpgraph.ops._cpu.spmm import gspmm  # noqa: E402

from cpu_kernels import max_structures, max_winners, timed  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@njit(nogil=True)
def _scatter(counter, parts, pf, indptr, src, win, grad, out, D):
    """Part ``p`` of ``parts`` (claimed from ``counter``) adds columns ``[p D / parts, (p + 1) D / parts)``."""
    N = indptr.size - 1
    p = atomic_fetch_add(counter, 0, 1)
    while p < parts:
        c0, c1 = p * D // parts, (p + 1) * D // parts
        for v in range(N):
            if pf > 0 and v + pf < N:       # the written lines of the destination pf rows ahead
                for k in range(indptr[v + pf], indptr[v + pf + 1]):
                    for c in range(c0, c1, 16):
                        prefetch(out, src[k] * D + c)
            base = indptr[v]
            for c in range(c0, c1):
                s = win[v * D + c]
                if s >= 0:
                    i = src[base + s] * D + c
                    out[i] += load(grad, v * D + c)
        p = atomic_fetch_add(counter, 0, 1)


@njit(nogil=True)
def _zero(counter, parts, out):
    p = atomic_fetch_add(counter, 0, 1)
    while p < parts:
        out[out.size * p // parts:out.size * (p + 1) // parts] = 0
        p = atomic_fetch_add(counter, 0, 1)


def scatter_backward(indptr_c, src_c, winners, grad, parts, pf):
    """The source rows' gradient of ``copy_u`` max from the forward's slot winners, in ``grad``'s dtype."""
    N, D = grad.shape
    out = torch.empty(N, D)
    flat = out.view(-1).numpy()
    threads = torch.get_num_threads()
    run_parallel(_zero, threads, 8 * threads, flat)
    run_parallel(_scatter, min(threads, parts), parts, pf, indptr_c.numpy(), src_c.numpy(),
                 winners.reshape(-1).numpy(), kernel_view(grad.reshape(-1)), flat, D)
    return out if grad.dtype == torch.float32 else out.to(grad.dtype)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="large", help="uniform, powerlaw or large")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--parts", default="2,4", help="column splits to time")
    p.add_argument("--distances", default="0,8,24", help="prefetch distances in destination rows")
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args(argv)
    s = max_structures(a.graph)
    indptr_c, src_c, eid_c, indptr, dst, longest = (s[k] for k in ("indptr_c", "src_c", "eid_c", "indptr", "dst",
                                                                      "longest"))
    gen = torch.Generator().manual_seed(0)
    D = a.dim
    for name in a.dtypes.split(","):
        dt = DTYPES[name]
        x, winners, grad, slot_of = max_winners(s, D, dt, gen)
        ref = gather_winners(indptr, dst, slot_of, grad, winners)
        fns = {"fwd": lambda x=x, dt=dt: gspmm("copy_lhs", "max", indptr_c, src_c, eid_c, x, None, out_dtype=dt,
                                               max_row=longest),
               "gather": lambda G=grad, w=winners, s=slot_of: gather_winners(indptr, dst, s, G, w)}
        for parts in (int(v) for v in a.parts.split(",")):
            for pf in (int(v) for v in a.distances.split(",")):
                def fn(parts=parts, pf=pf, G=grad, w=winners):
                    return scatter_backward(indptr_c, src_c, w, G, parts, pf)

                if not torch.equal(fn(), ref):
                    raise SystemExit(f"scatter with {parts} parts, distance {pf}: not bitwise equal to the gather")
                fns[f"scatter_{parts}_pf{pf}"] = fn
        ms = timed(fns, a.reps)
        print(json.dumps({"bench": "scatter_backward", "graph": a.graph, "D": D, "dtype": name,
                          "winners": str(winners.dtype).removeprefix("torch."), "reps": a.reps,
                          "threads": torch.get_num_threads(), "ms": {k: round(v, 1) for k, v in ms.items()},
                          "over_gather": {k: round(v / ms["gather"], 3) for k, v in ms.items()}}), flush=True)


if __name__ == "__main__":
    main()
