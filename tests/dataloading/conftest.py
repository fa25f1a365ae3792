import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Sampling works on small tensors: one intra-op thread avoids OpenMP wake-up latency on busy machines."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
