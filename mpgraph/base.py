"""Shared constants and the error type of the public API."""

__all__ = ["DGLError", "NID", "EID", "NTYPE", "ETYPE", "ALL", "is_all"]


class DGLError(ValueError):
    """Error raised for invalid input at mpgraph's public boundary.

    It subclasses :class:`ValueError`, so ``except ValueError`` catches it too,
    and keeps DGL's name so that ported ``except dgl.DGLError`` clauses work.
    """


class DGLTypeError(DGLError, TypeError):
    """A :class:`DGLError` raised where Python convention asks for ``TypeError``."""


#: Feature name under which subgraphs and blocks store original node IDs.
NID = "_ID"
#: Feature name under which subgraphs and blocks store original edge IDs.
EID = "_ID"
#: Feature name of node types in homogeneous views of typed graphs.
NTYPE = "_TYPE"
#: Feature name of edge types in homogeneous views of typed graphs.
ETYPE = "_TYPE"


class _AllType:
    """Singleton meaning "every node" or "every edge"."""

    __slots__ = ()

    def __repr__(self):
        return "ALL"

    def __reduce__(self):
        return "ALL"


#: Placeholder for "all nodes" / "all edges" in ``apply_nodes``, ``edge_softmax``, ...
ALL = _AllType()


def is_all(arg):
    """Return True when ``arg`` is the :data:`ALL` placeholder (or the string ``"__ALL__"``)."""
    return arg is ALL or (isinstance(arg, str) and arg == "__ALL__")
