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

The bodies are compiled (`allocate_kernels.py`, numba): each class here is a thin wrapper over one
function of plain arrays, which the compiled pass loops (`hpcsched.sim.kernels_nodes`) call too, so
both paths place jobs with the same code.
"""

from __future__ import annotations

import weakref
from functools import lru_cache
from typing import Protocol

import numpy as np

from hpcsched.cluster import allocate_kernels as kern
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


def _check_count(count: int) -> int:
    count = int(count)
    if count < 0:
        raise ValueError(f"a job needs a number of nodes >= 0, got {count}")
    return count


class _Prepared:
    """What the allocators need of a cluster beyond its fields, computed once per cluster: the
    arrays the compiled bodies read (`allocate_kernels.cluster_arrays`)."""

    def __init__(self, cluster: Cluster) -> None:
        self.hpcsim_topology = _HpcsimBlocks(cluster)
        self.arrays = kern.cluster_arrays(cluster, _hpcsim_name_rank(cluster.nodes),
                                          self.hpcsim_topology)


_PREPARED: "weakref.WeakKeyDictionary[Cluster, _Prepared]" = weakref.WeakKeyDictionary()


def _prepared(cluster: Cluster) -> _Prepared:
    prep = _PREPARED.get(cluster)
    if prep is None:
        prep = _PREPARED[cluster] = _Prepared(cluster)
    return prep


def cluster_arrays(cluster: Cluster) -> tuple:
    """The per-cluster arrays of the compiled allocators (cached per cluster), for compiled callers
    that unpack them (`allocate_kernels.unpack`) and call `allocate_kernels.choose` themselves."""
    return _prepared(cluster).arrays


def _int_array(values, what: str, ndim: int) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype != np.int64:
        if array.dtype.kind == "f" and not np.all(array == np.round(array)):
            raise ValueError(f"{what} must hold whole numbers")
        array = array.astype(np.int64)
    if array.ndim != ndim:
        raise ValueError(f"{what} must have {ndim} dimension(s), got shape {array.shape}")
    return np.ascontiguousarray(array)


def _allocate(code: int, cluster: Cluster, free, request, count, fits) -> np.ndarray | None:
    """One call of the compiled allocator `code` (the body every allocator class shares)."""
    count = _check_count(count)
    arrays = _prepared(cluster).arrays
    free = _int_array(free, "free", 2)
    request = _int_array(request, "request", 1)
    if fits is None:
        fits = np.empty(free.shape[0], dtype=np.bool_)
        kern.fill_fits(free, request, arrays[0], bool(arrays[1][0]), fits)
    else:
        fits = np.ascontiguousarray(fits, dtype=np.bool_)
    out = np.empty(count, dtype=np.int64)
    got = kern.allocate_into(code, free, request, count, fits, out, *arrays)
    return None if got < 0 else out


def best_fit_order(cluster: Cluster, free: np.ndarray, request: np.ndarray,
                   nodes: np.ndarray) -> np.ndarray:
    """`nodes` (ascending indices of fitting nodes) sorted best fit first: the least left over
    after placing `request`, compared as GPUs left, then cores left, then every other resource
    (memory, ...) left as a fraction of the node's capacity; ties in cluster order.

    When the resources are the usual three, the key folds into one float: GPUs left x (most cores
    + 1) + cores left + half the memory fraction left (< 1, so it only breaks ties)."""
    arrays = _prepared(cluster).arrays
    free = _int_array(free, "free", 2)
    mask = np.zeros(free.shape[0], dtype=np.bool_)
    mask[np.asarray(nodes, dtype=np.int64)] = True
    order = np.empty(free.shape[0], dtype=np.int64)
    m = kern.best_fit_order_into(free, _int_array(request, "request", 1), mask, order, *arrays)
    return order[:m]


class FirstAvailable:
    """The first `count` fitting nodes in cluster order."""

    name = "first-available"
    code = kern.FIRST_AVAILABLE

    def allocate(self, cluster, free, request, count, fits=None):
        return _allocate(self.code, cluster, free, request, count, fits)


class BestFit:
    """The `count` fitting nodes with the least left over after placing the request.

    The key, compared in order: GPUs left (a GPU node half-filled by CPU jobs strands its GPUs,
    the costliest waste on a mixed cluster, so a CPU job goes to a CPU node when it can), then cores
    left (the unit jobs are counted in, so small jobs fill partly used nodes and keep whole nodes
    whole for large jobs), then memory left as a fraction of the node (MB are not comparable across
    nodes of different sizes, and memory rarely decides). Ties go in cluster order. (See
    `best_fit_order` for how the key is computed.)
    """

    name = "best-fit"
    code = kern.BEST_FIT

    def allocate(self, cluster, free, request, count, fits=None):
        return _allocate(self.code, cluster, free, request, count, fits)


class TopologyAware:
    """Slurm's topology/tree placement: the job's nodes under as low a switch as possible.

    1. Find the lowest switch level at which some switch has `count` fitting nodes under it.
    2. Among the switches of that level that can hold the job, take the one with the fewest
       fitting nodes (the tightest: it keeps larger free groups for larger jobs, as Slurm does);
       ties in switch order.
    3. Under it, fill leaf by leaf as Slurm does: if one leaf alone can hold what is still
       needed, the tightest such leaf; otherwise the leaf with the most fitting nodes, all of
       them, and repeat (ties in switch order). Within a leaf, best fit (`BestFit`'s key).

    Topology is a preference, not a constraint (thesis §1.4): when no switch can hold the job, or
    the cluster has no switches, the job gets `BestFit`'s nodes.
    """

    name = "topology"
    code = kern.TOPOLOGY

    def allocate(self, cluster, free, request, count, fits=None):
        return _allocate(self.code, cluster, free, request, count, fits)


# -- HPCsim's allocators, exactly ------------------------------------------------------------------

#: HPCsim's allocation weights (Scheduler.py, `Allocator.__init__`): a free GPU counts 100 cores.
HPCSIM_GPU_WEIGHT = kern.HPCSIM_GPU_WEIGHT


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
    code = kern.HPCSIM_FIRST_AVAILABLE


class HpcsimBestFit:
    """HPCsim's `best_fit`: the fitting nodes by free GPUs x 100 + free cores, smallest first;
    memory is ignored, and ties go by the *string* order of HPCsim's node ids `n<index>` (so
    node 10 comes before node 2). Node index i is HPCsim's `n<i>` for a cluster read from its
    platform files (topology-file order). The compiled body compares one exact integer key,
    free weight x N + name rank."""

    name = "hpcsim-best-fit"
    code = kern.HPCSIM_BEST_FIT

    def allocate(self, cluster, free, request, count, fits=None):
        return _allocate(self.code, cluster, free, request, count, fits)


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
    per cluster (`_HpcsimBlocks`), and a call is a few linear steps: the cost of start i is
    the free sum of the first `count` fitting nodes of its leaf's order if i is among them, else
    i's plus that of the first `count - 1`.

    Where HPCsim has no answer we give one: nodes without a switch form one group of their own
    (a cluster without switches is one group, in cluster order), and a start from which fewer than
    `count` fitting nodes can be reached is skipped (HPCsim raises an error if such a short list
    were the cheapest).
    """

    name = "hpcsim-topology"
    code = kern.HPCSIM_TOPOLOGY

    def allocate(self, cluster, free, request, count, fits=None):
        return _allocate(self.code, cluster, free, request, count, fits)


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
