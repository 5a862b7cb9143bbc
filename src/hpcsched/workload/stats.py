"""Summary statistics of a workload, as papers print them (RLScheduler's Table II and the like)."""

from __future__ import annotations

import numpy as np

from hpcsched.workload.jobs import JobTable
from hpcsched.workload.ties import tie_groups

DAY = 86400.0


def trace_stats(jobs: JobTable, max_procs: int | None) -> dict:
    """Statistics of a cleaned table on a cluster of `max_procs` processors (None where the
    cluster's size is not known: ``procs`` is then None and ``offered_load`` NaN).

    Times span from the first job's submit time to the last job's (the table's order, which cleaning
    sorts), so the mean inter-arrival time is that span over n - 1 gaps.

    Keys: ``jobs``; ``span_days``; ``procs`` (the cluster size); ``mean_interarrival_s``;
    ``mean_run_time_s``; ``mean_req_time_s``; ``mean_procs``; ``offered_load`` = sum(run_time *
    procs) / (span * max_procs), the work offered per unit of capacity over the span (above 1: more
    than the cluster can do); ``users``, the number of distinct known user ids; and
    ``exact_estimates``, the share of jobs whose requested time equals their run time; and
    ``jobs_alike``, the share of jobs no policy can tell from another (the same submit time and
    request: `workload.ties`), whose order among themselves is luck (`--tie-draws`).
    Inter-arrival and load are NaN for a table spanning no time. A table whose jobs say what they
    ask of each node (Slurm accounting) also gets ``mean_nodes``, ``one_core_jobs`` (the share of
    jobs asking for one core on one node), ``gpu_jobs`` (the share asking for GPUs) and
    ``partitions`` (how many the jobs ran in).
    """
    n = len(jobs)
    if n == 0:
        raise ValueError("trace_stats: the table has no jobs")
    if max_procs is not None and max_procs <= 0:
        raise ValueError(f"trace_stats: max_procs must be positive, got {max_procs}")
    span = float(jobs.submit[-1] - jobs.submit[0])
    work = float(np.sum(jobs.run_time * jobs.procs))
    users = jobs.user[jobs.user >= 0]
    out = {
        "jobs": n,
        "span_days": span / DAY,
        "procs": int(max_procs) if max_procs is not None else None,
        "mean_interarrival_s": span / (n - 1) if n > 1 and span > 0 else float("nan"),
        "mean_run_time_s": float(np.mean(jobs.run_time)),
        "mean_req_time_s": float(np.mean(jobs.req_time)),
        "mean_procs": float(np.mean(jobs.procs)),
        "offered_load": (work / (span * max_procs) if span > 0 and max_procs is not None
                         else float("nan")),
        "users": int(np.unique(users).size),
        "exact_estimates": float(np.mean(jobs.req_time == jobs.run_time)),
        "jobs_alike": tie_groups(jobs).jobs / n,
    }
    if np.all(jobs.nodes > 0):
        out["mean_nodes"] = float(np.mean(jobs.nodes))
        out["one_core_jobs"] = float(np.mean((jobs.nodes == 1) & (jobs.cores_per_node == 1)))
        out["gpu_jobs"] = float(np.mean(jobs.gpus_per_node > 0))
        part = jobs.partition[jobs.partition >= 0]
        out["partitions"] = int(np.unique(part).size)
    return out


__all__ = ["trace_stats"]
