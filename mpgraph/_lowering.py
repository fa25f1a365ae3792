"""Lower (message, reduce) pairs to ops calls or to the UDF path.

This is the one place that decides how message passing runs:

* builtin message + builtin reduce -> one fused gSpMM when the message is
  ``copy_u``/``copy_e``/``u_{add,sub,mul,div}_e`` (or a commuted ``e_{add,mul}_u``),
  otherwise gSDDMM for the message followed by a ``copy_e`` gSpMM;
* builtin edge function (``apply_edges``) -> gSDDMM;
* UDFs -> :class:`~mpgraph.udf.EdgeBatch` / degree-bucketed
  :class:`~mpgraph.udf.NodeBatch` calls.

Functions here take an :class:`~mpgraph._index.Index` and the frames whose rows
align with it, and return tensors; the graph writes them back.
"""

import torch

from . import ops
from .base import DGLError, DGLTypeError
from .function import BinaryMessageFunction, CopyMessageFunction, MessageFunction, ReduceFunction
from .udf import EdgeBatch, check_udf_output, run_node_udf

__all__ = ["apply_edges", "compute_messages", "message_passing"]

_TARGET_NAMES = {"u": "source node", "v": "destination node", "e": "edge"}
_SPMM_OPS = ("add", "sub", "mul", "div")


def _field(frames, target, name):
    frame = frames[target]
    if name not in frame:
        where = {"u": "srcdata (source nodes)", "v": "dstdata (destination nodes)", "e": "edata"}[target]
        raise DGLError(f"builtin message expects {_TARGET_NAMES[target]} feature {name!r} in {where}, "
                       f"but it has only {sorted(frame)}; set it first, e.g. g.{where.split()[0]}[{name!r}] = x")
    return frame[name]


def _as_list(funcs):
    if isinstance(funcs, (list, tuple)):
        return list(funcs)
    return [funcs]


def _edge_builtin(index, frames, func):
    """Evaluate one builtin message function for every edge of ``index``: ``(E, *)``."""
    if isinstance(func, CopyMessageFunction):
        x = _field(frames, func.target, func.in_field)
        if func.target == "e":
            return x
        if func.target == "u":
            return ops.copy_u(index, x)
        return ops.copy_v(index, x)
    if isinstance(func, BinaryMessageFunction):
        lhs = _field(frames, func.lhs_target, func.lhs_field)
        rhs = _field(frames, func.rhs_target, func.rhs_field)
        return ops.gsddmm(index, func.binary_op, lhs, rhs, func.lhs_target, func.rhs_target)
    raise DGLTypeError(f"expected a builtin message function from mpgraph.function, got {func!r}")


def apply_edges(index, frames, func, edge_batch_args):
    """Compute edge features with ``func`` (builtin or UDF); returns a dict of ``(E, *)`` tensors."""
    if isinstance(func, MessageFunction):
        return {func.out_field: _edge_builtin(index, frames, func)}
    if isinstance(func, (list, tuple)) and func and all(isinstance(f, MessageFunction) for f in func):
        return {f.out_field: _edge_builtin(index, frames, f) for f in func}
    if not callable(func):
        raise DGLTypeError(f"expected a builtin message function or a callable UDF, got {type(func).__name__}")
    batch = EdgeBatch(*edge_batch_args)
    return check_udf_output(func(batch), index.num_edges, "edge")


def compute_messages(index, frames, message_func, edge_batch_args):
    """Messages ``{name: (E, *)}`` of a builtin (or list of builtins) or a UDF."""
    return apply_edges(index, frames, message_func, edge_batch_args)


def _fused(index, frames, msg, reduce_op):
    """Run builtin ``msg`` + builtin ``reduce_op`` as one gSpMM when possible, else None."""
    if isinstance(msg, CopyMessageFunction):
        if msg.target == "u":
            return ops.gspmm(index, "copy_lhs", reduce_op, _field(frames, "u", msg.in_field), None)
        if msg.target == "e":
            return ops.gspmm(index, "copy_rhs", reduce_op, None, _field(frames, "e", msg.in_field))
        return None
    if isinstance(msg, BinaryMessageFunction) and msg.binary_op in _SPMM_OPS:
        pair = (msg.lhs_target, msg.rhs_target)
        if pair == ("u", "e"):
            return ops.gspmm(index, msg.binary_op, reduce_op, _field(frames, "u", msg.lhs_field),
                             _field(frames, "e", msg.rhs_field))
        if pair == ("e", "u") and msg.binary_op in ("add", "mul"):
            return ops.gspmm(index, msg.binary_op, reduce_op, _field(frames, "u", msg.rhs_field),
                             _field(frames, "e", msg.lhs_field))
    return None


def message_passing(index, frames, message_func, reduce_func, edge_batch_args):
    """Run message passing over every edge of ``index``.

    Returns
    -------
    (Tensor or None, dict[str, Tensor])
        ``None`` when every destination node gets a value (builtin reduce), else
        the int64 ids of the nodes that received messages (UDF reduce), and the
        reduced features (rows aligned with those nodes).
    """
    reduces = _as_list(reduce_func)
    if all(isinstance(r, ReduceFunction) for r in reduces):
        msgs = _as_list(message_func)
        if all(isinstance(m, MessageFunction) for m in msgs):
            by_name = {m.out_field: m for m in msgs}
            out = {}
            for r in reduces:
                m = by_name.get(r.msg_field)
                if m is None:
                    raise DGLError(f"reduce fn.{r.reduce_op}({r.msg_field!r}, {r.out_field!r}) reads message "
                                   f"{r.msg_field!r}, but the message functions produce {sorted(by_name)}")
                res = _fused(index, frames, m, r.reduce_op)
                if res is None:
                    res = ops.gspmm(index, "copy_rhs", r.reduce_op, None, _edge_builtin(index, frames, m))
                out[r.out_field] = res
            return None, out
        messages = compute_messages(index, frames, message_func, edge_batch_args)
        out = {}
        for r in reduces:
            if r.msg_field not in messages:
                raise DGLError(f"reduce fn.{r.reduce_op}({r.msg_field!r}, ...) reads message {r.msg_field!r}, "
                               f"but the message function returned {sorted(messages)}")
            out[r.out_field] = ops.gspmm(index, "copy_rhs", r.reduce_op, None, messages[r.msg_field])
        return None, out
    if len(reduces) != 1 or not callable(reduces[0]):
        raise DGLTypeError(f"expected a builtin reduce function (mpgraph.function.sum, ...) or one callable "
                           f"UDF, got {reduce_func!r}")
    messages = compute_messages(index, frames, message_func, edge_batch_args)
    indptr, _, eid = index.csc()
    nodes, out = run_node_udf(reduces[0], frames["v"], indptr, messages, index.num_dst, eid)
    return nodes, out


def zeros_like_rows(value, num_rows):
    """Zeros shaped like ``value`` with ``num_rows`` rows."""
    return torch.zeros((num_rows,) + tuple(value.shape[1:]), dtype=value.dtype, device=value.device)
