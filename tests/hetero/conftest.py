import pathlib
import sys

import pytest
import torch

# hetero_cases.py (typed graph builders and per-relation references) lives beside the tests
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Small tensors: one intra-op thread avoids OpenMP wake-up latency on the shared machines."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
