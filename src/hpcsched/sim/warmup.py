"""Compile every compiled loop and allocator once (or load them from numba's cache).

numba compiles a function on its first call in a process and caches the machine code beside the
module, so only the very first run on a machine pays (about half a minute on 2 cores; later
processes load the cache in a fraction of a second). `warm_up()` pays it up front, on tiny
tables, for a test session or a benchmark that should not time the compiler.
"""

from __future__ import annotations

import time

import numpy as np


def warm_up() -> float:
    """Run each compiled path once on a few jobs. Returns the seconds it took."""
    from hpcsched.cluster.nodes import Cluster
    from hpcsched.cluster.pool import NodePool
    from hpcsched.policies.priority import get_policy
    from hpcsched.sim.factory import make_engine
    from hpcsched.workload.jobs import JobTable

    t0 = time.perf_counter()
    jobs = JobTable.from_columns(submit=[0, 0, 1, 2], run_time=[5, 3, 2, 4],
                                 req_time=[6, 3, 2, 4], req_procs=[2, 1, 2, 1],
                                 alloc_procs=[2, 1, 2, 1], nodes=[2, 1, 1, 1],
                                 cores_per_node=[1, 1, 2, 1], mem_per_node=[0, 1, 0, 0],
                                 gpus_per_node=[0, 0, 0, 0])
    for backfill in ("none", "easy", "conservative", "schedgym"):
        make_engine(jobs, NodePool(2), "standard", backfill).run(get_policy("sjf"))
    cluster = Cluster.identical(2, 2, memory=4)
    for allocator in ("first-available", "best-fit", "topology"):
        for profile, policies in (("standard", ("fcfs",)), ("hpcsim", ("fcfs", "wfp3"))):
            dialect = "hpcsim" if profile == "hpcsim" else ""
            for backfill in ("none", "easy", "conservative")[:2 if dialect else 3]:
                for name in policies:
                    for compiled in (True, False):
                        make_engine(jobs, cluster, profile, backfill, allocator=allocator).run(
                            get_policy(name, dialect=dialect), compiled=compiled)
    return time.perf_counter() - t0


__all__ = ["warm_up"]
