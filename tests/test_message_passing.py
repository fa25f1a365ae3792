"""Message passing through the Graph: every builtin x reducer x broadcast shape, each binary op in two dtypes
(one full, one half precision; ``MP_OPS``), copies and dot in all four, both idtypes, against a float64
reference written here and against the UDF path; graph cases; partial updates."""

import itertools

import pytest
import torch

import mpgraph as dgl
import mpgraph.function as fn
from graph_cases import CASES
from mpgraph import DGLError
from tolerances import assert_close

BINARY = [f"{x}_{op}_{y}" for x, y in itertools.permutations("uve", 2) for op in ("add", "sub", "mul", "div", "dot")]
MESSAGES = ["copy_u", "copy_e"] + BINARY
REDUCERS = ["sum", "mean", "max", "min"]
# (node feature shape, edge feature shape)
SHAPES = {"same": ((3,), (3,)), "heads": ((2, 3), (2, 1)), "scalar_e": ((4,), (1,))}
TORCH_OP = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}


def _test_graph(idtype):
    # distinct (src, dst) pairs, node 6 has no in-edges, node 7 isolated, a self-loop
    src = [0, 1, 2, 3, 4, 5, 6, 0, 2, 4, 1, 3, 5, 6, 2]
    dst = [1, 2, 3, 4, 5, 0, 0, 2, 4, 0, 3, 5, 1, 2, 2]
    return dgl.graph((torch.tensor(src), torch.tensor(dst)), num_nodes=8, idtype=idtype)


def _feats(g, shape_key, dtype, dot, seed=0):
    gen = torch.Generator().manual_seed(seed)
    nshape, eshape = SHAPES[shape_key]
    if dot:  # dot needs a reduced last dim on both sides
        nshape, eshape = nshape, nshape
    x = torch.rand((g.num_nodes(),) + nshape, generator=gen, dtype=torch.float64) + 0.5
    w = torch.rand((g.num_edges(),) + eshape, generator=gen, dtype=torch.float64) + 0.5
    return x.to(dtype), w.to(dtype)


def _operand(target, x, w, src, dst):
    return {"u": x[src], "v": x[dst], "e": w}[target]


def ref_message(name, x, w, src, dst):
    if name == "copy_u":
        return x[src]
    if name == "copy_e":
        return w
    lt, op, rt = name.split("_")
    a, b = _operand(lt, x, w, src, dst), _operand(rt, x, w, src, dst)
    if op == "dot":
        return (a * b).sum(-1, keepdim=True)
    return TORCH_OP[op](a, b)


def ref_reduce(msg, dst, n, op):
    out = torch.zeros((n,) + msg.shape[1:], dtype=msg.dtype)
    idx = dst.reshape((-1,) + (1,) * (msg.dim() - 1)).expand_as(msg)
    if op in ("sum", "mean"):
        out = out.index_add(0, dst, msg)
        if op == "mean":
            deg = torch.bincount(dst, minlength=n).clamp(min=1).to(msg.dtype)
            out = out / deg.reshape((-1,) + (1,) * (msg.dim() - 1))
        return out
    return out.scatter_reduce(0, idx, msg, "amax" if op == "max" else "amin", include_self=False)


def _builtin_msg(name):
    if name == "copy_u":
        return fn.copy_u("x", "m")
    if name == "copy_e":
        return fn.copy_e("w", "m")
    lt, _, rt = name.split("_")
    fields = {"u": "x", "v": "x", "e": "w"}
    return getattr(fn, name)(fields[lt], fields[rt], "m")


def _udf_msg(name):
    def message(edges):
        feats = {"u": edges.src["x"], "v": edges.dst["x"], "e": edges.data["w"]}
        if name == "copy_u":
            return {"m": edges.src["x"]}
        if name == "copy_e":
            return {"m": edges.data["w"]}
        lt, op, rt = name.split("_")
        a, b = feats[lt], feats[rt]
        if op == "dot":
            return {"m": (a * b).sum(-1, keepdim=True)}
        return {"m": TORCH_OP[op](a, b)}
    return message


def _udf_reduce(op):
    def reduce(nodes):
        m = nodes.mailbox["m"]
        if op == "sum":
            return {"y": m.sum(1)}
        if op == "mean":
            return {"y": m.mean(1)}
        return {"y": m.max(1).values if op == "max" else m.min(1).values}
    return reduce


def _idtype_for(*keys):
    # Each combination runs with one idtype, alternating deterministically, so both idtypes
    # meet every builtin, reducer and shape without doubling the matrix.
    return (torch.int32, torch.int64)[sum(map(len, keys)) % 2]


#: the binary ops each float dtype takes through ``update_all``: each op meets a full and a half precision
#: (add and mul: float64 and float16; sub and div: float32 and bfloat16), dot (an fp32-accumulated reduction
#: of 16-bit operands) every dtype; copies every dtype. The dtype changes a kernel's loads, stores and
#: accumulator, the op only its arithmetic, and each (op, reducer, layout, dtype) is a kernel to compile (about
#: 4-6 s, most of a cold test run): crossing every op with every dtype compiled 225 kernels in this test alone
#: (a cold run of it: 1261 s compiling). ``tests/ops/test_spmm.py`` and ``test_sddmm.py`` cross them all.
MP_OPS = {torch.float64: ("add", "mul", "dot"), torch.float16: ("add", "mul", "dot"),
          torch.float32: ("sub", "div", "dot"), torch.bfloat16: ("sub", "div", "dot")}
MSG_DTYPES = [(msg, dtype) for dtype in MP_OPS for msg in MESSAGES
              if msg.startswith("copy") or msg.split("_")[1] in MP_OPS[dtype]]
_DTYPE_IDS = {torch.float64: "f64", torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


@pytest.mark.parametrize("shape_key", sorted(SHAPES))
@pytest.mark.parametrize("reducer", REDUCERS)
@pytest.mark.parametrize("msg, float_dtype", MSG_DTYPES, ids=[f"{_DTYPE_IDS[d]}-{m}" for m, d in MSG_DTYPES])
def test_update_all_builtin_vs_reference_and_udf(msg, reducer, shape_key, float_dtype):
    idtype = _idtype_for(msg, reducer, shape_key, str(float_dtype))
    g = _test_graph(idtype)
    dot = msg.split("_")[1] == "dot"
    if dot and shape_key == "scalar_e":
        pytest.skip("dot of a (1,) feature is covered by 'same'")
    x64, w64 = _feats(g, shape_key, torch.float64, dot)
    x = x64.to(float_dtype).requires_grad_()
    w = w64.to(float_dtype).requires_grad_()
    g.ndata["x"], g.edata["w"] = x, w
    g.update_all(_builtin_msg(msg), getattr(fn, reducer)("m", "y"))
    out = g.ndata["y"]
    assert out.dtype == float_dtype

    src, dst = (t.long() for t in g.edges())
    xr = x.detach().double().requires_grad_()
    wr = w.detach().double().requires_grad_()
    ref = ref_reduce(ref_message(msg, xr, wr, src, dst), dst, g.num_nodes(), reducer)
    assert out.shape == ref.shape
    assert_close(out.detach(), ref.detach(), float_dtype)

    # the UDF path gives the same result
    g2 = _test_graph(idtype)
    g2.ndata["x"], g2.edata["w"] = x.detach(), w.detach()
    g2.update_all(_udf_msg(msg), _udf_reduce(reducer))
    assert_close(g2.ndata["y"], ref.detach(), float_dtype)

    # gradients (max/min in half precision may pick a different tied edge)
    if reducer in ("max", "min") and float_dtype in (torch.float16, torch.bfloat16):
        return
    gout = torch.rand(out.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    out.backward(gout.to(float_dtype))
    ref.backward(gout)
    for mine, theirs in ((x.grad, xr.grad), (w.grad, wr.grad)):
        if theirs is None:
            assert mine is None or float(mine.abs().max()) == 0.0
        else:
            assert mine is not None and mine.dtype == float_dtype
            assert_close(mine, theirs, float_dtype)


@pytest.mark.parametrize("msg", ["copy_u", "u_mul_e", "u_dot_v", "e_sub_v", "v_div_u"])
def test_apply_edges_builtin(msg, idtype, float_dtype):
    g = _test_graph(idtype)
    x64, w64 = _feats(g, "same", torch.float64, True)
    g.ndata["x"], g.edata["w"] = x64.to(float_dtype), w64.to(float_dtype)
    g.apply_edges(_builtin_msg(msg))
    src, dst = (t.long() for t in g.edges())
    ref = ref_message(msg, g.ndata["x"].double(), g.edata["w"].double(), src, dst)
    assert g.edata["m"].dtype == float_dtype
    assert_close(g.edata["m"], ref, float_dtype)
    g.apply_edges(_udf_msg(msg))
    assert_close(g.edata["m"], ref, float_dtype)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("reducer", REDUCERS)
def test_graph_cases(case, reducer, idtype):
    src, dst, ns, nd = CASES[case]
    if ns != nd:
        g = dgl.heterograph({("a", "r", "b"): (src, dst)}, {"a": ns, "b": nd}, idtype=idtype)
    else:
        g = dgl.graph((src, dst), num_nodes=ns, idtype=idtype)
    x = torch.randn(ns, 4, dtype=torch.float64)
    w = torch.randn(src.numel(), 1, dtype=torch.float64)
    g.srcdata["x"] = x
    g.edata["w"] = w
    g.update_all(fn.u_mul_e("x", "w", "m"), getattr(fn, reducer)("m", "y"))
    ref = ref_reduce(x[src] * w, dst, nd, reducer)
    assert_close(g.dstdata["y"], ref, torch.float64)
    g.update_all(lambda e: {"m": e.src["x"] * e.data["w"]}, _udf_reduce(reducer))
    assert_close(g.dstdata["y"], ref, torch.float64)


def test_bipartite_uses_src_and_dst_features():
    g = dgl.heterograph({("user", "plays", "game"): ([0, 1, 2, 2], [0, 0, 1, 0])})
    g.nodes["user"].data["h"] = torch.tensor([[1.0], [2.0], [3.0]])
    g.nodes["game"].data["h"] = torch.tensor([[10.0], [20.0]])
    g.apply_edges(fn.u_add_v("h", "h", "s"))
    assert g.edata["s"].squeeze(1).tolist() == [11.0, 12.0, 23.0, 13.0]
    g.update_all(fn.copy_u("h", "m"), fn.sum("m", "agg"))
    assert g.nodes["game"].data["agg"].squeeze(1).tolist() == [6.0, 3.0]
    assert "agg" not in g.srcdata


def test_block_message_passing():
    b = dgl.create_block(([0, 1, 2, 3], [0, 0, 1, 1]), num_src_nodes=4, num_dst_nodes=2)
    b.srcdata["h"] = torch.arange(4.0).unsqueeze(1)
    b.dstdata["h"] = torch.ones(2, 1)
    b.update_all(fn.copy_u("h", "m"), fn.max("m", "hmax"))
    assert b.dstdata["hmax"].squeeze(1).tolist() == [1.0, 3.0]


def test_multiple_builtins_in_one_call():
    g = _test_graph(torch.int64)
    g.ndata["x"] = torch.rand(8, 2)
    g.edata["w"] = torch.rand(15, 2)
    g.update_all([fn.copy_u("x", "m1"), fn.u_mul_e("x", "w", "m2")], [fn.sum("m1", "a"), fn.max("m2", "b")])
    src, dst = (t.long() for t in g.edges())
    assert_close(g.ndata["a"], ref_reduce(g.ndata["x"][src].double(), dst, 8, "sum"), torch.float32)
    assert_close(g.ndata["b"], ref_reduce((g.ndata["x"][src] * g.edata["w"]).double(), dst, 8, "max"),
                 torch.float32)


def test_udf_message_with_builtin_reduce_and_builtin_message_with_udf_reduce():
    g = _test_graph(torch.int64)
    g.ndata["x"] = torch.rand(8, 3, dtype=torch.float64)
    g.update_all(lambda e: {"m": e.src["x"] * 2}, fn.sum("m", "a"))
    g.update_all(fn.copy_u("x", "m"), lambda n: {"b": n.mailbox["m"].sum(1) * 2})
    assert_close(g.ndata["a"], g.ndata["b"], torch.float64)


def test_degree_bucketing_mailbox_shapes():
    g = dgl.graph(([0, 1, 2, 3, 4, 5], [1, 1, 1, 2, 2, 0]), num_nodes=6)
    g.ndata["x"] = torch.arange(6.0).unsqueeze(1)
    seen = []

    def reduce(nodes):
        seen.append((nodes.mailbox["m"].shape, nodes.nodes().tolist()))
        return {"y": nodes.mailbox["m"].sum(1)}
    g.update_all(fn.copy_u("x", "m"), reduce)
    assert sorted(seen) == sorted([((1, 1, 1), [0]), ((1, 2, 1), [2]), ((1, 3, 1), [1])])
    assert g.ndata["y"].squeeze(1).tolist() == [5.0, 3.0, 7.0, 0.0, 0.0, 0.0]


def test_edge_batch_api():
    g = dgl.graph(([0, 1], [1, 2]))
    g.ndata["x"] = torch.tensor([1.0, 2.0, 3.0])
    info = {}

    def message(edges):
        info["edges"] = [t.tolist() for t in edges.edges()]
        info["size"] = edges.batch_size()
        return {"m": edges.src["x"] + edges.dst["x"]}
    g.apply_edges(message)
    assert info["edges"] == [[0, 1], [1, 2], [0, 1]] and info["size"] == 2
    assert g.edata["m"].tolist() == [3.0, 5.0]


def test_send_and_recv_pull_push():
    g = dgl.graph(([0, 1, 2, 3], [1, 2, 3, 0]))
    g.ndata["x"] = torch.tensor([1.0, 2.0, 3.0, 4.0])
    g.ndata["y"] = torch.full((4,), -1.0)
    g.send_and_recv(torch.tensor([0, 2]), fn.copy_u("x", "m"), fn.sum("m", "y"))
    assert g.ndata["y"].tolist() == [-1.0, 1.0, -1.0, 3.0]
    g.send_and_recv((torch.tensor([3]), torch.tensor([0])), fn.copy_u("x", "m"), fn.sum("m", "z"))
    assert g.ndata["z"].tolist() == [4.0, 0.0, 0.0, 0.0]
    g.pull(torch.tensor([2]), fn.copy_u("x", "m"), fn.sum("m", "y"))
    assert g.ndata["y"].tolist() == [-1.0, 1.0, 2.0, 3.0]
    g.push(torch.tensor([3]), fn.copy_u("x", "m"), fn.max("m", "y"), lambda n: {"y": n.data["y"] * 10})
    assert g.ndata["y"].tolist() == [40.0, 1.0, 2.0, 3.0]
    g.send_and_recv([1], lambda e: {"m": e.src["x"]}, lambda n: {"w": n.mailbox["m"].sum(1)})
    assert g.ndata["w"].tolist() == [0.0, 0.0, 2.0, 0.0]


def test_apply_nodes_and_filters(idtype):
    g = _test_graph(idtype)
    g.ndata["x"] = torch.arange(8.0)
    g.apply_nodes(lambda n: {"x2": n.data["x"] * 2})
    assert g.ndata["x2"].tolist() == [0, 2, 4, 6, 8, 10, 12, 14]
    g.apply_nodes(lambda n: {"x2": n.data["x"] * 0}, v=torch.tensor([1, 2]))
    assert g.ndata["x2"].tolist() == [0, 0, 0, 6, 8, 10, 12, 14]
    assert g.filter_nodes(lambda n: n.data["x"] > 5).tolist() == [6, 7]
    assert g.filter_nodes(lambda n: n.data["x"] > 1, torch.tensor([0, 3])).tolist() == [3]
    big = g.filter_edges(lambda e: e.src["x"] > e.dst["x"])
    src, dst = g.edges()
    assert big.tolist() == [i for i in range(g.num_edges()) if src[i] > dst[i]]
    assert big.dtype == idtype
    with pytest.raises(DGLError, match="bool tensor"):
        g.filter_nodes(lambda n: n.data["x"])


def test_zero_in_degree_gets_zero_for_every_reducer_fp16():
    g = dgl.graph(([0, 1], [1, 1]), num_nodes=3)
    g.ndata["x"] = torch.tensor([[-5.0], [-7.0], [9.0]], dtype=torch.float16)
    for r in REDUCERS:
        g.update_all(fn.copy_u("x", "m"), getattr(fn, r)("m", "y"))
        assert g.ndata["y"][0].item() == 0.0 and g.ndata["y"][2].item() == 0.0
    g.update_all(fn.copy_u("x", "m"), fn.max("m", "y"))
    assert g.ndata["y"][1].item() == -5.0


def test_fp16_sum_does_not_saturate_at_2048():
    n_in = 60000
    g = dgl.graph((torch.arange(1, n_in + 1), torch.zeros(n_in, dtype=torch.int64)))
    g.ndata["h"] = torch.ones(n_in + 1, 1, dtype=torch.float16)
    g.update_all(fn.copy_u("h", "m"), fn.sum("m", "s"))
    assert g.ndata["s"].dtype == torch.float16 and g.ndata["s"][0].item() == 60000.0


def test_fp16_mean_of_100k_ones_is_one():
    n_in = 100000
    g = dgl.graph((torch.arange(1, n_in + 1), torch.zeros(n_in, dtype=torch.int64)))
    g.ndata["h"] = torch.ones(n_in + 1, 2, dtype=torch.float16)
    g.update_all(fn.copy_u("h", "m"), fn.mean("m", "s"))
    assert g.ndata["s"][0].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_dot_within_two_ulp(dtype):
    torch.manual_seed(0)
    g = dgl.graph(([0, 1, 2], [1, 2, 0]))
    x = torch.randn(3, 1024).to(dtype)
    g.ndata["x"] = x
    g.apply_edges(fn.u_dot_v("x", "x", "d"))
    exact = (x.float()[[0, 1, 2]] * x.float()[[1, 2, 0]]).sum(-1, keepdim=True)
    rounded = exact.to(dtype)
    got = g.edata["d"]
    ulp = torch.finfo(dtype).eps * rounded.float().abs().clamp(min=torch.finfo(dtype).tiny)
    assert bool(((got.float() - rounded.float()).abs() <= 2 * ulp).all())


def test_autocast_linear_output_meets_fp32_edge_weight():
    g = dgl.rand_graph(20, 60)
    lin = torch.nn.Linear(8, 4)
    x = torch.randn(20, 8)
    g.edata["w"] = torch.rand(60, 1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = lin(x)
        assert h.dtype == torch.bfloat16
        g.ndata["h"] = h
        g.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "out"))
        out = g.ndata["out"]
    assert out.dtype == torch.bfloat16
    ref = torch.zeros(20, 4, dtype=torch.float64).index_add(
        0, g.edges()[1], h.double()[g.edges()[0]] * g.edata["w"].double())
    assert_close(out, ref, torch.bfloat16)
    out.float().sum().backward()
    assert lin.weight.grad is not None and torch.isfinite(lin.weight.grad).all()


# ---------------------------------------------------------------------------------------------
# bad input: clear errors, graph unchanged
# ---------------------------------------------------------------------------------------------
def _snapshot(g):
    return ({k: v.clone() for k, v in g.ndata.items()}, {k: v.clone() for k, v in g.edata.items()},
            [t.clone() for t in g.edges()])


def _same(g, snap):
    nd, ed, edges = snap
    assert set(g.ndata) == set(nd) and set(g.edata) == set(ed)
    assert all(torch.equal(g.ndata[k], v) for k, v in nd.items())
    assert all(torch.equal(g.edata[k], v) for k, v in ed.items())
    assert all(torch.equal(a, b) for a, b in zip(g.edges(), edges))


@pytest.mark.parametrize("case", ["missing_field", "int_features", "bad_broadcast", "wrong_msg_name"])
def test_bad_message_passing_input(case):
    g = _test_graph(torch.int64)
    g.ndata["x"] = torch.rand(8, 3)
    g.ndata["i"] = torch.arange(8).unsqueeze(1)
    g.edata["w"] = torch.rand(15, 2)
    snap = _snapshot(g)
    with pytest.raises(DGLError) as err:
        if case == "missing_field":
            g.update_all(fn.copy_u("nope", "m"), fn.sum("m", "y"))
        elif case == "int_features":
            g.update_all(fn.copy_u("i", "m"), fn.sum("m", "y"))
        elif case == "bad_broadcast":
            g.update_all(fn.u_mul_e("x", "w", "m"), fn.sum("m", "y"))
        else:
            g.update_all(fn.copy_u("x", "m"), fn.sum("other", "y"))
    # the message names what was wrong with the actual values
    expected_words = {"missing_field": ["'nope'"], "int_features": ["torch.int64"],
                      "bad_broadcast": ["(3,)", "(2,)"], "wrong_msg_name": ["'other'", "'m'"]}[case]
    assert all(w in str(err.value) for w in expected_words), str(err.value)
    _same(g, snap)
