"""Collectives for remote rows: variable-sized all-to-all exchange, byte accounting, fail-fast errors.

Every remote access (feature rows, sampled neighbours) is one or two
:meth:`Communicator.exchange` calls. An exchange sends ``chunks[r]`` to rank
``r`` with two ``torch.distributed.all_to_all_single`` calls: the row counts
(``W`` int64), then the payload. The payload moves as raw bytes
(``tensor.view(torch.uint8)``), so every dtype travels bit for bit in its
storage width (a bfloat16 row is half the bytes of a float32 one; float8 and
bool work too) on every backend, and the byte count is exact.

Backends: gloo implements ``all_to_all_single`` (``alltoallv``) for CPU
tensors in torch 2.x, checked on torch 2.13, and NCCL for CUDA tensors, so
there is no all-gather fallback to maintain. With gloo the payload moves on
the CPU; with NCCL on the process's CUDA device.

Failure: a collective that raises (a peer closed its connection, or did not
answer within the process group's timeout, set by ``init_process_group(
timeout=...)``) is re-raised as :class:`DistributedError` naming this rank,
the operation and the timeout.
"""

import contextlib
import datetime

import torch
import torch.distributed as dist

from ..base import DGLError

__all__ = ["DistributedError", "Communicator"]

_I64 = torch.int64


class DistributedError(DGLError, RuntimeError):
    """A collective failed: a peer process died, or did not answer within the timeout."""


def _pg_timeout(group, device):
    """The group's collective timeout in seconds (private torch API: None when it cannot be read)."""
    try:
        pg = dist.distributed_c10d._get_default_group() if group is None else group
        t = pg._get_backend(device).options._timeout
        return t.total_seconds() if isinstance(t, datetime.timedelta) else None
    except Exception:       # only quoted in messages
        return None


@contextlib.contextmanager
def guard(what, rank=None, timeout_s=None):
    """Re-raise a failing collective as :class:`DistributedError` with a message that says what to do."""
    try:
        yield
    except DistributedError:
        raise
    except (RuntimeError, ValueError) as err:     # DistBackendError / DistNetworkError subclass RuntimeError
        who = f"rank {rank}" if rank is not None else "this process"
        wait = f" within the {timeout_s:g} s timeout" if timeout_s else ""
        raise DistributedError(
            f"{who}: the collective {what} failed: a peer process died or did not answer{wait} ({type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''}). The job cannot continue: stop every process and restart "
            "it (mpgraph train --distributed: with --resume, from the last checkpoint)") from err


class Communicator:
    """Variable-sized exchanges between the ranks of a process group, with byte counters.

    Parameters
    ----------
    group : ProcessGroup, optional
        Default: the default group (or a single process when
        ``torch.distributed`` is not initialised).
    device : torch.device, optional
        Where payloads live while they move (``'cuda'`` for NCCL). Default:
        CUDA for an NCCL group, else CPU.
    timeout_s : float, optional
        The group's timeout, quoted in error messages.

    Attributes
    ----------
    bytes_sent, bytes_received : dict of str to int
        Bytes moved to and from other ranks, by tag (``'ids'``,
        ``'feature'``, ``'sampling'``, ``'counts'``; a tag ``'kind/name'``
        counts towards both ``'kind/name'`` and ``'kind'``); the rank's own
        chunk is not counted.
    """

    def __init__(self, group=None, device=None, timeout_s=None):
        self.group = group
        self.distributed = dist.is_available() and dist.is_initialized()
        if self.distributed:
            self.rank = dist.get_rank(group)
            self.world_size = dist.get_world_size(group)
            backend = dist.get_backend(group)
        else:
            self.rank, self.world_size, backend = 0, 1, None
        if device is None:
            device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")
        self.device = torch.device(device)
        self.backend = backend
        if timeout_s is None and self.distributed:
            timeout_s = _pg_timeout(group, self.device)
        self.timeout_s = timeout_s
        self.bytes_sent = {}
        self.bytes_received = {}
        self.calls = 0

    def _count(self, table, tag, n):
        table[tag] = table.get(tag, 0) + int(n)
        if "/" in tag:                                    # 'feature/feat' also counts towards 'feature'
            kind = tag.split("/", 1)[0]
            table[kind] = table.get(kind, 0) + int(n)

    def reset_stats(self):
        """Zero the byte counters."""
        self.bytes_sent.clear()
        self.bytes_received.clear()
        self.calls = 0

    def stats(self):
        """``{'bytes_sent': {...}, 'bytes_received': {...}, 'total_bytes_sent': int, 'exchanges': int}``."""
        return {"bytes_sent": dict(self.bytes_sent), "bytes_received": dict(self.bytes_received),
                "total_bytes_sent": sum(v for k, v in self.bytes_sent.items() if "/" not in k),
                "exchanges": self.calls}

    def guard(self, what):
        """Context manager turning a failing collective into :class:`DistributedError`."""
        return guard(what, self.rank, self.timeout_s)

    def _a2a(self, out, inp, out_splits=None, in_splits=None, what="all_to_all"):
        with self.guard(what):
            dist.all_to_all_single(out, inp, out_splits, in_splits, group=self.group)

    def exchange(self, chunks, tag):
        """Send ``chunks[r]`` to rank ``r``; return the list of chunks received from each rank.

        A collective: every rank of the group must call it, in the same order.
        ``chunks[self.rank]`` is returned as is (not sent). All chunks share a
        dtype and trailing shape (their first dimension may differ, 0 included).

        Parameters
        ----------
        chunks : list of Tensor
            One per rank, ``(n_r, *row_shape)``.
        tag : str
            Counter the bytes go to.

        Returns
        -------
        list of Tensor
            ``received[r]``: what rank ``r`` sent here, ``(m_r, *row_shape)``,
            on the device of ``chunks[self.rank]``.
        """
        W, me = self.world_size, self.rank
        if len(chunks) != W:
            raise DGLError(f"exchange expected one chunk per rank ({W}), got {len(chunks)}")
        own = chunks[me]
        if W == 1:
            return [own]
        self.calls += 1
        dtype, row_shape, home = own.dtype, tuple(own.shape[1:]), own.device
        row_bytes = own.element_size()
        for d in row_shape:
            row_bytes *= d
        dev = self.device
        send_counts = torch.tensor([0 if r == me else c.shape[0] for r, c in enumerate(chunks)], dtype=_I64)
        recv_counts = torch.empty(W, dtype=_I64)
        if dev.type != "cpu":
            send_counts, recv_counts = send_counts.to(dev), recv_counts.to(dev)
        self._a2a(recv_counts, send_counts, what=f"exchange of {tag} counts")
        send_counts, recv_counts = send_counts.cpu(), recv_counts.cpu()
        self._count(self.bytes_sent, "counts", 8 * (W - 1))
        self._count(self.bytes_received, "counts", 8 * (W - 1))
        parts = []
        for r, c in enumerate(chunks):
            if r == me or c.shape[0] == 0:
                continue
            if c.dtype != dtype or tuple(c.shape[1:]) != row_shape:
                raise DGLError(f"exchange expected chunks of one dtype and row shape ({dtype}, {row_shape}), got "
                               f"{c.dtype}, {tuple(c.shape[1:])} for rank {r}")
            parts.append(c.detach().to(dev).contiguous().reshape(-1).view(torch.uint8))
        send = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.uint8, device=dev)
        in_splits = (send_counts * row_bytes).tolist()
        out_splits = (recv_counts * row_bytes).tolist()
        recv = torch.empty(sum(out_splits), dtype=torch.uint8, device=dev)
        self._a2a(recv, send, out_splits, in_splits, what=f"exchange of {tag}")
        self._count(self.bytes_sent, tag, send.numel())
        self._count(self.bytes_received, tag, recv.numel())
        out = []
        for r, piece in enumerate(torch.split(recv, out_splits)):
            if r == me:
                out.append(own)
                continue
            n = int(recv_counts[r])
            rows = piece.view(dtype) if piece.numel() else torch.zeros(0, dtype=dtype, device=dev)
            out.append(rows.reshape((n,) + row_shape).to(home))
        return out

    # ----- small collectives ---------------------------------------------
    def all_reduce(self, tensor, op="sum", what="all_reduce"):
        """In-place all-reduce (``'sum'``, ``'max'``, ``'min'``) on the communicator's device; returns the tensor."""
        if self.world_size == 1:
            return tensor
        ops = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}
        t = tensor.to(self.device)
        with self.guard(what):
            dist.all_reduce(t, ops[op], group=self.group)
        tensor.copy_(t.to(tensor.device))
        return tensor

    def all_gather_object(self, obj, what="all_gather_object"):
        """``[obj of rank 0, obj of rank 1, ...]`` (pickled; small objects only)."""
        if self.world_size == 1:
            return [obj]
        out = [None] * self.world_size
        with self.guard(what):
            dist.all_gather_object(out, obj, group=self.group)
        return out

    def broadcast_object(self, obj, src=0, what="broadcast_object"):
        """Rank ``src``'s ``obj`` on every rank (pickled; small objects only)."""
        if self.world_size == 1:
            return obj
        box = [obj]
        with self.guard(what):
            dist.broadcast_object_list(box, src=src, group=self.group)
        return box[0]
