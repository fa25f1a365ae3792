"""HeteroGraphConv, HeteroLinear, HeteroEmbedding and HGTConv."""

import math

import pytest
import torch
from hetero_cases import random_typed, reference, typed_case
from torch import nn

import mpgraph as dgl
from mpgraph.base import DGLError, NTYPE, ETYPE
from mpgraph.heterograph import to_homogeneous
from mpgraph.nn import GraphConv, SAGEConv
from mpgraph.nn.conv.hgtconv import HGTConv
from mpgraph.nn.hetero import HeteroEmbedding, HeteroGraphConv, HeteroLinear

F64 = torch.float64
NN = {"a": 9, "b": 7, "c": 4}
RELS = {("a", "r", "b"): 30, ("b", "s", "b"): 25, ("c", "t", "b"): 6, ("a", "u", "c"): 10, ("b", "v", "a"): 12}


def _inputs(g, D, dtype=F64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return {nt: torch.randn(g.num_nodes(nt), D, generator=gen, dtype=F64).to(dtype) for nt in g.ntypes}


def _manual(g, mods, x, agg):
    """Each relation's module on the standalone relation graph, aggregated per destination type."""
    per = {}
    for cet in g.canonical_etypes:
        s, e, d = cet
        out = mods[e](reference(g, cet), (x[s], x[d]))
        per.setdefault(d, []).append(out)
    res = {}
    for d, outs in per.items():
        st = torch.stack(outs, 0)
        res[d] = {"sum": st.sum(0), "mean": st.mean(0), "max": st.amax(0), "min": st.amin(0),
                  "stack": torch.stack(outs, 1)}[agg]
    return res


@pytest.mark.parametrize("agg", ["sum", "mean", "max", "min", "stack"])
def test_heterographconv_matches_manual_per_relation(agg):
    torch.manual_seed(0)
    g = random_typed(NN, RELS, seed=1)
    mods = {e: GraphConv(5, 3).double() for _, e, _ in RELS}
    conv = HeteroGraphConv(mods, aggregate=agg)
    x = _inputs(g, 5)
    out = conv(g, x)
    ref = _manual(g, mods, x, agg)
    assert sorted(out) == sorted(ref) == ["a", "b", "c"]
    for nt in out:
        torch.testing.assert_close(out[nt], ref[nt])
    assert all(m._allow_zero_in_degree for m in mods.values())      # DGL's rule for heterographs
    assert all(len(g.nodes[nt].data) == 0 for nt in g.ntypes)       # functional inside: no keys left


def test_heterographconv_callable_canonical_keys_and_kwargs():
    g = random_typed(NN, RELS, seed=2)
    torch.manual_seed(0)
    mods = {("a", "r", "b"): GraphConv(4, 2).double(), "r": GraphConv(4, 2).double()}
    for _, e, _ in RELS:
        mods.setdefault(e, GraphConv(4, 2).double())
    calls = []

    def agg(tensors, dsttype):
        calls.append((dsttype, len(tensors)))
        return torch.stack(tensors, 0).sum(0) * 2

    conv = HeteroGraphConv(mods, aggregate=agg)
    x = _inputs(g, 4)
    ew = {e: (torch.rand(g.num_edges(e), dtype=F64),) for _, e, _ in RELS}
    out = conv(g, x, mod_kwargs={e: {"edge_weight": w[0]} for e, w in ew.items()})
    assert sorted(calls) == [("a", 1), ("b", 3), ("c", 1)]
    cet = ("a", "r", "b")
    r_out = mods[cet](reference(g, cet), (x["a"], x["b"]), edge_weight=ew["r"][0])    # canonical key wins
    rest = [mods[e](reference(g, c), (x[c[0]], x["b"]), edge_weight=ew[e][0]) for c in g.canonical_etypes
            if c[2] == "b" and c != cet for e in [c[1]]]
    torch.testing.assert_close(out["b"], (r_out + sum(rest)) * 2)
    # positional extra arguments per etype: GraphConv(weight=False) takes an external weight
    mods2 = {e: GraphConv(4, 2, weight=False).double() for _, e, _ in RELS}
    W = {e: torch.randn(4, 2, dtype=F64) for _, e, _ in RELS}
    out2 = HeteroGraphConv(mods2)(g, x, mod_args={e: (W[e],) for e in W})
    exp = sum(mods2[c[1]](reference(g, c), (x[c[0]], x["c"]), W[c[1]]) for c in g.canonical_etypes if c[2] == "c")
    torch.testing.assert_close(out2["c"], exp)


def test_heterographconv_bipartite_pairs_skips_and_errors():
    g = dgl.heterograph({("user", "plays", "game"): ([0, 1, 2], [0, 0, 1]), ("user", "buys", "item"): ([2], [0]),
                         ("dev", "makes", "game"): ([0], [1])})
    torch.manual_seed(0)
    conv = HeteroGraphConv({"plays": SAGEConv((3, 2), 4, "mean"), "buys": SAGEConv((3, 5), 4, "mean"),
                            "makes": SAGEConv((6, 2), 4, "mean")})
    src = {"user": torch.randn(3, 3), "dev": torch.randn(1, 6)}
    dst = {"game": torch.randn(2, 2), "item": torch.randn(1, 5)}
    out = conv(g, (src, dst))
    assert sorted(out) == ["game", "item"] and out["game"].shape == (2, 4)
    exp = conv.mods["plays"](g["plays"], (src["user"], dst["game"])) + \
        conv.mods["makes"](g["makes"], (src["dev"], dst["game"]))
    torch.testing.assert_close(out["game"], exp)
    only_user = conv(g, ({"user": src["user"]}, dst))                # 'makes' has no source input: skipped
    torch.testing.assert_close(only_user["game"], conv.mods["plays"](g["plays"], (src["user"], dst["game"])))
    with pytest.raises(DGLError, match="needs features of destination type 'item'"):
        conv(g, ({"user": src["user"]}, {"game": dst["game"]}))
    with pytest.raises(DGLError, match="no module for relation"):
        HeteroGraphConv({"plays": GraphConv(3, 2)})(g, ({"user": src["user"]}, dst))
    with pytest.raises(DGLError, match="aggregate"):
        HeteroGraphConv({"plays": GraphConv(3, 2)}, aggregate="prod")


def test_heterographconv_on_a_one_relation_graph_and_block():
    g = dgl.heterograph({("user", "plays", "game"): ([0, 1, 2], [0, 0, 1])})
    conv = HeteroGraphConv({"plays": GraphConv(3, 2)})
    out = conv(g, {"user": torch.ones(3, 3), "game": torch.ones(2, 3)})
    assert list(out) == ["game"] and out["game"].shape == (2, 2)
    b = dgl.create_block({("user", "plays", "user"): ([0, 1, 2], [0, 0, 1])}, num_src_nodes=3, num_dst_nodes=2)
    out = HeteroGraphConv({"plays": GraphConv(3, 2)})(b, {"user": torch.ones(3, 3)})
    assert out["user"].shape == (2, 2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_heterographconv_half_sum_rounds_once(dtype):
    class Const(nn.Module):
        def __init__(self, value):
            super().__init__()
            self.value = value

        def forward(self, g, feat):
            return torch.full((g.num_dst_nodes(), 1), self.value, dtype=dtype)

    # 2048 + 1 + 1 in fp16 (bf16: 256 + 1 + 1): adding in the 16-bit format loses both 1s (ties to even),
    # the float32 sum 2050 (258) is exact in the format
    big = 2048.0 if dtype == torch.float16 else 256.0
    g = dgl.heterograph({("a", "x", "t"): ([0], [0]), ("b", "y", "t"): ([0], [0]), ("c", "z", "t"): ([0], [0])})
    conv = HeteroGraphConv({"x": Const(big), "y": Const(1.0), "z": Const(1.0)}, aggregate="sum")
    out = conv(g, {"a": torch.ones(1, 1), "b": torch.ones(1, 1), "c": torch.ones(1, 1), "t": torch.ones(1, 1)})
    assert out["t"].dtype == dtype and out["t"].item() == big + 2
    naive = (torch.tensor([big], dtype=dtype) + torch.tensor([1.0], dtype=dtype)) + torch.tensor([1.0], dtype=dtype)
    assert naive.item() == big


def test_rgcn_style_model_under_autocast():
    g = random_typed(NN, RELS, seed=4)
    torch.manual_seed(0)
    conv = HeteroGraphConv({e: GraphConv(5, 3) for _, e, _ in RELS})
    x = _inputs(g, 5, torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = conv(g, x)
    ref = conv(g, x)
    for nt in out:
        assert out[nt].dtype == torch.bfloat16
        torch.testing.assert_close(out[nt].float(), ref[nt], rtol=6e-2, atol=6e-2)


def test_hetero_linear_and_embedding():
    torch.manual_seed(0)
    lin = HeteroLinear({"user": 2, ("user", "follows", "user"): 3}, 4)
    x = {"user": torch.randn(5, 2), ("user", "follows", "user"): torch.randn(6, 3)}
    out = lin(x)
    torch.testing.assert_close(out["user"], lin.linears["user"](x["user"]))
    assert out[("user", "follows", "user")].shape == (6, 4)
    with pytest.raises(DGLError, match="no linear map for type 'game'"):
        lin({"game": torch.ones(1, 2)})
    emb = HeteroEmbedding({"user": 3, ("user", "follows", "user"): 5}, 4)
    w = emb.weight
    assert w["user"].shape == (3, 4) and w[("user", "follows", "user")].shape == (5, 4)
    out = emb({"user": torch.tensor([0, 2])})
    torch.testing.assert_close(out["user"], w["user"][[0, 2]])
    emb.reset_parameters()
    with pytest.raises(DGLError, match="no table for type 'x'"):
        emb({"x": torch.tensor([0])})


# ----------------------------------------------------------------------------- HGTConv

def _hgt_dense(conv, src, dst, N, x, ntype, etype):
    """HGT by its formula, edge by edge, in float64 (dropout off)."""
    H, D = conv.num_heads, conv.head_size
    Wk, Wq, Wv, Wa = (lin.get_weight().double() for lin in (conv.linear_k, conv.linear_q, conv.linear_v,
                                                             conv.linear_a))
    x = x.double()
    out = torch.zeros(N, H * D, dtype=F64)
    for t in range(N):
        edges = [e for e in range(len(src)) if dst[e] == t]
        q = (x[t] @ Wq[ntype[t]]).view(H, D)
        agg = torch.zeros(H, D, dtype=F64)
        for i in range(H):
            logits, msgs = [], []
            for e in edges:
                s, r = src[e], etype[e]
                k = (x[s] @ Wk[ntype[s]]).view(H, D)[i]
                v = (x[s] @ Wv[ntype[s]]).view(H, D)[i]
                att = conv.relation_att[i].get_weight().double()[r]
                msg = conv.relation_msg[i].get_weight().double()[r]
                logits.append((k @ att) @ q[i] * conv.relation_pri[i].double()[r] / math.sqrt(D))
                msgs.append(v @ msg)
            if edges:
                a = torch.softmax(torch.stack(logits), 0)
                agg[i] = (a.unsqueeze(1) * torch.stack(msgs)).sum(0)
        h = agg.reshape(-1) @ Wa[ntype[t]]
        alpha = torch.sigmoid(conv.skip.double()[ntype[t]])
        res = x[t] @ conv.residual_w.double() if hasattr(conv, "residual_w") else x[t]
        out[t] = h * alpha + res * (1 - alpha)
    if conv.use_norm:
        out = torch.nn.functional.layer_norm(out, (H * D,), conv.norm.weight.double(), conv.norm.bias.double())
    return out


@pytest.mark.parametrize("in_size, use_norm", [(6, False), (4, True)])
def test_hgtconv_matches_dense_formula(in_size, use_norm):
    src, dst = [0, 1, 2, 3, 3, 4, 0], [1, 2, 0, 0, 1, 1, 4]
    g = dgl.graph((src, dst), num_nodes=6)        # node 5: no in-edges
    ntype = torch.tensor([0, 1, 0, 1, 1, 0])
    etype = torch.tensor([0, 1, 1, 0, 2, 0, 1])
    torch.manual_seed(0)
    conv = HGTConv(in_size, head_size=2, num_heads=2, num_ntypes=2, num_etypes=3, dropout=0.0,
                   use_norm=use_norm).double()
    with torch.no_grad():
        for p in conv.relation_pri:
            p.uniform_(0.5, 1.5)
        conv.skip.uniform_(-1, 1)
    x = torch.randn(6, in_size, dtype=F64)
    out = conv(g, x, ntype, etype)
    assert out.shape == (6, 4) and out.dtype == F64
    torch.testing.assert_close(out, _hgt_dense(conv, src, dst, 6, x, ntype.tolist(), etype.tolist()))
    assert len(g.ndata) == 0 and len(g.edata) == 0
    out.sum().backward()
    assert conv.relation_att[0].W.grad is not None and conv.skip.grad is not None


def test_hgtconv_on_to_homogeneous_dtypes_and_block():
    hg = random_typed(NN, RELS, seed=5)
    g = to_homogeneous(hg)
    torch.manual_seed(0)
    conv = HGTConv(8, 4, 2, num_ntypes=len(hg.ntypes), num_etypes=len(hg.canonical_etypes), dropout=0.0)
    x = torch.randn(g.num_nodes(), 8)
    out = conv(g, x, g.ndata[NTYPE], g.edata[ETYPE])
    assert out.shape == (g.num_nodes(), 8) and out.dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        amp = conv(g, x, g.ndata[NTYPE], g.edata[ETYPE])
    assert amp.dtype == torch.bfloat16
    torch.testing.assert_close(amp.float(), out, rtol=0.1, atol=0.1)
    half = HGTConv(8, 4, 2, len(hg.ntypes), len(hg.canonical_etypes), dropout=0.0)
    half.load_state_dict(conv.state_dict())
    out16 = half.half()(g, x.half(), g.ndata[NTYPE], g.edata[ETYPE])
    assert out16.dtype == torch.float16
    torch.testing.assert_close(out16.float(), out, rtol=2e-2, atol=2e-2)
    # a block: destinations are the first source nodes
    b = dgl.create_block(([0, 1, 2, 3], [0, 1, 1, 0]), num_src_nodes=4, num_dst_nodes=2)
    outb = conv(b, x[:4], g.ndata[NTYPE][:4], torch.tensor([0, 1, 2, 3]))
    assert outb.shape == (2, 8)


def test_hgtconv_bad_input():
    g = dgl.graph(([0, 1], [1, 0]))
    conv = HGTConv(4, 2, 2, num_ntypes=2, num_etypes=2)
    with pytest.raises(DGLError, match="4 features"):
        conv(g, torch.ones(2, 3), torch.tensor([0, 1]), torch.tensor([0, 1]))
    with pytest.raises(DGLError, match=r"etype in \[0, 2\)"):
        conv(g, torch.ones(2, 4), torch.tensor([0, 1]), torch.tensor([0, 5]))
    with pytest.raises(DGLError, match=r"ntype as \(2,\)"):
        conv(g, torch.ones(2, 4), torch.tensor([0]), torch.tensor([0, 1]))


def test_typed_case_slices_work_with_layers():
    g = typed_case()
    conv = HeteroGraphConv({"follows": GraphConv(2, 2), "plays": GraphConv(2, 2), "develops": GraphConv(2, 2),
                            "likes": GraphConv(2, 2), "sold-by": GraphConv(2, 2)})
    out = conv(g, {nt: torch.ones(g.num_nodes(nt), 2) for nt in g.ntypes})
    assert sorted(out) == ["dev", "game", "user"]
