"""The training aids as wrappers (envs/wrappers.py) and the reset-time choice of windows they use."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsched.envs.filtering import heuristic_score
from hpcsched.envs.pick_job import PickJobEnv
from hpcsched.envs.vec import VecPickJob
from hpcsched.envs.wrappers import FilterStages, RelativeReward, VecWrapper, relative_reward
from hpcsched.policies.priority import get_policy
from hpcsched.sim.run import simulate


@pytest.mark.parametrize("value, base, sign, expected", [
    (50.0, 100.0, -1.0, 50.0 / 150.0),  # half SJF's bsld: a third of the way to the best reward
    (100.0, 50.0, -1.0, -50.0 / 150.0),  # twice SJF's bsld: symmetric penalty
    (7.0, 7.0, -1.0, 0.0),  # as good as the heuristic
    (0.0, 0.0, -1.0, 0.0),  # no waiting under either: nothing to learn
    (0.8, 0.6, 1.0, 0.2 / 1.4),  # utilization: higher is better
])
def test_relative_reward_by_hand(value, base, sign, expected):
    assert relative_reward(value, base, sign) == pytest.approx(expected, rel=1e-12)
    assert -1.0 <= relative_reward(value, base, sign) <= 1.0


def small_vec(lublin, n_envs=3, **kw):
    return VecPickJob(n_envs, lublin(), **{**dict(episode_jobs=40, slots=16), **kw})


def fcfs_slots(mask: np.ndarray) -> np.ndarray:
    return np.zeros(len(mask), dtype=np.int64)  # the first waiting job (FCFS under the cut-off)


def run_episodes(env, episodes: int, seed: int = 0, options=None):
    """(window, reward, metrics) of the first `episodes` episodes to end, slot 0 chosen always."""
    obs, mask = env.reset(seed=seed, options=options)
    ends = []
    while len(ends) < episodes:
        obs, mask, reward, done, infos = env.step(fcfs_slots(mask))
        ends += [(infos[i]["window"], float(reward[i]), infos[i]["metrics"])
                 for i in np.flatnonzero(done)]
    return ends


@pytest.mark.parametrize("metric, backfill, heuristic", [("bsld", "none", "sjf"),
                                                         ("utilization", "easy", "f1")])
def test_relative_reward_is_the_improvement_over_the_heuristic_on_the_same_window(
        lublin, metric, backfill, heuristic):
    plain = run_episodes(small_vec(lublin, metric=metric, backfill=backfill), 5)
    env = RelativeReward(small_vec(lublin, metric=metric, backfill=backfill), heuristic)
    wrapped = run_episodes(env, 5)
    key, sign = {"bsld": ("bsld", -1.0), "utilization": ("utilization", 1.0)}[metric]
    for (window, reward, metrics), (window0, reward0, _) in zip(wrapped, plain):
        assert window == window0 and reward0 == sign * metrics[key]  # the same episodes
        start, jobs = window
        base = simulate(lublin(), get_policy(heuristic), backfill=backfill, start=start,
                        jobs=jobs).metrics[key]
        assert reward == relative_reward(metrics[key], base, sign)
        assert env.scores[window] == base
    assert 0 < len({r for _, r, _ in wrapped}) and any(r != 0 for _, r, _ in wrapped)


def test_relative_reward_refuses_an_unknown_heuristic_and_an_env_without_windows(lublin):
    with pytest.raises(ValueError, match="unknown policy 'nope'"):
        RelativeReward(small_vec(lublin), "nope")

    class NoWindows(VecWrapper):
        def step(self, actions):
            obs, mask, reward, done, infos = self.env.step(actions)
            return obs, mask, reward, done, [{"metrics": i.get("metrics", {})} for i in infos]

    env = RelativeReward(NoWindows(small_vec(lublin)), "sjf")
    with pytest.raises(ValueError, match="infos\\['window'\\]"):
        run_episodes(env, 1)


def test_a_wrapper_hands_on_what_it_does_not_change(lublin):
    inner = small_vec(lublin)
    env = VecWrapper(VecWrapper(inner))
    assert env.unwrapped is inner and env.norm == inner.norm and env.num_envs == 3
    obs, mask = env.reset(seed=4)
    np.testing.assert_array_equal(env.rows, inner.rows)
    with pytest.raises(AttributeError):
        env.no_such_attribute


def test_the_vec_reset_option_window_filter_holds_until_the_next_reset(lublin):
    env = small_vec(lublin, n_envs=4)
    env.reset(seed=1, options={"window_filter": lambda s: s % 50 == 0})
    assert env.rollout_info() == {"filtered": True}
    ends = run_episodes(env, 12, seed=2, options={"window_filter": lambda s: s % 50 == 0})
    assert all(w[0] % 50 == 0 for w, _, _ in ends) and all(s % 50 == 0 for s, _ in env.windows)
    env.reset(seed=2)  # no option: the constructor's windows again (any)
    assert env.rollout_info() == {"filtered": False}
    assert any(s % 50 for s, _ in env.windows)
    allowed = {400, 900}
    env.reset(seed=3, options={"window_filter": allowed})
    assert {s for s, _ in env.windows} <= allowed
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"filter": allowed})


def test_the_single_env_reset_option_window_filter(lublin):
    env = PickJobEnv(lublin())
    starts = {env.reset(seed=s, options={"window_filter": {300, 301}})[1]["window"][0]
              for s in range(20)}
    assert starts == {300, 301}
    assert env.reset(seed=0)[1]["window"][0] not in (300, 301)  # one episode only
    with pytest.raises(ValueError, match="exclude each other"):
        env.reset(options={"start": 300, "window_filter": {300}})


def test_filter_stages_choose_the_windows_at_each_reset(lublin):
    made, active = [], [True]

    def make():
        made.append(1)
        return lambda s: s % 7 == 0

    env = FilterStages(small_vec(lublin), make, lambda: active[0])
    env.reset(seed=0)
    assert all(s % 7 == 0 for s, _ in env.windows) and env.rollout_info()["filtered"]
    env.reset(seed=1, options={"starts": [700, 707, 714], "jobs": 40})
    assert [s for s, _ in env.windows] == [700, 707, 714]  # the caller's options pass through
    assert made == [1]  # made once, when first needed
    active[0] = False
    env.reset(seed=0)
    assert not env.rollout_info()["filtered"] and any(s % 7 for s, _ in env.windows)
    lazy = FilterStages(small_vec(lublin), make, lambda: False)
    lazy.reset(seed=0)
    assert made == [1] and lazy.window_filter is None  # never needed, never made


def test_heuristic_score_is_what_relative_reward_compares_with(lublin):
    env = RelativeReward(small_vec(lublin, backfill="easy"), "sjf")
    assert env.score((1000, 40)) == heuristic_score(lublin(), 1000, 40, "easy", "bsld", "sjf")
