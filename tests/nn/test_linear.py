"""TypedLinear beyond the shared layer cases."""

import pytest
import torch
from nn_cases import ref_typedlinear
from tolerances import assert_close

from mpgraph.base import DGLError
from mpgraph.nn import TypedLinear


@pytest.mark.parametrize("regularizer", [None, "basis", "bdd"])
def test_sorted_by_type(regularizer):
    lin = TypedLinear(4, 6, 3, regularizer, 2 if regularizer else None).double()
    x = torch.randn(8, 4, dtype=torch.float64)
    t = torch.tensor([0, 0, 1, 1, 1, 2, 2, 2])
    assert_close(lin(x, t, sorted_by_type=True), ref_typedlinear(lin, x, t), torch.float64)


def test_missing_types_and_empty_input():
    lin = TypedLinear(4, 6, 3).double()
    x = torch.randn(3, 4, dtype=torch.float64)
    t = torch.tensor([2, 2, 2])
    assert_close(lin(x, t), ref_typedlinear(lin, x, t), torch.float64)
    assert lin(x[:0], t[:0]).shape == (0, 6)


def test_errors():
    with pytest.raises(DGLError, match="needs num_bases"):
        TypedLinear(4, 6, 3, "basis")
    with pytest.raises(DGLError, match="divisible by num_bases"):
        TypedLinear(4, 6, 3, "bdd", 4)
    with pytest.raises(DGLError, match="expected regularizer"):
        TypedLinear(4, 6, 3, "low-rank", 2)
    lin = TypedLinear(4, 6, 3)
    with pytest.raises(DGLError, match=r"expected x of shape \(N, 4\)"):
        lin(torch.ones(2, 5), torch.tensor([0, 1]))
    with pytest.raises(DGLError, match=r"types in \[0, 3\)"):
        lin(torch.ones(2, 4), torch.tensor([0, 3]))
