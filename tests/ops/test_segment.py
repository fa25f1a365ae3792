"""segment_reduce / segment_softmax against per-segment Python loops."""

import pytest
import torch
from tolerances import assert_close

import mpgraph.ops as ops
from mpgraph.base import DGLError

SEGLENS = [[], [0], [3], [2, 0, 3, 1], [0, 0, 5, 0], [1] * 7]


def loop_reduce(seglen, value, reducer):
    out, start = [], 0
    for n in seglen:
        seg = value[start:start + n]
        start += n
        if n == 0:
            out.append(torch.zeros(value.shape[1:], dtype=value.dtype))
        elif reducer == "sum":
            out.append(seg.sum(0))
        elif reducer == "mean":
            out.append(seg.mean(0))
        elif reducer == "max":
            out.append(seg.amax(0))
        else:
            out.append(seg.amin(0))
    return torch.stack(out) if out else torch.zeros((0,) + value.shape[1:], dtype=value.dtype)


def loop_softmax(seglen, value):
    out, start = [], 0
    for n in seglen:
        out.append(torch.softmax(value[start:start + n], dim=0))
        start += n
    return torch.cat(out) if out else value.clone()


@pytest.mark.parametrize("seglen", SEGLENS, ids=str)
@pytest.mark.parametrize("reducer", ["sum", "mean", "max", "min"])
def test_segment_reduce(seglen, reducer, float_dtype):
    gen = torch.Generator().manual_seed(0)
    value = torch.randn(sum(seglen), 2, 3, generator=gen, dtype=torch.float64).to(float_dtype).double()
    out = ops.segment_reduce(torch.tensor(seglen, dtype=torch.int64), value.to(float_dtype), reducer)
    assert out.dtype == float_dtype and out.shape == (len(seglen), 2, 3)
    assert_close(out, loop_reduce(seglen, value, reducer), float_dtype)


@pytest.mark.parametrize("seglen", SEGLENS, ids=str)
def test_segment_softmax(seglen, float_dtype):
    gen = torch.Generator().manual_seed(1)
    value = torch.randn(sum(seglen), 3, generator=gen, dtype=torch.float64).to(float_dtype).double()
    out = ops.segment_softmax(torch.tensor(seglen, dtype=torch.int32), value.to(float_dtype))
    assert out.dtype == float_dtype and out.shape == value.shape
    assert_close(out, loop_softmax(seglen, value), float_dtype)


@pytest.mark.parametrize("reducer", ["sum", "mean", "max", "min"])
def test_segment_reduce_gradcheck(reducer):
    seglen = torch.tensor([2, 0, 3, 1])
    value = torch.randn(6, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: ops.segment_reduce(seglen, v, reducer), (value,))


def test_segment_softmax_gradcheck():
    seglen = torch.tensor([2, 0, 3, 1])
    value = torch.randn(6, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: ops.segment_softmax(seglen, v), (value,))


def test_segment_half_accumulates_in_float32():
    value = torch.ones(5000, dtype=torch.float16)
    out = ops.segment_reduce(torch.tensor([5000]), value, "sum")
    assert out.item() == 5000.0       # float16 accumulation would stop at 2048
    assert ops.segment_reduce(torch.tensor([5000]), value, "mean").item() == 1.0


def test_segment_errors():
    with pytest.raises(DGLError, match="sums to 3 but value has 4 rows"):
        ops.segment_reduce(torch.tensor([1, 2]), torch.randn(4, 2))
    with pytest.raises(DGLError, match="non-negative"):
        ops.segment_reduce(torch.tensor([-1, 5]), torch.randn(4, 2))
    with pytest.raises(TypeError, match="integer"):
        ops.segment_reduce(torch.tensor([1.0, 3.0]), torch.randn(4, 2))
    with pytest.raises(TypeError, match="floating-point"):
        ops.segment_softmax(torch.tensor([1, 3]), torch.ones(4, dtype=torch.int64))
    with pytest.raises(DGLError, match="unknown reducer"):
        ops.segment_reduce(torch.tensor([1, 3]), torch.randn(4, 2), "prod")
