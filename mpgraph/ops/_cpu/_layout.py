"""Feature-shape broadcasting and argument checks for the CPU kernel wrappers (pure Python).

Two per-row feature shapes ``Fl`` and ``Fr`` broadcast like numpy. The kernels
walk the flat output feature index ``j`` in one of four layouts:

``SAME``       ``Fl == Fr == Fo``: elementwise.
``RHS_BLOCK``  ``Fl == Fo`` and ``Fr`` is a prefix of ``Fo`` padded with ones, e.g.
               ``(H, D)`` with ``(H, 1)`` (GAT) or ``(D,)`` with ``(1,)``/``()`` (a scalar):
               ``rhs`` element ``j // B`` for block size ``B``.
``LHS_BLOCK``  the mirror image.
``GENERAL``    anything else: offset tables ``lhs_off[j]``, ``rhs_off[j]`` (slower).
"""

import torch

from ._core import FLOAT_DTYPES

SAME, RHS_BLOCK, LHS_BLOCK, GENERAL = 0, 1, 2, 3


def _prod(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _block_size(small, full):
    """B when ``small`` (padded to ``full``'s rank) is ``full[:p] + (1,) * rest``; else None."""
    small = (1,) * (len(full) - len(small)) + tuple(small)
    p = 0
    while p < len(full) and small[p] == full[p]:
        p += 1
    if all(s == 1 for s in small[p:]):
        return _prod(full[p:])
    return None


def broadcast_layout(fl, fr):
    """``(out_shape, layout, B, lhs_off, rhs_off)`` for feature shapes ``fl`` and ``fr``.

    Raises ``ValueError`` when the shapes do not broadcast.
    """
    try:
        fo = tuple(torch.broadcast_shapes(tuple(fl), tuple(fr)))
    except RuntimeError as err:
        raise ValueError(f"expected broadcastable feature shapes, got {tuple(fl)} and {tuple(fr)}") from err
    if tuple(fl) == fo and tuple(fr) == fo:
        return fo, SAME, 1, None, None
    if tuple(fl) == fo:
        B = _block_size(fr, fo)
        if B is not None:
            return fo, RHS_BLOCK, B, None, None
    if tuple(fr) == fo:
        B = _block_size(fl, fo)
        if B is not None:
            return fo, LHS_BLOCK, B, None, None
    return fo, GENERAL, 1, _offsets(fl, fo), _offsets(fr, fo)


def _offsets(f, fo):
    """Flat index into an operand of feature shape ``f`` for every flat output index of ``fo``."""
    padded = (1,) * (len(fo) - len(f)) + tuple(f)
    return torch.arange(_prod(f), dtype=torch.int64).reshape(padded).expand(fo).reshape(-1).contiguous()


def check_index(name, t):
    """Raise unless ``t`` is a 1-D int64 CPU tensor."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"expected {name} to be a torch.Tensor, got {type(t).__name__}")
    if t.dtype != torch.int64 or t.device.type != "cpu" or t.dim() != 1:
        raise TypeError(f"expected {name} to be a 1-D int64 CPU tensor, got {t.dim()}-D {t.dtype} on {t.device}; "
                        "use Index.csc()/csr(), which are int64")


def check_float(name, t, min_dim=1):
    """Raise unless ``t`` is a CPU tensor of a supported float dtype with at least ``min_dim`` dims."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"expected {name} to be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in FLOAT_DTYPES or t.device.type != "cpu":
        raise TypeError(f"expected {name} on the CPU in one of {FLOAT_DTYPES}, got {t.dtype} on {t.device}")
    if t.dim() < min_dim:
        raise ValueError(f"expected {name} with at least {min_dim} dimension(s), got shape {tuple(t.shape)}")


def leading_offsets(ll, lr):
    """``(lead, lhs_off, rhs_off)`` for ``dot``: the broadcast of the leading feature shapes
    ``ll`` and ``lr`` (all dims but the reduced last one) and, for each flat index of
    ``lead``, the flat leading index into each operand."""
    try:
        lead = tuple(torch.broadcast_shapes(tuple(ll), tuple(lr)))
    except RuntimeError as err:
        raise ValueError(f"expected broadcastable leading feature shapes, got {tuple(ll)} and {tuple(lr)}") from err
    return lead, _offsets(ll, lead), _offsets(lr, lead)


def check_out_dtype(out_dtype):
    """Raise unless ``out_dtype`` is None or a supported float dtype."""
    if out_dtype is not None and out_dtype not in FLOAT_DTYPES:
        raise TypeError(f"expected out_dtype in {FLOAT_DTYPES} or None, got {out_dtype}")


def needs_fp64_pass(out_dtype, *operands):
    """True when an fp64 operand meets a narrower ``out_dtype``: the kernels accumulate in fp64 only into
    fp64 output, so the wrapper computes in fp64 and rounds the result once to ``out_dtype``."""
    return (out_dtype is not None and out_dtype != torch.float64
            and any(t is not None and t.dtype == torch.float64 for t in operands))
