"""Launch configurations of the Triton gSpMM row kernel, fp32 against 16-bit, as JSON lines (needs CUDA).

The tenth session's GPU run found bf16 ``copy_u`` sum slower than fp32 on an H200 (0.79 against 0.62 ms on a
10M-edge power-law graph, D=64), where half the bytes should take at most the same time. This script tells
whether the launch configuration explains it: on the same power-law graph as ``gpu_check.py``, for each case
(``copy_u`` sum, ``copy_u`` max without arg, ``u_mul_e`` sum with a scalar per edge) and dtype it times

- the public op under ``use_backend('triton', strict=True)`` (``ops_ms``, autotuned);
- the launcher with each configuration of a grid (``BLOCK_E`` edges x ``BLOCK_F`` features per tile,
  ``num_warps``), autotuning off, one configuration at a time (``config_ms``);

and reports the autotuner's pick (``tuned``). Times are medians of ``triton.testing.do_bench`` (CUDA events,
L2 flushed between runs); ``GBps`` uses ``gpu_check.py``'s traffic model (the bytes each op must move), so
ratios of GBps are speedups. A time budget skips what is left and says so.

Usage: ``python benchmarks/triton_configs.py [--budget 70]``. Without CUDA it prints "no CUDA" and exits 0.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

START = time.perf_counter()
GRID = [(be, 64, w) for be in (8, 16, 32, 64) for w in (1, 2, 4)] + [(16, 32, 1), (32, 32, 2), (16, 128, 4)]
CASES = [("copy_u", "sum", torch.float32), ("copy_u", "sum", torch.bfloat16), ("copy_u", "max", torch.bfloat16),
         ("u_mul_e", "sum", torch.bfloat16), ("copy_u", "sum", torch.float16)]
NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}


def emit(record):
    record.setdefault("t_s", round(time.perf_counter() - START, 1))
    print(json.dumps(record), flush=True)


def graph_parser(doc, budget):
    """The arguments this script and ``triton_ab.py`` share: the power-law graph's size and a time budget."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500_000)
    parser.add_argument("--edges", type=int, default=10_000_000)
    parser.add_argument("--budget", type=float, default=budget, help="seconds; what is left is skipped")
    return parser


def main(argv=None):
    parser = graph_parser(__doc__, budget=70.0)
    parser.add_argument("--dim", type=int, default=64)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA")
        return 0
    import triton
    import triton.testing

    from gpu_check import powerlaw, structure
    from mpgraph.ops._triton import _backend

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median")

    device = torch.device("cuda")
    N, E, D = args.nodes, args.edges, args.dim
    src, dst = powerlaw(N, E, device=device)
    index, indptr, csc_src, eid = structure(src, dst, N)
    sched = _backend.cached_schedule(index, indptr)
    emit({"section": "graph", "N": N, "E": E, "D": D, "device": torch.cuda.get_device_name(),
          "torch": torch.__version__, "triton": triton.__version__, "split": sched.split,
          "long_rows": sched.num_long, "chunks": sched.num_chunks})
    end = START + args.budget
    for msg, red, dtype in CASES:
        try:
            run_case(msg, red, dtype, index, indptr, csc_src, eid, sched, N, E, D, end, bench)
        except Exception as exc:  # report and go on
            emit({"op": f"{msg} {red}", "dtype": NAMES[dtype], "error": f"{type(exc).__name__}: {exc}"[:500]})
        torch.cuda.empty_cache()
    return 0


def run_case(msg, red, dtype, index, indptr, csc_src, eid, sched, N, E, D, end, bench):
    """One op and dtype: the public op (autotuned), then each configuration of :data:`GRID`."""
    import triton

    from mpgraph import ops
    from mpgraph.ops._dispatch import use_backend
    from mpgraph.ops._triton import _common, spmm

    device = indptr.device
    i64 = 8
    b = torch.tensor([], dtype=dtype).element_size()
    x = torch.randn(N, D, device=device).to(dtype)
    w = torch.rand(E, device=device).to(dtype) if msg == "u_mul_e" else None
    nbytes = (N + 1) * i64 + E * i64 + E * D * b + N * D * b + (E * (i64 + b) if w is not None else 0)
    base = {"op": f"{msg} {red}", "dtype": NAMES[dtype], "bytes": nbytes}
    if time.perf_counter() > end:
        emit(dict(base, skipped="time budget"))
        return
    op = getattr(ops, f"{msg}_{red}")
    operands = (x,) if w is None else (x, w)

    def call():
        return op(index, *operands)

    with use_backend("triton", strict=True):
        call()
        torch.cuda.synchronize()
        t = bench(call)
    tuned = getattr(spmm._spmm_chunk_tuned, "best_config", None)
    emit(dict(base, ops_ms=round(t, 4), GBps=round(nbytes / t / 1e6, 1),
              tuned=None if tuned is None else {"BLOCK_E": tuned.kwargs.get("BLOCK_E"),
                                                 "num_warps": tuned.num_warps}))

    def launcher():
        return spmm.gspmm(msg, red, x, w, indptr, csc_src, eid, schedule=sched, need_arg=False)

    configs, max_f = list(spmm._spmm_chunk_tuned.configs), spmm.MAX_BLOCK_F
    try:
        with _common.autotune_off():
            for be, bf, nw in GRID:
                if time.perf_counter() > end:
                    emit(dict(base, config=[be, bf, nw], skipped="time budget"))
                    continue
                spmm._spmm_chunk_tuned.configs = [triton.Config({"BLOCK_E": be}, num_warps=nw)]
                spmm.MAX_BLOCK_F = bf
                try:
                    launcher()
                    torch.cuda.synchronize()
                    t = bench(launcher)
                    emit(dict(base, config={"BLOCK_E": be, "BLOCK_F": bf, "num_warps": nw},
                              config_ms=round(t, 4), GBps=round(nbytes / t / 1e6, 1)))
                except Exception as exc:  # report and go on
                    emit(dict(base, config=[be, bf, nw], error=f"{type(exc).__name__}: {exc}"[:300]))
    finally:
        spmm._spmm_chunk_tuned.configs, spmm.MAX_BLOCK_F = configs, max_f


if __name__ == "__main__":
    sys.exit(main())
