"""Every graph layer on graphs without edges and without nodes, in float32 and bfloat16."""

import pytest
import torch

import mpgraph as dgl
import mpgraph.nn as mnn

LAYERS = {
    "GraphConv": (lambda: mnn.GraphConv(3, 2, allow_zero_in_degree=True), lambda N: ()),
    "GATConv": (lambda: mnn.GATConv(3, 2, 2, allow_zero_in_degree=True), lambda N: ()),
    "GATv2Conv": (lambda: mnn.GATv2Conv(3, 2, 2, allow_zero_in_degree=True), lambda N: ()),
    "DotGatConv": (lambda: mnn.DotGatConv(3, 2, 2, allow_zero_in_degree=True), lambda N: ()),
    "SAGEConv-lstm": (lambda: mnn.SAGEConv(3, 2, "lstm"), lambda N: ()),
    "SAGEConv-gcn": (lambda: mnn.SAGEConv(3, 2, "gcn"), lambda N: ()),
    "GINConv-max": (lambda: mnn.GINConv(None, "max"), lambda N: ()),
    "GINEConv": (lambda: mnn.GINEConv(), lambda N: (torch.zeros(0, 3),)),
    "SGConv": (lambda: mnn.SGConv(3, 2, allow_zero_in_degree=True), lambda N: ()),
    "APPNPConv": (lambda: mnn.APPNPConv(2, 0.1), lambda N: ()),
    "TAGConv": (lambda: mnn.TAGConv(3, 2), lambda N: ()),
    "ChebConv": (lambda: mnn.ChebConv(3, 2, 3), lambda N: ([2.0],)),
    "GCN2Conv": (lambda: mnn.GCN2Conv(3, 1, allow_zero_in_degree=True), lambda N: (torch.ones(N, 3),)),
    "EdgeConv": (lambda: mnn.EdgeConv(3, 2, allow_zero_in_degree=True), lambda N: ()),
    "RelGraphConv": (lambda: mnn.RelGraphConv(3, 2, 2), lambda N: (torch.zeros(0, dtype=torch.int64),)),
    "GatedGraphConv": (lambda: mnn.GatedGraphConv(3, 3, 2, 2), lambda N: (torch.zeros(0, dtype=torch.int64),)),
    "SumPooling": (lambda: mnn.SumPooling(), lambda N: ()),
    "SortPooling": (lambda: mnn.SortPooling(2), lambda N: ()),
}


@pytest.mark.parametrize("num_nodes", [4, 0], ids=["no_edges", "empty"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_graph_without_edges(name, dtype, num_nodes):
    build, extra = LAYERS[name]
    g = dgl.graph(([], []), num_nodes=num_nodes)
    x = torch.randn(num_nodes, 3, dtype=dtype)
    args = [a.to(dtype) if torch.is_tensor(a) and a.is_floating_point() else a for a in extra(num_nodes)]
    if name == "ChebConv" and num_nodes == 0:
        args = [[2.0]]
    out = build().to(dtype)(g, x, *args)
    assert out.dtype == dtype and torch.isfinite(out).all()
    if name not in ("SumPooling", "SortPooling"):
        assert out.shape[0] == num_nodes
