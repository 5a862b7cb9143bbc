"""The dras profile (CQSim as the shipped DRAS models were trained on it, on the cqsim loop):
schedules and execution modes worked out by hand, the options of spec dras.md section 16 items 1-3,
its cleaning, and agreement with textbook EASY. CQSim's own code is the cqsim profile
(`test_cqsim_exact.py`)."""

import dataclasses

import numpy as np
import pytest

from hpcsched.cluster.pool import NodePool
from hpcsched.policies.priority import get_policy
from hpcsched.sim.cqsim import BACKFILLED, READY, RESERVED
from hpcsched.sim.factory import make_engine
from hpcsched.sim.profiles import get_profile
from hpcsched.workload.cleaning import clean
from hpcsched.workload.jobs import JobTable


def table(rows):
    """rows: (submit, run, nodes[, req])."""
    req = [r[3] if len(r) > 3 else r[1] for r in rows]
    return JobTable.from_columns(job_id=list(range(1, len(rows) + 1)),
                                 submit=[r[0] for r in rows], run_time=[r[1] for r in rows],
                                 req_procs=[r[2] for r in rows], alloc_procs=[r[2] for r in rows],
                                 req_time=req, user=[1] * len(rows))


def run(rows, policy, profile="dras", backfill="easy", nodes=4, **options):
    prof = dataclasses.replace(get_profile(profile), **options) if options else profile
    engine = make_engine(table(rows), NodePool(nodes), prof, backfill)
    res = engine.run(policy)
    return res.start.tolist(), engine.mode.tolist(), res


class Largest:
    """Picks the largest waiting job whether it fits or not (to make the agent's pick differ
    from the oldest job)."""
    name = "largest"

    def select(self, view):
        q = view.queue
        return int(q[np.argmax(view.nodes_needed[q] * 10_000 - q)])


# A [0,10) on 3 of 4 nodes. B (4 nodes) at 1 cannot start: reserved at 10, [10,15) on all nodes.
# C (1 node, 5 s) at 2 ends at 7 <= 10: backfilled at 2. D (1 node, 20 s) at 3: no free node.
# At 7 (C ends) B is reserved again at 10; D would run [7,27) over B's [10,15) with 0 nodes left:
# no. At 10 B starts (it held a reservation: "reserved"); D does not fit, is reserved at 15 and
# starts then.
ABCD = [(0, 10, 3), (1, 5, 4), (2, 5, 1), (3, 20, 1)]


def test_fcfs_easy_by_hand():
    start, mode, res = run(ABCD, get_policy("fcfs"))
    assert start == [0, 10, 2, 15]
    assert mode == [READY, RESERVED, BACKFILLED, RESERVED]
    assert res.metrics["backfilled_jobs_pct"] == 25.0
    assert res.metrics["reserved_jobs_pct"] == 50.0
    # node-seconds: A 30, B 20, C 5, D 20 -> reserved 40 of 75
    assert res.metrics["reserved_nodeh_pct"] == pytest.approx(100 * 40 / 75)


def test_backfill_with_actual_run_time():
    # C asks for 20 s but runs 5: with its estimate [2,22) it would overlap B's reservation at 10
    # on the node B needs, so it waits; with the logged run time (CQSim's quirk) it backfills at 2.
    rows = [(0, 10, 3), (1, 5, 4), (2, 5, 1, 20)]
    assert run(rows, get_policy("fcfs"))[0] == [0, 10, 15]
    assert run(rows, get_policy("fcfs"), backfill_runtime="actual")[0] == [0, 10, 2]


# A [0,10) on 3 nodes. At 1: B (2 nodes), C (4 nodes), D (1 node, 20 s). The picker takes C first.
# agent_pick: C is reserved at 10 ([10,15) on all 4); D [1,21) would need a node in [10,15): no.
#   At 10 C starts (reserved); B does not fit, reserved at 15; D cannot run past B... B [15,20) on 2
#   nodes leaves 2: D [10,30) needs one in [10,15) where 0 are free: no. At 15 B and D start.
# fcfs_head: the oldest job, B, gets the reservation ([10,15) on 2 nodes), so D [1,21) fits on the
#   free node (1 free in [1,10), 2 in [10,15)): backfilled at 1. At 10 B fits: it starts
#   (reserved); C does not fit (1 free), the head is now C, reserved at 21 when D ends.
ABCD2 = [(0, 10, 3), (1, 5, 2), (1, 5, 4), (1, 20, 1)]


def test_who_gets_the_reservation():
    start, mode, _ = run(ABCD2, Largest())
    assert start == [0, 15, 10, 15]
    assert mode == [READY, RESERVED, RESERVED, READY]
    start, mode, _ = run(ABCD2, Largest(), reserve="fcfs_head")
    assert start == [0, 10, 21, 1]
    assert mode == [READY, RESERVED, RESERVED, BACKFILLED]


def test_persisting_reservation_is_not_rechosen():
    # A [0,10) on 3 nodes; at 1: B (4 nodes) and C (2 nodes, 100 s): the picker takes B -> reserved
    # at 10. At 10 A ends: without persistence level 1 runs again and the picker still takes B (it
    # fits). Same start. At 2 a small job E (1 node, 100 s) arrives: E would run [2,102) over the
    # reservation [10,15) where no node is free -> it waits in both cases; this checks that the
    # persisting engine skips level 1 at 2 (its only instance) without reserving anything else.
    rows = [(0, 10, 3), (1, 5, 4), (1, 100, 2), (2, 100, 1)]
    a = run(rows, Largest())[0]
    b = run(rows, Largest(), persist=True)[0]
    assert a == b == [0, 10, 15, 15]


def test_no_backfill_means_no_reservation():
    start, mode, res = run(ABCD, get_policy("fcfs"), backfill="none")
    assert start == [0, 10, 15, 15]
    assert mode == [READY, READY, READY, READY]
    assert res.metrics["ready_jobs_pct"] == 100.0


def test_schedgym_backfilling_is_refused():
    with pytest.raises(ValueError, match="'dras' profile backfills with 'easy'"):
        make_engine(table(ABCD), NodePool(4), "dras", "schedgym")


def test_unknown_option_is_refused():
    with pytest.raises(ValueError, match="reserve"):
        dataclasses.replace(get_profile("dras"), reserve="oldest")


def test_dras_cleaning_counts_what_it_does():
    raw = JobTable.from_columns(
        job_id=[1, 0, 3, 4, 5, 6, 7], submit=[0, 1, -2, 3, 4, 5, 2],
        run_time=[10, 10, 10, 0, 10, 50, 10], req_time=[20, 20, 20, 20, -1, 20, 20],
        req_procs=[1, 1, 1, 1, 1, 1, 0], alloc_procs=[1, 1, 1, 1, 1, 1, 0])
    jobs, report = clean(raw, "dras")
    assert jobs.job_id.tolist() == [1, 6]
    assert jobs.run_time.tolist() == [10, 20]  # 50 clamped to the request
    assert report.dropped == {"job id not positive": 1, "submit time negative": 1,
                              "run time not positive": 1, "requested time not positive": 1,
                              "processors unknown": 1}
    assert report.changed["run time clamped to the request"] == 1


@pytest.mark.parametrize("policy", ["fcfs", "sjf"])
def test_without_backfilling_equals_the_textbook_loop(policy):
    # with no reservation both loops are "start picks while they fit, once per event time"
    jobs = table(RANDOM_ROWS)
    ours = make_engine(jobs, NodePool(8), "dras", "none").run(get_policy(policy))
    textbook = make_engine(jobs, NodePool(8), "standard", "none").run(get_policy(policy))
    np.testing.assert_array_equal(ours.start, textbook.start)


def test_easy_never_oversubscribes_and_backfills_more_than_nothing():
    jobs = table(RANDOM_ROWS)
    engine = make_engine(jobs, NodePool(8), "dras", "easy")
    res = engine.run(get_policy("fcfs"))
    start, end = res.start, res.start + res.executed
    assert np.all(start >= jobs.submit)
    for t in np.unique(start):
        assert jobs.procs[(start <= t) & (end > t)].sum() <= 8
    # a backfilled job never delays the reservation it was checked against: every reservation's
    # job starts no later than the shadow time it was given (estimates are upper bounds here)
    for row, shadow in engine.reservations:
        assert start[row] <= shadow
    none = make_engine(jobs, NodePool(8), "dras", "none").run(get_policy("fcfs"))
    assert res.metrics["wait"] < none.metrics["wait"]


_rng = np.random.default_rng(3)
RANDOM_ROWS = [(float(t), float(r), int(p), float(r * f)) for t, r, p, f in zip(
    np.cumsum(_rng.exponential(30, 300)), _rng.integers(1, 600, 300), _rng.integers(1, 9, 300),
    _rng.uniform(1, 3, 300))]
