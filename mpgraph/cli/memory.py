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


def _cpu_cache_free_bytes():
    """Bytes the CPU kernels' buffer cache holds in free blocks (0 when it cannot be read)."""
    try:
        from ..ops import cpu_cache_info
        return int(cpu_cache_info()["free_bytes"])
    except Exception:   # the kernels' package failed to import: there is no cache to count
        return 0


class PeakMemory:
    """Context manager measuring peak memory over a block, above the level at its start.

    ``device`` ``'cpu'``: peak RSS minus the RSS at entry, where the RSS at entry leaves out the free blocks
    of the CPU kernels' buffer cache (:func:`mpgraph.ops.cpu_cache_info`): the block's large outputs reuse
    them, so they are the block's memory, not a level under it (counted at entry, they hid a training
    step's largest tensors: fp32 GAT with 8 heads on 1.1M edges showed 52 MiB per step with the cache and
    236 MiB without). ``'cuda'``: ``torch.cuda.max_memory_allocated`` minus the allocation at entry.
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
        self._base = max(0, (current_rss() or 0) - _cpu_cache_free_bytes())
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
            self.peak_bytes = max(0, _status_kb("VmHWM") * 1024 - self._base)
        else:
            self._stop.set()
            self._thread.join()
            self.peak_bytes = max(0, self._peak - self._base)
        return False


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
