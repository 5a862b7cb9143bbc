"""Helpers for the tests of heterogeneous clusters: a small mixed cluster, job tables from rows, and
an independent check of a finished schedule (rebuilt from starts, ends and allocations only)."""

from __future__ import annotations

import contextlib
import signal
from typing import NamedTuple

import numpy as np

from hpcsched.cluster.nodes import Cluster
from hpcsched.workload.jobs import JobTable

A, B, C = 0, 1, 2  # node indices of `mixed_cluster`


@contextlib.contextmanager
def deadline(seconds: int):
    """Fail instead of hanging: after `seconds`, a SIGALRM raises TimeoutError in the test (a loop
    that never advances its clock would otherwise stall the suite). No-op where SIGALRM is
    missing."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expired(signum, frame):
        raise TimeoutError(f"still running after {seconds} s: a hang?")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def mixed_cluster(*, exclusive: bool = False, switches: bool = False) -> Cluster:
    """Three nodes of three kinds (memory in MB):

        A: 8 cores, 32000 MB          B: 4 cores, 64000 MB          C: 4 cores, 16000 MB, 2 GPUs

    With `switches`, a spine over two leaves: L1 holds A and B, L2 holds C."""
    kw = {}
    if switches:
        kw = dict(leaf=[1, 1, 2], switches=("spine", "L1", "L2"), switch_children=((1, 2), (), ()))
    return Cluster(names=("A", "B", "C"),
                   capacity=[[8, 32000, 0], [4, 64000, 0], [4, 16000, 2]],
                   name="mixed", exclusive=exclusive, **kw)


class Job(NamedTuple):
    submit: float
    run: float
    nodes: int = 1
    cores: int = 1
    mem: int = 0
    gpus: int = 0
    req: float | None = None  # requested time; the run time if None


def table(rows) -> JobTable:
    """A JobTable of `Job`s (or tuples in `Job`'s field order)."""
    rows = [Job(*r) for r in rows]
    col = lambda f: [getattr(r, f) for r in rows]  # noqa: E731
    procs = [r.nodes * r.cores for r in rows]
    return JobTable.from_columns(
        submit=col("submit"), run_time=col("run"),
        req_time=[r.run if r.req is None else r.req for r in rows],
        req_procs=procs, alloc_procs=procs, nodes=col("nodes"), cores_per_node=col("cores"),
        mem_per_node=col("mem"), gpus_per_node=col("gpus"), user=[1] * len(rows))


def check_schedule(cluster: Cluster, count, demand, submit, start, end, allocations) -> None:
    """Assert that a finished schedule is possible, from its starts, ends and allocations alone:

    - every job started once, not before its submission, on exactly `count[j]` distinct nodes;
    - at every instant, on every node and for every resource, what the running jobs hold is at
      most the node's capacity; a job ending at t frees its share for one starting at t;
    - on an exclusive cluster no two jobs hold one node at once;
    - so every job had its request free on each of its nodes when it started (the usage after its
      start, which includes it, fits).
    """
    cap = np.asarray(cluster.capacity)
    n = len(start)
    assert np.all(np.isfinite(start)), f"jobs never started: {np.flatnonzero(~np.isfinite(start))}"
    assert np.all(start >= submit), f"started before submission: {np.flatnonzero(start < submit)}"
    for j in range(n):
        nodes = list(allocations[j])
        assert len(nodes) == count[j], f"job {j}: {len(nodes)} nodes, asks {count[j]}"
        assert len(set(nodes)) == len(nodes), f"job {j}: a node twice in {nodes}"
        assert all(0 <= i < len(cap) for i in nodes)
    # events: at one instant, ends before starts (a job ending at t frees its share for one
    # starting at t), and a job that runs no time at all ends after it starts
    events = sorted([(float(end[j]), 0 if end[j] > start[j] else 2, j) for j in range(n)]
                    + [(float(start[j]), 1, j) for j in range(n)])
    used = np.zeros_like(cap)
    holders = [set() for _ in range(len(cap))]
    for t, kind, j in events:
        take = cap[list(allocations[j])] if cluster.exclusive else \
            np.tile(np.asarray(demand[j]), (count[j], 1))
        if kind != 1:
            used[list(allocations[j])] -= take
            for i in allocations[j]:
                holders[i].discard(j)
            continue
        for i in allocations[j]:
            if cluster.exclusive:
                assert not holders[i], f"t={t}: job {j} shares exclusive node {i} with {holders[i]}"
            holders[i].add(j)
        used[list(allocations[j])] += take
        over = np.argwhere(used > cap)
        assert not len(over), (f"t={t}: job {j} starts and node {over[0][0]} holds "
                               f"{used[over[0][0]].tolist()} > capacity {cap[over[0][0]].tolist()}")
    assert not used.any()
