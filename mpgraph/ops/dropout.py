"""Dropout whose mask is a function of a seed: recomputed in the backward, not stored."""

import torch

from ..base import DGLError
from ..precision import check_float_feature
from . import _dispatch

__all__ = ["dropout"]

#: seeds are drawn below this bound from torch's default generator (so ``torch.manual_seed`` fixes them)
_SEED_BOUND = 2 ** 63 - 1


def dropout(x, p=0.5, training=True):
    r"""Zero each element of ``x`` with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    .. math::

        y_i = \frac{m_i\, x_i}{1 - p}, \qquad m_i \sim \mathrm{Bernoulli}(1 - p)

    The same contract as :func:`torch.nn.functional.dropout` (not in place). On the CPU the mask comes
    from a hash of a seed and the element's flat index (mpgraph's Numba kernel): one pass over ``x``,
    in float32 (float64 for float64) with one rounding, and no mask kept for the backward, which
    recomputes it from the seed. torch's CPU dropout draws every element from one generator on one
    thread, and keeps a mask of ``x``'s size until the backward. The seed is drawn from torch's default
    generator, so :func:`torch.manual_seed` makes runs repeatable. Elsewhere (CUDA) this is
    ``torch.native_dropout``. A NaN in ``x`` stays NaN where the element is dropped, as in torch.

    Parameters
    ----------
    x : torch.Tensor
        Any shape; float16, bfloat16, float32 or float64.
    p : float, default 0.5
        Probability that an element is zeroed, ``0 <= p <= 1``.
    training : bool, default True
        When False, ``x`` is returned as it is.

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``x``; ``x`` itself when not training, when ``p == 0`` or when ``x`` is
        empty. Differentiable.

    Raises
    ------
    DGLError
        ``p`` is not a number in ``[0, 1]``.
    DGLTypeError
        ``x`` is not a floating-point tensor.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.ops import dropout
    >>> x = torch.ones(2, 4)
    >>> y = dropout(x, 0.5)
    >>> sorted(set(y.flatten().tolist())) in ([0.0, 2.0], [0.0], [2.0])
    True
    >>> torch.equal(dropout(x, 0.5, training=False), x)
    True
    """
    check_float_feature("x", x)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= float(p) <= 1.0:
        raise DGLError(f"dropout: expected a probability p in [0, 1], got {p!r}")
    p = float(p)
    if not training or p == 0.0 or x.numel() == 0:
        return x
    if p == 1.0:
        return x * 0.0
    seed = int(torch.randint(0, _SEED_BOUND, ()).item())
    return _Dropout.apply(x, p, seed)


class _Dropout(torch.autograd.Function):
    """``y = x * mask / (1 - p)`` with the mask of ``seed`` (or the torch backend's own)."""

    @staticmethod
    def forward(ctx, x, p, seed):
        y, ctx.state = _dispatch.dropout(x, p, seed)
        ctx.p, ctx.seed = p, seed
        return y

    @staticmethod
    def backward(ctx, grad):
        return _Mask.apply(grad, ctx.state, ctx.p, ctx.seed), None, None


class _Mask(torch.autograd.Function):
    """The forward's mask and scale applied to a gradient. Linear and diagonal, so its own gradient is itself
    (double backward works)."""

    @staticmethod
    def forward(ctx, grad, state, p, seed):
        ctx.state, ctx.p, ctx.seed = state, p, seed
        return _dispatch.dropout_backward(state, grad, p, seed)

    @staticmethod
    def backward(ctx, gg):
        return _Mask.apply(gg, ctx.state, ctx.p, ctx.seed), None, None, None
