"""Model selection for ``mpgraph train``: which epoch's test accuracy is reported, and when to stop.

Two protocols:

* ``patience=None`` (default): train every epoch; report the test accuracy of the epoch with the best
  validation accuracy (the first such epoch on ties).
* ``patience=P``: the GAT paper's protocol (Velickovic et al. 2018, and their reference code). An epoch
  *improves* when its validation accuracy is >= the best so far **or** its validation loss is <= the
  lowest so far; after ``P`` epochs in a row without improvement training stops. The reported test
  accuracy is that of the last epoch whose validation accuracy and loss were **both** at their best
  so far (the epoch whose model the paper's code saves and then tests).
"""

import math

import torch.nn.functional as F

__all__ = ["Selection", "scores"]


def scores(logits, labels, masks, val_mask):
    """Accuracy of ``logits`` on each of ``masks`` (NaN for an empty mask) and the float32 cross-entropy on
    ``val_mask`` (NaN when empty): what :meth:`Selection.update` needs after an evaluation pass."""
    logits = logits.float()
    pred = logits.argmax(1)
    accs = [float((pred[m] == labels[m]).float().mean()) if int(m.sum()) else float("nan") for m in masks]
    val_loss = float(F.cross_entropy(logits[val_mask], labels[val_mask])) if int(val_mask.sum()) else math.nan
    return accs, val_loss


class Selection:
    """Tracks the selected epoch; :meth:`update` returns True when training should stop.

    Parameters
    ----------
    patience : int or None
        Epochs without improvement of validation loss or accuracy before stopping; None: never stop
        early and select by validation accuracy alone.

    Examples
    --------
    >>> s = Selection(patience=2)
    >>> [s.update(e, acc, loss, test) for e, (acc, loss, test) in
    ...  enumerate([(0.5, 1.0, 0.40), (0.6, 0.9, 0.55), (0.6, 0.95, 0.57), (0.5, 0.97, 0.5), (0.5, 0.99, 0.5)])]
    [False, False, False, False, True]
    >>> s.best_epoch, s.test_acc
    (1, 0.55)
    """

    def __init__(self, patience=None):
        if patience is not None and (isinstance(patience, bool) or not isinstance(patience, int) or patience < 1):
            raise ValueError(f"expected patience to be a positive int or None, got {patience!r}")
        self.patience = patience
        self.best_val = -1.0           # validation accuracy of the selected epoch
        self.test_acc = 0.0            # test accuracy of the selected epoch
        self.best_epoch = 0
        self._max_acc = -math.inf      # best validation accuracy and lowest loss seen (early stopping)
        self._min_loss = math.inf
        self._waited = 0

    def update(self, epoch, val_acc, val_loss, test_acc):
        """Record one epoch's validation accuracy, validation loss and test accuracy; True means stop."""
        if self.patience is None:
            if val_acc > self.best_val:
                self.best_val, self.test_acc, self.best_epoch = val_acc, test_acc, epoch
            return False
        if val_acc >= self._max_acc or val_loss <= self._min_loss:
            if val_acc >= self._max_acc and val_loss <= self._min_loss:
                self.best_val, self.test_acc, self.best_epoch = val_acc, test_acc, epoch
            self._max_acc = max(self._max_acc, val_acc)
            self._min_loss = min(self._min_loss, val_loss)
            self._waited = 0
            return False
        self._waited += 1
        return self._waited >= self.patience
