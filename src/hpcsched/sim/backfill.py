"""Backfilling rules, as pure functions over an engine's state.

All of them plan with requested times (the only durations a real scheduler knows). Each returns the
rows to start now, in order; the engine starts them. `backfill_starts` picks the rule for the
engine's backfilling and resources: the functions below count identical whole nodes (a pool);
`hpcsched.sim.backfill_nodes` holds the same rules on heterogeneous nodes, and HPCsim's own.

- `easy`: one reservation, for the job the policy picked. A waiting job may start now if it fits and
  either ends (by its request) no later than the reservation's shadow time, or uses only nodes the
  reserved job will not need at that time (the "extra" nodes).
- `conservative`: a reservation for every waiting job in queue order; a job starts now when its
  earliest reservation is now. Here the plan is made anew at every call, which is what SchedGym's
  commit loop gets (jobs there may outrun their request, so no reservation could be kept); the
  pass loop keeps one plan from pass to pass instead, and every reservation with it
  (`sim.conservative`).
- `schedgym`: RLScheduler's variant: the shadow time is found by adding up processors of running
  jobs ordered by their estimated end; a job may start only if it fits and ends strictly before the
  shadow time; there is no extra-node rule; candidates are scanned in FCFS (submit) order.
"""

from __future__ import annotations

import math

from typing import Sequence


def backfill_starts(engine, reserved: int, others: list[int]) -> list:
    """What the engine's backfilling starts now around `reserved` (a waiting job that does not fit),
    scanning `others` (the other waiting jobs, in queue order). Items are rows, or (row, nodes)
    where the rule placed the job itself. EASY reservations are logged in `engine.reservations`."""
    e = engine
    mode = e.backfill
    if not hasattr(e.res, "free"):
        from hpcsched.sim import backfill_nodes

        return backfill_nodes.starts(e, reserved, others)
    if mode == "easy":
        starts, shadow = easy_candidates(e.now, reserved, others, e.running, e.est, e.need_list,
                                         e.req_list, e.res.free)
        e.reservations.append((reserved, shadow))
        return starts
    if mode == "conservative":
        return conservative_starts(e.now, [reserved] + others, e.running, e.est, e.need_list,
                                   e.req_list, e.res.free, e.res.total)
    if mode == "schedgym":  # the textbook loop rescans at every event
        return schedgym_candidates(e.now, float(e.jobs.procs[reserved]),
                                   sorted(others, key=e.submit_list.__getitem__), e.running, e.est,
                                   e.need_list, e.req_list, e.res.free,
                                   e.cluster.procs_per_node)
    raise ValueError(f"unknown backfilling {mode!r}")


def schedgym_shadow_of(engine, row: int, running_by_est: Sequence[int]) -> float:
    """SchedGym's shadow time for `row` on the engine's pool (running jobs given by estimated end)."""
    e = engine
    return schedgym_shadow(e.now, e.jobs.procs[row], e.res.free, running_by_est, e.est,
                           e.need_list, e.cluster.procs_per_node)


def schedgym_shadow(
    now: float,
    procs: float,
    free_nodes: int,
    running_by_est: Sequence[int],
    est: Sequence[float],
    need: Sequence[int],
    procs_per_node: int,
) -> float:
    """SchedGym's shadow time for a job of `procs` processors: walk the running jobs in order of
    estimated end, adding their processors to the free ones, until the job would fit."""
    free_procs = free_nodes * procs_per_node
    shadow = now
    for r in running_by_est:
        free_procs += need[r] * procs_per_node
        shadow = est[r]
        if free_procs >= procs:
            break
    return shadow


def easy_shadow(
    now: float, reserved: int, running: Sequence[int], est: Sequence[float],
    need: Sequence[int], free_nodes: int,
) -> tuple[float, int]:
    """(shadow time, extra nodes) of the reservation for `reserved`: the earliest estimated time it
    fits, and how many nodes will be free then beyond what it needs."""
    want = need[reserved]
    avail = free_nodes
    if want <= avail:
        return now, avail - want
    ordered = sorted(running, key=est.__getitem__)
    shadow = now
    i = 0
    while i < len(ordered):
        r = ordered[i]
        avail += need[r]
        shadow = est[r]
        i += 1
        if avail >= want:
            # every job estimated to end at the same instant frees its nodes for the extra count
            while i < len(ordered) and est[ordered[i]] <= shadow:
                avail += need[ordered[i]]
                i += 1
            break
    return shadow, avail - want


def easy_candidates(
    now: float, reserved: int, order: Sequence[int], running: Sequence[int],
    est: Sequence[float], need: Sequence[int], req: Sequence[float], free_nodes: int,
) -> tuple[list[int], float]:
    """Rows of `order` (the waiting jobs other than the reserved one, in queue order) that EASY
    backfilling starts now, and the reservation's shadow time."""
    shadow, extra = easy_shadow(now, reserved, running, est, need, free_nodes)
    free = free_nodes
    starts = []
    for c in order:
        if free <= 0:
            break
        n = need[c]
        if n > free:
            continue
        if now + req[c] <= shadow:
            starts.append(c)
            free -= n
        elif n <= extra:
            starts.append(c)
            free -= n
            extra -= n
    return starts, shadow


def schedgym_candidates(
    now: float, procs: float, order_fcfs: Sequence[int], running: Sequence[int],
    est: Sequence[float], need: Sequence[int], req: Sequence[float], free_nodes: int,
    procs_per_node: int,
) -> list[int]:
    """SchedGym's rule for one scan (used by the textbook engine, which rescans at every event):
    rows of `order_fcfs` that fit now and end strictly before the shadow time."""
    shadow = schedgym_shadow(
        now, procs, free_nodes, sorted(running, key=est.__getitem__), est, need, procs_per_node
    )
    free = free_nodes
    starts = []
    for c in order_fcfs:
        if need[c] <= free and now + req[c] < shadow:
            starts.append(c)
            free -= need[c]
    return starts


def conservative_starts(
    now: float, order: Sequence[int], running: Sequence[int], est: Sequence[float],
    need: Sequence[int], req: Sequence[float], free_nodes: int, total_nodes: int,
) -> list[int]:
    """Rows of `order` whose earliest reservation, given to each waiting job in turn, is now.

    The free-node profile starts from the running jobs' estimated ends. A job still running past its
    estimate (possible only where jobs are not killed at their request) is assumed to end one second
    from now.
    """
    # profile: times[i] .. times[i+1] has free[i] nodes; the last segment runs forever
    times = [now]
    free = [free_nodes]
    for r in sorted(running, key=est.__getitem__):
        t = est[r] if est[r] > now else now + 1.0
        if t != times[-1]:
            times.append(t)
            free.append(free[-1])
        free[-1] += need[r]
    starts = []
    for c in order:
        n, d = need[c], req[c]
        i = _earliest_segment(times, free, n, d)
        s = times[i]
        if s == now:
            starts.append(c)
        _reserve(times, free, i, s + d, n)
    return starts


def _earliest_segment(times: list, free: list, n: int, d: float) -> int:
    """Index of the first breakpoint from which `n` nodes stay free for `d` seconds."""
    i = _earlier_segment(times, free, n, d, math.inf, len(times))
    if i < 0:
        raise AssertionError("a job larger than the cluster reached conservative backfilling")
    return i


def _earlier_segment(times: list, free: list, n: int, d: float, s: float, limit: int) -> int:
    """The first breakpoint i < limit from which `n` nodes stay free on [times[i], min(times[i] +
    d, s)), or -1."""
    k = len(times)
    i = 0
    while i < limit:
        if free[i] < n:
            i += 1
            continue
        end = min(times[i] + d, s)
        j = i + 1
        while j < k and times[j] < end and free[j] >= n:
            j += 1
        if j == k or times[j] >= end:
            return i
        i = j + 1  # segment j is too full: no start before it can work
    return -1


def _reserve(times: list, free: list, i: int, end: float, n: int) -> None:
    """Take `n` nodes from breakpoint i until `end`, splitting the last segment if needed."""
    j = i
    k = len(times)
    while j < k and times[j] < end:
        j += 1
    # segments i .. j-1 overlap [times[i], end); split at `end` if it falls inside segment j-1
    if j == k or times[j] != end:
        times.insert(j, end)
        free.insert(j, free[j - 1])
    for m in range(i, j):
        free[m] -= n
