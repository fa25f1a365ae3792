"""Array-level processing shared by the datasets: edge sets, reordering, graph construction.

Everything here takes and returns numpy arrays, except :func:`make_graph`, the one
place that turns arrays into an :class:`mpgraph` graph.
"""

import numpy as np
import torch

__all__ = ["bidirected_edges", "unique_edges", "rcmk_order", "permute_graph_arrays", "sort_by_dst", "make_graph",
           "graph_from_arrays"]


def _sorted_unique(keys, presorted_runs=False):
    """Sorted distinct values of an int64 array, sorting in place.

    A sort plus a neighbour comparison: faster here than :func:`numpy.unique`
    (hash-based in numpy 2.3). With ``presorted_runs`` the array is a few sorted
    runs, which the stable sort (timsort) merges in linear time.
    """
    keys.sort(kind="stable" if presorted_runs else None)
    if keys.size < 2:
        return keys
    keep = np.empty(keys.size, dtype=bool)
    keep[0] = True
    np.not_equal(keys[1:], keys[:-1], out=keep[1:])
    return keys[keep]


def unique_edges(src, dst, num_nodes):
    """Drop duplicate ``(src, dst)`` pairs; the result is sorted by ``(src, dst)``.

    Parameters
    ----------
    src, dst : numpy.ndarray
        Shape ``(E,)``, integer node IDs in ``[0, num_nodes)``.
    num_nodes : int
        ``N``.

    Returns
    -------
    tuple of numpy.ndarray
        ``src, dst`` of shape ``(E_unique,)``, int64.
    """
    key = _sorted_unique(src.astype(np.int64) * num_nodes + dst.astype(np.int64))
    return key // num_nodes, key % num_nodes


def bidirected_edges(src, dst, num_nodes):
    """Every edge in both directions, duplicates removed (a self-loop stays one edge).

    Same edge set as DGL's ``to_bidirected`` and as
    ``nx.DiGraph(nx.Graph(edges))``.

    Parameters
    ----------
    src, dst : numpy.ndarray
        Shape ``(E,)``.
    num_nodes : int
        ``N``.

    Returns
    -------
    tuple of numpy.ndarray
        ``src, dst`` int64, sorted by ``(src, dst)``.
    """
    return unique_edges(np.concatenate([src, dst]), np.concatenate([dst, src]), num_nodes)


def sort_by_dst(src, dst):
    """Stable order of edges by ``(dst, src)`` (DGL's ``edge_permute_algo='dst'`` up to ties).

    Returns
    -------
    numpy.ndarray
        Permutation of shape ``(E,)``.
    """
    return np.lexsort((src, dst))


def rcmk_order(src, dst, num_nodes):
    """Reverse Cuthill-McKee node order of the graph (DGL's ``node_permute_algo='rcmk'``).

    Parameters
    ----------
    src, dst : numpy.ndarray
        Shape ``(E,)``.
    num_nodes : int
        ``N``.

    Returns
    -------
    numpy.ndarray
        ``perm`` of shape ``(N,)``: new node ``i`` is old node ``perm[i]``.
    """
    import scipy.sparse as sp
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    adj = sp.csr_matrix(
        (np.ones(len(src), dtype=np.int8), (dst, src)), shape=(num_nodes, num_nodes)
    )
    return reverse_cuthill_mckee(adj).astype(np.int64)


def permute_graph_arrays(src, dst, ndata, perm):
    """Relabel nodes so that new node ``i`` is old node ``perm[i]``; then sort edges by destination.

    Parameters
    ----------
    src, dst : numpy.ndarray
        Shape ``(E,)``.
    ndata : dict of str to numpy.ndarray
        Each of shape ``(N, ...)``.
    perm : numpy.ndarray
        Shape ``(N,)``, a permutation of ``0..N-1``.

    Returns
    -------
    tuple
        ``src, dst`` (int64, ``(E,)``) and the permuted ``ndata``.
    """
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(len(perm), dtype=perm.dtype)
    src, dst = inverse[src], inverse[dst]
    order = sort_by_dst(src, dst)
    return src[order], dst[order], {k: v[perm] for k, v in ndata.items()}


def make_graph(src, dst, num_nodes, ndata=None):
    """Build an :mod:`mpgraph` graph from edge arrays and node features.

    Parameters
    ----------
    src, dst : numpy.ndarray or torch.Tensor
        Shape ``(E,)``, integer node IDs.
    num_nodes : int
        ``N``.
    ndata : dict of str to numpy.ndarray or torch.Tensor, optional
        Node features, each of shape ``(N, ...)``; numpy arrays are shared, not copied.

    Returns
    -------
    mpgraph.Graph
        ``int64`` IDs, on CPU.
    """
    import mpgraph

    def as_tensor(a):
        return a if isinstance(a, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(a))

    g = mpgraph.graph((as_tensor(src).long(), as_tensor(dst).long()), num_nodes=int(num_nodes))
    for key, value in (ndata or {}).items():
        g.ndata[key] = as_tensor(value)
    return g


def graph_from_arrays(arrays, keys):
    """Build the graph of a loader's or generator's array dict with :func:`make_graph`.

    Parameters
    ----------
    arrays : dict
        ``src``, ``dst`` and ``num_nodes``, plus node arrays of shape ``(N, ...)``.
    keys : sequence of str
        The node arrays to attach as ``ndata``, in this order.

    Returns
    -------
    mpgraph.Graph
        See :func:`make_graph`.
    """
    ndata = {k: arrays[k] for k in keys}
    return make_graph(arrays["src"], arrays["dst"], arrays["num_nodes"], ndata)


def sample_simple_undirected(num_pairs, sample_chunk, num_nodes, max_rounds=8, chunk_size=1 << 22):
    """Draw ``num_pairs`` distinct undirected non-loop edges from a pair sampler.

    ``sample_chunk(n)`` returns ``(u, v)`` of ``n`` sampled endpoints. Self-loops
    are dropped and duplicates merged; rounds that sample only the deficit repeat
    until ``num_pairs`` distinct pairs exist or ``max_rounds`` is reached (then
    fewer are returned). Samples are drawn ``chunk_size`` at a time, so memory is
    the pair keys (8 bytes each) plus one chunk.

    Parameters
    ----------
    num_pairs : int
        Target number of undirected edges ``M``.
    sample_chunk : callable
        ``n -> (u, v)``, two int64 arrays of shape ``(n,)``.
    num_nodes : int
        ``N``.
    max_rounds : int, optional
        Default: 8.
    chunk_size : int, optional
        Default: ``2**22``.

    Returns
    -------
    tuple of numpy.ndarray
        ``lo, hi`` of shape ``(M',)``, int64, ``lo < hi``, sorted; ``M' <= num_pairs``.
    """
    keys = np.empty(0, dtype=np.int64)
    for _ in range(max_rounds):
        deficit = num_pairs - keys.size
        if deficit <= 0:
            break
        parts = []
        for start in range(0, deficit, chunk_size):
            u, v = sample_chunk(min(chunk_size, deficit - start))
            keep = u != v
            u, v = u[keep], v[keep]
            parts.append(np.minimum(u, v) * num_nodes + np.maximum(u, v))
        new = _sorted_unique(np.concatenate(parts))
        del parts
        keys = _sorted_unique(np.concatenate([keys, new]), presorted_runs=True)
        del new
    return keys // num_nodes, keys % num_nodes
