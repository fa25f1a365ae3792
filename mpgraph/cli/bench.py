"""``mpgraph bench precision``: the same training in each precision, each in its own process.

Default: the guide's 3-layer GAT (hidden 256, heads 1,1,1) on ``reddit-like`` at a scale that
finishes in a few minutes on 2 cores. Each precision runs ``mpgraph train`` in a fresh
subprocess, so its peak memory is its own. The report is a table like the guide's (peak memory,
time per epoch, final loss, accuracy, ratios to fp32), a PNG (memory bars and loss curves) and JSON.

Peak resident memory and epoch time move between runs on a shared machine (by a quarter or more for
the small default graph), so ``--repeats R`` runs every precision ``R`` times, round-robin (a busy spell
slows all precisions alike), and reports the medians with each precision's range; the training itself is
deterministic, so losses and accuracies are the same in every repeat.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

from .. import _openmp, _thp
from .memory import atomic_write
from .train import PRECISIONS, _heads, _non_negative_float, _positive_int

__all__ = ["add_bench_arguments", "run_precision"]


def _precisions(text):
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [n for n in names if n not in PRECISIONS]
    if bad or not names:
        import argparse
        raise argparse.ArgumentTypeError(f"expected a comma-separated subset of {','.join(PRECISIONS)}, got {text!r}")
    return names


def add_bench_arguments(p):
    p.add_argument("--model", default="gat", help="model (default: gat, the guide's)")
    p.add_argument("--dataset", default="reddit-like", help="dataset (default: reddit-like)")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--scale", type=_non_negative_float, default=0.01,
                   help="reddit-like size as a fraction of Reddit (default 0.01; 1.0 is Reddit's size)")
    p.add_argument("--precisions", type=_precisions, default=["fp32", "bf16", "amp-bf16", "amp-fp16"],
                   help="comma-separated precisions (default: fp32,bf16,amp-bf16,amp-fp16)")
    p.add_argument("--epochs", type=_positive_int, default=20)
    p.add_argument("--hidden", type=_positive_int, default=256)
    p.add_argument("--layers", type=_positive_int, default=3)
    p.add_argument("--heads", type=_heads, default=[1, 1, 1])
    p.add_argument("--lr", type=_non_negative_float, default=1e-3)
    p.add_argument("--weight-decay", type=_non_negative_float, default=5e-4)
    p.add_argument("--dropout", type=_non_negative_float, default=0.0)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=_positive_int, default=1,
                   help="runs per precision, round-robin; the report gives medians and ranges (default 1)")
    p.add_argument("--plot", default="bench_precision.png", metavar="FILE.png")
    p.add_argument("--json", default="bench_precision.json", metavar="FILE")
    return p


def _train_cmd(args, precision, out_json):
    cmd = [sys.executable, "-m", "mpgraph", "train", "--quiet", "--model", args.model, "--dataset", args.dataset,
           "--precision", precision, "--epochs", str(args.epochs), "--hidden", str(args.hidden),
           "--layers", str(args.layers), "--lr", str(args.lr), "--weight-decay", str(args.weight_decay),
           "--dropout", str(args.dropout), "--device", args.device, "--seed", str(args.seed), "--json", out_json]
    if args.model == "gat":
        cmd += ["--heads", ",".join(map(str, args.heads))]
    if args.scale is not None:
        cmd += ["--scale", str(args.scale)]
    if args.data_dir:
        cmd += ["--data-dir", args.data_dir]
    return cmd


def run_precision(args):
    runs = {p: [] for p in args.precisions}
    repeats = args.repeats
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(repeats):
            for precision in args.precisions:
                out = os.path.join(tmp, f"{precision}-{rep}.json")
                what = f" (repeat {rep + 1}/{repeats})" if repeats > 1 else ""
                print(f"[bench] training {args.model} on {args.dataset} in {precision}{what} ...", flush=True)
                proc = subprocess.run(_train_cmd(args, precision, out), capture_output=True, text=True)
                if proc.returncode != 0:
                    sys.stderr.write(proc.stdout + proc.stderr)
                    print(f"mpgraph bench: error: training in {precision} failed (exit {proc.returncode})",
                          file=sys.stderr)
                    return proc.returncode if proc.returncode > 0 else 1
                with open(out) as f:
                    runs[precision].append(json.load(f))
    results = {p: _combine(rs) for p, rs in runs.items()}
    base = results.get("fp32")
    print(_table(results, base))
    env = environment()
    note = _memory_note(results, env)
    if note:
        print(note)
    report = {"model": args.model, "dataset": args.dataset, "scale": args.scale, "epochs": args.epochs,
              "repeats": repeats, "environment": env, "results": results}
    if base is not None:
        report["ratios_to_fp32"] = {p: _ratios(r, base) for p, r in results.items()}
    if args.json:
        atomic_write(args.json, json.dumps(report, indent=1))
        print(f"wrote {args.json}")
    if args.plot:
        from .train import plot_curves
        plot_curves(results, args.plot, memory_bars=True)
        print(f"wrote {args.plot}")
    return 0


#: environment variables the training processes inherit that move the figures: ``import mpgraph`` sets the
#: first two unless the user did (``mpgraph/_thp.py``, ``mpgraph/_openmp.py``)
ENV_FIGURES = (_thp.ENV, _openmp.ENV, "OMP_NUM_THREADS", "MPGRAPH_CPU_CACHE_MB")


def environment():
    """The settings of :data:`ENV_FIGURES` the training processes run under (None: unset), for the report."""
    return {name: os.environ.get(name) for name in ENV_FIGURES}


def _memory_note(results, env):
    """One line under the table when CPU peak memory was counted in resident pages with huge pages on: on a
    small graph the column then reads coarser (measured: bf16 over fp32 0.66x with them, 0.45x without, on
    the default graph; the same at scale 0.05)."""
    cpu = any(r.get("mem_method") in ("VmHWM", "sampled") for r in results.values())
    if not cpu or env.get(_thp.ENV) != "1":
        return None
    return ("note: peak memory is each process's peak resident set, counted in pages; with huge pages "
            "(THP_MEM_ALLOC_ENABLE=1, mpgraph's default) it reads coarser where the largest tensors are a few MiB. "
            "For a memory comparison on a small graph, run with THP_MEM_ALLOC_ENABLE=0 or a larger --scale.")


def _combine(runs):
    """One precision's report from its repeats: the first run's curves, the median peak memory and epoch
    time, and every repeat's figures under ``peak_mem_bytes_runs`` / ``median_epoch_s_runs``."""
    r = dict(runs[0])
    mems = [x["peak_mem_bytes"] for x in runs]
    r["peak_mem_bytes_runs"] = mems
    r["median_epoch_s_runs"] = [x["median_epoch_s"] for x in runs]
    r["peak_mem_bytes"] = None if any(m is None for m in mems) else statistics.median(mems)
    r["median_epoch_s"] = statistics.median(r["median_epoch_s_runs"])
    return r


def mem_epoch_cells(r, repeated):
    """The peak memory (MiB) and epoch time (ms) cells of one precision's result: its medians, followed by
    ``[min-max]`` over the repeats when ``repeated`` (shared with ``docs/results_to_rst.py``)."""
    mem, epoch = f"{(r.get('peak_mem_bytes') or 0) / 2**20:.0f}", f"{1e3 * r['median_epoch_s']:.1f}"
    if repeated:
        ms = [(m or 0) / 2**20 for m in r["peak_mem_bytes_runs"]]
        ts = [1e3 * t for t in r["median_epoch_s_runs"]]
        mem += f" [{min(ms):.0f}-{max(ms):.0f}]"
        epoch += f" [{min(ts):.0f}-{max(ts):.0f}]"
    return mem, epoch


def _ratios(r, base):
    def ratio(a, b):
        return a / b if a is not None and b else None
    return {"peak_mem": ratio(r["peak_mem_bytes"], base["peak_mem_bytes"]),
            "epoch_time": ratio(r["median_epoch_s"], base["median_epoch_s"]),
            "final_loss_rel_diff": (abs(r["final_loss"] - base["final_loss"]) / abs(base["final_loss"])
                                    if base["final_loss"] else None)}


def _table(results, base):
    repeated = any(len(r.get("peak_mem_bytes_runs", ())) > 1 for r in results.values())
    head = ["precision", "peak mem (MiB)", "epoch (ms)", "final loss", "test acc", "mem/fp32", "time/fp32",
            "loss diff"]
    if repeated:
        head[1:3] = ["peak mem (MiB, median [range])", "epoch (ms, median [range])"]
    rows = []
    for p, r in results.items():
        ra = _ratios(r, base) if base else {}
        mem, epoch = mem_epoch_cells(r, repeated)
        rows.append([p, mem, epoch,
                     f"{r['final_loss']:.4f}", f"{100 * r['test_acc_mean']:.1f}%",
                     f"{ra['peak_mem']:.2f}" if ra.get("peak_mem") else "-",
                     f"{ra['epoch_time']:.2f}" if ra.get("epoch_time") else "-",
                     f"{100 * ra['final_loss_rel_diff']:.1f}%" if ra.get("final_loss_rel_diff") is not None else "-"])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(f"{c:>{w}}" for c, w in zip(head, widths))]
    lines += ["  ".join(f"{c:>{w}}" for c, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)
