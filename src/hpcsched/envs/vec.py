"""Many PickJob episodes stepped together, for batched rollouts.

    vec = VecPickJob(64, "lublin-1", metric="bsld")
    obs, mask = vec.reset(seed=0)                 # (64, 128, 8) float32, (64, 128) bool
    while training:
        actions = agent(obs, mask)                # (64,) slot indices, each unmasked
        obs, mask, reward, done, infos = vec.step(actions)

Each of the N episodes behaves exactly as a `PickJobEnv` with the same arguments (same windows,
same observation, same reward). A finished episode is replaced at once by a new window: the
returned observation is the new episode's first, `reward[i]` and `done[i]` belong to the finished
one and `infos[i]` holds its `metrics` and `window`.

Speed: all N engines share one prepared trace and one table of static features; the observations
of all N are built together (`observation.fill_observations`, the one implementation of the
observation), with a handful of numpy calls per step, into preallocated arrays.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

import numpy as np
from gymnasium import spaces

from hpcsched.envs.observation import fill_observations
from hpcsched.envs.pick_job import Episode, WindowFilter, episode_reward, setup
from hpcsched.sim.profiles import Profile
from hpcsched.sim.run import Prepared
from hpcsched.workload.jobs import JobTable


class VecPickJob:
    """N PickJob episodes stepped together; the arguments after `num_envs` are `PickJobEnv`'s.

    copy: return fresh arrays from `reset` and `step` (default); with False the same buffers are
    returned every time and overwritten by the next call (faster, for a caller that copies what it
    keeps).
    """

    def __init__(
        self,
        num_envs: int,
        trace: str | os.PathLike | JobTable | Prepared = "lublin-1",
        profile: str | Profile | None = None,
        backfill: str = "none",
        metric: str = "bsld",
        episode_jobs: int = 256,
        slots: int = 128,
        cutoff: str = "fcfs",
        first: int | None = 10000,
        window_filter: WindowFilter | None = None,
        fairness: bool | None = None,
        copy: bool = True,
    ) -> None:
        if num_envs <= 0:
            raise ValueError(f"num_envs must be positive, got {num_envs}")
        self.num_envs = int(num_envs)
        self.n_envs = self.num_envs  # the name agents.rollout reads
        self.copy = copy
        setup(self, trace, profile, backfill, metric, episode_jobs, slots, cutoff, first,
              window_filter, fairness)
        self._sampler = self.sampler  # the constructor's; `sampler`: this reset's
        self.single_observation_space = spaces.Box(0.0, 1.0, (self.slots, self.n_features),
                                                   np.float32)
        self.single_action_space = spaces.Discrete(self.slots)
        n, s, f = self.num_envs, self.slots, self.n_features
        self._obs = np.empty((n, s, f), dtype=np.float32)
        self._mask = np.zeros((n, s), dtype=bool)
        self._rows = np.full((n, s), -1, dtype=np.int64)
        self._base = np.zeros(n, dtype=np.int64)
        self._arange = np.arange(n)
        self._episodes: list[Episode] = []
        self._rngs: list[np.random.Generator] = []

    # -- API ------------------------------------------------------------------------------------
    def reset(self, seed: int | Sequence[int | None] | None = None,
              options: Mapping[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Start N new episodes. Env i draws its windows from its own generator: spawned from
        `seed` (an int or None), or, with one seed per env, ``np.random.default_rng(seed[i])``,
        the generator of a `PickJobEnv` reset with seed[i] (None there keeps env i's generator,
        as a PickJobEnv reset without a seed does). options={"starts": [s0, s1, ...], "jobs": n}
        fixes the first window of each env (later windows are drawn); {"window_filter": f} draws
        the windows of this reset and of the episodes that follow it through f (a callable
        start -> bool or a collection of starts; None: every window) instead of the
        constructor's `window_filter`, until the next reset."""
        options = dict(options or {})
        unknown = set(options) - {"starts", "jobs", "window_filter"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; known: 'starts', 'jobs', "
                             f"'window_filter'")
        self.sampler = self._sampler.for_reset(options)
        self._rngs = self._generators(seed)
        starts: Sequence[int] | None = options.get("starts")
        if starts is not None and len(starts) != self.num_envs:
            raise ValueError(f"reset option 'starts' needs {self.num_envs} starts, "
                             f"got {len(starts)}")
        jobs = int(options.get("jobs", self.episode_jobs))
        n_trace = len(self.prepared.jobs)
        self._episodes = []
        for i in range(self.num_envs):
            if starts is None:
                self._episodes.append(self._new_episode(i))
                continue
            s = int(starts[i])
            if s < 0 or jobs <= 0 or s + jobs > n_trace:
                raise ValueError(f"window [{s}, {s + jobs}) is outside the trace's {n_trace} jobs")
            self._episodes.append(self._start(i, s, jobs))
        self._observe_all()
        return self._out(self._obs), self._out(self._mask)

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        """Apply one slot per env; returns (obs, mask, reward, done, infos)."""
        if not self._episodes:
            raise RuntimeError("call reset() first")
        a = np.asarray(actions)
        if a.shape != (self.num_envs,) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"actions must be {self.num_envs} integer slot indices, got "
                             f"shape {a.shape} dtype {a.dtype}")
        out_of_range = (a < 0) | (a >= self.slots)
        if out_of_range.any():
            i = int(np.flatnonzero(out_of_range)[0])
            raise ValueError(f"env {i}: action {int(a[i])} is not a slot (0..{self.slots - 1})")
        rows = self._rows[self._arange, a]
        if (rows < 0).any():
            i = int(np.flatnonzero(rows < 0)[0])
            raise ValueError(f"env {i}: invalid action {int(a[i])}: that slot holds no waiting "
                             f"job; pick a slot whose mask is True")
        reward = np.zeros(self.num_envs)
        done = np.zeros(self.num_envs, dtype=bool)
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        episodes = self._episodes
        for i, row in enumerate(rows.tolist()):
            ep = episodes[i]
            if not ep.apply(row):
                metrics = ep.engine.result().metrics
                reward[i] = episode_reward(metrics, self.metric)
                done[i] = True
                infos[i] = {"metrics": metrics, "window": (ep.start, ep.jobs)}
                episodes[i] = self._new_episode(i)
        self._observe_all()
        return self._out(self._obs), self._out(self._mask), reward, done, infos

    def action_masks(self) -> np.ndarray:
        return self._mask.copy()

    def rollout_info(self) -> dict[str, Any]:
        """What a learner logs of these environments with each rollout: whether the windows since
        the last reset are drawn through a window filter (trajectory filtering's first stage)."""
        return {"filtered": self.sampler.filtered}

    @property
    def rows(self) -> np.ndarray:
        """(N, slots): the row of each env's window in each slot (-1: empty slot)."""
        return self._rows.copy()

    @property
    def norm(self) -> dict[str, float]:
        """The trace's normalisation constants (what `observe` needs to see as these envs do)."""
        return self.prepared.report.norm

    @property
    def windows(self) -> list[tuple[int, int]]:
        """(start, jobs) of each env's current window."""
        return [(ep.start, ep.jobs) for ep in self._episodes]

    @property
    def engines(self):
        return [ep.engine for ep in self._episodes]

    def close(self) -> None:
        self._episodes = []

    # -- internals ------------------------------------------------------------------------------
    def _generators(self, seed) -> list[np.random.Generator]:
        n = self.num_envs
        if seed is None or isinstance(seed, (int, np.integer)):
            return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n)]
        seeds = list(seed)
        if len(seeds) != n:
            raise ValueError(f"reset needs one seed per env ({n}), got {len(seeds)}")
        kept = self._rngs if len(self._rngs) == n else [None] * n
        return [np.random.default_rng(s) if s is not None
                else kept[i] if kept[i] is not None else np.random.default_rng()
                for i, s in enumerate(seeds)]

    def _out(self, a: np.ndarray) -> np.ndarray:
        return a.copy() if self.copy else a

    def _new_episode(self, i: int) -> Episode:
        return self._start(i, self.sampler.sample(self._rngs[i]), self.episode_jobs)

    def _start(self, i: int, start: int, jobs: int) -> Episode:
        ep = Episode(self.prepared, start, jobs, self.backfill, self.fairness)
        self._base[i] = start
        return ep

    def _observe_all(self) -> None:
        episodes = self._episodes
        fill_observations(self._obs, self._mask, self._rows, self.features,
                          [ep.view for ep in episodes], self._base, self.need, self.cutoff,
                          [ep.users for ep in episodes] if self.fairness else None)


__all__ = ["VecPickJob"]
