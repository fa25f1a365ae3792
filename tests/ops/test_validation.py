"""Errors at the public boundary: DGLError (ValueError) / DGLTypeError (TypeError) with a useful message."""

import pytest
import torch

import mpgraph.ops as ops
from mpgraph._index import Index
from mpgraph.base import DGLError, DGLTypeError


@pytest.fixture
def index():
    # 5 source nodes, 3 destination nodes, 4 edges
    return Index.from_coo(torch.tensor([0, 1, 2, 4]), torch.tensor([0, 0, 1, 2]), 5, 3)


def test_wrong_row_counts(index):
    with pytest.raises(DGLError, match="lhs_data has 7 rows but the graph has 5 source nodes"):
        ops.copy_u_sum(index, torch.ones(7, 2))
    with pytest.raises(DGLError, match="rhs_data has 5 rows but the graph has 4 edges"):
        ops.u_mul_e_sum(index, torch.ones(5, 2), torch.ones(5, 2))
    with pytest.raises(DGLError, match="rhs_data has 5 rows but the graph has 3 destination nodes"):
        ops.u_dot_v(index, torch.ones(5, 2), torch.ones(5, 2))
    with pytest.raises(DGLError, match="lhs_data has 3 rows but the graph has 4 edges"):
        ops.e_add_u(index, torch.ones(3, 2), torch.ones(5, 2))
    with pytest.raises(DGLError, match="logits has 3 rows but the graph has 4 edges"):
        ops.edge_softmax(index, torch.ones(3))
    with pytest.raises(DGLError, match="logits has 4 rows but eids selects 2 edges"):
        ops.edge_softmax(index, torch.ones(4), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="0-d"):
        ops.copy_u_sum(index, torch.tensor(1.0))


def test_errors_are_value_errors(index):
    with pytest.raises(ValueError):
        ops.copy_u_sum(index, torch.ones(7, 2))
    with pytest.raises(TypeError):
        ops.copy_u_sum(index, torch.ones(5, 2, dtype=torch.int64))


def test_integer_and_non_tensor_features(index):
    with pytest.raises(DGLTypeError, match="lhs_data must be a floating-point tensor.*got torch.int64"):
        ops.copy_u_sum(index, torch.ones(5, 2, dtype=torch.int64))
    with pytest.raises(DGLTypeError, match="rhs_data must be a floating-point tensor"):
        ops.u_add_v(index, torch.ones(5, 2), torch.ones(3, 2, dtype=torch.int32))
    with pytest.raises(DGLTypeError, match="logits must be a floating-point tensor"):
        ops.edge_softmax(index, torch.ones(4, dtype=torch.bool))
    with pytest.raises(DGLTypeError, match="must be a torch.Tensor, got list"):
        ops.copy_u_sum(index, [[1.0]] * 5)
    with pytest.raises(DGLTypeError, match="must be a torch.Tensor, got NoneType"):
        ops.u_mul_e_sum(index, torch.ones(5, 2), None)
    with pytest.raises(DGLTypeError, match="eids must be an integer tensor"):
        ops.edge_softmax(index, torch.ones(2), torch.tensor([0.0, 1.0]))


def test_broadcast_errors(index):
    with pytest.raises(DGLError, match=r"do not broadcast.*\(3,\).*\(2,\)"):
        ops.u_mul_e_sum(index, torch.ones(5, 3), torch.ones(4, 2))
    with pytest.raises(DGLError, match=r"do not broadcast"):
        ops.u_add_v(index, torch.ones(5, 2, 3), torch.ones(3, 3, 3))
    with pytest.raises(DGLError, match="'dot' contracts the last feature dimension"):
        ops.u_dot_v(index, torch.ones(5, 4), torch.ones(3, 5))
    with pytest.raises(DGLError, match="'dot' contracts the last feature dimension"):
        ops.u_dot_v(index, torch.ones(5), torch.ones(3))


def test_unknown_names(index):
    x = torch.ones(5, 2)
    with pytest.raises(DGLError, match="unknown op 'pow'.*expected one of"):
        ops.gspmm(index, "pow", "sum", x, torch.ones(4, 2))
    with pytest.raises(DGLError, match="unknown reduce_op 'prod'"):
        ops.gspmm(index, "copy_lhs", "prod", x, None)
    with pytest.raises(DGLError, match="unknown op 'dot'"):
        ops.gspmm(index, "dot", "sum", x, torch.ones(4, 2))
    with pytest.raises(DGLError, match="unknown lhs_target 'w'"):
        ops.gsddmm(index, "add", x, x, "w", "u")
    with pytest.raises(DGLError, match="unknown rhs_target 'src'"):
        ops.gsddmm(index, "add", x, x, "u", "src")
    with pytest.raises(DGLError, match="unknown norm_by 'edge'"):
        ops.edge_softmax(index, torch.ones(4), norm_by="edge")


def test_eids_out_of_range(index):
    with pytest.raises(DGLError, match=r"eids must be in \[0, 4\)"):
        ops.edge_softmax(index, torch.ones(2), torch.tensor([0, 4]))
    with pytest.raises(DGLError, match="1-D"):
        ops.edge_softmax(index, torch.ones(2), torch.tensor([[0, 1]]))


def test_not_a_graph():
    with pytest.raises(DGLTypeError, match="expected an mpgraph graph or Index, got dict"):
        ops.copy_u_sum({}, torch.ones(2, 2))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a second device type")
def test_device_mismatch_cuda(index):
    with pytest.raises(DGLError, match="lhs_data is on cuda:0 but the graph is on cpu"):
        ops.copy_u_sum(index, torch.ones(5, 2, device="cuda"))


def test_device_mismatch_meta(index):
    with pytest.raises(DGLError, match="lhs_data is on meta but the graph is on cpu"):
        ops.copy_u_sum(index, torch.ones(5, 2, device="meta"))
    with pytest.raises(DGLError, match="logits is on meta but the graph is on cpu"):
        ops.edge_softmax(index, torch.ones(4, device="meta"))


def test_unused_operand_is_ignored(index):
    x = torch.ones(5, 2)
    torch.testing.assert_close(ops.gspmm(index, "copy_lhs", "sum", x, "anything"), ops.copy_u_sum(index, x))
    torch.testing.assert_close(ops.gsddmm(index, "copy_rhs", None, torch.ones(3, 2), "u", "v"),
                               ops.copy_v(index, torch.ones(3, 2)))
