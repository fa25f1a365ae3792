"""Feature layouts of broadcast operands, in plain Python (no Triton import).

Kernels walk an operand's features as two stride groups ``(H, D)``: feature ``(h, d)`` of row ``r`` is at
``r * s_row + h * s_H + d * s_D``. :func:`coalesce` merges the dimensions of a broadcast feature shape into
as few groups as the operands allow (like PyTorch's TensorIterator). It is shared by the launchers
(:func:`._common.feature_layout`) and by the backend's ``supports`` predicates, which must answer without
importing Triton.
"""

__all__ = ["coalesce", "contiguous_strides", "fits_groups"]


def coalesce(shape, strides_list, max_dims):
    """Merge adjacent dims of ``shape`` that every operand walks contiguously.

    ``strides_list`` holds one stride tuple over ``shape`` per operand (0 on broadcast dims). Returns
    ``(sizes, strides)`` left-padded to ``max_dims`` groups, or ``None`` if more groups are needed.
    """
    sizes = []
    strides = [[] for _ in strides_list]
    for i, n in enumerate(shape):
        if n == 1:
            continue
        if sizes and all(st[-1] == s[i] * n for st, s in zip(strides, strides_list)):
            sizes[-1] *= n
            for st, s in zip(strides, strides_list):
                st[-1] = s[i]
        else:
            sizes.append(n)
            for st, s in zip(strides, strides_list):
                st.append(s[i])
    if len(sizes) > max_dims:
        return None
    pad = max_dims - len(sizes)
    return [1] * pad + sizes, [[0] * pad + st for st in strides]


def contiguous_strides(shape, out_shape):
    """Element strides of a contiguous ``(rows, *shape)`` operand broadcast to ``out_shape`` (same rank).

    Dimensions where ``shape`` has 1 and ``out_shape`` does not get stride 0.
    """
    strides = []
    step = 1
    for n, m in zip(reversed(shape), reversed(out_shape)):
        strides.append(0 if (n == 1 and m != 1) else step)
        step *= n
    return tuple(reversed(strides))


def fits_groups(shapes, out_shape, max_dims=2, keep_last=False):
    """Whether contiguous operands of feature shapes ``shapes`` (each padded to ``out_shape``'s rank)
    broadcast to ``out_shape`` within ``max_dims`` stride groups.

    With ``keep_last`` the last dim is a group of its own (the ``dot`` reduction), so the leading dims
    must fit in ``max_dims - 1`` groups.
    """
    out_shape = tuple(out_shape)
    strides = [contiguous_strides(tuple(s), out_shape) for s in shapes]
    if keep_last:
        if not out_shape:
            return True
        return coalesce(out_shape[:-1], [st[:-1] for st in strides], max_dims - 1) is not None
    return coalesce(out_shape, strides, max_dims) is not None
