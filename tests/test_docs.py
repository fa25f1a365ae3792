"""The API reference (docs/api/*.rst) documents every public name, and every public module has a place in it.

Fast: parses the reST sources (no Sphinx build). A name ``n`` in ``M.__all__`` counts as documented when
the reference names ``M.n`` (autosummary entry, ``auto*`` or ``py:*`` directive), or names the same
function or class elsewhere (a re-export documented once, in its home module), or, for a submodule,
has a ``automodule``/``py:module`` for it. The build itself runs in CI through ``.ci/run``::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
    python -m sphinx -W -b doctest docs docs/_build/doctest
"""

import importlib
import importlib.util
import inspect
import pathlib
import pkgutil
import re

import pytest

import mpgraph

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"

#: Modules whose ``__all__`` the reference must cover.
PUBLIC_MODULES = [
    "mpgraph",
    "mpgraph.heterograph",
    "mpgraph.function",
    "mpgraph.ops",
    "mpgraph.nn",
    "mpgraph.nn.functional",
    "mpgraph.nn.pytorch",
    "mpgraph.data",
    "mpgraph.data.utils",
    "mpgraph.transforms",
    "mpgraph.precision",
    "mpgraph.batch",
    "mpgraph.readout",
    "mpgraph.graph_io",
    "mpgraph.udf",
    "mpgraph.init",
    "mpgraph.backend",
    "mpgraph.sampling",
    "mpgraph.dataloading",
    "mpgraph.dataloading.negative_sampler",
    "mpgraph.partition",
    "mpgraph.distributed",
]

#: Top-level modules of the package that need no page of their own, and why.
NOT_PAGES = {
    "base": "DGLError and the constants are documented on the mpgraph page",
    "cli": "the `mpgraph` command, documented by --help and the guide pages",
    "convert": "its constructors are documented on the mpgraph page (mpgraph.graph, ...)",
    "demo": "`python -m mpgraph.demo`, in the quickstart",
    "frame": "internal: feature storage behind g.ndata/g.edata",
    "graph": "Graph is documented on the mpgraph page; `mpgraph.graph` is the constructor function",
}

#: Modules whose name is also a top-level function (``mpgraph.heterograph``): their page documents the
#: module's names without declaring the module, which would clash with the function's entry.
SHADOWED_BY_FUNCTION = {"mpgraph.heterograph"}

_DIRECTIVE = re.compile(r"^\s*\.\. (?:py:)?(?P<kind>[a-z]+)::\s*(?P<arg>\S*)\s*$")
_OBJECT_KINDS = {"autofunction", "autoclass", "autodata", "autoattribute", "automethod", "autoexception",
                 "function", "class", "data", "attribute", "method", "exception"}


def _sources():
    skip = ("_build", "generated", "_templates", "_results")
    return sorted(p for p in DOCS.rglob("*.rst") if not any(part in skip for part in p.relative_to(DOCS).parts))


def _resolve(name):
    """The object that a dotted name refers to (longest importable module prefix, then attributes)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(name)


def _full_name(entry, current):
    """Resolve an entry as autosummary does: relative to the current module first, then as given."""
    entry = entry.lstrip("~")
    candidates = ([f"{current}.{entry}"] if current else []) + [entry]
    for cand in candidates:
        try:
            _resolve(cand)
        except (ImportError, AttributeError):
            continue
        return cand
    return None


def _parse():
    """``(names, modules, unresolved)`` declared by the reST sources."""
    names, modules, unresolved = set(), set(), []
    for path in _sources():
        current = None
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            m = _DIRECTIVE.match(lines[i])
            i += 1
            if not m:
                continue
            kind, arg = m["kind"], m["arg"]
            options = []
            while i < len(lines) and re.match(r"^\s+:[\w-]+:", lines[i]):
                options.append(lines[i].strip())
                i += 1
            where = f"{path.relative_to(DOCS)}:{i}"
            if kind == "currentmodule":
                current = None if arg == "None" else arg
            elif kind in ("automodule", "module"):
                current = arg
                if not any(o.startswith((":no-index:", ":noindex:")) for o in options):
                    modules.add(arg)
            elif kind == "autosummary":
                while i < len(lines) and (not lines[i].strip() or lines[i].startswith("   ")):
                    entry = lines[i].strip()
                    i += 1
                    if not entry or entry.startswith((":", "..")):
                        continue
                    full = _full_name(entry.split()[0], current)
                    if full is None:
                        unresolved.append(f"{where}: {entry}")
                    else:
                        names.add(full)
            elif kind in _OBJECT_KINDS and arg:
                full = _full_name(arg, current)
                if full is None:
                    unresolved.append(f"{where}: {arg}")
                else:
                    names.add(full)
    return names, modules, unresolved


@pytest.fixture(scope="module")
def reference():
    return _parse()


def _documented_objects(names):
    objs = {}
    for n in names:
        obj = _resolve(n)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            objs[id(obj)] = n
    return objs


def _exists(modname):
    try:
        return importlib.util.find_spec(modname) is not None
    except ImportError:
        return False


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_every_public_name_is_in_the_reference(reference, modname):
    if not _exists(modname):
        pytest.skip(f"{modname} is not in this checkout")
    names, modules, _ = reference
    objs = _documented_objects(names)
    module = importlib.import_module(modname)
    assert hasattr(module, "__all__"), f"{modname} has no __all__"
    missing = []
    for n in module.__all__:
        obj = getattr(module, n)
        if f"{modname}.{n}" in names:
            continue
        if inspect.ismodule(obj) and (obj.__name__ in modules or obj.__name__ in SHADOWED_BY_FUNCTION):
            continue
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and id(obj) in objs:
            continue
        missing.append(n)
    assert not missing, (f"{modname}.__all__ names missing from the API reference (docs/api/*.rst): {missing}; "
                         "add them to an autosummary list of the module's page")


def test_every_public_module_has_a_page(reference):
    _, modules, _ = reference
    missing = [m for m in PUBLIC_MODULES if m not in modules and m not in SHADOWED_BY_FUNCTION and _exists(m)]
    assert not missing, f"modules without an automodule/py:module directive in docs/: {missing}"


def test_every_top_level_module_is_public_or_explained():
    public_top = {m.split(".")[1] for m in PUBLIC_MODULES if m.count(".") >= 1}
    shadowed = {m.split(".")[1] for m in SHADOWED_BY_FUNCTION}
    unknown = [info.name for info in pkgutil.iter_modules(mpgraph.__path__)
               if not info.name.startswith("_") and info.name not in public_top | shadowed | set(NOT_PAGES)]
    assert not unknown, (f"new top-level modules {unknown}: add them to PUBLIC_MODULES in tests/test_docs.py "
                         "and give them a page in docs/api/ (or list them in NOT_PAGES with the reason)")


def test_reference_entries_resolve(reference):
    _, _, unresolved = reference
    assert not unresolved, f"reference entries that name nothing importable: {unresolved}"


def test_results_includes_exist():
    for page in _sources():
        for inc in re.findall(r"^\.\. include:: (\S+)", page.read_text(), flags=re.M):
            assert (page.parent / inc).is_file(), f"{page.relative_to(DOCS)} includes missing {inc}"
