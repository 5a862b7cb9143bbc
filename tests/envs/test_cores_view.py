"""What RLScheduler and DRAS models see on a cluster of named nodes (`envs.cores_view`): on a small
hand-made case, the state a model sees on the named nodes is, decision by decision, the one it
sees on the pool of single cores that `trace convert --cores-of` writes for the same jobs; the
one thing the named nodes add is whether a job fits them."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from hpcsched.cluster.cores import cores_table
from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.pool import NodePool
from hpcsched.envs.cores_view import CoresView, cores_view, observed_norm
from hpcsched.envs.dras import DrasObserver
from hpcsched.envs.observation import HIGH, LOW, observe
from hpcsched.sim.decisions import Pick
from hpcsched.sim.factory import make_engine
from hpcsched.sim.run import prepare
from hpcsched.workload.jobs import JobTable, TraceHeader
from hpcsched.workload.swf import write_swf

WINDOW = 4


def hand_jobs() -> JobTable:
    """On two nodes of 4 cores (8 cores):

    job 1 at 0 s: 2 nodes x 4 cores (8; its NCPUS says 7), runs 100 s: the machine is full
    jobs 2-5 arrive at 10, 20, 30, 40 s and wait: 1 x 3, 1 x 4, 1 x 1, 1 x 2
    at 100 s, in arrival order, 2 (3 on one node), 3 (4 on the other) and 4 (1 beside 2) start;
    5 (2 cores) fits neither the nodes nor the one free core and waits until 3 ends at 130 s.
    No job ever fits the free cores without fitting the nodes, so the pool runs the same
    schedule."""
    return JobTable.from_columns(
        TraceHeader(name="hand"),
        submit=[0, 10, 20, 30, 40], run_time=[100, 50, 30, 20, 10],
        req_time=[100, 60, 40, 20, 15], req_procs=[7, 3, 4, 1, 2], alloc_procs=[7, 3, 4, 1, 2],
        user=[1, 2, 3, 2, 1], nodes=[2, 1, 1, 1, 1], cores_per_node=[4, 3, 4, 1, 2],
        mem_per_node=[0, 0, 0, 0, 0], gpus_per_node=[0, 0, 0, 0, 0])


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """(the jobs prepared on the named nodes, the same jobs written as cores and prepared as the
    pool a trainer reads them into)."""
    cluster = Cluster.identical(2, 4)
    named = prepare(hand_jobs(), "standard", cluster=cluster)
    path = tmp_path_factory.mktemp("cores") / "hand-cores.swf"
    write_swf(cores_table(named.jobs, cluster)[0], path)
    pool = prepare(str(path), "standard")
    assert pool.cluster == NodePool(8, 1)
    return named, pool


def fcfs_run(prepared, see, **engine):
    """Step an engine of `prepared` under standard EASY picking the oldest waiting job every time;
    `see(view)` at each decision. Returns the decision times and the starts."""
    e = make_engine(prepared.jobs, prepared.cluster, "standard", "easy", **engine)
    times = []
    while (view := e.next_decision()) is not None:
        times.append(view.now)
        see(view)
        e.apply(Pick(int(view.queue[0])))
    return times, e.result().start


def test_the_schedule_of_the_hand_case_is_the_docstrings(both):
    named, pool = both
    times, start = fcfs_run(named, lambda v: None, allocator="best-fit")
    assert start.tolist() == [0, 100, 100, 100, 130]
    assert fcfs_run(pool, lambda v: None)[1].tolist() == start.tolist()
    assert times == [0, 10, 20, 30, 40, 100, 100, 100, 100, 120, 130]


def test_a_dras_model_sees_the_pools_state_on_the_named_nodes(both):
    named, pool = both
    seen = []

    class Recorder:  # an agent that records what it is shown and takes the oldest job
        rows = 2 * WINDOW + 8

        def predict(self, obs, mask):
            seen.append(obs.copy())
            return 0

    from hpcsched.agents.dras_policy import DrasPolicy

    policy = DrasPolicy(Recorder(), SimpleNamespace(algo="pg", window=WINDOW), named, "dras:hand")
    assert not policy.decides_backfill  # the pass's EASY backfills on named nodes
    e = make_engine(named.jobs, named.cluster, "standard", "easy", allocator="best-fit")
    named_times = []
    while (view := e.next_decision()) is not None:
        named_times.append(view.now)
        e.apply(e.choose(policy, view))
    assert e.result().start.tolist() == [0, 100, 100, 100, 130]

    observer = DrasObserver(8, WINDOW, float(pool.jobs.req_time.max()), True)
    expected = []

    def on_pool(view):
        rows, _ = observer.offer(view)
        out = np.zeros(observer.rows_shape, dtype=np.float32)
        observer.observe(view, rows, out)
        expected.append(out)

    pool_times, _ = fcfs_run(pool, on_pool)
    assert named_times == pool_times and len(seen) == len(expected) == 11
    for got, want in zip(seen, expected):
        np.testing.assert_array_equal(got, want)
    # what that state is, read by hand at 10 s: job 2 (3 cores) in slot 0, the 8 cores busy with
    # job 1 until 100 s (a job of 2 nodes holds 8 cores, not its 7 processors nor its 2 nodes)
    first = seen[1]
    assert first[0, 0] == pytest.approx(np.log2(4) / np.log2(9))
    w = 2 * WINDOW
    assert (first[w:, 0] == 0).all() and (first[w:, 1] > 0).all()
    assert len(set(first[w:, 1].tolist())) == 1


def test_an_rlscheduler_model_sees_the_pools_state_on_the_named_nodes(both, monkeypatch):
    from hpcsched.agents.nets import make_policy
    from hpcsched.agents.rlscheduler_policy import RLPolicy

    named, pool = both
    assert observed_norm(named)["max_procs"] == 8 == pool.report.norm["max_procs"]
    policy = RLPolicy(make_policy("kernel", 8, 8), observed_norm(named), slots=8)
    seen = []

    def logits(obs, mask):
        seen.append(obs.copy())
        return np.where(mask, 0.0, -np.inf)  # a tie: the earliest slot, the oldest job

    monkeypatch.setattr(policy, "logits", logits)
    e = make_engine(named.jobs, named.cluster, "standard", "easy", allocator="best-fit")
    while (view := e.next_decision()) is not None:
        e.apply(e.choose(policy, view))
    assert e.result().start.tolist() == [0, 100, 100, 100, 130]
    expected = []
    fcfs_run(pool, lambda v: expected.append(observe(v, pool.report.norm, slots=8)[0]))
    assert len(seen) == len(expected) == 11
    for got, want in zip(seen, expected):
        np.testing.assert_array_equal(got, want)
    assert seen[1][0, 2] == pytest.approx(3 / 8)  # job 2's 3 cores of the machine's 8


def test_whether_a_job_can_start_is_whether_it_fits_the_nodes(monkeypatch):
    """Two jobs of 3 cores on two 4-core nodes leave a core free on each: a job of 2 cores fits
    the 2 free cores, not the nodes; a job of 1 core fits both."""
    from hpcsched.agents.nets import make_policy
    from hpcsched.agents.rlscheduler_policy import RLPolicy

    cluster = Cluster.identical(2, 4)
    jobs = JobTable.from_columns(
        submit=[0, 0, 1, 1], run_time=[100, 100, 10, 10], req_time=[100, 100, 10, 10],
        req_procs=[3, 3, 2, 1], alloc_procs=[3, 3, 2, 1], user=[1, 1, 1, 1],
        nodes=[1, 1, 1, 1], cores_per_node=[3, 3, 2, 1])
    named = prepare(jobs, "standard", cluster=cluster)
    e = make_engine(named.jobs, cluster, "standard", "easy", allocator="best-fit")
    assert e.next_decision().queue.tolist() == [0, 1]
    e.apply(Pick(0))
    view = e.next_decision()
    assert view.queue.tolist() == [1] and view.now == 0
    e.apply(Pick(1))
    view = e.next_decision()
    assert view.now == 1 and view.queue.tolist() == [2, 3]
    seen = cores_view(view)
    assert isinstance(seen, CoresView) and seen.free_nodes == 2 and view.free_nodes == 0
    assert seen.nodes_needed[2] <= seen.free_nodes  # the free cores would hold job 3
    assert seen.fits(np.array([2, 3])).tolist() == [False, True]
    policy = RLPolicy(make_policy("kernel", 8, 8), observed_norm(named), slots=8)
    got = []
    monkeypatch.setattr(policy, "logits",
                        lambda obs, mask: got.append(obs.copy()) or np.where(mask, 0.0, -np.inf))
    policy.select(view)
    assert got[0][0, -1] == LOW and got[0][1, -1] == HIGH


def test_on_a_pool_the_view_is_left_as_it_is():
    jobs = JobTable.from_columns(TraceHeader(max_nodes=4, max_procs=4), submit=[0, 1],
                                 run_time=[5, 5], req_time=[5, 5], req_procs=[4, 1],
                                 alloc_procs=[4, 1])
    p = prepare(jobs, "standard")
    e = make_engine(p.jobs, p.cluster, "standard", "easy")
    view = e.next_decision()
    assert cores_view(view) is view and observed_norm(p) == p.report.norm
