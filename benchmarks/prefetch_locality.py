"""The software-prefetch locality hint (``MPGRAPH_PREFETCH_LOCALITY``) against each other, op by op.

The hint is compiled into the CPU kernels, so each setting runs in a child process of its own; the children
alternate (``--rounds`` rounds of every setting, in turn) so that the machine's drift lands on all of them.
Each child times the forward (and for ``u_mul_e_bwd`` the fused backward alone) of a few gSpMM/gSDDMM ops
round-robin and prints one JSON line of medians; the parent prints, per op and dtype, one JSON line with the
median over rounds of each setting and its ratio to the ``--baseline`` setting. Usage::

    python benchmarks/prefetch_locality.py                          # 10M-edge graph, D=128, settings 3 and 2
    python benchmarks/prefetch_locality.py --graph uniform --dim 64 --settings 3,2,1
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def child(graph, D, reps):
    import torch

    sys.path.insert(0, os.path.dirname(HERE))
    sys.path.insert(0, HERE)
    import mpgraph
    from cpu_kernels import backward_structures, make_graph, timed  # (round-robin median timing)
    from mpgraph import ops
    from mpgraph.ops._cpu import _core
    from mpgraph.ops._cpu import spmm_backward

    g = make_graph(graph)
    N, E = g["N"], g["E"]
    gi = mpgraph.graph((g["src"], g["dst"]), num_nodes=N)
    rptr, rdst, rev, inverse = backward_structures(g["src"], g["dst"], N)   # the fused backward's structure
    gen = torch.Generator().manual_seed(0)
    x32, G32 = torch.randn(N, D, generator=gen), torch.randn(N, D, generator=gen)
    w32, s32 = torch.rand(E, 1, generator=gen) + 0.5, torch.randn(E, 4, generator=gen)
    fns = {}
    for name in ("float32", "bfloat16"):
        dt = getattr(torch, name)
        x, G, w, s = x32.to(dt), G32.to(dt), w32.to(dt), s32.to(dt)
        fns[("copy_u_sum", name)] = lambda x=x: ops.copy_u_sum(gi, x)
        fns[("u_mul_e_sum", name)] = lambda x=x, w=w: ops.u_mul_e_sum(gi, x, w)
        fns[("copy_u_max", name)] = lambda x=x: ops.copy_u_max(gi, x)
        fns[("u_dot_v", name)] = lambda x=x: ops.u_dot_v(gi, x, x)
        fns[("edge_softmax", name)] = lambda s=s: ops.edge_softmax(gi, s)
        fns[("u_mul_e_bwd", name)] = lambda x=x, w=w, G=G: spmm_backward.mul_sum_backward(
            rptr, rdst, rev, G.view(N, 1, D), x.view(N, 1, D), w, eid_inverse=inverse)
    with torch.no_grad():
        ms = timed(fns, reps)
    print(json.dumps({"locality": _core.PREFETCH_LOCALITY, "ms": {f"{op}/{dt}": v for (op, dt), v in ms.items()}}))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graph", default="large", help="uniform, powerlaw or large")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--settings", default="3,2", help="MPGRAPH_PREFETCH_LOCALITY values, comma-separated")
    p.add_argument("--baseline", type=int, default=3)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args.graph, args.dim, args.reps)
    settings = [int(v) for v in args.settings.split(",")]
    if args.baseline not in settings:
        raise SystemExit(f"--baseline {args.baseline} must be one of --settings {settings}")
    runs = {s: [] for s in settings}
    for _ in range(args.rounds):
        for s in settings:
            env = dict(os.environ, MPGRAPH_PREFETCH_LOCALITY=str(s))
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--graph", args.graph,
                                   "--dim", str(args.dim), "--reps", str(args.reps)],
                                  env=env, capture_output=True, text=True)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if proc.returncode != 0 or not lines:
                raise SystemExit(f"the child for locality {s} failed:\n{proc.stderr[-3000:]}")
            runs[s].append(json.loads(lines[-1])["ms"])
    import torch

    for key in runs[settings[0]][0]:
        op, dtype = key.split("/")
        med = {s: statistics.median(r[key] for r in runs[s]) for s in settings}
        print(json.dumps({"bench": "prefetch_locality", "graph": args.graph, "D": args.dim, "op": op,
                          "dtype": dtype, "threads": torch.get_num_threads(), "rounds": args.rounds,
                          "ms": {str(s): round(v, 2) for s, v in med.items()},
                          "over_baseline": {str(s): round(v / med[args.baseline], 3) for s, v in med.items()}}),
              flush=True)


if __name__ == "__main__":
    main()
