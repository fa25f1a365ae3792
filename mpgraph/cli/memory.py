"""Peak memory of a block of work: CPU resident set (RSS) or CUDA allocations.

On Linux the kernel keeps the peak RSS (``VmHWM``) and lets a process reset it
by writing ``5`` to ``/proc/self/clear_refs``; the peak over the block is then
exact. Where that is not possible a thread samples the RSS every millisecond.
"""

import os
import threading
import time

import torch

__all__ = ["PeakMemory", "StepMemory", "current_rss"]


def _status_kb(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def current_rss():
    """Resident set size of this process in bytes (``None`` where unknown)."""
    kb = _status_kb("VmRSS")
    return None if kb is None else kb * 1024


def _reset_hwm():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _cpu_cache():
    """The CPU kernels' buffer cache module, or None when it cannot be imported (no cache to count)."""
    try:
        from ..ops._cpu import _buffers
        return _buffers
    except Exception:   # the kernels' package failed to import
        return None


class PeakMemory:
    """Context manager measuring peak memory over a block, above the level at its start.

    ``device`` ``'cpu'``: peak RSS minus the RSS at entry, where the CPU kernels' buffer cache
    (:func:`mpgraph.ops.cpu_cache_info`) counts by what the block's outputs hold of it at once, not by its
    blocks: the growth of the bytes of its blocks in use (their peak over the block, checked at every
    hand-out, minus those in use at entry) replaces the growth of the bytes it holds. Free blocks the block
    takes again are its memory (without the cache it would allocate them; left out, they hid a training
    step's largest tensors: fp32 GAT with 8 heads on 1.1M edges showed 52 MiB per step with the cache and
    236 MiB without), while the cache's blocks of other sizes, which the C library could have merged, are
    not. (Up to the twenty-sixth session every block free at entry was counted; with the cache taking
    outputs from 1 MiB that read 72 MiB for a step whose live peak is 49 MiB.) ``'cuda'``:
    ``torch.cuda.max_memory_allocated`` minus the allocation at entry.
    The result is in :attr:`peak_bytes` after the block.
    """

    def __init__(self, device="cpu"):
        self.device = torch.device(device)
        self.peak_bytes = None
        self.method = None

    def __enter__(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self._base = torch.cuda.memory_allocated(self.device)
            self.method = "cuda.max_memory_allocated"
            return self
        cache = _cpu_cache()
        self._cache0 = None if cache is None else (cache.held_bytes(), cache.reset_peak_in_use())
        self._base = current_rss() or 0
        if _reset_hwm() and _status_kb("VmHWM") is not None:
            self.method = "VmHWM"
        else:
            self.method = "sampled"
            self._peak = self._base
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            rss = current_rss() or 0
            self._peak = max(self._peak, rss)
            time.sleep(0.001)

    def __exit__(self, *exc):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self.peak_bytes = torch.cuda.max_memory_allocated(self.device) - self._base
        elif self.method == "VmHWM":
            self.peak_bytes = max(0, _status_kb("VmHWM") * 1024 - self._base + self._cache_delta())
        else:
            self._stop.set()
            self._thread.join()
            self.peak_bytes = max(0, self._peak - self._base + self._cache_delta())
        return False

    def _cache_delta(self):
        """What the block's outputs held of the buffer cache at once, less what the RSS saw it grow by."""
        cache = _cpu_cache()
        if self._cache0 is None or cache is None:
            return 0
        held0, in_use0 = self._cache0
        self._cache0 = None
        return max(0, cache.end_peak_in_use() - in_use0) - max(0, cache.held_bytes() - held0)


class StepMemory:
    """Peak memory of the training epochs after the first (of the only one when there is one).

    The first epoch also loads compiled kernel code (Numba/LLVM) and creates the optimizer state, which is
    not the per-step memory a precision mode changes. Call :meth:`epoch_done` after every epoch and
    :meth:`close` after the last; :meth:`close` returns the :class:`PeakMemory` with the figure.
    """

    def __init__(self, device, epochs):
        self._mem = PeakMemory(device)
        self._epochs = epochs
        if epochs == 1:
            self._mem.__enter__()

    def epoch_done(self, epoch):
        if epoch == 0 and self._epochs > 1:
            self._mem.__enter__()

    def close(self):
        self._mem.__exit__(None, None, None)
        return self._mem


def atomic_write(path, data, mode="w"):
    """Write ``data`` to ``path`` through a temporary file and ``os.replace``."""
    path = os.fspath(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, mode) as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
