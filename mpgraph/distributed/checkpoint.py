"""Training checkpoints: atomic writes, safe loads, and the random-number state of a process.

A checkpoint is a ``torch.save`` file of a dict of tensors and plain Python
values (loaded with ``weights_only=True``: no arbitrary objects are
unpickled). :func:`save_checkpoint` writes it to a temporary file in the same
directory, fsyncs it and moves it over the target with :func:`os.replace`, so
a crash at any moment leaves either the previous checkpoint or the new one,
never a torn file.
"""

import os
import random
import tempfile

import numpy as np
import torch

from ..base import DGLError
from ..graph_io import _fsync_dir

__all__ = ["save_checkpoint", "load_checkpoint", "rng_state", "set_rng_state", "CHECKPOINT_FORMAT"]

#: Value of the ``"format"`` entry of every checkpoint.
CHECKPOINT_FORMAT = "mpgraph.distributed.checkpoint"
_VERSION = 1


def save_checkpoint(path, state):
    """Write ``state`` to ``path`` atomically (temporary file, fsync, :func:`os.replace`).

    Parameters
    ----------
    path : str or os.PathLike
        Target file; its directory is created if missing.
    state : dict
        Tensors, state dicts and plain Python values. ``"format"`` and
        ``"version"`` entries are added.

    Raises
    ------
    DGLError
        ``state`` not a dict.

    Examples
    --------
    >>> import os, tempfile, torch
    >>> from mpgraph.distributed import save_checkpoint, load_checkpoint
    >>> path = os.path.join(tempfile.mkdtemp(), 'ckpt', 'last.pt')
    >>> save_checkpoint(path, {'epoch': 3, 'w': torch.ones(2)})
    >>> ckpt = load_checkpoint(path)
    >>> ckpt['epoch'], ckpt['w']
    (3, tensor([1., 1.]))
    """
    if not isinstance(state, dict):
        raise DGLError(f"save_checkpoint expected a dict, got {type(state).__name__}")
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    payload = dict(state)
    payload["format"] = CHECKPOINT_FORMAT
    payload["version"] = _VERSION
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(payload, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def load_checkpoint(path, map_location="cpu"):
    """Load a checkpoint written by :func:`save_checkpoint`.

    Parameters
    ----------
    path : str or os.PathLike
    map_location : optional
        Passed to :func:`torch.load` (default ``'cpu'``).

    Returns
    -------
    dict

    Raises
    ------
    DGLError
        A missing file, an unreadable or corrupted one, or not an mpgraph checkpoint.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DGLError(f"expected a checkpoint at {path!r}, got no such file")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:            # zip/pickle errors of a damaged file
        raise DGLError(f"{path!r} is not a readable checkpoint ({type(err).__name__}: {err}); it is corrupted: "
                       "remove it to start over") from err
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise DGLError(f"{path!r} is not an mpgraph checkpoint: expected format {CHECKPOINT_FORMAT!r}")
    if state.get("version", 0) > _VERSION:
        raise DGLError(f"{path!r} is checkpoint version {state.get('version')}, expected at most {_VERSION}; "
                       "upgrade mpgraph")
    return state


def rng_state():
    """This process's random-number state: torch (CPU and every CUDA device), numpy, ``random``."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "cuda": list(torch.cuda.get_rng_state_all()) if torch.cuda.is_available() else [],
        "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(cached)],
        "python": random.getstate(),
    }


def set_rng_state(state):
    """Restore a state returned by :func:`rng_state`."""
    torch.set_rng_state(state["torch"])
    if state.get("cuda") and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
