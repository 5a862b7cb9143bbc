"""Wang's thesis Ch. 3 metrics (time-averaged queue length and job load, and the same metrics seen
over an interval) and baselines (FCFS, LCFS and Ch. 3's "SJF", fewest cores first: our `sqf`),
each worked out by hand."""

import numpy as np
import pytest

from hpcsched.cluster.pool import NodePool
from hpcsched.experiments.compare import summarize
from hpcsched.policies.priority import get_policy
from hpcsched.sim.factory import make_engine
from hpcsched.sim.metrics import interval_metrics, schedule_metrics
from hpcsched.workload.jobs import JobTable


def table(rows):
    """rows: (submit, run, procs, req)."""
    return JobTable.from_columns(submit=[r[0] for r in rows], run_time=[r[1] for r in rows],
                                 req_procs=[r[2] for r in rows], alloc_procs=[r[2] for r in rows],
                                 req_time=[r[3] for r in rows], user=[1] * len(rows))


# 4 processors. A (2 procs, asks 20 s) runs [0, 10); B (4 procs, asks 5) waits [0, 10) and runs
# [10, 15); C (1 proc, asks 10) arrives at 5, waits [5, 15) and runs [15, 25). This is FCFS without
# backfilling (B blocks C), the schedule the engine test below finds.
ABC = [(0, 10, 2, 20), (0, 5, 4, 5), (5, 10, 1, 10)]
ABC_START = [0.0, 10.0, 15.0]


def test_queue_length_and_job_load_over_the_makespan():
    jobs = table(ABC)
    m = schedule_metrics(jobs, np.array(ABC_START), jobs.run_time.copy(), total_procs=4)
    # span 0..25. Waiting: B on [0, 10), C on [5, 15): integral 10 + 10 = 20 -> 20 / 25
    assert m["queue_length"] == pytest.approx(0.8)
    # queued requested work: B 4 x 5 for 10 s, C 1 x 10 for 10 s: (200 + 100) / (25 x 4)
    assert m["job_load"] == pytest.approx(3.0)
    assert m["utilization"] == pytest.approx((2 * 10 + 4 * 5 + 1 * 10) / (25 * 4))
    assert m["wait"] == pytest.approx(20 / 3)


def test_the_engine_schedule_gives_the_same_metrics():
    engine = make_engine(table(ABC), NodePool(4), "standard", "none")
    result = engine.run(get_policy("fcfs"))
    assert result.start.tolist() == ABC_START
    assert result.metrics["queue_length"] == pytest.approx(0.8)
    assert result.metrics["job_load"] == pytest.approx(3.0)
    # a comparison row averages them over its windows
    row = summarize([result, result])
    assert row["queue_length"] == pytest.approx(0.8) and row["job_load"] == pytest.approx(3.0)


def test_interval_metrics_cut_at_a_time_count_jobs_still_waiting():
    jobs = table(ABC)
    start, run = np.array(ABC_START), jobs.run_time.copy()
    m = interval_metrics(jobs, start, run, total_procs=4, t0=0.0, t1=12.0)
    # started by 12: A (wait 0, bsld 1) and B (wait 10, bsld 15 / 10); C still waits at 12
    assert m["jobs"] == 2
    assert m["wait"] == pytest.approx(5.0)
    assert m["bsld"] == pytest.approx((1.0 + 1.5) / 2)
    # A ran [0, 10) on 2, B [10, 12) on 4: 28 processor-seconds of 48
    assert m["utilization"] == pytest.approx(28 / 48)
    # B waited 10, C 7 (from 5 to the cut): 17 / 12
    assert m["queue_length"] == pytest.approx(17 / 12)
    assert m["job_load"] == pytest.approx((4 * 5 * 10 + 1 * 10 * 7) / (12 * 4))


def test_interval_metrics_from_a_later_start_and_for_unstarted_jobs():
    jobs = table(ABC)
    start = np.array([0.0, 10.0, np.nan])  # C never started
    m = interval_metrics(jobs, start, jobs.run_time.copy(), total_procs=4, t0=5.0, t1=12.0)
    # only B started inside [5, 12] (A started before it)
    assert m["jobs"] == 1 and m["wait"] == pytest.approx(10.0)
    # A ran [5, 10) on 2, B [10, 12) on 4: 18 of 7 x 4
    assert m["utilization"] == pytest.approx(18 / 28)
    # B waited [5, 10), C [5, 12): 12 / 7
    assert m["queue_length"] == pytest.approx(12 / 7)
    assert m["job_load"] == pytest.approx((4 * 5 * 5 + 1 * 10 * 7) / (7 * 4))


def test_interval_metrics_of_an_empty_interval_are_zero():
    jobs = table(ABC)
    m = interval_metrics(jobs, np.array(ABC_START), jobs.run_time.copy(), total_procs=4,
                         t0=3.0, t1=3.0)
    assert m["utilization"] == m["queue_length"] == m["job_load"] == 0.0


# Ch. 3's baselines on one machine-filling job X and four that queue behind it (submit, run = req,
# procs): P (1, 10, 3), Q (2, 50, 1), R (3, 5, 2), S (4, 20, 3). X ends at 100. No backfilling:
#  - fcfs: P, Q at 100 (free 0); R blocks until P ends (110, free 3): R; S waits for R (115).
#  - lcfs: S at 100 (free 1); R blocks until S ends (120): R, Q; P waits for R (125).
#  - sqf (fewest cores first: Ch. 3's "SJF"): Q, R at 100 (free 1); P (3, before S on the tie)
#    at 105 when R ends; S when P ends (115).
#  - sjf (shortest requested time): R at 100 (free 2); P blocks until 105 (free 4): P; S and Q
#    when P ends (115).
XPQRS = [(0, 100, 4, 100), (1, 10, 3, 10), (2, 50, 1, 50), (3, 5, 2, 5), (4, 20, 3, 20)]


#
# With EASY only lcfs changes: at 100 S starts (free 1) and R, which does not fit, is reserved for
# (shadow 120, when S ends, with 4 - 2 = 2 extra nodes); Q (1 proc) backfills on an extra node at
# 100. Under fcfs and sqf the reserved job's shadow leaves no extra node and nothing fits now.
@pytest.mark.parametrize("policy, backfill, expected", [
    ("fcfs", "none", [0, 100, 100, 110, 115]),
    ("lcfs", "none", [0, 125, 120, 120, 100]),
    ("sqf", "none", [0, 105, 100, 100, 115]),
    ("sjf", "none", [0, 105, 115, 100, 115]),
    ("fcfs", "easy", [0, 100, 100, 110, 115]),
    ("lcfs", "easy", [0, 125, 100, 120, 100]),
    ("sqf", "easy", [0, 105, 100, 100, 115]),
])
def test_chapter_3_baselines(policy, backfill, expected):
    engine = make_engine(table(XPQRS), NodePool(4), "standard", backfill)
    assert engine.run(get_policy(policy)).start.tolist() == expected


def test_sqf_is_named_as_chapter_3s_sjf():
    from hpcsched.policies.priority import DESCRIPTIONS

    assert "Ch. 3" in DESCRIPTIONS["sqf"] and "SJF" in DESCRIPTIONS["sqf"]
