"""From a trace to results: load, clean under a profile, size the cluster, simulate windows.

    prepared = prepare("hpc2n", profile="rlscheduler")
    result = simulate(prepared, get_policy("sjf"), backfill="easy", start=4000, jobs=1024)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hpcsched.cluster.pool import ClusterError, NodePool
from hpcsched.sim.engine import Policy, Result
from hpcsched.sim.factory import make_engine
from hpcsched.sim.profiles import Profile, get_profile
from hpcsched.workload.cleaning import CleaningReport, clean
from hpcsched.workload.jobs import JobTable
from hpcsched.workload.traces import load_trace


@dataclass(frozen=True)
class Prepared:
    """A trace as a profile simulates it: cleaned jobs, the cluster, and what cleaning changed."""

    name: str
    jobs: JobTable
    cluster: NodePool
    profile: Profile
    report: CleaningReport
    dropped_oversized: int = 0
    dropped_no_procs: int = 0

    def summary(self) -> str:
        text = f"{self.name}: {self.report.summary()}"
        if self.dropped_no_procs:
            text += (f"; {self.dropped_no_procs} job(s) without a processor count dropped "
                     f"(they cannot be simulated)")
        if self.dropped_oversized:
            text += (f"; {self.dropped_oversized} job(s) larger than the cluster dropped "
                     f"(--drop-oversized)")
        return text


def prepare(
    trace: str | JobTable,
    profile: str | Profile = "standard",
    *,
    nodes: int | None = None,
    procs_per_node: int | None = None,
    drop_oversized: bool = False,
) -> Prepared:
    """Load `trace` (a short name, a path, or a raw JobTable), clean it under the profile's rules and
    size the cluster from its header (or from `nodes` / `procs_per_node`).

    A job larger than the whole cluster stops here with an error naming it, unless `drop_oversized`.
    """
    prof = get_profile(profile)
    raw = load_trace(trace) if isinstance(trace, str) else trace
    jobs, report = clean(raw, prof.cleaning)
    if len(jobs) == 0:
        raise ValueError(f"{raw.header.name or 'the trace'}: no job is left after cleaning "
                         f"({report.summary()})")
    # Jobs with no processor count at all survive some profiles' cleaning (SchedGym loads them, and
    # its allocator then takes every free node for such a job and never gives them back): no
    # profile can simulate them meaningfully, so they are dropped here, and counted.
    no_procs = jobs.procs <= 0
    if no_procs.any():
        jobs = jobs.take(~no_procs)
    cluster = NodePool.from_header(jobs.header, nodes, procs_per_node)
    big = cluster.oversized(jobs)
    if big.size and not drop_oversized:
        r = int(big[0])
        where = f"{jobs.header.path or jobs.header.name}, line {int(jobs.line[r])}"
        raise ClusterError(
            f"{where}: job {int(jobs.job_id[r])} asks for {int(jobs.procs[r])} processors, more "
            f"than the cluster's {cluster.total_procs} ({cluster.describe()}); {big.size} such "
            f"job(s) in all. Use --drop-oversized to drop them, or give the cluster size "
            f"with --nodes/--procs-per-node"
        )
    if big.size:
        keep = np.ones(len(jobs), dtype=bool)
        keep[big] = False
        jobs = jobs.take(keep)
    return Prepared(raw.header.name or str(trace), jobs, cluster, prof, report, int(big.size),
                    int(no_procs.sum()))


def window(prepared: Prepared, start: int | None = None, jobs: int | None = None) -> JobTable:
    """Jobs [start, start + jobs) of the prepared trace (all of it by default)."""
    if start is None and jobs is None:
        return prepared.jobs
    start = start or 0
    n = jobs if jobs is not None else len(prepared.jobs) - start
    return prepared.jobs.window(start, n)


def simulate(
    prepared: Prepared,
    policy: Policy,
    *,
    backfill: str = "none",
    start: int | None = None,
    jobs: int | None = None,
) -> Result:
    """Schedule one window of the prepared trace with `policy` and return the result."""
    engine = make_engine(window(prepared, start, jobs), prepared.cluster, prepared.profile, backfill)
    return engine.run(policy)


__all__ = ["Prepared", "prepare", "simulate", "window", "ClusterError"]
