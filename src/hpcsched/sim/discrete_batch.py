"""DeepRM's simulator (the `deeprm` profile), batched: discrete time, pooled resources, M job slots.

Semantics (DeepRM, HotNets'16 section 3.2, with the authors' code where the paper is silent):

* Time is a step counter. Jobs arrive at integer steps; a job asks for a demand vector (units of
  each resource, see `hpcsched.cluster.grid`) and a length in steps, and is never preempted.
* Waiting jobs sit in M slots (the M oldest waiting jobs) and, beyond them, in a FIFO backlog. A
  new arrival takes the first empty slot, otherwise the backlog's tail; when a slot's job is placed
  the backlog's head moves into that slot. The queue is DeepRM's by default (`queue="bounded"`):
  the backlog holds `backlog` jobs, and an arrival that finds the M slots and the backlog full is
  dropped, as DeepRM's code drops it (never placed, never charged); unlike DeepRM, which only
  prints a line, every drop is counted (`dropped`, per job and in `metrics()`). Several arrivals
  at one step (a trace) join in arrival order until the queue is full. `queue="unbounded"` keeps
  every arrival (the image still shows at most `backlog` of the backlog).
* A decision is an action in 0..M: action i < M places slot i's job at the earliest offset in the
  window from which it fits for its whole length (possibly in the future: a reservation); action M
  ("void"), an empty slot or a job that fits nowhere end the current step: time advances by one,
  the occupancy table shifts up, arrivals are shown. Time is frozen while picks are valid, so
  several jobs can start in one step.
* When no pick is valid (nothing waits, or nothing fits anywhere) the engine advances time by itself:
  every action would do the same there, so asking would only cost decisions.
* The cost of a step is the sum, over every job in the system during it (arrived, not finished:
  waiting, reserved or running), of 1/T_j (slowdown) or 1 (completion time). With every step summed,
  the total cost is exactly the sum of the jobs' slowdowns (or completion times): a job is in the
  system for C_j = finish - arrival steps. The reward of an action is minus the cost of the steps it
  ended (0 for a placement that did not end a step).

`DiscreteBatch` holds B independent simulations in numpy arrays and steps them together, each
taking one action index per step (0..M-1 a slot, M void): it is the vectorised environment that
training, the env `hpcsched/DeepRM-v0` and the load sweep step directly. One simulation behind the
project's one `Engine` (`make_engine(jobs, cluster, "deeprm")`, typed decisions, a `Result`) is the
loop strategy `hpcsched.sim.discrete.DiscreteLoop`, which holds a batch of one.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from hpcsched.cluster.grid import ResourceGrid, earliest_start, occupy
from hpcsched.workload.deeprm import NEVER, GridJobs

REWARDS = ("slowdown", "completion")
QUEUES = ("bounded", "unbounded")


class DiscreteBatch:
    """B simulations of the deeprm profile stepped together. Build, then `reset(jobs)`."""

    def __init__(self, grid: ResourceGrid = ResourceGrid(), slots: int = 10, backlog: int = 60,
                 reward: str = "slowdown", queue: str = "bounded") -> None:
        if slots <= 0:
            raise ValueError(f"slots must be positive (got {slots})")
        if backlog < 0 or backlog % grid.horizon:
            raise ValueError(f"the backlog ({backlog}) must be a multiple of the horizon "
                             f"({grid.horizon}): it is drawn as whole columns of the image")
        if reward not in REWARDS:
            raise ValueError(f"unknown reward {reward!r}; choose one of: {', '.join(REWARDS)}")
        if queue not in QUEUES:
            raise ValueError(f"unknown queue {queue!r}; choose one of: {', '.join(QUEUES)} "
                             f"(bounded: M slots + backlog, arrivals beyond are dropped, DeepRM's)")
        self.grid = grid
        self.slots = slots
        self.backlog = backlog
        self.reward_kind = reward
        self.queue = queue
        #: jobs that may wait at once (slots + backlog), None: no bound
        self.capacity = slots + backlog if queue == "bounded" else None
        self.jobs: GridJobs | None = None

    # -- sizes -------------------------------------------------------------------------------------
    @property
    def actions(self) -> int:
        return self.slots + 1

    @property
    def void(self) -> int:
        return self.slots

    @property
    def image_shape(self) -> tuple[int, int]:
        """(T, width) of the state image: per resource [cluster | M slots], then the backlog."""
        g = self.grid
        return g.horizon, g.resources * g.units * (1 + self.slots) + self.backlog // g.horizon

    # -- episode -----------------------------------------------------------------------------------
    def reset(self, jobs: GridJobs) -> None:
        g = self.grid
        if jobs.resources != g.resources:
            raise ValueError(f"the jobs have {jobs.resources} resources, the grid {g.resources}")
        real = np.arange(jobs.arrival.shape[1])[None, :] < jobs.count[:, None]
        bad = real & g.never_fits(jobs.length, jobs.demand)
        if bad.any():
            b, j = map(int, np.argwhere(bad)[0])
            raise ValueError(
                f"jobset {b}, job {j} (length {int(jobs.length[b, j])}, demand "
                f"{jobs.demand[b, j].tolist()}) can never fit in {g.describe()}; "
                f"{int(bad.sum())} such job(s): map them out first")
        self.jobs = jobs
        B, J = jobs.arrival.shape
        self.B = B
        self.weight = np.where(real, 1.0 / np.maximum(jobs.length, 1), 0.0) \
            if self.reward_kind == "slowdown" else real.astype(np.float64)
        self.now = np.zeros(B, dtype=np.int64)
        self.used = np.zeros((B, g.horizon, g.resources), dtype=np.int64)
        self.slot = np.full((B, self.slots), -1, dtype=np.int64)
        # the queue: order[b, :accepted[b]] are the jobs that got in (not dropped), in arrival
        # order; order[b, head[b]] is the first of them not yet given a slot (the backlog's head)
        self.order = np.full((B, J), -1, dtype=np.int64)
        self.accepted = np.zeros(B, dtype=np.int64)
        self.head = np.zeros(B, dtype=np.int64)
        self.arrived = np.zeros(B, dtype=np.int64)  # jobs shown so far, dropped ones included
        self.dropped = np.zeros((B, J), dtype=bool)
        self.start = np.full((B, J), -1, dtype=np.int64)
        self.finish = np.full((B, J), NEVER, dtype=np.int64)
        self.done = np.zeros(B, dtype=bool)
        self.steps = np.zeros(B, dtype=np.int64)  # time steps simulated
        self.decisions = np.zeros(B, dtype=np.int64)
        self.withheld_steps = np.zeros(B, dtype=np.int64)  # steps ended while a shown job fit now
        self.withheld = np.zeros((B, J), dtype=np.int64)  # per job: steps it fit now but was held
        self.cost = np.zeros(B)  # total cost so far (minus the return)
        self._arrive(np.ones(B, dtype=bool))
        self._refresh()
        self.pending_reward = np.zeros(B)
        self._auto_advance(self.pending_reward)

    def _arrive(self, rows: np.ndarray) -> None:
        """Show the jobs arrived by now (the queue takes them in arrival order while it has room,
        and drops the rest), and move waiting jobs into empty slots."""
        arrived = np.where(rows, (self.jobs.arrival <= self.now[:, None]).sum(axis=1),
                           self.arrived)
        new = arrived - self.arrived
        if new.any():
            take = new
            if self.capacity is not None:
                waiting = (self.slot >= 0).sum(axis=1) + self.accepted - self.head
                take = np.clip(self.capacity - waiting, 0, new)
            rank = np.arange(self.order.shape[1])[None, :] - self.arrived[:, None]
            fresh = (rank >= 0) & (rank < new[:, None])
            joins = fresh & (rank < take[:, None])
            b, j = np.nonzero(joins)
            self.order[b, self.accepted[b] + rank[b, j]] = j
            self.accepted = self.accepted + take
            lost = fresh & ~joins
            if lost.any():
                self.dropped |= lost
                self.weight = np.where(lost, 0.0, self.weight)  # never in the system: no cost
            self.arrived = arrived
        empty = self.slot < 0
        rank = np.cumsum(empty, axis=1) - 1
        avail = (self.accepted - self.head)[:, None]
        fill = empty & (rank < avail) & rows[:, None]
        pos = np.minimum(self.head[:, None] + rank, self.order.shape[1] - 1)
        self.slot = np.where(fill, np.take_along_axis(self.order, np.maximum(pos, 0), axis=1),
                             self.slot)
        self.head = self.head + fill.sum(axis=1)

    def _slot_jobs(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(length (n, M), demand (n, M, d)) of the listed environments' slot jobs, zero for
        empty slots."""
        slot = self.slot[idx]
        pos = np.maximum(slot, 0)
        full = slot >= 0
        length = np.where(full, np.take_along_axis(self.jobs.length[idx], pos, axis=1), 0)
        demand = np.take_along_axis(self.jobs.demand[idx], pos[:, :, None], axis=1) \
            * full[:, :, None]
        return length, demand

    def _refresh(self, rows: np.ndarray | None = None) -> None:
        """Recompute what can be placed where in the listed environments (bool mask; all by
        default), after any change to their slots or tables."""
        if rows is None:
            idx = np.arange(self.B)
            self.slot_length = np.zeros((self.B, self.slots), dtype=np.int64)
            self.slot_demand = np.zeros((self.B, self.slots, self.grid.resources), np.int64)
            self.offset = np.full((self.B, self.slots), -1, dtype=np.int64)
        else:
            idx = np.flatnonzero(rows)
        length, demand = self._slot_jobs(idx)
        self.slot_length[idx] = length
        self.slot_demand[idx] = demand
        self.offset[idx] = earliest_start(self.used[idx], demand, length, self.grid.units)
        self.valid = self.offset >= 0  # (B, M): picks that place a job
        self.fit_now = self.offset == 0
        self.idle = ~np.any(self.used > 0, axis=(1, 2))  # nothing running or reserved

    def _cost(self, k: np.ndarray) -> np.ndarray:
        """Cost of the next k[b] steps if nothing is placed meanwhile: every job's weight times the
        steps of [now, now + k) it spends in the system, [arrival, finish)."""
        end = self.now + k
        inside = (np.minimum(end[:, None], self.finish)
                  - np.maximum(self.now[:, None], self.jobs.arrival))
        return (self.weight * np.clip(inside, 0, None)).sum(axis=1)

    def _advance(self, rows: np.ndarray, reward: np.ndarray, k: np.ndarray | None = None) -> None:
        """End the current step of the listed environments (bool mask), or k[b] steps at once
        (only where nothing can be decided meanwhile)."""
        if not rows.any():
            return
        k = np.where(rows, 1 if k is None else k, 0)
        cost = np.where(rows, self._cost(k), 0.0)
        reward -= cost
        self.cost += cost
        held = rows & self.fit_now.any(axis=1)
        self.withheld_steps += held
        if held.any():
            b, m = np.nonzero(self.fit_now & held[:, None])
            self.withheld[b, self.slot[b, m]] += 1
        self.steps += k
        T = self.grid.horizon
        src = np.arange(T)[None, :] + k[:, None]  # row t of the new table is row t+k of the old
        shifted = np.take_along_axis(self.used, np.minimum(src, T - 1)[:, :, None], axis=1)
        self.used = np.where((src < T)[:, :, None], shifted, 0)
        self.now = self.now + k
        self._arrive(rows)
        self._refresh(rows)
        self._update_done()

    def _update_done(self) -> None:
        all_shown = self.arrived >= self.jobs.count
        none_waiting = (self.head >= self.accepted) & np.all(self.slot < 0, axis=1)
        # padding rows and dropped jobs have finish NEVER: count only the others
        J = self.jobs.arrival.shape[1]
        real = np.arange(J)[None, :] < self.jobs.count[:, None]
        finished = np.all((self.finish <= self.now[:, None]) | ~real | self.dropped, axis=1)
        self.done = all_shown & none_waiting & finished

    def _auto_advance(self, reward: np.ndarray) -> None:
        """Advance every unfinished environment in which no pick is valid, until one is. Where
        nothing waits at all, jump straight to the next arrival (or to the last finish)."""
        while True:
            self._update_done()
            stuck = ~self.done & ~self.valid.any(axis=1)
            if not stuck.any():
                return
            nothing_waits = stuck & np.all(self.slot < 0, axis=1) & (self.head >= self.accepted)
            k = np.ones(self.B, dtype=np.int64)
            if nothing_waits.any():
                nxt = np.take_along_axis(self.jobs.arrival,
                                         np.minimum(self.arrived, self.jobs.arrival.shape[1] - 1)
                                         [:, None], axis=1)[:, 0]
                nxt = np.where(self.arrived < self.jobs.count, nxt, NEVER)
                real = np.arange(self.jobs.arrival.shape[1])[None, :] < self.jobs.count[:, None]
                last = np.where(real & (self.start >= 0), self.finish, 0).max(axis=1)
                target = np.where(nxt < NEVER, nxt, last)
                k = np.where(nothing_waits, np.maximum(target - self.now, 1), 1)
            self._advance(stuck, reward, k)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Apply one action per environment (ignored for finished ones). Returns (reward (B,),
        done (B,)). Environments where no pick is valid then run on until one is, or to the end."""
        actions = np.asarray(actions, dtype=np.int64)
        reward = np.zeros(self.B)
        live = ~self.done
        self.decisions += live
        in_range = (actions >= 0) & (actions < self.slots)
        a = np.clip(actions, 0, self.slots - 1)
        pick = live & in_range & self.valid[np.arange(self.B), a]
        if pick.any():
            rows = np.flatnonzero(pick)
            m = a[rows]
            j = self.slot[rows, m]
            off = self.offset[rows, m]
            length = self.jobs.length[rows, j]
            occupy(self.used, rows, off, length, self.jobs.demand[rows, j])
            self.start[rows, j] = self.now[rows] + off
            self.finish[rows, j] = self.now[rows] + off + length
            self.slot[rows, m] = -1
            self._arrive(pick)  # the backlog's head moves into the freed slot
            self._refresh(pick)
        self._advance(live & ~pick, reward)
        self._auto_advance(reward)
        return reward, self.done.copy()

    # -- what a policy sees -------------------------------------------------------------------------
    def action_mask(self) -> np.ndarray:
        """(B, M+1) bool: picks that place a job, and void, except on an idle cluster (nothing
        running or reserved) where a job could be placed. There void would leave the state as it
        is (only arrivals change it), so a deterministic policy that holds there once holds for
        ever: the episode never ends. Masking it keeps every masked policy live; everything else
        a policy may do, holding back a job while others run included, stays open."""
        void_ok = ~(self.idle & self.valid.any(axis=1))
        return np.concatenate([self.valid, void_ok[:, None]], axis=1)

    def backlog_count(self) -> np.ndarray:
        """Jobs waiting beyond the M slots, per environment."""
        return self.accepted - self.head

    def images(self, rows: np.ndarray | None = None, dtype=np.uint8) -> np.ndarray:
        """The state images (n, T, width) of the listed environments (all by default):
        per resource, the cluster's occupancy over the next T steps (units taken, from the left)
        beside each slot's job drawn as a block of length x demand; then the backlog, one cell per
        backlogged job filled row by row (at most `backlog`)."""
        g = self.grid
        if rows is None:
            rows = np.arange(self.B)
        T, R, M, d = g.horizon, g.units, self.slots, g.resources
        n = len(rows)
        unit = np.arange(R)
        cluster = self.used[rows][:, :, :, None] > unit  # (n, T, d, R)
        length, demand = self.slot_length[rows], self.slot_demand[rows]
        tall = np.arange(T)[None, None, :] < length[:, :, None]  # (n, M, T)
        wide = unit[None, None, None, :] < demand[:, :, :, None]  # (n, M, d, R)
        slot_img = tall[:, :, :, None, None] & wide[:, :, None, :, :]  # (n, M, T, d, R)
        slot_img = slot_img.transpose(0, 2, 3, 1, 4)  # (n, T, d, M, R)
        per_res = np.concatenate([cluster[:, :, :, None, :], slot_img], axis=3)  # (n,T,d,1+M,R)
        parts = [per_res.reshape(n, T, d * (1 + M) * R)]
        if self.backlog:
            width = self.backlog // T
            cells = np.arange(T * width).reshape(T, width)
            count = np.minimum(self.backlog_count()[rows], self.backlog)
            parts.append(cells[None] < count[:, None, None])
        return np.concatenate(parts, axis=2).astype(dtype)

    # -- results -----------------------------------------------------------------------------------
    def job_records(self) -> dict[str, np.ndarray]:
        """Flat per-job columns over all environments (real jobs only): env, arrival, length,
        start, finish, completion, slowdown, withheld (steps held back while it fit), dropped
        (the job found the queue full: never placed; NaN completion, as for an unfinished one)."""
        J = self.jobs.arrival.shape[1]
        real = np.arange(J)[None, :] < self.jobs.count[:, None]
        placed = real & (self.start >= 0)
        b, j = np.nonzero(real)
        arr = self.jobs.arrival[b, j]
        ln = self.jobs.length[b, j]
        fin = np.where(placed[b, j], self.finish[b, j], -1)
        completion = np.where(fin >= 0, fin - arr, np.nan).astype(np.float64)
        return {"env": b, "arrival": arr, "length": ln, "start": self.start[b, j], "finish": fin,
                "completion": completion, "slowdown": completion / ln,
                "withheld": self.withheld[b, j], "dropped": self.dropped[b, j]}

    def metrics(self) -> dict[str, float]:
        """Pooled over every job of every environment (as the authors' scripts average): slowdown
        and completion over the finished jobs; `unfinished` counts the jobs that got into the
        queue and were never placed, `dropped` those that found it full."""
        return pooled_metrics([self])


def pooled_metrics(batches: list[DiscreteBatch]) -> dict[str, float]:
    """`DiscreteBatch.metrics` of several finished batches taken as one: their environments in
    order, every job pooled."""
    recs = [b.job_records() for b in batches]
    rec = {k: np.concatenate([r[k] for r in recs]) for k in ("completion", "slowdown", "dropped")}
    done = ~np.isnan(rec["completion"])
    steps = sum(int(b.steps.sum()) for b in batches)
    withheld = sum(int(b.withheld_steps.sum()) for b in batches)
    cost = np.concatenate([b.cost for b in batches])
    return {
        "slowdown": float(np.mean(rec["slowdown"][done])) if done.any() else float("nan"),
        "completion": float(np.mean(rec["completion"][done])) if done.any() else float("nan"),
        "jobs": int(done.sum()),
        "unfinished": int((~done & ~rec["dropped"]).sum()),
        "dropped": int(rec["dropped"].sum()),
        "steps": steps,
        "decisions": sum(int(b.decisions.sum()) for b in batches),
        "withheld_share": withheld / steps if steps else 0.0,
        "return": float(-cost.mean()),
    }


class GridPolicy(Protocol):
    """A batch decision maker for the deeprm profile: `act(batch)` reads the batch and returns one
    action index (0..M-1 a slot, M void) per environment. It never steps the batch: `run_batch` (or
    the training loop) does. The same policies decide on one `Engine` through `decide(view)`."""

    name: str

    def act(self, batch: DiscreteBatch) -> np.ndarray: ...


def run_batch(batch: DiscreteBatch, jobs: GridJobs, policy: GridPolicy,
              max_decisions: int | None = None) -> DiscreteBatch:
    """Run `policy` on every jobset of `jobs` to the end (or `max_decisions` decisions)."""
    batch.reset(jobs)
    k = 0
    while not batch.done.all():
        if max_decisions is not None and k >= max_decisions:
            break
        batch.step(policy.act(batch))
        k += 1
    return batch


__all__ = ["QUEUES", "REWARDS", "DiscreteBatch", "GridJobs", "GridPolicy", "pooled_metrics",
           "run_batch"]
