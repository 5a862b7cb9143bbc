"""A toy learned scheduler: PPO learns to start the smallest waiting job (see the README)."""
from dataclasses import dataclass

import numpy as np
from torch import nn

from hpcsched.agents.nets import MaskedPolicy, apply_mask, make_value
from hpcsched.agents.rlscheduler import RLSchedulerConfig
from hpcsched.envs.wrappers import VecWrapper
from hpcsched.recipes.pick_job import ppo_recipe


class LogLinear(MaskedPolicy, nn.Linear):  # the network: each job's score, linear in log(features)
    def forward(self, obs, mask):
        return apply_mask(super().forward(obs.add(1e-3).log())[..., 0], mask)


class SmallestReward(VecWrapper):  # the env's part: the share of real choices won by a smallest job
    def reset(self, seed=None, options=None):
        self.tally = np.zeros((self.num_envs, 2))  # per episode: choices won, real choices
        self.obs, self.mask = self.env.reset(seed=seed)
        return self.obs, self.mask

    def step(self, actions):
        procs = np.where(self.mask, self.obs[..., 2], np.inf)  # feature 2: processors / MaxProcs
        real = ((procs > procs.min(1, keepdims=True)) & self.mask).any(1)  # not all are smallest
        won = procs[np.arange(len(actions)), actions] == procs.min(1)
        self.tally += np.stack([real & won, real], 1)
        self.obs, self.mask, reward, done, infos = self.env.step(actions)
        reward[done] = self.tally[done, 0] / np.maximum(self.tally[done, 1], 1)
        self.tally[done] = 0
        return self.obs, self.mask, reward, done, infos


@dataclass
class SmallestJobConfig(RLSchedulerConfig):  # the one PPO: RLScheduler's settings, our net, reward
    episode_jobs: int = 64
    slots: int = 32
    n_envs: int = 16
    trajectories_per_epoch: int = 16
    pi_lr: float = 0.05

    def networks(self): return LogLinear(8, 1), make_value("flat", 8, self.slots)
    def make_env(self, model): return SmallestReward(super().make_env(model))


ppo_recipe(SmallestJobConfig, name="toy", prefix="toy", help="a toy: smallest waiting job first")
