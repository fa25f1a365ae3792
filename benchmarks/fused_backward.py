"""The fused ``u_mul_e`` / ``u_div_e`` sum backward against the composed kernels, in one process.

The op layer sends the backward of a weighted sum/mean (``u_mul_e``, ``u_div_e``) to one fused pass over the
reversed graph (``spmm_mul_backward``) when the weights are one scalar per edge or per edge and head, or, on
the CPU, elementwise rows of up to ``mpgraph.ops.spmm.SMALL_FUSED_ELEMENTWISE`` columns or of the widths in
``FUSED_ELEMENTWISE`` (more of them under a mean, whose ``1 / in-degree`` the fused pass applies itself); to a
gSpMM plus a gSDDMM otherwise (``mpgraph.ops.spmm._weight_heads`` decides). This benchmark times both
routes for the same call, round-robin, by switching that decision off for the composed one, so that the
choice is measured, not assumed. Operands: ``e1`` one weight per edge against ``(N, D)``; ``eh`` GAT's
``(E, H, 1)`` against ``(N, H, D // H)``; ``e<F>`` elementwise ``(E, F)`` against ``(N, F)``. Weights in
[0.5, 1.5). One JSON line per case: medians of the forward alone and of forward+backward on each route,
and the ratios ``fused_over_composed`` and ``*_over_fwd``; ``route_taken`` is the op layer's choice
(elementwise weights are timed on the fused pass as ``H = F`` heads of one column whether or not the op
layer takes that route).
Usage::

    python benchmarks/fused_backward.py                                   # div on e1/eh, mul+div elementwise
    python benchmarks/fused_backward.py --ops mul --operands e1,eh --reduces sum --reps 9
    python benchmarks/fused_backward.py --operands e4,e16,e32,e64 --dtypes float32,bfloat16,float16
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
import mpgraph.ops.spmm as spmm_module  # noqa: E402
from mpgraph import ops  # noqa: E402

from cpu_kernels import make_graph, timed  # noqa: E402  (round-robin median timing)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _operands(kind, N, E, D, heads, dtype, gen):
    """``(x, w)`` of one operand kind (see the module docstring)."""
    if kind == "e1":
        x, w = torch.randn(N, D, generator=gen), torch.rand(E, 1, generator=gen)
    elif kind == "eh":
        x, w = torch.randn(N, heads, D // heads, generator=gen), torch.rand(E, heads, 1, generator=gen)
    elif kind.startswith("e") and kind[1:].isdigit():
        F = int(kind[1:])
        x, w = torch.randn(N, F, generator=gen), torch.rand(E, F, generator=gen)
    else:
        raise SystemExit(f"unknown operand kind {kind!r}; expected e1, eh or e<F> (e.g. e8)")
    return x.to(dtype), (w + 0.5).to(dtype)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graph", default="uniform", help="uniform, powerlaw or large")
    p.add_argument("--dim", type=int, default=64, help="D of the e1 and eh kinds")
    p.add_argument("--heads", type=int, default=8, help="H of the eh kind (must divide --dim)")
    p.add_argument("--ops", default="mul,div")
    p.add_argument("--operands", default="e1,eh,e2,e8,e15")
    p.add_argument("--reduces", default="sum,mean")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.dim % args.heads:
        raise SystemExit(f"--heads {args.heads} must divide --dim {args.dim}")
    g = make_graph(args.graph)
    gi = mpgraph.graph((g["src"], g["dst"]), num_nodes=g["N"])
    N, E = g["N"], g["E"]
    decide = spmm_module._weight_heads
    gen = torch.Generator().manual_seed(0)
    for dname in args.dtypes.split(","):
        dtype = DTYPES[dname]
        for kind in args.operands.split(","):
            x, w = _operands(kind, N, E, args.dim, args.heads, dtype, gen)
            for op in args.ops.split(","):
                for red in args.reduces.split(","):
                    fn = getattr(ops, f"u_{op}_e_{red}")

                    def fwd(fn=fn, x=x, w=w):
                        fn(gi, x, w)

                    def fwdbwd(fused, fn=fn, x=x, w=w):
                        spmm_module._weight_heads = _forced_fused(decide) if fused else (lambda bcast, *a, **k: None)
                        try:
                            a, b = x.detach().requires_grad_(), w.detach().requires_grad_()
                            out = fn(gi, a, b)
                            out.backward(torch.ones_like(out))
                        finally:
                            spmm_module._weight_heads = decide

                    ms = timed({"fwd": fwd, "composed": lambda f=fwdbwd: f(False), "fused": lambda f=fwdbwd: f(True)},
                               args.reps)
                    print(json.dumps({
                        "bench": "fused_backward", "op": f"u_{op}_e_{red}", "operands": kind, "graph": args.graph,
                        "N": N, "E": E, "x_shape": list(x.shape[1:]), "w_shape": list(w.shape[1:]), "dtype": dname,
                        "threads": torch.get_num_threads(),
                        "route_taken": ("fused" if decide(_bcast(op, x, w), op, dtype, mean=red == "mean") is not None
                                        else "composed"),
                        "fwd_ms": round(ms["fwd"], 2), "fwdbwd_composed_ms": round(ms["composed"], 2),
                        "fwdbwd_fused_ms": round(ms["fused"], 2),
                        "fused_over_composed": round(ms["fused"] / ms["composed"], 3),
                        "composed_over_fwd": round(ms["composed"] / ms["fwd"], 2),
                        "fused_over_fwd": round(ms["fused"] / ms["fwd"], 2)}), flush=True)


def _forced_fused(decide):
    """The op layer's decision, widened to send elementwise weights ``(E, F)`` to the fused pass too (as
    ``H = F`` heads of one column), so that the route it refuses them is timed as well."""
    def heads(bcast, *args, **kwargs):
        h = decide(bcast, *args, **kwargs)
        if h is None and bcast.lhs_shape == bcast.rhs_shape == bcast.out_shape and len(bcast.out_shape) > 0:
            return bcast.F
        return h

    return heads


def _bcast(op, x, w):
    """The op layer's broadcast of ``x`` against ``w`` (what the route decision looks at)."""
    from mpgraph.ops._broadcast import infer_bcast

    return infer_bcast(op, tuple(x.shape[1:]), tuple(w.shape[1:]), x.device)


if __name__ == "__main__":
    main()
