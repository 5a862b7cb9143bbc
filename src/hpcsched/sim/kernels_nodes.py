"""A compiled pass loop for heterogeneous clusters: one call schedules a whole job table.

`run_compiled(engine, policy)` runs, in one compiled call, what `engine.run(policy)` does under the
pass loop (`passes.PassLoop`) on named nodes (`state.NodeState`), and stores the result in the
engine (`Engine.record_run`): every job's start, nodes (in allocation order) and mode, the decision
count, and the EASY reservations, all equal to the Python engine's, job for job. It covers

- profiles whose loop is the pass loop: `standard` (textbook EASY, `backfill_nodes.easy_starts`)
  and `hpcsim` (HPCsim's rule, `backfill_nodes.hpcsim_starts`, the pass going on after a
  backfilling call that started something: `Profile.backfill_repeats`);
- backfilling `none` and `easy` (conservative is left to the Python engine);
- every allocator of `cluster.allocate` (the compiled bodies of `cluster.allocate_kernels`, the
  same code the Python engine calls), shared and exclusive clusters;
- policies with static keys (`static_keys(jobs)`: ours, and HPCsim's fcfs, lcfs, sjf, f1, f2),
  ranked as the engine ranks them (key, then row); and HPCsim's wfp3 and unicep, whose keys depend
  on the clock and are computed here as its Python code computes them (`math.pow(x, 3.0)` gives
  Python's `x ** 3` bit for bit, numba's `x ** 3` does not; see the tests).

Anything else (another loop, conservative backfilling, a policy that decides for itself, a key this
module cannot reproduce bit for bit, an engine already stepped) makes `run_compiled` return False
without touching the engine, and the caller runs the Python loop.

How the state is kept, so that an event costs about the log of the queue and the nodes it touches:

- the queue in priority order: for static keys a min-segment tree over priority positions whose
  inner nodes hold the least node count and the least request of each resource of their subtree,
  so the head and the backfilling candidates that may fit are found by descending it, whole
  subtrees of jobs that cannot fit skipped at once (a subtree whose smallest requests find too few
  nodes with that much of some resource free holds no job that fits); for clock-dependent keys the
  keys are computed once per pass, as the engine does at every decision of the pass, and the pass
  reads them from a heap;
- per node, its running jobs sorted by estimated end (start + request; ties in the order they were
  placed there), so a reservation walks a node's jobs in order without sorting;
- per request class, how many nodes fit it, cached until the free matrix changes;
- the running jobs' real ends on a binary heap.

Compilation: the first call in a process compiles the loop (some tens of seconds on the project's
2-core machine) and numba caches the machine code beside this file, so later processes only load it.
"""

from __future__ import annotations

import math

import numpy as np

from hpcsched._jit import HAVE_NUMBA, njit
from hpcsched.cluster.allocate_kernels import choose, fill_fits, unpack
from hpcsched.sim.engine import BACKFILLED, READY
from hpcsched.sim.kernels import _heap_pop, _heap_push  # the real ends: the same heap as the pool's

#: backfilling rules of the kernel
RULE_NONE, RULE_EASY, RULE_HPCSIM = 0, 1, 2
#: where the priority comes from: a static rank, or HPCsim's clock-dependent keys
KEYS_STATIC, KEYS_HPCSIM_WFP3, KEYS_HPCSIM_UNICEP = 0, 1, 2
#: kernel statuses: done; a key Python would not compute (it raises); an allocator with no answer
#: although enough nodes fit (HPCsim's topology search on nodes not all joined by switches: the
#: engine raises or goes wrong there, see `run_compiled`)
OK, KEY_ERROR, NO_ALLOCATION = 0, 1, 2

_BIG = 2**62  # a node count, core or GPU request larger than any: an empty tree leaf
#: slots of the small counter array the helpers share with the loop
_HEAP, _VERSION, _RESERVATIONS, _EPOCH, _INSTANCES = 0, 1, 2, 3, 4


# -- the waiting queue (static keys): a min-segment tree over priority positions -------------------
#
# Leaf `size + p` holds the job at priority position p while it waits: its node count and its
# per-node request; an inner node holds the minimum of each over its subtree. Empty leaves hold
# _BIG everywhere. `top[r, j]` is the (j+1)-th largest free amount of resource r over the nodes,
# so "at least c nodes have d of r free" reads top[r, c - 1] >= d.


@njit(cache=True)
def _tree_set(t_cnt, t_dem, size, pos, cnt, demand):
    i = pos + size
    t_cnt[i] = cnt
    for r in range(t_dem.shape[1]):
        t_dem[i, r] = demand[r]
    i >>= 1
    while i >= 1:
        left = 2 * i
        changed = False
        c = min(t_cnt[left], t_cnt[left + 1])
        if t_cnt[i] != c:
            t_cnt[i] = c
            changed = True
        for r in range(t_dem.shape[1]):
            d = min(t_dem[left, r], t_dem[left + 1, r])
            if t_dem[i, r] != d:
                t_dem[i, r] = d
                changed = True
        if not changed:
            break  # nothing above changes either
        i >>= 1


@njit(cache=True)
def _first_waiting(t_cnt, size, lo):
    """The first position >= lo that holds a waiting job, or -1."""
    if lo >= size:
        return -1
    i = lo + size
    while (i & 1) == 0 and i > 1:
        i >>= 1  # the largest subtree whose first leaf is lo
    while True:
        if t_cnt[i] < _BIG:
            if i >= size:
                return i - size
            i = 2 * i
            continue
        while i & 1:  # the next subtree on the right: climb while i is a right child
            i >>= 1
        if i == 0:
            return -1
        i += 1


@njit(cache=True)
def _collect(t_cnt, t_dem, size, lo, top, row_at, out):
    """The rows at positions >= lo whose job may fit now, in position order, into `out`; returns
    how many. A job may fit if, for each resource, `cnt` nodes have its request of that resource
    free: necessary, not sufficient (a node must have all of them at once, and the cluster may be
    exclusive): the exact test is the caller's. At an inner node the test on the subtree's minima
    is necessary for any job of it, so one walk over the subtrees covering [lo, size), left to
    right, enters a subtree whose minima pass and steps over one that fails, whole."""
    m = 0
    if lo >= size:
        return 0
    r_count = t_dem.shape[1]
    i = lo + size
    while (i & 1) == 0 and i > 1:
        i >>= 1
    while True:
        cnt = t_cnt[i]
        ok = cnt < _BIG
        if ok and cnt > 0:
            for r in range(r_count):
                if top[r, cnt - 1] < t_dem[i, r]:
                    ok = False
                    break
        if ok:
            if i < size:
                i = 2 * i
                continue
            out[m] = row_at[i - size]
            m += 1
        while i & 1:
            i >>= 1
        if i == 0:
            return m
        i += 1


@njit(cache=True)
def _fill_top(free, top):
    """top[r, :] = column r of `free`, largest first."""
    for r in range(free.shape[1]):
        col = np.sort(free[:, r])
        n = col.shape[0]
        for j in range(n):
            top[r, j] = col[n - 1 - j]


@njit(cache=True, inline="always")
def _top_move(top, r, old, new):
    """A node's free amount of resource r went from `old` to `new`: keep row r of `top` sorted
    (largest first) by moving one entry `old` to where `new` belongs."""
    if old == new:
        return
    n = top.shape[1]
    lo, hi = 0, n  # the first entry <= old (largest first): it equals old
    while lo < hi:
        mid = (lo + hi) >> 1
        if top[r, mid] > old:
            lo = mid + 1
        else:
            hi = mid
    j = lo
    if new < old:  # it moves right, past the entries larger than new
        while j + 1 < n and top[r, j + 1] > new:
            top[r, j] = top[r, j + 1]
            j += 1
    else:
        while j > 0 and top[r, j - 1] < new:
            top[r, j] = top[r, j - 1]
            j -= 1
    top[r, j] = new


# -- clock-dependent keys (HPCsim's wfp3 and unicep) -----------------------------------------------


@njit(cache=True)
def _hpcsim_key(mode, t, s, r, n):
    """HPCsim's key as its Python code computes it (`policies.hpcsim`), and whether Python would
    have computed it at all (it raises on a division by zero, a log2 of a non-positive number, or
    a power that overflows)."""
    if mode == KEYS_HPCSIM_WFP3:
        if r == 0.0:
            return 0.0, False
        x = (t - s) / r
        p = math.pow(x, 3.0)  # Python's x ** 3 is C's pow(x, 3.0); numba's x ** 3 multiplies
        if math.isinf(p) and not math.isinf(x):
            return 0.0, False  # Python: OverflowError
        return -p * n, True
    arg = n + 1e-6
    if arg <= 0.0:
        return 0.0, False
    d = math.log2(arg) * r
    if d == 0.0:
        return 0.0, False
    return -(t - s) / d, True


# Helpers called in inner loops take scalars, or are written out where they are needed: a helper
# given arrays, inlined or not, counts a reference to each (an atomic add and subtract), which
# costs more than a short body.


@njit(cache=True, inline="always")
def _before(ka, a, kb, b):
    """Row a (key ka) goes before row b (key kb): by key (NaN last, as numpy sorts), then row."""
    if ka != ka or kb != kb:
        if ka != ka and kb != kb:
            return a < b
        return kb != kb
    if ka < kb:
        return True
    if kb < ka:
        return False
    return a < b


@njit(cache=True, inline="always")
def _heap_down(hp, hn, i, keys):
    v = hp[i]
    while True:
        c = 2 * i + 1
        if c >= hn:
            break
        if c + 1 < hn and _before(keys[hp[c + 1]], hp[c + 1], keys[hp[c]], hp[c]):
            c += 1
        if not _before(keys[hp[c]], hp[c], keys[v], v):
            break
        hp[i] = hp[c]
        i = c
    hp[i] = v


# -- running jobs: per node, sorted by estimated end; real ends on a heap --------------------------


@njit(cache=True, inline="always")
def _task_insert(tasks, ntask, i, row, est):
    """Put `row` among node i's jobs, after those that end no later (it was placed last)."""
    nt = ntask[i]
    e = est[row]
    j = nt
    while j > 0 and est[tasks[i, j - 1]] > e:
        tasks[i, j] = tasks[i, j - 1]
        j -= 1
    tasks[i, j] = row
    ntask[i] = nt + 1


@njit(cache=True, inline="always")
def _task_remove(tasks, ntask, i, row):
    nt = ntask[i]
    j = 0
    while tasks[i, j] != row:
        j += 1
    for q in range(j, nt - 1):
        tasks[i, q] = tasks[i, q + 1]
    ntask[i] = nt - 1


# -- what fits -------------------------------------------------------------------------------------


@njit(cache=True)
def _count_fitting(k, free, class_demand, cap, exclusive):
    """How many nodes of `free` can take a share of class k (`allocate.fitting_nodes`). The
    callers cache it per class until the matrix changes (`fc`, `fc_ver`: a version stamp)."""
    m = 0
    r_count = free.shape[1]
    for i in range(free.shape[0]):
        ok = True
        for r in range(r_count):
            if free[i, r] < class_demand[k, r] or (exclusive and free[i, r] != cap[i, r]):
                ok = False
                break
        if ok:
            m += 1
    return m


@njit(cache=True)
def _node_points(nodes, m, free, demand, cap, exclusive, tasks, ntask, est, klass, class_demand,
                 out):
    """`NodeState.node_point` for nodes[:m], into out[:m]: when a share of `demand` fits on the
    node as its jobs end in order of estimated end (ties: the order they were placed there): -2 it
    fits now, -1 never, else the row whose end makes it fit."""
    r_count = free.shape[1]
    need = np.empty(r_count, np.int64)
    for q in range(m):
        i = nodes[q]
        worst = -_BIG
        for r in range(r_count):
            need[r] = demand[r] - free[i, r]
            worst = max(worst, need[r])
        if worst <= 0:
            out[q] = -2
            continue
        nt = ntask[i]
        if exclusive:
            out[q] = -1
            over = False
            for r in range(r_count):
                if demand[r] > cap[i, r]:
                    over = True
            if over or nt == 0:
                continue
            # idle once every job has ended: the latest end, the first placed among equal ends
            # (Python's max keeps the first maximal element)
            j = nt - 1
            while j > 0 and est[tasks[i, j - 1]] == est[tasks[i, nt - 1]]:
                j -= 1
            out[q] = tasks[i, j]
            continue
        out[q] = -1
        for j in range(nt):
            row = tasks[i, j]
            k = klass[row]
            worst = -_BIG
            for r in range(r_count):
                need[r] -= class_demand[k, r]
                worst = max(worst, need[r])
            if worst <= 0:
                out[q] = row
                break


@njit(cache=True)
def _kth_smallest(values, m, k):
    """The k-th smallest of values[:m] (inf if m < k)."""
    if m < k:
        return np.inf
    return np.sort(values[:m])[k - 1]


# -- starting and ending jobs ----------------------------------------------------------------------


@njit(cache=True)
def _take(row, now, how, chosen, cnt, insert, start, est, mode, alloc, offsets, req, executed,
          free, cap, exclusive, demand, tasks, ntask, heap_end, heap_row, ctr, top):
    """Start `row` now on chosen[:cnt] (mode `how`): its resources off the free matrix (whole
    nodes when exclusive, and off `top`), onto its nodes' lists (unless already there), its real
    end on the heap."""
    start[row] = now
    est[row] = now + req[row]
    mode[row] = how
    off = offsets[row]
    for j in range(cnt):
        i = chosen[j]
        alloc[off + j] = i
        for r in range(free.shape[1]):
            old = free[i, r]
            free[i, r] = old - (cap[i, r] if exclusive else demand[r])
            _top_move(top, r, old, free[i, r])
        if insert:
            _task_insert(tasks, ntask, i, row, est)
    ctr[_HEAP] = _heap_push(heap_end, heap_row, ctr[_HEAP], now + executed[row], row)
    ctr[_VERSION] += 1


@njit(cache=True)
def _give(row, count, alloc, offsets, free, cap, exclusive, demand, tasks, ntask, ctr, top):
    off = offsets[row]
    for j in range(count):
        i = alloc[off + j]
        for r in range(free.shape[1]):
            old = free[i, r]
            free[i, r] = old + (cap[i, r] if exclusive else demand[r])
            _top_move(top, r, old, free[i, r])
        _task_remove(tasks, ntask, i, row)
    ctr[_VERSION] += 1


# -- backfilling: each rule starts what it may among `cand` (the waiting jobs behind the head that
# may fit now, in priority order), writes them to `out` and returns how many (-1: the allocator had
# no answer for a job that fits) -----------------------------------------------------------------


@njit(cache=True)
def _holds_after(i, shadow, after, free, cap, exclusive, demand, head_demand, tasks, ntask, est,
                 klass, class_demand):
    """Whether node i could still take the head's share at the shadow time with one more job of
    per-node `demand` on it (running past then): what is free now, minus that job, plus what the
    jobs ending by the shadow time give back (`after` is scratch space)."""
    r_count = free.shape[1]
    for r in range(r_count):
        after[r] = free[i, r] - (cap[i, r] if exclusive else demand[r])
    for t in range(ntask[i]):
        row = tasks[i, t]
        if est[row] <= shadow:
            for r in range(r_count):
                after[r] += cap[i, r] if exclusive else class_demand[klass[row], r]
    for r in range(r_count):
        if after[r] < head_demand[r] or (exclusive and after[r] != cap[i, r]):
            return False
    return True


@njit(cache=True)
def _easy(head, now, cand, n_cand, out, code, A, free, cap, exclusive, count, klass, class_demand,
          req, executed, start, est, mode, alloc, offsets, tasks, ntask, fc, fc_ver, ctr,
          heap_end, heap_row, res_rows, res_shadows, fits, chosen, all_nodes, points, times, ready,
          lost, rej_epoch, rej_cnt, top):
    """`backfill_nodes.easy_starts`. The jobs it starts are started at once (the engine starts
    them after the scan, in the same order, on the same nodes: the same state). Where the engine
    keeps the free vectors of the nodes at the shadow time as the scan goes, this computes them
    from the state as it is: what is free now plus what the jobs ending by the shadow time give
    back; jobs started by the scan that end by then add and take the same, and those running past
    it are taken, which is the engine's bookkeeping.

    A refusal changes nothing, and whether a job that runs past the shadow time is refused depends
    only on the state, its class and its node count (they decide its nodes): so until a job starts,
    a later job of the same class and count that runs past the shadow time is refused without
    being placed again (`rej_*`, stamped with the epoch `ctr[_EPOCH]`, which every start moves)."""
    n = free.shape[0]
    r_count = free.shape[1]
    k_head = klass[head]
    want = count[head]
    head_demand = class_demand[k_head]
    after = np.empty(r_count, np.int64)
    safe = np.empty(n, np.bool_)
    _node_points(all_nodes, n, free, head_demand, cap, exclusive, tasks, ntask, est, klass,
                 class_demand, points)
    m = 0
    for i in range(n):
        p = points[i]
        if p != -1:
            times[m] = now if p == -2 else est[p]
            m += 1
    shadow = _kth_smallest(times, m, want)
    nr = ctr[_RESERVATIONS]
    res_rows[nr] = head
    res_shadows[nr] = shadow
    ctr[_RESERVATIONS] = nr + 1
    n_ready = 0
    for i in range(n):
        p = points[i]
        ready[i] = p != -1 and (p == -2 or est[p] <= shadow)
        if ready[i]:
            n_ready += 1
    ctr[_EPOCH] += 1
    started = 0
    for j in range(n_cand):
        c = cand[j]
        k = klass[c]
        cnt = count[c]
        past = now + req[c] > shadow
        if past and rej_epoch[k] == ctr[_EPOCH] and rej_cnt[k] == cnt:
            continue  # refused already
        if fc_ver[k] != ctr[_VERSION]:
            fc[k] = _count_fitting(k, free, class_demand, cap, exclusive)
            fc_ver[k] = ctr[_VERSION]
        if fc[k] < cnt:
            continue
        demand = class_demand[k]
        fill_fits(free, demand, cap, exclusive, fits)
        if choose(code, free, demand, cnt, fits, A, chosen) < 0:
            return -1
        if past:
            # it runs past the reservation: the head must still find its nodes then
            n_lost = 0
            for q in range(cnt):
                i = chosen[q]
                lost[q] = ready[i] and not _holds_after(i, shadow, after, free, cap, exclusive,
                                                        demand, head_demand, tasks, ntask, est,
                                                        klass, class_demand)
                if lost[q]:
                    n_lost += 1
            if n_ready - n_lost < want:
                # the allocator's placement takes the head's nodes: it chooses again among the
                # nodes the job can take without spoiling the head's
                n_safe = 0
                for i in range(n):
                    safe[i] = fits[i] and (not ready[i] or _holds_after(
                        i, shadow, after, free, cap, exclusive, demand, head_demand, tasks, ntask,
                        est, klass, class_demand))
                    if safe[i]:
                        n_safe += 1
                if n_safe < cnt:
                    rej_epoch[k] = ctr[_EPOCH]
                    rej_cnt[k] = cnt
                    continue
                if choose(code, free, demand, cnt, safe, A, chosen) < 0:
                    return -1
                n_lost = 0
                for q in range(cnt):
                    lost[q] = False
            for q in range(cnt):
                if lost[q]:
                    ready[chosen[q]] = False
                    n_ready -= 1
        _take(c, now, BACKFILLED, chosen, cnt, True, start, est, mode, alloc, offsets, req,
              executed, free, cap, exclusive, demand, tasks, ntask, heap_end, heap_row, ctr, top)
        ctr[_EPOCH] += 1
        out[started] = c
        started += 1
    return started


@njit(cache=True, inline="always")
def _tally(v, target):
    """What an estimate adds to the counts the k-th test reads: (not -1, below the target, at most
    the target), each 0 or 1."""
    if v == -1.0:
        return 0, 0, 0
    return 1, 1 if v < target else 0, 1 if v <= target else 0


@njit(cache=True)
def _hpcsim(head, now, cand, n_cand, out, code, A, free, cap, exclusive, count, klass,
            class_demand, req, executed, start, est, mode, alloc, offsets, tasks, ntask, fc,
            fc_ver, ctr, heap_end, heap_row, fits, chosen, all_nodes, points, per_node, trial,
            tfree, rej_epoch, rej_cnt, rej_req, top):
    """`backfill_nodes.hpcsim_starts`. The head's earliest start is the k-th smallest per-node
    estimate (0: it fits there now; -1: never; else the remaining requested time of the job whose
    end makes it fit); a candidate is placed on a trial copy of the free matrix (HPCsim takes its
    request off the nodes, even on an exclusive cluster), put on its nodes' lists, and the
    estimates of those nodes only are computed again. The k-th smallest is unchanged exactly when
    fewer than k estimates lie below the target and at least k at or below it, so three counts,
    updated by the changed nodes, decide, with no sort per candidate. A kept candidate starts at
    once; a refused one is taken back off the trial matrix and the lists.

    A refusal changes nothing, and a candidate's outcome depends only on the state, its class and
    node count (they decide its nodes) and its request: a later end on a node can only move that
    node's estimate later, so the k-th smallest too. So until a job starts, a candidate of the same
    class and count as a refused one, with at least its request, is refused without a trial
    (`rej_*`, stamped with the epoch `ctr[_EPOCH]`, which every start moves)."""
    n = free.shape[0]
    r_count = free.shape[1]
    k_head = klass[head]
    want = count[head]
    head_demand = class_demand[k_head]
    for i in range(n):
        for r in range(r_count):
            tfree[i, r] = free[i, r]
    _node_points(all_nodes, n, tfree, head_demand, cap, exclusive, tasks, ntask, est, klass,
                 class_demand, points)
    m = 0
    for i in range(n):
        p = points[i]
        v = 0.0 if p == -2 else (-1.0 if p == -1 else req[p] - (now - start[p]))
        per_node[i] = v
        if v != -1.0:
            trial[m] = v
            m += 1
    target = -1.0 if m < want else np.sort(trial[:m])[want - 1]
    n_ok = n_lt = n_le = 0  # estimates that are not -1, below the target, at most the target
    for i in range(n):
        a, b, c = _tally(per_node[i], target)
        n_ok += a
        n_lt += b
        n_le += c
    ctr[_EPOCH] += 1
    started = 0
    for j in range(n_cand):
        c = cand[j]
        k = klass[c]
        cnt = count[c]
        if rej_epoch[k] == ctr[_EPOCH] and rej_cnt[k] == cnt and req[c] >= rej_req[k]:
            continue  # refused already
        if fc_ver[k] != ctr[_VERSION]:
            fc[k] = _count_fitting(k, tfree, class_demand, cap, exclusive)
            fc_ver[k] = ctr[_VERSION]
        if fc[k] < cnt:
            continue
        demand = class_demand[k]
        fill_fits(tfree, demand, cap, exclusive, fits)
        if choose(code, tfree, demand, cnt, fits, A, chosen) < 0:
            return -1
        start[c] = now
        est[c] = now + req[c]
        for q in range(cnt):
            i = chosen[q]
            for r in range(r_count):
                tfree[i, r] -= demand[r]
            _task_insert(tasks, ntask, i, c, est)
        _node_points(chosen, cnt, tfree, head_demand, cap, exclusive, tasks, ntask, est, klass,
                     class_demand, points)
        ok, lt, le = n_ok, n_lt, n_le
        for q in range(cnt):
            p = points[q]
            v = 0.0 if p == -2 else (-1.0 if p == -1 else req[p] - (now - start[p]))
            trial[q] = v
            a, b, d = _tally(per_node[chosen[q]], target)
            ok, lt, le = ok - a, lt - b, le - d
            a, b, d = _tally(v, target)
            ok, lt, le = ok + a, lt + b, le + d
        if target == -1.0:
            keep = ok < want
        else:
            keep = ok >= want and lt < want <= le
        if keep:
            for q in range(cnt):
                per_node[chosen[q]] = trial[q]
            n_ok, n_lt, n_le = ok, lt, le
            _take(c, now, BACKFILLED, chosen, cnt, False, start, est, mode, alloc, offsets, req,
                  executed, free, cap, exclusive, demand, tasks, ntask, heap_end, heap_row, ctr,
                  top)
            ctr[_EPOCH] += 1
            out[started] = c
            started += 1
        else:  # rolled back
            if rej_epoch[k] != ctr[_EPOCH] or rej_cnt[k] != cnt or req[c] < rej_req[k]:
                rej_epoch[k] = ctr[_EPOCH]
                rej_cnt[k] = cnt
                rej_req[k] = req[c]
            for q in range(cnt):
                i = chosen[q]
                for r in range(r_count):
                    tfree[i, r] += demand[r]
                _task_remove(tasks, ntask, i, c)
            start[c] = np.nan
            est[c] = 0.0
    ctr[_VERSION] += 1  # counts cached on the trial matrix are not the real matrix's
    return started


# -- the loop --------------------------------------------------------------------------------------


@njit(cache=True)
def _schedule(submit, req, executed, count, klass, class_demand, key_mode, rank, procs, rule,
              repeats, code, offsets, max_tasks, capacity, meta, per_node_info, half_per_mb,
              others_cap, switches, hp_seq):
    A = unpack(capacity, meta, per_node_info, half_per_mb, others_cap, switches, hp_seq)
    cap = A.capacity
    exclusive = A.exclusive
    n = submit.shape[0]
    n_nodes, r_count = cap.shape
    k_count = class_demand.shape[0]

    start = np.full(n, np.nan)
    est = np.zeros(n)
    mode = np.zeros(n, np.int8)
    alloc = np.empty(offsets[n], np.int64)
    decisions = 0
    res_cap = 3 * n + 16 if rule == RULE_EASY else 1  # one per pass, at most ~2 passes per job
    res_rows = np.empty(res_cap, np.int64)
    res_shadows = np.empty(res_cap)
    # heap size, version of the free matrix, reservations, epoch, instants with events (passes)
    ctr = np.zeros(5, np.int64)
    # per request class, the candidates backfilling refused since it last started a job
    rej_epoch = np.full(k_count, -1, np.int64)
    rej_cnt = np.zeros(k_count, np.int64)
    rej_req = np.zeros(k_count)

    free = cap.copy()
    tfree = np.empty_like(free)
    fc = np.zeros(k_count, np.int64)
    fc_ver = np.full(k_count, -1, np.int64)
    tasks = np.empty((n_nodes, max_tasks), np.int64)
    ntask = np.zeros(n_nodes, np.int64)
    heap_end = np.empty(n + 1)
    heap_row = np.empty(n + 1, np.int64)

    # what may fit: the free amounts of each resource, largest first, kept so by every change
    top = np.empty((r_count, n_nodes), np.int64)
    _fill_top(cap, top)

    # the queue: static keys, a tree over priority positions; clock-dependent keys, the waiting
    # rows in arrival order, keyed and heaped once per pass
    static = key_mode == KEYS_STATIC
    size = 1
    while size < n:
        size *= 2
    tree_size = size if static else 1
    t_cnt = np.full(2 * tree_size, _BIG, np.int64)
    t_dem = np.full((2 * tree_size, r_count), _BIG, np.int64)
    empty = np.full(r_count, _BIG, np.int64)
    row_at = np.empty(tree_size, np.int64)
    if static:
        for r in range(n):
            row_at[rank[r]] = r
    head_pos = size
    qrows = np.empty(n, np.int64)
    q_len = 0
    waiting = np.zeros(n, np.bool_)
    keys = np.zeros(n)
    hp = np.empty(n, np.int64)
    hn = 0

    cand = np.empty(n, np.int64)
    cand_keys = np.empty(n)
    out = np.empty(n, np.int64)
    fits = np.empty(n_nodes, np.bool_)
    chosen = np.empty(n_nodes, np.int64)
    points = np.empty(n_nodes, np.int64)
    all_nodes = np.arange(n_nodes)
    times = np.empty(n_nodes)
    ready = np.empty(n_nodes, np.bool_)
    lost = np.empty(n_nodes, np.bool_)
    per_node = np.empty(n_nodes)

    n_wait = 0
    nxt = 0
    while True:
        # the next instant with a completion or an arrival; all of its events, then one pass
        n_heap = ctr[_HEAP]
        if n_heap > 0 and (nxt >= n or heap_end[0] <= submit[nxt]):
            now = heap_end[0]
        elif nxt < n:
            now = submit[nxt]
        else:
            break
        ctr[_INSTANCES] += 1
        while ctr[_HEAP] > 0 and heap_end[0] <= now:
            r = heap_row[0]
            ctr[_HEAP] = _heap_pop(heap_end, heap_row, ctr[_HEAP])
            _give(r, count[r], alloc, offsets, free, cap, exclusive, class_demand[klass[r]],
                  tasks, ntask, ctr, top)
        while nxt < n and submit[nxt] <= now:
            if static:
                _tree_set(t_cnt, t_dem, size, rank[nxt], count[nxt], class_demand[klass[nxt]])
                head_pos = min(head_pos, rank[nxt])
            else:
                qrows[q_len] = nxt
                q_len += 1
            waiting[nxt] = True
            n_wait += 1
            nxt += 1
        if n_wait == 0:
            continue
        if not static:
            # the engine ranks the queue by the keys at this instant at every decision of the
            # pass; they do not change within it, so once per pass is the same order
            q = 0
            for j in range(q_len):
                r = qrows[j]
                if waiting[r]:
                    qrows[q] = r
                    q += 1
            q_len = q
            for j in range(q_len):
                r = qrows[j]
                key, ok = _hpcsim_key(key_mode, now, submit[r], req[r], procs[r])
                if not ok:
                    return start, mode, alloc, decisions, res_rows[:0].copy(), \
                        res_shadows[:0].copy(), ctr, KEY_ERROR
                keys[r] = key
                hp[j] = r
            hn = q_len
            for j in range(hn // 2 - 1, -1, -1):
                _heap_down(hp, hn, j, keys)

        while n_wait > 0:
            if static:
                h = row_at[head_pos]
            else:
                while not waiting[hp[0]]:  # started by backfilling earlier in the pass
                    hn -= 1
                    hp[0] = hp[hn]
                    _heap_down(hp, hn, 0, keys)
                h = hp[0]
            decisions += 1
            k = klass[h]
            if fc_ver[k] != ctr[_VERSION]:
                fc[k] = _count_fitting(k, free, class_demand, cap, exclusive)
                fc_ver[k] = ctr[_VERSION]
            if fc[k] >= count[h]:
                demand = class_demand[k]
                fill_fits(free, demand, cap, exclusive, fits)
                if choose(code, free, demand, count[h], fits, A, chosen) < 0:
                    return start, mode, alloc, decisions, res_rows[:0].copy(), \
                        res_shadows[:0].copy(), ctr, NO_ALLOCATION
                _take(h, now, READY, chosen, count[h], True, start, est, mode, alloc, offsets, req,
                      executed, free, cap, exclusive, demand, tasks, ntask, heap_end, heap_row,
                      ctr, top)
                waiting[h] = False
                n_wait -= 1
                if static:
                    _tree_set(t_cnt, t_dem, size, head_pos, _BIG, empty)
                    head_pos = _first_waiting(t_cnt, size, head_pos + 1)
                    if head_pos < 0:
                        head_pos = size
                else:
                    hn -= 1
                    hp[0] = hp[hn]
                    _heap_down(hp, hn, 0, keys)
                continue
            # the head does not fit: it is reserved for, and backfilling starts what it may
            if rule == RULE_NONE:
                break
            n_cand = 0
            if static:
                n_cand = _collect(t_cnt, t_dem, size, head_pos + 1, top, row_at, cand)
            else:
                for j in range(q_len):
                    r = qrows[j]
                    if not waiting[r] or r == h:
                        continue
                    may = True  # as in `_collect`
                    for rr in range(r_count):
                        if top[rr, count[r] - 1] < class_demand[klass[r], rr]:
                            may = False
                            break
                    if may:
                        cand_keys[n_cand] = keys[r]
                        cand[n_cand] = r
                        n_cand += 1
                # rows in arrival (= row) order, so a stable sort by key breaks ties by row; no
                # key is NaN here (`_hpcsim_key` refuses the inputs that would give one)
                order = np.argsort(cand_keys[:n_cand], kind="mergesort")
                picked = cand[:n_cand].copy()
                for j in range(n_cand):
                    cand[j] = picked[order[j]]
            if rule == RULE_EASY:
                started = _easy(h, now, cand, n_cand, out, code, A, free, cap, exclusive, count,
                                klass, class_demand, req, executed, start, est, mode, alloc,
                                offsets, tasks, ntask, fc, fc_ver, ctr, heap_end, heap_row,
                                res_rows, res_shadows, fits, chosen, all_nodes, points, times,
                                ready, lost, rej_epoch, rej_cnt, top)
            else:
                started = _hpcsim(h, now, cand, n_cand, out, code, A, free, cap, exclusive, count,
                                  klass, class_demand, req, executed, start, est, mode, alloc,
                                  offsets, tasks, ntask, fc, fc_ver, ctr, heap_end, heap_row,
                                  fits, chosen, all_nodes, points, per_node, times, tfree,
                                  rej_epoch, rej_cnt, rej_req, top)
            if started < 0:
                return start, mode, alloc, decisions, res_rows[:0].copy(), \
                    res_shadows[:0].copy(), ctr, NO_ALLOCATION
            for j in range(started):
                c = out[j]
                waiting[c] = False
                if static:
                    _tree_set(t_cnt, t_dem, size, rank[c], _BIG, empty)
            n_wait -= started
            if started == 0 or not repeats:
                break
    nr = ctr[_RESERVATIONS]
    return start, mode, alloc, decisions, res_rows[:nr].copy(), res_shadows[:nr].copy(), ctr, OK


# -- the entry points ------------------------------------------------------------------------------

#: the allocator classes the kernel knows, by their compiled code
def _allocator_code(allocator) -> int | None:
    from hpcsched.cluster import allocate as al

    known = {al.FirstAvailable: al.FirstAvailable.code, al.BestFit: al.BestFit.code,
             al.TopologyAware: al.TopologyAware.code,
             al.HpcsimFirstAvailable: al.HpcsimFirstAvailable.code,
             al.HpcsimBestFit: al.HpcsimBestFit.code, al.HpcsimTopology: al.HpcsimTopology.code}
    return known.get(type(allocator))


def _key_plan(engine, policy):
    """(key mode, rank) for `policy`, or None if the kernel cannot reproduce its order."""
    if any(hasattr(policy, name) for name in ("decide", "reset")) or \
            getattr(policy, "decides_backfill", False):
        return None  # it decides (or keeps state) itself: only the Python loop asks it
    static = getattr(policy, "static_keys", None)
    if static is not None:
        keys = np.asarray(static(engine.jobs), dtype=np.float64)
        if keys.shape != (engine.n,):
            return None
        return KEYS_STATIC, np.asarray(engine.static_rank(keys), dtype=np.int64)
    from hpcsched.policies import hpcsim as hp

    if type(policy) is hp.HpcsimDynamic:
        mode = {hp._wfp3: KEYS_HPCSIM_WFP3, hp._unicep: KEYS_HPCSIM_UNICEP}.get(policy.score)
        if mode is not None:
            return mode, np.zeros(1, dtype=np.int64)
    return None


def _max_tasks(res) -> int:
    """How many jobs can be on one node at once (the width of the per-node lists)."""
    n = len(res.count)
    if res.exclusive:
        return 2
    least = res.class_demand.min(axis=0)
    most = res.capacity.max(axis=0)
    bounds = [int(most[r] // least[r]) for r in range(len(least)) if least[r] > 0]
    return min(min(bounds) if bounds else n, n) + 1


def plan(engine, policy) -> dict | None:
    """The kernel's inputs for `engine.run(policy)`, or None where the kernel does not apply (see
    the module docstring)."""
    from hpcsched.sim.passes import PassLoop
    from hpcsched.sim.state import NodeState

    loop, res, prof = engine.loop, engine.res, engine.profile
    if type(loop) is not PassLoop or type(res) is not NodeState:
        return None
    fresh = (engine.started == 0 and engine.decisions == 0 and not engine.done and
             engine.next_arrival == 0 and engine.instances == 0 and not loop.in_pass and
             not loop.completions and not loop.wakeups and not res.alloc and
             np.array_equal(res.free_matrix, res.capacity))
    if not fresh or prof.commit or prof.loop != "pass" or prof.dialect not in ("", "hpcsim"):
        return None
    if engine.backfill == "none":
        rule = RULE_NONE
    elif engine.backfill == "easy":
        rule = RULE_HPCSIM if prof.dialect == "hpcsim" else RULE_EASY
    else:
        return None
    code = _allocator_code(res.allocator)
    keys = _key_plan(engine, policy)
    if code is None or keys is None:
        return None
    max_tasks = _max_tasks(res)
    if res.total * max_tasks > 2**25:  # per-node lists of more than 256 MB
        return None
    from hpcsched.cluster.allocate import cluster_arrays

    jobs = engine.jobs
    count = np.ascontiguousarray(res.count, dtype=np.int64)
    offsets = np.zeros(engine.n + 1, dtype=np.int64)
    np.cumsum(count, out=offsets[1:])
    return dict(
        submit=np.ascontiguousarray(jobs.submit, dtype=np.float64),
        req=np.ascontiguousarray(jobs.req_time, dtype=np.float64),
        executed=np.ascontiguousarray(engine.executed, dtype=np.float64),
        count=count,
        klass=np.asarray(res.klass, dtype=np.int64),
        class_demand=np.ascontiguousarray(res.class_demand, dtype=np.int64),
        key_mode=keys[0],
        rank=keys[1],
        procs=np.ascontiguousarray(jobs.procs, dtype=np.float64),
        rule=rule,
        repeats=bool(prof.backfill_repeats),
        code=int(code),
        offsets=offsets,
        max_tasks=max_tasks,
        arrays=cluster_arrays(engine.cluster),
    )


def schedule(p: dict):
    """Run the kernel on `plan`'s inputs. Returns (start, modes, allocations, decisions,
    reservations, instances: the instants with events, each opening a pass), or None where the
    kernel cannot follow the Python loop: a key the Python policy would not compute (it raises), or
    an allocator with no answer for a job that fits (the Python loop raises there; see
    `NO_ALLOCATION`). The Python loop should then run and say why."""
    start, mode, alloc, decisions, rows, shadows, ctr, status = _schedule(
        p["submit"], p["req"], p["executed"], p["count"], p["klass"], p["class_demand"],
        p["key_mode"], p["rank"], p["procs"], p["rule"], p["repeats"], p["code"], p["offsets"],
        p["max_tasks"], *p["arrays"])
    if status != OK:
        return None
    allocations = np.split(alloc, p["offsets"][1:-1])
    reservations = list(zip(rows.tolist(), shadows.tolist()))
    return start, mode, allocations, int(decisions), reservations, int(ctr[_INSTANCES])


def run_compiled(engine, policy) -> bool:
    """Run `engine` to the end with `policy` in compiled code and store the run in it; return
    whether it did.

    It does when the engine is fresh (from `make_engine`, not stepped yet), its loop is the pass
    loop (`PassLoop`) on named nodes (`NodeState`), in our dialect or HPCsim's, with backfilling
    `none` or `easy`, its allocator is one of the six of `cluster.allocate` (of that very class),
    and the policy has static keys (and neither `decide` nor `reset`) or is HPCsim's wfp3 or
    unicep. The engine then ends as if stepped to the end: `Engine.record_run` gets every job's
    start, nodes (allocation order), mode (READY, BACKFILLED), the decision count and the EASY
    reservations, each equal to the stepped loop's, and `engine.instances` the passes opened;
    `engine.result()` gives the same metrics.

    Otherwise it returns False and leaves the engine untouched, and the caller runs the Python
    loop: without numba (the same functions as plain Python would be slower than the engine), and
    where the stepped loop would raise (HPCsim's selector dividing by a zero request, HPCsim's
    topology search with no answer for a job that fits), so that it raises with its message."""
    if not HAVE_NUMBA:
        return False
    p = plan(engine, policy)
    if p is None:
        return False
    out = schedule(p)
    if out is None:
        return False
    start, mode, allocations, decisions, reservations, instances = out
    engine.record_run(start, allocations=allocations, modes=mode, decisions=decisions,
                      reservations=reservations)
    engine.instances = instances  # as the stepped loop counts them (`DecisionView.instances`)
    return True


__all__ = ["plan", "run_compiled", "schedule"]
