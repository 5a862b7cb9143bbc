"""Building an engine: the job table, the cluster, the profile's loop, the backfilling, the allocator.

    engine = make_engine(jobs, cluster, profile="standard", backfill="easy")

`cluster` is a `NodePool` (identical whole nodes, counted: the fast path) or a heterogeneous
`Cluster` (nodes with cores, memory and GPUs; jobs placed on named nodes by an allocator). A job that
can never run on the cluster stops here with an error naming it.

This module sits beside `engine.py` rather than in it, so that the loops can import the engine
without a cycle.
"""

from __future__ import annotations

import numpy as np

from hpcsched.cluster.pool import ClusterError, NodePool
from hpcsched.sim.engine import Engine
from hpcsched.sim.profiles import Profile, check_backfill, get_profile
from hpcsched.sim.state import NodeState, PoolState
from hpcsched.workload.jobs import JobTable


def make_engine(
    jobs: JobTable,
    cluster,
    profile: str | Profile = "standard",
    backfill: str = "none",
    *,
    allocator=None,
    backfill_decisions: bool = False,
):
    """An engine for `jobs` (already cleaned under the profile's rules) on `cluster`.

    `allocator`: a name or an allocator object, for heterogeneous clusters (default: the profile's).
    `backfill_decisions`: under the cqsim loop, ask the policy for every backfill start (DRAS's
    level 2) instead of starting the candidates in queue order.
    """
    prof = get_profile(profile)
    check_backfill(backfill)
    if len(jobs) == 0:
        raise ValueError("nothing to simulate: the job table is empty")
    if prof.discrete:
        from hpcsched.sim.discrete import engine_for_trace

        if backfill != "none":
            raise ValueError(f"the {prof.name} profile has no backfilling (got --backfill "
                             f"{backfill}): its scheduler may reserve into the future itself")
        if backfill_decisions:
            raise ValueError(f"backfill decisions are CQSim's level 2; the {prof.name} profile's "
                             f"loop has none")
        return engine_for_trace(jobs, cluster, profile=prof)
    if isinstance(cluster, NodePool):
        if allocator is not None:
            resolve_allocator(allocator, prof)  # an unknown name fails with the list of names
        need = cluster.nodes_needed(jobs.procs)
        _check_pool(jobs, cluster, need)
        res = PoolState(cluster.nodes, need)
    else:
        res, need = _node_state(jobs, cluster, prof, allocator)
        if backfill == "schedgym":
            raise ValueError("schedgym backfilling counts identical nodes (SchedGym's); on a "
                             "heterogeneous cluster use easy or conservative")
    run = jobs.run_time
    executed = np.minimum(run, jobs.req_time) if prof.kill_at_request else run.copy()
    engine = Engine(jobs, res, prof, backfill, need, executed, cluster=cluster)
    engine.loop = _loop(prof)(engine)
    if backfill_decisions:
        if not hasattr(engine.loop, "agent_backfill"):
            raise ValueError(f"backfill decisions are CQSim's level 2; the {prof.name} profile's "
                             f"loop has none")
        engine.loop.agent_backfill = True
    return engine


def _loop(prof: Profile):
    if prof.commit:
        from hpcsched.sim.commit import CommitLoop

        return CommitLoop
    if prof.loop == "cqsim":
        from hpcsched.sim.cqsim import CqsimLoop

        return CqsimLoop
    from hpcsched.sim.passes import PassLoop

    return PassLoop


def _check_pool(jobs: JobTable, cluster: NodePool, need: np.ndarray) -> None:
    too_big = np.flatnonzero(need > cluster.nodes)
    if too_big.size:
        r = int(too_big[0])
        raise ClusterError(
            f"job {int(jobs.job_id[r])} (line {int(jobs.line[r])}) asks for {int(jobs.procs[r])} "
            f"processors, more than the cluster's {cluster.total_procs}; {too_big.size} such "
            f"job(s) in all (drop them with --drop-oversized)"
        )
    if np.any(need <= 0):
        r = int(np.flatnonzero(need <= 0)[0])
        raise ClusterError(f"job {int(jobs.job_id[r])} asks for no processors")


def _node_state(jobs: JobTable, cluster, prof: Profile, allocator):
    from hpcsched.cluster.request import job_requests, never_fits, why_never_fits

    count, per_node = job_requests(jobs, cluster)
    # a job holding nothing on its nodes would run beside anything: outside HPCsim (which runs
    # it) that is a trace error, as on a pool
    nothing = (count <= 0) | (~per_node.any(axis=1) if prof.dialect != "hpcsim" else False)
    bad = np.flatnonzero(never_fits(count, per_node, cluster) | nothing)
    if bad.size:
        r = int(bad[0])
        why = "asks for no processors" if nothing[r] else \
            why_never_fits(int(count[r]), per_node[r], cluster)
        raise ClusterError(
            f"job {int(jobs.job_id[r])} (line {int(jobs.line[r])}) {why}; {bad.size} such job(s) "
            f"in all (drop them with --drop-oversized)")
    return NodeState(cluster, count, per_node, resolve_allocator(allocator, prof)), count


def resolve_allocator(allocator, profile: str | Profile = "standard"):
    """An allocator object from a name (or an object), in the profile's dialect: under `hpcsim`,
    `best-fit` is HPCsim's best fit, and so on. None: the profile's default."""
    from hpcsched.cluster.allocate import get_allocator

    prof = get_profile(profile)
    if allocator is None:
        allocator = prof.allocator
    if isinstance(allocator, str) and prof.dialect and not allocator.startswith(prof.dialect):
        allocator = f"{prof.dialect}-{allocator}"
    return get_allocator(allocator)


__all__ = ["make_engine", "resolve_allocator"]
