"""Chebyshev spectral graph convolution."""

import warnings

import torch
import torch.nn.functional as F
from torch import nn

from ...base import DGLError
from ..utils import (as_dtype, broadcast_nodes, check_node_feat, compute_dtype, degree_norm, norm_dtype, project,
                     propagate_sym)

__all__ = ["ChebConv"]


class ChebConv(nn.Module):
    r"""Chebyshev spectral graph convolution from `Convolutional Neural Networks on Graphs with Fast
    Localized Spectral Filtering <https://arxiv.org/pdf/1606.09375.pdf>`__.

    .. math::

        h_i^{l+1} = \sum_{k=0}^{K-1} W^{k, l} z_i^{k, l}, \qquad
        Z^{0, l} = H^{l}, \quad Z^{1, l} = \tilde{L} H^{l}, \quad
        Z^{k, l} = 2 \tilde{L} Z^{k-1, l} - Z^{k-2, l}

        \tilde{L} = \frac{2}{\lambda_{max}}\left(I - D^{-1/2} A D^{-1/2}\right) - I

    with :math:`D` the in-degrees clamped to at least 1 and :math:`\lambda_{max}`
    the largest eigenvalue of the normalised Laplacian of each graph of the
    batch. The recurrences run in float32 for half features (one rounding per
    term).

    Parameters
    ----------
    in_feats : int
        Input feature size.
    out_feats : int
        Output feature size.
    k : int
        Chebyshev filter size :math:`K`.
    activation : callable, default ``F.relu``
        Applied to the output.
    bias : bool, default True
        Bias in the linear layer.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import ChebConv
    >>> g = dgl.graph(([0, 1, 2, 3, 2, 5], [1, 2, 3, 4, 0, 3]))
    >>> ChebConv(10, 2, 3)(g, torch.ones(6, 10), lambda_max=[2.0]).shape
    torch.Size([6, 2])
    """

    def __init__(self, in_feats, out_feats, k, activation=F.relu, bias=True):
        super().__init__()
        if k < 1:
            raise DGLError(f"ChebConv: expected a filter size k >= 1, got {k}")
        self._k = k
        self._in_feats = in_feats
        self._out_feats = out_feats
        self.activation = activation
        self.linear = nn.Linear(k * in_feats, out_feats, bias)

    def reset_parameters(self):
        """Reinitialise the linear layer (PyTorch's default ``nn.Linear`` initialisation)."""
        self.linear.reset_parameters()

    def forward(self, graph, feat, lambda_max=None):
        r"""Compute ChebNet: ``(N, in_feats)`` -> ``(N, out_feats)``.

        Parameters
        ----------
        graph : Graph
            The graph (possibly a batch).
        feat : torch.Tensor
            ``(N, in_feats)``.
        lambda_max : list or torch.Tensor, optional
            ``(B,)`` largest eigenvalue of each graph's normalised Laplacian. Default:
            2 for every graph (an upper bound), with a warning, as in DGL.

        Raises
        ------
        DGLError
            Wrong feature width or row count; ``lambda_max`` not one value per graph.
        """
        check_node_feat("ChebConv", "feat", feat, self._in_feats, graph.num_nodes(), "nodes")
        dtype = compute_dtype(feat)
        acc = norm_dtype(feat)
        norm = degree_norm(graph, "in", -0.5, acc)
        B = graph.batch_size
        if lambda_max is None:
            warnings.warn("ChebConv: lambda_max is not provided, using the default value of 2; compute it with "
                          "the largest eigenvalue of each graph's normalized Laplacian", stacklevel=2)
            lambda_max = [2.0] * B
        lambda_max = torch.as_tensor(lambda_max, dtype=acc, device=feat.device).reshape(-1)
        if lambda_max.numel() != B:
            raise DGLError(f"ChebConv: expected lambda_max with one value per graph ({B}), got "
                           f"{lambda_max.numel()} values")
        re_norm = (2.0 / broadcast_nodes(graph, lambda_max)).unsqueeze(-1)         # (N, 1)

        def lap(x):  # L x with L = D^-1/2 A D^-1/2, in the accumulation dtype
            return propagate_sym(graph, x, norm, norm).to(acc)

        X_0 = feat
        Xt = [X_0]
        if self._k > 1:
            X_1 = (-re_norm * lap(X_0) + X_0.to(acc) * (re_norm - 1)).to(X_0.dtype)
            Xt.append(X_1)
            for _ in range(2, self._k):
                X_i = (-2 * re_norm * lap(X_1) + X_1.to(acc) * 2 * (re_norm - 1) - X_0.to(acc)).to(X_0.dtype)
                Xt.append(X_i)
                X_1, X_0 = X_i, X_1
        h = project(self.linear, torch.cat(Xt, dim=1))
        if self.activation is not None:
            h = self.activation(h)
        return as_dtype(h, dtype)

    def extra_repr(self):
        return f"in={self._in_feats}, out={self._out_feats}, k={self._k}"
