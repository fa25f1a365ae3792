"""GINConv and GINEConv beyond the shared layer cases."""

import pytest
import torch
from nn_cases import feat, homo_graph, ref_ginconv
from tolerances import assert_close

from mpgraph.base import DGLError
from mpgraph.nn import GINConv, GINEConv


def test_eps_is_a_parameter_only_when_learned():
    assert [k for k, _ in GINConv(learn_eps=True).named_parameters()] == ["eps"]
    fixed = GINConv(init_eps=0.3)
    assert list(fixed.parameters()) == [] and "eps" in dict(fixed.named_buffers())
    assert [k for k, _ in GINEConv(learn_eps=True).named_parameters()] == ["eps"]


def test_fixed_eps_buffer_follows_model_dtype():
    g = homo_graph()
    conv = GINConv(None, "sum", init_eps=0.25).to(torch.bfloat16)
    x = feat(7, 4).bfloat16()
    out = conv(g, x)
    assert out.dtype == torch.bfloat16
    # an fp32 model on bf16 features keeps the features' dtype as well
    assert GINConv(None, "sum", init_eps=0.25)(g, x).dtype == torch.bfloat16
    assert_close(out, ref_ginconv(conv.double(), g, x.double()), torch.bfloat16, model=True)


def test_errors():
    with pytest.raises(DGLError, match="expected aggregator_type in 'sum', 'max', 'mean', got 'lstm'"):
        GINConv(None, "lstm")
    g = homo_graph()
    with pytest.raises(DGLError, match="same width"):
        GINConv()(g, (torch.ones(7, 3), torch.ones(7, 4)))
    with pytest.raises(DGLError, match="edge_feat with 4 features"):
        GINEConv()(g, torch.ones(7, 4), torch.ones(g.num_edges(), 3))
    with pytest.raises(DGLError, match=r"one row per edge"):
        GINEConv()(g, torch.ones(7, 4), torch.ones(3, 4))
