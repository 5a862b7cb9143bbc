"""Fixtures of the agent tests."""

import pytest


@pytest.fixture(autouse=True)
def one_thread_in_every_agent_test(one_torch_thread):
    """One torch thread in every agent test (see `one_torch_thread` in tests/conftest.py): two
    threads made a PPO epoch of the fake env 30x slower under load."""
