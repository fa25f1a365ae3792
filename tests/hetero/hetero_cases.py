"""Typed graphs for the heterograph tests, and per-relation reference graphs.

``typed_case`` builds a graph with four node types (one, ``'iso'``, in no
relation), relations between equal and different types, an edge type name
shared by two relations (``'likes'``), multi-edges and destination nodes
without in-edges. ``reference(g, cet)`` is the same relation built on its own
as a single-relation graph with :func:`mpgraph.graph` / :func:`mpgraph.heterograph`,
the oracle every heterograph operation is compared with.
"""

import torch

import mpgraph as dgl

NUM_NODES = {"user": 6, "game": 5, "dev": 3, "iso": 2}
RELATIONS = {
    ("user", "follows", "user"): ([0, 1, 2, 3, 3, 5, 0], [1, 2, 0, 0, 1, 1, 1]),        # node 4 no in-edge
    ("user", "plays", "game"): ([0, 1, 1, 2, 4, 5, 5, 5], [0, 0, 1, 1, 3, 3, 3, 0]),    # game 2, 4 no in-edge
    ("dev", "develops", "game"): ([0, 1, 2, 2], [0, 1, 3, 4]),
    ("user", "likes", "game"): ([2, 3], [2, 0]),
    ("user", "likes", "dev"): ([0, 0, 4], [1, 2, 2]),
    ("game", "sold-by", "dev"): ([0, 1, 3], [0, 1, 2]),
}


def typed_case(idtype=torch.int64):
    data = {k: (torch.tensor(u, dtype=idtype), torch.tensor(v, dtype=idtype)) for k, (u, v) in RELATIONS.items()}
    return dgl.heterograph(data, dict(NUM_NODES), idtype=idtype)


def random_typed(num_nodes, relations, seed=0, idtype=torch.int64):
    """Random typed graph: ``relations = {cet: num_edges}`` (duplicates allowed)."""
    gen = torch.Generator().manual_seed(seed)
    data = {}
    for (s, e, d), E in relations.items():
        data[(s, e, d)] = (torch.randint(0, num_nodes[s], (E,), generator=gen).to(idtype),
                           torch.randint(0, num_nodes[d], (E,), generator=gen).to(idtype))
    return dgl.heterograph(data, dict(num_nodes), idtype=idtype)


def reference(g, cet):
    """Relation ``cet`` of ``g`` as a standalone single-relation graph (no shared state)."""
    s, _, d = cet
    src, dst = g.edges(etype=cet, order="eid")
    src, dst = src.clone(), dst.clone()
    return dgl.heterograph({cet: (src, dst)}, {s: g.num_nodes(s), d: g.num_nodes(d)}, idtype=g.idtype)


def set_ref_features(ref, cet, src_x=None, dst_x=None, edge_x=None, name="h", ename="w"):
    """Put features on a reference graph (source/destination types may coincide)."""
    s, _, d = cet
    if src_x is not None:
        ref.nodes[s].data[name] = src_x
    if dst_x is not None and s != d:
        ref.nodes[d].data[name] = dst_x
    if edge_x is not None:
        ref.edata[ename] = edge_x
