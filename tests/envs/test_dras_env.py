"""hpcsched/DRAS-v0: the Gymnasium checker, the two levels against the engine's own FCFS+EASY,
the one-level (Decima-PG) variant, the observation layout and the rewards worked out by hand."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import hpcsched.envs  # noqa: F401  (registers the env)
from hpcsched.cluster.pool import NodePool
from hpcsched.envs.dras import DrasEnv, capability_reward
from hpcsched.policies.priority import get_policy
from hpcsched.sim.factory import make_engine
from hpcsched.sim.run import prepare
from hpcsched.workload.jobs import JobTable, TraceHeader


def random_trace(n=400, nodes=16, seed=0):
    rng = np.random.default_rng(seed)
    run = rng.integers(10, 2000, n).astype(float)
    procs = np.minimum(rng.geometric(0.25, n), nodes)
    return JobTable.from_columns(
        TraceHeader(name="random", max_nodes=nodes, max_procs=nodes),
        job_id=np.arange(1, n + 1), submit=np.cumsum(rng.exponential(60, n)), run_time=run,
        req_time=run * rng.uniform(1, 3, n), req_procs=procs, alloc_procs=procs, user=np.ones(n))


@pytest.fixture(scope="module")
def prepared():
    return prepare(random_trace(), "dras")


def play(env, jobs, pick):
    obs, info = env.reset(options={"jobs": jobs})
    total, steps = 0.0, 0
    while True:
        obs, r, term, _, info = env.step(pick(info))
        total += r
        steps += 1
        if term:
            return env.result(), total, steps


def test_check_env(prepared):
    env = DrasEnv(prepared, episode_jobs=100, seed=0)
    check_env(env, skip_render_check=True)


def test_gym_make(prepared):
    env = gym.make("hpcsched/DRAS-v0", trace=prepared, episode_jobs=50)
    obs, info = env.reset(seed=0)
    assert obs.shape == (2 * 50 + 16, 2)


def test_first_slot_at_both_levels_is_fcfs_easy(prepared):
    # level 1 offers the queue in arrival order and level 2 the candidates in queue order, so always
    # taking slot 0 is FCFS with first-fit backfilling: the engine's own FCFS+EASY
    env = DrasEnv(prepared, seed=0)
    res, _, _ = play(env, prepared.jobs, lambda info: 0)
    ref = make_engine(prepared.jobs, prepared.cluster, "dras", "easy").run(get_policy("fcfs"))
    np.testing.assert_array_equal(res.start, ref.start)
    assert res.metrics["backfilled_jobs_pct"] > 0


def test_one_level_only_offers_jobs_that_fit(prepared):
    env = DrasEnv(prepared, hierarchy=False, seed=0)
    obs, info = env.reset(options={"jobs": prepared.jobs})
    while True:
        e = env.engine
        valid = env.rows[info["action_mask"][: env.rows.size]]
        assert np.all(e.need[valid] <= e.free_nodes)
        obs, r, term, _, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
        if term:
            break
    m = env.result().metrics
    assert m["ready_jobs_pct"] == 100.0 and m["jobs"] == len(prepared.jobs)


def test_observation_layout_by_hand():
    # 4 nodes; A (3 nodes, request 100) starts at 0; B (4 nodes, request 50) arrives at 10 and
    # cannot start: level 1 offers B alone. T (time scale) = 100.
    jobs = JobTable.from_columns(TraceHeader(name="t", max_nodes=4, max_procs=4),
                                 job_id=[1, 2], submit=[0, 10], run_time=[100, 50],
                                 req_time=[100, 50], req_procs=[3, 4], alloc_procs=[3, 4],
                                 user=[1, 1])
    env = DrasEnv(prepare(jobs, "dras"), window=2)
    obs, info = env.reset(options={"jobs": prepare(jobs, "dras").jobs})
    # at t=0 A alone: slot 0 = A; size(3) = log2(4) / log2(5), time(100) = 1 (T = 100)
    np.testing.assert_allclose(obs[0], [2 / np.log2(5), 1.0], rtol=1e-6)
    np.testing.assert_allclose(obs[1], [1.0, 0.0])  # 3 nodes >= 802/4360 of 4: priority bit
    obs, _, _, _, info = env.step(0)
    assert info["level"] == 1 and info["action_mask"].tolist() == [True, False]
    def time(t):
        return np.log1p(t / 60) / np.log1p(100 / 60)

    np.testing.assert_allclose(obs[0], [1.0, time(50)], rtol=1e-6)
    np.testing.assert_allclose(obs[1], [1.0, 0.0])  # priority bit; waited 0 s
    np.testing.assert_allclose(obs[2:4], 0.0)  # empty slot
    # nodes: one free, three busy until 100 (90 s from now)
    r = time(90)
    np.testing.assert_allclose(obs[4:], [[1, 0], [0, r], [0, r], [0, r]], rtol=1e-6)


def test_capability_reward_by_hand():
    # fits: util (80 busy + 10) / 100, wait 3600 / max(7200, 6 h floor), size 10 / 100
    assert capability_reward(10, 3600, 7200, 20, 100) == pytest.approx((0.9 + 1 / 6 + 0.1) / 3)
    # does not fit: util stays 80 / 100; largest wait 12 h is above the floor
    assert capability_reward(30, 3600, 43200, 20, 100) == pytest.approx((0.8 + 1 / 12 + 0.3) / 3)


def test_capacity_reward_is_minus_mean_queue_wait(prepared):
    env = DrasEnv(prepared, reward="capacity", seed=0)
    obs, info = env.reset(options={"jobs": prepared.jobs})
    checked = 0
    for _ in range(300):
        e = env.engine
        row = int(env.rows[0])
        starts = env.level == 2 or e.need[row] <= e.free_nodes  # else it is only reserved
        rest = np.asarray([q for q in e.queue if not (starts and q == row)])
        expect = -np.mean(e.now - e.jobs.submit[rest]) / env.time_scale if rest.size else 0.0
        obs, r, term, _, info = env.step(0)
        assert r == pytest.approx(expect)
        checked += rest.size > 0
        if term:
            break
    assert checked > 10


def test_unknown_reward():
    with pytest.raises(ValueError, match="capability"):
        DrasEnv(prepare(random_trace(50), "dras"), reward="speed")
