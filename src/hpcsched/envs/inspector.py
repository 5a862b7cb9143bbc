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
metric and the backfilling contribution); see `observe`. Requested times are the profile's: under
`schedinspector` (the authors' code) every request is the job's run time; under
`schedinspector-paper` they are the users' estimates, and ``estimate="perfect"`` replaces them by
the run times there too.

Training windows come from the first `train_fraction` (20 %) of the trace; the paper's test windows
from the rest (`workload.windows.evaluation_windows`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hpcsched.envs.observation import check_choice
from hpcsched.envs.pick_job import METRICS as PICK_METRICS
from hpcsched.sim.decisions import Pick, Wait
from hpcsched.sim.engine import Policy
from hpcsched.sim.factory import make_engine
from hpcsched.sim.run import Prepared, as_prepared, simulate
from hpcsched.workload.jobs import JobTable
from hpcsched.workload.windows import TRAIN_FRACTION, split_point

ACCEPT, REJECT = 0, 1
MAX_INTERVAL = 600.0  # seconds a rejection waits at most (the paper's MAX_INTERVAL)
MAX_REJECTIONS = 72  # per job: 72 x 600 s = 12 h at most
FEATURE_SETS = {"code": 7, "paper": 8}
ESTIMATES = ("user", "perfect")
REWARDS = ("paper", "code")

#: metric -> (key of the engine's metrics, sign: -1 where lower is better): pick_job's three
METRICS = {k: PICK_METRICS[k] for k in ("bsld", "wait", "utilization")}

_HALF_DAY = 43200.0  # the code's normaliser of waiting time and rejected time (12 h)
_QUEUE_SCALE = 128.0  # the code's queue-delay normaliser is (600 / 10) x 128
_TOP = 1.0 - 1e-5  # the code caps every feature just below 1


# -- traces ---------------------------------------------------------------------------------------
def needed_estimate(estimate: str | None, profile) -> str | None:
    """What an `estimate` ("perfect", "user", None) leaves to do under `profile`: None where the
    profile's cleaning gives every job its run time as its request already (schedinspector's, as
    SchedInspector's code does), under which the users' requests ("user") cannot be had."""
    from hpcsched.sim.profiles import get_profile

    if estimate is not None:
        check_choice("estimate", estimate, ESTIMATES)
    prof = get_profile(profile)
    if prof.cleaning != "schedinspector":
        return estimate
    if estimate == "user":
        raise ValueError(f"estimate 'user': the {prof.name} profile schedules every job with its "
                         f"run time as its request, as SchedInspector's code does; for the "
                         f"users' requested times use the schedinspector-paper profile")
    return None


def inspector_trace(trace: str | os.PathLike | JobTable | Prepared, estimate: str | None = None,
                    profile: str = "schedinspector") -> Prepared:
    """The trace prepared for inspection under `profile` (its cleaning decides the requested
    times: the schedinspector profile's loader sets them to the run times). ``estimate="perfect"``
    replaces every requested time by the run time under any profile; ``"user"`` asks for the
    trace's own requests, which a profile that replaces them cannot give (an error). Named traces
    are prepared once per process (`sim.run.as_prepared`)."""
    given = isinstance(trace, Prepared)
    prof = trace.profile if given else profile
    estimate = needed_estimate(estimate, prof)
    prepared = as_prepared(trace, None if given else profile)
    if estimate == "perfect":
        prepared = dataclasses.replace(
            prepared, jobs=prepared.jobs.with_columns(req_time=prepared.jobs.run_time.copy()))
    return prepared


# -- one inspected run ----------------------------------------------------------------------------
class Inspection:
    """The inspector's side of one run under a base heuristic: the proposed job, the rejection
    counts, and what the inspector observes, all read from the engine's view. The environment and
    the `inspect:` policy share it, so that training and evaluation see the same thing."""

    def __init__(self, norm: dict[str, float], jobs: int, *, features: str = "code",
                 metric: str = "bsld", max_interval: float = MAX_INTERVAL,
                 max_rejections: int = MAX_REJECTIONS):
        self.features = check_choice("feature set", features, FEATURE_SETS)
        self.metric = check_choice("metric", metric, METRICS)
        self.max_interval = float(max_interval)
        self.max_rejections = int(max_rejections)
        self.max_run_time = max(float(norm.get("max_run_time", 0.0)), 1.0)
        self.max_procs = max(float(norm.get("max_procs", 0.0)), 1.0)
        self.rejected = np.zeros(jobs, dtype=np.int64)  # rejections per job
        self.inspections = 0
        self.rejections = 0
        self.forced_accepts = 0
        self.view = None
        self.row: int | None = None  # the proposed job

    @staticmethod
    def check(view) -> None:
        if view.profile_loop != "commit":
            raise ValueError(f"the inspector needs commit semantics (the schedinspector, "
                             f"schedinspector-paper or rlscheduler profile), not the "
                             f"{view.profile!r} profile")

    def propose(self, view, row: int | None) -> None:
        """The decision at hand (None at the end of the run) and the base heuristic's pick."""
        self.view = view
        self.row = row

    def can_reject(self) -> bool:
        return bool(self.rejected[self.row] < self.max_rejections and self.view.can_wait)

    def mask(self) -> np.ndarray:
        return np.array([True, self.can_reject()])

    def decision(self, action: int):
        """The engine decision for the inspector's action on the proposed job: accept is the
        base's pick; reject lets time pass, `max_interval` at most (a masked reject is an accept,
        counted)."""
        self.inspections += 1
        if action == REJECT and self.can_reject():
            self.rejections += 1
            self.rejected[self.row] += 1
            return Wait(until=self.view.now + self.max_interval)
        if action == REJECT:
            self.forced_accepts += 1
        return Pick(self.row)

    def observe(self) -> np.ndarray:
        """The features of the proposed job and the system (the code's order):
        wait / 12 h, request / longest run time of the trace, processors / the trace's processors,
        free nodes / nodes, runnable now, rejections / cap, queue delay; the "paper" set adds the
        backfilling contribution. The queue delay is the cost of idling 600 s summed over the
        queue: 600 / max(r, 10) per job (bsld form, the code's, always under "code"; also for
        utilization) or 600 per job (wait form, "paper" set with the wait metric), scaled by
        (600 / 10) x 128 or 600 x 128."""
        v, row = self.view, self.row
        queue = v.queue
        need = int(v.nodes_needed[row])
        free = v.free_nodes
        req = v.jobs.req_time
        if self.features == "paper" and self.metric == "wait":
            delay = len(queue) / _QUEUE_SCALE
        else:
            delay = float(np.sum(self.max_interval / np.maximum(req[queue], 10.0)))
            delay /= self.max_interval / 10.0 * _QUEUE_SCALE
        out = [
            (v.now - v.jobs.submit[row]) / _HALF_DAY,
            req[row] / self.max_run_time,
            v.jobs.procs[row] / self.max_procs,
            free / v.total_nodes,
            _TOP if need <= free else 1e-5,
            min(self.rejected[row] / self.max_rejections, 1.0),
            delay,
        ]
        if self.features == "paper":
            out.append(self._backfill_contribution(queue, need) / _QUEUE_SCALE)
        obs = np.minimum(np.asarray(out, dtype=np.float32), np.float32(_TOP))
        obs[5] = min(self.rejected[row] / self.max_rejections, 1.0)  # the code lets this reach 1
        return obs

    def _backfill_contribution(self, queue: np.ndarray, need: int) -> int:
        """With backfilling on and the proposed job not fitting: how many other waiting jobs fit
        now and would end (by their request) before the proposed job's reservation."""
        v = self.view
        running = v.running
        if v.backfill == "none" or need <= v.free_nodes or not running.size:
            return 0
        from hpcsched.sim.backfill import schedgym_shadow

        est = v.estimated_end
        running = running[np.argsort(est[running], kind="stable")].tolist()
        shadow = schedgym_shadow(v.now, v.jobs.procs[self.row], v.free_nodes, running,
                                 est.tolist(), v.nodes_needed.tolist(), v.procs_per_node)
        others = queue[queue != self.row]
        fits = (v.nodes_needed[others] <= v.free_nodes) & (v.now + v.jobs.req_time[others] < shadow)
        return int(np.count_nonzero(fits))

    def summary(self) -> dict[str, float]:
        """Counts of the run, for the result's metrics."""
        return {
            "inspections": self.inspections,
            "rejections": self.rejections,
            "rejection_ratio": self.rejections / self.inspections if self.inspections else 0.0,
            "forced_accepts": self.forced_accepts,
        }


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

        self.prepared = inspector_trace(trace, estimate, profile)
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


class VecInspect:
    """`num_envs` InspectEnvs stepped together with auto-reset (the contract `rollout.collect`
    reads): ``reset(seed) -> (obs (N, F), mask (N, 2))``, ``step(actions) -> (obs, mask,
    reward, done, infos)``; a finished environment's reward and info are its episode's, and its
    observation is already the next episode's first."""

    def __init__(self, num_envs: int, **env_kwargs):
        first = InspectEnv(**env_kwargs)
        env_kwargs = dict(env_kwargs, trace=first.prepared)
        self.envs = [first] + [InspectEnv(**env_kwargs) for _ in range(num_envs - 1)]
        for env in self.envs[1:]:
            env._base_scores = first._base_scores  # one cache of base runs for all
        self.num_envs = num_envs
        self.norm = first.norm
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.final_obs = np.zeros(first.observation_space.shape, np.float32)  # InspectEnv's last

    @property
    def windows(self) -> list[tuple[int, int]]:
        return [env.window for env in self.envs]

    def reset(self, seed: int | Sequence[int | None] | None = None,
              options: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Reset every env: with seeds drawn from `seed` (an int), with `seed[i]` for env i (one
        per env), or without seeds (None: each env keeps its generator). `options` go to every
        env's reset."""
        n = self.num_envs
        seeds = ([None] * n if seed is None else
                 np.random.SeedSequence(seed).generate_state(n).tolist()
                 if isinstance(seed, (int, np.integer)) else list(seed))
        if len(seeds) != n:
            raise ValueError(f"reset needs one seed per env ({n}), got {len(seeds)}")
        out = [env.reset(seed=s, options=options) for env, s in zip(self.envs, seeds)]
        return (np.stack([o for o, _ in out]), np.stack([i["action_mask"] for _, i in out]))

    def step(self, actions: np.ndarray):
        obs, masks, rewards, dones, infos = [], [], [], [], []
        for env, a in zip(self.envs, np.asarray(actions).tolist()):
            o, r, done, _, info = env.step(a)
            if done:
                o, reset_info = env.reset()
                mask = reset_info["action_mask"]
            else:
                mask = info["action_mask"]
            obs.append(o)
            masks.append(mask)
            rewards.append(r)
            dones.append(done)
            infos.append(info)
        return (np.stack(obs), np.stack(masks), np.asarray(rewards, np.float64),
                np.asarray(dones, bool), infos)


__all__ = ["ACCEPT", "ESTIMATES", "FEATURE_SETS", "InspectEnv", "Inspection", "MAX_INTERVAL",
           "MAX_REJECTIONS", "METRICS", "REJECT", "REWARDS", "VecInspect", "improvement",
           "inspector_trace"]
