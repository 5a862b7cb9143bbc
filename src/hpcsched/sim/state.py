"""What is free on the machine while a run goes on: the engine's resource state.

Two kinds answer the same questions (does this job fit now, take its resources, give them back):

- `PoolState`: identical whole nodes, counted. A job takes `need` nodes; which ones does not matter,
  so only the count of free nodes is kept. The fast path of every published simulator.
- `NodeState`: named nodes with a capacity vector each (cores, memory, GPUs, ...). A job asks for
  `count` distinct nodes with a per-node request free on each; an allocator chooses them; several jobs
  may share a node, or (an exclusive cluster) a job takes whole idle nodes. The free vector of every
  node is the state.

The engine owns one of them; loops and backfilling read it, and change it only through `take` and
`give`, so that the allocation of every running job is known.
"""

from __future__ import annotations

import numpy as np

from hpcsched.cluster.allocate import fitting_nodes


class PoolState:
    """`total` identical nodes; `free` of them idle."""

    exclusive = True

    def __init__(self, total: int, need: np.ndarray) -> None:
        self.total = int(total)
        self.free = int(total)
        self.need: list[int] = np.asarray(need, dtype=np.int64).tolist()

    @property
    def free_nodes(self) -> int:
        return self.free

    def fits(self, row: int) -> bool:
        return self.need[row] <= self.free

    def fits_rows(self, rows: np.ndarray, need: np.ndarray) -> np.ndarray:
        return need[rows] <= self.free

    def take(self, row: int, nodes=None) -> None:
        if nodes is not None:
            raise ValueError("a pool of identical nodes does not place jobs on given nodes: its "
                             "nodes are only counted")
        self.free -= self.need[row]

    def give(self, row: int) -> None:
        self.free += self.need[row]


class NodeState:
    """Free resources of every node of a heterogeneous cluster, and where each running job is.

    `count[row]` distinct nodes, each with `demand[row]` (one entry per resource) free, make a job
    fit. On an exclusive cluster a node must be idle (nothing running on it) and a job takes all of
    it. `allocator` picks the nodes when the caller does not.

    Jobs with equal per-node requests form a class; which nodes fit a class now is computed once per
    change of the state. `fit_points` says, per node, which running job's end makes a class fit
    there, computed again only for the nodes that changed since it was last asked.
    """

    def __init__(self, cluster, count: np.ndarray, demand: np.ndarray, allocator) -> None:
        self.cluster = cluster
        self.capacity = np.asarray(cluster.capacity, dtype=np.int64)
        self.free_matrix = self.capacity.copy()
        self.exclusive = bool(getattr(cluster, "exclusive", False))
        self.count = np.asarray(count, dtype=np.int64)
        self.count_list: list[int] = self.count.tolist()
        self.demand = np.asarray(demand, dtype=np.int64)
        self.allocator = allocator
        self.total = int(self.capacity.shape[0])
        self.alloc: dict[int, np.ndarray] = {}  # the running jobs' nodes
        self.alloc_log: list = [None] * len(self.count)  # every started job's nodes
        classes, klass = np.unique(self.demand, axis=0, return_inverse=True)
        self.klass: list[int] = klass.reshape(-1).tolist()
        self.class_demand = classes
        self._class_lists: list[list[int]] = classes.tolist()
        self._fit_cache: dict[int, np.ndarray] = {}
        self._count_cache: dict[int, int] = {}
        #: the rows running on each node, in the order they were placed there
        self.node_tasks: list[list[int]] = [[] for _ in range(self.total)]
        self._version = [0] * self.total  # bumped whenever a node's jobs change
        self._points: dict[int, tuple[list[int], list[int]]] = {}
        self._cap_lists: list[list[int]] = self.capacity.tolist()
        self._free_lists: list[list[int]] | None = None

    # -- questions ------------------------------------------------------------------------------
    @property
    def free_nodes(self) -> int:
        """Nodes with nothing running on them."""
        return sum(1 for t in self.node_tasks if not t)

    def fitting(self, row: int) -> np.ndarray:
        """Bool mask of the nodes that can take one share of `row`'s request now (read-only)."""
        return self.fitting_class(self.klass[row])

    def fitting_class(self, k: int) -> np.ndarray:
        mask = self._fit_cache.get(k)
        if mask is None:
            mask = fitting_nodes(self.cluster, self.free_matrix, self.class_demand[k])
            mask.flags.writeable = False
            self._fit_cache[k] = mask
        return mask

    def fit_count(self, k: int) -> int:
        """How many nodes can take a share of class `k` now."""
        n = self._count_cache.get(k)
        if n is None:
            n = self._count_cache[k] = int(np.count_nonzero(self.fitting_class(k)))
        return n

    def fits(self, row: int) -> bool:
        return self.fit_count(self.klass[row]) >= self.count_list[row]

    def fits_rows(self, rows: np.ndarray, need=None) -> np.ndarray:
        return np.fromiter((self.fits(r) for r in rows.tolist()), dtype=bool, count=len(rows))

    def fit_points(self, k: int, end_of: list[float]) -> list[int]:
        """Per node, when a share of class `k` fits there as running jobs end in order of
        `end_of[row]` (ties: in the order they were placed on the node): -2 it fits now, -1 never
        (even idle), else the row whose end makes it fit."""
        entry = self._points.get(k)
        if entry is None:
            versions, points = [-1] * self.total, [0] * self.total
            self._points[k] = (versions, points)
        else:
            versions, points = entry
        now_v = self._version
        stale = [i for i in range(self.total) if versions[i] != now_v[i]]
        if stale:
            free = self.free_matrix[stale].tolist()
            demand = self._class_lists[k]
            for i, f in zip(stale, free):
                points[i] = self._node_point(i, f, demand, end_of)
                versions[i] = now_v[i]
        return points

    def node_point(self, i: int, free: list[int], demand: list[int], tasks: list[int],
                   order_key) -> int:
        """`fit_points` for one node, given its free vector and its jobs (sorted by `order_key`)."""
        need = [d - f for d, f in zip(demand, free)]
        if max(need) <= 0:
            return -2
        if self.exclusive:
            cap = self._cap_lists[i]
            if any(d > c for d, c in zip(demand, cap)):
                return -1
            return max(tasks, key=order_key) if tasks else -1  # idle once every job has ended
        dem = self._row_demand
        for r in sorted(tasks, key=order_key):
            need = [a - b for a, b in zip(need, dem(r))]
            if max(need) <= 0:
                return r
        return -1

    def _node_point(self, i, free, demand, end_of) -> int:
        return self.node_point(i, free, demand, self.node_tasks[i], end_of.__getitem__)

    def _row_demand(self, row: int) -> list[int]:
        return self._class_lists[self.klass[row]]

    # -- changes ---------------------------------------------------------------------------------
    def choose(self, row: int, free: np.ndarray | None = None) -> np.ndarray | None:
        """The nodes the allocator gives `row` on `free` (default: now), or None if it does not fit."""
        if free is None:
            fits = self.fitting(row)
            free = self.free_matrix
        else:
            fits = fitting_nodes(self.cluster, free, self.demand[row])
        if int(np.count_nonzero(fits)) < self.count_list[row]:
            return None
        return self.allocator.allocate(self.cluster, free, self.demand[row], self.count_list[row],
                                       fits=fits)

    def take(self, row: int, nodes=None, *, checked: bool = False) -> np.ndarray:
        """Start `row` on `nodes` (or where the allocator puts it). `checked`: the caller has
        already made sure the nodes can take it (backfilling placed it)."""
        if nodes is None:
            chosen = self.choose(row)
            if chosen is None:
                raise ValueError(f"row {row} does not fit now")
        else:
            chosen = np.asarray(nodes, dtype=np.int64)
            if not checked:
                self.check_nodes(row, chosen)
        self.free_matrix[chosen] -= self.used_per_node(row, chosen)
        version = self._version
        for i in chosen.tolist():
            self.node_tasks[i].append(row)
            version[i] += 1
        self.alloc[row] = chosen
        self.alloc_log[row] = chosen
        self._fit_cache.clear()
        self._count_cache.clear()
        return chosen

    def give(self, row: int) -> None:
        nodes = self.alloc.pop(row)
        self.free_matrix[nodes] += self.used_per_node(row, nodes)
        version = self._version
        for i in nodes.tolist():
            self.node_tasks[i].remove(row)
            version[i] += 1
        self._fit_cache.clear()
        self._count_cache.clear()

    def used_per_node(self, row: int, nodes: np.ndarray) -> np.ndarray:
        """What `row` takes from each of `nodes`: its request, or whole nodes when exclusive."""
        return self.capacity[nodes] if self.exclusive else self.demand[row]

    def check_nodes(self, row: int, nodes: np.ndarray) -> None:
        """A caller's allocation must name `count` distinct nodes that can each take the request."""
        names = self.cluster.names
        if nodes.ndim != 1 or len(nodes) != self.count_list[row]:
            raise ValueError(f"row {row} asks for {self.count_list[row]} node(s); the allocation "
                             f"names {len(nodes)}")
        if len(np.unique(nodes)) != len(nodes):
            raise ValueError(f"row {row}: the allocation names a node twice ({nodes.tolist()})")
        if nodes.min() < 0 or nodes.max() >= self.total:
            raise ValueError(f"row {row}: node indices must be in 0..{self.total - 1}")
        ok = self.fitting(row)[nodes]
        if not ok.all():
            bad = int(nodes[np.argmin(ok)])
            raise ValueError(f"row {row} does not fit on node {names[bad]} now "
                             f"(free {self.free_matrix[bad].tolist()}, asks "
                             f"{self.demand[row].tolist()}{', exclusive' if self.exclusive else ''})")


__all__ = ["NodeState", "PoolState"]
