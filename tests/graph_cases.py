"""Registry of named small graph cases shared by every test module.

Each case is ``(src, dst, num_src, num_dst)`` with int64 tensors; tests build an
``Index`` or a graph from it in the idtype they parametrize over.
"""

import torch


def _t(x):
    return torch.tensor(x, dtype=torch.int64)


def _power_law(n=60, e=400, seed=0):
    gen = torch.Generator().manual_seed(seed)
    p = (torch.arange(n, dtype=torch.float64) + 1.0) ** -1.0
    dst = torch.multinomial(p, e, replacement=True, generator=gen)
    src = torch.randint(0, n, (e,), generator=gen)
    return src, dst, n, n


def _random(n=20, e=80, seed=1):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, n, (e,), generator=gen), torch.randint(0, n, (e,), generator=gen), n, n


CASES = {
    "empty": (_t([]), _t([]), 0, 0),
    "no_edges": (_t([]), _t([]), 4, 4),
    "single_node": (_t([]), _t([]), 1, 1),
    "single_self_loop": (_t([0]), _t([0]), 1, 1),
    # node 3 has no in-edges; node 4 is isolated
    "zero_in_degree": (_t([0, 1, 2, 3, 3]), _t([1, 2, 0, 0, 2]), 5, 5),
    "self_loops": (_t([0, 1, 2, 0, 2]), _t([0, 1, 2, 1, 0]), 3, 3),
    "multi_edge": (_t([0, 0, 0, 1, 2, 2]), _t([1, 1, 1, 2, 0, 0]), 3, 3),
    "bipartite": (_t([0, 1, 2, 3, 4, 0, 2]), _t([0, 0, 1, 2, 2, 2, 1]), 5, 3),
    "random": _random(),
    "power_law": _power_law(),
}

# Cases with at least one edge (for ops whose gradients need edges to mean anything).
NONEMPTY = [k for k, v in CASES.items() if v[0].numel() > 0]
