"""Helpers shared by the nn layers, and DGL's :class:`JumpingKnowledge`.

Layers are functional inside: they read the structure through
:func:`mpgraph._index.as_index`, call :mod:`mpgraph.ops`, and never write into
the user's frames. The helpers here hold the pieces every layer repeats:

* input checks that raise :class:`~mpgraph.base.DGLError` saying what was
  expected, what came, and how to fix it;
* the zero-in-degree check with DGL's message (cached on the graph structure);
* degree normalisers kept in float32 (float64 for float64 features) and applied
  to half-precision features with a single rounding (:func:`scale_rows`);
* per-graph readout helpers on batched graphs (``graph.batch_num_nodes()``);
* the layers' projections (:func:`project`; bare weights go through :func:`mpgraph.ops.dense.matmul`):
  16-bit products on a CPU whose torch has no fast 16-bit matmul run as float32 products of the exact
  upcasts (:mod:`mpgraph.ops.dense`).
"""

import torch
from torch import nn

from .._index import as_index
from ..base import DGLError, DGLTypeError
from .. import ops
from ..ops import dense
from ..precision import accum_dtype, autocast_dtype, is_float_dtype, rowwise_scale

__all__ = [
    "expand_as_pair",
    "JumpingKnowledge",
    "Identity",
    "Dropout",
]

ZERO_IN_DEGREE_MESSAGE = (
    "There are 0-in-degree nodes in the graph, output for those nodes will be invalid. "
    "This is harmful for some applications, causing silent performance regression. "
    "Adding self-loop on the input graph by calling `g = dgl.add_self_loop(g)` will resolve "
    "the issue. Setting ``allow_zero_in_degree`` to be `True` when constructing this module will "
    "suppress the check and let the code run."
)


class Dropout(nn.Dropout):
    """:class:`torch.nn.Dropout` that runs :func:`mpgraph.ops.dropout` (an mpgraph extension; DGL has none).

    The same module for everything that holds it: ``p``, ``inplace``, ``train()``/``eval()``, ``repr`` and
    ``isinstance(m, torch.nn.Dropout)`` behave as torch's. On the CPU the mask is a hash of a seed drawn
    from torch's generator, applied in one multi-threaded pass and recomputed in the backward instead of
    stored (torch's CPU dropout draws elements one by one on one thread: on a GAT's ``(E, H, 1)``
    attention it was most of a training step). mpgraph's layers use it for every dropout they hold.
    With ``inplace=True`` it is torch's in-place dropout.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.nn.utils import Dropout
    >>> drop = Dropout(0.25)
    >>> isinstance(drop, torch.nn.Dropout), drop.eval()(torch.ones(3)).tolist()
    (True, [1.0, 1.0, 1.0])
    """

    def forward(self, input):
        if self.inplace:
            return nn.functional.dropout(input, self.p, self.training, inplace=True)
        return ops.dropout(input, self.p, self.training)


class Identity(nn.Module):
    """A module that returns its input unchanged (DGL's ``dgl.nn.pytorch.utils.Identity``)."""

    def forward(self, x):
        return x


def expand_as_pair(input_, g=None):
    """Return ``(src, dst)`` views of a node input, as DGL's ``expand_as_pair``.

    Parameters
    ----------
    input_ : object or tuple
        A pair is returned unchanged. A single tensor on a block gives
        ``(input_, input_[:g.num_dst_nodes()])`` (a block's destination nodes
        are the first source nodes); otherwise ``(input_, input_)``.
    g : Graph, optional
        The graph the input belongs to.

    Examples
    --------
    >>> from mpgraph.nn.utils import expand_as_pair
    >>> expand_as_pair(4)
    (4, 4)
    >>> expand_as_pair((4, 6))
    (4, 6)
    """
    if isinstance(input_, (tuple, list)):
        if len(input_) != 2:
            raise DGLError(f"expected a (source, destination) pair, got a sequence of {len(input_)} items")
        return tuple(input_)
    if g is not None and g.is_block and isinstance(input_, torch.Tensor):
        return input_, input_[: g.num_dst_nodes()]
    return input_, input_


# ----------------------------------------------------------------------------- dtypes

def project(fc, x):
    """``fc(x)``; a plain :class:`torch.nn.Linear` without hooks whose product would hit torch's slow 16-bit
    CPU matmul runs as :func:`mpgraph.ops.dense.linear` instead (the same parameters, float32 products)."""
    if type(fc) is nn.Linear and not (fc._forward_hooks or fc._forward_pre_hooks) \
            and dense.upcasts(x, fc.weight, fc.bias):
        return dense.linear(x, fc.weight, fc.bias)
    return fc(x)


def compute_dtype(x):
    """Dtype a layer returns for input ``x``: the autocast dtype when autocast is on (not for float64)."""
    amp = autocast_dtype(x.device.type)
    if amp is not None and x.dtype != torch.float64:
        return amp
    return x.dtype


def norm_dtype(x):
    """Dtype of degree normalisers for features ``x``: float32, or float64 for float64 features."""
    return accum_dtype(x.dtype) if is_float_dtype(x.dtype) else torch.float32


# ----------------------------------------------------------------------------- checks

def check_float_tensor(layer, name, x):
    """Raise unless ``x`` is a floating-point tensor; the message names the layer and argument."""
    if not isinstance(x, torch.Tensor):
        raise DGLTypeError(f"{layer}: expected {name} to be a torch.Tensor, got {type(x).__name__}")
    if not is_float_dtype(x.dtype):
        raise DGLTypeError(f"{layer}: expected {name} to be a floating-point tensor, got {x.dtype}; "
                           f"cast it first, e.g. {name}.float()")


def check_node_feat(layer, name, x, width, num_rows=None, rows_name="nodes", width_name="in_feats"):
    """Validate node features ``x: (N, *, width)``.

    ``width`` None skips the width check; ``num_rows`` None skips the row check.
    """
    check_float_tensor(layer, name, x)
    if x.dim() < 2:
        raise DGLError(f"{layer}: expected {name} of shape (N, {width if width is not None else 'D'}), "
                       f"got shape {tuple(x.shape)}; add a feature dimension, e.g. {name}.unsqueeze(-1)")
    if width is not None and x.shape[-1] != width:
        raise DGLError(f"{layer}: expected {name} with {width} features in the last dimension ({width_name}="
                       f"{width}), got shape {tuple(x.shape)}; pass features of width {width} or build the "
                       f"layer with {width_name}={x.shape[-1]}")
    if num_rows is not None and x.shape[0] != num_rows:
        hint = ("; on a block pass the features of all source nodes (destinations first) or a "
                "(feat_src, feat_dst) pair") if rows_name == "source nodes" else ""
        raise DGLError(f"{layer}: expected {name} with one row per {rows_name[:-1]} ({num_rows} rows), got "
                       f"shape {tuple(x.shape)}{hint}")


def check_src_dst(layer, graph, feat_src, feat_dst, src_width, dst_width, width_name="in_feats"):
    """Validate the source/destination features of ``graph`` (rows and widths)."""
    check_node_feat(layer, "source features" if feat_src is not feat_dst else "feat", feat_src, src_width,
                    graph.num_src_nodes(), "source nodes", width_name)
    if feat_dst is not feat_src:
        check_node_feat(layer, "destination features", feat_dst, dst_width, graph.num_dst_nodes(),
                        "destination nodes", width_name)


def check_same_width(layer, feat_src, feat_dst):
    """Raise unless source and destination features have the same last dimension."""
    if feat_src.shape[-1] != feat_dst.shape[-1]:
        raise DGLError(f"{layer}: expected source and destination features of the same width, got "
                       f"{tuple(feat_src.shape)} and {tuple(feat_dst.shape)}")


def check_edge_weight(layer, graph, edge_weight, name="edge_weight"):
    """Validate a per-edge scalar weight: ``(E,)`` or ``(E, 1)``; returns it flattened to ``(E,)``."""
    check_float_tensor(layer, name, edge_weight)
    E = graph.num_edges()
    if edge_weight.shape[0:1] != (E,) or edge_weight.numel() != E:
        raise DGLError(f"{layer}: expected {name} with one scalar per edge, shape ({E},), got shape "
                       f"{tuple(edge_weight.shape)}; the graph has {E} edges")
    if edge_weight.device != graph.device:
        raise DGLError(f"{layer}: {name} is on {edge_weight.device} but the graph is on {graph.device}; "
                       f"move it with {name}.to({str(graph.device)!r})")
    return edge_weight.reshape(E)


def check_choice(layer, what, value, choices):
    """Raise :class:`DGLError` unless ``value`` is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise DGLError(f"{layer}: expected {what} in {', '.join(map(repr, choices))}, got {value!r}")


def has_zero_in_degree(graph):
    """True when some destination node of ``graph`` has no in-edge (cached on the structure)."""
    index = as_index(graph)
    return index.cached("nn.has_zero_in_degree",
                        lambda: bool(index.num_dst > 0 and (index.in_degrees() == 0).any()))


def check_zero_in_degree(graph, allow_zero_in_degree):
    """Raise DGL's error for 0-in-degree nodes unless ``allow_zero_in_degree``."""
    if not allow_zero_in_degree and has_zero_in_degree(graph):
        raise DGLError(ZERO_IN_DEGREE_MESSAGE)


# ----------------------------------------------------------------------------- normalisers

def degree_norm(graph, which, power, dtype):
    """``clamp(degree, min=1) ** power`` of every node, ``(N,)`` in ``dtype``, cached on the structure.

    Parameters
    ----------
    graph : Graph or Index
    which : str
        ``'in'`` (in-degrees of destination nodes) or ``'out'`` (out-degrees of source nodes).
    power : float
        ``-0.5`` or ``-1.0`` in the layers.
    dtype : torch.dtype
        float32 (half and float32 features) or float64.
    """
    index = as_index(graph)

    def build():
        deg = index.in_degrees() if which == "in" else index.out_degrees()
        return deg.clamp(min=1).to(dtype).pow(power)

    return index.cached(f"nn.norm.{which}.{power}.{dtype}", build)


class _ScaleRows(torch.autograd.Function):
    """``x * s`` computed in the widest dtype of the operands, rounded once to ``dtype`` (``s`` constant)."""

    @staticmethod
    def forward(ctx, x, s, dtype):
        ctx.save_for_backward(s)
        ctx.x_dtype = x.dtype
        return rowwise_scale(x, s, dtype)

    @staticmethod
    def backward(ctx, grad):
        (s,) = ctx.saved_tensors
        return rowwise_scale(grad, s, ctx.x_dtype), None, None


def scale_rows(x, norm, dtype=None):
    """Multiply row ``i`` of ``x: (N, *F)`` by ``norm[i]``; the result has ``dtype`` (default ``x.dtype``).

    ``norm`` stays in its own (float32/float64) precision: for float16/bfloat16
    results the product is formed in float32 and rounded once, without a
    float32 copy of ``x``. Layers pass the autocast dtype as ``dtype`` so that
    under autocast the scaled features come out ready for the graph op.
    ``norm`` must not require grad.
    """
    dtype = dtype or x.dtype
    s = norm.reshape((-1,) + (1,) * (x.dim() - 1))
    if s.dtype == x.dtype == dtype:
        return x * s
    if s.requires_grad:
        return (x.to(torch.promote_types(x.dtype, s.dtype)) * s).to(dtype)
    return _ScaleRows.apply(x, s, dtype)


def as_dtype(x, dtype):
    """``x.to(dtype)``, a no-op when it already has it."""
    return x if x.dtype == dtype else x.to(dtype)


# ----------------------------------------------------------------------------- readout on batches

def batch_num_nodes(graph, feat, layer):
    """``graph.batch_num_nodes()`` checked against ``feat``'s row count."""
    counts = graph.batch_num_nodes()
    n = graph.num_nodes()
    if feat.shape[0] != n:
        raise DGLError(f"{layer}: expected feat with one row per node ({n} rows), got shape {tuple(feat.shape)}")
    return counts


def readout_nodes(graph, feat, op, layer):
    """Per-graph ``op`` (sum/mean/max/min) of node features: ``(B, *F)``."""
    return ops.segment_reduce(batch_num_nodes(graph, feat, layer), feat, op)


def softmax_nodes(graph, feat, layer):
    """Softmax of node values within each graph of a batch (float32 statistics for half inputs)."""
    return ops.segment_softmax(batch_num_nodes(graph, feat, layer), feat)


def broadcast_nodes(graph, x):
    """Repeat row ``b`` of ``x: (B, *F)`` for every node of graph ``b``: ``(N, *F)``."""
    counts = graph.batch_num_nodes().to(x.device)
    return torch.repeat_interleave(x, counts, dim=0, output_size=graph.num_nodes())


# ----------------------------------------------------------------------------- JumpingKnowledge

class JumpingKnowledge(nn.Module):
    r"""Combine the node representations of several layers (Jumping Knowledge Networks).

    .. math::

        h_i^{\mathrm{cat}} = h_i^{(1)} \Vert \cdots \Vert h_i^{(L)}, \qquad
        h_i^{\max} = \max_l h_i^{(l)}, \qquad
        h_i^{\mathrm{lstm}} = \sum_l \alpha_i^{(l)} h_i^{(l)}

    where for ``'lstm'`` the scores :math:`\alpha_i^{(l)}` are a softmax over
    layers of a linear read-out of a bidirectional LSTM run over
    :math:`h_i^{(1)}, \ldots, h_i^{(L)}`.

    Parameters
    ----------
    mode : str, default 'cat'
        ``'cat'``, ``'max'`` or ``'lstm'``.
    in_feats : int, optional
        Feature size of every layer's output; required for ``'lstm'``.
    num_layers : int, optional
        Number of layers combined; required for ``'lstm'``.

    Notes
    -----
    Shapes: Input: a list of ``L`` tensors ``(N, D)``. Output: ``(N, L * D)`` for
    ``'cat'``, ``(N, D)`` otherwise (``'cat'`` accepts different widths).

    Raises
    ------
    DGLError
        Unknown ``mode``; ``'lstm'`` without ``in_feats`` and ``num_layers``.

    Examples
    --------
    >>> import torch
    >>> from mpgraph.nn import JumpingKnowledge
    >>> feats = [torch.ones(3, 4), torch.zeros(3, 4)]
    >>> JumpingKnowledge('cat')(feats).shape
    torch.Size([3, 8])
    >>> JumpingKnowledge('max')(feats)[0]
    tensor([1., 1., 1., 1.])
    """

    def __init__(self, mode="cat", in_feats=None, num_layers=None):
        super().__init__()
        check_choice("JumpingKnowledge", "mode", mode, ("cat", "max", "lstm"))
        self.mode = mode
        if mode == "lstm":
            if in_feats is None or num_layers is None:
                raise DGLError("JumpingKnowledge: mode='lstm' needs in_feats and num_layers, got "
                               f"in_feats={in_feats!r}, num_layers={num_layers!r}")
            hidden = (num_layers * in_feats) // 2
            self.lstm = nn.LSTM(in_feats, hidden, bidirectional=True, batch_first=True)
            self.att = nn.Linear(2 * hidden, 1)
        self.reset_parameters()

    def reset_parameters(self):
        """Reinitialise the LSTM and attention weights (``'lstm'`` mode; others have none)."""
        if self.mode == "lstm":
            self.lstm.reset_parameters()
            self.att.reset_parameters()

    def forward(self, feat_list):
        """Combine ``feat_list`` (a list of ``(N, D)`` tensors) as described above."""
        if not isinstance(feat_list, (list, tuple)) or len(feat_list) == 0:
            raise DGLError("JumpingKnowledge: expected a non-empty list of node feature tensors, got "
                           f"{type(feat_list).__name__}")
        if self.mode == "cat":
            return torch.cat(list(feat_list), dim=-1)
        stacked = torch.stack(list(feat_list), dim=1)                    # (N, L, D)
        if self.mode == "max":
            return stacked.max(dim=1)[0]
        alpha, _ = self.lstm(as_dtype(stacked, compute_dtype(stacked)))   # (N, L, 2 * hidden)
        alpha = self.att(alpha).squeeze(-1)                               # (N, L)
        alpha = torch.softmax(alpha, dim=-1, dtype=accum_dtype(alpha.dtype)).to(alpha.dtype)
        return (stacked * alpha.unsqueeze(-1)).sum(dim=1)

    def extra_repr(self):
        return f"mode={self.mode}"


# ----------------------------------------------------------------------------- aggregation

def aggregate(graph, x, reducer="sum", edge_weight=None):
    """Reduce source features ``x: (N_src, *F)`` over in-edges, optionally weighted per edge.

    Returns ``(N_dst, *F)`` in :func:`compute_dtype` of ``x``: a float32 edge
    weight with half features is applied in float32 and the result rounded
    once to the feature format.
    """
    if edge_weight is None:
        out = ops.gspmm(graph, "copy_lhs", reducer, x, None)
    else:
        out = ops.gspmm(graph, "mul", reducer, x, edge_weight)
    return as_dtype(out, compute_dtype(x))


def propagate_sym(graph, feat, norm_src, norm_dst, edge_weight=None):
    r"""One hop of :math:`N_{dst} A_w N_{src} X`: scale sources, (weighted) sum over in-edges, scale destinations.

    ``norm_src``/``norm_dst`` are float32 (float64) per-node normalisers, each
    applied with one rounding, or None to skip; ``edge_weight`` (``(E,)`` or
    None) multiplies the messages. Layers that take already-normalised edge
    weights (:class:`~mpgraph.nn.EdgeWeightNorm`) pass None normalisers, as DGL.
    """
    h = feat if norm_src is None else scale_rows(feat, norm_src, compute_dtype(feat))
    h = aggregate(graph, h, "sum", edge_weight)
    return h if norm_dst is None else scale_rows(h, norm_dst)
