"""The two training aids that are not in RLScheduler: the relative reward and the imitation warm
start (agents/imitation.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hpcsched.agents.imitation import collect_demonstrations, heuristic_targets, imitate
from hpcsched.agents.nets import KernelPolicy
from hpcsched.agents.ppo import relative_reward
from hpcsched.envs.vec import VecPickJob
from hpcsched.policies.priority import get_policy


@pytest.mark.parametrize("value, base, sign, expected", [
    (50.0, 100.0, -1.0, 50.0 / 150.0),  # half SJF's bsld: a third of the way to the best reward
    (100.0, 50.0, -1.0, -50.0 / 150.0),  # twice SJF's bsld: symmetric penalty
    (7.0, 7.0, -1.0, 0.0),  # as good as the heuristic
    (0.0, 0.0, -1.0, 0.0),  # no waiting under either: nothing to learn
    (0.8, 0.6, 1.0, 0.2 / 1.4),  # utilization: higher is better
])
def test_relative_reward_by_hand(value, base, sign, expected):
    assert relative_reward(value, base, sign) == pytest.approx(expected, rel=1e-12)
    assert -1.0 <= relative_reward(value, base, sign) <= 1.0


def small_env(n_envs=4, episode_jobs=96):
    return VecPickJob(n_envs, trace="lublin-1", profile="rlscheduler", backfill="none",
                      metric="bsld", episode_jobs=episode_jobs)


def test_targets_are_the_observed_job_with_the_smallest_request():
    env = small_env()
    env.reset(seed=4)
    sjf = get_policy("sjf").static_keys
    for _ in range(30):
        targets = heuristic_targets(env, sjf, {})
        rows = env.rows
        for i, engine in enumerate(env.engines):
            observed = rows[i][rows[i] >= 0]
            request = engine.jobs["req_time"]
            # the target holds a waiting job with the least request among those observed
            assert rows[i, targets[i]] >= 0
            assert request[rows[i, targets[i]]] == request[observed].min()
        env.step(targets)


def test_imitation_learns_sjf_and_wfp3_is_refused():
    torch.manual_seed(0)
    env = small_env(n_envs=8)
    obs, mask, target = collect_demonstrations(env, "sjf", episodes=8, seed=1)
    assert len(obs) == len(mask) == len(target) >= 8 * 96 // 2
    assert mask[np.arange(len(target)), target].all()  # every target is a real job
    policy = KernelPolicy()
    before = imitate(policy, obs, mask, target, steps=0)["imitation_agreement"]
    after = imitate(policy, obs, mask, target, steps=150)["imitation_agreement"]
    assert after > 0.7 and after > before + 0.2  # a random net agrees about 1 time in k
    with pytest.raises(ValueError, match="re-scores jobs"):
        collect_demonstrations(small_env(), "wfp3", episodes=1)
