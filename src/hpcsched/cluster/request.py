"""How jobs map to nodes: a count of nodes and a per-node request vector for each job.

A Slurm-like job says it itself (`nodes`, `cores_per_node`, `mem_per_node`, `gpus_per_node` in the
JobTable). An SWF job asks for processors only; it is given whole nodes as the identical-node pool
gives them, so that on identical nodes both paths agree:

    nodes          = ceil(procs / C)
    cores per node = ceil(procs / nodes)
    memory per node = ceil(req_mem * cores per node / 1024) MB   (req_mem: KB per processor; 0 if unknown)
    GPUs per node  = 0

C is the core count of the cluster's *smallest* node, so the per-node request fits on every node
(a job never becomes impossible because it was cut for the big nodes). Each request column is used
where the trace gives it (>= 0; `nodes` >= 1) and derived as above where it is -1. Memory per node
may be fractional in the trace (a job total divided by its nodes): it is rounded *up* to a whole MB,
so a job never gets less than it asked for. A cluster that gives no node any memory does not
schedule memory: every memory request is then 0 (otherwise every SWF job with a memory field would
be impossible on `Cluster.identical(n, cores)`).
"""

from __future__ import annotations

import numpy as np

from hpcsched.cluster.nodes import Cluster
from hpcsched.workload.jobs import JobTable


def _ceil(values: np.ndarray) -> np.ndarray:
    # round to micro-units first: a total split over nodes and multiplied back can land a hair
    # above a whole number (3000.0000000004 must stay 3000)
    return np.ceil(np.round(values, 6)).astype(np.int64)


def job_requests(jobs: JobTable, cluster: Cluster) -> tuple[np.ndarray, np.ndarray]:
    """(count (n,) int64, per_node (n, R) int64): how many nodes each job needs and what it needs on
    each, columns as `cluster.resources`. Jobs with no processors (procs <= 0 and no node count)
    get 0 nodes."""
    n = len(jobs)
    cores_col = cluster.resources.index("cores")
    smallest = int(cluster.capacity[:, cores_col].min())
    procs = np.maximum(np.asarray(jobs.procs, dtype=np.float64), 0.0)

    given_nodes = np.asarray(jobs.nodes, dtype=np.float64)
    count = np.where(given_nodes >= 1, _ceil(given_nodes), _ceil(procs / smallest))
    safe = np.maximum(count, 1)

    per_node = np.zeros((n, len(cluster.resources)), dtype=np.int64)
    given_cores = np.asarray(jobs.cores_per_node, dtype=np.float64)
    cores = np.where(given_cores >= 0, _ceil(given_cores), _ceil(procs / safe))
    cores = np.where(count > 0, cores, 0)
    per_node[:, cores_col] = cores

    m = cluster.resource_index("memory")
    if m is not None and cluster.capacity[:, m].any():
        given_mem = np.asarray(jobs.mem_per_node, dtype=np.float64)
        req_mem = np.asarray(jobs.req_mem, dtype=np.float64)  # KB per processor, SWF field 10
        from_swf = np.where(req_mem > 0, _ceil(req_mem * cores / 1024.0), 0)
        per_node[:, m] = np.where(given_mem >= 0, _ceil(given_mem), from_swf)

    g = cluster.resource_index("gpus")
    if g is not None:
        given_gpus = np.asarray(jobs.gpus_per_node, dtype=np.float64)
        per_node[:, g] = np.where(given_gpus >= 0, _ceil(given_gpus), 0)
    return count.astype(np.int64), per_node


def nodes_that_hold(per_node: np.ndarray, cluster: Cluster) -> np.ndarray:
    """(n,) how many nodes of the cluster have a capacity that holds each per-node request (when
    empty). Works on node kinds, so it costs n x kinds, not n x nodes."""
    per_node = np.atleast_2d(np.asarray(per_node))
    holds = np.all(cluster.kind_capacity[None, :, :] >= per_node[:, None, :], axis=2)
    return holds.astype(np.int64) @ cluster.kind_counts


def never_fits(count: np.ndarray, per_node: np.ndarray, cluster: Cluster) -> np.ndarray:
    """(n,) bool: the jobs that can never start on this cluster, even when it is empty: fewer than
    `count` nodes have a capacity holding `per_node`. (An exclusive cluster gives a job whole nodes,
    which hold the request exactly when their capacity does: the same test.)"""
    return nodes_that_hold(per_node, cluster) < np.asarray(count)


def why_never_fits(count: int, per_node: np.ndarray, cluster: Cluster) -> str:
    """A sentence saying why one job can never fit, for error messages."""
    per_node = np.asarray(per_node)
    asks = ", ".join(f"{int(a)} {'MB memory' if r == 'memory' else r}"
                     for r, a in zip(cluster.resources, per_node.tolist()) if a)
    held = int(nodes_that_hold(per_node, cluster)[0])
    if held == 0:
        short = [f"{r} (largest node: {int(cluster.capacity[:, i].max())})"
                 for i, r in enumerate(cluster.resources)
                 if per_node[i] > cluster.capacity[:, i].max()]
        reason = f"no node has enough {' and '.join(short)}" if short else \
            "no single node has all of it"
    else:
        reason = f"only {held} node(s) of {cluster.name} can hold that"
    return f"asks for {int(count)} node(s) with {asks or 'nothing'} each: {reason}"
