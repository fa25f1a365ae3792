"""Mini-batch node classification for ``mpgraph train --minibatch``: GraphSAGE or GAT on sampled blocks.

Each epoch the training nodes are shuffled into batches of ``args.batch_size``;
a :class:`~mpgraph.dataloading.NeighborSampler` with ``args.fanouts`` (one per
layer, input layer first) samples the blocks and gathers the input features and
labels in the feature store's dtype. Precision modes are those of
:func:`mpgraph.cli.train.train_once`:

* ``fp32``: everything in float32.
* ``bf16`` / ``fp16``: graph features (the feature store: half the bytes per
  gathered row) and model converted; loss in float32; fp16 uses Adam ``eps=1e-4``.
* ``amp-bf16`` / ``amp-fp16``: float32 store and model under ``torch.autocast``;
  fp16 adds a ``torch.amp.GradScaler``.

Evaluation runs the model on the whole graph (every neighbour), as
``train_once`` does. The epoch time covers sampling, feature gathering,
forward, backward and optimiser steps of all batches; ``edges_per_s`` counts
the edges of the sampled blocks.
"""

import torch
import torch.nn.functional as F

from ..base import DGLError
from ..convert import seed as set_seed
from ..dataloading import DataLoader, NeighborSampler
from .datasets import split_masks
from .models import GAT, SAGE
from ._select import scores
from ._step import PrecisionMode, backward_step, run_epochs

__all__ = ["BlockSAGE", "BlockGAT", "MINIBATCH_MODELS", "check_fanouts", "fanouts_arg", "train_minibatch"]


def _per_layer(graphs, num_layers, model):
    """One graph per layer: the blocks of a mini-batch, or one full graph repeated."""
    if isinstance(graphs, (list, tuple)):
        if len(graphs) != num_layers:
            raise DGLError(f"{model} expected one block per layer ({num_layers}), got {len(graphs)} blocks; sample "
                           f"with {num_layers} fanouts")
        return list(graphs)
    return [graphs] * num_layers


class BlockSAGE(SAGE):
    """:class:`mpgraph.cli.models.SAGE` that also runs on a list of blocks (one per layer)."""

    def forward(self, graphs, h):
        last = len(self.layers) - 1
        for i, (layer, g) in enumerate(zip(self.layers, _per_layer(graphs, len(self.layers), "BlockSAGE"))):
            h = layer(g, self.dropout(h))
            if i < last:
                h = F.relu(h)
        return h


class BlockGAT(GAT):
    """:class:`mpgraph.cli.models.GAT` that also runs on a list of blocks (one per layer)."""

    def forward(self, graphs, h):
        last = len(self.layers) - 1
        for i, (layer, g) in enumerate(zip(self.layers, _per_layer(graphs, len(self.layers), "BlockGAT"))):
            h = layer(g, h)
            h = h.mean(1) if i == last else h.flatten(1)
        return h


#: Models ``train_minibatch`` can build.
MINIBATCH_MODELS = ("sage", "gat")


def check_fanouts(fanouts, num_layers):
    """Validate ``fanouts`` (one int >= 1 or -1 per layer); returns them as a list of int."""
    if not isinstance(fanouts, (list, tuple)) or not all(isinstance(f, int) and not isinstance(f, bool)
                                                        for f in fanouts):
        raise DGLError(f"expected fanouts as a list of ints (one per layer), got {fanouts!r}")
    if len(fanouts) != num_layers:
        raise DGLError(f"expected one fanout per layer ({num_layers} layers), got {len(fanouts)} fanouts "
                       f"{list(fanouts)}; pass --fanouts with {num_layers} comma-separated values or change --layers")
    bad = [f for f in fanouts if f == 0 or f < -1]
    if bad:
        raise DGLError(f"expected fanouts >= 1 or -1 (every neighbour), got {list(fanouts)}")
    return list(fanouts)


def fanouts_arg(text):
    """argparse type of ``--fanouts``: ``'25,10'`` -> ``[25, 10]`` (each >= 1, or -1 for every neighbour)."""
    import argparse
    try:
        fanouts = [int(f) for f in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated fanouts such as 25,10, got {text!r}") from None
    if not fanouts or any(f == 0 or f < -1 for f in fanouts):
        raise argparse.ArgumentTypeError(f"expected fanouts >= 1 or -1 (every neighbour), got {text!r}")
    return fanouts


def _build(name, in_feats, num_classes, settings):
    if name == "sage":
        return BlockSAGE(in_feats, settings["hidden"], num_classes, settings["layers"], settings["dropout"])
    if name == "gat":
        return BlockGAT(in_feats, settings["hidden"], num_classes, settings["layers"], settings["dropout"],
                        settings["heads"])
    raise DGLError(f"expected a mini-batch model in {MINIBATCH_MODELS}, got {name!r}")


def train_minibatch(g, num_classes, args, settings, device, run_seed, progress=True):
    """Train one model on sampled mini-batches; returns the same figures as ``train_once``.

    Parameters
    ----------
    g : Graph
        Graph with ``ndata`` ``feat``, ``label``, ``train_mask``, ``val_mask``,
        ``test_mask`` (on ``device``).
    num_classes : int
        Number of classes.
    args : argparse.Namespace
        Reads ``model`` (``'sage'`` or ``'gat'``), ``precision``, ``epochs``,
        ``split``, ``dataset``, ``fanouts`` (list of int, one per layer) and
        ``batch_size``.
    settings : dict
        ``hidden``, ``layers``, ``dropout``, ``lr``, ``weight_decay``, ``heads``.
    device : torch.device
        Where the graph, the sampling and the model run.
    run_seed : int
        Seeds the model, the batch order and the sampling.
    progress : bool, optional
        Show a progress bar.

    Returns
    -------
    dict
        ``losses``, ``val_accs``, ``epoch_times``, ``median_epoch_s``,
        ``test_acc`` (at the best validation epoch), ``best_val_acc``,
        ``best_epoch``, ``peak_mem_bytes``, ``mem_method``, ``edges_per_s``
        (sampled block edges per second), ``final_loss``, ``parameters``.

    Raises
    ------
    DGLError
        A model other than sage/gat; fanouts not one per layer; a
        non-positive batch size.
    """
    fanouts = check_fanouts(args.fanouts, settings["layers"])
    batch_size = args.batch_size
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise DGLError(f"expected a positive int batch size, got {batch_size!r}")
    set_seed(run_seed)
    precision = PrecisionMode(args.precision, device)
    labels = g.ndata["label"]
    train_mask, val_mask, test_mask = split_masks(g, args.split)
    model = precision.model(_build(args.model, g.ndata["feat"].shape[1], num_classes, settings).to(device))
    store = precision.graph(g)
    feat = store.ndata["feat"]
    opt = precision.optimizer(model.parameters(), settings["lr"], settings["weight_decay"])
    scaler = precision.scaler()
    sampler = NeighborSampler(fanouts, prefetch_node_feats=["feat"], prefetch_labels=["label"], prefetch_edge_feats=[])
    train_nids = train_mask.nonzero().squeeze(1)
    loader = DataLoader(store, train_nids, sampler, batch_size=batch_size, shuffle=True)

    def train_epoch():
        total_loss, total_n, num_edges = 0.0, 0, 0
        for _, output_nodes, blocks in loader:
            with precision.context():
                logits = model(blocks, blocks[0].srcdata["feat"])
            y = blocks[-1].dstdata["label"]
            loss = F.cross_entropy(logits.float(), y)
            backward_step(loss, opt, scaler)
            total_loss += float(loss.detach()) * output_nodes.numel()
            total_n += output_nodes.numel()
            num_edges += sum(b.num_edges() for b in blocks)
        return total_loss / max(total_n, 1), num_edges

    def evaluate():
        model.eval()
        with torch.no_grad(), precision.context():
            logits = model(store, feat)
        (val_acc, test_acc), val_loss = scores(logits, labels, (val_mask, test_mask), val_mask)
        return val_acc, test_acc, val_loss

    desc = f"{args.model}/{args.dataset}/{args.precision}/minibatch" if progress else None
    return run_epochs(model, train_epoch, evaluate, args.epochs, device, args.patience, desc)
