"""DRAS's environment (IPDPS'21; spec dras.md sections 2-6): reserve, then backfill, both picked.

A Gymnasium view of one engine on the cqsim loop (the `dras` profile) with `agent_backfill` on::

    env = DrasEnv("ricc", reward="capability")          # or DrasEnv(prepared, ...)
    obs, info = env.reset(seed=0)                        # obs: (2W + N, 2) float32
    while True:
        slot = policy(obs, info["action_mask"])          # info["level"]: 1 or 2
        obs, reward, terminated, truncated, info = env.step(slot)
        if terminated:
            break

Level 1 offers the first W (= 50) waiting jobs in arrival order; a pick that fits starts, the first
one that does not fit becomes the reservation (or, with the profile's `reserve="fcfs_head"`, the
oldest job does). Level 2 then offers the first W backfill candidates, one start per step, until none
is left; then time moves to the next event. `hierarchy=False` is the one-level ablation the paper
calls Decima-PG: no reservation, no backfilling, only jobs that fit now are offered, and the instance
ends when none of the window fits.

An episode is one jobset: `reset(options={"jobs": table})` (a curriculum passes its jobsets so), or
else a random run of `episode_jobs` consecutive jobs of the trace, starting from an empty machine.
What the agent sees and may pick is a `DrasObserver` of the engine's view, shared with the `dras:`
policy that runs a trained agent inside `hpcsched simulate` and `compare`.

Observation (the paper's [2W + N, 2] layout, normalised; spec section 16 item 4 leaves the scaling
open, ours is):
- sizes and times on log scales, because real traces span 1 to N nodes and seconds to days (on RICC
  most jobs take 1 of 1024 nodes and nearly all ask for 3 days, so linear scaling leaves every
  feature near 0 or 1): size(n) = log2(1 + n) / log2(1 + N), time(t) = log(1 + t / 60) /
  log(1 + T / 60), where T is the trace's longest request (`time_scale`);
- job slot i takes rows 2i and 2i+1: [size(nodes), time(request)] and [priority bit,
  min(time(wait), 4)]; the priority bit marks jobs of at least 802/4360 of the machine (Theta's
  capability threshold, the code's commented-out rule); empty slots are zeros;
- N node rows: a free node is [1, 0], a busy one [0, time(time to its estimated release)]. The nodes
  are identical, so instead of CQSim's node-id order (an accident of allocation history) we list
  them in a canonical order: free ones first, then busy ones by release time.

Rewards, one per pick (spec section 6):
- "capability" (Eq. 1, the released code's form): (util + wait + size) / 3 with util = (busy + n) / N
  if the pick fits, else busy / N; wait = the pick's wait / max(largest wait in the queue, 6 h);
  size = n / N.
- "capacity" (Eq. 2, our reading of the garbled equation): minus the mean wait of the jobs still
  waiting after the pick, over T: -(1/c) sum_j w_j / T (0 when the queue is empty).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hpcsched.envs.observation import check_choice
from hpcsched.envs.pick_job import SlotSpace
from hpcsched.sim.decisions import Pick, Start, Wait
from hpcsched.sim.factory import make_engine
from hpcsched.sim.profiles import Profile, get_profile
from hpcsched.sim.run import Prepared, prepare
from hpcsched.workload.jobs import JobTable

WINDOW = 50
REWARDS = ("capability", "capacity")
WAIT_FLOOR = 6 * 3600.0  # the code's floor on the largest wait in Eq. (1)
WAIT_CAP = 4.0  # a bound for the observation space (log-scaled waits stay far below it)
PRIORITY_FRACTION = 802 / 4360


class DrasObserver:
    """What a DRAS agent sees and may pick at a decision, from the engine's view alone: the env and
    the `dras:` policy share it, so that training and evaluation see the same thing."""

    def __init__(self, nodes: int, window: int, time_scale: float, hierarchy: bool) -> None:
        self.nodes = int(nodes)
        self.window = int(window)
        self.time_scale = float(time_scale)
        self.hierarchy = bool(hierarchy)
        self.rows_shape = (2 * self.window + self.nodes, 2)
        self._priority_cut = PRIORITY_FRACTION * self.nodes

    def offer(self, view) -> tuple[np.ndarray, np.ndarray] | None:
        """(rows offered, valid mask) at this decision; None when a one-level agent has nothing
        that fits (it then waits for the next event)."""
        if view.level == 2:
            rows = np.asarray(view.candidates[: self.window], dtype=np.int64)
            return rows, np.ones(rows.size, dtype=bool)
        rows = view.queue[: self.window]
        if self.hierarchy:
            return rows, np.ones(rows.size, dtype=bool)
        mask = view.fits(rows)
        return (rows, mask) if mask.any() else None

    def decision(self, view, row: int):
        """The engine decision for picking `row`: a backfill start at level 2, else a pick."""
        return Start(row) if view.level == 2 else Pick(row)

    def observe(self, view, rows: np.ndarray, out: np.ndarray) -> None:
        """The paper's [2W + N, 2] rows (see the module docstring), into `out`."""
        out[:] = 0.0
        k = rows.size
        jobs = view.jobs
        need = view.nodes_needed
        w = 2 * self.window
        now = view.now
        out[0:2 * k:2, 0] = np.log2(1.0 + need[rows]) / np.log2(1.0 + self.nodes)
        out[0:2 * k:2, 1] = self.time(jobs.req_time[rows])
        out[1:2 * k:2, 0] = need[rows] >= self._priority_cut
        out[1:2 * k:2, 1] = np.minimum(self.time(now - jobs.submit[rows]), WAIT_CAP)
        free = view.free_nodes
        out[w:w + free, 0] = 1.0
        run = view.running
        if run.size:
            est = view.estimated_end[run]
            order = np.argsort(est, kind="stable")
            remaining = np.repeat(self.time(est[order] - now), need[run[order]])
            out[w + free:w + free + remaining.size, 1] = remaining

    def time(self, seconds: np.ndarray) -> np.ndarray:
        return np.log1p(np.maximum(seconds, 0.0) / 60.0) / np.log1p(self.time_scale / 60.0)

    def check(self, view, name: str = "this DRAS agent") -> None:
        """The engine a `dras:` policy is asked to decide for must be one it can play."""
        if view.profile_loop != "cqsim":
            raise ValueError(f"DRAS agents run under a profile with the cqsim loop (--profile "
                             f"dras, the one they were trained on, or cqsim), not "
                             f"{view.profile!r}")
        if view.total_nodes != self.nodes:
            raise ValueError(f"{name}: the model observes {self.nodes} nodes; the cluster has "
                             f"{view.total_nodes}")
        want = "easy" if self.hierarchy else "none"
        if view.backfill != want:
            what = ("reserves, then backfills: run it with --backfill easy" if self.hierarchy
                    else "(Decima-PG) neither reserves nor backfills: run it with --backfill none")
            raise ValueError(f"a DRAS agent that {what} (got --backfill {view.backfill})")


class DrasEnv(gym.Env):
    """See the module docstring. `trace`: a short name, a path, a JobTable or a Prepared
    (prepared under the `dras` profile by default); by default RICC, the paper's trace. The trace
    needs the users' requested times: the profile's cleaning, CQSim's, drops a job without one
    (every job of the Lublin traces)."""

    metadata = {"render_modes": []}

    def __init__(self, trace: str | JobTable | Prepared = "ricc", *, reward: str = "capability",
                 window: int = WINDOW, hierarchy: bool = True,
                 profile: str | Profile = "dras", episode_jobs: int = 1000,
                 time_scale: float | None = None, seed: int | None = None) -> None:
        prof = get_profile(profile)
        if prof.loop != "cqsim":
            raise ValueError(f"DRAS runs under a profile with the cqsim loop, not {prof.name!r}")
        self.prepared = trace if isinstance(trace, Prepared) else prepare(trace, prof)
        self.profile = prof
        self.reward_kind = check_choice("DRAS reward", reward, REWARDS)
        self.window = int(window)
        self.hierarchy = bool(hierarchy)
        self.episode_jobs = int(episode_jobs)
        self.nodes = self.prepared.cluster.nodes
        self.time_scale = float(time_scale or np.max(self.prepared.jobs.req_time))
        self.observer = DrasObserver(self.nodes, self.window, self.time_scale, self.hierarchy)
        self.rows_shape = self.observer.rows_shape
        self.observation_space = spaces.Box(0.0, WAIT_CAP, shape=self.rows_shape,
                                            dtype=np.float32)
        self.action_space = SlotSpace(self.window, masks=lambda: self._mask)
        self._rng = np.random.default_rng(seed)
        self.engine = None
        self.view = None
        self.rows = np.zeros(0, dtype=np.int64)
        self.level = 0
        self._obs = np.zeros(self.rows_shape, dtype=np.float32)
        self._mask = np.zeros(self.window, dtype=bool)

    # -- Gymnasium API -------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        options = options or {}
        unknown = set(options) - {"jobs"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; known: 'jobs'")
        jobs = options.get("jobs")
        if jobs is None:
            jobs = self._sample_jobs()
        self.engine = make_engine(jobs, self.prepared.cluster, self.profile,
                                  "easy" if self.hierarchy else "none",
                                  backfill_decisions=self.hierarchy)
        done = self._next()
        if done:
            raise ValueError("a DRAS episode needs at least one job to schedule")
        return self._obs.copy(), self._info()

    def step(self, action):
        if self.engine is None or self.engine.done:
            raise RuntimeError("step() before reset() or after the end of the episode")
        a = int(action)
        if not (0 <= a < self.window) or not self._mask[a]:
            raise ValueError(f"slot {a} is not a valid pick now (mask: {np.flatnonzero(self._mask)})")
        row = int(self.rows[a])
        e = self.engine
        reward = self._capability(row) if self.reward_kind == "capability" else 0.0
        e.apply(self.observer.decision(self.view, row))
        if self.reward_kind == "capacity":
            reward = self._capacity(e.view())
        terminated = self._next()
        return self._obs.copy(), float(reward), terminated, False, self._info()

    def action_masks(self) -> np.ndarray:
        """Valid slots now (sb3-contrib's MaskablePPO reads this)."""
        return self._mask.copy()

    def result(self, policy: str = "dras"):
        """The engine's result (metrics with mode shares) once the episode has ended."""
        return self.engine.result(policy)

    # -- internals -----------------------------------------------------------------------------------
    def _sample_jobs(self) -> JobTable:
        jobs = self.prepared.jobs
        n = min(self.episode_jobs, len(jobs))
        start = int(self._rng.integers(0, len(jobs) - n + 1))
        return jobs.window(start, n)

    def _next(self) -> bool:
        """Run to the next decision and observe it; True when the episode is over."""
        e = self.engine
        while True:
            view = e.next_decision()
            if view is None:
                self.view = None
                self.rows = np.zeros(0, dtype=np.int64)
                self._mask[:] = False
                self._obs[:] = 0.0
                self.level = 0
                return True
            offer = self.observer.offer(view)
            if offer is None:
                e.apply(Wait())
                continue
            rows, mask = offer
            self.view = view
            self.level = view.level
            self.rows = rows
            self._mask[:] = False
            self._mask[: rows.size] = mask
            self.observer.observe(view, rows, self._obs)
            return False

    def _capability(self, row: int) -> float:
        view = self.view
        waits = view.now - view.jobs.submit[view.queue]
        return capability_reward(int(view.nodes_needed[row]),
                                 view.now - float(view.jobs.submit[row]),
                                 float(waits.max()) if waits.size else 0.0, view.free_nodes,
                                 self.nodes)

    def _capacity(self, view) -> float:
        waits = view.now - view.jobs.submit[view.queue]
        return -float(waits.mean()) / self.time_scale if waits.size else 0.0

    def _info(self) -> dict[str, Any]:
        e = self.engine
        return {"action_mask": self._mask.copy(), "level": self.level,
                "instances": e.instances if e is not None else 0}


def capability_reward(need: int, wait: float, largest_wait: float, free: int, nodes: int) -> float:
    """Eq. (1) with w1 = w2 = w3 = 1/3 for one pick of a job of `need` nodes that has waited
    `wait` s, when the longest wait in the queue is `largest_wait` and `free` nodes are free."""
    busy = nodes - free
    util = (busy + need) / nodes if need <= free else busy / nodes
    return (util + wait / max(largest_wait, WAIT_FLOOR) + need / nodes) / 3.0


def with_options(profile: str | Profile = "dras", **options) -> Profile:
    """The profile with the cqsim options of spec section 16 changed (reserve, persist,
    backfill_runtime); None values are left as they are."""
    changes = {k: v for k, v in options.items() if v is not None}
    return dataclasses.replace(get_profile(profile), **changes)


__all__ = ["DrasEnv", "DrasObserver", "REWARDS", "WINDOW", "capability_reward", "with_options"]
