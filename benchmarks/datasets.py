"""Build time and peak memory of :class:`mpgraph.data.RedditLikeDataset`, as JSON lines.

Each measurement runs in a fresh Python process, so its peak RSS is its own. The
baseline, in the same run, allocates what the dataset holds at the end (the same
number of uniformly random int64 edge endpoints and float32 normal features) with
no degree law, homophily or deduplication: the floor any generator pays.

Usage::

    python benchmarks/datasets.py                 # scale 0.05 (11,648 nodes, 5.7M edges): seconds
    python benchmarks/datasets.py --scale 0.2
    python benchmarks/datasets.py --scale 1.0     # Reddit's size: 232,965 nodes, 114.6M edges; ~4 GB peak

Output, one line each for the baseline and the dataset::

    {"bench": "datasets", "case": "RedditLikeDataset", "scale": 0.05, "num_nodes": ..., "num_edges": ...,
     "build_s": ..., "peak_rss_mib": ..., "rss_before_mib": ..., ...}
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

REDDIT_NODES = 232_965
REDDIT_EDGES = 114_615_892
REDDIT_FEATS = 602


def _rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _worker(case, scale, seed):
    import numpy as np
    import torch

    import mpgraph.data  # noqa: F401  (imported before the "before" reading)

    before = _rss_mib()
    t0 = time.perf_counter()
    if case == "baseline_uniform_arrays":
        n = int(round(REDDIT_NODES * scale))
        e = int(round(n * REDDIT_EDGES / REDDIT_NODES))
        rng = np.random.default_rng(seed)
        src = torch.from_numpy(rng.integers(0, n, e))
        dst = torch.from_numpy(rng.integers(0, n, e))
        feat = rng.standard_normal((n, REDDIT_FEATS), dtype=np.float32)
        out = {"num_nodes": n, "num_edges": int(src.numel())}
        del dst, feat
    else:
        from mpgraph.data import RedditLikeDataset

        g = RedditLikeDataset(scale=scale, seed=seed)[0]
        t_build = time.perf_counter() - t0
        src, dst = g.edges()
        label = g.ndata["label"]
        deg = g.in_degrees()
        out = {
            "num_nodes": g.num_nodes(),
            "num_edges": g.num_edges(),
            "mean_degree": round(float(deg.double().mean()), 2),
            "median_degree": float(deg.double().median()),
            "max_degree": int(deg.max()),
            "edge_homophily": round(float((label[src] == label[dst]).double().mean()), 4),
            "build_s_graph_only": round(t_build, 3),
        }
    build_s = time.perf_counter() - t0
    out.update(build_s=round(build_s, 3), peak_rss_mib=round(_peak_mib(), 1), rss_before_mib=round(before, 1))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=0.05, help="fraction of Reddit's node count (default 0.05)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--worker", choices=["RedditLikeDataset", "baseline_uniform_arrays"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(args.worker, args.scale, args.seed)))
        return
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    for case in ("baseline_uniform_arrays", "RedditLikeDataset"):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", case, "--scale", str(args.scale),
               "--seed", str(args.seed)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            record = {"error": f"exit {proc.returncode}"}
        else:
            record = json.loads(proc.stdout.strip().splitlines()[-1])
        print(json.dumps({"bench": "datasets", "case": case, "scale": args.scale, "seed": args.seed, **record}),
              flush=True)


if __name__ == "__main__":
    main()
