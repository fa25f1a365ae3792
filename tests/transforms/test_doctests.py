"""The docstring examples of mpgraph.transforms run as doctests."""

import doctest

import pytest

from mpgraph.transforms import functional, module


@pytest.mark.parametrize("mod", [functional, module], ids=["functional", "module"])
def test_docstring_examples(mod):
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
