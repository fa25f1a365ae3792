"""Raw Numba CPU kernels (mpgraph.ops._cpu) against plain-torch baselines, as JSON lines.

Every group (one op on one graph and feature size) times our kernel in each dtype
and the fp32 baselines round-robin in the same process, so a busy machine slows
all of them alike; each line carries the median and the ratios within its group:

* gSpMM ``copy_u``/``u_mul_e`` + sum and ``copy_u`` + max (with the winners' ids, as the backward
  needs, and ``_noarg`` without): ``torch.sparse.mm(csr, x, reduce=...)``,
  ``F.embedding_bag(src, x, offsets=indptr[:-1], mode='sum'|'max', per_sample_weights=w)``
  and plain ``index_add_``/``scatter_reduce_`` over ``x[src]``.
* gSDDMM ``u_dot_v``: ``(x[src] * y[dst]).sum(-1)``.
* edge softmax (forward, backward) with ``H`` heads: ``scatter_reduce``/``exp``/``index_add`` formula.
  ``edge_softmax_eid``/``edge_softmax_eid_bwd``: the edges in a random order (``eid`` a permutation, as
  when a graph's edges are not sorted by destination), against the same formula and, as ``slot_order``,
  our kernel on the same values already in slot order (``eid=None``).

Graphs come from ``shared/bench/graphs.py`` (``uniform``: N=100k, E=2M; ``powerlaw``: N=200k,
E=4M; ``tiny``), plus ``large``: N=1M, E=10M, destinations Zipf-like as in ``powerlaw`` (a
multigraph; features of D=64 fp32 are 256 MB, far beyond the L3).

Usage::

    python benchmarks/cpu_kernels.py                                   # powerlaw, D=64 and 256
    python benchmarks/cpu_kernels.py --graph uniform --dims 64 --ops copy_u_sum
    python benchmarks/cpu_kernels.py --graph large --dims 64,128 --reps 7

Output (one line per op, dtype, graph, D)::

    {"bench": "cpu_kernels", "op": "copy_u_sum", "dtype": "bfloat16", "graph": "powerlaw", "D": 64,
     "threads": 2, "ms": ..., "baselines_ms": {"sparse_mm": ..., ...}, "ratio": {"sparse_mm": ..., ...},
     "ratio_vs_fp32": ...}

``ratio`` is our time over each baseline's (below 1 is faster); ``ratio_vs_fp32`` is our time
over our own fp32 time in the same group.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from mpgraph.ops import _cpu  # noqa: E402

from _graphs import bench_graphs  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "float64": torch.float64}
OPS = ("copy_u_sum", "u_mul_e_sum", "copy_u_max", "copy_u_max_noarg", "u_dot_v", "edge_softmax", "edge_softmax_bwd",
       "edge_softmax_eid", "edge_softmax_eid_bwd")



def make_graph(name):
    if name != "large":
        return bench_graphs().make_graph(name)
    N, E = 1_000_000, 10_000_000
    gen = torch.Generator().manual_seed(0)
    src = torch.randint(0, N, (E,), generator=gen)
    p = (torch.arange(N, dtype=torch.float64) + 1.0) ** -0.5
    dst = torch.randperm(N, generator=gen)[torch.multinomial(p, E, replacement=True, generator=gen)]
    order = torch.argsort(dst * N + src)
    src, dst = src[order].contiguous(), dst[order].contiguous()
    in_deg = torch.bincount(dst, minlength=N)
    indptr = torch.zeros(N + 1, dtype=torch.int64)
    indptr[1:] = torch.cumsum(in_deg, 0)
    return dict(name=name, N=N, E=E, src=src, dst=dst, indptr=indptr, in_deg=in_deg)


def max_structures(name):
    """The structures of a ``copy_u`` max forward and its gather backward on benchmark graph ``name``, as the
    CPU backend builds them: ``index``, the in-edges ``(indptr_c, src_c, eid_c)``, the out-edges ``(indptr,
    dst)`` and the longest in-edge row (``longest``), with the graph itself as ``g``."""
    import mpgraph
    from mpgraph._index import as_index
    from mpgraph.ops._cpu._backend import _csc

    g = make_graph(name)
    index = as_index(mpgraph.graph((g["src"], g["dst"]), num_nodes=g["N"]))
    indptr_c, src_c, eid_c = _csc(index)
    indptr, dst, _ = index.csr()
    return dict(g=g, index=index, indptr_c=indptr_c, src_c=src_c, eid_c=eid_c, indptr=indptr, dst=dst,
                longest=int(index.in_degrees().max()))


def max_winners(s, D, dtype, gen):
    """Random ``(N, D)`` features ``x`` of ``dtype`` on :func:`max_structures` ``s``, the slot winners of their
    ``copy_u`` max forward (``(N, D)``), a random gradient of that output, and the slot of each out-edge:
    ``(x, winners, grad, slot_of)``, the inputs of ``scatter.gather_winners``."""
    from mpgraph.ops._cpu._backend import _csr_slots
    from mpgraph.ops._cpu.spmm import gspmm

    N = s["g"]["N"]
    x = torch.randn(N, D, generator=gen).to(dtype)
    _, slots_won, _ = gspmm("copy_lhs", "max", s["indptr_c"], s["src_c"], s["eid_c"], x, None, out_dtype=dtype,
                            need_arg="slots", max_row=s["longest"])
    winners = slots_won.view(N, D)
    grad = torch.randn(N, D, generator=gen).to(dtype)
    return x, winners, grad, _csr_slots(s["index"], winners.dtype)


def backward_structures(src, dst, num_nodes):
    """The structure the fused ``u_mul_e`` sum backward (``spmm_backward.mul_sum_backward``) walks, built by
    mpgraph itself as the op layer builds it: the reversed graph's ``(indptr, dst, eid, eid_inverse)``,
    rows the sources, slot ``k`` holding edge ``eid[k]`` (``None`` with ``eid_inverse`` when the slots are
    already the edge ids)."""
    import mpgraph
    from mpgraph.ops._checks import reversed_index
    from mpgraph.ops._cpu._backend import _csc, _eid_inverse

    rev = reversed_index(mpgraph.graph((src, dst), num_nodes=num_nodes)._op_index())
    indptr, rows, eid = _csc(rev)
    return indptr, rows, eid, (None if eid is None else _eid_inverse(rev))


def timed(fns, reps):
    """Round-robin timing of ``{name: fn}``; returns ``{name: median ms}``."""
    for f in fns.values():
        f()
    times = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: 1e3 * float(np.median(v)) for k, v in times.items()}


def with_grad(fn, inputs):
    """``fn(*inputs)`` run forward and backward: a closure re-creating leaf inputs with requires_grad each call
    and running the backward from an upstream gradient of ones made at its first call (the warm-up, untimed),
    as a training step receives it from the next layer. ``run.seed`` holds that gradient; non-float inputs
    (index tensors) are passed as they are."""
    def run():
        leaves = [x.detach().requires_grad_(True) if x.is_floating_point() else x for x in inputs]
        out = fn(*leaves)
        if run.seed is None:
            run.seed = torch.ones_like(out)
        out.backward(run.seed)
    run.seed = None
    return run


def remake_seed(run):
    """A timed stand-in for making ``run``'s upstream gradient (``seed_ms``): what the benchmarks up to the
    eighteenth session paid inside every forward+backward."""
    return lambda: torch.ones_like(run.seed)


def check_seed(run, what):
    """Stop the benchmark if the backward wrote into the upstream gradient it was given."""
    if not bool((run.seed == 1).all()):
        raise SystemExit(f"{what}: the backward modified the upstream gradient it was given")


def seed_fields(fwd_ms, fwdbwd_ms, seed_ms):
    """The JSON fields of one forward+backward: ``seed_ms``, ``fwdbwd_over_fwd`` (the seed made once) and
    ``fwdbwd_with_seed_over_fwd`` (the older definition: the seed made inside each call)."""
    return {"seed_ms": round(seed_ms, 3), "fwdbwd_over_fwd": round(fwdbwd_ms / fwd_ms, 3),
            "fwdbwd_with_seed_over_fwd": round((fwdbwd_ms + seed_ms) / fwd_ms, 3)}


def group(g, op, D, dtypes, args):
    """``(ours: {dtype: fn}, baselines: {name: fn})`` for one op."""
    src, dst, indptr, N, E = g["src"], g["dst"], g["indptr"], g["N"], g["E"]
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(N, D, generator=gen)
    pf = {} if args.prefetch is None else {"prefetch_distance": args.prefetch}
    ours, base = {}, {}
    big = E * D * 4 > args.max_intermediate_gb * 2**30  # E x D fp32 intermediate of the plain baselines
    if op in ("copy_u_sum", "u_mul_e_sum", "copy_u_max", "copy_u_max_noarg"):
        w = torch.rand(E, generator=gen)
        reduce = "max" if op.startswith("copy_u_max") else "sum"
        need_arg = op != "copy_u_max_noarg"
        for name in dtypes:
            xd = x.to(DTYPES[name])
            if op == "u_mul_e_sum":
                wd = w.to(DTYPES[name])
                ours[name] = lambda xd=xd, wd=wd: _cpu.gspmm("mul", "sum", indptr, src, None, xd, wd, **pf)
            else:
                ours[name] = lambda xd=xd: _cpu.gspmm("copy_lhs", reduce, indptr, src, None, xd, None,
                                                      need_arg=need_arg, **pf)
        vals = w if op == "u_mul_e_sum" else torch.ones(E)
        A = torch.sparse_csr_tensor(indptr, src, vals, (N, N))
        base["sparse_mm"] = lambda: torch.sparse.mm(A, x, reduce="amax" if reduce == "max" else reduce)
        if op == "copy_u_sum":
            base["embedding_bag"] = lambda: F.embedding_bag(src, x, offsets=indptr[:-1], mode="sum")
        elif op == "u_mul_e_sum":
            base["embedding_bag"] = lambda: F.embedding_bag(src, x, offsets=indptr[:-1], mode="sum",
                                                            per_sample_weights=w)
        else:
            base["embedding_bag"] = lambda: F.embedding_bag(src, x, offsets=indptr[:-1], mode="max")
        if not big:
            if reduce == "max":
                idx = dst[:, None].expand(E, D)
                base["index_reduce"] = lambda: torch.zeros(N, D).scatter_reduce_(0, idx, x[src], "amax",
                                                                                  include_self=False)
            elif op == "u_mul_e_sum":
                base["index_add"] = lambda: torch.zeros(N, D).index_add_(0, dst, x[src] * w[:, None])
            else:
                base["index_add"] = lambda: torch.zeros(N, D).index_add_(0, dst, x[src])
    elif op == "u_dot_v":
        y = torch.randn(N, D, generator=gen)
        for name in dtypes:
            xd, yd = x.to(DTYPES[name]), y.to(DTYPES[name])
            ours[name] = lambda xd=xd, yd=yd: _cpu.gsddmm("dot", indptr, src, None, xd, yd, "u", "v", **pf)
        if not big:
            base["index_select"] = lambda: (x[src] * y[dst]).sum(-1, keepdim=True)
    else:  # edge softmax with H = D heads
        H = D
        logits = torch.randn(E, H, generator=gen)
        grad = torch.randn(E, H, generator=gen)
        idx = dst[:, None].expand(E, H)

        def torch_forward():
            m = torch.full((N, H), -torch.inf).scatter_reduce_(0, idx, logits, "amax")
            ex = torch.exp(logits - m[dst])
            return ex / torch.zeros(N, H).index_add_(0, dst, ex)[dst]

        s32 = torch_forward()
        if op.startswith("edge_softmax_eid"):
            # edge e's values live at row perm_inv[e]: slot k (edge k in slot order) is stored at row eid[k]
            eid = torch.randperm(E, generator=gen)
            scattered = {}
            for name in dtypes:
                dt = DTYPES[name]
                a = torch.empty(E, H, dtype=dt)
                b = torch.empty(E, H, dtype=dt)
                a[eid] = (logits if op == "edge_softmax_eid" else s32).to(dt)
                b[eid] = grad.to(dt)
                scattered[name] = (a, b)
            if op == "edge_softmax_eid":
                for name in dtypes:
                    ours[name] = lambda a=scattered[name][0]: _cpu.edge_softmax_forward(indptr, eid, a)
                base["slot_order"] = lambda: _cpu.edge_softmax_forward(indptr, None, logits)
                base["torch_scatter"] = torch_forward
            else:
                for name in dtypes:
                    a, b = scattered[name]
                    ours[name] = lambda a=a, b=b: _cpu.edge_softmax_backward(indptr, eid, a, b)
                base["slot_order"] = lambda: _cpu.edge_softmax_backward(indptr, None, s32, grad)
                base["torch_scatter"] = lambda: s32 * (grad - torch.zeros(N, H).index_add_(0, dst, s32 * grad)[dst])
        elif op == "edge_softmax":
            for name in dtypes:
                ld = logits.to(DTYPES[name])
                ours[name] = lambda ld=ld: _cpu.edge_softmax_forward(indptr, None, ld)
            base["torch_scatter"] = torch_forward
        else:
            for name in dtypes:
                sd, gd = s32.to(DTYPES[name]), grad.to(DTYPES[name])
                ours[name] = lambda sd=sd, gd=gd: _cpu.edge_softmax_backward(indptr, None, sd, gd)
            base["torch_scatter"] = lambda: s32 * (grad - torch.zeros(N, H).index_add_(0, dst, s32 * grad)[dst])
    return ours, base


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graph", default="powerlaw", help="uniform, powerlaw, tiny or large (comma-separated)")
    p.add_argument("--dims", default="64,256", help="feature sizes D (heads H for edge softmax: --heads)")
    p.add_argument("--heads", type=int, default=4, help="H for edge_softmax")
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--dtypes", default="float32,bfloat16,float16")
    p.add_argument("--reps", type=int, default=9)
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    p.add_argument("--prefetch", type=int, default=None, help="override the kernels' prefetch distance")
    p.add_argument("--max-intermediate-gb", type=float, default=2.0,
                   help="skip plain baselines whose E x D fp32 intermediate is larger")
    args = p.parse_args(argv)
    if not _cpu.available():
        raise SystemExit(_cpu.unavailable_reason())
    if args.threads:
        torch.set_num_threads(args.threads)
    dtypes = args.dtypes.split(",")
    for gname in args.graph.split(","):
        g = make_graph(gname)
        for op in args.ops.split(","):
            dims = [args.heads] if op.startswith("edge_softmax") else [int(d) for d in args.dims.split(",")]
            for D in dims:
                ours, base = group(g, op, D, dtypes, args)
                t = time.perf_counter()
                for f in ours.values():  # compile (or load from Numba's cache) outside the timing
                    f()
                compile_s = time.perf_counter() - t
                ms = timed({**{"ours_" + k: f for k, f in ours.items()}, **base}, args.reps)
                base_ms = {k: round(ms[k], 3) for k in base}
                for name in ours:
                    mine = ms["ours_" + name]
                    print(json.dumps({
                        "bench": "cpu_kernels", "op": op, "dtype": name, "graph": gname, "D": D,
                        "N": g["N"], "E": g["E"], "threads": torch.get_num_threads(), "ms": round(mine, 3),
                        "baselines_ms": base_ms,
                        "ratio": {k: round(mine / v, 3) for k, v in ms.items() if k in base},
                        "ratio_vs_fp32": round(mine / ms["ours_float32"], 3) if "float32" in ours else None,
                        "first_call_s": round(compile_s, 2)}), flush=True)


if __name__ == "__main__":
    main()
