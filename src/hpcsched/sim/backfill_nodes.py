"""Backfilling on heterogeneous nodes: EASY, conservative, and HPCsim's own rule.

A job asks for `count` distinct nodes with a per-node request free on each. Running jobs are assumed
to end at their requested time (start + request: the only end a real scheduler knows) and then give
back what they took on each of their nodes.

- EASY: the reservation of the job at the head is the earliest time at which `count` nodes each have
  its request free, releasing running jobs at their estimated ends. A waiting job (in queue order)
  may start now if it fits and either ends by the reservation, or, placed where the allocator puts
  it now, leaves the nodes free at the reservation time still able to hold the head job; where the
  allocator's choice would not, the allocator chooses again among the nodes the candidate can
  take without spoiling the head's (those the head cannot use, or has room to spare on then). Every job
  started so is taken out of that projection, so the head's reservation holds whatever starts.
  On identical whole nodes this is the counting rule of `backfill.easy_candidates` exactly.
- Conservative (made anew at every call: SchedGym's commit loop; the pass loop keeps its plan and
  every reservation, `sim.conservative_nodes`): a reservation for every waiting job in queue
  order: the earliest time from which
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

from dataclasses import dataclass

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
    """How many nodes of a free matrix fit each request class; cached until the matrix changes.
    Starts from the engine's own cache (the matrix of now)."""

    def __init__(self, res, free: np.ndarray) -> None:
        self.res, self.free = res, free
        self.fresh = True  # `free` still equals the engine's matrix
        self.masks: dict[int, np.ndarray] = {}
        self.counts: dict[int, int] = {}

    def count(self, k: int) -> int:
        if self.fresh:
            return self.res.fit_count(k)
        n = self.counts.get(k)
        if n is None:
            n = self.counts[k] = int(np.count_nonzero(self.mask(k)))
        return n

    def mask(self, k: int) -> np.ndarray:
        if self.fresh:
            return self.res.fitting_class(k)
        m = self.masks.get(k)
        if m is None:
            m = self.masks[k] = fitting_nodes(self.res.cluster, self.free, self.res.class_demand[k])
        return m

    def changed(self) -> None:
        self.fresh = False
        self.masks.clear()
        self.counts.clear()


def _kth(values: list[float], k: int) -> float:
    """The k-th smallest of `values` (inf if there are fewer)."""
    if len(values) < k:
        return float("inf")
    return sorted(values)[k - 1] if k > 1 else min(values)


def shadow_of(engine, row: int) -> tuple[float, list[int]]:
    """EASY's reservation for `row` on heterogeneous nodes: (the `count`-th earliest time at which
    a node can take the row's per-node share, running jobs giving theirs back at their estimated
    ends, inf if fewer nodes ever can; per node, `NodeState.fit_points`)."""
    res, est = engine.res, engine.est
    points = res.fit_points(res.klass[row], est)
    now = engine.now
    times = [now if p == -2 else est[p] for p in points if p != -1]
    return _kth(times, res.count_list[row]), points


def ready_nodes(points: list[int], est: list[float], shadow: float) -> list[int]:
    """The nodes (of `shadow_of`'s `points`) that can take the head's share by `shadow`."""
    return [i for i, p in enumerate(points) if p != -1 and (p == -2 or est[p] <= shadow)]


@dataclass(frozen=True)
class Reservation:
    """EASY's reservation for one waiting job (the head) at a decision instant, as a policy that
    places jobs itself can keep it: a job that ends by `shadow` may run anywhere; one that runs
    past it may take, of the `ready` nodes (those that can hold the head's share at `shadow`),
    those it leaves able to (`harmless`) and at most `spare` others."""

    shadow: float  # the head's reserved start (inf: it can never start)
    ready: np.ndarray  # (N,) bool: the nodes that can take the head's share at `shadow`
    spare: int  # ready nodes beyond the count the head needs
    at_shadow: np.ndarray  # (N, R) what is free on each node at `shadow`, as things stand
    head_demand: np.ndarray  # (R,) the head's per-node request
    exclusive: bool

    def harmless(self, demand: np.ndarray) -> np.ndarray:
        """(N,) the nodes where a job asking `demand` per node, running past `shadow`, leaves the
        head its share (a node it cannot use, or one with room to spare; on an exclusive cluster
        only the former)."""
        return self.harmless_each(np.asarray(demand)[None, :])[0]

    def harmless_each(self, demands: np.ndarray) -> np.ndarray:
        """(K, N) `harmless` of each of the K per-node requests `demands` (K, R)."""
        if self.exclusive:
            return np.broadcast_to(~self.ready, (len(demands), len(self.ready))).copy()
        left = self.at_shadow[None, :, :] - demands[:, None, :]
        return ~self.ready[None, :] | np.all(left >= self.head_demand, axis=2)


def reservation(engine, head: int) -> Reservation:
    """The `Reservation` of `head` on the engine's heterogeneous nodes now."""
    res, est = engine.res, engine.est
    shadow, points = shadow_of(engine, head)
    ready = np.zeros(res.total, dtype=bool)
    ready[ready_nodes(points, est, shadow)] = True
    at_shadow = res.free_matrix.copy()
    for r, nodes in res.alloc.items():
        if est[r] <= shadow:
            at_shadow[nodes] += res.used_per_node(r, nodes)
    spare = int(ready.sum()) - res.count_list[head]
    return Reservation(shadow, ready, max(spare, 0), at_shadow,
                       np.asarray(res.class_demand[res.klass[head]]), bool(res.exclusive))


def easy_starts(engine, head: int, others: list[int]) -> list[tuple[int, np.ndarray]]:
    e, res = engine, engine.res
    now, req, est = e.now, e.req_list, e.est
    k_head = res.klass[head]
    want = res.count_list[head]
    shadow, points = shadow_of(e, head)
    e.reservations.append((head, shadow))
    ready = set(ready_nodes(points, est, shadow))
    head_demand = res.class_demand[k_head]
    at_shadow: dict[int, np.ndarray] = {}  # free vectors at the shadow time of the nodes touched

    def free_at_shadow(i: int) -> np.ndarray:
        v = at_shadow.get(i)
        if v is None:
            v = res.free_matrix[i].copy()
            for r in res.node_tasks[i]:
                if est[r] <= shadow:
                    v += res.used_per_node(r, i)
            at_shadow[i] = v
        return v

    def lost_by(c: int, nodes: np.ndarray) -> list[int]:
        """The ready nodes that could no longer take the head's share at the shadow time if `c`
        ran on `nodes` past it."""
        lost = []
        for i in nodes.tolist():
            if i in ready and not _holds(res, i, free_at_shadow(i) - share(c, i), head_demand):
                lost.append(i)
        return lost

    def share(c: int, i: int) -> np.ndarray:
        return res.capacity[i] if res.exclusive else res.demand[c]

    free = res.free_matrix.copy()
    fits = _Fits(res, free)
    klass, count = res.klass, res.count_list
    out = []
    for c in others:
        k = klass[c]
        if fits.count(k) < count[c]:
            continue
        mask = fits.mask(k)
        nodes = res.allocator.allocate(res.cluster, free, res.class_demand[k], count[c], fits=mask)
        if now + req[c] > shadow:
            # it runs past the reservation: the head must still find its nodes then
            lost = lost_by(c, nodes)
            if len(ready) - len(lost) < want:
                # the allocator's placement takes the head's nodes: place it among the nodes it
                # leaves untouched, if there are enough of them
                safe = mask.copy()
                fitting = np.flatnonzero(mask)
                safe[[i for i in fitting.tolist() if lost_by(c, np.array([i]))]] = False
                if np.count_nonzero(safe) < count[c]:
                    continue
                nodes = res.allocator.allocate(res.cluster, free, res.class_demand[k], count[c],
                                               fits=safe)
                lost = []
            for i in nodes.tolist():
                if i in ready or i in at_shadow:
                    at_shadow[i] = free_at_shadow(i) - share(c, i)
            ready.difference_update(lost)
        free[nodes] -= res.used_per_node(c, nodes)
        fits.changed()
        out.append((c, nodes))
    return out


def _holds(res, i: int, free: np.ndarray, demand: np.ndarray) -> bool:
    """Whether node i, with `free` left, can take `demand` (exclusive: only when idle)."""
    if res.exclusive and not np.array_equal(free, res.capacity[i]):
        return False
    return bool(np.all(free >= demand))


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
        i, j, end, nodes = node_segment(res, times, frees, res.count[c], res.demand[c], req[c])
        k = len(times)
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


def node_segment(res, times: list, frees: list, want: int, demand, dur: float):
    """Per-node profile search: the first breakpoint i from which `want` nodes keep `demand` free
    for `dur` seconds, and the allocator's nodes there. Returns (i, j, end, nodes): j the first
    breakpoint at or after `end` = times[i] + dur."""
    cluster = res.cluster
    k = len(times)
    for i in range(k):
        if np.count_nonzero(fitting_nodes(cluster, frees[i], demand)) < want:
            continue
        end = times[i] + dur
        j = i + 1
        while j < k and times[j] < end:
            j += 1
        window = np.minimum.reduce(frees[i:j]) if j - i > 1 else frees[i]
        mask = fitting_nodes(cluster, window, demand)
        if np.count_nonzero(mask) < want:
            continue
        return i, j, end, res.allocator.allocate(cluster, window, demand, want, fits=mask)
    # never reached: the last segment has every running job's resources back
    raise AssertionError("a job that can never fit reached conservative backfilling")


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
        i, j, end, window = kind_segment(times, counts, ok, want, dur)
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


def kind_segment(times: list, counts: list, ok: np.ndarray, want: int, dur: float):
    """Per-kind profile search: the first breakpoint i from which `want` nodes of the kinds `ok`
    stay free for `dur` seconds. Returns (i, j, end, window): j the first breakpoint at or after
    `end` = times[i] + dur, window the free counts per kind over [times[i], end)."""
    k = len(times)
    for i in range(k):
        if counts[i][ok].sum() < want:
            continue
        end = times[i] + dur
        j = i + 1
        while j < k and times[j] < end:
            j += 1
        window = np.minimum.reduce(counts[i:j]) if j - i > 1 else counts[i]
        if window[ok].sum() >= want:
            return i, j, end, window
    # never reached: the last segment has every running job's nodes back
    raise AssertionError("a job that can never fit reached conservative backfilling")


# -- HPCsim's rule ------------------------------------------------------------------------------
def hpcsim_starts(engine, head: int, others: list[int]) -> list[tuple[int, np.ndarray]]:
    """HPCsim's backfilling (see the module docstring). Jobs on a node are walked by remaining
    requested time; ties in the order they were placed there. HPCsim's clock is whole seconds, so
    remaining time and estimated end (start + request) order the jobs alike."""
    res, now, req = engine.res, engine.now, engine.req_list
    want = res.count_list[head]
    head_demand = res._class_lists[res.klass[head]]
    placed_now: dict[int, float] = {}  # rows placed in this call: their end if started now
    end_of, estimate, per_node = _hpcsim_estimates(engine, head, placed_now)
    target = _kth_estimate(per_node, want)
    free = res.free_matrix.copy()
    fits = _Fits(res, free)
    klass, count = res.klass, res.count_list
    extra: dict[int, list[int]] = {}  # node -> rows placed there in this call, in order
    out = []
    for c in others:
        k = klass[c]
        if fits.count(k) < count[c]:
            continue
        nodes = res.allocator.allocate(res.cluster, free, res.class_demand[k], count[c],
                                       fits=fits.mask(k))
        free[nodes] -= res.demand[c]
        placed_now[c] = now + req[c]
        trial = list(per_node)
        for i in nodes.tolist():
            tasks = res.node_tasks[i] + extra.get(i, []) + [c]
            trial[i] = estimate(res.node_point(i, free[i].tolist(), head_demand, tasks, end_of))
        if _kth_estimate(trial, want) == target:
            per_node = trial
            for i in nodes.tolist():
                extra.setdefault(i, []).append(c)
            fits.changed()
            out.append((c, nodes))
        else:  # rolled back
            free[nodes] += res.demand[c]
            del placed_now[c]
    return out


def _hpcsim_estimates(engine, head: int, placed_now: dict[int, float]):
    """HPCsim's per-node estimate of `head`'s start now (`hpcsim_starts`): `end_of(row)` and
    `estimate(point)` (a `NodeState.fit_points` value: -2 fits now, -1 never, else the row whose
    end makes it fit, read as its remaining requested time), and the per-node estimates. Rows in
    `placed_now` (row: end) count as started now."""
    e, res = engine, engine.res
    now, req, start, est = e.now, e.req_list, e.start, e.est

    def end_of(r: int) -> float:
        return placed_now[r] if r in placed_now else est[r]

    def estimate(p: int) -> float:
        if p == -2:
            return 0.0
        if p == -1:
            return -1.0
        return req[p] if p in placed_now else req[p] - (now - start[p])

    return end_of, estimate, [estimate(p) for p in res.fit_points(res.klass[head], est)]


def hpcsim_estimate(engine, head: int, row: int | None = None, nodes=None) -> float:
    """HPCsim's estimate of `head`'s start, from now (its `check_earliest_runtime`: the
    `count`-th smallest per-node estimate, -1 if it can never fit), or with `row` placed on
    `nodes` now as well: the test its backfilling keeps a job by (unchanged: kept)."""
    res = engine.res
    placed_now: dict[int, float] = {}
    if row is not None:
        placed_now[int(row)] = engine.now + engine.req_list[int(row)]
    end_of, estimate, per_node = _hpcsim_estimates(engine, head, placed_now)
    if row is not None:
        nodes = np.asarray(nodes, dtype=np.int64)
        free = res.free_matrix[nodes] - res.used_per_node(int(row), nodes)
        head_demand = res._class_lists[res.klass[head]]
        for i, f in zip(nodes.tolist(), free.tolist()):
            tasks = res.node_tasks[i] + [int(row)]
            per_node[i] = estimate(res.node_point(i, f, head_demand, tasks, end_of))
    return _kth_estimate(per_node, res.count_list[head])


def _kth_estimate(per_node: list[float], k: int) -> float:
    """The head's earliest start: the k-th smallest per-node estimate, -1 if fewer than k nodes
    can ever hold it."""
    ok = [v for v in per_node if v != -1]
    if len(ok) < k:
        return -1.0
    return sorted(ok)[k - 1]


__all__ = ["Reservation", "conservative_starts", "easy_starts", "hpcsim_estimate", "hpcsim_starts",
           "reservation", "shadow_of", "starts"]
