"""DenseGraphConv, DenseSAGEConv, DenseChebConv beyond the shared layer cases."""

import pytest
import torch
from nn_cases import adj, feat, homo_graph, ref_densechebconv
from tolerances import assert_close

from mpgraph.base import DGLError
from mpgraph.nn import DenseChebConv, DenseGraphConv, DenseSAGEConv, GraphConv, SAGEConv


def test_dense_graphconv_matches_graphconv():
    g = homo_graph()
    A = adj(g)
    x = feat(7, 4).double()
    for norm in ("both", "right", "none"):
        sparse = GraphConv(4, 3, norm=norm).double()
        dense = DenseGraphConv(4, 3, norm=norm).double()
        dense.weight.data.copy_(sparse.weight.data)
        assert_close(dense(A, x), sparse(g, x), torch.float64)


def test_dense_sageconv_matches_sageconv_gcn():
    g = homo_graph()
    A = adj(g)
    x = feat(7, 4).double()
    sparse = SAGEConv(4, 3, "gcn").double()
    dense = DenseSAGEConv(4, 3).double()
    dense.fc.weight.data.copy_(sparse.fc_neigh.weight.data)
    dense.fc.bias.data.copy_(sparse.bias.data)
    assert_close(dense(A, x), sparse(g, x), torch.float64)


def test_dense_chebconv_given_lambda_max():
    A = adj(homo_graph())
    A = ((A + A.T) > 0).double()
    x = feat(7, 4).double()
    conv = DenseChebConv(4, 3, k=3).double()
    lam = float(torch.linalg.eigvals(torch.eye(7, dtype=torch.float64) - A / A.sum(1, keepdim=True).sqrt()
                                     / A.sum(0, keepdim=True).sqrt()).real.max())
    assert_close(conv(A, x, lambda_max=lam), ref_densechebconv(conv, A, x), torch.float64)


@pytest.mark.parametrize("layer", [DenseGraphConv(4, 3), DenseSAGEConv(4, 3), DenseChebConv(4, 3, 2)],
                         ids=["graphconv", "sage", "cheb"])
def test_dense_errors(layer):
    with pytest.raises(DGLError, match="one column per source node"):
        layer(torch.ones(5, 6), torch.ones(5, 4))
    with pytest.raises(DGLError, match="expected feat with 4 features"):
        layer(torch.ones(5, 5), torch.ones(5, 3))
    with pytest.raises(DGLError, match="2-D dense adjacency"):
        layer(torch.ones(5), torch.ones(5, 4))
