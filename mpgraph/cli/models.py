"""The models ``mpgraph train`` builds, with the papers' default hyperparameters."""

import torch.nn as nn
import torch.nn.functional as F

from .. import nn as gnn
from ..nn.utils import Dropout

__all__ = ["MODELS", "DEFAULTS", "build_model"]

#: Per-model defaults (the papers' settings for the citation graphs).
DEFAULTS = {
    "gcn": dict(hidden=16, dropout=0.5, lr=0.01, weight_decay=5e-4, heads=None, layers=2, self_loop=True),
    "gat": dict(hidden=8, dropout=0.6, lr=0.005, weight_decay=5e-4, heads="8,1", layers=2, self_loop=True),
    "sage": dict(hidden=64, dropout=0.5, lr=0.01, weight_decay=5e-4, heads=None, layers=2, self_loop=False),
    "gin": dict(hidden=64, dropout=0.5, lr=0.01, weight_decay=5e-4, heads=None, layers=2, self_loop=False),
    "appnp": dict(hidden=64, dropout=0.5, lr=0.01, weight_decay=5e-4, heads=None, layers=2, self_loop=True),
    "sgc": dict(hidden=None, dropout=0.0, lr=0.2, weight_decay=5e-5, heads=None, layers=2, self_loop=True),
}
MODELS = tuple(DEFAULTS)


class GCN(nn.Module):
    """GraphConv stack (Kipf & Welling): ReLU and dropout between layers."""

    def __init__(self, in_feats, hidden, classes, layers, dropout):
        super().__init__()
        dims = [in_feats] + [hidden] * (layers - 1) + [classes]
        self.layers = nn.ModuleList(gnn.GraphConv(a, b, activation=F.relu if i < layers - 1 else None)
                                    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])))
        self.dropout = Dropout(dropout)

    def forward(self, g, h):
        for i, layer in enumerate(self.layers):
            if i:
                h = self.dropout(h)
            h = layer(g, h)
        return h


class GAT(nn.Module):
    """GATConv stack (Velickovic et al.): heads concatenated inside, averaged at the output.

    ``dropout`` goes where the authors' reference code puts it: on each layer's input (one mask for all
    heads, where the reference draws one per head), on the attention and on the projected features as
    they are summed (``GATConv(msg_drop=)``). With ``layers=3``, ``hidden=256``, heads ``1,1,1`` and no
    dropout this is the guide's Reddit model.
    """

    def __init__(self, in_feats, hidden, classes, layers, dropout, heads):
        super().__init__()
        if len(heads) != layers:
            raise ValueError(f"expected {layers} head counts (one per layer), got {heads}")
        self.layers = nn.ModuleList()
        d_in = in_feats
        for i in range(layers):
            last = i == layers - 1
            self.layers.append(gnn.GATConv(d_in, classes if last else hidden, heads[i], feat_drop=dropout,
                                           attn_drop=dropout, msg_drop=dropout,
                                           activation=None if last else F.elu))
            d_in = hidden * heads[i]

    def forward(self, g, h):
        for i, layer in enumerate(self.layers):
            h = layer(g, h)
            h = h.mean(1) if i == len(self.layers) - 1 else h.flatten(1)
        return h


class SAGE(nn.Module):
    def __init__(self, in_feats, hidden, classes, layers, dropout):
        super().__init__()
        dims = [in_feats] + [hidden] * (layers - 1) + [classes]
        self.layers = nn.ModuleList(gnn.SAGEConv(a, b, "mean") for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = Dropout(dropout)

    def forward(self, g, h):
        for i, layer in enumerate(self.layers):
            h = layer(g, self.dropout(h))
            if i < len(self.layers) - 1:
                h = F.relu(h)
        return h


class GIN(nn.Module):
    def __init__(self, in_feats, hidden, classes, layers, dropout):
        super().__init__()
        dims = [in_feats] + [hidden] * (layers - 1) + [classes]
        self.layers = nn.ModuleList()
        for a, b in zip(dims[:-1], dims[1:]):
            mlp = nn.Sequential(gnn.Linear(a, hidden), nn.ReLU(), gnn.Linear(hidden, b))
            self.layers.append(gnn.GINConv(mlp, "sum"))
        self.dropout = Dropout(dropout)

    def forward(self, g, h):
        for i, layer in enumerate(self.layers):
            h = layer(g, self.dropout(h))
            if i < len(self.layers) - 1:
                h = F.relu(h)
        return h


class APPNP(nn.Module):
    """MLP then personalised-PageRank propagation (k=10, alpha=0.1)."""

    def __init__(self, in_feats, hidden, classes, layers, dropout):
        super().__init__()
        self.mlp = nn.Sequential(Dropout(dropout), gnn.Linear(in_feats, hidden), nn.ReLU(), Dropout(dropout),
                                 gnn.Linear(hidden, classes))
        self.prop = gnn.APPNPConv(10, 0.1)

    def forward(self, g, h):
        return self.prop(g, self.mlp(h))


class SGC(nn.Module):
    """Simplified graph convolution (k=2), features propagated once and cached."""

    def __init__(self, in_feats, hidden, classes, layers, dropout):
        super().__init__()
        self.conv = gnn.SGConv(in_feats, classes, k=2, cached=True)

    def forward(self, g, h):
        return self.conv(g, h)


def build_model(name, in_feats, classes, hidden, layers, dropout, heads):
    """Build model ``name`` (one of :data:`MODELS`)."""
    if name == "gcn":
        return GCN(in_feats, hidden, classes, layers, dropout)
    if name == "gat":
        return GAT(in_feats, hidden, classes, layers, dropout, heads)
    if name == "sage":
        return SAGE(in_feats, hidden, classes, layers, dropout)
    if name == "gin":
        return GIN(in_feats, hidden, classes, layers, dropout)
    if name == "appnp":
        return APPNP(in_feats, hidden, classes, layers, dropout)
    if name == "sgc":
        return SGC(in_feats, hidden or 0, classes, layers, dropout)
    raise ValueError(f"expected a model in {MODELS}, got {name!r}")


def count_parameters(model):
    return sum(p.numel() for p in model.parameters())


