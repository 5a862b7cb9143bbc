"""The greedy rule (`hpcsched.agents.greedy`): a shipped model's decisions do not depend on the
arithmetic path. Scores are computed in float64, rounded to float32, the first maximum wins.

What another machine or BLAS changes is the last bits of a float64 score; these tests put noise of
100x that size on every score and check that no schedule of the shipped models changes, and that
torch's float64 forward gives the same schedules as the numpy one. They also check that the tests
can fail: noise at float32's resolution (what the old float32 path carried) does change schedules.
"""

from __future__ import annotations

import numpy as np
import pytest

from hpcsched.agents.rlscheduler_policy import RLPolicy, load_policy
from hpcsched.agents.greedy import decision_scores, greedy, greedy_batch
from hpcsched.agents.nets import MLPPolicy, KernelPolicy
from hpcsched.experiments.policyspec import PRETRAINED
from hpcsched.sim.run import prepare, simulate
from hpcsched.workload.windows import paper_windows


# -- the rule itself ---------------------------------------------------------------------------------

def test_first_maximum_wins_a_tie():
    assert greedy([1.0, 3.0, 3.0, 2.0]) == 1
    assert greedy([3.0, 3.0]) == 0


def test_scores_closer_than_float32_resolves_are_a_tie():
    # 1 + 1e-9 and 1 round to the same float32: a tie, so the earlier slot wins, even though the
    # later one is larger in float64
    assert greedy([1.0, 1.0 + 1e-9]) == 0
    # 1 + 1e-6 is a different float32: the larger one wins
    assert greedy([1.0, 1.0 + 1e-6]) == 1


def test_masked_entries_never_win_even_when_larger():
    assert greedy([5.0, 1.0, 9.0], mask=[False, True, False]) == 1
    assert greedy_batch([[5.0, 1.0], [0.0, 2.0]], [[False, True], [True, True]]).tolist() == [1, 1]


def test_decision_scores_round_float64_to_float32():
    s = decision_scores(np.array([0.1, 1e-300, 3.0], dtype=np.float64))
    assert s.dtype == np.float32
    assert s[0] == np.float32(0.1) and s[1] == 0.0 and s[2] == 3.0


# -- the shipped models ------------------------------------------------------------------------------

class _Noisy(RLPolicy):
    """The same model, with every float64 score multiplied by (1 + eps * u), u uniform in [-1, 1]:
    what another machine's arithmetic could do to it, exaggerated."""

    def __init__(self, base: RLPolicy, eps: float, seed: int = 0):
        self.__dict__.update(base.__dict__)
        self.eps = eps
        self.noise = np.random.default_rng(seed)

    def logits(self, obs, mask):
        x = super().logits(obs, mask)
        return x * (1.0 + self.eps * self.noise.uniform(-1.0, 1.0, size=x.shape))


class _Torch64(RLPolicy):
    """The same model scored through torch's float64 forward instead of numpy's."""

    def __init__(self, base: RLPolicy):
        from hpcsched.agents.greedy import torch_float64

        self.__dict__.update(base.__dict__)
        self._weights = None
        self._net64 = torch_float64(base.net)


def _starts(jobs: int) -> list[int]:
    return paper_windows(count=3, length=jobs)


def _schedules(prepared, policy, backfill: str, starts, jobs: int) -> list[np.ndarray]:
    return [simulate(prepared, policy, backfill=backfill, start=s, jobs=jobs).start.copy()
            for s in starts]


CASES = [("hpc2n", "hpc2n-bsld", "none"), ("hpc2n", "hpc2n-bsld-backfill", "schedgym"),
         ("lublin-1", "lublin-1-bsld", "none")]


@pytest.fixture(scope="module")
def prepared():
    return {t: prepare(t, profile="rlscheduler") for t in {c[0] for c in CASES}}


@pytest.mark.parametrize("trace,name,backfill", CASES)
def test_float64_noise_changes_no_schedule(prepared, trace, name, backfill):
    prep = prepared[trace]
    base = load_policy(PRETRAINED / f"{name}.pt")
    starts, jobs = _starts(512), 512
    want = _schedules(prep, base, backfill, starts, jobs)
    for seed in (0, 1):
        got = _schedules(prep, _Noisy(base, 1e-13, seed), backfill, starts, jobs)
        for a, b in zip(want, got):
            np.testing.assert_array_equal(a, b)
    got = _schedules(prep, _Torch64(base), backfill, starts, jobs)
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)


def test_float32_sized_noise_does_change_schedules(prepared):
    """The test above can fail: at float32's resolution (the old path's arithmetic), the same
    kind of noise changes some schedule of these models."""
    changed = 0
    for trace, name, backfill in CASES:
        prep = prepared[trace]
        base = load_policy(PRETRAINED / f"{name}.pt")
        starts, jobs = _starts(512), 512
        want = _schedules(prep, base, backfill, starts, jobs)
        got = _schedules(prep, _Noisy(base, 3e-7, 0), backfill, starts, jobs)
        changed += sum(not np.array_equal(a, b) for a, b in zip(want, got))
    assert changed > 0


def test_a_non_kernel_network_is_scored_in_float64_through_torch():
    net = MLPPolicy(features=8, slots=16)
    policy = RLPolicy(net, {}, slots=16)
    obs = np.random.default_rng(0).random((16, 8)).astype(np.float32)
    mask = np.ones(16, dtype=bool)
    assert policy.logits(obs, mask).dtype == np.float64
    kernel = RLPolicy(KernelPolicy(features=8, slots=16), {}, slots=16)
    assert kernel.logits(obs, mask).dtype == np.float64
