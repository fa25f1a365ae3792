"""Cluster-GCN sampling (DGL's ``ClusterGCNSampler``): METIS parts, batches of parts as induced subgraphs."""

import os

import torch

from .._index import Index, as_index
from ..base import EID, NID, DGLError
from ..frame import Frame
from ..graph import Graph
from ..partition import metis_partition_assignment
from ..sampling._utils import as_ids, check_graph, expand_segments
from .base import Sampler, _gather_into, _names

__all__ = ["ClusterGCNSampler"]

_I64 = torch.int64


def _induced_subgraph(g, nodes):
    """Subgraph induced on distinct ``nodes`` (edges grouped by source in ``nodes`` order, then edge ID).

    The same graph as :func:`mpgraph.transforms.node_subgraph`, found from the
    CSR rows of ``nodes`` (work proportional to their out-degrees, not to E).
    """
    index = as_index(g)
    idtype = index.idtype
    indptr, dst_all, eid_all = index.csr()
    start = indptr[nodes]
    pos, seg, _ = expand_segments(start, indptr[nodes + 1] - start)
    dst = dst_all[pos]
    values, perm = torch.sort(nodes)
    at = torch.searchsorted(values, dst).clamp(max=max(nodes.numel() - 1, 0))
    keep = (values[at] == dst) if nodes.numel() else torch.zeros_like(dst, dtype=torch.bool)
    src_local, dst_local = seg[keep], perm[at[keep]]
    eids = eid_all[pos[keep]]
    node_frame = Frame(nodes.numel(), g.device, "node")
    node_frame[NID] = nodes.to(idtype)
    edge_frame = Frame(eids.numel(), g.device, "edge")
    edge_frame[EID] = eids.to(idtype)
    sub_index = Index.from_coo(src_local.to(idtype), dst_local.to(idtype), nodes.numel(), nodes.numel())
    return Graph(sub_index, g.canonical_etypes[0], False, [node_frame], edge_frame)


class ClusterGCNSampler(Sampler):
    """Partition the graph with METIS once; each mini-batch is the subgraph induced by a few parts.

    Use it with :class:`~mpgraph.dataloading.DataLoader` over ``torch.arange(k)``
    (the part IDs); ``batch_size`` parts make one subgraph. The subgraph
    stores ``ndata[NID]``/``edata[EID]`` and the prefetched features.

    Parameters
    ----------
    g : Graph
        The graph to partition (one node type).
    k : int
        Number of parts.
    cache_path : str or None, optional
        File to keep the partition in (``'cluster_gcn.pkl'`` by default, as
        in DGL); reused when it holds a partition of a graph with the same
        node and edge counts into ``k`` parts. None: no file.
    balance_ntypes, balance_edges, mode
        See :func:`mpgraph.partition.metis_partition_assignment`.
    prefetch_ndata, prefetch_edata : list of str, optional
        Features gathered into the subgraph (default None: all of them).
    output_device : torch.device, optional
        Move the subgraph there.

    Raises
    ------
    DGLError
        ``k`` not a positive int or more than the node count.
    """

    def __init__(self, g, k, cache_path="cluster_gcn.pkl", balance_ntypes=None, balance_edges=False, mode="k-way",
                 prefetch_ndata=None, prefetch_edata=None, output_device=None):
        what = "ClusterGCNSampler"
        check_graph(g, what)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= max(g.num_nodes(), 1):
            raise DGLError(f"{what} expected k to be an int in [1, {g.num_nodes()}] (the node count), got {k!r}")
        self.k = k
        self.prefetch_ndata = _names(prefetch_ndata, what, "prefetch_ndata")
        self.prefetch_edata = _names(prefetch_edata, what, "prefetch_edata")
        self.output_device = output_device
        parts = self._load(cache_path, g, k)
        if parts is None:
            parts = metis_partition_assignment(g, k, balance_ntypes, balance_edges, mode)
            if cache_path is not None:
                tmp = f"{cache_path}.tmp-{os.getpid()}"
                torch.save({"num_nodes": g.num_nodes(), "num_edges": g.num_edges(), "k": k, "parts": parts.cpu()},
                           tmp)
                os.replace(tmp, cache_path)
        parts = parts.to(g.device)
        order = torch.argsort(parts, stable=True)                  # nodes grouped by part, by ID inside
        counts = torch.bincount(parts, minlength=k)
        self.partition_offset = torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])
        self.partition_node_ids = order

    @staticmethod
    def _load(cache_path, g, k):
        if cache_path is None or not os.path.exists(cache_path):
            return None
        try:
            saved = torch.load(cache_path, weights_only=True)
        except (OSError, RuntimeError, ValueError):
            return None
        if not isinstance(saved, dict) or (saved.get("num_nodes"), saved.get("num_edges"), saved.get("k")) != (
                g.num_nodes(), g.num_edges(), k):
            return None
        return saved["parts"]

    def sample(self, g, partition_ids):
        """The subgraph induced by the nodes of parts ``partition_ids`` (nodes in part order)."""
        what = "ClusterGCNSampler"
        ids = as_ids(g, partition_ids, self.k, what, "partition").to(self.partition_offset.device)
        start = self.partition_offset[ids]
        pos, _, _ = expand_segments(start, self.partition_offset[ids + 1] - start)
        nodes = self.partition_node_ids[pos]
        sg = _induced_subgraph(g, nodes)
        _gather_into(sg.ndata, g.ndata, self.prefetch_ndata, nodes)
        _gather_into(sg.edata, g.edata, self.prefetch_edata, sg.edata[EID])
        return sg if self.output_device is None else sg.to(self.output_device)
