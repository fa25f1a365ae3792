"""Precision policy: which float formats features may use, how they accumulate, autocast.

This module is the one place that knows about floating-point formats; ops and
layers ask it instead of testing dtypes themselves, so a new storage format
(fp8 ``float8_e4m3fn``/``float8_e5m2`` is planned) is added here once.

Rules (the product's promise)
-----------------------------
* Output dtype = input dtype. Operands of different float dtypes follow
  :func:`torch.result_type` promotion (:func:`result_dtype`); promotion between
  float formats never loses information, so casting operands up is exact.
* Sums, means, dot products and softmax denominators accumulate in
  :func:`accum_dtype` (float32 for 16-bit formats, float64 for float64) and are
  rounded once to the output format. ``mean`` divides before that rounding.
  Degrees and normalisers are float32 (exact up to 2**24).
* Under :class:`torch.autocast`, graph ops behave like ``matmul``: float operands
  other than float64 are cast to the autocast dtype of their device and the op
  runs with autocast disabled (:func:`autocast_dtype`, :func:`autocast_cast`,
  :func:`autocast_disabled`).

The autocast helpers use the device-typed ``torch`` APIs where they exist
(torch >= 2.4) and the older per-device functions on torch 2.3.
"""

import contextlib
import os

import torch

from .base import DGLTypeError

__all__ = [
    "FLOAT_DTYPES",
    "HALF_DTYPES",
    "is_float_dtype",
    "is_half_dtype",
    "accum_dtype",
    "result_dtype",
    "check_float_feature",
    "rowwise_scale",
    "autocast_enabled",
    "autocast_dtype",
    "autocast_cast",
    "autocast_disabled",
    "native_half_matmul",
    "to_half",
    "to_bfloat16",
    "to_float",
    "to_double",
]

#: Float formats accepted as node/edge features by the ops (storage formats).
FLOAT_DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)
#: 16-bit formats: stored in 16 bits, accumulated in float32.
HALF_DTYPES = (torch.float16, torch.bfloat16)

_ACCUM = {
    torch.float64: torch.float64,
    torch.float32: torch.float32,
    torch.float16: torch.float32,
    torch.bfloat16: torch.float32,
}

# torch 2.4 added torch.is_autocast_enabled(device_type) / torch.get_autocast_dtype(device_type).
_TORCH_VERSION = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
_DEVICE_TYPED_AUTOCAST = _TORCH_VERSION >= (2, 4)


def is_float_dtype(dtype):
    """True when ``dtype`` is a feature format the ops accept (see :data:`FLOAT_DTYPES`)."""
    return dtype in _ACCUM


def is_half_dtype(dtype):
    """True for 16-bit float formats (float16, bfloat16)."""
    return dtype in HALF_DTYPES


def accum_dtype(dtype):
    """Accumulation dtype for results stored in ``dtype``.

    Parameters
    ----------
    dtype : torch.dtype
        One of :data:`FLOAT_DTYPES`.

    Returns
    -------
    torch.dtype
        ``torch.float64`` for float64, ``torch.float32`` otherwise.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.precision import accum_dtype
    >>> accum_dtype(torch.bfloat16)
    torch.float32
    >>> accum_dtype(torch.float64)
    torch.float64
    """
    return _ACCUM[dtype]


def rowwise_scale(x, s, out_dtype, divide=False):
    """``x * s`` (``x / s`` with ``divide``) with one factor per row, into a new ``out_dtype`` tensor.

    ``s`` has ``x``'s row count and broadcasts over the other dimensions. The product is formed in the
    wider of the two dtypes and rounded once into ``out_dtype``, as ``torch.mul(x, s, out=...)`` does. Mixed
    dtypes take the route :func:`mpgraph.ops._dispatch.row_scale` picks: on the CPU a Numba pass
    (:mod:`mpgraph.ops._cpu.rowscale`), else torch on reused float32 blocks of rows
    (:func:`mpgraph.ops._torch_backend.row_scale`: torch computes a 16-bit tensor times a float32 one element
    by element through a generic converting path, measured ~10x slower for N=100k x 128 bf16); all give the
    same values, bit for bit.

    Parameters
    ----------
    x : Tensor ``(N, *F)``
        Rows to scale, any float dtype.
    s : Tensor ``(N, 1, ...)``
        One factor per row, with ``x``'s number of dimensions so that it broadcasts over the others
        (float32 degrees, say).
    out_dtype : torch.dtype
        Dtype of the result.
    divide : bool, default False
        Divide by ``s`` instead of multiplying.

    Returns
    -------
    Tensor ``(N, *F)`` in ``out_dtype``; ``x`` and ``s`` are not modified.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.precision import rowwise_scale
    >>> x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.bfloat16)
    >>> deg = torch.tensor([[2.0], [4.0]])
    >>> rowwise_scale(x, deg, torch.bfloat16, divide=True)
    tensor([[0.5000, 1.0000],
            [0.7500, 1.0000]], dtype=torch.bfloat16)
    """
    from .ops import _dispatch      # (lazy: mpgraph.ops imports this module)
    return _dispatch.row_scale(x, s, out_dtype, divide)


def result_dtype(*tensors):
    """Promoted dtype of the non-None ``tensors`` (:func:`torch.result_type` rules).

    Examples
    --------
    >>> import torch
    >>> from mpgraph.precision import result_dtype
    >>> result_dtype(torch.ones(2, dtype=torch.bfloat16), None, torch.ones(2))
    torch.float32
    """
    dtype = None
    for t in tensors:
        if t is None:
            continue
        dtype = t.dtype if dtype is None else torch.promote_types(dtype, t.dtype)
    return dtype


def check_float_feature(name, t):
    """Raise :class:`~mpgraph.base.DGLTypeError` unless ``t`` is a tensor in a float feature format.

    Parameters
    ----------
    name : str
        How the argument is called in the error message (``'lhs_data'``).
    t : object
        The value to check.

    Raises
    ------
    DGLTypeError
        If ``t`` is not a :class:`torch.Tensor` or its dtype is not in :data:`FLOAT_DTYPES`.
    """
    if not isinstance(t, torch.Tensor):
        raise DGLTypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}; "
                           "convert it with torch.as_tensor(...)")
    if t.dtype not in _ACCUM:
        names = ", ".join(str(d).replace("torch.", "") for d in FLOAT_DTYPES)
        raise DGLTypeError(f"{name} must be a floating-point tensor ({names}), got {t.dtype}; "
                           f"cast it first, e.g. {name}.float()")


# ----------------------------------------------------------------------------- autocast

def autocast_enabled(device_type):
    """True when :class:`torch.autocast` is active for ``device_type`` (``'cpu'``, ``'cuda'``, ...)."""
    if _DEVICE_TYPED_AUTOCAST:
        return torch.is_autocast_enabled(device_type)
    if device_type == "cpu":
        return torch.is_autocast_cpu_enabled()
    if device_type == "cuda":
        return torch.is_autocast_enabled()
    return False


def autocast_dtype(device_type):
    """The autocast dtype for ``device_type`` when autocast is active there, else ``None``.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.precision import autocast_dtype
    >>> autocast_dtype('cpu') is None
    True
    >>> with torch.autocast('cpu', dtype=torch.bfloat16):
    ...     autocast_dtype('cpu')
    torch.bfloat16
    """
    if not autocast_enabled(device_type):
        return None
    if _DEVICE_TYPED_AUTOCAST:
        return torch.get_autocast_dtype(device_type)
    if device_type == "cpu":
        return torch.get_autocast_cpu_dtype()
    return torch.get_autocast_gpu_dtype()


def autocast_cast(dtype, *tensors):
    """Cast the autocast-eligible ``tensors`` to ``dtype``; return them as a tuple.

    Eligible means a floating-point tensor that is not float64, the rule
    :class:`torch.autocast` applies to ``matmul``. ``None`` entries and other
    tensors pass through unchanged. The cast is differentiable.
    """
    return tuple(t.to(dtype) if t is not None and t.is_floating_point() and t.dtype != torch.float64 else t
                 for t in tensors)


def autocast_disabled(device_type):
    """Context manager that turns autocast off for ``device_type`` (ops use it after casting)."""
    if autocast_enabled(device_type):
        return torch.autocast(device_type, enabled=False)
    return contextlib.nullcontext()


# ----------------------------------------------------------------------------- dense matmuls

#: ``MPGRAPH_HALF_MATMUL``: ``auto`` (default), ``native`` (always torch's own 16-bit matmul) or ``fp32``
#: (16-bit matmuls on CPU always as exact upcasts to float32, :mod:`mpgraph.ops.dense`)
HALF_MATMUL_ENV = "MPGRAPH_HALF_MATMUL"
_HALF_MATMUL_CHOICES = ("auto", "native", "fp32")
_native_cache = {}


def _cpu_half_matmul_supported(dtype):
    """torch's own answer: does its CPU library (oneDNN) have a fast ``dtype`` matmul on this CPU?"""
    probe = {torch.bfloat16: "_is_mkldnn_bf16_supported", torch.float16: "_is_mkldnn_fp16_supported"}[dtype]
    try:
        return bool(getattr(torch.ops.mkldnn, probe)())
    except (AttributeError, RuntimeError):     # an older or oneDNN-less build: keep torch's own matmul
        return True


def native_half_matmul(dtype, device_type="cpu"):
    """True when a ``dtype`` matmul on ``device_type`` should run as torch's own 16-bit kernel.

    False only for bfloat16/float16 on a CPU where torch's library has no fast 16-bit matmul (no
    AVX-512 for bfloat16, no AVX-512-FP16/AMX for float16; torch then falls back to a scalar loop, 30-50x
    slower than float32 on an AVX2 CPU). mpgraph's layers then multiply the exact float32 upcasts in
    float32 and round the result once (:func:`mpgraph.ops.dense.linear`): the same products a 16-bit
    matmul accumulating in float32 computes. The environment variable ``MPGRAPH_HALF_MATMUL`` overrides
    the choice: ``native`` always uses torch's kernel, ``fp32`` always the upcast.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.precision import native_half_matmul
    >>> native_half_matmul(torch.float32)
    True
    >>> native_half_matmul(torch.bfloat16, 'cuda')
    True
    """
    if dtype not in HALF_DTYPES or device_type != "cpu":
        return True
    mode = os.environ.get(HALF_MATMUL_ENV, "auto").strip().lower() or "auto"
    if mode not in _HALF_MATMUL_CHOICES:
        raise ValueError(f"{HALF_MATMUL_ENV} must be one of {_HALF_MATMUL_CHOICES}, got {mode!r}; "
                         f"unset it for the default ('auto')")
    if mode != "auto":
        return mode == "native"
    if dtype not in _native_cache:
        _native_cache[dtype] = _cpu_half_matmul_supported(dtype)
    return _native_cache[dtype]


# ---------------------------------------------------------------------------
# Whole-graph feature casts (DGL's dgl.to_half & co.)
# ---------------------------------------------------------------------------
def _cast_graph(g, dtype):
    from ._index import GraphLike
    if not isinstance(g, GraphLike):
        raise DGLTypeError(f"expected an mpgraph graph, got {type(g).__name__}")
    return g._astype_float(dtype)


def to_half(g):
    """Copy of ``g`` whose floating-point node and edge features are float16.

    Structure and non-float features are shared with ``g``; ``g`` is unchanged.

    Examples
    --------
    >>> import torch, mpgraph as dgl
    >>> g = dgl.graph(([0], [1]))
    >>> g.ndata['h'] = torch.ones(2, 3)
    >>> dgl.to_half(g).ndata['h'].dtype
    torch.float16
    """
    return _cast_graph(g, torch.float16)


def to_bfloat16(g):
    """Copy of ``g`` whose floating-point node and edge features are bfloat16."""
    return _cast_graph(g, torch.bfloat16)


def to_float(g):
    """Copy of ``g`` whose floating-point node and edge features are float32."""
    return _cast_graph(g, torch.float32)


def to_double(g):
    """Copy of ``g`` whose floating-point node and edge features are float64."""
    return _cast_graph(g, torch.float64)
