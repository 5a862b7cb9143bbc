"""Training aids that are neither the environment nor the algorithm, as wrappers around a batched
environment (the contract of `envs.vec.VecPickJob` that `agents.rollout.collect` reads:
``reset(seed, options) -> (obs, mask)``, ``step(actions) -> (obs, mask, reward, done, infos)``,
a finished episode replaced at once).

- `RelativeReward`: an episode's terminal reward becomes its improvement over a heuristic on the
  same window, in [-1, 1] (`relative_reward`);
- `FilterStages`: RLScheduler's trajectory filtering (spec rlscheduler.md section 7) as a
  reset-time choice of windows: while `active()` holds, each reset asks for the windows that the
  filter accepts (`envs.filtering`), afterwards for any window.

    env = VecPickJob(100, "lublin-1", metric="bsld")
    env = FilterStages(RelativeReward(env, "sjf"), make_filter, active=lambda: model.epoch < 10)

A wrapper hands every other attribute on to the environment it wraps (`rows`, `engines`, `norm`,
`rollout_info`, ...); `unwrapped` is the innermost one.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from hpcsched.envs.pick_job import METRICS


def relative_reward(value: float, base: float, sign: float) -> float:
    """The episode's improvement over a heuristic on the same window, in [-1, 1]:
    ``sign * (value - base) / (|value| + |base|)`` (sign -1 for metrics where lower is better, so
    beating the heuristic is positive; 0 when both are 0).

    Not in RLScheduler. Its reward, -metric, varies across windows far more than across decisions
    (a Lublin-1 window's bsld ranges from 1 to 10^4 under any policy), so most of an epoch's
    advantage signal says which windows were hard. Measured against the heuristic on the same
    window, the signal says whether the policy scheduled that window well."""
    total = abs(value) + abs(base)
    return 0.0 if total == 0 else sign * (value - base) / total


class VecWrapper:
    """A batched environment around another: every call and attribute goes through unchanged."""

    def __init__(self, env) -> None:
        self.env = env

    def reset(self, seed=None, options: dict[str, Any] | None = None):
        if options is None:  # environments without reset options keep working
            return self.env.reset(seed=seed)
        return self.env.reset(seed=seed, options=options)

    def step(self, actions):
        return self.env.step(actions)

    @property
    def unwrapped(self):
        return getattr(self.env, "unwrapped", self.env)

    def __getattr__(self, name: str):
        if name == "env":  # not set yet (copying, unpickling): no endless lookup
            raise AttributeError(name)
        return getattr(self.env, name)


class RelativeReward(VecWrapper):
    """Each finished episode's reward is `relative_reward` of its metric against `heuristic`'s on
    the same window (`infos[i]["window"]`), with the environment's trace, backfilling and metric.
    The heuristic's runs are remembered by window."""

    def __init__(self, env, heuristic: str) -> None:
        from hpcsched.policies.priority import get_policy

        super().__init__(env)
        get_policy(heuristic)  # an unknown name fails here, not after the first episode
        self.heuristic = heuristic
        self.key, self.sign = METRICS[env.metric]
        self.scores: dict[tuple[int, int], float] = {}

    def score(self, window: tuple[int, int]) -> float:
        """The heuristic's metric on the window (start, jobs)."""
        from hpcsched.envs.filtering import heuristic_score

        if window not in self.scores:
            self.scores[window] = heuristic_score(self.env.prepared, window[0], window[1],
                                                  self.env.backfill, self.env.metric,
                                                  self.heuristic)
        return self.scores[window]

    def step(self, actions):
        obs, mask, reward, done, infos = self.env.step(actions)
        for i in np.flatnonzero(done):
            window = infos[i].get("window")
            if window is None:
                raise ValueError("RelativeReward needs environments that report each episode's "
                                 "window (infos['window'])")
            reward[i] = relative_reward(float(infos[i]["metrics"][self.key]), self.score(window),
                                        self.sign)
        return obs, mask, reward, done, infos


class FilterStages(VecWrapper):
    """Windows drawn through a filter while `active()` holds (stage 1), through none afterwards
    (stage 2): a reset option (`window_filter`) of the environment, chosen at every reset.
    `make_filter()` builds the filter the first time stage 1 needs it (it runs a heuristic on many
    windows)."""

    def __init__(self, env, make_filter: Callable[[], Callable[[int], bool]],
                 active: Callable[[], bool]) -> None:
        super().__init__(env)
        self.make_filter = make_filter
        self.active = active
        self.window_filter: Callable[[int], bool] | None = None

    def reset(self, seed=None, options: dict[str, Any] | None = None):
        if not self.active():
            return super().reset(seed=seed, options=options)
        if self.window_filter is None:
            self.window_filter = self.make_filter()
        return super().reset(seed=seed, options={"window_filter": self.window_filter,
                                                 **(options or {})})


__all__ = ["FilterStages", "RelativeReward", "VecWrapper", "relative_reward"]
