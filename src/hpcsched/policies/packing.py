"""Packing baselines of DRAS (IPDPS'21 section IV-A; spec dras.md section 10): they fill the free
nodes now and never reserve. Run them without backfilling: each pick that fits starts; when none fits
they return a job that does not fit, which ends the scheduling instance (no reservation is made
without backfilling), and they decide again at the next event.

- `BinPacking` (Tetris-like): the largest job that fits.
- `RandomFit`: a uniformly random job among those that fit.
- `Knapsack` ("Optimization"): at each instance, the set of jobs of the first `window` waiting ones
  whose total size fits the free nodes and maximises the summed per-job value of DRAS's capability
  reward (Eq. 1: (wait / max(largest wait, 6 h) + 2 x nodes / N) / 3; the utilisation term of a set
  is the sum of its sizes over N), by 0-1 knapsack dynamic programming over node counts; the set is
  then started one job at a time. Spec section 16 item 19: the window (50, DRAS's) keeps the DP
  small and is our choice.
"""

from __future__ import annotations

import numpy as np

WAIT_FLOOR = 6 * 3600.0


def _fitting(view) -> np.ndarray:
    q = view.queue
    return q[view.nodes_needed[q] <= view.free_nodes]


def _no_fit(view) -> int:
    q = view.queue
    return int(q[np.argmax(view.nodes_needed[q] > view.free_nodes)])


class BinPacking:
    name = "binpacking"

    def select(self, view) -> int:
        fit = _fitting(view)
        if fit.size == 0:
            return _no_fit(view)
        need = view.nodes_needed[fit]
        return int(fit[np.argmax(need)])  # the first (oldest) of the largest


class RandomFit:
    name = "random"

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def select(self, view) -> int:
        fit = _fitting(view)
        if fit.size == 0:
            return _no_fit(view)
        return int(self.rng.choice(fit))


def knapsack(sizes: np.ndarray, values: np.ndarray, capacity: int) -> list[int]:
    """Indices of the items of greatest total value whose sizes sum to at most `capacity`."""
    n = len(sizes)
    best = np.zeros(capacity + 1)
    take = np.zeros((n, capacity + 1), dtype=bool)
    for i in range(n):
        s, v = int(sizes[i]), float(values[i])
        if s > capacity:
            continue
        cand = best[: capacity + 1 - s] + v
        better = cand > best[s:]
        take[i, s:] = better
        best[s:] = np.where(better, cand, best[s:])
    chosen = []
    c = capacity
    for i in range(n - 1, -1, -1):
        if take[i, c]:
            chosen.append(i)
            c -= int(sizes[i])
    return chosen[::-1]


class Knapsack:
    name = "optimization"

    def __init__(self, window: int = 50):
        self.window = window
        self._plan: list[int] = []
        self._at: float | None = None

    def select(self, view) -> int:
        need = view.nodes_needed
        # the plan of this instance (solved again at every new event time)
        plan = [r for r in self._plan if need[r] <= view.free_nodes] if view.now == self._at else []
        self._at = view.now
        if not plan:
            q = view.queue
            head = q[: self.window]
            n_total = view.total_nodes
            waits = view.now - view.jobs.submit[q]
            largest = max(float(waits.max()), WAIT_FLOOR)
            values = (waits[: self.window] / largest + 2.0 * need[head] / n_total) / 3.0
            plan = [int(head[i]) for i in knapsack(need[head], values, view.free_nodes)]
        if not plan:
            self._plan = []
            return _no_fit(view)
        self._plan = plan[1:]
        return plan[0]


__all__ = ["BinPacking", "Knapsack", "RandomFit", "knapsack"]
