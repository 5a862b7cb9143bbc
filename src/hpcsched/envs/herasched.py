"""HeraSched (Wang's thesis Ch. 4, spec thesis_ch2_3_4.md §6): a job selector and a node allocator,
two agents in a hierarchy, on the engine (one Gymnasium environment whose steps alternate between
them).

    env = HeraSchedEnv("deeplearn-train.txt", "spartan-deeplearn", window=100, tail=10)
    obs, info = env.reset(seed=0)
    while True:
        agent = info["agent"]                  # 0: the selector acts, 1: the allocator
        action = policy[agent](obs, info["action_mask"])
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated:
            break                              # info["metrics"]: the episode's AWT, MWT, ...

**A scheduling process** opens at every instant a job arrives or completes while jobs wait (the
engine's pass: `engine.next_decision()`). In it:

1. the selector picks a window slot, or Forward (action W);
2. after a slot, the allocator picks the job's nodes, one per step, until it has l_j of them; the
   job then starts there (`Start(row, nodes)`), and the selector picks again at the same instant;
3. Forward ends the process: time moves to the next arrival or completion (`Wait()`).

The selector is asked only when it has a choice: at an instant where no job of the window fits
(its only valid action would be Forward), time moves on at once, and that is no selector action
(spec item 27). Nothing else starts jobs: there is no separate backfiller (the engine runs without
backfilling); picking a job behind the head is the backfilling.

**Observation** (`envs.hera_observation`, which documents the layout, the normalisation and the
masks): one flat float32 vector of the allocator's size, n_selector + 1; the selector reads the
first n_selector numbers, and the last is 0 while the selector acts, the chosen job's slot
(slot + 1) / W while the allocator does. `info["agent"]` says who acts. The action space is
Discrete(max(W + 1, N)); `info["action_mask"]` (and `action_masks()`) allows the acting agent's
valid actions only (the selector's W + 1 first, or the allocator's N first). A selector action the
mask hides (an empty slot, a job that does not fit) is taken as Forward, as DBF takes an invalid
pick (a masked learner never sends one; gymnasium's checker does); where Forward is hidden too, and
for the allocator, an invalid action is an error naming the valid ones.

**Rewards** (Eq. 4.1 and 4.2), both delayed averages of realised and still-growing waits, in hours
(`reward_scale` = 3,600 s: raw seconds are 1e3-1e5 against the critics' targets; HPCsim's own code
scales so too, spec hpcsim-semantics.md §0; spec item 29):

- the selector's, at every A_s-th selector action (a pick or a Forward, `selector_every`, 512):
  -[sum over Q_s of (d_j - w_j) + sum over the waiting jobs of (t - w_j)] / (|Q_s| + L(t)), with
  Q_s the jobs its picks started since its last reward. A pick's job counts as started at once
  (it starts at this instant, whatever nodes it gets) and no longer as waiting; a Forward's reward
  is taken before time moves (the state the selector leaves);
- the allocator's, at every A_a-th job it completes (`allocator_every`, 100), when that job has
  started: -[sum over its last A_a jobs of (d_j - w_j) + sum over the waiting jobs of
  (t - w_j)] / (A_a + L(t));
- 0 at every other step. An episode's last step (the last job's start) also pays each agent what
  has accumulated since its last reward, over |Q| + L(t) (L = 0 then): Q_s and Q_a do not carry
  over episodes (spec item 29).

Ours, beside Eq. 4.1 (`selector_reward="accrued"`; Eq. 4.2 stays the allocator's): the selector
is paid minus the waiting time that accrues, in all the episode's jobs, whenever time moves on
after its action (a Forward, or the start of its pick's job when nothing else fits then), and 0
when it does not (a pick at the same instant; A_s does not apply). An episode's rewards then add up
to minus the total wait of its jobs (AWT times their number): a Forward costs what the queue
waits until the next instant, and a pick costs nothing, where Eq. 4.1's average over the queue
can rise when a pick takes a job that has waited less than the others. With
`selector_reward="squared"` it is paid the same way what accrues in the squares of the waits (in
the reward's unit squared: hours squared by default), so an episode's rewards add up to minus the
sum of its jobs' squared waits: a job that has waited long costs more with every hour (2 w per
hour), which weighs the longest waits, and so the maximum wait, more than the total does.

The step's `reward` is the sum of what fell due (the acting agent's, and at the last step the
other's remainder); `info["rewards"]` gives them apart, (selector, allocator), for the hierarchical
learner (`agents.herasched`), which credits each to its own agent's last action.

**Episodes** (spec item 32): by default the whole trace, from an empty machine (the thesis trains
and evaluates on its whole workload); with `episode_jobs`, that many jobs from a random start
(`reset(options={"start": s})` fixes it), the engine holding only them. An episode ends
(terminated) when every one of its jobs has started. Jobs run their logged time, killed at their
request (the hpcsim profile: HPCsim's); the agents only see requested times.

**What the thesis leaves open** (spec thesis_ch2_3_4.md §9, items 24-34), as chosen here:

- 24, w_j: the wait t - w_j is shown, not the submission time (`hera_observation`);
- 25, the per-node numbers and the 365-input gap: leaf switch, capacities and node id; the layout
  7W + 1 + sum (5 + 5 P_i) gives Table 4.2's 35,340 on the bundled 87-node Physical, so there is
  no gap with it (Table 4.1's 86 nodes give 34,975); a node holds at most P_i jobs (item 5);
- 26, normalisation: log-scaled times, requests and capacities over the largest node's, nodes
  over N, L(t) over the window, in log (`hera_observation`);
- 27, the selector is not asked when only Forward is valid (time moves on, no selector action);
  Forward is hidden only where waiting cannot change anything (nothing runs, nothing arrives);
- 28, a node already chosen for the job is hidden for its next pick;
- 29, rewards in hours; the counters do not carry over episodes (the last step pays each agent's
  remainder); a reward falls due on the step that completes its count;
- 30, gamma 1 (Table 4.2), GAE lambda 0.95, 10 epochs, lr 3e-4, clip 0.2 (`agents.herasched`);
- 31, joint updates: at least 2,048 selector steps per rollout, episodes going on across updates,
  each agent's last decision in each episode held back so it bootstraps from its successor
  (`agents.herasched_rollout`);
- 32, episodes: the whole trace (or `episode_jobs` from random starts);
- 33, separate actor and critic per agent, four networks, in both families
  (`agents.herasched_nets`);
- 34, seeds: a run has one seed (the selector's PPO, the allocator's seed + 1, each episode's
  reset, each update's actions drawn from it); running several is the protocol's (issue 17 part 4).
"""

from __future__ import annotations

import os
from typing import Any, Mapping

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from hpcsched.envs.hera_observation import (HeraLayout, HeraObserver, OldestReservation,
                                            heuristic_nodes)
from hpcsched.envs.pick_job import SlotSpace
from hpcsched.sim.decisions import Start, Wait
from hpcsched.sim.factory import make_engine, resolve_allocator
from hpcsched.sim.run import Prepared
from hpcsched.workload.jobs import JobTable

SELECTOR, ALLOCATOR = 0, 1
#: Table 4.2: selector actions per selector reward (A_s), jobs per allocator reward (A_a)
SELECTOR_EVERY = 512
ALLOCATOR_EVERY = 100
#: rewards in hours
REWARD_SCALE = 3600.0
#: the heuristic allocators that may place the selector's jobs in place of the allocator agent
#: (`place_with`): the grid's three (Appendix B's columns), in the profile's dialect
HEURISTIC_ALLOCATORS = ("topology", "best-fit", "first-available")
#: the selector's reward: Eq. 4.1 ("average"), or ours, the waiting time accrued ("accrued") or
#: the squared waiting time accrued ("squared")
SELECTOR_REWARDS = ("average", "accrued", "squared")
#: Table 4.2's windows (W, T) by bundled cluster; (100, 10) elsewhere
THESIS_WINDOWS = {"spartan-physical": (512, 64), "spartan-deeplearn": (100, 10)}
DEFAULT_WINDOW = (100, 10)
DEFAULT_CLUSTER = "spartan-deeplearn"


def thesis_window(cluster) -> tuple[int, int]:
    """(W, T) of Table 4.2 for a bundled Spartan cluster (by name), else (100, 10)."""
    name = cluster if isinstance(cluster, str) else getattr(cluster, "name", "")
    return THESIS_WINDOWS.get(name, DEFAULT_WINDOW)


def window_of(cluster, window: int | None, tail: int | None) -> tuple[int, int]:
    """(W, T) from the given ones: Table 4.2's for a bundled Spartan cluster (by name) when
    neither is given (else 100 and 10); a tail, when only the window is given, is Table 4.2's with
    its window, else a tenth of the window."""
    w, t = thesis_window(cluster)
    window = w if window is None else int(window)
    if tail is None:
        tail = t if window == w else window // 10
    return window, int(tail)


def check_profile(prepared: Prepared) -> None:
    p = prepared.profile
    if p.loop != "pass" or p.commit:
        raise ValueError(f"HeraSched decides at every arrival and completion and starts jobs on "
                         f"the nodes it chose (the pass loop: the hpcsim or standard profile), not "
                         f"under the {p.name!r} profile")


def as_herasched_trace(trace: str | os.PathLike | JobTable | Prepared | None,
                       cluster=DEFAULT_CLUSTER, profile: str | None = None, *,
                       drop_oversized: bool = False) -> Prepared:
    """`trace` prepared for HeraSched on `cluster` (a bundled name, a cluster file or a `Cluster`)
    under `profile` (default hpcsim); a Prepared as it is. None: the generated stand-in of the
    thesis's high-load day on a bundled Spartan cluster (`workload.spartan`, seed 1)."""
    from hpcsched.sim.run import prepare

    if isinstance(trace, Prepared):
        if profile is not None and profile != trace.profile.name:
            raise ValueError(f"the trace was prepared under the {trace.profile.name!r} profile, "
                             f"not {profile!r}")
        prepared = trace
    else:
        if trace is None:
            trace = _stand_in(cluster)
        prepared = prepare(os.fspath(trace) if isinstance(trace, os.PathLike) else trace,
                           profile or "hpcsim", cluster=cluster, drop_oversized=drop_oversized)
    check_profile(prepared)
    HeraLayout.of(prepared.cluster, 1, 0)  # a pool of identical nodes is refused here, named
    return prepared


def _stand_in(cluster) -> JobTable:
    from hpcsched.cluster.load import load_cluster
    from hpcsched.workload.spartan import generate

    if isinstance(cluster, str):
        load_cluster(cluster)  # an unknown one is named first
    if not isinstance(cluster, str) or cluster not in THESIS_WINDOWS:
        raise ValueError(f"HeraSched needs a trace for the cluster {cluster!r} (its generated "
                         f"stand-ins are for {', '.join(THESIS_WINDOWS)})")
    jobs = generate(cluster, seed=1, high_load_day=True).jobs
    return jobs.with_columns(submit=jobs.submit - float(jobs.submit.min()))


class WaitRewards:
    """Eq. 4.1 and 4.2's counters for one episode: the waits realised since each agent's last
    reward, and how many actions (selector) or jobs (allocator) they span."""

    __slots__ = ("selector_every", "allocator_every", "scale", "s_actions", "s_waits", "s_jobs",
                 "a_jobs", "a_waits", "accrued", "squared")

    def __init__(self, selector_every: int, allocator_every: int, scale: float,
                 selector_reward: str = "average") -> None:
        self.selector_every, self.allocator_every = int(selector_every), int(allocator_every)
        if self.selector_every < 1 or self.allocator_every < 1:
            raise ValueError(f"A_s ({selector_every}) and A_a ({allocator_every}) must be >= 1")
        if selector_reward not in SELECTOR_REWARDS:
            raise ValueError(f"unknown selector reward {selector_reward!r}; choose one of: "
                             f"{', '.join(SELECTOR_REWARDS)}")
        #: the selector is paid the waiting time that accrues as time moves, not Eq. 4.1
        self.accrued = selector_reward in ("accrued", "squared")
        #: ... the squares of the waits (in units of the scale, squared)
        self.squared = selector_reward == "squared"
        self.scale = float(scale)
        self.s_actions = self.s_jobs = self.a_jobs = 0
        self.s_waits = self.a_waits = 0.0

    def _average(self, realised: float, jobs: int, queued: int, waiting: float) -> float:
        n = jobs + queued
        return -(realised + waiting) / n / self.scale if n else 0.0

    def selector(self, started_wait: float | None, queued: int, waiting: float) -> float:
        """A selector action (a pick whose job waited `started_wait`, or a Forward: None) with
        `queued` jobs waiting `waiting` seconds in all after it; its reward (Eq. 4.1) or 0 (0
        always with the accrued reward: `moved` pays that one)."""
        if self.accrued:
            return 0.0
        self.s_actions += 1
        if started_wait is not None:
            self.s_jobs += 1
            self.s_waits += started_wait
        if self.s_actions < self.selector_every:
            return 0.0
        r = self._average(self.s_waits, self.s_jobs, queued, waiting)
        self.s_actions = self.s_jobs = 0
        self.s_waits = 0.0
        return r

    def moved(self, before: float, after: float) -> float:
        """The accrued reward of time moving on, the waits of all the episode's jobs so far
        having gone from `before` to `after` seconds in all (seconds squared: `squared`; 0 with
        Eq. 4.1)."""
        if not self.accrued:
            return 0.0
        return -(after - before) / (self.scale * self.scale if self.squared else self.scale)

    def allocated(self, wait: float, queued: int, waiting: float) -> float:
        """A job the allocator placed, started after waiting `wait`; its reward (Eq. 4.2) or 0."""
        self.a_jobs += 1
        self.a_waits += wait
        if self.a_jobs < self.allocator_every:
            return 0.0
        r = self._average(self.a_waits, self.a_jobs, queued, waiting)
        self.a_jobs = 0
        self.a_waits = 0.0
        return r

    def flush(self) -> tuple[float, float]:
        """The episode is over (nothing waits): each agent's remainder, over what it spans."""
        r = (self._average(self.s_waits, self.s_jobs, 0, 0.0),
             self._average(self.a_waits, self.a_jobs, 0, 0.0))
        self.s_actions = self.s_jobs = self.a_jobs = 0
        self.s_waits = self.a_waits = 0.0
        return r


class HeraEpisode:
    """One episode on its engine: the decision instant, who acts, the job being placed."""

    def __init__(self, prepared: Prepared, start: int, jobs: int, layout: HeraLayout,
                 rewards: WaitRewards, reserve_after: float | None = None,
                 place_with: str | None = None) -> None:
        table = prepared.jobs.window(start, jobs)
        #: a heuristic allocator placing each job the selector picks (None: the allocator agent)
        self.placer = None if place_with is None else \
            resolve_allocator(place_with, prepared.profile)
        #: EASY's reservation for the oldest job, narrowing the masks (None: the thesis's masks)
        self.guard = None if reserve_after is None else \
            OldestReservation(reserve_after, table.req_time)
        self.plan = None  # the reservation held at the selector's last observation
        self.selector_allowed = np.zeros(layout.window + 1, dtype=bool)
        self.engine = make_engine(table, prepared.cluster, prepared.profile, "none")
        self.start, self.jobs = start, jobs
        self.observer = HeraObserver(layout, prepared.cluster, table)
        self.rewards = rewards
        self.obs = np.zeros(layout.n_allocator, dtype=np.float32)
        self.agent = SELECTOR
        self.slot = -1
        self.row = -1
        self.chosen: list[int] = []
        self.started = 0
        self.realised = 0.0  # the waits of the jobs started so far, in seconds
        self.realised_sq = 0.0  # the sum of their squares
        self.view = None
        self.moved = 0  # instants time moved on because nothing in the window fit
        self.next_instant(self.engine.next_decision())

    @property
    def done(self) -> bool:
        return self.view is None

    def waited(self) -> float:
        """The waits of all the episode's jobs so far, in seconds: realised (started jobs) and
        still growing (the queue's); the sum of their squares with the squared reward."""
        if self.rewards.squared:
            return self.realised_sq + (0.0 if self.done else self.observer.snapshot.total_sq_wait)
        return self.realised + (0.0 if self.done else self.observer.snapshot.total_wait)

    def next_instant(self, view) -> None:
        """Observe `view`; while no job of the window fits, let time move on (no agent acts)."""
        while view is not None:
            self.view = view
            snap = self.observer.observe(view, self.obs)
            if snap.fits.any():
                self.agent = SELECTOR
                allowed = self.observer.selector_mask(self.selector_allowed)
                self.plan = None if self.guard is None else \
                    self.guard.narrow(view, self.observer, allowed)
                return
            self.engine.apply(Wait())
            self.moved += 1
            view = self.engine.next_decision()
        self.view = None

    def select(self, slot: int) -> tuple[float, float]:
        """The selector's action: a slot (its job becomes the allocator's, or with a heuristic
        allocator starts on its nodes at once) or Forward (-1). Returns the rewards (selector's,
        allocator's) that fell due."""
        snap = self.observer.snapshot
        if slot < 0:
            reward = self.rewards.selector(None, snap.queued, snap.total_wait)
            before = self.waited()
            self.engine.apply(Wait())
            self.next_instant(self.engine.next_decision())
            return reward + self.rewards.moved(before, self.waited()), 0.0
        row = int(snap.rows[slot])
        wait = float(self.view.now - self.observer.submit[row])
        reward = self.rewards.selector(wait, snap.queued - 1, snap.total_wait - wait)
        self.slot, self.row = slot, row
        if self.placer is not None:  # placed at once: the allocator agent never acts
            self.chosen = list(self.nodes_by(self.placer, row))
            r_sel, r_alloc = self._start_chosen()
            return reward + r_sel, r_alloc
        self.agent, self.chosen = ALLOCATOR, []
        self.obs[-1] = self.observer.slot_value(slot)
        return reward, 0.0

    def nodes_by(self, placer, row: int) -> tuple[int, ...]:
        """The nodes heuristic allocator `placer` gives job `row` now, under the reservation held
        (`envs.hera_observation.heuristic_nodes`)."""
        return heuristic_nodes(placer, self.view, self.observer, row, self.plan, self.guard)

    def allocate(self, node: int) -> tuple[float, float]:
        """The allocator's action: one node for the job. Returns the rewards (selector's,
        allocator's) that fell due: the allocator's when the job started, and at the episode's
        end each agent's remainder."""
        self.chosen.append(int(node))
        if len(self.chosen) < self.observer.count[self.row]:
            return 0.0, 0.0
        return self._start_chosen()

    def _start_chosen(self) -> tuple[float, float]:
        """Start the job on the nodes chosen; the rewards that fell due (see `allocate`)."""
        snap = self.observer.snapshot
        wait = float(self.view.now - self.observer.submit[self.row])
        self.engine.apply(Start(self.row, tuple(self.chosen)))
        self.started += 1
        before = self.waited()  # the start moves its wait from the queue's to the realised
        self.realised += wait
        self.realised_sq += wait * wait
        r_alloc = self.rewards.allocated(wait, snap.queued - 1, snap.total_wait - wait)
        self.slot, self.row, self.chosen = -1, -1, []
        self.next_instant(self.engine.next_decision())
        r_moved = self.rewards.moved(before, self.waited())  # time moved if nothing fits now
        if self.done:
            r_sel, rest = self.rewards.flush()
            return r_sel + r_moved, r_alloc + rest
        return r_moved, r_alloc

    def mask(self, out: np.ndarray) -> np.ndarray:
        """The acting agent's valid actions, in `out` (the env's action space, padded False)."""
        out[:] = False
        if self.agent == SELECTOR:
            out[:self.observer.layout.window + 1] = self.selector_allowed
        else:
            nodes = out[:self.observer.layout.nodes]
            self.observer.allocator_mask(self.slot, self.chosen, nodes)
            if self.plan is not None:
                self.guard.placeable(self.plan, self.view.now, self.observer, self.row, nodes,
                                     self.chosen)
        return out

    def metrics(self) -> dict[str, Any]:
        result = self.engine.result("herasched")
        m = {k: v for k, v in result.metrics.items() if isinstance(v, (int, float))}
        m["started"] = self.started
        return m


class HeraSchedEnv(gym.Env):
    """`hpcsched/HeraSched-v0`: HeraSched's selector and allocator on the engine (see the module
    docstring).

    Args:
        trace: a trace file (sacct, HPCsim's format or SWF), a JobTable or a `Prepared` trace; None:
            the generated stand-in of the thesis's high-load day on a bundled Spartan cluster.
        cluster: a bundled cluster's name, a cluster file or a `Cluster` (default
            spartan-deeplearn).
        window, tail: W and T of the split window (default: Table 4.2's for the Spartan
            clusters, else 100 and 10).
        episode_jobs: an episode is this many jobs from a random start (None: the whole trace).
        profile: of a trace not yet prepared (default hpcsim, the thesis's simulator).
        selector_every, allocator_every: A_s and A_a (512 and 100).
        selector_reward: "average" (Eq. 4.1), "accrued" or "squared" (see the module docstring).
        reward_scale: seconds per reward unit (3,600: hours).
        start_range: (lo, hi), the starts random episodes draw from, both included.
        drop_oversized: drop (and count) jobs that can never run on the cluster instead of
            stopping.
        reserve_after: hold EASY's reservation for the oldest waiting job once it has waited
            this many seconds (`envs.hera_observation.OldestReservation`: the masks narrowed as
            ``herasched:MODEL@reserve=AGE`` narrows them); None: the thesis's masks.
        place_with: a heuristic allocator (topology, best-fit, first-available, in the profile's
            dialect) places each job the selector picks, as ``herasched:MODEL@allocator=NAME``
            does: the allocator agent never acts, every step is the selector's. None: the
            allocator agent places.
    """

    metadata = {"render_modes": []}

    def __init__(self, trace: str | os.PathLike | JobTable | Prepared | None = None,
                 cluster=DEFAULT_CLUSTER, *, window: int | None = None, tail: int | None = None,
                 episode_jobs: int | None = None, profile: str | None = None,
                 selector_every: int = SELECTOR_EVERY, allocator_every: int = ALLOCATOR_EVERY,
                 reward_scale: float = REWARD_SCALE, start_range: tuple[int, int] | None = None,
                 drop_oversized: bool = False, selector_reward: str = "average",
                 reserve_after: float | None = None, place_with: str | None = None) -> None:
        super().__init__()
        self.reserve_after = None if reserve_after is None else \
            OldestReservation.check(reserve_after)
        if place_with is not None and place_with not in HEURISTIC_ALLOCATORS:
            raise ValueError(f"place_with must be one of {', '.join(HEURISTIC_ALLOCATORS)} (a "
                             f"heuristic allocator) or None (the allocator agent), not "
                             f"{place_with!r}")
        self.place_with = place_with
        self.prepared = as_herasched_trace(trace, cluster, profile, drop_oversized=drop_oversized)
        self.layout = HeraLayout.of(self.prepared.cluster, *window_of(cluster, window, tail))
        n = len(self.prepared.jobs)
        self.episode_jobs = n if episode_jobs is None else int(episode_jobs)
        if not 0 < self.episode_jobs <= n:
            raise ValueError(f"episode_jobs must be in [1, {n}] (the trace's jobs), got "
                             f"{episode_jobs}")
        last = n - self.episode_jobs
        lo, hi = (0, last) if start_range is None else (int(x) for x in start_range)
        if not 0 <= lo <= hi <= last:
            raise ValueError(f"start_range must be (lo, hi) with 0 <= lo <= hi <= {last}, got "
                             f"{start_range}")
        self.start_range = (lo, hi)
        WaitRewards(selector_every, allocator_every, reward_scale, selector_reward)  # checked now
        self.reward_args = (int(selector_every), int(allocator_every), float(reward_scale),
                            str(selector_reward))
        lay = self.layout
        self.n_actions = max(lay.window + 1, lay.nodes)
        # unbounded above: a wait past 30 days and a queue past the window read more than 1
        self.observation_space = spaces.Box(0.0, np.inf, (lay.n_allocator,), np.float32)
        # sampled among the acting agent's valid actions (random agents, gymnasium's checker)
        self.action_space = SlotSpace(self.n_actions, self.action_masks)
        self.episode: HeraEpisode | None = None
        self._mask = np.zeros(self.n_actions, dtype=bool)

    @property
    def forward(self) -> int:
        """The selector's Forward action (= W)."""
        return self.layout.window

    @property
    def agent(self) -> int:
        """Who acts now: SELECTOR (0) or ALLOCATOR (1)."""
        return self.episode.agent

    @property
    def engine(self):
        return None if self.episode is None else self.episode.engine

    # -- Gymnasium API -----------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: Mapping[str, Any] | None = None):
        super().reset(seed=seed)
        start = self._start(options or {})
        self.episode = HeraEpisode(self.prepared, start, self.episode_jobs, self.layout,
                                   WaitRewards(*self.reward_args), self.reserve_after,
                                   self.place_with)
        if self.episode.done:  # cannot happen: a job waits at the first instant
            raise RuntimeError("the episode ended before any decision")
        return self.episode.obs.copy(), self._info((0.0, 0.0))

    def step(self, action):
        ep = self.episode
        if ep is None or ep.done:
            raise RuntimeError("the episode has ended (or never began): call reset() first")
        a = int(action)
        ep.mask(self._mask)
        if not 0 <= a < self.n_actions or not self._mask[a]:
            if ep.agent == SELECTOR and 0 <= a < self.n_actions and self._mask[self.forward]:
                a = self.forward  # an invalid pick is a Forward (as DBF's)
            else:
                who = "selector" if ep.agent == SELECTOR else "allocator"
                raise ValueError(f"action {a} is not valid for the {who} now (valid: "
                                 f"{np.flatnonzero(self._mask).tolist()})")
        if ep.agent == SELECTOR:
            rewards = ep.select(-1 if a == self.forward else a)
        else:
            rewards = ep.allocate(a)
        if ep.done:
            self._mask[:] = False
            info = {"action_mask": self._mask.copy(), "agent": SELECTOR,
                    "rewards": np.array(rewards), "window": (ep.start, ep.jobs),
                    "started": ep.started, "metrics": ep.metrics()}
            return (np.zeros(self.layout.n_allocator, np.float32), float(sum(rewards)), True,
                    False, info)
        return ep.obs.copy(), float(sum(rewards)), False, False, self._info(rewards)

    def action_masks(self) -> np.ndarray:
        """The acting agent's valid actions (sb3-contrib's MaskablePPO reads this)."""
        if self.episode is None or self.episode.done:
            return self._mask.copy()
        return self.episode.mask(self._mask).copy()

    # -- internals ---------------------------------------------------------------------------------
    def _start(self, options: Mapping[str, Any]) -> int:
        unknown = set(options) - {"start"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; known: 'start'")
        last = len(self.prepared.jobs) - self.episode_jobs
        if "start" in options:
            start = int(options["start"])
            if not 0 <= start <= last:
                raise ValueError(f"an episode of {self.episode_jobs} jobs starts in [0, {last}], "
                                 f"not at {start}")
            return start
        lo, hi = self.start_range
        return int(self.np_random.integers(lo, hi + 1))

    def _info(self, rewards) -> dict[str, Any]:
        ep = self.episode
        return {"action_mask": ep.mask(self._mask).copy(), "agent": ep.agent,
                "rewards": np.array(rewards, dtype=np.float64), "time": float(ep.view.now),
                "window": (ep.start, ep.jobs), "started": ep.started}


__all__ = ["ALLOCATOR", "ALLOCATOR_EVERY", "DEFAULT_CLUSTER", "HEURISTIC_ALLOCATORS",
           "HeraEpisode", "HeraSchedEnv", "REWARD_SCALE", "SELECTOR", "SELECTOR_EVERY",
           "THESIS_WINDOWS", "WaitRewards", "as_herasched_trace", "check_profile",
           "thesis_window", "window_of"]
