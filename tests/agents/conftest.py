"""Fixtures of the agent tests."""

import pytest


@pytest.fixture(autouse=True)
def one_thread_in_every_agent_test(one_torch_thread):
    """One torch thread in every agent test (see `one_torch_thread` in tests/conftest.py): two
    threads made a PPO epoch of the fake env 30x slower under load."""


#: the CPU vendor of the machines the bit-for-bit training fixtures were recorded on
#: (tests/data/ppo_pins.json, learners_unchanged.json, legacy/): this project's AMD EPYC machines
RECORDED_ON = "AuthenticAMD"


def cpu_vendor() -> str:
    """/proc/cpuinfo's vendor_id (GenuineIntel, AuthenticAMD, ...), or '' where there is none."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


@pytest.fixture
def recorded_cpu():
    """Skip a test that compares training, bit for bit, with a run recorded on another kind of
    CPU. Training is float arithmetic through torch's and MKL's kernels, which choose their code
    by CPU: on an Intel AVX-512 machine every recorded run here differs in the last bits from the
    first update on (seen 2026-11-25: all 23 such tests, while every schedule and every greedy
    decision test passed). The invariant these tests pin (a rewrite changed no bit of training)
    can only be checked on the kind of CPU that recorded it; elsewhere they say so and skip."""
    vendor = cpu_vendor()
    if vendor != RECORDED_ON:
        pytest.skip(f"bit-for-bit training fixture recorded on {RECORDED_ON} CPUs; this CPU is "
                    f"{vendor or 'unknown'}, whose float kernels round differently")
