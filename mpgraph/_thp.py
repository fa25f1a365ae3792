"""Transparent huge pages for torch's large CPU tensors, asked for before torch's allocator first runs.

A gSpMM forward gathers one source row per edge at random, so on 4 KiB pages nearly every row costs a TLB miss
and a page walk. torch's CPU allocator can page-align allocations of 2 MiB or more and advise them as
transparent huge pages (``madvise(MADV_HUGEPAGE)``) when ``THP_MEM_ALLOC_ENABLE=1``; mpgraph's own kernel
outputs are advised so already (``ops._cpu._core.advise_huge_pages``), but node features come from torch
(``randn``, a ``Linear``). Measured in the thirty-third session on a 2-core AMD EPYC VM (AVX2, 8 MiB L3,
transparent huge pages ``madvise``), 10M-edge graph, D=128, copy_u sum forward on ``torch.randn`` features,
two process pairs: 474-480 ms against 687-762 ms in float32, 333-360 ms against 509-719 ms in bfloat16;
``benchmarks/input_pages.py`` on that machine (features advised by hand) 0.73-0.80x over copy_u sum,
u_mul_e sum and copy_u max. On the twenty-first session's machine, advised features made no consistent
difference (0.86-1.26x).

So ``import mpgraph`` sets ``THP_MEM_ALLOC_ENABLE=1`` when the variable is unset; a value the user set (``0``
turns it off) is left alone. torch reads it once, at its first CPU allocation (not at ``import torch``), so
it applies unless a tensor was made before ``import mpgraph``. Where the system's transparent huge pages are
``never`` (``/sys/kernel/mm/transparent_hugepage/enabled``), the advice does nothing. :func:`status` says which
case holds; ``mpgraph info`` prints it. (This module imports neither torch nor numba.)
"""

from ._openmp import describe, set_default

__all__ = ["ENV", "configure", "status"]

ENV = "THP_MEM_ALLOC_ENABLE"
_STATE = {"case": None}


def configure():
    """Set ``THP_MEM_ALLOC_ENABLE=1`` unless the user set it; remember whether torch had loaded already."""
    return set_default(ENV, "1", _STATE)


def _system_mode():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.find("[") + 1:text.find("]")] if "[" in text else None


def status():
    """One line on whether torch's large CPU tensors are advised as transparent huge pages in this process."""
    case = configure()
    mode = _system_mode()
    system = (f"; the system's transparent huge pages: {mode}" if mode else "; no transparent huge pages here") + (
        " (the advice does nothing)" if mode in (None, "never") else "")
    return describe(
        ENV, case,
        f"{ENV}=1 (set by mpgraph before torch loaded: large CPU tensors are advised as huge pages)",
        f"{ENV}=1 (set by mpgraph after torch loaded: it applies unless a CPU tensor was made before "
        f"import mpgraph; set {ENV}=1 in the environment to be sure)") + system


configure()     # on import: ``mpgraph/__init__.py`` imports this module before anything that imports torch
