"""mpgraph's public message-passing ops against torch's sparse ops, PyG and DGL, forward and forward+backward.

For one op on one graph, feature size and dtype, this times in the same process, round-robin (so a busy
machine slows all of them alike):

* ``fast``: the public op with normal kernel selection (the Numba ``cpu`` backend on CPU tensors);
* ``reference``: the same op forced onto the ``reference`` backend (plain, obvious PyTorch; skipped when
  its ``E x D`` intermediate would exceed ``--max-intermediate-gb``);
* ``sparse_mm``: ``torch.sparse.mm(csr, x, reduce=...)`` (sum/mean/amax; weighted sums through the CSR
  values), in fp32 and in the dtype of the line;
* ``pyg``: ``torch_geometric.utils.spmm`` (and ``torch_geometric.utils.softmax``) when PyG is installed;
* ``dgl``: the same op of ``dgl.ops`` (DGL 2.1's C++ kernels) on a DGL graph of the same edges, in fp32 and
  in the dtype of the line, when DGL is importable. DGL 2.1 runs on torch 2.13 only in a venv of its own,
  with a patch (``shared/bench/README.md``); install mpgraph's dependencies and mpgraph there too
  (``pip install 'numpy<2.4' numba==0.68.1 && pip install --no-deps -e .``), and both run in one process.
  Lines where DGL raises (float16 on the CPU) have no DGL entry.

Each line reports the median milliseconds of the forward (``fwd_ms``) and of forward + backward
(``fwdbwd_ms``, gradients with respect to every floating input, from an upstream gradient of ones made once
before the timing) per contender, and ratios computed inside the run. ``seed_ms`` times making that
gradient for the fast path (``ones_like`` of its output: a fresh allocation whose page faults cost about
half a forward on the 10M-edge graph); up to the eighteenth session it was made inside every timed
forward+backward, and ``fwdbwd_with_seed_over_fwd`` gives the fast path's ratio by that older definition.

* ``vs_fp32``: fast in this dtype over fast in fp32 (the issue's bf16 <= 0.6x target);
* ``vs_best_peer_fp32``: fast fp32 over the best fp32 peer (``sparse_mm`` or PyG);
* ``fwdbwd_over_fwd``: fast forward+backward over fast forward (the <= 2.5x target);
* ``vs_reference``: fast over reference (the >= 3x target for u_dot_v and edge softmax);
* ``vs_dgl``: fast over DGL in the same dtype (the brief's "mpgraph must beat DGL on every op": below 1).

``peak_extra_mb``: for u_dot_v and edge softmax, the resident-memory growth of one fast forward+backward
(peak RSS over its start, as ``mpgraph train`` measures), against the ``E x D x 4`` bytes an intermediate would take.

Graphs: ``uniform`` (N=100k, E=2M, from ``shared/bench/graphs.py``) and ``large`` (N=1M, E=10M, in-degrees
Zipf-like; features beyond the L3). Usage::

    python benchmarks/ops.py                                     # both graphs, D=64,128, fp32/bf16/fp16
    python benchmarks/ops.py --graph uniform --dims 64 --ops copy_u_sum --reps 5
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
from mpgraph.ops._dispatch import record_backends, use_backend  # noqa: E402

from cpu_kernels import (check_seed, make_graph, remake_seed, seed_fields, timed,  # noqa: E402
                         with_grad)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
OPS = ("copy_u_sum", "copy_u_mean", "copy_u_max", "u_mul_e_sum", "u_dot_v", "edge_softmax", "u_add_e_max",
       "copy_e_max")
#: max with an (E, D) edge operand: no peer computes these; they are timed against the reference only
EDGE_MAX = ("u_add_e_max", "copy_e_max")
SPMM = {"copy_u_sum": "sum", "copy_u_mean": "mean", "copy_u_max": "amax", "u_mul_e_sum": "sum"}

try:  # optional peer
    import torch_geometric.utils as pyg_utils
except Exception:  # noqa: BLE001 - any import failure means "PyG not installed here"
    pyg_utils = None

try:  # optional peer, in a venv of its own (module docstring)
    import dgl
except Exception:  # noqa: BLE001 - any import failure means "DGL not usable here"
    dgl = None


def dgl_graph(g):
    """A DGL graph of ``g``'s edges in the same order (edge ``k`` is ``(src[k], dst[k])`` in both libraries),
    with every sparse format built before the timing, or None without DGL."""
    if dgl is None:
        return None
    gd = dgl.graph((g["src"], g["dst"]), num_nodes=g["N"])
    gd.create_formats_()
    return gd


def _dgl_contenders(gd, op, inputs, dtype):
    """``{"dgl": ..., "dgl_<dtype>": ...}``: ``dgl.ops.<op>`` on ``inputs`` cast to fp32 and to ``dtype``, each
    as ``(forward fn, forward+backward fn)``; a 16-bit dtype DGL rejects is left out."""
    fn = dgl.ops.edge_softmax if op == "edge_softmax" else getattr(dgl.ops, op)
    out = {}
    for peer_dtype in {torch.float32, dtype}:
        tag = "dgl" if peer_dtype == torch.float32 else f"dgl_{str(dtype)[6:]}"
        args = tuple(t.to(peer_dtype) for t in inputs)

        def run(*a):
            return fn(gd, *a)
        try:
            run(*args)
        except Exception:  # noqa: BLE001 - DGL refuses this dtype on the CPU (float16)
            if peer_dtype == torch.float32:
                raise      # fp32 always runs in DGL: a failure there is this script's mistake, not a DGL limit
            continue
        out[tag] = (lambda run=run, args=args: run(*args), with_grad(run, args))
    return out


def _fast_and_reference(mp, gi, inputs, big):
    """The public op ``mp`` on ``inputs``, normally selected and (unless ``big``) forced onto the reference."""
    def fast(*a):
        return mp(gi, *a)

    def ref(*a):
        with use_backend("reference"):
            return mp(gi, *a)

    out = {"fast": (lambda: fast(*inputs), with_grad(fast, inputs))}
    if not big:
        out["reference"] = (lambda: ref(*inputs), with_grad(ref, inputs))
    return out


def contenders(g, gi, op, D, dtype, heads, max_gb, gd=None):
    """``{name: (forward fn, forward+backward fn)}`` for one line; ``gi`` is the mpgraph graph, ``gd`` the DGL
    one (:func:`dgl_graph`; None: no DGL entries)."""
    N, E, src, dst, indptr = g["N"], g["E"], g["src"], g["dst"], g["indptr"]
    gen = torch.Generator().manual_seed(1)
    big = E * max(D, heads) * 4 > max_gb * 2**30
    out = {}
    if op in SPMM:
        x = torch.randn(N, D, generator=gen).to(dtype)
        w = torch.rand(E, 1, generator=gen).to(dtype)
        out.update(_fast_and_reference(getattr(ops, op), gi, (x, w) if op == "u_mul_e_sum" else (x,), big))
        reduce = SPMM[op]
        for peer_dtype in {torch.float32, dtype}:
            tag = "sparse_mm" if peer_dtype == torch.float32 else f"sparse_mm_{str(dtype)[6:]}"
            xp = x.to(peer_dtype)
            vals = (w.reshape(-1) if op == "u_mul_e_sum" else torch.ones(E)).to(peer_dtype)
            try:
                A = torch.sparse_csr_tensor(indptr, src, vals, (N, N))
                torch.sparse.mm(A, xp[:, :1].contiguous(), reduce=reduce)
            except RuntimeError:
                continue   # this dtype is not supported by torch here
            def sp(xx, A=A):
                return torch.sparse.mm(A, xx, reduce=reduce)
            out[tag] = (lambda sp=sp, xp=xp: sp(xp), with_grad(sp, (xp,)))
        if pyg_utils is not None and reduce in ("sum", "mean"):
            x32 = x.float()
            vals = w.reshape(-1).float() if op == "u_mul_e_sum" else torch.ones(E)
            A = torch.sparse_csr_tensor(indptr, src, vals, (N, N))
            def pyg(xx, A=A):
                return pyg_utils.spmm(A, xx, reduce=reduce)
            out["pyg"] = (lambda: pyg(x32), with_grad(pyg, (x32,)))
        if gd is not None:
            out.update(_dgl_contenders(gd, op, (x, w) if op == "u_mul_e_sum" else (x,), dtype))
    elif op in EDGE_MAX:
        x = torch.randn(N, D, generator=gen).to(dtype)
        w = torch.randn(E, D, generator=gen).to(dtype)
        out.update(_fast_and_reference(getattr(ops, op), gi, (x, w) if op == "u_add_e_max" else (w,), big))
        if gd is not None:
            out.update(_dgl_contenders(gd, op, (x, w) if op == "u_add_e_max" else (w,), dtype))
    elif op == "u_dot_v":
        x = torch.randn(N, D, generator=gen).to(dtype)
        y = torch.randn(N, D, generator=gen).to(dtype)
        def fast(a, b):
            return ops.u_dot_v(gi, a, b)
        out["fast"] = (lambda: fast(x, y), with_grad(fast, (x, y)))
        if not big:
            def ref(a, b):
                with use_backend("reference"):
                    return ops.u_dot_v(gi, a, b)
            out["reference"] = (lambda: ref(x, y), with_grad(ref, (x, y)))
        if gd is not None:
            out.update(_dgl_contenders(gd, op, (x, y), dtype))
    else:   # edge softmax, H heads
        logits = torch.randn(E, heads, 1, generator=gen).to(dtype)
        def fast(a):
            return mpgraph.nn.functional.edge_softmax(gi, a)
        out["fast"] = (lambda: fast(logits), with_grad(fast, (logits,)))
        def ref(a):
            with use_backend("reference"):
                return mpgraph.nn.functional.edge_softmax(gi, a)
        out["reference"] = (lambda: ref(logits), with_grad(ref, (logits,)))
        if pyg_utils is not None:
            l32 = logits.float()
            def pyg(a):
                return pyg_utils.softmax(a, dst, num_nodes=N)
            out["pyg"] = (lambda: pyg(l32), with_grad(pyg, (l32,)))
        if gd is not None:
            out.update(_dgl_contenders(gd, op, (logits,), dtype))
    return out


def _peak_extra_mb(fn):
    """Peak resident-memory growth (MB) while ``fn()`` runs: the kernel's ``VmHWM`` reset and re-read
    (:class:`mpgraph.cli.memory.PeakMemory`, in this process; a fork would deadlock on the thread pools)."""
    import gc

    from mpgraph.cli.memory import PeakMemory

    gc.collect()
    ops.empty_cpu_cache()   # buffers cached by earlier calls would be resident already and go uncounted
    with PeakMemory("cpu") as mem:
        fn()
    return round(mem.peak_bytes / 2**20, 1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graph", default="uniform,large", help="uniform, powerlaw, large (comma-separated)")
    p.add_argument("--dims", default="64,128")
    p.add_argument("--heads", type=int, default=4, help="H for edge_softmax")
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--dtypes", default="float32,bfloat16,float16")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    p.add_argument("--max-intermediate-gb", type=float, default=1.5,
                   help="skip the reference path when its E x D fp32 intermediate is larger")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    for gname in args.graph.split(","):
        g = make_graph(gname)
        gi = mpgraph.graph((g["src"], g["dst"]), num_nodes=g["N"])
        gd = dgl_graph(g)
        for op in args.ops.split(","):
            if op not in OPS:
                raise SystemExit(f"unknown op {op!r}; expected some of {','.join(OPS)}")
            dims = [args.heads] if op == "edge_softmax" else [int(d) for d in args.dims.split(",")]
            for D in dims:
                fast32 = None
                for dname in args.dtypes.split(","):
                    dtype = DTYPES[dname]
                    cands = contenders(g, gi, op, D, dtype, args.heads, args.max_intermediate_gb, gd)
                    with record_backends() as seen:
                        cands["fast"][1]()     # compile / warm up, and note which kernels ran
                    fns = {}
                    for k, (f, fb) in cands.items():
                        fns[k + ".fwd"] = f
                        fns[k + ".fwdbwd"] = fb
                    fns["seed"] = remake_seed(cands["fast"][1])
                    ms = {k: round(v, 3) for k, v in timed(fns, args.reps).items()}
                    for k, (_, fb) in cands.items():
                        check_seed(fb, f"{op} ({k})")
                    fwd = {k: ms[k + ".fwd"] for k in cands}
                    fwdbwd = {k: ms[k + ".fwdbwd"] for k in cands}
                    if dname == "float32":
                        fast32 = (fwd["fast"], fwdbwd["fast"])
                    peers32 = [fwd[k] for k in ("sparse_mm", "pyg") if k in fwd]
                    peers32_fb = [fwdbwd[k] for k in ("sparse_mm", "pyg") if k in fwdbwd]
                    line = {
                        "bench": "ops", "op": op, "graph": gname, "N": g["N"], "E": g["E"],
                        ("H" if op == "edge_softmax" else "D"): D, "dtype": dname,
                        "threads": torch.get_num_threads(), "backends": sorted(set(seen)),
                        "fwd_ms": fwd, "fwdbwd_ms": fwdbwd,
                        **seed_fields(fwd["fast"], fwdbwd["fast"], ms["seed"]),
                    }
                    if fast32 is not None:
                        line["vs_fp32"] = {"fwd": round(fwd["fast"] / fast32[0], 3),
                                           "fwdbwd": round(fwdbwd["fast"] / fast32[1], 3)}
                    if dname == "float32" and peers32:
                        line["vs_best_peer_fp32"] = {"fwd": round(fwd["fast"] / min(peers32), 3),
                                                     "fwdbwd": round(fwdbwd["fast"] / min(peers32_fb), 3)}
                    if "reference" in fwd:
                        line["vs_reference"] = {"fwd": round(fwd["fast"] / fwd["reference"], 3),
                                                "fwdbwd": round(fwdbwd["fast"] / fwdbwd["reference"], 3)}
                    dgl_tag = "dgl" if dname == "float32" else f"dgl_{dname}"
                    if dgl_tag in fwd:
                        line["vs_dgl"] = {"fwd": round(fwd["fast"] / fwd[dgl_tag], 3),
                                          "fwdbwd": round(fwdbwd["fast"] / fwdbwd[dgl_tag], 3)}
                    if op in ("u_dot_v", "edge_softmax"):
                        width = D if op == "u_dot_v" else args.heads
                        line["peak_extra_mb"] = _peak_extra_mb(cands["fast"][1])
                        line["ExDx4_mb"] = round(g["E"] * width * 4 / 2**20, 1)
                    print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
