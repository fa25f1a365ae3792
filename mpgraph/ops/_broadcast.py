"""Feature-shape broadcasting of binary message ops, and its flat (2-D) layout for kernels.

Operands of gSpMM/gSDDMM have a row dimension (nodes or edges) followed by
feature dimensions. Feature shapes broadcast with numpy rules: the shorter one
gets leading 1s (as DGL pads ``(E,)`` to ``(E, 1)``), then each dimension must be
equal or 1. ``dot`` contracts the last dimension, which must match, and keeps it
as size 1: ``(H, D) . (H, D) -> (H, 1)``.

Kernels see every operand as a contiguous 2-D tensor ``(rows, len * K)`` and the
output as ``(rows, F)``; :class:`Bcast` holds the sizes and, when an operand is
broadcast, an offset table mapping each output feature position to the operand
position it reads (DGL's ``BcastOff``).
"""

import math

import torch

from ..base import DGLError

__all__ = ["Bcast", "infer_bcast", "sum_to_shape"]


class Bcast:
    """Broadcast layout of one binary op.

    Attributes
    ----------
    op : str
        The binary op (``'dot'`` contracts the last dimension).
    lhs_shape, rhs_shape : tuple of int
        Operand feature shapes padded with leading 1s to the output rank. For
        ``dot`` they include the contracted dimension ``D`` last. A missing
        operand (``copy_lhs``/``copy_rhs``) has the output's shape.
    out_shape : tuple of int
        Output feature shape (for ``dot`` it ends with 1).
    F : int
        ``prod(out_shape)``: output features per row.
    L, R : int
        Features per row of lhs / rhs, not counting the contracted dimension.
    K : int
        Size of the contracted dimension (``D`` for ``dot``, else 1). Operand
        rows have ``L * K`` and ``R * K`` elements.
    use_bcast : bool
        False when both operands have the output's layout (offsets are identity).
    """

    __slots__ = ("op", "lhs_shape", "rhs_shape", "out_shape", "F", "L", "R", "K", "device",
                 "_lhs_off", "_rhs_off")

    def __init__(self, op, lhs_shape, rhs_shape, out_shape, device):
        self.op = op
        self.lhs_shape = lhs_shape
        self.rhs_shape = rhs_shape
        self.out_shape = out_shape
        self.device = device
        if op == "dot":
            self.K = lhs_shape[-1]
            self.F, self.L, self.R = math.prod(out_shape[:-1]), math.prod(lhs_shape[:-1]), math.prod(rhs_shape[:-1])
        else:
            self.K = 1
            self.F, self.L, self.R = math.prod(out_shape), math.prod(lhs_shape), math.prod(rhs_shape)
        self._lhs_off = None
        self._rhs_off = None

    @property
    def use_bcast(self):
        return self.L != self.F or self.R != self.F

    def _offsets(self, shape, n):
        if n == self.F:
            return None
        if self.op == "dot":
            shape, out = shape[:-1], self.out_shape[:-1]
        else:
            out = self.out_shape
        return torch.arange(n, dtype=torch.int64, device=self.device).reshape(shape).expand(out).reshape(-1)

    @property
    def lhs_off(self):
        """``(F,)`` int64: lhs feature position read by each output position; None if identity."""
        if self._lhs_off is None and self.L != self.F:
            self._lhs_off = self._offsets(self.lhs_shape, self.L)
        return self._lhs_off

    @property
    def rhs_off(self):
        """``(F,)`` int64: rhs feature position read by each output position; None if identity."""
        if self._rhs_off is None and self.R != self.F:
            self._rhs_off = self._offsets(self.rhs_shape, self.R)
        return self._rhs_off

    def __repr__(self):
        return (f"Bcast(op={self.op!r}, lhs={self.lhs_shape}, rhs={self.rhs_shape}, out={self.out_shape}, "
                f"F={self.F}, L={self.L}, R={self.R}, K={self.K})")


def _pad(shape, ndim):
    return (1,) * (ndim - len(shape)) + tuple(shape)


def infer_bcast(op, lhs_shape, rhs_shape, device, lhs_name="lhs_data", rhs_name="rhs_data"):
    """Return the :class:`Bcast` of ``op`` on feature shapes ``lhs_shape``, ``rhs_shape``.

    Either shape may be None (``copy_lhs``/``copy_rhs``): the other one is the output shape.

    Raises
    ------
    DGLError
        If the shapes do not broadcast, or ``dot`` operands differ in their last dimension.
    """
    lhs_shape = None if lhs_shape is None else tuple(lhs_shape)
    rhs_shape = None if rhs_shape is None else tuple(rhs_shape)
    if lhs_shape is None or rhs_shape is None:
        shape = lhs_shape if rhs_shape is None else rhs_shape
        return Bcast(op, shape, shape, shape, device)
    if op == "dot":
        if len(lhs_shape) == 0 or len(rhs_shape) == 0 or lhs_shape[-1] != rhs_shape[-1]:
            raise DGLError(
                f"'dot' contracts the last feature dimension, which must match: {lhs_name} has feature "
                f"shape {lhs_shape} and {rhs_name} has {rhs_shape}; give both the same last dimension D")
        body = _broadcast(lhs_shape[:-1], rhs_shape[:-1], op, lhs_name, rhs_name, lhs_shape, rhs_shape)
        out = body + (1,)
        ndim = len(out)
        return Bcast(op, _pad(lhs_shape, ndim), _pad(rhs_shape, ndim), out, device)
    out = _broadcast(lhs_shape, rhs_shape, op, lhs_name, rhs_name, lhs_shape, rhs_shape)
    ndim = len(out)
    return Bcast(op, _pad(lhs_shape, ndim), _pad(rhs_shape, ndim), out, device)


def _broadcast(a, b, op, lhs_name, rhs_name, lhs_full, rhs_full):
    ndim = max(len(a), len(b))
    a, b = _pad(a, ndim), _pad(b, ndim)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise DGLError(
                f"feature shapes do not broadcast for op '{op}': {lhs_name} has feature shape {lhs_full} and "
                f"{rhs_name} has {rhs_full} (shapes after the first, row dimension must be equal or 1 "
                "dimension by dimension, with missing leading dimensions taken as 1); reshape one operand, "
                "e.g. edge weights (E,) -> (E, 1)")
    return tuple(out)


def sum_to_shape(t, shape):
    """Sum ``t: (rows, *S)`` over the dimensions where ``shape`` (same rank as S) has 1 and S does not."""
    dims = [i + 1 for i, (s, n) in enumerate(zip(shape, t.shape[1:])) if s == 1 and n != 1]
    if dims:
        t = t.sum(dim=dims, keepdim=True)
    return t
