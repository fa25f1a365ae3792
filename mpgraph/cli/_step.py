"""What the training commands share: the precision modes, the optimiser step and the epoch loop.

``mpgraph train`` (full graph and ``--minibatch``) and ``mpgraph train --distributed`` all read a
``--precision`` mode the same way (:class:`PrecisionMode`) and step the optimiser the same way
(:func:`backward_step`); the two single-process trainers also share the epoch loop (:func:`run_epochs`):
timing, validation, model selection, progress bar and step memory.
"""

import contextlib
import statistics
import time

import torch

from .. import precision as prec
from ._select import Selection
from .memory import StepMemory
from .models import count_parameters

__all__ = ["PRECISIONS", "PrecisionMode", "backward_step", "run_epochs"]

PRECISIONS = ("fp32", "bf16", "fp16", "amp-bf16", "amp-fp16")
_DTYPE = {"bf16": torch.bfloat16, "fp16": torch.float16, "amp-bf16": torch.bfloat16, "amp-fp16": torch.float16}


class PrecisionMode:
    """One ``--precision`` mode: what is converted, what runs under autocast, the optimiser and the scaler.

    * ``fp32``: everything in float32.
    * ``bf16`` / ``fp16``: graph features and model converted (DGL's CPU recipe); Adam's ``eps`` is 1e-4
      in fp16, where 1e-8 rounds to zero.
    * ``amp-bf16`` / ``amp-fp16``: float32 model under ``torch.autocast``; fp16 adds a GradScaler.

    Parameters
    ----------
    mode : str
        One of :data:`PRECISIONS`.
    device : torch.device
        Where training runs (autocast and the scaler are per device type).

    Examples
    --------
    >>> m = PrecisionMode("amp-bf16", torch.device("cpu"))
    >>> m.dtype, m.autocast, m.converts
    (torch.bfloat16, True, False)
    """

    def __init__(self, mode, device):
        if mode not in PRECISIONS:
            raise ValueError(f"expected a precision in {PRECISIONS}, got {mode!r}")
        self.mode = mode
        self.device = torch.device(device)
        self.dtype = _DTYPE.get(mode)            # None for fp32
        self.autocast = mode.startswith("amp-")
        self.converts = mode in ("bf16", "fp16")

    def graph(self, g):
        """``g`` with its floating features converted (bf16/fp16), else ``g`` itself."""
        if not self.converts:
            return g
        return prec.to_bfloat16(g) if self.mode == "bf16" else prec.to_half(g)

    def model(self, model):
        """``model`` converted to the mode's dtype (bf16/fp16), else unchanged."""
        return model.to(self.dtype) if self.converts else model

    def optimizer(self, params, lr, weight_decay):
        """Adam with the mode's ``eps``."""
        eps = 1e-4 if self.mode == "fp16" else 1e-8
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, eps=eps)

    def scaler(self):
        """A :class:`torch.amp.GradScaler` for ``amp-fp16``, else None."""
        return torch.amp.GradScaler(self.device.type) if self.mode == "amp-fp16" else None

    def context(self):
        """``torch.autocast`` for the amp modes, a null context otherwise."""
        if self.autocast:
            return torch.autocast(self.device.type, dtype=self.dtype)
        return contextlib.nullcontext()


def backward_step(loss, opt, scaler=None):
    """Clear the gradients, back-propagate ``loss`` and step ``opt``.

    With a :class:`torch.amp.GradScaler` (fp16 autocast) the loss is scaled before the backward pass
    and the step is skipped when the scaled gradients overflow, as the scaler decides.
    """
    opt.zero_grad(set_to_none=True)
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        opt.step()


def run_epochs(model, train_epoch, evaluate, epochs, device, patience=None, desc=None):
    """Train for up to ``epochs`` epochs with model selection; returns the figures of one run.

    Parameters
    ----------
    model : torch.nn.Module
        The model (put in train mode before each epoch; its parameters are counted).
    train_epoch : callable
        ``train_epoch() -> (mean training loss, edges processed)``: one epoch of optimiser steps.
    evaluate : callable
        ``evaluate() -> (validation accuracy, test accuracy, validation loss)``, run after each epoch.
    epochs : int
        Most epochs to run.
    device : torch.device
        Synchronised around each timed epoch when it is CUDA; the step memory is measured there.
    patience : int or None
        Early stopping of :class:`~mpgraph.cli._select.Selection`.
    desc : str or None
        Progress-bar label; None shows no bar.

    Returns
    -------
    dict
        ``losses``, ``val_accs``, ``epoch_times``, ``median_epoch_s``, ``test_acc``, ``best_val_acc``,
        ``best_epoch``, ``epochs_run``, ``peak_mem_bytes``, ``mem_method``, ``edges_per_s`` (median edges
        of an epoch over the median epoch time), ``final_loss``, ``parameters``.
    """
    losses, val_accs, times, edges = [], [], [], []
    selection = Selection(patience)
    bar = None
    if desc is not None:
        from tqdm import tqdm
        bar = tqdm(total=epochs, desc=desc, leave=False)
    step_memory = StepMemory(device, epochs)     # epochs after the first: see StepMemory
    for epoch in range(epochs):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        model.train()
        loss, num_edges = train_epoch()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
        losses.append(loss)
        edges.append(num_edges)
        val_acc, test_acc, val_loss = evaluate()
        val_accs.append(val_acc)
        stop = selection.update(epoch, val_acc, val_loss, test_acc)
        if bar is not None:
            bar.set_postfix(loss=f"{loss:.4f}", val=f"{val_acc:.3f}")
            bar.update()
        step_memory.epoch_done(epoch)
        if stop:
            break
    mem = step_memory.close()
    if bar is not None:
        bar.close()
    epoch_time = statistics.median(times)
    return dict(losses=losses, val_accs=val_accs, epoch_times=times, median_epoch_s=epoch_time,
                test_acc=selection.test_acc, best_val_acc=selection.best_val, best_epoch=selection.best_epoch,
                epochs_run=len(losses), peak_mem_bytes=mem.peak_bytes, mem_method=mem.method,
                edges_per_s=statistics.median(edges) / epoch_time if epoch_time > 0 else float("nan"),
                final_loss=losses[-1], parameters=count_parameters(model))
