"""The allocators' bodies, compiled: plain functions over arrays, shared by every caller.

`allocate.py` keeps the allocator objects and their `allocate(cluster, free, request, count, fits)`
API; each is a thin wrapper that calls `allocate_into` here with the cluster's precomputed arrays
(`cluster_arrays`, built once per cluster: seven arrays, because numba checks the type of every
argument of a call from Python, and plain arrays are the cheapest to check). Inside compiled code
they are unpacked once into a `ClusterArrays` named tuple (`unpack`) that the bodies read. The
compiled pass loops (`hpcsched.sim.kernels_nodes`) call the same functions from compiled code, so
the Python engine and the compiled loops choose nodes with one implementation.

What each allocator does, and why, is documented on its class in `allocate.py`; the comments here
only say how the array version reproduces the rule exactly (ties, float keys). Every function is
`njit(cache=True)`; without numba they run as plain Python (see `hpcsched._jit`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hpcsched._jit import njit

#: allocator codes, in `allocate.py`'s registry order
FIRST_AVAILABLE, BEST_FIT, TOPOLOGY, HPCSIM_FIRST_AVAILABLE, HPCSIM_BEST_FIT, HPCSIM_TOPOLOGY = \
    range(6)

#: HPCsim's allocation weights (Scheduler.py, `Allocator.__init__`): a free GPU counts 100 cores.
HPCSIM_GPU_WEIGHT = 100


class ClusterArrays(NamedTuple):
    """What the allocators need of a cluster (views of the packed arrays, see `unpack`)."""

    capacity: np.ndarray  # (N, R) int64
    exclusive: bool
    cores: int  # column of each resource in the free matrix, -1 where the cluster lacks it
    gpus: int
    memory: int
    simple: bool  # the resources are among cores, memory, GPUs: best fit's key folds into a float
    gpu_scale: int
    half_per_mb: np.ndarray  # (N,) float64: 0.5 / memory capacity (0 where no memory column)
    others: np.ndarray  # (k,) int64: columns other than cores and GPUs, in resource order
    others_cap: np.ndarray  # (N, k) int64: max(capacity, 1) of those columns
    name_rank: np.ndarray  # (N,) int64: HPCsim's `n<i>` in Python string order
    leaf: np.ndarray  # (N,) int64
    under: np.ndarray  # (S, S) int64: under[l, s] = 1 if switch l is s or below it
    level: np.ndarray  # (S,) int64
    has_children: np.ndarray  # (S,) bool
    members: np.ndarray  # (S, N) bool
    hp_perm: np.ndarray  # (N,) nodes block by block, cluster order inside (HPCsim's topology)
    hp_group: np.ndarray  # (N,) the block of each node
    hp_seq: np.ndarray  # (G, G) int64: per block, the blocks its search reaches, in order
    hp_seq_len: np.ndarray  # (G,) int64


# -- feasibility ---------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def fill_fits(free, request, capacity, exclusive, fits):
    """`fits[i]` = node i can take `request` now (`allocate.fitting_nodes`: its free vector holds
    the request, and on an exclusive cluster it is idle); returns how many can."""
    m = 0
    r_count = free.shape[1]
    for i in range(free.shape[0]):
        ok = True
        for r in range(r_count):
            if free[i, r] < request[r] or (exclusive and free[i, r] != capacity[i, r]):
                ok = False
                break
        fits[i] = ok
        if ok:
            m += 1
    return m


# -- best fit (ours) -----------------------------------------------------------------------------


# The short paths of one allocation are inlined (numba IR), and helpers called once per node take
# scalars: a function given an array, inlined or not, counts a reference to it (an atomic add and
# subtract), which costs more than these bodies; the named tuple counts one per array it holds.


@njit(cache=True, inline="always")
def _simple_key(cores_left, gpus_left, memory_left, gpu_scale, half_per_mb):
    """`allocate.best_fit_order`'s folded key of a node, with numpy's operations in numpy's order:
    cores left as a float, plus GPUs left x scale (an integer product), plus memory left x half
    over the capacity. A missing resource has 0 left (an integer 0 adds exactly nothing)."""
    key = float(cores_left)
    key += float(gpus_left * gpu_scale)
    key += float(memory_left) * half_per_mb
    return key



@njit(cache=True, inline="always")
def _lex_before(free, request, a, b, cores, gpus, others, others_cap):
    """Node a strictly before node b under `best_fit_order`'s lexicographic key (resources other
    than cores, memory and GPUs): GPUs left, cores left, then each other resource left as a
    fraction of the node's capacity, in resource order."""
    if gpus >= 0:
        la = free[a, gpus] - request[gpus]
        lb = free[b, gpus] - request[gpus]
        if la != lb:
            return la < lb
    la = free[a, cores] - request[cores]
    lb = free[b, cores] - request[cores]
    if la != lb:
        return la < lb
    for j in range(others.shape[0]):
        r = others[j]
        fa = float(free[a, r] - request[r]) / float(others_cap[a, j])
        fb = float(free[b, r] - request[r]) / float(others_cap[b, j])
        if fa != fb:
            return fa < fb
    return False


@njit(cache=True)
def best_fit_order(free, request, fits, A, order):
    """Every fitting node, best fit first, ties in cluster order, into `order`; returns how many."""
    m = 0
    for i in range(fits.shape[0]):
        if fits[i]:
            order[m] = i
            m += 1
    if A.simple:
        keys = np.empty(m, np.float64)
        cores, gpus, memory, scale, half = A.cores, A.gpus, A.memory, A.gpu_scale, A.half_per_mb
        for j in range(m):
            i = order[j]
            keys[j] = _simple_key(free[i, cores] - request[cores],
                                  free[i, gpus] - request[gpus] if gpus >= 0 else 0,
                                  free[i, memory] - request[memory] if memory >= 0 else 0,
                                  scale, half[i])
        perm = np.argsort(keys, kind="mergesort")  # stable: ties keep cluster order
        nodes = order[:m].copy()
        for j in range(m):
            order[j] = nodes[perm[j]]
        return m
    cores, gpus, others, others_cap = A.cores, A.gpus, A.others, A.others_cap
    for j in range(1, m):  # insertion sort: stable, and clusters with extra resources are small
        v = order[j]
        k = j - 1
        while k >= 0 and _lex_before(free, request, v, order[k], cores, gpus, others, others_cap):
            order[k + 1] = order[k]
            k -= 1
        order[k + 1] = v
    return m


@njit(cache=True, inline="always")
def _best_fit(free, request, count, fits, A, out):
    n = fits.shape[0]
    if count == 1 and A.simple:  # the first least key, without sorting
        best = -1
        best_key = 0.0
        cores, gpus, memory, scale, half = A.cores, A.gpus, A.memory, A.gpu_scale, A.half_per_mb
        for i in range(n):
            if fits[i]:
                key = _simple_key(free[i, cores] - request[cores],
                                  free[i, gpus] - request[gpus] if gpus >= 0 else 0,
                                  free[i, memory] - request[memory] if memory >= 0 else 0,
                                  scale, half[i])
                if best < 0 or key < best_key:
                    best, best_key = i, key
        out[0] = best
        return 1
    order = np.empty(n, np.int64)
    best_fit_order(free, request, fits, A, order)
    for j in range(count):
        out[j] = order[j]
    return count


# -- topology (ours: Slurm's topology/tree) --------------------------------------------------------


@njit(cache=True)
def _topology(free, request, count, fits, A, out):
    n = fits.shape[0]
    order = np.empty(n, np.int64)
    m = best_fit_order(free, request, fits, A, order)
    s_count = A.level.shape[0]
    if s_count == 0:
        for j in range(count):
            out[j] = order[j]
        return count
    hanging = np.zeros(s_count, np.int64)
    for j in range(m):
        lf = A.leaf[order[j]]
        if lf >= 0:
            hanging[lf] += 1
    held = np.zeros(s_count, np.int64)  # fitting nodes under each switch
    for low in range(s_count):
        if hanging[low]:
            for s in range(s_count):
                held[s] += hanging[low] * A.under[low, s]
    level = -1
    for s in range(s_count):
        if held[s] >= count and (level < 0 or A.level[s] < level):
            level = A.level[s]
    if level < 0:  # no switch can hold the job: best fit
        for j in range(count):
            out[j] = order[j]
        return count
    top = -1
    for s in range(s_count):  # the tightest switch of that level, first in switch order
        if held[s] >= count and A.level[s] == level and (top < 0 or held[s] < held[top]):
            top = s
    if not A.has_children[top]:  # a leaf: best fit among its nodes
        k = 0
        for j in range(m):
            if k == count:
                break
            if A.leaf[order[j]] == top:
                out[k] = order[j]
                k += 1
        return count
    # the switches under `top` with fitting nodes of their own, in switch order
    sizes = np.zeros(s_count, np.int64)
    for j in range(m):
        i = order[j]
        if A.members[top, i]:
            sizes[A.leaf[i]] += 1
    k = 0
    needed = count
    while needed > 0:
        pick = -1  # the smallest group that holds what is still needed
        for s in range(s_count):
            if sizes[s] >= needed and (pick < 0 or sizes[s] < sizes[pick]):
                pick = s
        take = needed
        if pick < 0:  # none: the largest group, whole, and go on
            for s in range(s_count):
                if sizes[s] > 0 and (pick < 0 or sizes[s] > sizes[pick]):
                    pick = s
            take = sizes[pick]
        got = 0
        for j in range(m):
            if got == take:
                break
            i = order[j]
            if A.leaf[i] == pick and A.members[top, i]:
                out[k] = i
                k += 1
                got += 1
        sizes[pick] = 0
        needed -= take
    return count


# -- HPCsim's allocators ---------------------------------------------------------------------------


@njit(cache=True, inline="always")
def hpcsim_waste(free_cores, free_gpus):
    """HPCsim's weight of a node: free GPUs x 100 + free cores (a missing GPU column: 0 GPUs)."""
    return free_cores + free_gpus * HPCSIM_GPU_WEIGHT


@njit(cache=True, inline="always")
def _hpcsim_best_fit(free, count, fits, A, out):
    n = fits.shape[0]
    cores, gpus, name_rank = A.cores, A.gpus, A.name_rank
    if count == 1:
        best = -1
        best_key = 0
        for i in range(n):
            if fits[i]:
                key = hpcsim_waste(free[i, cores], free[i, gpus] if gpus >= 0 else 0) * n + \
                    name_rank[i]
                if best < 0 or key < best_key:
                    best, best_key = i, key
        out[0] = best
        return 1
    nodes = np.empty(n, np.int64)
    keys = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        if fits[i]:
            nodes[m] = i
            # (waste, name rank) as one integer: unique keys
            keys[m] = hpcsim_waste(free[i, cores], free[i, gpus] if gpus >= 0 else 0) * n + \
                name_rank[i]
            m += 1
    perm = np.argsort(keys[:m])
    for j in range(count):
        out[j] = nodes[perm[j]]
    return count


@njit(cache=True)
def _hpcsim_first(bounds, prefix, seq, seq_len, group, k):
    """The free sum of the first k fitting nodes reached from `group`'s switch, -1 if fewer."""
    acc = 0
    for q in range(seq_len[group]):
        block = seq[group, q]
        lo, hi = bounds[block], bounds[block + 1]
        if k <= hi - lo:
            return acc + prefix[lo + k] - prefix[lo]
        acc += prefix[hi] - prefix[lo]
        k -= hi - lo
    return -1 if k else acc


@njit(cache=True)
def _hpcsim_topology(free, count, fits, A, out):
    """`allocate.HpcsimTopology` (its docstring says why blocks give HPCsim's answer)."""
    n = fits.shape[0]
    g_count = A.hp_seq_len.shape[0]
    listed = np.empty(n, np.int64)  # the fitting nodes block by block, cluster order inside
    bounds = np.zeros(g_count + 1, np.int64)
    m = 0
    for j in range(n):
        i = A.hp_perm[j]
        if fits[i]:
            listed[m] = i
            m += 1
            bounds[A.hp_group[i] + 1] += 1
    for g in range(g_count):
        bounds[g + 1] += bounds[g]
    free_sum = np.empty(m, np.int64)
    prefix = np.zeros(m + 1, np.int64)
    for j in range(m):
        i = listed[j]
        free_sum[j] = hpcsim_waste(free[i, A.cores], free[i, A.gpus] if A.gpus >= 0 else 0)
        prefix[j + 1] = prefix[j] + free_sum[j]
    best_cost = -1
    best_start = -1
    for group in range(g_count):
        lo, hi = bounds[group], bounds[group + 1]
        if lo == hi:
            continue
        head = _hpcsim_first(bounds, prefix, A.hp_seq, A.hp_seq_len, group, count)
        if head < 0:
            continue  # fewer than `count` fitting nodes can be reached from here
        # a start among the first `count` of its block costs `head`, the earliest is the block's
        # first; a later start costs its own free sum plus the first `count - 1`
        start = listed[lo]
        if best_start < 0 or head < best_cost or (head == best_cost and start < best_start):
            best_cost, best_start = head, start
        if hi - lo > count:
            later = lo + count
            for j in range(lo + count + 1, hi):
                if free_sum[j] < free_sum[later]:
                    later = j
            cost = free_sum[later] + _hpcsim_first(bounds, prefix, A.hp_seq, A.hp_seq_len,
                                                   group, count - 1)
            start = listed[later]
            if cost < best_cost or (cost == best_cost and start < best_start):
                best_cost, best_start = cost, start
    if best_start < 0:
        return -1
    group = A.hp_group[best_start]
    out[0] = best_start
    k = 1
    for q in range(A.hp_seq_len[group]):
        block = A.hp_seq[group, q]
        for j in range(bounds[block], bounds[block + 1]):
            if k == count:
                return count
            if listed[j] != best_start:
                out[k] = listed[j]
                k += 1
    return k


# -- the entry points ------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def choose(code, free, request, count, fits, A, out):
    """Choose `count` nodes for a per-node `request` on `free`, among the nodes `fits` marks, with
    allocator `code`; write them to `out[:count]` in allocation order. Returns `count`, or -1 when
    fewer than `count` nodes fit (then `out` is not written). `A`: `unpack`'s named tuple."""
    m = 0
    for i in range(fits.shape[0]):
        if fits[i]:
            m += 1
    if m < count:
        return -1
    if count == 0:
        return 0
    if code == FIRST_AVAILABLE or code == HPCSIM_FIRST_AVAILABLE:
        k = 0
        for i in range(fits.shape[0]):
            if k == count:
                break
            if fits[i]:
                out[k] = i
                k += 1
        return count
    if code == BEST_FIT:
        return _best_fit(free, request, count, fits, A, out)
    if code == TOPOLOGY:
        return _topology(free, request, count, fits, A, out)
    if code == HPCSIM_BEST_FIT:
        return _hpcsim_best_fit(free, count, fits, A, out)
    return _hpcsim_topology(free, count, fits, A, out)


@njit(cache=True)
def unpack(capacity, meta, per_node, half_per_mb, others_cap, switches, hp_seq):
    """The named tuple the bodies read, from `cluster_arrays`' seven arrays (views, no copies)."""
    s = switches.shape[0]
    n = capacity.shape[0]
    return ClusterArrays(
        capacity, meta[0] != 0, meta[1], meta[2], meta[3], meta[4] != 0, meta[5], half_per_mb,
        meta[6:], others_cap, per_node[:, 0], per_node[:, 1], switches[:, 2:2 + s],
        switches[:, 0], switches[:, 1] != 0, switches[:, 2 + s:2 + s + n] != 0,
        per_node[:, 2], per_node[:, 3], hp_seq[:, 1:], hp_seq[:, 0])


@njit(cache=True)
def allocate_into(code, free, request, count, fits, out, capacity, meta, per_node, half_per_mb,
                  others_cap, switches, hp_seq):
    """`choose` for a caller outside compiled code, the cluster as `cluster_arrays` packs it."""
    A = unpack(capacity, meta, per_node, half_per_mb, others_cap, switches, hp_seq)
    return choose(code, free, request, count, fits, A, out)


@njit(cache=True)
def best_fit_order_into(free, request, fits, order, capacity, meta, per_node, half_per_mb,
                        others_cap, switches, hp_seq):
    """`best_fit_order` for a caller outside compiled code."""
    A = unpack(capacity, meta, per_node, half_per_mb, others_cap, switches, hp_seq)
    return best_fit_order(free, request, fits, A, order)


# -- per-cluster arrays ----------------------------------------------------------------------------


def cluster_arrays(cluster, name_rank: np.ndarray, hpcsim_blocks) -> tuple:
    """The arrays of `cluster` the compiled allocators read, packed into seven (see `unpack`):

    - `capacity` (N, R) int64;
    - `meta` int64: exclusive, the columns of cores, GPUs and memory (-1: none), whether the key of
      best fit folds into one float (the resources are among cores, memory, GPUs), the GPU scale of
      that key, then the columns of the resources other than cores and GPUs, in resource order;
    - `per_node` (N, 4) int64: HPCsim's name rank (`n<i>` in string order), the leaf switch, and
      the permutation and block of HPCsim's topology search (`allocate._HpcsimBlocks`);
    - `half_per_mb` (N,) float64: 0.5 / memory capacity (0 without memory);
    - `others_cap` (N, k) int64: max(capacity, 1) of the other resources;
    - `switches` (S, 2 + S + N) int64: level, has children, `under[s, :]` (1 in the column of s
      and of every switch above it), `members[s, :]` (1 where the node is under switch s);
    - `hp_seq` (G, 1 + G) int64: per block of HPCsim's search, how many blocks it reaches, then
      those blocks in order (-1 padded).
    """
    cap = np.ascontiguousarray(cluster.capacity, dtype=np.int64)
    n = cap.shape[0]
    res = cluster.resources
    cores = res.index("cores")
    gpus = cluster.resource_index("gpus")
    memory = cluster.resource_index("memory")
    others = [r for r, name in enumerate(res) if name not in ("cores", "gpus")]
    meta = np.array([int(bool(cluster.exclusive)), cores, -1 if gpus is None else gpus,
                     -1 if memory is None else memory, int(set(res) <= {"cores", "memory", "gpus"}),
                     int(cap[:, cores].max()) + 1] + others, dtype=np.int64)
    half = np.zeros(n)
    if memory is not None:
        half = 0.5 / np.maximum(cap[:, memory], 1)
    others_cap = np.ascontiguousarray(np.maximum(cap[:, others], 1), dtype=np.int64) if others \
        else np.ones((n, 0), dtype=np.int64)
    per_node = np.column_stack([name_rank, cluster.leaf, hpcsim_blocks.perm,
                                hpcsim_blocks.group]).astype(np.int64)
    s = len(cluster.switches)
    switches = np.zeros((s, 2 + s + n), dtype=np.int64)
    for low in range(s):
        switches[low, 0] = cluster.switch_level[low]
        switches[low, 1] = int(bool(cluster.switch_children[low]))
        up = low
        while up >= 0:  # under[low, up] = 1: low is up or below it
            switches[low, 2 + up] = 1
            up = cluster.switch_parent[up]
    if s:
        switches[:, 2 + s:] = cluster.switch_members
    seq = hpcsim_blocks.sequence
    g = len(seq)
    hp_seq = np.full((g, 1 + g), -1, dtype=np.int64)
    for k, blocks in enumerate(seq):
        hp_seq[k, 0] = len(blocks)
        hp_seq[k, 1:1 + len(blocks)] = blocks
    return (cap, meta, np.ascontiguousarray(per_node), np.ascontiguousarray(half, dtype=np.float64),
            others_cap, switches, hp_seq)


__all__ = ["ClusterArrays", "allocate_into", "best_fit_order", "best_fit_order_into", "choose",
           "cluster_arrays", "fill_fits", "hpcsim_waste", "unpack", "BEST_FIT",
           "FIRST_AVAILABLE", "HPCSIM_BEST_FIT", "HPCSIM_FIRST_AVAILABLE", "HPCSIM_TOPOLOGY",
           "TOPOLOGY"]
