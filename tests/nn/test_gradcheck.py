"""float64 gradcheck of layers with respect to their tensor inputs (features, edge weights, edge features)."""

import pytest
import torch
from nn_cases import bipartite_graph, block_graph, feat, homo_graph, pos_weight

import mpgraph.nn as mnn


def _double(mod):
    return mod.double().eval()


CHECKS = {
    "GraphConv-ew": lambda: (homo_graph(), _double(mnn.GraphConv(3, 2)),
                             lambda g: (feat(7, 3), pos_weight(g.num_edges())),
                             lambda m, g, x, w: m(g, x, edge_weight=w)),
    "GraphConv-bipartite": lambda: (bipartite_graph(), _double(mnn.GraphConv(3, 2, norm="left")),
                                    lambda g: (feat(5, 3),), lambda m, g, x: m(g, (x, x[:4]))),
    "GATConv-ew": lambda: (homo_graph(), _double(mnn.GATConv(3, 2, 2, residual=True)),
                           lambda g: (feat(7, 3), pos_weight(g.num_edges())),
                           lambda m, g, x, w: m(g, x, edge_weight=w)),
    "GATv2Conv-block": lambda: (block_graph(), _double(mnn.GATv2Conv(3, 2, 2)), lambda g: (feat(6, 3),),
                                lambda m, g, x: m(g, x)),
    "SAGEConv-pool-ew": lambda: (homo_graph(), _double(mnn.SAGEConv(3, 2, "pool")),
                                 lambda g: (feat(7, 3), pos_weight(g.num_edges())),
                                 lambda m, g, x, w: m(g, x, edge_weight=w)),
    "SAGEConv-lstm": lambda: (homo_graph(), _double(mnn.SAGEConv(3, 2, "lstm")), lambda g: (feat(7, 3),),
                              lambda m, g, x: m(g, x)),
    "GINEConv": lambda: (homo_graph(), _double(mnn.GINEConv(torch.nn.Linear(3, 2))),
                         lambda g: (feat(7, 3), feat(g.num_edges(), 3, seed=1)), lambda m, g, x, e: m(g, x, e)),
    "EdgeWeightNorm": lambda: (homo_graph(), mnn.EdgeWeightNorm("both"), lambda g: (pos_weight(g.num_edges()),),
                               lambda m, g, w: m(g, w)),
    "APPNPConv-ew": lambda: (homo_graph(), mnn.APPNPConv(2, 0.3), lambda g: (feat(7, 3), pos_weight(g.num_edges())),
                             lambda m, g, x, w: m(g, x, edge_weight=w)),
    "EdgeConv": lambda: (homo_graph(), _double(mnn.EdgeConv(3, 2)), lambda g: (feat(7, 3),), lambda m, g, x: m(g, x)),
    "GlobalAttentionPooling": lambda: (homo_graph(), _double(mnn.GlobalAttentionPooling(torch.nn.Linear(3, 1))),
                                       lambda g: (feat(7, 3),), lambda m, g, x: m(g, x)),
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_gradcheck_float64(name):
    torch.manual_seed(0)
    g, mod, make_inputs, call = CHECKS[name]()
    inputs = tuple(t.double().requires_grad_(True) for t in make_inputs(g))
    assert torch.autograd.gradcheck(lambda *xs: call(mod, g, *xs), inputs, eps=1e-6, atol=1e-6)
