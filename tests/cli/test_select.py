"""Model selection of ``mpgraph train``: best validation accuracy, and the GAT paper's early stopping."""

import math

import pytest

from mpgraph.cli._select import Selection


def _feed(selection, epochs):
    """epochs: (val_acc, val_loss, test_acc) per epoch; returns the epoch at which it said stop (or None)."""
    for epoch, (acc, loss, test) in enumerate(epochs):
        if selection.update(epoch, acc, loss, test):
            return epoch
    return None


def test_without_patience_first_best_validation_accuracy_wins_and_never_stops():
    s = Selection()
    stop = _feed(s, [(0.5, 1.0, 0.1), (0.7, 2.0, 0.2), (0.7, 0.1, 0.3), (0.6, 0.05, 0.4)])
    assert stop is None
    assert (s.best_epoch, s.best_val, s.test_acc) == (1, 0.7, 0.2)


def test_patience_counts_epochs_where_neither_loss_nor_accuracy_improved():
    s = Selection(patience=3)
    epochs = [(0.5, 1.0, 0.1),     # both best: selected
              (0.4, 0.9, 0.2),     # loss improves only: resets the wait, not selected
              (0.4, 0.95, 0.3),    # wait 1
              (0.5, 0.99, 0.4),    # accuracy ties its best (>=): resets, loss not best: not selected
              (0.3, 1.0, 0.5),     # wait 1
              (0.3, 1.0, 0.6),     # wait 2
              (0.3, 1.0, 0.7),     # wait 3: stop
              (0.9, 0.1, 0.8)]
    assert _feed(s, epochs) == 6
    assert (s.best_epoch, s.test_acc) == (0, 0.1)


def test_patience_selects_the_last_epoch_where_both_are_at_their_best():
    s = Selection(patience=2)
    epochs = [(0.5, 1.0, 0.1), (0.6, 0.9, 0.2), (0.6, 0.9, 0.3), (0.6, 0.95, 0.4), (0.55, 0.97, 0.5),
              (0.55, 0.97, 0.6)]
    assert _feed(s, epochs) == 5     # epoch 3 resets the wait (accuracy ties its best); 4 and 5 do not
    assert (s.best_epoch, s.best_val, s.test_acc) == (2, 0.6, 0.3)   # ties count (>=, <=): the later one wins


def test_nan_loss_is_no_improvement():
    s = Selection(patience=1)
    assert _feed(s, [(0.5, 1.0, 0.1), (0.4, math.nan, 0.2)]) == 1
    assert s.best_epoch == 0


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
def test_bad_patience_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="expected patience to be a positive int or None"):
        Selection(patience=bad)
