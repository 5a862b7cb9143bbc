"""Conservative backfilling that keeps its promises: one plan, kept from pass to pass.

Every waiting job holds a reservation: a start time at which the plan has room for it for its whole
requested time. The plan is a free-resource profile over time (running jobs until their estimated
ends, and every reservation), kept between passes and changed only as follows:

1. a job that arrives gets the earliest start that the running jobs and every reservation already
   given leave room for; jobs arriving together are placed in queue (priority) order;
2. when a running job ends before its estimate, or a reservation is given back (a job was not
   started at its time, which only a policy that waits can cause), the plan is compressed: each
   waiting job in queue order moves to the earliest start the others leave room for, never later
   than its own, and this is repeated until no job moves;
3. a job starts when its reservation is now, and only then.

A job that asks for no time holds no reservation (one of no length keeps nothing free): at every
pass it starts if it fits beside every job planned to run now, else it waits for the next pass.

So a reservation, once given, is kept or moved earlier; no arrival, whatever its priority, and no
compression pushes it back. Jobs end by their request (the profiles under this loop kill them
there), so every reservation's time is an event time: the earliest reservation is always some
running job's estimated end (the plan is compressed until nothing moves, so no job waits on a gap
that has closed), and the pass at that event starts it.

Where jobs may run past their request (a profile that does not kill them there), no promise can be
kept: an overrunning job holds its nodes beyond its estimate. The plan is then made anew at every
pass, in queue order, each running job assumed to end at its estimate or one second from now if
that is past (the rule `backfill.conservative_starts` applies around SchedGym's committed job).

`PoolPlan` counts identical whole nodes (its rules are mirrored in the compiled loop,
`kernels._conservative_update`); `conservative_nodes` holds the same plan on named nodes.
"""

from __future__ import annotations

from bisect import bisect_left

from hpcsched.sim import backfill as bf

INF = float("inf")


class Plan:
    """The reservations of the waiting jobs and the profile they sit in. The engine's pass loop
    calls `update` once per pass (at its first decision), then `start_now(row)` and `take(row)`.

    The profile is `times` (increasing breakpoints, the first one now) and `vals` (what is free in
    each segment [times[i], times[i+1]); the last segment runs for ever). Subclasses say what a
    value is (a node count, counts per node kind, a free matrix) and how a job fits in it."""

    def __init__(self, engine) -> None:
        self.e = engine
        self.times: list[float] = []
        self.vals: list = []
        self.start: dict[int, float] = {}  # waiting row -> reserved start
        self.usage: dict[int, object] = {}  # waiting row -> what its reservation takes
        self.running: dict[int, tuple[float, object]] = {}  # started by the plan: (est, usage)
        self.keeps = bool(engine.profile.kill_at_request)
        self.pass_id = -1

    # -- what the loop calls -----------------------------------------------------------------------
    def update(self) -> None:
        """Bring the plan to now: drop what is past, give back what ended early, compress where
        something was freed, and place the jobs that arrived, in queue order."""
        e = self.e
        now, req = e.now, e.req_list
        for r in [r for r in self.start if req[r] == 0]:  # they hold nothing: asked anew below
            del self.start[r]
            self.usage.pop(r, None)
        freed: list[tuple[float, object]] = []  # (until, usage) given back from now on
        for r in [r for r in self.running if r not in e.running]:
            est, use = self.running.pop(r)
            if est > now:
                freed.append((est, use))
        if not self.keeps or not self.times or len(self.running) != len(e.running):
            self.rebuild()
        else:
            self.drop_past(now)
            waiting = set(e.queue)
            for r in [r for r, s in self.start.items() if s < now or r not in waiting]:
                s, use = self.start.pop(r), self.usage.pop(r)
                if s + e.req_list[r] > now:
                    freed.append((s + e.req_list[r], use))
            for until, use in freed:
                self.change(now, until, use, +1)
            if freed:
                self.compress(max(until for until, _ in freed))
        zero = []
        for c in e.queue:
            if req[c] == 0:
                zero.append(c)
            elif c not in self.start:
                self.place(c)
        if zero:
            # A job that asks for no time holds no reservation (a reservation of no length keeps
            # nothing free): it starts when it fits beside every job planned to run now.
            left = self.copy(self.vals[0])
            for c in zero:
                use = self.fit_now(c, left)
                self.start[c] = now if use is not None else INF
                if use is not None:
                    self.usage[c] = use
                    left = self.plus(left, use, -1)

    def start_now(self, row: int) -> bool:
        return self.start[row] == self.e.now

    def due(self) -> list[int]:
        """The waiting jobs whose reservation is now, in queue order."""
        now, start = self.e.now, self.start
        return [c for c in self.e.queue if start[c] == now]

    def take(self, row: int):
        """`row` starts now, as planned: it leaves the reservations for the running jobs. Returns
        its nodes where the plan chose them (None: the engine's allocator chooses)."""
        e = self.e
        del self.start[row]
        use = self.usage.pop(row)
        self.running[row] = (e.now + e.req_list[row], use)
        return self.nodes_for(row, use)

    # -- the plan ----------------------------------------------------------------------------------
    def rebuild(self) -> None:
        """A new plan: the running jobs from the engine, no reservation."""
        e = self.e
        now = e.now
        self.start.clear()
        self.usage.clear()
        self.times, self.vals = [now], [self.free_now()]
        self.running = {}
        # a job running past its estimate (not killed there) is assumed to end a second from now
        ends = {r: e.est[r] if e.est[r] > now else now + 1.0 for r in e.running}
        for r in sorted(ends, key=ends.__getitem__):
            t = ends[r]
            use = self.running_usage(r)
            self.running[r] = (e.est[r], use)
            if t != self.times[-1]:
                self.times.append(t)
                self.vals.append(self.copy(self.vals[-1]))
            self.vals[-1] = self.plus(self.vals[-1], use, +1)
        self.changed(0)

    def place(self, c: int) -> None:
        """Give the waiting job `c` its earliest reservation."""
        e = self.e
        i, use = self.find(c)
        s = self.times[i]
        self.reserve(i, s + e.req_list[c], use)
        self.start[c] = s
        self.usage[c] = use
        if s > e.now and self.keeps:
            e.reservations.append((c, s))

    def compress(self, freed_until: float) -> None:
        """Move each waiting job, in queue order, to the earliest start the others leave room for,
        until none moves. Only a start before `freed_until` can have become possible: a window
        that fits now and did not at the last compression holds a point where something was
        freed since, and nothing was freed after `freed_until` (it grows as jobs move)."""
        e = self.e
        now, req = e.now, e.req_list
        moved = True
        while moved:
            moved = False
            for c in e.queue:
                s = self.start.get(c)
                if s is None or s <= now or req[c] == 0:
                    continue
                new = self.earlier(c, s, freed_until)
                if new is not None:
                    freed_until = max(freed_until, s + req[c])
                    moved = True
            self.compact()

    def reserve(self, i: int, end: float, use) -> None:
        """Take `use` from breakpoint i (the reservation's start) until `end`."""
        times, vals = self.times, self.vals
        j = i
        k = len(times)
        while j < k and times[j] < end:
            j += 1
        if j == k or times[j] != end:
            times.insert(j, end)
            vals.insert(j, self.copy(vals[j - 1]))
        for m in range(i, j):
            vals[m] = self.plus(vals[m], use, -1)
        self.changed(i)

    def change(self, t0: float, t1: float, use, sign: int) -> None:
        """Give back (`sign` +1) or take (-1) `use` over [t0, t1), t0 >= the first breakpoint."""
        if t1 <= t0:
            return
        times, vals = self.times, self.vals
        i = bisect_left(times, t0)
        if i == len(times) or times[i] != t0:
            times.insert(i, t0)
            vals.insert(i, self.copy(vals[i - 1]))
        j = bisect_left(times, t1, i)
        if j == len(times) or times[j] != t1:
            times.insert(j, t1)
            vals.insert(j, self.copy(vals[j - 1]))
        for m in range(i, j):
            vals[m] = self.plus(vals[m], use, sign)
        self.changed(i)

    def drop_past(self, now: float) -> None:
        """The profile from now on: the segment holding now starts now."""
        times = self.times
        i = bisect_left(times, now)
        if i == len(times) or times[i] != now:
            i -= 1
        self.times = [now] + times[i + 1:]
        self.vals = self.vals[i:]
        self.changed(0)
        self.compact()

    def compact(self) -> None:
        """Merge neighbouring segments with equal values (a representation only: every rule
        reads the same profile either way)."""
        times, vals, same = self.times, self.vals, self.same
        keep = [0] + [i for i in range(1, len(times)) if not same(vals[i], vals[i - 1])]
        if len(keep) != len(times):
            self.times = [times[i] for i in keep]
            self.vals = [vals[i] for i in keep]
            self.changed(0)

    def changed(self, first: int) -> None:
        """Called after every change of the profile: segments before `first` are as they were
        (at the same positions)."""

    # -- what a kind of resource says ---------------------------------------------------------------
    def free_now(self):
        raise NotImplementedError

    def running_usage(self, r: int):
        raise NotImplementedError

    def find(self, c: int):
        """(i, usage): the first breakpoint from which `c` fits for its requested time, and what
        it takes there."""
        raise NotImplementedError

    def fit_now(self, c: int, value):
        """What `c` would take if it started now with `value` free, or None if it does not fit."""
        raise NotImplementedError

    def earlier(self, c: int, s: float, freed_until: float):
        """Move `c`'s reservation (at `s`) to an earlier start if one fits; its new start, or None
        (the reservation is kept as it was)."""
        raise NotImplementedError

    def nodes_for(self, row: int, use):
        return None

    @staticmethod
    def copy(v):
        return v

    @staticmethod
    def plus(v, use, sign: int):
        return v + sign * use

    @staticmethod
    def same(a, b) -> bool:
        return a == b


class PoolPlan(Plan):
    """The plan on a pool of identical whole nodes: a value is a count of free nodes.

    Moving a job earlier needs no trial removal: a start t before its reservation s fits exactly
    when `need` nodes are free (with the job still at s) on [t, min(t + d, s)), since from s on the
    job's own nodes come back. A running maximum of the free counts rules out at once every job
    that no segment before min(s, freed_until) has room for."""

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self.need = engine.need_list
        self.prefix_max: list[int] = []  # running maximum of the free counts ...
        self.max_known = 0  # ... valid for the segments before this one

    def free_now(self) -> int:
        return self.e.res.free

    def running_usage(self, r: int) -> int:
        return self.need[r]

    def find(self, c: int):
        i = bf._earliest_segment(self.times, self.vals, self.need[c], self.e.req_list[c])
        return i, self.need[c]

    def fit_now(self, c: int, value):
        return self.need[c] if self.need[c] <= value else None

    def earlier(self, c: int, s: float, freed_until: float):
        times, free = self.times, self.vals
        n, d = self.need[c], self.e.req_list[c]
        limit = bisect_left(times, min(s, freed_until))  # segments starting before that
        if limit == 0:
            return None
        if self.max_known < limit:
            _extend_max(self.prefix_max, free, self.max_known, limit)
            self.max_known = limit
        if self.prefix_max[limit - 1] < n:
            return None
        i = bf._earlier_segment(times, free, n, d, s, limit)
        if i < 0:
            return None
        t = times[i]
        self.change(s, s + d, n, +1)
        self.reserve(i, t + d, n)
        self.start[c] = t
        return t

    def changed(self, first: int) -> None:
        if first < self.max_known:
            self.max_known = first


def _extend_max(prefix: list, values: list, start: int, stop: int) -> None:
    """prefix[q] = max(values[:q + 1]) for q in start .. stop - 1, given it for q < start."""
    del prefix[start:]
    m = prefix[start - 1] if start else values[0]
    for q in range(start, stop):
        v = values[q]
        if v > m:
            m = v
        prefix.append(m)


def make_plan(engine) -> Plan:
    """The conservative plan for the engine's resources."""
    if hasattr(engine.res, "free"):
        return PoolPlan(engine)
    from hpcsched.sim.conservative_nodes import node_plan

    return node_plan(engine)


__all__ = ["Plan", "PoolPlan", "make_plan"]
