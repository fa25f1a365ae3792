"""Message-passing primitives: tensors and a graph structure in, tensors out.

The ops take a graph (or its :class:`mpgraph._index.Index`) and feature tensors,
validate them, and run the kernel :mod:`mpgraph.ops._dispatch` selects. They
know nothing of node/edge frames.

* :func:`gspmm` and its named variants (``copy_u_sum``, ``u_mul_e_max``, ...):
  messages on edges reduced at destinations.
* :func:`gsddmm` and its named variants (``u_dot_v``, ``e_sub_v``, ``copy_u``, ...):
  one value per edge from its endpoints.
* :func:`edge_softmax`: softmax of edge logits per destination (or source).
* :func:`segment_reduce`, :func:`segment_softmax`: the same over consecutive row segments.
* :func:`dropout`: dropout with a seeded mask (fast on the CPU; the backward recomputes the mask).

* :func:`empty_cpu_cache`, :func:`cpu_cache_info`: the CPU kernels' cache of large output
  buffers (``MPGRAPH_CPU_CACHE_MB``), reused across calls.

Precision: float16/bfloat16 sums, means, dots and softmax denominators
accumulate in float32 and round once (see :mod:`mpgraph.precision`).
"""

from ._cpu._buffers import cache_info as cpu_cache_info, empty_cache as empty_cpu_cache
from .dropout import dropout
from .edge_softmax import edge_softmax
from .sddmm import (
    gsddmm, copy_u, copy_v, u_add_v, u_sub_v, u_mul_v, u_div_v, u_dot_v, u_add_e, u_sub_e, u_mul_e, u_div_e,
    u_dot_e, v_add_u, v_sub_u, v_mul_u, v_div_u, v_dot_u, v_add_e, v_sub_e, v_mul_e, v_div_e, v_dot_e,
    e_add_u, e_sub_u, e_mul_u, e_div_u, e_dot_u, e_add_v, e_sub_v, e_mul_v, e_div_v, e_dot_v,
)
from .segment import segment_reduce, segment_softmax
from .spmm import (
    gspmm, copy_u_sum, copy_u_mean, copy_u_max, copy_u_min, copy_e_sum, copy_e_mean, copy_e_max, copy_e_min,
    u_add_e_sum, u_add_e_mean, u_add_e_max, u_add_e_min, u_sub_e_sum, u_sub_e_mean, u_sub_e_max, u_sub_e_min,
    u_mul_e_sum, u_mul_e_mean, u_mul_e_max, u_mul_e_min, u_div_e_sum, u_div_e_mean, u_div_e_max, u_div_e_min,
)

__all__ = [
    "gspmm", "copy_u_sum", "copy_u_mean", "copy_u_max", "copy_u_min", "copy_e_sum", "copy_e_mean",
    "copy_e_max", "copy_e_min", "u_add_e_sum", "u_add_e_mean", "u_add_e_max", "u_add_e_min", "u_sub_e_sum",
    "u_sub_e_mean", "u_sub_e_max", "u_sub_e_min", "u_mul_e_sum", "u_mul_e_mean", "u_mul_e_max",
    "u_mul_e_min", "u_div_e_sum", "u_div_e_mean", "u_div_e_max", "u_div_e_min",
    "gsddmm", "copy_u", "copy_v", "u_add_v", "u_sub_v", "u_mul_v", "u_div_v", "u_dot_v", "u_add_e",
    "u_sub_e", "u_mul_e", "u_div_e", "u_dot_e", "v_add_u", "v_sub_u", "v_mul_u", "v_div_u", "v_dot_u",
    "v_add_e", "v_sub_e", "v_mul_e", "v_div_e", "v_dot_e", "e_add_u", "e_sub_u", "e_mul_u", "e_div_u",
    "e_dot_u", "e_add_v", "e_sub_v", "e_mul_v", "e_div_v", "e_dot_v",
    "edge_softmax", "segment_reduce", "segment_softmax", "empty_cpu_cache", "cpu_cache_info", "dropout",
]
