"""Invariants of schedules on random heterogeneous clusters (hypothesis).

Clusters: 2-8 nodes of 1-3 kinds (cores, memory, GPUs), optionally under a switch tree, shared or
exclusive. Jobs: each asks for `count` nodes x a per-node request that some `count` nodes of the
empty cluster hold. Every check rebuilds what it needs from the jobs as generated and the result's
starts, ends and allocations (`hetero_helpers.check_schedule`), not from the engine's own state.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetero_helpers import check_schedule, deadline
from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.pool import NodePool
from hpcsched.policies.priority import get_policy
from hpcsched.sim.factory import make_engine
from hpcsched.workload.jobs import JobTable

ALLOCATORS = ["first-available", "best-fit", "topology"]
POLICIES = ["fcfs", "sjf", "f1", "wfp3", "random"]
HPCSIM_POLICIES = ["fcfs", "sjf", "f1", "wfp3", "unicep", "lcfs"]



@st.composite
def clusters(draw, exclusive=None):
    n_kinds = draw(st.integers(1, 3))
    kinds = [(draw(st.sampled_from([1, 2, 4, 8])), draw(st.sampled_from([4000, 16000, 64000])),
              draw(st.sampled_from([0, 0, 1, 2, 4]))) for _ in range(n_kinds)]
    n = draw(st.integers(max(2, n_kinds), 8))
    kind_of = [i % n_kinds for i in range(n_kinds)] + \
        draw(st.lists(st.integers(0, n_kinds - 1), min_size=n - n_kinds, max_size=n - n_kinds))
    kind_of = draw(st.permutations(kind_of))
    if exclusive is None:
        exclusive = draw(st.booleans())
    kw = {}
    if draw(st.booleans()):  # a spine over 1-3 leaves, each node under one leaf
        leaves = draw(st.integers(1, 3))
        kw = dict(leaf=[1 + draw(st.integers(0, leaves - 1)) for _ in range(n)],
                  switches=("spine",) + tuple(f"leaf{i}" for i in range(leaves)),
                  switch_children=(tuple(range(1, leaves + 1)),) + ((),) * leaves)
    return Cluster(names=tuple(f"h{i}" for i in range(n)), capacity=[kinds[k] for k in kind_of],
                   name="random", exclusive=exclusive, **kw)


@st.composite
def workloads(draw, cluster: Cluster, max_jobs: int = 20):
    """Jobs as columns, with (count, per-node request) computed here: each request is at most the
    capacity of one node kind, and `count` at most the nodes that hold it."""
    cap = np.asarray(cluster.capacity)
    n = draw(st.integers(1, max_jobs))
    max_gap = draw(st.sampled_from([0, 3, 10, 40]))
    submit = np.cumsum(draw(st.lists(st.integers(0, max_gap), min_size=n, max_size=n)))
    run = np.array(draw(st.lists(st.integers(1, 60), min_size=n, max_size=n)), dtype=float)
    factor = np.array(draw(st.lists(st.sampled_from([0.5, 1.0, 1.0, 2.0]), min_size=n,
                                    max_size=n)))
    req = np.maximum(1, np.round(run * factor))
    count, demand = [], []
    for _ in range(n):
        node = cap[draw(st.integers(0, len(cap) - 1))]
        want = np.array([draw(st.integers(1, int(node[0]))), draw(st.integers(0, int(node[1]))),
                         draw(st.integers(0, int(node[2])))])
        if draw(st.booleans()):  # often ask for a whole resource exactly: the boundary
            r = draw(st.integers(0, 2))
            want[r] = node[r]
        holders = int(np.all(cap >= want, axis=1).sum())
        count.append(draw(st.integers(1, holders)))
        demand.append(want)
    count, demand = np.array(count), np.array(demand)
    procs = count * demand[:, 0]
    jobs = JobTable.from_columns(submit=submit, run_time=run, req_time=req, req_procs=procs,
                                 alloc_procs=procs, nodes=count, cores_per_node=demand[:, 0],
                                 mem_per_node=demand[:, 1], gpus_per_node=demand[:, 2],
                                 user=np.arange(n) % 3)
    return jobs, count, demand


@st.composite
def cases(draw, exclusive=None, max_jobs=20):
    cluster = draw(clusters(exclusive))
    jobs, count, demand = draw(workloads(cluster, max_jobs))
    return cluster, jobs, count, demand


HUNG: list[str] = []  # the first run that hung, if one did


def simulate(jobs, cluster, profile, backfill, policy, **kw):
    """(engine, result) of one run, failing within seconds instead of hanging. Once one run has
    hung, every later one fails at once with its description: hypothesis's shrinking would
    otherwise wait out the deadline hundreds of times."""
    if HUNG:
        raise TimeoutError(HUNG[0])
    try:
        with deadline(20):
            engine = make_engine(jobs, cluster, profile, backfill, **kw)
            return engine, engine.run(policy)
    except TimeoutError:
        HUNG.append(f"a run hung: profile {profile}, backfill {backfill}, {kw}, "
                    f"{getattr(policy, 'name', policy)}, cluster {cluster!r}, "
                    f"jobs {dict((k, v.tolist()) for k, v in jobs.columns.items())}")
        raise


def expected_end(jobs, start):
    """Standard and hpcsim kill a job at its requested time."""
    return start + np.minimum(jobs.run_time, jobs.req_time)


def check(cluster, jobs, count, demand, engine, result):
    assert engine.started == len(jobs)  # every job started exactly once
    assert np.array_equal(result.end, expected_end(jobs, result.start))
    check_schedule(cluster, count, demand, jobs.submit, result.start, result.end,
                   result.allocations)
    assert not engine.running  # the run ends when every job has finished


@settings(max_examples=150, deadline=None)
@given(cases(), st.sampled_from(ALLOCATORS), st.sampled_from(["none", "easy", "conservative"]),
       st.sampled_from(POLICIES))
def test_schedules_are_possible_under_standard(case, allocator, backfill, policy):
    cluster, jobs, count, demand = case
    engine, result = simulate(jobs, cluster, "standard", backfill, get_policy(policy, seed=7),
                              allocator=allocator)
    check(cluster, jobs, count, demand, engine, result)
    if policy == "fcfs" and backfill == "none":
        # strict FCFS: no job starts before one submitted earlier (rows are in submit order)
        assert np.all(np.diff(result.start) >= 0)


@settings(max_examples=80, deadline=None)
@given(cases(exclusive=False), st.sampled_from(ALLOCATORS), st.sampled_from(["none", "easy"]),
       st.sampled_from(HPCSIM_POLICIES))
def test_schedules_are_possible_under_hpcsim(case, allocator, backfill, policy):
    """HPCsim's own backfilling and allocators, on shared nodes as HPCsim has them."""
    cluster, jobs, count, demand = case
    engine, result = simulate(jobs, cluster, "hpcsim", backfill,
                              get_policy(policy, dialect="hpcsim"), allocator=allocator)
    check(cluster, jobs, count, demand, engine, result)
    if policy == "fcfs" and backfill == "none":
        assert np.all(np.diff(result.start) >= 0)


@settings(max_examples=150, deadline=None)
@given(cases(), st.sampled_from(ALLOCATORS))
def test_easy_head_never_starts_after_its_reservation(case, allocator):
    """FCFS + EASY: the head leaves the queue only by starting, and jobs end by their request, so
    backfilling must never push it past the shadow time computed when it was reserved (every
    reservation made, at every pass)."""
    cluster, jobs, count, demand = case
    engine, result = simulate(jobs, cluster, "standard", "easy", get_policy("fcfs"),
                              allocator=allocator)
    for row, shadow in engine.reservations:
        assert result.start[row] <= shadow, (row, shadow, result.start[row])
    check(cluster, jobs, count, demand, engine, result)


@settings(max_examples=100, deadline=None)
@given(cases(), st.sampled_from(ALLOCATORS), st.sampled_from(POLICIES))
def test_conservative_keeps_every_reservation(case, allocator, policy):
    """Conservative backfilling on named nodes, shared (a reservation holds named nodes) or
    exclusive (idle nodes counted per kind): no job starts after the first reservation it was
    given (jobs end by their request, so every reservation can be kept)."""
    cluster, jobs, count, demand = case
    engine, result = simulate(jobs, cluster, "standard", "conservative",
                              get_policy(policy, seed=7), allocator=allocator)
    for row, start_by in engine.reservations:
        assert result.start[row] <= start_by, (row, start_by, result.start[row])
    check(cluster, jobs, count, demand, engine, result)


@st.composite
def identical_cases(draw):
    nodes = draw(st.integers(1, 8))
    cores = draw(st.sampled_from([1, 2, 4]))
    n = draw(st.integers(1, 25))
    max_gap = draw(st.sampled_from([0, 3, 10, 40]))
    submit = np.cumsum(draw(st.lists(st.integers(0, max_gap), min_size=n, max_size=n))) + 1
    run = np.array(draw(st.lists(st.integers(1, 100), min_size=n, max_size=n)))
    factor = np.array(draw(st.lists(st.sampled_from([0.5, 1.0, 1.5, 3.0]), min_size=n,
                                    max_size=n)))
    req = np.maximum(1, np.round(run * factor))
    procs = np.array(draw(st.lists(st.integers(1, nodes * cores), min_size=n, max_size=n)))
    jobs = JobTable.from_columns(submit=submit, run_time=run, req_time=req, req_procs=procs,
                                 alloc_procs=procs, user=np.arange(n) % 3)
    return nodes, cores, jobs


@settings(max_examples=120, deadline=None)
@given(identical_cases(), st.sampled_from(ALLOCATORS), st.sampled_from(["none", "easy",
                                                                        "conservative"]),
       st.sampled_from(POLICIES + ["lcfs", "saf", "unicep"]))
def test_identical_exclusive_nodes_schedule_as_the_pool(case, allocator, backfill, policy):
    """On identical nodes with whole-node allocation which nodes a job gets cannot matter, so the
    named-node engine must give the counting pool's start times exactly, whatever the allocator."""
    nodes, cores, jobs = case
    want = simulate(jobs, NodePool(nodes, cores), "standard", backfill,
                    get_policy(policy, seed=3))[1].start
    got = simulate(jobs, Cluster.identical(nodes, cores, exclusive=True), "standard", backfill,
                   get_policy(policy, seed=3), allocator=allocator)[1].start
    assert got.tolist() == want.tolist()


@settings(max_examples=60, deadline=None)
@given(cases(), st.sampled_from(ALLOCATORS), st.sampled_from(["none", "easy", "conservative"]),
       st.sampled_from(POLICIES))
def test_no_waiting_on_a_machine_big_enough_for_everything(case, allocator, backfill, policy):
    """One node per node asked for in the whole trace, each as big as the largest of every
    resource: however jobs are placed, `count` idle nodes are always left for the next one."""
    cluster, jobs, count, demand = case
    big = Cluster(names=tuple(f"b{i}" for i in range(int(count.sum()))),
                  capacity=np.tile(np.asarray(cluster.capacity).max(axis=0), (int(count.sum()), 1)),
                  exclusive=cluster.exclusive, name="big")
    engine, result = simulate(jobs, big, "standard", backfill, get_policy(policy, seed=1),
                              allocator=allocator)
    assert result.start.tolist() == jobs.submit.tolist()
    check(big, jobs, count, demand, engine, result)


@settings(max_examples=40, deadline=None)
@given(cases(exclusive=False), st.sampled_from(ALLOCATORS), st.sampled_from(["none", "easy"]),
       st.sampled_from(HPCSIM_POLICIES))
def test_no_waiting_on_a_big_machine_under_hpcsim(case, allocator, backfill, policy):
    cluster, jobs, count, demand = case
    big = Cluster(names=tuple(f"b{i}" for i in range(int(count.sum()))),
                  capacity=np.tile(np.asarray(cluster.capacity).max(axis=0), (int(count.sum()), 1)),
                  name="big")
    engine, result = simulate(jobs, big, "hpcsim", backfill,
                              get_policy(policy, dialect="hpcsim"), allocator=allocator)
    assert result.start.tolist() == jobs.submit.tolist()


@pytest.mark.parametrize("exclusive", [False, True])
def test_checker_catches_an_overfull_node(exclusive):
    """The independent checker itself must fail on a schedule that overfills a node, and accept
    one where a job ends exactly when another starts on the same node."""
    cluster = Cluster(names=("x", "y"), capacity=[[4, 1000, 0], [4, 1000, 1]],
                      exclusive=exclusive)
    count, demand = np.array([1, 1]), np.array([[3, 10, 0], [2, 10, 0]])
    submit = np.array([0.0, 0.0])
    # back to back on x: fine
    check_schedule(cluster, count, demand, submit, np.array([0.0, 5.0]), np.array([5.0, 9.0]),
                   [[0], [0]])
    # overlapping on x by one second: 5 cores on a 4-core node (and two jobs on an exclusive one)
    with pytest.raises(AssertionError):
        check_schedule(cluster, count, demand, submit, np.array([0.0, 4.0]),
                       np.array([5.0, 9.0]), [[0], [0]])
    with pytest.raises(AssertionError):  # started before it was submitted
        check_schedule(cluster, count, demand, np.array([0.0, 6.0]), np.array([0.0, 5.0]),
                       np.array([5.0, 9.0]), [[0], [0]])
    with pytest.raises(AssertionError):  # on one node when it asks for two
        check_schedule(cluster, np.array([1, 2]), demand, submit, np.array([0.0, 5.0]),
                       np.array([5.0, 9.0]), [[0], [1]])
