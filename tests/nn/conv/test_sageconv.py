"""SAGEConv: aggregators, edge cases and errors beyond the shared layer cases."""

import pytest
import torch
from nn_cases import feat, homo_graph, ref_sageconv
from tolerances import assert_close

import mpgraph as dgl
from mpgraph.base import DGLError
from mpgraph.nn import SAGEConv


@pytest.mark.parametrize("agg", ["mean", "gcn", "pool", "lstm"])
def test_zero_in_degree_nodes_aggregate_to_zero(agg):
    g = dgl.graph(([0, 1, 1, 2], [1, 2, 2, 1]), num_nodes=4)      # nodes 0 and 3 have no in-edges
    conv = SAGEConv(3, 2, agg).double()
    x = feat(4, 3).double()
    assert_close(conv(g, x), ref_sageconv(conv, g, x), torch.float64)


@pytest.mark.parametrize("agg", ["mean", "gcn", "pool", "lstm"])
def test_graph_without_edges(agg):
    g = dgl.graph(([], []), num_nodes=3)
    conv = SAGEConv(3, 2, agg).double()
    x = feat(3, 3).double()
    out = conv(g, x)
    if agg == "gcn":
        expected = x @ conv.fc_neigh.weight.detach().T + conv.bias.detach()
    else:
        expected = conv.fc_self(x)
    assert_close(out, expected, torch.float64)


def test_errors():
    with pytest.raises(DGLError, match="expected aggregator_type in 'mean', 'gcn', 'pool', 'lstm', got 'max'"):
        SAGEConv(3, 2, "max")
    with pytest.raises(DGLError, match="equal source and destination widths"):
        SAGEConv((3, 4), 2, "gcn")
    g = homo_graph()
    with pytest.raises(DGLError, match="expected destination features with 4 features"):
        SAGEConv((3, 4), 2, "mean")(g, (torch.ones(7, 3), torch.ones(7, 5)))
    with pytest.raises(DGLError, match="one scalar per edge"):
        SAGEConv(3, 2, "mean")(g, torch.ones(7, 3), edge_weight=torch.ones(g.num_edges() + 1))


def test_norm_activation_and_dropout():
    g = homo_graph()
    conv = SAGEConv(4, 3, "mean", feat_drop=0.5, activation=torch.relu, norm=torch.nn.LayerNorm(3)).eval()
    out = conv(g, feat(7, 4))
    torch.testing.assert_close(out.mean(-1), torch.zeros(7), atol=1e-5, rtol=0)   # LayerNorm after ReLU
    conv.train()
    assert not torch.equal(conv(g, feat(7, 4)), conv(g, feat(7, 4)))


def test_lstm_sees_neighbours_in_edge_id_order():
    # node 0 receives from 1, 2, 3 in that edge order; a different order changes the LSTM output
    g1 = dgl.graph(([1, 2, 3], [0, 0, 0]), num_nodes=4)
    g2 = dgl.graph(([3, 2, 1], [0, 0, 0]), num_nodes=4)
    conv = SAGEConv(3, 2, "lstm").double()
    x = feat(4, 3).double()
    assert_close(conv(g1, x), ref_sageconv(conv, g1, x), torch.float64)
    assert not torch.allclose(conv(g1, x)[0], conv(g2, x)[0])
