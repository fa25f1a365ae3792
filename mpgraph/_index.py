"""Sparse structure of one relation: COO plus lazily built, cached CSR/CSC.

An :class:`Index` is immutable. It holds the edges ``(src[k], dst[k])`` of one
relation in edge-ID order (COO) and builds, on first use, the two compressed
formats message passing needs:

* ``csc()``: in-edges grouped by destination ``(indptr: (N_dst + 1,), src, eid)``;
  forward gSpMM reduces over these rows.
* ``csr()``: out-edges grouped by source ``(indptr: (N_src + 1,), dst, eid)``;
  the backward of gSpMM with respect to source features walks these rows.

Within a row, edges keep increasing edge-ID order (stable sort), so results do
not depend on how the formats were obtained. Compressed arrays are int64 (what
torch's indexing kernels take); the user-facing id type is :attr:`idtype`.
Built formats are cached on the object, so repeated message passing never
re-sorts edges. ``cached(key, build)`` stores any other derived structure
(a torch sparse tensor, an int32 copy for a kernel) under the same lifetime.
"""

import torch

__all__ = ["Index", "GraphLike", "as_index"]


def _compress(keys, num_rows):
    """Stable-sort ``keys`` and return ``(indptr: (num_rows + 1,), perm: (E,))``."""
    E = keys.numel()
    if E == 0:
        return (torch.zeros(num_rows + 1, dtype=torch.int64, device=keys.device),
                torch.zeros(0, dtype=torch.int64, device=keys.device))
    if E == 1 or bool((keys[1:] >= keys[:-1]).all()):
        perm = torch.arange(E, dtype=torch.int64, device=keys.device)
    else:
        perm = torch.sort(keys, stable=True).indices
    counts = torch.bincount(keys, minlength=num_rows)
    indptr = torch.zeros(num_rows + 1, dtype=torch.int64, device=keys.device)
    torch.cumsum(counts, 0, out=indptr[1:])
    return indptr, perm


class Index:
    """Immutable sparse structure of one relation (``num_src`` x ``num_dst``).

    Build it with :meth:`from_coo`, :meth:`from_csr` or :meth:`from_csc`; inputs
    are trusted (the public constructors in :mod:`mpgraph.convert` validate).
    """

    __slots__ = ("_src", "_dst", "_num_src", "_num_dst", "_idtype", "_cache", "__weakref__")

    def __init__(self, src, dst, num_src, num_dst, idtype=None):
        self._src = src
        self._dst = dst
        self._num_src = int(num_src)
        self._num_dst = int(num_dst)
        self._idtype = idtype if idtype is not None else src.dtype
        self._cache = {}

    # ----- construction -------------------------------------------------
    @classmethod
    def from_coo(cls, src, dst, num_src, num_dst):
        """Index from edge endpoints ``src, dst: (E,)`` (edge k is ``(src[k], dst[k])``)."""
        return cls(src, dst, num_src, num_dst)

    @classmethod
    def _from_compressed(cls, indptr, indices, eids, num_rows, num_src, num_dst, rows_are_src):
        idtype = indices.dtype
        E = indices.numel()
        indptr64 = indptr.to(torch.int64)
        rows = torch.repeat_interleave(
            torch.arange(num_rows, dtype=torch.int64, device=indices.device),
            indptr64[1:] - indptr64[:-1], output_size=E)
        cols = indices.to(torch.int64)
        if eids is None:
            eids64 = torch.arange(E, dtype=torch.int64, device=indices.device)
        else:
            eids64 = eids.to(torch.int64)
        src_by_eid = torch.empty(E, dtype=torch.int64, device=indices.device)
        dst_by_eid = torch.empty(E, dtype=torch.int64, device=indices.device)
        if rows_are_src:
            src_by_eid[eids64] = rows
            dst_by_eid[eids64] = cols
        else:
            src_by_eid[eids64] = cols
            dst_by_eid[eids64] = rows
        index = cls(src_by_eid.to(idtype), dst_by_eid.to(idtype), num_src, num_dst, idtype)
        # Keep the given compressed form if it is already in stable eid order.
        if E <= 1 or _row_sorted_by_eid(indptr64, eids64):
            key = "csr" if rows_are_src else "csc"
            index._cache[key] = (indptr64, cols, eids64)
        return index

    @classmethod
    def from_csr(cls, indptr, indices, eids, num_src, num_dst):
        """Index from out-edge rows: ``indptr: (N_src + 1,)``, ``indices`` = dst, ``eids`` or None."""
        return cls._from_compressed(indptr, indices, eids, num_src, num_src, num_dst, True)

    @classmethod
    def from_csc(cls, indptr, indices, eids, num_src, num_dst):
        """Index from in-edge rows: ``indptr: (N_dst + 1,)``, ``indices`` = src, ``eids`` or None."""
        return cls._from_compressed(indptr, indices, eids, num_dst, num_src, num_dst, False)

    # ----- basic properties ---------------------------------------------
    @property
    def src(self):
        """Source node of each edge, ``(E,)`` in :attr:`idtype`."""
        return self._src

    @property
    def dst(self):
        """Destination node of each edge, ``(E,)`` in :attr:`idtype`."""
        return self._dst

    @property
    def num_src(self):
        return self._num_src

    @property
    def num_dst(self):
        return self._num_dst

    @property
    def num_edges(self):
        return self._src.numel()

    @property
    def idtype(self):
        return self._idtype

    @property
    def device(self):
        return self._src.device

    # ----- cached derived structures -------------------------------------
    def cached(self, key, build):
        """Return ``self._cache[key]``, building it with ``build()`` on first use."""
        value = self._cache.get(key)
        if value is None:
            value = build()
            self._cache[key] = value
        return value

    @property
    def src64(self):
        """``src`` as int64 (shared with ``src`` when the idtype is int64)."""
        return self._src if self._src.dtype == torch.int64 else self.cached("src64", lambda: self._src.long())

    @property
    def dst64(self):
        """``dst`` as int64 (shared with ``dst`` when the idtype is int64)."""
        return self._dst if self._dst.dtype == torch.int64 else self.cached("dst64", lambda: self._dst.long())

    def csc(self):
        """In-edges grouped by destination: ``(indptr: (N_dst + 1,), src: (E,), eid: (E,))``, int64."""
        def build():
            indptr, perm = _compress(self.dst64, self._num_dst)
            return indptr, self.src64[perm], perm
        return self.cached("csc", build)

    def csr(self):
        """Out-edges grouped by source: ``(indptr: (N_src + 1,), dst: (E,), eid: (E,))``, int64."""
        def build():
            indptr, perm = _compress(self.src64, self._num_src)
            return indptr, self.dst64[perm], perm
        return self.cached("csr", build)

    def in_degrees(self):
        """In-degree of every destination node, ``(N_dst,)`` int64."""
        if "csc" in self._cache:
            indptr = self._cache["csc"][0]
            return indptr[1:] - indptr[:-1]
        return self.cached("in_deg", lambda: torch.bincount(self.dst64, minlength=self._num_dst))

    def out_degrees(self):
        """Out-degree of every source node, ``(N_src,)`` int64."""
        if "csr" in self._cache:
            indptr = self._cache["csr"][0]
            return indptr[1:] - indptr[:-1]
        return self.cached("out_deg", lambda: torch.bincount(self.src64, minlength=self._num_src))

    def formats(self):
        """Names of the sparse formats built so far (``'coo'`` always)."""
        return ["coo"] + [f for f in ("csr", "csc") if f in self._cache]

    def create_formats_(self):
        """Build every format now (e.g. before forking DataLoader workers)."""
        self.csr()
        self.csc()

    # ----- derived indexes -----------------------------------------------
    def reverse(self):
        """The transposed relation; its CSR/CSC are this one's CSC/CSR (no re-sort)."""
        rev = Index(self._dst, self._src, self._num_dst, self._num_src, self._idtype)
        if "csc" in self._cache:
            rev._cache["csr"] = self._cache["csc"]
        if "csr" in self._cache:
            rev._cache["csc"] = self._cache["csr"]
        return rev

    def to(self, device):
        """Copy of this index on ``device`` (itself when already there); built formats travel too."""
        device = torch.device(device)
        if device == self.device:
            return self
        out = Index(self._src.to(device), self._dst.to(device), self._num_src, self._num_dst, self._idtype)
        for key in ("csr", "csc"):
            if key in self._cache:
                out._cache[key] = tuple(t.to(device) for t in self._cache[key])
        return out

    def astype(self, idtype):
        """Copy with node/edge ids in ``idtype`` (int32 or int64); formats are kept."""
        if idtype == self._idtype:
            return self
        out = Index(self._src.to(idtype), self._dst.to(idtype), self._num_src, self._num_dst, idtype)
        for key in ("csr", "csc"):
            if key in self._cache:
                out._cache[key] = self._cache[key]
        return out

    def __getstate__(self):
        return (self._src, self._dst, self._num_src, self._num_dst, self._idtype)

    def __setstate__(self, state):
        self._src, self._dst, self._num_src, self._num_dst, self._idtype = state
        self._cache = {}

    def __repr__(self):
        return (f"Index(num_src={self._num_src}, num_dst={self._num_dst}, "
                f"num_edges={self.num_edges}, idtype={self._idtype}, device={self.device})")


def _row_sorted_by_eid(indptr, eids):
    """True when eids increase inside every row of a compressed structure."""
    E = eids.numel()
    if E <= 1:
        return True
    increasing = eids[1:] > eids[:-1]
    # positions where a new row starts may decrease freely
    row_start = torch.zeros(E - 1, dtype=torch.bool, device=eids.device)
    starts = indptr[1:-1]
    starts = starts[(starts > 0) & (starts < E)]
    row_start[starts - 1] = True
    return bool((increasing | row_start).all())


class GraphLike:
    """Base class of objects that carry an :class:`Index` (mpgraph's graphs).

    :mod:`mpgraph.ops` accepts an :class:`Index` or a ``GraphLike`` and never
    imports the graph module; subclasses implement :meth:`_op_index`.
    """

    __slots__ = ()

    def _op_index(self):
        """Return the :class:`Index` that message-passing ops run on."""
        raise TypeError(f"{type(self).__name__} does not define _op_index()")


def as_index(g):
    """The :class:`Index` of ``g`` (an Index or a graph); ``TypeError`` otherwise."""
    if isinstance(g, Index):
        return g
    if isinstance(g, GraphLike):
        return g._op_index()
    from .base import DGLTypeError
    raise DGLTypeError(f"expected an mpgraph graph or Index, got {type(g).__name__}; "
                       "build one with mpgraph.graph((src, dst))")
