"""Dense linear maps of 16-bit features on CPUs whose torch has no fast 16-bit matmul.

On a CPU without AVX-512 (an AVX2-only AMD EPYC, say), torch's bfloat16 and float16 matmuls fall back to a
scalar loop: a 2708 x 1433 by 1433 x 64 product took 241 ms in bfloat16 and 237 ms in float16 against 4.8 ms
in float32 (2 threads). Converting a 16-bit number to float32 is exact, so multiplying the float32 upcasts in
float32 and rounding the result once computes what a 16-bit matmul that accumulates in float32 computes, at
float32 speed (8.4 ms for the product above, conversions included). The layers of :mod:`mpgraph.nn` call
:func:`linear` and :func:`matmul` for their projections: they are :func:`torch.nn.functional.linear` and
:func:`torch.matmul` everywhere except there (the route is chosen in :mod:`mpgraph.ops._dispatch`, by
:func:`~mpgraph.ops._dispatch.dense_upcast_dtype` from :func:`mpgraph.precision.native_half_matmul`; the
environment variable ``MPGRAPH_HALF_MATMUL`` overrides it).

The upcasts are made in row blocks (:data:`BLOCK_ELEMENTS` elements at a time), so the float32 copies never
exceed a few MiB; the backward keeps the 16-bit operands, not float32 copies. Under CPU autocast the operands
are first rounded to the autocast dtype, as autocast does, and the result has that dtype.
"""

import torch
from torch.nn import functional as F

from . import _dispatch

__all__ = ["linear", "matmul", "upcasts", "BLOCK_ELEMENTS"]

#: elements of a float32 row block made from 16-bit rows at a time (4 MiB of float32)
BLOCK_ELEMENTS = 1 << 20


def upcasts(x, weight, bias=None):
    """True when :func:`linear` of these operands takes the float32 route (16-bit product on a CPU whose
    torch has no fast kernel for it), False when it is torch's own."""
    return _dispatch.dense_upcast_dtype(x, weight, bias) is not None


def _rows(n_rows, width):
    """Row block size: float32 blocks of about :data:`BLOCK_ELEMENTS` elements."""
    return max(1, min(n_rows, BLOCK_ELEMENTS // max(1, width)))


def _blocked_product(a, b32, out_dtype, bias32=None):
    """``(a.float() @ b32 + bias32)`` rounded to ``out_dtype``, ``a`` (R, K) upcast a row block at a time."""
    R = a.shape[0]
    step = _rows(R, a.shape[1])
    if torch.is_grad_enabled() and (a.requires_grad or b32.requires_grad):
        # recorded (a double backward): differentiable pieces, joined by cat
        parts = []
        for s in range(0, R, step):
            p = a[s:s + step].float() @ b32
            parts.append((p if bias32 is None else p + bias32).to(out_dtype))
        return torch.cat(parts) if len(parts) > 1 else parts[0]
    out = torch.empty((R, b32.shape[1]), dtype=out_dtype, device=a.device)
    for s in range(0, R, step):
        p = a[s:s + step].float() @ b32
        if bias32 is not None:
            p += bias32
        out[s:s + step] = p
    return out


class _UpcastLinear(torch.autograd.Function):
    """``x @ w.T + b`` for 16-bit ``x``, ``w``, ``b`` of one dtype, computed in float32 and rounded once."""

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        ctx.has_bias = b is not None
        with torch.autocast("cpu", enabled=False):
            x2 = x.reshape(-1, x.shape[-1])
            out = _blocked_product(x2, w.float().t(), x.dtype, None if b is None else b.float())
        return out.reshape(*x.shape[:-1], w.shape[0])

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        gx = gw = gb = None
        with torch.autocast("cpu", enabled=False):
            g2 = grad.reshape(-1, grad.shape[-1])
            if ctx.needs_input_grad[0]:
                gx = _blocked_product(g2, w.float(), x.dtype).reshape(x.shape)
            if ctx.needs_input_grad[1]:
                # sum over row blocks of g^T x, accumulated in float32
                x2 = x.reshape(-1, x.shape[-1])
                step = _rows(x2.shape[0], max(x2.shape[1], g2.shape[1]))
                acc = None
                for s in range(0, x2.shape[0], step):
                    p = g2[s:s + step].float().t() @ x2[s:s + step].float()
                    acc = p if acc is None else acc + p
                gw = (acc if acc is not None else w.new_zeros(w.shape, dtype=torch.float32)).to(w.dtype)
            if ctx.has_bias and ctx.needs_input_grad[2]:
                gb = g2.sum(0, dtype=torch.float32).to(w.dtype)
        return gx, gw, gb


def linear(x, weight, bias=None):
    r"""``x @ weight.T + bias``, the contract of :func:`torch.nn.functional.linear`.

    On a CPU where :func:`mpgraph.precision.native_half_matmul` is False for the dtype the product runs in
    (``x``'s 16-bit dtype, or the CPU autocast dtype), the float32 upcasts are multiplied in float32 and the
    result is rounded once to that dtype; elsewhere this is :func:`torch.nn.functional.linear` itself.
    Differentiable (also twice).

    Parameters
    ----------
    x : torch.Tensor
        ``(*, in)``.
    weight : torch.Tensor
        ``(out, in)``.
    bias : torch.Tensor, optional
        ``(out,)``.

    Returns
    -------
    torch.Tensor
        ``(*, out)``.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.ops.dense import linear
    >>> x, w = torch.ones(2, 3, dtype=torch.bfloat16), torch.ones(4, 3, dtype=torch.bfloat16)
    >>> linear(x, w)
    tensor([[3., 3., 3., 3.],
            [3., 3., 3., 3.]], dtype=torch.bfloat16)
    """
    dtype = _dispatch.dense_upcast_dtype(x, weight, bias)
    if dtype is None or weight.dim() != 2 or x.shape[-1] != weight.shape[1] \
            or (bias is not None and tuple(bias.shape) != (weight.shape[0],)):
        return F.linear(x, weight, bias)        # not ours, or torch's own shape error
    return _upcast_linear(x, weight, bias, dtype)


def _upcast_linear(x, weight, bias, dtype):
    """The float32 route for operands already checked: rounded to ``dtype`` (autocast's rounding), then
    :class:`_UpcastLinear`."""
    x, weight, bias = (None if t is None else t.to(dtype) for t in (x, weight, bias))
    return _UpcastLinear.apply(x, weight, bias)


def matmul(x, weight):
    r"""``x @ weight`` for a 2-D ``weight`` ``(in, out)``: :func:`torch.matmul`, with :func:`linear`'s
    float32 route for 16-bit operands on CPUs without a fast 16-bit matmul.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.ops.dense import matmul
    >>> matmul(torch.ones(2, 3, dtype=torch.float16), torch.ones(3, 1, dtype=torch.float16))
    tensor([[3.],
            [3.]], dtype=torch.float16)
    """
    dtype = None if weight.dim() != 2 or x.dim() < 2 else _dispatch.dense_upcast_dtype(x, weight)
    if dtype is None or x.shape[-1] != weight.shape[0]:
        return torch.matmul(x, weight)          # not ours, or torch's own shape error
    return _upcast_linear(x, weight.t(), None, dtype)
