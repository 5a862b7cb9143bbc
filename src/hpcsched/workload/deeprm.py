"""DeepRM's workloads: the paper's synthetic jobsets, and real traces mapped into its grid.

Synthetic (HotNets'16 section 4.1, with the authors' code's demand ranges, spec deeprm.md section 5):
DeepRM's own generator, draw for draw (`generate`): at each step 1..steps-1 one job arrives with
probability p (a Bernoulli process; the code draws step 0 too but never injects it). 80% of jobs are short, U{1..3} steps, the rest long, U{10..15}. Each job has a
dominant resource, chosen uniformly; it asks for U{5..10} units of it and U{1..2} of every other
(capacity 10 units: the code's ranges, twice the paper's stated fractions, which cannot reach the
paper's loads above 100%).

The expected offered load per resource is p * E[length] * E[demand] / units = 1.845 p, so a load
level maps to p = load / 1.845 (at most 1: about 185% is the highest load one arrival per step can
offer).

Traces: `map_trace` turns an SWF JobTable into grid jobs: time is cut into quanta (a job's length is
ceil(run time / quantum) steps), processors are scaled into the units of resource 0 (ceil(procs /
machine procs * units)), and, where the trace records memory and the grid has a second resource,
memory into resource 1. Jobs that cannot fit in the window even on an empty cluster are counted
and left out of the simulation (they would block their slot for ever).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from hpcsched.workload.jobs import JobTable

if TYPE_CHECKING:  # the grid is duck-typed here: workload knows nothing of cluster/
    from hpcsched.cluster.grid import ResourceGrid

SHORT = (1, 3)
LONG = (10, 15)
SHORT_SHARE = 0.8
DOMINANT = (5, 10)
OTHER = (1, 2)
TRAIN_SEED = 42  # the authors' training jobsets
TEST_SEED = 314159  # their unseen evaluation jobsets
NEVER = np.iinfo(np.int64).max // 4  # the arrival of a padding row


@dataclass(frozen=True)
class GridJobs:
    """Jobsets in grid units, padded to a common length: B jobsets of at most J jobs, sorted by
    arrival. Padding rows have arrival NEVER and length 0."""

    arrival: np.ndarray  # (B, J) int64 step of arrival
    length: np.ndarray  # (B, J) int64 steps
    demand: np.ndarray  # (B, J, d) int64 units of each resource
    count: np.ndarray  # (B,) real jobs per jobset

    @classmethod
    def from_lists(cls, jobsets: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> "GridJobs":
        """From (arrival, length, demand) per jobset (each sorted by arrival)."""
        B = len(jobsets)
        if B == 0:
            raise ValueError("no jobsets")
        J = max(1, max(len(a) for a, _, _ in jobsets))
        d = jobsets[0][2].shape[1] if jobsets[0][2].ndim == 2 else 1
        arrival = np.full((B, J), NEVER, dtype=np.int64)
        length = np.zeros((B, J), dtype=np.int64)
        demand = np.zeros((B, J, d), dtype=np.int64)
        count = np.zeros(B, dtype=np.int64)
        for b, (a, ln, dm) in enumerate(jobsets):
            n = len(a)
            if n and np.any(np.diff(a) < 0):
                raise ValueError(f"jobset {b}: arrivals are not sorted")
            arrival[b, :n], length[b, :n], demand[b, :n] = a, ln, np.asarray(dm).reshape(n, d)
            count[b] = n
        return cls(arrival, length, demand, count)

    def __len__(self) -> int:
        return self.arrival.shape[0]

    @property
    def resources(self) -> int:
        return self.demand.shape[2]

    def take(self, rows) -> "GridJobs":
        rows = np.asarray(rows)
        return GridJobs(self.arrival[rows], self.length[rows], self.demand[rows], self.count[rows])

    def repeat(self, n: int) -> "GridJobs":
        """Each jobset n times in a row (N rollouts of the same jobset)."""
        return self.take(np.repeat(np.arange(len(self)), n))

    def load(self, units: int = 10, steps: int | None = None) -> np.ndarray:
        """Offered load per jobset and resource: sum(demand * length) / (units * steps), steps
        being the arrival span (last arrival + 1 by default). (B, d)."""
        real = np.arange(self.arrival.shape[1])[None, :] < self.count[:, None]
        work = (self.demand * (self.length * real)[:, :, None]).sum(axis=1)
        if steps is None:
            last = np.where(real, self.arrival, 0).max(axis=1)
            span = np.maximum(last + 1, 1)[:, None]
        else:
            span = steps
        return work / (units * span)


def expected_load_per_arrival(resources: int = 2) -> float:
    """E[length] * E[demand of one resource] / units for one arrival (1.845 at the defaults)."""
    mean_len = SHORT_SHARE * np.mean(SHORT) + (1 - SHORT_SHARE) * np.mean(LONG)
    mean_demand = (np.mean(DOMINANT) + (resources - 1) * np.mean(OTHER)) / resources
    return float(mean_len * mean_demand / 10)


def rate_for_load(load: float, resources: int = 2) -> float:
    """The Bernoulli arrival probability that offers `load` (1.0 = 100%) in expectation."""
    if load <= 0:
        raise ValueError(f"--load must be positive (got {load})")
    p = load / expected_load_per_arrival(resources)
    if p > 1 + 1e-9:
        top = expected_load_per_arrival(resources)
        raise ValueError(f"load {load:g} needs {p:.3f} arrivals per step; one Bernoulli arrival "
                         f"per step offers at most {top:.3f} ({100 * top:.1f}%)")
    return min(p, 1.0)


def generate(n: int, rate: float, steps: int = 50, *, seed: int = TRAIN_SEED,
             resources: int = 2) -> GridJobs:
    """`n` synthetic jobsets of `steps` steps with arrival probability `rate`: the jobsets DeepRM's
    own generator draws with `seed` (its `Env` with `simu_len` = steps, `num_ex` = n).

    DeepRM draws every jobset from one legacy numpy stream (`np.random.seed(seed)`), step after
    step: a uniform number decides whether a job comes (< rate); if one does, another decides short
    (< 0.8) or long, then `randint` draws its length, its dominant resource, and each resource's
    demand in resource order. Jobset k is steps k * steps .. (k + 1) * steps - 1 of that stream, so
    the first jobsets do not depend on `n`. DeepRM never injects a jobset's step 0 (it shows the job
    of step i when its clock reaches i, from 1): that job is drawn, so the stream is the same, and
    left out here as there. The same draws in the same order give the same jobsets, job for job
    (tests/data/deeprm_seed42 holds DeepRM's own)."""
    # DeepRM's np.random, without touching the global one
    return draw_jobsets(np.random.RandomState(seed), n, rate, steps, resources)


def draw_jobsets(stream: np.random.RandomState, n: int, rate: float, steps: int,
                 resources: int = 2) -> GridJobs:
    """`generate`'s draws from a given legacy stream, which is left where DeepRM's generator leaves
    the global one (its evaluation script draws on from there)."""
    if not 0 < rate <= 1:
        raise ValueError(f"the arrival probability must be in (0, 1] (got {rate})")
    if steps < 2:
        raise ValueError(f"a jobset needs at least 2 steps (got {steps})")
    if n < 1:
        raise ValueError(f"the number of jobsets must be at least 1 (got {n})")
    if resources < 1:
        raise ValueError(f"a job needs at least one resource (got {resources})")
    uniform, randint = stream.random_sample, stream.randint
    sets = []
    for _ in range(n):
        arrival, length, demand = [], [], []
        for step in range(steps):
            if uniform() >= rate:
                continue
            if uniform() < SHORT_SHARE:
                ln = randint(SHORT[0], SHORT[1] + 1)
            else:
                ln = randint(LONG[0], LONG[1] + 1)
            dominant = randint(0, resources)
            size = [randint(DOMINANT[0], DOMINANT[1] + 1) if r == dominant
                    else randint(OTHER[0], OTHER[1] + 1) for r in range(resources)]
            if step > 0:
                arrival.append(step)
                length.append(ln)
                demand.append(size)
        sets.append((np.array(arrival, dtype=np.int64), np.array(length, dtype=np.int64),
                     np.array(demand, dtype=np.int64).reshape(len(arrival), resources)))
    return GridJobs.from_lists(sets)


@dataclass(frozen=True)
class TraceMapping:
    """What `map_trace` did: the quantum, the scaling, and every job it could not place."""

    quantum: float  # seconds per step
    procs_per_unit: float
    memory: bool  # whether resource 1 carries the trace's memory
    jobs: int  # jobs mapped into the grid
    never_fit: int  # jobs too long for the window (or larger than a resource): left out
    longest_steps: int
    #: the row of the trace table each mapped job came from (mapped job j is row rows[j])
    rows: np.ndarray | None = field(default=None, repr=False, compare=False)

    def summary(self) -> str:
        text = (f"{self.jobs} jobs in the grid: 1 step = {self.quantum:g} s, 1 unit = "
                f"{self.procs_per_unit:g} processors"
                + ("" if self.memory else "; no memory in the trace (resource 1 unused)"))
        if self.never_fit:
            text += (f"; {self.never_fit} job(s) can never fit (too long for the window, up to "
                     f"{self.longest_steps} steps) and were left out")
        return text


def map_trace(jobs: JobTable, total_procs: int, grid: "ResourceGrid", *,
              quantum: float | None = None, max_length: int = 15) -> tuple[GridJobs, TraceMapping]:
    """One jobset from a trace (already cleaned). Default quantum: the one that makes 95% of the
    jobs at most `max_length` steps long (the synthetic workload's longest job is 15 steps)."""
    run = np.maximum(np.asarray(jobs.run_time, dtype=np.float64), 1.0)
    procs = np.asarray(jobs.procs, dtype=np.float64)
    if quantum is None:
        quantum = float(max(1.0, np.ceil(np.percentile(run, 95) / max_length)))
    if quantum <= 0:
        raise ValueError(f"--quantum must be positive (got {quantum})")
    length = np.maximum(1, np.ceil(run / quantum)).astype(np.int64)
    per_unit = total_procs / grid.units
    demand = np.zeros((len(jobs), grid.resources), dtype=np.int64)
    demand[:, 0] = np.clip(np.ceil(procs / per_unit), 1, None)
    mem = np.asarray(jobs.req_mem, dtype=np.float64)
    mem = np.where(mem > 0, mem, np.asarray(jobs.used_mem, dtype=np.float64))
    has_memory = grid.resources > 1 and bool(np.all(mem > 0))
    if has_memory:
        total_mem = mem * procs
        demand[:, 1] = np.clip(np.ceil(total_mem / total_mem.max() * grid.units), 1, grid.units)
    submit = np.asarray(jobs.submit, dtype=np.float64)
    arrival = np.floor((submit - submit.min()) / quantum).astype(np.int64) + 1
    bad = grid.never_fits(length, demand)
    keep = ~bad
    order = np.argsort(arrival[keep], kind="stable")
    mapped = GridJobs.from_lists([(arrival[keep][order], length[keep][order],
                                   demand[keep][order])])
    report = TraceMapping(quantum, per_unit, has_memory, int(keep.sum()), int(bad.sum()),
                          int(length.max()) if len(length) else 0,
                          rows=np.flatnonzero(keep)[order])
    return mapped, report


__all__ = ["NEVER", "GridJobs", "TEST_SEED", "TRAIN_SEED", "TraceMapping", "draw_jobsets",
           "expected_load_per_arrival", "generate", "map_trace", "rate_for_load"]
