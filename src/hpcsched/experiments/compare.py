"""Compare policies on the same windows of a trace: the protocol every paper here uses.

Every policy and backfilling choice sees exactly the same windows; a row holds the mean over them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from hpcsched.sim.engine import Policy, Result
from hpcsched.sim.metrics import combined_score
from hpcsched.sim.metrics import METRIC_KEYS, QUEUE_KEYS
from hpcsched.sim.run import Prepared, simulate
from hpcsched.workload.windows import paper_windows, sample_windows, schedinspector_windows

#: the metrics averaged over windows in a comparison row
MEAN_KEYS = tuple(k for k in METRIC_KEYS if k not in ("jobs", "first_job_id", "last_job_id"))

PAPER_FIRST = 10000  # "the first 10K jobs" of every trace (RLScheduler, SchedInspector)


def choose_windows(
    prepared: Prepared,
    *,
    start: int | None = None,
    starts: Sequence[int] | None = None,
    windows: int | None = None,
    jobs: int | None = None,
    first: int | None = None,
    seed: int | None = None,
    paper: bool = False,
) -> tuple[list[int], int]:
    """The window starts (0-based positions in the prepared trace) and the window length.

    Given explicitly by `start` or `starts` (with `jobs`), or drawn: `windows` windows of `jobs`
    jobs from the first `first` jobs with `seed`. Under the rlscheduler profile, a draw without a
    seed is the RLScheduler paper's own draw (so its tables can be reproduced); under the
    schedinspector profile (without `first`), SchedInspector's test script's draw.
    """
    n = len(prepared.jobs)
    if windows is not None:
        if jobs is None:
            raise ValueError("--windows needs --jobs (the length of each window)")
        if start is not None or starts:
            raise ValueError("give either --windows or --start/--starts, not both")
        if seed is None and prepared.profile.name == "rlscheduler":
            limit = min(first or PAPER_FIRST, n)
            return paper_windows(first=limit, count=windows, length=jobs), jobs
        if seed is None and first is None and prepared.profile.name == "schedinspector":
            return schedinspector_windows(n, windows, jobs), jobs
        return sample_windows(n, windows, jobs, first=first, seed=seed or 0), jobs
    if starts:
        if jobs is None:
            raise ValueError("--starts needs --jobs (the length of each window)")
        chosen = list(starts)
    elif start is not None:
        chosen = [start]
        if jobs is None:
            jobs = n - start
    else:
        chosen = [0]
        jobs = jobs if jobs is not None else n
    for s in chosen:
        if s < 0 or s + jobs > n:
            raise ValueError(
                f"window [{s}, {s + jobs}) is outside {prepared.name}, which has {n} jobs "
                f"under the {prepared.profile.name} profile"
            )
    return chosen, jobs


def summarize(results: Iterable[Result]) -> dict[str, float]:
    """Mean of every metric over the windows' results."""
    results = list(results)
    row: dict[str, float] = {}
    keys = MEAN_KEYS
    if results and not all(k in r.metrics for r in results for k in MEAN_KEYS):
        # a profile with metrics of its own (deeprm: slowdown and completion in steps, ...)
        keys = tuple(k for k, v in results[0].metrics.items()
                     if isinstance(v, (int, float)) and all(k in r.metrics for r in results))
    for k in keys:
        row[k] = float(np.mean([r.metrics[k] for r in results]))
    # Wang's Ch. 3 queue metrics (time-averaged queue length and job load)
    for k in QUEUE_KEYS:
        if k not in row and results and all(k in r.metrics for r in results):
            row[k] = float(np.mean([r.metrics[k] for r in results]))
    # per-resource utilization of runs on a heterogeneous cluster
    for k in sorted(results[0].metrics) if results else ():
        if k.startswith("utilization_") and all(k in r.metrics for r in results):
            row[k] = float(np.mean([r.metrics[k] for r in results]))
    # a SchedInspector inspector's share of rejected proposals (its run summary)
    if results and all("rejection_ratio" in r.metrics for r in results):
        row["rejection_ratio"] = float(np.mean([r.metrics["rejection_ratio"] for r in results]))
    return row


def simulate_windows(prepared: Prepared, policy: Policy, backfill: str, starts: Sequence[int],
                     length: int, progress: Callable[[int], None] | None = None) -> list[Result]:
    """`policy` on each window of `length` jobs from `starts`; `progress(1)` after each."""
    results = []
    for s in starts:
        results.append(simulate(prepared, policy, backfill=backfill, start=s, jobs=length))
        if progress:
            progress(1)
    return results


def compare(
    prepared: Prepared,
    policies: Sequence[tuple[str, Policy]],
    backfills: Sequence[str],
    starts: Sequence[int],
    length: int,
    progress: Callable[[int], None] | None = None,
    reference: str | None = None,
    allocators: Mapping[str, str | None] | None = None,
    tie_draws: int = 0,
) -> list[dict]:
    """One flat row per (policy, backfilling): trace, policy, backfill, windows, jobs, and the mean
    of each metric over the windows. `progress(k)` is called after each simulated window.

    `reference`: the label of one of `policies`; every row then gets `score`, Wang's combined
    score S = AWT_ref / AWT + MWT_ref / MWT against that policy with the same backfilling, per
    window, averaged over the windows (the reference scores 2; higher is better).

    `allocators`: {label: allocator} for policies that place jobs with an allocator of their own
    (a SELECTOR+ALLOCATOR name) instead of `prepared`'s. On a cluster of named nodes every row
    names its `allocator` (`policyspec.allocator_label`: ``agent`` for a HeraSched model).

    `tie_draws` = K: each window is also run on K copies of the trace whose jobs alike (same
    submit time and request) have their run times dealt again (`workload.ties.shuffle_ties`,
    seeds 1 to K), and the means are over every window of the 1 + K tables; rows then carry
    `tie_draws`. A score compares each run with the reference's on the same window and table."""
    from hpcsched.cluster.nodes import Cluster
    from hpcsched.experiments.policyspec import allocator_label, require_named_nodes

    allocators = dict(allocators or {})
    require_named_nodes(prepared, [label for label, a in allocators.items() if a])
    if reference is not None and reference not in [label for label, _ in policies]:
        raise ValueError(f"the reference {reference!r} must be one of the policies compared "
                         f"({', '.join(label for label, _ in policies)})")
    from hpcsched.workload.ties import drawn_tables

    tables = [prepared] + [replace(prepared, jobs=jobs)
                           for jobs in drawn_tables(prepared.jobs, tie_draws)[1:]]
    rows, runs = [], {}
    for label, policy in policies:
        own = allocators.get(label)
        placed = [replace(t, allocator=own) if own else t for t in tables]
        for backfill in backfills:
            results = [r for t in placed
                       for r in simulate_windows(t, policy, backfill, starts, length, progress)]
            runs[label, backfill] = results
            row = {"trace": prepared.name, "profile": prepared.profile.name, "policy": label}
            if isinstance(prepared.cluster, Cluster):
                row["allocator"] = allocator_label(policy, placed[0], own)
            row.update(backfill=backfill, windows=len(starts), jobs=length)
            if tie_draws:
                row["tie_draws"] = tie_draws
            row.update(summarize(results))
            rows.append(row)
    if reference is not None:
        for row in rows:
            ref = runs[reference, row["backfill"]]
            own = runs[row["policy"], row["backfill"]]
            row["score"] = float(np.mean([combined_score(r.metrics, f.metrics)
                                          for r, f in zip(own, ref)]))
    return rows
