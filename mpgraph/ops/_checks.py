"""Input validation shared by the public ops (errors say what was expected, what came, and the fix)."""

import torch

from ..base import DGLError, DGLTypeError
from ..precision import check_float_feature

__all__ = ["check_choice", "check_feature", "rows_of", "ROW_NAMES", "reversed_index", "in_degrees_f32"]

#: Human name of the rows of each target.
ROW_NAMES = {"u": "source nodes", "v": "destination nodes", "e": "edges"}


def rows_of(index, target):
    """Number of rows an operand with ``target`` (``'u'``, ``'v'``, ``'e'``) must have."""
    if target == "u":
        return index.num_src
    if target == "v":
        return index.num_dst
    return index.num_edges


def check_choice(what, value, choices, func):
    """Raise :class:`DGLError` unless ``value`` is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise DGLError(f"{func}: unknown {what} {value!r}; expected one of {', '.join(map(repr, choices))}")


def check_feature(name, t, num_rows, row_name, device, func):
    """Validate a feature tensor: float dtype, at least 1-D, ``num_rows`` rows, on ``device``."""
    check_float_feature(name, t)
    if t.dim() == 0:
        raise DGLError(f"{func}: {name} must have a row dimension, got a 0-d tensor; "
                       f"give it shape ({num_rows}, ...)")
    if t.shape[0] != num_rows:
        raise DGLError(f"{func}: {name} has {t.shape[0]} rows but the graph has {num_rows} {row_name}; "
                       f"expected shape ({num_rows}, ...), got {tuple(t.shape)}")
    if t.device != device:
        raise DGLError(f"{func}: {name} is on {t.device} but the graph is on {device}; "
                       f"move one of them, e.g. {name}.to({str(device)!r}) or g.to({str(t.device)!r})")


def check_index_tensor(name, t, device, func):
    """Validate a 1-D integer tensor of ids (returned as int64 on ``device``)."""
    if not isinstance(t, torch.Tensor):
        try:
            t = torch.as_tensor(t, device=device)
        except (TypeError, ValueError, RuntimeError) as err:
            raise DGLTypeError(f"{func}: {name} must be a 1-D integer tensor, got {type(t).__name__}") from err
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
        raise DGLTypeError(f"{func}: {name} must be an integer tensor, got {t.dtype}; cast it with .long()")
    if t.dim() != 1:
        raise DGLError(f"{func}: {name} must be 1-D, got shape {tuple(t.shape)}")
    if t.device != device:
        raise DGLError(f"{func}: {name} is on {t.device} but expected {device}; move it with .to({str(device)!r})")
    return t.to(torch.int64)


def reversed_index(index):
    """``index.reverse()``, cached on ``index``, with its CSR built first so the reverse shares it."""
    def build():
        index.csr()
        index.csc()
        return index.reverse()
    return index.cached("ops.reverse", build)


def in_degrees_f32(index):
    """In-degrees as float32, clamped to at least 1 (the ``mean`` normaliser), cached."""
    return index.cached("ops.in_deg_f32", lambda: index.in_degrees().clamp(min=1).to(torch.float32))


def inverse_in_degrees(index, dtype):
    """``1 / in-degree`` (in-degrees clamped to at least 1) in ``dtype`` (float32 or float64): the ``mean``
    normaliser as a factor, for kernels that scale rows in their accumulator; cached."""
    return index.cached(f"ops.inv_in_deg.{dtype}", lambda: 1.0 / in_degrees_f32(index).to(dtype))
