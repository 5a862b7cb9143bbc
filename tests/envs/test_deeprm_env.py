"""hpcsched/DeepRM-v0: the Gymnasium contract, and the episode return as the paper states it."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env

import hpcsched.envs  # noqa: F401  (registers the environments)
from hpcsched.envs.deeprm import DeepRMEnv


def test_check_env_passes():
    check_env(DeepRMEnv(load=0.5, steps=12), skip_render_check=True)


def test_paper_sizes_and_registration():
    env = gym.make("hpcsched/DeepRM-v0", load=0.7)
    assert env.observation_space.shape == (20, 223)  # 2 x (10 + 10 x 10) + 60 / 20
    assert env.action_space.n == 11


def test_the_return_with_gamma_1_is_minus_the_sum_of_slowdowns():
    env = DeepRMEnv(load=1.1, steps=30)
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=4)
    total, done = 0.0, False
    while not done:
        valid = np.flatnonzero(info["action_mask"])
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(valid)))
        total += reward
        done = terminated or truncated
    assert terminated
    rec = env.unwrapped.batch.job_records()
    assert abs(total + rec["slowdown"].sum()) < 1e-9
    assert info["jobs"] == len(rec["slowdown"]) > 0
