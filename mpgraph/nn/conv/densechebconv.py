"""Chebyshev spectral graph convolution on a dense adjacency matrix."""

import torch
from torch import nn

from ...ops import dense
from ..utils import as_dtype, check_node_feat, compute_dtype
from .densegraphconv import check_adj

__all__ = ["DenseChebConv"]


class DenseChebConv(nn.Module):
    r"""Chebyshev spectral graph convolution (as :class:`ChebConv`) on a dense adjacency matrix.

    .. math::

        h = \sum_{k=0}^{K-1} Z^{k} X W^{k} + b, \qquad Z^0 = I, \quad Z^1 = \hat{L}, \quad
        Z^k = 2 \hat{L} Z^{k-1} - Z^{k-2}

        \hat{L} = \frac{2}{\lambda_{max}}\left(I - D^{-1/2} A D^{-1/2}\right) - I

    with :math:`D` the row sums of ``adj`` clamped to at least 1 and
    :math:`\lambda_{max}` the largest eigenvalue of the normalised Laplacian
    (computed when not given). The polynomials :math:`Z^k` are built in float32
    (float64 for float64).

    Parameters
    ----------
    in_feats : int
        Input feature size.
    out_feats : int
        Output feature size.
    k : int
        Chebyshev filter size :math:`K`.
    bias : bool, default True
        Add a bias.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.nn import DenseChebConv
    >>> adj = torch.tensor([[0., 1., 1.], [1., 0., 1.], [1., 1., 0.]])
    >>> DenseChebConv(4, 2, k=3)(adj, torch.ones(3, 4)).shape
    torch.Size([3, 2])
    """

    def __init__(self, in_feats, out_feats, k, bias=True):
        super().__init__()
        self._in_feats = in_feats
        self._out_feats = out_feats
        self._k = k
        self.W = nn.Parameter(torch.empty(k, in_feats, out_feats))
        if bias:
            self.bias = nn.Parameter(torch.empty(out_feats))
        else:
            self.register_buffer("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Reinitialise: Xavier-normal (ReLU gain) weights, zero bias."""
        if self.bias is not None:
            nn.init.zeros_(self.bias)
        for i in range(self._k):
            nn.init.xavier_normal_(self.W[i], gain=nn.init.calculate_gain("relu"))

    def forward(self, adj, feat, lambda_max=None):
        """Compute: ``adj (N, N)``, ``feat (N, in_feats)`` -> ``(N, out_feats)``.

        ``lambda_max`` (a float or 0-d tensor) defaults to the largest eigenvalue of
        the normalised Laplacian.
        """
        check_node_feat("DenseChebConv", "feat", feat, self._in_feats)
        check_adj("DenseChebConv", adj, feat.shape[0])
        dtype = compute_dtype(feat)
        acc = torch.float64 if feat.dtype == torch.float64 else torch.float32
        A = adj.to(acc)
        N = A.shape[0]
        d_invsqrt = A.sum(dim=1).clamp(min=1).pow(-0.5)
        eye = torch.eye(N, dtype=acc, device=A.device)
        L = eye - d_invsqrt.unsqueeze(1) * A * d_invsqrt.unsqueeze(0)
        if lambda_max is None:
            lambda_max = torch.linalg.eigvals(L).real.max()
        L_hat = 2 * L / lambda_max - eye
        Z = [eye]
        for i in range(1, self._k):
            Z.append(L_hat if i == 1 else 2 * dense.matmul(L_hat, Z[-1]) - Z[-2])
        Zs = torch.stack(Z, 0).to(feat.dtype)                                  # (K, N, N)
        Zh = torch.matmul(torch.matmul(Zs, feat.unsqueeze(0)), self.W).sum(0)  # (N, out)
        if self.bias is not None:
            Zh = Zh + self.bias
        return as_dtype(Zh, dtype)
