"""Jobs seen as total cores: a cluster of named nodes as the pool of single cores that a scheduler
learned on processor counts (RLScheduler, DRAS) knows.

    table, report = cores_table(prepared.jobs, cluster)     # an SWF table of processors
    print(report.summary())                                 # what the view left out, counted
    norm = cores_norm(prepared.report.norm, cluster)        # RLScheduler's constants of that table

A job that asks for `l` nodes with `h` cores on each is, in this view, a job of `l x h` processors:
the cores the engine allocates to it (`cluster.request.job_requests`), so that a Slurm job whose
NCPUS does not divide among its nodes counts the rounded-up cores it holds. The machine is one pool
of the cluster's total cores, each a node of one processor: an SWF header with MaxProcs = MaxNodes
= total cores sizes exactly that pool under every profile (SchedGym's MaxNodes nodes of MaxProcs /
MaxNodes processors; CQSim's MaxProcs single-processor nodes).

What the view cannot hold is left out and counted in `CoresReport`: memory and GPU requests (the
pool has neither), the node count of multi-node jobs (their cores are summed), and the cores that
rounding to whole cores per node added. A job can be no larger than the machine in this view when
it fits the cluster at all (`l` nodes with `h` cores each hold at most the total); `cores_table`
refuses one that does not (`request.never_fits`), naming it, since the pool would run it where the
cluster never could.

On an exclusive cluster a job holds its nodes whole, not its request, and its cores in this view
would not be what it takes from the machine: refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.pool import ClusterError
from hpcsched.cluster.request import job_requests, never_fits, why_never_fits
from hpcsched.workload.jobs import JobTable, TraceHeader


def total_cores(cluster: Cluster) -> int:
    """The machine of the view: the sum of every node's cores."""
    return int(cluster.total[cluster.resources.index("cores")])


def check_shared(cluster: Cluster) -> None:
    """Refuse an exclusive cluster (see the module docstring)."""
    if cluster.exclusive:
        raise ClusterError(f"{cluster.name} allocates whole nodes (exclusive): a job holds its "
                           f"nodes, not its cores, so it cannot be seen as a count of cores")


def job_cores(jobs: JobTable, cluster: Cluster) -> np.ndarray:
    """(n,) int64: each job's total cores on `cluster`, its node count times its cores per node as
    the engine allocates them."""
    return _cores(cluster, *job_requests(jobs, cluster))


def _cores(cluster: Cluster, count: np.ndarray, per_node: np.ndarray) -> np.ndarray:
    """Total cores from the requests `job_requests` gives: node count x cores per node."""
    return count * per_node[:, cluster.resources.index("cores")]


@dataclass(frozen=True)
class CoresReport:
    """What seeing `jobs` jobs as total cores of `cluster` (`cores` in all) changed or left out."""

    cluster: str
    cores: int  # the machine: the cluster's total cores
    jobs: int
    multi_node: int  # jobs on several nodes: their node count is gone, their cores summed
    rounded: int  # jobs whose nodes x cores per node exceeds their processor count
    memory: int  # jobs asking for memory, which the view does not see
    gpus: int  # jobs asking for GPUs, which the view does not see
    largest: int  # the largest job, in cores
    ignored: dict = field(default_factory=dict)  # resources other than cores, memory, GPUs: jobs

    def summary(self) -> str:
        parts = [f"{self.jobs} jobs seen as total cores of {self.cluster} (a pool of "
                 f"{self.cores} single cores; the largest job {self.largest} cores)",
                 f"memory requests ignored: {self.memory} job(s)",
                 f"GPU requests ignored: {self.gpus} job(s)",
                 f"multi-node jobs as their summed cores: {self.multi_node}",
                 f"processors rounded up to whole cores per node: {self.rounded}"]
        parts += [f"{r} requests ignored: {n} job(s)" for r, n in self.ignored.items()]
        return "; ".join(parts)


def cores_report(jobs: JobTable, cluster: Cluster) -> CoresReport:
    """`CoresReport` of `jobs` (which must fit `cluster`) on `cluster`."""
    return _report(jobs, cluster, *job_requests(jobs, cluster))


def _report(jobs: JobTable, cluster: Cluster, count: np.ndarray, per_node: np.ndarray
            ) -> CoresReport:
    """`cores_report` from the jobs' requests (`job_requests`) already at hand."""
    cores = _cores(cluster, count, per_node)
    asked = {r: int(np.count_nonzero(per_node[:, i] > 0))
             for i, r in enumerate(cluster.resources) if r != "cores"}
    procs = np.asarray(jobs.procs, dtype=np.float64)
    return CoresReport(cluster.name, total_cores(cluster), len(jobs),
                       multi_node=int(np.count_nonzero(count > 1)),
                       rounded=int(np.count_nonzero((procs > 0) & (cores > procs))),
                       memory=asked.pop("memory", 0), gpus=asked.pop("gpus", 0),
                       largest=int(cores.max()) if len(cores) else 0, ignored=asked)


def cores_table(jobs: JobTable, cluster: Cluster, name: str | None = None
                ) -> tuple[JobTable, CoresReport]:
    """`jobs` as SWF jobs of their total cores (`job_cores`) on a machine of `cluster`'s total
    cores, and what that left out (`CoresReport`).

    The table keeps every row in order with its times, user, group, status, queue and partition;
    its requested, allocated and effective processors are the job's cores; its request columns
    (nodes, cores, memory and GPUs per node) and SWF's memory fields are unknown (-1). Its header
    says MaxProcs = MaxNodes = total cores and nothing else of the source but its start time.
    A job that can never run on `cluster` is refused with its id and why."""
    check_shared(cluster)
    count, per_node = job_requests(jobs, cluster)
    bad = np.flatnonzero(never_fits(count, per_node, cluster) | (count <= 0))
    if bad.size:
        r = int(bad[0])
        why = "asks for no processors" if count[r] <= 0 else \
            why_never_fits(int(count[r]), per_node[r], cluster)
        raise ClusterError(f"job {int(jobs.job_id[r])} {why}; {bad.size} such job(s) in all: "
                           f"drop them first (--drop-oversized)")
    report = _report(jobs, cluster, count, per_node)
    cores = _cores(cluster, count, per_node).astype(np.float64)
    total = total_cores(cluster)
    unknown = np.full(len(jobs), -1.0)
    table = jobs.with_columns(req_procs=cores, alloc_procs=cores, procs=cores, used_mem=unknown,
                              req_mem=unknown, nodes=unknown, cores_per_node=unknown,
                              mem_per_node=unknown, gpus_per_node=unknown)
    label = name or f"{jobs.header.name or 'jobs'}-cores"
    start = jobs.header.unix_start_time
    comments = ["; Version: 2.2",
                f"; Note: {len(jobs)} jobs of {jobs.header.name or 'a trace'} seen as total "
                f"cores of {cluster.name} (nodes x cores per node; memory and GPUs left out)",
                f"; Note: written by hpcsched (trace convert --cores-of {cluster.name})",
                f"; MaxJobs: {len(jobs)}", f"; MaxRecords: {len(jobs)}",
                f"; MaxNodes: {total}", f"; MaxProcs: {total}"]
    if start is not None:
        comments.append(f"; UnixStartTime: {start}")
    header = TraceHeader(name=label, max_nodes=total, max_procs=total, unix_start_time=start,
                         comments=tuple(comments))
    return JobTable(table.columns, header), report


def cores_norm(norm: dict[str, float], cluster: Cluster) -> dict[str, float]:
    """RLScheduler's normalisation constants (`workload.cleaning.norm_constants`) of the cores view
    of a table whose own constants are `norm`: the same times, users, groups and executables;
    processors divided by the machine's total cores (its header's MaxProcs); no memory."""
    return {**norm, "max_procs": float(total_cores(cluster)), "max_req_mem": 0.0}


__all__ = ["CoresReport", "check_shared", "cores_norm", "cores_report", "cores_table", "job_cores",
           "total_cores"]
