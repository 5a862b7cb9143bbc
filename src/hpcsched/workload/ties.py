"""Jobs no scheduler can tell apart, and the luck of which of them runs first.

A job array submits many jobs at one instant with one request: the same requested time, cores,
nodes, memory and GPUs. Every selector we have (FCFS, SJF, WFP3, UNICEP, F1, F2, LCFS, a learned
one reading the request and the wait) sees such jobs as equal, and breaks the tie by the order of
the rows. Their actual run times still differ, and which of them happens to be started first
decides when the rest can start: on the Spartan-like periods, enough to move a period's maximum
wait by a factor of two under the same policy (README, "The luck of the tie order").

`tie_groups` finds the groups of such jobs: rows with the same submit time and the same value in
every column a policy may read (all but the job's identity, `job_id` and `line`, and what it did
once started, `OUTCOMES`). `shuffle_ties(jobs, seed)` is the same period with the outcomes dealt
again at random within each group: to any policy it looks the same, so the spread of a metric over
such draws is the part of it no policy could control, and the mean over draws is the policy's
expected result with ties broken at random.

    groups = tie_groups(jobs)
    print(groups.describe())         # 9,324 jobs in 355 groups of identical jobs (largest 1,016)
    other = shuffle_ties(jobs, 1, groups)
    tables = drawn_tables(jobs, 9)   # jobs, then the copies of seeds 1-9
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpcsched.workload.jobs import JobTable

#: what a job did once started: dealt again within a group of identical jobs
OUTCOMES: tuple[str, ...] = ("run_time", "cpu_time", "wait", "status")
#: the job's identity: it stays with its row (and so does the row's place in the queue's order)
IDENTITY: tuple[str, ...] = ("job_id", "line")


@dataclass(frozen=True)
class TieGroups:
    """The groups of identical jobs of a table (row indices, ascending, two rows or more)."""

    groups: tuple[np.ndarray, ...]
    rows: int  # rows of the table

    @property
    def jobs(self) -> int:
        """Jobs in some group."""
        return sum(len(g) for g in self.groups)

    @property
    def largest(self) -> int:
        return max((len(g) for g in self.groups), default=0)

    def describe(self) -> str:
        if not self.groups:
            return f"no two of the {self.rows:,} jobs are alike (same submit time and request)"
        return (f"{self.jobs:,} of {self.rows:,} jobs are in {len(self.groups):,} groups of jobs "
                f"alike (same submit time and request; the largest holds {self.largest:,})")


def key_columns(jobs: JobTable) -> list[str]:
    """The columns two jobs must share to be alike: every column but `IDENTITY` and `OUTCOMES`."""
    return [c for c in jobs.columns if c not in IDENTITY and c not in OUTCOMES]


def tie_groups(jobs: JobTable) -> TieGroups:
    """The groups of rows of `jobs` that agree on every key column (`key_columns`): jobs no policy
    reading the request, the submit time and the wait can tell apart."""
    n = len(jobs)
    if n < 2:
        return TieGroups((), n)
    key = np.stack([np.asarray(jobs.columns[c], dtype=np.float64) for c in key_columns(jobs)],
                   axis=1)
    # NaN never equals NaN: give unknown values one code so that two unknowns agree
    key = np.where(np.isnan(key), np.inf, key)
    _, inverse, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    bounds = np.cumsum(counts)[:-1]
    groups = tuple(g for g in np.split(order, bounds) if len(g) > 1)
    groups = tuple(sorted(groups, key=lambda g: int(g[0])))
    return TieGroups(groups, n)


def shuffle_ties(jobs: JobTable, seed: int, groups: TieGroups | None = None) -> JobTable:
    """`jobs` with the `OUTCOMES` of each group of alike jobs (`tie_groups`, or the `groups` given,
    found on this table) dealt again at random (numpy's default generator seeded `seed`); every
    other column, the rows' order and their identities unchanged."""
    groups = tie_groups(jobs) if groups is None else groups
    if groups.rows != len(jobs):
        raise ValueError(f"shuffle_ties: the groups were found on {groups.rows:,} rows, the table "
                         f"has {len(jobs):,}")
    rng = np.random.default_rng(seed)
    deal = np.arange(len(jobs))
    for g in groups.groups:
        deal[g] = g[rng.permutation(len(g))]
    cols = {c: np.asarray(jobs.columns[c])[deal] for c in OUTCOMES if c in jobs.columns}
    return jobs.with_columns(**cols)


def drawn_tables(jobs: JobTable, draws: int,
                 groups: TieGroups | None = None) -> list[JobTable]:
    """`jobs` itself, then `draws` copies of it dealt again (`shuffle_ties`, seeds 1 to
    `draws`, within `groups`, found here if not given): the 1 + K schedules a `--tie-draws K`
    average is taken over."""
    if draws < 0:
        raise ValueError(f"tie draws must be 0 or more, got {draws}")
    if not draws:
        return [jobs]
    groups = tie_groups(jobs) if groups is None else groups
    return [jobs] + [shuffle_ties(jobs, seed, groups) for seed in range(1, draws + 1)]
