"""A/B of the Triton gSpMM launcher against an older copy of ``mpgraph/ops/_triton/spmm.py``, as JSON lines.

Both versions run in one process on the same inputs (a power-law graph like ``gpu_check.py``'s), autotuned,
in alternating order; each record gives both medians (``triton.testing.do_bench``), the ratio old/new
(> 1: the new code is faster) and the largest difference between the two outputs against the dtype's
tolerance (``gpu_check.TOL``; the two sum edges in different tile orders, so they need not agree bit for bit).

Make the old copy with ``git show REV:mpgraph/ops/_triton/spmm.py > old/spmm_old.py``.
Usage: ``python benchmarks/triton_ab.py --old old/spmm_old.py [--budget 90]``. Needs CUDA ("no CUDA" and exit 0
without it).
"""

import importlib.util
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

from triton_configs import NAMES, START, emit, graph_parser  # noqa: E402  (after the path setup above)

#: (message, reduce, dtype, feature layout of u, of e (None: no edge operand), need_arg)
CASES = [
    ("copy_u", "sum", torch.float32, (64,), None, False),
    ("copy_u", "sum", torch.bfloat16, (64,), None, False),
    ("copy_u", "max", torch.bfloat16, (64,), None, True),
    ("u_mul_e", "sum", torch.float32, (64,), (), False),             # scalar edge weight
    ("u_mul_e", "sum", torch.bfloat16, (64,), (), False),
    ("u_mul_e", "sum", torch.float32, (4, 16), (4, 1), False),       # GAT aggregation
    ("u_mul_e", "sum", torch.bfloat16, (4, 16), (4, 1), False),
    ("u_mul_e", "sum", torch.bfloat16, (8, 8), (8, 1), False),
    ("copy_e", "sum", torch.bfloat16, None, (64,), False),
    ("u_div_e", "mean", torch.bfloat16, (64,), (), False),
]


def load_old(path):
    """The old file as module ``mpgraph.ops._triton.spmm_old`` (its relative imports resolve in the package)."""
    import mpgraph.ops._triton  # noqa: F401  (the package the copy's relative imports need)

    spec = importlib.util.spec_from_file_location("mpgraph.ops._triton.spmm_old", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    parser = graph_parser(__doc__, budget=90.0)
    parser.add_argument("--old", required=True, help="path of the older spmm.py")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA")
        return 0
    import triton
    import triton.testing

    from gpu_check import TOL, powerlaw, structure
    from mpgraph.ops._triton import _common
    from mpgraph.ops._triton import spmm as new

    old = load_old(args.old)
    device = torch.device("cuda")
    N, E = args.nodes, args.edges
    src, dst = powerlaw(N, E, device=device)
    _, indptr, csc_src, eid = structure(src, dst, N)
    sched = _common.row_schedule(indptr)
    emit({"section": "graph", "N": N, "E": E, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
          "triton": triton.__version__, "old": str(args.old)})
    end = START + args.budget
    gen = torch.Generator(device=device).manual_seed(5)
    for msg, red, dtype, fu, fe, need_arg in CASES:
        rec = {"op": f"{msg} {red}", "dtype": NAMES[dtype], "u": fu, "e": fe, "need_arg": need_arg}
        if time.perf_counter() > end:
            emit(dict(rec, skipped="time budget"))
            continue
        try:
            u = None if fu is None else torch.randn((N,) + fu, device=device, generator=gen).to(dtype)
            e = None if fe is None else (torch.rand((E,) + fe, device=device, generator=gen) + 0.5).to(dtype)
            call = (msg, red, u, e, indptr, csc_src, eid)
            opts = dict(schedule=sched, need_arg=need_arg)
            runs = {name: (lambda m=m, call=call, opts=opts: m.gspmm(*call, **opts))
                    for name, m in (("old", old), ("new", new))}
            outs = {name: fn()[0] for name, fn in runs.items()}               # autotune + compile
            torch.cuda.synchronize()
            diff = (outs["new"].double() - outs["old"].double()).abs()
            rtol, atol = TOL[dtype]
            rec["agree"] = bool((diff <= atol + rtol * outs["old"].double().abs()).all())
            rec["max_abs_diff"] = float(diff.max())
            del outs
            times = {"old": [], "new": []}
            for order in (("old", "new"), ("new", "old")):
                for name in order:
                    times[name].append(triton.testing.do_bench(runs[name], warmup=10, rep=40,
                                                                return_mode="median"))
            t_old, t_new = min(times["old"]), min(times["new"])
            rec.update(old_ms=round(t_old, 4), new_ms=round(t_new, 4), old_over_new=round(t_old / t_new, 3),
                       new_config=str(getattr(new._spmm_chunk_tuned, "best_config", None)))
        except Exception as exc:  # report and go on
            rec["error"] = f"{type(exc).__name__}: {exc}"[:500]
        emit(rec)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
