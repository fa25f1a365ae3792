"""mpgraph's default ``THP_MEM_ALLOC_ENABLE=1`` (torch's large CPU tensors advised as huge pages) against ``0``.

Each round runs two fresh processes, one per setting, in alternating order: ``import mpgraph`` (which sets the
variable when it is unset), then the features are made by torch (``randn``, as a layer's output would be), and
the forwards of copy_u sum, u_mul_e sum (one weight per edge) and copy_u max are timed (median of ``--reps``
after one warm-up). One JSON line per op, dtype and round: both medians, ``on_over_off``, and each process's
AnonHugePages. Usage::

    python benchmarks/thp_alloc.py                       # 10M-edge graph, D=128, fp32 and bf16, 2 rounds
    python benchmarks/thp_alloc.py --graph uniform --dim 64 --rounds 3
"""

import argparse
import json
import os

from _child import run_json

HERE = os.path.dirname(os.path.abspath(__file__))

_CHILD = r"""
import json, sys, time
sys.path.insert(0, {here!r})
import mpgraph
import torch
from mpgraph import ops
from cpu_kernels import make_graph

G = make_graph({graph!r})
N, E, D = G["N"], G["E"], {dim}
idx = mpgraph.graph((G["src"], G["dst"]), num_nodes=N)._op_index()
out = {{}}
for name in {dtypes!r}:
    dt = getattr(torch, name)
    x = torch.randn(N, D).to(dt)
    w = torch.rand(E, 1).to(dt)
    calls = {{"copy_u_sum": lambda: ops.gspmm(idx, "copy_lhs", "sum", x, None),
              "u_mul_e_sum": lambda: ops.gspmm(idx, "mul", "sum", x, w),
              "copy_u_max": lambda: ops.gspmm(idx, "copy_lhs", "max", x, None)}}
    for op, call in calls.items():
        ts = []
        with torch.no_grad():
            for _ in range({reps} + 1):
                t = time.perf_counter()
                call()
                ts.append((time.perf_counter() - t) * 1e3)
        ts = sorted(ts[1:])
        out[op + "/" + name] = ts[len(ts) // 2]
smaps = open("/proc/self/smaps_rollup").read().splitlines() if sys.platform.startswith("linux") else []
huge = [int(line.split()[1]) for line in smaps if line.startswith("AnonHugePages")]
print(json.dumps({{"ms": out, "anon_huge_pages_kb": huge[0] if huge else None}}))
"""


def child(setting, args):
    env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"}
    if setting is not None:
        env["THP_MEM_ALLOC_ENABLE"] = setting
    code = _CHILD.format(here=HERE, graph=args.graph, dim=args.dim, dtypes=args.dtypes.split(","), reps=args.reps)
    return run_json(code, env)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graph", default="large", help="uniform, powerlaw or large")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    for r in range(args.rounds):
        order = (None, "0") if r % 2 == 0 else ("0", None)
        got = {setting: child(setting, args) for setting in order}
        on, off = got[None], got["0"]
        for key in on["ms"]:
            op, dtype = key.split("/")
            print(json.dumps({"bench": "thp_alloc", "graph": args.graph, "D": args.dim, "op": op, "dtype": dtype,
                              "round": r, "first": "default" if order[0] is None else "0",
                              "on_ms": round(on["ms"][key], 1), "off_ms": round(off["ms"][key], 1),
                              "on_over_off": round(on["ms"][key] / off["ms"][key], 3),
                              "anon_huge_pages_kb": {"on": on["anon_huge_pages_kb"],
                                                     "off": off["anon_huge_pages_kb"]}}),
                  flush=True)


if __name__ == "__main__":
    main()
