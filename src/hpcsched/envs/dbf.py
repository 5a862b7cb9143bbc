"""Deep Backfilling (DBF, Wang's thesis Ch. 3): one agent that selects and backfills, with a split
window and schedule cycling (spec thesis_ch2_3_4.md section 4).

    env = DBFEnv("lublin-1", window=32, tail=4)
    obs, info = env.reset(seed=0)            # obs: (cores + 3 * window,) float32
    while True:
        action = policy(obs)                 # a slot 0..window-1, or window: Fwd
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated:
            break                            # info["metrics"]: the episode's Ch. 3 metrics

**Schedule cycling.** A scheduling cycle opens at every instant a job arrives or completes while
jobs wait (the engine's pass, `standard` profile: `engine.next_decision()`). In it the agent acts
again and again:

- a *valid pick* (a slot holding a job that fits on the free cores now) starts that job now
  (`Start(row)`); the reward is 0 and the agent acts again at the same instant;
- *Fwd* (action `window`), or an *invalid pick* (an empty slot, or a job needing more cores than
  are free), ends the cycle: the reward is R(t) of Eq. 3.1, computed at the decision instant,
  before time moves (spec item 17: the state the agent is rewarded for is the one it leaves), and
  the simulation advances to the next arrival or completion (`Wait()`).

R(t) = -a1 (1 - eta) - a2 L / L_max - a3 W / W_max, with eta the share of cores busy, L the number
of waiting jobs, W the sum of their waiting times, L_max and W_max their running maxima over the
episode so far (this instant included), a1 = a2 = a3 = 1/3 and 0/0 read as 0. The maxima are
exact: L and W rise only between decisions and every instant with a waiting job is a decision.

Two things the thesis leaves open are decided so (spec items 16-18):

- the agent is asked only when a job waits (there is nothing to choose otherwise); a valid pick
  that empties the queue therefore ends the cycle itself (the agent could only Fwd next): its
  reward is R(t) after the start, -a1 (1 - eta), and time advances;
- no action is masked by default (the thesis: an invalid pick is Fwd); ``mask=True`` masks the
  empty slots and the jobs that do not fit (and Fwd where waiting cannot change anything while a
  job fits). Without it `info["action_mask"]` and `action_masks()` are all True, so that
  mask-reading learners run unchanged.

**Episodes.** Each episode starts from an empty machine at a random job of the trace (uniform over
the jobs that leave `episode_jobs` after them; ``reset(options={"start": s})`` fixes it) and jobs
keep arriving: the engine gets the next ``episode_jobs + lookahead`` jobs (lookahead: as many again
by default, far more than ever wait at the end on Lublin). The episode ends (terminated) when
`episode_jobs` jobs have been started, whatever still waits, or, earlier, if the agent lets the
trace run dry (a Fwd with nothing running and no job left to arrive). Jobs run their logged run time
(killed at their request only where they would overrun it: never on Lublin-1); the agent only ever
sees requested times. At the end `info["metrics"]` holds `interval_metrics` over the episode (first
arrival to the last start): utilization, wait, bsld, queue_length, job_load.

**Observation** (``cores + 3 * window`` floats in [0, 1], 256 + 3M on Lublin-1):

- one entry per core: the remaining *requested* time of the job holding it (start + request - now),
  divided by e_max, the longest request of the trace; 0 for a free core. Cores are fungible, so the
  layout is canonical rather than an allocation history: free cores first, then the busy ones by
  remaining time (ties: the job started first), each job filling as many entries as it holds
  cores (its nodes x processors per node);
- then one row per slot: requested cores / the cluster's cores, requested time / e_max, current
  wait / the longest wait seen so far in the episode (the thesis's "maximum waiting time of all
  jobs" is unknowable online, spec item 20; a running maximum over the episode, this instant
  included, keeps it in [0, 1]); empty slots are zeros.

**Split window** (`window` = M slots, `tail` = M_t of them; spec section 4.2 and item 16): with
L <= M waiting jobs the queue is shown once, in queue (arrival) order, then empty slots; with
L > M the first M - M_t jobs, then the last M_t newest first (slot M - M_t holds the newest). The
defaults, M = 32 without a tail, are the configuration of the thesis's comparison (Fig. 3.4).

`VecDBF` (`hpcsched.envs.dbf_vec`) steps N episodes together, the same step for step.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hpcsched.cluster.pool import NodePool
from hpcsched.sim.decisions import Start, Wait
from hpcsched.sim.engine import DecisionView
from hpcsched.sim.factory import make_engine
from hpcsched.sim.metrics import interval_metrics
from hpcsched.sim.run import Prepared
from hpcsched.workload.jobs import JobTable

ALPHAS = (1 / 3, 1 / 3, 1 / 3)
EPISODE_JOBS = 1000
WINDOW = 32

#: what a step did to the episode (`DbfEpisode.pick`, `DbfEpisode.forward`)
SAME_INSTANT, NEXT_CYCLE, PLACED_ALL, TRACE_END = 0, 1, 2, 3


def split_window(queue: np.ndarray, window: int, tail: int) -> np.ndarray:
    """The row shown in each of `window` slots (-1: empty) for a queue in queue order: the whole
    queue, then empty slots, when it fits; else its first window - tail jobs, then its last
    `tail`, newest first."""
    out = np.full(window, -1, dtype=np.int64)
    n = len(queue)
    if n <= window:
        out[:n] = queue
        return out
    head = window - tail
    out[:head] = queue[:head]
    if tail:
        out[head:] = queue[n - 1:n - 1 - tail:-1]  # n > window >= tail: the stop is >= 0
    return out


@dataclass(frozen=True)
class DbfScale:
    """The constants an observation is scaled by, from the prepared trace."""

    e_max: float  # the longest request of the trace
    cores: int  # nodes x processors per node
    nodes: int
    procs_per_node: int

    @classmethod
    def of(cls, prepared: Prepared) -> "DbfScale":
        cluster = prepared.cluster
        if not isinstance(cluster, NodePool):
            raise ValueError("DBF observes one entry per core of a pool of identical nodes; "
                             f"{prepared.name} is on a heterogeneous cluster")
        e_max = float(np.max(prepared.jobs.req_time)) if len(prepared.jobs) else 0.0
        return cls(max(e_max, 1.0), int(cluster.total_procs), int(cluster.nodes),
                   int(cluster.procs_per_node))


def check_profile(prepared: Prepared) -> None:
    p = prepared.profile
    if p.loop != "pass" or p.commit:
        raise ValueError(f"DBF's schedule cycling needs a decision at every arrival and "
                         f"completion (the pass loop: the standard profile), not the "
                         f"{p.name!r} profile")


def as_dbf_trace(trace: str | os.PathLike | JobTable | Prepared,
                 profile: str | None = None) -> Prepared:
    """`trace` prepared for DBF: a Prepared as it is, else prepared under `profile` (default
    "standard"); bundled traces by name once per process."""
    from hpcsched.sim.run import as_prepared

    prepared = as_prepared(trace, "standard" if profile is None and not isinstance(
        trace, Prepared) else profile)
    check_profile(prepared)
    return prepared


def check_start_range(start_range, last: int) -> tuple[int, int]:
    """(lo, hi) of the starts random episodes draw from (default: all, 0..last)."""
    if start_range is None:
        return 0, int(last)
    lo, hi = (int(x) for x in start_range)
    if not 0 <= lo <= hi <= last:
        raise ValueError(f"start_range must be (lo, hi) with 0 <= lo <= hi <= {last}, got "
                         f"{tuple(start_range)}")
    return lo, hi


def check_window(window: int, tail: int) -> tuple[int, int]:
    if window <= 0:
        raise ValueError(f"window must be positive, got {window}")
    if not 0 <= tail <= window:
        raise ValueError(f"tail must be in [0, window={window}], got {tail}")
    return int(window), int(tail)


class DbfEpisode:
    """One episode: the engine on its jobs, where they sit in the trace, what was placed, and the
    running maxima of R(t) and of the wait normalisation (kept here by the single env; `VecDBF`
    keeps them in arrays of its own)."""

    __slots__ = ("engine", "start", "jobs", "target", "view", "placed", "t0",
                 "l_max", "w_max", "wait_max", "stats")

    def __init__(self, prepared: Prepared, start: int, target: int, lookahead: int) -> None:
        n = len(prepared.jobs)
        jobs = min(n - start, target + lookahead)
        self.engine = make_engine(prepared.jobs.window(start, jobs), prepared.cluster,
                                  prepared.profile, "none")
        self.start, self.jobs, self.target = start, jobs, target
        self.placed = 0
        self.l_max = self.w_max = self.wait_max = 0.0
        self.stats = (0.0, 0.0, 0.0)  # (utilization, L, W) of the current decision
        self.view: DecisionView | None = self.engine.next_decision()
        self.t0 = float(self.view.now)

    def pick(self, row: int, last: bool) -> int:
        """Start `row` (it fits) now. `last`: it is the only waiting job. Returns PLACED_ALL,
        SAME_INSTANT, or, when the queue is now empty, NEXT_CYCLE / TRACE_END once time moved."""
        self.engine.apply(Start(row))
        self.placed += 1
        if self.placed >= self.target:
            self.view = None
            return PLACED_ALL
        self.view = self.engine.next_decision()
        if self.view is None:
            return TRACE_END
        return NEXT_CYCLE if last else SAME_INSTANT

    def forward(self) -> int:
        """Fwd: end the cycle, move to the next instant with a decision (TRACE_END: none)."""
        self.engine.apply(Wait())
        self.view = self.engine.next_decision()
        return TRACE_END if self.view is None else NEXT_CYCLE

    def metrics(self) -> dict[str, Any]:
        """The episode's Ch. 3 metrics, from its first arrival to now (its last start)."""
        v = self.engine.view()
        m = interval_metrics(v.jobs, v.start_time, v.executed,
                             total_procs=int(v.cluster.total_procs), t0=self.t0, t1=v.now)
        m["placed"] = self.placed
        return m


def act(ep: DbfEpisode, row: int, length: float, util: float, total_wait: float, l_max: float,
        w_max: float, need: np.ndarray, nodes: int, alphas: Sequence[float]) -> tuple[float, int]:
    """One action on `ep` at a decision whose R(t) terms are (util, length, total_wait): start
    `row` (it fits; -1: Fwd or an invalid pick). Returns (reward, outcome): 0 for a pick within
    the cycle; R(t) when the cycle ends, after the start when the pick emptied the queue."""
    if row < 0:
        return cycle_reward(util, length, total_wait, l_max, w_max, alphas), ep.forward()
    outcome = ep.pick(row, last=length == 1)
    if outcome == NEXT_CYCLE or outcome == TRACE_END:  # the queue is empty: the state after it
        return cycle_reward(util + need[ep.start + row] / nodes, 0.0, 0.0, l_max, w_max,
                            alphas), outcome
    return 0.0, outcome


def cycle_reward(util: float, length: float, total_wait: float, l_max: float, w_max: float,
                 alphas: Sequence[float] = ALPHAS) -> float:
    """Eq. 3.1: -a1 (1 - util) - a2 L / L_max - a3 W / W_max, 0/0 read as 0."""
    a1, a2, a3 = alphas
    return -(a1 * (1.0 - util) + a2 * (length / l_max if l_max > 0 else 0.0)
             + a3 * (total_wait / w_max if w_max > 0 else 0.0))


def observe_view(view: DecisionView, episode: DbfEpisode, scale: DbfScale, window: int,
                 tail: int, obs: np.ndarray) -> np.ndarray:
    """Update `episode`'s maxima with `view` and write the observation into `obs` (see the module
    docstring); returns the rows (of the episode's table) in the slots, -1 for empty ones. The
    plain one-view version: `VecDBF` builds N at once and is tested equal to it."""
    now = view.now
    jobs = view.jobs
    need = view.nodes_needed
    q = view.queue
    waits = now - jobs.submit[q]
    length, total_wait = float(q.size), float(np.sum(waits))
    episode.l_max = max(episode.l_max, length)
    episode.w_max = max(episode.w_max, total_wait)
    if q.size:
        episode.wait_max = max(episode.wait_max, float(np.max(waits)))
    free = view.free_nodes
    episode.stats = (1.0 - free / scale.nodes, length, total_wait)

    c = scale.cores
    obs[:] = 0.0
    run = view.running
    if run.size:
        remaining = np.maximum(view.estimated_end[run] - now, 0.0) / scale.e_max
        order = np.argsort(remaining, kind="stable")
        values = np.repeat(remaining[order], need[run][order] * scale.procs_per_node)
        obs[c - values.size:c] = values
    rows = split_window(q, window, tail)
    shown = rows[rows >= 0]
    k = shown.size
    slots = obs[c:].reshape(window, 3)
    slots[:k, 0] = jobs.procs[shown] / c
    slots[:k, 1] = jobs.req_time[shown] / scale.e_max
    if episode.wait_max > 0:
        slots[:k, 2] = (now - jobs.submit[shown]) / episode.wait_max
    return rows


class DBFEnv(gym.Env):
    """`hpcsched/DBF-v0`: Deep Backfilling's environment (see the module docstring).

    Args:
        trace: a bundled trace's short name, an SWF path, a raw JobTable or a `Prepared` trace
            (a pool of identical nodes, under a pass-loop profile).
        window: M, the job slots; tail: M_t of them show the newest jobs (split window).
        episode_jobs: an episode ends when this many jobs have started (1,000).
        lookahead: jobs beyond `episode_jobs` the episode's engine holds (default: as many).
        mask: mask invalid picks (default False: the thesis's invalid pick = Fwd).
        alphas: (a1, a2, a3) of Eq. 3.1.
        profile: for a trace not yet prepared (default "standard").
        start_range: (lo, hi), the starts random episodes draw from, both included (default:
            every start; DBF's training block: `workload.windows.dbf_starts(trace, "train")`).
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        trace: str | os.PathLike | JobTable | Prepared = "lublin-1",
        window: int = WINDOW,
        tail: int = 0,
        episode_jobs: int = EPISODE_JOBS,
        lookahead: int | None = None,
        mask: bool = False,
        alphas: Sequence[float] = ALPHAS,
        profile: str | None = None,
        start_range: tuple[int, int] | None = None,
    ) -> None:
        super().__init__()
        self.prepared = as_dbf_trace(trace, profile)
        self.window, self.tail = check_window(window, tail)
        self.episode_jobs = int(episode_jobs)
        n = len(self.prepared.jobs)
        if not 0 < self.episode_jobs <= n:
            raise ValueError(f"episode_jobs must be in [1, {n}] (the trace's jobs), got "
                             f"{episode_jobs}")
        self.lookahead = self.episode_jobs if lookahead is None else int(lookahead)
        if self.lookahead < 0:
            raise ValueError(f"lookahead must be >= 0, got {lookahead}")
        self.mask = bool(mask)
        self.alphas = tuple(float(a) for a in alphas)
        if len(self.alphas) != 3:
            raise ValueError(f"alphas are three weights (a1, a2, a3), got {alphas!r}")
        self.start_range = check_start_range(start_range, n - self.episode_jobs)
        self.scale = DbfScale.of(self.prepared)
        self.need = self.prepared.cluster.nodes_needed(self.prepared.jobs.procs)
        self.n_obs = self.scale.cores + 3 * self.window
        self.observation_space = spaces.Box(0.0, 1.0, (self.n_obs,), np.float32)
        self.action_space = spaces.Discrete(self.window + 1)
        self.episode: DbfEpisode | None = None
        self._obs = np.zeros(self.n_obs, dtype=np.float32)
        self._rows = np.full(self.window, -1, dtype=np.int64)
        self._valid = np.zeros(self.window, dtype=bool)
        self._mask = np.ones(self.window + 1, dtype=bool)

    @property
    def fwd(self) -> int:
        """The Fwd action's index (= window)."""
        return self.window

    # -- Gymnasium API ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        super().reset(seed=seed)
        start = self._start(options or {})
        self.episode = DbfEpisode(self.prepared, start, self.episode_jobs, self.lookahead)
        self._observe()
        return self._obs.copy(), self._info()

    def step(self, action):
        ep = self.episode
        if ep is None or ep.view is None:
            raise RuntimeError("the episode has ended (or never began): call reset() first")
        a = int(action)
        if not 0 <= a <= self.window:
            raise ValueError(f"action {a} is outside 0..{self.window} (slots, then Fwd)")
        util, length, total_wait = ep.stats
        row = int(self._rows[a]) if a < self.window and self._valid[a] else -1
        reward, outcome = act(ep, row, length, util, total_wait, ep.l_max, ep.w_max, self.need,
                              self.scale.nodes, self.alphas)
        if outcome == PLACED_ALL or outcome == TRACE_END:
            info = self._final_info(ep)
            return np.zeros(self.n_obs, np.float32), float(reward), True, False, info
        self._observe()
        return self._obs.copy(), float(reward), False, False, self._info()

    def action_masks(self) -> np.ndarray:
        """Valid actions now: all True unless `mask` (sb3-contrib's MaskablePPO reads this)."""
        return self._mask.copy()

    # -- inspection ------------------------------------------------------------------------------
    @property
    def rows(self) -> np.ndarray:
        """The row (of the episode's job table) in each slot now; -1: an empty slot."""
        return self._rows.copy()

    @property
    def valid(self) -> np.ndarray:
        """Which slots hold a job that fits now (a pick of another slot is a Fwd)."""
        return self._valid.copy()

    @property
    def engine(self):
        return None if self.episode is None else self.episode.engine

    # -- internals -------------------------------------------------------------------------------
    def _start(self, options: Mapping[str, Any]) -> int:
        unknown = set(options) - {"start"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; known: 'start'")
        n = len(self.prepared.jobs)
        last = n - self.episode_jobs
        if "start" in options:
            start = int(options["start"])
            if not 0 <= start <= last:
                raise ValueError(f"an episode of {self.episode_jobs} jobs starts in [0, {last}], "
                                 f"not at {start}")
            return start
        return int(self.np_random.integers(self.start_range[0], self.start_range[1] + 1))

    def _observe(self) -> None:
        ep = self.episode
        view = ep.view
        self._rows[:] = observe_view(view, ep, self.scale, self.window, self.tail, self._obs)
        rows = self._rows
        present = rows >= 0
        self._valid[:] = False
        self._valid[present] = view.nodes_needed[rows[present]] <= view.free_nodes
        if self.mask:
            self._mask[:self.window] = self._valid
            self._mask[self.window] = view.can_wait or not self._valid.any()
        # (without the mask every action stays allowed)

    def _info(self) -> dict[str, Any]:
        ep = self.episode
        return {"action_mask": self._mask.copy(), "window": (ep.start, ep.jobs),
                "time": float(ep.view.now), "placed": ep.placed}

    def _final_info(self, ep: DbfEpisode) -> dict[str, Any]:
        if self.mask:
            self._mask[:] = False
            self._mask[self.window] = True
        return {"action_mask": self._mask.copy(), "window": (ep.start, ep.jobs),
                "placed": ep.placed, "metrics": ep.metrics(),
                "trace_end": ep.placed < ep.target}


__all__ = ["ALPHAS", "DBFEnv", "DbfEpisode", "DbfScale", "EPISODE_JOBS", "WINDOW", "act",
           "as_dbf_trace", "check_start_range", "check_window", "cycle_reward", "observe_view",
           "split_window"]
