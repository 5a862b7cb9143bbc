"""SchedInspector's further base heuristics, on a hand-computed queue.

Jobs: A (request 100 s, 4 procs, submitted at 0), B (300 s, 1 proc, at 10), C (50 s, 2 procs, at 20),
on a 4-node cluster, deciding at t = 100 (waits 100, 90, 80)."""

from types import SimpleNamespace

import numpy as np
import pytest

from hpcsched.policies.priority import get_policy, policy_names
from hpcsched.sim.factory import make_engine
from hpcsched.sim.run import prepare
from hpcsched.workload.jobs import JobTable, TraceHeader

A, B, C = 0, 1, 2


def jobs():
    return JobTable.from_columns(TraceHeader(name="abc", max_nodes=4, max_procs=4),
                                 submit=[0, 10, 20], run_time=[100, 300, 50],
                                 req_time=[100, 300, 50], req_procs=[4, 1, 2],
                                 alloc_procs=[4, 1, 2])


def view(now=100.0):
    j = jobs()
    return SimpleNamespace(queue=np.array([A, B, C]), now=now, jobs=j,
                           nodes_needed=j.procs.astype(np.int64), total_nodes=4)


@pytest.mark.parametrize("name, first", [
    ("smallest", B),      # 1 proc
    ("largest", A),       # 4 procs
    ("lpf", B),           # longest request, 300 s
    ("laf", A),           # areas 400, 300, 100
    ("lrf", B),           # ratios 25, 300, 25
    ("sexp", B),          # expansion (w + r) / r: 2.0, 1.3, 2.6
    ("lexp", C),
    ("multifactor", B),   # size factors 0, 0.75, 0.5; ages all tiny
])
def test_each_heuristic_picks_the_hand_computed_job(name, first):
    assert get_policy(name).select(view()) == first
    assert name in policy_names()


def test_multifactor_age_saturates_at_seven_days_and_can_outweigh_size():
    # A has waited 7 days (factor 1); B 3.5 days (0.5) with size 0.75: 1000 + 0 vs 500 + 750
    week = 7 * 24 * 3600.0
    v = view(now=week)
    v.jobs = v.jobs.with_columns(submit=np.array([0.0, week / 2, week]))
    p = get_policy("multifactor")
    np.testing.assert_allclose(p.keys(v), [-1000.0, -1250.0, -500.0])
    assert p.select(v) == B
    v.now = 3 * week  # ages saturate: A 1, B 1, C 1; size decides
    assert p.select(v) == B


def test_the_engine_ranks_the_queue_with_an_extra_heuristic():
    # job 0 fills the cluster for 1000 s; job 1 (1 proc, 10 s) is committed and starts at 1000;
    # jobs 2-4 have arrived meanwhile: LPF takes 3 (300 s) at once, then 2 (100 s, all 4 nodes)
    # when 1 and 3 are done (1300), then 4 (50 s) when 2 is done (1400); SJF would start 4 first
    j = JobTable.from_columns(TraceHeader(name="q", max_nodes=4, max_procs=4),
                              submit=[0, 1, 2, 2, 2], run_time=[1000, 10, 100, 300, 50],
                              req_time=[1000, 10, 100, 300, 50], req_procs=[4, 1, 4, 1, 2],
                              alloc_procs=[4, 1, 4, 1, 2])
    prep = prepare(j, "schedinspector")
    result = make_engine(prep.jobs, prep.cluster, "schedinspector").run(get_policy("lpf"))
    assert result.start.tolist() == [0, 1000, 1300, 1000, 1400]
