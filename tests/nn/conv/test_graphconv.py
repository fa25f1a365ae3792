"""GraphConv and EdgeWeightNorm: options, errors and precision beyond the shared layer cases."""

import pytest
import torch
from nn_cases import (adj, bipartite_graph, block_graph, feat, homo_graph, pos_weight, ref_edge_weight_norm,
                      ref_graphconv)
from tolerances import assert_close

import mpgraph as dgl
from mpgraph.base import DGLError
from mpgraph.nn import EdgeWeightNorm, GraphConv
from mpgraph.nn.utils import ZERO_IN_DEGREE_MESSAGE

DGL_ZERO_IN_DEGREE = (
    "There are 0-in-degree nodes in the graph, output for those nodes will be invalid. This is harmful for some "
    "applications, causing silent performance regression. Adding self-loop on the input graph by calling "
    "`g = dgl.add_self_loop(g)` will resolve the issue. Setting ``allow_zero_in_degree`` to be `True` when "
    "constructing this module will suppress the check and let the code run."
)


def zero_in_graph():
    return dgl.graph(([0, 1, 2, 3, 2, 5], [1, 2, 3, 4, 0, 3]))      # node 5 has no in-edge


def test_zero_in_degree_error_is_dgls():
    assert ZERO_IN_DEGREE_MESSAGE == DGL_ZERO_IN_DEGREE
    conv = GraphConv(4, 2)
    with pytest.raises(DGLError) as err:
        conv(zero_in_graph(), torch.ones(6, 4))
    assert str(err.value) == DGL_ZERO_IN_DEGREE
    assert isinstance(err.value, ValueError)


def test_allow_zero_in_degree_gives_bias_only():
    conv = GraphConv(4, 2, allow_zero_in_degree=True)
    torch.nn.init.normal_(conv.bias)
    out = conv(zero_in_graph(), torch.randn(6, 4))
    torch.testing.assert_close(out[5], conv.bias.detach())
    conv2 = GraphConv(4, 2)
    conv2.set_allow_zero_in_degree(True)
    assert conv2(zero_in_graph(), torch.randn(6, 4)).shape == (6, 2)


@pytest.mark.parametrize("idtype", [torch.int32, torch.int64])
def test_idtype_and_multidim_features(idtype):
    g = homo_graph().astype(idtype)
    conv = GraphConv(4, 3).double()
    x = feat(7, 2, 4).double()                                 # (N, *, D)
    out = conv(g, x)
    assert out.shape == (7, 2, 3)
    for i in range(2):
        assert_close(out[:, i], ref_graphconv(conv, g, x[:, i]), torch.float64)


def test_external_weight():
    g = homo_graph()
    conv = GraphConv(4, 3, weight=False).double()
    w = torch.randn(4, 3, dtype=torch.float64)
    x = feat(7, 4).double()
    ref = ref_graphconv(GraphConv(4, 3, weight=False, bias=False).double(), g, x) @ w + conv.bias.detach()
    assert_close(conv(g, x, weight=w), ref, torch.float64)
    with pytest.raises(DGLError, match="weight=False"):
        GraphConv(4, 3)(g, feat(7, 4), weight=torch.randn(4, 3))
    with pytest.raises(DGLError, match="expected an external weight of shape"):
        conv(g, x, weight=torch.randn(3, 3, dtype=torch.float64))


def test_errors_say_expected_and_got():
    g = homo_graph()
    with pytest.raises(DGLError, match=r"expected feat with 4 features.*got shape \(7, 5\)"):
        GraphConv(4, 2)(g, torch.ones(7, 5))
    with pytest.raises(DGLError, match=r"one row per source node \(7 rows\), got shape \(6, 4\)"):
        GraphConv(4, 2)(g, torch.ones(6, 4))
    with pytest.raises(DGLError, match=rf"edge_weight with one scalar per edge, shape \({g.num_edges()},\)"):
        GraphConv(4, 2)(g, torch.ones(7, 4), edge_weight=torch.ones(3))
    with pytest.raises(DGLError, match="expected norm in"):
        GraphConv(4, 2, norm="sym")
    with pytest.raises(TypeError, match="floating-point"):
        GraphConv(4, 2)(g, torch.ones(7, 4, dtype=torch.int64))


def test_bipartite_degrees_are_per_side():
    g = bipartite_graph()
    conv = GraphConv(3, 2, norm="both", weight=False, bias=False).double()
    xs = feat(5, 3).double()
    A = adj(g)
    expected = A.sum(1).clamp(min=1).pow(-0.5)[:, None] * (A @ (xs * A.sum(0).clamp(min=1).pow(-0.5)[:, None]))
    assert_close(conv(g, (xs, feat(4, 3).double())), expected, torch.float64)


def test_block_single_tensor_uses_first_rows():
    g = block_graph()
    conv = GraphConv(3, 2).double()
    x = feat(6, 3).double()
    assert_close(conv(g, x), conv(g, (x, x[:3])), torch.float64)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_within_two_ulp(dtype):
    # positive features, no cancellation: fp32 normalisers and fp32 accumulation keep the
    # result within a couple of rounding steps of the exact value
    N = 300
    src = torch.randint(0, N, (6000,), generator=torch.Generator().manual_seed(0))
    dst = torch.randint(0, N, (6000,), generator=torch.Generator().manual_seed(1))
    g = dgl.graph((torch.cat([src, torch.arange(N)]), torch.cat([dst, torch.arange(N)])))
    x = (torch.rand(N, 8, generator=torch.Generator().manual_seed(2)) + 0.5).to(dtype)
    conv = GraphConv(8, 8, weight=False, bias=False)
    out = conv(g, x)
    exact = conv.double()(g, x.double())
    rel = ((out.double() - exact).abs() / exact.abs()).max().item()
    eps = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}[dtype]
    assert out.dtype == dtype and rel <= 2 * eps, rel


@pytest.mark.parametrize("norm", ["both", "right", "left", "none"])
def test_edge_weight_norm(norm):
    g = homo_graph()
    w = pos_weight(g.num_edges()).double().requires_grad_(True)
    mod = EdgeWeightNorm(norm=norm, eps=0.05)
    out = mod(g, w)
    assert_close(out, ref_edge_weight_norm(mod, g, w.detach()), torch.float64)
    out.sum().backward()
    assert torch.isfinite(w.grad).all()
    assert mod(g, w.detach().half()).dtype == torch.float16


def test_edge_weight_norm_errors():
    g = homo_graph()
    with pytest.raises(DGLError, match="scalar edge weights"):
        EdgeWeightNorm()(g, torch.ones(g.num_edges(), 2))
    with pytest.raises(DGLError, match="non-positive edge weight"):
        EdgeWeightNorm("both")(g, torch.zeros(g.num_edges()))
    with pytest.raises(DGLError, match="expected norm in"):
        EdgeWeightNorm("sym")


def test_edge_weight_norm_then_graphconv_none_matches_weighted_gcn():
    g = homo_graph()
    w = pos_weight(g.num_edges()).double()
    x = feat(7, 4).double()
    conv = GraphConv(4, 3, norm="none").double()
    out = conv(g, x, edge_weight=EdgeWeightNorm("both")(g, w))
    A = adj(g, w)
    d_in, d_out = A.sum(1), A.sum(0)
    expected = (d_in.pow(-0.5)[:, None] * A * d_out.pow(-0.5)[None, :]) @ x @ conv.weight.detach() + conv.bias.detach()
    assert_close(out, expected, torch.float64)
