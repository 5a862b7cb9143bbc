"""From a trace to results: load, clean under a profile, size the cluster, simulate windows.

    prepared = prepare("hpc2n", profile="rlscheduler")
    result = simulate(prepared, get_policy("sjf"), backfill="easy", start=4000, jobs=1024)

    prepared = prepare("jobs.tsv", "hpcsim", cluster="spartan-physical", allocator="topology")

Without a cluster, the trace's header sizes a pool of identical nodes (SchedGym's rule: MaxNodes nodes
of MaxProcs / MaxNodes processors; under the cqsim profile CQSim's: MaxProcs single-processor nodes,
`Profile.pool`); with one (a bundled name, a slurm.conf, HPCsim's platform files, or a `Cluster`),
jobs are placed on its named nodes, and a Slurm-accounting trace keeps only the jobs of the
cluster's partition.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from hpcsched.cluster.load import load_cluster
from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.pool import ClusterError, NodePool
from hpcsched.sim.engine import Policy, Result
from hpcsched.sim.factory import make_engine
from hpcsched.sim.profiles import Profile, get_profile
from hpcsched.workload.cleaning import CleaningReport, clean
from hpcsched.workload.jobs import JobTable
from hpcsched.workload.traces import is_slurm_file, known_oversized, load_trace


@dataclass(frozen=True)
class Prepared:
    """A trace as a profile simulates it: cleaned jobs, the cluster, and what cleaning changed."""

    name: str
    jobs: JobTable
    cluster: NodePool | Cluster
    profile: Profile
    report: CleaningReport
    dropped_oversized: int = 0
    dropped_no_procs: int = 0
    #: the allocator engines use on a heterogeneous cluster (None: the profile's)
    allocator: str | None = None
    #: the first few jobs dropped as larger than the cluster, each with why (see `prepare`)
    oversized: tuple[str, ...] = ()
    #: why they were dropped: "--drop-oversized", or "known" (the trace's own machine cannot hold them)
    oversized_rule: str = "--drop-oversized"

    def summary(self) -> str:
        text = f"{self.name}: {self.report.summary()}"
        read = getattr(self.jobs.header, "report", None)  # a Slurm-accounting file's reading
        if read is not None:
            text = f"{self.name}: reading the file: {read.summary()}\n{text}"
        if self.dropped_no_procs:
            text += (f"; {self.dropped_no_procs} job(s) without a processor count dropped "
                     f"(they cannot be simulated)")
        if self.dropped_oversized:
            rule = ("known: the trace's own machine cannot hold them" if self.oversized_rule == "known"
                    else self.oversized_rule)
            more = self.dropped_oversized - len(self.oversized)
            text += (f"; {self.dropped_oversized} job(s) larger than the cluster dropped ({rule}): "
                     + "; ".join(self.oversized) + (f"; and {more} more" if more > 0 else ""))
        if isinstance(self.cluster, Cluster):
            text += f"\ncluster {self.cluster.describe()}"
        return text


def prepare(
    trace: str | JobTable,
    profile: str | Profile = "standard",
    *,
    nodes: int | None = None,
    procs_per_node: int | None = None,
    drop_oversized: bool = False,
    cluster: str | Cluster | None = None,
    partition: str | None = None,
    allocator: str | None = None,
) -> Prepared:
    """Load `trace` (a short name, a path, or a raw JobTable), clean it under the profile's rules and
    size the cluster from its header (or from `nodes` / `procs_per_node`), or take `cluster` (a
    bundled name, a Slurm or HPCsim platform file, or a `Cluster`; `partition` selects one of its
    partitions, and a Slurm-accounting trace keeps that partition's jobs).

    A job that can never run on the cluster stops here with an error naming it, unless
    `drop_oversized` (then it is dropped and counted) or it is one of the jobs a bundled trace
    lists as too large for its own published machine (`TraceInfo.known_oversized`: dropped,
    counted and named with the trace's reason, as `--drop-oversized` would; any other such job
    still stops the run). `Prepared.oversized` names the first few dropped jobs and why.
    """
    prof = get_profile(profile)
    hetero = _cluster(cluster, partition) if cluster is not None else None
    if hetero is not None and (nodes is not None or procs_per_node is not None):
        raise ValueError("give the cluster either as --cluster or as --nodes/--procs-per-node, "
                         "not both")
    if isinstance(trace, str):
        part = partition
        if part is None and hetero is not None and len(hetero.partition_names) == 1:
            part = hetero.partition_names[0]
        raw = load_trace(trace, partition=part) if part is not None and is_slurm_file(trace) \
            else load_trace(trace)
    else:
        raw = trace
    if hetero is None and prof.dialect == "hpcsim" and raw.header.partitions:
        raise ValueError(f"{raw.header.name or trace}: a Slurm-accounting trace under the "
                         f"hpcsim profile needs its cluster: --cluster spartan-physical, "
                         f"spartan-deeplearn, a slurm.conf or HPCsim's platform files")
    jobs, report = clean(raw, prof.cleaning)
    if len(jobs) == 0:
        raise ValueError(f"{raw.header.name or 'the trace'}: no job is left after cleaning "
                         f"({report.summary()})")
    # Jobs with no processor count at all survive some profiles' cleaning (SchedGym loads them, and
    # its allocator then takes every free node for such a job and never gives them back): no
    # profile can simulate them meaningfully, so they are dropped here, and counted.
    no_procs = (jobs.procs <= 0) & ~(jobs.nodes > 0)
    if no_procs.any():
        jobs = jobs.take(~no_procs)
    if hetero is None and prof.dialect == "hpcsim":
        # HPCsim shares nodes: an SWF trace gets the identical nodes its header describes, shared
        pool = NodePool.from_header(jobs.header, nodes, procs_per_node)
        hetero = Cluster.identical(pool.nodes, pool.procs_per_node)
    if hetero is not None:
        from hpcsched.cluster.request import job_requests, never_fits, why_never_fits

        count, per_node = job_requests(jobs, hetero)
        big = np.flatnonzero(never_fits(count, per_node, hetero))
        why = lambda r: why_never_fits(int(count[r]), per_node[r], hetero)  # noqa: E731
        known = known_oversized(raw.header.name) if big.size else {}
        surprise = [int(r) for r in big if int(jobs.job_id[r]) not in known]
        if surprise and not drop_oversized:
            r = surprise[0]
            raise ClusterError(
                f"{_where(jobs, r)}: job {int(jobs.job_id[r])} {why(r)}; {len(surprise)} such "
                f"job(s) in all. Use --drop-oversized to drop them")
        cluster_used = hetero
        if allocator is not None:
            from hpcsched.sim.factory import resolve_allocator

            resolve_allocator(allocator, prof)  # an unknown name fails here, with the list
    else:
        if allocator is not None:
            raise ValueError("--allocator places jobs on a heterogeneous cluster's nodes; name "
                             "the cluster with --cluster (a pool of identical nodes only counts "
                             "them)")
        size = NodePool.processors_as_nodes if prof.pool == "procs" else NodePool.from_header
        cluster_used = size(jobs.header, nodes, procs_per_node)
        big = cluster_used.oversized(jobs)
        why = lambda r: (f"asks for {int(jobs.procs[r])} processors, more than the cluster's "  # noqa: E731
                         f"{cluster_used.total_procs}")
        known = {}
        if big.size and not drop_oversized:
            r = int(big[0])
            raise ClusterError(
                f"{_where(jobs, r)}: job {int(jobs.job_id[r])} asks for {int(jobs.procs[r])} processors, "
                f"more than the cluster's {cluster_used.total_procs} ({cluster_used.describe()}); "
                f"{big.size} such job(s) in all. Use --drop-oversized to drop them, or give the "
                f"cluster size with --nodes/--procs-per-node"
            )
    oversized: list[str] = []
    if big.size:
        for r in big[:_NAMED]:
            job = int(jobs.job_id[r])
            oversized.append(f"job {job} {why(int(r))}" + (f" ({known[job]})" if job in known else ""))
        keep = np.ones(len(jobs), dtype=bool)
        keep[big] = False
        jobs = jobs.take(keep)
    name = raw.header.name or (str(trace) if isinstance(trace, str) else "jobs")
    return Prepared(name, jobs, cluster_used, prof, report,
                    int(big.size), int(no_procs.sum()), allocator, tuple(oversized),
                    "--drop-oversized" if drop_oversized else "known")


_NAMED = 3  # dropped jobs named in the summary


def _where(jobs: JobTable, row: int) -> str:
    """Where a job comes from, for messages: its file (or table name) and line."""
    source = jobs.header.path or jobs.header.name or "the job table"
    return f"{source}, line {int(jobs.line[row])}" if jobs.line[row] > 0 else source


def _cluster(spec, partition: str | None) -> Cluster:
    if isinstance(spec, Cluster):
        return spec.select(partition) if partition else spec
    return load_cluster(spec, partition)


@lru_cache(maxsize=8)
def _prepare_named(name: str, profile: str) -> Prepared:
    return prepare(name, profile)


def as_prepared(trace: str | os.PathLike | JobTable | Prepared,
                profile: str | Profile | None = None) -> Prepared:
    """`trace` prepared under `profile`: a Prepared is taken as it is (its own profile; a different
    `profile` is an error), anything else goes through `prepare` (default profile "rlscheduler").
    Bundled traces by short name are prepared once per process."""
    if isinstance(trace, Prepared):
        if profile is not None:
            name = profile.name if isinstance(profile, Profile) else profile
            if name != trace.profile.name:
                raise ValueError(
                    f"the trace was prepared under the {trace.profile.name!r} profile, not "
                    f"{name!r}; prepare it again or leave profile out"
                )
        return trace
    profile = "rlscheduler" if profile is None else profile
    if isinstance(trace, str) and isinstance(profile, str) and not os.path.exists(
            os.path.expanduser(trace)):
        return _prepare_named(trace, profile)
    return prepare(os.fspath(trace) if isinstance(trace, os.PathLike) else trace, profile)


#: the requested times a trace may be scheduled with besides its profile's (`estimated_trace`)
ESTIMATES = ("user", "perfect")


def needed_estimate(estimate: str | None, profile) -> str | None:
    """What an `estimate` ("perfect", "user", None) leaves to do under `profile`: None where the
    profile's cleaning gives every job its run time as its request already (schedinspector's, as
    SchedInspector's code does), under which the users' requests ("user") cannot be had."""
    if estimate not in (None, *ESTIMATES):
        raise ValueError(f"unknown estimate {estimate!r}; choose one of: {', '.join(ESTIMATES)}")
    prof = get_profile(profile)
    if prof.cleaning != "schedinspector":
        return estimate
    if estimate == "user":
        raise ValueError(f"estimate 'user': the {prof.name} profile schedules every job with its "
                         f"run time as its request, as SchedInspector's code does; for the "
                         f"users' requested times use the schedinspector-paper profile")
    return None


def estimated_trace(trace: str | os.PathLike | JobTable | Prepared, estimate: str | None = None,
                    profile: str | Profile = "schedinspector") -> Prepared:
    """The trace prepared under `profile` (a Prepared: its own), whose cleaning decides the
    requested times (the schedinspector profile's loader sets them to the run times), as
    SchedInspector schedules it. ``estimate="perfect"`` replaces every requested time by the run
    time under any profile; ``"user"`` asks for the trace's own requests, which a profile that
    replaces them cannot give (an error). Named traces are prepared once per process
    (`as_prepared`)."""
    given = isinstance(trace, Prepared)
    estimate = needed_estimate(estimate, trace.profile if given else profile)
    prepared = as_prepared(trace, None if given else profile)
    if estimate == "perfect":
        prepared = replace(prepared, jobs=prepared.jobs.with_columns(
            req_time=prepared.jobs.run_time.copy()))
    return prepared


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
    engine = make_engine(window(prepared, start, jobs), prepared.cluster, prepared.profile, backfill,
                         allocator=prepared.allocator)
    return engine.run(policy)


__all__ = ["ESTIMATES", "Prepared", "as_prepared", "estimated_trace", "needed_estimate", "prepare",
           "simulate", "window", "ClusterError"]
