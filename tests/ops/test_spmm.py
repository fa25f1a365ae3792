"""gSpMM against a dense float64 formula, the reference backend, gradcheck and invariances."""

import math

import pytest
import torch
from graph_cases import CASES, NONEMPTY
from tolerances import assert_close

import mpgraph.ops as ops
import mpgraph.ops.spmm as spmm_module
from mpgraph._index import Index
from mpgraph.ops._dispatch import backends, record_backends, use_backend

BINARY = ("add", "sub", "mul", "div")
REDUCERS = ("sum", "mean", "max", "min")
# (lhs feature shape, rhs feature shape): equal, head broadcast, (1,) vs (D,), (D,) vs (1,),
# scalar edge weights (E,), rank mismatch, both scalar
BCAST_SHAPES = [((3,), (3,)), ((2, 3), (2, 1)), ((1,), (3,)), ((3,), (1,)), ((3,), ()), ((2, 3), (3,)), ((), ())]
COPY_SHAPES = [(3,), (2, 3), ()]
# every registered fast backend is compared with the reference ('torch' always; 'cpu'/'triton' when present)
FAST_BACKENDS = [b for b in backends("spmm") if b != "reference"]


def make_index(case, idtype):
    src, dst, n_src, n_dst = CASES[case]
    return Index.from_coo(src.to(idtype), dst.to(idtype), n_src, n_dst)


def rand(shape, dtype, gen, positive=False):
    """Random float64 values already rounded to ``dtype`` (so the oracle sees the same inputs)."""
    x = torch.rand(shape, generator=gen, dtype=torch.float64)
    x = x + 0.5 if positive else 2 * x - 1
    return x.to(dtype).to(torch.float64)


def pad_features(a, b):
    """DGL rule: pad the lower-rank operand's feature dims with leading 1s after the row dim."""
    nd = max(a.dim(), b.dim())
    a = a.reshape(a.shape[:1] + (1,) * (nd - a.dim()) + a.shape[1:])
    b = b.reshape(b.shape[:1] + (1,) * (nd - b.dim()) + b.shape[1:])
    return a, b


def dense_spmm(case, op, reduce, lhs, rhs):
    """Independent float64 formula: one-hot incidence matrices and dense reductions."""
    src, dst, n_src, n_dst = CASES[case]
    E = src.numel()
    S = torch.zeros(E, n_src, dtype=torch.float64)                   # edge <- source one-hot
    S[torch.arange(E), src] = 1.0
    A = torch.zeros(n_dst, E, dtype=torch.float64)                   # destination <- edge
    A[dst, torch.arange(E)] = 1.0
    if op != "copy_rhs":
        lhs_e = (S @ lhs.reshape(n_src, -1)).reshape((E,) + lhs.shape[1:]) if n_src else lhs[:0]
    if op == "copy_lhs":
        msg = lhs_e
    elif op == "copy_rhs":
        msg = rhs
    else:
        a, b = pad_features(lhs_e, rhs)
        msg = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[op]
    feat = msg.shape[1:]
    flat = msg.reshape(E, math.prod(feat))
    deg = A.sum(1)
    if reduce == "sum":
        out = A @ flat
    elif reduce == "mean":
        out = (A @ flat) / deg.clamp(min=1).unsqueeze(1)
    elif E == 0:
        out = torch.zeros(n_dst, flat.shape[1], dtype=torch.float64)
    else:
        fill = float("-inf") if reduce == "max" else float("inf")
        masked = torch.where(A.bool().unsqueeze(2), flat.unsqueeze(0), fill)      # (N_dst, E, F)
        out = masked.amax(1) if reduce == "max" else masked.amin(1)
        out = torch.where((deg == 0).unsqueeze(1), 0.0, out)
    return out.reshape((n_dst,) + feat)


def operands(case, op, lshape, rshape, dtype, seed=0):
    src, dst, n_src, n_dst = CASES[case]
    gen = torch.Generator().manual_seed(seed)
    lhs = None if op == "copy_rhs" else rand((n_src,) + lshape, dtype, gen)
    rhs = None if op == "copy_lhs" else rand((src.numel(),) + rshape, dtype, gen, positive=(op == "div"))
    return lhs, rhs


def combos(with_shapes=BCAST_SHAPES, copy_shapes=COPY_SHAPES):
    for reduce in REDUCERS:
        for shape in copy_shapes:
            yield "copy_lhs", reduce, shape, None
            yield "copy_rhs", reduce, None, shape
        for op in BINARY:
            for lshape, rshape in with_shapes:
                yield op, reduce, lshape, rshape


#: the binary ops each float dtype's forward sweep takes: two of four, so each op meets a full and a half
#: precision (add and mul: float64 and float16; sub and div: float32 and bfloat16) with every reducer and
#: broadcast. The dtype changes a kernel's loads, stores and accumulator, the op only its arithmetic on the
#: accumulator, and each (op, reducer, layout, dtype) is a kernel of its own to compile (about 4 s each, most
#: of a cold test run): crossing all four ops with all four dtypes compiled 288 kernels in this test alone.
#: ``test_backward_matches_dense`` still takes every op in every dtype.
FORWARD_OPS = {torch.float64: ("add", "mul"), torch.float16: ("add", "mul"),
               torch.float32: ("sub", "div"), torch.bfloat16: ("sub", "div")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_forward_matches_dense(case, float_dtype, idtype):
    index = make_index(case, idtype)
    # int32 ids change only how the index is built: a smaller op sweep is enough there
    shapes = BCAST_SHAPES if idtype == torch.int64 else BCAST_SHAPES[1:3]
    for op, reduce, lshape, rshape in combos(shapes):
        if op in BINARY and op not in FORWARD_OPS[float_dtype]:
            continue
        lhs, rhs = operands(case, op, lshape, rshape, float_dtype)
        expected = dense_spmm(case, op, reduce, lhs, rhs)
        out = ops.gspmm(index, op, reduce,
                        None if lhs is None else lhs.to(float_dtype), None if rhs is None else rhs.to(float_dtype))
        assert out.dtype == float_dtype, (op, reduce)
        assert out.shape == expected.shape, (op, reduce, lshape, rshape)
        assert_close(out, expected, float_dtype)


GRAD_SHAPES = [((3,), (3,)), ((2, 3), (2, 1)), ((3,), ()), ((1,), (3,))]


@pytest.mark.parametrize("case", NONEMPTY)
def test_backward_matches_dense(case, float_dtype):
    index = make_index(case, torch.int64)
    half = float_dtype in (torch.float16, torch.bfloat16)
    for op, reduce, lshape, rshape in combos(GRAD_SHAPES, [(3,), ()]):
        if half and reduce in ("max", "min"):
            continue  # ties between rounded values make the winner ambiguous; covered in f32/f64
        lhs, rhs = operands(case, op, lshape, rshape, float_dtype, seed=1)
        leaves64 = [None if t is None else t.clone().requires_grad_() for t in (lhs, rhs)]
        leaves = [None if t is None else t.to(float_dtype).requires_grad_() for t in (lhs, rhs)]
        out = ops.gspmm(index, op, reduce, *leaves)
        grad = rand(out.shape, float_dtype, torch.Generator().manual_seed(2))
        out.backward(grad.to(float_dtype))
        (dense_spmm(case, op, reduce, *leaves64) * grad).sum().backward()
        for mine, ref in zip(leaves, leaves64):
            if mine is not None:
                assert mine.grad.dtype == float_dtype
                assert_close(mine.grad, ref.grad, float_dtype)


@pytest.mark.parametrize("case", ["random", "power_law", "zero_in_degree", "multi_edge"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_fast_path_matches_reference(backend, case, dtype):
    index = make_index(case, torch.int64)
    compared = 0
    for op, reduce, lshape, rshape in combos(BCAST_SHAPES[:6]):
        lhs, rhs = operands(case, op, lshape, rshape, dtype, seed=3)
        results = {}
        for name in (backend, "reference"):
            leaves = [None if t is None else t.to(dtype).requires_grad_() for t in (lhs, rhs)]
            with use_backend(name), record_backends() as seen:
                out = ops.gspmm(index, op, reduce, *leaves)
                out.backward(torch.ones_like(out))
            results[name] = [out] + [t.grad for t in leaves if t is not None]
            if seen[0] != name:
                break                                  # the backend does not take this call here
        else:
            compared += 1
            extreme = reduce in ("max", "min")
            # winners among tied (rounded) messages may differ between backends except 'torch'
            n = len(results["reference"]) if (backend == "torch" or dtype == torch.float32 or not extreme) else 1
            for i, (fast, ref) in enumerate(zip(results[backend][:n], results["reference"][:n])):
                # an edge operand that broadcasts gets, per edge, the sum of the gradients of the output
                # elements it fed: summed in the backend's order
                block_sum = i == 2 and rhs is not None and rhs[0].numel() < out[0].numel()
                if extreme and ((i == 1 and op in ("mul", "div") and lhs is not None) or block_sum):
                    # the same winners; the node gradient of a product sums G * w over several winning
                    # edges per source, in the order the backend walks them (slot gathers: out-edges)
                    assert_close(fast, ref.double(), dtype)
                elif extreme:
                    torch.testing.assert_close(fast, ref, rtol=0, atol=0)   # exact, same winners
                else:
                    assert_close(fast, ref.double(), dtype)
    if not compared:
        pytest.skip(f"backend {backend!r} takes none of these calls on this machine")


# the backward kernels' edge-operand layouts: one value per edge (several widths), narrow heads (8 of 8 and 32 of 2:
# the max/min backward's folded and per-head sums, whose -s / w^2 is one vector) and wide heads, a block broadcast
# without the heads' specialisation, elementwise
ZERO_DIV_SHAPES = [((3,), (1,)), ((8,), ()), ((130,), (1,)), ((4, 8), (4, 1)), ((8, 8), (8, 1)), ((32, 2), (32, 1)),
                   ((2, 64), (2, 1)), ((3, 5), (3, 1)), ((2, 3), (1, 3)), ((8,), (8,))]


@pytest.mark.parametrize("lshape,rshape", ZERO_DIV_SHAPES, ids=[f"{a}-{b}" for a, b in ZERO_DIV_SHAPES])
@pytest.mark.parametrize("reduce", REDUCERS)
@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_u_div_e_zero_divisors_match_reference(backend, reduce, lshape, rshape):
    """u_div_e with zero (and negative zero) edge values, forward and backward: the fast path gives inf and NaN
    where the reference does and the same finite values. The CPU sum/mean backward used to raise
    ZeroDivisionError there, and its max/min backward gave NaN (-0 / 0) to a zero edge that won no output
    element, whose gradient is 0."""
    index = make_index("power_law", torch.int64)
    src, dst, n_src, _ = CASES["power_law"]
    gen = torch.Generator().manual_seed(11)
    lhs = torch.randn((n_src,) + lshape, generator=gen)
    rhs = torch.rand((src.numel(),) + rshape, generator=gen) + 0.5
    # one zero edge (+0 or -0) per destination with other in-edges: x / 0 is +-inf, and two such edges would
    # tie for max/min, where either winner is right and the backends may pick different ones. (A lone edge whose
    # message is max's -inf, or min's +inf, wins nothing in the CPU kernels: NaN and the identity never win.)
    order = torch.sort(dst, stable=True).indices
    first = order[torch.cat([torch.ones(1, dtype=torch.bool), dst[order][1:] != dst[order][:-1]])]
    first = first[torch.bincount(dst)[dst[first]] > 1]
    flat = rhs.view(src.numel(), -1)
    flat[first] = torch.where(dst[first] % 2 == 0, 0.0, -0.0).unsqueeze(1).expand(-1, flat.shape[1])
    G = torch.randn(index.num_dst, *torch.broadcast_shapes(lshape, rshape), generator=gen)
    results = {}
    for name in (backend, "reference"):
        x, w = lhs.clone().requires_grad_(), rhs.clone().requires_grad_()
        with use_backend(name), record_backends() as seen:
            out = ops.gspmm(index, "div", reduce, x, w)
            out.backward(G)
        results[name] = (out.detach(), x.grad, w.grad)
        if seen[0] != name:
            pytest.skip(f"backend {backend!r} does not take this call here")
    zero_edge = torch.zeros(rhs.shape, dtype=torch.bool)
    zero_edge.view(src.numel(), -1)[first] = True
    for what, fast, ref in zip(("out", "grad u", "grad e"), results[backend], results["reference"]):
        if what == "grad e" and reduce in ("max", "min") and rhs[0].numel() < lhs[0].numel():
            # a zero edge's block sum over the columns it won: -sum(G x) / 0, the limit as w -> 0 (+-inf), where
            # the reference sums the columns' -G x / 0 (NaN when their signs differ)
            ref = torch.where(zero_edge & ref.isnan() & fast.isinf(), fast, ref)
        assert torch.equal(fast.isnan(), ref.isnan()), (what, int(fast.isnan().sum()), int(ref.isnan().sum()))
        assert torch.equal(fast.isinf(), ref.isinf()) and torch.equal(fast[fast.isinf()], ref[ref.isinf()]), what
        finite = fast.isfinite()
        assert_close(fast[finite], ref[finite].double(), torch.float32)


@pytest.mark.parametrize("op", ["copy_lhs", "copy_rhs"] + list(BINARY))
@pytest.mark.parametrize("reduce", REDUCERS)
def test_gradcheck(op, reduce):
    gen = torch.Generator().manual_seed(4)
    for case, (lshape, rshape) in (("zero_in_degree", ((2,), (2,))), ("bipartite", ((2, 2), (2, 1)))):
        index = make_index(case, torch.int32)
        lhs, rhs = operands(case, op, lshape, rshape, torch.float64, seed=int(torch.randint(9, (1,), generator=gen)))
        inputs = [t.requires_grad_() for t in (lhs, rhs) if t is not None]

        def f(*xs, op=op, index=index):
            it = iter(xs)
            a = next(it) if op != "copy_rhs" else None
            b = next(it) if op != "copy_lhs" else None
            return ops.gspmm(index, op, reduce, a, b)

        assert torch.autograd.gradcheck(f, tuple(inputs))


@pytest.mark.parametrize("case", ["random", "multi_edge", "self_loops"])
def test_edge_order_invariance(case):
    src, dst, n_src, n_dst = CASES[case]
    perm = torch.randperm(src.numel(), generator=torch.Generator().manual_seed(5))
    index = Index.from_coo(src, dst, n_src, n_dst)
    permuted = Index.from_coo(src[perm], dst[perm], n_src, n_dst)
    for op, reduce, lshape, rshape in combos([((2, 3), (2, 1)), ((3,), ())]):
        lhs, rhs = operands(case, op, lshape, rshape, torch.float64, seed=6)
        out = ops.gspmm(index, op, reduce, lhs, rhs)
        out_p = ops.gspmm(permuted, op, reduce, lhs, None if rhs is None else rhs[perm])
        torch.testing.assert_close(out, out_p, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_compressed_constructors_agree(fmt):
    src, dst, n_src, n_dst = CASES["power_law"]
    coo = Index.from_coo(src, dst, n_src, n_dst)
    indptr, indices, eids = coo.csr() if fmt == "csr" else coo.csc()
    build = Index.from_csr if fmt == "csr" else Index.from_csc
    other = build(indptr, indices, eids, n_src, n_dst)
    lhs, rhs = operands("power_law", "mul", (4,), (1,), torch.float32)
    for reduce in REDUCERS:
        torch.testing.assert_close(ops.gspmm(coo, "mul", reduce, lhs.float(), rhs.float()),
                                   ops.gspmm(other, "mul", reduce, lhs.float(), rhs.float()))


def test_named_variants_are_gspmm():
    index = make_index("random", torch.int64)
    lhs, rhs = operands("random", "mul", (3,), (1,), torch.float32)
    lhs, rhs = lhs.float(), rhs.float().abs() + 0.5
    for reduce in REDUCERS:
        torch.testing.assert_close(getattr(ops, f"copy_u_{reduce}")(index, lhs),
                                   ops.gspmm(index, "copy_lhs", reduce, lhs, None))
        torch.testing.assert_close(getattr(ops, f"copy_e_{reduce}")(index, rhs),
                                   ops.gspmm(index, "copy_rhs", reduce, None, rhs))
        for op in BINARY:
            torch.testing.assert_close(getattr(ops, f"u_{op}_e_{reduce}")(index, lhs, rhs),
                                       ops.gspmm(index, op, reduce, lhs, rhs))


def test_max_gradient_goes_to_winning_edge():
    # node 1 receives from nodes 0 (value 1) and 2 (value 5) and node 2 from node 0
    index = Index.from_coo(torch.tensor([0, 2, 0]), torch.tensor([1, 1, 2]), 3, 3)
    x = torch.tensor([[1.0], [7.0], [5.0]], requires_grad=True)
    w = torch.tensor([[2.0], [1.0], [3.0]], requires_grad=True)
    out = ops.u_mul_e_max(index, x, w)                 # msgs: 2, 5, 3 -> node1: 5 (edge 1), node2: 3 (edge 2)
    torch.testing.assert_close(out, torch.tensor([[0.0], [5.0], [3.0]]))
    out.backward(torch.tensor([[1.0], [10.0], [100.0]]))
    torch.testing.assert_close(x.grad, torch.tensor([[300.0], [0.0], [10.0]]))
    torch.testing.assert_close(w.grad, torch.tensor([[0.0], [50.0], [100.0]]))


def test_inputs_not_modified():
    index = make_index("power_law", torch.int64)
    lhs, rhs = operands("power_law", "div", (2, 3), (2, 1), torch.float32)
    lhs, rhs = lhs.float(), rhs.float()
    copies = lhs.clone(), rhs.clone()
    for reduce in REDUCERS:
        ops.gspmm(index, "div", reduce, lhs, rhs)
    torch.testing.assert_close(lhs, copies[0], rtol=0, atol=0)
    torch.testing.assert_close(rhs, copies[1], rtol=0, atol=0)


def test_non_contiguous_operands():
    index = make_index("random", torch.int64)
    lhs = torch.randn(3, 20, dtype=torch.float64).t()            # (20, 3) non-contiguous
    rhs = torch.randn(80, 6, dtype=torch.float64)[:, ::2]        # (80, 3) strided
    for reduce in REDUCERS:
        torch.testing.assert_close(ops.gspmm(index, "add", reduce, lhs, rhs),
                                   dense_spmm("random", "add", reduce, lhs, rhs))


def test_double_backward():
    # the backward is written with differentiable ops, so second derivatives work too
    index = make_index("zero_in_degree", torch.int64)
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(5, 2, generator=gen, dtype=torch.float64).requires_grad_()
    w = (torch.rand(5, 1, generator=gen, dtype=torch.float64) + 0.5).requires_grad_()
    for op in BINARY:
        for reduce in ("sum", "mean", "max"):
            assert torch.autograd.gradgradcheck(lambda a, b, o=op, r=reduce: ops.gspmm(index, o, r, a, b), (x, w))


def test_backward_reuses_cached_reverse():
    from mpgraph.ops._checks import reversed_index
    index = make_index("random", torch.int32)
    x = torch.randn(20, 3, requires_grad=True)
    ops.copy_u_sum(index, x).sum().backward()
    rev = reversed_index(index)
    indptr_csr = index.csr()[0]
    assert rev.csc()[0] is indptr_csr and rev.csr()[0] is index.csc()[0]     # shared, not re-sorted
    ops.u_mul_e_mean(index, x, torch.rand(80, 1)).sum().backward()
    assert reversed_index(index) is rev and index.csr()[0] is indptr_csr


#: (node, edge) feature shapes whose max/min record slot winners: no broadcast, one weight per edge (both as
#: (1,) and as ()), GAT's heads (the edge operand's gradient then sums each block of columns)
SLOT_SHAPES = {"same": ((3,), (3,)), "scalar": ((3,), (1,)), "flat": ((3,), ()), "heads": ((2, 3), (2, 1))}


_SLOT_OPS = ["copy_lhs", "copy_rhs", "add", "sub", "mul", "div"]
_SLOT_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f64": torch.float64}
#: (op, reduce, dtype, shapes): each op, dtype and shapes with one of max and min, alternating, so each op
#: meets both over the dtypes and shapes. The reducer is one compare in the forward kernel and nothing in the
#: backward's gathers, yet a kernel of its own to compile (about 7 s each here); a copy has one operand and
#: only the "same" shapes.
SLOT_CASES = [(op, reduce, dname, shapes)
              for i, op in enumerate(_SLOT_OPS) for j, dname in enumerate(_SLOT_DTYPES)
              for k, shapes in enumerate(SLOT_SHAPES) for reduce in ("max", "min")
              if (i + j + k + (reduce == "min")) % 2 == 0 and (shapes == "same" or not op.startswith("copy"))]


@pytest.mark.parametrize("op, reduce, dtype, shapes", SLOT_CASES, ids=["-".join(c) for c in SLOT_CASES])
def test_extremes_backward_from_slot_winners(monkeypatch, op, reduce, dtype, shapes):
    """On the CPU backend max/min of copies, sums, differences and products record 1-byte slot winners and
    the backward gathers by them (no scatter), also when the edge operand is a block broadcast (products with
    a block-broadcast edge operand or none: both gradients from one gather, ``winners_product_backward``): the gradients
    equal the reference backend's, parallel edges included; double backward still works (the slots become
    ids for the differentiable scatter)."""
    if "cpu" not in backends("gather_winners"):
        pytest.skip("the Numba CPU backend is not available")
    dtype = _SLOT_DTYPES[dtype]
    xshape, wshape = SLOT_SHAPES[shapes]
    calls = []
    for name in ("gather_winners", "edge_winners", "winners_product_backward"):
        real = getattr(ops._dispatch, name)
        monkeypatch.setattr(ops._dispatch, name,
                            lambda *a, name=name, real=real, **k: calls.append((name, a[2].dtype)) or real(*a, **k))
    uses = [op != "copy_rhs", op != "copy_lhs"]
    slot_ops = spmm_module.SLOT_OPS
    for case in ("multi_edge", "zero_in_degree", "power_law"):
        index = make_index(case, torch.int32)
        gen = torch.Generator().manual_seed(5)
        x0 = rand((index.num_src,) + xshape, dtype, gen).to(dtype)
        w0 = rand((index.num_edges,) + wshape, dtype, gen, positive=op == "div").to(dtype)
        g = rand((index.num_dst,) + xshape, dtype, gen).to(dtype)
        grads = {}
        for name, asked in (("cpu", slot_ops), ("cpu ids", ()), ("reference", ())):
            leaves = [t.clone().requires_grad_() if use else None for t, use in zip((x0, w0), uses)]
            monkeypatch.setattr(spmm_module, "SLOT_OPS", asked)       # () makes the op ask for ids
            with use_backend(name.split()[0], strict=True):
                ops.gspmm(index, op, reduce, *leaves).backward(g)
            grads[name] = [t.grad for t in leaves if t is not None]
        monkeypatch.setattr(spmm_module, "SLOT_OPS", slot_ops)
        # the slots' width came from the widest row, computed once per graph and kept with it
        assert index.cached("cpu.max_in_degree", lambda: -1) == int(index.in_degrees().max())
        for mine, ids, ref in zip(grads["cpu"], grads["cpu ids"], grads["reference"]):
            assert mine.shape == ids.shape == ref.shape
            if dtype == torch.bfloat16 and (op in ("mul", "div") or shapes != "same"):
                # the same winners as the CPU's id path; products, and a block's columns, are summed in
                # another order
                assert_close(mine, ids.double(), dtype)
            elif dtype == torch.bfloat16:
                # the same winners as the CPU's id path; the reference may break ties among rounded messages
                # differently, so it is compared in float32 and float64 only
                torch.testing.assert_close(mine, ids, rtol=0, atol=0)
            else:
                assert_close(mine, ref.double(), dtype)
                assert_close(ids, ref.double(), dtype)
    expected = [("gather_winners", torch.uint8)] * uses[0] + [("edge_winners", torch.uint8)] * uses[1]
    if op in ("mul", "div"):    # products (one weight per edge, heads, none broadcast): both in one pass
        expected = [("winners_product_backward", torch.uint8)]
    assert calls == expected * 3
    gen = torch.Generator().manual_seed(6)
    x = rand((5,) + xshape, torch.float64, gen).requires_grad_()
    w = rand((5,) + wshape, torch.float64, gen, positive=op == "div").requires_grad_()
    index = make_index("zero_in_degree", torch.int64)
    with use_backend("cpu", strict=True):
        assert torch.autograd.gradgradcheck(lambda a, b: ops.gspmm(index, op, reduce, a if uses[0] else None,
                                                                   b if uses[1] else None), (x, w))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["f32", "bf16", "f16"])
def test_product_extremes_backward_reads_the_kept_edge_operand(monkeypatch, dtype):
    """On the CPU backend ``u_mul_e``/``u_div_e`` max/min without a broadcast keep the edge operand at the winners
    in the forward (returned as ``arg_e``, the dispatch's ``rhs_won``), the op layer hands it to
    ``winners_product_backward`` (or to ``gather_winners`` when only the node operand needs a gradient), and the
    gradients are those of the routes that read the edge operand, bit for bit (float32 takes the picked terms
    from it, 16-bit the gather), hub rows included."""
    if "cpu" not in backends("winners_product_backward"):
        pytest.skip("the Numba CPU backend is not available")
    from mpgraph.ops._broadcast import infer_bcast
    from mpgraph.ops._cpu import _backend

    gen = torch.Generator().manual_seed(3)
    N = 40
    src = torch.randint(0, N, (1300,), generator=gen)
    dst = torch.cat([torch.full((300,), 4), torch.randint(0, N, (1000,), generator=gen)])   # a hub row: split slots
    index = Index.from_coo(src, dst, N, N)
    kept = []
    real = ops._dispatch.winners_product_backward
    monkeypatch.setattr(ops._dispatch, "winners_product_backward",
                        lambda *a, **k: kept.append(k.get("rhs_won")) or real(*a, **k))
    for op, reduce in (("mul", "max"), ("div", "min")):
        x = rand((N, 16), dtype, gen).to(dtype)
        w = rand((1300, 16), dtype, gen, positive=True).to(dtype)
        bcast = infer_bcast(op, x.shape[1:], w.shape[1:], x.device)
        _, slots, won = _backend.spmm(index, op, reduce, x, w, bcast, dtype, need_arg="slots")
        assert slots.dtype == torch.uint8 and slots.shape == (N + 2, 16) and won.shape == (N, 16)
        assert won.dtype == dtype
        g = rand((N, 16), dtype, gen).to(dtype)
        via_rhs = _backend.winners_product_backward(index, g, slots, op, x, w, dtype, dtype)
        via_won = _backend.winners_product_backward(index, g, slots, op, x, w, dtype, dtype, rhs_won=won)
        assert torch.equal(via_won[0], via_rhs[0]) and torch.equal(via_won[1], via_rhs[1])
        leaves = [x.clone().requires_grad_(), w.clone().requires_grad_()]
        with use_backend("cpu", strict=True):
            ops.gspmm(index, op, reduce, *leaves).backward(g)
        assert torch.equal(kept[-1], won)
        assert torch.equal(leaves[0].grad, via_rhs[0]) and torch.equal(leaves[1].grad, via_rhs[1])
        # only the node operand needs a gradient: its gather reads the kept values too, the same bits
        alone = _backend.gather_winners(index, g, slots, dtype, op, w)
        assert torch.equal(_backend.gather_winners(index, g, slots, dtype, op, w, rhs_won=won), alone)
        node = x.clone().requires_grad_()
        with use_backend("cpu", strict=True):
            ops.gspmm(index, op, reduce, node, w).backward(g)
        assert torch.equal(node.grad, alone) and torch.equal(alone, via_rhs[0])


#: (op, reduce, dtype, shapes) on a graph with hub rows (split slots): each op with one reducer and dtype, in turn
HUB_CASES = [("copy_lhs", "max", "bf16", "same"), ("copy_rhs", "min", "f32", "same"), ("add", "max", "f64", "same"),
             ("sub", "min", "bf16", "same"), ("mul", "max", "f32", "same"), ("mul", "min", "bf16", "heads"),
             ("div", "max", "f64", "scalar")]


@pytest.mark.parametrize("op, reduce, dtype, shapes", HUB_CASES, ids=["-".join(c) for c in HUB_CASES])
def test_extremes_backward_from_split_slot_winners(monkeypatch, op, reduce, dtype, shapes):
    """Destinations with more than 255 in-edges (two of them, 300 and 700, beside one of exactly 255): the CPU
    forward records split slots (uint8 with a row of high bytes per hub row, not int16) and the backward gathers
    by them: the gradients equal the CPU's id path and the reference's (``test_cpu_kernels`` checks the split
    passes against int16 slots bit for bit)."""
    if "cpu" not in backends("gather_winners"):
        pytest.skip("the Numba CPU backend is not available")
    dtype = _SLOT_DTYPES[dtype]
    xshape, wshape = SLOT_SHAPES[shapes]
    gen = torch.Generator().manual_seed(11)
    N = 30
    src = torch.randint(0, N, (1255 + 200,), generator=gen)
    rest = torch.randint(5, N, (200,), generator=gen)
    rest[rest == 17] = 18                                   # the hubs get no more edges: node 2 stays at 255
    dst = torch.cat([torch.full((300,), 4), torch.full((700,), 17), torch.full((255,), 2), rest])
    perm = torch.randperm(src.numel(), generator=gen)
    index = Index.from_coo(src[perm], dst[perm], N, N)
    calls = []
    for name in ("gather_winners", "edge_winners", "winners_product_backward"):
        real = getattr(ops._dispatch, name)
        monkeypatch.setattr(ops._dispatch, name, lambda *a, real=real, **k: calls.append(a[2].shape) or real(*a, **k))
    uses = [op != "copy_rhs", op != "copy_lhs"]
    x0 = rand((N,) + xshape, dtype, gen).to(dtype)
    w0 = rand((index.num_edges,) + wshape, dtype, gen, positive=op == "div").to(dtype)
    g = rand((N,) + xshape, dtype, gen).to(dtype)
    slot_ops = spmm_module.SLOT_OPS
    grads = {}
    for name, asked in (("cpu", slot_ops), ("cpu ids", ()), ("reference", ())):
        leaves = [t.clone().requires_grad_() if use else None for t, use in zip((x0, w0), uses)]
        monkeypatch.setattr(spmm_module, "SLOT_OPS", asked)
        with use_backend(name.split()[0], strict=True):
            ops.gspmm(index, op, reduce, *leaves).backward(g)
        grads[name] = [t.grad for t in leaves if t is not None]
    monkeypatch.setattr(spmm_module, "SLOT_OPS", slot_ops)
    F = int(torch.tensor(xshape).prod())
    assert calls and all(shape == (N + 4, F) for shape in calls)       # two rows of bytes for each hub row
    for mine, ids, ref in zip(grads["cpu"], grads["cpu ids"], grads["reference"]):
        if dtype == torch.bfloat16 and op not in ("mul", "div") and shapes == "same":
            torch.testing.assert_close(mine, ids, rtol=0, atol=0)     # the sums of a few terms, rounded once
        else:                                                         # summed in another order
            assert_close(mine, ids.double(), dtype)
        if dtype != torch.bfloat16:                                   # ties among rounded messages aside
            assert_close(mine, ref.double(), dtype)
    if dtype == torch.float64:      # double backward: the split slots become ids for the differentiable scatter
        leaves = [t.clone().requires_grad_() if use else None for t, use in zip((x0, w0), uses)]
        given = [t for t in leaves if t is not None]
        gg = g.clone().requires_grad_()
        with use_backend("cpu", strict=True):
            firsts = torch.autograd.grad(ops.gspmm(index, op, reduce, *leaves), given, gg, create_graph=True)
            (second,) = torch.autograd.grad(sum((f * f).sum() for f in firsts), gg)
        for first, mine in zip(firsts, grads["cpu"]):
            assert first.requires_grad
            assert_close(first.detach(), mine, dtype)      # summed by ids, in another order
        assert second.shape == g.shape and torch.isfinite(second).all() and second.abs().sum() > 0
