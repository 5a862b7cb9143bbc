"""Session-wide setup: the compiled loops are compiled (or loaded from numba's cache) once, before
any test runs, so that no test's time limit or timing includes the compiler."""

import pytest


@pytest.fixture(scope="session", autouse=True)
def compiled_loops():
    from hpcsched.sim.warmup import warm_up

    warm_up()
