"""CQSim's scheduling instances: the loop of the `cqsim` profile (CQSim's code, exactly) and of the
`dras` profile (CQSim as the shipped DRAS models were trained on it; IPDPS'21, spec dras.md sections
2.3-2.5).

A scheduling instance runs after every single event under `cqsim` (`Profile.instance="event"`, as
CQSim's `Cqsim_sim.scan_event` does: the completions of an instant first, in the order their jobs
started, then its arrivals in row order), and once per instant after all of its events under
`dras`. An instance has two levels:

1. Level 1: the policy picks a waiting job; if it fits it starts ("ready") and the policy picks
   again. The first pick that does not fit ends level 1; with backfilling it gets the instance's one
   reservation (or the oldest waiting job does, `Profile.reserve`), at the earliest time the
   free-node profile allows.
2. Level 2 (EASY backfilling): the candidates are the other waiting jobs, in queue order, that fit
   the free-node profile from now for their whole duration (request, or the logged run time with
   `Profile.backfill_runtime="actual"`, CQSim's choice) without delaying the reservation.
   Profile-based, as CQSim's `backfill_EASY` and DRAS's `backfill_RL` are: a job may end before the
   reservation or run past it on nodes it does not need. One candidate starts at a time
   ("backfilled"), the profile takes it in and the candidates are recomputed, until none is left.
   By default the engine starts them in queue order (first fit, which is EASY for FCFS); with
   `agent_backfill = True` every level-2 start is a decision too, and `next_decision()` offers the
   candidates (`view.level == 2`, `view.candidates`).

   Conservative backfilling (CQSim's `backfill_cons`) replaces level 2: every other waiting job, in
   queue order, is reserved at its earliest place in the profile, and those that fit from now for
   their whole duration start now. The plan is built anew at every instance: a reservation made at
   one instance is not kept at the next.

Decisions: at level 1, `Pick(row)` starts the job if it fits and otherwise ends level 1 with it
reserved; `Reserve(row)` reserves for it; `Wait()` ends the instance without a reservation (a
one-level agent with nothing that fits). At level 2, `Start(row)` or `Pick(row)` starts a candidate.

With `Profile.persist` (the released DRAS code) the reservation is kept across instances until its
job starts: an instance then first starts the reserved job if it fits, and otherwise goes straight to
backfilling. Without it (the paper, and CQSim's FCFS) level 1 runs at every instance.

Every started job has an execution mode (`mode`: READY, RESERVED or BACKFILLED, the categories of the
paper's Table IV): a job that starts at level 1 after having held a reservation counts as reserved.
Without backfilling there is no reservation: a pick that does not fit just ends the instance.

Running jobs release their nodes, in the profile, at start + request (the only end a real scheduler
knows; the cleaning has already clamped run times to the request, under `cqsim` in whole seconds
as CQSim's filter compares them, so a job may outlive its request by a fraction of a second there).
"""

from __future__ import annotations

import heapq

import numpy as np

from hpcsched.sim.backfill import _earliest_segment, _reserve
from hpcsched.sim.decisions import Pick, Reserve, Start, Wait
from hpcsched.sim.engine import (BACKFILLED, MODE_NAMES, NOT_STARTED, READY, RESERVED,
                                 DecisionView, Engine)
from hpcsched.sim.passes import PassLoop


class CqsimLoop:
    def __init__(self, engine: Engine) -> None:
        e = self.e = engine
        profile = engine.profile
        if e.backfill not in ("none", "easy", "conservative"):
            raise ValueError(f"the {profile.name!r} profile backfills with 'easy' (one "
                             f"reservation, CQSim's profile-based backfilling), 'conservative' (a "
                             f"reservation for every waiting job) or not at all ('none'), not "
                             f"{e.backfill!r}")
        if np.any(np.diff(e.jobs.submit) < 0):
            raise ValueError(f"jobs must be in submit order under the {profile.name!r} profile; "
                             f"clean the trace with the profile's rules first")
        if not hasattr(e.res, "free"):
            raise ValueError(f"the {profile.name!r} profile schedules a pool of identical nodes")
        dur = e.jobs.req_time if profile.backfill_runtime == "estimate" else e.executed
        self._dur = np.asarray(dur, dtype=np.float64)
        #: an instance after every single event (CQSim's code) or once per event time
        self.per_event = profile.instance == "event"
        if self.per_event:
            self._ends: list[tuple[float, int, int]] = []  # heap of (end, start order, row)
            self._started = 0
        else:
            self.events = PassLoop(engine)  # the same event handling as the textbook pass
        self._held = np.zeros(e.n, dtype=bool)  # rows that have held a reservation
        self.reserved: int | None = None
        self.level = 0  # 0: between instances; 1: level-1 picks; 2: backfilling
        self.candidates: list[int] = []
        self._agent_backfill = False
        self._times: list[float] = []
        self._free: list[int] = []
        self._overdue = False  # the profile has breakpoints before now (see _begin_backfill)
        # waiting rows as a mask too: the queue as an array in O(n / 8) instead of a list walk
        self._waiting = np.zeros(e.n, dtype=bool)
        self._row_order = True  # the queue is in row (arrival) order unless a policy sorted it

    @property
    def agent_backfill(self) -> bool:
        """A learned agent orders the backfill starts itself (DRAS); else first fit in queue
        order."""
        return self._agent_backfill

    @agent_backfill.setter
    def agent_backfill(self, on: bool) -> None:
        if on and self.e.backfill == "conservative":
            raise ValueError("backfill decisions (DRAS's level 2) order EASY's candidates; "
                             "conservative backfilling has none to order: use --backfill easy")
        self._agent_backfill = bool(on)

    def waiting_rows(self) -> np.ndarray:
        """The waiting rows in queue order, as an array."""
        e = self.e
        if self._row_order:
            return np.flatnonzero(self._waiting[: e.next_arrival])
        return np.fromiter(e.queue, dtype=np.int64, count=len(e.queue))

    def queue_reordered(self) -> None:
        self._row_order = False

    # -- stepped API -------------------------------------------------------------------------------
    def next_decision(self) -> DecisionView | None:
        e = self.e
        while True:
            if self.level == 1:
                if e.queue:
                    return DecisionView(e, 1, None, self.reserved)
                self.level = 0
            elif self.level == 2:
                if self.candidates:
                    if self.agent_backfill:
                        return DecisionView(e, 2, list(self.candidates), self.reserved)
                    self._backfill(self.candidates[0])
                    continue
                self.level = 0
            if not self._advance():
                return None
            self._open_instance()

    def apply(self, d) -> None:
        e = self.e
        kind = type(d)
        if self.level == 2:
            if kind is Wait:
                self.candidates = []
                return
            if kind not in (Pick, Start) or d.row not in self.candidates:
                raise ValueError(f"{d}: at level 2 the decision is Start(row) of a backfill "
                                 f"candidate ({self.candidates[:10]}...)")
            e.decisions += 1
            self._backfill(d.row)
            return
        if self.level != 1:
            raise RuntimeError("apply() without a pending decision (call next_decision() first)")
        if kind is Wait:
            self.end_level1(None)
            return
        row = d.row
        e.check_waiting(row)
        e.decisions += 1
        if kind is Start and not e.res.fits(row):
            raise ValueError(f"Start({row}): the job does not fit now")
        if e.res.fits(row):
            self._start_mode(row, RESERVED if (self._held[row] or kind is Reserve) else READY)
            e.queue.remove(row)
            return
        self.end_level1(row)

    def end_level1(self, row: int | None = None) -> None:
        """End level 1 of this instance: `row` (a pick that does not fit) or, under
        `reserve="fcfs_head"`, the oldest waiting job gets the reservation, and backfilling
        follows. Without backfilling, or with `row=None` (a one-level agent with nothing that fits),
        the instance simply ends."""
        e = self.e
        if e.backfill == "none" or row is None:
            self.level = 0
            return
        if e.profile.reserve == "fcfs_head":
            row = min(e.queue)  # rows are in submit order
            if e.res.fits(row):
                # the code would reserve it "now" and start it at the next event; we start it now
                self._held[row] = True
                self._start_mode(row, RESERVED)
                e.queue.remove(row)
                return
        self.reserved = row
        self._held[row] = True
        self._begin_backfill()

    # -- the two levels ----------------------------------------------------------------------------
    def _open_instance(self) -> None:
        e = self.e
        if not e.profile.persist:
            self.reserved = None
        r = self.reserved
        if r is not None:
            if e.res.fits(r):
                self._start_mode(r, RESERVED)
                e.queue.remove(r)
                self.reserved = None
            else:
                self._begin_backfill()
                return
        self.level = 1

    def _begin_backfill(self) -> None:
        """Build the free-node profile from the running jobs' estimated ends, place the reservation
        at its earliest start, and list the candidates (EASY) or reserve for every other waiting
        job too and start those whose reservation is now (conservative).

        The profile is CQSim's (`Node_struc_SWF.pre_reset`): a breakpoint now with the free nodes,
        then one per distinct estimated end of a running job, in time order, never merged with
        now. A job whose estimated end is now (it ends at this instant, but its completion is a
        later event of it) gives a second breakpoint at now; one still running past its estimate
        (its run time exceeds its request by less than a second, which CQSim's whole-second clamp
        lets through) gives breakpoints before now. The reservation and backfilling rules below
        treat both as CQSim does."""
        e = self.e
        run = np.fromiter(e.running, dtype=np.int64, count=len(e.running))
        uniq, inverse = np.unique(e.est_array[run], return_inverse=True)
        freed = np.cumsum(np.bincount(inverse, weights=e.need[run], minlength=uniq.size))
        free_now = e.res.free
        times = [e.now] + uniq.tolist()
        free = [free_now] + (free_now + freed).astype(np.int64).tolist()
        self._overdue = len(times) > 1 and times[1] < e.now
        r = self.reserved
        d = float(self._dur[r])
        i = _earliest_segment(times, free, e.need_list[r], d)
        _reserve(times, free, i, times[i] + d, e.need_list[r])
        e.reservations.append((r, times[i]))
        self._times, self._free = times, free
        if e.backfill == "conservative":
            self.level = 0
            self._conservative()
            return
        self.level = 2
        self._refresh_candidates()

    def _refresh_candidates(self) -> None:
        """Waiting jobs (not the reserved one) that fit the profile from now for their duration:
        at every breakpoint in [now, now + duration), as CQSim's `pre_avail` checks."""
        e = self.e
        q = self.waiting_rows()
        if self.reserved is not None:
            q = q[q != self.reserved]
        if q.size == 0:
            self.candidates = []
            return
        times = np.asarray(self._times)
        free = np.asarray(self._free)
        if self._overdue:  # breakpoints before now are not looked at
            free = np.where(times >= e.now, free, np.iinfo(np.int64).max)
        lowest = np.minimum.accumulate(free)  # fewest free nodes up to each breakpoint
        # times[1:] is sorted (times[0] is now): the breakpoints before now + d are the first k
        k = 1 + np.searchsorted(times[1:], e.now + self._dur[q], side="left")
        fits = lowest[k - 1] >= e.need[q]
        self.candidates = q[fits].tolist()

    def _backfill(self, row: int) -> None:
        e = self.e
        self._start_mode(row, BACKFILLED)
        e.queue.remove(row)
        n, d = e.need_list[row], float(self._dur[row])
        # a candidate's earliest place is now, except where a breakpoint before now is too full
        i = _earliest_segment(self._times, self._free, n, d) if self._overdue else 0
        _reserve(self._times, self._free, i, self._times[i] + d, n)
        self._refresh_candidates()

    def _conservative(self) -> None:
        """CQSim's conservative backfilling: every other waiting job, in queue order, is reserved
        at its earliest place in the profile; those that fit from now for their whole duration
        start now, in that order."""
        e = self.e
        times, free, now = self._times, self._free, e.now
        q = self.waiting_rows()
        q = q[q != self.reserved]
        # every job is checked at breakpoint 0 (now): once fewer nodes are left there than any
        # job still to come needs, nothing more starts, and the rest of the plan (rebuilt at the
        # next pass) changes nothing
        least_need = np.minimum.accumulate(e.need[q][::-1])[::-1].tolist()
        starts = []
        for k, c in enumerate(q.tolist()):
            if free[0] < least_need[k]:
                break
            n, d = e.need_list[c], float(self._dur[c])
            i = _earliest_segment(times, free, n, d)
            # without breakpoints before now, "fits now" is "its earliest place is breakpoint 0"
            if (_fits_from_now(times, free, n, now, now + d) if self._overdue else i == 0):
                starts.append(c)
            _reserve(times, free, i, times[i] + d, n)
        for c in starts:
            self._start_mode(c, BACKFILLED)
        if starts:
            started = set(starts)
            e.queue = [c for c in e.queue if c not in started]

    # -- events ------------------------------------------------------------------------------------
    def _start_mode(self, row: int, mode: int) -> None:
        if self.per_event:
            e = self.e
            e.start_job(row, None, mode)
            # completions of one instant are events in the order their jobs started (CQSim
            # inserts each after those already queued for that time)
            heapq.heappush(self._ends, (e.now + e.exec_list[row], self._started, row))
            self._started += 1
        else:
            self.events.start(row, None, mode)
        self._waiting[row] = False

    def _advance(self) -> bool:
        """Move to the next event (per-event instances) or the next event time (all its events),
        and process it. False at the end."""
        e = self.e
        if self.per_event:
            ends = self._ends
            i = e.next_arrival
            # a completion goes before an arrival at the same time
            if i < e.n and (not ends or e.submit_list[i] < ends[0][0]):
                e.now = e.submit_list[i]
                e.next_arrival = i + 1
                e.queue.append(i)
                self._waiting[i] = True
            elif ends:
                e.now, _, row = heapq.heappop(ends)
                e.end_job(row)
            else:
                return False
            e.instances += 1
            return True
        arrived = self.events.advance_to_next_event()
        if arrived is None:
            return False
        e.queue.extend(arrived)
        self._waiting[arrived.start:arrived.stop] = True
        e.instances += 1
        return True

    def finish(self, res) -> None:
        e = self.e
        res.metrics.update(mode_shares(e.jobs, e.mode, e.executed, e.need))
        res.counts["instances"] = e.instances
        res.modes = e.mode.copy()


def _fits_from_now(times: list, free: list, n: int, now: float, end: float) -> bool:
    """CQSim's `pre_avail`: `n` nodes free at every breakpoint in [now, end)."""
    for k, t in enumerate(times):
        if k and t >= end:  # times[1:] is sorted
            break
        if t >= now and free[k] < n:
            return False
    return True


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


__all__ = ["BACKFILLED", "CqsimLoop", "MODE_NAMES", "NOT_STARTED", "READY", "RESERVED",
           "mode_shares"]
