"""Shared helpers of the Triton launchers: row schedules, broadcast layouts, launch configs.

Nothing here is public. The launchers in :mod:`spmm`, :mod:`sddmm`,
:mod:`edge_softmax` and :mod:`segment` take raw torch tensors (already
validated by :mod:`mpgraph.ops`) and return torch tensors.

Load balance
------------
Row reductions (gSpMM, edge softmax, segment reductions) run over a
:class:`RowSchedule`: every row is cut into chunks of at most ``split`` edges
and one program handles one chunk (times one block of features). A row that
fits in one chunk is reduced and written by that program. A longer row (a hub
of a power-law graph) is spread over ``ceil(deg / split)`` programs that write
fp32 partial results to a scratch buffer ("slots"); a second, small kernel
combines the slots of each long row in edge order. No atomics are used, so
results are deterministic and autotuning may rerun a kernel freely.
"""

import contextlib
import os
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from ._layout import coalesce as _coalesce

__all__ = ["INTERPRET", "AUTOTUNE", "autotune_off", "DEFAULT_SPLIT", "RowSchedule", "row_schedule", "acc_type",
           "promote",
           "check_float", "check_device", "feature_layout", "block_size", "get_schedule", "autotuned", "launch",
           "div", "to_out", "dummy"]

#: Whether kernels run under Triton's interpreter (``TRITON_INTERPRET=1`` when this module was imported;
#: ``triton.jit`` reads the variable at decoration time, so it cannot change afterwards).
INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"

#: Autotune on the GPU. ``MPGRAPH_TRITON_AUTOTUNE=0`` (or setting this attribute to False) launches each
#: kernel with its first (default) config instead: one compile per kernel variant, for tests and checks.
AUTOTUNE = os.environ.get("MPGRAPH_TRITON_AUTOTUNE", "1") != "0"


@contextlib.contextmanager
def autotune_off():
    """Inside the block, launches use one configuration each (:data:`AUTOTUNE` False); restored after it."""
    global AUTOTUNE
    saved = AUTOTUNE
    AUTOTUNE = False
    try:
        yield
    finally:
        AUTOTUNE = saved

#: Edges per chunk of a row schedule. Rows longer than this are split over several programs.
DEFAULT_SPLIT = 256

#: Fixed meta-parameters under the interpreter (no autotuning there: it would run every config in Python).
#: Small blocks make the tests' small graphs cover several loop iterations and masked tails.
INTERPRET_META = {"BLOCK_E": 4, "BLOCK_P": 2}

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def acc_type(dtype):
    """Accumulator type of a kernel whose floating inputs promote to ``dtype``: fp64 for fp64, else fp32."""
    return tl.float64 if dtype == torch.float64 else tl.float32


def promote(dtype, *operands):
    """``dtype`` promoted with the dtypes of ``operands`` (``None`` skipped); ``acc_type`` of it is the
    accumulator of a kernel reading those operands and writing ``dtype``."""
    for x in operands:
        if x is not None:
            dtype = torch.promote_types(dtype, x.dtype)
    return dtype


def check_float(name, x):
    """Raise ``TypeError`` unless ``x`` is a float16/bfloat16/float32/float64 tensor."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected {name} to be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(f"expected {name} to be float16/bfloat16/float32/float64, got {x.dtype}")


def check_device(*tensors):
    """Raise ``ValueError`` unless all given tensors (``None`` skipped) share a device the kernels can use.

    That is a CUDA device, or the CPU when running under ``TRITON_INTERPRET=1``.
    """
    devices = {t.device for t in tensors if t is not None}
    if len(devices) > 1:
        raise ValueError(f"expected all tensors on one device, got {sorted(str(d) for d in devices)}")
    for device in devices:
        if device.type == "cuda":
            continue
        if device.type == "cpu" and INTERPRET:
            continue
        raise ValueError(f"Triton kernels need CUDA tensors (or CPU tensors with TRITON_INTERPRET=1 set "
                         f"before triton is imported), got device {device}")


def block_size(n, max_block, min_block=4):
    """Power-of-two block covering ``n`` (at least ``min_block``, at most ``max_block``)."""
    return max(min_block, min(triton.next_power_of_2(max(int(n), 1)), max_block))


# ----------------------------------------------------------------------------------------------
# row schedule
# ----------------------------------------------------------------------------------------------
class RowSchedule(NamedTuple):
    """Work split of a compressed structure ``indptr: (R + 1,)`` into chunks of at most ``split`` edges.

    Chunks are numbered in row order, and inside a row in edge order. All arrays are int64 on
    ``indptr``'s device.

    Attributes
    ----------
    chunk_row, chunk_start, chunk_end : (C,)
        Row of each chunk and its edge positions ``[start, end)`` (positions index ``src``/``eid``).
        Rows without edges get one empty chunk, so every row is written.
    chunk_slot : (C,)
        -1 for a row that fits in one chunk; else the chunk's slot in the partial-result buffer.
    long_row : (L,)
        Rows that span more than one chunk ("long rows").
    long_ptr : (L + 1,)
        Slots of long row ``l`` are ``long_ptr[l]:long_ptr[l + 1]`` (in edge order).
    slot_chunk, slot_long : (P,)
        Chunk and long-row number of each slot.
    num_rows, num_chunks, num_long, num_slots, split : int
        ``R, C, L, P`` and the chunk size.
    """

    chunk_row: torch.Tensor
    chunk_start: torch.Tensor
    chunk_end: torch.Tensor
    chunk_slot: torch.Tensor
    long_row: torch.Tensor
    long_ptr: torch.Tensor
    slot_chunk: torch.Tensor
    slot_long: torch.Tensor
    num_rows: int
    num_chunks: int
    num_long: int
    num_slots: int
    split: int


def row_schedule(indptr, split=DEFAULT_SPLIT):
    """Build the :class:`RowSchedule` of ``indptr: (R + 1,)`` (int32 or int64), chunks of ``split`` edges.

    Costs a few small device ops and three host synchronisations (counts and boolean selections); the
    caller should cache the result per structure (e.g. ``Index.cached(("triton_schedule", split), ...)``).
    """
    split = int(split)
    if split < 1:
        raise ValueError(f"expected split >= 1, got {split}")
    if indptr.dim() != 1 or indptr.numel() < 1:
        raise ValueError(f"expected indptr of shape (R + 1,), got {tuple(indptr.shape)}")
    indptr = indptr.to(torch.int64)
    device = indptr.device
    R = indptr.numel() - 1
    deg = indptr[1:] - indptr[:-1]                                    # (R,)
    nchunk = torch.div(deg + (split - 1), split, rounding_mode="floor").clamp_(min=1)
    is_long = nchunk > 1
    nslot = torch.where(is_long, nchunk, torch.zeros_like(nchunk))
    counts = torch.stack([nchunk.sum(), nslot.sum(), is_long.sum()]).tolist() if R else [0, 0, 0]
    C, P, L = (int(c) for c in counts)
    rows = torch.arange(R, dtype=torch.int64, device=device)
    chunk_row = torch.repeat_interleave(rows, nchunk, output_size=C)
    first_chunk = torch.cumsum(nchunk, 0) - nchunk                     # (R,)
    j = torch.arange(C, dtype=torch.int64, device=device) - first_chunk[chunk_row]  # chunk number in its row
    chunk_start = indptr[chunk_row] + j * split
    chunk_end = torch.minimum(chunk_start + split, indptr[chunk_row + 1])
    first_slot = torch.cumsum(nslot, 0) - nslot
    chunk_slot = torch.where(is_long[chunk_row], first_slot[chunk_row] + j, torch.full_like(j, -1))
    long_row = rows[is_long]
    long_ptr = torch.zeros(L + 1, dtype=torch.int64, device=device)
    torch.cumsum(nchunk[long_row], 0, out=long_ptr[1:])
    slot_chunk = torch.arange(C, dtype=torch.int64, device=device)[chunk_slot >= 0]
    slot_long = torch.repeat_interleave(torch.arange(L, dtype=torch.int64, device=device),
                                        nchunk[long_row], output_size=P)
    return RowSchedule(chunk_row, chunk_start, chunk_end, chunk_slot, long_row, long_ptr,
                       slot_chunk, slot_long, R, C, L, P, split)


def get_schedule(indptr, schedule, split):
    """``schedule`` if given (checked against ``indptr``'s row count), else a new one."""
    if schedule is None:
        return row_schedule(indptr, split)
    if schedule.num_rows != indptr.numel() - 1:
        raise ValueError(f"expected a schedule of {indptr.numel() - 1} rows, got {schedule.num_rows}")
    return schedule


# ----------------------------------------------------------------------------------------------
# broadcast layouts
# ----------------------------------------------------------------------------------------------
def _expanded(x, shape):
    """``x: (R, *f)`` viewed as ``(R, *shape)`` with zero strides on broadcast dims."""
    f = tuple(x.shape[1:])
    padded = (1,) * (len(shape) - len(f)) + f
    return x.reshape((x.shape[0],) + padded).expand((x.shape[0],) + tuple(shape))


def feature_layout(operands, shape, max_dims=2, keep_last=False):
    """Two-level ``(H, D)`` layout of operands broadcast to the feature shape ``shape``.

    ``operands`` are tensors ``(R_i, *f_i)`` (``None`` entries are skipped and get ``None`` back) whose
    feature shapes broadcast (numpy rules, aligned right) to ``shape``. Returns ``(sizes, views, strides)``:
    ``sizes`` is ``[H, D]`` (``max_dims`` numbers) with ``prod(sizes) == prod(shape)``; per operand the
    tensor to pass to a kernel and its element strides ``(s_row, s_H, s_D)``, so that feature
    ``(h, d)`` of row ``r`` is at ``r * s_row + h * s_H + d * s_D`` (``s_H``/``s_D`` are 0 where it
    broadcasts). With ``keep_last`` the last dim of ``shape`` is its own group ``D`` (for a reduction over
    it). Operands that cannot be walked this way are made contiguous; if even that needs more than
    ``max_dims`` groups (``._layout.fits_groups`` says False; the dispatch's ``supports`` predicates then
    leave the call to another backend), every operand is materialised at the full broadcast shape, which
    always fits (memory: one ``(R_i, prod(shape))`` copy per operand).
    """
    shape = tuple(shape)
    present = [x for x in operands if x is not None]

    def groups(views):
        strides = [v.stride()[1:] for v in views]
        if not keep_last:
            return _coalesce(shape, strides, max_dims)
        got = _coalesce(shape[:-1], [st[:-1] for st in strides], max_dims - 1)
        if got is None:
            return None
        return got[0] + [shape[-1]], [g + [st[-1] if shape[-1] != 1 else 0] for g, st in zip(got[1], strides)]

    views = [_expanded(x, shape) for x in present]
    got = groups(views)
    if got is None:
        views = [_expanded(x.contiguous(), shape) for x in present]
        got = groups(views)
        if got is None:
            views = [_expanded(x, shape).contiguous() for x in present]
            got = groups(views)
    sizes, strides = got
    out_views, out_strides = [], []
    it = iter(zip(views, strides))
    for x in operands:
        if x is None:
            out_views.append(None)
            out_strides.append(None)
        else:
            v, st = next(it)
            out_views.append(v)
            out_strides.append((v.stride(0),) + tuple(st))
    return sizes, out_views, out_strides


# ----------------------------------------------------------------------------------------------
# launching
# ----------------------------------------------------------------------------------------------
def launch(kernel, tuned_kernel, grid, args, meta, interpret_meta=None):
    """Run ``tuned_kernel[grid](*args, **meta)`` on the GPU, or ``kernel`` with fixed meta-parameters when
    interpreted (``interpret_meta`` overriding ``INTERPRET_META``) or when :data:`AUTOTUNE` is off (then the
    first config that fits the tile budget).

    ``grid`` is a callable of the meta-parameters (Triton's convention) or a tuple. A meta-parameter the kernel
    does not declare raises ``TypeError`` on every path: compiled launches reject it, but the interpreter ignores
    it, so without this check the CPU tests would pass a launch that fails on a GPU.
    """
    unknown = sorted(set(meta) - set(kernel.arg_names))
    if unknown:
        raise TypeError(f"{kernel.__name__} declares no parameters {unknown}; it takes {kernel.arg_names}")
    if INTERPRET:
        full = dict(meta)
        fixed = {**INTERPRET_META, **(interpret_meta or {})}
        for name in tuned_kernel.keys_tuned:
            full[name] = fixed[name]
        kernel[grid(full) if callable(grid) else grid](*args, **full)
    elif AUTOTUNE:
        tuned_kernel[grid](*args, **meta)
    else:
        config = tuned_kernel.early_config_prune(tuned_kernel.configs, None, **meta)[0]
        full = {**meta, **config.kwargs}
        kernel[grid(full) if callable(grid) else grid](*args, **full, num_warps=config.num_warps,
                                                       num_stages=config.num_stages)


def autotuned(kernel, configs, key, width=None, max_per_thread=16):
    """Wrap ``kernel`` in ``triton.autotune`` (configs tried in order; ``configs[0]`` should suit any input).

    With ``width`` (the name of the launch-time meta-parameter giving a tile's second dimension, e.g.
    ``"BLOCK_F"``), configs whose ``BLOCK_E * width / (32 * num_warps)`` exceeds ``max_per_thread`` elements
    per thread are pruned before benchmarking: gathers hold a 64-bit address per element, and larger tiles
    spill registers (ptxas, sm_90) without being faster.
    """
    def prune(configs, named_args, **meta):
        if width is None:
            return list(configs)
        fits = [c for c in configs
                if c.kwargs.get("BLOCK_E", 1) * meta[width] <= max_per_thread * 32 * c.num_warps]
        return fits or [min(configs, key=lambda c: c.kwargs.get("BLOCK_E", 1) / c.num_warps)]

    wrapped = triton.autotune(configs=configs, key=key, prune_configs_by={"early_config_prune": prune})(kernel)
    wrapped.keys_tuned = sorted({name for c in configs for name in c.kwargs})
    return wrapped


@triton.jit
def div(a, b, ACC: tl.constexpr):
    """``a / b`` correctly rounded (``div_rn`` for fp32; plain division is already IEEE for fp64)."""
    if ACC == tl.float64:
        res = a / b
    else:
        res = tl.div_rn(a, b)
    return res


#: ``INTERPRET`` as a constexpr, readable inside kernels.
_INTERPRET_C = tl.constexpr(INTERPRET)


@triton.jit
def to_out(x, OUT):
    """``x`` rounded to the element type of pointer ``OUT`` (round to nearest, ties to even).

    On the GPU this is ``x.to(...)``. Triton's interpreter truncates float32 -> bfloat16 instead of rounding,
    so there the float32 bits are rounded to bfloat16 precision first (the cast is then exact) and the
    interpreter gives the GPU's results (bfloat16 subnormals aside: the interpreter flushes them to 0).
    """
    if _INTERPRET_C and OUT.dtype.element_ty == tl.bfloat16 and x.dtype == tl.float32:
        bits = x.to(tl.uint32, bitcast=True)
        bits = ((bits + (0x7FFF + ((bits >> 16) & 1))) >> 16) << 16
        x = bits.to(tl.float32, bitcast=True)
    return x.to(OUT.dtype.element_ty)


def dummy(device, dtype=torch.int64):
    """A one-element tensor to pass for a pointer argument a kernel variant does not use."""
    return torch.empty(1, dtype=dtype, device=device)
