"""Fixtures of the agent tests."""

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread():
    """One torch thread in every agent test: results do not depend on the machine's core count,
    and tiny matrix products do not wait on a second thread that a busy machine has not
    scheduled (two threads made a PPO epoch of the fake env 30x slower under load)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
