"""Low-level building blocks shared by the Numba CPU kernels.

Everything here is used from inside ``@njit`` code, except the few Python
helpers at the bottom (array views, chunking, thread count).

Storage formats
---------------
Numba has no 16-bit float type on the CPU, so half-precision tensors reach the
kernels as 16-bit integer views, and the integer type says which format the
bits hold (this module is the one place that knows):

=================  ======================  =====================================
torch dtype        array seen by a kernel  element load / store
=================  ======================  =====================================
``float64``        ``float64``             as is; accumulate in float64
``float32``        ``float32``             as is; accumulate in float32
``bfloat16``       ``int16`` (bits)        ``bits << 16``; RNE rounding on store
``float16``        ``uint16`` (bits)       LLVM ``fpext half`` / ``fptrunc``
                                           (``vcvtph2ps``/``vcvtps2ph``: RNE)
=================  ======================  =====================================

:func:`load` widens one element to the accumulator type (float64 for float64
arrays, float32 otherwise) and :func:`store` rounds once to the array's format.
Both index raw pointers (no negative-index wraparound, no bounds checks), so
the callers' loops vectorise; indices are trusted.
"""

import ctypes
import hashlib
import itertools
import mmap
import os
import secrets
import sys
from concurrent.futures import ThreadPoolExecutor
from types import CodeType

import numpy as np
import torch
from llvmlite import ir
from numba import njit, types
from numba.core import bytecode, caching, cgutils, serialize
from numba.core.dispatcher import Dispatcher
from numba.extending import intrinsic, overload
from numba.np.arrayobj import make_array, populate_array

from . import SettingError, _buffers


# ----------------------------------------------------------------------------
# on-disk cache safe for processes compiling at the same time


class _KeyNamedCacheFile(caching.IndexDataCacheFile):
    """Numba's index + data cache files, with each data file named by a hash of its key.

    Numba's own scheme numbers a function's data files in the order its overloads are saved:
    a save reads the index, takes the first free number, writes the index, then the data. Two
    processes saving different overloads of one function at the same moment (pytest-xdist
    workers, ``torchrun`` ranks, data-loader workers sharing one ``__pycache__``) can both take
    number 1; the index then names one overload and the file holds the other. Every kernel
    factory here makes many overloads of one function (one per operator, layout and dtypes,
    told apart by their closure variables), so a later process could load the code of another
    operator: a ``TypeError`` ("can't unbox array") when the argument types differ, and a wrong
    result (``max`` for ``min``) when they agree.

    Here a data file's name is a hash of its key, so a file only ever holds the code of that key;
    the data is written before the index names it, and :meth:`load` ignores an index entry whose
    file name is not its key's (entries written by Numba's numbering). Concurrent saves can still
    drop each other's index entries: that costs a recompile, never a wrong load.
    """

    def __init__(self, cache_path, filename_base, source_stamp):
        super().__init__(cache_path, filename_base, source_stamp)
        self._filename_base = filename_base

    def _name_for(self, key):
        # the key holds Numba types, strings and hex digests; their repr is stable across processes
        return f"{self._filename_base}.{hashlib.sha256(repr(key).encode()).hexdigest()[:24]}.nbc"

    def save(self, key, data):
        name = self._name_for(key)
        self._save_data(name, data)  # (atomic: a temporary file renamed into place)
        overloads = self._load_index()
        if overloads.get(key) != name:
            overloads[key] = name
            self._save_index(overloads)

    def load(self, key):
        name = self._load_index().get(key)
        if name is None or name != self._name_for(key):
            return None
        try:
            return self._load_data(name)
        except OSError:  # removed since the index was read
            return None


def _stable_closure_value(value, _open=frozenset()):
    """A description of one closure value that pickles to the same bytes in every process.

    Numba's cache key hashes the pickled closure. A compiled function in a closure (a row loop called by a
    kernel) pickles with a number unique to its process, so every new process missed the cache of such a
    kernel and compiled it again. A compiled function is described instead by what its machine code depends
    on: its code (module, name, bytecode, constants, defaults), its compile options and, recursively, its own
    closure (a function met again inside its own description, recursion, by its name). Other values are kept
    as they are (numbers, strings, booleans: stable when pickled).
    """
    if isinstance(value, Dispatcher):
        func = value.py_func
        if id(func) in _open:
            return ("compiled function, recursive", func.__module__, func.__qualname__)
        inner = _open | {id(func)}
        return ("compiled function",) + _stable_function(func, inner) + (
            _stable_closure_value(value.targetoptions, inner),)
    if isinstance(value, CodeType):
        return ("code", value.co_name, hashlib.sha256(value.co_code).hexdigest(),
                _stable_closure_value(value.co_consts, _open))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(_stable_closure_value(v, _open) for v in value)
    if isinstance(value, (set, frozenset)):   # (a set's order follows the process's string hash seed)
        return ("set",) + tuple(sorted(map(repr, value)))
    if isinstance(value, dict):
        return ("dict",) + tuple(sorted((repr(k), _stable_closure_value(v, _open)) for k, v in value.items()))
    return value


def _stable_function(func, _open=frozenset()):
    code = func.__code__
    return (func.__module__, func.__qualname__, hashlib.sha256(code.co_code).hexdigest(),
            _stable_closure_value(code.co_consts, _open), _stable_closure_value(func.__defaults__, _open),
            _stable_closure(func, _open))


def _stable_closure(func, _open=frozenset()):
    """:func:`_stable_closure_value` of each of ``func``'s closure cells, in order."""
    return tuple(_stable_closure_value(c.cell_contents, _open) for c in func.__closure__ or ())


class _KeyNamedFunctionCache(caching.FunctionCache):
    """Numba's per-function cache, storing through :class:`_KeyNamedCacheFile`, with a key that is the same in
    every process (:func:`_stable_closure_value`)."""

    def __init__(self, py_func):
        super().__init__(py_func)
        self._cache_file = _KeyNamedCacheFile(self._cache_path, self._impl.filename_base,
                                              self._impl.locator.get_source_stamp())

    def _index_key(self, sig, codegen):
        # Numba's key (signature, target, bytecode hash, closure hash) with the closure made stable first
        func = self._py_func
        closure = _stable_closure(func)
        digest = hashlib.sha256(serialize.dumps(closure) if closure else b"").hexdigest()
        return sig, codegen.magic_tuple(), (hashlib.sha256(func.__code__.co_code).hexdigest(), digest)


def _number_functions_from_a_random_start():
    """Make the names Numba gives compiled functions differ between processes (numba/numba#10486).

    Numba names a compiled function by its qualified name, its argument types and a number from a counter
    that starts at 1 in every process. The kernels' row loops are closures of one qualified name whose code
    differs by their closure variables, so two processes that compile two of them after the same imports give
    both the same name. Cached code is linked with that name as ``linkonce_odr``, which lets LLVM keep either
    definition: a third process that loaded both kernels from the cache ran one kernel with the other's row
    loop (wrong gradients and heap corruption; reproduced by
    ``test_kernels_compiled_by_different_processes_run_their_own_row_loops_when_loaded_together``). Numbering
    from a random 60-bit start keeps every process's names apart; equal code compiled twice is then linked
    twice, which costs nothing but memory. Cache keys do not contain the number, so cached kernels are still
    found."""
    counter = getattr(bytecode.FunctionIdentity, "_unique_ids", None)
    if isinstance(counter, itertools.count):
        bytecode.FunctionIdentity._unique_ids = itertools.count((1 << 40) + secrets.randbits(60))


_number_functions_from_a_random_start()


def cached_njit(**options):
    """``numba.njit(cache=True, **options)`` with an on-disk cache that processes can fill concurrently.

    Every cached kernel of the package is compiled through this (see :class:`_KeyNamedCacheFile`
    for what Numba's own ``cache=True`` gets wrong across processes).
    """
    if "cache" in options:
        raise TypeError(f"cached_njit always caches; got cache={options['cache']!r}")

    def decorate(py_func):
        dispatcher = njit(**options)(py_func)
        dispatcher._cache = _KeyNamedFunctionCache(dispatcher.py_func)
        return dispatcher

    return decorate

# ----------------------------------------------------------------------------
# intrinsics: raw element access, bit casts, half conversion, prefetch


def element_ptr(context, builder, aryty, ary_val, idx):
    """LLVM pointer to element ``idx`` of the array value ``ary_val`` (for intrinsics' code generation)."""
    ary = context.make_array(aryty)(context, builder, ary_val)
    return builder.gep(ary.data, [idx])


@intrinsic
def raw_get(typingctx, arr, idx):
    """``arr[idx]`` on a 1-D contiguous array, without wraparound or bounds checks."""
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
        return None
    sig = arr.dtype(arr, idx)

    def codegen(context, builder, sig, args):
        ptr = element_ptr(context, builder, sig.args[0], args[0], args[1])
        return builder.load(ptr)

    return sig, codegen


@intrinsic
def raw_get_pair_bits(typingctx, arr, idx):
    """The 32 bits of the two 16-bit elements ``arr[idx]``, ``arr[idx + 1]`` in one load (``arr[idx]`` in the
    low half, as x86 and every little-endian CPU lays them out), unchecked."""
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer) or arr.dtype.bitwidth != 16:
        return None
    sig = types.uint32(arr, idx)

    def codegen(context, builder, sig, args):
        ptr = element_ptr(context, builder, sig.args[0], args[0], args[1])
        wide = builder.bitcast(ptr, ir.IntType(32).as_pointer())
        return builder.load(wide, align=2)       # 16-bit alignment is all the array promises

    return sig, codegen


@intrinsic
def raw_set(typingctx, arr, idx, val):
    """``arr[idx] = val`` (``val`` already of the array's dtype), unchecked."""
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
        return None
    sig = types.void(arr, idx, arr.dtype)

    def codegen(context, builder, sig, args):
        ptr = element_ptr(context, builder, sig.args[0], args[0], args[1])
        builder.store(args[2], ptr)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def borrow(typingctx, arr):
    """The same array without its reference-counted owner (meminfo and parent set to NULL).

    Numba increments and decrements an array's reference count (an atomic operation, contended
    when threads share the array) at every call that passes it; a kernel borrows its arrays once
    at entry, while its caller's references keep them alive, so the helpers it calls in its hot
    loops pay nothing for them.
    """
    if not isinstance(arr, types.Array):
        return None
    sig = arr(arr)

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        out = context.make_array(sig.return_type)(context, builder)
        for name in ("nitems", "itemsize", "data", "shape", "strides"):
            setattr(out, name, getattr(ary, name))
        out.meminfo = cgutils.get_null_value(out.meminfo.type)
        out.parent = cgutils.get_null_value(out.parent.type)
        return out._getvalue()

    return sig, codegen


#: environment variable choosing the cache level of the kernels' software prefetches (read once, at import)
PREFETCH_LOCALITY_ENV = "MPGRAPH_PREFETCH_LOCALITY"
#: default locality hint: 2, ``prefetcht1`` on x86 (into L2, not L1). The gathers prefetch whole source rows
#: 16 edges ahead; into L2 they ran 0.69-0.85x the time of ``prefetcht0`` (locality 3, the earlier default) on
#: a 2-core AMD EPYC (10M edges, D=128, fp32 and bf16 gSpMM/gSDDMM forwards and the fused u_mul_e backward;
#: benchmarks/prefetch_locality.py). Not measured on Intel CPUs.
PREFETCH_LOCALITY_DEFAULT = 2


def prefetch_locality():
    """The locality hint compiled into :func:`prefetch`: ``MPGRAPH_PREFETCH_LOCALITY`` or the default.

    ``llvm.prefetch``'s scale: 3 keeps the line in every level (x86 ``prefetcht0``, into L1), 2 ``prefetcht1``
    (L2), 1 ``prefetcht2``, 0 non-temporal (``prefetchnta``). Kernels compile it in, so it is read once, when
    the kernels load; it is part of their on-disk cache key (:data:`SOURCE_HASH`).

    Raises
    ------
    SettingError
        (a ValueError) the variable is set to something other than 0, 1, 2 or 3.
    """
    raw = os.environ.get(PREFETCH_LOCALITY_ENV, "").strip()
    if raw == "":
        return PREFETCH_LOCALITY_DEFAULT
    if raw not in ("0", "1", "2", "3"):
        raise SettingError(f"{PREFETCH_LOCALITY_ENV} must be 0, 1, 2 or 3 (llvm.prefetch's locality: 3 into L1, "
                           f"2 into L2; unset for the default {PREFETCH_LOCALITY_DEFAULT}), got {raw!r}")
    return int(raw)


PREFETCH_LOCALITY = prefetch_locality()


def target_vector_registers():
    """Vector registers of the CPU the kernels compile for: 32 with AVX-512 (``zmm0``-``zmm31``), else 16.

    Numba compiles for the host unless ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` name another target; a named
    target counts as AVX-512 only when its feature string says ``+avx512f``, and a host whose features
    llvmlite cannot read (it raises on some platforms) as 16. Passes that keep many running values in
    registers (:data:`.spmm.TRACK_WIDE`) are sized by it."""
    from llvmlite import binding
    from numba.core import config

    features = config.CPU_FEATURES
    if features is None and config.CPU_NAME in (None, "host"):
        try:
            return 32 if binding.get_host_cpu_features().get("avx512f", False) else 16
        except RuntimeError:
            return 16
    return 32 if "+avx512f" in (features or "").replace(" ", "").split(",") else 16


@intrinsic
def prefetch(typingctx, arr, idx):
    """Hint the cache line holding ``arr[idx]`` towards the core (``llvm.prefetch`` with
    :data:`PREFETCH_LOCALITY`; never faults)."""
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, sig, args):
        ptr = element_ptr(context, builder, sig.args[0], args[0], args[1])
        i8p = builder.bitcast(ptr, ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [i8p, i32(0), i32(PREFETCH_LOCALITY), i32(1)])  # read, the locality, data cache
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def select(typingctx, cond, a, b):
    """``a if cond else b`` as one LLVM ``select`` (branch-free, so it vectorises into blends and the
    operands can stay in registers; a Python conditional expression compiles to branches)."""
    if not isinstance(cond, types.Boolean) or a != b:
        return None
    sig = a(cond, a, b)

    def codegen(context, builder, sig, args):
        return builder.select(args[0], args[1], args[2])

    return sig, codegen


@intrinsic
def mul_u32(typingctx, a, b):
    """``a * b`` modulo 2^32 for uint32 ``a`` and ``b``, as a 32-bit multiply. Numba widens uint32 arithmetic to 64
    bits, and LLVM then keeps the product in 64-bit vector lanes (``vpmuludq``, four per AVX2 vector, not eight)."""
    if a != types.uint32 or b != types.uint32:
        return None
    sig = types.uint32(a, b)

    def codegen(context, builder, sig, args):
        return builder.mul(args[0], args[1])

    return sig, codegen


@intrinsic
def xorshift_u32(typingctx, z, k):
    """``z ^ (z >> k)`` (logical shift) for uint32 ``z`` and a shift ``0 <= k < 32``, in 32-bit arithmetic."""
    if z != types.uint32 or not isinstance(k, types.Integer):
        return None
    sig = types.uint32(z, k)

    def codegen(context, builder, sig, args):
        width = args[1].type.width
        shift = args[1] if width == 32 else (builder.trunc if width > 32 else builder.zext)(args[1], args[0].type)
        return builder.xor(args[0], builder.lshr(args[0], shift))

    return sig, codegen


@intrinsic
def f32_from_bits(typingctx, bits):
    """Reinterpret the low 32 bits of an integer as a float32."""
    if not isinstance(bits, types.Integer):
        return None
    sig = types.float32(bits)

    def codegen(context, builder, sig, args):
        v = args[0]
        if v.type.width > 32:
            v = builder.trunc(v, ir.IntType(32))
        elif v.type.width < 32:
            v = builder.zext(v, ir.IntType(32))
        return builder.bitcast(v, ir.FloatType())

    return sig, codegen


@intrinsic
def bits_from_f32(typingctx, x):
    """The bits of a float32 as uint32."""
    if x != types.float32:
        return None
    sig = types.uint32(x)

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return sig, codegen


@intrinsic
def half_bits_to_f32(typingctx, bits):
    """IEEE binary16 bits (uint16) -> float32, exact."""
    if not isinstance(bits, types.Integer) or bits.bitwidth != 16:
        return None
    sig = types.float32(bits)

    def codegen(context, builder, sig, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

    return sig, codegen


@intrinsic
def f32_to_half_bits(typingctx, x):
    """float32 -> IEEE binary16 bits (uint16), round to nearest even (hardware ``vcvtps2ph``)."""
    if x != types.float32:
        return None
    sig = types.uint16(x)

    def codegen(context, builder, sig, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))

    return sig, codegen


@njit
def edge_of(eid, use_eid, k):
    """The edge id of slot ``k``: ``eid[k]``, or ``k`` itself when the ids are the identity (``use_eid`` False:
    ``eid`` is the empty array a kernel gets for None, and the operand is already in slot order)."""
    return raw_get(eid, k) if use_eid else k


# ----------------------------------------------------------------------------
# typed load / store / accumulator helpers (dispatch on the array dtype at compile time


def load(arr, idx):
    """Element ``idx`` of a flat array, widened to the accumulator type."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


def store(arr, idx, val):
    """Round ``val`` once to the array's format and write it at ``idx``."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


def store_copied(arr, idx, val, src):
    """Write ``val``, an element of ``src`` widened by :func:`load` (or its negation, or zero), at ``idx``.

    When ``arr`` has ``src``'s format such a value is exactly representable, so a bfloat16 array takes its
    upper 16 bits without the rounding :func:`store` does, which LLVM does not fold away even for a plain
    copy (bf16, 2M edges, D=64: gSDDMM ``copy_rhs`` 15.9 -> 11.5 ms, ``edge_winners``' negation 20.0 ->
    7.1-9.8 ms). Otherwise it is :func:`store`.
    """
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


def acc_zero(arr):
    """Zero in the accumulator type of ``arr`` (float64 for float64 arrays, else float32)."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


def to_acc(arr, val):
    """Convert ``val`` to the accumulator type of ``arr``."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@njit(inline="always")
def bf16_low_to_f32(bits):
    """The bfloat16 in the low 16 bits of a uint32, as a float32 (its bits moved up; the high 16 bits are
    shifted out, so the high element of a pair read by :func:`load_pair` comes as ``bits >> 16``, which LLVM
    turns into one mask)."""
    return f32_from_bits(bits << np.uint32(16))


@overload(load)
def _load_impl(arr, idx):
    dt = arr.dtype
    if dt == types.float64 or dt == types.float32:
        return lambda arr, idx: raw_get(arr, idx)
    if dt == types.int16:  # bfloat16 bits
        return lambda arr, idx: bf16_low_to_f32(np.uint32(np.uint16(raw_get(arr, idx))))
    if dt == types.uint16:  # float16 bits
        return lambda arr, idx: half_bits_to_f32(raw_get(arr, idx))
    return None


def load_pair(arr, idx):
    """Elements ``idx`` and ``idx + 1`` of a flat array, widened as :func:`load` widens them; a bfloat16 array
    reads both in one 32-bit load and widens each half with one bit operation (:func:`pair_loads`)."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


def pair_loads(arr):
    """Compile-time constant: whether :func:`load_pair` reads ``arr`` in one load (bfloat16 bits). A bfloat16
    gSpMM pass that widens two columns per 32-bit load takes 0.80-0.82x the time of one widening each column
    (a 128-column copy_u sum; scratch script, 2M and 10M edges, 2 threads, AMD EPYC)."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(load_pair)
def _load_pair_impl(arr, idx):
    if arr.dtype == types.int16:   # bfloat16: the low element's bits move up, the high element's stay
        def impl(arr, idx):
            q = raw_get_pair_bits(arr, idx)
            return bf16_low_to_f32(q), bf16_low_to_f32(q >> np.uint32(16))
        return impl
    return lambda arr, idx: (load(arr, idx), load(arr, idx + 1))


@overload(pair_loads)
def _pair_loads_impl(arr):
    v = arr.dtype == types.int16
    return lambda arr: v


@intrinsic
def f32_to_bf16_bits(typingctx, x):
    """float32 -> bfloat16 bits (int16), round to nearest even; NaN stays a (quiet) NaN.

    In 32-bit integer arithmetic: written as Numba code, the rounding's unsigned sums were typed 64 bits wide,
    so each vector of a row's stores held 4 values instead of 8 and was packed down twice (a store loop over
    cached float32 values took 2.5x the time of this one; equal results for all 2**32 inputs, thirty-eighth
    session)."""
    if x != types.float32:
        return None
    sig = types.int16(x)

    def codegen(context, builder, sig, args):
        return _bf16_round(builder, args[0], None)

    return sig, codegen


def _bf16_round(builder, value, lanes):
    """LLVM code of :func:`f32_to_bf16_bits` on a float (``lanes`` None) or a vector of ``lanes`` floats."""
    i32 = ir.IntType(32) if lanes is None else ir.VectorType(ir.IntType(32), lanes)
    i16 = ir.IntType(16) if lanes is None else ir.VectorType(ir.IntType(16), lanes)

    def c(v):
        return ir.Constant(i32, v if lanes is None else [v] * lanes)

    b = builder.bitcast(value, i32)
    hi = builder.lshr(b, c(16))
    # round to nearest even: add 0x7FFF plus the lowest kept bit, keep the upper half (a NaN can carry into
    # the sign; it takes the other branch)
    rounded = builder.lshr(builder.add(builder.add(b, c(0x7FFF)), builder.and_(hi, c(1))), c(16))
    quiet = builder.or_(hi, c(0x40))  # NaN: truncated, with the quiet bit set so it stays a NaN
    is_nan = builder.icmp_unsigned(">", builder.and_(b, c(0x7FFFFFFF)), c(0x7F800000))
    return builder.trunc(builder.select(is_nan, quiet, rounded), i16)


@overload(store)
def _store_impl(arr, idx, val):
    dt = arr.dtype
    if dt == types.float64:
        return lambda arr, idx, val: raw_set(arr, idx, np.float64(val))
    if dt == types.float32:
        return lambda arr, idx, val: raw_set(arr, idx, np.float32(val))
    if dt == types.int16:
        return lambda arr, idx, val: raw_set(arr, idx, f32_to_bf16_bits(np.float32(val)))
    if dt == types.uint16:
        return lambda arr, idx, val: raw_set(arr, idx, f32_to_half_bits(np.float32(val)))
    return None


@overload(store_copied)
def _store_copied_impl(arr, idx, val, src):
    if arr.dtype == types.int16 and src.dtype == types.int16:   # bf16 into bf16: the bits, shifted
        return lambda arr, idx, val, src: raw_set(arr, idx, np.int16(np.uint16(bits_from_f32(np.float32(val))
                                                                                >> np.uint32(16))))
    return lambda arr, idx, val, src: store(arr, idx, val)


@overload(acc_zero)
def _acc_zero_impl(arr):
    if arr.dtype == types.float64:
        return lambda arr: np.float64(0.0)
    return lambda arr: np.float32(0.0)


@overload(to_acc)
def _to_acc_impl(arr, val):
    if arr.dtype == types.float64:
        return lambda arr, val: np.float64(val)
    return lambda arr, val: np.float32(val)


def alloc_acc(arr, n):
    """Uninitialised scratch of ``n`` elements in the accumulator type of ``arr``."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(alloc_acc)
def _alloc_acc_impl(arr, n):
    if arr.dtype == types.float64:
        return lambda arr, n: np.empty(n, np.float64)
    return lambda arr, n: np.empty(n, np.float32)


# ----------------------------------------------------------------------------
# fixed-size scratch on the stack: with a constant size and constant-trip loops, LLVM keeps it in
# vector registers (the accumulators of the blocked gSpMM passes)


def _stack_array(dtype):
    @intrinsic
    def stack_array(typingctx, n):
        if not isinstance(n, types.IntegerLiteral):
            return None
        count = n.literal_value
        aryty = types.Array(dtype, 1, "C")
        sig = aryty(n)

        def codegen(context, builder, sig, args):
            llty = context.get_data_type(dtype)
            ptr = cgutils.alloca_once(builder, ir.ArrayType(llty, count))
            data = builder.bitcast(ptr, llty.as_pointer())
            ary = make_array(aryty)(context, builder)
            intp = context.get_value_type(types.intp)
            size = context.get_abi_sizeof(llty)
            populate_array(ary, data=data, shape=[intp(count)], strides=[intp(size)], itemsize=intp(size),
                           meminfo=None)
            return ary._getvalue()

        return sig, codegen

    return stack_array


stack_f32 = _stack_array(types.float32)
stack_f64 = _stack_array(types.float64)
stack_i32 = _stack_array(types.int32)


def stack_acc(arr, n):
    """``n`` (a compile-time constant) accumulator slots for ``arr`` on the stack (float64 for float64)."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(stack_acc, prefer_literal=True)
def _stack_acc_impl(arr, n):
    if not isinstance(n, types.IntegerLiteral):
        return None
    if arr.dtype == types.float64:
        return lambda arr, n: stack_f64(n)
    return lambda arr, n: stack_f32(n)


def _vector_ptr(context, builder, aryty, ary_val, n, idx=None):
    """``(pointer, alignment)``: the ``n`` elements of a flat array from ``idx`` (from its start when None) as one
    LLVM vector of its element type, for the vector intrinsics below."""
    ptr = (context.make_array(aryty)(context, builder, ary_val).data if idx is None
           else element_ptr(context, builder, aryty, ary_val, idx))
    elt = context.get_data_type(aryty.dtype)
    return builder.bitcast(ptr, ir.VectorType(elt, n).as_pointer()), aryty.dtype.bitwidth // 8


@intrinsic
def fold_adjacent(typingctx, arr, n, m):
    """Sum adjacent pairs of ``arr[:n]`` until ``m`` values are left, in ``arr[:m]``: ``arr[i]`` becomes the sum of
    the ``n // m`` consecutive values from ``arr[i * n // m]`` (``n``, ``m`` compile-time powers of two, ``m <= n``).

    ``H`` dots of ``n // H`` products each (a row of narrow heads) fold in ``log2(n // H)`` steps of one vector
    add of even against odd lanes, ending contiguous. Written in LLVM vectors because the same sums as Numba
    loops became one horizontal reduction per dot (extracts, shuffles and scalar adds); the float adds carry
    ``reassoc``/``contract`` like the kernels' fastmath."""
    if not (isinstance(arr, types.Array) and arr.dtype in (types.float32, types.float64)
            and isinstance(n, types.IntegerLiteral) and isinstance(m, types.IntegerLiteral)):
        return None
    N, M = n.literal_value, m.literal_value
    if not (0 < M <= N and N & (N - 1) == 0 and M & (M - 1) == 0):
        return None
    sig = types.void(arr, n, m)

    def codegen(context, builder, sig, args):
        ptr, size = _vector_ptr(context, builder, sig.args[0], args[0], N)
        v = builder.load(ptr, align=size)
        k = N
        while k > M:
            k //= 2
            even = builder.shuffle_vector(v, v, ir.Constant(ir.VectorType(ir.IntType(32), k),
                                                            [2 * i for i in range(k)]))
            odd = builder.shuffle_vector(v, v, ir.Constant(ir.VectorType(ir.IntType(32), k),
                                                           [2 * i + 1 for i in range(k)]))
            v = builder.fadd(even, odd, flags=("reassoc", "contract"))
        builder.store(v, _vector_ptr(context, builder, sig.args[0], args[0], M)[0], align=size)
        return context.get_dummy_value()

    return sig, codegen


def _run_signature(arr, idx, run, m):
    """``(m, signature)`` of :func:`load_run`/:func:`store_run`, or None: ``arr`` a flat array of a kernel format,
    ``idx`` an integer, ``run`` a float32 or float64 array (float64 for a float64 ``arr``), ``m`` a literal run
    length."""
    if not (isinstance(arr, types.Array) and isinstance(run, types.Array) and isinstance(m, types.IntegerLiteral)
            and m.literal_value > 0 and isinstance(idx, types.Integer)):
        return None
    if arr.dtype not in (types.float64, types.float32, types.int16, types.uint16):
        return None
    if run.dtype != types.float64 and (run.dtype != types.float32 or arr.dtype == types.float64):
        return None
    return m.literal_value, types.void(arr, idx, run, m)


@intrinsic
def load_run(typingctx, arr, idx, run, m):
    """``run[:m] = arr[idx:idx + m]`` widened to ``run``'s type, as one vector load and conversion (``m`` a
    compile-time constant; ``run`` a :func:`stack_acc` array, float32, or float64 for any format). A few values
    that feed several products (the weights of one edge's heads) load as one vector, not ``m`` scalar loads and
    conversions."""
    typed = _run_signature(arr, idx, run, m)
    if typed is None:
        return None
    n, sig = typed

    def codegen(context, builder, sig, args):
        aryty, runty = sig.args[0], sig.args[2]
        f32 = ir.FloatType()
        ptr, size = _vector_ptr(context, builder, aryty, args[0], n, args[1])
        v = builder.load(ptr, align=size)
        if aryty.dtype == types.int16:          # bfloat16: the bits move to the upper half of a float32
            v32 = builder.zext(v, ir.VectorType(ir.IntType(32), n))
            v = builder.bitcast(builder.shl(v32, ir.Constant(v32.type, [16] * n)), ir.VectorType(f32, n))
        elif aryty.dtype == types.uint16:       # float16: exact widening
            v = builder.fpext(builder.bitcast(v, ir.VectorType(ir.HalfType(), n)), ir.VectorType(f32, n))
        if runty.dtype == types.float64 and aryty.dtype != types.float64:   # a float64 run: exact widening
            v = builder.fpext(v, ir.VectorType(ir.DoubleType(), n))
        ptr, size = _vector_ptr(context, builder, runty, args[2], n)
        builder.store(v, ptr, align=size)
        return context.get_dummy_value()

    return sig, codegen


def _store_run_codegen(n, nontemporal):
    """Code generation of :func:`store_run` (``nontemporal``: of :func:`store_run_nt`)."""
    def codegen(context, builder, sig, args):
        aryty, runty = sig.args[0], sig.args[2]
        ptr, size = _vector_ptr(context, builder, runty, args[2], n)
        v = builder.load(ptr, align=size)
        if runty.dtype == types.float64 and aryty.dtype != types.float64:   # through float32, as store rounds
            v = builder.fptrunc(v, ir.VectorType(ir.FloatType(), n))
        if aryty.dtype == types.int16:
            v = _bf16_round(builder, v, n)
        elif aryty.dtype == types.uint16:
            v = builder.bitcast(builder.fptrunc(v, ir.VectorType(ir.HalfType(), n)), ir.VectorType(ir.IntType(16), n))
        ptr, size = _vector_ptr(context, builder, aryty, args[0], n, args[1])
        if nontemporal:     # the caller guarantees the 64-byte alignment (a misaligned vmovntps faults)
            stored = builder.store(v, ptr, align=NT_ALIGN)
            stored.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        else:
            builder.store(v, ptr, align=size)
        return context.get_dummy_value()

    return codegen


@intrinsic
def store_run(typingctx, arr, idx, run, m):
    """``arr[idx:idx + m] = run[:m]``, each value rounded to the array's format as :func:`store` rounds it (once from
    float32; a float64 run goes through float32, as there), as one vector conversion and store (the counterpart
    of :func:`load_run`)."""
    typed = _run_signature(arr, idx, run, m)
    if typed is None:
        return None
    n, sig = typed
    return sig, _store_run_codegen(n, False)


#: alignment in bytes :func:`store_run_nt` needs of its destination (a cache line; AVX-512's streaming stores fault
#: on less)
NT_ALIGN = 64
#: row widths (elements) of the kernels that write with :func:`store_run_nt` (``sddmm.streaming_kernel``, the
#: products' ``scatter.edge_winners``); the fused backward's elementwise weights have their own register widths
STREAM_WIDTHS = (16, 32, 64, 128, 256)


def streams(out, row_elems, nontemporal=None, *, widths=None, min_row_bytes=NT_ALIGN):
    """Whether a kernel writes ``out``'s rows of ``row_elems`` elements with :func:`store_run_nt`: rows that fill
    whole cache lines from a :data:`NT_ALIGN`-aligned start, of one of ``widths`` elements (a kernel's compiled
    widths, such as :data:`STREAM_WIDTHS`; None: any) and at least ``min_row_bytes`` bytes (a kernel whose short
    rows measured slower streamed) and, with ``nontemporal`` None, a result larger than the L3
    (``spmm.L3_BYTES``), which the caches could not keep for its reader anyway; True: whenever the rows allow
    (tests), False: never (comparisons)."""
    row_bytes = row_elems * out.element_size()
    if (nontemporal is False or row_bytes % NT_ALIGN or row_bytes < min_row_bytes or out.data_ptr() % NT_ALIGN
            or (widths is not None and row_elems not in widths)):
        return False
    if nontemporal is None:
        from .spmm import L3_BYTES

        return out.numel() * out.element_size() > L3_BYTES
    return True


@intrinsic
def store_run_nt(typingctx, arr, idx, run, m):
    """:func:`store_run` as a non-temporal (streaming) store: the line goes to memory without being read first
    and without taking a place in the caches. For results larger than the cache written once at scattered rows
    (an ``E x F`` gSDDMM result at edge ids), where a plain store first reads each line it writes. The caller
    guarantees that ``arr``'s address at ``idx`` is a multiple of :data:`NT_ALIGN` and that ``m`` elements fill
    whole lines, and ends its writes with :func:`store_fence`."""
    typed = _run_signature(arr, idx, run, m)
    if typed is None or (m.literal_value * arr.dtype.bitwidth // 8) % NT_ALIGN:
        return None
    n, sig = typed
    return sig, _store_run_codegen(n, True)


@intrinsic
def store_fence(typingctx):
    """A full memory fence (``mfence`` on x86): the streaming stores before it are visible to other threads
    before any later memory access of this one. :func:`store_run_nt`'s stores are weakly ordered."""
    def codegen(context, builder, sig, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


def _run_arrays(arrays, m):
    """Whether ``arrays`` are accumulator-type (float32 or float64) stack arrays of one dtype and ``m`` a positive
    compile-time constant: the operands of the run intrinsics below."""
    return (all(isinstance(a, types.Array) and a.dtype == arrays[0].dtype for a in arrays)
            and arrays[0].dtype in (types.float32, types.float64)
            and isinstance(m, types.IntegerLiteral) and m.literal_value > 0)


def _splat(builder, vty, value):
    """A vector of type ``vty`` with ``value`` in every lane."""
    v = builder.insert_element(ir.Constant(vty, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(v, v, ir.Constant(ir.VectorType(ir.IntType(32), vty.count), [0] * vty.count))


def _lanewise(n, compute):
    """Code generation of a run intrinsic ``f(dst, operands..., m)``: ``dst[:n] = compute(builder, vty, *values)``,
    the values being each array operand's first ``n`` elements as one vector load and each scalar as it is."""
    def codegen(context, builder, sig, args):
        vty = ir.VectorType(context.get_data_type(sig.args[0].dtype), n)
        dst_ptr, size = _vector_ptr(context, builder, sig.args[0], args[0], n)
        values = [builder.load(_vector_ptr(context, builder, t, a, n)[0], align=size) if isinstance(t, types.Array)
                  else a for t, a in zip(sig.args[1:-1], args[1:-1])]
        builder.store(compute(builder, vty, *values), dst_ptr, align=size)
        return context.get_dummy_value()

    return codegen


@intrinsic
def mul_run(typingctx, dst, a, b, m):
    """``dst[:m] = a[:m] * b`` (``b`` a scalar) or ``a[:m] * b[:m]`` (``b`` an array), one vector multiply over
    accumulator-type stack arrays (``m`` a compile-time constant). LLVM left these few products scalar, with
    extracts and inserts around each, when written as loops beside :func:`fold_adjacent`'s vectors."""
    run = isinstance(b, types.Array)
    if not (_run_arrays((dst, a, b) if run else (dst, a), m) and (run or b == dst.dtype)):
        return None
    return types.void(dst, a, b, m), _lanewise(
        m.literal_value,
        lambda bld, vty, va, vb: bld.fmul(va, vb if run else _splat(bld, vty, vb), flags=("reassoc", "contract")))


@intrinsic
def recip_run(typingctx, dst, a, one, m):
    """``dst[:m] = one / a[:m]``, one vector division (IEEE, as the scalar ``/``) over accumulator-type stack arrays
    (``m`` a compile-time constant; ``one`` a scalar of their dtype). Written as a loop of ``m`` scalar divisions
    beside the vectors of the max/min product backward's folded heads, LLVM kept them scalar: eight ``vdivss``
    per edge with 8 heads (forty-seventh session)."""
    if not (_run_arrays((dst, a), m) and one == dst.dtype):
        return None
    return types.void(dst, a, one, m), _lanewise(m.literal_value,
                                                 lambda b, vty, va, one: b.fdiv(_splat(b, vty, one), va))


def _div_grad_lanes(builder, vty, s, w):
    """:func:`div_grad_run`'s lanes: ``0 - s`` over ``w * w``, or 0 where the edge won nothing (``s == 0``) and
    ``w * w`` is not a positive number (0, NaN, an underflow)."""
    zero = ir.Constant(vty, [0.0] * vty.count)
    w2 = builder.fmul(w, w)
    quotient = builder.fdiv(builder.fsub(zero, s), w2)
    keep_zero = builder.and_(builder.fcmp_ordered("==", s, zero), builder.fcmp_unordered("<=", w2, zero))
    return builder.select(keep_zero, zero, quotient)


@intrinsic
def div_grad_run(typingctx, dst, s, w, m):
    """``dst[i] = 0 if s[i] == 0 and not w[i]**2 > 0 else (0 - s[i]) / w[i]**2`` for ``i < m``, in vectors over
    accumulator-type stack arrays (``m`` a compile-time constant): ``u_div_e``'s edge gradient from the sums ``s``
    of ``G * x`` over the columns each head won and the weights ``w`` (``scatter._div_grad``, one value at a time,
    bit for bit the same: IEEE products and division, no fast-math flags)."""
    if not _run_arrays((dst, s, w), m):
        return None
    return types.void(dst, s, w, m), _lanewise(m.literal_value, _div_grad_lanes)


def line_elems(arr):
    """Compile-time constant: elements of ``arr`` per 64-byte cache line."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(line_elems)
def _line_elems_impl(arr):
    n = 64 // (arr.dtype.bitwidth // 8)
    return lambda arr: n


# ----------------------------------------------------------------------------
# fast exp for softmax: float32, ~1 ulp, vectorisable (no libm call)

_LOG2E = np.float32(1.4426950408889634)
_LN2_HI = np.float32(0.693359375)
_LN2_LO = np.float32(-2.12194440e-4)


@njit(fastmath={"contract"})
def exp_f32(x):
    """``exp(x)`` in float32 (Cephes ``expf`` polynomial, max error ~1 ulp; -inf -> 0, NaN -> NaN)."""
    x = np.float32(x)
    xc = min(max(x, np.float32(-87.33654)), np.float32(88.72283))
    n = np.floor(xc * _LOG2E + np.float32(0.5))
    r = xc - n * _LN2_HI
    r = r - n * _LN2_LO
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    p = p * r * r + r + np.float32(1.0)
    # 2**n by building the exponent; n in [-126, 128] after the clamp -> split in two factors
    ni = np.int32(n)
    n1 = ni >> np.int32(1)
    n2 = ni - n1
    s1 = f32_from_bits(np.uint32(n1 + np.int32(127)) << np.uint32(23))
    s2 = f32_from_bits(np.uint32(n2 + np.int32(127)) << np.uint32(23))
    y = p * s1 * s2
    if x < np.float32(-87.33654):
        y = np.float32(0.0)
    if x > np.float32(88.72283):
        y = np.float32(np.inf)
    if x != x:
        y = x
    return y


def acc_exp(x):
    """``exp`` in the accumulator type: :func:`exp_f32` for float32, ``np.exp`` for float64."""
    raise TypeError("a Numba intrinsic: it runs only inside @njit kernels, not from Python")


@overload(acc_exp)
def _acc_exp_impl(x):
    if x == types.float64:
        return lambda x: np.exp(x)
    if x == types.float32:
        return lambda x: exp_f32(x)
    return None


# ----------------------------------------------------------------------------
# Python-side helpers

#: torch dtype -> numpy dtype of the view the kernels receive.
KERNEL_DTYPE = {
    torch.float64: np.float64,
    torch.float32: np.float32,
    torch.bfloat16: np.int16,
    torch.float16: np.uint16,
}

FLOAT_DTYPES = tuple(KERNEL_DTYPE)


def kernel_view(t):
    """Flat, zero-copy numpy view of a contiguous CPU float tensor in the kernels' storage format."""
    t = t.detach()  # tensors that require grad refuse .numpy(); the view shares storage either way
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).reshape(-1).numpy()
    if t.dtype == torch.float16:
        return t.reshape(-1).numpy().view(np.uint16)
    return t.reshape(-1).numpy()


def index_view(t):
    """Flat numpy view of an int64 CPU tensor (None -> empty placeholder)."""
    if t is None:
        return _EMPTY_I64
    return t.detach().reshape(-1).numpy()


_EMPTY_I64 = np.zeros(0, np.int64)


def num_threads(work=None, serial_work=None):
    """Threads for the next kernel: ``torch.get_num_threads()``, or 1 when ``work`` (elements) is below
    ``serial_work`` (default :data:`SERIAL_WORK`; :data:`PASS_SERIAL_WORK` for plain passes over rows)."""
    if work is not None and work < (SERIAL_WORK if serial_work is None else serial_work):
        return 1
    return max(1, torch.get_num_threads())


#: below this many feature elements touched, kernels run on the calling thread only
SERIAL_WORK = 1 << 15
#: the same for a plain pass over rows, each element read and written once (row scaling, row copies): handing
#: work to the pool cost about 50 us a call, more than a second thread saves below a few hundred thousand
#: elements (2-core AMD EPYC VM, forty-second session; a row copy of 2,000 x 41 float32 took 0.155 ms on two
#: threads against 0.112 on one, forty-third session)
PASS_SERIAL_WORK = 1 << 20


@cached_njit(nogil=True)
def balanced_bounds(indptr, nchunks, row_cost):
    """Row boundaries ``(nchunks + 1,)`` splitting rows into chunks of about equal work.

    The work of rows ``[0, r)`` is ``indptr[r] + row_cost * r`` (edges plus a per-row
    cost), a non-decreasing function of ``r``; each boundary is found by binary search,
    so a power-law hub gets a chunk to itself instead of serialising a thread.
    """
    R = indptr.size - 1
    E = indptr[R] - indptr[0]
    total = E + row_cost * R
    out = np.empty(nchunks + 1, np.int64)
    out[0] = 0
    out[nchunks] = R
    for c in range(1, nchunks):
        target = (total * c) // nchunks
        lo = out[c - 1]
        hi = R
        while lo < hi:  # first r with work(r) >= target
            mid = (lo + hi) // 2
            if indptr[mid] - indptr[0] + row_cost * mid < target:
                lo = mid + 1
            else:
                hi = mid
        out[c] = lo
    return out


def chunk_bounds(indptr_np, nthreads, row_cost=1):
    """Balanced chunk boundaries for a row-parallel kernel (a few chunks per thread)."""
    R = indptr_np.size - 1
    if R <= 0:
        return np.zeros(1, np.int64)
    nchunks = int(min(R, 8 * nthreads if nthreads > 1 else 1))
    return balanced_bounds(indptr_np, nchunks, row_cost)


@intrinsic
def atomic_fetch_add(typingctx, arr, idx, val):
    """Atomically ``old = arr[idx]; arr[idx] += val``; returns ``old`` (int64 arrays)."""
    if not isinstance(arr, types.Array) or arr.dtype != types.int64:
        return None
    sig = types.int64(arr, idx, val)

    def codegen(context, builder, sig, args):
        ptr = element_ptr(context, builder, sig.args[0], args[0], args[1])
        v = context.cast(builder, args[2], sig.args[2], types.int64)
        return builder.atomic_rmw("add", ptr, v, "monotonic")

    return sig, codegen


#: outputs at least this large are advised as transparent huge pages (glibc serves freed buffers of a few
#: MiB and more from fresh zero pages again, see ``_buffers``): the same bound as the cache's
HUGE_PAGE_MIN_BYTES = _buffers.CACHE_MIN_BYTES
_MADV_HUGEPAGE = 14  # Linux <sys/mman.h>
_MADVISE = []


def _madvise():
    """libc's ``madvise`` (Linux only), or None."""
    if not _MADVISE:
        fn = None
        if sys.platform.startswith("linux"):
            try:
                fn = ctypes.CDLL(None, use_errno=True).madvise
                fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
                fn.restype = ctypes.c_int
            except (OSError, AttributeError):
                fn = None
        _MADVISE.append(fn)
    return _MADVISE[0]


def huge_pages_enabled():
    """Whether :func:`empty_out` advises large buffers as huge pages (``MPGRAPH_HUGE_PAGES=0`` turns it off)."""
    return os.environ.get("MPGRAPH_HUGE_PAGES", "1") != "0" and _madvise() is not None


def advise_huge_pages(t):
    """Ask Linux to back the untouched pages of a large CPU tensor with 2 MiB pages; returns whether it asked.

    A fresh buffer of hundreds of MiB otherwise costs one page fault per 4 KiB on first write, which on
    this kind of machine costs more than a kernel's pass over it (a fresh 2M x 64 float32 fill measured
    96-102 ms against 28-30 ms advised). This is the advice PyTorch's own ``THP_MEM_ALLOC_ENABLE=1`` gives
    every allocation, given here to the kernels' large outputs only. It is a hint: where Linux has
    transparent huge pages off, or the call fails, nothing changes.
    """
    if t.device.type != "cpu":
        return False
    return _advise_range(t.data_ptr(), t.numel() * t.element_size())


def _advise_range(ptr, nbytes):
    """:func:`advise_huge_pages` on the bytes ``[ptr, ptr + nbytes)``."""
    if nbytes < HUGE_PAGE_MIN_BYTES or not huge_pages_enabled():
        return False
    page = mmap.PAGESIZE   # madvise wants page-aligned bounds (4 KiB on x86, up to 64 KiB on arm64)
    start = -(-ptr // page) * page
    end = (ptr + nbytes) // page * page
    return end > start and _madvise()(start, end - start, _MADV_HUGEPAGE) == 0


def empty_out(shape, dtype):
    """``torch.empty(shape, dtype=dtype)`` for a kernel's output, advised as huge pages when large.

    Outputs of :data:`._buffers.CACHE_MIN_BYTES` or more are set on a block of the CPU buffer cache
    (:mod:`._buffers`), reused from an earlier output no tensor holds any more when one of the same size is
    free: no page faults and no zeroing by the kernel on the second and later calls.
    """
    t = _buffers.cached_empty(shape, dtype, on_new=lambda b: _advise_range(b.data_ptr(), b.nbytes()))
    if t is not None:
        return t
    t = torch.empty(shape, dtype=dtype)
    advise_huge_pages(t)
    return t


_POOL = None
_POOL_PID = None


def _pool(workers):
    """The persistent worker pool (rebuilt after ``fork``: a child inherits no threads)."""
    global _POOL, _POOL_PID
    if _POOL is None or _POOL_PID != os.getpid() or _POOL._max_workers < workers:
        _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mpgraph-cpu")
        _POOL_PID = os.getpid()
    return _POOL


def run_parallel(kernel, nthreads, *args):
    """Run ``kernel(counter, *args)`` on ``nthreads`` threads sharing one work counter.

    ``kernel`` is a ``nogil`` Numba function that claims chunks with
    ``atomic_fetch_add(counter, 0, 1)`` until none are left (dynamic scheduling:
    a thread slowed down by a busy machine simply claims fewer chunks). The calling
    thread works too; the others come from a persistent pool of Python threads,
    so no OpenMP runtime is involved (torch's stays the only one in the process).
    """
    counter = np.zeros(1, np.int64)
    if nthreads <= 1:
        kernel(counter, *args)
        return
    pool = _pool(nthreads - 1)
    futures = [pool.submit(kernel, counter, *args) for _ in range(nthreads - 1)]
    try:
        kernel(counter, *args)
    finally:
        for f in futures:
            f.result()


def _source_hash():
    """Hash of this package's sources.

    Numba's on-disk cache only notices edits to the file that defines a kernel, not to
    the helpers it inlines from other files; every kernel closes over this value, which
    Numba puts in the cache key, so any edit in the package recompiles. The settings
    compiled into the code (:data:`PREFETCH_LOCALITY`) are hashed with the sources.
    """
    h = hashlib.sha256()
    h.update(b"prefetch-locality=%d\0" % PREFETCH_LOCALITY)
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.endswith(".py"):
            with open(os.path.join(here, name), "rb") as f:
                h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


SOURCE_HASH = _source_hash()
