"""Session-wide setup: the compiled loops are compiled (or loaded from numba's cache) once, before
any test runs, so that no test's time limit or timing includes the compiler."""

import pytest


@pytest.fixture(scope="session", autouse=True)
def compiled_loops():
    from hpcsched.sim.warmup import warm_up

    warm_up()


@pytest.fixture
def one_torch_thread():
    """One torch thread: results do not depend on the machine's core count, and tiny networks
    do not wait on a second thread that a busy machine has not scheduled."""
    torch = pytest.importorskip("torch")
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
