"""to_block: DGL's node ordering, stored IDs and features, errors; the samplers' fast path agrees with it."""

import doctest

import pytest
import torch

import mpgraph as dgl
from mpgraph import DGLError
from mpgraph.dataloading import block as block_mod
from mpgraph.dataloading import to_block
from mpgraph.dataloading.block import block_from_sample
from mpgraph.sampling import sample_neighbors
from mpgraph.sampling.neighbor import sample_rows


def _frontier(idtype=torch.int64):
    # edges (eid: src->dst): 0: 4->2, 1: 1->3, 2: 2->3, 3: 5->2, 4: 1->2
    g = dgl.graph(([4, 1, 2, 5, 1], [2, 3, 3, 2, 2]), num_nodes=7, idtype=idtype)
    g.ndata["x"] = torch.arange(7.0).to(torch.bfloat16)
    g.edata["w"] = torch.arange(5) * 10
    return g


def test_dgl_ordering(idtype):
    g = _frontier(idtype)
    b = to_block(g, torch.tensor([3, 2], dtype=idtype))
    assert b.is_block and b.idtype == idtype
    # destinations first, then other sources in order of first appearance along the edges (4, 1, 5)
    assert b.srcdata[dgl.NID].tolist() == [3, 2, 4, 1, 5]
    assert b.dstdata[dgl.NID].tolist() == [3, 2]
    assert b.edata[dgl.EID].tolist() == [0, 1, 2, 3, 4]
    src, dst = b.edges()
    assert b.srcdata[dgl.NID][src].tolist() == [4, 1, 2, 5, 1]
    assert b.dstdata[dgl.NID][dst].tolist() == [2, 3, 3, 2, 2]
    assert b.srcdata["x"].dtype == torch.bfloat16 and b.srcdata["x"].tolist() == [3, 2, 4, 1, 5]
    assert b.dstdata["x"].tolist() == [3, 2] and b.edata["w"].tolist() == [0, 10, 20, 30, 40]


def test_default_dst_and_no_dst_in_src():
    g = _frontier()
    b = to_block(g)
    assert b.dstdata[dgl.NID].tolist() == [2, 3]                    # nodes with an in-edge, sorted
    assert b.srcdata[dgl.NID].tolist() == [2, 3, 4, 1, 5]
    b = to_block(g, [3, 2], include_dst_in_src=False)
    assert b.srcdata[dgl.NID].tolist() == [4, 1, 2, 5]
    src, _ = b.edges()
    assert b.srcdata[dgl.NID][src].tolist() == [4, 1, 2, 5, 1]


def test_given_src_nodes():
    g = _frontier()
    b = to_block(g, [3, 2], src_nodes=[3, 2, 5, 1, 4, 6])
    assert b.num_src_nodes() == 6
    src, _ = b.edges()
    assert b.srcdata[dgl.NID][src].tolist() == [4, 1, 2, 5, 1]


@pytest.mark.parametrize("kwargs, message", [
    (dict(dst_nodes=[3]), "expected dst_nodes to include every edge destination, got none for node 2"),
    (dict(dst_nodes=[3, 2, 3]), "expected distinct IDs in dst_nodes"),
    (dict(dst_nodes=[3, 9]), "expected node IDs in [0, 7), got 9"),
    (dict(dst_nodes=[3, 2], src_nodes=[3, 2, 4, 1]), "expected src_nodes to include every edge source, got none "
                                                     "for node 5"),
    (dict(dst_nodes=[3, 2], src_nodes=[2, 3, 4, 1, 5]), "expected src_nodes to start with dst_nodes"),
])
def test_errors(kwargs, message):
    with pytest.raises(DGLError) as err:
        to_block(_frontier(), **kwargs)
    assert message in str(err.value)
    with pytest.raises(DGLError, match="expected a graph, got a block"):
        to_block(to_block(_frontier()))


def test_bipartite_sources_are_their_own_type():
    g = dgl.heterograph({("u", "e", "v"): ([0, 3, 1], [1, 0, 1])}, {"u": 4, "v": 2})
    b = to_block(g, [1, 0])
    assert b.srcdata[dgl.NID].tolist() == [0, 3, 1] and b.dstdata[dgl.NID].tolist() == [1, 0]


def test_fast_path_equals_to_block_of_frontier(idtype):
    g = dgl.rand_graph(80, 900, idtype=idtype)
    seeds = torch.randperm(80)[:25]
    torch.manual_seed(0)
    frontier = sample_neighbors(g, seeds, 4)
    slow = to_block(frontier, seeds.to(idtype))
    torch.manual_seed(0)
    indptr, nbr, eid = g._index.csc()
    seg, n, e = sample_rows(indptr, nbr, eid, seeds, 4, False)
    fast = block_from_sample(g, seeds, seg, n, e)
    assert torch.equal(fast.srcdata[dgl.NID], slow.srcdata[dgl.NID])
    assert torch.equal(fast.dstdata[dgl.NID], slow.dstdata[dgl.NID])
    assert all(torch.equal(a, b) for a, b in zip(fast.edges(), slow.edges()))
    assert torch.equal(fast.edata[dgl.EID], frontier.edata[dgl.EID])     # IDs in g (to_block stores frontier IDs)


def test_docstring_examples():
    result = doctest.testmod(block_mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
