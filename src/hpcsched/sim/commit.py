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
"""

from __future__ import annotations

from hpcsched.sim import backfill as bf
from hpcsched.sim.engine import DecisionView, Engine


class CommitEngine(Engine):
    def __init__(self, jobs, cluster, profile, backfill) -> None:
        super().__init__(jobs, cluster, profile, backfill)
        self._fin: list[float] = [0.0] * self.n  # actual finish of started jobs (start + run)
        self._est: list[float] = [0.0] * self.n  # estimated finish (start + request)
        self.queue = [0]
        self._next = 1  # next row to arrive

    # -- stepped API -------------------------------------------------------------------------------
    def next_decision(self) -> DecisionView | None:
        if self.done:
            return None
        return DecisionView(self)

    def apply(self, row: int) -> None:
        if self.done:
            raise RuntimeError("apply() after the end of the episode")
        if self.start[row] >= 0 or row >= self._next:
            raise ValueError(f"row {row} is not waiting in the queue")
        self.decisions += 1
        if self._need[row] > self.free_nodes:
            if self.backfill == "none":
                self._wait_until_fits(row)
            elif self.backfill == "schedgym":
                self._backfill_schedgym(row)
            else:
                self._backfill_recomputed(row)
        self._start(row)
        self.queue.remove(row)
        if not self._forward_to_arrival():
            self.done = True

    def can_idle(self) -> bool:
        """Whether letting time pass can change anything: a job is running or one is to arrive."""
        return bool(self.running) or self._next < self.n

    def idle(self, max_wait: float) -> bool:
        """Let time pass without starting anything (SchedInspector's rejection): jump `max_wait`
        ahead if that comes before the next arrival and the next actual completion, else process
        the earlier of those two events (ties go to the arrival). False, and nothing changes,
        when nothing is left to happen: no job is running and every job has arrived."""
        if self.done:
            raise RuntimeError("idle() after the end of the episode")
        arrival = self._submit[self._next] if self._next < self.n else float("inf")
        release = min(map(self._fin.__getitem__, self.running), default=float("inf"))
        if not self.can_idle():
            return False
        if self.now + max_wait < min(arrival, release):
            self.now += max_wait
        else:
            self._advance_one() if self.running else self._arrive()
        return True

    # -- events ------------------------------------------------------------------------------------
    def _start(self, row: int) -> None:
        super()._start(row)
        self._fin[row] = self.now + self._exec[row]
        self._est[row] = self.now + self._req[row]

    def _advance_one(self) -> None:
        """One event: the next arrival if it comes no later than the earliest actual completion
        (ties go to the arrival), else that single completion."""
        running = self.running
        running.sort(key=self._fin.__getitem__)
        release = self._fin[running[0]]
        if self._next < self.n and self._submit[self._next] <= release:
            self._arrive()
        else:
            if release > self.now:
                self.now = release
            self.free_nodes += self._need[running.pop(0)]

    def _arrive(self) -> None:
        t = self._submit[self._next]
        if t > self.now:
            self.now = t
        self.queue.append(self._next)
        self._next += 1

    def _forward_to_arrival(self) -> bool:
        """After a start: if the queue is empty, advance until a job arrives. False at the end."""
        if self.queue:
            return True
        if self._next >= self.n:
            return False
        running = self.running
        while True:
            if running:
                running.sort(key=self._fin.__getitem__)
                release = self._fin[running[0]]
                if self._submit[self._next] > release:
                    if release > self.now:
                        self.now = release
                    self.free_nodes += self._need[running.pop(0)]
                    continue
            self._arrive()
            return True

    # -- waiting for the committed job ---------------------------------------------------------------
    def _wait_until_fits(self, row: int) -> None:
        need = self._need[row]
        while need > self.free_nodes:
            self._advance_one()

    def _backfill_schedgym(self, row: int) -> None:
        """SchedGym's backfilling: the shadow time of the committed job is computed once; until the
        job fits, every job that fits now and ends by its request strictly before the shadow time is
        started, scanning the queue in FCFS order; then one event is advanced."""
        self.running.sort(key=self._est.__getitem__)
        shadow = bf.schedgym_shadow(
            self.now, self.jobs.procs[row], self.free_nodes, self.running, self._est, self._need,
            self.cluster.procs_per_node,
        )
        need = self._need[row]
        submit, req, needs = self._submit, self._req, self._need
        while need > self.free_nodes:
            self.queue.sort(key=submit.__getitem__)
            for c in list(self.queue):
                if needs[c] <= self.free_nodes and self.now + req[c] < shadow:
                    self._start(c)
                    self.queue.remove(c)
            self._advance_one()

    def _backfill_recomputed(self, row: int) -> None:
        """EASY or conservative backfilling around the committed job, recomputed at every event:
        candidates are scanned in the current queue order."""
        need = self._need[row]
        while need > self.free_nodes:
            others = [c for c in self.queue if c != row]
            if self.backfill == "easy":
                starts, shadow = bf.easy_candidates(
                    self.now, row, others, self.running, self._est, self._need, self._req,
                    self.free_nodes,
                )
                self.reservations.append((row, shadow))
            else:
                starts = bf.conservative_starts(
                    self.now, [row] + others, self.running, self._est, self._need, self._req,
                    self.free_nodes, self.cluster.nodes,
                )
            for c in starts:
                self._start(c)
                self.queue.remove(c)
            self._advance_one()
