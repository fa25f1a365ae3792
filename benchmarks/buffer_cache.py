"""The CPU buffer cache of large kernel outputs, on against off, in one process.

mpgraph's CPU kernels take their outputs of 32 MiB or more from a bounded cache of buffers that no
tensor holds any more (``MPGRAPH_CPU_CACHE_MB``, read at every call; ``0`` turns it off; see
docs/performance.rst). This times the public ops forward and forward+backward with the cache on (the
default limit) and off, alternating the two settings call by call in the same process, so a busy machine
slows both alike. Huge-page advice stays at its default (on) in both. Besides the wall-clock medians it
reports process CPU time (all threads) and, per setting, forward+backward over forward (the issue's
<= 2.5x target).

One JSON line per op x dtype::

    {"bench": "buffer_cache", "graph": "uniform", "op": "copy_e_max", "D": 64, "dtype": "float32",
     "threads": 2, "rounds": 7, "fwd_ms": {"off": ..., "on": ...}, "fwdbwd_ms": {...},
     "fwd_cpu_ms": {...}, "fwdbwd_cpu_ms": {...}, "on_over_off": {"fwd": ..., "fwdbwd": ...},
     "fwdbwd_over_fwd": {"off": ..., "on": ...}}

Usage::

    python benchmarks/buffer_cache.py --graph uniform --dims 64 --rounds 7
    python benchmarks/buffer_cache.py --graph large --dims 128 --ops copy_u_sum,u_mul_e_sum --rounds 5
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from huge_pages import compare  # noqa: E402

SWITCH = "MPGRAPH_CPU_CACHE_MB"


def main(argv=None):
    # off: the cache turned off; on: its default limit (the variable unset); huge pages at their default
    compare(argv, __doc__.split("\n")[0], "buffer_cache", SWITCH, (("0", "off"), (None, "on")),
            {"MPGRAPH_HUGE_PAGES": None})


if __name__ == "__main__":
    main()
