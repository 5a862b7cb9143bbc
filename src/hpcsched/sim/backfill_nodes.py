"""Backfilling on heterogeneous nodes: EASY, conservative, and HPCsim's own rule.

A job asks for `count` distinct nodes with a per-node request free on each. Running jobs are assumed
to end at their requested time (start + request: the only end a real scheduler knows) and then give
back what they took on each of their nodes.

- EASY: the reservation of the job at the head is the earliest time at which `count` nodes each have
  its request free, releasing running jobs at their estimated ends. A waiting job (in queue order)
  may start now if it fits and either ends by the reservation, or, placed where the allocator puts
  it now, leaves the nodes free at the reservation time still able to hold the head job. Every job
  started so is taken out of that projection, so the head's reservation holds whatever starts.
  On identical whole nodes this is the counting rule of `backfill.easy_candidates` exactly.
- Conservative: a reservation for every waiting job in queue order: the earliest time from which
  `count` nodes each keep the request free for the job's whole requested time, given the running
  jobs and the reservations made before it; a job whose reservation is now starts. On an exclusive
  cluster a job takes whole idle nodes, and idle nodes of one kind are interchangeable, so the plan
  counts idle nodes per kind over time (on identical nodes: `backfill.conservative_starts`
  exactly); a job takes its nodes from the smallest kinds that hold it first. On a shared cluster
  what is left on a node depends on which jobs share it, so the plan is kept per named node (it
  never assumes a job could move between nodes).
- HPCsim (`hpcsim` profile, spec hpcsim-semantics.md section 7): the head's earliest start is the
  `count`-th smallest per-node estimate (per node: walk its running jobs by remaining requested
  time, giving back their share, until the head's request is free); each waiting job that fits now,
  in priority order, is placed tentatively by the allocator and kept only if the head's estimate is
  exactly unchanged.

Each function returns the jobs to start now as (row, nodes) pairs, in order.
"""

from __future__ import annotations

import numpy as np

from hpcsched.cluster.allocate import fitting_nodes


def starts(engine, reserved: int, others: list[int]) -> list[tuple[int, np.ndarray]]:
    mode = engine.backfill
    if engine.profile.dialect == "hpcsim":
        if mode != "easy":
            raise ValueError(f"HPCsim backfills its own way (--backfill easy) or not at all, not "
                             f"{mode!r}")
        return hpcsim_starts(engine, reserved, others)
    if mode == "easy":
        return easy_starts(engine, reserved, others)
    if mode == "conservative":
        return conservative_starts(engine, [reserved] + others)
    raise ValueError(f"{mode} backfilling counts identical nodes; on a heterogeneous cluster use "
                     f"easy or conservative")


class _Fits:
    """How many nodes of a free matrix fit each request class; cached until the matrix changes."""

    def __init__(self, res, free: np.ndarray) -> None:
        self.res, self.free, self.cache = res, free, {}

    def mask(self, row: int) -> np.ndarray:
        k = self.res.klass[row]
        m = self.cache.get(k)
        if m is None:
            m = self.cache[k] = fitting_nodes(self.res.cluster, self.free, self.res.demand[row])
        return m

    def changed(self) -> None:
        self.cache.clear()


def _release_until_fits(res, free: np.ndarray, head: int, running_by_end: list[int],
                        ends: list[float], now: float) -> tuple[float, int]:
    """Give back the running jobs' resources in order of estimated end until the head fits in
    `free` (changed in place). Returns (that time, how many running jobs were released); every job
    ending at the same instant is released with it."""
    want, demand = res.count[head], res.demand[head]
    i, n = 0, len(running_by_end)
    while i < n:
        t = ends[running_by_end[i]]
        while i < n and ends[running_by_end[i]] <= t:
            r = running_by_end[i]
            free[res.alloc[r]] += res.used_per_node(r, res.alloc[r])
            i += 1
        if np.count_nonzero(fitting_nodes(res.cluster, free, demand)) >= want:
            return t, i
    return float("inf"), i


def easy_starts(engine, head: int, others: list[int]) -> list[tuple[int, np.ndarray]]:
    e, res = engine, engine.res
    now, req, est = e.now, e.req_list, e.est
    running = sorted(e.running, key=est.__getitem__)
    at_shadow = res.free_matrix.copy()
    shadow, _ = _release_until_fits(res, at_shadow, head, running, est, now)
    e.reservations.append((head, shadow))
    want, head_demand = res.count[head], res.demand[head]
    free = res.free_matrix.copy()
    fits = _Fits(res, free)
    out = []
    for c in others:
        mask = fits.mask(c)
        if np.count_nonzero(mask) < res.count[c]:
            continue
        nodes = res.allocator.allocate(res.cluster, free, res.demand[c], res.count[c], fits=mask)
        used = res.used_per_node(c, nodes)
        if now + req[c] > shadow:
            # it runs past the reservation: the head must still fit beside it then
            trial = at_shadow.copy()
            trial[nodes] -= used
            if np.count_nonzero(fitting_nodes(res.cluster, trial, head_demand)) < want:
                continue
            at_shadow = trial
        free[nodes] -= used
        fits.changed()
        out.append((c, nodes))
    return out


def conservative_starts(engine, order: list[int]) -> list[tuple[int, np.ndarray]]:
    """See the module docstring. The plan is a list of breakpoints `times` with what is free in
    every segment [times[k], times[k+1]); the last segment runs for ever."""
    if engine.res.exclusive:
        return _conservative_by_kind(engine, order)
    e, res = engine, engine.res
    now, req = e.now, e.req_list
    running = sorted(e.running, key=e.est.__getitem__)
    times = [now]
    frees = [res.free_matrix.copy()]
    for r in running:
        t = e.est[r] if e.est[r] > now else now + 1.0  # overdue: assumed to end a second from now
        if t != times[-1]:
            times.append(t)
            frees.append(frees[-1].copy())
        frees[-1][res.alloc[r]] += res.used_per_node(r, res.alloc[r])
    out = []
    for c in order:
        want, demand, dur = res.count[c], res.demand[c], req[c]
        k = len(times)
        for i in range(k):
            if np.count_nonzero(fitting_nodes(res.cluster, frees[i], demand)) < want:
                continue
            end = times[i] + dur
            j = i + 1
            while j < k and times[j] < end:
                j += 1
            window = np.minimum.reduce(frees[i:j]) if j - i > 1 else frees[i]
            mask = fitting_nodes(res.cluster, window, demand)
            if np.count_nonzero(mask) < want:
                continue
            nodes = res.allocator.allocate(res.cluster, window, demand, want, fits=mask)
            break
        else:  # never reached: the last segment has every running job's resources back
            raise AssertionError("a job that can never fit reached conservative backfilling")
        if times[i] == now:
            out.append((c, nodes))
        # take the job's share from segment i up to `end`, splitting the segment `end` falls in
        if j == k or times[j] != end:
            times.insert(j, end)
            frees.insert(j, frees[j - 1].copy())
        used = res.used_per_node(c, nodes)
        for m in range(i, j):
            frees[m][nodes] -= used
    return out


def _conservative_by_kind(engine, order: list[int]) -> list[tuple[int, np.ndarray]]:
    """Conservative backfilling on an exclusive cluster: idle nodes counted per kind over time."""
    e, res = engine, engine.res
    cluster = res.cluster
    kind, n_kinds = cluster.kind, len(cluster.kinds)
    now, req = e.now, e.req_list
    idle = np.all(res.free_matrix == res.capacity, axis=1)
    times = [now]
    counts = [np.bincount(kind[idle], minlength=n_kinds)]
    for r in sorted(e.running, key=e.est.__getitem__):
        t = e.est[r] if e.est[r] > now else now + 1.0  # overdue: assumed to end a second from now
        if t != times[-1]:
            times.append(t)
            counts.append(counts[-1].copy())
        counts[-1] += np.bincount(kind[res.alloc[r]], minlength=n_kinds)
    # the smallest kinds first, so that big nodes stay for the jobs only they can hold
    preference = np.lexsort(cluster.kind_capacity.T[::-1])
    holds = {}
    free = res.free_matrix.copy()
    out = []
    for c in order:
        want, dur = res.count[c], req[c]
        k_c = res.klass[c]
        if k_c not in holds:
            holds[k_c] = np.all(cluster.kind_capacity >= res.demand[c], axis=1)
        ok = holds[k_c]
        k = len(times)
        i = 0
        while i < k:
            if counts[i][ok].sum() < want:
                i += 1
                continue
            end = times[i] + dur
            j = i + 1
            while j < k and times[j] < end:
                j += 1
            window = np.minimum.reduce(counts[i:j]) if j - i > 1 else counts[i]
            if window[ok].sum() >= want:
                break
            i += 1
        else:  # never reached: the last segment has every running job's nodes back
            raise AssertionError("a job that can never fit reached conservative backfilling")
        take = np.zeros(n_kinds, dtype=np.int64)
        left = int(want)
        for kk in preference.tolist():
            if ok[kk] and left:
                take[kk] = min(int(window[kk]), left)
                left -= int(take[kk])
        if times[i] == now:
            fits = fitting_nodes(cluster, free, res.demand[c])
            nodes = np.concatenate([
                res.allocator.allocate(cluster, free, res.demand[c], int(take[kk]),
                                       fits=fits & (kind == kk))
                for kk in np.flatnonzero(take).tolist()])
            free[nodes] = 0
            out.append((c, nodes))
        if j == k or times[j] != end:
            times.insert(j, end)
            counts.insert(j, counts[j - 1].copy())
        for m in range(i, j):
            counts[m] -= take
    return out


# -- HPCsim's rule ------------------------------------------------------------------------------
def hpcsim_starts(engine, head: int, others: list[int]) -> list[tuple[int, np.ndarray]]:
    e, res = engine, engine.res
    now = e.now
    free = res.free_matrix.copy()
    tasks = [list(t) for t in res.node_tasks]  # running rows per node, in placement order
    # remaining requested time of every job on a node, as HPCsim computes it
    remain = {r: e.req_list[r] - (now - e.start[r]) for r in e.running}
    demand, want = res.demand[head], res.count[head]
    per_node = np.array([_node_estimate(free[i], demand, tasks[i], remain, res.demand)
                         for i in range(res.total)])
    target = _kth_estimate(per_node, want)
    fits = _Fits(res, free)
    out = []
    for c in others:
        mask = fits.mask(c)
        if np.count_nonzero(mask) < res.count[c]:
            continue
        nodes = res.allocator.allocate(res.cluster, free, res.demand[c], res.count[c], fits=mask)
        free[nodes] -= res.demand[c]
        remain[c] = e.req_list[c]
        trial = per_node.copy()
        for i in nodes.tolist():
            tasks[i].append(c)
            trial[i] = _node_estimate(free[i], demand, tasks[i], remain, res.demand)
        if _kth_estimate(trial, want) == target:
            per_node = trial
            fits.changed()
            out.append((c, nodes))
        else:
            free[nodes] += res.demand[c]
            for i in nodes.tolist():
                tasks[i].pop()
    return out


def _node_estimate(free: np.ndarray, demand: np.ndarray, tasks: list[int], remain: dict,
                   demands: np.ndarray) -> float:
    """In how long (requested time) one node has `demand` free: 0 now, -1 never."""
    need = demand - free
    if np.all(need <= 0):
        return 0.0
    for r in sorted(tasks, key=remain.__getitem__):  # stable: ties in placement order
        need = need - demands[r]
        if np.all(need <= 0):
            return remain[r]
    return -1.0


def _kth_estimate(per_node: np.ndarray, k: int) -> float:
    """The head's earliest start: the k-th smallest per-node estimate, -1 if fewer than k nodes
    can ever hold it."""
    ok = per_node[per_node != -1]
    if len(ok) < k:
        return -1.0
    return float(np.partition(ok, k - 1)[k - 1])


__all__ = ["conservative_starts", "easy_starts", "hpcsim_starts", "starts"]
