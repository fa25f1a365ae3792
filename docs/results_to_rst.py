"""Turn benchmark output into the reST tables that the docs include (``docs/_results/*.rst``).

Usage::

    # the report of `mpgraph bench precision --json bench_precision.json`
    python docs/results_to_rst.py precision bench_precision.json > docs/_results/bench_precision.rst

    # JSON lines of a benchmarks/*.py script; --columns picks and orders the keys (default: all scalar keys)
    python docs/results_to_rst.py jsonl cpu_kernels.jsonl --title "CPU kernels" \
        --columns op,dtype,graph,D,threads,ms,ratio_vs_fp32 > docs/_results/performance.rst

Several ``jsonl`` outputs can be appended to one file (``>>``). Nested values (``{"ratio": {...}}``)
become ``ratio.sparse_mm`` columns. The output is a ``list-table`` plus a line saying where it came
from; an empty file is also valid (the pages then show no table).
"""

import argparse
import json
import sys

from mpgraph.cli.bench import mem_epoch_cells


def _fmt(v):
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        elif not isinstance(v, list):
            out[f"{prefix}{k}"] = v
    return out


def _table(title, head, rows, source):
    lines = [f".. list-table:: {title}" if title else ".. list-table::", "   :header-rows: 1", ""]
    for row in [head] + rows:
        lines.append(f"   * - {_fmt(row[0])}")
        lines += [f"     - {_fmt(c)}" for c in row[1:]]
    lines += ["", f"*Source:* {source}", ""]
    return "\n".join(lines)


def precision_table(report, source):
    """The table of ``mpgraph bench precision`` (same columns as its console output)."""
    results = report["results"]
    ratios = report.get("ratios_to_fp32", {})
    any_run = next(iter(results.values()))
    head = ["precision", "peak memory (MiB)", "epoch (ms)", "final loss", "test accuracy", "memory / fp32",
            "time / fp32", "loss difference to fp32"]
    repeats = report.get("repeats", 1)
    if repeats > 1:
        head[1:3] = [f"peak memory (MiB, median of {repeats} [range])", f"epoch (ms, median of {repeats} [range])"]
    rows = []
    for name, r in results.items():
        ra = ratios.get(name, {})
        diff = ra.get("final_loss_rel_diff")
        mem, epoch = mem_epoch_cells(r, repeats > 1)
        rows.append([name, mem, epoch,
                     f"{r['final_loss']:.4f}", f"{100 * r['test_acc_mean']:.1f} %",
                     f"{ra['peak_mem']:.2f}" if ra.get("peak_mem") else "n/a",
                     f"{ra['epoch_time']:.2f}" if ra.get("epoch_time") else "n/a",
                     f"{100 * diff:.1f} %" if diff is not None else "n/a"])
    title = (f"{report['model']} on {report['dataset']} (scale {report.get('scale')}, "
             f"{any_run.get('num_nodes')} nodes, {any_run.get('num_edges')} edges), {report['epochs']} epochs, "
             f"{any_run.get('device')}, {any_run.get('threads')} threads")
    return _table(title, head, rows, source)


def jsonl_table(lines, columns, title, source):
    records = [_flatten(json.loads(line)) for line in lines if line.strip()]
    if not columns:
        columns = []
        for r in records:
            columns += [k for k in r if k not in columns]
    rows = [[r.get(c) for c in columns] for r in records]
    return _table(title, columns, rows, source)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="kind", required=True)
    pp = sub.add_parser("precision", help="report JSON of `mpgraph bench precision`")
    pp.add_argument("file")
    pj = sub.add_parser("jsonl", help="JSON lines of a benchmarks/*.py script")
    pj.add_argument("file")
    pj.add_argument("--columns", default="", help="comma-separated keys (default: all scalar keys)")
    pj.add_argument("--title", default="")
    args = p.parse_args(argv)
    with open(args.file) as f:
        if args.kind == "precision":
            text = precision_table(json.load(f), f"``mpgraph bench precision`` ({args.file})")
        else:
            cols = [c for c in args.columns.split(",") if c]
            text = jsonl_table(f.readlines(), cols, args.title, f"``{args.file}``")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
