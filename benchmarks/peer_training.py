"""The same GCN and GAT training steps written once and run on mpgraph and on DGL 2.1, as JSON lines.

The model code is DGL's API (``<lib>.graph``, ``<lib>.nn.GraphConv``, ``<lib>.nn.GATConv``): ``lib`` is
``mpgraph`` or ``dgl``, which is the whole port. Each configuration (library, model, precision) runs in a
fresh process of its own, the configurations round-robin, so each library runs with its own defaults (a DGL
process never imports mpgraph, whose import sets ``OMP_WAIT_POLICY`` and ``THP_MEM_ALLOC_ENABLE``) and the
peak resident memory (``VmHWM``) of a process is that configuration's: ``peak_rss_mib`` is the whole
process's (imports, graph and data included, as the anchor table gives it), ``train_extra_mib`` its growth
over the resident memory just before the first step (graph, features and model already built). The
workload is the one of the anchor table in ``shared/bench/README.md``: the uniform graph (N=100k, E=2M), 128
input features, 16 classes, forward + cross-entropy + backward + Adam, on torch's thread count:

* ``gcn``: GraphConv 128 -> 256 (ReLU) -> 16;
* ``gat``: GATConv 128 -> 64 x 4 heads (ELU) -> 64 x 4 heads (ELU) -> 16 x 1 head;

in ``fp32``, ``bf16`` (model and features converted) and ``amp-bf16`` (``torch.autocast('cpu',
torch.bfloat16)``). A configuration that raises reports its error. Needs a venv where both libraries import
(``benchmarks/ops.py``'s docstring says how to make one)::

    python benchmarks/peer_training.py --models gcn,gat --repeats 2
"""

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _child import run_json  # noqa: E402

LIBS = ("mpgraph", "dgl")
PRECISIONS = ("fp32", "bf16", "amp-bf16")


def _status_mib(field):
    """``VmHWM`` (peak resident memory) or ``VmRSS`` of this process in MiB, from ``/proc/self/status``."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise SystemExit(f"no {field} in /proc/self/status: this benchmark needs Linux")


def child(lib, model, precision, graph, steps, warmup):
    """One configuration in this process; prints one JSON object."""
    import time

    import torch
    import torch.nn.functional as F

    if lib == "mpgraph":
        sys.path.insert(0, os.path.dirname(HERE))
        import mpgraph as gl
    else:
        import dgl as gl
    from _graphs import bench_graphs

    out = {"bench": "peer_training", "lib": lib, "model": model, "precision": precision, "graph": graph,
           "threads": torch.get_num_threads(), "version": gl.__version__, "steps": steps}
    d = bench_graphs().make_graph(graph)
    g = gl.graph((d["src"], d["dst"]), num_nodes=d["N"])
    if lib == "dgl":
        g.create_formats_()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(d["N"], 128, generator=gen)
    y = torch.randint(0, 16, (d["N"],), generator=gen)
    torch.manual_seed(0)

    class GCN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = gl.nn.GraphConv(128, 256, activation=F.relu, allow_zero_in_degree=True)
            self.c2 = gl.nn.GraphConv(256, 16, allow_zero_in_degree=True)

        def forward(self, g, h):
            return self.c2(g, self.c1(g, h))

    class GAT(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = gl.nn.GATConv(128, 64, 4, activation=F.elu, allow_zero_in_degree=True)
            self.c2 = gl.nn.GATConv(256, 64, 4, activation=F.elu, allow_zero_in_degree=True)
            self.c3 = gl.nn.GATConv(256, 16, 1, allow_zero_in_degree=True)

        def forward(self, g, h):
            h = self.c1(g, h).flatten(1)
            h = self.c2(g, h).flatten(1)
            return self.c3(g, h).mean(1)

    net = GCN() if model == "gcn" else GAT()
    if precision == "bf16":
        net, x = net.to(torch.bfloat16), x.to(torch.bfloat16)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)

    def step():
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "amp-bf16"):
            logits = net(g, x)
        loss = F.cross_entropy(logits.float(), y)
        loss.backward()
        opt.step()
        return float(loss)

    rss_before = _status_mib("VmRSS")
    try:
        for _ in range(warmup):
            step()
        times, loss = [], None
        for _ in range(steps):
            t0 = time.perf_counter()
            loss = step()
            times.append(time.perf_counter() - t0)
    except Exception as e:  # noqa: BLE001 - reported as this configuration's result
        out["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        print(json.dumps(out), flush=True)
        return
    out.update(step_s=round(statistics.median(times), 4), steps_s=[round(t, 4) for t in times],
               loss=round(loss, 4), peak_rss_mib=round(_status_mib("VmHWM"), 1),
               train_extra_mib=round(_status_mib("VmHWM") - rss_before, 1))
    print(json.dumps(out), flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default="uniform")
    p.add_argument("--models", default="gcn,gat")
    p.add_argument("--precisions", default=",".join(PRECISIONS))
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--steps", type=int, default=5, help="timed steps per process (the median is reported)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=1, help="processes per configuration, round-robin")
    a = p.parse_args(argv)
    configs = [(lib, m, pr) for m in a.models.split(",") for pr in a.precisions.split(",")
               for lib in a.libs.split(",")]
    results = {c: [] for c in configs}
    for _ in range(a.repeats):
        for lib, m, pr in configs:
            code = (f"import sys; sys.path.insert(0, {HERE!r}); import peer_training; "
                    f"peer_training.child({lib!r}, {m!r}, {pr!r}, {a.graph!r}, {a.steps}, {a.warmup})")
            r = run_json(code, dict(os.environ), what=f"{lib} {m} {pr}")
            print(json.dumps(r), flush=True)
            results[(lib, m, pr)].append(r)

    def med(lib, m, pr, key):
        vals = [r[key] for r in results.get((lib, m, pr), ()) if key in r]
        return statistics.median(vals) if vals else None

    for m in a.models.split(","):
        dgl32 = med("dgl", m, "fp32", "step_s")
        mp32_mem = med("mpgraph", m, "fp32", "peak_rss_mib")
        for pr in a.precisions.split(","):
            mp, dg = med("mpgraph", m, pr, "step_s"), med("dgl", m, pr, "step_s")
            mem = med("mpgraph", m, pr, "peak_rss_mib")
            extra, extra32 = med("mpgraph", m, pr, "train_extra_mib"), med("mpgraph", m, "fp32", "train_extra_mib")
            print(json.dumps({"bench": "peer_training_summary", "model": m, "precision": pr, "mpgraph_step_s": mp,
                              "dgl_step_s": dg, "mpgraph_over_dgl": round(mp / dg, 3) if mp and dg else None,
                              "mpgraph_over_dgl_fp32": round(mp / dgl32, 3) if mp and dgl32 else None,
                              "mpgraph_peak_rss_mib": mem, "dgl_peak_rss_mib": med("dgl", m, pr, "peak_rss_mib"),
                              "mpgraph_mem_over_fp32": round(mem / mp32_mem, 3) if mem and mp32_mem else None,
                              "mpgraph_train_extra_mib": extra,
                              "dgl_train_extra_mib": med("dgl", m, pr, "train_extra_mib"),
                              "mpgraph_extra_over_fp32": round(extra / extra32, 3) if extra and extra32 else None}),
                  flush=True)


if __name__ == "__main__":
    main()
