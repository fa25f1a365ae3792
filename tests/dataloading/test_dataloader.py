"""DataLoader: batching, shuffling, reproducibility across worker counts, distributed split, Cluster-GCN."""

import doctest
import os

import pytest
import torch

import mpgraph as dgl
from mpgraph import DGLError
from mpgraph import partition as partition_mod
from mpgraph.dataloading import ClusterGCNSampler, DataLoader, NeighborSampler, Sampler
from mpgraph.dataloading import dataloader as dataloader_mod
from mpgraph.partition import metis_partition, metis_partition_assignment
from mpgraph.transforms import node_subgraph


def _graph(n=200, e=2000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, n, (e,), generator=gen), torch.randint(0, n, (e,), generator=gen)
    g = dgl.graph((src, dst), num_nodes=n)
    g.ndata["feat"] = torch.randn(n, 4, generator=gen)
    g.ndata["label"] = torch.randint(0, 3, (n,), generator=gen)
    return g


def _signature(batch):
    input_nodes, output_nodes, blocks = batch
    return (input_nodes.tolist(), output_nodes.tolist(),
            [(b.edata[dgl.EID].tolist(), b.edges()[0].tolist()) for b in blocks])


def _epochs(loader, seed, epochs=2):
    torch.manual_seed(seed)
    return [[_signature(b) for b in loader] for _ in range(epochs)]


def test_batches_cover_indices():
    g = _graph()
    ids = torch.arange(0, 200, 3)                                      # 67 seeds
    for shuffle, drop_last, expect in [(False, False, 5), (True, False, 5), (True, True, 4)]:
        loader = DataLoader(g, ids, NeighborSampler([2]), batch_size=16, shuffle=shuffle, drop_last=drop_last)
        out = [o for _, o, _ in loader]
        assert len(out) == len(loader) == expect
        got = torch.cat(out)
        if drop_last:
            assert got.numel() == 64 and bool(torch.isin(got, ids).all())
        else:
            assert sorted(got.tolist()) == ids.tolist()
        if not shuffle:
            assert got.tolist() == ids.tolist()


def test_same_seed_same_batches_and_epochs_differ():
    g = _graph()
    loader = DataLoader(g, torch.arange(200), NeighborSampler([3, 3]), batch_size=64, shuffle=True)
    a, b = _epochs(loader, 0), _epochs(loader, 0)
    assert a == b
    assert a[0] != a[1]                                                # a new order and new samples each epoch
    assert _epochs(loader, 1) != a


def test_workers_give_the_same_batches():
    g = _graph()
    sampler = NeighborSampler([4, 3], prefetch_node_feats=["feat"], prefetch_labels=["label"])
    ref = _epochs(DataLoader(g, torch.arange(200), sampler, batch_size=50, shuffle=True), 5)
    loader = DataLoader(g, torch.arange(200), sampler, batch_size=50, shuffle=True, num_workers=2,
                        persistent_workers=True)
    assert _epochs(loader, 5) == ref
    torch.manual_seed(5)
    batch = next(iter(loader))                                         # features arrive with the blocks
    assert torch.equal(batch[2][0].srcdata["feat"], g.ndata["feat"][batch[0]])


class _Split(Sampler):
    def sample(self, g, indices):
        return indices


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_ddp_split_matches_distributed_sampler(monkeypatch, shuffle, drop_last):
    g = _graph()
    ids = torch.arange(100, 123)                                       # 23 seeds over 3 ranks
    per_rank = []
    for rank in range(3):
        loader = DataLoader(g, ids, _Split(), use_ddp=True, ddp_seed=4, batch_size=2, shuffle=shuffle,
                            drop_last=drop_last)
        monkeypatch.setattr(loader, "_rank_world", lambda rank=rank: (rank, 3))
        loader.set_epoch(1)
        got = torch.cat(list(loader)) if len(loader) else torch.zeros(0, dtype=torch.int64)
        assert len(list(loader)) == len(loader)
        ref = torch.utils.data.DistributedSampler(range(23), 3, rank, shuffle=shuffle, seed=4, drop_last=drop_last)
        ref.set_epoch(1)
        expect = ids[list(ref)]
        if drop_last:
            expect = expect[: expect.numel() - expect.numel() % 2]
        assert got.tolist() == expect.tolist()
        per_rank.append(got)
    if not drop_last:
        assert set(torch.cat(per_rank).tolist()) == set(ids.tolist())  # every seed on some rank (padded)


def test_ddp_with_initialised_process_group(tmp_path):
    import torch.distributed as dist
    if not dist.is_available():
        pytest.skip("torch.distributed not available")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        loader = DataLoader(_graph(), torch.arange(10), _Split(), use_ddp=True, batch_size=4, shuffle=True)
        assert sorted(torch.cat(list(loader)).tolist()) == list(range(10))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("kwargs, message", [
    (dict(batch_size=0), "expected batch_size to be an int >= 1, got 0"),
    (dict(num_workers=-1), "expected num_workers to be an int >= 0, got -1"),
    (dict(use_uva=True), "expected use_uva=False"),
    (dict(collate_fn=list), "sets ['collate_fn'] itself"),
])
def test_errors(kwargs, message):
    with pytest.raises(DGLError) as err:
        DataLoader(_graph(), torch.arange(5), NeighborSampler([2]), **kwargs)
    assert message in str(err.value)
    with pytest.raises(TypeError, match="expected graph_sampler to be a mpgraph.dataloading.Sampler"):
        DataLoader(_graph(), torch.arange(5), lambda g, i: i)


def test_device_argument_moves_batches():
    loader = DataLoader(_graph(), torch.arange(8), NeighborSampler([2]), batch_size=4, device="cpu")
    _, _, blocks = next(iter(loader))
    assert blocks[0].device.type == "cpu"


# ----------------------------------------------------------------------
# METIS partitions and Cluster-GCN
# ----------------------------------------------------------------------
def _clusters(k=4, size=30, seed=0):
    """k dense clusters with a few edges between them."""
    gen = torch.Generator().manual_seed(seed)
    src, dst = [], []
    for c in range(k):
        s = torch.randint(0, size, (size * 4,), generator=gen) + c * size
        d = torch.randint(0, size, (size * 4,), generator=gen) + c * size
        src.append(s)
        dst.append(d)
    src.append(torch.arange(k) * size)
    dst.append((torch.arange(k) * size + size) % (k * size))
    g = dgl.graph((torch.cat(src), torch.cat(dst)), num_nodes=k * size)
    g.ndata["feat"] = torch.randn(k * size, 3, generator=gen).to(torch.bfloat16)
    return g


def test_metis_partition_recovers_clusters():
    pytest.importorskip("pymetis")
    g = _clusters()
    parts = metis_partition_assignment(g, 4)
    assert parts.shape == (120,) and sorted(parts.unique().tolist()) == [0, 1, 2, 3]
    for c in range(4):
        assert parts[c * 30:(c + 1) * 30].unique().numel() == 1
    assert torch.equal(parts, metis_partition_assignment(g, 4))       # fixed METIS seed
    subgraphs = metis_partition(g, 4, extra_cached_hops=1)
    inner = torch.cat([sg.ndata[dgl.NID][sg.ndata["inner_node"]] for sg in subgraphs.values()])
    assert sorted(inner.tolist()) == list(range(120))
    for sg in subgraphs.values():
        gs, gd = g.find_edges(sg.edata[dgl.EID])
        src, dst = sg.edges()
        assert torch.equal(sg.ndata[dgl.NID][src], gs) and torch.equal(sg.ndata[dgl.NID][dst], gd)
        # every in-edge of an inner node is present (one hop of halo)
        inner_nodes = sg.ndata[dgl.NID][sg.ndata["inner_node"]]
        assert sg.num_edges() >= int(g.in_degrees(inner_nodes).sum())
    with pytest.raises(DGLError, match="expected k to be an int >= 1, got 0"):
        metis_partition_assignment(g, 0)
    with pytest.raises(DGLError, match="expected mode 'k-way' or 'recursive', got 'fast'"):
        metis_partition_assignment(g, 2, mode="fast")


def test_metis_balance_options():
    pytest.importorskip("pymetis")
    g = _clusters()
    parts = metis_partition_assignment(g, 2, balance_edges=True, mode="recursive")
    assert parts.unique().numel() == 2
    types = torch.arange(120) % 2
    parts = metis_partition_assignment(g, 2, balance_ntypes=types)
    for t in (0, 1):
        counts = torch.bincount(parts[types == t], minlength=2)
        assert abs(int(counts[0]) - int(counts[1])) <= 12


def test_cluster_gcn(tmp_path):
    pytest.importorskip("pymetis")
    g = _clusters()
    cache = str(tmp_path / "parts.pt")
    sampler = ClusterGCNSampler(g, 4, cache_path=cache)
    assert os.path.exists(cache)
    loader = DataLoader(g, torch.arange(4), sampler, batch_size=2, shuffle=True)
    seen = []
    for sg in loader:
        nodes = sg.ndata[dgl.NID]
        ref = node_subgraph(g, nodes)
        assert torch.equal(sg.edata[dgl.EID], ref.edata[dgl.EID])
        assert all(torch.equal(a, b) for a, b in zip(sg.edges(), ref.edges()))
        assert sg.ndata["feat"].dtype == torch.bfloat16 and torch.equal(sg.ndata["feat"], g.ndata["feat"][nodes])
        seen.append(nodes)
    assert sorted(torch.cat(seen).tolist()) == list(range(120))
    again = ClusterGCNSampler(g, 4, cache_path=cache)                 # reads the cached partition
    assert torch.equal(again.partition_node_ids, sampler.partition_node_ids)
    with pytest.raises(DGLError, match=r"expected k to be an int in \[1, 120\]"):
        ClusterGCNSampler(g, 500, cache_path=None)
    with pytest.raises(DGLError, match=r"expected partition IDs in \[0, 4\), got 4"):
        sampler.sample(g, torch.tensor([4]))


@pytest.mark.parametrize("mod", [dataloader_mod, partition_mod], ids=["dataloader", "partition"])
def test_docstring_examples(mod):
    if mod is partition_mod:
        pytest.importorskip("pymetis")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
