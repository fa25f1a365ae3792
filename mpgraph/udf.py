"""User-defined-function batches: :class:`EdgeBatch`, :class:`NodeBatch`, degree bucketing.

A message UDF receives an :class:`EdgeBatch` and returns a dict of edge tensors;
a reduce UDF receives a :class:`NodeBatch` whose ``mailbox`` holds, for a bucket
of destination nodes with the same in-degree ``deg``, messages of shape
``(B, deg, *)``; an apply UDF receives a :class:`NodeBatch` without mailbox.
"""

from collections.abc import Mapping

import torch

from .base import DGLError, DGLTypeError

__all__ = ["EdgeBatch", "NodeBatch", "LazyRows", "run_node_udf", "degree_buckets"]


class LazyRows(Mapping):
    """Read-only mapping that gathers ``frame[key][rows]`` on first access."""

    def __init__(self, frame, rows):
        self._frame = frame
        self._rows = rows
        self._done = {}

    def __getitem__(self, key):
        value = self._done.get(key)
        if value is None:
            column = self._frame[key]
            value = column if self._rows is None else column[self._rows]
            self._done[key] = value
        return value

    def __iter__(self):
        return iter(self._frame)

    def __len__(self):
        return len(self._frame)

    def __contains__(self, key):
        return key in self._frame


class EdgeBatch:
    """A batch of edges given to message and edge UDFs.

    Attributes
    ----------
    src : Mapping[str, Tensor]
        Source node features, one row per edge: ``(B, *)``.
    dst : Mapping[str, Tensor]
        Destination node features, one row per edge: ``(B, *)``.
    data : Mapping[str, Tensor]
        Edge features ``(B, *)``.
    """

    def __init__(self, src_frame, dst_frame, edge_frame, u, v, eid, all_edges=False):
        self._u, self._v, self._eid = u, v, eid
        self.src = LazyRows(src_frame, u)
        self.dst = LazyRows(dst_frame, v)
        self.data = LazyRows(edge_frame, None if all_edges else eid)

    def edges(self):
        """Return ``(src, dst, eid)`` of the edges in the batch."""
        return self._u, self._v, self._eid

    def batch_size(self):
        """Number of edges in the batch."""
        return self._eid.numel()

    def __len__(self):
        return self.batch_size()


class NodeBatch:
    """A batch of nodes given to reduce and apply UDFs.

    Attributes
    ----------
    data : Mapping[str, Tensor]
        Node features ``(B, *)``.
    mailbox : Mapping[str, Tensor] or None
        Incoming messages ``(B, deg, *)`` for reduce UDFs (``None`` for apply).
    """

    def __init__(self, frame, nodes, mailbox=None, all_nodes=False):
        self._nodes = nodes
        self.data = LazyRows(frame, None if all_nodes else nodes)
        self.mailbox = mailbox

    def nodes(self):
        """IDs of the nodes in the batch."""
        return self._nodes

    def batch_size(self):
        """Number of nodes in the batch."""
        return self._nodes.numel()

    def __len__(self):
        return self.batch_size()


def check_udf_output(result, num_rows, what):
    """Validate what a UDF returned: a dict of tensors with ``num_rows`` rows."""
    if result is None:
        return {}
    if not isinstance(result, Mapping):
        raise DGLTypeError(f"expected the {what} UDF to return a dict of tensors, got {type(result).__name__}")
    for key, value in result.items():
        if not isinstance(value, torch.Tensor):
            raise DGLTypeError(f"expected the {what} UDF to return tensors, got {type(value).__name__} "
                               f"for {key!r}")
        if value.dim() == 0 or value.shape[0] != num_rows:
            raise DGLError(f"expected the {what} UDF's output {key!r} to have {num_rows} rows (one per item "
                           f"in the batch), got shape {tuple(value.shape)}")
    return dict(result)


def degree_buckets(indptr):
    """Group destination rows by in-degree.

    Returns a list of ``(deg, nodes)`` with ``deg > 0`` and ``nodes`` (int64) the
    rows whose degree is ``deg``, in increasing node order.
    """
    deg = indptr[1:] - indptr[:-1]
    if deg.numel() == 0:
        return []
    values, inverse = torch.unique(deg, return_inverse=True)
    order = torch.argsort(inverse, stable=True)
    counts = torch.bincount(inverse, minlength=values.numel())
    buckets = []
    start = 0
    for d, c in zip(values.tolist(), counts.tolist()):
        if d > 0:
            buckets.append((d, order[start:start + c]))
        start += c
    return buckets


def run_node_udf(reduce_func, dst_frame, indptr, messages, num_dst, msg_order):
    """Run a reduce UDF with degree bucketing.

    Parameters
    ----------
    reduce_func : callable
        ``reduce_func(NodeBatch) -> dict``.
    dst_frame : Frame
        Destination node features (``nodes.data``).
    indptr : Tensor
        ``(N_dst + 1,)`` row pointer of in-edges.
    messages : dict[str, Tensor]
        Messages ``(E, *)`` in edge-ID order.
    msg_order : Tensor
        ``(E,)`` edge ID of each in-edge slot (CSC order).

    Returns
    -------
    (Tensor, dict[str, Tensor])
        Nodes that received messages (int64) and, per output name, their values.
    """
    outputs = {}
    node_parts = []
    device = indptr.device
    for deg, nodes in degree_buckets(indptr):
        pos = indptr[nodes].unsqueeze(1) + torch.arange(deg, device=device)  # [B, deg]
        eids = msg_order[pos]
        mailbox = {k: m[eids] for k, m in messages.items()}
        batch = NodeBatch(dst_frame, nodes, mailbox)
        res = check_udf_output(reduce_func(batch), nodes.numel(), "reduce")
        node_parts.append(nodes)
        for k, v in res.items():
            outputs.setdefault(k, []).append(v)
    if not node_parts:
        return torch.zeros(0, dtype=torch.int64, device=device), {}
    nodes = torch.cat(node_parts)
    for k, parts in outputs.items():
        if len(parts) != len(node_parts):
            raise DGLError(f"the reduce UDF returned {k!r} for some degree buckets but not others; "
                           "return the same keys for every batch")
        outputs[k] = torch.cat([p.to(torch.result_type(parts[0], p)) if p.dtype != parts[0].dtype else p
                                for p in parts])
    return nodes, outputs
