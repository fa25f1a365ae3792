"""RelGraphConv beyond the shared layer cases."""

import pytest
import torch
from nn_cases import feat, homo_graph, ref_relgraphconv
from tolerances import assert_close

from mpgraph.base import DGLError
from mpgraph.nn import RelGraphConv


@pytest.mark.parametrize("regularizer", [None, "basis", "bdd"])
def test_presorted_edges_give_the_same_result(regularizer):
    g = homo_graph()
    E = g.num_edges()
    etypes = torch.sort(torch.arange(E) % 3).values             # edges already grouped by relation
    conv = RelGraphConv(6, 4, num_rels=3, regularizer=regularizer, num_bases=2 if regularizer else None).double()
    x = feat(7, 6).double()
    out = conv(g, x, etypes, presorted=True)
    assert_close(out, conv(g, x, etypes), torch.float64)
    assert_close(out, ref_relgraphconv(conv, g, x, etypes), torch.float64)


def test_num_bases_defaults_to_num_rels():
    conv = RelGraphConv(6, 4, num_rels=3, regularizer="basis")
    assert conv.linear_r.num_bases == 3


def test_etypes_as_list_and_errors():
    g = homo_graph()
    E = g.num_edges()
    conv = RelGraphConv(6, 4, num_rels=2).double()
    x = feat(7, 6).double()
    etypes = [k % 2 for k in range(E)]
    assert_close(conv(g, x, etypes), ref_relgraphconv(conv, g, x, torch.tensor(etypes)), torch.float64)
    with pytest.raises(DGLError, match="one relation per edge"):
        conv(g, x, torch.zeros(E - 1, dtype=torch.int64))
    with pytest.raises(DGLError, match=r"types in \[0, 2\)"):
        conv(g, x, torch.full((E,), 5))
    with pytest.raises(DGLError, match=rf"norm of shape \({E}, 1\)"):
        conv(g, x, torch.zeros(E, dtype=torch.int64), norm=torch.ones(E - 1, 1, dtype=torch.float64))
    with pytest.raises(DGLError, match="regularizer"):
        RelGraphConv(6, 4, num_rels=2, regularizer="block")
