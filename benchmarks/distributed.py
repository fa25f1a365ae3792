"""Distributed GraphSAGE training: epoch time for 1 vs N processes, bytes exchanged with fp32 vs bf16 features.

Each configuration is a real job: ``python -m torch.distributed.run --nproc_per_node=P -m
mpgraph.distributed.train`` on 127.0.0.1 (gloo, CPU), on the CSBM dataset of ``mpgraph train``
(``10000 x scale`` nodes, 128 features), partitioned by METIS into ``P`` parts. Baselines in the
same run: 1 process for the epoch time (no communication), fp32 feature storage for the bytes.
``amp-bf16`` stores the features in bfloat16 (half the bytes per remote row) and trains a float32
model under autocast. Epoch time is the median over epochs of the slowest rank's epoch (sampling,
remote fetches, forward, backward, DDP all-reduce, optimizer step). Bytes are those every rank
sends to the others, summed over ranks, per epoch (median), by kind: ``feature`` (rows of every
node tensor read: the ``feat`` input rows, counted alone as ``feat``, and the labels), ``ids``
(requested IDs), ``sampling`` (remote neighbour sampling), ``counts`` (exchange sizes).

Usage::

    python benchmarks/distributed.py                       # scale 0.3, 1 and 2 processes, fp32 and amp-bf16
    python benchmarks/distributed.py --scale 1 --procs 1,2,4 --epochs 5

Output: one JSON line per job, then one ``"case": "summary"`` line per comparison::

    {"bench": "distributed", "case": "job", "procs": 2, "precision": "fp32", "feature_dtype": "float32",
     "median_epoch_s": ..., "bytes_sent_per_epoch": {...}, "test_acc": ..., ...}
    {"bench": "distributed", "case": "summary", "compare": "epoch_time", "procs": 2, "precision": "fp32",
     "speedup_vs_1_process": ...}
    {"bench": "distributed", "case": "summary", "compare": "feature_bytes", "procs": 2,
     "precision": "amp-bf16", "feature_bytes_ratio": ..., "total_bytes_ratio": ...}
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _job(procs, precision, args, work):
    out = os.path.join(work, f"p{procs}-{precision}.json")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc_per_node={procs}",
           "--master-addr=127.0.0.1", f"--master-port={_free_port()}", "--max-restarts=0",
           "-m", "mpgraph.distributed.train", "--dataset", "csbm", "--scale", str(args.scale),
           "--part-dir", os.path.join(work, f"parts{procs}"), "--epochs", str(args.epochs),
           "--fanouts", args.fanouts, "--batch-size", str(args.batch_size), "--precision", precision,
           "--seed", str(args.seed), "--json", out, "--quiet", "--dist-timeout", "120"]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=args.timeout)
    if proc.returncode != 0:
        raise SystemExit(f"job procs={procs} precision={precision} failed ({proc.returncode}):\n{proc.stdout}\n"
                         f"{proc.stderr}")
    with open(out) as f:
        s = json.load(f)
    per_epoch = s["bytes_sent_per_epoch"]
    kinds = ("feature", "feat", "ids", "sampling", "counts", "total")
    return {
        "bench": "distributed", "case": "job", "procs": procs, "precision": precision,
        "feature_dtype": s["feature_dtype"], "num_nodes": s["num_nodes"], "num_edges": s["num_edges"],
        "epochs": s["epochs"], "batches_per_epoch": s["batches_per_epoch"], "batch_size_per_rank": s["batch_size"],
        "fanouts": s["fanouts"], "threads_per_process": args.threads,
        "median_epoch_s": s["median_epoch_s"], "epoch_times_s": s["epoch_times"],
        "bytes_sent_per_epoch": {k: statistics.median(b[k] for b in per_epoch) for k in kinds},
        "test_acc": s["test_acc"], "final_loss": s["final_loss"], "params_identical": s["params_identical"],
        "job_wall_s": time.perf_counter() - t0,
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=float, default=0.3, help="csbm nodes = 10000 x scale (default 0.3)")
    p.add_argument("--procs", default="1,2", help="process counts (default 1,2; 1 is the baseline)")
    p.add_argument("--precisions", default="fp32,amp-bf16", help="default fp32,amp-bf16 (fp32 is the baseline)")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--fanouts", default="10,10")
    p.add_argument("--batch-size", type=int, default=256, help="seeds per batch and process")
    p.add_argument("--threads", type=int, default=1, help="OMP threads per process (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=600, help="seconds per job")
    args = p.parse_args(argv)
    procs = sorted({int(x) for x in args.procs.split(",")} | {1})
    precisions = [x for x in args.precisions.split(",") if x]
    if "fp32" not in precisions:
        precisions.insert(0, "fp32")
    rows = {}
    with tempfile.TemporaryDirectory(prefix="mpgraph-bench-dist-") as work:
        for n in procs:
            for prec in precisions:
                row = _job(n, prec, args, work)
                rows[n, prec] = row
                print(json.dumps(row), flush=True)
    for n in procs:
        for prec in precisions:
            if n != 1:
                base = rows[1, prec]["median_epoch_s"]
                print(json.dumps({"bench": "distributed", "case": "summary", "compare": "epoch_time", "procs": n,
                                  "precision": prec, "median_epoch_s": rows[n, prec]["median_epoch_s"],
                                  "baseline_1_process_s": base,
                                  "speedup_vs_1_process": base / rows[n, prec]["median_epoch_s"]}), flush=True)
        for prec in precisions:
            if prec == "fp32" or n == 1:
                continue
            a, b = rows[n, "fp32"]["bytes_sent_per_epoch"], rows[n, prec]["bytes_sent_per_epoch"]
            print(json.dumps({"bench": "distributed", "case": "summary", "compare": "feature_bytes", "procs": n,
                              "precision": prec, "fp32_feat_bytes": a["feat"], f"{prec}_feat_bytes": b["feat"],
                              "feature_bytes_ratio": b["feat"] / a["feat"] if a["feat"] else float("nan"),
                              "total_bytes_ratio": b["total"] / a["total"] if a["total"] else float("nan")}),
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
