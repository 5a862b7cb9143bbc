"""The deeprm profile's engine (sim/discrete.py, cluster/grid.py): hand-drawn states, placement,
time, reward, and the batched engine against one-at-a-time runs."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsched.cluster.grid import ResourceGrid, earliest_start
from hpcsched.policies.deeprm import RandomAction, ShortestJobFirst
from hpcsched.sim.discrete import DiscreteBatch, DiscreteEngine, run_batch
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
    b = hand_batch(horizon=5)
    # job 2 (3 steps, 4 units of r1) cannot overlap job 0's r1 unit on rows 0-1: earliest row 2
    # job 1 (2 units of r0) cannot sit beside job 0's 3 units either: also row 2
    assert b.offset[0].tolist() == [2, 2]
    b.step(np.array([0]))
    assert b.start[0, 2] == 2 and b.finish[0, 2] == 5
    assert b.used[0, :, 1].tolist() == [1, 1, 4, 4, 4]
    assert b.used[0, :, 0].tolist() == [3, 3, 1, 1, 1]


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
        one = DiscreteEngine(jobs.take([i])).run(ShortestJobFirst()).records()
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
                if L > 0 and o + L <= T and np.all(used[b, o:o + L] + demand[b, k] <= units):
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
