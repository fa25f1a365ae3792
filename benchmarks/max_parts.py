"""Where a max/min gSpMM's forward+backward goes: the forward alone, the forward that records winners, the backward.

A max/min forward run for training records each element's winner (``need_arg='slots'`` on the CPU), and the
backward reads those winners back; ``benchmarks/ops.py`` times only the forward without gradients and the
whole forward+backward, so it cannot tell a slow winner-recording forward from a slow backward. This times,
round-robin in one process, for each op and dtype:

* ``fwd_ms``: the public op on leaves without gradients (no winners recorded);
* ``fwd_winners_ms``: the same on leaves that require gradients (the autograd forward, winners recorded),
  its output dropped;
* ``fwdbwd_ms``: forward and backward from an upstream gradient of ones made once before the timing;

and the ratios ``fwd_winners_over_fwd``, ``bwd_over_fwd`` (``(fwdbwd - fwd_winners) / fwd``) and
``fwdbwd_over_fwd`` (the issue's <= 2.5x target). One JSON line per op and dtype. Usage::

    python benchmarks/max_parts.py --graph large --ops copy_u_max --dtypes float32,bfloat16
    python benchmarks/max_parts.py --graph uniform --dim 64 --ops copy_u_max,copy_e_max,u_add_e_min
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

from cpu_kernels import make_graph, timed, with_grad  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def operands(name, N, E, D, dtype, gen):
    """The inputs of the named op: node features ``(N, D)`` for ``copy_u``, edge features ``(E, D)`` for
    ``copy_e``, both for ``u_<op>_e`` (weights in [0.5, 1.5), so divisions stay finite)."""
    def x():
        return torch.randn(N, D, generator=gen).to(dtype)

    def w():
        return (torch.rand(E, D, generator=gen) + 0.5).to(dtype)

    if name.startswith("copy_u_"):
        return (x(),)
    if name.startswith("copy_e_"):
        return (w(),)
    return x(), w()


def measure(gi, fn, inputs, reps):
    """Median milliseconds of the three timings (module docstring), round-robin."""
    leaves = [x.detach().requires_grad_(True) for x in inputs]
    return timed({"fwd": lambda: fn(gi, *inputs), "fwd_winners": lambda: fn(gi, *leaves),
                  "fwdbwd": with_grad(lambda *t: fn(gi, *t), inputs)}, reps)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="uniform", help="uniform, powerlaw or large")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--ops", default="copy_u_max", help="comma-separated max/min op names of mpgraph.ops")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args(argv)
    for gi, name, fn, dt_name, inputs in max_cases(a):
        ms = measure(gi, fn, inputs, a.reps)
        line = {"graph": a.graph, "op": name, "dtype": dt_name, "D": a.dim, "reps": a.reps,
                "threads": torch.get_num_threads()}
        line.update({f"{k}_ms": round(v, 2) for k, v in ms.items()})
        line["fwd_winners_over_fwd"] = round(ms["fwd_winners"] / ms["fwd"], 3)
        line["bwd_over_fwd"] = round((ms["fwdbwd"] - ms["fwd_winners"]) / ms["fwd"], 3)
        line["fwdbwd_over_fwd"] = round(ms["fwdbwd"] / ms["fwd"], 3)
        print(json.dumps(line), flush=True)


def max_cases(a, make_operands=operands):
    """``(gi, name, fn, dtype_name, inputs)`` for each max/min op of ``a.ops`` (names in :mod:`mpgraph.ops`) and
    dtype of ``a.dtypes`` on the benchmark graph ``a.graph``, ``inputs`` from ``make_operands(name, N, E, a.dim,
    dtype, generator)`` (default :func:`operands`)."""
    g = make_graph(a.graph)
    gi = mpgraph.graph((g["src"], g["dst"]), num_nodes=g["N"])
    for name in a.ops.split(","):
        if not name.endswith(("_max", "_min")) or not hasattr(ops, name):
            raise SystemExit(f"expected max/min ops of mpgraph.ops such as copy_u_max, got {name!r}")
        for dt_name in a.dtypes.split(","):
            inputs = make_operands(name, g["N"], g["E"], a.dim, DTYPES[dt_name], torch.Generator().manual_seed(1))
            yield gi, name, getattr(ops, name), dt_name, inputs


if __name__ == "__main__":
    main()
