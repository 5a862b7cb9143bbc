"""Fixtures of the environment tests."""

import pytest

from envtraces import prepared, random_table
from hpcsched.sim.run import prepare


@pytest.fixture(scope="session")
def lublin():
    """lublin(profile="rlscheduler"): Lublin-1 prepared once per session."""
    return lambda profile="rlscheduler": prepared("lublin-1", profile)


@pytest.fixture(scope="session")
def tiny_random():
    return prepare(random_table(), "rlscheduler")
