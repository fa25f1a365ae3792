"""Triton kernels and their launchers (GPU; testable on CPU under ``TRITON_INTERPRET=1``).

This package is the ``triton`` backend of :mod:`mpgraph.ops._dispatch` (priority 30): :data:`KERNELS`
holds its spmm / sddmm / edge_softmax kernels and ``supports`` predicates (:mod:`._backend`). It
accepts CUDA tensors; CPU tensors only with ``MPGRAPH_TRITON_ON_CPU=1`` and ``TRITON_INTERPRET=1``
(tests), so the interpreter never takes ordinary CPU calls from the Numba/torch backends. Without
Triton installed :data:`KERNELS` is empty and the dispatch leaves the backend out.

Importing this package does not import Triton. Check :func:`available` first, then import the
launcher modules:

* :mod:`.spmm` -- ``gspmm(msg, reduce, u, e, indptr, src, eid, ...)``
* :mod:`.sddmm` -- ``gsddmm(op, lhs, rhs, src, dst, lhs_target, rhs_target, ...)``
* :mod:`.edge_softmax` -- ``edge_softmax_forward`` / ``edge_softmax_backward``
* :mod:`.segment` -- ``segment_reduce(x, offsets, reduce, ...)``
* :mod:`._common` -- ``row_schedule(indptr, split)``: the per-structure work split to cache

All launchers take and return torch tensors on one CUDA device (or on the CPU under the
interpreter). ``TRITON_INTERPRET`` is read when Triton and these modules are imported, so set
it before importing either.
"""

import importlib.util
import os

__all__ = ["available", "interpreting", "KERNELS"]


def interpreting():
    """True when ``TRITON_INTERPRET=1`` is set (kernels then run on CPU tensors, slowly)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def available():
    """True when Triton is importable and CUDA is present or ``TRITON_INTERPRET=1`` is set."""
    if importlib.util.find_spec("triton") is None:
        return False
    if interpreting():
        return True
    import torch
    return torch.cuda.is_available()


if importlib.util.find_spec("triton") is not None:
    from ._backend import KERNELS
else:   # the dispatch registers nothing: "not available: mpgraph.ops._triton defines no KERNELS"
    KERNELS = {}
