"""A compiled inner loop for static-priority heuristics under the textbook pass semantics.

`PassEngine` (the `standard` profile) with a policy whose keys never change (`static_keys`: fcfs,
sjf, f1..f4, saf, random, ...) spends its time rebuilding what could be kept: it re-sorts the queue at
every decision and the running jobs at every reservation. `schedule_static` runs the same loop over
a whole job table in one compiled call and gives the same schedule, job for job:

- the waiting queue is a min-segment tree over priority positions (a job's position is its rank), so
  the head, and the next job in priority order that backfilling may start, are found by descending
  the tree in O(log n) instead of scanning the queue;
- the running jobs are an array kept sorted by (estimated end, row), so a reservation walks them in
  order without sorting; their real ends sit on a binary heap.

The rules are `passes.PassEngine` + `backfill.py` (and, for conservative backfilling, the plan kept
from pass to pass of `conservative.py`), ported statement by statement where the order of
floating-point operations decides a tie (shadow times, conservative profiles): read those modules for
the semantics; the comments here say only where the compiled version takes a shortcut and why the
shortcut gives the same answer.

Compilation: numba compiles the functions on the first call in a process and caches the machine
code beside this file (`cache=True`; numba picks a per-user folder where that is read-only). The
first call on a fresh cache costs about 7.5 CPU s on the project's 2-core machine (40 s of wall time
when it was 4x oversubscribed); every later process pays about 0.45 CPU s to import numba and load
the cache. After that, the whole HPC2N trace with SJF + EASY takes about 0.1 CPU s.

Without numba the very same functions run as plain Python (`HAVE_NUMBA` is False): identical
results, but about 100x slower than compiled and slower than `PassEngine` itself, so an engine should
take this path only when `HAVE_NUMBA` is true.
"""

from __future__ import annotations

import numpy as np

from hpcsched._jit import HAVE_NUMBA, njit

#: backfilling modes the kernel knows, by the names `profiles.BACKFILLS` uses
BACKFILL_CODES = {"none": 0, "easy": 1, "conservative": 2, "schedgym": 3}
_NONE, _EASY, _CONSERVATIVE, _SCHEDGYM = 0, 1, 2, 3

#: the need stored at a tree leaf with no waiting job: larger than any node count
_EMPTY = float(2**62)
#: a node count that every waiting job fits in and no empty leaf does (not _EMPTY - 1, which
#: rounds back to _EMPTY in float64)
_ANY = float(2**61)


# -- the waiting queue: a min-segment tree over positions in scan order -----------------------------
#
# Leaf `size + p` holds the job at position p while it waits: its need and its request. An inner
# node holds the minimum of each over its subtree, which is enough to rule a whole subtree out of a
# search ("nobody here fits in the free nodes") without looking at its jobs. Both live in one
# (2 * size, 2) float64 array, so a node costs one cache line, not two (node counts are exact in
# float64).


@njit(cache=True)
def _empty_tree(size):
    tree = np.empty((2 * size, 2), np.float64)
    tree[:, 0] = _EMPTY
    tree[:, 1] = np.inf
    return tree


@njit(cache=True)
def _tree_set(tree, size, pos, need, req):
    i = pos + size
    tree[i, 0] = need
    tree[i, 1] = req
    i >>= 1
    while i >= 1:
        left = 2 * i
        n = min(tree[left, 0], tree[left + 1, 0])
        r = min(tree[left, 1], tree[left + 1, 1])
        if tree[i, 0] == n and tree[i, 1] == r:
            break  # nothing above changes either
        tree[i, 0] = n
        tree[i, 1] = r
        i >>= 1


@njit(cache=True)
def _may_start(need, req, now, free, shadow, extra, strict):
    """Whether a job (or, with subtree minima, some job of a subtree) may start now: it fits in the
    `free` nodes and ends by the shadow time (strictly before it, for SchedGym's rule), or it fits
    in the `extra` nodes. At a leaf this is exactly the backfilling rule; at an inner node it is a
    necessary condition, because `now + req` grows with `req` in floating point too."""
    if need > free:
        return False
    end = now + req
    if (end < shadow) if strict else (end <= shadow):
        return True
    return need <= extra


@njit(cache=True)
def _first_from(tree, size, lo, now, free, shadow, extra, strict):
    """The first position >= lo whose job passes `_may_start`, or -1.

    Visits the subtrees covering [lo, size) from left to right; a subtree whose minima pass is
    entered (its left child first), one that fails is stepped over. Since the test is only
    necessary at inner nodes, an entered subtree may hold no match: the walk then climbs on."""
    if lo >= size:
        return -1
    i = lo + size
    while (i & 1) == 0 and i > 1:
        i >>= 1  # the largest subtree whose first leaf is lo: a search from 0 starts at the root
    while True:
        if _may_start(tree[i, 0], tree[i, 1], now, free, shadow, extra, strict):
            if i >= size:
                return i - size
            i = 2 * i
            continue
        # step to the next subtree on the right: climb while i is a right child
        while i & 1:
            i >>= 1
        if i == 0:
            return -1
        i += 1


@njit(cache=True)
def _first_waiting(tree, size, lo):
    """The first position >= lo that holds a waiting job, or -1."""
    return _first_from(tree, size, lo, 0.0, _ANY, 0.0, _ANY, False)


# -- the running jobs: sorted by (estimated end, row), and a heap of (real end, row) -----------------


@njit(cache=True)
def _sorted_index(run_est, run_row, count, est, row):
    """Where (est, row) sits, or would be inserted, in the first `count` entries."""
    lo, hi = 0, count
    while lo < hi:
        mid = (lo + hi) >> 1
        if run_est[mid] < est or (run_est[mid] == est and run_row[mid] < row):
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _running_add(run_est, run_row, run_need, count, est, row, need):
    at = _sorted_index(run_est, run_row, count, est, row)
    for k in range(count, at, -1):
        run_est[k] = run_est[k - 1]
        run_row[k] = run_row[k - 1]
        run_need[k] = run_need[k - 1]
    run_est[at] = est
    run_row[at] = row
    run_need[at] = need
    return count + 1


@njit(cache=True)
def _running_remove(run_est, run_row, run_need, count, est, row):
    at = _sorted_index(run_est, run_row, count, est, row)
    for k in range(at, count - 1):
        run_est[k] = run_est[k + 1]
        run_row[k] = run_row[k + 1]
        run_need[k] = run_need[k + 1]
    return count - 1


@njit(cache=True, inline="always")
def _heap_push(heap_end, heap_row, count, end, row):
    i = count
    while i > 0:
        parent = (i - 1) >> 1
        if heap_end[parent] < end or (heap_end[parent] == end and heap_row[parent] < row):
            break
        heap_end[i] = heap_end[parent]
        heap_row[i] = heap_row[parent]
        i = parent
    heap_end[i] = end
    heap_row[i] = row
    return count + 1


@njit(cache=True, inline="always")
def _heap_pop(heap_end, heap_row, count):
    """Remove the top of the heap (the caller has read it); returns the new count."""
    count -= 1
    end = heap_end[count]
    row = heap_row[count]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= count:
            break
        if c + 1 < count and (heap_end[c + 1] < heap_end[c]
                              or (heap_end[c + 1] == heap_end[c] and heap_row[c + 1] < heap_row[c])):
            c += 1
        if end < heap_end[c] or (end == heap_end[c] and row < heap_row[c]):
            break
        heap_end[i] = heap_end[c]
        heap_row[i] = heap_row[c]
        i = c
    heap_end[i] = end
    heap_row[i] = row
    return count


# -- reservations ----------------------------------------------------------------------------------


@njit(cache=True)
def _easy_shadow(now, want, free, run_est, run_need, count):
    """`backfill.easy_shadow` over the running jobs already in estimated-end order."""
    avail = free
    if want <= avail:
        return now, avail - want
    shadow = now
    i = 0
    while i < count:
        avail += run_need[i]
        shadow = run_est[i]
        i += 1
        if avail >= want:
            while i < count and run_est[i] <= shadow:
                avail += run_need[i]
                i += 1
            break
    return shadow, avail - want


@njit(cache=True)
def _schedgym_shadow(now, procs, free, ppn, run_est, run_need, count):
    """`backfill.schedgym_shadow`: processors, not nodes, and no tie rule."""
    free_procs = free * ppn
    shadow = now
    for i in range(count):
        free_procs += run_need[i] * ppn
        shadow = run_est[i]
        if free_procs >= procs:
            break
    return shadow


@njit(cache=True)
def _earliest_segment(times, free, k, n, d):
    """`backfill._earliest_segment` on the first k breakpoints."""
    return _earlier_segment(times, free, k, n, d, np.inf, k)


@njit(cache=True)
def _reserve(times, free, k, i, end, n):
    """`backfill._reserve`; returns the new number of breakpoints."""
    j = i
    while j < k and times[j] < end:
        j += 1
    if j == k or times[j] != end:
        for m in range(k, j, -1):
            times[m] = times[m - 1]
            free[m] = free[m - 1]
        times[j] = end
        free[j] = free[j - 1]
        k += 1
    for m in range(i, j):
        free[m] -= n
    return k


# -- backfilling: each rule writes the rows it starts now to `out` and returns how many ---------------
#
# None of them changes the queue while it scans: every row it starts lies behind the scan, so the
# caller starts them afterwards, as `PassEngine.apply` does with the lists of `backfill.py`.


@njit(cache=True)
def _easy_starts(head_pos, now, free, shadow, extra, need, req, row_at, tree, size,
                 out):
    """`backfill.easy_candidates` once the shadow time and extra nodes are known.

    Rather than visit every waiting job, jump to the next one in priority order that the rule
    starts: jobs that do not fit in the free nodes, or that end after the shadow time and do not
    fit in the extra nodes, are passed over a subtree at a time."""
    count = 0
    pos = head_pos
    while True:
        pos = _first_from(tree, size, pos + 1, now, free, shadow, extra, False)
        if pos < 0:
            return count
        c = row_at[pos]
        if not now + req[c] <= shadow:
            extra -= need[c]  # it runs past the shadow time, so on nodes the head will not need
        free -= need[c]
        out[count] = c
        count += 1


@njit(cache=True)
def _schedgym_starts(now, free, shadow, need, row_at, tree, size, out):
    """`backfill.schedgym_candidates` once the shadow time is known; the tree holds the queue in
    SchedGym's candidate order (submit time, then priority). The head does not fit, so the rule
    passes over it by itself."""
    count = 0
    pos = -1
    while True:
        pos = _first_from(tree, size, pos + 1, now, free, shadow, -1, True)
        if pos < 0:
            return count
        c = row_at[pos]
        free -= need[c]
        out[count] = c
        count += 1


# -- conservative backfilling's plan (`sim.conservative`, `PoolPlan`), kept from pass to pass ------
#
# The profile is `times` (increasing) and `free` (nodes free from times[i] to times[i + 1]) in the
# first k entries, with `pmax` its running maximum (right for the entries before `known`);
# `res_s[row]` is each waiting job's reserved start (NaN before its first). Every function is its `Plan` method, statement for
# statement, so that the breakpoints, and with them every tie, are the same.


@njit(cache=True)
def _bisect_left(times, k, t, lo):
    hi = k
    while lo < hi:
        mid = (lo + hi) >> 1
        if times[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _insert(times, free, k, j, t):
    """A breakpoint at `t` before position j, splitting segment j - 1."""
    for m in range(k, j, -1):
        times[m] = times[m - 1]
        free[m] = free[m - 1]
    times[j] = t
    free[j] = free[j - 1]
    return k + 1


@njit(cache=True)
def _change(times, free, k, t0, t1, delta):
    """`Plan.change`: add `delta` nodes over [t0, t1); returns the new k."""
    if t1 <= t0:
        return k
    i = _bisect_left(times, k, t0, 0)
    if i == k or times[i] != t0:
        k = _insert(times, free, k, i, t0)
    j = _bisect_left(times, k, t1, i)
    if j == k or times[j] != t1:
        k = _insert(times, free, k, j, t1)
    for m in range(i, j):
        free[m] += delta
    return k


@njit(cache=True)
def _compact(times, free, k, first):
    """`Plan.compact` of the entries from `first` on (entry 0 is kept); returns the new k."""
    out = 1
    for m in range(first, k):
        if free[m] != free[out - 1]:
            times[out] = times[m]
            free[out] = free[m]
            out += 1
    return out


@njit(cache=True)
def _drop_past(times, free, k, now):
    """`Plan.drop_past`: the segment holding now starts now; then `compact`."""
    i = _bisect_left(times, k, now, 0)
    if i == k or times[i] != now:
        i -= 1
    times[0] = now
    free[0] = free[i]
    return _compact(times, free, k, i + 1)


@njit(cache=True)
def _earlier_segment(times, free, k, n, d, s, limit):
    """`backfill._earlier_segment` on the first k breakpoints."""
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
        i = j + 1
    return -1


@njit(cache=True)
def _room(times, free, pmax, k, extra):
    """The profile's arrays, grown if `extra` more breakpoints would not fit."""
    if k + extra <= times.shape[0]:
        return times, free, pmax
    cap = 2 * (k + extra)
    t2 = np.empty(cap, np.float64)
    f2 = np.empty(cap, np.int64)
    p2 = np.empty(cap, np.int64)
    t2[:k] = times[:k]
    f2[:k] = free[:k]
    p2[:k] = pmax[:k]
    return t2, f2, p2


@njit(cache=True)
def _conservative_update(now, k, times, free, pmax, free_nodes, need, req, est, res_s, ended,
                         n_ended, row_at, tree, size, res_rows, res_shadows, n_res):
    """`Plan.update` at the first decision of a pass: drop the past, give back the nodes of the
    jobs that ended early (`ended`: every job ended since the last update), compress until no
    job moves, place the jobs without a reservation (logged in `res_rows`/`res_shadows` when
    later than now). Returns the changed state."""
    if k == 0:
        times[0] = now
        free[0] = free_nodes
        k = 1
    else:
        k = _drop_past(times, free, k, now)
        freed_until = -np.inf
        for m in range(n_ended):
            r = ended[m]
            if est[r] > now:
                times, free, pmax = _room(times, free, pmax, k, 2)
                k = _change(times, free, k, now, est[r], need[r])
                freed_until = max(freed_until, est[r])
        if freed_until > -np.inf:
            # `Plan.compress` with `PoolPlan.earlier`; pmax is right before `known`
            known = 0
            moved = True
            while moved:
                moved = False
                pos = _first_waiting(tree, size, 0)
                while pos >= 0:
                    c = row_at[pos]
                    s = res_s[c]
                    if not np.isnan(s) and s > now and req[c] > 0:
                        limit = _bisect_left(times, k, min(s, freed_until), 0)
                        if limit > 0:
                            if known < limit:
                                m = pmax[known - 1] if known > 0 else free[0]
                                for q in range(known, limit):
                                    if free[q] > m:
                                        m = free[q]
                                    pmax[q] = m
                                known = limit
                            if pmax[limit - 1] >= need[c]:
                                i = _earlier_segment(times, free, k, need[c], req[c], s, limit)
                                if i >= 0:
                                    t = times[i]
                                    times, free, pmax = _room(times, free, pmax, k, 3)
                                    k = _change(times, free, k, s, s + req[c], need[c])
                                    k = _reserve(times, free, k, i, t + req[c], need[c])
                                    res_s[c] = t
                                    freed_until = max(freed_until, s + req[c])
                                    moved = True
                                    known = min(known, i)
                    pos = _first_waiting(tree, size, pos + 1)
                k = _compact(times, free, k, 1)
                known = 0
    pos = _first_waiting(tree, size, 0)
    zero = False
    while pos >= 0:
        c = row_at[pos]
        if req[c] == 0:
            zero = True
        elif np.isnan(res_s[c]):
            i = _earliest_segment(times, free, k, need[c], req[c])
            if i < 0:
                raise ValueError("a job larger than the cluster reached conservative backfilling")
            s = times[i]
            times, free, pmax = _room(times, free, pmax, k, 1)
            k = _reserve(times, free, k, i, s + req[c], need[c])
            res_s[c] = s
            if s > now:
                if n_res == res_rows.shape[0]:
                    res_rows = np.concatenate((res_rows, np.empty_like(res_rows)))
                    res_shadows = np.concatenate((res_shadows, np.empty_like(res_shadows)))
                res_rows[n_res] = c
                res_shadows[n_res] = s
                n_res += 1
        pos = _first_waiting(tree, size, pos + 1)
    if zero:
        # jobs that ask for no time hold no reservation: each starts now if it fits beside every
        # job planned to run now
        left = free[0]
        pos = _first_waiting(tree, size, 0)
        while pos >= 0:
            c = row_at[pos]
            if req[c] == 0:
                if need[c] <= left:
                    res_s[c] = now
                    left -= need[c]
                else:
                    res_s[c] = np.inf
            pos = _first_waiting(tree, size, pos + 1)
    return k, times, free, pmax, res_rows, res_shadows, n_res


@njit(cache=True)
def _conservative_due(head_pos, now, res_s, row_at, tree, size, out):
    """`Plan.due` behind the head (whose reservation is later than now)."""
    count = 0
    pos = _first_waiting(tree, size, head_pos + 1)
    while pos >= 0:
        c = row_at[pos]
        if res_s[c] == now:
            out[count] = c
            count += 1
        pos = _first_waiting(tree, size, pos + 1)
    return count


# -- the loop --------------------------------------------------------------------------------------


@njit(cache=True)
def _start_job(row, now, need, req, executed, rank, scan_pos, start, est, tree,
               size, scan_tree, scan_size, schedgym, run_est, run_row, run_need, n_run,
               heap_end, heap_row, n_heap):
    """Start `row` now: out of the queue, into the running jobs by its estimated end (start +
    request), its real end onto the heap. The caller counts the nodes and the two sizes."""
    start[row] = now
    est[row] = now + req[row]
    _tree_set(tree, size, rank[row], _EMPTY, np.inf)
    if schedgym:
        _tree_set(scan_tree, scan_size, scan_pos[row], _EMPTY, np.inf)
    _running_add(run_est, run_row, run_need, n_run, est[row], row, need[row])
    _heap_push(heap_end, heap_row, n_heap, now + executed[row], row)


@njit(cache=True)
def _schedule(submit, req, executed, need, rank, scan_pos, procs, ppn, total_nodes, mode):
    n = submit.shape[0]
    start = np.full(n, np.nan)
    est = np.zeros(n, np.float64)
    res_rows = np.empty(max(16, n // 4), np.int64)
    res_shadows = np.empty(res_rows.shape[0], np.float64)
    n_res = 0
    decisions = 0
    schedgym = mode == _SCHEDGYM

    # the queue in priority order (a job's position is its rank) ...
    size = 1
    while size < n:
        size *= 2
    row_at = np.empty(size, np.int64)
    for r in range(n):
        row_at[rank[r]] = r
    tree = _empty_tree(size)
    # ... and, for SchedGym's rule only, in its candidate order
    scan_size = size if schedgym else 1
    scan_row_at = np.empty(scan_size, np.int64)
    if schedgym:
        for r in range(n):
            scan_row_at[scan_pos[r]] = r
    scan_tree = _empty_tree(scan_size)

    # every running job holds at least one node: at most total_nodes run at once
    cap = total_nodes + 1
    run_est = np.empty(cap, np.float64)
    run_row = np.empty(cap, np.int64)
    run_need = np.empty(cap, np.int64)
    n_run = 0
    heap_end = np.empty(cap, np.float64)
    heap_row = np.empty(cap, np.int64)
    n_heap = 0
    # conservative backfilling's plan: the profile (grown when full), every waiting job's
    # reserved start, and the jobs ended since the plan was last brought up to date
    conservative = mode == _CONSERVATIVE
    prof_cap = 2 * cap + 16 if conservative else 1
    prof_times = np.empty(prof_cap, np.float64)
    prof_free = np.empty(prof_cap, np.int64)
    prof_max = np.empty(prof_cap, np.int64)
    k = 0
    res_s = np.full(n if conservative else 1, np.nan)
    ended = np.empty(n if conservative else 1, np.int64)
    n_ended = 0
    starts = np.empty(n, np.int64)  # the rows a backfilling rule starts in one pass

    free = total_nodes
    nxt = 0
    # position of the head (the first waiting job in priority order), `size` while none waits: it
    # moves only when an arrival ranks first or the head starts, so no pass searches for it
    head = size
    while True:
        # the next instant with a completion or an arrival; all of its events, then one pass
        if n_heap > 0 and (nxt >= n or heap_end[0] <= submit[nxt]):
            now = heap_end[0]
        elif nxt < n:
            now = submit[nxt]
        else:
            break
        while n_heap > 0 and heap_end[0] <= now:
            r = heap_row[0]
            n_heap = _heap_pop(heap_end, heap_row, n_heap)
            n_run = _running_remove(run_est, run_row, run_need, n_run, est[r], r)
            free += need[r]
            if conservative:
                ended[n_ended] = r
                n_ended += 1
        while nxt < n and submit[nxt] <= now:
            _tree_set(tree, size, rank[nxt], need[nxt], req[nxt])
            head = min(head, rank[nxt])
            if schedgym:
                _tree_set(scan_tree, scan_size, scan_pos[nxt], need[nxt], req[nxt])
            nxt += 1

        planned = False
        while head < size:
            p = head
            h = row_at[p]
            decisions += 1
            if conservative:
                # a job starts when its reservation is now (`PassLoop.apply_planned`)
                if not planned:
                    k, prof_times, prof_free, prof_max, res_rows, res_shadows, n_res = \
                        _conservative_update(now, k, prof_times, prof_free, prof_max, free, need,
                                             req, est, res_s, ended, n_ended, row_at, tree, size,
                                             res_rows, res_shadows, n_res)
                    n_ended = 0
                    planned = True
                head_fits = res_s[h] == now
            else:
                head_fits = need[h] <= free
            if head_fits:
                starts[0] = h
                count = 1
            else:
                count = 0
                if mode == _EASY:
                    shadow, extra = _easy_shadow(now, need[h], free, run_est, run_need, n_run)
                    if n_res == res_rows.shape[0]:
                        res_rows = np.concatenate((res_rows, np.empty_like(res_rows)))
                        res_shadows = np.concatenate((res_shadows, np.empty_like(res_shadows)))
                    res_rows[n_res] = h
                    res_shadows[n_res] = shadow
                    n_res += 1
                    count = _easy_starts(p, now, free, shadow, extra, need, req, row_at,
                                         tree, size, starts)
                elif mode == _CONSERVATIVE:
                    count = _conservative_due(p, now, res_s, row_at, tree, size, starts)
                elif mode == _SCHEDGYM:
                    shadow = _schedgym_shadow(now, procs[h], free, ppn, run_est, run_need, n_run)
                    count = _schedgym_starts(now, free, shadow, need, scan_row_at, scan_tree,
                                             scan_size, starts)
            for j in range(count):
                r = starts[j]
                _start_job(r, now, need, req, executed, rank, scan_pos, start, est, tree,
                           size, scan_tree, scan_size, schedgym, run_est,
                           run_row, run_need, n_run, heap_end, heap_row, n_heap)
                n_run += 1
                n_heap += 1
                free -= need[r]
            if not head_fits:
                break  # the pass ends with the first head that does not fit, and its backfilling
            head = _first_waiting(tree, size, p + 1)
            if head < 0:
                head = size
    return start, res_rows[:n_res].copy(), res_shadows[:n_res].copy(), decisions


# -- the entry points ------------------------------------------------------------------------------


def schedule_static(
    submit: np.ndarray,
    req: np.ndarray,
    executed: np.ndarray,
    need: np.ndarray,
    rank: np.ndarray,
    total_nodes: int,
    backfill: str,
    procs: np.ndarray | None = None,
    procs_per_node: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Schedule a whole job table under the textbook pass loop with a static priority.

    The contract, for n jobs (row i of every array is job i):

    - `submit` (float64): submit times, non-decreasing (the pass engine's own requirement).
    - `req` (float64, finite, >= 0): requested times; backfilling plans with them, and a running
      job's estimated end is its start + its request.
    - `executed` (float64, finite, >= 0): how long each job really runs: min(run, req) under the
      `standard` profile, which kills a job at its request.
    - `need` (int, 1 .. total_nodes): whole nodes each job takes (`NodePool.nodes_needed`).
    - `rank` (int): a permutation of 0 .. n-1, the priority of each row, smaller first. It must be
      a total order: `Engine._static_rank` under the textbook profile (key, then row); see
      `static_rank`.
    - `total_nodes`: the identical nodes of the pool.
    - `backfill`: "none", "easy", "conservative" or "schedgym" (the pass engine's SchedGym rule;
      it needs `procs`, each job's processors, and `procs_per_node`, the pool's).

    Returns `(start, reservation_rows, reservation_shadows, decisions)`:

    - `start` (float64, n): every job's start time.
    - `reservation_rows` (int64) and `reservation_shadows` (float64): each reservation made, in
      order, as `Engine.reservations` lists them as (row, time): EASY's (the shadow time of each
      head that did not fit) and conservative backfilling's (each job's first reservation, where
      it is later than the pass that gave it); empty for the other rules.
    - `decisions`: how many decisions the pass engine asks its policy for (`Engine.decisions`,
      `result.metrics["decisions"]`): one per head started, one per head that did not fit.

    Input outside the contract raises ValueError naming the column and the rule it breaks.

    Equal, job for job and bit for bit, to `PassEngine.run` with a policy whose `static_keys` give
    this rank. The engine's clock at the end (`Engine.now`) is the last end, max(start + executed).
    The first call in a process compiles (see the module's docstring) unless numba's cache holds it.
    """
    if backfill not in BACKFILL_CODES:
        raise ValueError(f"unknown backfilling {backfill!r}; the kernel knows "
                         f"{', '.join(BACKFILL_CODES)}")
    submit = np.require(np.asarray(submit).ravel(), np.float64, ["C", "W"])
    n = submit.shape[0]
    req = _column(req, np.float64, n, "req")
    executed = _column(executed, np.float64, n, "executed")
    need = _column(need, np.int64, n, "need")
    rank = _column(rank, np.int64, n, "rank")
    total_nodes = int(total_nodes)
    if total_nodes < 1:
        raise ValueError(f"total_nodes must be at least 1, not {total_nodes}")
    if n == 0:
        empty = np.empty(0)
        return empty, np.empty(0, np.int64), empty.copy(), 0
    if np.any(np.diff(submit) < 0):
        r = int(np.flatnonzero(np.diff(submit) < 0)[0]) + 1
        raise ValueError(f"submit times must not decrease (row {r} is submitted before row {r - 1})")
    for name, col in (("submit", submit), ("req", req), ("executed", executed)):
        if not np.all(np.isfinite(col)) or (name != "submit" and np.any(col < 0)):
            raise ValueError(f"{name} must be finite{'' if name == 'submit' else ' and >= 0'}")
    if backfill == "conservative" and np.any(executed > req):
        r = int(np.flatnonzero(executed > req)[0])
        raise ValueError(f"executed must not exceed req under conservative backfilling (row {r}): "
                         f"its reservations hold only where every job ends by its request")
    if need.min() < 1 or need.max() > total_nodes:
        raise ValueError(f"need must lie in 1 .. total_nodes ({total_nodes}); got "
                         f"{int(need.min())} .. {int(need.max())}")
    if rank.min() != 0 or rank.max() != n - 1 or np.bincount(rank, minlength=n).max() != 1:
        raise ValueError("rank must be a permutation of 0 .. n-1 (a total order of the rows)")
    if backfill == "schedgym":
        if procs is None:
            raise ValueError("the schedgym rule needs each job's processors (procs=)")
        procs = _column(procs, np.float64, n, "procs")
        scan_pos = np.empty(n, np.int64)
        # SchedGym scans candidates by submit time; the engine sorts the queue (priority order)
        # by submit with a stable sort, so equal submit times keep priority order
        scan_pos[np.lexsort((rank, submit))] = np.arange(n)
    else:
        procs = np.zeros(1)
        scan_pos = rank
    start, rows, shadows, decisions = _schedule(submit, req, executed, need, rank, scan_pos, procs,
                                                int(procs_per_node), total_nodes,
                                                BACKFILL_CODES[backfill])
    return start, rows, shadows, int(decisions)


def static_rank(keys: np.ndarray) -> np.ndarray:
    """The rank `schedule_static` wants from static keys (smaller first): by key, then by row, as
    `Engine._static_rank` orders the queue under the textbook profile."""
    keys = np.asarray(keys, dtype=np.float64)
    n = keys.shape[0]
    rank = np.empty(n, dtype=np.int64)
    rank[np.lexsort((np.arange(n), keys))] = np.arange(n)
    return rank


def schedule_table(jobs, cluster, keys: np.ndarray, backfill: str, *, kill_at_request: bool = True):
    """`schedule_static` for a JobTable on a NodePool, with the static `keys` of a policy (e.g.
    `policy.static_keys(jobs)`): the inputs built as the pass engine builds them."""
    run, req = jobs.run_time, jobs.req_time
    executed = np.minimum(run, req) if kill_at_request else run
    return schedule_static(jobs.submit, req, executed, cluster.nodes_needed(jobs.procs),
                           static_rank(keys), cluster.nodes, backfill, procs=jobs.procs,
                           procs_per_node=cluster.procs_per_node)


def _column(values, dtype, n: int, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have one value per job ({n}), not shape {arr.shape}")
    if dtype is np.int64 and arr.dtype.kind == "f":
        if not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must hold whole numbers")
    # writeable too: numba compiles read-only arrays (a JobTable's columns) as another signature
    return np.require(arr, dtype, ["C", "W"])


__all__ = ["schedule_static", "static_rank", "schedule_table", "HAVE_NUMBA", "BACKFILL_CODES"]
