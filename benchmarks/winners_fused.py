"""Fused against separate max/min product backward (``u_mul_e``/``u_div_e`` with slot winners), in one process.

The CPU backend computes both gradients of a max/min product in one gather over each source's out-edges
(the dispatch op ``winners_product_backward``); the alternative is the node gather (``gather_winners``)
followed by the edge pass (``edge_winners``), which gathers the source rows of ``x`` a second time. This
times a forward+backward through :func:`mpgraph.ops.gspmm` with each (the separate one by swapping the
dispatch entry point for the two calls it replaces), round-robin, plus a forward under ``torch.no_grad``,
and checks that both give the same gradients. One JSON line per op, dtype and edge-operand shape.

With an elementwise edge operand (``--heads`` equal to ``--dim``: ``(N, F, 1)`` against ``(E, F, 1)``) the
op runs two passes since the twentieth session: an edge pass in the forward's order that also picks
``G * w`` at each winner, then a copy's gather. The run then also times the one source-order pass it replaced
(``one_pass``, the CPU kernel called directly) and checks that the two agree bit for bit.

Usage::

    python benchmarks/winners_fused.py                      # 8 heads of 8: (N, 8, 8) against (E, 8, 1)
    python benchmarks/winners_fused.py --heads 1 --reps 9   # one weight per edge: (N, 64) against (E, 1)
    python benchmarks/winners_fused.py --order sorted       # edges sorted by destination (default: random)
    python benchmarks/winners_fused.py --heads 64 --order sorted    # elementwise: (N, 64, 1) against (E, 64, 1)
"""

import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from mpgraph import ops  # noqa: E402
from mpgraph._index import Index  # noqa: E402
from mpgraph.ops import _dispatch  # noqa: E402
from mpgraph.ops._cpu._backend import _csr_slots  # noqa: E402
from mpgraph.ops._cpu.scatter import gather_winners  # noqa: E402

from cpu_kernels import timed  # noqa: E402  (round-robin median timing)

FUSED = _dispatch.winners_product_backward


def separate(index, grad, winners, op, lhs, rhs, lhs_dtype, rhs_dtype):
    """The two passes the fused op replaces, each through the dispatch (so on the CPU kernels)."""
    return (_dispatch.gather_winners(index, grad, winners, lhs_dtype, op, rhs),
            _dispatch.edge_winners(index, grad, winners, rhs_dtype, op, lhs, rhs if op == "div" else None,
                                   cols=rhs.shape[1]))


def one_pass(index, grad, winners, op, lhs, rhs, lhs_dtype, rhs_dtype):
    """Both gradients in one pass over each source's out-edges (the CPU kernel of an elementwise operand up to
    the nineteenth session): the edge operand and its gradient at the edge ids of that order."""
    indptr, dst, eid = index.csr()
    return gather_winners(indptr, dst, _csr_slots(index, winners.dtype), grad, winners, out_dtype=lhs_dtype, op=op,
                          eid=eid, other=rhs, lhs=lhs, edge_dtype=rhs_dtype)


def measure(index, op, reduce, x0, w0, g, reps, elementwise=False):
    """Median ms of the forward, and of forward+backward separate and fused (and, for an elementwise operand,
    by the one source pass); the last gradients of each."""
    grads = {}

    def step(kind, fn):
        def run():
            _dispatch.winners_product_backward = fn
            try:
                x, w = x0.detach().requires_grad_(), w0.detach().requires_grad_()   # no copies to time
                ops.gspmm(index, op, reduce, x, w).backward(g)
                grads[kind] = (x.grad, w.grad)
            finally:
                _dispatch.winners_product_backward = FUSED
        return run

    def forward():
        with torch.no_grad():
            ops.gspmm(index, op, reduce, x0, w0)

    fns = {"fwd": forward, "separate": step("separate", separate), "fused": step("fused", FUSED)}
    if elementwise:
        fns["one_pass"] = step("one_pass", one_pass)
    return timed(fns, reps), grads


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=100_000)
    p.add_argument("--edges", type=int, default=2_000_000)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--heads", type=int, default=8, help="columns of the edge operand (divides --dim)")
    p.add_argument("--order", default="random", choices=("random", "sorted"))
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--reps", type=int, default=7)
    args = p.parse_args()
    if args.dim % args.heads:
        p.error(f"--heads must divide --dim, got {args.heads} and {args.dim}")
    N, E, H, D = args.nodes, args.edges, args.heads, args.dim // args.heads
    gen = torch.Generator().manual_seed(0)
    src, dst = torch.randint(0, N, (E,), generator=gen), torch.randint(0, N, (E,), generator=gen)
    if args.order == "sorted":
        order = torch.argsort(dst * N + src)
        src, dst = src[order], dst[order]
    index = Index.from_coo(src, dst, N, N)
    for name in args.dtypes.split(","):
        dtype = getattr(torch, name)
        for op, reduce in (("mul", "max"), ("div", "min")):
            x0 = torch.randn(N, H, D, generator=gen).to(dtype)
            w0 = (torch.rand(E, H, 1, generator=gen) + 0.5).to(dtype)
            g = torch.randn(N, H, D, generator=gen).to(dtype)
            elementwise = D == 1
            ms, grads = measure(index, op, reduce, x0, w0, g, args.reps, elementwise)
            for a, b in zip(grads["fused"], grads["separate"]):    # the same winners, sums in another order
                torch.testing.assert_close(a.float(), b.float(), rtol=2e-2, atol=2e-2)
            extra = {}
            if elementwise:     # the same float32 terms summed in the same order
                if not all(torch.equal(a, b) for a, b in zip(grads["fused"], grads["one_pass"])):
                    raise SystemExit(f"u_{op}_e_{reduce} {name}: the two passes differ from the one pass")
                extra = {"one_pass_ms": round(ms["one_pass"], 3),
                         "fused_over_one_pass": round(ms["fused"] / ms["one_pass"], 3),
                         "one_pass_over_fwd": round(ms["one_pass"] / ms["fwd"], 3)}
            print(json.dumps({"bench": "winners_fused", "op": f"u_{op}_e_{reduce}", "N": N, "E": E, "H": H, "D": D,
                              "order": args.order, "dtype": name, "threads": torch.get_num_threads(),
                              "fwd_ms": round(ms["fwd"], 3), "separate_ms": round(ms["separate"], 3),
                              "fused_ms": round(ms["fused"], 3),
                              "fused_over_separate": round(ms["fused"] / ms["separate"], 3),
                              "separate_over_fwd": round(ms["separate"] / ms["fwd"], 3),
                              "fused_over_fwd": round(ms["fused"] / ms["fwd"], 3), **extra}), flush=True)


if __name__ == "__main__":
    main()
