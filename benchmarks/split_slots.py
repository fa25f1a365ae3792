"""Split slot winners against int16 slots: a max/min op's forward (winners recorded) and backward, in one process.

On a graph whose longest row has 256 to 32767 edges the CPU forward records *split* slot winners
(``_cpu.spmm.gspmm(..., split_slots=True)``: one byte per element, and a second for the rows of more than 255
edges only) where it recorded int16 slots before. This times the public op (``mpgraph.ops.<name>``) on leaves
that require gradients and its backward from an upstream gradient of ones, both forms alternating call by call
on the same graph and inputs (the int16 form by calling the kernel with ``split_slots=False``), after a check
that both give the same gradient bit for bit. One JSON line per op and dtype: medians in milliseconds and
``split_over_int16`` of the forward, the backward and the two together. Usage::

    python benchmarks/split_slots.py --graph large --ops copy_u_max --dtypes bfloat16,float32
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import mpgraph  # noqa: E402
import mpgraph.ops._cpu.spmm as kernels  # noqa: E402
from mpgraph import ops  # noqa: E402

from cpu_kernels import make_graph  # noqa: E402
from max_parts import DTYPES, operands  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="large", help="uniform, powerlaw or large")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--ops", default="copy_u_max", help="comma-separated max/min ops of mpgraph.ops")
    p.add_argument("--dtypes", default="bfloat16,float32")
    p.add_argument("--reps", type=int, default=11)
    a = p.parse_args(argv)
    g = make_graph(a.graph)
    gi = mpgraph.graph((g["src"], g["dst"]), num_nodes=g["N"])
    split = kernels.gspmm

    def int16(*args, **kw):
        return split(*args, **{**kw, "split_slots": False})

    kernel_of = {"split": split, "int16": int16}
    for name in a.ops.split(","):
        fn = getattr(ops, name)
        for dt_name in a.dtypes.split(","):
            inputs = operands(name, g["N"], g["E"], a.dim, DTYPES[dt_name], torch.Generator().manual_seed(1))
            seed = None
            times = {form: {"fwd": [], "bwd": []} for form in kernel_of}
            grads = {}
            try:
                for rep in range(a.reps + 1):          # the first round warms up (compiles, fills caches)
                    for form, kernel in kernel_of.items():
                        kernels.gspmm = kernel
                        leaves = [x.detach().requires_grad_(True) for x in inputs]
                        t0 = time.perf_counter()
                        out = fn(gi, *leaves)
                        t1 = time.perf_counter()
                        seed = torch.ones_like(out) if seed is None else seed
                        out.backward(seed)
                        t2 = time.perf_counter()
                        if rep == 0:
                            grads[form] = [x.grad for x in leaves]
                        else:
                            times[form]["fwd"].append(t1 - t0)
                            times[form]["bwd"].append(t2 - t1)
            finally:
                kernels.gspmm = split
            for mine, other in zip(grads["split"], grads["int16"]):
                torch.testing.assert_close(mine, other, rtol=0, atol=0)
            ms = {form: {k: 1e3 * float(np.median(v)) for k, v in t.items()} for form, t in times.items()}
            for form in ms:
                ms[form]["fwdbwd"] = 1e3 * float(np.median(np.add(times[form]["fwd"], times[form]["bwd"])))
            print(json.dumps({"bench": "split_slots", "graph": a.graph, "op": name, "dtype": dt_name, "D": a.dim,
                              "reps": a.reps, "threads": torch.get_num_threads(),
                              "ms": {form: {k: round(v, 1) for k, v in d.items()} for form, d in ms.items()},
                              "split_over_int16": {k: round(ms["split"][k] / ms["int16"][k], 3)
                                                   for k in ("fwd", "bwd", "fwdbwd")}}), flush=True)


if __name__ == "__main__":
    main()
