"""CQSim's scheduling instances (the `cqsim` profile; DRAS, IPDPS'21, spec dras.md sections 2.3-2.5).

At every instant where jobs arrive or complete, one scheduling instance runs, in two levels:

1. Level 1: the policy picks a waiting job; if it fits it starts ("ready") and the policy picks
   again. The first pick that does not fit ends level 1; with backfilling it gets the instance's one
   reservation (or the oldest waiting job does, `Profile.reserve`), at the earliest time the
   free-node profile allows.
2. Level 2 (backfilling): the candidates are the other waiting jobs that fit the free-node profile
   from now for their whole duration (request, or the logged run time with
   `Profile.backfill_runtime="actual"`) without delaying the reservation. Profile-based, as CQSim's
   `backfill_RL` is: a job may end before the reservation or run past it on nodes it does not need.
   One candidate starts at a time ("backfilled"), the profile takes it in and the candidates are
   recomputed, until none is left. By default the engine starts them in queue order (first fit,
   which is EASY for FCFS); with `agent_backfill = True` every level-2 start is a decision too, and
   `next_decision()` offers the candidates (`view.level == 2`, `view.candidates`).

With `Profile.persist` (the released code) the reservation is kept across instances until its job
starts: an instance then first starts the reserved job if it fits, and otherwise goes straight to
backfilling. Without it (the paper) level 1 runs at every instance.

Every started job has an execution mode (`mode`: READY, RESERVED or BACKFILLED, the categories of the
paper's Table IV): a job that starts at level 1 after having held a reservation counts as reserved.
Without backfilling there is no reservation: a pick that does not fit just ends the instance.

Running jobs release their nodes, in the profile, at start + request (the only end a real scheduler
knows; the cqsim cleaning has already clamped run times to the request).
"""

from __future__ import annotations

import numpy as np

from hpcsched.sim.backfill import _earliest_segment, _reserve
from hpcsched.sim.engine import DecisionView, Engine
from hpcsched.sim.passes import advance_to_next_event, start_job

NOT_STARTED, READY, RESERVED, BACKFILLED = 0, 1, 2, 3
MODE_NAMES = {READY: "ready", RESERVED: "reserved", BACKFILLED: "backfilled"}


class CqsimView(DecisionView):
    """A decision of the cqsim loop: `level` 1 (pick from the queue) or 2 (pick a backfill
    candidate; `candidates` lists them in queue order, the reservation excluded)."""

    __slots__ = ("level", "candidates", "reserved")

    def __init__(self, engine: "CqsimEngine") -> None:
        super().__init__(engine)
        self.level: int = engine.level
        self.candidates: list[int] = list(engine.candidates) if engine.level == 2 else []
        self.reserved: int | None = engine.reserved


class CqsimEngine(Engine):
    def __init__(self, jobs, cluster, profile, backfill) -> None:
        super().__init__(jobs, cluster, profile, backfill)
        if backfill not in ("none", "easy"):
            raise ValueError(f"the {profile.name!r} profile backfills with 'easy' (CQSim's "
                             f"profile-based backfilling) or not at all ('none'), not {backfill!r}")
        if np.any(np.diff(jobs.submit) < 0):
            raise ValueError(f"jobs must be in submit order under the {profile.name!r} profile; "
                             f"clean the trace with the profile's rules first")
        self._est: list[float] = [0.0] * self.n
        dur = jobs.req_time if profile.backfill_runtime == "estimate" else self.executed
        self._dur = np.asarray(dur, dtype=np.float64)
        self._completions: list[tuple[float, int]] = []
        self.running: dict[int, None] = {}  # type: ignore[assignment]
        self._next = 0
        #: execution mode of every row (NOT_STARTED, READY, RESERVED, BACKFILLED)
        self.mode = np.zeros(self.n, dtype=np.int8)
        self._held = np.zeros(self.n, dtype=bool)  # rows that have held a reservation
        self.reserved: int | None = None
        self.level = 0  # 0: between instances; 1: level-1 picks; 2: backfilling
        self.candidates: list[int] = []
        #: a learned agent orders the backfill starts itself (DRAS); else first fit in queue order
        self.agent_backfill = False
        #: scheduling instances run so far (DRAS updates its network every 10 of them)
        self.instances = 0
        self._times: list[float] = []
        self._free: list[int] = []
        # waiting rows as a mask too: the queue as an array in O(n / 8) instead of a list walk
        self._waiting = np.zeros(self.n, dtype=bool)
        self._row_order = True  # the queue is in row (arrival) order unless a policy sorted it
        self._est_array = np.zeros(self.n)

    def waiting_rows(self) -> np.ndarray:
        """The waiting rows in queue order, as an array."""
        if self._row_order:
            return np.flatnonzero(self._waiting[: self._next])
        return np.fromiter(self.queue, dtype=np.int64, count=len(self.queue))

    def sort_queue(self, keys) -> int:
        self._row_order = False
        return super().sort_queue(keys)

    def _sort_queue_static(self, rank) -> int:
        self._row_order = False
        return super()._sort_queue_static(rank)

    # -- stepped API -------------------------------------------------------------------------------
    def next_decision(self) -> CqsimView | None:
        while True:
            if self.level == 1:
                if self.queue:
                    return CqsimView(self)
                self.level = 0
            elif self.level == 2:
                if self.candidates:
                    if self.agent_backfill:
                        return CqsimView(self)
                    self._backfill(self.candidates[0])
                    continue
                self.level = 0
            if not self._advance():
                self.done = True
                return None
            self._open_instance()

    def apply(self, row: int) -> None:
        if self.level == 2:
            if row not in self.candidates:
                raise ValueError(f"row {row} is not a backfill candidate now")
            self.decisions += 1
            self._backfill(row)
            return
        if self.level != 1:
            raise RuntimeError("apply() without a pending decision (call next_decision() first)")
        if row >= self._next or self.start[row] >= 0:
            raise ValueError(f"row {row} is not waiting in the queue")
        self.decisions += 1
        if self._need[row] <= self.free_nodes:
            self._start_mode(row, RESERVED if self._held[row] else READY)
            self.queue.remove(row)
            return
        self.end_level1(row)

    def end_level1(self, row: int | None = None) -> None:
        """End level 1 of this instance: `row` (a pick that does not fit) or, under
        `reserve="fcfs_head"`, the oldest waiting job gets the reservation, and backfilling
        follows. Without backfilling, or with `row=None` (a one-level agent with nothing that fits),
        the instance simply ends."""
        if self.backfill == "none" or row is None:
            self.level = 0
            return
        if self.profile.reserve == "fcfs_head":
            row = min(self.queue)  # rows are in submit order
            if self._need[row] <= self.free_nodes:
                # the code would reserve it "now" and start it at the next event; we start it now
                self._held[row] = True
                self._start_mode(row, RESERVED)
                self.queue.remove(row)
                return
        self.reserved = row
        self._held[row] = True
        self._begin_backfill()

    # -- the two levels ----------------------------------------------------------------------------
    def _open_instance(self) -> None:
        self.instances += 1
        if not self.profile.persist:
            self.reserved = None
        r = self.reserved
        if r is not None:
            if self._need[r] <= self.free_nodes:
                self._start_mode(r, RESERVED)
                self.queue.remove(r)
                self.reserved = None
            else:
                self._begin_backfill()
                return
        self.level = 1

    def _begin_backfill(self) -> None:
        """Build the free-node profile from the running jobs' estimated ends, place the reservation
        at its earliest start, and list the candidates."""
        run = np.fromiter(self.running, dtype=np.int64, count=len(self.running))
        # each running job frees its nodes at its estimated end (a second from now if overdue)
        ends = np.maximum(self._est_array[run], self.now + 1.0)
        uniq, inverse = np.unique(ends, return_inverse=True)
        freed = np.cumsum(np.bincount(inverse, weights=self.need[run], minlength=uniq.size))
        times = [self.now] + uniq.tolist()
        free = [self.free_nodes] + (self.free_nodes + freed).astype(np.int64).tolist()
        r = self.reserved
        d = float(self._dur[r])
        i = _earliest_segment(times, free, self._need[r], d)
        _reserve(times, free, i, times[i] + d, self._need[r])
        self.reservations.append((r, times[i]))
        self._times, self._free = times, free
        self.level = 2
        self._refresh_candidates()

    def _refresh_candidates(self) -> None:
        """Waiting jobs (not the reserved one) that fit the profile from now for their duration."""
        q = self.waiting_rows()
        if self.reserved is not None:
            q = q[q != self.reserved]
        if q.size == 0:
            self.candidates = []
            return
        times = np.asarray(self._times)
        lowest = np.minimum.accumulate(np.asarray(self._free))  # fewest free nodes up to each point
        # segments [times[k], times[k+1]) overlapping [now, now + d) are those with times[k] < now + d
        k = np.searchsorted(times, self.now + self._dur[q], side="left")
        fits = lowest[np.maximum(k, 1) - 1] >= self.need[q]
        self.candidates = q[fits].tolist()

    def _backfill(self, row: int) -> None:
        self._start_mode(row, BACKFILLED)
        self.queue.remove(row)
        _reserve(self._times, self._free, 0, self.now + float(self._dur[row]), self._need[row])
        self._refresh_candidates()

    # -- events ------------------------------------------------------------------------------------
    def _start_mode(self, row: int, mode: int) -> None:
        start_job(self, row)
        self._est_array[row] = self._est[row]
        self._waiting[row] = False
        self.mode[row] = mode

    def _advance(self) -> bool:
        """Jump to the next event time and process every event there. False at the end."""
        arrived = advance_to_next_event(self)
        if arrived is None:
            return False
        self.queue.extend(arrived)
        self._waiting[arrived.start:arrived.stop] = True
        return True

    def result(self, policy: str = ""):
        res = super().result(policy)
        res.metrics.update(mode_shares(self.jobs, self.mode, self.executed, self.need))
        res.counts["instances"] = self.instances
        res.modes = self.mode.copy()
        return res


def mode_shares(jobs, mode: np.ndarray, executed: np.ndarray, need: np.ndarray) -> dict[str, float]:
    """Share of jobs and of node-hours started in each mode (the paper's Table IV), in percent."""
    started = mode != NOT_STARTED
    area = executed * need
    total_jobs = max(int(np.count_nonzero(started)), 1)
    total_area = float(np.sum(area[started])) or 1.0
    out = {}
    for m, name in MODE_NAMES.items():
        sel = mode == m
        out[f"{name}_jobs_pct"] = 100.0 * int(np.count_nonzero(sel)) / total_jobs
        out[f"{name}_nodeh_pct"] = 100.0 * float(np.sum(area[sel])) / total_area
    return out


__all__ = ["BACKFILLED", "CqsimEngine", "CqsimView", "MODE_NAMES", "NOT_STARTED", "READY",
           "RESERVED", "mode_shares"]
