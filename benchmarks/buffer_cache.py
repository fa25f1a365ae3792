"""The CPU buffer cache of large kernel outputs, on against off, in one process.

mpgraph's CPU kernels take their outputs of 32 MiB or more from a bounded cache of buffers that no
tensor holds any more (``MPGRAPH_CPU_CACHE_MB``, read at every call; ``0`` turns it off; see
docs/performance.rst). This times the public ops forward and forward+backward with the cache on (the
default limit) and off, alternating the two settings call by call in the same process, so a busy machine
slows both alike. Huge-page advice stays at its default (on) in both. Besides the wall-clock medians it
reports process CPU time (all threads) and, per setting, forward+backward over forward (the issue's
<= 2.5x target).

One JSON line per op x dtype::

    {"bench": "buffer_cache", "graph": "uniform", "op": "copy_e_max", "D": 64, "dtype": "float32",
     "threads": 2, "rounds": 7, "fwd_ms": {"off": ..., "on": ...}, "fwdbwd_ms": {...},
     "fwd_cpu_ms": {...}, "fwdbwd_cpu_ms": {...}, "on_over_off": {"fwd": ..., "fwdbwd": ...},
     "fwdbwd_over_fwd": {"off": ..., "on": ...}}

Usage::

    python benchmarks/buffer_cache.py --graph uniform --dims 64 --rounds 7
    python benchmarks/buffer_cache.py --graph large --dims 128 --ops copy_u_sum,u_mul_e_sum --rounds 5
"""

import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mpgraph  # noqa: E402
from mpgraph.ops import empty_cpu_cache  # noqa: E402

from cpu_kernels import make_graph  # noqa: E402
from huge_pages import DTYPES, OPS, one_call, operands  # noqa: E402

SWITCH = "MPGRAPH_CPU_CACHE_MB"
SETTINGS = (("0", "off"), (None, "on"))      # None: the default limit


def _set(value):
    if value is None:
        os.environ.pop(SWITCH, None)
    else:
        os.environ[SWITCH] = value


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graph", default="uniform", help="uniform, powerlaw or large")
    p.add_argument("--dims", default="64")
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    before = os.environ.get(SWITCH)
    data = make_graph(args.graph)
    g = mpgraph.graph((data["src"], data["dst"]), num_nodes=data["N"])
    try:
        for op in args.ops.split(","):
            if op not in OPS:
                raise SystemExit(f"unknown op {op!r}; expected some of {','.join(OPS)}")
            for D in (int(d) for d in args.dims.split(",")):
                for dname in args.dtypes.split(","):
                    fn, inputs = operands(op, data["N"], data["E"], D, DTYPES[dname], torch.Generator().manual_seed(1))
                    for value, _ in SETTINGS:           # compile and warm both settings
                        _set(value)
                        one_call(g, fn, inputs, True)
                    times = {}
                    for _ in range(args.rounds):
                        for value, name in SETTINGS:
                            _set(value)
                            for kind, backward in (("fwd", False), ("fwdbwd", True)):
                                wall, cpu = one_call(g, fn, inputs, backward)
                                times.setdefault((kind + "_ms", name), []).append(wall)
                                times.setdefault((kind + "_cpu_ms", name), []).append(cpu)
                    empty_cpu_cache()                   # the next line's sizes start from nothing cached
                    med = {k: round(float(np.median(v)), 2) for k, v in times.items()}
                    line = {"bench": "buffer_cache", "graph": args.graph, "op": op, "D": D, "dtype": dname,
                            "threads": torch.get_num_threads(), "rounds": args.rounds}
                    for key in ("fwd_ms", "fwdbwd_ms", "fwd_cpu_ms", "fwdbwd_cpu_ms"):
                        line[key] = {name: med[(key, name)] for _, name in SETTINGS}
                    line["on_over_off"] = {k: round(med[(k + "_ms", "on")] / med[(k + "_ms", "off")], 3)
                                           for k in ("fwd", "fwdbwd")}
                    line["fwdbwd_over_fwd"] = {name: round(med[("fwdbwd_ms", name)] / med[("fwd_ms", name)], 2)
                                               for _, name in SETTINGS}
                    print(json.dumps(line), flush=True)
    finally:
        _set(before)


if __name__ == "__main__":
    main()
