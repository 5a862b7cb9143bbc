"""Allocators: which `count` nodes a job gets, given what is free on each node now.

Every allocator is a small object with one method,

    allocate(cluster, free, request, count, fits=None) -> np.ndarray | None

- `free` (N, R) int64: what is free on each node, columns as `cluster.resources`;
- `request` (R,): what the job needs on *each* of its nodes;
- `count`: how many distinct nodes it needs;
- `fits` (N,) bool, optional: the nodes that can take `request` now (`fitting_nodes`). The engine
  computes it once per decision and passes it in; when given it is trusted, not recomputed.

It returns the chosen node indices (int64) in allocation order (the order the records print), or
None when fewer than `count` nodes can take the request. An allocator never changes `free`.

The first three are ours: `first-available`, `best-fit`, `topology` (Slurm's topology/tree
behaviour). The three `hpcsim-*` reproduce HPCsim's allocators exactly (`specs/hpcsim-semantics.md`
§6), ties and quirks included, for the `hpcsim` profile; they are checked against HPCsim's own code
by `tests/cluster/test_hpcsim_allocators.py`.
"""

from __future__ import annotations

import weakref
from functools import lru_cache
from typing import Protocol

import numpy as np

from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.pool import ClusterError


def fitting_nodes(cluster: Cluster, free: np.ndarray, request: np.ndarray) -> np.ndarray:
    """(N,) bool: the nodes that can take `request` now. On an exclusive cluster only an idle node
    (everything free) can take a job."""
    fits = np.all(free >= request, axis=1)
    if cluster.exclusive:
        fits &= np.all(free == cluster.capacity, axis=1)
    return fits


class Allocator(Protocol):
    name: str

    def allocate(self, cluster: Cluster, free: np.ndarray, request: np.ndarray, count: int,
                 fits: np.ndarray | None = None) -> np.ndarray | None: ...


def _candidates(cluster, free, request, count, fits) -> np.ndarray | None:
    """Indices of the fitting nodes (cluster order), or None when there are fewer than `count`."""
    if count < 0:
        raise ValueError(f"a job needs a number of nodes >= 0, got {count}")
    if fits is None:
        fits = fitting_nodes(cluster, free, np.asarray(request))
    nodes = np.flatnonzero(fits)
    return nodes if len(nodes) >= count else None


class _Prepared:
    """What the allocators need of a cluster beyond its fields, computed once per cluster."""

    def __init__(self, cluster: Cluster) -> None:
        res = cluster.resources
        self.cores = res.index("cores")
        self.gpus = cluster.resource_index("gpus")
        self.memory = cluster.resource_index("memory")
        # best fit's key folds into one float when the resources are the usual three: GPUs left x
        # (most cores + 1) + cores left + half the memory fraction left (< 1, so it only breaks ties)
        self.simple = set(res) <= {"cores", "memory", "gpus"}
        self.gpu_scale = int(cluster.capacity[:, self.cores].max()) + 1
        if self.memory is not None:
            self.half_per_mb = 0.5 / np.maximum(cluster.capacity[:, self.memory], 1)
        # under[l, s] = 1 if switch l is switch s or below it: the fitting nodes under each switch
        # are then (fitting nodes hanging off each switch) @ under
        self.under = np.eye(len(cluster.switches), dtype=np.int64)
        for low in range(len(cluster.switches)):
            up = cluster.switch_parent[low]
            while up >= 0:
                self.under[low, up] = 1
                up = cluster.switch_parent[up]
        self.hpcsim_rank = _hpcsim_name_rank(cluster.nodes)
        self.hpcsim_topology: _HpcsimBlocks | None = None


_PREPARED: "weakref.WeakKeyDictionary[Cluster, _Prepared]" = weakref.WeakKeyDictionary()


def _prepared(cluster: Cluster) -> _Prepared:
    prep = _PREPARED.get(cluster)
    if prep is None:
        prep = _PREPARED[cluster] = _Prepared(cluster)
    return prep


def best_fit_order(cluster: Cluster, free: np.ndarray, request: np.ndarray,
                   nodes: np.ndarray) -> np.ndarray:
    """`nodes` (ascending indices of fitting nodes) sorted best fit first: the least left over
    after placing `request`, compared as GPUs left, then cores left, then every other resource
    (memory, ...) left as a fraction of the node's capacity; ties in cluster order."""
    prep = _prepared(cluster)
    left = free[nodes] - request
    if prep.simple:
        key = left[:, prep.cores].astype(np.float64)
        if prep.gpus is not None:
            key += left[:, prep.gpus] * prep.gpu_scale
        if prep.memory is not None:
            key += left[:, prep.memory] * prep.half_per_mb[nodes]
        return nodes[np.argsort(key, kind="stable")]
    keys = []  # np.lexsort: the last key is the primary one
    for r, resource in reversed(list(enumerate(cluster.resources))):
        if resource not in ("gpus", "cores"):
            keys.append(left[:, r] / np.maximum(cluster.capacity[nodes, r], 1))
    keys.append(left[:, prep.cores])
    if prep.gpus is not None:
        keys.append(left[:, prep.gpus])
    return nodes[np.lexsort(keys)]


class FirstAvailable:
    """The first `count` fitting nodes in cluster order."""

    name = "first-available"

    def allocate(self, cluster, free, request, count, fits=None):
        nodes = _candidates(cluster, free, request, count, fits)
        return None if nodes is None else nodes[:count].astype(np.int64)


class BestFit:
    """The `count` fitting nodes with the least left over after placing the request.

    The key, compared in order: GPUs left (a GPU node half-filled by CPU jobs strands its GPUs,
    the costliest waste on a mixed cluster, so a CPU job goes to a CPU node when it can), then cores
    left (the unit jobs are counted in, so small jobs fill partly used nodes and keep whole nodes
    whole for large jobs), then memory left as a fraction of the node (MB are not comparable across
    nodes of different sizes, and memory rarely decides). Ties go in cluster order.
    """

    name = "best-fit"

    def allocate(self, cluster, free, request, count, fits=None):
        nodes = _candidates(cluster, free, request, count, fits)
        if nodes is None:
            return None
        return best_fit_order(cluster, free, request, nodes)[:count].astype(np.int64)


class TopologyAware:
    """Slurm's topology/tree placement: the job's nodes under as low a switch as possible.

    1. Find the lowest switch level at which some switch has `count` fitting nodes under it.
    2. Among the switches of that level that can hold the job, take the one with the fewest
       fitting nodes (the tightest: it keeps larger free groups for larger jobs, as Slurm does);
       ties in switch order.
    3. Under it, fill leaf by leaf as Slurm does: if one leaf alone can hold what is still
       needed, the tightest such leaf; otherwise the leaf with the most fitting nodes, all of
       them, and repeat. Within a leaf, best fit (`BestFit`'s key).

    Topology is a preference, not a constraint (thesis §1.4): when no switch can hold the job, or
    the cluster has no switches, the job gets `BestFit`'s nodes.
    """

    name = "topology"

    def allocate(self, cluster, free, request, count, fits=None):
        nodes = _candidates(cluster, free, request, count, fits)
        if nodes is None:
            return None
        ordered = best_fit_order(cluster, free, request, nodes)
        if not cluster.switches or count == 0:
            return ordered[:count].astype(np.int64)
        leaves = cluster.leaf[nodes]
        hanging = np.bincount(leaves[leaves >= 0], minlength=len(cluster.switches))
        held = hanging @ _prepared(cluster).under  # fitting nodes under each switch
        can = held >= count
        if not can.any():
            return ordered[:count].astype(np.int64)
        level = cluster.switch_level[can].min()
        options = np.flatnonzero(can & (cluster.switch_level == level))
        top = options[np.argmin(held[options])]
        leaf_of = cluster.leaf[ordered]
        if not cluster.switch_children[top]:  # a leaf: best fit among its nodes
            return ordered[leaf_of == top][:count].astype(np.int64)

        # the switches under `top` with fitting nodes of their own, each with its nodes best first
        inside = cluster.switch_members[top][ordered]
        groups = [ordered[inside & (leaf_of == s)] for s in dict.fromkeys(leaf_of[inside].tolist())]
        groups.sort(key=lambda g: int(cluster.leaf[g[0]]))  # switch order
        chosen, needed = [], count
        while needed:
            sizes = np.array([len(g) for g in groups])
            enough = sizes >= needed
            if enough.any():
                pick = int(np.argmin(np.where(enough, sizes, np.iinfo(np.int64).max)))
                chosen.append(groups[pick][:needed])
                break
            pick = int(np.argmax(sizes))
            chosen.append(groups.pop(pick))
            needed -= sizes[pick]
        return np.concatenate(chosen).astype(np.int64)


# -- HPCsim's allocators, exactly ------------------------------------------------------------------

#: HPCsim's allocation weights (Scheduler.py, `Allocator.__init__`): a free GPU counts 100 cores.
HPCSIM_GPU_WEIGHT = 100


def _hpcsim_waste(cluster: Cluster, free: np.ndarray, nodes: np.ndarray | slice) -> np.ndarray:
    prep = _prepared(cluster)
    waste = free[nodes, prep.cores].astype(np.int64)
    if prep.gpus is not None:
        waste = waste + free[nodes, prep.gpus] * HPCSIM_GPU_WEIGHT
    return waste


@lru_cache(maxsize=16)
def _hpcsim_name_rank(n: int) -> np.ndarray:
    """rank[i] = position of HPCsim's id `n<i>` in Python string order ('n10' < 'n2')."""
    rank = np.empty(n, dtype=np.int64)
    rank[sorted(range(n), key=lambda i: f"n{i}")] = np.arange(n)
    rank.flags.writeable = False
    return rank


class HpcsimFirstAvailable(FirstAvailable):
    """HPCsim's `first_available`: the first `count` fitting nodes in cluster order (ours)."""

    name = "hpcsim-first-available"


class HpcsimBestFit:
    """HPCsim's `best_fit`: the fitting nodes by free GPUs x 100 + free cores, smallest first;
    memory is ignored, and ties go by the *string* order of HPCsim's node ids `n<index>` (so
    node 10 comes before node 2). Node index i is HPCsim's `n<i>` for a cluster read from its
    platform files (topology-file order)."""

    name = "hpcsim-best-fit"

    def allocate(self, cluster, free, request, count, fits=None):
        nodes = _candidates(cluster, free, request, count, fits)
        if nodes is None:
            return None
        # one exact integer key: (waste, name rank) in lexicographic order
        key = _hpcsim_waste(cluster, free, nodes) * cluster.nodes + _prepared(cluster).hpcsim_rank[nodes]
        if count == 1:
            return nodes[[int(np.argmin(key))]].astype(np.int64)
        return nodes[np.argsort(key)[:count]].astype(np.int64)


class HpcsimTopology:
    """HPCsim's `topology_aware`. For every fitting node as a start (cluster order), a breadth-first
    search over the graph of the fitting nodes and all switches lists the start, then the other
    fitting nodes in discovery order, until `count`; the list with the least sum of free GPUs x 100
    + free cores wins, ties to the first start.

    HPCsim searches with networkx over a graph whose edges it adds switch-to-switch first (each
    switch's `Switches=` in order, switches in file order), then switch-to-node; discovery order
    follows that insertion order. Compute nodes hang off one switch each, so the search from a
    node is its leaf switch's search with the node moved to the front, and leaving out nodes that
    do not fit changes nothing else. So the discovery order from each leaf switch is computed once
    per cluster (`_HpcsimBlocks`), and a call is a few vectorised steps: the cost of start i is
    the free sum of the first `count` fitting nodes of its leaf's order if i is among them, else
    i's plus that of the first `count - 1`.

    Where HPCsim has no answer we give one: nodes without a switch form one group of their own
    (a cluster without switches is one group, in cluster order), and a start from which fewer than
    `count` fitting nodes can be reached is skipped (HPCsim raises an error if such a short list
    were the cheapest).
    """

    name = "hpcsim-topology"

    @staticmethod
    def _blocks(cluster: Cluster) -> "_HpcsimBlocks":
        prep = _prepared(cluster)
        if prep.hpcsim_topology is None:
            prep.hpcsim_topology = _HpcsimBlocks(cluster)
        return prep.hpcsim_topology

    def allocate(self, cluster, free, request, count, fits=None):
        nodes = _candidates(cluster, free, request, count, fits)
        if nodes is None:
            return None
        if count == 0:
            return np.zeros(0, dtype=np.int64)
        b = self._blocks(cluster)
        fitting = np.zeros(cluster.nodes, dtype=bool)
        fitting[nodes] = True
        # the fitting nodes block by block (cluster order inside a block), their free sums
        listed = b.perm[fitting[b.perm]]
        bounds = np.searchsorted(b.group[listed], b.block_ids).tolist()  # block k: [bounds[k], bounds[k+1])
        free_sum = _hpcsim_waste(cluster, free, listed)
        prefix = [0] + np.cumsum(free_sum).tolist()
        listed = listed.tolist()

        def first(group: int, k: int) -> int | None:
            """The free sum of the first k fitting nodes from `group`'s switch (None: fewer)."""
            acc = 0
            for block in b.sequence[group]:
                lo, hi = bounds[block], bounds[block + 1]
                if k <= hi - lo:
                    return acc + prefix[lo + k] - prefix[lo]
                acc += prefix[hi] - prefix[lo]
                k -= hi - lo
            return None if k else acc

        best = None  # (cost, start)
        for group in range(len(b.sequence)):
            lo, hi = bounds[group], bounds[group + 1]
            if lo == hi:
                continue
            head = first(group, count)
            if head is None:
                continue  # fewer than `count` fitting nodes can be reached from here
            # a start among the first `count` of its block costs `head`; the earliest is the
            # block's first; a later start costs its own free sum plus the first `count - 1`
            options = [(head, listed[lo])]
            if hi - lo > count:
                later = lo + count + int(np.argmin(free_sum[lo + count:hi]))  # first least
                options.append((int(free_sum[later]) + first(group, count - 1), listed[later]))
            for option in options:
                if best is None or option < best:
                    best = option
        if best is None:
            return None
        start = best[1]
        group = int(b.group[start])
        chosen = [start]
        for block in b.sequence[group]:
            for i in listed[bounds[block]:bounds[block + 1]]:
                if len(chosen) == count:
                    return np.array(chosen, dtype=np.int64)
                if i != start:
                    chosen.append(i)
        return np.array(chosen, dtype=np.int64)


class _HpcsimBlocks:
    """The discovery order of HPCsim's topology search, as blocks.

    From a leaf switch, the search meets its own nodes first (one edge away; every other compute
    node is at least three), and each switch's nodes come together, in the order their edges were
    added (cluster order), when the search reaches that switch. So the order from leaf g is a
    sequence of whole blocks (one per switch with nodes), g's first, in the order a breadth-first
    search over the switches alone reaches them."""

    def __init__(self, cluster: Cluster) -> None:
        s = len(cluster.switches)
        adjacency: list[dict[int, None]] = [dict() for _ in range(s)]
        for sw, below in enumerate(cluster.switch_children):
            for child in below:  # networkx keeps the position of an edge's first insertion
                adjacency[sw].setdefault(child, None)
                adjacency[child].setdefault(sw, None)
        with_nodes = [sw for sw in range(s) if np.any(cluster.leaf == sw)]
        block_of_switch = {sw: k for k, sw in enumerate(with_nodes)}
        blocks = list(with_nodes) + ([-1] if np.any(cluster.leaf < 0) else [])
        g_count = len(blocks)
        self.sequence: list[list[int]] = []  # per group, the blocks its search reaches, in order
        for sw in blocks:
            if sw < 0:  # nodes without a switch: a group of their own
                self.sequence.append([g_count - 1])
                continue
            seen, queue = {sw}, [sw]
            for vertex in queue:  # the list grows as we go: breadth-first
                for w in adjacency[vertex]:
                    if w not in seen:
                        seen.add(w)
                        queue.append(w)
            self.sequence.append([block_of_switch[v] for v in queue if v in block_of_switch])
        self.group = np.array([block_of_switch.get(int(sw), g_count - 1) for sw in cluster.leaf],
                              dtype=np.int64)  # (N,) each node's block
        self.perm = np.argsort(self.group, kind="stable")  # block by block, cluster order inside
        self.block_ids = np.arange(g_count + 1)


#: name -> (class, one-line description), for `get_allocator` and the command line.
_REGISTRY: dict[str, tuple[type, str]] = {
    "first-available": (FirstAvailable, "the first fitting nodes in cluster order"),
    "best-fit": (BestFit, "the fitting nodes with the least left over: GPUs, then cores, then "
                          "memory as a fraction of the node"),
    "topology": (TopologyAware, "under the lowest, tightest switch that can hold the job, best "
                                "fit there (Slurm's topology/tree)"),
    "hpcsim-first-available": (HpcsimFirstAvailable, "HPCsim's first_available (= first-available)"),
    "hpcsim-best-fit": (HpcsimBestFit, "HPCsim's best_fit: free GPUs x 100 + free cores, memory "
                                       "ignored, ties by node-id string"),
    "hpcsim-topology": (HpcsimTopology, "HPCsim's topology_aware: breadth-first groups from every "
                                        "start node, least free GPUs x 100 + cores"),
}

#: Allocator names and what each does.
ALLOCATORS: dict[str, str] = {name: text for name, (_, text) in _REGISTRY.items()}


def get_allocator(name: str | Allocator) -> Allocator:
    """A new allocator by name (an allocator object is returned as it is)."""
    if not isinstance(name, str):
        if hasattr(name, "allocate"):
            return name
        raise ClusterError(f"not an allocator: {name!r}")
    if name not in _REGISTRY:
        raise ClusterError(f"unknown allocator {name!r}; choose one of {', '.join(_REGISTRY)}")
    return _REGISTRY[name][0]()
