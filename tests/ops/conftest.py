import pytest
import torch

# the shared Triton runner asserts on the worker's records: rewrite its asserts like a test module's
pytest.register_assert_rewrite("ops._triton_subprocess")


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """The op tests use tiny tensors: one intra-op thread avoids OpenMP wake-up latency on busy machines."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
