"""RLScheduler's environment: at every decision the agent picks which waiting job starts next.

The environment is a Gymnasium view of one engine (spec rlscheduler.md sections 2-7)::

    env = PickJobEnv("lublin-1", metric="bsld", backfill="none")
    obs, info = env.reset(seed=0)                  # obs: (128, 8) float32, one row per job slot
    while True:
        slot = policy(obs, info["action_mask"])    # any slot whose mask is True
        obs, reward, terminated, truncated, info = env.step(slot)
        if terminated:
            break                                  # reward: -bsld of the window, 0 before

An episode is one window of `episode_jobs` consecutive jobs of the prepared trace, drawn like the
authors' code (start uniform in [episode_jobs, min(first, N) - episode_jobs - 1)), among those a
`window_filter` accepts if one is given (to the constructor, or for one episode with
``reset(options={"window_filter": f})``), or fixed with ``reset(options={"start": s, "jobs": n})``.
The slot -> job mapping of the current decision is `env.rows`; a step maps the slot to its row and
calls `engine.apply(row)`, so the engine's profile and backfilling decide what happens next,
exactly as for a heuristic.

The observation (8 features per job slot, 9 for fairness; padding and cut-off) is
`hpcsched.envs.observation`'s; `observe` gives the same for any engine's decision view.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hpcsched.envs.observation import (
    CUTOFFS,
    FAIR_FEATURES,
    FEATURES,
    TraceFeatures,
    UserScores,
    check_choice,
    fill_observations,
    observe,
    padding_row,
)
from hpcsched.sim.engine import Engine
from hpcsched.sim.factory import make_engine
from hpcsched.sim.profiles import Profile, check_backfill
from hpcsched.sim.run import Prepared, as_prepared
from hpcsched.workload.jobs import JobTable
from hpcsched.workload.windows import StartFilter, WindowSampler

#: metric -> (key of the engine's metrics dict, sign of the terminal reward)
METRICS: dict[str, tuple[str, float]] = {
    "bsld": ("bsld", -1.0),
    "wait": ("wait", -1.0),
    "turnaround": ("turnaround", -1.0),
    "slowdown": ("slowdown", -1.0),
    "utilization": ("utilization", 1.0),
    "fairness": ("max_user_bsld", -1.0),
}


def metric_key(metric: str) -> str:
    """The key of the engine's metrics that the environment's `metric` rewards."""
    return METRICS[check_choice("metric", metric, METRICS)][0]


class Episode:
    """One window being scheduled: its engine, where it sits in the trace, and (for the fairness
    variant) the per-user scores so far."""

    __slots__ = ("engine", "start", "jobs", "users", "view")

    def __init__(self, prepared: Prepared, start: int, jobs: int, backfill: str,
                 fairness: bool = False) -> None:
        window = prepared.jobs.window(start, jobs)
        self.engine: Engine = make_engine(window, prepared.cluster, prepared.profile, backfill)
        self.start = start
        self.jobs = jobs
        self.users = UserScores(window, self.engine.executed) if fairness else None
        self.view = self.engine.next_decision()  # the first decision: what the agent sees

    def apply(self, row: int) -> bool:
        """Pick `row` and run to the next decision; False at the end of the episode."""
        self.engine.apply(row)
        self.view = self.engine.next_decision()
        return self.view is not None


def fairness_feature(fairness: bool | None, metric: str) -> bool:
    """Whether observations carry the per-user feature: as asked, else with the fairness metric."""
    if fairness is None:
        return metric == "fairness"
    if not isinstance(fairness, (bool, np.bool_)):
        raise TypeError(f"fairness must be True, False or None (the default: on with "
                        f"metric='fairness'), not {fairness!r}")
    return bool(fairness)


def episode_reward(metrics: Mapping[str, Any], metric: str) -> float:
    key, sign = METRICS[metric]
    return sign * float(metrics[key])


class MaskedSampling:
    """A space whose `sample()` without a mask or probabilities draws among the actions valid now
    (`_masks()`, the live env's), so that random agents (and gymnasium's checker) never pick an
    invalid one; the mask source is never pickled with the space."""

    _masks: Callable[[], np.ndarray] | None = None

    def sample(self, mask=None, probability=None):
        if mask is None and probability is None and self._masks is not None:
            valid = self._masks().astype(np.int8)
            mask = tuple(valid) if valid.ndim == 2 else valid  # MultiDiscrete: one per env
        return super().sample(mask=mask, probability=probability)

    def __getstate__(self):
        state = dict(super().__getstate__() if hasattr(super(), "__getstate__") else self.__dict__)
        state["_masks"] = None
        return state


class SlotSpace(MaskedSampling, spaces.Discrete):
    """Discrete(slots), sampled among the valid slots of the current decision."""

    def __init__(self, n: int, masks: Callable[[], np.ndarray] | None = None, seed=None) -> None:
        super().__init__(n, seed=seed)
        self._masks = masks


class Episodes:
    """N PickJob episodes of one prepared trace and the buffers their observations are built in:
    what `PickJobEnv` (N = 1) and `vec.VecPickJob` share; all N share the trace's tables.

    Args (after `num_envs`, `PickJobEnv`'s and `VecPickJob`'s):
        trace: a bundled trace's short name, an SWF path, a raw JobTable or a `Prepared` trace.
        profile: the engine profile; default the Prepared's own, else "rlscheduler".
        backfill: "none", "easy", "conservative" or "schedgym".
        metric: the terminal reward: -bsld, -wait, -turnaround, -slowdown, +utilization, or
            "fairness": -(largest per-user mean bsld), with a 9th per-job feature.
        episode_jobs: jobs per window (256 in training, 1024 in the paper's tests).
        slots: visible job slots (128).
        cutoff: which jobs are visible when more than `slots` wait: "fcfs" or "interleave".
        first: windows are drawn from the first `first` jobs of the trace (None: all).
        window_filter: allowed window starts, a callable start -> bool or a collection.
        fairness: add the per-user fairness feature (9 features); default: with metric "fairness".
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
        window_filter: StartFilter | None = None,
        fairness: bool | None = None,
    ) -> None:
        if num_envs <= 0 or slots <= 0:
            raise ValueError(f"num_envs and slots must be positive, got {num_envs} and {slots}")
        self.num_envs = n = int(num_envs)
        self.prepared = as_prepared(trace, profile)
        self.backfill = check_backfill(backfill)
        self.metric = check_choice("metric", metric, METRICS)
        self.cutoff = check_choice("cutoff", cutoff, CUTOFFS)
        s = self.slots = int(slots)
        self.episode_jobs = int(episode_jobs)
        self.fairness = fairness_feature(fairness, metric)
        self.n_features = f = 9 if self.fairness else 8
        self.features = TraceFeatures(self.prepared.jobs, self.prepared.report.norm, f)
        self.need = self.prepared.cluster.nodes_needed(self.prepared.jobs.procs)
        # the constructor's windows; `sampler`: this reset's (its window_filter option)
        self.sampler = self._sampler = WindowSampler(len(self.prepared.jobs), self.episode_jobs,
                                                     first, window_filter)
        self.single_observation_space = spaces.Box(0.0, 1.0, (s, f), np.float32)
        self._obs = np.empty((n, s, f), dtype=np.float32)
        self._mask = np.zeros((n, s), dtype=bool)
        self._rows = np.full((n, s), -1, dtype=np.int64)
        self._base = np.zeros(n, dtype=np.int64)  # where each window starts in the trace
        # one decision is observed through fill_observations' own path for one
        self._out = (self._obs[0], self._mask[0], self._rows[0]) if n == 1 else (
            self._obs, self._mask, self._rows)
        self._episodes: list[Episode] = []
        self._rngs: list[np.random.Generator] = []

    @property
    def norm(self) -> dict[str, float]:
        """The trace's normalisation constants (what `observe` needs to see as these envs do)."""
        return self.prepared.report.norm

    @property
    def windows(self) -> list[tuple[int, int]]:
        """(start, jobs) of each env's current window."""
        return [(ep.start, ep.jobs) for ep in self._episodes]

    @property
    def engines(self) -> list[Engine]:
        return [ep.engine for ep in self._episodes]

    def _begin(self, rngs: list[np.random.Generator], options: Mapping[str, Any] | None) -> None:
        """Start an episode in every env, env i drawing its windows from rngs[i], and observe.
        Options: {"start": s, "jobs": n} fixes every env's first window, {"starts": [s0, ...],
        "jobs": n} each env's; {"window_filter": f} draws the windows of this reset and of the
        episodes that follow it through f instead of the constructor's `window_filter`."""
        options = dict(options or {})
        unknown = set(options) - {"start", "starts", "jobs", "window_filter"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; known: 'start', 'starts', "
                             f"'jobs', 'window_filter'")
        if "start" in options:
            if "starts" in options:
                raise ValueError("reset options 'start' and 'starts' exclude each other")
            options["starts"] = [options.pop("start")] * self.num_envs
        starts = options.get("starts")
        if starts is None and "jobs" in options:
            raise ValueError("reset option 'jobs' needs 'start' or 'starts' as well")
        if starts is not None and len(starts) != self.num_envs:
            raise ValueError(f"reset option 'starts' needs {self.num_envs} starts, "
                             f"got {len(starts)}")
        self.sampler = self._sampler.for_reset(options)
        self._rngs = rngs
        jobs = int(options.get("jobs", self.episode_jobs))
        self._episodes = [self._new_episode(i) if starts is None else
                          self._start(i, int(starts[i]), jobs) for i in range(self.num_envs)]
        self._observe()

    def _new_episode(self, i: int) -> Episode:
        return self._start(i, self.sampler.sample(self._rngs[i]), self.episode_jobs)

    def _start(self, i: int, start: int, jobs: int) -> Episode:
        n = len(self.prepared.jobs)
        if start < 0 or jobs <= 0 or start + jobs > n:
            raise ValueError(f"window [{start}, {start + jobs}) is outside the trace's {n} jobs")
        self._base[i] = start
        return Episode(self.prepared, start, jobs, self.backfill, self.fairness)

    def _observe(self) -> None:
        episodes = self._episodes
        fill_observations(*self._out, self.features, [ep.view for ep in episodes], self._base,
                          self.need, self.cutoff,
                          [ep.users for ep in episodes] if self.fairness else None)

    def _invalid(self, i: int, action: int) -> ValueError:
        """The error of env i's `action`, a slot out of range or one that holds no job."""
        where = f"env {i}: " if self.num_envs > 1 else ""
        why = (f"not a slot (0..{self.slots - 1})" if not 0 <= action < self.slots else
               "that slot holds no waiting job; pick a slot whose action mask is True")
        return ValueError(f"{where}invalid action {action}: {why}")


# -- the environment ------------------------------------------------------------------------------
class PickJobEnv(Episodes, gym.Env):
    """RLScheduler's environment (`hpcsched/PickJob-v0`); see the module docstring. Its arguments
    are `Episodes`' (trace, profile, backfill, metric, episode_jobs, slots, cutoff, first,
    window_filter, fairness)."""

    metadata = {"render_modes": []}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(1, *args, **kwargs)
        self.observation_space = self.single_observation_space
        self.action_space = SlotSpace(self.slots, self.action_masks)
        self._done = True

    # -- Gymnasium API ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """options: {"start": s, "jobs": n} (a fixed window) or {"window_filter": f} (the
        window of this episode drawn through f)."""
        super().reset(seed=seed)
        if options and {"start", "window_filter"} <= set(options):
            raise ValueError("reset options 'start' and 'window_filter' exclude each other: a "
                             "fixed window is not drawn")
        self._begin([self.np_random], options)
        self._done = False
        return self._obs[0].copy(), self._info()

    def step(self, action):
        if self._done:
            raise RuntimeError("the episode has ended (or never began): call reset() first")
        a = int(action)
        if not 0 <= a < self.slots or not self._mask[0, a]:
            raise self._invalid(0, a)
        ep = self._episodes[0]
        if not ep.apply(int(self._rows[0, a])):
            self._done = True
            metrics = ep.engine.result().metrics
            self._obs[0] = self.features.pad
            self._mask[0] = False
            self._rows[0] = -1
            info = self._info()
            info["metrics"] = metrics
            return self._obs[0].copy(), episode_reward(metrics, self.metric), True, False, info
        self._observe()
        return self._obs[0].copy(), 0.0, False, False, self._info()

    def action_masks(self) -> np.ndarray:
        """The valid slots of the current decision (sb3-contrib's MaskablePPO reads this)."""
        return self._mask[0].copy()

    # -- inspection ------------------------------------------------------------------------------
    @property
    def rows(self) -> np.ndarray:
        """The row of the current window's job table in each slot (-1: empty slot)."""
        return self._rows[0].copy()

    @property
    def engine(self) -> Engine | None:
        return self._episodes[0].engine if self._episodes else None

    def _info(self) -> dict[str, Any]:
        ep = self._episodes[0]
        return {"action_mask": self._mask[0].copy(), "window": (ep.start, ep.jobs)}


__all__ = [
    "CUTOFFS", "FAIR_FEATURES", "FEATURES", "METRICS", "Episode", "Episodes", "PickJobEnv",
    "MaskedSampling", "SlotSpace", "TraceFeatures", "UserScores",
    "episode_reward", "fairness_feature", "metric_key", "observe", "padding_row",
]
