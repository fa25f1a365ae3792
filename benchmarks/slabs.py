"""Column slabs against the row walk in the CPU gSpMM, as JSON lines.

``mpgraph.ops._cpu.spmm.slab_width`` decides when a float32 ``copy_u`` (or ``u_mul_e`` with one weight per
edge) copies the source rows into contiguous 64-column slabs first and gathers from one slab at a time. This
times ``gspmm(..., whole_rows=True)`` (the slabs where that policy takes them, the repack included) against
``whole_rows=False`` (the row walk) round-robin in one process, after checking the two results are equal bit
for bit, on uniform random graphs of ``--nodes`` nodes and ``--edges`` edges and on the guide's GCN graph
(``gcn``: ``mpgraph bench``'s reddit-like at scale 0.01, 2,330 nodes and 1.14M edges). Each line says whether
the policy took the slabs (``slabs``); where it did not, ``whole_rows=True`` may still differ from the walk by
handing a chunk of rows to one pass call (rows one pass covers: 128 bfloat16 columns, say). ``--force`` times
slabs where the size rules would not take them (``L3_BYTES`` raised; the dtype and op rules kept). Usage::

    python benchmarks/slabs.py
    python benchmarks/slabs.py --graphs gcn,30000,100000,200000 --dims 128,256 --rounds 3
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

from cpu_kernels import timed  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
OPS = {"copy_u_sum": ("copy_lhs", "sum"), "copy_u_mean": ("copy_lhs", "mean"), "u_mul_e_sum": ("mul", "sum")}


def structure(name, edges):
    """``(indptr, indices, eid, N)`` of the in-edges, as the op layer builds them."""
    from mpgraph._index import Index
    from mpgraph.ops._cpu._backend import _csc

    if name == "gcn":
        from mpgraph.cli.datasets import load_dataset
        out = load_dataset("reddit-like", scale=0.01)
        g = out[0] if isinstance(out, tuple) else out
        return _csc(g._op_index()) + (g.num_nodes(),)
    n = int(name)
    gen = torch.Generator().manual_seed(0)
    src, dst = torch.randint(0, n, (edges,), generator=gen), torch.randint(0, n, (edges,), generator=gen)
    return Index.from_coo(src, dst, n, n).csc() + (n,)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graphs", default="gcn,30000,100000")
    p.add_argument("--edges", type=int, default=2_000_000, help="edges of the uniform graphs")
    case_args(p, dims="256", dtypes="float32", ops="copy_u_sum")
    p.add_argument("--force", action="store_true", help="take the slabs even where the L3 rule would not")
    a = p.parse_args(argv)
    if a.force:
        S.L3_BYTES = 1 << 40
    for gname in a.graphs.split(","):
        compare(structure(gname, a.edges), gname, a, DTYPES, S.slab_width, "slabs")


def case_args(p, dims, dtypes, ops):
    """The options of :func:`compare` on the parser ``p``, with these defaults."""
    p.add_argument("--dims", default=dims)
    p.add_argument("--dtypes", default=dtypes)
    p.add_argument("--ops", default=ops)
    p.add_argument("--reps", type=int, default=9)
    p.add_argument("--rounds", type=int, default=1, help="timings of each case, one after another")


def compare(s, gname, a, dtypes, policy, bench):
    """Time ``gspmm(..., whole_rows=True)`` (as ``bench``) against the row walk on the structure ``s`` (``(indptr,
    indices, eid, N)``) for each of ``a.dtypes``, ``a.dims`` and ``a.ops``, after checking the two are equal bit for
    bit; print a JSON line per round, ``bench`` true where ``policy`` (the arguments of :func:`spmm.slab_width`)
    takes the path."""
    indptr, indices, eid, N = s
    E = int(indptr[-1])
    gen = torch.Generator().manual_seed(1)
    for dname in a.dtypes.split(","):
        dtype = dtypes[dname]
        for D in (int(d) for d in a.dims.split(",")):
            x = torch.randn(N, D, generator=gen).to(dtype)
            w = torch.rand(E, 1, generator=gen).to(dtype)
            for op_name in a.ops.split(","):
                op, reduce = OPS[op_name]
                rhs = w if op == "mul" else None
                layout = S.RHS_BLOCK if rhs is not None else S.SAME
                taken = bool(policy(op, layout, False, 1, D, N, E, [x.dtype] + ([] if rhs is None else [rhs.dtype])))

                def run(whole, op=op, reduce=reduce, x=x, rhs=rhs):
                    return S.gspmm(op, reduce, indptr, indices, eid, x, rhs, need_arg=False, whole_rows=whole)[0]

                if not torch.equal(run(True), run(False)):
                    raise SystemExit(f"{gname} {op_name} {dname} D={D}: {bench} and the row walk differ")
                for _ in range(a.rounds):
                    ms = timed({bench: lambda run=run: run(True), "walk": lambda run=run: run(False)}, a.reps)
                    print(json.dumps({"bench": bench, "graph": gname, "N": N, "E": E, "op": op_name, "dtype": dname,
                                      "D": D, bench: taken, "reps": a.reps, "threads": torch.get_num_threads(),
                                      f"{bench}_ms": round(ms[bench], 2), "walk_ms": round(ms["walk"], 2),
                                      f"{bench}_over_walk": round(ms[bench] / ms["walk"], 3)}), flush=True)

if __name__ == "__main__":
    main()
