"""PickJobEnv: the Gymnasium contract, rewards against the engine, and agents that replay
heuristics exactly."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import hpcsched.envs  # noqa: F401  (registers the environments)
from hpcsched.envs.pick_job import METRICS, PickJobEnv
from hpcsched.policies.priority import get_policy
from hpcsched.sim.profiles import BACKFILLS
from hpcsched.sim.run import simulate


def run(env, choose, **reset):
    """Play one episode: choose(env, mask) -> slot. Returns (reward, info, steps)."""
    obs, info = env.reset(**reset)
    steps = 0
    while True:
        assert env.observation_space.contains(obs)
        obs, reward, terminated, truncated, info = env.step(choose(env, info["action_mask"]))
        steps += 1
        assert not truncated
        if terminated:
            return reward, info, steps
        assert reward == 0.0


def first_slot(env, mask):
    return 0


def random_slot(seed):
    rng = np.random.default_rng(seed)
    return lambda env, mask: int(rng.choice(np.flatnonzero(mask)))


@pytest.mark.parametrize("profile, backfill, metric", [
    ("rlscheduler", "none", "bsld"), ("rlscheduler", "schedgym", "fairness"),
    ("standard", "easy", "utilization")])
def test_check_env(lublin, profile, backfill, metric):
    env = PickJobEnv(lublin(profile), backfill=backfill, metric=metric, episode_jobs=64)
    check_env(env, skip_render_check=True)


def test_registered_with_gymnasium(tiny_random):
    env = gym.make("hpcsched/PickJob-v0", trace=tiny_random, episode_jobs=8, slots=16)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space.shape == (16, 8)
    assert env.action_space.n == 16
    obs, info = env.reset(seed=3)
    assert obs.shape == (16, 8) and info["action_mask"].dtype == bool


def test_random_sampling_of_the_action_space_is_valid(tiny_random):
    env = PickJobEnv(tiny_random, episode_jobs=30, slots=8)
    env.reset(seed=0)
    env.action_space.seed(0)
    done = False
    while not done:
        a = env.action_space.sample()
        assert env.action_masks()[a]
        _, _, done, _, _ = env.step(a)
    # with an explicit mask it is a plain Discrete
    mask = np.zeros(8, dtype=np.int8)
    mask[5] = 1
    assert env.action_space.sample(mask=mask) == 5


@pytest.mark.parametrize("metric", list(METRICS))
def test_reward_is_the_engine_metric(lublin, metric):
    """Always taking the first FCFS slot is the FCFS heuristic: the terminal reward is minus (plus
    for utilization) simulate()'s metric of the same window."""
    env = PickJobEnv(lublin(), metric=metric)
    reward, info, _ = run(env, first_slot, options={"start": 4000, "jobs": 256})
    ref = simulate(lublin(), get_policy("fcfs"), start=4000, jobs=256).metrics
    key, sign = METRICS[metric]
    assert reward == sign * ref[key]
    assert reward == sign * info["metrics"][key]
    expected = {"bsld": -ref["bsld"], "wait": -ref["wait"], "turnaround": -ref["turnaround"],
                "slowdown": -ref["slowdown"], "utilization": ref["utilization"],
                "fairness": -ref["max_user_bsld"]}[metric]
    assert reward == expected


@pytest.mark.parametrize("profile", ["rlscheduler", "standard"])
@pytest.mark.parametrize("backfill", BACKFILLS)
def test_first_slot_agent_is_fcfs(lublin, profile, backfill):
    """A fixed window via options gives simulate()'s schedule when the agent picks the same jobs."""
    env = PickJobEnv(lublin(profile), backfill=backfill)
    _, info, steps = run(env, first_slot, options={"start": 2756, "jobs": 256})
    ref = simulate(lublin(profile), get_policy("fcfs"), backfill=backfill, start=2756, jobs=256)
    np.testing.assert_array_equal(env.engine.result().start, ref.start)
    assert info["metrics"] == ref.metrics
    assert steps == ref.metrics["decisions"]


@pytest.mark.parametrize("backfill", ["none", "schedgym"])
def test_shortest_visible_job_agent_is_sjf(lublin, backfill):
    """With the interleave cut-off the shortest waiting job is always visible, so an agent that
    picks the shortest (then earliest) visible job is SJF, even with queues longer than 128."""
    def shortest(env, mask):
        rows = env.rows[mask]
        jobs = env.engine.jobs
        return int(np.lexsort((rows, jobs.submit[rows], jobs.req_time[rows]))[0])

    env = PickJobEnv(lublin(), backfill=backfill, cutoff="interleave")
    run(env, shortest, options={"start": 1981, "jobs": 1024})
    ref = simulate(lublin(), get_policy("sjf"), backfill=backfill, start=1981, jobs=1024)
    np.testing.assert_array_equal(env.engine.result().start, ref.start)


@pytest.mark.parametrize("profile", ["rlscheduler", "standard"])
@pytest.mark.parametrize("backfill", BACKFILLS)
def test_every_profile_and_backfilling_runs(tiny_random, profile, backfill):
    from hpcsched.sim.run import prepare
    from envtraces import random_table

    prep = tiny_random if profile == "rlscheduler" else prepare(random_table(), profile)
    env = PickJobEnv(prep, backfill=backfill, episode_jobs=30, slots=8, cutoff="interleave")
    for seed in range(3):
        reward, info, steps = run(env, random_slot(seed), seed=seed)
        assert np.isfinite(reward) and reward <= -1.0
        assert info["metrics"]["jobs"] == 30
        assert steps == info["metrics"]["decisions"]


def test_invalid_actions_raise(tiny_random):
    env = PickJobEnv(tiny_random, episode_jobs=8, slots=8)
    env.reset(seed=0, options={"start": 10})
    assert env.action_masks().sum() == 1
    with pytest.raises(ValueError, match="invalid action 3"):
        env.step(3)
    with pytest.raises(ValueError, match="invalid action 8"):
        env.step(8)
    env.step(0)  # still usable


def test_windows(lublin, tiny_random):
    env = PickJobEnv(lublin())
    starts = set()
    for seed in range(30):
        _, info = env.reset(seed=seed)
        start, jobs = info["window"]
        assert 256 <= start < 10000 - 256 - 1 and jobs == 256
        starts.add(start)
    assert len(starts) > 20
    assert env.reset(seed=5)[1]["window"] == env.reset(seed=5)[1]["window"]
    allowed = {300, 301, 5}  # 5 is outside the range: never drawn
    env = PickJobEnv(lublin(), window_filter=allowed)
    assert {env.reset(seed=s)[1]["window"][0] for s in range(20)} == {300, 301}
    env = PickJobEnv(lublin(), window_filter=lambda s: s % 100 == 0)
    assert all(env.reset(seed=s)[1]["window"][0] % 100 == 0 for s in range(5))
    # first: windows come from the first `first` jobs
    env = PickJobEnv(lublin(), episode_jobs=64, first=400)
    assert all(64 <= env.reset(seed=s)[1]["window"][0] < 400 - 65 for s in range(20))
    with pytest.raises(ValueError, match="cannot be drawn"):
        PickJobEnv(tiny_random, episode_jobs=60)
    with pytest.raises(ValueError, match="allows no start"):
        PickJobEnv(lublin(), window_filter={1, 2})
    env = PickJobEnv(tiny_random, episode_jobs=8)
    with pytest.raises(ValueError, match="outside"):
        env.reset(options={"start": 115, "jobs": 8})
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"begin": 3})


def test_bad_arguments(tiny_random):
    with pytest.raises(ValueError, match="unknown metric"):
        PickJobEnv(tiny_random, metric="makespan", episode_jobs=8)
    with pytest.raises(ValueError, match="unknown cutoff"):
        PickJobEnv(tiny_random, cutoff="sjf", episode_jobs=8)
    with pytest.raises(ValueError, match="unknown backfilling"):
        PickJobEnv(tiny_random, backfill="aggressive", episode_jobs=8)
    with pytest.raises(ValueError, match="prepared under the 'rlscheduler' profile"):
        PickJobEnv(tiny_random, profile="standard", episode_jobs=8)


def test_spaces_pickle_without_the_env(tiny_random):
    import pickle

    env = PickJobEnv(tiny_random, episode_jobs=8, slots=8)
    env.reset(seed=0)
    space = pickle.loads(pickle.dumps(env.action_space))
    assert space == env.action_space and space._masks is None
    assert 0 <= space.sample() < 8
