"""A pool of several resource types, each of `units` identical units, seen `horizon` steps ahead.

DeepRM's cluster (HotNets'16) has no machines: it is one bin of d resources (CPU, memory, ...) of R
units each. Time is discrete, and what is already promised is an occupancy table ``used[t, i]``: the
units of resource i taken at step now+t, for t in 0..horizon-1. A job asks for a demand vector and a
length in steps and takes the same rectangle of every resource from its start to its end.

The functions below work on a whole batch of such tables at once (leading axis: environments), so
that many simulations step together.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpcsched.cluster.pool import ClusterError


@dataclass(frozen=True)
class ResourceGrid:
    """`resources` resource types of `units` units each, planned `horizon` steps ahead."""

    resources: int = 2
    units: int = 10
    horizon: int = 20

    def __post_init__(self) -> None:
        if self.resources <= 0 or self.units <= 0 or self.horizon <= 0:
            raise ClusterError(
                f"a resource grid needs at least one resource, unit and step (got resources="
                f"{self.resources}, units={self.units}, horizon={self.horizon})")

    def never_fits(self, length: np.ndarray, demand: np.ndarray) -> np.ndarray:
        """Whether each job can never be placed: as long as the window or longer (it must end
        before the window's last row, see `earliest_start`), or asking for more units of some
        resource than there are. `length` (n,), `demand` (n, resources)."""
        length = np.asarray(length)
        demand = np.asarray(demand)
        return (length >= self.horizon) | (length <= 0) | np.any(demand > self.units, axis=-1)

    def describe(self) -> str:
        return f"{self.resources} resources x {self.units} units, {self.horizon}-step window"


def earliest_start(used: np.ndarray, demand: np.ndarray, length: np.ndarray,
                   units: int) -> np.ndarray:
    """The earliest offset (in steps from now) from which each job fits for its whole length.

    `used` (B, T, d) units taken per step and resource; `demand` (B, K, d) and `length` (B, K) of K
    candidate jobs per environment. Returns (B, K) int64 offsets, -1 where the job fits nowhere in
    the window (or has length 0: an empty slot). DeepRM's rule, exactly: its code tries the offsets
    `range(0, T - length)`, so a job never ends on the window's last row (offset + length <= T - 1),
    one row short of what the paper's "earliest step in the window" allows. It matters only for a
    reservation into the future (a job that fits now is placed now either way) and makes a job of
    T steps or more unplaceable.
    """
    T = used.shape[1]
    # row_ok[b, k, t]: job k's demand fits on top of step t for every resource
    row_ok = np.all(used[:, None, :, :] + demand[:, :, None, :] <= units, axis=-1)
    bad = np.zeros(row_ok.shape[:2] + (T + 1,), dtype=np.int32)
    np.cumsum(~row_ok, axis=-1, out=bad[..., 1:])
    offsets = np.arange(T)
    end = offsets + length[..., None]  # (B, K, T)
    inside = (end < T) & (length[..., None] > 0)
    bad_rows = np.take_along_axis(bad, np.minimum(end, T), axis=-1) - bad[..., :T]
    fit = inside & (bad_rows == 0)
    first = np.argmax(fit, axis=-1)
    return np.where(fit.any(axis=-1), first, -1)


def occupy(used: np.ndarray, rows: np.ndarray, offset: np.ndarray, length: np.ndarray,
           demand: np.ndarray) -> None:
    """Add one job per listed environment: `used[rows[n], offset[n]:offset[n]+length[n], :] +=
    demand[n]`, in place."""
    T = used.shape[1]
    steps = np.arange(T)
    span = (steps >= offset[:, None]) & (steps < (offset + length)[:, None])  # (n, T)
    used[rows] += span[:, :, None].astype(used.dtype) * demand[:, None, :].astype(used.dtype)


__all__ = ["ResourceGrid", "earliest_start", "occupy"]
