"""Streaming stores against plain stores for the ``(E, F)`` results the CPU kernels write once, row by row at edge
ids: each kernel with ``nontemporal=True`` against the same kernel with ``nontemporal=False``, round-robin in one
process, as JSON lines.

Kernels (``--kernels``):

* ``sddmm``: an elementwise gSDDMM (``_cpu.sddmm.gsddmm``, ``u_add_v``, ``u_mul_v``, ``u_mul_e``): streaming takes
  ``sddmm.streaming_kernel``, plain the general edge body;
* ``fused``: the fused ``u_mul_e``/``u_div_e`` sum backward with elementwise weights
  (``_cpu.spmm_backward.mul_sum_backward``, ``H = F`` heads of one column): both gradients, the weights' written
  at their edge ids;
* ``winners``: the edge pass of a ``u_mul_e``/``u_div_e`` max with elementwise weights
  (``_cpu.scatter.edge_winners(..., picked=True)``), after one forward that records the winners.

Both results are checked to be the same bits before the timing. The default ``nontemporal=None`` streams only
results larger than the L3; this benchmark forces both sides. Usage::

    python benchmarks/streaming.py                              # uniform graph, D = 64 and 128, fp32 and bf16
    python benchmarks/streaming.py --kernels winners --dims 64 --dtypes bfloat16
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

from mpgraph import graph  # noqa: E402
from mpgraph._index import as_index  # noqa: E402
from mpgraph.ops._broadcast import infer_bcast  # noqa: E402
from mpgraph.ops._checks import reversed_index  # noqa: E402
from mpgraph.ops._cpu import _backend  # noqa: E402
from mpgraph.ops._cpu.scatter import edge_winners  # noqa: E402
from mpgraph.ops._cpu.sddmm import gsddmm  # noqa: E402
from mpgraph.ops._cpu.spmm_backward import mul_sum_backward  # noqa: E402

from cpu_kernels import make_graph, timed  # noqa: E402


def cases(kernel, index, N, E, D, dtype):
    """``{name: fn(nontemporal)}`` for one kernel, dims and dtype."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(N, D, generator=gen).to(dtype)
    w = (torch.rand(E, D, generator=gen) + 0.5).to(dtype)
    G = torch.randn(N, D, generator=gen).to(dtype)
    out = {}
    if kernel == "sddmm":
        indptr, indices, eid = index.csc()
        y = torch.randn(N, D, generator=gen).to(dtype)
        for op, rt, rhs in (("add", "v", y), ("mul", "v", y), ("mul", "e", w)):
            out[f"u_{op}_{rt}"] = (lambda nt, op=op, rt=rt, rhs=rhs:
                                   gsddmm(op, indptr, indices, eid, x, rhs, "u", rt, nontemporal=nt))
    elif kernel == "fused":
        indptr, src, eid = _backend._csc(reversed_index(index))
        for op in ("mul", "div"):
            out[f"u_{op}_e_sum backward"] = (
                lambda nt, op=op: mul_sum_backward(indptr, src, eid, G.view(N, D, 1), x.view(N, D, 1), w,
                                                   divide=op == "div", nontemporal=nt))
    else:
        indptr, src, eid = _backend._csc(index)
        for op in ("mul", "div"):
            bc = infer_bcast(op, x.shape[1:], w.shape[1:], x.device)
            _, win, _ = _backend.spmm(index, op, "max", x, w, bc, dtype, need_arg="slots")
            hub_row = _backend._hub_row(index, win)
            out[f"u_{op}_e_max edge pass"] = (
                lambda nt, op=op, win=win, hub_row=hub_row: edge_winners(
                    indptr, eid, G, win, out_dtype=dtype, op=op, src=src, lhs=x, rhs=w, picked=True,
                    hub_row=hub_row, nontemporal=nt))
    return out


def same(a, b):
    """Whether two results (tensors or tuples of them) hold the same bits."""
    if isinstance(a, tuple):
        return all(same(x, y) for x, y in zip(a, b))
    return torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="uniform", help="uniform, powerlaw or large")
    p.add_argument("--kernels", default="sddmm,fused,winners")
    p.add_argument("--dims", default="64,128")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--reps", type=int, default=9)
    a = p.parse_args(argv)
    g = make_graph(a.graph)
    index = as_index(graph((g["src"], g["dst"]), num_nodes=g["N"]))
    for kernel in a.kernels.split(","):
        for D in (int(d) for d in a.dims.split(",")):
            for name in a.dtypes.split(","):
                for what, fn in cases(kernel, index, g["N"], g["E"], D, getattr(torch, name)).items():
                    if not same(fn(False), fn(True)):
                        raise SystemExit(f"{what} {name} D={D}: streaming and plain stores differ")
                    ms = timed({"plain": lambda fn=fn: fn(False), "streaming": lambda fn=fn: fn(True)}, a.reps)
                    print(json.dumps({"bench": "streaming", "kernel": kernel, "what": what, "graph": a.graph,
                                      "N": g["N"], "E": g["E"], "D": D, "dtype": name, "reps": a.reps,
                                      "threads": torch.get_num_threads(), "plain_ms": round(ms["plain"], 2),
                                      "streaming_ms": round(ms["streaming"], 2),
                                      "streaming_over_plain": round(ms["streaming"] / ms["plain"], 3)}), flush=True)


if __name__ == "__main__":
    main()
