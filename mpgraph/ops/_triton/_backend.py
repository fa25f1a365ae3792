"""The ``triton`` backend of :mod:`mpgraph.ops._dispatch`: kernel adapters and ``supports`` predicates.

The adapters translate the dispatch's kernel contract (an ``Index``, contiguous 2-D operands
``(rows, L * K)``/``(rows, R * K)`` and a :class:`~mpgraph.ops._broadcast.Bcast`) into the launchers'
N-D calls: an operand ``(rows, L * K)`` is viewed as ``(rows, *bcast.lhs_shape)`` (likewise rhs), the
launcher broadcasts the feature shapes, and its ``(rows, *out_shape)`` result is viewed back as
``(rows, F)``. Row reductions (gSpMM, edge softmax) run over ``index.csc()`` with a
:class:`~._common.RowSchedule` cached on the index (``index.cached(("triton.schedule", split), ...)``);
the backward pass runs them on ``index.reverse()``, whose ``csc()`` is the forward ``csr()``.

``supports`` accepts a call when all hold (cheap: no device sync, and Triton is imported only the first
time a call could run here):

* the operands are on a CUDA device, or on the CPU with ``MPGRAPH_TRITON_ON_CPU=1`` set and the
  kernels defined under Triton's interpreter (``TRITON_INTERPRET=1`` when :mod:`._common` was first
  imported). The opt-in keeps the interpreter (slow, for tests) from taking over ordinary CPU calls
  in a process that merely has ``TRITON_INTERPRET=1`` set: priority 30 beats the Numba backend;
* Triton imports;
* operand and output dtypes are float16/bfloat16/float32/float64;
* the broadcast pattern fits two stride groups (:func:`._layout.fits_groups`; GAT's ``(N, H, D)`` with
  ``(E, H, 1)`` does) and the feature blocks fit the grid's second axis (65535 programs).
"""

import contextlib
import os

import torch

from .._reference import composed_mul_backward, composed_mul_backward_supports
from ._layout import fits_groups

__all__ = ["KERNELS", "CPU_OPT_IN", "SPLIT", "cached_schedule", "unavailable_reason", "spmm", "sddmm", "edge_softmax",
           "edge_softmax_backward", "spmm_supports", "sddmm_supports", "edge_softmax_supports",
           "edge_softmax_backward_supports", "scatter_winners", "scatter_winners_supports", "pick_winners",
           "pick_winners_supports", "div_edge_grad", "div_edge_grad_supports", "spmm_mul_backward",
           "spmm_mul_backward_supports"]

#: Environment variable that lets the backend take CPU tensors (it then needs ``TRITON_INTERPRET=1``).
CPU_OPT_IN = "MPGRAPH_TRITON_ON_CPU"
#: Edges per chunk of the row schedules the backend builds (rows longer than this use the two-pass path).
SPLIT = 256

# dispatch op -> launcher message of gspmm
_SPMM_MSG = {"copy_lhs": "copy_u", "copy_rhs": "copy_e", "add": "u_add_e", "sub": "u_sub_e", "mul": "u_mul_e",
             "div": "u_div_e"}
_SPMM_REDUCE = ("sum", "mean", "max", "min")
_SDDMM_OPS = ("add", "sub", "mul", "div", "dot", "copy_lhs", "copy_rhs")
_TARGETS = ("u", "v", "e")
# Grid limit of the second axis and the launchers' largest feature blocks on the GPU (spmm/sddmm BLOCK_F,
# edge softmax BLOCK_H; sddmm dot puts one program per output feature on that axis).
_MAX_GRID_Y = 65535
_BLOCK_F = 64
_BLOCK_H = 32

_state = {}


def _kernels_module():
    """:mod:`._common` (imports Triton), or ``None`` when that fails; tried once."""
    if "common" not in _state:
        try:
            from . import _common as module
        except Exception as err:  # any failure to import triton means "not this backend"
            module = None
            _state["reason"] = f"Triton could not be imported ({type(err).__name__}: {err})"
        else:
            _state["reason"] = None
        _state["common"] = module
    return _state["common"]


def unavailable_reason():
    """Why the backend declined a CUDA call because Triton failed to import (None if it imported or was
    not tried yet). The dispatch lists the backend as loaded either way: ``supports`` then says no."""
    return _state.get("reason")


def _device_ok(device):
    if device.type == "cuda":
        return _kernels_module() is not None
    if device.type == "cpu" and os.environ.get(CPU_OPT_IN) == "1":
        common = _kernels_module()
        return common is not None and common.INTERPRET
    return False


_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _dtypes_ok(*dtypes):
    return all(d in _FLOATS for d in dtypes)


def _feature_blocks_ok(F, block):
    return (F + block - 1) // block <= _MAX_GRID_Y


def cached_schedule(index, indptr):
    """The :class:`~._common.RowSchedule` of ``indptr = index.csc()[0]``, built once per index."""
    from ._common import row_schedule

    return index.cached(("triton.schedule", SPLIT), lambda: row_schedule(indptr, SPLIT))


def _on(device):
    """Make ``device`` current while launching (Triton launches on the current CUDA device)."""
    return torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()


# ----------------------------------------------------------------------------------------------
# supports
# ----------------------------------------------------------------------------------------------
def spmm_supports(index, op, reduce, lhs, rhs, bcast, out_dtype):
    """Whether :func:`spmm` runs this call (see the module docstring)."""
    x = lhs if lhs is not None else rhs
    if op not in _SPMM_MSG or reduce not in _SPMM_REDUCE or x is None:
        return False
    if not _dtypes_ok(x.dtype, (rhs if rhs is not None else x).dtype, out_dtype) or not _device_ok(x.device):
        return False
    shapes = [s for s, t in ((bcast.lhs_shape, lhs), (bcast.rhs_shape, rhs)) if t is not None]
    return _feature_blocks_ok(bcast.F, _BLOCK_F) and fits_groups(shapes, bcast.out_shape)


def sddmm_supports(index, op, lhs, rhs, lhs_target, rhs_target, bcast, out_dtype):
    """Whether :func:`sddmm` runs this call (see the module docstring)."""
    x = lhs if lhs is not None else rhs
    if op not in _SDDMM_OPS or lhs_target not in _TARGETS or rhs_target not in _TARGETS or x is None:
        return False
    if not _dtypes_ok(x.dtype, (rhs if rhs is not None else x).dtype, out_dtype) or not _device_ok(x.device):
        return False
    shapes = [s for s, t in ((bcast.lhs_shape, lhs), (bcast.rhs_shape, rhs)) if t is not None]
    if op == "dot":
        return bcast.F <= _MAX_GRID_Y and fits_groups(shapes, bcast.out_shape, keep_last=True)
    return _feature_blocks_ok(bcast.F, _BLOCK_F) and fits_groups(shapes, bcast.out_shape)


def edge_softmax_supports(index, logits, out_dtype):
    """Whether :func:`edge_softmax` runs this call (see the module docstring)."""
    return (_dtypes_ok(logits.dtype, out_dtype) and _device_ok(logits.device)
            and _feature_blocks_ok(logits.shape[1], _BLOCK_H))


# ----------------------------------------------------------------------------------------------
# kernels (the dispatch's contract; see mpgraph.ops._dispatch)
# ----------------------------------------------------------------------------------------------
def _nd(x, shape):
    """Contiguous ``x: (rows, prod(shape))`` viewed as ``(rows, *shape)``; ``None`` stays ``None``."""
    return None if x is None else x.reshape((x.shape[0],) + tuple(shape))


def spmm(index, op, reduce, lhs, rhs, bcast, out_dtype, need_arg=True):
    """gSpMM over ``index.csc()``: ``(out: (N_dst, F), arg_u, arg_e)``; max/min skip the winners without
    ``need_arg``."""
    from .spmm import gspmm

    indptr, src, eid = index.csc()
    device = (lhs if lhs is not None else rhs).device
    with _on(device):
        out, arg_u, arg_e = gspmm(_SPMM_MSG[op], reduce, _nd(lhs, bcast.lhs_shape), _nd(rhs, bcast.rhs_shape),
                                  indptr, src, eid, schedule=cached_schedule(index, indptr), out_dtype=out_dtype,
                                  need_arg=need_arg)
    N_dst, F = index.num_dst, bcast.F
    arg_u = None if arg_u is None else arg_u.view(N_dst, F)
    arg_e = None if arg_e is None else arg_e.view(N_dst, F)
    return out.view(N_dst, F), arg_u, arg_e


def sddmm(index, op, lhs, rhs, lhs_target, rhs_target, bcast, out_dtype):
    """gSDDMM over the COO edges (edge-ID order): ``out: (E, F)``."""
    from .sddmm import gsddmm

    device = (lhs if lhs is not None else rhs).device
    with _on(device):
        out = gsddmm(op, _nd(lhs, bcast.lhs_shape), _nd(rhs, bcast.rhs_shape), index.src64, index.dst64,
                     lhs_target, rhs_target, out_dtype=out_dtype)
    return out.view(index.num_edges, bcast.F)


def edge_softmax(index, logits, out_dtype):
    """Softmax of ``logits: (E, F)`` over each destination's in-edges (``index.csc()``): ``(E, F)``."""
    from .edge_softmax import edge_softmax_forward

    indptr, _, eid = index.csc()
    with _on(logits.device):
        return edge_softmax_forward(logits, indptr, eid, schedule=cached_schedule(index, indptr),
                                    out_dtype=out_dtype)


def edge_softmax_backward_supports(index, out, grad_out, out_dtype):
    """Whether :func:`edge_softmax_backward` runs this call (see the module docstring)."""
    return (_dtypes_ok(out.dtype, grad_out.dtype, out_dtype) and _device_ok(out.device)
            and _feature_blocks_ok(out.shape[1], _BLOCK_H))


def edge_softmax_backward(index, out, grad_out, out_dtype):
    """Edge softmax gradient over ``index.csc()`` groups: ``(E, F)`` in ``out_dtype``."""
    from .edge_softmax import edge_softmax_backward as launch_backward

    indptr, _, eid = index.csc()
    with _on(out.device):
        return launch_backward(out, grad_out, indptr, eid, schedule=cached_schedule(index, indptr),
                               out_dtype=out_dtype)


def scatter_winners_supports(winner, coef, pos, rows, cols, disjoint_rows=False):
    """Whether :func:`scatter_winners` runs this call (the backend's devices)."""
    return _device_ok(coef.device)


def scatter_winners(winner, coef, pos, rows, cols, disjoint_rows=False):
    """Max/min backward scatter: ``index_add_`` (atomic adds on the GPU), which needs no Triton kernel."""
    from .._reference import scatter_winners as index_add_scatter

    return index_add_scatter(winner, coef, pos, rows, cols)


#: the fused ``u_mul_e`` sum backward as this backend's gSpMM then gSDDMM (no fused Triton kernel yet)
spmm_mul_backward = composed_mul_backward(spmm, sddmm)
spmm_mul_backward_supports = composed_mul_backward_supports(spmm_supports, sddmm_supports)

def pick_winners_supports(winner, src, pos, cols):
    """Whether :func:`pick_winners` runs this call (the backend's devices)."""
    return _device_ok(src.device)


def pick_winners(winner, src, pos, cols):
    """The other operand of a max/min product at the winners: torch indexing (a gather), no Triton kernel."""
    from .._reference import pick_winners as indexed

    return indexed(winner, src, pos, cols)


def div_edge_grad_supports(index, lhs, grad, rhs, out_dtype):
    """Whether :func:`div_edge_grad` runs this call (the backend's devices)."""
    return _device_ok(rhs.device)


def div_edge_grad(index, lhs, grad, rhs, out_dtype):
    """The ``u_div_e`` edge gradient: torch indexing and elementwise passes, no Triton kernel yet."""
    from .._reference import div_edge_grad as indexed

    return indexed(index, lhs, grad, rhs, out_dtype)


KERNELS = {
    "spmm": (spmm, spmm_supports),
    "sddmm": (sddmm, sddmm_supports),
    "spmm_mul_backward": (spmm_mul_backward, spmm_mul_backward_supports),
    "edge_softmax": (edge_softmax, edge_softmax_supports),
    "edge_softmax_backward": (edge_softmax_backward, edge_softmax_backward_supports),
    "scatter_winners": (scatter_winners, scatter_winners_supports),
    "pick_winners": (pick_winners, pick_winners_supports),
    "div_edge_grad": (div_edge_grad, div_edge_grad_supports),
}
