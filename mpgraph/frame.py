"""Feature storage: one :class:`Frame` per node set or edge set.

A frame maps feature names to tensors whose first dimension is the number of
rows (nodes or edges). Every write checks the row count and the device, so a
mistake is reported where it is made, never deep inside a kernel.
"""

from collections.abc import MutableMapping

import torch

from .base import DGLError, DGLTypeError
from .init import zero_initializer

__all__ = ["Frame"]


class Frame(MutableMapping):
    """Named tensors with a common number of rows.

    Parameters
    ----------
    num_rows : int
        Number of rows every column must have.
    device : torch.device
        Device every column must live on.
    kind : str
        ``'node'`` or ``'edge'`` (used in error messages).
    initializer : callable, optional
        ``init(shape, dtype, device, id_range)`` for rows created without data
        (defaults to zeros).
    """

    def __init__(self, num_rows, device, kind="node", columns=None, initializer=None):
        self._num_rows = int(num_rows)
        self._device = torch.device(device)
        self._kind = kind
        self._columns = dict(columns) if columns else {}
        self._initializer = initializer

    # ----- mapping protocol ---------------------------------------------
    def __getitem__(self, key):
        try:
            return self._columns[key]
        except KeyError:
            raise KeyError(f"{self._kind} feature {key!r} not found; available: {sorted(self._columns)}") from None

    def __setitem__(self, key, value):
        self._columns[key] = self._check(key, value)

    def __delitem__(self, key):
        if key not in self._columns:
            raise KeyError(f"{self._kind} feature {key!r} not found; available: {sorted(self._columns)}")
        del self._columns[key]

    def __iter__(self):
        return iter(self._columns)

    def __len__(self):
        return len(self._columns)

    def __contains__(self, key):
        return key in self._columns

    def __repr__(self):
        items = ", ".join(f"{k!r}: Tensor(shape={tuple(v.shape)}, dtype={v.dtype})" for k, v in self._columns.items())
        return "{" + items + "}"

    # ----- checks ---------------------------------------------------------
    @property
    def num_rows(self):
        return self._num_rows

    @property
    def device(self):
        return self._device

    def _check(self, key, value):
        if not isinstance(key, str):
            raise DGLTypeError(f"expected a str feature name, got {type(key).__name__} {key!r}")
        if not isinstance(value, torch.Tensor):
            raise DGLTypeError(
                f"expected a torch.Tensor for {self._kind} feature {key!r}, got {type(value).__name__}; "
                "convert it with torch.as_tensor(...)")
        if value.dim() == 0 or value.shape[0] != self._num_rows:
            got = "a 0-d tensor" if value.dim() == 0 else f"{value.shape[0]} rows (shape {tuple(value.shape)})"
            raise DGLError(
                f"expected {self._num_rows} rows for {self._kind} feature {key!r} (one per {self._kind}), "
                f"got {got}")
        if value.device != self._device and not _same_device(value.device, self._device):
            raise DGLError(
                f"expected {self._kind} feature {key!r} on {self._device} (the graph's device), got a tensor "
                f"on {value.device}; move it with .to({str(self._device)!r}) or move the graph with g.to(...)")
        return value

    # ----- helpers used by the graph --------------------------------------
    def set_initializer(self, initializer):
        self._initializer = initializer

    def initializer(self):
        return self._initializer or zero_initializer

    def clone(self):
        """Shallow copy: new mapping, same tensors (copy-on-write for local scopes)."""
        return Frame(self._num_rows, self._device, self._kind, self._columns, self._initializer)

    def update_rows(self, rows, data):
        """Write ``data[k]`` into the rows ``rows`` (int64 ids) of each column, out of place.

        Columns that do not exist yet are created with the initializer for the
        other rows. Tensors already stored are never modified in place.
        """
        checked = {}
        n = rows.numel()
        for key, value in data.items():
            if not isinstance(value, torch.Tensor):
                raise DGLTypeError(f"expected a torch.Tensor for {self._kind} feature {key!r}, "
                                   f"got {type(value).__name__}")
            if value.dim() == 0 or value.shape[0] != n:
                raise DGLError(f"expected {n} rows for {self._kind} feature {key!r} (one per selected "
                               f"{self._kind}), got shape {tuple(value.shape)}")
            if not _same_device(value.device, self._device):
                raise DGLError(f"expected {self._kind} feature {key!r} on {self._device}, got {value.device}")
            checked[key] = value
        for key, value in checked.items():
            old = self._columns.get(key)
            if old is None:
                old = self.initializer()((self._num_rows,) + tuple(value.shape[1:]), value.dtype,
                                         self._device, slice(0, self._num_rows))
            elif old.shape[1:] != value.shape[1:]:
                raise DGLError(f"expected {self._kind} feature {key!r} rows of shape {tuple(old.shape[1:])} "
                               f"(the stored column), got {tuple(value.shape[1:])}")
            new = old.clone() if old.dtype == value.dtype else old.to(torch.result_type(old, value))
            if new is old:
                new = old.clone()
            new[rows] = value.to(new.dtype)
            self._columns[key] = new

    def subframe(self, rows):
        """Frame with the rows ``rows`` (int64 ids) of every column."""
        cols = {k: v[rows] for k, v in self._columns.items()}
        return Frame(rows.numel(), self._device, self._kind, cols, self._initializer)

    def extend(self, num_new, data=None):
        """Frame with ``num_new`` extra rows.

        ``data`` gives values for the new rows; other columns get the
        initializer's values there, and a column only in ``data`` gets them
        for the old rows.
        """
        data = dict(data or {})
        for key, value in data.items():
            if not isinstance(value, torch.Tensor) or value.dim() == 0 or value.shape[0] != num_new:
                raise DGLError(f"expected {num_new} rows for {self._kind} feature {key!r} of the added "
                               f"{self._kind}s, got {getattr(value, 'shape', type(value).__name__)}")
        total = self._num_rows + num_new
        init = self.initializer()
        cols = {}
        for key, old in self._columns.items():
            if key in data:
                tail = data[key].to(device=self._device, dtype=old.dtype)
            else:
                tail = init((num_new,) + tuple(old.shape[1:]), old.dtype, self._device, slice(self._num_rows, total))
            cols[key] = torch.cat([old, tail], 0)
        for key, value in data.items():
            if key not in cols:
                head = init((self._num_rows,) + tuple(value.shape[1:]), value.dtype, self._device,
                            slice(0, self._num_rows))
                cols[key] = torch.cat([head, value.to(self._device)], 0)
        return Frame(total, self._device, self._kind, cols, self._initializer)

    def to(self, device, **kwargs):
        device = torch.device(device)
        cols = {k: v.to(device, **kwargs) for k, v in self._columns.items()}
        return Frame(self._num_rows, device, self._kind, cols, self._initializer)

    def astype_float(self, dtype):
        """Frame whose floating-point columns are cast to ``dtype`` (others shared)."""
        cols = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in self._columns.items()}
        return Frame(self._num_rows, self._device, self._kind, cols, self._initializer)


def _same_device(a, b):
    if a == b:
        return True
    # 'cuda' and 'cuda:0' name the same device when 0 is current
    if a.type == b.type == "cuda":
        ia = a.index if a.index is not None else torch.cuda.current_device()
        ib = b.index if b.index is not None else torch.cuda.current_device()
        return ia == ib
    return False
