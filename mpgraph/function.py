"""Builtin message and reduce functions (``mpgraph.function``, usually imported as ``fn``).

Builtins describe a computation instead of running it, so the graph can lower a
builtin message + builtin reduce pair to one fused kernel (gSpMM) and an edge-wise
builtin to gSDDMM, with no ``E x D`` message tensor where the op allows.

Message functions name their operands by where they live: ``u`` (source node
features), ``v`` (dst node features) and ``e`` (edge features). Feature
shapes broadcast as in NumPy over the dimensions after the first; ``dot`` reduces
the last dimension and keeps it with size 1.

Examples
--------
>>> import torch
>>> import mpgraph as dgl
>>> import mpgraph.function as fn
>>> g = dgl.graph(([0, 1, 2], [1, 2, 2]))
>>> g.ndata['h'] = torch.tensor([[1.], [2.], [3.]])
>>> g.update_all(fn.copy_u('h', 'm'), fn.sum('m', 'h_sum'))
>>> g.ndata['h_sum']
tensor([[0.],
        [1.],
        [5.]])
"""

__all__ = [
    "BuiltinFunction", "MessageFunction", "ReduceFunction", "BinaryMessageFunction", "CopyMessageFunction",
    "copy_u", "copy_e", "copy_v", "copy_src", "copy_edge", "sum", "max", "min", "mean",
    "u_add_v",
    "u_sub_v",
    "u_mul_v",
    "u_div_v",
    "u_dot_v",
    "u_add_e",
    "u_sub_e",
    "u_mul_e",
    "u_div_e",
    "u_dot_e",
    "v_add_u",
    "v_sub_u",
    "v_mul_u",
    "v_div_u",
    "v_dot_u",
    "v_add_e",
    "v_sub_e",
    "v_mul_e",
    "v_div_e",
    "v_dot_e",
    "e_add_u",
    "e_sub_u",
    "e_mul_u",
    "e_div_u",
    "e_dot_u",
    "e_add_v",
    "e_sub_v",
    "e_mul_v",
    "e_div_v",
    "e_dot_v",
]

BINARY_OPS = ("add", "sub", "mul", "div", "dot")
TARGETS = ("u", "v", "e")
REDUCE_OPS = ("sum", "max", "min", "mean")
_TARGET_WORD = {"u": "source node", "v": "destination node", "e": "edge"}


class BuiltinFunction:
    """Base class of builtin message and reduce descriptors."""

    name = "builtin"

    def __repr__(self):
        return f"{type(self).__name__}({self.name})"


class MessageFunction(BuiltinFunction):
    """Base class of builtin message functions; ``out_field`` names the message."""

    out_field = None


class BinaryMessageFunction(MessageFunction):
    """Message ``lhs op rhs`` between features of ``lhs_target`` and ``rhs_target``.

    Parameters
    ----------
    binary_op : str
        One of ``'add'``, ``'sub'``, ``'mul'``, ``'div'``, ``'dot'``.
    lhs_target, rhs_target : str
        ``'u'``, ``'v'`` or ``'e'`` (different from each other).
    lhs_field, rhs_field, out_field : str
        Feature names of the operands and of the message.
    """

    def __init__(self, binary_op, lhs_target, rhs_target, lhs_field, rhs_field, out_field):
        self.binary_op = binary_op
        self.lhs_target = lhs_target
        self.rhs_target = rhs_target
        self.lhs_field = lhs_field
        self.rhs_field = rhs_field
        self.out_field = out_field
        self.name = f"{lhs_target}_{binary_op}_{rhs_target}"

    def __repr__(self):
        return f"fn.{self.name}({self.lhs_field!r}, {self.rhs_field!r}, {self.out_field!r})"


class CopyMessageFunction(MessageFunction):
    """Message that copies the feature ``in_field`` of ``target`` (``'u'``, ``'v'`` or ``'e'``)."""

    def __init__(self, target, in_field, out_field):
        self.target = target
        self.in_field = in_field
        self.out_field = out_field
        self.name = f"copy_{target}"

    def __repr__(self):
        return f"fn.{self.name}({self.in_field!r}, {self.out_field!r})"


class ReduceFunction(BuiltinFunction):
    """Reduce the messages ``msg_field`` of each destination node into ``out_field``.

    ``reduce_op`` is ``'sum'``, ``'max'``, ``'min'`` or ``'mean'``. Nodes without
    in-edges get 0. Half-precision messages are accumulated in fp32.
    """

    def __init__(self, reduce_op, msg_field, out_field):
        self.reduce_op = reduce_op
        self.msg_field = msg_field
        self.out_field = out_field
        self.name = reduce_op

    def __repr__(self):
        return f"fn.{self.reduce_op}({self.msg_field!r}, {self.out_field!r})"


def _check_fields(name, *fields):
    from .base import DGLTypeError
    for f in fields:
        if not isinstance(f, str):
            raise DGLTypeError(f"fn.{name} expects feature names as str, got {type(f).__name__} {f!r}")


def copy_u(u, out):
    """Message function copying src node feature ``u`` into message ``out``.

    .. math:: m_{e} = h^{u}_{src(e)}
    """
    _check_fields("copy_u", u, out)
    return CopyMessageFunction("u", u, out)


def copy_e(e, out):
    """Message function copying edge feature ``e`` into message ``out``.

    .. math:: m_{e} = h^{e}_{e}
    """
    _check_fields("copy_e", e, out)
    return CopyMessageFunction("e", e, out)


def copy_v(v, out):
    """Message function copying dst node feature ``v`` into message ``out``."""
    _check_fields("copy_v", v, out)
    return CopyMessageFunction("v", v, out)


def copy_src(src, out):
    """Alias of :func:`copy_u` (DGL's older name)."""
    return copy_u(src, out)


def copy_edge(edge, out):
    """Alias of :func:`copy_e` (DGL's older name)."""
    return copy_e(edge, out)


def sum(msg, out):  # noqa: A001 - DGL's public name
    """Reduce function: sum of incoming messages (fp32 accumulation for half inputs)."""
    _check_fields("sum", msg, out)
    return ReduceFunction("sum", msg, out)


def max(msg, out):  # noqa: A001 - DGL's public name
    """Reduce function: elementwise maximum of incoming messages (0 with no in-edges)."""
    _check_fields("max", msg, out)
    return ReduceFunction("max", msg, out)


def min(msg, out):  # noqa: A001 - DGL's public name
    """Reduce function: elementwise minimum of incoming messages (0 with no in-edges)."""
    _check_fields("min", msg, out)
    return ReduceFunction("min", msg, out)


def mean(msg, out):
    """Reduce function: mean of incoming messages, divided before the single rounding."""
    _check_fields("mean", msg, out)
    return ReduceFunction("mean", msg, out)


def u_add_v(lhs_field, rhs_field, out):
    """Message function: src node feature ``lhs_field`` + dst node feature ``rhs_field``, into ``out``."""
    _check_fields("u_add_v", lhs_field, rhs_field, out)
    return BinaryMessageFunction("add", "u", "v", lhs_field, rhs_field, out)


def u_sub_v(lhs_field, rhs_field, out):
    """Message function: src node feature ``lhs_field`` - dst node feature ``rhs_field``, into ``out``."""
    _check_fields("u_sub_v", lhs_field, rhs_field, out)
    return BinaryMessageFunction("sub", "u", "v", lhs_field, rhs_field, out)


def u_mul_v(lhs_field, rhs_field, out):
    """Message function: src node feature ``lhs_field`` * dst node feature ``rhs_field``, into ``out``."""
    _check_fields("u_mul_v", lhs_field, rhs_field, out)
    return BinaryMessageFunction("mul", "u", "v", lhs_field, rhs_field, out)


def u_div_v(lhs_field, rhs_field, out):
    """Message function: src node feature ``lhs_field`` / dst node feature ``rhs_field``, into ``out``."""
    _check_fields("u_div_v", lhs_field, rhs_field, out)
    return BinaryMessageFunction("div", "u", "v", lhs_field, rhs_field, out)


def u_dot_v(lhs_field, rhs_field, out):
    """Message function: last-dim dot product of
    src node feature ``lhs_field`` and dst node feature ``rhs_field``, into ``out``."""
    _check_fields("u_dot_v", lhs_field, rhs_field, out)
    return BinaryMessageFunction("dot", "u", "v", lhs_field, rhs_field, out)


def u_add_e(lhs_field, rhs_field, out):
    """Message function: src node feature ``lhs_field`` + edge feature ``rhs_field``, into ``out``."""
    _check_fields("u_add_e", lhs_field, rhs_field, out)
    return BinaryMessageFunction("add", "u", "e", lhs_field, rhs_field, out)


def u_sub_e(lhs_field, rhs_field, out):
    """Message function: src node feature ``lhs_field`` - edge feature ``rhs_field``, into ``out``."""
    _check_fields("u_sub_e", lhs_field, rhs_field, out)
    return BinaryMessageFunction("sub", "u", "e", lhs_field, rhs_field, out)


def u_mul_e(lhs_field, rhs_field, out):
    """Message function: src node feature ``lhs_field`` * edge feature ``rhs_field``, into ``out``."""
    _check_fields("u_mul_e", lhs_field, rhs_field, out)
    return BinaryMessageFunction("mul", "u", "e", lhs_field, rhs_field, out)


def u_div_e(lhs_field, rhs_field, out):
    """Message function: src node feature ``lhs_field`` / edge feature ``rhs_field``, into ``out``."""
    _check_fields("u_div_e", lhs_field, rhs_field, out)
    return BinaryMessageFunction("div", "u", "e", lhs_field, rhs_field, out)


def u_dot_e(lhs_field, rhs_field, out):
    """Message function: last-dim dot product of
    src node feature ``lhs_field`` and edge feature ``rhs_field``, into ``out``."""
    _check_fields("u_dot_e", lhs_field, rhs_field, out)
    return BinaryMessageFunction("dot", "u", "e", lhs_field, rhs_field, out)


def v_add_u(lhs_field, rhs_field, out):
    """Message function: dst node feature ``lhs_field`` + src node feature ``rhs_field``, into ``out``."""
    _check_fields("v_add_u", lhs_field, rhs_field, out)
    return BinaryMessageFunction("add", "v", "u", lhs_field, rhs_field, out)


def v_sub_u(lhs_field, rhs_field, out):
    """Message function: dst node feature ``lhs_field`` - src node feature ``rhs_field``, into ``out``."""
    _check_fields("v_sub_u", lhs_field, rhs_field, out)
    return BinaryMessageFunction("sub", "v", "u", lhs_field, rhs_field, out)


def v_mul_u(lhs_field, rhs_field, out):
    """Message function: dst node feature ``lhs_field`` * src node feature ``rhs_field``, into ``out``."""
    _check_fields("v_mul_u", lhs_field, rhs_field, out)
    return BinaryMessageFunction("mul", "v", "u", lhs_field, rhs_field, out)


def v_div_u(lhs_field, rhs_field, out):
    """Message function: dst node feature ``lhs_field`` / src node feature ``rhs_field``, into ``out``."""
    _check_fields("v_div_u", lhs_field, rhs_field, out)
    return BinaryMessageFunction("div", "v", "u", lhs_field, rhs_field, out)


def v_dot_u(lhs_field, rhs_field, out):
    """Message function: last-dim dot product of
    dst node feature ``lhs_field`` and src node feature ``rhs_field``, into ``out``."""
    _check_fields("v_dot_u", lhs_field, rhs_field, out)
    return BinaryMessageFunction("dot", "v", "u", lhs_field, rhs_field, out)


def v_add_e(lhs_field, rhs_field, out):
    """Message function: dst node feature ``lhs_field`` + edge feature ``rhs_field``, into ``out``."""
    _check_fields("v_add_e", lhs_field, rhs_field, out)
    return BinaryMessageFunction("add", "v", "e", lhs_field, rhs_field, out)


def v_sub_e(lhs_field, rhs_field, out):
    """Message function: dst node feature ``lhs_field`` - edge feature ``rhs_field``, into ``out``."""
    _check_fields("v_sub_e", lhs_field, rhs_field, out)
    return BinaryMessageFunction("sub", "v", "e", lhs_field, rhs_field, out)


def v_mul_e(lhs_field, rhs_field, out):
    """Message function: dst node feature ``lhs_field`` * edge feature ``rhs_field``, into ``out``."""
    _check_fields("v_mul_e", lhs_field, rhs_field, out)
    return BinaryMessageFunction("mul", "v", "e", lhs_field, rhs_field, out)


def v_div_e(lhs_field, rhs_field, out):
    """Message function: dst node feature ``lhs_field`` / edge feature ``rhs_field``, into ``out``."""
    _check_fields("v_div_e", lhs_field, rhs_field, out)
    return BinaryMessageFunction("div", "v", "e", lhs_field, rhs_field, out)


def v_dot_e(lhs_field, rhs_field, out):
    """Message function: last-dim dot product of
    dst node feature ``lhs_field`` and edge feature ``rhs_field``, into ``out``."""
    _check_fields("v_dot_e", lhs_field, rhs_field, out)
    return BinaryMessageFunction("dot", "v", "e", lhs_field, rhs_field, out)


def e_add_u(lhs_field, rhs_field, out):
    """Message function: edge feature ``lhs_field`` + src node feature ``rhs_field``, into ``out``."""
    _check_fields("e_add_u", lhs_field, rhs_field, out)
    return BinaryMessageFunction("add", "e", "u", lhs_field, rhs_field, out)


def e_sub_u(lhs_field, rhs_field, out):
    """Message function: edge feature ``lhs_field`` - src node feature ``rhs_field``, into ``out``."""
    _check_fields("e_sub_u", lhs_field, rhs_field, out)
    return BinaryMessageFunction("sub", "e", "u", lhs_field, rhs_field, out)


def e_mul_u(lhs_field, rhs_field, out):
    """Message function: edge feature ``lhs_field`` * src node feature ``rhs_field``, into ``out``."""
    _check_fields("e_mul_u", lhs_field, rhs_field, out)
    return BinaryMessageFunction("mul", "e", "u", lhs_field, rhs_field, out)


def e_div_u(lhs_field, rhs_field, out):
    """Message function: edge feature ``lhs_field`` / src node feature ``rhs_field``, into ``out``."""
    _check_fields("e_div_u", lhs_field, rhs_field, out)
    return BinaryMessageFunction("div", "e", "u", lhs_field, rhs_field, out)


def e_dot_u(lhs_field, rhs_field, out):
    """Message function: last-dim dot product of
    edge feature ``lhs_field`` and src node feature ``rhs_field``, into ``out``."""
    _check_fields("e_dot_u", lhs_field, rhs_field, out)
    return BinaryMessageFunction("dot", "e", "u", lhs_field, rhs_field, out)


def e_add_v(lhs_field, rhs_field, out):
    """Message function: edge feature ``lhs_field`` + dst node feature ``rhs_field``, into ``out``."""
    _check_fields("e_add_v", lhs_field, rhs_field, out)
    return BinaryMessageFunction("add", "e", "v", lhs_field, rhs_field, out)


def e_sub_v(lhs_field, rhs_field, out):
    """Message function: edge feature ``lhs_field`` - dst node feature ``rhs_field``, into ``out``."""
    _check_fields("e_sub_v", lhs_field, rhs_field, out)
    return BinaryMessageFunction("sub", "e", "v", lhs_field, rhs_field, out)


def e_mul_v(lhs_field, rhs_field, out):
    """Message function: edge feature ``lhs_field`` * dst node feature ``rhs_field``, into ``out``."""
    _check_fields("e_mul_v", lhs_field, rhs_field, out)
    return BinaryMessageFunction("mul", "e", "v", lhs_field, rhs_field, out)


def e_div_v(lhs_field, rhs_field, out):
    """Message function: edge feature ``lhs_field`` / dst node feature ``rhs_field``, into ``out``."""
    _check_fields("e_div_v", lhs_field, rhs_field, out)
    return BinaryMessageFunction("div", "e", "v", lhs_field, rhs_field, out)


def e_dot_v(lhs_field, rhs_field, out):
    """Message function: last-dim dot product of
    edge feature ``lhs_field`` and dst node feature ``rhs_field``, into ``out``."""
    _check_fields("e_dot_v", lhs_field, rhs_field, out)
    return BinaryMessageFunction("dot", "e", "v", lhs_field, rhs_field, out)
