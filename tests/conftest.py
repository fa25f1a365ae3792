import os

import pytest
import torch

from graph_cases import CASES

torch.manual_seed(0)

# Under pytest-xdist every worker is a process of its own: two workers with two OpenMP threads
# each oversubscribe a 2-core machine, and spinning OpenMP threads then make small ops 10-50x
# slower. Tests measure correctness, not speed, so each worker uses one thread.
if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)


@pytest.fixture(params=["cpu"])
def device(request):
    return torch.device(request.param)


@pytest.fixture(params=[torch.int32, torch.int64], ids=["int32", "int64"])
def idtype(request):
    return request.param


@pytest.fixture(params=[torch.float64, torch.float32, torch.float16, torch.bfloat16],
                ids=["f64", "f32", "f16", "bf16"])
def float_dtype(request):
    return request.param


@pytest.fixture(params=sorted(CASES))
def graph_case(request):
    return request.param, CASES[request.param]


def pytest_configure(config):
    config.addinivalue_line("markers", "interpreter: Triton kernels under TRITON_INTERPRET=1 (slow)")
    config.addinivalue_line("markers", "slow: long-running test")
    config.addinivalue_line("markers", "gpu: needs CUDA")
    os.environ.setdefault("MPGRAPH_TEST", "1")
