"""`hpcsched/DBF-v0` (Wang's thesis Ch. 3) on small traces worked out by hand: the exact
observation, R(t) with its running maxima and 0/0, schedule cycling (a valid pick keeps the
instant, an invalid one is Fwd), the split window, the episode end."""

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from envtraces import table
from hpcsched.envs.dbf import DBFEnv, split_window
from hpcsched.sim.run import prepare

THIRD = 1 / 3


def dbf(rows, nodes=4, procs_per_node=1, **kwargs):
    prepared = prepare(table(rows, nodes=nodes, procs_per_node=procs_per_node), "standard")
    return DBFEnv(prepared, **kwargs)


def parts(obs, cores, window):
    return obs[:cores], obs[cores:].reshape(window, 3)


# 4 cores, e_max = 200 (the longest request). (submit, run, procs, request):
# J0 (0, 100, 2, 200), J1 (0, 50, 3, 60), J2 (10, 20, 1, 40), J3 (10, 30, 4, 80).
JOBS = [(0, 100, 2, 200), (0, 50, 3, 60), (10, 20, 1, 40), (10, 30, 4, 80)]


@pytest.fixture
def env():
    e = dbf(JOBS, window=4, episode_jobs=4)
    e.reset(options={"start": 0})
    return e



def test_the_reward_weights_weigh_idle_machine_queue_and_wait_in_that_order():
    """Eq. 3.1 with unequal (a1, a2, a3) = (0.6, 0.3, 0.1) on the hand-worked episode's first two
    cycles (below): the first fixes a1 + a2, the second a1 (the three sum to 1), so any other
    order of the weights gives other rewards."""
    e = dbf(JOBS, window=4, episode_jobs=4, alphas=(0.6, 0.3, 0.1))
    e.reset(options={"start": 0})
    assert e.step(0)[1] == 0.0
    # R(0): 1 - 2/4 of the machine idle, L / L_max = 1/2, W / W_max = 0/0 -> 0
    assert e.step(0)[1] == pytest.approx(-(0.6 * 0.5 + 0.3 * 0.5 + 0.1 * 0))
    # R(10): 1/2 idle, L / L_max = 3/3, W / W_max = 10/10
    assert e.step(e.fwd)[1] == pytest.approx(-(0.6 * 0.5 + 0.3 * 1 + 0.1 * 1))
    with pytest.raises(ValueError, match="three weights"):
        dbf(JOBS, window=4, episode_jobs=4, alphas=(0.5, 0.5))

def test_a_hand_worked_episode(env):
    fwd = env.fwd
    assert fwd == 4
    # t = 0: J0 and J1 wait, every core free; no wait yet (wait / max wait is 0/0 -> 0)
    obs, info = env.reset(options={"start": 0})
    cores, slots = parts(obs, 4, 4)
    np.testing.assert_array_equal(cores, 0)
    np.testing.assert_allclose(slots, [[0.5, 1.0, 0], [0.75, 0.3, 0], [0, 0, 0], [0, 0, 0]])
    assert info["time"] == 0 and info["placed"] == 0
    assert env.valid.tolist() == [True, True, False, False]

    # pick J0: it starts now, reward 0, same instant; its 2 cores show 200 / 200 left, after the
    # 2 free ones
    obs, reward, done, _, info = env.step(0)
    assert (reward, done, info["time"], info["placed"]) == (0.0, False, 0, 1)
    cores, slots = parts(obs, 4, 4)
    np.testing.assert_allclose(cores, [0, 0, 1, 1])
    np.testing.assert_allclose(slots[0], [0.75, 0.3, 0])
    assert env.valid.tolist() == [False, False, False, False]  # J1 needs 3 cores, 2 are free

    # pick J1, which does not fit: that is Fwd. R(0) = -1/3 [(1 - 2/4) + 1 / L_max + 0/0]: L_max
    # is 2 (the start of this instant), W = W_max = 0
    obs, reward, done, _, info = env.step(0)
    assert reward == pytest.approx(-THIRD * (0.5 + 1 / 2 + 0))
    assert info["time"] == 10 and not done
    # t = 10: J2 and J3 arrive. J0 has 190 s of its request left. Waits 10, 0, 0: max wait 10
    cores, slots = parts(obs, 4, 4)
    np.testing.assert_allclose(cores, [0, 0, 0.95, 0.95], rtol=1e-6)
    np.testing.assert_allclose(slots, [[0.75, 0.3, 1.0], [0.25, 0.2, 0], [1.0, 0.4, 0],
                                       [0, 0, 0]], rtol=1e-6)
    assert env.valid.tolist() == [False, True, False, False]

    # Fwd: R(10) = -1/3 [(1 - 1/2) + 3/3 + 10/10]
    obs, reward, done, _, info = env.step(fwd)
    assert reward == pytest.approx(-THIRD * (0.5 + 1 + 1))
    # t = 100: J0 ends (its run time, not its request). Waits 100, 90, 90: W = 280
    assert info["time"] == 100
    cores, slots = parts(obs, 4, 4)
    np.testing.assert_array_equal(cores, 0)
    np.testing.assert_allclose(slots[:3], [[0.75, 0.3, 1.0], [0.25, 0.2, 0.9], [1.0, 0.4, 0.9]],
                               rtol=1e-6)
    assert env.valid.tolist() == [True, True, True, False]

    # pick J1, then J2 (now in slot 0): both start at 100. The cores list J2's (40 s left)
    # before J1's three (60 s), though J1 started first
    obs, reward, _, _, info = env.step(0)
    assert (reward, info["time"]) == (0.0, 100)
    assert env.rows.tolist() == [2, 3, -1, -1]
    obs, reward, _, _, info = env.step(0)
    assert (reward, info["time"], info["placed"]) == (0.0, 100, 3)
    cores, slots = parts(obs, 4, 4)
    np.testing.assert_allclose(cores, [0.2, 0.3, 0.3, 0.3], rtol=1e-6)
    # J3 waited 90 s; the longest wait of the episode is still J1's 100
    np.testing.assert_allclose(slots[0], [1.0, 0.4, 0.9], rtol=1e-6)
    assert env.rows.tolist() == [3, -1, -1, -1]

    # an empty slot is Fwd too. R(100) = -1/3 [(1 - 1) + 1/3 + 90/280]: the maxima are
    # L_max = 3 and W_max = 280 (this instant's first decision), not the current 1 and 90
    obs, reward, _, _, info = env.step(2)
    assert reward == pytest.approx(-THIRD * (0 + 1 / 3 + 90 / 280))
    # t = 120: J2 ends; J1 has 40 s of its request left; J3 (4 cores) waits 110 s: its wait is
    # now the longest
    assert info["time"] == 120
    cores, slots = parts(obs, 4, 4)
    np.testing.assert_allclose(cores, [0, 0.2, 0.2, 0.2], rtol=1e-6)
    np.testing.assert_allclose(slots[0], [1.0, 0.4, 1.0], rtol=1e-6)
    obs, reward, _, _, info = env.step(fwd)
    assert reward == pytest.approx(-THIRD * (0.25 + 1 / 3 + 110 / 280))
    # t = 150: J1 ends, J3 fits: placing it places the episode's 4th job: the end, reward 0
    assert info["time"] == 150 and env.valid[0]
    obs, reward, done, _, info = env.step(0)
    assert (reward, done, info["placed"], info["trace_end"]) == (0.0, True, 4, False)
    np.testing.assert_array_equal(obs, 0)
    # the episode's metrics over [0, 150]: waits 0, 100, 90, 140; core-seconds run in it:
    # J0 2 x 100, J1 3 x 50, J2 1 x 20 (J3 starts at 150): 370 of 600
    m = info["metrics"]
    assert m["jobs"] == 4 and m["wait"] == pytest.approx(330 / 4)
    assert m["utilization"] == pytest.approx(370 / 600)
    assert m["queue_length"] == pytest.approx(330 / 150)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_invalid_picks_are_fwd():
    """An empty slot, a job that does not fit and Fwd give the same reward and the same next
    state."""
    outcomes = []
    for action in (0, 3, 4):
        e = dbf(JOBS, window=4, episode_jobs=4)
        e.reset(options={"start": 0})
        e.step(0)  # J0 starts; J1 (3 cores) does not fit in the 2 left
        obs, reward, done, _, info = e.step(action)
        outcomes.append((obs, reward, info["time"]))
    for obs, reward, time in outcomes[1:]:
        np.testing.assert_array_equal(obs, outcomes[0][0])
        assert (reward, time) == outcomes[0][1:]
    assert outcomes[0][2] == 10


def test_a_pick_that_empties_the_queue_ends_the_cycle():
    # J0 (1 core) alone; J1 arrives at 50. Placing J0 leaves nothing to choose: the cycle ends
    # with R(0) after the start, -1/3 (1 - 1/4); J0's completion at 10 finds no waiting job and
    # asks nothing: the next decision is J1's arrival
    e = dbf([(0, 10, 1, 10), (50, 10, 2, 20)], window=2, episode_jobs=2)
    e.reset(options={"start": 0})
    obs, reward, done, _, info = e.step(0)
    assert reward == pytest.approx(-THIRD * 0.75)
    assert (done, info["time"], info["placed"]) == (False, 50, 1)
    np.testing.assert_array_equal(obs[:4], 0)


def test_the_trace_running_dry_ends_the_episode():
    # an agent that only waits: once nothing runs and nothing is left to arrive, a Fwd ends it
    e = dbf([(0, 10, 1, 10), (5, 10, 1, 10)], window=2, episode_jobs=2)
    e.reset(options={"start": 0})
    _, reward, done, _, info = e.step(e.fwd)  # t = 0: W = 0 -> R = -1/3 (1 + 1/1 + 0)
    assert not done and reward == pytest.approx(-2 * THIRD) and info["time"] == 5
    _, reward, done, _, info = e.step(e.fwd)
    assert done and info["trace_end"] and info["placed"] == 0
    # R(5) = -1/3 (1 + 2/2 + 5/5)
    assert reward == pytest.approx(-1.0)


# J0 holds every core until 1000; J1..J6 (1 core, request 10 x k) arrive at t = k
FULL = [(0, 1000, 4, 1000)] + [(k, 5, 1, 10 * k) for k in range(1, 7)]


def windows_seen(**kwargs):
    """The rows in the slots (-1: empty) at t = 1..6 of an agent that only waits."""
    e = dbf(FULL, window=4, episode_jobs=7, **kwargs)
    e.reset(options={"start": 0})
    _, _, _, _, info = e.step(0)  # place J0 at t = 0: the next decision is J1's arrival
    seen = {info["time"]: e.rows.tolist()}
    for _ in range(5):
        _, _, _, _, info = e.step(e.fwd)
        seen[info["time"]] = e.rows.tolist()
    assert list(seen) == [1, 2, 3, 4, 5, 6]
    return seen


@pytest.mark.parametrize("tail, at5, at6", [
    (2, [1, 2, 5, 4], [1, 2, 6, 5]),  # head 2, then the newest first
    (0, [1, 2, 3, 4], [1, 2, 3, 4]),  # the head only
    (1, [1, 2, 3, 5], [1, 2, 3, 6]),
    (4, [5, 4, 3, 2], [6, 5, 4, 3]),  # all tail: newest first
])
def test_split_window_layouts(tail, at5, at6):
    seen = windows_seen(tail=tail)
    # L < M: the queue once, in order, then empty slots; L = M: the queue in order, whatever
    # the tail
    assert seen[1] == [1, -1, -1, -1]
    assert seen[3] == [1, 2, 3, -1]
    assert seen[4] == [1, 2, 3, 4]
    assert seen[5] == at5 and seen[6] == at6


def test_the_slot_features_follow_the_layout():
    e = dbf(FULL, window=4, tail=2, episode_jobs=7)
    e.reset(options={"start": 0})
    e.step(0)
    for _ in range(5):
        obs, *_ = e.step(e.fwd)
    # t = 6, slots J1, J2, J6, J5; requests 10 k / 1000; waits 6 - k over the longest, 5
    _, slots = parts(obs, 4, 4)
    np.testing.assert_allclose(slots[:, 1], [0.01, 0.02, 0.06, 0.05], rtol=1e-6)
    np.testing.assert_allclose(slots[:, 2], [1.0, 0.8, 0.0, 0.2], rtol=1e-6)
    np.testing.assert_allclose(slots[:, 0], 0.25)


def test_split_window_function():
    q = np.arange(10, 16)  # six waiting jobs
    assert split_window(q[:2], 4, 2).tolist() == [10, 11, -1, -1]
    assert split_window(q[:4], 4, 2).tolist() == [10, 11, 12, 13]
    assert split_window(q, 4, 2).tolist() == [10, 11, 15, 14]
    assert split_window(q, 4, 0).tolist() == [10, 11, 12, 13]
    assert split_window(q, 4, 4).tolist() == [15, 14, 13, 12]


def test_cores_of_multi_processor_nodes():
    # 2 nodes x 2 processors: a 3-processor job holds both nodes, so all 4 core entries
    e = dbf([(0, 100, 3, 100), (0, 100, 1, 50)], nodes=2, procs_per_node=2, window=2,
            episode_jobs=2)
    e.reset(options={"start": 0})
    obs, *_ = e.step(0)
    np.testing.assert_allclose(obs[:4], 1.0)
    assert e.valid.tolist() == [False, False]  # no node is free for the 1-processor job


def test_the_mask_option(env):
    np.testing.assert_array_equal(env.action_masks(), True)  # the default: nothing masked
    e = dbf(JOBS, window=4, episode_jobs=4, mask=True)
    obs, info = e.reset(options={"start": 0})
    assert info["action_mask"].tolist() == [True, True, False, False, True]
    _, _, _, _, info = e.step(0)
    assert info["action_mask"].tolist() == [False, False, False, False, True]
    np.testing.assert_array_equal(e.action_masks(), info["action_mask"])
    check_env(e)


def test_fwd_is_masked_only_where_waiting_cannot_help():
    # nothing runs and nothing is left to arrive: waiting would end the trace with a job queued
    e = dbf([(0, 10, 1, 10)], window=2, episode_jobs=1, mask=True)
    _, info = e.reset(options={"start": 0})
    assert info["action_mask"].tolist() == [True, False, False]


def test_episodes_start_at_random_jobs_with_a_lookahead():
    e = DBFEnv(prepare(table([(k, 10, 1) for k in range(30)]), "standard"),
               window=4, episode_jobs=10, lookahead=5)
    starts = set()
    for seed in range(40):
        _, info = e.reset(seed=seed)
        start, jobs = info["window"]
        assert 0 <= start <= 20 and jobs == min(15, 30 - start)
        starts.add(start)
    assert len(starts) > 10
    _, a = e.reset(seed=3)
    _, b = e.reset(seed=3)
    assert a["window"] == b["window"]
    with pytest.raises(ValueError, match=r"starts in \[0, 20\]"):
        e.reset(options={"start": 21})


def test_lublin_sizes_and_a_random_episode():
    e = DBFEnv("lublin-1", window=10, tail=2, episode_jobs=100)
    assert e.observation_space.shape == (256 + 3 * 10,)
    assert e.action_space.n == 11
    check_env(e)
    obs, info = e.reset(seed=0)
    rng = np.random.default_rng(0)
    steps = 0
    while True:
        valid = np.flatnonzero(e.valid)
        action = int(rng.choice(valid)) if valid.size and rng.random() < 0.7 else e.fwd
        obs, reward, done, _, info = e.step(action)
        steps += 1
        assert e.observation_space.contains(obs) and -1 <= reward <= 0
        if done:
            break
    assert info["placed"] == 100 and not info["trace_end"] and steps > 100
    m = info["metrics"]
    assert m["jobs"] == 100 and 0 < m["utilization"] <= 1 and m["queue_length"] > 0


def test_bad_arguments():
    prepared = prepare(table(JOBS), "standard")
    with pytest.raises(ValueError, match="tail"):
        DBFEnv(prepared, window=4, tail=5)
    with pytest.raises(ValueError, match="episode_jobs"):
        DBFEnv(prepared, episode_jobs=5)
    with pytest.raises(ValueError, match="pass loop"):
        DBFEnv(prepare(table(JOBS), "rlscheduler"), episode_jobs=4)
    e = DBFEnv(prepared, window=4, episode_jobs=4)
    e.reset(seed=0)
    with pytest.raises(ValueError, match="outside 0..4"):
        e.step(5)
