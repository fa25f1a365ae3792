"""Graph sampling (DGL's ``dgl.sampling``): neighbour sampling, top-k selection, random walks, negatives.

Every sampler is vectorised over its seeds (Python loops run over fanout slots
or walk steps, never over nodes) and draws from torch's global generator on the
graph's device: ``mpgraph.seed(s)`` or ``torch.manual_seed(s)`` makes samples
reproducible.

``sample_neighbors`` also samples a :class:`~mpgraph.heterograph.HeteroGraph`
(seeds ``{ntype: ids}``, a fanout per relation; one vectorised pass per
relation); the other samplers take graphs with one relation.
"""

from .negative import global_uniform_negative_sampling
from .neighbor import sample_neighbors, select_topk
from .randomwalk import random_walk

__all__ = ["sample_neighbors", "select_topk", "random_walk", "global_uniform_negative_sampling"]
