"""Which recording of a bit-for-bit training fixture this machine checks against: they are per
kind of CPU (`recorded_fixture`)."""

from pathlib import Path

import pytest

#: the CPU vendor of the machines the bit-for-bit training fixtures were first recorded on
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


def recorded_fixture(path: Path) -> Path:
    """The bit-for-bit training fixture `path` as recorded on this machine's kind of CPU: `path`
    itself on the vendor that first recorded them, `STEM.VENDOR.SUFFIX` beside it on another
    vendor where one was recorded (by the same old code: the recording scripts say how); else
    the test skips and says why. Training is float arithmetic through torch's and MKL's kernels,
    which choose their code by CPU: on an Intel AVX-512 machine every run recorded on AMD differs
    in the last bits from the first update on (seen 2026-11-25: all 23 such tests, while every
    schedule and greedy-decision test passed). The invariant these fixtures pin (a rewrite changed
    no bit of training) holds per kind of CPU."""
    vendor = cpu_vendor()
    if vendor == RECORDED_ON:
        return path
    other = path.with_name(f"{path.stem}.{vendor}{path.suffix}")
    if vendor and other.exists():
        return other
    pytest.skip(f"{path.name}: a bit-for-bit training fixture recorded on {RECORDED_ON} CPUs"
                f"{'' if not vendor else ' (none recorded for ' + vendor + ')'}; this CPU's "
                "float kernels round differently")
