"""GatedGraphConv and EdgeConv beyond the shared layer cases."""

import pytest
import torch
from nn_cases import feat, homo_graph, ref_edgeconv, ref_gatedgraphconv
from tolerances import assert_close

import mpgraph as dgl
from mpgraph.base import DGLError
from mpgraph.nn import EdgeConv, GatedGraphConv


def test_gatedgraphconv_errors():
    with pytest.raises(DGLError, match="in_feats <= out_feats"):
        GatedGraphConv(8, 4, n_steps=1, n_etypes=1)
    g = homo_graph()
    conv = GatedGraphConv(4, 4, n_steps=1, n_etypes=2)
    with pytest.raises(DGLError, match="pass etypes"):
        conv(g, feat(7, 4))
    with pytest.raises(DGLError, match=r"edge types in \[0, 2\)"):
        conv(g, feat(7, 4), torch.full((g.num_edges(),), 2))
    with pytest.raises(DGLError, match="integers"):
        conv(g, feat(7, 4), torch.zeros(3, dtype=torch.int64))


def test_gatedgraphconv_one_type_without_etypes():
    g = homo_graph()
    conv = GatedGraphConv(3, 5, n_steps=3, n_etypes=1).double()
    x = feat(7, 3).double()
    assert_close(conv(g, x), ref_gatedgraphconv(conv, g, x, torch.zeros(g.num_edges(), dtype=torch.int64)),
                 torch.float64)


def test_edgeconv_batch_norm_and_zero_in_degree():
    g = homo_graph()
    conv = EdgeConv(4, 3, batch_norm=True).double().eval()
    x = feat(7, 4).double()
    # eval-mode batch norm with fresh statistics is x / sqrt(1 + eps)
    scale = 1 / (1 + conv.bn.eps) ** 0.5
    assert_close(conv(g, x), ref_edgeconv(conv, g, x) * scale, torch.float64)
    conv.train()
    assert torch.isfinite(conv(g, x)).all()
    g0 = dgl.graph(([0, 1], [1, 2]), num_nodes=3)
    with pytest.raises(DGLError, match="0-in-degree"):
        EdgeConv(4, 3)(g0, feat(3, 4))
    out = EdgeConv(4, 3, allow_zero_in_degree=True)(g0, feat(3, 4))
    assert torch.all(out[0] == 0)
