import pathlib
import sys

import pytest
import torch

# nn_cases.py (layer cases and dense references) lives beside the tests
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """The layer tests use tiny tensors: one intra-op thread avoids OpenMP wake-up latency on busy machines."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
