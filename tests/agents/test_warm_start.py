"""Warm starts (agents/imitation.py, agents/rlscheduler.warm_start): the heuristic's targets, the
imitation itself, and starting from a trained model's networks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hpcsched.agents.imitation import collect_demonstrations, heuristic_targets, imitate
from hpcsched.agents.nets import KernelPolicy
from hpcsched.agents.ppo import PPO
from hpcsched.agents.rlscheduler import RLSchedulerConfig, warm_start
from hpcsched.envs.vec import VecPickJob
from hpcsched.policies.priority import get_policy


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


TINY = dict(trace="lublin-1", episode_jobs=32, slots=16, n_envs=4, trajectories_per_epoch=4,
            train_pi_iters=2, train_v_iters=2, threads=1)


def test_warm_start_imitates_the_heuristic_on_the_training_windows():
    model = PPO(RLSchedulerConfig(**TINY, init="sjf", init_episodes=4, init_steps=60))
    stats = warm_start(model)
    assert model.extra["warm"] is stats and stats["imitation_decisions"] >= 4 * 32 // 2
    assert stats["imitation_agreement"] > 0.6


def test_warm_start_from_a_model_takes_its_networks_and_refuses_others(tmp_path):
    trained = PPO(RLSchedulerConfig(**TINY, seed=1)).learn(1)
    trained.save(tmp_path / "trained.pt")
    model = PPO(RLSchedulerConfig(**TINY, seed=2, init=f"model:{tmp_path / 'trained.pt'}"))
    assert warm_start(model) == {"from_epoch": 1} == model.extra["warm"]
    for net, theirs in ((model.policy, trained.policy), (model.value, trained.value)):
        for a, b in zip(net.state_dict().values(), theirs.state_dict().values()):
            assert torch.equal(a, b)
    assert model.epoch == 0  # the run itself starts at epoch 0, with fresh optimisers
    other = PPO(RLSchedulerConfig(**{**TINY, "slots": 32},
                                  init=f"model:{tmp_path / 'trained.pt'}"))
    with pytest.raises(ValueError, match="differ from this run's"):
        warm_start(other)
