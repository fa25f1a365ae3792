"""A bounded cache of large output buffers for the CPU kernels, reused once no tensor holds them.

Why: glibc serves every allocation above 32 MiB from fresh pages and unmaps it on free, so a kernel's
large output costs, on every call, a page fault per page and the kernel's zeroing of each page before
the kernel writes it. A training loop asks for the same sizes every step (the forward's ``(N, D)``
result, the ``(E, D)`` gradient of an edge operand), so the pages of the last step can serve the next:
a 2M x 64 float32 max/min edge gradient took 20 ms into a reused buffer against 58 ms into a fresh one
(``benchmarks/buffer_cache.py`` measures it). Smaller buffers fault too: glibc's heap gives freed memory
back to the system once enough of it lies free at its top, so in a forward+backward loop a 100k x 64
float32 gradient (25.6 MB) was paged in afresh on up to every call, 6,250 faults (about 20 ms) each time:
41 of the 80 variants of ``benchmarks/variants.py`` faulted so in some of 4 calls in a row after warm-up,
none with a 4 MiB threshold but the 4.0 MB bf16 weight gradients of one weight per edge (about 980 faults
in some calls), none at all with 1 MiB (twenty-sixth session). Hence the 1 MiB threshold (32 MiB up to that
session); ``faults`` in that benchmark's lines counts them.

How: a block is a ``torch.UntypedStorage`` kept in :data:`_BLOCKS`. An output of at least
:data:`CACHE_MIN_BYTES` is a tensor *set on* a block (``Tensor.set_``: not a view, so autograd and
in-place ops treat it as any fresh tensor). A block is free again when nothing but the cache holds its
storage: its C++ use count is back to the one reference of its Python object (tensors, their views and
``numpy()`` arrays each hold one more), and that Python object (which ``untyped_storage()`` of any of
its tensors returns) has no more Python references than when the block was made. So no memory anyone
can still reach is handed out twice. A request takes the smallest free block of its size (rounded up to
2 MiB, or to 256 KiB below 32 MiB: :func:`block_bytes`) up to a quarter more (:data:`FIT_SLACK`): a
training loop repeats its shapes, and mini-batches of varying sizes share blocks.

Bounds: every block the cache holds, in use or free, counts against :func:`limit_bytes`
(``MPGRAPH_CPU_CACHE_MB``, read at every call; default the smaller of 2048 MiB and an eighth of the
machine's memory; ``0`` turns the cache off). An allocation that does not fit evicts free blocks, oldest
first; if it still does not fit it is a plain ``torch.empty`` the cache does not keep. So the memory the
cache keeps that no tensor uses is at most the limit. :func:`empty_cache` hands all free blocks back.
"""

import functools
import math
import os
import sys
import threading

import torch

__all__ = ["CACHE_MIN_BYTES", "limit_bytes", "block_bytes", "take", "cached_empty", "in_use_bytes", "held_bytes",
           "reset_peak_in_use", "end_peak_in_use", "peak_in_use",
           "empty_cache", "cache_info"]

#: outputs at least this large come from the cache: glibc re-faults freed buffers of a few MiB and more
#: (see above); below this the faults cost less
CACHE_MIN_BYTES = 1 << 20
#: block sizes are rounded up to this (one huge page), so near sizes share blocks
BLOCK_ROUND = 2 << 20
#: below :data:`ROUND_FINE_BELOW` bytes, to this: a 4.6 MB output in a 6 MiB block wasted a quarter of it
#: (the fp32 (E, 1) tensors of `mpgraph bench precision`'s GAT: 11 such blocks, 16 MB unused)
BLOCK_ROUND_FINE = 256 << 10
ROUND_FINE_BELOW = 32 << 20
#: a free block up to 1/FIT_SLACK larger than a request serves it (the smallest such): outputs whose sizes
#: vary from call to call (mini-batches, graphs of several sizes) then reuse blocks instead of each making
#: one; with exact sizes only, 120 backward calls of copy_u mean on graphs of 40k-100k nodes grew the cache
#: to 96 blocks, 1.65 GiB (twenty-sixth session)
FIT_SLACK = 4
#: the default limit, MiB, before the memory cap below
DEFAULT_LIMIT_MB = 2048
ENV = "MPGRAPH_CPU_CACHE_MB"

_use_count = getattr(torch._C, "_storage_Use_Count", None)   # missing: the cache stays off
_LOCK = threading.Lock()
_BLOCKS = []         # _Block, least recently handed out first
_STATS = {"hits": 0, "misses": 0, "bypassed": 0}


def _reset_after_fork():
    """A forked child starts with an empty cache and a fresh lock (another thread may have held it)."""
    global _LOCK
    _LOCK = threading.Lock()
    _BLOCKS.clear()
    for k in _STATS:
        _STATS[k] = 0
    _PEAK["in_use"] = 0
    _PEAK["windows"] = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


@functools.cache
def _default_limit_bytes():
    """min(DEFAULT_LIMIT_MB, RAM / 8) in bytes; the machine's memory is read once."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 0
    limit = DEFAULT_LIMIT_MB << 20
    return min(limit, total // 8) if total > 0 else limit


def limit_bytes():
    """The cache's limit in bytes: ``MPGRAPH_CPU_CACHE_MB`` MiB, or the default; 0 when it is off.

    Raises
    ------
    ValueError
        ``MPGRAPH_CPU_CACHE_MB`` is set to something other than a whole number of MiB >= 0.
    """
    raw = os.environ.get(ENV)
    if raw is None or raw.strip() == "":
        return _default_limit_bytes() if _use_count is not None else 0
    try:
        mb = int(raw)
    except ValueError:
        mb = -1
    if mb < 0:
        raise ValueError(f"{ENV} must be a whole number of MiB >= 0 (0 turns the CPU buffer cache off), got {raw!r}")
    return (mb << 20) if _use_count is not None else 0


class _Block:
    """One cached buffer: its storage, and the Python references the storage has when nobody else holds it."""

    __slots__ = ("storage", "idle_refs")

    def __init__(self, size):
        self.storage = torch.UntypedStorage(size)
        self.idle_refs = _refs(self)      # measured by the same code as later checks, before anyone has it

    def nbytes(self):
        return self.storage.nbytes()


def _refs(block):
    storage = block.storage
    return sys.getrefcount(storage)


def _free(block):
    """Whether nothing but the cache reaches the block's memory."""
    return _use_count(block.storage._cdata) == 1 and _refs(block) == block.idle_refs


def block_bytes(nbytes):
    """The size of the block that serves ``nbytes``: rounded up to :data:`BLOCK_ROUND`, or below
    :data:`ROUND_FINE_BELOW` to :data:`BLOCK_ROUND_FINE`."""
    step = BLOCK_ROUND_FINE if nbytes < ROUND_FINE_BELOW else BLOCK_ROUND
    return -(-nbytes // step) * step


def take(nbytes, on_new=None):
    """A storage of at least ``nbytes`` bytes from the cache, or None when the caller should allocate itself.

    ``on_new(storage)`` runs on a block the first time it is made (the huge-page advice), before any write.
    """
    limit = limit_bytes()
    size = block_bytes(nbytes)
    if nbytes < CACHE_MIN_BYTES or size > limit:
        return None
    with _LOCK:
        best = None                                 # the smallest free block that is large enough, within slack
        for i, block in enumerate(_BLOCKS):
            have = block.nbytes()
            if size <= have <= size + size // FIT_SLACK and (best is None or have < _BLOCKS[best].nbytes()) \
                    and _free(block):
                best = i
                if have == size:
                    break
        if best is not None:
            block = _BLOCKS.pop(best)
            _BLOCKS.append(block)                   # most recently used last
            _STATS["hits"] += 1
            _note_in_use(block)
            return block.storage
        held = _held_sum()
        i = 0
        while held + size > limit and i < len(_BLOCKS):
            if _free(_BLOCKS[i]):
                held -= _BLOCKS.pop(i).nbytes()
            else:
                i += 1
        if held + size > limit:
            _STATS["bypassed"] += 1
            return None
        block = _Block(size)
        if on_new is not None:
            on_new(block.storage)
        _BLOCKS.append(block)
        _STATS["misses"] += 1
        _note_in_use(block)
        return block.storage


def cached_empty(shape, dtype, on_new=None):
    """An uninitialised CPU tensor of ``shape`` and ``dtype`` set on a cache block, or None when the cache
    does not serve it (below :data:`CACHE_MIN_BYTES`, off, or full): then the caller allocates itself."""
    shape = tuple(int(n) for n in shape)
    block = take(math.prod(shape) * dtype.itemsize, on_new)
    return None if block is None else torch.empty(0, dtype=dtype).set_(block, 0, shape)


#: the most bytes of blocks in use at once, seen at hand-outs (:func:`peak_in_use`), and how many measurements
#: want it: with none, hand-outs skip the count (it reads every block: about 0.7 us a block)
_PEAK = {"in_use": 0, "windows": 0}


def _note_in_use(given):
    """(Under the lock, at a hand-out of ``given``, the only moment the bytes in use can rise; nothing holds
    ``given`` yet.)"""
    if _PEAK["windows"] > 0:
        _PEAK["in_use"] = max(_PEAK["in_use"], _in_use_sum(given))


def _in_use_sum(given=None):
    """(Under the lock.) Bytes of the blocks in use, counting ``given`` (being handed out) as in use."""
    return sum(b.nbytes() for b in _BLOCKS if b is given or not _free(b))


def _held_sum():
    """(Under the lock.) Bytes of all blocks."""
    return sum(b.nbytes() for b in _BLOCKS)


def in_use_bytes():
    """Bytes of the blocks some tensor, view or handle still reaches."""
    with _LOCK:
        return _in_use_sum()


def held_bytes():
    """Bytes of all blocks the cache holds, in use or free."""
    with _LOCK:
        return _held_sum()


def reset_peak_in_use():
    """Start a new :func:`peak_in_use` window at the bytes in use now (until :func:`end_peak_in_use`);
    returns them."""
    with _LOCK:
        _PEAK["windows"] += 1
        _PEAK["in_use"] = _in_use_sum()
        return _PEAK["in_use"]


def end_peak_in_use():
    """Close a window :func:`reset_peak_in_use` opened; returns :func:`peak_in_use`."""
    with _LOCK:
        _PEAK["windows"] = max(0, _PEAK["windows"] - 1)
        return _PEAK["in_use"]


def peak_in_use():
    """The most bytes of blocks in use at once since :func:`reset_peak_in_use` (checked at each hand-out,
    when it can rise)."""
    return _PEAK["in_use"]


def empty_cache():
    """Hand every free block back to the system; returns the bytes released. Blocks in use stay."""
    with _LOCK:
        held = _held_sum()
        _BLOCKS[:] = [b for b in _BLOCKS if not _free(b)]
        released = held - _held_sum()
    return released


def cache_info():
    """The cache's state: ``limit_bytes``, ``held_bytes`` (all blocks), ``free_bytes`` (blocks no tensor
    uses), ``blocks``, and the counts ``hits`` (a free block reused), ``misses`` (a block made) and
    ``bypassed`` (a large output allocated outside the cache because it would pass the limit)."""
    with _LOCK:
        held = _held_sum()
        return dict(limit_bytes=limit_bytes(), held_bytes=held, free_bytes=held - _in_use_sum(), blocks=len(_BLOCKS),
                    **_STATS)
