"""Fast CPU kernels for message passing (Numba), on raw tensors.

These are the backends below :mod:`mpgraph.ops._dispatch`: plain functions that
take torch tensors (int64 structure from :class:`mpgraph._index.Index` plus float
features) and return new tensors. They know nothing of graphs or autograd.

Raw API (all structure tensors int64, 1-D, CPU; ``R`` rows, ``E`` edge slots)::

    gspmm(op, reduce, indptr, indices, eid, lhs, rhs, *, out_dtype=None, need_arg=True, prefetch_distance=None)
        op in copy_lhs/copy_rhs/add/sub/mul/div, reduce in sum/mean/max/min
        indptr (R+1,), indices (E,) (None for copy_rhs), eid (E,) or None (= identity)
        lhs (N_src, *Fl) or None, rhs (E, *Fr) or None; Fl, Fr broadcast like numpy
        -> out (R, *broadcast(Fl, Fr)) in out_dtype (default: the promoted operand dtype),
           arg_lhs, arg_rhs: int32/int64 of out's shape (max/min with need_arg; -1 on empty rows) or None;
           need_arg='slots' (copy_lhs): arg_lhs as uint8/int16 offsets of the winning edge in its row
    gsddmm(op, indptr, indices, eid, lhs, rhs, lhs_target='u', rhs_target='v', *, out_dtype=None,
           prefetch_distance=None)
        op in add/sub/mul/div/dot/copy_lhs/copy_rhs; targets in u/v/e; CSC structure (rows = v)
        -> out (E, *Fo) in edge-id order; dot: (E, *lead, 1)
    edge_softmax_forward(indptr, eid, logits, *, out_dtype=None)             logits (E, *H) -> (E, *H)
    edge_softmax_backward(indptr, eid, out, grad_out, *, out_dtype=None)   -> grad_logits (E, *H)
    segment_reduce(reduce, x, offsets)                   x (L, *F), offsets (S+1,) -> out (S, *F), arg or None

With ``Index.csc()`` (in-edges grouped by destination) ``gspmm`` is forward message
passing and ``gsddmm``/edge softmax work per destination; with ``Index.csr()``
``gspmm`` reduces over out-edges (the backward with respect to ``u``). Pass
``eid=None`` when edge data is already in slot order (edges sorted by destination,
as :class:`Index` keeps them when given sorted COO): it skips an indirection and
lets edge softmax take its contiguous, fully vectorised path.

Every kernel accepts float64, float32, float16 and bfloat16 (16-bit values are
widened to fp32 in registers), accumulates in fp32 (fp64 when fp64 is involved)
and rounds once on store (round to nearest even); mixed operand dtypes give the
promoted dtype unless ``out_dtype`` asks for another (float32 gradients from
float16 operands, say). Structure contents are trusted (indices in range); the wrappers check
shapes and dtypes. Kernels compile on first use for each (operator, layout,
dtypes) combination -- about 2 s each -- and are cached on disk by Numba
(``__pycache__`` next to these files, or ``NUMBA_CACHE_DIR``); they run on
``torch.get_num_threads()`` threads (Python threads running ``nogil`` code and
claiming chunks of rows balanced by edge count), one thread below
:data:`._core.SERIAL_WORK` elements. Results do not depend on the thread count.

:func:`available` says whether Numba can be used; when it cannot,
:func:`unavailable_reason` says why and the callers fall back to the reference
implementations. Importing this package never imports Numba.
"""

__all__ = ["available", "unavailable_reason", "gspmm", "gsddmm", "edge_softmax_forward", "edge_softmax_backward",
           "segment_reduce"]

_STATE = {}


class SettingError(ValueError):
    """An ``MPGRAPH_*`` environment setting of the CPU kernels holds a value it cannot take (raised by the
    first op that needs the kernels, not by ``import mpgraph``)."""


def _probe():
    if "ok" not in _STATE:
        try:
            import numba  # noqa: F401
            import llvmlite  # noqa: F401

            from . import _core  # noqa: F401  (intrinsics register with Numba on import)
        except SettingError:  # a wrong MPGRAPH_* setting is the user's to fix, not a reason to fall back
            raise
        except Exception as err:  # any other failure to load means "use the fallback"
            _STATE["ok"] = False
            _STATE["reason"] = f"numba could not be imported ({type(err).__name__}: {err}); install mpgraph[cpu]"
        else:
            _STATE["ok"] = True
            _STATE["reason"] = None
    return _STATE["ok"]


def available():
    """True when the Numba kernels can run (Numba imports); see :func:`unavailable_reason`."""
    return _probe()


def unavailable_reason():
    """Why :func:`available` is False (a sentence for a one-time warning), or None."""
    _probe()
    return _STATE["reason"]


def gspmm(op, reduce, indptr, indices, eid, lhs, rhs, **kwargs):
    """Generalised SpMM; see :func:`mpgraph.ops._cpu.spmm.gspmm`."""
    from .spmm import gspmm as impl

    return impl(op, reduce, indptr, indices, eid, lhs, rhs, **kwargs)


def gsddmm(op, indptr, indices, eid, lhs, rhs, lhs_target="u", rhs_target="v", **kwargs):
    """Generalised SDDMM; see :func:`mpgraph.ops._cpu.sddmm.gsddmm`."""
    from .sddmm import gsddmm as impl

    return impl(op, indptr, indices, eid, lhs, rhs, lhs_target, rhs_target, **kwargs)


def edge_softmax_forward(indptr, eid, logits, **kwargs):
    """Edge softmax; see :func:`mpgraph.ops._cpu.edge_softmax.edge_softmax_forward`."""
    from .edge_softmax import edge_softmax_forward as impl

    return impl(indptr, eid, logits, **kwargs)


def edge_softmax_backward(indptr, eid, out, grad_out, **kwargs):
    """Edge softmax gradient; see :func:`mpgraph.ops._cpu.edge_softmax.edge_softmax_backward`."""
    from .edge_softmax import edge_softmax_backward as impl

    return impl(indptr, eid, out, grad_out, **kwargs)


def segment_reduce(reduce, x, offsets):
    """Segment reduction; see :func:`mpgraph.ops._cpu.segment.segment_reduce`."""
    from .segment import segment_reduce as impl

    return impl(reduce, x, offsets)


# The dispatch's ``cpu`` backend (priority 20); importing it does not import Numba either.
from ._backend import KERNELS  # noqa: E402

__all__ += ["KERNELS"]
