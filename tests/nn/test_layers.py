"""Every layer case: dense float64 formula, fp32/bf16/fp16, autocast, gradients, module protocol.

Precision tests compare a layer converted to ``dtype`` (weights and inputs
rounded to it) with the same rounded weights and inputs run in float64, at the
per-dtype model tolerance of tests/tolerances.py. Autocast tests compare with
the float64 run of the float32 layer (autocast rounds weights on the fly).
"""

import copy
import io
import pickle

import pytest
import torch
from nn_cases import CASE_IDS, CASES
from tolerances import MODEL_TOL, RECURRENT_GRAD_TOL, assert_close

F64 = torch.float64


def convert(obj, dtype):
    """Cast every floating-point tensor inside ``obj`` (tuples, lists, dicts) to ``dtype``."""
    if isinstance(obj, torch.Tensor):
        return obj.to(dtype) if obj.is_floating_point() else obj
    if isinstance(obj, tuple):
        return tuple(convert(o, dtype) for o in obj)
    if isinstance(obj, list):
        return [convert(o, dtype) for o in obj]
    if isinstance(obj, dict):
        return {k: convert(v, dtype) for k, v in obj.items()}
    return obj


def leaves(obj):
    """Floating-point tensors inside ``obj``, made leaves that require grad; returns (new obj, leaves)."""
    found = []

    def walk(o):
        if isinstance(o, torch.Tensor) and o.is_floating_point():
            t = o.detach().clone().requires_grad_(True)
            found.append(t)
            return t
        if isinstance(o, tuple):
            return tuple(walk(x) for x in o)
        if isinstance(o, list):
            return [walk(x) for x in o]
        return o

    return walk(obj), found


def assert_finite_grads(mod, inputs):
    for name, prm in mod.named_parameters():
        if prm.grad is not None:
            assert torch.isfinite(prm.grad).all(), name
    # some layers ignore an input (GraphConv reads only the shape of destination features)
    assert not inputs or any(t.grad is not None for t in inputs)
    for t in inputs:
        assert t.grad is None or torch.isfinite(t.grad).all()


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_matches_dense_formula_float64(case):
    mod = case.build().double().eval()
    g, args, kwargs = case.inputs()
    args, kwargs = convert(args, F64), convert(kwargs, F64)
    out = case.call(mod, g, args, kwargs)
    assert out.dtype == F64
    assert_close(out, case.reference(mod, g, args, kwargs), F64)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["f32", "bf16", "f16"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_precision_and_gradients(case, dtype):
    mod = case.build().to(dtype).eval()
    g, args, kwargs = case.inputs()
    args, kwargs = convert(args, dtype), convert(kwargs, dtype)
    expected = case.call(copy.deepcopy(mod).double(), g, convert(args, F64), convert(kwargs, F64))
    ref_mod = copy.deepcopy(mod).double()
    ref_args, ref_inputs = leaves(convert(args, F64))
    case.call(ref_mod, g, ref_args, convert(kwargs, F64)).square().mean().backward()
    args, inputs = leaves(args)
    out = case.call(mod, g, args, kwargs)
    assert out.dtype == dtype
    assert_close(out, expected, dtype, model=True)
    out.float().square().mean().backward()
    assert_finite_grads(mod, inputs)
    # gradients match the float64 ones (norm-wise per tensor); tensors whose exact gradient
    # vanishes (a softmax is invariant to a shared shift) are left out
    rtol = (RECURRENT_GRAD_TOL if case.recurrent_grad else MODEL_TOL)[dtype][0]
    pairs = [(t.grad, r.grad) for t, r in zip(inputs, ref_inputs)]
    pairs += [(a.grad, b.grad) for a, b in zip(mod.parameters(), ref_mod.parameters())]
    pairs = [(got, ref) for got, ref in pairs if ref is not None]
    scale = max((ref.abs().max().item() for _, ref in pairs), default=0.0)
    for got, ref in pairs:
        if ref.abs().max() <= 1e-6 * scale:
            continue
        err = ((got.double() - ref).norm() / ref.norm()).item()
        assert err <= rtol, err


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_autocast_bfloat16(case):
    mod = case.build().eval()
    g, args, kwargs = case.inputs()
    expected = case.call(copy.deepcopy(mod).double(), g, convert(args, F64), convert(kwargs, F64))
    args, inputs = leaves(args)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = case.call(mod, g, args, kwargs)
    assert out.dtype == (torch.bfloat16 if case.autocast_out == "amp" else torch.float32)
    assert_close(out, expected, torch.bfloat16, model=True)
    out.float().square().mean().backward()
    assert_finite_grads(mod, inputs)


TRAINABLE = [c for c in CASES if c.has_params]


@pytest.mark.parametrize("case", TRAINABLE, ids=[c.name for c in TRAINABLE])
def test_gradscaler_float16_steps(case):
    # GradScaler starts at 2**16: the first fp16 backward may overflow, the scaler then
    # skips that step and halves the scale; within a few iterations steps are taken.
    mod = case.build().train()
    g, args, kwargs = case.inputs()
    before = {k: v.detach().clone() for k, v in mod.named_parameters()}
    opt = torch.optim.SGD(mod.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu")
    taken = 0
    for _ in range(6):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            out = case.call(mod, g, args, kwargs)
            loss = out.float().square().mean()
        scale = scaler.get_scale()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        taken += scaler.get_scale() >= scale            # the scale shrinks only when a step is skipped
    assert taken >= 2
    after = dict(mod.named_parameters())
    assert all(torch.isfinite(v).all() for v in after.values())
    assert any(not torch.equal(before[k], after[k].detach()) for k in before)


GRAPH_CASES = [c for c in CASES if c.inputs()[0] is not None]


@pytest.mark.parametrize("case", GRAPH_CASES, ids=[c.name for c in GRAPH_CASES])
def test_leaves_graph_frames_untouched(case):
    mod = case.build()
    g, args, kwargs = case.inputs()
    g.srcdata["keep"] = torch.zeros(g.num_src_nodes(), 2)
    g.dstdata["keep2"] = torch.zeros(g.num_dst_nodes(), 2)
    g.edata["keep"] = torch.zeros(g.num_edges(), 2)
    frames = lambda: (sorted(g.srcdata), sorted(g.dstdata), sorted(g.edata))  # noqa: E731
    before = frames()
    args, inputs = leaves(args)
    out = case.call(mod, g, args, kwargs)
    out.float().sum().backward()
    assert frames() == before


def _outputs(case, mod):
    g, args, kwargs = case.inputs()
    with torch.no_grad():
        return case.call(mod.eval(), g, args, kwargs)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_state_dict_pickle_repr(case):
    mod = case.build()
    ref = _outputs(case, mod)
    other = case.build()
    with torch.no_grad():
        for prm in other.parameters():
            prm.add_(1.0)
    other.load_state_dict(mod.state_dict())
    torch.testing.assert_close(_outputs(case, other), ref, rtol=0, atol=0)
    buf = io.BytesIO()
    torch.save(mod.state_dict(), buf)
    buf.seek(0)
    other.load_state_dict(torch.load(buf))
    torch.testing.assert_close(_outputs(case, other), ref, rtol=0, atol=0)
    clone = pickle.loads(pickle.dumps(mod))
    torch.testing.assert_close(_outputs(case, clone), ref, rtol=0, atol=0)
    assert repr(mod).startswith(type(mod).__name__ + "(")


USER_OWNED = ("apply_func.", "gate_nn.", "feat_nn.")
RESETTABLE = [c for c in CASES if c.has_params and c.resettable]


@pytest.mark.parametrize("case", RESETTABLE, ids=[c.name for c in RESETTABLE])
def test_reset_parameters_changes_weights(case):
    mod = case.build()
    with torch.no_grad():
        for prm in mod.parameters():
            prm.fill_(0.5)
    mod.reset_parameters()
    owned = [(k, v) for k, v in mod.named_parameters() if not k.startswith(USER_OWNED)]
    assert owned
    for name, prm in owned:
        assert not torch.all(prm == 0.5), name
        assert torch.isfinite(prm).all(), name

