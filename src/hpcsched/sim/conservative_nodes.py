"""The conservative plan of `sim.conservative` on named nodes.

On an exclusive cluster a job takes whole idle nodes, and idle nodes of one kind are
interchangeable, so the plan counts idle nodes per kind over time (`KindPlan`; on identical nodes
this is the pool's plan exactly); a job takes its nodes from the smallest kinds that hold it first,
and which nodes of those kinds is chosen when it starts. On a shared cluster what is left on a node
depends on which jobs share it, so the plan keeps every node's free vector over time and a
reservation holds named nodes (`NodeMatrixPlan`; it never assumes a job could move between nodes).

To move a reservation earlier the job's own share is given back, the earliest start that fits is
found, and where it is not earlier the reservation is put back exactly as it was.
"""

from __future__ import annotations

import numpy as np

from hpcsched.cluster.allocate import fitting_nodes
from hpcsched.sim.backfill_nodes import kind_segment, node_segment
from hpcsched.sim.conservative import Plan


class _NodesPlan(Plan):
    def earlier(self, c: int, s: float, freed_until: float):
        d = self.e.req_list[c]
        old = self.usage[c]
        self.change(s, s + d, old, +1)
        i, use = self.find(c)
        t = self.times[i]
        if t < s:
            self.reserve(i, t + d, use)
            self.start[c] = t
            self.usage[c] = use
            return t
        self.change(s, s + d, old, -1)
        return None

    @staticmethod
    def copy(v):
        return v.copy()

    @staticmethod
    def same(a, b) -> bool:
        return np.array_equal(a, b)


class KindPlan(_NodesPlan):
    """Idle nodes per kind over time; a reservation takes a count of nodes of each kind."""

    def __init__(self, engine) -> None:
        super().__init__(engine)
        res = engine.res
        cluster = res.cluster
        self.kind = cluster.kind
        self.n_kinds = len(cluster.kinds)
        # the smallest kinds first, so that big nodes stay for the jobs only they can hold
        self.preference = np.lexsort(cluster.kind_capacity.T[::-1]).tolist()
        self.holds: dict[int, np.ndarray] = {}

    def free_now(self):
        res = self.e.res
        idle = np.all(res.free_matrix == res.capacity, axis=1)
        return np.bincount(self.kind[idle], minlength=self.n_kinds)

    def running_usage(self, r: int):
        return np.bincount(self.kind[self.e.res.alloc[r]], minlength=self.n_kinds)

    def kinds_for(self, c: int) -> np.ndarray:
        """Which kinds of node can hold a share of `c`."""
        res = self.e.res
        k_c = res.klass[c]
        ok = self.holds.get(k_c)
        if ok is None:
            ok = self.holds[k_c] = np.all(res.cluster.kind_capacity >= res.demand[c], axis=1)
        return ok

    def take_from(self, window: np.ndarray, ok: np.ndarray, want: int) -> np.ndarray:
        take = np.zeros(self.n_kinds, dtype=np.int64)
        left = int(want)
        for kk in self.preference:
            if ok[kk] and left:
                take[kk] = min(int(window[kk]), left)
                left -= int(take[kk])
        return take

    def fit_now(self, c: int, counts):
        ok, want = self.kinds_for(c), self.e.res.count_list[c]
        return self.take_from(counts, ok, want) if counts[ok].sum() >= want else None

    def find(self, c: int):
        res = self.e.res
        want, dur = res.count_list[c], self.e.req_list[c]
        ok = self.kinds_for(c)
        i, _, _, window = kind_segment(self.times, self.vals, ok, want, dur)
        return i, self.take_from(window, ok, want)

    def nodes_for(self, row: int, take):
        res = self.e.res
        cluster, free = res.cluster, res.free_matrix
        fits = fitting_nodes(cluster, free, res.demand[row])
        return np.concatenate([
            res.allocator.allocate(cluster, free, res.demand[row], int(take[kk]),
                                   fits=fits & (self.kind == kk))
            for kk in np.flatnonzero(take).tolist()])


class NodeMatrixPlan(_NodesPlan):
    """Every node's free vector over time; a reservation holds named nodes. A usage is (nodes,
    what the job takes on each of them)."""

    def free_now(self):
        return self.e.res.free_matrix.copy()

    def running_usage(self, r: int):
        res = self.e.res
        nodes = res.alloc[r]
        return nodes, res.used_per_node(r, nodes)

    @staticmethod
    def plus(v, use, sign: int):
        nodes, used = use
        out = v.copy()
        out[nodes] += sign * used
        return out

    def fit_now(self, c: int, frees):
        res = self.e.res
        mask = fitting_nodes(res.cluster, frees, res.demand[c])
        if np.count_nonzero(mask) < res.count_list[c]:
            return None
        nodes = res.allocator.allocate(res.cluster, frees, res.demand[c], res.count_list[c],
                                       fits=mask)
        return nodes, res.used_per_node(c, nodes)

    def find(self, c: int):
        res = self.e.res
        i, _, _, nodes = node_segment(res, self.times, self.vals, res.count_list[c],
                                      res.demand[c], self.e.req_list[c])
        return i, (nodes, res.used_per_node(c, nodes))

    def nodes_for(self, row: int, use):
        return use[0]


def node_plan(engine) -> Plan:
    return KindPlan(engine) if engine.res.exclusive else NodeMatrixPlan(engine)


__all__ = ["KindPlan", "NodeMatrixPlan", "node_plan"]
