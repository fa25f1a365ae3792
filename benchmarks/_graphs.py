"""The benchmark graphs of ``shared/bench/graphs.py``, found without importing mpgraph (so a process timing a
peer library alone, ``dgl_alone.py`` or a ``peer_training.py`` child, can use them too)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def bench_graphs():
    """The ``graphs`` module of ``MPGRAPH_BENCH_GRAPHS``, ``../shared/bench`` or ``/work/shared/bench``."""
    for root in (os.environ.get("MPGRAPH_BENCH_GRAPHS"), os.path.join(os.path.dirname(HERE), "shared", "bench"),
                 "/work/shared/bench"):
        if root and os.path.exists(os.path.join(root, "graphs.py")):
            sys.path.insert(0, root)
            import graphs

            return graphs
    raise SystemExit("benchmark graphs not found: set MPGRAPH_BENCH_GRAPHS to the folder holding graphs.py")
