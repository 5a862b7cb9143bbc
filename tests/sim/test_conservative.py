"""Conservative backfilling keeps every reservation it gives (`sim/conservative.py`): a job starts no
later than the first reservation it was given, and a reservation only ever moves earlier."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcsched.cluster.nodes import Cluster
from hpcsched.cluster.pool import NodePool
from hpcsched.policies.priority import DESCRIPTIONS, get_policy
from hpcsched.sim.factory import make_engine
from hpcsched.sim.run import prepare, simulate
from hpcsched.workload.jobs import JobTable

from test_properties import traces

#: every heuristic with a priority of its own (the property holds for those that change with the
#: clock too: a job starts only when its reservation is now, whatever the policy)
POLICIES = sorted(DESCRIPTIONS)
FIXED = [name for name in POLICIES if hasattr(get_policy(name), "static_keys")]

# The reproducer, 4 nodes, FCFS. (submit, run, request, procs):
#   J1 (0, 10, 100, 2)   runs [0, 10): it asked for 100 s and ends early
#   J2 (0, 50,  50, 2)   runs [0, 50)
#   J3 (1, 10,  10, 4)   needs the whole machine: reserved [100, 110) at t = 1 (J1's estimate)
#   J4 (2, 45,  45, 2)   reserved [50, 95) at t = 2, beside J1 and before J3
# At 10 J1 ends: its 2 nodes are free until 100. Compressing in queue order: J3 moves to 95 (J4
# still holds [50, 95)); J4 moves to 10 ([10, 55) fits beside J2); then J3 to 55 (J2 and J4 both
# end by 55). J4 starts at 10, before its reservation. Planning afresh in queue order instead
# would put J3 first at 50 (J2's end) and push J4 to 60, past the 50 it was promised.
SWF = """; MaxNodes: 4
; MaxProcs: 4
1 0 0 10 2 -1 -1 2 100 -1 1 1 1 -1 -1 -1 -1 -1
2 0 0 50 2 -1 -1 2 50 -1 1 1 1 -1 -1 -1 -1 -1
3 1 0 10 4 -1 -1 4 10 -1 1 1 1 -1 -1 -1 -1 -1
4 2 0 45 2 -1 -1 2 45 -1 1 1 1 -1 -1 -1 -1 -1
"""


@pytest.mark.parametrize("cluster", ["pool", "named"])
@pytest.mark.parametrize("compiled", [True, False])
def test_a_job_ending_early_moves_reservations_earlier_only(tmp_path, cluster, compiled):
    path = tmp_path / "early.swf"
    path.write_text(SWF)
    named = Cluster.identical(4, 1, exclusive=True) if cluster == "named" else None
    prep = prepare(str(path), cluster=named)
    engine = make_engine(prep.jobs, prep.cluster, "standard", "conservative")
    result = engine.run(get_policy("fcfs"), compiled=compiled)
    assert result.start.tolist() == [0, 0, 55, 10]
    assert engine.reservations == [(2, 100.0), (3, 50.0)]


def test_with_exact_requests_every_job_starts_at_its_reservation(tmp_path):
    """J1 runs its whole 100 s: nothing is freed early, and J3, J4 start at their reservations."""
    path = tmp_path / "exact.swf"
    path.write_text(SWF.replace("1 0 0 10 2", "1 0 0 100 2"))
    prep = prepare(str(path))
    assert prep.jobs.run_time.tolist() == prep.jobs.req_time.tolist() == [100, 50, 10, 45]
    assert simulate(prep, get_policy("fcfs"), backfill="conservative").start.tolist() == \
        [0, 0, 100, 50]


def test_a_later_job_of_higher_priority_does_not_take_a_reservation():
    """SJF, 2 nodes. A (2 nodes, 10 s) runs [0, 10). B (2 nodes, 100 s) comes at 1: reserved
    [10, 110). S (2 nodes, 5 s) comes at 2: SJF ranks it before B, but B's reservation was given
    first, so S gets [110, 115), not [10, 15) (which would push B to 15)."""
    jobs = JobTable.from_columns(submit=[0, 1, 2], run_time=[10, 100, 5], req_time=[10, 100, 5],
                                 req_procs=[2, 2, 2], alloc_procs=[2, 2, 2])
    for compiled in (True, False):
        engine = make_engine(jobs, NodePool(2), "standard", "conservative")
        assert engine.run(get_policy("sjf"), compiled=compiled).start.tolist() == [0, 10, 110]
        assert engine.reservations == [(1, 10.0), (2, 110.0)]


def check_promises(engine, policy):
    """Step the engine; after every decision every reservation is no later than the one the job
    held before. Returns (first reservation of each job, the run's start times)."""
    first: dict[int, float] = {}
    held: dict[int, float] = {}
    while (view := engine.next_decision()) is not None:
        engine.apply(engine.choose(policy, view))
        plan = engine.loop.plan
        for row, s in plan.start.items():
            if math.isinf(s):
                continue  # a job asking for no time: it holds no reservation
            assert s <= held.get(row, math.inf), (row, s, held[row])
            held[row] = s
            first.setdefault(row, s)
    return first, engine.result().start


@settings(max_examples=60, deadline=None)
@given(traces(), st.sampled_from(POLICIES))
def test_reservations_only_move_earlier(trace, name):
    jobs, cluster = trace
    engine = make_engine(jobs, cluster, "standard", "conservative")
    first, start = check_promises(engine, get_policy(name, seed=3))
    for row, s in first.items():
        assert start[row] <= s
    # every reservation for a later time is logged once, when given
    logged = dict(engine.reservations)
    assert len(logged) == len(engine.reservations)
    assert all(first[row] == s for row, s in logged.items())


@settings(max_examples=120, deadline=None)
@given(traces(), st.sampled_from(FIXED))
def test_no_job_starts_after_its_first_reservation(trace, name):
    """Compiled (where numba is there) and Python paths alike, for every fixed-priority policy."""
    jobs, cluster = trace
    for compiled in (True, False):
        engine = make_engine(jobs, cluster, "standard", "conservative")
        start = engine.run(get_policy(name, seed=3), compiled=compiled).start
        for row, s in engine.reservations:
            assert start[row] <= s, (name, row, s, start[row])
