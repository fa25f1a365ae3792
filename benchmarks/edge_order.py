"""Fused ``u_mul_e`` sum backward: weights reached through the edge ids in place, or moved into slot order.

The fused backward (``mpgraph.ops._cpu.spmm_backward.mul_sum_backward``) walks the reversed graph, whose
slots hold scattered edge ids. Each kernel either reads ``w[eid[k]]`` and writes ``grad_w[eid[k]]`` in place
with a software prefetch (``in_place``), or takes the weights moved into slot order by a parallel scatter and
puts the gradient back by another (``slot_order``); ``spmm_backward._slot_order`` picks per kernel. This times
both for each ``--shapes`` entry ``HxD`` (``H`` heads of ``D`` columns, one weight per edge and head),
round-robin in one process, after checking that they give the same bits. One JSON line per shape and dtype:
the medians, ``in_place_over_slot_order``, and the route the library takes.

``--kernels`` answers the other choice of that pass instead: the kernel ``_kernel_key`` picks for the shape
(the register rows) against the general row loop, each on the library's weight route, results
compared within the dtype's rounding first; ``chosen_over_general`` is the ratio. Usage::

    python benchmarks/edge_order.py                                  # uniform graph, N=100k, E=2M
    python benchmarks/edge_order.py --graph large --shapes 1x128,8x8 --reps 5
    python benchmarks/edge_order.py --kernels --shapes 2x64,4x32,8x16
"""

import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from mpgraph.ops._cpu import spmm_backward  # noqa: E402

from cpu_kernels import backward_structures, make_graph, timed  # noqa: E402  (round-robin median timing)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _shape(text):
    try:
        H, D = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise SystemExit(f"expected shapes as HxD (e.g. 8x8), got {text!r}") from None
    if H < 1 or D < 1:
        raise SystemExit(f"expected positive H and D, got {text!r}")
    return H, D


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graph", default="uniform", help="uniform, powerlaw or large")
    p.add_argument("--shapes", default="1x64,1x128,8x8,4x16,8x16,1x256", help="HxD entries, comma-separated")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    p.add_argument("--kernels", action="store_true",
                   help="time the kernel picked for each shape against the general row loop instead")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    shapes = [_shape(s) for s in args.shapes.split(",")]
    g = make_graph(args.graph)
    indptr, src, eid, inverse = backward_structures(g["src"], g["dst"], g["N"])
    if eid is None:
        raise SystemExit("the reversed graph's slots are in edge-id order: there is nothing to compare")
    N, E = g["N"], g["E"]
    decide = spmm_backward._slot_order
    gen = torch.Generator().manual_seed(0)
    for dname in args.dtypes.split(","):
        dtype = DTYPES[dname]
        for H, D in shapes:
            x = torch.randn(N, H, D, generator=gen).to(dtype)
            G = torch.randn(N, H, D, generator=gen).to(dtype)
            w = (torch.rand(E, H, generator=gen) + 0.5).to(dtype)

            def run(slot_order, G=G, x=x, w=w):
                spmm_backward._slot_order = lambda W, SEG, H, nbytes: slot_order
                try:
                    return spmm_backward.mul_sum_backward(indptr, src, eid, G, x, w, eid_inverse=inverse)
                finally:
                    spmm_backward._slot_order = decide

            if args.kernels:
                _kernels(args, N, E, H, D, dname, lambda G=G, x=x, w=w: spmm_backward.mul_sum_backward(
                    indptr, src, eid, G, x, w, eid_inverse=inverse))
                continue
            a, b = run(False), run(True)
            if not (torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])):
                raise SystemExit(f"{H}x{D} {dname}: the two routes disagree")
            ms = timed({"in_place": lambda: run(False), "slot_order": lambda: run(True)}, args.reps)
            W, SEG = spmm_backward._kernel_key(H, D)
            print(json.dumps({
                "bench": "edge_order", "graph": args.graph, "N": N, "E": E, "H": H, "D": D, "dtype": dname,
                "threads": torch.get_num_threads(), "kernel": list(spmm_backward._kernel_key(H, D)),
                "route_taken": "slot_order" if decide(W, SEG, H, w.numel() * w.element_size()) else "in_place",
                "in_place_ms": round(ms["in_place"], 2), "slot_order_ms": round(ms["slot_order"], 2),
                "in_place_over_slot_order": round(ms["in_place"] / ms["slot_order"], 3)}), flush=True)


def _kernels(args, N, E, H, D, dname, call):
    """Time ``call`` (the fused backward of one shape) with the kernel the library picks and with the general
    row loop, round-robin; one JSON line."""
    choose = spmm_backward._kernel_key

    def run(general):
        spmm_backward._kernel_key = (lambda H_, D_: (0, 0)) if general else choose
        try:
            return call()
        finally:
            spmm_backward._kernel_key = choose

    chosen, general = run(False), run(True)
    tol = 1e-4 if dname == "float32" else 3e-2
    for a, b in zip(chosen, general):
        if not torch.allclose(a.float(), b.float(), rtol=tol, atol=tol * max(1.0, b.float().abs().max().item())):
            raise SystemExit(f"{H}x{D} {dname}: the chosen kernel and the general loop disagree")
    ms = timed({"chosen": lambda: run(False), "general": lambda: run(True)}, args.reps)
    print(json.dumps({
        "bench": "backward_kernel", "graph": args.graph, "N": N, "E": E, "H": H, "D": D, "dtype": dname,
        "threads": torch.get_num_threads(), "kernel": list(choose(H, D)),
        "chosen_ms": round(ms["chosen"], 2), "general_ms": round(ms["general"], 2),
        "chosen_over_general": round(ms["chosen"] / ms["general"], 3)}), flush=True)


if __name__ == "__main__":
    main()
