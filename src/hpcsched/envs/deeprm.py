"""`hpcsched/DeepRM-v0`: one DeepRM simulation (the `deeprm` profile) as a Gymnasium environment.

    env = gym.make("hpcsched/DeepRM-v0", load=0.7)
    obs, info = env.reset(seed=1)               # obs: the (T, width) state image, 0/1 float32
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

Actions 0..M-1 place the job of that slot at the earliest step it fits; M is void (end the step).
An empty slot or a job that fits nowhere acts as void, as in the paper (a job fits where it ends
before the window's last row, as in DeepRM's code); `info["action_mask"]` and `action_masks()`
mark the picks that place a job (and void) for agents that mask. Each reset draws
a new jobset of `steps` steps at the given load with DeepRM's generator (or replays `jobs`, a
GridJobs of one jobset). The queue is DeepRM's (`queue="bounded"`: an arrival that finds the M
slots and the backlog full is dropped; `info["dropped"]` counts them at the end) or unbounded. The
reward is minus the cost of the steps the action ended: sum 1/T_j over the jobs in the system
(`reward="slowdown"`) or their count (`"completion"`); with gamma = 1 an episode's return is minus
the sum of its jobs' slowdowns (completion times).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from hpcsched.cluster.grid import ResourceGrid
from hpcsched.sim.discrete_batch import DiscreteBatch
from hpcsched.workload.deeprm import GridJobs, generate, rate_for_load


class DeepRMEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, load: float = 0.7, steps: int = 50, *, resources: int = 2, units: int = 10,
                 horizon: int = 20, slots: int = 10, backlog: int = 60,
                 queue: str = "bounded", reward: str = "slowdown", jobs: GridJobs | None = None,
                 max_decisions: int = 5000) -> None:
        self.grid = ResourceGrid(resources, units, horizon)
        self.batch = DiscreteBatch(self.grid, slots, backlog, reward, queue)
        self.rate = rate_for_load(load, resources)
        self.steps = steps
        if jobs is not None and len(jobs) != 1:
            raise ValueError(f"DeepRM-v0 replays one jobset (got {len(jobs)})")
        self.fixed_jobs = jobs
        self.max_decisions = max_decisions
        self.observation_space = gym.spaces.Box(0.0, 1.0, self.batch.image_shape, np.float32)
        self.action_space = gym.spaces.Discrete(self.batch.actions)
        self._decisions = 0

    def _obs(self) -> np.ndarray:
        return self.batch.images(None, np.float32)[0]

    def _info(self) -> dict[str, Any]:
        b = self.batch
        info: dict[str, Any] = {"action_mask": b.action_mask()[0], "time": int(b.now[0]),
                                "backlog": int(b.backlog_count()[0])}
        if b.done[0]:
            info.update(b.metrics())
        return info

    def action_masks(self) -> np.ndarray:
        return self.batch.action_mask()[0]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        jobs = self.fixed_jobs
        if jobs is None:
            jobs = generate(1, self.rate, self.steps, seed=int(self.np_random.integers(2**31)),
                            resources=self.grid.resources)
        self.batch.reset(jobs)
        self._decisions = 0
        # steps that ended before the first decision (none with a fitting first job, but a
        # replayed jobset may differ): their cost is paid with the first step's reward
        self._carry = float(self.batch.pending_reward[0])
        return self._obs(), self._info()

    def step(self, action):
        reward, done = self.batch.step(np.array([int(action)]))
        reward = reward + self._carry
        self._carry = 0.0
        self._decisions += 1
        truncated = bool(not done[0] and self._decisions >= self.max_decisions)
        return self._obs(), float(reward[0]), bool(done[0]), truncated, self._info()


__all__ = ["DeepRMEnv"]
