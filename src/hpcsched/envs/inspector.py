"""SchedInspector's environment: a base heuristic proposes its top job, the agent accepts or rejects.

    env = InspectEnv("lublin-1", base="sjf", metric="bsld")
    obs, info = env.reset(seed=0)          # obs: 7 features of the proposed job and the system
    while True:
        action = 0                         # 0 accept, 1 reject (allowed where info["action_mask"][1])
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated:
            break                          # reward: (base - inspected) / base, 0 before

Semantics (spec schedinspector.md sections 2-6), on a commit engine (`schedinspector` profile:
SchedGym's event loop, the authors' loader and SJF, utilization over the makespan; or
`schedinspector-paper`, the same loop on the users' requested times):

- At every decision the base heuristic ranks the whole queue and proposes its first job
  (`Engine.choose`, exactly as a heuristic run does).
- Accept: `Pick(row)`; the job is committed and starts as soon as it fits (with
  backfilling around it if that is on), then the engine runs to the next non-empty queue.
- Reject: the job stays queued, its rejection count goes up by one, and time passes to the next
  scheduling point: `max_interval` (600 s) later if that comes before the next arrival and the next
  completion, else the earlier of those two events: `Wait(until=now + 600)` under commit semantics.
- A job rejected `max_rejections` (72) times can only be accepted: reject is masked. Reject is also
  masked when nothing can happen while waiting (no running job, no arrival left: the authors' code
  loops there without time passing until the cap). A masked reject sent anyway is carried out as
  an accept and counted in `info["forced_accepts"]`.
- The episode (`episode_jobs` consecutive jobs) ends when its last job has started; the reward, 0
  before, is then the improvement over the pure base heuristic on the same window and backfilling:
  ``(base - inspected) / max(base, 1)`` ("paper"; for utilization, higher being better, the sign
  flips), or the code's ``/ max(base, inspected, 1)`` ("code"), which stays in [-1, 1].

Features: "code" (7, the authors' code) or "paper" (8: the queue delay in the form of the target
metric and the backfilling contribution); see `envs.inspection.Inspection.observe`. Requested
times are the profile's: under `schedinspector` (the authors' code) every request is the job's run
time; under `schedinspector-paper` they are the users' estimates, and ``estimate="perfect"``
replaces them by the run times there too (`sim.run.estimated_trace`).

Training windows come from the first `train_fraction` (20 %) of the trace; the paper's test windows
from the rest (`workload.windows.evaluation_windows`).
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hpcsched.envs.inspection import FEATURE_SETS, MAX_INTERVAL, MAX_REJECTIONS, METRICS, Inspection
from hpcsched.envs.observation import check_choice
from hpcsched.sim.engine import Policy
from hpcsched.sim.factory import make_engine
from hpcsched.sim.run import Prepared, estimated_trace, simulate
from hpcsched.workload.jobs import JobTable
from hpcsched.workload.windows import TRAIN_FRACTION, split_point

REWARDS = ("paper", "code")


def improvement(inspected: float, base: float, sign: float, reward: str = "paper") -> float:
    """The terminal reward: the relative improvement of the inspected run over the base run.
    "paper": (base - inspected) / max(base, 1); "code": / max(base, inspected, 1). `sign` is -1
    for metrics where lower is better, +1 for utilization (the difference is then negated)."""
    if sign < 0:
        diff, floor = base - inspected, 1.0
    else:  # utilization, a fraction: no floor of 1
        diff, floor = inspected - base, 0.0
    denom = max(base, floor) if reward == "paper" else max(base, inspected, floor)
    return diff / denom if denom > 0 else 0.0


# -- the environment ------------------------------------------------------------------------------
class InspectEnv(gym.Env):
    """`hpcsched/Inspect-v0`: accept (0) or reject (1) the base heuristic's proposed job."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        trace: str | os.PathLike | JobTable | Prepared = "lublin-1",
        base: str | Policy = "sjf",
        metric: str = "bsld",
        backfill: str = "none",
        episode_jobs: int = 128,
        features: str = "code",
        estimate: str | None = None,
        reward: str = "paper",
        train_fraction: float = TRAIN_FRACTION,
        max_interval: float = MAX_INTERVAL,
        max_rejections: int = MAX_REJECTIONS,
        profile: str = "schedinspector",
    ):
        from hpcsched.policies.priority import get_policy
        from hpcsched.sim.profiles import check_backfill

        self.prepared = estimated_trace(trace, estimate, profile)
        self.base = get_policy(base, profile=self.prepared.profile) if isinstance(base, str) \
            else base
        self.metric = check_choice("metric", metric, METRICS)
        self.backfill = check_backfill(backfill)
        self.features = check_choice("feature set", features, FEATURE_SETS)
        self.reward_form = check_choice("reward", reward, REWARDS)
        self.episode_jobs = int(episode_jobs)
        self.max_interval = max_interval
        self.max_rejections = max_rejections
        self.norm = dict(self.prepared.report.norm)
        cut = split_point(len(self.prepared.jobs), train_fraction)
        if cut < self.episode_jobs:
            raise ValueError(f"{self.prepared.name}: the training part ({cut} jobs) is shorter "
                             f"than one episode of {self.episode_jobs} jobs")
        self.train_last_start = cut - self.episode_jobs
        self.observation_space = spaces.Box(0.0, 1.0, (FEATURE_SETS[features],), np.float32)
        self.action_space = spaces.Discrete(2)
        self._base_scores: dict[tuple[int, int], dict] = {}
        self.inspection: Inspection | None = None
        self.engine = None
        self.window: tuple[int, int] | None = None

    def base_metrics(self, start: int, jobs: int) -> dict[str, Any]:
        """The pure base heuristic's metrics on a window (cached)."""
        key = (start, jobs)
        if key not in self._base_scores:
            self._base_scores[key] = simulate(self.prepared, self.base, backfill=self.backfill,
                                              start=start, jobs=jobs).metrics
        return self._base_scores[key]

    def action_masks(self) -> np.ndarray:
        return self.inspection.mask() if self.inspection and self.inspection.row is not None \
            else np.array([True, False])

    def _propose(self) -> int | None:
        """Run to the next decision; the base heuristic proposes its top job (None at the end)."""
        view = self.engine.next_decision()
        row = None if view is None else int(self.engine.choose(self.base, view))
        self.inspection.propose(view, row)
        return row

    def _info(self) -> dict[str, Any]:
        return {"action_mask": self.action_masks(), "window": self.window}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        jobs = int(options.get("jobs", self.episode_jobs))
        if "start" in options:
            start = int(options["start"])
        else:
            start = int(self.np_random.integers(0, self.train_last_start, endpoint=True))
        self.window = (start, jobs)
        self.engine = make_engine(self.prepared.jobs.window(start, jobs), self.prepared.cluster,
                                  self.prepared.profile, self.backfill)
        self.inspection = Inspection(self.norm, jobs, features=self.features,
                                     metric=self.metric, max_interval=self.max_interval,
                                     max_rejections=self.max_rejections)
        self._propose()  # a window's first job arrives at once: never None here
        Inspection.check(self.inspection.view)
        return self.inspection.observe(), self._info()

    def step(self, action):
        if self.inspection is None or self.inspection.row is None:
            raise RuntimeError("step() before reset() or after the end of the episode")
        insp = self.inspection
        self.engine.apply(insp.decision(int(action)))
        if self._propose() is None:
            key, sign = METRICS[self.metric]
            metrics = self.engine.result().metrics
            base = self.base_metrics(*self.window)
            reward = improvement(metrics[key], base[key], sign, self.reward_form)
            metrics.update(insp.summary())
            metrics.update({f"base_{k}": base[k] for k in ("bsld", "wait", "utilization")})
            metrics["improvement"] = improvement(metrics[key], base[key], sign, "paper")
            info = {"action_mask": np.array([True, False]), "metrics": metrics,
                    "window": self.window, "forced_accepts": insp.forced_accepts}
            return np.zeros(self.observation_space.shape, np.float32), float(reward), True, \
                False, info
        return insp.observe(), 0.0, False, False, self._info()


__all__ = ["InspectEnv", "REWARDS", "improvement"]
