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
from functools import lru_cache
from typing import Any, Callable, Collection, Mapping

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hpcsched.envs.observation import (
    CUTOFFS,
    FAIR_FEATURES,
    FEATURES,
    TraceFeatures,
    UserScores,
    check_cutoff,
    fill_observations,
    observe,
    padding_row,
)
from hpcsched.sim.engine import Engine
from hpcsched.sim.factory import make_engine
from hpcsched.sim.profiles import Profile, check_backfill
from hpcsched.sim.run import Prepared, prepare
from hpcsched.workload.jobs import JobTable

#: metric -> (key of the engine's metrics dict, sign of the terminal reward)
METRICS: dict[str, tuple[str, float]] = {
    "bsld": ("bsld", -1.0),
    "wait": ("wait", -1.0),
    "turnaround": ("turnaround", -1.0),
    "slowdown": ("slowdown", -1.0),
    "utilization": ("utilization", 1.0),
    "fairness": ("max_user_bsld", -1.0),
}


def check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of: {', '.join(METRICS)}")
    return metric


# -- traces and windows ---------------------------------------------------------------------------
@lru_cache(maxsize=8)
def _prepare_named(name: str, profile: str) -> Prepared:
    return prepare(name, profile)


def as_prepared(trace: str | os.PathLike | JobTable | Prepared,
                profile: str | Profile | None = None) -> Prepared:
    """`trace` prepared under `profile`: a Prepared is taken as it is (its own profile; a different
    `profile` is an error), anything else goes through `prepare` (default profile "rlscheduler").
    Bundled traces by short name are prepared once per process."""
    if isinstance(trace, Prepared):
        if profile is not None:
            name = profile.name if isinstance(profile, Profile) else profile
            if name != trace.profile.name:
                raise ValueError(
                    f"the trace was prepared under the {trace.profile.name!r} profile, not "
                    f"{name!r}; prepare it again or leave profile out"
                )
        return trace
    profile = "rlscheduler" if profile is None else profile
    if isinstance(trace, str) and isinstance(profile, str) and not os.path.exists(
            os.path.expanduser(trace)):
        return _prepare_named(trace, profile)
    return prepare(os.fspath(trace) if isinstance(trace, os.PathLike) else trace, profile)


WindowFilter = Callable[[int], bool] | Collection[int]


class WindowSampler:
    """Window starts as the authors' code draws them: uniform in
    [length, min(first, N) - length - 1) (numpy's `integers`, high excluded).

    `window_filter` keeps only some starts (trajectory filtering): a callable start -> bool is
    rejection-sampled; a collection of allowed starts is sampled uniformly among its members in
    that range (the same distribution, without retries)."""

    def __init__(self, n_jobs: int, length: int, first: int | None = 10000,
                 window_filter: WindowFilter | None = None, max_tries: int = 100_000) -> None:
        if length <= 0:
            raise ValueError(f"episode_jobs must be positive, got {length}")
        limit = n_jobs if first is None else min(first, n_jobs)
        self.low, self.high = length, limit - length - 1
        if self.high <= self.low:
            raise ValueError(
                f"windows of {length} jobs cannot be drawn from {limit} jobs: starts are drawn "
                f"from [{self.low}, {self.high}) as in RLScheduler's code, which needs at least "
                f"{2 * length + 2} jobs; use fewer episode_jobs or fixed windows "
                f"(reset(options={{'start': ...}}))"
            )
        self.n_jobs, self.length, self.first, self.max_tries = n_jobs, length, first, max_tries
        self.accept: Callable[[int], bool] | None = None
        self.allowed: np.ndarray | None = None
        if window_filter is not None:
            if callable(window_filter):
                self.accept = window_filter
            else:
                allowed = np.unique(np.fromiter((int(s) for s in window_filter), dtype=np.int64))
                allowed = allowed[(allowed >= self.low) & (allowed < self.high)]
                if allowed.size == 0:
                    raise ValueError(
                        f"window_filter allows no start in [{self.low}, {self.high})")
                self.allowed = allowed

    @property
    def filtered(self) -> bool:
        return self.accept is not None or self.allowed is not None

    def for_reset(self, options: Mapping[str, Any]) -> "WindowSampler":
        """The sampler of a reset with these options: one drawing through its "window_filter",
        if it names one (None: every window), instead of this one's."""
        if "window_filter" not in options:
            return self
        return WindowSampler(self.n_jobs, self.length, self.first, options["window_filter"],
                             self.max_tries)

    def sample(self, rng: np.random.Generator) -> int:
        if self.allowed is not None:
            return int(self.allowed[rng.integers(len(self.allowed))])
        for _ in range(self.max_tries):
            start = int(rng.integers(self.low, self.high))
            if self.accept is None or self.accept(start):
                return start
        raise RuntimeError(f"window_filter accepted none of {self.max_tries} random starts")


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


def setup(env, trace, profile, backfill: str, metric: str, episode_jobs: int, slots: int,
          cutoff: str, first: int | None, window_filter, fairness: bool | None) -> None:
    """The settings and per-trace tables of a PickJob environment, one or batched (their
    arguments), checked and kept on `env`."""
    if slots <= 0:
        raise ValueError(f"slots must be positive, got {slots}")
    env.prepared = as_prepared(trace, profile)
    env.backfill = check_backfill(backfill)
    env.metric = check_metric(metric)
    env.cutoff = check_cutoff(cutoff)
    env.slots, env.episode_jobs = int(slots), int(episode_jobs)
    env.fairness = fairness_feature(fairness, metric)
    env.n_features = 9 if env.fairness else 8
    env.features = TraceFeatures(env.prepared.jobs, env.prepared.report.norm, env.n_features)
    env.need = env.prepared.cluster.nodes_needed(env.prepared.jobs.procs)
    env.sampler = WindowSampler(len(env.prepared.jobs), env.episode_jobs, first, window_filter)


class SlotSpace(spaces.Discrete):
    """Discrete(slots) whose `sample()` without a mask draws among the valid slots of the current
    decision, so that random agents (and gymnasium's checker) never pick an empty slot. With an
    explicit mask or probabilities it is a plain Discrete."""

    def __init__(self, n: int, masks: Callable[[], np.ndarray] | None = None, seed=None) -> None:
        super().__init__(n, seed=seed)
        self._masks = masks

    def sample(self, mask=None, probability=None):
        if mask is None and probability is None and self._masks is not None:
            mask = self._masks().astype(np.int8)
        return super().sample(mask=mask, probability=probability)

    def __getstate__(self):
        # the mask source is the live env: never pickle it with the space
        state = super().__getstate__() if hasattr(super(), "__getstate__") else self.__dict__
        state = dict(state)
        state["_masks"] = None
        return state


# -- the environment ------------------------------------------------------------------------------
class PickJobEnv(gym.Env):
    """RLScheduler's environment (`hpcsched/PickJob-v0`); see the module docstring.

    Args:
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

    metadata = {"render_modes": []}

    def __init__(
        self,
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
    ) -> None:
        super().__init__()
        setup(self, trace, profile, backfill, metric, episode_jobs, slots, cutoff, first,
              window_filter, fairness)
        self.observation_space = spaces.Box(0.0, 1.0, (self.slots, self.n_features), np.float32)
        self.action_space = SlotSpace(self.slots, self.action_masks)
        self._obs = np.empty((self.slots, self.n_features), dtype=np.float32)
        self._mask = np.zeros(self.slots, dtype=bool)
        self._rows = np.full(self.slots, -1, dtype=np.int64)
        self._start = np.zeros(1, dtype=np.int64)  # where the window starts, for fill_observations
        self.episode: Episode | None = None
        self._done = True

    # -- Gymnasium API ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        start, jobs = self._window(options or {})
        self.episode = Episode(self.prepared, start, jobs, self.backfill, self.fairness)
        self._done = False
        self._observe()
        return self._obs.copy(), self._info()

    def step(self, action):
        if self._done:
            raise RuntimeError("the episode has ended (or never began): call reset() first")
        a = int(action)
        if not 0 <= a < self.slots or not self._mask[a]:
            raise ValueError(
                f"invalid action {a}: slot {a} holds no waiting job (valid slots: 0..."
                f"{int(self._mask.sum()) - 1}); pick a slot whose action mask is True"
            )
        ep = self.episode
        if not ep.apply(int(self._rows[a])):
            self._done = True
            metrics = ep.engine.result().metrics
            self._obs[:] = self.features.pad
            self._mask[:] = False
            self._rows[:] = -1
            info = self._info()
            info["metrics"] = metrics
            return self._obs.copy(), episode_reward(metrics, self.metric), True, False, info
        self._observe()
        return self._obs.copy(), 0.0, False, False, self._info()

    def action_masks(self) -> np.ndarray:
        """The valid slots of the current decision (sb3-contrib's MaskablePPO reads this)."""
        return self._mask.copy()

    # -- inspection ------------------------------------------------------------------------------
    @property
    def rows(self) -> np.ndarray:
        """The row of the current window's job table in each slot (-1: empty slot)."""
        return self._rows.copy()

    @property
    def norm(self) -> dict[str, float]:
        """The trace's normalisation constants (what `observe` needs to see as this env does)."""
        return self.prepared.report.norm

    @property
    def engine(self) -> Engine | None:
        return None if self.episode is None else self.episode.engine

    # -- internals -------------------------------------------------------------------------------
    def _window(self, options: Mapping[str, Any]) -> tuple[int, int]:
        unknown = set(options) - {"start", "jobs", "window_filter"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; known: 'start', 'jobs', "
                             f"'window_filter'")
        if "start" not in options:
            if "jobs" in options:
                raise ValueError("reset option 'jobs' needs 'start' as well")
            return self.sampler.for_reset(options).sample(self.np_random), self.episode_jobs
        if "window_filter" in options:
            raise ValueError("reset options 'start' and 'window_filter' exclude each other: a "
                             "fixed window is not drawn")
        start = int(options["start"])
        jobs = int(options.get("jobs", self.episode_jobs))
        n = len(self.prepared.jobs)
        if start < 0 or jobs <= 0 or start + jobs > n:
            raise ValueError(f"window [{start}, {start + jobs}) is outside the trace's {n} jobs")
        return start, jobs

    def _observe(self) -> None:
        ep = self.episode
        self._start[0] = ep.start
        fill_observations(self._obs, self._mask, self._rows, self.features, [ep.view],
                          self._start, self.need, self.cutoff,
                          None if ep.users is None else [ep.users])

    def _info(self) -> dict[str, Any]:
        ep = self.episode
        return {"action_mask": self._mask.copy(), "window": (ep.start, ep.jobs)}


__all__ = [
    "CUTOFFS", "FAIR_FEATURES", "FEATURES", "METRICS", "Episode", "PickJobEnv", "SlotSpace",
    "TraceFeatures", "UserScores", "WindowSampler", "as_prepared", "check_metric",
    "episode_reward", "fairness_feature", "observe", "padding_row",
]
