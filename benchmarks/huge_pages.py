"""Huge-page advice on the CPU kernels' large outputs, on against off, in one process.

mpgraph's CPU kernels advise their outputs of 32 MiB or more as transparent huge pages
(``MPGRAPH_HUGE_PAGES``, read at every call; see docs/performance.rst). This times the public ops
forward and forward+backward with the advice on and off, alternating the two settings call by call
in the same process, so a busy machine slows both alike. The CPU buffer cache is off while it runs
(``MPGRAPH_CPU_CACHE_MB=0``): a reused buffer takes no page faults at all, so with the cache the
advice would only be timed on the first call (``benchmarks/buffer_cache.py`` times the cache).
Besides the wall-clock medians it reports the process CPU time (all threads) of each call, which time
stolen by other virtual machines on the host does not inflate.

One JSON line per op x dtype::

    {"bench": "huge_pages", "graph": "uniform", "op": "u_add_e_max", "D": 64, "dtype": "float32",
     "threads": 2, "rounds": 7, "fwd_ms": {"off": ..., "on": ...}, "fwdbwd_ms": {...},
     "fwd_cpu_ms": {...}, "fwdbwd_cpu_ms": {...}, "on_over_off": {"fwd": ..., "fwdbwd": ...},
     "fwdbwd_over_fwd": {"off": ..., "on": ...}}

Usage::

    python benchmarks/huge_pages.py --graph uniform --dims 64 --rounds 7
    python benchmarks/huge_pages.py --graph large --dims 128 --ops copy_u_sum,copy_u_max --rounds 5
    python benchmarks/huge_pages.py --graph large --dims 4 --ops edge_softmax     # D is the heads here
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mpgraph  # noqa: E402
from mpgraph import ops  # noqa: E402

from cpu_kernels import make_graph  # noqa: E402

OPS = ("copy_u_sum", "copy_u_mean", "copy_u_max", "u_mul_e_sum", "u_dot_v", "u_add_e_max", "copy_e_max",
       "edge_softmax")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
SWITCH = "MPGRAPH_HUGE_PAGES"
CACHE = "MPGRAPH_CPU_CACHE_MB"


def operands(op, N, E, D, dtype, gen):
    """``(public op, operand tuple)`` for one line."""
    def node():
        return torch.randn(N, D, generator=gen).to(dtype)

    def edge(width):
        return torch.randn(E, width, generator=gen).to(dtype)

    table = {
        "copy_u_sum": (ops.copy_u_sum, lambda: (node(),)),
        "copy_u_mean": (ops.copy_u_mean, lambda: (node(),)),
        "copy_u_max": (ops.copy_u_max, lambda: (node(),)),
        "u_mul_e_sum": (ops.u_mul_e_sum, lambda: (node(), edge(1))),
        "u_dot_v": (ops.u_dot_v, lambda: (node(), node())),
        "u_add_e_max": (ops.u_add_e_max, lambda: (node(), edge(D))),
        "copy_e_max": (ops.copy_e_max, lambda: (edge(D),)),
        "edge_softmax": (mpgraph.nn.functional.edge_softmax, lambda: (edge(D).unsqueeze(-1),)),  # D heads
    }
    fn, make = table[op]
    return fn, make()


def one_call(g, fn, inputs, backward):
    """Wall and process-CPU milliseconds of one forward (and backward, with fresh leaves)."""
    leaves = [x.detach().requires_grad_(backward) for x in inputs]
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(g, *leaves)
    if backward:
        out.backward(torch.ones_like(out))
    return 1e3 * (time.perf_counter() - wall), 1e3 * (time.process_time() - cpu)


def _setenv(name, value):
    """Set ``name`` to ``value``, or unset it for None."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def compare(argv, description, bench, switch, settings, fixed):
    """Time every op x D x dtype under each of ``settings`` (``(value of switch or None, name)``),
    alternating them call by call, with the environment ``fixed`` held for the whole run; prints one JSON
    line each (shared by this benchmark and ``buffer_cache.py``)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--graph", default="uniform", help="uniform, powerlaw or large")
    p.add_argument("--dims", default="64")
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    before = {name: os.environ.get(name) for name in (switch, *fixed)}
    for name, value in fixed.items():
        _setenv(name, value)
    data = make_graph(args.graph)
    g = mpgraph.graph((data["src"], data["dst"]), num_nodes=data["N"])
    names = [name for _, name in settings]
    try:
        for op in args.ops.split(","):
            if op not in OPS:
                raise SystemExit(f"unknown op {op!r}; expected some of {','.join(OPS)}")
            for D in (int(d) for d in args.dims.split(",")):
                for dname in args.dtypes.split(","):
                    fn, inputs = operands(op, data["N"], data["E"], D, DTYPES[dname], torch.Generator().manual_seed(1))
                    for value, _ in settings:           # compile and warm every setting
                        _setenv(switch, value)
                        one_call(g, fn, inputs, True)
                    times = {}
                    for _ in range(args.rounds):
                        for value, name in settings:
                            _setenv(switch, value)
                            for kind, backward in (("fwd", False), ("fwdbwd", True)):
                                wall, cpu = one_call(g, fn, inputs, backward)
                                times.setdefault((kind + "_ms", name), []).append(wall)
                                times.setdefault((kind + "_cpu_ms", name), []).append(cpu)
                    ops.empty_cpu_cache()               # the next line starts with no cached buffers
                    med = {k: round(float(np.median(v)), 2) for k, v in times.items()}
                    line = {"bench": bench, "graph": args.graph, "op": op, "D": D, "dtype": dname,
                            "threads": torch.get_num_threads(), "rounds": args.rounds}
                    for key in ("fwd_ms", "fwdbwd_ms", "fwd_cpu_ms", "fwdbwd_cpu_ms"):
                        line[key] = {name: med[(key, name)] for name in names}
                    line["on_over_off"] = {k: round(med[(k + "_ms", "on")] / med[(k + "_ms", "off")], 3)
                                           for k in ("fwd", "fwdbwd")}
                    line["fwdbwd_over_fwd"] = {name: round(med[("fwdbwd_ms", name)] / med[("fwd_ms", name)], 2)
                                               for name in names}
                    print(json.dumps(line), flush=True)
    finally:
        for name, value in before.items():
            _setenv(name, value)


def main(argv=None):
    compare(argv, __doc__.split("\n")[0], "huge_pages", SWITCH, (("0", "off"), ("1", "on")), {CACHE: "0"})


if __name__ == "__main__":
    main()
