"""EdgeConv (dynamic graph CNN)."""

from torch import nn

from ... import ops
from ..utils import as_dtype, check_src_dst, check_zero_in_degree, compute_dtype, expand_as_pair, project

__all__ = ["EdgeConv"]


class EdgeConv(nn.Module):
    r"""EdgeConv from `Dynamic Graph CNN for Learning on Point Clouds <https://arxiv.org/pdf/1801.07829>`__.

    .. math::

        h_i^{(l+1)} = \max_{j \in \mathcal{N}(i)}
        \left(\Theta \cdot (h_i^{(l)} - h_j^{(l)}) + \Phi \cdot h_i^{(l)}\right)

    for each edge :math:`j \to i` (:math:`i` the destination), as DGL computes
    it. With ``batch_norm`` the per-edge values go through a ``BatchNorm1d``
    before the max. Nodes without in-edges get 0.

    Parameters
    ----------
    in_feat : int
        Input feature size.
    out_feat : int
        Output feature size.
    batch_norm : bool, default False
        Batch-normalise the edge values.
    allow_zero_in_degree : bool, default False
        Skip the 0-in-degree check.

    Examples
    --------
    >>> import torch
    >>> import mpgraph as dgl
    >>> from mpgraph.nn import EdgeConv
    >>> g = dgl.graph(([0, 1, 2, 3, 2, 5] + list(range(6)), [1, 2, 3, 4, 0, 3] + list(range(6))))
    >>> EdgeConv(10, 2)(g, torch.ones(6, 10)).shape
    torch.Size([6, 2])
    """

    def __init__(self, in_feat, out_feat, batch_norm=False, allow_zero_in_degree=False):
        super().__init__()
        self.batch_norm = batch_norm
        self._in_feat = in_feat
        self._allow_zero_in_degree = allow_zero_in_degree
        self.theta = nn.Linear(in_feat, out_feat)
        self.phi = nn.Linear(in_feat, out_feat)
        if batch_norm:
            self.bn = nn.BatchNorm1d(out_feat)

    def reset_parameters(self):
        """Reinitialise the two linear maps (PyTorch's default init) and the batch norm."""
        self.theta.reset_parameters()
        self.phi.reset_parameters()
        if self.batch_norm:
            self.bn.reset_parameters()

    def set_allow_zero_in_degree(self, set_value):
        """Set the ``allow_zero_in_degree`` flag."""
        self._allow_zero_in_degree = set_value

    def forward(self, g, feat):
        """Compute EdgeConv: ``(N, in_feat)`` (or a pair) -> ``(N_dst, out_feat)``.

        Raises
        ------
        DGLError
            0-in-degree nodes (unless allowed); wrong feature width or row count.
        """
        check_zero_in_degree(g, self._allow_zero_in_degree)
        h_src, h_dst = expand_as_pair(feat, g)
        check_src_dst("EdgeConv", g, h_src, h_dst, self._in_feat, self._in_feat)
        dtype = compute_dtype(h_src)
        theta = project(self.theta, ops.v_sub_u(g, h_dst, h_src))           # (E, out)
        phi = project(self.phi, h_dst)                                      # (N_dst, out)
        e = ops.e_add_v(g, theta, phi)                                      # (E, out)
        if self.batch_norm:
            e = self.bn(e)
        rst = ops.copy_e_max(g, e)
        return as_dtype(rst, dtype)
