"""Pass semantics: the textbook scheduler loop (the `standard` profile).

At every instant where jobs arrive or complete, the scheduler makes a pass: it asks for the next job;
if that job fits it starts and the scheduler asks again; if it does not fit, it is the job the
backfilling reserves for (nothing else starts without backfilling), the backfilling starts what it
may, and the pass ends until the next event. The choice is not committed: at the next event the
policy may pick another job. Jobs are killed at their requested time; the run ends when every job has
finished.
"""

from __future__ import annotations

import heapq

import numpy as np

from hpcsched.sim import backfill as bf
from hpcsched.sim.engine import DecisionView, Engine


class PassEngine(Engine):
    def __init__(self, jobs, cluster, profile, backfill) -> None:
        super().__init__(jobs, cluster, profile, backfill)
        if np.any(np.diff(jobs.submit) < 0):
            r = int(np.flatnonzero(np.diff(jobs.submit) < 0)[0]) + 1
            raise ValueError(
                f"jobs must be in submit order under the {profile.name!r} profile "
                f"(job {int(jobs.job_id[r])} is submitted before the job above it); "
                f"clean the trace with the profile's rules first"
            )
        self._est: list[float] = [0.0] * self.n
        self._completions: list[tuple[float, int]] = []  # heap of (end, row)
        # running jobs as dict keys: insertion-ordered, and removed in O(1) at completion
        self.running: dict[int, None] = {}  # type: ignore[assignment]
        self._next = 0
        self._in_pass = False

    # -- stepped API -------------------------------------------------------------------------------
    def next_decision(self) -> DecisionView | None:
        while True:
            if self._in_pass and self.queue:
                return DecisionView(self)
            self._in_pass = False
            if not self._advance():
                self.done = True
                return None

    def apply(self, row: int) -> None:
        if not self._in_pass:
            raise RuntimeError("apply() without a pending decision (call next_decision() first)")
        if row >= self._next or self.start[row] >= 0:
            raise ValueError(f"row {row} is not waiting in the queue")
        self.decisions += 1
        if self._need[row] <= self.free_nodes:
            self._start(row)
            self.queue.remove(row)
            return
        self._in_pass = False
        if self.backfill == "none":
            return
        others = [c for c in self.queue if c != row]
        if self.backfill == "easy":
            starts, shadow = bf.easy_candidates(self.now, row, others, self.running, self._est,
                                                self._need, self._req, self.free_nodes)
            self.reservations.append((row, shadow))
        elif self.backfill == "conservative":
            starts = bf.conservative_starts(self.now, [row] + others, self.running, self._est,
                                            self._need, self._req, self.free_nodes,
                                            self.cluster.nodes)
        else:  # schedgym, rescanned at every event
            starts = bf.schedgym_candidates(self.now, float(self.jobs.procs[row]),
                                            sorted(others, key=self._submit.__getitem__),
                                            self.running, self._est, self._need, self._req,
                                            self.free_nodes, self.cluster.procs_per_node)
        if starts:
            for c in starts:
                self._start(c)
            started = set(starts)
            self.queue = [c for c in self.queue if c not in started]

    # -- events ------------------------------------------------------------------------------------
    def _start(self, row: int) -> None:
        start_job(self, row)

    def _advance(self) -> bool:
        """Jump to the next instant with events, process all of them, open a pass. False at the end."""
        arrived = advance_to_next_event(self)
        if arrived is None:
            return False
        self.queue.extend(arrived)
        self._in_pass = True
        return True


def start_job(engine, row: int) -> None:
    """Start `row` now on `engine` (the pass and cqsim engines): its nodes, its estimated end
    (start + request) and its real end on the completion heap."""
    engine.started += 1
    engine.start[row] = engine.now
    engine._start_array[row] = engine.now
    engine.free_nodes -= engine._need[row]
    engine.running[row] = None
    engine._est[row] = engine.now + engine._req[row]
    heapq.heappush(engine._completions, (engine.now + engine._exec[row], row))


def advance_to_next_event(engine) -> range | None:
    """Move `engine` (one with a completion heap of (end, row) and rows arriving in order: the pass
    and cqsim engines) to the next instant with a completion or an arrival, finish the jobs that
    end then, and return the rows that arrive then, for the caller to queue. None at the end."""
    heap = engine._completions
    t_arr = engine._submit[engine._next] if engine._next < engine.n else None
    if heap and (t_arr is None or heap[0][0] <= t_arr):
        t = heap[0][0]
    elif t_arr is not None:
        t = t_arr
    else:
        return None
    engine.now = t
    while heap and heap[0][0] <= t:
        _, r = heapq.heappop(heap)
        del engine.running[r]
        engine.free_nodes += engine._need[r]
    first = engine._next
    submit, n = engine._submit, engine.n
    while engine._next < n and submit[engine._next] <= t:
        engine._next += 1
    return range(first, engine._next)
