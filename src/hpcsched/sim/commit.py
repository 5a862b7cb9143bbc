"""Commit semantics: SchedGym's event loop (RLScheduler, SC'20; spec rlscheduler.md section 2.4).

A decision is asked whenever the waiting queue is non-empty. The chosen job is committed: it starts as
soon as it fits, and no other decision is asked before that. While it waits, events are advanced one
at a time (an arrival if the next job's submit time is no later than the earliest actual completion,
else that single completion), and, with backfilling, other jobs may start around it. After it starts,
if the queue is empty, events are advanced until a job arrives. The episode ends when every job has
arrived and the queue is empty, i.e. at the start of the last job; running jobs are not finished.

The order of the waiting and running lists is kept exactly as SchedGym keeps it (each stable sort is
done in place, at the same moments), because ties in those orders decide which of two simultaneous
events happens first, and so the start times.

Decisions: `Pick(row)` and `Reserve(row)` commit to the job; `Start(row, nodes)` starts a job that
fits now; `Wait(until)` lets time pass without starting anything (SchedInspector's rejection): to
`until` if that comes before the next arrival and the next actual completion, else to the earlier of
those two events, which is processed (ties go to the arrival); `Wait()` processes the next event.
"""

from __future__ import annotations

from hpcsched.sim import backfill as bf
from hpcsched.sim.decisions import Pick, Reserve, Start, Wait
from hpcsched.sim.engine import BACKFILLED, DecisionView, Engine, READY

INF = float("inf")


class CommitLoop:
    def __init__(self, engine: Engine) -> None:
        self.e = engine
        self.fin: list[float] = [0.0] * engine.n  # actual finish of started jobs (start + run)
        self.order: list[int] = []  # the running rows, in SchedGym's list order
        engine.queue = [0]
        engine.next_arrival = 1
        self.finished = False

    # -- stepped API -------------------------------------------------------------------------------
    def next_decision(self) -> DecisionView | None:
        if self.finished:
            return None
        return DecisionView(self.e)

    def apply(self, d) -> None:
        e = self.e
        if self.finished:
            raise RuntimeError("apply() after the end of the episode")
        kind = type(d)
        if kind is Wait:
            until = INF if d.until is None else float(d.until)
            if not self.wait(until - e.now):
                raise ValueError("Wait: nothing can happen while waiting (no job is running and "
                                 "every job has arrived); pick a job")
            return
        row = d.row
        e.check_waiting(row)
        e.decisions += 1
        if kind is Start:
            if not e.res.fits(row):
                raise ValueError(f"Start({row}): the job does not fit now")
            self.start(row, d.nodes)
        else:  # Pick and Reserve: commit to the job
            if not e.res.fits(row):
                if e.backfill == "none":
                    self.wait_until_fits(row)
                elif e.backfill == "schedgym":
                    self.backfill_schedgym(row)
                else:
                    self.backfill_recomputed(row)
            self.start(row, None)
        e.queue.remove(row)
        if not self.forward_to_arrival():
            self.finished = True

    def queue_reordered(self) -> None:
        pass

    def finish(self, result) -> None:
        pass

    def can_wait(self) -> bool:
        e = self.e
        return bool(self.order) or e.next_arrival < e.n

    def wait(self, max_wait: float) -> bool:
        """Let time pass without starting anything: jump `max_wait` ahead if that comes before the
        next arrival and the next actual completion, else process the earlier of those two events
        (ties go to the arrival). False, and nothing changes, when nothing is left to happen."""
        e = self.e
        arrival = e.submit_list[e.next_arrival] if e.next_arrival < e.n else INF
        release = min(map(self.fin.__getitem__, self.order), default=INF)
        if not self.can_wait():
            return False
        if e.now + max_wait < min(arrival, release):
            e.now += max_wait
        else:
            self.advance_one() if self.order else self.arrive()
        return True

    # -- events ------------------------------------------------------------------------------------
    def start(self, row: int, nodes, mode: int = READY) -> None:
        e = self.e
        e.start_job(row, nodes, mode)
        self.fin[row] = e.now + e.exec_list[row]
        self.order.append(row)

    def advance_one(self) -> None:
        """One event: the next arrival if it comes no later than the earliest actual completion
        (ties go to the arrival), else that single completion."""
        e = self.e
        running = self.order
        running.sort(key=self.fin.__getitem__)
        release = self.fin[running[0]]
        if e.next_arrival < e.n and e.submit_list[e.next_arrival] <= release:
            self.arrive()
        else:
            if release > e.now:
                e.now = release
            e.end_job(running.pop(0))

    def arrive(self) -> None:
        e = self.e
        t = e.submit_list[e.next_arrival]
        if t > e.now:
            e.now = t
        e.queue.append(e.next_arrival)
        e.next_arrival += 1

    def forward_to_arrival(self) -> bool:
        """After a start: if the queue is empty, advance until a job arrives. False at the end."""
        e = self.e
        if e.queue:
            return True
        if e.next_arrival >= e.n:
            return False
        running = self.order
        while True:
            if running:
                running.sort(key=self.fin.__getitem__)
                release = self.fin[running[0]]
                if e.submit_list[e.next_arrival] > release:
                    if release > e.now:
                        e.now = release
                    e.end_job(running.pop(0))
                    continue
            self.arrive()
            return True

    # -- waiting for the committed job ---------------------------------------------------------------
    def wait_until_fits(self, row: int) -> None:
        fits = self.e.res.fits
        while not fits(row):
            self.advance_one()

    def backfill_schedgym(self, row: int) -> None:
        """SchedGym's backfilling: the shadow time of the committed job is computed once; until the
        job fits, every job that fits now and ends by its request strictly before the shadow time is
        started, scanning the queue in FCFS order; then one event is advanced."""
        e = self.e
        self.order.sort(key=e.est.__getitem__)
        shadow = bf.schedgym_shadow_of(e, row, self.order)
        fits = e.res.fits
        submit, req = e.submit_list, e.req_list
        while not fits(row):
            e.queue.sort(key=submit.__getitem__)
            for c in list(e.queue):
                if fits(c) and e.now + req[c] < shadow:
                    self.start(c, None, BACKFILLED)
                    e.queue.remove(c)
            self.advance_one()

    def backfill_recomputed(self, row: int) -> None:
        """EASY or conservative backfilling around the committed job, recomputed at every event:
        candidates are scanned in the current queue order."""
        e = self.e
        fits = e.res.fits
        while not fits(row):
            others = [c for c in e.queue if c != row]
            for c in bf.backfill_starts(e, row, others):
                if type(c) is tuple:
                    self.start(c[0], c[1], BACKFILLED)
                    e.queue.remove(c[0])
                else:
                    self.start(c, None, BACKFILLED)
                    e.queue.remove(c)
            self.advance_one()


__all__ = ["CommitLoop"]
