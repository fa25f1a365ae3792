"""SGConv, APPNPConv, TAGConv, ChebConv, GCN2Conv beyond the shared layer cases."""

import warnings

import pytest
import torch
from nn_cases import batched_graph, feat, homo_graph, ref_appnpconv, ref_chebconv, ref_sgconv
from tolerances import assert_close

import mpgraph as dgl
from mpgraph.base import DGLError
from mpgraph.nn import APPNPConv, ChebConv, GCN2Conv, SGConv, TAGConv


def test_sgconv_cache_reuses_propagated_features():
    g = homo_graph()
    conv = SGConv(4, 3, k=2, cached=True).double()
    x = feat(7, 4).double()
    first = conv(g, x)
    assert_close(first, ref_sgconv(conv, g, x), torch.float64)
    # transductive cache: the second call ignores new features, as in DGL
    torch.testing.assert_close(conv(g, torch.zeros_like(x)), first)


def test_sgconv_and_gcn2conv_zero_in_degree():
    g = dgl.graph(([0, 1], [1, 2]), num_nodes=3)
    with pytest.raises(DGLError, match="0-in-degree"):
        SGConv(2, 2)(g, torch.ones(3, 2))
    with pytest.raises(DGLError, match="0-in-degree"):
        GCN2Conv(2, 1)(g, torch.ones(3, 2), torch.ones(3, 2))
    assert SGConv(2, 2, allow_zero_in_degree=True)(g, torch.ones(3, 2)).shape == (3, 2)


def test_appnp_edge_drop_only_in_training():
    g = homo_graph()
    conv = APPNPConv(k=2, alpha=0.1, edge_drop=0.5).double()
    x = feat(7, 4).double()
    conv.eval()
    assert_close(conv(g, x), ref_appnpconv(conv, g, x), torch.float64)
    conv.train()
    torch.manual_seed(0)
    assert not torch.allclose(conv(g, x), ref_appnpconv(conv, g, x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_appnp_train_mode_edge_drop_keeps_dtype(dtype):
    g = homo_graph()
    out = APPNPConv(k=2, alpha=0.1, edge_drop=0.3).train()(g, feat(7, 4).to(dtype))
    assert out.dtype == dtype and torch.isfinite(out).all()


def test_chebconv_default_lambda_max_warns_and_is_two():
    g = batched_graph()
    conv = ChebConv(4, 3, k=3).double()
    x = feat(7, 4).double()
    with pytest.warns(UserWarning, match="lambda_max"):
        out = conv(g, x)
    assert_close(out, ref_chebconv(conv, g, x, [2.0, 2.0]), torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lam = torch.tensor([1.5, 1.8], dtype=torch.float64)
        assert_close(conv(g, x, lambda_max=lam), ref_chebconv(conv, g, x, [1.5, 1.8]), torch.float64)


def test_chebconv_k1_and_errors():
    g = homo_graph()
    conv = ChebConv(4, 3, k=1, activation=None).double()
    x = feat(7, 4).double()
    assert_close(conv(g, x, lambda_max=[2.0]), conv.linear(x), torch.float64)
    with pytest.raises(DGLError, match="one value per graph"):
        conv(g, x, lambda_max=[2.0, 2.0])
    with pytest.raises(DGLError, match="k >= 1"):
        ChebConv(4, 3, k=0)


def test_tagconv_k_concatenation_width():
    conv = TAGConv(4, 3, k=3)
    assert conv.lin.in_features == 16
    assert conv(homo_graph(), feat(7, 4)).shape == (7, 3)


def test_gcn2conv_beta_and_flags():
    import math
    conv = GCN2Conv(5, layer=3, lambda_=0.6, bias=False)
    assert conv.beta == pytest.approx(math.log(0.6 / 3 + 1))
    assert conv.bias is None and conv.weight2 is None
    assert GCN2Conv(5, layer=1, project_initial_features=False).weight2.shape == (5, 5)
