"""NeighborSampler blocks: structure, features in the storage dtype, exactness against full-graph models,
edge prediction."""

import doctest

import pytest
import torch
import torch.nn.functional as F

import mpgraph as dgl
from mpgraph import DGLError
from mpgraph.dataloading import (DataLoader, MultiLayerFullNeighborSampler, NeighborSampler,
                                 as_edge_prediction_sampler, negative_sampler, neighbor_sampler)
from mpgraph.nn import GATConv, SAGEConv
from mpgraph.transforms import add_self_loop


def _graph(n=150, e=1500, seed=0, idtype=torch.int64):
    torch.manual_seed(seed)
    g = dgl.rand_graph(n, e, idtype=idtype)
    g.ndata["feat"] = torch.randn(n, 6)
    g.ndata["label"] = torch.randint(0, 3, (n,))
    g.edata["w"] = torch.rand(e)
    return g


def test_block_chain(idtype):
    g = _graph(idtype=idtype)
    seeds = torch.tensor([5, 17, 3, 99])
    input_nodes, output_nodes, blocks = NeighborSampler([4, 3, 2]).sample(g, seeds)
    assert len(blocks) == 3 and output_nodes.tolist() == seeds.tolist()
    assert torch.equal(input_nodes, blocks[0].srcdata[dgl.NID])
    assert blocks[-1].dstdata[dgl.NID].tolist() == seeds.tolist()
    for lower, upper in zip(blocks[:-1], blocks[1:]):
        # a layer's destination nodes are the next layer's source nodes
        assert torch.equal(lower.dstdata[dgl.NID], upper.srcdata[dgl.NID])
    for b, fanout in zip(blocks, [4, 3, 2]):
        nid = b.srcdata[dgl.NID]
        assert torch.equal(nid[: b.num_dst_nodes()], b.dstdata[dgl.NID])     # dst nodes first among sources
        src, dst = b.edges()
        gs, gd = g.find_edges(b.edata[dgl.EID])
        assert torch.equal(nid[src.long()], gs) and torch.equal(b.dstdata[dgl.NID][dst.long()], gd)
        deg = g.in_degrees(b.dstdata[dgl.NID])
        assert torch.equal(b.in_degrees(), deg.clamp(max=fanout))
        assert b.idtype == idtype


def test_features_in_storage_dtype():
    g = _graph()
    g.ndata["feat"] = g.ndata["feat"].to(torch.bfloat16)
    sampler = NeighborSampler([3, 3], prefetch_node_feats=["feat"], prefetch_labels=["label"],
                              prefetch_edge_feats=["w"])
    _, _, blocks = sampler.sample(g, torch.tensor([1, 2]))
    x = blocks[0].srcdata["feat"]
    assert x.dtype == torch.bfloat16                                  # gathered rows, never upcast
    assert torch.equal(x, g.ndata["feat"][blocks[0].srcdata[dgl.NID]])
    assert torch.equal(blocks[-1].dstdata["label"], g.ndata["label"][[1, 2]])
    assert "label" not in blocks[0].srcdata and "feat" not in blocks[-1].dstdata
    for b in blocks:
        assert torch.equal(b.edata["w"], g.edata["w"][b.edata[dgl.EID]])
    _, _, blocks = NeighborSampler([3, 3]).sample(g, torch.tensor([1, 2]))      # default: every feature
    assert {"feat", "label"} <= set(blocks[0].srcdata.keys()) and "label" in blocks[-1].dstdata
    assert set(g.ndata.keys()) == {"feat", "label"}                              # graph untouched


class _SAGE(torch.nn.Module):
    def __init__(self, dims, aggregator="mean"):
        super().__init__()
        self.layers = torch.nn.ModuleList(SAGEConv(a, b, aggregator) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, graphs, h):
        for i, (layer, g) in enumerate(zip(self.layers, graphs)):
            h = layer(g, h)
            if i < len(self.layers) - 1:
                h = F.relu(h)
        return h


@pytest.mark.parametrize("aggregator", ["mean", "gcn", "pool"])
def test_full_fanout_blocks_equal_full_graph_sage(aggregator):
    g = _graph()
    g.ndata["feat"] = g.ndata["feat"].double()
    torch.manual_seed(1)
    model = _SAGE([6, 8, 4], aggregator).double()
    full = model([g, g], g.ndata["feat"])
    loader = DataLoader(g, torch.arange(g.num_nodes()), MultiLayerFullNeighborSampler(2), batch_size=37,
                        shuffle=True)
    seen = torch.zeros(g.num_nodes(), dtype=torch.bool)
    for _, output_nodes, blocks in loader:
        out = model(blocks, blocks[0].srcdata["feat"])
        torch.testing.assert_close(out, full[output_nodes], rtol=1e-10, atol=1e-10)
        seen[output_nodes] = True
    assert bool(seen.all())


def test_full_fanout_blocks_equal_full_graph_gat():
    g = add_self_loop(_graph())
    g.ndata["feat"] = g.ndata["feat"].double()
    torch.manual_seed(2)
    l1, l2 = GATConv(6, 4, 2).double(), GATConv(8, 3, 1).double()
    full = l2(g, l1(g, g.ndata["feat"]).flatten(1)).mean(1)
    _, out_nodes, blocks = NeighborSampler([-1, -1]).sample(g, torch.arange(0, 150, 7))
    out = l2(blocks[1], l1(blocks[0], blocks[0].srcdata["feat"]).flatten(1)).mean(1)
    torch.testing.assert_close(out, full[out_nodes], rtol=1e-10, atol=1e-10)


def test_edge_dir_out_reverses_messages():
    g = _graph()
    _, _, blocks = NeighborSampler([3], edge_dir="out").sample(g, torch.tensor([4, 8]))
    b = blocks[0]
    src, dst = b.edges()
    gs, gd = g.find_edges(b.edata[dgl.EID])
    # the block edge points from the sampled successor to the seed
    assert torch.equal(b.srcdata[dgl.NID][src], gd) and torch.equal(b.dstdata[dgl.NID][dst], gs)
    assert torch.equal(b.in_degrees(), g.out_degrees(torch.tensor([4, 8])).clamp(max=3))


@pytest.mark.parametrize("make, message", [
    (lambda: NeighborSampler([]), "expected fanouts as a non-empty list with one int per layer, got []"),
    (lambda: NeighborSampler(5), "expected fanouts as a non-empty list with one int per layer, got 5"),
    (lambda: NeighborSampler([5, -3]), "expected fanouts[1] to be an int >= 0 or -1 (all neighbours), got -3"),
    (lambda: NeighborSampler([5], edge_dir="up"), "expected edge_dir 'in' or 'out', got 'up'"),
    (lambda: MultiLayerFullNeighborSampler(0), "expected num_layers to be an int >= 1, got 0"),
    (lambda: NeighborSampler([2]).sample(_graph(), torch.tensor([150])), "expected node IDs in [0, 150), got 150"),
    (lambda: NeighborSampler([2], prob=torch.ones(4)).sample(_graph(), torch.tensor([1])),
     "expected prob of shape (1500,)"),
    (lambda: NeighborSampler([2], prefetch_node_feats=["nope"]).sample(_graph(), torch.tensor([1])),
     "expected feature 'nope' to prefetch"),
])
def test_errors(make, message):
    with pytest.raises(DGLError) as err:
        make()
    assert message in str(err.value)


def test_weighted_sampler_never_picks_zero_prob():
    g = _graph()
    g.edata["p"] = (torch.arange(1500) % 2).float()
    _, _, blocks = NeighborSampler([3, 3], prob="p").sample(g, torch.arange(20))
    for b in blocks:
        assert bool((g.edata["p"][b.edata[dgl.EID]] > 0).all())


def _bidirected(n=60, e=300):
    torch.manual_seed(3)
    src, dst = torch.randint(0, n, (e,)), torch.randint(0, n, (e,))
    g = dgl.graph((torch.cat([src, dst]), torch.cat([dst, src])), num_nodes=n)
    g.ndata["feat"] = torch.randn(n, 3)
    g.edata["y"] = torch.arange(2 * e)
    return g, torch.cat([torch.arange(e, 2 * e), torch.arange(e)])     # reverse edge of each edge


@pytest.mark.parametrize("exclude", [None, "self", "reverse_id"])
def test_edge_prediction(exclude):
    g, reverse = _bidirected()
    sampler = as_edge_prediction_sampler(NeighborSampler([-1, -1]), exclude=exclude, reverse_eids=reverse,
                                         negative_sampler=negative_sampler.Uniform(2), prefetch_labels=["y"])
    eids = torch.tensor([0, 5, 77, 301])
    input_nodes, pair, neg, blocks = sampler.sample(g, eids)
    nid = pair.ndata[dgl.NID]
    ps, pd = pair.edges()
    gs, gd = g.find_edges(eids)
    assert torch.equal(nid[ps], gs) and torch.equal(nid[pd], gd)
    assert pair.edata[dgl.EID].tolist() == eids.tolist() and pair.edata["y"].tolist() == eids.tolist()
    ns, nd = neg.edges()
    assert neg.num_nodes() == pair.num_nodes() and neg.num_edges() == 8
    assert torch.equal(nid[ns], gs.repeat_interleave(2))              # per-source negatives
    assert torch.equal(blocks[-1].dstdata[dgl.NID], nid)
    assert torch.equal(input_nodes, blocks[0].srcdata[dgl.NID])
    used = torch.cat([b.edata[dgl.EID] for b in blocks])
    removed = {None: eids[:0], "self": eids, "reverse_id": torch.cat([eids, reverse[eids]])}[exclude]
    assert not bool(torch.isin(used, removed).any())
    if exclude is None:
        assert bool(torch.isin(eids, used).all())


def test_edge_prediction_loader_and_errors():
    g, reverse = _bidirected()
    sampler = as_edge_prediction_sampler(NeighborSampler([2]), exclude="self")
    loader = DataLoader(g, torch.arange(g.num_edges()), sampler, batch_size=128)
    batches = list(loader)
    assert len(batches) == len(loader) == 5 and all(len(b) == 3 for b in batches)
    assert sum(b[1].num_edges() for b in batches) == g.num_edges()
    with pytest.raises(DGLError, match="expected reverse_eids with exclude='reverse_id', got None"):
        as_edge_prediction_sampler(NeighborSampler([2]), exclude="reverse_id")
    with pytest.raises(DGLError, match="expected exclude None, 'self', 'reverse_id' or a callable, got 'all'"):
        as_edge_prediction_sampler(NeighborSampler([2]), exclude="all")


def test_global_uniform_negative_sampler():
    g, _ = _bidirected()
    src, dst = negative_sampler.GlobalUniform(3)(g, torch.arange(10))
    assert src.numel() == 30 and not bool(g.has_edges_between(src, dst).any())


def test_docstring_examples():
    for mod in (neighbor_sampler, negative_sampler):
        result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        assert result.attempted > 0 and result.failed == 0
