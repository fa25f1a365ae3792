"""The CPU buffer cache of large kernel outputs (mpgraph/ops/_cpu/_buffers.py)."""

import gc
import threading

import pytest
import torch

import mpgraph
from mpgraph.ops._cpu import _buffers

MIN = _buffers.CACHE_MIN_BYTES
BIG = (MIN // 4 + 1024,)          # float32 elements just above the cache's threshold
BIG_BLOCK = _buffers.block_bytes(BIG[0] * 4)     # the block BIG takes


@pytest.fixture
def cache(monkeypatch):
    """An empty cache with a 256 MiB limit; emptied again afterwards."""
    monkeypatch.setenv(_buffers.ENV, "256")
    gc.collect()
    _buffers.empty_cache()
    assert _buffers.cache_info()["blocks"] == 0, "an earlier test still holds a cached output"
    for k in ("hits", "misses", "bypassed"):
        monkeypatch.setitem(_buffers._STATS, k, 0)
    yield _buffers
    _buffers.empty_cache()


def _empty(shape, dtype=torch.float32):
    from mpgraph.ops._cpu import _core
    return _core.empty_out(shape, dtype)


def test_a_freed_output_is_reused_and_a_live_one_never(cache):
    a = _empty(BIG)
    ptr = a.data_ptr()
    b = _empty(BIG)                                   # a is alive: another block
    assert b.data_ptr() != ptr
    del a
    c = _empty(BIG)                                   # a's block is free again
    assert c.data_ptr() == ptr
    info = cache.cache_info()
    assert info["hits"] == 1 and info["misses"] == 2 and info["blocks"] == 2 and info["free_bytes"] == 0
    c.fill_(3.0)
    assert b.data_ptr() != c.data_ptr() and float(c[-1]) == 3.0


@pytest.mark.parametrize("holder", ["view", "numpy", "storage"])
def test_a_block_is_not_handed_out_while_anything_reaches_its_memory(cache, holder):
    a = _empty(BIG)
    ptr = a.data_ptr()
    if holder == "view":
        keep = a[10:20]
    elif holder == "numpy":
        keep = a.numpy()
    else:
        keep = a.untyped_storage()
    del a
    b = _empty(BIG)
    assert b.data_ptr() != ptr
    del keep, b
    assert _empty(BIG).data_ptr() == ptr              # free once nothing reaches it (oldest block first)


def test_outputs_are_plain_tensors(cache):
    a = _empty((MIN // 128 + 8, 64), torch.bfloat16)
    assert a._base is None and a.is_contiguous() and a.shape == (MIN // 128 + 8, 64) and a.dtype == torch.bfloat16
    a.requires_grad_(True)
    (a.float() * 2).sum().backward()                   # autograd treats it as any leaf
    assert torch.equal(a.grad, torch.full_like(a, 2))
    del a
    b = _empty((MIN // 128 + 8, 64), torch.bfloat16)   # reused for the same dtype and shape...
    c = _empty((MIN // 8 + 256,), torch.float64)        # ...and a float64 output of the same rounded size
    assert cache.cache_info()["hits"] == 1
    c.zero_()
    assert not c.any() and b.shape == (MIN // 128 + 8, 64)


def test_the_limit_evicts_free_blocks_and_bypasses_when_full(cache, monkeypatch):
    limit = (2 * BIG_BLOCK + BIG_BLOCK // 2) >> 20
    monkeypatch.setenv(_buffers.ENV, str(limit))      # room for two of BIG's blocks, not three
    a, b = _empty(BIG), _empty(BIG)
    c = _empty(BIG)                                   # both blocks in use: allocated outside the cache
    info = cache.cache_info()
    assert info["bypassed"] == 1 and info["blocks"] == 2 and info["held_bytes"] <= limit << 20
    del a, c
    other = BIG_BLOCK * 5 // 16                       # another size (a quarter larger): a's free block is
    d = _empty((other,))                              # evicted for it, b's and d's fit the limit
    info = cache.cache_info()
    assert info["blocks"] == 2 and info["held_bytes"] <= limit << 20 and info["bypassed"] == 1
    assert d.numel() == other and b.numel() == BIG[0]


def test_zero_turns_the_cache_off_and_small_outputs_never_use_it(cache, monkeypatch):
    _empty((1000,))
    assert cache.cache_info()["blocks"] == 0
    monkeypatch.setenv(_buffers.ENV, "0")
    a = _empty(BIG)
    del a
    assert cache.cache_info()["blocks"] == 0 and cache.cache_info()["limit_bytes"] == 0
    b = _empty(BIG)
    assert cache.cache_info()["blocks"] == 0
    b.resize_(BIG[0] * 2)                              # an ordinary torch.empty: resizable
    assert b.numel() == 2 * BIG[0]


def test_empty_cache_releases_free_blocks_only(cache):
    a, b = _empty(BIG), _empty(BIG)
    del a
    one = cache.cache_info()["free_bytes"]
    assert one >= BIG[0] * 4 and cache.empty_cache() == one
    info = cache.cache_info()
    assert info["blocks"] == 1 and info["free_bytes"] == 0
    b.fill_(1.0)
    assert float(b.sum()) == BIG[0]
    assert mpgraph.ops.cpu_cache_info()["blocks"] == 1
    del b
    assert mpgraph.ops.empty_cpu_cache() > 0 and cache.cache_info()["blocks"] == 0


@pytest.mark.parametrize("raw", ["-1", "lots", "1.5"])
def test_a_bad_limit_is_a_clear_error(monkeypatch, raw):
    monkeypatch.setenv(_buffers.ENV, raw)
    with pytest.raises(ValueError, match="MPGRAPH_CPU_CACHE_MB must be a whole number of MiB"):
        _buffers.limit_bytes()


def test_default_limit_is_bounded_by_memory(monkeypatch):
    monkeypatch.delenv(_buffers.ENV, raising=False)
    assert 0 < _buffers.limit_bytes() <= _buffers.DEFAULT_LIMIT_MB << 20


def test_threads_never_share_a_live_block(cache):
    seen, errors = [], []

    def work():
        try:
            for _ in range(6):
                t = _empty(BIG)
                t.fill_(threading.get_ident() % 1000)
                seen.append(t.data_ptr())
                assert float(t[0]) == float(t[-1]) == threading.get_ident() % 1000
                del t
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cache.cache_info()["held_bytes"] <= 256 << 20


def test_a_reused_block_gives_the_same_results(cache):
    """A kernel writing into a reused block (holding an earlier result) must still write every element:
    empty rows included."""
    pytest.importorskip("numba")
    from mpgraph.ops import _cpu as K

    rows = MIN // (64 * 4) + 64
    gen = torch.Generator().manual_seed(0)
    indptr = torch.zeros(rows + 1, dtype=torch.int64)
    indptr[1:2000] = torch.arange(1, 2000) * 2          # rows 0..1998 have 2 in-edges, the rest none
    indptr[2000:] = indptr[1999]
    E = int(indptr[-1])
    src = torch.randint(0, 50, (E,), generator=gen)
    first, _, _ = K.gspmm("copy_lhs", "sum", indptr, src, None, torch.randn(50, 64, generator=gen) + 100, None)
    del first
    x = torch.randn(50, 64, generator=gen)
    out, _, _ = K.gspmm("copy_lhs", "sum", indptr, src, None, x, None)
    assert cache.cache_info()["hits"] >= 1
    ref = torch.zeros(rows, 64)
    ref[:1999] = x[src[0::2]] + x[src[1::2]]
    torch.testing.assert_close(out, ref)


def test_rowwise_scale_takes_large_results_from_the_cache(cache):
    from mpgraph.precision import rowwise_scale

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(MIN // 256 + 16, 64, generator=gen)              # just above the threshold in float32
    deg = torch.randint(1, 9, (x.shape[0], 1), generator=gen).float()
    first = rowwise_scale(x, deg, torch.float32, divide=True)
    assert cache.cache_info()["misses"] == 1 and first._base is None
    torch.testing.assert_close(first, x / deg, rtol=0, atol=0)
    del first
    again = rowwise_scale(x * 2, deg, torch.float32)                   # the freed block, overwritten whole
    assert cache.cache_info()["hits"] == 1
    torch.testing.assert_close(again, x * 2 * deg, rtol=0, atol=0)
    small = rowwise_scale(x[:10], deg[:10], torch.bfloat16)
    assert cache.cache_info()["misses"] == 1 and small.dtype == torch.bfloat16


def test_resizing_a_cached_output_grows_its_block(cache):
    a = _empty(BIG)
    before = cache.cache_info()["held_bytes"]
    a.resize_(BIG[0] + (4 << 20))                          # torch's storage is resizable: the block grows
    a[-1] = 7.0
    assert cache.cache_info()["held_bytes"] > before and float(a[-1]) == 7.0
    del a
    b = _empty(BIG)                                        # the grown block no longer matches this size
    assert cache.cache_info()["hits"] == 0 and b.numel() == BIG[0]


def test_block_sizes_round_finely_below_32_mib_and_to_huge_pages_above():
    fine, coarse = _buffers.BLOCK_ROUND_FINE, _buffers.BLOCK_ROUND
    assert _buffers.block_bytes(4_560_000) == 18 * fine            # an (E, 1) float32 tensor of 1.14M edges
    assert _buffers.block_bytes(4_560_000) - 4_560_000 < fine      # (a 2 MiB step would waste 1.4 MB of 6 MiB)
    assert _buffers.block_bytes(18 * fine) == 18 * fine
    assert _buffers.block_bytes(_buffers.ROUND_FINE_BELOW) == _buffers.ROUND_FINE_BELOW
    assert _buffers.block_bytes(_buffers.ROUND_FINE_BELOW + 1) == _buffers.ROUND_FINE_BELOW + coarse
    assert _buffers.block_bytes(25_600_000) % fine == 0 and _buffers.block_bytes(25_600_000) < 25_600_000 + fine


def test_a_mid_sized_output_is_cached(cache):
    # 100k x 64 float32 (25.6 MB, below the C library's 32 MiB mmap bound): glibc re-faulted such freed
    # gradients on up to every call of a forward+backward loop, so the cache serves them
    a = _empty((100_000, 64))
    ptr = a.data_ptr()
    del a
    assert _empty((100_000, 64)).data_ptr() == ptr
    assert cache.cache_info()["hits"] == 1 and cache.cache_info()["misses"] == 1


def test_a_free_block_up_to_a_quarter_larger_serves_a_smaller_request(cache):
    # mini-batches and graphs of several sizes: an output a little smaller than a free block reuses it
    # (with exact sizes only, every new size made a block, and the cache grew towards its limit)
    n = 4 * BIG[0]                                      # float32 elements: a 16 MiB block
    a = _empty((n,))
    ptr = a.data_ptr()
    del a
    b = _empty((n * 9 // 10,))                          # within a quarter of the free block: reused
    assert b.data_ptr() == ptr and b.numel() == n * 9 // 10 and b.untyped_storage().nbytes() >= n * 4
    b.fill_(3.0)
    assert bool((b == 3.0).all())
    del b
    c = _empty((n // 2,))                               # half the size: the block would waste too much
    assert c.data_ptr() != ptr
    info = cache.cache_info()
    assert info["hits"] == 1 and info["misses"] == 2 and info["blocks"] == 2
    d = _empty((n,))                                    # the original size again: the free 16 MiB block
    assert d.data_ptr() == ptr and cache.cache_info()["hits"] == 2


def test_the_smallest_fitting_free_block_is_taken(cache):
    n = 4 * BIG[0]
    big, small = _empty((n * 6 // 5,)), _empty((n,))    # two free blocks that could both serve n floats
    p_small = small.data_ptr()
    del big, small
    assert _empty((n,)).data_ptr() == p_small


def test_peak_in_use_is_the_most_held_at_once_not_the_sum_of_blocks(cache):
    assert cache.reset_peak_in_use() == 0
    a = _empty(BIG)
    del a                                               # freed before the next: one block's bytes at once
    b = _empty((BIG[0] * 2,))                           # another size class: a second block
    assert cache.cache_info()["blocks"] == 2
    b_block = cache.block_bytes(BIG[0] * 2 * 4)
    assert cache.peak_in_use() == b_block == cache.in_use_bytes() < cache.held_bytes()
    c = _empty(BIG)                                     # the first block again, with b alive
    assert cache.peak_in_use() == b_block + BIG_BLOCK
    del b, c
    assert cache.in_use_bytes() == 0 and cache.end_peak_in_use() == b_block + BIG_BLOCK
    d = _empty((BIG[0] * 4,))                           # no window open: hand-outs leave the peak alone
    assert cache.peak_in_use() == b_block + BIG_BLOCK
    del d
