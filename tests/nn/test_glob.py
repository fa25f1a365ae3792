"""Pooling layers on single graphs, hand-batched graphs and empty member graphs."""

import pytest
import torch
from nn_cases import batched_graph, feat, ref_globalattention, ref_pool, ref_set2set, ref_sortpooling
from tolerances import assert_close

import mpgraph as dgl
from mpgraph.base import DGLError
from mpgraph.nn import (AvgPooling, GlobalAttentionPooling, MaxPooling, Set2Set, SortPooling, SumPooling,
                        WeightAndSum)


def single_graph():
    return dgl.graph(([0, 1, 2, 3], [1, 2, 3, 4]), num_nodes=5)


@pytest.mark.parametrize("pool, kind", [(SumPooling(), "sum"), (AvgPooling(), "mean"), (MaxPooling(), "max")],
                         ids=["sum", "avg", "max"])
def test_basic_pooling_single_graph(pool, kind):
    g = single_graph()
    x = feat(5, 3).double()
    out = pool(g, x)
    assert out.shape == (1, 3)
    assert_close(out, ref_pool(kind)(pool, g, x), torch.float64)


@pytest.mark.parametrize("pool", [SumPooling(), AvgPooling(), MaxPooling()], ids=["sum", "avg", "max"])
def test_empty_member_graph_pools_to_zero(pool):
    g = dgl.graph(([0, 1, 4], [1, 2, 3]), num_nodes=5)
    g.set_batch_num_nodes(torch.tensor([3, 0, 2]))
    g.set_batch_num_edges(torch.tensor([2, 0, 1]))
    out = pool(g, feat(5, 3))
    assert out.shape == (3, 3) and torch.all(out[1] == 0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_sum_pooling_accumulates_in_float32(dtype):
    # 4096 ones: a running half-precision sum would stall at 256 (bf16) or 2048 (fp16)
    g = dgl.graph(([], []), num_nodes=4096)
    out = SumPooling()(g, torch.ones(4096, 2, dtype=dtype))
    assert out.dtype == dtype and torch.all(out == 4096)


def test_sortpooling_pads_and_orders():
    g = batched_graph()
    pool = SortPooling(k=5)
    x = feat(7, 3).double()
    out = pool(g, x)
    assert out.shape == (2, 15)
    assert_close(out, ref_sortpooling(pool, g, x), torch.float64)
    assert torch.all(out[0, 9:] == 0)                          # the 3-node graph is padded with 2 zero rows


def test_global_attention_pooling_gate_is_a_softmax_per_graph():
    g = batched_graph()
    pool = GlobalAttentionPooling(torch.nn.Linear(4, 1)).double()
    x = feat(7, 4).double()
    out, gate = pool(g, x, get_attention=True)
    assert_close(out, ref_globalattention(pool, g, x), torch.float64)
    torch.testing.assert_close(torch.stack([s.sum() for s in torch.split(gate, [3, 4])]),
                               torch.ones(2, dtype=torch.float64))
    with pytest.raises(DGLError, match=r"gate_nn to output shape \(N, 1\)"):
        GlobalAttentionPooling(torch.nn.Linear(4, 2))(g, feat(7, 4))


def test_set2set_and_weight_and_sum_on_a_single_graph():
    g = single_graph()
    s2s = Set2Set(3, n_iters=3, n_layers=1).double()
    x = feat(5, 3).double()
    assert_close(s2s(g, x), ref_set2set(s2s, g, x), torch.float64)
    assert WeightAndSum(3)(g, feat(5, 3)).shape == (1, 3)


def test_row_count_errors():
    g = batched_graph()
    with pytest.raises(DGLError, match=r"one row per node \(7 rows\)"):
        SumPooling()(g, torch.ones(6, 2))
    with pytest.raises(DGLError, match="expected feat with 3 features"):
        Set2Set(3, 1, 1)(g, torch.ones(7, 2))
