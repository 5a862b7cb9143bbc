"""Shared helpers for the workload tests: the fixture file and cached loads of bundled traces."""

import json
from functools import lru_cache
from pathlib import Path

import pytest

from hpcsched.workload.traces import load_trace

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture(scope="session")
def schedgym_fixture() -> dict:
    return json.loads((DATA / "schedgym_small.json").read_text())


@lru_cache(maxsize=None)
def _load(name: str):
    return load_trace(name)


@pytest.fixture(scope="session")
def raw_trace():
    """raw_trace(name): a bundled trace, read once per session (tables are immutable)."""
    return _load
