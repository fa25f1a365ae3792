"""Linear maps: DGL's type-dependent ``TypedLinear``, and :class:`Linear`, ``torch.nn.Linear`` with mpgraph's
float32 route for 16-bit features on CPUs without fast 16-bit matmuls."""

import math

import torch
from torch import nn

from ..base import DGLError
from ..ops import dense
from .utils import check_float_tensor

__all__ = ["Linear", "TypedLinear"]


class Linear(nn.Linear):
    r""":class:`torch.nn.Linear` (the same parameters, state dict and initialisation) whose product is
    :func:`mpgraph.ops.dense.linear`: on a CPU where torch's 16-bit matmul is slow, 16-bit inputs are
    multiplied as float32 upcasts and rounded once; everywhere else it is ``torch.nn.Linear`` itself.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.nn import Linear
    >>> fc = Linear(4, 2).to(torch.bfloat16)
    >>> fc(torch.ones(3, 4, dtype=torch.bfloat16)).dtype
    torch.bfloat16
    """

    def forward(self, x):
        return dense.linear(x, self.weight, self.bias)


class TypedLinear(nn.Module):
    r"""Linear map whose weight depends on the type of each input row.

    .. math::

        y_i = x_i W_{t_i}

    With ``regularizer='basis'`` the weights are combinations of ``num_bases`` bases,
    :math:`W_t = \sum_b a_{tb} V_b`; with ``'bdd'`` each :math:`W_t` is block
    diagonal with ``num_bases`` blocks of size
    ``(in_size / num_bases, out_size / num_bases)`` (both from
    `Modeling Relational Data with Graph Convolutional Networks
    <https://arxiv.org/abs/1703.06103>`__). Rows are grouped by type (a stable sort
    unless ``sorted_by_type``) and each group is one matrix multiplication.

    Parameters
    ----------
    in_size : int
        Input feature size.
    out_size : int
        Output feature size.
    num_types : int
        Number of types.
    regularizer : str, optional
        None, ``'basis'`` or ``'bdd'``.
    num_bases : int, optional
        Number of bases (``'basis'``) or blocks (``'bdd'``); required with a regularizer.

    Raises
    ------
    DGLError
        Unknown regularizer; missing ``num_bases``; sizes not divisible by ``num_bases`` (``'bdd'``).

    Examples
    --------
    >>> import torch
    >>> from mpgraph.nn import TypedLinear
    >>> layer = TypedLinear(4, 6, num_types=3, regularizer='bdd', num_bases=2)
    >>> layer(torch.ones(5, 4), torch.tensor([0, 2, 1, 1, 0])).shape
    torch.Size([5, 6])
    """

    def __init__(self, in_size, out_size, num_types, regularizer=None, num_bases=None):
        super().__init__()
        self.in_size = in_size
        self.out_size = out_size
        self.num_types = num_types
        self.regularizer = regularizer
        self.num_bases = num_bases
        if regularizer is None:
            self.W = nn.Parameter(torch.empty(num_types, in_size, out_size))
        elif regularizer == "basis":
            if num_bases is None:
                raise DGLError("TypedLinear: regularizer='basis' needs num_bases, got None")
            self.W = nn.Parameter(torch.empty(num_bases, in_size, out_size))
            self.coeff = nn.Parameter(torch.empty(num_types, num_bases))
        elif regularizer == "bdd":
            if num_bases is None:
                raise DGLError("TypedLinear: regularizer='bdd' needs num_bases, got None")
            if in_size % num_bases != 0 or out_size % num_bases != 0:
                raise DGLError(f"TypedLinear: with regularizer='bdd' in_size and out_size must be divisible by "
                               f"num_bases, got in_size={in_size}, out_size={out_size}, num_bases={num_bases}")
            self.submat_in = in_size // num_bases
            self.submat_out = out_size // num_bases
            self.W = nn.Parameter(torch.empty(num_types, num_bases * self.submat_in * self.submat_out))
        else:
            raise DGLError(f"TypedLinear: expected regularizer None, 'basis' or 'bdd', got {regularizer!r}")
        self.reset_parameters()

    def reset_parameters(self):
        """Reinitialise: uniform weights in :math:`\\pm 1/\\sqrt{fan_{in}}`, Xavier-uniform basis coefficients."""
        with torch.no_grad():
            if self.regularizer == "bdd":
                bound = 1 / math.sqrt(self.submat_in)
            else:
                bound = 1 / math.sqrt(self.in_size)
            nn.init.uniform_(self.W, -bound, bound)
            if self.regularizer == "basis":
                nn.init.xavier_uniform_(self.coeff, gain=nn.init.calculate_gain("relu"))

    def get_weight(self):
        """The per-type weights: ``(T, in, out)``, or ``(T, num_bases, in/nb, out/nb)`` for ``'bdd'``."""
        if self.regularizer == "basis":
            W = torch.matmul(self.coeff, self.W.view(self.num_bases, -1))
            return W.view(self.num_types, self.in_size, self.out_size)
        if self.regularizer == "bdd":
            return self.W.view(self.num_types, self.num_bases, self.submat_in, self.submat_out)
        return self.W

    def _typed_matmul(self, x, W, t):
        if self.regularizer == "bdd":
            xb = x.view(-1, self.num_bases, self.submat_in).transpose(0, 1)       # (nb, n, in/nb)
            return torch.bmm(xb, W[t]).transpose(0, 1).reshape(-1, self.out_size)
        return dense.matmul(x, W[t])

    def forward(self, x, x_type, sorted_by_type=False):
        """Apply the map of type ``x_type[i]`` to row ``x[i]``.

        Parameters
        ----------
        x : torch.Tensor
            ``(N, in_size)``.
        x_type : torch.Tensor
            ``(N,)`` integer types in ``[0, num_types)``.
        sorted_by_type : bool, default False
            ``x`` is already grouped by increasing type (skips the sort).

        Returns
        -------
        torch.Tensor
            ``(N, out_size)``.
        """
        check_float_tensor("TypedLinear", "x", x)
        if x.dim() != 2 or x.shape[1] != self.in_size:
            raise DGLError(f"TypedLinear: expected x of shape (N, {self.in_size}), got {tuple(x.shape)}")
        x_type = torch.as_tensor(x_type, device=x.device).reshape(-1)
        if x_type.is_floating_point() or x_type.numel() != x.shape[0]:
            raise DGLError(f"TypedLinear: expected x_type as ({x.shape[0]},) integers, got {x_type.dtype} of "
                           f"shape {tuple(x_type.shape)}")
        x_type = x_type.to(torch.int64)
        if x_type.numel() and (int(x_type.min()) < 0 or int(x_type.max()) >= self.num_types):
            raise DGLError(f"TypedLinear: expected types in [0, {self.num_types}), got values in "
                           f"[{int(x_type.min())}, {int(x_type.max())}]")
        W = self.get_weight()
        if sorted_by_type:
            perm = None
            xs = x
        else:
            perm = torch.sort(x_type, stable=True).indices
            xs = x.index_select(0, perm)
        counts = torch.bincount(x_type, minlength=self.num_types).tolist()
        outs = [self._typed_matmul(part, W, t) for t, part in enumerate(torch.split(xs, counts)) if part.shape[0]]
        if not outs:
            return self._typed_matmul(x, W, 0)
        y = torch.cat(outs)
        if perm is None:
            return y
        return torch.empty_like(y).index_copy(0, perm, y)

    def extra_repr(self):
        return (f"in_size={self.in_size}, out_size={self.out_size}, num_types={self.num_types}, "
                f"regularizer={self.regularizer}, num_bases={self.num_bases}")
