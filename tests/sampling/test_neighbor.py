"""sample_neighbors and select_topk: validity, counts, distributions, reproducibility, errors."""

import doctest
import itertools

import pytest
import torch
from scipy import stats

import mpgraph as dgl
from graph_cases import CASES
from mpgraph import DGLError
from mpgraph.sampling import neighbor, sample_neighbors, select_topk

P_MIN = 1e-3          # chi-square p-value bound: fails about once in a thousand seeds if the sampler is right


def _graph(case, idtype):
    src, dst, ns, nd = CASES[case]
    if ns != nd:
        return dgl.heterograph({("u", "e", "v"): (src, dst)}, {"u": ns, "v": nd}, idtype=idtype)
    return dgl.graph((src, dst), num_nodes=ns, idtype=idtype)


def _degree_spread(idtype=torch.int64, seed=0):
    """Node i (of 120) has about i in-edges (so degrees span 0..~120), plus repeated edges."""
    gen = torch.Generator().manual_seed(seed)
    n = 120
    dst = torch.repeat_interleave(torch.arange(n), torch.arange(n))
    src = torch.randint(0, n, (dst.numel(),), generator=gen)
    perm = torch.randperm(dst.numel(), generator=gen)          # edge IDs not grouped by destination
    return dgl.graph((src[perm], dst[perm]), num_nodes=n, idtype=idtype)


def _check_valid(g, sg, seeds, fanout, replace, edge_dir="in", allowed=None):
    """Every sampled edge is an edge of g at a seed; per-seed counts follow the rules."""
    assert sg.num_nodes() == g.num_nodes()
    src, dst = sg.edges()
    eid = sg.edata[dgl.EID]
    assert eid.dtype == g.idtype and src.dtype == g.idtype
    gs, gd = g.find_edges(eid)
    assert torch.equal(gs, src) and torch.equal(gd, dst)
    centre = dst if edge_dir == "in" else src
    deg = (g.in_degrees(seeds) if edge_dir == "in" else g.out_degrees(seeds)) if allowed is None else allowed
    counts = torch.bincount(centre.long(), minlength=g.num_nodes())[seeds]
    if fanout < 0:
        expect = deg
    elif replace:
        expect = torch.where(deg > 0, fanout, 0)
    else:
        expect = deg.clamp(max=fanout)
    assert torch.equal(counts, expect)
    # edges are grouped by seed in the order given
    order = torch.repeat_interleave(seeds, expect)
    assert torch.equal(centre.long(), order)
    if not replace:
        for s in seeds.tolist():
            e = eid[centre == s]
            assert e.unique().numel() == e.numel()


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("replace", [False, True])
def test_graph_cases(case, replace, idtype):
    g = _graph(case, idtype)
    n = g.num_dst_nodes()
    seeds = torch.arange(n)
    for fanout in (0, 1, 2, -1):
        if replace and fanout < 0:
            continue
        sg = sample_neighbors(g, seeds, fanout, replace=replace)
        _check_valid(g, sg, seeds, fanout, replace)
        assert sg.canonical_etypes == g.canonical_etypes


@pytest.mark.parametrize("edge_dir", ["in", "out"])
@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("fanout", [3, 40, 500])
def test_counts_and_validity(edge_dir, replace, fanout, idtype):
    g = _degree_spread(idtype)
    seeds = torch.randperm(g.num_nodes())[:80]
    sg = sample_neighbors(g, seeds, fanout, edge_dir=edge_dir, replace=replace)
    _check_valid(g, sg, seeds, fanout, replace, edge_dir)


def test_features_and_output():
    g = _degree_spread()
    g.ndata["h"] = torch.randn(g.num_nodes(), 2)
    g.edata["w"] = torch.arange(g.num_edges(), dtype=torch.float32)
    sg = sample_neighbors(g, [5, 50], 3)
    assert sg.ndata["h"] is g.ndata["h"]
    assert torch.equal(sg.edata["w"], sg.edata[dgl.EID].float())
    assert set(g.edata.keys()) == {"w"}                        # input untouched
    sg = sample_neighbors(g, [5, 50], 3, copy_ndata=False, copy_edata=False)
    assert len(sg.ndata) == 0 and set(sg.edata.keys()) == {dgl.EID}


def test_duplicate_seeds_sampled_independently():
    g = _degree_spread()
    sg = sample_neighbors(g, [100, 100], 5)
    assert sg.num_edges() == 10


def _star(m, d, reps=1, weights=None):
    """m destinations with the same d in-edges from sources m..m+d-1; seeds repeated reps times."""
    dst = torch.arange(m).repeat_interleave(d)
    src = m + torch.arange(d).repeat(m)
    g = dgl.graph((src, dst), num_nodes=m + d)
    if weights is not None:
        g.edata["p"] = torch.as_tensor(weights, dtype=torch.float32).repeat(m)
    return g, torch.arange(m).repeat(reps)


def test_uniform_subsets_floyd():
    """Without replacement every 3-subset of 8 neighbours is equally likely (Floyd's algorithm)."""
    torch.manual_seed(0)
    d, k = 8, 3
    g, seeds = _star(500, d, reps=12)
    sg = sample_neighbors(g, seeds, k)
    src = (sg.edges()[0] - 500).reshape(-1, k).sort(1).values
    code = (src * torch.tensor([d * d, d, 1])).sum(1)
    subsets = [a * d * d + b * d + c for a, b, c in itertools.combinations(range(d), 3)]
    counts = torch.bincount(code, minlength=d ** 3)[subsets]
    assert int(counts.sum()) == seeds.numel()
    assert stats.chisquare(counts.numpy()).pvalue > P_MIN


def test_uniform_marginals_keys_path():
    """Fanout close to a large degree (the random-key path): every edge has probability k/d."""
    torch.manual_seed(1)
    d, k = 45, 40
    assert d * 32 < k * k                                      # exercises the key-sorting branch
    g, seeds = _star(300, d, reps=4)
    sg = sample_neighbors(g, seeds, k)
    counts = torch.bincount(sg.edges()[0] - 300, minlength=d)
    assert stats.chisquare(counts.numpy()).pvalue > P_MIN


def test_uniform_with_replacement():
    torch.manual_seed(2)
    g, seeds = _star(1000, 10)
    sg = sample_neighbors(g, seeds, 4, replace=True)
    counts = torch.bincount(sg.edges()[0] - 1000, minlength=10)
    assert stats.chisquare(counts.numpy()).pvalue > P_MIN


@pytest.mark.parametrize("replace", [False, True])
def test_frequencies_proportional_to_prob(replace):
    torch.manual_seed(3)
    w = torch.tensor([0.0, 1, 2, 3, 4, 5, 6, 7, 8, 0])
    g, seeds = _star(2000, 10, weights=w)
    fanout = 4 if replace else 1                 # without replacement, one draw has probability w / sum(w)
    sg = sample_neighbors(g, seeds, fanout, prob="p", replace=replace)
    src = sg.edges()[0] - 2000
    counts = torch.bincount(src, minlength=10)
    assert counts[0] == 0 and counts[9] == 0                  # zero weight: never sampled
    expected = (w.double() / w.double().sum() * src.numel())[1:9]
    assert stats.chisquare(counts[1:9].numpy(), expected.numpy()).pvalue > P_MIN


def test_prob_counts_and_tensor_prob():
    g = _degree_spread()
    p = (torch.arange(g.num_edges()) % 3).float()              # a third of the edges has weight 0
    seeds = torch.arange(g.num_nodes())
    allowed = torch.bincount(g.edges()[1][p > 0].long(), minlength=g.num_nodes())
    for fanout, replace in [(5, False), (200, False), (-1, False), (5, True)]:
        sg = sample_neighbors(g, seeds, fanout, prob=p, replace=replace)
        _check_valid(g, sg, seeds, fanout, replace, allowed=allowed)
        assert bool((p[sg.edata[dgl.EID].long()] > 0).all())


def test_mask_and_exclude_edges():
    g = _degree_spread()
    seeds = torch.arange(g.num_nodes())
    mask = torch.arange(g.num_edges()) % 2 == 0
    g.edata["m"] = mask
    sg = sample_neighbors(g, seeds, 6, mask="m")
    assert bool(mask[sg.edata[dgl.EID].long()].all())
    _check_valid(g, sg, seeds, 6, False, allowed=torch.bincount(g.edges()[1][mask], minlength=g.num_nodes()))
    excluded = torch.arange(0, g.num_edges(), 3)
    sg = sample_neighbors(g, seeds, 6, exclude_edges=excluded)
    assert not bool(torch.isin(sg.edata[dgl.EID], excluded).any())
    keep = torch.ones(g.num_edges(), dtype=torch.bool)
    keep[excluded] = False
    _check_valid(g, sg, seeds, 6, False, allowed=torch.bincount(g.edges()[1][keep], minlength=g.num_nodes()))


def test_same_seed_same_sample():
    g = _degree_spread()
    seeds = torch.arange(g.num_nodes())
    runs = []
    for seed_fn in (dgl.seed, torch.manual_seed, dgl.seed):
        seed_fn(7)
        runs.append(sample_neighbors(g, seeds, 5).edata[dgl.EID])
    assert torch.equal(runs[0], runs[1]) and torch.equal(runs[0], runs[2])
    torch.manual_seed(8)
    assert not torch.equal(runs[0], sample_neighbors(g, seeds, 5).edata[dgl.EID])


def test_bipartite_out_edges():
    g = _graph("bipartite", torch.int64)
    sg = sample_neighbors(g, [0, 2], 1, edge_dir="out")
    _check_valid(g, sg, torch.tensor([0, 2]), 1, False, "out")
    assert sg.num_src_nodes() == 5 and sg.num_dst_nodes() == 3


@pytest.mark.parametrize("call, message", [
    (lambda g: sample_neighbors(g, [0], 2, edge_dir="both"), "expected edge_dir 'in' or 'out', got 'both'"),
    (lambda g: sample_neighbors(g, [0, 120], 2), "expected node IDs in [0, 120), got 120"),
    (lambda g: sample_neighbors(g, [-1], 2), "expected node IDs in [0, 120), got -1"),
    (lambda g: sample_neighbors(g, [0], -2), "expected fanout to be an int >= 0 or -1"),
    (lambda g: sample_neighbors(g, [0], 2, prob=torch.ones(3)), f"expected prob of shape ({7140},)"),
    (lambda g: sample_neighbors(g, [0], 2, prob="nope"), "expected prob='nope' to name an edge feature"),
    (lambda g: sample_neighbors(g, [5], 2, prob=-torch.ones(7140)), "expected finite non-negative prob values"),
    (lambda g: sample_neighbors(g, [0], 2, exclude_edges=[7140]), "expected edge IDs in [0, 7140), got 7140"),
    (lambda g: sample_neighbors(g, [0], 2, replace=1), "expected replace to be True or False"),
    (lambda g: select_topk(g, 2, "nope"), "expected weight='nope' to name an edge feature"),
    (lambda g: select_topk(g, 2, torch.ones(7140), edge_dir="sideways"), "expected edge_dir 'in' or 'out'"),
])
def test_errors(call, message):
    g = _degree_spread()
    assert g.num_edges() == 7140
    with pytest.raises(DGLError) as err:
        call(g)
    assert message in str(err.value)


def test_select_topk_matches_brute_force(idtype):
    g = _degree_spread(idtype)
    w = torch.randint(0, 5, (g.num_edges(),)).float()          # many ties: the lower edge ID wins
    g.edata["w"] = w
    nodes = torch.tensor([3, 100, 0, 57])
    for ascending, edge_dir in [(False, "in"), (True, "in"), (False, "out")]:
        sg = select_topk(g, 4, "w", nodes, edge_dir=edge_dir, ascending=ascending)
        got = sg.edata[dgl.EID].tolist()
        expect = []
        for v in nodes.tolist():
            e = (g.in_edges(v, form="eid") if edge_dir == "in" else g.out_edges(v, form="eid")).tolist()
            e.sort(key=lambda i: ((w[i] if ascending else -w[i]).item(), i))
            expect += e[:4]
        assert got == expect
    assert select_topk(g, -1, "w").num_edges() == g.num_edges()


def test_docstring_examples():
    result = doctest.testmod(neighbor, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
