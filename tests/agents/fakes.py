"""A small stand-in for VecPickJob with the same contract, whose best policy is known: pick the job
with the smallest feature 1 (the "requested time"), as SJF would.

Each step shows between 1 and `max_jobs` real jobs with uniform random features, the rest of the
slots padded with RLScheduler's padding row. The episode's only reward, at its end, is minus the mean
rank (0 = smallest feature 1) of the jobs chosen, so a perfect policy scores 0 and a uniformly random
one about -(k - 1) / 2.
"""

from __future__ import annotations

import numpy as np


def padding_row(features: int) -> np.ndarray:
    row = np.ones(features, dtype=np.float32)
    row[0] = 0.0
    row[-1] = 0.0
    return row


class FakeVecPickJob:
    def __init__(self, n_envs: int = 4, slots: int = 16, features: int = 8, episode_jobs: int = 8,
                 max_jobs: int | None = None, mean_jobs: float | None = None,
                 variable_length: bool = False, **_ignored):
        self.n_envs = n_envs
        self.slots = slots
        self.features = features
        self.episode_jobs = episode_jobs
        self.max_jobs = max_jobs or slots
        self.mean_jobs = mean_jobs
        self.variable_length = variable_length
        self.norm = {"max_run_time": 1.0}
        self._pad = padding_row(features)
        self.reset(0)

    def _length(self) -> int:
        if not self.variable_length:
            return self.episode_jobs
        return int(self.rng.integers(self.episode_jobs // 2, self.episode_jobs + 1))

    def _observe(self, envs: np.ndarray) -> None:
        k = len(envs)
        if self.mean_jobs is None:
            count = self.rng.integers(1, self.max_jobs + 1, size=k)
        else:
            count = np.minimum(self.rng.geometric(1.0 / self.mean_jobs, size=k), self.max_jobs)
        valid = np.arange(self.slots)[None, :] < count[:, None]
        feats = self.rng.random((k, self.slots, self.features), dtype=np.float32)
        self.obs[envs] = np.where(valid[..., None], feats, self._pad)
        self.mask[envs] = valid

    def reset(self, seed: int | None = None):
        self.rng = np.random.default_rng(seed)
        self.obs = np.empty((self.n_envs, self.slots, self.features), dtype=np.float32)
        self.mask = np.zeros((self.n_envs, self.slots), dtype=bool)
        self.t = np.zeros(self.n_envs, dtype=np.int64)
        self.length = np.array([self._length() for _ in range(self.n_envs)], dtype=np.int64)
        self.rank_sum = np.zeros(self.n_envs)
        self._observe(np.arange(self.n_envs))
        return self.obs.copy(), self.mask.copy()

    def step(self, actions):
        actions = np.asarray(actions, dtype=np.int64)
        envs = np.arange(self.n_envs)
        if not self.mask[envs, actions].all():
            raise ValueError("a masked slot was chosen")
        req = np.where(self.mask, self.obs[:, :, 1], np.inf)
        rank = (req < req[envs, actions][:, None]).sum(axis=1)
        self.rank_sum += rank
        self.t += 1
        done = self.t >= self.length
        reward = np.where(done, -self.rank_sum / np.maximum(self.t, 1), 0.0)
        infos: list[dict] = [{} for _ in range(self.n_envs)]
        for i in np.flatnonzero(done):
            infos[i]["metrics"] = {"mean_rank": float(-reward[i]), "decisions": int(self.t[i])}
            self.t[i] = 0
            self.rank_sum[i] = 0.0
            self.length[i] = self._length()
        self._observe(envs)
        return self.obs.copy(), self.mask.copy(), reward, done, infos
