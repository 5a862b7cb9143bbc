"""The deeprm profile (sim/discrete_batch.py, sim/discrete.py, cluster/grid.py): hand-drawn states,
placement, time, reward, the batched simulator against one-at-a-time engine runs, and the grid as a
loop of the one engine (typed decisions, rows and grid jobs, the engine's state, the result)."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsched.cluster.grid import ResourceGrid, earliest_start
from hpcsched.policies.deeprm import RandomAction, ShortestJobFirst
from hpcsched.sim.discrete import grid_engine
from hpcsched.sim.discrete_batch import DiscreteBatch, run_batch
from hpcsched.workload.deeprm import GridJobs, generate

# four jobs arriving at step 0: (length, demand of resource 0, demand of resource 1)
HAND_JOBS = [(2, 3, 1), (1, 2, 2), (3, 1, 4), (1, 1, 1)]


def hand_batch(horizon: int) -> DiscreteBatch:
    """2 resources x 4 units, 2 slots, a backlog of one column; job 0 placed at once."""
    jobs = GridJobs.from_lists([(np.zeros(4, np.int64), np.array([j[0] for j in HAND_JOBS]),
                                 np.array([j[1:] for j in HAND_JOBS]))])
    b = DiscreteBatch(ResourceGrid(2, 4, horizon), slots=2, backlog=horizon)
    b.reset(jobs)
    reward, done = b.step(np.array([0]))  # slot 0 holds job 0: it fits now
    assert reward[0] == 0 and not done[0]  # a placement does not end the step
    return b


def test_image_of_a_hand_drawn_cluster():
    b = hand_batch(horizon=4)
    # job 0 runs (rows 0-1: 3 units of r0, 1 of r1); slot 0 took the backlog's head (job 2),
    # slot 1 holds job 1, job 3 waits in the backlog. Per resource: cluster | slot 0 | slot 1.
    drawn = """
        1110 1000 1100   1000 1111 1100   1
        1110 1000 0000   1000 1111 0000   0
        0000 1000 0000   0000 1111 0000   0
        0000 0000 0000   0000 0000 0000   0
    """
    expected = np.array([[int(c) for c in line.replace(" ", "")]
                         for line in drawn.strip().splitlines()])
    assert b.image_shape == (4, 25)
    np.testing.assert_array_equal(b.images()[0], expected)
    assert b.slot[0].tolist() == [2, 1] and b.backlog_count()[0] == 1


def test_placement_at_the_earliest_step_it_fits_for_its_whole_length():
    b = hand_batch(horizon=6)
    # job 2 (3 steps, 4 units of r1) cannot overlap job 0's r1 unit on rows 0-1: earliest row 2
    # job 1 (2 units of r0) cannot sit beside job 0's 3 units either: also row 2
    assert b.offset[0].tolist() == [2, 2]
    b.step(np.array([0]))
    assert b.start[0, 2] == 2 and b.finish[0, 2] == 5
    assert b.used[0, :, 1].tolist() == [1, 1, 4, 4, 4, 0]
    assert b.used[0, :, 0].tolist() == [3, 3, 1, 1, 1, 0]


def test_a_job_never_ends_on_the_windows_last_row_as_in_deeprms_code():
    # DeepRM's code tries offsets range(0, T - length): in a 5-step window job 2 (3 steps) would
    # end on row 4, the last one, so it fits nowhere; job 1 (1 step) may use rows up to 3
    b = hand_batch(horizon=5)
    assert b.offset[0].tolist() == [-1, 2]
    assert not b.valid[0, 0] and b.valid[0, 1]
    # a job as long as the window can never be placed
    assert ResourceGrid(2, 10, 20).never_fits(np.array([19, 20]), np.ones((2, 2), int)).tolist() \
        == [False, True]


def test_a_job_that_fits_nowhere_in_the_window_acts_as_void():
    b = hand_batch(horizon=4)  # job 2 would need rows 2..4: outside a 4-step window
    assert not b.valid[0, 0]
    now = int(b.now[0])
    b.step(np.array([0]))
    assert b.now[0] == now + 1 and b.start[0, 2] == -1


def test_void_ends_the_step_shifts_the_table_and_charges_every_job_in_the_system():
    b = hand_batch(horizon=4)
    reward, done = b.step(np.array([b.void]))
    # all four jobs were in the system during step 0: 1/2 + 1/1 + 1/3 + 1/1
    assert reward[0] == pytest.approx(-(1 / 2 + 1 + 1 / 3 + 1))
    assert b.now[0] == 1
    assert b.used[0, :, 0].tolist() == [3, 0, 0, 0]  # job 0's second row moved up
    assert b.used[0, :, 1].tolist() == [1, 0, 0, 0]


@pytest.mark.parametrize("reward", ["slowdown", "completion"])
def test_the_return_with_gamma_1_is_minus_the_sum_of_slowdowns(reward):
    jobs = generate(12, 0.6, 30, seed=5)
    b = DiscreteBatch(reward=reward)
    b.reset(jobs)
    total = b.pending_reward.copy()
    policy = RandomAction(seed=3)
    while not b.done.all():
        r, _ = b.step(policy.act(b))
        total += r
    rec = b.job_records()
    per_job = rec["slowdown"] if reward == "slowdown" else rec["completion"]
    assert not np.isnan(per_job).any()
    expected = -np.bincount(rec["env"], weights=per_job, minlength=len(jobs))
    np.testing.assert_allclose(total, expected, rtol=1e-12)
    assert np.all(rec["slowdown"] >= 1)


def test_batched_runs_equal_one_at_a_time_runs():
    jobs = generate(6, 0.7, 40, seed=11)
    batch = run_batch(DiscreteBatch(), jobs, ShortestJobFirst()).job_records()
    for i in range(len(jobs)):
        one = grid_engine(jobs.take([i])).run(ShortestJobFirst()).records()
        mine = batch["env"] == i
        np.testing.assert_array_equal(one["start"], batch["start"][mine])


def test_earliest_start_matches_a_brute_force_search():
    rng = np.random.default_rng(0)
    T, d, units = 8, 2, 5
    used = rng.integers(0, units + 1, (30, T, d))
    demand = rng.integers(0, units + 1, (30, 4, d))
    length = rng.integers(0, T + 2, (30, 4))
    got = earliest_start(used, demand, length, units)
    for b in range(30):
        for k in range(4):
            want = -1
            for o in range(T):
                L = length[b, k]
                # DeepRM's code: `for t in range(0, T - L)`, so o + L <= T - 1
                if L > 0 and o < T - L and np.all(used[b, o:o + L] + demand[b, k] <= units):
                    want = o
                    break
            assert got[b, k] == want


def test_jobs_that_can_never_fit_are_refused_with_their_place():
    jobs = GridJobs.from_lists([(np.array([1]), np.array([25]), np.array([[1, 1]]))])
    with pytest.raises(ValueError, match="jobset 0, job 0 .*can never fit"):
        DiscreteBatch().reset(jobs)


def test_void_is_masked_only_on_an_idle_cluster_with_a_job_that_fits():
    jobs = GridJobs.from_lists([(np.array([0, 0]), np.array([2, 2]), np.array([[9, 1], [9, 1]]))])
    b = DiscreteBatch(ResourceGrid(2, 10, 5), slots=2, backlog=5)
    b.reset(jobs)
    # nothing runs: holding would leave the state as it is for ever
    assert b.action_mask()[0].tolist() == [True, True, False]
    b.step(np.array([0]))
    # job 0 runs; job 1 can only be reserved behind it (offset 2): holding is allowed again
    assert b.offset[0].tolist() == [-1, 2]
    assert b.action_mask()[0].tolist() == [False, True, True]


# -- the grid as a loop of the one engine ------------------------------------------------------------
def hand_engine(horizon: int = 6):
    """The hand-drawn jobs (rows 0-3, all shown at step 0) behind the engine: 2 slots, backlog."""
    jobs = GridJobs.from_lists([(np.zeros(4, np.int64), np.array([j[0] for j in HAND_JOBS]),
                                 np.array([j[1:] for j in HAND_JOBS]))])
    return grid_engine(jobs, ResourceGrid(2, 4, horizon), slots=2, backlog=horizon)


def test_typed_decisions_step_the_grid_and_the_engines_state_follows():
    from hpcsched.sim.decisions import Pick, Wait
    from hpcsched.sim.engine import READY, RESERVED

    e = hand_engine()
    view = e.next_decision()
    assert view.grid.slot_rows().tolist() == [0, 1] and view.queue.tolist() == [0, 1, 2, 3]
    assert view.profile_loop == "discrete" and view.now == 0
    with pytest.raises(ValueError, match="backlog"):
        e.apply(Pick(3))  # the backlog is beyond what a DeepRM policy sees
    e.apply(Pick(0))  # fits now: starts now
    view = e.next_decision()
    assert view.running.tolist() == [0] and view.queue.tolist() == [1, 2, 3]
    assert view.grid.slot_rows().tolist() == [2, 1]  # the backlog's head took the freed slot
    assert view.free_nodes == 4 - 3  # resource 0's units
    assert view.fits(np.array([1, 2, 3])).tolist() == [False, False, True]
    e.apply(Pick(2))  # fits from step 2 on: reserved, not running yet
    view = e.next_decision()
    assert view.running.tolist() == [0] and 2 not in view.queue.tolist()
    assert e.mode[0] == READY and np.isnan(e.start[2])  # not started
    e.apply(Wait())  # void: the step ends
    view = e.next_decision()
    assert view.now == 1
    e.apply(view.grid.decision(view.grid.void))
    view = e.next_decision()
    assert view.now == 2 and sorted(view.running.tolist()) == [2]  # job 0 ended, job 2 started
    assert e.mode[2] == RESERVED and e.start[2] == 2
    with pytest.raises(ValueError, match="already placed"):
        e.apply(Pick(2))


def test_the_view_translates_deeprm_actions_and_is_read_only():
    from hpcsched.sim.decisions import Pick, Wait

    e = hand_engine()
    g = e.next_decision().grid
    assert g.decision(0) == Pick(0) and g.decision(1) == Pick(1) and g.decision(2) == Wait()
    with pytest.raises(ValueError, match="outside DeepRM's 0..2"):
        g.decision(3)
    with pytest.raises(ValueError):
        g.used[0, 0, 0] = 1
    with pytest.raises(AttributeError):
        g.step  # the view cannot drive the simulation
    e.apply(Pick(0))  # slot 0 takes row 2 from the backlog
    e.apply(Pick(1))  # reserved from step 2; slot 1 takes row 3, the backlog is empty
    e.apply(Pick(3))  # fits now beside row 0
    g = e.next_decision().grid
    assert g.slot_rows().tolist() == [2, -1]
    assert g.decision(1) == Wait()  # an empty slot acts as void, as in DeepRM


def test_decisions_outside_deeprms_action_set_are_refused():
    from hpcsched.sim.decisions import Reserve, Start, Wait

    e = hand_engine()
    e.next_decision()
    for d, needle in ((Wait(until=3.0), "Wait\\(until\\)"), (Start(0), "Start"),
                      (Reserve(0), "Reserve")):
        with pytest.raises(ValueError, match=needle):
            e.apply(d)
    with pytest.raises(ValueError, match="not a row"):
        e.apply(7)  # an integer is a row (Pick), as under every profile


@pytest.mark.parametrize("name", ["fcfs", "sjf", "packer", "tetris", "tetris:0.3", "random"])
def test_an_engine_run_equals_the_batched_run_of_the_same_policy(name):
    from hpcsched.policies.deeprm import get_grid_policy

    jobs = generate(4, 0.6, 40, seed=7)
    for i in range(len(jobs)):
        batch = run_batch(DiscreteBatch(), jobs.take([i]), get_grid_policy(name, seed=i))
        result = grid_engine(jobs.take([i])).run(get_grid_policy(name, seed=i))
        assert result.metrics == batch.metrics()
        rec = batch.job_records()
        np.testing.assert_array_equal(result.start, rec["start"])
        np.testing.assert_array_equal(result.end, rec["finish"])


def test_the_trained_policy_decides_on_the_engine_as_it_acts_on_the_batch():
    from hpcsched.experiments.deeprm import resolve_grid_policy

    jobs = generate(2, 0.6, 40, seed=3)
    for sample in (False, True):
        for i in range(len(jobs)):
            spec = "deeprm:pretrained/deeprm-load-70"
            batch = run_batch(DiscreteBatch(), jobs.take([i]),
                              resolve_grid_policy(spec, seed=5, sample=sample))
            result = grid_engine(jobs.take([i])).run(resolve_grid_policy(spec, seed=5,
                                                                         sample=sample))
            assert result.metrics == batch.metrics()


def trace_window():
    """Five jobs on 10 processors; row 2 runs 100 s: longer than the 20-step window of 4 s steps."""
    from hpcsched.workload.jobs import JobTable

    return JobTable.from_columns(submit=[3, 5, 6, 9, 17], run_time=[8, 4, 100, 12, 3],
                                 req_time=[10, 10, 100, 20, 10], req_procs=[5, 2, 1, 10, 3])


def test_a_trace_window_maps_rows_to_grid_jobs_and_seconds():
    from hpcsched.cluster.pool import NodePool
    from hpcsched.sim.discrete import engine_for_trace
    from hpcsched.sim.decisions import Pick
    from hpcsched.sim.factory import make_engine

    table = trace_window()
    e = engine_for_trace(table, NodePool(10), quantum=4)
    rows = e.loop.rows
    assert rows.tolist() == [0, 1, 3, 4]  # row 2 never fits the window: left out
    view = e.next_decision()
    with pytest.raises(ValueError, match="left out of the grid"):
        e.apply(Pick(2))
    policy = ShortestJobFirst()
    while view is not None:
        e.apply(e.choose(policy, view))
        view = e.next_decision()
    result = e.result("sjf")
    assert result.metrics == e.loop.batch.metrics()
    assert result.counts == {"quantum_s": 4.0, "procs_per_unit": 1.0, "mapped_jobs": 4,
                             "never_fit": 1, "memory_resource": False,
                             "dropped": 0}
    rec = e.loop.batch.job_records()
    # step s is the instant t0 + 4 s (t0 = 3, the first submit); a job runs length x 4 s
    np.testing.assert_array_equal(result.start[rows], 3 + 4 * rec["start"])
    np.testing.assert_array_equal(result.end[rows], 3 + 4 * rec["finish"])
    assert np.isnan(result.start[2]) and np.all(result.start[rows] >= table.submit[rows])
    assert "nodes" not in result.records() and len(result.records()["start"]) == 5
    again = make_engine(table, NodePool(10), "deeprm").run(ShortestJobFirst())
    assert again.metrics["jobs"] + again.counts["never_fit"] == 5


class Checking:
    """SJF that checks the engine's state against the grid at every decision."""

    name = "checking"

    def __init__(self, loop):
        self.loop = loop
        self.inner = ShortestJobFirst()
        self.seen = 0

    def decide(self, view):
        g = view.grid
        waiting = [int(g.rows[j]) for j in range(int(g.arrived[0]))
                   if g.start[0, j] < 0 and not g.dropped[0, j]]
        assert sorted(view.queue.tolist()) == waiting
        now = int(g.now[0])
        running = [int(g.rows[j]) for j in range(int(g.arrived[0]))
                   if 0 <= g.start[0, j] <= now < g.finish[0, j]]
        assert sorted(view.running.tolist()) == running
        slot_rows = g.slot_rows()
        full = slot_rows >= 0
        np.testing.assert_array_equal(view.fits(slot_rows[full]), g.fit_now[0][full])
        assert view.now == self.loop.t0 + now * self.loop.quantum
        self.seen += 1
        return self.inner.decide(view)


def test_the_engines_queue_running_jobs_and_clock_follow_the_grid():
    jobs = generate(1, 0.9, 40, seed=2)
    engine = grid_engine(jobs)
    policy = Checking(engine.loop)
    result = engine.run(policy)
    assert policy.seen == result.metrics["decisions"] > 20
    # a queue of 2 slots + 20 backlogged jobs overflows at full load: dropped jobs never join the
    # engine's queue, never start, and are counted
    engine = grid_engine(generate(1, 1.0, 80, seed=2), slots=2, backlog=20)
    policy = Checking(engine.loop)
    result = engine.run(policy)
    dropped = engine.loop.batch.dropped[0]
    assert result.counts["dropped"] == result.metrics["dropped"] == dropped.sum() > 0
    assert np.isnan(result.records()["start"][dropped]).all()
    assert not np.isnan(result.records()["start"][~dropped]).any()


# -- DeepRM's bounded queue ----------------------------------------------------------------------------
def crowd(arrivals) -> GridJobs:
    """Jobs that each take the whole 4-unit machine for one step, arriving at the given steps."""
    n = len(arrivals)
    return GridJobs.from_lists([(np.array(arrivals), np.ones(n, np.int64),
                                 np.full((n, 2), 4, np.int64))])


def test_an_arrival_that_finds_the_slots_and_backlog_full_is_dropped_and_counted():
    # 2 slots + a backlog of 4 hold 6 jobs: of 8 arriving together the last two are dropped; one
    # job runs per step, so by step 3 three have left the queue and the two late arrivals get in
    jobs = crowd([1] * 8 + [3, 3])
    b = run_batch(DiscreteBatch(ResourceGrid(2, 4, 4), slots=2, backlog=4), jobs,
                  ShortestJobFirst())
    assert b.dropped[0].tolist() == [False] * 6 + [True, True] + [False, False]
    m = b.metrics()
    assert (m["jobs"], m["dropped"], m["unfinished"]) == (8, 2, 0)
    rec = b.job_records()
    assert rec["dropped"].tolist() == b.dropped[0].tolist()
    assert np.isnan(rec["completion"][rec["dropped"]]).all()
    # a dropped job is never in the system: the return is minus the kept jobs' slowdowns only
    assert -b.cost[0] == pytest.approx(-np.nansum(rec["slowdown"]))
    # the unbounded queue keeps everyone
    b = run_batch(DiscreteBatch(ResourceGrid(2, 4, 4), slots=2, backlog=4, queue="unbounded"),
                  jobs, ShortestJobFirst())
    assert not b.dropped.any() and b.metrics()["jobs"] == 10


def test_the_queue_is_full_at_exactly_slots_plus_backlog():
    # one arrival per step (as DeepRM's generator makes them) and nothing ever placed: 2 slots and
    # a backlog of 4 take the first 6 arrivals; the 7th is the first one dropped
    jobs = crowd(list(range(1, 10)))
    b = DiscreteBatch(ResourceGrid(2, 4, 4), slots=2, backlog=4)
    b.reset(jobs)
    while int(b.now[0]) < 9:
        b.step(np.array([b.void]))
    assert b.dropped[0].tolist() == [False] * 6 + [True] * 3
    assert b.backlog_count()[0] == 4 and b.slot[0].tolist() == [0, 1]
    # placing one frees a place: the next arrival gets in
    more = crowd(list(range(1, 10)) + [10])
    b.reset(more)
    while int(b.now[0]) < 9:
        b.step(np.array([b.void]))
    b.step(np.array([0]))  # job 0 placed: the backlog's head (job 2) takes slot 0
    b.step(np.array([b.void]))  # step 10: job 9 arrives into the freed place
    assert b.dropped[0].tolist() == [False] * 6 + [True] * 3 + [False]
    assert b.slot[0].tolist() == [2, 1] and b.backlog_count()[0] == 4


def test_a_dropped_job_cannot_be_picked_and_says_why():
    from hpcsched.sim.decisions import Pick

    e = grid_engine(crowd([1] * 8), ResourceGrid(2, 4, 4), slots=2, backlog=4)
    e.next_decision()
    with pytest.raises(ValueError, match="dropped on arrival: the 2 slots and the backlog of 4"):
        e.apply(Pick(7))
    with pytest.raises(ValueError, match="unknown queue 'infinite'"):
        DiscreteBatch(queue="infinite")


def test_a_grid_policy_outside_the_deeprm_profile_says_where_it_belongs():
    from hpcsched.cluster.pool import NodePool
    from hpcsched.sim.factory import make_engine

    e = make_engine(trace_window(), NodePool(10), "standard")
    with pytest.raises(ValueError, match="deeprm profile"):
        e.run(ShortestJobFirst())


def test_what_the_grid_cannot_do_is_refused_when_the_engine_is_built():
    from types import SimpleNamespace

    from hpcsched.cluster.pool import ClusterError, NodePool
    from hpcsched.sim.factory import make_engine

    with pytest.raises(ValueError, match="level 2"):
        make_engine(trace_window(), NodePool(10), "deeprm", backfill_decisions=True)
    with pytest.raises(ClusterError, match="pool of identical nodes"):
        make_engine(trace_window(), SimpleNamespace(nodes=3), "deeprm")
