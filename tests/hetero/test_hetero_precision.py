"""Half precision per relation and across relations: float32 accumulation, one rounding at the end.

The cross reducer of ``multi_update_all`` (and ``update_all`` over every
relation) combines the relations' *unrounded* float32 results, so a 16-bit
result is the exact value rounded once, as for a single relation.
"""

import pytest
import torch
from hetero_cases import random_typed, reference
from tolerances import assert_close

import mpgraph as dgl
import mpgraph.function as fn


def _fan_in(counts, dtype, value=1.0):
    """Relation ``r{i}`` (type ``s{i}`` -> ``t``) delivers ``counts[i]`` messages ``value`` into node 0 of ``t``."""
    data = {(f"s{i}", f"r{i}", "t"): (torch.arange(n), torch.zeros(n, dtype=torch.int64))
            for i, n in enumerate(counts)}
    g = dgl.heterograph(data, {"t": 2})
    for i, n in enumerate(counts):
        g.nodes[f"s{i}"].data["h"] = torch.full((n, 1), value, dtype=dtype)
    return g


def _multi(g, cross, red=fn.sum):
    g.multi_update_all({et: (fn.copy_u("h", "m"), red("m", "o")) for et in g.etypes}, cross)
    return g.nodes["t"].data["o"]


def test_three_relations_of_20000_ones_sum_to_60000_in_fp16():
    g = _fan_in([20000, 20000, 20000], torch.float16)
    out = _multi(g, "sum")
    assert out.dtype == torch.float16 and out[0, 0].item() == 60000.0 and out[1, 0].item() == 0.0
    assert _multi(_fan_in([20000] * 3, torch.float16), "mean")[0, 0].item() == 20000.0
    g = _fan_in([20000, 20000, 20000], torch.float16)
    g.update_all(fn.copy_u("h", "m"), fn.sum("m", "o"))            # all relations at once
    assert g.nodes["t"].data["o"][0, 0].item() == 60000.0


@pytest.mark.parametrize("dtype, counts, exact", [
    # fp16: 20008 is a tie between 20000 and 20016 (spacing 16) and rounds to 20000; the exact total
    # 60024 rounds to 60032 (spacing 32). Rounding each relation first would give 3 * 20000 = 60000.
    (torch.float16, [20008, 20008, 20008], 60024.0),
    # bf16: 257 rounds to 256 (spacing 2); the total 771 rounds to 772 (spacing 4), per-relation rounding gives 768.
    (torch.bfloat16, [257, 257, 257], 771.0),
])
def test_cross_sum_rounds_once(dtype, counts, exact):
    once = torch.tensor(exact).to(dtype).item()
    per_relation = 3 * torch.tensor(float(counts[0])).to(dtype).item()
    assert once != per_relation                                     # the case tells the two apart
    assert _multi(_fan_in(counts, dtype), "sum")[0, 0].item() == once
    assert _multi(_fan_in(counts, dtype), "mean")[0, 0].item() == torch.tensor(exact / 3).to(dtype).item()
    g = _fan_in(counts, dtype)
    g.update_all(fn.copy_u("h", "m"), fn.sum("m", "o"))
    assert g.nodes["t"].data["o"][0, 0].item() == once
    g = _fan_in(counts, dtype)
    g.update_all(fn.copy_u("h", "m"), fn.mean("m", "o"))             # the mean over every in-edge
    assert g.nodes["t"].data["o"][0, 0].item() == 1.0
    # per relation the sums are rounded once too (stack shows them)
    stacked = _multi(_fan_in(counts, dtype), "stack")
    assert stacked.shape == (2, 3, 1)
    assert stacked[0, :, 0].tolist() == [torch.tensor(float(counts[0])).to(dtype).item()] * 3


NN = {"a": 40, "b": 30, "c": 12}
RELS = {("a", "r", "b"): 300, ("b", "s", "b"): 200, ("c", "t", "b"): 60, ("a", "u", "c"): 80}


def _graph(dtype, seed=11):
    g = random_typed(NN, RELS, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    for nt in g.ntypes:
        g.nodes[nt].data["h"] = torch.randn(g.num_nodes(nt), 4, generator=gen, dtype=torch.float64).to(dtype)
    for cet in g.canonical_etypes:
        g.edges[cet].data["w"] = torch.rand(g.num_edges(cet), 4, generator=gen, dtype=torch.float64).to(dtype)
    return g


@pytest.mark.parametrize("cross", ["sum", "mean", "max", "min", "stack"])
@pytest.mark.parametrize("red", ["sum", "mean", "max"])
def test_multi_update_all_half_matches_float64(float_dtype, cross, red):
    g = _graph(float_dtype)
    g64 = dgl.to_double(g)
    reducer = getattr(fn, red)
    funcs = {cet: (fn.u_mul_e("h", "w", "m"), reducer("m", "o")) for cet in g.canonical_etypes}
    g.multi_update_all(funcs, cross)
    g64.multi_update_all(funcs, cross)
    for nt in ("b", "c"):
        out = g.nodes[nt].data["o"]
        assert out.dtype == float_dtype
        assert_close(out, g64.nodes[nt].data["o"], float_dtype)


@pytest.mark.parametrize("cet", sorted(RELS))
def test_update_all_per_relation_half_matches_reference(float_dtype, cet):
    g = _graph(float_dtype)
    g.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "o"), etype=cet)
    ref = reference(g, cet)
    s, _, d = cet
    ref.nodes[s].data["h"] = g.nodes[s].data["h"].double()
    ref.edata["w"] = g.edges[cet].data["w"].double()
    ref.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "o"))
    assert g.nodes[d].data["o"].dtype == float_dtype
    assert_close(g.nodes[d].data["o"], ref.nodes[d].data["o"], float_dtype)


def test_multi_update_all_under_autocast():
    g = _graph(torch.float32)
    g64 = dgl.to_double(g)
    funcs = {cet: (fn.u_mul_e("h", "w", "m"), fn.sum("m", "o")) for cet in g.canonical_etypes}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        g.multi_update_all(funcs, "mean")
    out = g.nodes["b"].data["o"]
    assert out.dtype == torch.bfloat16
    g64.multi_update_all(funcs, "mean")
    # operands are cast to bf16 (one rounding each) before the fp32-accumulated op: the model tolerance
    assert_close(out, g64.nodes["b"].data["o"], torch.bfloat16, model=True)


def test_half_gradients_flow_through_the_cross_reducer():
    g = _graph(torch.float16)
    h = g.nodes["a"].data["h"].clone().requires_grad_(True)
    g.nodes["a"].data["h"] = h
    g.multi_update_all({cet: (fn.copy_u("h", "m"), fn.sum("m", "o")) for cet in g.canonical_etypes}, "mean")
    g.nodes["b"].data["o"].float().sum().backward()
    assert h.grad is not None and h.grad.dtype == torch.float16
    # d/dh_a of mean over the 3 relations into 'b' of copy_u sums: out-degree of each 'a' node in 'r', divided by 3
    expect = g.out_degrees(etype="r").double() / 3
    torch.testing.assert_close(h.grad[:, 0].double(), expect, rtol=2e-3, atol=2e-3)
