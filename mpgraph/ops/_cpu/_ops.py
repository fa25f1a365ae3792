"""Compile-time dispatch of binary operators and reductions inside the kernels.

Each kernel is a closure over its operator and reduction names (see
``spmm_kernel``), which Numba types as string literals; the overloads below
(``prefer_literal=True``) resolve on those literals at compile time, so every
``binop``/``reduce_init``/``better`` call becomes straight-line code: one
specialisation per (op, reduce, dtypes), no runtime dispatch in the hot loops.
"""

import numpy as np
from numba import types
from numba.extending import overload

#: binary message operators of gSpMM / gSDDMM ("copy_lhs"/"copy_rhs" take one operand)
BINARY_OPS = ("add", "sub", "mul", "div")
SPMM_OPS = ("copy_lhs", "copy_rhs") + BINARY_OPS
SDDMM_OPS = BINARY_OPS + ("dot", "copy_lhs", "copy_rhs")
REDUCES = ("sum", "mean", "max", "min")


def literal_value(x):
    """The value of a string-literal Numba type, else None."""
    return x.literal_value if isinstance(x, types.StringLiteral) else None


def binop(op, a, b):
    """``a op b`` for a literal operator name."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


# numpy's error model: x / 0 is inf or nan as in torch (Numba's default raises ZeroDivisionError from
# inside the kernel), and the division needs no zero test, so it vectorises
@overload(binop, prefer_literal=True, jit_options={"error_model": "numpy"})
def _binop_impl(op, a, b):
    name = literal_value(op)
    if name == "add":
        return lambda op, a, b: a + b
    if name == "sub":
        return lambda op, a, b: a - b
    if name in ("mul", "dot"):
        return lambda op, a, b: a * b
    if name == "div":
        return lambda op, a, b: a / b
    if name == "copy_lhs":
        return lambda op, a, b: a
    if name == "copy_rhs":
        return lambda op, a, b: b
    return None


def uses_lhs(op):
    """Compile-time constant: does ``op`` read its left operand?"""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


def uses_rhs(op):
    """Compile-time constant: does ``op`` read its right operand?"""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(uses_lhs, prefer_literal=True)
def _uses_lhs_impl(op):
    if literal_value(op) is None:
        return None
    if literal_value(op) == "copy_rhs":
        return lambda op: False
    return lambda op: True


@overload(uses_rhs, prefer_literal=True)
def _uses_rhs_impl(op):
    if literal_value(op) is None:
        return None
    if literal_value(op) == "copy_lhs":
        return lambda op: False
    return lambda op: True


def reduce_init(reduce, zero):
    """Identity of a reduction in the accumulator type of ``zero``."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(reduce_init, prefer_literal=True)
def _reduce_init_impl(reduce, zero):
    name = literal_value(reduce)
    if name in ("sum", "mean"):  # -0.0 is the exact additive identity: -0.0 + -0.0 stays -0.0
        return lambda reduce, zero: -zero
    if name == "max":
        return lambda reduce, zero: zero - np.inf
    if name == "min":
        return lambda reduce, zero: zero + np.inf
    return None


def is_arg_reduce(reduce):
    """Compile-time constant: does the reduction record arg indices (max/min)?"""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(is_arg_reduce, prefer_literal=True)
def _is_arg_reduce_impl(reduce):
    if literal_value(reduce) is None:
        return None
    if literal_value(reduce) in ("max", "min"):
        return lambda reduce: True
    return lambda reduce: False


def is_arg_literal(reduce):
    """For overload implementations: is the literal reduction type max/min?"""
    return literal_value(reduce) in ("max", "min")


def better(reduce, new, old):
    """For max/min: does ``new`` replace ``old`` (strictly; NaN never wins)?"""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(better, prefer_literal=True)
def _better_impl(reduce, new, old):
    name = literal_value(reduce)
    if name == "max":
        return lambda reduce, new, old: new > old
    if name == "min":
        return lambda reduce, new, old: new < old
    if name in ("sum", "mean"):  # typed but never taken (callers test is_arg_reduce first)
        return lambda reduce, new, old: False
    return None


def is_mean(reduce):
    """Compile-time constant: is the reduction a mean?"""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(is_mean, prefer_literal=True)
def _is_mean_impl(reduce):
    if literal_value(reduce) is None:
        return None
    if literal_value(reduce) == "mean":
        return lambda reduce: True
    return lambda reduce: False


def is_dot(op):
    """Compile-time constant: is the operator ``dot``?"""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(is_dot, prefer_literal=True)
def _is_dot_impl(op):
    if literal_value(op) is None:
        return None
    if literal_value(op) == "dot":
        return lambda op: True
    return lambda op: False


def divides_square(post):
    """Compile-time constant: does the gSDDMM epilogue ``post`` divide by an edge operand squared?"""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(divides_square, prefer_literal=True)
def _divides_square_impl(post):
    if literal_value(post) is None:
        return None
    if literal_value(post) == "neg_div_sq":
        return lambda post: True
    return lambda post: False
