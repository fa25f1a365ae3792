"""Datasets the command line can train on, by name."""

import os

from .. import data
from ..base import DGLError

__all__ = ["DATASETS", "load_dataset", "split_masks"]

# name -> (loader kind, class, subfolder of --data-dir to look in first)
DATASETS = {
    "csbm": ("generated", data.CSBMDataset, None),
    "reddit-like": ("generated", data.RedditLikeDataset, None),
    "cora": ("files", data.CoraGraphDataset, "planetoid"),
    "citeseer": ("files", data.CiteseerGraphDataset, "planetoid"),
    "pubmed": ("files", data.PubmedGraphDataset, "planetoid"),
    "reddit": ("files", data.RedditDataset, "reddit"),
    "actor": ("files", data.ActorDataset, "geom-gcn"),
    "cornell": ("files", data.CornellDataset, "geom-gcn"),
    "texas": ("files", data.TexasDataset, "geom-gcn"),
    "wisconsin": ("files", data.WisconsinDataset, "geom-gcn"),
}


def _raw_dir(data_dir, sub):
    if data_dir is None:
        return None
    if sub and os.path.isdir(os.path.join(data_dir, sub)):
        return os.path.join(data_dir, sub)
    return data_dir


def load_dataset(name, data_dir=None, scale=None, self_loop=False, seed=0):
    """Load dataset ``name``; returns ``(graph, num_classes, info dict)``.

    With ``self_loop`` existing self-loops are replaced by exactly one per node
    (DGL's ``AddSelfLoop``), as GCN/GAT examples do.
    """
    kind, cls, sub = DATASETS[name]
    transform = None
    if self_loop:
        from ..transforms import AddSelfLoop
        transform = AddSelfLoop()
    if name == "csbm":
        s = 1.0 if scale is None else scale
        ds = cls(num_nodes=max(100, int(10000 * s)), num_classes=5, avg_degree=10, homophily=0.7, num_feats=128,
                 snr=1.0, seed=seed, transform=transform)
    elif name == "reddit-like":
        ds = cls(scale=0.02 if scale is None else scale, seed=seed, transform=transform)
    else:
        ds = cls(raw_dir=_raw_dir(data_dir, sub), verbose=False, transform=transform)
    g = ds[0]
    info = {"name": name, "raw_dir": _raw_dir(data_dir, sub) if kind == "files" else None}
    if scale is not None and kind == "generated":
        info["scale"] = scale
    return g, ds.num_classes, info


def split_masks(g, split):
    """``(train, val, test)`` bool masks; 2-D masks (several splits) are indexed by ``split``."""
    masks = []
    for key in ("train_mask", "val_mask", "test_mask"):
        m = g.ndata[key]
        if m.dim() == 2:
            if not 0 <= split < m.shape[1]:
                raise DGLError(f"expected --split in [0, {m.shape[1]}) for this dataset, got {split}")
            m = m[:, split]
        masks.append(m.bool())
    return masks
