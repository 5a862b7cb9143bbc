"""VecDBF builds all N observations at once with its own (vectorised) code: step for step it is N
single DBFEnvs (observations, validity, masks, rewards, ends, metrics), across auto-resets; and
DBFVectorEnv is gymnasium's SyncVectorEnv over `gym.make("hpcsched/DBF-v0")`."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import hpcsched.envs  # noqa: F401  (registers the ids)
from envtraces import prepared, random_table
from hpcsched.envs.dbf import DBFEnv
from hpcsched.envs.dbf_vec import DBFVectorEnv, VecDBF
from hpcsched.sim.run import prepare


def lublin():
    return prepared("lublin-1", "standard")


def tiny():
    return prepare(random_table(n=200, nodes=8, seed=3), "standard")


def actions_for(rng, valid, fwd):
    """A mix of valid picks, picks of any slot (often empty or too big: Fwd) and Fwd."""
    out = np.empty(len(valid), dtype=np.int64)
    for i, v in enumerate(valid):
        u = rng.random()
        ok = np.flatnonzero(v)
        if ok.size and u < 0.6:
            out[i] = ok[rng.integers(ok.size)]
        elif u < 0.8:
            out[i] = rng.integers(fwd)
        else:
            out[i] = fwd
    return out


CASES = {
    "lublin-split": (lublin, dict(window=8, tail=3, episode_jobs=40)),
    "lublin-head-lookahead": (lublin, dict(window=5, tail=0, episode_jobs=30, lookahead=3)),
    "tiny-masked-copyless": (tiny, dict(window=6, tail=2, episode_jobs=25, mask=True,
                                        alphas=(0.5, 0.2, 0.3))),
}


@pytest.mark.parametrize("case", list(CASES))
def test_vec_is_n_single_envs(case):
    trace, kwargs = CASES[case]
    n = 3
    copy = "copyless" not in case
    vec = VecDBF(n, trace(), copy=copy, **kwargs)
    singles = [DBFEnv(trace(), **kwargs) for _ in range(n)]
    seeds = [7, 8, 9]
    obs, mask = vec.reset(seed=seeds)
    for i, env in enumerate(singles):
        o, info = env.reset(seed=seeds[i])
        np.testing.assert_array_equal(obs[i], o)
        np.testing.assert_array_equal(mask[i], info["action_mask"])
    assert vec.windows == [(env.episode.start, env.episode.jobs) for env in singles]
    rng = np.random.default_rng(0)
    ends = 0
    for t in range(1500):
        valid = vec.valid
        for i, env in enumerate(singles):
            np.testing.assert_array_equal(valid[i], env.valid)
            np.testing.assert_array_equal(vec.rows[i], env.rows)
        actions = actions_for(rng, valid, vec.window)
        obs, mask, reward, done, infos = vec.step(actions)
        for i, env in enumerate(singles):
            o, r, term, trunc, info = env.step(int(actions[i]))
            assert r == reward[i], f"step {t}, env {i}: reward {reward[i]} != {r}"
            assert term == done[i] and not trunc
            if term:
                ends += 1
                assert infos[i]["metrics"] == info["metrics"]
                assert infos[i]["window"] == info["window"]
                assert infos[i]["placed"] == info["placed"]
                assert infos[i]["trace_end"] == info["trace_end"]
                o, info = env.reset()  # its own generator: the vec's env i draws the same
            np.testing.assert_array_equal(obs[i], o, err_msg=f"step {t}, env {i}")
            np.testing.assert_array_equal(mask[i], info["action_mask"])
    assert ends >= 6


def test_copyless_buffers_are_reused_and_copies_are_not():
    vec = VecDBF(2, tiny(), window=4, episode_jobs=20, copy=False)
    obs, _ = vec.reset(seed=0)
    obs2, *_ = vec.step(np.array([4, 4]))
    assert obs2 is obs
    vec = VecDBF(2, tiny(), window=4, episode_jobs=20)
    obs, _ = vec.reset(seed=0)
    obs2, *_ = vec.step(np.array([4, 4]))
    assert obs2 is not obs


def test_reset_options_and_bad_actions():
    vec = VecDBF(3, tiny(), window=4, episode_jobs=20)
    vec.reset(options={"starts": [0, 5, 180]})
    assert [w[0] for w in vec.windows] == [0, 5, 180]
    with pytest.raises(ValueError, match="starts in"):
        vec.reset(options={"starts": [0, 5, 181]})
    with pytest.raises(ValueError, match="unknown reset options"):
        vec.reset(options={"start": 3})
    with pytest.raises(ValueError, match="outside 0..4"):
        vec.step(np.array([0, 5, 0]))
    with pytest.raises(ValueError, match="3 integer actions"):
        vec.step(np.array([0, 1]))


def same(a, b):
    return data_equivalence(a, b, exact=True)


@pytest.mark.parametrize("kwargs", [dict(window=6, tail=2, episode_jobs=25),
                                    dict(window=6, tail=1, episode_jobs=25, mask=True)])
def test_vector_env_steps_like_sync_vector_env(kwargs):
    kwargs = dict(kwargs, trace=tiny())
    fast = gym.make_vec("hpcsched/DBF-v0", num_envs=3, **kwargs)
    assert isinstance(fast, DBFVectorEnv)
    sync = SyncVectorEnv([lambda: gym.make("hpcsched/DBF-v0", **kwargs) for _ in range(3)],
                         autoreset_mode=AutoresetMode.SAME_STEP)
    assert fast.single_observation_space == sync.single_observation_space
    assert fast.single_action_space == sync.single_action_space
    obs, infos = fast.reset(seed=11)
    sync_obs, sync_infos = sync.reset(seed=11)
    assert same(obs, sync_obs) and same(infos, sync_infos)
    rng = np.random.default_rng(1)
    ended = 0
    for t in range(400):
        actions = actions_for(rng, fast.unwrapped.batch.valid, 6)
        got, want = fast.step(actions), sync.step(actions)
        for name, a, b in zip(("obs", "rewards", "terminations", "truncations", "infos"),
                              got, want):
            assert same(a, b), f"step {t}: {name} differ"
        ended += int(got[2].sum())
    assert ended >= 4
    assert same(fast.reset(seed=[5, None, 7]), sync.reset(seed=[5, None, 7]))
    assert same(fast.reset(seed=3, options={"start": 10}), sync.reset(seed=3,
                                                                       options={"start": 10}))
    fast.close()
    sync.close()
