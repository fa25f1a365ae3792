"""The CLI's peak-memory measurement (``mpgraph.cli.memory``) on the CPU."""

import sys

import pytest
import torch

from mpgraph.cli.memory import PeakMemory, current_rss

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or current_rss() is None,
                                reason="reads /proc/self/status (Linux)")

MIB = 2**20


@pytest.fixture
def free_block():
    """A 40 MiB float32 block written once and free in the CPU buffer cache; yields ``(n, empty_out)``, the
    block's element count and the allocator that takes it. The cache is emptied afterwards."""
    pytest.importorskip("numba")
    from mpgraph.ops import cpu_cache_info, empty_cpu_cache
    from mpgraph.ops._cpu._core import empty_out

    empty_cpu_cache()
    n = 40 * MIB // 4
    t = empty_out((n,), torch.float32)
    t.fill_(1.0)
    del t
    if cpu_cache_info()["free_bytes"] < n * 4:
        empty_cpu_cache()
        pytest.skip("the CPU buffer cache is off (MPGRAPH_CPU_CACHE_MB=0) or too small")
    try:
        yield n, empty_out
    finally:
        empty_cpu_cache()


def test_block_memory_counts_its_allocations():
    with PeakMemory("cpu") as m:
        t = torch.ones(48 * MIB // 4)
    assert m.peak_bytes >= 40 * MIB
    del t


def test_reused_buffer_cache_blocks_count_as_the_blocks_memory(free_block):
    # a training step's large kernel outputs reuse the CPU buffer cache's free blocks, which are resident
    # before the step starts: they are the step's memory, not a level under it
    n, empty_out = free_block
    with PeakMemory("cpu") as m:
        u = empty_out((n,), torch.float32)    # the same block again: no new resident pages
        u.fill_(2.0)
    assert m.peak_bytes >= 32 * MIB, m.peak_bytes
    del u


def test_free_buffer_cache_blocks_the_block_never_takes_are_not_its_memory(free_block):
    # a block free at entry counts only when the measured work takes it again: one of another size
    # (another phase's output) is a level under the work, not its memory
    n, empty_out = free_block
    with PeakMemory("cpu") as m:
        u = torch.ones(16)          # nothing of the block's size: it stays free
    assert m.peak_bytes < 32 * MIB, m.peak_bytes
    del u
    with PeakMemory("cpu") as m2:
        v = empty_out((n // 2 * 2,), torch.float32)     # the same size: taken, counted
        v.fill_(2.0)
    assert m2.peak_bytes >= 32 * MIB, m2.peak_bytes
    del v
