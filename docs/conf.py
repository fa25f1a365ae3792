"""Sphinx configuration of mpgraph's documentation.

Build (warnings are errors) and run the doctests of the guide pages::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
    python -m sphinx -W -b doctest docs docs/_build/doctest

API stub pages are generated into ``docs/api/generated/`` on every build
(autosummary); that folder is git-ignored (``docs/.gitignore``).
"""

import doctest
import os
import sys

DOCS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DOCS)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import mpgraph  # noqa: E402

project = "mpgraph"
author = "the mpgraph authors"
copyright = "the mpgraph authors, Apache-2.0"
version = release = mpgraph.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
]

templates_path = ["_templates"]
# _results/ holds files that pages include (benchmark tables the lead regenerates); they are not pages.
exclude_patterns = ["_build", "_results", "_templates", "Thumbs.db", ".DS_Store"]
root_doc = "index"
language = "en"
nitpicky = False

# -- API reference ---------------------------------------------------------------------------------------------
autosummary_generate = True
autosummary_generate_overwrite = True
autosummary_imported_members = False
autodoc_member_order = "bysource"
# torch.nn.Module's repr hook, overridden by most layers: noise in the reference
autodoc_default_options = {"exclude-members": "extra_repr"}
autodoc_typehints = "none"
add_module_names = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()
numpydoc_xref_param_type = False

# -- doctest ---------------------------------------------------------------------------------------------------
# The guide pages use explicit ``.. doctest::`` / ``.. testcode::`` blocks. The ``>>>`` examples inside the
# docstrings rendered by the API reference are not run again here: ``python -m pytest --doctest-modules``
# (the README's test command) runs them, with the same option flags as below.
doctest_test_doctest_blocks = ""
doctest_default_flags = (doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.DONT_ACCEPT_TRUE_FOR_1)
doctest_global_setup = """
import torch
torch.manual_seed(0)
"""

# -- HTML ------------------------------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"mpgraph {release}"
html_theme_options = {
    "description": "DGL's GNN API on current PyTorch, with correct and fast mixed precision",
    "fixed_sidebar": True,
}
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}
html_show_sourcelink = False


# -- docstring checks ------------------------------------------------------------------------------------------
# numpydoc drops a docstring section it does not know (and only says so with a Python warning, which
# ``-W`` does not see). Route those warnings through Sphinx's logger so that the build fails instead of
# silently losing text.
import warnings  # noqa: E402

from sphinx.util import logging as sphinx_logging  # noqa: E402

_logger = sphinx_logging.getLogger("mpgraph.docs")
_showwarning = warnings.showwarning


def _numpydoc_warnings_to_sphinx(message, category, filename, lineno, file=None, line=None):
    if "numpydoc" in str(filename):
        _logger.warning("numpydoc: %s", message, type="numpydoc", subtype="docstring")
        return
    _showwarning(message, category, filename, lineno, file, line)


warnings.filterwarnings("always", category=UserWarning, module=r"numpydoc\b")
warnings.showwarning = _numpydoc_warnings_to_sphinx

def _remove_stale_stubs(app):
    """Delete stub pages in api/generated/ that no autosummary list names any more.

    autosummary (re)writes the stubs it needs but never deletes one, and a left-over stub is a page in
    no toctree: a warning, so an error. Runs after autosummary's own builder-inited handler.
    """
    from pathlib import Path

    from sphinx.ext.autosummary.generate import find_autosummary_in_files

    generated = Path(DOCS, "api", "generated")
    if not generated.is_dir():
        return
    skip = {"_build", "generated", "_templates", "_results"}
    sources = [str(p) for p in Path(DOCS).rglob("*.rst") if not skip & set(p.relative_to(DOCS).parts)]
    keep = {entry.name + ".rst" for entry in find_autosummary_in_files(sources)}
    for stub in generated.glob("*.rst"):
        if stub.name not in keep:
            stub.unlink()


def _find_new_pages(app):
    """Let autosummary see pages added since the last build.

    autosummary (builder-inited, priority 500) scans the pages the saved environment knows; a page
    added since the last incremental build would get no stubs until the build after. Refresh the list
    first (the read phase recomputes it anyway).
    """
    app.env.find_files(app.config, app.builder)


def setup(app):
    app.connect("builder-inited", _find_new_pages, priority=400)
    app.connect("builder-inited", _remove_stale_stubs, priority=600)
