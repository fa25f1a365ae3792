"""Message passing on HeteroGraphs: per relation, multi_update_all, update_all over all relations.

Oracles: the relation built on its own (``hetero_cases.reference``) in float64,
hand-computed small cases, and message passing on ``to_homogeneous(g)``.
"""

import pytest
import torch
from hetero_cases import RELATIONS, random_typed, reference, typed_case

import mpgraph as dgl
import mpgraph.function as fn
from mpgraph.base import DGLError
from mpgraph.heterograph import to_homogeneous

F64 = torch.float64


def _features(g, D=3, seed=0, dtype=F64):
    gen = torch.Generator().manual_seed(seed)
    for nt in g.ntypes:
        g.nodes[nt].data["h"] = torch.randn(g.num_nodes(nt), D, generator=gen, dtype=dtype)
    for cet in g.canonical_etypes:
        g.edges[cet].data["w"] = torch.randn(g.num_edges(cet), D, generator=gen, dtype=dtype)
    return g


def _ref_with_features(g, cet):
    ref = reference(g, cet)
    s, _, d = cet
    ref.nodes[s].data["h"] = g.nodes[s].data["h"]
    if s != d:
        ref.nodes[d].data["h"] = g.nodes[d].data["h"]
    ref.edata["w"] = g.edges[cet].data["w"]
    return ref


PAIRS = [
    (fn.copy_u("h", "m"), fn.sum("m", "o")),
    (fn.copy_u("h", "m"), fn.mean("m", "o")),
    (fn.copy_u("h", "m"), fn.max("m", "o")),
    (fn.copy_u("h", "m"), fn.min("m", "o")),
    (fn.u_mul_e("h", "w", "m"), fn.sum("m", "o")),
    (fn.e_add_u("w", "h", "m"), fn.max("m", "o")),
    (fn.copy_e("w", "m"), fn.mean("m", "o")),
    (fn.u_sub_v("h", "h", "m"), fn.sum("m", "o")),      # not fusable: gSDDMM then gSpMM
    (fn.u_dot_v("h", "h", "m"), fn.min("m", "o")),
]


PAIR_IDS = ["copy_u-sum", "copy_u-mean", "copy_u-max", "copy_u-min", "u_mul_e-sum", "e_add_u-max", "copy_e-mean",
            "u_sub_v-sum", "u_dot_v-min"]


@pytest.mark.parametrize("pair", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("cet", sorted(RELATIONS))
def test_update_all_per_relation_matches_reference(cet, pair):
    g = _features(typed_case())
    ref = _ref_with_features(g, cet)
    msg, red = pair
    g.update_all(msg, red, etype=cet)
    ref.update_all(msg, red)
    d = cet[2]
    torch.testing.assert_close(g.nodes[d].data["o"], ref.nodes[d].data["o"])


@pytest.mark.parametrize("cet", sorted(RELATIONS))
def test_apply_edges_send_pull_per_relation(cet):
    g = _features(typed_case())
    ref = _ref_with_features(g, cet)
    g.apply_edges(fn.u_mul_v("h", "h", "p"), etype=cet)
    ref.apply_edges(fn.u_mul_v("h", "h", "p"))
    torch.testing.assert_close(g.edges[cet].data["p"], ref.edata["p"])
    g.apply_edges(lambda e: {"q": e.src["h"] + e.data["w"]}, etype=cet)
    torch.testing.assert_close(g.edges[cet].data["q"], ref.edata["w"] + ref.nodes[cet[0]].data["h"][
        ref.edges()[0].long()])
    E = g.num_edges(cet)
    sel = torch.arange(0, E, 2)
    g.send_and_recv(sel, fn.copy_u("h", "m"), fn.sum("m", "sr"), etype=cet)
    ref.send_and_recv(sel, fn.copy_u("h", "m"), fn.sum("m", "sr"))
    d = cet[2]
    torch.testing.assert_close(g.nodes[d].data["sr"], ref.nodes[d].data["sr"])
    g.pull([0], fn.copy_u("h", "m"), fn.sum("m", "pl"), etype=cet)
    ref.pull([0], fn.copy_u("h", "m"), fn.sum("m", "pl"))
    torch.testing.assert_close(g.nodes[d].data["pl"], ref.nodes[d].data["pl"])
    g.push([0], fn.copy_u("h", "m"), fn.sum("m", "ps"), etype=cet)
    ref.push([0], fn.copy_u("h", "m"), fn.sum("m", "ps"))
    torch.testing.assert_close(g.nodes[d].data["ps"], ref.nodes[d].data["ps"])


# ----------------------------------------------------------------------------- multi_update_all by hand

def _small():
    """Users 0..2, games 0..1, one isolated type 'iso'.

    follows (user->user): 0->1, 2->1          user 1 gets h0 + h2; users 0 and 2 get nothing
    attracts (game->user): 0->1, 1->2, 1->2   user 1 gets g0; user 2 gets g1 twice
    plays (user->game):    0->0               game 0 gets h0 (not in the dicts below)
    """
    g = dgl.heterograph({("user", "follows", "user"): ([0, 2], [1, 1]),
                         ("game", "attracts", "user"): ([0, 1, 1], [1, 2, 2]),
                         ("user", "plays", "game"): ([0], [0])}, {"iso": 2})
    g.nodes["user"].data["h"] = torch.tensor([[1.0, -4.0], [2.0, 5.0], [3.0, -6.0]], dtype=F64)
    g.nodes["game"].data["h"] = torch.tensor([[10.0, -1.0], [20.0, -2.0]], dtype=F64)
    g.nodes["iso"].data["h"] = torch.full((2, 2), 7.0, dtype=F64)
    return g


def _run(g, cross, red=fn.sum):
    g.multi_update_all({"follows": (fn.copy_u("h", "m"), red("m", "o")),
                        "attracts": (fn.copy_u("h", "m"), red("m", "o"))}, cross)
    return g.nodes["user"].data["o"]


def T(x):
    return torch.tensor(x, dtype=F64)


def test_multi_update_all_cross_reducers_by_hand():
    # per relation (sum): follows -> [[0,0],[4,-10],[0,0]]; attracts -> [[0,0],[10,-1],[40,-4]]
    f = T([[0, 0], [4, -10], [0, 0]])
    a = T([[0, 0], [10, -1], [40, -4]])
    torch.testing.assert_close(_run(_small(), "sum"), f + a)
    torch.testing.assert_close(_run(_small(), "mean"), (f + a) / 2)
    torch.testing.assert_close(_run(_small(), "max"), torch.maximum(f, a))
    torch.testing.assert_close(_run(_small(), "min"), torch.minimum(f, a))
    out = _run(_small(), "stack")                        # relations in canonical order: attracts, follows
    assert out.shape == (3, 2, 2)
    torch.testing.assert_close(out, torch.stack([a, f], 1))
    seen = []

    def cross(tensors):
        seen.append(len(tensors))
        return tensors[0] * 100 + tensors[1]

    torch.testing.assert_close(_run(_small(), cross), a * 100 + f)
    assert seen == [2]


def test_multi_update_all_untouched_types_and_zero_in_degree():
    g = _small()
    _run(g, "sum")
    # 'game' is no destination of the dict's relations, 'iso' of none at all: nothing written
    assert "o" not in g.nodes["game"].data and "o" not in g.nodes["iso"].data
    assert torch.equal(g.nodes["iso"].data["h"], torch.full((2, 2), 7.0, dtype=F64))
    # user 0 has no in-edge in any relation: zeros for every reducer, as DGL
    for cross in ("sum", "mean", "max", "min"):
        for red in (fn.sum, fn.max, fn.min, fn.mean):
            assert torch.equal(_run(_small(), cross, red)[0], T([0, 0])), (cross, red)


def test_multi_update_all_reduce_kinds_by_hand():
    # max per relation then min across: follows max -> user1 [3, -4]; attracts max -> user1 [10,-1], user2 [20,-2]
    out = _run(_small(), "min", fn.max)
    torch.testing.assert_close(out, T([[0, 0], [3, -4], [0, -2]]))     # user 2: min(0 (no follows edge), ...)
    out = _run(_small(), "max", fn.mean)
    torch.testing.assert_close(out, T([[0, 0], [10, -1], [20, 0]]))   # follows mean of user 1: [2, -5]


def test_multi_update_all_apply_functions():
    g = _small()
    g.multi_update_all({"follows": (fn.copy_u("h", "m"), fn.sum("m", "o"), lambda n: {"o": n.data["o"] * 2}),
                        "attracts": (fn.copy_u("h", "m"), fn.sum("m", "o"))}, "sum",
                       apply_node_func=lambda n: {"o2": n.data["o"] + 1})
    expect = T([[0, 0], [8, -20], [0, 0]]) + T([[0, 0], [10, -1], [40, -4]])
    torch.testing.assert_close(g.nodes["user"].data["o"], expect)
    torch.testing.assert_close(g.nodes["user"].data["o2"], expect + 1)
    assert "o2" not in g.nodes["game"].data


def test_multi_update_all_udfs_match_builtins():
    g1 = _features(random_typed({"a": 7, "b": 5}, {("a", "r", "b"): 20, ("b", "s", "b"): 15, ("a", "t", "b"): 9}))
    g2 = g1.clone()
    g1.multi_update_all({et: (fn.u_mul_e("h", "w", "m"), fn.sum("m", "o")) for et in g1.etypes}, "mean")
    g2.multi_update_all({et: (lambda e: {"m": e.src["h"] * e.data["w"]},
                              lambda n: {"o": n.mailbox["m"].sum(1)}) for et in g2.etypes}, "mean")
    torch.testing.assert_close(g1.nodes["b"].data["o"], g2.nodes["b"].data["o"])


@pytest.mark.parametrize("cross", ["sum", "mean", "max", "min", "stack"])
def test_multi_update_all_matches_per_relation_references(cross):
    nn = {"a": 9, "b": 7, "c": 4}
    rels = {("a", "r", "b"): 30, ("b", "s", "b"): 25, ("c", "t", "b"): 6, ("a", "u", "c"): 10, ("b", "v", "a"): 12}
    g = _features(random_typed(nn, rels, seed=3))
    g.multi_update_all({cet: (fn.u_mul_e("h", "w", "m"), fn.sum("m", "o")) for cet in g.canonical_etypes}, cross)
    for d in nn:
        into = [cet for cet in g.canonical_etypes if cet[2] == d]
        outs = []
        for cet in into:
            ref = _ref_with_features(g, cet)
            ref.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "o"))
            outs.append(ref.nodes[d].data["o"])
        if cross == "stack":
            expect = torch.stack(outs, 1)
        elif len(outs) == 1:
            expect = outs[0]
        else:
            expect = {"sum": sum, "mean": lambda x: sum(x) / len(x),
                      "max": lambda x: torch.stack(x).amax(0), "min": lambda x: torch.stack(x).amin(0)}[cross](outs)
        torch.testing.assert_close(g.nodes[d].data["o"], expect)


def test_multi_update_all_matches_to_homogeneous():
    nn = {"a": 9, "b": 7, "c": 4}
    rels = {("a", "r", "b"): 30, ("b", "s", "b"): 25, ("c", "t", "b"): 6, ("a", "u", "c"): 10}
    g = _features(random_typed(nn, rels, seed=5))
    g.multi_update_all({cet: (fn.copy_u("h", "m"), fn.sum("m", "o")) for cet in g.canonical_etypes}, "sum")
    hg = to_homogeneous(g, ndata=["h"])
    hg.update_all(fn.copy_u("h", "m"), fn.sum("m", "o"))
    ntype = hg.ndata[dgl.NTYPE]
    for i, nt in enumerate(g.ntypes):
        if nt == "a":
            assert "o" not in g.nodes["a"].data        # no relation into 'a'
            continue
        torch.testing.assert_close(g.nodes[nt].data["o"], hg.ndata["o"][ntype == i])


@pytest.mark.parametrize("red", ["sum", "mean", "max", "min"])
def test_update_all_over_all_relations_matches_to_homogeneous(red):
    """update_all without etype reduces over the in-edges of every relation at once (DGL's semantics)."""
    nn = {"a": 9, "b": 7, "c": 4}
    rels = {("a", "r", "b"): 30, ("b", "s", "b"): 25, ("c", "t", "b"): 6, ("a", "u", "c"): 3}
    g = _features(random_typed(nn, rels, seed=7))
    reducer = getattr(fn, red)
    g.update_all(fn.u_mul_e("h", "w", "m"), reducer("m", "o"))
    hg = to_homogeneous(g, ndata=["h"], edata=["w"])
    hg.update_all(fn.u_mul_e("h", "w", "m"), reducer("m", "o"))
    ntype = hg.ndata[dgl.NTYPE]
    for i, nt in enumerate(g.ntypes):
        if nt == "a":
            assert "o" not in g.nodes["a"].data
            continue
        torch.testing.assert_close(g.nodes[nt].data["o"], hg.ndata["o"][ntype == i])


def test_apply_edges_without_etype_runs_every_relation():
    g = _features(typed_case())
    g.apply_edges(fn.u_add_v("h", "h", "s"))
    for cet in g.canonical_etypes:
        ref = _ref_with_features(g, cet)
        ref.apply_edges(fn.u_add_v("h", "h", "s"))
        torch.testing.assert_close(g.edges[cet].data["s"], ref.edata["s"])
    with pytest.raises(DGLError, match="user-defined function needs etype"):
        g.apply_edges(lambda e: {"x": e.src["h"]})


def test_multi_update_all_gradcheck():
    g = dgl.heterograph({("a", "r", "b"): ([0, 1, 2, 2], [0, 0, 1, 2]), ("b", "s", "b"): ([0, 1, 2], [1, 1, 0]),
                         ("a", "t", "b"): ([1], [2])})
    gen = torch.Generator().manual_seed(0)
    xa = torch.randn(3, 2, dtype=F64, generator=gen, requires_grad=True)
    xb = torch.randn(3, 2, dtype=F64, generator=gen, requires_grad=True)
    w = torch.randn(4, 2, dtype=F64, generator=gen, requires_grad=True)

    def f(xa, xb, w, cross, red):
        with g.local_scope():
            g.nodes["a"].data["h"] = xa
            g.nodes["b"].data["h"] = xb
            g.edges["r"].data["w"] = w
            g.multi_update_all({"r": (fn.u_mul_e("h", "w", "m"), red("m", "o")),
                                "s": (fn.copy_u("h", "m"), red("m", "o")),
                                "t": (fn.copy_u("h", "m"), red("m", "o"))}, cross)
            return g.nodes["b"].data["o"]

    for cross, red in (("sum", fn.sum), ("mean", fn.mean), ("max", fn.sum), ("stack", fn.max)):
        assert torch.autograd.gradcheck(lambda a, b, c, cross=cross, red=red: f(a, b, c, cross, red), (xa, xb, w))


def test_multi_update_all_bad_input():
    g = _small()
    with pytest.raises(DGLError, match="cross_reducer"):
        _run(g, "prod")
    with pytest.raises(DGLError, match="message_func, reduce_func"):
        g.multi_update_all({"follows": fn.copy_u("h", "m")}, "sum")
    with pytest.raises(DGLError, match="given twice"):
        g.multi_update_all({"follows": (fn.copy_u("h", "m"), fn.sum("m", "o")),
                            ("user", "follows", "user"): (fn.copy_u("h", "m"), fn.sum("m", "o"))}, "sum")
    with pytest.raises(DGLError, match="different features"):
        g.multi_update_all({"follows": (fn.copy_u("h", "m"), fn.sum("m", "o")),
                            "attracts": (fn.copy_u("h", "m"), fn.sum("m", "p"))}, "sum")
    with pytest.raises(DGLError, match="does not exist"):
        g.multi_update_all({"buys": (fn.copy_u("h", "m"), fn.sum("m", "o"))}, "sum")
    with pytest.raises(DGLError, match=r"relation \('game', 'attracts', 'user'\).*'x'"):
        g.multi_update_all({"attracts": (fn.copy_u("x", "m"), fn.sum("m", "o"))}, "sum")
    g.nodes["game"].data["h3"] = torch.ones(2, 3, dtype=F64)
    g.nodes["user"].data["h3"] = torch.ones(3, 2, dtype=F64)
    with pytest.raises(DGLError, match="shape"):
        g.multi_update_all({"follows": (fn.copy_u("h3", "m"), fn.sum("m", "o")),
                            "attracts": (fn.copy_u("h3", "m"), fn.sum("m", "o"))}, "sum")
    with pytest.raises(DGLError, match="user-defined functions needs etype"):
        g.update_all(lambda e: {"m": e.src["h"]}, fn.sum("m", "o"))
