"""The CPU gSpMM forward of this checkout against another commit's, in one process, as JSON lines.

Runs on this machine are noisy enough (10-20 % between processes) to hide a change of that size, so this
imports both versions into one process: the other commit's ``mpgraph`` package is extracted with ``git
archive`` into a temporary directory as ``mpgraph_old`` (its imports inside the package are relative), and
the two ``gspmm`` run round-robin on the same inputs, after a check that their results are equal bit for
bit. Each package keeps its own kernel cache and buffer cache. One line per op and dtype. Up to eeeb74e the
dispatch loaded its backends by absolute name, so an old package's public ops ran this checkout's kernels and
``--autograd`` compared the checkout with itself; the old copy's names are now rewritten, and the run stops if
either package dispatches to kernels outside itself.

``--heads`` times the fused ``u_mul_e``/``u_div_e`` sum backward (``_cpu/spmm_backward.mul_sum_backward``, on the
reversed structure, edge ids and their inverse as the CPU backend passes them) instead, for each ``HxD`` shape
(``H`` weights per edge, heads of ``D``); ``--ops`` is then ``mul``, ``div`` or both. A change of summation order
changes the last bits, so the two results are checked against each other within the dtype's tolerance
(``tests/tolerances.py``) and the largest difference relative to the largest gradient is printed. Usage::

    python benchmarks/ab_commit.py --old 3b6fc2b --graph large --dim 128
    python benchmarks/ab_commit.py --old HEAD~1 --graph uniform --dim 64 --ops copy_u_sum,copy_u_max_noarg
    python benchmarks/ab_commit.py --old HEAD~1 --graph uniform --heads 8x8,4x16 --ops mul,div

``--autograd`` times a forward+backward of public gSpMM ops instead (``mpgraph.ops.<name>`` of both versions, each
on a graph built by its own package), with the operands of ``benchmarks/variants.py`` (``--operands``: ``u,e``,
``u,e1``, ``uh,eh`` with ``--nheads`` heads, ...); gradients are checked within the dtype's tolerance::

    python benchmarks/ab_commit.py --old HEAD~1 --graph uniform --dim 64 --autograd --ops u_mul_e_max \
        --operands uh,eh --dtypes float32,bfloat16
"""

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from mpgraph.ops._cpu.spmm import gspmm  # noqa: E402

from cpu_kernels import make_graph, timed  # noqa: E402
from whole_rows import OPS  # noqa: E402


def old_module(rev, where, module):
    """Module ``module`` (a dotted path under ``mpgraph``) of commit ``rev``, imported from its package extracted
    under ``where`` as ``mpgraph_old``."""
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "mpgraph"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", where], input=archive, check=True)
    os.rename(os.path.join(where, "mpgraph"), os.path.join(where, "mpgraph_old"))
    # up to eeeb74e the dispatch loaded its backends by absolute name ("mpgraph.ops._cpu"), so the old package's
    # public ops ran this checkout's kernels: point those names at the old package
    dispatch = os.path.join(where, "mpgraph_old", "ops", "_dispatch.py")
    with open(dispatch) as f:
        text = f.read()
    with open(dispatch, "w") as f:
        f.write(text.replace('"mpgraph.ops.', '"mpgraph_old.ops.'))
    sys.path.insert(0, where)
    return importlib.import_module(f"mpgraph_old.{module}")


def check_own_kernels(pkg_dispatch, package):
    """Every backend function registered in a package's dispatch (``pkg_dispatch``) comes from ``package``:
    else an A/B of public ops would time one package's kernels twice."""
    pkg_dispatch._load_optional()
    modules = {getattr(k.fn, "__module__", None) or "?" for kernels in pkg_dispatch._registry.values()
               for k in kernels}
    stray = sorted(m for m in modules if not m.startswith(package + "."))
    if stray:
        raise SystemExit(f"the {package} package dispatches to kernels of {stray}: the A/B would not compare it")


def old_gspmm(rev, where):
    """``gspmm`` of commit ``rev`` (see :func:`old_module`)."""
    return old_module(rev, where, "ops._cpu.spmm").gspmm


def fused_backward(a, where):
    """The ``--heads`` mode: old and new fused weighted-sum backward, round-robin, one line per shape, op, dtype."""
    from mpgraph import graph
    from mpgraph._index import as_index
    from mpgraph.ops._checks import reversed_index
    from mpgraph.ops._cpu._backend import _csc, _eid_inverse
    from mpgraph.ops._cpu.spmm_backward import mul_sum_backward

    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from tolerances import assert_close

    old = old_module(a.old, where, "ops._cpu.spmm_backward").mul_sum_backward
    g = make_graph(a.graph)
    index = reversed_index(as_index(graph((g["src"], g["dst"]), num_nodes=g["N"])))
    indptr, dst, eid = _csc(index)
    inverse = None if eid is None else _eid_inverse(index)
    N, E = g["N"], g["E"]
    for shape in a.heads.split(","):
        H, D = (int(v) for v in shape.split("x"))
        gen = torch.Generator().manual_seed(0)
        G32, x32 = torch.randn(N, H, D, generator=gen), torch.randn(N, H, D, generator=gen)
        w32 = torch.rand(E, H, generator=gen) + 0.5
        for name in a.dtypes.split(","):
            dtype = getattr(torch, name)
            G, x, w = G32.to(dtype), x32.to(dtype), w32.to(dtype)
            for op in a.ops.split(","):
                fns = {tag: (lambda f=f, G=G, x=x, w=w, op=op:
                             f(indptr, dst, eid, G, x, w, divide=op == "div", eid_inverse=inverse))
                       for tag, f in (("old", old), ("new", mul_sum_backward))}
                (ox, ow), (nx, nw) = fns["old"](), fns["new"]()
                assert_close(nx, ox, dtype)
                assert_close(nw, ow, dtype)
                diff = max(float((nx.double() - ox.double()).abs().max() / ox.double().abs().max()),
                           float((nw.double() - ow.double()).abs().max() / ow.double().abs().max()))
                ms = timed(fns, a.reps)
                print(json.dumps({"bench": "ab_commit", "kernel": "mul_sum_backward", "old": a.old,
                                  "graph": a.graph, "H": H, "D": D, "op": op, "dtype": name, "reps": a.reps,
                                  "threads": torch.get_num_threads(), "old_ms": round(ms["old"], 1),
                                  "new_ms": round(ms["new"], 1), "new_over_old": round(ms["new"] / ms["old"], 3),
                                  "max_rel_diff": float(f"{diff:.3g}")}), flush=True)


def autograd(a, where):
    """The ``--autograd`` mode: old and new forward+backward of public ops, round-robin, one line per op and dtype."""
    import mpgraph
    from mpgraph import ops

    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from tolerances import assert_close

    old_pkg = old_module(a.old, where, "ops")
    old_root = importlib.import_module("mpgraph_old")
    check_own_kernels(old_pkg._dispatch, "mpgraph_old")
    check_own_kernels(ops._dispatch, "mpgraph")
    g = make_graph(a.graph)
    graphs = {"old": old_root.graph((g["src"], g["dst"]), num_nodes=g["N"]),
              "new": mpgraph.graph((g["src"], g["dst"]), num_nodes=g["N"])}
    N, E, D = g["N"], g["E"], a.dim
    gen = torch.Generator().manual_seed(0)
    x32 = torch.randn(N, D, generator=gen)
    shapes = {"u": (N, D), "e": (E, D), "e1": (E, 1), "uh": (N, a.nheads, D // a.nheads), "eh": (E, a.nheads, 1)}
    base = {k: (x32 if k == "u" else x32.reshape(shapes[k]) if k == "uh" else
                torch.rand(shapes[k], generator=gen) + 0.5) for k in shapes}
    for name in a.dtypes.split(","):
        dtype = getattr(torch, name)
        for op in a.ops.split(","):
            inputs = [base[k].to(dtype) for k in a.operands.split(",")]
            # the upstream gradient, made once (as variants.py does: a training step receives it)
            seed = torch.ones_like(getattr(ops, op)(graphs["new"], *inputs))

            def run(tag, op=op, inputs=inputs, seed=seed):
                leaves = [t.detach().requires_grad_() for t in inputs]
                fn = getattr(old_pkg if tag == "old" else ops, op)
                fn(graphs[tag], *leaves).backward(seed)
                return [leaf.grad for leaf in leaves]

            for go, gn in zip(run("old"), run("new")):
                assert_close(gn, go, dtype)
            ms = timed({tag: (lambda tag=tag: run(tag)) for tag in ("old", "new")}, a.reps)
            print(json.dumps({"bench": "ab_commit", "mode": "autograd", "old": a.old, "graph": a.graph, "D": D,
                              "op": op, "operands": a.operands, **({"H": a.nheads} if "uh" in a.operands else {}),
                              "dtype": name, "reps": a.reps, "threads": torch.get_num_threads(),
                              "old_ms": round(ms["old"], 1), "new_ms": round(ms["new"], 1),
                              "new_over_old": round(ms["new"] / ms["old"], 3)}), flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old", required=True, help="the commit to compare with (any git revision)")
    p.add_argument("--graph", default="large", help="uniform, powerlaw or large")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--ops", default="copy_u_sum,u_mul_e_sum,copy_u_mean")
    p.add_argument("--dtypes", default="float32,bfloat16,float16")
    p.add_argument("--reps", type=int, default=9)
    p.add_argument("--heads", default=None,
                   help="HxD shapes, comma-separated: time the fused u_mul_e/u_div_e sum backward instead")
    p.add_argument("--autograd", action="store_true", help="time forward+backward of public ops (see above)")
    p.add_argument("--operands", default="u,e", help="--autograd: operand kinds of benchmarks/variants.py")
    p.add_argument("--nheads", type=int, default=8, help="--autograd: heads of the 'uh'/'eh' operands")
    a = p.parse_args(argv)
    if a.autograd:
        with tempfile.TemporaryDirectory() as where:
            autograd(a, where)
        return
    if a.heads is not None:
        if a.ops == p.get_default("ops"):
            a.ops = "mul,div"
        with tempfile.TemporaryDirectory() as where:
            fused_backward(a, where)
        return
    with tempfile.TemporaryDirectory() as where:
        old = old_gspmm(a.old, where)
        g = make_graph(a.graph)
        indptr, src = g["indptr"], g["src"]
        gen = torch.Generator().manual_seed(0)
        x32 = torch.randn(g["N"], a.dim, generator=gen)
        w32 = torch.rand(int(indptr[-1]), 1, generator=gen)
        for name in a.dtypes.split(","):
            x, w = x32.to(getattr(torch, name)), w32.to(getattr(torch, name))
            for op_name in a.ops.split(","):
                op, reduce, weighted = OPS[op_name]
                rhs = w if weighted else None
                fns = {tag: (lambda f=f, op=op, reduce=reduce, x=x, rhs=rhs:
                             f(op, reduce, indptr, src, None, x, rhs, need_arg=False)[0])
                       for tag, f in (("old", old), ("new", gspmm))}
                if not torch.equal(fns["old"](), fns["new"]()):
                    raise SystemExit(f"{op_name} {name}: {a.old} and this checkout give different results")
                ms = timed(fns, a.reps)
                print(json.dumps({"bench": "ab_commit", "old": a.old, "graph": a.graph, "D": a.dim, "op": op_name,
                                  "dtype": name, "reps": a.reps, "threads": torch.get_num_threads(),
                                  "old_ms": round(ms["old"], 1), "new_ms": round(ms["new"], 1),
                                  "new_over_old": round(ms["new"] / ms["old"], 3)}), flush=True)


if __name__ == "__main__":
    main()
