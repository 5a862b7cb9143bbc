"""RLScheduler's observation, computed by hand on tiny traces (spec rlscheduler.md sections 3, 4
and 6)."""

import numpy as np
import pytest

from hpcsched.envs.observation import HIGH, LOW, UserScores, padding_row
from hpcsched.envs.pick_job import PickJobEnv, observe
from hpcsched.sim.factory import make_engine
from hpcsched.sim.run import prepare

from envtraces import table

W = 43200.0

# Four jobs on 4 nodes x 2 procs (MaxProcs 8). Row 3 is submitted before row 2 (job ids keep
# SchedGym's order), so FCFS order differs from row order.
#   row: submit run procs req   mem   user group exe
#   0      0   100   8   100    -1    1    -1    3
#   1     10    50   3    60   512    4    -1    0
#   2     20    30   1    -1  1024   -1    -1    6    (request unknown -> run time 30)
#   3     15   400   6   500     0    1    -1   -1
# Norm: max run 400, MaxProcs 8, max mem 1024, max user 4, max group 0 (-> 1), max exe 6.
#
# Under rlscheduler / no backfilling, picking slot 0 twice:
#  d1 (t=0): queue [0]; row 0 starts at 0 (whole machine); row 1 arrives at 10.
#  d2 (t=10): queue [1]; row 1 (2 nodes) waits: rows 2 and 3 arrive, row 0 ends at 100, row 1
#     starts at 100, 2 nodes are left.
#  d3 (t=100): queue [2, 3] shown FCFS: row 3 (submit 15), then row 2 (submit 20).
TINY = [(0, 100, 8, 100), (10, 50, 3, 60), (20, 30, 1, -1), (15, 400, 6, 500)]
EXTRA = dict(req_mem=[-1, 512, 1024, 0], user=[1, 4, -1, 1], group=[-1] * 4,
             executable=[3, 0, 6, -1])


def tiny():
    return prepare(table(TINY, nodes=4, procs_per_node=2, **EXTRA), "rlscheduler")


def third_decision(metric="bsld", slots=4):
    env = PickJobEnv(tiny(), metric=metric, slots=slots, episode_jobs=1)
    obs1, info1 = env.reset(options={"start": 0, "jobs": 4})
    obs2, _, _, _, info2 = env.step(0)
    obs3, _, _, _, info3 = env.step(0)
    return env, (obs1, info1), (obs2, info2), (obs3, info3)


def test_norm_constants_of_the_tiny_trace():
    assert tiny().report.norm == {"max_run_time": 400.0, "max_procs": 8.0, "max_req_mem": 1024.0,
                                  "max_user": 4.0, "max_group": 0.0, "max_executable": 6.0}


def test_observation_by_hand():
    env, (obs1, info1), (obs2, _), (obs3, info3) = third_decision()
    pad = [0, 1, 1, 1, 1, 1, 1, 0]
    expected1 = np.array([
        [0, 100 / 400, HIGH, 1, 1 / 4, 1, 0.5, HIGH],  # 8/8 and fits the idle machine
        pad, pad, pad], dtype=np.float32)
    np.testing.assert_allclose(obs1, expected1, rtol=1e-6)
    np.testing.assert_array_equal(info1["action_mask"], [True, False, False, False])
    # d2: row 1 arrived just now, the machine is full
    np.testing.assert_allclose(obs2[0], [0, 60 / 400, 3 / 8, 0.5, HIGH, 1, 0, LOW], rtol=1e-6)
    expected3 = np.array([
        [85 / W, HIGH, 6 / 8, 0, 1 / 4, 1, 1, LOW],  # row 3: request 500 > 400 capped; 3 nodes > 2
        [80 / W, 30 / 400, 1 / 8, HIGH, 1, 1, HIGH, HIGH],  # row 2: unknown user -> 1; fits
        pad, pad], dtype=np.float32)
    np.testing.assert_allclose(obs3, expected3, rtol=1e-6)
    assert obs3.dtype == np.float32 and obs3.shape == (4, 8)
    np.testing.assert_array_equal(info3["action_mask"], [True, True, False, False])
    np.testing.assert_array_equal(env.rows, [3, 2, -1, -1])
    np.testing.assert_array_equal(env.action_masks(), info3["action_mask"])


def test_observe_matches_the_env_and_is_order_free():
    env, _, _, (obs3, _) = third_decision()
    norm = env.prepared.report.norm
    view = env.engine.next_decision()
    obs, mask, rows = observe(view, norm, slots=4)
    np.testing.assert_array_equal(obs, obs3)
    np.testing.assert_array_equal(rows, env.rows)
    assert set(rows[mask].tolist()) == set(env.engine.queue)
    # the engine's queue order does not matter: same slots, same valid actions
    env.engine.queue.reverse()
    obs2, mask2, rows2 = observe(env.engine.next_decision(), norm, slots=4)
    np.testing.assert_array_equal(obs2, obs)
    np.testing.assert_array_equal(mask2, mask)
    np.testing.assert_array_equal(rows2, rows)


@pytest.mark.parametrize("cutoff", ["fcfs", "interleave"])
def test_queue_permutations_keep_the_valid_actions(cutoff):
    engine = crowded_view()
    norm = {"max_run_time": 1000, "max_procs": 4}
    obs, mask, rows = observe(engine.next_decision(), norm, slots=5, cutoff=cutoff)
    rng = np.random.default_rng(0)
    for _ in range(10):
        rng.shuffle(engine.queue)
        obs2, mask2, rows2 = observe(engine.next_decision(), norm, slots=5, cutoff=cutoff)
        np.testing.assert_array_equal(rows2, rows)
        np.testing.assert_array_equal(mask2, mask)
        np.testing.assert_array_equal(obs2, obs)


def test_padding_row():
    np.testing.assert_array_equal(padding_row(), [0, 1, 1, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(padding_row(9), [0, 1, 1, 1, 1, 1, 1, 1, 0])


def test_episode_end_and_reward_by_hand():
    env, *_ = third_decision()
    # d3: pick row 2 (slot 1): it fits and starts at 100; d4: row 3 waits for 3 nodes: 150
    env.step(1)
    obs, reward, terminated, truncated, info = env.step(0)
    assert terminated and not truncated
    np.testing.assert_array_equal(env.engine.result().start, [0, 100, 100, 150])
    bsld = [1.0, (90 + 50) / 50, (80 + 30) / 30, (135 + 400) / 400]
    assert reward == pytest.approx(-np.mean(bsld))
    assert info["metrics"]["bsld"] == pytest.approx(np.mean(bsld))
    assert not info["action_mask"].any()
    np.testing.assert_array_equal(obs, np.tile(padding_row(), (4, 1)))
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_fairness_feature_by_hand():
    env, (obs1, _), _, (obs3, _) = third_decision(metric="fairness")
    assert obs3.shape == (4, 9)
    # nothing started before d1: the feature is 1
    assert obs1[0, 7] == 1.0
    # before d3: row 0 (user 1) bsld 1, row 1 (user 4) bsld (90+50)/50 = 2.8.
    # row 3 is user 1: 1 - 1/2.8; row 2's user (-1) has no started job: 1
    np.testing.assert_allclose(obs3[:2, 7], [1 - 1 / 2.8, 1.0], rtol=1e-6)
    np.testing.assert_allclose(obs3[:2, 8], [LOW, HIGH])  # the fit flag stays last
    np.testing.assert_array_equal(obs3[2], padding_row(9))
    env.step(1)
    _, reward, terminated, _, info = env.step(0)
    # users: 1 -> (1 + 535/400)/2, 4 -> 2.8, -1 -> 110/30 (the largest)
    assert terminated and reward == pytest.approx(-110 / 30)
    assert info["metrics"]["max_user_bsld"] == pytest.approx(110 / 30)


def test_user_scores_counts_each_start_once():
    jobs = table(TINY, nodes=4, procs_per_node=2, **EXTRA)
    scores = UserScores(jobs)
    nan = np.nan  # not started (as the engine marks it: a start may be negative)
    scores.sync([0.0, nan, nan, nan])
    scores.sync([0.0, 100.0, nan, nan])
    scores.sync([0.0, 100.0, nan, nan])
    np.testing.assert_allclose(scores.counts, [0, 1, 1])  # users -1, 1, 4
    np.testing.assert_allclose(scores.feature(np.array([0, 1, 2])), [1 - 1 / 2.8, 0.0, 1.0])


# -- the cut-off --------------------------------------------------------------------------------
# Row 0 holds the whole machine (4 nodes) until 1000; row 1 also needs all 4 nodes, so while it
# waits every other job arrives. At the third decision (t=1000) rows 2..7 wait:
#   row: submit req procs      FCFS: 2 3 4 5 6 7
#   2     2    50   2          SJF (req, submit): 6 3 5 4 7 2
#   3     3    10   3          smallest (procs, submit): 4 5 7 2 3 6
#   4     4    30   1
#   5     5    10   1          interleave, 5 slots: 6 4 | 3 5 | (5 taken) 7
#   6     6     5   4
#   7     7    40   1
CROWD = [(0, 1000, 4), (1, 10, 4), (2, 50, 2), (3, 10, 3), (4, 30, 1), (5, 10, 1), (6, 5, 4),
         (7, 40, 1)]


def crowded_view():
    prep = prepare(table(CROWD, nodes=4), "rlscheduler")
    engine = make_engine(prep.jobs, prep.cluster, "rlscheduler", "none")
    engine.apply(0)
    engine.apply(1)
    return engine


@pytest.mark.parametrize("cutoff, slots, expected", [
    ("fcfs", 5, [2, 3, 4, 5, 6]),
    ("fcfs", 6, [2, 3, 4, 5, 6, 7]),
    ("fcfs", 8, [2, 3, 4, 5, 6, 7, -1, -1]),
    ("interleave", 5, [6, 4, 3, 5, 7]),
    ("interleave", 4, [6, 4, 3, 5]),
    ("interleave", 6, [2, 3, 4, 5, 6, 7]),  # all fit: FCFS order
])
def test_cutoff_by_hand(cutoff, slots, expected):
    engine = crowded_view()
    assert sorted(engine.queue) == [2, 3, 4, 5, 6, 7] and engine.now == 1000
    norm = {"max_run_time": 1000, "max_procs": 4}
    obs, mask, rows = observe(engine.next_decision(), norm, slots=slots, cutoff=cutoff)
    np.testing.assert_array_equal(rows, expected)
    np.testing.assert_array_equal(mask, np.array(expected) >= 0)
    # each slot's features are its own job's
    jobs = engine.jobs
    shown = rows[mask]
    np.testing.assert_allclose(obs[mask, 0], (1000 - jobs.submit[shown]) / W, rtol=1e-6)
    np.testing.assert_allclose(obs[mask, 1], jobs.req_time[shown] / 1000, rtol=1e-6)
    np.testing.assert_allclose(obs[mask, 2], np.minimum(jobs.procs[shown] / 4, HIGH), rtol=1e-6)
    np.testing.assert_array_equal(obs[~mask], np.tile(padding_row(), (int((~mask).sum()), 1)))


def test_cutoff_in_the_env_on_a_long_window(lublin):
    """Lublin-1 is overloaded: queues pass 128; FCFS keeps the earliest, interleave the shortest."""
    prep = lublin()
    for cutoff in ("fcfs", "interleave"):
        env = PickJobEnv(prep, cutoff=cutoff)
        obs, info = env.reset(options={"start": 3000, "jobs": 1024})
        longest = 0
        while True:
            q = np.array(env.engine.queue)
            rows, mask = env.rows, info["action_mask"]
            longest = max(longest, len(q))
            if len(q) > 128:
                assert mask.all() and len(set(rows.tolist())) == 128
                submit = env.engine.jobs.submit
                if cutoff == "fcfs":
                    np.testing.assert_array_equal(rows, np.sort(q)[:128])
                else:
                    req = env.engine.jobs.req_time
                    order = np.lexsort((q, submit[q], req[q]))
                    assert q[order[0]] == rows[0]  # the shortest job is always shown, first
            # the last slot picked: LCFS keeps the queue long
            obs, _, done, _, info = env.step(int(mask.sum()) - 1)
            if done:
                break
        assert longest > 128


# -- observe() on any engine's view is what the env shows ------------------------------------------
@pytest.mark.parametrize("cutoff", ["fcfs", "interleave"])
@pytest.mark.parametrize("metric", ["bsld", "fairness"])
def test_observe_equals_the_env_along_an_episode(lublin, cutoff, metric):
    env = PickJobEnv(lublin(), metric=metric, slots=32, cutoff=cutoff, backfill="schedgym")
    obs, info = env.reset(options={"start": 5228, "jobs": 200})
    rng = np.random.default_rng(0)
    fair = UserScores(env.engine.jobs, env.engine.executed) if metric == "fairness" else None
    done = False
    while not done:
        view = env.engine.next_decision()
        o, m, r = observe(view, env.norm, slots=32, cutoff=cutoff, fairness=fair)
        np.testing.assert_array_equal(o, obs)
        np.testing.assert_array_equal(m, info["action_mask"])
        np.testing.assert_array_equal(r, env.rows)
        if metric == "fairness":  # counted afresh: the same
            o2, _, _ = observe(view, env.norm, slots=32, cutoff=cutoff, fairness=True)
            np.testing.assert_array_equal(o2, obs)
        obs, _, done, _, info = env.step(int(rng.integers(m.sum())))


def test_fairness_arguments(tiny_random):
    env = PickJobEnv(tiny_random, episode_jobs=8, slots=8, fairness=True)  # bsld reward, 9 features
    assert env.reset(seed=0)[0].shape == (8, 9)
    env = PickJobEnv(tiny_random, episode_jobs=8, slots=8, metric="fairness", fairness=False)
    assert env.reset(seed=0)[0].shape == (8, 8)
    with pytest.raises(TypeError, match="fairness must be True, False or None"):
        PickJobEnv(tiny_random, episode_jobs=8, fairness="max")
    with pytest.raises(TypeError, match="fairness must be a UserScores"):
        observe(env.engine.next_decision(), env.norm, fairness="max")
