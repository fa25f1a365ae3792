r"""``mpgraph train --distributed``: GraphSAGE on a partitioned graph, one process per part, DDP gradients.

Launch one process per part with torchrun (or any launcher that sets the
``env://`` variables ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``,
``MASTER_PORT``)::

    torchrun --nproc_per_node=2 -m mpgraph train --distributed --model sage --dataset csbm \
        --part-dir parts --checkpoint-dir ckpt --checkpoint-every 5
    # or, without the main command:
    torchrun --nproc_per_node=2 -m mpgraph.distributed.train --dataset csbm --part-dir parts

Several machines: the usual ``torchrun --nnodes=M --node_rank=i
--rdzv-backend=c10d --rdzv-endpoint=HOST:PORT`` flags; only ``env://`` is
used. The partition directory (and the checkpoint directory, for
``--resume``) must then be on a file system every machine sees, or be
copied there: rank 0 writes them.

What happens:

1. Rank 0 partitions the dataset into ``WORLD_SIZE`` parts under
   ``--part-dir`` unless a manifest ``<part-dir>/<graph-name>.json`` exists
   (a manifest made from other dataset settings is refused; one made by
   :func:`~mpgraph.distributed.partition_graph` directly, without
   dataset metadata, is used as is: it needs node data ``feat``, ``label``,
   ``train_mask``, ``val_mask``, ``test_mask``). The other ranks wait up to
   ``--setup-timeout`` seconds.
2. Rank ``r`` loads part ``r`` as a :class:`~mpgraph.distributed.DistGraph`,
   takes its share of the training nodes (:func:`~mpgraph.distributed.node_split`)
   and trains a GraphSAGE model (mean aggregator) wrapped in
   :class:`torch.nn.parallel.DistributedDataParallel` on batches of a
   :class:`~mpgraph.distributed.DistNodeDataLoader` (``--fanouts``,
   ``--batch-size`` seeds per rank and batch).
3. Every ``--checkpoint-every K`` epochs (and after the last) rank 0 writes
   ``<checkpoint-dir>/checkpoint.pt`` atomically: model, optimizer, grad
   scaler, the epoch, every rank's random-number state, the loss history and
   the settings. ``--resume`` continues after the last checkpointed epoch:
   no epoch is lost or run twice (batches are a function of the epoch
   number; dropout continues from the saved states). Rank 0 appends one
   JSON line per finished epoch to ``<checkpoint-dir>/epochs.jsonl``; a
   resume first drops the lines of epochs after the checkpoint. The other
   settings must match the checkpoint's, except ``--epochs``, which may be
   raised to train longer.
4. At the end the model is evaluated on the validation and test nodes with
   every neighbour (exact full-graph inference); rank 0 prints a report and
   writes ``--json``.

Precision (``--precision``): ``fp32``; ``bf16``/``fp16`` store the features
and the model in that dtype (the loss in float32; fp16 uses Adam
``eps=1e-4``); ``amp-bf16``/``amp-fp16`` keep a float32 model under
``torch.autocast`` and store the features in the autocast dtype (the first
layer would round them to it anyway), so remote rows move half the bytes.

Failures: collectives wait at most ``--dist-timeout`` seconds (the process
group's timeout; default 120) for a peer. A peer that dies closes its
connections and the other ranks stop at once; one that hangs stops them
after the timeout. Either way every surviving rank prints ``error: rank R:
the collective ... failed`` and exits with status 3; restart with
``--resume``. Under torchrun the agent also stops the other processes when
one dies. For tests, ``MPGRAPH_DIST_FAULT=RANK:EPOCH:BATCH`` makes that rank
kill itself (SIGKILL) at the start of that batch.

Backends: gloo for CPU training, NCCL with ``--device cuda`` (each process
uses ``cuda:LOCAL_RANK``); ``--dist-backend`` overrides.
"""

import argparse
import datetime
import gc
import hashlib
import json
import math
import os
import signal
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from .. import nn as gnn
from ..nn.utils import Dropout
from ..base import DGLError
from ..cli._step import PRECISIONS, PrecisionMode, backward_step
from ..cli.minibatch import fanouts_arg
from ..convert import seed as set_seed
from ..dataloading.neighbor_sampler import NeighborSampler
from ..graph import Graph
from ..graph_io import _atomic_write
from ._comm import Communicator, DistributedError
from .checkpoint import load_checkpoint, rng_state, save_checkpoint, set_rng_state
from .dataloader import DistNodeDataLoader
from .dist_graph import DistGraph, node_split
from .partition import load_manifest, partition_graph

__all__ = ["run_distributed", "add_distributed_arguments", "build_parser", "main", "DistSAGE", "PRECISIONS"]

#: GraphSAGE defaults (those of ``mpgraph train --model sage``).
SAGE_DEFAULTS = dict(hidden=64, dropout=0.5, lr=0.01, weight_decay=5e-4, layers=2)
_EXIT_PEER = 3
_EXIT_ERROR = 2
_REQUIRED = ("feat", "label", "train_mask", "val_mask", "test_mask")


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------
class DistSAGE(nn.Module):
    """GraphSAGE (mean aggregator): ReLU between layers, dropout on every layer's input.

    ``forward(graphs, h)`` takes a list of blocks (one per layer) or one graph
    used by every layer (full-graph inference).

    Parameters
    ----------
    in_feats, hidden, num_classes, num_layers : int
    dropout : float
    """

    def __init__(self, in_feats, hidden, num_classes, num_layers, dropout):
        super().__init__()
        dims = [in_feats] + [hidden] * (num_layers - 1) + [num_classes]
        self.layers = nn.ModuleList(gnn.SAGEConv(a, b, "mean") for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = Dropout(dropout)

    def forward(self, graphs, h):
        graphs = [graphs] * len(self.layers) if isinstance(graphs, Graph) else list(graphs)
        if len(graphs) != len(self.layers):
            raise DGLError(f"DistSAGE expected one block per layer ({len(self.layers)}), got {len(graphs)}")
        for i, (layer, g) in enumerate(zip(self.layers, graphs)):
            h = layer(g, self.dropout(h))
            if i < len(self.layers) - 1:
                h = F.relu(h)
        return h


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------
def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text}")
    return value


def add_distributed_arguments(p):
    """Add the ``--distributed`` options to an argparse parser (the ``train`` options are not added).

    Flags: ``--distributed``, ``--num-parts``, ``--part-dir``, ``--graph-name``,
    ``--num-hops``, ``--part-method``, ``--checkpoint-dir``,
    ``--checkpoint-every K``, ``--resume``, ``--dist-backend``,
    ``--dist-timeout SECONDS``, ``--setup-timeout SECONDS``.
    """
    g = p.add_argument_group("distributed training (--distributed; launch with torchrun --nproc_per_node=N)")
    g.add_argument("--distributed", action="store_true",
                   help="train on a partitioned graph, one process per part (GraphSAGE, DDP)")
    g.add_argument("--num-parts", type=_positive_int, default=None,
                   help="number of parts; must equal the number of processes (default: WORLD_SIZE)")
    g.add_argument("--part-dir", default="mpgraph-parts",
                   help="directory of the partitioned graph; rank 0 writes it when its manifest is missing "
                        "(default: mpgraph-parts)")
    g.add_argument("--graph-name", default=None, help="name of the partitioned graph (default: the dataset name)")
    g.add_argument("--num-hops", type=_positive_int, default=1, help="halo rings stored with each part (default 1)")
    g.add_argument("--part-method", choices=("metis", "random"), default="metis", help="default: metis")
    g.add_argument("--checkpoint-dir", default=None,
                   help="write checkpoint.pt and epochs.jsonl here (rank 0; atomic writes)")
    g.add_argument("--checkpoint-every", type=_positive_int, default=1, metavar="K",
                   help="checkpoint every K epochs and after the last (default 1)")
    g.add_argument("--resume", action="store_true",
                   help="continue from <checkpoint-dir>/checkpoint.pt (start fresh when there is none)")
    g.add_argument("--dist-backend", choices=("auto", "gloo", "nccl"), default="auto",
                   help="default: nccl with --device cuda, else gloo")
    g.add_argument("--dist-timeout", type=_positive_float, default=120.0, metavar="SECONDS",
                   help="how long a collective waits for a peer before the job stops with an error (default 120)")
    g.add_argument("--setup-timeout", type=_positive_float, default=3600.0, metavar="SECONDS",
                   help="how long ranks wait for rank 0 to partition the graph (default 3600)")
    return p


def build_parser():
    """Parser of ``python -m mpgraph.distributed.train`` (the ``mpgraph train`` options GraphSAGE uses)."""
    p = argparse.ArgumentParser(prog="python -m mpgraph.distributed.train",
                                description="Distributed GraphSAGE training on a partitioned graph.")
    p.add_argument("--model", choices=("sage",), default="sage")
    p.add_argument("--dataset", default="csbm", help="dataset (default: csbm, generated offline)")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--scale", type=float, default=None, help="csbm nodes = 10000 x scale (default 1)")
    p.add_argument("--precision", choices=PRECISIONS, default="fp32")
    p.add_argument("--epochs", type=_positive_int, default=20)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--weight-decay", type=float, default=None)
    p.add_argument("--hidden", type=_positive_int, default=None)
    p.add_argument("--layers", type=_positive_int, default=None)
    p.add_argument("--dropout", type=float, default=None)
    p.add_argument("--fanouts", type=fanouts_arg, default=[25, 10], help="per layer, input layer first (default 25,10)")
    p.add_argument("--batch-size", type=_positive_int, default=1024, help="seeds per batch and rank")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, metavar="FILE", help="write results as JSON (rank 0)")
    p.add_argument("--quiet", action="store_true", help="no per-epoch lines")
    add_distributed_arguments(p)
    p.set_defaults(distributed=True)
    return p


def main(argv=None):
    """Entry point of ``python -m mpgraph.distributed.train``; returns the exit status."""
    return run_distributed(build_parser().parse_args(argv))


# ---------------------------------------------------------------------------
# settings
# ---------------------------------------------------------------------------
def _config(args):
    get = lambda k, d=None: getattr(args, k, d)           # noqa: E731  (args may come from mpgraph train)
    model = get("model", "sage")
    if model != "sage":
        raise DGLError(f"--distributed trains GraphSAGE: expected --model sage, got --model {model}")
    if get("runs", 1) != 1:
        raise DGLError(f"--distributed runs once: expected --runs 1, got {get('runs')}")
    if get("plot") is not None:
        raise DGLError("--distributed does not draw plots: drop --plot (use --json)")
    cfg = {k: (get(k) if get(k) is not None else v) for k, v in SAGE_DEFAULTS.items()}
    fanouts = list(get("fanouts") or [25, 10])
    if len(fanouts) != cfg["layers"]:
        raise DGLError(f"expected one fanout per layer ({cfg['layers']} layers), got {len(fanouts)} fanouts "
                       f"{fanouts}; pass --fanouts with {cfg['layers']} comma-separated values or change --layers")
    precision = get("precision", "fp32")
    if precision not in PRECISIONS:
        raise DGLError(f"expected --precision in {PRECISIONS}, got {precision!r}")
    dataset = get("dataset", "csbm")
    cfg.update(
        dataset=dataset, data_dir=get("data_dir"), scale=get("scale"), precision=precision,
        epochs=int(get("epochs", 20)), fanouts=fanouts, batch_size=int(get("batch_size", 1024)),
        device=get("device", "cpu"), seed=int(get("seed", 0)), json=get("json"), quiet=bool(get("quiet", False)),
        num_parts=get("num_parts"), part_dir=get("part_dir") or "mpgraph-parts",
        graph_name=get("graph_name") or dataset.replace("/", "-"), num_hops=int(get("num_hops", 1) or 1),
        part_method=get("part_method", "metis"), checkpoint_dir=get("checkpoint_dir"),
        checkpoint_every=int(get("checkpoint_every", 1) or 1), resume=bool(get("resume", False)),
        dist_backend=get("dist_backend", "auto"), dist_timeout=float(get("dist_timeout", 120.0)),
        setup_timeout=float(get("setup_timeout", 3600.0)),
    )
    if cfg["resume"] and not cfg["checkpoint_dir"]:
        raise DGLError("--resume needs --checkpoint-dir (where checkpoint.pt is)")
    return cfg


def _fingerprint(cfg, world_size):
    """Settings a checkpoint must share with the run that resumes it."""
    keys = ("dataset", "scale", "seed", "precision", "hidden", "layers", "dropout", "lr", "weight_decay", "fanouts",
            "batch_size", "graph_name")
    fp = {k: cfg[k] for k in keys}
    fp["world_size"] = world_size
    return fp


def _dataset_metadata(cfg):
    return {"dataset": cfg["dataset"], "scale": cfg["scale"], "seed": cfg["seed"]}


def _default_load_dataset(name, data_dir=None, scale=None, self_loop=False, seed=0):
    """The ``csbm`` dataset with ``mpgraph train``'s settings (used when no loader is passed in)."""
    if name != "csbm":
        raise DGLError(f"expected --dataset csbm (run through `mpgraph train --distributed` for the others), "
                       f"got {name!r}")
    from ..data import CSBMDataset
    s = 1.0 if scale is None else scale
    ds = CSBMDataset(num_nodes=max(100, int(10000 * s)), num_classes=5, avg_degree=10, homophily=0.7, num_feats=128,
                     snr=1.0, seed=seed)
    return ds[0], ds.num_classes, {"name": name}


# ---------------------------------------------------------------------------
# process group
# ---------------------------------------------------------------------------
def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _init(cfg):
    """Initialise the default process group from ``env://``; returns ``(rank, world, local_rank, device)``."""
    if "WORLD_SIZE" not in os.environ:                  # a plain process: a group of one on loopback
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(_free_port()))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    want = cfg["device"]
    if want == "auto":
        want = "cuda" if torch.cuda.is_available() else "cpu"
    if want == "cuda":
        if not torch.cuda.is_available():
            raise DGLError("--device cuda requested but CUDA is not available")
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    backend = cfg["dist_backend"]
    if backend == "auto":
        backend = "nccl" if device.type == "cuda" else "gloo"
    if backend == "nccl" and device.type != "cuda":
        raise DGLError("--dist-backend nccl needs --device cuda")
    timeout = datetime.timedelta(seconds=cfg["dist_timeout"])
    try:
        dist.init_process_group(backend, init_method="env://", rank=rank, world_size=world, timeout=timeout,
                                device_id=device if backend == "nccl" else None)
    except (RuntimeError, ValueError) as err:
        raise DistributedError(f"rank {rank}: could not join the process group at "
                               f"{os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')} within "
                               f"{cfg['dist_timeout']:g} s ({err})") from err
    return rank, world, local_rank, device, backend


# ---------------------------------------------------------------------------
# partition (rank 0) and the others waiting
# ---------------------------------------------------------------------------
def _prepare_partition(cfg, world, load_dataset):
    """Rank 0: make sure ``<part-dir>/<graph-name>.json`` exists for this run; returns metadata."""
    config = os.path.join(cfg["part_dir"], f"{cfg['graph_name']}.json")
    want = _dataset_metadata(cfg)
    if os.path.isfile(config):
        manifest, _ = load_manifest(config)
        meta = manifest.get("metadata") or {}
        made_from = {k: meta.get(k) for k in want}
        if "dataset" in meta and made_from != want:
            raise DGLError(f"{config!r} was partitioned from {made_from}, this run uses {want}; pass another "
                           "--part-dir (or remove that one)")
        if manifest["num_parts"] != world:
            raise DGLError(f"{config!r} has {manifest['num_parts']} parts, this job has {world} processes; pass "
                           "another --part-dir (or remove that one) to re-partition")
        return {"config": config, "num_classes": meta.get("num_classes"), "partitioned": False}
    load = load_dataset or _default_load_dataset
    g, num_classes, _ = load(cfg["dataset"], cfg["data_dir"], cfg["scale"], False, cfg["seed"])
    t0 = time.perf_counter()
    partition_graph(g, cfg["graph_name"], world, cfg["part_dir"], num_hops=cfg["num_hops"],
                    part_method=cfg["part_method"], metadata=dict(want, num_classes=int(num_classes)))
    return {"config": config, "num_classes": int(num_classes), "partitioned": True,
            "partition_s": time.perf_counter() - t0}


def _setup(cfg, comm, world, load_dataset):
    """Rank 0 partitions (if needed); every rank gets its result or its error."""
    group = None
    if world > 1:
        group = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=cfg["setup_timeout"]))
    result = None
    if comm.rank == 0:
        try:
            result = {"ok": _prepare_partition(cfg, world, load_dataset)}
        except DGLError as err:
            result = {"error": str(err)}
    if world > 1:
        box = [result]
        with comm.guard("waiting for rank 0 to prepare the partitions"):
            dist.broadcast_object_list(box, src=0, group=group)
        result = box[0]
        dist.destroy_process_group(group)
    if "error" in result:
        raise DGLError(result["error"] if comm.rank == 0 else f"rank 0 could not prepare the partitions: "
                       f"{result['error']}")
    return result["ok"]


# ---------------------------------------------------------------------------
# epoch log
# ---------------------------------------------------------------------------
class _EpochLog:
    """``<checkpoint-dir>/epochs.jsonl``: one JSON line per finished epoch and per start/resume (rank 0)."""

    def __init__(self, directory, start_epoch, resumed):
        self.path = os.path.join(directory, "epochs.jsonl")
        os.makedirs(directory, exist_ok=True)
        lines = []
        if os.path.isfile(self.path):
            with open(self.path, encoding="utf-8") as f:
                for line in f:
                    try:
                        lines.append(json.loads(line))
                    except ValueError:
                        continue                # a line torn by a crash
        if not resumed:
            lines = []
        kept = [e for e in lines if e.get("event") != "epoch" or e.get("epoch", 0) < start_epoch]
        self.attempt = 1 + sum(1 for e in kept if e.get("event") in ("start", "resume"))
        kept.append({"event": "resume" if resumed else "start", "from_epoch": start_epoch, "attempt": self.attempt,
                     "time": time.time()})
        _atomic_write(self.path, ["".join(json.dumps(e) + "\n" for e in kept).encode("utf-8")])

    def epoch(self, record):
        record = dict(record, event="epoch", attempt=self.attempt)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())


# ---------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------
def _fault_point():
    spec = os.environ.get("MPGRAPH_DIST_FAULT")
    if not spec:
        return None
    try:
        rank, epoch, batch = (int(x) for x in spec.split(":"))
    except ValueError:
        raise DGLError(f"expected MPGRAPH_DIST_FAULT=RANK:EPOCH:BATCH, got {spec!r}") from None
    return rank, epoch, batch


def _param_digest(model):
    h = hashlib.sha256()
    for name, p in model.named_parameters():
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _evaluate(model, g, nids, cfg, device, ctx):
    """Accuracy on the union of every rank's ``nids`` with every neighbour; returns ``(correct, total)``."""
    comm = g._comm
    count = torch.tensor([nids.numel()], dtype=torch.int64)
    comm.all_reduce(count, "min", "evaluation sizes")
    if int(count) == 0:
        return 0, 0
    sampler = NeighborSampler([-1] * cfg["layers"], prefetch_node_feats=["feat"], prefetch_labels=["label"])
    loader = DistNodeDataLoader(g, nids, sampler, device=device, batch_size=cfg["batch_size"], seed=cfg["seed"])
    seen, right = [], []
    model.eval()
    with torch.no_grad():
        for _, output_nodes, blocks in loader:
            with ctx():
                logits = model(blocks, blocks[0].srcdata["feat"])
            seen.append(output_nodes.cpu().to(torch.int64))
            right.append((logits.float().argmax(1) == blocks[-1].dstdata["label"]).cpu())
    ids, first = torch.unique(torch.cat(seen), return_inverse=True)
    correct = torch.zeros(ids.numel(), dtype=torch.int64)
    correct[first] = torch.cat(right).to(torch.int64)             # repeated seeds: same prediction
    stats = torch.tensor([int(correct.sum()), ids.numel()], dtype=torch.int64)
    comm.all_reduce(stats, "sum", "evaluation counts")
    return int(stats[0]), int(stats[1])


def _train(cfg, rank, world, device, backend, load_dataset):
    comm = Communicator(timeout_s=cfg["dist_timeout"])
    if cfg["num_parts"] is not None and cfg["num_parts"] != world:
        raise DGLError(f"expected --num-parts to equal the number of processes ({world}), got {cfg['num_parts']}; "
                       f"launch with torchrun --nproc_per_node={cfg['num_parts']}")
    info = _setup(cfg, comm, world, load_dataset)
    mode = cfg["precision"]
    precision = PrecisionMode(mode, device)
    g = DistGraph(cfg["graph_name"], part_config=info["config"], float_dtype=precision.dtype)
    missing = [k for k in _REQUIRED if k not in g.ndata]
    if missing:
        raise DGLError(f"expected node data {list(_REQUIRED)} in {info['config']!r}, missing {missing}")
    gpb = g.get_partition_book()
    num_classes = info.get("num_classes")
    if num_classes is None:
        top = g.ndata["label"].local_tensor.max().reshape(1).to(torch.int64) if len(g.ndata["label"].local_tensor) \
            else torch.zeros(1, dtype=torch.int64)
        num_classes = int(comm.all_reduce(top, "max", "number of classes")) + 1
    train_nids = node_split(g.ndata["train_mask"], gpb)
    val_nids = node_split(g.ndata["val_mask"], gpb)
    test_nids = node_split(g.ndata["test_mask"], gpb)

    set_seed(cfg["seed"])
    in_feats = g.ndata["feat"].shape[1]
    model = DistSAGE(in_feats, cfg["hidden"], num_classes, cfg["layers"], cfg["dropout"]).to(device)
    model = precision.model(model)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = precision.optimizer(model.parameters(), cfg["lr"], cfg["weight_decay"])
    scaler = precision.scaler()
    ctx = precision.context

    sampler = NeighborSampler(cfg["fanouts"], prefetch_node_feats=["feat"], prefetch_labels=["label"])
    loader = DistNodeDataLoader(g, train_nids, sampler, device=device, batch_size=cfg["batch_size"], shuffle=True,
                                seed=cfg["seed"])

    fingerprint = _fingerprint(cfg, world)
    ckpt_path = os.path.join(cfg["checkpoint_dir"], "checkpoint.pt") if cfg["checkpoint_dir"] else None
    history = {"losses": [], "epoch_times": [], "bytes": []}
    start_epoch = 0
    resumed = False
    if cfg["resume"]:
        state = None
        if rank == 0:
            if os.path.isfile(ckpt_path):
                try:
                    state = load_checkpoint(ckpt_path)
                except DGLError as err:
                    state = {"error": str(err)}
        state = comm.broadcast_object(state, what="broadcast of the checkpoint")
        if state is not None and "error" in state:
            raise DGLError(state["error"])
        if state is not None:
            if state["config"] != fingerprint:
                diff = {k: (state["config"].get(k), v) for k, v in fingerprint.items() if state["config"].get(k) != v}
                raise DGLError(f"{ckpt_path!r} was written with other settings (checkpoint, now): {diff}; resume "
                               "with the same settings or use another --checkpoint-dir")
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["optimizer"])
            if scaler is not None and state.get("scaler"):
                scaler.load_state_dict(state["scaler"])
            set_rng_state(state["rng"][rank])
            history = state["history"]
            start_epoch = int(state["epoch"]) + 1
            resumed = True
        elif rank == 0:
            print(f"no checkpoint at {ckpt_path!r}: starting from epoch 0", flush=True)
    log = _EpochLog(cfg["checkpoint_dir"], start_epoch, resumed) if (rank == 0 and cfg["checkpoint_dir"]) else None
    if rank == 0 and not cfg["quiet"]:
        what = f"resuming at epoch {start_epoch}" if resumed else "starting"
        print(f"distributed training: {world} process{'es' if world > 1 else ''} ({backend}), graph "
              f"{cfg['graph_name']!r} ({g.num_nodes()} nodes, {g.num_edges()} edges), {len(loader)} batches per "
              f"epoch, {what}", flush=True)

    fault = _fault_point()
    epochs_run = []
    for epoch in range(start_epoch, cfg["epochs"]):
        loader.set_epoch(epoch)
        g.reset_comm_stats()
        t0 = time.perf_counter()
        ddp.train()
        loss_sum, seen = 0.0, 0
        for i, (_, output_nodes, blocks) in enumerate(loader):
            if fault is not None and fault == (rank, epoch, i):
                sys.stdout.flush()
                sys.stderr.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            with ctx():
                logits = ddp(blocks, blocks[0].srcdata["feat"])
            loss = F.cross_entropy(logits.float(), blocks[-1].dstdata["label"])
            with comm.guard("gradient all-reduce (DistributedDataParallel)"):
                backward_step(loss, opt, scaler)
            loss_sum += float(loss.detach()) * output_nodes.numel()
            seen += output_nodes.numel()
        elapsed = time.perf_counter() - t0
        s = g.comm_stats()["bytes_sent"]
        stats = torch.tensor([loss_sum, seen, s.get("feature", 0), s.get("ids", 0), s.get("sampling", 0),
                              s.get("counts", 0), s.get("feature/feat", 0), elapsed], dtype=torch.float64)
        slowest = stats[7:8].clone()
        comm.all_reduce(stats, "sum", "epoch statistics")
        comm.all_reduce(slowest, "max", "epoch time")
        loss_mean = float(stats[0] / max(float(stats[1]), 1.0))
        sent = {"feature": int(stats[2]), "ids": int(stats[3]), "sampling": int(stats[4]), "counts": int(stats[5])}
        sent["total"] = sum(sent.values())
        sent["feat"] = int(stats[6])                       # the rows of 'feat' alone (part of 'feature')
        history["losses"].append(loss_mean)
        history["epoch_times"].append(float(slowest))
        history["bytes"].append(sent)
        epochs_run.append(epoch)
        if log is not None:
            log.epoch({"epoch": epoch, "loss": loss_mean, "time_s": float(slowest), "bytes_sent": sent["total"]})
        if rank == 0 and not cfg["quiet"]:
            print(f"epoch {epoch + 1}/{cfg['epochs']}  loss {loss_mean:.4f}  time {float(slowest):.2f} s  "
                  f"sent {sent['total'] / 2**20:.2f} MiB (features {sent['feature'] / 2**20:.2f} MiB)", flush=True)
        last = epoch + 1 == cfg["epochs"]
        if ckpt_path and ((epoch + 1) % cfg["checkpoint_every"] == 0 or last):
            states = comm.all_gather_object(rng_state(), "gathering random states for the checkpoint")
            if rank == 0:
                save_checkpoint(ckpt_path, {
                    "epoch": epoch, "model": model.state_dict(), "optimizer": opt.state_dict(),
                    "scaler": scaler.state_dict() if scaler is not None else None, "rng": states,
                    "history": history, "config": fingerprint})

    val = _evaluate(ddp.module, g, val_nids, cfg, device, ctx)
    test = _evaluate(ddp.module, g, test_nids, cfg, device, ctx)
    digests = comm.all_gather_object(_param_digest(model), "gathering parameter digests")
    times = history["epoch_times"]
    summary = dict(
        model="sage", dataset=cfg["dataset"], graph_name=cfg["graph_name"], precision=mode, device=str(device),
        backend=backend, world_size=world, num_parts=world, num_nodes=g.num_nodes(), num_edges=g.num_edges(),
        feature_dtype=str(g.ndata["feat"].dtype).replace("torch.", ""), fanouts=cfg["fanouts"],
        batch_size=cfg["batch_size"], epochs=cfg["epochs"], start_epoch=start_epoch, resumed=resumed,
        epochs_run=epochs_run, batches_per_epoch=len(loader), losses=history["losses"], epoch_times=times,
        median_epoch_s=statistics.median(times) if times else float("nan"),
        bytes_sent_per_epoch=history["bytes"],
        median_bytes_sent_per_epoch=statistics.median(b["total"] for b in history["bytes"]) if times else 0,
        val_acc=val[0] / val[1] if val[1] else float("nan"), test_acc=test[0] / test[1] if test[1] else float("nan"),
        num_val=val[1], num_test=test[1], final_loss=history["losses"][-1] if times else float("nan"),
        param_sha256=digests, params_identical=len(set(digests)) == 1, train_nodes_this_rank=int(train_nids.numel()),
        partitioned_now=bool(info.get("partitioned")), part_config=info["config"],
        threads=torch.get_num_threads(),
    )
    if rank == 0:
        if not cfg["quiet"]:
            print(_table(summary), flush=True)
        if cfg["json"]:
            _atomic_write(cfg["json"], [json.dumps(summary, indent=1).encode("utf-8")])
    return summary


def _table(s):
    rows = [
        ("graph", f"{s['graph_name']} ({s['num_nodes']} nodes, {s['num_edges']} edges, {s['num_parts']} parts)"),
        ("processes / backend / device", f"{s['world_size']} / {s['backend']} / {s['device']}"),
        ("precision / feature storage", f"{s['precision']} / {s['feature_dtype']}"),
        ("validation / test accuracy", f"{100 * s['val_acc']:.1f} % / {100 * s['test_acc']:.1f} %"),
        ("median epoch time", f"{1e3 * s['median_epoch_s']:.1f} ms"),
        ("bytes sent per epoch (all ranks)", f"{s['median_bytes_sent_per_epoch'] / 2**20:.3f} MiB"),
        ("final training loss", f"{s['final_loss']:.4f}"),
        ("parameters identical on all ranks", "yes" if s["params_identical"] else "NO"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def run_distributed(args, load_dataset=None):
    """Entry point of ``mpgraph train --distributed`` (one call per process); returns the exit status.

    Parameters
    ----------
    args : argparse.Namespace
        ``mpgraph train``'s options (``model`` must be ``'sage'``;
        ``dataset``, ``data_dir``, ``scale``, ``precision``, ``epochs``,
        ``lr``, ``weight_decay``, ``hidden``, ``layers``, ``dropout``,
        ``fanouts``, ``batch_size``, ``device``, ``seed``, ``json``,
        ``quiet``) and those of :func:`add_distributed_arguments`. Missing
        attributes take their defaults.
    load_dataset : callable, optional
        ``load_dataset(name, data_dir, scale, self_loop, seed) -> (graph,
        num_classes, info)`` (``mpgraph.cli.datasets.load_dataset``), called
        on rank 0 when the graph must be partitioned. Default: the ``csbm``
        dataset only.

    Returns
    -------
    int
        0 on success; 2 for invalid settings or data (the message on stderr);
        3 when a peer process failed (stderr says which collective and how
        to resume).
    """
    prog = "mpgraph train --distributed"
    rank = os.environ.get("RANK", "0")
    try:
        cfg = _config(args)
        rank, world, _, device, backend = _init(cfg)
    except DistributedError as err:
        print(f"{prog}: error: {err}", file=sys.stderr, flush=True)
        return _EXIT_PEER
    except DGLError as err:
        print(f"{prog}: error: rank {rank}: {err}", file=sys.stderr, flush=True)
        return _EXIT_ERROR
    code = 0
    try:
        _train(cfg, rank, world, device, backend, load_dataset)
    except DistributedError as err:
        print(f"{prog}: error: {err}", file=sys.stderr, flush=True)
        code = _EXIT_PEER
    except DGLError as err:
        print(f"{prog}: error: rank {rank}: {err}", file=sys.stderr, flush=True)
        code = _EXIT_ERROR
    except KeyboardInterrupt:
        print(f"\n{prog}: rank {rank}: interrupted", file=sys.stderr, flush=True)
        code = 130
    if code == _EXIT_PEER:
        # a broken group cannot be torn down: leave now, without waiting on dead peers
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    _shutdown(code == 0)
    return code


def _shutdown(in_step):
    """Leave the process group together: free DDP's buffers, meet at a barrier, destroy the group.

    Gloo aborts a process (``terminate called without an active exception``)
    whose group dies while work objects are still alive, e.g. when a peer
    exits first; the barrier keeps every rank here until all are.
    """
    gc.collect()
    if in_step and dist.get_world_size() > 1:
        try:
            dist.barrier()
        except RuntimeError:
            pass
    dist.destroy_process_group()


if __name__ == "__main__":
    raise SystemExit(main())
