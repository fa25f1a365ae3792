"""The docstring examples of mpgraph.nn run as doctests (outputs are shapes and dtypes: deterministic)."""

import doctest
import importlib

import pytest

MODULES = [
    "mpgraph.nn.functional", "mpgraph.nn.glob", "mpgraph.nn.linear", "mpgraph.nn.utils",
    "mpgraph.nn.conv.appnpconv", "mpgraph.nn.conv.chebconv", "mpgraph.nn.conv.densechebconv",
    "mpgraph.nn.conv.densegraphconv", "mpgraph.nn.conv.densesageconv", "mpgraph.nn.conv.dotgatconv",
    "mpgraph.nn.conv.edgeconv", "mpgraph.nn.conv.gatconv", "mpgraph.nn.conv.gatedgraphconv",
    "mpgraph.nn.conv.gatv2conv", "mpgraph.nn.conv.gcn2conv", "mpgraph.nn.conv.ginconv", "mpgraph.nn.conv.gineconv",
    "mpgraph.nn.conv.graphconv", "mpgraph.nn.conv.relgraphconv", "mpgraph.nn.conv.sageconv",
    "mpgraph.nn.conv.sgconv", "mpgraph.nn.conv.tagconv", "mpgraph.nn.conv.hgtconv", "mpgraph.nn.hetero",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_every_layer_module_is_listed():
    import pkgutil

    import mpgraph.nn.conv as conv
    assert {f"mpgraph.nn.conv.{m.name}" for m in pkgutil.iter_modules(conv.__path__)} <= set(MODULES)
