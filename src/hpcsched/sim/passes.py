"""Pass semantics: the textbook scheduler loop (the `standard` profile) and HPCsim's (`hpcsim`).

At every instant where jobs arrive or complete, the scheduler makes a pass: it asks for the next job;
if that job fits it starts and the scheduler asks again; if it does not fit, it is the job the
backfilling reserves for (nothing else starts without backfilling), the backfilling starts what it
may, and the pass ends until the next event. The choice is not committed: at the next event the
policy may pick another job. Jobs are killed at their requested time; the run ends when every job has
finished.

HPCsim (the thesis's simulator) differs in one place: after a backfilling call that started a job,
its pass goes on (the selector picks again, and backfills again), and it ends only when a
backfilling call starts nothing (`Profile.backfill_repeats`); its backfilling rule is its own
(`backfill.hpcsim_starts`).

Decisions: `Pick(row)` starts the job if it fits, else reserves for it; `Reserve(row)` reserves for
it (it starts if it fits); `Start(row, nodes)` starts it where told (it must fit); `Wait(until)` ends
the pass, and with `until` the engine wakes then even if nothing happens.

Conservative backfilling keeps one plan across passes (`sim.conservative`): every waiting job holds
a reservation, and a job starts only when its reservation is now, so that starting the picked job
cannot break a reservation given to another. `Pick(row)` and `Reserve(row)` start the job if its
reservation is now; otherwise every job whose reservation is now starts (backfilled) and the pass
ends. `Start` is refused: the plan, not the caller, places jobs.
"""

from __future__ import annotations

import heapq

import numpy as np

from hpcsched.sim import backfill as bf
from hpcsched.sim.decisions import Pick, Reserve, Start, Wait
from hpcsched.sim.engine import BACKFILLED, DecisionView, Engine, READY, RESERVED
from hpcsched.sim.state import PoolState

INF = float("inf")


class PassLoop:
    def __init__(self, engine: Engine) -> None:
        self.e = engine
        jobs, profile = engine.jobs, engine.profile
        if np.any(np.diff(jobs.submit) < 0):
            r = int(np.flatnonzero(np.diff(jobs.submit) < 0)[0]) + 1
            raise ValueError(
                f"jobs must be in submit order under the {profile.name!r} profile "
                f"(job {int(jobs.job_id[r])} is submitted before the job above it); "
                f"clean the trace with the profile's rules first"
            )
        self.completions: list[tuple[float, int]] = []  # heap of (end, row)
        self.wakeups: list[float] = []  # heap of times a Wait(until) asked to be woken at
        self.in_pass = False
        self.repeats = profile.backfill_repeats
        self.plan = None
        if engine.backfill == "conservative":
            from hpcsched.sim.conservative import make_plan

            self.plan = make_plan(engine)

    # -- stepped API -------------------------------------------------------------------------------
    def next_decision(self) -> DecisionView | None:
        e = self.e
        while True:
            if self.in_pass and e.queue:
                return DecisionView(e)
            self.in_pass = False
            if not self.advance():
                return None

    def apply(self, d) -> None:
        if not self.in_pass:
            raise RuntimeError("apply() without a pending decision (call next_decision() first)")
        e = self.e
        e.decisions += 1
        if self.plan is not None and type(d) is not Wait:
            self.apply_planned(d)
            return
        if type(d) is Pick:
            row = d.row
            e.check_waiting(row)
            if e.res.fits(row):
                self.start(row, None, READY)
                e.queue.remove(row)
                return
            self.reserve(row)
        elif type(d) is Start:
            e.check_waiting(d.row)
            if not e.res.fits(d.row):
                raise ValueError(f"Start({d.row}): the job does not fit now")
            self.start(d.row, d.nodes, READY)
            e.queue.remove(d.row)
        elif type(d) is Reserve:
            e.check_waiting(d.row)
            if e.res.fits(d.row):
                self.start(d.row, None, RESERVED)
                e.queue.remove(d.row)
                return
            self.reserve(d.row)
        elif type(d) is Wait:
            self.in_pass = False
            if d.until is not None and d.until > e.now:
                heapq.heappush(self.wakeups, float(d.until))

    def apply_planned(self, d) -> None:
        """Pick(row) or Reserve(row) under conservative backfilling (see the module docstring)."""
        e = self.e
        if type(d) is Start:
            raise ValueError(f"Start({d.row}): under conservative backfilling jobs start when "
                             f"their reservation is now; decide Pick({d.row})")
        row = d.row
        e.check_waiting(row)
        plan = self.plan
        if plan.pass_id != e.instances:
            plan.update()
            plan.pass_id = e.instances
        if plan.start_now(row):
            self.start(row, plan.take(row), READY if type(d) is Pick else RESERVED)
            e.queue.remove(row)
            return
        self.in_pass = False
        due = plan.due()
        if due:
            for c in due:
                self.start(c, plan.take(c), BACKFILLED)
            started = set(due)
            e.queue = [c for c in e.queue if c not in started]

    def queue_reordered(self) -> None:
        pass

    def finish(self, result) -> None:
        result.modes = self.e.mode.copy()

    def run_fast(self, policy) -> bool:
        """Run the whole table in one compiled call when that gives the stepped loop's schedule:
        on a heterogeneous cluster `sim.kernels_nodes` (ours and HPCsim's pass, EASY or none);
        on identical nodes `sim.kernels`: the textbook pass, a priority that never changes
        (`static_keys`) and nothing else to ask the policy. False, and nothing done, otherwise."""
        e = self.e
        if not isinstance(e.res, PoolState):
            from hpcsched.sim.kernels_nodes import run_compiled

            return run_compiled(e, policy)
        if (e.started or self.in_pass or e.profile.dialect or self.repeats
                or not isinstance(e.res, PoolState) or not hasattr(policy, "static_keys")
                or hasattr(policy, "decide") or hasattr(policy, "reset")
                or (e.backfill == "conservative" and not e.profile.kill_at_request)):
            return False
        from hpcsched.sim import kernels

        if not kernels.HAVE_NUMBA:
            return False  # the plain-Python kernel is slower than this loop
        rank = e.static_rank(policy.static_keys(e.jobs))
        if e.profile.commit or len(set(rank)) != e.n:
            return False
        start, rows, shadows, decisions = kernels.schedule_static(
            e.jobs.submit, e.jobs.req_time, e.executed, e.need, np.asarray(rank), e.res.total,
            e.backfill, procs=e.jobs.procs, procs_per_node=getattr(e.cluster, "procs_per_node", 1))
        e.record_run(start, decisions=decisions,
                     reservations=list(zip(rows.tolist(), shadows.tolist())))
        return True

    # -- the pass ------------------------------------------------------------------------------------
    def reserve(self, row: int) -> None:
        """`row` does not fit: it gets the backfilling's reservation, backfilling starts what it
        may, and the pass ends (HPCsim's goes on if something started)."""
        e = self.e
        self.in_pass = False
        if e.backfill == "none":
            return
        others = [c for c in e.queue if c != row]
        starts = bf.backfill_starts(e, row, others)
        if starts:
            for c in starts:
                if type(c) is tuple:  # (row, nodes) where backfilling placed the job itself
                    self.start(c[0], c[1], BACKFILLED)
                else:
                    self.start(c, None, BACKFILLED)
            started = {c[0] if type(c) is tuple else c for c in starts}
            e.queue = [c for c in e.queue if c not in started]
            if self.repeats:
                self.in_pass = True

    def start(self, row: int, nodes, mode: int) -> None:
        e = self.e
        e.start_job(row, nodes, mode)
        heapq.heappush(self.completions, (e.now + e.exec_list[row], row))

    def advance(self) -> bool:
        """Jump to the next instant with events, process all of them, open a pass. False at the
        end."""
        arrived = self.advance_to_next_event()
        if arrived is None:
            return False
        e = self.e
        e.queue.extend(arrived)
        e.instances += 1
        self.in_pass = True
        return True

    def advance_to_next_event(self) -> range | None:
        """Move to the next instant with a completion, an arrival or a wake-up, finish the jobs
        that end then, and return the rows that arrive then. None at the end."""
        e = self.e
        heap = self.completions
        wake = self.wakeups
        t = heap[0][0] if heap else INF
        if e.next_arrival < e.n and e.submit_list[e.next_arrival] < t:
            t = e.submit_list[e.next_arrival]
        if wake and wake[0] < t:
            t = wake[0]
        if t == INF:
            return None
        while wake and wake[0] <= t:
            heapq.heappop(wake)
        e.now = t
        while heap and heap[0][0] <= t:
            _, r = heapq.heappop(heap)
            e.end_job(r)
        return e.arrive_until(t)


__all__ = ["PassLoop"]
