"""Backend selection: the only place that picks a kernel by device, dtype and availability.

Backends register kernels per op under a backend name. For each call the
highest-priority backend whose ``supports`` predicate accepts the call runs it:

==============  ========  =====================================================
backend         priority  what it is
==============  ========  =====================================================
``triton``      30        Triton kernels (``mpgraph.ops._triton``), GPU
``cpu``         20        Numba kernels (``mpgraph.ops._cpu``)
``torch``       10        fused plain-PyTorch primitives (``_torch_backend``)
``reference``   0         obvious PyTorch (``_reference``): test oracle, last resort
==============  ========  =====================================================

``reference`` and ``torch`` support every call. ``cpu`` and ``triton`` are
imported lazily on the first op call; a backend package joins by defining in
its ``__init__.py``::

    KERNELS = {"spmm": (fn, supports), "sddmm": (fn, supports), "edge_softmax": (fn, supports),
               "edge_softmax_backward": (fn, supports), "scatter_winners": (fn, supports),
               "pick_winners": (fn, supports), "gather_winners": (fn, supports), "edge_winners": (fn, supports),
               "spmm_mul_backward": (fn, supports), "div_edge_grad": (fn, supports), "dropout": (fn, supports),
               "dropout_backward": (fn, supports), "winners_product_backward": (fn, supports)}

(any subset of the ops). An ``ImportError`` while importing it (Numba or
Triton missing) leaves it out; :func:`backend_status` says why. Anything can
also be added at run time with :func:`register`.

Forcing a backend: ``with use_backend('reference'): ...`` or the environment
variable ``MPGRAPH_BACKEND=reference``. A forced backend that cannot run a call
falls back to normal selection, unless ``use_backend(name, strict=True)``, which
raises instead (tests use it to be sure which kernel ran).

Kernel contract
---------------
The op layer has already validated every operand, promoted the operands to one
dtype, and flattened their feature dimensions. Kernels never see ``E == 0``,
``F == 0`` or ``K == 0`` (the op answers those itself). They run inside
``autograd.Function.forward`` (no autograd recording) with autocast disabled,
must not modify their inputs, and return new tensors (never an input itself).
``supports`` takes the same arguments as the kernel and returns a bool; it
must be cheap (no device sync).

Common arguments:

* ``index``: :class:`mpgraph._index.Index`. ``index.csc()`` gives
  ``(indptr: (N_dst + 1,), src: (E,), eid: (E,))`` int64 on the operands'
  device: in-edges of each destination in increasing edge-ID order;
  ``index.csr()`` the same by source; ``index.src64``/``index.dst64`` the COO
  endpoints in edge-ID order; ``index.in_degrees()``.
  ``index.cached(key, build)`` stores derived structures for the life of the
  index; prefix keys with the backend name (``'triton.int32_csc'``). In the
  backward pass kernels run on ``index.reverse()`` (cached by the op layer);
  its ``csc()`` is the forward index's ``csr()``, already built.
* ``bcast``: :class:`mpgraph.ops._broadcast.Bcast` with ``F`` (output features
  per row), ``L``/``R`` (lhs/rhs features per row), ``K`` (contracted size for
  ``dot``, else 1), and ``lhs_off``/``rhs_off``: ``(F,)`` int64 tensors on the
  device giving, for output feature ``f``, the lhs/rhs feature read
  (``None`` means identity, i.e. ``L == F`` / ``R == F``). ``bcast.use_bcast``
  is False when both are identity.
* ``out_dtype``: dtype of the output. The operands share one dtype, usually
  ``out_dtype``; the backward pass also asks for float32 results from half
  operands and half results from float32 operands (a mean-scaled gradient).
  Compute and accumulate in ``mpgraph.precision.accum_dtype(
  torch.promote_types(operand_dtype, out_dtype))`` (float32 for fp16/bf16,
  float64 for float64) and round once when storing.

Kernels by op:

``spmm(index, op, reduce, lhs, rhs, bcast, out_dtype, need_arg=True) -> (out, arg_u, arg_e)``
    ``op`` in ``'add' 'sub' 'mul' 'div' 'copy_lhs' 'copy_rhs'``, ``reduce`` in
    ``'sum' 'mean' 'max' 'min'``. ``lhs: (N_src, L)`` node rows (None for
    ``copy_rhs``), ``rhs: (E, R)`` edge rows in edge-ID order (None for
    ``copy_lhs``), both contiguous. For every destination ``v`` and ``f < F``::

        msg(k, f) = lhs[src[k], lhs_off[f]] op rhs[eid[k], rhs_off[f]]   (k over v's in-edges)
        out[v, f] = reduce_k msg(k, f)          # in accum dtype, rounded once

    ``mean`` divides the sum by the in-degree before rounding; zero-in-degree
    rows are 0 for every reducer (``max``/``min`` start from -inf/+inf).
    ``out: (N_dst, F)`` contiguous in ``out_dtype``. For ``sum``/``mean``
    ``arg_u = arg_e = None``. For ``max``/``min``: ``arg_u: (N_dst, F)`` int64
    (or int32, when the backend chooses and every ID fits) source node of the
    winning edge (None for ``copy_rhs``) and ``arg_e: (N_dst, F)`` int64 or
    int32 its edge ID (None for ``copy_lhs``), both -1 on zero-in-degree rows.
    Max/min compare messages rounded to ``out_dtype``. Ties may pick any
    winning edge; the built-in backends pick the smallest edge ID (the
    fast-vs-reference tests rely on that).
    ``need_arg=False`` (passed only for ``max``/``min``, when no operand
    needs a gradient: inference, ``torch.no_grad``) allows the kernel to skip
    tracking winners and return None for both; a kernel may ignore it.
    ``need_arg='slots'`` (passed only for max/min of ``copy_lhs``,
    ``copy_rhs``, ``add``, ``sub``, ``mul`` and ``div`` whose node operand does
    not broadcast, ``bcast.lhs_off`` None, and whose edge operand does not
    either or is a block broadcast: one value per edge, or ``(E, H, 1)`` against
    ``(N, H, D)``) allows the kernel to return *slot winners* as
    ``arg_u`` (with ``arg_e`` None, for every op): uint8 or int16
    ``(N_dst, F)``, the offset of the winning edge within its destination's
    in-edges in ``index.csc()`` order (the source is ``src[indptr[v] + slot]``,
    the edge ``eid[indptr[v] + slot]``), 255 (uint8) or -1 (int16) where there
    is none. Or *split slots*, uint8 ``(N_dst + 2 n_hub, F)``, where some
    destinations have 256 to 32767 in-edges (the ``n_hub`` *hub* rows, in
    increasing order): the other destinations' rows as uint8 slots, the
    ``h``-th hub's low bytes in row ``N_dst + 2h`` and high bytes in row
    ``N_dst + 2h + 1`` (255 and 255: none), and 0 in its own row
    (``mpgraph.ops._reference.joined_slots`` gives the int16 slots). The op
    layer tells slots from ids by that dtype and takes their gradients with
    ``gather_winners`` and ``edge_winners``, which take either form. A kernel
    without slots treats it as True. With slots of ``mul``/``div`` on operands
    of one feature shape (no broadcast), a kernel may return as ``arg_e``, instead
    of None, *the edge operand at the winners*: ``(N_dst, F)`` in ``rhs``'s dtype,
    ``rhs[eid(winner), f]`` bit for bit (any value where no edge won); the op layer
    hands it to ``winners_product_backward`` as ``rhs_won``.

``sddmm(index, op, lhs, rhs, lhs_target, rhs_target, bcast, out_dtype) -> out``
    ``op`` in ``'add' 'sub' 'mul' 'div' 'dot' 'copy_lhs' 'copy_rhs'``; targets in
    ``'u' 'v' 'e'`` say which rows each operand has (``(N_src, L*K)``,
    ``(N_dst, L*K)``, ``(E, L*K)``; likewise rhs with ``R*K``; None for the
    unused operand of a copy). With ``row_t(k)`` = ``src[k]``, ``dst[k]`` or
    ``k`` for edge ``k`` (edge-ID order)::

        out[k, f] = lhs[row_l(k), lhs_off[f]] op rhs[row_r(k), rhs_off[f]]
        dot:  out[k, f] = sum_d lhs[row_l(k), lhs_off[f] * K + d] * rhs[row_r(k), rhs_off[f] * K + d]

    ``out: (E, F)`` contiguous in ``out_dtype``; ``dot`` accumulates in the
    accum dtype and must not need an ``(E, F * K)`` intermediate.

``edge_softmax(index, logits, out_dtype) -> out``
    ``logits: (E, F)`` contiguous, edge-ID order; softmax over the in-edges of
    each destination (``index.csc()``; the op passes ``index.reverse()`` for
    ``norm_by='src'``): subtract the per-destination max, ``exp`` and the sum
    in float32 (float64 for float64), divide, round once. ``out: (E, F)``.

``edge_softmax_backward(index, out, grad_out, out_dtype) -> grad_logits``
    ``out``: the forward result ``y: (E, F)``, ``grad_out: (E, F)`` the same
    dtype, both contiguous in edge-ID order, grouped as in the forward call::

        grad_logits[k, f] = y[k, f] * (g[k, f] - sum_{j in group(k)} y[j, f] * g[j, f])

    with the group sum in the accum dtype of ``promote(y.dtype, out_dtype)``
    and one rounding into ``out_dtype`` (the logits' dtype). ``(E, F)``.

``pick_winners(winner, src, pos, cols) -> picked``
    The other operand of a max/min product at each element's winner (the
    ``mul``/``div`` backward): ``winner: (R, F)`` int32/int64 as for
    ``scatter_winners``, ``src`` a float operand of rows of ``cols`` elements,
    ``pos: (F,)`` int64 or None (identity)::

        picked[r, f] = src[winner[r, f], pos[f]]     (0 where winner[r, f] < 0)

    ``(R, F)`` in ``src``'s accumulator dtype (exact widening).

``div_edge_grad(index, lhs, grad, rhs, out_dtype) -> grad_rhs``
    The edge operand's gradient of a ``u_div_e`` sum without broadcast:
    ``lhs: (N_src, F)``, ``grad: (N_dst, F)`` (the output's gradient, mean
    already divided out), ``rhs: (E, F)`` in edge-ID order, dtypes may differ::

        grad_rhs[k, f] = -lhs[src[k], f] * grad[dst[k], f] / rhs[k, f] ** 2

    computed in the accumulator dtype (float64 when any operand is float64),
    rounded once into ``out_dtype``; a zero divisor gives inf/nan as torch does.
    ``(E, F)``, no ``(E, F)`` intermediate.

``spmm_mul_backward(index, grad, lhs, rhs, heads, op='mul') -> (grad_lhs, grad_rhs)``
    Both gradients of a ``u_mul_e`` sum (the backward of ``spmm(..., 'mul',
    'sum', x, w)`` with ``x: (N_src, H, D)`` and one weight per edge and head,
    ``w: (E, H)``), fused so that each gradient row is gathered once. ``index`` is
    the *reversed* forward graph (``index.csc()`` groups the forward sources'
    out-edges); ``grad: (index.num_src, H * D)`` (the forward output's gradient),
    ``lhs: (index.num_dst, H * D)`` (``x``), ``rhs: (E, H)`` (``w``), one dtype,
    contiguous; ``heads = H`` divides ``grad.shape[1]``. With ``src``/``dst`` the
    reversed graph's endpoints of edge ``e``::

        grad_lhs[u, h*D + d] = sum_{e: dst(e) = u} grad[src(e), h*D + d] * rhs[e, h]
        grad_rhs[e, h]       = sum_d grad[src(e), h*D + d] * lhs[dst(e), h*D + d]

    accumulated in the accum dtype, rounded once to the operands' dtype. With
    ``op='div'`` (``u_div_e``) each ``rhs[e, h]`` factor of ``grad_lhs`` is
    ``1 / rhs[e, h]`` and ``grad_rhs[e, h]`` is the dot above times
    ``-1 / rhs[e, h] ** 2`` (a zero weight gives inf/nan as torch does):
    ``grad_lhs: (index.num_dst, H * D)``, ``grad_rhs: (E, H)``. Elementwise
    weights ``(E, F)`` are ``H = F``, ``D = 1``. A backend without a fused kernel
    registers its gSpMM and gSDDMM composed (``_reference.composed_mul_backward``).
    ``row_scale`` (7th argument, passed only for a ``mean``; ``supports`` gets it
    too): ``(index.num_src,)`` in the accum dtype, the mean's ``1 / in-degree``;
    each ``grad`` row counts as ``grad[v] * row_scale[v]``, formed in the
    accumulator (float16 ``grad`` is not scaled into float16: it would underflow).

``gather_winners(index, grad, winners, out_dtype, op='copy_lhs', rhs=None, rhs_won=None) -> grad_lhs``
    The node operand's gradient of max/min from slot winners (above;
    ``copy_lhs``, ``add``, ``sub``; for ``op`` ``'mul'``/``'div'`` each term is
    also multiplied/divided by ``rhs[e, f]``, ``rhs: (E, F)`` in edge-ID order,
    or by ``rhs[e, f // B]`` for a block broadcast ``rhs: (E, H)``, ``B = F // H``:
    one weight per edge, or GAT's ``(E, H, 1)`` against ``(N, H, D)``):
    ``grad: (N_dst, F)``, ``winners: (N_dst, F)`` uint8/int16, ``index`` the
    forward graph. For every edge ``e = (u -> v)`` whose offset in ``v``'s
    in-edges is ``s(e)``::

        grad_lhs[u, f] = sum_{e = (u -> v)} grad[v, f] * (winners[v, f] == s(e))

    accumulated in the accum dtype of ``promote(grad.dtype, out_dtype)``,
    rounded once: ``(N_src, F)`` in ``out_dtype``. ``rhs_won`` (passed only
    when the forward's ``spmm`` returned it as ``arg_e``): ``rhs`` at each
    element's winner, ``(N_dst, F)``, which a kernel may read instead of ``rhs``.

``edge_winners(index, grad, winners, out_dtype, op='copy_rhs', lhs=None, rhs=None, cols=None) -> grad_rhs``
    The edge operand's gradient of max/min from slot winners (``copy_rhs``,
    ``add``, ``sub``): for the edge ``e`` at offset ``s(e)`` in the
    in-edges of ``v``, ``grad_rhs[e, f] = grad[v, f]`` (``sub``: ``-grad[v, f]``)
    where ``winners[v, f] == s(e)``, else 0. ``(E, F)`` in ``out_dtype``, edge-ID order.
    ``op='mul'``: ``grad[v, f] * lhs[u, f]`` there (``lhs: (N_src, F)``, ``u`` the
    edge's source); ``op='div'``: ``-grad[v, f] * lhs[u, f] / rhs[e, f]^2``.
    ``cols = H < F`` (``F % H == 0``; None means ``F``): the edge operand is a
    block broadcast (``rhs: (E, H)`` for ``'div'``), and ``grad_rhs: (E, H)``
    holds for each ``h`` the sum of those terms over columns ``h * B`` to
    ``h * B + B - 1`` (``B = F // H``; ``'div'`` divides the sum of
    ``grad * lhs`` by ``-rhs[e, h]^2``).

``winners_product_backward(index, grad, winners, op, lhs, rhs, lhs_dtype, rhs_dtype, rhs_won=None)``
    ``-> (grad_lhs, grad_rhs)``.
    Both gradients of a ``u_mul_e``/``u_div_e`` max/min (``op`` ``'mul'``/``'div'``)
    whose edge operand is a block broadcast or none (``rhs: (E, H)`` with
    ``F % H == 0``: one value per edge, GAT's heads, or ``(E, F)``;
    ``lhs: (N_src, F)``) from slot winners: ``gather_winners(index, grad, winners,
    lhs_dtype, op, rhs)`` and ``edge_winners(index, grad, winners, rhs_dtype, op,
    lhs, rhs, cols=rhs.shape[1])``
    in one call, so a kernel can share work between them (the CPU kernel's
    gather over each source's out-edges has the edge's gradient and winner rows
    loaded, and the source's own ``lhs`` row; for ``(E, F)`` its edge pass in the
    forward's order picks ``grad * rhs`` at the winners for a copy's gather).
    ``rhs_won`` (passed only when the forward's ``spmm`` returned it as ``arg_e``,
    above): ``rhs`` at each element's winner, ``(N_dst, F)``, so a kernel need not
    read the ``E x F`` edge operand; a kernel may ignore it.

``scatter_winners(winner, coef, pos, rows, cols, disjoint_rows=False) -> out``
    The backward of gSpMM max/min: ``winner: (R, F)`` int64 or int32 (an
    ``arg_u``/``arg_e`` of the forward, -1 where a row had no edge), ``coef: (R, F)``
    any float dtype (the gradient, already multiplied by the other operand where the
    message needs it; entries where ``winner < 0`` are ignored, whatever they hold),
    ``pos: (F,)`` int64 or None (the operand column each output feature read:
    ``bcast.lhs_off``; None is the identity). Returns ``out: (rows, cols)`` in
    ``coef``'s accumulator dtype (float32 for 16-bit ``coef``)::

        out[winner[r, f], pos[f]] += coef[r, f]     for winner[r, f] >= 0

    ``disjoint_rows=True`` promises that different ``r`` never share a winner (the
    edge operand: an edge wins only in its own destination's row), so a kernel may
    split the rows among threads.

``dropout(x, p, seed) -> (y, saved)`` and ``dropout_backward(grad, p, seed, saved) -> grad_x``
    ``x``: any shape, any float dtype (kernels also see 0-d and non-contiguous
    tensors; never an empty one, and never ``p == 0``), ``0 < p < 1``, ``seed``:
    an int in ``[0, 2**64)`` drawn by the op from torch's generator. ``y`` (``x``'s
    shape and dtype) keeps each element with probability ``1 - p``, scaled by
    ``1 / (1 - p)``, and zeroes the others. ``saved`` is whatever the backend needs to
    apply the same mask to the gradient: the seeded backends (``cpu``,
    ``reference``) recompute the mask from ``seed`` and save ``None``; ``torch``
    (``torch.native_dropout``, its own generator) saves its boolean mask. The
    backward always runs on the backend that ran the forward.
"""

import contextlib
import contextvars
import importlib
import os
from dataclasses import dataclass

import torch

from ..base import DGLError
from ..precision import HALF_DTYPES, accum_dtype, autocast_disabled, autocast_dtype, native_half_matmul

__all__ = ["register", "unregister", "use_backend", "record_backends", "select", "backends", "backend_status",
           "spmm", "sddmm", "edge_softmax", "edge_softmax_backward", "scatter_winners", "pick_winners",
           "gather_winners", "edge_winners", "spmm_mul_backward", "div_edge_grad", "dropout", "dropout_backward",
           "winners_product_backward", "row_scale", "dense_upcast_dtype", "capture", "restored",
           "OPS", "PRIORITY"]

#: Ops a backend can provide kernels for.
OPS = ("spmm", "sddmm", "edge_softmax", "edge_softmax_backward", "scatter_winners", "pick_winners",
       "gather_winners", "edge_winners", "spmm_mul_backward", "div_edge_grad", "dropout", "dropout_backward",
       "winners_product_backward")
#: Priority of each known backend (higher wins when several support a call).
PRIORITY = {"triton": 30, "cpu": 20, "torch": 10, "reference": 0}
# Backends loaded lazily: name -> module that defines KERNELS.
# named from this package, so a copy of it imported under another name (benchmarks/ab_commit.py) loads its own
_OPTIONAL = {"cpu": f"{__package__}._cpu", "triton": f"{__package__}._triton"}
_ENV = "MPGRAPH_BACKEND"


@dataclass(frozen=True)
class _Kernel:
    backend: str
    fn: object
    supports: object
    priority: int


_registry = {op: [] for op in OPS}
_status = {}          # backend name -> "loaded" / reason it is not
_optional_loaded = False
_forced = contextvars.ContextVar("mpgraph_backend", default=None)
_recording = contextvars.ContextVar("mpgraph_record_backends", default=None)


def _always(*args, **kwargs):
    return True


def register(op, backend, fn, supports=None, priority=None):
    """Register kernel ``fn`` of ``backend`` for ``op`` (one of :data:`OPS`).

    Parameters
    ----------
    op : str
        ``'spmm'``, ``'sddmm'`` or ``'edge_softmax'``.
    backend : str
        Backend name (``'cpu'``, ``'triton'``, ...). Registering the same
        (op, backend) again replaces the kernel.
    fn : callable
        The kernel, with the signature in this module's docstring.
    supports : callable, optional
        Predicate with the kernel's signature; default: supports every call.
    priority : int, optional
        Default :data:`PRIORITY` ``[backend]``, or 5 for unknown names.
    """
    if op not in _registry:
        raise DGLError(f"unknown op {op!r} for a backend kernel; expected one of {OPS}")
    if priority is None:
        priority = PRIORITY.get(backend, 5)
    kernels = [k for k in _registry[op] if k.backend != backend]
    kernels.append(_Kernel(backend, fn, supports or _always, priority))
    kernels.sort(key=lambda k: -k.priority)
    _registry[op] = kernels
    _status.setdefault(backend, "loaded")


def unregister(op, backend):
    """Remove ``backend``'s kernel for ``op`` (no-op when absent); mostly for tests."""
    if op not in _registry:
        raise DGLError(f"unknown op {op!r} for a backend kernel; expected one of {OPS}")
    _registry[op] = [k for k in _registry[op] if k.backend != backend]


def _load_optional():
    global _optional_loaded
    if _optional_loaded:
        return
    _optional_loaded = True
    for name, module_name in _OPTIONAL.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            _status[name] = f"not available: {err}"
            continue
        kernels = getattr(module, "KERNELS", None)
        if not kernels:
            _status[name] = f"not available: {module_name} defines no KERNELS"
            continue
        for op, (fn, supports) in kernels.items():
            register(op, name, fn, supports)
        _status[name] = "loaded"


def backends(op=None):
    """Names of the registered backends (for ``op``, in selection order)."""
    _load_optional()
    if op is not None:
        return [k.backend for k in _registry[op]]
    names = {k.backend for kernels in _registry.values() for k in kernels}
    return sorted(names, key=lambda n: -PRIORITY.get(n, 5))


def backend_status():
    """``{backend: 'loaded' or why not}`` for every known backend."""
    _load_optional()
    return dict(_status)


def _known(name):
    return name in _OPTIONAL or any(k.backend == name for kernels in _registry.values() for k in kernels)


@contextlib.contextmanager
def use_backend(name, strict=False):
    """Context manager forcing backend ``name`` for the ops called inside it.

    Parameters
    ----------
    name : str
        A backend name (``'reference'``, ``'torch'``, ``'cpu'``, ``'triton'``).
    strict : bool, default False
        If True, a call the backend does not support raises :class:`DGLError`
        instead of falling back to normal selection.

    Examples
    --------
    >>> import torch
    >>> from mpgraph._index import Index
    >>> from mpgraph.ops import copy_u_sum
    >>> from mpgraph.ops._dispatch import use_backend
    >>> g = Index.from_coo(torch.tensor([0, 1]), torch.tensor([1, 1]), 2, 2)
    >>> with use_backend('reference'):
    ...     copy_u_sum(g, torch.tensor([[1.], [2.]]))
    tensor([[0.],
            [3.]])
    """
    _load_optional()
    if not _known(name):
        raise DGLError(f"unknown backend {name!r}; expected one of {sorted(set(PRIORITY) | set(backends()))}")
    token = _forced.set((name, strict))
    try:
        yield
    finally:
        _forced.reset(token)


@contextlib.contextmanager
def record_backends():
    """Context manager yielding a list that collects the backend name of each kernel call inside it.

    Examples
    --------
    >>> import torch
    >>> from mpgraph._index import Index
    >>> from mpgraph.ops import copy_u_sum
    >>> from mpgraph.ops._dispatch import record_backends, use_backend
    >>> g = Index.from_coo(torch.tensor([0, 1]), torch.tensor([1, 1]), 2, 2)
    >>> with record_backends() as seen, use_backend('reference'):
    ...     _ = copy_u_sum(g, torch.ones(2, 1))
    >>> seen
    ['reference']
    """
    seen = []
    token = _recording.set(seen)
    try:
        yield seen
    finally:
        _recording.reset(token)


def capture():
    """The selection state now (forced backend, recording list), for an autograd ``backward`` to restore.

    Autograd may run a backward on another thread (CUDA tensors), where the context variables behind
    :func:`use_backend` and :func:`record_backends` are not set; the op layer captures them in
    ``forward`` and runs ``backward`` under :func:`restored`, so the backward uses the same selection.
    """
    return _forced.get(), _recording.get()


@contextlib.contextmanager
def restored(state):
    """Context manager re-establishing a :func:`capture` state."""
    forced, recording = state
    t_forced, t_recording = _forced.set(forced), _recording.set(recording)
    try:
        yield
    finally:
        _recording.reset(t_recording)
        _forced.reset(t_forced)


def _requested():
    forced = _forced.get()
    if forced is not None:
        return forced
    env = os.environ.get(_ENV)
    if env:
        if not _known(env):
            raise DGLError(f"{_ENV}={env!r} is not a known backend; expected one of "
                           f"{sorted(set(PRIORITY) | set(backends()))}, or unset it")
        return env, False
    return None


def select(op, *args):
    """Return ``(backend_name, kernel)`` that runs ``op`` on ``args`` (the kernel's arguments)."""
    _load_optional()
    kernels = _registry[op]
    requested = _requested()
    if requested is not None:
        name, strict = requested
        for k in kernels:
            if k.backend == name and k.supports(*args):
                return k.backend, k.fn
        if strict:
            raise DGLError(f"backend {name!r} cannot run this {op} call (device {args[0].device}); "
                           "use another backend or strict=False")
    for k in kernels:
        if k.supports(*args):
            return k.backend, k.fn
    raise DGLError(f"no backend supports this {op} call")  # unreachable: 'reference' supports all


def _select_noted(op, *args):
    """:func:`select`'s ``(backend_name, kernel)``, noting the backend in an active :func:`record_backends` list."""
    name, fn = select(op, *args)
    seen = _recording.get()
    if seen is not None:
        seen.append(name)
    return name, fn


def _choose(op, *args):
    """:func:`_select_noted`'s kernel."""
    return _select_noted(op, *args)[1]


# ----------------------------------------------------------------------------- calls used by the ops

def spmm(index, op, reduce, lhs, rhs, bcast, out_dtype, need_arg=True):
    """Run the selected spmm kernel; answers empty cases itself. Returns ``(out, arg_u, arg_e)``."""
    N_dst, F = index.num_dst, bcast.F
    device = lhs.device if lhs is not None else rhs.device
    if index.num_edges == 0 or F == 0:
        out = torch.zeros(N_dst, F, dtype=out_dtype, device=device)
        if reduce in ("max", "min"):
            none = torch.full((N_dst, F), -1, dtype=torch.int64, device=device)
            return out, (none if lhs is not None else None), (none if rhs is not None else None)
        return out, None, None
    fn = _choose("spmm", index, op, reduce, lhs, rhs, bcast, out_dtype)
    with autocast_disabled(device.type):
        if need_arg is True or reduce not in ("max", "min"):
            return fn(index, op, reduce, lhs, rhs, bcast, out_dtype)
        return fn(index, op, reduce, lhs, rhs, bcast, out_dtype, need_arg=need_arg)


def sddmm(index, op, lhs, rhs, lhs_target, rhs_target, bcast, out_dtype):
    """Run the selected sddmm kernel; answers empty cases itself. Returns ``out: (E, F)``."""
    device = lhs.device if lhs is not None else rhs.device
    if index.num_edges == 0 or bcast.F == 0 or bcast.K == 0:   # K == 0: dot over an empty dimension
        return torch.zeros(index.num_edges, bcast.F, dtype=out_dtype, device=device)
    fn = _choose("sddmm", index, op, lhs, rhs, lhs_target, rhs_target, bcast, out_dtype)
    with autocast_disabled(device.type):
        return fn(index, op, lhs, rhs, lhs_target, rhs_target, bcast, out_dtype)


def edge_softmax(index, logits, out_dtype):
    """Run the selected edge_softmax kernel; answers empty cases itself. Returns ``(E, F)``."""
    if logits.numel() == 0:
        return torch.zeros(logits.shape, dtype=out_dtype, device=logits.device)
    fn = _choose("edge_softmax", index, logits, out_dtype)
    with autocast_disabled(logits.device.type):
        return fn(index, logits, out_dtype)


def edge_softmax_backward(index, out, grad_out, out_dtype):
    """Run the selected edge softmax gradient kernel; answers empty cases itself. Returns ``(E, F)``."""
    if out.numel() == 0:
        return torch.zeros(out.shape, dtype=out_dtype, device=out.device)
    fn = _choose("edge_softmax_backward", index, out, grad_out, out_dtype)
    with autocast_disabled(out.device.type):
        return fn(index, out, grad_out, out_dtype)


def scatter_winners(winner, coef, pos, rows, cols, disjoint_rows=False):
    """Run the selected scatter-to-winners kernel; answers empty cases itself. Returns ``(rows, cols)``."""
    if winner.numel() == 0 or rows == 0 or cols == 0:
        return torch.zeros(rows, cols, dtype=accum_dtype(coef.dtype), device=coef.device)
    fn = _choose("scatter_winners", winner, coef, pos, rows, cols, disjoint_rows)
    return fn(winner, coef, pos, rows, cols, disjoint_rows)


def pick_winners(winner, src, pos, cols):
    """Run the selected winner pick (max/min backward of products); answers empty cases itself. ``(R, F)``."""
    if winner.numel() == 0:
        return torch.zeros(winner.shape, dtype=accum_dtype(src.dtype), device=src.device)
    fn = _choose("pick_winners", winner, src, pos, cols)
    return fn(winner, src, pos, cols)


def gather_winners(index, grad, winners, out_dtype, op="copy_lhs", rhs=None, rhs_won=None):
    """Run the selected slot-winner gather (node operand of max/min); answers empty cases itself. ``(N_src, F)``.
    ``rhs_won`` (the forward's ``arg_e``, see the contract) is passed on only when given."""
    won = () if rhs_won is None else (rhs_won,)
    return _from_slots("gather_winners", index.num_src, index, grad, winners, out_dtype, op, rhs, *won)


def edge_winners(index, grad, winners, out_dtype, op="copy_rhs", lhs=None, rhs=None, cols=None):
    """Run the selected slot-winner edge gradient (max/min backward for the edge operand). ``(E, cols or F)``."""
    if cols is None or cols == grad.shape[1]:   # old kernels registered without ``cols`` keep working
        return _from_slots("edge_winners", index.num_edges, index, grad, winners, out_dtype, op, lhs, rhs)
    return _from_slots("edge_winners", index.num_edges, index, grad, winners, out_dtype, op, lhs, rhs, cols,
                       width=cols)


def _from_slots(kernel, rows, index, grad, winners, out_dtype, *operands, width=None):
    """A max/min gradient from slot winners (``kernel``: ``gather_winners``/``edge_winners``): (rows, width or F)."""
    if index.num_edges == 0 or grad.shape[1] == 0:
        return torch.zeros(rows, grad.shape[1] if width is None else width, dtype=out_dtype, device=grad.device)
    fn = _choose(kernel, index, grad, winners, out_dtype, *operands)
    with autocast_disabled(grad.device.type):
        return fn(index, grad, winners, out_dtype, *operands)


def spmm_mul_backward(index, grad, lhs, rhs, heads, op="mul", row_scale=None):
    """Run the selected fused ``u_mul_e`` (``op='div'``: ``u_div_e``) sum backward; answers empty cases itself.
    ``(grad_lhs, grad_rhs)``. ``row_scale`` (a mean's ``1 / in-degree``) is passed on only when given, so
    kernels registered before it existed still serve sums."""
    if op not in ("mul", "div"):
        raise ValueError(f"spmm_mul_backward: expected op 'mul' or 'div', got {op!r}")
    if index.num_edges == 0 or grad.shape[1] == 0:
        return torch.zeros(lhs.shape, dtype=lhs.dtype, device=lhs.device), torch.zeros(rhs.shape, dtype=rhs.dtype,
                                                                                      device=rhs.device)
    scale = () if row_scale is None else (row_scale,)
    fn = _choose("spmm_mul_backward", index, grad, lhs, rhs, heads, op, *scale)
    with autocast_disabled(grad.device.type):
        return fn(index, grad, lhs, rhs, heads, op, *scale)


def div_edge_grad(index, lhs, grad, rhs, out_dtype):
    """Run the selected ``u_div_e`` edge gradient ``-x[u] * G[v] / w[e]**2``; answers empty cases itself. ``(E, F)``."""
    if index.num_edges == 0 or rhs.shape[1] == 0:
        return torch.zeros(rhs.shape, dtype=out_dtype, device=rhs.device)
    fn = _choose("div_edge_grad", index, lhs, grad, rhs, out_dtype)
    with autocast_disabled(rhs.device.type):
        return fn(index, lhs, grad, rhs, out_dtype)


def winners_product_backward(index, grad, winners, op, lhs, rhs, lhs_dtype, rhs_dtype, rhs_won=None):
    """Run the selected fused max/min product backward; answers empty cases itself. ``(grad_lhs, grad_rhs)``.
    ``rhs_won`` (the forward's ``arg_e``, see the contract) is passed on only when given, so kernels registered
    without it still serve the other calls."""
    if index.num_edges == 0 or grad.shape[1] == 0:
        return (torch.zeros(index.num_src, grad.shape[1], dtype=lhs_dtype, device=grad.device),
                torch.zeros(rhs.shape, dtype=rhs_dtype, device=grad.device))
    won = () if rhs_won is None else (rhs_won,)
    fn = _choose("winners_product_backward", index, grad, winners, op, lhs, rhs, lhs_dtype, rhs_dtype, *won)
    with autocast_disabled(grad.device.type):
        return fn(index, grad, winners, op, lhs, rhs, lhs_dtype, rhs_dtype, *won)


def dropout(x, p, seed):
    """Run the selected dropout kernel: ``(y, state)``; ``state`` pins the backward to the same backend."""
    name, fn = _select_noted("dropout", x, p, seed)
    with autocast_disabled(x.device.type):
        y, saved = fn(x, p, seed)
    return y, (name, saved)


def dropout_backward(state, grad, p, seed):
    """The gradient of :func:`dropout` with the forward's mask, on the backend that drew it."""
    name, saved = state
    for k in _registry["dropout_backward"]:
        if k.backend == name:
            with autocast_disabled(grad.device.type):
                return k.fn(grad, p, seed, saved)
    raise DGLError(f"backend {name!r} ran a dropout forward but registers no dropout_backward; "
                   "register both ops for a backend")


def row_scale(x, s, out_dtype, divide=False):
    """``x * s`` (``x / s`` with ``divide``) into ``out_dtype``, one factor per row of ``x: (N, *F)`` (``s`` shaped
    ``(N, 1, ...)``), formed in the wider of the two dtypes and rounded once, as ``torch.mul(x, s, out=out)``
    computes it: the route of :func:`mpgraph.precision.rowwise_scale`. An elementwise helper, not a graph op (as
    :func:`dense_upcast_dtype` routes the dense products): for mixed dtypes, the Numba pass
    (:mod:`mpgraph.ops._cpu.rowscale`) for CPU tensors of float32 factors and 16/32-bit rows when Numba is
    present, else :func:`mpgraph.ops._torch_backend.row_scale`; one dtype throughout, a 0-d ``x`` or no rows go
    to that function's direct ``torch.mul``. A forced backend (:func:`use_backend`) does not apply, and nothing
    is recorded. All give the same values, bit for bit."""
    from . import _torch_backend
    from ._cpu import _backend as cpu       # imports no Numba; ``row_scale_supports`` asks whether it loads
    if x.dtype == s.dtype == out_dtype or x.dim() == 0 or x.shape[0] == 0:
        return _torch_backend.row_scale(x, s, out_dtype, divide)        # one dtype, or nothing to walk: torch's op
    if cpu.row_scale_supports(x, s, out_dtype, divide):
        return cpu.row_scale(x, s, out_dtype, divide)
    return _torch_backend.row_scale(x, s, out_dtype, divide)


def dense_upcast_dtype(*operands):
    """The route of a dense product of ``operands`` (:mod:`mpgraph.ops.dense`): the 16-bit dtype it runs in
    when that runs as exact float32 upcasts multiplied in float32 (CPU tensors, the dtype 16-bit and
    :func:`mpgraph.precision.native_half_matmul` False for it), or ``None`` for torch's own kernel.

    The dtype is the CPU autocast dtype when autocast is active (``None`` when that is not 16-bit or an
    operand is float64, as autocast leaves those alone), else the operands' one 16-bit dtype. ``None``
    entries in ``operands`` (no bias) are skipped."""
    ts = [t for t in operands if t is not None]
    if not ts or any(t.device.type != "cpu" or not t.is_floating_point() for t in ts) or ts[0].dim() == 0:
        return None
    ac = autocast_dtype("cpu")
    if ac is not None:
        if ac not in HALF_DTYPES or any(t.dtype == torch.float64 for t in ts):
            return None
        dtype = ac
    elif ts[0].dtype in HALF_DTYPES and all(t.dtype == ts[0].dtype for t in ts):
        dtype = ts[0].dtype
    else:
        return None
    return None if native_half_matmul(dtype, "cpu") else dtype


def _register_builtin():
    from . import _reference, _torch_backend
    register("spmm", "reference", _reference.spmm)
    register("sddmm", "reference", _reference.sddmm)
    register("edge_softmax", "reference", _reference.edge_softmax)
    register("spmm", "torch", _torch_backend.spmm)
    register("sddmm", "torch", _torch_backend.sddmm)
    register("edge_softmax", "torch", _torch_backend.edge_softmax)
    register("edge_softmax_backward", "reference", _reference.edge_softmax_backward)
    register("edge_softmax_backward", "torch", _torch_backend.edge_softmax_backward)
    register("scatter_winners", "reference", _reference.scatter_winners)
    register("scatter_winners", "torch", _reference.scatter_winners)   # index_add_ is torch's best here
    register("pick_winners", "reference", _reference.pick_winners)
    register("pick_winners", "torch", _reference.pick_winners)
    register("gather_winners", "reference", _reference.gather_winners)
    register("gather_winners", "torch", _reference.gather_winners)
    register("edge_winners", "reference", _reference.edge_winners)
    register("edge_winners", "torch", _reference.edge_winners)
    register("spmm_mul_backward", "reference", _reference.spmm_mul_backward)
    register("spmm_mul_backward", "torch", _torch_backend.spmm_mul_backward)
    register("div_edge_grad", "reference", _reference.div_edge_grad)
    register("div_edge_grad", "torch", _reference.div_edge_grad)    # three fused torch passes; no better one
    register("winners_product_backward", "reference", _reference.winners_product_backward)
    register("winners_product_backward", "torch", _reference.winners_product_backward)  # the two slot passes
    register("dropout", "reference", _reference.dropout)
    register("dropout_backward", "reference", _reference.dropout_backward)
    register("dropout", "torch", _torch_backend.dropout)
    register("dropout_backward", "torch", _torch_backend.dropout_backward)


_register_builtin()
