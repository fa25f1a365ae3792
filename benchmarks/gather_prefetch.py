"""Prefetch distance of the max/min backward's gather (``scatter.gather_winners``), as JSON lines.

``copy_u_max``'s backward gathers, for every out-edge of each source, the destination's gradient row and its
slot-winner row. Its prefetch distance (:data:`mpgraph.ops._cpu.scatter.GATHER_PREFETCH`, in edges) is one
constant for every dtype and width, while an edge's two rows span from 4 (16-bit, D=64) to 12 (fp32, D=128,
int16 winners) cache lines. This times the gather with each distance round-robin in one process, on winners
from a real ``copy_u`` max forward of random features and a random gradient, and gives each distance's median
over the first one's. One line per graph, D and dtype. Usage::

    python benchmarks/gather_prefetch.py --graph large --dims 128
    python benchmarks/gather_prefetch.py --graph uniform --dims 64,128 --distances 16,12,8
"""

import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from mpgraph.ops._cpu.scatter import gather_winners  # noqa: E402

from cpu_kernels import max_structures, max_winners, timed  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="uniform", help="uniform, powerlaw or large")
    p.add_argument("--dims", default="128")
    p.add_argument("--dtypes", default="float32,bfloat16,float16")
    p.add_argument("--distances", default="16,12,8", help="prefetch distances in edges; the first is the baseline")
    p.add_argument("--reps", type=int, default=7)
    a = p.parse_args(argv)
    distances = [int(d) for d in a.distances.split(",")]
    s = max_structures(a.graph)
    indptr, dst = s["indptr"], s["dst"]
    gen = torch.Generator().manual_seed(0)
    for D in (int(d) for d in a.dims.split(",")):
        for name in a.dtypes.split(","):
            _, winners, grad, slot_of = max_winners(s, D, DTYPES[name], gen)
            ms = timed({str(d): (lambda d=d, s=slot_of, G=grad, w=winners:
                                 gather_winners(indptr, dst, s, G, w, prefetch_distance=d)) for d in distances}, a.reps)
            base = ms[str(distances[0])]
            print(json.dumps({"bench": "gather_prefetch", "graph": a.graph, "D": D, "dtype": name,
                              "winners": str(winners.dtype).removeprefix("torch."), "reps": a.reps,
                              "threads": torch.get_num_threads(), "ms": {k: round(v, 1) for k, v in ms.items()},
                              "over_first": {k: round(v / base, 3) for k, v in ms.items()}}), flush=True)


if __name__ == "__main__":
    main()
