"""random_walk and global_uniform_negative_sampling."""

import doctest

import pytest
import torch
from scipy import stats

import mpgraph as dgl
from mpgraph import DGLError
from mpgraph.sampling import global_uniform_negative_sampling, negative, random_walk, randomwalk

P_MIN = 1e-3


def _graph(idtype=torch.int64):
    # node 4 has no out-edges (walks stop there); 0 -> {1, 2, 3}
    return dgl.graph(([0, 0, 0, 1, 2, 3, 3], [1, 2, 3, 2, 0, 4, 0]), num_nodes=5, idtype=idtype)


def test_traces_follow_edges(idtype):
    g = _graph(idtype)
    torch.manual_seed(0)
    starts = torch.arange(5).repeat(20)
    traces, eids, types = random_walk(g, starts, length=6, return_eids=True)
    assert traces.shape == (100, 7) and eids.shape == (100, 6) and types.tolist() == [0] * 7
    assert traces.dtype == idtype and eids.dtype == idtype
    assert torch.equal(traces[:, 0], starts.to(idtype))
    src, dst = g.edges()
    for t, e in zip(traces.tolist(), eids.tolist()):
        for i in range(6):
            if t[i + 1] == -1:
                assert all(x == -1 for x in t[i + 1:]) and all(x == -1 for x in e[i:])
                assert t[i] == 4                                   # only node 4 is a dead end
                break
            assert (src[e[i]], dst[e[i]]) == (t[i], t[i + 1])
    assert bool((traces[starts == 4, 1:] == -1).all())


def test_uniform_and_weighted_transitions():
    g = _graph()
    torch.manual_seed(1)
    first = random_walk(g, torch.zeros(3000, dtype=torch.int64), length=1)[0][:, 1]
    assert stats.chisquare(torch.bincount(first, minlength=4)[1:].numpy()).pvalue > P_MIN
    g.edata["p"] = torch.tensor([1.0, 0.0, 3.0, 1, 1, 1, 1])
    first = random_walk(g, torch.zeros(4000, dtype=torch.int64), length=1, prob="p")[0][:, 1]
    counts = torch.bincount(first, minlength=4)
    assert counts[2] == 0
    assert stats.chisquare(counts[[1, 3]].numpy(), [1000.0, 3000.0]).pvalue > P_MIN


def test_restart_and_metapath():
    g = _graph()
    traces, _ = random_walk(g, [0, 1], length=3, restart_prob=1.0)
    assert bool((traces[:, 1:] == -1).all())
    traces, _ = random_walk(g, [0, 1], length=3, restart_prob=torch.tensor([0.0, 0.0, 1.0]))
    assert bool((traces[:, 3] == -1).all()) and bool((traces[:, 2] >= 0).all())
    traces, types = random_walk(g, [1], metapath=["_E", "_E"])
    assert traces.tolist() == [[1, 2, 0]] and types.tolist() == [0, 0, 0]


def test_reproducible():
    g = _graph()
    dgl.seed(3)
    a = random_walk(g, torch.arange(5).repeat(10), length=5)[0]
    dgl.seed(3)
    assert torch.equal(a, random_walk(g, torch.arange(5).repeat(10), length=5)[0])


@pytest.mark.parametrize("kwargs, message", [
    (dict(), "expected metapath or length, got neither"),
    (dict(length=-1), "expected length to be an int >= 0, got -1"),
    (dict(length=2, nodes=[5]), "expected node IDs in [0, 5), got 5"),
    (dict(length=2, prob=torch.ones(2)), "expected prob of shape (7,)"),
    (dict(length=2, restart_prob=2.0), "expected restart_prob values in [0, 1]"),
    (dict(length=2, restart_prob=torch.zeros(3)), "expected restart_prob with one value per step (2), got 3"),
    (dict(metapath=["follows"]), "expected metapath entries among the graph's edge types ['_E'], got 'follows'"),
])
def test_walk_errors(kwargs, message):
    nodes = kwargs.pop("nodes", [0])
    with pytest.raises(DGLError) as err:
        random_walk(_graph(), nodes, **kwargs)
    assert message in str(err.value)


def test_negative_sampling_excludes_edges(idtype):
    g = dgl.rand_graph(50, 600, idtype=idtype)
    torch.manual_seed(0)
    src, dst = global_uniform_negative_sampling(g, 400)
    assert src.numel() == 400 and src.dtype == idtype
    assert not bool(g.has_edges_between(src, dst).any())
    assert not bool((src == dst).any())
    keys = src.long() * 50 + dst.long()
    assert keys.unique().numel() == 400
    src, dst = global_uniform_negative_sampling(g, 3000, exclude_self_loops=False, replace=True)
    assert src.numel() == 3000 and not bool(g.has_edges_between(src, dst).any())


def test_negative_sampling_dense_graph_returns_what_exists():
    # complete graph on 4 nodes minus two edges: only those two non-loop pairs are negatives
    src = [u for u in range(4) for v in range(4) if u != v and (u, v) not in ((0, 1), (2, 3))]
    dst = [v for u in range(4) for v in range(4) if u != v and (u, v) not in ((0, 1), (2, 3))]
    g = dgl.graph((src, dst))
    s, d = global_uniform_negative_sampling(g, 10)
    assert sorted(zip(s.tolist(), d.tolist())) == [(0, 1), (2, 3)]
    with pytest.raises(DGLError, match="expected num_samples to be an int >= 0, got -1"):
        global_uniform_negative_sampling(g, -1)


@pytest.mark.parametrize("mod", [randomwalk, negative], ids=["randomwalk", "negative"])
def test_docstring_examples(mod):
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
