"""Rows padded to a full pass against the row walk in the CPU gSpMM, as JSON lines.

``mpgraph.ops._cpu.spmm.pad_width`` decides when rows of 32 to 63 columns (a ``copy_u``, or ``u_mul_e`` with one
weight per edge) are copied into rows of 64 columns, gathered by the 64-column pass into padded rows and copied
out. This times ``gspmm(..., whole_rows=True)`` (the padded rows where that policy takes them, both copies
included) against ``whole_rows=False`` (the row walk) round-robin in one process, after checking the two
results are equal bit for bit, on the guide's GCN graph (``gcn``: ``mpgraph bench``'s reddit-like at scale
0.01, 2,330 nodes and 1.14M edges) and on uniform random graphs given as ``NODES:EDGES``. Each line says whether
the policy took the padded rows (``padded``); ``--force`` takes them whatever the edges per row and in all
(the other rules kept). Usage::

    python benchmarks/padded_rows.py
    python benchmarks/padded_rows.py --dims 32,41,48,56 --rounds 2
    python benchmarks/padded_rows.py --graphs 100000:2000000 --force
"""

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from mpgraph.ops._cpu import spmm as S  # noqa: E402

from slabs import DTYPES, case_args, compare, structure  # noqa: E402

DTYPES = dict(DTYPES, float16=torch.float16)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graphs", default="gcn,11650:2330000,50000:3200000,50000:1600000")
    case_args(p, dims="41", dtypes="float32,bfloat16", ops="copy_u_sum,u_mul_e_sum")
    p.add_argument("--force", action="store_true", help="pad whatever the edges (per source row and in all)")
    a = p.parse_args(argv)
    if a.force:
        S.PAD_MIN_DEGREE = S.PAD_MIN_EDGES = 0
    for gname in a.graphs.split(","):
        nodes, _, edges = gname.partition(":")
        compare(structure(nodes, int(edges or 0)), nodes, a, DTYPES, S.pad_width, "padded")

if __name__ == "__main__":
    main()
