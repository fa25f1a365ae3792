"""mpgraph.nn.functional.edge_softmax."""

import pytest
import torch
from nn_cases import edge_softmax_ref, edges, homo_graph

from mpgraph.base import DGLError
from mpgraph.nn import edge_softmax as nn_edge_softmax
from mpgraph.nn.functional import edge_softmax
from mpgraph.nn.pytorch.softmax import edge_softmax as pt_edge_softmax


@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-12), (torch.float32, 1e-6), (torch.bfloat16, 8e-3),
                                        (torch.float16, 1e-3)])
def test_matches_per_destination_softmax(dtype, tol):
    g = homo_graph()
    logits = torch.randn(g.num_edges(), 2, 1, generator=torch.Generator().manual_seed(0)) * 4
    out = edge_softmax(g, logits.to(dtype))
    assert out.dtype == dtype
    torch.testing.assert_close(out.double(), edge_softmax_ref(g, logits.to(dtype).double()), rtol=tol, atol=tol)


def test_large_logits_stay_finite_in_half():
    g = homo_graph()
    out = edge_softmax(g, torch.full((g.num_edges(), 1), 60000.0, dtype=torch.float16))
    assert torch.isfinite(out).all()


def test_norm_by_src_and_aliases():
    g = homo_graph()
    logits = torch.randn(g.num_edges(), 1)
    src, _ = edges(g)
    out = edge_softmax(g, logits, norm_by="src")
    sums = torch.zeros(7, 1).index_add(0, src, out)
    torch.testing.assert_close(sums, torch.ones(7, 1))
    assert nn_edge_softmax is edge_softmax and pt_edge_softmax is edge_softmax
    with pytest.raises(DGLError, match="rows"):
        edge_softmax(g, torch.randn(3, 1))
