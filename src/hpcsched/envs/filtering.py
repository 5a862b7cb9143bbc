"""Trajectory filtering (RLScheduler, spec rlscheduler.md section 7).

On high-variance traces most training windows are trivially easy (SJF's bsld is about 1) and a few are
extreme; both teach the agent little. So:

1. schedule K randomly sampled training windows with SJF and take the median and the mean of the
   target metric;
2. the band is R = (median, 2 x mean) (the paper's rule; the reference code instead hard-codes
   (10, 150));
3. stage 1 trains only on windows whose SJF metric lies strictly inside R;
4. stage 2 trains on every window (no filter).

`WindowFilter` is the callable the environment takes as `window_filter` (in its constructor, or as a
reset option: `envs.wrappers.FilterStages` switches the stages that way): ``f(start) -> bool``. It
runs SJF on a window the first time it is asked about it and remembers the score.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hpcsched.envs.observation import check_choice
from hpcsched.envs.pick_job import METRICS, metric_key
from hpcsched.policies.priority import get_policy
from hpcsched.sim.run import Prepared, simulate
from hpcsched.workload.windows import WindowSampler

#: the reference code's band for bsld (HPCSimPickJobs.py, `10 < SJF_score < 150`)
FIXED_BAND = (10.0, 150.0)
RULES = ("paper", "fixed")


def band(scores: np.ndarray | list[float], rule: str = "paper") -> tuple[float, float]:
    """The filter band from SJF scores: (median, 2 x mean) under the paper's rule, (10, 150) under
    the code's ("fixed", whatever the scores)."""
    if rule == "fixed":
        return FIXED_BAND
    if rule != "paper":
        raise ValueError(f"unknown filter rule {rule!r}; choose one of: {', '.join(RULES)}")
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        raise ValueError("band: no SJF scores to take the median and mean of")
    return float(np.median(scores)), float(2.0 * np.mean(scores))


def heuristic_score(prepared: Prepared, start: int, jobs: int, backfill: str = "none",
                    metric: str = "bsld", policy: str = "sjf") -> float:
    """A heuristic's metric on the window of `jobs` jobs from `start`."""
    result = simulate(prepared, get_policy(policy), backfill=backfill, start=start, jobs=jobs)
    return float(result.metrics[metric_key(metric)])


def sjf_score(prepared: Prepared, start: int, episode_jobs: int, backfill: str = "none",
              metric: str = "bsld") -> float:
    """SJF's metric on the window of `episode_jobs` jobs from `start`."""
    return heuristic_score(prepared, start, episode_jobs, backfill, metric, "sjf")


class WindowFilter:
    """``f(start) -> bool``: whether SJF's metric on the window from `start` lies strictly inside
    `band`. Scores are computed on demand and cached."""

    def __init__(self, prepared: Prepared, band: tuple[float, float], *, episode_jobs: int = 256,
                 backfill: str = "none", metric: str = "bsld",
                 scores: dict[int, float] | None = None, rule: str = ""):
        low, high = band
        if not low < high:
            raise ValueError(f"an empty filter band: ({low}, {high})")
        self.prepared = prepared
        self.band = (float(low), float(high))
        self.episode_jobs = episode_jobs
        self.backfill = backfill
        self.metric = check_choice("metric", metric, METRICS)
        self.scores: dict[int, float] = dict(scores or {})
        self.rule = rule
        self.stats: dict[str, float] = {}

    def score(self, start: int) -> float:
        start = int(start)
        if start not in self.scores:
            self.scores[start] = sjf_score(self.prepared, start, self.episode_jobs, self.backfill,
                                           self.metric)
        return self.scores[start]

    def __call__(self, start: int) -> bool:
        low, high = self.band
        return low < self.score(start) < high

    def info(self) -> dict[str, Any]:
        """What a checkpoint keeps of the filter: the band and the statistics it came from."""
        return {"band": self.band, "rule": self.rule, "metric": self.metric, **self.stats}


def make_window_filter(prepared: Prepared, *, rule: str = "paper", windows: int = 1000,
                       episode_jobs: int = 256, backfill: str = "none", metric: str = "bsld",
                       first: int | None = 10000, seed: int = 0) -> WindowFilter:
    """Stage 1's filter: SJF on `windows` training windows, drawn as the environment draws them
    (from the first `first` jobs), gives the median and mean of the metric, and the band of `rule`
    ("paper" or "fixed"; the fixed band needs no statistics, but they are still reported)."""
    sampler = WindowSampler(len(prepared.jobs), episode_jobs, first)
    rng = np.random.default_rng(seed)
    starts = [sampler.sample(rng) for _ in range(windows)]
    scores = {}
    for s in starts:
        if s not in scores:
            scores[s] = sjf_score(prepared, s, episode_jobs, backfill, metric)
    values = np.array([scores[s] for s in starts])
    f = WindowFilter(prepared, band(values, rule), episode_jobs=episode_jobs, backfill=backfill,
                     metric=metric, scores=scores, rule=rule)
    inside = [f(s) for s in starts]
    f.stats = {"windows": len(starts), "median": float(np.median(values)),
               "mean": float(np.mean(values)), "kept_fraction": float(np.mean(inside))}
    return f


__all__ = ["FIXED_BAND", "RULES", "WindowFilter", "band", "make_window_filter",
           "heuristic_score", "sjf_score"]
