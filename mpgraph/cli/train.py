"""``mpgraph train``: full-graph node classification in a chosen precision, with a report.

Precisions:

* ``fp32``: everything in float32.
* ``bf16`` / ``fp16``: graph features, input features and model converted, as in DGL's CPU
  bfloat16 recipe (``to_bfloat16(g)``, ``model.to(torch.bfloat16)``). The loss is taken in
  float32. fp16 uses Adam with ``eps=1e-4`` (1e-8 is zero in fp16).
* ``amp-bf16`` / ``amp-fp16``: float32 model under ``torch.autocast``; fp16 adds a
  ``torch.amp.GradScaler``.

Reported: test accuracy at the epoch of best validation accuracy, median epoch time (forward,
backward and optimizer step), peak memory above the level before training (CPU: peak RSS;
CUDA: ``max_memory_allocated``) and edges per second (edges / median epoch time).
"""

import json
import math
import os
import statistics

import torch
import torch.nn.functional as F

from ..convert import seed as set_seed
from .datasets import DATASETS, load_dataset, split_masks
from .memory import atomic_write
from .minibatch import MINIBATCH_MODELS, check_fanouts, fanouts_arg, train_minibatch
from .models import DEFAULTS, MODELS, build_model
from ._select import scores
from ._step import PRECISIONS, PrecisionMode, backward_step, run_epochs

__all__ = ["add_train_arguments", "run", "train_once", "PRECISIONS"]



def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise _arg_error(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise _arg_error(f"expected a positive integer, got {value}")
    return value


def _non_negative_float(text):
    try:
        value = float(text)
    except ValueError:
        raise _arg_error(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise _arg_error(f"expected a finite number >= 0, got {text}")
    return value


def _dropout(text):
    value = _non_negative_float(text)
    if value >= 1:
        raise _arg_error(f"expected a dropout probability in [0, 1), got {text}")
    return value


def _heads(text):
    try:
        heads = [int(h) for h in text.split(",")]
    except ValueError:
        raise _arg_error(f"expected comma-separated head counts such as 8,1, got {text!r}") from None
    if not heads or min(heads) <= 0:
        raise _arg_error(f"expected positive head counts, got {text!r}")
    return heads


def _arg_error(msg):
    import argparse
    return argparse.ArgumentTypeError(msg)


def add_train_arguments(p):
    """Add the ``train`` options to an argparse parser."""
    p.add_argument("--model", choices=MODELS, default="gcn", help="model (default: gcn)")
    p.add_argument("--dataset", choices=sorted(DATASETS), default="csbm",
                   help="dataset (default: csbm, generated offline)")
    p.add_argument("--data-dir", default=None,
                   help="directory with raw files (e.g. shared/data: planetoid/, geom-gcn/ are looked up inside)")
    p.add_argument("--scale", type=_non_negative_float, default=None,
                   help="size of generated datasets: reddit-like node count x scale (default 0.02); "
                        "csbm nodes = 10000 x scale (default 1)")
    p.add_argument("--precision", choices=PRECISIONS, default="fp32", help="precision mode (default: fp32)")
    p.add_argument("--epochs", type=_positive_int, default=200,
                   help="epochs to train (with --patience: the most epochs; default 200)")
    p.add_argument("--patience", type=_positive_int, default=None,
                   help="early stopping as in the GAT paper: stop after this many epochs in which neither "
                        "validation loss nor accuracy improved, and report the test accuracy of the last epoch "
                        "at which both were at their best (default: train all epochs, report the test "
                        "accuracy at the best validation accuracy)")
    p.add_argument("--lr", type=_non_negative_float, default=None, help="learning rate (model default)")
    p.add_argument("--weight-decay", type=_non_negative_float, default=None)
    p.add_argument("--hidden", type=_positive_int, default=None, help="hidden size (model default)")
    p.add_argument("--layers", type=_positive_int, default=None, help="number of layers (default 2)")
    p.add_argument("--heads", type=_heads, default=None, help="GAT heads per layer, e.g. 8,1")
    p.add_argument("--dropout", type=_dropout, default=None)
    p.add_argument("--split", type=int, default=0, help="split index for datasets with several (geom-gcn)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--runs", type=_positive_int, default=1, help="independent runs (mean and std reported)")
    p.add_argument("--plot", default=None, metavar="FILE.png", help="write loss/accuracy curves")
    p.add_argument("--json", default=None, metavar="FILE", help="write results as JSON")
    p.add_argument("--minibatch", action="store_true",
                   help="mini-batch training on sampled blocks (models: sage, gat)")
    p.add_argument("--fanouts", type=fanouts_arg, default=[25, 10],
                   help="neighbours sampled per layer with --minibatch (default 25,10; -1 = all)")
    p.add_argument("--batch-size", type=_positive_int, default=1024, help="seed nodes per mini-batch")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    from ..distributed.train import add_distributed_arguments
    add_distributed_arguments(p)
    return p


def _device(name):
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise SystemExit("mpgraph train: error: --device cuda requested but CUDA is not available")
    return torch.device(name)


def _settings(args):
    d = dict(DEFAULTS[args.model])
    for key in ("hidden", "lr", "weight_decay", "dropout", "layers"):
        value = getattr(args, key)
        if value is not None:
            d[key] = value
    heads = args.heads if args.heads is not None else ([int(h) for h in d["heads"].split(",")] if d["heads"] else None)
    if args.model == "gat":
        if heads is None:
            heads = [1] * d["layers"]
        if args.layers is None and args.heads is not None:
            d["layers"] = len(heads)
        if len(heads) != d["layers"]:
            raise SystemExit(f"mpgraph train: error: --heads gives {len(heads)} head counts but the model has "
                             f"{d['layers']} layers")
    d["heads"] = heads
    return d


def train_once(g, num_classes, args, settings, device, run_seed, progress=True):
    """Train one model on the full graph; returns the figures of :func:`mpgraph.cli._step.run_epochs`."""
    set_seed(run_seed)
    labels = g.ndata["label"]
    train_mask, val_mask, test_mask = split_masks(g, args.split)
    precision = PrecisionMode(args.precision, device)
    model = build_model(args.model, g.ndata["feat"].shape[1], num_classes, settings["hidden"], settings["layers"],
                        settings["dropout"], settings["heads"]).to(device)
    model = precision.model(model)
    structure = precision.graph(g)
    feat = structure.ndata["feat"]      # converted with the graph in bf16/fp16
    opt = precision.optimizer(model.parameters(), settings["lr"], settings["weight_decay"])
    scaler = precision.scaler()

    def train_epoch():
        with precision.context():
            logits = model(structure, feat)
        loss = F.cross_entropy(logits[train_mask].float(), labels[train_mask])
        backward_step(loss, opt, scaler)
        return loss.item(), g.num_edges()

    def evaluate():
        model.eval()
        with torch.no_grad(), precision.context():
            logits = model(structure, feat)
        (_, val_acc, test_acc), val_loss = scores(logits, labels, (train_mask, val_mask, test_mask), val_mask)
        return val_acc, test_acc, val_loss

    # Build the graph's sparse formats (CSC for forward, CSR for backward) before measuring: they belong
    # to the dataset, like the features, not to the training step (DGL: ``g.create_formats_()``).
    if hasattr(structure, "create_formats_"):
        structure.create_formats_()
    desc = f"{args.model}/{args.dataset}/{args.precision}" if progress else None
    return run_epochs(model, train_epoch, evaluate, args.epochs, device, args.patience, desc)


def _fmt_mem(b):
    return "n/a" if b is None else f"{b / 2**20:.1f} MiB"


def run(args):
    """Entry point of ``mpgraph train``; returns the exit code."""
    if args.distributed:
        from ..distributed.train import run_distributed
        return run_distributed(args, load_dataset=load_dataset)
    device = _device(args.device)
    settings = _settings(args)
    trainer = train_once
    if args.minibatch:
        if args.model not in MINIBATCH_MODELS:
            raise SystemExit(f"mpgraph train: error: --minibatch supports --model {' or '.join(MINIBATCH_MODELS)}, "
                             f"got {args.model}")
        try:
            check_fanouts(args.fanouts, settings["layers"])
        except ValueError as err:
            raise SystemExit(f"mpgraph train: error: {err}") from None
        trainer = train_minibatch
    g, num_classes, info = load_dataset(args.dataset, args.data_dir, args.scale, settings["self_loop"], args.seed)
    g = g.to(device)
    results = []
    try:
        for r in range(args.runs):
            results.append(trainer(g, num_classes, args, settings, device, args.seed + r, progress=not args.quiet))
    except KeyboardInterrupt:
        print("\ninterrupted: no output files written")
        return 130
    accs = [r["test_acc"] for r in results]
    summary = dict(
        model=args.model, dataset=args.dataset, precision=args.precision, device=str(device),
        minibatch=bool(args.minibatch), fanouts=args.fanouts if args.minibatch else None,
        threads=torch.get_num_threads(), runs=args.runs, epochs=args.epochs, settings=settings,
        num_nodes=g.num_nodes(), num_edges=g.num_edges(), dataset_info=info,
        test_acc_mean=statistics.mean(accs), test_acc_std=statistics.pstdev(accs) if len(accs) > 1 else 0.0,
        median_epoch_s=statistics.median(r["median_epoch_s"] for r in results),
        peak_mem_bytes=max((r["peak_mem_bytes"] or 0) for r in results),
        mem_method=results[0]["mem_method"],
        edges_per_s=statistics.median(r["edges_per_s"] for r in results),
        final_loss=statistics.mean(r["final_loss"] for r in results),
        losses=results[0]["losses"], val_accs=results[0]["val_accs"], per_run=[
            {k: r[k] for k in ("test_acc", "best_val_acc", "best_epoch", "median_epoch_s", "peak_mem_bytes",
                               "final_loss", "epochs_run")} for r in results],
    )
    print(_table(summary))
    if args.json:
        atomic_write(args.json, json.dumps(summary, indent=1))
    if args.plot:
        plot_curves({args.precision: summary}, args.plot)
    return 0


def _table(s):
    acc = f"{100 * s['test_acc_mean']:.1f}" + (f" ± {100 * s['test_acc_std']:.1f}" if s["runs"] > 1 else "")
    rows = [
        ("model / dataset", f"{s['model']} / {s['dataset']} ({s['num_nodes']} nodes, {s['num_edges']} edges)"),
        ("precision / device", f"{s['precision']} / {s['device']} ({s['threads']} threads)"),
        (f"test accuracy at best val ({s['runs']} run{'s' if s['runs'] > 1 else ''})", f"{acc} %"),
        ("median epoch time", f"{1e3 * s['median_epoch_s']:.1f} ms"),
        ("peak memory (per step, after epoch 1)", _fmt_mem(s["peak_mem_bytes"])),
        ("edges per second", f"{s['edges_per_s']:.3g}"),
        ("final training loss", f"{s['final_loss']:.4f}"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def plot_curves(summaries, path, memory_bars=False):
    """Loss curves (and, for ``bench``, peak-memory bars) of several precisions into a PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cols = 2 if memory_bars else 1
    fig, axes = plt.subplots(1, cols, figsize=(6 * cols, 4), squeeze=False)
    ax = axes[0][0]
    for name, s in summaries.items():
        ax.plot(range(1, len(s["losses"]) + 1), s["losses"], label=name)
    ax.set_xlabel("epoch")
    ax.set_ylabel("training loss")
    ax.legend()
    ax.set_title("loss")
    if memory_bars:
        ax = axes[0][1]
        names = list(summaries)
        ax.bar(names, [(summaries[n]["peak_mem_bytes"] or 0) / 2**20 for n in names])
        ax.set_ylabel("peak memory per step, after epoch 1 (MiB)")
        ax.set_title("memory")
    fig.tight_layout()
    tmp = f"{path}.tmp-{os.getpid()}.png"
    try:
        fig.savefig(tmp)
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.remove(tmp)
