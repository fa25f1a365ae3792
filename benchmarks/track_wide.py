"""Max/min passes that keep the winners, 64 or 128 columns a pass against 32, as JSON lines.

``mpgraph.ops._cpu.spmm.track_width`` gives the first pass width of a max/min gSpMM that records its winners
(a forward run for training): the first of ``spmm.TRACK_WIDE`` (128, 64) that the row holds (16-bit heads: that
divides the row) where the kernels compile for AVX-512, whose 32 vector registers hold 128 running fp32 extremes
and their 128 int32 slots, and none (passes of ``TRACK_BLOCK``, 32 columns) on AVX2. This times, round-robin in
one process and for each setting in ``--widths`` (``TRACK_WIDE`` set to it: widths joined by ``+``, ``0`` for
none), the public op on leaves that require gradients (``fwd_winners``: the forward that records winners, its
output dropped) and forward+backward (``fwdbwd``: from an upstream gradient of ones made once), after checking
that every setting gives the same output and gradients bit for bit. Ratios are against the first setting. Usage::

    python benchmarks/track_wide.py --graph large --dim 128
    python benchmarks/track_wide.py --graph uniform --dim 64 --ops copy_u_max,u_mul_e_max --widths 0,128+64
    python benchmarks/track_wide.py --graph uniform --dim 64 --heads 8 --ops u_mul_e_max,u_div_e_min
"""

import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from mpgraph.ops._cpu import spmm as S  # noqa: E402

from cpu_kernels import timed, with_grad  # noqa: E402
from max_parts import max_cases  # noqa: E402
from max_parts import operands as max_operands  # noqa: E402


def operands(heads):
    """The inputs of a named op: ``max_parts.operands``' except for ``u_mul_e``/``u_div_e``, which take node
    features and one weight per edge in [0.5, 1.5), or with ``heads`` GAT's layout: ``(N, heads, D // heads)``
    and ``(E, heads, 1)``."""
    def make(name, N, E, D, dtype, gen):
        if not name.startswith(("u_mul_e_", "u_div_e_")):
            return max_operands(name, N, E, D, dtype, gen)
        H = heads or 1
        x = torch.randn(N, D, generator=gen).to(dtype)
        return x.view(N, H, D // H) if heads else x, (torch.rand(E, H, 1, generator=gen) + 0.5).to(dtype)
    return make


def results(gi, fn, inputs):
    """Output and gradients of ``fn`` from an upstream gradient of ones."""
    leaves = [x.detach().requires_grad_(True) for x in inputs]
    out = fn(gi, *leaves)
    out.backward(torch.ones_like(out))
    return [out.detach()] + [x.grad for x in leaves]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="large", help="uniform, powerlaw or large")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--ops", default="copy_u_max,u_mul_e_max,copy_e_max,u_add_e_min")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--widths", default="0,128+64",
                   help="settings of TRACK_WIDE to compare, widths joined by '+' (0: 32-column passes only)")
    p.add_argument("--heads", type=int, default=0, help="u_mul_e/u_div_e in heads of D // heads columns")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=1, help="timings of each case, one after another")
    a = p.parse_args(argv)
    widths = a.widths.split(",")
    settings = {w: tuple(int(x) for x in w.split("+") if int(x)) for w in widths}
    base = S.TRACK_WIDE
    try:
        for gi, name, fn, dt_name, inputs in max_cases(a, operands(a.heads)):
            leaves = [x.detach().requires_grad_(True) for x in inputs]
            step = with_grad(lambda *t, fn=fn, gi=gi: fn(gi, *t), inputs)
            fns, ref = {}, None
            for w in widths:
                S.TRACK_WIDE = settings[w]
                got = results(gi, fn, inputs)
                if ref is not None and not all(torch.equal(x, y) for x, y in zip(got, ref)):
                    raise SystemExit(f"{name} {dt_name}: TRACK_WIDE={w} and {widths[0]} differ")
                ref = got if ref is None else ref

                def set_width(f, w=w):
                    def run():
                        S.TRACK_WIDE = settings[w]
                        return f()
                    return run
                fns[f"fwd_winners_{w}"] = set_width(lambda fn=fn, gi=gi, leaves=leaves: fn(gi, *leaves))
                fns[f"fwdbwd_{w}"] = set_width(step)
            for _ in range(a.rounds):
                ms = timed(fns, a.reps)
                line = {"bench": "track_wide", "graph": a.graph, "op": name, "dtype": dt_name, "D": a.dim,
                        "heads": a.heads, "reps": a.reps, "threads": torch.get_num_threads(), "widths": widths,
                        "default_widths": list(base)}
                line.update({f"{k}_ms": round(v, 2) for k, v in ms.items()})
                for w in widths[1:]:
                    for part in ("fwd_winners", "fwdbwd"):
                        line[f"{part}_{w}_over_{widths[0]}"] = round(ms[f"{part}_{w}"] / ms[f"{part}_{widths[0]}"], 3)
                print(json.dumps(line), flush=True)
    finally:
        S.TRACK_WIDE = base


if __name__ == "__main__":
    main()
