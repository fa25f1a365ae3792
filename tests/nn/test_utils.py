"""JumpingKnowledge, expand_as_pair and DGL's import paths."""

import pytest
import torch

import mpgraph as dgl
from mpgraph.base import DGLError
from mpgraph.nn import JumpingKnowledge
from mpgraph.nn.utils import expand_as_pair


def test_jumping_knowledge_lstm_matches_torch_float64():
    torch.manual_seed(0)
    jk = JumpingKnowledge("lstm", in_feats=4, num_layers=3).double()
    feats = [torch.randn(5, 4, dtype=torch.float64) for _ in range(3)]
    stacked = torch.stack(feats, 1)
    alpha = torch.softmax(jk.att(jk.lstm(stacked)[0]).squeeze(-1), -1)
    torch.testing.assert_close(jk(feats), (stacked * alpha.unsqueeze(-1)).sum(1))
    assert jk.lstm.hidden_size == 6 and jk.lstm.bidirectional


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_jumping_knowledge_lstm_half_and_autocast(dtype):
    jk = JumpingKnowledge("lstm", in_feats=4, num_layers=2)
    feats = [torch.randn(5, 4) for _ in range(2)]
    assert jk.to(dtype)([f.to(dtype) for f in feats]).dtype == dtype
    with torch.autocast("cpu", dtype=dtype):
        assert torch.isfinite(jk.float()(feats)).all()


def test_jumping_knowledge_errors():
    with pytest.raises(DGLError, match="needs in_feats and num_layers"):
        JumpingKnowledge("lstm")
    with pytest.raises(DGLError, match="expected mode in"):
        JumpingKnowledge("sum")
    with pytest.raises(DGLError, match="non-empty list"):
        JumpingKnowledge()([])


def test_expand_as_pair_on_blocks():
    b = dgl.create_block(([0, 1], [0, 1]), num_src_nodes=4, num_dst_nodes=2)
    x = torch.arange(4.0)
    src, dst = expand_as_pair(x, b)
    assert src is x and torch.equal(dst, x[:2])
    with pytest.raises(DGLError, match="pair"):
        expand_as_pair((1, 2, 3))


def test_dgl_import_paths():
    import mpgraph.nn as mnn
    from mpgraph.nn.pytorch import GATConv
    from mpgraph.nn.pytorch.conv import GraphConv
    from mpgraph.nn.pytorch.glob import SumPooling
    from mpgraph.nn.pytorch.linear import TypedLinear
    from mpgraph.nn.pytorch.utils import JumpingKnowledge as JK
    assert GATConv is mnn.GATConv and GraphConv is mnn.GraphConv and SumPooling is mnn.SumPooling
    assert TypedLinear is mnn.TypedLinear and JK is JumpingKnowledge
    assert set(mnn.pytorch.__all__) >= set(mnn.__all__) - {"pytorch", "functional"}
