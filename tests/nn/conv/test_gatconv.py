"""GATConv, GATv2Conv, DotGatConv: attention, options and errors beyond the shared layer cases."""

import pytest
import torch
from nn_cases import block_graph, edges, feat, homo_graph, pos_weight, ref_gatconv
from tolerances import assert_close

import mpgraph as dgl
from mpgraph.base import DGLError
from mpgraph.nn import DotGatConv, GATConv, GATv2Conv

LAYERS = [
    lambda: GATConv(4, 3, num_heads=2),
    lambda: GATv2Conv(4, 3, num_heads=2),
    lambda: DotGatConv(4, 3, num_heads=2),
]


def per_dst_sums(g, a):
    _, dst = edges(g)
    return torch.zeros(g.num_dst_nodes(), *a.shape[1:], dtype=torch.float64).index_add(0, dst, a.double())


@pytest.mark.parametrize("make", LAYERS, ids=["gat", "gatv2", "dotgat"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_attention_is_a_softmax_per_destination(make, dtype):
    g = homo_graph()
    conv = make().to(dtype)
    out, a = conv(g, feat(7, 4).to(dtype), get_attention=True)
    assert a.shape == (g.num_edges(), 2, 1) and a.dtype == dtype and out.dtype == dtype
    torch.testing.assert_close(per_dst_sums(g, a), torch.ones(7, 2, 1, dtype=torch.float64),
                               rtol=0, atol={torch.float32: 1e-6, torch.bfloat16: 3e-2, torch.float16: 4e-3}[dtype])


@pytest.mark.parametrize("make", LAYERS, ids=["gat", "gatv2", "dotgat"])
def test_zero_in_degree_error_and_opt_out(make):
    g = dgl.graph(([0, 1, 2], [1, 2, 1]), num_nodes=4)
    conv = make()
    with pytest.raises(DGLError, match="There are 0-in-degree nodes in the graph"):
        conv(g, torch.ones(4, 4))
    conv.set_allow_zero_in_degree(True)
    out = conv(g, torch.ones(4, 4))
    assert torch.isfinite(out).all()
    if isinstance(conv, DotGatConv):      # no bias or residual: isolated nodes get 0
        assert torch.all(out[[0, 3]] == 0)


def test_gat_edge_weight_scales_attention_after_softmax():
    g = homo_graph()
    conv = GATConv(4, 3, num_heads=2).double()
    x = feat(7, 4).double()
    w = pos_weight(g.num_edges()).double()
    _, a = conv(g, x, get_attention=True)
    out, aw = conv(g, x, edge_weight=w, get_attention=True)
    assert_close(aw, a * w[:, None, None], torch.float64)
    assert_close(out, ref_gatconv(conv, g, x, edge_weight=w), torch.float64)
    with pytest.raises(DGLError, match="one scalar per edge"):
        conv(g, x, edge_weight=w[:-1])


def test_gat_multidim_features():
    g = homo_graph()
    conv = GATConv(4, 3, num_heads=2, residual=True).double()
    x = feat(7, 5, 4).double()
    out, a = conv(g, x, get_attention=True)
    assert out.shape == (7, 5, 2, 3) and a.shape == (g.num_edges(), 5, 2, 1)
    for i in (0, 4):
        assert_close(out[:, i], ref_gatconv(conv, g, x[:, i]), torch.float64)


def test_gat_bias_and_residual_flags():
    assert GATConv(4, 3, 2, bias=False).bias is None
    res = GATConv(4, 3, 2, residual=True)
    assert res.has_linear_res and res.bias is None and res.res_fc.bias is not None
    assert GATConv(6, 3, 2, residual=True).has_explicit_bias
    assert GATConv(4, 3, 2).res_fc is None


def test_dropout_only_in_training():
    g = homo_graph()
    conv = GATConv(4, 3, num_heads=2, feat_drop=0.5, attn_drop=0.5)
    x = feat(7, 4)
    conv.eval()
    torch.testing.assert_close(conv(g, x), conv(g, x))
    conv.train()
    torch.manual_seed(0)
    a = conv(g, x)
    torch.manual_seed(1)
    assert not torch.equal(a, conv(g, x))


def test_gat_msg_drop_masks_the_summed_features_not_the_attention():
    g = homo_graph()
    conv = GATConv(4, 3, num_heads=2, msg_drop=0.5).double()
    x = feat(7, 4).double()
    conv.eval()
    out_eval, a_eval = conv(g, x, get_attention=True)
    assert_close(out_eval, ref_gatconv(conv, g, x), torch.float64)
    conv.train()
    torch.manual_seed(3)
    out, a = conv(g, x, get_attention=True)
    assert_close(a, a_eval, torch.float64)               # the logits see the undropped projection
    torch.manual_seed(3)                                 # the same draw, as a mask of kept/2 values
    keep = dgl.ops.dropout(torch.ones(7, 2, 3, dtype=torch.float64), 0.5)  # the layer's dropout
    assert set(keep.unique().tolist()) == {0.0, 2.0}
    assert_close(out, ref_gatconv(conv, g, x, msg_scale=keep), torch.float64)
    assert not torch.allclose(out, out_eval)
    assert GATConv(4, 3, 2).msg_drop.p == 0                        # off by default, as in DGL
    assert GATConv(4, 3, 2).state_dict().keys() == GATConv(4, 3, 2, msg_drop=0.3).state_dict().keys()


@pytest.mark.parametrize("cls", [GATConv, GATv2Conv, DotGatConv])
def test_pair_layers_need_pairs_and_widths(cls):
    g = homo_graph()
    with pytest.raises(DGLError, match="expects a \\(feat_src, feat_dst\\) pair"):
        cls((4, 3), 2, num_heads=1)(g, torch.ones(7, 4))
    with pytest.raises(DGLError, match="expected feat with 4 features"):
        cls(4, 2, num_heads=1)(g, torch.ones(7, 3))


def test_gatv2_share_weights_and_block():
    shared = GATv2Conv(4, 3, num_heads=2, share_weights=True)
    assert shared.fc_src is shared.fc_dst
    g = block_graph()
    conv = GATv2Conv(4, 3, num_heads=2).double()
    x = feat(6, 4).double()
    # a block's destinations are its first source nodes, projected by fc_dst
    assert_close(conv(g, x), conv(g, (x, x[:3])), torch.float64)
    no_bias = GATv2Conv(4, 3, num_heads=2, bias=False, residual=True)
    assert no_bias.fc_src.bias is None and no_bias.res_fc.bias is None


def test_dotgat_scores_are_scaled_dot_products():
    g = homo_graph()
    conv = DotGatConv(4, 3, num_heads=1).double()
    x = feat(7, 4).double()
    _, a = conv(g, x, get_attention=True)
    h = conv.fc(x)
    src, dst = edges(g)
    scores = (h[src] * h[dst]).sum(-1) / 3 ** 0.5
    for v in range(7):
        idx = (dst == v).nonzero().squeeze(1)
        assert_close(a[idx, 0, 0], torch.softmax(scores[idx], 0), torch.float64)
