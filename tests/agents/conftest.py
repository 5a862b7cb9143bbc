"""Fixtures of the agent tests."""

from pathlib import Path

import pytest
from cpu_fixtures import RECORDED_ON, cpu_vendor, recorded_fixture


@pytest.fixture(autouse=True)
def one_thread_in_every_agent_test(one_torch_thread):
    """One torch thread in every agent test (see `one_torch_thread` in tests/conftest.py): two
    threads made a PPO epoch of the fake env 30x slower under load."""


@pytest.fixture
def recorded_cpu():
    """Skip a test of tests/data/legacy's old runs (a folder, recorded on AMD only) on another
    CPU vendor (`cpu_fixtures.recorded_fixture`)."""
    if cpu_vendor() != RECORDED_ON:
        recorded_fixture(Path("legacy"))
